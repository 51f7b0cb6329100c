/* hyocr — CPU backend: every op of backend.h in fp32.
 *
 * A BF16 checkpoint's weight matrices keep their 16 bits (half the memory, half
 * the bytes a decode step reads); the products widen the rows they use to fp32
 * first, which is exact, so they compute what they would on fp32 weights.
 *
 * Results must not depend on the thread count: work is cut into items whose
 * boundaries depend only on the shapes, each output element is written by
 * exactly one item, and an item computes it with the same code whichever
 * thread runs it. Matmuls of up to 16 rows (decode steps) run on our AVX2
 * kernel (gemv_rows); larger ones go to OpenBLAS when present (single-threaded
 * OpenBLAS on fixed tiles, see blas_gemm). */
#include "backend.h"
#include "hostmem.h"
#include "error.h"
#include "i18n.h"
#include "hyocr-build-config.h"
#include "sampler.h"
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_PATH 1
#include <immintrin.h>
#endif
#if HYOCR_HAVE_BLAS
#include <cblas.h>
/* OpenBLAS' cblas.h pulls in <complex.h>, whose macro I clashes with our shapes. */
#undef I
/* Weak so that a plain CBLAS without OpenBLAS' extensions still builds and links. */
extern void openblas_set_num_threads(int n) __attribute__((weak));
extern int  openblas_get_num_threads(void) __attribute__((weak));
#endif

#define CPU_ALIGN   64
#define ATT_KB      256   /* keys per online-softmax block */
#define ATT_QMAX    128   /* query vectors sharing one pass over the keys */
#define ATT_DMAX    512
#define GEMM_TILE   64

/* ---------------------------------------------------------------- thread pool */

typedef void (*cpu_task_fn)(void *ctx, int64_t begin, int64_t end);

typedef struct {
    pthread_t      *threads;
    int             n_workers;
    pthread_mutex_t lock;
    pthread_cond_t  wake, done;
    uint64_t        generation;
    int             pending;
    bool            quit;
    pthread_mutex_t run_lock;      /* one job at a time */
    /* the current job */
    cpu_task_fn     fn;
    void           *ctx;
    int64_t         n_items, grain;
    atomic_llong    next;
} cpu_pool;

static void pool_drain(cpu_pool *p)
{
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->grain);
        if (b >= p->n_items) return;
        int64_t e = b + p->grain < p->n_items ? b + p->grain : p->n_items;
        p->fn(p->ctx, b, e);
    }
}

static void *pool_worker(void *arg)
{
    cpu_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        pool_drain(p);
        pthread_mutex_lock(&p->lock);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pool_free(cpu_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    g_free(p->threads);
    g_free(p);
}

static cpu_pool *pool_new(int n_threads, GError **error)
{
    cpu_pool *p = g_new0(cpu_pool, 1);
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = g_new0(pthread_t, n_threads > 1 ? n_threads - 1 : 1);
    for (int i = 0; i < n_threads - 1; i++) {
        int rc = pthread_create(&p->threads[i], NULL, pool_worker, p);
        if (rc != 0) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                        _("CPU backend: cannot start worker thread %d of %d: %s; try fewer threads"),
                        i + 1, n_threads - 1, g_strerror(rc));
            pool_free(p);
            return NULL;
        }
        p->n_workers++;
    }
    return p;
}

/* Runs fn over [0, n_items) in chunks of grain items; the caller takes part. */
static void pool_run(cpu_pool *p, int64_t n_items, int64_t grain, cpu_task_fn fn, void *ctx)
{
    if (n_items <= 0) return;
    if (grain < 1) grain = 1;
    if (p->n_workers == 0 || n_items <= grain) {
        fn(ctx, 0, n_items);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_items = n_items;
    p->grain = grain;
    atomic_store(&p->next, 0);
    p->pending = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    pool_drain(p);

    pthread_mutex_lock(&p->lock);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->run_lock);
}

/* ---------------------------------------------------------------- backend */

typedef struct {
    hyocr_backend base;
    int           n_threads;
    cpu_pool     *pool;
    bool          use_blas, avx2;
    int64_t       memory_limit;
    GMutex        mem_lock;
    int64_t       bytes[HYOCR_BUF_KV + 1];
    int64_t       total, peak;
    int32_t      *pick_ids;     /* pick's results until pick_fetch */
    bool         *pick_nf;
    int           pick_n, pick_cap;
} cpu_backend;

static inline cpu_backend *CB(hyocr_backend *be) { return (cpu_backend *)be; }
static inline float *F(const hyocr_buf *b) { return (float *)b->data; }

/* Items per chunk so that each thread gets a few chunks (load balance) but
 * chunks stay big enough to amortise the hand-off. */
static int64_t grain_for(const cpu_backend *cb, int64_t n_items, int64_t min_grain)
{
    int64_t g = n_items / ((int64_t)cb->n_threads * 4);
    return g < min_grain ? min_grain : g;
}

static void run(hyocr_backend *be, int64_t n_items, int64_t min_grain, cpu_task_fn fn, void *ctx)
{
    cpu_backend *cb = CB(be);
    pool_run(cb->pool, n_items, grain_for(cb, n_items, min_grain), fn, ctx);
}

/* A buffer of n elements at least. bf16: the op reads weights kept as bf16 too
 * (matmul and embed); every other op reads fp32 only. */
static bool need_as(const char *op, const char *what, const hyocr_buf *b, size_t n, bool bf16, GError **error)
{
    if (!b || !b->data) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: %s: buffer '%s' is missing"), op, what);
        return false;
    }
    if (b->elem_size != (int)sizeof(float) && !(bf16 && b->elem_size == 2)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: %s: buffer '%s' holds %d-byte elements, which this op does not read (a bug in hyocr)"),
                    op, what, b->elem_size);
        return false;
    }
    if (b->n < n) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: %s: buffer '%s' holds %zu elements but %zu are needed"),
                    op, what, b->n, n);
        return false;
    }
    return true;
}

static bool need(const char *op, const char *what, const hyocr_buf *b, size_t n, GError **error)
{
    return need_as(op, what, b, n, false, error);
}

static bool dims_ok(const char *op, GError **error, int n, const int *d)
{
    for (int i = 0; i < n; i++)
        if (d[i] < 0) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("CPU backend: %s: negative dimension %d"), op, d[i]);
            return false;
        }
    return true;
}
#define DIMS_OK(op, err, ...) dims_ok(op, err, (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (int[]){__VA_ARGS__})

static void cpu_free(hyocr_backend *be)
{
    cpu_backend *cb = CB(be);
    pool_free(cb->pool);
    g_free(cb->pick_ids);
    g_free(cb->pick_nf);
    g_mutex_clear(&cb->mem_lock);
    g_free(cb);
}

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

/* The memory limit check, with the numbers as the CUDA backend gives them. */
static bool within_limit(cpu_backend *cb, hyocr_buf_kind kind, size_t bytes, GError **error)
{
    static const char *const names[] = { N_("activations"), N_("fp32 buffers"), N_("weights"), N_("KV cache") };
    g_mutex_lock(&cb->mem_lock);
    bool over = cb->memory_limit > 0 && cb->total + (int64_t)bytes > cb->memory_limit;
    int64_t in_use = cb->total, w = cb->bytes[HYOCR_BUF_WEIGHT], kv = cb->bytes[HYOCR_BUF_KV];
    int64_t act = cb->bytes[HYOCR_BUF_ACT] + cb->bytes[HYOCR_BUF_F32];
    g_mutex_unlock(&cb->mem_lock);
    if (!over) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                _("CPU backend: allocating %.1f MiB of %s would exceed the memory limit of %.1f MiB (%lld bytes; "
                  "%.1f MiB in use: weights %.1f MiB, KV cache %.1f MiB, activations %.1f MiB); raise the limit or "
                  "use a smaller image"), MIB(bytes), _(names[kind]), MIB(cb->memory_limit),
                (long long)cb->memory_limit, MIB(in_use),
                MIB(w), MIB(kv), MIB(act));
    return false;
}

static hyocr_buf *cpu_alloc(hyocr_backend *be, hyocr_buf_kind kind, size_t n, GError **error)
{
    cpu_backend *cb = CB(be);
    if ((int)kind < 0 || kind > HYOCR_BUF_WEIGHT_BF16) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: unknown buffer kind %d"), (int)kind);
        return NULL;
    }
    size_t es = sizeof(float);
    if (kind == HYOCR_BUF_WEIGHT_BF16) {
        kind = HYOCR_BUF_WEIGHT;
        es = (size_t)cb->base.bf16_elem;
    }
    if (n > (SIZE_MAX - CPU_ALIGN) / es || n > (size_t)INT64_MAX / es) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: cannot allocate %zu floats: the size overflows"), n);
        return NULL;
    }
    size_t bytes = n * es;
    if (!within_limit(cb, kind, bytes, error)) return NULL;
    void *data = NULL;
    size_t alloc_bytes = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (posix_memalign(&data, CPU_ALIGN, alloc_bytes ? alloc_bytes : CPU_ALIGN) != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: out of host memory allocating %zu bytes (%.1f MiB)"),
                    bytes, (double)bytes / (1024.0 * 1024.0));
        return NULL;
    }
    /* the weights (~4 GB of fp32 tensors of 4-500 MB) in 2 MiB pages: on the development machine
     * loading the full model and a 512² page took 12.5-13.0 s against 16.0-16.2 (session 12) */
    hyocr_host_advise_huge_from(data, alloc_bytes, kind == HYOCR_BUF_WEIGHT ? (size_t)4 << 20 : HYOCR_HUGE_MIN);
    hyocr_buf *b = g_try_new0(hyocr_buf, 1);
    if (!b) {
        free(data);
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: out of memory allocating a buffer header (%zu bytes)"), sizeof *b);
        return NULL;
    }
    b->kind = kind;
    b->elem_size = (int)es;
    b->n = n;
    b->data = data;
    g_mutex_lock(&cb->mem_lock);
    cb->bytes[kind] += (int64_t)bytes;
    cb->total += (int64_t)bytes;
    if (cb->total > cb->peak) cb->peak = cb->total;
    g_mutex_unlock(&cb->mem_lock);
    return b;
}

static void cpu_buf_free(hyocr_backend *be, hyocr_buf *b)
{
    if (!b) return;
    cpu_backend *cb = CB(be);
    int64_t bytes = (int64_t)(b->n * (size_t)b->elem_size);
    g_mutex_lock(&cb->mem_lock);
    cb->bytes[b->kind] -= bytes;
    cb->total -= bytes;
    g_mutex_unlock(&cb->mem_lock);
    free(b->data);
    g_free(b);
}

/* ---------------------------------------------------------------- transfers */

static float bf16_to_f32(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else {
        /* subnormal half: value = man · 2^-24, exact in float */
        float f = (float)man * 0x1p-24f;
        memcpy(&u, &f, sizeof u);
        u |= sign;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

typedef struct {
    const void *src;
    hyocr_dtype dt;
    float      *dst;
} convert_ctx;

static void convert_task(void *p, int64_t b, int64_t e)
{
    const convert_ctx *c = p;
    if (c->dt == HYOCR_DTYPE_F32) {
        memcpy(c->dst + b, (const float *)c->src + b, (size_t)(e - b) * sizeof(float));
        return;
    }
    const uint8_t *s = c->src;
    for (int64_t i = b; i < e; i++) {
        uint16_t v;
        memcpy(&v, s + i * 2, 2);   /* safetensors data need not be 2-aligned */
        c->dst[i] = c->dt == HYOCR_DTYPE_BF16 ? bf16_to_f32(v) : f16_to_f32(v);
    }
}

static bool cpu_upload_weight(hyocr_backend *be, hyocr_buf *dst, size_t dst_off,
                              const hyocr_tensor *t, GError **error)
{
    const char *name = t && t->name ? t->name : "(unnamed)";
    if (!t || (t->dtype != HYOCR_DTYPE_F32 && t->dtype != HYOCR_DTYPE_F16 && t->dtype != HYOCR_DTYPE_BF16)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("CPU backend: tensor %s%s%s: only F32, F16 and BF16 weights can be loaded; the checkpoint has another type"),
                    name, t && t->file ? _(" in ") : "", t && t->file ? t->file : "");
        return false;
    }
    size_t esz = t->dtype == HYOCR_DTYPE_F32 ? 4 : 2;
    size_t n = 1;
    for (int i = 0; i < t->n_dims; i++) {
        if (t->shape[i] < 0 || (t->shape[i] > 0 && n > SIZE_MAX / (size_t)t->shape[i])) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                        _("CPU backend: tensor %s has an invalid shape; the file is damaged: download the model again"), name);
            return false;
        }
        n *= (size_t)t->shape[i];
    }
    if (n > SIZE_MAX / esz || n * esz > t->nbytes || (n > 0 && !t->data)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("CPU backend: tensor %s%s%s: %zu elements need %zu bytes but the file holds %zu; the file is damaged: "
                      "download the model again"),
                    name, t->file ? _(" in ") : "", t->file ? t->file : "", n, n * esz, t->nbytes);
        return false;
    }
    if (dst_off > SIZE_MAX - n || !need_as("upload_weight", name, dst, dst_off + n, true, error))
        return false;
    if (dst->elem_size == 2) {   /* kept as the checkpoint has it: the loader asks for this only for BF16 */
        if (t->dtype != HYOCR_DTYPE_BF16) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("CPU backend: tensor %s is not BF16 but its buffer keeps bf16 values (a bug in hyocr)"), name);
            return false;
        }
        memcpy((uint16_t *)dst->data + dst_off, t->data, n * 2);
        return true;
    }
    convert_ctx c = { t->data, t->dtype, F(dst) + dst_off };
    run(be, (int64_t)n, 1 << 16, convert_task, &c);
    return true;
}

