/* hyocr — image decoding: PNG (libpng) and JPEG (libjpeg-turbo) to packed RGB8, matching
 * Pillow's Image.open(p).convert("RGB") (spec §3.1), plus EXIF orientation.
 *
 * Deliberate departures from the reference (which is plain Pillow):
 *  - 16-bit grayscale PNG: Pillow opens it as "I;16" and convert("RGB") clips every value
 *    above 255 to white, so scans come out blank. We keep the high byte instead, as Pillow
 *    itself does for 16-bit RGB/RGBA/LA ("RGB;16B" unpacking).
 *  - EXIF orientation (JPEG APP1 Exif, PNG eXIf) is applied unless ignore_exif is set, so
 *    phone photos reach the model upright. The reference ignores it.
 *  - A JPEG whose data runs out before the last scanline is an error. libjpeg would pad the
 *    rest with gray and only warn; Pillow fails too ("image file is truncated") because its
 *    suspending source never gets more data, so this matches the reference. Running out only
 *    while libjpeg looks for the final EOI, after every scanline, is accepted as by Pillow
 *    (the Huffman read-ahead usually notices a missing EOI earlier; both then refuse).
 * Other libjpeg warnings (corrupt data inside a scan) are ignored, as Pillow ignores them. */
#include "image.h"
#include "hostmem.h"
#include "error.h"
#include "i18n.h"
#include "reader.h"

#include <stdio.h>   /* jpeglib.h needs FILE */
#include <jpeglib.h>
#include <jerror.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <string.h>

/* What a decoder may hold before it has read the data that fills it: the RGB buffer
 * (zeroed by calloc, so its pages cost nothing until rows land in them) and working
 * memory up to this much (libpng's two row buffers, libjpeg's iMCU rows, zlib), checked
 * from the header. The one whole-image working buffer, a multi-scan JPEG's coefficients,
 * which its scans fill before any pixel exists, comes instead of the RGB buffer (that is
 * allocated after the scans are read) and is held to the RGB buffer of the largest image
 * allowed: 3 bytes × the pixel limit. */
#define DECODE_WORK_LIMIT (32 << 20)

hyocr_image *hyocr_image_new(int width, int height)
{
    if (width < 1 || height < 1 || (size_t)width > SIZE_MAX / 3 / (size_t)height)
        return NULL;
    const size_t bytes = (size_t)width * (size_t)height * 3;
    uint8_t *rgb = g_try_malloc0(bytes);
    if (!rgb) return NULL;
    hyocr_host_advise_huge(rgb, bytes);
    hyocr_image *img = g_new0(hyocr_image, 1);
    img->width = width;
    img->height = height;
    img->rgb = rgb;
    return img;
}

void hyocr_image_free(hyocr_image *img)
{
    if (!img) return;
    g_free(img->rgb);
    g_free(img);
}

/* ------------------------------------------------------------------------ shared checks */

typedef hyocr_decode_status decode_status;

