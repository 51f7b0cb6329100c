/* hyocr-gtk UI test helpers. */
#include "app-test.h"
#include "hyocr-worker.h"
#include "hyocr-build-config.h"
#include <json-glib/json-glib.h>
#include <stdarg.h>

#include <glib/gstdio.h>
#include <stdlib.h>

static HyocrApplication *app;
static char *own_data_home;   /* made by this process, removed at exit */

static void remove_tree(const char *path)
{
    GDir *dir = g_file_test(path, G_FILE_TEST_IS_SYMLINK) ? NULL : g_dir_open(path, 0, NULL);
    if (dir) {
        for (const char *name; (name = g_dir_read_name(dir));) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            remove_tree(child);
        }
        g_dir_close(dir);
    }
    g_remove(path);
}

static void remove_data_home(void)
{
    if (own_data_home) remove_tree(own_data_home);
    g_clear_pointer(&own_data_home, g_free);
}

/* The app writes its history under $XDG_DATA_HOME: each test program gets its own,
 * never the user's. A child the test starts shares its parent's. */
static void private_data_home(void)
{
    if (g_getenv("HYOCR_APP_TEST_DATA_HOME")) {
        g_setenv("XDG_DATA_HOME", g_getenv("HYOCR_APP_TEST_DATA_HOME"), TRUE);
        return;
    }
    own_data_home = g_dir_make_tmp("hyocr-app-test-XXXXXX", NULL);
    g_assert_nonnull(own_data_home);
    g_setenv("XDG_DATA_HOME", own_data_home, TRUE);
    g_setenv("HYOCR_APP_TEST_DATA_HOME", own_data_home, TRUE);
    atexit(remove_data_home);
}

void app_test_init(int *argc, char ***argv)
{
    private_data_home();
    g_test_init(argc, argv, NULL);
    g_test_set_nonfatal_assertions();
    /* The main thread owns the default context for the whole run, as g_application_run does
     * in the app: unowned, a worker's g_main_context_invoke() would take the context and run
     * the main-thread callback (GTK and all) on the worker thread itself. */
    g_assert_true(g_main_context_acquire(NULL));
    app = hyocr_application_new(G_APPLICATION_NON_UNIQUE);
    g_autoptr(GError) error = NULL;
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    /* Transitions end at once: a page shown is a page drawn in the next frame. */
    g_object_set(gtk_settings_get_default(), "gtk-enable-animations", FALSE, NULL);
}

HyocrApplication *app_test_app(void)
{
    return app;
}

GSettings *app_test_settings(void)
{
    static GSettings *settings;
    if (!settings) settings = g_settings_new(HYOCR_APP_ID);
    return settings;
}

void app_test_reset_settings(void)
{
    GSettings *s = app_test_settings();
    g_autoptr(GSettingsSchema) schema = NULL;
    g_object_get(s, "settings-schema", &schema, NULL);
    g_auto(GStrv) keys = g_settings_schema_list_keys(schema);
    for (char **k = keys; *k; k++) g_settings_reset(s, *k);
    /* GSettings tells of changes from an idle: heard by a window made later, they
     * would reload its engine in the middle of the test. dconf (app-keyring) tells
     * once its service has written them: sync waits for that. */
    g_settings_sync();
    app_test_drain();
}

char *app_test_data(const char *first, ...)
{
    const char *root = g_getenv("HYOCR_TEST_DATA");
    g_autoptr(GPtrArray) parts = g_ptr_array_new();
    g_ptr_array_add(parts, (gpointer)(root ? root : HYOCR_TEST_DATA));
    va_list ap;
    va_start(ap, first);
    for (const char *p = first; p; p = va_arg(ap, const char *)) g_ptr_array_add(parts, (gpointer)p);
    va_end(ap);
    g_ptr_array_add(parts, NULL);
    return g_build_filenamev((char **)parts->pdata);
}

GFile *app_test_image(const char *name)
{
    g_autofree char *path = app_test_data("images", name, NULL);
    return g_file_new_for_path(path);
}

