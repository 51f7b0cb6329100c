/* hyocr — attention kernels.
 *
 * k_flash: FlashAttention-2 style tiles on the tensor cores (mma.sync m16n8k16,
 * fp32 accumulation, fp32 online softmax), 64 query rows × 64 keys per step,
 * 4 warps of 16 rows. One template serves bidirectional attention over the
 * packed qkv rows (head_dim 128; the vision tower's 72 has its own kernel,
 * k_flash_vis below) and the paged prefill (causal, K/V gathered from cache
 * blocks, the q heads of one KV group flattened into the 64 rows so a K/V tile
 * is loaded once per group). Memory is O(tile): nothing of size n² ever exists.
 *
 * k_decode: one query row per sequence; the context is cut into splits
 * spread over many CTAs (flash-decoding), each writing an unnormalised partial
 * (max, sum, acc); the last split of a row to finish merges them. Plain FMA: a
 * single row has no matrix shape for the tensor cores, and the kernel is bound
 * by reading the cache. */
#include "hk-common.h"
#include <math.h>

#define FA_BM 64
#define FA_BN 64
#define FA_THREADS 128
#define LOG2E 1.4426950408889634f

/* ---- small PTX wrappers (arch-guarded; sm_75 is the oldest target) ---- */

template <typename T> struct vec2;
template <> struct vec2<__half> { typedef __half2 type; };
template <> struct vec2<__nv_bfloat16> { typedef __nv_bfloat162 type; };

template <typename T> __device__ __forceinline__ uint32_t pack2(float a, float b);
template <> __device__ __forceinline__ uint32_t pack2<__half>(float a, float b)
{
    __half2 h = __floats2half2_rn(a, b);
    return *(uint32_t *)&h;
}
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *(uint32_t *)&h;
}

template <typename T> __device__ __forceinline__ void mma16816(float *c, const uint32_t *a, const uint32_t *b);

template <> __device__ __forceinline__ void mma16816<__half>(float *c, const uint32_t *a, const uint32_t *b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__)
    /* Turing has k8 only: the k16 fragment is two k8 halves. */
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
}

template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float *c, const uint32_t *a, const uint32_t *b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__)
    __trap();   /* BF16 is refused at init below sm_80 */
#endif
}

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ldsm_x4(uint32_t *r, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldsm_x4_t(uint32_t *r, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldsm_x2_t(uint32_t *r, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

/* 16-byte global→shared copy; zero-fills when !valid (src must still be a valid pointer). */
__device__ __forceinline__ void cp16(void *dst, const void *src, bool valid)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
#else
    *(int4 *)dst = valid ? *(const int4 *)src : make_int4(0, 0, 0, 0);
#endif
}

__device__ __forceinline__ void cp_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

__device__ __forceinline__ void cp_wait_all(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

/* ---- flash attention (vision + paged prefill) ---- */

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

/* S = Q·Kᵀ for this warp's 16 rows × 64 keys. */
template <typename T, int DP, int DS>
__device__ __forceinline__ void fa_qk(float (*sc)[4], const uint32_t (*qf)[4], const T *sK, int lane)
{
#pragma unroll
    for (int nt = 0; nt < FA_BN / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) sc[nt][e] = 0.0f;
    int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < DP / 16; kk++) {
#pragma unroll
        for (int p = 0; p < FA_BN / 16; p++) {
            uint32_t b[4];
            ldsm_x4(b, sK + (p * 16 + (lane & 7) + (mi >> 1) * 8) * DS + kk * 16 + (mi & 1) * 8);
            mma16816<T>(sc[2 * p], qf[kk], b);
            mma16816<T>(sc[2 * p + 1], qf[kk], b + 2);
        }
    }
}

/* O += P·V; P comes straight from the score registers (the C layout of two
 * adjacent n8 tiles is the A layout of one k16 step). */
template <typename T, int D, int DS>
__device__ __forceinline__ void fa_pv(float (*o)[4], float (*sc)[4], const T *sV, int lane)
{
    int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < FA_BN / 16; kk++) {
        uint32_t pa[4] = { pack2<T>(sc[2 * kk][0], sc[2 * kk][1]), pack2<T>(sc[2 * kk][2], sc[2 * kk][3]),
                           pack2<T>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                           pack2<T>(sc[2 * kk + 1][2], sc[2 * kk + 1][3]) };
        const T *vk = sV + (kk * 16 + (lane & 7) + (mi & 1) * 8) * DS;
#pragma unroll
        for (int q = 0; q < D / 16; q++) {
            uint32_t b[4];
            ldsm_x4_t(b, vk + q * 16 + (mi >> 1) * 8);
            mma16816<T>(o[2 * q], pa, b);
            mma16816<T>(o[2 * q + 1], pa, b + 2);
        }
        if (D % 16) {
            uint32_t b[2];
            ldsm_x2_t(b, vk + (D / 16) * 16);
            mma16816<T>(o[D / 8 - 1], pa, b);
        }
    }
}

/* Masks keys past each row's limit, then the online-softmax update of m, l, o. */
template <int D>
__device__ __forceinline__ void fa_softmax(float (*sc)[4], float (*o)[4], float *m, float *l, const int *lim,
                                           int key0, int tig, float scale_log2)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float mx = m[h];
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int key = key0 + nt * 8 + 2 * tig + e;
                float v = key <= lim[h] ? sc[nt][2 * h + e] * scale_log2 : -INFINITY;
                sc[nt][2 * h + e] = v;
                mx = fmaxf(mx, v);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float corr = exp2f(m[h] - mx);
        m[h] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < FA_BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float p = exp2f(sc[nt][2 * h + e] - mx);
                sc[nt][2 * h + e] = p;
                sum += p;
            }
        l[h] = l[h] * corr + sum;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            o[dt][2 * h] *= corr;
            o[dt][2 * h + 1] *= corr;
        }
    }
}

