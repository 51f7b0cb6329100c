/* hyocr-gtk — "Save as…": the selected result, or the whole document the selected page
 * belongs to, in the format its name asks for (the engine's exports: text, Markdown, JSON,
 * JSON lines, searchable PDF, HTML), written on a thread so a long document does not stop the
 * window. */
#include "hyocr-window-private.h"
#include "error.h"
#include "export.h"
#include <glib/gi18n.h>
#include <string.h>

/* What one save writes: its pages hold copies of the texts, so the jobs may change meanwhile. */
typedef struct {
    hyocr_export_page *pages;
    hyocr_timings     *timings;
    int                n;
    GPtrArray         *keep;      /* strings and document references the pages point to */
    char              *model, *backend, *path;
    hyocr_export_format format;
} SaveData;

static void save_data_free(SaveData *d)
{
    for (int i = 0; i < d->n; i++) hyocr_document_unref(d->pages[i].document);
    g_free(d->pages);
    g_free(d->timings);
    g_ptr_array_unref(d->keep);
    g_free(d->model);
    g_free(d->backend);
    g_free(d->path);
    g_free(d);
}

/* The pages to save with job: every page of its document, in order, or the job alone. */
static GPtrArray *pages_of(HyocrWindow *self, HyocrJob *job)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_object_unref);
    hyocr_document *doc = hyocr_job_get_document(job);
    if (!doc || hyocr_document_n_pages(doc) <= 1) {
        g_ptr_array_add(out, g_object_ref(job));
        return out;
    }
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) j = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (hyocr_job_get_document(j) == doc) g_ptr_array_add(out, g_object_ref(j));
    }
    return out;
}

/* Every page needs a document to be drawn from: its own, its file's, or its pixels'. */
static hyocr_document *document_of(HyocrJob *job, GError **error)
{
    if (hyocr_job_get_document(job)) return hyocr_document_ref(hyocr_job_get_document(job));
    if (hyocr_job_peek_image(job)) {
        hyocr_document *doc = hyocr_document_new_for_image(hyocr_job_peek_image(job), hyocr_job_get_title(job));
        if (!doc) g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("Not enough memory"));
        return doc;
    }
    g_autofree char *path = g_file_get_path(hyocr_job_get_file(job));
    return hyocr_document_open(path ? path : hyocr_job_get_title(job), NULL, error);
}

static char *keep(SaveData *d, char *s)
{
    g_ptr_array_add(d->keep, s);
    return s;
}

static SaveData *save_data_new(HyocrWindow *self, HyocrJob *job, GError **error)
{
    g_autoptr(GPtrArray) jobs = pages_of(self, job);
    SaveData *d = g_new0(SaveData, 1);
    d->pages = g_new0(hyocr_export_page, jobs->len);
    d->timings = g_new0(hyocr_timings, jobs->len);
    d->keep = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < jobs->len; i++) {
        HyocrJob *j = jobs->pdata[i];
        hyocr_document *doc = document_of(j, error);
        if (!doc) {
            save_data_free(d);
            return NULL;
        }
        hyocr_export_page *p = &d->pages[d->n++];
        p->document = doc;
        p->page = hyocr_job_get_page(j);
        p->task = hyocr_job_get_options(j)->task;
        d->timings[i].total_ms = hyocr_job_get_elapsed(j) * 1000;
        p->timings = &d->timings[i];
        if (hyocr_job_get_state(j) == HYOCR_JOB_DONE)
            p->text = keep(d, g_strdup(hyocr_job_get_text(j)));
        else if (hyocr_job_is_finished(j))
            p->error = keep(d, g_strdup(hyocr_job_get_message(j) ? hyocr_job_get_message(j) : _("Failed")));
        else
            p->error = keep(d, g_strdup(_("not finished when the document was saved")));
    }
    HyocrWorker *worker = self->worker;
    const char *model_dir = hyocr_worker_get_model_dir(worker);
    d->model = model_dir ? g_path_get_basename(model_dir) : g_strdup("");
    d->backend = g_strdup(hyocr_worker_is_cpu(worker) ? "cpu" : "cuda");
    return d;
}

static void save_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    SaveData *d = data;
    hyocr_export ex = { .pages = d->pages, .n_pages = d->n, .model = d->model, .backend = d->backend };
    GError *error = NULL;
    if (hyocr_export_write(&ex, d->format, d->path, &error)) g_task_return_boolean(task, TRUE);
    else g_task_return_error(task, error);
}

void hyocr_window_save_to(HyocrWindow *self, GFile *file, GAsyncReadyCallback done, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, NULL, done, user_data);
    HyocrJob *job = hyocr_window_get_selected_job(self);
    g_autofree char *path = g_file_get_path(file);
    hyocr_export_format format;
    GError *error = NULL;
    if (!job || !path) {
        g_task_return_new_error(task, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("Nothing to save"));
        return;
    }
    if (!hyocr_export_format_for_path(path, &format)) {
        g_task_return_new_error(task, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                                _("Name the file with one of these endings: %s"), hyocr_export_extensions());
        return;
    }
    SaveData *d = save_data_new(self, job, &error);
    if (!d) {
        g_task_return_error(task, error);
        return;
    }
    d->format = format;
    d->path = g_steal_pointer(&path);
    g_task_set_task_data(task, d, (GDestroyNotify)save_data_free);
    g_task_run_in_thread(task, save_thread);
}

gboolean hyocr_window_save_finish(HyocrWindow *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean(G_TASK(res), error);
}

/* ---- the dialog ---- */