static void status_set(decode_status *st, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void status_set(decode_status *st, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    st->code = code;
}

/* Runs on the header values before any pixel memory exists, so a decompression bomb costs
 * nothing but the header read. */
static bool check_size(decode_status *st, const char *kind, int64_t w, int64_t h)
{
    if (w < 1 || h < 1) {
        status_set(st, HYOCR_ERROR_IMAGE, _("%s header gives an empty image (%lld×%lld)"), kind, (long long)w,
                   (long long)h);
        return false;
    }
    if (w > INT_MAX || h > INT_MAX || w > INT64_MAX / h) {
        status_set(st, HYOCR_ERROR_IMAGE, _("%s header gives an impossible size %lld×%lld"), kind, (long long)w,
                   (long long)h);
        return false;
    }
    if (w * h > st->limit) {
        status_set(st, HYOCR_ERROR_IMAGE,
                   _("image is %lld×%lld (%lld pixels), over the limit of %lld pixels (decompression-bomb guard); "
                     "make it smaller with an image editor first"),
                   (long long)w, (long long)h, (long long)(w * h), (long long)st->limit);
        return false;
    }
    if ((uint64_t)w * (uint64_t)h > SIZE_MAX / 4) {
        status_set(st, HYOCR_ERROR_NO_MEMORY, _("image is %lld×%lld, too large for this machine's address space"),
                   (long long)w, (long long)h);
        return false;
    }
    return true;
}

/* Working memory computed from the header (see DECODE_WORK_LIMIT). */
static bool check_work(decode_status *st, const char *kind, int64_t w, int64_t h, uint64_t work, const char *what)
{
    if (work <= DECODE_WORK_LIMIT)
        return true;
    g_autofree char *need = g_format_size(work), *limit = g_format_size(DECODE_WORK_LIMIT);
    status_set(st, HYOCR_ERROR_IMAGE,
               _("%s of %lld×%lld needs %s for %s before its pixel data, more than the %s a decoder may take ahead "
                 "of the data; not a usable image"),
               kind, (long long)w, (long long)h, need, what, limit);
    return false;
}

static void status_no_memory(decode_status *st, int w, int h)
{
    status_set(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a %d×%d image"), w, h);
}

/* ------------------------------------------------------------------------ PNG */

/* libpng's progressive (push) reader is used because, like Pillow's own chunk reader, it hands
 * out each row as soon as its data has been inflated: a file cut inside its trailer (IDAT CRC,
 * zlib checksum, IEND) still yields every pixel, and Pillow accepts such files. A file cut
 * before the last row is an error. */
typedef struct {
    decode_status  st;
    bool           interlaced;
    bool           rows_done;   /* every pixel row is in; later chunk trouble is harmless */
    png_structp    png;
    png_infop      info;
    hyocr_image   *img;         /* libpng writes RGB rows straight into it */
} png_dec;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_dec *d = png_get_error_ptr(png);
    if (!d->st.msg[0])
        status_set(&d->st, HYOCR_ERROR_IMAGE, _("invalid PNG: %s"), msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    /* Ancillary-chunk complaints (bad iCCP, CRC of a text chunk) do not change the pixels. */
    g_debug("libpng: %s", msg);
}

/* Gray row → RGB by replication (Pillow's L→RGB), in place: it walks backwards. */
static void gray_to_rgb(uint8_t *row, int w)
{
    for (int x = w - 1; x >= 0; x--)
        row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = row[x];
}

/* Transformations giving 8-bit RGB whatever the file holds, so every row lands in the image
 * as it is: no buffer beside it, not even for Adam7. Alpha is dropped, not composited
 * (Pillow's RGBA→RGB and LA→RGB); gray is replicated. */
static void png_setup_transforms(png_structp png, png_infop info)
{
    int color = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);   /* v·255/(2^d−1), Pillow's "1", "L;2", "L;4" */
    if (depth == 16)
        png_set_strip_16(png);                 /* high byte, Pillow's "RGB;16B" (not scale_16) */
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png);              /* the palette's tRNS would expand to alpha */
    if (!(color & PNG_COLOR_MASK_COLOR))
        png_set_gray_to_rgb(png);
}

/* libpng's two row buffers (current and previous row) at the widest pixel any transform
 * passes through (16-bit RGBA, 8 bytes), rounded to whole bytes of 8 pixels, plus their
 * filter byte and padding. */
static uint64_t png_row_work(int64_t w)
{
    return 2 * (8 * ((uint64_t)w + 7) + 64);
}

static void png_on_info(png_structp png, png_infop info)
{
    png_dec *d = png_get_progressive_ptr(png);
    int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (!check_size(&d->st, "PNG", w, h))
        png_error(png, d->st.msg);
    if (!check_work(&d->st, "PNG", w, h, png_row_work(w), _("its row buffers")))
        png_error(png, d->st.msg);
    png_setup_transforms(png, info);
    d->interlaced = png_set_interlace_handling(png) > 1;
    png_read_update_info(png, info);   /* libpng allocates its row buffers here */
    int channels = png_get_channels(png, info);
    if (png_get_bit_depth(png, info) != 8 || channels != 3 || png_get_rowbytes(png, info) != (size_t)w * 3) {
        status_set(&d->st, HYOCR_ERROR_IMAGE, _("unsupported PNG layout (%d channels, %d bits)"),
                   channels, png_get_bit_depth(png, info));
        png_error(png, d->st.msg);
    }
    d->img = hyocr_image_new((int)w, (int)h);
    if (!d->img) {
        status_no_memory(&d->st, (int)w, (int)h);
        png_error(png, d->st.msg);
    }
}

