/* hyocr-gtk — the window's instance struct, shared by hyocr-window.c,
 * hyocr-window-actions.c, hyocr-window-dnd.c and hyocr-window-download.c, and
 * what the tests and the screenshot tool read of the window. */
#pragma once
#include "hyocr-history-view.h"
#include "hyocr-task-picker.h"
#include "hyocr-window.h"

G_BEGIN_DECLS

struct _HyocrWindow {
    AdwApplicationWindow parent_instance;

    /* template */
    AdwToastOverlay *toast_overlay;
    AdwWindowTitle  *window_title;
    HyocrVramGauge  *gauge;
    GtkWidget       *capture_button;
    GtkWidget       *loading_spinner;
    HyocrTaskPicker *task_picker;
    GtkStack        *main_stack;
    GtkRevealer     *problem_revealer;
    GtkLabel        *problem_label;
    GtkWidget       *trust_button;      /* on the banner: a server's certificate refused */
    GtkWidget       *loading_box;
    GtkWidget       *model_status;
    AdwLeaflet      *jobs_leaflet;
    GtkWidget       *sidebar;
    GtkListBox      *job_list;
    HyocrResultView *result_view;
    GtkWidget       *drop_hint;
    GtkWidget       *download_panel;   /* hyocr-window-download.c; NULL without the downloader */
    GtkWidget       *download_bar;
    HyocrHistoryView *history_view;

    GSettings       *settings;
    HyocrWorker     *worker;
    GListStore      *jobs;
    GtkDropTarget   *drop_target;
    guint            gauge_tick;
    guint            reload_timeout;
    guint            n_toasts;
    char            *last_toast;
    GtkWidget       *password_dialog;   /* the one asking now (weak) */
    hyocr_history   *history;           /* hyocr-window-history.c; NULL when off */
    gboolean         history_warned;
    gboolean         showing_history;   /* the history page instead of the queue */
    gboolean         history_asked;     /* … because the user asked, not at start */
    GSimpleAction   *history_action;    /* win.show-history, its state */
    GtkWidget       *close_dialog;      /* hyocr-window-guard.c: asking before closing */
    gboolean         close_confirmed;
    GArray          *removed;           /* the last removal's jobs, for Undo */
    AdwToast        *undo_toast;        /* its toast while shown */
    struct _XdpPortal *portal;          /* hyocr-window-capture.c */
    gboolean         capturing;
    GApplication    *capture_hold;      /* held while an unseen capture is under way */
    guint            n_captures;        /* captures ended (answered, cancelled or failed) */
    GCancellable    *store_cancel;      /* the clipboard manager is copying the text */
    guint            store_timeout;
    guint            n_history_writes;
    char            *server_key;        /* typed in Preferences this session (the keyring keeps it too) */
    gboolean         gauge_asking;      /* a server's /metrics is being asked */
    char            *server_figures;    /* what the gauge says of the server */
};

/* hyocr-window-actions.c */
void hyocr_window_install_actions(HyocrWindowClass *klass);
void hyocr_window_setup_actions(HyocrWindow *self);
void hyocr_window_update_actions(HyocrWindow *self);

/* hyocr-window-save.c: "Save as…" (a dialog, then hyocr_window_save_to) */
void     hyocr_window_save(HyocrWindow *self);
/* Where the dialog opens: the image's folder, else Documents (else home). */
GFile   *hyocr_window_save_folder(HyocrJob *job);
/* The path written for a name typed in the dialog: the chosen filter's ending when
 * the user picked a filter (or the name has no ending hyocr writes), else the name's. */
char    *hyocr_window_save_path(const char *path, const char *filter_ext, gboolean filter_chosen);
/* Writes the selected job's result, or its whole document for a page, to file in the format
 * its name's ending says, on a thread. */
void     hyocr_window_save_to(HyocrWindow *self, GFile *file, GAsyncReadyCallback done, gpointer user_data);
gboolean hyocr_window_save_finish(HyocrWindow *self, GAsyncResult *res, GError **error);

/* hyocr-window-actions.c */
/* Open's filter: the MIME types of the formats the engine reads (hyocr_formats). */
GtkFileFilter *hyocr_window_open_filter_new(void);

/* hyocr-window-dnd.c */
void hyocr_window_setup_drop(HyocrWindow *self);

/* hyocr-window-download.c */
void hyocr_window_setup_download(HyocrWindow *self);
/* The worker's state changed; the model page already shows its problem. */
void hyocr_window_sync_download(HyocrWindow *self);

