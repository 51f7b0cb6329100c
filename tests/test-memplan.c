/* The memory plan against what the CPU backend really allocates (weights and KV
 * exactly, the job's peak exactly too: the plan replays the allocations), with
 * the default and with small chunk sizes and a fixed KV pool; chunked vision and
 * prefill against unchunked runs (bit-identical at multiples of 512 rows); and
 * the up-front refusal under a memory limit, which names the numbers, carries
 * its plan and the advice (what to change, to what) as data, allocates nothing
 * and leaves the engine usable. */
#include "error.h"
#include "hyocr.h"
#include "memplan.h"
#include "model.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEW 12

static void expect_in(const char *msg, const char *needle)
{
    if (!strstr(msg, needle)) g_test_fail_printf("message “%s” does not mention “%s”", msg, needle);
}

/* ---- arithmetic ------------------------------------------------------------------ */

static void test_arithmetic(void)
{
    /* vLLM's count for a 2048² page (128×128 patches): 4162 LLM tokens. */
    g_assert_cmpint(hyocr_memplan_image_tokens(128, 128), ==, 4162);
    g_assert_cmpint(hyocr_memplan_image_tokens(4, 6), ==, 2 * 4 + 2);
    /* The decode loop feeds back all but the last token and stops before max_model_len. */
    g_assert_cmpint(hyocr_memplan_kv_tokens(100, 1, 0), ==, 100);
    g_assert_cmpint(hyocr_memplan_kv_tokens(100, 256, 0), ==, 355);
    g_assert_cmpint(hyocr_memplan_kv_tokens(100, 256, 300), ==, 299);
    g_assert_cmpint(hyocr_memplan_kv_tokens(4191, 256, 131072), ==, 4446);

    for (int k = 0; k < 2; k++) {
        const char *ckpt = k ? "ckpt-nested" : "ckpt-flat";
        g_autofree char *dir = hyocr_test_data(ckpt, NULL);
        if (!hyocr_test_require(dir)) return;
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dir, &err);
        g_assert_no_error(err);
        hyocr_checkpoint_stats st;
        hyocr_checkpoint_get_stats(ck, &st);
        const hyocr_config *cfg = hyocr_checkpoint_config(ck);
        /* Every used tensor is uploaded once (the tied head is not a tensor of its own). */
        for (int elem = 2; elem <= 4; elem += 2)
            g_assert_cmpint(hyocr_memplan_weights(cfg, elem, elem, st.lm_head_tied), ==, st.n_params * elem);
        /* The CPU keeps a BF16 checkpoint's matrices in 2 bytes: all but the vectors and the
         * position table (what a loaded engine measures: test_engine_plan). ckpt-nested is the
         * transformers-5 export, F32 and F16. */
        g_assert_true(st.bf16_only == (k == 0));
        int64_t mixed = hyocr_memplan_weights(cfg, 4, 2, st.lm_head_tied);
        g_assert_cmpint(mixed, <, st.n_params * 4);
        g_assert_cmpint(mixed, >, st.n_params * 2);
        const hyocr_text_config *t = &cfg->text;
        g_assert_cmpint(hyocr_memplan_kv_per_token(cfg, 2), ==, t->num_layers * 2 * t->num_kv_heads * t->head_dim * 2);

        /* A bigger page never needs less, and its phases add up as documented. */
        hyocr_memplan_params p;
        hyocr_memplan_params_init(&p, HYOCR_BACKEND_CUDA);
        hyocr_memplan a, b;
        hyocr_memplan_for_job(cfg, &p, 8, 8, 60, 16, &a);
        hyocr_memplan_for_job(cfg, &p, 16, 12, 150, 16, &b);
        g_assert_cmpint(b.vision, >, a.vision);
        g_assert_cmpint(b.total, >, a.total);
        g_assert_cmpint(a.total, ==, MAX(a.peak_vision, a.peak_text));
        g_assert_cmpint(a.peak_text, ==, a.weights + a.backend + a.kv + MAX(a.image_embeds, a.pick) + a.prefill);
        g_assert_cmpint(a.image_embeds, ==, (int64_t)a.image_tokens * cfg->vision.out_hidden_size * 2);
        g_assert_cmpint(a.kv, ==, (a.kv_tokens + 15) / 16 * a.kv_per_block);
        g_autofree char *d = hyocr_memplan_describe(&a);
        expect_in(d, "weights");
        expect_in(d, "backend scratch");

        /* Vision weights off the device: the text phase drops exactly their bytes,
         * the vision phase keeps them, and the description says so. */
        g_assert_cmpint(a.vision_weights, >, 0);
        g_assert_cmpint(a.vision_weights, <, a.weights);
        p.vision_offload = true;
        hyocr_memplan off;
        hyocr_memplan_for_job(cfg, &p, 8, 8, 60, 4000, &off);
        p.vision_offload = false;
        hyocr_memplan on;
        hyocr_memplan_for_job(cfg, &p, 8, 8, 60, 4000, &on);
        g_assert_true(off.vision_offload);
        g_assert_cmpint(on.peak_text - off.peak_text, ==, on.vision_weights);
        g_assert_cmpint(off.peak_vision, ==, on.peak_vision);
        if (off.peak_text >= off.peak_vision) {
            g_autofree char *d2 = hyocr_memplan_describe(&off);
            expect_in(d2, "vision weights off the device");
        }
    }
}

