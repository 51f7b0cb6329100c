/* hyocr — documents: every file hyocr reads, single images and multi-page documents alike,
 * recognised by its content (never its name), opened once and read one page at a time.
 *
 *     hyocr_document *doc = hyocr_document_open("scan.pdf", NULL, &error);
 *     for (int i = 0; i < hyocr_document_n_pages(doc); i++) {
 *         hyocr_image *page = hyocr_document_render(doc, i, NULL, &error);
 *         ...
 *     }
 *     hyocr_document_unref(doc);
 *
 * A PNG, JPEG, WebP, HEIC or AVIF file is a document of one page; a TIFF has a page per
 * directory; a PDF's pages are rendered at a resolution that fits the model's pixel budget.
 * The list of readable formats (names, MIME types, extensions) lives here, once, for the
 * CLI, the app's file chooser and the desktop entry. */
#pragma once
#include "image.h"
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_FORMAT_UNKNOWN,
    HYOCR_FORMAT_PNG,
    HYOCR_FORMAT_JPEG,
    HYOCR_FORMAT_TIFF,
    HYOCR_FORMAT_WEBP,
    HYOCR_FORMAT_HEIF,
    HYOCR_FORMAT_AVIF,
    HYOCR_FORMAT_PDF,
    HYOCR_FORMAT_PIXELS,   /* hyocr_document_new_for_image: decoded pixels, no file */
} hyocr_format;

typedef struct {
    hyocr_format       format;
    const char        *name;         /* "PDF", "HEIC" */
    const char *const *mime_types;   /* NULL-terminated; the first is the canonical one */
    const char *const *extensions;   /* NULL-terminated, lower case, without the dot */
    bool               multi_page;   /* may hold several pages */
} hyocr_format_info;

/* The readable formats, in a fixed order; *n gets their count. */
const hyocr_format_info *hyocr_formats(size_t *n);
/* NULL for HYOCR_FORMAT_UNKNOWN. */
const hyocr_format_info *hyocr_format_get(hyocr_format format);
/* What the first bytes say (len may be short: then UNKNOWN). */
hyocr_format             hyocr_format_sniff(const void *data, size_t len);
/* Whether a file name ends in the extension of a readable format (case-insensitive), for
 * picking files out of a folder; what is read is still decided by the content. */
bool                     hyocr_format_name_matches(const char *filename);
/* The formats' names for a message: "PNG, JPEG, TIFF, …, PDF" (free it). */
char                    *hyocr_format_names(void);

/* PDF pages are rendered at this resolution unless the page would then exceed the pixel
 * budget: at 200 dpi an A4 or Letter page (3.9 / 3.7 megapixels) fits even the 2048²
 * budget of HunyuanOCR 1.0 unscaled, and 10-point text is about 28 pixels high. */
#define HYOCR_PDF_DEFAULT_DPI 200.0
/* The budget when none is given: the largest of any HunyuanOCR release (1.5: 4096²). */
#define HYOCR_PDF_DEFAULT_MAX_PIXELS (INT64_C(4096) * 4096)

typedef struct {
    int64_t     max_decode_pixels;  /* raster pages: refuse bigger ones from the header; 0 = default */
    bool        ignore_exif;        /* keep raster pixels as stored (EXIF / TIFF orientation ignored) */
    const char *password;           /* encrypted PDF: the user or owner password */
} hyocr_document_options;

typedef struct {
    double  dpi;         /* PDF: ≤ 0 = HYOCR_PDF_DEFAULT_DPI */
    int64_t max_pixels;  /* PDF: the resolution is lowered so a page has at most this many pixels;
                          * ≤ 0 = HYOCR_PDF_DEFAULT_MAX_PIXELS (the engine passes the model's max_pixels) */
    int     max_side;    /* > 0: the long edge at most this (PDF rendered at that size, rasters
                          * Lanczos-scaled as hyocr_image_options.max_side) */
    int     resize_threads;   /* of that scaling (resize.h); 0 = the cores */
} hyocr_render_options;

typedef struct hyocr_document hyocr_document;

/* Reads the header (and for a PDF its cross-reference table) only: pages are decoded when
 * rendered. Fails with HYOCR_ERROR_PASSWORD for an encrypted PDF without the right password,
 * HYOCR_ERROR_IMAGE for anything unreadable, HYOCR_ERROR_IO when the file cannot be read. */
hyocr_document *hyocr_document_open(const char *path, const hyocr_document_options *opts, GError **error);
/* The same over bytes in memory (kept by reference). name is used in messages. */
hyocr_document *hyocr_document_open_bytes(GBytes *bytes, const char *name, const hyocr_document_options *opts,
                                          GError **error);
/* A document of one page holding a copy of img (a pasted picture, say), so what reads documents
 * (the exports) reads it too. NULL only when out of memory. */
hyocr_document *hyocr_document_new_for_image(const hyocr_image *img, const char *name);
hyocr_document *hyocr_document_ref(hyocr_document *doc);
void            hyocr_document_unref(hyocr_document *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_document, hyocr_document_unref)

const char  *hyocr_document_name(const hyocr_document *doc);
hyocr_format hyocr_document_format(const hyocr_document *doc);
int          hyocr_document_n_pages(const hyocr_document *doc);

/* Page `page` (0-based), upright, as packed RGB. Thread-safe: a document renders one page
 * at a time, whatever thread asks. ro may be NULL (defaults). */
hyocr_image *hyocr_document_render(hyocr_document *doc, int page, const hyocr_render_options *ro, GError **error);
/* A page's natural size: points (1/72 inch) for a PDF, pixels (upright) for the others.
 * Thread-safe; a raster page may be decoded to learn it. */
bool hyocr_document_page_size(hyocr_document *doc, int page, double *width, double *height, GError **error);
/* The pixel size hyocr_document_render would give, without rendering a PDF page. */
bool hyocr_document_render_size(hyocr_document *doc, int page, const hyocr_render_options *ro, int *width,
                                int *height, GError **error);

/* A page selection as people write it, 1-based: "1-3,7", "5-" (to the end), "-2" (up to 2),
 * "all". Returns the 0-based page indices in the order given, each at most once; fails on
 * anything else or on a page past n_pages, saying which. */
GArray *hyocr_page_selection_parse(const char *spec, int n_pages, GError **error);

G_END_DECLS
