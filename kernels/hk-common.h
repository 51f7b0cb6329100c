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

/* Elements 4j..4j+3 of a buffer of run-time type t, in one 16-byte (fp32) or
 * 8-byte (fp16/bf16) access; the launchers check the alignment. */
union hk_pack4 {
    uint2          u;
    __half2        h[2];
    __nv_bfloat162 b[2];
};

__device__ __forceinline__ float4 hk_ld4(const void *p, int t, size_t j)
{
    if (t == HK_F32) return ((const float4 *)p)[j];
    hk_pack4 v;
    v.u = ((const uint2 *)p)[j];
    float2 a = t == HK_F16 ? __half22float2(v.h[0]) : __bfloat1622float2(v.b[0]);
    float2 b = t == HK_F16 ? __half22float2(v.h[1]) : __bfloat1622float2(v.b[1]);
    return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ void hk_st4(void *p, int t, size_t j, float4 f)
{
    if (t == HK_F32) {
        ((float4 *)p)[j] = f;
        return;
    }
    hk_pack4 v;
    if (t == HK_F16) {
        v.h[0] = __floats2half2_rn(f.x, f.y);
        v.h[1] = __floats2half2_rn(f.z, f.w);
    } else {
        v.b[0] = __floats2bfloat162_rn(f.x, f.y);
        v.b[1] = __floats2bfloat162_rn(f.z, f.w);
    }
    ((uint2 *)p)[j] = v.u;
}

/* silu(g)·u as the swiglu kernel and the fused products store it: silu rounded to the
 * output type ot before the product, as the reference does it in two ops. */
__device__ __forceinline__ float hk_swiglu1(float g, float u, int ot)
{
    return hk_round(g / (1.0f + expf(-g)), ot) * u;
}

/* The sum of squares of 4 values as the one-warp RMS norm adds them, written without
 * FMA contraction: a kernel that recomputes a norm's statistics (the fused products of
 * several rows) then gets the same bits whatever the compiler does around it. */
__device__ __forceinline__ float hk_sq4(float4 r)
{
    return __fadd_rn(__fadd_rn(__fmul_rn(r.x, r.x), __fmul_rn(r.y, r.y)),
                     __fadd_rn(__fmul_rn(r.z, r.z), __fmul_rn(r.w, r.w)));
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

/* A reduction over the block by warp_op (hk_warp_sum, hk_warp_max) with identity
 * id; sh needs 32 floats. Every thread gets the result. */
template <float (*warp_op)(float)>
__device__ __forceinline__ float hk_block_reduce(float v, float *sh, float id)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_op(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : id;
    return warp_op(r);
}

__device__ __forceinline__ float hk_block_sum(float v, float *sh)
{
    return hk_block_reduce<hk_warp_sum>(v, sh, 0.0f);
}

__device__ __forceinline__ float hk_block_max(float v, float *sh)
{
    return hk_block_reduce<hk_warp_max>(v, sh, -INFINITY);
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

/* The arguments every tiled paged-attention kernel (prefill, decode) takes from
 * hk_paged_args alike: q is the qkv rows, k and v the caches. */
template <typename A> static inline void hk_paged_fill(A &a, const hk_paged_args *p)
{
    a.q = p->qkv;
    a.k = p->k_cache;
    a.v = p->v_cache;
    a.out = p->out;
    a.q_stride = (p->Hq + 2 * p->Hkv) * p->D;
    a.G = p->Hq / p->Hkv;
    a.Hkv = p->Hkv;
    a.block_size = p->block_size;
    a.scale_log2 = p->scale * LOG2E;
    a.seqs = p->seqs;
    a.bt = p->block_tables;
}

static inline unsigned hk_grid_1d(size_t n, int threads)
{
    size_t b = (n + threads - 1) / threads;
    if (b > 65536u * 4) b = 65536u * 4;   /* grid-stride loops cover the rest */
    return b ? (unsigned)b : 1u;
}
