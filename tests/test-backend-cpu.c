/* CPU backend ops against straightforward double-precision implementations
 * written here (materialised softmax, tent-weight bilinear, transformers-style
 * rope chunking), plus thread-count independence and error paths. */
#include "backend.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RTOL 1e-5

/* ---------------------------------------------------------------- helpers */

typedef struct {
    uint64_t s;
} rng;

static double rng_unit(rng *r)   /* [0, 1) */
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (double)(r->s >> 11) / 9007199254740992.0;
}

static float *rand_f32(uint64_t seed, size_t n, float lo, float hi)
{
    rng r = { seed * 0x9E3779B97F4A7C15ull + 1 };
    float *v = g_new(float, n ? n : 1);
    for (size_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * rng_unit(&r));
    return v;
}

/* Tests registered under /generic run the portable code paths (built-in GEMM,
 * SSE softmax) that a machine without OpenBLAS or AVX2 would take. */
static bool generic_mode;

static hyocr_backend *cpu_new(int n_threads)
{
    hyocr_backend_params p = { .n_threads = n_threads, .tuning.cpu_generic = generic_mode };
    g_autoptr(GError) err = NULL;
    hyocr_backend *be = hyocr_backend_cpu_init(&p, &err);
    g_assert_no_error(err);
    g_assert_nonnull(be);
    return be;
}

static hyocr_buf *buf_new(hyocr_backend *be, hyocr_buf_kind kind, const float *host, size_t n)
{
    g_autoptr(GError) err = NULL;
    hyocr_buf *b = be->ops->alloc(be, kind, n, &err);
    g_assert_no_error(err);
    if (host) {
        g_assert_true(be->ops->upload_f32(be, b, 0, host, n, &err));
        g_assert_no_error(err);
    } else {
        memset(b->data, 0, n * sizeof(float));
    }
    return b;
}

static float *buf_get(hyocr_backend *be, const hyocr_buf *b, size_t n)
{
    g_autoptr(GError) err = NULL;
    float *v = g_new(float, n ? n : 1);
    g_assert_true(be->ops->download_f32(be, b, 0, v, n, &err));
    g_assert_no_error(err);
    return v;
}

/* |got − want| ≤ rtol·(|want| + rms(want)): relative where values are large,
 * scaled by the array's magnitude where they cross zero. */
static void check_close(const char *what, const float *got, const double *want, size_t n, double rtol)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += want[i] * want[i];
    double rms = n ? sqrt(ss / n) : 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        double tol = rtol * (fabs(want[i]) + rms) + 1e-30;
        if (!(err <= tol)) {
            g_test_message("%s: element %zu: got %.9g, want %.9g (error %.3g, tolerance %.3g)",
                           what, i, (double)got[i], want[i], err, tol);
            g_test_fail();
            return;
        }
    }
}

static void check_bitwise(const char *what, const float *a, const float *b, size_t n)
{
    if (memcmp(a, b, n * sizeof(float)) != 0) {
        for (size_t i = 0; i < n; i++)
            if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
                g_test_message("%s: element %zu differs: %.9g vs %.9g", what, i, (double)a[i], (double)b[i]);
                break;
            }
        g_test_fail();
    }
}

static void expect_error(GError *err, int code, const char *needle)
{
    g_assert_error(err, HYOCR_ERROR, code);
    if (needle && !strstr(err->message, needle)) {
        g_test_message("error message '%s' does not mention '%s'", err->message, needle);
        g_test_fail();
    }
}

/* ---------------------------------------------------------------- memory and transfers */

static void test_alloc(void)
{
    hyocr_backend *be = cpu_new(1);
    g_autoptr(GError) err = NULL;
    hyocr_mem_info mi;
    be->ops->mem_info(be, &mi);
    g_assert_cmpint(mi.weights, ==, 0);
    g_assert_cmpint(mi.total, >, 0);
    g_assert_cmpint(mi.free, >, 0);
    g_assert_cmpint(mi.free, <=, mi.total);

    hyocr_buf *w = be->ops->alloc(be, HYOCR_BUF_WEIGHT, 1000, &err);
    hyocr_buf *k = be->ops->alloc(be, HYOCR_BUF_KV, 300, &err);
    hyocr_buf *a = be->ops->alloc(be, HYOCR_BUF_ACT, 50, &err);
    hyocr_buf *f = be->ops->alloc(be, HYOCR_BUF_F32, 7, &err);
    g_assert_no_error(err);
    g_assert_cmpint(w->elem_size, ==, 4);
    g_assert_cmpuint(w->n, ==, 1000);
    be->ops->mem_info(be, &mi);
    g_assert_cmpint(mi.weights, ==, 4000);
    g_assert_cmpint(mi.kv_reserved, ==, 1200);
    g_assert_cmpint(mi.workspace, ==, 228);
    g_assert_cmpint(mi.peak, ==, 5428);
    be->ops->buf_free(be, a);
    be->ops->buf_free(be, w);
    be->ops->mem_info(be, &mi);
    g_assert_cmpint(mi.weights, ==, 0);
    g_assert_cmpint(mi.workspace, ==, 28);
    g_assert_cmpint(mi.peak, ==, 5428);
    be->ops->buf_free(be, k);
    be->ops->buf_free(be, f);

    g_assert_null(be->ops->alloc(be, HYOCR_BUF_ACT, SIZE_MAX / 2, &err));
    expect_error(err, HYOCR_ERROR_NO_MEMORY, "9223372036854775807");
    g_clear_error(&err);
    hyocr_backend_free(be);

    hyocr_backend_params p = { .n_threads = 1, .memory_limit = 1 << 20 };
    be = hyocr_backend_cpu_init(&p, &err);
    g_assert_no_error(err);
    hyocr_buf *ok = be->ops->alloc(be, HYOCR_BUF_ACT, 1000, &err);
    g_assert_no_error(err);
    g_assert_null(be->ops->alloc(be, HYOCR_BUF_ACT, 1 << 18, &err));
    expect_error(err, HYOCR_ERROR_NO_MEMORY, "1048576 bytes");
    be->ops->buf_free(be, ok);
    hyocr_backend_free(be);
}

static uint16_t bf16_bits(float f)   /* exact for values with ≤ 8 significant bits */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16);
}