/* hyocr-window-history.c */
void      hyocr_window_setup_history(HyocrWindow *self);
void      hyocr_window_close_history(HyocrWindow *self);
/* A job queued: stored as queued; a job ended: its result stored. */
void      hyocr_window_history_record(HyocrWindow *self, HyocrJob *job);
void      hyocr_window_history_finish(HyocrWindow *self, HyocrJob *job);
/* An entry shown again as a finished job, selected; NULL (and a toast) when it cannot be. */
HyocrJob *hyocr_window_history_open(HyocrWindow *self, gint64 id);
/* The job of an entry selected: the one in the list already, else the entry opened. */
HyocrJob *hyocr_window_history_show(HyocrWindow *self, gint64 id);
/* An entry's image queued again with the options it had (stored as a new entry). */
HyocrJob *hyocr_window_history_run_again(HyocrWindow *self, gint64 id);

/* hyocr-window-capture.c */
/* Capture Screen Region: the portal's interactive screenshot, run with the preset;
 * the answer goes on the clipboard with a notification. */
void      hyocr_window_capture(HyocrWindow *self);
void      hyocr_window_clear_capture(HyocrWindow *self);
guint     hyocr_window_get_n_captures(HyocrWindow *self);

/* hyocr-window-guard.c */
void      hyocr_window_setup_guard(HyocrWindow *self);
void      hyocr_window_clear_guard(HyocrWindow *self);
/* TRUE when the window may close now; else it asks (jobs running or waiting) and
 * closes itself when the user agrees. */
gboolean  hyocr_window_confirm_close(HyocrWindow *self);
/* Removals with Undo (a toast): one job (cancelled if it runs), or the finished ones
 * but those whose result the history has not stored. */
void      hyocr_window_remove_job(HyocrWindow *self, guint id);
guint     hyocr_window_remove_finished(HyocrWindow *self);
guint     hyocr_window_undo_remove(HyocrWindow *self);

/* hyocr-window.c */
/* A job that ended earlier (from the history) into the list, selected, never queued. */
void      hyocr_window_add_finished_job(HyocrWindow *self, HyocrJob *job);
/* The history page instead of the queue, or back. */
void      hyocr_window_show_history(HyocrWindow *self, gboolean show);
HyocrJob *hyocr_window_get_selected_job(HyocrWindow *self);
void      hyocr_window_show_jobs(HyocrWindow *self);   /* the list, on a narrow window */

/* For the tests and the screenshot tool. */
/* What the gauge's tick does: the engine's figures (or why there are none) now. */
void             hyocr_window_update_gauge(HyocrWindow *self);
/* Queues a job made elsewhere (options the settings cannot express, answers the test writes). */
void             hyocr_window_add_job(HyocrWindow *self, HyocrJob *job);
GListModel      *hyocr_window_get_jobs(HyocrWindow *self);
HyocrResultView *hyocr_window_get_result_view(HyocrWindow *self);
HyocrVramGauge  *hyocr_window_get_gauge(HyocrWindow *self);
GtkDropTarget   *hyocr_window_get_drop_target(HyocrWindow *self);
GtkWidget       *hyocr_window_get_model_status(HyocrWindow *self);
const char      *hyocr_window_get_page(HyocrWindow *self);            /* "empty", "model", "jobs" */
gboolean         hyocr_window_is_drop_hovered(HyocrWindow *self);
guint            hyocr_window_get_n_toasts(HyocrWindow *self);
const char      *hyocr_window_get_last_toast(HyocrWindow *self);
/* The banner over the queue when the engine cannot start with the settings, or NULL. */
const char      *hyocr_window_get_problem(HyocrWindow *self);
/* The banner's "Trust Certificate…": asks whether to trust the certificate the server
 * presented (hyocr-certificate-dialog.h); NULL when the banner names none. */
AdwMessageDialog *hyocr_window_ask_trust(HyocrWindow *self);
/* The dialog asking for an encrypted PDF's password, while it is open (an AdwMessageDialog
 * whose extra child is the password entry). */
GtkWidget       *hyocr_window_get_password_dialog(HyocrWindow *self);
/* The model download panel on the model page and the window's bar for its progress;
 * NULL in a build without the downloader. */
GtkWidget       *hyocr_window_get_download_panel(HyocrWindow *self);
GtkProgressBar  *hyocr_window_get_download_bar(HyocrWindow *self);
hyocr_history   *hyocr_window_get_history(HyocrWindow *self);
/* The dialog asking whether to stop the jobs and close, while it is open. */
GtkWidget       *hyocr_window_get_close_dialog(HyocrWindow *self);
HyocrHistoryView *hyocr_window_get_history_view(HyocrWindow *self);
/* Results stored in the history since the window opened. */
guint            hyocr_window_get_n_history_writes(HyocrWindow *self);

G_END_DECLS
