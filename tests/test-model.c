/* Model stages against the reference fixtures (tests/data/model/<ckpt>/<image>__<task>/):
 * vision tower output, merger output, prefill logits, greedy tokens with and
 * without repetition penalty. Inputs are the reference's own pixel values and
 * prompt ids/positions, so a failure here points at the model, not the
 * preprocessing. Also: batching two sequences in one call, and KV pool growth. */
#include "error.h"
#include "model.h"
#include "prompt.h"
#include "sampler.h"
#include "tokenizer.h"
#include "testutil.h"
#include <math.h>
#include <string.h>

#define GREEDY_STEPS 48

typedef struct {
    char *ckpt;      /* "ckpt-flat" */
    char *name;      /* "odd_137x91.png__recognize" */
    char *image;     /* "odd_137x91.png" */
    char *task;      /* "recognize" */
} model_case;

/* One loaded model per checkpoint, shared by the cases. */
typedef struct {
    hyocr_checkpoint *ck;
    hyocr_backend    *be;
    hyocr_model      *m;
} loaded;

static GHashTable *models;   /* ckpt name → loaded* */

static void loaded_free(gpointer p)
{
    loaded *l = p;
    hyocr_model_free(l->m);
    hyocr_backend_free(l->be);
    hyocr_checkpoint_free(l->ck);
    g_free(l);
}

/* r2: switch both R2 variants on (spec §0.2); otherwise the config's (R1) defaults. */
static void open_model(const char *ckpt, bool r2, loaded *out)
{
    g_autofree char *dir = hyocr_test_data(ckpt, NULL);
    g_autoptr(GError) err = NULL;
    out->ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    if (r2) {
        hyocr_checkpoint_config_mut(out->ck)->rope_layout = HYOCR_ROPE_LAYOUT_R2;
        hyocr_checkpoint_config_mut(out->ck)->posemb_interp = HYOCR_POSEMB_R2;
    }
    hyocr_backend_params bp = { .n_threads = 2 };
    out->be = hyocr_backend_cpu_init(&bp, &err);
    g_assert_no_error(err);
    out->m = hyocr_model_load(out->be, out->ck, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_model_kv_init(out->m, 16, 0, 64, 0, &err));
    g_assert_no_error(err);
}

static loaded *get_model(const char *ckpt)
{
    loaded *l = g_hash_table_lookup(models, ckpt);
    if (l) return l;
    l = g_new0(loaded, 1);
    open_model(ckpt, false, l);
    g_hash_table_insert(models, g_strdup(ckpt), l);
    return l;
}

/* ---- fixture inputs --------------------------------------------------------- */

static hyocr_pixels *read_pixels(const model_case *c)
{
    g_autofree char *dir = hyocr_test_data("processor", c->ckpt, c->image, NULL);
    g_autofree char *grid_path = g_build_filename(dir, "grid_thw.txt", NULL);
    g_autofree char *pv_path = g_build_filename(dir, "pixel_values.f32", NULL);
    g_autoptr(GArray) grid = hyocr_test_read_ints(grid_path);
    g_assert_cmpuint(grid->len, ==, 3);
    hyocr_pixels *px = g_new0(hyocr_pixels, 1);
    px->grid_t = (int)g_array_index(grid, int64_t, 0);
    px->grid_h = (int)g_array_index(grid, int64_t, 1);
    px->grid_w = (int)g_array_index(grid, int64_t, 2);
    px->n_patches = px->grid_h * px->grid_w;
    px->patch_dim = 768;
    px->resized_height = px->grid_h * 16;
    px->resized_width = px->grid_w * 16;
    size_t n = 0;
    px->data = hyocr_test_read_f32(pv_path, &n);
    g_assert_cmpuint(n, ==, (size_t)px->n_patches * 768);
    return px;
}

typedef struct {
    int32_t *ids;
    int32_t *pos;   /* [4·n] axis-major */
    int      n;
} fixture_prompt;

static void fixture_prompt_clear(fixture_prompt *p)
{
    g_free(p->ids);
    g_free(p->pos);
}

static char *prompt_dir(const model_case *c)
{
    return hyocr_test_data("prompts", c->ckpt, c->image, c->task, NULL);
}

