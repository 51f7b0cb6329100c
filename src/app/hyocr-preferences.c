/* hyocr-gtk — preferences window. */
#include "hyocr-preferences-private.h"
#include "hyocr-history.h"
#include "models.h"
#include <glib/gi18n.h>

struct _HyocrPreferences {
    AdwPreferencesWindow parent_instance;
    AdwActionRow   *model_row;
    GtkWidget      *reset_model_button;
    GtkWidget      *choose_model_button;
    AdwPreferencesGroup *device_group;
    AdwComboRow    *device_row;
    GtkAdjustment  *memory_adjustment;
    GtkAdjustment  *tokens_adjustment;
    GtkAdjustment  *side_adjustment;
    GtkAdjustment  *penalty_adjustment;
    AdwPreferencesGroup *history_group;
    GtkWidget      *history_switch;
    HyocrWindow    *window;     /* transient-for: it outlives us */
    GSettings      *settings;
};

G_DEFINE_FINAL_TYPE(HyocrPreferences, hyocr_preferences, ADW_TYPE_PREFERENCES_WINDOW)

static void update_model_row(HyocrPreferences *self)
{
    g_autofree char *folder = g_settings_get_string(self->settings, "model-folder");
    g_autofree char *def = hyocr_models_default_folder();
    g_autofree char *subtitle = NULL;
    GtkApplication *app = gtk_window_get_application(GTK_WINDOW(self->window));
    const char *override = HYOCR_IS_APPLICATION(app) ? hyocr_application_get_model_override(HYOCR_APPLICATION(app))
                                                     : NULL;
    if (override)
        subtitle = g_strdup_printf(_("%s (given with --model for this session)"), override);
    else if (!*folder)
        subtitle = g_strdup_printf(_("%s (default)"), def);
    else
        subtitle = g_strdup(folder);
    adw_action_row_set_subtitle(self->model_row, subtitle);
    gtk_widget_set_sensitive(self->reset_model_button, *folder != '\0');
}

/* Why the GPU is not used, in full, under the device choice (NULL: it is, or was not wanted). */
static void update_device_note(HyocrPreferences *self)
{
    adw_preferences_group_set_description(self->device_group, hyocr_worker_get_gpu_note(hyocr_window_get_worker(self->window)));
}

const char *hyocr_preferences_get_device_note(HyocrPreferences *self)
{
    return adw_preferences_group_get_description(self->device_group);
}

static void choose_model_clicked(GtkButton *button, HyocrPreferences *self)
{
    hyocr_window_choose_model_folder(self->window, GTK_WINDOW(self));
}

static void reset_model_clicked(GtkButton *button, HyocrPreferences *self)
{
    g_settings_reset(self->settings, "model-folder");
}

static gboolean device_to_selected(GValue *value, GVariant *variant, gpointer data)
{
    const char *nick = g_variant_get_string(variant, NULL);
    g_value_set_uint(value, g_str_equal(nick, "gpu") ? 1 : g_str_equal(nick, "cpu") ? 2 : 0);
    return TRUE;
}

static GVariant *selected_to_device(const GValue *value, const GVariantType *type, gpointer data)
{
    static const char *const nicks[] = { "auto", "gpu", "cpu" };
    guint i = g_value_get_uint(value);
    return g_variant_new_string(nicks[i < G_N_ELEMENTS(nicks) ? i : 0]);
}

static void bind_settings(HyocrPreferences *self)
{
    GSettings *s = self->settings;
    g_settings_bind_with_mapping(s, "device", self->device_row, "selected", G_SETTINGS_BIND_DEFAULT,
                                 device_to_selected, selected_to_device, NULL, NULL);
    g_settings_bind(s, "gpu-memory-limit", self->memory_adjustment, "value", G_SETTINGS_BIND_DEFAULT);
    g_settings_bind(s, "max-new-tokens", self->tokens_adjustment, "value", G_SETTINGS_BIND_DEFAULT);
    g_settings_bind(s, "max-image-side", self->side_adjustment, "value", G_SETTINGS_BIND_DEFAULT);
    g_settings_bind(s, "repetition-penalty", self->penalty_adjustment, "value", G_SETTINGS_BIND_DEFAULT);
    g_settings_bind(s, "history", self->history_switch, "active", G_SETTINGS_BIND_DEFAULT);
    g_autofree char *where = hyocr_history_default_path();
    g_autofree char *note = g_strdup_printf(_("Kept in %s"), where);
    adw_preferences_group_set_description(self->history_group, note);
    g_signal_connect_object(s, "changed::model-folder", G_CALLBACK(update_model_row), self, G_CONNECT_SWAPPED);
    update_model_row(self);
    g_signal_connect_object(hyocr_window_get_worker(self->window), "notify::state", G_CALLBACK(update_device_note), self,
                            G_CONNECT_SWAPPED);
    update_device_note(self);
}

static void hyocr_preferences_dispose(GObject *object)
{
    HyocrPreferences *self = HYOCR_PREFERENCES(object);
    g_clear_object(&self->settings);
    gtk_widget_dispose_template(GTK_WIDGET(self), HYOCR_TYPE_PREFERENCES);
    G_OBJECT_CLASS(hyocr_preferences_parent_class)->dispose(object);
}

static void hyocr_preferences_class_init(HyocrPreferencesClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_preferences_dispose;
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-preferences.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, model_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, reset_model_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, choose_model_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, device_group);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, device_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, memory_adjustment);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, tokens_adjustment);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, side_adjustment);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, penalty_adjustment);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, history_group);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, history_switch);
}

static void hyocr_preferences_init(HyocrPreferences *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    g_signal_connect(self->choose_model_button, "clicked", G_CALLBACK(choose_model_clicked), self);
    g_signal_connect(self->reset_model_button, "clicked", G_CALLBACK(reset_model_clicked), self);
}

HyocrPreferences *hyocr_preferences_new(HyocrWindow *window)
{
    HyocrPreferences *self = g_object_new(HYOCR_TYPE_PREFERENCES, "transient-for", window, "modal", FALSE,
                                          "destroy-with-parent", TRUE, NULL);
    self->window = window;
    self->settings = g_object_ref(hyocr_window_get_settings(window));
    bind_settings(self);
    return self;
}
