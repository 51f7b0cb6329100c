/* hyocr-gtk — what the window and the tests reach of the history view. */
#pragma once
#include "hyocr-history-view.h"

G_BEGIN_DECLS

GtkEditable *hyocr_history_view_get_search(HyocrHistoryView *self);
/* The id of the entry shown at index, 0 past the end. */
gint64       hyocr_history_view_get_entry_id(HyocrHistoryView *self, guint index);
/* The state of the entry shown at index. */
hyocr_history_state hyocr_history_view_get_entry_state(HyocrHistoryView *self, guint index);
/* What the rows' buttons do. */
void         hyocr_history_view_delete(HyocrHistoryView *self, gint64 id);
void         hyocr_history_view_copy_details(HyocrHistoryView *self, gint64 id);
/* Clear All after the user confirmed. */
void         hyocr_history_view_clear(HyocrHistoryView *self);

G_END_DECLS
