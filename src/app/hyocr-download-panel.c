/* hyocr-gtk — model download panel. */
#include "hyocr-download-panel.h"
#include "checkpoint.h"
#include "hyocr-model-status.h"
#include <glib/gi18n.h>
#include <math.h>

#define LICENCE_URL          "https://huggingface.co/tencent/HunyuanOCR/blob/main/LICENSE"
#define PROGRESS_INTERVAL_US (G_USEC_PER_SEC / 10)   /* the UI hears of progress ≤ 10 times a second */

/* ---- the state a download thread shares with the UI ---- */

/* Reference-counted (g_atomic_rc_box): the thread, the queued UI updates and the
 * panel each hold one, so none outlives the memory it reads. */
typedef struct {
    GMutex                  lock;
    GWeakRef                panel;
    GMainContext           *context;
    hyocr_download         *dl;
    hyocr_download_progress last;      /* lock: newest report; file/message point to the copies below */
    char                   *file, *message;
    gboolean                pending;   /* lock: an update is queued on the UI thread */
    gint64                  last_ui;   /* lock: when the UI last applied one */
} DownloadShare;

struct _HyocrDownloadPanel {
    GtkWidget       parent_instance;

    /* template */
    AdwComboRow    *version_row;
    AdwActionRow   *dest_row;
    GtkWidget      *dest_button;
    AdwActionRow   *size_row;
    GtkWidget      *plan_spinner;
    GtkLabel       *size_label;
    GtkLabel       *free_label;
    AdwEntryRow    *endpoint_row;
    GtkLabel       *licence_label;
    GtkCheckButton *accept_check;
    GtkWidget      *error_box;
    GtkImage       *error_icon;
    GtkLabel       *error_title;
    GtkLabel       *error_body;
    GtkLabel       *error_details;
    GtkWidget      *details_expander;
    GtkWidget      *progress_box;
    GtkLabel       *phase_label;
    GtkProgressBar *progress_bar;
    GtkLabel       *progress_label;
    GtkWidget      *download_button;
    GtkWidget      *cancel_button;
    GtkWidget      *folder_button;

    GSettings      *settings;
    char           *dest_parent;       /* NULL: hyocr_models_dir() */
    char           *dest;
    char           *endpoint;
    HyocrDownloadPanelState state;
    GCancellable   *plan_cancellable;  /* the plan in flight, NULL when none */
    char           *planned_for;       /* endpoint, version and folder of the plan shown */
    guint           plan_idle;
    GCancellable   *work_cancellable;  /* the download or folder check in flight */
    DownloadShare  *share;             /* the download in flight */
    double          fraction;
    char           *status;
};

G_DEFINE_FINAL_TYPE(HyocrDownloadPanel, hyocr_download_panel, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_BUSY, PROP_FRACTION, PROP_STATUS, N_PROPS };
static GParamSpec *props[N_PROPS];

enum { SIGNAL_MODEL_READY, SIGNAL_PROGRESS, N_SIGNALS };
static guint signals[N_SIGNALS];

static DownloadShare *share_ref(DownloadShare *s) { return g_atomic_rc_box_acquire(s); }

static void share_clear(gpointer data)
{
    DownloadShare *s = data;
    g_mutex_clear(&s->lock);
    g_weak_ref_clear(&s->panel);
    g_main_context_unref(s->context);
    hyocr_download_free(s->dl);
    g_free(s->file);
    g_free(s->message);
}

static void share_unref(gpointer s) { g_atomic_rc_box_release_full(s, share_clear); }

/* ---- words for people ---- */

static char *endpoint_host(const char *endpoint)
{
    char *host = hyocr_download_endpoint_host(endpoint);
    return host ? host : g_strdup(endpoint ? endpoint : "?");
}

char *hyocr_download_failure_title(const hyocr_download_failure *f)
{
    switch (f->kind) {
    case HYOCR_DOWNLOAD_FAILURE_NONE: break;
    case HYOCR_DOWNLOAD_FAILURE_NETWORK: return g_strdup(_("Cannot Reach the Download Server"));
    case HYOCR_DOWNLOAD_FAILURE_ACCESS: return g_strdup(_("The Server Refused Access"));
    case HYOCR_DOWNLOAD_FAILURE_NOT_FOUND: return g_strdup(_("The Model Was Not Found on the Server"));
    case HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED: return g_strdup(_("The Server Asks to Wait"));
    case HYOCR_DOWNLOAD_FAILURE_SERVER: return g_strdup(_("The Server Had a Problem"));
    case HYOCR_DOWNLOAD_FAILURE_NO_SPACE: return g_strdup(_("Not Enough Disk Space"));
    case HYOCR_DOWNLOAD_FAILURE_CHECKSUM: return g_strdup(_("A File Arrived Damaged"));
    case HYOCR_DOWNLOAD_FAILURE_DISK: return g_strdup(_("The Model Could Not Be Saved"));
    case HYOCR_DOWNLOAD_FAILURE_CANCELLED: return g_strdup(_("Download Cancelled"));
    case HYOCR_DOWNLOAD_FAILURE_INVALID: return g_strdup(_("This Folder Cannot Be Used"));
    }
    return g_strdup(_("The Download Failed"));
}

static char *rate_limit_advice(const hyocr_download_failure *f, const char *host)
{
    if (f->retry_after <= 0)
        return g_strdup_printf(_("%s received too many requests. Wait a few minutes, then press Download again; "
                                 "it continues where it stopped."), host);
    int secs = (int)ceil(f->retry_after);
    return g_strdup_printf(g_dngettext(NULL, "%s received too many requests and asks to wait %d second. Wait, then "
                                             "press Download again; it continues where it stopped.",
                                       "%s received too many requests and asks to wait %d seconds. Wait, then "
                                       "press Download again; it continues where it stopped.", (gulong)secs),
                           host, secs);
}

