/* hyocr-gtk — the worker's knobs and counters for the tests. */
#pragma once
#include "hyocr-worker.h"

G_BEGIN_DECLS

/* Jobs decode together, up to n (the engine's max_batch; continuous batching:
 * a page added while others decode joins them); 0, the default: 8 on the GPU, 1
 * on the CPU (where a batch would delay every first answer by the others'
 * vision passes). */
void hyocr_worker_set_max_batch(HyocrWorker *self, int n);
int  hyocr_worker_get_largest_batch(HyocrWorker *self);   /* the most jobs one decode step ran */
/* The engine's thread stops at its next token until the worker has submitted
 * another job: that job then joins the jobs decoding now whatever the machine's
 * load, where a test adding a page otherwise races their remaining steps. */
void hyocr_worker_hold_until_submit(HyocrWorker *self);

G_END_DECLS
