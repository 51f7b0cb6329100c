/* hyocr-gtk — nothing lost by a click: closing the window with jobs running or
 * waiting asks first, saying what would be lost; removing jobs can be undone, and
 * "Remove Finished Jobs" keeps the results the history has not stored. */
#include "hyocr-window-private.h"
#include <glib/gi18n.h>

/* ---- closing ---- */

/* "“scan.pdf” is being read. 3 more wait." and what becomes of them. */
static char *close_body(HyocrWindow *self, guint n_active, guint n_waiting, guint n_unstored, const char *first)
{
    GString *s = g_string_new(NULL);
    if (n_active == 1) g_string_append_printf(s, _("“%s” is being read"), first);
    else if (n_active) g_string_append_printf(s, _("“%s” and %u more are being read"), first, n_active - 1);
    if (n_waiting) {
        /* Translators: between "“a.png” is being read" and "2 jobs wait" */
        if (s->len) g_string_append(s, _("; "));
        g_string_append_printf(s, ngettext("%u job waits", "%u jobs wait", n_waiting), n_waiting);
    }
    /* Translators: ends the sentence of what runs and waits, before what becomes of them */
    g_string_append(s, _(". "));
    if (self->history)
        g_string_append(s, _("They stop now; the history keeps every finished result, and lists these as "
                             "interrupted, to run again."));
    else
        g_string_append(s, _("They stop now and their results are lost: the history is off."));
    if (n_unstored) {
        g_string_append_c(s, ' ');
        g_string_append_printf(s, ngettext("%u finished result is not in the history and is lost too.",
                                           "%u finished results are not in the history and are lost too.", n_unstored),
                               n_unstored);
    }
    return g_string_free(s, FALSE);
}

static gboolean close_later(gpointer data)
{
    g_autoptr(HyocrWindow) self = g_weak_ref_get(data);
    if (self) gtk_window_close(GTK_WINDOW(self));
    return G_SOURCE_REMOVE;
}

static void weak_ref_free(gpointer data)
{
    g_weak_ref_clear(data);
    g_free(data);
}

static void on_close_response(AdwMessageDialog *dialog, const char *response, HyocrWindow *self)
{
    g_signal_handlers_disconnect_by_func(dialog, on_close_response, self);
    self->close_dialog = NULL;
    if (!g_str_equal(response, "close")) return;
    self->close_confirmed = TRUE;
    /* once the dialog is done with its response: closing now would destroy it (its
     * transient parent goes) in the middle of it */
    GWeakRef *ref = g_new0(GWeakRef, 1);
    g_weak_ref_init(ref, self);
    g_idle_add_full(G_PRIORITY_DEFAULT, close_later, ref, weak_ref_free);
}

gboolean hyocr_window_confirm_close(HyocrWindow *self)
{
    if (self->close_confirmed) return TRUE;
    guint n_active = 0, n_waiting = 0, n_unstored = 0;
    const char *first = NULL;
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) job = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (hyocr_job_is_active(job) && !n_active++) first = hyocr_job_get_title(job);
        else if (hyocr_job_get_state(job) == HYOCR_JOB_QUEUED) n_waiting++;
        else if (hyocr_job_get_state(job) == HYOCR_JOB_DONE && !hyocr_job_is_stored(job)) n_unstored++;
    }
    if (!n_active && !n_waiting) return TRUE;
    if (self->close_dialog) return FALSE;   /* asking already */
    guint n = n_active + n_waiting;
    g_autofree char *body = close_body(self, n_active, n_waiting, n_unstored, first);
    g_autofree char *heading = g_strdup_printf(ngettext("Stop %u Job and Close?", "Stop %u Jobs and Close?", n), n);
    GtkWidget *dialog = adw_message_dialog_new(GTK_WINDOW(self), heading, body);
    adw_message_dialog_add_responses(ADW_MESSAGE_DIALOG(dialog), "cancel", _("_Keep Running"), "close",
                                     _("_Stop and Close"), NULL);
    adw_message_dialog_set_response_appearance(ADW_MESSAGE_DIALOG(dialog), "close", ADW_RESPONSE_DESTRUCTIVE);
    adw_message_dialog_set_default_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    adw_message_dialog_set_close_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    g_signal_connect(dialog, "response", G_CALLBACK(on_close_response), self);
    self->close_dialog = dialog;
    gtk_window_present(GTK_WINDOW(dialog));
    return FALSE;
}

/* ---- removing, with Undo ---- */

typedef struct {
    HyocrJob *job;
    guint     position;
} Removed;

static void removed_clear(gpointer data)
{
    g_clear_object(&((Removed *)data)->job);
}