static char *no_space_advice(const hyocr_download_failure *f, const char *dest)
{
    g_autofree char *parent = g_path_get_dirname(dest);
    if (f->need_bytes <= 0 || f->free_bytes < 0)
        return g_strdup_printf(_("The disk holding %s is full. Free some space, or choose another folder with "
                                 "“Change…”; the download continues where it stopped."), parent);
    g_autofree char *need = g_format_size((guint64)f->need_bytes), *avail = g_format_size((guint64)f->free_bytes);
    return g_strdup_printf(_("The download needs %s more, but only %s is free in %s. Free some space, or choose "
                             "another folder with “Change…”."), need, avail, parent);
}

char *hyocr_download_failure_advice(const hyocr_download_failure *f, const char *endpoint, const char *version,
                                    const char *dest)
{
    g_autofree char *host = endpoint_host(endpoint);
    switch (f->kind) {
    case HYOCR_DOWNLOAD_FAILURE_NONE: break;
    case HYOCR_DOWNLOAD_FAILURE_NETWORK:
        return g_strdup_printf(_("hyocr could not connect to %s. Check your internet connection and try again. "
                                 "If the server cannot be reached from where you are, enter a mirror under "
                                 "Advanced → Server."), host);
    case HYOCR_DOWNLOAD_FAILURE_ACCESS:
        return g_strdup_printf(_("%s refused access to the model (HTTP %d). Open the model page in a web browser "
                                 "and accept the licence there if it asks, then try again, or use a mirror under "
                                 "Advanced → Server."), host, f->http_status);
    case HYOCR_DOWNLOAD_FAILURE_NOT_FOUND:
        return g_strdup_printf(_("%s does not have all the files of HunyuanOCR %s. Choose the other version, or "
                                 "check the server address under Advanced → Server."), host, version);
    case HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED:
        return rate_limit_advice(f, host);
    case HYOCR_DOWNLOAD_FAILURE_SERVER:
        return g_strdup_printf(_("%s could not deliver the files just now. Try again later, or use a mirror under "
                                 "Advanced → Server."), host);
    case HYOCR_DOWNLOAD_FAILURE_NO_SPACE:
        return no_space_advice(f, dest);
    case HYOCR_DOWNLOAD_FAILURE_CHECKSUM:
        return g_strdup_printf(_("“%s” did not match its checksum, so the damaged copy was deleted. Press Download "
                                 "to try again; if this keeps happening, the server sends a different file than "
                                 "it lists."), f->file ? f->file : "?");
    case HYOCR_DOWNLOAD_FAILURE_DISK:
        return g_strdup_printf(_("The files could not be written to %s. Check that the folder is writable, or "
                                 "choose another folder with “Change…”."), dest);
    case HYOCR_DOWNLOAD_FAILURE_CANCELLED:
        return g_strdup(_("What was downloaded so far is kept: Download continues from there."));
    case HYOCR_DOWNLOAD_FAILURE_INVALID:
        return g_strdup_printf(_("%s already holds other files, or another download into it is running. Choose "
                                 "another folder with “Change…”."), dest);
    }
    return g_strdup(_("Something went wrong; the details below say what. Try again."));
}

static char *format_eta(double secs)
{
    if (secs < 0 || !isfinite(secs)) return NULL;
    if (secs < 60) {
        int n = MAX(1, (int)ceil(secs));
        return g_strdup_printf(g_dngettext(NULL, "%d second left", "%d seconds left", (gulong)n), n);
    }
    if (secs < 3600) {
        int n = (int)ceil(secs / 60);
        return g_strdup_printf(g_dngettext(NULL, "%d minute left", "%d minutes left", (gulong)n), n);
    }
    int m = (int)ceil(secs / 60);
    /* Translators: hours and minutes left */
    return g_strdup_printf(_("%d h %02d min left"), m / 60, m % 60);
}

/* "1.2 MB of 2.4 MB · 800.0 kB/s · 2 seconds left" */
static char *amounts_text(const hyocr_download_progress *p)
{
    g_autofree char *done = g_format_size((guint64)MAX(p->done, 0));
    g_autofree char *total = g_format_size((guint64)MAX(p->total, 0));
    /* Translators: bytes downloaded of the total, e.g. "1.2 MB of 2.4 MB" */
    GString *s = g_string_new(NULL);
    g_string_printf(s, _("%s of %s"), done, total);
    if (p->rate > 0) {
        g_autofree char *rate = g_format_size((guint64)p->rate);
        g_string_append(s, " · ");
        /* Translators: a transfer rate, e.g. "800.0 kB/s" */
        g_string_append_printf(s, _("%s/s"), rate);
    }
    g_autofree char *eta = p->rate > 0 ? format_eta(p->eta) : NULL;
    if (eta) g_string_append_printf(s, " · %s", eta);
    return g_string_free(s, FALSE);
}

static char *phase_text(const hyocr_download_progress *p)
{
    const char *file = p->file ? p->file : "";
    switch (p->phase) {
    case HYOCR_DOWNLOAD_PHASE_LISTING: return g_strdup(_("Asking the server for the list of files…"));
    case HYOCR_DOWNLOAD_PHASE_RESUMING:
        return g_strdup_printf(_("Checking the part of “%s” downloaded before…"), file);
    case HYOCR_DOWNLOAD_PHASE_FETCHING:
        return g_strdup_printf(_("Downloading “%s” (file %d of %d)"), file, p->file_index + 1, p->n_files);
    case HYOCR_DOWNLOAD_PHASE_VERIFIED:
        return g_strdup_printf(_("“%s” checked (file %d of %d)"), file, p->file_index + 1, p->n_files);
    case HYOCR_DOWNLOAD_PHASE_WAITING:
        return g_strdup(_("The server did not answer as expected; trying again shortly…"));
    case HYOCR_DOWNLOAD_PHASE_INSTALLING: return g_strdup(_("Putting the model in place…"));
    case HYOCR_DOWNLOAD_PHASE_DONE: return g_strdup(_("Downloaded and checked"));
    }
    return g_strdup("");
}

