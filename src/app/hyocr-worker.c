/* hyocr-gtk — inference thread. */
#include "hyocr-worker-private.h"
#include "gpu-check.h"
#include "error.h"
#include "hyocr-image-util.h"
#include "hyocr-memory.h"
#include "hyocr-build-config.h"
#if HYOCR_HAVE_DOWNLOAD
#include "remote.h"
#include "hyocr-keyring.h"
#endif
#include <glib/gi18n.h>
#include <string.h>

G_DEFINE_ENUM_TYPE(HyocrWorkerState, hyocr_worker_state,
    G_DEFINE_ENUM_VALUE(HYOCR_WORKER_IDLE, "idle"),
    G_DEFINE_ENUM_VALUE(HYOCR_WORKER_LOADING, "loading"),
    G_DEFINE_ENUM_VALUE(HYOCR_WORKER_READY, "ready"),
    G_DEFINE_ENUM_VALUE(HYOCR_WORKER_FAILED, "failed"))

/* SLOT: a job the engine ran has ended, so another may be submitted. */
typedef enum { MSG_LOAD, MSG_JOB, MSG_QUIT, MSG_SLOT } MsgType;

typedef struct {
    MsgType             type;
    HyocrEngineSettings settings;   /* LOAD */
    guint               generation; /* LOAD: skipped when a newer load is queued */
    HyocrJob           *job;        /* JOB: owned */
} Msg;

struct _HyocrWorker {
    GObject          parent_instance;

    GThread         *thread;
    GAsyncQueue     *queue;
    GMainContext    *main_context;
    guint            load_generation;   /* atomic */

    /* Shared with the thread and the engine's thread (which sends the jobs' events).
     * The lock is held only to publish or retire the engine and to note the jobs
     * the engine runs, never while one runs, so the gauge never waits. */
    GMutex           lock;
    hyocr_engine    *engine;
#if HYOCR_HAVE_DOWNLOAD
    hyocr_remote    *remote;            /* instead of the engine: "A server" */
#endif
    gboolean         engine_cpu;
    int64_t          engine_limit;
    GPtrArray       *current;           /* Running: the jobs submitted to the engine (shutdown cancels them) */
    int              max_batch;         /* atomic; 0: 8 on the GPU, 1 on the CPU */
    int              largest_batch;     /* atomic: the most jobs one decode step ran */
    gboolean         hold;              /* under lock: tests' hyocr_worker_hold_until_submit */
    GCond            held;

    GQueue           waiting;           /* thread only: jobs that arrived with no engine */
    GQueue           backlog;           /* thread only: Msg (JOB, LOAD) in order, waiting for a slot */
    GString         *load_notice;       /* thread only: engine warnings during a load */
    char            *gpu_why;           /* thread only: why the last load runs on the CPU though the GPU was wanted */

    /* main context */
    HyocrWorkerState state;
    GError          *error;
    char            *model_dir;
    gboolean         is_cpu;
    char            *gpu_note;
    char            *server;            /* the server's name, when jobs run on one */
};

G_DEFINE_FINAL_TYPE(HyocrWorker, hyocr_worker, G_TYPE_OBJECT)

enum { PROP_0, PROP_STATE, N_PROPS };
static GParamSpec *props[N_PROPS];

enum { SIGNAL_NOTICE, N_SIGNALS };
static guint signals[N_SIGNALS];

void hyocr_engine_settings_clear(HyocrEngineSettings *s)
{
    g_clear_pointer(&s->model_dir, g_free);
    g_clear_pointer(&s->server_url, g_free);
    g_clear_pointer(&s->server_model, g_free);
    if (s->server_key) memset(s->server_key, 0, strlen(s->server_key));
    g_clear_pointer(&s->server_key, g_free);
    g_clear_pointer(&s->server_fingerprint, g_free);
}

static void msg_free(Msg *m)
{
    hyocr_engine_settings_clear(&m->settings);
    g_clear_object(&m->job);
    g_free(m);
}

/* ---- posting to the main context ---- */

typedef struct {
    GWeakRef         worker;
    HyocrWorkerState state;
    GError          *error;
    char            *model_dir, *notice, *gpu_note, *server;
    gboolean         cpu;
} StatePost;

static void state_post_free(gpointer data)
{
    StatePost *p = data;
    g_weak_ref_clear(&p->worker);
    g_clear_error(&p->error);
    g_free(p->model_dir);
    g_free(p->notice);
    g_free(p->gpu_note);
    g_free(p->server);
    g_free(p);
}

