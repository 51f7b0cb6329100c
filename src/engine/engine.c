/* hyocr — engine: owns checkpoint, tokenizer, backend and model, and runs the
 * stages of one job (preprocess → vision; token bookkeeping and the result);
 * batch.c schedules the prefill and decode of one or many jobs. */
#include "engine-internal.h"
#include "error.h"
#include "stop.h"
#include "i18n.h"
#include "hyocr-build-config.h"
#include <math.h>
#include <string.h>

#define DEFAULT_MAX_NEW_TOKENS 8192
#define DEFAULT_KV_BLOCK       16
#define FALLBACK_MAX_MODEL_LEN 32768

void hyocr_engine_params_init(hyocr_engine_params *p)
{
    memset(p, 0, sizeof *p);
    p->device = HYOCR_DEVICE_AUTO;
    p->cuda_dtype = HYOCR_COMPUTE_F16;
    p->max_batch = HYOCR_DEFAULT_MAX_BATCH;
    p->speculative_tokens = -1;
}

int64_t hyocr_memory_limit_fraction(double f)
{
    return -(int64_t)(f * 1e6);   /* millionths: hyocr_memory_limit_resolve reads them */
}

void hyocr_job_params_init(hyocr_job_params *p)
{
    memset(p, 0, sizeof *p);
    p->task = HYOCR_TASK_RECOGNIZE;
    p->max_new_tokens = DEFAULT_MAX_NEW_TOKENS;
    p->top_p = 1.0f;
    p->repetition_penalty = -1.0f;
    p->speculative_tokens = -1;
}

void hyocr_job_params_copy(hyocr_job_params *dst, hyocr_job_copies *own, const hyocr_job_params *src)
{
    *dst = *src;
    dst->image_path = own->image_path = g_strdup(src->image_path);
    dst->custom_prompt = own->custom_prompt = g_strdup(src->custom_prompt);
    dst->rendered_chat = own->rendered_chat = g_strdup(src->rendered_chat);
    dst->name = own->name = g_strdup(src->name);
    dst->fields = (const char *const *)(own->fields = g_strdupv((char **)src->fields));
    dst->stop = (const char *const *)(own->stop = g_strdupv((char **)src->stop));
    dst->stop_token_ids = own->stop_token_ids =
        g_memdup2(src->stop_token_ids, sizeof(int32_t) * (size_t)MAX(0, src->n_stop_token_ids));
    own->image_data = src->image_data ? g_bytes_ref(src->image_data) : NULL;
    own->document = src->document ? hyocr_document_ref(src->document) : NULL;
}

bool hyocr_job_params_check_logprobs(const hyocr_job_params *p, GError **error)
{
    if (!p->logprobs || (p->top_logprobs >= 0 && p->top_logprobs <= HYOCR_TOP_LOGPROBS_MAX)) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("top_logprobs must be between 0 and %d (got %d)"),
                HYOCR_TOP_LOGPROBS_MAX, p->top_logprobs);
    return false;
}

void hyocr_job_copies_clear(hyocr_job_copies *own)
{
    g_free(own->image_path);
    g_free(own->custom_prompt);
    g_free(own->rendered_chat);
    g_free(own->name);
    g_strfreev(own->fields);
    g_strfreev(own->stop);
    g_free(own->stop_token_ids);
    if (own->image_data) g_bytes_unref(own->image_data);
    if (own->document) hyocr_document_unref(own->document);
    memset(own, 0, sizeof *own);
}

const char *hyocr_stop_reason_name(hyocr_stop_reason r)
{
    static const char *const names[] = { "none", "eos", "max_new_tokens", "max_model_len", "repetition", "cancelled",
                                         "requested" };
    return (unsigned)r < G_N_ELEMENTS(names) ? names[r] : "unknown";
}

void hyocr_engine_log(hyocr_engine *eng, hyocr_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (eng->log) eng->log(level, msg, eng->log_data);
    else if (level >= HYOCR_LOG_WARNING) g_message("%s", msg);
    else g_info("%s", msg);
}

/* ---- init ------------------------------------------------------------------ */

static hyocr_backend *open_backend(hyocr_engine *eng, const hyocr_engine_params *p, GError **error)
{
    hyocr_backend_params bp = {
        .n_threads = p->n_threads, .device = p->cuda_device, .dtype = p->cuda_dtype,
        .memory_limit = p->memory_limit, .tuning = eng->tuning,
    };
    if (p->device == HYOCR_DEVICE_CPU) {
        bp.dtype = HYOCR_COMPUTE_F32;
        return hyocr_backend_cpu_init(&bp, error);
    }
#if HYOCR_HAVE_CUDA
    g_autoptr(GError) local = NULL;
    hyocr_backend *be = hyocr_backend_cuda_init(&bp, &local);
    if (be) return be;
    if (p->device == HYOCR_DEVICE_CUDA) {
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    /* Data for the front ends to word where it belongs (the CLI's stderr, the app's
     * Preferences), not a warning every load would repeat. */
    hyocr_engine_log(eng, HYOCR_LOG_INFO, "CUDA not usable (%s); running on the CPU", local->message);
    eng->cuda_unusable = g_steal_pointer(&local);
#else
    if (p->device == HYOCR_DEVICE_CUDA) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("this build of hyocr has no CUDA support; run on the CPU or rebuild with -Dcuda=enabled"));
        return NULL;
    }
    hyocr_engine_log(eng, HYOCR_LOG_INFO, "built without CUDA; running on the CPU");
#endif
    bp.dtype = HYOCR_COMPUTE_F32;
    return hyocr_backend_cpu_init(&bp, error);
}

static void apply_variants(hyocr_config *cfg, const hyocr_engine_params *p)
{
    if (p->rope_variant != HYOCR_VARIANT_CONFIG)
        cfg->rope_layout = p->rope_variant == HYOCR_VARIANT_R2 ? HYOCR_ROPE_LAYOUT_R2 : HYOCR_ROPE_LAYOUT_R1;
    if (p->posemb_variant != HYOCR_VARIANT_CONFIG)
        cfg->posemb_interp = p->posemb_variant == HYOCR_VARIANT_R2 ? HYOCR_POSEMB_R2 : HYOCR_POSEMB_R1;
}

static void add_eos(hyocr_engine *eng, int32_t id)
{
    if (id < 0) return;
    for (int i = 0; i < eng->n_eos; i++)
        if (eng->eos[i] == id) return;
    if (eng->n_eos < (int)G_N_ELEMENTS(eng->eos)) eng->eos[eng->n_eos++] = id;
}

/* Every eos of generation_config plus the tokenizer's eos token: the 1.5 release
 * lists 120020 in one and 120007 in the other, and the model ends with 120007. */
static void collect_eos(hyocr_engine *eng)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(eng->ck);
    for (int i = 0; i < cfg->generation.n_eos; i++) add_eos(eng, cfg->generation.eos_ids[i]);
    if (cfg->eos_token) add_eos(eng, hyocr_tokenizer_find(eng->tok, cfg->eos_token));
    if (eng->n_eos == 0) add_eos(eng, cfg->eos_id);
}

