/* hyocr — engine: owns checkpoint, tokenizer, backend and model; runs one job at a
 * time (preprocess → vision → prefill → decode) and streams events. */
#include "hyocr.h"
#include "error.h"
#include "i18n.h"
#include "hyocr-build-config.h"
#include "memplan.h"
#include "model.h"
#include "postprocess.h"
#include "sampler.h"
#include "tokenizer.h"
#include <math.h>
#include <string.h>

#define DEFAULT_MAX_NEW_TOKENS 8192
#define DEFAULT_KV_BLOCK       16
#define FALLBACK_MAX_MODEL_LEN 32768

struct hyocr_engine {
    char             *model_dir;
    hyocr_log_fn      log;
    void             *log_data;
    hyocr_checkpoint *ck;
    hyocr_tokenizer  *tok;
    hyocr_backend    *be;
    hyocr_model      *model;
    int               max_model_len;
    int64_t           memory_limit;     /* as given: bytes, or < 0 millionths of the device */
    int               kv_fixed_blocks;  /* the engine's fixed pool, 0 when it grows per job */
    bool              lm_head_tied;
    int32_t           eos[2 * HYOCR_MAX_EOS + 1];
    int               n_eos;
    gint              cancel;   /* atomic */
    gint              busy;     /* atomic */
    gint              live_kv_blocks;   /* atomic: KV blocks held by the running job, for mem_info */
    int64_t           kv_block_bytes;   /* fixed after load, so mem_info never touches the pool */
};

void hyocr_engine_params_init(hyocr_engine_params *p)
{
    memset(p, 0, sizeof *p);
    p->device = HYOCR_DEVICE_AUTO;
    p->cuda_dtype = HYOCR_COMPUTE_F16;
}

void hyocr_job_params_init(hyocr_job_params *p)
{
    memset(p, 0, sizeof *p);
    p->task = HYOCR_TASK_RECOGNIZE;
    p->max_new_tokens = DEFAULT_MAX_NEW_TOKENS;
    p->top_p = 1.0f;
    p->repetition_penalty = -1.0f;
}

const char *hyocr_stop_reason_name(hyocr_stop_reason r)
{
    static const char *const names[] = { "none", "eos", "max_new_tokens", "max_model_len", "repetition", "cancelled" };
    return (unsigned)r < G_N_ELEMENTS(names) ? names[r] : "unknown";
}

static void engine_log(hyocr_engine *eng, hyocr_log_level level, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void engine_log(hyocr_engine *eng, hyocr_log_level level, const char *fmt, ...)
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
        .memory_limit = p->memory_limit,
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
    engine_log(eng, HYOCR_LOG_WARNING, "CUDA not usable (%s); running on the CPU", local->message);
#else
    if (p->device == HYOCR_DEVICE_CUDA) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("this build of hyocr has no CUDA support; use --device cpu or rebuild with -Dcuda=enabled"));
        return NULL;
    }
    engine_log(eng, HYOCR_LOG_INFO, "built without CUDA; running on the CPU");
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

static bool is_eos(const hyocr_engine *eng, int32_t id)
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
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO,
                    _("model folder %s does not exist or is not a folder; download the model "
                    "(hyocr download) or pass the folder holding config.json"), dir);
        return false;
    }
    return true;
}

