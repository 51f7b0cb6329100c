/* hyocr-gtk — window actions: open, paste, save, copy, cancel, remove, the
 * preset shortcuts, choosing the model folder; and their key bindings. */
#include "hyocr-window-private.h"
#include <glib/gi18n.h>
#include <string.h>

/* ---- open ---- */

GtkFileFilter *hyocr_window_open_filter_new(void)
{
    GtkFileFilter *filter = gtk_file_filter_new();
    gtk_file_filter_set_name(filter, _("Images and Documents"));
    size_t n;   /* what the engine reads (document.h), nothing more: the CLI's formats */
    const hyocr_format_info *formats = hyocr_formats(&n);
    for (size_t i = 0; i < n; i++)
        for (const char *const *m = formats[i].mime_types; *m; m++) gtk_file_filter_add_mime_type(filter, *m);
    return filter;
}

static void add_image_filter(GtkFileChooser *chooser)
{
    g_autoptr(GtkFileFilter) filter = hyocr_window_open_filter_new();
    gtk_file_chooser_add_filter(chooser, filter);
}

static void on_open_response(GtkNativeDialog *dialog, int response, gpointer data)
{
    HyocrWindow *self = data;
    if (response == GTK_RESPONSE_ACCEPT) {
        g_autoptr(GListModel) files = gtk_file_chooser_get_files(GTK_FILE_CHOOSER(dialog));
        g_autoptr(GPtrArray) arr = g_ptr_array_new_with_free_func(g_object_unref);
        for (guint i = 0, n = g_list_model_get_n_items(files); i < n; i++)
            g_ptr_array_add(arr, g_list_model_get_item(files, i));
        hyocr_window_add_files(self, (GFile **)arr->pdata, arr->len);
    }
    gtk_native_dialog_destroy(dialog);
    g_object_unref(dialog);
    g_object_unref(self);
}

static void open_action(GtkWidget *widget, const char *name, GVariant *param)
{
    /* GtkFileChooserNative goes through the file chooser portal when there is one. */
    GtkFileChooserNative *dialog = gtk_file_chooser_native_new(_("Open Images"), GTK_WINDOW(widget),
                                                               GTK_FILE_CHOOSER_ACTION_OPEN, _("_Open"), _("_Cancel"));
    gtk_file_chooser_set_select_multiple(GTK_FILE_CHOOSER(dialog), TRUE);
    add_image_filter(GTK_FILE_CHOOSER(dialog));
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(dialog), TRUE);
    g_signal_connect(dialog, "response", G_CALLBACK(on_open_response), g_object_ref(widget));
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(dialog));
}

/* ---- paste ---- */

static void on_files_read(GObject *source, GAsyncResult *res, gpointer data)
{
    g_autoptr(HyocrWindow) self = data;
    g_autoptr(GError) error = NULL;
    const GValue *value = gdk_clipboard_read_value_finish(GDK_CLIPBOARD(source), res, &error);
    if (!value) {
        hyocr_window_toast(self, error->message);
        return;
    }
    g_autoptr(GPtrArray) arr = g_ptr_array_new();
    for (GSList *l = gdk_file_list_get_files(g_value_get_boxed(value)), *it = l; it; it = it->next)
        g_ptr_array_add(arr, it->data);
    hyocr_window_add_files(self, (GFile **)arr->pdata, arr->len);
}

static void on_texture_read(GObject *source, GAsyncResult *res, gpointer data)
{
    g_autoptr(HyocrWindow) self = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GdkTexture) texture = gdk_clipboard_read_texture_finish(GDK_CLIPBOARD(source), res, &error);
    if (!texture) {
        hyocr_window_toast(self, _("The clipboard holds no image"));
        return;
    }
    hyocr_window_add_texture(self, texture, _("Pasted image"));
}

static void paste_action(GtkWidget *widget, const char *name, GVariant *param)
{
    HyocrWindow *self = HYOCR_WINDOW(widget);
    GdkClipboard *clipboard = gtk_widget_get_clipboard(widget);
    GdkContentFormats *formats = gdk_clipboard_get_formats(clipboard);
    if (gdk_content_formats_contain_gtype(formats, GDK_TYPE_FILE_LIST))
        gdk_clipboard_read_value_async(clipboard, GDK_TYPE_FILE_LIST, G_PRIORITY_DEFAULT, NULL, on_files_read,
                                       g_object_ref(self));
    else
        gdk_clipboard_read_texture_async(clipboard, NULL, on_texture_read, g_object_ref(self));
}

