/* hyocr-gtk — the window and its history: each job is stored when it is queued and
 * again when it ends; past entries open again as finished jobs, or run again. */
#include "hyocr-window-private.h"
#include "hyocr-history-view-private.h"
#include "hyocr-spotting.h"
#include "hyocr-json.h"
#include "json.h"
#include "error.h"
#include <json-glib/json-glib.h>
#include <glib/gi18n.h>

/* ---- options as JSON ---- */

static char *options_to_json(const HyocrJobOptions *o)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    hyocr_json_member_str(b, "task", hyocr_task_name(o->task));
    if (o->fields) {
        json_builder_set_member_name(b, "fields");
        json_builder_begin_array(b);
        for (char **f = o->fields; *f; f++) json_builder_add_string_value(b, *f);
        json_builder_end_array(b);
    }
    if (o->custom_prompt) hyocr_json_member_str(b, "custom_prompt", o->custom_prompt);
    hyocr_json_member_int(b, "max_new_tokens", o->max_new_tokens);
    hyocr_json_member_int(b, "max_side", o->max_side);
    json_builder_set_member_name(b, "repetition_penalty");
    json_builder_add_double_value(b, o->repetition_penalty);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return json_to_string(root, FALSE);
}

/* A member of the stored JSON, NULL (or def) when it is missing or of another type:
 * the file is on the user's disk and may have been edited. */
static const char *member_string(JsonObject *obj, const char *name)
{
    JsonNode *n = json_object_get_member(obj, name);
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING ? json_node_get_string(n)
                                                                                         : NULL;
}

static double member_number(JsonObject *obj, const char *name, double def)
{
    JsonNode *n = json_object_get_member(obj, name);
    if (!n || !JSON_NODE_HOLDS_VALUE(n)) return def;
    GType t = json_node_get_value_type(n);
    return t == G_TYPE_INT64 ? (double)json_node_get_int(n) : t == G_TYPE_DOUBLE ? json_node_get_double(n) : def;
}

/* The options a stored entry ran with; what is missing or wrong keeps its default. */
static HyocrJobOptions *options_from_entry(const hyocr_history_entry *e)
{
    HyocrJobOptions *o = g_new0(HyocrJobOptions, 1);
    GEnumClass *presets = g_type_class_ref(HYOCR_TYPE_PRESET);
    GEnumValue *v = g_enum_get_value_by_nick(presets, e->preset ? e->preset : "");
    o->preset = v ? (HyocrPreset)v->value : HYOCR_PRESET_RECOGNIZE;
    g_type_class_unref(presets);
    o->max_new_tokens = 8192;
    o->repetition_penalty = -1.0f;
    g_autoptr(JsonNode) root = hyocr_json_parse(e->options, strlen(e->options), 8, "history options", NULL);
    JsonObject *obj = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (!obj) return o;
    const char *task = member_string(obj, "task");
    if (!task || !hyocr_task_from_name(task, &o->task)) o->task = HYOCR_TASK_RECOGNIZE;
    JsonNode *fields = json_object_get_member(obj, "fields");
    if (fields && JSON_NODE_HOLDS_ARRAY(fields)) {
        g_autoptr(GStrvBuilder) sb = g_strv_builder_new();
        JsonArray *arr = json_node_get_array(fields);
        for (guint i = 0; i < json_array_get_length(arr); i++) {
            JsonNode *f = json_array_get_element(arr, i);
            if (JSON_NODE_HOLDS_VALUE(f) && json_node_get_value_type(f) == G_TYPE_STRING)
                g_strv_builder_add(sb, json_node_get_string(f));
        }
        o->fields = g_strv_builder_end(sb);
    }
    o->custom_prompt = g_strdup(member_string(obj, "custom_prompt"));
    o->max_new_tokens = (int)CLAMP(member_number(obj, "max_new_tokens", 8192), 1, 32768);
    o->max_side = (int)CLAMP(member_number(obj, "max_side", 0), 0, 16384);
    o->repetition_penalty = (float)member_number(obj, "repetition_penalty", -1.0);
    return o;
}

