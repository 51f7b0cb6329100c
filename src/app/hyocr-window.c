/* hyocr-gtk — main window. */
#include "hyocr-window-private.h"
#include "hyocr-build-config.h"
#include "hyocr-certificate-dialog.h"
#include "hyocr-job-row.h"
#include "hyocr-model-status.h"
#include "error.h"
#include "models.h"
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GAUGE_INTERVAL_MS   250   /* the gauge is promised at least twice a second */
#define RELOAD_DELAY_MS     400   /* settle spin buttons before reloading the engine */
#define NOTIFY_AFTER_SECS   5.0   /* shorter jobs end before anyone looks away */

G_DEFINE_FINAL_TYPE(HyocrWindow, hyocr_window, ADW_TYPE_APPLICATION_WINDOW)

/* ---- toasts ---- */

void hyocr_window_toast(HyocrWindow *self, const char *message)
{
    g_autofree char *markup = g_markup_escape_text(message, -1);
    AdwToast *toast = adw_toast_new(markup);
    adw_toast_set_timeout(toast, 5);
    adw_toast_overlay_add_toast(self->toast_overlay, toast);
    self->n_toasts++;
    g_free(self->last_toast);
    self->last_toast = g_strdup(message);
}

/* ---- engine ---- */

static char *model_folder(HyocrWindow *self)
{
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    const char *override = HYOCR_IS_APPLICATION(app) ? hyocr_application_get_model_override(HYOCR_APPLICATION(app))
                                                     : NULL;
    if (override) return g_strdup(override);
    g_autofree char *folder = g_settings_get_string(self->settings, "model-folder");
    return *folder ? g_steal_pointer(&folder) : hyocr_models_default_folder();
}

static hyocr_device device_setting(HyocrWindow *self)
{
    g_autofree char *dev = g_settings_get_string(self->settings, "device");
    return g_str_equal(dev, "gpu") ? HYOCR_DEVICE_CUDA : g_str_equal(dev, "cpu") ? HYOCR_DEVICE_CPU
                                                                                 : HYOCR_DEVICE_AUTO;
}

void hyocr_window_reload_engine(HyocrWindow *self)
{
    g_clear_handle_id(&self->reload_timeout, g_source_remove);
    HyocrEngineSettings es = {
        .model_dir = model_folder(self),
        .device = device_setting(self),
        .memory_limit = (int64_t)g_settings_get_int(self->settings, "gpu-memory-limit") * 1024 * 1024,
    };
    if (g_settings_get_enum(self->settings, "runner") == 1) {
        /* "A server": the key the user typed this session, else the keyring's (the worker looks) */
        es.server_url = g_settings_get_string(self->settings, "server-url");
        es.server_model = g_settings_get_string(self->settings, "server-model");
        es.server_key = g_strdup(self->server_key);
        es.server_fingerprint = hyocr_certificate_trusted_for(self->settings, es.server_url);
    }
    hyocr_worker_load(self->worker, &es);
    hyocr_engine_settings_clear(&es);
}

static gboolean reload_timeout_cb(gpointer data);

void hyocr_window_set_server_key(HyocrWindow *self, const char *key)
{
    if (self->server_key) memset(self->server_key, 0, strlen(self->server_key));
    g_free(self->server_key);
    self->server_key = key && *key ? g_strdup(key) : NULL;
    if (g_settings_get_enum(self->settings, "runner") == 1) {
        g_clear_handle_id(&self->reload_timeout, g_source_remove);
        self->reload_timeout = g_timeout_add(RELOAD_DELAY_MS, reload_timeout_cb, self);
    }
}

static gboolean reload_timeout_cb(gpointer data)
{
    HyocrWindow *self = data;
    self->reload_timeout = 0;
    hyocr_window_reload_engine(self);
    return G_SOURCE_REMOVE;
}

static void on_settings_changed(GSettings *settings, const char *key, HyocrWindow *self)
{
    static const char *const reloads[] = { "model-folder", "device", "gpu-memory-limit", "runner", "server-url",
                                           "server-model", "server-certificate", NULL };
    if (!g_strv_contains(reloads, key)) return;
    /* a server's address or model matters only while jobs run there */
    if (g_str_has_prefix(key, "server-") && g_settings_get_enum(settings, "runner") != 1) return;
    g_clear_handle_id(&self->reload_timeout, g_source_remove);
    self->reload_timeout = g_timeout_add(RELOAD_DELAY_MS, reload_timeout_cb, self);
}

/* ---- pages and header ---- */

