/* hyocr-gtk — history view. */
#include "hyocr-history-view-private.h"
#include <glib/gi18n.h>

/* The newest entries a page shows; the search reaches all of them. */
#define MAX_SHOWN 200
#define SNIPPET_CHARS 90

struct _HyocrHistoryView {
    AdwBin          parent_instance;
    GtkSearchEntry *search_entry;
    GtkWidget      *clear_button;
    GtkStack       *stack;
    GtkListBox     *list;
    AdwStatusPage  *empty_page;

    hyocr_history  *history;   /* the window's */
    GPtrArray      *entries;   /* hyocr_history_entry, as shown */
};

G_DEFINE_FINAL_TYPE(HyocrHistoryView, hyocr_history_view, ADW_TYPE_BIN)

enum { SIGNAL_OPEN, SIGNAL_RUN_AGAIN, SIGNAL_EXPORT, SIGNAL_NOTICE, N_SIGNALS };
static guint signals[N_SIGNALS];

static const char *state_label(hyocr_history_state state)
{
    switch (state) {
    case HYOCR_HISTORY_QUEUED: return _("Running");
    case HYOCR_HISTORY_DONE: return _("Done");
    case HYOCR_HISTORY_FAILED: return _("Failed");
    case HYOCR_HISTORY_CANCELLED: return _("Cancelled");
    case HYOCR_HISTORY_INTERRUPTED: return _("Interrupted");
    }
    return "";
}

/* "Yesterday 14:02 · Done · the first words of the text…" */
static char *row_subtitle(const hyocr_history_entry *e)
{
    g_autoptr(GDateTime) when = g_date_time_new_from_unix_local(e->created / G_USEC_PER_SEC);
    /* Translators: the date and time a job was queued, strftime format */
    g_autofree char *date = when ? g_date_time_format(when, _("%Y-%m-%d %H:%M")) : g_strdup("");
    const char *body = e->state == HYOCR_HISTORY_DONE ? e->text : e->error ? e->error : "";
    /* g_utf8_substring reads past the end of a shorter string: the end is clamped */
    g_autofree char *start = g_utf8_substring(body, 0, MIN(g_utf8_strlen(body, -1), SNIPPET_CHARS));
    g_strdelimit(start, "\n\r\t", ' ');
    g_autofree char *line = g_strstrip(g_strdup(start));
    g_autofree char *plain = *line ? g_strdup_printf("%s · %s · %s", date, state_label(e->state), line)
                                   : g_strdup_printf("%s · %s", date, state_label(e->state));
    return g_markup_escape_text(plain, -1);
}

static gint64 row_id(GtkWidget *widget)
{
    gint64 *id = g_object_get_data(G_OBJECT(widget), "hyocr-history-id");
    return id ? *id : 0;
}

static void set_row_id(GObject *object, gint64 id)
{
    g_object_set_data_full(object, "hyocr-history-id", g_memdup2(&id, sizeof id), g_free);
}

/* ---- the rows' menu: actions on the view, the entry's id as parameter ---- */

static void open_action(GtkWidget *w, const char *name, GVariant *p)
{
    g_signal_emit(w, signals[SIGNAL_OPEN], 0, g_variant_get_int64(p));
}

static void export_action(GtkWidget *w, const char *name, GVariant *p)
{
    g_signal_emit(w, signals[SIGNAL_EXPORT], 0, g_variant_get_int64(p));
}

static void run_again_action(GtkWidget *w, const char *name, GVariant *p)
{
    g_signal_emit(w, signals[SIGNAL_RUN_AGAIN], 0, g_variant_get_int64(p));
}

static void details_action(GtkWidget *w, const char *name, GVariant *p)
{
    hyocr_history_view_copy_details(HYOCR_HISTORY_VIEW(w), g_variant_get_int64(p));
}

static void delete_action(GtkWidget *w, const char *name, GVariant *p)
{
    hyocr_history_view_delete(HYOCR_HISTORY_VIEW(w), g_variant_get_int64(p));
}

static void add_item(GMenu *menu, const char *label, const char *action, gint64 id)
{
    g_autoptr(GMenuItem) item = g_menu_item_new(label, NULL);
    g_menu_item_set_action_and_target_value(item, action, g_variant_new_int64(id));
    g_menu_append_item(menu, item);
}

/* One menu button a row: a 360 px window has no room for a button per action. */
static GtkWidget *row_menu(const hyocr_history_entry *e)
{
    g_autoptr(GMenu) menu = g_menu_new();
    add_item(menu, _("_Open"), "history.open", e->id);
    if (e->state == HYOCR_HISTORY_DONE) add_item(menu, _("_Export…"), "history.export", e->id);
    else add_item(menu, _("_Run Again"), "history.run-again", e->id);
    if (e->state == HYOCR_HISTORY_FAILED) add_item(menu, _("_Copy Details"), "history.copy-details", e->id);
    add_item(menu, _("_Delete"), "history.delete", e->id);
    GtkWidget *button = gtk_menu_button_new();
    gtk_menu_button_set_icon_name(GTK_MENU_BUTTON(button), "view-more-symbolic");
    gtk_menu_button_set_menu_model(GTK_MENU_BUTTON(button), G_MENU_MODEL(menu));
    gtk_widget_set_valign(button, GTK_ALIGN_CENTER);
    gtk_widget_add_css_class(button, "flat");
    gtk_widget_set_tooltip_text(button, _("More"));
    return button;
}