static char *timings_to_json(const hyocr_timings *t)
{
    return g_strdup_printf("{\"preprocess_ms\": %.1f, \"vision_ms\": %.1f, \"prefill_ms\": %.1f, "
                           "\"decode_ms\": %.1f, \"total_ms\": %.1f, \"first_token_ms\": %.1f, "
                           "\"decode_tokens_per_s\": %.2f}",
                           t->preprocess_ms, t->vision_ms, t->prefill_ms, t->decode_ms, t->total_ms,
                           t->first_token_ms, t->decode_tokens_per_s);
}

/* ---- storing jobs ---- */

static void history_failed(HyocrWindow *self, const GError *error)
{
    /* Once per session: a history that cannot be written must not bury the results in toasts. */
    if (self->history_warned) return;
    self->history_warned = TRUE;
    g_autofree char *msg = g_strdup_printf(_("The history could not be written: %s"), error->message);
    hyocr_window_toast(self, msg);
}

/* A pasted or captured image is kept as PNG: it has no file to come back to. */
static GBytes *job_image_png(HyocrJob *job)
{
    GdkTexture *tex = hyocr_job_get_file(job) ? NULL : hyocr_job_get_preview(job);
    return tex ? gdk_texture_save_to_png_bytes(tex) : NULL;
}

void hyocr_window_history_record(HyocrWindow *self, HyocrJob *job)
{
    if (!self->history || hyocr_job_get_history_id(job)) return;
    g_autoptr(hyocr_history_entry) e = hyocr_history_entry_new();
    const HyocrJobOptions *o = hyocr_job_get_options(job);
    e->created = g_get_real_time();
    e->state = HYOCR_HISTORY_QUEUED;
    e->title = g_strdup(hyocr_job_get_title(job));
    e->path = hyocr_job_get_file(job) ? g_file_get_path(hyocr_job_get_file(job)) : NULL;
    e->page = hyocr_job_get_page(job);
    e->image = job_image_png(job);
    e->preset = g_strdup(hyocr_preset_get_nick(o->preset));
    e->options = options_to_json(o);
    g_autoptr(GError) error = NULL;
    if (!hyocr_history_add(self->history, e, &error)) {
        history_failed(self, error);
        return;
    }
    hyocr_job_set_history_id(job, e->id);
}

static hyocr_history_state history_state(HyocrJobState state)
{
    switch (state) {
    case HYOCR_JOB_DONE: return HYOCR_HISTORY_DONE;
    case HYOCR_JOB_FAILED: return HYOCR_HISTORY_FAILED;
    case HYOCR_JOB_CANCELLED: return HYOCR_HISTORY_CANCELLED;
    default: return HYOCR_HISTORY_QUEUED;
    }
}

void hyocr_window_history_finish(HyocrWindow *self, HyocrJob *job)
{
    if (!self->history || !hyocr_job_get_history_id(job) || hyocr_job_is_stored(job)) return;
    g_autoptr(hyocr_history_entry) e = hyocr_history_entry_new();
    e->id = hyocr_job_get_history_id(job);
    e->state = history_state(hyocr_job_get_state(job));
    e->finished = g_get_real_time();
    e->text = g_strdup(hyocr_job_get_text(job));
    if (hyocr_job_get_options(job)->task == HYOCR_TASK_SPOTTING && e->state == HYOCR_HISTORY_DONE) {
        g_autoptr(GPtrArray) lines = hyocr_spotting_parse(e->text);
        e->boxes = hyocr_spotting_to_json(lines);
    }
    e->error = g_strdup(hyocr_job_get_message(job));
    if (hyocr_job_get_stop_reason(job) != HYOCR_STOP_NONE)
        e->stop_reason = g_strdup(hyocr_stop_reason_name(hyocr_job_get_stop_reason(job)));
    e->timings = timings_to_json(hyocr_job_get_timings(job));
    e->n_tokens = hyocr_job_get_n_tokens(job);
    if (hyocr_worker_get_state(self->worker) == HYOCR_WORKER_READY) {
        e->engine = g_strdup(hyocr_worker_is_cpu(self->worker) ? "CPU" : "GPU");
        e->model = g_strdup(hyocr_worker_get_model_dir(self->worker));
    }
    g_autoptr(GError) error = NULL;
    if (!hyocr_history_finish(self->history, e, &error)) {
        history_failed(self, error);
        return;
    }
    hyocr_job_set_stored(job);
    self->n_history_writes++;
    hyocr_history_view_reload(self->history_view);
}

