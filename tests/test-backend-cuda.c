/* CUDA backend consistency test (in the spirit of llama.cpp's test-backend-ops):
 * every op runs on the CPU backend and on the CUDA backend with the same random
 * inputs, and the results are compared by relative L2 error. Inputs are first
 * rounded through the CUDA compute type, so both backends see identical values
 * and the comparison measures the kernels, not the input quantisation.
 *
 * Without a usable GPU every device test skips loudly ("SKIP: no CUDA device:
 * <reason>") and the init test checks that the failure is a clean GError.
 * HYOCR_BENCH=1 adds a microbenchmark (decode attention at 4K/16K prefixes,
 * vision attention at n = 4096/16384, paged prefill, a few GEMMs). */
#include "backend.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#if HYOCR_HAVE_CUDA
#include "../kernels/hyocr-kernels.h"
#include <cuda_runtime_api.h>
#define CK(x) g_assert_cmpint((int)(x), ==, (int)cudaSuccess)
#endif

typedef struct {
    hyocr_compute_dtype dtype;
    const char         *name;
    double              tol;   /* rel-L2 for results rounded to the compute type */
} dt_case;

static const dt_case F16 = { HYOCR_COMPUTE_F16, "f16", 2e-3 };
static const dt_case BF16 = { HYOCR_COMPUTE_BF16, "bf16", 1.2e-2 };

#if HYOCR_HAVE_CUDA
/* The kernels' name for a case's compute type (the tests that call kernels directly). */
static hk_dtype case_kt(const dt_case *c)
{
    return c->dtype == HYOCR_COMPUTE_BF16 ? HK_BF16 : HK_F16;
}
#endif

/* fp32 outputs of fp32-accumulated work on identical inputs differ only by summation order */
#define TOL_F32 2e-5

static hyocr_backend *g_cpu;
static hyocr_backend *g_cuda[3];
static char          *g_cuda_why[3];

static hyocr_backend *cpu(void)
{
    if (!g_cpu) {
        g_autoptr(GError) err = NULL;
        hyocr_backend_params p = { 0 };
        g_cpu = hyocr_backend_cpu_init(&p, &err);
        g_assert_no_error(err);
    }
    return g_cpu;
}

/* The CUDA backend of the case's dtype, or NULL after a loud skip. */
static hyocr_backend *cuda(const dt_case *c)
{
    int i = (int)c->dtype;
    if (!g_cuda[i] && !g_cuda_why[i]) {
        g_autoptr(GError) err = NULL;
        hyocr_backend_params p = { .dtype = c->dtype };
        /* the environment's switches, as the engine takes them: HYOCR_X=1 test-backend-cuda runs
         * every test on a shared backend with X on (those that build their own set their own) */
        hyocr_tuning_from_env(&p.tuning);
        g_cuda[i] = hyocr_backend_cuda_init(&p, &err);
        if (!g_cuda[i]) {
            g_assert_nonnull(err);
            g_cuda_why[i] = g_strdup(err->message);
        }
    }
    if (!g_cuda[i]) {
        g_autofree char *msg = g_strdup_printf("SKIP: no CUDA device: %s", g_cuda_why[i]);
        g_test_skip(msg);
        return NULL;
    }
    return g_cuda[i];
}

/* Another CUDA backend of c's type with tuning t (the switch a test is about); for tests that
 * cuda(c) found a device for. */
static hyocr_backend *cuda_tuned(const dt_case *c, hyocr_tuning t)
{
    g_autoptr(GError) err = NULL;
    hyocr_backend_params p = { .dtype = c->dtype, .tuning = t };
    hyocr_backend *be = hyocr_backend_cuda_init(&p, &err);
    g_assert_no_error(err);
    g_assert_nonnull(be);
    return be;
}

/* ---------------------------------------------------------------- helpers */

static float *rnd(size_t n, double lo, double hi)
{
    float *x = g_new(float, n ? n : 1);
    for (size_t i = 0; i < n; i++) x[i] = (float)g_test_rand_double_range(lo, hi);
    return x;
}

static hyocr_buf *mk(hyocr_backend *be, hyocr_buf_kind kind, const float *host, size_t n)
{
    g_autoptr(GError) err = NULL;
    hyocr_buf *b = be->ops->alloc(be, kind, n, &err);
    g_assert_no_error(err);
    if (host && n) {
        g_assert_true(be->ops->upload_f32(be, b, 0, host, n, &err));
        g_assert_no_error(err);
    }
    return b;
}

static float *get(hyocr_backend *be, const hyocr_buf *b, size_t off, size_t n)
{
    g_autoptr(GError) err = NULL;
    float *x = g_new(float, n ? n : 1);
    g_assert_true(be->ops->download_f32(be, b, off, x, n, &err));
    g_assert_no_error(err);
    return x;
}

/* Rounds x in place through the CUDA compute type. */
static void quantize(hyocr_backend *g, float *x, size_t n)
{
    hyocr_buf *b = mk(g, HYOCR_BUF_ACT, x, n);
    g_autofree float *q = get(g, b, 0, n);
    memcpy(x, q, n * sizeof(float));
    g->ops->buf_free(g, b);
}

static float *rndq(hyocr_backend *g, size_t n, double lo, double hi)
{
    float *x = rnd(n, lo, hi);
    quantize(g, x, n);
    return x;
}

static double rel_l2(const float *got, const float *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static void expect_close(const char *what, const float *got, const float *ref, size_t n, double tol)
{
    double e = rel_l2(got, ref, n);
    g_test_message("%s: rel-L2 %.3g (tol %.3g)", what, e, tol);
    if (!(e <= tol)) g_printerr("# %s: rel-L2 %.3g exceeds %.3g\n", what, e, tol);
    g_assert_cmpfloat(e, <=, tol);
}

static void expect_equal(const char *what, const float *got, const float *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != ref[i]) {
            g_printerr("# %s: element %zu is %g, expected %g\n", what, i, got[i], ref[i]);
            g_assert_cmpfloat(got[i], ==, ref[i]);
        }
}

/* The same buffer on both backends. */
typedef struct {
    hyocr_buf *c, *g;
    size_t     n;
} pair;

static pair mk2(hyocr_backend *g, hyocr_buf_kind kind, const float *host, size_t n)
{
    return (pair){ mk(cpu(), kind, host, n), mk(g, kind, host, n), n };
}

static void free2(hyocr_backend *g, pair *p)
{
    cpu()->ops->buf_free(cpu(), p->c);
    g->ops->buf_free(g, p->g);
    p->c = p->g = NULL;
}

/* Downloads both and compares (tol < 0: exact). */
static void cmp2(hyocr_backend *g, const char *what, const pair *p, size_t off, size_t n, double tol)
{
    g_autofree float *a = get(g, p->g, off, n);
    g_autofree float *b = get(cpu(), p->c, off, n);
    if (tol < 0) expect_equal(what, a, b, n);
    else expect_close(what, a, b, n, tol);
}

#define OK(call)                                   \
    do {                                           \
        g_autoptr(GError) err_ = NULL;             \
        bool ok_ = (call);                         \
        g_assert_no_error(err_);                   \
        g_assert_true(ok_);                        \
    } while (0)
/* Runs the op on both backends: OP(be, c_or_g) picks the backend's buffers. */
#define BOTH(g, expr_c, expr_g) \
    do {                        \
        OK(expr_c);             \
        OK(expr_g);             \
    } while (0)
#define E (&err_)

/* ---------------------------------------------------------------- init and errors */

static void test_init(void)
{
    g_autoptr(GError) err = NULL;
    hyocr_backend_params p = { .dtype = HYOCR_COMPUTE_F16 };
    hyocr_backend *be = hyocr_backend_cuda_init(&p, &err);
    if (!be) {
        /* This is the no-GPU path: a clean error, no crash. */
        g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_BACKEND);
        g_assert_true(strlen(err->message) > 10);
        g_test_message("CUDA init fails cleanly: %s", err->message);
        return;
    }
    hyocr_backend_free(be);
    p.device = 999;
    be = hyocr_backend_cuda_init(&p, &err);
    g_assert_null(be);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_BACKEND);
    g_assert_nonnull(strstr(err->message, "999"));
}

/* The 1.5 release's rope (theta 10000, alpha 1000: base 11158840 in fp32) with even sections. */
static void rope_init(hyocr_rope_params *rp, int D, hyocr_rope_layout layout, int n_sections)
{
    hyocr_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.text.head_dim = D;
    cfg.text.rope_theta = 10000.0;
    cfg.text.rope_alpha = 1000.0;
    cfg.text.n_rope_sections = n_sections;
    for (int k = 0; k < n_sections; k++) cfg.text.rope_section[k] = D / 2 / n_sections;
    cfg.rope_layout = layout;
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_rope_params_init(rp, &cfg, &err));
    g_assert_no_error(err);
}

