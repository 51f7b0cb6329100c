/* hyocr — FlashAttention-2 style tiles on the tensor cores (mma.sync m16n8k16,
 * fp32 accumulation, fp32 online softmax), 64 query rows × 64 keys per step,
 * 4 warps of 16 rows. One template serves bidirectional attention over the
 * packed qkv rows (head_dim 128; the vision tower's 72 has its own kernel,
 * attention-vision.cu) and the paged prefill (causal, K/V gathered from cache
 * blocks, the q heads of one KV group flattened into the 64 rows so a K/V tile
 * is loaded once per group). Memory is O(tile): nothing of size n² ever exists.
 * Also the KV write of the new rows into the paged cache. */
#include "hk-wgmma.h"
#include <limits.h>
#include <math.h>
#include <type_traits>

#define FA_BM 64
#define FA_BN 64
#define FA_THREADS 128

struct FaArgs {
    const void *q, *k, *v;   /* vision: qkv, qkv + H·D, qkv + 2·H·D; paged: qkv, k_cache, v_cache */
    void *out;
    int q_stride, kv_stride, out_stride;   /* elements per row; kv_stride unused when paged */
    int n;                                /* vision: tokens of the image */
    int G, Hkv;                           /* paged: q heads per KV head */
    float scale_log2;
    const hk_seq *seqs;
    const int2 *tiles;
    const int32_t *bt;
    int block_size;
    int bs_shift;                         /* k_prefill: log2 of block_size where it is a power of 2, else −1 */
    const int4 *splits;                   /* k_prefill split mode: (seq, tile, first key tile, end key tile) */
    const int4 *merges;                   /* k_prefill_merge: (seq, tile, first split, splits) */
    float *part, *part_ml;                /* split mode: [split · Hkv + KV head][BM][D] and [..][BM][2] */
};

/* Where this CTA's 64 rows and its keys live. */
struct FaTile {
    int row0, n_past, flat, r0, n_keys, kvh, head0, bt_off;
};

template <bool PAGED>
__device__ __forceinline__ FaTile fa_tile(const FaArgs &a)
{
    FaTile t;
    if (PAGED) {
        int2 w = a.tiles[blockIdx.x];
        hk_seq s = a.seqs[w.x];
        t.row0 = s.row0;
        t.n_past = s.n_past;
        t.flat = s.n_new * a.G;
        t.r0 = w.y * FA_BM;
        int last = min(t.r0 + FA_BM, t.flat) - 1;
        t.n_keys = s.n_past + last / a.G + 1;
        t.kvh = blockIdx.y;
        t.head0 = blockIdx.y * a.G;
        t.bt_off = s.bt_off;
    } else {
        t.row0 = 0;
        t.n_past = 0;
        t.flat = a.n;
        t.r0 = blockIdx.x * FA_BM;
        t.n_keys = a.n;
        t.kvh = blockIdx.y;
        t.head0 = blockIdx.y;
        t.bt_off = 0;
    }
    return t;
}

template <typename T, int D, bool PAGED>
__device__ __forceinline__ const T *fa_key_row(const FaArgs &a, const FaTile &t, const void *base, int key)
{
    if (PAGED) {
        int blk = a.bt[t.bt_off + key / a.block_size];
        size_t slot = (size_t)blk * a.block_size + key % a.block_size;
        return (const T *)base + (slot * a.Hkv + t.kvh) * D;
    }
    return (const T *)base + (size_t)key * a.kv_stride + (size_t)t.head0 * D;
}

/* Flattened row r (within the sequence) → (position, head) → q/out element offset. */
template <bool PAGED>
__device__ __forceinline__ size_t fa_row_off(const FaArgs &a, const FaTile &t, int r, int stride, int D)
{
    int pos = PAGED ? r / a.G : r;
    int head = PAGED ? t.head0 + r % a.G : t.head0;
    return (size_t)(t.row0 + pos) * stride + (size_t)head * D;
}

template <typename T, int D, int DS, bool PAGED>
__device__ __forceinline__ void fa_load_kv(T *s, const FaArgs &a, const FaTile &t, const void *base, int key0)
{
    constexpr int CPR = D / 8;
    for (int c = threadIdx.x; c < FA_BN * CPR; c += FA_THREADS) {
        int r = c / CPR, ch = c - r * CPR, key = key0 + r;
        bool ok = key < t.n_keys;
        const T *src = fa_key_row<T, D, PAGED>(a, t, base, ok ? key : 0);
        cp16(s + r * DS + ch * 8, src + ch * 8, ok);
    }
}

template <typename T, int D, int DS, bool PAGED>
__device__ __forceinline__ void fa_load_q(T *s, const FaArgs &a, const FaTile &t)
{
    constexpr int CPR = D / 8;
    for (int c = threadIdx.x; c < FA_BM * CPR; c += FA_THREADS) {
        int r = c / CPR, ch = c - r * CPR, fr = t.r0 + r;
        bool ok = fr < t.flat;
        const T *src = (const T *)a.q + fa_row_off<PAGED>(a, t, ok ? fr : t.r0, a.q_stride, D);
        cp16(s + r * DS + ch * 8, src + ch * 8, ok);
    }
}

/* Masks keys past each row's limit, then the online-softmax update of m, l, o. */
template <int D>
__device__ __forceinline__ void fa_softmax(float (*sc)[4], float (*o)[4], float *m, float *l, const int *lim,
                                           int key0, int tig, float scale_log2)
{
    hk_softmax_tile<FA_BN, D>(
        sc, o, m, l, tig,
        [&](float v, int h, int k) { return key0 + k <= lim[h] ? v * scale_log2 : -INFINITY; },
        [](float m0, float m1) { return exp2f(m0 - m1); }, [](float v, float mx) { return exp2f(v - mx); });
}

template <typename T, int D, bool PAGED>
__device__ __forceinline__ void fa_store(const FaArgs &a, const FaTile &t, float (*o)[4], float *l, int rloc,
                                         int tig)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float s = hk_quad_sum(l[h]);
        int fr = t.r0 + rloc + 8 * h;
        if (fr >= t.flat) continue;
        float inv = 1.0f / s;
        T *dst = (T *)a.out + fa_row_off<PAGED>(a, t, fr, a.out_stride, D);
        hk_store_row<T, D>(dst, o, h, inv, tig);
    }
}

/* STAGES K/V tiles in flight: with 2, tile j + 2's copies are issued as soon as every warp is
 * done with tile j, so the loads of the next tile overlap this tile's products (one barrier
 * pair a tile). With 1 (cards whose shared memory per block is under 2 × 2 tiles: Turing),
 * V of tile j loads under q·kᵀ and K of tile j + 1 under P·V. */
