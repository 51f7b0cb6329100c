/* hyocr-gtk — what the tests read of the preferences window. */
#pragma once
#include "hyocr-preferences.h"

G_BEGIN_DECLS

/* The Device group's description: why the GPU is not used, or NULL. */
const char *hyocr_preferences_get_device_note(HyocrPreferences *self);

G_END_DECLS