static void test_errors(gconstpointer data)
{
    hyocr_backend *g = cuda(data);
    if (!g) return;
    g_autoptr(GError) err = NULL;
    hyocr_buf *a = mk(g, HYOCR_BUF_ACT, NULL, 1000), *f = mk(g, HYOCR_BUF_F32, NULL, 1000);

    g_assert_false(g->ops->attention_full(g, a, a, 2, 1, 100, 0.1f, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_assert_false(g->ops->matmul(g, f, a, a, 0, NULL, 10, 100, 100, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_assert_false(g->ops->attention_full(g, f, f, 2, 1, 72, 0.1f, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);

    /* bad sections never reach a backend (hyocr_rope_params_init refuses them,
     * test-backend-cpu's rope-axes); too few position axes are the call's fault */
    hyocr_rope_params rp;
    rope_init(&rp, 8, HYOCR_ROPE_LAYOUT_R1, 4);
    int32_t pos[8] = { 0 };
    g_assert_false(g->ops->rope_qknorm(g, a, 1, pos, 2, 1, 1, &rp, a, a, 1e-5f, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "axes"));
    g_clear_error(&err);

    int32_t bt[2] = { 0, 7 };
    hyocr_seq_view sv = { bt, 10, 10 };
    hyocr_buf *kv = mk(g, HYOCR_BUF_KV, NULL, 16 * 1 * 128 * 2);
    hyocr_buf *q = mk(g, HYOCR_BUF_ACT, NULL, 10 * 3 * 128);
    g_assert_false(g->ops->attention_paged(g, q, q, kv, kv, 16, &sv, 1, 1, 1, 128, 0.1f, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "block"));
    g_clear_error(&err);

    int32_t ids[2] = { 1, 5000 };
    g_assert_false(g->ops->embed(g, f, a, ids, 2, 10, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);

    int64_t v = 7;
    hyocr_tensor t = { .name = "x.i64", .dtype = HYOCR_DTYPE_I64, .n_dims = 1, .shape = { 1 }, .data = &v,
                       .nbytes = 8 };
    g_assert_false(g->ops->upload_weight(g, a, 0, &t, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT);
    g_clear_error(&err);

    /* Still usable afterwards. */
    float one[4] = { 1, 2, 3, 4 };
    OK(g->ops->upload_f32(g, f, 0, one, 4, E));
    OK(g->ops->add(g, f, f, 4, E));
    g_autofree float *r = get(g, f, 0, 4);
    g_assert_cmpfloat(r[3], ==, 8.0f);
    OK(g->ops->sync(g, E));
    g->ops->buf_free(g, a);
    g->ops->buf_free(g, f);
    g->ops->buf_free(g, kv);
    g->ops->buf_free(g, q);
}

static void test_memory(gconstpointer data)
{
    hyocr_backend *g = cuda(data);
    if (!g) return;
    g_autoptr(GError) err = NULL;
    /* A limit below the backend's own workspace: init refuses, cleanly. */
    hyocr_backend_params p = { .dtype = HYOCR_COMPUTE_F16, .memory_limit = 1 << 20 };
    hyocr_backend *lim = hyocr_backend_cuda_init(&p, &err);
    g_assert_null(lim);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_clear_error(&err);

    p.memory_limit = 96 << 20;
    lim = hyocr_backend_cuda_init(&p, &err);
    g_assert_no_error(err);
    hyocr_mem_info mi0, mi1;
    lim->ops->mem_info(lim, &mi0);
    g_assert_cmpint(mi0.total, >, 0);
    hyocr_buf *w = lim->ops->alloc(lim, HYOCR_BUF_WEIGHT, 4 << 20, &err);   /* 8 MiB */
    g_assert_no_error(err);
    hyocr_buf *big = lim->ops->alloc(lim, HYOCR_BUF_ACT, 64 << 20, &err);   /* 128 MiB: over */
    g_assert_null(big);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_assert_nonnull(strstr(err->message, "limit"));
    g_test_message("limit: %s", err->message);
    g_clear_error(&err);
    lim->ops->mem_info(lim, &mi1);
    g_assert_cmpint(mi1.weights, ==, mi0.weights + (8 << 20));
    g_assert_cmpint(mi1.peak, >=, mi1.weights + mi1.workspace);
    lim->ops->buf_free(lim, w);
    lim->ops->mem_info(lim, &mi1);
    g_assert_cmpint(mi1.weights, ==, mi0.weights);
    hyocr_backend_free(lim);

    /* A request the device cannot satisfy: an error, and the backend lives on. */
    hyocr_buf *huge = g->ops->alloc(g, HYOCR_BUF_F32, (size_t)1 << 50, &err);
    g_assert_null(huge);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_test_message("huge: %s", err->message);
    g_clear_error(&err);
    float x[3] = { 1, 2, 3 };
    hyocr_buf *b = mk(g, HYOCR_BUF_F32, x, 3);
    g_autofree float *r = get(g, b, 0, 3);
    expect_equal("after OOM", r, x, 3);
    g->ops->buf_free(g, b);
}

/* ---------------------------------------------------------------- transfers */

static void test_transfer(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    size_t n = 100003;
    g_autofree float *x = rnd(n, -100, 100);
    hyocr_buf *a = mk(g, HYOCR_BUF_ACT, x, n), *f = mk(g, HYOCR_BUF_F32, x, n), *k = mk(g, HYOCR_BUF_KV, NULL, n);
    g_autofree float *fa = get(g, a, 0, n), *ff = get(g, f, 0, n);
    expect_equal("F32 round trip", ff, x, n);
    expect_close("ACT round trip", fa, x, n, c->tol);
    /* copies between kinds convert; offsets are in elements */
    OK(g->ops->copy(g, k, 5, a, 0, n - 5, E));
    OK(g->ops->copy(g, f, 1, k, 5, 1000, E));
    g_autofree float *fk = get(g, f, 1, 1000);
    expect_equal("ACT→KV→F32", fk, fa, 1000);
    g->ops->buf_free(g, a);
    g->ops->buf_free(g, f);
    g->ops->buf_free(g, k);
}

/* A large upload (the page's pixels) goes through the pinned ring, to an fp16 buffer converted on
 * the host where the CPU can (F16C); in pieces under the ring's threshold it goes the pageable
 * way, converted on the device; from pinned memory (the engine's pixel pool) it is a queued copy,
 * converted on the device. All must give the same bits for every value: ties, fp16
 * subnormals and overflow, fp32 subnormals, infinities, NaNs of either sign and payload. */
static void test_upload_large(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const size_t n = 2500007, piece = 262144;   /* two ring chunks and an odd tail; pieces of 1 MiB */
    g_autofree float *x = rnd(n, -8, 8);
    static const uint32_t special[] = {
        0x00000000, 0x80000000, 0x3f801000, 0x3f803000, 0x33800000, 0x33000000, 0x33000001, 0xb3400000,
        0x387fc000, 0x477fe000, 0x477fefff, 0x477ff000, 0xc77ff000, 0x7149f2ca, 0x00000001, 0x80800000,
        0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa5a5a5, 0xffffffff, 0x3eaaaaab,
    };
    for (size_t i = 0; i < n; i += 997) memcpy(&x[i], &special[(i / 997) % G_N_ELEMENTS(special)], 4);
    for (size_t i = 1; i < n; i += 7919) x[i] = ldexpf(x[i], (int)(i % 61) - 40);   /* every exponent */
    for (int kind = 0; kind < 2; kind++) {
        hyocr_buf_kind k = kind ? HYOCR_BUF_F32 : HYOCR_BUF_ACT;
        hyocr_buf *whole = mk(g, k, x, n), *parts = mk(g, k, NULL, n), *queued = mk(g, k, NULL, n);
        for (size_t i = 0; i < n; i += piece) OK(g->ops->upload_f32(g, parts, i, x + i, MIN(piece, n - i), E));
        g_autoptr(GError) perr = NULL;
        float *pin = g->ops->host_alloc(NULL, n * 4, &perr);   /* as the pool calls it: no backend */
        g_assert_no_error(perr);
        memcpy(pin, x, n * 4);
        OK(g->ops->upload_f32(g, queued, 0, pin, n, E));
        g_autofree float *a = get(g, whole, 0, n), *b = get(g, parts, 0, n), *q = get(g, queued, 0, n);
        g->ops->host_free(NULL, pin, n * 4);
        for (size_t i = 0; i < n; i++) {
            uint32_t ua, ub, uq, ux;
            memcpy(&ua, &a[i], 4), memcpy(&ub, &b[i], 4), memcpy(&uq, &q[i], 4), memcpy(&ux, &x[i], 4);
            if (ua != ub || ua != uq)
                g_error("%s upload of %zu values: value %zu (0x%08x) reads back as 0x%08x, in pieces 0x%08x, "
                        "from pinned memory 0x%08x", kind ? "F32" : "ACT", n, i, ux, ua, ub, uq);
            if (kind && ua != ux) g_error("F32 upload: value %zu 0x%08x reads back as 0x%08x", i, ux, ua);
        }
        g->ops->buf_free(g, whole);
        g->ops->buf_free(g, parts);
        g->ops->buf_free(g, queued);
    }
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static void test_upload_weight(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    size_t n = 4099;
    g_autofree float *x = rnd(n, -3, 3);
    /* BF16 data at an odd address: safetensors offsets need not be aligned. */
    g_autofree uint8_t *raw = g_malloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++) {
        uint16_t v = f32_to_bf16(x[i]);
        memcpy(raw + 1 + 2 * i, &v, 2);
    }
    hyocr_tensor t = { .name = "w.bf16", .dtype = HYOCR_DTYPE_BF16, .n_dims = 2, .shape = { 1, (int64_t)n },
                       .data = raw + 1, .nbytes = n * 2 };
    g_autofree float *ref = g_new(float, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)f32_to_bf16(x[i]) << 16;
        memcpy(&ref[i], &u, 4);
    }
    hyocr_buf *w = mk(g, HYOCR_BUF_WEIGHT, NULL, n + 7);
    OK(g->ops->upload_weight(g, w, 7, &t, E));
    g_autofree float *got = get(g, w, 7, n);
    /* bf16 values of this range are exact in fp16 too */
    expect_equal("bf16 upload", got, ref, n);
    t.dtype = HYOCR_DTYPE_F32;
    t.data = x;
    t.nbytes = n * 4;
    OK(g->ops->upload_weight(g, w, 0, &t, E));
    g_autofree float *got32 = get(g, w, 0, n);
    expect_close("f32 upload", got32, x, n, c->tol);
    g->ops->buf_free(g, w);
}

/* ---------------------------------------------------------------- matmul */

typedef struct {
    int    M, N, K;
    bool   bias, out_f32, x_f32;
    size_t w_off;
} mm_shape;

static void run_matmul(const dt_case *c, hyocr_backend *g, const mm_shape *s)
{
    size_t nw = s->w_off + (size_t)s->N * s->K;
    g_autofree float *x = rndq(g, (size_t)s->M * s->K, -1, 1);
    g_autofree float *w = rndq(g, nw, -0.1, 0.1);
    g_autofree float *b = rndq(g, (size_t)s->N, -1, 1);
    pair px = mk2(g, s->x_f32 ? HYOCR_BUF_F32 : HYOCR_BUF_ACT, x, (size_t)s->M * s->K);
    pair pw = mk2(g, HYOCR_BUF_WEIGHT, w, nw);
    pair pb = mk2(g, HYOCR_BUF_WEIGHT, b, (size_t)s->N);
    pair po = mk2(g, s->out_f32 ? HYOCR_BUF_F32 : HYOCR_BUF_ACT, NULL, (size_t)s->M * s->N);
    BOTH(g, cpu()->ops->matmul(cpu(), po.c, px.c, pw.c, s->w_off, s->bias ? pb.c : NULL, s->M, s->N, s->K, E),
         g->ops->matmul(g, po.g, px.g, pw.g, s->w_off, s->bias ? pb.g : NULL, s->M, s->N, s->K, E));
    g_autofree char *what = g_strdup_printf("matmul %d×%d×%d%s%s%s off %zu", s->M, s->N, s->K, s->bias ? " +bias" : "",
                                            s->out_f32 ? " →F32" : " →ACT", s->x_f32 ? " x F32" : "", s->w_off);
    cmp2(g, what, &po, 0, po.n, s->out_f32 ? TOL_F32 : c->tol);
    free2(g, &px);
    free2(g, &pw);
    free2(g, &pb);
    free2(g, &po);
}

static void test_matmul(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const mm_shape shapes[] = {
        { 1, 1024, 1024, false, false, false, 0 },     /* decode projection */
        { 1, 7168, 1024, false, false, false, 0 },     /* decode gate|up */
        { 2, 3000, 1024, false, true, false, 0 },      /* logits-like, fp32 out */
        { 5, 1000, 72, true, true, false, 0 },
        { 64, 3456, 1152, true, false, false, 0 },     /* ViT qkv */
        { 33, 1152, 4304, true, true, true, 0 },       /* fc2, x converted from F32 */
        { 17, 256, 512, false, false, false, 256 * 512 }, /* second half of a fused weight */
        { 9, 100, 37, true, false, false, 3 },         /* misaligned weight pointer */
        { 3, 5, 0, true, true, false, 0 },             /* K = 0: bias only */
        /* 2..16 rows (batched decode, the speculative verify): hk_gemm_rows */
        { 2, 4096, 1024, false, false, false, 0 },     /* qkv */
        { 3, 1024, 2048, false, false, false, 0 },     /* o */
        { 8, 7168, 1024, false, false, false, 0 },     /* gate|up */
        { 15, 1024, 3584, false, false, false, 0 },    /* down: two rounds of loads a warp */
        { 16, 1024, 4096, false, true, false, 0 },     /* the draft's fc, fp32 out */
        { 16, 12011, 1024, false, true, false, 0 },    /* head-like: fp32 out, N % 8 = 3 */
        { 9, 1003, 2048, false, false, false, 0 },     /* N % 8 = 3 */
        { 4, 256, 32, false, false, false, 0 },        /* one chunk: only the first warp has work */
        { 8, 1000, 48, false, false, false, 0 },       /* K % 32 ≠ 0: cuBLAS */
        { 4, 1000, 96, false, false, false, 3 },       /* misaligned weights: cuBLAS */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) run_matmul(c, g, &shapes[i]);
}

/* Row m of a product of 2..16 rows does not depend on how many rows there are nor on
 * what the others hold: a job's tokens must not change with the batch around it. The
 * products through the backend (rows 0..M-1 of the same x buffer against the 16-row
 * result, byte for byte), for a one-round and a two-round K, fp32 and compute-type out. */
static void gemm_rows_invariance(hyocr_backend *g, int N, int K, hyocr_buf_kind out_kind)
{
    const int R = 16;
    g_autofree float *x = rnd((size_t)R * K, -1, 1), *w = rnd((size_t)N * K, -0.1, 0.1);
    hyocr_buf *bx = mk(g, HYOCR_BUF_ACT, x, (size_t)R * K), *bw = mk(g, HYOCR_BUF_WEIGHT, w, (size_t)N * K);
    hyocr_buf *o16 = mk(g, out_kind, NULL, (size_t)R * N), *o = mk(g, out_kind, NULL, (size_t)R * N);
    OK(g->ops->matmul(g, o16, bx, bw, 0, NULL, R, N, K, E));
    g_autofree float *ref = get(g, o16, 0, (size_t)R * N);
    for (int M = 2; M < R; M++) {
        OK(g->ops->matmul(g, o, bx, bw, 0, NULL, M, N, K, E));
        g_autofree float *got = get(g, o, 0, (size_t)M * N);
        g_autofree char *what = g_strdup_printf("rows 0..%d of %d×%d×%d against 16 rows%s", M - 1, M, N, K,
                                                out_kind == HYOCR_BUF_F32 ? " →F32" : " →ACT");
        expect_equal(what, got, ref, (size_t)M * N);
    }
    g->ops->buf_free(g, bx);
    g->ops->buf_free(g, bw);
    g->ops->buf_free(g, o16);
    g->ops->buf_free(g, o);
}

#if HYOCR_HAVE_CUDA
/* hk_gemm_rows's plain product into fp32, on the default stream. */
static cudaError_t rows_plain(hk_dtype t, void *o, const void *x, const void *w, int M, int N, int K)
{
    return hk_gemm_rows(NULL, t, HK_GEMV_PLAIN, o, HK_F32, x, NULL, NULL, HK_F32, 0.0f, w, M, N, K, 0);
}

/* The kernel called directly: any M from 1 to 16, and the rows in reverse order (each row
 * at another position of the tile, among other neighbours), fp32 out, bits compared. */
static void gemm_rows_kernel_invariance(const dt_case *c, hyocr_backend *g, int N, int K)
{
    const int R = 16;
    hk_dtype t = case_kt(c);
    g_autofree float *x = rnd((size_t)R * K, -1, 1), *xr = g_new(float, (size_t)R * K);
    g_autofree float *w = rnd((size_t)N * K, -0.1, 0.1);
    for (int m = 0; m < R; m++) memcpy(xr + (size_t)m * K, x + (size_t)(R - 1 - m) * K, (size_t)K * sizeof(float));
    hyocr_buf *bx = mk(g, HYOCR_BUF_ACT, x, (size_t)R * K), *bxr = mk(g, HYOCR_BUF_ACT, xr, (size_t)R * K);
    hyocr_buf *bw = mk(g, HYOCR_BUF_WEIGHT, w, (size_t)N * K), *o = mk(g, HYOCR_BUF_F32, NULL, (size_t)R * N);
    OK(g->ops->sync(g, E));
    CK(rows_plain(t, o->data, bx->data, bw->data, R, N, K));
    CK(cudaDeviceSynchronize());
    g_autofree float *ref = get(g, o, 0, (size_t)R * N);
    for (int M = 1; M <= R; M++) {
        CK(cudaMemset(o->data, 0xff, (size_t)R * N * 4));   /* every element must be written */
        CK(rows_plain(t, o->data, bx->data, bw->data, M, N, K));
        CK(cudaDeviceSynchronize());
        g_autofree float *got = get(g, o, 0, (size_t)M * N);
        g_autofree char *what = g_strdup_printf("hk_gemm_rows %d×%d×%d: rows against 16 rows", M, N, K);
        expect_equal(what, got, ref, (size_t)M * N);
    }
    CK(rows_plain(t, o->data, bxr->data, bw->data, R, N, K));
    CK(cudaDeviceSynchronize());
    g_autofree float *rev = get(g, o, 0, (size_t)R * N);
    for (int m = 0; m < R; m++) {
        g_autofree char *what = g_strdup_printf("hk_gemm_rows %d×%d: row %d at position %d", N, K, m, R - 1 - m);
        expect_equal(what, rev + (size_t)(R - 1 - m) * N, ref + (size_t)m * N, (size_t)N);
    }
    g->ops->buf_free(g, bx);
    g->ops->buf_free(g, bxr);
    g->ops->buf_free(g, bw);
    g->ops->buf_free(g, o);
}
#endif

static void test_gemm_rows_invariance(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    gemm_rows_invariance(g, 1003, 1024, HYOCR_BUF_F32);
    gemm_rows_invariance(g, 1024, 3584, HYOCR_BUF_ACT);
#if HYOCR_HAVE_CUDA
    gemm_rows_kernel_invariance(c, g, 1003, 1024);
    gemm_rows_kernel_invariance(c, g, 1024, 3584);
#endif
}

#if HYOCR_HAVE_CUDA
/* The layout rule (host code: runs without a card too), and what hk_gemm_rows_ex refuses
 * before it launches anything. */
static void test_gemm_rows_layout_rule(void)
{
    /* H200 (132 SMs, 264 CTA slots): two column groups where one group's CTAs take more than a
     * wave: q|k|v (512), gate|up (448), the head; not o/down (128), nor anything on a card with
     * room for them */
    g_assert_cmpint(hk_gemm_rows_groups(4096, 132), ==, 2);
    g_assert_cmpint(hk_gemm_rows_groups(3584, 132), ==, 2);
    g_assert_cmpint(hk_gemm_rows_groups(120832, 132), ==, 2);
    g_assert_cmpint(hk_gemm_rows_groups(2112, 132), ==, 1);   /* 264 CTAs: one wave */
    g_assert_cmpint(hk_gemm_rows_groups(1024, 132), ==, 1);
    g_assert_cmpint(hk_gemm_rows_groups(4096, 256), ==, 1);
    const cudaError_t inv = cudaErrorInvalidValue;
    void *p = (void *)(uintptr_t)0x100000;   /* never touched: each call is refused before a launch */
#define EX(G) hk_gemm_rows_ex(NULL, HK_F16, HK_GEMV_PLAIN, p, HK_F32, p, NULL, NULL, HK_F32, 0.0f, p, 4, 64, 1024, 0, G)
    g_assert_cmpint(EX(0), ==, inv);
    g_assert_cmpint(EX(HK_GEMM_ROWS_GROUPS_MAX + 1), ==, inv);
#undef EX
}

/* One product of hk_gemm_rows_ex in a given layout, the kernel called directly: the case's x, the
 * residual (read by the norms, added to by RESIDUAL: restored from res0 first) and the
 * output of the case; returns the M rows it wrote (RESIDUAL: the residual), fp32. */
typedef struct {
    hk_dtype   t;
    int        mode, N, K;
    hyocr_buf *x, *res, *res0, *nw, *w, *o;
} layout_case;

static float *layout_run(hyocr_backend *g, const layout_case *lc, int M, int groups)
{
    const bool residual = lc->mode == HK_GEMV_RESIDUAL, norm = lc->mode == HK_GEMV_NORM || lc->mode == HK_GEMV_NORM_GLU;
    const size_t nres = (size_t)16 * (residual ? lc->N : lc->K);
    CK(cudaMemcpy(lc->res->data, lc->res0->data, nres * 4, cudaMemcpyDeviceToDevice));
    CK(cudaMemset(lc->o->data, 0xff, (size_t)16 * lc->N * 4));   /* every element must be written */
    CK(hk_gemm_rows_ex(NULL, lc->t, lc->mode, residual ? NULL : lc->o->data, HK_F32, norm ? NULL : lc->x->data,
                       lc->res->data, lc->nw->data, lc->t, 1e-6f, lc->w->data, M, lc->N, lc->K, 0, groups));
    CK(cudaDeviceSynchronize());
    return get(g, residual ? lc->res : lc->o, 0, (size_t)M * lc->N);
}

/* A mode and shape in every layout: the column groups give the bits of one group, and every
 * row has the same bits at any M and at any position among the rows (NORM and PLAIN read x or
 * the residual in reverse). */
static void gemm_rows_layout(const dt_case *c, hyocr_backend *g, int mode, int N, int K)
{
    const int R = 16, Nw = mode == HK_GEMV_NORM_GLU ? 2 * N : N;
    const bool residual = mode == HK_GEMV_RESIDUAL;
    const size_t nres = (size_t)R * (residual ? N : K);
    g_autofree float *x = rnd((size_t)R * K, -1, 1), *w = rnd((size_t)Nw * K, -0.1, 0.1);
    g_autofree float *res = rnd(nres, -3, 3), *nw = rnd(K, 0.5, 1.5);
    layout_case lc = { case_kt(c), mode, N, K, mk(g, HYOCR_BUF_ACT, x, (size_t)R * K), mk(g, HYOCR_BUF_F32, NULL, nres),
                       mk(g, HYOCR_BUF_F32, res, nres), mk(g, HYOCR_BUF_WEIGHT, nw, K),
                       mk(g, HYOCR_BUF_WEIGHT, w, (size_t)Nw * K), mk(g, HYOCR_BUF_F32, NULL, (size_t)R * N) };
    /* x's rows (PLAIN), or the residual's (what the norms read), in reverse: row m at R-1-m */
    g_autofree float *rev_src = residual ? NULL : g_new(float, nres);   /* RESIDUAL: not reversed */
    const float *src = mode == HK_GEMV_PLAIN ? x : res;
    for (int m = 0; rev_src && m < R; m++) memcpy(rev_src + (size_t)m * K, src + (size_t)(R - 1 - m) * K, (size_t)K * 4);
    OK(g->ops->sync(g, E));
    g_autofree float *one = layout_run(g, &lc, R, 1);
    for (int G = 2; G <= HK_GEMM_ROWS_GROUPS_MAX; G++) {
        g_autofree char *what = g_strdup_printf("hk_gemm_rows_ex mode %d %d×%d×%d, %d groups", mode, R, N, K, G);
        g_autofree float *all = layout_run(g, &lc, R, G);
        expect_equal(what, all, one, (size_t)R * N);
        const int rows[] = { 1, 5, 9, 15, 16 };
        for (size_t j = 0; j < G_N_ELEMENTS(rows); j++) {
            g_autofree float *got = layout_run(g, &lc, rows[j], G);
            g_autofree char *w2 = g_strdup_printf("%s: %d rows against 16", what, rows[j]);
            expect_equal(w2, got, all, (size_t)rows[j] * N);
        }
        if (!residual) {
            /* rows in reverse order: x for PLAIN, the residual the norm reads */
            hyocr_buf *held = mode == HK_GEMV_PLAIN ? lc.x : lc.res0;
            hyocr_buf *rv = mk(g, mode == HK_GEMV_PLAIN ? HYOCR_BUF_ACT : HYOCR_BUF_F32, rev_src, nres);
            if (mode == HK_GEMV_PLAIN) lc.x = rv;
            else lc.res0 = rv;
            OK(g->ops->sync(g, E));
            g_autofree float *rev = layout_run(g, &lc, R, G);
            for (int m = 0; m < R; m++) {
                g_autofree char *w3 = g_strdup_printf("%s: row %d at position %d", what, m, R - 1 - m);
                expect_equal(w3, rev + (size_t)(R - 1 - m) * N, all + (size_t)m * N, (size_t)N);
            }
            if (mode == HK_GEMV_PLAIN) lc.x = held;
            else lc.res0 = held;
            g->ops->buf_free(g, rv);
        }
    }
    hyocr_buf *bufs[] = { lc.x, lc.res, lc.res0, lc.nw, lc.w, lc.o };
    for (size_t i = 0; i < G_N_ELEMENTS(bufs); i++) g->ops->buf_free(g, bufs[i]);
}
#endif

/* What hk_gemm_rows refuses (its callers then take cuBLAS, checked in test_matmul), and
 * nothing written when it does. */
static void test_gemm_rows_errors(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
#if HYOCR_HAVE_CUDA
    hk_dtype t = case_kt(c);
    const int N = 64, K = 64, R = 17;
    hyocr_buf *x = mk(g, HYOCR_BUF_ACT, NULL, (size_t)R * K + 8), *w = mk(g, HYOCR_BUF_WEIGHT, NULL, (size_t)N * K);
    hyocr_buf *o = mk(g, HYOCR_BUF_F32, NULL, (size_t)R * N);
    OK(g->ops->sync(g, E));
    CK(cudaMemset(o->data, 0x7f, (size_t)R * N * 4));
    const cudaError_t inv = cudaErrorInvalidValue;
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, 17, N, K), ==, inv);   /* M > 16 */
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, -1, N, K), ==, inv);
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, 4, -1, K), ==, inv);
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, 4, N, 48), ==, inv); /* K % 32 */
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, 4, N, 0), ==, inv);
    g_assert_cmpint(rows_plain(HK_F32, o->data, x->data, w->data, 4, N, K), ==, inv);
    g_assert_cmpint(rows_plain(t, o->data, (char *)x->data + 2, w->data, 4, N, K), ==, inv);
    g_assert_cmpint(rows_plain(t, o->data, x->data, (char *)w->data + 8, 4, N, K), ==, inv);
    g_assert_cmpint(rows_plain(t, NULL, x->data, w->data, 4, N, K), ==, inv);
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, 0, N, K), ==, cudaSuccess);
    g_assert_cmpint(rows_plain(t, o->data, x->data, w->data, 4, 0, K), ==, cudaSuccess);
    /* the modes: what they read instead of x, where they add */
    float *res = o->data;
    const void *nw = w->data;
    g_assert_cmpint(hk_gemm_rows(NULL, t, 4, o->data, HK_F32, x->data, res, nw, t, 0.0f, w->data, 4, N, K, 0), ==, inv);
    g_assert_cmpint(hk_gemm_rows(NULL, t, HK_GEMV_NORM, o->data, HK_F32, NULL, NULL, nw, t, 0.0f, w->data, 4, N, K, 0),
                    ==, inv);
    g_assert_cmpint(hk_gemm_rows(NULL, t, HK_GEMV_NORM_GLU, o->data, HK_F32, NULL, res, NULL, t, 0.0f, w->data, 4, N, K,
                                 0),
                    ==, inv);
    g_assert_cmpint(hk_gemm_rows(NULL, t, HK_GEMV_NORM, o->data, HK_F32, NULL, res + 1, nw, t, 0.0f, w->data, 4, N, K,
                                 0),
                    ==, inv);   /* the residual read in 16-byte loads */
    g_assert_cmpint(hk_gemm_rows(NULL, t, HK_GEMV_NORM, o->data, HK_F32, NULL, res, nw, t, 0.0f, w->data, 4, N,
                                 HK_GEMM_ROWS_NORM_MAX_K + 32, 0),
                    ==, inv);
    g_assert_cmpint(hk_gemm_rows(NULL, t, HK_GEMV_RESIDUAL, NULL, HK_F32, x->data, NULL, NULL, t, 0.0f, w->data, 4, N,
                                 K, 0),
                    ==, inv);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    g_autofree float *got = get(g, o, 0, (size_t)R * N);
    uint32_t fill = 0x7f7f7f7fu;
    float untouched;
    memcpy(&untouched, &fill, sizeof untouched);
    for (size_t i = 0; i < (size_t)R * N; i++) g_assert_cmpfloat(got[i], ==, untouched);
    g->ops->buf_free(g, x);
    g->ops->buf_free(g, w);
    g->ops->buf_free(g, o);
#endif
}

/* ---------------------------------------------------------------- norms, pointwise */

/* add_rmsnorm (ln 0) or add_layernorm (ln 1) of M rows of width N with a delta: against the CPU,
 * then row by row (one-row calls on views, as a decode step normalises its row) against the
 * multi-row call, residual and output bit for bit. */
static void norm_case(const dt_case *c, hyocr_backend *g, int M, int N, int ln)
{
    size_t mn = (size_t)M * N;
    g_autofree float *r = rnd(mn, -3, 3), *d = rndq(g, mn, -2, 2);
    g_autofree float *ga = rndq(g, N, 0.5, 1.5), *be = rndq(g, N, -0.5, 0.5);
    pair pr = mk2(g, HYOCR_BUF_F32, r, mn), pd = mk2(g, HYOCR_BUF_ACT, d, mn);
    pair pg = mk2(g, HYOCR_BUF_WEIGHT, ga, N), pb = mk2(g, HYOCR_BUF_WEIGHT, be, N);
    pair po = mk2(g, HYOCR_BUF_ACT, NULL, mn);
    g_autofree char *what = g_strdup_printf("%s %d×%d", ln ? "add_layernorm" : "add_rmsnorm", M, N);
    if (ln)
        BOTH(g, cpu()->ops->add_layernorm(cpu(), po.c, pr.c, pd.c, pg.c, pb.c, M, N, 1e-5f, E),
             g->ops->add_layernorm(g, po.g, pr.g, pd.g, pg.g, pb.g, M, N, 1e-5f, E));
    else
        BOTH(g, cpu()->ops->add_rmsnorm(cpu(), po.c, pr.c, pd.c, pg.c, M, N, 1e-6f, E),
             g->ops->add_rmsnorm(g, po.g, pr.g, pd.g, pg.g, M, N, 1e-6f, E));
    cmp2(g, what, &pr, 0, mn, TOL_F32);
    cmp2(g, what, &po, 0, mn, c->tol);

    hyocr_buf *r1 = mk(g, HYOCR_BUF_F32, r, mn), *o1 = mk(g, HYOCR_BUF_ACT, NULL, mn);
    for (int i = 0; i < M; i++) {
        hyocr_buf rv = hyocr_buf_view(r1, (size_t)i * N, N), ov = hyocr_buf_view(o1, (size_t)i * N, N);
        hyocr_buf dv = hyocr_buf_view(pd.g, (size_t)i * N, N);
        if (ln) OK(g->ops->add_layernorm(g, &ov, &rv, &dv, pg.g, pb.g, 1, N, 1e-5f, E));
        else OK(g->ops->add_rmsnorm(g, &ov, &rv, &dv, pg.g, 1, N, 1e-6f, E));
    }
    g_autofree char *rows = g_strdup_printf("%s, rows alone", what);
    g_autofree float *ra = get(g, r1, 0, mn), *rb = get(g, pr.g, 0, mn);
    g_autofree float *oa = get(g, o1, 0, mn), *ob = get(g, po.g, 0, mn);
    expect_equal(rows, ra, rb, mn);
    expect_equal(rows, oa, ob, mn);
    g->ops->buf_free(g, r1);
    g->ops->buf_free(g, o1);
    free2(g, &pr);
    free2(g, &pd);
    free2(g, &pg);
    free2(g, &pb);
    free2(g, &po);
}

static void test_norms(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    int M = 37, N = 1152;
    size_t mn = (size_t)M * N;
    g_autofree float *r = rnd(mn, -3, 3), *d = rndq(g, mn, -2, 2);
    g_autofree float *ga = rndq(g, N, 0.5, 1.5), *be = rndq(g, N, -0.5, 0.5);
    pair pr = mk2(g, HYOCR_BUF_F32, r, mn), pd = mk2(g, HYOCR_BUF_ACT, d, mn);
    pair pg = mk2(g, HYOCR_BUF_WEIGHT, ga, N), pb = mk2(g, HYOCR_BUF_WEIGHT, be, N);
    pair po = mk2(g, HYOCR_BUF_ACT, NULL, mn);
    BOTH(g, cpu()->ops->add_layernorm(cpu(), po.c, pr.c, pd.c, pg.c, pb.c, M, N, 1e-5f, E),
         g->ops->add_layernorm(g, po.g, pr.g, pd.g, pg.g, pb.g, M, N, 1e-5f, E));
    cmp2(g, "add_layernorm residual", &pr, 0, mn, TOL_F32);
    cmp2(g, "add_layernorm out", &po, 0, mn, c->tol);
    BOTH(g, cpu()->ops->add_layernorm(cpu(), po.c, pr.c, NULL, pg.c, pb.c, M, N, 1e-5f, E),
         g->ops->add_layernorm(g, po.g, pr.g, NULL, pg.g, pb.g, M, N, 1e-5f, E));
    cmp2(g, "layernorm out", &po, 0, mn, c->tol);

    BOTH(g, cpu()->ops->add_rmsnorm(cpu(), po.c, pr.c, pd.c, pg.c, M, N, 1e-5f, E),
         g->ops->add_rmsnorm(g, po.g, pr.g, pd.g, pg.g, M, N, 1e-5f, E));
    cmp2(g, "add_rmsnorm residual", &pr, 0, mn, TOL_F32);
    cmp2(g, "add_rmsnorm out", &po, 0, mn, c->tol);
    /* in place on the fp32 stream (merger's before_rms has out == residual) */
    BOTH(g, cpu()->ops->add_rmsnorm(cpu(), pr.c, pr.c, NULL, pg.c, M, N, 1e-5f, E),
         g->ops->add_rmsnorm(g, pr.g, pr.g, NULL, pg.g, M, N, 1e-5f, E));
    cmp2(g, "rmsnorm in place", &pr, 0, mn, TOL_F32);
    free2(g, &pr);
    free2(g, &pd);
    free2(g, &pg);
    free2(g, &pb);
    free2(g, &po);

    /* a wide row (merger proj_out width) */
    M = 3;
    N = 4608;
    mn = (size_t)M * N;
    g_autofree float *r2 = rnd(mn, -30, 30), *w2 = rndq(g, N, -2, 2);
    pr = mk2(g, HYOCR_BUF_F32, r2, mn);
    pg = mk2(g, HYOCR_BUF_WEIGHT, w2, N);
    po = mk2(g, HYOCR_BUF_ACT, NULL, mn);
    BOTH(g, cpu()->ops->add_rmsnorm(cpu(), po.c, pr.c, NULL, pg.c, M, N, 1e-5f, E),
         g->ops->add_rmsnorm(g, po.g, pr.g, NULL, pg.g, M, N, 1e-5f, E));
    cmp2(g, "rmsnorm wide", &po, 0, mn, c->tol);
    free2(g, &pr);
    free2(g, &pg);
    free2(g, &po);

    /* the prefill's width, one not a multiple of 8 (a ragged last float4 column of lanes), one not
     * of 4 (the block-a-row kernel): against the CPU, and each row of a multi-row call against the
     * same row normalised alone (what a decode step does) bit for bit */
    const int widths[] = { 1024, 1156, 1030 };
    for (size_t i = 0; i < G_N_ELEMENTS(widths); i++)
        for (int ln = 0; ln < 2; ln++) norm_case(c, g, 37, widths[i], ln);
}

/* The fused decode products against the CPU's composition of the unfused ops, and
 * against the CUDA unfused ops: one row (hk_gemv1) up to the order of the fp32 sums, 2..16
 * rows (hk_gemm_rows's modes) bit for bit, the unfused products of those rows going through
 * hk_gemm_rows too. Shapes: the model's, a ragged one, a K needing two passes. */
