/* hyocr — the DFlash speculative-decoding draft (issue 20) on a backend.
 *
 * A small Qwen3-style model that proposes block_size − 1 tokens at once. Its context is the
 * target's own hidden states: for every committed token, the outputs of a few target layers
 * (dflash_config.target_layer_ids), concatenated, go through fc and hidden_norm and then into
 * every draft layer as keys and values (that layer's k_proj / v_proj, k_norm, RoPE at the token's
 * index). A proposal runs the block [bonus, MASK × (block_size − 1)] through the layers, each row
 * attending to the whole context and the whole block with no mask, and reads rows 1.. through the
 * target's head. The embedding and the head are the target's. Everything goes through backend.h,
 * so the CPU and CUDA backends run the same code. */
#pragma once
#include "model.h"

G_BEGIN_DECLS

typedef struct {
    hyocr_buf *in_norm;
    hyocr_buf *qkv_w;             /* [(Hq + 2·Hkv)·D, hidden]: q | k | v; rows Hq·D.. are k | v */
    hyocr_buf *o_w;               /* [hidden, Hq·D] */
    hyocr_buf *q_norm, *k_norm;   /* [D] */
    hyocr_buf *post_norm;
    hyocr_buf *gate_up_w;         /* [2I, hidden]: gate | up */
    hyocr_buf *down_w;            /* [hidden, I] */
} hyocr_dflash_layer;

enum {
    HYOCR_DFLASH_X, HYOCR_DFLASH_A, HYOCR_DFLASH_QKV, HYOCR_DFLASH_ATT, HYOCR_DFLASH_DELTA,
    HYOCR_DFLASH_GU, HYOCR_DFLASH_ACT, HYOCR_DFLASH_LOGITS, HYOCR_DFLASH_C, HYOCR_DFLASH_CN,
    HYOCR_DFLASH_KV, HYOCR_DFLASH_IDS, HYOCR_DFLASH_SCRATCH_COUNT,
};

typedef struct hyocr_dflash {
    hyocr_backend      *be;       /* not owned */
    hyocr_model        *target;   /* not owned: its embedding and head */
    hyocr_dflash_config cfg;
    hyocr_rope_params   rope;
    hyocr_buf          *fc_w;     /* [hidden, taps · hidden] */
    hyocr_buf          *hidden_norm, *final_norm;
    hyocr_dflash_layer *layers;
    hyocr_buf          *scratch[HYOCR_DFLASH_SCRATCH_COUNT];
} hyocr_dflash;

/* Uploads the draft's weights (draft: hyocr_checkpoint_draft of the target's checkpoint, or
 * hyocr_checkpoint_open_draft) for a loaded target model on the same backend. */
hyocr_dflash *hyocr_dflash_load(hyocr_backend *be, const hyocr_checkpoint *draft, hyocr_model *target,
                                GError **error);
void          hyocr_dflash_free(hyocr_dflash *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_dflash, hyocr_dflash_free)

/* One sequence's context: each draft layer's keys and values of the committed tokens, rows in
 * token order (row i = the token at index i), contiguous; room for a block after them. The
 * draft's ops read where they are from io, so the ops of a round capture once and replay. */
typedef struct {
    hyocr_buf **k, **v;           /* [num_layers] buffers of [cap, Hkv·D] */
    hyocr_buf  *io;               /* [1 + block_size] raw int32 words (F32 buffer): the cursor (the row the
                                   * next pass starts at), then the block [bonus, MASK × (block_size − 1)] */
    int         n;                /* context rows (committed tokens seen) */
    int         cap;
} hyocr_dflash_ctx;

hyocr_dflash_ctx *hyocr_dflash_ctx_new(hyocr_dflash *d, GError **error);
void              hyocr_dflash_ctx_free(hyocr_dflash *d, hyocr_dflash_ctx *c);
/* Room for rows context rows and a block after them, so no round allocates (the old rows are
 * copied when it grows). */
bool              hyocr_dflash_ctx_reserve(hyocr_dflash *d, hyocr_dflash_ctx *c, int rows, GError **error);

/* Appends n context rows for the tokens at indices c->n .. c->n + n − 1: taps[n, taps · hidden]
 * (HYOCR_BUF_ACT), the target layers' outputs of those tokens in target_layer_ids order. */
bool hyocr_dflash_ctx_append(hyocr_dflash *d, hyocr_dflash_ctx *c, const hyocr_buf *taps, int n, GError **error);

/* A round (speculate.c) in three parts. hyocr_dflash_round_begin writes the cursor (c->n) and
 * the block [bonus, MASK × (block_size − 1)] to c->io: host work, before the rest. Then, with no
 * host work between (a round captures once and replays): hyocr_dflash_propose_ops runs the block
 * at indices c->n .. after the context and writes the argmax of its rows 1 .. n_drafts (the first
 * maximum) to ids[off ..] as raw int32 words; the context is left as it was (the block's keys
 * are not kept). hyocr_dflash_extend_ops stores context rows for taps[rows] (rows ≤ block_size)
 * at the cursor; rows past what the target kept are overwritten by the next round, once the host
 * has advanced c->n past the kept ones. */
bool     hyocr_dflash_round_begin(hyocr_dflash *d, hyocr_dflash_ctx *c, int32_t bonus, GError **error);
bool     hyocr_dflash_propose_ops(hyocr_dflash *d, hyocr_dflash_ctx *c, int n_drafts, hyocr_buf *ids, size_t off,
                                  GError **error);
bool     hyocr_dflash_extend_ops(hyocr_dflash *d, hyocr_dflash_ctx *c, const hyocr_buf *taps, int rows,
                                 GError **error);
/* Frees the draft's scratch (an idle engine holds its weights only). */
void     hyocr_dflash_trim_scratch(hyocr_dflash *d);
/* What captured draft ops depend on (their buffers), mixed into h. */
uint64_t hyocr_dflash_signature(const hyocr_dflash *d, const hyocr_dflash_ctx *c, uint64_t h);

/* A whole proposal on the host's terms (tests): round_begin, propose_ops of all block_size − 1
 * drafts, drafts[block_size − 1] downloaded, and, when logits is not NULL, those rows' logits
 * to logits[(block_size − 1) · vocab]. */
bool hyocr_dflash_propose(hyocr_dflash *d, hyocr_dflash_ctx *c, int32_t bonus, int32_t *drafts, float *logits,
                          GError **error);

G_END_DECLS
