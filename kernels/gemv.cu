/* hyocr — matrix-vector products for decode steps: out[M, N] = x[M, K] · w[N, K]ᵀ
 * for a few rows (M ≤ HK_GEMV_MAX_ROWS), fp32 accumulation. One warp per output
 * column n streams w's row n once in 16-byte loads and serves all M rows, so the
 * weights are read once at close to memory speed. (A variant that computed the
 * swiglu activation on the fly for the down projection was slower: every warp
 * recomputed the whole activation.) */
#include "hk-common.h"
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

template <typename T, int MR>
__global__ void __launch_bounds__(GEMV_WARPS * 32) k_gemv(void *out, int ot, const T *x, const T *w, int N, int K)
{
    const int lane = threadIdx.x & 31;
    const int n = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5);
    if (n >= N) return;   /* whole warp */
    const T *wr = w + (size_t)n * K;
    float acc[MR];
#pragma unroll
    for (int m = 0; m < MR; m++) acc[m] = 0.0f;
#pragma unroll 4
    for (int k = lane * 8; k < K; k += 256) {
        float wv[8];
        unpack<T>(wv, __ldcs((const int4 *)(wr + k)));   /* streamed: read once */
#pragma unroll
        for (int m = 0; m < MR; m++) {
            float xv[8];
            unpack<T>(xv, __ldg((const int4 *)(x + (size_t)m * K + k)));
#pragma unroll
            for (int i = 0; i < 8; i++) acc[m] = fmaf(wv[i], xv[i], acc[m]);
        }
    }
#pragma unroll
    for (int m = 0; m < MR; m++) {
        float v = hk_warp_sum(acc[m]);
        if (lane == 0) hk_st(out, ot, (size_t)m * N + n, v);
    }
}

template <typename T>
static cudaError_t gemv_t(cudaStream_t s, void *out, hk_dtype ot, const void *x, const void *w, int M, int N, int K)
{
    dim3 grid((unsigned)((N + GEMV_WARPS - 1) / GEMV_WARPS)), block(GEMV_WARPS * 32);
    const T *xp = (const T *)x, *wp = (const T *)w;
    switch (M) {
    case 1: k_gemv<T, 1><<<grid, block, 0, s>>>(out, (int)ot, xp, wp, N, K); break;
    case 2: k_gemv<T, 2><<<grid, block, 0, s>>>(out, (int)ot, xp, wp, N, K); break;
    case 3: k_gemv<T, 3><<<grid, block, 0, s>>>(out, (int)ot, xp, wp, N, K); break;
    case 4: k_gemv<T, 4><<<grid, block, 0, s>>>(out, (int)ot, xp, wp, N, K); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" {

cudaError_t hk_gemv(cudaStream_t s, hk_dtype t, void *out, hk_dtype ot, const void *x, const void *w, int M, int N,
                    int K)
{
    if (M <= 0 || N <= 0) return cudaSuccess;
    if (M > HK_GEMV_MAX_ROWS || K <= 0 || K % 8 || (t != HK_F16 && t != HK_BF16)) return cudaErrorInvalidValue;
    return t == HK_BF16 ? gemv_t<__nv_bfloat16>(s, out, ot, x, w, M, N, K) : gemv_t<__half>(s, out, ot, x, w, M, N, K);
}

} /* extern "C" */
