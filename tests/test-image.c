/* Image decoding, orientation, Pillow-exact resampling, smart_resize and pixel_values. */
#include "image.h"
#include "hostmem.h"
#include "resize.h"
#include "pinned.h"
#include "config.h"
#include "error.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jpeglib.h>
#include <png.h>
#include <stdlib.h>
#include <sys/resource.h>

/* ------------------------------------------------------------------------ writers */

typedef struct {
    int            color_type, bit_depth, interlace;
    const uint8_t *palette;       /* rgb triples */
    int            n_palette;
    const uint8_t *trns;
    int            n_trns;
    const uint8_t *exif;          /* eXIf payload (bare TIFF) */
    size_t         exif_len;
    bool           exif_after_idat;
} png_spec;

/* rows: packed samples as libpng wants them (big-endian 16-bit, bits packed msb first). */
static void write_png(const char *path, int w, int h, const png_spec *s, const uint8_t *rows, size_t stride)
{
    FILE *f = fopen(path, "wb");
    g_assert_nonnull(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    g_assert_nonnull(info);
    if (setjmp(png_jmpbuf(png)))
        g_error("libpng failed writing %s", path);
    png_init_io(png, f);
    png_set_benign_errors(png, 1);   /* the palette test writes indices past the palette on purpose */
    png_set_IHDR(png, info, w, h, s->bit_depth, s->color_type,
                 s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (s->palette) {
        png_color pal[256];
        for (int i = 0; i < s->n_palette; i++)
            pal[i] = (png_color){ s->palette[3 * i], s->palette[3 * i + 1], s->palette[3 * i + 2] };
        png_set_PLTE(png, info, pal, s->n_palette);
    }
    if (s->trns)
        png_set_tRNS(png, info, s->trns, s->n_trns, NULL);
    if (s->exif && !s->exif_after_idat)
        png_set_eXIf_1(png, info, (png_uint_32)s->exif_len, (png_bytep)s->exif);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++)
            png_write_row(png, rows + (size_t)y * stride);
    if (s->exif && s->exif_after_idat)
        png_set_eXIf_1(png, info, (png_uint_32)s->exif_len, (png_bytep)s->exif);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

typedef struct {
    int            components;    /* 1, 3 or 4 */
    J_COLOR_SPACE  in_space, jpeg_space;
    bool           progressive;
    int            quality;
    const uint8_t *app1;          /* full APP1 payload ("Exif\0\0" + TIFF) */
    size_t         app1_len;
} jpeg_spec;

static void write_jpeg(const char *path, int w, int h, const jpeg_spec *s, const uint8_t *pix)
{
    FILE *f = fopen(path, "wb");
    g_assert_nonnull(f);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = w;
    c.image_height = h;
    c.input_components = s->components;
    c.in_color_space = s->in_space;
    jpeg_set_defaults(&c);
    if (s->jpeg_space != JCS_UNKNOWN)
        jpeg_set_colorspace(&c, s->jpeg_space);
    jpeg_set_quality(&c, s->quality, TRUE);
    if (s->progressive)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    if (s->app1)
        jpeg_write_marker(&c, JPEG_APP0 + 1, s->app1, (unsigned)s->app1_len);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pix + (size_t)c.next_scanline * w * s->components);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
}

/* ------------------------------------------------------------------------ helpers */

typedef struct {
    char *dir;
} Fixture;

static void fx_setup(Fixture *fx, gconstpointer data) { fx->dir = hyocr_test_tmpdir(); }
static void fx_teardown(Fixture *fx, gconstpointer data)
{
    hyocr_test_rmdir(fx->dir);
    g_free(fx->dir);
}

static char *tmp_path(Fixture *fx, const char *name) { return g_build_filename(fx->dir, name, NULL); }

static hyocr_image *load_ok(const char *path, const hyocr_image_options *o)
{
    g_autoptr(GError) err = NULL;
    hyocr_image *img = hyocr_image_load(path, o, &err);
    g_assert_no_error(err);
    g_assert_nonnull(img);
    return img;
}

static void expect_load_error(const char *path, int code, const char *fragment)
{
    g_autoptr(GError) err = NULL;
    hyocr_image *img = hyocr_image_load(path, NULL, &err);
    g_assert_null(img);
    g_assert_error(err, HYOCR_ERROR, code);
    if (!strstr(err->message, path))
        g_error("message does not name %s: %s", path, err->message);
    if (fragment && !strstr(err->message, fragment))
        g_error("message lacks '%s': %s", fragment, err->message);
}

static const uint8_t *px(const hyocr_image *img, int x, int y)
{
    return img->rgb + ((size_t)y * img->width + x) * 3;
}

static void assert_rgb(const hyocr_image *img, int x, int y, int r, int g, int b)
{
    const uint8_t *p = px(img, x, y);
    if (p[0] != r || p[1] != g || p[2] != b)
        g_error("pixel (%d,%d) = %d,%d,%d, expected %d,%d,%d", x, y, p[0], p[1], p[2], r, g, b);
}

static uint8_t pattern(int x, int y, int c) { return (uint8_t)((x * 37 + y * 91 + c * 53 + x * y * 11) % 256); }

static hyocr_image *pattern_image(int w, int h)
{
    hyocr_image *img = hyocr_image_new(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                img->rgb[((size_t)y * w + x) * 3 + c] = pattern(x, y, c);
    return img;
}

/* Smooth picture for lossy round trips. */
static uint8_t smooth(int x, int y, int c, int w, int h)
{
    double v = c == 0 ? 255.0 * x / (w - 1) : c == 1 ? 255.0 * y / (h - 1) : 128 + 100 * sin((x + y) / 9.0);
    return (uint8_t)lround(v);
}

static void file_bytes(const char *path, uint8_t **data, size_t *len)
{
    g_autoptr(GError) err = NULL;
    g_assert_true(g_file_get_contents(path, (char **)data, len, &err));
}

static void put_bytes(const char *path, const void *data, size_t len)
{
    g_autoptr(GError) err = NULL;
    g_assert_true(g_file_set_contents(path, data, (gssize)len, &err));
}

/* ------------------------------------------------------------------------ PNG decoding */

static void test_png_rgb_rgba(Fixture *fx, gconstpointer data)
{
    int w = 13, h = 7;
    g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3), *rgba = g_malloc((size_t)w * h * 4);
    for (int i = 0; i < w * h; i++) {
        for (int c = 0; c < 3; c++)
            rgb[3 * i + c] = rgba[4 * i + c] = pattern(i % w, i / w, c);
        rgba[4 * i + 3] = (uint8_t)(i * 29);   /* includes fully transparent pixels */
    }
    g_autofree char *p1 = tmp_path(fx, "rgb.png"), *p2 = tmp_path(fx, "rgba.png");
    write_png(p1, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 8 }, rgb, (size_t)w * 3);
    write_png(p2, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGBA, .bit_depth = 8 }, rgba, (size_t)w * 4);
    g_autoptr(hyocr_image) a = load_ok(p1, NULL);
    g_autoptr(hyocr_image) b = load_ok(p2, NULL);
    g_assert_cmpint(a->width, ==, w);
    g_assert_cmpint(a->height, ==, h);
    g_assert_cmpmem(a->rgb, (size_t)w * h * 3, rgb, (size_t)w * h * 3);
    /* Pillow's RGBA→RGB drops alpha: colour of transparent pixels survives, no white matte. */
    g_assert_cmpmem(b->rgb, (size_t)w * h * 3, rgb, (size_t)w * h * 3);
}

static void test_png_gray(Fixture *fx, gconstpointer data)
{
    int w = 11, h = 5;
    for (int depth = 1; depth <= 8; depth *= 2) {
        int maxv = (1 << depth) - 1;
        size_t stride = ((size_t)w * depth + 7) / 8;
        g_autofree uint8_t *rows = g_malloc0(stride * h);
        g_autofree int *vals = g_new(int, w * h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = (x * 3 + y * 5) % (maxv + 1);
                vals[y * w + x] = v;
                int bit = x * depth;
                rows[y * stride + bit / 8] |= (uint8_t)(v << (8 - depth - bit % 8));
            }
        g_autofree char *name = g_strdup_printf("gray%d.png", depth);
        g_autofree char *p = tmp_path(fx, name);
        write_png(p, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_GRAY, .bit_depth = depth }, rows, stride);
        g_autoptr(hyocr_image) img = load_ok(p, NULL);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int e = vals[y * w + x] * 255 / maxv;   /* Pillow scales "1", "L;2", "L;4" to 0..255 */
                assert_rgb(img, x, y, e, e, e);
            }
    }
}

