/* hyocr-gtk — preferences: model folder, device, memory limit and generation
 * limits, bound to GSettings (the window reloads the engine on change). */
#pragma once
#include <adwaita.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_PREFERENCES (hyocr_preferences_get_type())
G_DECLARE_FINAL_TYPE(HyocrPreferences, hyocr_preferences, HYOCR, PREFERENCES, AdwPreferencesWindow)

/* model_override: the folder given with --model, shown instead of the setting. */
HyocrPreferences *hyocr_preferences_new(GtkWindow *parent, GSettings *settings, const char *model_override);

G_END_DECLS