/* ---- small state ---- */

static hyocr_model_version current_version(HyocrDownloadPanel *self)
{
    return adw_combo_row_get_selected(self->version_row) == 1 ? HYOCR_MODEL_VERSION_1_0 : HYOCR_MODEL_VERSION_1_5;
}

static const char *version_name(hyocr_model_version v) { return v == HYOCR_MODEL_VERSION_1_0 ? "1.0" : "1.5"; }

static gboolean is_busy_state(HyocrDownloadPanelState st)
{
    return st == HYOCR_DOWNLOAD_PANEL_DOWNLOADING || st == HYOCR_DOWNLOAD_PANEL_CHECKING;
}

static void sync_controls(HyocrDownloadPanel *self)
{
    gboolean downloading = self->state == HYOCR_DOWNLOAD_PANEL_DOWNLOADING;
    gboolean busy = is_busy_state(self->state);
    gboolean accepted = gtk_check_button_get_active(self->accept_check);
    gtk_widget_set_sensitive(self->download_button, accepted && !busy);
    gtk_widget_set_visible(self->download_button, !downloading);
    gtk_widget_set_visible(self->cancel_button, downloading);
    gtk_widget_set_sensitive(self->folder_button, !busy);
    gtk_widget_set_sensitive(GTK_WIDGET(self->version_row), !busy);
    gtk_widget_set_sensitive(self->dest_button, !busy);
    gtk_widget_set_sensitive(GTK_WIDGET(self->endpoint_row), !busy);
    gboolean spin = self->state == HYOCR_DOWNLOAD_PANEL_PLANNING || self->state == HYOCR_DOWNLOAD_PANEL_CHECKING;
    gtk_widget_set_visible(self->plan_spinner, spin);
    gtk_spinner_set_spinning(GTK_SPINNER(self->plan_spinner), spin);
}

static void set_state(HyocrDownloadPanel *self, HyocrDownloadPanelState st)
{
    gboolean was_busy = is_busy_state(self->state);
    self->state = st;
    sync_controls(self);
    if (was_busy != is_busy_state(st)) g_object_notify_by_pspec(G_OBJECT(self), props[PROP_BUSY]);
}

static void set_fraction(HyocrDownloadPanel *self, double fraction)
{
    gtk_progress_bar_set_fraction(self->progress_bar, fraction);
    if (self->fraction == fraction) return;
    self->fraction = fraction;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_FRACTION]);
}

static void set_status(HyocrDownloadPanel *self, const char *status)
{
    if (!g_strcmp0(self->status, status)) return;
    g_free(self->status);
    self->status = g_strdup(status);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATUS]);
}

static void hide_error(HyocrDownloadPanel *self)
{
    gtk_widget_set_visible(self->error_box, FALSE);
    gtk_label_set_text(self->error_title, "");
    gtk_label_set_text(self->error_body, "");
    gtk_label_set_text(self->error_details, "");
}

/* details: the raw message (English engine words, options and all) for a bug report. */
static void show_error(HyocrDownloadPanel *self, const char *title, const char *body, const char *details,
                       gboolean warning)
{
    gtk_label_set_text(self->error_title, title);
    gtk_label_set_text(self->error_body, body);
    gtk_label_set_text(self->error_details, details ? details : "");
    gtk_widget_set_visible(self->details_expander, details && *details);
    gtk_image_set_from_icon_name(self->error_icon, warning ? "dialog-warning-symbolic" : "dialog-information-symbolic");
    gtk_widget_set_visible(self->error_box, TRUE);
}

static void show_failure(HyocrDownloadPanel *self, const hyocr_download_failure *f, const GError *error)
{
    g_autofree char *title = hyocr_download_failure_title(f);
    g_autofree char *advice = hyocr_download_failure_advice(f, self->endpoint, version_name(current_version(self)),
                                                            self->dest);
    show_error(self, title, advice, error ? error->message : NULL, f->kind != HYOCR_DOWNLOAD_FAILURE_CANCELLED);
}

static void update_dest(HyocrDownloadPanel *self)
{
    g_free(self->dest);
    self->dest = hyocr_models_dest(self->dest_parent, current_version(self));
    adw_action_row_set_subtitle(self->dest_row, self->dest);
}

/* ---- size and free space (plan) ---- */

typedef struct {
    char                  *endpoint, *dest;
    hyocr_model_version    version;
    gboolean               ask_server;   /* else only the free space, which is local */
    int64_t                total, have, free;
    gboolean               up_to_date;
    hyocr_download_failure failure;
    char                  *failure_file;
} PlanJob;

static void plan_job_free(gpointer data)
{
    PlanJob *j = data;
    g_free(j->endpoint);
    g_free(j->dest);
    g_free(j->failure_file);
    g_free(j);
}

static void plan_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    PlanJob *j = data;
    j->free = hyocr_models_free_space(j->dest);
    if (!j->ask_server) {
        g_task_return_boolean(task, TRUE);
        return;
    }
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = j->endpoint;
    p.version = j->version;
    p.dest_dir = j->dest;
    p.cancellable = cancellable;
    /* Only a look before the user decides: one quick retry, not a download's patience. */
    p.max_retries = 1;
    p.retry_delay = 0.5;
    p.timeout = 15;
    GError *error = NULL;
    g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &error);
    const hyocr_download_summary *s = dl ? hyocr_download_plan(dl, &error) : NULL;
    if (!s) {
        j->failure = dl ? *hyocr_download_get_failure(dl) : (hyocr_download_failure){ HYOCR_DOWNLOAD_FAILURE_INVALID };
        j->failure_file = g_strdup(j->failure.file);
        j->failure.file = j->failure_file;
        g_task_return_error(task, error);
        return;
    }
    j->total = s->total_bytes;
    j->have = s->have_bytes;
    j->up_to_date = s->up_to_date;
    if (s->free_bytes >= 0) j->free = s->free_bytes;
    g_task_return_boolean(task, TRUE);
}

