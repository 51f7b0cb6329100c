/* Exports: text, Markdown, JSON / JSON lines, HTML and the searchable PDF, written from
 * documents made here (a scanned PDF — pages that are images — made with cairo, and a PNG)
 * with spotting answers whose boxes are where the text really is.
 * The searchable PDF is checked with poppler's tools: pdftotext -bbox finds each spotted
 * line's words inside its box, pdftotext gives the lines in reading order, and the pages
 * rendered back are the pages that went in. */
#include "document.h"
#include "error.h"
#include "export.h"
#include "hyocr-build-config.h"
#include "json.h"
#include "testutil.h"

#include <cairo.h>
#include <cairo-pdf.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

typedef struct {
    char *dir;
} Fixture;

static void fx_setup(Fixture *fx, gconstpointer data) { fx->dir = hyocr_test_tmpdir(); }
static void fx_teardown(Fixture *fx, gconstpointer data) { hyocr_test_rmdir(fx->dir); g_free(fx->dir); }
static char *tmp_path(Fixture *fx, const char *name) { return g_build_filename(fx->dir, name, NULL); }

/* A line of a page: its text and where it is, in points (PDF) or pixels (PNG). */
typedef struct {
    const char *text;
    double      x1, y1, x2, y2;
} line;

static const line pdf_lines[2][2] = {
    { { "Invoice 2024-117", 72, 80, 320, 110 }, { "Total due: 42.00 EUR", 72, 150, 380, 176 } },
    { { "Page two says hello", 60, 60, 330, 90 }, { "第二页 中文", 60, 120, 250, 150 } },
};
#define PDF_W 420.0
#define PDF_H 300.0

/* A page as a scanner makes it: the text drawn into an image. */
static cairo_surface_t *scanned(const line *lines, int n, double w, double h, double scale)
{
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)(w * scale), (int)(h * scale));
    cairo_t *cr = cairo_create(img);
    cairo_set_source_rgb(cr, 0.98, 0.97, 0.95);
    cairo_paint(cr);
    cairo_scale(cr, scale, scale);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    cairo_select_font_face(cr, "Noto Sans CJK SC", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    for (int i = 0; i < n; i++) {
        cairo_set_font_size(cr, (lines[i].y2 - lines[i].y1) * 0.8);
        cairo_move_to(cr, lines[i].x1, lines[i].y2 - (lines[i].y2 - lines[i].y1) * 0.2);
        cairo_show_text(cr, lines[i].text);
    }
    cairo_destroy(cr);
    return img;
}

/* Two image-only pages, 420 × 300 pt, scanned at 2 px/pt. */
static void make_scanned_pdf(const char *path)
{
    cairo_surface_t *pdf = cairo_pdf_surface_create(path, PDF_W, PDF_H);
    cairo_t *cr = cairo_create(pdf);
    for (int p = 0; p < 2; p++) {
        cairo_surface_t *img = scanned(pdf_lines[p], 2, PDF_W, PDF_H, 2);
        cairo_save(cr);
        cairo_scale(cr, 0.5, 0.5);
        cairo_set_source_surface(cr, img, 0, 0);
        cairo_paint(cr);
        cairo_restore(cr);
        cairo_surface_destroy(img);
        cairo_show_page(cr);
    }
    cairo_destroy(cr);
    cairo_surface_destroy(pdf);
}

static const line png_lines[1] = { { "Receipt No. 8841", 40, 30, 520, 90 } };

static void make_png(const char *path)
{
    cairo_surface_t *img = scanned(png_lines, 1, 600, 240, 1);
    g_assert_cmpint(cairo_surface_write_to_png(img, path), ==, CAIRO_STATUS_SUCCESS);
    cairo_surface_destroy(img);
}