static void read_prompt_fixture(const model_case *c, fixture_prompt *p)
{
    g_autofree char *dir = prompt_dir(c);
    g_autofree char *ids_path = g_build_filename(dir, "input_ids.txt", NULL);
    g_autofree char *pos_path = g_build_filename(dir, "position_ids.txt", NULL);
    g_autoptr(GArray) ids = hyocr_test_read_ints(ids_path);
    g_autoptr(GArray) pos = hyocr_test_read_ints(pos_path);
    p->n = (int)ids->len;
    g_assert_cmpuint(pos->len, ==, 4 * ids->len);
    p->ids = g_new(int32_t, p->n);
    p->pos = g_new(int32_t, 4 * p->n);
    for (int i = 0; i < p->n; i++) p->ids[i] = (int32_t)g_array_index(ids, int64_t, i);
    for (int i = 0; i < 4 * p->n; i++) p->pos[i] = (int32_t)g_array_index(pos, int64_t, i);
}

/* Cases without a prompt fixture get their prompt from prompt.c and the
 * tokenizer (both tested against the fixtures in their own tests). */
static void build_prompt(const model_case *c, fixture_prompt *p)
{
    static const char *const fields[] = { "姓名", "date", "total", NULL };
    g_autofree char *dir = hyocr_test_data(c->ckpt, NULL);
    g_autofree char *tok_path = g_build_filename(dir, "tokenizer.json", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(dir, &err);
    g_assert_no_error(err);
    g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(tok_path, &err);
    g_assert_no_error(err);
    hyocr_task task;
    g_assert_true(hyocr_task_from_name(c->task, &task));
    g_autofree char *text = hyocr_task_prompt(task, cfg->version, fields, "Describe the image.", &err);
    g_assert_no_error(err);
    g_autoptr(hyocr_pixels) px = read_pixels(c);
    g_autoptr(hyocr_prompt) pr = hyocr_prompt_build(tok, cfg, text, px->grid_h, px->grid_w, &err);
    g_assert_no_error(err);
    p->n = pr->n;
    p->ids = g_memdup2(pr->ids, sizeof(int32_t) * pr->n);
    p->pos = g_memdup2(pr->pos, sizeof(int32_t) * 4 * pr->n);
}

static void read_prompt(const model_case *c, fixture_prompt *p)
{
    g_autofree char *dir = prompt_dir(c);
    if (g_file_test(dir, G_FILE_TEST_IS_DIR)) read_prompt_fixture(c, p);
    else build_prompt(c, p);
}

static char *case_file(const model_case *c, const char *file)
{
    return hyocr_test_data("model", c->ckpt, c->name, file, NULL);
}

/* ---- comparisons ------------------------------------------------------------- */

static float max_abs(const float *x, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}

/* max|Δ| ≤ 1e-4 · max|ref| */
static void assert_close(const char *what, const float *got, size_t n_got, const char *ref_path)
{
    size_t n = 0;
    g_autofree float *ref = hyocr_test_read_f32(ref_path, &n);
    g_assert_cmpuint(n_got, ==, n);
    float scale = max_abs(ref, n), worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(got[i] - ref[i]);
        if (d > worst || isnan(d)) {
            worst = d;
            at = i;
        }
    }
    g_test_message("%s: max|Δ| %.3g at %zu (max|ref| %.3g)", what, worst, at, scale);
    if (!(worst <= 1e-4f * scale))
        g_test_fail_printf("%s: max|Δ| %.4g at element %zu (got %.6g, want %.6g) exceeds 1e-4 × %.4g", what,
                           worst, at, got[at], ref[at], scale);
}

