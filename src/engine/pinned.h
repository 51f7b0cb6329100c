/* hyocr — pinned host buffers for pages' pixel values, made when the engine loads.
 *
 * From pinned memory the CUDA backend's upload is a copy queued on the stream: the host goes
 * on and the device reads at the link's speed. From ordinary memory its threads first convert
 * the values into a pinned ring, and the device waits for the first chunk: a warm 1024² page's
 * vision is 0.5 ms shorter from a buffer of this pool (H100, bench/results/2026-12-06-h100-s26,
 * call3); a 2048² page's was level, so larger pages take ordinary memory.
 *
 * Pinning locks every page of a buffer in the driver, and a pin while the scheduler launches a
 * page's vision held those launches up to 5 ms (call9), so every buffer is pinned when the pool
 * is made (with the model, before any page) and kept until the pool goes. The pool is referenced
 * by every buffer out, so a page's pixels may outlive the engine's reference. */
#pragma once
#include "backend.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct hyocr_pinned_pool hyocr_pinned_pool;

/* A pinned buffer kept for reuse, here and in the scheduler's swap spares (batch.c). */
typedef struct {
    void  *p;
    size_t bytes;
} hyocr_host_block;

/* Takes the smallest block of at least need out of blocks (a GArray of hyocr_host_block) into
 * *out; false: none that large. */
bool hyocr_host_blocks_take(GArray *blocks, size_t need, hyocr_host_block *out);

/* n buffers of bytes each, as many as alloc gives (none: a pool that never has one). alloc and
 * release: a backend's host_alloc/host_free, called without the backend (NULL): pinned memory is
 * the process's, and a page prefetched before a dtype reload is freed after it. */
hyocr_pinned_pool *hyocr_pinned_pool_new(void *(*alloc)(hyocr_backend *be, size_t bytes, GError **error),
                                         void (*release)(hyocr_backend *be, void *p, size_t bytes), int n,
                                         size_t bytes);
void               hyocr_pinned_pool_unref(hyocr_pinned_pool *pool);
/* A kept buffer of at least bytes (*cap: its size); NULL: none free or none that large (use
 * ordinary memory). Any thread. */
void              *hyocr_pinned_pool_take(hyocr_pinned_pool *pool, size_t bytes, size_t *cap);
void               hyocr_pinned_pool_give(hyocr_pinned_pool *pool, void *p, size_t cap);
/* Bytes pinned in all, and of them kept (not out): for tests. */
void               hyocr_pinned_pool_stats(hyocr_pinned_pool *pool, size_t *pinned, size_t *kept);
