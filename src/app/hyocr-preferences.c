/* hyocr-gtk — preferences window. */
#include "hyocr-preferences-private.h"
#include "hyocr-history.h"
#include "hyocr-build-config.h"
#include "hyocr-keyring.h"
#include "hyocr-certificate-dialog.h"
#include "models.h"
#if HYOCR_HAVE_DOWNLOAD
#include "remote.h"
#endif
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
    AdwComboRow    *runner_row;
    AdwEntryRow    *server_url_row;
    AdwPasswordEntryRow *server_key_row;
    AdwComboRow    *server_model_row;
    GtkStringList  *server_models;
    AdwActionRow   *test_row;
    GtkWidget      *test_button;
    GtkWidget      *trust_button;
    HyocrWindow    *window;     /* transient-for: it outlives us */
    GSettings      *settings;
    GCancellable   *cancellable;   /* the connection test and the keyring, ended with us */
    gboolean        filling;       /* the model list is being filled: not the user's pick */
    int             tests_done;    /* connection tests answered (for the tests) */
    int             keys_kept;     /* keys stored in (or cleared from) the keyring (for the tests) */
    GError         *refused;       /* the last test's error, when it refused a certificate */
    char           *refused_url;   /* the address that test asked */
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

/* ---- where pages are read ---- */

static gboolean runner_to_selected(GValue *value, GVariant *variant, gpointer data)
{
    g_value_set_uint(value, g_str_equal(g_variant_get_string(variant, NULL), "server") ? 1 : 0);
    return TRUE;
}

static GVariant *selected_to_runner(const GValue *value, const GVariantType *type, gpointer data)
{
    return g_variant_new_string(g_value_get_uint(value) == 1 ? "server" : "local");
}

static void update_runner_rows(HyocrPreferences *self)
{
    gboolean server = adw_combo_row_get_selected(self->runner_row) == 1;
    gtk_widget_set_sensitive(GTK_WIDGET(self->server_url_row), server);
    gtk_widget_set_sensitive(GTK_WIDGET(self->server_key_row), server);
    gtk_widget_set_sensitive(GTK_WIDGET(self->server_model_row), server);
    gtk_widget_set_sensitive(GTK_WIDGET(self->test_row), server);
}

static void key_stored(GObject *source, GAsyncResult *result, gpointer data)
{
    g_autoptr(GError) error = NULL;
    gboolean ok = hyocr_keyring_store_finish(result, &error);
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) return;
    HyocrPreferences *self = data;
    self->keys_kept++;
    if (ok || !error) return;
    g_autofree char *msg = g_strdup_printf(_("The key could not be kept in the keyring (%s); it is used until hyocr "
                                             "closes"), error->message);
    adw_preferences_window_add_toast(ADW_PREFERENCES_WINDOW(self), adw_toast_new(msg));
}

/* A key forgotten: nothing to say when there was no keyring to forget it in. */
static void key_forgotten(GObject *source, GAsyncResult *result, gpointer data)
{
    g_autoptr(GError) error = NULL;
    hyocr_keyring_store_finish(result, &error);
    if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) ((HyocrPreferences *)data)->keys_kept++;
}

/* A key and a trusted certificate belong to the address they were given for: when
 * it changes (or is emptied: the server removed) they go, so a key never reaches
 * a server it was not given for and the keyring keeps none for a server gone. */
static void url_applied(AdwEntryRow *row, HyocrPreferences *self)
{
    const char *url = gtk_editable_get_text(GTK_EDITABLE(row));
    g_autofree char *old = g_settings_get_string(self->settings, "server-url");
    if (g_str_equal(old, url)) return;
    hyocr_certificate_forget_unless(self->settings, url);
    if (*old) {
        hyocr_window_set_server_key(self->window, NULL);
        gtk_editable_set_text(GTK_EDITABLE(self->server_key_row), "");
        hyocr_keyring_store(old, NULL, self->cancellable, key_forgotten, self);
    }
    g_settings_set_string(self->settings, "server-url", url);
}

static void key_applied(AdwEntryRow *row, HyocrPreferences *self)
{
    const char *key = gtk_editable_get_text(GTK_EDITABLE(row));
    g_autofree char *url = g_settings_get_string(self->settings, "server-url");
    hyocr_window_set_server_key(self->window, key);
    hyocr_keyring_store(url, key, self->cancellable, key_stored, self);
}

