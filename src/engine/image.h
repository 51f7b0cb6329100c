/* hyocr — image input (spec §3.1): the RGB image, decoding (PNG, JPEG, and through
 * document.h every other format) and orientation. Resampling and the processor are
 * resize.h's. */
#pragma once
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
    int     max_side;           /* >0: the long edge at most max_side (hyocr_image_fit, or a PDF page
                                 * rendered at that size); 0 = off */
    int     resize_threads;     /* of that scaling (resize.h); 0 = the cores */
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

/* The image as a PNG file in memory (8-bit RGB, lossless: it decodes back to the same
 * pixels), for sending a page as decoded here to a server. */
GBytes *hyocr_image_encode_png(const hyocr_image *img, GError **error);
G_END_DECLS
