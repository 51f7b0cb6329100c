/* hyocr-gtk — a server's API key in the keyring (hyocr-keyring.h). */
#include "hyocr-keyring.h"
#include "hyocr-build-config.h"
#include <glib/gi18n.h>
#if HYOCR_HAVE_SECRET
#include <libsecret/secret.h>

static const SecretSchema *key_schema(void)
{
    static const SecretSchema schema = {
        "io.github.hyocr.Hyocr.ServerKey", SECRET_SCHEMA_NONE,
        { { "server", SECRET_SCHEMA_ATTRIBUTE_STRING }, { NULL, 0 } },
    };
    return &schema;
}

char *hyocr_keyring_lookup(const char *server)
{
    g_autoptr(GError) error = NULL;
    char *key = secret_password_lookup_sync(key_schema(), NULL, &error, "server", server, NULL);
    if (!key) return NULL;
    char *copy = g_strdup(key);   /* libsecret's copy is wiped by its own free */
    secret_password_free(key);
    return copy;
}

static void stored(GObject *source, GAsyncResult *result, gpointer data)
{
    GTask *task = data;
    GError *error = NULL;
    gboolean ok = g_task_get_task_data(task) ? secret_password_clear_finish(result, &error)
                                             : secret_password_store_finish(result, &error);
    if (error) g_task_return_error(task, error);
    else g_task_return_boolean(task, ok);
    g_object_unref(task);
}

void hyocr_keyring_store(const char *server, const char *key, GCancellable *cancellable, GAsyncReadyCallback callback,
                         gpointer data)
{
    GTask *task = g_task_new(NULL, cancellable, callback, data);
    if (!key || !*key) {
        g_task_set_task_data(task, GINT_TO_POINTER(1), NULL);
        secret_password_clear(key_schema(), cancellable, stored, task, "server", server, NULL);
        return;
    }
    g_autofree char *label = g_strdup_printf(_("hyocr: API key for %s"), server);
    secret_password_store(key_schema(), SECRET_COLLECTION_DEFAULT, label, key, cancellable, stored, task, "server",
                          server, NULL);
}
#else
char *hyocr_keyring_lookup(const char *server)
{
    (void)server;
    return NULL;
}

void hyocr_keyring_store(const char *server, const char *key, GCancellable *cancellable, GAsyncReadyCallback callback,
                         gpointer data)
{
    (void)server, (void)key;
    GTask *task = g_task_new(NULL, cancellable, callback, data);
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            _("this build of hyocr has no keyring support (libsecret)"));
    g_object_unref(task);
}
#endif

gboolean hyocr_keyring_store_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}