/* ---- result ---- */

static void copy_result_action(GtkWidget *widget, const char *name, GVariant *param)
{
    gtk_widget_activate_action(GTK_WIDGET(HYOCR_WINDOW(widget)->result_view), "view.copy", NULL);
}

static void cancel_job_action(GtkWidget *widget, const char *name, GVariant *param)
{
    HyocrJob *job = hyocr_window_get_selected_job(HYOCR_WINDOW(widget));
    if (job) hyocr_job_cancel(job);
}

static void save_result_action(GtkWidget *widget, const char *name, GVariant *param)
{
    HyocrJob *job = hyocr_window_get_selected_job(HYOCR_WINDOW(widget));
    if (!job || !*hyocr_job_get_text(job)) return;
    hyocr_window_save(HYOCR_WINDOW(widget));
}

/* ---- queue ---- */

static void remove_job_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_remove_job(HYOCR_WINDOW(widget), g_variant_get_uint32(param));
}

static void clear_finished_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_remove_finished(HYOCR_WINDOW(widget));
}

static void capture_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_capture(HYOCR_WINDOW(widget));
}

static void undo_remove_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_undo_remove(HYOCR_WINDOW(widget));
}

static void select_relative(HyocrWindow *self, int delta)
{
    GtkListBoxRow *row = gtk_list_box_get_selected_row(self->job_list);
    int idx = row ? gtk_list_box_row_get_index(row) + delta : 0;
    GtkListBoxRow *next = gtk_list_box_get_row_at_index(self->job_list, idx);
    if (next) gtk_list_box_select_row(self->job_list, next);
}

static void next_job_action(GtkWidget *widget, const char *name, GVariant *param)
{
    select_relative(HYOCR_WINDOW(widget), 1);
}

static void previous_job_action(GtkWidget *widget, const char *name, GVariant *param)
{
    select_relative(HYOCR_WINDOW(widget), -1);
}

/* ---- model folder ---- */

static void on_model_folder_response(GtkNativeDialog *dialog, int response, gpointer data)
{
    HyocrWindow *self = data;
    g_autoptr(GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog)) : NULL;
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    if (path) {
        /* A folder chosen here replaces the --model one of this session too. */
        GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self));
        if (HYOCR_IS_APPLICATION(app)) hyocr_application_set_model_override(HYOCR_APPLICATION(app), NULL);
        g_settings_set_string(self->settings, "model-folder", path);
    }
    gtk_native_dialog_destroy(dialog);
    g_object_unref(dialog);
    g_object_unref(self);
}

void hyocr_window_choose_model_folder(HyocrWindow *self, GtkWindow *parent)
{
    GtkFileChooserNative *dialog = gtk_file_chooser_native_new(_("Choose the Model Folder"), parent,
                                                               GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                                               _("_Select"), _("_Cancel"));
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(dialog), TRUE);
    g_signal_connect(dialog, "response", G_CALLBACK(on_model_folder_response), g_object_ref(self));
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(dialog));
}

static void run_again_action(GtkWidget *widget, const char *name, GVariant *param)
{
    HyocrWindow *self = HYOCR_WINDOW(widget);
    HyocrJob *job = hyocr_window_get_selected_job(self);
    if (job) hyocr_window_run_again(self, job, g_str_equal(g_variant_get_string(param, NULL), "current"));
}

static void retry_failed_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_retry_failed(HYOCR_WINDOW(widget));
}

static void show_jobs_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_show_jobs(HYOCR_WINDOW(widget));
}

static void choose_model_folder_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_choose_model_folder(HYOCR_WINDOW(widget), GTK_WINDOW(widget));
}

static void preset_action(GtkWidget *widget, const char *name, GVariant *param)
{
    g_settings_set_string(HYOCR_WINDOW(widget)->settings, "preset", g_variant_get_string(param, NULL));
}

static void toast_action(GtkWidget *widget, const char *name, GVariant *param)
{
    hyocr_window_toast(HYOCR_WINDOW(widget), g_variant_get_string(param, NULL));
}

/* ---- wiring ---- */

