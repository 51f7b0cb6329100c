/* Documents and their readers: the format list and content sniffing, page selections, and
 * per format the pages compared with the reference tools' decodes (pdftocairo / pdftoppm,
 * tifftopnm, dwebp, heif-convert), plus the bad input of each (truncated, encrypted, lying
 * headers, looping directories, huge pages), every message checked.
 *
 * Every input is made here: PDFs with cairo, TIFFs with libtiff, WebP with libwebp, HEIC and
 * AVIF with libheif. A reference tool that is not installed skips its comparison loudly
 * (.ci/setup installs them all). */
#include "document.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "image.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <string.h>
#if HYOCR_HAVE_PDF
#include <cairo-pdf.h>
#include <cairo.h>
#endif
#if HYOCR_HAVE_TIFF
#include <tiffio.h>
#endif
#if HYOCR_HAVE_WEBP
#include <webp/encode.h>
#endif
#if HYOCR_HAVE_HEIF
#include <libheif/heif.h>
#endif

typedef struct {
    char *dir;
} Fixture;

static void fx_setup(Fixture *fx, gconstpointer data) { fx->dir = hyocr_test_tmpdir(); }
static void fx_teardown(Fixture *fx, gconstpointer data) { hyocr_test_rmdir(fx->dir); g_free(fx->dir); }

static char *tmp_path(Fixture *fx, const char *name) { return g_build_filename(fx->dir, name, NULL); }

static void put_bytes(const char *path, const void *data, size_t len)
{
    g_assert_true(g_file_set_contents(path, data, (gssize)len, NULL));
}

static GBytes *file_bytes(const char *path)
{
    char *data;
    gsize len;
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    return g_bytes_new_take(data, len);
}

/* A test pattern with edges and gradients, so a wrong channel order, row or turn shows. */
static uint8_t pattern(int x, int y, int c)
{
    if ((x / 7 + y / 5) % 3 == 0) return c == 0 ? 20 : c == 1 ? 30 : 200;
    return (uint8_t)(c == 0 ? x * 255 / 97 : c == 1 ? y * 255 / 61 : (x * y) % 256);
}

static uint8_t *make_rgb(int w, int h)
{
    uint8_t *rgb = g_malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) rgb[((size_t)y * w + x) * 3 + c] = pattern(x, y, c);
    return rgb;
}

static void expect_error(GError *err, int code, const char *part)
{
    g_assert_nonnull(err);
    if (err->domain != HYOCR_ERROR || err->code != code)
        g_error("expected code %d, got %d: %s", code, err->code, err->message);
    if (part && !strstr(err->message, part)) g_error("message lacks '%s': %s", part, err->message);
}

static void expect_open_error(const char *path, const hyocr_document_options *o, int code, const char *part)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_document) doc = hyocr_document_open(path, o, &err);
    g_assert_null(doc);
    expect_error(err, code, part);
    g_assert_nonnull(strstr(err->message, path));   /* says which file */
}

static hyocr_document *open_ok(const char *path, const hyocr_document_options *o)
{
    g_autoptr(GError) err = NULL;
    hyocr_document *doc = hyocr_document_open(path, o, &err);
    if (!doc) g_error("%s: %s", path, err->message);
    return doc;
}

static hyocr_image *render_ok(hyocr_document *doc, int page, const hyocr_render_options *ro)
{
    g_autoptr(GError) err = NULL;
    hyocr_image *img = hyocr_document_render(doc, page, ro, &err);
    if (!img) g_error("page %d: %s", page + 1, err->message);
    return img;
}

/* ------------------------------------------------------------------------ reference tools */

static bool have_tool(const char *name, const char *package)
{
    g_autofree char *p = g_find_program_in_path(name);
    if (p) return true;
    g_autofree char *msg = g_strdup_printf("%s not installed (Debian package %s): comparison skipped", name, package);
    g_test_skip(msg);
    return false;
}

static void run_tool(const char *const *argv)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *out = NULL, *errout = NULL;
    int status;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &errout, &status, &err))
        g_error("%s: %s", argv[0], err->message);
    if (!g_spawn_check_wait_status(status, NULL)) g_error("%s failed: %s", argv[0], errout);
}

static const char *pnm_token(const char **p, const char *end)
{
    for (;;) {
        while (*p < end && g_ascii_isspace(**p)) (*p)++;
        if (*p < end && **p == '#')
            while (*p < end && **p != '\n') (*p)++;
        else break;
    }
    const char *t = *p;
    while (*p < end && !g_ascii_isspace(**p)) (*p)++;
    return t;
}

/* PBM (P4), PGM (P5) or PPM (P6) as 8-bit RGB; 16-bit samples are kept whole in *wide. */
static hyocr_image *read_pnm(const char *path, uint16_t **wide)
{
    g_autoptr(GBytes) b = file_bytes(path);
    gsize len;
    const char *p = g_bytes_get_data(b, &len), *end = p + len;
    g_assert_true(len > 2 && p[0] == 'P');
    char kind = p[1];
    p += 2;
    int w = atoi(pnm_token(&p, end)), h = atoi(pnm_token(&p, end));
    int maxval = kind == '4' ? 1 : atoi(pnm_token(&p, end));
    p++;   /* the one whitespace before the raster */
    hyocr_image *img = hyocr_image_new(w, h);
    if (wide) *wide = maxval > 255 ? g_new(uint16_t, (size_t)w * h * 3) : NULL;
    const uint8_t *r = (const uint8_t *)p;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            for (int c = 0; c < 3; c++) {
                unsigned v;
                if (kind == '4') v = (r[(size_t)y * ((w + 7) / 8) + x / 8] >> (7 - x % 8)) & 1 ? 0 : 255;
                else if (maxval > 255) v = r[(kind == '5' ? i : i * 3 + c) * 2] << 8 | r[(kind == '5' ? i : i * 3 + c) * 2 + 1];
                else v = r[kind == '5' ? i : i * 3 + c];
                if (wide && *wide) (*wide)[i * 3 + c] = (uint16_t)v;
                img->rgb[i * 3 + c] = (uint8_t)(maxval > 255 ? v >> 8 : v);
            }
        }
    return img;
}

static void assert_same_image(const hyocr_image *a, const hyocr_image *b, const char *what)
{
    g_assert_cmpint(a->width, ==, b->width);
    g_assert_cmpint(a->height, ==, b->height);
    size_t n = (size_t)a->width * a->height * 3;
    for (size_t i = 0; i < n; i++)
        if (a->rgb[i] != b->rgb[i])
            g_error("%s: first difference at pixel (%zu, %zu) channel %zu: %d vs %d", what, i / 3 % a->width,
                    i / 3 / a->width, i % 3, a->rgb[i], b->rgb[i]);
}

/* ------------------------------------------------------------------------ formats */

