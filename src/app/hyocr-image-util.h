/* hyocr-gtk — moving pixels between GDK textures and the engine's RGB images. */
#pragma once
#include "hyocr.h"
#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Straight (not premultiplied) RGB, alpha dropped like Pillow's convert("RGB"). */
hyocr_image *hyocr_image_from_texture(GdkTexture *texture, GError **error);
/* An immutable memory texture; safe to call on any thread. */
GdkTexture  *hyocr_texture_from_image(const hyocr_image *img);
/* The same, shrunk so its long side is at most max_side (any thread). */
GdkTexture  *hyocr_texture_thumbnail(const hyocr_image *img, int max_side);

G_END_DECLS