static void on_undo_dismissed(AdwToast *toast, HyocrWindow *self)
{
    if (self->undo_toast != toast) return;
    self->undo_toast = NULL;
    g_array_set_size(self->removed, 0);
}

static void show_undo(HyocrWindow *self, const char *message)
{
    if (self->undo_toast) {
        AdwToast *old = self->undo_toast;
        self->undo_toast = NULL;   /* its jobs are the new removal's now */
        adw_toast_dismiss(old);
    }
    AdwToast *toast = adw_toast_new(message);
    adw_toast_set_button_label(toast, _("_Undo"));
    adw_toast_set_action_name(toast, "win.undo-remove");
    adw_toast_set_timeout(toast, 10);
    g_signal_connect_object(toast, "dismissed", G_CALLBACK(on_undo_dismissed), self, 0);
    self->undo_toast = toast;
    adw_toast_overlay_add_toast(self->toast_overlay, toast);
    self->n_toasts++;
    g_free(self->last_toast);
    self->last_toast = g_strdup(message);
}

/* Removes the jobs at these positions (ascending), kept for Undo. */
static void remove_positions(HyocrWindow *self, GArray *positions)
{
    for (guint i = positions->len; i-- > 0;) {
        guint pos = g_array_index(positions, guint, i);
        Removed r = { g_list_model_get_item(G_LIST_MODEL(self->jobs), pos), pos };
        hyocr_job_cancel(r.job);
        g_list_store_remove(self->jobs, pos);
        g_array_append_val(self->removed, r);
    }
}

void hyocr_window_remove_job(HyocrWindow *self, guint id)
{
    guint pos;
    HyocrJob *job = hyocr_window_find_job(self, id, &pos);
    if (!job) return;
    g_autofree char *msg = g_strdup_printf(_("“%s” removed"), hyocr_job_get_title(job));
    g_autoptr(GArray) positions = g_array_new(FALSE, FALSE, sizeof(guint));
    g_array_append_val(positions, pos);
    g_array_set_size(self->removed, 0);
    remove_positions(self, positions);
    show_undo(self, msg);
}

guint hyocr_window_remove_finished(HyocrWindow *self)
{
    g_autoptr(GArray) positions = g_array_new(FALSE, FALSE, sizeof(guint));
    guint kept = 0;
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) job = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (!hyocr_job_is_finished(job)) continue;
        /* a result only this window holds stays in it */
        if (hyocr_job_get_state(job) == HYOCR_JOB_DONE && !hyocr_job_is_stored(job)) {
            kept++;
            continue;
        }
        g_array_append_val(positions, i);
    }
    if (!positions->len) {
        if (kept)
            hyocr_window_toast(self, ngettext("The finished job stays: its result is not in the history",
                                              "The finished jobs stay: their results are not in the history", kept));
        return 0;
    }
    g_array_set_size(self->removed, 0);
    remove_positions(self, positions);
    g_autofree char *msg = kept ? g_strdup_printf(ngettext("%u finished job removed; those whose results are not in "
                                                           "the history stay",
                                                           "%u finished jobs removed; those whose results are not in "
                                                           "the history stay", positions->len), positions->len)
                                : g_strdup_printf(ngettext("%u finished job removed", "%u finished jobs removed",
                                                           positions->len), positions->len);
    show_undo(self, msg);
    return positions->len;
}

/* The jobs of the last removal back in their places (a cancelled one stays cancelled). */
guint hyocr_window_undo_remove(HyocrWindow *self)
{
    guint n = self->removed->len;
    /* removed last-first: put back first-first, so each position is right again */
    for (guint i = n; i-- > 0;) {
        Removed *r = &g_array_index(self->removed, Removed, i);
        guint at = MIN(r->position, g_list_model_get_n_items(G_LIST_MODEL(self->jobs)));
        g_list_store_insert(self->jobs, at, r->job);
    }
    g_array_set_size(self->removed, 0);
    if (self->undo_toast) {
        AdwToast *toast = self->undo_toast;
        self->undo_toast = NULL;
        adw_toast_dismiss(toast);
    }
    return n;
}

void hyocr_window_setup_guard(HyocrWindow *self)
{
    self->removed = g_array_new(FALSE, FALSE, sizeof(Removed));
    g_array_set_clear_func(self->removed, removed_clear);
}

void hyocr_window_clear_guard(HyocrWindow *self)
{
    if (self->close_dialog) {
        g_signal_handlers_disconnect_by_func(self->close_dialog, on_close_response, self);
        self->close_dialog = NULL;
    }
    self->undo_toast = NULL;
    g_clear_pointer(&self->removed, g_array_unref);
}

GtkWidget *hyocr_window_get_close_dialog(HyocrWindow *self) { return self->close_dialog; }