/* For Adam7, libpng calls back for every image row in every pass (row NULL when the pass has
 * nothing new for it), padding small images with empty calls, so the image is complete when
 * the last row of pass 6 has been announced. */
static void png_on_row(png_structp png, png_bytep row, png_uint_32 y, int pass)
{
    png_dec *d = png_get_progressive_ptr(png);
    if (!d->img || y >= (png_uint_32)d->img->height)
        return;
    if (row)   /* Adam7: merges this pass's pixels into what the earlier passes left */
        png_progressive_combine_row(png, d->img->rgb + (size_t)y * d->img->width * 3, row);
    if (y == (png_uint_32)d->img->height - 1 && (!d->interlaced || pass == 6))
        d->rows_done = true;
}

/* Only this function holds the setjmp; all state it changes lives in *d (the caller's frame),
 * so nothing is indeterminate after a longjmp. */
static bool png_run(png_dec *d, const uint8_t *data, size_t len)
{
    if (setjmp(png_jmpbuf(d->png)))
        return false;
    png_set_progressive_read_fn(d->png, d, png_on_info, png_on_row, NULL);
    png_set_user_limits(d->png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);  /* our pixel limit speaks */
    png_process_data(d->png, d->info, (png_bytep)data, len);        /* only reads the buffer */
    return true;
}

/* libpng's push reader treats eXIf as an unknown chunk, so walk the chunk list directly. */
static int png_orientation(const uint8_t *data, size_t len)
{
    size_t at = 8;
    while (len >= 12 && at <= len - 12) {
        uint32_t n = (uint32_t)data[at] << 24 | (uint32_t)data[at + 1] << 16 |
                     (uint32_t)data[at + 2] << 8 | data[at + 3];
        const uint8_t *type = data + at + 4;
        if (n > len - at - 12)
            return 0;
        if (memcmp(type, "eXIf", 4) == 0)
            return hyocr_exif_orientation(data + at + 8, n);
        if (memcmp(type, "IEND", 4) == 0)
            return 0;
        at += (size_t)n + 12;
    }
    return 0;
}

static hyocr_image *decode_png(const uint8_t *data, size_t len, decode_status *st, int *orientation)
{
    png_dec d = { .st = *st };
    /* The push reader announces the header only at the first IDAT; refuse a bomb from the IHDR
     * right away, even when nothing follows it. */
    if (len >= 24 && memcmp(data + 12, "IHDR", 4) == 0) {
        int64_t w = (int64_t)data[16] << 24 | data[17] << 16 | data[18] << 8 | data[19];
        int64_t h = (int64_t)data[20] << 24 | data[21] << 16 | data[22] << 8 | data[23];
        if (!check_size(st, "PNG", w, h) || !check_work(st, "PNG", w, h, png_row_work(w), _("its row buffers")))
            return NULL;
    }
    d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d, png_on_error, png_on_warning);
    d.info = d.png ? png_create_info_struct(d.png) : NULL;
    if (!d.info)
        status_set(&d.st, HYOCR_ERROR_NO_MEMORY, _("out of memory starting the PNG decoder"));
    bool ran = d.info && png_run(&d, data, len);
    bool ok = d.rows_done;   /* damage after the last row (trailer, IEND) is ignored, as by Pillow */
    if (ran && !ok)
        status_set(&d.st, HYOCR_ERROR_IMAGE, _("PNG file is truncated (%zu bytes, data ends before the "
                     "image does); the file is incomplete — download or export it again"), len);
    if (ok)
        *orientation = png_orientation(data, len);
    png_destroy_read_struct(d.png ? &d.png : NULL, d.info ? &d.info : NULL, NULL);
    *st = d.st;
    if (!ok) {
        hyocr_image_free(d.img);
        return NULL;
    }
    return d.img;
}

/* ------------------------------------------------------------------------ JPEG */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf               jb;
    bool                  truncated;
    bool                  finishing;   /* all scanlines read; only the EOI is left */
} jpeg_err;

/* Every scan of a progressive file is a pass over all of its coefficients, and a scan costs
 * a few bytes: a small file of many scans holds the CPU for minutes. Encoders write about
 * ten (libjpeg's simple progression) to twenty; TurboJPEG refuses more than 500. */
