/* hyocr — the scheduler: continuous batching of many jobs over one KV pool.
 *
 * Jobs wait in a queue; between decode steps the scheduler resumes preempted
 * jobs and admits queued ones while the pool has room for their prompt (their
 * vision + prefill run then), and every running job brings one token to a
 * shared decode step. When a step cannot get a block, the most recently
 * admitted job is preempted: its K/V go to host memory while the swap space
 * lasts, else its blocks are simply freed and its prefill (prompt + generated
 * tokens, with the image embeddings kept on the host) is redone on resume.
 *
 * One job (hyocr_engine_run), max_batch 1, or a memory budget too small for
 * two pools' worth run "per job": one job at a time with a pool sized to it
 * after its vision pass, exactly as the engine always ran a single job. */
#include "engine-internal.h"
#include "error.h"
#include "i18n.h"
#include <math.h>
#include <string.h>

#define DEFAULT_MAX_BATCH 16

typedef struct {
    hyocr_engine   *eng;
    job_state      *st;            /* [n] */
    int             n;
    int             max_batch;
    int64_t         swap_space, swap_used;   /* used: every pinned buffer held, spares included */
    GArray         *spares;                  /* host_block: swap buffers free for the next preemption */
    bool            per_job;       /* one job at a time, the pool sized to it */
    bool            own_pool;      /* a fixed pool made for this run, dropped at its end */
    int             next_order;
    int             V;
    float          *logits;        /* [max_batch · V] */
    hyocr_text_seq *seqs;          /* [max_batch] */
    job_state     **running;       /* [max_batch], admission order */
    int             n_running;
} batch;

static hyocr_model *M(const batch *b)
{
    return b->eng->model;
}

static void publish_kv(batch *b)
{
    int blocks = 0;
    for (int i = 0; i < b->n_running; i++) blocks += b->running[i]->seq->n_blocks;
    g_atomic_int_set(&b->eng->live_kv_blocks, blocks);
}

/* ---- the running list -------------------------------------------------------- */

static void running_add(batch *b, job_state *st)
{
    int i = b->n_running;
    while (i > 0 && b->running[i - 1]->order > st->order) {
        b->running[i] = b->running[i - 1];
        i--;
    }
    b->running[i] = st;
    b->n_running++;
    st->phase = JOB_RUNNING;
}

static void running_remove(batch *b, job_state *st)
{
    for (int i = 0; i < b->n_running; i++) {
        if (b->running[i] != st) continue;
        memmove(&b->running[i], &b->running[i + 1], sizeof(job_state *) * (size_t)(b->n_running - i - 1));
        b->n_running--;
        return;
    }
}

/* ---- swap buffers ------------------------------------------------------------------ */

typedef struct {
    void  *p;
    size_t bytes;
} host_block;

/* Pinned host memory is slow to get (its pages are locked one by one: ~0.1 s for
 * a 2048² page's K/V), so a run keeps the buffers of resumed jobs for the next
 * preemption. NULL without error when swap_space cannot hold it. */
static void *swap_take(batch *b, size_t need, size_t *cap, GError **error)
{
    int best = -1;
    for (guint i = 0; i < b->spares->len; i++) {
        const host_block *h = &g_array_index(b->spares, host_block, i);
        if (h->bytes >= need && (best < 0 || h->bytes < g_array_index(b->spares, host_block, best).bytes))
            best = (int)i;
    }
    if (best >= 0) {
        host_block h = g_array_index(b->spares, host_block, best);
        g_array_remove_index_fast(b->spares, (guint)best);
        *cap = h.bytes;
        return h.p;
    }
    while (b->spares->len > 0 && b->swap_used + (int64_t)need > b->swap_space) {
        host_block h = g_array_index(b->spares, host_block, b->spares->len - 1);
        g_array_set_size(b->spares, b->spares->len - 1);
        hyocr_model_host_free(M(b), h.p, h.bytes);
        b->swap_used -= (int64_t)h.bytes;
    }
    if (b->swap_space <= 0 || b->swap_used + (int64_t)need > b->swap_space) return NULL;
    void *p = hyocr_model_host_alloc(M(b), need, error);
    if (!p) return NULL;
    b->swap_used += (int64_t)need;
    *cap = need;
    return p;
}