static void show_free(HyocrDownloadPanel *self, int64_t avail, int64_t need)
{
    g_autofree char *size = avail >= 0 ? g_format_size((guint64)avail) : NULL;
    g_autofree char *text = !size ? g_strdup(_("Unknown"))
                          : need > avail ? g_strdup_printf(_("%s — not enough"), size)
                                         : g_strdup(size);
    gtk_label_set_text(self->free_label, text);
    if (size && need > avail) gtk_widget_add_css_class(GTK_WIDGET(self->free_label), "error");
    else gtk_widget_remove_css_class(GTK_WIDGET(self->free_label), "error");
}

static void show_size(HyocrDownloadPanel *self, const PlanJob *j)
{
    g_autofree char *total = g_format_size((guint64)j->total);
    g_autofree char *left = g_format_size((guint64)(j->total - j->have));
    g_autofree char *text = j->up_to_date ? g_strdup_printf(_("%s, already downloaded"), total)
                          : j->have > 0   ? g_strdup_printf(_("%s (%s left to download)"), total, left)
                                          : g_strdup(total);
    gtk_label_set_text(self->size_label, text);
    adw_action_row_set_subtitle(self->size_row, "");
}

static void show_estimate(HyocrDownloadPanel *self)
{
    /* Translators: the size of the model's files before the server has been asked */
    gtk_label_set_text(self->size_label, _("About 2 GB"));
    adw_action_row_set_subtitle(self->size_row, _("Exact size from the server once you accept the licence"));
}

static void on_plan_done(GObject *source, GAsyncResult *res, gpointer data)
{
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(source);
    GTask *task = G_TASK(res);
    if (g_task_get_cancellable(task) != self->plan_cancellable) return;   /* superseded, or disposed */
    g_clear_object(&self->plan_cancellable);
    PlanJob *j = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    if (!g_task_propagate_boolean(task, &error)) {
        show_free(self, j->free, -1);
        gtk_label_set_text(self->size_label, _("Unknown"));
        show_failure(self, &j->failure, error);
        set_state(self, HYOCR_DOWNLOAD_PANEL_FAILED);
        return;
    }
    if (!j->ask_server) {
        show_free(self, j->free, -1);
        show_estimate(self);
        set_state(self, HYOCR_DOWNLOAD_PANEL_IDLE);
        return;
    }
    show_free(self, j->free, j->up_to_date ? 0 : j->total - j->have);
    show_size(self, j);
    set_state(self, HYOCR_DOWNLOAD_PANEL_READY);
}

/* The app promises to use the network only when asked: the server hears of us once the
 * licence is accepted, which is asking for the download. Until then, an estimate. */
static gboolean may_ask_server(HyocrDownloadPanel *self)
{
    return gtk_check_button_get_active(self->accept_check);
}

static char *plan_key(HyocrDownloadPanel *self)
{
    return g_strdup_printf("%s\n%s\n%s\n%d", self->endpoint, version_name(current_version(self)), self->dest,
                           may_ask_server(self));
}

static void cancel_plan(HyocrDownloadPanel *self)
{
    if (self->plan_cancellable) g_cancellable_cancel(self->plan_cancellable);
    g_clear_object(&self->plan_cancellable);
}

static gboolean valid_endpoint(const char *text)
{
    g_autofree char *host = hyocr_download_endpoint_host(text);
    return host != NULL;
}

static void show_bad_endpoint(HyocrDownloadPanel *self)
{
    g_autofree char *body = g_strdup_printf(_("Enter an address that starts with https:// or http://, such as %s."),
                                            HYOCR_DOWNLOAD_DEFAULT_ENDPOINT);
    show_error(self, _("This Server Address Does Not Work"), body, NULL, TRUE);
}

/* The setting or $HF_ENDPOINT may hold anything; the entry only takes web addresses. */
static gboolean endpoint_usable(HyocrDownloadPanel *self)
{
    if (valid_endpoint(self->endpoint)) return TRUE;
    show_bad_endpoint(self);
    return FALSE;
}

static void start_plan(HyocrDownloadPanel *self)
{
    g_autofree char *key = plan_key(self);
    if (is_busy_state(self->state) || !g_strcmp0(self->planned_for, key)) return;
    cancel_plan(self);
    hide_error(self);
    g_free(self->planned_for);
    self->planned_for = g_steal_pointer(&key);
    self->plan_cancellable = g_cancellable_new();
    PlanJob *j = g_new0(PlanJob, 1);
    j->endpoint = g_strdup(self->endpoint);
    j->dest = g_strdup(self->dest);
    j->version = current_version(self);
    j->ask_server = may_ask_server(self) && endpoint_usable(self);
    if (j->ask_server) gtk_label_set_text(self->size_label, _("Checking…"));
    GTask *task = g_task_new(self, self->plan_cancellable, on_plan_done, NULL);
    g_task_set_task_data(task, j, plan_job_free);
    g_task_run_in_thread(task, plan_thread);
    g_object_unref(task);
    set_state(self, HYOCR_DOWNLOAD_PANEL_PLANNING);
}

static gboolean plan_idle_cb(gpointer data)
{
    HyocrDownloadPanel *self = data;
    self->plan_idle = 0;
    start_plan(self);
    return G_SOURCE_REMOVE;
}

