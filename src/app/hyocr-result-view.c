/* hyocr-gtk — result view. */
#include "hyocr-result-view-private.h"
#include "hyocr-image-util.h"
#include "hyocr-json.h"
#include "json.h"
#include "hyocr-rendered-view.h"
#include "hyocr-spotting.h"
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>

#define STATUS_TICK_MS 200
#define DISPLAY_SIDE   2048   /* the shown job's image, read again from its file: sharp at 2× on a wide window */

struct _HyocrResultView {
    GtkWidget       parent_instance;

    GtkLabel       *title_label;
    GtkLabel       *status_label;
    GtkWidget      *cancel_button;
    GtkWidget      *copy_button;
    GtkWidget      *save_button;
    GtkWidget      *back_button;
    GtkWidget      *again_button;
    GtkToggleButton *image_button;
    GtkWidget      *mode_box;
    GtkToggleButton *rendered_button;
    GtkToggleButton *source_button;
    HyocrRenderedView *rendered_view;
    AdwFlap        *flap;
    GtkProgressBar *progress_bar;
    HyocrImageView *image_view;
    GtkStack       *content_stack;
    GtkScrolledWindow *text_scroller;
    GtkTextView    *text_view;
    GtkListBox     *lines_list;
    AdwStatusPage  *message_page;

    HyocrJob       *job;
    GSignalGroup   *job_signals;
    GPtrArray      *lines;        /* spotting: parsed so far */
    guint           status_tick;
    GString        *pending;       /* streamed text waiting for the next after-paint */
    GdkTexture     *display;       /* the shown file job's image at display size; only this job's */
    gboolean        show_back;
    guint           fold_sync;
    GCancellable   *display_load;
    guint           render_idle;   /* the rendered view follows the text, once per main loop turn */
    gulong          after_paint;
    GdkFrameClock  *after_paint_clock;
};

G_DEFINE_FINAL_TYPE(HyocrResultView, hyocr_result_view, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_JOB, N_PROPS };
static GParamSpec *props[N_PROPS];

static gboolean is_spotting(HyocrResultView *self)
{
    return self->job && hyocr_job_get_options(self->job)->preset == HYOCR_PRESET_SPOTTING;
}

static gboolean is_fields(HyocrResultView *self)
{
    return self->job && hyocr_job_get_options(self->job)->preset == HYOCR_PRESET_EXTRACT_FIELDS;
}

/* A parse answer (Markdown, HTML tables, LaTeX) has a rendered view. */
static gboolean is_parse(HyocrResultView *self)
{
    return self->job && hyocr_preset_is_parse(hyocr_job_get_options(self->job)->preset);
}

/* A finished parse answer with text: rendered or as written. While it is written
 * the text streams as written (a rendered view of a long document would be laid
 * out again at every piece). */
static gboolean has_rendering(HyocrResultView *self)
{
    HyocrJobState st = self->job ? hyocr_job_get_state(self->job) : HYOCR_JOB_QUEUED;
    return is_parse(self) && (st == HYOCR_JOB_DONE || st == HYOCR_JOB_CANCELLED) && *hyocr_job_get_text(self->job);
}

static gboolean shows_rendered(HyocrResultView *self)
{
    return has_rendering(self) && gtk_toggle_button_get_active(self->rendered_button);
}

/* ---- rendered ---- */

static gboolean render_cb(gpointer data)
{
    HyocrResultView *self = data;
    self->render_idle = 0;
    hyocr_rendered_view_set_markdown(self->rendered_view, self->job ? hyocr_job_get_text(self->job) : NULL);
    return G_SOURCE_REMOVE;
}

/* Rendered once written, again if the text changes after (a restart, a reload). */
static void queue_render(HyocrResultView *self)
{
    if (!has_rendering(self)) {
        g_clear_handle_id(&self->render_idle, g_source_remove);
        hyocr_rendered_view_set_markdown(self->rendered_view, NULL);
        return;
    }
    if (!self->render_idle) self->render_idle = g_idle_add(render_cb, self);
}