static void test_upload(void)
{
    hyocr_backend *be = cpu_new(2);
    g_autoptr(GError) err = NULL;
    hyocr_buf *dst = buf_new(be, HYOCR_BUF_WEIGHT, NULL, 16);

    const float f32[3] = { 1.5f, -2.25f, 3e-20f };
    /* half: 1.0, −2.0, 65504, smallest subnormal 2^-24, largest subnormal, −0, +inf */
    const uint16_t f16[7] = { 0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x8000, 0x7c00 };
    const double f16_want[7] = { 1.0, -2.0, 65504.0, ldexp(1.0, -24), 1023.0 * ldexp(1.0, -24), -0.0, INFINITY };
    uint16_t bf[3] = { bf16_bits(0.15625f), bf16_bits(-384.0f), bf16_bits(1e30f) };

    hyocr_tensor t = { .name = "t32", .dtype = HYOCR_DTYPE_F32, .n_dims = 1, .shape = { 3 },
                       .data = f32, .nbytes = sizeof f32, .file = "test.safetensors" };
    g_assert_true(be->ops->upload_weight(be, dst, 0, &t, &err));
    t = (hyocr_tensor){ .name = "t16", .dtype = HYOCR_DTYPE_F16, .n_dims = 2, .shape = { 7, 1 },
                        .data = f16, .nbytes = sizeof f16 };
    g_assert_true(be->ops->upload_weight(be, dst, 3, &t, &err));
    t = (hyocr_tensor){ .name = "tbf", .dtype = HYOCR_DTYPE_BF16, .n_dims = 1, .shape = { 3 },
                        .data = bf, .nbytes = sizeof bf };
    g_assert_true(be->ops->upload_weight(be, dst, 10, &t, &err));
    g_assert_no_error(err);

    g_autofree float *got = buf_get(be, dst, 16);
    g_assert_cmpfloat(got[0], ==, 1.5f);
    g_assert_cmpfloat(got[1], ==, -2.25f);
    g_assert_cmpfloat(got[2], ==, 3e-20f);
    for (int i = 0; i < 7; i++) g_assert_cmpfloat(got[3 + i], ==, f16_want[i]);
    g_assert_true(signbit(got[8]));
    g_assert_cmpfloat(got[10], ==, 0.15625f);
    g_assert_cmpfloat(got[11], ==, -384.0f);
    g_assert_cmpfloat(fabs(got[12] - 1e30) / 1e30, <, 1e-2);

    /* does not fit at offset 14 */
    g_assert_false(be->ops->upload_weight(be, dst, 14, &t, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "tbf");
    g_clear_error(&err);
    /* the file holds fewer bytes than the shape says */
    t.shape[0] = 4;
    g_assert_false(be->ops->upload_weight(be, dst, 0, &t, &err));
    expect_error(err, HYOCR_ERROR_CHECKPOINT, "tbf");
    g_clear_error(&err);
    t = (hyocr_tensor){ .name = "ids", .dtype = HYOCR_DTYPE_I64, .n_dims = 1, .shape = { 1 },
                        .data = f32, .nbytes = 8 };
    g_assert_false(be->ops->upload_weight(be, dst, 0, &t, &err));
    expect_error(err, HYOCR_ERROR_CHECKPOINT, "ids");
    g_clear_error(&err);

    /* copy within and across buffers, bounds checked */
    hyocr_buf *other = buf_new(be, HYOCR_BUF_ACT, NULL, 4);
    g_assert_true(be->ops->copy(be, other, 1, dst, 10, 3, &err));
    g_autofree float *o = buf_get(be, other, 4);
    g_assert_cmpfloat(o[0], ==, 0.0f);
    g_assert_cmpfloat(o[1], ==, 0.15625f);
    g_assert_cmpfloat(o[3], ==, got[12]);
    g_assert_false(be->ops->copy(be, other, 2, dst, 0, 3, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "dst");
    g_clear_error(&err);
    float tmp[20];
    g_assert_false(be->ops->download_f32(be, dst, 10, tmp, 7, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, NULL);
    g_clear_error(&err);
    g_assert_true(be->ops->sync(be, &err));

    be->ops->buf_free(be, other);
    be->ops->buf_free(be, dst);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- matmul */

static void matmul_case(hyocr_backend *be, int M, int N, int K, bool with_bias, size_t w_off, uint64_t seed)
{
    g_autoptr(GError) err = NULL;
    g_autofree float *x = rand_f32(seed, (size_t)M * K, -1, 1);
    g_autofree float *w = rand_f32(seed + 1, w_off + (size_t)N * K, -1, 1);
    g_autofree float *bias = rand_f32(seed + 2, N, -1, 1);
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x, (size_t)M * K);
    hyocr_buf *bw = buf_new(be, HYOCR_BUF_WEIGHT, w, w_off + (size_t)N * K);
    hyocr_buf *bb = buf_new(be, HYOCR_BUF_WEIGHT, bias, N);
    hyocr_buf *bo = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)M * N);
    g_assert_true(be->ops->matmul(be, bo, bx, bw, w_off, with_bias ? bb : NULL, M, N, K, &err));
    g_assert_no_error(err);
    g_autofree float *got = buf_get(be, bo, (size_t)M * N);
    g_autofree double *want = g_new(double, (size_t)M * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = with_bias ? bias[n] : 0.0;
            for (int k = 0; k < K; k++) s += (double)x[(size_t)m * K + k] * w[w_off + (size_t)n * K + k];
            want[(size_t)m * N + n] = s;
        }
    g_autofree char *what = g_strdup_printf("matmul %dx%dx%d", M, N, K);
    check_close(what, got, want, (size_t)M * N, RTOL);
    be->ops->buf_free(be, bx);
    be->ops->buf_free(be, bw);
    be->ops->buf_free(be, bb);
    be->ops->buf_free(be, bo);
}

static void test_matmul(void)
{
    hyocr_backend *be = cpu_new(2);
    matmul_case(be, 37, 45, 70, true, 13, 1);
    matmul_case(be, 1, 200, 129, true, 0, 2);
    matmul_case(be, 130, 67, 300, false, 5, 3);
    /* several output tiles, the last one a single row */
    matmul_case(be, 513, 300, 40, true, 0, 4);
    g_autoptr(GError) err = NULL;
    hyocr_buf *b = buf_new(be, HYOCR_BUF_ACT, NULL, 10);
    g_assert_false(be->ops->matmul(be, b, b, b, 0, NULL, 2, 3, 4, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "matmul");
    be->ops->buf_free(be, b);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- norms, pointwise */

static void test_layernorm(void)
{
    hyocr_backend *be = cpu_new(2);
    g_autoptr(GError) err = NULL;
    int M = 9, N = 1152;
    size_t mn = (size_t)M * N;
    /* a large common offset: a one-pass float variance would lose digits here */
    g_autofree float *res = rand_f32(11, mn, 40, 42);
    g_autofree float *delta = rand_f32(12, mn, -1, 1);
    g_autofree float *g = rand_f32(13, N, 0.5, 1.5);
    g_autofree float *b = rand_f32(14, N, -0.5, 0.5);
    hyocr_buf *br = buf_new(be, HYOCR_BUF_F32, res, mn), *bd = buf_new(be, HYOCR_BUF_ACT, delta, mn);
    hyocr_buf *bg = buf_new(be, HYOCR_BUF_WEIGHT, g, N), *bb = buf_new(be, HYOCR_BUF_WEIGHT, b, N);
    hyocr_buf *bo = buf_new(be, HYOCR_BUF_ACT, NULL, mn);
    g_assert_true(be->ops->add_layernorm(be, bo, br, bd, bg, bb, M, N, 1e-6f, &err));
    g_assert_no_error(err);
    g_autofree float *got = buf_get(be, bo, mn), *gotr = buf_get(be, br, mn);
    g_autofree double *want = g_new(double, mn);
    for (int m = 0; m < M; m++) {
        float *r = res + (size_t)m * N;
        for (int i = 0; i < N; i++) r[i] = r[i] + delta[(size_t)m * N + i];   /* the fp32 residual add */
        double mean = 0, var = 0;
        for (int i = 0; i < N; i++) mean += r[i];
        mean /= N;
        for (int i = 0; i < N; i++) var += (r[i] - mean) * (r[i] - mean);
        var /= N;
        for (int i = 0; i < N; i++)
            want[(size_t)m * N + i] = (r[i] - mean) / sqrt(var + 1e-6) * g[i] + b[i];
    }
    check_bitwise("layernorm residual", gotr, res, mn);
    check_close("layernorm", got, want, mn, 2e-6);

    /* without delta the residual is left alone */
    g_assert_true(be->ops->add_layernorm(be, bo, br, NULL, bg, bb, M, N, 1e-6f, &err));
    g_autofree float *got2 = buf_get(be, bo, mn), *gotr2 = buf_get(be, br, mn);
    check_bitwise("layernorm without delta", got2, got, mn);
    check_bitwise("layernorm residual untouched", gotr2, res, mn);
    be->ops->buf_free(be, br);
    be->ops->buf_free(be, bd);
    be->ops->buf_free(be, bg);
    be->ops->buf_free(be, bb);
    be->ops->buf_free(be, bo);
    hyocr_backend_free(be);
}

static void test_rmsnorm(void)
{
    hyocr_backend *be = cpu_new(2);
    g_autoptr(GError) err = NULL;
    int M = 7, N = 1024;
    size_t mn = (size_t)M * N;
    g_autofree float *res = rand_f32(21, mn, -3, 3);
    g_autofree float *delta = rand_f32(22, mn, -1, 1);
    g_autofree float *w = rand_f32(23, N, -2, 2);
    hyocr_buf *br = buf_new(be, HYOCR_BUF_F32, res, mn), *bd = buf_new(be, HYOCR_BUF_ACT, delta, mn);
    hyocr_buf *bw = buf_new(be, HYOCR_BUF_WEIGHT, w, N), *bo = buf_new(be, HYOCR_BUF_ACT, NULL, mn);
    g_assert_true(be->ops->add_rmsnorm(be, bo, br, bd, bw, M, N, 1e-5f, &err));
    g_assert_no_error(err);
    g_autofree float *got = buf_get(be, bo, mn);
    g_autofree double *want = g_new(double, mn);
    for (size_t i = 0; i < mn; i++) res[i] = res[i] + delta[i];
    for (int m = 0; m < M; m++) {
        const float *r = res + (size_t)m * N;
        double ss = 0;
        for (int i = 0; i < N; i++) ss += (double)r[i] * r[i];
        double inv = 1.0 / sqrt(ss / N + 1e-5);
        for (int i = 0; i < N; i++) want[(size_t)m * N + i] = w[i] * (r[i] * inv);
    }
    check_close("rmsnorm", got, want, mn, RTOL);

    /* in place (out == residual, no delta) */
    g_assert_true(be->ops->add_rmsnorm(be, br, br, NULL, bw, M, N, 1e-5f, &err));
    g_autofree float *inplace = buf_get(be, br, mn);
    check_bitwise("rmsnorm in place", inplace, got, mn);
    be->ops->buf_free(be, br);
    be->ops->buf_free(be, bd);
    be->ops->buf_free(be, bw);
    be->ops->buf_free(be, bo);
    hyocr_backend_free(be);
}

static void test_pointwise(void)
{
    hyocr_backend *be = cpu_new(2);
    g_autoptr(GError) err = NULL;
    size_t n = 100003;
    g_autofree float *x = rand_f32(31, n, -6, 6), *y = rand_f32(32, n, -1, 1);
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x, n), *by = buf_new(be, HYOCR_BUF_ACT, y, n);
    g_autofree double *want = g_new(double, n);

    g_assert_true(be->ops->add(be, bx, by, n, &err));
    g_autofree float *sum = buf_get(be, bx, n);
    for (size_t i = 0; i < n; i++) want[i] = (double)x[i] + y[i];
    check_close("add", sum, want, n, 1e-7);

    g_assert_true(be->ops->upload_f32(be, bx, 0, x, n, &err));
    g_assert_true(be->ops->gelu(be, bx, n, &err));
    g_autofree float *ge = buf_get(be, bx, n);
    for (size_t i = 0; i < n; i++) want[i] = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
    check_close("gelu", ge, want, n, RTOL);
    g_assert_no_error(err);

    /* the negative tail, where 1 + erf(x/√2) cancels: relative error per element */
    size_t nt = 2000;
    g_autofree float *tail = g_new(float, nt);
    for (size_t i = 0; i < nt; i++) tail[i] = -9.0f + 8.5f * (float)i / (float)nt;
    g_assert_true(be->ops->upload_f32(be, bx, 0, tail, nt, &err));
    g_assert_true(be->ops->gelu(be, bx, nt, &err));
    g_autofree float *gt = buf_get(be, bx, nt);
    for (size_t i = 0; i < nt; i++) {
        double w = 0.5 * tail[i] * erfc(-tail[i] / sqrt(2.0));
        if (!(fabs(gt[i] - w) <= 1e-5 * fabs(w))) {
            g_test_message("gelu(%.7g) = %.9g, want %.9g", (double)tail[i], (double)gt[i], w);
            g_test_fail();
            break;
        }
    }

    int M = 13, I = 1000;
    g_autofree float *gu = rand_f32(33, (size_t)M * 2 * I, -8, 8);
    hyocr_buf *bgu = buf_new(be, HYOCR_BUF_ACT, gu, (size_t)M * 2 * I);
    hyocr_buf *bo = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)M * I);
    g_assert_true(be->ops->swiglu(be, bo, bgu, M, I, &err));
    g_autofree float *sw = buf_get(be, bo, (size_t)M * I);
    for (int m = 0; m < M; m++)
        for (int i = 0; i < I; i++) {
            double gv = gu[(size_t)m * 2 * I + i], u = gu[(size_t)m * 2 * I + I + i];
            want[(size_t)m * I + i] = gv / (1.0 + exp(-gv)) * u;
        }
    check_close("swiglu", sw, want, (size_t)M * I, RTOL);
    g_assert_no_error(err);
    be->ops->buf_free(be, bx);
    be->ops->buf_free(be, by);
    be->ops->buf_free(be, bgu);
    be->ops->buf_free(be, bo);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- vision ops */

/* Source coordinate of output index i, as a tent-weight interpolation sees it:
 * clamped into [0, in − 1] so the weights of the neighbouring cells sum to 1.
 * An edge×edge grid is the table itself; otherwise R2 resamples even an axis
 * of unchanged size (torch's CUDA kernel, where the R2 references run). */
static double ref_src(int i, int out, int in, hyocr_posemb_interp interp, bool identity)
{
    if (identity) return i;
    double scale = interp == HYOCR_POSEMB_R2 ? in / (out + 0.1) : (double)in / out;
    double s = (i + 0.5) * scale - 0.5;
    return s < 0 ? 0 : s > in - 1 ? in - 1 : s;
}

static void ref_posemb(double *out, const float *tab, int edge, int gh, int gw, int C, hyocr_posemb_interp interp)
{
    for (int y = 0; y < gh; y++)
        for (int x = 0; x < gw; x++) {
            bool id = gh == edge && gw == edge;
            double sy = ref_src(y, gh, edge, interp, id), sx = ref_src(x, gw, edge, interp, id);
            for (int c = 0; c < C; c++) {
                double acc = 0;
                for (int ky = 0; ky < edge; ky++) {
                    double wy = 1.0 - fabs(sy - ky);
                    if (wy <= 0) continue;
                    for (int kx = 0; kx < edge; kx++) {
                        double wx = 1.0 - fabs(sx - kx);
                        if (wx > 0) acc += wy * wx * tab[((size_t)ky * edge + kx) * C + c];
                    }
                }
                out[((size_t)y * gw + x) * C + c] = acc;
            }
        }
}

static float *run_posemb(hyocr_backend *be, const float *x0, const float *table, int edge, int gh, int gw, int C,
                         hyocr_posemb_interp interp)
{
    g_autoptr(GError) err = NULL;
    size_t n = (size_t)gh * gw * C, tn = ((size_t)edge * edge + 1) * C;
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x0, n), *bt = buf_new(be, HYOCR_BUF_WEIGHT, table, tn);
    g_assert_true(be->ops->posemb_add(be, bx, bt, 1, edge, gh, gw, C, interp, &err));
    g_assert_no_error(err);
    float *got = buf_get(be, bx, n);
    be->ops->buf_free(be, bx);
    be->ops->buf_free(be, bt);
    return got;
}

