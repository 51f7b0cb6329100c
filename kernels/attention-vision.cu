/* hyocr — bidirectional attention over one image: the vision tower's head_dim-72
 * kernels (wgmma on Hopper, mma.sync elsewhere); other head dims go to the 64-row
 * template (attention-prefill.cu). */
#include "hk-wgmma.h"
#include <math.h>
#include <type_traits>

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

/* ---- vision attention, head_dim 72, on Hopper (sm_90a): wgmma ----
 * The mma.sync kernel above reaches ~280 TFLOP/s on an H200, under a third of
 * the card: its warps wait on their own softmax. Here each warpgroup owns 64
 * query rows and its two products are warpgroup MMAs that read K and V straight
 * from shared memory (no ldmatrix), asynchronously: the softmax of tile j runs
 * while the tensor cores do P·V of tile j − 1 (the overlapped variant), and the
 * other warpgroups on the SM fill the gaps.
 * - q·kᵀ runs over 80 dims (five k16 steps): Q's fragments for dims 72..79 are
 *   zero registers and K's chunk for them zero shared memory, so the padding adds
 *   exact zeros;
 * - P·V takes P from the score registers (the accumulator layout of the scores is
 *   the A-register layout of the next product) and V over exactly 72 dims (n72);
 * - K and V tiles live in shared memory as 8×8 core matrices (the unswizzled
 *   canonical layout): K with 10 chunks a group of 8 keys, V with 9;
 * - the softmax is the mma.sync kernel's arithmetic (same scale folding, same
 *   ex2) but for the lazy rescale (WG_LAZY_LOG2: O, l and the row max rescaled
 *   only when a row's max rose past 2^8, not at every tile), launched since
 *   the H200's session 9: flash_bench, 16384 patches, 16 heads, fp16 / bf16,
 *   every tile 3753 / 3720 µs, lazy 3522 / 3528 (0.94×; 4096 patches 246 →
 *   234); a 2048² page's vision 136–137 → 131 ms. With every tile's rescale
 *   (hk_attention_full's lazy = 0, HYOCR_VIS_LAZY_RESCALE=0) only the order of
 *   the fp32 sums inside the products differs from the mma.sync kernel. */
#define WG_DK 80 /* dims of q·kᵀ */
#define WG_CK 10 /* 16-byte chunks a key row has in K's tile */
#define WG_CV 9  /* in V's tile */

template <int NWG, int BN, int NS> struct WgShape {
    static constexpr int NT = 128 * NWG, BM = 64 * NWG;
    static constexpr int KT = BN * WG_DK, VT = BN * FV_D, ST = KT + VT; /* elements */
    static constexpr size_t SMEM = (size_t)NS * ST * 2;                  /* NS stages of 2-byte elements */
};

/* The 72 dims of keys key0..key0+BN−1 of one head into a tile of core matrices
 * with CH chunks per group of 8 keys; keys past n read as zero. Eight
 * consecutive threads fill one core matrix (one 128-byte line, no bank conflict). */
template <typename T, int NT, int BN, int CH>
__device__ __forceinline__ void wg_load(T *s, const T *base, int stride, int key0, int n)
{
    for (int i = threadIdx.x; i < BN * WG_CV; i += NT) {
        int q = i >> 3, c = q % WG_CV, r = (q / WG_CV) * 8 + (i & 7), row = key0 + r;
        bool ok = row < n;
        cp16(s + ((r >> 3) * CH + c) * 64 + (r & 7) * 8, base + (size_t)(ok ? row : 0) * stride + c * 8, ok);
    }
}

/* Tile t's keys and values into its stage (one copy group a tile, committed by
 * the caller): the general path, for the last tile when it is partial. */
template <typename T, int NWG, int BN, int NS>
__device__ __forceinline__ void wg_load_tile(T *sm, const T *kb, const T *vb, int stride, int t, int n)
{
    typedef WgShape<NWG, BN, NS> S;
    T *st = sm + (t % NS) * S::ST;
    wg_load<T, S::NT, BN, WG_CK>(st, kb, stride, t * BN, n);
    wg_load<T, S::NT, BN, WG_CV>(st + S::KT, vb, stride, t * BN, n);
}

/* A thread's share of a full tile's copies, worked out once before the loop:
 * slot i is chunk threadIdx.x + i·NT of wg_load's numbering, for K and V alike
 * (same keys, same dims; K's tile has one chunk more a group of 8 keys). In the
 * loop the division by 9, the core-matrix offsets and the copies' branches had
 * cost a warp ~60 of its ~370 instructions a tile (Nsight Compute, H200 session
 * 13); with them here, the descriptors built once and the row max as a tree, the
 * kernel gives the same bits 0.8 % sooner (3548 → 3518 µs at 16384 patches): it
 * waits on its barrier and its products' waits, not on its instruction count. */
template <int NT, int BN> struct WgSlots {
    static constexpr int N = (BN * WG_CV + NT - 1) / NT;
    uint32_t g[N]; /* element offset from the tile's first key: r·stride + 8c */
    uint32_t s[N]; /* byte offsets in the stage: K's tile << 16 | V's tile */

    __device__ __forceinline__ void init(int stride, int kt_bytes)
    {
#pragma unroll
        for (int i = 0; i < N; i++) {
            const int x = threadIdx.x + i * NT, q = x >> 3, c = q % WG_CV, r = (q / WG_CV) * 8 + (x & 7);
            g[i] = (uint32_t)(r * stride + c * 8);
            const uint32_t sk = (uint32_t)(((r >> 3) * WG_CK + c) * 64 + (r & 7) * 8) * 2;
            const uint32_t sv = (uint32_t)kt_bytes + (uint32_t)(((r >> 3) * WG_CV + c) * 64 + (r & 7) * 8) * 2;
            s[i] = sk << 16 | sv;
        }
    }
};

