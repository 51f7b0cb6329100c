/* hyocr — C-callable launchers for the CUDA kernels (the .cu files in kernels/).
 *
 * The host side (src/engine/backend-cuda.c) is plain C; everything that needs
 * nvcc lives behind these functions. Each launcher enqueues on the given stream
 * and returns the launch status (cudaGetLastError); execution errors surface at
 * the next synchronising call. Element types are passed at run time (hk_dtype)
 * so one kernel serves every buffer-kind combination the op table allows; only
 * the attention kernels are templated on the compute type. */
#pragma once
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    HK_F32 = 0,
    HK_F16 = 1,
    HK_BF16 = 2,
} hk_dtype;

/* Per-dimension rotary table: frequency and position axis of each of the D dims. */
#define HK_ROPE_MAX_DIM 256
typedef struct {
    float   inv_freq[HK_ROPE_MAX_DIM / 2];
    uint8_t axis[HK_ROPE_MAX_DIM];
} hk_rope;

/* One sequence of a paged-attention call, as the kernels see it. */
typedef struct {
    int row0;     /* first row of this sequence in qkv / out */
    int n_past;   /* tokens in the cache before this call */
    int n_new;    /* rows in this call */
    int bt_off;   /* offset of its block table in the concatenated tables */
} hk_seq;

/* A split of one decode row's context (flash-decoding). Each split writes an
 * unnormalised partial; the last split of a row to finish (elected through the
 * row's counter) merges them into the output. */
typedef struct {
    int seq;      /* index into the hk_seq array */
    int t0, t1;   /* context tokens [t0, t1) handled by this split */
    int part;     /* slot of its partial result */
    int row;      /* decode row: index of its counter */
    int part0;    /* the row's first slot */
    int n_parts;  /* the row's splits; 1: the split writes the output directly */
    int pad_;
} hk_split;

/* Appends the splits of one decode row with ctx context tokens; returns how many. */
int hk_decode_splits(hk_split *out, int seq, int row, int ctx, int split_len, int part0);

/* The kernel of a paged call's prefill tiles, and so the flattened (position, group head)
 * rows a tile of its list counts: the 64-row template (k_flash, the zero value), a
 * k_prefill variant of W warps × MW blocks of 16 rows, or on Hopper k_prefill_tma (128 rows
 * as W4 MW2, whose kernel it falls back to where a call's cache blocks or groups do not fit
 * its boxes, or the driver has no tensor maps; attention-prefill.cu). */
typedef enum {
    HK_PREFILL_TEMPLATE = 0,
    HK_PREFILL_W4M2,
    HK_PREFILL_W4M1,
    HK_PREFILL_TMA,
} hk_prefill_kind;