/* The source scale both backends use: an edge×edge grid copies the table; R1 is
 * in/out; R2 goes through the float32 factor (out + 0.1)/edge, so even an axis of
 * size edge is resampled (by a scale just under 1). */
static void test_posemb_scale(void)
{
    for (int i = 0; i < 2; i++) {
        hyocr_posemb_interp in = i ? HYOCR_POSEMB_R2 : HYOCR_POSEMB_R1;
        g_assert_cmpfloat(hyocr_posemb_scale(64, 64, true, in), ==, 1.0f);
        g_assert_cmpfloat(hyocr_posemb_scale(7, 64, true, in), ==, 1.0f);
    }
    g_assert_cmpfloat(hyocr_posemb_scale(32, 64, false, HYOCR_POSEMB_R1), ==, 2.0f);
    g_assert_cmpfloat(hyocr_posemb_scale(64, 64, false, HYOCR_POSEMB_R1), ==, 1.0f);
    g_assert_cmpfloat(hyocr_posemb_scale(3, 64, false, HYOCR_POSEMB_R1), ==, 64.0f / 3.0f);
    /* (64 + 0.1f)/64 is 1.00156248f; its reciprocal rounds to 0.998439968f */
    g_assert_cmpfloat(hyocr_posemb_scale(64, 64, false, HYOCR_POSEMB_R2), ==, 0.998439968f);
    g_assert_cmpfloat(hyocr_posemb_scale(64, 64, false, HYOCR_POSEMB_R2), <, 1.0f);
    float sf = (32.0f + 0.1f) / 64.0f;
    g_assert_cmpfloat(hyocr_posemb_scale(32, 64, false, HYOCR_POSEMB_R2), ==, (float)(1.0 / (double)sf));
    g_assert_cmpfloat(hyocr_posemb_scale(32, 64, false, HYOCR_POSEMB_R2), <, 2.0f);
}

static void test_posemb(void)
{
    hyocr_backend *be = cpu_new(2);
    int edge = 16, C = 6;
    /* row 0 is the CLS slot and must never be read: poison it */
    g_autofree float *table = rand_f32(41, ((size_t)edge * edge + 1) * C, -1, 1);
    for (int c = 0; c < C; c++) table[c] = NAN;
    const float *grid = table + C;
    static const int sizes[][2] = { { 4, 6 }, { 16, 16 }, { 20, 40 }, { 16, 7 }, { 1, 33 } };
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++)
        for (int interp = HYOCR_POSEMB_R1; interp <= HYOCR_POSEMB_R2; interp++) {
            int gh = sizes[s][0], gw = sizes[s][1];
            size_t n = (size_t)gh * gw * C;
            g_autofree float *x0 = rand_f32(42 + s, n, -1, 1);
            g_autofree float *got = run_posemb(be, x0, table, edge, gh, gw, C, interp);
            g_autofree double *want = g_new(double, n);
            ref_posemb(want, grid, edge, gh, gw, C, interp);
            for (size_t i = 0; i < n; i++) want[i] += x0[i];
            g_autofree char *what = g_strdup_printf("posemb R%d %dx%d", interp + 1, gh, gw);
            check_close(what, got, want, n, RTOL);
        }

    /* identity: the table itself, bit for bit, in both variants */
    size_t n16 = (size_t)edge * edge * C;
    g_autofree float *zero = g_new0(float, n16);
    g_autofree float *id1 = run_posemb(be, zero, table, edge, 16, 16, C, HYOCR_POSEMB_R1);
    g_autofree float *id2 = run_posemb(be, zero, table, edge, 16, 16, C, HYOCR_POSEMB_R2);
    check_bitwise("posemb identity R1", id1, grid, n16);
    check_bitwise("posemb identity R2", id2, grid, n16);

    /* R1 and R2 sample at different coordinates when resizing */
    size_t n46 = (size_t)4 * 6 * C;
    g_autofree float *r1 = run_posemb(be, zero, table, edge, 4, 6, C, HYOCR_POSEMB_R1);
    g_autofree float *r2 = run_posemb(be, zero, table, edge, 4, 6, C, HYOCR_POSEMB_R2);
    g_assert_true(memcmp(r1, r2, n46 * sizeof(float)) != 0);

    g_autoptr(GError) err = NULL;
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, NULL, 10);
    g_assert_false(be->ops->posemb_add(be, bx, bx, 1, edge, 4, 6, C, HYOCR_POSEMB_R1, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "posemb_add");
    be->ops->buf_free(be, bx);
    hyocr_backend_free(be);
}

static void test_merge_newline(void)
{
    hyocr_backend *be = cpu_new(2);
    g_autoptr(GError) err = NULL;
    int gh = 6, gw = 10, C = 5;
    size_t n = (size_t)gh * gw * C;
    g_autofree float *x = rand_f32(51, n, -1, 1);
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x, n), *bo = buf_new(be, HYOCR_BUF_ACT, NULL, n);
    g_assert_true(be->ops->merge_gather(be, bo, bx, gh, gw, C, &err));
    g_assert_no_error(err);
    g_autofree float *got = buf_get(be, bo, n);
    /* scatter each input element to where a Conv2d weight [2C', C, 2, 2] flattened expects it */
    g_autofree float *want = g_new(float, n);
    for (int r = 0; r < gh; r++)
        for (int c = 0; c < gw; c++)
            for (int ch = 0; ch < C; ch++) {
                size_t orow = (size_t)(r / 2) * (gw / 2) + c / 2;
                want[orow * 4 * C + ch * 4 + (r % 2) * 2 + c % 2] = x[((size_t)r * gw + c) * C + ch];
            }
    check_bitwise("merge_gather", got, want, n);
    g_assert_false(be->ops->merge_gather(be, bo, bx, 5, gw, C, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "even");
    g_clear_error(&err);

    int Hm = 3, Wm = 5;
    size_t on = (size_t)Hm * (Wm + 1) * C;
    g_autofree float *nl = rand_f32(52, C, 5, 6);
    hyocr_buf *bnl = buf_new(be, HYOCR_BUF_WEIGHT, nl, C), *bo2 = buf_new(be, HYOCR_BUF_ACT, NULL, on);
    g_assert_true(be->ops->append_newline(be, bo2, bx, bnl, Hm, Wm, C, &err));
    g_autofree float *got2 = buf_get(be, bo2, on);
    for (int i = 0; i < Hm; i++)
        for (int j = 0; j <= Wm; j++)
            for (int ch = 0; ch < C; ch++) {
                float w = j == Wm ? nl[ch] : x[((size_t)i * Wm + j) * C + ch];
                g_assert_cmpfloat(got2[((size_t)i * (Wm + 1) + j) * C + ch], ==, w);
            }
    be->ops->buf_free(be, bx);
    be->ops->buf_free(be, bo);
    be->ops->buf_free(be, bnl);
    be->ops->buf_free(be, bo2);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- attention */

/* softmax(q·kᵀ·scale)·v with the whole score row materialised, in double */
static void ref_attend(double *out, const float *q, const float *const *k, const float *const *v, int n, int D,
                       double scale)
{
    double *s = g_new(double, n), mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) {
        double d = 0;
        for (int i = 0; i < D; i++) d += (double)q[i] * k[j][i];
        s[j] = d * scale;
        if (s[j] > mx) mx = s[j];
    }
    for (int j = 0; j < n; j++) sum += (s[j] = exp(s[j] - mx));
    for (int i = 0; i < D; i++) {
        double a = 0;
        for (int j = 0; j < n; j++) a += s[j] / sum * v[j][i];
        out[i] = a;
    }
    g_free(s);
}