static gboolean apply_state(gpointer data)
{
    StatePost *p = data;
    g_autoptr(HyocrWorker) self = g_weak_ref_get(&p->worker);
    if (!self) return G_SOURCE_REMOVE;
    g_clear_error(&self->error);
    self->error = g_steal_pointer(&p->error);
    g_free(self->model_dir);
    self->model_dir = g_steal_pointer(&p->model_dir);
    self->is_cpu = p->cpu;
    g_free(self->gpu_note);
    self->gpu_note = g_steal_pointer(&p->gpu_note);
    g_free(self->server);
    self->server = g_steal_pointer(&p->server);
    self->state = p->state;
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
    if (p->notice) g_signal_emit(self, signals[SIGNAL_NOTICE], 0, p->notice);
    return G_SOURCE_REMOVE;
}

static void post_state_full(HyocrWorker *self, HyocrWorkerState state, const char *model_dir, const char *server,
                            const GError *error)
{
    StatePost *p = g_new0(StatePost, 1);
    p->server = g_strdup(server);
    g_weak_ref_init(&p->worker, self);
    p->state = state;
    p->error = error ? g_error_copy(error) : NULL;
    p->model_dir = g_strdup(model_dir);
    if (state == HYOCR_WORKER_READY) {
        p->cpu = self->engine_cpu;
        if (self->load_notice->len) p->notice = g_strdup(self->load_notice->str);
        p->gpu_note = g_strdup(self->gpu_why);
    }
    g_main_context_invoke_full(self->main_context, G_PRIORITY_DEFAULT, apply_state, p, state_post_free);
}

static void post_state(HyocrWorker *self, HyocrWorkerState state, const char *model_dir, const GError *error)
{
    post_state_full(self, state, model_dir, NULL, error);
}

/* The last reference to a job may hold a texture; drop it where GTK lives. */
static gboolean unref_on_main(gpointer data)
{
    g_object_unref(data);
    return G_SOURCE_REMOVE;
}

static void release_job(HyocrWorker *self, HyocrJob *job)
{
    g_main_context_invoke_full(self->main_context, G_PRIORITY_DEFAULT_IDLE, unref_on_main, job, NULL);
}

/* ---- engine load (thread) ---- */

static void on_engine_log(hyocr_log_level level, const char *message, void *data)
{
    HyocrWorker *self = data;
    if (level < HYOCR_LOG_WARNING) return;
    if (self->load_notice->len) g_string_append_c(self->load_notice, '\n');
    g_string_append(self->load_notice, message);
}

/* First-run check: when CUDA was wanted but the engine runs on the CPU (or could
 * not start on the GPU), say which piece is missing — driver, device nodes,
 * nvidia_uvm, the Flatpak GL.nvidia extension, libcuda — and what to do. */
static char *gpu_explanation(void)
{
    g_autoptr(hyocr_gpu_report) r = hyocr_gpu_check(NULL);
    if (r->status == HYOCR_GPU_OK) return NULL;
    return g_strdup_printf("%s — %s", r->title, r->detail);
}

/* Not a toast at every load: Preferences and About say it (hyocr_worker_get_gpu_note). */
static void explain_cpu_fallback(HyocrWorker *self)
{
    g_free(self->gpu_why);
    self->gpu_why = gpu_explanation();
}

static void retire_engine(HyocrWorker *self)
{
    g_mutex_lock(&self->lock);
    hyocr_engine *old = g_steal_pointer(&self->engine);
#if HYOCR_HAVE_DOWNLOAD
    hyocr_remote *old_remote = g_steal_pointer(&self->remote);
#endif
    g_mutex_unlock(&self->lock);
    hyocr_engine_free(old);
#if HYOCR_HAVE_DOWNLOAD
    hyocr_remote_free(old_remote);
#endif
}

/* An engine or a server to run jobs on. */
static gboolean has_runner(HyocrWorker *self)
{
#if HYOCR_HAVE_DOWNLOAD
    if (self->remote) return TRUE;
#endif
    return self->engine != NULL;
}

/* Jobs that waited for a model go first, in the order they came. */
static void requeue_waiting(HyocrWorker *self)
{
    HyocrJob *job;
    while ((job = g_queue_pop_tail(&self->waiting))) {
        Msg *m = g_new0(Msg, 1);
        m->type = MSG_JOB;
        m->job = job;
        g_queue_push_head(&self->backlog, m);
    }
}