static hyocr_buf *run_vision(hyocr_model *m, const model_case *c, int *rows, hyocr_vision_debug *dbg)
{
    g_autoptr(hyocr_pixels) px = read_pixels(c);
    g_autoptr(GError) err = NULL;
    hyocr_buf *v = hyocr_vision_forward(m, px, rows, dbg, NULL, NULL, &err);
    g_assert_no_error(err);
    g_assert_nonnull(v);
    return v;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_vision(gconstpointer data)
{
    const model_case *c = data;
    g_autofree char *vref = case_file(c, "vision_out.f32");
    g_autofree char *mref = case_file(c, "merger_out.f32");
    if (!hyocr_test_require(vref) || !hyocr_test_require(mref)) return;
    loaded *l = get_model(c->ckpt);
    hyocr_vision_debug dbg = { .want = true };
    int rows = 0;
    hyocr_buf *v = run_vision(l->m, c, &rows, &dbg);
    assert_close("vision_out", dbg.vision_out, dbg.vision_out_n, vref);
    assert_close("merger_out", dbg.merger_out, dbg.merger_out_n, mref);
    g_assert_cmpuint(dbg.merger_out_n, ==, (size_t)rows * l->m->cfg.text.hidden_size);
    l->be->ops->buf_free(l->be, v);
    g_free(dbg.vision_out);
    g_free(dbg.merger_out);
}

/* The vision weights leave the backend (its weight bytes drop by exactly the
 * planned amount) and come back on the next vision pass with identical output. */
static void test_vision_offload(gconstpointer data)
{
    const model_case *c = data;
    loaded l = { 0 };
    open_model(c->ckpt, false, &l);
    hyocr_vision_debug before = { .want = true }, after = { .want = true };
    int rows = 0;
    hyocr_buf *v = run_vision(l.m, c, &rows, &before);
    l.be->ops->buf_free(l.be, v);
    hyocr_mem_info m0, m1, m2;
    l.be->ops->mem_info(l.be, &m0);
    g_assert_true(hyocr_model_vision_unload(l.m));
    g_assert_false(hyocr_model_vision_loaded(l.m));
    g_assert_false(hyocr_model_vision_unload(l.m));   /* already out */
    l.be->ops->mem_info(l.be, &m1);
    g_assert_cmpint(m0.weights - m1.weights, ==, hyocr_model_vision_weight_bytes(l.m));
    v = run_vision(l.m, c, &rows, &after);
    g_assert_true(hyocr_model_vision_loaded(l.m));
    l.be->ops->mem_info(l.be, &m2);
    g_assert_cmpint(m2.weights, ==, m0.weights);
    g_assert_cmpuint(after.merger_out_n, ==, before.merger_out_n);
    g_assert_cmpmem(after.merger_out, after.merger_out_n * sizeof(float), before.merger_out,
                    before.merger_out_n * sizeof(float));
    l.be->ops->buf_free(l.be, v);
    g_free(before.vision_out);
    g_free(before.merger_out);
    g_free(after.vision_out);
    g_free(after.merger_out);
    hyocr_model_free(l.m);
    hyocr_backend_free(l.be);
    hyocr_checkpoint_free(l.ck);
}

typedef struct {
    hyocr_model  *m;
    hyocr_kv_seq *seq;
    float        *logits;
} gen_state;

/* Vision + prefill of one case; logits of the last prompt row in st->logits. */
static void prefill_case(hyocr_model *m, const model_case *c, const fixture_prompt *p, gen_state *st)
{
    int rows = 0;
    hyocr_buf *v = run_vision(m, c, &rows, NULL);
    st->m = m;
    st->seq = hyocr_model_seq_new(m);
    st->logits = g_new(float, m->cfg.text.vocab_size);
    hyocr_text_seq q = {
        .ids = p->ids, .pos = p->pos, .n_new = p->n, .kv = st->seq, .image_embeds = v, .n_image_rows = rows,
        .image_token_id = m->cfg.image_token_id,
    };
    g_autoptr(GError) err = NULL;
    gboolean ok = hyocr_text_forward(m, &q, 1, st->logits, NULL, NULL, &err);
    g_assert_no_error(err);
    g_assert_true(ok);
    g_assert_cmpint(st->seq->n_tokens, ==, p->n);
    m->be->ops->buf_free(m->be, v);
}

static void gen_state_clear(gen_state *st)
{
    hyocr_model_seq_free(st->m, st->seq);
    g_free(st->logits);
}

static bool stops(const hyocr_config *cfg, int32_t id)
{
    /* The reference stopped on generation_config's eos ids plus the tokenizer's
     * eos, which is config.json's eos_token_id in these checkpoints. */
    return hyocr_config_is_eos(cfg, id) || id == cfg->eos_id;
}

static gboolean require_model_case(const model_case *c, const char *ref_file, char **ref_out)
{
    *ref_out = case_file(c, ref_file);
    g_autofree char *px = hyocr_test_data("processor", c->ckpt, c->image, "pixel_values.f32", NULL);
    return hyocr_test_require(*ref_out) && hyocr_test_require(px);
}

static void test_prefill(gconstpointer data)
{
    const model_case *c = data;
    g_autofree char *ref = NULL;
    if (!require_model_case(c, "prefill_logits.f32", &ref)) return;
    loaded *l = get_model(c->ckpt);
    fixture_prompt p = { 0 };
    read_prompt(c, &p);
    gen_state st = { 0 };
    prefill_case(l->m, c, &p, &st);
    assert_close("prefill logits", st.logits, (size_t)l->m->cfg.text.vocab_size, ref);
    gen_state_clear(&st);
    fixture_prompt_clear(&p);
}

static GArray *greedy(hyocr_model *m, const model_case *c, const fixture_prompt *p, float rp)
{
    gen_state st = { 0 };
    prefill_case(m, c, p, &st);
    hyocr_sampler_params sp = { .temperature = 0, .repetition_penalty = rp };
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&sp, m->cfg.text.vocab_size);
    hyocr_sampler_accept(s, p->ids, p->n);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (int step = 0; step < GREEDY_STEPS; step++) {
        int32_t id = hyocr_sampler_sample(s, st.logits);
        hyocr_sampler_accept(s, &id, 1);
        g_array_append_val(out, id);
        if (stops(&m->cfg, id) || step + 1 == GREEDY_STEPS) break;
        hyocr_text_seq q = { .ids = &id, .n_new = 1, .kv = st.seq };
        g_autoptr(GError) err = NULL;
        g_assert_true(hyocr_text_forward(m, &q, 1, st.logits, NULL, NULL, &err));
        g_assert_no_error(err);
    }
    gen_state_clear(&st);
    return out;
}

