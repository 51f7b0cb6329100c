/* The CPU backend's products on a BF16 checkpoint's matrices kept in bf16 against widened to fp32
 * at load (HYOCR_CPU_F32_WEIGHTS), at the model's shapes, the two alternated call by call so a
 * noisy machine weighs on both alike: median µs of each and the weights' bytes a second it reads;
 * beside them OpenBLAS alone on the fp32 weights (its own threads, the whole product in one call),
 * what products of up to 16 rows ran on before session 16. Built and run by bench/cpu-matmul-bench.sh. */
#undef I
extern void openblas_set_num_threads(int n);
#include "backend.h"
#include <cblas.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    int         M, N, K;
} shape;

static const shape shapes[] = {
    { "decode q|k|v", 1, 4096, 1024 },      { "decode o", 1, 1024, 2048 },
    { "decode gate|up", 1, 7168, 1024 },    { "decode down", 1, 1024, 3584 },
    { "decode lm_head", 1, 120818, 1024 },  { "4 rows gate|up", 4, 7168, 1024 },
    { "16 rows q|k|v", 16, 4096, 1024 },    { "16 rows gate|up", 16, 7168, 1024 },
    { "16 rows down", 16, 1024, 3584 },
    { "prefill gate|up", 1087, 7168, 1024 }, { "vision fc1", 4096, 4304, 1152 },
    { "vision fc2", 4096, 1152, 4304 },
};

static hyocr_backend *backend(int threads, bool f32)
{
    hyocr_backend_params p = { .n_threads = threads, .tuning.cpu_f32_weights = f32 };
    GError *err = NULL;
    hyocr_backend *be = hyocr_backend_cpu_init(&p, &err);
    if (!be) {
        fprintf(stderr, "%s\n", err->message);
        exit(1);
    }
    return be;
}

static hyocr_buf *alloc_or_die(hyocr_backend *be, hyocr_buf_kind kind, size_t n)
{
    GError *err = NULL;
    hyocr_buf *b = be->ops->alloc(be, kind, n, &err);
    if (!b) {
        fprintf(stderr, "%s\n", err->message);
        exit(1);
    }
    return b;
}

typedef struct {
    hyocr_backend *be;
    hyocr_buf     *w, *x, *o;
} side;

static void side_init(side *s, bool f32, int threads, const shape *sh, const uint16_t *wh, const float *x)
{
    size_t nw = (size_t)sh->N * sh->K;
    s->be = backend(threads, f32);
    s->w = alloc_or_die(s->be, HYOCR_BUF_WEIGHT_BF16, nw);
    hyocr_tensor t = { .name = "w", .dtype = HYOCR_DTYPE_BF16, .n_dims = 1, .shape = { (int64_t)nw },
                       .data = wh, .nbytes = nw * 2 };
    GError *err = NULL;
    if (!s->be->ops->upload_weight(s->be, s->w, 0, &t, &err)) exit(1);
    s->x = alloc_or_die(s->be, HYOCR_BUF_ACT, (size_t)sh->M * sh->K);
    memcpy(s->x->data, x, (size_t)sh->M * sh->K * sizeof(float));
    s->o = alloc_or_die(s->be, HYOCR_BUF_ACT, (size_t)sh->M * sh->N);
}

static void side_free(side *s)
{
    s->be->ops->buf_free(s->be, s->w);
    s->be->ops->buf_free(s->be, s->x);
    s->be->ops->buf_free(s->be, s->o);
    hyocr_backend_free(s->be);
}

static double time_one(side *s, const shape *sh)
{
    GError *err = NULL;
    gint64 t0 = g_get_monotonic_time();
    if (!s->be->ops->matmul(s->be, s->o, s->x, s->w, 0, NULL, sh->M, sh->N, sh->K, &err)) {
        fprintf(stderr, "%s\n", err->message);
        exit(1);
    }
    return (double)(g_get_monotonic_time() - t0);
}

/* OpenBLAS alone on side s's fp32 weights (HYOCR_CPU_F32_WEIGHTS widened them at load). */
static double time_blas(side *s, const shape *sh, int threads)
{
    openblas_set_num_threads(threads);   /* the backend keeps OpenBLAS on one thread of its own */
    const float *w = s->w->data, *x = s->x->data;
    float *o = s->o->data;
    gint64 t0 = g_get_monotonic_time();
    if (sh->M == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, sh->N, sh->K, 1.0f, w, sh->K, x, 1, 0.0f, o, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, sh->M, sh->N, sh->K, 1.0f, x, sh->K, w, sh->K, 0.0f, o,
                    sh->N);
    return (double)(g_get_monotonic_time() - t0);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    printf("| product | M×N×K | fp32 weights µs | bf16 kept µs | bf16 / fp32 | weights GB/s fp32 → bf16 | OpenBLAS fp32 µs |\n");
    printf("|---|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) {
        const shape *sh = &shapes[i];
        int r = sh->M > 64 ? (reps + 4) / 5 : reps;
        size_t nw = (size_t)sh->N * sh->K;
        uint16_t *wh = g_new(uint16_t, nw);
        float *x = g_new(float, (size_t)sh->M * sh->K);
        guint32 seed = 12345;
        for (size_t k = 0; k < nw; k++) {
            seed = seed * 1664525u + 1013904223u;
            wh[k] = (uint16_t)(0x3c00 + (seed >> 22)) ^ (uint16_t)((seed >> 9) & 0x8000);   /* ±[2^-7, 2^-6) */
        }
        for (size_t k = 0; k < (size_t)sh->M * sh->K; k++) x[k] = (float)((k * 2654435761u) % 1000) / 500.0f - 1.0f;
        side a, b;
        side_init(&a, true, threads, sh, wh, x);
        side_init(&b, false, threads, sh, wh, x);
        time_one(&a, sh);   /* warm */
        time_one(&b, sh);
        double *ta = g_new(double, r), *tb = g_new(double, r), *tc = g_new(double, r);
        for (int k = 0; k < r; k++) {
            tc[k] = time_blas(&a, sh, threads);   /* first: a's output is the engine's at the end */
            ta[k] = time_one(&a, sh);
            tb[k] = time_one(&b, sh);
        }
        if (memcmp(a.o->data, b.o->data, (size_t)sh->M * sh->N * sizeof(float)) != 0)
            printf("(!) %s: the two differ\n", sh->name);
        qsort(ta, r, sizeof *ta, cmp_d);
        qsort(tb, r, sizeof *tb, cmp_d);
        qsort(tc, r, sizeof *tc, cmp_d);
        double ma = ta[r / 2], mb = tb[r / 2];
        printf("| %s | %d×%d×%d | %.0f | %.0f | %.2f | %.1f → %.1f | %.0f |\n", sh->name, sh->M, sh->N, sh->K, ma, mb,
               mb / ma, nw * 4 / ma / 1e3, nw * 2 / mb / 1e3, tc[r / 2]);
        fflush(stdout);
        side_free(&a);
        side_free(&b);
        g_free(ta);
        g_free(tb);
        g_free(tc);
        g_free(wh);
        g_free(x);
    }
    return 0;
}
