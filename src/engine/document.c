/* hyocr — documents: the list of readable formats, content sniffing, and the dispatch to
 * the format readers (reader.h), one page at a time. */
#include "document.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "i18n.h"
#include "reader.h"
#include "resize.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ formats */

static const char *const png_mime[] G_GNUC_UNUSED = { "image/png", NULL };
static const char *const png_ext[] G_GNUC_UNUSED = { "png", NULL };
static const char *const jpeg_mime[] G_GNUC_UNUSED = { "image/jpeg", NULL };
static const char *const jpeg_ext[] G_GNUC_UNUSED = { "jpg", "jpeg", "jpe", "jfif", NULL };
static const char *const tiff_mime[] G_GNUC_UNUSED = { "image/tiff", NULL };
static const char *const tiff_ext[] G_GNUC_UNUSED = { "tif", "tiff", NULL };
static const char *const webp_mime[] G_GNUC_UNUSED = { "image/webp", NULL };
static const char *const webp_ext[] G_GNUC_UNUSED = { "webp", NULL };
static const char *const heif_mime[] G_GNUC_UNUSED = { "image/heic", "image/heif", NULL };
static const char *const heif_ext[] G_GNUC_UNUSED = { "heic", "heif", NULL };
static const char *const avif_mime[] G_GNUC_UNUSED = { "image/avif", NULL };
static const char *const avif_ext[] G_GNUC_UNUSED = { "avif", NULL };
static const char *const pdf_mime[] G_GNUC_UNUSED = { "application/pdf", NULL };
static const char *const pdf_ext[] G_GNUC_UNUSED = { "pdf", NULL };

/* Only what this build reads: a reader whose library was missing is not offered. */
static const hyocr_format_info formats[] = {
    { HYOCR_FORMAT_PNG, "PNG", png_mime, png_ext, false },
    { HYOCR_FORMAT_JPEG, "JPEG", jpeg_mime, jpeg_ext, false },
#if HYOCR_HAVE_TIFF
    { HYOCR_FORMAT_TIFF, "TIFF", tiff_mime, tiff_ext, true },
#endif
#if HYOCR_HAVE_WEBP
    { HYOCR_FORMAT_WEBP, "WebP", webp_mime, webp_ext, false },
#endif
#if HYOCR_HAVE_HEIF
    { HYOCR_FORMAT_HEIF, "HEIC", heif_mime, heif_ext, false },
    { HYOCR_FORMAT_AVIF, "AVIF", avif_mime, avif_ext, false },
#endif
#if HYOCR_HAVE_PDF
    { HYOCR_FORMAT_PDF, "PDF", pdf_mime, pdf_ext, true },
#endif
};

static const hyocr_reader *reader_for(hyocr_format f)
{
    switch (f) {
    case HYOCR_FORMAT_PNG: return &hyocr_reader_png;
    case HYOCR_FORMAT_JPEG: return &hyocr_reader_jpeg;
#if HYOCR_HAVE_TIFF
    case HYOCR_FORMAT_TIFF: return &hyocr_reader_tiff;
#endif
#if HYOCR_HAVE_WEBP
    case HYOCR_FORMAT_WEBP: return &hyocr_reader_webp;
#endif
#if HYOCR_HAVE_HEIF
    case HYOCR_FORMAT_HEIF:
    case HYOCR_FORMAT_AVIF: return &hyocr_reader_heif;
#endif
#if HYOCR_HAVE_PDF
    case HYOCR_FORMAT_PDF: return &hyocr_reader_pdf;
#endif
    default: return NULL;
    }
}

const hyocr_format_info *hyocr_formats(size_t *n)
{
    *n = G_N_ELEMENTS(formats);
    return formats;
}

const hyocr_format_info *hyocr_format_get(hyocr_format format)
{
    for (size_t i = 0; i < G_N_ELEMENTS(formats); i++)
        if (formats[i].format == format) return &formats[i];
    return NULL;
}

bool hyocr_format_name_matches(const char *filename)
{
    const char *dot = filename ? strrchr(filename, '.') : NULL;
    if (!dot) return false;
    for (size_t i = 0; i < G_N_ELEMENTS(formats); i++)
        for (const char *const *e = formats[i].extensions; *e; e++)
            if (!g_ascii_strcasecmp(dot + 1, *e)) return true;
    return false;
}

/* ISO base media (HEIF, AVIF): an ftyp box first; AVIF when its brand, or a compatible brand
 * of a generic mif1/msf1 file, says so (libheif decides the codec itself). */
