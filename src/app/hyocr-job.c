/* hyocr-gtk — a job and its coalesced updates. */
#include "hyocr-job-private.h"
#include "hyocr-image-util.h"
#include "error.h"
#include <glib/gi18n.h>
#include <string.h>

#define FLUSH_INTERVAL_US 16000   /* one flush per 60 Hz frame at most */

G_DEFINE_ENUM_TYPE(HyocrJobState, hyocr_job_state,
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_QUEUED, "queued"),
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_PREPARING, "preparing"),
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_READING, "reading"),
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_WRITING, "writing"),
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_DONE, "done"),
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_FAILED, "failed"),
    G_DEFINE_ENUM_VALUE(HYOCR_JOB_CANCELLED, "cancelled"))

/* Changes posted by the worker and not yet applied on the main context. */
typedef struct {
    GString      *text;          /* appended since the last flush */
    gboolean      restart;       /* the shown text goes before text is appended */
    char         *final_text;    /* replaces everything when set */
    int           n_tokens;
    HyocrJobState state;
    gboolean      state_dirty;
    char         *message;
    char         *prompt;
    GdkTexture   *preview;
    gint64        started_us, finished_us;
    gboolean      scheduled;
    gint64        last_flush_us;
    gboolean      claimed;
    HyocrJobFailure failure;
    hyocr_stop_reason stop_reason;
    hyocr_timings timings;
    double        mark_ms[4];    /* elapsed at PREPROCESS, VISION, PREFILL, the first TOKEN; 0: not yet */
} Pending;

struct _HyocrJob {
    GObject          parent_instance;

    guint            id;
    char            *title;
    GFile           *file;
    HyocrJobOptions *options;
    hyocr_image     *image;       /* texture jobs: pixels taken at creation */
    hyocr_document  *document;    /* page jobs: the document, shared by its pages */
    int              page;
    GCancellable    *cancellable;
    GMainContext    *main_context;

    GMutex           lock;
    Pending          pending;

    /* main-context copies */
    HyocrJobState    state;
    GString         *text;
    int              n_tokens;
    char            *message;
    HyocrJobFailure  failure;
    char            *prompt;
    GdkTexture      *preview;
    gint64           started_us, finished_us;
    guint            n_updates;
    gboolean         preview_loading;
    hyocr_stop_reason stop_reason;
    hyocr_timings    timings;
    gint64           history_id;
    gboolean         stored;
};

G_DEFINE_FINAL_TYPE(HyocrJob, hyocr_job, G_TYPE_OBJECT)

enum {
    PROP_0,
    PROP_TITLE,
    PROP_FILE,
    PROP_PREVIEW,
    PROP_STATE,
    PROP_PROGRESS,
    PROP_TEXT,
    PROP_N_TOKENS,
    PROP_MESSAGE,
    PROP_PROMPT,
    PROP_N_UPDATES,
    N_PROPS
};
static GParamSpec *props[N_PROPS];