__device__ __forceinline__ void wg_cp16(uint32_t dst, const void *src)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
#endif
}

/* A full tile (keys t·BN .. t·BN + BN − 1 all < n) through the slots; stage is
 * the shared address of its stage. */
template <typename T, int NT, int BN>
__device__ __forceinline__ void wg_load_full(const WgSlots<NT, BN> &sl, uint32_t stage, const T *kb, const T *vb,
                                             int stride, int t)
{
    const size_t row = (size_t)t * BN * stride;
#pragma unroll
    for (int i = 0; i < WgSlots<NT, BN>::N; i++)
        if ((BN * WG_CV) % NT == 0 || i * NT + threadIdx.x < BN * WG_CV) {
            wg_cp16(stage + (sl.s[i] >> 16), kb + row + sl.g[i]);
            wg_cp16(stage + (sl.s[i] & 0xffffu), vb + row + sl.g[i]);
        }
}

/* Tile t into its stage: through the slots when full, else the general path. */
template <typename T, int NWG, int BN, int NS>
__device__ __forceinline__ void wg_load_any(const WgSlots<128 * NWG, BN> &sl, T *sm, uint32_t sbase, const T *kb,
                                            const T *vb, int stride, int t, int n)
{
    typedef WgShape<NWG, BN, NS> S;
    if ((t + 1) * BN <= n) wg_load_full<T, S::NT, BN>(sl, sbase + (uint32_t)((t % NS) * S::ST * 2), kb, vb, stride, t);
    else wg_load_tile<T, NWG, BN, NS>(sm, kb, vb, stride, t, n);
}

__device__ __forceinline__ uint32_t wg_ld32(const void *p, bool ok)
{
    return ok ? *(const uint32_t *)p : 0u;
}

/* Q's A fragments straight from global memory: rows g and g + 8 of the warp's 16
 * (row0 = its first), dims 16·kk + 2·tig (+ 8); the fifth step's upper half
 * (dims 72..79) is zero. Rows past n are zero. */
template <typename T>
__device__ __forceinline__ void wg_load_q(uint32_t (*qa)[4], const T *qb, int stride, int row0, int n, int lane)
{
    const int tig = lane & 3, ra = row0 + (lane >> 2), rb = ra + 8;
    const bool oa = ra < n, ob = rb < n;
    const T *pa = qb + (size_t)(oa ? ra : 0) * stride + 2 * tig, *pb = qb + (size_t)(ob ? rb : 0) * stride + 2 * tig;
#pragma unroll
    for (int kk = 0; kk < FV_D / 16; kk++) {
        qa[kk][0] = wg_ld32(pa + kk * 16, oa);
        qa[kk][1] = wg_ld32(pb + kk * 16, ob);
        qa[kk][2] = wg_ld32(pa + kk * 16 + 8, oa);
        qa[kk][3] = wg_ld32(pb + kk * 16 + 8, ob);
    }
    qa[4][0] = wg_ld32(pa + 64, oa);
    qa[4][1] = wg_ld32(pb + 64, ob);
    qa[4][2] = qa[4][3] = 0u;
}

template <typename T, int BN> struct WgQk;
template <typename T> struct WgQk<T, 64> {
    static __device__ __forceinline__ void run(float (*sc)[4], const uint32_t *a, uint64_t d, int acc)
    {
        wg_mma_n64<T>(sc, a, d, acc);
    }
};
template <typename T> struct WgQk<T, 128> {
    static __device__ __forceinline__ void run(float (*sc)[4], const uint32_t *a, uint64_t d, int acc)
    {
        wg_mma_n128<T>(sc, a, d, acc);
    }
};

/* Issues S = Q·Kᵀ of one tile (five k16 steps; not waited for). dK: the
 * descriptor of the tile's first K chunk; a k16 step is two chunks further
 * (256 bytes, 16 in the descriptor's 16-byte units). */
template <typename T, int BN>
__device__ __forceinline__ void wg_issue_qk(float (*sc)[4], const uint32_t (*qa)[4], uint64_t dK)
{
#pragma unroll
    for (int kk = 0; kk < WG_DK / 16; kk++) WgQk<T, BN>::run(sc, qa[kk], dK + (uint64_t)(kk * 16), kk);
}

/* Issues O += P·V of one tile (BN / 16 k16 steps; not waited for); dV as dK,
 * a k16 step being two groups of 8 keys (2·9 chunks). */
template <typename T, int BN>
__device__ __forceinline__ void wg_issue_pv(float (*o)[4], const uint32_t (*pa)[4], uint64_t dV)
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) wg_mma_n72t<T>(o, pa[kk], dV + (uint64_t)(kk * 2 * WG_CV * 8), 1);
}

