/* hyocr — the HunyuanOCR network on a backend: weights uploaded from a checkpoint,
 * the vision tower + merger (vision.c), the decoder over the paged KV cache
 * (text.c), what decoding keeps on the device between steps (decode.c).
 * Everything goes through backend.h ops, so the same code runs on the CPU and
 * CUDA backends; the only host-side data are token ids, positions, block tables
 * and the fp32 logits that come back. */
#pragma once
#include "backend.h"
#include "checkpoint.h"
#include "resize.h"
#include "kvcache.h"
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct {
    hyocr_buf *ln1_g, *ln1_b;
    hyocr_buf *qkv_w, *qkv_b;     /* [3C, C], [3C]: q | k | v */
    hyocr_buf *o_w, *o_b;
    hyocr_buf *ln2_g, *ln2_b;
    hyocr_buf *fc1_w, *fc1_b;
    hyocr_buf *fc2_w, *fc2_b;
} hyocr_vit_block;

typedef struct {
    hyocr_buf *in_norm;
    hyocr_buf *qkv_w;             /* [(Hq + 2·Hkv)·D, hidden]: q | k | v */
    hyocr_buf *o_w;               /* [hidden, Hq·D] */
    hyocr_buf *q_norm, *k_norm;   /* [D] */
    hyocr_buf *post_norm;
    hyocr_buf *gate_up_w;         /* [2I, hidden]: gate | up */
    hyocr_buf *down_w;            /* [hidden, I] */
} hyocr_text_layer;

/* Scratch slots: one buffer per role, grown on demand and freed with
 * hyocr_model_trim_scratch so a big image does not pin its activations. */
enum {
    HYOCR_SCRATCH_V_X, HYOCR_SCRATCH_V_A, HYOCR_SCRATCH_V_QKV, HYOCR_SCRATCH_V_ATT,
    HYOCR_SCRATCH_V_DELTA, HYOCR_SCRATCH_V_MLP, HYOCR_SCRATCH_V_PIX,
    HYOCR_SCRATCH_M_GATHER, HYOCR_SCRATCH_M_P0, HYOCR_SCRATCH_M_P2, HYOCR_SCRATCH_M_NL,
    HYOCR_SCRATCH_M_MLP, HYOCR_SCRATCH_M_PRE, HYOCR_SCRATCH_M_NORM,
    HYOCR_SCRATCH_T_H, HYOCR_SCRATCH_T_A, HYOCR_SCRATCH_T_QKV, HYOCR_SCRATCH_T_ATT,
    HYOCR_SCRATCH_T_DELTA, HYOCR_SCRATCH_T_MLP, HYOCR_SCRATCH_T_LAST,
    HYOCR_SCRATCH_T_LOGITS,
    HYOCR_SCRATCH_COUNT,
};