static void test_formats_list(void)
{
    size_t n;
    const hyocr_format_info *f = hyocr_formats(&n);
    g_assert_cmpuint(n, >=, 2);
    g_assert_cmpint(f[0].format, ==, HYOCR_FORMAT_PNG);
    g_assert_cmpstr(f[0].mime_types[0], ==, "image/png");
    g_assert_cmpint(f[1].format, ==, HYOCR_FORMAT_JPEG);
    for (size_t i = 0; i < n; i++) {
        g_assert_true(hyocr_format_get(f[i].format) == &f[i]);
        g_assert_nonnull(f[i].mime_types[0]);
        g_assert_nonnull(f[i].extensions[0]);
    }
    g_assert_null(hyocr_format_get(HYOCR_FORMAT_UNKNOWN));
    g_assert_true(hyocr_format_name_matches("/x/Scan.JPG"));
    g_assert_true(hyocr_format_name_matches("a.b.png"));
    g_assert_false(hyocr_format_name_matches("notes.txt"));
    g_assert_false(hyocr_format_name_matches("png"));
#if HYOCR_HAVE_PDF && HYOCR_HAVE_TIFF && HYOCR_HAVE_WEBP && HYOCR_HAVE_HEIF
    g_assert_cmpuint(n, ==, 7);
    g_assert_true(hyocr_format_name_matches("doc.pdf"));
    g_assert_true(hyocr_format_name_matches("fax.tif"));
    g_assert_true(hyocr_format_name_matches("IMG_0001.HEIC"));
    const hyocr_format_info *pdf = hyocr_format_get(HYOCR_FORMAT_PDF);
    g_assert_cmpstr(pdf->mime_types[0], ==, "application/pdf");
    g_assert_true(pdf->multi_page);
    g_assert_false(hyocr_format_get(HYOCR_FORMAT_WEBP)->multi_page);
#endif
}

static void test_formats_sniff(void)
{
    g_assert_cmpint(hyocr_format_sniff("\x89PNG\r\n\x1a\n", 8), ==, HYOCR_FORMAT_PNG);
    g_assert_cmpint(hyocr_format_sniff("\x89PNG\r\n\x1a", 7), ==, HYOCR_FORMAT_UNKNOWN);
    g_assert_cmpint(hyocr_format_sniff("\xFF\xD8\xFF\xE0", 4), ==, HYOCR_FORMAT_JPEG);
    g_assert_cmpint(hyocr_format_sniff("II*\0\x08\0\0\0", 8), ==, HYOCR_FORMAT_TIFF);
    g_assert_cmpint(hyocr_format_sniff("MM\0*\0\0\0\x08", 8), ==, HYOCR_FORMAT_TIFF);
    g_assert_cmpint(hyocr_format_sniff("II+\0\x08\0\0\0", 8), ==, HYOCR_FORMAT_TIFF);   /* BigTIFF */
    g_assert_cmpint(hyocr_format_sniff("RIFF\x10\0\0\0WEBPVP8 ", 16), ==, HYOCR_FORMAT_WEBP);
    g_assert_cmpint(hyocr_format_sniff("RIFF\x10\0\0\0WAVEfmt ", 16), ==, HYOCR_FORMAT_UNKNOWN);
    g_assert_cmpint(hyocr_format_sniff("\0\0\0\x18" "ftypheic\0\0\0\0mif1heic", 24), ==, HYOCR_FORMAT_HEIF);
    g_assert_cmpint(hyocr_format_sniff("\0\0\0\x18" "ftypavif\0\0\0\0mif1avif", 24), ==, HYOCR_FORMAT_AVIF);
    g_assert_cmpint(hyocr_format_sniff("\0\0\0\x18" "ftypmif1\0\0\0\0mif1avif", 24), ==, HYOCR_FORMAT_AVIF);
    g_assert_cmpint(hyocr_format_sniff("\0\0\0\x18" "ftypmif1\0\0\0\0mif1heic", 24), ==, HYOCR_FORMAT_HEIF);
    g_assert_cmpint(hyocr_format_sniff("\0\0\0\x18" "ftypisom\0\0\0\0isomavc1", 24), ==, HYOCR_FORMAT_UNKNOWN);
    g_assert_cmpint(hyocr_format_sniff("%PDF-1.7\n", 9), ==, HYOCR_FORMAT_PDF);
    /* Readers take a PDF header anywhere in the first 1024 bytes, and nowhere after. */
    char buf[1200];
    memset(buf, ' ', sizeof buf);
    memcpy(buf + 1000, "%PDF-1.4", 8);
    g_assert_cmpint(hyocr_format_sniff(buf, sizeof buf), ==, HYOCR_FORMAT_PDF);
    memset(buf, ' ', sizeof buf);
    memcpy(buf + 1100, "%PDF-1.4", 8);
    g_assert_cmpint(hyocr_format_sniff(buf, sizeof buf), ==, HYOCR_FORMAT_UNKNOWN);
    g_assert_cmpint(hyocr_format_sniff(NULL, 0), ==, HYOCR_FORMAT_UNKNOWN);
}

static void test_formats_unreadable(Fixture *fx, gconstpointer data)
{
    g_autofree char *text = tmp_path(fx, "notes.pdf");
    put_bytes(text, "hello, world\n", 13);
    expect_open_error(text, NULL, HYOCR_ERROR_IMAGE, "not a file hyocr can read (starts with 68 65 6c 6c");
    expect_open_error(text, NULL, HYOCR_ERROR_IMAGE, "it reads PNG, JPEG");
    g_autofree char *gif = tmp_path(fx, "anim.webp");
    put_bytes(gif, "GIF89a\x01\x00\x01\x00", 10);
    expect_open_error(gif, NULL, HYOCR_ERROR_IMAGE, "looks like a GIF image");
    g_autofree char *empty = tmp_path(fx, "empty.tif");
    put_bytes(empty, "", 0);
    expect_open_error(empty, NULL, HYOCR_ERROR_IMAGE, "empty");
    g_autofree char *missing = tmp_path(fx, "missing.pdf");
    expect_open_error(missing, NULL, HYOCR_ERROR_IO, "cannot read the file");
}

/* ------------------------------------------------------------------------ page selections */

static void expect_pages(const char *spec, int n, const int *want, int n_want)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GArray) got = hyocr_page_selection_parse(spec, n, &err);
    if (!got) g_error("“%s”: %s", spec, err->message);
    g_assert_cmpuint(got->len, ==, (guint)n_want);
    for (int i = 0; i < n_want; i++) g_assert_cmpint(g_array_index(got, int, i), ==, want[i]);
}

static void expect_bad_pages(const char *spec, int n, const char *part)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GArray) got = hyocr_page_selection_parse(spec, n, &err);
    g_assert_null(got);
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, part);
}

static void test_page_selection(void)
{
    expect_pages("1-3,7", 10, (int[]){ 0, 1, 2, 6 }, 4);
    expect_pages(" 7 , 1-2 ", 10, (int[]){ 6, 0, 1 }, 3);
    expect_pages("8-", 10, (int[]){ 7, 8, 9 }, 3);
    expect_pages("-2", 10, (int[]){ 0, 1 }, 2);
    expect_pages("2,1-3,2", 5, (int[]){ 1, 0, 2 }, 3);   /* each page once, in the order first given */
    expect_pages("all", 3, (int[]){ 0, 1, 2 }, 3);
    expect_pages("10000", 10000, (int[]){ 9999 }, 1);
    expect_bad_pages("12", 10, "page 12 is past the end of the document (10 pages)");
    expect_bad_pages("3-12", 10, "page 12 is past the end");
    expect_bad_pages("3-1", 10, "the range 3-1 runs backwards");
    expect_bad_pages("0", 10, "“0” is not a page number");
    expect_bad_pages("1,,2", 10, "“” is not a page number");
    expect_bad_pages("one", 10, "“one” is not a page number");
    expect_bad_pages("-", 10, "“-” is not a page number");
    expect_bad_pages("1-2-3", 10, "not a page number");
    expect_bad_pages("99999999999", 10, "not a page number");
    expect_bad_pages("1", 0, "no pages");
}

/* ------------------------------------------------------------------------ PDF */

#if HYOCR_HAVE_PDF
/* Pages of w × h points, each with "Page N" and a line of text at known places and a filled
 * rectangle, so renders have text edges, flat areas and straight edges. */
