/* Decoding with the token chosen on the device: the backend's pick op against the
 * CPU sampler (penalty semantics, ties, NaN, ±Inf), hyocr_text_decode against
 * hyocr_text_forward + sampler on the tiny checkpoint over many steps, and the
 * finite check. Every test runs on the CPU backend, and on the CUDA backend too
 * when one is usable (there the decode steps go through captured graphs). */
#include "error.h"
#include "model.h"
#include "sampler.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hyocr_backend *open_backend(bool cuda)
{
    /* the switches as an engine reads them, so tests/gpu/decode.sh's HYOCR_* runs reach the benchmark */
    hyocr_backend_params bp = { .n_threads = 2 };
    hyocr_tuning_from_env(&bp.tuning);
    g_autoptr(GError) err = NULL;
    hyocr_backend *be = cuda ? hyocr_backend_cuda_init(&bp, &err) : hyocr_backend_cpu_init(&bp, &err);
    if (!be) {
        g_assert_true(cuda);
        g_test_skip("no usable CUDA device");
        g_test_message("CUDA backend unavailable: %s", err ? err->message : "?");
    }
    return be;
}

static hyocr_penalty_divide divide_of(const hyocr_backend *be)
{
    return be->kind == HYOCR_BACKEND_CUDA ? HYOCR_PENALTY_DIVIDE_RECIPROCAL : HYOCR_PENALTY_DIVIDE_TRUE;
}

/* Logits drawn from a few values (ties on purpose), both signs, and now and
 * then an infinity or a NaN. */
static void fill_logits(GRand *r, float *x, int V, bool specials)
{
    for (int v = 0; v < V; v++) x[v] = (float)g_rand_int_range(r, -40, 41) * 0.37f + (float)g_rand_double(r) * 1e-3f;
    for (int k = 0; k < 4; k++) x[g_rand_int_range(r, 0, V)] = (float)g_rand_int_range(r, 14, 16) * 1.01f;
    if (!specials) return;
    int kind = g_rand_int_range(r, 0, 8);
    if (kind == 0) x[g_rand_int_range(r, 0, V)] = NAN;
    if (kind == 1) x[g_rand_int_range(r, 0, V)] = INFINITY;
    if (kind == 2) x[g_rand_int_range(r, 0, V)] = -INFINITY;
}

static bool row_finite(const float *x, int V)
{
    for (int v = 0; v < V; v++)
        if (!isfinite(x[v])) return false;
    return true;
}

/* The op cases' buffers: n rows of V logits and n_slots seen sets, all bits clear. */
typedef struct {
    hyocr_backend *be;
    hyocr_buf     *logits, *seen;
} pick_bufs;

static pick_bufs pick_bufs_new(hyocr_backend *be, int n, int V, int n_slots)
{
    const size_t W = ((size_t)V + 31) / 32;
    g_autoptr(GError) err = NULL;
    pick_bufs b = { be, be->ops->alloc(be, HYOCR_BUF_F32, (size_t)n * V, &err), NULL };
    g_assert_no_error(err);
    b.seen = be->ops->alloc(be, HYOCR_BUF_F32, (size_t)n_slots * W, &err);
    g_assert_no_error(err);
    g_autofree float *zero = g_new0(float, (size_t)n_slots * W);
    g_assert_true(be->ops->upload_f32(be, b.seen, 0, zero, (size_t)n_slots * W, &err));
    return b;
}

static void pick_bufs_free(pick_bufs *b)
{
    b->be->ops->buf_free(b->be, b->logits);
    b->be->ops->buf_free(b->be, b->seen);
}

/* The op over n rows (one slot each) for many steps, against one sampler per slot. */
static void pick_op_case(hyocr_backend *be, int V, const float *pens, int n, int steps, bool specials)
{
    const hyocr_backend_ops *o = be->ops;
    g_autoptr(GError) err = NULL;
    pick_bufs pb = pick_bufs_new(be, n, V, n + 1);   /* slot 0 unused */
    hyocr_buf *logits = pb.logits, *seen = pb.seen;
    hyocr_sampler *ref[8];
    int32_t slots[8];
    g_assert_cmpint(n, <=, 8);
    GRand *r = g_rand_new_with_seed(1234u + (guint)V + (guint)n);
    for (int i = 0; i < n; i++) {
        hyocr_sampler_params sp = { .temperature = 0, .repetition_penalty = pens[i] };
        ref[i] = hyocr_sampler_init(&sp, V);
        hyocr_sampler_set_penalty_divide(ref[i], divide_of(be));
        slots[i] = i + 1;
    }
    float *x = g_new(float, (size_t)n * V), *y = g_new(float, V);
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < n; i++) fill_logits(r, x + (size_t)i * V, V, specials);
        g_assert_true(o->upload_f32(be, logits, 0, x, (size_t)n * V, &err));
        g_assert_true(o->pick(be, logits, n, V, seen, slots, pens, NULL, NULL, NULL, &err));
        int32_t ids[8];
        bool nf[8];
        g_assert_true(o->pick_fetch(be, n, ids, nf, &err));
        g_assert_no_error(err);
        for (int i = 0; i < n; i++) {
            memcpy(y, x + (size_t)i * V, sizeof(float) * V);
            int32_t want = hyocr_sampler_sample(ref[i], y);
            hyocr_sampler_accept(ref[i], &want, 1);
            if (ids[i] != want) g_error("step %d row %d (penalty %g): picked %d, sampler %d", step, i, pens[i], ids[i], want);
            g_assert_cmpint(nf[i], ==, !row_finite(x + (size_t)i * V, V));
        }
    }
    for (int i = 0; i < n; i++) hyocr_sampler_free(ref[i]);
    g_free(x);
    g_free(y);
    g_rand_free(r);
    pick_bufs_free(&pb);
}