static bool engine_load(hyocr_engine *eng, const hyocr_engine_params *p, GError **error)
{
    eng->ck = hyocr_checkpoint_open(eng->model_dir, error);
    if (!eng->ck) return false;
    apply_variants(hyocr_checkpoint_config_mut(eng->ck), p);
    g_autofree char *tok_path = g_build_filename(eng->model_dir, "tokenizer.json", NULL);
    eng->tok = hyocr_tokenizer_load(tok_path, error);
    if (!eng->tok) return false;
    eng->be = open_backend(eng, p, error);
    if (!eng->be) return false;
    eng->model = hyocr_model_load(eng->be, eng->ck, error);
    if (!eng->model) {
        g_prefix_error(error, "%s: loading weights on the %s backend: ", eng->model_dir, eng->be->ops->name);
        return false;
    }
    const hyocr_config *cfg = hyocr_checkpoint_config(eng->ck);
    eng->max_model_len = p->max_model_len > 0 ? p->max_model_len
                         : cfg->text.max_position_embeddings > 0 ? cfg->text.max_position_embeddings
                                                                 : FALLBACK_MAX_MODEL_LEN;
    int bs = p->kv_block_size > 0 ? p->kv_block_size : DEFAULT_KV_BLOCK;
    /* A growable pool gets its storage per job, sized to the job (see prefill). */
    if (!hyocr_model_kv_init(eng->model, bs, p->kv_n_blocks, 0, eng->max_model_len, error))
        return false;
    eng->kv_block_bytes = hyocr_model_kv_bytes_per_block(eng->model);
    eng->kv_fixed_blocks = p->kv_n_blocks;
    if (p->vit_chunk_rows > 0) eng->model->vit_chunk_rows = p->vit_chunk_rows;
    if (p->text_chunk_rows > 0) eng->model->text_chunk_rows = p->text_chunk_rows;
    hyocr_checkpoint_stats cs;
    hyocr_checkpoint_get_stats(eng->ck, &cs);
    eng->lm_head_tied = cs.lm_head_tied;
    collect_eos(eng);
    return true;
}

hyocr_engine *hyocr_engine_init(const hyocr_engine_params *p, GError **error)
{
    g_return_val_if_fail(p != NULL, NULL);
    if (!check_model_dir(p->model_dir, error)) return NULL;
    hyocr_engine *eng = g_new0(hyocr_engine, 1);
    eng->model_dir = g_strdup(p->model_dir);
    eng->memory_limit = p->memory_limit;
    eng->log = p->log;
    eng->log_data = p->log_data;
    if (!engine_load(eng, p, error)) {
        hyocr_engine_free(eng);
        return NULL;
    }
    return eng;
}

void hyocr_engine_free(hyocr_engine *eng)
{
    if (!eng) return;
    hyocr_model_free(eng->model);
    if (eng->be) hyocr_backend_free(eng->be);
    hyocr_tokenizer_free(eng->tok);
    hyocr_checkpoint_free(eng->ck);
    g_free(eng->model_dir);
    g_free(eng);
}

const hyocr_config *hyocr_engine_config(const hyocr_engine *eng)
{
    return hyocr_checkpoint_config(eng->ck);
}

const char *hyocr_engine_backend_name(const hyocr_engine *eng)
{
    return eng->be->ops->name;
}

void hyocr_engine_cancel(hyocr_engine *eng)
{
    g_atomic_int_set(&eng->cancel, 1);
}

void hyocr_engine_mem_info(hyocr_engine *eng, hyocr_mem_info *out)
{
    /* Both backends guard their counters with their own lock; the KV figure is
     * published by the job thread through an atomic. */
    eng->be->ops->mem_info(eng->be, out);
    out->kv_used = (int64_t)g_atomic_int_get(&eng->live_kv_blocks) * eng->kv_block_bytes;
}

void hyocr_job_result_clear(hyocr_job_result *r)
{
    if (!r) return;
    g_free(r->text);
    g_free(r->raw_text);
    if (r->token_ids) g_array_unref(r->token_ids);
    memset(r, 0, sizeof *r);
}

/* ---- one job ----------------------------------------------------------------- */

typedef struct {
    hyocr_engine           *eng;
    const hyocr_job_params *job;
    hyocr_job_result       *res;
    gint64                  t0, t_stage;
    hyocr_image            *img_owned;
    const hyocr_image      *img;
    hyocr_pixels           *px;
    hyocr_prompt           *prompt;
    hyocr_buf              *vision;
    int                     n_vision_rows;
    hyocr_kv_seq           *seq;
    hyocr_sampler          *sampler;
    hyocr_detokenizer      *detok;
    GString                *text;
    glong                   n_chars;
    float                  *logits;
    hyocr_tail_check        tail;
    int                     n_gen;
} job_state;

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

