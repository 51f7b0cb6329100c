/* hyocr-gtk — the window's instance struct, shared by hyocr-window.c,
 * hyocr-window-actions.c and hyocr-window-dnd.c. */
#pragma once
#include "hyocr-task-picker.h"
#include "hyocr-window.h"

G_BEGIN_DECLS

struct _HyocrWindow {
    AdwApplicationWindow parent_instance;

    /* template */
    AdwToastOverlay *toast_overlay;
    AdwWindowTitle  *window_title;
    HyocrVramGauge  *gauge;
    GtkWidget       *loading_spinner;
    HyocrTaskPicker *task_picker;
    GtkStack        *main_stack;
    GtkWidget       *loading_box;
    GtkWidget       *model_status;
    GtkListBox      *job_list;
    HyocrResultView *result_view;
    GtkWidget       *drop_hint;
    GtkWidget       *download_panel;   /* hyocr-window-download.c; NULL without the downloader */
    GtkWidget       *download_bar;

    GSettings       *settings;
    HyocrWorker     *worker;
    GListStore      *jobs;
    GtkDropTarget   *drop_target;
    guint            gauge_tick;
    guint            reload_timeout;
    guint            n_toasts;
    char            *last_toast;
};

/* hyocr-window-actions.c */
void hyocr_window_install_actions(HyocrWindowClass *klass);
void hyocr_window_setup_actions(HyocrWindow *self);
void hyocr_window_update_actions(HyocrWindow *self);

/* hyocr-window-dnd.c */
void hyocr_window_setup_drop(HyocrWindow *self);

/* hyocr-window-download.c */
void hyocr_window_setup_download(HyocrWindow *self);
/* The worker's state changed; the model page already shows its problem. */
void hyocr_window_sync_download(HyocrWindow *self);

/* hyocr-window.c */
HyocrJob *hyocr_window_get_selected_job(HyocrWindow *self);

G_END_DECLS
