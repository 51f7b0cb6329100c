/* hyocr-gtk first run: the model page's download offer walked as a person would,
 * against a local nginx laid out like the Hugging Face Hub (tests/nginx-util.c): size
 * and free space shown, Download refused until the licence is accepted, progress in the
 * panel and the window (at most ten updates a second), Cancel and resume, and the model
 * loaded at the end with its folder remembered. A second server serves a damaged file
 * and lacks the 1.0 folder, for the failures; a closed port stands for no network.
 * Every wait is bounded; without nginx the server tests skip loudly. */
#define _GNU_SOURCE   /* unshare */
#include "app-test.h"
#include "download.h"
#include "hyocr-download-panel.h"
#include "nginx-util.h"
#include "testutil.h"
#include "hyocr-build-config.h"
#include <arpa/inet.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAIN_REPO "tencent/HunyuanOCR"
#define WAIT_MS   60000

static hyocr_test_hub good, bad;
static char *data_home;   /* this program's XDG_DATA_HOME */
static gboolean own_mounts;   /* a private mount namespace: the disk-full test may mount a tmpfs */

static const hyocr_test_hub_repo good_repos[] = { { MAIN_REPO, true, true } };
/* No v1.0/ folder (a 404 for version 1.0) and a model.safetensors that fails its checksum. */
static const hyocr_test_hub_repo bad_repos[] = { { MAIN_REPO, true, false, .corrupt = "model.safetensors" } };

/* ---- helpers ---- */

static HyocrDownloadPanel *panel_of(HyocrWindow *win)
{
    GtkWidget *p = hyocr_window_get_download_panel(win);
    g_assert_nonnull(p);
    return HYOCR_DOWNLOAD_PANEL(p);
}

typedef struct {
    HyocrDownloadPanel     *panel;
    HyocrDownloadPanelState state;
} StateWait;

static gboolean panel_in_state(gpointer data)
{
    StateWait *w = data;
    return hyocr_download_panel_get_state(w->panel) == w->state;
}

static void wait_panel(HyocrDownloadPanel *panel, HyocrDownloadPanelState state)
{
    StateWait w = { panel, state };
    if (!app_test_wait(panel_in_state, &w, WAIT_MS))
        g_test_fail_printf("download panel state %d, waited for %d (error: %s — %s)",
                           hyocr_download_panel_get_state(panel), state, hyocr_download_panel_get_error_title(panel),
                           hyocr_download_panel_get_error_details(panel));
}

/* A window as on a first start: the model folder setting as given ("" = the default). */
static HyocrWindow *window_without_model(const char *folder)
{
    g_settings_set_string(app_test_settings(), "model-folder", folder);
    app_test_drain();   /* the change is told from an idle: not to the window made now */
    HyocrWindow *win = hyocr_window_new(app_test_app());
    if (g_getenv("HYOCR_DOWNLOAD_SHOTS")) gtk_window_set_default_size(GTK_WINDOW(win), 1000, 1000);
    gtk_window_present(GTK_WINDOW(win));
    app_test_wait_worker(win, HYOCR_WORKER_FAILED);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "model");
    return win;
}

/* Destroys the window; the panel (and any thread's hold on it) must let go too. */
static gboolean gone(gpointer data)
{
    return *(gpointer *)data == NULL;
}

static void destroy_window(HyocrWindow *win)
{
    gpointer panel = hyocr_window_get_download_panel(win);
    g_object_add_weak_pointer(panel, &panel);
    app_test_destroy_window(win);
    app_test_wait(gone, &panel, WAIT_MS);
    g_assert_null(panel);
    if (panel) g_object_remove_weak_pointer(panel, &panel);
}

static void click(GtkWidget *button)
{
    g_assert_true(gtk_widget_get_visible(button));
    g_assert_true(gtk_widget_is_sensitive(button));
    g_signal_emit_by_name(button, "clicked");
}

static int64_t total_size(const char *dir)
{
    int64_t n = 0;
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        GStatBuf st;
        if (g_stat(p, &st) == 0) n += st.st_size;
    }
    return n;
}

static void assert_clean_words(const char *text)
{
    /* The engine's messages speak of command-line options; the app's never do. */
    g_assert_null(strstr(text, "--"));
    g_assert_null(strstr(text, "hyocr download"));
}