static void make_pdf(const char *path, int n_pages, double w, double h)
{
    cairo_surface_t *s = cairo_pdf_surface_create(path, w, h);
    cairo_t *cr = cairo_create(s);
    for (int i = 0; i < n_pages; i++) {
        cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        cairo_set_font_size(cr, 24);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, 72, 100);
        g_autofree char *title = g_strdup_printf("Page %d", i + 1);
        cairo_show_text(cr, title);
        cairo_set_font_size(cr, 12);
        cairo_move_to(cr, 72, 140);
        cairo_show_text(cr, "The quick brown fox jumps over the lazy dog.");
        cairo_set_source_rgb(cr, 0.2, 0.4, 0.8);
        cairo_rectangle(cr, 72.5, 200.25, 150, 80);
        cairo_fill(cr);
        cairo_show_page(cr);
    }
    cairo_destroy(cr);
    cairo_surface_destroy(s);
}

static void test_pdf_pages(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "three.pdf");
    make_pdf(path, 3, 595, 842);   /* A4 */
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    g_assert_cmpint(hyocr_document_format(doc), ==, HYOCR_FORMAT_PDF);
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 3);
    double w, h;
    g_assert_true(hyocr_document_page_size(doc, 2, &w, &h, NULL));
    g_assert_cmpfloat(w, ==, 595);
    g_assert_cmpfloat(h, ==, 842);
    /* The default resolution: 200 dpi, ceil() of the size in pixels as pdftoppm sizes pages. */
    g_autoptr(hyocr_image) p1 = render_ok(doc, 0, NULL);
    g_assert_cmpint(p1->width, ==, 1653);    /* 595 pt · 200/72 = 1652.8 */
    g_assert_cmpint(p1->height, ==, 2339);   /* 842 pt · 200/72 = 2338.9 */
    int rw, rh;
    g_assert_true(hyocr_document_render_size(doc, 0, NULL, &rw, &rh, NULL));
    g_assert_cmpint(rw, ==, 1653);
    g_assert_cmpint(rh, ==, 2339);
    /* The model's budget lowers the resolution: 1.0's 2048² takes A4 at 200 dpi unscaled … */
    hyocr_render_options budget = { .max_pixels = 2048 * 2048 };
    g_assert_true(hyocr_document_render_size(doc, 0, &budget, &rw, &rh, NULL));
    g_assert_cmpint(rw, ==, 1653);
    /* … a smaller budget does not, and the page keeps its shape. */
    budget.max_pixels = 1000 * 1000;
    g_autoptr(hyocr_image) small = render_ok(doc, 1, &budget);
    g_assert_cmpint((int64_t)small->width * small->height, <=, 1000 * 1000);
    g_assert_cmpint((int64_t)small->width * small->height, >, 990 * 1000);
    g_assert_cmpfloat(fabs((double)small->width / small->height - 595.0 / 842), <, 0.002);
    hyocr_render_options side = { .max_side = 800 };
    g_autoptr(hyocr_image) s800 = render_ok(doc, 1, &side);
    g_assert_cmpint(s800->height, ==, 800);
    g_assert_cmpint(s800->width, ==, 566);   /* ceil(595 · 800/842) */
    /* Pages differ where their text does: page 1 is not page 3. */
    g_autoptr(hyocr_image) p3 = render_ok(doc, 2, NULL);
    g_assert_cmpmem(p1->rgb, (size_t)p1->width * 50 * 3, p3->rgb, (size_t)p3->width * 50 * 3);   /* blank top */
    g_assert_true(memcmp(p1->rgb, p3->rgb, (size_t)p1->width * p1->height * 3) != 0);
    g_autoptr(GError) err = NULL;
    g_assert_null(hyocr_document_render(doc, 3, NULL, &err));
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "there is no page 4 (the document has 3 pages)");
    /* hyocr_image_load reads the first page of a document. */
    g_autoptr(hyocr_image) first = hyocr_image_load(path, NULL, NULL);
    g_assert_nonnull(first);
    assert_same_image(first, p1, "hyocr_image_load of a PDF");
}

/* Same renderer (cairo) as pdftocairo: identical pixels. pdftoppm rasterises with Splash,
 * whose anti-aliasing of glyph and shape edges differs from cairo's; flat areas must match
 * exactly, and only pixels on an edge of our render (a 3×3 neighbourhood that is not one
 * colour) may differ. */
static bool on_edge(const hyocr_image *img, int x, int y)
{
    const uint8_t *c = img->rgb + ((size_t)y * img->width + x) * 3;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = CLAMP(x + dx, 0, img->width - 1), yy = CLAMP(y + dy, 0, img->height - 1);
            if (memcmp(c, img->rgb + ((size_t)yy * img->width + xx) * 3, 3)) return true;
        }
    return false;
}

static void test_pdf_reference(Fixture *fx, gconstpointer data)
{
    if (!have_tool("pdftocairo", "poppler-utils") || !have_tool("pdftoppm", "poppler-utils")) return;
    g_autofree char *path = tmp_path(fx, "ref.pdf");
    make_pdf(path, 2, 612, 792);   /* Letter */
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    hyocr_render_options ro = { .dpi = 150 };
    g_autoptr(hyocr_image) ours = render_ok(doc, 1, &ro);
    g_assert_cmpint(ours->width, ==, 1275);
    g_assert_cmpint(ours->height, ==, 1650);

    g_autofree char *cairo_base = tmp_path(fx, "cairo"), *cairo_png = tmp_path(fx, "cairo.png");
    run_tool((const char *[]){ "pdftocairo", "-png", "-r", "150", "-f", "2", "-l", "2", "-singlefile", path,
                               cairo_base, NULL });
    g_autoptr(hyocr_image) ref = hyocr_image_load(cairo_png, NULL, NULL);
    g_assert_nonnull(ref);
    assert_same_image(ours, ref, "page 2 against pdftocairo -r 150");

    g_autofree char *ppm_base = tmp_path(fx, "splash"), *ppm = tmp_path(fx, "splash.ppm");
    run_tool((const char *[]){ "pdftoppm", "-r", "150", "-f", "2", "-l", "2", "-singlefile", path, ppm_base, NULL });
    g_autoptr(hyocr_image) splash = read_pnm(ppm, NULL);
    g_assert_cmpint(splash->width, ==, ours->width);
    g_assert_cmpint(splash->height, ==, ours->height);
    size_t differ = 0, n = (size_t)ours->width * ours->height;
    for (int y = 0; y < ours->height; y++)
        for (int x = 0; x < ours->width; x++) {
            size_t i = ((size_t)y * ours->width + x) * 3;
            if (!memcmp(ours->rgb + i, splash->rgb + i, 3)) continue;
            differ++;
            if (!on_edge(ours, x, y))
                g_error("pdftoppm differs off an edge at (%d, %d): %d,%d,%d vs %d,%d,%d", x, y, ours->rgb[i],
                        ours->rgb[i + 1], ours->rgb[i + 2], splash->rgb[i], splash->rgb[i + 1], splash->rgb[i + 2]);
        }
    g_test_message("pdftoppm (Splash) vs ours (cairo) at 150 dpi: %zu of %zu pixels differ, all on edges", differ, n);
    g_assert_cmpuint(differ, <, n / 100);
}

static long rss_kib(void)
{
    g_autofree char *status = NULL;
    if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL)) return -1;
    const char *p = strstr(status, "VmRSS:");
    return p ? strtol(p + 6, NULL, 10) : -1;
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* 10 000 pages: opening reads the cross-reference table, not the pages; only the pages asked
 * for are rendered, and rendering more of them does not grow memory. */