static void attention_full_case(hyocr_backend *be, int n, int H, int D, float range, double rtol, uint64_t seed)
{
    g_autoptr(GError) err = NULL;
    float scale = 1.0f / sqrtf((float)D);
    size_t row = (size_t)3 * H * D;
    g_autofree float *qkv = rand_f32(seed, n * row, -range, range);
    hyocr_buf *bq = buf_new(be, HYOCR_BUF_ACT, qkv, n * row);
    hyocr_buf *bo = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)n * H * D);
    g_assert_true(be->ops->attention_full(be, bo, bq, n, H, D, scale, &err));
    g_assert_no_error(err);
    g_autofree float *got = buf_get(be, bo, (size_t)n * H * D);
    g_autofree double *want = g_new(double, (size_t)n * H * D);
    g_autofree const float **kp = g_new(const float *, n), **vp = g_new(const float *, n);
    for (int h = 0; h < H; h++) {
        for (int j = 0; j < n; j++) {
            kp[j] = qkv + j * row + (size_t)(H + h) * D;
            vp[j] = qkv + j * row + (size_t)(2 * H + h) * D;
        }
        for (int i = 0; i < n; i++)
            ref_attend(want + ((size_t)i * H + h) * D, qkv + i * row + (size_t)h * D, kp, vp, n, D, scale);
    }
    g_autofree char *what = g_strdup_printf("attention_full n %d, range %g", n, range);
    check_close(what, got, want, (size_t)n * H * D, rtol);
    be->ops->buf_free(be, bq);
    be->ops->buf_free(be, bo);
}

static void test_attention_full(void)
{
    hyocr_backend *be = cpu_new(2);
    /* several key blocks and query tiles; scores of a few units */
    attention_full_case(be, 600, 2, 72, 2.5f, RTOL, 61);
    /* scores in the hundreds: only a correctly tracked running maximum keeps exp
     * finite. The fp32 scores themselves carry ~1e-4 absolute error here, so the
     * comparison is looser; it is about overflow, not rounding. */
    attention_full_case(be, 300, 1, 72, 20.0f, 2e-3, 62);
    /* a lone query, odd head size */
    attention_full_case(be, 1, 2, 13, 1.0f, RTOL, 63);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- rope */

static void test_rope_params(void)
{
    hyocr_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.text.head_dim = 128;
    cfg.text.rope_theta = 10000.0;
    cfg.text.rope_alpha = 1000.0;
    cfg.text.n_rope_sections = 4;
    for (int i = 0; i < 4; i++) cfg.text.rope_section[i] = 16;
    cfg.rope_layout = HYOCR_ROPE_LAYOUT_R2;
    hyocr_rope_params rp;
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_rope_params_init(&rp, &cfg, &err));
    g_assert_no_error(err);
    g_assert_cmpint(rp.head_dim, ==, 128);
    g_assert_cmpint(rp.n_sections, ==, 4);
    g_assert_cmpint(rp.section[3], ==, 16);
    g_assert_cmpint(rp.layout, ==, HYOCR_ROPE_LAYOUT_R2);
    /* values dumped from the fp32 reference (spec §5.4.1) */
    g_assert_cmpfloat(rp.inv_freq[0], ==, 1.0f);
    g_assert_cmpfloat(rp.inv_freq[1], ==, 0.7760343551635742f);
    g_assert_cmpfloat(rp.inv_freq[2], ==, 0.6022293567657471f);
    g_assert_cmpfloat(rp.inv_freq[63], ==, 1.1547820122359553e-07f);
    g_assert_cmpfloat(rp.inv_freq[64], ==, 0.0f);
    for (int i = 1; i < 64; i++) {
        double want = 1.0 / pow(11158839.925077, 2.0 * i / 128);
        g_assert_cmpfloat(fabs(rp.inv_freq[i] - want) / want, <, 1e-5);
    }

    cfg.text.rope_alpha = 0.0;
    cfg.text.n_rope_sections = 0;
    cfg.text.head_dim = 64;
    g_assert_true(hyocr_rope_params_init(&rp, &cfg, &err));
    g_assert_cmpint(rp.n_sections, ==, 0);
    for (int i = 0; i < 32; i++) {
        double want = 1.0 / pow(10000.0, 2.0 * i / 64);
        g_assert_cmpfloat(fabs(rp.inv_freq[i] - want) / want, <, 1e-5);
    }
}

/* transformers' formulation: per-axis cos/sin of cat(freqs, freqs), split into
 * chunks, chunk k taken from axis k mod n. R1 chunks: 2·section over D dims.
 * R2 (original code): the section list repeated twice, chunk k from axis k mod n. */
static void ref_rope_cos_sin(const hyocr_rope_params *rp, const int32_t *pos, int n_axes, int M, int t,
                             double *cs, double *sn)
{
    int D = rp->head_dim, half = D / 2, n = rp->n_sections;
    double emb_c[4][512], emb_s[4][512];
    for (int a = 0; a < (n ? n : 1); a++) {
        int32_t p = pos[(n_axes == 1 ? 0 : a) * M + t];
        for (int d = 0; d < D; d++) {
            float ang = rp->inv_freq[d % half] * (float)p;   /* one fp32 product, as torch */
            emb_c[a][d] = cos((double)ang);
            emb_s[a][d] = sin((double)ang);
        }
    }
    int chunks[8], n_chunks = 0;
    for (int k = 0; k < n; k++) chunks[n_chunks++] = rp->layout == HYOCR_ROPE_LAYOUT_R1 ? 2 * rp->section[k]
                                                                                          : rp->section[k];
    if (rp->layout == HYOCR_ROPE_LAYOUT_R2)
        for (int k = 0; k < n; k++) chunks[n_chunks++] = rp->section[k];
    int d = 0;
    for (int k = 0; k < n_chunks; k++)
        for (int i = 0; i < chunks[k]; i++, d++) {
            cs[d] = emb_c[k % n][d];
            sn[d] = emb_s[k % n][d];
        }
    if (n == 0)
        for (d = 0; d < D; d++) {
            cs[d] = emb_c[0][d];
            sn[d] = emb_s[0][d];
        }
}

static void ref_rope_qknorm(double *out, const float *qkv, int M, const int32_t *pos, int n_axes, int Hq, int Hkv,
                            const hyocr_rope_params *rp, const float *qn, const float *kn, double eps)
{
    int D = rp->head_dim, half = D / 2, W = (Hq + 2 * Hkv) * D;
    for (int t = 0; t < M; t++) {
        double cs[512], sn[512];
        ref_rope_cos_sin(rp, pos, n_axes, M, t, cs, sn);
        for (int h = 0; h < Hq + 2 * Hkv; h++) {
            const float *x = qkv + (size_t)t * W + (size_t)h * D;
            double *o = out + (size_t)t * W + (size_t)h * D;
            if (h >= Hq + Hkv) {
                for (int d = 0; d < D; d++) o[d] = x[d];
                continue;
            }
            double r[512], ss = 0;
            for (int d = 0; d < D; d++) {
                double rot = d < half ? -(double)x[d + half] : x[d - half];
                r[d] = x[d] * cs[d] + rot * sn[d];
                ss += r[d] * r[d];
            }
            double inv = 1.0 / sqrt(ss / D + eps);
            const float *w = h < Hq ? qn : kn;
            for (int d = 0; d < D; d++) o[d] = w[d] * (r[d] * inv);
        }
    }
}

static float *run_rope(hyocr_backend *be, const float *qkv, int M, const int32_t *pos, int n_axes, int Hq, int Hkv,
                       const hyocr_rope_params *rp, const float *qn, const float *kn)
{
    g_autoptr(GError) err = NULL;
    int D = rp->head_dim;
    size_t n = (size_t)M * (Hq + 2 * Hkv) * D;
    hyocr_buf *b = buf_new(be, HYOCR_BUF_ACT, qkv, n);
    hyocr_buf *bq = buf_new(be, HYOCR_BUF_WEIGHT, qn, D), *bk = buf_new(be, HYOCR_BUF_WEIGHT, kn, D);
    g_assert_true(be->ops->rope_qknorm(be, b, M, pos, n_axes, Hq, Hkv, rp, bq, bk, 1e-5f, &err));
    g_assert_no_error(err);
    float *got = buf_get(be, b, n);
    be->ops->buf_free(be, b);
    be->ops->buf_free(be, bq);
    be->ops->buf_free(be, bk);
    return got;
}

