/* hyocr-gtk — what the tests read of the image view. */
#pragma once
#include "hyocr-image-view.h"

G_BEGIN_DECLS

guint    hyocr_image_view_get_n_boxes(HyocrImageView *self);
/* Where box `index` is drawn, in widget coordinates; FALSE when there is no such box. */
gboolean hyocr_image_view_get_box_bounds(HyocrImageView *self, guint index, graphene_rect_t *out);

G_END_DECLS