bool hyocr_engine_is_eos(const hyocr_engine *eng, int32_t id)
{
    for (int i = 0; i < eng->n_eos; i++)
        if (eng->eos[i] == id) return true;
    return false;
}

static bool check_model_dir(const char *dir, GError **error)
{
    if (!dir || !*dir) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("no model folder given"));
        return false;
    }
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING,
                    _("model folder %s does not exist or is not a folder"), dir);
        return false;
    }
    return true;
}

static bool load_model(hyocr_engine *eng, const hyocr_engine_params *p, GError **error);

/* The test-only draft stand-in (speculate.h): the engine params', else the tuning switches
 * (HYOCR_DRAFT_STANDIN*), for benchmarks through a front end. A file that does not read fails
 * the engine. */
static bool open_standin(hyocr_engine *eng, const hyocr_engine_params *p, GError **error)
{
    const hyocr_tuning *t = &eng->tuning;
    bool given = p->draft_standin != NULL;
    const char *path = given ? p->draft_standin : t->draft_standin;
    eng->standin_no_draft = given ? p->draft_standin_no_draft : t->draft_standin_no_draft;
    if (!*path) return true;
    eng->standin = hyocr_spec_standin_load(path, given ? p->draft_standin_k : t->draft_standin_k, error);
    return eng->standin != NULL;
}

/* The host side: checkpoint, tokenizer, what the jobs read of them. */
static bool engine_open(hyocr_engine *eng, const hyocr_engine_params *p, GError **error)
{
    eng->ck = hyocr_checkpoint_open(eng->model_dir, error);
    if (!eng->ck) return false;
    apply_variants(hyocr_checkpoint_config_mut(eng->ck), p);
    g_autofree char *tok_path = g_build_filename(eng->model_dir, "tokenizer.json", NULL);
    eng->tok = hyocr_tokenizer_load(tok_path, error);
    if (!eng->tok) return false;
    collect_eos(eng);
    return open_standin(eng, p, error);
}

/* The device side, on the scheduler's thread. */
bool hyocr_engine_load(hyocr_engine *eng, GError **error)
{
    return load_model(eng, &eng->params, error);
}

/* The memory plan's params for this engine's backend, checkpoint and draft. */
static void plan_params(hyocr_engine *eng, hyocr_memplan_params *p)
{
    hyocr_memplan_params_init(p, eng->be->kind);
    p->act_elem = eng->be->dtype == HYOCR_COMPUTE_F32 ? 4 : 2;
    hyocr_checkpoint_stats cs, ds = { 0 };
    hyocr_checkpoint_get_stats(eng->ck, &cs);
    const hyocr_checkpoint *dr = hyocr_checkpoint_draft(eng->ck);
    if (dr) hyocr_checkpoint_get_stats(dr, &ds);
    hyocr_memplan_params_bf16(p, cs.bf16_only, ds.bf16_only, eng->be->bf16_elem);
    p->lm_head_tied = cs.lm_head_tied;
}

/* A memory limit below the weights is refused before a byte is uploaded, with
 * the number that would do (in the plan the error carries); the backend would
 * otherwise stop halfway through. */
static bool check_weights_fit(hyocr_engine *eng, GError **error)
{
    hyocr_mem_info mi;
    eng->be->ops->mem_info(eng->be, &mi);
    int64_t lim = mi.limit;
    if (lim <= 0) return true;
    hyocr_memplan_params mp;
    plan_params(eng, &mp);
    int64_t weights = hyocr_memplan_weights(hyocr_checkpoint_config(eng->ck), mp.act_elem, mp.matrix_elem, mp.lm_head_tied);
    if (weights + mp.backend_bytes <= lim) return true;
    hyocr_memplan plan = {
        .act_elem = mp.act_elem, .weights = weights, .backend = mp.backend_bytes, .total = weights + mp.backend_bytes,
        .backend_kind = eng->be->kind, .budget = lim, .budget_is_limit = true, .fits = false,
    };
    g_autofree char *w = hyocr_memplan_format_bytes(plan.total);
    g_autofree char *l = hyocr_memplan_format_bytes(lim);
    GError *e = g_error_new(HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                            _("%s: the model's weights and the %s backend's scratch take %s, more than the memory "
                              "limit of %s; raise the limit above that (a page needs more on top)"),
                            eng->model_dir, eng->be->ops->name, w, l);
    hyocr_error_set_memplan(e, &plan);
    g_propagate_error(error, e);
    return false;
}

/* The DFlash draft beside the model, when speculation is on: optional, so a draft that is
 * missing, broken, or does not fit the memory limit next to the model leaves the engine
 * decoding plainly (with a warning where the user asked for it or it is broken). */
static void load_draft(hyocr_engine *eng, const hyocr_engine_params *p)
{
    eng->draft = NULL;
    eng->spec_tokens = 0;
    const hyocr_checkpoint *dr = hyocr_checkpoint_draft(eng->ck);
    if (p->speculative_tokens == 0) return;
    if (!dr) {
        const GError *why = hyocr_checkpoint_draft_error(eng->ck);
        if (why)
            hyocr_engine_log(eng, HYOCR_LOG_WARNING, "the DFlash draft is unusable (%s); decoding without speculation",
                             why->message);
        else if (p->speculative_tokens > 0)
            hyocr_engine_log(eng, HYOCR_LOG_WARNING, "%s has no DFlash draft (dflash/); decoding without speculation",
                             eng->model_dir);
        return;
    }
    const hyocr_dflash_config *dc = hyocr_checkpoint_dflash_config(dr);
    hyocr_mem_info mi;
    eng->be->ops->mem_info(eng->be, &mi);
    hyocr_memplan_params mp;
    plan_params(eng, &mp);
    if (mi.limit > 0 && mi.weights + hyocr_memplan_draft_weights(dc, mp.act_elem, mp.draft_matrix_elem) > mi.limit) {
        hyocr_engine_log(eng, HYOCR_LOG_WARNING, "the DFlash draft does not fit the memory limit next to the model; "
                         "decoding without speculation");
        return;
    }
    g_autoptr(GError) err = NULL;
    eng->draft = hyocr_dflash_load(eng->be, dr, eng->model, &err);
    if (!eng->draft) {
        hyocr_engine_log(eng, HYOCR_LOG_WARNING, "loading the DFlash draft failed (%s); decoding without speculation",
                         err->message);
        return;
    }
    int max = dc->block_size - 1;
    eng->spec_tokens = p->speculative_tokens < 0 ? max : MIN(p->speculative_tokens, max);
}

/* The pinned pool (pinned.h): the page being read and the next one prefetched, each up to 16
 * MiB of pixels (5461 patches: a 1024² page's 4096 take 12 MiB; 2048² pages, whose vision was
 * level from pinned memory, take ordinary memory). */