static void test_pick_op(gconstpointer cuda)
{
    hyocr_backend *be = open_backend(GPOINTER_TO_INT(cuda));
    if (!be) return;
    const float pens[] = { 1.08f, 1.0f, 1.3f, 0.9f, 1.08f };
    /* The penalty matters only for ids already picked: a small vocabulary brings them back often. */
    pick_op_case(be, 37, pens, 5, 300, false);
    pick_op_case(be, 1000, pens, 3, 200, true);
    pick_op_case(be, 120818, pens, 2, 20, true);
    hyocr_backend_free(be);
}

/* pick_logprobs after a pick against hyocr_sampler_logprobs on the same raw rows: the ids in
 * the same order (ties: the lower id, across the device's chunks too), the values within
 * rounding (CUDA adds the exponentials in another order; the CPU backend must match bit for
 * bit), rows that ask none untouched, the penalty kept out of it, and the odd rows' values
 * those of the token they drew (temperature 0.9, top-p 0.95). */
/* got within tol · (1 + |want|) of want; tol 0: equal. An id no one may pick has -inf on
 * both paths, and -inf minus -inf is no distance, so equal values pass first. */
static void expect_near(float got, float want, double tol)
{
    if (tol == 0.0 || got == want || !isfinite(want)) g_assert_cmpfloat(got, ==, want);
    else g_assert_cmpfloat_with_epsilon(got, want, tol * (1.0 + fabsf(want)));
}

static void expect_logprob(float got, float want, bool exact)
{
    expect_near(got, want, exact ? 0.0 : 2e-6);
}

static int logprobs_drawn_off_top;   /* sampled rows whose token was not the raw argmax */

static void logprobs_case(hyocr_backend *be, int V, int n, const int32_t *n_top, int steps)
{
    const hyocr_backend_ops *o = be->ops;
    const bool exact = be->kind == HYOCR_BACKEND_CPU;
    g_autoptr(GError) err = NULL;
    pick_bufs pb = pick_bufs_new(be, n, V, n);
    hyocr_buf *logits = pb.logits, *seen = pb.seen;
    int32_t slots[8];
    float pens[8];
    hyocr_pick_draw draws[8] = { 0 };
    for (int i = 0; i < n; i++) {
        slots[i] = i;
        pens[i] = 1.3f;
        if (i % 2) draws[i] = (hyocr_pick_draw){ .temperature = 0.9f, .top_p = 0.95f };
    }
    GRand *r = g_rand_new_with_seed(77u + (guint)V);
    g_autofree float *x = g_new(float, (size_t)n * V);
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < n; i++) {
            float *row = x + (size_t)i * V;
            fill_logits(r, row, V, false);
            /* equal maxima in different chunks of 4096, and ids no one may pick */
            if (step % 2 && V > 8200) row[10] = row[4100] = row[8200] = 20.0f;
            row[g_rand_int_range(r, 0, V)] = -INFINITY;
        }
        for (int i = 1; i < n; i += 2) draws[i].u = hyocr_sampler_uniform(5u + (uint64_t)i, (uint64_t)step);
        g_assert_true(o->upload_f32(be, logits, 0, x, (size_t)n * V, &err));
        g_assert_true(o->pick(be, logits, n, V, seen, slots, pens, draws, NULL, NULL, &err));
        hyocr_token_logprobs got[8];
        memset(got, 0xab, sizeof got);
        g_assert_true(o->pick_logprobs(be, logits, n, V, n_top, got, &err));
        int32_t ids[8];
        bool nf[8];
        g_assert_true(o->pick_fetch(be, n, ids, nf, &err));
        g_assert_no_error(err);
        for (int i = 0; i < n; i++) {
            const hyocr_token_logprobs *lp = &got[i];
            if (n_top[i] < 0) {
                g_assert_cmpuint(((const uint8_t *)lp)[0], ==, 0xab);
                g_assert_cmpint(lp->n_top, ==, (int)0xabababab);
                continue;
            }
            int k = MIN(n_top[i], V);
            int32_t want_ids[HYOCR_TOP_LOGPROBS_MAX];
            float want[HYOCR_TOP_LOGPROBS_MAX];
            float lp0 = hyocr_sampler_logprobs(x + (size_t)i * V, V, ids[i], k, want_ids, want);
            g_assert_cmpint(lp->n_top, ==, k);
            expect_logprob(lp->logprob, lp0, exact);
            logprobs_drawn_off_top += i % 2 && k > 0 && want_ids[0] != ids[i];
            for (int t = 0; t < k; t++) {
                if (lp->top[t].id != want_ids[t])
                    g_error("V %d step %d row %d: top %d is id %d, the host's %d", V, step, i, t, lp->top[t].id,
                            want_ids[t]);
                expect_logprob(lp->top[t].logprob, want[t], exact);
            }
        }
    }
    g_rand_free(r);
    pick_bufs_free(&pb);
}