static hyocr_format sniff_ftyp(const uint8_t *p, size_t len)
{
    if (len < 16 || memcmp(p + 4, "ftyp", 4) != 0) return HYOCR_FORMAT_UNKNOWN;
    static const char *const heif_brands[] = { "heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1" };
    const uint8_t *major = p + 8;
    if (!memcmp(major, "avif", 4) || !memcmp(major, "avis", 4)) return HYOCR_FORMAT_AVIF;
    bool heif = false;
    for (size_t i = 0; i < G_N_ELEMENTS(heif_brands); i++)
        heif = heif || !memcmp(major, heif_brands[i], 4);
    if (!heif) return HYOCR_FORMAT_UNKNOWN;
    uint32_t box = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    size_t end = MIN((size_t)box, len);
    bool generic = !memcmp(major, "mif1", 4) || !memcmp(major, "msf1", 4);
    for (size_t at = 16; generic && at + 4 <= end; at += 4)
        if (!memcmp(p + at, "avif", 4) || !memcmp(p + at, "avis", 4)) return HYOCR_FORMAT_AVIF;
    return HYOCR_FORMAT_HEIF;
}

hyocr_format hyocr_format_sniff(const void *data, size_t len)
{
    const uint8_t *p = data;
    if (!p) return HYOCR_FORMAT_UNKNOWN;
    if (len >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return HYOCR_FORMAT_PNG;
    if (len >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return HYOCR_FORMAT_JPEG;
    if (len >= 4 && (!memcmp(p, "II*\0", 4) || !memcmp(p, "MM\0*", 4) || !memcmp(p, "II+\0", 4) ||
                     !memcmp(p, "MM\0+", 4)))
        return HYOCR_FORMAT_TIFF;
    if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) return HYOCR_FORMAT_WEBP;
    hyocr_format f = sniff_ftyp(p, len);
    if (f != HYOCR_FORMAT_UNKNOWN) return f;
    /* PDF readers accept the header anywhere in the first 1024 bytes (after a mail header, say). */
    for (size_t i = 0; i + 5 <= MIN(len, 1024); i++)
        if (p[i] == '%' && memcmp(p + i, "%PDF-", 5) == 0) return HYOCR_FORMAT_PDF;
    return HYOCR_FORMAT_UNKNOWN;
}

/* What an unreadable file is, when its first bytes say so. */
static const char *unreadable_kind(const uint8_t *p, size_t len)
{
    static const char *const unbuilt[] = {
        [HYOCR_FORMAT_TIFF] = N_("a TIFF image"), [HYOCR_FORMAT_WEBP] = N_("a WebP image"),
        [HYOCR_FORMAT_HEIF] = N_("a HEIC image"), [HYOCR_FORMAT_AVIF] = N_("an AVIF image"),
        [HYOCR_FORMAT_PDF] = N_("a PDF document"),
    };
    hyocr_format f = hyocr_format_sniff(p, len);
    if (f != HYOCR_FORMAT_UNKNOWN && (size_t)f < G_N_ELEMENTS(unbuilt) && unbuilt[f]) return unbuilt[f];
    static const struct { const char *magic; size_t n; const char *what; } known[] = {
        { "GIF8", 4, N_("a GIF image") }, { "BM", 2, N_("a BMP image") }, { "\0\0\1\0", 4, N_("an ICO image") },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(known); i++)
        if (len >= known[i].n && memcmp(p, known[i].magic, known[i].n) == 0) return known[i].what;
    return NULL;
}

char *hyocr_format_names(void)
{
    GString *s = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(formats); i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", formats[i].name);
    return g_string_free(s, FALSE);
}

static void set_unreadable(const uint8_t *p, size_t len, const char *name, GError **error)
{
    g_autoptr(GString) hex = g_string_new(NULL);
    for (size_t i = 0; i < len && i < 8; i++)
        g_string_append_printf(hex, "%s%02x", i ? " " : "", p[i]);
    const char *more = len > 8 ? " …" : "";
    const char *kind = unreadable_kind(p, len);
    g_autofree char *names = hyocr_format_names();
    if (kind)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE,
                    _("%s: looks like %s (starts with %s%s), which hyocr does not read; convert it to one of %s"),
                    name, _(kind), hex->str, more, names);
    else
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE,
                    _("%s: not a file hyocr can read (starts with %s%s); it reads %s"), name, hex->str, more, names);
}