#define JPEG_MAX_SCANS 100

typedef struct {
    decode_status                 st;
    struct jpeg_decompress_struct cinfo;
    jpeg_err                      err;
    struct jpeg_progress_mgr      progress;
    bool                          created;
    uint8_t                      *row;
    hyocr_image                  *img;
    int                           orientation;
} jpeg_dec;

static void jpeg_on_error(j_common_ptr cinfo)
{
    longjmp(((jpeg_err *)cinfo->err)->jb, 1);
}

/* libjpeg reports running out of data only as a warning and then feeds a fake EOI, which
 * fills the rest of the picture with gray. Missing pixels are an error here. */
static void jpeg_on_message(j_common_ptr cinfo, int level)
{
    jpeg_err *e = (jpeg_err *)cinfo->err;
    if (level < 0)
        e->pub.num_warnings++;
    if (level < 0 && e->pub.msg_code == JWRN_JPEG_EOF && !e->finishing) {
        e->truncated = true;
        longjmp(e->jb, 1);
    }
}

/* libjpeg calls it as it reads the scans of a multi-scan file (jpeg_start_decompress). */
static void jpeg_on_progress(j_common_ptr cinfo)
{
    j_decompress_ptr c = (j_decompress_ptr)cinfo;
    jpeg_dec *d = cinfo->client_data;
    if (c->input_scan_number <= JPEG_MAX_SCANS)
        return;
    status_set(&d->st, HYOCR_ERROR_IMAGE, _("JPEG has more than %d scans, each a pass over the whole image; "
               "not a usable image (photos have about ten)"), JPEG_MAX_SCANS);
    longjmp(d->err.jb, 1);
}

static int jpeg_find_orientation(j_decompress_ptr cinfo)
{
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0)
            return hyocr_exif_orientation(m->data, m->data_length);
    return 0;
}

/* Pillow opens 4-component JPEGs as "CMYK;I" (Adobe's inverted polarity assumed, whether or
 * not an Adobe marker is present) and convert("RGB") then computes, per channel,
 * nk − nk·C'/255 with nk = 255 − K' in its rounded 8-bit form (Convert.c cmyk2rgb). With the
 * inversion folded in, nk is the raw K sample and C' = 255 − raw C. */
static inline uint8_t cmyk_channel(int c_inv, int nk)
{
    int t = c_inv * nk + 128;
    int v = nk - (((t >> 8) + t) >> 8);
    return (uint8_t)CLAMP(v, 0, 255);
}

static void cmyk_row_to_rgb(uint8_t *dst, const uint8_t *src, int w)
{
    for (int x = 0; x < w; x++, src += 4, dst += 3) {
        int nk = src[3];
        dst[0] = cmyk_channel(255 - src[0], nk);
        dst[1] = cmyk_channel(255 - src[1], nk);
        dst[2] = cmyk_channel(255 - src[2], nk);
    }
}

/* libjpeg defaults are what Pillow decodes with (JpegDecode.c only changes them in draft mode):
 * JDCT_ISLOW, fancy upsampling on, block smoothing left at its default. */
static bool jpeg_choose_output(jpeg_dec *d)
{
    struct jpeg_decompress_struct *c = &d->cinfo;
    switch (c->num_components) {
    case 1: c->out_color_space = JCS_GRAYSCALE; return true;
    case 3: c->out_color_space = JCS_RGB; return true;
    case 4: c->out_color_space = JCS_CMYK; return true;   /* libjpeg turns YCCK into CMYK */
    default:
        status_set(&d->st, HYOCR_ERROR_IMAGE, _("unsupported JPEG with %d colour components"),
                   c->num_components);
        return false;
    }
}

/* The whole-image coefficient buffer libjpeg reads every scan into before it outputs a pixel,
 * when there is more than one scan (progressive, or components in separate scans); a
 * single-scan file is decoded a row of blocks at a time. Sized as jdcoefct.c requests it. */