typedef struct hyocr_model {
    hyocr_backend       *be;          /* not owned */
    const hyocr_checkpoint *ck;       /* not owned; outlives the model (vision weights reload from it) */
    bool                 vision_out;  /* the vision weights are off the device (hyocr_model_vision_unload) */
    hyocr_config         cfg;         /* shallow copy of the numeric fields; strings not used */
    hyocr_rope_params    rope;

    /* vision */
    hyocr_buf       *patch_w, *patch_b;    /* [C, 3·p·p] (conv weight flattened c, y, x), [C] */
    hyocr_buf       *pos_table;            /* [edge² + 1, C], row 0 the unused CLS slot */
    hyocr_vit_block *vit;
    hyocr_buf *before_rms, *proj0_w, *proj0_b, *proj2_w, *proj2_b;
    hyocr_buf *newline, *mlp_w, *mlp_b, *img_begin, *img_end, *after_rms;

    /* text */
    hyocr_buf        *embed;               /* [vocab, hidden] */
    hyocr_text_layer *layers;
    hyocr_buf        *final_norm;
    hyocr_buf        *lm_head;             /* == embed when tied */

    /* paged KV cache: a K and a V tensor per layer, in one allocation */
    hyocr_kv_pool *kv_pool;
    hyocr_buf    **k_cache, **v_cache;       /* per layer: views into one allocation, k_cache[layers] (kv_alloc_storage) */
    int            kv_block_size;
    bool           kv_fixed;               /* false: the pool grows on demand */
    int            kv_max_blocks;          /* growth cap (0 = none) */
    int64_t        kv_grows;               /* pools replaced by larger ones while in use (each a copy) */
    GPtrArray     *live_seqs;              /* hyocr_kv_seq* created by hyocr_model_seq_new */

    /* Layers whose outputs a forward keeps for sequences that ask (hyocr_text_seq.taps), in this
     * order: the DFlash draft's target_layer_ids (hyocr_dflash_load sets them). Never the last
     * layer, whose output transformers reports after the final norm. */
    int        tap_layers[HYOCR_DFLASH_MAX_TAPS];
    int        n_tap_layers;

    hyocr_buf *scratch[HYOCR_SCRATCH_COUNT];
    /* A vision pass runs beside decode steps (the scheduler's side lane): it keeps
     * the text scratch, which their captured graphs point into. */
    bool       beside;
    /* Rows per chunk of the row-wise parts of the ViT blocks and merger, and of
     * the prefill (memplan.h's defaults; tests lower them). Multiples of 512 keep
     * the CPU backend's results bit-identical to unchunked runs. */
    int        vit_chunk_rows;
    int        text_chunk_rows;
    /* Steps of up to this many rows take the fused products (text.c; 0: none): the
     * backend's tuning (fuse; by default on CUDA only) and the rows its fused products
     * take at the model's shapes, resolved once at load. */
    int        fused_rows;

    /* decoding on the device (decode.c) */
    hyocr_buf *pick_seen;                  /* [pick_n_slots · ceil(vocab/32)] words of penalty sets */
    int        pick_n_slots;
    uint8_t   *pick_used;                  /* [pick_n_slots] */
    GPtrArray *decode_graphs;              /* captured decode steps, NULL until the first */
    hyocr_buf *step_ids;                   /* a round's tokens as raw int32 words (hyocr_text_decode_round) */
} hyocr_model;

/* Uploads every tensor of the checkpoint the model uses. The config (including
 * rope_layout / posemb_interp, which callers may override before) is copied. */
hyocr_model *hyocr_model_load(hyocr_backend *be, const hyocr_checkpoint *ck, GError **error);
void         hyocr_model_free(hyocr_model *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_model, hyocr_model_free)

/* Returns the scratch buffer of a slot with room for at least n elements. */
hyocr_buf   *hyocr_model_scratch(hyocr_model *m, int slot, hyocr_buf_kind kind, size_t n, GError **error);
void         hyocr_model_trim_scratch(hyocr_model *m);
/* Frees one slot's buffer, so a stage's scratch is gone before the next takes its own. */
void         hyocr_model_scratch_release(hyocr_model *m, int slot);

/* KV cache. n_blocks > 0 makes a fixed pool; n_blocks = 0 starts with
 * initial_tokens worth of blocks (none when 0: the first reservation or
 * hyocr_model_kv_resize allocates) and grows (doubling, up to max_tokens) when a
 * reservation does not fit, moving the live sequences' blocks. */
bool          hyocr_model_kv_init(hyocr_model *m, int block_size, int n_blocks, int initial_tokens,
                                  int max_tokens, GError **error);
hyocr_kv_seq *hyocr_model_seq_new(hyocr_model *m);
void          hyocr_model_seq_free(hyocr_model *m, hyocr_kv_seq *seq);
/* Reserves room for n_more tokens, growing a non-fixed pool when needed. */
bool          hyocr_model_kv_reserve(hyocr_model *m, hyocr_kv_seq *seq, int n_more, GError **error);
int64_t       hyocr_model_kv_bytes_per_block(const hyocr_model *m);
/* Gives a growable pool exactly the blocks for n_tokens (capped by max_tokens;
 * 0 frees the storage), the old storage freed first so the two never coexist.
 * Fails while a sequence holds blocks. A fixed pool is left as it is. */
bool          hyocr_model_kv_resize(hyocr_model *m, int n_tokens, GError **error);
/* Gives the pool n_blocks blocks (more than now) while sequences hold theirs:
 * the K/V storage is copied whole into the larger one, so every block keeps its
 * id. Old and new storage coexist during the copy. */
bool          hyocr_model_kv_grow(hyocr_model *m, int n_blocks, GError **error);

/* Polled between ViT blocks and by the engine between decode steps. */
typedef bool (*hyocr_cancel_fn)(void *data);

/* Optional host copies of stage outputs, for tests and dumps (g_free them). */
typedef struct {
    bool   want;
    float *vision_out;      /* [n_patches, vision hidden], after the last ViT block */
    size_t vision_out_n;
    float *merger_out;      /* [n_image_tokens, text hidden] */
    size_t merger_out_n;
} hyocr_vision_debug;