static gboolean wake(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

gboolean app_test_wait(AppTestCond cond, gpointer data, guint timeout_ms)
{
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    /* A periodic wake-up so a blocking iteration re-checks the condition. */
    guint tick = g_timeout_add(5, wake, NULL);
    gboolean ok;
    while (!(ok = cond(data)) && g_get_monotonic_time() < end) g_main_context_iteration(NULL, TRUE);
    g_source_remove(tick);
    return ok;
}

void app_test_drain(void)
{
    while (g_main_context_iteration(NULL, FALSE)) {}
}

static gboolean has_size(gpointer widget)
{
    return gtk_widget_get_mapped(widget) && gtk_widget_get_width(widget) > 0 && gtk_widget_get_height(widget) > 0;
}

/* The widget's last painted render node, NULL before its first paint. */
static GskRenderNode *painted_node(GtkWidget *widget)
{
    g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(widget);
    GtkSnapshot *snapshot = gtk_snapshot_new();
    gdk_paintable_snapshot(paintable, snapshot, gtk_widget_get_width(widget), gtk_widget_get_height(widget));
    return gtk_snapshot_free_to_node(snapshot);
}

typedef struct {
    GtkWidget *widget;
    guint      paints;
} DrawWait;

static void on_after_paint(GdkFrameClock *clock, DrawWait *w)
{
    w->paints++;
}

/* Frames keep coming while the test waits (a paint of a surface that X has not
 * mapped yet draws nothing: the next frame does). */
static gboolean keep_ticking(GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
    return G_SOURCE_CONTINUE;
}

static gboolean drawn(gpointer data)
{
    DrawWait *w = data;
    if (!w->paints) return FALSE;
    g_autoptr(GskRenderNode) node = painted_node(w->widget);
    return node != NULL;
}

void app_test_wait_drawn(GtkWidget *widget)
{
    if (!app_test_wait(has_size, widget, APP_TEST_WAIT_MS)) {
        g_test_fail_printf("%s was not mapped with a size", G_OBJECT_TYPE_NAME(widget));
        return;
    }
    DrawWait w = { widget, 0 };
    GdkFrameClock *clock = gtk_widget_get_frame_clock(widget);
    gulong id = g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), &w);
    guint tick = gtk_widget_add_tick_callback(widget, keep_ticking, NULL, NULL);
    gtk_widget_queue_draw(widget);
    if (!app_test_wait(drawn, &w, APP_TEST_WAIT_MS))
        g_test_fail_printf("%s was not painted (%u frames)", G_OBJECT_TYPE_NAME(widget), w.paints);
    gtk_widget_remove_tick_callback(widget, tick);
    g_signal_handler_disconnect(clock, id);
}

GdkTexture *app_test_render(GtkWidget *widget)
{
    g_autoptr(GskRenderNode) node = painted_node(widget);
    g_assert_nonnull(node);
    if (!node) return NULL;
    GskRenderer *renderer = gtk_native_get_renderer(gtk_widget_get_native(widget));
    graphene_rect_t viewport = GRAPHENE_RECT_INIT(0, 0, gtk_widget_get_width(widget), gtk_widget_get_height(widget));
    return gsk_renderer_render_texture(renderer, node, &viewport);
}

static gboolean job_finished(gpointer job)
{
    return hyocr_job_is_finished(job);
}

void app_test_wait_job(HyocrJob *job, guint timeout_ms)
{
    if (!app_test_wait(job_finished, job, timeout_ms))
        g_test_fail_printf("job %s did not finish within %u ms (state %d)", hyocr_job_get_title(job), timeout_ms,
                           hyocr_job_get_state(job));
}

HyocrJob *app_test_job_at(HyocrWindow *win, guint index)
{
    g_autoptr(HyocrJob) job = g_list_model_get_item(hyocr_window_get_jobs(win), index);
    return job;   /* the window's store keeps it */
}

static gboolean worker_settled(gpointer win)
{
    HyocrWorkerState st = hyocr_worker_get_state(hyocr_window_get_worker(win));
    return st == HYOCR_WORKER_READY || st == HYOCR_WORKER_FAILED;
}

HyocrWindow *app_test_window(const char *ckpt, gboolean ready)
{
    g_autofree char *dir = ckpt[0] == '/' ? g_strdup(ckpt) : app_test_data(ckpt, NULL);
    g_settings_set_string(app_test_settings(), "model-folder", dir);
    g_settings_sync();
    app_test_drain();   /* as in app_test_reset_settings: the window hears no change it was made with */
    HyocrWindow *win = hyocr_window_new(app);
    gtk_window_present(GTK_WINDOW(win));
    if (ready) {
        g_assert_true(app_test_wait(worker_settled, win, APP_TEST_WAIT_MS));
        g_assert_cmpint(hyocr_worker_get_state(hyocr_window_get_worker(win)), ==, HYOCR_WORKER_READY);
    }
    return win;
}

static gboolean both_gone(gpointer data)
{
    gpointer *pair = data;
    return !pair[0] && !pair[1];
}

void app_test_destroy_window(HyocrWindow *win)
{
    gpointer pair[2] = { win, hyocr_window_get_worker(win) };
    g_object_add_weak_pointer(G_OBJECT(pair[0]), &pair[0]);
    g_object_add_weak_pointer(G_OBJECT(pair[1]), &pair[1]);
    gtk_window_destroy(GTK_WINDOW(win));
    /* Jobs released by the worker come back through the main context. */
    app_test_wait(both_gone, pair, APP_TEST_WAIT_MS);
    g_assert_null(pair[0]);
    g_assert_null(pair[1]);
    if (pair[0]) g_object_remove_weak_pointer(G_OBJECT(pair[0]), &pair[0]);
    if (pair[1]) g_object_remove_weak_pointer(G_OBJECT(pair[1]), &pair[1]);
}

/* The command's output as the app shows text: hyocr run writes NUL bytes as they are (in
 * JSON as \u0000), the app shows each as U+2400. */