static void test_logprobs_op(gconstpointer cuda)
{
    hyocr_backend *be = open_backend(GPOINTER_TO_INT(cuda));
    if (!be) return;
    g_assert_nonnull(be->ops->pick_logprobs);
    logprobs_drawn_off_top = 0;
    const int32_t tops[] = { 5, -1, 0, 20, 1 };
    logprobs_case(be, 37, 5, tops, 40);
    logprobs_case(be, 15, 4, tops, 10);   /* fewer ids than alternatives asked */
    logprobs_case(be, 9000, 5, tops, 10);   /* three chunks, the last one short */
    logprobs_case(be, 120818, 4, (const int32_t[]){ 20, 3, -1, 0 }, 6);
    g_test_message("%d sampled rows drew another token than the raw argmax", logprobs_drawn_off_top);
    g_assert_cmpint(logprobs_drawn_off_top, >, 0);   /* the sampled rows' case was met */
    /* more alternatives than the most is an error, with the number */
    g_autoptr(GError) err = NULL;
    const int V = 100;
    hyocr_buf *logits = be->ops->alloc(be, HYOCR_BUF_F32, V, &err), *seen = be->ops->alloc(be, HYOCR_BUF_F32, 4, &err);
    g_autofree float *zero = g_new0(float, V);
    g_assert_true(be->ops->upload_f32(be, logits, 0, zero, V, &err) && be->ops->upload_f32(be, seen, 0, zero, 4, &err));
    const int32_t slot = 0, too_many = HYOCR_TOP_LOGPROBS_MAX + 1;
    const float pen = 1.0f;
    g_assert_true(be->ops->pick(be, logits, 1, V, seen, &slot, &pen, NULL, NULL, NULL, &err));
    hyocr_token_logprobs out;
    g_assert_false(be->ops->pick_logprobs(be, logits, 1, V, &too_many, &out, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "row 0 asks for 21 alternatives (at most 20)"));
    be->ops->buf_free(be, logits);
    be->ops->buf_free(be, seen);
    hyocr_backend_free(be);
}

/* Sampled rows (mixed with greedy ones) against the host sampler fed the same u:
 * temperature, top-k, top-p, the penalty, ties at the top-p border (a small
 * vocabulary of few distinct values), NaN and ±Inf. */
static const hyocr_pick_draw draw_cases[] = {
    { 0.7f, 0, 1.0f, 0, 0 },  { 1.0f, 5, 1.0f, 0, 0 },  { 1.3f, 0, 0.9f, 0, 0 }, { 1.0f, 40, 0.5f, 0, 0 },
    { 1.0f, 1, 0.8f, 0, 0 },  { 0.0f, 0, 1.0f, 0, 0 },  { 2.0f, 3, 0.05f, 0, 0 }, { 1.0f, 0, 0.97f, 0, 0 },
};

static void sample_op_case(hyocr_backend *be, int V, int n, int steps, bool coarse)
{
    const hyocr_backend_ops *o = be->ops;
    g_autoptr(GError) err = NULL;
    pick_bufs pb = pick_bufs_new(be, n, V, n);
    hyocr_buf *logits = pb.logits, *seen = pb.seen;
    hyocr_sampler *ref[8];
    int32_t slots[8];
    float pens[8];
    hyocr_pick_draw draws[8];
    g_assert_cmpint(n, <=, 8);
    GRand *r = g_rand_new_with_seed(77u + (guint)V);
    for (int i = 0; i < n; i++) {
        draws[i] = draw_cases[(i + V) % G_N_ELEMENTS(draw_cases)];
        pens[i] = i % 2 ? 1.08f : 1.0f;
        hyocr_sampler_params sp = { .temperature = draws[i].temperature, .top_k = draws[i].top_k,
                                    .top_p = draws[i].top_p, .repetition_penalty = pens[i], .seed = 1000u + i };
        ref[i] = hyocr_sampler_init(&sp, V);
        hyocr_sampler_set_penalty_divide(ref[i], divide_of(be));
        slots[i] = i;
    }
    float *x = g_new(float, (size_t)n * V), *y = g_new(float, V);
    int drawn = 0, not_argmax = 0;
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < n; i++) {
            float *row = x + (size_t)i * V;
            fill_logits(r, row, V, step % 5 == 4);
            if (coarse)   /* few distinct values: exact ties everywhere, also at the top-p border */
                for (int v = 0; v < V; v++) row[v] = isfinite(row[v]) ? roundf(row[v]) * 0.5f : row[v];
            draws[i].u = hyocr_sampler_uniform(1000u + i, step);
        }
        g_assert_true(o->upload_f32(be, logits, 0, x, (size_t)n * V, &err));
        g_assert_true(o->pick(be, logits, n, V, seen, slots, pens, draws, NULL, NULL, &err));
        int32_t ids[8];
        bool nf[8];
        g_assert_true(o->pick_fetch(be, n, ids, nf, &err));
        g_assert_no_error(err);
        for (int i = 0; i < n; i++) {
            memcpy(y, x + (size_t)i * V, sizeof(float) * V);
            int32_t want = hyocr_sampler_sample(ref[i], y);
            hyocr_sampler_accept(ref[i], &want, 1);
            if (ids[i] != want)
                g_error("V %d step %d row %d (T %g k %d p %g, penalty %g): picked %d, sampler %d", V, step, i,
                        draws[i].temperature, draws[i].top_k, draws[i].top_p, pens[i], ids[i], want);
            g_assert_cmpint(nf[i], ==, !row_finite(x + (size_t)i * V, V));
            if (draws[i].temperature > 0) {
                drawn++;
                hyocr_sampler_params g = { 0 };
                not_argmax += want != hyocr_sampler_draw(&g, y, V, 0.0);
            }
        }
    }
    g_assert_cmpint(not_argmax, >, drawn / 20);   /* the draws really sample */
    for (int i = 0; i < n; i++) hyocr_sampler_free(ref[i]);
    g_free(x);
    g_free(y);
    g_rand_free(r);
    pick_bufs_free(&pb);
}