/* Everything the paged-attention launchers need; all pointers are device pointers. */
typedef struct {
    hk_dtype       t;              /* compute type of q/k/v/out (F16 or BF16) */
    const void    *qkv;            /* [rows, (Hq + 2·Hkv)·D] */
    void          *out;            /* [rows, Hq·D] */
    void          *k_cache, *v_cache;
    int64_t        kv_slots;       /* the caches' rows (blocks · block_size): k_prefill_tma's maps */
    int            block_size;
    int            Hq, Hkv, D;
    float          scale;
    const hk_seq  *seqs;
    int            n_seqs;
    const int32_t *block_tables;   /* concatenated */
    const int32_t *row_seq;        /* [total rows] → seq index (for the KV write) */
    int            total_rows;
    const int2    *tiles;          /* prefill work: (seq, tile of hk_prefill_tile_rows(prefill) flattened
                                    * (row, group-head) pairs), each sequence's heaviest first */
    int            n_tiles;
    hk_prefill_kind prefill;
    /* Split mode (k_prefill variants only; n_pf_splits > 0: tiles unused): each item's key
     * tiles in splits (hk_prefill_splits: seq, tile, first key tile, end key tile; an item's
     * splits adjacent), every item's merge (seq, tile, first split, splits),
     * and the partials' scratch (hk_prefill_part_floats floats). */
    const int4    *pf_splits;
    int            n_pf_splits;
    const int4    *pf_merges;
    int            n_pf_merges;
    float         *pf_part;
    const hk_split *splits;        /* decode work */
    int            n_splits;
    int            n_dec_rows;
    unsigned      *counters;       /* [n_dec_rows, Hq / hk_decode_heads_per_cta], zero; left zero */
    float         *part_acc;       /* [parts, Hq, D] */
    float         *part_ml;        /* [parts, Hq, 2] (max in log2 units, sum) */
    int            split_max;      /* most tokens one split may hold */
    /* > 0: the decode splits are not listed but derived on the device from each
     * sequence's n_past (sequence r = decode row r, n_splits = rows · dev_max_splits
     * CTAs of dev_split_len keys, those past the context idle), so the launch can be
     * captured once and replayed while the context grows. */
    int            dev_split_len, dev_max_splits;
    /* Decode kernel only. kv_write: it also stores each decode row's new k/v in the
     * cache (the caller then runs hk_kv_write for no decode row; the kernel reads the
     * new token from qkv either way). pdl: launched as a programmatic dependent
     * (sm_90+): the cached keys stream while the kernel before it finishes. */
    int            decode_kv_write, pdl;
    /* Decode kernel only. 0: k_decode (registers hold the keys in flight); 2..4: its
     * staged variant (attention-decode.cu), that many rounds of keys through shared
     * memory by cp.async — the same bits (same splits, rounds and sums), more of the
     * cache in flight a CTA. Others: cudaErrorInvalidValue. decode_mma (with 2 stages only): the
     * staged kernel's splits, rounds and stages on the tensor cores (k_decode_mma: Q·Kᵀ and P·V by
     * mma.sync, P rounded to the compute type as the prefill kernels round it), not the same bits. */
    int            decode_stages, decode_mma;
} hk_paged_args;

/* Shared memory the decode kernel needs for GT heads per CTA, a split length and a block size. */
size_t      hk_decode_smem(int GT, int split_max, int block_size);
/* The same for decode_stages (hk_paged_args) stages; 0: hk_decode_smem. */
size_t      hk_decode_smem_staged(int GT, int split_max, int block_size, int stages);
#define HK_DECODE_STAGES_MAX 4
/* Query heads one decode CTA handles (2 when the GQA group size allows, else 1);
 * the decode grid has Hq / that many CTAs per split. */
int         hk_decode_heads_per_cta(int Hq, int Hkv);
/* Keys per decode split for total_ctx context tokens over rows decode rows: about 2
 * CTAs per SM, never fewer than HK_SPLIT_MIN keys nor more than HK_SPLIT_MAX (what
 * HYOCR_DECODE_SPLIT may force too) — and, for several rows, not more than
 * HK_SPLIT_ROWS_MAX. A CTA reads its keys in rounds of 64, one after the other, so
 * past ~256 keys a split's time is its chain of rounds and more CTAs are faster while
 * each row's merge stays short: batch 16 at 1087-token contexts on the H200 (session 7)
 * decoded 7694 tokens/s with the 640-key splits "2 CTAs per SM" chose, 8242 with 256;
 * one row after a 4096² page (16543 tokens) 711 with the 512 it chooses and 613 with
 * 256, its last CTA then merging 65 splits. */
#define HK_SPLIT_MIN 64
#define HK_SPLIT_ROWS_MAX 256
#define HK_SPLIT_MAX 1024
int         hk_decode_split_len(int sm_count, int64_t total_ctx, int rows, int Hq, int Hkv);
/* CTAs of the decode kernel of that many stages (0: k_decode; mma: k_decode_mma) an SM holds at
 * once, for rows of Hq / Hkv heads, splits of up to split_max keys (0 where it cannot be told). */