static void model_picked(AdwComboRow *row, GParamSpec *pspec, HyocrPreferences *self)
{
    if (self->filling) return;
    GtkStringObject *item = adw_combo_row_get_selected_item(row);
    if (item) g_settings_set_string(self->settings, "server-model", gtk_string_object_get_string(item));
}

/* The models listed, the saved one selected (kept in the list though the server did not list it). */
static void fill_models(HyocrPreferences *self, char **names)
{
    g_autofree char *saved = g_settings_get_string(self->settings, "server-model");
    self->filling = TRUE;
    gtk_string_list_splice(self->server_models, 0, g_list_model_get_n_items(G_LIST_MODEL(self->server_models)),
                           (const char *const *)names);
    guint pick = GTK_INVALID_LIST_POSITION;
    for (guint i = 0; names && names[i]; i++)
        if (g_str_equal(names[i], saved)) pick = i;
    if (*saved && pick == GTK_INVALID_LIST_POSITION) {
        gtk_string_list_append(self->server_models, saved);
        pick = g_list_model_get_n_items(G_LIST_MODEL(self->server_models)) - 1;
    }
    adw_combo_row_set_selected(self->server_model_row, pick == GTK_INVALID_LIST_POSITION ? 0 : pick);
    self->filling = FALSE;
}

typedef struct {
    char *url, *key, *model, *fingerprint;
    char **names;
} ConnectionTest;

static void connection_test_free(ConnectionTest *t)
{
    g_free(t->url);
    if (t->key) memset(t->key, 0, strlen(t->key));
    g_free(t->key);
    g_free(t->model);
    g_free(t->fingerprint);
    g_strfreev(t->names);
    g_free(t);
}

/* On a thread: exactly what is wrong, in the engine's words (DNS, refused, TLS, 401,
 * the model, not an OpenAI-compatible server). */
static void test_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    ConnectionTest *t = data;
#if HYOCR_HAVE_DOWNLOAD
    if (!t->key) t->key = hyocr_keyring_lookup(t->url);
    hyocr_remote_params rp;
    hyocr_remote_params_init(&rp);
    rp.url = t->url;
    rp.api_key = t->key;
    rp.model = t->model && *t->model ? t->model : NULL;
    rp.concurrency = 1;
    rp.trusted_fingerprint = t->fingerprint;
    GError *error = NULL;
    g_autoptr(hyocr_remote) r = hyocr_remote_new(&rp, &error);
    if (r && hyocr_remote_check(r, &t->names, &error)) {
        g_task_return_pointer(task, g_strdup_printf(_("Connected: %s serves %s"), hyocr_remote_server_name(r),
                                                    hyocr_remote_model(r)), g_free);
        return;
    }
    if (!t->names && g_error_matches(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MODEL)) {
        /* the list, so the right model can be picked */
        rp.model = NULL;
        g_autoptr(hyocr_remote) any = hyocr_remote_new(&rp, NULL);
        if (any) hyocr_remote_check(any, &t->names, NULL);
    }
    g_task_return_error(task, error);
#else
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            _("this build of hyocr cannot reach servers (it was built without libsoup)"));
#endif
}

static void test_answered(GObject *source, GAsyncResult *result, gpointer data)
{
    GTask *task = G_TASK(result);
    g_autoptr(GError) error = NULL;
    g_autofree char *ok = g_task_propagate_pointer(task, &error);
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) return;
    HyocrPreferences *self = data;
    ConnectionTest *t = g_task_get_task_data(task);
    if (t->names) fill_models(self, t->names);
    adw_action_row_set_subtitle(self->test_row, ok ? ok : error->message);
    /* a certificate the system does not trust: the user may, after seeing it */
    g_clear_error(&self->refused);
    g_clear_pointer(&self->refused_url, g_free);
    if (hyocr_certificate_refused(error)) {
        self->refused = g_steal_pointer(&error);
        self->refused_url = g_strdup(t->url);
    }
    gtk_widget_set_visible(self->trust_button, self->refused != NULL);
    gtk_widget_set_sensitive(self->test_button, TRUE);
    self->tests_done++;
}