/* ---- status line ---- */

static char *status_text(HyocrJob *job)
{
    HyocrJobState st = hyocr_job_get_state(job);
    const char *label = hyocr_job_state_get_label(st);
    double secs = hyocr_job_get_elapsed(job);
    int n = hyocr_job_get_n_tokens(job);
    if (st == HYOCR_JOB_QUEUED) return g_strdup(label);
    if (st == HYOCR_JOB_FAILED) return g_strdup_printf(_("%s after %.1f s"), label, secs);
    /* Translators: "Writing · 120 tokens · 3.4 s" */
    return g_strdup_printf(ngettext("%s · %d token · %.1f s", "%s · %d tokens · %.1f s", (gulong)n), label, n, secs);
}

static void update_status(HyocrResultView *self)
{
    if (!self->job) return;
    g_autofree char *text = status_text(self->job);
    gtk_label_set_text(self->status_label, text);
    gtk_progress_bar_set_fraction(self->progress_bar, hyocr_job_get_progress(self->job));
}

static gboolean status_tick_cb(gpointer data)
{
    update_status(data);
    return G_SOURCE_CONTINUE;
}

/* Elapsed time moves even when no token arrives (vision on a slow CPU). */
static void sync_status_tick(HyocrResultView *self)
{
    gboolean want = self->job && hyocr_job_is_active(self->job);
    if (want && !self->status_tick)
        self->status_tick = g_timeout_add(STATUS_TICK_MS, status_tick_cb, self);
    else if (!want)
        g_clear_handle_id(&self->status_tick, g_source_remove);
}

/* ---- spotting lines ---- */

static void row_enter(GtkEventControllerMotion *motion, double x, double y, gpointer data)
{
    HyocrResultView *self = data;
    GtkWidget *row = gtk_event_controller_get_widget(GTK_EVENT_CONTROLLER(motion));
    hyocr_image_view_set_highlight(self->image_view, gtk_list_box_row_get_index(GTK_LIST_BOX_ROW(row)));
}

static void row_leave(GtkEventControllerMotion *motion, gpointer data)
{
    HyocrResultView *self = data;
    hyocr_image_view_set_highlight(self->image_view, -1);
}

static GtkWidget *line_row(HyocrResultView *self, const HyocrSpotLine *line)
{
    GtkWidget *label = gtk_label_new(line->text);
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_label_set_wrap(GTK_LABEL(label), TRUE);
    gtk_label_set_wrap_mode(GTK_LABEL(label), PANGO_WRAP_WORD_CHAR);
    gtk_label_set_selectable(GTK_LABEL(label), TRUE);
    GtkWidget *row = gtk_list_box_row_new();
    gtk_list_box_row_set_child(GTK_LIST_BOX_ROW(row), label);
    GtkEventController *motion = gtk_event_controller_motion_new();
    g_signal_connect(motion, "enter", G_CALLBACK(row_enter), self);
    g_signal_connect(motion, "leave", G_CALLBACK(row_leave), self);
    gtk_widget_add_controller(row, motion);
    return row;
}

static void clear_lines(HyocrResultView *self)
{
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->lines_list))))
        gtk_list_box_remove(self->lines_list, child);
    g_clear_pointer(&self->lines, g_ptr_array_unref);
}

/* The stream only grows, and a matched item is complete, so rows already
 * shown stay valid; only new items are appended. */
static void update_lines(HyocrResultView *self, gboolean replaced)
{
    g_autoptr(GPtrArray) lines = hyocr_spotting_parse(hyocr_job_get_text(self->job));
    guint first = replaced || !self->lines ? 0 : self->lines->len;
    if (replaced) clear_lines(self);
    for (guint i = first; i < lines->len; i++)
        gtk_list_box_append(self->lines_list, line_row(self, g_ptr_array_index(lines, i)));
    g_clear_pointer(&self->lines, g_ptr_array_unref);
    self->lines = g_steal_pointer(&lines);
    hyocr_image_view_set_lines(self->image_view, self->lines);
}