/* ---- engine runs against the plan ------------------------------------------------- */

typedef struct {
    const char *ckpt, *image;
    int         vit_rows, text_rows, kv_blocks;
} run_case;

typedef struct {
    hyocr_engine  *eng;
    hyocr_mem_info at_prefill;
    int            prompt_tokens;
    bool           saw_vision;
} run_watch;

static void watch(const hyocr_event *ev, void *data)
{
    run_watch *w = data;
    if (ev->type == HYOCR_EVENT_PREPROCESS) w->prompt_tokens = ev->prompt_tokens;
    if (ev->type == HYOCR_EVENT_VISION) w->saw_vision = true;
    if (ev->type == HYOCR_EVENT_PREFILL) hyocr_engine_mem_info(w->eng, &w->at_prefill);
}

static hyocr_engine *open_engine(const run_case *c, int64_t limit, GError **error)
{
    g_autofree char *dir = hyocr_test_data(c->ckpt, NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    ep.memory_limit = limit;
    ep.vit_chunk_rows = c->vit_rows;
    ep.text_chunk_rows = c->text_rows;
    ep.kv_n_blocks = c->kv_blocks;
    return hyocr_engine_init(&ep, error);
}

static void job_for(hyocr_job_params *jp, const char *image_path, run_watch *w)
{
    hyocr_job_params_init(jp);
    jp->image_path = image_path;
    jp->max_new_tokens = MAX_NEW;
    jp->ignore_eos = true;
    jp->on_event = watch;
    jp->user_data = w;
}

static void test_engine_plan(gconstpointer data)
{
    const run_case *c = data;
    g_autofree char *img = hyocr_test_data("images", c->image, NULL);
    g_autofree char *dir = hyocr_test_data(c->ckpt, "config.json", NULL);
    if (!hyocr_test_require(img) || !hyocr_test_require(dir)) return;
    g_autoptr(GError) err = NULL;
    /* A fresh engine per run: the backend's peak counts from its creation. */
    g_autoptr(hyocr_engine) eng = open_engine(c, 0, &err);
    g_assert_no_error(err);
    run_watch w = { .eng = eng };
    hyocr_job_params jp;
    job_for(&jp, img, &w);

    hyocr_memplan plan;
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &plan, &err));
    g_assert_no_error(err);
    g_assert_true(plan.fits);
    g_assert_cmpint(plan.budget, ==, 0);
    g_assert_cmpint(plan.backend, ==, 0);
    hyocr_mem_info idle;
    hyocr_engine_mem_info(eng, &idle);
    g_assert_cmpint(idle.weights, ==, plan.weights);
    g_assert_cmpint(idle.workspace, ==, 0);
    g_assert_cmpint(idle.kv_reserved, ==, c->kv_blocks ? plan.kv : 0);

    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);
    g_assert_true(w.saw_vision);
    g_assert_cmpint(res.token_ids->len, ==, MAX_NEW);
    g_assert_cmpint(w.prompt_tokens, ==, plan.prompt_tokens);
    g_assert_cmpint(res.grid_h, ==, plan.grid_h);
    g_assert_cmpint(res.grid_w, ==, plan.grid_w);
    g_assert_cmpint(res.n_image_tokens, ==, plan.image_tokens);
    /* Weights and KV exactly; the pool is the job's own size, not a doubling step. */
    g_assert_cmpint(w.at_prefill.weights, ==, plan.weights);
    g_assert_cmpint(w.at_prefill.kv_reserved, ==, plan.kv + plan.draft_ctx);
    g_assert_cmpint(plan.kv_tokens, ==, c->kv_blocks ? c->kv_blocks * 16 : plan.prompt_tokens + MAX_NEW - 1);
    /* The plan replays the allocations, so the real peak is its total, not just under it. */
    g_test_message("%s %s: planned %" G_GINT64_FORMAT " (vision %" G_GINT64_FORMAT ", text %" G_GINT64_FORMAT
                   "), peak %" G_GINT64_FORMAT, c->ckpt, c->image, plan.total, plan.peak_vision, plan.peak_text,
                   res.memory.peak);
    g_assert_cmpint(res.memory.peak, <=, plan.total);
    if (plan.draft_ctx) {
        /* speculating, the plan adds the prompt's taps and the draft's scratch to the prefill's
         * peak, which the job never holds at once: an upper bound by at most those */
        g_assert_cmpint(res.speculative_rounds, >, 0);
        g_assert_cmpint(plan.draft_weights, >, 0);
        g_assert_cmpint(plan.total - res.memory.peak, <=, plan.prefill_taps + plan.draft_scratch);
    } else {
        g_assert_cmpint(res.memory.peak, ==, plan.total);
    }
    hyocr_job_result_clear(&res);

    /* Idle again: weights (and a fixed pool) only. */
    hyocr_engine_mem_info(eng, &idle);
    g_assert_cmpint(idle.workspace, ==, 0);
    g_assert_cmpint(idle.kv_reserved, ==, c->kv_blocks ? plan.kv : 0);
}