static uint64_t jpeg_coef_bytes(const struct jpeg_decompress_struct *c)
{
    if (!c->progressive_mode && c->comps_in_scan >= c->num_components)
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < c->num_components; i++) {
        const jpeg_component_info *ci = &c->comp_info[i];
        uint64_t bw = (ci->width_in_blocks + ci->h_samp_factor - 1) / ci->h_samp_factor * ci->h_samp_factor;
        uint64_t bh = (ci->height_in_blocks + ci->v_samp_factor - 1) / ci->v_samp_factor * ci->v_samp_factor;
        total += bw * bh * sizeof(JBLOCK);
    }
    return total;
}

/* See DECODE_WORK_LIMIT. libjpeg is told the same bound (max_memory_to_use), so a
 * miscount here makes it fail (no backing store) rather than allocate. */
static bool jpeg_check_coefs(jpeg_dec *d)
{
    struct jpeg_decompress_struct *c = &d->cinfo;
    uint64_t coefs = jpeg_coef_bytes(c), limit = 3 * (uint64_t)d->st.limit;
    if (coefs > limit) {
        g_autofree char *need = g_format_size(coefs), *have = g_format_size(limit);
        /* Translators: the first %s is "progressive" or "multi-scan" */
        status_set(&d->st, HYOCR_ERROR_IMAGE,
                   _("%s JPEG of %u×%u needs %s for its coefficients before it has a pixel, more than the %s of the "
                     "largest image allowed (%lld pixels); make it smaller with an image editor first"),
                   c->progressive_mode ? _("progressive") : _("multi-scan"), c->image_width, c->image_height,
                   need, have, (long long)d->st.limit);
        return false;
    }
    c->mem->max_memory_to_use = (long)MIN(coefs + DECODE_WORK_LIMIT, (uint64_t)LONG_MAX);
    return true;
}

static bool jpeg_run(jpeg_dec *d, const uint8_t *data, size_t len)
{
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->err.jb))
        return false;
    jpeg_mem_src(c, data, (unsigned long)len);
    jpeg_save_markers(c, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(c, TRUE);
    if (!check_size(&d->st, "JPEG", c->image_width, c->image_height) || !jpeg_choose_output(d) ||
        !jpeg_check_coefs(d))
        return false;
    d->orientation = jpeg_find_orientation(c);
    jpeg_start_decompress(c);   /* reads every scan of a multi-scan file into the coefficients */
    int w = (int)c->output_width, comps = c->output_components;
    d->img = hyocr_image_new(w, (int)c->output_height);
    d->row = comps == 4 ? g_try_malloc((size_t)w * 4) : NULL;
    if (!d->img || (comps == 4 && !d->row)) {
        status_no_memory(&d->st, w, (int)c->output_height);
        return false;
    }
    while (c->output_scanline < c->output_height) {
        uint8_t *out = d->img->rgb + (size_t)c->output_scanline * w * 3;
        JSAMPROW row = comps == 4 ? d->row : out;
        if (jpeg_read_scanlines(c, &row, 1) != 1)
            break;
        if (comps == 1)
            gray_to_rgb(out, w);
        else if (comps == 4)
            cmyk_row_to_rgb(out, d->row, w);
    }
    d->err.finishing = true;
    jpeg_finish_decompress(c);
    return true;
}

static hyocr_image *decode_jpeg(const uint8_t *data, size_t len, decode_status *st, int *orientation)
{
    jpeg_dec *d = g_new0(jpeg_dec, 1);   /* jmp_buf + cinfo: too big to want on the stack */
    d->st = *st;
    d->cinfo.err = jpeg_std_error(&d->err.pub);
    d->err.pub.error_exit = jpeg_on_error;
    d->err.pub.emit_message = jpeg_on_message;
    d->progress.progress_monitor = jpeg_on_progress;
    bool ok = false;
    if (!setjmp(d->err.jb)) {   /* jpeg_create_decompress can fail (out of memory) */
        jpeg_create_decompress(&d->cinfo);
        d->created = true;
        d->cinfo.client_data = d;
        d->cinfo.progress = &d->progress;
        ok = jpeg_run(d, data, len);
    }
    if (!ok && d->err.truncated) {
        status_set(&d->st, HYOCR_ERROR_IMAGE, _("JPEG file is truncated (%zu bytes, data ends before "
                     "the image does); the file is incomplete — download or export it again"), len);
    } else if (!ok && !d->st.msg[0] && d->err.pub.msg_code == JERR_NO_BACKING_STORE) {
        status_set(&d->st, HYOCR_ERROR_IMAGE, _("JPEG needs more memory to decode than its header accounts for; "
                     "not a usable image"));
    } else if (!ok && !d->st.msg[0]) {
        char text[JMSG_LENGTH_MAX];
        d->err.pub.format_message((j_common_ptr)&d->cinfo, text);
        status_set(&d->st, HYOCR_ERROR_IMAGE, _("invalid JPEG: %s"), text);
    }
    if (d->created)
        jpeg_destroy_decompress(&d->cinfo);
    hyocr_image *img = ok ? d->img : NULL;
    if (!ok)
        hyocr_image_free(d->img);
    *orientation = d->orientation;
    *st = d->st;
    g_free(d->row);
    g_free(d);
    return img;
}