static void emit_simple(job_state *st, hyocr_event_type type)
{
    hyocr_event ev = { .type = type };
    emit(st, &ev);
}

static bool job_cancelled(void *data)
{
    job_state *st = data;
    return g_atomic_int_get(&st->eng->cancel) ||
           (st->job->cancellable && g_cancellable_is_cancelled(st->job->cancellable));
}

/* Stage time, after the device has finished the stage's queued work. */
static bool stage_done(job_state *st, double *ms, GError **error)
{
    if (!st->eng->be->ops->sync(st->eng->be, error)) return false;
    *ms = ms_since(st->t_stage);
    st->t_stage = g_get_monotonic_time();
    return true;
}

static bool prescale_size(int width, int height, int max_side, int *w, int *h)
{
    int long_edge = MAX(width, height);
    if (max_side <= 0 || long_edge <= max_side) return false;
    double s = (double)max_side / long_edge;
    *w = MAX(1, (int)lround(width * s));
    *h = MAX(1, (int)lround(height * s));
    return true;
}

static hyocr_image *prescale(const hyocr_image *img, int max_side)
{
    int w, h;
    if (!prescale_size(img->width, img->height, max_side, &w, &h)) return NULL;
    return hyocr_image_resize_lanczos(img, w, h);
}

static bool load_image(job_state *st, GError **error)
{
    const hyocr_job_params *job = st->job;
    if (!job->image && !job->image_path) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, "job has no image (path or decoded)");
        return false;
    }
    if (job->image) {
        st->img_owned = prescale(job->image, job->max_side);
        st->img = st->img_owned ? st->img_owned : job->image;
        return true;
    }
    hyocr_image_options opts = { .max_side = job->max_side };
    st->img_owned = hyocr_image_load(job->image_path, &opts, error);
    st->img = st->img_owned;
    return st->img != NULL;
}

static bool check_fits(job_state *st, GError **error)
{
    int n = st->prompt->n, limit = st->eng->max_model_len;
    if (n + 1 <= limit) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_TOO_LONG,
                _("the prompt takes %d tokens (%d of them for the image) and leaves no room to answer within "
                "max_model_len %d; use a smaller --max-side or a larger max_model_len"),
                n, st->prompt->n_image, limit);
    return false;
}

static bool preprocess(job_state *st, GError **error)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    const hyocr_job_params *job = st->job;
    if (!load_image(st, error)) return false;
    st->px = hyocr_pixels_from_image(st->img, &cfg->processor, error);
    if (!st->px) return false;
    g_autofree char *text = hyocr_task_prompt(job->task, cfg->version, job->fields, job->custom_prompt, error);
    if (!text) return false;
    st->prompt = hyocr_prompt_build(st->eng->tok, cfg, text, st->px->grid_h, st->px->grid_w, error);
    if (!st->prompt || !check_fits(st, error)) return false;
    if (!stage_done(st, &st->res->timings.preprocess_ms, error)) return false;
    hyocr_event ev = { .type = HYOCR_EVENT_PREPROCESS, .prompt = st->prompt, .pixels = st->px };
    emit(st, &ev);
    return true;
}

/* ---- memory plan and the up-front check ---------------------------------------- */

typedef struct {
    hyocr_engine        *eng;
    hyocr_memplan_params p;
    int64_t              budget;     /* 0: unknown, nothing is refused */
    bool                 is_limit;   /* the budget is the memory limit (else the card's free memory) */
} memcheck;

/* What a job may take: the memory limit (a fraction resolved as the backends
 * do), or on CUDA what the card has free plus what we hold already. */
