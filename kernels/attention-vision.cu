/* hyocr — bidirectional attention over one image: the vision tower's head_dim-72
 * kernel; other head dims go to the 64-row template (attention-prefill.cu). */
#include "hk-flash.h"
#include <math.h>

/* ---- vision attention, head_dim 72 ----
 * The vision tower's hot spot (27 layers × 16 heads × 16384² for a 2048² page),
 * so it gets its own kernel rather than the 64-row template (attention-prefill.cu):
 * - 16·W·MW query rows per CTA (W warps of MW blocks of 16 rows; 128 rows in
 *   the launched variant): every K/V tile copied from L2 feeds twice the rows
 *   of the 64-row template, halving the L2 traffic per row; with MW = 2 every
 *   K/V fragment read from shared memory also feeds two row blocks;
 * - K and V in separate double-buffered stages, so the copy of V_j and K_{j+1}
 *   runs under the q·kᵀ of tile j, and that of V_{j+1} under its P·V;
 * - q·kᵀ over exactly 72 dims: four k16 steps and one k8 step, no zero padding;
 * - shared rows of 72 elements (144 bytes, an odd number of 16-byte chunks) are
 *   already conflict-free for ldmatrix;
 * - every row sees every key, so only the last, partial key tile is masked;
 * - the scale is folded into one FFMA before ex2.approx (max kept unscaled). */
#define FV_BN 64
#define FV_D 72
/* The variant full_t launches: 4 warps of 2 row blocks measured 4.38 ms for
 * n = 16384, H = 16 on an H200 against 4.63 ms for 8 warps of 1 and 6.27 ms for
 * the 64-row template (bench/flash_bench.cu). Both give the same bits: a row
 * block's arithmetic does not depend on W or MW. */
#define FV_WARPS 4
#define FV_MW 2
#define FV_BM (16 * FV_WARPS * FV_MW)

/* rows × 72 elements of one head from the packed qkv rows; rows past n read as zero. */
template <typename T, int NT>
__device__ __forceinline__ void fv_load(T *s, const T *base, int stride, int row0, int rows, int n)
{
    constexpr int CPR = FV_D / 8;
    for (int c = threadIdx.x; c < rows * CPR; c += NT) {
        int r = c / CPR, ch = c - r * CPR, row = row0 + r;
        bool ok = row < n;
        cp16(s + r * FV_D + ch * 8, base + (size_t)(ok ? row : 0) * stride + ch * 8, ok);
    }
}

/* S = Q·Kᵀ for this warp's MW·16 rows × 64 keys: four k16 steps, then dims
 * 64..71 in one k8 step, four key groups of 8 per ldmatrix. */
template <typename T, int MW>
__device__ __forceinline__ void fv_qk(float (*sc)[FV_BN / 8][4], const uint32_t (*qf)[FV_D / 16][4],
                                      const uint32_t (*qf8)[2], const T *sK, int lane)
{
    hk_qk<T, MW, FV_BN, FV_D / 16, FV_D>(sc, qf, sK, lane);
#pragma unroll
    for (int p = 0; p < FV_BN / 32; p++) {
        uint32_t b[4];
        ldsm_x4(b, sK + (p * 32 + lane) * FV_D + (FV_D / 16) * 16);
#pragma unroll
        for (int w = 0; w < MW; w++)
#pragma unroll
            for (int i = 0; i < 4; i++) mma1688<T>(sc[w][4 * p + i], qf8[w], b[i]);
    }
}

/* Online softmax on raw scores: m stays unscaled, exp2((s − m)·c) is one FFMA + ex2. */
template <bool MASK>
__device__ __forceinline__ void fv_softmax(float (*sc)[4], float (*o)[4], float *m, float *l, int key0, int n,
                                           int tig, float c)
{
    hk_softmax_tile<FV_BN, FV_D>(
        sc, o, m, l, tig, [&](float v, int h, int k) { return MASK && key0 + k >= n ? -INFINITY : v; },
        [&](float m0, float m1) { return ex2((m0 - m1) * c); },
        [&](float v, float mx) { return ex2(fmaf(v, c, -(mx * c))); });
}

/* The state one warp carries across key tiles: MW blocks of 16 query rows. */
template <int MW> struct FvRows {
    uint32_t qf[MW][FV_D / 16][4], qf8[MW][2];
    float o[MW][FV_D / 8][4], m[MW][2], l[MW][2];
};

/* One key tile. Copy groups are committed in the order K_j, V_j, K_{j+1}, V_{j+1}, …
 * (always committed, empty past the end, so wait<2> means the same everywhere). */