/* ---- entries back as jobs ---- */

static HyocrJob *job_from_entry(const hyocr_history_entry *e, GError **error)
{
    g_autoptr(HyocrJobOptions) o = options_from_entry(e);
    if (e->image) {
        g_autoptr(GdkTexture) tex = gdk_texture_new_from_bytes(e->image, error);
        return tex ? hyocr_job_new_for_texture(tex, e->title, o, error) : NULL;
    }
    if (!e->path) {
        g_set_error_literal(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("This entry kept no image"));
        return NULL;
    }
    g_autoptr(GFile) file = g_file_new_for_path(e->path);
    if (e->page == 0) return hyocr_job_new_for_file(file, o);
    g_autoptr(hyocr_document) doc = hyocr_document_open(e->path, NULL, error);
    if (!doc) return NULL;
    if (e->page >= hyocr_document_n_pages(doc)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s no longer has a page %d"), e->path, e->page + 1);
        return NULL;
    }
    return hyocr_job_new_for_page(file, doc, e->page, o);
}

static HyocrJobState job_state(hyocr_history_state state)
{
    switch (state) {
    case HYOCR_HISTORY_DONE: return HYOCR_JOB_DONE;
    case HYOCR_HISTORY_FAILED: return HYOCR_JOB_FAILED;
    default: return HYOCR_JOB_CANCELLED;
    }
}

static hyocr_history_entry *get_entry(HyocrWindow *self, gint64 id)
{
    g_autoptr(GError) error = NULL;
    hyocr_history_entry *e = self->history ? hyocr_history_get(self->history, id, &error) : NULL;
    if (!e && error) hyocr_window_toast(self, error->message);
    return e;
}

HyocrJob *hyocr_window_history_open(HyocrWindow *self, gint64 id)
{
    g_autoptr(hyocr_history_entry) e = get_entry(self, id);
    if (!e) return NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(HyocrJob) job = job_from_entry(e, &error);
    if (!job) {
        g_autofree char *msg = g_strdup_printf(_("“%s” cannot be opened: %s"), e->title, error->message);
        hyocr_window_toast(self, msg);
        return NULL;
    }
    const char *why = e->state == HYOCR_HISTORY_INTERRUPTED ? _("Interrupted: the app ended before this job did")
                                                            : e->error;
    hyocr_job_restore(job, job_state(e->state), e->text, why, e->n_tokens);
    hyocr_job_set_history_id(job, e->id);
    hyocr_job_set_stored(job);
    hyocr_window_add_finished_job(self, job);
    return job;   /* the window's list keeps it */
}

HyocrJob *hyocr_window_history_show(HyocrWindow *self, gint64 id)
{
    for (guint i = 0, n = g_list_model_get_n_items(G_LIST_MODEL(self->jobs)); i < n; i++) {
        g_autoptr(HyocrJob) job = g_list_model_get_item(G_LIST_MODEL(self->jobs), i);
        if (hyocr_job_get_history_id(job) != id) continue;
        hyocr_window_show_history(self, FALSE);
        hyocr_window_select_job(self, job);
        return job;   /* the window's list keeps it */
    }
    return hyocr_window_history_open(self, id);
}

HyocrJob *hyocr_window_history_run_again(HyocrWindow *self, gint64 id)
{
    g_autoptr(hyocr_history_entry) e = get_entry(self, id);
    if (!e) return NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(HyocrJob) job = job_from_entry(e, &error);
    if (!job) {
        g_autofree char *msg = g_strdup_printf(_("“%s” cannot run again: %s"), e->title, error->message);
        hyocr_window_toast(self, msg);
        return NULL;
    }
    /* The new job is stored as a new entry; an interrupted one has nothing else to keep. */
    if (e->state == HYOCR_HISTORY_INTERRUPTED) hyocr_history_delete(self->history, e->id, NULL);
    hyocr_window_add_job(self, job);
    return job;
}