static void test_pdf_many_pages(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "10000.pdf");
    make_pdf(path, 10000, 200, 100);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 10000);
    g_autoptr(hyocr_image) last = render_ok(doc, 9999, NULL);
    g_assert_cmpint(last->width, ==, 556);
    long before = rss_kib();
    for (int i = 0; i < 60; i++) {
        g_autoptr(hyocr_image) page = render_ok(doc, i * 166, NULL);
        g_assert_cmpint(page->height, ==, 278);
    }
    long after = rss_kib();
    g_test_message("10 000-page PDF: RSS %ld KiB before 60 more pages, %ld KiB after", before, after);
#ifndef UNDER_ASAN   /* ASan's quarantine keeps freed memory on purpose */
    g_assert_cmpint(after - before, <, 16 * 1024);
#endif
    g_autoptr(GError) err = NULL;
    g_autoptr(GArray) sel = hyocr_page_selection_parse("10001", 10000, &err);
    g_assert_null(sel);
    expect_error(err, HYOCR_ERROR_INVALID_ARGUMENT, "page 10001 is past the end of the document (10000 pages)");
}

/* 200 × 200 inches (14 400 pt, the largest page PDF allows): at 200 dpi that would be
 * 40 000² pixels (6.4 GB); the budget scales it down before anything is allocated. */
static void test_pdf_huge_page(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "huge.pdf");
    make_pdf(path, 1, 14400, 14400);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    long before = rss_kib();
    g_autoptr(hyocr_image) page = render_ok(doc, 0, NULL);
    long after = rss_kib();
    g_assert_cmpint(page->width, ==, 4096);
    g_assert_cmpint(page->height, ==, 4096);
    g_test_message("14 400-pt page: %d×%d, RSS +%ld KiB", page->width, page->height, after - before);
#ifndef UNDER_ASAN
    g_assert_cmpint(after - before, <, 256 * 1024);   /* the 4096² page and its surface: 112 MiB */
#endif
    hyocr_render_options ro = { .max_pixels = 2048 * 2048, .dpi = 600 };
    g_autoptr(hyocr_image) small = render_ok(doc, 0, &ro);
    g_assert_cmpint(small->width, ==, 2048);
    /* A budget of one pixel still gives a page. */
    ro.max_pixels = 1;
    g_autoptr(hyocr_image) dot = render_ok(doc, 0, &ro);
    g_assert_cmpint(dot->width * dot->height, ==, 1);
}

static void test_pdf_truncated(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "whole.pdf");
    make_pdf(path, 3, 595, 842);
    g_autoptr(GBytes) b = file_bytes(path);
    gsize len;
    const char *d = g_bytes_get_data(b, &len);
    size_t cuts[] = { len / 2, len - 7, 200, 9 };
    for (size_t i = 0; i < G_N_ELEMENTS(cuts); i++) {
        g_autofree char *cut = g_strdup_printf("%s.cut%zu.pdf", path, cuts[i]);
        put_bytes(cut, d, cuts[i]);
        expect_open_error(cut, NULL, HYOCR_ERROR_IMAGE, "PDF file is truncated");
        expect_open_error(cut, NULL, HYOCR_ERROR_IMAGE, "no %%EOF marker at its end");
    }
    /* The trailer damaged, the marker kept: poppler's own message. */
    g_autofree char *bad = tmp_path(fx, "bad.pdf");
    g_autofree char *junk = g_strdup_printf("%%PDF-1.5\n%s\n%%%%EOF\n", "garbage without objects");
    put_bytes(bad, junk, strlen(junk));
    expect_open_error(bad, NULL, HYOCR_ERROR_IMAGE, "damaged PDF that cannot be opened");
}

/* A PDF of the objects given (object i + 1 is objs[i], the catalog first), with its
 * cross-reference table: for structures cairo never writes. */
static void write_pdf_objects(const char *path, const char *const *objs, int n)
{
    GString *pdf = g_string_new("%PDF-1.4\n");
    g_autofree size_t *offs = g_new(size_t, n);
    for (int i = 0; i < n; i++) {
        offs[i] = pdf->len;
        g_string_append_printf(pdf, "%d 0 obj\n%s\nendobj\n", i + 1, objs[i]);
    }
    size_t xref = pdf->len;
    g_string_append_printf(pdf, "xref\n0 %d\n0000000000 65535 f \n", n + 1);
    for (int i = 0; i < n; i++) g_string_append_printf(pdf, "%010zu 00000 n \n", offs[i]);
    g_string_append_printf(pdf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n", n + 1, xref);
    put_bytes(path, pdf->str, pdf->len);
    g_string_free(pdf, TRUE);
}

/* A well-formed PDF whose page tree is empty: refused when opened, not a document of 0 jobs. */
static void test_pdf_no_pages(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "hollow.pdf");
    const char *objs[] = { "<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>" };
    write_pdf_objects(path, objs, G_N_ELEMENTS(objs));
    expect_open_error(path, NULL, HYOCR_ERROR_IMAGE, "the PDF has no pages");
}

static void test_pdf_encrypted(Fixture *fx, gconstpointer data)
{
    if (!have_tool("qpdf", "qpdf")) return;
    g_autofree char *plain = tmp_path(fx, "plain.pdf"), *enc = tmp_path(fx, "secret.pdf");
    make_pdf(plain, 2, 300, 200);
    run_tool((const char *[]){ "qpdf", "--encrypt", "user-pw", "owner-pw", "256", "--", plain, enc, NULL });
    expect_open_error(enc, NULL, HYOCR_ERROR_PASSWORD, "the PDF is encrypted and needs a password to open");
    hyocr_document_options o = { .password = "wrong" };
    expect_open_error(enc, &o, HYOCR_ERROR_PASSWORD, "the password given does not open this encrypted PDF");
    g_autoptr(hyocr_document) clear = open_ok(plain, NULL);
    g_autoptr(hyocr_image) want = render_ok(clear, 1, NULL);
    const char *good[] = { "user-pw", "owner-pw" };
    for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
        o.password = good[i];
        g_autoptr(hyocr_document) doc = open_ok(enc, &o);
        g_assert_cmpint(hyocr_document_n_pages(doc), ==, 2);
        g_autoptr(hyocr_image) got = render_ok(doc, 1, NULL);
        assert_same_image(got, want, "decrypted page 2");
    }
}

/* A name that lies: the content decides. */
static void test_pdf_named_png(Fixture *fx, gconstpointer data)
{
    g_autofree char *pdf = tmp_path(fx, "scan.png");
    make_pdf(pdf, 2, 300, 200);
    g_autoptr(hyocr_document) doc = open_ok(pdf, NULL);
    g_assert_cmpint(hyocr_document_format(doc), ==, HYOCR_FORMAT_PDF);
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 2);
}

static void test_pdf_threads_data(gpointer data, gpointer user)
{
    hyocr_document *doc = user;
    int page = GPOINTER_TO_INT(data) - 1;
    g_autoptr(hyocr_image) img = hyocr_document_render(doc, page % 3, NULL, NULL);
    g_assert_nonnull(img);
    g_assert_cmpint(img->width, ==, 834);
}

/* One document rendered from several threads at once (the engine's prefetch thread and the
 * caller): pages come out whole. */