static void update_page(HyocrWindow *self)
{
    HyocrWorkerState st = hyocr_worker_get_state(self->worker);
    /* A model that is missing or broken takes the window (the model page says how to
     * get one); settings the engine cannot start with (the device, the memory limit)
     * are a banner above the queue, which stays. */
    /* A server that cannot be used is a settings problem too: its message says what is wrong. */
    gboolean settings_problem = st == HYOCR_WORKER_FAILED &&
        (hyocr_worker_get_server(self->worker) ||
         hyocr_model_status_get_problem(HYOCR_MODEL_STATUS(self->model_status)) == HYOCR_MODEL_PROBLEM_DEVICE);
    gboolean no_jobs = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)) == 0;
    /* A missing model says so before the history shown at start; not before the history asked for. */
    gboolean model = st == HYOCR_WORKER_FAILED && !settings_problem;
    const char *page = model && !self->history_asked ? "model"
                       : self->showing_history ? "history"
                       : model ? "model"
                       : no_jobs ? "empty"
                                 : "jobs";
    if (self->history_action)
        g_simple_action_set_state(self->history_action, g_variant_new_boolean(self->showing_history));
    gtk_stack_set_visible_child_name(self->main_stack, page);
    const GError *error = hyocr_worker_get_error(self->worker);
    gtk_label_set_text(self->problem_label, settings_problem && error ? error->message : "");
    gtk_revealer_set_reveal_child(self->problem_revealer, settings_problem);
    /* a server's certificate the system does not trust: the user may */
    gtk_widget_set_visible(self->trust_button, settings_problem && hyocr_certificate_refused(error));
    gtk_widget_set_visible(self->loading_box, st == HYOCR_WORKER_LOADING);
    gtk_widget_set_visible(self->loading_spinner, st == HYOCR_WORKER_LOADING);
    gtk_spinner_set_spinning(GTK_SPINNER(self->loading_spinner), st == HYOCR_WORKER_LOADING);
}

static void update_subtitle(HyocrWindow *self)
{
    HyocrWorkerState st = hyocr_worker_get_state(self->worker);
    g_autofree char *subtitle = NULL;
    const char *server = hyocr_worker_get_server(self->worker);
    if (st == HYOCR_WORKER_LOADING && server) {
        subtitle = g_strdup_printf(_("Connecting to %s…"), server);
    } else if (st == HYOCR_WORKER_LOADING) {
        subtitle = g_strdup(_("Loading the model…"));
    } else if (st == HYOCR_WORKER_READY && server) {
        /* Translators: "tencent/HunyuanOCR on http://gpu-box:8000" */
        subtitle = g_strdup_printf(_("%s on %s"), hyocr_worker_get_model_dir(self->worker), server);
    } else if (st == HYOCR_WORKER_FAILED && server) {
        subtitle = g_strdup_printf(_("%s cannot be used"), server);
    } else if (st == HYOCR_WORKER_READY) {
        g_autofree char *name = g_path_get_basename(hyocr_worker_get_model_dir(self->worker));
        /* Translators: "HunyuanOCR on the GPU" */
        subtitle = g_strdup_printf(hyocr_worker_is_cpu(self->worker) ? _("%s on the CPU") : _("%s on the GPU"), name);
    } else if (st == HYOCR_WORKER_FAILED) {
        subtitle = g_strdup(_("No model loaded"));
    }
    adw_window_title_set_subtitle(self->window_title, subtitle ? subtitle : "");
}

static void on_worker_state(HyocrWorker *worker, GParamSpec *pspec, HyocrWindow *self)
{
    if (hyocr_worker_get_state(worker) == HYOCR_WORKER_FAILED && !hyocr_worker_get_server(worker))
        hyocr_model_status_set_problem(HYOCR_MODEL_STATUS(self->model_status), hyocr_worker_get_model_dir(worker),
                                       hyocr_worker_get_error(worker));
    update_page(self);
    update_subtitle(self);
    hyocr_window_sync_download(self);   /* last: a download in progress owns the subtitle */
}

static void on_worker_notice(HyocrWorker *worker, const char *notice, HyocrWindow *self)
{
    hyocr_window_toast(self, notice);
}

/* ---- gauge ---- */