template <typename T, int D, bool PAGED>
__device__ __forceinline__ void fa_store(const FaArgs &a, const FaTile &t, float (*o)[4], float *l, int rloc,
                                         int tig)
{
    typedef typename vec2<T>::type T2;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float s = l[h];
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        int fr = t.r0 + rloc + 8 * h;
        if (fr >= t.flat) continue;
        float inv = 1.0f / s;
        T *dst = (T *)a.out + fa_row_off<PAGED>(a, t, fr, a.out_stride, D);
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            uint32_t v = pack2<T>(o[dt][2 * h] * inv, o[dt][2 * h + 1] * inv);
            *(T2 *)(dst + dt * 8 + 2 * tig) = *(T2 *)&v;
        }
    }
}

template <typename T, int D, int DP, bool PAGED>
__global__ void __launch_bounds__(FA_THREADS) k_flash(FaArgs a)
{
    constexpr int DS = DP + 8;   /* +16 bytes per row: conflict-free ldmatrix */
    __shared__ __align__(16) T sK[FA_BN * DS];
    __shared__ __align__(16) T sV[FA_BN * DS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;
    FaTile t = fa_tile<PAGED>(a);
    if (t.r0 >= t.flat) return;

    /* Pad columns D..DP of K (and Q, which passes through sK) must be zero for q·kᵀ. */
    constexpr int PAD = DP > D ? DP - D : 1;
    if (DP > D)
        for (int i = threadIdx.x; i < FA_BN * PAD; i += FA_THREADS)
            sK[(i / PAD) * DS + D + i % PAD] = T(0.0f);
    fa_load_q<T, D, DS, PAGED>(sK, a, t);
    cp_commit();
    cp_wait_all();
    __syncthreads();
    uint32_t qf[DP / 16][4];
    {
        int mi = lane >> 3;
#pragma unroll
        for (int kk = 0; kk < DP / 16; kk++)
            ldsm_x4(qf[kk], sK + (warp * 16 + (lane & 7) + (mi & 1) * 8) * DS + kk * 16 + (mi >> 1) * 8);
    }
    __syncthreads();

    const int rloc = warp * 16 + g;
    int lim[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int fr = min(t.r0 + rloc + 8 * h, t.flat - 1);
        lim[h] = PAGED ? t.n_past + fr / a.G : t.n_keys - 1;
    }
    float o[D / 8][4];
#pragma unroll
    for (int dt = 0; dt < D / 8; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    float m[2] = { -1e30f, -1e30f }, l[2] = { 0.0f, 0.0f };

    const int n_tiles = (t.n_keys + FA_BN - 1) / FA_BN;
    fa_load_kv<T, D, DS, PAGED>(sK, a, t, a.k, 0);
    cp_commit();
    for (int j = 0; j < n_tiles; j++) {
        cp_wait_all();
        __syncthreads();
        fa_load_kv<T, D, DS, PAGED>(sV, a, t, a.v, j * FA_BN);
        cp_commit();
        float sc[FA_BN / 8][4];
        fa_qk<T, DP, DS>(sc, qf, sK, lane);
        fa_softmax<D>(sc, o, m, l, lim, j * FA_BN, tig, a.scale_log2);
        cp_wait_all();
        __syncthreads();
        if (j + 1 < n_tiles) {
            fa_load_kv<T, D, DS, PAGED>(sK, a, t, a.k, (j + 1) * FA_BN);
            cp_commit();
        }
        fa_pv<T, D, DS>(o, sc, sV, lane);
    }
    fa_store<T, D, PAGED>(a, t, o, l, rloc, tig);
}

/* ---- vision attention, head_dim 72 ----
 * The vision tower's hot spot (27 layers × 16 heads × 16384² for a 2048² page),
 * so it gets its own kernel rather than the shared template above:
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

template <typename T> __device__ __forceinline__ void mma1688(float *c, const uint32_t *a, uint32_t b);

template <> __device__ __forceinline__ void mma1688<__half>(float *c, const uint32_t *a, uint32_t b)
{
#if defined(__CUDA_ARCH__)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
#endif
}

template <> __device__ __forceinline__ void mma1688<__nv_bfloat16>(float *c, const uint32_t *a, uint32_t b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
#elif defined(__CUDA_ARCH__)
    __trap();   /* BF16 is refused at init below sm_80 */
#endif
}

__device__ __forceinline__ void ldsm_x2(uint32_t *r, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Waits until at most N committed copy groups are still in flight. */
template <int N> __device__ __forceinline__ void cp_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

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

/* S = Q·Kᵀ for this warp's MW·16 rows × 64 keys; each K fragment feeds MW row blocks. */
template <typename T, int MW>
__device__ __forceinline__ void fv_qk(float (*sc)[FV_BN / 8][4], const uint32_t (*qf)[FV_D / 16][4],
                                      const uint32_t (*qf8)[2], const T *sK, int lane)
{
#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int nt = 0; nt < FV_BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[w][nt][e] = 0.0f;
    int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < FV_D / 16; kk++) {
#pragma unroll
        for (int p = 0; p < FV_BN / 16; p++) {
            uint32_t b[4];
            ldsm_x4(b, sK + (p * 16 + (lane & 7) + (mi >> 1) * 8) * FV_D + kk * 16 + (mi & 1) * 8);
#pragma unroll
            for (int w = 0; w < MW; w++) {
                mma16816<T>(sc[w][2 * p], qf[w][kk], b);
                mma16816<T>(sc[w][2 * p + 1], qf[w][kk], b + 2);
            }
        }
    }
    /* dims 64..71: one k8 step, four key groups of 8 per ldmatrix */
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

/* O += P·V, P straight from the score registers (see fa_pv); each V fragment feeds MW row blocks. */
template <typename T, int MW>
__device__ __forceinline__ void fv_pv(float (*o)[FV_D / 8][4], float (*sc)[FV_BN / 8][4], const T *sV, int lane)
{
    int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < FV_BN / 16; kk++) {
        uint32_t pa[MW][4];
#pragma unroll
        for (int w = 0; w < MW; w++) {
            pa[w][0] = pack2<T>(sc[w][2 * kk][0], sc[w][2 * kk][1]);
            pa[w][1] = pack2<T>(sc[w][2 * kk][2], sc[w][2 * kk][3]);
            pa[w][2] = pack2<T>(sc[w][2 * kk + 1][0], sc[w][2 * kk + 1][1]);
            pa[w][3] = pack2<T>(sc[w][2 * kk + 1][2], sc[w][2 * kk + 1][3]);
        }
        const T *vk = sV + (kk * 16 + (lane & 7) + (mi & 1) * 8) * FV_D;
#pragma unroll
        for (int q = 0; q < FV_D / 16; q++) {
            uint32_t b[4];
            ldsm_x4_t(b, vk + q * 16 + (mi >> 1) * 8);
#pragma unroll
            for (int w = 0; w < MW; w++) {
                mma16816<T>(o[w][2 * q], pa[w], b);
                mma16816<T>(o[w][2 * q + 1], pa[w], b + 2);
            }
        }
        uint32_t b[2];
        ldsm_x2_t(b, vk + (FV_D / 16) * 16);
#pragma unroll
        for (int w = 0; w < MW; w++) mma16816<T>(o[w][FV_D / 8 - 1], pa[w], b);
    }
}

/* Online softmax on raw scores: m stays unscaled, exp2((s − m)·c) is one FFMA + ex2. */
template <bool MASK>
__device__ __forceinline__ void fv_softmax(float (*sc)[4], float (*o)[4], float *m, float *l, int key0, int n,
                                           int tig, float c)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float mx = m[h];
#pragma unroll
        for (int nt = 0; nt < FV_BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                if (MASK && key0 + nt * 8 + 2 * tig + e >= n) sc[nt][2 * h + e] = -INFINITY;
                mx = fmaxf(mx, sc[nt][2 * h + e]);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float corr = ex2((m[h] - mx) * c), mc = mx * c;
        m[h] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < FV_BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float p = ex2(fmaf(sc[nt][2 * h + e], c, -mc));
                sc[nt][2 * h + e] = p;
                sum += p;
            }
        l[h] = l[h] * corr + sum;
#pragma unroll
        for (int dt = 0; dt < FV_D / 8; dt++) {
            o[dt][2 * h] *= corr;
            o[dt][2 * h + 1] *= corr;
        }
    }
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
    fv_pv<T, MW>(st.o, sc, sV, lane);
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

    typedef typename vec2<T>::type T2;
