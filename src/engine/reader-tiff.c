/* hyocr — TIFF through libtiff: one page per directory (IFD), every photometric and codec
 * libtiff's RGBA interface knows (1-bit CCITT fax, LZW, Deflate, JPEG, PackBits; 8- and
 * 16-bit gray, palette, RGB, CMYK, YCbCr), the orientation tag applied like EXIF's.
 *
 * libtiff reads straight from the mapped file (no copy) and reports through per-handle
 * handlers (libtiff ≥ 4.5), so the first error of a call becomes the page's message. It finds
 * looping IFD chains and offsets past the end itself; we only make sure each is an error.
 * The pixel limit is checked on the directory's width and length before any pixel memory. */
#include "error.h"
#include "i18n.h"
#include "reader.h"

#include <string.h>
#include <tiffio.h>

/* libtiff's largest single allocation (strip buffers, tag arrays): far above any real strip,
 * far below what a lying StripByteCounts could ask for. */
#define TIFF_MAX_ALLOC ((tmsize_t)256 << 20)
/* Rows decoded at a time: whole strips or tiles, at least this much of the image. */
#define TIFF_BAND_BYTES ((size_t)64 << 20)

typedef struct {
    const uint8_t *data;
    size_t         len;
    toff_t         pos;
    TIFF          *tif;
    bool           upright_as_stored;   /* ignore_exif: the orientation tag is ignored too */
    char           err[400];   /* libtiff's first error since the last clear */
} tiff_state;

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t n)
{
    tiff_state *s = (tiff_state *)h;
    if (n <= 0 || s->pos >= s->len) return 0;
    size_t k = MIN((size_t)n, s->len - (size_t)s->pos);
    memcpy(buf, s->data + s->pos, k);
    s->pos += k;
    return (tmsize_t)k;
}

static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t n) { return 0; }

static toff_t mem_seek(thandle_t h, toff_t off, int whence)
{
    tiff_state *s = (tiff_state *)h;
    uint64_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->len : 0;
    /* libtiff seeks past the end and then finds the read short; a wrap-around is refused. */
    if (off > UINT64_MAX - base) return (toff_t)-1;
    s->pos = base + off;
    return s->pos;
}

static int mem_close(thandle_t h) { return 0; }
static toff_t mem_size(thandle_t h) { return ((tiff_state *)h)->len; }

static int mem_map(thandle_t h, void **base, toff_t *size)
{
    tiff_state *s = (tiff_state *)h;
    *base = (void *)s->data;
    *size = s->len;
    return 1;
}

static void mem_unmap(thandle_t h, void *base, toff_t size) {}

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    tiff_state *s = user;
    if (!s->err[0]) g_vsnprintf(s->err, sizeof s->err, fmt, ap);
    return 1;
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    return 1;   /* unknown tags, odd but harmless fields: the pixels are what matter */
}

static void fail(tiff_state *s, hyocr_decode_status *st, const char *what)
{
    if (s->err[0]) hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("invalid TIFF: %s (libtiff: %s)"), what, s->err);
    else hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("invalid TIFF: %s"), what);
}

static void tiff_close(void *state)
{
    tiff_state *s = state;
    if (s->tif) TIFFClose(s->tif);
    g_free(s);
}

/* Every directory must be reachable: a chain that loops or leaves the file is an error here,
 * not a document that silently ends early. libtiff stops counting at a loop without a word,
 * so the last directory it counted must also be the last of the chain. */
static bool count_pages(tiff_state *s, int *n_pages, hyocr_decode_status *st)
{
    tdir_t n = TIFFNumberOfDirectories(s->tif);
    if (s->err[0] || n < 1) {
        fail(s, st, _("its chain of directories (pages) is broken"));
        return false;
    }
    if (!TIFFSetDirectory(s->tif, n - 1) || s->err[0]) {
        fail(s, st, _("its chain of directories (pages) is broken"));
        return false;
    }
    if (!TIFFLastDirectory(s->tif)) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("invalid TIFF: its chain of directories (pages) loops back "
                          "after page %u"), (unsigned)n);
        return false;
    }
    *n_pages = (int)MIN(n, (tdir_t)INT_MAX);
    return true;
}

static void *tiff_open(GBytes *bytes, const uint8_t *data, size_t len, const hyocr_document_options *opts,
                       int *n_pages, hyocr_decode_status *st)
{
    tiff_state *s = g_new0(tiff_state, 1);
    s->data = data;
    s->len = len;
    s->upright_as_stored = opts->ignore_exif;
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetMaxSingleMemAlloc(o, TIFF_MAX_ALLOC);
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, s);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, s);
    s->tif = TIFFClientOpenExt("TIFF", "r", (thandle_t)s, mem_read, mem_write, mem_seek, mem_close, mem_size,
                               mem_map, mem_unmap, o);
    TIFFOpenOptionsFree(o);
    if (!s->tif) {
        fail(s, st, _("cannot read its header or first directory"));
        tiff_close(s);
        return NULL;
    }
    if (!count_pages(s, n_pages, st)) {
        tiff_close(s);
        return NULL;
    }
    return s;
}