/* The model's answer for a page: each line at its box in the 0…1000 scale. */
static char *spotting_answer(const line *lines, int n, double w, double h)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < n; i++)
        g_string_append_printf(s, "%s(%d,%d),(%d,%d)\n", lines[i].text, (int)lround(lines[i].x1 * 1000 / w),
                               (int)lround(lines[i].y1 * 1000 / h), (int)lround(lines[i].x2 * 1000 / w),
                               (int)lround(lines[i].y2 * 1000 / h));
    return g_string_free(s, FALSE);
}

typedef struct {
    hyocr_document   *pdf, *png;
    char             *answers[3];
    hyocr_timings     timings;
    hyocr_export_page pages[3];
    hyocr_export      ex;
} sample;

/* PDF page 1, PNG, PDF page 2: spotting answers, in that order. */
static void sample_init(sample *s, Fixture *fx)
{
    g_autofree char *pdf = tmp_path(fx, "scan.pdf"), *png = tmp_path(fx, "receipt.png");
    make_scanned_pdf(pdf);
    make_png(png);
    s->pdf = hyocr_document_open(pdf, NULL, NULL);
    s->png = hyocr_document_open(png, NULL, NULL);
    g_assert_nonnull(s->pdf);
    g_assert_nonnull(s->png);
    s->answers[0] = spotting_answer(pdf_lines[0], 2, PDF_W, PDF_H);
    s->answers[1] = spotting_answer(png_lines, 1, 600, 240);
    s->answers[2] = spotting_answer(pdf_lines[1], 2, PDF_W, PDF_H);
    s->timings = (hyocr_timings){ .total_ms = 1234.5, .decode_ms = 1000, .first_token_ms = 200 };
    hyocr_document *docs[3] = { s->pdf, s->png, s->pdf };
    int page[3] = { 0, 0, 1 };
    for (int i = 0; i < 3; i++)
        s->pages[i] = (hyocr_export_page){ .document = docs[i], .page = page[i], .task = HYOCR_TASK_SPOTTING,
                                           .text = s->answers[i], .timings = &s->timings,
                                           .image_width = 640, .image_height = 480 };
    s->ex = (hyocr_export){ .pages = s->pages, .n_pages = 3, .model = "HunyuanOCR-1.5", .backend = "cpu" };
}

static void sample_clear(sample *s)
{
    for (int i = 0; i < 3; i++) g_free(s->answers[i]);
    hyocr_document_unref(s->pdf);
    hyocr_document_unref(s->png);
}

static char *write_export(Fixture *fx, const hyocr_export *ex, const char *name)
{
    char *path = tmp_path(fx, name);
    hyocr_export_format f;
    g_assert_true(hyocr_export_format_for_path(path, &f));
    g_autoptr(GError) err = NULL;
    if (!hyocr_export_write(ex, f, path, &err)) g_error("%s: %s", name, err->message);
    return path;
}