#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float s = st.l[w][h];
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            int row = r0 + (warp * MW + w) * 16 + (lane >> 2) + 8 * h;
            if (row >= n) continue;
            float inv = 1.0f / s;
            T *dst = out + (size_t)row * H * FV_D + (size_t)head * FV_D;
#pragma unroll
            for (int dt = 0; dt < FV_D / 8; dt++) {
                uint32_t v = pack2<T>(st.o[w][dt][2 * h] * inv, st.o[w][dt][2 * h + 1] * inv);
                *(T2 *)(dst + dt * 8 + 2 * (lane & 3)) = *(T2 *)&v;
            }
        }
}

/* ---- split-KV decode ---- */

#define DEC_THREADS 128
#define DEC_TG (DEC_THREADS / 16)   /* token groups: 16 lanes × 8 dims cover D = 128 */
#define DEC_U 8                     /* key (and value) rows in flight per thread */
#define DEC_RCHUNK 128              /* parts merged per round by the electing CTA */

struct DecArgs {
    const void *qkv;
    const void *k_cache, *v_cache;
    void *out;
    int q_stride, Hq, Hkv, G, block_size;
    float scale_log2;
    const hk_seq *seqs;
    const int32_t *bt;
    const hk_split *splits;
    unsigned *counters;
    float *part_acc, *part_ml;
    int dev_split_len, dev_max_splits;   /* > 0: splits derived from n_past here (graph replay) */
    int kv_write;                        /* store the decode rows' new k/v in the cache */
};

