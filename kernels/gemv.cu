/* hyocr — products for decode steps: out[M, N] = x[M, K] · w[N, K]ᵀ for a few rows,
 * fp32 accumulation, the weights read once at close to memory speed. hk_gemv (one
 * row): one warp per output column n streams w's row n in 16-byte loads on the CUDA
 * cores; from two rows on cuBLAS beat it, and hk_gemm_rows beats cuBLAS. (A variant
 * that computed the swiglu activation on the fly for the down projection was slower:
 * every warp recomputed the whole activation.) hk_gemv1: one row with its neighbouring op fused. hk_gemm_rows
 * (M ≤ 16): the tensor cores, 8 columns a CTA. */
#include "hk-common.h"
#include "hk-flash.h"
#include <math.h>

#define GEMV_WARPS 8

template <typename T> __device__ __forceinline__ float cvt(T v);
template <> __device__ __forceinline__ float cvt<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float cvt<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ void unpack(float *f, const int4 &raw)
{
    const T *h = (const T *)&raw;
#pragma unroll
    for (int i = 0; i < 8; i++) f[i] = cvt<T>(h[i]);
}

template <typename T>
__global__ void __launch_bounds__(GEMV_WARPS * 32) k_gemv(void *out, int ot, const T *x, const T *w, int N, int K)
{
    const int lane = threadIdx.x & 31;
    const int n = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5);
    if (n >= N) return;   /* whole warp */
    const T *wr = w + (size_t)n * K;
    float acc = 0.0f;
#pragma unroll 4
    for (int k = lane * 8; k < K; k += 256) {
        float wv[8], xv[8];
        unpack<T>(wv, __ldcs((const int4 *)(wr + k)));   /* streamed: read once */
        unpack<T>(xv, __ldg((const int4 *)(x + k)));
#pragma unroll
        for (int i = 0; i < 8; i++) acc = fmaf(wv[i], xv[i], acc);
    }
    const float v = hk_warp_sum(acc);
    if (lane == 0) hk_st(out, ot, (size_t)n, v);
}

template <typename T>
static cudaError_t gemv_t(cudaStream_t s, void *out, hk_dtype ot, const void *x, const void *w, int N, int K)
{
    dim3 grid((unsigned)((N + GEMV_WARPS - 1) / GEMV_WARPS)), block(GEMV_WARPS * 32);
    k_gemv<T><<<grid, block, 0, s>>>(out, (int)ot, (const T *)x, (const T *)w, N, K);
    return cudaGetLastError();
}

extern "C" {

cudaError_t hk_gemv(cudaStream_t s, hk_dtype t, void *out, hk_dtype ot, const void *x, const void *w, int M, int N,
                    int K)
{
    if (M <= 0 || N <= 0) return cudaSuccess;
    if (M > HK_GEMV_MAX_ROWS || K <= 0 || K % 8 || (t != HK_F16 && t != HK_BF16)) return cudaErrorInvalidValue;
    return t == HK_BF16 ? gemv_t<__nv_bfloat16>(s, out, ot, x, w, N, K) : gemv_t<__half>(s, out, ot, x, w, N, K);
}

} /* extern "C" */

/* ---- one-row products with their neighbours fused (decode at batch 1) ----
 * A CTA of 8 warps serves 8/S outputs, S warps splitting K, so the narrow
 * products (N = 1024) still put every SM to work. Each thread issues all its
 * weight loads before anything else (the RMSNorm prologue and the reductions
 * overlap them). The modes save a launch each: the norm that feeds the product
 * (every CTA recomputes it from the fp32 residual: 4 KB of L2 reads), silu(gate)·up
 * computed from two weight rows per output, and the residual add of the result.
 * Every value is rounded where the unfused ops store it, so results match them. */
#define GEMV1_THREADS 256
#define GEMV1_MAX_K   8192   /* the normalised row lives in shared memory */

