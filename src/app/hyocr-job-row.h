/* hyocr-gtk — one row of the job queue in the sidebar. */
#pragma once
#include "hyocr-job.h"

G_BEGIN_DECLS

#define HYOCR_TYPE_JOB_ROW (hyocr_job_row_get_type())
G_DECLARE_FINAL_TYPE(HyocrJobRow, hyocr_job_row, HYOCR, JOB_ROW, GtkListBoxRow)

GtkWidget *hyocr_job_row_new(HyocrJob *job);
HyocrJob  *hyocr_job_row_get_job(HyocrJobRow *self);

G_END_DECLS