int         hk_decode_ctas_per_sm(int Hq, int Hkv, int stages, int mma, int split_max, int block_size);
/* Keys per split of a step of several rows through the staged kernel, so that its CTAs at a
 * context of ctx tokens make one wave (ctas_per_sm × sm_count at most, the most splits a row
 * that fit), rounded up to HK_SPLIT_MIN; 0 where that takes more than HK_SPLIT_WAVE_MAX keys a
 * round the kernel keeps in flight (stages − 1: a deeper kernel keeps a long split's reads
 * going; the caller keeps hk_decode_split_len's). A short split's CTA is mostly its start and its
 * merge, so a second, partial wave costs nearly a full one: H100, session 21, the kernel at
 * 1087–1343 keys (bench/results/2026-12-05-h200-s21, call7), 16 rows 38.4–47.2 µs a layer with
 * 256-key splits (5–6 a row, 640–768 CTAs, ~1.6–1.9 waves of 396) against 36.0–41.5 with
 * 384–448 (3 a row, 384 CTAs); 8 rows were fastest at 192–256 (5–6 a row: one wave). In the
 * engine (call8, three alternated rounds, the same tokens): 16 concurrent 1024² pages 5015–5055
 * → 5075–5178 tokens/s at max batch 16, 3935–4012 → 4091–4145 at 12. */
int         hk_decode_split_len_wave(int sm_count, int ctas_per_sm, int ctx, int rows, int Hq, int Hkv, int stages);
#define HK_SPLIT_WAVE_MAX 512
/* The depth of one row's staged kernel at a context of ctx tokens over at most one CTA an SM
 * (hk_decode_split_len_wave at one CTA an SM): the shallowest of HK_ONE_ROW_STAGES_MIN..MAX whose
 * split is within its cap — three rounds to a 2048² page's bound, four at a 4096² page's —, 0
 * past them all. Why, and what it measured: backend-cuda.c's bound_stages. */
int         hk_decode_one_row_stages(int sm_count, int ctx, int Hq, int Hkv);
#define HK_ONE_ROW_STAGES_MIN 3
#define HK_ONE_ROW_STAGES_MAX 4

/* Launches a test kernel (a missing kernel image shows here) and waits for it;
 * *wgmma becomes 1 when the code this device runs has the Hopper vision attention
 * (built for sm_90a), else 0. */
cudaError_t hk_kernels_probe(cudaStream_t s, int *wgmma);

cudaError_t hk_convert(cudaStream_t s, void *dst, hk_dtype dt, const void *src, hk_dtype st, size_t n);
cudaError_t hk_add(cudaStream_t s, void *x, hk_dtype xt, const void *y, hk_dtype yt, size_t n);
cudaError_t hk_gelu(cudaStream_t s, void *x, hk_dtype xt, size_t n);
cudaError_t hk_swiglu(cudaStream_t s, void *out, hk_dtype ot, const void *gu, hk_dtype gt, int M, int I);
/* Adds bias[N] to every row of x[M, N]. */
cudaError_t hk_bias_add(cudaStream_t s, void *x, hk_dtype xt, const void *bias, hk_dtype bt, int M, int N);
/* residual += delta (delta may be NULL); out = norm(residual). beta == NULL and
 * layernorm == 0 selects RMSNorm_HF; round_t is the compute type the normalised
 * value is rounded to before the weight multiply (RMSNorm_HF only). Rows of N ≤
 * HK_ADD_NORM_WARP_MAX_N (N % 4 == 0, the buffers aligned for 4-element accesses) take one warp each
 * (hk_gemm_rows's NORM repeats its sums). */
#define HK_ADD_NORM_WARP_MAX_N 2048
cudaError_t hk_add_norm(cudaStream_t s, void *out, hk_dtype ot, void *res, hk_dtype rt,
                        const void *delta, hk_dtype dlt, const void *w, hk_dtype wt,
                        const void *b, hk_dtype bt, int M, int N, float eps, int layernorm,
                        hk_dtype round_t);
/* x[gh·gw, C] += bilinear(table[edge, edge, C]) with source scales sy, sx (align_corners=False). */
cudaError_t hk_posemb_add(cudaStream_t s, void *x, hk_dtype xt, const void *table, hk_dtype tt,
                          int edge, int gh, int gw, int C, float sy, float sx);
cudaError_t hk_merge_gather(cudaStream_t s, void *out, hk_dtype ot, const void *x, hk_dtype xt,
                            int gh, int gw, int C);
cudaError_t hk_append_newline(cudaStream_t s, void *out, hk_dtype ot, const void *x, hk_dtype xt,
                              const void *nl, hk_dtype nt, int Hm, int Wm, int C);
cudaError_t hk_embed(cudaStream_t s, void *out, hk_dtype ot, const void *table, hk_dtype tt,
                     const int32_t *ids, int n, int C);