/* Jobs queued together start together; 0, the default: 8 on the GPU, 1 on the
 * CPU (where a batch would delay every first answer by the others' vision passes). */
static int batch_size(HyocrWorker *self)
{
    int n = g_atomic_int_get(&self->max_batch);
    return n > 0 ? n : self->engine_cpu ? 1 : 8;   /* a server: 8 requests in flight, as hyocr run's default */
}

#if HYOCR_HAVE_DOWNLOAD
/* "A server": reached, trusted, the key taken, the model served (hyocr_remote_check),
 * or FAILED with what is wrong. The key comes from the keyring when not given. */
static void thread_connect(HyocrWorker *self, Msg *m)
{
    const HyocrEngineSettings *es = &m->settings;
    post_state_full(self, HYOCR_WORKER_LOADING, es->server_model, es->server_url, NULL);
    retire_engine(self);
    g_autofree char *key = es->server_key ? g_strdup(es->server_key) : hyocr_keyring_lookup(es->server_url);
    hyocr_remote_params rp;
    hyocr_remote_params_init(&rp);
    rp.url = es->server_url;
    rp.model = es->server_model && *es->server_model ? es->server_model : NULL;
    rp.api_key = key;
    rp.trusted_fingerprint = es->server_fingerprint;
    g_autoptr(GError) error = NULL;
    hyocr_remote *r = hyocr_remote_new(&rp, &error);
    if (key) memset(key, 0, strlen(key));
    if (!r || !hyocr_remote_check(r, NULL, &error)) {
        hyocr_remote_free(r);
        post_state_full(self, HYOCR_WORKER_FAILED, es->server_model, es->server_url, error);
        return;
    }
    g_mutex_lock(&self->lock);
    self->remote = r;
    self->engine_cpu = FALSE;
    self->engine_limit = 0;
    g_mutex_unlock(&self->lock);
    post_state_full(self, HYOCR_WORKER_READY, hyocr_remote_model(r), hyocr_remote_server_name(r), NULL);
    requeue_waiting(self);
}
#endif

static void thread_load(HyocrWorker *self, Msg *m)
{
    if (m->generation != (guint)g_atomic_int_get(&self->load_generation)) return;
#if HYOCR_HAVE_DOWNLOAD
    if (m->settings.server_url) {
        thread_connect(self, m);
        return;
    }
#endif
    post_state(self, HYOCR_WORKER_LOADING, m->settings.model_dir, NULL);
    /* Two copies of the weights may not fit on the card: the old one goes first. */
    retire_engine(self);
    g_string_truncate(self->load_notice, 0);
    g_clear_pointer(&self->gpu_why, g_free);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = m->settings.model_dir;
    ep.device = m->settings.device;
    ep.memory_limit = m->settings.memory_limit;
    ep.n_threads = m->settings.n_threads;
    ep.log = on_engine_log;
    ep.log_data = self;
    g_autoptr(GError) error = NULL;
    hyocr_engine *eng = hyocr_engine_init(&ep, &error);
    if (!eng) {
        if (m->settings.device == HYOCR_DEVICE_CUDA && error->code == HYOCR_ERROR_BACKEND) {
            /* The GPU was asked for: why it cannot be used, and the setting that helps. */
            g_autoptr(hyocr_gpu_report) r = hyocr_gpu_check(NULL);
            g_autoptr(GError) worded = g_error_new(HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                                                   _("hyocr is set to run on the GPU, which it cannot use here (%s). "
                                                     "Choose “Automatic” or “CPU” under Device in Preferences."),
                                                   r->status != HYOCR_GPU_OK ? r->title : error->message);
            g_clear_error(&error);
            error = g_steal_pointer(&worded);
        }
        hyocr_memory_reword_error(error);
        post_state(self, HYOCR_WORKER_FAILED, m->settings.model_dir, error);
        return;
    }
    gboolean cpu = hyocr_engine_backend_kind(eng) == HYOCR_BACKEND_CPU;
    if (cpu && m->settings.device != HYOCR_DEVICE_CPU) explain_cpu_fallback(self);
    /* The first GPU job pays ~0.2 s of module loading and plans: pay it while
     * "Loading" shows, so the user's first page streams as fast as the next. A
     * failed warm-up (a card too small for a 1024² page) costs nothing later. */
    g_autoptr(GError) warm_error = NULL;
    if (!cpu && !hyocr_engine_warmup(eng, &warm_error))
        g_message("GPU warm-up skipped: %s", warm_error->message);
    g_mutex_lock(&self->lock);
    self->engine = eng;
    self->engine_cpu = cpu;
    self->engine_limit = m->settings.memory_limit;
    hyocr_engine_set_max_batch(eng, batch_size(self));
    g_mutex_unlock(&self->lock);
    post_state(self, HYOCR_WORKER_READY, m->settings.model_dir, NULL);
    requeue_waiting(self);
}