/* LAZY (the launched k_vis_wg; hk_attention_full's lazy = 0, HYOCR_VIS_LAZY_RESCALE=0,
 * rescales at every tile): O, l and the row's reference max m are rescaled only
 * once a row's max rose by more than 2^8 over m (FlashAttention-4), decided for
 * the whole warp (the rescale is a branch): most tiles after the first skip the
 * 36 FMULs of O and the two ex2 of the correction. Safe because a weight is
 * exp2(s·c − m·c) with s·c − m·c ≤ 8 until m moves: at most 2^8, far inside fp16
 * (65504) and bf16, rounded to them with the same relative error as a weight ≤ 1;
 * l and O stay in fp32 (≤ 2^8 · n · |v|); small weights are lifted away from
 * fp16's subnormals, not pushed into them. Not the mma.sync kernel's bits (other
 * weights are rounded): against a double reference its rel-L2 is 1.02–1.18× the
 * every-tile kernel's, its max |Δ| up to 1.88× (test-backend-cuda's
 * attention_full_softmax, H200 session 9; speeds in the comment at the top of
 * the wgmma part). */
#define WG_LAZY_LOG2 8.0f

/* The online softmax of one tile's raw scores (the mma.sync kernel's arithmetic,
 * but for LAZY): the scores become the weights, m rises to the tile's max (with
 * LAZY only when the warp rescales), l takes the new sum; corr is what O must be
 * multiplied by. Keys from n on are masked when MASK. Returns whether O must be
 * rescaled (warp-uniform; always without LAZY). */
template <int BN, bool MASK, bool LAZY>
__device__ __forceinline__ bool wg_softmax(float (*sc)[4], float *m, float *l, float *corr, int key0, int n, int tig,
                                           float c)
{
    float mx[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float t[BN / 8];
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++) {
#pragma unroll
            for (int e = 0; e < 2; e++)
                if (MASK && key0 + nt * 8 + 2 * tig + e >= n) sc[nt][2 * h + e] = -INFINITY;
            t[nt] = fmaxf(sc[nt][2 * h], sc[nt][2 * h + 1]);
        }
        /* a tree, not a chain of BN / 4 dependent maxima: the same value (a max
         * is exact in any order), a few steps deep */
#pragma unroll
        for (int w = BN / 16; w >= 1; w >>= 1)
#pragma unroll
            for (int i = 0; i < w; i++) t[i] = fmaxf(t[i], t[i + w]);
        mx[h] = fmaxf(m[h], t[0]);
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    }
    bool rescale = true;
    if (LAZY)
        rescale = __any_sync(0xffffffffu, (mx[0] - m[0]) * c > WG_LAZY_LOG2 || (mx[1] - m[1]) * c > WG_LAZY_LOG2);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        corr[h] = rescale ? ex2((m[h] - mx[h]) * c) : 1.0f;
        if (rescale) m[h] = mx[h];
        const float mc = m[h] * c;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const float p = ex2(fmaf(sc[nt][2 * h + e], c, -mc));
                sc[nt][2 * h + e] = p;
                sum += p;
            }
        l[h] = l[h] * corr[h] + sum;
    }
    return rescale;
}

__device__ __forceinline__ void wg_rescale(float (*o)[4], const float *corr)
{
#pragma unroll
    for (int dt = 0; dt < FV_D / 8; dt++) {
        o[dt][0] *= corr[0];
        o[dt][1] *= corr[0];
        o[dt][2] *= corr[1];
        o[dt][3] *= corr[1];
    }
}

template <int BN, bool LAZY>
__device__ __forceinline__ bool wg_softmax_tile(float (*sc)[4], float *m, float *l, float *corr, int key0, int n,
                                                int tig, float c)
{
    if (key0 + BN <= n) return wg_softmax<BN, false, LAZY>(sc, m, l, corr, key0, n, tig, c);
    return wg_softmax<BN, true, LAZY>(sc, m, l, corr, key0, n, tig, c);
}

template <typename T>
__device__ __forceinline__ void wg_store(T *out, float (*o)[4], const float *l, int row0, int n, int H, int head,
                                         int lane)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float s = hk_quad_sum(l[h]);
        int row = row0 + (lane >> 2) + 8 * h;
        if (row < n) hk_store_row<T, FV_D>(out + (size_t)row * H * FV_D + (size_t)head * FV_D, o, h, 1.0f / s, lane & 3);
    }
}

/* A warpgroup's scores, O and weights zeroed before its first tile (the products accumulate into them). */
template <int BN> __device__ __forceinline__ void wg_zero(float (*sc)[4], float (*o)[4], uint32_t (*pa)[4])
{
#pragma unroll
    for (int i = 0; i < BN / 8; i++) sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < FV_D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < BN / 16; i++) pa[i][0] = pa[i][1] = pa[i][2] = pa[i][3] = 0u;
}

/* What a wgmma vision CTA does with K and V before its loop: K's chunk 9 (dims 72..79)
 * zeroed in every stage (the copies never write it), each thread's copy slots, and the first
 * AHEAD tiles' copies in flight (a copy group a tile, committed in order, empty past the end).
 * Returns the number of key tiles. */
template <typename T, int NWG, int BN, int NS, int AHEAD>
__device__ __forceinline__ int wg_kv_begin(T *sm, WgSlots<128 * NWG, BN> &sl, uint32_t sbase, const T *kb,
                                           const T *vb, int stride, int n)
{
    typedef WgShape<NWG, BN, NS> S;
    for (int i = threadIdx.x; i < NS * BN; i += S::NT) {
        int r = i % BN;
        *(int4 *)(sm + (i / BN) * S::ST + ((r >> 3) * WG_CK + 9) * 64 + (r & 7) * 8) = make_int4(0, 0, 0, 0);
    }
    const int n_tiles = (n + BN - 1) / BN;
    sl.init(stride, S::KT * 2);
#pragma unroll
    for (int t = 0; t < AHEAD; t++) {
        if (t < n_tiles) wg_load_any<T, NWG, BN, NS>(sl, sm, sbase, kb, vb, stride, t, n);
        cp_commit();
    }
    return n_tiles;
}