template <typename T> struct ctype;
template <> struct ctype<__half> { static constexpr int value = HK_F16; };
template <> struct ctype<__nv_bfloat16> { static constexpr int value = HK_BF16; };

template <typename T> __device__ __forceinline__ void dot8(float &acc, const int4 &w, const float *x)
{
    float wv[8];
    unpack<T>(wv, w);
#pragma unroll
    for (int i = 0; i < 8; i++) acc = fmaf(wv[i], x[i], acc);
}

/* xs[0..K) = RMSNorm_HF(res)·nw as add_norm stores it; same thread striding and
 * block sum as k_add_norm with 256 threads, hence the same rstd. */
template <typename T>
__device__ void gemv1_norm(float *xs, const float *res, const void *nw, int nwt, float eps, int K, float *red)
{
    float sq = 0.0f;
    for (int i = threadIdx.x; i < K; i += blockDim.x) {
        float v = res[i];
        sq += v * v;
    }
    const float rstd = rsqrtf(hk_block_sum(sq, red) / K + eps);
    const int ct = ctype<T>::value;
    for (int i = threadIdx.x; i < K; i += blockDim.x)
        xs[i] = hk_round(hk_round(res[i] * rstd, ct) * hk_ld(nw, nwt, i), ct);
    __syncthreads();
}

/* Launched as a programmatic dependent (hk_griddep_*), a product streams its
 * weights (constant) while the kernel before it finishes. */
template <typename T, int NV, int S, int MODE>
__global__ void __launch_bounds__(GEMV1_THREADS)
k_gemv1(void *out, int ot, const T *x, float *res, const void *nw, int nwt, float eps, const T *w, int N, int K)
{
    extern __shared__ float xs[];   /* MODE NORM / NORM_GLU: the normalised input row */
    __shared__ float red[32];
    __shared__ float part[2][GEMV1_THREADS / 32];
    constexpr int R = GEMV1_THREADS / 32 / S, G = 32 * S;
    const bool glu = MODE == HK_GEMV_NORM_GLU, norm = MODE == HK_GEMV_NORM || glu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, rr = warp % R, sl = warp / R;
    const int n = blockIdx.x * R + rr, t = sl * 32 + lane, units = K >> 3;
    const bool on = n < N;
    const int4 *wa = (const int4 *)(w + (size_t)(on ? n : 0) * K);
    const int4 *wb = (const int4 *)(w + (size_t)(on ? N + n : 0) * K);
    hk_griddep_launch_next();
    int4 va[NV], vb[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = t + j * G;
        if (on && u < units) {
            va[j] = __ldcs(wa + u);
            if (glu) vb[j] = __ldcs(wb + u);
        }
    }
    hk_griddep_wait();
    if (norm) gemv1_norm<T>(xs, res, nw, nwt, eps, K, red);
    float acc_a = 0.0f, acc_b = 0.0f;
    for (int u0 = 0;;) {
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int u = u0 + t + j * G;
            if (!on || u >= units) continue;
            float xv[8];
            if (norm) {
                const float4 *p = (const float4 *)(xs + u * 8);
                float4 a = p[0], b = p[1];
                xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w, xv[4] = b.x, xv[5] = b.y, xv[6] = b.z, xv[7] = b.w;
            } else {
                unpack<T>(xv, __ldg((const int4 *)x + u));
            }
            dot8<T>(acc_a, va[j], xv);
            if (glu) dot8<T>(acc_b, vb[j], xv);
        }
        u0 += G * NV;
        if (u0 >= units) break;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int u = u0 + t + j * G;
            if (on && u < units) {
                va[j] = __ldcs(wa + u);
                if (glu) vb[j] = __ldcs(wb + u);
            }
        }
    }
    acc_a = hk_warp_sum(acc_a);
    if (glu) acc_b = hk_warp_sum(acc_b);
    if (S > 1) {
        if (lane == 0) {
            part[0][warp] = acc_a;
            part[1][warp] = acc_b;
        }
        __syncthreads();
        if (sl == 0) {
            for (int s = 1; s < S; s++) {
                acc_a += part[0][s * R + rr];
                acc_b += part[1][s * R + rr];
            }
        }
    }
    if (sl || lane || !on) return;
    const int ct = ctype<T>::value;
    if (MODE == HK_GEMV_RESIDUAL) {
        res[n] += hk_round(acc_a, ct);
    } else if (glu) {
        float g = hk_round(acc_a, ot), u = hk_round(acc_b, ot);
        hk_st(out, ot, n, hk_swiglu1(g, u, ot));
    } else {
        hk_st(out, ot, n, acc_a);
    }
}