static void memcheck_budget(memcheck *mc, const hyocr_mem_info *mi)
{
    hyocr_engine *eng = mc->eng;
    int64_t lim = eng->memory_limit;
    if (lim < 0) lim = mi->total > 0 ? (int64_t)((double)mi->total * (double)-lim / 1e6) : 0;
    mc->is_limit = lim > 0;
    mc->budget = lim;
    if (!mc->is_limit && eng->be->kind == HYOCR_BACKEND_CUDA && mi->total > 0)
        mc->budget = mi->free + mi->weights + mi->kv_reserved + mi->workspace;
}

/* at_rest: the model holds no scratch now, so the backend's workspace figure is
 * its own scratch alone and may replace the planned one when larger. */
static void memcheck_init(memcheck *mc, hyocr_engine *eng, bool at_rest)
{
    memset(mc, 0, sizeof *mc);
    mc->eng = eng;
    hyocr_memplan_params_init(&mc->p, eng->be->kind);
    mc->p.act_elem = eng->be->dtype == HYOCR_COMPUTE_F32 ? 4 : 2;
    mc->p.lm_head_tied = eng->lm_head_tied;
    mc->p.kv_block_size = eng->model->kv_block_size;
    mc->p.kv_fixed_blocks = eng->kv_fixed_blocks;
    mc->p.max_model_len = eng->max_model_len;
    mc->p.vit_chunk_rows = eng->model->vit_chunk_rows;
    mc->p.text_chunk_rows = eng->model->text_chunk_rows;
    hyocr_mem_info mi;
    eng->be->ops->mem_info(eng->be, &mi);
    if (at_rest) mc->p.backend_bytes = MAX(mc->p.backend_bytes, mi.workspace);
    memcheck_budget(mc, &mi);
}

static void memcheck_plan(const memcheck *mc, int gh, int gw, int prompt, int max_new, hyocr_memplan *out)
{
    hyocr_memplan_for_job(hyocr_checkpoint_config(mc->eng->ck), &mc->p, gh, gw, prompt, max_new, out);
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
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, "preprocessor_config.json: patch size %d", pc->patch_size);
        return false;
    }
    if (!hyocr_smart_resize(h, w, pc->patch_size * pc->merge_size, pc->min_pixels, pc->max_pixels, &rh, &rw, error))
        return false;
    *gh = rh / pc->patch_size;
    *gw = rw / pc->patch_size;
    return true;
}

/* The largest --max-side (a multiple of 32) under which the job fits, 0 if none:
 * the image shrunk as the job's own path would shrink it. */
static int fit_max_side(const job_state *st, const memcheck *mc, hyocr_memplan *out)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    const hyocr_image *src = st->job->image ? st->job->image : st->img;
    int long_edge = MAX(src->width, src->height), n_now = st->px->grid_h * st->px->grid_w;
    for (int side = (long_edge - 1) / 32 * 32; side >= 32; side -= 32) {
        int w = src->width, h = src->height, gh, gw;
        if (st->job->image) prescale_size(src->width, src->height, side, &w, &h);
        else hyocr_image_fit_size(src->width, src->height, side, &w, &h);
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
        memcheck_plan(mc, st->px->grid_h, st->px->grid_w, st->prompt->n, mid, out);
        if (out->fits) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (best) memcheck_plan(mc, st->px->grid_h, st->px->grid_w, st->prompt->n, best, out);
    return best;
}

static char *memory_advice(const job_state *st, const memcheck *mc)
{
    GString *a = g_string_new(mc->is_limit ? _("raise --gpu-memory-limit")
                                           : _("free GPU memory (other programs hold it)"));
    hyocr_memplan fit;
    int side = fit_max_side(st, mc, &fit);
    if (side) {
        g_autofree char *need = hyocr_memplan_format_bytes(fit.total);
        g_string_append_printf(a, _(", or pass --max-side %d (needs %s)"), side, need);
    }
    int max_new = fit_max_new(st, mc, &fit);
    if (max_new) {
        g_autofree char *need = hyocr_memplan_format_bytes(fit.total);
        g_string_append_printf(a, _(", or lower --max-new-tokens to %d (needs %s)"), max_new, need);
    }
    return g_string_free(a, FALSE);
}

