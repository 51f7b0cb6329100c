/* hyocr-gtk — Capture Screen Region: the XDG Screenshot portal (interactive, so the
 * user picks the region, on Wayland and in the Flatpak), the picture run with the
 * chosen preset, and the answer put on the clipboard with a notification whose
 * "Open" shows it. A cancelled portal dialog does nothing.
 *
 * `hyocr-gtk --capture` with no instance running (a global shortcut) never shows the
 * window, and the process ends once the answer is out: on the clipboard and handed to
 * the clipboard manager, in the history, notified. The notification's Open then starts
 * the app again on that history entry (app.open-history-entry, by D-Bus activation). */
#include "hyocr-window-private.h"
#include "hyocr-application-private.h"
#include "hyocr-json.h"
#include <glib/gi18n.h>
#include <libportal-gtk4/portal-gtk4.h>
#ifdef GDK_WINDOWING_X11
#include <gdk/x11/gdkx.h>
#endif

/* A clipboard manager answers at once: this only bounds the wait on one that never does. */
#define STORE_WAIT_S 10

/* What goes on the clipboard: the text, or the JSON of extract-fields re-indented. */
static char *clipboard_text(HyocrJob *job)
{
    const char *text = hyocr_job_get_text(job);
    if (hyocr_job_get_options(job)->preset == HYOCR_PRESET_EXTRACT_FIELDS) {
        char *json = hyocr_json_prettify(text);
        if (json) return json;
    }
    return g_strdup(text);
}

static void release_hold(HyocrWindow *self)
{
    if (self->capture_hold) g_application_release(self->capture_hold);
    g_clear_object(&self->capture_hold);
}

/* The unseen window goes, and with it the process (the window held the app, as our hold
 * did: nothing else does); a window the user opened meanwhile stays. */
static void end_unseen(HyocrWindow *self)
{
    release_hold(self);
    if (!gtk_widget_get_visible(GTK_WIDGET(self))) gtk_window_destroy(GTK_WINDOW(self));
}

/* GDK's X11 store does not heed its cancellable: a manager that never answers is left
 * behind here, and the process ends as if there were none. */
static gboolean on_store_timeout(gpointer data)
{
    HyocrWindow *self = data;
    self->store_timeout = 0;
    g_cancellable_cancel(self->store_cancel);
    g_clear_object(&self->store_cancel);
    g_debug("capture: the clipboard manager did not answer in %d s", STORE_WAIT_S);
    end_unseen(self);
    return G_SOURCE_REMOVE;
}

static void on_stored(GObject *source, GAsyncResult *res, gpointer data)
{
    g_autoptr(HyocrWindow) self = data;
    g_autoptr(GError) error = NULL;
    gboolean stored = gdk_clipboard_store_finish(GDK_CLIPBOARD(source), res, &error);
    if (!self->store_cancel) return;   /* timed out, or the window went meanwhile */
    g_clear_handle_id(&self->store_timeout, g_source_remove);
    g_clear_object(&self->store_cancel);
    if (!stored) g_debug("capture: the clipboard manager did not take the text: %s", error->message);
#ifdef GDK_WINDOWING_X11
    /* X11 with no clipboard manager (a bare window manager): the text lives only in this
     * process and would go with it. The model goes with the window, and the process stays,
     * holding just the clipboard, until something else is copied. (On Wayland the
     * compositor keeps the clipboard or not, and nothing here can tell: the process ends.) */
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    if (!stored && GDK_IS_X11_DISPLAY(gdk_clipboard_get_display(GDK_CLIPBOARD(source))) &&
        g_error_matches(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED) && HYOCR_IS_APPLICATION(app))
        hyocr_application_keep_clipboard(HYOCR_APPLICATION(app), GDK_CLIPBOARD(source));
#endif
    end_unseen(self);
}

/* A capture that started with the window unseen has its answer out: the process may end,
 * unless another capture is under way or the user opened the window meanwhile. */
static void finish_unseen(HyocrWindow *self, gboolean copied)
{
    if (!self->capture_hold || self->capturing || self->store_cancel) return;
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) other = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (!hyocr_job_is_finished(other)) return;   /* its end ends things */
    }
    if (!copied || gtk_widget_get_visible(GTK_WIDGET(self))) {
        end_unseen(self);
        return;
    }
    /* The clipboard manager copies the text now, so that it outlives the process. */
    self->store_cancel = g_cancellable_new();
    self->store_timeout = g_timeout_add_seconds(STORE_WAIT_S, on_store_timeout, self);
    gdk_clipboard_store_async(gtk_widget_get_clipboard(GTK_WIDGET(self)), G_PRIORITY_DEFAULT, self->store_cancel,
                              on_stored, g_object_ref(self));
}

