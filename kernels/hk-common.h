/* hyocr — device helpers shared by the .cu files (included by nvcc only). */
#pragma once
#include "hyocr-kernels.h"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define LOG2E 1.4426950408889634f

template <typename T> struct vec2;
template <> struct vec2<__half> { typedef __half2 type; };
template <> struct vec2<__nv_bfloat16> { typedef __nv_bfloat162 type; };

/* Run-time typed element access: the type is uniform across a launch, so the
 * branch costs a few instructions and no divergence. */
__device__ __forceinline__ float hk_ld(const void *p, int t, size_t i)
{
    if (t == HK_F32) return ((const float *)p)[i];
    if (t == HK_F16) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

__device__ __forceinline__ void hk_st(void *p, int t, size_t i, float v)
{
    if (t == HK_F32) ((float *)p)[i] = v;
    else if (t == HK_F16) ((__half *)p)[i] = __float2half_rn(v);
    else ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}

/* v as it would read back after a store of type t. */
__device__ __forceinline__ float hk_round(float v, int t)
{
    if (t == HK_F16) return __half2float(__float2half_rn(v));
    if (t == HK_BF16) return __bfloat162float(__float2bfloat16_rn(v));
    return v;
}

__device__ __forceinline__ float hk_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float hk_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block; sh needs 32 floats. Every thread gets the result. */
__device__ __forceinline__ float hk_block_sum(float v, float *sh)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = hk_warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : 0.0f;
    return hk_warp_sum(r);
}

__device__ __forceinline__ float hk_block_max(float v, float *sh)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = hk_warp_max(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : -INFINITY;
    return hk_warp_max(r);
}

/* Programmatic dependent launch (sm_90+): a kernel launched with it may start
 * while the kernel before it finishes; it must wait before it reads anything that
 * kernel (or any earlier one) wrote, and lets the next kernel start early. Both
 * are no-ops for a kernel launched the ordinary way. */
__device__ __forceinline__ void hk_griddep_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void hk_griddep_launch_next()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

static inline unsigned hk_grid_1d(size_t n, int threads)
{
    size_t b = (n + threads - 1) / threads;
    if (b > 65536u * 4) b = 65536u * 4;   /* grid-stride loops cover the rest */
    return b ? (unsigned)b : 1u;
}
