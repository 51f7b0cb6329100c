/* hyocr — WebP through libwebp: lossy, lossless, with or without alpha (dropped, as by
 * Pillow's convert("RGB") and `dwebp -ppm`), decoded straight into the page's RGB rows.
 * The size comes from the header (VP8X canvas, or the VP8/VP8L frame) and is checked
 * before decoding; a header that lies about it makes the decode fail, never over-allocate.
 * Animated WebP is refused: which frame would be the page? An EXIF orientation inside a
 * WebP is not applied (dwebp ignores it too). */
#include "error.h"
#include "i18n.h"
#include "reader.h"

#include <webp/decode.h>

typedef struct {
    const uint8_t *data;
    size_t         len;
} webp_state;

static void status_fail(VP8StatusCode code, size_t len, hyocr_decode_status *st)
{
    switch (code) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("WebP file is truncated (%zu bytes, data ends before the image "
                          "does); the file is incomplete — download or export it again"), len);
        break;
    case VP8_STATUS_OUT_OF_MEMORY:
        hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a WebP image"));
        break;
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("unsupported WebP feature (libwebp %d.%d.%d cannot decode it)"),
                          WebPGetDecoderVersion() >> 16, (WebPGetDecoderVersion() >> 8) & 0xFF,
                          WebPGetDecoderVersion() & 0xFF);
        break;
    default:
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("invalid WebP: the image data do not match the header "
                          "(libwebp status %d)"), (int)code);
        break;
    }
}

static void *webp_open(GBytes *bytes, const uint8_t *data, size_t len, const hyocr_document_options *opts,
                       int *n_pages, hyocr_decode_status *st)
{
    WebPBitstreamFeatures f;
    VP8StatusCode code = WebPGetFeatures(data, len, &f);
    if (code != VP8_STATUS_OK) {
        status_fail(code, len, st);
        return NULL;
    }
    if (f.has_animation) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("animated WebP: save the frame to read as a still image first"));
        return NULL;
    }
    if (!hyocr_decode_check_size(st, "WebP", f.width, f.height)) return NULL;
    webp_state *s = g_new(webp_state, 1);
    s->data = data;
    s->len = len;
    *n_pages = 1;
    return s;
}

static hyocr_image *webp_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                                hyocr_decode_status *st)
{
    webp_state *s = state;
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("libwebp version mismatch"));
        return NULL;
    }
    VP8StatusCode code = WebPGetFeatures(s->data, s->len, &config.input);
    if (code != VP8_STATUS_OK) {
        status_fail(code, s->len, st);
        return NULL;
    }
    int w = config.input.width, h = config.input.height;
    if (!hyocr_decode_check_size(st, "WebP", w, h)) return NULL;
    hyocr_image *img = hyocr_image_new(w, h);
    if (!img) {
        hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a %d×%d image"), w, h);
        return NULL;
    }
    config.output.colorspace = MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = img->rgb;
    config.output.u.RGBA.stride = w * 3;
    config.output.u.RGBA.size = (size_t)w * h * 3;
    code = WebPDecode(s->data, s->len, &config);
    WebPFreeDecBuffer(&config.output);   /* external memory: frees nothing of ours */
    if (code != VP8_STATUS_OK) {
        status_fail(code, s->len, st);
        hyocr_image_free(img);
        return NULL;
    }
    *orientation = 0;
    return img;
}

static bool webp_page_size(void *state, int page, double *width, double *height, hyocr_decode_status *st)
{
    webp_state *s = state;
    int w, h;
    if (!WebPGetInfo(s->data, s->len, &w, &h)) {
        status_fail(VP8_STATUS_BITSTREAM_ERROR, s->len, st);
        return false;
    }
    *width = w;
    *height = h;
    return true;
}

const hyocr_reader hyocr_reader_webp = {
    .format = HYOCR_FORMAT_WEBP, .open = webp_open, .close = g_free, .render = webp_render,
    .page_size = webp_page_size,
};
