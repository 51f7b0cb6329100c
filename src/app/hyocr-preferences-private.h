/* hyocr-gtk — what the tests read of the preferences window. */
#pragma once
#include "hyocr-preferences.h"

G_BEGIN_DECLS

/* The Device group's description: why the GPU is not used, or NULL. */
const char *hyocr_preferences_get_device_note(HyocrPreferences *self);
/* "Test connection": asks the server on a thread; the answer (or what is wrong)
 * becomes the Connection row's subtitle, and tests_done counts the answers. */
void        hyocr_preferences_test_connection(HyocrPreferences *self);
const char *hyocr_preferences_get_connection_result(HyocrPreferences *self, int *tests_done);
/* "Trust Certificate…", shown when the last test refused a certificate: the question
 * (hyocr-certificate-dialog.h); trusted, the test runs again. NULL when there is none. */
AdwMessageDialog *hyocr_preferences_ask_trust(HyocrPreferences *self);
/* Keys stored in or cleared from the keyring so far (their callbacks ran). */
int         hyocr_preferences_get_keys_kept(HyocrPreferences *self);
/* A row of the template by its id ("server_url_row", "server_key_row"). */
GtkWidget  *hyocr_preferences_get_row(HyocrPreferences *self, const char *name);

G_END_DECLS
