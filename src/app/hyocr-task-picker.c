/* hyocr-gtk — task picker. */
#include "hyocr-task-picker.h"
#include "hyocr-preset.h"
#include <glib/gi18n.h>

struct _HyocrTaskPicker {
    GtkWidget    parent_instance;
    GtkDropDown *preset_dropdown;
    GtkStack    *options_stack;
    GtkLabel    *hint_label;
    GtkDropDown *target_dropdown;
    GtkEntry    *fields_entry;
    GtkEntry    *prompt_entry;
    GSettings   *settings;
};

G_DEFINE_FINAL_TYPE(HyocrTaskPicker, hyocr_task_picker, GTK_TYPE_WIDGET)

static void show_options(HyocrTaskPicker *self, HyocrPreset p)
{
    const char *page = p == HYOCR_PRESET_TRANSLATE        ? "translate"
                       : p == HYOCR_PRESET_EXTRACT_FIELDS ? "fields"
                       : p == HYOCR_PRESET_CUSTOM         ? "custom"
                                                          : "none";
    gtk_label_set_text(self->hint_label, hyocr_preset_get_hint(p));
    gtk_stack_set_visible_child_name(self->options_stack, page);
}

static void on_preset_selected(GtkDropDown *dd, GParamSpec *pspec, HyocrTaskPicker *self)
{
    show_options(self, (HyocrPreset)gtk_drop_down_get_selected(dd));
}

/* ---- GSettings mappings ---- */

static gboolean enum_to_selected(GValue *value, GVariant *variant, gpointer data)
{
    GType type = GPOINTER_TO_SIZE(data);
    g_autoptr(GEnumClass) klass = g_type_class_ref(type);
    GEnumValue *v = g_enum_get_value_by_nick(klass, g_variant_get_string(variant, NULL));
    if (!v) return FALSE;
    g_value_set_uint(value, (guint)v->value);
    return TRUE;
}

static GVariant *selected_to_enum(const GValue *value, const GVariantType *type, gpointer data)
{
    GType etype = GPOINTER_TO_SIZE(data);
    g_autoptr(GEnumClass) klass = g_type_class_ref(etype);
    GEnumValue *v = g_enum_get_value(klass, (int)g_value_get_uint(value));
    return v ? g_variant_new_string(v->value_nick) : NULL;
}

static gboolean target_to_selected(GValue *value, GVariant *variant, gpointer data)
{
    g_value_set_uint(value, g_str_equal(g_variant_get_string(variant, NULL), "zh") ? 1 : 0);
    return TRUE;
}

static GVariant *selected_to_target(const GValue *value, const GVariantType *type, gpointer data)
{
    return g_variant_new_string(g_value_get_uint(value) == 1 ? "zh" : "en");
}

static gboolean fields_to_text(GValue *value, GVariant *variant, gpointer data)
{
    g_autofree const char **keys = g_variant_get_strv(variant, NULL);
    g_value_take_string(value, g_strjoinv(", ", (char **)keys));
    return TRUE;
}

static GVariant *text_to_fields(const GValue *value, const GVariantType *type, gpointer data)
{
    g_auto(GStrv) keys = hyocr_fields_parse(g_value_get_string(value));
    return g_variant_new_strv((const char *const *)keys, -1);
}

void hyocr_task_picker_set_settings(HyocrTaskPicker *self, GSettings *settings)
{
    g_return_if_fail(HYOCR_IS_TASK_PICKER(self) && G_IS_SETTINGS(settings));
    g_return_if_fail(self->settings == NULL);
    self->settings = g_object_ref(settings);
    g_settings_bind_with_mapping(settings, "preset", self->preset_dropdown, "selected", G_SETTINGS_BIND_DEFAULT,
                                 enum_to_selected, selected_to_enum, GSIZE_TO_POINTER(HYOCR_TYPE_PRESET), NULL);
    g_settings_bind_with_mapping(settings, "translate-target", self->target_dropdown, "selected",
                                 G_SETTINGS_BIND_DEFAULT, target_to_selected, selected_to_target, NULL, NULL);
    /* Read once, then only written: re-formatting the entry from the parsed keys
     * while the user types would eat the trailing comma and move the cursor. */
    g_settings_bind_with_mapping(settings, "fields", self->fields_entry, "text",
                                 G_SETTINGS_BIND_DEFAULT | G_SETTINGS_BIND_GET_NO_CHANGES,
                                 fields_to_text, text_to_fields, NULL, NULL);
    g_settings_bind(settings, "custom-prompt", self->prompt_entry, "text",
                    G_SETTINGS_BIND_DEFAULT | G_SETTINGS_BIND_GET_NO_CHANGES);
    show_options(self, (HyocrPreset)gtk_drop_down_get_selected(self->preset_dropdown));
}

/* ---- GObject ---- */

static void hyocr_task_picker_dispose(GObject *object)
{
    HyocrTaskPicker *self = HYOCR_TASK_PICKER(object);
    g_clear_object(&self->settings);
    gtk_widget_dispose_template(GTK_WIDGET(self), HYOCR_TYPE_TASK_PICKER);
    /* Unbound template children (the root box) are ours to unparent too. */
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self)))) gtk_widget_unparent(child);
    G_OBJECT_CLASS(hyocr_task_picker_parent_class)->dispose(object);
}

static void hyocr_task_picker_class_init(HyocrTaskPickerClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_task_picker_dispose;
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-task-picker.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrTaskPicker, preset_dropdown);
    gtk_widget_class_bind_template_child(widget_class, HyocrTaskPicker, options_stack);
    gtk_widget_class_bind_template_child(widget_class, HyocrTaskPicker, hint_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrTaskPicker, target_dropdown);
    gtk_widget_class_bind_template_child(widget_class, HyocrTaskPicker, fields_entry);
    gtk_widget_class_bind_template_child(widget_class, HyocrTaskPicker, prompt_entry);
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
}

static void hyocr_task_picker_init(HyocrTaskPicker *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    /* one entry per preset, in the enum's order (selected ↔ preset) */
    g_autoptr(GtkStringList) labels = gtk_string_list_new(NULL);
    for (int i = 0; i < HYOCR_N_PRESETS; i++) gtk_string_list_append(labels, hyocr_preset_get_label((HyocrPreset)i));
    gtk_drop_down_set_model(self->preset_dropdown, G_LIST_MODEL(labels));
    g_signal_connect(self->preset_dropdown, "notify::selected", G_CALLBACK(on_preset_selected), self);
}