static void swap_give(batch *b, void *p, size_t cap)
{
    host_block h = { p, cap };
    if (p) g_array_append_val(b->spares, h);
}

static void swap_drop_spares(batch *b)
{
    for (guint i = 0; b->spares && i < b->spares->len; i++) {
        host_block *h = &g_array_index(b->spares, host_block, i);
        hyocr_model_host_free(M(b), h->p, h->bytes);
        b->swap_used -= (int64_t)h->bytes;
    }
    if (b->spares) g_array_set_size(b->spares, 0);
}

/* ---- ending a job ----------------------------------------------------------------- */

static void drop_kv(batch *b, job_state *st)
{
    hyocr_model *m = M(b);
    swap_give(b, g_steal_pointer(&st->swap), st->swap_bytes);
    hyocr_model_seq_free(m, st->seq);
    st->seq = NULL;
    hyocr_model_pick_slot_free(m, st->pick_slot);
    st->pick_slot = -1;
}

/* Sends the job's last event and frees all but its result; err (taken) is NULL
 * on success. */
static void end_job(batch *b, job_state *st, GError *err)
{
    running_remove(b, st);
    hyocr_job_finish(st, err);
    drop_kv(b, st);
    hyocr_job_release(st);
    st->res->error = err;
    publish_kv(b);
    if (b->per_job) {
        hyocr_model_trim_scratch(M(b));
        /* An idle engine holds its weights only; the next job sizes its own pool. */
        hyocr_model_kv_resize(M(b), 0, NULL);
    }
}

static void stop_job(batch *b, job_state *st, hyocr_stop_reason stop)
{
    GError *err = NULL;
    st->res->stop_reason = stop;
    hyocr_job_stage_done(st, &st->res->timings.decode_ms, &err);
    if (!err && stop == HYOCR_STOP_CANCELLED)
        err = g_error_new(HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled after %d tokens"), st->n_gen);
    end_job(b, st, err);
}

/* ---- non-finite results ------------------------------------------------------------- */

static bool all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

static bool can_redo(const batch *b)
{
    const hyocr_backend *be = b->eng->be;
    return be->kind == HYOCR_BACKEND_CUDA && be->dtype == HYOCR_COMPUTE_F16;
}

/* FP16 overflow: the job is set aside and rerun in BF16 after the others; in
 * fp32 (or BF16) there is nothing to fall back to, so it is an error. */
static void nonfinite(batch *b, job_state *st, const char *where)
{
    const char *name = st->job->image_path ? st->job->image_path : "(decoded image)";
    if (can_redo(b)) {
        hyocr_engine_log(b->eng, HYOCR_LOG_WARNING, "%s: FP16 overflowed (NaN/Inf in the %s); the job will be "
                         "redone in BF16", name, where);
        hyocr_job_emit_simple(st, HYOCR_EVENT_RESTART);
        running_remove(b, st);
        drop_kv(b, st);
        hyocr_job_release(st);
        hyocr_job_result_clear(st->res);
        st->phase = JOB_REDO;
        publish_kv(b);
        return;
    }
    end_job(b, st, g_error_new(HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                               _("%s: the model produced NaN/Inf in the %s on the %s backend (%s); the checkpoint "
                                 "may be corrupt: download it again (hyocr download)"),
                               name, where, b->eng->be->ops->name,
                               b->eng->be->dtype == HYOCR_COMPUTE_F32 ? "fp32" : "bf16"));
}

/* Takes the token of a logits row; false when the job ended with it. */
static bool token_from(batch *b, job_state *st, float *logits)
{
    if (!all_finite(logits, (size_t)b->V)) {
        nonfinite(b, st, "logits");
        return false;
    }
    hyocr_stop_reason stop = hyocr_job_take_token(st, logits, 0);
    if (stop == HYOCR_STOP_NONE) return true;
    stop_job(b, st, stop);
    return false;
}

/* ---- admission: vision + prefill ------------------------------------------------------ */

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

/* The merger output checked for NaN/Inf (FP16 overflow); while batching it is
 * also kept on the host, so a preempted job's prefill can be redone without
 * the tower. */
static bool vision_host_copy(batch *b, job_state *st, bool *finite, GError **error)
{
    hyocr_backend *be = b->eng->be;
    size_t n = (size_t)st->n_vision_rows * M(b)->cfg.text.hidden_size;
    if (b->per_job) return hyocr_model_check_finite(M(b), st->vision, n, finite, error);
    float *h = g_try_new(float, n);
    if (!h) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, "cannot allocate %zu floats of image embeddings", n);
        return false;
    }
    if (!be->ops->download_f32(be, st->vision, 0, h, n, error)) {
        g_free(h);
        return false;
    }
    *finite = all_finite(h, n);
    st->host_vision = h;
    st->host_vision_n = n;
    return true;
}

