/* hyocr — the narrow seam between the model code and a compute device.
 *
 * The model (vision.c, text.c) is written once against this table of ops; the CPU
 * backend implements it in fp32 (OpenBLAS when present), the CUDA backend in FP16/BF16
 * with an fp32 residual stream. Buffers are opaque; their element type is the
 * backend's business (HYOCR_BUF_ACT / HYOCR_BUF_WEIGHT) except where an op says
 * fp32 (logits, downloads). Small integer metadata (token ids, positions, block
 * tables) is passed as host arrays: the backend copies what it needs.
 *
 * Shapes are row-major, rows × cols, and counted in elements. Every op may fail
 * (device OOM, driver error) and reports it through GError; the engine then fails
 * the job, never the process. */
#pragma once
#include "config.h"
#include "hyocr-types.h"
#include "hyocr.h"
#include "safetensors.h"
#include "tuning.h"
#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct hyocr_backend hyocr_backend;
typedef struct hyocr_buf     hyocr_buf;
struct hyocr_decode_meta;

typedef enum {
    HYOCR_BUF_ACT,      /* activations: fp32 on CPU, fp16/bf16 on CUDA */
    HYOCR_BUF_F32,      /* always fp32 (residual stream, logits, norms' statistics) */
    HYOCR_BUF_WEIGHT,   /* weights: converted once at upload */
    HYOCR_BUF_KV,       /* paged KV cache storage */
    /* An allocation request, not a kind a buffer keeps: a weight matrix whose every value
     * is a bf16 (the checkpoint's type), read only by matmul, the fused products and embed.
     * The buffer comes back as HYOCR_BUF_WEIGHT; its elem_size says whether the backend
     * kept the 16 bits (the CPU: its products widen them, which is exact) or converted
     * them as it converts any weight. */
    HYOCR_BUF_WEIGHT_BF16,
} hyocr_buf_kind;

/* Backends allocate these (possibly inside a larger struct of their own). */
struct hyocr_buf {
    hyocr_buf_kind kind;
    int            elem_size;   /* bytes per element as stored */
    size_t         n;           /* elements */
    void          *data;        /* host pointer (CPU) or device pointer (CUDA) */
};

/* A window of n elements of b starting at element off, so the model can run the
 * row-wise parts of a layer on chunks of rows (memory budget). Ops read only the
 * kind, elem_size, n and data of their operands, which is what makes a view pass
 * wherever its parent does; a backend must keep it that way. Never free a view.
 * A window outside b comes back empty, so the op that gets it fails its size
 * check instead of touching memory it does not own. */
static inline hyocr_buf hyocr_buf_view(const hyocr_buf *b, size_t off, size_t n)
{
    hyocr_buf v = *b;
    if (off > b->n || n > b->n - off) {
        v.n = 0;
        return v;
    }
    v.data = (uint8_t *)b->data + off * (size_t)b->elem_size;
    v.n = n;
    return v;
}

/* Rotary embedding parameters, fixed per model (spec §5.4): hyocr_rope_params_init
 * works them out once, the position axis of every rotary dim included, and every
 * backend reads the same table. */
#define HYOCR_ROPE_MAX_DIM 512
typedef struct {
    int               head_dim;
    float             inv_freq[HYOCR_ROPE_MAX_DIM / 2];  /* head_dim/2 values, fp32 as the reference computes them */
    int               section[4];        /* half-head units, sums to head_dim/2 */
    int               n_sections;        /* 0: plain 1-D RoPE */
    hyocr_rope_layout layout;
    uint8_t           axis[HYOCR_ROPE_MAX_DIM];  /* position axis of rotary dim d (§5.4.2); all 0 for 1-D RoPE */
} hyocr_rope_params;

/* One sequence's view of the paged KV cache for an attention call. */
typedef struct {
    const int32_t *block_table;  /* physical block ids, ceil((past+n_new)/block_size) entries */
    int            n_past;       /* tokens already in the cache */
    int            n_new;        /* tokens in this call (rows of q for this sequence) */
} hyocr_seq_view;

/* A sampled row's draw parameters for one step (pick): temperature ≤ 0 means greedy;
 * top_k ≤ 0 and top_p outside (0, 1) are off; u ∈ [0, 1) from hyocr_sampler_uniform. */