static void test_png_gray_alpha_and_16bit(Fixture *fx, gconstpointer data)
{
    int w = 9, h = 4;
    g_autofree uint8_t *la = g_malloc((size_t)w * h * 2);
    g_autofree uint8_t *g16 = g_malloc((size_t)w * h * 2), *rgb16 = g_malloc((size_t)w * h * 6);
    g_autofree uint8_t *rgba16 = g_malloc((size_t)w * h * 8);
    for (int i = 0; i < w * h; i++) {
        la[2 * i] = (uint8_t)(i * 7);
        la[2 * i + 1] = (uint8_t)(255 - i);
        g16[2 * i] = (uint8_t)(i * 7);            /* big-endian: high byte first */
        g16[2 * i + 1] = 0xFF;                     /* low byte must not round the value up */
        for (int c = 0; c < 4; c++) {
            uint8_t hi = pattern(i % w, i / w, c), lo = (uint8_t)(i * 13 + c);
            if (c < 3) {
                rgb16[6 * i + 2 * c] = hi;
                rgb16[6 * i + 2 * c + 1] = lo;
            }
            rgba16[8 * i + 2 * c] = hi;
            rgba16[8 * i + 2 * c + 1] = lo;
        }
    }
    g_autofree char *p1 = tmp_path(fx, "la.png"), *p2 = tmp_path(fx, "g16.png");
    g_autofree char *p3 = tmp_path(fx, "rgb16.png"), *p4 = tmp_path(fx, "rgba16.png");
    write_png(p1, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_GRAY_ALPHA, .bit_depth = 8 }, la, (size_t)w * 2);
    write_png(p2, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_GRAY, .bit_depth = 16 }, g16, (size_t)w * 2);
    write_png(p3, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 16 }, rgb16, (size_t)w * 6);
    write_png(p4, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGBA, .bit_depth = 16 }, rgba16, (size_t)w * 8);
    g_autoptr(hyocr_image) a = load_ok(p1, NULL), b = load_ok(p2, NULL), c = load_ok(p3, NULL), d = load_ok(p4, NULL);
    for (int i = 0; i < w * h; i++) {
        int x = i % w, y = i / w, v = (uint8_t)(i * 7);
        assert_rgb(a, x, y, v, v, v);
        assert_rgb(b, x, y, v, v, v);
        assert_rgb(c, x, y, pattern(x, y, 0), pattern(x, y, 1), pattern(x, y, 2));
        assert_rgb(d, x, y, pattern(x, y, 0), pattern(x, y, 1), pattern(x, y, 2));
    }
}

static void test_png_palette(Fixture *fx, gconstpointer data)
{
    static const uint8_t pal[] = { 10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 220, 1, 2, 3 };
    static const uint8_t trns[] = { 0, 128, 255 };
    int w = 8, h = 3;
    for (int depth = 4; depth <= 8; depth += 4) {
        size_t stride = (size_t)(w * depth + 7) / 8;
        g_autofree uint8_t *rows = g_malloc0(stride * h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int idx = (x + y * w) % 7;   /* 5 and 6 lie beyond the 5-entry palette */
                if (depth == 8) rows[y * stride + x] = (uint8_t)idx;
                else rows[y * stride + x / 2] |= (uint8_t)(idx << (x % 2 ? 0 : 4));
            }
        g_autofree char *name = g_strdup_printf("pal%d.png", depth);
        g_autofree char *p = tmp_path(fx, name);
        write_png(p, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_PALETTE, .bit_depth = depth, .palette = pal,
                                        .n_palette = 5, .trns = trns, .n_trns = 3 }, rows, stride);
        g_autoptr(hyocr_image) img = load_ok(p, NULL);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int idx = (x + y * w) % 7;
                /* tRNS alpha dropped; entries past the palette are black (Pillow ≥ 10.1's empty palette) */
                if (idx < 5) assert_rgb(img, x, y, pal[3 * idx], pal[3 * idx + 1], pal[3 * idx + 2]);
                else assert_rgb(img, x, y, 0, 0, 0);
            }
    }
}

static void test_png_interlaced(Fixture *fx, gconstpointer data)
{
    static const int sizes[][2] = { { 1, 1 }, { 2, 1 }, { 1, 9 }, { 5, 3 }, { 17, 11 }, { 33, 20 } };
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
        int w = sizes[s][0], h = sizes[s][1];
        g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3), *gray = g_malloc((size_t)w * h);
        for (int i = 0; i < w * h; i++) {
            for (int c = 0; c < 3; c++)
                rgb[3 * i + c] = pattern(i % w, i / w, c);
            gray[i] = pattern(i % w, i / w, 1);
        }
        g_autofree char *p1 = tmp_path(fx, "i-rgb.png"), *p2 = tmp_path(fx, "i-gray.png");
        write_png(p1, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 8, .interlace = 1 }, rgb, (size_t)w * 3);
        write_png(p2, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_GRAY, .bit_depth = 8, .interlace = 1 }, gray, (size_t)w);
        g_autoptr(hyocr_image) a = load_ok(p1, NULL), b = load_ok(p2, NULL);
        g_assert_cmpmem(a->rgb, (size_t)w * h * 3, rgb, (size_t)w * h * 3);
        for (int i = 0; i < w * h; i++)
            assert_rgb(b, i % w, i / w, gray[i], gray[i], gray[i]);
    }
}

/* ------------------------------------------------------------------------ JPEG decoding */

static void assert_close(const hyocr_image *img, const uint8_t *ref, int ref_comps, double max_mean, int max_abs)
{
    double sum = 0;
    int worst = 0;
    size_t n = (size_t)img->width * img->height;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            int d = abs(img->rgb[3 * i + c] - ref[i * ref_comps + (ref_comps == 1 ? 0 : c)]);
            sum += d;
            worst = MAX(worst, d);
        }
    double mean = sum / (n * 3);
    if (mean > max_mean || worst > max_abs)
        g_error("JPEG decode off: mean |Δ| %.3f (limit %.3f), max %d (limit %d)", mean, max_mean, worst, max_abs);
}

static void test_jpeg_baseline_progressive(Fixture *fx, gconstpointer data)
{
    int w = 67, h = 45;
    g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                rgb[((size_t)y * w + x) * 3 + c] = smooth(x, y, c, w, h);
    g_autofree char *p1 = tmp_path(fx, "base.jpg"), *p2 = tmp_path(fx, "prog.jpg");
    write_jpeg(p1, w, h, &(jpeg_spec){ 3, JCS_RGB, JCS_UNKNOWN, false, 95 }, rgb);
    write_jpeg(p2, w, h, &(jpeg_spec){ 3, JCS_RGB, JCS_UNKNOWN, true, 95 }, rgb);
    g_autoptr(hyocr_image) a = load_ok(p1, NULL), b = load_ok(p2, NULL);
    g_assert_cmpint(a->width, ==, w);
    g_assert_cmpint(a->height, ==, h);
    assert_close(a, rgb, 3, 2.0, 40);
    /* A progressive file carries the same quantised coefficients, so the full decode (no block
     * smoothing once every scan is in) is identical. */
    g_assert_cmpmem(a->rgb, (size_t)w * h * 3, b->rgb, (size_t)b->width * b->height * 3);
}

static void test_jpeg_gray(Fixture *fx, gconstpointer data)
{
    int w = 40, h = 24;
    g_autofree uint8_t *g = g_malloc((size_t)w * h);
    for (int i = 0; i < w * h; i++)
        g[i] = smooth(i % w, i / w, 0, w, h);
    g_autofree char *p = tmp_path(fx, "gray.jpg");
    write_jpeg(p, w, h, &(jpeg_spec){ 1, JCS_GRAYSCALE, JCS_UNKNOWN, false, 95 }, g);
    g_autoptr(hyocr_image) img = load_ok(p, NULL);
    for (int i = 0; i < w * h; i++)
        g_assert_true(img->rgb[3 * i] == img->rgb[3 * i + 1] && img->rgb[3 * i] == img->rgb[3 * i + 2]);
    assert_close(img, g, 1, 1.5, 12);
}

/* Pillow treats 4-component JPEGs as Adobe-inverted CMYK; convert("RGB") gives about
 * K·C/255 per channel for stored samples (C, K). */
static void test_jpeg_cmyk_ycck(Fixture *fx, gconstpointer data)
{
    int w = 32, h = 16;
    g_autofree uint8_t *cmyk = g_malloc((size_t)w * h * 4), *expect = g_malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = cmyk + ((size_t)y * w + x) * 4, *e = expect + ((size_t)y * w + x) * 3;
            p[3] = x < w / 2 ? 255 : 160;
            for (int c = 0; c < 3; c++) {
                p[c] = smooth(x, y, c, w, h);
                e[c] = (uint8_t)lround(p[c] * p[3] / 255.0);
            }
        }
    g_autofree char *p1 = tmp_path(fx, "cmyk.jpg"), *p2 = tmp_path(fx, "ycck.jpg");
    write_jpeg(p1, w, h, &(jpeg_spec){ 4, JCS_CMYK, JCS_UNKNOWN, false, 97 }, cmyk);
    write_jpeg(p2, w, h, &(jpeg_spec){ 4, JCS_CMYK, JCS_YCCK, false, 97 }, cmyk);
    g_autoptr(hyocr_image) a = load_ok(p1, NULL), b = load_ok(p2, NULL);
    assert_close(a, expect, 3, 2.0, 24);
    assert_close(b, expect, 3, 2.0, 24);
}

/* ------------------------------------------------------------------------ EXIF */

/* APP1 payload with one IFD0 entry: Orientation (SHORT, or LONG when `as_long`). */
static size_t make_exif(uint8_t *out, bool big_endian, int orientation, bool as_long, bool with_header)
{
    uint8_t *p = out;
    if (with_header) {
        memcpy(p, "Exif\0\0", 6);
        p += 6;
    }
    uint8_t *t = p;
    memcpy(t, big_endian ? "MM\0*" : "II*\0", 4);
#define U16(at, v) do { if (big_endian) { (at)[0] = (uint8_t)((v) >> 8); (at)[1] = (uint8_t)(v); } \
                        else { (at)[0] = (uint8_t)(v); (at)[1] = (uint8_t)((v) >> 8); } } while (0)