/* Vision tower + perceive merger for one image. Returns a buffer of
 * [Hm·(Wm+1)+2, text hidden] rows (owned by the caller: hyocr_backend buf_free)
 * and its row count in *n_rows. Fails with HYOCR_ERROR_CANCELLED when cancel says so. */
hyocr_buf *hyocr_vision_forward(hyocr_model *m, const hyocr_pixels *px, int *n_rows,
                                hyocr_vision_debug *dbg, hyocr_cancel_fn cancel, void *cancel_data,
                                GError **error);

/* One sequence's part of a text forward call. */
typedef struct {
    const int32_t   *ids;            /* [n_new] */
    const int32_t   *pos;            /* [4·n_new] axis-major (prefill), or NULL: 1-D from the cache length */
    int              n_new;
    hyocr_kv_seq    *kv;             /* n_tokens = tokens already cached */
    const hyocr_buf *image_embeds;   /* rows scattered, in order, over the ids == image_token_id; or NULL */
    int              n_image_rows;
    int32_t          image_token_id;
    hyocr_buf       *taps;           /* or NULL: [n_new, n_tap_layers · hidden] (ACT) receives the outputs of
                                      * the model's tap_layers for these rows (the DFlash draft's context) */
} hyocr_text_seq;

/* Runs the decoder over the new tokens of each sequence, appends their K/V to
 * the cache and writes the fp32 logits of each sequence's last row to
 * logits[n_seqs · vocab]. The caches grow only on success. cancel (may be NULL)
 * is polled between layers, so a long prefill stops early (HYOCR_ERROR_CANCELLED). */
bool hyocr_text_forward(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, float *logits,
                        hyocr_cancel_fn cancel, void *cancel_data, GError **error);
/* Takes the buffers a forward pass over rows new tokens of n_seqs sequences uses, ahead of it (the
 * pass then finds them): where the device queues its allocations, while it still works. */
bool hyocr_text_prepare(hyocr_model *m, int rows, int n_seqs, GError **error);

/* ---- decoding on the device (decode.c; the step itself: text.c) --------------------
 * A pick slot holds one sequence's repetition-penalty set (its prompt ids and every
 * token chosen since) where the backend chooses tokens, so a greedy decode step
 * sends only token ids back to the host. Slots are few (one per live job); -1 with
 * an error when none is free. */
int  hyocr_model_pick_slot_new(hyocr_model *m, const int32_t *ids, int n, GError **error);
/* The slot's set made again: exactly ids[0 .. n) (a round's kept tokens joined it). */
bool hyocr_model_pick_slot_set(hyocr_model *m, int slot, const int32_t *ids, int n, GError **error);
void hyocr_model_pick_slot_free(hyocr_model *m, int slot);
/* m->step_ids with room for rows tokens and a block after them (where drafts nobody reads go);
 * false with an error when it cannot grow. */
bool hyocr_model_step_ids(hyocr_model *m, int rows, GError **error);

typedef struct {
    int             slot;      /* from hyocr_model_pick_slot_new */
    float           penalty;   /* repetition penalty; 1 = off */
    hyocr_pick_draw draw;      /* temperature 0: greedy; else this step's draw (of a block's first row) */
    uint64_t        seed;      /* a block's rows i ≥ 1 draw with hyocr_sampler_uniform(seed, n_draw + i): */
    uint64_t        n_draw;    /* the u plain decoding would have drawn their tokens with */
    bool            logprobs;  /* hyocr_text_decode: the chosen token's log-probabilities … */
    int             top_logprobs;   /* … with this many alternatives (≤ HYOCR_TOP_LOGPROBS_MAX) */
} hyocr_pick;

/* One decode step: each seqs[i] brings one token (n_new 1, pos NULL, no image).
 * With picks (one per sequence) the backend chooses: next[i] = the argmax of the
 * penalised logits (ties to the lowest id), or a draw under picks[i].draw
 * (hyocr_sampler_draw's rules); the token joins the slot's set; and
 * nonfinite[i] = the row's logits held NaN or ±Inf; where picks[i].logprobs,
 * logprobs[i] = its log-probabilities (the backend's pick_logprobs; logprobs may be NULL
 * where no pick asks); logits may be NULL and are not filled. With picks NULL it is
 * hyocr_text_forward (logits [n_seqs · vocab] filled; next, nonfinite untouched). Caches
 * grow only on success. A sequence's taps, when set, receive its row's tapped layer outputs. */