static void run_fused(const dt_case *c, hyocr_backend *g, int M, int N, int K, int mode)
{
    const int Nw = mode == 2 ? 2 * N : N;   /* 0 norm, 1 residual, 2 norm+glu */
    const size_t nr = (size_t)M * (mode == 1 ? N : K), nx = mode == 1 ? (size_t)M * K : 1, no = (size_t)M * N;
    g_autofree float *r = rnd(nr, -3, 3), *nw = rndq(g, K, 0.5, 1.5);
    g_autofree float *w = rndq(g, (size_t)Nw * K, -0.1, 0.1), *x = rndq(g, nx, -1, 1);
    pair pr = mk2(g, HYOCR_BUF_F32, r, nr), pn = mk2(g, HYOCR_BUF_WEIGHT, nw, K);
    pair pw = mk2(g, HYOCR_BUF_WEIGHT, w, (size_t)Nw * K), px = mk2(g, HYOCR_BUF_ACT, x, nx);
    pair po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    g_autofree char *what = g_strdup_printf("%s %d×%d×%d", mode == 1 ? "matmul_residual" : mode ? "norm_matmul glu" :
                                            "norm_matmul", M, N, K);
    g_autofree char *vs = g_strdup_printf("%s vs unfused", what);
    g_autofree float *fused = NULL, *unfused = NULL;
    if (mode == 1) {
        BOTH(g, cpu()->ops->matmul_residual(cpu(), pr.c, px.c, pw.c, M, N, K, E),
             g->ops->matmul_residual(g, pr.g, px.g, pw.g, M, N, K, E));
        cmp2(g, what, &pr, 0, no, c->tol / 8);
        /* unfused on the device: the product into an ACT buffer, then the add */
        hyocr_buf *d = mk(g, HYOCR_BUF_ACT, NULL, no), *r2 = mk(g, HYOCR_BUF_F32, r, no);
        OK(g->ops->matmul(g, d, px.g, pw.g, 0, NULL, M, N, K, E));
        OK(g->ops->add(g, r2, d, no, E));
        fused = get(g, pr.g, 0, no);
        unfused = get(g, r2, 0, no);
        g->ops->buf_free(g, d);
        g->ops->buf_free(g, r2);
    } else {
        BOTH(g, cpu()->ops->norm_matmul(cpu(), po.c, pr.c, pn.c, 1e-6f, pw.c, M, N, K, mode == 2, E),
             g->ops->norm_matmul(g, po.g, pr.g, pn.g, 1e-6f, pw.g, M, N, K, mode == 2, E));
        cmp2(g, what, &po, 0, no, c->tol);
        cmp2(g, "norm_matmul leaves the residual", &pr, 0, nr, -1);
        hyocr_buf *a = mk(g, HYOCR_BUF_ACT, NULL, nr), *gu = mk(g, HYOCR_BUF_ACT, NULL, (size_t)M * Nw);
        hyocr_buf *o2 = mk(g, HYOCR_BUF_ACT, NULL, no);
        OK(g->ops->add_rmsnorm(g, a, pr.g, NULL, pn.g, M, K, 1e-6f, E));
        OK(g->ops->matmul(g, mode == 2 ? gu : o2, a, pw.g, 0, NULL, M, Nw, K, E));
        if (mode == 2) OK(g->ops->swiglu(g, o2, gu, M, N, E));
        fused = get(g, po.g, 0, no);
        unfused = get(g, o2, 0, no);
        g->ops->buf_free(g, a);
        g->ops->buf_free(g, gu);
        g->ops->buf_free(g, o2);
    }
    if (M == 1) expect_close(vs, fused, unfused, no, mode == 1 ? c->tol / 8 : c->tol);
    else expect_equal(vs, fused, unfused, no);
    free2(g, &pr);
    free2(g, &pn);
    free2(g, &pw);
    free2(g, &px);
    free2(g, &po);
}

static void test_fused(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    g_assert_nonnull(g->ops->norm_matmul);
    g_assert_nonnull(g->ops->matmul_residual);
    run_fused(c, g, 1, 4096, 1024, 0);   /* qkv */
    run_fused(c, g, 1, 3584, 1024, 2);   /* gate|up → swiglu */
    run_fused(c, g, 1, 1024, 2048, 1);   /* o */
    run_fused(c, g, 1, 1024, 3584, 1);   /* down */
    run_fused(c, g, 1, 37, 200, 0);
    run_fused(c, g, 1, 37, 200, 2);
    run_fused(c, g, 1, 37, 200, 1);
    run_fused(c, g, 1, 3000, 2400, 0);   /* K over one pass of loads */
    run_fused(c, g, 1, 3000, 2400, 1);
    /* several rows: a batched decode step, a verify block; 12: warps 0-3 normalise two rows
     * together (gemv.cu's rows_norm<T, 2>), warps 4-7 one */
    const int rows[] = { 2, 5, 12, 16 };
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        const int M = rows[i];
        run_fused(c, g, M, 4096, 1024, 0);
        run_fused(c, g, M, 3584, 1024, 2);
        run_fused(c, g, M, 1024, 2048, 1);
        run_fused(c, g, M, 1024, 3584, 1);   /* two rounds of loads a warp */
        run_fused(c, g, M, 37, 96, 0);       /* ragged N; K % 64 = 32: rows unpadded in shared memory */
        run_fused(c, g, M, 37, 96, 2);
        run_fused(c, g, M, 37, 96, 1);
        run_fused(c, g, M, 300, 2048, 0);    /* the widest normalised rows (over 48 KB at 16 rows) */
        run_fused(c, g, M, 300, 2048, 2);
    }
}

/* The layouts of hk_gemm_rows_ex (HYOCR_ROWS_WIDE): the kernel in each mode on the step's
 * shapes and ragged ones, then backends with two groups forced everywhere and by the card's
 * rule: the fused products bit for bit the unfused ones and close to the CPU's, the rows of a
 * product independent of M. */
static void test_gemm_rows_layout(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
#if HYOCR_HAVE_CUDA
    gemm_rows_layout(c, g, HK_GEMV_RESIDUAL, 1024, 2048);   /* o */
    gemm_rows_layout(c, g, HK_GEMV_RESIDUAL, 1024, 3584);   /* down: two rounds a warp */
    gemm_rows_layout(c, g, HK_GEMV_NORM, 4096, 1024);       /* q|k|v */
    gemm_rows_layout(c, g, HK_GEMV_NORM_GLU, 3584, 1024);   /* gate|up */
    gemm_rows_layout(c, g, HK_GEMV_PLAIN, 1003, 1024);      /* ragged N: the last group half out */
    gemm_rows_layout(c, g, HK_GEMV_NORM_GLU, 300, 2048);    /* the widest normalised rows */
#endif
    const hyocr_tuning tunings[] = { { .rows_wide = 2 }, { .rows_wide = 1 } };
    for (size_t i = 0; i < G_N_ELEMENTS(tunings); i++) {
        hyocr_backend *t = cuda_tuned(c, tunings[i]);
        const int rows[] = { 2, 16 };
        for (size_t j = 0; j < G_N_ELEMENTS(rows); j++) {
            run_fused(c, t, rows[j], 1024, 2048, 1);
            run_fused(c, t, rows[j], 1024, 3584, 1);
            run_fused(c, t, rows[j], 4096, 1024, 0);
            run_fused(c, t, rows[j], 3584, 1024, 2);
            run_fused(c, t, rows[j], 300, 2048, 2);
        }
        gemm_rows_invariance(t, 1024, 2048, HYOCR_BUF_ACT);
        gemm_rows_invariance(t, 1003, 1024, HYOCR_BUF_F32);
        hyocr_backend_free(t);
    }
}

/* What the fused products refuse, with what they state they take (the model asks first). */
static void test_fused_errors(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    g_assert_cmpint(g->ops->fused_rows(g, 1024, true), ==, 16);
    g_assert_cmpint(g->ops->fused_rows(g, 3584, false), ==, 16);
    g_assert_cmpint(g->ops->fused_rows(g, 200, false), ==, 1);    /* K % 32 ≠ 0: one row */
    g_assert_cmpint(g->ops->fused_rows(g, 4096, true), ==, 1);    /* a norm over 2048 wide: one row */
    g_assert_cmpint(g->ops->fused_rows(g, 4096, false), ==, 16);
    g_assert_cmpint(g->ops->fused_rows(g, 8200, true), ==, 0);
    g_assert_cmpint(g->ops->fused_rows(g, 100, false), ==, 0);    /* K % 8 ≠ 0 */
    const int R = 17, N = 64, K = 4096;
    hyocr_buf *r = mk(g, HYOCR_BUF_F32, NULL, (size_t)R * K), *w = mk(g, HYOCR_BUF_WEIGHT, NULL, 2 * N * K);
    hyocr_buf *x = mk(g, HYOCR_BUF_ACT, NULL, (size_t)R * K), *o = mk(g, HYOCR_BUF_ACT, NULL, (size_t)R * N);
    hyocr_buf *nw = mk(g, HYOCR_BUF_WEIGHT, NULL, K);
    g_autoptr(GError) err = NULL;
    g_assert_false(g->ops->matmul_residual(g, r, x, w, 17, N, 64, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "1 to 16 rows"));
    g_clear_error(&err);
    g_assert_false(g->ops->norm_matmul(g, o, r, nw, 1e-6f, w, 17, N, 64, true, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_assert_false(g->ops->matmul_residual(g, r, x, w, 2, N, 200, &err));   /* K % 32 ≠ 0 from 2 rows */
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "2×64×200"));
    g_clear_error(&err);
    g_assert_false(g->ops->norm_matmul(g, o, r, nw, 1e-6f, w, 5, N, 200, false, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_assert_false(g->ops->norm_matmul(g, o, r, nw, 1e-6f, w, 2, N, K, false, &err));   /* too wide for 2 rows */
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "4096"));
    g_clear_error(&err);
    OK(g->ops->norm_matmul(g, o, r, nw, 1e-6f, w, 1, N, K, false, E));   /* … one row holds it */
    hyocr_buf rv = hyocr_buf_view(r, 1, (size_t)2 * 64);   /* 4 bytes off */
    g_assert_false(g->ops->norm_matmul(g, o, &rv, nw, 1e-6f, w, 2, N, 64, false, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "aligned"));
    g_clear_error(&err);
    g_assert_false(g->ops->norm_matmul(g, x, x, nw, 1e-6f, w, 2, N, 64, false, &err));   /* residual not F32 */
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g->ops->buf_free(g, r);
    g->ops->buf_free(g, w);
    g->ops->buf_free(g, x);
    g->ops->buf_free(g, o);
    g->ops->buf_free(g, nw);
}

static void test_pointwise(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    size_t n = 50000;
    g_autofree float *x = rndq(g, n, -6, 6), *y = rndq(g, n, -6, 6);
    pair pf = mk2(g, HYOCR_BUF_F32, x, n), pa = mk2(g, HYOCR_BUF_ACT, y, n);
    BOTH(g, cpu()->ops->add(cpu(), pf.c, pa.c, n, E), g->ops->add(g, pf.g, pa.g, n, E));
    cmp2(g, "add F32 += ACT", &pf, 0, n, TOL_F32);
    BOTH(g, cpu()->ops->gelu(cpu(), pf.c, n, E), g->ops->gelu(g, pf.g, n, E));
    cmp2(g, "gelu F32", &pf, 0, n, TOL_F32);
    BOTH(g, cpu()->ops->gelu(cpu(), pa.c, n, E), g->ops->gelu(g, pa.g, n, E));
    cmp2(g, "gelu ACT", &pa, 0, n, c->tol);
    free2(g, &pf);
    free2(g, &pa);

    /* lengths a multiple of 8 (16-byte accesses), of 4 only, of neither */
    const size_t lens[] = { 8 * 1001, 8 * 1001 + 4, 8 * 1001 + 3 };
    for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
        g_autofree float *z = rndq(g, lens[i], -6, 6);
        pair pz = mk2(g, HYOCR_BUF_ACT, z, lens[i]);
        BOTH(g, cpu()->ops->gelu(cpu(), pz.c, lens[i], E), g->ops->gelu(g, pz.g, lens[i], E));
        g_autofree char *what = g_strdup_printf("gelu ACT n = %zu", lens[i]);
        cmp2(g, what, &pz, 0, lens[i], c->tol);
        free2(g, &pz);
    }
    /* the 16-byte kernel against the 8-byte one on the same values, bit for bit: a view 4
     * elements in (8-byte aligned only) takes the latter */
    {
        const size_t m = 4096 + 8;
        g_autofree float *z = rndq(g, m, -6, 6);
        hyocr_buf *a = mk(g, HYOCR_BUF_ACT, z, m), *b = mk(g, HYOCR_BUF_ACT, z, m);
        hyocr_buf head = hyocr_buf_view(b, 0, 4), tail = hyocr_buf_view(b, 4, m - 4);
        OK(g->ops->gelu(g, a, m, E));
        OK(g->ops->gelu(g, &head, 4, E));
        OK(g->ops->gelu(g, &tail, m - 4, E));
        g_autofree float *za = get(g, a, 0, m), *zb = get(g, b, 0, m);
        expect_equal("gelu, 16- against 8-byte accesses", za, zb, m);
        g->ops->buf_free(g, a);
        g->ops->buf_free(g, b);
    }

    /* intermediate widths a multiple of 8, of 4 only, of neither; odd row counts */
    const int shapes[][2] = { { 7, 3584 }, { 5, 3588 }, { 3, 37 }, { 33, 1024 } };
    for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) {
        int M = shapes[i][0], I = shapes[i][1];
        g_autofree float *gu = rndq(g, (size_t)M * 2 * I, -5, 5);
        pair pgu = mk2(g, HYOCR_BUF_ACT, gu, (size_t)M * 2 * I), po = mk2(g, HYOCR_BUF_ACT, NULL, (size_t)M * I);
        BOTH(g, cpu()->ops->swiglu(cpu(), po.c, pgu.c, M, I, E), g->ops->swiglu(g, po.g, pgu.g, M, I, E));
        g_autofree char *what = g_strdup_printf("swiglu %d×%d", M, I);
        cmp2(g, what, &po, 0, po.n, 2 * c->tol);
        if (I % 8 == 0) {
            /* an output view 4 elements in takes the 8-byte kernel: the same bits */
            hyocr_buf *o2 = mk(g, HYOCR_BUF_ACT, NULL, (size_t)M * I + 4);
            hyocr_buf ov = hyocr_buf_view(o2, 4, (size_t)M * I);
            OK(g->ops->swiglu(g, &ov, pgu.g, M, I, E));
            g_autofree float *a = get(g, po.g, 0, (size_t)M * I), *b = get(g, o2, 4, (size_t)M * I);
            expect_equal("swiglu, 16- against 8-byte accesses", a, b, (size_t)M * I);
            g->ops->buf_free(g, o2);
        }
        free2(g, &pgu);
        free2(g, &po);
    }
}

/* ---------------------------------------------------------------- vision helpers */

static void test_vision_helpers(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const int edge = 16, C = 40;
    size_t tn = (size_t)(1 + edge * edge) * C;
    g_autofree float *tab = rndq(g, tn, -1, 1);
    pair pt = mk2(g, HYOCR_BUF_WEIGHT, tab, tn);
    const int grids[][2] = { { 10, 14 }, { 16, 16 }, { 24, 20 }, { 2, 32 }, { 16, 6 } };
    for (int interp = 0; interp < 2; interp++)
        for (size_t i = 0; i < G_N_ELEMENTS(grids); i++) {
            int gh = grids[i][0], gw = grids[i][1];
            size_t n = (size_t)gh * gw * C;
            g_autofree float *x = rnd(n, -1, 1);
            pair px = mk2(g, HYOCR_BUF_F32, x, n);
            BOTH(g, cpu()->ops->posemb_add(cpu(), px.c, pt.c, 1, edge, gh, gw, C, (hyocr_posemb_interp)interp, E),
                 g->ops->posemb_add(g, px.g, pt.g, 1, edge, gh, gw, C, (hyocr_posemb_interp)interp, E));
            g_autofree char *what = g_strdup_printf("posemb_add R%d %d×%d", interp + 1, gh, gw);
            cmp2(g, what, &px, 0, n, TOL_F32);
            free2(g, &px);
        }
    free2(g, &pt);

    int gh = 6, gw = 10, Cm = 24;
    size_t n = (size_t)gh * gw * Cm;
    g_autofree float *x = rndq(g, n, -1, 1);
    pair px = mk2(g, HYOCR_BUF_ACT, x, n), po = mk2(g, HYOCR_BUF_ACT, NULL, n);
    BOTH(g, cpu()->ops->merge_gather(cpu(), po.c, px.c, gh, gw, Cm, E), g->ops->merge_gather(g, po.g, px.g, gh, gw, Cm, E));
    cmp2(g, "merge_gather", &po, 0, n, -1);
    free2(g, &px);
    free2(g, &po);

    int Hm = 3, Wm = 5, Cn = 16;
    size_t rows = (size_t)Hm * (Wm + 1) + 2;
    g_autofree float *y = rndq(g, (size_t)Hm * Wm * Cn, -1, 1), *nl = rndq(g, Cn, -1, 1);
    pair py = mk2(g, HYOCR_BUF_ACT, y, (size_t)Hm * Wm * Cn), pn = mk2(g, HYOCR_BUF_WEIGHT, nl, Cn);
    po = mk2(g, HYOCR_BUF_ACT, NULL, rows * Cn);
    BOTH(g, cpu()->ops->append_newline(cpu(), po.c, py.c, pn.c, Hm, Wm, Cn, E),
         g->ops->append_newline(g, po.g, py.g, pn.g, Hm, Wm, Cn, E));
    /* only the grid rows are written (the CPU backend leaves the spare rows as allocated) */
    cmp2(g, "append_newline", &po, 0, (rows - 2) * Cn, -1);
    free2(g, &py);
    free2(g, &pn);
    free2(g, &po);
}

static void test_embed(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    int V = 50, C = 64, n = 23;
    g_autofree float *tab = rndq(g, (size_t)V * C, -1, 1);
    int32_t ids[23];
    for (int i = 0; i < n; i++) ids[i] = g_test_rand_int_range(0, V);
    pair pt = mk2(g, HYOCR_BUF_WEIGHT, tab, (size_t)V * C), po = mk2(g, HYOCR_BUF_F32, NULL, (size_t)n * C);
    BOTH(g, cpu()->ops->embed(cpu(), po.c, pt.c, ids, n, C, E), g->ops->embed(g, po.g, pt.g, ids, n, C, E));
    cmp2(g, "embed", &po, 0, po.n, -1);
    free2(g, &pt);
    free2(g, &po);
}

/* ---------------------------------------------------------------- rope + qk norm */


/* rope_qknorm against the CPU; then each row alone (a one-row call, what a decode step runs) against
 * the same row of the multi-row call, bit for bit. */
static void run_rope(const dt_case *c, hyocr_backend *g, hyocr_rope_layout layout, int n_axes, int n_sections, int M,
                     int Hq, int Hkv)
{
    const int D = 128, W = (Hq + 2 * Hkv) * D;
    size_t n = (size_t)M * W;
    g_autofree float *x = rndq(g, n, -3, 3), *qn = rndq(g, D, 0.5, 1.5), *kn = rndq(g, D, 0.5, 1.5);
    g_autofree int32_t *pos = g_new(int32_t, (size_t)n_axes * M);
    for (int i = 0; i < n_axes * M; i++) pos[i] = g_test_rand_int_range(0, 5000);
    hyocr_rope_params rp;
    rope_init(&rp, D, layout, n_sections);
    pair px = mk2(g, HYOCR_BUF_ACT, x, n), pq = mk2(g, HYOCR_BUF_WEIGHT, qn, D), pk = mk2(g, HYOCR_BUF_WEIGHT, kn, D);
    BOTH(g, cpu()->ops->rope_qknorm(cpu(), px.c, M, pos, n_axes, Hq, Hkv, &rp, pq.c, pk.c, 1e-5f, E),
         g->ops->rope_qknorm(g, px.g, M, pos, n_axes, Hq, Hkv, &rp, pq.g, pk.g, 1e-5f, E));
    g_autofree char *what = g_strdup_printf("rope_qknorm R%d, %d axes, %d sections, %d rows, %d+%d heads", layout + 1,
                                            n_axes, n_sections, M, Hq, Hkv);
    cmp2(g, what, &px, 0, n, 1.5 * c->tol);
    /* v is untouched: compare the last row's v exactly */
    size_t v0 = (size_t)(M - 1) * W + (size_t)(Hq + Hkv) * D;
    cmp2(g, "rope leaves v", &px, v0, (size_t)Hkv * D, -1);

    hyocr_buf *x1 = mk(g, HYOCR_BUF_ACT, x, n);
    for (int r = 0; r < M; r++) {
        int32_t p1[4];
        for (int a = 0; a < n_axes; a++) p1[a] = pos[(size_t)a * M + r];
        hyocr_buf xv = hyocr_buf_view(x1, (size_t)r * W, W);
        OK(g->ops->rope_qknorm(g, &xv, 1, p1, n_axes, Hq, Hkv, &rp, pq.g, pk.g, 1e-5f, E));
    }
    g_autofree char *rows = g_strdup_printf("%s, rows alone", what);
    g_autofree float *a = get(g, x1, 0, n), *b = get(g, px.g, 0, n);
    expect_equal(rows, a, b, n);
    g->ops->buf_free(g, x1);
    free2(g, &px);
    free2(g, &pq);
    free2(g, &pk);
}

/* The backend does not send metadata again that its buffer holds already (the positions of every
 * layer of a chunk): the same positions twice, then positions of the same size that differ in the
 * last row only, each call checked on that row against the CPU. */
static void rope_reuse(const dt_case *c, hyocr_backend *g)
{
    const int M = 20, Hq = 4, Hkv = 2, D = 128, W = (Hq + 2 * Hkv) * D, n_axes = 4;
    size_t n = (size_t)M * W;
    g_autofree float *x = rndq(g, n, -3, 3), *qn = rndq(g, D, 0.5, 1.5), *kn = rndq(g, D, 0.5, 1.5);
    int32_t pos[2][4 * 20];
    for (int i = 0; i < n_axes * M; i++) pos[0][i] = pos[1][i] = g_test_rand_int_range(0, 5000);
    for (int a = 0; a < n_axes; a++) pos[1][a * M + M - 1] += 1000;
    hyocr_rope_params rp;
    rope_init(&rp, D, HYOCR_ROPE_LAYOUT_R1, 4);
    pair pq = mk2(g, HYOCR_BUF_WEIGHT, qn, D), pk = mk2(g, HYOCR_BUF_WEIGHT, kn, D);
    for (int k = 0; k < 3; k++) {
        const int32_t *p = pos[k == 2];
        pair px = mk2(g, HYOCR_BUF_ACT, x, n);
        BOTH(g, cpu()->ops->rope_qknorm(cpu(), px.c, M, p, n_axes, Hq, Hkv, &rp, pq.c, pk.c, 1e-5f, E),
             g->ops->rope_qknorm(g, px.g, M, p, n_axes, Hq, Hkv, &rp, pq.g, pk.g, 1e-5f, E));
        g_autofree char *what = g_strdup_printf("rope_qknorm call %d, last row", k + 1);
        cmp2(g, what, &px, (size_t)(M - 1) * W, (size_t)(Hq + Hkv) * D, 1.5 * c->tol);
        free2(g, &px);
    }
    free2(g, &pq);
    free2(g, &pk);
}