/* The start of key tile j in a wgmma vision CTA's loop: once its copies (this thread's) have
 * landed, a barrier makes the tile visible to all and tells that every warpgroup is done with
 * the stage the next copy refills (its last reader's wait came before); then tile j + AHEAD's
 * copies go out (an empty group past the end). Returns tile j's stage offset in descriptor
 * units. */
template <typename T, int NWG, int BN, int NS, int AHEAD>
__device__ __forceinline__ uint64_t wg_tile_begin(const WgSlots<128 * NWG, BN> &sl, T *sm, uint32_t sbase,
                                                  const T *kb, const T *vb, int stride, int j, int n_tiles, int n)
{
    cp_wait<AHEAD - 1>(); /* later tiles may fly */
    wg_fence_smem();
    __syncthreads();
    if (j + AHEAD < n_tiles) wg_load_any<T, NWG, BN, NS>(sl, sm, sbase, kb, vb, stride, j + AHEAD, n);
    cp_commit();
    return (uint64_t)((j % NS) * (WgShape<NWG, BN, NS>::ST / 8));
}

/* CTA = NWG warpgroups of 64 query rows of one head (warp w owns rows
 * 16w..16w+15), BN keys a tile, NS stages of K and V. OVL: the softmax of tile j
 * overlaps P·V of tile j − 1 (needs NS ≥ 3: tiles j − 1, j and the one in flight);
 * else each tile's products are waited for in turn (NS ≥ 2). LAZY: the lazy
 * rescale (WG_LAZY_LOG2); false: the mma.sync kernel's softmax arithmetic. */
template <typename T, int NWG, int BN, int NS, int MINB, bool OVL, bool LAZY>
__global__ void __launch_bounds__(128 * NWG, MINB) k_vis_wg(const T *qkv, T *out, int n, int H, float c)
{
#if HK_HAVE_WGMMA
    typedef WgShape<NWG, BN, NS> S;
    static_assert(NS >= (OVL ? 3 : 2), "stages");
    /* tiles in flight ahead of the one read: the overlap keeps tile j − 1's V */
    constexpr int AHEAD = OVL ? NS - 2 : NS - 1;
    extern __shared__ __align__(128) unsigned char wg_raw[];
    T *sm = (T *)wg_raw; /* [stage][K tile | V tile] */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = blockIdx.x * S::BM, head = blockIdx.y, stride = 3 * H * FV_D;
    const T *qb = qkv + (size_t)head * FV_D, *kb = qb + (size_t)H * FV_D, *vb = kb + (size_t)H * FV_D;

    WgSlots<S::NT, BN> sl;
    const uint32_t sbase = smem_addr(sm);
    const int n_tiles = wg_kv_begin<T, NWG, BN, NS, AHEAD>(sm, sl, sbase, kb, vb, stride, n);
    /* the descriptors of stage 0's first K and V chunks; stage s is s·ST
     * elements (s·ST / 8 descriptor units) further */
    const uint64_t dK0 = wg_desc(sm, 128, WG_CK * 128), dV0 = wg_desc(sm + S::KT, WG_CV * 128, 128);
    uint32_t qa[WG_DK / 16][4], pa[BN / 16][4];
    wg_load_q<T>(qa, qb, stride, r0 + warp * 16, n, lane);
    float sc[BN / 8][4], o[FV_D / 8][4], m[2] = { -1e30f, -1e30f }, l[2] = { 0.0f, 0.0f }, corr[2];
    wg_zero<BN>(sc, o, pa);

    for (int j = 0; j < n_tiles; j++) {
        const uint64_t stg = wg_tile_begin<T, NWG, BN, NS, AHEAD>(sl, sm, sbase, kb, vb, stride, j, n_tiles, n);

        wg_pin_u<BN / 16>(pa);
        wg_pin<BN / 8>(sc);
        wg_pin<FV_D / 8>(o);
        wg_fence();
        wg_issue_qk<T, BN>(sc, qa, dK0 + stg);
        wg_commit();
        if (OVL && j > 0) {
            /* P·V of tile j − 1 behind it; the softmax below runs under it */
            wg_issue_pv<T, BN>(o, pa, dV0 + (uint64_t)(((j - 1) % NS) * (S::ST / 8)));
            wg_commit();
            wg_wait<1>();
        } else {
            wg_wait<0>();
        }
        wg_pin<BN / 8>(sc);
        const bool rescale = wg_softmax_tile<BN, LAZY>(sc, m, l, corr, j * BN, n, lane & 3, c);
        if (OVL) {
            wg_wait<0>();
            wg_pin<FV_D / 8>(o);
            wg_pin_u<BN / 16>(pa);   /* P·V read them until here */
            if (rescale) wg_rescale(o, corr);
            wg_pack<T, BN>(pa, sc);
        } else {
            if (rescale) wg_rescale(o, corr);
            wg_pack<T, BN>(pa, sc);
            wg_pin_u<BN / 16>(pa);
            wg_pin<FV_D / 8>(o);
            wg_fence();
            wg_issue_pv<T, BN>(o, pa, dV0 + stg);
            wg_commit();
            wg_wait<0>();
            wg_pin<FV_D / 8>(o);
            wg_pin_u<BN / 16>(pa);
        }
    }
    if (OVL && n_tiles > 0) {
        wg_pin_u<BN / 16>(pa);
        wg_pin<FV_D / 8>(o);
        wg_fence();
        wg_issue_pv<T, BN>(o, pa, dV0 + (uint64_t)(((n_tiles - 1) % NS) * (S::ST / 8)));
        wg_commit();
        wg_wait<0>();
        wg_pin<FV_D / 8>(o);
        wg_pin_u<BN / 16>(pa);
    }
    wg_store<T>(out, o, l, r0 + warp * 16, n, H, head, lane);
#else
    __trap(); /* the launcher takes this kernel only where the probe saw wgmma */
#endif
}