/* ---- chunked vision and prefill ----------------------------------------------------- */

typedef struct {
    hyocr_checkpoint *ck;
    hyocr_backend    *be;
    hyocr_model      *m;
} loaded;

static void load(loaded *l)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", NULL);
    g_autoptr(GError) err = NULL;
    l->ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    hyocr_backend_params bp = { .n_threads = 2 };
    l->be = hyocr_backend_cpu_init(&bp, &err);
    g_assert_no_error(err);
    l->m = hyocr_model_load(l->be, l->ck, &err);
    g_assert_no_error(err);
    /* No storage until the first reservation. */
    g_assert_true(hyocr_model_kv_init(l->m, 16, 0, 0, 0, &err));
    g_assert_null(l->m->kv_pool);
}

static void unload(loaded *l)
{
    hyocr_model_free(l->m);
    hyocr_backend_free(l->be);
    hyocr_checkpoint_free(l->ck);
}

/* A 64×48 grid of deterministic pseudo-random pixels: bigger than any fixture,
 * so 512-row chunks split the tower, the merger's rows and its cells. */
static hyocr_pixels *synthetic_pixels(void)
{
    hyocr_pixels *px = g_new0(hyocr_pixels, 1);
    px->grid_t = 1;
    px->grid_h = 64;
    px->grid_w = 48;
    px->n_patches = px->grid_h * px->grid_w;
    px->patch_dim = 768;
    px->data = g_new(float, (size_t)px->n_patches * px->patch_dim);
    uint32_t s = 12345;
    for (size_t i = 0; i < (size_t)px->n_patches * px->patch_dim; i++) {
        s = s * 1664525u + 1013904223u;
        px->data[i] = (float)(s >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
    }
    return px;
}

typedef struct {
    float *vision, *merger;
    size_t n_vision, n_merger;
} vision_run;

static hyocr_buf *run_vision(hyocr_model *m, const hyocr_pixels *px, int rows_per_chunk, vision_run *out,
                             int *n_rows)
{
    m->vit_chunk_rows = rows_per_chunk;
    hyocr_vision_debug dbg = { .want = true };
    g_autoptr(GError) err = NULL;
    hyocr_buf *v = hyocr_vision_forward(m, px, n_rows, &dbg, NULL, NULL, &err);
    g_assert_no_error(err);
    g_assert_nonnull(v);
    *out = (vision_run){ dbg.vision_out, dbg.merger_out, dbg.vision_out_n, dbg.merger_out_n };
    return v;
}

static void vision_run_clear(vision_run *r)
{
    g_free(r->vision);
    g_free(r->merger);
}

static void assert_near(const char *what, const float *a, const float *b, size_t n)
{
    float scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmaxf(scale, fabsf(b[i]));
        worst = fmaxf(worst, fabsf(a[i] - b[i]));
    }
    g_test_message("%s: max|Δ| %.3g (max|ref| %.3g)", what, worst, scale);
    if (!(worst <= 1e-5f * scale)) g_test_fail_printf("%s: max|Δ| %g exceeds 1e-5 × %g", what, worst, scale);
}

/* Polled before each ViT block and before the merger: what the scratch holds then. */
typedef struct {
    hyocr_backend *be;
    int64_t        at_block0, at_merger, max_during_blocks;
    int            polls, n_layers;
} vision_probe;

static bool probe_poll(void *data)
{
    vision_probe *p = data;
    hyocr_mem_info mi;
    p->be->ops->mem_info(p->be, &mi);
    if (p->polls == 0) p->at_block0 = mi.workspace;
    if (p->polls < p->n_layers) p->max_during_blocks = MAX(p->max_during_blocks, mi.workspace);
    else p->at_merger = mi.workspace;
    p->polls++;
    return false;
}