#define U32(at, v) do { if (big_endian) { U16(at, (v) >> 16); U16((at) + 2, (v) & 0xFFFF); } \
                        else { U16(at, (v) & 0xFFFF); U16((at) + 2, (v) >> 16); } } while (0)
    U32(t + 4, 8u);
    U16(t + 8, 2);                                        /* two entries: an unrelated tag first */
    U16(t + 10, 0x010F); U16(t + 12, 2); U32(t + 14, 4u); memcpy(t + 18, "Cam", 4);
    U16(t + 22, 0x0112); U16(t + 24, as_long ? 4 : 3); U32(t + 26, 1u);
    memset(t + 30, 0, 4);
    if (as_long) U32(t + 30, (uint32_t)orientation);
    else U16(t + 30, orientation);
    U32(t + 34, 0u);
#undef U16
#undef U32
    return (size_t)(t + 38 - out);
}

static void test_exif_parse(void)
{
    uint8_t buf[64];
    for (int o = 1; o <= 8; o++)
        for (int be = 0; be < 2; be++)
            for (int hdr = 0; hdr < 2; hdr++) {
                size_t n = make_exif(buf, be, o, false, hdr);
                g_assert_cmpint(hyocr_exif_orientation(buf, n), ==, o);
                n = make_exif(buf, be, o, true, hdr);
                g_assert_cmpint(hyocr_exif_orientation(buf, n), ==, o);
            }
    size_t n = make_exif(buf, false, 6, false, true);
    g_assert_cmpint(hyocr_exif_orientation(buf, n - 10), ==, 0);   /* entry cut off */
    g_assert_cmpint(hyocr_exif_orientation(buf, 9), ==, 0);
    g_assert_cmpint(hyocr_exif_orientation(NULL, 0), ==, 0);
    n = make_exif(buf, false, 9, false, true);
    g_assert_cmpint(hyocr_exif_orientation(buf, n), ==, 0);         /* out of range */
    n = make_exif(buf, false, 6, false, true);
    buf[6 + 4] = 0xF0;                                               /* IFD offset past the end */
    g_assert_cmpint(hyocr_exif_orientation(buf, n), ==, 0);
    memcpy(buf, "Exif\0\0XX", 8);
    g_assert_cmpint(hyocr_exif_orientation(buf, n), ==, 0);
}

/* Independent orientation model: compositions of transpose and mirrors. */
static hyocr_image *ref_transform(const hyocr_image *s, bool transpose, bool flip_h, bool flip_v)
{
    int w = transpose ? s->height : s->width, h = transpose ? s->width : s->height;
    hyocr_image *o = hyocr_image_new(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int tx = flip_h ? w - 1 - x : x, ty = flip_v ? h - 1 - y : y;   /* position in T */
            int sx = transpose ? ty : tx, sy = transpose ? tx : ty;
            memcpy(o->rgb + ((size_t)y * w + x) * 3, px(s, sx, sy), 3);
        }
    return o;
}

static void test_orient_all(void)
{
    static const bool ops[9][3] = {
        { 0, 0, 0 }, { 0, 0, 0 }, { 0, 1, 0 }, { 0, 1, 1 }, { 0, 0, 1 },
        { 1, 0, 0 }, { 1, 1, 0 }, { 1, 1, 1 }, { 1, 0, 1 },
    };
    g_autoptr(hyocr_image) src = pattern_image(5, 3);
    for (int o = 1; o <= 8; o++) {
        g_autoptr(hyocr_image) got = hyocr_image_orient(src, o);
        g_autoptr(hyocr_image) want = ref_transform(src, ops[o][0], ops[o][1], ops[o][2]);
        g_assert_cmpint(got->width, ==, want->width);
        g_assert_cmpint(got->height, ==, want->height);
        g_assert_cmpmem(got->rgb, (size_t)got->width * got->height * 3, want->rgb, (size_t)want->width * want->height * 3);
    }
    /* 6 = 90° clockwise: the top-left of the result is the source's bottom-left. */
    g_autoptr(hyocr_image) r6 = hyocr_image_orient(src, 6);
    g_assert_cmpmem(px(r6, 0, 0), 3, px(src, 0, 2), 3);
}

/* Four flat quadrants, 16-pixel aligned so JPEG keeps them nearly exact. */
static const uint8_t quad_colors[4][3] = { { 230, 20, 20 }, { 20, 230, 20 }, { 20, 20, 230 }, { 230, 230, 20 } };

static void quad_pixels(uint8_t *rgb, int w, int h)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            memcpy(rgb + ((size_t)y * w + x) * 3, quad_colors[(y >= h / 2) * 2 + (x >= w / 2)], 3);
}

/* The quadrant (0 TL, 1 TR, 2 BL, 3 BR of the source) whose colour is at (x, y). */
static int quad_at(const hyocr_image *img, int x, int y)
{
    const uint8_t *p = px(img, x, y);
    for (int q = 0; q < 4; q++)
        if (abs(p[0] - quad_colors[q][0]) < 24 && abs(p[1] - quad_colors[q][1]) < 24 && abs(p[2] - quad_colors[q][2]) < 24)
            return q;
    return -1;
}

static void test_exif_jpeg(Fixture *fx, gconstpointer data)
{
    int w = 64, h = 32;
    g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3);
    quad_pixels(rgb, w, h);
    uint8_t exif[64];
    struct { int orientation; bool be; int w, h, tl, tr; } cases[] = {
        { 6, false, 32, 64, 2, 0 },   /* clockwise: TL ← BL, TR ← TL */
        { 3, true, 64, 32, 3, 2 },    /* 180°: TL ← BR, TR ← BL */
        { 8, true, 32, 64, 1, 3 },    /* counter-clockwise: TL ← TR, TR ← BR */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        size_t n = make_exif(exif, cases[i].be, cases[i].orientation, false, true);
        g_autofree char *p = tmp_path(fx, "exif.jpg");
        write_jpeg(p, w, h, &(jpeg_spec){ 3, JCS_RGB, JCS_UNKNOWN, false, 95, exif, n }, rgb);
        g_autoptr(hyocr_image) img = load_ok(p, NULL);
        g_assert_cmpint(img->width, ==, cases[i].w);
        g_assert_cmpint(img->height, ==, cases[i].h);
        g_assert_cmpint(quad_at(img, 4, 4), ==, cases[i].tl);
        g_assert_cmpint(quad_at(img, img->width - 5, 4), ==, cases[i].tr);
        hyocr_image_options raw = { .ignore_exif = true };
        g_autoptr(hyocr_image) plain = load_ok(p, &raw);
        g_assert_cmpint(plain->width, ==, w);
        g_assert_cmpint(quad_at(plain, 4, 4), ==, 0);
    }
}

static void test_exif_png(Fixture *fx, gconstpointer data)
{
    int w = 6, h = 4;
    g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h; i++)
        for (int c = 0; c < 3; c++)
            rgb[3 * i + c] = pattern(i % w, i / w, c);
    g_autoptr(hyocr_image) src = hyocr_image_new(w, h);
    memcpy(src->rgb, rgb, (size_t)w * h * 3);
    uint8_t exif[64];
    for (int after = 0; after < 2; after++) {
        size_t n = make_exif(exif, after, 8, false, false);   /* eXIf holds a bare TIFF header */
        g_autofree char *p = tmp_path(fx, "exif.png");
        write_png(p, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 8, .exif = exif,
                                        .exif_len = n, .exif_after_idat = after }, rgb, (size_t)w * 3);
        g_autoptr(hyocr_image) img = load_ok(p, NULL);
        g_autoptr(hyocr_image) want = ref_transform(src, true, false, true);
        g_assert_cmpint(img->width, ==, h);
        g_assert_cmpint(img->height, ==, w);
        g_assert_cmpmem(img->rgb, (size_t)w * h * 3, want->rgb, (size_t)w * h * 3);
    }
}

/* ------------------------------------------------------------------------ resampling */

/* Pillow 9.4.0 Image.resize((4, 9), BICUBIC) of pattern() 7×5 */
static const uint8_t pillow_bicubic_7x5_to_4x9[] = {
    7, 59, 113, 67, 126, 198, 149, 220, 215, 216, 116, 42, 38, 98, 154, 115, 144, 157, 129, 165,
    186, 175, 133, 102, 98, 166, 218, 196, 173, 89, 95, 73, 132, 102, 159, 203, 168, 170, 150, 158,
    141, 118, 122, 105, 94, 94, 105, 171, 208, 144, 56, 92, 98, 165, 161, 167, 78, 115, 51, 97, 114,
    116, 104, 139, 122, 103, 132, 115, 117, 139, 141, 101, 46, 113, 157, 169, 145, 57, 105, 82, 144,
    137, 205, 121, 110, 170, 141, 101, 131, 104, 114, 144, 107, 74, 135, 139, 151, 203, 130, 62,
    121, 133, 121, 181, 86, 39, 91, 148
};
/* Pillow 9.4.0 Image.resize((11, 3), BICUBIC) of pattern() 7×5 */
static const uint8_t pillow_bicubic_7x5_to_11x3[] = {
    39, 90, 143, 54, 107, 166, 84, 138, 185, 111, 171, 135, 141, 154, 128, 163, 109, 162, 118, 131,
    197, 101, 165, 180, 134, 193, 99, 165, 130, 117, 182, 75, 147, 124, 188, 81, 157, 140, 117, 185,
    92, 153, 123, 147, 100, 124, 140, 105, 166, 93, 146, 119, 135, 90, 112, 136, 76, 167, 74, 130,
    119, 108, 136, 71, 145, 130, 62, 115, 179, 104, 157, 145, 143, 197, 97, 85, 146, 71, 94, 107,
    99, 150, 96, 149, 139, 152, 99, 100, 160, 90, 49, 102, 151, 89, 142, 136, 131, 184, 114
};
/* Pillow 9.4.0 Image.resize((4, 3), LANCZOS) of pattern() 9×6 */
static const uint8_t pillow_lanczos_9x6_to_4x3[] = {
    93, 130, 151, 135, 143, 157, 135, 137, 133, 111, 101, 109, 134, 141, 117, 135, 121, 100, 114,
    125, 112, 149, 134, 147, 107, 169, 125, 118, 114, 131, 114, 134, 148, 168, 132, 83
};