static void on_capture_state(HyocrJob *job, GParamSpec *pspec, HyocrWindow *self)
{
    if (!hyocr_job_is_finished(job)) return;
    g_signal_handlers_disconnect_by_func(job, on_capture_state, self);
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    gboolean done = hyocr_job_get_state(job) == HYOCR_JOB_DONE;
    if (done) {
        g_autofree char *text = clipboard_text(job);
        gdk_clipboard_set_text(gtk_widget_get_clipboard(GTK_WIDGET(self)), text);
    }
    /* stored before the notification names the entry, and before the process may end */
    hyocr_window_history_finish(self, job);
    if (HYOCR_IS_APPLICATION(app) && hyocr_job_get_state(job) != HYOCR_JOB_CANCELLED)
        hyocr_application_notify_capture(HYOCR_APPLICATION(app), job);
    self->n_captures++;
    finish_unseen(self, done);
}

/* Said where the user looks: a toast in the window, or, for a --capture with the window
 * unseen, a notification (a toast there would be shown to nobody). */
static void capture_failed(HyocrWindow *self, const char *message)
{
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    if (!gtk_widget_get_visible(GTK_WIDGET(self)) && HYOCR_IS_APPLICATION(app))
        hyocr_application_notify_capture_failed(HYOCR_APPLICATION(app), message);
    else
        hyocr_window_toast(self, message);
}

static void on_screenshot(GObject *source, GAsyncResult *res, gpointer data)
{
    g_autoptr(HyocrWindow) self = data;
    g_autoptr(GError) error = NULL;
    g_autofree char *uri = xdp_portal_take_screenshot_finish(XDP_PORTAL(source), res, &error);
    self->capturing = FALSE;
    if (!uri) {
        self->n_captures++;
        /* the user closed the portal's dialog: nothing to say */
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
            g_autofree char *msg = g_strdup_printf(_("The screen could not be captured: %s"), error->message);
            capture_failed(self, msg);
        }
        finish_unseen(self, FALSE);
        return;
    }
    g_autoptr(GFile) file = g_file_new_for_uri(uri);
    g_autoptr(GdkTexture) texture = gdk_texture_new_from_file(file, &error);
    g_autoptr(HyocrJobOptions) opts = texture ? hyocr_job_options_new_from_settings(self->settings, &error) : NULL;
    g_autoptr(HyocrJob) job = opts ? hyocr_job_new_for_texture(texture, _("Screen Capture"), opts, &error) : NULL;
    if (!job) {
        self->n_captures++;
        capture_failed(self, error->message);
        finish_unseen(self, FALSE);
        return;
    }
    g_signal_connect_object(job, "notify::state", G_CALLBACK(on_capture_state), self, 0);
    hyocr_window_add_job(self, job);
}

void hyocr_window_capture(HyocrWindow *self)
{
    if (self->capturing) return;
    if (!self->portal) self->portal = xdp_portal_new();
    self->capturing = TRUE;
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    /* --capture with no window shown: the app stays until the answer is on the clipboard */
    if (!gtk_widget_get_visible(GTK_WIDGET(self)) && app && !self->capture_hold) {
        /* kept, not looked up when released: a destroyed window has no application */
        self->capture_hold = g_object_ref(G_APPLICATION(app));
        g_application_hold(self->capture_hold);
    }
    XdpParent *parent = gtk_widget_get_mapped(GTK_WIDGET(self)) ? xdp_parent_new_gtk(GTK_WINDOW(self)) : NULL;
    xdp_portal_take_screenshot(self->portal, parent, XDP_SCREENSHOT_FLAG_INTERACTIVE, NULL, on_screenshot,
                               g_object_ref(self));
    if (parent) xdp_parent_free(parent);
}

void hyocr_window_clear_capture(HyocrWindow *self)
{
    g_clear_handle_id(&self->store_timeout, g_source_remove);
    if (self->store_cancel) g_cancellable_cancel(self->store_cancel);
    g_clear_object(&self->store_cancel);
    release_hold(self);
    g_clear_object(&self->portal);
}

guint hyocr_window_get_n_captures(HyocrWindow *self) { return self->n_captures; }
