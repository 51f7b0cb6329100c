/* hyocr — pinned host buffers for pages' pixel values (pinned.h). */
#include "pinned.h"
#include <glib.h>

struct hyocr_pinned_pool {
    gatomicrefcount ref;
    GMutex          lock;
    GArray         *kept;     /* hyocr_host_block: buffers not out */
    size_t          pinned;   /* bytes pinned in all, out or kept */
    void          (*release)(hyocr_backend *be, void *p, size_t bytes);
};

hyocr_pinned_pool *hyocr_pinned_pool_new(void *(*alloc)(hyocr_backend *be, size_t bytes, GError **error),
                                         void (*release)(hyocr_backend *be, void *p, size_t bytes), int n,
                                         size_t bytes)
{
    hyocr_pinned_pool *pool = g_new0(hyocr_pinned_pool, 1);
    g_atomic_ref_count_init(&pool->ref);
    g_mutex_init(&pool->lock);
    pool->kept = g_array_new(FALSE, FALSE, sizeof(hyocr_host_block));
    pool->release = release;
    for (int i = 0; i < n; i++) {
        hyocr_host_block b = { alloc(NULL, bytes, NULL), bytes };
        if (!b.p) break;   /* a locked-memory limit: fewer buffers, pages in ordinary memory */
        g_array_append_val(pool->kept, b);
        pool->pinned += bytes;
    }
    return pool;
}

void hyocr_pinned_pool_unref(hyocr_pinned_pool *pool)
{
    if (!pool || !g_atomic_ref_count_dec(&pool->ref)) return;
    for (guint i = 0; i < pool->kept->len; i++) {
        hyocr_host_block *b = &g_array_index(pool->kept, hyocr_host_block, i);
        pool->release(NULL, b->p, b->bytes);
    }
    g_array_free(pool->kept, TRUE);
    g_mutex_clear(&pool->lock);
    g_free(pool);
}

bool hyocr_host_blocks_take(GArray *blocks, size_t need, hyocr_host_block *out)
{
    int best = -1;
    for (guint i = 0; i < blocks->len; i++) {
        const hyocr_host_block *b = &g_array_index(blocks, hyocr_host_block, i);
        if (b->bytes >= need && (best < 0 || b->bytes < g_array_index(blocks, hyocr_host_block, best).bytes))
            best = (int)i;
    }
    if (best < 0) return false;
    *out = g_array_index(blocks, hyocr_host_block, best);
    g_array_remove_index_fast(blocks, (guint)best);
    return true;
}

void *hyocr_pinned_pool_take(hyocr_pinned_pool *pool, size_t bytes, size_t *cap)
{
    if (!pool || bytes == 0) return NULL;
    hyocr_host_block b;
    g_mutex_lock(&pool->lock);
    bool found = hyocr_host_blocks_take(pool->kept, bytes, &b);
    if (found) g_atomic_ref_count_inc(&pool->ref);
    g_mutex_unlock(&pool->lock);
    if (!found) return NULL;
    *cap = b.bytes;
    return b.p;
}

void hyocr_pinned_pool_give(hyocr_pinned_pool *pool, void *p, size_t cap)
{
    if (!pool || !p) return;
    hyocr_host_block b = { p, cap };
    g_mutex_lock(&pool->lock);
    g_array_append_val(pool->kept, b);
    g_mutex_unlock(&pool->lock);
    hyocr_pinned_pool_unref(pool);
}

void hyocr_pinned_pool_stats(hyocr_pinned_pool *pool, size_t *pinned, size_t *kept)
{
    g_mutex_lock(&pool->lock);
    size_t k = 0;
    for (guint i = 0; i < pool->kept->len; i++) k += g_array_index(pool->kept, hyocr_host_block, i).bytes;
    if (pinned) *pinned = pool->pinned;
    if (kept) *kept = k;
    g_mutex_unlock(&pool->lock);
}