static bool cpu_upload_f32(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const float *src, size_t n,
                           GError **error)
{
    if (dst_off > SIZE_MAX - n || !need("upload_f32", "dst", dst, dst_off + n, error)) return false;
    if (n) memcpy(F(dst) + dst_off, src, n * sizeof(float));
    return true;
}

static bool cpu_download_f32(hyocr_backend *be, const hyocr_buf *src, size_t src_off, float *dst, size_t n,
                             GError **error)
{
    if (src_off > SIZE_MAX - n || !need("download_f32", "src", src, src_off + n, error)) return false;
    if (n) memcpy(dst, F(src) + src_off, n * sizeof(float));
    return true;
}

static bool cpu_copy(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const hyocr_buf *src, size_t src_off,
                     size_t n, GError **error)
{
    if (dst_off > SIZE_MAX - n || src_off > SIZE_MAX - n ||
        !need("copy", "dst", dst, dst_off + n, error) || !need("copy", "src", src, src_off + n, error))
        return false;
    if (n) memmove(F(dst) + dst_off, F(src) + src_off, n * sizeof(float));
    return true;
}

/* ---------------------------------------------------------------- small vector helpers */

/* SSE-width vectors: native on x86-64 and NEON without extra flags. */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f ld4(const float *p) { v4f v; memcpy(&v, p, sizeof v); return v; }
static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }
static inline float hsum4(v4f v) { return (v[0] + v[1]) + (v[2] + v[3]); }

static inline float dot_f32(const float *a, const float *b, int n)
{
    v4f s0 = { 0 }, s1 = { 0 };
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 += ld4(a + i) * ld4(b + i);
        s1 += ld4(a + i + 4) * ld4(b + i + 4);
    }
    float s = hsum4(s0 + s1);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static inline void axpy(float *y, float p, const float *x, int n)
{
    v4f vp = { p, p, p, p };
    int i = 0;
    for (; i + 4 <= n; i += 4) st4(y + i, ld4(y + i) + vp * ld4(x + i));
    for (; i < n; i++) y[i] += p * x[i];
}

typedef int32_t v4i __attribute__((vector_size(16)));

/* lanes of a where mask is set, else of b (C has no vector ?:) */
static inline v4f select4(v4i mask, v4f a, v4f b)
{
    v4i ai, bi;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    v4i r = (ai & mask) | (bi & ~mask);
    v4f f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/* exp on four lanes: x = n·ln 2 + r (ln 2 split in two for an exact-ish r),
 * e^r = 1 + r + r²·q(r) with q a degree-5 Chebyshev fit on |r| ≤ ln 2 / 2
 * made for this file (error 2e-10 before rounding), so within ~2 ulp of expf.
 * Inputs below −87 give ~1e-38 instead of smaller numbers, which no softmax
 * sum can notice. */
static inline v4f exp4(v4f x)
{
    const v4f hi = { 88.0f, 88.0f, 88.0f, 88.0f }, lo = { -87.0f, -87.0f, -87.0f, -87.0f };
    x = select4(x > hi, hi, x);
    x = select4(x < lo, lo, x);
    const v4f log2e = { 1.44269504088896341f, 1.44269504088896341f, 1.44269504088896341f, 1.44269504088896341f };
    const v4f magic = { 12582912.0f, 12582912.0f, 12582912.0f, 12582912.0f };   /* 1.5·2^23: round to int */
    v4f n = (x * log2e + magic) - magic;
    v4f r = x - n * 0.693359375f - n * -2.12194440e-4f;
    v4f p = (v4f){ 1.9890980870e-04f, 1.9890980870e-04f, 1.9890980870e-04f, 1.9890980870e-04f };
    p = p * r + 1.3933641032e-03f;
    p = p * r + 8.3333109344e-03f;
    p = p * r + 4.1666465006e-02f;
    p = p * r + 1.6666666682e-01f;
    p = p * r + 5.0000000135e-01f;
    p = p * r * r + r + 1.0f;
    v4i bits = (__builtin_convertvector(n, v4i) + 127) << 23;
    v4f two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n;
}

/* ---------------------------------------------------------------- matmul */

typedef struct {
    const float    *x, *w, *bias;
    const uint16_t *wh;           /* bf16 weights (w is NULL then) */
    float          *out;
    int             M, N, K, n_tiles_n, n_tiles_m;
    atomic_int     *oom;          /* a task could not get its widened rows */
    bool            avx2;
} gemm_ctx;

typedef uint16_t v8u16 __attribute__((vector_size(16)));
typedef uint32_t v8u32 __attribute__((vector_size(32)));

#ifdef HAVE_AVX2_PATH
__attribute__((target("avx2"))) static void widen_bf16_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(v, 16));
    }
    for (; i < n; i++) dst[i] = bf16_to_f32(src[i]);
}
#endif

/* bf16 → fp32 is the 16 bits moved up: exact. */
static void widen_bf16(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8u16 h;
        memcpy(&h, src + i, sizeof h);
        v8u32 w = __builtin_convertvector(h, v8u32) << 16;
        memcpy(dst + i, &w, sizeof w);
    }
    for (; i < n; i++) dst[i] = bf16_to_f32(src[i]);
}

/* One task's widened weight rows, kept while its tiles use the same ones. */
typedef struct {
    float *p;
    size_t cap;
    int    n0, nn;
} wide_rows;

static void wide_rows_clear(wide_rows *r) { free(r->p); }

/* The fp32 rows [n0, n0 + nn) of c's weights, K apart: in place, or widened into r
 * (64-byte aligned, like the weights). NULL when r cannot grow (c->oom is set). */
static const float *w_rows(const gemm_ctx *c, wide_rows *r, int n0, int nn)
{
    if (!c->wh) return c->w + (size_t)n0 * c->K;
    if (r->p && r->n0 == n0 && r->nn == nn) return r->p;
    size_t n = (size_t)nn * c->K;
    if (n > r->cap) {
        free(r->p);
        r->p = NULL;
        r->cap = 0;
        void *p = NULL;
        if (posix_memalign(&p, CPU_ALIGN, n * sizeof(float)) != 0) {
            atomic_store(c->oom, 1);
            return NULL;
        }
        r->p = p;
        r->cap = n;
    }
#ifdef HAVE_AVX2_PATH
    if (c->avx2)
        widen_bf16_avx2(r->p, c->wh + (size_t)n0 * c->K, n);
    else
#endif
        widen_bf16(r->p, c->wh + (size_t)n0 * c->K, n);
    r->n0 = n0;
    r->nn = nn;
    return r->p;
}

#ifdef HAVE_AVX2_PATH
/* A few x rows (decode steps: memory-bound) against weight rows [n0, n1), the weights read once
 * as stored: an output's dot product runs in 8 fp32 lanes of FMAs over K, summed in a fixed order,
 * whichever block of rows and weight rows it is computed in (so neither the chunking nor the
 * thread count changes a result). bf16 rows are widened in registers, exactly: the two weight
 * types give the same bits, and a kept bf16 matrix is read at 2 bytes a weight. */
#define GEMV_MAX_ROWS 16

__attribute__((target("avx2,fma"), always_inline)) static inline __m256 w8(const void *w, size_t i, bool bf16)
{
    if (!bf16) return _mm256_loadu_ps((const float *)w + i);
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

__attribute__((target("avx2,fma"), always_inline)) static inline float w1(const void *w, size_t i, bool bf16)
{
    return bf16 ? bf16_to_f32(((const uint16_t *)w)[i]) : ((const float *)w)[i];
}

/* ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7)), in registers: with K ~1000 a sum through
 * memory had cost about as much as a third of the products. */
__attribute__((target("avx2,fma"), always_inline)) static inline float hsum8(__m256 a)
{
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    t = _mm_hadd_ps(t, t);
    return _mm_cvtss_f32(_mm_hadd_ps(t, t));
}

/* 16 values a step as two halves, [0..3, 8..11] and [4..7, 12..15]: how unpacking 16 bf16
 * weights with zeros lays them out, so a bf16 row takes one load and two unpacks a step; x and
 * fp32 rows are put the same way (one lane order for both weight types: the same bits). */
__attribute__((target("avx2,fma"), always_inline)) static inline void f16x(const float *p, __m256 *lo, __m256 *hi)
{
    __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    *lo = _mm256_permute2f128_ps(a, b, 0x20);
    *hi = _mm256_permute2f128_ps(a, b, 0x31);
}

__attribute__((target("avx2,fma"), always_inline)) static inline __m256 w16(const void *w, size_t i, bool bf16,
                                                                         __m256 xl, __m256 xh, __m256 acc)
{
    __m256 lo, hi;
    if (bf16) {
        __m256i v = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i)), z = _mm256_setzero_si256();
        lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v));
        hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v));
    } else {
        f16x((const float *)w + i, &lo, &hi);
    }
    return _mm256_fmadd_ps(xh, hi, _mm256_fmadd_ps(xl, lo, acc));
}

/* The tail of K past the last 8 and the store: (m, n)'s sum from its lanes on. */
__attribute__((target("avx2,fma"), always_inline)) static inline void dot_end(const gemm_ctx *c, const void *w,
                                                                           bool bf16, int m, int n, size_t k,
                                                                           __m256 a)
{
    size_t K = (size_t)c->K;
    const float *x = c->x + (size_t)m * K;
    float s = hsum8(a);
    for (; k < K; k++) s = fmaf(x[k], w1(w, (size_t)n * K + k, bf16), s);
    c->out[(size_t)m * c->N + n] = s;
}

/* Rows m, m + 1 of x against weight rows n .. n + 3: written out, so the eight sums stay in
 * registers (GCC -O2 does not unroll loops over them). */
__attribute__((target("avx2,fma"), always_inline)) static inline void dot_2x4(const gemm_ctx *c, int m, int n, bool bf16)
{
    const void *w = bf16 ? (const void *)c->wh : (const void *)c->w;
    size_t K = (size_t)c->K, r0 = (size_t)n * K, r1 = r0 + K, r2 = r1 + K, r3 = r2 + K;
    const float *x0 = c->x + (size_t)m * K, *x1 = x0 + K;
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    size_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256 xal, xah, xbl, xbh;
        f16x(x0 + k, &xal, &xah);
        f16x(x1 + k, &xbl, &xbh);
        a00 = w16(w, r0 + k, bf16, xal, xah, a00);
        a10 = w16(w, r0 + k, bf16, xbl, xbh, a10);
        a01 = w16(w, r1 + k, bf16, xal, xah, a01);
        a11 = w16(w, r1 + k, bf16, xbl, xbh, a11);
        a02 = w16(w, r2 + k, bf16, xal, xah, a02);
        a12 = w16(w, r2 + k, bf16, xbl, xbh, a12);
        a03 = w16(w, r3 + k, bf16, xal, xah, a03);
        a13 = w16(w, r3 + k, bf16, xbl, xbh, a13);
    }
    for (; k + 8 <= K; k += 8) {
        __m256 w0 = w8(w, r0 + k, bf16), w1v = w8(w, r1 + k, bf16), w2 = w8(w, r2 + k, bf16), w3 = w8(w, r3 + k, bf16);
        __m256 xa = _mm256_loadu_ps(x0 + k), xb = _mm256_loadu_ps(x1 + k);
        a00 = _mm256_fmadd_ps(xa, w0, a00);
        a01 = _mm256_fmadd_ps(xa, w1v, a01);
        a02 = _mm256_fmadd_ps(xa, w2, a02);
        a03 = _mm256_fmadd_ps(xa, w3, a03);
        a10 = _mm256_fmadd_ps(xb, w0, a10);
        a11 = _mm256_fmadd_ps(xb, w1v, a11);
        a12 = _mm256_fmadd_ps(xb, w2, a12);
        a13 = _mm256_fmadd_ps(xb, w3, a13);
    }
    dot_end(c, w, bf16, m, n, k, a00);
    dot_end(c, w, bf16, m, n + 1, k, a01);
    dot_end(c, w, bf16, m, n + 2, k, a02);
    dot_end(c, w, bf16, m, n + 3, k, a03);
    dot_end(c, w, bf16, m + 1, n, k, a10);
    dot_end(c, w, bf16, m + 1, n + 1, k, a11);
    dot_end(c, w, bf16, m + 1, n + 2, k, a12);
    dot_end(c, w, bf16, m + 1, n + 3, k, a13);
}