/* The process's resident memory (/proc/self/statm), bytes; 0 when unknown. */
static int64_t resident_bytes(void)
{
    g_autofree char *statm = NULL;
    if (!g_file_get_contents("/proc/self/statm", &statm, NULL, NULL)) return 0;
    long long size = 0, resident = 0;
    if (sscanf(statm, "%lld %lld", &size, &resident) != 2) return 0;
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

/* A server's figures, asked on a thread (the gauge never waits on the network): a
 * hyocr serve's memory and load from its /metrics, else just that it is remote. */
static void ask_server(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    HyocrWorker *worker = data;
    int64_t used = 0;
    int running = 0;
    if (!hyocr_worker_get_server_metrics(worker, &used, &running, NULL)) {
        g_task_return_pointer(task, g_strdup(_("Remote: the server's memory is not known")), g_free);
        return;
    }
    g_autofree char *size = g_format_size_full((guint64)used, G_FORMAT_SIZE_IEC_UNITS);
    g_task_return_pointer(task, g_strdup_printf(ngettext("Remote: the server holds %s, %d page running",
                                                         "Remote: the server holds %s, %d pages running", running),
                                                size, running), g_free);
}

static void server_answered(GObject *source, GAsyncResult *result, gpointer data)
{
    g_autoptr(HyocrWindow) self = data;
    self->gauge_asking = FALSE;
    g_free(self->server_figures);
    self->server_figures = g_task_propagate_pointer(G_TASK(result), NULL);
}

static void gauge_tick_server(HyocrWindow *self)
{
    if (!self->gauge_asking) {
        self->gauge_asking = TRUE;
        g_autoptr(GTask) task = g_task_new(NULL, NULL, server_answered, g_object_ref(self));
        g_task_set_task_data(task, g_object_ref(self->worker), g_object_unref);
        g_task_run_in_thread(task, ask_server);
    }
    hyocr_vram_gauge_set_unavailable(self->gauge, self->server_figures ? self->server_figures : _("Remote"));
}

void hyocr_window_update_gauge(HyocrWindow *self)
{
    hyocr_mem_info mem;
    gboolean cpu;
    if (hyocr_worker_get_server(self->worker) && hyocr_worker_get_state(self->worker) == HYOCR_WORKER_READY)
        gauge_tick_server(self);
    else if (hyocr_worker_get_mem_info(self->worker, &mem, &cpu))
        hyocr_vram_gauge_set_figures(self->gauge, &mem, cpu, hyocr_worker_get_memory_limit(self->worker),
                                     resident_bytes());
    else
        hyocr_vram_gauge_set_unavailable(self->gauge, hyocr_worker_get_state(self->worker) == HYOCR_WORKER_LOADING
                                                          ? _("Loading the model…") : _("No model is loaded"));
}

static gboolean gauge_tick(gpointer data)
{
    hyocr_window_update_gauge(data);
    return G_SOURCE_CONTINUE;
}

/* ---- jobs ---- */

HyocrJob *hyocr_window_find_job(HyocrWindow *self, guint id, guint *position)
{
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) job = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (hyocr_job_get_id(job) == id) {
            if (position) *position = i;
            return job;   /* the store keeps it alive */
        }
    }
    return NULL;
}

HyocrJob *hyocr_window_get_selected_job(HyocrWindow *self)
{
    return hyocr_result_view_get_job(self->result_view);
}

void hyocr_window_select_job(HyocrWindow *self, HyocrJob *job)
{
    guint pos;
    if (!hyocr_window_find_job(self, hyocr_job_get_id(job), &pos)) return;
    gtk_list_box_select_row(self->job_list, gtk_list_box_get_row_at_index(self->job_list, (int)pos));
    adw_leaflet_set_visible_child(self->jobs_leaflet, GTK_WIDGET(self->result_view));   /* narrow: the result */
}

static void on_row_selected(GtkListBox *list, GtkListBoxRow *row, HyocrWindow *self)
{
    hyocr_result_view_set_job(self->result_view, row ? hyocr_job_row_get_job(HYOCR_JOB_ROW(row)) : NULL);
    hyocr_window_update_actions(self);
}

/* Narrow: a job clicked (or activated) opens its result in place of the list. */
static void on_row_activated(GtkListBox *list, GtkListBoxRow *row, HyocrWindow *self)
{
    adw_leaflet_set_visible_child(self->jobs_leaflet, GTK_WIDGET(self->result_view));
}

static void on_folded(AdwLeaflet *leaflet, GParamSpec *pspec, HyocrWindow *self)
{
    hyocr_result_view_set_show_back(self->result_view, adw_leaflet_get_folded(leaflet));
}

void hyocr_window_show_jobs(HyocrWindow *self)
{
    adw_leaflet_set_visible_child(self->jobs_leaflet, self->sidebar);
}

static GtkWidget *create_row(gpointer item, gpointer data)
{
    return hyocr_job_row_new(HYOCR_JOB(item));
}

/* The pages of a document are one entry: a header names the document and says how far its
 * pages are, above the first of them. */
