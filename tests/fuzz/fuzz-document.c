/* hyocr fuzzing: reading a document the way a job and an export do (fuzz-document.h). */
#include "fuzz.h"
#include "fuzz-document.h"
#include "document.h"
#include "error.h"

#include <string.h>

/* Enough pages to walk a TIFF's directory chain or a PDF's page tree past its first entry. */
#define PAGES 3

static void read_page(hyocr_document *doc, int page, int max_side)
{
    double w = 0, h = 0;
    g_autoptr(GError) serr = NULL;
    if (hyocr_document_page_size(doc, page, &w, &h, &serr))
        fuzz_require(w > 0 && h > 0, "page %d: a %g × %g page", page, w, h);
    else
        fuzz_require(serr && g_str_has_prefix(serr->message, "in"), "page %d: size fails without a message", page);
    /* a PDF page at most 256 Ki pixels: the budget, not the page, bounds the work */
    hyocr_render_options ro = { .max_pixels = 256 << 10, .max_side = max_side };
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_image) img = hyocr_document_render(doc, page, &ro, &err);
    fuzz_require(!img == !!err, "page %d: an image and an error, or neither", page);
    if (err) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR && g_str_has_prefix(err->message, "in"), "message: %s", err->message);
        return;
    }
    fuzz_require(img->width >= 1 && img->height >= 1, "%d×%d page", img->width, img->height);
    fuzz_require(!max_side || (img->width <= max_side && img->height <= max_side), "max_side ignored: %d×%d",
                 img->width, img->height);
    if (hyocr_document_format(doc) == HYOCR_FORMAT_PDF) {
        fuzz_require((int64_t)img->width * img->height <= ro.max_pixels, "budget ignored: %d×%d", img->width,
                     img->height);
        int rw, rh;
        fuzz_require(hyocr_document_render_size(doc, page, &ro, &rw, &rh, NULL) && rw == img->width &&
                     rh == img->height, "render_size %d×%d, render %d×%d", rw, rh, img->width, img->height);
    }
    unsigned sum = 0;   /* every pixel is readable */
    for (size_t i = 0; i < (size_t)img->width * img->height * 3; i++) sum += img->rgb[i];
    (void)sum;
}

void fuzz_document(const uint8_t *in, size_t size, const fuzz_magic *magic, int n_magic)
{
    /* exactly size bytes, so a read past the end is a sanitizer finding */
    g_autofree uint8_t *data = g_malloc(MAX(size, 1));
    if (size) memcpy(data, in, size);
    for (int i = 0; i < n_magic; i++)
        if (magic[i].at < size) memcpy(data + magic[i].at, magic[i].bytes, MIN(size - magic[i].at, magic[i].len));
    g_autoptr(GBytes) bytes = g_bytes_new_static(data, size);
    hyocr_document_options o = { .max_decode_pixels = 16 << 20, .password = "fuzz" };
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_document) doc = hyocr_document_open_bytes(bytes, "in", &o, &err);
    fuzz_require(!doc == !!err, "a document and an error, or neither");
    if (!doc) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR && g_str_has_prefix(err->message, "in: "), "message: %s",
                     err->message);
        return;
    }
    int n = hyocr_document_n_pages(doc);
    fuzz_require(n >= 1, "%d pages", n);
    int max_side = size && (data[size - 1] & 1) ? 64 : 0;
    for (int p = 0; p < MIN(n, PAGES); p++) read_page(doc, p, max_side);
    if (n > PAGES) read_page(doc, n - 1, max_side);   /* the last page: the end of the chain */
    g_autoptr(GError) past = NULL;
    g_autoptr(hyocr_image) none = hyocr_document_render(doc, n, NULL, &past);
    fuzz_require(!none && past, "a page past the end rendered");
}
