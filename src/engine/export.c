/* hyocr — exports: text, Markdown, JSON / JSON lines and HTML; the searchable PDF is
 * export-pdf.c. Every writer takes the pages in order and writes the file whole or not at all. */
#include "export-private.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "i18n.h"
#include "json.h"
#include "spotting.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#if HYOCR_HAVE_HTML
#include <md4c-html.h>
#endif

static const struct {
    hyocr_export_format format;
    const char         *ext;
    bool                built;
} exts[] = {
    { HYOCR_EXPORT_TEXT, "txt", true },
    { HYOCR_EXPORT_MARKDOWN, "md", true },
    { HYOCR_EXPORT_JSON, "json", true },
    { HYOCR_EXPORT_JSONL, "jsonl", true },
    { HYOCR_EXPORT_PDF, "pdf", HYOCR_HAVE_PDF_EXPORT },
    { HYOCR_EXPORT_HTML, "html", HYOCR_HAVE_HTML },
};

bool hyocr_export_format_for_path(const char *path, hyocr_export_format *out)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!dot || (slash && dot < slash)) return false;
    for (size_t i = 0; i < G_N_ELEMENTS(exts); i++)
        if (exts[i].built && !g_ascii_strcasecmp(dot + 1, exts[i].ext)) {
            *out = exts[i].format;
            return true;
        }
    return false;
}

const char *hyocr_export_extensions(void)
{
    static gsize once;
    if (g_once_init_enter(&once)) {
        GString *s = g_string_new(NULL);
        for (size_t i = 0; i < G_N_ELEMENTS(exts); i++)
            if (exts[i].built) g_string_append_printf(s, "%s.%s", s->len ? ", " : "", exts[i].ext);
        g_once_init_leave(&once, (gsize)g_string_free(s, FALSE));
    }
    return (const char *)once;
}

/* ------------------------------------------------------------------------ pages */

char *hyocr_export_page_label(const hyocr_export_page *p)
{
    const char *name = hyocr_document_name(p->document);
    if (hyocr_document_n_pages(p->document) <= 1) return g_strdup(name);
    return g_strdup_printf(_("%s, page %d"), name, p->page + 1);
}

bool hyocr_export_page_geometry(const hyocr_export_page *p, hyocr_export_geometry *g, GError **error)
{
    double w, h;
    if (!hyocr_document_page_size(p->document, p->page, &w, &h, error)) return false;
    g->vector = hyocr_document_format(p->document) == HYOCR_FORMAT_PDF;
    if (g->vector) {
        g->w_pt = w;
        g->h_pt = h;
        /* the page as pdftoppm -r 200 would give it, whatever budget the model's render had */
        hyocr_render_options ro = { .dpi = HYOCR_PDF_DEFAULT_DPI, .max_pixels = INT64_MAX };
        return hyocr_document_render_size(p->document, p->page, &ro, &g->w_px, &g->h_px, error);
    }
    g->w_px = (int)w;
    g->h_px = (int)h;
    g->w_pt = w * 72.0 / HYOCR_EXPORT_IMAGE_PPI;
    g->h_pt = h * 72.0 / HYOCR_EXPORT_IMAGE_PPI;
    return true;
}

/* What a page says as text: the answer as is, a spotting answer's lines without their boxes,
 * or why it failed. */
static char *page_text(const hyocr_export_page *p)
{
    if (!p->text) return g_strdup_printf(_("[this page failed: %s]"), p->error ? p->error : _("no answer"));
    if (p->task != HYOCR_TASK_SPOTTING) return g_strdup(p->text);
    g_autoptr(GPtrArray) lines = hyocr_spot_parse(p->text);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < lines->len; i++)
        g_string_append_printf(s, "%s%s", i ? "\n" : "", ((hyocr_spot_line *)lines->pdata[i])->text);
    return g_string_free(s, FALSE);
}