static char *document_status(HyocrWindow *self, hyocr_document *doc)
{
    int done = 0, failed = 0;
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) job = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (hyocr_job_get_document(job) != doc) continue;
        done += hyocr_job_get_state(job) == HYOCR_JOB_DONE;
        failed += hyocr_job_get_state(job) == HYOCR_JOB_FAILED;
    }
    int pages = hyocr_document_n_pages(doc);
    g_autofree char *head = g_strdup_printf(ngettext("%d page, %d done", "%d pages, %d done", (gulong)pages), pages, done);
    if (!failed) return g_steal_pointer(&head);
    return g_strdup_printf(ngettext("%s, %d failed", "%s, %d failed", (gulong)failed), head, failed);
}

static void set_header(GtkListBoxRow *row, GtkListBoxRow *before, gpointer data)
{
    HyocrWindow *self = data;
    HyocrJob *job = hyocr_job_row_get_job(HYOCR_JOB_ROW(row));
    hyocr_document *doc = hyocr_job_get_document(job);
    hyocr_document *prev = before ? hyocr_job_get_document(hyocr_job_row_get_job(HYOCR_JOB_ROW(before))) : NULL;
    if (!doc || hyocr_document_n_pages(doc) <= 1 || doc == prev) {
        gtk_list_box_row_set_header(row, NULL);
        return;
    }
    g_autofree char *status = document_status(self, doc);
    GtkWidget *box = gtk_list_box_row_get_header(row);
    if (!box) {
        box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
        gtk_widget_add_css_class(box, "document-header");
        gtk_widget_set_margin_top(box, 6);
        gtk_widget_set_margin_start(box, 6);
        GtkWidget *name = gtk_label_new(hyocr_job_get_title(job));
        gtk_label_set_xalign(GTK_LABEL(name), 0);
        gtk_label_set_ellipsize(GTK_LABEL(name), PANGO_ELLIPSIZE_MIDDLE);
        gtk_widget_add_css_class(name, "heading");
        GtkWidget *line = gtk_label_new(NULL);
        gtk_label_set_xalign(GTK_LABEL(line), 0);
        gtk_widget_add_css_class(line, "caption");
        gtk_widget_add_css_class(line, "dim-label");
        gtk_box_append(GTK_BOX(box), name);
        gtk_box_append(GTK_BOX(box), line);
        gtk_list_box_row_set_header(row, box);
    }
    gtk_label_set_text(GTK_LABEL(gtk_widget_get_last_child(box)), status);
}

static void maybe_notify(HyocrWindow *self, HyocrJob *job)
{
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    if (!HYOCR_IS_APPLICATION(app) || gtk_window_is_active(GTK_WINDOW(self))) return;
    if (hyocr_job_get_state(job) == HYOCR_JOB_CANCELLED || hyocr_job_get_elapsed(job) < NOTIFY_AFTER_SECS) return;
    hyocr_application_notify_job(HYOCR_APPLICATION(app), job);
}

static void on_job_state(HyocrJob *job, GParamSpec *pspec, HyocrWindow *self)
{
    hyocr_window_update_actions(self);
    if (hyocr_job_get_document(job)) gtk_list_box_invalidate_headers(self->job_list);
    if (!hyocr_job_is_finished(job)) return;
    hyocr_window_history_finish(self, job);
    if (hyocr_job_get_state(job) == HYOCR_JOB_FAILED) {
        g_autofree char *msg = g_strdup_printf(_("“%s” failed: %s"), hyocr_job_get_title(job), hyocr_job_get_message(job));
        hyocr_window_toast(self, msg);
    }
    maybe_notify(self, job);
}

static void add_job(HyocrWindow *self, HyocrJob *job, gboolean select)
{
    g_signal_connect_object(job, "notify::state", G_CALLBACK(on_job_state), self, 0);
    hyocr_window_history_record(self, job);
    self->showing_history = self->history_asked = FALSE;
    g_list_store_append(self->jobs, job);
    hyocr_worker_push(self->worker, job);
    if (select) hyocr_window_select_job(self, job);
}

void hyocr_window_add_finished_job(HyocrWindow *self, HyocrJob *job)
{
    g_return_if_fail(HYOCR_IS_WINDOW(self) && hyocr_job_is_finished(job));
    self->showing_history = self->history_asked = FALSE;
    g_list_store_append(self->jobs, job);
    hyocr_window_select_job(self, job);
}

void hyocr_window_show_history(HyocrWindow *self, gboolean show)
{
    self->showing_history = show;
    self->history_asked = show;
    if (show) hyocr_history_view_reload(self->history_view);
    update_page(self);
    hyocr_window_update_actions(self);
}

void hyocr_window_add_job(HyocrWindow *self, HyocrJob *job)
{
    g_return_if_fail(HYOCR_IS_WINDOW(self) && HYOCR_IS_JOB(job));
    add_job(self, job, TRUE);
}

