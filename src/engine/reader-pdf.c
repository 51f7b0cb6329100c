/* hyocr — PDF through poppler-glib: pages rendered with cairo (the renderer of pdftocairo,
 * so a page comes out pixel-identical to `pdftocairo -png -r DPI`) on white paper, at
 * HYOCR_PDF_DEFAULT_DPI unless that would exceed the pixel budget, each page only when asked.
 *
 * Refused before poppler sees them: a file without "%%EOF" in its last 1024 bytes (where
 * Acrobat looks for it) is truncated, whatever poppler could reconstruct from it. */
#include "error.h"
#include "i18n.h"
#include "reader.h"

#include <math.h>
#include <poppler.h>
#include <string.h>

/* cairo's largest image surface side. */
#define CAIRO_MAX_SIDE 32767

typedef struct {
    PopplerDocument *doc;
} pdf_state;

/* poppler-glib before 23.x has no autoptr for its pages. */
typedef PopplerPage pdf_page;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(pdf_page, g_object_unref)

static bool has_eof_marker(const uint8_t *data, size_t len)
{
    size_t from = len > 1024 ? len - 1024 : 0;
    for (size_t i = from; i + 5 <= len; i++)
        if (data[i] == '%' && memcmp(data + i, "%%EOF", 5) == 0) return true;
    return false;
}

static void *pdf_open(GBytes *bytes, const uint8_t *data, size_t len, const hyocr_document_options *opts,
                      int *n_pages, hyocr_decode_status *st)
{
    if (!has_eof_marker(data, len)) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("PDF file is truncated (%zu bytes, no %%%%EOF marker at its end); "
                          "the file is incomplete — download or export it again"), len);
        return NULL;
    }
    g_autoptr(GError) err = NULL;
    const char *password = opts->password;
    /* Not poppler_document_new_from_bytes: before poppler 23.x it reads freed memory when a
     * password is given and wrong (it retries on a copy of a stream it has just deleted). The
     * stream reader has no such retry and reads the same bytes in place. */
    g_autoptr(GInputStream) in = g_memory_input_stream_new_from_bytes(bytes);
    PopplerDocument *doc = poppler_document_new_from_stream(in, (goffset)len, password, NULL, &err);
    if (!doc && g_error_matches(err, POPPLER_ERROR, POPPLER_ERROR_ENCRYPTED)) {
        if (password)
            hyocr_decode_fail(st, HYOCR_ERROR_PASSWORD, _("the password given does not open this encrypted PDF"));
        else
            hyocr_decode_fail(st, HYOCR_ERROR_PASSWORD, _("the PDF is encrypted and needs a password to open"));
        return NULL;
    }
    if (!doc) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("damaged PDF that cannot be opened (poppler: %s)"),
                          err ? err->message : "?");
        return NULL;
    }
    *n_pages = poppler_document_get_n_pages(doc);
    if (*n_pages < 1) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("the PDF has no pages"));
        g_object_unref(doc);
        return NULL;
    }
    pdf_state *s = g_new0(pdf_state, 1);
    s->doc = doc;
    return s;
}

static void pdf_close(void *state)
{
    pdf_state *s = state;
    g_object_unref(s->doc);
    g_free(s);
}

static PopplerPage *get_page(pdf_state *s, int page, hyocr_decode_status *st)
{
    PopplerPage *p = poppler_document_get_page(s->doc, page);
    if (!p) hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("the PDF's page tree has no page %d"), page + 1);
    return p;
}

static bool page_points(PopplerPage *p, double *w, double *h, hyocr_decode_status *st)
{
    poppler_page_get_size(p, w, h);   /* rotation (/Rotate) applied */
    if (!(*w > 0 && *h > 0 && isfinite(*w) && isfinite(*h))) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("the page has an empty or impossible size (%g × %g points)"),
                          *w, *h);
        return false;
    }
    return true;
}

static bool pdf_page_size(void *state, int page, double *w, double *h, hyocr_decode_status *st)
{
    g_autoptr(pdf_page) p = get_page(state, page, st);
    return p && page_points(p, w, h, st);
}

/* The resolution for a page: the one asked for, lowered until the page fits the pixel
 * budget, max_side and cairo's surface limit. */