enum { SIGNAL_TEXT_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

const char *hyocr_job_state_get_label(HyocrJobState state)
{
    switch (state) {
    case HYOCR_JOB_QUEUED: return _("Queued");
    case HYOCR_JOB_PREPARING: return _("Preparing");
    case HYOCR_JOB_READING: return _("Reading the image");
    case HYOCR_JOB_WRITING: return _("Writing");
    case HYOCR_JOB_DONE: return _("Done");
    case HYOCR_JOB_FAILED: return _("Failed");
    case HYOCR_JOB_CANCELLED: return _("Cancelled");
    }
    return "";
}

static void hyocr_job_finalize(GObject *object)
{
    HyocrJob *self = HYOCR_JOB(object);
    g_free(self->title);
    g_clear_object(&self->file);
    hyocr_job_options_free(self->options);
    hyocr_image_free(self->image);
    g_clear_pointer(&self->document, hyocr_document_unref);
    g_clear_object(&self->cancellable);
    g_main_context_unref(self->main_context);
    g_string_free(self->pending.text, TRUE);
    g_free(self->pending.final_text);
    g_free(self->pending.message);
    g_free(self->pending.prompt);
    g_clear_object(&self->pending.preview);
    g_mutex_clear(&self->lock);
    g_string_free(self->text, TRUE);
    g_free(self->message);
    g_free(self->prompt);
    g_clear_object(&self->preview);
    G_OBJECT_CLASS(hyocr_job_parent_class)->finalize(object);
}

static void hyocr_job_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    HyocrJob *self = HYOCR_JOB(object);
    switch (prop_id) {
    case PROP_TITLE: g_value_set_string(value, self->title); break;
    case PROP_FILE: g_value_set_object(value, self->file); break;
    case PROP_PREVIEW: g_value_set_object(value, self->preview); break;
    case PROP_STATE: g_value_set_enum(value, self->state); break;
    case PROP_PROGRESS: g_value_set_double(value, hyocr_job_get_progress(self)); break;
    case PROP_TEXT: g_value_set_string(value, self->text->str); break;
    case PROP_N_TOKENS: g_value_set_int(value, self->n_tokens); break;
    case PROP_MESSAGE: g_value_set_string(value, self->message); break;
    case PROP_PROMPT: g_value_set_string(value, self->prompt); break;
    case PROP_N_UPDATES: g_value_set_uint(value, self->n_updates); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void hyocr_job_class_init(HyocrJobClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    object_class->finalize = hyocr_job_finalize;
    object_class->get_property = hyocr_job_get_property;

    GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
    props[PROP_TITLE] = g_param_spec_string("title", NULL, NULL, NULL, ro);
    props[PROP_FILE] = g_param_spec_object("file", NULL, NULL, G_TYPE_FILE, ro);
    props[PROP_PREVIEW] = g_param_spec_object("preview", NULL, NULL, GDK_TYPE_TEXTURE, ro);
    props[PROP_STATE] = g_param_spec_enum("state", NULL, NULL, HYOCR_TYPE_JOB_STATE, HYOCR_JOB_QUEUED, ro);
    props[PROP_PROGRESS] = g_param_spec_double("progress", NULL, NULL, 0, 1, 0, ro);
    props[PROP_TEXT] = g_param_spec_string("text", NULL, NULL, "", ro);
    props[PROP_N_TOKENS] = g_param_spec_int("n-tokens", NULL, NULL, 0, G_MAXINT, 0, ro);
    props[PROP_MESSAGE] = g_param_spec_string("message", NULL, NULL, NULL, ro);
    props[PROP_PROMPT] = g_param_spec_string("prompt", NULL, NULL, NULL, ro);
    props[PROP_N_UPDATES] = g_param_spec_uint("n-updates", NULL, NULL, 0, G_MAXUINT, 0, ro);
    g_object_class_install_properties(object_class, N_PROPS, props);

    /* appended: the new tail of the text, or NULL when the whole text was replaced. */
    signals[SIGNAL_TEXT_CHANGED] = g_signal_new("text-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                                NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void hyocr_job_init(HyocrJob *self)
{
    static guint last_id;
    self->id = (guint)g_atomic_int_add(&last_id, 1) + 1;
    g_mutex_init(&self->lock);
    self->cancellable = g_cancellable_new();
    self->main_context = g_main_context_ref_thread_default();
    self->text = g_string_new(NULL);
    self->pending.text = g_string_new(NULL);
}

HyocrJob *hyocr_job_new_for_file(GFile *file, const HyocrJobOptions *opts)
{
    g_return_val_if_fail(G_IS_FILE(file) && opts, NULL);
    HyocrJob *self = g_object_new(HYOCR_TYPE_JOB, NULL);
    self->file = g_object_ref(file);
    self->title = g_file_get_basename(file);
    self->options = hyocr_job_options_copy(opts);
    return self;
}

HyocrJob *hyocr_job_new_for_page(GFile *file, hyocr_document *doc, int page, const HyocrJobOptions *opts)
{
    g_return_val_if_fail(G_IS_FILE(file) && doc && opts, NULL);
    HyocrJob *self = hyocr_job_new_for_file(file, opts);
    self->document = hyocr_document_ref(doc);
    self->page = page;
    return self;
}

HyocrJob *hyocr_job_new_for_texture(GdkTexture *texture, const char *title, const HyocrJobOptions *opts,
                                    GError **error)
{
    g_return_val_if_fail(GDK_IS_TEXTURE(texture) && opts, NULL);
    g_autoptr(hyocr_image) img = hyocr_image_from_texture(texture, error);
    if (!img) return NULL;
    HyocrJob *self = g_object_new(HYOCR_TYPE_JOB, NULL);
    self->image = g_steal_pointer(&img);
    self->title = g_strdup(title);
    self->options = hyocr_job_options_copy(opts);
    self->preview = g_object_ref(texture);
    return self;
}

HyocrJob *hyocr_job_new_again(HyocrJob *old, const HyocrJobOptions *opts, GError **error)
{
    g_return_val_if_fail(HYOCR_IS_JOB(old) && opts, NULL);
    if (old->document) return hyocr_job_new_for_page(old->file, old->document, old->page, opts);
    if (old->file) return hyocr_job_new_for_file(old->file, opts);
    return hyocr_job_new_for_texture(old->preview, old->title, opts, error);
}

/* ---- getters ---- */

guint hyocr_job_get_id(HyocrJob *self) { return self->id; }
const char *hyocr_job_get_title(HyocrJob *self) { return self->title; }
GFile *hyocr_job_get_file(HyocrJob *self) { return self->file; }
hyocr_document *hyocr_job_get_document(HyocrJob *self) { return self->document; }
int hyocr_job_get_page(HyocrJob *self) { return self->page; }
const HyocrJobOptions *hyocr_job_get_options(HyocrJob *self) { return self->options; }
GdkTexture *hyocr_job_get_preview(HyocrJob *self) { return self->preview; }
HyocrJobState hyocr_job_get_state(HyocrJob *self) { return self->state; }
const char *hyocr_job_get_text(HyocrJob *self) { return self->text->str; }
int hyocr_job_get_n_tokens(HyocrJob *self) { return self->n_tokens; }
const char *hyocr_job_get_message(HyocrJob *self) { return self->message; }
HyocrJobFailure hyocr_job_get_failure(HyocrJob *self) { return self->failure; }
const char *hyocr_job_get_prompt(HyocrJob *self) { return self->prompt; }
guint hyocr_job_get_n_updates(HyocrJob *self) { return self->n_updates; }
GCancellable *hyocr_job_get_cancellable(HyocrJob *self) { return self->cancellable; }
const hyocr_image *hyocr_job_peek_image(HyocrJob *self) { return self->image; }

hyocr_stop_reason hyocr_job_get_stop_reason(HyocrJob *self) { return self->stop_reason; }
const hyocr_timings *hyocr_job_get_timings(HyocrJob *self) { return &self->timings; }
gint64 hyocr_job_get_history_id(HyocrJob *self) { return self->history_id; }
void hyocr_job_set_history_id(HyocrJob *self, gint64 id) { self->history_id = id; }
gboolean hyocr_job_is_stored(HyocrJob *self) { return self->stored; }
void hyocr_job_set_stored(HyocrJob *self) { self->stored = TRUE; }

void hyocr_job_restore(HyocrJob *self, HyocrJobState state, const char *text, const char *message, int n_tokens)
{
    g_return_if_fail(state >= HYOCR_JOB_DONE);
    /* the worker must never take it */
    g_mutex_lock(&self->lock);
    self->pending.claimed = TRUE;
    g_mutex_unlock(&self->lock);
    g_object_freeze_notify(G_OBJECT(self));
    g_string_assign(self->text, text ? text : "");
    self->n_tokens = n_tokens;
    g_free(self->message);
    self->message = g_strdup(message);
    self->state = state;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_TEXT]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_N_TOKENS]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MESSAGE]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PROGRESS]);
    g_object_thaw_notify(G_OBJECT(self));
    g_signal_emit(self, signals[SIGNAL_TEXT_CHANGED], 0, NULL);
}