/* The split of this CTA. With dev_split_len, row r = sequence r (one decode row
 * each) owns CTAs [r·max, (r+1)·max) of a fixed grid and those past its context exit,
 * so a captured launch serves every context up to max·split_len. */
__device__ __forceinline__ bool dec_split(const DecArgs &a, hk_split &sp)
{
    if (a.dev_split_len <= 0) {
        sp = a.splits[blockIdx.x];
        return true;
    }
    int L = a.dev_split_len, row = blockIdx.x / a.dev_max_splits, i = blockIdx.x - row * a.dev_max_splits;
    int ctx = a.seqs[row].n_past + 1, n = (ctx + L - 1) / L;
    if (i >= n) return false;
    sp.seq = row;
    sp.t0 = i * L;
    sp.t1 = min(ctx, sp.t0 + L);
    sp.row = row;
    sp.part0 = row * a.dev_max_splits;
    sp.part = sp.part0 + i;
    sp.n_parts = n;
    sp.pad_ = 0;
    return true;
}

__device__ __forceinline__ float2 to_f2(__half2 h) { return __half22float2(h); }
__device__ __forceinline__ float2 to_f2(__nv_bfloat162 h) { return __bfloat1622float2(h); }

template <typename T> __device__ __forceinline__ void unpack8(float *f, int4 raw)
{
    const typename vec2<T>::type *h = (const typename vec2<T>::type *)&raw;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 v = to_f2(h[i]);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

/* Merges GT heads' partial states: (m, l, acc) of several producers → one. The
 * electing CTA of a row calls this over all the row's parts in global memory. */
template <typename T, int GT>
__device__ void dec_merge_parts(const DecArgs &a, const hk_split &sp, int head0, float *wts, float *sh)
{
    constexpr int D = 128;
    float M[GT], den[GT];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        float mx = -INFINITY;
        for (int p = threadIdx.x; p < sp.n_parts; p += DEC_THREADS)
            mx = fmaxf(mx, __ldcg(&a.part_ml[((size_t)(sp.part0 + p) * a.Hq + head0 + g) * 2]));
        M[g] = hk_block_max(mx, sh);
        den[g] = 0.0f;
    }
    float num[GT * D / DEC_THREADS];
#pragma unroll
    for (int k = 0; k < GT * D / DEC_THREADS; k++) num[k] = 0.0f;
    for (int c0 = 0; c0 < sp.n_parts; c0 += DEC_RCHUNK) {
        int cn = min(DEC_RCHUNK, sp.n_parts - c0);
        __syncthreads();
#pragma unroll
        for (int g = 0; g < GT; g++)
            for (int p = threadIdx.x; p < cn; p += DEC_THREADS) {
                const float *ml = &a.part_ml[((size_t)(sp.part0 + c0 + p) * a.Hq + head0 + g) * 2];
                float w = exp2f(__ldcg(ml) - M[g]);
                wts[g * DEC_RCHUNK + p] = w;
                den[g] += w * __ldcg(ml + 1);
            }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < GT * D / DEC_THREADS; k++) {
            int i = threadIdx.x + k * DEC_THREADS, g = i / D, d = i - g * D;
            const float *src = a.part_acc + ((size_t)(sp.part0 + c0) * a.Hq + head0 + g) * D + d;
            float r = 0.0f;
#pragma unroll 8
            for (int p = 0; p < cn; p++) r += wts[g * DEC_RCHUNK + p] * __ldcg(src + (size_t)p * a.Hq * D);
            num[k] += r;
        }
    }
#pragma unroll
    for (int g = 0; g < GT; g++) den[g] = hk_block_sum(den[g], sh);
    hk_seq s = a.seqs[sp.seq];
#pragma unroll
    for (int k = 0; k < GT * D / DEC_THREADS; k++) {
        int i = threadIdx.x + k * DEC_THREADS, g = i / D, d = i - g * D;
        float dv = den[0];
#pragma unroll
        for (int gg = 1; gg < GT; gg++) if (g == gg) dv = den[gg];
        ((T *)a.out)[(size_t)s.row0 * a.Hq * D + (size_t)(head0 + g) * D + d] = T(num[k] / dv);
    }
}

