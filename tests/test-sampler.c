/* Sampler: HF repetition-penalty semantics, greedy ties, and the statistical
 * behaviour of temperature / top-k / top-p under our seeded generator. */
#include "sampler.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hyocr_sampler_params greedy_params(float penalty)
{
    return (hyocr_sampler_params){ .temperature = 0.0f, .top_k = 0, .top_p = 1.0f,
                                   .repetition_penalty = penalty, .seed = 0 };
}

static hyocr_sampler_params sampling_params(float t, int top_k, float top_p, uint64_t seed)
{
    return (hyocr_sampler_params){ .temperature = t, .top_k = top_k, .top_p = top_p,
                                   .repetition_penalty = 1.0f, .seed = seed };
}

static void accept1(hyocr_sampler *s, int32_t id)
{
    hyocr_sampler_accept(s, &id, 1);
}

/* ---------- repetition penalty ---------- */

static void test_penalty_signs(void)
{
    hyocr_sampler_params p = greedy_params(2.0f);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 8);
    const int32_t ids[] = { 0, 1, 2, 3, 0, 0, 1 };
    hyocr_sampler_accept(s, ids, G_N_ELEMENTS(ids));

    float x[8] = { 2.0f, -2.0f, 0.0f, -0.0f, 1.5f, 3.0f, -1.0f, 4.0f };
    hyocr_sampler_apply_penalty(s, x);
    g_assert_cmpfloat(x[0], ==, 1.0f);    /* positive: divided, once despite 3 occurrences */
    g_assert_cmpfloat(x[1], ==, -4.0f);   /* negative: multiplied */
    g_assert_cmpfloat(x[2], ==, 0.0f);    /* zero: HF's `score < 0` is false → divided → 0 */
    g_assert_false(signbit(x[2]));
    g_assert_cmpfloat(x[3], ==, 0.0f);    /* -0 stays -0 on either branch */
    g_assert_true(signbit(x[3]));
    g_assert_cmpfloat(x[4], ==, 1.5f);    /* never accepted: untouched */
    g_assert_cmpfloat(x[5], ==, 3.0f);
    g_assert_cmpfloat(x[6], ==, -1.0f);
    g_assert_cmpfloat(x[7], ==, 4.0f);
}

static void test_penalty_counted_once(void)
{
    hyocr_sampler_params p = greedy_params(2.0f);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 16);
    for (int i = 0; i < 5; i++) accept1(s, 5);
    float x[16] = { 0 };
    x[5] = 3.0f;
    x[9] = -3.0f;
    accept1(s, 9);
    accept1(s, 9);
    hyocr_sampler_apply_penalty(s, x);
    g_assert_cmpfloat(x[5], ==, 1.5f);
    g_assert_cmpfloat(x[9], ==, -6.0f);
    /* The next step's fresh logits get the same single factor. */
    float y[16] = { 0 };
    y[5] = 3.0f;
    hyocr_sampler_apply_penalty(s, y);
    g_assert_cmpfloat(y[5], ==, 1.5f);
}

/* Prompt ids and generated ids both enter the set; sample() penalises in place. */
static void test_penalty_prompt_and_generated(void)
{
    hyocr_sampler_params p = greedy_params(2.0f);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 10);
    const int32_t prompt[] = { 1, 2 };
    hyocr_sampler_accept(s, prompt, 2);

    const float base[10] = { 0, 5.0f, 4.5f, 0, 0, 3.0f, 0, 2.8f, 0, 0 };
    float x[10];
    memcpy(x, base, sizeof x);
    /* 1 → 2.5, 2 → 2.25: the prompt penalty hands the win to 5 (3.0). */
    int32_t t = hyocr_sampler_sample(s, x);
    g_assert_cmpint(t, ==, 5);
    g_assert_cmpfloat(x[1], ==, 2.5f);
    g_assert_cmpfloat(x[2], ==, 2.25f);
    accept1(s, t);

    memcpy(x, base, sizeof x);
    g_assert_cmpint(hyocr_sampler_sample(s, x), ==, 7);   /* 5 → 1.5 now; 7 keeps 2.8 */
}

