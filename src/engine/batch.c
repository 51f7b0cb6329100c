/* hyocr — the scheduler: one thread per engine loads the model and runs every
 * job, continuously batched over one KV pool.
 *
 * Jobs are submitted from any thread at any time and wait in a FIFO queue
 * (bounded by max_queue). Between decode steps the thread resumes preempted
 * jobs and admits queued ones while memory allows (their preprocessing, vision
 * and prefill run then), and every running job brings one token to a shared
 * decode step. When a step cannot get a KV block, the most recently admitted
 * job is preempted: its K/V go to host memory while the swap space lasts, else
 * its blocks are simply freed and its prefill (prompt + generated tokens, with
 * the image embeddings kept on the host) is redone on resume.
 *
 * The KV pool follows the work, since the jobs to come are unknown. A job
 * admitted while nothing runs gets a pool sized to it after its vision pass,
 * exactly as the engine always ran a single job (under a tight budget its
 * vision weights leave the device then, and it runs alone). A job admitted
 * while others decode needs room for its vision pass next to the pool, and
 * grows the pool by its share where the budget allows (the storage is copied
 * whole, so the running jobs keep their blocks), else takes what is free and
 * preemption sorts it out. When nothing runs, the pool, the scratch and the
 * decode graphs go: an idle engine holds its weights only.
 *
 * A job whose FP16 result overflows is set aside; the queue stops admitting
 * until the others have drained, the engine reloads in BF16 (fp32 on the CPU
 * where the card has none), reruns those jobs, then goes back to FP16. */
#include "engine-internal.h"
#include "error.h"
#include "i18n.h"
#include <math.h>
#include <string.h>

struct hyocr_request {
    gint              ref;
    hyocr_job_end     end;           /* its result, handed to hyocr_request_wait */
    gint              cancel;        /* atomic: hyocr_request_cancel */
    bool              waiting;       /* counted in the queue bound (scheduler thread) */
    bool              redo;          /* FP16 overflowed: rerun in the redo precision */
    hyocr_job_params  params;        /* its strings and arrays in `own` */
    hyocr_job_copies  own;
    hyocr_job_result  res;
    job_state         st;            /* the scheduler's */
};

typedef struct hyocr_sched {
    hyocr_engine       *eng;
    GThread            *thread;
    /* shared, under lock */
    GMutex              lock;
    GCond               cond;           /* a submission, quitting, the end of the load */
    GQueue              incoming;       /* hyocr_request *, a reference each */
    bool                quit;
    int                 load_state;     /* 0 loading, 1 loaded, -1 failed (load_error) */
    GError             *load_error;
    hyocr_engine_stats  stats;
    gint                n_waiting;      /* atomic: submitted, not yet admitted nor ended */
    gint                max_batch;      /* atomic */
    /* the thread's own */
    GPtrArray          *jobs;           /* hyocr_request *: unfinished, in submission order */
    GPtrArray          *ended;          /* ended this round: marked done once the round has settled */
    int                 cap;            /* rows the arrays below hold */
    float              *logits;         /* [cap · V] */
    hyocr_text_seq     *seqs;           /* [cap] */
    job_state         **running;        /* [cap], admission order */
    int                 n_running;
    int                 V;
    int64_t             swap_space, swap_used;   /* used: every pinned buffer held, spares included */
    GArray             *spares;         /* hyocr_host_block: swap buffers free for the next preemption */
    int                 next_order;
    bool                exclusive;      /* the job running alone has the vision weights off the device */
    job_state          *beside;         /* JOB_VISION: its vision pass runs on the side lane */
    int64_t             n_beside;       /* vision passes run there */
    gint64              beside_t0;      /* when it was queued (µs), */
    double              beside_queue_ms;/* the host's time queueing it */
    int64_t             beside_step0;   /* decode steps run before it */
    bool                settled;        /* nothing holds device memory for jobs */
    bool                in_redo;        /* running the FP16-overflowed jobs in redo_dtype */
    bool                redo_failed;
    hyocr_compute_dtype redo_dtype;
    hyocr_spec_costs    costs;          /* step times by batch size: the speculation fallback's threshold */
    GThreadPool        *reaper;         /* frees admitted jobs' pixels and images (inputs_free_later) */
} hyocr_sched;

static hyocr_model *M(const hyocr_sched *s)
{
    return s->eng->model;
}

static const char *job_name(const job_state *st)
{
    return hyocr_job_name(st->job);
}

static bool own_pool(const hyocr_sched *s)
{
    return s->eng->kv_fixed_blocks <= 0;
}

static int max_batch(const hyocr_sched *s)
{
    return MIN(g_atomic_int_get(&s->max_batch), s->cap);
}

/* ---- figures for other threads ------------------------------------------------------ */

static int count_phase(const hyocr_sched *s, job_phase a, job_phase b)
{
    int n = 0;
    for (guint i = 0; i < s->jobs->len; i++) {
        job_phase ph = ((hyocr_request *)s->jobs->pdata[i])->st.phase;
        n += ph == a || ph == b;
    }
    return n;
}

/* Names a point of the scheduler for HYOCR_PROFILE's host table (backend.h's mark). */
static void mark(hyocr_sched *s, const char *where)
{
    hyocr_backend_mark(s->eng->be, where);
}

static void publish(hyocr_sched *s)
{
    int blocks = 0;
    for (int i = 0; i < s->n_running; i++) blocks += s->running[i]->seq->n_blocks;
    g_atomic_int_set(&s->eng->live_kv_blocks, blocks);
    const hyocr_kv_pool *pool = s->eng->model ? M(s)->kv_pool : NULL;
    g_mutex_lock(&s->lock);
    s->stats.running = s->n_running;
    s->stats.waiting = g_atomic_int_get(&s->n_waiting) + count_phase(s, JOB_SWAPPED, JOB_RECOMPUTE);
    s->stats.kv_blocks_used = blocks;
    s->stats.kv_blocks_total = pool ? hyocr_kv_pool_n_blocks(pool) : 0;
    s->stats.kv_grows = s->eng->model ? M(s)->kv_grows : 0;
    s->stats.vision_beside = s->n_beside;
    g_mutex_unlock(&s->lock);
}

static void note_step(hyocr_sched *s, int rows)
{
    g_mutex_lock(&s->lock);
    s->stats.last_batch = rows;
    s->stats.largest_batch = MAX(s->stats.largest_batch, rows);
    s->stats.decode_steps++;
    g_mutex_unlock(&s->lock);
}

/* ---- the running list -------------------------------------------------------- */

static void running_add(hyocr_sched *s, job_state *st)
{
    int i = s->n_running;
    while (i > 0 && s->running[i - 1]->order > st->order) {
        s->running[i] = s->running[i - 1];
        i--;
    }
    s->running[i] = st;
    s->n_running++;
    st->phase = JOB_RUNNING;
    s->settled = false;
    g_atomic_int_set(&s->eng->busy, 1);
}

static void running_remove(hyocr_sched *s, job_state *st)
{
    for (int i = 0; i < s->n_running; i++) {
        if (s->running[i] != st) continue;
        memmove(&s->running[i], &s->running[i + 1], sizeof(job_state *) * (size_t)(s->n_running - i - 1));
        s->n_running--;
        return;
    }
}

/* Room for max_batch rows (it may have been raised since the last round). */
static bool ensure_rows(hyocr_sched *s, int rows)
{
    if (rows <= s->cap) return true;
    float *logits = g_try_renew(float, s->logits, (size_t)rows * s->V);
    if (!logits) return false;
    s->logits = logits;
    s->seqs = g_renew(hyocr_text_seq, s->seqs, rows);
    s->running = g_renew(job_state *, s->running, rows);
    s->cap = rows;
    return true;
}

/* ---- swap buffers ------------------------------------------------------------------ */

/* Pinned host memory is slow to get (its pages are locked one by one: ~0.1 s for
 * a 2048² page's K/V), so the buffers of resumed jobs are kept for the next
 * preemption until nothing runs. NULL without error when swap_space cannot
 * hold it. */
static void *swap_take(hyocr_sched *s, size_t need, size_t *cap, GError **error)
{
    hyocr_host_block kept;
    if (hyocr_host_blocks_take(s->spares, need, &kept)) {
        *cap = kept.bytes;
        return kept.p;
    }
    while (s->spares->len > 0 && s->swap_used + (int64_t)need > s->swap_space) {
        hyocr_host_block h = g_array_index(s->spares, hyocr_host_block, s->spares->len - 1);
        g_array_set_size(s->spares, s->spares->len - 1);
        hyocr_model_host_free(M(s), h.p, h.bytes);
        s->swap_used -= (int64_t)h.bytes;
    }
    if (s->swap_space <= 0 || s->swap_used + (int64_t)need > s->swap_space) return NULL;
    void *p = hyocr_model_host_alloc(M(s), need, error);
    if (!p) return NULL;
    s->swap_used += (int64_t)need;
    *cap = need;
    return p;
}

static void swap_give(hyocr_sched *s, void *p, size_t cap)
{
    hyocr_host_block h = { p, cap };
    if (p) g_array_append_val(s->spares, h);
}