/* Round of DEC_TG·DEC_U keys from base: key rows of this thread's token group
 * into kr/vr. The row's new token (index inew, -1: not in this split) is taken
 * from the qkv row (kn, vn) instead of the cache, which the kernel may be
 * writing it to; with_new false leaves it zero (patched after the grid wait). */
__device__ __forceinline__ void dec_load(const DecArgs &a, const hk_split &sp, const int *blk, int b0, int base, int L,
                                         int kvh, int inew, bool with_new, int4 kn, int4 vn, int4 *kr, int4 *vr)
{
    constexpr int D = 128;
    const int lane16 = threadIdx.x & 15, tg = threadIdx.x >> 4;
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        int i = base + u * DEC_TG + tg;
        kr[u] = vr[u] = make_int4(0, 0, 0, 0);
        if (i == inew) {
            if (with_new) {
                kr[u] = kn;
                vr[u] = vn;
            }
        } else if (i < L) {
            int t = sp.t0 + i;
            size_t slot = (size_t)blk[t / a.block_size - b0] * a.block_size + t % a.block_size;
            size_t off = (slot * a.Hkv + kvh) * D + lane16 * 8;
            kr[u] = __ldcs((const int4 *)((const uint16_t *)a.k_cache + off));   /* read once per step */
            vr[u] = __ldcs((const int4 *)((const uint16_t *)a.v_cache + off));
        }
    }
}

/* Online softmax over one round of keys (see dec_load) for GT heads. */
template <typename T, int GT>
__device__ __forceinline__ void dec_round(const int4 *kr, const int4 *vr, int base, int L, const float (&q)[GT][8],
                                          float (&m)[GT], float (&l)[GT], float (&acc)[GT][8])
{
    const int tg = threadIdx.x >> 4;
    float sc[DEC_U][GT];
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        float k8[8];
        unpack8<T>(k8, kr[u]);
        bool ok = base + u * DEC_TG + tg < L;
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float d = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; e++) d += q[g][e] * k8[e];
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
            sc[u][g] = ok ? d : -INFINITY;
        }
    }
#pragma unroll
    for (int g = 0; g < GT; g++) {
        float mx = m[g];
#pragma unroll
        for (int u = 0; u < DEC_U; u++) mx = fmaxf(mx, sc[u][g]);
        float corr = exp2f(m[g] - mx);
        m[g] = mx;
        l[g] *= corr;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] *= corr;
    }
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        float v8[8];
        unpack8<T>(v8, vr[u]);
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float p = exp2f(sc[u][g] - m[g]);
            l[g] += p;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[g][e] += p * v8[e];
        }
    }
}

/* CTA = one split × GT query heads of one KV group. Every thread keeps DEC_U
 * key and value rows in flight, and the next round's while it computes one;
 * each 16-lane token group keeps an online softmax (m, l, acc); the 8 groups are
 * merged through shared memory into this split's partial. The last split of the
 * row to finish merges the partials (no second launch). The cached keys do not
 * depend on the kernels before, so the first round is issued before the grid
 * wait; the new token comes from the qkv row (and, with kv_write, is stored in
 * the cache here: no separate KV write launch). */