static void test_penalty_divide_modes(void)
{
    const float pen = 1.08f;
    hyocr_sampler_params p = greedy_params(pen);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 1);
    accept1(s, 0);
    volatile float vp = pen;
    volatile float inv = 1.0f / vp;
    int differ = 0;
    for (int i = 1; i <= 20000; i++) {
        float v = (float)i * 0.00173f;
        float a = v, b = v, neg = -v;
        hyocr_sampler_set_penalty_divide(s, HYOCR_PENALTY_DIVIDE_RECIPROCAL);
        hyocr_sampler_apply_penalty(s, &a);
        hyocr_sampler_apply_penalty(s, &neg);
        hyocr_sampler_set_penalty_divide(s, HYOCR_PENALTY_DIVIDE_TRUE);
        hyocr_sampler_apply_penalty(s, &b);
        volatile float want_a = v * inv, want_b = v / vp, want_neg = -v * vp;
        g_assert_cmpfloat(a, ==, want_a);
        g_assert_cmpfloat(b, ==, want_b);
        g_assert_cmpfloat(neg, ==, want_neg);
        differ += a != b;
    }
    /* The modes are not interchangeable: some logits land one ulp apart. */
    g_assert_cmpint(differ, >, 0);

    /* A fresh sampler follows torch on CUDA (the R1 reference). */
    g_autoptr(hyocr_sampler) fresh = hyocr_sampler_init(&p, 1);
    accept1(fresh, 0);
    for (int i = 1; i <= 20000; i++) {
        float v = (float)i * 0.00173f, a = v;
        hyocr_sampler_apply_penalty(fresh, &a);
        volatile float want = v * inv;
        g_assert_cmpfloat(a, ==, want);
    }
}

static void test_penalty_off(void)
{
    const float pens[] = { 1.0f, 0.0f, -1.0f, NAN };
    for (size_t k = 0; k < G_N_ELEMENTS(pens); k++) {
        hyocr_sampler_params p = greedy_params(pens[k]);
        g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 4);
        const int32_t ids[] = { 0, 1, 2, 3 };
        hyocr_sampler_accept(s, ids, 4);
        float x[4] = { 1.0f, -1.0f, 2.5f, -0.5f };
        hyocr_sampler_apply_penalty(s, x);
        g_assert_cmpfloat(x[0], ==, 1.0f);
        g_assert_cmpfloat(x[1], ==, -1.0f);
        g_assert_cmpfloat(x[2], ==, 2.5f);
        g_assert_cmpfloat(x[3], ==, -0.5f);
    }
}

/* ---------- greedy ---------- */

static void test_greedy_ties(void)
{
    hyocr_sampler_params p = greedy_params(1.0f);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 10);
    float x[10] = { 0, 1, 2, 5.0f, 0, 0, 5.0f, 0, 0, 5.0f };
    g_assert_cmpint(hyocr_sampler_sample(s, x), ==, 3);

    float all_equal[10];
    for (int i = 0; i < 10; i++) all_equal[i] = -7.25f;
    g_assert_cmpint(hyocr_sampler_sample(s, all_equal), ==, 0);

    /* A tie created by the penalty: 4 / 2 == 2, lowest id wins. */
    hyocr_sampler_params p2 = greedy_params(2.0f);
    g_autoptr(hyocr_sampler) s2 = hyocr_sampler_init(&p2, 4);
    accept1(s2, 2);
    float y[4] = { 0.0f, 2.0f, 4.0f, 1.0f };
    g_assert_cmpint(hyocr_sampler_sample(s2, y), ==, 1);
}

/* torch.argmax treats NaN as the maximum and returns the first one. */
static void test_greedy_nan(void)
{
    hyocr_sampler_params p = greedy_params(1.0f);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 5);
    float x[5] = { 1.0f, 9.0f, NAN, 3.0f, NAN };
    g_assert_cmpint(hyocr_sampler_sample(s, x), ==, 2);
}

/* ---------- sampling ---------- */

