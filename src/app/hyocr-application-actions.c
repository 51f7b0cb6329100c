/* hyocr-gtk — application actions and accelerators. */
#include "hyocr-application-private.h"
#include "hyocr-window-private.h"
#include "hyocr-build-config.h"
#include "hyocr-preferences.h"
#include <glib/gi18n.h>

static void quit_activated(GSimpleAction *action, GVariant *param, gpointer data)
{
    /* Closed as by their close button: each remembers its size and stops its
     * worker thread cleanly. */
    GList *windows = NULL;
    for (GList *w = gtk_application_get_windows(GTK_APPLICATION(data)); w; w = w->next)
        windows = g_list_prepend(windows, g_object_ref(w->data));
    for (GList *w = windows; w; w = w->next) gtk_window_close(w->data);
    g_list_free_full(windows, g_object_unref);
    /* A window with jobs left asks first; the app ends when the user lets it close. */
    for (GList *w = gtk_application_get_windows(GTK_APPLICATION(data)); w; w = w->next)
        if (HYOCR_IS_WINDOW(w->data)) return;
    g_application_quit(G_APPLICATION(data));
}

static void preferences_activated(GSimpleAction *action, GVariant *param, gpointer data)
{
    HyocrApplication *self = data;
    HyocrWindow *win = hyocr_application_ensure_window(self);
    HyocrPreferences *prefs = hyocr_preferences_new(win);
    gtk_window_present(GTK_WINDOW(prefs));
}

static void about_activated(GSimpleAction *action, GVariant *param, gpointer data)
{
    HyocrWindow *win = hyocr_application_ensure_window(data);
    static const char *developers[] = { "The hyocr developers", NULL };
    GtkWidget *about = g_object_new(ADW_TYPE_ABOUT_WINDOW, "transient-for", win, "modal", TRUE,
                                    "application-name", "hyocr", "application-icon", HYOCR_APP_ID,
                                    "version", HYOCR_VERSION, "developer-name", developers[0],
                                    "developers", developers, "license-type", GTK_LICENSE_GPL_3_0,
                                    "comments", _("Reads the text in images — photos, screenshots, scans, "
                                                  "handwriting — with the HunyuanOCR model, on this computer."),
                                    /* Translators: replace with your names, one per line */
                                    "translator-credits", _("translator-credits"), NULL);
    /* Troubleshooting: where the engine runs, and why not on the GPU when it could not. */
    HyocrWorker *worker = hyocr_window_get_worker(win);
    const char *note = hyocr_worker_get_gpu_note(worker);
    g_autofree char *debug = g_strdup_printf("hyocr %s\n%s\n%s%s", HYOCR_VERSION,
                                             hyocr_worker_is_cpu(worker) ? _("The engine runs on the CPU.")
                                                                         : _("The engine runs on the GPU."),
                                             note ? note : "", note ? "\n" : "");
    adw_about_window_set_debug_info(ADW_ABOUT_WINDOW(about), debug);
    adw_about_window_add_legal_section(ADW_ABOUT_WINDOW(about), _("HunyuanOCR model"),
                                       "Powered by Tencent Hunyuan", GTK_LICENSE_CUSTOM,
                                       _("The model is not part of this app; it is downloaded separately "
                                         "and is licensed under the Tencent Hunyuan Community License, "
                                         "which comes with it."));
    gtk_window_present(GTK_WINDOW(about));
}

static void show_job_activated(GSimpleAction *action, GVariant *param, gpointer data)
{
    HyocrWindow *win = hyocr_application_ensure_window(data);
    guint position;
    HyocrJob *job = hyocr_window_find_job(win, g_variant_get_uint32(param), &position);
    if (job) hyocr_window_select_job(win, job);
    gtk_window_present(GTK_WINDOW(win));
}

/* A notification's action, maybe in a process D-Bus started for it (the one that sent it,
 * a --capture, has ended): the history keeps the entry. */
static void open_history_entry_activated(GSimpleAction *action, GVariant *param, gpointer data)
{
    HyocrWindow *win = hyocr_application_ensure_window(data);
    hyocr_window_history_show(win, g_variant_get_int64(param));
    gtk_window_present(GTK_WINDOW(win));
}

static const GActionEntry app_entries[] = {
    { "quit", quit_activated, NULL, NULL, NULL, { 0 } },
    { "preferences", preferences_activated, NULL, NULL, NULL, { 0 } },
    { "about", about_activated, NULL, NULL, NULL, { 0 } },
    { "show-job", show_job_activated, "u", NULL, NULL, { 0 } },
    { "open-history-entry", open_history_entry_activated, "x", NULL, NULL, { 0 } },
};

/* App accelerators take the key before any widget does, so only keys no
 * widget wants live here; the window binds the rest (see hyocr-window-actions.c). */
static const struct {
    const char *action;
    const char *accels[3];
} app_accels[] = {
    { "app.quit", { "<Primary>q", NULL } },
    { "app.preferences", { "<Primary>comma", NULL } },
    { "window.close", { "<Primary>w", NULL } },
};

void hyocr_application_setup_actions(HyocrApplication *self)
{
    g_action_map_add_action_entries(G_ACTION_MAP(self), app_entries, G_N_ELEMENTS(app_entries), self);
    for (gsize i = 0; i < G_N_ELEMENTS(app_accels); i++)
        gtk_application_set_accels_for_action(GTK_APPLICATION(self), app_accels[i].action, app_accels[i].accels);
}