static void swap_drop_spares(hyocr_sched *s)
{
    for (guint i = 0; i < s->spares->len; i++) {
        hyocr_host_block *h = &g_array_index(s->spares, hyocr_host_block, i);
        hyocr_model_host_free(M(s), h->p, h->bytes);
        s->swap_used -= (int64_t)h->bytes;
    }
    g_array_set_size(s->spares, 0);
}

/* ---- ending a job ----------------------------------------------------------------- */

static void not_waiting(hyocr_sched *s, hyocr_request *job)
{
    if (!job->waiting) return;
    job->waiting = false;
    g_atomic_int_add(&s->n_waiting, -1);
}

static void drop_kv(hyocr_sched *s, job_state *st)
{
    hyocr_model *m = M(s);
    if (!m) return;
    swap_give(s, g_steal_pointer(&st->swap), st->swap_bytes);
    hyocr_model_seq_free(m, st->seq);
    st->seq = NULL;
    hyocr_model_pick_slot_free(m, st->pick_slot);
    st->pick_slot = -1;
}

/* Sends the job's last event and frees all but its result; err (taken) is NULL
 * on success. Waiters learn of it once the round has settled. */
static void end_job(hyocr_sched *s, job_state *st, GError *err)
{
    hyocr_request *job = st->handle;
    not_waiting(s, job);
    running_remove(s, st);
    if (job->redo) {
        st->res->redone = !s->redo_failed;
        st->res->redone_dtype = s->redo_dtype;
    }
    hyocr_job_finish(st, err);
    drop_kv(s, st);
    hyocr_job_release(st);
    st->res->error = err;
    g_ptr_array_remove(s->jobs, job);   /* the reference moves to ended */
    g_ptr_array_add(s->ended, job);
    publish(s);
}

static GError *cancelled_error(const job_state *st)
{
    return g_error_new(HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled after %d tokens"), st->n_gen);
}

static void stop_job(hyocr_sched *s, job_state *st, hyocr_stop_reason stop)
{
    GError *err = NULL;
    st->res->stop_reason = stop;
    hyocr_job_stage_done(st, &st->res->timings.decode_ms, &err);
    if (!err && stop == HYOCR_STOP_CANCELLED) err = cancelled_error(st);
    end_job(s, st, err);
}

/* ---- non-finite results ------------------------------------------------------------- */

/* Whether no value is Inf or NaN (an exponent of all ones). Every lane of a row is read, in
 * lanes the compiler turns into vector ORs: the loop that stopped at the first bad value ran
 * one value at a time, ~80 µs for a row of 120 818 scores, in every page's time to first token. */
static bool all_finite(const float *x, size_t n)
{
    enum { LANES = 16 };
    uint32_t bad[LANES] = { 0 }, any = 0;
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            uint32_t u;
            memcpy(&u, &x[i + k], sizeof u);
            bad[k] |= (~u & 0x7f800000u) == 0;
        }
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        any |= (~u & 0x7f800000u) == 0;
    }
    for (int k = 0; k < LANES; k++) any |= bad[k];
    return !any;
}

static bool can_redo(const hyocr_sched *s)
{
    const hyocr_backend *be = s->eng->be;
    return be->kind == HYOCR_BACKEND_CUDA && be->dtype == HYOCR_COMPUTE_F16;
}

/* FP16 overflow: the job is set aside and rerun in BF16 once the others have
 * drained; in fp32 (or BF16) there is nothing to fall back to, so it is an error. */
static void nonfinite(hyocr_sched *s, job_state *st, const char *where)
{
    if (can_redo(s)) {
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "%s: FP16 overflowed (NaN/Inf in the %s); the job will be "
                         "redone in BF16", job_name(st), where);
        hyocr_job_emit_simple(st, HYOCR_EVENT_RESTART);
        running_remove(s, st);
        drop_kv(s, st);
        hyocr_job_release(st);
        hyocr_job_result_clear(st->res);
        st->phase = JOB_REDO;
        st->prepared = false;
        st->handle->redo = true;
        publish(s);
        return;
    }
    end_job(s, st, g_error_new(HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                               _("%s: the model produced NaN/Inf in the %s on the %s backend (%s); the checkpoint "
                                 "may be corrupt: download it again"),
                               job_name(st), where, s->eng->be->ops->name,
                               s->eng->be->dtype == HYOCR_COMPUTE_F32 ? "fp32" : "bf16"));
}

/* Takes the token of a logits row; false when the job ended with it. */
static bool token_from(hyocr_sched *s, job_state *st, float *logits)
{
    if (!all_finite(logits, (size_t)s->V)) {
        nonfinite(s, st, "logits");
        return false;
    }
    hyocr_stop_reason stop = hyocr_job_take_token(st, logits, 0, NULL);
    if (stop == HYOCR_STOP_NONE) return true;
    stop_job(s, st, stop);
    return false;
}

/* ---- admission: preprocess, vision, prefill ------------------------------------------ */

/* Result fields that need the pixels, so the pixels can go before decoding. */
static void note_inputs(job_state *st)
{
    hyocr_job_result *r = st->res;
    r->prompt_tokens = st->prompt->n;
    r->n_image_tokens = st->prompt->n_image;
    r->image_width = st->img->width;
    r->image_height = st->img->height;
    r->grid_h = st->px->grid_h;
    r->grid_w = st->px->grid_w;
}

/* The merger output checked for NaN/Inf (FP16 overflow). */
static bool vision_check(hyocr_sched *s, job_state *st, bool *finite, GError **error)
{
    size_t n = (size_t)st->n_vision_rows * M(s)->cfg.text.hidden_size;
    return hyocr_model_check_finite(M(s), st->vision, n, finite, error);
}

/* Where other jobs may come to share the pool, a job's image embeddings are kept so a
 * preempted job's prefill can be redone without the tower: on the host for a job
 * admitted alone (its peak stays the single job's plan), on the device for one
 * admitted next to others (counted by budget_blocks) — the host copy, a synchronous
 * download into fresh pageable memory and a scan, cost each batched admission 1–4 ms
 * a 1024² page (H200, session 9). A preempted job's go to the host when its K/V are
 * freed (move: the device copy is freed too). False: they could not be kept (the job
 * then fails on resume, with a message saying so). */
static bool embeds_to_host(hyocr_sched *s, job_state *st, bool move)
{
    hyocr_backend *be = s->eng->be;
    size_t n = (size_t)st->n_vision_rows * M(s)->cfg.text.hidden_size;
    if (!st->vision) return st->host_vision != NULL;
    float *h = g_try_new(float, n);
    g_autoptr(GError) err = NULL;
    if (!h || !be->ops->download_f32(be, st->vision, 0, h, n, &err)) {
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "%s: its image embeddings could not be kept on the host (%s)",
                         job_name(st), err ? err->message : "out of host memory");
        g_free(h);
        return false;
    }
    if (move) {
        be->ops->buf_free(be, st->vision);
        st->vision = NULL;
    }
    g_free(st->host_vision);
    st->host_vision = h;
    st->host_vision_n = n;
    return true;
}

/* A job admitted alone keeps its image embeddings on the host, not the device, so its peak
 * stays the single job's plan: moved there once its first token is out, the synchronous copy
 * (1-4 ms a 1024² page on the H200, session 9) is not in its time to first token — or before
 * its draft's context is made, which the plan does not count beside them. Without the copy it
 * still runs; only a recompute would then fail. */
static void embeds_leave_device(hyocr_sched *s, job_state *st)
{
    embeds_to_host(s, st, true);
    if (!st->vision) return;
    s->eng->be->ops->buf_free(s->eng->be, st->vision);
    st->vision = NULL;
}

static int full_blocks(const hyocr_sched *s, const job_state *st)
{
    int bs = M(s)->kv_block_size;
    return (st->kv_tokens + bs - 1) / bs;
}

/* A job alone: its own pool, sized now that its vision scratch is gone (the two
 * never share the memory). */
static bool pool_for_alone(hyocr_sched *s, job_state *st, GError **error)
{
    hyocr_model *m = M(s);
    if (!own_pool(s)) return true;
    return hyocr_model_kv_init(m, m->kv_block_size, full_blocks(s, st), 0, s->eng->max_model_len, error);
}

/* The job's draft state, its context sized for every token it may hold; NULL (with a notice) when
 * there is no room: the job then decodes plainly. */
static hyocr_spec_job *spec_job_for(hyocr_sched *s, job_state *st)
{
    int k = hyocr_job_spec_tokens(st);
    if (k <= 0) return NULL;
    g_autoptr(GError) err = NULL;
    hyocr_spec_job *j = hyocr_spec_job_new(s->eng->draft, k, st->kv_tokens + k + 1, &err);
    if (!j)
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "%s: no room for speculative decoding (%s); decoding plainly",
                         job_name(st), err->message);
    return j;
}

/* The prompt's tapped rows for the draft's context: a buffer of them, NULL (the job then decodes
 * plainly) when it cannot be had. */