/* head_dim 32, four sections; false with *err set where hyocr_rope_params_init refuses them. */
static bool rope_setup_sections(hyocr_rope_params *rp, hyocr_rope_layout layout, const int sec[4], GError **err)
{
    hyocr_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.text.head_dim = 32;
    cfg.text.rope_theta = 10000.0;
    cfg.text.rope_alpha = 1000.0;
    cfg.text.n_rope_sections = 4;
    memcpy(cfg.text.rope_section, sec, 4 * sizeof(int));
    cfg.rope_layout = layout;
    return hyocr_rope_params_init(rp, &cfg, err);
}

static void rope_setup(hyocr_rope_params *rp, hyocr_rope_layout layout)
{
    static const int sec[4] = { 4, 2, 6, 4 };   /* uneven on purpose */
    g_autoptr(GError) err = NULL;
    g_assert_true(rope_setup_sections(rp, layout, sec, &err));
    g_assert_no_error(err);
}

/* The axis table every backend reads: R1 gives chunks of 2·section over the D
 * dims, R2 chunks of section over the D/2 frequencies, repeated for both halves;
 * a section of 0 is an axis no dim reads, and the last dim belongs to the last
 * section that has any. */
static void test_rope_axes(void)
{
    hyocr_rope_params r1, r2, z;
    rope_setup(&r1, HYOCR_ROPE_LAYOUT_R1);
    rope_setup(&r2, HYOCR_ROPE_LAYOUT_R2);
    static const uint8_t want1[32] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
    static const uint8_t want2[32] = { 0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3,
                                       0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3 };
    g_assert_cmpmem(r1.axis, 32, want1, 32);
    g_assert_cmpmem(r2.axis, 32, want2, 32);
    for (int d = 32; d < HYOCR_ROPE_MAX_DIM; d++) g_assert_cmpint(r1.axis[d], ==, 0);

    g_autoptr(GError) err = NULL;
    static const int hole[4] = { 6, 0, 8, 2 }, tail[4] = { 10, 6, 0, 0 }, head[4] = { 0, 0, 0, 16 };
    g_assert_true(rope_setup_sections(&z, HYOCR_ROPE_LAYOUT_R1, hole, &err));
    for (int d = 0; d < 32; d++) g_assert_cmpint(z.axis[d], ==, d < 12 ? 0 : d < 28 ? 2 : 3);
    g_assert_true(rope_setup_sections(&z, HYOCR_ROPE_LAYOUT_R2, tail, &err));
    for (int d = 0; d < 32; d++) g_assert_cmpint(z.axis[d], ==, d % 16 < 10 ? 0 : 1);
    g_assert_true(rope_setup_sections(&z, HYOCR_ROPE_LAYOUT_R1, head, &err));
    for (int d = 0; d < 32; d++) g_assert_cmpint(z.axis[d], ==, 3);
    g_assert_no_error(err);

    /* sections that do not cover head_dim/2, or a negative one, are a config error */
    static const int short_[4] = { 5, 2, 6, 4 }, neg[4] = { 6, -2, 10, 2 }, over[4] = { 4, 2, 6, 5 };
    g_assert_false(rope_setup_sections(&z, HYOCR_ROPE_LAYOUT_R1, short_, &err));
    expect_error(err, HYOCR_ERROR_CONFIG, "sections");
    g_clear_error(&err);
    g_assert_false(rope_setup_sections(&z, HYOCR_ROPE_LAYOUT_R1, over, &err));
    expect_error(err, HYOCR_ERROR_CONFIG, "sections");
    g_clear_error(&err);
    g_assert_false(rope_setup_sections(&z, HYOCR_ROPE_LAYOUT_R2, neg, &err));
    expect_error(err, HYOCR_ERROR_CONFIG, "non-negative");
    g_clear_error(&err);

    /* a head dim the table cannot hold, or an odd one */
    hyocr_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.text.rope_theta = 10000.0;
    cfg.text.head_dim = HYOCR_ROPE_MAX_DIM + 2;
    g_assert_false(hyocr_rope_params_init(&z, &cfg, &err));
    expect_error(err, HYOCR_ERROR_CONFIG, "head_dim");
    g_clear_error(&err);
    cfg.text.head_dim = 31;
    g_assert_false(hyocr_rope_params_init(&z, &cfg, &err));
    expect_error(err, HYOCR_ERROR_CONFIG, "head_dim");
    g_clear_error(&err);
    cfg.text.head_dim = HYOCR_ROPE_MAX_DIM;
    g_assert_true(hyocr_rope_params_init(&z, &cfg, &err));
    g_assert_no_error(err);
}