static void test_sample_op(gconstpointer cuda)
{
    hyocr_backend *be = open_backend(GPOINTER_TO_INT(cuda));
    if (!be) return;
    sample_op_case(be, 37, 8, 200, true);
    sample_op_case(be, 1000, 8, 100, false);
    sample_op_case(be, 3001, 5, 60, true);
    sample_op_case(be, 120818, 4, 12, false);
    hyocr_backend_free(be);
}

/* ---- hyocr_text_decode on the tiny checkpoint ---- */

typedef struct {
    hyocr_checkpoint *ck;
    hyocr_backend    *be;
    hyocr_model      *m;
} loaded;

static bool load(loaded *l, bool cuda)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", NULL);
    if (!hyocr_test_require(dir)) return false;
    l->be = open_backend(cuda);
    if (!l->be) return false;
    g_autoptr(GError) err = NULL;
    l->ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    l->m = hyocr_model_load(l->be, l->ck, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_model_kv_init(l->m, 16, 0, 64, 0, &err));
    return true;
}

static void unload(loaded *l)
{
    hyocr_model_free(l->m);
    hyocr_backend_free(l->be);
    hyocr_checkpoint_free(l->ck);
}

#define N_SEQ 2

/* Sequences a (chosen on the device) and b (logits to the host, sampler) start
 * from the same prompts; each step must choose the same tokens. draws (NULL:
 * greedy) makes them sample, the device fed the u the host sampler uses. Sequence 0
 * asks for its log-probabilities (3 alternatives), which must be the host's of b's row. */
static void decode_case(hyocr_model *m, const float *pens, int prompt_len, int steps, const hyocr_pick_draw *draws)
{
    const int V = m->cfg.text.vocab_size;
    g_autoptr(GError) err = NULL;
    GRand *r = g_rand_new_with_seed(99u + (guint)prompt_len);
    hyocr_kv_seq *a[N_SEQ], *b[N_SEQ];
    hyocr_sampler *ref[N_SEQ];
    hyocr_pick picks[N_SEQ];
    int32_t tok_a[N_SEQ], tok_b[N_SEQ];
    float *logits = g_new(float, (size_t)N_SEQ * V);
    for (int s = 0; s < N_SEQ; s++) {
        int len = prompt_len + 3 * s;
        g_autofree int32_t *ids = g_new(int32_t, len + 1);
        for (int i = 0; i < len; i++) ids[i] = g_rand_int_range(r, 2, 1000);
        a[s] = hyocr_model_seq_new(m);
        b[s] = hyocr_model_seq_new(m);
        hyocr_text_seq qa = { .ids = ids, .n_new = len, .kv = a[s] }, qb = { .ids = ids, .n_new = len, .kv = b[s] };
        g_assert_true(hyocr_text_forward(m, &qa, 1, logits, NULL, NULL, &err));
        g_assert_true(hyocr_text_forward(m, &qb, 1, logits, NULL, NULL, &err));
        hyocr_sampler_params sp = { .temperature = 0, .repetition_penalty = pens[s], .seed = 500u + s };
        if (draws) {
            sp.temperature = draws[s].temperature;
            sp.top_k = draws[s].top_k;
            sp.top_p = draws[s].top_p;
        }
        ref[s] = hyocr_sampler_init(&sp, V);
        hyocr_sampler_set_penalty_divide(ref[s], divide_of(m->be));
        hyocr_sampler_accept(ref[s], ids, len);
        tok_b[s] = hyocr_sampler_sample(ref[s], logits);
        hyocr_sampler_accept(ref[s], &tok_b[s], 1);
        tok_a[s] = tok_b[s];
        /* the first token came from the prefill logits: its slot starts with prompt + that token */
        ids[len] = tok_a[s];
        picks[s] = (hyocr_pick){ .slot = hyocr_model_pick_slot_new(m, ids, len + 1, &err), .penalty = pens[s],
                                 .logprobs = s == 0, .top_logprobs = 3 };
        if (draws) picks[s].draw = draws[s];
        g_assert_no_error(err);
        g_assert_cmpint(picks[s].slot, >=, 0);
    }
    for (int step = 0; step < steps; step++) {
        hyocr_text_seq qa[N_SEQ], qb[N_SEQ];
        for (int s = 0; s < N_SEQ; s++) {
            qa[s] = (hyocr_text_seq){ .ids = &tok_a[s], .n_new = 1, .kv = a[s] };
            qb[s] = (hyocr_text_seq){ .ids = &tok_b[s], .n_new = 1, .kv = b[s] };
        }
        int32_t next[N_SEQ];
        bool nf[N_SEQ];
        for (int s = 0; draws && s < N_SEQ; s++) picks[s].draw.u = hyocr_sampler_uniform(500u + s, step + 1);
        hyocr_token_logprobs lps[N_SEQ];
        g_assert_true(hyocr_text_decode(m, qa, N_SEQ, picks, next, nf, lps, NULL, &err));
        g_assert_no_error(err);
        g_assert_true(hyocr_text_decode(m, qb, N_SEQ, NULL, NULL, NULL, NULL, logits, &err));
        for (int s = 0; s < N_SEQ; s++) {
            g_assert_false(nf[s]);
            if (picks[s].logprobs) {   /* before the sampler's penalty changes the row */
                int32_t top_ids[3];
                float top[3];
                float lp = hyocr_sampler_logprobs(logits + (size_t)s * V, V, next[s], 3, top_ids, top);
                /* on CUDA the two paths' rows are compared, not only the op (logprobs-op does that):
                 * room for a last bit of the rows, far below a wrong row or id */
                const double tol = m->be->kind == HYOCR_BACKEND_CPU ? 0.0 : 1e-3;
                expect_near(lps[s].logprob, lp, tol);
                g_assert_cmpint(lps[s].n_top, ==, 3);
                for (int t = 0; t < 3; t++) {
                    g_assert_cmpint(lps[s].top[t].id, ==, top_ids[t]);
                    expect_near(lps[s].top[t].logprob, top[t], tol);
                }
            }
            tok_b[s] = hyocr_sampler_sample(ref[s], logits + (size_t)s * V);
            hyocr_sampler_accept(ref[s], &tok_b[s], 1);
            if (next[s] != tok_b[s])
                g_error("step %d sequence %d (penalty %g): device chose %d, sampler %d", step, s, pens[s], next[s],
                        tok_b[s]);
            tok_a[s] = next[s];
            g_assert_cmpint(a[s]->n_tokens, ==, b[s]->n_tokens);
        }
    }
    for (int s = 0; s < N_SEQ; s++) {
        hyocr_model_pick_slot_free(m, picks[s].slot);
        hyocr_model_seq_free(m, a[s]);
        hyocr_model_seq_free(m, b[s]);
        hyocr_sampler_free(ref[s]);
    }
    g_free(logits);
    g_rand_free(r);
}