static void on_open(HyocrHistoryView *view, gint64 id, HyocrWindow *self)
{
    hyocr_window_history_open(self, id);
}

static void on_run_again(HyocrHistoryView *view, gint64 id, HyocrWindow *self)
{
    hyocr_window_history_run_again(self, id);
}

static void on_export(HyocrHistoryView *view, gint64 id, HyocrWindow *self)
{
    if (hyocr_window_history_open(self, id)) hyocr_window_save(self);
}

static void on_notice(HyocrHistoryView *view, const char *message, HyocrWindow *self)
{
    hyocr_window_toast(self, message);
}

/* ---- opening and closing ---- */

static void open_history(HyocrWindow *self)
{
    g_autofree char *path = hyocr_history_default_path();
    g_autofree char *notice = NULL;
    g_autoptr(GError) error = NULL;
    self->history = hyocr_history_open(path, &notice, &error);
    self->history_warned = FALSE;
    if (notice) hyocr_window_toast(self, notice);
    if (!self->history) {
        /* OCR goes on without it; the user is told once. */
        g_autofree char *msg = g_strdup_printf(_("The history is off for this session: %s"), error->message);
        hyocr_window_toast(self, msg);
    }
}

static void on_history_setting(GSettings *settings, const char *key, HyocrWindow *self)
{
    gboolean on = g_settings_get_boolean(settings, "history");
    if (on && !self->history) open_history(self);
    if (!on) g_clear_pointer(&self->history, hyocr_history_free);
    hyocr_history_view_set_history(self->history_view, self->history);
}

static void on_show_history(GSimpleAction *action, GVariant *value, HyocrWindow *self)
{
    hyocr_window_show_history(self, g_variant_get_boolean(value));
}

void hyocr_window_setup_history(HyocrWindow *self)
{
    self->history_action = g_simple_action_new_stateful("show-history", NULL, g_variant_new_boolean(FALSE));
    g_signal_connect(self->history_action, "change-state", G_CALLBACK(on_show_history), self);
    g_action_map_add_action(G_ACTION_MAP(self), G_ACTION(self->history_action));
    if (g_settings_get_boolean(self->settings, "history")) open_history(self);
    hyocr_history_view_set_history(self->history_view, self->history);
    g_signal_connect(self->settings, "changed::history", G_CALLBACK(on_history_setting), self);
    g_signal_connect(self->history_view, "open", G_CALLBACK(on_open), self);
    g_signal_connect(self->history_view, "run-again", G_CALLBACK(on_run_again), self);
    g_signal_connect(self->history_view, "export", G_CALLBACK(on_export), self);
    g_signal_connect(self->history_view, "notice", G_CALLBACK(on_notice), self);
    /* On start, the recent results, once there are any. */
    self->showing_history = hyocr_history_view_get_n_entries(self->history_view) > 0;
    if (self->history && hyocr_history_get_n_interrupted(self->history)) {
        int n = hyocr_history_get_n_interrupted(self->history);
        g_autofree char *msg = g_strdup_printf(ngettext("%d job was interrupted when hyocr last ended; it is in the "
                                                        "history, with Run Again",
                                                        "%d jobs were interrupted when hyocr last ended; they are in "
                                                        "the history, with Run Again", (gulong)n), n);
        hyocr_window_toast(self, msg);
    }
}

void hyocr_window_close_history(HyocrWindow *self)
{
    g_clear_object(&self->history_action);
    if (self->history_view) hyocr_history_view_set_history(self->history_view, NULL);
    g_clear_pointer(&self->history, hyocr_history_free);
}

hyocr_history *hyocr_window_get_history(HyocrWindow *self) { return self->history; }
HyocrHistoryView *hyocr_window_get_history_view(HyocrWindow *self) { return self->history_view; }
guint hyocr_window_get_n_history_writes(HyocrWindow *self) { return self->n_history_writes; }