static bool select_page(tiff_state *s, int page, hyocr_decode_status *st)
{
    s->err[0] = 0;
    if (TIFFSetDirectory(s->tif, (tdir_t)page) && !s->err[0]) return true;
    fail(s, st, _("cannot read the page's directory"));
    return false;
}

/* Decodes in bands of whole strips or tiles (libtiff decodes any strip it touches entirely). */
static int band_rows(TIFF *tif, uint32_t w, uint32_t h)
{
    uint32_t unit = 0;
    if (TIFFIsTiled(tif)) TIFFGetField(tif, TIFFTAG_TILELENGTH, &unit);
    else TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &unit);
    uint64_t rows = TIFF_BAND_BYTES / ((uint64_t)w * 4);
    if (unit > 0 && rows > unit) rows -= rows % unit;
    rows = MAX(rows, MAX(unit, 1));
    return (int)MIN(rows, (uint64_t)h);
}

/* libtiff packs A B G R (TIFFGetR = low byte); alpha is dropped as by Pillow's convert("RGB"). */
static void abgr_to_rgb(uint8_t *dst, const uint32_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[3 * i + 0] = (uint8_t)TIFFGetR(src[i]);
        dst[3 * i + 1] = (uint8_t)TIFFGetG(src[i]);
        dst[3 * i + 2] = (uint8_t)TIFFGetB(src[i]);
    }
}

static bool decode_rows(tiff_state *s, TIFFRGBAImage *ri, hyocr_image *img, hyocr_decode_status *st)
{
    uint32_t w = (uint32_t)img->width, h = (uint32_t)img->height;
    int band = band_rows(s->tif, w, h);
    uint32_t *raster = g_try_malloc((size_t)w * band * 4);
    if (!raster) {
        hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a %d×%d image"), img->width,
                          img->height);
        return false;
    }
    bool ok = true;
    for (uint32_t y = 0; ok && y < h; y += (uint32_t)band) {
        uint32_t n = MIN((uint32_t)band, h - y);
        ri->row_offset = (int)y;
        ri->col_offset = 0;
        ok = TIFFRGBAImageGet(ri, raster, w, n) && !s->err[0];
        if (ok) abgr_to_rgb(img->rgb + (size_t)y * w * 3, raster, (size_t)w * n);
    }
    g_free(raster);
    if (!ok) fail(s, st, _("its image data is damaged or truncated"));
    return ok;
}

/* Selects the page and reads its size, as stored, and orientation tag; false (st set) when the
 * page is missing or its size is out of bounds. */
static bool page_geometry(tiff_state *s, int page, uint32_t *w, uint32_t *h, uint16_t *orient,
                          hyocr_decode_status *st)
{
    if (!select_page(s, page, st)) return false;
    *w = *h = 0;
    *orient = ORIENTATION_TOPLEFT;
    TIFFGetField(s->tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFGetField(s->tif, TIFFTAG_IMAGELENGTH, h);
    TIFFGetFieldDefaulted(s->tif, TIFFTAG_ORIENTATION, orient);
    return hyocr_decode_check_size(st, "TIFF", *w, *h);
}

static hyocr_image *tiff_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                                hyocr_decode_status *st)
{
    tiff_state *s = state;
    uint32_t w, h;
    uint16_t orient;
    if (!page_geometry(s, page, &w, &h, &orient, st)) return NULL;
    char emsg[1024] = "";
    if (!TIFFRGBAImageOK(s->tif, emsg)) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("unsupported TIFF: %s"), emsg);
        return NULL;
    }
    TIFFRGBAImage ri;
    if (!TIFFRGBAImageBegin(&ri, s->tif, 1, emsg)) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("unsupported TIFF: %s"), emsg);
        return NULL;
    }
    /* Rows as stored, top first: the orientation is applied afterwards like EXIF's, so all eight
     * values work (libtiff's own handling only flips). */
    ri.req_orientation = ORIENTATION_TOPLEFT;
    ri.orientation = ORIENTATION_TOPLEFT;
    hyocr_image *img = hyocr_image_new((int)w, (int)h);
    if (!img) hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a %d×%d image"), (int)w, (int)h);
    bool ok = img && decode_rows(s, &ri, img, st);
    TIFFRGBAImageEnd(&ri);
    if (!ok) {
        hyocr_image_free(img);
        return NULL;
    }
    *orientation = orient >= 1 && orient <= 8 ? orient : 0;
    return img;
}

static bool tiff_page_size(void *state, int page, double *width, double *height, hyocr_decode_status *st)
{
    tiff_state *s = state;
    uint32_t w, h;
    uint16_t orient;
    if (!page_geometry(s, page, &w, &h, &orient, st)) return false;
    bool swap = !s->upright_as_stored && orient >= 5 && orient <= 8;
    *width = swap ? h : w;
    *height = swap ? w : h;
    return true;
}

const hyocr_reader hyocr_reader_tiff = {
    .format = HYOCR_FORMAT_TIFF, .open = tiff_open, .close = tiff_close, .render = tiff_render,
    .page_size = tiff_page_size,
};