template <typename T, int D, int DP, bool PAGED, int STAGES>
__global__ void __launch_bounds__(FA_THREADS) k_flash(FaArgs a)
{
    constexpr int DS = DP + 8;   /* +16 bytes per row: conflict-free ldmatrix */
    extern __shared__ __align__(16) unsigned char fa_smem[];
    T *sK = (T *)fa_smem, *sV = sK + STAGES * FA_BN * DS;   /* stage s at + s · FA_BN · DS */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;
    FaTile t = fa_tile<PAGED>(a);
    if (t.r0 >= t.flat) return;

    /* Pad columns D..DP of K (and Q, which passes through sK) must be zero for q·kᵀ. */
    constexpr int PAD = DP > D ? DP - D : 1;
    if (DP > D)
        for (int i = threadIdx.x; i < STAGES * FA_BN * PAD; i += FA_THREADS)
            sK[(i / PAD) * DS + D + i % PAD] = T(0.0f);
    fa_load_q<T, D, DS, PAGED>(sK, a, t);
    cp_commit();
    cp_wait_all();
    __syncthreads();
    uint32_t qf[1][DP / 16][4];   /* one block of 16 rows (the hk_qk layout) */
    {
        int mi = lane >> 3;
#pragma unroll
        for (int kk = 0; kk < DP / 16; kk++)
            ldsm_x4(qf[0][kk], sK + (warp * 16 + (lane & 7) + (mi & 1) * 8) * DS + kk * 16 + (mi >> 1) * 8);
    }
    __syncthreads();

    const int rloc = warp * 16 + g;
    int lim[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int fr = min(t.r0 + rloc + 8 * h, t.flat - 1);
        lim[h] = PAGED ? t.n_past + fr / a.G : t.n_keys - 1;
    }
    float o[1][D / 8][4];
#pragma unroll
    for (int dt = 0; dt < D / 8; dt++) o[0][dt][0] = o[0][dt][1] = o[0][dt][2] = o[0][dt][3] = 0.0f;
    float m[2] = { -1e30f, -1e30f }, l[2] = { 0.0f, 0.0f };

    const int n_tiles = (t.n_keys + FA_BN - 1) / FA_BN;
    if (STAGES == 2) {
        for (int j = 0; j < 2 && j < n_tiles; j++) {
            fa_load_kv<T, D, DS, PAGED>(sK + j * FA_BN * DS, a, t, a.k, j * FA_BN);
            fa_load_kv<T, D, DS, PAGED>(sV + j * FA_BN * DS, a, t, a.v, j * FA_BN);
            cp_commit();
        }
        for (int j = 0; j < n_tiles; j++) {
            if (j + 1 < n_tiles) cp_wait<1>();   /* tile j's group is the older of the two */
            else cp_wait<0>();
            __syncthreads();
            const T *k = sK + (j & 1) * FA_BN * DS, *v = sV + (j & 1) * FA_BN * DS;
            float sc[1][FA_BN / 8][4];
            hk_qk<T, 1, FA_BN, DP / 16, DS>(sc, qf, k, lane);
            fa_softmax<D>(sc[0], o[0], m, l, lim, j * FA_BN, tig, a.scale_log2);
            hk_pv<T, 1, FA_BN, D, DS>(o, sc, v, lane);
            __syncthreads();   /* stage j & 1 is free */
            if (j + 2 < n_tiles) {
                fa_load_kv<T, D, DS, PAGED>(sK + (j & 1) * FA_BN * DS, a, t, a.k, (j + 2) * FA_BN);
                fa_load_kv<T, D, DS, PAGED>(sV + (j & 1) * FA_BN * DS, a, t, a.v, (j + 2) * FA_BN);
                cp_commit();
            }
        }
    } else {
        fa_load_kv<T, D, DS, PAGED>(sK, a, t, a.k, 0);
        cp_commit();
        for (int j = 0; j < n_tiles; j++) {
            cp_wait_all();
            __syncthreads();
            fa_load_kv<T, D, DS, PAGED>(sV, a, t, a.v, j * FA_BN);
            cp_commit();
            float sc[1][FA_BN / 8][4];
            hk_qk<T, 1, FA_BN, DP / 16, DS>(sc, qf, sK, lane);
            fa_softmax<D>(sc[0], o[0], m, l, lim, j * FA_BN, tig, a.scale_log2);
            cp_wait_all();
            __syncthreads();
            if (j + 1 < n_tiles) {
                fa_load_kv<T, D, DS, PAGED>(sK, a, t, a.k, (j + 1) * FA_BN);
                cp_commit();
            }
            hk_pv<T, 1, FA_BN, D, DS>(o, sc, sV, lane);
        }
    }
    fa_store<T, D, PAGED>(a, t, o[0], l, rloc, tig);
}

/* ---- paged causal prefill, head dim 128: k_prefill ----
 * The 64-row template above reads every K/V fragment from shared memory once per
 * 16 query rows and rebuilds each key's cache address twice (K, V) with a block
 * table load per 16-byte chunk. This kernel:
 * - 16·W·MW flattened rows a CTA (W warps of MW blocks of 16 rows): each K/V tile
 *   copied from L2 serves 128 rows, not 64, halving the L2 traffic of the long
 *   scans (the template's 256 CTAs of a 1024-row chunk at n_past 3072 read ~480 MB
 *   of K/V a call). With MW = 2 (W4 MW2, FlashAttention-2's tile at head dim 128)
 *   each K/V fragment read from shared memory also feeds two row blocks, but a
 *   thread needs all 255 registers and a 1024-row chunk makes only 16 items × 8 KV
 *   heads = 128 CTAs: one warp per SM sub-partition, nothing to hide its latencies.
 *   Measured (hk_prefill_for_call): W4 MW2 wins by far where a call has the CTAs,
 *   W4 MW1 (64 rows, twice the CTAs) on the chunks; W8 MW1 (128 rows in 8 warps) won
 *   neither and is gone. Q stays in shared memory
 *   and its fragments are read per k16 step (MW = 2 has no registers for them);
 * - one cache address per key row a tile, shared by the K and the V copy (a shift, not a
 *   division, for blocks of a power of 2 tokens);
 * - one barrier a tile: two stages, tile j + 1's copies issued right after the
 *   barrier that ends every warp's use of its stage (tile j − 1), so they land
 *   under tile j's products;
 * - causal work only: a warp skips the key tiles past its last row's limit, and
 *   masks only the tiles that cross some row's limit (the diagonal);
 * - the scale folded into one FFMA before ex2.approx, the max kept unscaled (the
 *   vision kernel's softmax);
 * - a 1-D grid, item-major (item · Hkv + KV head): the host lists each sequence's
 *   tiles heaviest first, so the heaviest of every head start first.
 * The arithmetic is the template's (fp32 products, fp32 online softmax, P rounded
 * to T for P·V); the sums' order and the exp2 differ by rounding only. */
#define PF_BN 64
#define PF_D 128
#define PF_DS (PF_D + 8)   /* +16 bytes per row: conflict-free ldmatrix */