gboolean hyocr_job_is_finished(HyocrJob *self)
{
    return self->state >= HYOCR_JOB_DONE;
}

gboolean hyocr_job_is_active(HyocrJob *self)
{
    return self->state >= HYOCR_JOB_PREPARING && self->state <= HYOCR_JOB_WRITING;
}

/* Stages take a fixed share; writing moves with the tokens, against the
 * max_new_tokens ceiling (an answer usually ends well before it). */
double hyocr_job_get_progress(HyocrJob *self)
{
    switch (self->state) {
    case HYOCR_JOB_QUEUED: return 0.0;
    case HYOCR_JOB_PREPARING: return 0.02;
    case HYOCR_JOB_READING: return 0.1;
    case HYOCR_JOB_WRITING:
        return MIN(0.99, 0.15 + 0.85 * self->n_tokens / MAX(1, self->options->max_new_tokens));
    default: return 1.0;
    }
}

double hyocr_job_get_elapsed(HyocrJob *self)
{
    if (!self->started_us) return 0.0;
    gint64 end = self->finished_us ? self->finished_us : g_get_monotonic_time();
    return (double)(end - self->started_us) / G_USEC_PER_SEC;
}

int hyocr_job_get_live_tokens(HyocrJob *self)
{
    g_mutex_lock(&self->lock);
    int n = self->pending.n_tokens;
    g_mutex_unlock(&self->lock);
    return n;
}

