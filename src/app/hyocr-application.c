/* hyocr-gtk — application. */
#include "hyocr-application-private.h"
#include "hyocr-window-private.h"
#include "hyocr-build-config.h"
#include <glib/gi18n.h>

G_DEFINE_FINAL_TYPE(HyocrApplication, hyocr_application, ADW_TYPE_APPLICATION)

#define NOTIFICATION_ID "job-finished"

static const GOptionEntry option_entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, NULL, N_("Model folder to use for this session"), N_("DIR") },
    { "version", 0, 0, G_OPTION_ARG_NONE, NULL, N_("Show the version and exit"), NULL },
    { "capture", 0, 0, G_OPTION_ARG_NONE, NULL,
      N_("Capture a region of the screen and put its text on the clipboard (to bind to a shortcut)"), NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, NULL, NULL, N_("[IMAGE…]") },
    { NULL },
};

HyocrWindow *hyocr_application_ensure_window(HyocrApplication *self)
{
    GtkWindow *win = gtk_application_get_active_window(GTK_APPLICATION(self));
    if (HYOCR_IS_WINDOW(win)) return HYOCR_WINDOW(win);
    return hyocr_window_new(self);
}

static void hyocr_application_activate(GApplication *app)
{
    gtk_window_present(GTK_WINDOW(hyocr_application_ensure_window(HYOCR_APPLICATION(app))));
}

static void hyocr_application_open(GApplication *app, GFile **files, int n_files, const char *hint)
{
    HyocrWindow *win = hyocr_application_ensure_window(HYOCR_APPLICATION(app));
    gtk_window_present(GTK_WINDOW(win));
    hyocr_window_add_files(win, files, (guint)n_files);
}

static int hyocr_application_handle_local_options(GApplication *app, GVariantDict *options)
{
    if (g_variant_dict_contains(options, "version")) {
        g_print("hyocr-gtk %s\n", HYOCR_VERSION);
        return 0;
    }
    return -1;
}

/* Paths on the command line are relative to the caller's folder, which may not
 * be ours when a second invocation forwards them to the running instance. */
static GPtrArray *files_from_args(GApplicationCommandLine *cmdline, GVariantDict *options)
{
    GPtrArray *files = g_ptr_array_new_with_free_func(g_object_unref);
    g_autofree const char **args = NULL;
    if (g_variant_dict_lookup(options, G_OPTION_REMAINING, "^a&ay", &args))
        for (const char **a = args; *a; a++)
            g_ptr_array_add(files, g_application_command_line_create_file_for_arg(cmdline, *a));
    return files;
}

static int hyocr_application_command_line(GApplication *app, GApplicationCommandLine *cmdline)
{
    HyocrApplication *self = HYOCR_APPLICATION(app);
    GVariantDict *options = g_application_command_line_get_options_dict(cmdline);
    const char *model = NULL;
    if (g_variant_dict_lookup(options, "model", "^&ay", &model)) {
        g_autoptr(GFile) dir = g_application_command_line_create_file_for_arg(cmdline, model);
        g_autofree char *path = g_file_get_path(dir);
        hyocr_application_set_model_override(self, path);
    }
    g_autoptr(GPtrArray) files = files_from_args(cmdline, options);
    HyocrWindow *win = hyocr_application_ensure_window(self);
    if (g_variant_dict_contains(options, "capture")) {
        /* the window stays hidden unless it is shown already; "Open" shows it */
        hyocr_window_capture(win);
        if (!files->len) return 0;
    }
    gtk_window_present(GTK_WINDOW(win));
    if (files->len) hyocr_window_add_files(win, (GFile **)files->pdata, files->len);
    return 0;
}

static void hyocr_application_startup(GApplication *app)
{
    G_APPLICATION_CLASS(hyocr_application_parent_class)->startup(app);
    hyocr_application_setup_actions(HYOCR_APPLICATION(app));
}

static void on_kept_clipboard_changed(GdkClipboard *clipboard, HyocrApplication *self)
{
    if (gdk_clipboard_is_local(clipboard)) return;   /* still ours: a new capture's, say */
    g_signal_handlers_disconnect_by_func(clipboard, on_kept_clipboard_changed, self);
    g_clear_object(&self->kept_clipboard);
    g_application_release(G_APPLICATION(self));
}

void hyocr_application_keep_clipboard(HyocrApplication *self, GdkClipboard *clipboard)
{
    /* another client may have copied already, before the store was even answered */
    if (self->kept_clipboard || !gdk_clipboard_is_local(clipboard)) return;
    self->kept_clipboard = g_object_ref(clipboard);
    g_application_hold(G_APPLICATION(self));
    g_signal_connect(clipboard, "changed", G_CALLBACK(on_kept_clipboard_changed), self);
}

static void hyocr_application_finalize(GObject *object)
{
    HyocrApplication *self = HYOCR_APPLICATION(object);
    if (self->kept_clipboard) g_signal_handlers_disconnect_by_func(self->kept_clipboard, on_kept_clipboard_changed, self);
    g_clear_object(&self->kept_clipboard);
    g_free(self->model_override);
    G_OBJECT_CLASS(hyocr_application_parent_class)->finalize(object);
}

