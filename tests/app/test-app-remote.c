/* The app with its jobs on a server (issue 18): against `hyocr serve` (CPU, the
 * fixture checkpoint, a key) every preset gives the text `hyocr run` gives
 * locally, and Cancel closes the connection so the server frees the job; a server that refuses the connection, or the key, is said in the
 * banner; Preferences' "Test connection" says what is wrong or what the server
 * serves; the key typed in Preferences is in no GSettings key. Against
 * tests/remote/fault-server.py over TLS with a self-signed certificate: refused
 * and said until the user trusts it (the banner's or Preferences' question, which
 * shows openssl's SHA-256 fingerprint), accepted then, refused again for another
 * certificate at the same address, and dropped with the address. Under a real
 * Secret Service (gnome-keyring, `meson test app-keyring`): the key typed is kept
 * in the keyring, a later window's jobs send it, it is in no setting (dconf's
 * database read back), and removing the server's address removes it. */
#include "app-test.h"
#include "hyocr-preferences-private.h"
#include "hyocr-keyring.h"
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

/* Settings that point the window at a server; the key is the session's. */
static void use_server(HyocrWindow *win, const char *url, const char *key)
{
    hyocr_window_set_server_key(win, key);
    g_settings_set_string(app_test_settings(), "server-url", url);
    g_settings_set_string(app_test_settings(), "runner", "server");
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
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
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    HyocrWorker *worker = hyocr_window_get_worker(win);
    g_assert_nonnull(hyocr_worker_get_server(worker));
    g_assert_true(g_str_has_prefix(hyocr_worker_get_server(worker), srv->url));
    g_assert_cmpstr(hyocr_worker_get_model_dir(worker), ==, "tiny");
    /* every preset, each with the CLI's local run of the same task */
    static const struct { const char *preset; const char *args[5]; } cases[] = {
        { "recognize", { "-t", "recognize" } }, { "spotting", { "-t", "spotting" } },
        { "parse-document", { "-t", "parse_document" } }, { "parse-table", { "-t", "parse_table" } },
        { "parse-formula", { "-t", "parse_formula" } }, { "parse-chart", { "-t", "parse_chart" } },
        { "translate", { "-t", "translate_en" } }, { "extract-fields", { "-t", "extract_fields", "--fields", "name,date" } },
        { "subtitles", { "-t", "subtitles" } }, { "custom", { "--prompt", "Describe the image." } },
    };
    const char *fields[] = { "name", "date", NULL };
    g_settings_set_strv(app_test_settings(), "fields", fields);
    g_settings_set_string(app_test_settings(), "custom-prompt", "Describe the image.");
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_settings_set_string(app_test_settings(), "preset", cases[i].preset);
        g_autoptr(GFile) file = app_test_image("odd_137x91.png");
        g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
        HyocrJob *job = app_test_job_at(win, i);
        app_test_wait_job(job, JOB_TIMEOUT_MS);
        g_autofree char *streamed = NULL, *final_text = NULL;
        app_test_cli_run_args("ckpt-flat", "odd_137x91.png", cases[i].args, 24, &streamed, &final_text);
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
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
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
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
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
    app_test_wait_worker(win, HYOCR_WORKER_LOADING);
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
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

/* ---- tests/remote/fault-server.py, over TLS or not ---- */

typedef struct {
    GSubprocess *proc;
    char        *log;
    int          port;
} Fault;

typedef struct {
    const char *path, *line;
    int         n;
} LogWait;

/* How many lines of the log start with prefix. */
static int log_count(const char *path, const char *prefix)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL)) return 0;
    int n = 0;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) n += g_str_has_prefix(*l, prefix);
    return n;
}

static gboolean log_has(gpointer data)
{
    LogWait *w = data;
    return log_count(w->path, w->line) >= w->n;
}

/* The fault server in mode, on port (0: a free one), with a certificate (NULL: plain http). */
static Fault *fault_start(const char *dir, const char *mode, const char *cert, const char *key, int port)
{
    static int serial;
    Fault *f = g_new0(Fault, 1);
    f->log = g_strdup_printf("%s/fault-%d.log", dir, serial++);
    g_autofree char *port_arg = g_strdup_printf("%d", port);
    g_autoptr(GStrvBuilder) b = g_strv_builder_new();
    g_strv_builder_add_many(b, "python3", g_getenv("HYOCR_FAULT_SERVER"), mode, f->log, "--port", port_arg, "--stdin-lifeline", "1", NULL);
    if (cert) g_strv_builder_add_many(b, "--cert", cert, "--key", key, NULL);
    g_auto(GStrv) argv = g_strv_builder_end(b);
    g_autoptr(GError) error = NULL;
    f->proc = g_subprocess_newv((const char *const *)argv,
                                G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                    G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
    g_assert_no_error(error);
    LogWait w = { f->log, "port ", 1 };
    g_assert_true(app_test_wait(log_has, &w, APP_TEST_WAIT_MS));
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(f->log, &text, NULL, NULL));
    f->port = atoi(text + 5);
    g_assert_cmpint(f->port, >, 0);
    return f;
}