static hyocr_buf *prompt_taps(hyocr_sched *s, job_state *st)
{
    hyocr_backend *be = s->eng->be;
    const hyocr_dflash_config *dc = &s->eng->draft->cfg;
    g_autoptr(GError) err = NULL;
    hyocr_buf *taps = be->ops->alloc(be, HYOCR_BUF_ACT, (size_t)st->prompt->n * dc->n_target_layers * dc->hidden_size,
                                     &err);
    if (!taps) {
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "%s: no room for the prompt's draft context (%s); decoding plainly",
                         job_name(st), err->message);
        hyocr_spec_job_free(s->eng->draft, g_steal_pointer(&st->spec));
    }
    return taps;
}

static bool prefill(hyocr_sched *s, job_state *st, bool alone, GError **error)
{
    hyocr_model *m = M(s);
    hyocr_backend *be = s->eng->be;
    const hyocr_prompt *p = st->prompt;
    if (alone && !pool_for_alone(s, st, error)) return false;
    st->seq = hyocr_model_seq_new(m);
    st->spec = spec_job_for(s, st);
    hyocr_buf *taps = st->spec ? prompt_taps(s, st) : NULL;
    hyocr_text_seq q = {
        .ids = p->ids, .pos = p->pos, .n_new = p->n, .kv = st->seq, .image_embeds = st->vision,
        .n_image_rows = st->n_vision_rows, .image_token_id = p->ids[p->image_start], .taps = taps,
    };
    bool ok = hyocr_text_forward(m, &q, 1, s->logits, hyocr_job_cancelled, st, error);
    if (max_batch(s) <= 1) {
        be->ops->buf_free(be, st->vision);
        st->vision = NULL;
    } else if (ok && alone && st->spec) {
        embeds_leave_device(s, st);
    }
    if (ok && st->spec) {
        g_autoptr(GError) err = NULL;
        if (!hyocr_spec_job_prefill(s->eng->draft, st->spec, taps, p->n, &err)) {
            hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "%s: the draft's context failed (%s); decoding plainly",
                             job_name(st), err->message);
            hyocr_spec_job_free(s->eng->draft, g_steal_pointer(&st->spec));
        }
    }
    if (taps) be->ops->buf_free(be, taps);
    if (!ok || !hyocr_job_stage_done(st, &st->res->timings.prefill_ms, error)) return false;
    hyocr_sampler_accept(st->sampler, p->ids, p->n);
    return true;
}

/* Begin, preprocess (PREPROCESS event) and the memory check: the plan, known
 * before anything is allocated for the job. False when the job ended here. */
static bool prepare(hyocr_sched *s, job_state *st)
{
    GError *err = NULL;
    st->t0 = st->t_stage = g_get_monotonic_time();
    if (!s->eng->model) {
        g_set_error(&err, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("the engine lost its model when reloading it in another precision; open a new engine"));
    } else if (hyocr_job_begin(st, &err) && hyocr_job_preprocess(st, true, &err) &&
               hyocr_job_check_memory(st, &err)) {
        st->prepared = true;
        return true;
    }
    end_job(s, st, err);
    return false;
}

static void admission_begins(hyocr_sched *s, job_state *st)
{
    not_waiting(s, st->handle);
    s->settled = false;
    g_atomic_int_set(&s->eng->busy, 1);
}

/* A started job's pixels and decoded image, freed off the engine thread. */
typedef struct {
    hyocr_pixels *px;
    hyocr_image  *img;
} spent_inputs;

static void inputs_free(gpointer data, gpointer user_data)
{
    spent_inputs *in = data;
    hyocr_pixels_free(in->px);
    hyocr_image_free(in->img);
    g_free(in);
}

/* Freeing a page's pixels and image gives their memory back to the system (munmap, or glibc
 * trimming its heap when they were on top of it), and that was in the page's time to first
 * token: ~1 ms for a 1024² page alone or last of a run (the others' frees found the next
 * page's buffers above theirs), ~0.4 ms for every 2048² page (H200, session 14, call5). */
static void inputs_free_later(hyocr_sched *s, hyocr_pixels *px, hyocr_image *img)
{
    spent_inputs *in = g_new(spent_inputs, 1);
    in->px = px;
    in->img = img;
    if (!s->reaper || !g_thread_pool_push(s->reaper, in, NULL)) inputs_free(in, NULL);
}

/* After the vision pass: prefill, first token. alone: nothing else holds KV blocks. */
static void start_text(hyocr_sched *s, job_state *st, bool alone)
{
    GError *err = NULL;
    bool finite = true;
    mark(s, "vision done");
    bool ok = vision_check(s, st, &finite, &err);
    if (ok) {
        note_inputs(st);
        inputs_free_later(s, st->px, st->img_owned);
        st->px = NULL;
        st->img_owned = NULL;
        st->img = NULL;
    }
    if (ok && !finite) {
        nonfinite(s, st, "vision output");
        return;
    }
    /* Alone only: another job's vision pass would need the tower back. */
    if (ok && alone && st->vision_offload && hyocr_model_vision_unload(M(s))) {
        hyocr_engine_log(s->eng, HYOCR_LOG_INFO, "memory is tight: the vision weights leave the device while "
                         "this page is decoded");
        s->exclusive = true;
    }
    mark(s, "prefill begins");
    if (!ok || !prefill(s, st, alone, &err)) {
        end_job(s, st, err);
        return;
    }
    st->order = s->next_order++;
    running_add(s, st);
    publish(s);
    mark(s, "prefill done");
    hyocr_job_emit_simple(st, HYOCR_EVENT_PREFILL);
    st->batch_size = 1;
    mark(s, "prefill event");
    if (token_from(s, st, s->logits) && alone && st->vision) embeds_leave_device(s, st);
    mark(s, "first token");
}

/* The first queued job after st: a thread decodes its image and makes its
 * pixels while st's vision, prefill and the decode steps keep the device busy. */
static void prefetch_next(hyocr_sched *s, const job_state *st)
{
    for (guint i = 0; i < s->jobs->len; i++) {
        job_state *o = &((hyocr_request *)s->jobs->pdata[i])->st;
        if (o == st || o->phase != JOB_QUEUED || o->prepared) continue;
        hyocr_job_prefetch(o);
        return;
    }
}

/* Host work that waits for nothing on the card, done while it runs the page's vision pass instead
 * of in the gap before the prompt: the next queued page's pixels start on a thread (starting one
 * took ~86 µs, H100, session 34 call1) and the prompt's buffers are taken (eight allocations of
 * ~25 µs), except where the plan has them only once the vision weights are gone (vision_offload).
 * A failure here is left for the prefill to meet and word. */
static void during_vision(hyocr_sched *s, job_state *st)
{
    prefetch_next(s, st);
    if (st->vision_offload) return;
    g_autoptr(GError) err = NULL;
    if (!hyocr_text_prepare(M(s), st->prompt->n, 1, &err)) g_debug("the prompt's buffers wait (%s)", err->message);
}

/* Vision, prefill, first token. */
static void start_job(hyocr_sched *s, job_state *st, bool alone)
{
    GError *err = NULL;
    admission_begins(s, st);
    mark(s, "vision begins");
    bool queued = hyocr_job_vision_queue(st, false, &err);
    if (queued) during_vision(s, st);
    mark(s, "vision queued");
    if (!queued || !hyocr_job_vision_done(st, &err)) {
        end_job(s, st, err);
        return;
    }
    start_text(s, st, alone);
}

/* ---- a vision pass beside the decode steps ----------------------------------------------
 * A job admitted next to running ones has its vision pass queued on the backend's side
 * lane, a second stream: the decode steps go on in the gaps it leaves (a 1024² page's
 * pass is about ten steps of 16 rows) instead of stopping for it. Its prefill then runs
 * between two steps, as before. One pass at a time. Measured on the H200 (sessions 9 and
 * 11, docs/PERFORMANCE.md): level with the plain path at best (+2.9 % at the median of five
 * alternated rounds, inside the runs' spread), hence off by default. */

static bool has_room(const hyocr_sched *s, const job_state *st, bool *ever);

/* Where HYOCR_VISION_BESIDE is unset: off (no gain measured, above). */
#define BESIDE_DEFAULT false

static bool beside_possible(const hyocr_sched *s)
{
    const hyocr_backend *be = s->eng->be;
    hyocr_switch sw = s->eng->tuning.vision_beside;
    bool on = sw == HYOCR_SWITCH_DEFAULT ? BESIDE_DEFAULT : sw == HYOCR_SWITCH_ON;
    return be->ops->side_begin && on && max_batch(s) > 1;
}

/* False: no side lane now (the job starts the plain way). */
static bool vision_beside(hyocr_sched *s, job_state *st)
{
    hyocr_backend *be = s->eng->be;
    g_autoptr(GError) why = NULL;
    if (!beside_possible(s) || !be->ops->side_begin(be, &why)) {
        if (why)
            hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "no side lane for vision passes (%s); they stop the decode "
                             "steps", why->message);
        return false;
    }
    admission_begins(s, st);
    GError *err = NULL;
    s->beside_t0 = g_get_monotonic_time();
    s->beside_step0 = s->stats.decode_steps;
    bool ok = hyocr_job_vision_queue(st, true, &err);
    be->ops->side_end(be);
    s->beside_queue_ms = (double)(g_get_monotonic_time() - s->beside_t0) / 1000.0;
    if (!ok) {
        end_job(s, st, err);
        return true;
    }
    st->phase = JOB_VISION;
    s->beside = st;
    s->n_beside++;
    return true;
}