static int closed_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof a;
    g_assert_cmpint(bind(s, (struct sockaddr *)&a, sizeof a), ==, 0);
    g_assert_cmpint(getsockname(s, (struct sockaddr *)&a, &n), ==, 0);
    close(s);
    return ntohs(a.sin_port);
}

static void apply_endpoint(HyocrDownloadPanel *panel, const char *text)
{
    AdwEntryRow *row = hyocr_download_panel_get_endpoint_row(panel);
    gtk_editable_set_text(GTK_EDITABLE(row), text);
    g_signal_emit_by_name(row, "apply");
}

static void write_text(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    hyocr_test_write_file(p, text, strlen(text));
}

/* With HYOCR_DOWNLOAD_SHOTS set, pictures of the page for a person to look at (in
 * Chinese with HYOCR_DOWNLOAD_SHOTS_ZH=1 too; the English checks then fail, as they should). */
static void maybe_screenshot(HyocrWindow *win, const char *name)
{
    const char *dir = g_getenv("HYOCR_DOWNLOAD_SHOTS");
    if (!dir) return;
    app_test_wait_drawn(GTK_WIDGET(win));
    g_autoptr(GdkTexture) tex = app_test_render(GTK_WIDGET(win));
    g_mkdir_with_parents(dir, 0755);
    g_autofree char *path = g_build_filename(dir, name, NULL);
    gdk_texture_save_to_png(tex, path);
}

/* ---- failure texts (no server needed) ---- */

static void test_failure_text(void)
{
    hyocr_download_failure f = { HYOCR_DOWNLOAD_FAILURE_NETWORK };
    g_autofree char *t_net = hyocr_download_failure_title(&f);
    g_autofree char *a_net = hyocr_download_failure_advice(&f, "https://mirror.example.org/hf", "1.5", "/m/HunyuanOCR-1.5");
    g_assert_cmpstr(t_net, ==, "Cannot Reach the Download Server");
    g_assert_nonnull(strstr(a_net, "mirror.example.org"));
    g_assert_nonnull(strstr(a_net, "connection"));
    g_assert_nonnull(strstr(a_net, "mirror"));

    f = (hyocr_download_failure){ HYOCR_DOWNLOAD_FAILURE_NO_SPACE, .need_bytes = 2000000000, .free_bytes = 1000000000 };
    g_autofree char *a_space = hyocr_download_failure_advice(&f, NULL, "1.5", "/data/models/HunyuanOCR-1.5");
    g_autofree char *need = g_format_size(2000000000), *avail = g_format_size(1000000000);
    g_assert_nonnull(strstr(a_space, need));
    g_assert_nonnull(strstr(a_space, avail));
    g_assert_nonnull(strstr(a_space, "/data/models"));
    g_assert_nonnull(strstr(a_space, "another folder"));

    f = (hyocr_download_failure){ HYOCR_DOWNLOAD_FAILURE_CHECKSUM, .file = "model-00002-of-00002.safetensors" };
    g_autofree char *a_sum = hyocr_download_failure_advice(&f, NULL, "1.0", "/m");
    g_assert_nonnull(strstr(a_sum, "model-00002-of-00002.safetensors"));
    g_assert_nonnull(strstr(a_sum, "try again"));

    f = (hyocr_download_failure){ HYOCR_DOWNLOAD_FAILURE_NOT_FOUND, .http_status = 404 };
    g_autofree char *a_404 = hyocr_download_failure_advice(&f, "https://huggingface.co", "1.0", "/m");
    g_assert_nonnull(strstr(a_404, "HunyuanOCR 1.0"));
    g_assert_nonnull(strstr(a_404, "other version"));

    f = (hyocr_download_failure){ HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED, .http_status = 429, .retry_after = 16.2 };
    g_autofree char *a_429 = hyocr_download_failure_advice(&f, "https://huggingface.co", "1.5", "/m");
    g_assert_nonnull(strstr(a_429, "wait 17 seconds"));
    f.retry_after = 0;
    g_autofree char *a_429b = hyocr_download_failure_advice(&f, "https://huggingface.co", "1.5", "/m");
    g_assert_nonnull(strstr(a_429b, "few minutes"));

    /* Every kind has its own title and advice, in the app's words. */
    g_autoptr(GHashTable) titles = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int k = HYOCR_DOWNLOAD_FAILURE_NONE; k <= HYOCR_DOWNLOAD_FAILURE_INVALID; k++) {
        f = (hyocr_download_failure){ (hyocr_download_failure_kind)k, .http_status = 403, .file = "x.json" };
        char *title = hyocr_download_failure_title(&f);
        g_autofree char *advice = hyocr_download_failure_advice(&f, "https://huggingface.co", "1.5", "/m/H");
        g_assert_cmpuint(strlen(title), >, 5);
        g_assert_cmpuint(strlen(advice), >, 20);
        assert_clean_words(advice);
        g_assert_false(g_hash_table_contains(titles, title));
        g_hash_table_add(titles, title);
    }
}