/* Plans only while shown: a window that never shows this page never looks. */
static void replan(HyocrDownloadPanel *self)
{
    g_clear_pointer(&self->planned_for, g_free);
    if (is_busy_state(self->state)) return;
    cancel_plan(self);   /* its answer would be for the old choice */
    set_state(self, HYOCR_DOWNLOAD_PANEL_IDLE);
    if (gtk_widget_get_mapped(GTK_WIDGET(self)) && !self->plan_idle)
        self->plan_idle = g_idle_add(plan_idle_cb, self);
}

/* ---- the download ---- */

static void show_progress(HyocrDownloadPanel *self, const hyocr_download_progress *p)
{
    double fraction = p->total > 0 ? CLAMP((double)p->done / (double)p->total, 0.0, 1.0) : 0.0;
    set_fraction(self, fraction);
    g_autofree char *phase = phase_text(p);
    gtk_label_set_text(self->phase_label, phase);
    g_autofree char *amounts = amounts_text(p);
    gtk_label_set_text(self->progress_label, amounts);
    g_autofree char *status = g_strdup_printf(_("Downloading the model: %d %%"), (int)floor(fraction * 100));
    set_status(self, status);
    g_signal_emit(self, signals[SIGNAL_PROGRESS], 0);
}

static gboolean apply_progress(gpointer data);

static void queue_update(DownloadShare *s, gint64 wait_us)
{
    GSource *src = g_timeout_source_new((guint)((MAX(wait_us, 0) + 999) / 1000));
    g_source_set_callback(src, apply_progress, share_ref(s), share_unref);
    g_source_attach(src, s->context);
    g_source_unref(src);
}

/* UI thread: the newest report, whatever came in between. */
static gboolean apply_progress(gpointer data)
{
    DownloadShare *s = data;
    gint64 now = g_get_monotonic_time();
    g_mutex_lock(&s->lock);
    /* A timeout attached from another thread may count from the loop's cached clock and
     * fire early: the interval is kept here, where it matters. */
    gint64 early = s->last_ui ? s->last_ui + PROGRESS_INTERVAL_US - now : 0;
    if (early > 0) {
        g_mutex_unlock(&s->lock);
        queue_update(s, early);
        return G_SOURCE_REMOVE;
    }
    g_autoptr(HyocrDownloadPanel) self = g_weak_ref_get(&s->panel);
    hyocr_download_progress p = s->last;
    g_autofree char *file = g_strdup(s->file), *message = g_strdup(s->message);
    p.file = file;
    p.message = message;
    s->pending = FALSE;
    s->last_ui = now;
    g_mutex_unlock(&s->lock);
    if (self && self->share == s) show_progress(self, &p);
    return G_SOURCE_REMOVE;
}

/* Download thread: keeps the newest report and queues one UI update at a time, no
 * sooner than PROGRESS_INTERVAL_US after the last one was applied. */
static void on_progress(const hyocr_download_progress *p, void *data)
{
    DownloadShare *s = data;
    gint64 now = g_get_monotonic_time();
    g_mutex_lock(&s->lock);
    s->last = *p;
    g_free(s->file);
    s->file = g_strdup(p->file);
    s->last.file = s->file;
    g_free(s->message);
    s->message = g_strdup(p->message);
    s->last.message = s->message;
    gboolean schedule = !s->pending;
    s->pending = TRUE;
    gint64 wait_us = s->last_ui ? s->last_ui + PROGRESS_INTERVAL_US - now : 0;
    g_mutex_unlock(&s->lock);
    if (schedule) queue_update(s, wait_us);
}

static void download_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    DownloadShare *s = data;
    GError *error = NULL;
    if (hyocr_download_run(s->dl, &error)) g_task_return_boolean(task, TRUE);
    else g_task_return_error(task, error);
}

static void finish_work(HyocrDownloadPanel *self)
{
    g_clear_pointer(&self->share, share_unref);
    g_clear_object(&self->work_cancellable);
    set_status(self, NULL);
}

static void model_ready(HyocrDownloadPanel *self, const char *folder)
{
    set_state(self, HYOCR_DOWNLOAD_PANEL_DONE);
    g_signal_emit(self, signals[SIGNAL_MODEL_READY], 0, folder);
}

static void on_download_done(GObject *source, GAsyncResult *res, gpointer data)
{
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(source);
    GTask *task = G_TASK(res);
    DownloadShare *s = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    gboolean ok = g_task_propagate_boolean(task, &error);
    if (s != self->share) return;   /* disposed meanwhile */
    const hyocr_download_failure *f = hyocr_download_get_failure(s->dl);
    gboolean cancelled = !ok && f->kind == HYOCR_DOWNLOAD_FAILURE_CANCELLED;
    /* What is on disk changed: the next look at the size says what is left. */
    g_clear_pointer(&self->planned_for, g_free);
    if (ok) {
        set_fraction(self, 1.0);
        gtk_label_set_text(self->phase_label, _("Downloaded and checked"));
    } else {
        show_failure(self, f, error);
        gtk_widget_set_visible(self->progress_box, cancelled);
    }
    g_autofree char *dest = g_strdup(self->dest);
    finish_work(self);
    if (ok) model_ready(self, dest);
    else set_state(self, cancelled ? HYOCR_DOWNLOAD_PANEL_CANCELLED : HYOCR_DOWNLOAD_PANEL_FAILED);
}

static DownloadShare *share_new(HyocrDownloadPanel *self)
{
    DownloadShare *s = g_atomic_rc_box_new0(DownloadShare);
    g_mutex_init(&s->lock);
    g_weak_ref_init(&s->panel, self);
    s->context = g_main_context_ref_thread_default();
    return s;
}

