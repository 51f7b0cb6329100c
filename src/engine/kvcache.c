/* hyocr — paged KV cache bookkeeping. Free blocks sit on a LIFO stack so the
 * most recently released (still cache-warm) block is handed out first; an
 * in-use flag per block turns double releases and foreign ids into loud
 * criticals instead of a corrupted free list. Not thread-safe: the scheduler
 * owns the pool. */
#include "kvcache.h"
#include "error.h"
#include "i18n.h"
#include <string.h>

struct hyocr_kv_pool {
    int      n_blocks;
    int      block_size;
    int32_t *free_stack;   /* top at free_stack[n_free - 1] */
    int      n_free;
    bool    *in_use;
};

hyocr_kv_pool *hyocr_kv_pool_init(int n_blocks, int block_size)
{
    g_return_val_if_fail(n_blocks > 0, NULL);
    g_return_val_if_fail(block_size > 0, NULL);

    hyocr_kv_pool *pool = g_new0(hyocr_kv_pool, 1);
    pool->n_blocks = n_blocks;
    pool->block_size = block_size;
    pool->free_stack = g_new(int32_t, n_blocks);
    pool->in_use = g_new0(bool, n_blocks);
    /* Block 0 on top: a fresh pool hands out 0, 1, 2, … in order. */
    for (int i = 0; i < n_blocks; i++)
        pool->free_stack[i] = n_blocks - 1 - i;
    pool->n_free = n_blocks;
    return pool;
}

void hyocr_kv_pool_free(hyocr_kv_pool *pool)
{
    if (!pool) return;
    g_free(pool->free_stack);
    g_free(pool->in_use);
    g_free(pool);
}

int hyocr_kv_pool_block_size(const hyocr_kv_pool *pool)
{
    g_return_val_if_fail(pool != NULL, 0);
    return pool->block_size;
}

int hyocr_kv_pool_n_blocks(const hyocr_kv_pool *pool)
{
    g_return_val_if_fail(pool != NULL, 0);
    return pool->n_blocks;
}

int hyocr_kv_pool_n_free(const hyocr_kv_pool *pool)
{
    g_return_val_if_fail(pool != NULL, 0);
    return pool->n_free;
}

bool hyocr_kv_pool_grow(hyocr_kv_pool *pool, int n_blocks)
{
    g_return_val_if_fail(pool != NULL, false);
    if (n_blocks <= pool->n_blocks) return false;
    int added = n_blocks - pool->n_blocks;
    int32_t *stack = g_new(int32_t, n_blocks);
    /* the new blocks go under the free ones, so recently freed blocks still come first */
    for (int i = 0; i < added; i++) stack[i] = n_blocks - 1 - i;
    memcpy(stack + added, pool->free_stack, sizeof(int32_t) * (size_t)pool->n_free);
    g_free(pool->free_stack);
    pool->free_stack = stack;
    pool->in_use = g_renew(bool, pool->in_use, n_blocks);
    memset(pool->in_use + pool->n_blocks, 0, sizeof(bool) * (size_t)added);
    pool->n_free += added;
    pool->n_blocks = n_blocks;
    return true;
}

static int64_t blocks_for64(const hyocr_kv_pool *pool, int64_t n_tokens)
{
    if (n_tokens <= 0) return 0;
    return (n_tokens + pool->block_size - 1) / pool->block_size;
}

int hyocr_kv_pool_blocks_for(const hyocr_kv_pool *pool, int n_tokens)
{
    g_return_val_if_fail(pool != NULL, 0);
    return (int)blocks_for64(pool, n_tokens);
}

void hyocr_kv_seq_init(hyocr_kv_seq *seq)
{
    g_return_if_fail(seq != NULL);
    *seq = (hyocr_kv_seq){ 0 };
}

static void seq_grow_table(hyocr_kv_seq *seq, int need)
{
    if (need <= seq->cap) return;
    int cap = MAX(need, MAX(8, seq->cap * 2));
    seq->blocks = g_renew(int32_t, seq->blocks, cap);
    seq->cap = cap;
}

bool hyocr_kv_seq_reserve(hyocr_kv_pool *pool, hyocr_kv_seq *seq, int n_more, GError **error)
{
    g_return_val_if_fail(pool != NULL && seq != NULL, false);
    if (n_more < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache: cannot reserve a negative number of tokens (%d)"), n_more);
        return false;
    }
    int64_t extra = blocks_for64(pool, (int64_t)seq->n_tokens + n_more) - seq->n_blocks;
    if (extra <= 0) return true;
    if (extra > pool->n_free) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("KV cache full: need %lld more blocks of %d tokens, %d free of %d"),
                    (long long)extra, pool->block_size, pool->n_free, pool->n_blocks);
        return false;
    }
    seq_grow_table(seq, seq->n_blocks + (int)extra);
    for (int64_t i = 0; i < extra; i++) {
        int32_t b = pool->free_stack[--pool->n_free];
        pool->in_use[b] = true;
        seq->blocks[seq->n_blocks++] = b;
    }
    return true;
}

void hyocr_kv_seq_commit(hyocr_kv_seq *seq, int n_tokens)
{
    g_return_if_fail(seq != NULL);
    g_return_if_fail(n_tokens >= 0);
    seq->n_tokens += n_tokens;
}

void hyocr_kv_seq_rewind(hyocr_kv_seq *seq, int n_tokens)
{
    g_return_if_fail(seq != NULL);
    g_return_if_fail(n_tokens >= 0 && n_tokens <= seq->n_tokens);
    seq->n_tokens = n_tokens;
}

/* The table memory is freed too: there is no separate seq destructor, and a
 * preempted sequence regrows its table on the next reserve. */
void hyocr_kv_seq_release(hyocr_kv_pool *pool, hyocr_kv_seq *seq)
{
    g_return_if_fail(pool != NULL && seq != NULL);
    for (int i = 0; i < seq->n_blocks; i++) {
        int32_t b = seq->blocks[i];
        if (b < 0 || b >= pool->n_blocks) {
            g_critical("hyocr_kv_seq_release: block id %d is outside the pool [0, %d); skipped",
                       (int)b, pool->n_blocks);
            continue;
        }
        if (!pool->in_use[b]) {
            g_critical("hyocr_kv_seq_release: block %d is already free (double release); skipped",
                       (int)b);
            continue;
        }
        pool->in_use[b] = false;
        pool->free_stack[pool->n_free++] = b;
    }
    g_free(seq->blocks);
    *seq = (hyocr_kv_seq){ 0 };
}

int hyocr_kv_seq_capacity(const hyocr_kv_pool *pool, const hyocr_kv_seq *seq)
{
    g_return_val_if_fail(pool != NULL && seq != NULL, 0);
    return seq->n_blocks * pool->block_size;
}

int64_t hyocr_kv_seq_slot(const hyocr_kv_pool *pool, const hyocr_kv_seq *seq, int pos)
{
    g_return_val_if_fail(pool != NULL && seq != NULL, -1);
    if (pos < 0 || pos / pool->block_size >= seq->n_blocks) return -1;
    int64_t block = seq->blocks[pos / pool->block_size];
    return block * pool->block_size + pos % pool->block_size;
}