static void test_pdf_threads(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "threads.pdf");
    make_pdf(path, 3, 300, 200);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    GThreadPool *pool = g_thread_pool_new(test_pdf_threads_data, doc, 4, FALSE, NULL);
    for (int i = 1; i <= 12; i++) g_thread_pool_push(pool, GINT_TO_POINTER(i), NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
}
#endif

/* ------------------------------------------------------------------------ TIFF */

#if HYOCR_HAVE_TIFF
typedef struct {
    int      w, h, spp, bps, photometric, compression, orientation;
    uint8_t *data;   /* packed rows as libtiff wants them (16-bit: host order) */
} tiff_page;

static void write_tiff(const char *path, const tiff_page *pages, int n)
{
    TIFF *t = TIFFOpen(path, "w");
    g_assert_nonnull(t);
    for (int i = 0; i < n; i++) {
        const tiff_page *p = &pages[i];
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, p->w);
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, p->h);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, p->spp);
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, p->bps);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, p->photometric);
        TIFFSetField(t, TIFFTAG_COMPRESSION, p->compression);
        TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
        TIFFSetField(t, TIFFTAG_ORIENTATION, p->orientation ? p->orientation : ORIENTATION_TOPLEFT);
        TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 8);
        if (p->photometric == PHOTOMETRIC_SEPARATED) TIFFSetField(t, TIFFTAG_INKSET, INKSET_CMYK);
        if (n > 1) {
            TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
            TIFFSetField(t, TIFFTAG_PAGENUMBER, i, n);
        }
        size_t row = ((size_t)p->w * p->spp * p->bps + 7) / 8;
        for (int y = 0; y < p->h; y++)
            g_assert_cmpint(TIFFWriteScanline(t, p->data + (size_t)y * row, (uint32_t)y, 0), ==, 1);
        g_assert_true(TIFFWriteDirectory(t));
    }
    TIFFClose(t);
}

/* The five pages the test compares: LZW RGB, 1-bit CCITT G4 fax, 16-bit RGB, CMYK, and gray
 * turned by its orientation tag (6: rotate 90° clockwise). */