/* ---- one job (thread) ---- */

/* The engine's text can hold NUL bytes (a token may decode to byte 0), which GTK's text
 * cannot: the app shows, copies and saves each as ␀ (U+2400 SYMBOL FOR NULL). */
char *hyocr_worker_displayable_text(const char *text, size_t len)
{
    GString *s = g_string_sized_new(len + 1);
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        g_string_append_len(s, p, (nul ? nul : end) - p);
        if (!nul) break;
        g_string_append(s, "\xE2\x90\x80");
        p = nul + 1;
    }
    return g_string_free(s, FALSE);
}

/* The engine's error, in the app's words, with what kind of failure it is. */
static void fail_job(HyocrJob *job, const GError *error)
{
    g_autoptr(GError) worded = g_error_copy(error);
    hyocr_memory_reword_error(worded);
    HyocrJobFailure kind = hyocr_error_get_memplan(error) || g_error_matches(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY)
                               ? HYOCR_JOB_FAILURE_MEMORY
                           : error->domain == HYOCR_ERROR && (error->code == HYOCR_ERROR_IMAGE || error->code == HYOCR_ERROR_IO)
                               ? HYOCR_JOB_FAILURE_IMAGE
                               : HYOCR_JOB_FAILURE_OTHER;
    hyocr_job_post_failure(job, kind, worded->message);
}

/* A job submitted to the engine, with what the engine reads of it until its last event. */
typedef struct {
    HyocrWorker *worker;
    HyocrJob    *job;
    hyocr_image *owned;    /* the decoded page */
} Running;

/* Its last event came: the engine reads nothing of it any more. */
static void running_end(Running *r)
{
    HyocrWorker *self = r->worker;
    g_mutex_lock(&self->lock);
    g_ptr_array_remove_fast(self->current, r);
    g_mutex_unlock(&self->lock);
    hyocr_image_free(r->owned);
    release_job(self, r->job);
    g_free(r);
    Msg *slot = g_new0(Msg, 1);
    slot->type = MSG_SLOT;
    g_async_queue_push(self->queue, slot);
}

static void post_end(HyocrJob *job, const hyocr_event *ev)
{
    if (ev->type == HYOCR_EVENT_DONE) {
        g_autofree char *text = hyocr_worker_displayable_text(ev->piece, ev->piece_len);
        hyocr_job_post_finish(job, HYOCR_JOB_DONE, text, NULL);
    } else if (ev->type == HYOCR_EVENT_CANCELLED) {
        g_autofree char *msg = g_strdup_printf(_("Cancelled after %d tokens"), ev->n_generated);
        hyocr_job_post_finish(job, HYOCR_JOB_CANCELLED, NULL, msg);
    } else {
        fail_job(job, ev->error);
    }
}

/* The engine's thread waits here while a test holds it (never otherwise). */
static void hold_point(HyocrWorker *self)
{
    g_mutex_lock(&self->lock);
    while (self->hold) g_cond_wait(&self->held, &self->lock);
    g_mutex_unlock(&self->lock);
}

static void release_hold(HyocrWorker *self)
{
    g_mutex_lock(&self->lock);
    self->hold = FALSE;
    g_cond_broadcast(&self->held);
    g_mutex_unlock(&self->lock);
}

