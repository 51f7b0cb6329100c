/* hyocr-gtk — the worker's knobs and counters for the tests. */
#pragma once
#include "hyocr-worker.h"

G_BEGIN_DECLS

/* Jobs queued together run as one batch of up to n (continuous batching in the
 * engine); 0, the default: 8 on the GPU, 1 on the CPU (where a batch would delay
 * every first answer by the others' vision passes). */
void hyocr_worker_set_max_batch(HyocrWorker *self, int n);
int  hyocr_worker_get_largest_batch(HyocrWorker *self);   /* the most jobs one engine call ran */

G_END_DECLS