/* ---- main-context flush ---- */

static void set_string(char **dst, char **src)
{
    g_free(*dst);
    *dst = g_steal_pointer(src);
}

/* Everything the worker posted since the last flush, taken in one go. */
typedef struct {
    GString      *appended;
    gboolean      restart;
    char         *final_text;
    int           n_tokens;
    gboolean      state_dirty;
    HyocrJobState state;
    char         *message, *prompt;
    HyocrJobFailure failure;
    GdkTexture   *preview;
    gint64        started_us, finished_us;
    hyocr_stop_reason stop_reason;
    hyocr_timings timings;
} Taken;

static void take_pending(HyocrJob *self, Taken *t)
{
    g_mutex_lock(&self->lock);
    Pending *p = &self->pending;
    t->appended = g_string_new_len(p->text->str, (gssize)p->text->len);
    g_string_truncate(p->text, 0);
    t->restart = p->restart;
    p->restart = FALSE;
    t->final_text = g_steal_pointer(&p->final_text);
    t->n_tokens = p->n_tokens;
    t->state_dirty = p->state_dirty;
    t->state = p->state;
    p->state_dirty = FALSE;
    t->message = g_steal_pointer(&p->message);
    t->failure = p->failure;
    t->prompt = g_steal_pointer(&p->prompt);
    t->preview = g_steal_pointer(&p->preview);
    t->started_us = p->started_us;
    t->finished_us = p->finished_us;
    t->stop_reason = p->stop_reason;
    t->timings = p->timings;
    p->scheduled = FALSE;
    p->last_flush_us = g_get_monotonic_time();
    g_mutex_unlock(&self->lock);
}

static void apply_text(HyocrJob *self, Taken *t)
{
    if (t->restart && self->text->len) {
        g_string_truncate(self->text, 0);
        g_signal_emit(self, signals[SIGNAL_TEXT_CHANGED], 0, NULL);
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_TEXT]);
    }
    if (t->appended->len) {
        g_string_append_len(self->text, t->appended->str, (gssize)t->appended->len);
        g_signal_emit(self, signals[SIGNAL_TEXT_CHANGED], 0, t->appended->str);
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_TEXT]);
    }
    if (t->final_text && g_strcmp0(t->final_text, self->text->str) != 0) {
        g_string_assign(self->text, t->final_text);
        g_signal_emit(self, signals[SIGNAL_TEXT_CHANGED], 0, NULL);
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_TEXT]);
    }
    if (t->n_tokens != self->n_tokens) {
        self->n_tokens = t->n_tokens;
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_N_TOKENS]);
    }
}

static void apply_rest(HyocrJob *self, Taken *t)
{
    if (t->prompt) {
        set_string(&self->prompt, &t->prompt);
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PROMPT]);
    }
    if (t->preview && !self->preview) {
        self->preview = g_steal_pointer(&t->preview);
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PREVIEW]);
    }
    self->failure = t->failure;
    if (t->message) {
        set_string(&self->message, &t->message);
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MESSAGE]);
    }
    self->started_us = t->started_us;
    self->finished_us = t->finished_us;
    self->stop_reason = t->stop_reason;
    self->timings = t->timings;
    /* A job cancelled while queued already shows its end; a late post must not revive it. */
    if (t->state_dirty && t->state != self->state && !hyocr_job_is_finished(self)) {
        self->state = t->state;
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
    }
}

static void attach_flush(HyocrJob *self, gint64 wait_us);

/* A timeout attached from the worker thread counts from the main context's
 * cached clock, which may be a whole poll old: it can fire early. The interval
 * is kept here, against the clock now. */
static gboolean flush_too_early(HyocrJob *self)
{
    g_mutex_lock(&self->lock);
    gint64 early = self->pending.last_flush_us ? self->pending.last_flush_us + FLUSH_INTERVAL_US - g_get_monotonic_time()
                                               : 0;
    if (early > 0) attach_flush(self, early);
    g_mutex_unlock(&self->lock);
    return early > 0;
}