typedef struct {
    float  temperature;
    int    top_k;
    float  top_p;
    float  pad_;
    double u;
} hyocr_pick_draw;

typedef struct {
    const char *name;
    void   (*free)(hyocr_backend *be);

    hyocr_buf *(*alloc)(hyocr_backend *be, hyocr_buf_kind kind, size_t n, GError **error);
    void   (*buf_free)(hyocr_backend *be, hyocr_buf *b);
    /* Converts the checkpoint tensor (any float dtype) to the backend weight type, written
     * at dst_off elements (so fused QKV / gate-up weights are built by consecutive uploads). */
    bool   (*upload_weight)(hyocr_backend *be, hyocr_buf *dst, size_t dst_off,
                            const hyocr_tensor *t, GError **error);
    /* From host_alloc's memory the copy may be queued (CUDA): src then stays untouched until
     * the backend next waits (a download, read_bytes, sync). */
    bool   (*upload_f32)(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const float *src, size_t n, GError **error);
    bool   (*download_f32)(hyocr_backend *be, const hyocr_buf *src, size_t src_off, float *dst, size_t n, GError **error);
    /* dst[dst_off + i] = src[src_off + i], i < n (same or convertible kinds) */
    bool   (*copy)(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const hyocr_buf *src, size_t src_off, size_t n, GError **error);

    /* out[M,N] = x[M,K] · w[N,K]ᵀ (+ bias[N] when bias != NULL). w may start at w_off elements. */
    bool   (*matmul)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, const hyocr_buf *w, size_t w_off,
                     const hyocr_buf *bias, int M, int N, int K, GError **error);
    /* residual[M,N] += delta (when delta != NULL); out = LayerNorm(residual) (γ, β). */
    bool   (*add_layernorm)(hyocr_backend *be, hyocr_buf *out, hyocr_buf *residual, const hyocr_buf *delta,
                            const hyocr_buf *gamma, const hyocr_buf *beta, int M, int N, float eps, GError **error);
    /* residual += delta (when delta != NULL); out = RMSNorm_HF(residual)·w. out may equal residual when delta is NULL. */
    bool   (*add_rmsnorm)(hyocr_backend *be, hyocr_buf *out, hyocr_buf *residual, const hyocr_buf *delta,
                          const hyocr_buf *w, int M, int N, float eps, GError **error);
    /* x += y, n elements */
    bool   (*add)(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *y, size_t n, GError **error);
    /* in place exact erf GELU */
    bool   (*gelu)(hyocr_backend *be, hyocr_buf *x, size_t n, GError **error);
    /* out[M,I] = silu(gu[:, :I]) ⊙ gu[:, I:2I]  (gu = fused gate|up GEMM output [M, 2I]) */
    bool   (*swiglu)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *gu, int M, int I, GError **error);

    /* x[gh·gw, C] += bilinear(table[edge·edge, C] starting at row table_row0, → gh×gw) (align_corners=False).
     * An edge×edge grid gets the table unchanged. R2 (scale factor (g + 0.1)/edge) resamples an axis
     * whose size equals edge when the other does not, as torch's CUDA kernel does (its CPU kernel
     * would copy that axis). */
    bool   (*posemb_add)(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *table, size_t table_row0,
                         int edge, int gh, int gw, int C, hyocr_posemb_interp interp, GError **error);
    /* Gathers 2×2 cells for the merger conv: out[(gh/2)(gw/2), 4C], order (c, dy, dx). */
    bool   (*merge_gather)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, int gh, int gw, int C, GError **error);
    /* out[Hm·(Wm+1), C]: rows arranged as the merger output grid with a newline column;
     * x[Hm·Wm, C] rows are placed at (i, j<Wm), newline[C] at (i, Wm). The image
     * begin/end rows that complete the Hm·(Wm+1)+2 tokens are the caller's. */
    bool   (*append_newline)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, const hyocr_buf *newline,
                             int Hm, int Wm, int C, GError **error);

    /* Bidirectional attention within one image: qkv[n, 3·H·D] (q|k|v), out[n, H·D]. */
    bool   (*attention_full)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv, int n, int H, int D,
                             float scale, GError **error);

    /* Rotary embedding (XD-RoPE, positions pos[4·M] axis-major, or 1-D when n_axes = 1)
     * then per-head RMSNorm of q and k, in place on qkv[M, (Hq + 2·Hkv)·D]. */
    bool   (*rope_qknorm)(hyocr_backend *be, hyocr_buf *qkv, int M, const int32_t *pos, int n_axes,
                          int Hq, int Hkv, const hyocr_rope_params *rope,
                          const hyocr_buf *q_norm, const hyocr_buf *k_norm, float eps, GError **error);
    /* Writes k and v of qkv rows into the paged cache, then causal GQA attention of the
     * q rows over the cache. Sequences are packed in qkv/out in order. spare (may be NULL):
     * a buffer that holds nothing the caller needs during the call, which the backend may
     * fill with the call's own intermediate results (CUDA: the split prefill's partials). */
    bool   (*attention_paged)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv,
                              hyocr_buf *k_cache, hyocr_buf *v_cache, int block_size,
                              const hyocr_seq_view *seqs, int n_seqs,
                              int Hq, int Hkv, int D, float scale, hyocr_buf *spare, GError **error);

    /* ---- the DFlash draft (dflash.c), whose layers attend to a context cache without a mask ----
     * Both take the draft's cursor from a buffer, cursor[0] (an int32 as raw bits in an F32
     * buffer, as the pick slots hold their words): a round captured once reads, when replayed,
     * the cursor the host has written since.
     * qknorm_rope: per-head RMSNorm of q and k, THEN the rotary embedding at the 1-D position
     * cursor[0] + i of row i (Qwen3's order; the target's rope_qknorm rotates first), in place on
     * qkv[M, (Hq + 2·Hkv)·D]. Hq may be 0 (rows of k | v only; q_norm unused). */
    bool   (*qknorm_rope)(hyocr_backend *be, hyocr_buf *qkv, int M, const hyocr_buf *cursor,
                          int Hq, int Hkv, const hyocr_rope_params *rope,
                          const hyocr_buf *q_norm, const hyocr_buf *k_norm, float eps, GError **error);
    /* Stores the k and v of qkv's M rows at rows n_past = cursor[0].. of a contiguous cache
     * (k_cache, v_cache: [rows, Hkv·D]), then every q row attends to all n_past + M cached rows
     * with no mask, GQA, out[M, Hq·D]. Hq = 0: the rows are only stored (out unused). Rows past
     * the cache's end are neither stored nor read (the CPU backend fails instead). */
    bool   (*attention_append)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv,
                               hyocr_buf *k_cache, hyocr_buf *v_cache, const hyocr_buf *cursor, int M,
                               int Hq, int Hkv, int D, float scale, GError **error);
    /* ids[off + i] = the first maximum of row i of logits[n, V] (F32; a NaN wins, as
     * torch.argmax), written as raw int32 words into an F32 buffer: the draft's proposals,
     * written where the target's step reads its tokens. */
    bool   (*argmax)(hyocr_backend *be, const hyocr_buf *logits, int n, int V, hyocr_buf *ids, size_t off,
                     GError **error);
    /* out[n, C] = table[ids[off + i]] with the ids raw int32 words of a buffer (written by the
     * host or by argmax). An id outside the table fails on the CPU and gives a zero row on CUDA
     * (which cannot look before it reads). */
    bool   (*embed_ids)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *table, const hyocr_buf *ids, size_t off,
                        int n, int C, GError **error);
    /* dst[dst_off + r·dst_stride + c] = src[src_off + r·src_stride + c], r < rows, c < cols
     * (same or convertible kinds, as copy): rows of one buffer into columns of another in one op
     * (the tapped layers' outputs of a step into the draft's context rows). */
    bool   (*copy_rows)(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, size_t dst_stride, const hyocr_buf *src,
                        size_t src_off, size_t src_stride, int rows, int cols, GError **error);

    /* out[n, C] = table[ids[i]] */
    bool   (*embed)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *table, const int32_t *ids, int n, int C,
                    GError **error);

    void   (*mem_info)(hyocr_backend *be, hyocr_mem_info *out);
    /* A point of the engine's code by name (a string literal), for HYOCR_PROFILE's host table to
     * place its time between op calls (optional: NULL where nothing profiles). */
    void   (*mark)(hyocr_backend *be, const char *where);
    /* Waits for queued work (no-op on CPU); errors surface here on async devices. */
    bool   (*sync)(hyocr_backend *be, GError **error);
    /* Gives the system back the device memory the backend keeps for reuse once its buffers
     * are freed (optional: NULL where it keeps none). The engine calls it when it goes idle. */
    void   (*release_cached)(hyocr_backend *be);

    /* *finite = no NaN or ±Inf among b[0..n) (waits for the answer): FP16 overflow check. */
    bool   (*check_finite)(hyocr_backend *be, const hyocr_buf *b, size_t n, bool *finite, GError **error);
    /* Raw bytes between a buffer (from byte offset off) and host memory, in stream order
     * (read_bytes waits until dst is filled): the swap path of preemption. */
    bool   (*read_bytes)(hyocr_backend *be, const hyocr_buf *src, size_t off, void *dst, size_t bytes,
                         GError **error);
    bool   (*write_bytes)(hyocr_backend *be, hyocr_buf *dst, size_t off, const void *src, size_t bytes,
                          GError **error);
    /* Host memory the device copies to and from at full speed (pinned on CUDA). Neither may
     * need be (the engine's pixel pool calls them with NULL: pinned.h). */
    void  *(*host_alloc)(hyocr_backend *be, size_t bytes, GError **error);
    void   (*host_free)(hyocr_backend *be, void *p, size_t bytes);

    /* ---- token choice on the device (both backends) ----
     * For row i of logits[n, V] (fp32): the repetition penalty (penalties[i]; off when 1, ≤ 0 or
     * not finite) over the ids marked in slot slots[i] of seen (ceil(V/32) uint32 words per slot,
     * bit v of word v/32; an F32-kind buffer used as raw words). Positive logits are divided as
     * torch does on this backend's device: ℓ·fl(1/p) on CUDA, ℓ/p on the CPU. Then greedy — the
     * argmax (first maximum; a NaN wins, as torch.argmax) — or, where draws (NULL: every row
     * greedy) gives row i a temperature > 0, hyocr_sampler_draw's rules with draws[i].u. The
     * chosen id's bit is then set in the slot. The results stay with the backend until
     * pick_fetch, which waits for them: ids[i] and nonfinite[i] (row i held a NaN or ±Inf
     * before the penalty).
     * first (NULL: every row plain) marks the rows that verify speculated tokens (speculate.c):
     * where first[i] ≥ 0, row i belongs to a block whose first row is first[i], its penalty set
     * is the slot's plus step_ids[first[i] + 1 .. i] (the tokens the block's rows before it fed,
     * raw int32 words) as plain decoding would have had it, and its choice is not marked in the
     * slot (the caller marks the tokens it keeps). */
    bool   (*pick)(hyocr_backend *be, const hyocr_buf *logits, int n, int V, hyocr_buf *seen,
                   const int32_t *slots, const float *penalties, const hyocr_pick_draw *draws,
                   const int32_t *first, const hyocr_buf *step_ids, GError **error);
    bool   (*pick_fetch)(hyocr_backend *be, int n, int32_t *ids, bool *nonfinite, GError **error);
    /* After pick, for its rows (before the next pick, graph-captured or not): where n_top[i] ≥ 0
     * (at most HYOCR_TOP_LOGPROBS_MAX; −1: row i asks none), out[i] gets the log-probability of
     * the id the pick chose for row i and the n_top[i] most likely ids, from logits before the
     * penalty (hyocr_sampler_logprobs's rules; CUDA adds the exponentials in another order).
     * Waits for them; out[i] is untouched where n_top[i] < 0. */
    bool   (*pick_logprobs)(hyocr_backend *be, const hyocr_buf *logits, int n, int V, const int32_t *n_top,
                            hyocr_token_logprobs *out, GError **error);

    /* ---- graph-friendly decode (optional: NULL where the backend has none) ----
     * decode_bind copies one step's metadata to fixed device memory in one transfer; until
     * decode_unbind, embed, rope_qknorm, attention_paged and pick take their
     * metadata from there (their host arguments must describe the same step; embed_ids,
     * copy_rows and the draft's ops need none), so work captured between graph_begin and
     * graph_end replays correctly on later steps. */
    bool   (*decode_bind)(hyocr_backend *be, const struct hyocr_decode_meta *meta, GError **error);
    void   (*decode_unbind)(hyocr_backend *be);
    bool   (*graph_begin)(hyocr_backend *be, GError **error);
    /* Ends the capture; NULL with an error when it failed (the work was not run). */
    void  *(*graph_end)(hyocr_backend *be, GError **error);
    /* *stale: a buffer the graph captured has moved since; nothing was launched. */
    bool   (*graph_launch)(hyocr_backend *be, void *graph, bool *stale, GError **error);
    void   (*graph_free)(hyocr_backend *be, void *graph);

    /* ---- fused decode products (optional: NULL where the backend has none) ----
     * They do what the unfused ops do, with the same roundings, in fewer passes; the CUDA
     * versions take 1 to 16 rows (and give the unfused ops' bits from 2 rows on), the CPU
     * ones any M. fused_rows: the most rows they take with inner dimension K (norm: that
     * of norm_matmul, else matmul_residual's); 0: none. The model fuses a step only when
     * every product of its layer takes its rows.
     * norm_matmul: out[M, N] = (RMSNorm_HF(residual[M, K])·norm_w) · w[N, K]ᵀ, residual unchanged
     * (= add_rmsnorm without delta into a scratch, then matmul); with glu, w is [2N, K]
     * (gate | up rows) and out = silu(gate) ⊙ up (= matmul to [M, 2N], then swiglu). */
    bool   (*norm_matmul)(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *residual, const hyocr_buf *norm_w,
                          float eps, const hyocr_buf *w, int M, int N, int K, bool glu, GError **error);
    /* residual[M, N] (F32) += x[M, K] · w[N, K]ᵀ, the product rounded to the activation type
     * first (= matmul into an ACT buffer, then the add of add_rmsnorm). */
    bool   (*matmul_residual)(hyocr_backend *be, hyocr_buf *residual, const hyocr_buf *x, const hyocr_buf *w,
                              int M, int N, int K, GError **error);
    int    (*fused_rows)(hyocr_backend *be, int K, bool norm);

    /* ---- a second lane (optional: NULL where the backend has none) ----
     * Between side_begin (false without an error: no side lane now, run on the main one)
     * and side_end, ops are queued on a second stream, so a page's vision pass runs beside
     * the decode steps (on CUDA it goes first, the steps fill its gaps); the host does not wait
     * there (buffers taken and given back are stream-ordered). side_idle: whether that
     * work is done (waiting for it when wait; false with an error when it failed). Its
     * results may be read on the main lane once it is. */
    bool   (*side_begin)(hyocr_backend *be, GError **error);
    void   (*side_end)(hyocr_backend *be);
    bool   (*side_idle)(hyocr_backend *be, bool wait, GError **error);
} hyocr_backend_ops;

