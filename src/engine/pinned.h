/* hyocr — pinned host buffers for pages' pixel values, kept for the pages after.
 *
 * From pinned memory the CUDA backend's upload is a copy queued on the stream: the host goes
 * on and the device reads at the link's speed. From ordinary memory its threads first convert
 * the values into a pinned ring, and the device waits for that: 673 µs before each 1024² page's
 * upload in a run of 16 (H100, bench/results/2026-12-05-h200-s23/call2/prof16.txt), in its time
 * to first token. The prefetch thread makes the next page's pixels in a buffer of this pool, so
 * that work is off the device's path.
 *
 * Pinning locks every page of the buffer (milliseconds for a page's pixels) and freeing pinned
 * memory may wait for the device, so buffers are kept until the pool goes, never more than
 * max_bytes of them; a page that does not fit takes ordinary memory, as before. The pool is
 * referenced by every buffer out, so a page's pixels may outlive the engine's reference. */
#pragma once
#include "backend.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct hyocr_pinned_pool hyocr_pinned_pool;

/* alloc/release: a backend's host_alloc/host_free, called without the backend (NULL): pinned
 * memory is the process's, and a page prefetched before a dtype reload is freed after it. */
hyocr_pinned_pool *hyocr_pinned_pool_new(void *(*alloc)(hyocr_backend *be, size_t bytes, GError **error),
                                         void (*release)(hyocr_backend *be, void *p, size_t bytes), size_t max_bytes);
void               hyocr_pinned_pool_unref(hyocr_pinned_pool *pool);
/* A buffer of at least bytes (*cap: its size): the smallest kept one that fits, else, with
 * may_pin, a new one while the pool stays within max_bytes; NULL: none (use ordinary memory). */
void              *hyocr_pinned_pool_take(hyocr_pinned_pool *pool, size_t bytes, bool may_pin, size_t *cap);
void               hyocr_pinned_pool_give(hyocr_pinned_pool *pool, void *p, size_t cap);
/* Bytes pinned in all, and of them kept (not out): for tests and the log. */
void               hyocr_pinned_pool_stats(hyocr_pinned_pool *pool, size_t *pinned, size_t *kept);