static HyocrJobOptions *current_options(HyocrWindow *self)
{
    g_autoptr(GError) error = NULL;
    HyocrJobOptions *opts = hyocr_job_options_new_from_settings(self->settings, &error);
    if (!opts) hyocr_window_toast(self, error->message);
    return opts;
}

HyocrJob *hyocr_window_run_again(HyocrWindow *self, HyocrJob *job, gboolean current_task)
{
    g_autoptr(HyocrJobOptions) opts = current_task ? current_options(self)
                                                   : hyocr_job_options_copy(hyocr_job_get_options(job));
    if (!opts) return NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(HyocrJob) again = hyocr_job_new_again(job, opts, &error);
    if (!again) {
        hyocr_window_toast(self, error->message);
        return NULL;
    }
    add_job(self, again, TRUE);
    return again;   /* the store keeps it */
}

/* Each failed job is queued again with its own task, in its place in the list. */
guint hyocr_window_retry_failed(HyocrWindow *self)
{
    guint n = 0;
    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i++) {
        g_autoptr(HyocrJob) job = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (hyocr_job_get_state(job) != HYOCR_JOB_FAILED) continue;
        g_autoptr(HyocrJobOptions) opts = hyocr_job_options_copy(hyocr_job_get_options(job));
        g_autoptr(GError) error = NULL;
        g_autoptr(HyocrJob) again = hyocr_job_new_again(job, opts, &error);
        if (!again) {
            hyocr_window_toast(self, error->message);
            continue;
        }
        g_signal_connect_object(again, "notify::state", G_CALLBACK(on_job_state), self, 0);
        hyocr_window_history_record(self, again);
        g_list_store_splice(self->jobs, i, 1, (gpointer *)&again, 1);
        hyocr_worker_push(self->worker, again);
        n++;
    }
    hyocr_window_update_actions(self);
    return n;
}

/* What the engine reads (document.h's list), by the name's extension or, for a
 * name that says nothing, the first bytes: anything else is turned away here
 * with the formats it could be, and the decoder gives the verdict (its message)
 * on a file that claims a readable format. */
static gboolean is_readable(GFile *file)
{
    g_autofree char *name = g_file_get_basename(file);
    if (hyocr_format_name_matches(name)) return TRUE;
    g_autoptr(GFileInputStream) in = g_file_read(file, NULL, NULL);
    guint8 head[1024];
    gsize got = 0;
    if (!in || !g_input_stream_read_all(G_INPUT_STREAM(in), head, sizeof head, &got, NULL, NULL)) return FALSE;
    return hyocr_format_get(hyocr_format_sniff(head, got)) != NULL;
}

static int cmp_files(gconstpointer a, gconstpointer b)
{
    g_autofree char *x = g_file_get_basename(*(GFile *const *)a);
    g_autofree char *y = g_file_get_basename(*(GFile *const *)b);
    return strcmp(x, y);
}

/* A folder's files the engine reads, by name as `hyocr run` takes them (not its
 * subfolders); the others are counted in *skipped. */
static GPtrArray *folder_files(GFile *folder, guint *skipped)
{
    GPtrArray *files = g_ptr_array_new_with_free_func(g_object_unref);
    g_autoptr(GFileEnumerator) e = g_file_enumerate_children(folder, G_FILE_ATTRIBUTE_STANDARD_NAME, 0, NULL, NULL);
    GFileInfo *info;
    GFile *child;
    while (e && g_file_enumerator_iterate(e, &info, &child, NULL, NULL) && info) {
        if (hyocr_format_name_matches(g_file_info_get_name(info))) g_ptr_array_add(files, g_object_ref(child));
        else (*skipped)++;
    }
    g_ptr_array_sort(files, cmp_files);
    return files;
}

static void toast_if_waiting(HyocrWindow *self)
{
    if (hyocr_worker_get_state(self->worker) == HYOCR_WORKER_FAILED)
        hyocr_window_toast(self, _("The image waits in the queue until a model is loaded"));
}

static void ask_password(HyocrWindow *self, GFile *file, gboolean wrong);

/* A document of several pages (a PDF, a TIFF) becomes a job per page, queued together so the
 * worker runs them as one batch; anything else is a job of its own, whose errors the worker
 * reports. An encrypted PDF asks for its password first. Returns the jobs added. */
static guint add_file(HyocrWindow *self, GFile *file, const HyocrJobOptions *opts, const char *password,
                      gboolean select)
{
    g_autofree char *path = g_file_get_path(file);
    hyocr_document_options o = { .password = password };
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_document) doc = path ? hyocr_document_open(path, &o, &error) : NULL;
    if (!doc && g_error_matches(error, HYOCR_ERROR, HYOCR_ERROR_PASSWORD)) {
        ask_password(self, file, password != NULL);
        return 0;
    }
    if (!doc || hyocr_document_n_pages(doc) <= 1) {
        g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
        add_job(self, job, select);
        return 1;
    }
    int n = hyocr_document_n_pages(doc);
    for (int p = 0; p < n; p++) {
        g_autoptr(HyocrJob) job = hyocr_job_new_for_page(file, doc, p, opts);
        add_job(self, job, select && p == 0);
    }
    return (guint)n;
}