/* HYOCR_ROPE_HEADS: a row's heads spread over blocks of hpc heads (decode-sized steps) give the
 * bits of a row a block (the default backend g), and match the CPU; 16 rows of 16 + 8 heads
 * (the model's), 3 rows of 32 + 8 (more heads than 8 warps at hpc 16: a warp takes two), 1 row. */
static void test_rope_spread(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    static const struct { int M, Hq, Hkv; } shapes[] = { { 16, 16, 8 }, { 3, 32, 8 }, { 1, 16, 8 } };
    for (int hpc = 1; hpc <= 16; hpc *= 2)
        for (size_t k = 0; k < G_N_ELEMENTS(shapes); k++) {
            const int M = shapes[k].M, Hq = shapes[k].Hq, Hkv = shapes[k].Hkv, D = 128, W = (Hq + 2 * Hkv) * D;
            size_t n = (size_t)M * W;
            g_autofree float *x = rndq(g, n, -3, 3), *qn = rndq(g, D, 0.5, 1.5), *kn = rndq(g, D, 0.5, 1.5);
            g_autofree int32_t *pos = g_new(int32_t, M);
            for (int i = 0; i < M; i++) pos[i] = g_test_rand_int_range(0, 5000);
            hyocr_rope_params rp;
            rope_init(&rp, D, HYOCR_ROPE_LAYOUT_R1, 0);
            hyocr_backend *t = cuda_tuned(c, (hyocr_tuning){ .rope_heads = hpc });
            pair px = mk2(g, HYOCR_BUF_ACT, x, n), pq = mk2(g, HYOCR_BUF_WEIGHT, qn, D), pk = mk2(g, HYOCR_BUF_WEIGHT, kn, D);
            pair tx = mk2(t, HYOCR_BUF_ACT, x, n), tq = mk2(t, HYOCR_BUF_WEIGHT, qn, D), tk = mk2(t, HYOCR_BUF_WEIGHT, kn, D);
            BOTH(g, cpu()->ops->rope_qknorm(cpu(), px.c, M, pos, 1, Hq, Hkv, &rp, pq.c, pk.c, 1e-5f, E),
                 g->ops->rope_qknorm(g, px.g, M, pos, 1, Hq, Hkv, &rp, pq.g, pk.g, 1e-5f, E));
            OK(t->ops->rope_qknorm(t, tx.g, M, pos, 1, Hq, Hkv, &rp, tq.g, tk.g, 1e-5f, E));
            g_autofree char *what = g_strdup_printf("rope_qknorm %d rows, %d+%d heads, %d heads a block", M, Hq, Hkv, hpc);
            g_autofree float *a = get(t, tx.g, 0, n), *b = get(g, px.g, 0, n), *ref = get(cpu(), px.c, 0, n);
            expect_equal(what, a, b, n);
            expect_close(what, a, ref, n, 1.5 * c->tol);
            free2(g, &px);
            free2(g, &pq);
            free2(g, &pk);
            free2(t, &tx);
            free2(t, &tq);
            free2(t, &tk);
            hyocr_backend_free(t);
        }
}

static void test_rope(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    run_rope(c, g, HYOCR_ROPE_LAYOUT_R1, 4, 4, 50, 16, 8);
    run_rope(c, g, HYOCR_ROPE_LAYOUT_R2, 4, 4, 51, 16, 8);
    run_rope(c, g, HYOCR_ROPE_LAYOUT_R1, 1, 4, 50, 16, 8);
    run_rope(c, g, HYOCR_ROPE_LAYOUT_R1, 1, 0, 50, 16, 8);
    /* more heads than a block's warps take in one round (3 each), and fewer heads than warps */
    run_rope(c, g, HYOCR_ROPE_LAYOUT_R1, 4, 4, 7, 32, 8);
    run_rope(c, g, HYOCR_ROPE_LAYOUT_R1, 4, 4, 9, 2, 1);
    rope_reuse(c, g);
}

/* ---------------------------------------------------------------- attention */

static void run_full(const dt_case *c, hyocr_backend *g, int n, int H, int D)
{
    size_t nq = (size_t)n * 3 * H * D, no = (size_t)n * H * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    float scale = (float)pow(D, -0.5);
    BOTH(g, cpu()->ops->attention_full(cpu(), po.c, pq.c, n, H, D, scale, E),
         g->ops->attention_full(g, po.g, pq.g, n, H, D, scale, E));
    g_autofree char *what = g_strdup_printf("attention_full n %d H %d D %d", n, H, D);
    cmp2(g, what, &po, 0, no, c->tol);
    free2(g, &pq);
    free2(g, &po);
}

static void test_attention_full(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    run_full(c, g, 300, 16, 72);
    run_full(c, g, 1000, 16, 72);   /* several key tiles, the last partial */
    run_full(c, g, 64, 2, 72);
    run_full(c, g, 1, 3, 72);
    run_full(c, g, 77, 4, 128);
}

static void test_attention_full_long(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    run_full(c, g, 4096, 16, 72);   /* full tiles only: the unmasked path */
    run_full(c, g, 4200, 16, 72);   /* many tiles, then a partial query and key tile */
}

/* Paged KV fixture: both backends' caches and a shuffled block pool. */
typedef struct {
    hyocr_backend *g;
    int            bs, n_blocks, Hq, Hkv, D;
    pair           k, v;
    int32_t       *perm;   /* physical blocks in handout order */
    int            next;
} kv_fix;

static void kv_init(kv_fix *f, hyocr_backend *g, int bs, int n_blocks, int Hq, int Hkv, int D)
{
    *f = (kv_fix){ g, bs, n_blocks, Hq, Hkv, D };
    size_t n = (size_t)n_blocks * bs * Hkv * D;
    f->k = mk2(g, HYOCR_BUF_KV, NULL, n);
    f->v = mk2(g, HYOCR_BUF_KV, NULL, n);
    f->perm = g_new(int32_t, n_blocks);
    for (int i = 0; i < n_blocks; i++) f->perm[i] = i;
    for (int i = n_blocks - 1; i > 0; i--) {
        int j = g_test_rand_int_range(0, i + 1), t = f->perm[i];
        f->perm[i] = f->perm[j];
        f->perm[j] = t;
    }
}

static void kv_clear(kv_fix *f)
{
    free2(f->g, &f->k);
    free2(f->g, &f->v);
    g_free(f->perm);
}

static int32_t *kv_table(kv_fix *f, int tokens)
{
    int nb = (tokens + f->bs - 1) / f->bs;
    g_assert_cmpint(f->next + nb, <=, f->n_blocks);
    int32_t *t = g_new(int32_t, nb);
    memcpy(t, f->perm + f->next, nb * sizeof(int32_t));
    f->next += nb;
    return t;
}

/* One paged call on both backends with fresh random q|k|v rows; compares out. */
static void paged_step(const dt_case *c, kv_fix *f, const hyocr_seq_view *sv, int n_seqs, const char *what)
{
    int rows = 0;
    for (int s = 0; s < n_seqs; s++) rows += sv[s].n_new;
    size_t nq = (size_t)rows * (f->Hq + 2 * f->Hkv) * f->D, no = (size_t)rows * f->Hq * f->D;
    g_autofree float *qkv = rndq(f->g, nq, -2, 2);
    pair pq = mk2(f->g, HYOCR_BUF_ACT, qkv, nq), po = mk2(f->g, HYOCR_BUF_ACT, NULL, no);
    float scale = (float)pow(f->D, -0.5);
    hyocr_backend *g = f->g;
    BOTH(g, cpu()->ops->attention_paged(cpu(), po.c, pq.c, f->k.c, f->v.c, f->bs, sv, n_seqs, f->Hq, f->Hkv, f->D,
                                        scale, NULL, E),
         g->ops->attention_paged(g, po.g, pq.g, f->k.g, f->v.g, f->bs, sv, n_seqs, f->Hq, f->Hkv, f->D, scale, NULL, E));
    cmp2(g, what, &po, 0, no, c->tol);
    free2(g, &pq);
    free2(g, &po);
}

#if HYOCR_HAVE_CUDA
/* A spare buffer of bytes bytes (attention_paged's), every byte 0x5a; whether it still is. */
static hyocr_buf *spare_new(hyocr_backend *g, size_t bytes)
{
    g_autoptr(GError) err = NULL;
    hyocr_buf *b = g->ops->alloc(g, HYOCR_BUF_ACT, bytes / 2, &err);
    g_assert_no_error(err);
    CK(cudaMemset(b->data, 0x5a, bytes));
    return b;
}

static bool spare_untouched(const hyocr_buf *b)
{
    size_t bytes = b->n * (size_t)b->elem_size;
    g_autofree uint8_t *h = g_malloc(bytes);
    CK(cudaMemcpy(h, b->data, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++)
        if (h[i] != 0x5a) return false;
    return true;
}
#endif

/* A 2048² page's last full prefill chunk (1024 rows after 3072 in the cache) on backend g:
 * with no spare, a spare below the backend's own room (4 MiB) and one the size of the chunk's
 * gu and act (text.c's mlp, 22 MB), each against the CPU; the small spare left alone and no bit
 * changed by it; whether the big one was taken (room) or left alone. */
static void spare_chunk(const dt_case *c, hyocr_backend *g, bool room)
{
#if HYOCR_HAVE_CUDA
    const int Hq = 16, Hkv = 8, D = 128, P = 3072, N = 1024;
    kv_fix f;
    kv_init(&f, g, 16, (P + N) / 16 + 8, Hq, Hkv, D);
    g_autofree int32_t *bt = kv_table(&f, P + N);
    hyocr_seq_view sv = { bt, 0, P };
    paged_step(c, &f, &sv, 1, "paged spare: the prefix");
    sv = (hyocr_seq_view){ bt, P, N };
    size_t nq = (size_t)N * (Hq + 2 * Hkv) * D, no = (size_t)N * Hq * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    hyocr_buf *o_none = mk(g, HYOCR_BUF_ACT, NULL, no), *o_small = mk(g, HYOCR_BUF_ACT, NULL, no);
    hyocr_buf *big = spare_new(g, (size_t)N * 3 * 3584 * 2), *small = spare_new(g, (size_t)4 << 20);
    const float scale = (float)pow(D, -0.5);
    OK(cpu()->ops->attention_paged(cpu(), po.c, pq.c, f.k.c, f.v.c, f.bs, &sv, 1, Hq, Hkv, D, scale, NULL, E));
    OK(g->ops->attention_paged(g, o_none, pq.g, f.k.g, f.v.g, f.bs, &sv, 1, Hq, Hkv, D, scale, NULL, E));
    OK(g->ops->attention_paged(g, o_small, pq.g, f.k.g, f.v.g, f.bs, &sv, 1, Hq, Hkv, D, scale, small, E));
    OK(g->ops->attention_paged(g, po.g, pq.g, f.k.g, f.v.g, f.bs, &sv, 1, Hq, Hkv, D, scale, big, E));
    cmp2(g, "paged spare: the chunk, the big spare", &po, 0, no, c->tol);
    g_autofree float *a = get(g, o_none, 0, no), *b = get(g, o_small, 0, no), *ref = get(cpu(), po.c, 0, no);
    expect_close("paged spare: the chunk, no spare", a, ref, no, c->tol);
    g_assert_cmpmem(b, no * sizeof(float), a, no * sizeof(float));
    g_assert_true(spare_untouched(small));
    g_assert_cmpint(spare_untouched(big), ==, !room);
    g->ops->buf_free(g, big);
    g->ops->buf_free(g, small);
    g->ops->buf_free(g, o_none);
    g->ops->buf_free(g, o_small);
    free2(g, &pq);
    free2(g, &po);
    kv_clear(&f);
#else
    (void)c, (void)g, (void)room;
#endif
}

/* By default (HYOCR_PREFILL_SPARE unset) k_prefill takes the big spare's room for the split
 * prefill's partials — the chunk's 16 items split where its own 6 MiB fits no split — and the
 * rows still match the CPU's; with the switch off (=0) it leaves any spare alone. k_prefill_tma,
 * the default where the code has wgmma (the backend's own probe), splits no call of half a wave
 * or more: the 1024-row chunk (128 CTAs) leaves the spare alone there. */
static void test_paged_spare(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *plain = cuda(c);
    if (!plain) return;
#if HYOCR_HAVE_CUDA
    int wg = 0;
    CK(hk_kernels_probe(NULL, &wg));
    spare_chunk(c, plain, wg == 0);
#endif
    hyocr_backend *k = cuda_tuned(c, (hyocr_tuning){ .prefill_tma = HYOCR_SWITCH_OFF });
    spare_chunk(c, k, true);
    hyocr_backend_free(k);
    hyocr_backend *off = cuda_tuned(c, (hyocr_tuning){ .prefill_spare = HYOCR_SWITCH_OFF,
                                                       .prefill_tma = HYOCR_SWITCH_OFF });
    spare_chunk(c, off, false);
    hyocr_backend_free(off);
}

static void run_paged(const dt_case *c, hyocr_backend *g, int Hq, int Hkv, int prefill, int steps)
{
    kv_fix f;
    kv_init(&f, g, 16, 160, Hq, Hkv, 128);
    /* one long sequence over non-contiguous blocks: prefill, then decode steps */
    g_autofree int32_t *bt = kv_table(&f, prefill + steps);
    hyocr_seq_view sv = { bt, 0, prefill };
    g_autofree char *what = g_strdup_printf("paged prefill %d (Hq %d, Hkv %d)", prefill, Hq, Hkv);
    paged_step(c, &f, &sv, 1, what);
    for (int s = 0; s < steps; s++) {
        sv = (hyocr_seq_view){ bt, prefill + s, 1 };
        g_autofree char *w = g_strdup_printf("paged decode at %d (Hq %d, Hkv %d)", prefill + s, Hq, Hkv);
        paged_step(c, &f, &sv, 1, w);
    }
    /* the written cache slots hold the same values on both sides */
    for (int t = 0; t < prefill + steps; t += 13) {
        size_t w = (size_t)Hkv * 128, off = ((size_t)bt[t / f.bs] * f.bs + t % f.bs) * w;
        cmp2(g, "k cache slot", &f.k, off, w, -1);
        cmp2(g, "v cache slot", &f.v, off, w, -1);
    }

    /* a mixed batch: fresh prefill, chunked prefill, decode */
    g_autofree int32_t *b1 = kv_table(&f, 40), *b2 = kv_table(&f, 300), *b3 = kv_table(&f, 501);
    hyocr_seq_view warm[2] = { { b2, 0, 200 }, { b3, 0, 500 } };
    paged_step(c, &f, warm, 2, "paged warm-up batch");
    hyocr_seq_view mixed[3] = { { b1, 0, 37 }, { b2, 200, 100 }, { b3, 500, 1 } };
    paged_step(c, &f, mixed, 3, "paged mixed batch");
    kv_clear(&f);
}

static void test_paged(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    run_paged(c, g, 16, 8, 1000, 20);
    run_paged(c, g, 16, 8, 20, 3);      /* short context: one split writes the output itself */
    run_paged(c, g, 4, 4, 130, 3);    /* no GQA */
    run_paged(c, g, 6, 2, 150, 3);    /* group of 3: rows do not tile evenly */
    run_paged(c, g, 8, 2, 99, 3);     /* group of 4 */
}

#if HYOCR_HAVE_CUDA
/* n outputs of type c's compute type at device address d, as floats (a kernel called directly). */
static float *kernel_out(const dt_case *c, const void *d, size_t n)
{
    g_autofree uint16_t *raw = g_new(uint16_t, n);
    float *got = g_new(float, n);
    CK(cudaMemcpy(raw, d, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        uint32_t u = raw[i];
        if (c->dtype == HYOCR_COMPUTE_BF16) {
            u <<= 16;
            memcpy(&got[i], &u, 4);
        } else {
            /* fp16 → fp32 by way of the exponent bias (finite values only; NaN fails the checks) */
            uint32_t sgn = (u & 0x8000u) << 16, ex = (u >> 10) & 0x1f, man = u & 0x3ff;
            float v = ex == 0 ? ldexpf((float)man, -24) : ex == 31 ? NAN : ldexpf((float)(man | 0x400), (int)ex - 25);
            got[i] = sgn ? -v : v;
        }
    }
    return got;
}

/* The decode kernel called directly with 64-key splits over the cache the
 * backend test just filled: 257 partials, so the electing CTA merges them in
 * several chunks (a path the backend's split policy only takes past 128K
 * tokens). The query is a fresh row whose k/v the CPU backend writes at n_past. */
static void forced_split_check(const dt_case *c, kv_fix *f, const int32_t *bt, int n_past)
{
    hyocr_backend *g = f->g;
    const int Hq = f->Hq, Hkv = f->Hkv, D = f->D, ctx = n_past + 1, len = 64;
    size_t nq = (size_t)(Hq + 2 * Hkv) * D, no = (size_t)Hq * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    hyocr_seq_view sv = { bt, n_past, 1 };
    float scale = (float)pow(D, -0.5);
    /* both backends write the row's k/v; the backend's own output is not used here */
    BOTH(g, cpu()->ops->attention_paged(cpu(), po.c, pq.c, f->k.c, f->v.c, f->bs, &sv, 1, Hq, Hkv, D, scale, NULL, E),
         g->ops->attention_paged(g, po.g, pq.g, f->k.g, f->v.g, f->bs, &sv, 1, Hq, Hkv, D, scale, NULL, E));
    OK(g->ops->sync(g, E));

    int n_parts = (ctx + len - 1) / len, nb = (ctx + f->bs - 1) / f->bs;
    hk_seq hs = { 0, n_past, 1, 0 };
    g_autofree hk_split *sp = g_new(hk_split, n_parts);
    g_assert_cmpint(hk_decode_splits(sp, 0, 0, ctx, len, 0), ==, n_parts);
    void *d_seq, *d_bt, *d_sp, *d_ctr, *d_part, *d_out;
    CK(cudaMalloc(&d_seq, sizeof hs));
    CK(cudaMalloc(&d_bt, (size_t)nb * 4));
    CK(cudaMalloc(&d_sp, (size_t)n_parts * sizeof(hk_split)));
    CK(cudaMalloc(&d_ctr, (size_t)Hq * 4));
    CK(cudaMalloc(&d_part, (size_t)n_parts * Hq * (D + 2) * 4));
    CK(cudaMalloc(&d_out, no * 2));
    CK(cudaMemcpy(d_seq, &hs, sizeof hs, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_bt, bt, (size_t)nb * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_sp, sp, (size_t)n_parts * sizeof(hk_split), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_ctr, 0, (size_t)Hq * 4));
    hk_paged_args a = {
        .t = case_kt(c), .qkv = pq.g->data, .out = d_out,
        .k_cache = f->k.g->data, .v_cache = f->v.g->data, .block_size = f->bs, .Hq = Hq, .Hkv = Hkv, .D = D,
        .scale = scale, .seqs = d_seq, .n_seqs = 1, .block_tables = d_bt, .splits = d_sp, .n_splits = n_parts,
        .n_dec_rows = 1, .counters = d_ctr, .part_acc = d_part, .part_ml = (float *)d_part + (size_t)n_parts * Hq * D,
        .split_max = len,
    };
    for (int rep = 0; rep < 2; rep++) {   /* twice: the counters must come back zeroed */
        CK(cudaMemset(d_out, 0xff, no * 2));
        CK(hk_attention_decode(NULL, &a));
        CK(cudaDeviceSynchronize());
        g_autofree float *got = kernel_out(c, d_out, no);
        g_autofree float *ref = get(cpu(), po.c, 0, no);
        g_autofree char *what = g_strdup_printf("decode kernel, %d splits of %d keys (run %d)", n_parts, len, rep + 1);
        expect_close(what, got, ref, no, c->tol);
    }
    cudaFree(d_seq);
    cudaFree(d_bt);
    cudaFree(d_sp);
    cudaFree(d_ctr);
    cudaFree(d_part);
    cudaFree(d_out);
    free2(g, &pq);
    free2(g, &po);
}
#endif

#if HYOCR_HAVE_CUDA
/* The split-KV mode of prefill kernel kind (a: its unsplit call, tiles heaviest first) at
 * split_len key tiles a split, against the CPU (ref) and the unsplit kernel (uns). Both keep
 * fp32 partials; they differ by P's rounding to the compute type against another running max
 * and by the order of the sums, so split and unsplit agree within 4 output ulps of the largest
 * |unsplit output| (the bound bench/prefill_bench.cu holds them to; the measured max|d| is
 * printed). */
static void prefill_split_check(const dt_case *c, const hk_paged_args *a0, hk_prefill_kind kind, int n_tiles,
                                int split_len, const hyocr_seq_view *sv, const float *ref, const float *uns,
                                const char *what0)
{
    const int G = a0->Hq / a0->Hkv, tr = hk_prefill_tile_rows(kind);
    const size_t no = (size_t)sv->n_new * a0->Hq * a0->D;
    GArray *sp = g_array_new(FALSE, FALSE, sizeof(int4)), *mg = g_array_new(FALSE, FALSE, sizeof(int4));
    for (int t = n_tiles - 1; t >= 0; t--) {
        int kt = hk_prefill_key_tiles(sv->n_past, sv->n_new, G, t, tr);
        guint at = sp->len;
        g_array_set_size(sp, at + (guint)((kt + split_len - 1) / split_len));
        int4 m;
        hk_prefill_splits(&g_array_index(sp, int4, at), &m, 0, t, kt, split_len, (int)at);
        g_array_append_val(mg, m);
    }
    void *d_sp, *d_mg, *d_part;
    CK(cudaMalloc(&d_sp, sp->len * sizeof(int4)));
    CK(cudaMalloc(&d_mg, mg->len * sizeof(int4)));
    CK(cudaMalloc(&d_part, hk_prefill_part_floats(kind, (int)sp->len, a0->Hkv) * sizeof(float)));
    CK(cudaMemcpy(d_sp, sp->data, sp->len * sizeof(int4), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_mg, mg->data, mg->len * sizeof(int4), cudaMemcpyHostToDevice));
    hk_paged_args a = *a0;
    a.pf_splits = d_sp;
    a.n_pf_splits = (int)sp->len;
    a.pf_merges = d_mg;
    a.n_pf_merges = (int)mg->len;
    a.pf_part = d_part;
    CK(cudaMemset(a.out, 0xff, no * 2));
    CK(hk_attention_prefill(NULL, &a));
    CK(cudaDeviceSynchronize());
    g_autofree float *got = kernel_out(c, a.out, no);
    g_autofree char *what = g_strdup_printf("%s, split by %d key tiles (%u splits of %u items)", what0,
                                            split_len, sp->len, mg->len);
    expect_close(what, got, ref, no, c->tol);
    double mx = 0, big = 0;
    for (size_t i = 0; i < no; i++) {
        mx = fmax(mx, fabs((double)got[i] - uns[i]));   /* a NaN (a row left unwritten) fails below */
        big = fmax(big, fabs((double)uns[i]));
        if (isnan(got[i])) mx = INFINITY;
    }
    double bound = 4.0 * (c->dtype == HYOCR_COMPUTE_BF16 ? 1.0 / 128 : 1.0 / 1024) * big;
    g_test_message("%s: max|split - unsplit| %.3g (bound %.3g)", what, mx, bound);
    printf("# %s: max|split - unsplit| %.3g (bound %.3g)\n", what, mx, bound);
    g_assert_cmpfloat(mx, <=, bound);
    g_array_free(sp, TRUE);
    g_array_free(mg, TRUE);
    cudaFree(d_sp);
    cudaFree(d_mg);
    cudaFree(d_part);
}

/* Every prefill kernel the card can run (hk_prefill_kind), called directly on the call the
 * backend just made (its new k/v are in the cache; qkv is the call's), against the CPU's out. */
static void prefill_kernels_check(const dt_case *c, kv_fix *f, const hyocr_seq_view *sv, const pair *pq,
                                  const pair *po)
{
    const int Hq = f->Hq, Hkv = f->Hkv, D = f->D, nb = (sv->n_past + sv->n_new + f->bs - 1) / f->bs;
    const size_t no = (size_t)sv->n_new * Hq * D;
    int dev = 0;
    CK(cudaGetDevice(&dev));
    /* the shared memory the pick took is the most any variant it did not take needs, or less */
    hk_prefill_kind pick = hk_prefill_pick(dev);
    int wg = 0;   /* k_prefill_tma where the code has wgmma (it falls back to W4 MW2 where its boxes do not fit) */
    CK(hk_kernels_probe(NULL, &wg));
    hk_prefill_kind kinds[] = { HK_PREFILL_TEMPLATE, HK_PREFILL_W4M2, HK_PREFILL_W4M1, HK_PREFILL_TMA };
    bool fits[] = { true, pick == HK_PREFILL_W4M2, pick != HK_PREFILL_TEMPLATE, wg != 0 };
    g_autofree float *ref = get(cpu(), po->c, 0, no);
    hk_seq hs = { 0, sv->n_past, sv->n_new, 0 };
    void *d_seq, *d_bt, *d_tiles, *d_out;
    CK(cudaMalloc(&d_seq, sizeof hs));
    CK(cudaMalloc(&d_bt, (size_t)nb * 4));
    CK(cudaMalloc(&d_tiles, (size_t)sv->n_new * (Hq / Hkv) * 8));   /* tiles of 64 rows or more */
    CK(cudaMalloc(&d_out, no * 2));
    CK(cudaMemcpy(d_seq, &hs, sizeof hs, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_bt, sv->block_table, (size_t)nb * 4, cudaMemcpyHostToDevice));
    float *uns[G_N_ELEMENTS(kinds)] = { 0 };   /* each variant's unsplit output */
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        g_autofree char *what = g_strdup_printf("prefill kernel %d, n_past %d, %d rows (Hq %d, Hkv %d, blocks of %d)",
                                                (int)kinds[k], sv->n_past, sv->n_new, Hq, Hkv, f->bs);
        if (!fits[k]) {
            g_test_message("%s: not run, the card's shared memory is too small for it", what);
            continue;
        }
        int tr = hk_prefill_tile_rows(kinds[k]), n_tiles = (sv->n_new * (Hq / Hkv) + tr - 1) / tr;
        g_autofree int32_t *tiles = g_new(int32_t, 2 * n_tiles);
        for (int t = 0; t < n_tiles; t++) {   /* heaviest first, as the backend lists them */
            tiles[2 * t] = 0;
            tiles[2 * t + 1] = n_tiles - 1 - t;
        }
        CK(cudaMemcpy(d_tiles, tiles, (size_t)n_tiles * 8, cudaMemcpyHostToDevice));
        hk_paged_args a = {
            .t = case_kt(c), .qkv = pq->g->data, .out = d_out, .k_cache = f->k.g->data, .v_cache = f->v.g->data,
            .kv_slots = (int64_t)f->n_blocks * f->bs, .block_size = f->bs, .Hq = Hq, .Hkv = Hkv, .D = D, .scale = (float)pow(D, -0.5), .seqs = d_seq,
            .n_seqs = 1, .block_tables = d_bt, .total_rows = sv->n_new, .tiles = d_tiles, .n_tiles = n_tiles,
            .prefill = kinds[k],
        };
        CK(cudaMemset(d_out, 0xff, no * 2));   /* NaN: a row left unwritten fails */
        CK(hk_attention_prefill(NULL, &a));
        CK(cudaDeviceSynchronize());
        uns[k] = kernel_out(c, d_out, no);
        expect_close(what, uns[k], ref, no, c->tol);
        if (kinds[k] == HK_PREFILL_TEMPLATE) continue;
        /* split-KV: one key tile a split (every item's last split its diagonal tile alone, where
         * a warp may see none of its keys), 3 (an odd first tile: the other stage first), and
         * HYOCR_PREFILL_SPLIT's default rule on this card (where the call is short of CTAs) */
        int sms = 0;
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        int64_t key_tiles = 0;
        int max_tiles = 0;
        for (int t = 0; t < n_tiles; t++) {
            key_tiles += hk_prefill_key_tiles(sv->n_past, sv->n_new, Hq / Hkv, t, tr);
            max_tiles = MAX(max_tiles, hk_prefill_key_tiles(sv->n_past, sv->n_new, Hq / Hkv, t, tr));
        }
        int lens[] = { 1, 3, hk_prefill_split_len(kinds[k], n_tiles, key_tiles, max_tiles, Hkv, sms, HK_PF_SPLIT_PER_SM,
                                                  HK_PF_SPLIT_PART_MAX) };
        for (size_t li = 0; li < G_N_ELEMENTS(lens); li++)
            if (lens[li]) prefill_split_check(c, &a, kinds[k], n_tiles, lens[li], sv, ref, uns[k], what);
    }
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) g_free(uns[k]);
    cudaFree(d_seq);
    cudaFree(d_bt);
    cudaFree(d_tiles);
    cudaFree(d_out);
}
#endif