static bool prefill(batch *b, job_state *st, GError **error)
{
    hyocr_model *m = M(b);
    const hyocr_prompt *p = st->prompt;
    /* Per job, the pool is sized now, once the vision scratch is gone, to what
     * the job can ever hold: the two never share the memory. */
    if (b->per_job && !hyocr_model_kv_resize(m, st->kv_tokens, error)) return false;
    st->seq = hyocr_model_seq_new(m);
    hyocr_text_seq q = {
        .ids = p->ids, .pos = p->pos, .n_new = p->n, .kv = st->seq, .image_embeds = st->vision,
        .n_image_rows = st->n_vision_rows, .image_token_id = p->ids[p->image_start],
    };
    bool ok = hyocr_text_forward(m, &q, 1, b->logits, hyocr_job_cancelled, st, error);
    b->eng->be->ops->buf_free(b->eng->be, st->vision);
    st->vision = NULL;
    if (!ok || !hyocr_job_stage_done(st, &st->res->timings.prefill_ms, error)) return false;
    hyocr_sampler_accept(st->sampler, p->ids, p->n);
    return true;
}

/* Preprocess (again, when the batch planned it), vision, prefill, first token. */
static void start_job(batch *b, job_state *st, bool planned)
{
    GError *err = NULL;
    st->t0 = st->t_stage = g_get_monotonic_time();
    bool finite = true;
    bool ok = (planned || hyocr_job_begin(st, &err)) && hyocr_job_preprocess(st, true, &err) &&
              (planned || hyocr_job_check_memory(st, &err)) && hyocr_job_vision(st, &err) &&
              vision_host_copy(b, st, &finite, &err);
    if (ok) {
        note_inputs(st);
        hyocr_pixels_free(st->px);
        st->px = NULL;
        hyocr_image_free(st->img_owned);
        st->img_owned = NULL;
        st->img = NULL;
    }
    if (ok && !finite) {
        nonfinite(b, st, "vision output");
        return;
    }
    /* One job at a time only: a batch may need the tower for the next job soon. */
    if (ok && st->vision_offload && b->per_job && hyocr_model_vision_unload(M(b)))
        hyocr_engine_log(b->eng, HYOCR_LOG_INFO, "memory is tight: the vision weights leave the device while "
                         "this page is decoded");
    if (!ok || !prefill(b, st, &err)) {
        end_job(b, st, err);
        return;
    }
    st->order = b->next_order++;
    running_add(b, st);
    publish_kv(b);
    hyocr_job_emit_simple(st, HYOCR_EVENT_PREFILL);
    token_from(b, st, b->logits);
}

/* ---- preemption and resumption -------------------------------------------------------- */

static bool swap_out(batch *b, job_state *st)
{
    hyocr_model *m = M(b);
    size_t cap = 0;
    g_autoptr(GError) err = NULL;
    void *host = swap_take(b, hyocr_model_kv_swap_bytes(m, st->seq), &cap, &err);
    if (!host && !err) return false;   /* swap space full: recompute */
    if (!host || !hyocr_model_kv_swap_out(m, st->seq, host, &err)) {
        hyocr_engine_log(b->eng, HYOCR_LOG_WARNING, "swapping out a preempted job failed (%s); it will be "
                         "recomputed", err ? err->message : "?");
        swap_give(b, host, cap);
        return false;
    }
    st->swap = host;
    st->swap_bytes = cap;
    st->phase = JOB_SWAPPED;
    return true;
}