/* ------------------------------------------------------------------------ decode status */

void hyocr_decode_fail(hyocr_decode_status *st, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    st->code = code;
}

/* ------------------------------------------------------------------------ documents */

struct hyocr_document {
    gatomicrefcount     ref;
    char               *name;
    GBytes             *bytes;
    const hyocr_reader *reader;
    hyocr_format        format;
    void               *state;
    int                 n_pages;
    int64_t             limit;
    bool                ignore_exif;
    GMutex              lock;       /* readers are not thread-safe (poppler, libtiff's directory) */
};

static hyocr_decode_status status_for(const hyocr_document *doc)
{
    return (hyocr_decode_status){ .name = doc->name, .code = HYOCR_ERROR_IMAGE, .limit = doc->limit };
}

hyocr_document *hyocr_document_open_bytes(GBytes *bytes, const char *name, const hyocr_document_options *opts,
                                          GError **error)
{
    static const hyocr_document_options defaults = { 0 };
    if (!opts) opts = &defaults;
    if (!name) name = "(document in memory)";
    size_t len = 0;
    const uint8_t *data = bytes ? g_bytes_get_data(bytes, &len) : NULL;
    if (!data || len == 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE, _("%s: file is empty (0 bytes)"), name);
        return NULL;
    }
    hyocr_format format = hyocr_format_sniff(data, len);
    const hyocr_reader *reader = reader_for(format);
    if (!reader) {
        set_unreadable(data, len, name, error);
        return NULL;
    }
    hyocr_document *doc = g_new0(hyocr_document, 1);
    g_atomic_ref_count_init(&doc->ref);
    doc->name = g_strdup(name);
    doc->bytes = g_bytes_ref(bytes);
    doc->reader = reader;
    doc->format = format;
    doc->limit = opts->max_decode_pixels > 0 ? opts->max_decode_pixels : HYOCR_DEFAULT_MAX_DECODE_PIXELS;
    doc->ignore_exif = opts->ignore_exif;
    g_mutex_init(&doc->lock);
    hyocr_decode_status st = status_for(doc);
    doc->state = reader->open(bytes, data, len, opts, &doc->n_pages, &st);
    if (!doc->state) {
        g_set_error(error, HYOCR_ERROR, st.code, "%s: %s", name, st.msg[0] ? st.msg : _("could not be decoded"));
        hyocr_document_unref(doc);
        return NULL;
    }
    return doc;
}

hyocr_document *hyocr_document_open(const char *path, const hyocr_document_options *opts, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, &err);
    if (!map) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot read the file (%s)"), path, err->message);
        return NULL;
    }
    /* An empty file maps to no bytes at all; it still gets the "empty" message. */
    g_autoptr(GBytes) bytes = g_mapped_file_get_length(map) ? g_mapped_file_get_bytes(map) : g_bytes_new(NULL, 0);
    return hyocr_document_open_bytes(bytes, path, opts, error);
}

/* The reader of a document made from pixels: its state is the image. */
static hyocr_image *pixels_copy(const hyocr_image *img)
{
    hyocr_image *copy = hyocr_image_new(img->width, img->height);
    if (copy) memcpy(copy->rgb, img->rgb, (size_t)img->width * img->height * 3);
    return copy;
}

static hyocr_image *pixels_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                                  hyocr_decode_status *st)
{
    hyocr_image *copy = pixels_copy(state);
    if (!copy) hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a %d×%d image"),
                                 ((hyocr_image *)state)->width, ((hyocr_image *)state)->height);
    return copy;
}

static bool pixels_page_size(void *state, int page, double *width, double *height, hyocr_decode_status *st)
{
    *width = ((hyocr_image *)state)->width;
    *height = ((hyocr_image *)state)->height;
    return true;
}

static void pixels_close(void *state) { hyocr_image_free(state); }

static const hyocr_reader pixels_reader = {
    .format = HYOCR_FORMAT_PIXELS, .close = pixels_close, .render = pixels_render, .page_size = pixels_page_size,
};