static bool write_text(const hyocr_export *ex, bool markdown, GString *out)
{
    for (int i = 0; i < ex->n_pages; i++) {
        const hyocr_export_page *p = &ex->pages[i];
        g_autofree char *label = hyocr_export_page_label(p);
        g_autofree char *body = page_text(p);
        if (markdown) {
            /* a comment names the page ("--" cannot be inside one); a thematic break
             * separates pages */
            g_auto(GStrv) parts = g_strsplit(label, "--", -1);
            g_autofree char *safe = g_strjoinv("- -", parts);
            g_string_append_printf(out, "%s<!-- %s -->\n\n%s\n", i ? "\n---\n\n" : "", safe, body);
        } else {
            g_string_append_printf(out, "%s==> %s <==\n%s\n", i ? "\n" : "", label, body);
        }
    }
    return true;
}

/* ------------------------------------------------------------------------ JSON */

static void add_int_array(JsonBuilder *b, const char *name, const double *v, int n, bool integers)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_array(b);
    for (int i = 0; i < n; i++) {
        if (integers) json_builder_add_int_value(b, (gint64)lround(v[i]));
        else json_builder_add_double_value(b, round(v[i] * 100) / 100);   /* 0.01 pt */
    }
    json_builder_end_array(b);
}

/* Each line with its box in the model's 0…1000 scale, in pixels of the original page, and for
 * a PDF page in points (origin top left, as the 0…1000 scale). */
