/* hyocr — the one decode interface behind every file format (document.c dispatches to it;
 * each format is its own file: image.c for PNG and JPEG, reader-tiff.c, reader-webp.c,
 * reader-heif.c, reader-pdf.c). Not installed; not part of the API.
 *
 * A reader checks what the header claims (sizes, page counts) before it decodes anything,
 * so a file that lies costs nothing but its header; it reports through a decode status, and
 * document.c turns that into the GError ("name: message"). */
#pragma once
#include "document.h"
#include "image.h"
#include <glib.h>

G_BEGIN_DECLS

struct _cairo;   /* cairo_t, without making cairo a dependency of every reader */

/* Pillow's decompression-bomb limit ×2: raster pages larger than this are refused from the
 * header unless the caller sets another limit. */
#define HYOCR_DEFAULT_MAX_DECODE_PIXELS INT64_C(178956970)

typedef struct {
    const char *name;          /* the file, for messages */
    int64_t     limit;         /* pixels a raster page may have */
    int         code;          /* HyocrError to report */
    char        msg[512];      /* set on failure, without the "name: " prefix */
} hyocr_decode_status;

void hyocr_decode_fail(hyocr_decode_status *st, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Refuses an empty, impossible or over-limit size (header values, before any pixel memory). */
bool hyocr_decode_check_size(hyocr_decode_status *st, const char *kind, int64_t width, int64_t height);

typedef struct {
    hyocr_format format;
    /* Parses the header; data stays valid (bytes holds it) until close. Returns the reader's
     * state, or NULL with st set. */
    void        *(*open)(GBytes *bytes, const uint8_t *data, size_t len, const hyocr_document_options *opts,
                         int *n_pages, hyocr_decode_status *st);
    void         (*close)(void *state);
    /* The page as stored, with the orientation (EXIF/TIFF values 1..8, 0 = none) that turns
     * it upright. PDF honours ro (resolution, budget, max_side); rasters ignore it. */
    hyocr_image *(*render)(void *state, int page, const hyocr_render_options *ro, int *orientation,
                           hyocr_decode_status *st);
    /* Optional: the natural size without decoding (points for vector pages, upright pixels
     * otherwise); without it document.c decodes the page to learn it. */
    bool         (*page_size)(void *state, int page, double *width, double *height, hyocr_decode_status *st);
    /* Optional, vector pages only: draws the page's own content into cr, in points. */
    bool         (*draw)(void *state, int page, struct _cairo *cr, hyocr_decode_status *st);
} hyocr_reader;

extern const hyocr_reader hyocr_reader_png;    /* image.c */
extern const hyocr_reader hyocr_reader_jpeg;   /* image.c */
extern const hyocr_reader hyocr_reader_tiff;
extern const hyocr_reader hyocr_reader_webp;
extern const hyocr_reader hyocr_reader_heif;   /* HEIC and AVIF */
extern const hyocr_reader hyocr_reader_pdf;

/* image.c: img (taken over) turned upright for an orientation 1..8 (any other value: img
 * itself); NULL with HYOCR_ERROR_NO_MEMORY (naming name) when out of memory. */
hyocr_image *hyocr_image_upright(hyocr_image *img, int orientation, const char *name, GError **error);

/* document.c: draws a vector (PDF) page's own content into cr, in points; false with error
 * set for a raster page. Thread-safe like hyocr_document_render. */
bool hyocr_document_draw(hyocr_document *doc, int page, struct _cairo *cr, GError **error);

/* reader-pdf.c: the pixel size of a page of wpt × hpt points under ro (resolution, budget,
 * max_side, at least 1 pixel a side); shared with the searchable-PDF export. */
void hyocr_pdf_render_size(double wpt, double hpt, const hyocr_render_options *ro, int *width, int *height);

G_END_DECLS