template <typename T, int NV, int S>
static cudaError_t gemv1_launch(cudaStream_t s, int mode, void *out, hk_dtype ot, const void *x, float *res,
                                const void *nw, hk_dtype nwt, float eps, const void *w, int N, int K, int pdl)
{
    constexpr int R = GEMV1_THREADS / 32 / S;
    const T *xp = (const T *)x, *wp = (const T *)w;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)((N + R - 1) / R));
    cfg.blockDim = dim3(GEMV1_THREADS);
    cfg.dynamicSmemBytes = mode == HK_GEMV_NORM || mode == HK_GEMV_NORM_GLU ? (size_t)K * sizeof(float) : 0;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    cudaError_t e;
#define GEMV1_CASE(M_)                                                                                       \
    case M_:                                                                                                 \
        e = cudaLaunchKernelEx(&cfg, k_gemv1<T, NV, S, M_>, out, (int)ot, xp, res, nw, (int)nwt, eps, wp, N, K); \
        break;
    switch (mode) {
    GEMV1_CASE(HK_GEMV_PLAIN)
    GEMV1_CASE(HK_GEMV_NORM)
    GEMV1_CASE(HK_GEMV_NORM_GLU)
    GEMV1_CASE(HK_GEMV_RESIDUAL)
    default: return cudaErrorInvalidValue;
    }
#undef GEMV1_CASE
    return e;
}

/* Split K over two warps where the outputs are few, and hold up to 8 loads per
 * thread: every shape of the model then streams its weights in one pass. */
template <typename T>
static cudaError_t gemv1_t(cudaStream_t s, int mode, void *out, hk_dtype ot, const void *x, float *res, const void *nw,
                           hk_dtype nwt, float eps, const void *w, int N, int K, int pdl)
{
    const int units = K / 8;
    if (N <= 2048) {
        if (units <= 2 * 32 * 4) return gemv1_launch<T, 4, 2>(s, mode, out, ot, x, res, nw, nwt, eps, w, N, K, pdl);
        return gemv1_launch<T, 8, 2>(s, mode, out, ot, x, res, nw, nwt, eps, w, N, K, pdl);
    }
    if (units <= 32 * 4) return gemv1_launch<T, 4, 1>(s, mode, out, ot, x, res, nw, nwt, eps, w, N, K, pdl);
    return gemv1_launch<T, 8, 1>(s, mode, out, ot, x, res, nw, nwt, eps, w, N, K, pdl);
}

extern "C" {

cudaError_t hk_gemv1(cudaStream_t s, hk_dtype t, int mode, void *out, hk_dtype ot, const void *x, float *res,
                     const void *nw, hk_dtype nwt, float eps, const void *w, int N, int K, int pdl)
{
    if (N <= 0) return cudaSuccess;
    const bool norm = mode == HK_GEMV_NORM || mode == HK_GEMV_NORM_GLU;
    if (K <= 0 || K % 8 || (t != HK_F16 && t != HK_BF16) || (norm && K > GEMV1_MAX_K) || (norm && (!res || !nw)) ||
        (!norm && !x) || (mode == HK_GEMV_RESIDUAL ? !res : !out))
        return cudaErrorInvalidValue;
    return t == HK_BF16 ? gemv1_t<__nv_bfloat16>(s, mode, out, ot, x, res, nw, nwt, eps, w, N, K, pdl)
                        : gemv1_t<__half>(s, mode, out, ot, x, res, nw, nwt, eps, w, N, K, pdl);
}

} /* extern "C" */