static void assert_same_ids(const GArray *got, const char *ref_path)
{
    g_autoptr(GArray) ref = hyocr_test_read_ints(ref_path);
    guint n = MIN(got->len, ref->len);
    for (guint i = 0; i < n; i++) {
        int32_t want = (int32_t)g_array_index(ref, int64_t, i), have = g_array_index(got, int32_t, i);
        if (want != have) {
            g_test_fail_printf("token %u: got %d, reference %d", i, have, want);
            return;
        }
    }
    g_assert_cmpuint(got->len, ==, ref->len);
}

static void run_greedy(const model_case *c, const char *ref_file, float rp, int kv_block, int kv_initial)
{
    g_autofree char *ref = NULL;
    if (!require_model_case(c, ref_file, &ref)) return;
    loaded *l = get_model(c->ckpt);
    g_autoptr(GError) err = NULL;
    /* Different block sizes and starting pools: the result must not depend on them. */
    g_assert_true(hyocr_model_kv_init(l->m, kv_block, 0, kv_initial, 0, &err));
    fixture_prompt p = { 0 };
    read_prompt(c, &p);
    g_autoptr(GArray) ids = greedy(l->m, c, &p, rp);
    assert_same_ids(ids, ref);
    fixture_prompt_clear(&p);
}

static void test_greedy(gconstpointer data)
{
    /* 4-token blocks, one block to start: the pool grows (and moves blocks) many times. */
    run_greedy(data, "greedy.txt", 1.0f, 4, 4);
}

static void test_greedy_rp(gconstpointer data)
{
    run_greedy(data, "greedy_rp.txt", 1.08f, 16, 4096);
}

/* ---- two sequences in one forward call ------------------------------------------ */