/* Tower scratch on the real backend against the plan, and against the design
 * written out here: x (fp32), q|k|v and attention output whole, the norm output,
 * delta and MLP hidden one chunk each. */
static void check_tower_scratch(loaded *l, const hyocr_pixels *px, int rows_per_chunk)
{
    hyocr_model *m = l->m;
    m->vit_chunk_rows = rows_per_chunk;
    vision_probe p = { .be = l->be, .n_layers = m->cfg.vision.num_layers };
    g_autoptr(GError) err = NULL;
    int rows;
    hyocr_buf *v = hyocr_vision_forward(m, px, &rows, NULL, probe_poll, &p, &err);
    g_assert_no_error(err);
    g_assert_cmpint(p.polls, ==, p.n_layers + 1);

    hyocr_memplan_params pp;
    hyocr_memplan_params_init(&pp, HYOCR_BACKEND_CPU);
    pp.vit_chunk_rows = rows_per_chunk;
    hyocr_memplan plan;
    hyocr_memplan_for_job(&m->cfg, &pp, px->grid_h, px->grid_w, rows + 10, 1, &plan);
    int64_t n = px->n_patches, C = m->cfg.vision.hidden_size, I = m->cfg.vision.intermediate_size;
    int64_t k = MIN(n, rows_per_chunk);
    g_assert_cmpint(p.at_block0, ==, (n * C + n * 3 * C + n * C + 2 * k * C + k * I) * 4);
    g_assert_cmpint(p.at_block0, ==, plan.vision_blocks);
    g_assert_cmpint(p.max_during_blocks, ==, p.at_block0);
    g_assert_cmpint(p.at_merger, ==, n * C * 4);   /* only the residual is left for the merger */
    g_assert_cmpint(plan.vision_embed, ==, (n * 768 + n * C) * 4);
    g_assert_cmpint(plan.image_embeds, ==, (int64_t)rows * m->cfg.vision.out_hidden_size * 4);
    l->be->ops->buf_free(l->be, v);
}

static void test_chunked_vision(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", "config.json", NULL);
    if (!hyocr_test_require(dir)) return;
    loaded l;
    load(&l);
    g_autoptr(hyocr_pixels) px = synthetic_pixels();
    vision_run whole, c512, c100;
    int rows = 0;
    l.be->ops->buf_free(l.be, run_vision(l.m, px, 1 << 20, &whole, &rows));
    l.be->ops->buf_free(l.be, run_vision(l.m, px, 512, &c512, &rows));
    l.be->ops->buf_free(l.be, run_vision(l.m, px, 100, &c100, &rows));
    g_assert_cmpint(rows, ==, hyocr_memplan_image_tokens(64, 48));
    g_assert_cmpuint(c512.n_vision, ==, whole.n_vision);
    g_assert_cmpuint(c512.n_merger, ==, whole.n_merger);
    g_assert_true(memcmp(c512.vision, whole.vision, whole.n_vision * sizeof(float)) == 0);
    g_assert_true(memcmp(c512.merger, whole.merger, whole.n_merger * sizeof(float)) == 0);
    /* Chunks that are not tile multiples only have to agree to rounding. */
    assert_near("vision, 100-row chunks", c100.vision, whole.vision, whole.n_vision);
    assert_near("merger, 100-row chunks", c100.merger, whole.merger, whole.n_merger);
    check_tower_scratch(&l, px, 1 << 20);
    check_tower_scratch(&l, px, 512);
    check_tower_scratch(&l, px, 100);
    /* The scratch is gone after the tower, whatever the chunking. */
    hyocr_mem_info mi;
    l.be->ops->mem_info(l.be, &mi);
    g_assert_cmpint(mi.workspace, ==, 0);
    vision_run_clear(&whole);
    vision_run_clear(&c512);
    vision_run_clear(&c100);
    unload(&l);
}

/* Prefill of a prompt with the synthetic image, then greedy steps; the logits of
 * every step, concatenated. */