void hyocr_download_panel_start(HyocrDownloadPanel *self)
{
    g_return_if_fail(HYOCR_IS_DOWNLOAD_PANEL(self));
    if (!gtk_check_button_get_active(self->accept_check) || is_busy_state(self->state)) return;
    cancel_plan(self);
    hide_error(self);
    if (!endpoint_usable(self)) return;
    DownloadShare *s = share_new(self);
    self->work_cancellable = g_cancellable_new();
    hyocr_download_params p;
    hyocr_download_params_init(&p);
    p.endpoint = self->endpoint;
    p.version = current_version(self);
    p.dest_dir = self->dest;
    p.cancellable = self->work_cancellable;
    p.on_progress = on_progress;
    p.user_data = s;   /* s owns the download, so it outlives every callback */
    g_autoptr(GError) error = NULL;
    s->dl = hyocr_download_new(&p, &error);
    if (!s->dl) {
        share_unref(s);
        g_clear_object(&self->work_cancellable);
        hyocr_download_failure f = { HYOCR_DOWNLOAD_FAILURE_INVALID };
        show_failure(self, &f, error);
        return;
    }
    self->share = s;
    GTask *task = g_task_new(self, self->work_cancellable, on_download_done, NULL);
    g_task_set_task_data(task, share_ref(s), share_unref);
    g_task_run_in_thread(task, download_thread);
    g_object_unref(task);
    set_fraction(self, 0.0);
    gtk_label_set_text(self->phase_label, _("Starting the download…"));
    gtk_label_set_text(self->progress_label, "");
    gtk_widget_set_visible(self->progress_box, TRUE);
    set_status(self, _("Downloading the model…"));
    set_state(self, HYOCR_DOWNLOAD_PANEL_DOWNLOADING);
}

void hyocr_download_panel_cancel(HyocrDownloadPanel *self)
{
    g_return_if_fail(HYOCR_IS_DOWNLOAD_PANEL(self));
    if (self->work_cancellable) g_cancellable_cancel(self->work_cancellable);
}

/* ---- a folder already on disk ---- */

typedef struct {
    char *folder;
    char *title, *advice, *details;
} FolderCheck;

static void folder_check_free(gpointer data)
{
    FolderCheck *c = data;
    g_free(c->folder);
    g_free(c->title);
    g_free(c->advice);
    g_free(c->details);
    g_free(c);
}

static gboolean check_files(FolderCheck *c)
{
    g_auto(GStrv) missing = hyocr_models_missing_files(c->folder);
    if (!missing[0]) return TRUE;
    g_autofree char *list = g_strjoinv(", ", missing);
    c->title = g_strdup(_("This Folder Holds No Model"));
    c->advice = g_strdup_printf(_("“%s” lacks %s. Choose the folder that holds config.json, tokenizer.json and the "
                                  "weights (*.safetensors), or download the model."), c->folder, list);
    return FALSE;
}

/* A folder hyocr downloaded says whether it is complete and unchanged. */
static gboolean check_record(FolderCheck *c)
{
    g_autoptr(hyocr_model_entry) e = hyocr_model_check(c->folder, FALSE, NULL);
    if (!e || (e->state != HYOCR_MODEL_STATE_INCOMPLETE && e->state != HYOCR_MODEL_STATE_CORRUPT)) return TRUE;
    c->title = g_strdup(_("The Model in This Folder Is Incomplete"));
    c->advice = g_strdup(_("Download the model again to complete it, or choose another folder."));
    c->details = g_strdup(e->problem);
    return FALSE;
}

static gboolean check_weights(FolderCheck *c)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(c->folder, &error);
    if (ck) return TRUE;
    c->title = g_strdup(_("The Model Files Could Not Be Read"));
    c->advice = g_strdup(_("The folder has the expected files, but they are not a HunyuanOCR model that hyocr can "
                           "use. Choose another folder, or download the model."));
    c->details = g_strdup(error->message);
    return FALSE;
}

static void check_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    FolderCheck *c = data;
    g_task_return_boolean(task, check_files(c) && check_record(c) && check_weights(c));
}

static void on_check_done(GObject *source, GAsyncResult *res, gpointer data)
{
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(source);
    GTask *task = G_TASK(res);
    if (g_task_get_cancellable(task) != self->work_cancellable) return;   /* disposed meanwhile */
    FolderCheck *c = g_task_get_task_data(task);
    gboolean ok = g_task_propagate_boolean(task, NULL);
    finish_work(self);
    if (ok) {
        model_ready(self, c->folder);
        return;
    }
    show_error(self, c->title, c->advice, c->details, TRUE);
    set_state(self, HYOCR_DOWNLOAD_PANEL_FAILED);
}

void hyocr_download_panel_use_folder(HyocrDownloadPanel *self, const char *folder)
{
    g_return_if_fail(HYOCR_IS_DOWNLOAD_PANEL(self) && folder);
    if (is_busy_state(self->state)) return;
    cancel_plan(self);
    hide_error(self);
    FolderCheck *c = g_new0(FolderCheck, 1);
    c->folder = g_canonicalize_filename(folder, NULL);
    self->work_cancellable = g_cancellable_new();
    GTask *task = g_task_new(self, self->work_cancellable, on_check_done, NULL);
    g_task_set_task_data(task, c, folder_check_free);
    g_task_run_in_thread(task, check_thread);
    g_object_unref(task);
    set_state(self, HYOCR_DOWNLOAD_PANEL_CHECKING);
}

void hyocr_download_panel_set_destination(HyocrDownloadPanel *self, const char *parent)
{
    g_return_if_fail(HYOCR_IS_DOWNLOAD_PANEL(self));
    if (is_busy_state(self->state)) return;
    g_free(self->dest_parent);
    self->dest_parent = parent && *parent ? g_canonicalize_filename(parent, NULL) : NULL;
    update_dest(self);
    replan(self);
}

/* ---- folder choosers ---- */

typedef void (*FolderChosen)(HyocrDownloadPanel *self, const char *path);