static char *contents(const char *path)
{
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/* ------------------------------------------------------------------------ formats */

static void test_format_names(void)
{
    hyocr_export_format f;
    g_assert_true(hyocr_export_format_for_path("out/Scan.MD", &f));
    g_assert_cmpint(f, ==, HYOCR_EXPORT_MARKDOWN);
    g_assert_true(hyocr_export_format_for_path("a.jsonl", &f));
    g_assert_cmpint(f, ==, HYOCR_EXPORT_JSONL);
    g_assert_true(hyocr_export_format_for_path("a.json", &f));
    g_assert_cmpint(f, ==, HYOCR_EXPORT_JSON);
    g_assert_true(hyocr_export_format_for_path("a.txt", &f));
    g_assert_cmpint(f, ==, HYOCR_EXPORT_TEXT);
    g_assert_false(hyocr_export_format_for_path("a.docx", &f));
    g_assert_false(hyocr_export_format_for_path("dir.md/file", &f));
    g_assert_false(hyocr_export_format_for_path("noext", &f));
#if HYOCR_HAVE_PDF_EXPORT && HYOCR_HAVE_HTML
    g_assert_true(hyocr_export_format_for_path("a.pdf", &f));
    g_assert_cmpint(f, ==, HYOCR_EXPORT_PDF);
    g_assert_true(hyocr_export_format_for_path("a.HTML", &f));
    g_assert_cmpint(f, ==, HYOCR_EXPORT_HTML);
    g_assert_cmpstr(hyocr_export_extensions(), ==, ".txt, .md, .json, .jsonl, .pdf, .html");
#endif
}

static void test_text_markdown(Fixture *fx, gconstpointer data)
{
    sample s;
    sample_init(&s, fx);
    s.pages[1].text = NULL;
    s.pages[1].error = "receipt.png: out of memory";
    g_autofree char *txt_path = write_export(fx, &s.ex, "out.txt"), *md_path = write_export(fx, &s.ex, "out.md");
    g_autofree char *txt = contents(txt_path), *md = contents(md_path);
    g_autofree char *pdf = tmp_path(fx, "scan.pdf"), *png = tmp_path(fx, "receipt.png");
    g_autofree char *want_txt = g_strdup_printf(
        "==> %s, page 1 <==\nInvoice 2024-117\nTotal due: 42.00 EUR\n\n"
        "==> %s <==\n[this page failed: receipt.png: out of memory]\n\n"
        "==> %s, page 2 <==\nPage two says hello\n第二页 中文\n", pdf, png, pdf);
    g_assert_cmpstr(txt, ==, want_txt);
    g_autofree char *want_md = g_strdup_printf(
        "<!-- %s, page 1 -->\n\nInvoice 2024-117\nTotal due: 42.00 EUR\n\n---\n\n"
        "<!-- %s -->\n\n[this page failed: receipt.png: out of memory]\n\n---\n\n"
        "<!-- %s, page 2 -->\n\nPage two says hello\n第二页 中文\n", pdf, png, pdf);
    g_assert_cmpstr(md, ==, want_md);
    /* Parse-document output goes into Markdown as it is. */
    s.pages[0].task = HYOCR_TASK_PARSE_DOCUMENT;
    s.pages[0].text = "# Title\n\n<table><tr><td>1</td></tr></table>\n\n$$x^2$$";
    s.ex.n_pages = 1;
    g_autofree char *md1_path = write_export(fx, &s.ex, "one.md");
    g_autofree char *md1 = contents(md1_path);
    g_assert_nonnull(strstr(md1, "-->\n\n# Title\n\n<table><tr><td>1</td></tr></table>\n\n$$x^2$$\n"));
    sample_clear(&s);
}

static JsonNode *parse_json(const char *text)
{
    g_autoptr(GError) err = NULL;
    JsonNode *root = hyocr_json_parse(text, strlen(text), HYOCR_JSON_MAX_DEPTH, "export", &err);
    g_assert_no_error(err);
    return root;
}

static void assert_box(JsonObject *line, const char *name, double a, double b, double c, double d, double tol)
{
    JsonArray *box = json_object_get_array_member(line, name);
    g_assert_nonnull(box);
    double want[4] = { a, b, c, d };
    for (int i = 0; i < 4; i++) g_assert_cmpfloat(fabs(json_array_get_double_element(box, i) - want[i]), <=, tol);
}

static void test_json(Fixture *fx, gconstpointer data)
{
    sample s;
    sample_init(&s, fx);
    g_autofree char *path = write_export(fx, &s.ex, "out.json");
    g_autofree char *text = contents(path);
    g_autoptr(JsonNode) root = parse_json(text);
    JsonObject *o = json_node_get_object(root);
    g_assert_cmpstr(json_object_get_string_member(o, "model"), ==, "HunyuanOCR-1.5");
    g_assert_cmpstr(json_object_get_string_member(o, "engine"), ==, "hyocr " HYOCR_VERSION);
    g_assert_cmpstr(json_object_get_string_member(o, "backend"), ==, "cpu");
    JsonArray *pages = json_object_get_array_member(o, "pages");
    g_assert_cmpuint(json_array_get_length(pages), ==, 3);

    /* PDF page 1: 420 × 300 pt, 1167 × 834 px at 200 dpi; boxes in points and pixels */
    JsonObject *p1 = json_array_get_object_element(pages, 0);
    g_assert_cmpint(json_object_get_int_member(p1, "page"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(p1, "pages"), ==, 2);
    g_assert_cmpstr(json_object_get_string_member(p1, "task"), ==, "spotting");
    g_assert_cmpint(json_object_get_int_member(p1, "page_width_px"), ==, 1167);
    g_assert_cmpint(json_object_get_int_member(p1, "page_height_px"), ==, 834);
    g_assert_cmpint(json_object_get_int_member(p1, "image_width"), ==, 640);
    JsonArray *lines = json_object_get_array_member(p1, "lines");
    g_assert_cmpuint(json_array_get_length(lines), ==, 2);
    JsonObject *l0 = json_array_get_object_element(lines, 0);
    g_assert_cmpstr(json_object_get_string_member(l0, "text"), ==, "Invoice 2024-117");
    assert_box(l0, "box", 171, 267, 762, 367, 0);
    /* the 0…1000 box back in points: within the rounding of that scale (0.5/1000 of the page) */
    assert_box(l0, "box_pt", 72, 80, 320, 110, 0.5 * PDF_W / 1000 + 0.01);
    assert_box(l0, "box_px", 72 * 200 / 72.0, 80 * 200 / 72.0, 320 * 200 / 72.0, 110 * 200 / 72.0, 1.5);
    JsonObject *timings = json_object_get_object_member(p1, "timings");
    g_assert_cmpfloat(json_object_get_double_member(timings, "total_ms"), ==, 1234.5);

    /* The PNG: pixels of the image itself, no points */
    JsonObject *p2 = json_array_get_object_element(pages, 1);
    g_assert_cmpint(json_object_get_int_member(p2, "page_width_px"), ==, 600);
    g_assert_false(json_object_has_member(p2, "page_size_pt"));
    JsonObject *r0 = json_array_get_object_element(json_object_get_array_member(p2, "lines"), 0);
    assert_box(r0, "box_px", 40, 30, 520, 90, 0.6);
    g_assert_false(json_object_has_member(r0, "box_pt"));

    /* JSON lines: one self-contained object per page, in order */
    g_autofree char *jl_path = write_export(fx, &s.ex, "out.jsonl");
    g_autofree char *jl = contents(jl_path);
    g_auto(GStrv) rows = g_strsplit(jl, "\n", -1);
    g_assert_cmpuint(g_strv_length(rows), ==, 4);   /* three lines and the final newline */
    g_assert_cmpstr(rows[3], ==, "");
    int want_page[3] = { 1, 1, 2 };
    for (int i = 0; i < 3; i++) {
        g_autoptr(JsonNode) r = parse_json(rows[i]);
        JsonObject *ro = json_node_get_object(r);
        g_assert_cmpint(json_object_get_int_member(ro, "page"), ==, want_page[i]);
        g_assert_cmpstr(json_object_get_string_member(ro, "model"), ==, "HunyuanOCR-1.5");
    }
    /* A control byte after a non-ASCII character stays escaped (json-glib 1.6 would not). */
    s.pages[0].task = HYOCR_TASK_RECOGNIZE;
    s.pages[0].text = "é\x01\x1f";
    s.ex.n_pages = 1;
    g_autofree char *ctl_path = write_export(fx, &s.ex, "ctl.json");
    g_autofree char *ctl = contents(ctl_path);
    g_autoptr(JsonNode) ctl_root = parse_json(ctl);
    JsonObject *c0 = json_array_get_object_element(json_object_get_array_member(json_node_get_object(ctl_root), "pages"), 0);
    g_assert_cmpstr(json_object_get_string_member(c0, "text"), ==, "é\x01\x1f");
    sample_clear(&s);
}

static void test_write_fails_cleanly(Fixture *fx, gconstpointer data)
{
    sample s;
    sample_init(&s, fx);
    for (int f = 0; f < HYOCR_EXPORT_COUNT; f++) {
        g_autofree char *path = g_build_filename(fx->dir, "no-such-folder", "out.x", NULL);
        g_autoptr(GError) err = NULL;
        bool ok = hyocr_export_write(&s.ex, (hyocr_export_format)f, path, &err);
        g_assert_false(ok);
        g_assert_nonnull(err);
        g_assert_nonnull(strstr(err->message, "no-such-folder"));
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    }
    /* An existing file is replaced whole or left as it was. */
    g_autofree char *keep = tmp_path(fx, "keep.pdf");
    g_assert_true(g_file_set_contents(keep, "old", 3, NULL));
    s.pages[1].page = 5;   /* the PNG has no page 6: the PDF cannot be written */
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_export_write(&s.ex, HYOCR_EXPORT_PDF, keep, &err));
    g_assert_nonnull(err);
    g_autofree char *still = contents(keep);
    g_assert_cmpstr(still, ==, "old");
    sample_clear(&s);
}

/* ------------------------------------------------------------------------ HTML */

#if HYOCR_HAVE_HTML
static void test_html(Fixture *fx, gconstpointer data)
{
    sample s;
    sample_init(&s, fx);
    s.pages[0].task = HYOCR_TASK_PARSE_DOCUMENT;
    s.pages[0].text = "# Invoice\n\nAmount $a_1 + b^2$ due.\n\n\\[\\frac{1}{2}\\]\n\n"
                      "<table><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td><td>4</td></tr></table>\n\n"
                      "<script>alert(1)</script>\n";
    s.pages[1].text = NULL;
    s.pages[1].error = "no model <answer>";
    g_autofree char *path = write_export(fx, &s.ex, "out.html");
    g_autofree char *html = contents(path);
    g_assert_true(g_str_has_prefix(html, "<!DOCTYPE html>"));
    g_assert_nonnull(strstr(html, "<h1>Invoice</h1>"));
    g_assert_nonnull(strstr(html, "<table><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td><td>4</td></tr></table>"));
    g_assert_nonnull(strstr(html, "Amount \\(a_1 + b^2\\) due."));   /* _ and ^ untouched */
    g_assert_nonnull(strstr(html, "\\[\\frac{1}{2}\\]"));
    g_assert_null(strstr(html, "x-equation"));
    /* the model's raw HTML is kept, so the page itself forbids scripts and remote loads */
    g_assert_nonnull(strstr(html, "Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\""));
    g_assert_null(strstr(html, "src=\"http"));
    g_assert_nonnull(strstr(html, "This page failed: no model &lt;answer&gt;"));
    /* a spotting page: its lines, escaped */
    g_assert_nonnull(strstr(html, "<pre>Page two says hello\n第二页 中文</pre>"));
    g_assert_cmpint(g_strrstr(html, "id=\"page-2\"") > strstr(html, "id=\"page-1\""), ==, TRUE);
    sample_clear(&s);
}
#endif

/* ------------------------------------------------------------------------ searchable PDF */

#if HYOCR_HAVE_PDF_EXPORT
static bool have_tool(const char *name)
{
    g_autofree char *p = g_find_program_in_path(name);
    if (p) return true;
    g_autofree char *msg = g_strdup_printf("%s not installed (Debian package poppler-utils): check skipped", name);
    g_test_skip(msg);
    return false;
}

static char *run_tool(const char *const *argv)
{
    g_autoptr(GError) err = NULL;
    char *out = NULL;
    g_autofree char *errout = NULL;
    int status;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &errout, &status, &err))
        g_error("%s: %s", argv[0], err->message);
    if (!g_spawn_check_wait_status(status, NULL)) g_error("%s failed: %s", argv[0], errout);
    return out;
}