static float *prefill_and_decode(hyocr_model *m, const int32_t *ids, int n, const hyocr_buf *img, int n_img,
                                 int rows_per_chunk, int steps)
{
    m->text_chunk_rows = rows_per_chunk;
    int V = m->cfg.text.vocab_size;
    float *logits = g_new(float, (size_t)V * (steps + 1));
    hyocr_kv_seq *seq = hyocr_model_seq_new(m);
    hyocr_text_seq q = { .ids = ids, .n_new = n, .kv = seq, .image_embeds = img, .n_image_rows = n_img,
                         .image_token_id = m->cfg.image_token_id };
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_text_forward(m, &q, 1, logits, NULL, NULL, &err));
    g_assert_no_error(err);
    for (int s = 0; s < steps; s++) {
        const float *row = logits + (size_t)V * s;
        int32_t best = 0;
        for (int i = 1; i < V; i++)
            if (row[i] > row[best]) best = i;
        q = (hyocr_text_seq){ .ids = &best, .n_new = 1, .kv = seq };
        g_assert_true(hyocr_text_forward(m, &q, 1, logits + (size_t)V * (s + 1), NULL, NULL, &err));
        g_assert_no_error(err);
    }
    g_assert_cmpint(seq->n_tokens, ==, n + steps);
    hyocr_model_seq_free(m, seq);
    return logits;
}

/* The prefill's chunk rule, which text.c and the plan share: a call of up to twice the setting
 * is one chunk, a longer one runs in chunks of the setting. */
static void test_text_chunk(void)
{
    g_assert_cmpint(hyocr_memplan_text_chunk(1087, 1024), ==, 1087);   /* a 1024² page: one pass */
    g_assert_cmpint(hyocr_memplan_text_chunk(2048, 1024), ==, 2048);
    g_assert_cmpint(hyocr_memplan_text_chunk(2049, 1024), ==, 1024);
    g_assert_cmpint(hyocr_memplan_text_chunk(4191, 1024), ==, 1024);   /* a 2048² page: 1024-row chunks */
    g_assert_cmpint(hyocr_memplan_text_chunk(16, 1024), ==, 16);
    g_assert_cmpint(hyocr_memplan_text_chunk(0, 1024), ==, 1);
    g_assert_cmpint(hyocr_memplan_text_chunk(5, 0), ==, 1);            /* a setting below 1 is 1 row */
}

static void test_chunked_prefill(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", "config.json", NULL);
    if (!hyocr_test_require(dir)) return;
    loaded l;
    load(&l);
    g_autoptr(hyocr_pixels) px = synthetic_pixels();
    vision_run vr;
    int n_img = 0;
    hyocr_buf *img = run_vision(l.m, px, 1 << 20, &vr, &n_img);
    vision_run_clear(&vr);

    /* 200 text tokens, the image, then text up to 1300: three 512-row chunks, the
     * image spanning the first two. */
    const int n = 1300, before = 200, steps = 4, V = l.m->cfg.text.vocab_size;
    g_autofree int32_t *ids = g_new(int32_t, n);
    uint32_t s = 777;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        ids[i] = i >= before && i < before + n_img ? l.m->cfg.image_token_id : (int32_t)((s >> 8) % 1200);
    }
    g_autofree float *whole = prefill_and_decode(l.m, ids, n, img, n_img, 1 << 20, steps);
    g_autofree float *c512 = prefill_and_decode(l.m, ids, n, img, n_img, 512, steps);
    g_autofree float *c100 = prefill_and_decode(l.m, ids, n, img, n_img, 100, steps);
    size_t all = (size_t)V * (steps + 1);
    g_assert_true(memcmp(c512, whole, all * sizeof(float)) == 0);
    assert_near("logits, 100-row chunks", c100, whole, all);

    /* Image rows that do not match the placeholders: refused before any work. */
    hyocr_kv_seq *seq = hyocr_model_seq_new(l.m);
    hyocr_text_seq q = { .ids = ids, .n_new = n, .kv = seq, .image_embeds = img, .n_image_rows = n_img - 1,
                         .image_token_id = l.m->cfg.image_token_id };
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_text_forward(l.m, &q, 1, whole, NULL, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_cmpint(seq->n_tokens, ==, 0);
    hyocr_model_seq_free(l.m, seq);
    l.be->ops->buf_free(l.be, img);
    unload(&l);
}