static void test_batch(gconstpointer data)
{
    const model_case *const *pair = data;
    g_autofree char *r0 = NULL, *r1 = NULL;
    if (!require_model_case(pair[0], "greedy.txt", &r0) || !require_model_case(pair[1], "greedy.txt", &r1)) return;
    loaded *l = get_model(pair[0]->ckpt);
    hyocr_model *m = l->m;
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_model_kv_init(m, 8, 0, 8, 0, &err));

    fixture_prompt p[2] = { 0 };
    hyocr_buf *v[2];
    int rows[2];
    hyocr_text_seq q[2];
    for (int s = 0; s < 2; s++) {
        read_prompt(pair[s], &p[s]);
        v[s] = run_vision(m, pair[s], &rows[s], NULL);
        q[s] = (hyocr_text_seq){ .ids = p[s].ids, .pos = p[s].pos, .n_new = p[s].n, .kv = hyocr_model_seq_new(m),
                                 .image_embeds = v[s], .n_image_rows = rows[s],
                                 .image_token_id = m->cfg.image_token_id };
    }
    int V = m->cfg.text.vocab_size;
    g_autofree float *logits = g_new(float, 2 * V);
    g_assert_true(hyocr_text_forward(m, q, 2, logits, NULL, NULL, &err));
    g_assert_no_error(err);
    g_autofree char *l0 = case_file(pair[0], "prefill_logits.f32");
    g_autofree char *l1 = case_file(pair[1], "prefill_logits.f32");
    assert_close("batched prefill, sequence 0", logits, V, l0);
    assert_close("batched prefill, sequence 1", logits + V, V, l1);

    /* Decode both together (greedy, no penalty) and compare with the references. */
    g_autoptr(GArray) got0 = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_autoptr(GArray) got1 = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_autoptr(GArray) ref0 = hyocr_test_read_ints(r0);
    g_autoptr(GArray) ref1 = hyocr_test_read_ints(r1);
    int steps = (int)MIN(MIN(ref0->len, ref1->len), 16);
    int32_t next[2];
    for (int step = 0; step < steps; step++) {
        for (int s = 0; s < 2; s++) {
            float *row = logits + (size_t)s * V;
            int best = 0;
            for (int i = 1; i < V; i++)
                if (row[i] > row[best]) best = i;
            next[s] = best;
            q[s] = (hyocr_text_seq){ .ids = &next[s], .n_new = 1, .kv = q[s].kv };
        }
        g_array_append_val(got0, next[0]);
        g_array_append_val(got1, next[1]);
        g_assert_true(hyocr_text_forward(m, q, 2, logits, NULL, NULL, &err));
    }
    for (int i = 0; i < steps; i++) {
        g_assert_cmpint(g_array_index(got0, int32_t, i), ==, (int32_t)g_array_index(ref0, int64_t, i));
        g_assert_cmpint(g_array_index(got1, int32_t, i), ==, (int32_t)g_array_index(ref1, int64_t, i));
    }
    for (int s = 0; s < 2; s++) {
        hyocr_model_seq_free(m, q[s].kv);
        m->be->ops->buf_free(m->be, v[s]);
        fixture_prompt_clear(&p[s]);
    }
}

/* ---- variants and errors ------------------------------------------------------------ */

static float max_diff(const float *a, const float *b, size_t n)
{
    float d = 0;
    for (size_t i = 0; i < n; i++) d = fmaxf(d, fabsf(a[i] - b[i]));
    return d;
}

/* The R2 switches must reach the ops: R2 RoPE changes only the image-token
 * rotation (so the vision output stays), R2 position interpolation changes the
 * vision output for a grid that is not the table's edge. */
static void test_variants(gconstpointer data)
{
    const model_case *c = data;
    g_autofree char *ref = NULL;
    if (!require_model_case(c, "prefill_logits.f32", &ref)) return;
    loaded r2 = { 0 };
    open_model(c->ckpt, true, &r2);
    loaded *r1 = get_model(c->ckpt);
    hyocr_vision_debug d1 = { .want = true }, d2 = { .want = true };
    int rows;
    r1->be->ops->buf_free(r1->be, run_vision(r1->m, c, &rows, &d1));
    r2.be->ops->buf_free(r2.be, run_vision(r2.m, c, &rows, &d2));
    g_assert_cmpuint(d1.vision_out_n, ==, d2.vision_out_n);
    g_assert_cmpfloat(max_diff(d1.vision_out, d2.vision_out, d1.vision_out_n), >, 1e-3f);

    fixture_prompt p = { 0 };
    read_prompt(c, &p);
    gen_state st = { 0 };
    prefill_case(r2.m, c, &p, &st);
    size_t n = 0;
    g_autofree float *want = hyocr_test_read_f32(ref, &n);
    g_assert_cmpfloat(max_diff(st.logits, want, n), >, 1e-3f);
    gen_state_clear(&st);
    fixture_prompt_clear(&p);
    g_free(d1.vision_out);
    g_free(d1.merger_out);
    g_free(d2.vision_out);
    g_free(d2.merger_out);
    hyocr_model_free(r2.m);
    hyocr_backend_free(r2.be);
    hyocr_checkpoint_free(r2.ck);
}