/* ---- vision attention, head_dim 72, on Hopper: TMA copies, warp-specialised ----
 * k_vis_wg above holds its warpgroups in lockstep (a CTA barrier a tile: every copy is
 * everyone's), so all of them multiply, then all of them take their exponentials, then all
 * multiply again: the tensor pipe, MUFU and the issue slots take turns (session 14's count:
 * ~1200 issue, 1024 MUFU and 1216 tensor cycles of work a tile, ~3100 taken). Here one warp
 * copies K and V with the tensor memory accelerator into a ring of NS stages (an mbarrier
 * full a stage for K and one for V, one empty), and NC warpgroups of 64 query rows take turns
 * on the tensor cores (named barriers, FlashAttention-3's ping-pong): while one warpgroup's
 * products run, the other's softmax does. OVL: within a warpgroup, P·V of tile j − 1 runs
 * under the softmax of tile j too.
 * A stage, in shared memory (byte offsets; BN keys):
 *   K_lo  keys × dims 0..63, 128-byte rows, SWIZZLE_128B (K-major for q·kᵀ)    0
 *   V_lo  keys × dims 0..63, the same (MN-major for P·V)                       128·BN
 *   K_hi  keys × dims 64..71, 16-byte rows (unswizzled core matrices)          256·BN
 *   zero  keys × 16 bytes of zeros: q·kᵀ's fifth k16 step reads dims 72..79    272·BN
 *   V_hi  keys × dims 64..71                                                   288·BN
 * so q·kᵀ is four k16 steps on K_lo (32 bytes further each, inside the swizzle atom) and one
 * on K_hi | zero; P·V is n64 on V_lo plus n8 on V_hi. Each tile is four boxes of two tensor
 * maps (dims × heads × rows of the qkv rows: 128-byte and 16-byte boxes), keys past n read
 * as zeros. The softmax is k_vis_wg's (wg_softmax_tile, the lazy rescale when LAZY), so the
 * sums differ from k_vis_wg's only in the order the products add their k steps. */
#define TM_BAR 1 /* named barriers TM_BAR + w: warpgroup w may issue its products */
/* k_vis_tma's switches: OVL (above); QS: Q staged in shared memory too (q·kᵀ reads both
 * operands there, as P·V reads V), not held in registers; NOPP: no turns (2–6 % faster at four
 * stages in session 27's calls 2–3, not yet measured at the launched two). */
enum { TM_OVL = 1, TM_QS = 2, TM_NOPP = 4 };

template <int NC, int BN, int NS, int F> struct TmShape {
    static constexpr int NT = 128 * NC + 32, BM = 64 * NC;
    static constexpr uint32_t VLO = 128 * BN, KHI = 256 * BN, ZERO = 272 * BN, VHI = 288 * BN, SB = 304 * BN;
    static constexpr uint32_t TX = 144 * BN; /* bytes K (or V) brings a tile */
    /* with QS, Q ahead of the stages: Q_lo [BM][128 B] swizzled, Q_hi [BM][16 B], zeros [BM][16 B] */
    static constexpr uint32_t Q = (F & TM_QS) ? 160 * BM : 0;
    static constexpr size_t SMEM = Q + (size_t)NS * SB + (3 * NS + 1) * 8 + 1024; /* + barriers, alignment */
    static_assert(BN % 64 == 0 && BN <= 256, "BN");
    static_assert(!(F & TM_QS) || BN == 64, "Q's boxes are the key tiles' (BN rows), one a warpgroup");
};

/* Stage 0's (and Q's) low words; hi words are constants. */
struct TmLo {
    uint32_t k, kh, v, vh, q, qh;
};

/* q·kᵀ of one tile: dims 0..63 in four swizzled k16 steps (32 bytes further each, inside the
 * atom), 64..79 in one more (K_hi | zeros: LBO 16·BN, SBO 128). u: the stage's offset. */
template <typename T, int BN>
__device__ __forceinline__ void tm_issue_qk(float (*sc)[4], const uint32_t (*qa)[4], const TmLo &d, uint32_t u)
{
#pragma unroll
    for (int kk = 0; kk < 4; kk++) WgQk<T, BN>::run(sc, qa[kk], tm_desc(d.k + u + 2 * kk, TM_SW_HI), kk);
    WgQk<T, BN>::run(sc, qa[4], tm_desc(d.kh + u, 128 >> 4), 1);
}

/* The same from Q in shared memory: the warpgroup's 64 rows of Q_lo and of Q_hi | zeros. */
template <typename T>
__device__ __forceinline__ void tm_issue_qk_ss(float (*sc)[4], const TmLo &d, uint32_t u)
{
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
        wg_mma_ss_n64<T>(sc, tm_desc(d.q + 2 * kk, TM_SW_HI), tm_desc(d.k + u + 2 * kk, TM_SW_HI), kk);
    wg_mma_ss_n64<T>(sc, tm_desc(d.qh, 128 >> 4), tm_desc(d.kh + u, 128 >> 4), 1);
}