static void test_resize_pillow_cases(void)
{
    g_autoptr(hyocr_image) a = pattern_image(7, 5), b = pattern_image(9, 6);
    g_autoptr(hyocr_image) r1 = hyocr_image_resize_bicubic(a, 4, 9, 0);
    g_autoptr(hyocr_image) r2 = hyocr_image_resize_bicubic(a, 11, 3, 0);
    g_autoptr(hyocr_image) r3 = hyocr_image_resize_lanczos(b, 4, 3, 0);
    g_assert_cmpmem(r1->rgb, 4 * 9 * 3, pillow_bicubic_7x5_to_4x9, sizeof pillow_bicubic_7x5_to_4x9);
    g_assert_cmpmem(r2->rgb, 11 * 3 * 3, pillow_bicubic_7x5_to_11x3, sizeof pillow_bicubic_7x5_to_11x3);
    g_assert_cmpmem(r3->rgb, 4 * 3 * 3, pillow_lanczos_9x6_to_4x3, sizeof pillow_lanczos_9x6_to_4x3);
}

static void test_resize_identity_constant(void)
{
    g_autoptr(hyocr_image) a = pattern_image(23, 17);
    g_autoptr(hyocr_image) same = hyocr_image_resize_bicubic(a, 23, 17, 0);
    g_assert_true(same != a && same->rgb != a->rgb);
    g_assert_cmpmem(same->rgb, 23 * 17 * 3, a->rgb, 23 * 17 * 3);
    g_assert_null(hyocr_image_resize_bicubic(a, 0, 5, 0));
    g_assert_null(hyocr_image_resize_lanczos(a, 5, -1, 0));

    g_autoptr(hyocr_image) flat = hyocr_image_new(31, 9);
    for (size_t i = 0; i < 31 * 9; i++) {
        flat->rgb[3 * i] = 0;
        flat->rgb[3 * i + 1] = 77;
        flat->rgb[3 * i + 2] = 255;
    }
    static const int sizes[][2] = { { 1, 1 }, { 64, 3 }, { 7, 40 }, { 300, 200 }, { 31, 4 }, { 5, 9 } };
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++)
        for (int f = 0; f < 2; f++) {
            g_autoptr(hyocr_image) r = f ? hyocr_image_resize_lanczos(flat, sizes[s][0], sizes[s][1], 0)
                                         : hyocr_image_resize_bicubic(flat, sizes[s][0], sizes[s][1], 0);
            for (int i = 0; i < r->width * r->height; i++)
                g_assert_true(r->rgb[3 * i] == 0 && r->rgb[3 * i + 1] == 77 && r->rgb[3 * i + 2] == 255);
        }
}

/* Straightforward reading of spec §3.2: kernel in expanded polynomial form, one output sample
 * at a time, int64 sums, explicit floor division. */
static double ref_cubic(double t)
{
    t = fabs(t);
    if (t < 1) return 1.5 * t * t * t - 2.5 * t * t + 1;
    if (t < 2) return -0.5 * t * t * t + 2.5 * t * t - 4 * t + 2;
    return 0;
}

static void ref_weights(int in, int out, int i, int *first, int *count, int64_t *q)
{
    double scale = (double)in / out, fs = scale > 1 ? scale : 1, support = 2 * fs;
    double center = (i + 0.5) * scale;
    int lo = (int)trunc(center - support + 0.5), hi = (int)trunc(center + support + 0.5);
    if (lo < 0) lo = 0;
    if (hi > in) hi = in;
    double w[64], sum = 0;
    for (int j = lo; j < hi; j++)
        sum += w[j - lo] = ref_cubic((j - center + 0.5) / fs);
    for (int j = lo; j < hi; j++) {
        double v = (sum != 0 ? w[j - lo] / sum : w[j - lo]) * 4194304.0;
        q[j - lo] = (int64_t)(v >= 0 ? trunc(v + 0.5) : trunc(v - 0.5));
    }
    *first = lo;
    *count = hi - lo;
}

static uint8_t ref_round(int64_t acc)
{
    if (acc <= 0) return 0;
    int64_t v = acc / 4194304;
    return (uint8_t)(v > 255 ? 255 : v);
}

static hyocr_image *ref_bicubic(const hyocr_image *s, int w, int h)
{
    hyocr_image *mid = hyocr_image_new(w, s->height);
    for (int y = 0; y < s->height; y++)
        for (int x = 0; x < w; x++) {
            int first, n;
            int64_t q[64];
            if (w == s->width) { first = x; n = 1; q[0] = 4194304; }
            else ref_weights(s->width, w, x, &first, &n, q);
            for (int c = 0; c < 3; c++) {
                int64_t acc = 2097152;
                for (int j = 0; j < n; j++)
                    acc += q[j] * px(s, first + j, y)[c];
                mid->rgb[((size_t)y * w + x) * 3 + c] = w == s->width ? px(s, x, y)[c] : ref_round(acc);
            }
        }
    hyocr_image *o = hyocr_image_new(w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int first, n;
            int64_t q[64];
            if (h == s->height) { first = y; n = 1; q[0] = 4194304; }
            else ref_weights(s->height, h, y, &first, &n, q);
            for (int c = 0; c < 3; c++) {
                int64_t acc = 2097152;
                for (int j = 0; j < n; j++)
                    acc += q[j] * px(mid, x, first + j)[c];
                o->rgb[((size_t)y * w + x) * 3 + c] = h == s->height ? px(mid, x, y)[c] : ref_round(acc);
            }
        }
    hyocr_image_free(mid);
    return o;
}

static void test_resize_reference(void)
{
    static const int cases[][4] = {
        { 7, 5, 4, 9 }, { 40, 30, 64, 64 }, { 137, 91, 96, 64 }, { 420, 300, 160, 128 }, { 32, 256, 32, 96 },
        { 3, 1, 17, 2 }, { 200, 7, 19, 7 }, { 97, 61, 97, 200 }, { 1, 1, 5, 3 }, { 250, 250, 31, 29 },
    };
    GRand *rng = g_rand_new_with_seed(7);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(hyocr_image) s = hyocr_image_new(cases[i][0], cases[i][1]);
        for (size_t k = 0; k < (size_t)s->width * s->height * 3; k++)
            s->rgb[k] = (k / 3) % 5 == 0 ? (uint8_t)g_rand_int_range(rng, 0, 256) : (uint8_t)(k % 3 ? 255 : 0);
        g_autoptr(hyocr_image) got = hyocr_image_resize_bicubic(s, cases[i][2], cases[i][3], 0);
        g_autoptr(hyocr_image) want = ref_bicubic(s, cases[i][2], cases[i][3]);
        g_assert_cmpmem(got->rgb, (size_t)got->width * got->height * 3, want->rgb, (size_t)want->width * want->height * 3);
    }
    g_rand_free(rng);
}

/* The passes split rows over threads; every thread count must give the same bytes
 * (one thread is the plain serial loop), for both passes, LANCZOS and the pixel_values. */
static hyocr_image *resize_with_threads(const hyocr_image *src, int w, int h, bool lanczos, int threads)
{
    gint64 t0 = g_get_monotonic_time();
    hyocr_image *r = lanczos ? hyocr_image_resize_lanczos(src, w, h, threads)
                             : hyocr_image_resize_bicubic(src, w, h, threads);
    g_test_message("%dx%d -> %dx%d %s, %d thread(s): %.3f s", src->width, src->height, w, h,
                   lanczos ? "lanczos" : "bicubic", threads, (g_get_monotonic_time() - t0) / 1e6);
    g_assert_nonnull(r);
    return r;
}

static void test_resize_threads(void)
{
    g_autoptr(hyocr_image) big = hyocr_image_new(2600, 1900);
    GRand *rng = g_rand_new_with_seed(3);
    size_t n = (size_t)big->width * big->height * 3;
    for (size_t k = 0; k < n; k++) big->rgb[k] = (uint8_t)g_rand_int_range(rng, 0, 256);
    g_rand_free(rng);
    static const int targets[][3] = { { 2048, 1536, 0 }, { 3008, 1900, 0 }, { 2600, 1024, 0 }, { 1300, 950, 1 } };
    for (size_t i = 0; i < G_N_ELEMENTS(targets); i++) {
        g_autoptr(hyocr_image) one = resize_with_threads(big, targets[i][0], targets[i][1], targets[i][2], 1);
        g_autoptr(hyocr_image) many = resize_with_threads(big, targets[i][0], targets[i][1], targets[i][2], 7);
        g_assert_cmpmem(one->rgb, (size_t)one->width * one->height * 3, many->rgb,
                        (size_t)many->width * many->height * 3);
    }
    hyocr_processor_config pc = { .patch_size = 16, .merge_size = 2, .temporal_patch_size = 1,
                                  .min_pixels = 256 * 256, .max_pixels = 4096 * 4096, .rescale_factor = 1.0 / 255,
                                  .image_mean = { 0.5f, 0.4f, 0.3f }, .image_std = { 0.2f, 0.25f, 0.3f } };
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_pixels) p1 = hyocr_pixels_from_image(big, &pc, 1, &err);
    g_autoptr(hyocr_pixels) p6 = hyocr_pixels_from_image(big, &pc, 6, &err);
    g_assert_no_error(err);
    g_assert_cmpint(p1->n_patches, ==, p6->n_patches);
    g_assert_cmpmem(p1->data, (size_t)p1->n_patches * p1->patch_dim * sizeof(float), p6->data,
                    (size_t)p6->n_patches * p6->patch_dim * sizeof(float));
}