/* Refuses, before the vision tower, a job whose plan exceeds the budget, with
 * the numbers and what to change; nothing has been allocated for it yet. */
static bool check_memory(job_state *st, GError **error)
{
    memcheck mc;
    memcheck_init(&mc, st->eng, true);
    hyocr_memplan plan;
    memcheck_plan(&mc, st->px->grid_h, st->px->grid_w, st->prompt->n, st->job->max_new_tokens, &plan);
    if (plan.fits) return true;
    g_autofree char *parts = hyocr_memplan_describe(&plan);
    g_autofree char *advice = memory_advice(st, &mc);
    g_autofree char *need = hyocr_memplan_format_bytes(plan.total);
    g_autofree char *budget = hyocr_memplan_format_bytes(mc.budget);
    g_autofree char *have = mc.is_limit
        ? g_strdup_printf(_("the memory limit is %s"), budget)
        : g_strdup_printf(_("the GPU has %s for it (free plus what hyocr holds)"), budget);
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                _("this %d×%d page (%d×%d patches, %d prompt tokens, up to %d new) needs %s (%s) but %s: %s"),
                st->img->width, st->img->height, plan.grid_w, plan.grid_h, plan.prompt_tokens,
                st->job->max_new_tokens, need, parts, have, advice);
    return false;
}

static bool vision(job_state *st, GError **error)
{
    st->vision = hyocr_vision_forward(st->eng->model, st->px, &st->n_vision_rows, NULL, job_cancelled, st, error);
    if (!st->vision || !stage_done(st, &st->res->timings.vision_ms, error)) return false;
    emit_simple(st, HYOCR_EVENT_VISION);
    return true;
}

static float pick_penalty(const hyocr_config *cfg, float requested)
{
    if (requested >= 0) return requested;
    if (cfg->generation.repetition_penalty > 0) return cfg->generation.repetition_penalty;
    return cfg->version == HYOCR_MODEL_VERSION_1_5 ? 1.08f : 1.0f;
}

static bool prefill(job_state *st, GError **error)
{
    hyocr_engine *eng = st->eng;
    const hyocr_prompt *p = st->prompt;
    /* The pool is sized now, once the vision scratch is gone, to what the job
     * can ever hold: the two never share the memory, and decode never grows it. */
    int kv_tokens = hyocr_memplan_kv_tokens(p->n, st->job->max_new_tokens, eng->max_model_len);
    if (!hyocr_model_kv_resize(eng->model, kv_tokens, error)) return false;
    st->seq = hyocr_model_seq_new(eng->model);
    hyocr_text_seq q = {
        .ids = p->ids, .pos = p->pos, .n_new = p->n, .kv = st->seq, .image_embeds = st->vision,
        .n_image_rows = st->n_vision_rows, .image_token_id = p->ids[p->image_start],
    };
    bool ok = hyocr_text_forward(eng->model, &q, 1, st->logits, job_cancelled, st, error);
    eng->be->ops->buf_free(eng->be, st->vision);
    st->vision = NULL;
    if (!ok || !stage_done(st, &st->res->timings.prefill_ms, error)) return false;
    hyocr_sampler_accept(st->sampler, p->ids, p->n);
    g_atomic_int_set(&eng->live_kv_blocks, st->seq->n_blocks);
    emit_simple(st, HYOCR_EVENT_PREFILL);
    return true;
}