/* The rest of the side lane's job's admission once its pass is done (waited for when
 * no step runs beside it) and the pool has room for its prefill. False: not yet. */
static bool land_beside(hyocr_sched *s)
{
    hyocr_backend *be = s->eng->be;
    job_state *st = s->beside;
    GError *err = NULL;
    if (!be->ops->side_idle(be, s->n_running == 0, &err) && !err) return false;
    bool ever;
    st->phase = JOB_QUEUED;   /* has_room: with a block left for each running job */
    if (!err && !hyocr_job_cancelled(st) && !has_room(s, st, &ever) && s->n_running > 0) {
        st->phase = JOB_VISION;
        return false;
    }
    s->beside = NULL;
    /* how much the pass ran beside the steps: the side lane's diagnostics */
    g_debug("%s: vision pass queued in %.1f ms, done after %.1f ms, %" G_GINT64_FORMAT " decode steps beside it",
            job_name(st), s->beside_queue_ms, (double)(g_get_monotonic_time() - s->beside_t0) / 1000.0,
            s->stats.decode_steps - s->beside_step0);
    if (!err && hyocr_job_cancelled(st)) err = cancelled_error(st);
    if (err || !hyocr_job_vision_done(st, &err)) {
        end_job(s, st, err);
        return true;
    }
    start_text(s, st, s->n_running == 0 && count_phase(s, JOB_SWAPPED, JOB_RECOMPUTE) == 0);
    return true;
}

/* ---- preemption and resumption -------------------------------------------------------- */

static bool swap_out(hyocr_sched *s, job_state *st)
{
    hyocr_model *m = M(s);
    size_t cap = 0;
    g_autoptr(GError) err = NULL;
    void *host = swap_take(s, hyocr_model_kv_swap_bytes(m, st->seq), &cap, &err);
    if (!host && !err) return false;   /* swap space full: recompute */
    if (!host || !hyocr_model_kv_swap_out(m, st->seq, host, &err)) {
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "swapping out a preempted job failed (%s); it will be "
                         "recomputed", err ? err->message : "?");
        swap_give(s, host, cap);
        return false;
    }
    st->swap = host;
    st->swap_bytes = cap;
    st->phase = JOB_SWAPPED;
    return true;
}

static void preempt(hyocr_sched *s, job_state *st)
{
    running_remove(s, st);
    st->res->n_preempted++;
    int blocks = st->seq->n_blocks;
    if (swap_out(s, st)) {
        hyocr_engine_log(s->eng, HYOCR_LOG_INFO, "KV cache full: %s preempted after %d tokens, %d blocks "
                         "swapped out (%zu bytes)", job_name(st), st->n_gen, blocks,
                         hyocr_model_kv_swap_bytes(M(s), st->seq));
    } else {
        embeds_to_host(s, st, true);
        hyocr_kv_seq_release(M(s)->kv_pool, st->seq);
        st->phase = JOB_RECOMPUTE;
        hyocr_engine_log(s->eng, HYOCR_LOG_INFO, "KV cache full: %s preempted after %d tokens, %d blocks "
                         "freed (recomputed on resume)", job_name(st), st->n_gen, blocks);
    }
    publish(s);
}

/* The prefill of prompt + generated tokens (all but the last, which the next
 * step feeds), over the image embeddings kept on the host (embeds_to_host). */
static bool recompute(hyocr_sched *s, job_state *st, GError **error)
{
    hyocr_model *m = M(s);
    hyocr_backend *be = s->eng->be;
    const hyocr_prompt *p = st->prompt;
    if (!st->host_vision) {
        /* admitted while max_batch was 1 (nothing kept), preempted after it was raised; or the
         * copy to the host failed */
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("%s: preempted without its image embeddings kept; run it again"), job_name(st));
        return false;
    }
    int P = p->n, G = st->n_gen - 1, N = P + G;
    g_autofree int32_t *ids = g_new(int32_t, N);
    g_autofree int32_t *pos = g_new(int32_t, 4 * (size_t)N);
    memcpy(ids, p->ids, sizeof(int32_t) * P);
    memcpy(ids + P, st->res->token_ids->data, sizeof(int32_t) * G);
    /* generated tokens sit at their cache index on every axis, as decode puts them */
    for (int a = 0; a < 4; a++) {
        memcpy(pos + (size_t)a * N, p->pos + (size_t)a * P, sizeof(int32_t) * P);
        for (int i = 0; i < G; i++) pos[(size_t)a * N + P + i] = P + i;
    }
    hyocr_buf *img = be->ops->alloc(be, HYOCR_BUF_ACT, st->host_vision_n, error);
    if (!img) return false;
    hyocr_text_seq q = {
        .ids = ids, .pos = pos, .n_new = N, .kv = st->seq, .image_embeds = img,
        .n_image_rows = st->n_vision_rows, .image_token_id = p->ids[p->image_start],
    };
    bool ok = be->ops->upload_f32(be, img, 0, st->host_vision, st->host_vision_n, error) &&
              hyocr_text_forward(m, &q, 1, s->logits, hyocr_job_cancelled, st, error);
    be->ops->buf_free(be, img);
    return ok;
}

static void resume(hyocr_sched *s, job_state *st)
{
    GError *err = NULL;
    bool ok;
    if (st->phase == JOB_SWAPPED) {
        ok = hyocr_model_kv_swap_in(M(s), st->seq, st->swap, &err);
        swap_give(s, g_steal_pointer(&st->swap), st->swap_bytes);
    } else {
        ok = recompute(s, st, &err);
    }
    if (!ok) {
        end_job(s, st, err);
        return;
    }
    running_add(s, st);
    publish(s);
}

/* ---- room -------------------------------------------------------------------------------- */

/* Blocks a waiting job needs to (re)start and take one more token. */
static int blocks_needed(const hyocr_sched *s, const job_state *st)
{
    const hyocr_kv_pool *pool = M(s)->kv_pool;
    switch (st->phase) {
    case JOB_SWAPPED:   return hyocr_kv_pool_blocks_for(pool, st->seq->n_tokens + 1);
    case JOB_RECOMPUTE: return hyocr_kv_pool_blocks_for(pool, st->prompt->n + st->n_gen);
    default:            return hyocr_kv_pool_blocks_for(pool, st->plan.prompt_tokens + 1);
    }
}

/* A new job also leaves a block per running job, so the next step does not
 * preempt it (vision and prefill wasted) straight away. ever: the pool could
 * hold it alone. */
static bool has_room(const hyocr_sched *s, const job_state *st, bool *ever)
{
    const hyocr_kv_pool *pool = M(s)->kv_pool;
    *ever = true;
    if (!pool) return true;
    int need = blocks_needed(s, st), slack = st->phase == JOB_QUEUED ? s->n_running : 0;
    *ever = need <= hyocr_kv_pool_n_blocks(pool) || own_pool(s);
    return need + slack <= hyocr_kv_pool_n_free(pool);
}

static bool holds_kv(const job_state *st)
{
    return st->phase == JOB_RUNNING || st->phase == JOB_SWAPPED || st->phase == JOB_RECOMPUTE;
}

static bool beside_possible(const hyocr_sched *s);

/* Blocks the pool may take next to the weights, the backend's scratch and the
 * largest vision or prefill (or recompute) scratch of the jobs it serves and
 * cand (a vision pass runs while the pool holds other jobs' K/V; beside the decode
 * steps, next to the text scratch of the latest prefill and the side lane's own),
 * the image embeddings the other jobs keep (embeds_to_host) and the decode step's
 * rows; -1 without a budget. */
static int64_t budget_blocks(hyocr_sched *s, const job_state *cand)
{
    int64_t budget = hyocr_engine_budget(s->eng);
    if (budget <= 0) return -1;
    int64_t scratch = 0, fixed = 0, per_block = 0, kept = 0;
    bool beside = beside_possible(s);
    for (guint i = 0; i <= s->jobs->len; i++) {
        const job_state *st = i < s->jobs->len ? &((hyocr_request *)s->jobs->pdata[i])->st : cand;
        if (!st || (st != cand && !holds_kv(st))) continue;
        const hyocr_memplan *p = &st->plan;
        /* a recompute runs the prefill over the prompt and what was generated */
        int64_t text = p->image_embeds + MAX(p->prefill, st->redo_prefill);
        scratch = MAX(scratch, beside ? p->vision + text : MAX(p->vision, text));
        if (st != cand && st->vision) kept += p->image_embeds;
        fixed = p->weights + p->backend + p->pick + (beside ? HYOCR_MEMPLAN_CUDA_SIDE : 0);   /* the pick slots stay while jobs run */
        per_block = p->kv_per_block;
    }
    const hyocr_text_config *t = &M(s)->cfg.text;
    scratch += (int64_t)max_batch(s) * ((int64_t)t->vocab_size * 4 + (int64_t)t->hidden_size * 8);
    return per_block > 0 ? MAX(budget - fixed - scratch - kept, 0) / per_block : -1;
}