/* ---- the default model folder ---- */

static char *models_path(const char *name)
{
    return g_build_filename(data_home, "hyocr", "models", name, NULL);
}

static void fake_model(const char *name, gboolean complete)
{
    g_autofree char *dir = models_path(name);
    write_text(dir, "config.json", "{}");
    if (!complete) return;
    write_text(dir, "tokenizer.json", "{}");
    write_text(dir, "model.safetensors", "");
}

static void test_default_folder(void)
{
    g_autofree char *root = g_build_filename(data_home, "hyocr", NULL);
    g_autofree char *v15 = models_path("HunyuanOCR-1.5"), *v10 = models_path("HunyuanOCR-1.0");
    g_autofree char *legacy = models_path("HunyuanOCR");
    g_autofree char *dl15 = hyocr_models_dest(NULL, HYOCR_MODEL_VERSION_1_5);
    g_autofree char *none = hyocr_models_default_folder();
    g_assert_cmpstr(none, ==, dl15);   /* where `hyocr download` and the panel put it */
    g_assert_cmpstr(none, ==, v15);

    fake_model("HunyuanOCR-1.0", FALSE);
    g_autofree char *partial = hyocr_models_default_folder();
    g_assert_cmpstr(partial, ==, v10);   /* an existing folder is better named than a missing one */
    fake_model("HunyuanOCR", TRUE);
    g_autofree char *old = hyocr_models_default_folder();
    g_assert_cmpstr(old, ==, legacy);    /* a complete folder wins */
    fake_model("HunyuanOCR-1.0", TRUE);
    g_autofree char *one = hyocr_models_default_folder();
    g_assert_cmpstr(one, ==, v10);
    fake_model("HunyuanOCR-1.5", TRUE);
    g_autofree char *best = hyocr_models_default_folder();
    g_assert_cmpstr(best, ==, v15);
    hyocr_test_rmdir(root);
}

/* ---- first run: download, cancel, resume, model loaded ---- */

typedef struct {
    HyocrWindow *win;
    GArray      *times;        /* gint64 µs of each progress update: the clock in the handler */
    GArray      *loop_times;   /* the main context's clock when that update was dispatched: no later than the
                                * panel's own reading of the clock, as the handler's is no earlier */
    guint        resumed_at;   /* index of the first update of the second download */
    guint        want;         /* enough_progress: this many updates */
    double       last_fraction;
    gboolean     went_back;
    gboolean     bar_seen;
    gboolean     status_seen;
} ProgressLog;

static void on_progress(HyocrDownloadPanel *panel, ProgressLog *log)
{
    gint64 now = g_get_monotonic_time(), loop = g_source_get_time(g_main_current_source());
    g_array_append_val(log->times, now);
    g_array_append_val(log->loop_times, loop);
    double f = hyocr_download_panel_get_fraction(panel);
    if (f + 1e-9 < log->last_fraction) log->went_back = TRUE;
    log->last_fraction = f;
    GtkProgressBar *bar = hyocr_window_get_download_bar(log->win);
    if (gtk_widget_get_visible(GTK_WIDGET(bar)) && gtk_progress_bar_get_fraction(bar) == f) log->bar_seen = TRUE;
    if (strstr(gtk_progress_bar_get_text(bar), "Downloading the model: ") &&
        strstr(hyocr_download_panel_get_progress_text(panel), " of "))
        log->status_seen = TRUE;
}

static gboolean enough_progress(gpointer data)
{
    ProgressLog *log = data;
    return log->times->len >= log->want;
}

static gboolean free_space_shown(gpointer panel)
{
    return *hyocr_download_panel_get_free_text(panel) != '\0';
}