static guint add_folder(HyocrWindow *self, GFile *folder, const HyocrJobOptions *opts, gboolean select)
{
    g_autofree char *name = g_file_get_basename(folder);
    guint skipped = 0, added = 0;
    g_autoptr(GPtrArray) files = folder_files(folder, &skipped);
    for (guint i = 0; i < files->len; i++) added += add_file(self, files->pdata[i], opts, NULL, select && added == 0);
    if (files->len == 0) {
        g_autofree char *formats = hyocr_format_names();
        g_autofree char *msg = g_strdup_printf(_("“%s” holds no image or document hyocr reads (%s)"), name, formats);
        hyocr_window_toast(self, msg);
    } else if (skipped) {
        g_autofree char *msg = g_strdup_printf(ngettext("Skipped %u file in “%s” that hyocr does not read",
                                                           "Skipped %u files in “%s” that hyocr does not read", skipped),
                                               skipped, name);
        hyocr_window_toast(self, msg);
    }
    return added;
}

/* Files and folders, as `hyocr run` takes them. */
guint hyocr_window_add_files(HyocrWindow *self, GFile **files, guint n_files)
{
    g_return_val_if_fail(HYOCR_IS_WINDOW(self), 0);
    g_autoptr(HyocrJobOptions) opts = current_options(self);
    if (!opts) return 0;
    guint added = 0;
    for (guint i = 0; i < n_files; i++) {
        if (g_file_query_file_type(files[i], G_FILE_QUERY_INFO_NONE, NULL) == G_FILE_TYPE_DIRECTORY) {
            added += add_folder(self, files[i], opts, added == 0);
        } else if (is_readable(files[i])) {
            added += add_file(self, files[i], opts, NULL, added == 0);
        } else {
            g_autofree char *name = g_file_get_basename(files[i]);
            g_autofree char *formats = hyocr_format_names();
            g_autofree char *msg = g_strdup_printf(_("“%s” is not an image or document hyocr reads (%s)"), name, formats);
            hyocr_window_toast(self, msg);
        }
    }
    if (added) toast_if_waiting(self);
    return added;
}

/* ---- passwords ---- */

typedef struct {
    HyocrWindow *self;
    GFile       *file;
    GtkEditable *entry;
} PasswordAsk;

static void on_password_response(AdwMessageDialog *dialog, const char *response, gpointer data)
{
    PasswordAsk *ask = data;
    /* one answer per dialog: closing it after a response must not answer again */
    g_signal_handlers_disconnect_by_func(dialog, on_password_response, ask);
    /* this dialog is done asking (it closes itself); a wrong password opens the next one */
    if (ask->self->password_dialog == GTK_WIDGET(dialog)) {
        g_object_remove_weak_pointer(G_OBJECT(dialog), (gpointer *)&ask->self->password_dialog);
        ask->self->password_dialog = NULL;
    }
    if (g_str_equal(response, "open")) {
        g_autoptr(HyocrJobOptions) opts = current_options(ask->self);
        if (opts && add_file(ask->self, ask->file, opts, gtk_editable_get_text(ask->entry), TRUE))
            toast_if_waiting(ask->self);
    }
    g_object_unref(ask->file);
    g_object_unref(ask->self);
    g_free(ask);
}