/* A growable pool sized per job: exact, resizable only while no sequence holds blocks. */
static void test_kv_resize(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", "config.json", NULL);
    if (!hyocr_test_require(dir)) return;
    loaded l;
    load(&l);
    g_autoptr(GError) err = NULL;
    int64_t block = hyocr_model_kv_bytes_per_block(l.m);
    hyocr_mem_info mi;
    g_assert_true(hyocr_model_kv_resize(l.m, 100, &err));
    l.be->ops->mem_info(l.be, &mi);
    g_assert_cmpint(mi.kv_reserved, ==, 7 * block);
    hyocr_kv_seq *seq = hyocr_model_seq_new(l.m);
    g_assert_true(hyocr_model_kv_reserve(l.m, seq, 10, &err));
    g_assert_false(hyocr_model_kv_resize(l.m, 200, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    hyocr_model_seq_free(l.m, seq);
    g_assert_true(hyocr_model_kv_resize(l.m, 0, &err));
    l.be->ops->mem_info(l.be, &mi);
    g_assert_cmpint(mi.kv_reserved, ==, 0);
    g_assert_cmpint(mi.peak, ==, mi.weights + 7 * block);
    unload(&l);
}

/* ---- the up-front refusal ------------------------------------------------------------ */

typedef struct {
    char         *big, *small;
    hyocr_memplan p_big, p_small;
} refusal_fix;

static gboolean refusal_setup(refusal_fix *f, const run_case *c)
{
    f->big = hyocr_test_data("images", "big_420x300.png", NULL);
    f->small = hyocr_test_data("images", "tiny_40x30.png", NULL);
    g_autofree char *dir = hyocr_test_data(c->ckpt, "config.json", NULL);
    if (!hyocr_test_require(f->big) || !hyocr_test_require(f->small) || !hyocr_test_require(dir)) return FALSE;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(c, 0, &err);
    g_assert_no_error(err);
    run_watch w = { .eng = eng };
    hyocr_job_params jp;
    job_for(&jp, f->big, &w);
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &f->p_big, &err));
    jp.image_path = f->small;
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &f->p_small, &err));
    g_assert_no_error(err);
    g_assert_cmpint(f->p_big.total, >, f->p_small.total);
    return TRUE;
}

/* The plan a refusal carries: the one hyocr_engine_plan_job gives for the same
 * job, and the engine's words name none of the front ends' options. */
static const hyocr_memplan *refused_plan(const GError *err, const hyocr_memplan *planned)
{
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    const hyocr_memplan *r = hyocr_error_get_memplan(err);
    g_assert_nonnull(r);
    g_assert_false(r->fits);
    g_assert_cmpint(r->total, ==, planned->total);
    g_assert_cmpint(r->budget, ==, planned->budget);
    g_assert_cmpint(r->image_width, ==, planned->image_width);
    g_assert_cmpint(r->image_height, ==, planned->image_height);
    g_assert_cmpint(r->backend_kind, ==, HYOCR_BACKEND_CPU);
    g_assert_cmpmem(&r->advice, sizeof r->advice, &planned->advice, sizeof planned->advice);
    g_assert_null(strstr(err->message, "--"));
    return r;
}

static void refusal_clear(refusal_fix *f)
{
    g_free(f->big);
    g_free(f->small);
}

static void test_refusal(void)
{
    const run_case c = { "ckpt-flat", NULL, 0, 0, 0 };
    refusal_fix f;
    if (!refusal_setup(&f, &c)) return;
    int64_t limit = (f.p_big.total + f.p_small.total) / 2;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(&c, limit, &err);
    g_assert_no_error(err);

    run_watch w = { .eng = eng };
    hyocr_job_params jp;
    job_for(&jp, f.big, &w);
    hyocr_memplan plan;
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &plan, &err));
    g_assert_cmpint(plan.budget, ==, limit);
    g_assert_true(plan.budget_is_limit);
    g_assert_false(plan.fits);
    g_assert_cmpint(plan.image_width, ==, 420);
    g_assert_cmpint(plan.image_height, ==, 300);
    /* The advice: the largest long side (a multiple of 32, below the page's) at
     * which it fits; a smaller answer does not help a page whose vision pass
     * sets the peak. */
    const hyocr_memplan_advice *adv = &plan.advice;
    g_assert_cmpint(adv->max_side, >, 0);
    g_assert_cmpint(adv->max_side, <, 420);
    g_assert_cmpint(adv->max_side % 32, ==, 0);
    g_assert_cmpint(adv->max_side_total, <=, limit);
    g_assert_cmpint(adv->max_side_total, >, 0);

    hyocr_mem_info before, after;
    hyocr_engine_mem_info(eng, &before);
    hyocr_job_result res = { 0 };
    g_assert_false(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_test_message("%s", err->message);
    refused_plan(err, &plan);
    g_autofree char *need = hyocr_memplan_format_bytes(plan.total);
    g_autofree char *lim = hyocr_memplan_format_bytes(limit);
    g_autofree char *weights = hyocr_memplan_format_bytes(plan.weights);
    g_autofree char *page = g_strdup_printf("%d×%d page", 420, 300);
    expect_in(err->message, page);
    expect_in(err->message, need);
    expect_in(err->message, lim);
    expect_in(err->message, weights);
    expect_in(err->message, "memory limit");
    g_autofree char *side_words = g_strdup_printf("long side of %d pixels", adv->max_side);
    expect_in(err->message, side_words);
    /* Refused before the vision tower: nothing was allocated for it. */
    g_assert_false(w.saw_vision);
    hyocr_engine_mem_info(eng, &after);
    g_assert_cmpint(after.peak, ==, before.peak);
    g_assert_cmpint(after.workspace, ==, 0);
    g_assert_cmpint(after.kv_reserved, ==, 0);
    /* A copy (as a batch's results and the app's tasks pass errors on) keeps the plan. */
    g_autoptr(GError) copy = g_error_copy(err);
    refused_plan(copy, &plan);
    hyocr_job_result_clear(&res);
    g_clear_error(&err);

    /* The suggested max_side really fits, and so does a smaller page. */
    jp.max_side = adv->max_side;
    w = (run_watch){ .eng = eng };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);
    g_assert_cmpint(res.memory.peak, <=, limit);
    hyocr_job_result_clear(&res);
    jp.max_side = 0;
    jp.image_path = f.small;
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);
    g_assert_cmpint(res.token_ids->len, ==, MAX_NEW);
    g_assert_cmpint(res.memory.peak, <=, limit);
    hyocr_job_result_clear(&res);
    refusal_clear(&f);
}