__attribute__((target("avx2,fma"), always_inline)) static inline void dot_1x4w(const gemm_ctx *c, int m, int n, bool bf16)
{
    const void *w = bf16 ? (const void *)c->wh : (const void *)c->w;
    size_t K = (size_t)c->K, r0 = (size_t)n * K, r1 = r0 + K, r2 = r1 + K, r3 = r2 + K;
    const float *x0 = c->x + (size_t)m * K;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256 xl, xh;
        f16x(x0 + k, &xl, &xh);
        a0 = w16(w, r0 + k, bf16, xl, xh, a0);
        a1 = w16(w, r1 + k, bf16, xl, xh, a1);
        a2 = w16(w, r2 + k, bf16, xl, xh, a2);
        a3 = w16(w, r3 + k, bf16, xl, xh, a3);
    }
    for (; k + 8 <= K; k += 8) {
        __m256 xa = _mm256_loadu_ps(x0 + k);
        a0 = _mm256_fmadd_ps(xa, w8(w, r0 + k, bf16), a0);
        a1 = _mm256_fmadd_ps(xa, w8(w, r1 + k, bf16), a1);
        a2 = _mm256_fmadd_ps(xa, w8(w, r2 + k, bf16), a2);
        a3 = _mm256_fmadd_ps(xa, w8(w, r3 + k, bf16), a3);
    }
    dot_end(c, w, bf16, m, n, k, a0);
    dot_end(c, w, bf16, m, n + 1, k, a1);
    dot_end(c, w, bf16, m, n + 2, k, a2);
    dot_end(c, w, bf16, m, n + 3, k, a3);
}

__attribute__((target("avx2,fma"), always_inline)) static inline void dot_1x1w(const gemm_ctx *c, int m, int n, bool bf16)
{
    const void *w = bf16 ? (const void *)c->wh : (const void *)c->w;
    size_t K = (size_t)c->K, r0 = (size_t)n * K;
    const float *x0 = c->x + (size_t)m * K;
    __m256 a0 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m256 xl, xh;
        f16x(x0 + k, &xl, &xh);
        a0 = w16(w, r0 + k, bf16, xl, xh, a0);
    }
    for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x0 + k), w8(w, r0 + k, bf16), a0);
    dot_end(c, w, bf16, m, n, k, a0);
}

__attribute__((target("avx2,fma"), always_inline)) static inline void gemv_rows(const gemm_ctx *c, int n0, int n1,
                                                                             bool bf16)
{
    int n = n0;
    for (; n + 4 <= n1; n += 4) {
        int m = 0;
        for (; m + 2 <= c->M; m += 2) dot_2x4(c, m, n, bf16);
        if (m < c->M) dot_1x4w(c, m, n, bf16);
    }
    for (; n < n1; n++)
        for (int m = 0; m < c->M; m++) dot_1x1w(c, m, n, bf16);
}

__attribute__((target("avx2,fma"))) static void gemv_task_f32(void *p, int64_t b, int64_t e)
{
    gemv_rows(p, (int)b, (int)e, false);
}

__attribute__((target("avx2,fma"))) static void gemv_task_bf16(void *p, int64_t b, int64_t e)
{
    gemv_rows(p, (int)b, (int)e, true);
}
#endif

/* Tile t of an m × n grid: fp32 weights go row block by row block (the x rows stay
 * in cache), bf16 ones column block by column block (a task widens a block's
 * weight rows once for its tiles). The order changes no result. */
static void tile_at(const gemm_ctx *c, int64_t t, int tm, int tn, int *m0, int *n0)
{
    if (c->wh) {
        *n0 = (int)(t / c->n_tiles_m) * tn;
        *m0 = (int)(t % c->n_tiles_m) * tm;
    } else {
        *m0 = (int)(t / c->n_tiles_n) * tm;
        *n0 = (int)(t % c->n_tiles_n) * tn;
    }
}

/* Four dot products of one x row against four w rows, sharing the x loads. */
static void dot_1x4(const float *x, const float *w, size_t ldw, int K, float *o)
{
    const float *w0 = w, *w1 = w + ldw, *w2 = w + 2 * ldw, *w3 = w + 3 * ldw;
    v4f a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 };
    int k = 0;
    for (; k + 4 <= K; k += 4) {
        v4f xv = ld4(x + k);
        a0 += xv * ld4(w0 + k);
        a1 += xv * ld4(w1 + k);
        a2 += xv * ld4(w2 + k);
        a3 += xv * ld4(w3 + k);
    }
    float s0 = hsum4(a0), s1 = hsum4(a1), s2 = hsum4(a2), s3 = hsum4(a3);
    for (; k < K; k++) {
        s0 += x[k] * w0[k];
        s1 += x[k] * w1[k];
        s2 += x[k] * w2[k];
        s3 += x[k] * w3[k];
    }
    o[0] = s0; o[1] = s1; o[2] = s2; o[3] = s3;
}

static void gemm_tile_task(void *p, int64_t b, int64_t e)
{
    const gemm_ctx *c = p;
    wide_rows r = { 0 };
    for (int64_t t = b; t < e; t++) {
        int m0, n0;
        tile_at(c, t, GEMM_TILE, GEMM_TILE, &m0, &n0);
        int m1 = m0 + GEMM_TILE < c->M ? m0 + GEMM_TILE : c->M;
        int n1 = n0 + GEMM_TILE < c->N ? n0 + GEMM_TILE : c->N;
        const float *w = w_rows(c, &r, n0, n1 - n0);
        if (!w) break;
        for (int m = m0; m < m1; m++) {
            const float *xr = c->x + (size_t)m * c->K;
            float *orow = c->out + (size_t)m * c->N;
            int n = n0;
            for (; n + 4 <= n1; n += 4)
                dot_1x4(xr, w + (size_t)(n - n0) * c->K, (size_t)c->K, c->K, orow + n);
            for (; n < n1; n++)
                orow[n] = dot_f32(xr, w + (size_t)(n - n0) * c->K, c->K);
        }
    }
    wide_rows_clear(&r);
}

static void bias_task(void *p, int64_t b, int64_t e)
{
    const gemm_ctx *c = p;
    for (int64_t m = b; m < e; m++) {
        float *o = c->out + (size_t)m * c->N;
        for (int n = 0; n < c->N; n++) o[n] += c->bias[n];
    }
}

#if HYOCR_HAVE_BLAS
/* OpenBLAS splits a GEMM between its threads at places that depend on the
 * thread count, and the split changes the rounding. So OpenBLAS runs single-
 * threaded on fixed tiles (multiples of its micro-kernel sizes) and the tiles
 * go to our pool. */
#define BLAS_TILE_M 512
#define BLAS_TILE_N 256

static void blas_tile_task(void *p, int64_t b, int64_t e)
{
    const gemm_ctx *c = p;
    wide_rows r = { 0 };
    for (int64_t t = b; t < e; t++) {
        int m0, n0;
        tile_at(c, t, BLAS_TILE_M, BLAS_TILE_N, &m0, &n0);
        int mm = c->M - m0 < BLAS_TILE_M ? c->M - m0 : BLAS_TILE_M;
        int nn = c->N - n0 < BLAS_TILE_N ? c->N - n0 : BLAS_TILE_N;
        const float *x = c->x + (size_t)m0 * c->K;
        float *o = c->out + (size_t)m0 * c->N + n0;
        const float *w = w_rows(c, &r, n0, nn);
        if (!w) break;
        if (mm == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, nn, c->K, 1.0f, w, c->K, x, 1, 0.0f, o, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mm, nn, c->K, 1.0f, x, c->K, w, c->K,
                        0.0f, o, c->N);
    }
    wide_rows_clear(&r);
}

#endif

/* OpenBLAS runs single-threaded inside our own pool. */
static void blas_single_thread(void)
{
#if HYOCR_HAVE_BLAS
    if (openblas_set_num_threads && openblas_get_num_threads && openblas_get_num_threads() != 1)
        openblas_set_num_threads(1);
#endif
}

static void blas_gemm(hyocr_backend *be, gemm_ctx *c)
{
#if HYOCR_HAVE_BLAS
    blas_single_thread();
    c->n_tiles_n = (c->N + BLAS_TILE_N - 1) / BLAS_TILE_N;
    c->n_tiles_m = (c->M + BLAS_TILE_M - 1) / BLAS_TILE_M;
    run(be, (int64_t)c->n_tiles_m * c->n_tiles_n, 1, blas_tile_task, c);
#endif
}

static bool cpu_matmul(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, const hyocr_buf *w, size_t w_off,
                       const hyocr_buf *bias, int M, int N, int K, GError **error)
{
    if (!DIMS_OK("matmul", error, M, N, K) ||
        !need("matmul", "out", out, (size_t)M * N, error) || !need("matmul", "x", x, (size_t)M * K, error) ||
        !need_as("matmul", "w", w, w_off + (size_t)N * K, true, error) ||
        (bias && !need("matmul", "bias", bias, (size_t)N, error)))
        return false;
    if (M == 0 || N == 0) return true;
    atomic_int oom = 0;
    bool bf16 = w->elem_size == 2;
    gemm_ctx c = { F(x), bf16 ? NULL : F(w) + w_off, bias ? F(bias) : NULL,
                   bf16 ? (const uint16_t *)w->data + w_off : NULL, F(out), M, N, K, 0, 0, &oom, CB(be)->avx2 };
    if (K == 0) {
        memset(c.out, 0, (size_t)M * N * sizeof(float));
#ifdef HAVE_AVX2_PATH
    } else if (M <= GEMV_MAX_ROWS && c.avx2) {
        run(be, N, 64, bf16 ? gemv_task_bf16 : gemv_task_f32, &c);
#endif
    } else if (CB(be)->use_blas) {
        blas_gemm(be, &c);
    } else {
        c.n_tiles_n = (N + GEMM_TILE - 1) / GEMM_TILE;
        c.n_tiles_m = (M + GEMM_TILE - 1) / GEMM_TILE;
        run(be, (int64_t)c.n_tiles_m * c.n_tiles_n, 1, gemm_tile_task, &c);
    }
    if (atomic_load(&oom)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: matmul: out of host memory for a block of weight rows of %d widened to fp32"), K);
        return false;
    }
    if (bias) run(be, M, 16, bias_task, &c);
    return true;
}

/* ---------------------------------------------------------------- norms and pointwise */

typedef struct {
    float       *out, *res;
    const float *delta, *g, *b;
    int          N;
    float        eps;
} norm_ctx;

static void layernorm_task(void *p, int64_t b, int64_t e)
{
    const norm_ctx *c = p;
    int N = c->N;
    for (int64_t m = b; m < e; m++) {
        float *r = c->res + (size_t)m * N, *o = c->out + (size_t)m * N;
        if (c->delta) {
            const float *d = c->delta + (size_t)m * N;
            for (int i = 0; i < N; i++) r[i] += d[i];
        }
        /* Two passes in double: mean and biased variance carry no error worth
         * the name, so the output is as close to the true LayerNorm as fp32
         * allows (torch's float Welford lands within a few ulp of it). */
        double s = 0.0;
        for (int i = 0; i < N; i++) s += r[i];
        double mean = s / N, v = 0.0;
        for (int i = 0; i < N; i++) {
            double dx = r[i] - mean;
            v += dx * dx;
        }
        double rstd = 1.0 / sqrt(v / N + (double)c->eps);
        for (int i = 0; i < N; i++)
            o[i] = (float)(((double)r[i] - mean) * rstd * c->g[i] + c->b[i]);
    }
}

