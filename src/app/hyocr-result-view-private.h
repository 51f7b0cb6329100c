/* hyocr-gtk — what the tests read of the result view. */
#pragma once
#include "hyocr-result-view.h"
#include "hyocr-rendered-view.h"

G_BEGIN_DECLS

HyocrImageView *hyocr_result_view_get_image_view(HyocrResultView *self);
/* What Copy puts on the clipboard: the spotted lines' text, the "extract
 * fields" JSON re-indented, else the text as written. */
char           *hyocr_result_view_get_display_text(HyocrResultView *self);
/* Rows of the spotting list (tests hover them). */
GtkListBox     *hyocr_result_view_get_lines_list(HyocrResultView *self);
const char     *hyocr_result_view_get_visible_page(HyocrResultView *self);   /* "text", "rendered", "lines", "message" */
/* A parse answer's rendered view; TRUE while the latest text waits to be rendered. */
HyocrRenderedView *hyocr_result_view_get_rendered_view(HyocrResultView *self);
gboolean        hyocr_result_view_is_rendering(HyocrResultView *self);
const char     *hyocr_result_view_get_message_title(HyocrResultView *self);
GtkTextView    *hyocr_result_view_get_text_view(HyocrResultView *self);
/* "cancel", "copy", "save", "back", "image", "rendered" or "source" (the header's buttons). */
GtkWidget      *hyocr_result_view_get_button(HyocrResultView *self, const char *which);
/* The shown file job's image, read again at display size; NULL until read. */
GdkTexture     *hyocr_result_view_get_display_texture(HyocrResultView *self);

G_END_DECLS