template <int W, int MW> struct PfShape {
    static constexpr int NT = 32 * W, BM = 16 * W * MW, TILE = PF_BN * PF_DS;
    static constexpr size_t SMEM = ((size_t)BM * PF_DS + 4 * (size_t)TILE) * 2;   /* Q + 2 stages of K|V */
};

/* 256 threads an SM, so up to 255 registers a thread: MW = 2 needs them (2 × 64 output
 * floats and 2 × 32 scores), and MW = 1 spills under 128. Shared memory holds two CTAs of
 * 104 KB (W4 MW2) or 87 KB (W4 MW1) on Hopper anyway. */
#define PF_MIN_CTAS(W) (8 / (W))

/* K and V of keys key0..key0+63 into one stage; keys past n_keys read as zero. A
 * thread copies the same 16-byte column of PF_BN·16/NT key rows, one address each. */
template <typename T, int NT>
__device__ __forceinline__ void pf_load_kv(T *sK, T *sV, const FaArgs &a, int bt_off, int kvh, int key0, int n_keys)
{
    const int ch = threadIdx.x & 15;
#pragma unroll 4   /* 4 block-table loads in flight at once; 8 spill W4 MW2 on sm_80 */
    for (int i = 0; i < PF_BN * 16 / NT; i++) {
        int r = (threadIdx.x >> 4) + i * (NT / 16), key = key0 + r;
        bool ok = key < n_keys;
        int kk = ok ? key : 0;
        int b = a.bs_shift >= 0 ? kk >> a.bs_shift : kk / a.block_size;   /* uniform: no division for 16 */
        int blk = __ldg(a.bt + bt_off + b);
        size_t off = (((size_t)blk * a.block_size + (kk - b * a.block_size)) * a.Hkv + kvh) * PF_D + ch * 8;
        cp16(sK + r * PF_DS + ch * 8, (const T *)a.k + off, ok);
        cp16(sV + r * PF_DS + ch * 8, (const T *)a.v + off, ok);
    }
}

/* S = Q·Kᵀ of this warp's MW row blocks × 64 keys, Q's fragments read per k16 step. */
template <typename T, int MW>
__device__ __forceinline__ void pf_qk(float (*sc)[PF_BN / 8][4], const T *sQ, const T *sK, int lane)
{
#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int nt = 0; nt < PF_BN / 8; nt++) sc[w][nt][0] = sc[w][nt][1] = sc[w][nt][2] = sc[w][nt][3] = 0.0f;
    const int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < PF_D / 16; kk++) {
        uint32_t qf[MW][4];
#pragma unroll
        for (int w = 0; w < MW; w++)
            ldsm_x4(qf[w], sQ + (w * 16 + (lane & 7) + (mi & 1) * 8) * PF_DS + kk * 16 + (mi >> 1) * 8);
#pragma unroll
        for (int p = 0; p < PF_BN / 16; p++) {
            uint32_t b[4];
            ldsm_x4(b, sK + (p * 16 + (lane & 7) + (mi >> 1) * 8) * PF_DS + kk * 16 + (mi & 1) * 8);
#pragma unroll
            for (int w = 0; w < MW; w++) {
                mma16816<T>(sc[w][2 * p], qf[w], b);
                mma16816<T>(sc[w][2 * p + 1], qf[w], b + 2);
            }
        }
    }
}

/* Online softmax on raw scores (m unscaled, exp2((s − m)·c) one FFMA + ex2); with MASK,
 * keys past a row's limit (n_past + its position) weigh zero. fr0: the flattened row of
 * this lane's h = 0 row of block 0; rows past the sequence take the last row's limit. */
template <int MW, bool MASK>
__device__ __forceinline__ void pf_softmax(float (*sc)[PF_BN / 8][4], float (*o)[PF_D / 8][4], float (*m)[2],
                                           float (*l)[2], int key0, int fr0, int flat, int G, int n_past, int tig,
                                           float c)
{
#pragma unroll
    for (int w = 0; w < MW; w++) {
        int lim[2];
#pragma unroll
        for (int h = 0; h < 2; h++) lim[h] = MASK ? n_past + min(fr0 + w * 16 + 8 * h, flat - 1) / G - key0 : 0;
        hk_softmax_tile<PF_BN, PF_D>(
            sc[w], o[w], m[w], l[w], tig, [&](float v, int h, int k) { return MASK && k > lim[h] ? -INFINITY : v; },
            [&](float m0, float m1) { return ex2((m0 - m1) * c); },
            [&](float v, float mx) { return ex2(fmaf(v, c, -(mx * c))); });
    }
}

/* A split's partial: row r (of the CTA's BM) at slot · BM + r, o as fp32, (m, l) beside it.
 * fr0: this lane's h = 0 row of block 0 (flattened), rows from flat on are past the sequence;
 * the CTA's rows from its thread index (nothing more held live through the loop: W4 MW2
 * spilled on sm_80 otherwise). */
template <int MW, int BM>
__device__ __forceinline__ void pf_store_part(const FaArgs &a, size_t slot, float (*o)[PF_D / 8][4],
                                              float (*m)[2], float (*l)[2], int fr0, int flat, int tig)
{
    float *acc = a.part + slot * BM * PF_D;
    float2 *ml = (float2 *)a.part_ml + slot * BM;
    const int rl0 = (threadIdx.x >> 5) * 16 * MW + ((threadIdx.x & 31) >> 2);
#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float sum = hk_quad_sum(l[w][h]);
            int r = rl0 + w * 16 + 8 * h;
            if (fr0 + w * 16 + 8 * h >= flat) continue;
            float2 *d = (float2 *)(acc + (size_t)r * PF_D + 2 * tig);
#pragma unroll
            for (int dt = 0; dt < PF_D / 8; dt++) d[dt * 4] = make_float2(o[w][dt][2 * h], o[w][dt][2 * h + 1]);
            if (tig == 0) ml[r] = make_float2(m[w][h], sum);
        }
}

/* An item's work: unsplit (seq, tile, all its key tiles) or its split's (seq, tile, first key
 * tile, end key tile). */
template <bool SPLIT> __device__ __forceinline__ int4 pf_work(const FaArgs &a, int item)
{
    if (SPLIT) return a.splits[item];
    const int2 w2 = a.tiles[item];
    return make_int4(w2.x, w2.y, 0, INT_MAX);
}

/* An unsplit item's rows, normalised, into out (rows from flat on are past the sequence). */
template <typename T, int MW>
__device__ __forceinline__ void pf_store_out(const FaArgs &a, const hk_seq &s, int kvh, float (*o)[PF_D / 8][4],
                                             float (*l)[2], int fr0, int flat, int tig)
{
    const int G = a.G;
#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float sum = hk_quad_sum(l[w][h]);
            int fr = fr0 + w * 16 + 8 * h;
            if (fr >= flat) continue;
            int pos = fr / G;
            T *dst = (T *)a.out + (size_t)(s.row0 + pos) * a.out_stride + (size_t)(kvh * G + fr - pos * G) * PF_D;
            hk_store_row<T, PF_D>(dst, o[w], h, 1.0f / sum, tig);
        }
}