static GtkWidget *make_row(HyocrHistoryView *self, const hyocr_history_entry *e)
{
    GtkWidget *row = adw_action_row_new();
    g_autofree char *title = g_markup_escape_text(e->title, -1);
    adw_preferences_row_set_title(ADW_PREFERENCES_ROW(row), title);
    g_autofree char *subtitle = row_subtitle(e);
    adw_action_row_set_subtitle(ADW_ACTION_ROW(row), subtitle);
    /* limited lines ellipsize: a long file name must not widen the window */
    adw_action_row_set_title_lines(ADW_ACTION_ROW(row), 1);
    adw_action_row_set_subtitle_lines(ADW_ACTION_ROW(row), 2);
    set_row_id(G_OBJECT(row), e->id);
    gtk_list_box_row_set_activatable(GTK_LIST_BOX_ROW(row), TRUE);
    adw_action_row_add_suffix(ADW_ACTION_ROW(row), row_menu(e));
    return row;
}

static void show_empty(HyocrHistoryView *self, gboolean searching)
{
    if (!self->history) {
        adw_status_page_set_title(self->empty_page, _("History Is Off"));
        adw_status_page_set_description(self->empty_page, _("Turn it on in Preferences to keep every result."));
    } else if (searching) {
        adw_status_page_set_title(self->empty_page, _("No Results Found"));
        adw_status_page_set_description(self->empty_page, _("No past result holds this text."));
    } else {
        adw_status_page_set_title(self->empty_page, _("No History Yet"));
        adw_status_page_set_description(self->empty_page, _("Every job you run is kept here, with its image and result."));
    }
    gtk_stack_set_visible_child_name(self->stack, "empty");
}

void hyocr_history_view_reload(HyocrHistoryView *self)
{
    g_return_if_fail(HYOCR_IS_HISTORY_VIEW(self));
    for (GtkWidget *c; (c = gtk_widget_get_first_child(GTK_WIDGET(self->list)));) gtk_list_box_remove(self->list, c);
    g_ptr_array_set_size(self->entries, 0);
    const char *search = gtk_editable_get_text(GTK_EDITABLE(self->search_entry));
    gtk_widget_set_sensitive(GTK_WIDGET(self->search_entry), self->history != NULL);
    gtk_widget_set_sensitive(self->clear_button, self->history != NULL);
    if (!self->history) {
        show_empty(self, FALSE);
        return;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) found = hyocr_history_query(self->history, search, MAX_SHOWN, &error);
    if (!found) {
        g_autofree char *msg = g_strdup_printf(_("The history cannot be read: %s"), error->message);
        g_signal_emit(self, signals[SIGNAL_NOTICE], 0, msg);
        show_empty(self, FALSE);
        return;
    }
    for (guint i = 0; i < found->len; i++) {
        hyocr_history_entry *e = found->pdata[i];
        gtk_list_box_append(self->list, make_row(self, e));
    }
    g_ptr_array_extend_and_steal(self->entries, g_steal_pointer(&found));
    if (self->entries->len) gtk_stack_set_visible_child_name(self->stack, "list");
    else show_empty(self, *search != '\0');
}

void hyocr_history_view_set_history(HyocrHistoryView *self, hyocr_history *history)
{
    self->history = history;
    hyocr_history_view_reload(self);
}

guint hyocr_history_view_get_n_entries(HyocrHistoryView *self)
{
    return self->entries->len;
}

GtkEditable *hyocr_history_view_get_search(HyocrHistoryView *self)
{
    return GTK_EDITABLE(self->search_entry);
}

gint64 hyocr_history_view_get_entry_id(HyocrHistoryView *self, guint index)
{
    return index < self->entries->len ? ((hyocr_history_entry *)self->entries->pdata[index])->id : 0;
}

hyocr_history_state hyocr_history_view_get_entry_state(HyocrHistoryView *self, guint index)
{
    g_return_val_if_fail(index < self->entries->len, HYOCR_HISTORY_QUEUED);
    return ((hyocr_history_entry *)self->entries->pdata[index])->state;
}

void hyocr_history_view_delete(HyocrHistoryView *self, gint64 id)
{
    g_autoptr(GError) error = NULL;
    if (self->history && !hyocr_history_delete(self->history, id, &error)) {
        g_autofree char *msg = g_strdup_printf(_("The entry could not be deleted: %s"), error->message);
        g_signal_emit(self, signals[SIGNAL_NOTICE], 0, msg);
    }
    hyocr_history_view_reload(self);
}