/* Picks, records and streams one token; returns the stop reason it causes. */
static hyocr_stop_reason take_token(job_state *st, int32_t *id_out)
{
    const hyocr_job_params *job = st->job;
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    int V = st->eng->model->cfg.text.vocab_size;
    if (job->on_logits) job->on_logits(st->logits, V, st->n_gen, job->logits_data);
    int32_t id = hyocr_sampler_sample(st->sampler, st->logits);
    hyocr_sampler_accept(st->sampler, &id, 1);
    g_array_append_val(st->res->token_ids, id);
    st->n_gen++;
    g_autofree char *piece = hyocr_detokenizer_push(st->detok, id);
    g_string_append(st->text, piece);
    st->n_chars += g_utf8_strlen(piece, -1);
    if (st->n_gen == 1) st->res->timings.first_token_ms = ms_since(st->t0);
    hyocr_event ev = { .type = HYOCR_EVENT_TOKEN, .token = id, .piece = piece };
    emit(st, &ev);
    *id_out = id;

    if (!job->ignore_eos && is_eos(st->eng, id)) return HYOCR_STOP_EOS;
    if (st->n_gen >= job->max_new_tokens) return HYOCR_STOP_MAX_NEW_TOKENS;
    if (st->prompt->n + st->n_gen >= st->eng->max_model_len) return HYOCR_STOP_MAX_MODEL_LEN;
    if (cfg->version == HYOCR_MODEL_VERSION_1_5 && !job->no_tail_stop &&
        hyocr_tail_check_should_stop(&st->tail, st->text->str, st->n_chars))
        return HYOCR_STOP_REPETITION;
    if (job_cancelled(st)) return HYOCR_STOP_CANCELLED;
    return HYOCR_STOP_NONE;
}

static bool decode(job_state *st, GError **error)
{
    hyocr_stop_reason stop;
    int32_t id;
    while ((stop = take_token(st, &id)) == HYOCR_STOP_NONE) {
        hyocr_text_seq q = { .ids = &id, .n_new = 1, .kv = st->seq };
        if (!hyocr_text_forward(st->eng->model, &q, 1, st->logits, NULL, NULL, error)) return false;
        g_atomic_int_set(&st->eng->live_kv_blocks, st->seq->n_blocks);
    }
    st->res->stop_reason = stop;
    if (!stage_done(st, &st->res->timings.decode_ms, error)) return false;
    if (stop == HYOCR_STOP_CANCELLED) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled after %d tokens"), st->n_gen);
        return false;
    }
    return true;
}

static bool validate_job(const hyocr_job_params *job, GError **error)
{
    if (job->max_new_tokens <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    "max_new_tokens must be at least 1 (got %d)", job->max_new_tokens);
        return false;
    }
    if ((int)job->task < 0 || (int)job->task >= HYOCR_TASK_COUNT) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, "unknown task %d", (int)job->task);
        return false;
    }
    return true;
}

static bool job_setup(job_state *st, GError **error)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    const hyocr_job_params *job = st->job;
    int V = st->eng->model->cfg.text.vocab_size;
    st->logits = g_try_new(float, V);
    if (!st->logits) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, "cannot allocate %d logits", V);
        return false;
    }
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
    hyocr_tail_check_init(&st->tail);
    return true;
}

static bool run_stages(job_state *st, GError **error)
{
    return validate_job(st->job, error) && job_setup(st, error) && preprocess(st, error) &&
           check_memory(st, error) && vision(st, error) && prefill(st, error) && decode(st, error);
}

/* Texts, sizes, timings and memory, also for failed or cancelled jobs. */
static void finish_result(job_state *st)
{
    hyocr_job_result *r = st->res;
    const hyocr_config *cfg = hyocr_checkpoint_config(st->eng->ck);
    if (st->detok) {
        g_autofree char *rest = hyocr_detokenizer_flush(st->detok);
        g_string_append(st->text, rest);
        /* bytes that never completed a character still reach the stream (as U+FFFD),
         * so the pieces always add up to raw_text */
        if (*rest) {
            hyocr_event ev = { .type = HYOCR_EVENT_TOKEN, .token = -1, .piece = rest,
                               .n_generated = st->n_gen };
            emit(st, &ev);
        }
    }
    r->raw_text = st->text ? g_strdup(st->text->str) : g_strdup("");
    r->text = hyocr_clean_repeated_substrings(r->raw_text, cfg->version);
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
    st->eng->be->ops->mem_info(st->eng->be, &r->memory);
    if (st->seq) r->memory.kv_used = (int64_t)st->seq->n_blocks * hyocr_model_kv_bytes_per_block(st->eng->model);
}