/* Blocks the pool should have for cand: what every job it serves and cand can
 * ever hold, and what the queued jobs admitted right after cand (up to
 * max_batch) will: each growth copies the whole pool and frees the old one
 * (a device-wide wait), so a burst of submissions grows it once, not once a
 * job. A queued job not yet preprocessed counts as cand's size. */
static int64_t pool_target(hyocr_sched *s, job_state *cand)
{
    int64_t want = full_blocks(s, cand);
    int after = max_batch(s) - s->n_running - 1;
    for (guint i = 0; i < s->jobs->len; i++) {
        hyocr_request *job = s->jobs->pdata[i];
        const job_state *st = &job->st;
        if (holds_kv(st)) {
            want += full_blocks(s, st);
        } else if (st != cand && after > 0 && st->phase == JOB_QUEUED && job->redo == s->in_redo) {
            want += st->prepared ? full_blocks(s, st) : full_blocks(s, cand);
            after--;
        }
    }
    return want;
}

/* Whether cand may start next to the running jobs: its vision pass and
 * prefill must fit next to the pool as it is; then the pool grows towards
 * pool_target, by half at least (jobs that arrive one by one, as a server's
 * do, then cost a few copies rather than one each), while the budget has room
 * for the old and the new storage at once (the copy). */
static bool make_way(hyocr_sched *s, job_state *cand)
{
    hyocr_model *m = M(s);
    int64_t avail = budget_blocks(s, cand);
    int have = m->kv_pool ? hyocr_kv_pool_n_blocks(m->kv_pool) : 0;
    if (avail >= 0 && have > avail) return false;
    if (!own_pool(s)) return true;
    int64_t want = pool_target(s, cand);
    if (want > have) want = MAX(want, have + have / 2);
    if (avail >= 0) want = MIN(want, avail - have);
    want = MIN(want, G_MAXINT / 2);
    if (want <= have) return true;
    g_autoptr(GError) err = NULL;
    if (!hyocr_model_kv_grow(m, (int)want, &err))
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "the KV cache could not grow for another job (%s); the jobs "
                         "share what it has", err->message);
    publish(s);
    return true;
}

/* ---- admission ------------------------------------------------------------------------- */

static void settle(hyocr_sched *s);

/* Preempted jobs first (oldest admission first), then the queue in order. While
 * FP16-overflowed jobs wait for their rerun, nothing new is admitted; during
 * the rerun, only they are. */
static job_state *next_waiting(hyocr_sched *s)
{
    job_state *best = NULL;
    bool redo_waits = false;
    for (guint i = 0; i < s->jobs->len; i++) {
        job_state *st = &((hyocr_request *)s->jobs->pdata[i])->st;
        redo_waits |= st->phase == JOB_REDO;
        if ((st->phase == JOB_SWAPPED || st->phase == JOB_RECOMPUTE) && (!best || st->order < best->order))
            best = st;
    }
    if (best || redo_waits) return best;
    for (guint i = 0; i < s->jobs->len; i++) {
        hyocr_request *job = s->jobs->pdata[i];
        if (job->st.phase == JOB_QUEUED && job->redo == s->in_redo) return &job->st;
    }
    return NULL;
}

static GError *pool_too_small(const hyocr_sched *s, const job_state *st)
{
    const hyocr_kv_pool *pool = M(s)->kv_pool;
    return g_error_new(HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                       _("%s: the KV cache of %d blocks × %d tokens cannot hold this job's %d blocks even alone; "
                         "it needs a larger pool or fewer new tokens"),
                       job_name(st), hyocr_kv_pool_n_blocks(pool), hyocr_kv_pool_block_size(pool),
                       blocks_needed(s, st));
}

/* A queued job: false when it must wait for room (the queue waits with it). */
static bool admit_queued(hyocr_sched *s, job_state *st)
{
    /* a job that ended at its first token leaves its pool behind: give it back
     * before the next job's vision pass, which would have it alone */
    settle(s);
    mark(s, "admit: settled");
    if (!st->prepared && !prepare(s, st)) return true;
    mark(s, "admit: prepared");
    bool alone = s->n_running == 0 && count_phase(s, JOB_SWAPPED, JOB_RECOMPUTE) == 0;
    bool ever = true;
    if (!alone && !make_way(s, st)) return false;
    if (!has_room(s, st, &ever)) {
        if (ever && s->n_running > 0) return false;   /* wait for blocks to come free */
        end_job(s, st, pool_too_small(s, st));
        return true;
    }
    mark(s, "admit: room");
    if (!alone && vision_beside(s, st)) prefetch_next(s, st);
    else start_job(s, st, alone);   /* its next page's pixels start during its vision pass */
    return true;
}

static bool admit_preempted(hyocr_sched *s, job_state *st)
{
    bool ever;
    if (!has_room(s, st, &ever)) {
        if (ever && s->n_running > 0) return false;
        end_job(s, st, pool_too_small(s, st));
        return true;
    }
    resume(s, st);
    return true;
}

static void take_arrived(hyocr_sched *s);

static void admit(hyocr_sched *s)
{
    job_state *st;
    if (s->beside && !land_beside(s)) return;
    while (s->n_running < max_batch(s) && !s->beside && !s->exclusive && (take_arrived(s), st = next_waiting(s))) {
        if (hyocr_job_cancelled(st)) {
            end_job(s, st, cancelled_error(st));
            continue;
        }
        bool went = st->phase == JOB_QUEUED ? admit_queued(s, st) : admit_preempted(s, st);
        if (!went) return;
    }
}

/* Jobs cancelled while they wait (queued, preempted, set aside for a redo) end
 * now, so what they hold (pixels, swapped K/V) is given back at once. */
static void reap_cancelled(hyocr_sched *s)
{
    for (guint i = 0; i < s->jobs->len;) {
        job_state *st = &((hyocr_request *)s->jobs->pdata[i])->st;
        /* the side lane's job ends when it lands: its pass still writes its buffers */
        if (st->phase != JOB_RUNNING && st->phase != JOB_VISION && hyocr_job_cancelled(st)) {
            end_job(s, st, cancelled_error(st));
            continue;
        }
        i++;
    }
}

/* ---- decode steps ------------------------------------------------------------------------ */

/* Drafts the job's next round would verify: none above speculative_max_batch jobs, none until
 * the engine has measured plain steps at this batch size (the fallback's yardstick), none while
 * its fallback keeps it plain, and no
 * more than it may still generate (max_new_tokens) or hold (max_model_len). */
static int drafts_wanted(const hyocr_sched *s, job_state *st)
{
    int max_batch = s->eng->params.speculative_max_batch > 0 ? s->eng->params.speculative_max_batch : 1;
    if (!st->spec || s->n_running > max_batch || !hyocr_spec_costs_plain_known(&s->costs, s->n_running) ||
        !hyocr_spec_policy_speculate(&st->spec->policy))
        return 0;
    int left_new = st->job->max_new_tokens - st->n_gen - 1;
    int left_len = s->eng->max_model_len - st->prompt->n - st->n_gen;
    return MAX(0, MIN(st->spec->k, MIN(left_new, left_len)));
}

/* Room for every running job's rows (one, or a round's block), preempting the latest
 * admitted while a reservation fails; a round that does not fit becomes a plain step first.
 * A job alone in a pool too small for it fails. */
static void make_room(hyocr_sched *s)
{
    hyocr_kv_pool *pool = M(s)->kv_pool;
    for (int i = 0; i < s->n_running;) {
        job_state *st = s->running[i];
        GError *err = NULL;
        if (hyocr_kv_seq_reserve(pool, st->seq, 1 + st->n_drafts, &err)) {
            i++;
            continue;
        }
        if (st->n_drafts > 0) {
            g_clear_error(&err);
            st->n_drafts = 0;
            continue;
        }
        if (s->n_running == 1) {
            g_prefix_error(&err, "%s: ", job_name(st));
            end_job(s, st, err);
            continue;
        }
        g_clear_error(&err);
        preempt(s, s->running[s->n_running - 1]);
    }
}

static void fail_running(hyocr_sched *s, const GError *err)
{
    while (s->n_running > 0) end_job(s, s->running[0], g_error_copy(err));
}

/* The job's penalty set where the backend picks: its prompt and every token
 * so far (made again when host-chosen steps or a round left it behind). */
