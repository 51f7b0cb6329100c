/* hyocr-gtk — texture ↔ image conversions. */
#include "hyocr-image-util.h"
#include "error.h"
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>

static inline guint8 unpremultiply(guint8 c, guint8 a)
{
    return a == 0 ? 0 : (guint8)MIN(255, ((unsigned)c * 255 + a / 2) / a);
}

hyocr_image *hyocr_image_from_texture(GdkTexture *texture, GError **error)
{
    int w = gdk_texture_get_width(texture), h = gdk_texture_get_height(texture);
    g_autoptr(hyocr_image) img = hyocr_image_new(w, h);
    g_autofree guint8 *bgra = g_try_malloc((gsize)w * h * 4);
    if (!img || !bgra) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("Not enough memory for a %d × %d image"), w, h);
        return NULL;
    }
    /* GDK_MEMORY_DEFAULT: B, G, R, A bytes, premultiplied. */
    gdk_texture_download(texture, bgra, (gsize)w * 4);
    for (gsize i = 0, n = (gsize)w * h; i < n; i++) {
        const guint8 *p = bgra + i * 4;
        img->rgb[i * 3 + 0] = unpremultiply(p[2], p[3]);
        img->rgb[i * 3 + 1] = unpremultiply(p[1], p[3]);
        img->rgb[i * 3 + 2] = unpremultiply(p[0], p[3]);
    }
    return g_steal_pointer(&img);
}

GdkTexture *hyocr_texture_from_image(const hyocr_image *img)
{
    gsize stride = (gsize)img->width * 3;
    g_autoptr(GBytes) bytes = g_bytes_new(img->rgb, stride * img->height);
    return gdk_memory_texture_new(img->width, img->height, GDK_MEMORY_R8G8B8, bytes, stride);
}

GdkTexture *hyocr_texture_thumbnail(const hyocr_image *img, int max_side)
{
    g_autoptr(hyocr_image) small = NULL;
    if (!hyocr_image_fit(img, max_side, 0, &small, NULL)) return NULL;
    return hyocr_texture_from_image(small ? small : img);
}

static hyocr_image *image_from_pixbuf(GdkPixbuf *pb)
{
    int w = gdk_pixbuf_get_width(pb), h = gdk_pixbuf_get_height(pb);
    int nch = gdk_pixbuf_get_n_channels(pb), stride = gdk_pixbuf_get_rowstride(pb);
    const guint8 *px = gdk_pixbuf_read_pixels(pb);
    hyocr_image *img = hyocr_image_new(w, h);
    if (!img) return NULL;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            memcpy(img->rgb + ((gsize)y * w + x) * 3, px + (gsize)y * stride + (gsize)x * nch, 3);
    return img;
}

/* The engine's max_side rule; out of memory keeps the full image (the engine
 * then shrinks it, or says why it cannot). */
static hyocr_image *prescale(hyocr_image *img, int max_side)
{
    hyocr_image *scaled = NULL;
    if (!hyocr_image_fit(img, max_side, 0, &scaled, NULL) || !scaled) return img;
    hyocr_image_free(img);
    return scaled;
}

/* Formats the engine does not read (WebP, GIF, BMP, TIFF…) still work when a
 * gdk-pixbuf loader exists. */
static hyocr_image *load_with_pixbuf(const char *path, int max_side)
{
    g_autoptr(GdkPixbuf) pb = gdk_pixbuf_new_from_file(path, NULL);
    if (!pb || gdk_pixbuf_get_bits_per_sample(pb) != 8 || gdk_pixbuf_get_n_channels(pb) < 3) return NULL;
    g_autoptr(GdkPixbuf) upright = gdk_pixbuf_apply_embedded_orientation(pb);
    hyocr_image *img = image_from_pixbuf(upright ? upright : pb);
    return img ? prescale(img, max_side) : NULL;
}

/* A PNG or JPEG the engine refused (corrupt, too large) must not get a second
 * chance through another decoder: the engine's refusal is the answer. */
static gboolean is_png_or_jpeg(const char *path)
{
    guint8 magic[4] = { 0 };
    FILE *f = fopen(path, "rb");
    if (!f) return FALSE;
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == 4 && ((magic[0] == 0x89 && magic[1] == 'P' && magic[2] == 'N' && magic[3] == 'G') ||
                      (magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF));
}

hyocr_image *hyocr_app_load_image(const char *path, int max_side, GError **error)
{
    hyocr_image_options opts = { .max_side = max_side };
    g_autoptr(GError) local = NULL;
    hyocr_image *img = hyocr_image_load(path, &opts, &local);
    if (img) return img;
    if (!is_png_or_jpeg(path)) img = load_with_pixbuf(path, max_side);
    if (img) return img;
    g_propagate_error(error, g_steal_pointer(&local));
    return NULL;
}