static void json_lines(JsonBuilder *b, const char *text, const hyocr_export_geometry *g)
{
    g_autoptr(GPtrArray) lines = hyocr_spot_parse(text);
    json_builder_set_member_name(b, "lines");
    json_builder_begin_array(b);
    for (guint i = 0; i < lines->len; i++) {
        const hyocr_spot_line *l = lines->pdata[i];
        double k[4] = { l->x1, l->y1, l->x2, l->y2 };
        double px[4] = { k[0] * g->w_px / 1000, k[1] * g->h_px / 1000, k[2] * g->w_px / 1000, k[3] * g->h_px / 1000 };
        double pt[4] = { k[0] * g->w_pt / 1000, k[1] * g->h_pt / 1000, k[2] * g->w_pt / 1000, k[3] * g->h_pt / 1000 };
        json_builder_begin_object(b);
        hyocr_json_member_str(b, "text", l->text);
        add_int_array(b, "box", k, 4, true);
        add_int_array(b, "box_px", px, 4, true);
        if (g->vector) add_int_array(b, "box_pt", pt, 4, false);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

void hyocr_export_add_timings(JsonBuilder *b, const hyocr_timings *t)
{
    json_builder_set_member_name(b, "timings");
    json_builder_begin_object(b);
    const struct { const char *k; double v; } f[] = {
        { "preprocess_ms", t->preprocess_ms }, { "vision_ms", t->vision_ms }, { "prefill_ms", t->prefill_ms },
        { "decode_ms", t->decode_ms }, { "total_ms", t->total_ms }, { "first_token_ms", t->first_token_ms },
        { "decode_tokens_per_s", t->decode_tokens_per_s },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(f); i++) {
        json_builder_set_member_name(b, f[i].k);
        json_builder_add_double_value(b, f[i].v);
    }
    json_builder_end_object(b);
}

static void json_who(JsonBuilder *b, const hyocr_export *ex)
{
    hyocr_json_member_str(b, "model", ex->model ? ex->model : "");
    hyocr_json_member_str(b, "engine", "hyocr " HYOCR_VERSION);
    hyocr_json_member_str(b, "backend", ex->backend ? ex->backend : "");
}

static bool json_page(JsonBuilder *b, const hyocr_export *ex, const hyocr_export_page *p, bool with_who,
                      GError **error)
{
    hyocr_export_geometry g;
    if (!hyocr_export_page_geometry(p, &g, error)) return false;
    json_builder_begin_object(b);
    if (with_who) json_who(b, ex);
    hyocr_json_member_str(b, "source", hyocr_document_name(p->document));
    hyocr_json_member_int(b, "page", p->page + 1);
    hyocr_json_member_int(b, "pages", hyocr_document_n_pages(p->document));
    hyocr_json_member_str(b, "task", hyocr_task_name(p->task));
    if (p->error) hyocr_json_member_str(b, "error", p->error);
    hyocr_json_member_str(b, "text", p->text ? p->text : "");
    hyocr_json_member_int(b, "page_width_px", g.w_px);
    hyocr_json_member_int(b, "page_height_px", g.h_px);
    if (g.vector) {
        double pt[2] = { g.w_pt, g.h_pt };
        add_int_array(b, "page_size_pt", pt, 2, false);
    }
    hyocr_json_member_int(b, "image_width", p->image_width);
    hyocr_json_member_int(b, "image_height", p->image_height);
    if (p->task == HYOCR_TASK_SPOTTING && p->text) json_lines(b, p->text, &g);
    if (p->timings) hyocr_export_add_timings(b, p->timings);
    json_builder_end_object(b);
    return true;
}

static bool write_json(const hyocr_export *ex, bool lines, GString *out, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    if (!lines) {
        json_builder_begin_object(b);
        json_who(b, ex);
        json_builder_set_member_name(b, "pages");
        json_builder_begin_array(b);
    }
    for (int i = 0; i < ex->n_pages; i++) {
        if (!json_page(b, ex, &ex->pages[i], lines, error)) return false;
        if (!lines) continue;
        g_autoptr(JsonNode) root = json_builder_get_root(b);
        g_autofree char *line = hyocr_json_to_data(root, false);
        g_string_append_printf(out, "%s\n", line);
        json_builder_reset(b);
    }
    if (lines) return true;
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = hyocr_json_to_data(root, true);
    g_string_append_printf(out, "%s\n", text);
    return true;
}

/* ------------------------------------------------------------------------ HTML */

bool hyocr_export_is_markdown(hyocr_task t)
{
    return t == HYOCR_TASK_PARSE_DOCUMENT || t == HYOCR_TASK_PARSE_TABLE || t == HYOCR_TASK_PARSE_FORMULA ||
           t == HYOCR_TASK_PARSE_CHART || t == HYOCR_TASK_TRANSLATE_EN || t == HYOCR_TASK_TRANSLATE_ZH;
}

#if HYOCR_HAVE_HTML

/* md4c reads $…$ and $$…$$ as LaTeX; the model also writes \(…\) and \[…\], whose backslashes
 * Markdown would eat. A backslash escaped itself (\\[ in a formula's line break) is left. */
static char *dollar_math(const char *md)
{
    GString *s = g_string_sized_new(strlen(md));
    for (const char *p = md; *p; p++) {
        bool lone = p == md || p[-1] != '\\';
        if (*p == '\\' && lone && (p[1] == '[' || p[1] == ']')) {
            g_string_append(s, "$$");
            p++;
        } else if (*p == '\\' && lone && (p[1] == '(' || p[1] == ')')) {
            g_string_append_c(s, '$');
            p++;
        } else {
            g_string_append_c(s, *p);
        }
    }
    return g_string_free(s, FALSE);
}

static void html_sink(const MD_CHAR *text, MD_SIZE size, void *data)
{
    g_string_append_len(data, text, (gssize)size);
}

/* md4c renders formulas as <x-equation>; MathJax looks for \( \) and \[ \]. */
static void mathjax_delimiters(GString *html, gsize from)
{
    static const char open[] = "<x-equation>", open_d[] = "<x-equation type=\"display\">", close[] = "</x-equation>";
    gsize at = from;
    for (;;) {
        char *o = strstr(html->str + at, "<x-equation");
        if (!o) return;
        gsize i = (gsize)(o - html->str);
        bool display = g_str_has_prefix(o, open_d);
        gsize olen = display ? strlen(open_d) : strlen(open);
        g_string_erase(html, (gssize)i, (gssize)olen);
        g_string_insert(html, (gssize)i, display ? "\\[" : "\\(");
        char *c = strstr(html->str + i, close);
        if (!c) return;
        gsize j = (gsize)(c - html->str);
        g_string_erase(html, (gssize)j, (gssize)strlen(close));
        g_string_insert(html, (gssize)j, display ? "\\]" : "\\)");
        at = j + 2;
    }
}

char *hyocr_export_markdown_html(const char *markdown)
{
    g_autofree char *md = dollar_math(markdown);
    GString *out = g_string_new(NULL);
    md_html(md, (MD_SIZE)strlen(md), html_sink, out,
            MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_LATEXMATHSPANS | MD_FLAG_NOINDENTEDCODEBLOCKS, 0);
    mathjax_delimiters(out, 0);
    return g_string_free(out, FALSE);
}

static void html_page(const hyocr_export_page *p, GString *out)
{
    g_autofree char *label = hyocr_export_page_label(p);
    g_autofree char *label_html = g_markup_escape_text(label, -1);
    g_string_append_printf(out, "<section class=\"page\" id=\"page-%d\">\n<p class=\"page-label\">%s</p>\n",
                           p->page + 1, label_html);
    if (!p->text) {
        g_autofree char *why = g_markup_escape_text(p->error ? p->error : _("no answer"), -1);
        g_autofree char *line = g_strdup_printf(_("This page failed: %s"), why);
        g_string_append_printf(out, "<p class=\"page-error\">%s</p>\n", line);
    } else if (hyocr_export_is_markdown(p->task)) {
        g_autofree char *html = hyocr_export_markdown_html(p->text);
        g_string_append(out, html);
    } else {
        g_autofree char *text = page_text(p);
        g_autofree char *esc = g_markup_escape_text(text, -1);
        g_string_append_printf(out, "<pre>%s</pre>\n", esc);
    }
    g_string_append(out, "</section>\n");
}

/* Raw HTML in the answers (their tables) is kept, so the page forbids every script and
 * remote load: a scanned page cannot make the file run anything. */
static bool write_html(const hyocr_export *ex, GString *out)
{
    const char *title = ex->n_pages ? hyocr_document_name(ex->pages[0].document) : "hyocr";
    g_autofree char *title_html = g_markup_escape_text(title, -1);
    g_string_append_printf(out,
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"generator\" content=\"hyocr %s\">\n<title>%s</title>\n"
        "<!-- Formulas are LaTeX between \\( \\) (inline) and \\[ \\] (display), the delimiters MathJax reads.\n"
        "     To typeset them, put a copy of MathJax 3 beside this file, add\n"
        "     <script src=\"mathjax/es5/tex-chtml.js\"></script> here and allow it with script-src 'self' in the\n"
        "     policy above. As written, this file loads nothing from anywhere. -->\n"
        "<style>\nbody { font-family: sans-serif; max-width: 60em; margin: 2em auto; line-height: 1.5; }\n"
        "table { border-collapse: collapse; margin: 1em 0; }\ntd, th { border: 1px solid #888; padding: 0.2em 0.5em; }\n"
        "section.page { border-top: 1px solid #ccc; margin-top: 2em; }\n.page-label { color: #777; font-size: 0.8em; }\n"
        ".page-error { color: #a00; }\npre { white-space: pre-wrap; }\n</style>\n</head>\n<body>\n",
        HYOCR_VERSION, title_html);
    for (int i = 0; i < ex->n_pages; i++) html_page(&ex->pages[i], out);
    g_string_append(out, "</body>\n</html>\n");
    return true;
}
#endif

#if !HYOCR_HAVE_HTML
char *hyocr_export_markdown_html(const char *markdown)
{
    (void)markdown;
    return NULL;
}
#endif

/* ------------------------------------------------------------------------ writing */

bool hyocr_export_write(const hyocr_export *ex, hyocr_export_format format, const char *path, GError **error)
{
    if (format == HYOCR_EXPORT_PDF) {
#if HYOCR_HAVE_PDF_EXPORT
        return hyocr_export_write_pdf(ex, path, error);
#endif
    }
    g_autoptr(GString) out = g_string_new(NULL);
    bool ok = false;
    switch (format) {
    case HYOCR_EXPORT_TEXT: ok = write_text(ex, false, out); break;
    case HYOCR_EXPORT_MARKDOWN: ok = write_text(ex, true, out); break;
    case HYOCR_EXPORT_JSON: ok = write_json(ex, false, out, error); break;
    case HYOCR_EXPORT_JSONL: ok = write_json(ex, true, out, error); break;
#if HYOCR_HAVE_HTML
    case HYOCR_EXPORT_HTML: ok = write_html(ex, out); break;
#endif
    default:
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s: this build cannot write that format"),
                    path);
        return false;
    }
    if (!ok) return false;
    g_autoptr(GError) err = NULL;
    if (!g_file_set_contents(path, out->str, (gssize)out->len, &err)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot write: %s"), path, err->message);
        return false;
    }
    return true;
}
