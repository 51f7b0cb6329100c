/* hyocr-gtk — model problem page. */
#include "hyocr-model-status-private.h"
#include "error.h"
#include "models.h"
#include <glib/gi18n.h>

#define MODEL_URL "https://huggingface.co/tencent/HunyuanOCR"

struct _HyocrModelStatus {
    GtkWidget         parent_instance;
    AdwStatusPage    *status_page;
    GtkLabel         *details_label;
    GtkLabel         *howto_label;
    GtkWidget        *choose_button;
    GtkBox           *download_area;
    HyocrModelProblem problem;
};

G_DEFINE_FINAL_TYPE(HyocrModelStatus, hyocr_model_status, GTK_TYPE_WIDGET)

static HyocrModelProblem classify(const char *folder, const GError *error, char ***missing)
{
    if (error && (g_error_matches(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND) ||
                  g_error_matches(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY)))
        return HYOCR_MODEL_PROBLEM_DEVICE;
    if (!folder || !*folder || !g_file_test(folder, G_FILE_TEST_IS_DIR)) return HYOCR_MODEL_PROBLEM_MISSING;
    *missing = hyocr_models_missing_files(folder);
    return (*missing)[0] ? HYOCR_MODEL_PROBLEM_INCOMPLETE : HYOCR_MODEL_PROBLEM_BROKEN;
}

static const char *problem_title(HyocrModelProblem p)
{
    switch (p) {
    case HYOCR_MODEL_PROBLEM_MISSING: return _("No Model Found");
    case HYOCR_MODEL_PROBLEM_INCOMPLETE: return _("The Model Folder Is Incomplete");
    case HYOCR_MODEL_PROBLEM_BROKEN: return _("The Model Could Not Be Loaded");
    case HYOCR_MODEL_PROBLEM_DEVICE: return _("The Model Does Not Run on This Device");
    }
    return "";
}

static char *problem_description(HyocrModelProblem p, const char *folder, char **missing)
{
    g_autofree char *f = g_markup_escape_text(folder && *folder ? folder : _("(none)"), -1);
    switch (p) {
    case HYOCR_MODEL_PROBLEM_MISSING:
        return g_strdup_printf(_("hyocr needs the HunyuanOCR model and looked for it in <tt>%s</tt>, which does not exist."), f);
    case HYOCR_MODEL_PROBLEM_INCOMPLETE: {
        g_autofree char *list = g_strjoinv(", ", missing);
        g_autofree char *l = g_markup_escape_text(list, -1);
        return g_strdup_printf(_("<tt>%s</tt> lacks <b>%s</b>. A model folder holds config.json, "
                                 "tokenizer.json and the weights (*.safetensors)."), f, l);
    }
    case HYOCR_MODEL_PROBLEM_BROKEN:
        return g_strdup_printf(_("The files in <tt>%s</tt> are there but could not be read."), f);
    case HYOCR_MODEL_PROBLEM_DEVICE:
        return g_strdup_printf(_("The model in <tt>%s</tt> is fine, but the chosen device cannot run it. "
                                 "Choose another device or a higher memory limit in Preferences."), f);
    }
    return g_strdup("");
}

static char *howto_markup(void)
{
    g_autofree char *def = hyocr_models_default_folder();
    g_autofree char *d = g_markup_escape_text(def, -1);
    /* Translators: the first %s is a command, the second a web address, the third a folder. */
    return g_strdup_printf(_("To get the model, run <tt>%s</tt> in a terminal, or download it from "
                             "<a href=\"%s\">Hugging Face</a> into <tt>%s</tt> (about 2 GB), "
                             "then choose its folder."),
                           "hyocr download", MODEL_URL, d);
}

void hyocr_model_status_set_problem(HyocrModelStatus *self, const char *folder, const GError *error)
{
    g_return_if_fail(HYOCR_IS_MODEL_STATUS(self));
    g_auto(GStrv) missing = NULL;
    self->problem = classify(folder, error, &missing);
    adw_status_page_set_title(self->status_page, problem_title(self->problem));
    g_autofree char *desc = problem_description(self->problem, folder, missing);
    adw_status_page_set_description(self->status_page, desc);
    /* The engine's message names the file and the problem; shown as is. */
    g_autofree char *msg = error ? g_markup_escape_text(error->message, -1) : NULL;
    g_autofree char *details = msg ? g_strdup_printf("<small>%s</small>", msg) : g_strdup("");
    gtk_label_set_markup(self->details_label, details);
    gtk_widget_set_visible(GTK_WIDGET(self->details_label), msg != NULL);
    adw_status_page_set_icon_name(self->status_page, self->problem == HYOCR_MODEL_PROBLEM_DEVICE
                                                         ? "dialog-warning-symbolic" : "folder-open-symbolic");
}

HyocrModelProblem hyocr_model_status_get_problem(HyocrModelStatus *self) { return self->problem; }
const char *hyocr_model_status_get_title(HyocrModelStatus *self) { return adw_status_page_get_title(self->status_page); }
const char *hyocr_model_status_get_details(HyocrModelStatus *self) { return gtk_label_get_text(self->details_label); }
GtkBox *hyocr_model_status_get_download_area(HyocrModelStatus *self) { return self->download_area; }

void hyocr_model_status_set_download_visible(HyocrModelStatus *self, gboolean visible)
{
    g_return_if_fail(HYOCR_IS_MODEL_STATUS(self));
    gtk_widget_set_visible(GTK_WIDGET(self->download_area), visible);
    /* The download area offers the download and its own checked "Use a Folder…". */
    gtk_widget_set_visible(GTK_WIDGET(self->howto_label), !visible);
    gtk_widget_set_visible(self->choose_button, !visible);
    /* "Does not exist" says nothing the offer does not; other problems keep their details. */
    gtk_widget_set_visible(GTK_WIDGET(self->details_label),
                           *gtk_label_get_text(self->details_label) && !(visible && self->problem == HYOCR_MODEL_PROBLEM_MISSING));
}

static void hyocr_model_status_dispose(GObject *object)
{
    gtk_widget_dispose_template(GTK_WIDGET(object), HYOCR_TYPE_MODEL_STATUS);
    /* Unbound template children (the root box) are ours to unparent too. */
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(object)))) gtk_widget_unparent(child);
    G_OBJECT_CLASS(hyocr_model_status_parent_class)->dispose(object);
}

static void hyocr_model_status_class_init(HyocrModelStatusClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_model_status_dispose;
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-model-status.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrModelStatus, status_page);
    gtk_widget_class_bind_template_child(widget_class, HyocrModelStatus, details_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrModelStatus, howto_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrModelStatus, choose_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrModelStatus, download_area);
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void hyocr_model_status_init(HyocrModelStatus *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    g_autofree char *howto = howto_markup();
    gtk_label_set_markup(self->howto_label, howto);
}