#define PIXELS_PINNED_BUFFERS 2
#define PIXELS_PINNED_BYTES   ((size_t)16 << 20)

/* Backend, weights and the (empty) KV pool: what a reload in another dtype redoes. */
static bool load_model(hyocr_engine *eng, const hyocr_engine_params *p, GError **error)
{
    eng->be = open_backend(eng, p, error);
    if (!eng->be || !check_weights_fit(eng, error)) return false;
    /* made once, kept through dtype reloads: pages prefetched before one are read after it */
    if (eng->be->kind == HYOCR_BACKEND_CUDA && !eng->pixels_pool && eng->tuning.pinned_pixels != HYOCR_SWITCH_OFF)
        eng->pixels_pool = hyocr_pinned_pool_new(eng->be->ops->host_alloc, eng->be->ops->host_free,
                                                 PIXELS_PINNED_BUFFERS, PIXELS_PINNED_BYTES);
    eng->model = hyocr_model_load(eng->be, eng->ck, error);
    if (!eng->model) {
        g_prefix_error(error, _("%s: loading weights on the %s backend: "), eng->model_dir, eng->be->ops->name);
        return false;
    }
    const hyocr_config *cfg = hyocr_checkpoint_config(eng->ck);
    eng->max_model_len = p->max_model_len > 0 ? p->max_model_len
                         : cfg->text.max_position_embeddings > 0 ? cfg->text.max_position_embeddings
                                                                 : FALLBACK_MAX_MODEL_LEN;
    int bs = p->kv_block_size > 0 ? p->kv_block_size : DEFAULT_KV_BLOCK;
    /* A growable pool gets its storage per job, sized to the job (batch.c). */
    if (!hyocr_model_kv_init(eng->model, bs, p->kv_n_blocks, 0, eng->max_model_len, error))
        return false;
    eng->kv_block_bytes = hyocr_model_kv_bytes_per_block(eng->model);
    eng->kv_fixed_blocks = p->kv_n_blocks;
    if (p->vit_chunk_rows > 0) eng->model->vit_chunk_rows = p->vit_chunk_rows;
    else if (eng->tuning.vit_chunk_rows > 0) eng->model->vit_chunk_rows = eng->tuning.vit_chunk_rows;
    if (p->text_chunk_rows > 0) eng->model->text_chunk_rows = p->text_chunk_rows;
    else if (eng->tuning.text_chunk_rows > 0) eng->model->text_chunk_rows = eng->tuning.text_chunk_rows;
    load_draft(eng, p);
    return true;
}

static void unload_model(hyocr_engine *eng)
{
    hyocr_dflash_free(eng->draft);
    eng->draft = NULL;
    eng->spec_tokens = 0;
    hyocr_model_free(eng->model);
    eng->model = NULL;
    if (eng->be) hyocr_backend_free(eng->be);
    eng->be = NULL;
}

/* Another thread may be reading the memory figures meanwhile (hyocr_engine_mem_info). */
bool hyocr_engine_reload(hyocr_engine *eng, hyocr_compute_dtype dtype, GError **error)
{
    hyocr_engine_params p = eng->params;
    /* fp32 means the CPU backend: the CUDA one computes in FP16 or BF16 only */
    p.device = dtype == HYOCR_COMPUTE_F32 ? HYOCR_DEVICE_CPU : HYOCR_DEVICE_CUDA;
    p.cuda_dtype = dtype == HYOCR_COMPUTE_F32 ? HYOCR_COMPUTE_F16 : dtype;
    g_mutex_lock(&eng->model_lock);
    unload_model(eng);
    bool ok = load_model(eng, &p, error);
    g_mutex_unlock(&eng->model_lock);
    return ok;
}

hyocr_engine *hyocr_engine_init(const hyocr_engine_params *p, GError **error)
{
    g_return_val_if_fail(p != NULL, NULL);
    if (!check_model_dir(p->model_dir, error)) return NULL;
    hyocr_engine *eng = g_new0(hyocr_engine, 1);
    eng->model_dir = g_strdup(p->model_dir);
    eng->params = *p;
    eng->params.model_dir = eng->model_dir;
    hyocr_tuning_from_env(&eng->tuning);
    eng->params.draft_standin = NULL;   /* read at open; not kept */
    eng->log = p->log;
    eng->log_data = p->log_data;
    g_mutex_init(&eng->model_lock);
    if (!engine_open(eng, p, error) || !hyocr_sched_start(eng, error)) {
        hyocr_engine_free(eng);
        return NULL;
    }
    return eng;
}

void hyocr_engine_unload(hyocr_engine *eng)
{
    g_mutex_lock(&eng->model_lock);
    unload_model(eng);
    g_mutex_unlock(&eng->model_lock);
}

void hyocr_engine_free(hyocr_engine *eng)
{
    if (!eng) return;
    hyocr_sched_stop(eng);   /* its thread unloads the model */
    hyocr_tokenizer_free(eng->tok);
    hyocr_checkpoint_free(eng->ck);
    hyocr_spec_standin_free(eng->standin);
    hyocr_pinned_pool_unref(eng->pixels_pool);   /* pixels still out hold it */
    g_free(eng->model_dir);
    g_clear_error(&eng->cuda_unusable);
    g_mutex_clear(&eng->model_lock);
    g_free(eng);
}

const GError *hyocr_engine_get_cuda_unusable(const hyocr_engine *eng)
{
    return eng->cuda_unusable;
}

const hyocr_config *hyocr_engine_config(const hyocr_engine *eng)
{
    return hyocr_checkpoint_config(eng->ck);
}

GBytes *hyocr_engine_token_bytes(hyocr_engine *eng, int32_t id)
{
    return hyocr_tokenizer_token_bytes(eng->tok, id);
}

char *hyocr_engine_token_text(hyocr_engine *eng, int32_t id, size_t *len)
{
    return hyocr_tokenizer_decode(eng->tok, &id, 1, false, len);
}

const char *hyocr_engine_backend_name(const hyocr_engine *eng)
{
    return eng->be ? eng->be->ops->name : "none";
}

hyocr_backend_kind hyocr_engine_backend_kind(hyocr_engine *eng)
{
    g_mutex_lock(&eng->model_lock);   /* a precision reload swaps the backend */
    hyocr_backend_kind kind = eng->be ? eng->be->kind : HYOCR_BACKEND_NONE;
    g_mutex_unlock(&eng->model_lock);
    return kind;
}

char *hyocr_engine_render_chat(hyocr_engine *eng, const hyocr_chat_message *msgs, int n_msgs, int *n_images,
                               GError **error)
{
    g_return_val_if_fail(eng != NULL && (n_msgs == 0 || msgs != NULL), NULL);
    return hyocr_chat_render(eng->tok, hyocr_checkpoint_config(eng->ck), msgs, n_msgs, n_images, error);
}