static double render_dpi(double wpt, double hpt, const hyocr_render_options *ro)
{
    double dpi = ro->dpi > 0 ? ro->dpi : HYOCR_PDF_DEFAULT_DPI;
    double budget = (double)(ro->max_pixels > 0 ? ro->max_pixels : HYOCR_PDF_DEFAULT_MAX_PIXELS);
    double long_pt = MAX(wpt, hpt);
    if (wpt * dpi / 72 * (hpt * dpi / 72) > budget) dpi = 72 * sqrt(budget / (wpt * hpt));
    if (ro->max_side > 0 && long_pt * dpi / 72 > ro->max_side) dpi = 72.0 * ro->max_side / long_pt;
    if (long_pt * dpi / 72 > CAIRO_MAX_SIDE) dpi = 72.0 * CAIRO_MAX_SIDE / long_pt;
    return dpi;
}

/* pdftoppm and pdftocairo size a page ceil(points · dpi / 72), the product first (so Letter
 * at 150 dpi is exactly 1650 rows, not 1651). */
static int edge(double pt, double dpi)
{
    double px = ceil(pt * dpi / 72);
    return px < 1 ? 1 : px > CAIRO_MAX_SIDE ? CAIRO_MAX_SIDE : (int)px;
}

/* The resolution and pixel size of a page: ceil() may push a page that fits exactly one
 * pixel row over its budget; shave the resolution until it fits. */
static double fit(double wpt, double hpt, const hyocr_render_options *ro, int *width, int *height)
{
    double dpi = render_dpi(wpt, hpt, ro);
    double budget = (double)(ro->max_pixels > 0 ? ro->max_pixels : HYOCR_PDF_DEFAULT_MAX_PIXELS);
    while (((double)edge(wpt, dpi) * edge(hpt, dpi) > budget ||
            (ro->max_side > 0 && MAX(edge(wpt, dpi), edge(hpt, dpi)) > ro->max_side)) &&
           (edge(wpt, dpi) > 1 || edge(hpt, dpi) > 1))
        dpi *= 0.9995;
    *width = edge(wpt, dpi);
    *height = edge(hpt, dpi);
    return dpi;
}

void hyocr_pdf_render_size(double wpt, double hpt, const hyocr_render_options *ro, int *width, int *height)
{
    fit(wpt, hpt, ro, width, height);
}

static hyocr_image *surface_to_image(cairo_surface_t *surf, int w, int h)
{
    hyocr_image *img = hyocr_image_new(w, h);
    if (!img) return NULL;
    const uint8_t *px = cairo_image_surface_get_data(surf);
    int stride = cairo_image_surface_get_stride(surf);
    for (int y = 0; y < h; y++) {
        const uint32_t *row = (const uint32_t *)(px + (size_t)y * stride);
        uint8_t *out = img->rgb + (size_t)y * w * 3;
        for (int x = 0; x < w; x++) {
            out[3 * x + 0] = (uint8_t)(row[x] >> 16);
            out[3 * x + 1] = (uint8_t)(row[x] >> 8);
            out[3 * x + 2] = (uint8_t)row[x];
        }
    }
    return img;
}

static hyocr_image *pdf_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                               hyocr_decode_status *st)
{
    g_autoptr(pdf_page) p = get_page(state, page, st);
    double wpt, hpt;
    if (!p || !page_points(p, &wpt, &hpt, st)) return NULL;
    int w, h;
    double dpi = fit(wpt, hpt, ro, &w, &h);
    if (!hyocr_decode_check_size(st, "PDF", w, h)) return NULL;
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(surf);
        hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory rendering a %d×%d page"), w, h);
        return NULL;
    }
    cairo_t *cr = cairo_create(surf);
    cairo_set_source_rgb(cr, 1, 1, 1);   /* paper: PDF pages are transparent */
    cairo_paint(cr);
    cairo_scale(cr, dpi / 72, dpi / 72);
    poppler_page_render(p, cr);
    cairo_destroy(cr);
    cairo_surface_flush(surf);
    hyocr_image *img = surface_to_image(surf, w, h);
    cairo_surface_destroy(surf);
    if (!img) hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory rendering a %d×%d page"), w, h);
    *orientation = 0;
    return img;
}

static bool pdf_draw(void *state, int page, cairo_t *cr, hyocr_decode_status *st)
{
    g_autoptr(pdf_page) p = get_page(state, page, st);
    if (!p) return false;
    poppler_page_render_for_printing(p, cr);
    return true;
}

const hyocr_reader hyocr_reader_pdf = {
    .format = HYOCR_FORMAT_PDF, .open = pdf_open, .close = pdf_close, .render = pdf_render,
    .page_size = pdf_page_size, .draw = pdf_draw,
};