static void test_decode(gconstpointer cuda)
{
    loaded l;
    if (!load(&l, GPOINTER_TO_INT(cuda))) return;
    const float with[N_SEQ] = { 1.08f, 1.5f }, without[N_SEQ] = { 1.0f, 1.0f };
    decode_case(l.m, with, 12, 60, NULL);
    decode_case(l.m, without, 30, 40, NULL);
    /* sampled: one row hot with top-k, one with top-p (and a greedy-only step shape before) */
    const hyocr_pick_draw sampled[N_SEQ] = { { 1.2f, 20, 1.0f, 0, 0 }, { 0.9f, 0, 0.92f, 0, 0 } };
    decode_case(l.m, with, 12, 60, sampled);
    /* A pool resize between jobs moves the cache: captured steps must notice. */
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_model_kv_resize(l.m, 4096, &err));
    g_assert_no_error(err);
    decode_case(l.m, with, 7, 30, NULL);
    unload(&l);
}

static int argmax_margin(const float *x, int V, float *margin)
{
    int best = 0;
    float second = -INFINITY;
    for (int v = 1; v < V; v++) {
        if (x[v] > x[best]) {
            second = x[best];
            best = v;
        } else if (x[v] > second) {
            second = x[v];
        }
    }
    *margin = x[best] - second;
    return best;
}

/* Decode steps of up to m->fused_rows rows take the fused products. n sequences a (fused)
 * and b (unfused) bring their logits to the host, c (fused) choose on the device, in graphs
 * on CUDA; all three are fed c's choices. One row: the fused logits match the unfused ones
 * (CPU: the same arithmetic; CUDA: up to the order of fp32 sums, hk_gemv1 against hk_gemv).
 * Several rows: bit-identical (CUDA: hk_gemm_rows's modes against the unfused ops, whose
 * products go through hk_gemm_rows too). c's choice must be the fused logits' argmax
 * wherever that is not a near-tie. */