/* CTA = one item (a sequence's BM flattened (position, group head) rows) of one KV head.
 * SPLIT (a.splits, flash-decoding for prefill): the CTA sees only the key tiles
 * [kt0, kt1) of its item and leaves its rows' unnormalised partial (fp32 o, the raw max m
 * and the sum l) in slot split · Hkv + KV head for k_prefill_merge — an item's only split
 * too: with a second way to store its output, W4 MW2 spilled 40 bytes on sm_80. The causal mask and the skips are the same: a split's rows may see
 * none of its keys (m stays −1e30, l 0: weight zero in the merge); the first split holds
 * key 0, which every row sees. */
template <typename T, int W, int MW, bool SPLIT>
__global__ void __launch_bounds__(32 * W, PF_MIN_CTAS(W)) k_prefill(FaArgs a)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap();   /* never launched: hk_prefill_pick gives Turing (64 KB a block) the template */
#else
    typedef PfShape<W, MW> S;
    extern __shared__ __align__(16) unsigned char pf_smem[];
    T *sQ = (T *)pf_smem, *sKV = sQ + S::BM * PF_DS;   /* stage s: K at sKV + 2·s·TILE, V after it */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tig = lane & 3;
    const int item = blockIdx.x / a.Hkv, kvh = blockIdx.x - item * a.Hkv;
    const int4 wk = pf_work<SPLIT>(a, item);
    const hk_seq s = a.seqs[wk.x];
    const int G = a.G, flat = s.n_new * G, r0 = wk.y * S::BM;
    if (r0 >= flat) return;
    const int n_keys = s.n_past + (min(r0 + S::BM, flat) - 1) / G + 1;

    for (int c = threadIdx.x; c < S::BM * 16; c += S::NT) {
        int r = c >> 4, ch = c & 15, fr = min(r0 + r, flat - 1), pos = fr / G;
        const T *src = (const T *)a.q + (size_t)(s.row0 + pos) * a.q_stride + (size_t)(kvh * G + fr - pos * G) * PF_D;
        cp16(sQ + r * PF_DS + ch * 8, src + ch * 8, r0 + r < flat);
    }
    const int j0 = wk.z, n_tiles = min((n_keys + PF_BN - 1) / PF_BN, wk.w);   /* unsplit: 0, all */
    {
        T *st = sKV + (j0 & 1) * 2 * S::TILE;   /* tile j in stage j & 1 */
        pf_load_kv<T, S::NT>(st, st + S::TILE, a, s.bt_off, kvh, j0 * PF_BN, n_keys);
    }
    cp_commit();

    /* this warp's rows: flattened fw0 .. fw0 + 16·MW − 1; keys past hi are masked for all of
     * them, keys from lo + 1 on for some */
    const int fw0 = r0 + warp * 16 * MW;
    const int hi = fw0 < flat ? s.n_past + min(fw0 + 16 * MW - 1, flat - 1) / G : -1;
    const int lo = fw0 < flat ? s.n_past + fw0 / G : -1;
    const int fr0 = fw0 + (lane >> 2);
    float o[MW][PF_D / 8][4], m[MW][2], l[MW][2];
#pragma unroll
    for (int w = 0; w < MW; w++) {
#pragma unroll
        for (int dt = 0; dt < PF_D / 8; dt++) o[w][dt][0] = o[w][dt][1] = o[w][dt][2] = o[w][dt][3] = 0.0f;
        m[w][0] = m[w][1] = -1e30f;
        l[w][0] = l[w][1] = 0.0f;
    }

    for (int j = j0; j < n_tiles; j++) {
        cp_wait<0>();      /* tile j (and Q) landed */
        __syncthreads();   /* for every warp; and every warp is done with tile j − 1's stage */
        if (j + 1 < n_tiles) {
            T *nK = sKV + ((j + 1) & 1) * 2 * S::TILE;
            pf_load_kv<T, S::NT>(nK, nK + S::TILE, a, s.bt_off, kvh, (j + 1) * PF_BN, n_keys);
        }
        cp_commit();
        const int key0 = j * PF_BN;
        if (key0 > hi) continue;   /* warp-uniform: every row of the warp is done */
        const T *sK = sKV + (j & 1) * 2 * S::TILE, *sV = sK + S::TILE;
        float sc[MW][PF_BN / 8][4];
        pf_qk<T, MW>(sc, sQ + warp * 16 * MW * PF_DS, sK, lane);
        if (key0 + PF_BN - 1 > lo)
            pf_softmax<MW, true>(sc, o, m, l, key0, fr0, flat, G, s.n_past, tig, a.scale_log2);
        else
            pf_softmax<MW, false>(sc, o, m, l, key0, fr0, flat, G, s.n_past, tig, a.scale_log2);
        hk_pv<T, MW, PF_BN, PF_D, PF_DS>(o, sc, sV, lane);
    }

    if (SPLIT) pf_store_part<MW, S::BM>(a, blockIdx.x, o, m, l, fr0, flat, tig);   /* slot: the block index */
    else pf_store_out<T, MW>(a, s, kvh, o, l, fr0, flat, tig);
#endif
}

/* The split items' outputs: o = Σ 2^((m_s − M)·c)·o_s / Σ 2^((m_s − M)·c)·l_s over the item's
 * splits s (M their largest m), in fp32. A warp a row, 4 dims a lane; CTA (x: merge entry ·
 * Hkv + KV head, y: 4 of its rows): one CTA per item and head would leave each warp a chain of
 * BM / 4 rows of dependent L2 reads. */
template <typename T, int BM>
__global__ void __launch_bounds__(128) k_prefill_merge(FaArgs a)
{
    const int e = blockIdx.x / a.Hkv, kvh = blockIdx.x - e * a.Hkv, lane = threadIdx.x & 31;
    const int r = blockIdx.y * 4 + (threadIdx.x >> 5);
    const int4 mg = a.merges[e];   /* seq, tile, first split, splits */
    const hk_seq s = a.seqs[mg.x];
    const int G = a.G, fr = mg.y * BM + r;
    if (fr >= s.n_new * G) return;
    const float c = a.scale_log2;
    const float2 *ml = (const float2 *)a.part_ml + ((size_t)mg.z * a.Hkv + kvh) * BM + r;   /* step Hkv · BM */
    const float4 *acc = (const float4 *)a.part + (((size_t)mg.z * a.Hkv + kvh) * BM + r) * (PF_D / 4) + lane;
    const size_t step = (size_t)a.Hkv * BM;
    float mx = -INFINITY;
#pragma unroll 4
    for (int p = 0; p < mg.w; p++) mx = fmaxf(mx, ml[p * step].x);
    float sum = 0.0f;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
    for (int p = 0; p < mg.w; p++) {
        float2 v = ml[p * step];
        float4 x = acc[p * step * (PF_D / 4)];
        float wt = exp2f((v.x - mx) * c);
        sum += wt * v.y;
        o.x += wt * x.x;
        o.y += wt * x.y;
        o.z += wt * x.z;
        o.w += wt * x.w;
    }
    float inv = 1.0f / sum;
    int pos = fr / G;
    T *dst = (T *)a.out + (size_t)(s.row0 + pos) * a.out_stride + (size_t)(kvh * G + fr - pos * G) * PF_D + 4 * lane;
    *(uint2 *)dst = make_uint2(pack2<T>(o.x * inv, o.y * inv), pack2<T>(o.z * inv, o.w * inv));
}