void hyocr_engine_cancel(hyocr_engine *eng)
{
    g_atomic_int_inc(&eng->cancel_gen);
}

void hyocr_engine_mem_info(hyocr_engine *eng, hyocr_mem_info *out)
{
    /* Both backends guard their counters with their own lock; the KV figure is
     * published by the job thread through an atomic. */
    g_mutex_lock(&eng->model_lock);
    if (eng->be) eng->be->ops->mem_info(eng->be, out);
    else memset(out, 0, sizeof *out);
    g_mutex_unlock(&eng->model_lock);
    out->kv_used = (int64_t)g_atomic_int_get(&eng->live_kv_blocks) * eng->kv_block_bytes;
}

void hyocr_job_result_clear(hyocr_job_result *r)
{
    if (!r) return;
    g_free(r->text);
    g_free(r->raw_text);
    if (r->token_ids) g_array_unref(r->token_ids);
    if (r->logprobs) g_array_unref(r->logprobs);
    g_clear_error(&r->error);
    memset(r, 0, sizeof *r);
}

void hyocr_job_end_init(hyocr_job_end *e)
{
    memset(e, 0, sizeof *e);
    g_mutex_init(&e->lock);
    g_cond_init(&e->cond);
}

void hyocr_job_end_clear(hyocr_job_end *e)
{
    hyocr_job_result_clear(&e->res);
    g_mutex_clear(&e->lock);
    g_cond_clear(&e->cond);
}

void hyocr_job_end_mark_done(hyocr_job_end *e)
{
    g_mutex_lock(&e->lock);
    e->done = true;
    g_cond_broadcast(&e->cond);
    g_mutex_unlock(&e->lock);
}

bool hyocr_job_end_is_done(hyocr_job_end *e)
{
    g_mutex_lock(&e->lock);
    bool done = e->done;
    g_mutex_unlock(&e->lock);
    return done;
}

bool hyocr_job_end_wait(hyocr_job_end *e, hyocr_job_result *out, GError **error)
{
    g_mutex_lock(&e->lock);
    while (!e->done) g_cond_wait(&e->cond, &e->lock);
    g_mutex_unlock(&e->lock);
    bool ok = e->res.error == NULL;
    if (!ok && error) g_propagate_error(error, g_error_copy(e->res.error));
    if (out) {
        *out = e->res;
        memset(&e->res, 0, sizeof e->res);
    }
    return ok;
}

/* ---- one job ----------------------------------------------------------------- */

static double ms_since(gint64 t)
{
    return (double)(g_get_monotonic_time() - t) / 1000.0;
}

static void emit(job_state *st, hyocr_event *ev)
{
    if (!st->job->on_event) return;
    ev->elapsed_ms = ms_since(st->t0);
    ev->n_generated = st->n_gen;
    ev->prompt_tokens = st->prompt ? st->prompt->n : 0;
    st->job->on_event(ev, st->job->user_data);
}

void hyocr_job_emit_simple(job_state *st, hyocr_event_type type)
{
    hyocr_event ev = { .type = type };
    emit(st, &ev);
}

bool hyocr_job_cancelled(void *data)
{
    job_state *st = data;
    return g_atomic_int_get(&st->eng->cancel_gen) != st->cancel_gen ||
           (st->handle && hyocr_request_is_cancelled(st->handle)) ||
           (st->job->cancellable && g_cancellable_is_cancelled(st->job->cancellable));
}

/* Stage time, after the device has finished the stage's queued work. */
bool hyocr_job_stage_done(job_state *st, double *ms, GError **error)
{
    if (!st->eng->be->ops->sync(st->eng->be, error)) return false;
    *ms = ms_since(st->t_stage);
    st->t_stage = g_get_monotonic_time();
    return true;
}

/* A document page is rendered for the model: a PDF page at the resolution that fits the
 * processor's max_pixels (rendering larger would only be resized away). */
static hyocr_render_options render_options(const job_state *st)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    return (hyocr_render_options){ .max_pixels = cfg->processor.max_pixels, .max_side = st->job->max_side,
                                   .resize_threads = st->eng->tuning.resize_threads };
}

/* The job's file, bytes or document page, decoded; its reader applies max_side (a PDF
 * page is rendered to fit). */
static hyocr_image *decode_image(const job_state *st, GError **error)
{
    const hyocr_job_params *job = st->job;
    hyocr_image_options opts = { .max_side = job->max_side, .resize_threads = st->eng->tuning.resize_threads };
    if (job->document) {
        hyocr_render_options ro = render_options(st);
        return hyocr_document_render(job->document, job->page, &ro, error);
    }
    if (job->image_data) {
        gsize len = 0;
        const void *data = g_bytes_get_data(job->image_data, &len);
        return hyocr_image_load_from_memory(data, len, job->image_path ? job->image_path : "image", &opts, error);
    }
    return hyocr_image_load(job->image_path, &opts, error);
}

static bool load_image(job_state *st, GError **error)
{
    const hyocr_job_params *job = st->job;
    if (!job->image && !job->image_path && !job->image_data && !job->document) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("job has no image (path, data, decoded or document)"));
        return false;
    }
    if (!job->image && !(st->img_owned = decode_image(st, error))) return false;
    /* Decoded pixels get the readers' max_side rule here; a decoded file fits already. */
    const hyocr_image *src = job->image ? job->image : st->img_owned;
    hyocr_image *small;
    if (!hyocr_image_fit(src, job->max_side, st->eng->tuning.resize_threads, &small, error)) return false;
    if (small) {
        hyocr_image_free(st->img_owned);
        st->img_owned = small;
    }
    st->img = st->img_owned ? st->img_owned : job->image;
    st->img_w = st->img->width;
    st->img_h = st->img->height;
    return true;
}

/* What planning needs of the image: its size. A document tells a PDF page's size without
 * rendering it (and a TIFF, WebP or HEIF page's from its header). */
static bool image_size(job_state *st, GError **error)
{
    if (st->job->document && !st->job->image) {
        hyocr_render_options ro = render_options(st);
        return hyocr_document_render_size(st->job->document, st->job->page, &ro, &st->img_w, &st->img_h, error);
    }
    return load_image(st, error);
}

static void *pixels_take(void *pool, size_t bytes, size_t *cap)
{
    return hyocr_pinned_pool_take(pool, bytes, cap);
}

static void pixels_give(void *pool, void *p, size_t cap)
{
    hyocr_pinned_pool_give(pool, p, cap);
}

/* The page's pixels; in a buffer of the pinned pool where one is free and large enough. */
static bool make_pixels(job_state *st, GError **error)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    if (!load_image(st, error)) return false;
    hyocr_pinned_pool *pool = st->eng->pixels_pool;
    hyocr_pixels_mem mem = { pixels_take, pixels_give, pool };
    st->px = hyocr_pixels_from_image_in(st->img, &cfg->processor, st->eng->tuning.resize_threads, pool ? &mem : NULL,
                                        error);
    return st->px != NULL;
}

