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
    HYOCR_DFLASH_KV, HYOCR_DFLASH_SCRATCH_COUNT,
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
 * token order (row i = the token at index i), contiguous; room for a block after them. */
typedef struct {
    hyocr_buf **k, **v;           /* [num_layers] buffers of [cap, Hkv·D] */
    int         n;                /* context rows (committed tokens seen) */
    int         cap;
} hyocr_dflash_ctx;

hyocr_dflash_ctx *hyocr_dflash_ctx_new(hyocr_dflash *d);
void              hyocr_dflash_ctx_free(hyocr_dflash *d, hyocr_dflash_ctx *c);

/* Appends n context rows for the tokens at indices c->n .. c->n + n − 1: taps[n, taps · hidden]
 * (HYOCR_BUF_ACT), the target layers' outputs of those tokens in target_layer_ids order. */
bool hyocr_dflash_ctx_append(hyocr_dflash *d, hyocr_dflash_ctx *c, const hyocr_buf *taps, int n, GError **error);

/* Runs the block [bonus, MASK × (block_size − 1)] at indices c->n .. after the context and
 * writes the argmax of each of rows 1.. to drafts[block_size − 1] (the first maximum), and, when
 * logits is not NULL, those rows' logits to logits[(block_size − 1) · vocab]. The context is left
 * as it was (the block's keys are not kept). */
bool hyocr_dflash_propose(hyocr_dflash *d, hyocr_dflash_ctx *c, int32_t bonus, int32_t *drafts, float *logits,
                          GError **error);

G_END_DECLS
