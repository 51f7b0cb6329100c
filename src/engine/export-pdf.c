/* hyocr — the searchable PDF: every page as it was (a PDF page's own content, redrawn through
 * cairo; an image page's pixels, losslessly, one point a pixel) over a text layer that no one
 * sees.
 *
 * cairo has no invisible text mode (PDF's Tr 3), and it drops drawing it can prove has no
 * effect (a transparent colour). So the text is drawn first, in black, at the spotted boxes,
 * and the page is drawn over it: an image page covers it with its pixels; a PDF page, whose
 * background is transparent, gets white paper first. The paper is a 1×1 white image scaled to
 * the page, not a solid fill, because cairo discards everything under an opaque fill of the
 * whole page, text included. The text stays in the content stream, so viewers select, copy
 * and search it and pdftotext extracts it; no pixel of it shows.
 *
 * Each line is set with Pango (font fallback for any script) and scaled so its logical
 * extents fill the box: pdftotext -bbox then reports the words within the box. A page whose
 * task gave no boxes gets its lines spread down the page, so search still finds the page. */
#include "export-private.h"
#include "error.h"
#include "i18n.h"
#include "reader.h"
#include "spotting.h"

#include <cairo-pdf.h>
#include <cairo.h>
#include <gio/gio.h>
#include <pango/pangocairo.h>
#include <math.h>
#include <string.h>

/* Pango lays the text out at this size; the box scales it. Large, so that the glyph
 * advances are not rounded to whole pixels first. */
#define LAYOUT_SIZE 100.0

typedef struct {
    double x1, y1, x2, y2;   /* points */
    const char *text;
} text_box;

static PangoLayout *text_layout(cairo_t *cr)
{
    PangoLayout *layout = pango_cairo_create_layout(cr);
    /* unhinted metrics: advances that scale linearly with the size */
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    pango_cairo_context_set_font_options(pango_layout_get_context(layout), fo);
    cairo_font_options_destroy(fo);
    PangoFontDescription *fd = pango_font_description_from_string("Sans");
    pango_font_description_set_absolute_size(fd, LAYOUT_SIZE * PANGO_SCALE);
    pango_layout_set_font_description(layout, fd);
    pango_font_description_free(fd);
    pango_layout_context_changed(layout);
    return layout;
}

/* One line whose logical extents fill the box exactly. */
static void show_in_box(cairo_t *cr, PangoLayout *layout, const text_box *b)
{
    if (!b->text || !*b->text || b->x2 - b->x1 <= 0 || b->y2 - b->y1 <= 0) return;
    pango_layout_set_text(layout, b->text, -1);
    PangoRectangle ink, log;
    pango_layout_get_extents(layout, &ink, &log);
    double lw = (double)log.width / PANGO_SCALE, lh = (double)log.height / PANGO_SCALE;
    if (lw <= 0 || lh <= 0) return;
    double sx = (b->x2 - b->x1) / lw, sy = (b->y2 - b->y1) / lh;
    cairo_save(cr);
    cairo_translate(cr, b->x1 - sx * log.x / PANGO_SCALE, b->y1 - sy * log.y / PANGO_SCALE);
    cairo_scale(cr, sx, sy);
    cairo_move_to(cr, 0, 0);
    pango_cairo_show_layout(cr, layout);
    cairo_restore(cr);
}

/* The spotted lines at their boxes; or, without boxes, the text's lines spread down the page. */
static void text_layer(cairo_t *cr, const hyocr_export_page *p, const hyocr_export_geometry *g)
{
    if (!p->text) return;
    g_autoptr(PangoLayout) layout = text_layout(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    if (p->task == HYOCR_TASK_SPOTTING) {
        g_autoptr(GPtrArray) lines = hyocr_spot_parse(p->text);
        for (guint i = 0; i < lines->len; i++) {
            const hyocr_spot_line *l = lines->pdata[i];
            text_box b = { l->x1 * g->w_pt / 1000, l->y1 * g->h_pt / 1000, l->x2 * g->w_pt / 1000,
                           l->y2 * g->h_pt / 1000, l->text };
            show_in_box(cr, layout, &b);
        }
        return;
    }
    g_auto(GStrv) lines = g_strsplit(p->text, "\n", -1);
    guint n = g_strv_length(lines);
    double step = n ? g->h_pt / n : 0;
    for (guint i = 0; i < n; i++) {
        g_autofree char *line = g_strstrip(g_strdup(lines[i]));
        text_box b = { 0, i * step, g->w_pt, (i + 1) * step, line };
        show_in_box(cr, layout, &b);
    }
}

static cairo_surface_t *image_surface(const hyocr_image *img)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, img->width, img->height);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) return s;
    cairo_surface_flush(s);
    uint8_t *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < img->height; y++) {
        uint32_t *row = (uint32_t *)(px + (size_t)y * stride);
        const uint8_t *in = img->rgb + (size_t)y * img->width * 3;
        for (int x = 0; x < img->width; x++)
            row[x] = 0xFF000000u | (uint32_t)in[3 * x] << 16 | (uint32_t)in[3 * x + 1] << 8 | in[3 * x + 2];
    }
    cairo_surface_mark_dirty(s);
    return s;
}

