/* Fuzzes the Hub client's JSON: the listing replies (revision API with its LFS
 * entries, and the tree API it falls back to), the record of a partial download and
 * the manifest of an installed one, read by hyocr_download_plan and
 * hyocr_model_check. The input holds, separated by NUL bytes: the revision reply,
 * the tree reply, the partial folder's state file and the destination's manifest
 * (a missing part: a 404, or no file). A loopback SoupServer on its own thread
 * answers the client. */
#include "fuzz.h"
#include "download.h"
#include "error.h"
#include "models.h"

#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <string.h>

static GMutex lock;
static GBytes *replies[2];   /* revision, tree */
static char *endpoint;

static void on_request(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
                       gpointer data)
{
    int which = strstr(path, "/revision/") ? 0 : strstr(path, "/tree/") ? 1 : -1;
    g_mutex_lock(&lock);
    GBytes *body = which >= 0 && replies[which] ? g_bytes_ref(replies[which]) : NULL;
    g_mutex_unlock(&lock);
    if (!body) {
        soup_server_message_set_status(msg, 404, NULL);
        return;
    }
    soup_server_message_set_status(msg, 200, NULL);
    if (g_bytes_get_size(body))   /* libsoup refuses empty bytes */
        soup_message_body_append_bytes(soup_server_message_get_response_body(msg), body);
    soup_message_headers_set_content_type(soup_server_message_get_response_headers(msg), "application/json", NULL);
    g_bytes_unref(body);
}

static gpointer serve(gpointer started)
{
    GMainContext *ctx = g_main_context_new();
    g_main_context_push_thread_default(ctx);
    SoupServer *server = soup_server_new(NULL, NULL);
    soup_server_add_handler(server, NULL, on_request, NULL, NULL);
    g_autoptr(GError) err = NULL;
    if (!soup_server_listen_local(server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &err))
        g_error("loopback server: %s", err->message);
    GSList *uris = soup_server_get_uris(server);
    g_mutex_lock(&lock);
    endpoint = g_strdup_printf("http://127.0.0.1:%d", g_uri_get_port(uris->data));
    g_mutex_unlock(&lock);
    g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
    g_atomic_int_set((gint *)started, 1);
    for (;;) g_main_context_iteration(ctx, TRUE);
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    g_unsetenv("HF_TOKEN");
    static gint started;
    g_thread_unref(g_thread_new("hub", serve, &started));
    while (!g_atomic_int_get(&started)) g_usleep(1000);
    return 0;
}

static void put(const char *dir, const char *name, const fuzz_part *p, bool present)
{
    g_autofree char *path = g_build_filename(fuzz_dir(), dir, name, NULL);
    if (!present) {
        g_remove(path);
        return;
    }
    g_autofree char *folder = g_build_filename(fuzz_dir(), dir, NULL);
    g_mkdir_with_parents(folder, 0700);
    g_autoptr(GError) err = NULL;
    if (!g_file_set_contents(path, (const char *)p->data, (gssize)p->len, &err)) g_error("%s", err->message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[4];
    int n;
    fuzz_split(data, size, parts, 4, &n);
    g_mutex_lock(&lock);
    for (int i = 0; i < 2; i++) {
        g_clear_pointer(&replies[i], g_bytes_unref);
        if (i < n) replies[i] = g_bytes_new(parts[i].data, parts[i].len);
    }
    g_mutex_unlock(&lock);
    put("model.partial", HYOCR_MODELS_PARTIAL_STATE, &parts[2], n > 2);
    put("model", HYOCR_DOWNLOAD_MANIFEST, &parts[3], n > 3);

    g_autofree char *dest = g_build_filename(fuzz_dir(), "model", NULL);
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = endpoint;
    p.repo = "tencent/HunyuanOCR";
    p.dest_dir = dest;
    p.max_retries = 0;
    p.timeout = 10;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &err);
    fuzz_require(dl != NULL, "%s", err->message);
    const hyocr_download_summary *s = hyocr_download_plan(dl, &err);
    fuzz_require(!s == !!err, "a plan and an error, or neither");
    if (err) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR, "foreign error: %s", err->message);
        g_clear_error(&err);
    } else {
        for (int i = 0; i < s->n_files; i++) {
            const hyocr_download_file *f = &s->files[i];
            fuzz_require(f->size >= 0 && !strchr(f->name, '/') && strcmp(f->name, "..") && strcmp(f->name, "."),
                         "file %d: '%s', %lld bytes", i, f->name, (long long)f->size);
            fuzz_require(f->have >= 0 && f->have <= f->size, "file %s: have %lld of %lld", f->name,
                         (long long)f->have, (long long)f->size);
        }
    }
    g_autoptr(hyocr_model_entry) e = hyocr_model_check(dest, FALSE, &err);
    (void)e;
    return 0;
}