static float *random_logits(int n, guint32 seed, double scale)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(seed);
    float *x = g_new(float, n);
    for (int i = 0; i < n; i++)
        x[i] = (float)(g_rand_double_range(r, -1.0, 1.0) * scale);
    return x;
}

static int cmp_float_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static int32_t sample_copy(hyocr_sampler *s, const float *logits, int n)
{
    g_autofree float *x = g_memdup2(logits, n * sizeof *x);
    return hyocr_sampler_sample(s, x);
}

/* Only the k highest logits are ever drawn, over 2000 differently seeded samplers. */
static void test_top_k_mask(void)
{
    const int n = 1000, k = 5;
    g_autofree float *logits = random_logits(n, 42, 1.0);
    g_autofree float *sorted = g_memdup2(logits, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_float_desc);
    g_assert_cmpfloat(sorted[k - 1], >, sorted[k]);   /* no tie at the border */

    int hits[1000] = { 0 };
    for (uint64_t seed = 0; seed < 2000; seed++) {
        hyocr_sampler_params p = sampling_params(1.0f, k, 1.0f, seed);
        g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, n);
        int32_t t = sample_copy(s, logits, n);
        g_assert_cmpint(t, >=, 0);
        g_assert_cmpint(t, <, n);
        g_assert_cmpfloat(logits[t], >=, sorted[k - 1]);
        hits[t]++;
    }
    int distinct = 0;
    for (int i = 0; i < n; i++) distinct += hits[i] > 0;
    g_assert_cmpint(distinct, ==, k);   /* logits within [-1, 1]: every one of the k shows up */
}

/* HF keeps everything ≥ the k-th value, so a tie at the border keeps both. */
static void test_top_k_border_tie(void)
{
    float logits[8] = { 3.0f, 2.0f, 1.0f, 1.0f, 0.5f, 0.9f, -1.0f, 2.5f };
    bool seen[8] = { false };
    hyocr_sampler_params p = sampling_params(1.0f, 4, 1.0f, 7);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 8);
    for (int i = 0; i < 3000; i++)
        seen[sample_copy(s, logits, 8)] = true;
    g_assert_true(seen[0] && seen[1] && seen[7]);
    g_assert_true(seen[2] && seen[3]);                 /* both ties at the 4th value */
    g_assert_false(seen[4] || seen[5] || seen[6]);
}

/* probs by id: 0.05, 0.5, 0.15, 0.3, and two ids at -inf */
static void nucleus_logits(float x[6])
{
    x[0] = logf(0.05f); x[1] = logf(0.5f); x[2] = logf(0.15f); x[3] = logf(0.3f);
    x[4] = -INFINITY;   x[5] = -INFINITY;
}

static void draw_counts(hyocr_sampler_params p, int draws, int counts[6])
{
    float logits[6];
    nucleus_logits(logits);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 6);
    memset(counts, 0, 6 * sizeof *counts);
    for (int i = 0; i < draws; i++)
        counts[sample_copy(s, logits, 6)]++;
}

static void test_top_p_mask(void)
{
    int c[6];
    /* 1 - 0.75 = 0.25: ascending cumsum .05, .20 removed; .50, 1.0 kept. */
    draw_counts(sampling_params(1.0f, 0, 0.75f, 11), 4000, c);
    g_assert_cmpint(c[0] + c[2] + c[4] + c[5], ==, 0);
    g_assert_cmpfloat(fabs(c[1] / 4000.0 - 0.5 / 0.8), <, 0.03);

    /* 1 - 0.9 = 0.1: only the 0.05 token goes. */
    draw_counts(sampling_params(1.0f, 0, 0.9f, 12), 4000, c);
    g_assert_cmpint(c[0] + c[4] + c[5], ==, 0);
    g_assert_cmpint(c[2], >, 0);
    g_assert_cmpfloat(fabs(c[2] / 4000.0 - 0.15 / 0.95), <, 0.03);

    /* Tiny top_p: the most probable token is always kept. */
    draw_counts(sampling_params(1.0f, 0, 0.01f, 13), 500, c);
    g_assert_cmpint(c[1], ==, 500);
}