/* On the engine's thread. */
static void on_event(const hyocr_event *ev, void *data)
{
    Running *r = data;
    HyocrJob *job = r->job;
    hyocr_job_post_timing(job, ev);
    switch (ev->type) {
    case HYOCR_EVENT_PREPROCESS: hyocr_job_post_state(job, HYOCR_JOB_READING); break;
    case HYOCR_EVENT_PREFILL: hyocr_job_post_state(job, HYOCR_JOB_WRITING); break;
    case HYOCR_EVENT_TOKEN: {
        hold_point(r->worker);
        if (ev->batch_size > g_atomic_int_get(&r->worker->largest_batch))
            g_atomic_int_set(&r->worker->largest_batch, ev->batch_size);
        g_autofree char *piece = hyocr_worker_displayable_text(ev->piece, ev->piece_len);
        hyocr_job_post_piece(job, piece, ev->n_generated);
        break;
    }
    case HYOCR_EVENT_RESTART: hyocr_job_post_restart(job); break;
    case HYOCR_EVENT_DONE:
    case HYOCR_EVENT_ERROR:
    case HYOCR_EVENT_CANCELLED:
        post_end(job, ev);
        running_end(r);
        break;
    default: break;
    }
}

/* The image the engine will see: decoded here for file jobs so a corrupt file
 * fails with the decoder's message and the preview matches the pixels used; a
 * document's page rendered as the engine renders it (a PDF page to the model's
 * pixel budget). */
static const hyocr_image *job_image(HyocrWorker *self, HyocrJob *job, hyocr_image **owned, GError **error)
{
    const hyocr_image *img = hyocr_job_peek_image(job);
    if (img) return img;
    if (hyocr_job_get_document(job)) {
        /* a server's model is unknown here: the largest budget, which its processor brings down */
        hyocr_render_options ro = { .max_pixels = self->engine ? hyocr_engine_config(self->engine)->processor.max_pixels
                                                               : 0,
                                    .max_side = hyocr_job_get_options(job)->max_side };
        *owned = hyocr_document_render(hyocr_job_get_document(job), hyocr_job_get_page(job), &ro, error);
        return *owned;
    }
    g_autofree char *path = g_file_get_path(hyocr_job_get_file(job));
    if (!path) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s is not a local file"), hyocr_job_get_title(job));
        return NULL;
    }
    hyocr_image_options io = { .max_side = hyocr_job_get_options(job)->max_side };
    *owned = hyocr_image_load(path, &io, error);
    if (!*owned) return NULL;
    g_autoptr(GdkTexture) tex = hyocr_texture_thumbnail(*owned, HYOCR_JOB_PREVIEW_SIDE);
    if (tex) hyocr_job_post_preview(job, tex);
    return *owned;
}

static void fill_params(HyocrJob *job, const hyocr_image *img, hyocr_job_params *jp)
{
    const HyocrJobOptions *o = hyocr_job_get_options(job);
    hyocr_job_params_init(jp);
    jp->image = img;
    jp->max_side = o->max_side;   /* a file decoded here fits already: the engine's rule leaves it */
    jp->task = o->task;
    jp->fields = (const char *const *)o->fields;
    jp->custom_prompt = o->custom_prompt;
    jp->max_new_tokens = o->max_new_tokens;
    jp->repetition_penalty = o->repetition_penalty;
    jp->ignore_eos = o->ignore_eos;
    jp->cancellable = hyocr_job_get_cancellable(job);
    jp->on_event = on_event;
}

/* The engine plans a job's memory from the image and prompt alone and would
 * refuse it too; asking first lets the refusal name the preferences. */
static char *check_memory(HyocrWorker *self, const hyocr_job_params *jp, GError **error)
{
    hyocr_memplan plan;
    if (!hyocr_engine_plan_job(self->engine, jp, &plan, error)) return NULL;
    return hyocr_memory_refusal(&plan);
}

/* Decode, build the prompt text, refuse what cannot fit. FALSE when the job
 * ended here (already reported). */
static gboolean prepare_job(HyocrWorker *self, HyocrJob *job, const hyocr_image **img, hyocr_image **owned,
                            hyocr_job_params *jp)
{
    const HyocrJobOptions *o = hyocr_job_get_options(job);
    g_autoptr(GError) error = NULL;
    *img = job_image(self, job, owned, &error);
    if (!*img) {
        fail_job(job, error);
        return FALSE;
    }
    /* a server's model: the release it says it serves (hyocr serve), else the current one */
    hyocr_model_version version = HYOCR_MODEL_VERSION_1_5;
    if (self->engine) version = hyocr_engine_config(self->engine)->version;
#if HYOCR_HAVE_DOWNLOAD
    else if (self->remote) version = hyocr_remote_model_version(self->remote);
#endif
    g_autofree char *prompt = hyocr_task_prompt(o->task, version, (const char *const *)o->fields,
                                                o->custom_prompt, &error);
    if (!prompt) {
        fail_job(job, error);
        return FALSE;
    }
    hyocr_job_post_prompt(job, prompt);
    fill_params(job, *img, jp);
    if (!self->engine) return TRUE;   /* a server plans its own memory */
    g_autofree char *refusal = check_memory(self, jp, &error);
    if (error) {
        fail_job(job, error);
        return FALSE;
    }
    if (refusal) {
        hyocr_job_post_failure(job, HYOCR_JOB_FAILURE_MEMORY, refusal);
        return FALSE;
    }
    return TRUE;
}

