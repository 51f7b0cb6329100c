/* hyocr — image input: decode (PNG, JPEG), orientation, optional pre-scale, and
 * the reference processor: smart_resize, Pillow-exact 8-bit bicubic, rescale,
 * normalize and the row-major patch layout (spec §3.1–3.4). */
#pragma once
#include "config.h"
#include <glib.h>
#include <stdint.h>
#include <stdbool.h>

G_BEGIN_DECLS

/* RGB, 8 bits per channel, rows packed (stride = 3·width). */
typedef struct {
    int      width;
    int      height;
    uint8_t *rgb;
} hyocr_image;

typedef struct {
    int64_t max_decode_pixels;  /* refuse larger images from the header; 0 = default (178956970, Pillow's bomb limit ×2) */
    bool    ignore_exif;        /* default false: EXIF orientation is applied */
    int     max_side;           /* >0: Lanczos pre-scale so the long edge ≤ max_side; 0 = off */
} hyocr_image_options;

hyocr_image *hyocr_image_new(int width, int height);   /* zeroed; NULL if a size is < 1 or out of memory */
void         hyocr_image_free(hyocr_image *img);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_image, hyocr_image_free)

/* opts may be NULL. The name is used in messages. Alpha is dropped like Pillow's
 * convert("RGB"); gray replicated; palette expanded; 16-bit reduced to the high byte.
 * Any format of document.h is read (the content decides); of a document of several pages
 * this is the first (hyocr_document_render reads the others). */
hyocr_image *hyocr_image_load(const char *path, const hyocr_image_options *opts, GError **error);
hyocr_image *hyocr_image_load_from_memory(const void *data, size_t len, const char *name,
                                          const hyocr_image_options *opts, GError **error);

/* EXIF orientation (tag 0x0112 in IFD0) from an Exif blob: either a JPEG APP1 payload
 * ("Exif\0\0" + TIFF) or a bare TIFF header (PNG eXIf). 1..8, or 0 when absent/invalid. */
int hyocr_exif_orientation(const uint8_t *data, size_t len);
/* A copy turned upright for an EXIF orientation 1..8 (any other value: plain copy).
 * NULL only when out of memory. */
hyocr_image *hyocr_image_orient(const hyocr_image *src, int orientation);
/* The size Pillow's Image.thumbnail((max_side, max_side)) would pick: the long edge becomes
 * max_side, the other edge the integer (floor or ceil) that keeps the aspect closest.
 * Returns false (size unchanged) when the image already fits. */
bool hyocr_image_fit_size(int width, int height, int max_side, int *out_width, int *out_height);

/* Pillow Image.resize(..., BICUBIC) on 8-bit RGB, bit-exact. NULL when a size is < 1
 * or out of memory. An unchanged size gives a copy. */
hyocr_image *hyocr_image_resize_bicubic(const hyocr_image *src, int width, int height);
/* Pillow LANCZOS (used only for the optional max_side pre-scale). */
hyocr_image *hyocr_image_resize_lanczos(const hyocr_image *src, int width, int height);

/* smart_resize (spec §3.2). Errors on aspect ratio > 200 or empty input. */
bool hyocr_smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels,
                        int *out_height, int *out_width, GError **error);

typedef struct {
    int    grid_t, grid_h, grid_w;  /* image_grid_thw, in patches */
    int    n_patches;               /* grid_h · grid_w */
    int    patch_dim;               /* 3 · patch² = 768 */
    int    resized_width, resized_height;
    float *data;                    /* [n_patches, patch_dim] */
} hyocr_pixels;

hyocr_pixels *hyocr_pixels_from_image(const hyocr_image *img, const hyocr_processor_config *pc, GError **error);
void          hyocr_pixels_free(hyocr_pixels *px);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_pixels, hyocr_pixels_free)

G_END_DECLS