/* ---- paged causal prefill on the tensor memory accelerator (Hopper): k_prefill_tma ----
 * k_vis_tma's schedule (attention-vision.cu) for head dim 128 over the paged cache, with
 * k_prefill's items, splits, masks and softmax (so the same partials, merge and sums up to the
 * order the products add their k steps):
 * - one warp copies, the NC = 2 warpgroups of 64 flattened rows (128 a CTA, W4 MW2's items)
 *   compute. Q comes in as two boxes a warpgroup (dims 0..63, 64..127) of a map over the packed
 *   qkv rows (dims × heads × rows, boxes of 64 dims × G heads × 64 / G positions: the box's
 *   rows are the flattened (position, group head) rows); K and V tile j as one box per cache
 *   block (block_size rows, or 64 of a larger block) and half, of maps over the caches (dims ×
 *   KV heads × slots), into a ring of NS stages (full K, full V and empty mbarriers a stage);
 * - everything in shared memory is in the 128-byte swizzle wgmma reads: q·kᵀ is eight k16
 *   steps from shared memory (Q_lo·K_lo ×4, Q_hi·K_hi ×4), P·V four steps of two n64
 *   products (V_lo, V_hi; MN-major) with P from registers;
 * - keys past the item's last row's limit: their blocks are not copied; the last tile's V rows
 *   past it are zeroed by the copier before it signals the tile (its weights are zero, but the
 *   stale rows of a cache block, or a stage never written, may not be finite); K's rows are
 *   masked by select, so they may hold anything;
 * - a warpgroup stops multiplying after the last tile its rows see, and still waits for and
 *   frees every tile of the CTA (the copier's ring counts on all eight warps);
 * - the warpgroup index comes through a shuffle, so ptxas sees it uniform: a wgmma under a
 *   branch it cannot prove uniform serialises every wgmma of the kernel (session 27, C7520). */
#define PT_NC 2
#define PT_BM (64 * PT_NC)
#define PT_NT (128 * PT_NC + 32)
#define PT_HALF 8192u  /* one half (64 dims) of a 64-row tile: 64 × 128 bytes */
#define PT_STAGE (4 * PT_HALF) /* K_lo, K_hi, V_lo, V_hi */

template <int NS> struct PtShape {
    static constexpr uint32_t Q = 2 * PT_HALF * PT_NC;   /* Q_lo, Q_hi a warpgroup */
    static constexpr size_t SMEM = Q + (size_t)NS * PT_STAGE + (3 * NS + 2) * 8 + 1024;
};

/* The copier: Q, then every tile of [j0, n_tiles) once its stage is free. br: rows a box. */
template <int NS>
__device__ __forceinline__ void pt_copy(const FaArgs &a, const CUtensorMap *qm, const CUtensorMap *km,
                                        const CUtensorMap *vm, uint32_t qbase, uint32_t sbase, uint32_t bars,
                                        unsigned char *gbase, const hk_seq &s, int kvh, int r0, int j0, int n_tiles,
                                        int n_keys, int br)
{
#if HK_HAVE_WGMMA
    const int lane = threadIdx.x & 31, G = a.G;
    const uint32_t qbar = bars + 8 * 3 * NS, tbar = qbar + 8;
    if (lane == 0) {
        mb_expect(qbar, PtShape<NS>::Q);
        for (int w = 0; w < PT_NC; w++)
            for (int h = 0; h < 2; h++)
                tma_load3(qbase + 2 * PT_HALF * w + PT_HALF * h, qm, qbar, 64 * h, kvh * G, s.row0 + (r0 + 64 * w) / G);
    }
    for (int j = j0; j < n_tiles; j++) {
        const int i = j - j0, st = i % NS, key0 = j * PF_BN, valid = min(PF_BN, n_keys - key0);
        const int boxes = (valid + br - 1) / br;
        const uint32_t bytes = (uint32_t)boxes * br * 256, sk = sbase + st * PT_STAGE;
        const uint32_t fk = bars + 8 * st, fv = bars + 8 * (NS + st);
        const bool tail = valid < PF_BN;
        if (lane == 0) {
            if (i >= NS) mb_wait(bars + 8 * (2 * NS + st), ((i / NS) - 1) & 1);
            mb_expect(fk, bytes);
            mb_expect(tail ? tbar : fv, bytes);
            for (int b = 0; b < boxes; b++) {
                const int key = key0 + b * br, blk = __ldg(a.bt + s.bt_off + key / a.block_size);
                const int slot = blk * a.block_size + key % a.block_size;
                const uint32_t off = (uint32_t)b * br * 128;
                tma_load3(sk + off, km, fk, 0, kvh, slot);
                tma_load3(sk + PT_HALF + off, km, fk, 64, kvh, slot);
                tma_load3(sk + 2 * PT_HALF + off, vm, tail ? tbar : fv, 0, kvh, slot);
                tma_load3(sk + 3 * PT_HALF + off, vm, tail ? tbar : fv, 64, kvh, slot);
            }
            if (tail) mb_wait(tbar, 0);   /* one tail a CTA: its last tile */
        }
        if (tail) {   /* V's rows valid..63, both halves, zeroed; then the tile is ready */
            __syncwarp();
            unsigned char *v = gbase + (sk - sbase) + 2 * PT_HALF;
            for (int c = lane; c < (PF_BN - valid) * 8 * 2; c += 32) {
                const int h = c / ((PF_BN - valid) * 8), r = valid + (c % ((PF_BN - valid) * 8)) / 8, ch = c % 8;
                *(int4 *)(v + h * PT_HALF + r * 128 + ch * 16) = make_int4(0, 0, 0, 0);
            }
            wg_fence_smem();
            __syncwarp();
            if (lane == 0) mb_arrive(fv);
        }
    }
#endif
}

/* CTA = one item (k_prefill's: 128 flattened rows of one KV head, or with SPLIT its key tiles
 * [kt0, kt1)); 2 consumer warpgroups and the copier warp. */