/* top-p runs on the distribution renormalised after top-k (HF order). */
static void test_top_k_then_top_p(void)
{
    int c[6];
    /* top-2 → {0.625, 0.375}; cut 0.1 keeps both. */
    draw_counts(sampling_params(1.0f, 2, 0.9f, 21), 4000, c);
    g_assert_cmpint(c[0] + c[2], ==, 0);
    g_assert_cmpfloat(fabs(c[1] / 4000.0 - 0.625), <, 0.03);
    /* top_p 0.55, cut 0.45: renormalised, the 0.3 token sits at 0.375 ≤ 0.45 and goes;
     * over the full distribution its ascending cumsum would be 0.5 and it would stay. */
    draw_counts(sampling_params(1.0f, 2, 0.55f, 22), 1000, c);
    g_assert_cmpint(c[1], ==, 1000);
}

static void test_temperature(void)
{
    const float temps[] = { 0.5f, 1.0f, 2.0f };
    double freq[3];
    for (int k = 0; k < 3; k++) {
        hyocr_sampler_params p = sampling_params(temps[k], 0, 1.0f, 100 + k);
        g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 2);
        const float logits[2] = { 1.0f, 0.0f };
        int zero = 0;
        for (int i = 0; i < 4000; i++)
            zero += sample_copy(s, logits, 2) == 0;
        freq[k] = zero / 4000.0;
        double want = 1.0 / (1.0 + exp(-1.0 / temps[k]));
        g_assert_cmpfloat(fabs(freq[k] - want), <, 0.03);
    }
    g_assert_cmpfloat(freq[0], >, freq[1]);   /* colder → sharper */
    g_assert_cmpfloat(freq[1], >, freq[2]);   /* hotter → flatter */
}

static void draw_sequence(uint64_t seed, int32_t out[200])
{
    g_autofree float *logits = random_logits(50, 5, 0.5);
    hyocr_sampler_params p = sampling_params(1.0f, 0, 1.0f, seed);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 50);
    for (int i = 0; i < 200; i++)
        out[i] = sample_copy(s, logits, 50);
}

static void test_determinism(void)
{
    int32_t a[200], b[200], c[200];
    draw_sequence(1234, a);
    draw_sequence(1234, b);
    draw_sequence(1235, c);
    g_assert_cmpmem(a, sizeof a, b, sizeof b);
    g_assert_true(memcmp(a, c, sizeof a) != 0);
}

static void test_top_k1_is_greedy(void)
{
    const int n = 5000;
    hyocr_sampler_params pg = greedy_params(1.3f);
    hyocr_sampler_params ps = sampling_params(0.7f, 1, 1.0f, 99);
    ps.repetition_penalty = 1.3f;
    g_autoptr(hyocr_sampler) g = hyocr_sampler_init(&pg, n);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&ps, n);
    for (int step = 0; step < 50; step++) {
        g_autofree float *x = random_logits(n, 1000 + step % 3, 4.0);
        g_autofree float *y = g_memdup2(x, n * sizeof *y);
        int32_t tg = hyocr_sampler_sample(g, x);
        int32_t ts = hyocr_sampler_sample(s, y);
        g_assert_cmpint(tg, ==, ts);
        accept1(g, tg);
        accept1(s, ts);
    }
}

/* Full-vocabulary top-p without top-k (the light-token shortcut): every draw
 * is inside the nucleus computed here by a plain full sort. */
static void test_top_p_full_vocab(void)
{
    const int n = 120818;
    const float top_p = 0.9f;
    g_autofree float *logits = random_logits(n, 77, 6.0);
    g_autofree float *sorted = g_memdup2(logits, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_float_desc);
    double z = 0.0;
    for (int i = 0; i < n; i++) z += exp((double)sorted[i] - sorted[0]);
    /* Smallest logit kept: walk ascending until the cumulative mass exceeds 1 - top_p. */
    double cum = 0.0;
    float min_kept = sorted[0];
    for (int i = n - 1; i >= 0; i--) {
        cum += exp((double)sorted[i] - sorted[0]) / z;
        if (cum > 1.0 - top_p) { min_kept = sorted[i]; break; }
    }
    g_assert_cmpfloat(min_kept, <, sorted[0]);

    hyocr_sampler_params p = sampling_params(1.0f, 0, top_p, 3);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, n);
    for (int i = 0; i < 30; i++) {
        int32_t t = sample_copy(s, logits, n);
        g_assert_cmpfloat(logits[t], >=, min_kept);
    }
}