/* pdftotext -bbox: the words of page `page` (1-based) with their boxes. */
typedef struct {
    double x1, y1, x2, y2;
    char  *word;
} word_box;

static GArray *page_words(const char *pdf, int page, double *w, double *h)
{
    g_autofree char *p = g_strdup_printf("%d", page);
    g_autofree char *xml = run_tool((const char *[]){ "pdftotext", "-bbox", "-f", p, "-l", p, pdf, "-", NULL });
    const char *pg = strstr(xml, "<page width=\"");
    g_assert_nonnull(pg);
    *w = g_ascii_strtod(pg + 13, NULL);
    *h = g_ascii_strtod(strstr(pg, "height=\"") + 8, NULL);
    GArray *words = g_array_new(FALSE, FALSE, sizeof(word_box));
    for (const char *at = strstr(xml, "<word "); at; at = strstr(at + 1, "<word ")) {
        word_box wb;
        wb.x1 = g_ascii_strtod(strstr(at, "xMin=\"") + 6, NULL);
        wb.y1 = g_ascii_strtod(strstr(at, "yMin=\"") + 6, NULL);
        wb.x2 = g_ascii_strtod(strstr(at, "xMax=\"") + 6, NULL);
        wb.y2 = g_ascii_strtod(strstr(at, "yMax=\"") + 6, NULL);
        const char *start = strchr(at, '>') + 1, *end = strstr(start, "</word>");
        g_autofree char *raw = g_strndup(start, (gsize)(end - start));
        wb.word = g_strdup(raw);   /* our words hold no XML entities */
        g_array_append_val(words, wb);
    }
    return words;
}