template <typename T, int NS, bool SPLIT>
__global__ void __launch_bounds__(PT_NT, 1)
    k_prefill_tma(const __grid_constant__ CUtensorMap qm, const __grid_constant__ CUtensorMap km,
                  const __grid_constant__ CUtensorMap vm, FaArgs a, int br)
{
#if HK_HAVE_WGMMA
    extern __shared__ __align__(128) unsigned char pt_raw[];
    const uint32_t qbase = (smem_addr(pt_raw) + 1023u) & ~1023u, sbase = qbase + PtShape<NS>::Q;
    const uint32_t bars = sbase + NS * PT_STAGE; /* full K [NS], full V [NS], empty [NS], Q, V tail */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tig = lane & 3;
    const int item = blockIdx.x / a.Hkv, kvh = blockIdx.x - item * a.Hkv;
    const int4 wk = pf_work<SPLIT>(a, item);
    const hk_seq s = a.seqs[wk.x];
    const int G = a.G, flat = s.n_new * G, r0 = wk.y * PT_BM;
    if (r0 >= flat) return;
    const int n_keys = s.n_past + (min(r0 + PT_BM, flat) - 1) / G + 1;
    const int j0 = wk.z, n_tiles = min((n_keys + PF_BN - 1) / PF_BN, wk.w);
    if (threadIdx.x == 0) {
        for (int i = 0; i < NS; i++) {
            mb_init(bars + 8 * i, 1);
            mb_init(bars + 8 * (NS + i), 1);
            mb_init(bars + 8 * (2 * NS + i), 4 * PT_NC);
        }
        mb_init(bars + 8 * 3 * NS, 1);
        mb_init(bars + 8 * 3 * NS + 8, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == 4 * PT_NC) {
        pt_copy<NS>(a, &qm, &km, &vm, qbase, sbase, bars, pt_raw + (sbase - smem_addr(pt_raw)), s, kvh, r0, j0, n_tiles,
                    n_keys, br);
        return;
    }

    const int w = __shfl_sync(0xffffffffu, threadIdx.x >> 7, 0);   /* uniform to ptxas */
    const int wr0 = r0 + 64 * w, fw0 = r0 + warp * 16, fr0 = fw0 + (lane >> 2);
    /* the last key this warpgroup's rows see (−1: no rows), the first key some of this warp's don't */
    const int hi = wr0 < flat ? s.n_past + (min(wr0 + 63, flat - 1)) / G : -1;
    const int lo = fw0 < flat ? s.n_past + fw0 / G : -1;
    const int jend = hi < 0 ? j0 : max(j0, min(n_tiles, hi / PF_BN + 1));
    const uint32_t dq = tm_lo_sw(qbase + 2 * PT_HALF * w), dk = tm_lo_sw(sbase);
    float sc[1][PF_BN / 8][4], o[1][PF_D / 8][4], m[1][2] = { { -1e30f, -1e30f } }, l[1][2] = { { 0.0f, 0.0f } };
    uint32_t pa[PF_BN / 16][4];
#pragma unroll
    for (int i = 0; i < PF_D / 8; i++) o[0][i][0] = o[0][i][1] = o[0][i][2] = o[0][i][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < PF_BN / 8; i++) sc[0][i][0] = sc[0][i][1] = sc[0][i][2] = sc[0][i][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < PF_BN / 16; i++) pa[i][0] = pa[i][1] = pa[i][2] = pa[i][3] = 0u;
    mb_wait(bars + 8 * 3 * NS, 0);

    for (int j = j0; j < jend; j++) {
        const int i = j - j0, st = i % NS, key0 = j * PF_BN;
        const uint32_t ph = (i / NS) & 1, u = st * (PT_STAGE >> 4);
        mb_wait(bars + 8 * st, ph);
        wg_pin<PF_BN / 8>(sc[0]);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {   /* Q_lo·K_lo, then Q_hi·K_hi: a half is 512 16-byte units */
            const uint32_t hd = (kk >> 2) * (PT_HALF >> 4) + 2 * (kk & 3);
            wg_mma_ss_n64<T>(sc[0], tm_desc(dq + hd, TM_SW_HI), tm_desc(dk + u + hd, TM_SW_HI), kk);
        }
        wg_commit();
        wg_wait<0>();
        wg_pin<PF_BN / 8>(sc[0]);
        if (key0 + PF_BN - 1 > lo)
            pf_softmax<1, true>(sc, o, m, l, key0, fr0, flat, G, s.n_past, tig, a.scale_log2);
        else
            pf_softmax<1, false>(sc, o, m, l, key0, fr0, flat, G, s.n_past, tig, a.scale_log2);
        wg_pack<T, PF_BN>(pa, sc[0]);
        mb_wait(bars + 8 * (NS + st), ph);
        wg_pin_u<PF_BN / 16>(pa);
        wg_pin<PF_D / 8>(o[0]);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < PF_BN / 16; kk++) {   /* 16 keys a step: 2048 bytes of each V half */
            wg_mma_n64t<T>(o[0], pa[kk], tm_desc(dk + u + 2 * (PT_HALF >> 4) + 128 * kk, TM_SW_HI), 1);
            wg_mma_n64t<T>(o[0] + 8, pa[kk], tm_desc(dk + u + 3 * (PT_HALF >> 4) + 128 * kk, TM_SW_HI), 1);
        }
        wg_commit();
        wg_wait<0>();
        wg_pin<PF_D / 8>(o[0]);
        wg_pin_u<PF_BN / 16>(pa);
        if (lane == 0) mb_arrive(bars + 8 * (2 * NS + st));
    }
    for (int j = jend; j < n_tiles; j++) {   /* tiles past this warpgroup's rows: waited for and freed */
        const int i = j - j0, st = i % NS;
        mb_wait(bars + 8 * st, (i / NS) & 1);
        if (lane == 0) mb_arrive(bars + 8 * (2 * NS + st));
    }

    if (SPLIT) pf_store_part<1, PT_BM>(a, blockIdx.x, o, m, l, fr0, flat, tig);
    else pf_store_out<T, 1>(a, s, kvh, o, l, fr0, flat, tig);
#else
    __trap(); /* launched only where the probe saw wgmma */
#endif
}

/* ---- KV write: one block per new row, 16-byte chunks of k|v ---- */

static __global__ void k_kv_write(const void *qkv, void *kc, void *vc, const hk_seq *seqs, const int32_t *row_seq,
                                  const int32_t *bt, int block_size, int Hq, int Hkv, int D)
{
    int r = blockIdx.x;
    hk_seq s = seqs[row_seq[r]];
    int t = s.n_past + (r - s.row0);
    int blk = bt[s.bt_off + t / block_size];
    size_t slot = (size_t)blk * block_size + t % block_size;
    size_t width = (size_t)Hkv * D;   /* elements of k (or v) per row */
    const uint16_t *src = (const uint16_t *)qkv + (size_t)r * (Hq + 2 * Hkv) * D + (size_t)Hq * D;
    uint16_t *kd = (uint16_t *)kc + slot * width, *vd = (uint16_t *)vc + slot * width;
    int chunks = (int)(width / 8);
    for (int c = threadIdx.x; c < 2 * chunks; c += blockDim.x) {
        int which = c >= chunks, k = c - which * chunks;
        int4 v = *(const int4 *)(src + which * width + k * 8);
        *(int4 *)((which ? vd : kd) + k * 8) = v;
    }
}

