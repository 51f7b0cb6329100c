/* hyocr — FlashAttention-2 style tiles on the tensor cores (mma.sync m16n8k16,
 * fp32 accumulation, fp32 online softmax), 64 query rows × 64 keys per step,
 * 4 warps of 16 rows. One template serves bidirectional attention over the
 * packed qkv rows (head_dim 128; the vision tower's 72 has its own kernel,
 * attention-vision.cu) and the paged prefill (causal, K/V gathered from cache
 * blocks, the q heads of one KV group flattened into the 64 rows so a K/V tile
 * is loaded once per group). Memory is O(tile): nothing of size n² ever exists.
 * Also the KV write of the new rows into the paged cache. */
#include "hk-flash.h"
#include <math.h>

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

template <typename T>
static cudaError_t prefill_t(cudaStream_t s, const hk_paged_args *p)
{
    FaArgs a = {};
    hk_paged_fill(a, p);
    a.out_stride = p->Hq * p->D;
    a.tiles = p->tiles;
    dim3 grid((unsigned)p->n_tiles, (unsigned)p->Hkv);
    if (p->D == 128) return launch_flash<T, 128, 128, true>(s, a, grid);
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

cudaError_t hk_attention_prefill(cudaStream_t s, const hk_paged_args *p)
{
    if (p->n_tiles <= 0) return cudaSuccess;
    return p->t == HK_BF16 ? prefill_t<__nv_bfloat16>(s, p) : prefill_t<__half>(s, p);
}

} /* extern "C" */