/* The pinned pool (pinned.h) through the pixels: the same values in the pool's memory, its
 * buffers pinned when it is made and given again, pages too large or too many in ordinary
 * memory, and no buffer lost or freed twice. */
static int pool_allocs, pool_releases;

static void *counting_alloc(hyocr_backend *be, size_t bytes, GError **error)
{
    g_assert_null(be);   /* pinned memory is the process's: the pool names no backend */
    (void)error;
    return ++pool_allocs > 1 ? NULL : g_malloc(bytes);   /* the second pin fails, as a locked-memory limit would */
}

static void counting_release(hyocr_backend *be, void *p, size_t bytes)
{
    g_assert_null(be);
    g_assert_cmpuint(bytes, ==, 12u << 20);
    pool_releases++;
    g_free(p);
}

static void *take(void *pool, size_t bytes, size_t *cap)
{
    return hyocr_pinned_pool_take(pool, bytes, cap);
}

static void give(void *pool, void *p, size_t cap)
{
    hyocr_pinned_pool_give(pool, p, cap);
}

static void test_pixels_pinned_pool(void)
{
    pool_allocs = pool_releases = 0;
    g_autoptr(hyocr_image) img = hyocr_image_new(1024, 1024);
    for (size_t k = 0; k < (size_t)1024 * 1024 * 3; k++) img->rgb[k] = (uint8_t)(k * 2654435761u >> 24);
    hyocr_processor_config pc = { .patch_size = 16, .merge_size = 2, .temporal_patch_size = 1,
                                  .min_pixels = 256 * 256, .max_pixels = 4096 * 4096, .rescale_factor = 1.0 / 255,
                                  .image_mean = { 0.5f, 0.4f, 0.3f }, .image_std = { 0.2f, 0.25f, 0.3f } };
    const size_t bytes = (size_t)4096 * 768 * sizeof(float);   /* 12 MiB: 64 × 64 patches of 768 */
    /* two asked for, one pinned: the second fails */
    hyocr_pinned_pool *pool = hyocr_pinned_pool_new(counting_alloc, counting_release, 2, bytes);
    g_assert_cmpint(pool_allocs, ==, 2);
    size_t pinned, in_pool;
    hyocr_pinned_pool_stats(pool, &pinned, &in_pool);
    g_assert_cmpuint(pinned, ==, bytes);
    g_assert_cmpuint(in_pool, ==, bytes);
    const hyocr_pixels_mem mem = { take, give, pool };
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_pixels) plain = hyocr_pixels_from_image(img, &pc, 2, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(plain->cap, ==, 0);

    hyocr_pixels *b = hyocr_pixels_from_image_in(img, &pc, 2, &mem, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(b->cap, ==, bytes);
    g_assert_cmpmem(b->data, bytes, plain->data, bytes);
    /* the only buffer is out: the next page takes ordinary memory, with the same values */
    hyocr_pixels *c = hyocr_pixels_from_image_in(img, &pc, 2, &mem, &err);
    g_assert_cmpuint(c->cap, ==, 0);
    g_assert_cmpmem(c->data, bytes, plain->data, bytes);
    hyocr_pinned_pool_stats(pool, &pinned, &in_pool);
    g_assert_cmpuint(in_pool, ==, 0);
    const float *first = b->data;
    hyocr_pixels_free(b);
    hyocr_pixels_free(c);
    hyocr_pinned_pool_stats(pool, &pinned, &in_pool);
    g_assert_cmpuint(in_pool, ==, bytes);

    /* the buffer comes back, with the next page's values */
    hyocr_pixels *d = hyocr_pixels_from_image_in(img, &pc, 2, &mem, &err);
    g_assert_true(d->data == first);
    g_assert_cmpmem(d->data, bytes, plain->data, bytes);
    /* a page larger than the buffers takes ordinary memory */
    g_autoptr(hyocr_image) big = hyocr_image_new(1100, 1100);
    memset(big->rgb, 7, (size_t)1100 * 1100 * 3);
    hyocr_pixels *e = hyocr_pixels_from_image_in(big, &pc, 2, &mem, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(e->cap, ==, 0);
    hyocr_pixels_free(e);

    /* the engine's reference may go first: the buffer out keeps the pool until it is given back */
    hyocr_pinned_pool_unref(pool);
    g_assert_cmpint(pool_releases, ==, 0);
    hyocr_pixels_free(d);
    g_assert_cmpint(pool_releases, ==, 1);
}

static void test_fit_size(void)
{
    static const int cases[][5] = {
        /* w, h, max_side → w', h' per Pillow's thumbnail rule */
        { 4000, 3000, 1000, 1000, 750 }, { 3000, 4000, 1000, 750, 1000 }, { 1000, 337, 100, 100, 34 },
        { 1000, 333, 100, 100, 33 }, { 1001, 3, 100, 100, 1 }, { 3, 1001, 100, 1, 100 }, { 500, 500, 64, 64, 64 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        int w, h;
        g_assert_true(hyocr_image_fit_size(cases[i][0], cases[i][1], cases[i][2], &w, &h));
        g_assert_cmpint(w, ==, cases[i][3]);
        g_assert_cmpint(h, ==, cases[i][4]);
    }
    int w, h;
    g_assert_false(hyocr_image_fit_size(640, 480, 640, &w, &h));
    g_assert_cmpint(w, ==, 640);
    g_assert_false(hyocr_image_fit_size(640, 480, 0, &w, &h));
    /* the edges: one pixel over, down to a single pixel, and the aspect picking ceil
     * where rounding the scaled edge would floor it (137×91 at 70: 46.496 rounds to
     * 46, but 70/47 is closer to 137/91 than 70/46) */
    static const int edges[][5] = {
        { 641, 480, 640, 640, 479 }, { 480, 641, 640, 479, 640 }, { 640, 480, 1, 1, 1 }, { 2, 1, 1, 1, 1 },
        { 137, 91, 70, 70, 47 }, { 131, 64, 44, 44, 22 }, { 2, 2, 1, 1, 1 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(edges); i++) {
        g_assert_true(hyocr_image_fit_size(edges[i][0], edges[i][1], edges[i][2], &w, &h));
        g_assert_cmpint(w, ==, edges[i][3]);
        g_assert_cmpint(h, ==, edges[i][4]);
    }
    g_assert_false(hyocr_image_fit_size(1, 1, 1, &w, &h));
    g_assert_false(hyocr_image_fit_size(5, 3, -4, &w, &h));
    g_assert_cmpint(h, ==, 3);
}

/* hyocr_image_fit applies that size with LANCZOS, and leaves an image that fits alone. */
static void test_fit(void)
{
    g_autoptr(hyocr_image) img = hyocr_image_new(137, 91);
    for (size_t i = 0; i < (size_t)137 * 91 * 3; i++) img->rgb[i] = (uint8_t)(i * 7 % 251);
    g_autoptr(GError) err = NULL;
    hyocr_image *out = (hyocr_image *)1;
    g_assert_true(hyocr_image_fit(img, 137, 0, &out, &err));
    g_assert_null(out);
    g_assert_true(hyocr_image_fit(img, 0, 0, &out, &err));
    g_assert_null(out);
    g_assert_true(hyocr_image_fit(img, 70, 0, &out, &err));
    g_assert_no_error(err);
    g_autoptr(hyocr_image) small = out;
    g_assert_cmpint(small->width, ==, 70);
    g_assert_cmpint(small->height, ==, 47);
    g_autoptr(hyocr_image) want = hyocr_image_resize_lanczos(img, 70, 47, 0);
    g_assert_cmpmem(small->rgb, 70 * 47 * 3, want->rgb, 70 * 47 * 3);
}

static void test_max_side(Fixture *fx, gconstpointer data)
{
    int w = 90, h = 40;
    g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h; i++)
        for (int c = 0; c < 3; c++)
            rgb[3 * i + c] = pattern(i % w, i / w, c);
    g_autofree char *p = tmp_path(fx, "big.png");
    write_png(p, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 8 }, rgb, (size_t)w * 3);
    hyocr_image_options o = { .max_side = 30 };
    g_autoptr(hyocr_image) small = load_ok(p, &o);
    g_assert_cmpint(small->width, ==, 30);
    g_assert_cmpint(small->height, ==, 13);   /* 40/3 = 13.33 → 13 is the closer aspect */
    g_autoptr(hyocr_image) full = load_ok(p, NULL);
    g_autoptr(hyocr_image) want = hyocr_image_resize_lanczos(full, 30, 13, 0);
    g_assert_cmpmem(small->rgb, 30 * 13 * 3, want->rgb, 30 * 13 * 3);
    o.max_side = 200;
    g_autoptr(hyocr_image) same = load_ok(p, &o);
    g_assert_cmpint(same->width, ==, w);
}

/* ------------------------------------------------------------------------ smart_resize */

static void test_smart_resize(void)
{
    static const struct { int h, w; int64_t min, max; int eh, ew; } cases[] = {
        { 320, 768, 262144, 16777216, 352, 800 },      /* spec §3.5 worked example */
        { 2339, 1654, 262144, 16777216, 2336, 1664 },
        { 4000, 3000, 262144, 16777216, 4000, 3008 },
        { 4000, 3000, 262144, 4194304, 2336, 1760 },    /* 1.0 limits */
        { 10, 10, 262144, 16777216, 512, 512 },         /* tiny: round gives 0, the min branch fixes it */
        { 1, 200, 262144, 16777216, 64, 7264 },         /* 1×N at the aspect limit */
        { 80, 80, 1, 1000000, 64, 64 },                  /* 2.5 → 2: half to even */
        { 48, 48, 1, 1000000, 64, 64 },                  /* 1.5 → 2 */
        { 112, 16, 1, 1000000, 32, 32 },                 /* w̄: 0.5 → 0, area 0 < min: scaled up */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        int h = 0, w = 0;
        g_autoptr(GError) err = NULL;
        gboolean ok = hyocr_smart_resize(cases[i].h, cases[i].w, 32, cases[i].min, cases[i].max, &h, &w, &err);
        g_assert_no_error(err);
        g_assert_true(ok);
        g_assert_cmpint(h, ==, cases[i].eh);
        g_assert_cmpint(w, ==, cases[i].ew);
    }
    int h, w;
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_smart_resize(1, 201, 32, 262144, 16777216, &h, &w, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(err->message, "201.0"));
    g_assert_nonnull(strstr(err->message, "200"));
    g_clear_error(&err);
    g_assert_false(hyocr_smart_resize(0, 20, 32, 262144, 16777216, &h, &w, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
}

/* ------------------------------------------------------------------------ pixel_values */

static hyocr_processor_config test_pc(void)
{
    hyocr_processor_config pc = {
        .min_pixels = 1024, .max_pixels = 1 << 20, .patch_size = 16, .merge_size = 2, .temporal_patch_size = 1,
        .image_mean = { 0.48145466f, 0.4578275f, 0.40821073f },
        .image_std = { 0.26862954f, 0.26130258f, 0.27577711f },
        .rescale_factor = 0.00392156862745098,
    };
    return pc;
}

static void test_pixels_layout(void)
{
    hyocr_processor_config pc = test_pc();
    g_autoptr(hyocr_image) img = pattern_image(96, 64);   /* multiple of 32: no resize */
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_pixels) p = hyocr_pixels_from_image(img, &pc, 0, &err);
    g_assert_no_error(err);
    g_assert_cmpint(p->grid_t, ==, 1);
    g_assert_cmpint(p->grid_h, ==, 4);
    g_assert_cmpint(p->grid_w, ==, 6);
    g_assert_cmpint(p->n_patches, ==, 24);
    g_assert_cmpint(p->patch_dim, ==, 768);
    g_assert_cmpint(p->resized_width, ==, 96);
    g_assert_cmpint(p->resized_height, ==, 64);
    for (int row = 0; row < p->n_patches; row++)
        for (int k = 0; k < 768; k++) {
            int r = row / 6, col = row % 6, c = k / 256, y = k % 256 / 16, x = k % 16;
            double scaled = (double)pattern(col * 16 + x, r * 16 + y, c) * pc.rescale_factor;
            float v = (float)scaled, want = (v - pc.image_mean[c]) / pc.image_std[c];
            float got = p->data[(size_t)row * 768 + k];
            if (got != want)
                g_error("patch %d element %d: %.9g, expected %.9g", row, k, got, want);
        }
}

static void test_pixels_resized(void)
{
    hyocr_processor_config pc = test_pc();
    g_autoptr(hyocr_image) img = pattern_image(137, 91);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_pixels) p = hyocr_pixels_from_image(img, &pc, 0, &err);
    g_assert_no_error(err);
    int h, w;
    g_assert_true(hyocr_smart_resize(91, 137, 32, pc.min_pixels, pc.max_pixels, &h, &w, NULL));
    g_assert_cmpint(p->resized_width, ==, w);
    g_assert_cmpint(p->resized_height, ==, h);
    g_autoptr(hyocr_image) r = hyocr_image_resize_bicubic(img, w, h, 0);
    g_autoptr(hyocr_pixels) q = hyocr_pixels_from_image(r, &pc, 0, &err);
    g_assert_no_error(err);
    g_assert_cmpmem(p->data, (size_t)p->n_patches * 768 * 4, q->data, (size_t)q->n_patches * 768 * 4);

    g_autoptr(hyocr_image) thin = pattern_image(1, 150);   /* 1×N: handled, scaled up */
    g_autoptr(hyocr_pixels) t = hyocr_pixels_from_image(thin, &pc, 0, &err);
    g_assert_no_error(err);
    g_assert_cmpint(t->resized_width % 32, ==, 0);
    g_autoptr(hyocr_image) thinner = pattern_image(1, 201);
    g_assert_null(hyocr_pixels_from_image(thinner, &pc, 0, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(err->message, "aspect ratio 201.0"));
    g_clear_error(&err);
    pc.patch_size = 0;
    g_assert_null(hyocr_pixels_from_image(img, &pc, 0, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CONFIG);
}

/* Reference outputs written by tests/reference/make_fixtures.py (transformers + Pillow). */
static void check_fixture_case(const char *ckpt, const char *name, const hyocr_processor_config *pc)
{
    g_autofree char *dir = hyocr_test_data("processor", ckpt, name, NULL);
    g_autofree char *image = hyocr_test_data("images", name, NULL);
    g_autofree char *grid_f = g_build_filename(dir, "grid_thw.txt", NULL);
    g_autofree char *size_f = g_build_filename(dir, "resized.txt", NULL);
    g_autofree char *pv_f = g_build_filename(dir, "pixel_values.f32", NULL);
    if (!hyocr_test_require(image) || !hyocr_test_require(pv_f))
        return;
    hyocr_image_options o = { .ignore_exif = true };   /* the reference never rotates */
    g_autoptr(hyocr_image) img = load_ok(image, &o);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_pixels) p = hyocr_pixels_from_image(img, pc, 0, &err);
    g_assert_no_error(err);
    GArray *grid = hyocr_test_read_ints(grid_f), *size = hyocr_test_read_ints(size_f);
    g_assert_cmpuint(grid->len, ==, 3);
    g_assert_cmpint(g_array_index(grid, int64_t, 0), ==, p->grid_t);
    g_assert_cmpint(g_array_index(grid, int64_t, 1), ==, p->grid_h);
    g_assert_cmpint(g_array_index(grid, int64_t, 2), ==, p->grid_w);
    g_assert_cmpint(g_array_index(size, int64_t, 0), ==, p->resized_width);
    g_assert_cmpint(g_array_index(size, int64_t, 1), ==, p->resized_height);
    g_array_unref(grid);
    g_array_unref(size);
    size_t n = 0;
    g_autofree float *want = hyocr_test_read_f32(pv_f, &n);
    g_assert_cmpuint(n, ==, (size_t)p->n_patches * p->patch_dim);
    double worst = 0;
    size_t at = 0, differ = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)p->data[i] - want[i]);
        differ += d != 0;
        if (d > worst) { worst = d; at = i; }
    }
    g_test_message("%s/%s: %zu values, %zu differ, max |d| %.3g", ckpt, name, n, differ, worst);
    if (worst > 1e-6)
        g_error("%s/%s: pixel_values differ by %.6g at %zu (patch %zu, element %zu): %.9g vs %.9g", ckpt, name,
                worst, at, at / p->patch_dim, at % p->patch_dim, p->data[at], want[at]);
}