static void words_free(GArray *words)
{
    for (guint i = 0; i < words->len; i++) g_free(g_array_index(words, word_box, i).word);
    g_array_unref(words);
}

/* Every spotted line's words inside its box: the box from the 0…1000 answer in points, with a
 * tolerance of 0.5 pt (the words' extents come from the font's ascent and descent, which Pango's
 * logical extents, scaled to the box, match to within a few hundredths of a point). */
static void check_page_words(const char *pdf, int page, const line *lines, int n, double pw, double ph)
{
    double w, h;
    GArray *words = page_words(pdf, page, &w, &h);
    g_assert_cmpfloat(fabs(w - pw), <, 0.01);
    g_assert_cmpfloat(fabs(h - ph), <, 0.01);
    guint k = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double bx1 = lround(lines[i].x1 * 1000 / pw) * pw / 1000, by1 = lround(lines[i].y1 * 1000 / ph) * ph / 1000;
        double bx2 = lround(lines[i].x2 * 1000 / pw) * pw / 1000, by2 = lround(lines[i].y2 * 1000 / ph) * ph / 1000;
        g_auto(GStrv) want = g_strsplit(lines[i].text, " ", -1);
        for (char **wd = want; *wd; wd++, k++) {
            g_assert_cmpuint(k, <, words->len);
            const word_box *wb = &g_array_index(words, word_box, k);
            g_assert_cmpstr(wb->word, ==, *wd);
            const double tol = 0.5;
            worst = MAX(worst, MAX(MAX(bx1 - wb->x1, wb->x2 - bx2), MAX(by1 - wb->y1, wb->y2 - by2)));
            if (wb->x1 < bx1 - tol || wb->x2 > bx2 + tol || wb->y1 < by1 - tol || wb->y2 > by2 + tol)
                g_error("page %d: “%s” at %.2f,%.2f–%.2f,%.2f is outside its box %.2f,%.2f–%.2f,%.2f", page, wb->word,
                        wb->x1, wb->y1, wb->x2, wb->y2, bx1, by1, bx2, by2);
        }
    }
    g_assert_cmpuint(k, ==, words->len);   /* nothing else: the scanned pages hold no text of their own */
    g_test_message("page %d: the words reach at most %.3f pt beyond their boxes", page, worst);
    words_free(words);
}