static gsize log_size(const hyocr_test_hub *hub)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    return g_file_get_contents(hub->log, &text, &len, NULL) ? len : 0;
}

static void check_offer(HyocrWindow *win, HyocrDownloadPanel *panel)
{
    HyocrModelStatus *status = HYOCR_MODEL_STATUS(hyocr_window_get_model_status(win));
    g_assert_cmpint(hyocr_model_status_get_problem(status), ==, HYOCR_MODEL_PROBLEM_MISSING);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(hyocr_model_status_get_download_area(status))));
    g_assert_true(gtk_widget_get_mapped(GTK_WIDGET(panel)));
    g_autofree char *dest = hyocr_models_dest(NULL, HYOCR_MODEL_VERSION_1_5);
    g_assert_cmpstr(hyocr_download_panel_get_dest(panel), ==, dest);
    g_assert_cmpstr(hyocr_download_panel_get_endpoint(panel), ==, good.url);   /* from the settings */
    g_assert_true(app_test_wait(free_space_shown, panel, WAIT_MS));
    g_assert_cmpint(hyocr_download_panel_get_state(panel), ==, HYOCR_DOWNLOAD_PANEL_IDLE);
    g_assert_cmpstr(hyocr_download_panel_get_size_text(panel), ==, "About 2 GB");
    g_assert_nonnull(strstr(hyocr_download_panel_get_licence_text(panel), "Tencent Hunyuan Community License"));
    g_assert_nonnull(strstr(hyocr_download_panel_get_licence_text(panel), "Read the licence"));
    GtkWidget *download = hyocr_download_panel_get_download_button(panel);
    g_assert_false(gtk_widget_is_sensitive(download));
    hyocr_download_panel_start(panel);   /* refused, as the button is */
    g_assert_cmpint(hyocr_download_panel_get_state(panel), ==, HYOCR_DOWNLOAD_PANEL_IDLE);
    /* The app uses the network only when asked: nothing reached the server yet. */
    g_assert_cmpuint(log_size(&good), ==, 0);
    maybe_screenshot(win, "offer.png");

    gtk_check_button_set_active(hyocr_download_panel_get_accept_check(panel), TRUE);
    g_assert_true(gtk_widget_is_sensitive(download));
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_READY);
    g_assert_cmpuint(log_size(&good), >, 0);
    g_autofree char *size = g_format_size((guint64)total_size(good.nested));
    g_assert_cmpstr(hyocr_download_panel_get_size_text(panel), ==, size);
    const char *free_text = hyocr_download_panel_get_free_text(panel);
    g_assert_cmpstr(free_text, !=, "Unknown");
    g_assert_null(strstr(free_text, "not enough"));
}

static void cancel_midway(HyocrWindow *win, HyocrDownloadPanel *panel, ProgressLog *log)
{
    click(hyocr_download_panel_get_download_button(panel));
    g_assert_cmpint(hyocr_download_panel_get_state(panel), ==, HYOCR_DOWNLOAD_PANEL_DOWNLOADING);
    g_assert_true(gtk_widget_get_visible(GTK_WIDGET(hyocr_window_get_download_bar(win))));
    g_assert_false(gtk_widget_is_sensitive(GTK_WIDGET(hyocr_download_panel_get_version_row(panel))));
    log->want = 2;
    g_assert_true(app_test_wait(enough_progress, log, WAIT_MS));
    click(hyocr_download_panel_get_cancel_button(panel));
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_CANCELLED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "Download Cancelled");
    g_assert_false(gtk_widget_get_visible(GTK_WIDGET(hyocr_window_get_download_bar(win))));
    g_autofree char *partial = g_strconcat(hyocr_download_panel_get_dest(panel), ".partial", NULL);
    g_assert_true(g_file_test(partial, G_FILE_TEST_IS_DIR));   /* kept for the resume */
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "model");
}

static void check_progress_log(ProgressLog *log)
{
    g_assert_cmpuint(log->times->len, >=, 4);
    g_assert_false(log->went_back);
    g_assert_true(log->bar_seen);
    g_assert_true(log->status_seen);
    /* Coalesced on the UI thread: never more than ten a second (the panel keeps
     * 100 ms between updates). Each gap is measured from the main context's clock
     * at the earlier update to the handler's clock at the later one: never shorter
     * than the panel's own gap, however a busy machine delays either. */
    for (guint i = 1; i < log->times->len; i++) {
        if (i == log->resumed_at) continue;
        gint64 gap = g_array_index(log->times, gint64, i) - g_array_index(log->loop_times, gint64, i - 1);
        if (gap < 100000) g_test_fail_printf("progress updates %u and %u came %" G_GINT64_FORMAT " µs apart", i - 1, i, gap);
    }
}