static void job_state_clear(job_state *st)
{
    hyocr_engine *eng = st->eng;
    if (st->vision) eng->be->ops->buf_free(eng->be, st->vision);
    g_atomic_int_set(&eng->live_kv_blocks, 0);
    hyocr_model_seq_free(eng->model, st->seq);
    hyocr_model_trim_scratch(eng->model);
    /* An idle engine holds its weights only; the next job sizes its own pool. */
    hyocr_model_kv_resize(eng->model, 0, NULL);
    hyocr_sampler_free(st->sampler);
    hyocr_detokenizer_free(st->detok);
    if (st->text) g_string_free(st->text, TRUE);
    g_free(st->logits);
    hyocr_prompt_free(st->prompt);
    hyocr_pixels_free(st->px);
    hyocr_image_free(st->img_owned);
}

static void emit_end(job_state *st, bool ok, const GError *err)
{
    hyocr_event ev = { .type = HYOCR_EVENT_DONE };
    if (ok) {
        ev.piece = st->res->text;
    } else if (err && g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED)) {
        ev.type = HYOCR_EVENT_CANCELLED;
        st->res->stop_reason = HYOCR_STOP_CANCELLED;
    } else {
        ev.type = HYOCR_EVENT_ERROR;
        ev.error = err;
    }
    emit(st, &ev);
}

bool hyocr_engine_run(hyocr_engine *eng, const hyocr_job_params *job, hyocr_job_result *out, GError **error)
{
    g_return_val_if_fail(eng != NULL && job != NULL, false);
    if (!g_atomic_int_compare_and_exchange(&eng->busy, 0, 1)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("the engine is already running a job; wait for it or use another engine"));
        return false;
    }
    g_atomic_int_set(&eng->cancel, 0);
    hyocr_job_result local = { 0 };
    job_state st = { .eng = eng, .job = job, .res = out ? out : &local };
    memset(st.res, 0, sizeof *st.res);
    st.t0 = st.t_stage = g_get_monotonic_time();

    GError *err = NULL;
    bool ok = run_stages(&st, &err);
    finish_result(&st);
    emit_end(&st, ok, err);
    job_state_clear(&st);
    hyocr_job_result_clear(&local);
    if (err) g_propagate_error(error, err);
    g_atomic_int_set(&eng->busy, 0);
    return ok;
}

/* ---- memory plans for callers ------------------------------------------------- */

void hyocr_engine_memory_plan(hyocr_engine *eng, int grid_h, int grid_w, int prompt_tokens, int max_new_tokens,
                              hyocr_memplan *out)
{
    g_return_if_fail(eng != NULL && out != NULL);
    memcheck mc;
    memcheck_init(&mc, eng, !g_atomic_int_get(&eng->busy));
    memcheck_plan(&mc, grid_h, grid_w, prompt_tokens, max_new_tokens, out);
}

bool hyocr_engine_plan_job(hyocr_engine *eng, const hyocr_job_params *job, hyocr_memplan *out, GError **error)
{
    g_return_val_if_fail(eng != NULL && job != NULL && out != NULL, false);
    const hyocr_config *cfg = hyocr_checkpoint_config(eng->ck);
    job_state st = { .eng = eng, .job = job };
    int gh = 0, gw = 0;
    g_autofree char *text = NULL;
    g_autoptr(hyocr_prompt) prompt = NULL;
    bool ok = validate_job(job, error) && load_image(&st, error) &&
              grid_for(cfg, st.img->width, st.img->height, &gh, &gw, error) &&
              (text = hyocr_task_prompt(job->task, cfg->version, job->fields, job->custom_prompt, error)) &&
              (prompt = hyocr_prompt_build(eng->tok, cfg, text, gh, gw, error));
    hyocr_image_free(st.img_owned);
    if (!ok) return false;
    hyocr_engine_memory_plan(eng, gh, gw, prompt->n, job->max_new_tokens, out);
    return true;
}