static void preempt(batch *b, job_state *st)
{
    running_remove(b, st);
    st->res->n_preempted++;
    int blocks = st->seq->n_blocks;
    const char *name = st->job->image_path ? st->job->image_path : "(decoded image)";
    if (swap_out(b, st)) {
        hyocr_engine_log(b->eng, HYOCR_LOG_INFO, "KV cache full: %s preempted after %d tokens, %d blocks "
                         "swapped out (%zu bytes)", name, st->n_gen, blocks,
                         hyocr_model_kv_swap_bytes(M(b), st->seq));
    } else {
        hyocr_kv_seq_release(M(b)->kv_pool, st->seq);
        st->phase = JOB_RECOMPUTE;
        hyocr_engine_log(b->eng, HYOCR_LOG_INFO, "KV cache full: %s preempted after %d tokens, %d blocks "
                         "freed (recomputed on resume)", name, st->n_gen, blocks);
    }
    publish_kv(b);
}

/* The prefill of prompt + generated tokens (all but the last, which the next
 * step feeds), over the image embeddings kept on the host. */
static bool recompute(batch *b, job_state *st, GError **error)
{
    hyocr_model *m = M(b);
    hyocr_backend *be = b->eng->be;
    const hyocr_prompt *p = st->prompt;
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
              hyocr_text_forward(m, &q, 1, b->logits, hyocr_job_cancelled, st, error);
    be->ops->buf_free(be, img);
    return ok;
}

static void resume(batch *b, job_state *st)
{
    GError *err = NULL;
    bool ok;
    if (st->phase == JOB_SWAPPED) {
        ok = hyocr_model_kv_swap_in(M(b), st->seq, st->swap, &err);
        swap_give(b, g_steal_pointer(&st->swap), st->swap_bytes);
    } else {
        ok = recompute(b, st, &err);
    }
    if (!ok) {
        end_job(b, st, err);
        return;
    }
    running_add(b, st);
    publish_kv(b);
}

/* Blocks a waiting job needs to (re)start and take one more token. */
static int blocks_needed(const batch *b, const job_state *st)
{
    const hyocr_kv_pool *pool = M(b)->kv_pool;
    switch (st->phase) {
    case JOB_SWAPPED:   return hyocr_kv_pool_blocks_for(pool, st->seq->n_tokens + 1);
    case JOB_RECOMPUTE: return hyocr_kv_pool_blocks_for(pool, st->prompt->n + st->n_gen);
    default:            return hyocr_kv_pool_blocks_for(pool, st->plan.prompt_tokens + 1);
    }
}

/* A new job also leaves a block per running job, so the next step does not
 * preempt it (vision and prefill wasted) straight away. */
static bool has_room(const batch *b, const job_state *st, bool *ever)
{
    const hyocr_kv_pool *pool = M(b)->kv_pool;
    *ever = true;
    if (!pool) return true;   /* per job: sized after the vision pass */
    int need = blocks_needed(b, st), slack = st->phase == JOB_QUEUED ? b->n_running : 0;
    *ever = need <= hyocr_kv_pool_n_blocks(pool);
    return need + slack <= hyocr_kv_pool_n_free(pool);
}

/* Preempted jobs first (oldest admission first), then the queue in order. */
static job_state *next_waiting(batch *b)
{
    job_state *best = NULL;
    for (int i = 0; i < b->n; i++) {
        job_state *st = &b->st[i];
        if ((st->phase == JOB_SWAPPED || st->phase == JOB_RECOMPUTE) && (!best || st->order < best->order))
            best = st;
    }
    if (best) return best;
    for (int i = 0; i < b->n; i++)
        if (b->st[i].phase == JOB_QUEUED) return &b->st[i];
    return NULL;
}

static GError *pool_too_small(const batch *b, const job_state *st)
{
    const hyocr_kv_pool *pool = M(b)->kv_pool;
    return g_error_new(HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                       _("%s: the KV cache of %d blocks × %d tokens cannot hold this job's %d blocks even alone; "
                         "it needs a larger pool or fewer new tokens"),
                       st->job->image_path ? st->job->image_path : "(decoded image)", hyocr_kv_pool_n_blocks(pool),
                       hyocr_kv_pool_block_size(pool), blocks_needed(b, st));
}