hyocr_document *hyocr_document_new_for_image(const hyocr_image *img, const char *name)
{
    hyocr_image *copy = pixels_copy(img);
    if (!copy) return NULL;
    hyocr_document *doc = g_new0(hyocr_document, 1);
    g_atomic_ref_count_init(&doc->ref);
    doc->name = g_strdup(name ? name : "(image in memory)");
    doc->bytes = g_bytes_new(NULL, 0);
    doc->reader = &pixels_reader;
    doc->format = HYOCR_FORMAT_PIXELS;
    doc->state = copy;
    doc->n_pages = 1;
    doc->limit = HYOCR_DEFAULT_MAX_DECODE_PIXELS;
    doc->ignore_exif = true;   /* pixels are upright already */
    g_mutex_init(&doc->lock);
    return doc;
}

hyocr_document *hyocr_document_ref(hyocr_document *doc)
{
    g_atomic_ref_count_inc(&doc->ref);
    return doc;
}

void hyocr_document_unref(hyocr_document *doc)
{
    if (!doc || !g_atomic_ref_count_dec(&doc->ref)) return;
    if (doc->state) doc->reader->close(doc->state);
    g_bytes_unref(doc->bytes);
    g_mutex_clear(&doc->lock);
    g_free(doc->name);
    g_free(doc);
}

const char *hyocr_document_name(const hyocr_document *doc) { return doc->name; }
hyocr_format hyocr_document_format(const hyocr_document *doc) { return doc->format; }
int hyocr_document_n_pages(const hyocr_document *doc) { return doc->n_pages; }

/* "name: why", or "name, page N: why" when the document has several pages. */
static void set_page_error(const hyocr_document *doc, int page, int code, const char *msg, GError **error)
{
    if (doc->n_pages > 1)
        g_set_error(error, HYOCR_ERROR, code, _("%s, page %d: %s"), doc->name, page + 1, msg);
    else
        g_set_error(error, HYOCR_ERROR, code, "%s: %s", doc->name, msg);
}

static bool check_page(const hyocr_document *doc, int page, GError **error)
{
    if (page >= 0 && page < doc->n_pages) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                g_dngettext(GETTEXT_PACKAGE, "%s: there is no page %d (the document has %d page)",
                         "%s: there is no page %d (the document has %d pages)", doc->n_pages),
                doc->name, page + 1, doc->n_pages);
    return false;
}

/* The page as stored (not yet upright), with its orientation. */
static hyocr_image *render_raw(hyocr_document *doc, int page, const hyocr_render_options *ro, int *orientation,
                               GError **error)
{
    static const hyocr_render_options defaults = { 0 };
    if (!check_page(doc, page, error)) return NULL;
    hyocr_decode_status st = status_for(doc);
    *orientation = 0;
    g_mutex_lock(&doc->lock);
    hyocr_image *img = doc->reader->render(doc->state, page, ro ? ro : &defaults, orientation, &st);
    g_mutex_unlock(&doc->lock);
    if (!img) set_page_error(doc, page, st.code, st.msg[0] ? st.msg : _("could not be decoded"), error);
    return img;
}

hyocr_image *hyocr_document_render(hyocr_document *doc, int page, const hyocr_render_options *ro, GError **error)
{
    int orientation;
    hyocr_image *img = render_raw(doc, page, ro, &orientation, error);
    if (img && !doc->ignore_exif) img = hyocr_image_upright(img, orientation, doc->name, error);
    /* A raster's max_side is the pre-scale; a PDF page was rendered to fit already. */
    hyocr_image *small = NULL;
    if (img && ro && !hyocr_image_fit(img, ro->max_side, ro->resize_threads, &small, error)) {
        g_prefix_error(error, "%s: ", doc->name);
        g_clear_pointer(&img, hyocr_image_free);
    }
    if (!small) return img;
    hyocr_image_free(img);
    return small;
}

bool hyocr_document_page_size(hyocr_document *doc, int page, double *width, double *height, GError **error)
{
    if (!check_page(doc, page, error)) return false;
    if (doc->reader->page_size) {
        hyocr_decode_status st = status_for(doc);
        g_mutex_lock(&doc->lock);
        bool ok = doc->reader->page_size(doc->state, page, width, height, &st);
        g_mutex_unlock(&doc->lock);
        if (!ok) set_page_error(doc, page, st.code, st.msg, error);
        return ok;
    }
    g_autoptr(hyocr_image) img = hyocr_document_render(doc, page, NULL, error);
    if (!img) return false;
    *width = img->width;
    *height = img->height;
    return true;
}

