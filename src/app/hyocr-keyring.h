/* hyocr-gtk — a server's API key in the desktop's keyring (libsecret; the
 * Secret portal in the Flatpak), never in GSettings. */
#pragma once
#include <gio/gio.h>

G_BEGIN_DECLS

/* The key kept for this server address, or NULL (none, or no keyring). Blocking:
 * call it off the main thread. */
char    *hyocr_keyring_lookup(const char *server);
/* Keeps key for server (an empty key forgets it). */
void     hyocr_keyring_store(const char *server, const char *key, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer data);
gboolean hyocr_keyring_store_finish(GAsyncResult *result, GError **error);

G_END_DECLS