/* With many new tokens the KV pool sets the total; the advice then includes a
 * max_new_tokens that fits. */
static void test_refusal_max_new(void)
{
    const run_case c = { "ckpt-flat", NULL, 0, 0, 0 };
    refusal_fix f;
    if (!refusal_setup(&f, &c)) return;
    int64_t limit = f.p_small.total;   /* fits MAX_NEW new tokens, not 4000 */
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(&c, limit, &err);
    g_assert_no_error(err);
    run_watch w = { .eng = eng };
    hyocr_job_params jp;
    job_for(&jp, f.small, &w);
    jp.max_new_tokens = 4000;
    hyocr_memplan plan;
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &plan, &err));
    hyocr_job_result res = { 0 };
    g_assert_false(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_test_message("%s", err->message);
    expect_in(err->message, "KV cache");
    const hyocr_memplan *r = refused_plan(err, &plan);
    int max_new = r->advice.max_new_tokens;
    g_autofree char *words = g_strdup_printf("at most %d new tokens", max_new);
    expect_in(err->message, words);
    g_assert_cmpint(r->advice.max_new_tokens_total, <=, limit);
    g_assert_cmpint(max_new, >=, MAX_NEW);
    g_assert_cmpint(max_new, <, 4000);
    hyocr_job_result_clear(&res);
    g_clear_error(&err);
    jp.max_new_tokens = max_new;
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);
    g_assert_cmpint(res.memory.peak, <=, limit);
    hyocr_job_result_clear(&res);
    refusal_clear(&f);
}

/* The backend's own check names the numbers as the CUDA backend's does; a
 * fraction of the machine is resolved against its RAM. */