static void test_rope_qknorm(void)
{
    hyocr_backend *be = cpu_new(2);
    int M = 9, Hq = 4, Hkv = 2, D = 32, W = (Hq + 2 * Hkv) * D;
    size_t n = (size_t)M * W;
    g_autofree float *qkv = rand_f32(71, n, -2, 2);
    g_autofree float *qn = rand_f32(72, D, 0.5, 1.5), *kn = rand_f32(73, D, 0.5, 1.5);
    /* rows 0-2 and 8 are text (all axes equal), rows 3-7 image grid tokens */
    int32_t pos[4 * 9];
    for (int t = 0; t < M; t++) {
        bool img = t >= 3 && t < 8;
        pos[t] = 100 + t;
        pos[M + t] = img ? (t - 3) % 3 : 100 + t;
        pos[2 * M + t] = img ? (t - 3) / 3 : 100 + t;
        pos[3 * M + t] = img ? 0 : 100 + t;
    }
    hyocr_rope_params r1, r2;
    rope_setup(&r1, HYOCR_ROPE_LAYOUT_R1);
    rope_setup(&r2, HYOCR_ROPE_LAYOUT_R2);
    g_autofree float *g1 = run_rope(be, qkv, M, pos, 4, Hq, Hkv, &r1, qn, kn);
    g_autofree float *g2 = run_rope(be, qkv, M, pos, 4, Hq, Hkv, &r2, qn, kn);
    g_autofree double *want = g_new(double, n);
    ref_rope_qknorm(want, qkv, M, pos, 4, Hq, Hkv, &r1, qn, kn, 1e-5);
    check_close("rope R1", g1, want, n, RTOL);
    ref_rope_qknorm(want, qkv, M, pos, 4, Hq, Hkv, &r2, qn, kn, 1e-5);
    check_close("rope R2", g2, want, n, RTOL);

    /* v untouched; R1 ≡ R2 exactly on text rows, different on grid rows */
    for (int t = 0; t < M; t++) {
        size_t v0 = (size_t)t * W + (size_t)(Hq + Hkv) * D;
        check_bitwise("rope leaves v", g1 + v0, qkv + v0, (size_t)Hkv * D);
        bool same = memcmp(g1 + (size_t)t * W, g2 + (size_t)t * W, (size_t)W * sizeof(float)) == 0;
        bool img = t >= 3 && t < 8;
        if (same == img) {
            g_test_message("rope row %d: R1 and R2 %s", t, same ? "agree on an image row" : "differ on a text row");
            g_test_fail();
        }
    }

    /* one axis given = four equal axes */
    int32_t pos1[9], pos4[36];
    for (int t = 0; t < M; t++) {
        pos1[t] = 3 * t + 1;
        for (int a = 0; a < 4; a++) pos4[a * M + t] = 3 * t + 1;
    }
    g_autofree float *a1 = run_rope(be, qkv, M, pos1, 1, Hq, Hkv, &r1, qn, kn);
    g_autofree float *a4 = run_rope(be, qkv, M, pos4, 4, Hq, Hkv, &r1, qn, kn);
    check_bitwise("rope 1 axis vs 4 equal axes", a1, a4, n);

    /* plain 1-D rope */
    hyocr_rope_params r0 = r1;
    r0.n_sections = 0;
    g_autofree float *p0 = run_rope(be, qkv, M, pos1, 1, Hq, Hkv, &r0, qn, kn);
    ref_rope_qknorm(want, qkv, M, pos1, 1, Hq, Hkv, &r0, qn, kn, 1e-5);
    check_close("rope 1-D", p0, want, n, RTOL);

    /* a section of 0 (an axis no dim reads) runs; bad sections never reach a backend
     * (test_rope_axes: hyocr_rope_params_init refuses them) */
    g_autoptr(GError) err = NULL;
    hyocr_rope_params hole;
    g_assert_true(rope_setup_sections(&hole, HYOCR_ROPE_LAYOUT_R1, (const int[4]){ 6, 0, 8, 2 }, &err));
    hyocr_buf *b = buf_new(be, HYOCR_BUF_ACT, qkv, n);
    hyocr_buf *bq = buf_new(be, HYOCR_BUF_WEIGHT, qn, D);
    g_assert_true(be->ops->rope_qknorm(be, b, M, pos, 4, Hq, Hkv, &hole, bq, bq, 1e-5f, &err));
    g_assert_no_error(err);
    g_assert_false(be->ops->rope_qknorm(be, b, M, pos, 2, Hq, Hkv, &r1, bq, bq, 1e-5f, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "axes");
    be->ops->buf_free(be, b);
    be->ops->buf_free(be, bq);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- paged attention */

typedef struct {
    int            Hq, Hkv, D, bs, n_blocks;
    hyocr_buf     *kc, *vc;
} paged_env;

static void paged_env_init(paged_env *e, hyocr_backend *be, int Hq, int Hkv, int D, int bs, int n_blocks)
{
    *e = (paged_env){ Hq, Hkv, D, bs, n_blocks, NULL, NULL };
    size_t n = (size_t)n_blocks * bs * Hkv * D;
    e->kc = buf_new(be, HYOCR_BUF_KV, NULL, n);
    e->vc = buf_new(be, HYOCR_BUF_KV, NULL, n);
}

static void paged_env_free(paged_env *e, hyocr_backend *be)
{
    be->ops->buf_free(be, e->kc);
    be->ops->buf_free(be, e->vc);
}

/* qkv rows of the sequences, packed in order; returns out [rows, Hq·D] */
static float *paged_call(hyocr_backend *be, paged_env *e, const float *qkv, const hyocr_seq_view *sv, int n_seqs)
{
    g_autoptr(GError) err = NULL;
    int rows = 0;
    for (int s = 0; s < n_seqs; s++) rows += sv[s].n_new;
    size_t W = (size_t)(e->Hq + 2 * e->Hkv) * e->D, on = (size_t)rows * e->Hq * e->D;
    hyocr_buf *bq = buf_new(be, HYOCR_BUF_ACT, qkv, rows * W), *bo = buf_new(be, HYOCR_BUF_ACT, NULL, on);
    g_assert_true(be->ops->attention_paged(be, bo, bq, e->kc, e->vc, e->bs, sv, n_seqs, e->Hq, e->Hkv, e->D,
                                           1.0f / sqrtf((float)e->D), NULL, &err));
    g_assert_no_error(err);
    float *out = buf_get(be, bo, on);
    be->ops->buf_free(be, bq);
    be->ops->buf_free(be, bo);
    return out;
}

/* Splitting a sequence over calls changes only which queries share a tile.
 * The portable kernels compute each query alone, so that is bit-exact;
 * OpenBLAS' GEMM rounding may depend on the tile's shape, so there the
 * results only agree to rounding. */
static void check_same(const char *what, const float *got, const float *want, size_t n)
{
    if (generic_mode) {
        check_bitwise(what, got, want, n);
        return;
    }
    double *w = g_new(double, n);
    for (size_t i = 0; i < n; i++) w[i] = want[i];
    check_close(what, got, w, n, 1e-6);
    g_free(w);
}

/* Causal GQA over the sequence's own rows (all rows of one sequence: seq[L, W]). */
static void ref_causal(double *out, const float *seq, int L, int Hq, int Hkv, int D)
{
    size_t W = (size_t)(Hq + 2 * Hkv) * D;
    const float **kp = g_new(const float *, L), **vp = g_new(const float *, L);
    for (int h = 0; h < Hq; h++) {
        int kvh = h / (Hq / Hkv);
        for (int j = 0; j < L; j++) {
            kp[j] = seq + j * W + (size_t)(Hq + kvh) * D;
            vp[j] = seq + j * W + (size_t)(Hq + Hkv + kvh) * D;
        }
        for (int i = 0; i < L; i++)
            ref_attend(out + ((size_t)i * Hq + h) * D, seq + i * W + (size_t)h * D, kp, vp, i + 1, D,
                       1.0 / sqrt((double)D));
    }
    g_free(kp);
    g_free(vp);
}

static void test_attention_paged(void)
{
    hyocr_backend *be = cpu_new(2);
    int Hq = 4, Hkv = 2, D = 40, bs = 4;
    size_t W = (size_t)(Hq + 2 * Hkv) * D, HD = (size_t)Hq * D;
    int LA = 300, LB = 9;   /* A spans several key blocks and query tiles */
    g_autofree float *qa = rand_f32(81, LA * W, -2, 2), *qb = rand_f32(82, LB * W, -2, 2);
    /* non-contiguous, out-of-order physical blocks */
    int32_t bt_a[75], bt_b[3] = { 6, 1, 17 };
    for (int i = 0; i < 75; i++) bt_a[i] = 20 + (int32_t)((i * 31) % 75);   /* a permutation of 20..94 */

    /* one call: both sequences packed */
    paged_env e1;
    paged_env_init(&e1, be, Hq, Hkv, D, bs, 100);
    g_autofree float *packed = g_new(float, (LA + LB) * W);
    memcpy(packed, qa, LA * W * sizeof(float));
    memcpy(packed + LA * W, qb, LB * W * sizeof(float));
    hyocr_seq_view one[2] = { { bt_a, 0, LA }, { bt_b, 0, LB } };
    g_autofree float *got = paged_call(be, &e1, packed, one, 2);

    g_autofree double *wa = g_new(double, LA * HD), *wb = g_new(double, LB * HD);
    ref_causal(wa, qa, LA, Hq, Hkv, D);
    ref_causal(wb, qb, LB, Hq, Hkv, D);
    check_close("paged seq A", got, wa, LA * HD, RTOL);
    check_close("paged seq B", got + LA * HD, wb, LB * HD, RTOL);

    /* k and v landed in the slots the block tables name */
    g_autofree float *kc = buf_get(be, e1.kc, (size_t)100 * bs * Hkv * D);
    g_autofree float *vc = buf_get(be, e1.vc, (size_t)100 * bs * Hkv * D);
    for (int p = 0; p < LA; p++) {
        size_t slot = (size_t)bt_a[p / bs] * bs + p % bs;
        check_bitwise("k cache", kc + slot * Hkv * D, qa + p * W + HD, (size_t)Hkv * D);
        check_bitwise("v cache", vc + slot * Hkv * D, qa + p * W + HD + (size_t)Hkv * D, (size_t)Hkv * D);
    }

    /* prefill + decode split: the same numbers, bit for bit */
    paged_env e2;
    paged_env_init(&e2, be, Hq, Hkv, D, bs, 100);
    int SA = 290, SB = 5;
    g_autofree float *p1 = g_new(float, (SA + SB) * W);
    memcpy(p1, qa, SA * W * sizeof(float));
    memcpy(p1 + SA * W, qb, SB * W * sizeof(float));
    hyocr_seq_view first[2] = { { bt_a, 0, SA }, { bt_b, 0, SB } };
    g_autofree float *o1 = paged_call(be, &e2, p1, first, 2);
    g_autofree float *p2 = g_new(float, (LA - SA + LB - SB) * W);
    memcpy(p2, qa + SA * W, (LA - SA) * W * sizeof(float));
    memcpy(p2 + (LA - SA) * W, qb + SB * W, (LB - SB) * W * sizeof(float));
    hyocr_seq_view second[2] = { { bt_a, SA, LA - SA }, { bt_b, SB, LB - SB } };
    g_autofree float *o2 = paged_call(be, &e2, p2, second, 2);
    check_same("split A prefill", o1, got, SA * HD);
    check_same("split B prefill", o1 + SA * HD, got + LA * HD, SB * HD);
    check_same("split A rest", o2, got + SA * HD, (LA - SA) * HD);
    check_same("split B rest", o2 + (LA - SA) * HD, got + (LA + SB) * HD, (LB - SB) * HD);

    /* one token at a time (decode) from there on */
    paged_env e3;
    paged_env_init(&e3, be, Hq, Hkv, D, bs, 100);
    hyocr_seq_view pre = { bt_b, 0, 1 };
    g_autofree float *d0 = paged_call(be, &e3, qb, &pre, 1);
    check_same("decode row 0", d0, got + LA * HD, HD);
    for (int t = 1; t < LB; t++) {
        hyocr_seq_view step = { bt_b, t, 1 };
        g_autofree float *dt = paged_call(be, &e3, qb + t * W, &step, 1);
        check_same("decode row", dt, got + (LA + t) * HD, HD);
    }

    /* a block id outside the cache is an error, not a stray write */
    g_autoptr(GError) err = NULL;
    int32_t bad_bt[3] = { 1, 100, 2 };
    hyocr_seq_view bad = { bad_bt, 0, 9 };
    hyocr_buf *bq = buf_new(be, HYOCR_BUF_ACT, qb, LB * W), *bo = buf_new(be, HYOCR_BUF_ACT, NULL, LB * HD);
    g_assert_false(be->ops->attention_paged(be, bo, bq, e3.kc, e3.vc, bs, &bad, 1, Hq, Hkv, D, 0.1f, NULL, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "block 100");
    g_clear_error(&err);
    g_assert_false(be->ops->attention_paged(be, bo, bq, e3.kc, e3.vc, bs, one, 2, Hq, Hkv, D, 0.1f, NULL, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "qkv");
    be->ops->buf_free(be, bq);
    be->ops->buf_free(be, bo);

    paged_env_free(&e1, be);
    paged_env_free(&e2, be);
    paged_env_free(&e3, be);
    hyocr_backend_free(be);
}

/* GQA: a query head must read the KV head h / (Hq/Hkv), not h mod Hkv. With
 * identical queries and one-hot keys the answer is visible directly. */
static void test_gqa_mapping(void)
{
    hyocr_backend *be = cpu_new(1);
    int Hq = 6, Hkv = 2, D = 8, bs = 16;
    size_t W = (size_t)(Hq + 2 * Hkv) * D;
    float qkv[W];
    memset(qkv, 0, sizeof qkv);
    for (int kvh = 0; kvh < Hkv; kvh++)
        for (int d = 0; d < D; d++) qkv[(size_t)(Hq + Hkv + kvh) * D + d] = (float)(kvh + 1);
    paged_env e;
    paged_env_init(&e, be, Hq, Hkv, D, bs, 1);
    int32_t bt[1] = { 0 };
    hyocr_seq_view sv = { bt, 0, 1 };
    g_autofree float *out = paged_call(be, &e, qkv, &sv, 1);
    for (int h = 0; h < Hq; h++)
        g_assert_cmpfloat(out[(size_t)h * D], ==, (float)(h / 3 + 1));
    paged_env_free(&e, be);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- embed */

static void test_embed(void)
{
    hyocr_backend *be = cpu_new(1);
    g_autoptr(GError) err = NULL;
    int rows = 10, C = 7;
    g_autofree float *tab = rand_f32(91, (size_t)rows * C, -1, 1);
    hyocr_buf *bt = buf_new(be, HYOCR_BUF_WEIGHT, tab, (size_t)rows * C);
    hyocr_buf *bo = buf_new(be, HYOCR_BUF_ACT, NULL, 4 * (size_t)C);
    const int32_t ids[4] = { 9, 0, 3, 9 };
    g_assert_true(be->ops->embed(be, bo, bt, ids, 4, C, &err));
    g_autofree float *got = buf_get(be, bo, 4 * (size_t)C);
    for (int i = 0; i < 4; i++) check_bitwise("embed row", got + i * C, tab + ids[i] * C, C);
    const int32_t bad[3] = { 1, 10, 2 };
    g_assert_false(be->ops->embed(be, bo, bt, bad, 3, C, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "token id 10");
    g_clear_error(&err);
    const int32_t neg[1] = { -1 };
    g_assert_false(be->ops->embed(be, bo, bt, neg, 1, C, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "token id -1");
    be->ops->buf_free(be, bt);
    be->ops->buf_free(be, bo);
    hyocr_backend_free(be);
}

/* ---------------------------------------------------------------- bf16 weights kept */

static hyocr_backend *cpu_new_weights(int n_threads, bool f32_weights)
{
    hyocr_backend_params p = { .n_threads = n_threads, .tuning.cpu_generic = generic_mode,
                               .tuning.cpu_f32_weights = f32_weights };
    g_autoptr(GError) err = NULL;
    hyocr_backend *be = hyocr_backend_cpu_init(&p, &err);
    g_assert_no_error(err);
    return be;
}

/* n bf16 values from [-1, 1): a float's top 16 bits */
static uint16_t *rand_bf16(uint64_t seed, size_t n)
{
    g_autofree float *f = rand_f32(seed, n, -1, 1);
    uint16_t *h = g_new(uint16_t, n ? n : 1);
    for (size_t i = 0; i < n; i++) h[i] = bf16_bits(f[i]);
    return h;
}

/* A weight buffer asked for as HYOCR_BUF_WEIGHT_BF16 and filled from a BF16 tensor. */
static hyocr_buf *bf16_weight(hyocr_backend *be, const uint16_t *h, size_t n)
{
    g_autoptr(GError) err = NULL;
    hyocr_buf *b = be->ops->alloc(be, HYOCR_BUF_WEIGHT_BF16, n, &err);
    g_assert_no_error(err);
    hyocr_tensor t = { .name = "w", .dtype = HYOCR_DTYPE_BF16, .n_dims = 1, .shape = { (int64_t)n },
                       .data = h, .nbytes = n * 2 };
    g_assert_true(be->ops->upload_weight(be, b, 0, &t, &err));
    g_assert_no_error(err);
    return b;
}

typedef struct {
    int M, N, K;
} mm_shape;

/* out = x·w[off..]ᵀ + bias, the product the model makes, on one backend. */
static float *bf16_product(hyocr_backend *be, const mm_shape *s, const uint16_t *wh, size_t off, const float *x,
                           const float *bias)
{
    g_autoptr(GError) err = NULL;
    size_t nw = off + (size_t)s->N * s->K;
    hyocr_buf *w = bf16_weight(be, wh, nw);
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x, (size_t)s->M * s->K);
    hyocr_buf *bb = buf_new(be, HYOCR_BUF_WEIGHT, bias, (size_t)s->N);
    hyocr_buf *bo = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)s->M * s->N);
    g_assert_true(be->ops->matmul(be, bo, bx, w, off, bb, s->M, s->N, s->K, &err));
    g_assert_no_error(err);
    float *o = buf_get(be, bo, (size_t)s->M * s->N);
    hyocr_buf *all[] = { w, bx, bb, bo };
    for (size_t i = 0; i < G_N_ELEMENTS(all); i++) be->ops->buf_free(be, all[i]);
    return o;
}

/* A BF16 checkpoint's matrices kept in their 16 bits give every product the bits they give
 * widened to fp32 at load (HYOCR_CPU_F32_WEIGHTS), at the model's shapes: decode rows and a few
 * (up to 16: the AVX2 kernel, bf16 widened in registers), more rows (sgemm on widened blocks of
 * rows) up to a page's over two row tiles; K over OpenBLAS' 4096 block, odd K, N with a tail past
 * the 256-row tiles and past the kernel's four. */
static void test_bf16_weights(void)
{
    const mm_shape shapes[] = {
        { 1, 4096, 1024 }, { 1, 7168, 1024 }, { 1, 1024, 3584 }, { 1, 1152, 4304 }, { 1, 1282, 1024 },
        { 1, 300, 37 }, { 3, 1152, 1152 }, { 17, 600, 1024 }, { generic_mode ? 70 : 600, 1152, 4304 },
        { generic_mode ? 65 : 530, 3456, 1152 },
    };
    hyocr_backend *f32 = cpu_new_weights(2, true), *kept = cpu_new_weights(2, false);
    g_assert_cmpint(f32->bf16_elem, ==, 4);
    g_assert_cmpint(kept->bf16_elem, ==, 2);
    for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) {
        const mm_shape *s = &shapes[i];
        size_t off = (size_t)3 * s->K;   /* a product at an offset, as the draft's k|v rows are */
        g_autofree uint16_t *wh = rand_bf16(100 + i, off + (size_t)s->N * s->K);
        g_autofree float *x = rand_f32(200 + i, (size_t)s->M * s->K, -2, 2);
        g_autofree float *bias = rand_f32(300 + i, (size_t)s->N, -1, 1);
        g_autofree float *a = bf16_product(f32, s, wh, off, x, bias);
        g_autofree float *b = bf16_product(kept, s, wh, off, x, bias);
        g_autofree char *what = g_strdup_printf("%d×%d×%d product on kept bf16 weights", s->M, s->N, s->K);
        check_bitwise(what, b, a, (size_t)s->M * s->N);
    }
    hyocr_backend_free(f32);
    hyocr_backend_free(kept);
}

/* The rest of what reads a weight matrix: the fused decode products and the embeddings;
 * and the bytes each way, and what refuses them. */
static void test_bf16_weights_ops(void)
{
    const int M = 2, N = 96, K = 64, V = 11;
    g_autofree uint16_t *wh = rand_bf16(7, (size_t)2 * N * K);
    g_autofree uint16_t *th = rand_bf16(8, (size_t)V * K);
    g_autofree float *res = rand_f32(9, (size_t)M * K, -1, 1);
    g_autofree float *nw = rand_f32(10, (size_t)K, 0.5f, 1.5f);
    g_autofree float *x = rand_f32(11, (size_t)M * N, -1, 1);
    const int32_t ids[3] = { 10, 0, 4 };
    float *out[2][4] = { { 0 } };
    for (int k = 0; k < 2; k++) {
        g_autoptr(GError) err = NULL;
        hyocr_backend *be = cpu_new_weights(2, k == 0);
        hyocr_buf *w = bf16_weight(be, wh, (size_t)2 * N * K), *tab = bf16_weight(be, th, (size_t)V * K);
        hyocr_mem_info mi;
        be->ops->mem_info(be, &mi);
        g_assert_cmpint(mi.weights, ==, (int64_t)(2 * N * K + V * K) * (k == 0 ? 4 : 2));
        g_assert_cmpint(w->kind, ==, HYOCR_BUF_WEIGHT);
        hyocr_buf *bres = buf_new(be, HYOCR_BUF_F32, res, (size_t)M * K);
        hyocr_buf *bnw = buf_new(be, HYOCR_BUF_WEIGHT, nw, (size_t)K);
        hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x, (size_t)M * N);
        hyocr_buf *o1 = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)M * N);
        hyocr_buf *o2 = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)3 * K);
        hyocr_buf *o3 = buf_new(be, HYOCR_BUF_F32, res, (size_t)M * K);
        hyocr_buf *bids = buf_new(be, HYOCR_BUF_F32, NULL, 3);
        memcpy(bids->data, ids, sizeof ids);
        g_assert_true(be->ops->norm_matmul(be, o1, bres, bnw, 1e-6f, w, M, N, K, true, &err));
        out[k][0] = buf_get(be, o1, (size_t)M * N);
        g_assert_true(be->ops->embed(be, o2, tab, ids, 3, K, &err));
        out[k][1] = buf_get(be, o2, (size_t)3 * K);
        g_assert_true(be->ops->embed_ids(be, o2, tab, bids, 0, 3, K, &err));
        out[k][2] = buf_get(be, o2, (size_t)3 * K);
        g_assert_true(be->ops->matmul_residual(be, o3, bx, w, M, K, N, &err));
        out[k][3] = buf_get(be, o3, (size_t)M * K);
        g_assert_no_error(err);
        for (int r = 0; r < 3; r++)   /* an embedding row is the bf16 row widened */
            for (int c = 0; c < K; c++) {
                uint32_t u = (uint32_t)th[(size_t)ids[r] * K + c] << 16;
                g_assert_cmpmem(&out[k][1][r * K + c], 4, &u, 4);
            }
        if (k == 1) {   /* an op that reads fp32 only refuses the kept matrix by name */
            g_assert_false(be->ops->add_rmsnorm(be, o3, bres, NULL, w, M, K, 1e-6f, &err));
            expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "2-byte elements");
            g_clear_error(&err);
            float f[4] = { 1, 2, 3, 4 };
            hyocr_tensor t = { .name = "f32 weights", .dtype = HYOCR_DTYPE_F32, .n_dims = 1, .shape = { 4 },
                               .data = f, .nbytes = sizeof f };
            g_assert_false(be->ops->upload_weight(be, w, 0, &t, &err));
            expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "is not BF16");
            g_clear_error(&err);
            g_assert_cmpuint(wh[0], ==, ((uint16_t *)w->data)[0]);   /* and it is unchanged */
        }
        hyocr_buf *all[] = { w, tab, bres, bnw, bx, o1, o2, o3, bids };
        for (size_t i = 0; i < G_N_ELEMENTS(all); i++) be->ops->buf_free(be, all[i]);
        be->ops->mem_info(be, &mi);
        g_assert_cmpint(mi.weights, ==, 0);
        hyocr_backend_free(be);
    }
    const size_t n[4] = { (size_t)M * N, (size_t)3 * K, (size_t)3 * K, (size_t)M * K };
    const char *what[4] = { "norm_matmul (gate|up)", "embed", "embed_ids", "matmul_residual" };
    for (int i = 0; i < 4; i++) {
        check_bitwise(what[i], out[1][i], out[0][i], n[i]);
        g_free(out[0][i]);
        g_free(out[1][i]);
    }
}