/* The context bound of a captured decode step is the rows' longest context rounded up to this
 * many tokens (decode.c): one graph serves a step's contexts over that stretch. */
#define HYOCR_DECODE_CTX_STEP 1024

/* One decode step for decode_bind: one row (token) per sequence. */
typedef struct hyocr_decode_meta {
    int                   n_rows;
    const int32_t        *ids;          /* [n_rows] */
    const hyocr_seq_view *views;        /* [n_rows], n_new 1 each */
    int                   block_size;   /* of the paged cache */
    int                   max_blocks;   /* block-table stride ≥ every row's block count: the
                                         * context bound the captured work is sized for */
    const int32_t        *pick_slots;   /* [n_rows] or NULL */
    const float          *pick_penalties;
    const hyocr_pick_draw *pick_draws;  /* [n_rows] or NULL: all greedy */
    const int32_t        *pick_first;   /* [n_rows] or NULL: see pick's first */
    bool                  shared;       /* rows of one sequence (a verify block) read each other's new
                                         * K/V: they are all stored before the attention reads */
} hyocr_decode_meta;

struct hyocr_backend {
    const hyocr_backend_ops *ops;
    hyocr_backend_kind        kind;
    hyocr_compute_dtype       dtype;
    hyocr_tuning              tuning;   /* as the params gave them; the model takes its own from here */
    int                       bf16_elem; /* bytes an element of a HYOCR_BUF_WEIGHT_BF16 request takes */
};