void hyocr_preferences_test_connection(HyocrPreferences *self)
{
    ConnectionTest *t = g_new0(ConnectionTest, 1);
    t->url = g_strdup(gtk_editable_get_text(GTK_EDITABLE(self->server_url_row)));
    const char *typed = gtk_editable_get_text(GTK_EDITABLE(self->server_key_row));
    t->key = *typed ? g_strdup(typed) : NULL;
    t->model = g_settings_get_string(self->settings, "server-model");
    t->fingerprint = hyocr_certificate_trusted_for(self->settings, t->url);
    adw_action_row_set_subtitle(self->test_row, _("Testing…"));
    gtk_widget_set_sensitive(self->test_button, FALSE);
    g_autoptr(GTask) task = g_task_new(NULL, self->cancellable, test_answered, self);
    g_task_set_task_data(task, t, (GDestroyNotify)connection_test_free);
    g_task_set_return_on_cancel(task, TRUE);
    g_task_run_in_thread(task, test_thread);
}

static void trust_answered(AdwMessageDialog *dialog, const char *response, HyocrPreferences *self)
{
    if (g_str_equal(response, "trust")) hyocr_preferences_test_connection(self);
}

AdwMessageDialog *hyocr_preferences_ask_trust(HyocrPreferences *self)
{
    if (!self->refused) return NULL;
    AdwMessageDialog *dialog = hyocr_certificate_dialog_present(GTK_WINDOW(self), self->settings, self->refused_url,
                                                                self->refused);
    /* after the dialog's own handler has kept the certificate: the test again */
    g_signal_connect_object(dialog, "response", G_CALLBACK(trust_answered), self, 0);
    return dialog;
}

int hyocr_preferences_get_keys_kept(HyocrPreferences *self)
{
    return self->keys_kept;
}

GtkWidget *hyocr_preferences_get_row(HyocrPreferences *self, const char *name)
{
    return GTK_WIDGET(gtk_widget_get_template_child(GTK_WIDGET(self), HYOCR_TYPE_PREFERENCES, name));
}

const char *hyocr_preferences_get_connection_result(HyocrPreferences *self, int *tests_done)
{
    if (tests_done) *tests_done = self->tests_done;
    return adw_action_row_get_subtitle(self->test_row);
}

static void bind_runner(HyocrPreferences *self)
{
    GSettings *s = self->settings;
    g_settings_bind_with_mapping(s, "runner", self->runner_row, "selected", G_SETTINGS_BIND_DEFAULT,
                                 runner_to_selected, selected_to_runner, NULL, NULL);
    g_autofree char *url = g_settings_get_string(s, "server-url");
    gtk_editable_set_text(GTK_EDITABLE(self->server_url_row), url);
    g_signal_connect(self->server_url_row, "apply", G_CALLBACK(url_applied), self);
    g_signal_connect(self->server_key_row, "apply", G_CALLBACK(key_applied), self);
    g_autofree char *model = g_settings_get_string(s, "server-model");
    const char *one[] = { model, NULL };
    fill_models(self, *model ? (char **)one : NULL);
    g_signal_connect(self->server_model_row, "notify::selected", G_CALLBACK(model_picked), self);
    g_signal_connect_swapped(self->test_button, "clicked", G_CALLBACK(hyocr_preferences_test_connection), self);
    g_signal_connect_swapped(self->trust_button, "clicked", G_CALLBACK(hyocr_preferences_ask_trust), self);
    g_signal_connect_swapped(self->runner_row, "notify::selected", G_CALLBACK(update_runner_rows), self);
    update_runner_rows(self);
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
    bind_runner(self);
}

static void hyocr_preferences_dispose(GObject *object)
{
    HyocrPreferences *self = HYOCR_PREFERENCES(object);
    /* A binding lives as long as its widget, which may outlive the window: a later
     * change of the setting would reach our handlers with the template gone. */
    if (self->runner_row) {
        g_settings_unbind(self->device_row, "selected");
        g_settings_unbind(self->memory_adjustment, "value");
        g_settings_unbind(self->tokens_adjustment, "value");
        g_settings_unbind(self->side_adjustment, "value");
        g_settings_unbind(self->penalty_adjustment, "value");
        g_settings_unbind(self->history_switch, "active");
        g_settings_unbind(self->runner_row, "selected");
        g_signal_handlers_disconnect_by_data(self->runner_row, self);
        g_signal_handlers_disconnect_by_data(self->server_model_row, self);
    }
    if (self->cancellable) g_cancellable_cancel(self->cancellable);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->settings);
    g_clear_error(&self->refused);
    g_clear_pointer(&self->refused_url, g_free);
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
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, runner_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, server_url_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, server_key_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, server_model_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, server_models);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, test_row);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, test_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrPreferences, trust_button);
}

static void hyocr_preferences_init(HyocrPreferences *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->cancellable = g_cancellable_new();
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
