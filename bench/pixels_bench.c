/* hyocr — the host's share of a page's pixels before the vision pass, the two ways the engine can
 * hand them to the CUDA backend (HYOCR_UPLOAD_U8): hyocr_pixels_from_parts keeping the packed fp32
 * rows (preprocessing packs them; the upload then reads 4 bytes a value and converts them to fp16
 * into the pinned ring) against keeping the resized 8-bit image (no packing; the upload copies its
 * 1 byte a value). Per size: the preprocessing's time (median of REPS), and the time of the host
 * work each upload does before the bytes cross the bus, done here the same way on this machine's
 * cores (fp32 → fp16 with F16C where the CPU has it, as the ring's threads do, else plain copies).
 * No GPU needed. Build from the repository root after `ninja -C build` (the link line is
 * test-image's, which links the same engine library):
 *   bench/pixels-bench.sh [threads]
 */
#include "image.h"
#include "resize.h"
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define REPS 7

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

#if defined(__x86_64__)
__attribute__((target("f16c,avx"))) static void to_f16(uint16_t *d, const float *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_stream_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) d[i] = (uint16_t)_cvtss_sh(s[i], 0);
}
#endif

/* A page-like image: text-ish stripes over noise, so the resize has work like a photo's. */
static hyocr_image *page(int w, int h)
{
    hyocr_image *img = hyocr_image_new(w, h);
    GRand *r = g_rand_new_with_seed(7);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t v = (y / 24) % 3 == 0 && (x / 9) % 4 != 0 ? 30 : (uint8_t)(220 + g_rand_int_range(r, 0, 30));
            uint8_t *p = img->rgb + ((size_t)y * w + x) * 3;
            p[0] = v, p[1] = v, p[2] = (uint8_t)(v - 5);
        }
    g_rand_free(r);
    return img;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    hyocr_processor_config pc = { .patch_size = 16, .merge_size = 2, .temporal_patch_size = 1,
                                  .min_pixels = 512 * 512, .max_pixels = 4096 * 4096, .rescale_factor = 1.0 / 255,
                                  .image_mean = { 0.48145466f, 0.4578275f, 0.40821073f },
                                  .image_std = { 0.26862954f, 0.26130258f, 0.27577711f } };
    /* a photo a little off the target size, so both ways resize (bicubic) as a real page does */
    static const int sizes[][2] = { { 1000, 1040 }, { 2000, 2080 } };
    printf("threads %d (0: the cores, at most 8)\n", threads);
    printf("| page → grid | way | preprocess ms | kept MB | upload's host work ms | bytes sent MB |\n");
    printf("|---|---|---:|---:|---:|---:|\n");
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
        g_autoptr(hyocr_image) img = page(sizes[s][0], sizes[s][1]);
        for (int way = 0; way < 2; way++) {
            unsigned parts = way ? HYOCR_PIXELS_IMAGE : HYOCR_PIXELS_PACKED;
            double pre[REPS], up[REPS];
            size_t kept = 0, sent = 0;
            int gh = 0, gw = 0;
            for (int r = 0; r < REPS; r++) {
                gint64 t0 = g_get_monotonic_time();
                g_autoptr(GError) err = NULL;
                g_autoptr(hyocr_pixels) px = hyocr_pixels_from_parts(img, &pc, threads, parts, &err);
                if (!px) {
                    fprintf(stderr, "%s\n", err->message);
                    return 1;
                }
                pre[r] = (g_get_monotonic_time() - t0) / 1e3;
                gh = px->grid_h, gw = px->grid_w;
                size_t n = (size_t)px->n_patches * px->patch_dim;
                size_t img_bytes = px->image ? (size_t)px->image->width * px->image->height * 3 : 0;
                kept = px->data ? n * 4 : img_bytes;
                sent = px->data ? n * 2 : img_bytes;
                void *ring = g_malloc(sent);   /* the pinned ring's share, as plain memory here */
                t0 = g_get_monotonic_time();
                if (px->data) {
#if defined(__x86_64__)
                    if (__builtin_cpu_supports("f16c")) to_f16(ring, px->data, n);
                    else
#endif
                        memcpy(ring, px->data, sent);
                } else {
                    memcpy(ring, px->image->rgb, sent);
                }
                up[r] = (g_get_monotonic_time() - t0) / 1e3;
                g_free(ring);
            }
            printf("| %d×%d → %d×%d | %s | %.2f | %.1f | %.2f | %.1f |\n", sizes[s][0], sizes[s][1], gw * 16, gh * 16,
                   way ? "8-bit image (HYOCR_UPLOAD_U8=1)" : "fp32 rows (default)", median(pre, REPS), kept / 1e6,
                   median(up, REPS), sent / 1e6);
        }
    }
    return 0;
}