/* The ops' mark where the profiler has one (nothing otherwise). */
static inline void hyocr_backend_mark(hyocr_backend *be, const char *where)
{
    if (be && be->ops->mark) be->ops->mark(be, where);
}

typedef struct {
    int     n_threads;            /* CPU: 0 = all cores */
    int     device;               /* CUDA ordinal */
    hyocr_compute_dtype dtype;    /* CUDA: F16 (default) or BF16 */
    int64_t memory_limit;         /* bytes this process may take on the device; 0 = no limit;
                                   * negative: a fraction of the card in millionths (−500000 = half) */
    hyocr_tuning tuning;          /* the switches (tuning.h); zero: every default */
} hyocr_backend_params;

hyocr_backend *hyocr_backend_cpu_init(const hyocr_backend_params *p, GError **error);
/* Returns NULL with HYOCR_ERROR_BACKEND when no GPU/driver is usable, or when built without CUDA. */
hyocr_backend *hyocr_backend_cuda_init(const hyocr_backend_params *p, GError **error);
void           hyocr_backend_free(hyocr_backend *be);


/* Fills rope params from the text config: NTK-alpha base, fp32 inv_freq, section layout
 * and the axis table. False (HYOCR_ERROR_CONFIG) when the head dim is odd or larger than
 * HYOCR_ROPE_MAX_DIM, or the sections are negative or do not sum to head_dim/2. */