/* O += P·V of one tile: BN / 16 k16 steps of 16 keys (two swizzle atoms, 2048 bytes, of V_lo;
 * 256 bytes of V_hi: LBO 128, SBO 16·BN). */
template <typename T, int BN>
__device__ __forceinline__ void tm_issue_pv(float (*o)[4], const uint32_t (*pa)[4], const TmLo &d, uint32_t u)
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
        wg_mma_n64t<T>(o, pa[kk], tm_desc(d.v + u + 128 * kk, TM_SW_HI), 1);
        wg_mma_n8t<T>(o + 8, pa[kk], tm_desc(d.vh + u + 16 * kk, BN), 1);
    }
}

/* P·V of one tile issued and waited for (O and the weights pinned around it). */
template <typename T, int BN>
__device__ __forceinline__ void tm_pv_wait(float (*o)[4], uint32_t (*pa)[4], const TmLo &d, uint32_t u)
{
    wg_pin_u<BN / 16>(pa);
    wg_pin<FV_D / 8>(o);
    wg_fence();
    tm_issue_pv<T, BN>(o, pa, d, u);
    wg_commit();
    wg_wait<0>();
    wg_pin<FV_D / 8>(o);
    wg_pin_u<BN / 16>(pa);
}

/* Maps: lo (box 64 dims × 1 × BN rows, SWIZZLE_128B) and hi (8 dims × 1 × BN, unswizzled)
 * over dims × 3H heads × n rows of the packed qkv; coordinates (dim, head, row). */