/* ------------------------------------------------------------------------ EXIF */

static uint32_t exif_u16(const uint8_t *p, bool le) { return le ? p[0] | p[1] << 8 : p[0] << 8 | p[1]; }
static uint32_t exif_u32(const uint8_t *p, bool le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
              : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int hyocr_exif_orientation(const uint8_t *data, size_t len)
{
    if (!data) return 0;
    if (len >= 6 && memcmp(data, "Exif\0\0", 6) == 0) {
        data += 6;
        len -= 6;
    }
    if (len < 8) return 0;
    bool le;
    if (memcmp(data, "II*\0", 4) == 0) le = true;
    else if (memcmp(data, "MM\0*", 4) == 0) le = false;
    else return 0;
    uint32_t ifd = exif_u32(data + 4, le);
    if (ifd > len - 2) return 0;
    uint32_t n = exif_u16(data + ifd, le);
    for (uint32_t i = 0; i < n; i++) {
        size_t at = (size_t)ifd + 2 + (size_t)i * 12;
        if (at + 12 > len) return 0;
        const uint8_t *e = data + at;
        if (exif_u16(e, le) != 0x0112) continue;
        uint32_t type = exif_u16(e + 2, le), count = exif_u32(e + 4, le);
        if (count < 1) return 0;
        /* SHORT is the standard type; some writers use LONG. Either sits in the value field. */
        uint32_t v = type == 3 ? exif_u16(e + 8, le) : type == 4 ? exif_u32(e + 8, le) : 0;
        return v >= 1 && v <= 8 ? (int)v : 0;
    }
    return 0;
}

/* Source pixel for output (x, y) of an image turned upright: for orientations 5–8 the output
 * is the source transposed in size (out w = src h). Names as in Pillow's exif_transpose. */
static inline void orient_source(int o, int x, int y, int sw, int sh, int *sx, int *sy)
{
    switch (o) {
    case 2: *sx = sw - 1 - x; *sy = y; break;                   /* mirror left-right */
    case 3: *sx = sw - 1 - x; *sy = sh - 1 - y; break;          /* rotate 180 */
    case 4: *sx = x; *sy = sh - 1 - y; break;                   /* mirror top-bottom */
    case 5: *sx = y; *sy = x; break;                            /* transpose */
    case 6: *sx = y; *sy = sh - 1 - x; break;                   /* rotate 90 clockwise */
    case 7: *sx = sw - 1 - y; *sy = sh - 1 - x; break;          /* transverse */
    case 8: *sx = sw - 1 - y; *sy = x; break;                   /* rotate 90 counter-clockwise */
    default: *sx = x; *sy = y; break;
    }
}

hyocr_image *hyocr_image_orient(const hyocr_image *src, int orientation)
{
    bool swap = orientation >= 5 && orientation <= 8;
    int w = swap ? src->height : src->width, h = swap ? src->width : src->height;
    hyocr_image *out = hyocr_image_new(w, h);
    if (!out) return NULL;
    if (orientation < 2 || orientation > 8) {
        memcpy(out->rgb, src->rgb, (size_t)w * h * 3);
        return out;
    }
    for (int y = 0; y < h; y++) {
        uint8_t *d = out->rgb + (size_t)y * w * 3;
        for (int x = 0; x < w; x++, d += 3) {
            int sx, sy;
            orient_source(orientation, x, y, src->width, src->height, &sx, &sy);
            memcpy(d, src->rgb + ((size_t)sy * src->width + sx) * 3, 3);
        }
    }
    return out;
}

/* ------------------------------------------------------------------------ entry points */

hyocr_image *hyocr_image_upright(hyocr_image *img, int orientation, const char *name, GError **error)
{
    if (orientation < 2 || orientation > 8) return img;
    hyocr_image *up = hyocr_image_orient(img, orientation);
    hyocr_image_free(img);
    if (!up)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("%s: out of memory turning the image upright"),
                    name);
    return up;
}

