/* hyocr-gtk — the window's side of the model download: the panel on the model page,
 * its progress in the header (subtitle) and in a bar along the top of the window,
 * which stay visible whatever page is shown, and loading the model it hands over. */
#include "hyocr-window-private.h"
#include "hyocr-build-config.h"
#include "hyocr-model-status.h"
#if HYOCR_HAVE_DOWNLOAD
#include "hyocr-download-panel.h"
#endif
#include <glib/gi18n.h>

#if HYOCR_HAVE_DOWNLOAD

/* The same path as choosing a folder in the window: remembered in the settings, and it
 * replaces a --model folder of this session; then one (immediate) reload. */
static void on_model_ready(HyocrDownloadPanel *panel, const char *folder, HyocrWindow *self)
{
    g_settings_set_string(self->settings, "model-folder", folder);
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    if (HYOCR_IS_APPLICATION(app) && hyocr_application_get_model_override(HYOCR_APPLICATION(app))) {
        hyocr_application_set_model_override(HYOCR_APPLICATION(app), NULL);   /* reloads the active window */
        if (gtk_application_get_active_window(app) == GTK_WINDOW(self)) return;
    }
    hyocr_window_reload_engine(self);   /* which drops the delayed reload the setting asked for */
}

static void show_download_status(HyocrWindow *self)
{
    HyocrDownloadPanel *panel = HYOCR_DOWNLOAD_PANEL(self->download_panel);
    gboolean busy = hyocr_download_panel_is_busy(panel) &&
                    hyocr_download_panel_get_state(panel) == HYOCR_DOWNLOAD_PANEL_DOWNLOADING;
    gtk_widget_set_visible(self->download_bar, busy);
    gtk_progress_bar_set_fraction(GTK_PROGRESS_BAR(self->download_bar), hyocr_download_panel_get_fraction(panel));
    gtk_progress_bar_set_text(GTK_PROGRESS_BAR(self->download_bar), hyocr_download_panel_get_status(panel));
    gtk_widget_set_tooltip_text(self->download_bar, hyocr_download_panel_get_status(panel));
    if (busy) adw_window_title_set_subtitle(self->window_title, hyocr_download_panel_get_status(panel));
    else if (hyocr_worker_get_state(self->worker) == HYOCR_WORKER_FAILED)
        adw_window_title_set_subtitle(self->window_title, _("No model loaded"));
}

static void on_panel_changed(HyocrDownloadPanel *panel, GParamSpec *pspec, HyocrWindow *self)
{
    show_download_status(self);
}

/* A device problem is not solved by downloading, so the offer is only for a
 * missing or bad model. */
void hyocr_window_sync_download(HyocrWindow *self)
{
    if (hyocr_worker_get_state(self->worker) != HYOCR_WORKER_FAILED) return;
    HyocrModelStatus *status = HYOCR_MODEL_STATUS(self->model_status);
    hyocr_model_status_set_download_visible(status,
                                            hyocr_model_status_get_problem(status) != HYOCR_MODEL_PROBLEM_DEVICE);
    hyocr_download_panel_reset(HYOCR_DOWNLOAD_PANEL(self->download_panel));
    show_download_status(self);
}

static GtkWidget *make_bar(HyocrWindow *self)
{
    GtkWidget *bar = gtk_progress_bar_new();
    gtk_widget_add_css_class(bar, "osd");
    gtk_widget_set_valign(bar, GTK_ALIGN_START);
    gtk_widget_set_can_target(bar, FALSE);
    gtk_widget_set_visible(bar, FALSE);
    gtk_accessible_update_property(GTK_ACCESSIBLE(bar), GTK_ACCESSIBLE_PROPERTY_LABEL, _("Model download"), -1);
    GtkWidget *overlay = adw_toast_overlay_get_child(self->toast_overlay);
    gtk_overlay_add_overlay(GTK_OVERLAY(overlay), bar);
    return bar;
}

void hyocr_window_setup_download(HyocrWindow *self)
{
    self->download_panel = hyocr_download_panel_new(self->settings);
    GtkBox *area = hyocr_model_status_get_download_area(HYOCR_MODEL_STATUS(self->model_status));
    gtk_box_append(area, self->download_panel);
    self->download_bar = make_bar(self);
    g_signal_connect(self->download_panel, "model-ready", G_CALLBACK(on_model_ready), self);
    g_signal_connect(self->download_panel, "notify::busy", G_CALLBACK(on_panel_changed), self);
    g_signal_connect(self->download_panel, "notify::fraction", G_CALLBACK(on_panel_changed), self);
    g_signal_connect(self->download_panel, "notify::status", G_CALLBACK(on_panel_changed), self);
}

#else

void hyocr_window_setup_download(HyocrWindow *self)
{
}

void hyocr_window_sync_download(HyocrWindow *self)
{
}

#endif

GtkWidget *hyocr_window_get_download_panel(HyocrWindow *self) { return self->download_panel; }
GtkProgressBar *hyocr_window_get_download_bar(HyocrWindow *self)
{
    return self->download_bar ? GTK_PROGRESS_BAR(self->download_bar) : NULL;
}