template <typename T, int NC, int BN, int NS, int F, bool LAZY>
__global__ void __launch_bounds__(128 * NC + 32, 1)
    k_vis_tma(const __grid_constant__ CUtensorMap lo, const __grid_constant__ CUtensorMap hi, const T *qkv, T *out,
              int n, int H, float c)
{
#if HK_HAVE_WGMMA
    typedef TmShape<NC, BN, NS, F> S;
    constexpr bool OVL = F & TM_OVL, QS = F & TM_QS, PP = NC > 1 && !(F & TM_NOPP);
    extern __shared__ __align__(128) unsigned char tm_raw[];
    const uint32_t qbase = (smem_addr(tm_raw) + 1023u) & ~1023u; /* swizzle atoms are 1024-byte aligned */
    const uint32_t sbase = qbase + S::Q;
    const uint32_t bars = sbase + NS * S::SB; /* full K [NS], full V [NS], empty [NS], Q */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, head = blockIdx.y, r0 = blockIdx.x * S::BM;
    const int n_tiles = (n + BN - 1) / BN;

    unsigned char *gbase = tm_raw + (sbase - smem_addr(tm_raw));
    for (int i = threadIdx.x; i < NS * BN; i += S::NT)
        *(int4 *)(gbase + (i / BN) * S::SB + S::ZERO + (i % BN) * 16) = make_int4(0, 0, 0, 0);
    if (QS)
        for (int i = threadIdx.x; i < S::BM; i += S::NT) *(int4 *)(gbase - S::Q + 144 * S::BM + 16 * i) = make_int4(0, 0, 0, 0);
    const uint32_t qbar = bars + 8 * 3 * NS;
    if (threadIdx.x == 0) {
        for (int s = 0; s < NS; s++) {
            mb_init(bars + 8 * s, 1);
            mb_init(bars + 8 * (NS + s), 1);
            mb_init(bars + 8 * (2 * NS + s), 4 * NC);
        }
        mb_init(qbar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    wg_fence_smem(); /* the zeros, for the async proxy wgmma reads through */
    __syncthreads();

    if (warp == 4 * NC) {
        /* the copier: one thread issues every tile's four boxes once its stage is free */
        if (lane == 0 && QS) {
            mb_expect(qbar, 144 * S::BM);
            for (int w = 0; w < NC; w++) {
                tma_load3(qbase + 8192 * w, &lo, qbar, 0, head, r0 + 64 * w);
                tma_load3(qbase + 128 * S::BM + 1024 * w, &hi, qbar, 64, head, r0 + 64 * w);
            }
        }
        if (lane == 0)
            for (int t = 0; t < n_tiles; t++) {
                const int s = t % NS;
                if (t >= NS) mb_wait(bars + 8 * (2 * NS + s), ((t / NS) - 1) & 1);
                const uint32_t st = sbase + s * S::SB, fk = bars + 8 * s, fv = bars + 8 * (NS + s);
                mb_expect(fk, S::TX);
                tma_load3(st, &lo, fk, 0, H + head, t * BN);
                tma_load3(st + S::KHI, &hi, fk, 64, H + head, t * BN);
                mb_expect(fv, S::TX);
                tma_load3(st + S::VLO, &lo, fv, 0, 2 * H + head, t * BN);
                tma_load3(st + S::VHI, &hi, fv, 64, 2 * H + head, t * BN);
            }
        return;
    }

    const int w = warp >> 2;
    const int stride = 3 * H * FV_D;
    const TmLo d = { tm_lo_sw(sbase), tm_lo_u(sbase + S::KHI, 16 * BN), tm_lo_sw(sbase + S::VLO),
                     tm_lo_u(sbase + S::VHI, 128), tm_lo_sw(qbase + 8192 * w),
                     tm_lo_u(qbase + 128 * S::BM + 1024 * w, 16 * S::BM) };
    uint32_t qa[QS ? 1 : WG_DK / 16][4], pa[BN / 16][4];
    if (!QS) wg_load_q<T>(qa, qkv + (size_t)head * FV_D, stride, r0 + warp * 16, n, lane);
    else mb_wait(qbar, 0);
    float sc[BN / 8][4], o[FV_D / 8][4], m[2] = { -1e30f, -1e30f }, l[2] = { 0.0f, 0.0f }, corr[2];
    wg_zero<BN>(sc, o, pa);
    /* warpgroup 0 issues first: its barrier is given the arrival the last one would have made */
    if (PP && w == NC - 1) nb_arrive(TM_BAR, 256);

    for (int j = 0; j < n_tiles; j++) {
        const int s = j % NS;
        const uint32_t ph = (j / NS) & 1;
        /* with OVL, P·V of tile j − 1 goes out behind q·kᵀ of tile j: at j = 0 the weights are zeros
         * and tile 0's values (finite) stand in for tile −1's. Not under j > 0, nor with a wait
         * between the two: either serialises every wgmma (ptxas C7520). */
        const int sp = OVL && j > 0 ? (j - 1) % NS : s;
        mb_wait(bars + 8 * s, ph);
        if (OVL) mb_wait(bars + 8 * (NS + sp), OVL && j > 0 ? ((j - 1) / NS) & 1 : ph);
        if (PP) nb_sync(TM_BAR + w, 256);
        wg_pin_u<BN / 16>(pa);
        wg_pin<BN / 8>(sc);
        wg_pin<FV_D / 8>(o);
        wg_fence();
        if (QS) tm_issue_qk_ss<T>(sc, d, s * (S::SB >> 4));
        else tm_issue_qk<T, BN>(sc, qa, d, s * (S::SB >> 4));
        wg_commit();
        if (OVL) {
            tm_issue_pv<T, BN>(o, pa, d, sp * (S::SB >> 4));
            wg_commit();
        }
        /* the next warpgroup may issue (the last one's last arrival would be left over) */
        if (PP && !(w == NC - 1 && j == n_tiles - 1)) nb_arrive(TM_BAR + (w + 1) % NC, 256);
        if (OVL) wg_wait<1>();
        else wg_wait<0>();
        wg_pin<BN / 8>(sc);
        const bool rescale = wg_softmax_tile<BN, LAZY>(sc, m, l, corr, j * BN, n, lane & 3, c);
        if (OVL) {
            wg_wait<0>();
            wg_pin<FV_D / 8>(o);
            wg_pin_u<BN / 16>(pa);
            if (j > 0 && lane == 0) mb_arrive(bars + 8 * (2 * NS + (j - 1) % NS));
            if (rescale) wg_rescale(o, corr);
            wg_pack<T, BN>(pa, sc);
        } else {
            if (rescale) wg_rescale(o, corr);
            wg_pack<T, BN>(pa, sc);
            mb_wait(bars + 8 * (NS + s), ph);
            tm_pv_wait<T, BN>(o, pa, d, s * (S::SB >> 4));
            if (lane == 0) mb_arrive(bars + 8 * (2 * NS + s));
        }
    }
    if (OVL && n_tiles > 0) {
        const int sp = (n_tiles - 1) % NS;
        mb_wait(bars + 8 * (NS + sp), ((n_tiles - 1) / NS) & 1);
        tm_pv_wait<T, BN>(o, pa, d, sp * (S::SB >> 4));
    }
    wg_store<T>(out, o, l, r0 + warp * 16, n, H, head, lane);
#else
    __trap(); /* launched only where the probe saw wgmma */
#endif
}

/* The map of dims × 3H heads × n rows of packed qkv rows, boxes of `dims` dims × 1 × BN rows. */
static cudaError_t tm_map(CUtensorMap *m, bool bf16, const void *qkv, int n, int H, int dims, int rows, bool swz)
{
    const cuuint64_t gdim[3] = { FV_D, (cuuint64_t)3 * H, (cuuint64_t)n };
    const cuuint64_t gstr[2] = { FV_D * 2, (cuuint64_t)3 * H * FV_D * 2 };
    const cuuint32_t box[3] = { (cuuint32_t)dims, 1, (cuuint32_t)rows };
    return tm_map3(m, bf16, qkv, gdim, gstr, box, swz);
}

template <typename T, int NC, int BN, int NS, int F, bool LAZY>
static cudaError_t vis_tma_launch(cudaStream_t s, void *out, const void *qkv, int n, int H, float scale)
{
    typedef TmShape<NC, BN, NS, F> S;
    const bool bf16 = sizeof(T) == 2 && !std::is_same<T, __half>::value;
    CUtensorMap lo, hi;
    cudaError_t e = tm_map(&lo, bf16, qkv, n, H, 64, BN, true);
    if (e == cudaSuccess) e = tm_map(&hi, bf16, qkv, n, H, 8, BN, false);
    if (e != cudaSuccess) return e;
    e = cudaFuncSetAttribute(k_vis_tma<T, NC, BN, NS, F, LAZY>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)S::SMEM);
    if (e != cudaSuccess) return e;
    dim3 g((unsigned)((n + S::BM - 1) / S::BM), (unsigned)H);
    k_vis_tma<T, NC, BN, NS, F, LAZY>
        <<<g, S::NT, S::SMEM, s>>>(lo, hi, (const T *)qkv, (T *)out, n, H, scale * LOG2E);
    return cudaGetLastError();
}

/* The variant launched (bench/flash_bench.cu measures the others; tests/gpu/vision.sh
 * can take its pick): NWG warpgroups of 64 rows a CTA, BN-key tiles, NS stages,
 * MINB CTAs an SM, OVL: softmax under P·V. WG_ON 0 leaves the mma.sync kernel
 * in charge on Hopper too. */
#define WG_ON 1
#define WG_NWG 4
#define WG_BN 64
#define WG_NS 2
#define WG_MINB 1
#define WG_OVL false

template <typename T, int NWG, int BN, int NS, int MINB, bool OVL, bool LAZY>
static cudaError_t vis_wg_launch(cudaStream_t s, void *out, const void *qkv, int n, int H, float scale)
{
    typedef WgShape<NWG, BN, NS> S;
    if (S::SMEM > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(k_vis_wg<T, NWG, BN, NS, MINB, OVL, LAZY>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)S::SMEM);
        if (e != cudaSuccess) return e;
    }
    dim3 g((unsigned)((n + S::BM - 1) / S::BM), (unsigned)H);
    k_vis_wg<T, NWG, BN, NS, MINB, OVL, LAZY>
        <<<g, S::NT, S::SMEM, s>>>((const T *)qkv, (T *)out, n, H, scale * LOG2E);
    return cudaGetLastError();
}