static bool cpu_add_layernorm(hyocr_backend *be, hyocr_buf *out, hyocr_buf *residual, const hyocr_buf *delta,
                              const hyocr_buf *gamma, const hyocr_buf *beta, int M, int N, float eps,
                              GError **error)
{
    size_t mn = (size_t)M * N;
    if (!DIMS_OK("add_layernorm", error, M, N) || !need("add_layernorm", "out", out, mn, error) ||
        !need("add_layernorm", "residual", residual, mn, error) ||
        (delta && !need("add_layernorm", "delta", delta, mn, error)) ||
        !need("add_layernorm", "gamma", gamma, (size_t)N, error) ||
        !need("add_layernorm", "beta", beta, (size_t)N, error))
        return false;
    if (N == 0) return true;
    norm_ctx c = { F(out), F(residual), delta ? F(delta) : NULL, F(gamma), F(beta), N, eps };
    run(be, M, 4, layernorm_task, &c);
    return true;
}

/* HF RMSNorm in fp32: x · rsqrt(mean(x²) + eps), then · w, each product rounded
 * to float as torch does (mean computed more accurately than torch's float sum,
 * then rounded). */
static void rmsnorm_row(const float *x, const float *w, float *o, int N, float eps)
{
    double s = 0.0;
    for (int i = 0; i < N; i++) s += (double)x[i] * x[i];
    float var = (float)(s / N);
    float rs = 1.0f / sqrtf(var + eps);
    for (int i = 0; i < N; i++) {
        float n = x[i] * rs;
        o[i] = w[i] * n;
    }
}

static void rmsnorm_task(void *p, int64_t b, int64_t e)
{
    const norm_ctx *c = p;
    int N = c->N;
    for (int64_t m = b; m < e; m++) {
        float *r = c->res + (size_t)m * N;
        if (c->delta) {
            const float *d = c->delta + (size_t)m * N;
            for (int i = 0; i < N; i++) r[i] += d[i];
        }
        rmsnorm_row(r, c->g, c->out + (size_t)m * N, N, c->eps);
    }
}

static bool cpu_add_rmsnorm(hyocr_backend *be, hyocr_buf *out, hyocr_buf *residual, const hyocr_buf *delta,
                            const hyocr_buf *w, int M, int N, float eps, GError **error)
{
    size_t mn = (size_t)M * N;
    if (!DIMS_OK("add_rmsnorm", error, M, N) || !need("add_rmsnorm", "out", out, mn, error) ||
        !need("add_rmsnorm", "residual", residual, mn, error) ||
        (delta && !need("add_rmsnorm", "delta", delta, mn, error)) ||
        !need("add_rmsnorm", "weight", w, (size_t)N, error))
        return false;
    if (N == 0) return true;
    norm_ctx c = { F(out), F(residual), delta ? F(delta) : NULL, F(w), NULL, N, eps };
    run(be, M, 4, rmsnorm_task, &c);
    return true;
}

typedef struct {
    float       *x;
    const float *y;
    int          I;
} pw_ctx;

static void add_task(void *p, int64_t b, int64_t e)
{
    const pw_ctx *c = p;
    for (int64_t i = b; i < e; i++) c->x[i] += c->y[i];
}

static bool cpu_add(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *y, size_t n, GError **error)
{
    if (!need("add", "x", x, n, error) || !need("add", "y", y, n, error)) return false;
    pw_ctx c = { F(x), F(y), 0 };
    run(be, (int64_t)n, 1 << 14, add_task, &c);
    return true;
}

/* Exact-erf GELU, x·Φ(x), without erff (which costs ~12 ns an element):
 * erfc(u) = t·exp(g(t) − u²) with t = 1/(1 + u/2) and g a degree-10 Chebyshev
 * fit made for this file (relative error ≤ 1e-7 for all u ≥ 0). Working from
 * erfc(|x|/√2) keeps the negative tail relative error below 1e-5 down to
 * x = −9 (where the textbook 1 + erf(x/√2) has cancelled to nothing); the
 * rounding of u² is what limits it there. */
static const float gelu_g[11] = {
    4.7696499253e-03f, 1.4636139005e-01f, -7.6845809802e-01f, 1.4231719611e+00f,
    -1.0869556313e+00f, 2.5671507328e-01f, -1.8006151414e-01f, 9.5772412568e-02f,
    3.7417608815e-01f, 1.0000209430e+00f, -1.2655122103e+00f,
};

static inline v4f gelu4(v4f x)
{
    v4i bits, sign_mask = { INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX };
    memcpy(&bits, &x, sizeof bits);
    bits &= sign_mask;
    v4f ax;
    memcpy(&ax, &bits, sizeof ax);
    v4f u = ax * (float)M_SQRT1_2;
    v4f t = 1.0f / (1.0f + 0.5f * u);
    v4f g = (v4f){ 0 } + gelu_g[0];
    for (int i = 1; i < 11; i++) g = g * t + gelu_g[i];
    v4f half_erfc = 0.5f * t * exp4(g - u * u);
    v4f phi = select4(x >= 0.0f, 1.0f - half_erfc, half_erfc);
    return x * phi;
}

static void gelu_task(void *p, int64_t b, int64_t e)
{
    const pw_ctx *c = p;
    int64_t i = b;
    for (; i + 4 <= e; i += 4) st4(c->x + i, gelu4(ld4(c->x + i)));
    if (i < e) {
        float tail[4] = { 0 };
        memcpy(tail, c->x + i, (size_t)(e - i) * sizeof(float));
        st4(tail, gelu4(ld4(tail)));
        memcpy(c->x + i, tail, (size_t)(e - i) * sizeof(float));
    }
}

static bool cpu_gelu(hyocr_backend *be, hyocr_buf *x, size_t n, GError **error)
{
    if (!need("gelu", "x", x, n, error)) return false;
    pw_ctx c = { F(x), NULL, 0 };
    run(be, (int64_t)n, 1 << 13, gelu_task, &c);
    return true;
}

/* rows of gu: [gate (I) | up (I)]; out rows: I. silu(g) = g / (1 + e^−g), with
 * exp4 (≤ 1 ulp) in place of expf. */
static void swiglu_task(void *p, int64_t b, int64_t e)
{
    const pw_ctx *c = p;
    int I = c->I;
    for (int64_t m = b; m < e; m++) {
        const float *g = c->y + (size_t)m * 2 * I, *u = g + I;
        float *o = c->x + (size_t)m * I;
        int i = 0;
        for (; i + 4 <= I; i += 4) {
            v4f gv = ld4(g + i);
            st4(o + i, gv / (1.0f + exp4(-gv)) * ld4(u + i));
        }
        for (; i < I; i++) {
            float gi[4] = { g[i] }, s[4];
            st4(s, ld4(gi) / (1.0f + exp4(-ld4(gi))));
            o[i] = s[0] * u[i];
        }
    }
}

static bool cpu_swiglu(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *gu, int M, int I, GError **error)
{
    if (!DIMS_OK("swiglu", error, M, I) || !need("swiglu", "out", out, (size_t)M * I, error) ||
        !need("swiglu", "gate_up", gu, (size_t)M * 2 * I, error))
        return false;
    pw_ctx c = { F(out), F(gu), I };
    run(be, M, 1, swiglu_task, &c);
    return true;
}

/* The fused decode products, composed from the unfused ops (the CPU gains
 * nothing from fusing them; this keeps both backends on one decode path). */
static bool cpu_norm_matmul(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *residual, const hyocr_buf *norm_w,
                            float eps, const hyocr_buf *w, int M, int N, int K, bool glu, GError **error)
{
    if (!DIMS_OK("norm_matmul", error, M, N, K) || !need("norm_matmul", "out", out, (size_t)M * N, error) ||
        !need("norm_matmul", "residual", residual, (size_t)M * K, error) ||
        !need("norm_matmul", "norm weight", norm_w, (size_t)K, error) ||
        !need_as("norm_matmul", "w", w, (size_t)(glu ? 2 : 1) * N * K, true, error))
        return false;
    if (M == 0 || N == 0 || K == 0) return cpu_matmul(be, out, residual, w, 0, NULL, M, N, 0, error);
    g_autofree float *xn = g_new(float, (size_t)M * K);
    hyocr_buf xb = { HYOCR_BUF_ACT, sizeof(float), (size_t)M * K, xn };
    if (!cpu_add_rmsnorm(be, &xb, (hyocr_buf *)residual, NULL, norm_w, M, K, eps, error)) return false;
    if (!glu) return cpu_matmul(be, out, &xb, w, 0, NULL, M, N, K, error);
    g_autofree float *gu = g_new(float, (size_t)M * 2 * N);
    hyocr_buf gb = { HYOCR_BUF_ACT, sizeof(float), (size_t)M * 2 * N, gu };
    return cpu_matmul(be, &gb, &xb, w, 0, NULL, M, 2 * N, K, error) && cpu_swiglu(be, out, &gb, M, N, error);
}

static bool cpu_matmul_residual(hyocr_backend *be, hyocr_buf *residual, const hyocr_buf *x, const hyocr_buf *w, int M,
                                int N, int K, GError **error)
{
    if (!DIMS_OK("matmul_residual", error, M, N, K) ||
        !need("matmul_residual", "residual", residual, (size_t)M * N, error))
        return false;
    if (M == 0 || N == 0) return true;
    g_autofree float *d = g_new(float, (size_t)M * N);
    hyocr_buf db = { HYOCR_BUF_ACT, sizeof(float), (size_t)M * N, d };
    return cpu_matmul(be, &db, x, w, 0, NULL, M, N, K, error) && cpu_add(be, residual, &db, (size_t)M * N, error);
}

/* Composed from the unfused ops, they take any shape (the CPU fuses only when told: HYOCR_FUSE=1). */
static int cpu_fused_rows(hyocr_backend *be, int K, bool norm)
{
    return INT_MAX;
}

/* ---------------------------------------------------------------- vision helpers */

typedef struct {
    int   i0, i1;
    float l0, l1;
} lerp_tap;

/* PyTorch's bilinear source index (align_corners=False) along one axis. */
static void lerp_taps(lerp_tap *t, int out, int in, float scale, bool copy)
{
    for (int i = 0; i < out; i++) {
        if (copy) {
            t[i] = (lerp_tap){ i, i, 1.0f, 0.0f };
            continue;
        }
        float src = scale * ((float)i + 0.5f) - 0.5f;
        if (src < 0.0f) src = 0.0f;
        int i0 = (int)src;
        if (i0 > in - 1) i0 = in - 1;
        float l1 = src - (float)i0;
        t[i] = (lerp_tap){ i0, i0 + (i0 < in - 1), 1.0f - l1, l1 };
    }
}

typedef struct {
    float          *x;
    const float    *tab;
    const lerp_tap *ty, *tx;
    int             edge, gw, C;
} posemb_ctx;

static void posemb_task(void *p, int64_t b, int64_t e)
{
    const posemb_ctx *c = p;
    int C = c->C;
    for (int64_t cell = b; cell < e; cell++) {
        const lerp_tap *y = &c->ty[cell / c->gw], *x = &c->tx[cell % c->gw];
        const float *p00 = c->tab + ((size_t)y->i0 * c->edge + x->i0) * C;
        const float *p01 = c->tab + ((size_t)y->i0 * c->edge + x->i1) * C;
        const float *p10 = c->tab + ((size_t)y->i1 * c->edge + x->i0) * C;
        const float *p11 = c->tab + ((size_t)y->i1 * c->edge + x->i1) * C;
        float *o = c->x + (size_t)cell * C;
        for (int ch = 0; ch < C; ch++) {
            float top = x->l0 * p00[ch] + x->l1 * p01[ch];
            float bot = x->l0 * p10[ch] + x->l1 * p11[ch];
            o[ch] += y->l0 * top + y->l1 * bot;
        }
    }
}

static bool cpu_posemb_add(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *table, size_t table_row0,
                           int edge, int gh, int gw, int C, hyocr_posemb_interp interp, GError **error)
{
    if (edge <= 0 || gh <= 0 || gw <= 0 || C <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: posemb_add: invalid sizes edge %d, grid %d×%d, C %d"), edge, gh, gw, C);
        return false;
    }
    if (!need("posemb_add", "x", x, (size_t)gh * gw * C, error) ||
        !need("posemb_add", "table", table, (table_row0 + (size_t)edge * edge) * C, error))
        return false;
    lerp_tap *ty = g_try_new(lerp_tap, gh), *tx = g_try_new(lerp_tap, gw);
    if (!ty || !tx) {
        g_free(ty);
        g_free(tx);
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: posemb_add: out of memory for %zu bytes of interpolation taps"),
                    (size_t)(gh + gw) * sizeof(lerp_tap));
        return false;
    }
    /* torch copies the table when the grid is edge×edge. With R1 an axis of
     * unchanged size gets scale 1, i.e. a copy, anyway. With R2 its scale is
     * edge/(edge + 0.1): torch's CUDA kernel (where the R2 references run)
     * interpolates such an axis, its CPU kernel copies it; we follow CUDA. */
    bool copy = gh == edge && gw == edge;
    lerp_taps(ty, gh, edge, hyocr_posemb_scale(gh, edge, copy, interp), copy);
    lerp_taps(tx, gw, edge, hyocr_posemb_scale(gw, edge, copy, interp), copy);
    posemb_ctx c = { F(x), F(table) + table_row0 * C, ty, tx, edge, gw, C };
    run(be, (int64_t)gh * gw, 8, posemb_task, &c);
    g_free(ty);
    g_free(tx);
    return true;
}

