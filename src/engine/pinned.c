/* hyocr — pinned host buffers for pages' pixel values (pinned.h). */
#include "pinned.h"
#include <glib.h>

/* Sizes rounded up to this, so a page of a slightly larger size finds the last one's buffer. */
#define PINNED_ROUND ((size_t)4 << 20)

typedef struct {
    void  *p;
    size_t bytes;
} pinned_block;

struct hyocr_pinned_pool {
    gatomicrefcount ref;
    GMutex          lock;
    GArray         *kept;     /* pinned_block: buffers not out */
    size_t          pinned;   /* bytes pinned in all, out or kept */
    size_t          max_bytes;
    void         *(*alloc)(hyocr_backend *be, size_t bytes, GError **error);
    void          (*release)(hyocr_backend *be, void *p, size_t bytes);
};

hyocr_pinned_pool *hyocr_pinned_pool_new(void *(*alloc)(hyocr_backend *be, size_t bytes, GError **error),
                                         void (*release)(hyocr_backend *be, void *p, size_t bytes), size_t max_bytes)
{
    hyocr_pinned_pool *pool = g_new0(hyocr_pinned_pool, 1);
    g_atomic_ref_count_init(&pool->ref);
    g_mutex_init(&pool->lock);
    pool->kept = g_array_new(FALSE, FALSE, sizeof(pinned_block));
    pool->max_bytes = max_bytes;
    pool->alloc = alloc;
    pool->release = release;
    return pool;
}

void hyocr_pinned_pool_unref(hyocr_pinned_pool *pool)
{
    if (!pool || !g_atomic_ref_count_dec(&pool->ref)) return;
    for (guint i = 0; i < pool->kept->len; i++) {
        pinned_block *b = &g_array_index(pool->kept, pinned_block, i);
        pool->release(NULL, b->p, b->bytes);
    }
    g_array_free(pool->kept, TRUE);
    g_mutex_clear(&pool->lock);
    g_free(pool);
}

/* The smallest kept buffer of at least bytes, taken out of the list; -1: none. */
static int take_kept(hyocr_pinned_pool *pool, size_t bytes)
{
    int best = -1;
    for (guint i = 0; i < pool->kept->len; i++) {
        const pinned_block *b = &g_array_index(pool->kept, pinned_block, i);
        if (b->bytes >= bytes && (best < 0 || b->bytes < g_array_index(pool->kept, pinned_block, best).bytes))
            best = (int)i;
    }
    return best;
}

void *hyocr_pinned_pool_take(hyocr_pinned_pool *pool, size_t bytes, bool may_pin, size_t *cap)
{
    if (!pool || bytes == 0 || bytes > pool->max_bytes) return NULL;
    const size_t want = (bytes + PINNED_ROUND - 1) / PINNED_ROUND * PINNED_ROUND;
    void *p = NULL;
    g_mutex_lock(&pool->lock);
    int i = take_kept(pool, bytes);
    if (i >= 0) {
        pinned_block b = g_array_index(pool->kept, pinned_block, i);
        g_array_remove_index_fast(pool->kept, (guint)i);
        p = b.p;
        *cap = b.bytes;
    } else if (may_pin && pool->pinned + MIN(want, pool->max_bytes) <= pool->max_bytes) {
        /* counted before the lock goes: another thread's buffer cannot take the pool past its bound */
        *cap = MIN(want, pool->max_bytes);
        pool->pinned += *cap;
        g_mutex_unlock(&pool->lock);
        p = pool->alloc(NULL, *cap, NULL);   /* slow: not under the lock; failing, ordinary memory */
        g_mutex_lock(&pool->lock);
        if (!p) pool->pinned -= *cap;
    }
    g_mutex_unlock(&pool->lock);
    if (p) g_atomic_ref_count_inc(&pool->ref);
    return p;
}

void hyocr_pinned_pool_give(hyocr_pinned_pool *pool, void *p, size_t cap)
{
    if (!pool || !p) return;
    pinned_block b = { p, cap };
    g_mutex_lock(&pool->lock);
    g_array_append_val(pool->kept, b);
    g_mutex_unlock(&pool->lock);
    hyocr_pinned_pool_unref(pool);
}

void hyocr_pinned_pool_stats(hyocr_pinned_pool *pool, size_t *pinned, size_t *kept)
{
    g_mutex_lock(&pool->lock);
    size_t k = 0;
    for (guint i = 0; i < pool->kept->len; i++) k += g_array_index(pool->kept, pinned_block, i).bytes;
    if (pinned) *pinned = pool->pinned;
    if (kept) *kept = k;
    g_mutex_unlock(&pool->lock);
}