/* ---- products of 2..16 rows on the tensor cores (batched decode, the speculative verify) ----
 * Memory bound like the one-row products (the weights are read once), but cuBLAS's
 * small-M kernels do not stream them at memory speed, and one warp per output on the
 * CUDA cores runs out of arithmetic from a few rows on. Here a CTA owns 8 output
 * columns: its 8 warps split K into chunks of 32 (warp w takes chunks w, w + 8, …) and
 * each chunk is two mma.sync m16n8k16 with A = the x rows (16 rows, rows ≥ M zeros) and
 * B = the 8 weight rows, loaded straight from global memory in 16-byte loads.
 *
 * The fragment layouts (PTX ISA, mma.m16n8k16 .row.col, f16/bf16; gid = lane / 4,
 * q = lane % 4; each register holds two elements, the lower index in the low half):
 *   A  a[0]: row gid,   k 2q, 2q+1      a[1]: row gid+8, k 2q, 2q+1
 *      a[2]: row gid,   k 2q+8, 2q+9    a[3]: row gid+8, k 2q+8, 2q+9
 *   B  b[0]: k 2q, 2q+1, column gid     b[1]: k 2q+8, 2q+9, column gid
 *   C  c[0], c[1]: row gid, columns 2q, 2q+1; c[2], c[3]: row gid+8, columns 2q, 2q+1
 * A dot product does not care in which order it meets its k, so A and B may share any
 * permutation of k. Lane (gid, q) loads the 8 consecutive values k = 32c + 8q + [0, 8) of
 * weight row n0 + gid and of x rows gid and gid + 8 — words .x .y .z .w holding pairs
 * (0,1) (2,3) (4,5) (6,7) — and mma j ∈ {0, 1} of the chunk takes
 *   b = { w[2j], w[2j+1] },  a = { xg[2j], xg8[2j], xg[2j+1], xg8[2j+1] }
 * so its logical k 2q, 2q+1, 2q+8, 2q+9 are the real k 32c + 8q + 4j + 0, 1, 2, 3 in both
 * operands, in every lane of a given q: the 16 logical k of mma j are the real k ≡ 4j..4j+3
 * (mod 8) of the chunk, and the two mmas cover all 32. (The Turing fallback of mma16816,
 * two m16n8k8 on a[0..1], b[0] and a[2..3], b[1], keeps the same correspondence.)
 *
 * Each output element is one lane's chain of mmas over its warp's chunks in order, then
 * the 8 warps' partials added in warp order: the sum depends on N and K only, so row m of
 * a product is bit-identical whatever M is and whatever the other rows hold.
 *
 * A second layout of the same sums (hk_gemm_rows_ex), for shapes of more CTAs than a wave
 * holds: a CTA owns 2 column groups of 8, and each x chunk a warp loads (and the rows a norm
 * leaves in shared memory) meets both groups' weights. Each column's chain and warp sum are
 * the one-group ones: the same bits, half the x read a column.
 *
 * The modes of hk_gemv1, for decode steps of several rows through the fused layer. They
 * change where A comes from and where the sums go, never the order of the sums, so a
 * fused step gives the bits of the unfused ops (add_rmsnorm, this product, swiglu, add)
 * whose products go through this kernel too:
 *   NORM      every CTA normalises the M residual rows into shared memory as add_norm's
 *             one-warp-a-row kernel stores them (rows_norm: its sums, its two roundings),
 *             and A is read from there with the same k-permutation;
 *   NORM_GLU  also the 8 up columns N + n0.. (a second B tile, a second accumulator):
 *             silu(g)·u with g and u rounded to the compute type, as the gate|up product
 *             stores them for swiglu;
 *   RESIDUAL  res[m, n] += the sum rounded to the compute type (the product stored, then
 *             added by the next norm). */

