/* hyocr-gtk — the image preview, scaled to fit, with the spotting boxes drawn
 * over it (coordinates normalised to 0…1000) and one of them highlighted. */
#pragma once
#include "hyocr-spotting.h"
#include <gtk/gtk.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_IMAGE_VIEW (hyocr_image_view_get_type())
G_DECLARE_FINAL_TYPE(HyocrImageView, hyocr_image_view, HYOCR, IMAGE_VIEW, GtkWidget)

void        hyocr_image_view_set_texture(HyocrImageView *self, GdkTexture *texture);
/* lines: HyocrSpotLine items (kept by reference), or NULL for none. */
void        hyocr_image_view_set_lines(HyocrImageView *self, GPtrArray *lines);
void        hyocr_image_view_set_highlight(HyocrImageView *self, int index);   /* -1: none */
int         hyocr_image_view_get_highlight(HyocrImageView *self);

G_END_DECLS