bool hyocr_text_decode(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks,
                       int32_t *next, bool *nonfinite, hyocr_token_logprobs *logprobs, float *logits,
                       GError **error);

/* Work run inside a decode round, captured with it (see hyocr_decode_graphs_run). */
typedef bool (*hyocr_decode_work_fn)(void *data, bool captured, GError **error);

typedef struct {
    hyocr_decode_work_fn before, after;   /* before the embedding (the draft's proposals), after the choice */
    void                *data;
    uint64_t             sig;             /* what else the hooks' captured work depends on (its buffers) */
} hyocr_decode_hooks;

/* A speculative decoding round (speculate.c): like hyocr_text_decode, but sequence i brings
 * seqs[i].n_new tokens, 1 to HYOCR_DFLASH_MAX_BLOCK: one for a plain row, or a verify block (the
 * last committed token, then drafts). Every row is a decode row at its own position; the rows
 * of a block see each other causally, and each is chosen as plain decoding would have chosen
 * the token after it: its penalty set also holds the block's tokens before it, and a sampled
 * row draws with the u of the token it stands for (hyocr_pick seed, n_draw). A block's choices
 * are not added to its slot: the caller adds the tokens it keeps (hyocr_model_pick_slot_set).
 * next and nonfinite get one entry per row, rows in order. The rows' tokens go to m->step_ids
 * (row r at word r) before the work, where hooks->before may overwrite drafts (the DFlash
 * draft's argmax); fed (may be NULL) receives the tokens the rows ran with. Each cache grows by
 * its n_new: the caller rewinds what it rejects (hyocr_kv_seq_rewind). */
bool hyocr_text_decode_round(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks,
                             const hyocr_decode_hooks *hooks, int32_t *next, bool *nonfinite, int32_t *fed,
                             GError **error);

/* Frees the pick slots' storage and the captured decode graphs (hyocr_model_free calls it). */
void hyocr_text_decode_release(hyocr_model *m);

/* Whether decode steps go through captured graphs (the backend has them and its
 * tuning does not say no_graph). */
bool hyocr_decode_graphs_wanted(const hyocr_model *m);

/* Runs one decode step of meta->n_rows rows bound to meta (its block_size and
 * max_blocks, the context bucket, are set here): replays the graph captured for
 * the rows, the bucket and sig (what else the captured work depends on), captures
 * it on the shape's second step, and otherwise runs work uncaptured. */
bool hyocr_decode_graphs_run(hyocr_model *m, hyocr_decode_meta *meta, uint64_t sig, hyocr_decode_work_fn work,
                             void *data, GError **error);

/* *finite = b[0..n) holds no NaN or ±Inf (the vision output's FP16 overflow check). */
bool hyocr_model_check_finite(hyocr_model *m, const hyocr_buf *b, size_t n, bool *finite, GError **error);

/* ---- preemption by swapping (model.c) ----------------------------------------------
 * swap_out copies a sequence's K/V (every layer, its blocks in order) to host memory
 * of hyocr_model_kv_swap_bytes bytes and returns its blocks to the pool (n_tokens is
 * kept); swap_in reserves blocks again and copies the K/V back. */
size_t hyocr_model_kv_swap_bytes(const hyocr_model *m, const hyocr_kv_seq *seq);
bool   hyocr_model_kv_swap_out(hyocr_model *m, hyocr_kv_seq *seq, void *host, GError **error);
bool   hyocr_model_kv_swap_in(hyocr_model *m, hyocr_kv_seq *seq, const void *host, GError **error);
void  *hyocr_model_host_alloc(hyocr_model *m, size_t bytes, GError **error);
void   hyocr_model_host_free(hyocr_model *m, void *p, size_t bytes);

/* ---- vision weights off the device (model.c) ---------------------------------------
 * Under a tight memory budget the ViT + merger weights (≈0.8 GB in FP16) leave the
 * device while a job decodes and come back from the checkpoint before the next
 * vision pass; hyocr_vision_forward reloads them itself when they are out. */
bool    hyocr_model_vision_unload(hyocr_model *m);
bool    hyocr_model_vision_reload(hyocr_model *m, GError **error);
bool    hyocr_model_vision_loaded(const hyocr_model *m);
int64_t hyocr_model_vision_weight_bytes(const hyocr_model *m);

G_END_DECLS