/* Paints surf over the whole page of w × h points. */
static void paint_scaled(cairo_t *cr, cairo_surface_t *surf, int sw, int sh, double w, double h)
{
    cairo_save(cr);
    cairo_scale(cr, w / sw, h / sh);
    cairo_set_source_surface(cr, surf, 0, 0);
    /* /Interpolate false: poppler's cairo renderer smooths an interpolated image even at its
     * own resolution, which blurs its last rows; viewers zoomed in smooth it anyway */
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_paint(cr);
    cairo_restore(cr);
}

static bool draw_page(cairo_t *cr, const hyocr_export_page *p, const hyocr_export_geometry *g, GError **error)
{
    if (g->vector) {
        cairo_surface_t *paper = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
        cairo_surface_flush(paper);
        memset(cairo_image_surface_get_data(paper), 0xFF, 4);
        cairo_surface_mark_dirty(paper);
        paint_scaled(cr, paper, 1, 1, g->w_pt, g->h_pt);
        cairo_surface_destroy(paper);
        return hyocr_document_draw(p->document, p->page, cr, error);
    }
    g_autoptr(hyocr_image) img = hyocr_document_render(p->document, p->page, NULL, error);
    if (!img) return false;
    cairo_surface_t *surf = image_surface(img);
    bool ok = cairo_surface_status(surf) == CAIRO_STATUS_SUCCESS;
    if (ok) paint_scaled(cr, surf, img->width, img->height, g->w_pt, g->h_pt);
    else g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("out of memory rendering a %d×%d page"),
                     img->width, img->height);
    cairo_surface_destroy(surf);
    return ok;
}

static bool write_pages(cairo_surface_t *pdf, const hyocr_export *ex, GError **error)
{
    for (int i = 0; i < ex->n_pages; i++) {
        const hyocr_export_page *p = &ex->pages[i];
        hyocr_export_geometry g;
        if (!hyocr_export_page_geometry(p, &g, error)) return false;
        /* whole points: cairo 1.16 clips a page to its size truncated (see export-private.h);
         * a PDF page of fractional size gains less than a point of paper at the right and
         * bottom instead of losing its edge */
        cairo_pdf_surface_set_size(pdf, ceil(g.w_pt), ceil(g.h_pt));
        cairo_t *cr = cairo_create(pdf);
        text_layer(cr, p, &g);
        bool ok = draw_page(cr, p, &g, error);
        cairo_show_page(cr);
        cairo_destroy(cr);
        if (!ok) return false;
    }
    return true;
}

static cairo_status_t stream_write(void *closure, const unsigned char *data, unsigned int length)
{
    return g_output_stream_write_all(closure, data, length, NULL, NULL, NULL) ? CAIRO_STATUS_SUCCESS
                                                                               : CAIRO_STATUS_WRITE_ERROR;
}

/* GIO's replace writes a temporary file and renames it over path on close; a cancelled close
 * leaves path as it was. */
bool hyocr_export_write_pdf(const hyocr_export *ex, const char *path, GError **error)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GError) err = NULL;
    g_autoptr(GFileOutputStream) out = g_file_replace(file, NULL, FALSE, G_FILE_CREATE_NONE, NULL, &err);
    if (!out) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot write: %s"), path, err->message);
        return false;
    }
    cairo_surface_t *pdf = cairo_pdf_surface_create_for_stream(stream_write, out, 612, 792);
    cairo_pdf_surface_set_metadata(pdf, CAIRO_PDF_METADATA_CREATOR, "hyocr " HYOCR_VERSION);
    if (ex->n_pages)
        cairo_pdf_surface_set_metadata(pdf, CAIRO_PDF_METADATA_TITLE, hyocr_document_name(ex->pages[0].document));
    bool ok = write_pages(pdf, ex, error);
    cairo_surface_finish(pdf);
    cairo_status_t status = cairo_surface_status(pdf);
    cairo_surface_destroy(pdf);
    if (ok && status != CAIRO_STATUS_SUCCESS) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot write: %s"), path, cairo_status_to_string(status));
        ok = false;
    }
    g_autoptr(GCancellable) abandon = g_cancellable_new();
    if (!ok) g_cancellable_cancel(abandon);
    if (!g_output_stream_close(G_OUTPUT_STREAM(out), abandon, &err) && ok) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot write: %s"), path, err->message);
        ok = false;
    }
    return ok;
}