template <typename T, int GT>
__global__ void __launch_bounds__(DEC_THREADS) k_decode(DecArgs a)
{
    constexpr int D = 128, RT = DEC_TG * DEC_U;
    extern __shared__ __align__(16) float dsm[];
    float *red_acc = dsm;                          /* [DEC_TG][GT][D] */
    float *red_m = red_acc + DEC_TG * GT * D;      /* [DEC_TG][GT] */
    float *red_l = red_m + DEC_TG * GT;            /* [DEC_TG][GT] */
    float *wts = red_l + DEC_TG * GT;              /* [GT][DEC_RCHUNK] */
    int *blk = (int *)(wts + GT * DEC_RCHUNK);     /* block ids of this split */
    __shared__ float sh[32];
    __shared__ int s_last;

    hk_griddep_launch_next();
    hk_split sp;
    if (!dec_split(a, sp)) return;   /* whole CTA: before any barrier */
    const hk_seq s = a.seqs[sp.seq];
    const int head0 = blockIdx.y * GT, kvh = head0 / a.G;
    const int lane16 = threadIdx.x & 15, tg = threadIdx.x >> 4;
    const int L = sp.t1 - sp.t0, b0 = sp.t0 / a.block_size;
    const int nb = (sp.t1 - 1) / a.block_size - b0 + 1;
    const int inew = sp.t1 == s.n_past + 1 ? s.n_past - sp.t0 : -1;   /* a decode row: its one new token */
    for (int i = threadIdx.x; i < nb; i += DEC_THREADS) blk[i] = a.bt[s.bt_off + b0 + i];
    __syncthreads();
    const int4 zero = make_int4(0, 0, 0, 0);
    int4 ka[DEC_U], va[DEC_U], kb[DEC_U], vb[DEC_U];
    dec_load(a, sp, blk, b0, 0, L, kvh, inew, false, zero, zero, ka, va);

    hk_griddep_wait();   /* qkv (q, the new k/v) comes from the kernels before */
    const T *row = (const T *)a.qkv + (size_t)s.row0 * a.q_stride;
    int4 kn = zero, vn = zero;
    if (inew >= 0) {
        kn = *(const int4 *)(row + (size_t)(a.Hq + kvh) * D + lane16 * 8);
        vn = *(const int4 *)(row + (size_t)(a.Hq + a.Hkv + kvh) * D + lane16 * 8);
        if (a.kv_write && tg == 0 && head0 % a.G == 0) {
            int t = s.n_past;
            size_t slot = (size_t)blk[t / a.block_size - b0] * a.block_size + t % a.block_size;
            size_t off = (slot * a.Hkv + kvh) * D + lane16 * 8;
            *(int4 *)((uint16_t *)a.k_cache + off) = kn;
            *(int4 *)((uint16_t *)a.v_cache + off) = vn;
        }
#pragma unroll
        for (int u = 0; u < DEC_U; u++)
            if (u * DEC_TG + tg == inew) {
                ka[u] = kn;
                va[u] = vn;
            }
    }
    float q[GT][8];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        unpack8<T>(q[g], *(const int4 *)(row + (size_t)(head0 + g) * D + lane16 * 8));
#pragma unroll
        for (int e = 0; e < 8; e++) q[g][e] *= a.scale_log2;
    }
    float m[GT], l[GT], acc[GT][8];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -1e30f;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] = 0.0f;
    }

    /* Two register sets in turn. The loop bounds are block-uniform: the shuffles need whole warps. */
    for (int base = 0; base < L; base += 2 * RT) {
        if (base + RT < L) dec_load(a, sp, blk, b0, base + RT, L, kvh, inew, true, kn, vn, kb, vb);
        dec_round<T, GT>(ka, va, base, L, q, m, l, acc);
        if (base + RT >= L) break;
        if (base + 2 * RT < L) dec_load(a, sp, blk, b0, base + 2 * RT, L, kvh, inew, true, kn, vn, ka, va);
        dec_round<T, GT>(kb, vb, base + RT, L, q, m, l, acc);
    }

    /* Merge the token groups of this CTA. */
#pragma unroll
    for (int g = 0; g < GT; g++) {
        if (lane16 == 0) {
            red_m[tg * GT + g] = m[g];
            red_l[tg * GT + g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < 8; e++) red_acc[(tg * GT + g) * D + lane16 * 8 + e] = acc[g][e];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < GT * D / DEC_THREADS; k++) {
        int i = threadIdx.x + k * DEC_THREADS, g = i / D, d = i - g * D;
        float M = -INFINITY;
#pragma unroll
        for (int j = 0; j < DEC_TG; j++) M = fmaxf(M, red_m[j * GT + g]);
        float num = 0.0f, den = 0.0f;
#pragma unroll
        for (int j = 0; j < DEC_TG; j++) {
            float w = exp2f(red_m[j * GT + g] - M);
            num += w * red_acc[(j * GT + g) * D + d];
            den += w * red_l[j * GT + g];
        }
        if (sp.n_parts == 1) {
            ((T *)a.out)[(size_t)s.row0 * a.Hq * D + (size_t)(head0 + g) * D + d] = T(num / den);
        } else {
            size_t o = (size_t)sp.part * a.Hq + head0 + g;
            a.part_acc[o * D + d] = num;
            if (d == 0) {
                a.part_ml[o * 2] = M;
                a.part_ml[o * 2 + 1] = den;
            }
        }
    }
    if (sp.n_parts == 1) return;

    /* Elect the last split of this row (threadFenceReduction pattern). */
    __threadfence();
    __syncthreads();
    unsigned *ctr = &a.counters[(size_t)sp.row * gridDim.y + blockIdx.y];
    if (threadIdx.x == 0) s_last = atomicAdd(ctr, 1u) == (unsigned)sp.n_parts - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    dec_merge_parts<T, GT>(a, sp, head0, wts, sh);
    if (threadIdx.x == 0) *ctr = 0;   /* ready for the next call */
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

/* ---- generic head dims ----
 * The fast kernels above are built for the release's head dims (72 vision, 128 text).
 * Any other D ≤ 256 (the tiny test checkpoints, future variants) goes through these:
 * one warp per (query row, head), lanes split the head dims, keys in order with an
 * online softmax in fp32. Slow but exact enough, and correct for every shape. */
#define GEN_MAX_PER_LANE 8

__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
static __device__ void gen_attend_row(const T *q, int D, float scale, int n_keys,
                                      const T *(*key_at)(const void *, int, int), const void *ctx, int kv_head,
                                      int v_off, T *out)
{
    int lane = threadIdx.x & 31;
    float qv[GEN_MAX_PER_LANE], acc[GEN_MAX_PER_LANE];
    int per = (D + 31) / 32;
    for (int i = 0; i < per; i++) {
        int d = lane + 32 * i;
        qv[i] = d < D ? to_f32(q[d]) : 0.f;
        acc[i] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int j = 0; j < n_keys; j++) {
        const T *k = key_at(ctx, j, kv_head);
        float dot = 0.f;
        for (int i = 0; i < per; i++) {
            int d = lane + 32 * i;
            if (d < D) dot += qv[i] * to_f32(k[d]);
        }
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        float sc = dot * scale;
        float m2 = fmaxf(m, sc);
        float corr = __expf(m - m2), p = __expf(sc - m2);
        l = l * corr + p;
        const T *v = k + v_off;
        for (int i = 0; i < per; i++) {
            int d = lane + 32 * i;
            if (d < D) acc[i] = acc[i] * corr + p * to_f32(v[d]);
        }
        m = m2;
    }
    for (int i = 0; i < per; i++) {
        int d = lane + 32 * i;
        if (d < D) out[d] = from_f32<T>(acc[i] / l);
    }
}

struct GenFull { const void *qkv; int stride; int HD; int D; };

template <typename T>
static __device__ const T *gen_full_key(const void *ctx, int j, int h)
{
    const GenFull *g = (const GenFull *)ctx;
    return (const T *)g->qkv + (size_t)j * g->stride + g->HD + (size_t)h * g->D;
}

template <typename T>
static __global__ void k_full_generic(const void *qkv, void *out, int n, int H, int D, float scale)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (warp >= n * H) return;
    int row = warp / H, h = warp % H;
    GenFull g = { qkv, 3 * H * D, H * D, D };
    const T *q = (const T *)qkv + (size_t)row * g.stride + (size_t)h * D;
    T *o = (T *)out + (size_t)row * H * D + (size_t)h * D;
    /* v sits one H·D after k within the row */
    gen_attend_row<T>(q, D, scale, n, gen_full_key<T>, &g, h, H * D, o);
}