static int make_tiff_pages(tiff_page *pages)
{
    int w = 97, h = 61;
    pages[0] = (tiff_page){ w, h, 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW, 0, make_rgb(w, h) };
    uint8_t *bits = g_malloc0((size_t)(w + 7) / 8 * h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if ((x / 3 + y / 4) % 2 && x > 5) bits[(size_t)y * ((w + 7) / 8) + x / 8] |= 0x80 >> (x % 8);
    pages[1] = (tiff_page){ w, h, 1, 1, PHOTOMETRIC_MINISWHITE, COMPRESSION_CCITTFAX4, 0, bits };
    uint16_t *wide = g_new(uint16_t, (size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) wide[i] = (uint16_t)(i * 2654435761u >> 7);
    pages[2] = (tiff_page){ w, h, 3, 16, PHOTOMETRIC_RGB, COMPRESSION_ADOBE_DEFLATE, 0, (uint8_t *)wide };
    uint8_t *cmyk = g_malloc((size_t)w * h * 4);
    for (size_t i = 0; i < (size_t)w * h * 4; i++) cmyk[i] = (uint8_t)(i * 37 + i / 4);
    pages[3] = (tiff_page){ w, h, 4, 8, PHOTOMETRIC_SEPARATED, COMPRESSION_NONE, 0, cmyk };
    uint8_t *gray = g_malloc((size_t)w * h);
    for (int i = 0; i < w * h; i++) gray[i] = pattern(i % w, i / w, 0);
    pages[4] = (tiff_page){ w, h, 1, 8, PHOTOMETRIC_MINISBLACK, COMPRESSION_PACKBITS, ORIENTATION_RIGHTTOP, gray };
    return 5;
}

static void test_tiff_pages(Fixture *fx, gconstpointer data)
{
    tiff_page pages[5];
    int n = make_tiff_pages(pages);
    g_autofree char *path = tmp_path(fx, "scan.tif");
    write_tiff(path, pages, n);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    g_assert_cmpint(hyocr_document_format(doc), ==, HYOCR_FORMAT_TIFF);
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 5);
    g_autoptr(hyocr_image) rgb = render_ok(doc, 0, NULL);
    g_assert_cmpmem(rgb->rgb, (size_t)97 * 61 * 3, pages[0].data, (size_t)97 * 61 * 3);
    g_autoptr(hyocr_image) fax = render_ok(doc, 1, NULL);
    for (int y = 0; y < 61; y++)
        for (int x = 0; x < 97; x++) {
            bool black = pages[1].data[(size_t)y * 13 + x / 8] & (0x80 >> (x % 8));
            g_assert_cmpint(fax->rgb[((size_t)y * 97 + x) * 3 + 1], ==, black ? 0 : 255);
        }
    /* Orientation 6: the stored 97×61 rows come out as a 61×97 page, the first stored row on
     * the right. */
    double w, h;
    g_assert_true(hyocr_document_page_size(doc, 4, &w, &h, NULL));
    g_assert_cmpfloat(w, ==, 61);
    g_assert_cmpfloat(h, ==, 97);
    g_autoptr(hyocr_image) turned = render_ok(doc, 4, NULL);
    g_assert_cmpint(turned->width, ==, 61);
    g_assert_cmpint(turned->height, ==, 97);
    for (int y = 0; y < 97; y++)
        for (int x = 0; x < 61; x++)
            g_assert_cmpint(turned->rgb[((size_t)y * 61 + x) * 3], ==, pages[4].data[(size_t)(60 - x) * 97 + y]);
    hyocr_document_options raw = { .ignore_exif = true };
    g_autoptr(hyocr_document) as_stored = open_ok(path, &raw);
    g_autoptr(hyocr_image) stored = render_ok(as_stored, 4, NULL);
    g_assert_cmpint(stored->width, ==, 97);
    for (int i = 0; i < n; i++) g_free(pages[i].data);
}

/* Each page against tifftopnm (netpbm, over libtiff too, with its own conversions): RGB, fax,
 * and turned gray identical; 16-bit: libtiff's RGBA interface rounds (v·255 + 32767) / 65535, which
 * is what we keep; CMYK: libtiff truncates (255−C)(255−K)/255 where tifftopnm rounds, so ±1. */
static void test_tiff_reference(Fixture *fx, gconstpointer data)
{
    if (!have_tool("tifftopnm", "netpbm") || !have_tool("tiffcp", "libtiff-tools")) return;
    tiff_page pages[5];
    int n = make_tiff_pages(pages);
    g_autofree char *path = tmp_path(fx, "ref.tif");
    write_tiff(path, pages, n);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    for (int i = 0; i < n; i++) {
        g_autofree char *spec = g_strdup_printf("%s,%d", path, i);
        g_autofree char *one = g_strdup_printf("%s/page%d.tif", fx->dir, i);
        g_autofree char *pnm = g_strdup_printf("%s/page%d.pnm", fx->dir, i);
        run_tool((const char *[]){ "tiffcp", spec, one, NULL });
        /* -byrow for the turned page: tifftopnm's whole-image path goes through libtiff's RGBA
         * interface, which (as tifftopnm warns) turns orientations 5–8 wrong; row by row it
         * turns them itself. */
        g_autofree char *cmd = g_strdup_printf("tifftopnm %s '%s' > '%s' 2>/dev/null",
                                               pages[i].orientation >= 5 ? "-byrow" : "", one, pnm);
        run_tool((const char *[]){ "sh", "-c", cmd, NULL });
        uint16_t *wide = NULL;
        g_autoptr(hyocr_image) ref = read_pnm(pnm, &wide);
        g_autoptr(hyocr_image) ours = render_ok(doc, i, NULL);
        g_autofree char *what = g_strdup_printf("TIFF page %d against tifftopnm", i + 1);
        if (wide) {
            for (size_t k = 0; k < (size_t)ref->width * ref->height * 3; k++)
                g_assert_cmpint(ours->rgb[k], ==, ((unsigned)wide[k] * 255 + 32767) / 65535);
            g_free(wide);
        } else if (pages[i].photometric == PHOTOMETRIC_SEPARATED) {
            g_assert_cmpint(ours->width, ==, ref->width);
            for (size_t k = 0; k < (size_t)ref->width * ref->height * 3; k++)
                g_assert_cmpint(abs(ours->rgb[k] - ref->rgb[k]), <=, 1);
        } else {
            assert_same_image(ours, ref, what);
        }
    }
    for (int i = 0; i < n; i++) g_free(pages[i].data);
}

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

/* Where each directory's "next" link sits in a little-endian classic TIFF. */
static int ifd_links(const uint8_t *b, size_t len, size_t *links, int max)
{
    int n = 0;
    uint32_t off = rd32(b + 4);
    while (off && off + 2 <= len && n < max) {
        links[n] = off + 2 + (size_t)rd16(b + off) * 12;
        off = rd32(b + links[n++]);
    }
    return n;
}

static void test_tiff_bad_chains(Fixture *fx, gconstpointer data)
{
    tiff_page pages[5];
    int n = make_tiff_pages(pages);
    g_autofree char *path = tmp_path(fx, "chain.tif");
    write_tiff(path, pages, 3);
    g_autoptr(GBytes) b = file_bytes(path);
    gsize len;
    const uint8_t *orig = g_bytes_get_data(b, &len);
    g_assert_true(orig[0] == 'I');   /* libtiff writes host (little-endian) order */
    size_t links[8];
    g_assert_cmpint(ifd_links(orig, len, links, 8), ==, 3);
    uint32_t first = rd32(orig + 4);
    g_autofree uint8_t *d = g_memdup2(orig, len);
    struct { const char *name; size_t at; uint32_t to; const char *want; } cases[] = {
        { "loop.tif", links[2], first, "its chain of directories (pages) loops back after page 3" },
        { "self.tif", links[0], first, "loops back after page 1" },
        { "past.tif", links[1], (uint32_t)len + 4096, "its chain of directories (pages) is broken" },
        { "first.tif", 4, (uint32_t)len + 64, "cannot read its header or first directory" },
        { "wrap.tif", 4, 0xFFFFFFF0u, "invalid TIFF" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        memcpy(d, orig, len);
        wr32(d + cases[i].at, cases[i].to);
        g_autofree char *bad = tmp_path(fx, cases[i].name);
        put_bytes(bad, d, len);
        expect_open_error(bad, NULL, HYOCR_ERROR_IMAGE, cases[i].want);
    }
    /* Page 1's LZW strips overwritten, the directories intact (libtiff writes each page's
     * pixels before its directory): page 1 fails with its reason, the others still read. */
    memcpy(d, orig, len);
    memset(d + 8, 0xFF, 200);
    g_autofree char *damaged = tmp_path(fx, "damaged.tif");
    put_bytes(damaged, d, len);
    g_autoptr(hyocr_document) doc = open_ok(damaged, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_null(hyocr_document_render(doc, 0, NULL, &err));
    expect_error(err, HYOCR_ERROR_IMAGE, ", page 1: invalid TIFF: its image data is damaged or truncated");
    g_autoptr(hyocr_image) p2 = render_ok(doc, 1, NULL);
    g_assert_cmpint(p2->width, ==, 97);
    for (int i = 0; i < n; i++) g_free(pages[i].data);
}

static void test_tiff_bomb(Fixture *fx, gconstpointer data)
{
    uint8_t px[3] = { 1, 2, 3 };
    tiff_page p = { 1, 1, 3, 8, PHOTOMETRIC_RGB, COMPRESSION_NONE, 0, px };
    g_autofree char *path = tmp_path(fx, "bomb.tif");
    write_tiff(path, &p, 1);
    g_autoptr(GBytes) b = file_bytes(path);
    gsize len;
    const uint8_t *orig = g_bytes_get_data(b, &len);
    g_autofree uint8_t *d = g_memdup2(orig, len);
    uint32_t ifd = rd32(d + 4);
    for (int i = 0; i < rd16(d + ifd); i++) {
        uint8_t *e = d + ifd + 2 + i * 12;
        if (rd16(e) == TIFFTAG_IMAGEWIDTH || rd16(e) == TIFFTAG_IMAGELENGTH) {
            e[2] = 4;   /* LONG */
            wr32(e + 4, 1);
            wr32(e + 8, 60000);
        }
    }
    put_bytes(path, d, len);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_null(hyocr_document_render(doc, 0, NULL, &err));
    expect_error(err, HYOCR_ERROR_IMAGE, "60000×60000");
}

/* A layout libtiff's RGBA reader does not take (RGB with 2 samples a pixel): the page fails with
 * libtiff's reason, named as unsupported rather than as damage. */
static void test_tiff_unsupported(Fixture *fx, gconstpointer data)
{
    uint8_t px[2 * 4 * 3] = { 0 };
    tiff_page p = { 4, 3, 2, 8, PHOTOMETRIC_RGB, COMPRESSION_NONE, 0, px };
    g_autofree char *path = tmp_path(fx, "two-samples.tif");
    write_tiff(path, &p, 1);
    g_autoptr(hyocr_document) doc = open_ok(path, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_null(hyocr_document_render(doc, 0, NULL, &err));
    expect_error(err, HYOCR_ERROR_IMAGE, "unsupported TIFF: ");
    g_test_message("%s", err->message);
}
#endif

/* ------------------------------------------------------------------------ WebP */

#if HYOCR_HAVE_WEBP
static void wr32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void write_webp(const char *path, int w, int h, bool lossless, bool alpha)
{
    g_autofree uint8_t *rgb = make_rgb(w, h);
    g_autofree uint8_t *rgba = g_malloc((size_t)w * h * 4);
    for (int i = 0; i < w * h; i++) {
        memcpy(rgba + 4 * i, rgb + 3 * i, 3);
        rgba[4 * i + 3] = (uint8_t)(i % w < w / 2 ? 255 : 40 + i % 200);
    }
    uint8_t *out = NULL;
    size_t n = lossless ? (alpha ? WebPEncodeLosslessRGBA(rgba, w, h, w * 4, &out) : WebPEncodeLosslessRGB(rgb, w, h, w * 3, &out))
                        : (alpha ? WebPEncodeRGBA(rgba, w, h, w * 4, 80, &out) : WebPEncodeRGB(rgb, w, h, w * 3, 80, &out));
    g_assert_cmpuint(n, >, 0);
    put_bytes(path, out, n);
    WebPFree(out);
}

static void test_webp_reference(Fixture *fx, gconstpointer data)
{
    g_autofree char *lossless = tmp_path(fx, "lossless.webp");
    write_webp(lossless, 97, 61, true, false);
    g_autoptr(hyocr_image) ll = hyocr_image_load(lossless, NULL, NULL);
    g_autofree uint8_t *rgb = make_rgb(97, 61);
    g_assert_cmpmem(ll->rgb, (size_t)97 * 61 * 3, rgb, (size_t)97 * 61 * 3);   /* lossless is lossless */
    if (!have_tool("dwebp", "webp")) return;
    const struct { const char *name; bool lossless, alpha; } kinds[] = {
        { "lossy.webp", false, false }, { "lossy-alpha.webp", false, true }, { "lossless-alpha.webp", true, true },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        g_autofree char *path = tmp_path(fx, kinds[i].name);
        g_autofree char *ppm = g_strconcat(path, ".ppm", NULL);
        write_webp(path, 97, 61, kinds[i].lossless, kinds[i].alpha);
        run_tool((const char *[]){ "dwebp", "-quiet", "-ppm", path, "-o", ppm, NULL });
        g_autoptr(hyocr_image) ref = read_pnm(ppm, NULL);
        g_autoptr(hyocr_document) doc = open_ok(path, NULL);
        g_assert_cmpint(hyocr_document_format(doc), ==, HYOCR_FORMAT_WEBP);
        g_autoptr(hyocr_image) ours = render_ok(doc, 0, NULL);
        assert_same_image(ours, ref, kinds[i].name);
    }
}

/* A VP8X header whose canvas is not the frame's size, or is a bomb; a RIFF size that
 * promises more than the file has. */
static void test_webp_lying(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "alpha.webp");
    write_webp(path, 64, 48, false, true);   /* lossy with alpha: VP8X + ALPH + VP8 */
    g_autoptr(GBytes) b = file_bytes(path);
    gsize len;
    const uint8_t *orig = g_bytes_get_data(b, &len);
    g_assert_cmpmem(orig + 12, 4, "VP8X", 4);
    g_autofree uint8_t *d = g_memdup2(orig, len);
    /* canvas width − 1 and height − 1, 24 bits each, at 24 and 27 */
    d[24] = 199; d[25] = 0; d[26] = 0;
    d[27] = 149; d[28] = 0; d[29] = 0;
    g_autofree char *mismatch = tmp_path(fx, "mismatch.webp");
    put_bytes(mismatch, d, len);
    expect_open_error(mismatch, NULL, HYOCR_ERROR_IMAGE, "invalid WebP: the image data do not match the header");

    /* A lossless header (VP8L: 14-bit width − 1 and height − 1) claiming 16000 × 16000, a
     * size WebP allows, over the pixel limit: refused from the header, before any decoding. */
    g_autofree char *ll = tmp_path(fx, "ll.webp");
    write_webp(ll, 64, 48, true, false);
    g_autoptr(GBytes) lb = file_bytes(ll);
    gsize llen;
    g_autofree uint8_t *l = g_memdup2(g_bytes_get_data(lb, &llen), g_bytes_get_size(lb));
    g_assert_cmpmem(l + 12, 4, "VP8L", 4);
    g_assert_cmpint(l[20], ==, 0x2f);
    uint32_t bits = 15999u | 15999u << 14;
    wr32le(l + 21, bits);
    g_autofree char *bomb = tmp_path(fx, "bomb.webp");
    put_bytes(bomb, l, llen);
    expect_open_error(bomb, NULL, HYOCR_ERROR_IMAGE, "16000×16000");

    /* The VP8X header's animation flag (bit 1 of its flags byte): refused by name, not read as
     * its first frame. */
    memcpy(d, orig, len);
    d[20] |= 0x02;
    g_autofree char *anim = tmp_path(fx, "anim.webp");
    put_bytes(anim, d, len);
    expect_open_error(anim, NULL, HYOCR_ERROR_IMAGE, "animated WebP: save the frame to read as a still image first");

    memcpy(d, orig, len);
    g_autofree char *cut = tmp_path(fx, "cut.webp");
    put_bytes(cut, d, len - 30);   /* RIFF size now promises 30 bytes more than there are */
    g_autoptr(hyocr_document) cdoc = hyocr_document_open(cut, NULL, NULL);
    g_autoptr(GError) cerr = NULL;
    g_autoptr(hyocr_image) none = cdoc ? hyocr_document_render(cdoc, 0, NULL, &cerr) : NULL;
    g_assert_null(none);
    if (!cdoc) expect_open_error(cut, NULL, HYOCR_ERROR_IMAGE, "WebP file is truncated");
    else expect_error(cerr, HYOCR_ERROR_IMAGE, "WebP file is truncated");
}
#endif

/* ------------------------------------------------------------------------ HEIC / AVIF */

#if HYOCR_HAVE_HEIF
static bool write_heif(const char *path, enum heif_compression_format fmt, int w, int h, int orientation)
{
    struct heif_context *ctx = heif_context_alloc();
    struct heif_encoder *enc = NULL;
    if (heif_context_get_encoder_for_format(ctx, fmt, &enc).code != heif_error_Ok) {
        heif_context_free(ctx);
        return false;
    }
    heif_encoder_set_lossy_quality(enc, 90);
    if (fmt == heif_compression_AV1) {
        heif_encoder_set_parameter(enc, "chroma", "420");   /* aom's 4:4:4 path asserts in Debian 12 */
        heif_encoder_set_parameter(enc, "speed", "9");
    }
    struct heif_image *img = NULL;
    g_assert_cmpint(heif_image_create(w, h, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &img).code, ==, 0);
    g_assert_cmpint(heif_image_add_plane(img, heif_channel_interleaved, w, h, 8).code, ==, 0);
    int stride;
    uint8_t *plane = heif_image_get_plane(img, heif_channel_interleaved, &stride);
    g_autofree uint8_t *rgb = make_rgb(w, h);
    for (int y = 0; y < h; y++) memcpy(plane + (size_t)y * stride, rgb + (size_t)y * w * 3, (size_t)w * 3);
    struct heif_encoding_options *o = heif_encoding_options_alloc();
    o->image_orientation = orientation;
    g_assert_cmpint(heif_context_encode_image(ctx, img, enc, o, NULL).code, ==, 0);
    heif_encoding_options_free(o);
    g_assert_cmpint(heif_context_write_to_file(ctx, path).code, ==, 0);
    heif_image_release(img);
    heif_encoder_release(enc);
    heif_context_free(ctx);
    return true;
}

/* Against heif-convert (over libheif too): the same pixels, rotation included (the file's
 * irot, written by libheif for EXIF orientation 6, turns the 97×61 picture to 61×97). */
static void test_heif_reference(Fixture *fx, gconstpointer data)
{
    const struct { const char *name; enum heif_compression_format fmt; hyocr_format want; int orientation; } kinds[] = {
        { "photo.heic", heif_compression_HEVC, HYOCR_FORMAT_HEIF, 1 },
        { "turned.heic", heif_compression_HEVC, HYOCR_FORMAT_HEIF, 6 },
        { "photo.avif", heif_compression_AV1, HYOCR_FORMAT_AVIF, 1 },
        { "turned.avif", heif_compression_AV1, HYOCR_FORMAT_AVIF, 6 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        g_autofree char *path = tmp_path(fx, kinds[i].name);
        if (!write_heif(path, kinds[i].fmt, 97, 61, kinds[i].orientation)) {
            g_autofree char *msg = g_strdup_printf("libheif has no encoder for %s", kinds[i].name);
            g_test_skip(msg);
            return;
        }
        g_autoptr(hyocr_document) doc = open_ok(path, NULL);
        g_assert_cmpint(hyocr_document_format(doc), ==, kinds[i].want);
        g_autoptr(hyocr_image) ours = render_ok(doc, 0, NULL);
        bool turned = kinds[i].orientation == 6;
        g_assert_cmpint(ours->width, ==, turned ? 61 : 97);
        g_assert_cmpint(ours->height, ==, turned ? 97 : 61);
        double w, h;
        g_assert_true(hyocr_document_page_size(doc, 0, &w, &h, NULL));
        g_assert_cmpfloat(w, ==, ours->width);
        /* The turned file holds the same coded picture as the plain one plus an irot box, so
         * it decodes to exactly the plain one turned; the plain one is near the pattern (lossy). */
        if (turned) {
            g_autofree char *plain_path = tmp_path(fx, kinds[i - 1].name);
            g_autoptr(hyocr_document) plain_doc = open_ok(plain_path, NULL);
            g_autoptr(hyocr_image) plain = render_ok(plain_doc, 0, NULL);
            g_autoptr(hyocr_image) want = hyocr_image_orient(plain, 6);
            assert_same_image(ours, want, kinds[i].name);
        } else {
            g_autofree uint8_t *rgb = make_rgb(97, 61);
            double err = 0;
            for (size_t k = 0; k < (size_t)97 * 61 * 3; k++) err += abs(ours->rgb[k] - rgb[k]);
            g_test_message("%s: mean error %.1f against the pattern", kinds[i].name, err / (97 * 61 * 3));
            g_assert_cmpfloat(err / (97 * 61 * 3), <, 30);
        }
        if (!have_tool("heif-convert", "libheif-examples")) continue;
        g_autofree char *png = g_strconcat(path, ".png", NULL);
        run_tool((const char *[]){ "heif-convert", path, png, NULL });
        g_autoptr(hyocr_image) ref = hyocr_image_load(png, NULL, NULL);
        g_assert_nonnull(ref);
        assert_same_image(ours, ref, kinds[i].name);
    }
}

static void test_heif_no_primary(Fixture *fx, gconstpointer data)
{
    g_autofree char *path = tmp_path(fx, "photo.heic");
    if (!write_heif(path, heif_compression_HEVC, 64, 48, 1)) {
        g_test_skip("libheif has no HEVC encoder");
        return;
    }
    g_autoptr(GBytes) b = file_bytes(path);
    gsize len;
    const uint8_t *orig = g_bytes_get_data(b, &len);
    g_autofree uint8_t *d = g_memdup2(orig, len);
    uint8_t *pitm = NULL;
    for (size_t i = 0; !pitm && i + 4 <= len; i++)
        if (!memcmp(d + i, "pitm", 4)) pitm = d + i;
    g_assert_nonnull(pitm);
    pitm[8] = 0x77;   /* version 0: a 16-bit item id after version and flags */
    pitm[9] = 0x77;
    g_autofree char *bad = tmp_path(fx, "noprimary.heic");
    put_bytes(bad, d, len);
    expect_open_error(bad, NULL, HYOCR_ERROR_IMAGE, "the HEIF/AVIF file has no primary image to show");
    /* No pitm box at all. */
    memcpy(pitm, "free", 4);
    put_bytes(bad, d, len);
    expect_open_error(bad, NULL, HYOCR_ERROR_IMAGE, "the HEIF/AVIF file has no primary image to show");
    g_autofree char *cut = tmp_path(fx, "cut.heic");
    put_bytes(cut, g_bytes_get_data(b, NULL), 100);
    expect_open_error(cut, NULL, HYOCR_ERROR_IMAGE, "invalid HEIF/AVIF");
}
#endif

/* ------------------------------------------------------------------------ names that lie */

static void write_png(const char *path, int w, int h, const uint8_t *rgb)
{
    FILE *f = fopen(path, "wb");
    g_assert_nonnull(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) g_error("libpng failed writing %s", path);
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, rgb + (size_t)y * w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

/* A PNG named as TIFF, PDF, WebP, HEIC or nothing: read as the PNG it is. */
static void test_extension_lies(Fixture *fx, gconstpointer data)
{
    g_autofree uint8_t *rgb = make_rgb(97, 61);
    const char *names[] = { "photo.tif", "scan.pdf", "x.webp", "y.heic", "noext" };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *p = tmp_path(fx, names[i]);
        write_png(p, 97, 61, rgb);
        g_autoptr(hyocr_document) doc = open_ok(p, NULL);
        g_assert_cmpint(hyocr_document_format(doc), ==, HYOCR_FORMAT_PNG);
        g_assert_cmpint(hyocr_document_n_pages(doc), ==, 1);
        g_autoptr(hyocr_image) img = render_ok(doc, 0, NULL);
        g_assert_cmpmem(img->rgb, (size_t)97 * 61 * 3, rgb, (size_t)97 * 61 * 3);
    }
}

/* Pixels as a document of one page: rendered back as they were. */
static void test_pixels_document(void)
{
    g_autofree uint8_t *rgb = make_rgb(97, 61);
    g_autoptr(hyocr_image) img = hyocr_image_new(97, 61);
    memcpy(img->rgb, rgb, (size_t)97 * 61 * 3);
    g_autoptr(hyocr_document) doc = hyocr_document_new_for_image(img, "Pasted image");
    g_assert_nonnull(doc);
    g_assert_cmpint(hyocr_document_format(doc), ==, HYOCR_FORMAT_PIXELS);
    g_assert_null(hyocr_format_get(HYOCR_FORMAT_PIXELS));
    g_assert_cmpstr(hyocr_document_name(doc), ==, "Pasted image");
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 1);
    double w, h;
    g_assert_true(hyocr_document_page_size(doc, 0, &w, &h, NULL));
    g_assert_cmpfloat(w, ==, 97);
    g_autoptr(hyocr_image) back = render_ok(doc, 0, NULL);
    assert_same_image(back, img, "pixels rendered back");
    hyocr_render_options small = { .max_side = 40 };
    g_autoptr(hyocr_image) s = render_ok(doc, 0, &small);
    g_assert_cmpint(s->width, ==, 40);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define FX(path, fn) g_test_add(path, Fixture, NULL, fx_setup, fn, fx_teardown)
    g_test_add_func("/document/formats/list", test_formats_list);
    g_test_add_func("/document/formats/sniff", test_formats_sniff);
    FX("/document/formats/unreadable", test_formats_unreadable);
    FX("/document/formats/extension-lies", test_extension_lies);
    g_test_add_func("/document/pages/selection", test_page_selection);
    g_test_add_func("/document/pixels", test_pixels_document);
#if HYOCR_HAVE_PDF
    FX("/document/pdf/pages", test_pdf_pages);
    FX("/document/pdf/reference", test_pdf_reference);
    FX("/document/pdf/10000-pages", test_pdf_many_pages);
    FX("/document/pdf/200-inch-page", test_pdf_huge_page);
    FX("/document/pdf/truncated", test_pdf_truncated);
    FX("/document/pdf/no-pages", test_pdf_no_pages);
    FX("/document/pdf/encrypted", test_pdf_encrypted);
    FX("/document/pdf/named-png", test_pdf_named_png);
    FX("/document/pdf/threads", test_pdf_threads);
#endif
#if HYOCR_HAVE_TIFF
    FX("/document/tiff/pages", test_tiff_pages);
    FX("/document/tiff/reference", test_tiff_reference);
    FX("/document/tiff/bad-chains", test_tiff_bad_chains);
    FX("/document/tiff/bomb", test_tiff_bomb);
    FX("/document/tiff/unsupported", test_tiff_unsupported);
#endif
#if HYOCR_HAVE_WEBP
    FX("/document/webp/reference", test_webp_reference);
    FX("/document/webp/lying-header", test_webp_lying);
#endif
#if HYOCR_HAVE_HEIF
    FX("/document/heif/reference", test_heif_reference);
    FX("/document/heif/no-primary", test_heif_no_primary);
#endif
    return g_test_run();
}