/* The queued job after st: a thread decodes its image and makes its pixels
 * while st's vision, prefill and the decode steps keep the GPU busy. */
static void prefetch_next(batch *b, const job_state *st)
{
    for (int i = (int)(st - b->st) + 1; i < b->n; i++) {
        if (b->st[i].phase != JOB_QUEUED) continue;
        hyocr_job_prefetch(&b->st[i]);
        return;
    }
}

static void admit(batch *b)
{
    job_state *st;
    while (b->n_running < b->max_batch && (st = next_waiting(b))) {
        bool ever, queued = st->phase == JOB_QUEUED;
        if (b->per_job && b->n_running > 0) return;
        if (hyocr_job_cancelled(st)) {
            end_job(b, st, g_error_new(HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled after %d tokens"),
                                       st->n_gen));
            continue;
        }
        if (!has_room(b, st, &ever)) {
            if (b->n_running > 0 && ever) return;   /* wait for blocks to come free */
            end_job(b, st, pool_too_small(b, st));
            continue;
        }
        if (queued) prefetch_next(b, st);
        if (queued) start_job(b, st, b->n > 1);
        else resume(b, st);
    }
}

/* ---- decode steps ------------------------------------------------------------------------ */

/* One more token's room for every running job, preempting the latest admitted
 * while a reservation fails. A job alone in a pool too small for it fails. */
static void make_room(batch *b)
{
    hyocr_kv_pool *pool = M(b)->kv_pool;
    for (int i = 0; i < b->n_running;) {
        job_state *st = b->running[i];
        GError *err = NULL;
        if (hyocr_kv_seq_reserve(pool, st->seq, 1, &err)) {
            i++;
            continue;
        }
        if (b->n_running == 1) {
            g_prefix_error(&err, "%s: ", st->job->image_path ? st->job->image_path : "(decoded image)");
            end_job(b, st, err);
            continue;
        }
        g_clear_error(&err);
        preempt(b, b->running[b->n_running - 1]);
    }
}

static void fail_running(batch *b, const GError *err)
{
    while (b->n_running > 0) end_job(b, b->running[0], g_error_copy(err));
}

/* The job's penalty set where the backend picks: its prompt and every token
 * so far (made again when host-chosen steps left it behind). */
static bool sync_slot(batch *b, job_state *st)
{
    if (st->pick_slot >= 0 && st->pick_synced == st->n_gen) return true;
    hyocr_model *m = M(b);
    hyocr_model_pick_slot_free(m, st->pick_slot);
    int P = st->prompt->n, n = P + st->n_gen;
    g_autofree int32_t *ids = g_new(int32_t, n);
    memcpy(ids, st->prompt->ids, sizeof(int32_t) * P);
    memcpy(ids + P, st->res->token_ids->data, sizeof(int32_t) * st->n_gen);
    g_autoptr(GError) err = NULL;
    st->pick_slot = hyocr_model_pick_slot_new(m, ids, n, &err);
    st->pick_synced = st->n_gen;
    if (st->pick_slot < 0) g_debug("no token-choice slot (%s); choosing on the host", err->message);
    return st->pick_slot >= 0;
}

/* The backend chooses the tokens (greedy or drawn; only ids then come back)
 * unless a running job wants the logits: then the host samplers do. */
static bool pick_path(batch *b)
{
    if (!b->eng->be->ops->pick) return false;
    for (int i = 0; i < b->n_running; i++)
        if (b->running[i]->job->on_logits) return false;
    for (int i = 0; i < b->n_running; i++)
        if (!sync_slot(b, b->running[i])) return false;
    return true;
}