static void decode_fused_case(hyocr_model *m, int n, int steps)
{
    const int fused = m->fused_rows, on = fused ? fused : INT_MAX;   /* the CPU fuses when told */
    const int V = m->cfg.text.vocab_size;
    const double tol = m->be->kind == HYOCR_BACKEND_CUDA ? 5e-3 : 1e-6;
    g_assert_cmpint(n, <=, on);
    g_autoptr(GError) err = NULL;
    GRand *r = g_rand_new_with_seed(5u + (guint)n);
    g_autofree float *la = g_new(float, (size_t)n * V), *lb = g_new(float, (size_t)n * V);
    g_autofree hyocr_kv_seq **kv = g_new(hyocr_kv_seq *, 3 * n);
    g_autofree hyocr_pick *picks = g_new(hyocr_pick, n);
    g_autofree hyocr_text_seq *q = g_new(hyocr_text_seq, 3 * n);
    g_autofree int32_t *tok = g_new(int32_t, n), *next = g_new(int32_t, n);
    for (int s = 0; s < n; s++) {
        const int len = 20 + s % 5;
        int32_t ids[24];
        for (int i = 0; i < len; i++) ids[i] = g_rand_int_range(r, 2, 1000);
        for (int g = 0; g < 3; g++) {
            kv[g * n + s] = hyocr_model_seq_new(m);
            hyocr_text_seq pq = { .ids = ids, .n_new = len, .kv = kv[g * n + s] };
            g_assert_true(hyocr_text_forward(m, &pq, 1, la, NULL, NULL, &err));
            g_assert_no_error(err);
        }
        picks[s] = (hyocr_pick){ .slot = hyocr_model_pick_slot_new(m, ids, len, &err), .penalty = 1.0f };
        g_assert_no_error(err);
        tok[s] = ids[len - 1];
    }
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < 3 * n; i++) q[i] = (hyocr_text_seq){ .ids = &tok[i % n], .n_new = 1, .kv = kv[i] };
        m->fused_rows = on;
        g_assert_true(hyocr_text_decode(m, q, n, NULL, NULL, NULL, NULL, la, &err));
        g_assert_true(hyocr_text_decode(m, q + 2 * n, n, picks, next, NULL, NULL, NULL, &err));
        m->fused_rows = 0;
        g_assert_true(hyocr_text_decode(m, q + n, n, NULL, NULL, NULL, NULL, lb, &err));
        m->fused_rows = fused;
        g_assert_no_error(err);
        for (int s = 0; s < n; s++) {
            const float *fa = la + (size_t)s * V, *fb = lb + (size_t)s * V;
            if (n == 1) {
                double num = 0.0, den = 0.0;
                for (int v = 0; v < V; v++) {
                    num += ((double)fa[v] - fb[v]) * ((double)fa[v] - fb[v]);
                    den += (double)fb[v] * fb[v];
                }
                double e = sqrt(num / den);
                if (!(e <= tol))
                    g_error("step %d: fused logits differ from unfused by rel-L2 %.3g (tol %.3g)", step, e, tol);
            } else {
                for (int v = 0; v < V; v++)
                    if (memcmp(&fa[v], &fb[v], sizeof(float)))
                        g_error("%d rows, step %d, sequence %d: fused logit %d is %.9g, unfused %.9g", n, step, s, v,
                                fa[v], fb[v]);
            }
            float margin;
            int best = argmax_margin(fa, V, &margin);
            if (margin > 1e-2f && next[s] != best)
                g_error("%d rows, step %d, sequence %d: device chose %d, fused logits' argmax %d", n, step, s, next[s],
                        best);
            tok[s] = next[s];
        }
    }
    for (int s = 0; s < n; s++) hyocr_model_pick_slot_free(m, picks[s].slot);
    for (int i = 0; i < 3 * n; i++) hyocr_model_seq_free(m, kv[i]);
    g_rand_free(r);
}

static void test_decode_fused(gconstpointer cuda)
{
    loaded l;
    if (!load(&l, GPOINTER_TO_INT(cuda))) return;
    const hyocr_tuning *t = &l.be->tuning;
    /* CUDA: steps of up to 16 rows fuse (the tiny model's K are multiples of 32) */
    if (GPOINTER_TO_INT(cuda) && t->fuse == HYOCR_SWITCH_DEFAULT && !t->no_gemv)
        g_assert_cmpint(l.m->fused_rows, ==, 16);
    decode_fused_case(l.m, 1, 25);
    decode_fused_case(l.m, 3, 12);
    decode_fused_case(l.m, 16, 6);
    unload(&l);
}