/* ---- text ---- */

static gboolean at_bottom(HyocrResultView *self)
{
    GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(self->text_scroller);
    return gtk_adjustment_get_value(adj) + gtk_adjustment_get_page_size(adj) >= gtk_adjustment_get_upper(adj) - 4;
}

static void insert_pending(HyocrResultView *self)
{
    if (!self->pending->len) return;
    GtkTextBuffer *buf = gtk_text_view_get_buffer(self->text_view);
    gboolean follow = at_bottom(self);
    GtkTextIter end;
    gtk_text_buffer_get_end_iter(buf, &end);
    gtk_text_buffer_insert(buf, &end, self->pending->str, (int)self->pending->len);
    g_string_truncate(self->pending, 0);
    if (follow) gtk_text_view_scroll_mark_onscreen(self->text_view, gtk_text_buffer_get_insert(buf));
}

static void disconnect_after_paint(HyocrResultView *self)
{
    /* A clock disposed with its window has already dropped its handlers. */
    if (self->after_paint && g_signal_handler_is_connected(self->after_paint_clock, self->after_paint))
        g_signal_handler_disconnect(self->after_paint_clock, self->after_paint);
    self->after_paint = 0;
    g_clear_object(&self->after_paint_clock);
}

static void on_after_paint(GdkFrameClock *clock, HyocrResultView *self)
{
    disconnect_after_paint(self);
    insert_pending(self);
}

/* Streamed text goes in right after a frame is painted. GtkTextView checks the
 * new lines in an idle; inserted just before a frame, that idle lost the race
 * and GTK 4.8 checked them inside the size allocation, where the height change
 * left an ancestor unallocated at paint time ("Trying to snapshot … without a
 * current allocation", and a blank frame). After a paint the idle has a frame
 * to run. */
static void append_text(HyocrResultView *self, const char *appended)
{
    g_string_append(self->pending, appended);
    GdkFrameClock *clock = gtk_widget_get_frame_clock(GTK_WIDGET(self));
    if (!clock) {
        insert_pending(self);
        return;
    }
    if (self->after_paint) return;
    self->after_paint = g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), self);
    self->after_paint_clock = g_object_ref(clock);
    gdk_frame_clock_request_phase(clock, GDK_FRAME_CLOCK_PHASE_AFTER_PAINT);
}

static void cancel_pending(HyocrResultView *self)
{
    disconnect_after_paint(self);
    g_string_truncate(self->pending, 0);
}

/* Finished "extract fields" answers are shown as indented JSON. */
static void reload_text(HyocrResultView *self)
{
    cancel_pending(self);
    GtkTextBuffer *buf = gtk_text_view_get_buffer(self->text_view);
    g_autofree char *json = NULL;
    if (is_fields(self) && hyocr_job_get_state(self->job) == HYOCR_JOB_DONE)
        json = hyocr_json_prettify(hyocr_job_get_text(self->job));
    gtk_text_buffer_set_text(buf, json ? json : hyocr_job_get_text(self->job), -1);
    GtkTextIter end;
    gtk_text_buffer_get_end_iter(buf, &end);
    gtk_text_buffer_place_cursor(buf, &end);
}

static void on_text_changed(HyocrJob *job, const char *appended, HyocrResultView *self)
{
    if (appended) append_text(self, appended);
    else reload_text(self);
    if (is_spotting(self)) update_lines(self, appended == NULL);
    queue_render(self);
    update_status(self);
}

/* ---- pages ---- */

static void show_message(HyocrResultView *self, const char *icon, const char *title, const char *description)
{
    adw_status_page_set_icon_name(self->message_page, icon);
    adw_status_page_set_title(self->message_page, title);
    adw_status_page_set_description(self->message_page, description);
    gtk_stack_set_visible_child_name(self->content_stack, "message");
}