static void fault_stop(Fault *f)
{
    g_subprocess_force_exit(f->proc);
    g_subprocess_wait(f->proc, NULL, NULL);
    g_object_unref(f->proc);
    g_free(f->log);
    g_free(f);
}

static char *run_openssl(const char *const *argv)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                                                 &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_successful(p));
    return g_steal_pointer(&out);
}

/* A self-signed certificate for 127.0.0.1 in DIR/NAME.pem (its key NAME.key), as
 * test-remote.sh makes them; returns its SHA-256 fingerprint as openssl prints it. */
static char *make_certificate(const char *dir, const char *name, char **pem, char **key)
{
    *pem = g_strdup_printf("%s/%s.pem", dir, name);
    *key = g_strdup_printf("%s/%s.key", dir, name);
    const char *req[] = { "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", *key, "-out", *pem,
                          "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", NULL };
    g_free(run_openssl(req));
    const char *fp[] = { "openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", *pem, NULL };
    g_autofree char *out = run_openssl(fp);   /* "sha256 Fingerprint=AB:CD:…" */
    const char *eq = strchr(out, '=');
    g_assert_nonnull(eq);
    return g_strstrip(g_strdup(eq + 1));
}

static void assert_trusted(const char *url, const char *fingerprint)
{
    g_autofree char *for_url = NULL, *fp = NULL;
    g_settings_get(app_test_settings(), "server-certificate", "(ss)", &for_url, &fp);
    g_assert_cmpstr(for_url, ==, url);
    g_assert_cmpstr(fp, ==, fingerprint);
}

/* The question shows the certificate: its fingerprint (openssl's), whom it is for. */
static void answer_question(AdwMessageDialog *dialog, const char *fingerprint, const char *response)
{
    g_assert_nonnull(dialog);
    const char *body = adw_message_dialog_get_body(dialog);
    g_test_message("%s", body);
    g_autofree char *fp_line = g_strdup_printf("SHA-256 fingerprint: %s", fingerprint);
    g_assert_nonnull(strstr(body, fp_line));
    g_assert_nonnull(strstr(body, "presented a certificate this computer does not trust (no authority this computer "
                                  "trusts signed it: it may be self-signed)"));
    g_assert_nonnull(strstr(body, "Issued to: CN=127.0.0.1"));
    adw_message_dialog_response(dialog, response);
    gtk_window_destroy(GTK_WINDOW(dialog));
}

#define UNTRUSTED "its certificate is not trusted: it is signed by no authority this computer trusts (self-signed?). " \
                  "If it is your own server, trust its certificate explicitly"
#define CHANGED   "its certificate is not trusted: it is not the certificate trusted for this server (a new " \
                  "certificate, or another server at this address?)"