static void test_fixtures(void)
{
    const char *ckpts[] = { "ckpt-flat", "ckpt-nested" };
    int seen = 0;
    for (size_t k = 0; k < G_N_ELEMENTS(ckpts); k++) {
        g_autofree char *ckdir = hyocr_test_data(ckpts[k], NULL);
        g_autofree char *procdir = hyocr_test_data("processor", ckpts[k], NULL);
        if (!hyocr_test_require(ckdir) || !hyocr_test_require(procdir))
            return;
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_config) cfg = hyocr_config_load(ckdir, &err);
        g_assert_no_error(err);
        GDir *d = g_dir_open(procdir, 0, NULL);
        g_assert_nonnull(d);
        const char *name;
        while ((name = g_dir_read_name(d))) {
            check_fixture_case(ckpts[k], name, &cfg->processor);
            seen++;
        }
        g_dir_close(d);
    }
    g_assert_cmpint(seen, >, 0);
}

/* ------------------------------------------------------------------------ errors */

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Signature + IHDR (with a correct CRC) + IEND: enough for a header-only bomb. */
static size_t png_header(uint8_t *out, uint32_t w, uint32_t h)
{
    memcpy(out, "\x89PNG\r\n\x1a\n", 8);
    be32(out + 8, 13);
    memcpy(out + 12, "IHDR", 4);
    be32(out + 16, w);
    be32(out + 20, h);
    memcpy(out + 24, "\x08\x02\x00\x00\x00", 5);
    be32(out + 29, crc32_of(out + 12, 17));
    memcpy(out + 33, "\0\0\0\0IEND\xae\x42\x60\x82", 12);
    return 45;
}

static void test_errors_files(Fixture *fx, gconstpointer data)
{
    g_autofree char *missing = tmp_path(fx, "nope.png");
    expect_load_error(missing, HYOCR_ERROR_IO, NULL);

    g_autofree char *empty = tmp_path(fx, "empty.jpg");
    put_bytes(empty, "", 0);
    expect_load_error(empty, HYOCR_ERROR_IMAGE, "empty");

    g_autofree char *text = tmp_path(fx, "notes.png");
    put_bytes(text, "hello, world\n", 13);
    expect_load_error(text, HYOCR_ERROR_IMAGE, "not a file hyocr can read (starts with 68 65 6c 6c");
    g_autofree char *gif = tmp_path(fx, "anim.png");
    put_bytes(gif, "GIF89a\x01\x00\x01\x00", 10);
    expect_load_error(gif, HYOCR_ERROR_IMAGE, "GIF");

    g_autofree char *dir = tmp_path(fx, "adir.png");
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    expect_load_error(dir, HYOCR_ERROR_IO, NULL);
}