/* HF's warpers written out literally (full sorts) as an oracle for the kept set. */
typedef struct { float v; int32_t id; } scored;

static int cmp_scored_asc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return (x->id < y->id) - (x->id > y->id);   /* equal values: higher id first */
}

static int oracle_candidates(const float *logits, int n, float t, int top_k, float top_p, int32_t *out)
{
    g_autofree scored *c = g_new(scored, n);
    const float inv = 1.0f / t;
    for (int i = 0; i < n; i++) c[i] = (scored){ t == 1.0f ? logits[i] : logits[i] * inv, i };
    qsort(c, n, sizeof *c, cmp_scored_asc);
    int lo = 0;
    if (top_k > 0 && top_k < n) {
        float kth = c[n - top_k].v;
        while (c[lo].v < kth) lo++;
    }
    if (top_p > 0.0f && top_p < 1.0f) {
        double z = 0.0, cum = 0.0;
        for (int i = lo; i < n; i++) z += exp((double)c[i].v - c[n - 1].v);
        while (lo < n - 1) {
            cum += exp((double)c[lo].v - c[n - 1].v) / z;
            if (cum > 1.0 - top_p) break;
            lo++;
        }
    }
    for (int i = lo; i < n; i++) out[i - lo] = c[i].id;
    return n - lo;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void test_candidates_against_oracle(void)
{
    static const float temps[] = { 0.5f, 1.0f, 1.7f };
    static const int ks[] = { 0, 1, 5, 50, 100000 };
    /* No exactly representable simple fraction: with tied logits the cumulative
     * mass can land exactly on 1 - top_p, where rounding alone decides. */
    static const float ps[] = { 1.0f, 0.99f, 0.9f, 0.47f, 0.1f };
    g_autoptr(GRand) r = g_rand_new_with_seed(8);
    int sizes_seen = 0;
    for (int iter = 0; iter < 400; iter++) {
        int n = g_rand_int_range(r, 1, 3000);
        bool coarse = g_rand_boolean(r);   /* quarter steps: many exact ties */
        double scale = g_rand_double_range(r, 0.1, 12.0);
        g_autofree float *x = g_new(float, n);
        for (int i = 0; i < n; i++) {
            double v = g_rand_double_range(r, -1.0, 1.0) * scale;
            x[i] = coarse ? (float)(round(v * 4.0) / 4.0) : (float)v;
        }
        hyocr_sampler_params p = sampling_params(temps[iter % 3], ks[g_rand_int_range(r, 0, 5)],
                                                 ps[g_rand_int_range(r, 0, 5)], iter);
        g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, n);
        g_autofree int32_t *got = g_new(int32_t, n);
        g_autofree int32_t *want = g_new(int32_t, n);
        int n_got = hyocr_sampler_candidates(s, x, got);
        int n_want = oracle_candidates(x, n, p.temperature, p.top_k, p.top_p, want);
        qsort(got, n_got, sizeof *got, cmp_i32);
        qsort(want, n_want, sizeof *want, cmp_i32);
        g_assert_cmpmem(got, n_got * sizeof *got, want, n_want * sizeof *want);
        sizes_seen += n_got > 1 && n_got < n;
    }
    g_assert_cmpint(sizes_seen, >, 100);   /* most cases really cut something */
}

static void test_undrawable(void)
{
    hyocr_sampler_params p = sampling_params(1.0f, 0, 1.0f, 1);
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 4);
    float none[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    g_assert_cmpint(hyocr_sampler_sample(s, none), ==, 0);
    /* NaN entries are never drawn when something finite exists. */
    for (int i = 0; i < 200; i++) {
        float x[4] = { NAN, 0.0f, NAN, 0.0f };
        int32_t t = hyocr_sampler_sample(s, x);
        g_assert_true(t == 1 || t == 3);
    }
    /* +inf dominates without producing NaN weights. */
    float inf[4] = { 1.0f, INFINITY, 2.0f, -1.0f };
    g_assert_cmpint(hyocr_sampler_sample(s, inf), ==, 1);
}