/* In place on qkv[M, (Hq + 2·Hkv)·D] of type t; pos is [n_axes, M] (device). pdl: launched as a
 * programmatic dependent (pos must then be ready before the kernel before it started).
 * heads_per_cta: 0 (or ≥ Hq + Hkv): a row a block of 8 warps; else a row's heads spread
 * over blocks of that many (a warp each, up to 8 warps) — the same bits, more SMs for a
 * step of few rows. */
cudaError_t hk_rope_qknorm(cudaStream_t s, void *qkv, hk_dtype t, int M, const int32_t *pos, int n_axes,
                           int Hq, int Hkv, int D, const hk_rope *rope, const void *qn, hk_dtype qnt,
                           const void *kn, hk_dtype knt, float eps, int pdl, int heads_per_cta);

/* Bidirectional attention over one image: qkv[n, 3·H·D], out[n, H·D], both of type t. D = 72 or 128
 * (attention-vision.cu). wgmma (a hk_vis_kernel): for D = 72, HK_VIS_TMA the Hopper kernel k_vis_tma
 * (TMA copies, warpgroups not held in step; k_vis_wg where the driver has no tensor maps),
 * HK_VIS_WG the Hopper kernel k_vis_wg (both only where hk_kernels_probe said so); HK_VIS_MMA the
 * mma.sync kernel. lazy: the Hopper kernels rescale O only when a row's max rose past 2^8 (the
 * engine's default, faster); 0: at every key tile, the mma.sync kernel's softmax arithmetic. */
typedef enum { HK_VIS_MMA = 0, HK_VIS_WG = 1, HK_VIS_TMA = 2 } hk_vis_kernel;
cudaError_t hk_attention_full(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D,
                              float scale, int wgmma, int lazy);
/* hk_kernels_probe's wgmma part (flash_bench.cu calls it alone): waits on s. */
cudaError_t hk_vision_probe(cudaStream_t s, int *wgmma);
/* Paged attention: the KV write, then the prefill tiles (attention-prefill.cu), then the decode splits
 * (merge fused; attention-decode.cu). */
cudaError_t hk_kv_write(cudaStream_t s, const hk_paged_args *a);
cudaError_t hk_attention_prefill(cudaStream_t s, const hk_paged_args *a);
/* Rows of one prefill tile of kernel k; the largest variant the device's shared memory takes;
 * the variant for one call of tiles128 tiles of 128 flattened rows over Hkv KV heads. */
int             hk_prefill_tile_rows(hk_prefill_kind k);
hk_prefill_kind hk_prefill_pick(int device);
hk_prefill_kind hk_prefill_for_call(hk_prefill_kind largest, int64_t tiles128, int Hkv, int sm_count);
/* Split-KV prefill ("flash-decoding for prefill"; HYOCR_PREFILL_SPLIT, on by default since
 * session 8). A call of fewer than HK_PF_SPLIT_BELOW CTAs an SM (a 1024-row chunk: 128 of
 * 128 rows or 256 of 64 on 132 SMs; its short last chunk a few, each scanning every key)
 * leaves most of the card idle or waiting on its longest CTA. Split, each item's key tiles
 * go to CTAs of about the same length — the call's key tiles (summed over items and KV
 * heads) over per_sm CTAs an SM, never under HK_PF_SPLIT_MIN_TILES (a split's fixed cost:
 * its Q load and its fp32 partial) — and a merge kernel combines the partials.
 * The partials (hk_prefill_part_floats: BM rows × (D + 2) floats a split and KV head, 532 KB
 * an item's split over 8 heads with W4 MW2) stay within part_max bytes, HK_PF_SPLIT_PART_MAX
 * in the engine (or the room of attention_paged's spare buffer, HYOCR_PREFILL_SPARE): longer
 * splits where the rule's would not fit, none where not even one split an item fits. The
 * scratch they share with the decode partials is in the memory plan's
 * HYOCR_MEMPLAN_CUDA_BACKEND (its 1.25 × HK_PF_SPLIT_PART_MAX: scratch grows by a quarter);
 * 6 MiB keeps a 2048² page within its 2.4 GiB (32 MiB took it 34 MB further).
 * hk_prefill_key_tiles: the 64-key tiles the rows of one item see. hk_prefill_split_len: key
 * tiles per split for a call of items items seeing key_tiles tiles in all, the most max_tiles;
 * 0 = run unsplit. hk_prefill_splits: appends an item's splits (returns how many) and sets its
 * *merge (part0: the index of its first split), one split or several. */
