/* The CPU backend's products on a BF16 checkpoint's matrices kept in bf16 against widened to fp32
 * at load (HYOCR_CPU_F32_WEIGHTS), at the model's shapes, the two alternated call by call so a
 * noisy machine weighs on both alike: median µs of each and the weights' bytes a second it reads.
 * Built and run by bench/cpu-matmul-bench.sh. */
#include "backend.h"
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

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    printf("| product | M×N×K | fp32 weights µs | bf16 kept µs | bf16 / fp32 | weights GB/s fp32 → bf16 |\n");
    printf("|---|---|---:|---:|---:|---:|\n");
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
        double *ta = g_new(double, r), *tb = g_new(double, r);
        for (int k = 0; k < r; k++) {
            ta[k] = time_one(&a, sh);
            tb[k] = time_one(&b, sh);
        }
        if (memcmp(a.o->data, b.o->data, (size_t)sh->M * sh->N * sizeof(float)) != 0)
            printf("(!) %s: the two differ\n", sh->name);
        qsort(ta, r, sizeof *ta, cmp_d);
        qsort(tb, r, sizeof *tb, cmp_d);
        double ma = ta[r / 2], mb = tb[r / 2];
        printf("| %s | %d×%d×%d | %.0f | %.0f | %.2f | %.1f → %.1f |\n", sh->name, sh->M, sh->N, sh->K, ma, mb, mb / ma,
               nw * 4 / ma / 1e3, nw * 2 / mb / 1e3);
        fflush(stdout);
        side_free(&a);
        side_free(&b);
        g_free(ta);
        g_free(tb);
        g_free(wh);
        g_free(x);
    }
    return 0;
}