typedef struct {
    float       *out;
    const float *x, *nl;
    int          a, b, C;   /* merge: gw, gh; newline: Wm, Hm */
} grid_ctx;

static void merge_task(void *p, int64_t b, int64_t e)
{
    const grid_ctx *c = p;
    int gw = c->a, wm = gw / 2, C = c->C;
    for (int64_t r = b; r < e; r++) {
        int i = (int)(r / wm), j = (int)(r % wm);
        float *o = c->out + (size_t)r * 4 * C;
        const float *s[4];
        for (int q = 0; q < 4; q++)
            s[q] = c->x + ((size_t)(2 * i + q / 2) * gw + (2 * j + q % 2)) * C;
        for (int ch = 0; ch < C; ch++)
            for (int q = 0; q < 4; q++) o[ch * 4 + q] = s[q][ch];
    }
}

static bool cpu_merge_gather(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, int gh, int gw, int C,
                             GError **error)
{
    if (gh <= 0 || gw <= 0 || C <= 0 || gh % 2 || gw % 2) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: merge_gather: grid %d×%d (C %d) must be positive and even"), gh, gw, C);
        return false;
    }
    size_t n = (size_t)gh * gw * C;
    if (!need("merge_gather", "out", out, n, error) || !need("merge_gather", "x", x, n, error)) return false;
    grid_ctx c = { F(out), F(x), NULL, gw, gh, C };
    run(be, (int64_t)(gh / 2) * (gw / 2), 16, merge_task, &c);
    return true;
}

static void newline_task(void *p, int64_t b, int64_t e)
{
    const grid_ctx *c = p;
    int wm = c->a, C = c->C;
    for (int64_t r = b; r < e; r++) {
        int i = (int)(r / (wm + 1)), j = (int)(r % (wm + 1));
        const float *s = j == wm ? c->nl : c->x + ((size_t)i * wm + j) * C;
        memcpy(c->out + (size_t)r * C, s, (size_t)C * sizeof(float));
    }
}

static bool cpu_append_newline(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, const hyocr_buf *newline,
                               int Hm, int Wm, int C, GError **error)
{
    if (!DIMS_OK("append_newline", error, Hm, Wm, C) ||
        !need("append_newline", "out", out, (size_t)Hm * (Wm + 1) * C, error) ||
        !need("append_newline", "x", x, (size_t)Hm * Wm * C, error) ||
        !need("append_newline", "newline", newline, (size_t)C, error))
        return false;
    grid_ctx c = { F(out), F(x), F(newline), Wm, Hm, C };
    run(be, (int64_t)Hm * (Wm + 1), 16, newline_task, &c);
    return true;
}

/* ---------------------------------------------------------------- attention core */

/* Flash-style attention over one tile of up to ATT_QMAX query vectors: keys go
 * in blocks of ATT_KB, scores and the value sum of a block are two small GEMMs
 * (on copies of the rows into contiguous scratch), and an online softmax
 * carries the row maxima and sums between blocks, so memory stays
 * O(tile · block). Key j is visible to query i when j < limit[i]. Block
 * boundaries depend only on the key index, and the tile's layout only on the
 * shapes, so results do not depend on the thread count. */

typedef struct {
    int          nq, D;
    float        scale;
    bool         gemm;               /* scores and sums as GEMMs (all koff equal) */
    bool         avx2;
    float       *qt;                 /* [ATT_QMAX, D] gathered queries */
    float       *out[ATT_QMAX];
    int          limit[ATT_QMAX];
    int          koff[ATT_QMAX];     /* offset of query i's head in a key/value row */
} att_tile;

/* Points kp[j], vp[j] at the key and value rows of key j0 + j, j < n. */
typedef void (*att_keys_fn)(const void *ctx, int j0, int n, const float **kp, const float **vp);

/* Per-item scratch: gathered queries, key and value block, scores, accumulator. */
typedef struct {
    float *q, *k, *v, *s, *acc;
} att_scratch;

static float *att_scratch_new(int D, att_scratch *s)
{
    size_t qd = (size_t)ATT_QMAX * D, kd = (size_t)ATT_KB * D;
    void *p = NULL;
    if (posix_memalign(&p, CPU_ALIGN, (2 * qd + 2 * kd + (size_t)ATT_QMAX * ATT_KB) * sizeof(float)))
        return NULL;
    float *mem = p;
    s->q = mem;
    s->k = s->q + qd;
    s->v = s->k + kd;
    s->acc = s->v + kd;
    s->s = s->acc + qd;
    return mem;
}

static float max_row(const float *s, int n)
{
    v4f a = { -INFINITY, -INFINITY, -INFINITY, -INFINITY }, b = a;
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        v4f x = ld4(s + j), y = ld4(s + j + 4);
        a = select4(x > a, x, a);
        b = select4(y > b, y, b);
    }
    a = select4(b > a, b, a);
    float m = a[0];
    for (int k = 1; k < 4; k++) m = a[k] > m ? a[k] : m;
    for (; j < n; j++) m = s[j] > m ? s[j] : m;
    return m;
}

#ifdef HAVE_AVX2_PATH
/* exp4's method with 8 lanes and FMA: the softmax is a third of the attention
 * time with SSE alone. Chosen once per machine, so results stay fixed there. */
__attribute__((target("avx2,fma"))) static float exp_row_avx2(float *s, int n, float m)
{
    const __m256 hi = _mm256_set1_ps(88.0f), lo = _mm256_set1_ps(-87.0f), vm = _mm256_set1_ps(m);
    __m256 sum = _mm256_setzero_ps();
    for (int j = 0; j < n; j += 8) {
        int k = n - j < 8 ? n - j : 8;
        float tail[8];
        const float *src = s + j;
        if (k < 8) {   /* pad the last chunk with lanes that are dropped */
            for (int q = 0; q < 8; q++) tail[q] = q < k ? s[j + q] : m;
            src = tail;
        }
        __m256 x = _mm256_sub_ps(_mm256_loadu_ps(src), vm);
        x = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
        __m256 nn = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 r = _mm256_fnmadd_ps(nn, _mm256_set1_ps(0.693359375f), x);
        r = _mm256_fnmadd_ps(nn, _mm256_set1_ps(-2.12194440e-4f), r);
        __m256 p = _mm256_set1_ps(1.9890980870e-04f);
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3933641032e-03f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3333109344e-03f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1666465006e-02f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666666682e-01f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000000135e-01f));
        p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
        __m256i e2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nn), _mm256_set1_epi32(127)), 23);
        __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(e2));
        if (k < 8) {
            _mm256_storeu_ps(tail, e);
            for (int q = 0; q < 8; q++) tail[q] = q < k ? tail[q] : 0.0f;
            memcpy(s + j, tail, (size_t)k * sizeof(float));
            e = _mm256_loadu_ps(tail);
        } else {
            _mm256_storeu_ps(s + j, e);
        }
        sum = _mm256_add_ps(sum, e);
    }
    float v[8];
    _mm256_storeu_ps(v, sum);
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

static bool cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static bool cpu_has_avx2(void) { return false; }
#endif

/* s[j] = exp(s[j] − m) for j < n; returns their sum */
static float exp_row(float *s, int n, float m, bool avx2)
{
#ifdef HAVE_AVX2_PATH
    if (avx2) return exp_row_avx2(s, n, m);
#endif
    v4f vm = { m, m, m, m }, sum = { 0 }, sum2 = { 0 };
    int j = 0;
    for (; j + 8 <= n; j += 8) {   /* two independent chains */
        v4f e = exp4(ld4(s + j) - vm), f = exp4(ld4(s + j + 4) - vm);
        st4(s + j, e);
        st4(s + j + 4, f);
        sum += e;
        sum2 += f;
    }
    for (; j + 4 <= n; j += 4) {
        v4f e = exp4(ld4(s + j) - vm);
        st4(s + j, e);
        sum += e;
    }
    float total = hsum4(sum + sum2);
    if (j < n) {
        float tail[4] = { m, m, m, m };
        memcpy(tail, s + j, (size_t)(n - j) * sizeof(float));
        st4(tail, exp4(ld4(tail) - vm));
        for (int k = 0; k < n - j; k++) {
            s[j + k] = tail[k];
            total += tail[k];
        }
    }
    return total;
}

/* Below this many queries the GEMMs would mostly wait for the copies into
 * contiguous blocks, so dot products read the keys where they are. */
#define ATT_DIRECT_MAX 8

static bool att_want_gemm(bool use_blas, int nq)
{
    return HYOCR_HAVE_BLAS && use_blas && nq > ATT_DIRECT_MAX;
}

/* s[nq, nb] = scale · q[nq, D] · k[nb, D]ᵀ; kb, vb receive the rows for the GEMMs. */
static void att_scores(const att_tile *t, const float *const *kp, const float *const *vp, int nb,
                       float *kb, float *vb, float *s)
{
    int D = t->D;
#if HYOCR_HAVE_BLAS
    if (t->gemm) {
        for (int j = 0; j < nb; j++) {
            memcpy(kb + (size_t)j * D, kp[j] + t->koff[0], (size_t)D * sizeof(float));
            memcpy(vb + (size_t)j * D, vp[j] + t->koff[0], (size_t)D * sizeof(float));
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t->nq, nb, D, t->scale, t->qt, D,
                    kb, D, 0.0f, s, ATT_KB);
        return;
    }
#endif
    for (int j = 0; j < nb; j++)
        for (int i = 0; i < t->nq; i++)
            s[(size_t)i * ATT_KB + j] = dot_f32(t->qt + (size_t)i * D, kp[j] + t->koff[i], D) * t->scale;
}

/* acc[nq, D] += p[nq, nb] · v[nb, D] */
static void att_values(const att_tile *t, const float *p, const float *const *vp, const float *vb, int nb,
                       float *acc)
{
#if HYOCR_HAVE_BLAS
    if (t->gemm) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t->nq, t->D, nb, 1.0f, p, ATT_KB,
                    vb, t->D, 1.0f, acc, t->D);
        return;
    }
#endif
    for (int j = 0; j < nb; j++)
        for (int i = 0; i < t->nq; i++)
            axpy(acc + (size_t)i * t->D, p[(size_t)i * ATT_KB + j], vp[j] + t->koff[i], t->D);
}

static void att_run(const att_tile *t, const att_scratch *w, att_keys_fn keys, const void *kctx)
{
    int D = t->D, n_keys = 0;
    float m[ATT_QMAX], l[ATT_QMAX];
    for (int i = 0; i < t->nq; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        if (t->limit[i] > n_keys) n_keys = t->limit[i];
    }
    memset(w->acc, 0, (size_t)t->nq * D * sizeof(float));
    for (int j0 = 0; j0 < n_keys; j0 += ATT_KB) {
        int nb = n_keys - j0 < ATT_KB ? n_keys - j0 : ATT_KB;
        const float *kp[ATT_KB], *vp[ATT_KB];
        keys(kctx, j0, nb, kp, vp);
        att_scores(t, kp, vp, nb, w->k, w->v, w->s);
        for (int i = 0; i < t->nq; i++) {
            float *s = w->s + (size_t)i * ATT_KB, *acc = w->acc + (size_t)i * D;
            int nv = t->limit[i] - j0 < nb ? t->limit[i] - j0 : nb;
            if (nv <= 0) {   /* causal: nothing visible in this block */
                memset(s, 0, (size_t)nb * sizeof(float));
                continue;
            }
            float mb = max_row(s, nv);
            float mn = mb > m[i] ? mb : m[i];
            float corr = expf(m[i] - mn);   /* 0 on the first block */
            m[i] = mn;
            l[i] = l[i] * corr + exp_row(s, nv, mn, t->avx2);
            for (int j = nv; j < nb; j++) s[j] = 0.0f;
            if (corr != 1.0f)
                for (int d = 0; d < D; d++) acc[d] *= corr;
        }
        att_values(t, w->s, vp, w->v, nb, w->acc);
    }
    for (int i = 0; i < t->nq; i++) {
        const float *acc = w->acc + (size_t)i * D;
        float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        for (int d = 0; d < D; d++) t->out[i][d] = acc[d] * inv;
    }
}