/* Asks for the password of an encrypted PDF; a wrong one asks again, saying so. */
static void ask_password(HyocrWindow *self, GFile *file, gboolean wrong)
{
    g_autofree char *name = g_file_get_basename(file);
    g_autofree char *body = wrong ? g_strdup_printf(_("That password does not open “%s”. Try again."), name)
                                  : g_strdup_printf(_("“%s” is protected by a password."), name);
    GtkWidget *dialog = adw_message_dialog_new(GTK_WINDOW(self), _("Password Required"), body);
    /* A plain entry, hidden: GTK 4.8's GtkPasswordEntry, destroyed with its dialog, leaves a
     * handler that reads it after it is gone. */
    GtkWidget *entry = gtk_entry_new();
    gtk_entry_set_visibility(GTK_ENTRY(entry), FALSE);
    gtk_entry_set_input_purpose(GTK_ENTRY(entry), GTK_INPUT_PURPOSE_PASSWORD);
    adw_message_dialog_set_extra_child(ADW_MESSAGE_DIALOG(dialog), entry);
    adw_message_dialog_add_responses(ADW_MESSAGE_DIALOG(dialog), "cancel", _("_Cancel"), "open", _("_Open"), NULL);
    adw_message_dialog_set_response_appearance(ADW_MESSAGE_DIALOG(dialog), "open", ADW_RESPONSE_SUGGESTED);
    adw_message_dialog_set_default_response(ADW_MESSAGE_DIALOG(dialog), "open");
    adw_message_dialog_set_close_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    g_object_set(entry, "activates-default", TRUE, NULL);
    PasswordAsk *ask = g_new0(PasswordAsk, 1);
    ask->self = g_object_ref(self);
    ask->file = g_object_ref(file);
    ask->entry = GTK_EDITABLE(entry);
    g_signal_connect(dialog, "response", G_CALLBACK(on_password_response), ask);
    self->password_dialog = dialog;
    g_object_add_weak_pointer(G_OBJECT(dialog), (gpointer *)&self->password_dialog);
    gtk_window_present(GTK_WINDOW(dialog));
}

gboolean hyocr_window_add_texture(HyocrWindow *self, GdkTexture *texture, const char *title)
{
    g_return_val_if_fail(HYOCR_IS_WINDOW(self) && GDK_IS_TEXTURE(texture), FALSE);
    g_autoptr(HyocrJobOptions) opts = current_options(self);
    if (!opts) return FALSE;
    g_autoptr(GError) error = NULL;
    g_autoptr(HyocrJob) job = hyocr_job_new_for_texture(texture, title, opts, &error);
    if (!job) {
        hyocr_window_toast(self, error->message);
        return FALSE;
    }
    add_job(self, job, TRUE);
    toast_if_waiting(self);
    return TRUE;
}

static void on_jobs_changed(GListModel *model, guint pos, guint removed, guint added, HyocrWindow *self)
{
    update_page(self);
    hyocr_window_update_actions(self);
}

/* ---- window state ---- */

static gboolean on_close_request(GtkWindow *window, gpointer data)
{
    HyocrWindow *self = HYOCR_WINDOW(window);
    if (!hyocr_window_confirm_close(self)) return TRUE;
    int w, h;
    gtk_window_get_default_size(window, &w, &h);
    g_settings_set_boolean(self->settings, "window-maximized", gtk_window_is_maximized(window));
    if (!gtk_window_is_maximized(window)) {
        g_settings_set_int(self->settings, "window-width", w);
        g_settings_set_int(self->settings, "window-height", h);
    }
    return FALSE;
}

static void restore_size(HyocrWindow *self)
{
    gtk_window_set_default_size(GTK_WINDOW(self), g_settings_get_int(self->settings, "window-width"),
                                g_settings_get_int(self->settings, "window-height"));
    if (g_settings_get_boolean(self->settings, "window-maximized")) gtk_window_maximize(GTK_WINDOW(self));
}

/* ---- accessors ---- */

GListModel *hyocr_window_get_jobs(HyocrWindow *self) { return G_LIST_MODEL(self->jobs); }
GtkWidget *hyocr_window_get_password_dialog(HyocrWindow *self) { return self->password_dialog; }
HyocrWorker *hyocr_window_get_worker(HyocrWindow *self) { return self->worker; }
GSettings *hyocr_window_get_settings(HyocrWindow *self) { return self->settings; }
HyocrResultView *hyocr_window_get_result_view(HyocrWindow *self) { return self->result_view; }
HyocrVramGauge *hyocr_window_get_gauge(HyocrWindow *self) { return self->gauge; }
GtkDropTarget *hyocr_window_get_drop_target(HyocrWindow *self) { return self->drop_target; }
GtkWidget *hyocr_window_get_model_status(HyocrWindow *self) { return self->model_status; }
const char *hyocr_window_get_page(HyocrWindow *self) { return gtk_stack_get_visible_child_name(self->main_stack); }
gboolean hyocr_window_is_drop_hovered(HyocrWindow *self) { return gtk_widget_get_visible(self->drop_hint); }
guint hyocr_window_get_n_toasts(HyocrWindow *self) { return self->n_toasts; }
const char *hyocr_window_get_last_toast(HyocrWindow *self) { return self->last_toast; }
const char *hyocr_window_get_problem(HyocrWindow *self)
{
    return gtk_revealer_get_reveal_child(self->problem_revealer) ? gtk_label_get_text(self->problem_label) : NULL;
}

AdwMessageDialog *hyocr_window_ask_trust(HyocrWindow *self)
{
    if (!gtk_widget_get_visible(self->trust_button)) return NULL;
    g_autofree char *url = g_settings_get_string(self->settings, "server-url");
    return hyocr_certificate_dialog_present(GTK_WINDOW(self), self->settings, url,
                                            hyocr_worker_get_error(self->worker));
}