static bool forward_pick(batch *b, job_state **step, int n, GError **error)
{
    g_autofree hyocr_pick *picks = g_new(hyocr_pick, n);
    g_autofree int32_t *next = g_new(int32_t, n);
    g_autofree bool *nf = g_new0(bool, n);
    for (int i = 0; i < n; i++) {
        job_state *st = step[i];
        picks[i] = (hyocr_pick){ .slot = st->pick_slot, .penalty = st->res->repetition_penalty };
        if (hyocr_sampler_is_greedy(st->sampler)) continue;
        const hyocr_job_params *job = st->job;
        picks[i].draw = (hyocr_pick_draw){ .temperature = job->temperature, .top_k = job->top_k,
                                           .top_p = job->top_p, .u = hyocr_sampler_next_uniform(st->sampler) };
    }
    if (!hyocr_text_decode(M(b), b->seqs, n, picks, next, nf, NULL, error)) return false;
    publish_kv(b);
    for (int i = 0; i < n; i++) {
        job_state *st = step[i];
        st->pick_synced++;   /* the chosen token joined the slot's set */
        if (nf[i]) {
            nonfinite(b, st, "logits");
            continue;
        }
        hyocr_stop_reason stop = hyocr_job_take_token(st, NULL, next[i]);
        if (stop != HYOCR_STOP_NONE) stop_job(b, st, stop);
    }
    return true;
}

static bool forward_logits(batch *b, job_state **step, int n, GError **error)
{
    if (!hyocr_text_forward(M(b), b->seqs, n, b->logits, NULL, NULL, error)) return false;
    publish_kv(b);
    for (int i = 0; i < n; i++) token_from(b, step[i], b->logits + (size_t)i * b->V);
    return true;
}

static void decode_step(batch *b)
{
    make_room(b);
    int n = b->n_running;
    if (n <= 0) return;
    for (int i = 0; i < n; i++) {
        job_state *st = b->running[i];
        b->seqs[i] = (hyocr_text_seq){ .ids = &st->next_id, .n_new = 1, .kv = st->seq };
    }
    /* ending a job reorders the running list, so the step works on a copy */
    g_autofree job_state **step = g_memdup2(b->running, sizeof(job_state *) * (size_t)n);
    g_autoptr(GError) err = NULL;
    bool ok = pick_path(b) ? forward_pick(b, step, n, &err) : forward_logits(b, step, n, &err);
    if (!ok) fail_running(b, err);
}

static bool any_waiting(const batch *b)
{
    for (int i = 0; i < b->n; i++) {
        job_phase ph = b->st[i].phase;
        if (ph == JOB_QUEUED || ph == JOB_SWAPPED || ph == JOB_RECOMPUTE) return true;
    }
    return false;
}

static void batch_loop(batch *b)
{
    for (;;) {
        admit(b);
        if (b->n_running == 0 && !any_waiting(b)) return;
        decode_step(b);
    }
}

/* ---- planning: every job's plan, and the pool for the run ---------------------------------- */

/* Preprocesses each job once to learn its plan (and refuse what cannot fit
 * even alone, or fails to decode) before anything runs; the inputs are made
 * again when the job starts, so a long queue does not hold its pixels. */