static hyocr_image *render_back(Fixture *fx, const char *pdf, int page, int dpi)
{
    g_autofree char *p = g_strdup_printf("%d", page), *r = g_strdup_printf("%d", dpi);
    g_autofree char *base = g_strdup_printf("%s/back-%d-%d", fx->dir, page, dpi);
    g_autofree char *png = g_strconcat(base, ".png", NULL);
    g_free(run_tool((const char *[]){ "pdftocairo", "-png", "-r", r, "-f", p, "-l", p, "-singlefile", pdf, base, NULL }));
    hyocr_image *img = hyocr_image_load(png, NULL, NULL);
    g_assert_nonnull(img);
    return img;
}

static void assert_same_image(const hyocr_image *a, const hyocr_image *b, const char *what)
{
    g_assert_cmpint(a->width, ==, b->width);
    g_assert_cmpint(a->height, ==, b->height);
    size_t n = (size_t)a->width * a->height * 3;
    for (size_t i = 0; i < n; i++)
        if (a->rgb[i] != b->rgb[i])
            g_error("%s: differs at (%zu, %zu): %d vs %d", what, i / 3 % a->width, i / 3 / a->width, a->rgb[i], b->rgb[i]);
}

static void test_searchable_pdf(Fixture *fx, gconstpointer data)
{
    if (!have_tool("pdftotext") || !have_tool("pdftocairo")) return;
    sample s;
    sample_init(&s, fx);
    g_autofree char *out = write_export(fx, &s.ex, "searchable.pdf");
    g_autoptr(hyocr_document) doc = hyocr_document_open(out, NULL, NULL);
    g_assert_nonnull(doc);
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 3);

    /* the words inside their boxes, page by page (the PNG page: a point a pixel) */
    check_page_words(out, 1, pdf_lines[0], 2, PDF_W, PDF_H);
    check_page_words(out, 2, png_lines, 1, 600, 240);
    check_page_words(out, 3, pdf_lines[1], 2, PDF_W, PDF_H);

    /* the whole text, in reading order, page after page */
    g_autofree char *all = run_tool((const char *[]){ "pdftotext", out, "-", NULL });
    const char *order[] = { "Invoice 2024-117", "Total due: 42.00 EUR", "Receipt No. 8841", "Page two says hello",
                            "第二页 中文" };
    const char *at = all;
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++) {
        const char *found = strstr(at, order[i]);
        if (!found) g_error("pdftotext lost or reordered “%s”:\n%s", order[i], all);
        at = found + strlen(order[i]);
    }

    /* the pages look exactly as they went in: no pixel of the text layer shows */
    g_autofree char *scan = tmp_path(fx, "scan.pdf"), *png = tmp_path(fx, "receipt.png");
    for (int p = 0; p < 2; p++) {
        g_autoptr(hyocr_image) before = render_back(fx, scan, p + 1, 150);
        g_autoptr(hyocr_image) after = render_back(fx, out, p == 0 ? 1 : 3, 150);
        assert_same_image(after, before, "a PDF page redrawn in the export");
    }
    g_autoptr(hyocr_image) original = hyocr_image_load(png, NULL, NULL);
    g_autoptr(hyocr_image) back = render_back(fx, out, 2, 72);
    assert_same_image(back, original, "the PNG page rendered back at 72 dpi, a pixel a point");
    sample_clear(&s);
}
#endif

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define FX(path, fn) g_test_add(path, Fixture, NULL, fx_setup, fn, fx_teardown)
    g_test_add_func("/export/format-names", test_format_names);
#if HYOCR_HAVE_PDF
    FX("/export/text-markdown", test_text_markdown);
    FX("/export/json", test_json);
    FX("/export/write-fails-cleanly", test_write_fails_cleanly);
#if HYOCR_HAVE_HTML
    FX("/export/html", test_html);
#endif
#if HYOCR_HAVE_PDF_EXPORT
    FX("/export/searchable-pdf", test_searchable_pdf);
#endif
#endif
    return g_test_run();
}