/* ---- GObject ---- */

static void hyocr_window_dispose(GObject *object)
{
    HyocrWindow *self = HYOCR_WINDOW(object);
    g_clear_handle_id(&self->gauge_tick, g_source_remove);
    g_clear_handle_id(&self->reload_timeout, g_source_remove);
    if (self->worker) hyocr_worker_shutdown(self->worker);
    hyocr_window_close_history(self);
    hyocr_window_clear_guard(self);
    hyocr_window_clear_capture(self);
    if (self->result_view) hyocr_result_view_set_job(self->result_view, NULL);
    if (self->job_list) gtk_list_box_bind_model(self->job_list, NULL, NULL, NULL, NULL);
    /* The preferences window may keep the settings object alive past us. */
    if (self->settings) g_signal_handlers_disconnect_by_data(self->settings, self);
    gtk_widget_dispose_template(GTK_WIDGET(self), HYOCR_TYPE_WINDOW);
    g_clear_object(&self->worker);
    g_clear_object(&self->jobs);
    g_clear_object(&self->settings);
    G_OBJECT_CLASS(hyocr_window_parent_class)->dispose(object);
}

static void hyocr_window_finalize(GObject *object)
{
    HyocrWindow *self = HYOCR_WINDOW(object);
    g_free(self->last_toast);
    if (self->server_key) memset(self->server_key, 0, strlen(self->server_key));
    g_free(self->server_key);
    g_free(self->server_figures);
    G_OBJECT_CLASS(hyocr_window_parent_class)->finalize(object);
}

static void hyocr_window_class_init(HyocrWindowClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_window_dispose;
    object_class->finalize = hyocr_window_finalize;

    g_type_ensure(HYOCR_TYPE_VRAM_GAUGE);
    g_type_ensure(HYOCR_TYPE_TASK_PICKER);
    g_type_ensure(HYOCR_TYPE_MODEL_STATUS);
    g_type_ensure(HYOCR_TYPE_RESULT_VIEW);
    g_type_ensure(HYOCR_TYPE_HISTORY_VIEW);
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-window.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, toast_overlay);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, window_title);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, gauge);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, capture_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, loading_spinner);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, task_picker);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, main_stack);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, problem_revealer);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, problem_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, trust_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, loading_box);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, model_status);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, jobs_leaflet);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, sidebar);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, job_list);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, result_view);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, drop_hint);
    gtk_widget_class_bind_template_child(widget_class, HyocrWindow, history_view);
    hyocr_window_install_actions(klass);
}

static void hyocr_window_init(HyocrWindow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->settings = g_settings_new(HYOCR_APP_ID);
    self->worker = hyocr_worker_new();
    self->jobs = g_list_store_new(HYOCR_TYPE_JOB);
    restore_size(self);
    hyocr_task_picker_set_settings(self->task_picker, self->settings);
    gtk_list_box_bind_model(self->job_list, G_LIST_MODEL(self->jobs), create_row, self, NULL);
    gtk_list_box_set_header_func(self->job_list, set_header, self, NULL);
    g_signal_connect(self->job_list, "row-selected", G_CALLBACK(on_row_selected), self);
    g_signal_connect(self->job_list, "row-activated", G_CALLBACK(on_row_activated), self);
    g_signal_connect(self->jobs_leaflet, "notify::folded", G_CALLBACK(on_folded), self);
    g_signal_connect(self->jobs, "items-changed", G_CALLBACK(on_jobs_changed), self);
    g_signal_connect(self->worker, "notify::state", G_CALLBACK(on_worker_state), self);
    g_signal_connect(self->worker, "notice", G_CALLBACK(on_worker_notice), self);
    g_signal_connect(self->settings, "changed", G_CALLBACK(on_settings_changed), self);
    g_signal_connect(self, "close-request", G_CALLBACK(on_close_request), NULL);
    g_signal_connect_swapped(self->trust_button, "clicked", G_CALLBACK(hyocr_window_ask_trust), self);
    hyocr_window_setup_actions(self);
    hyocr_window_setup_drop(self);
    hyocr_window_setup_download(self);
    hyocr_window_setup_history(self);
    hyocr_window_setup_guard(self);
    self->gauge_tick = g_timeout_add(GAUGE_INTERVAL_MS, gauge_tick, self);
    update_page(self);
}

HyocrWindow *hyocr_window_new(HyocrApplication *app)
{
    HyocrWindow *self = g_object_new(HYOCR_TYPE_WINDOW, "application", app, NULL);
    hyocr_window_reload_engine(self);
    return self;
}