/* ---------------------------------------------------------------- attention_full */

typedef struct {
    float       *out;
    const float *qkv;
    int          n, H, D, n_tiles;
    float        scale;
    bool         use_blas, avx2;
    atomic_int   oom;
} full_ctx;

typedef struct {
    const float *k;     /* k of key 0 for this head */
    size_t       row;   /* qkv row stride */
    size_t       voff;  /* v − k offset */
} full_keys;

static void full_keys_fn(const void *p, int j0, int n, const float **kp, const float **vp)
{
    const full_keys *g = p;
    for (int j = 0; j < n; j++) {
        kp[j] = g->k + (size_t)(j0 + j) * g->row;
        vp[j] = kp[j] + g->voff;
    }
}

static void full_task(void *p, int64_t b, int64_t e)
{
    full_ctx *c = p;
    att_scratch w;
    float *mem = att_scratch_new(c->D, &w);
    if (!mem) {
        atomic_store(&c->oom, 1);
        return;
    }
    size_t row = (size_t)3 * c->H * c->D;
    for (int64_t it = b; it < e; it++) {
        int h = (int)(it / c->n_tiles), r0 = (int)(it % c->n_tiles) * ATT_QMAX;
        att_tile t = { .D = c->D, .scale = c->scale, .avx2 = c->avx2, .qt = w.q };
        for (int r = r0; r < r0 + ATT_QMAX && r < c->n; r++, t.nq++) {
            memcpy(w.q + (size_t)t.nq * c->D, c->qkv + (size_t)r * row + (size_t)h * c->D,
                   (size_t)c->D * sizeof(float));
            t.out[t.nq] = c->out + ((size_t)r * c->H + h) * c->D;
            t.limit[t.nq] = c->n;
        }
        t.gemm = att_want_gemm(c->use_blas, t.nq);
        full_keys k = { c->qkv + (size_t)(c->H + h) * c->D, row, (size_t)c->H * c->D };
        att_run(&t, &w, full_keys_fn, &k);
    }
    free(mem);
}

static bool att_oom(atomic_int *flag, const char *op, int D, GError **error)
{
    if (!atomic_load(flag)) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                _("CPU backend: %s: out of memory for %zu bytes of attention scratch"), op,
                (2 * (size_t)ATT_QMAX * D + 2 * (size_t)ATT_KB * D + (size_t)ATT_QMAX * ATT_KB) * sizeof(float));
    return false;
}

static bool cpu_attention_full(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv, int n, int H, int D,
                               float scale, GError **error)
{
    if (n < 0 || H <= 0 || D <= 0 || D > ATT_DMAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: attention_full: invalid shape n %d, heads %d, head dim %d (max %d)"),
                    n, H, D, ATT_DMAX);
        return false;
    }
    if (!need("attention_full", "out", out, (size_t)n * H * D, error) ||
        !need("attention_full", "qkv", qkv, (size_t)n * 3 * H * D, error))
        return false;
    full_ctx c = { F(out), F(qkv), n, H, D, (n + ATT_QMAX - 1) / ATT_QMAX, scale, CB(be)->use_blas,
                   CB(be)->avx2, 0 };
    blas_single_thread();
    run(be, (int64_t)H * c.n_tiles, 1, full_task, &c);
    return att_oom(&c.oom, "attention_full", D, error);
}

/* ---------------------------------------------------------------- rope + qk norm */

typedef struct {
    float                   *qkv;
    const int32_t           *pos;
    const uint8_t           *axis;
    const hyocr_rope_params *rp;
    const float             *qn, *kn;
    int                      M, n_axes, Hq, Hkv;
    float                    eps;
    int                      pos0;   /* qknorm_rope: the position of row 0 (pos is NULL) */
    bool                     norm_first;   /* qknorm_rope: Qwen3's order, each head normed, then rotated */
} rope_ctx;

/* out[D] = x[D] rotated by the row's angles (rotate_half form). */
static void rope_rotate(const float *x, const float *cs, const float *sn, float *out, int half)
{
    for (int d = 0; d < half; d++) {
        out[d] = x[d] * cs[d] - x[d + half] * sn[d];
        out[d + half] = x[d + half] * cs[d + half] + x[d] * sn[d + half];
    }
}

/* rope_qknorm (rotate, then norm each head) and qknorm_rope (the reverse). */
static void rope_task(void *p, int64_t b, int64_t e)
{
    const rope_ctx *c = p;
    int D = c->rp->head_dim, half = D / 2, nh = c->Hq + c->Hkv;
    float cs[ATT_DMAX], sn[ATT_DMAX], tmp[ATT_DMAX];
    for (int64_t t = b; t < e; t++) {
        for (int d = 0; d < D; d++) {
            int a = c->n_axes == 1 ? 0 : c->axis[d];
            int64_t pos = c->pos ? c->pos[(size_t)a * c->M + t] : c->pos0 + t;
            float angle = c->rp->inv_freq[d % half] * (float)pos;
            cs[d] = cosf(angle);
            sn[d] = sinf(angle);
        }
        float *row = c->qkv + (size_t)t * (nh + c->Hkv) * D;
        for (int h = 0; h < nh; h++) {
            float *x = row + (size_t)h * D;
            const float *w = h < c->Hq ? c->qn : c->kn;
            if (c->norm_first) {
                rmsnorm_row(x, w, tmp, D, c->eps);
                rope_rotate(tmp, cs, sn, x, half);
            } else {
                rope_rotate(x, cs, sn, tmp, half);
                rmsnorm_row(tmp, w, x, D, c->eps);
            }
        }
    }
}

static bool cpu_rope_qknorm(hyocr_backend *be, hyocr_buf *qkv, int M, const int32_t *pos, int n_axes,
                            int Hq, int Hkv, const hyocr_rope_params *rope,
                            const hyocr_buf *q_norm, const hyocr_buf *k_norm, float eps, GError **error)
{
    int axes;
    if (!hyocr_rope_check(be, "rope_qknorm", rope, M, pos, n_axes, Hq, Hkv, 1, ATT_DMAX, &axes, error)) return false;
    int D = rope->head_dim;
    if (!need("rope_qknorm", "qkv", qkv, (size_t)M * (Hq + 2 * Hkv) * D, error) ||
        !need("rope_qknorm", "q_norm", q_norm, (size_t)D, error) ||
        !need("rope_qknorm", "k_norm", k_norm, (size_t)D, error))
        return false;
    rope_ctx c = { F(qkv), pos, rope->axis, rope, F(q_norm), F(k_norm), M, axes, Hq, Hkv, eps };
    run(be, M, 1, rope_task, &c);
    return true;
}

/* ---------------------------------------------------------------- attention_paged */

typedef struct {
    float                *out, *kc, *vc;
    const float          *qkv;
    const hyocr_seq_view *seqs;
    const int            *row0;    /* first qkv row of each sequence */
    const int            *item0;   /* first item of each sequence */
    int                   n_seqs, bs, Hq, Hkv, D, qt;   /* qt: query rows per item */
    float                 scale;
    bool                  use_blas, avx2;
    atomic_int            oom;
} paged_ctx;

static inline size_t paged_slot(const hyocr_seq_view *s, int bs, int pos)
{
    return (size_t)s->block_table[pos / bs] * bs + pos % bs;
}

static void paged_write_task(void *p, int64_t b, int64_t e)
{
    const paged_ctx *c = p;
    size_t row = (size_t)(c->Hq + 2 * c->Hkv) * c->D, kvw = (size_t)c->Hkv * c->D;
    int s = 0;
    for (int64_t r = b; r < e; r++) {
        while (r >= c->row0[s + 1]) s++;
        const hyocr_seq_view *sv = &c->seqs[s];
        size_t slot = paged_slot(sv, c->bs, sv->n_past + (int)(r - c->row0[s]));
        const float *k = c->qkv + (size_t)r * row + (size_t)c->Hq * c->D;
        memcpy(c->kc + slot * kvw, k, kvw * sizeof(float));
        memcpy(c->vc + slot * kvw, k + kvw, kvw * sizeof(float));
    }
}

typedef struct {
    const paged_ctx      *c;
    const hyocr_seq_view *sv;
} paged_keys;

/* Key j's whole cache row (all KV heads); queries pick their head by koff. */
static void paged_keys_fn(const void *p, int j0, int n, const float **kp, const float **vp)
{
    const paged_keys *g = p;
    size_t kvw = (size_t)g->c->Hkv * g->c->D;
    for (int j = 0; j < n; j++) {
        size_t at = paged_slot(g->sv, g->c->bs, j0 + j) * kvw;
        kp[j] = g->c->kc + at;
        vp[j] = g->c->vc + at;
    }
}

/* Items of one sequence. Prefill: a KV head and up to qt rows, with the query
 * heads that share the KV head (GQA) stacked in one tile, scored by GEMMs.
 * Decode (few rows): all rows and all KV heads, so each key's cache row is
 * read as one run rather than one head at a time. Either way a query's
 * arithmetic depends only on its own keys, never on its tile-mates. */
typedef struct {
    bool decode;
    int  n_items, heads;   /* decode: KV heads per item (all, unless a tile would overflow) */
} paged_plan;

static paged_plan paged_plan_for(int n_new, int G, int Hkv, int qt)
{
    paged_plan p = { n_new * G <= ATT_DIRECT_MAX, 0, 0 };
    if (!p.decode) {
        p.n_items = (n_new + qt - 1) / qt * Hkv;
        return p;
    }
    /* Decode is bound by reading the cache: one pass over whole rows beat two
     * passes over half rows (on two threads too) by ~2.5× at 4k tokens. */
    int groups = 1;
    while ((Hkv + groups - 1) / groups * n_new * G > ATT_QMAX) groups++;
    p.heads = (Hkv + groups - 1) / groups;
    p.n_items = (Hkv + p.heads - 1) / p.heads;
    return p;
}

static void paged_add_query(const paged_ctx *c, att_tile *t, const float *qrow, size_t qr, int h, int limit)
{
    memcpy(t->qt + (size_t)t->nq * c->D, qrow + (size_t)h * c->D, (size_t)c->D * sizeof(float));
    t->out[t->nq] = c->out + (qr * c->Hq + h) * c->D;
    t->limit[t->nq] = limit;
    t->koff[t->nq] = h / (c->Hq / c->Hkv) * c->D;
    t->nq++;
}

static void paged_item(const paged_ctx *c, const att_scratch *w, int64_t it)
{
    int G = c->Hq / c->Hkv, s = 0;
    while (it >= c->item0[s + 1]) s++;
    const hyocr_seq_view *sv = &c->seqs[s];
    paged_plan plan = paged_plan_for(sv->n_new, G, c->Hkv, c->qt);
    int local = (int)(it - c->item0[s]);
    size_t row = (size_t)(c->Hq + 2 * c->Hkv) * c->D;
    /* rows r0..r1, KV heads k0..k1 */
    int r0 = 0, r1 = sv->n_new, k0 = local * plan.heads, k1 = k0 + plan.heads;
    if (!plan.decode) {
        k0 = local % c->Hkv;
        k1 = k0 + 1;
        r0 = (local / c->Hkv) * c->qt;
        r1 = r0 + c->qt < sv->n_new ? r0 + c->qt : sv->n_new;
    }
    if (k1 > c->Hkv) k1 = c->Hkv;
    att_tile t = { .D = c->D, .scale = c->scale, .avx2 = c->avx2, .qt = w->q };
    for (int r = r0; r < r1; r++) {
        size_t qr = (size_t)(c->row0[s] + r);
        for (int h = k0 * G; h < k1 * G; h++)
            paged_add_query(c, &t, c->qkv + qr * row, qr, h, sv->n_past + r + 1);
    }
    t.gemm = !plan.decode && att_want_gemm(c->use_blas, t.nq);
    paged_keys k = { c, sv };
    att_run(&t, w, paged_keys_fn, &k);
}

static void paged_att_task(void *p, int64_t b, int64_t e)
{
    paged_ctx *c = p;
    att_scratch w;
    float *mem = att_scratch_new(c->D, &w);
    if (!mem) {
        atomic_store(&c->oom, 1);
        return;
    }
    for (int64_t it = b; it < e; it++) paged_item(c, &w, it);
    free(mem);
}