static bool sync_slot(hyocr_sched *s, job_state *st)
{
    if (st->pick_slot >= 0 && st->pick_synced == st->n_gen) return true;
    hyocr_model *m = M(s);
    int P = st->prompt->n, n = P + st->n_gen;
    g_autofree int32_t *ids = g_new(int32_t, n);
    memcpy(ids, st->prompt->ids, sizeof(int32_t) * P);
    memcpy(ids + P, st->res->token_ids->data, sizeof(int32_t) * st->n_gen);
    g_autoptr(GError) err = NULL;
    if (st->pick_slot >= 0 && !hyocr_model_pick_slot_set(m, st->pick_slot, ids, n, &err)) {
        g_debug("a token-choice slot could not be set again (%s)", err->message);
        g_clear_error(&err);
        hyocr_model_pick_slot_free(m, st->pick_slot);
        st->pick_slot = -1;
    }
    if (st->pick_slot < 0) st->pick_slot = hyocr_model_pick_slot_new(m, ids, n, &err);
    st->pick_synced = st->n_gen;
    if (st->pick_slot < 0) g_debug("no token-choice slot (%s); choosing on the host", err->message);
    return st->pick_slot >= 0;
}

/* Whether the backend computes the log-probabilities jobs ask for beside its choice
 * (HYOCR_PICK_LOGPROBS=0 forces the host path). */
static bool pick_logprobs_on(const hyocr_sched *s)
{
    return s->eng->be->ops->pick_logprobs && s->eng->tuning.pick_logprobs != HYOCR_SWITCH_OFF;
}

/* The backend chooses the tokens (greedy or drawn; only ids, and the log-probabilities
 * asked for, then come back) unless a running job wants the logits, or wants
 * log-probabilities the backend does not compute or beside a job that speculates (a round
 * gives none): then the host samplers do, for the whole step. */
static bool pick_path(hyocr_sched *s)
{
    const hyocr_backend_ops *ops = s->eng->be->ops;
    bool logprobs = false, spec = false;
    if (!ops->pick) return false;
    for (int i = 0; i < s->n_running; i++) {
        const job_state *st = s->running[i];
        if (st->job->on_logits) return false;
        logprobs |= st->job->logprobs;
        spec |= st->spec != NULL;
    }
    if (logprobs && (spec || !pick_logprobs_on(s))) return false;
    for (int i = 0; i < s->n_running; i++)
        if (!sync_slot(s, s->running[i])) return false;
    return true;
}

/* A token the device chose for the job (with its log-probabilities, where asked); false when
 * the job ended with it. */
static bool take_picked(hyocr_sched *s, job_state *st, int32_t id, const hyocr_token_logprobs *lp)
{
    hyocr_stop_reason stop = hyocr_job_take_token(st, NULL, id, lp);
    if (stop == HYOCR_STOP_NONE) return true;
    stop_job(s, st, stop);
    return false;
}

static bool forward_pick(hyocr_sched *s, job_state **step, int n, GError **error)
{
    g_autofree hyocr_pick *picks = g_new(hyocr_pick, n);
    g_autofree int32_t *next = g_new(int32_t, n);
    g_autofree bool *nf = g_new0(bool, n);
    g_autofree hyocr_token_logprobs *lps = NULL;
    for (int i = 0; i < n; i++) {
        job_state *st = step[i];
        picks[i] = (hyocr_pick){ .slot = st->pick_slot, .penalty = st->res->repetition_penalty,
                                 .logprobs = st->job->logprobs, .top_logprobs = st->job->top_logprobs };
        if (st->job->logprobs && !lps) lps = g_new(hyocr_token_logprobs, n);
        if (hyocr_sampler_is_greedy(st->sampler)) continue;
        const hyocr_job_params *job = st->job;
        picks[i].draw = (hyocr_pick_draw){ .temperature = job->temperature, .top_k = job->top_k,
                                           .top_p = job->top_p, .u = hyocr_sampler_next_uniform(st->sampler) };
    }
    if (!hyocr_text_decode(M(s), s->seqs, n, picks, next, nf, lps, NULL, error)) return false;
    publish(s);
    mark(s, "step: picked");
    for (int i = 0; i < n; i++) {
        job_state *st = step[i];
        st->pick_synced++;   /* the chosen token joined the slot's set */
        if (nf[i]) nonfinite(s, st, "logits");
        else take_picked(s, st, next[i], picks[i].logprobs ? &lps[i] : NULL);
    }
    return true;
}

/* The stand-in's drafts for a round of the job (tests and benchmarks). */
static const int32_t *standin_drafts(hyocr_sched *s, job_state *st, int32_t *buf)
{
    const hyocr_spec_standin *si = s->eng->standin;
    if (!si) return NULL;
    hyocr_spec_standin_drafts(si, (const int32_t *)st->res->token_ids->data, st->n_gen, st->spec->rounds,
                              s->V, buf, st->n_drafts);
    return buf;
}

/* The tokens a round (or a plain step) committed for the job, in order, until one ends it. */
static void take_round(hyocr_sched *s, job_state *st, const hyocr_spec_seq *q, int batch)
{
    if (q->nonfinite) {
        nonfinite(s, st, "logits");
        return;
    }
    if (q->n_drafts == 0) st->pick_synced++;   /* a plain row's choice joined the slot's set */
    else {
        hyocr_spec_policy_round(&st->spec->policy, q->n_out, hyocr_spec_costs_threshold(&s->costs, batch));
        st->res->speculative_rounds = st->spec->rounds;
        st->res->speculative_tokens = st->spec->round_tokens;
        st->res->speculative_fallbacks = st->spec->policy.fallbacks;
        /* the rows after the first drew with the u of the tokens they stood for */
        if (!hyocr_sampler_is_greedy(st->sampler)) hyocr_sampler_skip_draws(st->sampler, (uint64_t)q->n_out - 1);
    }
    for (int i = 0; i < q->n_out; i++)
        if (!take_picked(s, st, q->out[i], NULL)) return;
}

/* One step where some jobs speculate (speculate.c): each brings its round's block, or its one
 * row; the jobs with draft state keep the tapped rows the draft's context needs. */
static bool forward_spec(hyocr_sched *s, job_state **step, int n, GError **error)
{
    g_autofree hyocr_spec_seq *q = g_new0(hyocr_spec_seq, n);
    g_autofree int32_t *given = g_new(int32_t, (size_t)n * HYOCR_DFLASH_MAX_BLOCK);
    for (int i = 0; i < n; i++) {
        job_state *st = step[i];
        q[i] = (hyocr_spec_seq){ .kv = st->seq, .job = st->spec, .bonus = st->next_id, .n_drafts = st->n_drafts };
        if (st->n_drafts) q[i].drafts = standin_drafts(s, st, given + (size_t)i * HYOCR_DFLASH_MAX_BLOCK);
        q[i].no_draft = s->eng->standin_no_draft;
        q[i].pick = (hyocr_pick){ .slot = st->pick_slot, .penalty = st->res->repetition_penalty };
        if (hyocr_sampler_is_greedy(st->sampler)) continue;
        const hyocr_job_params *job = st->job;
        q[i].pick.seed = job->seed;
        q[i].pick.n_draw = hyocr_sampler_draw_index(st->sampler);
        q[i].pick.draw = (hyocr_pick_draw){ .temperature = job->temperature, .top_k = job->top_k,
                                            .top_p = job->top_p, .u = hyocr_sampler_next_uniform(st->sampler) };
    }
    if (!hyocr_spec_step(M(s), s->eng->draft, q, n, error)) return false;
    publish(s);
    for (int i = 0; i < n; i++) take_round(s, step[i], &q[i], n);
    return true;
}

static bool forward_logits(hyocr_sched *s, job_state **step, int n, GError **error)
{
    for (int i = 0; i < n; i++) s->seqs[i].taps = step[i]->spec ? step[i]->spec->taps : NULL;
    if (!hyocr_text_forward(M(s), s->seqs, n, s->logits, NULL, NULL, error)) return false;
    publish(s);
    for (int i = 0; i < n; i++) {
        job_state *st = step[i];
        g_autoptr(GError) err = NULL;
        if (st->spec && !hyocr_spec_job_keep_row(s->eng->draft, st->spec, &err)) {
            hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "%s: the draft's context failed (%s); decoding plainly",
                             job_name(st), err->message);
            hyocr_spec_job_free(s->eng->draft, g_steal_pointer(&st->spec));
        }
        token_from(s, st, s->logits + (size_t)i * s->V);
    }
    return true;
}

static void decode_step(hyocr_sched *s)
{
    bool pick = pick_path(s);
    for (int i = 0; i < s->n_running; i++) s->running[i]->n_drafts = pick ? drafts_wanted(s, s->running[i]) : 0;
    make_room(s);
    int n = s->n_running, rounds = 0;
    bool any_spec = false;
    if (n <= 0) return;
    for (int i = 0; i < n; i++) {
        job_state *st = s->running[i];
        st->batch_size = n;
        s->seqs[i] = (hyocr_text_seq){ .ids = &st->next_id, .n_new = 1, .kv = st->seq };
        rounds += st->n_drafts > 0;
        any_spec |= st->spec != NULL;
    }
    note_step(s, n);
    /* ending a job reorders the running list, so the step works on a copy */
    g_autofree job_state **step = g_memdup2(s->running, sizeof(job_state *) * (size_t)n);
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    bool ok = !pick ? forward_logits(s, step, n, &err)
              : any_spec ? forward_spec(s, step, n, &err) : forward_pick(s, step, n, &err);
    /* steps where every job or none ran a round measure what a round costs */
    if (ok && (rounds == 0 || rounds == n))
        hyocr_spec_costs_note(&s->costs, n, rounds > 0, (double)(g_get_monotonic_time() - t0) / 1000.0);
    if (!ok) fail_running(s, err);
}

