/* hyocr — paged KV cache bookkeeping: a pool of fixed-size blocks and a block
 * table per sequence. Storage lives in backend buffers (one K and one V buffer
 * per layer, [n_blocks, block_size, n_kv_heads, head_dim]); this file only
 * decides which block holds which tokens, so the CPU and CUDA backends and the
 * continuous-batching scheduler share the same bookkeeping. */
#pragma once
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct hyocr_kv_pool hyocr_kv_pool;

typedef struct {
    int32_t *blocks;     /* block table: physical block ids, in order */
    int      n_blocks;   /* used entries */
    int      cap;        /* allocated entries */
    int      n_tokens;   /* tokens stored */
} hyocr_kv_seq;

hyocr_kv_pool *hyocr_kv_pool_init(int n_blocks, int block_size);
void           hyocr_kv_pool_free(hyocr_kv_pool *pool);
int            hyocr_kv_pool_block_size(const hyocr_kv_pool *pool);
int            hyocr_kv_pool_n_blocks(const hyocr_kv_pool *pool);
int            hyocr_kv_pool_n_free(const hyocr_kv_pool *pool);
/* Adds blocks n_blocks_old … n_blocks − 1 (free) to the pool; the blocks in use
 * keep their ids. False when n_blocks is not larger. */
bool           hyocr_kv_pool_grow(hyocr_kv_pool *pool, int n_blocks);
/* Blocks needed to hold n_tokens. */
int            hyocr_kv_pool_blocks_for(const hyocr_kv_pool *pool, int n_tokens);

void           hyocr_kv_seq_init(hyocr_kv_seq *seq);
/* Grows seq so it can hold n_tokens more tokens. On failure (pool exhausted)
 * nothing changes and the error says how many blocks were needed and free. */
bool           hyocr_kv_seq_reserve(hyocr_kv_pool *pool, hyocr_kv_seq *seq, int n_more, GError **error);
void           hyocr_kv_seq_commit(hyocr_kv_seq *seq, int n_tokens);   /* n_tokens += n */
/* Forgets the tokens from n_tokens on (speculated rows the target rejected): the next forward
 * writes over their slots. Their blocks stay reserved for it. */
void           hyocr_kv_seq_rewind(hyocr_kv_seq *seq, int n_tokens);
/* Returns all blocks to the pool and empties the table. */
void           hyocr_kv_seq_release(hyocr_kv_pool *pool, hyocr_kv_seq *seq);

/* Tokens seq can hold without another reserve (n_blocks · block_size). */
int            hyocr_kv_seq_capacity(const hyocr_kv_pool *pool, const hyocr_kv_seq *seq);
/* Row of token `pos` in the [n_blocks · block_size] slot space of the K/V
 * buffers (block · block_size + offset); -1 when pos is outside the reserved blocks. */
int64_t        hyocr_kv_seq_slot(const hyocr_kv_pool *pool, const hyocr_kv_seq *seq, int pos);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_kv_pool, hyocr_kv_pool_free)

G_END_DECLS