#define HK_PF_SPLIT_BELOW 4
/* k_prefill_tma runs one CTA an SM: a 1024-row chunk (128 CTAs on 132 SMs) is already a wave,
 * and split it lost 1–20 % a chunk (H100, session 28 call3: n_past 1024, 61.1 against 73.4
 * µs); calls of under half a wave (a page's short last chunk: 16–24 CTAs) gain 3–4× split. */
#define HK_PF_SPLIT_BELOW_TMA_HALVES 1
#define HK_PF_SPLIT_MIN_TILES 4
#define HK_PF_SPLIT_PER_SM 4
#define HK_PF_SPLIT_PART_MAX ((size_t)6 << 20)
int    hk_prefill_key_tiles(int n_past, int n_new, int G, int tile, int tile_rows);
int    hk_prefill_split_len(hk_prefill_kind k, int64_t items, int64_t key_tiles, int max_tiles, int Hkv, int sm_count,
                            int per_sm, size_t part_max);
int    hk_prefill_splits(int4 *splits, int4 *merge, int seq, int tile, int key_tiles, int split_len, int part0);
size_t hk_prefill_part_floats(hk_prefill_kind k, int n_splits, int Hkv);
/* Any head dim ≤ 256 (warp per row × head; for shapes the fast kernels do not take; attention-generic.cu). */
cudaError_t hk_attention_full_generic(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D,
                                      float scale);
cudaError_t hk_attention_paged_generic(cudaStream_t s, const hk_paged_args *a);
cudaError_t hk_attention_decode(cudaStream_t s, const hk_paged_args *a);

/* *flag (device int, zeroed by the caller) becomes nonzero when x[0..n) of type t holds a NaN or ±Inf
 * (elementwise.cu). */
cudaError_t hk_nonfinite(cudaStream_t s, const void *x, hk_dtype t, size_t n, int *flag);

/* ---- token choice (pick.cu) ---- */
/* Token choice per row of logits[n, V] (fp32) with the repetition penalty over the
 * slot bitmaps (words = ceil(V/32) per slot): see backend.h pick. reciprocal:
 * positive logits times fl(1/p) (torch CUDA) instead of divided by p. Rows whose
 * draws[i] (device memory; NULL: all greedy) has a temperature > 0 are drawn with
 * hyocr_sampler_draw's rules, which needs sample_work (hk_sample_work_bytes). Writes
 * ids[n] and nonfinite[n] (0/1) to device memory; the greedy rows split over several
 * CTAs that meet in work. first (NULL: none): row i with first[i] ≥ 0 verifies speculated
 * tokens: its penalty set also holds step_ids[first[i] + 1 .. i], and its choice is not set in
 * the slot (see backend.h, pick). */
typedef struct {
    float  temperature;
    int    top_k;
    float  top_p;
    float  pad_;
    double u;
} hk_draw;
cudaError_t hk_pick(cudaStream_t s, const float *logits, int n, int V, uint32_t *seen, const int32_t *slots,
                    const float *penalties, const hk_draw *draws, int reciprocal, int32_t *ids, int32_t *nonfinite,
                    void *work, float *sample_work, const int32_t *first, const int32_t *step_ids);
size_t      hk_sample_work_bytes(int n, int V);
/* Bytes of the work area hk_pick needs: zeroed before its first use, left zeroed. */
size_t      hk_pick_work_bytes(int n, int V);

/* After hk_pick, for each row with n_top[row] ≥ 0 (≤ HK_TOP_LOGPROBS_MAX; −1: none): the
 * log-probability of its chosen id (ids, hk_pick's) and its n_top most likely ids, from the
 * raw logits (before the penalty). work: hk_logprobs_work_bytes; V at most 256 · 4096. */
