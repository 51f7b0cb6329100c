/* hyocr-gtk — preferences: model folder, device, memory limit and generation
 * limits, bound to GSettings (the window reloads the engine on change). */
#pragma once
#include "hyocr-window.h"

G_BEGIN_DECLS

#define HYOCR_TYPE_PREFERENCES (hyocr_preferences_get_type())
G_DECLARE_FINAL_TYPE(HyocrPreferences, hyocr_preferences, HYOCR, PREFERENCES, AdwPreferencesWindow)

/* The window's settings; a folder given with --model is shown instead of the setting. */
HyocrPreferences *hyocr_preferences_new(HyocrWindow *window);

G_END_DECLS