static void on_saved(GObject *source, GAsyncResult *res, gpointer data)
{
    HyocrWindow *self = HYOCR_WINDOW(source);
    g_autofree char *name = data;
    g_autoptr(GError) error = NULL;
    g_autofree char *msg = hyocr_window_save_finish(self, res, &error)
                               ? g_strdup_printf(_("Saved “%s”"), name)
                               : g_strdup_printf(_("Could not save “%s”: %s"), name, error->message);
    hyocr_window_toast(self, msg);
}

static const struct {
    const char *label, *ext;
} kinds[] = {
    { N_("Text (.txt)"), "txt" },
    { N_("Markdown (.md)"), "md" },
    { N_("JSON (.json)"), "json" },
    { N_("JSON Lines (.jsonl)"), "jsonl" },
    { N_("Searchable PDF (.pdf)"), "pdf" },
    { N_("Web Page (.html)"), "html" },
};

char *hyocr_window_save_path(const char *path, const char *filter_ext, gboolean filter_chosen)
{
    hyocr_export_format f;
    gboolean known = hyocr_export_format_for_path(path, &f);
    if (known && !filter_chosen) return g_strdup(path);   /* the name the user typed says it */
    if (!filter_ext) return g_strdup(path);
    const char *dot = known ? strrchr(path, '.') : NULL;
    g_autofree char *stem = dot ? g_strndup(path, (gsize)(dot - path)) : g_strdup(path);
    return g_strdup_printf("%s.%s", stem, filter_ext);
}

/* The format chosen in the dialog wins when the user picked one; else the name's ending. */
static GFile *with_extension(GtkFileChooser *chooser, GFile *file)
{
    g_autofree char *path = g_file_get_path(file);
    if (!path) return g_object_ref(file);
    GtkFileFilter *filter = gtk_file_chooser_get_filter(chooser);
    const char *ext = filter ? g_object_get_data(G_OBJECT(filter), "extension") : NULL;
    gboolean chosen = filter && filter != g_object_get_data(G_OBJECT(chooser), "first-filter");
    g_autofree char *named = hyocr_window_save_path(path, ext ? ext : "txt", chosen);
    return g_file_new_for_path(named);
}

GFile *hyocr_window_save_folder(HyocrJob *job)
{
    GFile *file = hyocr_job_get_file(job);
    if (file) {
        GFile *parent = g_file_get_parent(file);
        if (parent) return parent;
    }
    const char *docs = g_get_user_special_dir(G_USER_DIRECTORY_DOCUMENTS);
    return g_file_new_for_path(docs && g_file_test(docs, G_FILE_TEST_IS_DIR) ? docs : g_get_home_dir());
}

static void on_save_response(GtkNativeDialog *dialog, int response, gpointer data)
{
    HyocrWindow *self = data;
    g_autoptr(GFile) chosen = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog)) : NULL;
    if (chosen) {
        g_autoptr(GFile) file = with_extension(GTK_FILE_CHOOSER(dialog), chosen);
        hyocr_window_save_to(self, file, on_saved, g_file_get_basename(file));
    }
    gtk_native_dialog_destroy(dialog);
    g_object_unref(dialog);
    g_object_unref(self);
}

static char *suggested_name(HyocrJob *job)
{
    g_autofree char *stem = g_strdup(hyocr_job_get_title(job));
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem) *dot = '\0';
    return g_strdup_printf("%s.%s", stem, hyocr_preset_get_extension(hyocr_job_get_options(job)->preset));
}

void hyocr_window_save(HyocrWindow *self)
{
    HyocrJob *job = hyocr_window_get_selected_job(self);
    if (!job) return;
    GtkFileChooserNative *dialog = gtk_file_chooser_native_new(_("Save the Result"), GTK_WINDOW(self),
                                                               GTK_FILE_CHOOSER_ACTION_SAVE, _("_Save"), _("_Cancel"));
    g_autofree char *suggested = suggested_name(job);
    /* Beside the image (a pasted one: in Documents), not wherever the app was started. */
    g_autoptr(GFile) folder = hyocr_window_save_folder(job);
    gtk_file_chooser_set_current_folder(GTK_FILE_CHOOSER(dialog), folder, NULL);
    gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(dialog), suggested);
    const char *suggested_ext = strrchr(suggested, '.') ? strrchr(suggested, '.') + 1 : "txt";
    GtkFileFilter *first = NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        g_autofree char *probe = g_strdup_printf("x.%s", kinds[i].ext);
        hyocr_export_format f;
        if (!hyocr_export_format_for_path(probe, &f)) continue;   /* not in this build */
        g_autoptr(GtkFileFilter) filter = gtk_file_filter_new();
        gtk_file_filter_set_name(filter, _(kinds[i].label));
        g_autofree char *pattern = g_strdup_printf("*.%s", kinds[i].ext);
        gtk_file_filter_add_pattern(filter, pattern);
        g_object_set_data(G_OBJECT(filter), "extension", (gpointer)kinds[i].ext);
        gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(dialog), filter);
        if (g_str_equal(kinds[i].ext, suggested_ext)) first = filter;
    }
    /* The filter shown first matches the suggested name: choosing another one is a choice. */
    if (first) gtk_file_chooser_set_filter(GTK_FILE_CHOOSER(dialog), first);
    g_object_set_data(G_OBJECT(dialog), "first-filter", first ? first : gtk_file_chooser_get_filter(GTK_FILE_CHOOSER(dialog)));
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(dialog), TRUE);
    g_signal_connect(dialog, "response", G_CALLBACK(on_save_response), g_object_ref(self));
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(dialog));
}