void hyocr_history_view_copy_details(HyocrHistoryView *self, gint64 id)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_history_entry) e = self->history ? hyocr_history_get(self->history, id, &error) : NULL;
    if (!e) {
        if (error) g_signal_emit(self, signals[SIGNAL_NOTICE], 0, error->message);
        return;
    }
    g_autofree char *details = hyocr_history_entry_describe(e);
    gdk_clipboard_set_text(gtk_widget_get_clipboard(GTK_WIDGET(self)), details);
    g_signal_emit(self, signals[SIGNAL_NOTICE], 0, _("The details are on the clipboard, ready for a bug report"));
}

void hyocr_history_view_clear(HyocrHistoryView *self)
{
    g_autoptr(GError) error = NULL;
    if (self->history && !hyocr_history_clear(self->history, &error)) {
        g_autofree char *msg = g_strdup_printf(_("The history could not be cleared: %s"), error->message);
        g_signal_emit(self, signals[SIGNAL_NOTICE], 0, msg);
    }
    hyocr_history_view_reload(self);
}

static void on_clear_response(AdwMessageDialog *dialog, const char *response, HyocrHistoryView *self)
{
    if (g_str_equal(response, "clear")) hyocr_history_view_clear(self);
}

static void clear_clicked(GtkButton *button, HyocrHistoryView *self)
{
    GtkRoot *root = gtk_widget_get_root(GTK_WIDGET(self));
    GtkWidget *dialog = adw_message_dialog_new(GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL, _("Clear the History?"),
                                               _("Every past result, its image and its details are deleted from this "
                                                 "computer. The jobs in the window stay."));
    adw_message_dialog_add_responses(ADW_MESSAGE_DIALOG(dialog), "cancel", _("_Cancel"), "clear", _("_Clear All"), NULL);
    adw_message_dialog_set_response_appearance(ADW_MESSAGE_DIALOG(dialog), "clear", ADW_RESPONSE_DESTRUCTIVE);
    adw_message_dialog_set_close_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    g_signal_connect_object(dialog, "response", G_CALLBACK(on_clear_response), self, 0);
    gtk_window_present(GTK_WINDOW(dialog));
}

static void on_row_activated(GtkListBox *list, GtkListBoxRow *row, HyocrHistoryView *self)
{
    g_signal_emit(self, signals[SIGNAL_OPEN], 0, row_id(GTK_WIDGET(row)));
}

static void hyocr_history_view_dispose(GObject *object)
{
    HyocrHistoryView *self = HYOCR_HISTORY_VIEW(object);
    self->history = NULL;
    gtk_widget_dispose_template(GTK_WIDGET(self), HYOCR_TYPE_HISTORY_VIEW);
    G_OBJECT_CLASS(hyocr_history_view_parent_class)->dispose(object);
}

static void hyocr_history_view_finalize(GObject *object)
{
    g_ptr_array_unref(HYOCR_HISTORY_VIEW(object)->entries);
    G_OBJECT_CLASS(hyocr_history_view_parent_class)->finalize(object);
}

static void hyocr_history_view_class_init(HyocrHistoryViewClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_history_view_dispose;
    object_class->finalize = hyocr_history_view_finalize;
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-history-view.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrHistoryView, search_entry);
    gtk_widget_class_bind_template_child(widget_class, HyocrHistoryView, clear_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrHistoryView, stack);
    gtk_widget_class_bind_template_child(widget_class, HyocrHistoryView, list);
    gtk_widget_class_bind_template_child(widget_class, HyocrHistoryView, empty_page);
    gtk_widget_class_install_action(widget_class, "history.open", "x", open_action);
    gtk_widget_class_install_action(widget_class, "history.export", "x", export_action);
    gtk_widget_class_install_action(widget_class, "history.run-again", "x", run_again_action);
    gtk_widget_class_install_action(widget_class, "history.copy-details", "x", details_action);
    gtk_widget_class_install_action(widget_class, "history.delete", "x", delete_action);
    /* open, run-again, export: (gint64 entry id); notice: (string) a message for a toast */
    signals[SIGNAL_OPEN] = g_signal_new("open", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                        G_TYPE_NONE, 1, G_TYPE_INT64);
    signals[SIGNAL_RUN_AGAIN] = g_signal_new("run-again", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                             NULL, G_TYPE_NONE, 1, G_TYPE_INT64);
    signals[SIGNAL_EXPORT] = g_signal_new("export", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                          G_TYPE_NONE, 1, G_TYPE_INT64);
    signals[SIGNAL_NOTICE] = g_signal_new("notice", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                          G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void hyocr_history_view_init(HyocrHistoryView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->entries = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_history_entry_free);
    g_signal_connect_swapped(self->search_entry, "search-changed", G_CALLBACK(hyocr_history_view_reload), self);
    g_signal_connect(self->clear_button, "clicked", G_CALLBACK(clear_clicked), self);
    g_signal_connect(self->list, "row-activated", G_CALLBACK(on_row_activated), self);
    show_empty(self, FALSE);
}