static void test_bad_inputs(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", NULL);
    if (!hyocr_test_require(dir)) return;
    loaded *l = get_model("ckpt-flat");
    hyocr_model *m = l->m;
    g_autoptr(GError) err = NULL;

    /* odd grid */
    float pix[3 * 2 * 768] = { 0 };
    hyocr_pixels px = { .grid_t = 1, .grid_h = 3, .grid_w = 2, .n_patches = 6, .patch_dim = 768, .data = pix };
    int rows;
    g_assert_null(hyocr_vision_forward(m, &px, &rows, NULL, NULL, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);

    /* id outside the vocabulary; the cache must stay empty */
    hyocr_kv_seq *seq = hyocr_model_seq_new(m);
    int32_t ids[2] = { 1, m->cfg.text.vocab_size };
    g_autofree float *logits = g_new(float, m->cfg.text.vocab_size);
    hyocr_text_seq q = { .ids = ids, .n_new = 2, .kv = seq };
    g_assert_false(hyocr_text_forward(m, &q, 1, logits, NULL, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "vocabulary"));
    g_assert_cmpint(seq->n_tokens, ==, 0);
    g_clear_error(&err);

    /* image rows that do not match the placeholders */
    int32_t img_ids[3] = { 1, m->cfg.image_token_id, 2 };
    q = (hyocr_text_seq){ .ids = img_ids, .n_new = 3, .kv = seq, .image_embeds = m->img_begin, .n_image_rows = 2,
                          .image_token_id = m->cfg.image_token_id };
    g_assert_false(hyocr_text_forward(m, &q, 1, logits, NULL, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_cmpint(seq->n_tokens, ==, 0);
    g_clear_error(&err);
    hyocr_model_seq_free(m, seq);
}

static bool cancel_now(void *data)
{
    int *calls = data;
    return ++*calls > 1;   /* let the first block run, stop before the second */
}

static void test_cancel(void)
{
    g_autofree char *dir = hyocr_test_data("processor", "ckpt-flat", "odd_137x91.png", NULL);
    if (!hyocr_test_require(dir)) return;
    loaded *l = get_model("ckpt-flat");
    model_case c = { .ckpt = "ckpt-flat", .image = "odd_137x91.png" };
    g_autoptr(hyocr_pixels) px = read_pixels(&c);
    g_autoptr(GError) err = NULL;
    int calls = 0, rows;
    g_assert_null(hyocr_vision_forward(l->m, px, &rows, NULL, cancel_now, &calls, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_cmpint(calls, ==, 2);
    g_clear_error(&err);

    /* prefill: stops between decoder layers and leaves the cache empty */
    hyocr_model *m = l->m;
    hyocr_kv_seq *seq = hyocr_model_seq_new(m);
    int32_t ids[3] = { 1, 2, 3 };
    g_autofree float *logits = g_new(float, m->cfg.text.vocab_size);
    hyocr_text_seq q = { .ids = ids, .n_new = 3, .kv = seq };
    calls = 0;
    g_assert_false(hyocr_text_forward(m, &q, 1, logits, cancel_now, &calls, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_cmpint(calls, ==, 2);
    g_assert_cmpint(seq->n_tokens, ==, 0);
    hyocr_model_seq_free(m, seq);
}

/* hyocr_text_prepare takes the buffers a pass over that many rows uses (the scheduler does it while
 * the card runs the vision pass): the pass then allocates nothing and computes what it computes
 * without it. 40 rows stay one chunk; 2100 rows are three of the default 1024. */
static void prepare_case(hyocr_model *m, int rows)
{
    g_autoptr(GError) err = NULL;
    const int V = m->cfg.text.vocab_size;
    g_autofree int32_t *ids = g_new(int32_t, rows);
    for (int i = 0; i < rows; i++) ids[i] = 5 + (i * 37) % 1000;
    g_autofree float *plain = g_new(float, V), *prepared = g_new(float, V);
    float *out[2] = { plain, prepared };
    for (int k = 0; k < 2; k++) {
        hyocr_model_trim_scratch(m);
        if (k == 1) g_assert_true(hyocr_text_prepare(m, rows, 1, &err));
        g_assert_no_error(err);
        hyocr_buf *before[HYOCR_SCRATCH_COUNT];
        memcpy(before, m->scratch, sizeof before);
        hyocr_kv_seq *seq = hyocr_model_seq_new(m);
        hyocr_text_seq q = { .ids = ids, .n_new = rows, .kv = seq };
        g_assert_true(hyocr_text_forward(m, &q, 1, out[k], NULL, NULL, &err));
        g_assert_no_error(err);
        for (int i = HYOCR_SCRATCH_T_H; k == 1 && i <= HYOCR_SCRATCH_T_LOGITS; i++) {
            g_assert_nonnull(before[i]);
            g_assert_true(m->scratch[i] == before[i]);
        }
        hyocr_model_seq_free(m, seq);
    }
    g_assert_cmpmem(plain, sizeof(float) * V, prepared, sizeof(float) * V);
}

static void test_text_prepare(void)
{
    loaded *l = g_new0(loaded, 1);
    open_model("ckpt-flat", false, l);
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_model_kv_init(l->m, 16, 0, 2200, 0, &err));
    g_assert_no_error(err);
    prepare_case(l->m, 40);
    prepare_case(l->m, 2100);
    loaded_free(l);
}

/* ---- registration ------------------------------------------------------------------ */

static void case_free(gpointer p)
{
    model_case *c = p;
    g_free(c->ckpt);
    g_free(c->name);
    g_free(c->image);
    g_free(c->task);
    g_free(c);
}

static GPtrArray *find_cases(const char *ckpt)
{
    GPtrArray *cases = g_ptr_array_new_with_free_func(case_free);
    g_autofree char *dir = hyocr_test_data("model", ckpt, NULL);
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        const char *sep = g_strrstr(name, "__");
        if (!sep) continue;
        model_case *c = g_new0(model_case, 1);
        c->ckpt = g_strdup(ckpt);
        c->name = g_strdup(name);
        c->image = g_strndup(name, (gsize)(sep - name));
        c->task = g_strdup(sep + 2);
        g_ptr_array_add(cases, c);
    }
    if (d) g_dir_close(d);
    return cases;
}

static GPtrArray *register_cases(const char *ckpt, GPtrArray *keep)
{
    GPtrArray *cases = find_cases(ckpt);
    g_ptr_array_add(keep, cases);
    for (guint i = 0; i < cases->len; i++) {
        const model_case *c = cases->pdata[i];
        static const struct { const char *stage; GTestDataFunc fn; } stages[] = {
            { "vision", test_vision }, { "prefill", test_prefill }, { "greedy", test_greedy },
            { "greedy_rp", test_greedy_rp },
        };
        for (size_t s = 0; s < G_N_ELEMENTS(stages); s++) {
            g_autofree char *path = g_strdup_printf("/model/%s/%s/%s", ckpt, c->name, stages[s].stage);
            g_test_add_data_func(path, c, stages[s].fn);
        }
    }
    return cases;
}

/* Cases whose prompts have fixtures: the batch and variant tests use those. */
static GPtrArray *with_prompts(GPtrArray *cases)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint i = 0; i < cases->len; i++) {
        g_autofree char *pd = prompt_dir(cases->pdata[i]);
        if (g_file_test(pd, G_FILE_TEST_IS_DIR)) g_ptr_array_add(out, cases->pdata[i]);
    }
    return out;
}

static void missing_fixtures(void)
{
    g_autofree char *dir = hyocr_test_data("model", NULL);
    hyocr_test_require(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    models = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, loaded_free);
    g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
    g_autoptr(GPtrArray) pairs = g_ptr_array_new_with_free_func(g_free);
    int n_cases = 0;
    for (int k = 0; k < 2; k++) {
        const char *ckpt = k == 0 ? "ckpt-flat" : "ckpt-nested";
        GPtrArray *cases = register_cases(ckpt, keep);
        n_cases += (int)cases->len;
        g_autoptr(GPtrArray) prompted = with_prompts(cases);
        if (prompted->len >= 1) {
            g_autofree char *path = g_strdup_printf("/model/%s/variants", ckpt);
            g_test_add_data_func(path, prompted->pdata[0], test_variants);
            g_autofree char *path2 = g_strdup_printf("/model/%s/vision-offload", ckpt);
            g_test_add_data_func(path2, prompted->pdata[0], test_vision_offload);
        }
        if (prompted->len >= 2) {
            const model_case **pair = g_new(const model_case *, 2);
            pair[0] = prompted->pdata[0];
            pair[1] = prompted->pdata[1];
            g_ptr_array_add(pairs, pair);
            g_autofree char *path = g_strdup_printf("/model/%s/batch", ckpt);
            g_test_add_data_func(path, pair, test_batch);
        }
    }
    if (n_cases == 0) g_test_add_func("/model/fixtures", missing_fixtures);
    g_test_add_func("/model/bad-inputs", test_bad_inputs);
    g_test_add_func("/model/cancel", test_cancel);
    g_test_add_func("/model/text-prepare", test_text_prepare);
    int rc = g_test_run();
    g_hash_table_destroy(models);
    return rc;
}