/* The real cause, as the page's title; the message under it says what to do. */
static const char *failure_title(HyocrJobFailure f)
{
    switch (f) {
    case HYOCR_JOB_FAILURE_IMAGE: return _("This Image Could Not Be Read");
    case HYOCR_JOB_FAILURE_MEMORY: return _("Not Enough Memory for This Image");
    default: return _("This Job Failed");
    }
}

const char *hyocr_result_view_get_message_title(HyocrResultView *self)
{
    return adw_status_page_get_title(self->message_page);
}

static void update_page(HyocrResultView *self)
{
    HyocrJobState st = hyocr_job_get_state(self->job);
    gboolean has_text = *hyocr_job_get_text(self->job) != '\0';
    if (st == HYOCR_JOB_FAILED)
        show_message(self, "dialog-error-symbolic", failure_title(hyocr_job_get_failure(self->job)),
                     hyocr_job_get_message(self->job));
    else if (st == HYOCR_JOB_QUEUED)
        show_message(self, "content-loading-symbolic", _("Waiting"),
                     _("The job starts when the ones before it are done and the model is loaded."));
    else if (st == HYOCR_JOB_CANCELLED && !has_text)
        show_message(self, "process-stop-symbolic", _("Cancelled"), hyocr_job_get_message(self->job));
    else if (is_spotting(self) && self->lines && self->lines->len)
        gtk_stack_set_visible_child_name(self->content_stack, "lines");
    else
        gtk_stack_set_visible_child_name(self->content_stack, shows_rendered(self) ? "rendered" : "text");
}

static void on_mode_toggled(GtkToggleButton *button, HyocrResultView *self)
{
    if (self->job) update_page(self);
}

static void on_state_changed(HyocrJob *job, GParamSpec *pspec, HyocrResultView *self)
{
    gtk_widget_set_visible(self->mode_box, has_rendering(self));
    queue_render(self);
    /* The JSON view replaces the raw answer once it is complete. */
    if (hyocr_job_get_state(job) == HYOCR_JOB_DONE && is_fields(self)) reload_text(self);
    gboolean active = hyocr_job_is_active(job) || hyocr_job_get_state(job) == HYOCR_JOB_QUEUED;
    gtk_widget_set_visible(self->cancel_button, active);
    gtk_widget_set_visible(self->again_button, hyocr_job_is_finished(job));
    gtk_widget_set_visible(GTK_WIDGET(self->progress_bar), active);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "view.cancel", active);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "view.copy", *hyocr_job_get_text(job) != '\0');
    update_page(self);
    update_status(self);
    sync_status_tick(self);
}

/* The other way round: a box hovered on the image marks its line. */
static void on_highlight_changed(HyocrImageView *iv, GParamSpec *pspec, HyocrResultView *self)
{
    int h = hyocr_image_view_get_highlight(iv), i = 0;
    for (GtkWidget *row = gtk_widget_get_first_child(GTK_WIDGET(self->lines_list)); row;
         row = gtk_widget_get_next_sibling(row), i++) {
        if (i == h) gtk_widget_add_css_class(row, "highlighted");
        else gtk_widget_remove_css_class(row, "highlighted");
    }
}

static void on_preview_changed(HyocrJob *job, GParamSpec *pspec, HyocrResultView *self)
{
    if (!self->display) hyocr_image_view_set_texture(self->image_view, hyocr_job_get_preview(job));
}

/* ---- the shown image: a job keeps a small preview; the shown one is read again ---- */

static void display_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    g_autoptr(hyocr_image) img = hyocr_job_render(HYOCR_JOB(data), DISPLAY_SIDE, NULL);
    g_task_return_pointer(task, img ? hyocr_texture_from_image(img) : NULL, g_object_unref);
}