static void on_chooser_response(GtkNativeDialog *dialog, int response, gpointer data)
{
    HyocrDownloadPanel *self = data;
    FolderChosen chosen = (FolderChosen)g_object_get_data(G_OBJECT(dialog), "hyocr-chosen");
    g_autoptr(GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog))
                                                            : NULL;
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    if (path) chosen(self, path);
    gtk_native_dialog_destroy(dialog);
    g_object_unref(dialog);
    g_object_unref(self);
}

/* GtkFileChooserNative goes through the file chooser portal when there is one. */
static void choose_folder(HyocrDownloadPanel *self, const char *title, FolderChosen chosen)
{
    GtkRoot *root = gtk_widget_get_root(GTK_WIDGET(self));
    GtkFileChooserNative *dialog = gtk_file_chooser_native_new(title, GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL,
                                                               GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                                               _("_Select"), _("_Cancel"));
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(dialog), TRUE);
    g_object_set_data(G_OBJECT(dialog), "hyocr-chosen", (gpointer)chosen);
    g_signal_connect(dialog, "response", G_CALLBACK(on_chooser_response), g_object_ref(self));
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(dialog));
}

static void on_folder_clicked(GtkButton *button, HyocrDownloadPanel *self)
{
    choose_folder(self, _("Choose the Model Folder"), hyocr_download_panel_use_folder);
}

static void on_dest_clicked(GtkButton *button, HyocrDownloadPanel *self)
{
    choose_folder(self, _("Choose Where to Put the Model"), hyocr_download_panel_set_destination);
}

/* ---- server ---- */

static void load_endpoint(HyocrDownloadPanel *self)
{
    g_autofree char *saved = self->settings ? g_settings_get_string(self->settings, "download-endpoint") : NULL;
    g_free(self->endpoint);
    self->endpoint = g_strdup(saved && *saved ? saved : hyocr_download_default_endpoint());
    gtk_editable_set_text(GTK_EDITABLE(self->endpoint_row), self->endpoint);
}

/* Saved as soon as it is applied: the next start asks the same server. */
static void on_endpoint_apply(AdwEntryRow *row, HyocrDownloadPanel *self)
{
    g_autofree char *text = g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(row))));
    if (*text && !valid_endpoint(text)) {
        gtk_widget_add_css_class(GTK_WIDGET(row), "error");
        show_bad_endpoint(self);
        return;
    }
    gtk_widget_remove_css_class(GTK_WIDGET(row), "error");
    if (self->settings) {
        if (!*text || !g_strcmp0(text, hyocr_download_default_endpoint())) g_settings_reset(self->settings, "download-endpoint");
        else g_settings_set_string(self->settings, "download-endpoint", text);
    }
    load_endpoint(self);
    hide_error(self);
    replan(self);
}

/* ---- reactions ---- */

static void on_version_changed(AdwComboRow *row, GParamSpec *pspec, HyocrDownloadPanel *self)
{
    update_dest(self);
    replan(self);
}

static void on_accept_toggled(GtkCheckButton *check, HyocrDownloadPanel *self)
{
    sync_controls(self);
    if (gtk_check_button_get_active(check)) replan(self);
}

static void on_download_clicked(GtkButton *button, HyocrDownloadPanel *self)
{
    hyocr_download_panel_start(self);
}

static void on_cancel_clicked(GtkButton *button, HyocrDownloadPanel *self)
{
    hyocr_download_panel_cancel(self);
}

void hyocr_download_panel_reset(HyocrDownloadPanel *self)
{
    g_return_if_fail(HYOCR_IS_DOWNLOAD_PANEL(self));
    if (is_busy_state(self->state)) return;
    hide_error(self);
    gtk_widget_set_visible(self->progress_box, FALSE);
    set_state(self, HYOCR_DOWNLOAD_PANEL_IDLE);
    replan(self);
}

static void hyocr_download_panel_map(GtkWidget *widget)
{
    GTK_WIDGET_CLASS(hyocr_download_panel_parent_class)->map(widget);
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(widget);
    if (!self->planned_for && !self->plan_idle) self->plan_idle = g_idle_add(plan_idle_cb, self);
}

/* ---- accessors ---- */

HyocrDownloadPanelState hyocr_download_panel_get_state(HyocrDownloadPanel *self) { return self->state; }
gboolean hyocr_download_panel_is_busy(HyocrDownloadPanel *self) { return is_busy_state(self->state); }
double hyocr_download_panel_get_fraction(HyocrDownloadPanel *self) { return self->fraction; }
const char *hyocr_download_panel_get_status(HyocrDownloadPanel *self) { return self->status ? self->status : ""; }
const char *hyocr_download_panel_get_dest(HyocrDownloadPanel *self) { return self->dest; }
const char *hyocr_download_panel_get_endpoint(HyocrDownloadPanel *self) { return self->endpoint; }
GtkWidget *hyocr_download_panel_get_download_button(HyocrDownloadPanel *self) { return self->download_button; }
GtkWidget *hyocr_download_panel_get_cancel_button(HyocrDownloadPanel *self) { return self->cancel_button; }
GtkCheckButton *hyocr_download_panel_get_accept_check(HyocrDownloadPanel *self) { return self->accept_check; }
AdwComboRow *hyocr_download_panel_get_version_row(HyocrDownloadPanel *self) { return self->version_row; }
AdwEntryRow *hyocr_download_panel_get_endpoint_row(HyocrDownloadPanel *self) { return self->endpoint_row; }
const char *hyocr_download_panel_get_size_text(HyocrDownloadPanel *self) { return gtk_label_get_text(self->size_label); }
const char *hyocr_download_panel_get_free_text(HyocrDownloadPanel *self) { return gtk_label_get_text(self->free_label); }
const char *hyocr_download_panel_get_licence_text(HyocrDownloadPanel *self) { return gtk_label_get_text(self->licence_label); }
const char *hyocr_download_panel_get_progress_text(HyocrDownloadPanel *self) { return gtk_label_get_text(self->progress_label); }
const char *hyocr_download_panel_get_error_title(HyocrDownloadPanel *self) { return gtk_label_get_text(self->error_title); }
const char *hyocr_download_panel_get_error_body(HyocrDownloadPanel *self) { return gtk_label_get_text(self->error_body); }
const char *hyocr_download_panel_get_error_details(HyocrDownloadPanel *self) { return gtk_label_get_text(self->error_details); }