static void test_errors_truncated(Fixture *fx, gconstpointer data)
{
    int w = 48, h = 40;
    g_autofree uint8_t *rgb = g_malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h; i++)
        for (int c = 0; c < 3; c++)
            rgb[3 * i + c] = pattern(i % w, i / w, c);
    g_autofree char *png = tmp_path(fx, "t.png"), *jpg = tmp_path(fx, "t.jpg"), *prog = tmp_path(fx, "p.jpg");
    write_png(png, w, h, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 8 }, rgb, (size_t)w * 3);
    write_jpeg(jpg, w, h, &(jpeg_spec){ 3, JCS_RGB, JCS_UNKNOWN, false, 90 }, rgb);
    write_jpeg(prog, w, h, &(jpeg_spec){ 3, JCS_RGB, JCS_UNKNOWN, true, 90 }, rgb);
    const char *files[] = { png, jpg, prog };
    for (size_t f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autofree uint8_t *bytes = NULL;
        size_t len;
        file_bytes(files[f], &bytes, &len);
        size_t cuts[] = { len / 2, len - 40, 30, 9 };
        for (size_t c = 0; c < G_N_ELEMENTS(cuts); c++) {
            g_autofree char *cut = g_strdup_printf("%s.cut%zu", files[f], cuts[c]);
            put_bytes(cut, bytes, cuts[c]);
            expect_load_error(cut, HYOCR_ERROR_IMAGE, cuts[c] > 9 ? "truncated" : NULL);
        }
    }
    /* Losing only the trailer (IEND) leaves every pixel: accepted, as by Pillow. */
    g_autofree uint8_t *bytes = NULL;
    size_t len;
    file_bytes(png, &bytes, &len);
    g_autofree char *no_iend = tmp_path(fx, "noiend.png");
    put_bytes(no_iend, bytes, len - 12);
    g_autoptr(hyocr_image) img = load_ok(no_iend, NULL);
    g_assert_cmpmem(img->rgb, (size_t)w * h * 3, rgb, (size_t)w * h * 3);
    /* A corrupted IDAT is an error too. */
    bytes[len - 40] ^= 0x55;
    g_autofree char *bad = tmp_path(fx, "bad.png");
    put_bytes(bad, bytes, len);
    expect_load_error(bad, HYOCR_ERROR_IMAGE, "PNG");
}

static void test_errors_bomb(Fixture *fx, gconstpointer data)
{
    uint8_t hdr[64];
    size_t n = png_header(hdr, 60000, 60000);
    g_autofree char *bomb = tmp_path(fx, "bomb.png");
    put_bytes(bomb, hdr, n);
    gint64 t0 = g_get_monotonic_time();
    expect_load_error(bomb, HYOCR_ERROR_IMAGE, "60000×60000");
    expect_load_error(bomb, HYOCR_ERROR_IMAGE, "178956970");
    g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);

    n = png_header(hdr, 0, 0);
    g_autofree char *zero = tmp_path(fx, "zero.png");
    put_bytes(zero, hdr, n);
    expect_load_error(zero, HYOCR_ERROR_IMAGE, "empty image");

    n = png_header(hdr, 0x7FFFFFFF, 0x7FFFFFFF);
    g_autofree char *huge = tmp_path(fx, "huge.png");
    put_bytes(huge, hdr, n);
    expect_load_error(huge, HYOCR_ERROR_IMAGE, NULL);

    /* JPEG: a real small file whose SOF0 claims 60000×60000. */
    g_autofree uint8_t *rgb = g_malloc0(16 * 16 * 3);
    g_autofree char *jpg = tmp_path(fx, "bomb.jpg");
    write_jpeg(jpg, 16, 16, &(jpeg_spec){ 3, JCS_RGB, JCS_UNKNOWN, false, 90 }, rgb);
    g_autofree uint8_t *bytes = NULL;
    size_t len;
    file_bytes(jpg, &bytes, &len);
    for (size_t i = 2; i + 9 < len; i++)
        if (bytes[i] == 0xFF && bytes[i + 1] == 0xC0) {
            bytes[i + 5] = 0xEA; bytes[i + 6] = 0x60;   /* height 60000 */
            bytes[i + 7] = 0xEA; bytes[i + 8] = 0x60;   /* width 60000 */
            break;
        }
    put_bytes(jpg, bytes, len);
    t0 = g_get_monotonic_time();
    expect_load_error(jpg, HYOCR_ERROR_IMAGE, "60000×60000");
    g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);

    /* The limit is configurable. */
    hyocr_image_options o = { .max_decode_pixels = 255 };
    g_autoptr(GError) err = NULL;
    g_autofree char *small = tmp_path(fx, "small.png");
    write_png(small, 16, 16, &(png_spec){ .color_type = PNG_COLOR_TYPE_RGB, .bit_depth = 8 }, rgb, 48);
    g_assert_null(hyocr_image_load(small, &o, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(err->message, "limit of 255"));
    /* What it says to do is something a user can do (no setting of that name exists). */
    g_assert_null(strstr(err->message, "max_decode_pixels"));
    g_assert_nonnull(strstr(err->message, "make it smaller"));
}

/* A chunk with its length and CRC. */
static size_t png_chunk(uint8_t *out, const char *type, const void *data, uint32_t n)
{
    be32(out, n);
    memcpy(out + 4, type, 4);
    if (n) memcpy(out + 8, data, n);
    be32(out + 8 + n, crc32_of(out + 4, n + 4));
    return 12 + n;
}

/* Signature, IHDR, and an IDAT of ten bytes that never finish a row. */
static size_t png_header_only(uint8_t *out, uint32_t w, uint32_t h, int depth, int color)
{
    uint8_t ihdr[13];
    be32(ihdr, w);
    be32(ihdr + 4, h);
    memcpy(ihdr + 8, (uint8_t[]){ (uint8_t)depth, (uint8_t)color, 0, 0, 0 }, 5);
    memcpy(out, "\x89PNG\r\n\x1a\n", 8);
    size_t n = 8 + png_chunk(out + 8, "IHDR", ihdr, 13);
    return n + png_chunk(out + n, "IDAT", "\x78\x9c\x00\x00\x00\xff\xff\x00\x00\x00", 10);
}

/* A JPEG whose frame header claims w×h but whose data stops after the first scan's header. */
static size_t jpeg_header_only(uint8_t *out, size_t cap, bool progressive, int w, int h)
{
    uint8_t *buf = NULL;
    unsigned long len = 0;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &buf, &len);
    c.image_width = c.image_height = 16;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);   /* 4:2:0 */
    if (progressive) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    uint8_t row[48] = { 0 };
    for (JSAMPROW r = row; c.next_scanline < 16;) jpeg_write_scanlines(&c, &r, 1);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    size_t cut = 0;
    for (size_t i = 2; i + 9 < len; i++) {
        if (buf[i] == 0xFF && (buf[i + 1] == 0xC0 || buf[i + 1] == 0xC2)) {
            buf[i + 5] = (uint8_t)(h >> 8), buf[i + 6] = (uint8_t)h;
            buf[i + 7] = (uint8_t)(w >> 8), buf[i + 8] = (uint8_t)w;
        }
        if (buf[i] == 0xFF && buf[i + 1] == 0xDA) {
            cut = i + 2 + (size_t)(buf[i + 2] << 8 | buf[i + 3]);
            break;
        }
    }
    g_assert_cmpuint(cut, >, 0);
    g_assert_cmpuint(cut, <=, cap);
    memcpy(out, buf, cut);
    free(buf);
    return cut;
}

static void assert_message(const GError *err, const char *fragment)
{
    g_assert_nonnull(err);
    if (!strstr(err->message, fragment)) g_error("message lacks '%s': %s", fragment, err->message);
}

static long peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

/* Runs in a fresh process (g_test_trap_subprocess) so its peak RSS is its own. Each file is
 * a header that passes the pixel limit with almost no data behind it; a decoder may hold
 * the RGB buffer (zeroed pages that cost nothing until rows land in them, unless
 * MALLOC_PERTURB_, which meson test sets, has calloc write them) and little else before
 * the data. Before the decoders counted what they really allocate, the 55-byte PNG cost
 * 1.37 GB (a row-pointer table, 8 bytes a row, beside its 0.5 GB RGB buffer), the 1-row
 * PNG as much (libpng's row buffers, zeroed), and the progressive JPEG 514 MB (its
 * coefficients, zeroed while libjpeg ran out of data). */