struct GenPaged { const void *k_cache; const void *v_cache; const int32_t *bt; int block_size; int Hkv; int D; };

template <typename T>
static __device__ const T *gen_paged_key(const void *ctx, int j, int h)
{
    const GenPaged *g = (const GenPaged *)ctx;
    int blk = g->bt[j / g->block_size], slot = j % g->block_size;
    return (const T *)g->k_cache + (((size_t)blk * g->block_size + slot) * g->Hkv + h) * g->D;
}

template <typename T>
static __global__ void k_paged_generic(hk_paged_args a)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (warp >= a.total_rows * a.Hq) return;
    int row = warp / a.Hq, h = warp % a.Hq;
    const hk_seq sq = a.seqs[a.row_seq[row]];
    int pos = sq.n_past + (row - sq.row0);
    GenPaged g = { a.k_cache, a.v_cache, a.block_tables + sq.bt_off, a.block_size, a.Hkv, a.D };
    int kvh = h / (a.Hq / a.Hkv);
    const T *q = (const T *)a.qkv + (size_t)row * (a.Hq + 2 * a.Hkv) * a.D + (size_t)h * a.D;
    T *o = (T *)a.out + (size_t)row * a.Hq * a.D + (size_t)h * a.D;
    /* K and V caches have the same layout: v = k + (v_cache − k_cache) */
    int v_off = (int)(((const T *)a.v_cache) - ((const T *)a.k_cache));
    gen_attend_row<T>(q, a.D, a.scale, pos + 1, gen_paged_key<T>, &g, kvh, v_off, o);
}

/* ---- launchers ---- */

template <typename T, int D, int DP, bool PAGED>
static cudaError_t launch_flash(cudaStream_t s, const FaArgs &a, dim3 grid)
{
    k_flash<T, D, DP, PAGED><<<grid, FA_THREADS, 0, s>>>(a);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t full_t(cudaStream_t s, void *out, const void *qkv, int n, int H, int D, float scale)
{
    if (D == 72) {
        dim3 g((unsigned)((n + FV_BM - 1) / FV_BM), (unsigned)H);
        k_flash_vis<T, FV_WARPS, FV_MW><<<g, 32 * FV_WARPS, 0, s>>>((const T *)qkv, (T *)out, n, H, scale * LOG2E);
        return cudaGetLastError();
    }
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
    a.q = p->qkv;
    a.k = p->k_cache;
    a.v = p->v_cache;
    a.out = p->out;
    a.q_stride = (p->Hq + 2 * p->Hkv) * p->D;
    a.out_stride = p->Hq * p->D;
    a.G = p->Hq / p->Hkv;
    a.Hkv = p->Hkv;
    a.scale_log2 = p->scale * LOG2E;
    a.seqs = p->seqs;
    a.tiles = p->tiles;
    a.bt = p->block_tables;
    a.block_size = p->block_size;
    dim3 grid((unsigned)p->n_tiles, (unsigned)p->Hkv);
    if (p->D == 128) return launch_flash<T, 128, 128, true>(s, a, grid);
    return cudaErrorInvalidValue;
}

static int decode_gt(const hk_paged_args *p)
{
    return hk_decode_heads_per_cta(p->Hq, p->Hkv);
}

template <typename T>
static cudaError_t decode_t(cudaStream_t s, const hk_paged_args *p)
{
    if (p->D != 128) return cudaErrorInvalidValue;
    DecArgs a = {};
    a.qkv = p->qkv;
    a.k_cache = p->k_cache;
    a.v_cache = p->v_cache;
    a.out = p->out;
    a.q_stride = (p->Hq + 2 * p->Hkv) * p->D;
    a.Hq = p->Hq;
    a.Hkv = p->Hkv;
    a.G = p->Hq / p->Hkv;
    a.block_size = p->block_size;
    a.scale_log2 = p->scale * LOG2E;
    a.seqs = p->seqs;
    a.bt = p->block_tables;
    a.splits = p->splits;
    a.counters = p->counters;
    a.part_acc = p->part_acc;
    a.part_ml = p->part_ml;
    a.dev_split_len = p->dev_split_len;
    a.dev_max_splits = p->dev_max_splits;
    a.kv_write = p->decode_kv_write;
    int GT = decode_gt(p);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)p->n_splits, (unsigned)(p->Hq / GT));
    cfg.blockDim = dim3(DEC_THREADS);
    cfg.dynamicSmemBytes = hk_decode_smem(GT, p->split_max, p->block_size);
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = p->pdl ? 1 : 0;
    return GT == 2 ? cudaLaunchKernelEx(&cfg, k_decode<T, 2>, a) : cudaLaunchKernelEx(&cfg, k_decode<T, 1>, a);
}