static void plan_jobs(batch *b)
{
    for (int i = 0; i < b->n; i++) {
        job_state *st = &b->st[i];
        GError *err = NULL;
        if (hyocr_job_begin(st, &err) && hyocr_job_preprocess(st, false, &err) &&
            hyocr_job_check_memory(st, &err))
            hyocr_job_drop_inputs(st);
        else
            end_job(b, st, err);
    }
}

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* Blocks the run's pool may take: the budget less weights, backend scratch,
 * the largest vision or prefill (or recompute) scratch and the decode step's
 * rows (a vision pass runs while the pool holds other jobs' K/V); -1 without
 * a budget. */
static int64_t budget_blocks(batch *b)
{
    int64_t budget = hyocr_engine_budget(b->eng);
    if (budget <= 0) return -1;
    int64_t scratch = 0, fixed = 0, per_block = 0;
    for (int i = 0; i < b->n; i++) {
        const hyocr_memplan *p = &b->st[i].plan;
        if (b->st[i].phase == JOB_FINISHED) continue;
        /* a recompute runs the prefill over the prompt and what was generated */
        hyocr_memplan again;
        hyocr_engine_memory_plan(b->eng, p->grid_h, p->grid_w, b->st[i].kv_tokens, 1, &again);
        scratch = MAX(scratch, MAX(p->vision, p->image_embeds + MAX(p->prefill, again.prefill)));
        fixed = p->weights + p->backend + p->pick;   /* the pick slots stay for the run */
        per_block = p->kv_per_block;
    }
    const hyocr_text_config *t = &M(b)->cfg.text;
    scratch += (int64_t)b->max_batch * ((int64_t)t->vocab_size * 4 + (int64_t)t->hidden_size * 8);
    return per_block > 0 ? MAX(budget - fixed - scratch, 0) / per_block : -1;
}

/* Sizes one fixed pool for the run: what the max_batch largest jobs can ever
 * hold, within the budget. A budget that cannot hold the largest job next to
 * another's vision pass runs the jobs one at a time instead. */
static void plan_pool(batch *b)
{
    hyocr_model *m = M(b);
    if (b->n == 1 || b->max_batch == 1) {
        b->per_job = true;
        return;
    }
    if (b->eng->kv_fixed_blocks > 0) return;   /* the engine's own fixed pool, as it is */
    g_autofree int *need = g_new0(int, b->n);
    int k = 0;
    for (int i = 0; i < b->n; i++)
        if (b->st[i].phase != JOB_FINISHED)
            need[k++] = (b->st[i].kv_tokens + m->kv_block_size - 1) / m->kv_block_size;
    if (k == 0) return;
    qsort(need, (size_t)k, sizeof(int), cmp_desc);
    int64_t want = 0;
    for (int i = 0; i < MIN(k, b->max_batch); i++) want += need[i];
    int64_t avail = budget_blocks(b);
    if (avail >= 0 && avail < need[0]) {
        hyocr_engine_log(b->eng, HYOCR_LOG_INFO, "memory budget leaves room for one job's KV cache only; "
                         "running the jobs one at a time");
        b->per_job = true;
        return;
    }
    if (avail >= 0) want = MIN(want, avail);
    g_autoptr(GError) err = NULL;
    if (!hyocr_model_kv_init(m, m->kv_block_size, (int)MIN(want, G_MAXINT / 2), 0, b->eng->max_model_len, &err)) {
        hyocr_engine_log(b->eng, HYOCR_LOG_WARNING, "KV cache for the batch: %s; running the jobs one at a time",
                         err->message);
        hyocr_model_kv_init(m, m->kv_block_size, 0, 0, b->eng->max_model_len, NULL);
        b->per_job = true;
        return;
    }
    b->own_pool = true;
}

/* ---- one run ------------------------------------------------------------------------------- */

static bool batch_init(batch *b, hyocr_engine *eng, const hyocr_job_params *jobs, int n, hyocr_job_result *results)
{
    memset(b, 0, sizeof *b);
    b->eng = eng;
    b->n = n;
    b->max_batch = MIN(eng->params.max_batch > 0 ? eng->params.max_batch : DEFAULT_MAX_BATCH, n);
    b->swap_space = eng->params.swap_space;
    b->spares = g_array_new(FALSE, FALSE, sizeof(host_block));
    b->V = eng->model->cfg.text.vocab_size;
    b->logits = g_try_new(float, (size_t)b->max_batch * b->V);
    b->seqs = g_new0(hyocr_text_seq, b->max_batch);
    b->running = g_new0(job_state *, b->max_batch);
    b->st = g_try_new0(job_state, n);   /* a caller's job count is not trusted to fit */
    for (int i = 0; b->st && i < n; i++) hyocr_job_state_init(&b->st[i], eng, &jobs[i], &results[i]);
    return b->logits != NULL && b->st != NULL;
}

static void batch_clear(batch *b)
{
    swap_drop_spares(b);
    if (b->spares) g_array_free(b->spares, TRUE);
    for (int i = 0; b->st && i < b->n; i++)
        if (b->st[i].prefetch) hyocr_job_drop_inputs(&b->st[i]);
    if (b->own_pool)
        hyocr_model_kv_init(M(b), M(b)->kv_block_size, 0, 0, b->eng->max_model_len, NULL);
    hyocr_model_trim_scratch(M(b));
    /* An idle engine holds its weights only: the pick slots' sets and captured
     * decode graphs go too. */
    hyocr_text_decode_release(M(b));
    g_atomic_int_set(&b->eng->live_kv_blocks, 0);
    g_free(b->logits);
    g_free(b->seqs);
    g_free(b->running);
    g_free(b->st);
}

/* Runs the jobs; redo[i] says job i overflowed FP16 and was set aside. */
static bool run_jobs(hyocr_engine *eng, const hyocr_job_params *jobs, int n, hyocr_job_result *results, bool *redo,
                     GError **error)
{
    batch b;
    if (!batch_init(&b, eng, jobs, n, results)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, "cannot allocate the state of %d jobs", n);
        batch_clear(&b);
        return false;
    }
    if (n > 1) plan_jobs(&b);
    plan_pool(&b);
    batch_loop(&b);
    for (int i = 0; i < n; i++) redo[i] = b.st[i].phase == JOB_REDO;
    batch_clear(&b);
    return true;
}