/* Offsets of each sequence's rows and items; false when they overflow int. */
static bool paged_layout(const hyocr_seq_view *seqs, int n_seqs, int qt, int G, int Hkv, int *row0, int *item0,
                         GError **error)
{
    int64_t rows = 0, items = 0;
    for (int s = 0; s <= n_seqs; s++) {
        row0[s] = (int)rows;
        item0[s] = (int)items;
        if (s == n_seqs) break;
        rows += seqs[s].n_new;
        items += paged_plan_for(seqs[s].n_new, G, Hkv, qt).n_items;
        if (rows > INT_MAX || items > INT_MAX) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("CPU backend: attention_paged: too many rows in one call; run fewer jobs together"));
            return false;
        }
    }
    return true;
}

static bool cpu_attention_paged(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv,
                                hyocr_buf *k_cache, hyocr_buf *v_cache, int block_size,
                                const hyocr_seq_view *seqs, int n_seqs,
                                int Hq, int Hkv, int D, float scale, hyocr_buf *spare, GError **error)
{
    (void)spare;   /* no partials: a row's keys are one thread's */
    if (!hyocr_paged_check(be, k_cache, v_cache, block_size, seqs, n_seqs, Hq, Hkv, D, NULL, error)) return false;
    if (D > ATT_DMAX || Hq / Hkv > ATT_QMAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: attention_paged: head dim %d or %d query heads per KV head is more than this "
                      "backend takes (%d, %d)"), D, Hq / Hkv, ATT_DMAX, ATT_QMAX);
        return false;
    }
    g_autofree int *row0 = g_try_new(int, (size_t)n_seqs + 1);
    g_autofree int *item0 = g_try_new(int, (size_t)n_seqs + 1);
    if (!row0 || !item0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: attention_paged: out of memory for %d sequence offsets"), n_seqs);
        return false;
    }
    int qt = ATT_QMAX / (Hq / Hkv);
    if (!paged_layout(seqs, n_seqs, qt, Hq / Hkv, Hkv, row0, item0, error)) return false;
    int rows = row0[n_seqs];
    if (!need("attention_paged", "qkv", qkv, (size_t)rows * (Hq + 2 * Hkv) * D, error) ||
        !need("attention_paged", "out", out, (size_t)rows * Hq * D, error))
        return false;
    paged_ctx c = { F(out), F(k_cache), F(v_cache), F(qkv), seqs, row0, item0, n_seqs,
                    block_size, Hq, Hkv, D, qt, scale, CB(be)->use_blas, CB(be)->avx2, 0 };
    blas_single_thread();
    run(be, rows, 4, paged_write_task, &c);
    run(be, item0[n_seqs], 1, paged_att_task, &c);
    return att_oom(&c.oom, "attention_paged", D, error);
}

/* ---------------------------------------------------------------- embed, info */

/* ---------------------------------------------------------------- the DFlash draft's ops */

/* The draft's cursor: an int32 stored as raw bits in an F32 buffer. */
static bool read_cursor(const char *op, const hyocr_buf *cursor, int *out, GError **error)
{
    if (!need(op, "cursor", cursor, 1, error)) return false;
    int32_t v;
    memcpy(&v, cursor->data, sizeof v);
    if (v < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("CPU backend: %s: cursor %d is negative"), op, v);
        return false;
    }
    *out = v;
    return true;
}

static bool cpu_qknorm_rope(hyocr_backend *be, hyocr_buf *qkv, int M, const hyocr_buf *cursor,
                            int Hq, int Hkv, const hyocr_rope_params *rope,
                            const hyocr_buf *q_norm, const hyocr_buf *k_norm, float eps, GError **error)
{
    int D = rope ? rope->head_dim : 0, pos0 = 0;
    if (!rope || M < 0 || Hq < 0 || Hkv <= 0 || D <= 0 || D % 2 || D > ATT_DMAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: qknorm_rope: invalid arguments (M %d, heads %d/%d, head dim %d)"), M, Hq, Hkv, D);
        return false;
    }
    if (!read_cursor("qknorm_rope", cursor, &pos0, error) ||
        !need("qknorm_rope", "qkv", qkv, (size_t)M * (Hq + 2 * Hkv) * D, error) ||
        (Hq > 0 && !need("qknorm_rope", "q_norm", q_norm, (size_t)D, error)) ||
        !need("qknorm_rope", "k_norm", k_norm, (size_t)D, error))
        return false;
    /* row t sits at position pos0 + t */
    rope_ctx c = { F(qkv), NULL, NULL, rope, Hq > 0 ? F(q_norm) : NULL, F(k_norm), M, 1, Hq, Hkv, eps, pos0, true };
    run(be, M, 1, rope_task, &c);
    return true;
}

typedef struct {
    float       *out;
    const float *qkv, *kc, *vc;
    int          M, Hq, Hkv, D, n_keys, n_tiles;
    float        scale;
    bool         use_blas, avx2;
    atomic_int   oom;
} append_ctx;

typedef struct {
    const float *k, *v;   /* key 0 of this KV head */
    size_t       row;     /* cache row stride */
} append_keys;

static void append_keys_fn(const void *p, int j0, int n, const float **kp, const float **vp)
{
    const append_keys *g = p;
    for (int j = 0; j < n; j++) {
        kp[j] = g->k + (size_t)(j0 + j) * g->row;
        vp[j] = g->v + (size_t)(j0 + j) * g->row;
    }
}

/* One item: one query head over a tile of rows, every key visible. */
static void append_task(void *p, int64_t b, int64_t e)
{
    append_ctx *c = p;
    att_scratch w;
    float *mem = att_scratch_new(c->D, &w);
    if (!mem) {
        atomic_store(&c->oom, 1);
        return;
    }
    size_t row = (size_t)(c->Hq + 2 * c->Hkv) * c->D, kv_row = (size_t)c->Hkv * c->D;
    for (int64_t it = b; it < e; it++) {
        int h = (int)(it / c->n_tiles), r0 = (int)(it % c->n_tiles) * ATT_QMAX, g = h / (c->Hq / c->Hkv);
        att_tile t = { .D = c->D, .scale = c->scale, .avx2 = c->avx2, .qt = w.q };
        for (int r = r0; r < r0 + ATT_QMAX && r < c->M; r++, t.nq++) {
            memcpy(w.q + (size_t)t.nq * c->D, c->qkv + (size_t)r * row + (size_t)h * c->D,
                   (size_t)c->D * sizeof(float));
            t.out[t.nq] = c->out + ((size_t)r * c->Hq + h) * c->D;
            t.limit[t.nq] = c->n_keys;
        }
        t.gemm = att_want_gemm(c->use_blas, t.nq);
        append_keys k = { c->kc + (size_t)g * c->D, c->vc + (size_t)g * c->D, kv_row };
        att_run(&t, &w, append_keys_fn, &k);
    }
    free(mem);
}

static bool cpu_attention_append(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv, hyocr_buf *k_cache,
                                 hyocr_buf *v_cache, const hyocr_buf *cursor, int M, int Hq, int Hkv, int D,
                                 float scale, GError **error)
{
    int n_past = 0;
    if (M < 0 || Hq < 0 || Hkv <= 0 || Hq % Hkv || D <= 0 || D > ATT_DMAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: attention_append: invalid shape (%d rows, heads %d/%d, head dim %d)"), M, Hq, Hkv, D);
        return false;
    }
    if (!read_cursor("attention_append", cursor, &n_past, error)) return false;
    size_t kv_row = (size_t)Hkv * D, row = (size_t)(Hq + 2 * Hkv) * D, n_keys = (size_t)n_past + M;
    if (!need("attention_append", "qkv", qkv, (size_t)M * row, error) ||
        !need("attention_append", "k_cache", k_cache, n_keys * kv_row, error) ||
        !need("attention_append", "v_cache", v_cache, n_keys * kv_row, error) ||
        (Hq > 0 && !need("attention_append", "out", out, (size_t)M * Hq * D, error)))
        return false;
    for (int r = 0; r < M; r++) {
        const float *src = F(qkv) + (size_t)r * row + (size_t)Hq * D;
        memcpy(F(k_cache) + ((size_t)n_past + r) * kv_row, src, kv_row * sizeof(float));
        memcpy(F(v_cache) + ((size_t)n_past + r) * kv_row, src + kv_row, kv_row * sizeof(float));
    }
    if (Hq == 0 || M == 0) return true;
    append_ctx c = { F(out), F(qkv), F(k_cache), F(v_cache), M, Hq, Hkv, D, (int)n_keys,
                     (M + ATT_QMAX - 1) / ATT_QMAX, scale, CB(be)->use_blas, CB(be)->avx2, 0 };
    blas_single_thread();
    run(be, (int64_t)Hq * c.n_tiles, 1, append_task, &c);
    return att_oom(&c.oom, "attention_append", D, error);
}

/* First maximum, as torch.argmax (a NaN wins). */
static int32_t argmax_row(const float *x, int V)
{
    int32_t best = 0;
    for (int v = 0; v < V; v++) {
        if (isnan(x[v])) return v;
        if (x[v] > x[best]) best = v;
    }
    return best;
}

static bool cpu_argmax(hyocr_backend *be, const hyocr_buf *logits, int n, int V, hyocr_buf *ids, size_t off,
                       GError **error)
{
    (void)be;
    if (n < 0 || V <= 0 || logits->kind != HYOCR_BUF_F32 || ids->kind != HYOCR_BUF_F32) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: argmax: invalid arguments (%d rows, vocabulary %d; F32 buffers)"), n, V);
        return false;
    }
    if (off > SIZE_MAX - (size_t)n || !need("argmax", "logits", logits, (size_t)n * V, error) ||
        !need("argmax", "ids", ids, off + (size_t)n, error))
        return false;
    for (int i = 0; i < n; i++) {
        int32_t id = argmax_row(F(logits) + (size_t)i * V, V);
        memcpy(F(ids) + off + i, &id, sizeof id);
    }
    return true;
}

static bool embed_rows(const char *op, hyocr_buf *out, const hyocr_buf *table, const int32_t *ids, int n, int C,
                       GError **error)
{
    if (n < 0 || C <= 0 || (n > 0 && !ids)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: %s: invalid arguments (%d ids, width %d)"), op, n, C);
        return false;
    }
    if (!need(op, "out", out, (size_t)n * C, error) || !need_as(op, "table", table, (size_t)C, true, error)) return false;
    size_t rows = table->n / (size_t)C;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= rows) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("CPU backend: %s: token id %d at position %d is outside the embedding table "
                          "(%zu rows); the tokenizer and checkpoint do not match"), op, ids[i], i, rows);
            return false;
        }
    for (int i = 0; i < n; i++) {
        size_t row = (size_t)ids[i] * C;
        if (table->elem_size == 2)
            widen_bf16(F(out) + (size_t)i * C, (const uint16_t *)table->data + row, (size_t)C);
        else
            memcpy(F(out) + (size_t)i * C, F(table) + row, (size_t)C * sizeof(float));
    }
    return true;
}

static bool cpu_embed_ids(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *table, const hyocr_buf *ids,
                          size_t off, int n, int C, GError **error)
{
    (void)be;
    if (n < 0 || off > SIZE_MAX - (size_t)n) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("CPU backend: embed_ids: %d ids at offset %zu overflow"), n, off);
        return false;
    }
    return need("embed_ids", "ids", ids, off + (size_t)n, error) &&
           embed_rows("embed_ids", out, table, (const int32_t *)ids->data + off, n, C, error);
}

/* Elements [off, off + (rows − 1)·stride + cols) of b, without overflowing. */
static bool rows_in(const char *what, const hyocr_buf *b, size_t off, size_t stride, int rows, int cols,
                    GError **error)
{
    size_t last = (size_t)(rows - 1);
    if ((stride && last > (SIZE_MAX - (size_t)cols) / stride) || off > SIZE_MAX - (size_t)cols - last * stride) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: copy_rows: %d rows of %d at %zu with stride %zu overflow the %s buffer"), rows, cols, off, stride,
                    what);
        return false;
    }
    return need("copy_rows", what, b, off + last * stride + (size_t)cols, error);
}

static bool cpu_copy_rows(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, size_t dst_stride, const hyocr_buf *src,
                          size_t src_off, size_t src_stride, int rows, int cols, GError **error)
{
    (void)be;
    if (rows < 0 || cols < 0 || (rows > 1 && (dst_stride < (size_t)cols || src_stride < (size_t)cols))) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("CPU backend: copy_rows: %d rows of %d with strides %zu and %zu"), rows, cols, dst_stride,
                    src_stride);
        return false;
    }
    if (!rows || !cols) return true;
    if (!rows_in("dst", dst, dst_off, dst_stride, rows, cols, error) ||
        !rows_in("src", src, src_off, src_stride, rows, cols, error))
        return false;
    for (int r = 0; r < rows; r++)
        memmove(F(dst) + dst_off + (size_t)r * dst_stride, F(src) + src_off + (size_t)r * src_stride,
                (size_t)cols * sizeof(float));
    return true;
}