/* Every format goes through the document readers; a PNG or JPEG is a document of one page
 * whose render is decode_png / decode_jpeg above. A document's first page for the others. */
hyocr_image *hyocr_image_load_from_memory(const void *data, size_t len, const char *name,
                                          const hyocr_image_options *opts, GError **error)
{
    static const hyocr_image_options defaults = { 0 };
    if (!opts) opts = &defaults;
    if (!name) name = "(image in memory)";
    if (!data || len == 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE, _("%s: file is empty (0 bytes)"), name);
        return NULL;
    }
    g_autoptr(GBytes) bytes = g_bytes_new_static(data, len);
    hyocr_document_options dopts = { .max_decode_pixels = opts->max_decode_pixels, .ignore_exif = opts->ignore_exif };
    g_autoptr(hyocr_document) doc = hyocr_document_open_bytes(bytes, name, &dopts, error);
    if (!doc) return NULL;
    hyocr_render_options ro = { .max_side = opts->max_side, .resize_threads = opts->resize_threads };
    return hyocr_document_render(doc, 0, &ro, error);
}

hyocr_image *hyocr_image_load(const char *path, const hyocr_image_options *opts, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, &err);
    if (!map) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot read the image file (%s)"), path,
                    err->message);
        return NULL;
    }
    return hyocr_image_load_from_memory(g_mapped_file_get_contents(map), g_mapped_file_get_length(map),
                                        path, opts, error);
}

/* ------------------------------------------------------------------------ as readers */

bool hyocr_decode_check_size(hyocr_decode_status *st, const char *kind, int64_t width, int64_t height)
{
    return check_size(st, kind, width, height);
}

typedef struct {
    const uint8_t *data;
    size_t         len;
} raster_state;

static void *raster_open(GBytes *bytes, const uint8_t *data, size_t len, const hyocr_document_options *opts,
                         int *n_pages, hyocr_decode_status *st)
{
    raster_state *s = g_new(raster_state, 1);
    s->data = data;
    s->len = len;
    *n_pages = 1;
    return s;
}

static hyocr_image *png_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                               hyocr_decode_status *st)
{
    raster_state *s = state;
    return decode_png(s->data, s->len, st, orientation);
}

static hyocr_image *jpeg_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                                hyocr_decode_status *st)
{
    raster_state *s = state;
    return decode_jpeg(s->data, s->len, st, orientation);
}

const hyocr_reader hyocr_reader_png = {
    .format = HYOCR_FORMAT_PNG, .open = raster_open, .close = g_free, .render = png_render,
};

const hyocr_reader hyocr_reader_jpeg = {
    .format = HYOCR_FORMAT_JPEG, .open = raster_open, .close = g_free, .render = jpeg_render,
};

/* ---- PNG encoding ------------------------------------------------------------------------ */

GBytes *hyocr_image_encode_png(const hyocr_image *img, GError **error)
{
    png_image pi = { .version = PNG_IMAGE_VERSION, .width = (png_uint_32)img->width,
                     .height = (png_uint_32)img->height, .format = PNG_FORMAT_RGB };
    png_alloc_size_t size = 0;
    /* first the size, then the bytes: libpng's simplified API writes to memory in two passes */
    if (png_image_write_get_memory_size(pi, size, 0, img->rgb, 3 * img->width, NULL)) {
        void *buf = g_try_malloc(size);
        if (buf && png_image_write_to_memory(&pi, buf, &size, 0, img->rgb, 3 * img->width, NULL))
            return g_bytes_new_take(buf, size);
        g_free(buf);
    }
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE, _("a %d×%d image could not be encoded as PNG: %s"),
                img->width, img->height, pi.message[0] ? pi.message : _("out of memory"));
    png_image_free(&pi);
    return NULL;
}
