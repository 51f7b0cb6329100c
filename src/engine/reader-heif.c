/* hyocr — HEIC and AVIF through libheif: the primary image, with the file's own rotation,
 * mirroring and crop applied (irot/imir/clap; the EXIF orientation a HEIF may also carry
 * describes the same turn and is not applied again), decoded to 8-bit RGB (alpha dropped,
 * 10/12-bit reduced, as heif-convert does for PNG). The size of the primary image, after
 * those transformations, is checked before decoding. Bursts and image sequences: the
 * primary image only. */
#include "error.h"
#include "i18n.h"
#include "reader.h"

#include <libheif/heif.h>
#include <string.h>

typedef struct {
    struct heif_context      *ctx;
    struct heif_image_handle *primary;
} heif_state;

static gpointer heif_setup(gpointer unused)
{
    heif_init(NULL);   /* registers the decoder plugins; kept for the life of the process */
    return NULL;
}

static void heif_close(void *state)
{
    heif_state *s = state;
    if (s->primary) heif_image_handle_release(s->primary);
    if (s->ctx) heif_context_free(s->ctx);
    g_free(s);
}

static void fail(struct heif_error e, const char *what, hyocr_decode_status *st)
{
    hyocr_decode_fail(st, e.code == heif_error_Memory_allocation_error ? HYOCR_ERROR_NO_MEMORY : HYOCR_ERROR_IMAGE,
                      _("invalid HEIF/AVIF: %s (libheif: %s)"), what, e.message);
}

static void *heif_open(GBytes *bytes, const uint8_t *data, size_t len, const hyocr_document_options *opts,
                       int *n_pages, hyocr_decode_status *st)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, heif_setup, NULL);
    heif_state *s = g_new0(heif_state, 1);
    s->ctx = heif_context_alloc();
    struct heif_error e = heif_context_read_from_memory_without_copy(s->ctx, data, len, NULL);
    if (e.code == heif_error_Ok) e = heif_context_get_primary_image_handle(s->ctx, &s->primary);
    /* libheif finds a missing or dangling primary item ('pitm') while reading the structure. */
    bool no_primary = e.subcode == heif_suberror_No_pitm_box || e.subcode == heif_suberror_No_or_invalid_primary_item ||
                      (e.subcode == heif_suberror_Nonexisting_item_referenced && strstr(e.message, "pitm"));
    if (e.code != heif_error_Ok && !no_primary) {
        fail(e, _("cannot read its structure"), st);
        heif_close(s);
        return NULL;
    }
    if (e.code != heif_error_Ok) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("the HEIF/AVIF file has no primary image to show (libheif: %s)"),
                          e.message);
        heif_close(s);
        return NULL;
    }
    int w = heif_image_handle_get_width(s->primary), h = heif_image_handle_get_height(s->primary);
    if (!hyocr_decode_check_size(st, "HEIF", w, h)) {
        heif_close(s);
        return NULL;
    }
    *n_pages = 1;
    return s;
}

static hyocr_image *copy_rows(const struct heif_image *him, hyocr_decode_status *st)
{
    int w = heif_image_get_width(him, heif_channel_interleaved);
    int h = heif_image_get_height(him, heif_channel_interleaved);
    int stride = 0;
    const uint8_t *px = heif_image_get_plane_readonly(him, heif_channel_interleaved, &stride);
    if (!px || w < 1 || h < 1 || stride < w * 3) {
        hyocr_decode_fail(st, HYOCR_ERROR_IMAGE, _("invalid HEIF/AVIF: the decoder returned no RGB image"));
        return NULL;
    }
    if (!hyocr_decode_check_size(st, "HEIF", w, h)) return NULL;
    hyocr_image *img = hyocr_image_new(w, h);
    if (!img) {
        hyocr_decode_fail(st, HYOCR_ERROR_NO_MEMORY, _("out of memory decoding a %d×%d image"), w, h);
        return NULL;
    }
    for (int y = 0; y < h; y++)
        memcpy(img->rgb + (size_t)y * w * 3, px + (size_t)y * stride, (size_t)w * 3);
    return img;
}

static hyocr_image *heif_render(void *state, int page, const hyocr_render_options *ro, int *orientation,
                                hyocr_decode_status *st)
{
    heif_state *s = state;
    struct heif_decoding_options *o = heif_decoding_options_alloc();
    o->convert_hdr_to_8bit = 1;
    struct heif_image *him = NULL;
    struct heif_error e = heif_decode_image(s->primary, &him, heif_colorspace_RGB, heif_chroma_interleaved_RGB, o);
    heif_decoding_options_free(o);
    if (e.code != heif_error_Ok) {
        fail(e, _("cannot decode the primary image"), st);
        return NULL;
    }
    hyocr_image *img = copy_rows(him, st);
    heif_image_release(him);
    *orientation = 0;
    return img;
}

static bool heif_page_size(void *state, int page, double *width, double *height, hyocr_decode_status *st)
{
    heif_state *s = state;
    *width = heif_image_handle_get_width(s->primary);
    *height = heif_image_handle_get_height(s->primary);
    return true;
}

const hyocr_reader hyocr_reader_heif = {
    .format = HYOCR_FORMAT_HEIF, .open = heif_open, .close = heif_close, .render = heif_render,
    .page_size = heif_page_size,
};