static void test_errors_decode_memory_child(void)
{
    static const struct { const char *name; long rgb_mb; const char *fragment; } cases[] = {
        { "tall.png", 512, "PNG file is truncated (55 bytes" },
        { "wide.png", 0, "PNG of 178956970×1 needs 2.9\xC2\xA0" "GB for its row buffers before its pixel data, "
                         "more than the 33.6\xC2\xA0" "MB a decoder may take" },
        { "prog.jpg", 0, "progressive JPEG of 65500×2732 needs 537.7\xC2\xA0" "MB for its coefficients before "
                         "it has a pixel, more than the 536.9\xC2\xA0" "MB of the largest image allowed "
                         "(178956970 pixels)" },
        { "base.jpg", 512, "JPEG file is truncated" },   /* baseline: decoded a row at a time */
    };
    uint8_t buf[1024];
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        size_t n = i == 0 ? png_header_only(buf, 1, 178956970, 8, 0)          /* 1×178956970 gray: 55 bytes */
                 : i == 1 ? png_header_only(buf, 178956970, 1, 16, 6)         /* 16-bit RGBA, one row */
                 : jpeg_header_only(buf, sizeof buf, i == 2, 65500, 2732);    /* 4:2:0 */
        long before = peak_rss_mb();
        g_autoptr(GError) err = NULL;
        g_assert_null(hyocr_image_load_from_memory(buf, n, cases[i].name, NULL, &err));
        g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
        assert_message(err, cases[i].fragment);
        long grew = peak_rss_mb() - before;
        if (grew > cases[i].rgb_mb + 64)
            g_error("%s: %zu bytes took %ld MB to refuse (its RGB buffer: %ld MB)", cases[i].name, n, grew,
                    cases[i].rgb_mb);
    }
}

static void test_errors_decode_memory(void)
{
    g_test_trap_subprocess("/image/errors/decode-memory/subprocess", 120 * G_USEC_PER_SEC, 0);
    g_test_trap_assert_passed();
}

/* A multi-scan JPEG's coefficients count against 3 bytes per allowed pixel. */
static void test_errors_coefficient_budget(Fixture *fx, gconstpointer data)
{
    hyocr_image_options o = { .max_decode_pixels = 1000000 };   /* 3 MB */
    int sizes[] = { 700, 800 };   /* 4:2:0: 3 bytes of coefficients a pixel: 1.5 MB, 1.9 MB; 4:4:4: 2.9, 3.8 */
    for (int k = 0; k < 2; k++) {
        int w = sizes[k];
        g_autofree uint8_t *rgb = g_malloc((size_t)w * w * 3);
        for (int i = 0; i < w * w * 3; i++) rgb[i] = pattern(i / 3 % w, i / 3 / w, i % 3);
        g_autofree char *path = g_strdup_printf("%s/p%d.jpg", fx->dir, w);
        /* 4:4:4 from the RGB colour space (no subsampling): 6 bytes of coefficients a pixel */
        write_jpeg(path, w, w, &(jpeg_spec){ 3, JCS_RGB, JCS_RGB, true, 90 }, rgb);
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_image) img = hyocr_image_load(path, &o, &err);
        if (k == 0) {
            g_assert_no_error(err);
            g_assert_cmpint(img->width, ==, w);
        } else {
            g_assert_null(img);
            assert_message(err, "progressive JPEG of 800×800 needs 3.8\xC2\xA0" "MB for its coefficients");
            assert_message(err, "the 3.0\xC2\xA0" "MB of the largest image allowed (1000000 pixels)");
        }
    }
}

/* A progressive JPEG of many scans: each is a pass over all the coefficients, a few bytes in
 * the file. One coefficient a band, then each refined: 128 scans, a valid file. */
static void test_errors_many_scans(Fixture *fx, gconstpointer data)
{
    int w = 64, h = 64;
    g_autofree uint8_t *gray = g_malloc((size_t)w * h);
    for (int i = 0; i < w * h; i++) gray[i] = pattern(i % w, i / w, 0);
    jpeg_scan_info scans[128];
    for (int k = 0; k < 64; k++) {
        scans[k] = (jpeg_scan_info){ 1, { 0 }, k, k, 0, 1 };
        scans[64 + k] = (jpeg_scan_info){ 1, { 0 }, k, k, 1, 0 };
    }
    g_autofree char *path = tmp_path(fx, "scans.jpg");
    FILE *f = fopen(path, "wb");
    g_assert_nonnull(f);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = w, c.image_height = h, c.input_components = 1, c.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    c.scan_info = scans;
    c.num_scans = 128;
    jpeg_start_compress(&c, TRUE);
    for (JSAMPROW row; c.next_scanline < (unsigned)h;) {
        row = gray + (size_t)c.next_scanline * w;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
    expect_load_error(path, HYOCR_ERROR_IMAGE, "JPEG has more than 100 scans");
}

static void test_errors_memory(void)
{
    g_autoptr(GError) err = NULL;
    g_assert_null(hyocr_image_load_from_memory("\xFF\xD8\xFF\xE0", 4, "clip.jpg", NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_true(g_str_has_prefix(err->message, "clip.jpg: "));
    g_clear_error(&err);
    g_assert_null(hyocr_image_load_from_memory(NULL, 0, "nothing.png", NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(err->message, "nothing.png"));
    g_assert_null(hyocr_image_new(0, 3));
}

/* A field of the mapping that holds p in /proc/self/smaps ("VmFlags", "AnonHugePages"): the
 * text after the colon, or NULL where it cannot tell. */
static char *smaps_field(const void *p, const char *field)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents("/proc/self/smaps", &text, NULL, NULL)) return NULL;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    size_t len = strlen(field);
    bool in = false;
    for (char **l = lines; *l; l++) {
        unsigned long lo, hi;
        if (sscanf(*l, "%lx-%lx ", &lo, &hi) == 2 && strchr(*l, '-') < strchr(*l, ' ')) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && !strncmp(*l, field, len) && (*l)[len] == ':') return g_strstrip(g_strdup(*l + len + 1));
    }
    return NULL;
}

/* Whether the kernel took the huge-page advice for the mapping at p (VmFlags "hg"). Whether it
 * then found free 2 MiB pages depends on the machine's memory at that moment, so AnonHugePages is
 * only reported. */
static bool advised_huge(const void *p)
{
    g_autofree char *flags = smaps_field(p, "VmFlags");
    g_assert_nonnull(flags);
    g_auto(GStrv) f = g_strsplit(flags, " ", -1);
    return g_strv_contains((const char *const *)f, "hg");
}

/* A page-sized host buffer is marked for huge pages (hostmem.h); one not asked for is not, and
 * neither is one under the threshold. */
static void test_huge_pages(void)
{
    if (!g_file_test("/proc/self/smaps", G_FILE_TEST_EXISTS) ||
        !g_file_test("/sys/kernel/mm/transparent_hugepage", G_FILE_TEST_IS_DIR)) {
        g_test_skip("SKIP: no transparent huge pages here (not Linux, or a kernel built without them)");
        return;
    }
    const size_t n = 48u << 20, small = HYOCR_HUGE_MIN - 4096;
    uint8_t *a = g_malloc0(n), *b = g_malloc0(n), *c = g_malloc0(small);
    hyocr_host_advise_huge(a, n);
    hyocr_host_advise_huge(c, small);
    memset(a, 1, n);
    memset(b, 1, n);
    g_autofree char *kb = smaps_field(a + n / 2, "AnonHugePages");
    g_test_message("advised: AnonHugePages %s", kb ? kb : "?");
    g_assert_true(advised_huge(a + n / 2));
    g_assert_false(advised_huge(b + n / 2));
    g_assert_false(advised_huge(c + small / 2));
    g_free(a);
    g_free(b);
    g_free(c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define FX(path, fn) g_test_add(path, Fixture, NULL, fx_setup, fn, fx_teardown)
    FX("/image/png/rgb-rgba", test_png_rgb_rgba);
    FX("/image/png/gray-1-2-4-8", test_png_gray);
    FX("/image/png/gray-alpha-16bit", test_png_gray_alpha_and_16bit);
    FX("/image/png/palette-trns", test_png_palette);
    FX("/image/png/interlaced", test_png_interlaced);
    FX("/image/jpeg/baseline-progressive", test_jpeg_baseline_progressive);
    FX("/image/jpeg/gray", test_jpeg_gray);
    FX("/image/jpeg/cmyk-ycck", test_jpeg_cmyk_ycck);
    g_test_add_func("/image/exif/parse", test_exif_parse);
    g_test_add_func("/image/huge-pages", test_huge_pages);
    g_test_add_func("/image/exif/orient-all", test_orient_all);
    FX("/image/exif/jpeg", test_exif_jpeg);
    FX("/image/exif/png", test_exif_png);
    g_test_add_func("/image/resize/pillow-cases", test_resize_pillow_cases);
    g_test_add_func("/image/resize/identity-constant", test_resize_identity_constant);
    g_test_add_func("/image/resize/reference", test_resize_reference);
    g_test_add_func("/image/resize/threads", test_resize_threads);
    g_test_add_func("/image/prescale/fit-size", test_fit_size);
    g_test_add_func("/image/prescale/fit", test_fit);
    FX("/image/prescale/max-side", test_max_side);
    g_test_add_func("/image/smart-resize/table", test_smart_resize);
    g_test_add_func("/image/pixels/layout", test_pixels_layout);
    g_test_add_func("/image/pixels/pinned-pool", test_pixels_pinned_pool);
    g_test_add_func("/image/pixels/resized", test_pixels_resized);
    g_test_add_func("/image/pixels/fixtures", test_fixtures);
    FX("/image/errors/files", test_errors_files);
    FX("/image/errors/truncated", test_errors_truncated);
    FX("/image/errors/bomb", test_errors_bomb);
    g_test_add_func("/image/errors/memory", test_errors_memory);
    g_test_add_func("/image/errors/decode-memory", test_errors_decode_memory);
    g_test_add_func("/image/errors/decode-memory/subprocess", test_errors_decode_memory_child);
    FX("/image/errors/coefficient-budget", test_errors_coefficient_budget);
    FX("/image/errors/many-scans", test_errors_many_scans);
#undef FX
    return g_test_run();
}