#define ROWS_WARPS 8
#define ROWS_COLS  8

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* Elements between two normalised rows in shared memory: a row stride of 64 bytes mod 128
 * puts rows gid and gid + 1 (one phase of a 16-byte load) on different banks. */
static inline __host__ __device__ int rows_ld(int K)
{
    return K % 64 ? K : K + 32;
}

/* xs[0..K) = RMSNorm_HF(res)·nw of NR rows (xs_step and res_step elements apart), each as
 * k_add_norm_warp stores it (elementwise.cu): lane l adds the squares of float4 l, l + 32, …
 * (hk_sq4), a warp sum, the same rstd, the same two roundings. One warp; a 16-row call gives a
 * warp rows w and w + 8 at once (NR 2): one after the other, each paid its own round trips to the
 * L2 for the residual (the sums, then the scaled values) while the CTA waited at the barrier
 * behind it; together, the loads of both rows are in flight at once. */
template <typename T, int NR>
__device__ void rows_norm(T *xs, size_t xs_step, const float *res, size_t res_step, const void *nw, int nwt, float eps,
                          int K, int lane)
{
    const int nv = K >> 2;
    float sq[NR], rstd[NR];
#pragma unroll
    for (int j = 0; j < NR; j++) sq[j] = 0.0f;
    for (int c = lane; c < nv; c += 32) {
        float4 v[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) v[j] = ((const float4 *)(res + j * res_step))[c];
#pragma unroll
        for (int j = 0; j < NR; j++) sq[j] = __fadd_rn(sq[j], hk_sq4(v[j]));
    }
#pragma unroll
    for (int j = 0; j < NR; j++) rstd[j] = rsqrtf(hk_warp_sum(sq[j]) / K + eps);
    const int ct = ctype<T>::value;
    for (int c = lane; c < nv; c += 32) {
        float4 v[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) v[j] = ((const float4 *)(res + j * res_step))[c];
        const float4 g = hk_ld4(nw, nwt, c);
#pragma unroll
        for (int j = 0; j < NR; j++) {
            union {
                uint2 u;
                T     h[4];
            } o;
            o.h[0] = from_float<T>(hk_round(v[j].x * rstd[j], ct) * g.x);
            o.h[1] = from_float<T>(hk_round(v[j].y * rstd[j], ct) * g.y);
            o.h[2] = from_float<T>(hk_round(v[j].z * rstd[j], ct) * g.z);
            o.h[3] = from_float<T>(hk_round(v[j].w * rstd[j], ct) * g.w);
            *(uint2 *)(xs + j * xs_step + 4 * c) = o.u;
        }
    }
}

/* G chunks a warp loads before it multiplies them (the bytes in flight); HI: rows 8..15 in use;
 * CG column groups of 8 a CTA (1 or 2): each warp multiplies the x chunks it loaded (and the rows
 * normalised once) by CG groups' weights, every column's chain of mmas and the warps' sum as with
 * one group — the same bits, less x (or residual) read per column. */
