/* hyocr — resampling and the reference processor (resize.c): the max_side pre-scale
 * (Pillow's thumbnail size, LANCZOS), smart_resize, Pillow-exact 8-bit bicubic,
 * rescale, normalize and the row-major patch layout (spec §3.2–3.4). Works on the
 * decoded images of image.h; image.c needs nothing from here. */
#pragma once
#include "config.h"
#include "image.h"
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

/* The one rule for fitting an image's long edge to max_side, as Pillow's
 * Image.thumbnail((max_side, max_side)) picks it: the long edge becomes max_side, the
 * other edge the integer (floor or ceil) that keeps the aspect closest (floor on a tie),
 * never below 1. Returns false (size unchanged) when the image already fits or
 * max_side ≤ 0. */
bool hyocr_image_fit_size(int width, int height, int max_side, int *out_width, int *out_height);
/* n_threads, here and below: threads of the resampling and packing passes (0: the cores,
 * at most 8; the engine passes its tuning's resize_threads). The result does not
 * depend on it. */

/* The pre-scale of a job's image: *out is src shrunk with LANCZOS to hyocr_image_fit_size's
 * size, or NULL when src already fits. False (HYOCR_ERROR_NO_MEMORY) when out of memory. */
bool hyocr_image_fit(const hyocr_image *src, int max_side, int n_threads, hyocr_image **out, GError **error);

/* Pillow Image.resize(..., BICUBIC) on 8-bit RGB, bit-exact. NULL when a size is < 1
 * or out of memory. An unchanged size gives a copy. */
hyocr_image *hyocr_image_resize_bicubic(const hyocr_image *src, int width, int height, int n_threads);
/* Pillow LANCZOS (used only for the optional max_side pre-scale). */
hyocr_image *hyocr_image_resize_lanczos(const hyocr_image *src, int width, int height, int n_threads);

/* smart_resize (spec §3.2). Errors on aspect ratio > 200 or empty input. */
bool hyocr_smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels,
                        int *out_height, int *out_width, GError **error);

/* Where a page's pixel values go (the engine's pinned pool, pinned.h): take gives a buffer of at
 * least bytes (*cap: its size) or NULL for ordinary memory; give takes it back with the pixels. */
typedef struct {
    void *(*take)(void *user, size_t bytes, size_t *cap);
    void  (*give)(void *user, void *p, size_t cap);
    void  *user;
} hyocr_pixels_mem;

typedef struct {
    int    grid_t, grid_h, grid_w;  /* image_grid_thw, in patches */
    int    n_patches;               /* grid_h · grid_w */
    int    patch_dim;               /* 3 · temporal_patch_size · patch² = 768 */
    int    resized_width, resized_height;
    float *data;                    /* [n_patches, patch_dim] */
    hyocr_pixels_mem mem;           /* where data came from (take NULL: g_malloc) */
    size_t           cap;           /* its bytes, when mem.take gave it */
} hyocr_pixels;

hyocr_pixels *hyocr_pixels_from_image(const hyocr_image *img, const hyocr_processor_config *pc, int n_threads,
                                      GError **error);
/* The same values, in memory mem gives where it has some (NULL: ordinary memory). */
hyocr_pixels *hyocr_pixels_from_image_in(const hyocr_image *img, const hyocr_processor_config *pc, int n_threads,
                                         const hyocr_pixels_mem *mem, GError **error);
void          hyocr_pixels_free(hyocr_pixels *px);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_pixels, hyocr_pixels_free)

G_END_DECLS