/* Decoded, prompted and within memory: the job's Running, or NULL when it ended
 * here (reported). */
static Running *prepare(HyocrWorker *self, HyocrJob *job, hyocr_job_params *jp)
{
    hyocr_job_post_state(job, HYOCR_JOB_PREPARING);
    const hyocr_image *img = NULL;
    hyocr_image *owned = NULL;
    if (!prepare_job(self, job, &img, &owned, jp)) {
        hyocr_image_free(owned);
        return NULL;
    }
    if (g_cancellable_is_cancelled(hyocr_job_get_cancellable(job))) {
        hyocr_job_post_finish(job, HYOCR_JOB_CANCELLED, NULL, _("Cancelled before it started"));
        hyocr_image_free(owned);
        return NULL;
    }
    Running *r = g_new0(Running, 1);
    r->worker = self;
    r->job = g_object_ref(job);
    r->owned = owned;
    jp->user_data = r;
    return r;
}

/* Queued together, submitted together: the engine starts them in one round.
 * The thread returns at once, so a page added while these decode is submitted
 * as soon as it is ready and joins their decode steps. */
static void submit(HyocrWorker *self, Running **runs, hyocr_job_params *jp, int n)
{
    if (n == 0) return;
    g_mutex_lock(&self->lock);
    for (int i = 0; i < n; i++) g_ptr_array_add(self->current, runs[i]);
    g_mutex_unlock(&self->lock);
#if HYOCR_HAVE_DOWNLOAD
    if (self->remote) {
        release_hold(self);
        for (int i = 0; i < n; i++) {
            g_autoptr(GError) error = NULL;
            hyocr_job_post_state(runs[i]->job, HYOCR_JOB_READING);
            hyocr_remote_job *rj = hyocr_remote_submit(self->remote, &jp[i], &error);
            if (rj) {
                hyocr_remote_job_unref(rj);   /* the remote keeps its own until the job has ended */
                continue;
            }
            fail_job(runs[i]->job, error);
            running_end(runs[i]);
        }
        return;
    }
#endif
    g_autofree hyocr_request **reqs = g_new0(hyocr_request *, n);
    g_autoptr(GError) error = NULL;
    gboolean queued = hyocr_engine_submit_many(self->engine, jp, n, reqs, &error);
    release_hold(self);
    if (queued) {
        /* the engine keeps its own reference until each has ended */
        for (int i = 0; i < n; i++) hyocr_request_unref(reqs[i]);
        return;
    }
    for (int i = 0; i < n; i++) {
        fail_job(runs[i]->job, error);
        running_end(runs[i]);
    }
}

static int n_current(HyocrWorker *self)
{
    g_mutex_lock(&self->lock);
    int n = (int)self->current->len;
    g_mutex_unlock(&self->lock);
    return n;
}

/* Up to n jobs from the head of the backlog, prepared and submitted together. */
static void submit_head(HyocrWorker *self, int n)
{
    g_autofree hyocr_job_params *jp = g_new0(hyocr_job_params, n);
    g_autofree Running **runs = g_new0(Running *, n);
    int k = 0;
    for (int taken = 0; taken < n && !g_queue_is_empty(&self->backlog);) {
        Msg *m = g_queue_peek_head(&self->backlog);
        if (m->type != MSG_JOB) break;
        g_queue_pop_head(&self->backlog);
        if (hyocr_job_claim(m->job) && (runs[k] = prepare(self, m->job, &jp[k]))) {
            k++;
            taken++;
        }
        release_job(self, g_steal_pointer(&m->job));
        msg_free(m);
    }
    submit(self, runs, jp, k);
}

/* Works through the backlog in order while the engine has room: jobs are
 * prepared (their pages decoded) only when they can start, up to the batch size
 * at a time, so a page added while others decode joins them; a load waits for
 * the jobs queued before it to end. */