static void test_first_run(void)
{
    if (!hyocr_test_hub_need(&good)) return;
    app_test_reset_settings();
    g_settings_set_string(app_test_settings(), "download-endpoint", good.url);
    HyocrWindow *win = window_without_model("");
    HyocrDownloadPanel *panel = panel_of(win);
    check_offer(win, panel);
    maybe_screenshot(win, "first-run.png");

    ProgressLog log = { .win = win, .times = g_array_new(FALSE, FALSE, sizeof(gint64)),
                        .loop_times = g_array_new(FALSE, FALSE, sizeof(gint64)) };
    gulong id = g_signal_connect(panel, "progress", G_CALLBACK(on_progress), &log);
    cancel_midway(win, panel, &log);
    log.last_fraction = 0;
    log.resumed_at = log.times->len;
    click(hyocr_download_panel_get_download_button(panel));
    if (g_getenv("HYOCR_DOWNLOAD_SHOTS")) {
        log.want = log.times->len + 2;   /* some progress to show */
        app_test_wait(enough_progress, &log, WAIT_MS);
        maybe_screenshot(win, "downloading.png");
    }
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_signal_handler_disconnect(panel, id);

    g_autofree char *dest = hyocr_models_dest(NULL, HYOCR_MODEL_VERSION_1_5);
    g_autofree char *folder = g_settings_get_string(app_test_settings(), "model-folder");
    g_assert_cmpstr(folder, ==, dest);
    g_assert_cmpstr(hyocr_worker_get_model_dir(hyocr_window_get_worker(win)), ==, dest);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "empty");
    g_assert_cmpint(hyocr_download_panel_get_state(panel), ==, HYOCR_DOWNLOAD_PANEL_DONE);
    g_autoptr(hyocr_model_entry) e = hyocr_model_check(dest, TRUE, NULL);
    g_assert_nonnull(e);
    g_assert_cmpint(e->state, ==, HYOCR_MODEL_STATE_VERIFIED);
    g_assert_false(gtk_widget_get_visible(GTK_WIDGET(hyocr_window_get_download_bar(win))));
    check_progress_log(&log);
    g_array_unref(log.times);
    g_array_unref(log.loop_times);
    destroy_window(win);

    /* Next start, with no folder set: the default lookup finds what was downloaded. */
    g_settings_reset(app_test_settings(), "model-folder");
    win = hyocr_window_new(app_test_app());
    gtk_window_present(GTK_WINDOW(win));
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_assert_cmpstr(hyocr_worker_get_model_dir(hyocr_window_get_worker(win)), ==, dest);
    destroy_window(win);
    g_autofree char *root = g_build_filename(data_home, "hyocr", NULL);
    hyocr_test_rmdir(root);
}

/* ---- failures leave the page usable ---- */

static void check_not_found(HyocrDownloadPanel *panel)
{
    adw_combo_row_set_selected(hyocr_download_panel_get_version_row(panel), 1);
    g_assert_true(g_str_has_suffix(hyocr_download_panel_get_dest(panel), "HunyuanOCR-1.0"));
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_FAILED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "The Model Was Not Found on the Server");
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_body(panel), "HunyuanOCR 1.0"));
    assert_clean_words(hyocr_download_panel_get_error_body(panel));
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_details(panel), "v1.0"));   /* the raw message */
    adw_combo_row_set_selected(hyocr_download_panel_get_version_row(panel), 0);
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_READY);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "");
}

static void check_damaged(HyocrWindow *win, HyocrDownloadPanel *panel, const char *none)
{
    click(hyocr_download_panel_get_download_button(panel));
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_FAILED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "A File Arrived Damaged");
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_body(panel), "“model.safetensors”"));
    assert_clean_words(hyocr_download_panel_get_error_body(panel));
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_details(panel), "checksum mismatch"));
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "model");
    g_assert_true(gtk_widget_is_sensitive(hyocr_download_panel_get_download_button(panel)));
    g_assert_false(gtk_widget_get_visible(GTK_WIDGET(hyocr_window_get_download_bar(win))));
    g_autofree char *folder = g_settings_get_string(app_test_settings(), "model-folder");
    g_assert_cmpstr(folder, ==, none);
    g_assert_false(g_file_test(hyocr_download_panel_get_dest(panel), G_FILE_TEST_EXISTS));
}