#define HK_TOP_LOGPROBS_MAX 20
typedef struct {
    float logprob;
    int   n_top;
    struct {
        int32_t id;
        float   logprob;
    } top[HK_TOP_LOGPROBS_MAX];
} hk_token_logprobs;
cudaError_t hk_logprobs(cudaStream_t s, const float *logits, int n, int V, const int32_t *n_top, const int32_t *ids,
                        void *work, hk_token_logprobs *out);
size_t      hk_logprobs_work_bytes(int n, int V);

/* out[M, N] (type ot) = x[M, K] · w[N, K]ᵀ for M ≤ HK_GEMV_MAX_ROWS, x and w of compute type t, K a
 * multiple of 8 and x, w 16-byte aligned (gemv.cu). One row: its variants for 2–4 rows lost to
 * cuBLAS (session 2) and were never launched. */
#define HK_GEMV_MAX_ROWS 1
cudaError_t hk_gemv(cudaStream_t s, hk_dtype t, void *out, hk_dtype ot, const void *x, const void *w, int M, int N,
                    int K);
/* out[M, N] (type ot: F16, BF16 or F32) = x[M, K] · w[N, K]ᵀ on the tensor cores for 1 ≤ M ≤
 * HK_GEMM_ROWS_MAX (gemv.cu): x and w of compute type t, 16-byte aligned, K a multiple of 32
 * (cudaErrorInvalidValue otherwise: callers fall back to cuBLAS), N any. Row m of the result is
 * bit-identical whatever M and the other rows are. mode: hk_gemv1's (below), for M rows: NORM and
 * NORM_GLU read res[M, K] and nw (16-byte aligned, K ≤ HK_GEMM_ROWS_NORM_MAX_K) instead of x and
 * normalise as hk_add_norm does at that K; RESIDUAL adds into res[M, N]. Each mode gives the bits
 * of the unfused ops it replaces, their product through hk_gemm_rows (PLAIN). pdl: launched as a
 * programmatic dependent. */
#define HK_GEMM_ROWS_MAX 16
#define HK_GEMM_ROWS_NORM_MAX_K HK_ADD_NORM_WARP_MAX_N   /* the width whose sums NORM repeats */
cudaError_t hk_gemm_rows(cudaStream_t s, hk_dtype t, int mode, void *out, hk_dtype ot, const void *x, float *res,
                         const void *nw, hk_dtype nwt, float eps, const void *w, int M, int N, int K, int pdl);
/* The same product, laid out otherwise (gemv.cu), for the decode step's shapes: `groups`
 * column groups of 8 a CTA (1..HK_GEMM_ROWS_GROUPS_MAX): a warp's x chunks (NORM: the rows
 * normalised once) serve that many groups' weights — the same bits as 1, less x or residual
 * read a column. For the products of more CTAs than a wave holds (q|k|v, gate|up).
 * hk_gemm_rows is groups 1. */
#define HK_GEMM_ROWS_GROUPS_MAX 2
cudaError_t hk_gemm_rows_ex(cudaStream_t s, hk_dtype t, int mode, void *out, hk_dtype ot, const void *x, float *res,
                            const void *nw, hk_dtype nwt, float eps, const void *w, int M, int N, int K, int pdl,
                            int groups);
/* The rule for a card of `sms` SMs (two CTAs an SM): 2 groups where one group's CTAs take more
 * than a wave (N over 2112 on an H200). */
int         hk_gemm_rows_groups(int N, int sms);
/* One-row products with a neighbouring op fused (gemv.cu), w [N, K] of compute type t, K a
 * multiple of 8, w 16-byte aligned:
 *   PLAIN     out[N] (type ot) = x · wᵀ
 *   NORM      out = RMSNorm_HF(res[K], nw, eps) · wᵀ, the norm as hk_add_norm stores it (K ≤ 8192)
 *   NORM_GLU  w is [2N, K] (gate | up): out = silu(gate) ⊙ up of the normed row, as hk_swiglu
 *   RESIDUAL  res[N] (fp32) += x · wᵀ rounded to t (as a product stored, then added)
 * x (PLAIN, RESIDUAL) is of type t and 16-byte aligned; res is fp32. pdl: launched as a programmatic
 * dependent (sm_90+: the weight loads overlap the tail of the kernel before). */