static void display_loaded(GObject *source, GAsyncResult *res, gpointer data)
{
    /* NULL too when the view moved on to another job (the load was cancelled) */
    g_autoptr(GdkTexture) tex = g_task_propagate_pointer(G_TASK(res), NULL);
    if (!tex) return;
    HyocrResultView *self = HYOCR_RESULT_VIEW(source);
    g_set_object(&self->display, tex);
    hyocr_image_view_set_texture(self->image_view, tex);
}

static void load_display(HyocrResultView *self)
{
    g_cancellable_cancel(self->display_load);
    g_clear_object(&self->display_load);
    g_clear_object(&self->display);
    GFile *file = self->job ? hyocr_job_get_file(self->job) : NULL;
    if (!file) return;
    self->display_load = g_cancellable_new();
    g_autoptr(GTask) task = g_task_new(self, self->display_load, display_loaded, NULL);
    g_task_set_task_data(task, g_object_ref(self->job), g_object_unref);
    g_task_run_in_thread(task, display_thread);
}

GtkWidget *hyocr_result_view_get_button(HyocrResultView *self, const char *which)
{
    if (g_str_equal(which, "cancel")) return self->cancel_button;
    if (g_str_equal(which, "copy")) return self->copy_button;
    if (g_str_equal(which, "save")) return self->save_button;
    if (g_str_equal(which, "back")) return self->back_button;
    if (g_str_equal(which, "again")) return self->again_button;
    if (g_str_equal(which, "image")) return GTK_WIDGET(self->image_button);
    if (g_str_equal(which, "rendered")) return GTK_WIDGET(self->rendered_button);
    if (g_str_equal(which, "source")) return GTK_WIDGET(self->source_button);
    return NULL;
}

/* Folding is decided while the window is laid out; a button shown or hidden then
 * would miss that layout ("snapshot … without a current allocation"): the
 * header follows in the next frame. */
static gboolean fold_sync(gpointer data)
{
    HyocrResultView *self = data;
    self->fold_sync = 0;
    gtk_widget_set_visible(GTK_WIDGET(self->image_button), adw_flap_get_folded(self->flap));
    gtk_widget_set_visible(self->back_button, self->show_back);
    return G_SOURCE_REMOVE;
}

static void queue_fold_sync(HyocrResultView *self)
{
    if (!self->fold_sync) self->fold_sync = g_idle_add_full(G_PRIORITY_HIGH_IDLE, fold_sync, self, NULL);
}

void hyocr_result_view_set_show_back(HyocrResultView *self, gboolean show)
{
    self->show_back = show;
    queue_fold_sync(self);
}

GdkTexture *hyocr_result_view_get_display_texture(HyocrResultView *self)
{
    return self->display;
}

static void on_tokens_changed(HyocrJob *job, GParamSpec *pspec, HyocrResultView *self)
{
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "view.copy", *hyocr_job_get_text(job) != '\0');
    if (gtk_stack_get_visible_child_name(self->content_stack) &&
        g_str_equal(gtk_stack_get_visible_child_name(self->content_stack), "message") &&
        hyocr_job_get_state(job) != HYOCR_JOB_FAILED)
        update_page(self);
}

/* ---- actions ---- */

static void cancel_action(GtkWidget *widget, const char *name, GVariant *param)
{
    HyocrResultView *self = HYOCR_RESULT_VIEW(widget);
    if (self->job) hyocr_job_cancel(self->job);
}

static void copy_action(GtkWidget *widget, const char *name, GVariant *param)
{
    HyocrResultView *self = HYOCR_RESULT_VIEW(widget);
    g_autofree char *text = hyocr_result_view_get_display_text(self);
    if (!text || !*text) return;
    gdk_clipboard_set_text(gtk_widget_get_clipboard(widget), text);
    gtk_widget_activate_action(widget, "win.toast", "s", _("Copied"));
}

/* ---- public ---- */

