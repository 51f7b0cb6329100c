/* hyocr-gtk — Capture Screen Region: the XDG Screenshot portal (interactive, so the
 * user picks the region, on Wayland and in the Flatpak), the picture run with the
 * chosen preset, and the answer put on the clipboard with a notification whose
 * "Open" shows it. A cancelled portal dialog does nothing. */
#include "hyocr-window-private.h"
#include "hyocr-application-private.h"
#include "hyocr-json.h"
#include <glib/gi18n.h>
#include <libportal-gtk4/portal-gtk4.h>

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

static void on_capture_state(HyocrJob *job, GParamSpec *pspec, HyocrWindow *self)
{
    if (!hyocr_job_is_finished(job)) return;
    g_signal_handlers_disconnect_by_func(job, on_capture_state, self);
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    if (hyocr_job_get_state(job) == HYOCR_JOB_DONE) {
        g_autofree char *text = clipboard_text(job);
        gdk_clipboard_set_text(gtk_widget_get_clipboard(GTK_WIDGET(self)), text);
    }
    if (HYOCR_IS_APPLICATION(app) && hyocr_job_get_state(job) != HYOCR_JOB_CANCELLED)
        hyocr_application_notify_capture(HYOCR_APPLICATION(app), job);
    self->n_captures++;
    if (self->capture_held && app) {
        self->capture_held = FALSE;
        g_application_release(G_APPLICATION(app));
    }
}

static void release_hold(HyocrWindow *self)
{
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
    if (self->capture_held && app) g_application_release(G_APPLICATION(app));
    self->capture_held = FALSE;
}

static void on_screenshot(GObject *source, GAsyncResult *res, gpointer data)
{
    g_autoptr(HyocrWindow) self = data;
    g_autoptr(GError) error = NULL;
    g_autofree char *uri = xdp_portal_take_screenshot_finish(XDP_PORTAL(source), res, &error);
    self->capturing = FALSE;
    if (!uri) {
        self->n_captures++;
        release_hold(self);
        /* the user closed the portal's dialog: nothing to say */
        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) return;
        g_autofree char *msg = g_strdup_printf(_("The screen could not be captured: %s"), error->message);
        hyocr_window_toast(self, msg);
        return;
    }
    g_autoptr(GFile) file = g_file_new_for_uri(uri);
    g_autoptr(GdkTexture) texture = gdk_texture_new_from_file(file, &error);
    g_autoptr(HyocrJobOptions) opts = texture ? hyocr_job_options_new_from_settings(self->settings, &error) : NULL;
    g_autoptr(HyocrJob) job = opts ? hyocr_job_new_for_texture(texture, _("Screen Capture"), opts, &error) : NULL;
    if (!job) {
        self->n_captures++;
        release_hold(self);
        hyocr_window_toast(self, error->message);
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
    if (!gtk_widget_get_visible(GTK_WIDGET(self)) && app && !self->capture_held) {
        self->capture_held = TRUE;
        g_application_hold(G_APPLICATION(app));
    }
    XdpParent *parent = gtk_widget_get_mapped(GTK_WIDGET(self)) ? xdp_parent_new_gtk(GTK_WINDOW(self)) : NULL;
    xdp_portal_take_screenshot(self->portal, parent, XDP_SCREENSHOT_FLAG_INTERACTIVE, NULL, on_screenshot,
                               g_object_ref(self));
    if (parent) xdp_parent_free(parent);
}

void hyocr_window_clear_capture(HyocrWindow *self)
{
    release_hold(self);
    g_clear_object(&self->portal);
}

guint hyocr_window_get_n_captures(HyocrWindow *self) { return self->n_captures; }
