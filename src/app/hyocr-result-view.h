/* hyocr-gtk — one job's result: preview (with boxes for spotting), streamed
 * text, state, progress, elapsed time, cancel and copy. */
#pragma once
#include "hyocr-image-view.h"
#include "hyocr-job.h"
#include <adwaita.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_RESULT_VIEW (hyocr_result_view_get_type())
G_DECLARE_FINAL_TYPE(HyocrResultView, hyocr_result_view, HYOCR, RESULT_VIEW, GtkWidget)

void            hyocr_result_view_set_job(HyocrResultView *self, HyocrJob *job);
HyocrJob       *hyocr_result_view_get_job(HyocrResultView *self);
/* A back button to the job list (win.show-jobs), for a window too narrow for both. */
void            hyocr_result_view_set_show_back(HyocrResultView *self, gboolean show);
/* The result for a file of this extension ("txt", "md", "json"). */
char           *hyocr_result_view_export(HyocrResultView *self, const char *extension);

G_END_DECLS