static hyocr_prompt *job_prompt(hyocr_engine *eng, const hyocr_job_params *job, int gh, int gw, GError **error);

/* The next page's pixels and its prompt (a quarter of a millisecond of tokenizing and laying out
 * ~1100 positions for a 1024² page on the GPU machine's host, session 26), made while the
 * device works on the pages before it; the tokenizer is safe to share (tokenizer.c). */
static gpointer prefetch_thread(gpointer data)
{
    job_state *st = data;
    if (make_pixels(st, &st->prefetch_error))
        st->prompt = job_prompt(st->eng, st->job, st->px->grid_h, st->px->grid_w, &st->prefetch_error);
    return NULL;
}

void hyocr_job_prefetch(job_state *st)
{
    if (st->prefetch || st->px) return;
    st->prefetch = g_thread_try_new("hyocr-prefetch", prefetch_thread, st, NULL);
}

/* Waits for a prefetch; true when it left pixels (or its error) to take. */
static bool prefetch_join(job_state *st)
{
    if (!st->prefetch) return false;
    g_thread_join(st->prefetch);
    st->prefetch = NULL;
    return true;
}

static bool check_fits(job_state *st, GError **error)
{
    int n = st->prompt->n, limit = st->eng->max_model_len;
    if (n + 1 <= limit) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_TOO_LONG,
                _("the prompt takes %d tokens (%d of them for the image) and leaves no room to answer within "
                "max_model_len %d; shrink the image (max_side) or raise max_model_len"),
                n, st->prompt->n_image, limit);
    return false;
}

static bool grid_for(const hyocr_config *cfg, int w, int h, int *gh, int *gw, GError **error);

/* The job's conversation, rendered by the caller, or its task as Tencent's
 * scripts send it. */
static hyocr_prompt *job_prompt(hyocr_engine *eng, const hyocr_job_params *job, int gh, int gw, GError **error)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(eng->ck);
    if (job->rendered_chat) return hyocr_prompt_build_rendered(eng->tok, cfg, job->rendered_chat, gh, gw, error);
    g_autofree char *text = hyocr_task_prompt(job->task, cfg->version, job->fields, job->custom_prompt, error);
    return text ? hyocr_prompt_build(eng->tok, cfg, text, gh, gw, error) : NULL;
}

/* Planning (no event) needs the grid and the prompt, not the pixels: resizing and
 * packing a page is most of the preprocessing, so it waits for the real pass. */
bool hyocr_job_preprocess(job_state *st, bool emit_event, GError **error)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    const hyocr_job_params *job = st->job;
    if (emit_event) {
        if (prefetch_join(st) && st->prefetch_error) {
            g_propagate_error(error, g_steal_pointer(&st->prefetch_error));
            return false;
        }
        if (!st->px && !make_pixels(st, error)) return false;
        st->grid_h = st->px->grid_h;
        st->grid_w = st->px->grid_w;
    } else if (!image_size(st, error) || !grid_for(cfg, st->img_w, st->img_h, &st->grid_h, &st->grid_w, error)) {
        return false;
    }
    /* a prefetched page's prompt is made already, for the grid of its pixels */
    if (!st->prompt) st->prompt = job_prompt(st->eng, job, st->grid_h, st->grid_w, error);
    if (!st->prompt || !check_fits(st, error)) return false;
    if (!emit_event) return true;
    if (!hyocr_job_stage_done(st, &st->res->timings.preprocess_ms, error)) return false;
    hyocr_event ev = { .type = HYOCR_EVENT_PREPROCESS, .prompt = st->prompt, .pixels = st->px };
    emit(st, &ev);
    return true;
}

void hyocr_job_drop_inputs(job_state *st)
{
    prefetch_join(st);
    g_clear_error(&st->prefetch_error);
    hyocr_prompt_free(st->prompt);
    hyocr_pixels_free(st->px);
    hyocr_image_free(st->img_owned);
    st->prompt = NULL;
    st->px = NULL;
    st->img_owned = NULL;
    st->img = NULL;
}

/* ---- memory plan and the up-front check ---------------------------------------- */

typedef struct {
    hyocr_engine        *eng;
    hyocr_memplan_params p;
    int64_t              budget;     /* 0: unknown, nothing is refused */
    bool                 is_limit;   /* the budget is the memory limit (else the card's free memory) */
} memcheck;

/* What a job may take: the backend's memory limit, or on CUDA what the card
 * has free plus what we hold already. */
static void memcheck_budget(memcheck *mc, const hyocr_mem_info *mi)
{
    hyocr_engine *eng = mc->eng;
    mc->is_limit = mi->limit > 0;
    mc->budget = mi->limit;
    if (!mc->is_limit && eng->be->kind == HYOCR_BACKEND_CUDA && mi->total > 0)
        mc->budget = mi->free + mi->weights + mi->kv_reserved + mi->workspace;
}

/* at_rest: the model holds no scratch now, so the backend's workspace figure is
 * its own scratch alone and may replace the planned one when larger. */
static void memcheck_init(memcheck *mc, hyocr_engine *eng, bool at_rest)
{
    memset(mc, 0, sizeof *mc);
    mc->eng = eng;
    plan_params(eng, &mc->p);
    mc->p.kv_block_size = eng->model->kv_block_size;
    mc->p.kv_fixed_blocks = eng->kv_fixed_blocks;
    mc->p.max_model_len = eng->max_model_len;
    mc->p.vit_chunk_rows = eng->model->vit_chunk_rows;
    mc->p.text_chunk_rows = eng->model->text_chunk_rows;
    mc->p.draft = eng->draft ? &eng->draft->cfg : NULL;
    mc->p.spec_tokens = eng->spec_tokens;
    hyocr_mem_info mi;
    eng->be->ops->mem_info(eng->be, &mi);
    if (at_rest) mc->p.backend_bytes = MAX(mc->p.backend_bytes, mi.workspace);
    memcheck_budget(mc, &mi);
}

int64_t hyocr_engine_budget(hyocr_engine *eng)
{
    memcheck mc;
    memcheck_init(&mc, eng, true);
    return mc.budget;
}

static void memcheck_plan(const memcheck *mc, int gh, int gw, int prompt, int max_new, hyocr_memplan *out)
{
    hyocr_memplan_for_job(hyocr_checkpoint_config(mc->eng->ck), &mc->p, gh, gw, prompt, max_new, out);
    out->backend_kind = mc->eng->be->kind;
    out->budget = mc->budget;
    out->budget_is_limit = mc->is_limit;
    out->fits = mc->budget <= 0 || out->total <= mc->budget;
}