static void test_bad_input(void)
{
    hyocr_sampler_params p = greedy_params(2.0f);
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*n_vocab > 0*");
    g_assert_null(hyocr_sampler_init(&p, 0));
    g_test_assert_expected_messages();

    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&p, 4);
    const int32_t ids[] = { -1, 2, 4, 1 };
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*token id -1 outside*");
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*token id 4 outside*");
    hyocr_sampler_accept(s, ids, 4);
    g_test_assert_expected_messages();
    float x[4] = { 1.0f, 1.0f, 1.0f, 1.0f };
    hyocr_sampler_apply_penalty(s, x);
    g_assert_cmpfloat(x[0], ==, 1.0f);
    g_assert_cmpfloat(x[1], ==, 0.5f);
    g_assert_cmpfloat(x[2], ==, 0.5f);
    g_assert_cmpfloat(x[3], ==, 1.0f);
}

/* Log-probabilities: a log-softmax that sums to one, the top ids largest first with ties to the
 * lower id, and no trouble with logits whose exp would overflow a float. */
static void test_logprobs(void)
{
    const float logits[] = { 1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 3.0f, 90.0f, 89.0f };
    const int V = G_N_ELEMENTS(logits);
    int32_t ids[4];
    float lp[4];
    double total = 0.0;
    for (int v = 0; v < V; v++) total += exp(hyocr_sampler_logprobs(logits, V, v, 0, ids, lp));
    g_assert_cmpfloat_with_epsilon(total, 1.0, 1e-6);
    float chosen = hyocr_sampler_logprobs(logits, V, 3, 4, ids, lp);
    const int32_t want[] = { 6, 7, 1, 3 };   /* 3.0 at 1, 3 and 5: the lower ids first */
    for (int i = 0; i < 4; i++) g_assert_cmpint(ids[i], ==, want[i]);
    g_assert_cmpfloat(lp[3], ==, chosen);
    g_assert_cmpfloat(lp[2], ==, lp[3]);
    g_assert_cmpfloat_with_epsilon(lp[0] - lp[1], 1.0, 1e-6);
    g_assert_cmpfloat_with_epsilon(lp[0], -log1p(exp(-1.0) + 3 * exp(-87.0)), 1e-6);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sampler/penalty/signs", test_penalty_signs);
    g_test_add_func("/sampler/penalty/counted-once", test_penalty_counted_once);
    g_test_add_func("/sampler/penalty/prompt-and-generated", test_penalty_prompt_and_generated);
    g_test_add_func("/sampler/penalty/divide-modes", test_penalty_divide_modes);
    g_test_add_func("/sampler/penalty/off", test_penalty_off);
    g_test_add_func("/sampler/greedy/ties", test_greedy_ties);
    g_test_add_func("/sampler/greedy/nan", test_greedy_nan);
    g_test_add_func("/sampler/top-k/mask", test_top_k_mask);
    g_test_add_func("/sampler/top-k/border-tie", test_top_k_border_tie);
    g_test_add_func("/sampler/top-p/mask", test_top_p_mask);
    g_test_add_func("/sampler/top-p/after-top-k", test_top_k_then_top_p);
    g_test_add_func("/sampler/top-p/full-vocab", test_top_p_full_vocab);
    g_test_add_func("/sampler/temperature", test_temperature);
    g_test_add_func("/sampler/determinism", test_determinism);
    g_test_add_func("/sampler/top-k1-is-greedy", test_top_k1_is_greedy);
    g_test_add_func("/sampler/candidates-oracle", test_candidates_against_oracle);
    g_test_add_func("/sampler/undrawable", test_undrawable);
    g_test_add_func("/sampler/bad-input", test_bad_input);
    g_test_add_func("/sampler/logprobs", test_logprobs);
    return g_test_run();
}