#if HYOCR_HAVE_CUDA
/* The one-wave split of a bound step of several rows (host only): 3 staged CTAs an SM on 132
 * SMs (396) over the middle of a 1024² page's bound (1536 keys), 8 heads' columns a row. */
static void test_decode_split_wave(void)
{
    const int sms = 132, per_sm = 3, Hq = 16, Hkv = 8;
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 16, Hq, Hkv, 2), ==, 512);   /* 3 a row: 384 CTAs */
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 14, Hq, Hkv, 2), ==, 512);   /* 3: 336 */
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 12, Hq, Hkv, 2), ==, 384);   /* 4: 384 */
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 10, Hq, Hkv, 2), ==, 384);   /* 4: 320 */
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 9, Hq, Hkv, 2), ==, 320);    /* 5: 360 */
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 8, Hq, Hkv, 2), ==, 256);    /* 6: 384 */
    for (int rows = 2; rows <= 16; rows++)
        for (int ctx = 64; ctx <= 4096; ctx += 64) {
            int len = hk_decode_split_len_wave(sms, per_sm, ctx, rows, Hq, Hkv, 2);
            if (!len) continue;
            g_assert_cmpint(len % HK_SPLIT_MIN, ==, 0);
            g_assert_cmpint(len, <=, HK_SPLIT_WAVE_MAX);
            g_assert_cmpint((int64_t)rows * 8 * ((ctx + len - 1) / len), <=, (int64_t)sms * per_sm);   /* one wave */
        }
    /* a 2048² page's stretch (4608) at 16 rows would want 1536-key splits: left to the old rule */
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 4608, 16, Hq, Hkv, 2), ==, 0);
    g_assert_cmpint(hk_decode_split_len_wave(sms, per_sm, 1536, 64, Hq, Hkv, 2), ==, 0);     /* not one split a row */
    g_assert_cmpint(hk_decode_split_len_wave(sms, 0, 1536, 16, Hq, Hkv, 2), ==, 0);          /* occupancy unknown */
    /* four rounds deep (three in flight), one CTA an SM: a row's whole 1024² bound in one split,
     * up to three times the two-round cap; 2048²'s at 16 rows still too long */
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 1536, 16, Hq, Hkv, 4), ==, 1536);
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 1536, 8, Hq, Hkv, 4), ==, 768);
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 4608, 16, Hq, Hkv, 4), ==, 0);
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 1536, 16, Hq, Hkv, 2), ==, 0);
    /* one row three rounds deep at most one CTA an SM (backend-cuda.c's one_row_len, what
     * bound_stages gives a one-row bound step): 16 splits of 8 heads' columns; a 1024² page's
     * bound 128 keys (12 splits at its middle), 2048²'s 320 (15), 4096²'s past the three-round
     * cap (1056 > 1024), not four's (1088: bound_stages' four rounds there) */
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 1536, 1, Hq, Hkv, 3), ==, 128);
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 4608, 1, Hq, Hkv, 3), ==, 320);
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 16896, 1, Hq, Hkv, 3), ==, 0);
    g_assert_cmpint(hk_decode_split_len_wave(sms, 1, 16896, 1, Hq, Hkv, 4), ==, 1088);
    /* …so a one-row bound step's depth (bound_stages): three rounds to 2048²'s bound, four at
     * 4096²'s, none past four rounds' cap (16 splits of 1536 keys), nor without SMs */
    g_assert_cmpint(hk_decode_one_row_stages(sms, 1536, Hq, Hkv), ==, 3);
    g_assert_cmpint(hk_decode_one_row_stages(sms, 4608, Hq, Hkv), ==, 3);
    g_assert_cmpint(hk_decode_one_row_stages(sms, 16384, Hq, Hkv), ==, 3);
    g_assert_cmpint(hk_decode_one_row_stages(sms, 16896, Hq, Hkv), ==, 4);
    g_assert_cmpint(hk_decode_one_row_stages(sms, 24576, Hq, Hkv), ==, 4);
    g_assert_cmpint(hk_decode_one_row_stages(sms, 24577, Hq, Hkv), ==, 0);
    g_assert_cmpint(hk_decode_one_row_stages(0, 1536, Hq, Hkv), ==, 0);
}

/* The split-KV prefill's plan (host only, no device needed): the rule on the 2048² page's
 * calls on an H200's 132 SMs, and every item's splits covering its key tiles exactly,
 * balanced, with its merge entry. */
static void test_prefill_split_plan(void)
{
    const int sms = 132, per_sm = HK_PF_SPLIT_PER_SM, tr = hk_prefill_tile_rows(HK_PREFILL_W4M2);
    const hk_prefill_kind W = HK_PREFILL_W4M2;
    const size_t cap = HK_PF_SPLIT_PART_MAX, none = SIZE_MAX / 2;
    /* 4191 rows in one call: 66 items (8382 flattened rows in W4 MW2's 128) × 8 KV heads = 528
     * CTAs, enough: unsplit */
    g_assert_cmpint(hk_prefill_split_len(W, 66, 4000, 66, 8, sms, per_sm, none), ==, 0);
    g_assert_cmpint(hk_prefill_split_len(W, 16, 904, 64, 8, sms, 0, none), ==, 0);   /* the switch off */
    g_assert_cmpint(hk_prefill_split_len(HK_PREFILL_TEMPLATE, 16, 904, 64, 8, sms, per_sm, none), ==, 0);
    /* 1024 rows at n_past 3072 (G 2): item t sees 3072 + 64·t + 64 keys, 49 + t tiles; 904 in
     * all × 8 heads over 4 × 132 CTAs: 14 tiles a split. Within 32 MiB of partials (63 item
     * splits of 532 480 bytes): 904 tiles over 63 − 16 → 20 */
    int64_t kt = 0;
    for (int t = 0; t < 16; t++) {
        g_assert_cmpint(hk_prefill_key_tiles(3072, 1024, 2, t, tr), ==, 49 + t);
        kt += hk_prefill_key_tiles(3072, 1024, 2, t, tr);
    }
    g_assert_cmpint(hk_prefill_part_floats(W, 1, 8) * sizeof(float), ==, 532480);
    g_assert_cmpint(hk_prefill_split_len(W, 16, kt, 64, 8, sms, per_sm, none), ==, 14);
    g_assert_cmpint(hk_prefill_split_len(W, 16, kt, 64, 8, sms, per_sm, (size_t)32 << 20), ==, 20);
    g_assert_cmpint(hk_prefill_split_len(W, 16, kt, 64, 8, sms, per_sm, (size_t)8 << 20), ==, 0);   /* 15 < 16 items */
    /* the short last chunk, 95 rows at 4096: 2 items of 65 and 66 tiles, 16 CTAs; at least
     * HK_PF_SPLIT_MIN_TILES a split (34 splits, 18 MB) within 32 MiB; within 8 MiB: 131 tiles
     * over 15 − 2 → 11; within the engine's 6 MiB: over 11 − 2 → 15 (10 splits, 80 CTAs) */
    g_assert_cmpint(hk_prefill_key_tiles(4096, 95, 2, 0, tr), ==, 65);
    g_assert_cmpint(hk_prefill_key_tiles(4096, 95, 2, 1, tr), ==, 66);
    g_assert_cmpint(hk_prefill_split_len(W, 2, 131, 66, 8, sms, per_sm, (size_t)32 << 20), ==, HK_PF_SPLIT_MIN_TILES);
    g_assert_cmpint(hk_prefill_split_len(W, 2, 131, 66, 8, sms, per_sm, (size_t)8 << 20), ==, 11);
    g_assert_cmpint(cap, ==, (size_t)6 << 20);
    g_assert_cmpint(hk_prefill_split_len(W, 2, 131, 66, 8, sms, per_sm, cap), ==, 15);
    /* no item longer than a split: no split at all */
    g_assert_cmpint(hk_prefill_split_len(W, 2, 6, 3, 8, sms, per_sm, cap), ==, 0);
    /* k_prefill_tma: W4 MW2's items and partials; one CTA an SM, so only calls of under half a
     * wave split: the 1024-row chunk (128 CTAs) stays whole even with room for 32 MiB of
     * partials, the short last chunk (16 CTAs) splits as W4 MW2's does */
    const hk_prefill_kind P = HK_PREFILL_TMA;
    g_assert_cmpint(hk_prefill_tile_rows(P), ==, tr);
    g_assert_cmpint(hk_prefill_part_floats(P, 3, 8), ==, hk_prefill_part_floats(W, 3, 8));
    g_assert_cmpint(hk_prefill_for_call(P, 1, 8, sms), ==, P);
    g_assert_cmpint(hk_prefill_split_len(P, 16, kt, 64, 8, sms, per_sm, (size_t)32 << 20), ==, 0);
    g_assert_cmpint(hk_prefill_split_len(P, 9, 452, 64, 8, sms, per_sm, none), ==, 0);   /* 72 CTAs: 66 and more */
    g_assert_cmpint(hk_prefill_split_len(P, 8, 452, 64, 8, sms, per_sm, none), ==, 7);   /* 64: 3616 over 528 */
    g_assert_cmpint(hk_prefill_split_len(P, 2, 131, 66, 8, sms, per_sm, cap), ==, 15);
    g_assert_cmpint(hk_prefill_key_tiles(400, 117, 3, 5, 64), ==, 9);   /* 351 rows of a group of 3: 517 keys */
    for (int tiles = 1; tiles <= 70; tiles++)
        for (int len = 1; len <= 9; len++) {
            int4 sp[70], mg = { -1, -1, -1, -1 };
            int n = hk_prefill_splits(sp, &mg, 3, 5, tiles, len, 11);
            g_assert_cmpint(n, ==, (tiles + len - 1) / len);
            int lo = INT_MAX, hi = 0;
            for (int i = 0; i < n; i++) {
                g_assert_cmpint(sp[i].x, ==, 3);
                g_assert_cmpint(sp[i].y, ==, 5);
                g_assert_cmpint(sp[i].z, ==, i ? sp[i - 1].w : 0);
                lo = MIN(lo, sp[i].w - sp[i].z);
                hi = MAX(hi, sp[i].w - sp[i].z);
            }
            g_assert_cmpint(sp[n - 1].w, ==, tiles);
            g_assert_cmpint(lo, >=, 1);
            g_assert_cmpint(hi, <=, MIN(len, lo + 1));
            g_assert_true(mg.x == 3 && mg.y == 5 && mg.z == 11 && mg.w == n);
        }
}
#endif

/* A prompt of `total` tokens in calls of `chunk` rows (the engine's prefill chunks: n_past > 0
 * from the second call on, the last call short), each through the backend against the CPU;
 * the last also by every prefill kernel directly. */
static void run_chunks(const dt_case *c, hyocr_backend *g, int Hq, int Hkv, int bs, int total, int chunk)
{
    kv_fix f;
    kv_init(&f, g, bs, (total + bs - 1) / bs, Hq, Hkv, 128);
#if HYOCR_HAVE_CUDA
    /* NaN in every GPU cache slot until a call writes it: the slots past a call's keys (the rest
     * of its last block) must weigh nothing, whatever they hold (k_prefill_tma copies whole
     * blocks; the others read zeros there) */
    CK(cudaMemset(f.k.g->data, 0xff, f.k.g->n * 2));
    CK(cudaMemset(f.v.g->data, 0xff, f.v.g->n * 2));
#endif
    g_autofree int32_t *bt = kv_table(&f, total);
    for (int n_past = 0; n_past < total; n_past += chunk) {
        hyocr_seq_view sv = { bt, n_past, MIN(chunk, total - n_past) };
        g_autofree char *what = g_strdup_printf("paged prefill chunk at %d, %d rows (Hq %d, Hkv %d, blocks of %d)",
                                                n_past, sv.n_new, Hq, Hkv, bs);
        if (n_past + chunk < total) {
            paged_step(c, &f, &sv, 1, what);
            continue;
        }
        size_t nq = (size_t)sv.n_new * (Hq + 2 * Hkv) * 128, no = (size_t)sv.n_new * Hq * 128;
        g_autofree float *qkv = rndq(g, nq, -2, 2);
        pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
        float scale = (float)pow(128, -0.5);
        BOTH(g, cpu()->ops->attention_paged(cpu(), po.c, pq.c, f.k.c, f.v.c, bs, &sv, 1, Hq, Hkv, 128, scale, NULL, E),
             g->ops->attention_paged(g, po.g, pq.g, f.k.g, f.v.g, bs, &sv, 1, Hq, Hkv, 128, scale, NULL, E));
        cmp2(g, what, &po, 0, no, c->tol);
#if HYOCR_HAVE_CUDA
        OK(g->ops->sync(g, E));
        prefill_kernels_check(c, &f, &sv, &pq, &po);
#endif
        free2(g, &pq);
        free2(g, &po);
    }
    kv_clear(&f);
}

/* The prefill's paged attention over long prompts: the text model's heads in 1024-row chunks
 * (a second chunk of 131 rows at n_past 1024: a partial tile for 64- and 128-row kernels
 * alike, 19 key tiles); blocks of 7 tokens (a key tile crosses block edges anywhere) with a
 * group of 3 (positions split across tiles); no GQA with blocks of 32; and a backend with
 * HYOCR_PREFILL_TEMPLATE's switch on. */
static void test_paged_prefill(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    run_chunks(c, g, 16, 8, 16, 1155, 1024);
    run_chunks(c, g, 6, 2, 7, 517, 200);
    run_chunks(c, g, 4, 4, 32, 300, 129);
    /* HYOCR_PREFILL_TEMPLATE's backend: its tiles of 64 rows for the template */
    hyocr_backend *t = cuda_tuned(c, (hyocr_tuning){ .prefill_template = true });
    run_chunks(c, t, 16, 8, 16, 300, 129);
    hyocr_backend_free(t);
    /* HYOCR_PREFILL_SPLIT's backend: every chunk here is short of CTAs, so split (a short last
     * chunk of 131 rows too); a group of 3 with blocks of 7 */
    t = cuda_tuned(c, (hyocr_tuning){ .prefill_split = 1 });
    run_chunks(c, t, 16, 8, 16, 1155, 1024);
    run_chunks(c, t, 6, 2, 7, 517, 200);
    hyocr_backend_free(t);
    /* the backends above take k_prefill_tma on Hopper (W4 MW2 where the group of 3 does not fit
     * its boxes); HYOCR_PREFILL_TMA=0's takes k_prefill */
    t = cuda_tuned(c, (hyocr_tuning){ .prefill_tma = HYOCR_SWITCH_OFF });
    run_chunks(c, t, 16, 8, 16, 1155, 1024);
    run_chunks(c, t, 6, 2, 7, 517, 200);
    run_chunks(c, t, 4, 4, 32, 300, 129);
    hyocr_backend_free(t);
}

static void test_paged_long_decode(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const int ctx = 16384, Hq = 16, Hkv = 8, D = 128;
    kv_fix f;
    kv_init(&f, g, 16, ctx / 16 + 1, Hq, Hkv, D);
    /* a prefix written straight into the caches (same values on both sides) */
    size_t n = f.k.n;
    for (int which = 0; which < 2; which++) {
        pair *p = which ? &f.v : &f.k;
        g_autofree float *x = rndq(g, n, -2, 2);
        OK(cpu()->ops->upload_f32(cpu(), p->c, 0, x, n, E));
        OK(g->ops->upload_f32(g, p->g, 0, x, n, E));
    }
    g_autofree int32_t *bt = kv_table(&f, ctx + 1);
    for (int step = 0; step < 2; step++) {
        hyocr_seq_view sv = { bt, ctx - 1 + step, 1 };
        g_autofree char *what = g_strdup_printf("paged decode, %d-token prefix", ctx - 1 + step);
        paged_step(c, &f, &sv, 1, what);
    }
#if HYOCR_HAVE_CUDA
    forced_split_check(c, &f, bt, ctx);
#endif
    kv_clear(&f);
}

#if HYOCR_HAVE_CUDA
/* Device copy of n bytes (freed by the caller). */
static void *dev_copy(const void *h, size_t n)
{
    void *d = NULL;
    CK(cudaMalloc(&d, n ? n : 1));
    if (n) CK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    return d;
}

/* One direct decode launch of the rows (hs, their tables in d_bt) with decode_stages
 * stages (mma: on the tensor cores): listed splits of len keys, or (dev) splits derived on
 * the device, every context within bound; returns the outputs as floats. */
