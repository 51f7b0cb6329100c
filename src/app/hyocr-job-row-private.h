/* hyocr-gtk — what the tests read of a job row. */
#pragma once
#include "hyocr-job-row.h"

G_BEGIN_DECLS

/* The file's folder and size ("~/Scans · 2.3 MB"); "" when not shown. */
const char *hyocr_job_row_get_where(HyocrJobRow *self);

G_END_DECLS