char *hyocr_result_view_get_display_text(HyocrResultView *self)
{
    if (!self->job) return NULL;
    const char *text = hyocr_job_get_text(self->job);
    if (is_spotting(self) && self->lines && self->lines->len) {
        GString *s = g_string_new(NULL);
        for (guint i = 0; i < self->lines->len; i++) {
            const HyocrSpotLine *l = g_ptr_array_index(self->lines, i);
            g_string_append_printf(s, "%s%s", i ? "\n" : "", l->text);
        }
        return g_string_free(s, FALSE);
    }
    if (is_fields(self)) {
        char *json = hyocr_json_prettify(text);
        if (json) return json;
    }
    return g_strdup(text);
}

static char *text_as_json(const char *text)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "text");
    json_builder_add_string_value(b, text);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return hyocr_json_to_data(root, true);
}

char *hyocr_result_view_export(HyocrResultView *self, const char *extension)
{
    if (!self->job) return NULL;
    if (g_strcmp0(extension, "json") != 0) return g_strdup(hyocr_job_get_text(self->job));
    if (is_spotting(self) && self->lines && self->lines->len) return hyocr_spotting_to_json(self->lines);
    char *json = hyocr_json_prettify(hyocr_job_get_text(self->job));
    return json ? json : text_as_json(hyocr_job_get_text(self->job));
}

HyocrJob *hyocr_result_view_get_job(HyocrResultView *self) { return self->job; }
HyocrImageView *hyocr_result_view_get_image_view(HyocrResultView *self) { return self->image_view; }
HyocrRenderedView *hyocr_result_view_get_rendered_view(HyocrResultView *self) { return self->rendered_view; }
gboolean hyocr_result_view_is_rendering(HyocrResultView *self)
{
    return self->render_idle != 0 || hyocr_rendered_view_is_rendering(self->rendered_view);
}
GtkListBox *hyocr_result_view_get_lines_list(HyocrResultView *self) { return self->lines_list; }
GtkTextView *hyocr_result_view_get_text_view(HyocrResultView *self) { return self->text_view; }

const char *hyocr_result_view_get_visible_page(HyocrResultView *self)
{
    return gtk_stack_get_visible_child_name(self->content_stack);
}

void hyocr_result_view_set_job(HyocrResultView *self, HyocrJob *job)
{
    g_return_if_fail(HYOCR_IS_RESULT_VIEW(self));
    if (!g_set_object(&self->job, job)) return;
    g_signal_group_set_target(self->job_signals, job);
    clear_lines(self);
    hyocr_image_view_set_lines(self->image_view, NULL);
    hyocr_image_view_set_texture(self->image_view, job ? hyocr_job_get_preview(job) : NULL);
    load_display(self);
    if (job) {
        gtk_label_set_text(self->title_label, hyocr_job_get_title(job));
        /* Markdown, HTML and JSON read better with aligned columns. */
        HyocrPreset p = hyocr_job_get_options(job)->preset;
        gtk_text_view_set_monospace(self->text_view, hyocr_preset_is_parse(p) || p == HYOCR_PRESET_EXTRACT_FIELDS);
        hyocr_job_ensure_preview(job);
        reload_text(self);
        if (is_spotting(self)) update_lines(self, TRUE);
        queue_render(self);
        on_state_changed(job, NULL, self);
    } else {
        g_clear_handle_id(&self->status_tick, g_source_remove);
    }
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_JOB]);
}

/* ---- GObject ---- */