/* The patch grid the processor makes of a w×h image. */
static bool grid_for(const hyocr_config *cfg, int w, int h, int *gh, int *gw, GError **error)
{
    const hyocr_processor_config *pc = &cfg->processor;
    int rh, rw;
    if (pc->patch_size <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("preprocessor_config.json: patch size %d"),
                    pc->patch_size);
        return false;
    }
    if (!hyocr_smart_resize(h, w, pc->patch_size * pc->merge_size, pc->min_pixels, pc->max_pixels, &rh, &rw, error))
        return false;
    *gh = rh / pc->patch_size;
    *gw = rw / pc->patch_size;
    return true;
}

/* The largest max_side (a multiple of 32) under which the job fits, 0 if none:
 * the image shrunk as the job's own path would shrink it. */
static int fit_max_side(const job_state *st, const memcheck *mc, hyocr_memplan *out)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    const hyocr_image *src = st->job->image ? st->job->image : st->img;
    int long_edge = MAX(src->width, src->height), n_now = st->grid_h * st->grid_w;
    for (int side = (long_edge - 1) / 32 * 32; side >= 32; side -= 32) {
        int w, h, gh, gw;
        hyocr_image_fit_size(src->width, src->height, side, &w, &h);
        if (!grid_for(cfg, w, h, &gh, &gw, NULL) || gh * gw >= n_now) continue;
        int prompt = st->prompt->n - st->prompt->n_image + hyocr_memplan_image_tokens(gh, gw);
        memcheck_plan(mc, gh, gw, prompt, st->job->max_new_tokens, out);
        if (out->fits) return side;
    }
    return 0;
}

/* The largest max_new_tokens under which the job fits, 0 if none (or the KV
 * pool does not depend on it). */
static int fit_max_new(const job_state *st, const memcheck *mc, hyocr_memplan *out)
{
    int lo = 1, hi = st->job->max_new_tokens - 1, best = 0;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        memcheck_plan(mc, st->grid_h, st->grid_w, st->prompt->n, mid, out);
        if (out->fits) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (best) memcheck_plan(mc, st->grid_h, st->grid_w, st->prompt->n, best, out);
    return best;
}

/* What would make a job that does not fit (under mc) fit: the front ends word it. */
static void memory_advice(const job_state *st, const memcheck *mc, hyocr_memplan *plan)
{
    hyocr_memplan fit;
    hyocr_memplan_advice *a = &plan->advice;
    memset(a, 0, sizeof *a);
    a->max_side = fit_max_side(st, mc, &fit);
    if (a->max_side) a->max_side_total = fit.total;
    a->max_new_tokens = fit_max_new(st, mc, &fit);
    if (a->max_new_tokens) a->max_new_tokens_total = fit.total;
}

/* The engine's own words for a refusal, naming its parameters; the plan rides
 * along with the error for front ends that word it themselves. */
static GError *refusal_error(const hyocr_memplan *plan)
{
    g_autofree char *parts = hyocr_memplan_describe(plan);
    g_autofree char *need = hyocr_memplan_format_bytes(plan->total);
    g_autofree char *budget = hyocr_memplan_format_bytes(plan->budget);
    g_autofree char *have = plan->budget_is_limit
        ? g_strdup_printf(_("the memory limit is %s"), budget)
        : g_strdup_printf(_("the GPU has %s for it (free plus what hyocr holds)"), budget);
    g_autofree char *first = plan->budget_is_limit ? g_strdup_printf(_("raise the memory limit to %s"), need)
                                                   : g_strdup(_("free GPU memory (other programs hold it)"));
    GString *a = g_string_new(first);
    const hyocr_memplan_advice *adv = &plan->advice;
    if (adv->max_side) {
        g_autofree char *n = hyocr_memplan_format_bytes(adv->max_side_total);
        g_string_append_printf(a, _(", or shrink the image to a long side of %d pixels (needs %s)"), adv->max_side, n);
    }
    if (adv->max_new_tokens) {
        g_autofree char *n = hyocr_memplan_format_bytes(adv->max_new_tokens_total);
        g_string_append_printf(a, _(", or allow at most %d new tokens (needs %s)"), adv->max_new_tokens, n);
    }
    GError *e = g_error_new(HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                            _("this %d×%d page (%d×%d patches, %d prompt tokens, up to %d new) needs %s (%s) but %s: "
                              "%s"),
                            plan->image_width, plan->image_height, plan->grid_w, plan->grid_h, plan->prompt_tokens,
                            plan->max_new_tokens, need, parts, have, a->str);
    g_string_free(a, TRUE);
    hyocr_error_set_memplan(e, plan);
    return e;
}

/* A job whose prefill and decode do not fit next to the vision weights may
 * still run with them off the device after its vision pass (the next vision
 * pass brings them back). */
static bool fits_without_vision_weights(job_state *st, const memcheck *mc)
{
    memcheck off = *mc;
    off.p.vision_offload = true;
    hyocr_memplan alt;
    memcheck_plan(&off, st->grid_h, st->grid_w, st->prompt->n, st->job->max_new_tokens, &alt);
    if (!alt.fits) return false;
    st->plan = alt;
    st->vision_offload = true;
    return true;
}

/* Refuses, before the vision tower, a job whose plan exceeds the budget, with
 * the numbers and what to change; nothing has been allocated for it yet. */
bool hyocr_job_check_memory(job_state *st, GError **error)
{
    memcheck mc;
    /* at rest unless other jobs hold scratch now (the backend's workspace is then theirs too) */
    memcheck_init(&mc, st->eng, !g_atomic_int_get(&st->eng->busy));
    mc.p.spec_tokens = hyocr_job_spec_tokens(st);
    hyocr_memplan *plan = &st->plan;
    memcheck_plan(&mc, st->grid_h, st->grid_w, st->prompt->n, st->job->max_new_tokens, plan);
    st->kv_tokens = hyocr_memplan_kv_tokens(st->prompt->n, st->job->max_new_tokens, st->eng->max_model_len);
    /* planned once here, not at every later admission for every running job (batch.c's budget) */
    hyocr_memplan again;
    memcheck_plan(&mc, st->grid_h, st->grid_w, st->kv_tokens, 1, &again);
    st->redo_prefill = again.prefill;
    bool fits = plan->fits || fits_without_vision_weights(st, &mc);
    plan->image_width = st->img_w;
    plan->image_height = st->img_h;
    if (fits) return true;
    memory_advice(st, &mc, plan);
    g_propagate_error(error, refusal_error(plan));
    return false;
}

/* The pass queued, not waited for: hyocr_job_vision_done waits and times it. beside: on the
 * backend's side lane (the caller is on it), done once that lane is idle; its time is then the
 * wall time it was in flight, beside the decode steps. */
bool hyocr_job_vision_queue(job_state *st, bool beside, GError **error)
{
    hyocr_model *m = st->eng->model;
    m->beside = beside;
    st->vision = hyocr_vision_forward(m, st->px, &st->n_vision_rows, NULL, hyocr_job_cancelled, st, error);
    m->beside = false;
    return st->vision != NULL;
}

