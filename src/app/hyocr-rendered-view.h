/* hyocr-gtk — a parse answer rendered with native widgets: the model's Markdown
 * (md4c) as labels, its tables (Markdown or HTML, read by libxml2's HTML parser)
 * as grids, code, Mermaid and LaTeX as monospaced text. No web view. */
#pragma once
#include <gtk/gtk.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_RENDERED_VIEW (hyocr_rendered_view_get_type())
G_DECLARE_FINAL_TYPE(HyocrRenderedView, hyocr_rendered_view, HYOCR, RENDERED_VIEW, GtkWidget)

GtkWidget *hyocr_rendered_view_new(void);
/* Replaces what is shown with text rendered; any text, however malformed, shows.
 * The blocks that changed are rendered in idle slices: TRUE until all are. */
void       hyocr_rendered_view_set_markdown(HyocrRenderedView *self, const char *text);
gboolean   hyocr_rendered_view_is_rendering(HyocrRenderedView *self);
/* The blocks shown, in order (labels, grids, separators), for the tests. */
GtkWidget *hyocr_rendered_view_get_blocks(HyocrRenderedView *self);

G_END_DECLS