static gboolean flush_cb(gpointer data)
{
    HyocrJob *self = data;
    if (flush_too_early(self)) return G_SOURCE_REMOVE;
    Taken t = { 0 };
    take_pending(self, &t);
    g_object_freeze_notify(G_OBJECT(self));
    apply_text(self, &t);
    apply_rest(self, &t);
    self->n_updates++;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_N_UPDATES]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PROGRESS]);
    g_object_thaw_notify(G_OBJECT(self));
    g_string_free(t.appended, TRUE);
    g_free(t.final_text);
    g_free(t.message);
    g_free(t.prompt);
    g_clear_object(&t.preview);
    return G_SOURCE_REMOVE;
}

/* Called with the lock held. Idle priority lets layout and paint of the frame
 * run first; the delay keeps flushes a frame apart. */
static void attach_flush(HyocrJob *self, gint64 wait_us)
{
    GSource *src = wait_us > 0 ? g_timeout_source_new((guint)((wait_us + 999) / 1000)) : g_idle_source_new();
    g_source_set_priority(src, G_PRIORITY_DEFAULT_IDLE);
    g_source_set_callback(src, flush_cb, g_object_ref(self), g_object_unref);
    g_source_set_static_name(src, "[hyocr] job flush");
    g_source_attach(src, self->main_context);
    g_source_unref(src);
}

static void schedule_flush_locked(HyocrJob *self)
{
    Pending *p = &self->pending;
    if (p->scheduled) return;
    p->scheduled = TRUE;
    attach_flush(self, p->last_flush_us ? p->last_flush_us + FLUSH_INTERVAL_US - g_get_monotonic_time() : 0);
}

/* ---- worker side ---- */

gboolean hyocr_job_claim(HyocrJob *self)
{
    g_mutex_lock(&self->lock);
    gboolean ok = !self->pending.claimed && !g_cancellable_is_cancelled(self->cancellable);
    self->pending.claimed = TRUE;
    g_mutex_unlock(&self->lock);
    return ok;
}

void hyocr_job_post_state(HyocrJob *self, HyocrJobState state)
{
    g_mutex_lock(&self->lock);
    self->pending.state = state;
    self->pending.state_dirty = TRUE;
    if (state == HYOCR_JOB_PREPARING && !self->pending.started_us) self->pending.started_us = g_get_monotonic_time();
    schedule_flush_locked(self);
    g_mutex_unlock(&self->lock);
}

void hyocr_job_post_prompt(HyocrJob *self, const char *prompt)
{
    g_mutex_lock(&self->lock);
    g_free(self->pending.prompt);
    self->pending.prompt = g_strdup(prompt);
    schedule_flush_locked(self);
    g_mutex_unlock(&self->lock);
}

void hyocr_job_post_preview(HyocrJob *self, GdkTexture *texture)
{
    g_mutex_lock(&self->lock);
    g_set_object(&self->pending.preview, texture);
    schedule_flush_locked(self);
    g_mutex_unlock(&self->lock);
}

void hyocr_job_post_piece(HyocrJob *self, const char *piece, int n_generated)
{
    g_mutex_lock(&self->lock);
    g_string_append(self->pending.text, piece);
    self->pending.n_tokens = n_generated;
    schedule_flush_locked(self);
    g_mutex_unlock(&self->lock);
}

/* The engine redoes the job (FP16 overflow): what it streamed so far goes. */
void hyocr_job_post_restart(HyocrJob *self)
{
    g_mutex_lock(&self->lock);
    g_string_truncate(self->pending.text, 0);
    self->pending.restart = TRUE;
    self->pending.n_tokens = 0;
    schedule_flush_locked(self);
    g_mutex_unlock(&self->lock);
}

void hyocr_job_post_finish(HyocrJob *self, HyocrJobState state, const char *final_text, const char *message)
{
    g_mutex_lock(&self->lock);
    Pending *p = &self->pending;
    p->state = state;
    p->state_dirty = TRUE;
    if (final_text) {
        g_free(p->final_text);
        p->final_text = g_strdup(final_text);
    }
    if (message) {
        g_free(p->message);
        p->message = g_strdup(message);
    }
    if (!p->started_us) p->started_us = g_get_monotonic_time();
    p->finished_us = g_get_monotonic_time();
    schedule_flush_locked(self);
    g_mutex_unlock(&self->lock);
}