static void test_certificate(void)
{
    g_autofree char *openssl = g_find_program_in_path("openssl");
    g_autofree char *python = g_find_program_in_path("python3");
    if (!openssl || !python) {
        g_test_skip("openssl or python3 is not installed (.ci/setup installs them)");
        return;
    }
    g_autofree char *dir = g_dir_make_tmp("hyocr-tls-XXXXXX", NULL);
    g_autofree char *pem_a = NULL, *key_a = NULL, *pem_b = NULL, *key_b = NULL;
    g_autofree char *fp_a = make_certificate(dir, "a", &pem_a, &key_a);
    g_autofree char *fp_b = make_certificate(dir, "b", &pem_b, &key_b);
    g_assert_cmpstr(fp_a, !=, fp_b);
    Fault *srv = fault_start(dir, "ok", pem_a, key_a, 0);
    g_autofree char *url = g_strdup_printf("https://127.0.0.1:%d", srv->port);
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);

    /* jobs on it: refused and said, and the banner offers to trust the certificate */
    use_server(win, url, NULL);
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
    const char *problem = hyocr_window_get_problem(win);
    g_test_message("%s", problem);
    g_assert_nonnull(problem);
    g_assert_true(g_str_has_prefix(problem, url));
    g_assert_nonnull(strstr(problem, UNTRUSTED));
    g_assert_true(gtk_widget_get_visible(win->trust_button));
    assert_trusted("", "");
    AdwMessageDialog *first = hyocr_window_ask_trust(win);
    g_assert_nonnull(first);
    g_assert_null(strstr(adw_message_dialog_get_body(first), "It is not the certificate trusted"));
    answer_question(first, fp_a, "trust");
    assert_trusted(url, fp_a);
    /* trusted: the connection is made again, and a page is read */
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_assert_null(hyocr_window_get_problem(win));
    g_autoptr(GFile) file = app_test_image("odd_137x91.png");
    g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
    HyocrJob *job = app_test_job_at(win, 0);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    g_assert_cmpstr(hyocr_job_get_text(job), ==, "hello world");

    /* another certificate at the same address: refused again, said so */
    fault_stop(srv);
    srv = fault_start(dir, "ok", pem_b, key_b, atoi(strrchr(url, ':') + 1));
    HyocrPreferences *prefs = hyocr_preferences_new(win);
    gtk_window_present(GTK_WINDOW(prefs));
    GtkWidget *trust = hyocr_preferences_get_row(prefs, "trust_button");
    g_assert_false(gtk_widget_get_visible(trust));
    const char *said = test_connection(prefs, 1);
    g_assert_true(g_str_has_prefix(said, url));
    g_assert_nonnull(strstr(said, CHANGED));
    g_assert_true(gtk_widget_get_visible(trust));
    /* the question shows the new certificate, and that it is not the one trusted
     * before; cancelled, the old trust stays */
    AdwMessageDialog *question = hyocr_preferences_ask_trust(prefs);
    g_autofree char *changed = g_strdup_printf("It is not the certificate trusted for this server before (%s)", fp_a);
    g_assert_nonnull(question);
    g_assert_nonnull(strstr(adw_message_dialog_get_body(question), changed));
    answer_question(question, fp_b, "cancel");
    assert_trusted(url, fp_a);
    hyocr_window_reload_engine(win);
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
    g_assert_nonnull(strstr(hyocr_window_get_problem(win), CHANGED));
    /* trusted in Preferences: the test runs again by itself, and connects */
    answer_question(hyocr_preferences_ask_trust(prefs), fp_b, "trust");
    assert_trusted(url, fp_b);
    WaitTest w = { prefs, 2 };
    g_assert_true(app_test_wait(tests_answered, &w, APP_TEST_WAIT_MS));
    said = hyocr_preferences_get_connection_result(prefs, NULL);
    g_test_message("%s", said);
    g_autofree char *connected = g_strdup_printf("Connected: %s serves m", url);
    g_assert_cmpstr(said, ==, connected);
    g_assert_false(gtk_widget_get_visible(trust));
    app_test_wait_worker(win, HYOCR_WORKER_READY);

    /* another address: the trust goes with the old one */
    GtkWidget *url_row = hyocr_preferences_get_row(prefs, "server_url_row");
    g_autofree char *other = g_strdup_printf("https://localhost:%d", srv->port);
    gtk_editable_set_text(GTK_EDITABLE(url_row), other);
    g_signal_emit_by_name(url_row, "apply");
    assert_trusted("", "");
    said = test_connection(prefs, 3);
    g_assert_nonnull(strstr(said, "its certificate is not trusted"));

    gtk_window_destroy(GTK_WINDOW(prefs));
    app_test_destroy_window(win);
    fault_stop(srv);
    for (const char *const *f = (const char *const[]){ pem_a, key_a, pem_b, key_b, NULL }; *f; f++) g_unlink(*f);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    for (const char *n; (n = g_dir_read_name(d));) {
        g_autofree char *path = g_build_filename(dir, n, NULL);
        g_unlink(path);
    }
    g_rmdir(dir);
}

static gboolean keys_kept(gpointer data)
{
    WaitTest *w = data;
    return hyocr_preferences_get_keys_kept(w->prefs) >= w->n;
}

static gboolean file_contains(const char *path, const char *what)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, NULL)) return FALSE;
    size_t n = strlen(what);
    for (gsize i = 0; i + n <= len; i++)   /* dconf's database is binary: no strstr */
        if (!memcmp(text + i, what, n)) return TRUE;
    return FALSE;
}

/* The key typed in Preferences, in a real Secret Service (with-keyring.sh starts
 * gnome-keyring on a private bus, the settings in dconf): kept there, sent by a
 * later window's jobs, in no setting, gone with the server's address. */