static void hyocr_result_view_dispose(GObject *object)
{
    HyocrResultView *self = HYOCR_RESULT_VIEW(object);
    g_clear_handle_id(&self->status_tick, g_source_remove);
    g_clear_handle_id(&self->fold_sync, g_source_remove);
    g_clear_handle_id(&self->render_idle, g_source_remove);
    g_cancellable_cancel(self->display_load);
    g_clear_object(&self->display_load);
    g_clear_object(&self->display);
    if (self->pending) cancel_pending(self);
    if (self->job_signals) g_signal_group_set_target(self->job_signals, NULL);
    g_clear_object(&self->job_signals);
    g_clear_object(&self->job);
    g_clear_pointer(&self->lines, g_ptr_array_unref);
    if (self->pending) g_string_free(g_steal_pointer(&self->pending), TRUE);
    gtk_widget_dispose_template(GTK_WIDGET(self), HYOCR_TYPE_RESULT_VIEW);
    /* Unbound template children (the root box) are ours to unparent too. */
    GtkWidget *child;
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self)))) gtk_widget_unparent(child);
    G_OBJECT_CLASS(hyocr_result_view_parent_class)->dispose(object);
}

static void hyocr_result_view_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    HyocrResultView *self = HYOCR_RESULT_VIEW(object);
    switch (prop_id) {
    case PROP_JOB: g_value_set_object(value, self->job); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void hyocr_result_view_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
    HyocrResultView *self = HYOCR_RESULT_VIEW(object);
    switch (prop_id) {
    case PROP_JOB: hyocr_result_view_set_job(self, g_value_get_object(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void hyocr_result_view_class_init(HyocrResultViewClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
    object_class->dispose = hyocr_result_view_dispose;
    object_class->get_property = hyocr_result_view_get_property;
    object_class->set_property = hyocr_result_view_set_property;
    props[PROP_JOB] = g_param_spec_object("job", NULL, NULL, HYOCR_TYPE_JOB,
                                          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY);
    g_object_class_install_properties(object_class, N_PROPS, props);

    g_type_ensure(HYOCR_TYPE_IMAGE_VIEW);
    g_type_ensure(HYOCR_TYPE_RENDERED_VIEW);
    gtk_widget_class_set_template_from_resource(widget_class, "/io/github/hyocr/Hyocr/hyocr-result-view.ui");
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, title_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, status_label);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, cancel_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, copy_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, save_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, back_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, again_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, image_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, mode_box);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, rendered_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, source_button);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, rendered_view);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, flap);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, progress_bar);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, image_view);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, content_stack);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, text_scroller);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, text_view);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, lines_list);
    gtk_widget_class_bind_template_child(widget_class, HyocrResultView, message_page);
    gtk_widget_class_install_action(widget_class, "view.cancel", NULL, cancel_action);
    gtk_widget_class_install_action(widget_class, "view.copy", NULL, copy_action);
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_set_css_name(widget_class, "hyocr-result-view");
}

static void hyocr_result_view_init(HyocrResultView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->pending = g_string_new(NULL);
    self->job_signals = g_signal_group_new(HYOCR_TYPE_JOB);
    g_signal_group_connect(self->job_signals, "text-changed", G_CALLBACK(on_text_changed), self);
    g_signal_group_connect(self->job_signals, "notify::state", G_CALLBACK(on_state_changed), self);
    g_signal_group_connect(self->job_signals, "notify::preview", G_CALLBACK(on_preview_changed), self);
    g_signal_group_connect(self->job_signals, "notify::n-tokens", G_CALLBACK(on_tokens_changed), self);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "view.cancel", FALSE);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "view.copy", FALSE);
    g_signal_connect(self->image_view, "notify::highlight", G_CALLBACK(on_highlight_changed), self);
    g_signal_connect(self->rendered_button, "toggled", G_CALLBACK(on_mode_toggled), self);
    /* Narrow: the image folds away; its button slides it over the text. */
    g_signal_connect_swapped(self->flap, "notify::folded", G_CALLBACK(queue_fold_sync), self);
    g_object_bind_property(self->flap, "reveal-flap", self->image_button, "active",
                           G_BINDING_SYNC_CREATE | G_BINDING_BIDIRECTIONAL);
    gtk_widget_set_visible(GTK_WIDGET(self->image_button), FALSE);
}