/* k_vis_tma's launched shapes: NC warpgroups of 64 query rows a CTA, 64-key tiles, Q in shared
 * memory (TM_TMA_F); four warpgroups with two stages (TM_NS4), three with four (TM_NS3). Four are
 * the faster a full wave, three where a page's rows leave four's last wave nearly empty (session
 * 27 call3, H100, fp16, µs: 16384 patches four 2545.5 (two stages) / 2641.3 (four), three 2925.9,
 * k_vis_wg 3451.8; 4200 patches four 267.3, three 217.1, k_vis_wg 354.9). */
#define TM_NS4 2
#define TM_NS3 4
#define TM_TMA_F TM_QS

/* The warpgroups a CTA: the shape whose waves of CTAs, each as long as its rows (three
 * warpgroups' rows run ~6 % slower a row than four's), end first. */
static int tm_pick(int n, int H)
{
    int sms = 132;
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long w3 = ((long)(n + 191) / 192 * H + sms - 1) / sms, w4 = ((long)(n + 255) / 256 * H + sms - 1) / sms;
    return w4 * 256 * 100 <= w3 * 192 * 106 ? 4 : 3;
}

template <typename T>
static cudaError_t vis_tma_t(cudaStream_t s, void *out, const void *qkv, int n, int H, float scale, int lazy)
{
    if (tm_pick(n, H) == 4)
        return lazy ? vis_tma_launch<T, 4, 64, TM_NS4, TM_TMA_F, true>(s, out, qkv, n, H, scale)
                    : vis_tma_launch<T, 4, 64, TM_NS4, TM_TMA_F, false>(s, out, qkv, n, H, scale);
    return lazy ? vis_tma_launch<T, 3, 64, TM_NS3, TM_TMA_F, true>(s, out, qkv, n, H, scale)
                : vis_tma_launch<T, 3, 64, TM_NS3, TM_TMA_F, false>(s, out, qkv, n, H, scale);
}

/* The launched shape, lazy rescale or (lazy = 0) every tile's. */
template <typename T>
static cudaError_t vis_wg_t(cudaStream_t s, void *out, const void *qkv, int n, int H, float scale, int lazy)
{
    return lazy ? vis_wg_launch<T, WG_NWG, WG_BN, WG_NS, WG_MINB, WG_OVL, true>(s, out, qkv, n, H, scale)
                : vis_wg_launch<T, WG_NWG, WG_BN, WG_NS, WG_MINB, WG_OVL, false>(s, out, qkv, n, H, scale);
}

/* Whether the code this device runs was built with wgmma (sm_90a): the launcher
 * cannot tell from the device's compute capability alone (a compute_80 PTX build
 * runs on an H200 too). */
static __device__ int g_vis_wgmma;
static __global__ void k_vis_probe(void)
{
    g_vis_wgmma = HK_HAVE_WGMMA;
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
                              float scale, int wgmma, int lazy)
{
    if (n <= 0 || H <= 0) return cudaSuccess;
    if (D != FV_D) return hk_flash_full(s, t, out, qkv, n, H, D, scale);
    if (wgmma == HK_VIS_TMA && WG_ON && tm_encoder()) /* else k_vis_wg: a driver without tensor maps */
        return t == HK_BF16 ? vis_tma_t<__nv_bfloat16>(s, out, qkv, n, H, scale, lazy)
                            : vis_tma_t<__half>(s, out, qkv, n, H, scale, lazy);
    if (wgmma != HK_VIS_MMA && WG_ON)
        return t == HK_BF16 ? vis_wg_t<__nv_bfloat16>(s, out, qkv, n, H, scale, lazy)
                            : vis_wg_t<__half>(s, out, qkv, n, H, scale, lazy);
    return t == HK_BF16 ? vis_t<__nv_bfloat16>(s, out, qkv, n, H, scale) : vis_t<__half>(s, out, qkv, n, H, scale);
}

cudaError_t hk_vision_probe(cudaStream_t s, int *wgmma)
{
    *wgmma = 0;
    k_vis_probe<<<1, 1, 0, s>>>();
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyFromSymbolAsync(wgmma, g_vis_wgmma, sizeof *wgmma, 0, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    *wgmma = *wgmma && WG_ON;
    return e;
}

} /* extern "C" */