/* ---------------------------------------------------------------- thread-count independence */

typedef struct {
    float *out[12];
    size_t n[12];
    int    count;
} op_results;

static void keep(op_results *r, float *v, size_t n)
{
    r->out[r->count] = v;
    r->n[r->count++] = n;
}

static void run_all_ops(hyocr_backend *be, op_results *r)
{
    g_autoptr(GError) err = NULL;
    /* matmul */
    int M = 600, N = 300, K = 96;   /* several GEMM tiles */
    g_autofree float *x = rand_f32(101, (size_t)M * K, -1, 1), *w = rand_f32(102, (size_t)N * K, -1, 1);
    g_autofree float *bias = rand_f32(103, N, -1, 1);
    hyocr_buf *bx = buf_new(be, HYOCR_BUF_ACT, x, (size_t)M * K), *bw = buf_new(be, HYOCR_BUF_WEIGHT, w, (size_t)N * K);
    hyocr_buf *bb = buf_new(be, HYOCR_BUF_WEIGHT, bias, N), *bo = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)M * N);
    g_assert_true(be->ops->matmul(be, bo, bx, bw, 0, bb, M, N, K, &err));
    keep(r, buf_get(be, bo, (size_t)M * N), (size_t)M * N);
    /* norms over the rows of x (K wide) */
    hyocr_buf *bres = buf_new(be, HYOCR_BUF_F32, x, (size_t)M * K);
    g_assert_true(be->ops->add_layernorm(be, bo, bres, NULL, bx, bx, 100, K, 1e-5f, &err));
    keep(r, buf_get(be, bo, (size_t)100 * K), (size_t)100 * K);
    g_assert_true(be->ops->add_rmsnorm(be, bo, bres, bx, bw, M, K, 1e-5f, &err));
    keep(r, buf_get(be, bo, (size_t)M * K), (size_t)M * K);
    /* pointwise */
    size_t n = (size_t)M * K;
    g_assert_true(be->ops->gelu(be, bres, n, &err));
    keep(r, buf_get(be, bres, n), n);
    g_assert_true(be->ops->swiglu(be, bo, bx, M, K / 2, &err));
    keep(r, buf_get(be, bo, (size_t)M * (K / 2)), (size_t)M * (K / 2));
    /* vision */
    int edge = 16, C = 24, gh = 20, gw = 38;
    g_autofree float *tab = rand_f32(104, ((size_t)edge * edge + 1) * C, -1, 1);
    hyocr_buf *bt = buf_new(be, HYOCR_BUF_WEIGHT, tab, ((size_t)edge * edge + 1) * C);
    hyocr_buf *bg = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)gh * gw * C);
    g_assert_true(be->ops->posemb_add(be, bg, bt, 1, edge, gh, gw, C, HYOCR_POSEMB_R2, &err));
    keep(r, buf_get(be, bg, (size_t)gh * gw * C), (size_t)gh * gw * C);
    hyocr_buf *bm = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)gh * gw * C);
    g_assert_true(be->ops->merge_gather(be, bm, bg, gh, gw, C, &err));
    keep(r, buf_get(be, bm, (size_t)gh * gw * C), (size_t)gh * gw * C);
    /* attention_full */
    int na = 300, H = 3, D = 32;
    g_autofree float *qkv = rand_f32(105, (size_t)na * 3 * H * D, -2, 2);
    hyocr_buf *bq = buf_new(be, HYOCR_BUF_ACT, qkv, (size_t)na * 3 * H * D);
    hyocr_buf *ba = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)na * H * D);
    g_assert_true(be->ops->attention_full(be, ba, bq, na, H, D, 0.17f, &err));
    keep(r, buf_get(be, ba, (size_t)na * H * D), (size_t)na * H * D);
    /* rope and paged attention reuse that buffer as rows of (4 + 2·2) heads of 32 */
    hyocr_rope_params rp;
    rope_setup(&rp, HYOCR_ROPE_LAYOUT_R1);
    int rows = (int)((size_t)na * 3 * H * D / 256);
    g_autofree int32_t *pos = g_new(int32_t, 4 * (size_t)rows);
    for (int a = 0; a < 4; a++)
        for (int t = 0; t < rows; t++) pos[a * rows + t] = (t * (a + 1)) % 37;
    g_assert_true(be->ops->rope_qknorm(be, bq, rows, pos, 4, 4, 2, &rp, bb, bb, 1e-5f, &err));
    keep(r, buf_get(be, bq, (size_t)rows * 256), (size_t)rows * 256);
    paged_env e;
    paged_env_init(&e, be, 4, 2, 32, 8, 64);
    int32_t bt_a[64];
    for (int i = 0; i < 64; i++) bt_a[i] = (i * 13) % 64;
    hyocr_seq_view sv[2] = { { bt_a, 0, rows - 20 }, { bt_a + 48, 0, 20 } };
    hyocr_buf *bpo = buf_new(be, HYOCR_BUF_ACT, NULL, (size_t)rows * 4 * 32);
    g_assert_true(be->ops->attention_paged(be, bpo, bq, e.kc, e.vc, 8, sv, 2, 4, 2, 32, 0.2f, NULL, &err));
    keep(r, buf_get(be, bpo, (size_t)rows * 128), (size_t)rows * 128);
    g_assert_no_error(err);

    hyocr_buf *all[] = { bx, bw, bb, bo, bres, bt, bg, bm, bq, ba, bpo };
    for (size_t i = 0; i < G_N_ELEMENTS(all); i++) be->ops->buf_free(be, all[i]);
    paged_env_free(&e, be);
}

