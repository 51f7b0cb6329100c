/* hyocr-gtk — texture ↔ image conversions. */
#include "hyocr-image-util.h"
#include "error.h"
#include <glib/gi18n.h>
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