extern "C" {

int hk_decode_heads_per_cta(int Hq, int Hkv)
{
    return Hkv > 0 && (Hq / Hkv) % 2 == 0 ? 2 : 1;
}

size_t hk_decode_smem(int GT, int split_max, int block_size)
{
    size_t floats = (size_t)DEC_TG * GT * 128 + 2 * (size_t)DEC_TG * GT + (size_t)GT * DEC_RCHUNK;
    size_t blocks = (size_t)split_max / (block_size > 0 ? block_size : 1) + 2;
    return floats * sizeof(float) + blocks * sizeof(int);
}

int hk_decode_splits(hk_split *out, int seq, int row, int ctx, int split_len, int part0)
{
    int n = (ctx + split_len - 1) / split_len;
    for (int i = 0; i < n; i++) {
        int t0 = i * split_len, t1 = t0 + split_len < ctx ? t0 + split_len : ctx;
        out[i] = (hk_split){ seq, t0, t1, part0 + i, row, part0, n, 0 };
    }
    return n;
}

int hk_decode_split_len(int sm_count, int64_t total_ctx, int Hq, int Hkv)
{
    int64_t grid_y = Hq / hk_decode_heads_per_cta(Hq, Hkv);
    int64_t target = 2 * (int64_t)(sm_count > 0 ? sm_count : 80);
    int64_t len = (total_ctx * grid_y + target - 1) / target;
    len = (len + HK_SPLIT_MIN - 1) / HK_SPLIT_MIN * HK_SPLIT_MIN;
    if (len < HK_SPLIT_MIN) len = HK_SPLIT_MIN;
    if (len > HK_SPLIT_MAX) len = HK_SPLIT_MAX;
    return (int)len;
}

cudaError_t hk_attention_full(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D,
                              float scale)
{
    if (n <= 0 || H <= 0) return cudaSuccess;
    return t == HK_BF16 ? full_t<__nv_bfloat16>(s, out, qkv, n, H, D, scale)
                        : full_t<__half>(s, out, qkv, n, H, D, scale);
}

cudaError_t hk_attention_full_generic(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D,
                                      float scale)
{
    if (n <= 0 || H <= 0) return cudaSuccess;
    if (D <= 0 || D > 32 * GEN_MAX_PER_LANE) return cudaErrorInvalidValue;
    unsigned blocks = (unsigned)(((int64_t)n * H * 32 + 127) / 128);
    if (t == HK_BF16) k_full_generic<__nv_bfloat16><<<blocks, 128, 0, s>>>(qkv, out, n, H, D, scale);
    else k_full_generic<__half><<<blocks, 128, 0, s>>>(qkv, out, n, H, D, scale);
    return cudaGetLastError();
}

cudaError_t hk_attention_paged_generic(cudaStream_t s, const hk_paged_args *p)
{
    if (p->total_rows <= 0) return cudaSuccess;
    if (p->D <= 0 || p->D > 32 * GEN_MAX_PER_LANE) return cudaErrorInvalidValue;
    unsigned blocks = (unsigned)(((int64_t)p->total_rows * p->Hq * 32 + 127) / 128);
    if (p->t == HK_BF16) k_paged_generic<__nv_bfloat16><<<blocks, 128, 0, s>>>(*p);
    else k_paged_generic<__half><<<blocks, 128, 0, s>>>(*p);
    return cudaGetLastError();
}

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

cudaError_t hk_attention_decode(cudaStream_t s, const hk_paged_args *p)
{
    if (p->n_splits <= 0) return cudaSuccess;
    return p->t == HK_BF16 ? decode_t<__nv_bfloat16>(s, p) : decode_t<__half>(s, p);
}

} /* extern "C" */