static bool cpu_embed(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *table, const int32_t *ids, int n, int C,
                      GError **error)
{
    (void)be;
    return embed_rows("embed", out, table, ids, n, C, error);
}

static void read_meminfo(int64_t *total, int64_t *avail)
{
    *total = *avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        long long kb;
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) *total = (int64_t)kb * 1024;
        else if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) *avail = (int64_t)kb * 1024;
    }
    fclose(f);
}

static void cpu_mem_info(hyocr_backend *be, hyocr_mem_info *out)
{
    cpu_backend *cb = CB(be);
    memset(out, 0, sizeof *out);
    read_meminfo(&out->total, &out->free);
    g_mutex_lock(&cb->mem_lock);
    out->weights = cb->bytes[HYOCR_BUF_WEIGHT];
    out->kv_reserved = cb->bytes[HYOCR_BUF_KV];
    out->workspace = cb->bytes[HYOCR_BUF_ACT] + cb->bytes[HYOCR_BUF_F32];
    out->peak = cb->peak;
    g_mutex_unlock(&cb->mem_lock);
    out->limit = cb->memory_limit;
}

static bool cpu_check_finite(hyocr_backend *be, const hyocr_buf *b, size_t n, bool *finite, GError **error)
{
    if (!need("check_finite", "b", b, n, error)) return false;
    bool ok = true;
    const float *x = F(b);
    for (size_t i = 0; ok && i < n; i++) ok = isfinite(x[i]);
    *finite = ok;
    return true;
}

/* The ids a verify row's penalty set holds beyond its slot's: the tokens the rows of its
 * block before it fed (see backend.h, pick). */
typedef struct {
    const int32_t *ids;
    int            n;
} pick_extra;

static bool in_extra(const pick_extra *x, int v)
{
    for (int i = 0; i < x->n; i++)
        if (x->ids[i] == v) return true;
    return false;
}

/* The sampler's rules (sampler.c): penalty as torch on the CPU (ℓ/p), argmax with
 * the first maximum and a NaN winning. mark: the choice joins the slot's set. */
static int32_t pick_row(const float *x, int V, uint32_t *seen, float p, const hyocr_pick_draw *d,
                        const pick_extra *extra, bool mark, bool *nonfinite)
{
    bool pen = isfinite(p) && p > 0.0f && p != 1.0f, nf = false, nan_seen = false;
    bool sample = d && d->temperature > 0.0f && isfinite(d->temperature);
    g_autofree float *y = sample ? g_new(float, V) : NULL;
    int32_t best = 0;
    float bv = -INFINITY;
    for (int v = 0; v < V; v++) {
        float l = x[v];
        nf |= !isfinite(l);
        if (pen && ((seen[v >> 5] >> (v & 31) & 1u) || in_extra(extra, v))) l = l < 0.0f ? l * p : l / p;
        if (y) y[v] = l;
        if (nan_seen) continue;
        if (l != l) {
            nan_seen = true;
            best = v;
        } else if (v == 0 || l > bv) {
            bv = l;
            best = v;
        }
    }
    if (sample) {
        hyocr_sampler_params sp = { .temperature = d->temperature, .top_k = d->top_k, .top_p = d->top_p };
        best = hyocr_sampler_draw(&sp, y, V, d->u);
    }
    if (mark) seen[best >> 5] |= 1u << (best & 31);
    *nonfinite = nf;
    return best;
}

static bool pick_args_ok(const hyocr_buf *seen, size_t words, int n, const int32_t *slots, const int32_t *first,
                         const hyocr_buf *step_ids, GError **error)
{
    for (int i = 0; i < n; i++) {
        if (slots[i] < 0 || (size_t)(slots[i] + 1) * words > seen->n)
            return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                               _("CPU backend: pick: row %d uses slot %d but the seen buffer holds %zu slots"), i,
                               slots[i], seen->n / words), false;
        if (first && first[i] >= 0 && (first[i] > i || !step_ids || step_ids->n < (size_t)i + 1))
            return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                               _("CPU backend: pick: row %d verifies a block from row %d without the step's ids"), i,
                               first[i]), false;
    }
    return true;
}

static bool cpu_pick(hyocr_backend *be, const hyocr_buf *logits, int n, int V, hyocr_buf *seen, const int32_t *slots,
                     const float *penalties, const hyocr_pick_draw *draws, const int32_t *first,
                     const hyocr_buf *step_ids, GError **error)
{
    cpu_backend *cb = CB(be);
    size_t words = ((size_t)V + 31) / 32;
    if (n < 0 || V <= 0 || (n > 0 && (!slots || !penalties)))
        return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                           _("CPU backend: pick: invalid arguments (%d rows, vocabulary %d)"), n, V), false;
    if (!need("pick", "logits", logits, (size_t)n * V, error) || !need("pick", "seen", seen, words, error) ||
        !pick_args_ok(seen, words, n, slots, first, step_ids, error))
        return false;
    if (n > cb->pick_cap) {
        cb->pick_cap = n;
        cb->pick_ids = g_renew(int32_t, cb->pick_ids, n);
        cb->pick_nf = g_renew(bool, cb->pick_nf, n);
    }
    for (int i = 0; i < n; i++) {
        bool verify = first && first[i] >= 0;
        pick_extra extra = { NULL, 0 };
        if (verify) extra = (pick_extra){ (const int32_t *)step_ids->data + first[i] + 1, i - first[i] };
        cb->pick_ids[i] = pick_row(F(logits) + (size_t)i * V, V, (uint32_t *)seen->data + (size_t)slots[i] * words,
                                   penalties[i], draws ? &draws[i] : NULL, &extra, !verify, &cb->pick_nf[i]);
    }
    cb->pick_n = n;
    return true;
}

static bool cpu_pick_fetch(hyocr_backend *be, int n, int32_t *ids, bool *nonfinite, GError **error)
{
    cpu_backend *cb = CB(be);
    if (n < 0 || n > cb->pick_n)
        return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                           _("CPU backend: pick_fetch: %d rows asked but the last pick had %d"), n, cb->pick_n), false;
    if (n) memcpy(ids, cb->pick_ids, sizeof(int32_t) * n);
    if (n && nonfinite) memcpy(nonfinite, cb->pick_nf, sizeof(bool) * n);
    return true;
}

static bool cpu_pick_logprobs(hyocr_backend *be, const hyocr_buf *logits, int n, int V, const int32_t *n_top,
                              hyocr_token_logprobs *out, GError **error)
{
    cpu_backend *cb = CB(be);
    if (n < 0 || n > cb->pick_n || V <= 0)
        return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                           _("CPU backend: pick_logprobs: %d rows asked but the last pick had %d"), n, cb->pick_n),
               false;
    if (!need("pick_logprobs", "logits", logits, (size_t)n * V, error)) return false;
    for (int i = 0; i < n; i++) {
        if (n_top[i] < 0) continue;
        if (n_top[i] > HYOCR_TOP_LOGPROBS_MAX)
            return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                               _("CPU backend: pick_logprobs: row %d asks for %d alternatives (at most %d)"), i,
                               n_top[i], HYOCR_TOP_LOGPROBS_MAX), false;
        out[i] = hyocr_sampler_token_logprobs(F(logits) + (size_t)i * V, V, cb->pick_ids[i], n_top[i]);
    }
    return true;
}

static bool cpu_sync(hyocr_backend *be, GError **error)
{
    return true;
}

/* Swap storage for preempted KV: a CPU "device" buffer is host memory already,
 * so these are plain copies; the bounds checks keep a bad offset an error. */
static bool bytes_in(const hyocr_buf *b, size_t off, size_t bytes, const char *op, GError **error)
{
    size_t have = b && b->data ? b->n * (size_t)b->elem_size : 0;
    if (off <= have && bytes <= have - off) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                _("CPU backend: %s: %zu bytes at offset %zu exceed the buffer's %zu bytes"), op, bytes, off, have);
    return false;
}

static bool cpu_read_bytes(hyocr_backend *be, const hyocr_buf *src, size_t off, void *dst, size_t bytes,
                           GError **error)
{
    (void)be;
    if (!bytes_in(src, off, bytes, "read_bytes", error)) return false;
    memcpy(dst, (const uint8_t *)src->data + off, bytes);
    return true;
}

static bool cpu_write_bytes(hyocr_backend *be, hyocr_buf *dst, size_t off, const void *src, size_t bytes,
                            GError **error)
{
    (void)be;
    if (!bytes_in(dst, off, bytes, "write_bytes", error)) return false;
    memcpy((uint8_t *)dst->data + off, src, bytes);
    return true;
}

static void *cpu_host_alloc(hyocr_backend *be, size_t bytes, GError **error)
{
    (void)be;
    void *p = g_try_malloc(bytes ? bytes : 1);
    if (!p)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CPU backend: out of host memory allocating %zu bytes (%.1f MiB) of swap space"), bytes,
                    MIB(bytes));
    return p;
}

static void cpu_host_free(hyocr_backend *be, void *p, size_t bytes)
{
    (void)be;
    (void)bytes;
    g_free(p);
}

static const hyocr_backend_ops cpu_ops = {
    .name = "cpu",
    .free = cpu_free,
    .alloc = cpu_alloc,
    .buf_free = cpu_buf_free,
    .upload_weight = cpu_upload_weight,
    .upload_f32 = cpu_upload_f32,
    .download_f32 = cpu_download_f32,
    .copy = cpu_copy,
    .matmul = cpu_matmul,
    .add_layernorm = cpu_add_layernorm,
    .add_rmsnorm = cpu_add_rmsnorm,
    .add = cpu_add,
    .gelu = cpu_gelu,
    .swiglu = cpu_swiglu,
    .posemb_add = cpu_posemb_add,
    .merge_gather = cpu_merge_gather,
    .append_newline = cpu_append_newline,
    .attention_full = cpu_attention_full,
    .rope_qknorm = cpu_rope_qknorm,
    .attention_paged = cpu_attention_paged,
    .qknorm_rope = cpu_qknorm_rope,
    .attention_append = cpu_attention_append,
    .argmax = cpu_argmax,
    .embed_ids = cpu_embed_ids,
    .copy_rows = cpu_copy_rows,
    .embed = cpu_embed,
    .mem_info = cpu_mem_info,
    .sync = cpu_sync,
    .check_finite = cpu_check_finite,
    .pick = cpu_pick,
    .pick_fetch = cpu_pick_fetch,
    .pick_logprobs = cpu_pick_logprobs,
    .read_bytes = cpu_read_bytes,
    .write_bytes = cpu_write_bytes,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .norm_matmul = cpu_norm_matmul,
    .matmul_residual = cpu_matmul_residual,
    .fused_rows = cpu_fused_rows,
};

hyocr_backend *hyocr_backend_cpu_init(const hyocr_backend_params *p, GError **error)
{
    int n = p && p->n_threads > 0 ? p->n_threads : (int)g_get_num_processors();
    if (n < 1) n = 1;
    if (n > 256) n = 256;
    cpu_pool *pool = pool_new(n, error);
    if (!pool) return NULL;
    cpu_backend *cb = g_new0(cpu_backend, 1);
    cb->base.ops = &cpu_ops;
    cb->base.kind = HYOCR_BACKEND_CPU;
    cb->base.dtype = HYOCR_COMPUTE_F32;
    cb->n_threads = n;
    cb->pool = pool;
    int64_t total = 0, avail = 0;
    read_meminfo(&total, &avail);
    cb->memory_limit = hyocr_memory_limit_resolve(p ? p->memory_limit : 0, total);   /* of the machine's RAM */
    if (p) cb->base.tuning = p->tuning;
    /* cpu_generic selects the portable code paths (no OpenBLAS, no AVX2), so
     * tests and benchmarks can reach them on any machine. */
    bool generic = cb->base.tuning.cpu_generic;
    cb->use_blas = HYOCR_HAVE_BLAS && !generic;
    /* OpenBLAS starts its thread server on the first openblas_set_num_threads and the
     * new thread spins (sched_yield) for ~0.1 s: at the first GEMM, on a two-core
     * machine, that took the app's UI thread's core just as the first answer began to
     * stream. Settled here, it happens while the model loads. */
    if (cb->use_blas) blas_single_thread();
    cb->avx2 = !generic && cpu_has_avx2();
    cb->base.bf16_elem = cb->base.tuning.cpu_f32_weights ? 4 : 2;
    g_mutex_init(&cb->mem_lock);
    return &cb->base;
}