static void test_threads(void)
{
    op_results res[3] = { 0 };
    const int threads[3] = { 1, 2, 3 };
    for (int i = 0; i < 3; i++) {
        hyocr_backend *be = cpu_new(threads[i]);
        run_all_ops(be, &res[i]);
        hyocr_backend_free(be);
    }
    for (int i = 1; i < 3; i++) {
        g_assert_cmpint(res[i].count, ==, res[0].count);
        for (int k = 0; k < res[0].count; k++) {
            g_autofree char *what = g_strdup_printf("op %d with %d vs 1 threads", k, threads[i]);
            check_bitwise(what, res[i].out[k], res[0].out[k], res[0].n[k]);
        }
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < res[i].count; k++) g_free(res[i].out[k]);
}

static void test_cuda_stub(void)
{
#if HYOCR_HAVE_CUDA
    g_test_skip("built with CUDA: hyocr_backend_cuda_init is the real one");
#else
    g_autoptr(GError) err = NULL;
    hyocr_backend_params p = { 0 };
    g_assert_null(hyocr_backend_cuda_init(&p, &err));
    expect_error(err, HYOCR_ERROR_BACKEND, "without CUDA");
#endif
    hyocr_backend_free(NULL);
}

static void with_generic(gconstpointer fn)
{
    generic_mode = true;
    ((void (*)(void))fn)();
    generic_mode = false;
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    static const struct {
        const char *name;
        void (*fn)(void);
        bool generic_too;   /* has a portable path of its own */
    } tests[] = {
        { "alloc", test_alloc, false },
        { "upload", test_upload, false },
        { "matmul", test_matmul, true },
        { "layernorm", test_layernorm, false },
        { "rmsnorm", test_rmsnorm, false },
        { "pointwise", test_pointwise, false },
        { "posemb-scale", test_posemb_scale, false },
        { "posemb", test_posemb, false },
        { "merge-newline", test_merge_newline, false },
        { "attention-full", test_attention_full, true },
        { "rope-params", test_rope_params, false },
        { "rope-axes", test_rope_axes, false },
        { "rope-qknorm", test_rope_qknorm, false },
        { "attention-paged", test_attention_paged, true },
        { "gqa-mapping", test_gqa_mapping, true },
        { "embed", test_embed, false },
        { "bf16-weights", test_bf16_weights, true },
        { "bf16-weights-ops", test_bf16_weights_ops, true },
        { "threads", test_threads, true },
        { "cuda-stub", test_cuda_stub, false },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(tests); i++) {
        g_autofree char *path = g_strdup_printf("/backend-cpu/%s", tests[i].name);
        g_test_add_func(path, tests[i].fn);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(tests); i++)
        if (tests[i].generic_too) {
            g_autofree char *path = g_strdup_printf("/backend-cpu/generic/%s", tests[i].name);
            g_test_add_data_func(path, (gconstpointer)tests[i].fn, with_generic);
        }
    return g_test_run();
}