static void test_backend_limit(void)
{
    hyocr_backend_params p = { .n_threads = 1, .memory_limit = 5 << 19 };
    g_autoptr(GError) err = NULL;
    hyocr_backend *be = hyocr_backend_cpu_init(&p, &err);
    g_assert_no_error(err);
    hyocr_buf *w = be->ops->alloc(be, HYOCR_BUF_WEIGHT, 1 << 18, &err);
    g_assert_no_error(err);
    g_assert_null(be->ops->alloc(be, HYOCR_BUF_KV, 1 << 19, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    expect_in(err->message, "allocating 2.0 MiB of KV cache would exceed the memory limit of 2.5 MiB");
    expect_in(err->message, "1.0 MiB in use: weights 1.0 MiB");
    be->ops->buf_free(be, w);
    hyocr_backend_free(be);
    g_clear_error(&err);

    p.memory_limit = -1;   /* a millionth of the RAM: a few KiB */
    be = hyocr_backend_cpu_init(&p, &err);
    g_assert_no_error(err);
    g_assert_null(be->ops->alloc(be, HYOCR_BUF_ACT, 1 << 20, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    /* the limit it enforces is the one it reports, resolved once */
    hyocr_mem_info mi;
    be->ops->mem_info(be, &mi);
    g_assert_cmpint(mi.total, >, 0);
    g_assert_cmpint(mi.limit, ==, hyocr_memory_limit_resolve(-1, mi.total));
    g_assert_cmpint(mi.limit, >, 0);
    hyocr_backend_free(be);
}

/* Bytes stay bytes; a negative limit is millionths of the total, none when the
 * total is unknown. */
static void test_limit_resolve(void)
{
    g_assert_cmpint(hyocr_memory_limit_resolve(0, 1000), ==, 0);
    g_assert_cmpint(hyocr_memory_limit_resolve(123, 1000), ==, 123);
    g_assert_cmpint(hyocr_memory_limit_resolve(123, 0), ==, 123);
    g_assert_cmpint(hyocr_memory_limit_resolve(-500000, 1000), ==, 500);
    g_assert_cmpint(hyocr_memory_limit_resolve(-1000000, 1000), ==, 1000);
    g_assert_cmpint(hyocr_memory_limit_resolve(-250000, (int64_t)141 << 30), ==, ((int64_t)141 << 30) / 4);
    g_assert_cmpint(hyocr_memory_limit_resolve(-500000, 0), ==, 0);
    g_assert_cmpint(hyocr_memory_limit_resolve(-1, 999999), ==, 0);
    /* a fraction as the front ends give it comes back as that share */
    g_assert_cmpint(hyocr_memory_limit_fraction(0.5), ==, -500000);
    g_assert_cmpint(hyocr_memory_limit_resolve(hyocr_memory_limit_fraction(0.25), 4000), ==, 1000);
    g_assert_cmpint(hyocr_memory_limit_resolve(hyocr_memory_limit_fraction(1.0), 4000), ==, 4000);
}

/* A limit below the weights: refused before any upload, naming the weights' size
 * (the plan's figure) and the option to raise. */
static void test_weights_refused(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", NULL);
    if (!hyocr_test_require(dir)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    int64_t weights = hyocr_memplan_weights(hyocr_checkpoint_config(ck), 4, 2, st.lm_head_tied);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 1;
    ep.memory_limit = weights - 1;
    g_assert_null(hyocr_engine_init(&ep, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_autofree char *w = hyocr_memplan_format_bytes(weights);
    expect_in(err->message, w);
    expect_in(err->message, "memory limit");
    g_assert_null(strstr(err->message, "--"));
    /* The plan it carries is the weights' alone: no job, nothing but a higher limit helps. */
    const hyocr_memplan *plan = hyocr_error_get_memplan(err);
    g_assert_nonnull(plan);
    g_assert_cmpint(plan->total, ==, weights);
    g_assert_cmpint(plan->budget, ==, weights - 1);
    g_assert_true(plan->budget_is_limit);
    g_assert_false(plan->fits);
    g_assert_cmpint(plan->prompt_tokens, ==, 0);
    g_assert_cmpint(plan->advice.max_side, ==, 0);
    g_assert_cmpint(plan->advice.max_new_tokens, ==, 0);
    g_clear_error(&err);
    ep.memory_limit = weights + (1 << 20);   /* room for the weights: loads */
    g_autoptr(hyocr_engine) eng = hyocr_engine_init(&ep, &err);
    g_assert_no_error(err);
    g_assert_nonnull(eng);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/memplan/weights-refused", test_weights_refused);
    g_test_add_func("/memplan/arithmetic", test_arithmetic);
    static const run_case cases[] = {
        { "ckpt-flat", "odd_137x91.png", 0, 0, 0 },
        { "ckpt-flat", "big_420x300.png", 0, 0, 0 },
        { "ckpt-flat", "tiny_40x30.png", 0, 0, 0 },
        { "ckpt-flat", "big_420x300.png", 16, 8, 0 },     /* many chunks everywhere */
        { "ckpt-flat", "strip_32x256.png", 24, 16, 0 },
        { "ckpt-flat", "odd_137x91.png", 0, 0, 12 },      /* a fixed pool */
        { "ckpt-nested", "square_200.png", 0, 0, 0 },
        { "ckpt-nested", "alpha_150x100.png", 16, 8, 0 },
        { "ckpt-nested", "big_420x300.png", 0, 0, 10 },
        { "ckpt-dflash", "odd_137x91.png", 0, 0, 0 },     /* speculative decoding with the draft */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const run_case *c = &cases[i];
        g_autofree char *path = g_strdup_printf("/memplan/engine/%s/%s/chunks-%d-%d/kv-%d", c->ckpt, c->image,
                                                c->vit_rows, c->text_rows, c->kv_blocks);
        g_test_add_data_func(path, c, test_engine_plan);
    }
    g_test_add_func("/memplan/chunked-vision", test_chunked_vision);
    g_test_add_func("/memplan/chunked-prefill", test_chunked_prefill);
    g_test_add_func("/memplan/text-chunk", test_text_chunk);
    g_test_add_func("/memplan/kv-resize", test_kv_resize);
    g_test_add_func("/memplan/refusal", test_refusal);
    g_test_add_func("/memplan/refusal-max-new", test_refusal_max_new);
    g_test_add_func("/memplan/backend-limit", test_backend_limit);
    g_test_add_func("/memplan/limit-resolve", test_limit_resolve);
    return g_test_run();
}