/* Two stages where the card gives a block their shared memory (69.6 KB at head dim 128: every
 * card from Ampere on), else one (34.8 KB). The attribute is set once per kernel and device. */
template <typename T, int D, int DP, bool PAGED>
static cudaError_t launch_flash(cudaStream_t s, const FaArgs &a, dim3 grid)
{
    constexpr size_t one = (size_t)2 * FA_BN * (DP + 8) * sizeof(T);
    static int ready[64];   /* per device: 0 unknown, 1 one stage, 2 two stages */
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (dev < 0 || dev >= 64) dev = 63;
    if (!ready[dev]) {
        if ((e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess) return e;
        ready[dev] = (size_t)optin >= 2 * one &&
                     cudaFuncSetAttribute(k_flash<T, D, DP, PAGED, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          (int)(2 * one)) == cudaSuccess ? 2 : 1;
        cudaGetLastError();   /* a refused attribute leaves one stage, not an error */
    }
    if (ready[dev] == 2) k_flash<T, D, DP, PAGED, 2><<<grid, FA_THREADS, 2 * one, s>>>(a);
    else k_flash<T, D, DP, PAGED, 1><<<grid, FA_THREADS, one, s>>>(a);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t full_t(cudaStream_t s, void *out, const void *qkv, int n, int H, int D, float scale)
{
    FaArgs a = {};
    size_t HD = (size_t)H * D;
    a.q = qkv;
    a.k = (const T *)qkv + HD;
    a.v = (const T *)qkv + 2 * HD;
    a.out = out;
    a.q_stride = a.kv_stride = (int)(3 * HD);
    a.out_stride = (int)HD;
    a.n = n;
    a.G = 1;
    a.Hkv = H;
    a.scale_log2 = scale * LOG2E;
    dim3 grid((unsigned)((n + FA_BM - 1) / FA_BM), (unsigned)H);
    if (D == 128) return launch_flash<T, 128, 128, false>(s, a, grid);
    return cudaErrorInvalidValue;
}

/* The shared-memory attribute is set once per variant and device. SPLIT: n_items splits, then
 * the merge of their n_merges items. */
template <typename T, int W, int MW, bool SPLIT>
static cudaError_t launch_prefill(cudaStream_t s, const FaArgs &a, int n_items, int n_merges)
{
    typedef PfShape<W, MW> S;
    static bool ready[64];
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (dev < 0 || dev >= 64) dev = 63;
    if (!ready[dev]) {
        e = cudaFuncSetAttribute(k_prefill<T, W, MW, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)S::SMEM);
        if (e != cudaSuccess) return e;
        ready[dev] = true;
    }
    k_prefill<T, W, MW, SPLIT><<<(unsigned)n_items * (unsigned)a.Hkv, S::NT, S::SMEM, s>>>(a);
    if (SPLIT) {
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
        k_prefill_merge<T, S::BM><<<dim3((unsigned)n_merges * (unsigned)a.Hkv, S::BM / 4), 128, 0, s>>>(a);
    }
    return cudaGetLastError();
}

/* k_prefill_tma's launch: three tensor maps (Q over the packed qkv rows, K and V over the
 * caches' slots), then as launch_prefill. */
#define PT_NS 4
template <typename T, bool SPLIT>
static cudaError_t launch_prefill_tma(cudaStream_t s, const hk_paged_args *p, const FaArgs &a, int n_items,
                                      int n_merges)
{
    typedef PtShape<PT_NS> S;
    const bool bf16 = std::is_same<T, __nv_bfloat16>::value;
    const int br = p->block_size < PF_BN ? p->block_size : PF_BN;
    const cuuint64_t w = (cuuint64_t)(p->Hq + 2 * p->Hkv);
    const cuuint64_t gq[3] = { PF_D, w, (cuuint64_t)p->total_rows }, sq[2] = { PF_D * 2, w * PF_D * 2 };
    const cuuint64_t gk[3] = { PF_D, (cuuint64_t)p->Hkv, (cuuint64_t)p->kv_slots },
                     sk[2] = { PF_D * 2, (cuuint64_t)p->Hkv * PF_D * 2 };
    const cuuint32_t bq[3] = { 64, (cuuint32_t)a.G, (cuuint32_t)(64 / a.G) }, bk[3] = { 64, 1, (cuuint32_t)br };
    CUtensorMap qm, km, vm;
    cudaError_t e = tm_map3(&qm, bf16, p->qkv, gq, sq, bq, true);
    if (e == cudaSuccess) e = tm_map3(&km, bf16, p->k_cache, gk, sk, bk, true);
    if (e == cudaSuccess) e = tm_map3(&vm, bf16, p->v_cache, gk, sk, bk, true);
    if (e != cudaSuccess) return e;
    static bool ready[64];
    int dev = 0;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
    if (dev < 0 || dev >= 64) dev = 63;
    if (!ready[dev]) {
        e = cudaFuncSetAttribute(k_prefill_tma<T, PT_NS, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)S::SMEM);
        if (e != cudaSuccess) return e;
        ready[dev] = true;
    }
    k_prefill_tma<T, PT_NS, SPLIT><<<(unsigned)n_items * (unsigned)a.Hkv, PT_NT, S::SMEM, s>>>(qm, km, vm, a, br);
    if (SPLIT) {
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
        k_prefill_merge<T, PT_BM><<<dim3((unsigned)n_merges * (unsigned)a.Hkv, PT_BM / 4), 128, 0, s>>>(a);
    }
    return cudaGetLastError();
}

/* Whether k_prefill_tma's boxes fit the call: cache blocks of 8..64 tokens dividing 64 or of
 * whole 64-token tiles (a box's 1024-byte swizzle atoms), G dividing 64 (a Q box's positions),
 * and a driver with tensor maps. */
static bool pt_fits(const hk_paged_args *p)
{
    const int bs = p->block_size, G = p->Hq / p->Hkv;
    return (bs % PF_BN == 0 || (PF_BN % bs == 0 && bs >= 8)) && G > 0 && PF_BN % G == 0 && p->kv_slots > 0 &&
           p->kv_slots <= INT_MAX && p->total_rows > 0 && tm_encoder();
}