/* ---- the FP16 → BF16 redo ------------------------------------------------------------- */

static bool any_phase(const hyocr_sched *s, job_phase ph)
{
    return count_phase(s, ph, ph) > 0;
}

/* The overflowed jobs go back to the queue (ahead of nothing: only they are
 * admitted during the redo) once the engine runs in BF16; fp32 on the CPU on a
 * card without BF16. */
static void redo_begin(hyocr_sched *s)
{
    hyocr_engine *eng = s->eng;
    int k = count_phase(s, JOB_REDO, JOB_REDO);
    hyocr_engine_log(eng, HYOCR_LOG_WARNING, "redoing %d job(s) in BF16 after an FP16 overflow", k);
    swap_drop_spares(s);
    GError *err = NULL;
    hyocr_compute_dtype dt = HYOCR_COMPUTE_BF16;
    bool ok = hyocr_engine_reload(eng, dt, &err);
    if (!ok && g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_BACKEND)) {
        /* pre-Ampere cards have no BF16: fp32 on the CPU is slow but sound */
        hyocr_engine_log(eng, HYOCR_LOG_WARNING, "BF16 is not available (%s); redoing on the CPU in fp32",
                         err->message);
        g_clear_error(&err);
        dt = HYOCR_COMPUTE_F32;
        ok = hyocr_engine_reload(eng, dt, &err);
    }
    s->in_redo = true;
    s->redo_failed = !ok;
    s->redo_dtype = dt;
    for (guint i = 0; i < s->jobs->len;) {
        job_state *st = &((hyocr_request *)s->jobs->pdata[i])->st;
        if (st->phase != JOB_REDO) {
            i++;
            continue;
        }
        st->phase = JOB_QUEUED;
        if (!ok) {
            end_job(s, st, g_error_copy(err));
            continue;
        }
        i++;
    }
    g_clear_error(&err);
}

static void redo_end(hyocr_sched *s)
{
    g_autoptr(GError) err = NULL;
    swap_drop_spares(s);
    if (!hyocr_engine_reload(s->eng, HYOCR_COMPUTE_F16, &err))
        hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "going back to FP16 failed: %s", err->message);
    s->in_redo = false;
}

/* Between rounds, with nothing running: start or finish a redo. */
static void redo_turn(hyocr_sched *s)
{
    if (s->n_running > 0 || any_phase(s, JOB_SWAPPED) || any_phase(s, JOB_RECOMPUTE)) return;
    if (!s->in_redo && any_phase(s, JOB_REDO)) {
        redo_begin(s);
        return;
    }
    if (s->in_redo) {
        for (guint i = 0; i < s->jobs->len; i++)
            if (((hyocr_request *)s->jobs->pdata[i])->redo) return;
        redo_end(s);
    }
}

/* ---- rounds ---------------------------------------------------------------------------- */

/* Nothing runs or waits to resume: an idle engine holds its weights only, and
 * the next job sizes its own pool. */
static void settle(hyocr_sched *s)
{
    if (s->settled || s->n_running > 0 || s->beside || any_phase(s, JOB_SWAPPED) || any_phase(s, JOB_RECOMPUTE))
        return;
    hyocr_model *m = M(s);
    if (m) {
        swap_drop_spares(s);
        g_autoptr(GError) err = NULL;
        if (own_pool(s) && !hyocr_model_kv_init(m, m->kv_block_size, 0, 0, s->eng->max_model_len, &err))
            hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "the KV cache could not be given back: %s", err->message);
        hyocr_model_trim_scratch(m);
        hyocr_dflash_trim_scratch(s->eng->draft);
        /* the pick slots' sets and captured decode graphs go too */
        hyocr_text_decode_release(m);
        /* what the backend keeps for the next job's buffers too, when no job waits */
        if (s->jobs->len == 0 && s->eng->be->ops->release_cached) s->eng->be->ops->release_cached(s->eng->be);
    }
    s->exclusive = false;
    s->settled = true;
    g_atomic_int_set(&s->eng->busy, 0);
    publish(s);
}

/* The jobs that ended this round are done for their waiters, now that the
 * engine is in the state the next call finds. */
static void release_ended(hyocr_sched *s)
{
    for (guint i = 0; i < s->ended->len; i++) {
        hyocr_request *job = s->ended->pdata[i];
        hyocr_job_end_mark_done(&job->end);
        hyocr_request_unref(job);
    }
    g_ptr_array_set_size(s->ended, 0);
}

static void take_job(hyocr_sched *s, hyocr_request *job)
{
    job_state *st = &job->st;
    int gen = st->cancel_gen;
    hyocr_job_state_init(st, s->eng, &job->params, &job->end.res);
    st->handle = job;
    st->cancel_gen = gen;
    st->phase = JOB_QUEUED;
    g_ptr_array_add(s->jobs, job);
}

/* Jobs submitted since the loop took the queue, taken between two admissions: a burst
 * that arrives while the first of it is admitted (a caller submitting pages one by one)
 * is then all in view when the next admission sizes the pool (pool_target), which grows
 * once for it, not once for the jobs taken with the first and again for the rest — a
 * race that had 16 pages peak 1.3 GB higher at times (H200, session 12: each growth
 * holds the old storage and the new at once). */
static void take_queue_locked(hyocr_sched *s)
{
    hyocr_request *job;
    while ((job = g_queue_pop_head(&s->incoming))) take_job(s, job);
}

static void take_arrived(hyocr_sched *s)
{
    g_mutex_lock(&s->lock);
    take_queue_locked(s);
    g_mutex_unlock(&s->lock);
}

/* Waits for work; false when the engine is being freed. */
static bool take_incoming(hyocr_sched *s)
{
    g_mutex_lock(&s->lock);
    while (!s->quit && g_queue_is_empty(&s->incoming) && s->jobs->len == 0) g_cond_wait(&s->cond, &s->lock);
    take_queue_locked(s);
    bool quit = s->quit;
    g_mutex_unlock(&s->lock);
    return !quit;
}

