/* hyocr-gtk — the history page: past jobs, newest first, a search field that filters
 * them by text, and per entry: open it again, export, run again, copy the details of
 * a failure, delete; or clear everything. The window does what needs a job (open,
 * run again, export) when the view asks through its signals. */
#pragma once
#include "hyocr-history.h"
#include <adwaita.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_HISTORY_VIEW (hyocr_history_view_get_type())
G_DECLARE_FINAL_TYPE(HyocrHistoryView, hyocr_history_view, HYOCR, HISTORY_VIEW, AdwBin)

/* The history shown (not owned: the window keeps it); NULL when history is off. */
void     hyocr_history_view_set_history(HyocrHistoryView *self, hyocr_history *history);
/* Reads the entries again (a job ended, one was deleted elsewhere). */
void     hyocr_history_view_reload(HyocrHistoryView *self);
/* Entries shown now (after the search). */
guint    hyocr_history_view_get_n_entries(HyocrHistoryView *self);

G_END_DECLS