static void advance(HyocrWorker *self)
{
    Msg *m;
    while ((m = g_queue_peek_head(&self->backlog))) {
        if (m->type == MSG_LOAD) {
            if (n_current(self) > 0) return;
            g_queue_pop_head(&self->backlog);
            thread_load(self, m);
            msg_free(m);
        } else if (!has_runner(self)) {
            g_queue_pop_head(&self->backlog);
            g_queue_push_tail(&self->waiting, g_steal_pointer(&m->job));
            msg_free(m);
        } else {
            int room = batch_size(self) - n_current(self);
            if (room <= 0) return;
            submit_head(self, room);
        }
    }
}

static gpointer worker_thread(gpointer data)
{
    HyocrWorker *self = data;
    for (;;) {
        Msg *m = g_async_queue_pop(self->queue);
        if (m->type == MSG_QUIT) {
            msg_free(m);
            break;
        }
        if (m->type == MSG_SLOT) msg_free(m);
        else g_queue_push_tail(&self->backlog, m);
        advance(self);
    }
    retire_engine(self);   /* ends what it still runs (cancelled) */
    return NULL;
}

/* ---- main context API ---- */

static void push(HyocrWorker *self, Msg *m)
{
    if (!self->thread) self->thread = g_thread_new("hyocr-worker", worker_thread, self);
    g_async_queue_push(self->queue, m);
}

void hyocr_worker_load(HyocrWorker *self, const HyocrEngineSettings *settings)
{
    g_return_if_fail(HYOCR_IS_WORKER(self));
    Msg *m = g_new0(Msg, 1);
    m->type = MSG_LOAD;
    m->settings = *settings;
    m->settings.model_dir = g_strdup(settings->model_dir);
    m->settings.server_url = g_strdup(settings->server_url);
    m->settings.server_model = g_strdup(settings->server_model);
    m->settings.server_key = g_strdup(settings->server_key);
    m->settings.server_fingerprint = g_strdup(settings->server_fingerprint);
    m->generation = (guint)g_atomic_int_add(&self->load_generation, 1) + 1;
    /* Shown at once, so the UI never waits for the thread to pick the load up. */
    if (self->state != HYOCR_WORKER_LOADING) {
        self->state = HYOCR_WORKER_LOADING;
        g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
    }
    push(self, m);
}

void hyocr_worker_push(HyocrWorker *self, HyocrJob *job)
{
    g_return_if_fail(HYOCR_IS_WORKER(self) && HYOCR_IS_JOB(job));
    Msg *m = g_new0(Msg, 1);
    m->type = MSG_JOB;
    m->job = g_object_ref(job);
    push(self, m);
}

void hyocr_worker_shutdown(HyocrWorker *self)
{
    if (!self->thread) return;
    g_mutex_lock(&self->lock);
    for (guint i = 0; i < self->current->len; i++)
        g_cancellable_cancel(hyocr_job_get_cancellable(((Running *)self->current->pdata[i])->job));
    g_mutex_unlock(&self->lock);
    release_hold(self);
    Msg *quit = g_new0(Msg, 1);
    quit->type = MSG_QUIT;
    g_async_queue_push_front(self->queue, quit);
    g_thread_join(g_steal_pointer(&self->thread));
    /* The thread is gone: what it left is ours now. */
    Msg *m;
    while ((m = g_async_queue_try_pop(self->queue))) msg_free(m);
    g_queue_clear_full(&self->waiting, g_object_unref);
    g_queue_clear_full(&self->backlog, (GDestroyNotify)msg_free);
}

void hyocr_worker_hold_until_submit(HyocrWorker *self)
{
    g_return_if_fail(HYOCR_IS_WORKER(self));
    g_mutex_lock(&self->lock);
    self->hold = TRUE;
    g_mutex_unlock(&self->lock);
}

void hyocr_worker_set_max_batch(HyocrWorker *self, int n)
{
    g_return_if_fail(HYOCR_IS_WORKER(self));
    g_atomic_int_set(&self->max_batch, MAX(n, 0));
    g_mutex_lock(&self->lock);
    if (self->engine) hyocr_engine_set_max_batch(self->engine, batch_size(self));
    g_mutex_unlock(&self->lock);
    /* more room: the thread looks at its backlog again */
    Msg *slot = g_new0(Msg, 1);
    slot->type = MSG_SLOT;
    push(self, slot);
}

int hyocr_worker_get_largest_batch(HyocrWorker *self)
{
    return g_atomic_int_get(&self->largest_batch);
}