template <typename T, int G, bool HI, int MODE, int CG>
__global__ void __launch_bounds__(ROWS_WARPS * 32, 2)
k_gemm_rows(void *out, int ot, const T *x, float *res, const void *nw, int nwt, float eps, const T *w, int M, int N,
            int K)
{
    constexpr bool glu = MODE == HK_GEMV_NORM_GLU, norm = glu || MODE == HK_GEMV_NORM;
    constexpr int NB = glu ? 2 : 1;   /* B tiles a group: the gate and the up columns */
    constexpr int NT = CG * NB;       /* B tiles a warp */
    extern __shared__ int4 xs_raw[];  /* norm: the M normalised rows, rows_ld(K) apart */
    __shared__ float part[NT][ROWS_WARPS][4][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gid = lane >> 2, q = lane & 3;
    const int n0 = blockIdx.x * ROWS_COLS * CG, chunks = K >> 5, ld = norm ? rows_ld(K) : K;
    /* warp w takes chunks w, w + 8, … */
    const int mine = chunks > warp ? (chunks - warp + ROWS_WARPS - 1) / ROWS_WARPS : 0;
    const bool a_on = gid < M, b_on = HI && gid + 8 < M;
    bool w_on[CG];
    T *xs = (T *)xs_raw;
    const T *xsrc = norm ? xs : x;
    /* 16-byte units: chunk c of a row starts at unit 4c, the lane's at 4c + q; tile g·NB + t is
     * group g's gate (t 0) or up (t 1) columns */
    const int4 *wr[NT];
#pragma unroll
    for (int g = 0; g < CG; g++) {
        const int n = n0 + ROWS_COLS * g + gid;
        w_on[g] = n < N;
        wr[g * NB] = (const int4 *)(w + (size_t)(w_on[g] ? n : 0) * K) + q;
        if (glu) wr[g * NB + NB - 1] = (const int4 *)(w + (size_t)(w_on[g] ? N + n : 0) * K) + q;
    }
    const int4 *xa = (const int4 *)(xsrc + (size_t)(a_on ? gid : 0) * ld) + q;
    const int4 *xb = (const int4 *)(xsrc + (size_t)(b_on ? gid + 8 : 0) * ld) + q;
    const int4 zero = make_int4(0, 0, 0, 0);
    float acc[NT][4] = {};
    hk_griddep_launch_next();
    int4 wv[NT][G];
    /* The first weights (constant) are on their way before the kernel before has finished. */
#pragma unroll
    for (int j = 0; j < G; j++) {
        const int u = 4 * (warp + ROWS_WARPS * j);
#pragma unroll
        for (int t = 0; t < NT; t++) wv[t][j] = w_on[t / NB] && j < mine ? __ldcs(wr[t] + u) : zero;
    }
    hk_griddep_wait();
    if (norm) {
        /* M ≤ 16: warp w has row w and, past 8 rows, row w + 8 */
        const int r = warp, r2 = warp + ROWS_WARPS;
        if (r2 < M)
            rows_norm<T, 2>(xs + (size_t)r * ld, (size_t)ROWS_WARPS * ld, res + (size_t)r * K, (size_t)ROWS_WARPS * K,
                            nw, nwt, eps, K, lane);
        else
            for (int i = r; i < M; i += ROWS_WARPS)
                rows_norm<T, 1>(xs + (size_t)i * ld, 0, res + (size_t)i * K, 0, nw, nwt, eps, K, lane);
        __syncthreads();
    }
    for (int i0 = 0; i0 < mine; i0 += G) {
        if (i0) {
#pragma unroll
            for (int j = 0; j < G; j++) {
                const int u = 4 * (warp + ROWS_WARPS * (i0 + j));
#pragma unroll
                for (int t = 0; t < NT; t++) wv[t][j] = w_on[t / NB] && i0 + j < mine ? __ldcs(wr[t] + u) : zero;
            }
        }
        int4 av[G], bv[G];
#pragma unroll
        for (int j = 0; j < G; j++) {
            const int u = 4 * (warp + ROWS_WARPS * (i0 + j));
            const bool on = i0 + j < mine;
            if (norm) {
                av[j] = a_on && on ? xa[u] : zero;
                bv[j] = b_on && on ? xb[u] : zero;
            } else {
                av[j] = a_on && on ? __ldg(xa + u) : zero;
                bv[j] = b_on && on ? __ldg(xb + u) : zero;
            }
        }
#pragma unroll
        for (int j = 0; j < G; j++) {
            if (i0 + j >= mine) break;
            const uint32_t a0[4] = { (uint32_t)av[j].x, (uint32_t)bv[j].x, (uint32_t)av[j].y, (uint32_t)bv[j].y };
            const uint32_t a1[4] = { (uint32_t)av[j].z, (uint32_t)bv[j].z, (uint32_t)av[j].w, (uint32_t)bv[j].w };
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const uint32_t b0[2] = { (uint32_t)wv[t][j].x, (uint32_t)wv[t][j].y };
                mma16816<T>(acc[t], a0, b0);
                const uint32_t b1[2] = { (uint32_t)wv[t][j].z, (uint32_t)wv[t][j].w };
                mma16816<T>(acc[t], a1, b1);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++)
#pragma unroll
        for (int r = 0; r < 4; r++) part[t][warp][r][lane] = acc[t][r];
    __syncthreads();
    if (threadIdx.x >= CG * 4 * 32) return;
    /* thread (g, r, l) adds register r of lane l of group g over the warps, in warp order */
    const int g = threadIdx.x >> 7, r = (threadIdx.x >> 5) & 3, l = lane;
    const int row = (l >> 2) + (r >= 2 ? 8 : 0), col = n0 + ROWS_COLS * g + 2 * (l & 3) + (r & 1);
    if (row >= M || col >= N) return;
    float v[NB];
#pragma unroll
    for (int t = 0; t < NB; t++) {
        v[t] = part[g * NB + t][0][r][l];
#pragma unroll
        for (int s = 1; s < ROWS_WARPS; s++) v[t] += part[g * NB + t][s][r][l];
    }
    const int ct = ctype<T>::value;
    const size_t o = (size_t)row * N + col;
    if (MODE == HK_GEMV_RESIDUAL) res[o] += hk_round(v[0], ct);
    else if (glu) hk_st(out, ot, o, hk_swiglu1(hk_round(v[0], ct), hk_round(v[NB - 1], ct), ot));
    else hk_st(out, ot, o, v[0]);
}

static inline int rows_blocks(int N, int groups)
{
    return (N + ROWS_COLS * groups - 1) / (ROWS_COLS * groups);
}

/* Bytes of shared memory the normalised rows take. */
static size_t rows_smem(int mode, int M, int K)
{
    if (mode != HK_GEMV_NORM && mode != HK_GEMV_NORM_GLU) return 0;
    return (size_t)M * rows_ld(K) * 2;
}

/* One call's arguments, carried unchanged through the dispatch on dtype, mode, groups and depth. */
struct rows_call {
    cudaStream_t s;
    void *out;
    hk_dtype ot;
    const void *x;
    float *res;
    const void *nw;
    hk_dtype nwt;
    float eps;
    const void *w;
    int M, N, K, pdl, groups;
};

template <typename T, int G, bool HI, int MODE, int CG>
static cudaError_t gemm_rows_launch(const rows_call &c)
{
    constexpr int NT = CG * (MODE == HK_GEMV_NORM_GLU ? 2 : 1);
    const size_t smem = rows_smem(MODE, c.M, c.K);
    /* over the 48 KB a launch gets without asking, with the partial sums (K > 1024 at 16 rows) */
    if (smem + sizeof(float) * NT * ROWS_WARPS * 4 * 32 > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(k_gemm_rows<T, G, HI, MODE, CG>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)rows_blocks(c.N, CG));
    cfg.blockDim = dim3(ROWS_WARPS * 32);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = c.s;
    cfg.attrs = &attr;
    cfg.numAttrs = c.pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, k_gemm_rows<T, G, HI, MODE, CG>, c.out, (int)c.ot, (const T *)c.x, c.res, c.nw,
                              (int)c.nwt, c.eps, (const T *)c.w, c.M, c.N, c.K);
}

/* Up to 4 chunks a warp (K ≤ 1024: most of the model's products) is one round of
 * 4; more goes in rounds of 8 — fewer where a warp has more B tiles (two with NORM_GLU's gate
 * and up, CG times that), whose registers would spill. Neither depends on M: only the
 * registers rows 8..15 need. G changes when the loads are issued, never the order of the sums. */
template <typename T, int MODE, int CG>
static cudaError_t gemm_rows_depth(const rows_call &c)
{
    constexpr int NT = CG * (MODE == HK_GEMV_NORM_GLU ? 2 : 1);
    constexpr int G_SHORT = NT >= 4 ? 2 : 4, G_LONG = NT >= 4 ? 2 : NT >= 2 ? 4 : 8;
    const bool hi = c.M > 8;
    if (c.K <= 32 * ROWS_WARPS * 4)
        return hi ? gemm_rows_launch<T, G_SHORT, true, MODE, CG>(c) : gemm_rows_launch<T, G_SHORT, false, MODE, CG>(c);
    return hi ? gemm_rows_launch<T, G_LONG, true, MODE, CG>(c) : gemm_rows_launch<T, G_LONG, false, MODE, CG>(c);
}

template <typename T, int MODE>
static cudaError_t gemm_rows_mode(const rows_call &c)
{
    return c.groups == 2 ? gemm_rows_depth<T, MODE, 2>(c) : gemm_rows_depth<T, MODE, 1>(c);
}

template <typename T>
static cudaError_t gemm_rows_t(int mode, const rows_call &c)
{
    switch (mode) {
    case HK_GEMV_PLAIN: return gemm_rows_mode<T, HK_GEMV_PLAIN>(c);
    case HK_GEMV_NORM: return gemm_rows_mode<T, HK_GEMV_NORM>(c);
    case HK_GEMV_NORM_GLU: return gemm_rows_mode<T, HK_GEMV_NORM_GLU>(c);
    case HK_GEMV_RESIDUAL: return gemm_rows_mode<T, HK_GEMV_RESIDUAL>(c);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" {

int hk_gemm_rows_groups(int N, int sms)
{
    /* more CTAs of one group than a wave holds (2 an SM) */
    return N > 0 && sms > 0 && rows_blocks(N, 1) > 2 * sms ? 2 : 1;
}

cudaError_t hk_gemm_rows(cudaStream_t s, hk_dtype t, int mode, void *out, hk_dtype ot, const void *x, float *res,
                         const void *nw, hk_dtype nwt, float eps, const void *w, int M, int N, int K, int pdl)
{
    return hk_gemm_rows_ex(s, t, mode, out, ot, x, res, nw, nwt, eps, w, M, N, K, pdl, 1);
}

cudaError_t hk_gemm_rows_ex(cudaStream_t s, hk_dtype t, int mode, void *out, hk_dtype ot, const void *x, float *res,
                            const void *nw, hk_dtype nwt, float eps, const void *w, int M, int N, int K, int pdl,
                            int groups)
{
    const bool norm = mode == HK_GEMV_NORM || mode == HK_GEMV_NORM_GLU, residual = mode == HK_GEMV_RESIDUAL;
    if (M < 0 || N < 0 || M > HK_GEMM_ROWS_MAX || mode < HK_GEMV_PLAIN || mode > HK_GEMV_RESIDUAL || groups < 1 ||
        groups > HK_GEMM_ROWS_GROUPS_MAX)
        return cudaErrorInvalidValue;
    if (M == 0 || N == 0) return cudaSuccess;
    if (K <= 0 || K % 32 || (t != HK_F16 && t != HK_BF16) || (uintptr_t)w % 16) return cudaErrorInvalidValue;
    const bool out_ok = residual ? res != NULL : out && (ot == HK_F16 || ot == HK_BF16 || ot == HK_F32);
    const bool in_ok = norm ? res && nw && K <= HK_GEMM_ROWS_NORM_MAX_K && ((uintptr_t)res | (uintptr_t)nw) % 16 == 0 &&
                                  (nwt == HK_F16 || nwt == HK_BF16 || nwt == HK_F32)
                            : x && (uintptr_t)x % 16 == 0;
    if (!out_ok || !in_ok) return cudaErrorInvalidValue;
    const rows_call c = {s, out, ot, x, res, nw, nwt, eps, w, M, N, K, pdl, groups};
    return t == HK_BF16 ? gemm_rows_t<__nv_bfloat16>(mode, c) : gemm_rows_t<__half>(mode, c);
}

} /* extern "C" */