static void test_keyring(void)
{
    const char *key = g_getenv("HYOCR_TEST_KEYRING_KEY");
    if (!key) {
        g_test_skip("no Secret Service in this run: `meson test app-keyring` runs this under gnome-keyring");
        return;
    }
    g_autofree char *dir = g_dir_make_tmp("hyocr-keyring-XXXXXX", NULL);
    Fault *srv = fault_start(dir, "ok", NULL, NULL, 0);
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%d", srv->port);
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    HyocrPreferences *prefs = hyocr_preferences_new(win);
    gtk_window_present(GTK_WINDOW(prefs));
    g_settings_set_string(app_test_settings(), "runner", "server");
    GtkWidget *url_row = hyocr_preferences_get_row(prefs, "server_url_row");
    GtkWidget *key_row = hyocr_preferences_get_row(prefs, "server_key_row");
    gtk_editable_set_text(GTK_EDITABLE(url_row), url);
    g_signal_emit_by_name(url_row, "apply");
    gtk_editable_set_text(GTK_EDITABLE(key_row), key);
    g_signal_emit_by_name(key_row, "apply");
    WaitTest w = { prefs, 1 };
    g_assert_true(app_test_wait(keys_kept, &w, APP_TEST_WAIT_MS));
    g_autofree char *kept = hyocr_keyring_lookup(url);
    g_assert_cmpstr(kept, ==, key);
    gtk_window_destroy(GTK_WINDOW(prefs));
    app_test_destroy_window(win);

    /* a later session: no key typed, the keyring's goes with the job */
    win = app_test_window("ckpt-flat", FALSE);
    g_assert_null(win->server_key);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_autoptr(GFile) file = app_test_image("odd_137x91.png");
    g_assert_cmpuint(hyocr_window_add_files(win, &file, 1), ==, 1);
    HyocrJob *job = app_test_job_at(win, 0);
    app_test_wait_job(job, JOB_TIMEOUT_MS);
    g_assert_cmpint(hyocr_job_get_state(job), ==, HYOCR_JOB_DONE);
    g_autofree char *sent = g_strdup_printf("request Bearer %s", key);
    g_assert_cmpint(log_count(srv->log, sent), ==, 1);
    g_assert_cmpint(log_count(srv->log, "request "), ==, 1);

    /* in no setting: each key read back, and dconf's database on disk */
    GSettings *s = app_test_settings();
    g_autoptr(GSettingsSchema) schema = NULL;
    g_object_get(s, "settings-schema", &schema, NULL);
    g_auto(GStrv) keys = g_settings_schema_list_keys(schema);
    for (char **k = keys; *k; k++) {
        g_autoptr(GVariant) v = g_settings_get_value(s, *k);
        g_autofree char *text = g_variant_print(v, FALSE);
        if (strstr(text, key)) g_error("the API key is in the setting %s", *k);
    }
    if (!g_strcmp0(g_getenv("GSETTINGS_BACKEND"), "dconf")) {
        g_settings_sync();
        g_autofree char *db = g_build_filename(g_get_user_config_dir(), "dconf", "user", NULL);
        g_assert_true(file_contains(db, url));   /* the address is there: this is where settings go */
        g_assert_false(file_contains(db, key));
    }

    /* the server removed (its address emptied): its key leaves the keyring */
    prefs = hyocr_preferences_new(win);
    w.prefs = prefs;
    gtk_window_present(GTK_WINDOW(prefs));
    url_row = hyocr_preferences_get_row(prefs, "server_url_row");
    gtk_editable_set_text(GTK_EDITABLE(url_row), "");
    g_signal_emit_by_name(url_row, "apply");
    g_assert_true(app_test_wait(keys_kept, &w, APP_TEST_WAIT_MS));
    g_autofree char *after = hyocr_keyring_lookup(url);
    g_assert_null(after);
    gtk_window_destroy(GTK_WINDOW(prefs));
    app_test_destroy_window(win);
    fault_stop(srv);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    for (const char *n; (n = g_dir_read_name(d));) {
        g_autofree char *path = g_build_filename(dir, n, NULL);
        g_unlink(path);
    }
    g_rmdir(dir);
}

int main(int argc, char **argv)
{
    app_test_init(&argc, &argv);
    g_test_add_func("/app/remote/presets-match-local", test_presets_match_local);
    g_test_add_func("/app/remote/faults", test_faults);
    g_test_add_func("/app/remote/preferences", test_preferences);
    g_test_add_func("/app/remote/certificate", test_certificate);
    g_test_add_func("/app/remote/keyring", test_keyring);
    return g_test_run();
}