static float *decode_direct(const dt_case *c, kv_fix *f, const pair *pq, const hk_seq *hs, int rows, void *d_bt,
                            int len, bool dev, int bound, int stages, int mma)
{
    const int Hq = f->Hq, Hkv = f->Hkv, D = f->D;
    const size_t no = (size_t)rows * Hq * D;
    GArray *sp = g_array_new(FALSE, FALSE, sizeof(hk_split));
    int parts = 0, max_splits = (bound + len - 1) / len;
    for (int r = 0; r < rows && !dev; r++) {
        int ctx = hs[r].n_past + 1, n = (ctx + len - 1) / len;
        g_array_set_size(sp, sp->len + (guint)n);
        parts += hk_decode_splits(&g_array_index(sp, hk_split, sp->len - n), r, r, ctx, len, parts);
    }
    if (dev) parts = rows * max_splits;
    size_t n_ctr = (size_t)rows * (Hq / hk_decode_heads_per_cta(Hq, Hkv));
    void *d_seq = dev_copy(hs, (size_t)rows * sizeof(hk_seq)), *d_sp = dev_copy(sp->data, sp->len * sizeof(hk_split));
    void *d_ctr, *d_part, *d_out;
    CK(cudaMalloc(&d_ctr, n_ctr * 4));
    CK(cudaMemset(d_ctr, 0, n_ctr * 4));
    CK(cudaMalloc(&d_part, (size_t)parts * Hq * (D + 2) * 4));
    CK(cudaMalloc(&d_out, no * 2));
    CK(cudaMemset(d_out, 0xff, no * 2));
    hk_paged_args a = {
        .t = case_kt(c), .qkv = pq->g->data, .out = d_out, .k_cache = f->k.g->data, .v_cache = f->v.g->data,
        .block_size = f->bs, .Hq = Hq, .Hkv = Hkv, .D = D, .scale = (float)pow(D, -0.5), .seqs = d_seq,
        .n_seqs = rows, .block_tables = d_bt, .total_rows = rows, .splits = dev ? NULL : d_sp,
        .n_splits = parts, .n_dec_rows = rows, .counters = d_ctr, .part_acc = d_part,
        .part_ml = (float *)d_part + (size_t)parts * Hq * D, .split_max = len,
        .dev_split_len = dev ? len : 0, .dev_max_splits = dev ? max_splits : 0,
        .decode_kv_write = 1,   /* rewrites the new k/v the backends stored: the same values */
        .decode_stages = stages, .decode_mma = mma,
    };
    CK(hk_attention_decode(NULL, &a));
    CK(cudaDeviceSynchronize());
    float *got = kernel_out(c, d_out, no);
    g_autofree unsigned *ctr = g_new(unsigned, n_ctr);
    CK(cudaMemcpy(ctr, d_ctr, n_ctr * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n_ctr; i++) g_assert_cmpuint(ctr[i], ==, 0);   /* left for the next call */
    cudaFree(d_seq);
    cudaFree(d_sp);
    cudaFree(d_ctr);
    cudaFree(d_part);
    cudaFree(d_out);
    g_array_free(sp, TRUE);
    return got;
}
#endif

/* The staged decode kernel (hk_paged_args.decode_stages 2..4) against k_decode (bit for bit:
 * the same splits, rounds and sums) and the CPU, and its tensor-core variant (decode_mma)
 * against the CPU and k_decode within the tolerance: four decode rows of ragged contexts (one
 * 4191-token prefix, a 1087, one inside a split, one of a single key: the new token in a
 * round's middle, in a later round and in the one issued before the grid wait) over scattered
 * blocks, with listed splits of 128 and 64 keys and with splits derived on the device (bound
 * steps) of 256 keys and of a whole row; then a backend built with HYOCR_DECODE_STAGES's field on (and HYOCR_DECODE_MMA's
 * off at 2), through attention_paged, against the CPU. Hq heads over Hkv: 2 a CTA (16 over 8,
 * the model's) or 1 (8 over 8). */
static void paged_decode_staged(const dt_case *c, int Hq, int Hkv)
{
    hyocr_backend *g = cuda(c);
    if (!g) return;
    enum { ROWS = 4 };
    const int D = 128, ctxs[ROWS] = { 4191, 1087, 100, 1 };
    kv_fix f;
    kv_init(&f, g, 16, 400, Hq, Hkv, D);
    for (int which = 0; which < 2; which++) {   /* the prefixes straight into the caches */
        pair *p = which ? &f.v : &f.k;
        g_autofree float *x = rndq(g, f.k.n, -2, 2);
        OK(cpu()->ops->upload_f32(cpu(), p->c, 0, x, f.k.n, E));
        OK(g->ops->upload_f32(g, p->g, 0, x, f.k.n, E));
    }
    int32_t *bt[ROWS];
    hyocr_seq_view sv[ROWS];
    for (int r = 0; r < ROWS; r++) {
        bt[r] = kv_table(&f, ctxs[r]);
        sv[r] = (hyocr_seq_view){ bt[r], ctxs[r] - 1, 1 };
    }
    size_t nq = (size_t)ROWS * (Hq + 2 * Hkv) * D, no = (size_t)ROWS * Hq * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    float scale = (float)pow(D, -0.5);
    BOTH(g, cpu()->ops->attention_paged(cpu(), po.c, pq.c, f.k.c, f.v.c, f.bs, sv, ROWS, Hq, Hkv, D, scale, NULL, E),
         g->ops->attention_paged(g, po.g, pq.g, f.k.g, f.v.g, f.bs, sv, ROWS, Hq, Hkv, D, scale, NULL, E));
    cmp2(g, "paged decode, 4 rows", &po, 0, no, c->tol);
#if HYOCR_HAVE_CUDA
    g_autofree float *ref = get(cpu(), po.c, 0, no);
    GArray *tables = g_array_new(FALSE, FALSE, sizeof(int32_t));
    hk_seq hs[ROWS];
    for (int r = 0; r < ROWS; r++) {
        hs[r] = (hk_seq){ r, ctxs[r] - 1, 1, (int)tables->len };
        g_array_append_vals(tables, bt[r], (guint)((ctxs[r] + f.bs - 1) / f.bs));
    }
    void *d_bt = dev_copy(tables->data, tables->len * sizeof(int32_t));
    /* the last: a row's keys in one CTA, as bound_stages runs 14-16 rows four rounds deep */
    static const struct { int len; bool dev; } modes[] = { { 128, false }, { 64, false }, { 256, true }, { 4352, true } };
    for (size_t m = 0; m < G_N_ELEMENTS(modes); m++) {
        g_autofree float *old = decode_direct(c, &f, &pq, hs, ROWS, d_bt, modes[m].len, modes[m].dev, 4352, 0, 0);
        g_autofree char *w0 = g_strdup_printf("k_decode, %d-key splits%s", modes[m].len, modes[m].dev ? " (device)" : "");
        expect_close(w0, old, ref, no, c->tol);
        for (int st = 2; st <= HK_DECODE_STAGES_MAX; st++)
            for (int mma = 0; mma <= 1; mma++) {
                g_autofree float *got =
                    decode_direct(c, &f, &pq, hs, ROWS, d_bt, modes[m].len, modes[m].dev, 4352, st, mma);
                g_autofree char *w = g_strdup_printf("%s<%d>, %d-key splits%s, %d heads over %d",
                                                     mma ? "k_decode_mma" : "k_decode_staged", st, modes[m].len,
                                                     modes[m].dev ? " (device)" : "", Hq, Hkv);
                expect_close(w, got, ref, no, c->tol);
                if (mma)
                    expect_close(w, got, old, no, c->tol);
                else
                    expect_equal(w, got, old, no);
            }
    }
    cudaFree(d_bt);
    g_array_free(tables, TRUE);
    for (int v = 2; v <= HK_DECODE_STAGES_MAX + 1; v++) {   /* past the last: 2 without the tensor cores */
        const int st = v <= HK_DECODE_STAGES_MAX ? v : 2;
        const hyocr_switch mma = v <= HK_DECODE_STAGES_MAX ? HYOCR_SWITCH_DEFAULT : HYOCR_SWITCH_OFF;
        hyocr_backend *t = cuda_tuned(c, (hyocr_tuning){ .decode_stages = st, .decode_mma = mma });
        pair tq = mk2(t, HYOCR_BUF_ACT, qkv, nq), to = mk2(t, HYOCR_BUF_ACT, NULL, no);
        kv_fix tf = f;   /* the same layout on a fresh backend: the caches copied over */
        tf.g = t;
        tf.k = mk2(t, HYOCR_BUF_KV, NULL, f.k.n);
        tf.v = mk2(t, HYOCR_BUF_KV, NULL, f.v.n);
        g_autofree float *kh = get(g, f.k.g, 0, f.k.n), *vh = get(g, f.v.g, 0, f.v.n);
        OK(t->ops->upload_f32(t, tf.k.g, 0, kh, f.k.n, E));
        OK(t->ops->upload_f32(t, tf.v.g, 0, vh, f.v.n, E));
        OK(t->ops->attention_paged(t, to.g, tq.g, tf.k.g, tf.v.g, f.bs, sv, ROWS, Hq, Hkv, D, scale, NULL, E));
        g_autofree float *got = get(t, to.g, 0, no);
        g_autofree char *w = g_strdup_printf("backend with decode_stages %d%s, 4 rows", st,
                                             mma == HYOCR_SWITCH_OFF ? " (HYOCR_DECODE_MMA=0)" : "");
        expect_close(w, got, ref, no, c->tol);
        free2(t, &tq);
        free2(t, &to);
        free2(t, &tf.k);
        free2(t, &tf.v);
        hyocr_backend_free(t);
    }
#endif
    for (int r = 0; r < ROWS; r++) g_free(bt[r]);
    free2(g, &pq);
    free2(g, &po);
    kv_clear(&f);
}

static void test_paged_decode_staged(gconstpointer data)
{
    paged_decode_staged(data, 16, 8);
    paged_decode_staged(data, 8, 8);
}

/* ---------------------------------------------------------------- benchmark */

#if HYOCR_HAVE_CUDA
#define CK(x) g_assert_cmpint((int)(x), ==, (int)cudaSuccess)

/* Benchmarks need big random arrays fast: an LCG is plenty (never zeros). */
static float *rnd_fast(size_t n, float lo, float hi)
{
    float *x = g_new(float, n ? n : 1);
    uint32_t st = (uint32_t)g_test_rand_int();
    for (size_t i = 0; i < n; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)(st >> 8) * (1.0f / 16777216.0f);
    }
    return x;
}

static void *dev_rand(size_t n, hk_dtype t, cudaStream_t s)
{
    g_autofree float *h = rnd_fast(n, -2, 2);
    void *f32 = NULL, *d = NULL;
    CK(cudaMalloc(&f32, n * 4));
    CK(cudaMalloc(&d, n * 2));
    CK(cudaMemcpy(f32, h, n * 4, cudaMemcpyHostToDevice));
    CK(hk_convert(s, d, t, f32, HK_F32, n));
    CK(cudaStreamSynchronize(s));
    CK(cudaFree(f32));
    return d;
}

/* Median of reps timed launches (ms). */
typedef cudaError_t (*bench_fn)(cudaStream_t s, void *ctx);

static double bench_ms(cudaStream_t s, bench_fn fn, void *ctx, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) CK(fn(s, ctx));
    double *t = g_new(double, reps);
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(a, s));
        CK(fn(s, ctx));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t[i] = ms;
    }
    for (int i = 1; i < reps; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    double med = t[reps / 2];
    g_free(t);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return med;
}

typedef struct {
    hk_dtype t;
    void    *out, *qkv;
    int      n, H, D, wgmma, lazy;   /* hk_attention_full's */
} full_bench;

static cudaError_t full_fn(cudaStream_t s, void *p)
{
    full_bench *b = p;
    return hk_attention_full(s, b->t, b->out, b->qkv, b->n, b->H, b->D, 1.0f / sqrtf((float)b->D), b->wgmma,
                             b->lazy);
}

/* The vision kernels: mma.sync, and where the device has wgmma k_vis_wg and k_vis_tma (as launched: the
 * lazy rescale). */
static void bench_full(hk_dtype t, int n, cudaStream_t s)
{
    const int H = 16, D = 72;
    int wg = 0;
    CK(hk_kernels_probe(s, &wg));
    full_bench b = { t, NULL, dev_rand((size_t)n * 3 * H * D, t, s), n, H, D, 0, 1 };
    CK(cudaMalloc(&b.out, (size_t)n * H * D * 2));
    static const char *const names[] = { "mma.sync", "wgmma", "tma" };
    for (b.wgmma = HK_VIS_MMA; b.wgmma <= (wg ? HK_VIS_TMA : HK_VIS_MMA); b.wgmma++) {
        double ms = bench_ms(s, full_fn, &b, n > 8192 ? 5 : 20);
        double flop = 4.0 * n * (double)n * H * D;
        printf("# bench %-5s attention_full %-8s n=%-6d H=%d D=%d: %8.3f ms  %6.1f TFLOP/s\n",
               t == HK_BF16 ? "bf16" : "f16", names[b.wgmma], n, H, D, ms, flop / ms * 1e-9);
    }
    cudaFree(b.out);
    cudaFree(b.qkv);
}

/* Device-side arguments of one paged call, built like the backend does. */
typedef struct {
    hk_paged_args a;
    void         *meta, *part, *ctr;
} paged_bench;

static cudaError_t decode_fn(cudaStream_t s, void *p)
{
    return hk_attention_decode(s, &((paged_bench *)p)->a);
}

static cudaError_t prefill_fn(cudaStream_t s, void *p)
{
    return hk_attention_prefill(s, &((paged_bench *)p)->a);
}

/* split_len 0: the backend's policy. */
static void bench_paged(hk_dtype t, int n_seqs, int ctx, int n_new, int split_len, int sm_count, cudaStream_t s)
{
    const int Hq = 16, Hkv = 8, D = 128, bs = 16;
    int nb = (ctx + bs - 1) / bs, total_blocks = nb * n_seqs + 1;
    size_t cache = (size_t)total_blocks * bs * Hkv * D;
    paged_bench b = { { 0 } };
    hk_paged_args *a = &b.a;
    *a = (hk_paged_args){ .t = t, .block_size = bs, .Hq = Hq, .Hkv = Hkv, .D = D, .scale = 0.0884f,
                          .n_seqs = n_seqs };
    a->qkv = dev_rand((size_t)n_seqs * n_new * (Hq + 2 * Hkv) * D, t, s);
    a->k_cache = dev_rand(cache, t, s);
    a->v_cache = dev_rand(cache, t, s);
    CK(cudaMalloc(&a->out, (size_t)n_seqs * n_new * Hq * D * 2));
    /* host metadata: scattered blocks per sequence */
    GArray *seqs = g_array_new(FALSE, FALSE, sizeof(hk_seq)), *bt = g_array_new(FALSE, FALSE, 4);
    GArray *tiles = g_array_new(FALSE, FALSE, 8), *splits = g_array_new(FALSE, FALSE, sizeof(hk_split));
    int len = split_len ? split_len : hk_decode_split_len(sm_count, (int64_t)n_seqs * ctx, n_seqs, Hq, Hkv), parts = 0;
    for (int q = 0; q < n_seqs; q++) {
        hk_seq hs = { q * n_new, ctx - n_new, n_new, (int)bt->len };
        g_array_append_val(seqs, hs);
        for (int i = 0; i < nb; i++) {
            int32_t blk = (int32_t)((q * nb + (i * 7919) % nb) % (total_blocks - 1));
            g_array_append_val(bt, blk);
        }
        if (n_new == 1) {
            guint at = splits->len;
            g_array_set_size(splits, at + (guint)((ctx + len - 1) / len));
            parts += hk_decode_splits(&g_array_index(splits, hk_split, at), q, q, ctx, len, parts);
        } else {
            for (int ti = 0; ti < (n_new * Hq / Hkv + 63) / 64; ti++) g_array_append_vals(tiles, (int32_t[]){ q, ti }, 1);
        }
    }
    size_t off[4], total = 0;
    GArray *arrs[4] = { seqs, bt, tiles, splits };
    for (int i = 0; i < 4; i++) {
        off[i] = total;
        total += ((size_t)arrs[i]->len * g_array_get_element_size(arrs[i]) + 15) & ~(size_t)15;
    }
    CK(cudaMalloc(&b.meta, total + 16));
    for (int i = 0; i < 4; i++)
        if (arrs[i]->len)
            CK(cudaMemcpy((char *)b.meta + off[i], arrs[i]->data, arrs[i]->len * g_array_get_element_size(arrs[i]),
                          cudaMemcpyHostToDevice));
    CK(cudaMalloc(&b.part, (size_t)(parts + 1) * Hq * (D + 2) * 4));
    CK(cudaMalloc(&b.ctr, (size_t)n_seqs * Hq * 4));
    CK(cudaMemset(b.ctr, 0, (size_t)n_seqs * Hq * 4));
    a->seqs = (const hk_seq *)((char *)b.meta + off[0]);
    a->block_tables = (const int32_t *)((char *)b.meta + off[1]);
    a->tiles = (const int2 *)((char *)b.meta + off[2]);
    a->n_tiles = (int)tiles->len;
    a->splits = (const hk_split *)((char *)b.meta + off[3]);
    a->n_splits = (int)splits->len;
    a->n_dec_rows = n_seqs;
    a->counters = b.ctr;
    a->part_acc = b.part;
    a->part_ml = (float *)b.part + (size_t)parts * Hq * D;
    a->split_max = len;
    const char *tn = t == HK_BF16 ? "bf16" : "f16";
    if (n_new == 1) {
        double ms = bench_ms(s, decode_fn, &b, 50);
        double bytes = 2.0 * n_seqs * ctx * Hkv * D * 2;
        printf("# bench %-5s decode attention %d seq × %5d ctx (split %4d%s, %4d CTAs): %8.4f ms  %7.1f GB/s\n", tn,
               n_seqs, ctx, len, split_len ? "" : " auto", (int)splits->len * Hq / hk_decode_heads_per_cta(Hq, Hkv),
               ms, bytes / ms * 1e-6);
    } else {
        double ms = bench_ms(s, prefill_fn, &b, 10);
        double flop = 4.0 * n_seqs * ((double)n_new * (ctx - n_new) + 0.5 * n_new * n_new) * Hq * D;
        printf("# bench %-5s paged prefill %d seq × %5d new tokens: %8.3f ms  %6.1f TFLOP/s\n", tn, n_seqs, n_new, ms,
               flop / ms * 1e-9);
    }
    for (int i = 0; i < 4; i++) g_array_free(arrs[i], TRUE);
    cudaFree(b.meta);
    cudaFree(b.part);
    cudaFree(b.ctr);
    cudaFree((void *)a->qkv);
    cudaFree(a->k_cache);
    cudaFree(a->v_cache);
    cudaFree(a->out);
}

/* GEMMs through the backend op: wall time over many calls, GPU-bound at these sizes. */
static void bench_matmul(hyocr_backend *g, const char *name, int M, int N, int K, bool out_f32, int reps)
{
    hyocr_buf *x = mk(g, HYOCR_BUF_ACT, NULL, (size_t)M * K), *w = mk(g, HYOCR_BUF_WEIGHT, NULL, (size_t)N * K);
    hyocr_buf *o = mk(g, out_f32 ? HYOCR_BUF_F32 : HYOCR_BUF_ACT, NULL, (size_t)M * N);
    g_autofree float *hx = rnd_fast((size_t)M * K, -1, 1), *hw = rnd_fast((size_t)N * K, -0.1f, 0.1f);
    OK(g->ops->upload_f32(g, x, 0, hx, (size_t)M * K, E));
    OK(g->ops->upload_f32(g, w, 0, hw, (size_t)N * K, E));
    for (int i = 0; i < 3; i++) OK(g->ops->matmul(g, o, x, w, 0, NULL, M, N, K, E));
    OK(g->ops->sync(g, E));
    gint64 t0 = g_get_monotonic_time();
    for (int i = 0; i < reps; i++) OK(g->ops->matmul(g, o, x, w, 0, NULL, M, N, K, E));
    OK(g->ops->sync(g, E));
    double ms = (double)(g_get_monotonic_time() - t0) / 1000.0 / reps;
    double flop = 2.0 * M * N * K, bytes = 2.0 * ((double)M * K + (double)N * K) + (out_f32 ? 4.0 : 2.0) * M * N;
    printf("# bench matmul %-22s %5d×%6d×%5d: %8.4f ms  %6.1f TFLOP/s  %7.1f GB/s\n", name, M, N, K, ms,
           flop / ms * 1e-9, bytes / ms * 1e-6);
    g->ops->buf_free(g, x);
    g->ops->buf_free(g, w);
    g->ops->buf_free(g, o);
}

/* Decode-sized products of 16 and 4 rows (batched decode, the speculative verify step). */
static void bench_rows(hyocr_backend *g, const char *prefix)
{
    static const struct {
        const char *name;
        int         N, K;
        bool        out_f32;
    } shapes[] = {
        { "qkv", 4096, 1024, false }, { "o", 1024, 2048, false },           { "gate|up", 7168, 1024, false },
        { "down", 1024, 3584, false }, { "lm_head", 120818, 1024, true },
    };
    const int rows[] = { 16, 4 };
    for (size_t r = 0; r < G_N_ELEMENTS(rows); r++)
        for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) {
            g_autofree char *name = g_strdup_printf("%s %s", prefix, shapes[i].name);
            bench_matmul(g, name, rows[r], shapes[i].N, shapes[i].K, shapes[i].out_f32, shapes[i].out_f32 ? 50 : 200);
        }
}

static void bench_copy(cudaStream_t s)
{
    size_t bytes = (size_t)2 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemsetAsync(a, 1, bytes, s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < 5; i++) CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("# bench device copy: %.1f GB/s (read + write)\n", 2.0 * bytes * 5 / (ms * 1e-3) * 1e-9);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
}
#endif

#if HYOCR_HAVE_CUDA
/* A Hopper vision kernel (kernel: k_vis_wg or k_vis_tma) with every tile's rescale (lazy = 0)
 * against the mma.sync kernel every other card runs, on the same random qkv at each n: only the
 * order of the fp32 sums inside the products differs, so the outputs agree to a few output ulps
 * (max |Δ| ≤ 4 ulps of the largest |out|, rel-L2 ≤ tol / 4). Rows left unwritten read as NaN
 * and fail. The launched lazy rescale rounds other weights: attention_full_softmax holds it
 * to a double reference against this one. */