static char *run_cli(const char *const *argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                                 &error);
    g_assert_no_error(error);
    g_autoptr(GBytes) out = NULL, err = NULL;
    g_assert_true(g_subprocess_communicate(p, NULL, NULL, &out, &err, &error));
    g_assert_no_error(error);
    if (!g_subprocess_get_successful(p))
        g_test_fail_printf("hyocr run failed: %.*s", (int)g_bytes_get_size(err), (const char *)g_bytes_get_data(err, NULL));
    gsize len = 0;
    const char *data = g_bytes_get_data(out, &len);
    return hyocr_worker_displayable_text(data ? data : "", len);
}

/* \u0000 in a JSON string (a NUL byte of the text) as \u2400, which json-glib can carry. */
static char *json_nul_as_symbol(const char *json)
{
    GString *s = g_string_new(NULL);
    for (const char *p = json; *p; p++) {
        if (p[0] == '\\' && g_str_has_prefix(p + 1, "u0000")) {
            g_string_append(s, "\\u2400");
            p += 5;
        } else if (p[0] == '\\' && p[1]) {
            g_string_append_len(s, p++, 2);
        } else {
            g_string_append_c(s, *p);
        }
    }
    return g_string_free(s, FALSE);
}

void app_test_cli_run(const char *ckpt, const char *image, const char *task, int max_new_tokens, char **streamed,
                      char **final_text)
{
    const char *task_args[] = { "-t", task, NULL };
    app_test_cli_run_args(ckpt, image, task_args, max_new_tokens, streamed, final_text);
}

void app_test_cli_run_args(const char *ckpt, const char *image, const char *const *args, int max_new_tokens,
                           char **streamed, char **final_text)
{
    const char *cli = g_getenv("HYOCR_CLI");
    g_assert_nonnull(cli);
    g_autofree char *model = app_test_data(ckpt, NULL);
    g_autofree char *img = app_test_data("images", image, NULL);
    g_autofree char *n = g_strdup_printf("%d", max_new_tokens);
    g_autoptr(GStrvBuilder) b = g_strv_builder_new();
    g_strv_builder_add_many(b, cli, "run", "-m", model, "-i", img, "-n", n, NULL);
    g_strv_builder_addv(b, (const char **)args);
    g_auto(GStrv) text_argv = g_strv_builder_end(b);
    *streamed = run_cli((const char *const *)text_argv);
    gsize len = strlen(*streamed);
    if (len && (*streamed)[len - 1] == '\n') (*streamed)[len - 1] = '\0';   /* the CLI ends the stream with one */
    g_autoptr(GStrvBuilder) jb = g_strv_builder_new();
    g_strv_builder_addv(jb, (const char **)text_argv);
    g_strv_builder_add_many(jb, "-f", "json", NULL);
    g_auto(GStrv) json_argv = g_strv_builder_end(jb);
    g_autofree char *raw = run_cli((const char *const *)json_argv);
    g_autofree char *json = json_nul_as_symbol(raw);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    g_assert_true(json_parser_load_from_data(parser, json, -1, &error));
    /* an array of one object per image */
    JsonArray *all = json_node_get_array(json_parser_get_root(parser));
    g_assert_cmpuint(json_array_get_length(all), ==, 1);
    *final_text = g_strdup(json_object_get_string_member(json_array_get_object_element(all, 0), "text"));
}

GPtrArray *app_test_cli_pages(const char *ckpt, const char *document, const char *task, int max_new_tokens)
{
    const char *cli = g_getenv("HYOCR_CLI");
    g_assert_nonnull(cli);
    g_autofree char *model = app_test_data(ckpt, NULL);
    g_autofree char *n = g_strdup_printf("%d", max_new_tokens);
    const char *argv[] = { cli, "run", "-m", model, "-t", task, "-n", n, "-f", "json", document, NULL };
    g_autofree char *raw = run_cli(argv);
    g_autofree char *json = json_nul_as_symbol(raw);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    g_assert_true(json_parser_load_from_data(parser, json, -1, &error));
    JsonArray *all = json_node_get_array(json_parser_get_root(parser));
    GPtrArray *texts = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < json_array_get_length(all); i++)
        g_ptr_array_add(texts, g_strdup(json_object_get_string_member(json_array_get_object_element(all, i), "text")));
    return texts;
}

typedef struct {
    HyocrWindow     *win;
    HyocrWorkerState state;
} WorkerWait;

static gboolean worker_in_state(gpointer data)
{
    WorkerWait *w = data;
    return hyocr_worker_get_state(hyocr_window_get_worker(w->win)) == w->state;
}

void app_test_wait_worker(HyocrWindow *win, HyocrWorkerState state)
{
    WorkerWait w = { win, state };
    if (!app_test_wait(worker_in_state, &w, APP_TEST_WAIT_MS))
        g_test_fail_printf("worker state %d, waited for %d", hyocr_worker_get_state(hyocr_window_get_worker(win)), state);
}