bool hyocr_job_vision_done(job_state *st, GError **error)
{
    if (!hyocr_job_stage_done(st, &st->res->timings.vision_ms, error)) return false;
    hyocr_job_emit_simple(st, HYOCR_EVENT_VISION);
    return true;
}

int hyocr_job_spec_tokens(const job_state *st)
{
    const hyocr_engine *eng = st->eng;
    int want = st->job->speculative_tokens;
    if (!eng->draft || st->job->on_logits || st->job->logprobs || want == 0) return 0;
    return want < 0 ? eng->spec_tokens : MIN(want, eng->draft->cfg.block_size - 1);
}

static float pick_penalty(const hyocr_config *cfg, float requested)
{
    if (requested >= 0) return requested;
    if (cfg->generation.repetition_penalty > 0) return cfg->generation.repetition_penalty;
    return cfg->version == HYOCR_MODEL_VERSION_1_5 ? 1.08f : 1.0f;
}

void hyocr_job_state_init(job_state *st, hyocr_engine *eng, const hyocr_job_params *job, hyocr_job_result *res)
{
    memset(st, 0, sizeof *st);
    st->eng = eng;
    st->job = job;
    st->res = res;
    st->pick_slot = -1;
    memset(res, 0, sizeof *res);
    st->t0 = st->t_stage = g_get_monotonic_time();
}

/* Streams text[streamed, end) as the TOKEN event of id (-1: the bytes left at the end). */
static void emit_text(job_state *st, int32_t id, size_t end, const hyocr_token_logprobs *lp)
{
    end = MAX(end, st->streamed);
    hyocr_event ev = { .type = HYOCR_EVENT_TOKEN, .token = id, .piece = st->text->str + st->streamed,
                       .piece_len = end - st->streamed, .batch_size = st->batch_size, .logprobs = lp };
    st->streamed = end;
    if (id >= 0 || ev.piece_len) emit(st, &ev);
}

/* Whether the bytes the text got past `before` complete one of the job's stop strings; if
 * so, the text is cut before it (after it with stop_included). */
static bool stop_string_reached(job_state *st, size_t before)
{
    size_t at = 0;
    int which = 0;
    if (!hyocr_stop_find(st->job->stop, st->text->str, st->text->len, before, &at, &which)) return false;
    g_string_truncate(st->text, at + (st->job->stop_included ? strlen(st->job->stop[which]) : 0));
    st->stop_matched = true;
    st->res->stop_string = which + 1;
    return true;
}

/* The chosen token's log-probabilities, appended to the result: those the backend's pick
 * computed (given), or from the raw row kept before the host sampled. A job that asks for them
 * brings one or the other (pick_path in batch.c). */
static const hyocr_token_logprobs *note_logprobs(job_state *st, int V, int32_t id, bool have_row,
                                                 const hyocr_token_logprobs *given)
{
    if (!st->res->logprobs) return NULL;
    hyocr_token_logprobs lp = { .logprob = NAN };
    g_warn_if_fail(have_row || given);   /* a NaN keeps the list aligned if neither */
    if (given) lp = *given;
    else if (have_row) lp = hyocr_sampler_token_logprobs(st->raw_logits, V, id, st->job->top_logprobs);
    g_array_append_val(st->res->logprobs, lp);
    return &g_array_index(st->res->logprobs, hyocr_token_logprobs, st->res->logprobs->len - 1);
}

/* Records and streams one token; returns the stop reason it causes. */
hyocr_stop_reason hyocr_job_take_token(job_state *st, float *logits, int32_t id, const hyocr_token_logprobs *lp_given)
{
    const hyocr_job_params *job = st->job;
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    int V = st->eng->model->cfg.text.vocab_size;
    if (logits) {
        if (job->on_logits) job->on_logits(logits, V, st->n_gen, job->logits_data);
        /* the sampler's penalty changes the row in place */
        if (st->raw_logits) memcpy(st->raw_logits, logits, sizeof(float) * (size_t)V);
        id = hyocr_sampler_sample(st->sampler, logits);
    }
    /* also after a device pick, so a later host step penalises the same set */
    hyocr_sampler_accept(st->sampler, &id, 1);
    g_array_append_val(st->res->token_ids, id);
    const hyocr_token_logprobs *lp = note_logprobs(st, V, id, logits != NULL, lp_given);
    st->n_gen++;
    size_t piece_len = 0;
    g_autofree char *piece = hyocr_detokenizer_push(st->detok, id, &piece_len);
    size_t before = st->text->len;
    g_string_append_len(st->text, piece, (gssize)piece_len);
    for (size_t i = 0; i < piece_len; i++) st->n_chars += ((guchar)piece[i] & 0xc0) != 0x80;   /* NULs too */
    if (st->n_gen == 1) st->res->timings.first_token_ms = ms_since(st->t0);
    bool at_stop = stop_string_reached(st, before);
    size_t held = at_stop ? 0 : hyocr_stop_held(job->stop, st->text->str, st->text->len);
    emit_text(st, id, st->text->len - held, lp);
    st->next_id = id;

    if (at_stop || hyocr_stop_token_is(job->stop_token_ids, job->n_stop_token_ids, id)) return HYOCR_STOP_REQUESTED;
    if (!job->ignore_eos && hyocr_engine_is_eos(st->eng, id)) return HYOCR_STOP_EOS;
    if (st->n_gen >= job->max_new_tokens) return HYOCR_STOP_MAX_NEW_TOKENS;
    if (st->prompt->n + st->n_gen >= st->eng->max_model_len) return HYOCR_STOP_MAX_MODEL_LEN;
    if (cfg->version == HYOCR_MODEL_VERSION_1_5 && !job->no_tail_stop &&
        hyocr_tail_check_should_stop(&st->tail, st->text->str, st->text->len, st->n_chars))
        return HYOCR_STOP_REPETITION;
    if (hyocr_job_cancelled(st)) return HYOCR_STOP_CANCELLED;
    return HYOCR_STOP_NONE;
}

static bool validate_job(const hyocr_job_params *job, GError **error)
{
    if (job->max_new_tokens <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("max_new_tokens must be at least 1 (got %d)"), job->max_new_tokens);
        return false;
    }
    if ((int)job->task < 0 || (int)job->task >= HYOCR_TASK_COUNT) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("unknown task %d"), (int)job->task);
        return false;
    }
    return hyocr_job_params_check_logprobs(job, error) && hyocr_stop_strings_check(job->stop, error);
}