static void cancel_everything(hyocr_sched *s)
{
    if (s->beside) {
        s->eng->be->ops->side_idle(s->eng->be, true, NULL);
        s->beside = NULL;
    }
    while (s->jobs->len > 0) {
        job_state *st = &((hyocr_request *)s->jobs->pdata[0])->st;
        end_job(s, st, g_error_new(HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled: the engine was closed")));
    }
}

static void sched_loop(hyocr_sched *s)
{
    while (take_incoming(s)) {
        if (!ensure_rows(s, g_atomic_int_get(&s->max_batch)))
            hyocr_engine_log(s->eng, HYOCR_LOG_WARNING, "no memory for a decode step of %d rows; keeping %d",
                             g_atomic_int_get(&s->max_batch), s->cap);
        reap_cancelled(s);
        mark(s, "loop: admit");
        admit(s);
        mark(s, "loop: step");
        if (s->n_running > 0) decode_step(s);
        else redo_turn(s);
        mark(s, "loop: settle");
        settle(s);
        release_ended(s);
        mark(s, "loop: released");
    }
    cancel_everything(s);
    settle(s);
    release_ended(s);
}

/* ---- the thread ------------------------------------------------------------------------ */

static bool sched_init_rows(hyocr_sched *s)
{
    s->V = s->eng->model->cfg.text.vocab_size;
    int rows = g_atomic_int_get(&s->max_batch);
    s->cap = 0;
    return ensure_rows(s, rows);
}

static gpointer sched_main(gpointer data)
{
    hyocr_sched *s = data;
    GError *err = NULL;
    bool ok = hyocr_engine_load(s->eng, &err);
    if (ok && !sched_init_rows(s)) {
        g_set_error(&err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of host memory for the logits of %d jobs in a batch; lower max_batch"),
                    g_atomic_int_get(&s->max_batch));
        ok = false;
    }
    g_mutex_lock(&s->lock);
    s->load_state = ok ? 1 : -1;
    s->load_error = err;
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
    if (ok) sched_loop(s);
    if (s->eng->model) swap_drop_spares(s);
    hyocr_engine_unload(s->eng);
    return NULL;
}

static void sched_free(hyocr_sched *s)
{
    if (s->reaper) g_thread_pool_free(s->reaper, FALSE, TRUE);   /* the frees still queued run first */
    g_clear_error(&s->load_error);
    g_queue_clear(&s->incoming);
    g_ptr_array_free(s->jobs, TRUE);
    g_ptr_array_free(s->ended, TRUE);
    if (s->spares) g_array_free(s->spares, TRUE);
    g_free(s->logits);
    g_free(s->seqs);
    g_free(s->running);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->cond);
    g_free(s);
}

bool hyocr_sched_start(hyocr_engine *eng, GError **error)
{
    hyocr_sched *s = g_new0(hyocr_sched, 1);
    s->eng = eng;
    g_mutex_init(&s->lock);
    g_cond_init(&s->cond);
    g_queue_init(&s->incoming);
    s->jobs = g_ptr_array_new();
    s->ended = g_ptr_array_new();
    s->spares = g_array_new(FALSE, FALSE, sizeof(hyocr_host_block));
    s->max_batch = eng->params.max_batch > 0 ? eng->params.max_batch : HYOCR_DEFAULT_MAX_BATCH;
    s->swap_space = eng->params.swap_space;
    s->settled = true;
    /* one thread of its own, kept (exclusive): a shared pool's threads would be made on demand */
    s->reaper = g_thread_pool_new(inputs_free, NULL, 1, TRUE, NULL);
    s->thread = g_thread_try_new("hyocr-engine", sched_main, s, error);
    if (!s->thread) {
        sched_free(s);
        return false;
    }
    g_mutex_lock(&s->lock);
    while (s->load_state == 0) g_cond_wait(&s->cond, &s->lock);
    bool ok = s->load_state > 0;
    g_mutex_unlock(&s->lock);
    if (!ok) {
        g_thread_join(s->thread);
        g_propagate_error(error, g_steal_pointer(&s->load_error));
        sched_free(s);
        return false;
    }
    eng->sched = s;
    return true;
}

void hyocr_sched_stop(hyocr_engine *eng)
{
    hyocr_sched *s = eng->sched;
    if (!s) return;
    g_mutex_lock(&s->lock);
    s->quit = true;
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
    /* enqueue refuses once quit is set, and the thread took (and ended) every job
     * queued before: nothing is left behind */
    g_thread_join(s->thread);
    eng->sched = NULL;
    sched_free(s);
}

/* ---- jobs: the public side ----------------------------------------------------------------- */

static hyocr_request *job_new(const hyocr_job_params *params)
{
    hyocr_request *job = g_new0(hyocr_request, 1);
    job->ref = 1;
    hyocr_job_end_init(&job->end);
    hyocr_job_params_copy(&job->params, &job->own, params);
    if (params->cancellable) g_object_ref(params->cancellable);
    return job;
}

hyocr_request *hyocr_request_ref(hyocr_request *job)
{
    g_return_val_if_fail(job != NULL, NULL);
    g_atomic_int_inc(&job->ref);
    return job;
}

void hyocr_request_unref(hyocr_request *job)
{
    if (!job || !g_atomic_int_dec_and_test(&job->ref)) return;
    hyocr_job_end_clear(&job->end);
    if (job->params.cancellable) g_object_unref(job->params.cancellable);
    hyocr_job_copies_clear(&job->own);
    g_free(job);
}

bool hyocr_request_is_cancelled(const hyocr_request *job)
{
    return g_atomic_int_get(&job->cancel) != 0;
}

void hyocr_request_cancel(hyocr_request *job)
{
    g_return_if_fail(job != NULL);
    g_atomic_int_set(&job->cancel, 1);
}

bool hyocr_request_is_done(hyocr_request *job)
{
    return hyocr_job_end_is_done(&job->end);
}

bool hyocr_request_wait(hyocr_request *job, hyocr_job_result *out, GError **error)
{
    g_return_val_if_fail(job != NULL, false);
    return hyocr_job_end_wait(&job->end, out, error);
}

/* Queues jobs in order; bounded: the queue bound applies. */
static bool enqueue(hyocr_engine *eng, hyocr_request **jobs, int n, bool bounded, GError **error)
{
    hyocr_sched *s = eng->sched;
    int gen = g_atomic_int_get(&eng->cancel_gen);
    g_mutex_lock(&s->lock);
    int max_queue = eng->params.max_queue, waiting = g_atomic_int_get(&s->n_waiting);
    bool ok = false;
    if (s->quit) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("the engine is being closed"));
    } else if (bounded && max_queue > 0 && waiting + n > max_queue) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BUSY,
                    _("the queue is full: %d jobs are waiting (the limit is %d); try again later"), waiting,
                    max_queue);
    } else {
        for (int i = 0; i < n; i++) {
            jobs[i]->st.cancel_gen = gen;
            jobs[i]->waiting = true;
            g_queue_push_tail(&s->incoming, hyocr_request_ref(jobs[i]));
        }
        g_atomic_int_add(&s->n_waiting, n);
        g_cond_signal(&s->cond);
        ok = true;
    }
    g_mutex_unlock(&s->lock);
    return ok;
}

hyocr_request *hyocr_engine_submit(hyocr_engine *eng, const hyocr_job_params *params, GError **error)
{
    g_return_val_if_fail(eng != NULL && params != NULL, NULL);
    hyocr_request *job = job_new(params);
    if (enqueue(eng, &job, 1, true, error)) return job;
    hyocr_request_unref(job);
    return NULL;
}

bool hyocr_engine_submit_many(hyocr_engine *eng, const hyocr_job_params *params, int n, hyocr_request **out,
                              GError **error)
{
    g_return_val_if_fail(eng != NULL && n >= 0 && (n == 0 || (params != NULL && out != NULL)), false);
    for (int i = 0; i < n; i++) out[i] = job_new(&params[i]);
    if (n == 0 || enqueue(eng, out, n, true, error)) return true;
    for (int i = 0; i < n; i++) g_clear_pointer(&out[i], hyocr_request_unref);
    return false;
}

void hyocr_engine_get_stats(hyocr_engine *eng, hyocr_engine_stats *out)
{
    hyocr_sched *s = eng->sched;
    g_mutex_lock(&s->lock);
    *out = s->stats;
    /* submissions the thread has not looked at yet wait too */
    out->waiting = MAX(out->waiting, g_atomic_int_get(&s->n_waiting));
    g_mutex_unlock(&s->lock);
}

void hyocr_engine_set_max_batch(hyocr_engine *eng, int max_batch)
{
    g_atomic_int_set(&eng->sched->max_batch, max_batch > 0 ? max_batch : HYOCR_DEFAULT_MAX_BATCH);
    g_mutex_lock(&eng->sched->lock);
    g_cond_signal(&eng->sched->cond);
    g_mutex_unlock(&eng->sched->lock);
}

/* ---- run and run_batch: submit, then wait ---------------------------------------------------- */

bool hyocr_engine_run_batch(hyocr_engine *eng, const hyocr_job_params *jobs, int n_jobs, hyocr_job_result *results,
                            GError **error)
{
    g_return_val_if_fail(eng != NULL && (n_jobs == 0 || (jobs != NULL && results != NULL)), false);
    if (n_jobs < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("cannot run %d jobs: the job count must not be negative"), n_jobs);
        return false;
    }
    if (n_jobs == 0) return true;
    /* a caller's job count is not trusted to fit */
    hyocr_request **handles = g_try_new0(hyocr_request *, n_jobs);
    if (!handles) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of host memory for the state of %d jobs"), n_jobs);
        return false;
    }
    for (int i = 0; i < n_jobs; i++) handles[i] = job_new(&jobs[i]);
    bool ok = enqueue(eng, handles, n_jobs, false, error);
    for (int i = 0; i < n_jobs; i++) {
        if (ok) hyocr_request_wait(handles[i], &results[i], NULL);
        hyocr_request_unref(handles[i]);
    }
    g_free(handles);
    return ok;
}

bool hyocr_engine_run(hyocr_engine *eng, const hyocr_job_params *job, hyocr_job_result *out, GError **error)
{
    g_return_val_if_fail(eng != NULL && job != NULL, false);
    hyocr_job_result local = { 0 };
    hyocr_job_result *res = out ? out : &local;
    if (!hyocr_engine_run_batch(eng, job, 1, res, error)) return false;
    GError *err = g_steal_pointer(&res->error);
    hyocr_job_result_clear(&local);
    if (!err) return true;
    g_propagate_error(error, err);
    return false;
}

#define WARMUP_SIDE 1024

bool hyocr_engine_warmup(hyocr_engine *eng, GError **error)
{
    g_return_val_if_fail(eng != NULL, false);
    if (eng->be->kind == HYOCR_BACKEND_CPU) return true;
    g_autoptr(hyocr_image) page = hyocr_image_new(WARMUP_SIDE, WARMUP_SIDE);
    if (!page) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("warm-up: out of host memory for a blank %d² page"), WARMUP_SIDE);
        return false;
    }
    memset(page->rgb, 0xff, (size_t)WARMUP_SIDE * WARMUP_SIDE * 3);
    hyocr_job_params jp;
    hyocr_job_params_init(&jp);
    jp.image = page;
    jp.max_new_tokens = 3;   /* the first decode step runs uncaptured, the second is captured */
    jp.ignore_eos = true;
    gint64 t0 = g_get_monotonic_time();
    if (!hyocr_engine_run(eng, &jp, NULL, error)) {
        g_prefix_error(error, _("warm-up: "));
        return false;
    }
    hyocr_engine_log(eng, HYOCR_LOG_INFO, "warm-up: a blank %d² page took %.0f ms", WARMUP_SIDE,
                     (double)(g_get_monotonic_time() - t0) / 1000.0);
    return true;
}