void hyocr_window_update_actions(HyocrWindow *self)
{
    GtkWidget *w = GTK_WIDGET(self);
    HyocrJob *job = hyocr_window_get_selected_job(self);
    gboolean has_text = job && *hyocr_job_get_text(job);
    gtk_widget_action_set_enabled(w, "win.save-result", has_text);
    gtk_widget_action_set_enabled(w, "win.copy-result", has_text);
    gtk_widget_action_set_enabled(w, "win.cancel-job", job && !hyocr_job_is_finished(job));
    gtk_widget_action_set_enabled(w, "win.run-again", job && hyocr_job_is_finished(job));
    gboolean any_failed = FALSE;
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n && !any_failed; i++) {
        g_autoptr(HyocrJob) j = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        any_failed = hyocr_job_get_state(j) == HYOCR_JOB_FAILED;
    }
    gtk_widget_action_set_enabled(w, "win.retry-failed", any_failed);
}

/* Bindings run in the bubble phase: a focused widget that wants the key
 * (an entry's Ctrl+V, a popover's Escape) gets it first, unlike application
 * accelerators, which GTK 4 handles before the focus widget. */
static void add_bindings(GtkWidgetClass *wc)
{
    gtk_widget_class_add_binding_action(wc, GDK_KEY_o, GDK_CONTROL_MASK, "win.open", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_v, GDK_CONTROL_MASK, "win.paste", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_h, GDK_CONTROL_MASK, "win.show-history", NULL);   /* toggles */
    gtk_widget_class_add_binding_action(wc, GDK_KEY_g, GDK_CONTROL_MASK, "win.capture", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_s, GDK_CONTROL_MASK, "win.save-result", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_c, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.copy-result", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Escape, 0, "win.cancel-job", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Page_Down, GDK_CONTROL_MASK, "win.next-job", NULL);
    gtk_widget_class_add_binding_action(wc, GDK_KEY_Page_Up, GDK_CONTROL_MASK, "win.previous-job", NULL);
    /* Ctrl+1 … Ctrl+9, then Ctrl+0 for the tenth, in the picker's order */
    G_STATIC_ASSERT(HYOCR_N_PRESETS <= 10);
    for (int i = 0; i < HYOCR_N_PRESETS; i++)
        gtk_widget_class_add_binding_action(wc, i < 9 ? GDK_KEY_1 + i : GDK_KEY_0, GDK_CONTROL_MASK, "win.preset", "s",
                                            hyocr_preset_get_nick((HyocrPreset)i));
}

void hyocr_window_install_actions(HyocrWindowClass *klass)
{
    GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
    gtk_widget_class_install_action(wc, "win.open", NULL, open_action);
    gtk_widget_class_install_action(wc, "win.paste", NULL, paste_action);
    gtk_widget_class_install_action(wc, "win.save-result", NULL, save_result_action);
    gtk_widget_class_install_action(wc, "win.copy-result", NULL, copy_result_action);
    gtk_widget_class_install_action(wc, "win.cancel-job", NULL, cancel_job_action);
    gtk_widget_class_install_action(wc, "win.remove-job", "u", remove_job_action);
    gtk_widget_class_install_action(wc, "win.clear-finished", NULL, clear_finished_action);
    gtk_widget_class_install_action(wc, "win.undo-remove", NULL, undo_remove_action);
    gtk_widget_class_install_action(wc, "win.capture", NULL, capture_action);
    gtk_widget_class_install_action(wc, "win.next-job", NULL, next_job_action);
    gtk_widget_class_install_action(wc, "win.previous-job", NULL, previous_job_action);
    gtk_widget_class_install_action(wc, "win.choose-model-folder", NULL, choose_model_folder_action);
    gtk_widget_class_install_action(wc, "win.show-jobs", NULL, show_jobs_action);
    gtk_widget_class_install_action(wc, "win.run-again", "s", run_again_action);
    gtk_widget_class_install_action(wc, "win.retry-failed", NULL, retry_failed_action);
    gtk_widget_class_install_action(wc, "win.toast", "s", toast_action);
    gtk_widget_class_install_action(wc, "win.preset", "s", preset_action);
    add_bindings(wc);
}

void hyocr_window_setup_actions(HyocrWindow *self)
{
    hyocr_window_update_actions(self);
}