bool hyocr_job_begin(job_state *st, GError **error)
{
    if (!validate_job(st->job, error)) return false;
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    const hyocr_job_params *job = st->job;
    int V = st->eng->model->cfg.text.vocab_size;
    if (!hyocr_stop_tokens_check(job->stop_token_ids, job->n_stop_token_ids, V, error)) return false;
    st->res->repetition_penalty = pick_penalty(cfg, job->repetition_penalty);
    hyocr_sampler_params sp = {
        .temperature = job->temperature, .top_k = job->top_k, .top_p = job->top_p,
        .repetition_penalty = st->res->repetition_penalty, .seed = job->seed,
    };
    st->sampler = hyocr_sampler_init(&sp, V);
    /* PyTorch divides by the penalty on the CPU but multiplies by its reciprocal on
     * CUDA; follow the reference run of the same device kind, last-bit for last-bit. */
    hyocr_sampler_set_penalty_divide(st->sampler, st->eng->be->kind == HYOCR_BACKEND_CPU
                                     ? HYOCR_PENALTY_DIVIDE_TRUE : HYOCR_PENALTY_DIVIDE_RECIPROCAL);
    st->detok = hyocr_detokenizer_init(st->eng->tok, true);
    st->text = g_string_new(NULL);
    st->res->token_ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (job->logprobs) {
        st->res->logprobs = g_array_new(FALSE, FALSE, sizeof(hyocr_token_logprobs));
        st->raw_logits = g_new(float, (size_t)V);
    }
    hyocr_tail_check_init(&st->tail);
    return true;
}

/* Texts, sizes, timings and memory, also for failed or cancelled jobs. */
static void finish_result(job_state *st)
{
    hyocr_job_result *r = st->res;
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    if (st->detok) {
        size_t rest_len = 0;
        g_autofree char *rest = hyocr_detokenizer_flush(st->detok, &rest_len);
        if (!st->stop_matched) g_string_append_len(st->text, rest, (gssize)rest_len);
        /* what the stream held back, and bytes that never completed a character (as
         * U+FFFD): the pieces always add up to raw_text */
        emit_text(st, -1, st->text->len, NULL);
    }
    r->raw_text_len = st->text ? st->text->len : 0;
    r->raw_text = st->text ? g_memdup2(st->text->str, st->text->len + 1) : g_strdup("");   /* NULs kept */
    r->text = hyocr_clean_repeated_substrings(r->raw_text, r->raw_text_len, cfg->version, &r->text_len);
    if (st->prompt) {
        r->prompt_tokens = st->prompt->n;
        r->n_image_tokens = st->prompt->n_image;
    }
    if (st->img) {
        r->image_width = st->img->width;
        r->image_height = st->img->height;
    }
    if (st->px) {
        r->grid_h = st->px->grid_h;
        r->grid_w = st->px->grid_w;
    }
    r->timings.total_ms = ms_since(st->t0);
    if (st->n_gen > 1 && r->timings.decode_ms > 0)
        r->timings.decode_tokens_per_s = (st->n_gen - 1) / (r->timings.decode_ms / 1000.0);
    if (st->eng->be) st->eng->be->ops->mem_info(st->eng->be, &r->memory);
    if (st->seq) r->memory.kv_used = (int64_t)st->seq->n_blocks * st->eng->kv_block_bytes;
}

static void emit_end(job_state *st, const GError *err)
{
    hyocr_event ev = { .type = HYOCR_EVENT_DONE };
    if (!err) {
        ev.piece = st->res->text;
        ev.piece_len = st->res->text_len;
    } else if (g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED)) {
        ev.type = HYOCR_EVENT_CANCELLED;
        st->res->stop_reason = HYOCR_STOP_CANCELLED;
    } else {
        ev.type = HYOCR_EVENT_ERROR;
        ev.error = err;
    }
    ev.stop_reason = st->res->stop_reason;
    ev.stop_string = st->res->stop_string;
    emit(st, &ev);
}

void hyocr_job_finish(job_state *st, const GError *err)
{
    finish_result(st);
    emit_end(st, err);
    st->phase = JOB_FINISHED;
}

/* The scheduler has already given back the job's KV blocks, pick slot and swap. */
void hyocr_job_release(job_state *st)
{
    hyocr_engine *eng = st->eng;
    if (st->spec && eng->draft) hyocr_spec_job_free(eng->draft, st->spec);
    st->spec = NULL;
    if (st->vision) eng->be->ops->buf_free(eng->be, st->vision);
    st->vision = NULL;
    g_clear_pointer(&st->host_vision, g_free);
    g_clear_pointer(&st->sampler, hyocr_sampler_free);
    g_clear_pointer(&st->detok, hyocr_detokenizer_free);
    g_clear_pointer(&st->raw_logits, g_free);
    if (st->text) g_string_free(st->text, TRUE);
    st->text = NULL;
    hyocr_job_drop_inputs(st);
}

/* ---- memory plans for callers ------------------------------------------------- */

/* The plan under the model lock, with the engine's own fallback (the vision
 * weights off the device while it decodes); st, when given, is the job it
 * belongs to, and a plan that does not fit gets its advice from it. */
static void engine_plan(hyocr_engine *eng, const job_state *st, int grid_h, int grid_w, int prompt_tokens,
                        int max_new_tokens, hyocr_memplan *out)
{
    g_mutex_lock(&eng->model_lock);
    if (eng->model) {
        memcheck mc;
        memcheck_init(&mc, eng, !g_atomic_int_get(&eng->busy));
        memcheck_plan(&mc, grid_h, grid_w, prompt_tokens, max_new_tokens, out);
        hyocr_memplan tight;
        memcheck off = mc;
        off.p.vision_offload = true;
        if (!out->fits) memcheck_plan(&off, grid_h, grid_w, prompt_tokens, max_new_tokens, &tight);
        if (!out->fits && tight.fits) *out = tight;
        if (!out->fits && st) memory_advice(st, &mc, out);
    } else {
        memset(out, 0, sizeof *out);   /* lost in a failed dtype reload */
    }
    g_mutex_unlock(&eng->model_lock);
}

void hyocr_engine_memory_plan(hyocr_engine *eng, int grid_h, int grid_w, int prompt_tokens, int max_new_tokens,
                              hyocr_memplan *out)
{
    g_return_if_fail(eng != NULL && out != NULL);
    engine_plan(eng, NULL, grid_h, grid_w, prompt_tokens, max_new_tokens, out);
}

bool hyocr_engine_plan_job(hyocr_engine *eng, const hyocr_job_params *job, hyocr_memplan *out, GError **error)
{
    g_return_val_if_fail(eng != NULL && job != NULL && out != NULL, false);
    const hyocr_config *cfg = hyocr_checkpoint_config(eng->ck);
    job_state st = { .eng = eng, .job = job };
    g_autoptr(hyocr_prompt) prompt = NULL;
    bool ok = validate_job(job, error) && image_size(&st, error) &&
              grid_for(cfg, st.img_w, st.img_h, &st.grid_h, &st.grid_w, error) &&
              (prompt = job_prompt(eng, job, st.grid_h, st.grid_w, error));
    if (ok) {
        st.prompt = prompt;
        engine_plan(eng, &st, st.grid_h, st.grid_w, prompt->n, job->max_new_tokens, out);
        out->image_width = st.img_w;
        out->image_height = st.img_h;
    }
    hyocr_image_free(st.img_owned);
    return ok;
}