static void hyocr_application_class_init(HyocrApplicationClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GApplicationClass *app_class = G_APPLICATION_CLASS(klass);
    object_class->finalize = hyocr_application_finalize;
    app_class->activate = hyocr_application_activate;
    app_class->open = hyocr_application_open;
    app_class->startup = hyocr_application_startup;
    app_class->command_line = hyocr_application_command_line;
    app_class->handle_local_options = hyocr_application_handle_local_options;
}

static void hyocr_application_init(HyocrApplication *self)
{
    g_application_add_main_option_entries(G_APPLICATION(self), option_entries);
    g_application_set_option_context_parameter_string(G_APPLICATION(self), _("[IMAGE…]"));
    g_application_set_option_context_summary(G_APPLICATION(self),
                                             _("Read the text in images with the HunyuanOCR model, on this computer."));
}

HyocrApplication *hyocr_application_new(GApplicationFlags extra_flags)
{
    return g_object_new(HYOCR_TYPE_APPLICATION, "application-id", HYOCR_APP_ID,
                        "flags", G_APPLICATION_HANDLES_OPEN | G_APPLICATION_HANDLES_COMMAND_LINE | extra_flags,
                        "resource-base-path", "/io/github/hyocr/Hyocr", NULL);
}

const char *hyocr_application_get_model_override(HyocrApplication *self)
{
    return self->model_override;
}

void hyocr_application_set_model_override(HyocrApplication *self, const char *folder)
{
    g_free(self->model_override);
    self->model_override = folder && *folder ? g_strdup(folder) : NULL;
    GtkWindow *win = gtk_application_get_active_window(GTK_APPLICATION(self));
    if (HYOCR_IS_WINDOW(win)) hyocr_window_reload_engine(HYOCR_WINDOW(win));
}

static char *notification_body(HyocrJob *job)
{
    if (hyocr_job_get_state(job) != HYOCR_JOB_DONE)
        return g_strdup_printf("%s: %s", hyocr_job_get_title(job), hyocr_job_get_message(job));
    /* clamped: g_utf8_substring reads past the end of a shorter text */
    const char *text = hyocr_job_get_text(job);
    g_autofree char *start = g_utf8_substring(text, 0, MIN(g_utf8_strlen(text, -1), 120));
    return g_strdup_printf("%s: %s", hyocr_job_get_title(job), g_strstrip(start));
}

/* A finished job's notification, titled by how it ended; clicking it shows the job, and so does
 * its Open button when it has one (a capture's: its text went to the clipboard, not a window).
 * A stored job is named by its history entry: the notification outlives a --capture process,
 * and its action then starts the app again (DBusActivatable) on that entry. */
static void send_job_notification(HyocrApplication *self, HyocrJob *job, const char *id, const char *title_done,
                                  const char *title_failed, gboolean open)
{
    gboolean ok = hyocr_job_get_state(job) == HYOCR_JOB_DONE;
    g_autoptr(GNotification) n = g_notification_new(ok ? title_done : title_failed);
    g_autofree char *body = notification_body(job);
    g_notification_set_body(n, body);
    g_autoptr(GIcon) icon = g_themed_icon_new(HYOCR_APP_ID);
    g_notification_set_icon(n, icon);
    gint64 entry = hyocr_job_get_history_id(job);
    g_autoptr(GVariant) target = g_variant_ref_sink(entry ? g_variant_new_int64(entry)
                                                          : g_variant_new_uint32(hyocr_job_get_id(job)));
    const char *action = entry ? "app.open-history-entry" : "app.show-job";
    g_notification_set_default_action_and_target_value(n, action, target);
    if (open) g_notification_add_button_with_target_value(n, _("Open"), action, target);
    self->n_notifications++;
    /* Without a session bus nobody would show it, and GLib would complain. */
    if (g_application_get_dbus_connection(G_APPLICATION(self)))
        g_application_send_notification(G_APPLICATION(self), id, n);
}

void hyocr_application_notify_job(HyocrApplication *self, HyocrJob *job)
{
    send_job_notification(self, job, NOTIFICATION_ID, _("Text Recognized"), _("A Job Failed"), FALSE);
}

void hyocr_application_notify_capture(HyocrApplication *self, HyocrJob *job)
{
    send_job_notification(self, job, "capture", _("Text Copied"), _("The Capture Was Not Read"), TRUE);
}

void hyocr_application_notify_capture_failed(HyocrApplication *self, const char *message)
{
    g_autoptr(GNotification) n = g_notification_new(_("The Screen Was Not Captured"));
    g_notification_set_body(n, message);
    g_autoptr(GIcon) icon = g_themed_icon_new(HYOCR_APP_ID);
    g_notification_set_icon(n, icon);
    self->n_notifications++;
    if (g_application_get_dbus_connection(G_APPLICATION(self)))
        g_application_send_notification(G_APPLICATION(self), "capture", n);
}

guint hyocr_application_get_n_notifications(HyocrApplication *self)
{
    return self->n_notifications;
}