HyocrWorkerState hyocr_worker_get_state(HyocrWorker *self) { return self->state; }
const GError *hyocr_worker_get_error(HyocrWorker *self) { return self->error; }
const char *hyocr_worker_get_model_dir(HyocrWorker *self) { return self->model_dir; }
gboolean hyocr_worker_is_cpu(HyocrWorker *self) { return self->is_cpu; }
const char *hyocr_worker_get_gpu_note(HyocrWorker *self) { return self->gpu_note; }
const char *hyocr_worker_get_server(HyocrWorker *self) { return self->server; }

gboolean hyocr_worker_get_server_metrics(HyocrWorker *self, int64_t *memory_used, int *running, GError **error)
{
#if HYOCR_HAVE_DOWNLOAD
    /* a reference keeps it while /metrics is asked, the lock only while it is taken */
    g_mutex_lock(&self->lock);
    hyocr_remote *r = self->remote ? hyocr_remote_ref(self->remote) : NULL;
    g_mutex_unlock(&self->lock);
    hyocr_remote_metrics m;
    gboolean ok = r && hyocr_remote_get_metrics(r, &m, error);
    hyocr_remote_unref(r);
    if (ok) {
        *memory_used = m.memory_used;
        *running = m.running;
    }
    return ok;
#else
    (void)self, (void)memory_used, (void)running, (void)error;
    return FALSE;
#endif
}

gboolean hyocr_worker_get_mem_info(HyocrWorker *self, hyocr_mem_info *out, gboolean *cpu)
{
    g_mutex_lock(&self->lock);
    gboolean ok = self->engine != NULL;
    if (ok) hyocr_engine_mem_info(self->engine, out);
    if (ok && cpu) *cpu = self->engine_cpu;
    g_mutex_unlock(&self->lock);
    return ok;
}

int64_t hyocr_worker_get_memory_limit(HyocrWorker *self)
{
    g_mutex_lock(&self->lock);
    int64_t limit = self->engine ? self->engine_limit : 0;
    g_mutex_unlock(&self->lock);
    return limit;
}

/* ---- GObject ---- */

static void hyocr_worker_dispose(GObject *object)
{
    hyocr_worker_shutdown(HYOCR_WORKER(object));
    G_OBJECT_CLASS(hyocr_worker_parent_class)->dispose(object);
}

static void hyocr_worker_finalize(GObject *object)
{
    HyocrWorker *self = HYOCR_WORKER(object);
    g_async_queue_unref(self->queue);
    g_main_context_unref(self->main_context);
    g_mutex_clear(&self->lock);
    g_cond_clear(&self->held);
    g_string_free(self->load_notice, TRUE);
    g_free(self->gpu_why);
    g_free(self->gpu_note);
    g_free(self->server);
    g_ptr_array_free(self->current, TRUE);
    g_clear_error(&self->error);
    g_free(self->model_dir);
    G_OBJECT_CLASS(hyocr_worker_parent_class)->finalize(object);
}

static void hyocr_worker_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    HyocrWorker *self = HYOCR_WORKER(object);
    switch (prop_id) {
    case PROP_STATE: g_value_set_enum(value, self->state); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void hyocr_worker_class_init(HyocrWorkerClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    object_class->dispose = hyocr_worker_dispose;
    object_class->finalize = hyocr_worker_finalize;
    object_class->get_property = hyocr_worker_get_property;
    GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS | G_PARAM_EXPLICIT_NOTIFY;
    props[PROP_STATE] = g_param_spec_enum("state", NULL, NULL, HYOCR_TYPE_WORKER_STATE, HYOCR_WORKER_IDLE, ro);
    g_object_class_install_properties(object_class, N_PROPS, props);
    /* A warning from the engine while loading (e.g. the GPU was not usable). */
    signals[SIGNAL_NOTICE] = g_signal_new("notice", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                          NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void hyocr_worker_init(HyocrWorker *self)
{
    self->queue = g_async_queue_new_full((GDestroyNotify)msg_free);
    self->main_context = g_main_context_ref_thread_default();
    g_mutex_init(&self->lock);
    g_cond_init(&self->held);
    g_queue_init(&self->waiting);
    g_queue_init(&self->backlog);
    self->current = g_ptr_array_new();
    self->load_notice = g_string_new(NULL);
}

HyocrWorker *hyocr_worker_new(void)
{
    return g_object_new(HYOCR_TYPE_WORKER, NULL);
}