/* The stages from the events' marks: each stage ends at its event. */
static void timings_from_marks(hyocr_timings *t, const double *mark, double total_ms, int n_generated)
{
    t->total_ms = total_ms;
    t->preprocess_ms = mark[0];
    t->vision_ms = mark[1] > 0 ? mark[1] - mark[0] : 0;
    t->prefill_ms = mark[2] > 0 ? mark[2] - (mark[1] > 0 ? mark[1] : mark[0]) : 0;
    t->first_token_ms = mark[3];
    t->decode_ms = mark[3] > 0 ? total_ms - mark[3] : 0;
    t->decode_tokens_per_s = t->decode_ms > 0 && n_generated > 1 ? (n_generated - 1) / (t->decode_ms / 1000.0) : 0;
}

void hyocr_job_post_timing(HyocrJob *self, const hyocr_event *ev)
{
    g_mutex_lock(&self->lock);
    Pending *p = &self->pending;
    switch (ev->type) {
    case HYOCR_EVENT_PREPROCESS: p->mark_ms[0] = ev->elapsed_ms; break;
    case HYOCR_EVENT_VISION: p->mark_ms[1] = ev->elapsed_ms; break;
    case HYOCR_EVENT_PREFILL: p->mark_ms[2] = ev->elapsed_ms; break;
    case HYOCR_EVENT_TOKEN: if (p->mark_ms[3] == 0) p->mark_ms[3] = ev->elapsed_ms; break;
    case HYOCR_EVENT_RESTART: memset(p->mark_ms, 0, sizeof p->mark_ms); break;
    case HYOCR_EVENT_DONE:
    case HYOCR_EVENT_CANCELLED:
        p->stop_reason = ev->stop_reason;
        timings_from_marks(&p->timings, p->mark_ms, ev->elapsed_ms, ev->n_generated);
        break;
    default: break;
    }
    g_mutex_unlock(&self->lock);
}

void hyocr_job_post_failure(HyocrJob *self, HyocrJobFailure failure, const char *message)
{
    g_mutex_lock(&self->lock);
    self->pending.failure = failure;
    g_mutex_unlock(&self->lock);
    hyocr_job_post_finish(self, HYOCR_JOB_FAILED, NULL, message);
}

/* ---- main-context actions ---- */

void hyocr_job_cancel(HyocrJob *self)
{
    g_return_if_fail(HYOCR_IS_JOB(self));
    if (hyocr_job_is_finished(self)) return;
    g_mutex_lock(&self->lock);
    gboolean was_claimed = self->pending.claimed;
    self->pending.claimed = TRUE;
    g_mutex_unlock(&self->lock);
    g_cancellable_cancel(self->cancellable);
    /* A running job ends through the worker (it reports how far it got). */
    if (was_claimed) return;
    self->state = HYOCR_JOB_CANCELLED;
    g_free(self->message);
    self->message = g_strdup(_("Cancelled before it started"));
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MESSAGE]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PROGRESS]);
}

/* The job's image (its page of a document) with its long side at most max_side;
 * any thread. A pasted or dropped image is the job's own. */
hyocr_image *hyocr_job_render(HyocrJob *self, int max_side, GError **error)
{
    if (self->document) {
        hyocr_render_options ro = { .max_side = max_side };
        return hyocr_document_render(self->document, self->page, &ro, error);
    }
    g_autofree char *path = self->file ? g_file_get_path(self->file) : NULL;
    if (!path) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s is not a local file"), self->title);
        return NULL;
    }
    /* the engine's readers only (document.h): what the CLI reads, no more */
    hyocr_image_options io = { .max_side = max_side };
    return hyocr_image_load(path, &io, error);
}

static void preview_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
    g_autoptr(hyocr_image) img = hyocr_job_render(HYOCR_JOB(source), HYOCR_JOB_PREVIEW_SIDE, NULL);
    if (!img) {
        g_task_return_pointer(task, NULL, NULL);
        return;
    }
    g_task_return_pointer(task, hyocr_texture_from_image(img), g_object_unref);
}

static void preview_done(GObject *source, GAsyncResult *res, gpointer data)
{
    HyocrJob *self = HYOCR_JOB(source);
    g_autoptr(GdkTexture) tex = g_task_propagate_pointer(G_TASK(res), NULL);
    self->preview_loading = FALSE;
    if (!tex || self->preview) return;
    self->preview = g_steal_pointer(&tex);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_PREVIEW]);
}

void hyocr_job_ensure_preview(HyocrJob *self)
{
    if (self->preview || self->preview_loading || !self->file) return;
    self->preview_loading = TRUE;
    g_autoptr(GTask) task = g_task_new(self, NULL, preview_done, NULL);
    g_task_set_task_data(task, g_object_ref(self->file), g_object_unref);
    g_task_run_in_thread(task, preview_thread);
}
