/* hyocr-gtk — what the tests read of a job. */
#pragma once
#include "hyocr-job.h"

G_BEGIN_DECLS

const char *hyocr_job_get_prompt(HyocrJob *self);        /* the task text sent with the image */
guint       hyocr_job_get_n_updates(HyocrJob *self);     /* flushes so far */
/* Tokens the worker has posted, flushed or not (any thread). */
int         hyocr_job_get_live_tokens(HyocrJob *self);

G_END_DECLS