/* ---- GObject ---- */

static void hyocr_download_panel_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(object);
    switch (id) {
    case PROP_BUSY: g_value_set_boolean(value, is_busy_state(self->state)); break;
    case PROP_FRACTION: g_value_set_double(value, self->fraction); break;
    case PROP_STATUS: g_value_set_string(value, hyocr_download_panel_get_status(self)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

static void hyocr_download_panel_dispose(GObject *object)
{
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(object);
    g_clear_handle_id(&self->plan_idle, g_source_remove);
    cancel_plan(self);
    /* A running thread sees the cancellation soon; its result is then ignored. */
    if (self->work_cancellable) g_cancellable_cancel(self->work_cancellable);
    g_clear_object(&self->work_cancellable);
    g_clear_pointer(&self->share, share_unref);
    g_clear_object(&self->settings);
    gtk_widget_dispose_template(GTK_WIDGET(object), HYOCR_TYPE_DOWNLOAD_PANEL);
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(object)))) gtk_widget_unparent(child);
    G_OBJECT_CLASS(hyocr_download_panel_parent_class)->dispose(object);
}

static void hyocr_download_panel_finalize(GObject *object)
{
    HyocrDownloadPanel *self = HYOCR_DOWNLOAD_PANEL(object);
    g_free(self->dest_parent);
    g_free(self->dest);
    g_free(self->endpoint);
    g_free(self->planned_for);
    g_free(self->status);
    G_OBJECT_CLASS(hyocr_download_panel_parent_class)->finalize(object);
}

static void install_properties_and_signals(GObjectClass *object_class)
{
    props[PROP_BUSY] = g_param_spec_boolean("busy", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    props[PROP_FRACTION] = g_param_spec_double("fraction", NULL, NULL, 0.0, 1.0, 0.0,
                                               G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    props[PROP_STATUS] = g_param_spec_string("status", NULL, NULL, "", G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(object_class, N_PROPS, props);
    signals[SIGNAL_MODEL_READY] = g_signal_new("model-ready", G_TYPE_FROM_CLASS(object_class), G_SIGNAL_RUN_LAST, 0,
                                               NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
    signals[SIGNAL_PROGRESS] = g_signal_new("progress", G_TYPE_FROM_CLASS(object_class), G_SIGNAL_RUN_LAST, 0,
                                            NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void bind_children(GtkWidgetClass *wc)
{
    gtk_widget_class_set_template_from_resource(wc, "/io/github/hyocr/Hyocr/hyocr-download-panel.ui");
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, version_row);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, dest_row);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, dest_button);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, size_row);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, plan_spinner);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, size_label);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, free_label);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, endpoint_row);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, licence_label);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, accept_check);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, error_box);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, error_icon);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, error_title);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, error_body);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, error_details);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, details_expander);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, progress_box);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, phase_label);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, progress_bar);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, progress_label);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, download_button);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, cancel_button);
    gtk_widget_class_bind_template_child(wc, HyocrDownloadPanel, folder_button);
}

static void hyocr_download_panel_class_init(HyocrDownloadPanelClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->get_property = hyocr_download_panel_get_property;
    object_class->dispose = hyocr_download_panel_dispose;
    object_class->finalize = hyocr_download_panel_finalize;
    widget_class->map = hyocr_download_panel_map;
    install_properties_and_signals(object_class);
    bind_children(widget_class);
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void setup_texts(HyocrDownloadPanel *self)
{
    const char *versions[] = { _("1.5 (recommended)"), _("1.0"), NULL };
    g_autoptr(GtkStringList) list = gtk_string_list_new(versions);
    adw_combo_row_set_model(self->version_row, G_LIST_MODEL(list));
    /* The notice lives in the engine (download.h) so the CLI shows the same words. */
    g_autofree char *notice = g_markup_escape_text(_(HYOCR_DOWNLOAD_LICENCE_NOTICE), -1);
    g_autofree char *markup = g_strdup_printf("%s <a href=\"%s\">%s</a>", notice, LICENCE_URL, _("Read the licence"));
    gtk_label_set_markup(self->licence_label, markup);
}

static void hyocr_download_panel_init(HyocrDownloadPanel *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    setup_texts(self);
    g_signal_connect(self->version_row, "notify::selected", G_CALLBACK(on_version_changed), self);
    g_signal_connect(self->accept_check, "toggled", G_CALLBACK(on_accept_toggled), self);
    g_signal_connect(self->download_button, "clicked", G_CALLBACK(on_download_clicked), self);
    g_signal_connect(self->cancel_button, "clicked", G_CALLBACK(on_cancel_clicked), self);
    g_signal_connect(self->folder_button, "clicked", G_CALLBACK(on_folder_clicked), self);
    g_signal_connect(self->dest_button, "clicked", G_CALLBACK(on_dest_clicked), self);
    g_signal_connect(self->endpoint_row, "apply", G_CALLBACK(on_endpoint_apply), self);
    update_dest(self);
    show_estimate(self);
    sync_controls(self);
}

GtkWidget *hyocr_download_panel_new(GSettings *settings)
{
    HyocrDownloadPanel *self = g_object_new(HYOCR_TYPE_DOWNLOAD_PANEL, NULL);
    self->settings = settings ? g_object_ref(settings) : NULL;
    load_endpoint(self);
    return GTK_WIDGET(self);
}