template <typename T>
static cudaError_t prefill_t(cudaStream_t s, const hk_paged_args *p)
{
    FaArgs a = {};
    hk_paged_fill(a, p);
    a.out_stride = p->Hq * p->D;
    a.tiles = p->tiles;
    a.bs_shift = p->block_size & (p->block_size - 1) ? -1 : __builtin_ctz((unsigned)p->block_size);
    if (p->D != 128) return cudaErrorInvalidValue;
    const hk_prefill_kind kind = p->prefill == HK_PREFILL_TMA && !pt_fits(p) ? HK_PREFILL_W4M2 : p->prefill;
    if (p->n_pf_splits > 0) {
        a.splits = p->pf_splits;
        a.merges = p->pf_merges;
        a.part = p->pf_part;
        a.part_ml = p->pf_part + hk_prefill_part_floats(p->prefill, p->n_pf_splits, p->Hkv) / (PF_D + 2) * PF_D;
        switch (kind) {
        case HK_PREFILL_W4M2: return launch_prefill<T, 4, 2, true>(s, a, p->n_pf_splits, p->n_pf_merges);
        case HK_PREFILL_W4M1: return launch_prefill<T, 4, 1, true>(s, a, p->n_pf_splits, p->n_pf_merges);
        case HK_PREFILL_TMA: return launch_prefill_tma<T, true>(s, p, a, p->n_pf_splits, p->n_pf_merges);
        default: return cudaErrorInvalidValue;   /* the template has no split mode */
        }
    }
    switch (kind) {
    case HK_PREFILL_TEMPLATE: return launch_flash<T, 128, 128, true>(s, a, dim3((unsigned)p->n_tiles, (unsigned)p->Hkv));
    case HK_PREFILL_W4M2: return launch_prefill<T, 4, 2, false>(s, a, p->n_tiles, 0);
    case HK_PREFILL_W4M1: return launch_prefill<T, 4, 1, false>(s, a, p->n_tiles, 0);
    case HK_PREFILL_TMA: return launch_prefill_tma<T, false>(s, p, a, p->n_tiles, 0);
    }
    return cudaErrorInvalidValue;
}

cudaError_t hk_flash_full(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D, float scale)
{
    return t == HK_BF16 ? full_t<__nv_bfloat16>(s, out, qkv, n, H, D, scale)
                        : full_t<__half>(s, out, qkv, n, H, D, scale);
}

extern "C" {

cudaError_t hk_kv_write(cudaStream_t s, const hk_paged_args *p)
{
    if (p->total_rows <= 0) return cudaSuccess;
    if (((size_t)p->Hkv * p->D) % 8) return cudaErrorInvalidValue;
    k_kv_write<<<p->total_rows, 128, 0, s>>>(p->qkv, p->k_cache, p->v_cache, p->seqs, p->row_seq,
                                             p->block_tables, p->block_size, p->Hq, p->Hkv, p->D);
    return cudaGetLastError();
}

int hk_prefill_tile_rows(hk_prefill_kind k)
{
    switch (k) {
    case HK_PREFILL_W4M2: return PfShape<4, 2>::BM;
    case HK_PREFILL_TMA: return PT_BM;
    case HK_PREFILL_W4M1: return PfShape<4, 1>::BM;
    default: return FA_BM;
    }
}

/* W4 MW2 where a block may have its 104 KB (Ampere A100, Hopper), else W4 MW1 (87 KB: the
 * consumer cards' 99 KB), else the template (34.8 KB a stage: Turing's 64 KB). */
hk_prefill_kind hk_prefill_pick(int device)
{
    int optin = 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
        cudaGetLastError();
        return HK_PREFILL_TEMPLATE;
    }
    if ((size_t)optin >= PfShape<4, 2>::SMEM) return HK_PREFILL_W4M2;
    if ((size_t)optin >= PfShape<4, 1>::SMEM) return HK_PREFILL_W4M1;
    return HK_PREFILL_TEMPLATE;
}

/* W4 MW2 (128 rows, 255 registers: one CTA a sub-partition's worth of warps) only where the
 * call has CTAs to hide its latencies with, else W4 MW1 (64 rows, twice the CTAs). H200,
 * session 7 (bench/prefill_bench.cu): 4191 rows in one call (528 CTAs of 128 rows) 244 µs
 * with W4 MW2 against 341 with W4 MW1 and 331 with W8 MW1; the 1024-row chunks (128 CTAs)
 * 1.5 % faster with W4 MW1 than W8 MW1, 3–4 % than W4 MW2. */
hk_prefill_kind hk_prefill_for_call(hk_prefill_kind largest, int64_t tiles128, int Hkv, int sm_count)
{
    if (largest != HK_PREFILL_W4M2) return largest;   /* k_prefill_tma: every call */
    return tiles128 * Hkv >= 4 * (int64_t)(sm_count > 0 ? sm_count : 80) ? HK_PREFILL_W4M2 : HK_PREFILL_W4M1;
}

int hk_prefill_key_tiles(int n_past, int n_new, int G, int tile, int tile_rows)
{
    int last = min((tile + 1) * tile_rows, n_new * G) - 1;
    return (n_past + last / G + 1 + PF_BN - 1) / PF_BN;
}

int hk_prefill_split_len(hk_prefill_kind k, int64_t items, int64_t key_tiles, int max_tiles, int Hkv, int sm_count,
                         int per_sm, size_t part_max)
{
    int64_t sm = sm_count > 0 ? sm_count : 80, want = (int64_t)per_sm * sm;
    const int64_t below = k == HK_PREFILL_TMA ? HK_PF_SPLIT_BELOW_TMA_HALVES * sm / 2 : HK_PF_SPLIT_BELOW * sm;
    if (per_sm <= 0 || items <= 0 || k == HK_PREFILL_TEMPLATE || items * Hkv >= below) return 0;
    int64_t len = (key_tiles * Hkv + want - 1) / want;
    len = len < HK_PF_SPLIT_MIN_TILES ? HK_PF_SPLIT_MIN_TILES : len;
    /* Σ ⌈tiles / len⌉ ≤ key_tiles / len + items splits of an item's rows over every KV head */
    int64_t fit = (int64_t)(part_max / (hk_prefill_part_floats(k, 1, Hkv) * sizeof(float))) - items;
    if (fit <= 0) return 0;
    if (len < (key_tiles + fit - 1) / fit) len = (key_tiles + fit - 1) / fit;
    return len >= max_tiles ? 0 : (int)len;   /* no item would have two */
}

int hk_prefill_splits(int4 *splits, int4 *merge, int seq, int tile, int key_tiles, int split_len, int part0)
{
    int n = (key_tiles + split_len - 1) / split_len;
    for (int i = 0; i < n; i++)   /* balanced: lengths differ by one tile at most */
        splits[i] = make_int4(seq, tile, (int)((int64_t)key_tiles * i / n), (int)((int64_t)key_tiles * (i + 1) / n));
    *merge = make_int4(seq, tile, part0, n);
    return n;
}

size_t hk_prefill_part_floats(hk_prefill_kind k, int n_splits, int Hkv)
{
    return (size_t)n_splits * Hkv * hk_prefill_tile_rows(k) * (PF_D + 2);
}

cudaError_t hk_attention_prefill(cudaStream_t s, const hk_paged_args *p)
{
    if (p->n_tiles <= 0 && p->n_pf_splits <= 0) return cudaSuccess;
    return p->t == HK_BF16 ? prefill_t<__nv_bfloat16>(s, p) : prefill_t<__half>(s, p);
}

} /* extern "C" */