static void check_no_network(HyocrDownloadPanel *panel)
{
    g_autofree char *dead = g_strdup_printf("http://127.0.0.1:%d", closed_port());
    apply_endpoint(panel, dead);
    g_autofree char *saved = g_settings_get_string(app_test_settings(), "download-endpoint");
    g_assert_cmpstr(saved, ==, dead);
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_FAILED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "Cannot Reach the Download Server");
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_body(panel), "127.0.0.1"));
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_body(panel), "mirror"));
    assert_clean_words(hyocr_download_panel_get_error_body(panel));
    apply_endpoint(panel, "ftp://example.org");
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "This Server Address Does Not Work");
    g_autofree char *kept = g_settings_get_string(app_test_settings(), "download-endpoint");
    g_assert_cmpstr(kept, ==, dead);
    /* Emptied: back to $HF_ENDPOINT (a closed port here, see main), and the setting forgets. */
    apply_endpoint(panel, "");
    g_assert_cmpstr(hyocr_download_panel_get_endpoint(panel), ==, g_getenv("HF_ENDPOINT"));
    g_autofree char *reset = g_settings_get_string(app_test_settings(), "download-endpoint");
    g_assert_cmpstr(reset, ==, "");
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_FAILED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "Cannot Reach the Download Server");
}

static void check_folder(HyocrDownloadPanel *panel, const char *dir, const char *title)
{
    hyocr_download_panel_use_folder(panel, dir);
    g_assert_true(hyocr_download_panel_is_busy(panel));
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_FAILED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, title);
}

static void check_use_folder(HyocrWindow *win, HyocrDownloadPanel *panel, const char *tmp)
{
    g_autofree char *empty = g_build_filename(tmp, "empty", NULL);
    g_mkdir_with_parents(empty, 0755);
    check_folder(panel, empty, "This Folder Holds No Model");
    g_assert_nonnull(strstr(hyocr_download_panel_get_error_body(panel), "tokenizer.json"));
    g_autofree char *broken = g_build_filename(tmp, "broken", NULL);
    write_text(broken, "config.json", "{}");
    write_text(broken, "tokenizer.json", "{}");
    write_text(broken, "model.safetensors", "not weights");
    check_folder(panel, broken, "The Model Files Could Not Be Read");
    g_assert_cmpuint(strlen(hyocr_download_panel_get_error_details(panel)), >, 0);

    g_autofree char *good_dir = app_test_data("ckpt-flat", NULL);
    hyocr_download_panel_use_folder(panel, good_dir);
    app_test_wait_worker(win, HYOCR_WORKER_READY);
    g_autofree char *folder = g_settings_get_string(app_test_settings(), "model-folder");
    g_assert_cmpstr(folder, ==, good_dir);
    g_assert_cmpstr(hyocr_window_get_page(win), ==, "empty");
}

static void test_failures(void)
{
    if (!hyocr_test_hub_need(&bad)) return;
    app_test_reset_settings();
    g_settings_set_string(app_test_settings(), "download-endpoint", bad.url);
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *none = g_build_filename(tmp, "no-model-here", NULL);
    HyocrWindow *win = window_without_model(none);
    HyocrDownloadPanel *panel = panel_of(win);
    hyocr_download_panel_set_destination(panel, tmp);
    g_autofree char *dest = g_build_filename(tmp, "HunyuanOCR-1.5", NULL);
    g_assert_cmpstr(hyocr_download_panel_get_dest(panel), ==, dest);
    gtk_check_button_set_active(hyocr_download_panel_get_accept_check(panel), TRUE);
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_READY);
    check_not_found(panel);
    check_damaged(win, panel, none);
    maybe_screenshot(win, "damaged.png");
    check_no_network(panel);
    check_use_folder(win, panel, tmp);
    destroy_window(win);
    hyocr_test_rmdir(tmp);
}

/* ---- a full disk ---- */