template <typename T, int W, int MW, bool MASK>
__device__ __forceinline__ void fv_step(FvRows<MW> &st, T *sm, const T *kb, const T *vb, int stride, int n, int j,
                                        int n_tiles, int lane, float c)
{
    constexpr int NT = 32 * W, TILE = FV_BN * FV_D;
    T *sK = sm + (j & 1) * 2 * TILE, *sV = sK + TILE;
    T *nK = sm + ((j + 1) & 1) * 2 * TILE, *nV = nK + TILE;
    /* slot (j+1)&1's K was last read by the q·kᵀ of tile j−1, which every warp
     * finished before the barrier ahead of tile j−1's P·V */
    if (j + 1 < n_tiles) fv_load<T, NT>(nK, kb, stride, (j + 1) * FV_BN, FV_BN, n);
    cp_commit();
    cp_wait<2>();   /* K_j done; V_j and K_{j+1} may still fly */
    __syncthreads();
    float sc[MW][FV_BN / 8][4];
    fv_qk<T, MW>(sc, st.qf, st.qf8, sK, lane);
#pragma unroll
    for (int w = 0; w < MW; w++) fv_softmax<MASK>(sc[w], st.o[w], st.m[w], st.l[w], j * FV_BN, n, lane & 3, c);
    /* its V was last read by the P·V of tile j−1, which ended before the barrier above */
    if (j + 1 < n_tiles) fv_load<T, NT>(nV, vb, stride, (j + 1) * FV_BN, FV_BN, n);
    cp_commit();
    cp_wait<2>();   /* V_j done */
    __syncthreads();
    hk_pv<T, MW, FV_BN, FV_D, FV_D>(st.o, sc, sV, lane);
}

/* Sixteen 16-row blocks per SM: two CTAs of 8 warps × 1 block (128 registers
 * a thread) or of 4 warps × 2 blocks (up to 255). Turing, with synchronous
 * copies in place of cp.async, needs a few more registers and runs one. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define FV_MIN_CTAS(W, MW) 1
#else
#define FV_MIN_CTAS(W, MW) (16 / ((W) * (MW)))
#endif

/* CTA = 16·W·MW query rows of one head; W warps of MW·16 rows. */
template <typename T, int W, int MW>
__global__ void __launch_bounds__(32 * W, FV_MIN_CTAS(W, MW)) k_flash_vis(const T *qkv, T *out, int n, int H, float c)
{
    constexpr int NT = 32 * W, BM = 16 * W * MW, TILE = FV_BN * FV_D;
    static_assert(BM <= 2 * FV_BN, "Q is staged in the two slots of stage 1");
    /* [stage][K, V][64 × 72]; Q passes through stage 1 before the loop */
    __shared__ __align__(16) T sm[4 * TILE];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = blockIdx.x * BM, head = blockIdx.y, stride = 3 * H * FV_D;
    const T *qb = qkv + (size_t)head * FV_D, *kb = qb + (size_t)H * FV_D, *vb = kb + (size_t)H * FV_D;

    fv_load<T, NT>(sm + 2 * TILE, qb, stride, r0, BM, n);
    cp_commit();
    fv_load<T, NT>(sm, kb, stride, 0, FV_BN, n);
    cp_commit();
    fv_load<T, NT>(sm + TILE, vb, stride, 0, FV_BN, n);
    cp_commit();
    cp_wait<2>();
    __syncthreads();
    FvRows<MW> st;
    const int mi = lane >> 3;
#pragma unroll
    for (int w = 0; w < MW; w++) {
        const T *sQ = sm + 2 * TILE + (warp * MW + w) * 16 * FV_D;
#pragma unroll
        for (int kk = 0; kk < FV_D / 16; kk++)
            ldsm_x4(st.qf[w][kk], sQ + ((lane & 7) + (mi & 1) * 8) * FV_D + kk * 16 + (mi >> 1) * 8);
        ldsm_x2(st.qf8[w], sQ + (lane & 15) * FV_D + (FV_D / 16) * 16);
#pragma unroll
        for (int dt = 0; dt < FV_D / 8; dt++) st.o[w][dt][0] = st.o[w][dt][1] = st.o[w][dt][2] = st.o[w][dt][3] = 0.0f;
        st.m[w][0] = st.m[w][1] = -1e30f;
        st.l[w][0] = st.l[w][1] = 0.0f;
    }
    __syncthreads();   /* stage 1 is K_1/V_1's from here on */

    const int n_tiles = (n + FV_BN - 1) / FV_BN, n_full = n / FV_BN;
    for (int j = 0; j < n_full; j++) fv_step<T, W, MW, false>(st, sm, kb, vb, stride, n, j, n_tiles, lane, c);
    if (n_full < n_tiles) fv_step<T, W, MW, true>(st, sm, kb, vb, stride, n, n_full, n_tiles, lane, c);

#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float s = hk_quad_sum(st.l[w][h]);
            int row = r0 + (warp * MW + w) * 16 + (lane >> 2) + 8 * h;
            if (row >= n) continue;
            float inv = 1.0f / s;
            hk_store_row<T, FV_D>(out + (size_t)row * H * FV_D + (size_t)head * FV_D, st.o[w], h, inv, lane & 3);
        }
}

template <typename T>
static cudaError_t vis_t(cudaStream_t s, void *out, const void *qkv, int n, int H, float scale)
{
    dim3 g((unsigned)((n + FV_BM - 1) / FV_BM), (unsigned)H);
    k_flash_vis<T, FV_WARPS, FV_MW><<<g, 32 * FV_WARPS, 0, s>>>((const T *)qkv, (T *)out, n, H, scale * LOG2E);
    return cudaGetLastError();
}

extern "C" {

cudaError_t hk_attention_full(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D,
                              float scale)
{
    if (n <= 0 || H <= 0) return cudaSuccess;
    if (D != FV_D) return hk_flash_full(s, t, out, qkv, n, H, D, scale);
    return t == HK_BF16 ? vis_t<__nv_bfloat16>(s, out, qkv, n, H, scale) : vis_t<__half>(s, out, qkv, n, H, scale);
}

} /* extern "C" */