static void expect_full_like_mma(const dt_case *c, cudaStream_t s, const int *sizes, size_t n_sizes, int kernel)
{
    hk_dtype t = case_kt(c);
    const int H = 16, D = 72;
    const double ulp = t == HK_BF16 ? 1.0 / 128 : 1.0 / 1024;
    for (size_t k = 0; k < n_sizes; k++) {
        int n = sizes[k];
        size_t no = (size_t)n * H * D;
        full_bench a = { t, NULL, dev_rand((size_t)n * 3 * H * D, t, s), n, H, D, 0, 0 }, b = a;
        b.wgmma = kernel;
        CK(cudaMalloc(&a.out, no * 2));
        CK(cudaMalloc(&b.out, no * 2));
        CK(cudaMemsetAsync(b.out, 0xff, no * 2, s));   /* NaN: a row left unwritten fails */
        CK(full_fn(s, &a));
        CK(full_fn(s, &b));
        float *f32 = NULL;
        CK(cudaMalloc((void **)&f32, no * 8));
        CK(hk_convert(s, f32, HK_F32, a.out, t, no));
        CK(hk_convert(s, f32 + no, HK_F32, b.out, t, no));
        g_autofree float *h = g_new(float, 2 * no);
        CK(cudaMemcpyAsync(h, f32, no * 8, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        double big = 0, mx = 0, num = 0, den = 0;
        for (size_t i = 0; i < no; i++) {
            g_assert_true(isfinite(h[i]) && isfinite(h[no + i]));
            double d = fabs((double)h[i] - h[no + i]);
            big = MAX(big, fabs(h[i]));
            mx = MAX(mx, d);
            num += d * d;
            den += (double)h[i] * h[i];
        }
        double rel = sqrt(num / MAX(den, 1e-30));
        if (g_test_verbose())
            printf("%s vs mma.sync %s n %d: max|d| %.3g (max|out| %.3g, bound %.3g), rel-L2 %.3g (bound %.3g)\n",
                   kernel == HK_VIS_TMA ? "k_vis_tma" : "k_vis_wg", c->name, n, mx, big, 4 * ulp * MAX(big, 1e-3), rel, c->tol / 4);
        g_assert_cmpfloat(mx, <=, 4 * ulp * MAX(big, 1e-3));
        g_assert_cmpfloat(rel, <=, c->tol / 4);
        cudaFree(f32);
        cudaFree(a.out);
        cudaFree(b.out);
        cudaFree(a.qkv);
    }
}

/* The probe's answer; skips (loudly) where this device or build has no wgmma kernel. */
static bool have_wgmma(cudaStream_t s)
{
    int wg = 0;
    CK(hk_kernels_probe(s, &wg));
    if (!wg) g_test_skip("SKIP: no wgmma vision attention here (needs an sm_90 card and a build with arch 90)");
    return wg != 0;
}

/* A vision q|k|v of n rows (H heads × D) on the device, of type t: h (n · 3·H·D floats) is
 * filled at random in [−2, 2) with each key row j scaled by 1 + ramp·j/n (ramped keys raise
 * a row's max tile after tile), and left holding the inputs as the kernels see them. */
static void *ramped_qkv(hk_dtype t, cudaStream_t s, int n, int H, int D, double ramp, float *h)
{
    const size_t nq = (size_t)n * 3 * H * D, st = (size_t)3 * H * D;
    g_autofree float *x = rnd_fast(nq, -2, 2);
    for (int j = 0; j < n; j++)
        for (size_t i = (size_t)H * D; i < (size_t)2 * H * D; i++) x[j * st + i] *= (float)(1 + ramp * j / n);
    void *f32 = NULL, *qkv = NULL;
    CK(cudaMalloc(&f32, nq * 4));
    CK(cudaMalloc(&qkv, nq * 2));
    CK(cudaMemcpy(f32, x, nq * 4, cudaMemcpyHostToDevice));
    CK(hk_convert(s, qkv, t, f32, HK_F32, nq));
    CK(hk_convert(s, f32, HK_F32, qkv, t, nq));
    CK(cudaMemcpyAsync(h, f32, nq * 4, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    cudaFree(f32);
    return qkv;
}
#endif

/* The Hopper vision attentions against the mma.sync kernel, at the sizes of real pages
 * (16384 patches: a 2048² page; 4096, 1024²) and at ragged ones (partial query and key tiles;
 * 16384 and 4096 take k_vis_tma's four-warpgroup CTAs, the others its three). */
static void test_attention_full_wgmma(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
#if HYOCR_HAVE_CUDA
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    static const int sizes[] = { 16384, 4200, 4096, 1000, 129, 64, 1 };
    if (have_wgmma(s)) {
        expect_full_like_mma(c, s, sizes, G_N_ELEMENTS(sizes), HK_VIS_WG);
        expect_full_like_mma(c, s, sizes, G_N_ELEMENTS(sizes), HK_VIS_TMA);
    }
    CK(cudaStreamDestroy(s));
#endif
}

#if HYOCR_HAVE_CUDA
/* out[R][H][D] in double for rows[] of the attention over qkv (as rounded to the compute type). */
static void full_ref_rows(const float *qkv, int n, int H, int D, const int *rows, int R, double *out)
{
    const size_t st = (size_t)3 * H * D;
    const double scale = 1.0 / sqrt((double)D);
    g_autofree double *p = g_new(double, n);
    for (int r = 0; r < R; r++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + rows[r] * st + (size_t)h * D;
            double mx = -INFINITY, l = 0;
            for (int j = 0; j < n; j++) {
                const float *k = qkv + j * st + (size_t)(H + h) * D;
                double s = 0;
                for (int d = 0; d < D; d++) s += (double)q[d] * k[d];
                p[j] = s * scale;
                mx = MAX(mx, p[j]);
            }
            double *o = out + ((size_t)r * H + h) * D;
            for (int d = 0; d < D; d++) o[d] = 0;
            for (int j = 0; j < n; j++) {
                const float *v = qkv + j * st + (size_t)(2 * H + h) * D;
                double w = exp(p[j] - mx);
                l += w;
                for (int d = 0; d < D; d++) o[d] += w * v[d];
            }
            for (int d = 0; d < D; d++) o[d] /= l;
        }
}

/* One run of hk_attention_full (b's mode) against the reference rows:
 * rel-L2 and max |Δ| over them; every output must be finite (rows left unwritten are NaN). */
static void full_err_rows(hk_dtype t, cudaStream_t s, full_bench *b, const int *rows, int R, const double *ref,
                          double *rel, double *mx)
{
    const size_t row = (size_t)b->H * b->D, no = (size_t)b->n * row;
    float *f32 = NULL;
    CK(cudaMemsetAsync(b->out, 0xff, no * 2, s));
    CK(full_fn(s, b));
    CK(cudaMalloc((void **)&f32, no * 4));
    CK(hk_convert(s, f32, HK_F32, b->out, t, no));
    g_autofree float *h = g_new(float, no);
    CK(cudaMemcpyAsync(h, f32, no * 4, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    cudaFree(f32);
    for (size_t i = 0; i < no; i++) g_assert_true(isfinite(h[i]));
    double num = 0, den = 0;
    *mx = 0;
    for (int r = 0; r < R; r++)
        for (size_t i = 0; i < row; i++) {
            double d = fabs(h[rows[r] * row + i] - ref[r * row + i]);
            *mx = MAX(*mx, d);
            num += d * d;
            den += ref[r * row + i] * ref[r * row + i];
        }
    *rel = sqrt(num / MAX(den, 1e-300));
}

/* The Hopper kernels' (k_vis_wg, k_vis_tma) two softmax schedules against a double reference at 48 sampled rows (the
 * first and last, CTA and tile edges among them): every tile's rescale (lazy = 0, the
 * mma.sync kernel's arithmetic) and the launched lazy one (rescaled only when a row's max
 * rose past 2^8). Each within the compute type's tol (rel-L2; what attention_full holds the
 * backend to against the CPU; measured at most 2.9e-4 in fp16, 2.4e-3 in bf16). The lazy one rounds other weights (scaled by up to 2^8), so
 * not the same bits: its bars are against the every-tile kernel's error on the same rows.
 * rel-L2 ≤ 1.25× (the H200, session 9, bench/results/2026-12-03-h200-s9/call3: 1.02–1.18×;
 * the weights' rounding noise is the same size, a fresh draw, and its estimate over 48·16
 * rows moves by a few %). max |Δ| ≤ 2×, or one output step more where that is larger
 * (ulp·big / 2: the spacing of fp16/bf16 values just under max |ref|): measured 0.98–1.88×,
 * up to 1.88× in fp16 with ramped keys, where both errors are about one output step (every
 * tile 0.68, lazy 1.27 steps at max |ref| 2: an extreme of ~55k rounded outputs, which
 * another draw moves by a step). A lazy rescale gone wrong (a missed rescale, a stale max)
 * is off by far more. Keys ramped (k_j × (1 + 6j/n)) make each row's max rise past 2^8
 * several times: the taken branch; plain random keys mostly skip it. Up to 64 keys (one
 * tile) both are the same arithmetic (measured: the same errors). */
static void expect_vis_softmax(const dt_case *c, cudaStream_t s, int n, double ramp, int kernel)
{
    hk_dtype t = case_kt(c);
    const int H = 16, D = 72, R = MIN(n, 48);
    const size_t nq = (size_t)n * 3 * H * D, no = (size_t)n * H * D;
    g_autofree float *h = g_new(float, nq);
    full_bench b = { t, NULL, ramped_qkv(t, s, n, H, D, ramp, h), n, H, D, kernel, 0 };
    CK(cudaMalloc(&b.out, no * 2));
    int rows[48];
    for (int r = 0; r < R; r++) rows[r] = R > 1 ? (int)((int64_t)r * (n - 1) / (R - 1)) : 0;
    if (R > 4) rows[1] = MIN(255, n - 1), rows[2] = MIN(256, n - 1), rows[3] = MIN(64, n - 1);
    g_autofree double *ref = g_new(double, (size_t)R * H * D);
    full_ref_rows(h, n, H, D, rows, R, ref);
    const double ulp = t == HK_BF16 ? 1.0 / 128 : 1.0 / 1024;
    double big = 0;
    for (size_t i = 0; i < (size_t)R * H * D; i++) big = MAX(big, fabs(ref[i]));
    double rel0, mx0, rel, mx;
    full_err_rows(t, s, &b, rows, R, ref, &rel0, &mx0);
    b.lazy = 1;
    full_err_rows(t, s, &b, rows, R, ref, &rel, &mx);
    if (g_test_verbose())
        printf("%s softmax %s n %d ramp %g: every tile rel-L2 %.3g max|d| %.3g (max|ref| %.3g); "
               "lazy rel-L2 %.3g (%.3fx) max|d| %.3g (%.3fx)\n",
               kernel == HK_VIS_TMA ? "k_vis_tma" : "k_vis_wg", c->name, n, ramp, rel0, mx0, big, rel, rel / MAX(rel0, 1e-300), mx, mx / MAX(mx0, 1e-300));
    g_assert_cmpfloat(rel0, <=, c->tol);
    g_assert_cmpfloat(rel, <=, c->tol);
    g_assert_cmpfloat(rel, <=, 1.25 * rel0 + 1e-7);
    g_assert_cmpfloat(mx, <=, MAX(2 * mx0, mx0 + ulp * big / 2));
    cudaFree(b.qkv);
    cudaFree(b.out);
}
#endif

static void test_attention_full_softmax(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
#if HYOCR_HAVE_CUDA
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    static const int sizes[] = { 16384, 4200, 1000, 129, 64, 1 };
    if (have_wgmma(s))
        for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
            for (int k = HK_VIS_WG; k <= HK_VIS_TMA; k++) {
                expect_vis_softmax(c, s, sizes[i], 0, k);
                expect_vis_softmax(c, s, sizes[i], 6, k);
            }
        }
    CK(cudaStreamDestroy(s));
#endif
}

static void test_bench(gconstpointer data)
{
    const dt_case *c = data;
    if (!g_getenv("HYOCR_BENCH")) {
        g_test_skip("set HYOCR_BENCH=1 for the microbenchmark");
        return;
    }
    hyocr_backend *g = cuda(c);
    if (!g) return;
#if HYOCR_HAVE_CUDA
    hk_dtype t = case_kt(c);
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    printf("# bench device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    if (t == HK_F16) bench_copy(s);
    int sms = prop.multiProcessorCount;
    bench_paged(t, 1, 4096, 1, 0, sms, s);
    bench_paged(t, 1, 16384, 1, 0, sms, s);
    bench_paged(t, 8, 4096, 1, 0, sms, s);
    bench_paged(t, 1, 1024, 1, 0, sms, s);
    if (t == HK_F16) {
        /* split-length sweep: data for the policy */
        const int lens[] = { 64, 128, 256, 512, 1024 };
        for (size_t i = 0; i < G_N_ELEMENTS(lens); i++) {
            bench_paged(t, 1, 4096, 1, lens[i], sms, s);
            bench_paged(t, 1, 16384, 1, lens[i], sms, s);
        }
    }
    bench_full(t, 4096, s);
    bench_full(t, 16384, s);
    bench_paged(t, 1, 4200, 4200, 0, sms, s);
    if (t == HK_F16) {
        bench_matmul(g, "vit qkv (2048² page)", 16384, 3456, 1152, false, 10);
        bench_matmul(g, "vit fc1", 16384, 4304, 1152, false, 10);
        bench_matmul(g, "decode gate|up", 1, 7168, 1024, false, 200);
        bench_rows(g, "rows");
        /* the same through cuBLAS (what HYOCR_NO_GEMV=1 gives), for comparison */
        hyocr_backend *blas = cuda_tuned(c, (hyocr_tuning){ .no_gemv = true });
        bench_rows(blas, "cuBLAS rows");
        hyocr_backend_free(blas);
        bench_matmul(g, "decode lm_head", 1, 120818, 1024, true, 50);
    }
    CK(cudaStreamDestroy(s));
    g_assert_true(true);
#endif
}

/* ---------------------------------------------------------------- speculative decoding (issue 20) */

/* A verify block: the rows of one sequence as decode rows with views of their own over the same
 * block table, each seeing the rows before it (the backend stores all before any attends). */
static void test_paged_verify(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    kv_fix f;
    kv_init(&f, g, 16, 400, 16, 8, 128);
    g_autofree int32_t *bt = kv_table(&f, 4200 + 16), *b2 = kv_table(&f, 300);
    hyocr_seq_view pre[2] = { { bt, 0, 1024 }, { b2, 0, 250 } };
    paged_step(c, &f, pre, 2, "verify: prefill");
    hyocr_seq_view more = { bt, 1024, 1024 };
    paged_step(c, &f, &more, 1, "verify: prefill 2");
    /* 16 rows of the first sequence and one plain row of the second */
    hyocr_seq_view v[17];
    for (int r = 0; r < 16; r++) v[r] = (hyocr_seq_view){ bt, 2048 + r, 1 };
    v[16] = (hyocr_seq_view){ b2, 250, 1 };
    paged_step(c, &f, v, 17, "verify: a block of 16 rows and a plain row");
    for (int t = 2048; t < 2064; t++) {
        size_t w = (size_t)8 * 128, off = ((size_t)bt[t / f.bs] * f.bs + t % f.bs) * w;
        cmp2(g, "verify: k cache slot", &f.k, off, w, -1);
        cmp2(g, "verify: v cache slot", &f.v, off, w, -1);
    }
    kv_clear(&f);
}

/* HYOCR_INVARIANT: a decode row's bits do not depend on the step it is in. One row through
 * the products (plain and fused) equals row 0 of sixteen, and a decode row's attention alone
 * equals the same row inside a verify block of 16 (eager calls; the bound steps lay out the
 * same blocks). This is what makes speculation's verify rows plain decoding's tokens. */
static void invariant_products(hyocr_backend *g, int N, int K)
{
    const int R = 16;
    g_autofree float *x = rnd((size_t)R * K, -1, 1), *w = rnd((size_t)2 * N * K, -0.1, 0.1);
    g_autofree float *res = rnd((size_t)R * MAX(N, K), -3, 3), *nw = rnd(K, 0.5, 1.5);
    hyocr_buf *bx = mk(g, HYOCR_BUF_ACT, x, (size_t)R * K), *bw = mk(g, HYOCR_BUF_WEIGHT, w, (size_t)2 * N * K);
    hyocr_buf *bn = mk(g, HYOCR_BUF_WEIGHT, nw, K), *o = mk(g, HYOCR_BUF_ACT, NULL, (size_t)R * N);
    const bool norm = g->ops->fused_rows(g, K, true) == R;   /* the normalised rows fit shared memory */
    for (int mode = 0; mode < 4; mode++) {   /* plain, norm, norm + glu, residual */
        if ((mode == 1 || mode == 2) && !norm) continue;
        float *ref = NULL;
        for (int M = R; M >= 1; M -= R - 1) {
            hyocr_buf *br = mk(g, HYOCR_BUF_F32, res, (size_t)R * MAX(N, K));
            if (mode == 0) OK(g->ops->matmul(g, o, bx, bw, 0, NULL, M, N, K, E));
            else if (mode == 3) OK(g->ops->matmul_residual(g, br, bx, bw, M, N, K, E));
            else OK(g->ops->norm_matmul(g, o, br, bn, 1e-6f, bw, M, N, K, mode == 2, E));
            float *got = mode == 3 ? get(g, br, 0, (size_t)M * N) : get(g, o, 0, (size_t)M * N);
            g->ops->buf_free(g, br);
            if (!ref) {
                ref = got;
                continue;
            }
            g_autofree char *what = g_strdup_printf("invariant: one row of mode %d, %d×%d, as row 0 of 16", mode, N, K);
            expect_equal(what, got, ref, (size_t)N);
            g_free(got);
        }
        g_free(ref);
    }
    g->ops->buf_free(g, bx);
    g->ops->buf_free(g, bw);
    g->ops->buf_free(g, bn);
    g->ops->buf_free(g, o);
}

static void test_invariant(gconstpointer data)
{
    const dt_case *c = data;
    if (!cuda(c)) return;
    hyocr_backend *g = cuda_tuned(c, (hyocr_tuning){ .invariant = HYOCR_SWITCH_ON });
    invariant_products(g, 4096, 1024);
    invariant_products(g, 1024, 3584);
    invariant_products(g, 1003, 2048);
    g_assert_cmpint(g->ops->fused_rows(g, 200, false), ==, 0);   /* no one-row kernels to fall back on */
    const int Hq = 16, Hkv = 8, D = 128, P = 1500, R = 16;
    kv_fix f;
    kv_init(&f, g, 16, 200, Hq, Hkv, D);
    g_autofree int32_t *bt = kv_table(&f, P + R);
    hyocr_seq_view pre = { bt, 0, P };
    paged_step(c, &f, &pre, 1, "invariant: prefill");
    hyocr_seq_view v[16];
    for (int r = 0; r < R; r++) v[r] = (hyocr_seq_view){ bt, P + r, 1 };
    const size_t wq = (size_t)(Hq + 2 * Hkv) * D, wo = (size_t)Hq * D;
    g_autofree float *qkv = rndq(g, R * wq, -2, 2);
    hyocr_buf *bq = mk(g, HYOCR_BUF_ACT, qkv, R * wq), *bo = mk(g, HYOCR_BUF_ACT, NULL, R * wo);
    const float scale = (float)pow(D, -0.5);
    OK(g->ops->attention_paged(g, bo, bq, f.k.g, f.v.g, f.bs, v, R, Hq, Hkv, D, scale, NULL, E));
    g_autofree float *block = get(g, bo, 0, R * wo);
    for (int r = R - 1; r >= 0; r--) {   /* the later rows' K/V stay in the cache, unseen */
        hyocr_buf *q1 = mk(g, HYOCR_BUF_ACT, qkv + r * wq, wq), *o1 = mk(g, HYOCR_BUF_ACT, NULL, wo);
        OK(g->ops->attention_paged(g, o1, q1, f.k.g, f.v.g, f.bs, &v[r], 1, Hq, Hkv, D, scale, NULL, E));
        g_autofree float *one = get(g, o1, 0, wo);
        g_autofree char *what = g_strdup_printf("invariant: decode row at %d alone, as row %d of a block", P + r, r);
        expect_equal(what, one, block + r * wo, wo);
        g->ops->buf_free(g, q1);
        g->ops->buf_free(g, o1);
    }
    g->ops->buf_free(g, bq);
    g->ops->buf_free(g, bo);
    kv_clear(&f);
    hyocr_backend_free(g);
}

/* Stream-ordered activations (the default; HYOCR_ORDERED_ALLOC=0 off): given back in the
 * stream's order while the kernels that read them are still queued, and their memory taken again
 * at once (the pool hands it back): every result as with the default allocator, and the
 * accounting back where it started. */
static hyocr_buf *ordered_chain(hyocr_backend *g, const float *x, size_t n, int rounds)
{
    g_autoptr(GError) err = NULL;
    hyocr_buf *cur = mk(g, HYOCR_BUF_ACT, x, n);
    for (int r = 0; r < rounds; r++) {
        /* a larger buffer first, so the next one of size n lands where cur was */
        hyocr_buf *big = mk(g, HYOCR_BUF_F32, NULL, 3 * n), *next;
        g_assert_true(g->ops->copy(g, big, n, cur, 0, n, &err));
        g_assert_true(g->ops->gelu(g, big, 3 * n, &err));
        g->ops->buf_free(g, cur);   /* gelu and copy may not have run yet */
        next = mk(g, HYOCR_BUF_ACT, NULL, n);
        g_assert_true(g->ops->copy(g, next, 0, big, n, n, &err));
        g->ops->buf_free(g, big);
        g_assert_no_error(err);
        cur = next;
    }
    return cur;
}

static void test_ordered_alloc(gconstpointer data)
{
    const dt_case *c = data;
    if (!cuda(c)) return;
    /* its own backends: the shared one takes the environment's switches */
    hyocr_backend *plain = cuda_tuned(c, (hyocr_tuning){ .ordered_alloc = HYOCR_SWITCH_OFF });
    hyocr_backend *g = cuda_tuned(c, (hyocr_tuning){ .ordered_alloc = HYOCR_SWITCH_DEFAULT });   /* stream-ordered */
    const size_t n = (size_t)3 << 20;   /* 6 MiB of fp16 a buffer: the pool's own blocks */
    g_autofree float *x = rnd(n, -3, 3);
    /* once first, so the backend's own scratch (staging, workspace) is in place before counting */
    g->ops->buf_free(g, ordered_chain(g, x, n, 1));
    hyocr_mem_info before, after;
    g->ops->mem_info(g, &before);
    hyocr_buf *a = ordered_chain(plain, x, n, 4), *b = ordered_chain(g, x, n, 4);
    g_autofree float *ra = get(plain, a, 0, n), *rb = get(g, b, 0, n);
    g_assert_cmpmem(rb, n * sizeof(float), ra, n * sizeof(float));
    plain->ops->buf_free(plain, a);
    g->ops->buf_free(g, b);
    g->ops->mem_info(g, &after);
    /* counted while held, given back in full: a round holds cur and big, then big and next
     * (cur goes back before next is taken), 2 + 12 bytes a value at most at once */
    g_assert_cmpint(after.peak, >=, before.workspace + (int64_t)n * (2 + 12));
    g_assert_cmpint(after.workspace, ==, before.workspace);
    hyocr_backend_free(g);
    hyocr_backend_free(plain);
}

#if HYOCR_HAVE_CUDA
/* HYOCR_POOL_KEEP: the stream-ordered pool keeps what a buffer gives back past the
 * synchronisation that would have returned it to the system (its threshold, 0 by default), until
 * release_cached, which the engine calls when idle. */
static void test_pool_keep(gconstpointer data)
{
    const dt_case *c = data;
    if (!cuda(c)) return;
    hyocr_backend *g = cuda_tuned(c, (hyocr_tuning){ .pool_keep = HYOCR_SWITCH_ON });
    int dev = 0;
    cudaMemPool_t pool;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetMemPool(&pool, dev));
    const size_t n = (size_t)32 << 20, bytes = 2 * n;   /* 64 MiB of ACT */
    g_autoptr(GError) err_ = NULL;
    hyocr_buf *b = g->ops->alloc(g, HYOCR_BUF_ACT, n, E);
    g_assert_no_error(err_);
    g->ops->buf_free(g, b);
    OK(g->ops->sync(g, E));
    uint64_t kept = 0;
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept));
    g_assert_cmpuint(kept, >=, bytes);
    g_assert_nonnull(g->ops->release_cached);
    g->ops->release_cached(g);
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept));
    g_assert_cmpuint(kept, <, bytes);
    hyocr_backend_free(g);
}
#endif

/* A bound verify step (decode_bind, as a captured round runs it) whose block of 16 rows crosses a
 * KV block boundary: rows past it attend to keys the first row's block table does not reach.
 * Against the CPU, and against the same rows unbound. */
static void test_paged_verify_bound(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const int Hq = 16, Hkv = 8, D = 128, P = 1510, R = 16, bs = 16;
    kv_fix f;
    kv_init(&f, g, bs, 200, Hq, Hkv, D);
    g_autofree int32_t *bt = kv_table(&f, P + R);
    hyocr_seq_view pre = { bt, 0, P };
    paged_step(c, &f, &pre, 1, "bound verify: prefill");
    hyocr_seq_view v[16];
    int32_t ids[16], first[16];
    for (int r = 0; r < R; r++) {
        v[r] = (hyocr_seq_view){ bt, P + r, 1 };
        ids[r] = r;
        first[r] = 0;
    }
    const size_t nq = (size_t)R * (Hq + 2 * Hkv) * D, no = (size_t)R * Hq * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    const float scale = (float)pow(D, -0.5);
    hyocr_decode_meta dm = { .n_rows = R, .ids = ids, .views = v, .block_size = bs,
                             .max_blocks = (P + R + 255) / 256 * 256 / bs, .pick_first = first, .shared = true };
    OK(g->ops->decode_bind(g, &dm, E));
    OK(g->ops->attention_paged(g, po.g, pq.g, f.k.g, f.v.g, bs, v, R, Hq, Hkv, D, scale, NULL, E));
    g->ops->decode_unbind(g);
    OK(cpu()->ops->attention_paged(cpu(), po.c, pq.c, f.k.c, f.v.c, bs, v, R, Hq, Hkv, D, scale, NULL, E));
    cmp2(g, "bound verify: a block of 16 rows across a KV block boundary", &po, 0, no, c->tol);
    g_autofree float *bound = get(g, po.g, 0, no);
    hyocr_buf *o2 = mk(g, HYOCR_BUF_ACT, NULL, no);
    OK(g->ops->attention_paged(g, o2, pq.g, f.k.g, f.v.g, bs, v, R, Hq, Hkv, D, scale, NULL, E));
    g_autofree float *eager = get(g, o2, 0, no);
    expect_close("bound verify against the same rows unbound", bound, eager, no, c->tol);
    g->ops->buf_free(g, o2);
    free2(g, &pq);
    free2(g, &po);
    kv_clear(&f);
}

#if HYOCR_HAVE_CUDA
/* The block kernel of bound verify steps, called directly: two blocks (16 rows after 1500 keys,
 * 9 rows after 37) against the CPU's attention of the same rows as decode rows. */
static void verify_kernel_case(const dt_case *c, hyocr_backend *g, int ctx_cap)
{
    kv_fix f;
    kv_init(&f, g, 16, 200, 16, 8, 128);
    const int Hq = 16, Hkv = 8, D = 128, P1 = 1500, P2 = 37, R1 = 16, R2 = 9, R = R1 + R2;
    g_autofree int32_t *bt1 = kv_table(&f, P1 + R1), *bt2 = kv_table(&f, P2 + R2);
    hyocr_seq_view pre[2] = { { bt1, 0, P1 }, { bt2, 0, P2 } };
    paged_step(c, &f, pre, 2, "verify kernel: prefill");
    hyocr_seq_view v[25];
    for (int r = 0; r < R1; r++) v[r] = (hyocr_seq_view){ bt1, P1 + r, 1 };
    for (int r = 0; r < R2; r++) v[R1 + r] = (hyocr_seq_view){ bt2, P2 + r, 1 };
    size_t nq = (size_t)R * (Hq + 2 * Hkv) * D, no = (size_t)R * Hq * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    float scale = (float)pow(D, -0.5);
    /* both store the rows' K/V (and the CUDA side's output is overwritten below) */
    BOTH(g, cpu()->ops->attention_paged(cpu(), po.c, pq.c, f.k.c, f.v.c, f.bs, v, R, Hq, Hkv, D, scale, NULL, E),
         g->ops->attention_paged(g, po.g, pq.g, f.k.g, f.v.g, f.bs, v, R, Hq, Hkv, D, scale, NULL, E));
    OK(g->ops->sync(g, E));
    const int nb1 = (P1 + R1 + 15) / 16, nb2 = (P2 + R2 + 15) / 16, maxb = ctx_cap / 16;
    g_autofree int32_t *bt = g_new0(int32_t, 2 * maxb);
    memcpy(bt, bt1, (size_t)nb1 * 4);
    memcpy(bt + maxb, bt2, (size_t)nb2 * 4);
    hk_block blocks[2] = { { 0, R1, P1, 0 }, { R1, R2, P2, maxb } };
    size_t parts = hk_verify_part_floats(ctx_cap, 2, Hq, Hkv, D);
    g_assert_cmpuint(parts, >, 0);
    g_assert_true(hk_verify_fits(R1, Hq, Hkv, D));
    g_assert_false(hk_verify_fits(17, Hq, Hkv, D));
    void *d_bt, *d_blk, *d_part;
    CK(cudaMalloc(&d_bt, (size_t)2 * maxb * 4));
    CK(cudaMalloc(&d_blk, sizeof blocks));
    CK(cudaMalloc(&d_part, parts * 4));
    CK(cudaMemcpy(d_bt, bt, (size_t)2 * maxb * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_blk, blocks, sizeof blocks, cudaMemcpyHostToDevice));
    hk_dtype t = case_kt(c);
    for (int rep = 0; rep < 2; rep++) {
        CK(cudaMemset(po.g->data, 0xff, no * 2));   /* every row must be written */
        CK(hk_attention_verify(NULL, t, po.g->data, pq.g->data, f.k.g->data, f.v.g->data, f.bs, d_bt, d_blk, 2,
                               ctx_cap, Hq, Hkv, D, scale, d_part));
        CK(cudaDeviceSynchronize());
        g_autofree char *what = g_strdup_printf("verify kernel: blocks of 16 and 9 rows (cap %d, run %d)", ctx_cap,
                                                rep + 1);
        cmp2(g, what, &po, 0, no, c->tol);
    }
    cudaFree(d_bt);
    cudaFree(d_blk);
    cudaFree(d_part);
    free2(g, &pq);
    free2(g, &po);
    kv_clear(&f);
}
#endif

static void test_verify_kernel(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
#if HYOCR_HAVE_CUDA
    verify_kernel_case(c, g, 2048);
    verify_kernel_case(c, g, 1536);   /* just the splits the first block needs */
#endif
}

/* The draft's cursor, a word of an F32 buffer. */
static pair cursor2(hyocr_backend *g, int32_t at)
{
    float w;
    memcpy(&w, &at, sizeof w);
    return mk2(g, HYOCR_BUF_F32, &w, 1);
}

static void set_cursor(hyocr_backend *g, pair *p, int32_t at)
{
    float w;
    memcpy(&w, &at, sizeof w);
    OK(cpu()->ops->upload_f32(cpu(), p->c, 0, &w, 1, E));
    OK(g->ops->upload_f32(g, p->g, 0, &w, 1, E));
}

/* Norm-then-rotate at the cursor's positions, q | k heads and k-only rows. */
static void test_qknorm_rope(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const int D = 128;
    hyocr_rope_params rp;
    hyocr_rope_params_init_plain(&rp, D, 10000.0);
    g_autofree float *qn = rndq(g, D, 0.5, 1.5), *kn = rndq(g, D, 0.5, 1.5);
    pair pq = mk2(g, HYOCR_BUF_WEIGHT, qn, D), pk = mk2(g, HYOCR_BUF_WEIGHT, kn, D), cur = cursor2(g, 4170);
    const int shapes[][3] = { { 16, 16, 8 }, { 37, 0, 8 } };   /* rows, Hq, Hkv */
    for (int i = 0; i < 2; i++) {
        int M = shapes[i][0], Hq = shapes[i][1], Hkv = shapes[i][2];
        size_t n = (size_t)M * (Hq + 2 * Hkv) * D;
        g_autofree float *x = rndq(g, n, -3, 3);
        pair px = mk2(g, HYOCR_BUF_ACT, x, n);
        BOTH(g, cpu()->ops->qknorm_rope(cpu(), px.c, M, cur.c, Hq, Hkv, &rp, pq.c, pk.c, 1e-5f, E),
             g->ops->qknorm_rope(g, px.g, M, cur.g, Hq, Hkv, &rp, pq.g, pk.g, 1e-5f, E));
        g_autofree char *what = g_strdup_printf("qknorm_rope %d rows, %d/%d heads at 4170", M, Hq, Hkv);
        cmp2(g, what, &px, 0, n, 1.5 * c->tol);
        free2(g, &px);
    }
    free2(g, &pq);
    free2(g, &pk);
    free2(g, &cur);
}

/* A context filled through k-only rows at moving cursors, then a block attending to all of it:
 * the split kernel (16 rows × 2 heads a group) and the plain one (40 rows), against the CPU. */
static void run_append(const dt_case *c, hyocr_backend *g, int M, int Hq, int Hkv, int ctx, int cap)
{
    const int D = 128, W = Hkv * D;
    pair kc = mk2(g, HYOCR_BUF_KV, NULL, (size_t)cap * W), vc = mk2(g, HYOCR_BUF_KV, NULL, (size_t)cap * W);
    pair cur = cursor2(g, 0);
    for (int at = 0; at < ctx; at += 500) {
        int m = MIN(500, ctx - at);
        size_t n = (size_t)m * 2 * W;
        g_autofree float *kv = rndq(g, n, -2, 2);
        pair pkv = mk2(g, HYOCR_BUF_ACT, kv, n);
        set_cursor(g, &cur, at);
        BOTH(g, cpu()->ops->attention_append(cpu(), NULL, pkv.c, kc.c, vc.c, cur.c, m, 0, Hkv, D, 0, E),
             g->ops->attention_append(g, NULL, pkv.g, kc.g, vc.g, cur.g, m, 0, Hkv, D, 0, E));
        free2(g, &pkv);
    }
    cmp2(g, "append: cached k", &kc, 0, (size_t)ctx * W, -1);
    size_t nq = (size_t)M * (Hq + 2 * Hkv) * D, no = (size_t)M * Hq * D;
    g_autofree float *qkv = rndq(g, nq, -2, 2);
    pair pq = mk2(g, HYOCR_BUF_ACT, qkv, nq), po = mk2(g, HYOCR_BUF_ACT, NULL, no);
    set_cursor(g, &cur, ctx);
    float scale = (float)pow(D, -0.5);
    for (int rep = 0; rep < 2; rep++) {   /* twice: the partials of the first must not leak into the second */
        BOTH(g, cpu()->ops->attention_append(cpu(), po.c, pq.c, kc.c, vc.c, cur.c, M, Hq, Hkv, D, scale, E),
             g->ops->attention_append(g, po.g, pq.g, kc.g, vc.g, cur.g, M, Hq, Hkv, D, scale, E));
        g_autofree char *what = g_strdup_printf("attention_append %d rows over %d keys (%d/%d heads, cap %d)", M,
                                                ctx + M, Hq, Hkv, cap);
        cmp2(g, what, &po, 0, no, c->tol);
    }
    cmp2(g, "append: the block's k", &kc, (size_t)ctx * W, (size_t)M * W, -1);
    free2(g, &pq);
    free2(g, &po);
    free2(g, &kc);
    free2(g, &vc);
    free2(g, &cur);
}

static void test_attention_append(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    run_append(c, g, 16, 16, 8, 4162, 5300);   /* the release's draft at a 2048² page */
    run_append(c, g, 16, 16, 8, 7, 300);       /* a short context, most splits idle */
    run_append(c, g, 16, 4, 2, 900, 1100);     /* the tiny fixture's heads */
    run_append(c, g, 40, 16, 8, 1000, 1200);   /* 80 queries a group: the plain kernel */
}

/* The draft's argmax into an ids buffer (ties to the first, a NaN wins), the ids read back by
 * embed_ids, and rows of one buffer copied into columns of another, converting. */
static void test_draft_small_ops(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const int n = 15, V = 120818, C = 64;
    g_autofree float *x = rnd((size_t)n * V, -4, 4);
    for (int r = 0; r < n; r++) {
        x[(size_t)r * V + 1000 + r] = 9.0f;   /* a tie: the lower id wins */
        x[(size_t)r * V + 90000 + r] = 9.0f;
    }
    x[(size_t)3 * V + 77777] = NAN;
    pair pl = mk2(g, HYOCR_BUF_F32, x, (size_t)n * V), pi = mk2(g, HYOCR_BUF_F32, NULL, (size_t)n + 5);
    BOTH(g, cpu()->ops->argmax(cpu(), pl.c, n, V, pi.c, 5, E), g->ops->argmax(g, pl.g, n, V, pi.g, 5, E));
    g_autofree float *ids = get(g, pi.g, 5, n);
    for (int r = 0; r < n; r++) {
        int32_t id;
        memcpy(&id, &ids[r], sizeof id);
        g_assert_cmpint(id, ==, r == 3 ? 77777 : 1000 + r);
    }
    /* the ids as the step's tokens */
    g_autofree float *tab = rndq(g, (size_t)200000 * C / 1000, -1, 1);   /* 200 rows */
    int32_t small[4] = { 3, 199, 0, 57 };
    pair pt = mk2(g, HYOCR_BUF_WEIGHT, tab, (size_t)200 * C), ps = mk2(g, HYOCR_BUF_F32, (const float *)small, 4);
    pair po = mk2(g, HYOCR_BUF_F32, NULL, (size_t)4 * C);
    BOTH(g, cpu()->ops->embed_ids(cpu(), po.c, pt.c, ps.c, 0, 4, C, E), g->ops->embed_ids(g, po.g, pt.g, ps.g, 0, 4, C, E));
    cmp2(g, "embed_ids", &po, 0, po.n, -1);
    int32_t bad[1] = { 200 };   /* past the table: a zero row on CUDA, an error on the CPU */
    OK(g->ops->upload_f32(g, ps.g, 0, (const float *)bad, 1, E));
    OK(g->ops->embed_ids(g, po.g, pt.g, ps.g, 0, 1, C, E));
    g_autofree float *zero = get(g, po.g, 0, C);
    for (int i = 0; i < C; i++) g_assert_cmpfloat(zero[i], ==, 0.0f);
    /* copy_rows: 5 rows of 64 from an F32 buffer (stride 100) into an ACT buffer (stride 256, at column 128) */
    g_autofree float *src = rndq(g, 500, -3, 3);
    pair pa = mk2(g, HYOCR_BUF_F32, src, 500), pb = mk2(g, HYOCR_BUF_ACT, NULL, 5 * 256);
    BOTH(g, cpu()->ops->copy_rows(cpu(), pb.c, 128, 256, pa.c, 10, 100, 5, 64, E),
         g->ops->copy_rows(g, pb.g, 128, 256, pa.g, 10, 100, 5, 64, E));
    for (int r = 0; r < 5; r++) cmp2(g, "copy_rows F32 → ACT", &pb, (size_t)r * 256 + 128, 64, -1);
    pair pc = mk2(g, HYOCR_BUF_ACT, NULL, 5 * 256);   /* ACT → ACT: a 2-D memcpy */
    BOTH(g, cpu()->ops->copy_rows(cpu(), pc.c, 0, 256, pb.c, 128, 256, 5, 64, E),
         g->ops->copy_rows(g, pc.g, 0, 256, pb.g, 128, 256, 5, 64, E));
    for (int r = 0; r < 5; r++) cmp2(g, "copy_rows ACT → ACT", &pc, (size_t)r * 256, 64, -1);
    pair *all[] = { &pl, &pi, &pt, &ps, &po, &pa, &pb, &pc };
    for (size_t i = 0; i < G_N_ELEMENTS(all); i++) free2(g, all[i]);
}

/* pick with verify rows: a block of 6 rows and a plain row, penalty 1.08; each verify row's set
 * holds the block's tokens before it, and only the plain row's choice joins its slot. Greedy,
 * then sampled; the seen sets after must be the CPU's bit for bit. */
static void test_pick_verify(gconstpointer data)
{
    const dt_case *c = data;
    hyocr_backend *g = cuda(c);
    if (!g) return;
    const int V = 3000, n = 7, W = (V + 31) / 32;
    g_autofree float *x = g_new(float, (size_t)n * V);
    for (size_t i = 0; i < (size_t)n * V; i++) x[i] = (float)g_test_rand_int_range(-40, 41) * 0.25f;
    /* the block's tokens are the strongest candidates, 500 first: each row's set (the slot's 500 and
     * the block's tokens before it) decides which of them wins */
    int32_t step[7] = { 11, 500, 501, 502, 503, 504, 42 };
    for (int r = 0; r < 6; r++)
        for (int j = 1; j <= 5; j++) x[(size_t)r * V + step[j]] = 10.25f - 0.01f * j;
    g_autofree uint32_t *seen0 = g_new0(uint32_t, 2 * W);
    seen0[500 >> 5] |= 1u << (500 & 31);   /* slot 0 already holds 500 */
    int32_t slots[7] = { 0, 0, 0, 0, 0, 0, 1 }, first[7] = { 0, 0, 0, 0, 0, 0, -1 };
    float pens[7] = { 1.08f, 1.08f, 1.08f, 1.08f, 1.08f, 1.08f, 1.08f };
    for (int sampled = 0; sampled < 2; sampled++) {
        pair pl = mk2(g, HYOCR_BUF_F32, x, (size_t)n * V), pseen = mk2(g, HYOCR_BUF_F32, (const float *)seen0, 2 * W);
        pair pids = mk2(g, HYOCR_BUF_F32, (const float *)step, 7);
        hyocr_pick_draw draws[7] = { 0 };
        for (int r = 0; r < n; r++) draws[r] = (hyocr_pick_draw){ 0.9f, 0, 0.95f, 0, (r + 1) * 0.123 };
        const hyocr_pick_draw *d = sampled ? draws : NULL;
        BOTH(g, cpu()->ops->pick(cpu(), pl.c, n, V, pseen.c, slots, pens, d, first, pids.c, E),
             g->ops->pick(g, pl.g, n, V, pseen.g, slots, pens, d, first, pids.g, E));
        int32_t a[7], b[7];
        bool nfa[7], nfb[7];
        OK(cpu()->ops->pick_fetch(cpu(), n, a, nfa, E));
        OK(g->ops->pick_fetch(g, n, b, nfb, E));
        for (int r = 0; r < n; r++) {
            g_assert_cmpint(a[r], ==, b[r]);
            g_assert_false(nfb[r]);
        }
        for (int r = 0; r < 5 && !sampled; r++) g_assert_cmpint(a[r], ==, r < 2 ? 501 : 500 + r);
        cmp2(g, "seen after a verify pick", &pseen, 0, 2 * W, -1);
        g_autofree float *sw = get(g, pseen.g, 0, 2 * W);
        g_assert_cmpmem(sw, W * 4, seen0, W * 4);   /* the block's slot is untouched */
        free2(g, &pl);
        free2(g, &pseen);
        free2(g, &pids);
    }
}

/* ---------------------------------------------------------------- main */

static void add(const char *name, const dt_case *c, GTestDataFunc fn)
{
    g_autofree char *path = g_strdup_printf("/backend-cuda/%s/%s", c->name, name);
    g_test_add_data_func(path, c, fn);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/backend-cuda/init", test_init);
#if HYOCR_HAVE_CUDA
    g_test_add_func("/backend-cuda/prefill_split_plan", test_prefill_split_plan);
    g_test_add_func("/backend-cuda/decode_split_wave", test_decode_split_wave);
    g_test_add_func("/backend-cuda/gemm_rows_layout_rule", test_gemm_rows_layout_rule);
#endif
    const dt_case *cases[] = { &F16, &BF16 };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const dt_case *c = cases[i];
        add("transfer", c, test_transfer);
        add("upload_large", c, test_upload_large);
        add("upload_weight", c, test_upload_weight);
        add("matmul", c, test_matmul);
        add("gemm_rows_invariance", c, test_gemm_rows_invariance);
        add("gemm_rows_errors", c, test_gemm_rows_errors);
        add("gemm_rows_layout", c, test_gemm_rows_layout);
        add("norms", c, test_norms);
        add("pointwise", c, test_pointwise);
        add("fused", c, test_fused);
        add("fused_errors", c, test_fused_errors);
        add("vision_helpers", c, test_vision_helpers);
        add("embed", c, test_embed);
        add("rope_qknorm", c, test_rope);
        add("rope_qknorm_spread", c, test_rope_spread);
        add("attention_full", c, test_attention_full);
        add("attention_full_long", c, test_attention_full_long);
        add("attention_full_wgmma", c, test_attention_full_wgmma);
        add("paged_spare", c, test_paged_spare);
        add("attention_full_softmax", c, test_attention_full_softmax);
        add("paged", c, test_paged);
        add("paged_long_decode", c, test_paged_long_decode);
        add("paged_decode_staged", c, test_paged_decode_staged);
        add("paged_prefill", c, test_paged_prefill);
        add("bench", c, test_bench);
        add("paged_verify", c, test_paged_verify);
        add("verify_kernel", c, test_verify_kernel);
        add("invariant", c, test_invariant);
        add("ordered_alloc", c, test_ordered_alloc);
#if HYOCR_HAVE_CUDA
        add("pool_keep", c, test_pool_keep);
#endif
        add("paged_verify_bound", c, test_paged_verify_bound);
        add("qknorm_rope", c, test_qknorm_rope);
        add("attention_append", c, test_attention_append);
        add("draft_small_ops", c, test_draft_small_ops);
        add("pick_verify", c, test_pick_verify);
    }
    add("errors", &F16, test_errors);
    add("memory", &F16, test_memory);
    int rc = g_test_run();
    for (int i = 0; i < 3; i++) {
        if (g_cuda[i]) hyocr_backend_free(g_cuda[i]);
        g_free(g_cuda_why[i]);
    }
    if (g_cpu) hyocr_backend_free(g_cpu);
    return rc;
}