bool           hyocr_rope_params_init(hyocr_rope_params *rp, const hyocr_config *cfg, GError **error);
/* Plain 1-D RoPE with base theta over head_dim dims (the DFlash draft), inv_freq as torch makes it. */
void           hyocr_rope_params_init_plain(hyocr_rope_params *rp, int head_dim, double theta);
/* The arguments of rope_qknorm and qknorm_rope (op) as every backend checks them: min_hq
 * is the fewest q heads the op takes, max_dim the backend's largest head dim; *axes is
 * the number of position axes the call reads (1 for 1-D RoPE). */
bool           hyocr_rope_check(const hyocr_backend *be, const char *op, const hyocr_rope_params *rp, int M,
                                const int32_t *pos, int n_axes, int Hq, int Hkv, int min_hq, int max_dim, int *axes,
                                GError **error);

/* The kind a loader asks for a weight buffer of these n tensors as: HYOCR_BUF_WEIGHT_BF16 for a
 * matrix (a buffer only matmul, the fused products and embed read) whose tensors are all BF16,
 * HYOCR_BUF_WEIGHT otherwise. */
hyocr_buf_kind hyocr_weight_kind(const hyocr_tensor *const *t, int n, bool matrix);

/* The bytes a memory_limit of hyocr_backend_params allows on a device (or machine) of
 * total bytes: the limit itself, or a negative one as millionths of total; 0 = none
 * (also when total is unknown). Each backend resolves its limit once, at init. */
int64_t        hyocr_memory_limit_resolve(int64_t limit, int64_t total);

/* posemb_add's source scale along an axis of out cells from an edge-cell table, as torch
 * computes it; copy (the grid is edge×edge: torch takes the table unchanged) gives 1.
 * With R2 an axis of size edge but not both is still resampled, as torch's CUDA kernel does. */
float          hyocr_posemb_scale(int out, int edge, bool copy, hyocr_posemb_interp interp);

/* attention_paged's arguments as every backend checks them: the shape, the caches
 * (one block at least, v as large as k), each sequence's lengths and block table
 * against the cache. *rows (when not NULL): the q rows the call packs. The backend's own limits
 * (head dims, query heads per KV head) are its own check. */
bool           hyocr_paged_check(const hyocr_backend *be, const hyocr_buf *k_cache, const hyocr_buf *v_cache,
                                 int block_size, const hyocr_seq_view *seqs, int n_seqs, int Hq, int Hkv, int D,
                                 int64_t *rows, GError **error);

G_END_DECLS
