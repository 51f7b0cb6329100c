/* hyocr-gtk — job row. */
#include "hyocr-job-row-private.h"
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>

struct _HyocrJobRow {
    GtkListBoxRow   parent_instance;
    GtkPicture     *thumbnail;
    GtkLabel       *title_label;
    GtkLabel       *where_label;
    GtkLabel       *state_label;
    GtkProgressBar *progress_bar;
    GtkWidget      *remove_button;
    HyocrJob       *job;
};

G_DEFINE_FINAL_TYPE(HyocrJobRow, hyocr_job_row, GTK_TYPE_LIST_BOX_ROW)

static void update(HyocrJobRow *self)
{
    HyocrJobState st = hyocr_job_get_state(self->job);
    const char *label = hyocr_job_state_get_label(st);
    g_autofree char *text = st == HYOCR_JOB_WRITING
        ? g_strdup_printf(ngettext("%s · %d token", "%s · %d tokens", (gulong)hyocr_job_get_n_tokens(self->job)),
                          label, hyocr_job_get_n_tokens(self->job))
        : g_strdup(label);
    gtk_label_set_text(self->state_label, text);
    gtk_progress_bar_set_fraction(self->progress_bar, hyocr_job_get_progress(self->job));
    gtk_widget_set_visible(GTK_WIDGET(self->progress_bar), !hyocr_job_is_finished(self->job));
    gtk_widget_set_tooltip_text(self->remove_button, hyocr_job_is_finished(self->job) ? _("Remove") : _("Cancel and Remove"));
    if (st == HYOCR_JOB_FAILED) gtk_widget_add_css_class(GTK_WIDGET(self->state_label), "error");
    else gtk_widget_remove_css_class(GTK_WIDGET(self->state_label), "error");
}

static void hyocr_job_row_dispose(GObject *object)
{
    HyocrJobRow *self = HYOCR_JOB_ROW(object);
    if (self->job) g_signal_handlers_disconnect_by_data(self->job, self);
    g_clear_object(&self->job);
    gtk_widget_dispose_template(GTK_WIDGET(self), HYOCR_TYPE_JOB_ROW);
    G_OBJECT_CLASS(hyocr_job_row_parent_class)->dispose(object);
}

static void hyocr_job_row_class_init(HyocrJobRowClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_job_row_dispose;
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-job-row.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrJobRow, thumbnail);
    gtk_widget_class_bind_template_child(widget_class, HyocrJobRow, title_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrJobRow, where_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrJobRow, state_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrJobRow, progress_bar);
    gtk_widget_class_bind_template_child(widget_class, HyocrJobRow, remove_button);
}

static void hyocr_job_row_init(HyocrJobRow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
}

static void update_thumbnail(HyocrJobRow *self)
{
    gtk_picture_set_paintable(self->thumbnail, GDK_PAINTABLE(hyocr_job_get_preview(self->job)));
}

/* A page of a document of several is named by its number (the list's header names the
 * document) and shown by a thumbnail. */
static void show_page(HyocrJobRow *self)
{
    hyocr_document *doc = hyocr_job_get_document(self->job);
    int n = doc ? hyocr_document_n_pages(doc) : 1;
    if (n <= 1) return;
    g_autofree char *title = g_strdup_printf(_("Page %d of %d"), hyocr_job_get_page(self->job) + 1, n);
    gtk_label_set_text(self->title_label, title);
    gtk_widget_set_visible(GTK_WIDGET(self->thumbnail), TRUE);
    g_signal_connect_swapped(self->job, "notify::preview", G_CALLBACK(update_thumbnail), self);
    update_thumbnail(self);
    hyocr_job_ensure_preview(self->job);
}

/* A file's folder and size, so that files of the same name can be told apart
 * ("~/Scans/2024 · 2.3 MB"); its whole path in the tooltip. */
static void show_where(HyocrJobRow *self)
{
    GFile *file = hyocr_job_get_file(self->job);
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    if (!path || hyocr_job_get_document(self->job)) return;
    g_autofree char *dir = g_path_get_dirname(path);
    const char *home = g_get_home_dir();
    g_autofree char *shown = home && g_str_has_prefix(dir, home) && (dir[strlen(home)] == '/' || !dir[strlen(home)])
                                 ? g_strconcat("~", dir + strlen(home), NULL) : g_strdup(dir);
    GStatBuf st;
    g_autofree char *size = g_stat(path, &st) == 0 ? g_format_size((guint64)st.st_size) : NULL;
    /* Translators: a file's folder and size, "~/Scans · 2.3 MB" */
    g_autofree char *text = size ? g_strdup_printf(_("%s · %s"), shown, size) : g_strdup(shown);
    gtk_label_set_text(self->where_label, text);
    gtk_widget_set_visible(GTK_WIDGET(self->where_label), TRUE);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self), path);
}

const char *hyocr_job_row_get_where(HyocrJobRow *self)
{
    return gtk_label_get_text(self->where_label);
}

GtkWidget *hyocr_job_row_new(HyocrJob *job)
{
    HyocrJobRow *self = g_object_new(HYOCR_TYPE_JOB_ROW, NULL);
    self->job = g_object_ref(job);
    gtk_label_set_text(self->title_label, hyocr_job_get_title(job));
    show_page(self);
    show_where(self);
    gtk_actionable_set_action_target(GTK_ACTIONABLE(self->remove_button), "u", hyocr_job_get_id(job));
    g_signal_connect_swapped(job, "notify::state", G_CALLBACK(update), self);
    g_signal_connect_swapped(job, "notify::n-tokens", G_CALLBACK(update), self);
    update(self);
    return GTK_WIDGET(self);
}

HyocrJob *hyocr_job_row_get_job(HyocrJobRow *self)
{
    return self->job;
}