enum { HK_GEMV_PLAIN = 0, HK_GEMV_NORM = 1, HK_GEMV_NORM_GLU = 2, HK_GEMV_RESIDUAL = 3 };
cudaError_t hk_gemv1(cudaStream_t s, hk_dtype t, int mode, void *out, hk_dtype ot, const void *x, float *res,
                     const void *nw, hk_dtype nwt, float eps, const void *w, int N, int K, int pdl);

/* ---- the DFlash draft (dflash.cu) ----
 * Both read the draft's cursor (cursor[0], device memory): a captured round reads, when
 * replayed, what the host wrote since. hk_qknorm_rope: per-head RMSNorm of q and k, then the
 * rotation at 1-D position cursor[0] + row (Qwen3's order), in place on qkv[M, (Hq + 2·Hkv)·D];
 * Hq may be 0 (qn unused). hk_attention_append: stores the k | v of qkv's M rows at rows
 * cursor[0].. of k_cache / v_cache ([cap rows, Hkv·D], type ct; rows past cap dropped), then every
 * query row attends to all cursor[0] + M rows, no mask, GQA, out[M, Hq·D] (type t); Hq = 0 only
 * stores. part (hk_append_part_floats floats; 0: the shape takes the plain kernel, part unused)
 * holds the splits' partial results. */
cudaError_t hk_qknorm_rope(cudaStream_t s, void *qkv, hk_dtype t, int M, const int32_t *cursor, int Hq, int Hkv, int D,
                           const hk_rope *rope, const void *qn, hk_dtype qnt, const void *kn, hk_dtype knt, float eps);
size_t      hk_append_part_floats(int cap, int M, int Hq, int Hkv, int D);
cudaError_t hk_attention_append(cudaStream_t s, hk_dtype t, void *out, const void *qkv, void *k_cache,
                                void *v_cache, hk_dtype ct, const int32_t *cursor, int cap, int M, int Hq, int Hkv,
                                int D, float scale, float *part, size_t part_floats);

/* A verify block of a bound decode step (speculative decoding): n_rows rows from qkv row row0 at
 * positions n_past.., their block table at bt_off; row r attends causally to keys [0, n_past + r],
 * all in the cache already (hk_kv_write). hk_attention_verify: one launch over n_blocks blocks
 * (device memory), the keys read once per KV head and split (a grid sized for ctx_cap keys, those
 * past a block's idle), then merged into out's rows; part: hk_verify_part_floats floats.
 * hk_verify_fits: whether a block of n_rows takes it (its queries of a KV head fit one CTA). */
typedef struct {
    int row0, n_rows, n_past, bt_off;
} hk_block;
size_t      hk_verify_part_floats(int ctx_cap, int n_blocks, int Hq, int Hkv, int D);
int         hk_verify_fits(int n_rows, int Hq, int Hkv, int D);
cudaError_t hk_attention_verify(cudaStream_t s, hk_dtype t, void *out, const void *qkv, const void *k_cache,
                                const void *v_cache, int block_size, const int32_t *bt, const hk_block *blocks,
                                int n_blocks, int ctx_cap, int Hq, int Hkv, int D, float scale, float *part);

/* ---- the draft's proposals and the steps that verify them ----
 * hk_argmax: out[i] = the first maximum of row i of x[n, V] (fp32; a NaN wins, as torch.argmax)
 * (pick.cu). hk_embed_ids: hk_embed with the ids in device memory; an id outside [0, rows) gives
 * a zero row. hk_copy_rows: dst[r·ds + c] = src[r·ss + c] (element strides, converting between
 * types) for r < rows, c < cols (elementwise.cu). */
cudaError_t hk_argmax(cudaStream_t s, const float *x, int n, int V, int32_t *out);
cudaError_t hk_embed_ids(cudaStream_t s, void *out, hk_dtype ot, const void *table, hk_dtype tt, const int32_t *ids,
                         int n, int C, int rows);
cudaError_t hk_copy_rows(cudaStream_t s, void *dst, hk_dtype dt, size_t ds, const void *src, hk_dtype st, size_t ss,
                         int rows, int cols);

#ifdef __cplusplus
}
#endif