static void test_disk_full(void)
{
    if (!hyocr_test_hub_need(&good)) return;
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *mnt = g_build_filename(tmp, "small", NULL);
    g_mkdir_with_parents(mnt, 0755);
    if (!own_mounts || mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) {
        g_autofree char *why = g_strdup_printf("cannot mount a 1 MiB tmpfs on %s (%s): the disk-full test needs root "
                                               "or CAP_SYS_ADMIN — NOT RUN", mnt,
                                               own_mounts ? g_strerror(errno) : "no private mount namespace");
        g_test_skip(why);
        hyocr_test_rmdir(tmp);
        return;
    }
    app_test_reset_settings();
    g_settings_set_string(app_test_settings(), "download-endpoint", good.url);
    g_autofree char *none = g_build_filename(tmp, "none", NULL);
    HyocrWindow *win = window_without_model(none);
    HyocrDownloadPanel *panel = panel_of(win);
    hyocr_download_panel_set_destination(panel, mnt);
    gtk_check_button_set_active(hyocr_download_panel_get_accept_check(panel), TRUE);
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_READY);
    g_assert_nonnull(strstr(hyocr_download_panel_get_free_text(panel), "not enough"));
    click(hyocr_download_panel_get_download_button(panel));
    wait_panel(panel, HYOCR_DOWNLOAD_PANEL_FAILED);
    g_assert_cmpstr(hyocr_download_panel_get_error_title(panel), ==, "Not Enough Disk Space");
    const char *body = hyocr_download_panel_get_error_body(panel);
    g_autofree char *need = g_format_size((guint64)total_size(good.nested));
    g_assert_nonnull(strstr(body, need));   /* nothing was on the disk yet: all of it is needed */
    g_assert_nonnull(strstr(body, mnt));
    g_assert_nonnull(strstr(body, "another folder"));
    assert_clean_words(body);
    g_assert_true(gtk_widget_is_sensitive(GTK_WIDGET(hyocr_download_panel_get_version_row(panel))));
    destroy_window(win);
    g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
    hyocr_test_rmdir(tmp);
}

int main(int argc, char **argv)
{
    /* Made while still single-threaded: a tmpfs mounted here goes away with the process. */
    own_mounts = unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
    /* Before GLib reads it: the default model folder is looked up under it. */
    g_autofree char *home = hyocr_test_tmpdir();
    data_home = g_build_filename(home, "data", NULL);
    g_setenv("XDG_DATA_HOME", data_home, TRUE);
    g_setenv("HYOCR_APP_TEST_DATA_HOME", data_home, TRUE);   /* app_test_init keeps it */
    g_unsetenv("HF_TOKEN");
    /* Never the real Hub from a test, whoever runs it. */
    if (!g_getenv("HF_ENDPOINT") || !g_str_has_prefix(g_getenv("HF_ENDPOINT"), "http://127.0.0.1:")) {
        g_autofree char *dead = g_strdup_printf("http://127.0.0.1:%d", closed_port());
        g_setenv("HF_ENDPOINT", dead, TRUE);
    }
    if (g_getenv("HYOCR_DOWNLOAD_SHOTS_ZH") && g_getenv("HYOCR_LOCALEDIR") && setlocale(LC_ALL, "zh_CN.UTF-8")) {
        g_setenv("LANGUAGE", "zh_CN", TRUE);
        bindtextdomain(GETTEXT_PACKAGE, g_getenv("HYOCR_LOCALEDIR"));
        bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
        textdomain(GETTEXT_PACKAGE);
    }
    app_test_init(&argc, &argv);
    good.cdn_rate = 640 * 1024;   /* the 2 MB weights then take seconds: room to watch and cancel */
    hyocr_test_hub_start(&good, good_repos, G_N_ELEMENTS(good_repos));
    hyocr_test_hub_start(&bad, bad_repos, G_N_ELEMENTS(bad_repos));
    g_test_add_func("/app/download/failure-text", test_failure_text);
    g_test_add_func("/app/download/default-folder", test_default_folder);
    g_test_add_func("/app/download/first-run", test_first_run);
    g_test_add_func("/app/download/failures", test_failures);
    g_test_add_func("/app/download/disk-full", test_disk_full);
    int rc = g_test_run();
    hyocr_test_hub_clear(&good);
    hyocr_test_hub_clear(&bad);
    hyocr_test_rmdir(home);
    g_free(data_home);
    return rc;
}