/* FP16 overflowed for some jobs: rerun them in BF16, then go back to FP16. */
static void redo_in_bf16(hyocr_engine *eng, const hyocr_job_params *jobs, int n, hyocr_job_result *results,
                         const bool *redo)
{
    g_autofree hyocr_job_params *sub = g_new(hyocr_job_params, n);
    g_autofree hyocr_job_result *sub_res = g_new0(hyocr_job_result, n);
    g_autofree int *idx = g_new(int, n);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (redo[i]) {
            idx[k] = i;
            sub[k++] = jobs[i];
        }
    hyocr_engine_log(eng, HYOCR_LOG_WARNING, "redoing %d job(s) in BF16 after an FP16 overflow", k);
    GError *err = NULL;
    g_autofree bool *again = g_new0(bool, k);
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
    ok = ok && run_jobs(eng, sub, k, sub_res, again, &err);
    for (int j = 0; j < k; j++) {
        hyocr_job_result *r = &results[idx[j]];
        if (ok) *r = sub_res[j];
        else r->error = g_error_copy(err);
        r->redone = ok;
        r->redone_dtype = dt;
    }
    g_clear_error(&err);
    if (!hyocr_engine_reload(eng, HYOCR_COMPUTE_F16, &err)) {
        hyocr_engine_log(eng, HYOCR_LOG_WARNING, "going back to FP16 failed: %s", err->message);
        g_clear_error(&err);
    }
}

static bool engine_take(hyocr_engine *eng, GError **error)
{
    if (!g_atomic_int_compare_and_exchange(&eng->busy, 0, 1)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("the engine is already running a job; wait for it or use another engine"));
        return false;
    }
    if (!eng->model) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("the engine lost its model when reloading it in another precision; open a new engine"));
        g_atomic_int_set(&eng->busy, 0);
        return false;
    }
    g_atomic_int_set(&eng->cancel, 0);
    return true;
}

bool hyocr_engine_run_batch(hyocr_engine *eng, const hyocr_job_params *jobs, int n_jobs, hyocr_job_result *results,
                            GError **error)
{
    g_return_val_if_fail(eng != NULL && (n_jobs == 0 || (jobs != NULL && results != NULL)), false);
    if (n_jobs < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, "negative job count %d", n_jobs);
        return false;
    }
    if (n_jobs == 0) return true;
    if (!engine_take(eng, error)) return false;
    g_autofree bool *redo = g_new0(bool, n_jobs);
    bool ok = run_jobs(eng, jobs, n_jobs, results, redo, error);
    bool any = false;
    for (int i = 0; ok && i < n_jobs; i++) any |= redo[i];
    if (any) redo_in_bf16(eng, jobs, n_jobs, results, redo);
    g_atomic_int_set(&eng->busy, 0);
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
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, "warm-up: cannot allocate a %d² page", WARMUP_SIDE);
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
        g_prefix_error(error, "warm-up: ");
        return false;
    }
    hyocr_engine_log(eng, HYOCR_LOG_INFO, "warm-up: a blank %d² page took %.0f ms", WARMUP_SIDE,
                     (double)(g_get_monotonic_time() - t0) / 1000.0);
    return true;
}
