/* The app with its jobs on a server (issue 18): against `hyocr serve` (CPU, the
 * fixture checkpoint, a key) every preset gives the text `hyocr run` gives
 * locally, and Cancel closes the connection so the server frees the job; a server that refuses the connection, or the key, is said in the
 * banner; Preferences' "Test connection" says what is wrong or what the server
 * serves; the key typed in Preferences is in no GSettings key. */
#include "app-test.h"
#include "hyocr-preferences-private.h"
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define JOB_TIMEOUT_MS 600000
#define KEY "sk-app-test-3f9c1e-secret"

typedef struct {
    GSubprocess *proc;
    char        *url;
    char        *key_file;
} Server;

/* hyocr serve on a free loopback port, waited for until it says it is ready. */
static Server *server_start(void)
{
    Server *s = g_new0(Server, 1);
    g_autoptr(GError) error = NULL;
    int fd = g_file_open_tmp("hyocr-key-XXXXXX", &s->key_file, &error);
    g_assert_no_error(error);
    g_assert_cmpint(write(fd, KEY "\n", strlen(KEY) + 1), ==, (gssize)strlen(KEY) + 1);
    close(fd);
    g_autofree char *model = app_test_data("ckpt-flat", NULL);
    s->proc = g_subprocess_new(G_SUBPROCESS_FLAGS_STDERR_PIPE | G_SUBPROCESS_FLAGS_STDOUT_SILENCE, &error,
                               g_getenv("HYOCR_CLI"), "serve", "--model", model, "--device", "cpu", "--threads", "2",
                               "--port", "0", "--served-model-name", "tiny", "--api-key-file", s->key_file, NULL);
    g_assert_no_error(error);
    g_autoptr(GDataInputStream) in = g_data_input_stream_new(g_subprocess_get_stderr_pipe(s->proc));
    for (;;) {
        g_autofree char *line = g_data_input_stream_read_line_utf8(in, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_nonnull(line);   /* the server ended before it was ready */
        const char *at = strstr(line, "listening on ");
        if (at) s->url = g_strndup(at + 13, strcspn(at + 13, " "));
        if (strstr(line, "ready")) break;
    }
    g_assert_nonnull(s->url);
    return s;
}

static void server_stop(Server *s)
{
    g_subprocess_force_exit(s->proc);
    g_subprocess_wait(s->proc, NULL, NULL);
    g_object_unref(s->proc);
    g_unlink(s->key_file);
    g_free(s->key_file);
    g_free(s->url);
    g_free(s);
}

typedef struct {
    HyocrWindow     *win;
    HyocrWorkerState state;
} WaitState;

static gboolean worker_in(gpointer data)
{
    WaitState *w = data;
    return hyocr_worker_get_state(hyocr_window_get_worker(w->win)) == w->state;
}

static void wait_worker(HyocrWindow *win, HyocrWorkerState state)
{
    WaitState w = { win, state };
    g_assert_true(app_test_wait(worker_in, &w, APP_TEST_WAIT_MS));
}

/* Settings that point the window at a server; the key is the session's. */
static void use_server(HyocrWindow *win, const char *url, const char *key)
{
    hyocr_window_set_server_key(win, key);
    g_settings_set_string(app_test_settings(), "server-url", url);
    g_settings_set_string(app_test_settings(), "runner", "server");
    wait_worker(win, HYOCR_WORKER_LOADING);
}

static gboolean writing_many(gpointer job)
{
    return hyocr_job_get_n_tokens(job) >= 200 || hyocr_job_is_finished(job);
}

/* The server runs nothing (asks its /metrics). */
static gboolean server_idle(gpointer worker)
{
    int64_t used = 0;
    int running = -1;
    return hyocr_worker_get_server_metrics(worker, &used, &running, NULL) && running == 0;
}

static void test_presets_match_local(void)
{
    Server *srv = server_start();
    app_test_reset_settings();
    g_settings_set_int(app_test_settings(), "max-new-tokens", 24);
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    use_server(win, srv->url, KEY);
    wait_worker(win, HYOCR_WORKER_READY);
    HyocrWorker *worker = hyocr_window_get_worker(win);
    g_assert_nonnull(hyocr_worker_get_server(worker));
    g_assert_true(g_str_has_prefix(hyocr_worker_get_server(worker), srv->url));
    g_assert_cmpstr(hyocr_worker_get_model_dir(worker), ==, "tiny");
    static const struct { const char *preset, *task; } cases[] = {
        { "recognize", "recognize" }, { "spotting", "spotting" }, { "parse-document", "parse_document" },
        { "translate", "translate_en" }, { "subtitles", "subtitles" },
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_settings_set_string(app_test_settings(), "preset", cases[i].preset);
        g_autoptr(GFile) file = app_test_image("odd_137x91.png");
        g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
        HyocrJob *job = app_test_job_at(win, i);
        app_test_wait_job(job, JOB_TIMEOUT_MS);
        g_autofree char *streamed = NULL, *final_text = NULL;
        app_test_cli_run("ckpt-flat", "odd_137x91.png", cases[i].task, 24, &streamed, &final_text);
        g_test_message("%s: %s", cases[i].preset, hyocr_job_get_text(job));
        g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
        g_assert_cmpstr(hyocr_job_get_text(job), ==, final_text);
    }
    /* Cancel closes the request's connection: the server frees the job */
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    opts->max_new_tokens = 30000;
    opts->ignore_eos = TRUE;
    g_autoptr(GFile) big = app_test_image("big_420x300.png");
    g_autoptr(HyocrJob) running = hyocr_job_new_for_file(big, opts);
    hyocr_window_add_job(win, running);
    g_assert_true(app_test_wait(writing_many, running, JOB_TIMEOUT_MS));
    int64_t used = 0;
    int n_running = 0;
    g_assert_true(hyocr_worker_get_server_metrics(worker, &used, &n_running, NULL));
    g_assert_cmpint(n_running, ==, 1);
    g_assert_cmpint(used, >, 0);   /* the server's own figure, for the gauge */
    hyocr_window_select_job(win, running);
    gtk_widget_activate_action(GTK_WIDGET(win), "win.cancel-job", NULL);
    app_test_wait_job(running, APP_TEST_WAIT_MS);
    g_assert_cmpint(hyocr_job_get_state(running), ==, HYOCR_JOB_CANCELLED);
    g_assert_cmpint(hyocr_job_get_n_tokens(running), <, 30000);
    g_assert_true(app_test_wait(server_idle, worker, APP_TEST_WAIT_MS));
        /* back on this computer: the engine loads again */
    g_settings_set_string(app_test_settings(), "runner", "local");
    wait_worker(win, HYOCR_WORKER_LOADING);
    wait_worker(win, HYOCR_WORKER_READY);
    g_assert_null(hyocr_worker_get_server(worker));
    app_test_destroy_window(win);
    server_stop(srv);
}

static void test_faults(void)
{
    Server *srv = server_start();
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    /* the wrong key: the banner names the server and the key */
    use_server(win, srv->url, "not-the-key");
    wait_worker(win, HYOCR_WORKER_FAILED);
    const char *problem = hyocr_window_get_problem(win);
    g_test_message("%s", problem);
    g_assert_nonnull(problem);
    g_assert_nonnull(strstr(problem, srv->url));
    g_assert_nonnull(strstr(problem, "refused the API key (HTTP 401"));
    g_assert_cmpstr(hyocr_window_get_page(win), !=, "model");   /* a banner, not the model page */
    /* nothing listening */
    GSocket *sock = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(lo, 0);
    g_assert_true(g_socket_bind(sock, any, TRUE, NULL));
    g_autoptr(GSocketAddress) bound = g_socket_get_local_address(sock, NULL);
    guint16 port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
    g_object_unref(sock);   /* closed: the port refuses */
    g_autofree char *down = g_strdup_printf("http://127.0.0.1:%u", port);
    g_settings_set_string(app_test_settings(), "server-url", down);
    wait_worker(win, HYOCR_WORKER_LOADING);
    wait_worker(win, HYOCR_WORKER_FAILED);
    problem = hyocr_window_get_problem(win);
    g_test_message("%s", problem);
    g_assert_nonnull(strstr(problem, "refused the connection: is the server running, and on that port?"));
    app_test_destroy_window(win);
    server_stop(srv);
}

typedef struct {
    HyocrPreferences *prefs;
    int               n;
} WaitTest;

static gboolean tests_answered(gpointer data)
{
    WaitTest *w = data;
    int done = 0;
    hyocr_preferences_get_connection_result(w->prefs, &done);
    return done >= w->n;
}

static const char *test_connection(HyocrPreferences *prefs, int n)
{
    hyocr_preferences_test_connection(prefs);
    WaitTest w = { prefs, n };
    g_assert_true(app_test_wait(tests_answered, &w, APP_TEST_WAIT_MS));
    const char *said = hyocr_preferences_get_connection_result(prefs, NULL);
    g_test_message("%s", said);
    return said;
}

/* Preferences: the address and key typed in, "Test connection" says what the
 * server serves or what is wrong; the key reaches no GSettings key. */
static void test_preferences(void)
{
    Server *srv = server_start();
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrPreferences *prefs = hyocr_preferences_new(win);
    gtk_window_present(GTK_WINDOW(prefs));
    g_settings_set_string(app_test_settings(), "runner", "server");
    GtkWidget *url_row = hyocr_preferences_get_row(prefs, "server_url_row");
    GtkWidget *key_row = hyocr_preferences_get_row(prefs, "server_key_row");
    gtk_editable_set_text(GTK_EDITABLE(url_row), srv->url);
    g_signal_emit_by_name(url_row, "apply");
    g_autofree char *saved_url = g_settings_get_string(app_test_settings(), "server-url");
    g_assert_cmpstr(saved_url, ==, srv->url);
    /* no key yet: the server asks for one */
    const char *said = test_connection(prefs, 1);
    g_assert_nonnull(strstr(said, "asks for an API key (HTTP 401"));
    gtk_editable_set_text(GTK_EDITABLE(key_row), KEY);
    g_signal_emit_by_name(key_row, "apply");
    said = test_connection(prefs, 2);
    g_assert_true(g_str_has_prefix(said, "Connected: "));
    g_assert_nonnull(strstr(said, " serves tiny"));
    g_settings_set_string(app_test_settings(), "server-model", "nope");
    said = test_connection(prefs, 3);
    g_assert_nonnull(strstr(said, "does not serve the model “nope”; it serves: tiny"));
    gtk_editable_set_text(GTK_EDITABLE(url_row), "http://no-such-host.invalid:8000");
    said = test_connection(prefs, 4);
    g_assert_nonnull(strstr(said, "the host name “no-such-host.invalid” was not found"));
    /* the key is in no key of the app's settings */
    GSettings *s = app_test_settings();
    g_autoptr(GSettingsSchema) schema = NULL;
    g_object_get(s, "settings-schema", &schema, NULL);
    g_auto(GStrv) keys = g_settings_schema_list_keys(schema);
    for (char **k = keys; *k; k++) {
        g_autoptr(GVariant) v = g_settings_get_value(s, *k);
        g_autofree char *text = g_variant_print(v, FALSE);
        if (strstr(text, KEY)) g_error("the API key is in the setting %s", *k);
    }
    gtk_window_destroy(GTK_WINDOW(prefs));
    app_test_destroy_window(win);
    server_stop(srv);
}

int main(int argc, char **argv)
{
    app_test_init(&argc, &argv);
    g_test_add_func("/app/remote/presets-match-local", test_presets_match_local);
    g_test_add_func("/app/remote/faults", test_faults);
    g_test_add_func("/app/remote/preferences", test_preferences);
    return g_test_run();
}