static void test_decode_bad(gconstpointer cuda)
{
    loaded l;
    if (!load(&l, GPOINTER_TO_INT(cuda))) return;
    hyocr_model *m = l.m;
    g_autoptr(GError) err = NULL;
    int32_t id = 5;
    hyocr_kv_seq *seq = hyocr_model_seq_new(m);
    hyocr_text_seq q = { .ids = &id, .n_new = 1, .kv = seq };
    hyocr_pick pick = { .slot = 3, .penalty = 1.0f };
    int32_t next = -1;
    g_assert_false(hyocr_text_decode(m, &q, 1, &pick, &next, NULL, NULL, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "slot"));
    g_assert_cmpint(seq->n_tokens, ==, 0);
    g_clear_error(&err);

    /* two rows, one slot */
    int shared = hyocr_model_pick_slot_new(m, &id, 1, &err);
    g_assert_no_error(err);
    hyocr_kv_seq *seq2 = hyocr_model_seq_new(m);
    hyocr_text_seq q2[2] = { { .ids = &id, .n_new = 1, .kv = seq }, { .ids = &id, .n_new = 1, .kv = seq2 } };
    hyocr_pick p2[2] = { { .slot = shared, .penalty = 1.0f }, { .slot = shared, .penalty = 1.0f } };
    int32_t next2[2];
    g_assert_false(hyocr_text_decode(m, q2, 2, p2, next2, NULL, NULL, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    hyocr_model_seq_free(m, seq2);
    hyocr_model_pick_slot_free(m, shared);

    int32_t bad = m->cfg.text.vocab_size;
    g_assert_cmpint(hyocr_model_pick_slot_new(m, &bad, 1, &err), ==, -1);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);

    int slots[64];
    for (int i = 0; i < 64; i++) {
        slots[i] = hyocr_model_pick_slot_new(m, &id, 1, &err);
        g_assert_no_error(err);
        g_assert_cmpint(slots[i], ==, i);
    }
    g_assert_cmpint(hyocr_model_pick_slot_new(m, &id, 1, &err), ==, -1);
    g_assert_nonnull(err);
    g_clear_error(&err);
    hyocr_model_pick_slot_free(m, 17);
    g_assert_cmpint(hyocr_model_pick_slot_new(m, &id, 1, &err), ==, 17);
    hyocr_model_seq_free(m, seq);
    unload(&l);
}

/* ---- finite check ---- */

static void finite_case(hyocr_backend *be, hyocr_buf_kind kind)
{
    const hyocr_backend_ops *o = be->ops;
    g_autoptr(GError) err = NULL;
    const size_t n = 5000;
    hyocr_buf *b = o->alloc(be, kind, n, &err);
    g_assert_no_error(err);
    float *x = g_new(float, n);
    for (size_t i = 0; i < n; i++) x[i] = (float)i * 0.01f - 20.0f;
    bool fin = false;
    g_assert_true(o->upload_f32(be, b, 0, x, n, &err));
    g_assert_true(o->check_finite(be, b, n, &fin, &err));
    g_assert_true(fin);
    const float bad[] = { INFINITY, -INFINITY, NAN };
    const size_t at[] = { 0, 2345, n - 1 };
    for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
        g_assert_true(o->upload_f32(be, b, at[k], &bad[k], 1, &err));
        g_assert_true(o->check_finite(be, b, n, &fin, &err));
        g_assert_false(fin);
        /* only the first n elements count */
        g_assert_true(o->check_finite(be, b, at[k], &fin, &err));
        g_assert_true(fin);
        g_assert_true(o->upload_f32(be, b, at[k], &x[at[k]], 1, &err));
    }
    g_assert_true(o->check_finite(be, b, n, &fin, &err));
    g_assert_true(fin);
    g_assert_false(o->check_finite(be, b, n + 1, &fin, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_free(x);
    o->buf_free(be, b);
}

static void test_finite(gconstpointer cuda)
{
    hyocr_backend *be = open_backend(GPOINTER_TO_INT(cuda));
    if (!be) return;
    finite_case(be, HYOCR_BUF_F32);
    finite_case(be, HYOCR_BUF_ACT);
    /* a 65504+ value is ±Inf once stored in FP16 */
    if (be->kind == HYOCR_BACKEND_CUDA) {
        g_autoptr(GError) err = NULL;
        hyocr_buf *b = be->ops->alloc(be, HYOCR_BUF_ACT, 4, &err);
        float big[4] = { 1, 2, 70000.0f, 3 };
        bool fin = true;
        g_assert_true(be->ops->upload_f32(be, b, 0, big, 4, &err));
        g_assert_true(be->ops->check_finite(be, b, 4, &fin, &err));
        g_assert_no_error(err);
        g_assert_false(fin);
        be->ops->buf_free(be, b);
    }
    hyocr_backend_free(be);
}

/* ---- benchmark (HYOCR_DECODE_BENCH=<checkpoint dir>; CUDA) ----
 * Decode speed after a prompt as long as a 2048² page's (4191 tokens: decode
 * cost depends on the context length, not on what it holds): the old way (logits
 * to the host, CPU sampler), the device choice uncaptured (HYOCR_NO_GRAPH) and
 * replayed graphs; then batches of 1087-token (1024² page) sequences. */

typedef enum { BENCH_HOST, BENCH_EAGER, BENCH_GRAPH } bench_mode;

static double bench_run(hyocr_model *m, int n_seq, int ctx, int steps, bench_mode mode)
{
    const int V = m->cfg.text.vocab_size;
    g_autoptr(GError) err = NULL;
    GRand *r = g_rand_new_with_seed(7);
    hyocr_kv_seq **kv = g_new(hyocr_kv_seq *, n_seq);
    hyocr_pick *picks = g_new(hyocr_pick, n_seq);
    int32_t *tok = g_new(int32_t, n_seq);
    hyocr_text_seq *q = g_new(hyocr_text_seq, n_seq);
    hyocr_sampler *smp = NULL;
    float *logits = g_new(float, (size_t)n_seq * V);
    int32_t *ids = g_new(int32_t, ctx);
    for (int s = 0; s < n_seq; s++) {
        for (int i = 0; i < ctx; i++) ids[i] = g_rand_int_range(r, 1000, 100000);
        kv[s] = hyocr_model_seq_new(m);
        hyocr_text_seq pq = { .ids = ids, .n_new = ctx, .kv = kv[s] };
        g_assert_true(hyocr_text_forward(m, &pq, 1, logits, NULL, NULL, &err));
        g_assert_no_error(err);
        picks[s] = (hyocr_pick){ .slot = hyocr_model_pick_slot_new(m, ids, ctx, &err), .penalty = 1.08f };
        g_assert_no_error(err);
        tok[s] = ids[ctx - 1];
    }
    hyocr_sampler_params sp = { .temperature = 0, .repetition_penalty = 1.08f };
    smp = hyocr_sampler_init(&sp, V);
    const bool no_graph = m->be->tuning.no_graph;
    m->be->tuning.no_graph = mode != BENCH_GRAPH;
    gint64 t0 = 0;
    for (int step = -3; step < steps; step++) {   /* three untimed steps: capture, warm-up */
        if (step == 0) {
            g_assert_true(m->be->ops->sync(m->be, &err));
            t0 = g_get_monotonic_time();
        }
        for (int s = 0; s < n_seq; s++) q[s] = (hyocr_text_seq){ .ids = &tok[s], .n_new = 1, .kv = kv[s] };
        if (mode == BENCH_HOST) {
            g_assert_true(hyocr_text_decode(m, q, n_seq, NULL, NULL, NULL, NULL, logits, &err));
            for (int s = 0; s < n_seq; s++) tok[s] = hyocr_sampler_sample(smp, logits + (size_t)s * V);
        } else {
            g_assert_true(hyocr_text_decode(m, q, n_seq, picks, tok, NULL, NULL, NULL, &err));
        }
        g_assert_no_error(err);
    }
    double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
    m->be->tuning.no_graph = no_graph;
    for (int s = 0; s < n_seq; s++) {
        hyocr_model_pick_slot_free(m, picks[s].slot);
        hyocr_model_seq_free(m, kv[s]);
    }
    hyocr_sampler_free(smp);
    g_free(kv);
    g_free(picks);
    g_free(tok);
    g_free(q);
    g_free(logits);
    g_free(ids);
    g_rand_free(r);
    return (double)steps * n_seq / secs;
}

static void test_bench(void)
{
    const char *dir = g_getenv("HYOCR_DECODE_BENCH");
    if (!dir) {
        g_test_skip("set HYOCR_DECODE_BENCH to a full-size checkpoint directory");
        return;
    }
    hyocr_backend *be = open_backend(true);
    if (!be) return;
    g_autoptr(GError) err = NULL;
    hyocr_checkpoint *ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    hyocr_model *m = hyocr_model_load(be, ck, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_model_kv_init(m, 16, 0, 20480, 0, &err));   /* no growth (block moves) while timing */
    static const char *const names[] = { "host sampler", "device pick, no graph", "device pick, graph" };
    const char *only = g_getenv("HYOCR_DECODE_BENCH_MODES");   /* e.g. "2": graphs only (profiling) */
    /* e.g. "16": only those batches of 1087-token sequences (profiling one batch size) */
    const char *batch_list = g_getenv("HYOCR_DECODE_BENCH_BATCHES");
    for (int mode = 0; mode < 3 && !batch_list; mode++) {
        if (only && !strchr(only, '0' + mode)) continue;
        printf("# decode batch 1, context 4191: %-24s %8.1f tok/s\n", names[mode], bench_run(m, 1, 4191, 256, mode));
        fflush(stdout);
    }
    if (g_getenv("HYOCR_DECODE_BENCH_NO_BATCH")) {
        hyocr_model_free(m);
        hyocr_checkpoint_free(ck);
        hyocr_backend_free(be);
        return;
    }
    g_auto(GStrv) batches = g_strsplit(batch_list ? batch_list : "1,4,16", ",", 0);
    for (char **b = batches; *b; b++)
        for (int mode = 1; mode < 3; mode++) {
            int n = atoi(*b);
            if ((only && !strchr(only, '0' + mode)) || n < 1 || n > 64) continue;
            printf("# decode batch %d, context 1087: %-24s %8.1f tok/s\n", n, names[mode],
                   bench_run(m, n, 1087, 128, mode));
            fflush(stdout);
        }
    hyocr_model_free(m);
    hyocr_checkpoint_free(ck);
    hyocr_backend_free(be);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    const char *names[2] = { "cpu", "cuda" };
    for (int c = 0; c < 2; c++) {
        g_autofree char *p1 = g_strdup_printf("/decode/%s/pick-op", names[c]);
        g_autofree char *p2 = g_strdup_printf("/decode/%s/greedy", names[c]);
        g_autofree char *p3 = g_strdup_printf("/decode/%s/bad-inputs", names[c]);
        g_autofree char *p4 = g_strdup_printf("/decode/%s/check-finite", names[c]);
        g_test_add_data_func(p1, GINT_TO_POINTER(c), test_pick_op);
        g_test_add_data_func(p2, GINT_TO_POINTER(c), test_decode);
        g_test_add_data_func(p3, GINT_TO_POINTER(c), test_decode_bad);
        g_test_add_data_func(p4, GINT_TO_POINTER(c), test_finite);
        g_autofree char *p5 = g_strdup_printf("/decode/%s/fused", names[c]);
        g_test_add_data_func(p5, GINT_TO_POINTER(c), test_decode_fused);
        g_autofree char *p6 = g_strdup_printf("/decode/%s/sample-op", names[c]);
        g_test_add_data_func(p6, GINT_TO_POINTER(c), test_sample_op);
        g_autofree char *p7 = g_strdup_printf("/decode/%s/logprobs-op", names[c]);
        g_test_add_data_func(p7, GINT_TO_POINTER(c), test_logprobs_op);
    }
    g_test_add_func("/decode/cuda/bench", test_bench);
    return g_test_run();
}