bool hyocr_document_draw(hyocr_document *doc, int page, struct _cairo *cr, GError **error)
{
    if (!check_page(doc, page, error)) return false;
    if (!doc->reader->draw) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s: not a vector document (a PDF); only its pages as images can be drawn"), doc->name);
        return false;
    }
    hyocr_decode_status st = status_for(doc);
    g_mutex_lock(&doc->lock);
    bool ok = doc->reader->draw(doc->state, page, cr, &st);
    g_mutex_unlock(&doc->lock);
    if (!ok) set_page_error(doc, page, st.code, st.msg, error);
    return ok;
}

bool hyocr_document_render_size(hyocr_document *doc, int page, const hyocr_render_options *ro, int *width,
                                int *height, GError **error)
{
    static const hyocr_render_options defaults = { 0 };
    if (!ro) ro = &defaults;
    double w, h;
    if (!hyocr_document_page_size(doc, page, &w, &h, error)) return false;
#if HYOCR_HAVE_PDF
    if (doc->format == HYOCR_FORMAT_PDF) {
        hyocr_pdf_render_size(w, h, ro, width, height);
        return true;
    }
#endif
    hyocr_image_fit_size((int)w, (int)h, ro->max_side, width, height);
    return true;
}

/* ------------------------------------------------------------------------ page selections */

static bool parse_page_number(const char *s, const char *end, int *out)
{
    while (s < end && g_ascii_isspace(*s)) s++;
    while (end > s && g_ascii_isspace(end[-1])) end--;
    if (s == end) return false;
    int64_t v = 0;
    for (const char *p = s; p < end; p++) {
        if (!g_ascii_isdigit(*p)) return false;
        v = v * 10 + (*p - '0');
        if (v > INT_MAX) return false;
    }
    *out = (int)v;
    return v >= 1;
}

static bool selection_fail(const char *spec, GError **error, const char *why)
{
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("pages “%s”: %s"), spec, why);
    return false;
}

/* One comma-separated item: N, N-M, N- or -M, appended to out unless already there. */
static bool add_pages(const char *spec, const char *item, const char *end, int n_pages, GArray *out,
                      guint8 *seen, GError **error)
{
    const char *dash = memchr(item, '-', (size_t)(end - item));
    int first, last;
    bool open_start = false, open_end = false;
    if (dash) {
        const char *p = item;
        while (p < dash && g_ascii_isspace(*p)) p++;
        open_start = p == dash;
        p = dash + 1;
        while (p < end && g_ascii_isspace(*p)) p++;
        open_end = p == end;
    }
    if ((dash && open_start && open_end) || (!dash && !parse_page_number(item, end, &first)) ||
        (dash && !open_start && !parse_page_number(item, dash, &first)) ||
        (dash && !open_end && !parse_page_number(dash + 1, end, &last))) {
        g_autofree char *bad = g_strstrip(g_strndup(item, (size_t)(end - item)));
        g_autofree char *why = g_strdup_printf(_("“%s” is not a page number or a range like 1-3"), bad);
        return selection_fail(spec, error, why);
    }
    if (!dash) last = first;
    if (open_start) first = 1;
    if (open_end) last = n_pages;
    if (first > last) {
        g_autofree char *why = g_strdup_printf(_("the range %d-%d runs backwards"), first, last);
        return selection_fail(spec, error, why);
    }
    if (last > n_pages) {
        g_autofree char *why = g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "page %d is past the end of the document (%d page)",
                                                        "page %d is past the end of the document (%d pages)",
                                                        n_pages),
                                               last, n_pages);
        return selection_fail(spec, error, why);
    }
    for (int p = first - 1; p < last; p++) {
        if (seen[p]) continue;
        seen[p] = 1;
        g_array_append_val(out, p);
    }
    return true;
}

GArray *hyocr_page_selection_parse(const char *spec, int n_pages, GError **error)
{
    g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(int));
    if (!spec || n_pages < 1) {
        selection_fail(spec ? spec : "", error, _("the document has no pages"));
        return NULL;
    }
    g_autofree char *trimmed = g_strstrip(g_strdup(spec));
    if (!g_ascii_strcasecmp(trimmed, "all")) {
        for (int p = 0; p < n_pages; p++) g_array_append_val(out, p);
        return g_steal_pointer(&out);
    }
    g_autofree guint8 *seen = g_malloc0((size_t)n_pages);
    const char *item = spec;
    for (;;) {
        const char *end = strchr(item, ',');
        if (!end) end = item + strlen(item);
        if (!add_pages(spec, item, end, n_pages, out, seen, error)) return NULL;
        if (!*end) break;
        item = end + 1;
    }
    return g_steal_pointer(&out);
}
