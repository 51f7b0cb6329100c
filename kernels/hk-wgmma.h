/* hyocr — Hopper warpgroup MMA (wgmma) wrappers, mbarriers and tensor copies for the
 * attention kernels (attention-vision.cu, attention-prefill.cu; included by nvcc only). wgmma exists only in code built
 * for sm_90a (meson.build builds arch 90 as 90a); everywhere else these compile
 * to nothing and the launcher never picks the kernels that use them.
 *
 * Shared-memory operands are read through descriptors of the unswizzled
 * ("interleaved") canonical layout: 8×8 core matrices of 128 contiguous bytes,
 * eight 16-byte rows each; LBO is the byte step between core matrices along K,
 * SBO along M/N. The A operand comes from registers in the mma.sync m16n8k16 A
 * layout (each warp of the group owns 16 rows); the accumulator of an n-wide
 * product is n/8 blocks in the mma.sync C layout. */
#pragma once
#include "hk-flash.h"
#include <cuda.h>
#include <cudaTypedefs.h>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HK_HAVE_WGMMA 1
#else
#define HK_HAVE_WGMMA 0
#endif

/* A descriptor: start address, LBO and SBO in 16-byte units, no swizzle. */
__device__ __forceinline__ uint64_t wg_desc(const void *p, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((smem_addr(p) & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

/* Orders register writes before the wgmma that reads or accumulates into them. */
__device__ __forceinline__ void wg_fence(void)
{
#if HK_HAVE_WGMMA
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wg_commit(void)
{
#if HK_HAVE_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int N> __device__ __forceinline__ void wg_wait(void)
{
#if HK_HAVE_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/* Makes this thread's generic-proxy shared stores (cp.async included) visible to
 * the async proxy that wgmma reads shared memory through. */
__device__ __forceinline__ void wg_fence_smem(void)
{
#if HK_HAVE_WGMMA
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/* Keeps the compiler from moving accesses to an accumulator across the
 * asynchronous product that owns it. */
template <int NB> __device__ __forceinline__ void wg_pin(float (*d)[4])
{
#pragma unroll
    for (int i = 0; i < NB; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+f"(d[i][e])::"memory");
}

/* d (64 × N, f32) = a (64 × 16, registers) · B (16 × N, shared) + (acc ? d : 0).
 * n64/n128: B K-major (the key tile, dims contiguous); n72t: B MN-major (the
 * value tile, dims contiguous, keys along K). One asm a shape (WG_MMA_*), its element type
 * (f16, bf16) spliced into the instruction's name. */
template <typename T> __device__ __forceinline__ void wg_mma_n64(float (*d)[4], const uint32_t *a, uint64_t desc, int acc);
template <typename T> __device__ __forceinline__ void wg_mma_n128(float (*d)[4], const uint32_t *a, uint64_t desc, int acc);
template <typename T> __device__ __forceinline__ void wg_mma_n72t(float (*d)[4], const uint32_t *a, uint64_t desc, int acc);

/* The operands: d[i] is 8 columns' 4 accumulators; then a's 4 registers, the descriptor and acc */
#define WG_D1(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define WG_D8(i) WG_D1(i), WG_D1(i + 1), WG_D1(i + 2), WG_D1(i + 3), WG_D1(i + 4), WG_D1(i + 5), WG_D1(i + 6), WG_D1(i + 7)
#define WG_IN "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(acc)
#define WG_R32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WG_R64 WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

#define WG_MMA_N64(ty) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." ty "." ty " {" WG_R32 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n" \
                 : WG_D8(0) : WG_IN)
#define WG_MMA_N128(ty) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." ty "." ty " {" WG_R64 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n" \
                 : WG_D8(0), WG_D8(8) : WG_IN)
#define WG_MMA_N72T(ty) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %41, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n72k16.f32." ty "." ty " {" WG_R32 ", %32, %33, %34, %35}, {%36, %37, %38, %39}, %40, p, 1, 1, 1;\n}\n" \
                 : WG_D8(0), WG_D1(8) : WG_IN)

/* d (64 × N) += a · B with B MN-major: n64t (the value tile's dims 0..63), n8t (dims 64..71);
 * ss_n64: A from shared memory too, both K-major (q·kᵀ with Q staged; k_vis_tma). */
template <typename T> __device__ __forceinline__ void wg_mma_n64t(float (*d)[4], const uint32_t *a, uint64_t desc, int acc);
template <typename T> __device__ __forceinline__ void wg_mma_n8t(float (*d)[4], const uint32_t *a, uint64_t desc, int acc);
template <typename T> __device__ __forceinline__ void wg_mma_ss_n64(float (*d)[4], uint64_t da, uint64_t db, int acc);
#define WG_MMA_N64T(ty) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." ty "." ty " {" WG_R32 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n" \
                 : WG_D8(0) : WG_IN)
#define WG_MMA_N8T(ty) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32." ty "." ty " {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 1;\n}\n" \
                 : WG_D1(0) : WG_IN)
#define WG_MMA_SS_N64(ty) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." ty "." ty " {" WG_R32 "}, %32, %33, p, 1, 1, 0, 0;\n}\n" \
                 : WG_D8(0) : "l"(da), "l"(db), "r"(acc))
#if HK_HAVE_WGMMA
#define WG_DEFINE(fn, T, ty, body) \
    template <> __device__ __forceinline__ void fn<T>(float (*d)[4], const uint32_t *a, uint64_t desc, int acc) { body(ty); }
#else
#define WG_DEFINE(fn, T, ty, body) \
    template <> __device__ __forceinline__ void fn<T>(float (*)[4], const uint32_t *, uint64_t, int) {}
#endif
WG_DEFINE(wg_mma_n64, __half, "f16", WG_MMA_N64)
WG_DEFINE(wg_mma_n64, __nv_bfloat16, "bf16", WG_MMA_N64)
WG_DEFINE(wg_mma_n128, __half, "f16", WG_MMA_N128)
WG_DEFINE(wg_mma_n128, __nv_bfloat16, "bf16", WG_MMA_N128)
WG_DEFINE(wg_mma_n72t, __half, "f16", WG_MMA_N72T)
WG_DEFINE(wg_mma_n72t, __nv_bfloat16, "bf16", WG_MMA_N72T)
WG_DEFINE(wg_mma_n64t, __half, "f16", WG_MMA_N64T)
WG_DEFINE(wg_mma_n64t, __nv_bfloat16, "bf16", WG_MMA_N64T)
WG_DEFINE(wg_mma_n8t, __half, "f16", WG_MMA_N8T)
WG_DEFINE(wg_mma_n8t, __nv_bfloat16, "bf16", WG_MMA_N8T)
#undef WG_DEFINE
#if HK_HAVE_WGMMA
template <> __device__ __forceinline__ void wg_mma_ss_n64<__half>(float (*d)[4], uint64_t da, uint64_t db, int acc)
{
    WG_MMA_SS_N64("f16");
}
template <> __device__ __forceinline__ void wg_mma_ss_n64<__nv_bfloat16>(float (*d)[4], uint64_t da, uint64_t db, int acc)
{
    WG_MMA_SS_N64("bf16");
}
#else
template <> __device__ __forceinline__ void wg_mma_ss_n64<__half>(float (*)[4], uint64_t, uint64_t, int) {}
template <> __device__ __forceinline__ void wg_mma_ss_n64<__nv_bfloat16>(float (*)[4], uint64_t, uint64_t, int) {}
#endif
#undef WG_MMA_SS_N64
#undef WG_MMA_N8T
#undef WG_MMA_N64T
#undef WG_MMA_N72T
#undef WG_MMA_N128
#undef WG_MMA_N64
#undef WG_R64
#undef WG_R32
#undef WG_IN
#undef WG_D8
#undef WG_D1

/* ---- what the TMA kernel (k_vis_tma) adds: mbarriers, tensor copies and named barriers (its
 * descriptors of the 128-byte swizzle are built in attention-vision.cu, tm_desc) ---- */

#if HK_HAVE_WGMMA
__device__ __forceinline__ void mb_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* One arrival that also announces the bytes the tensor copies will complete. */
__device__ __forceinline__ void mb_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mb_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* Until the phase of the given parity has completed. */
__device__ __forceinline__ void mb_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred p;\nWAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* A box of a 3-D tensor map into shared memory, completing on bar. */
__device__ __forceinline__ void tma_load3(uint32_t dst, const void *map, uint32_t bar, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, "
                 "%5}], [%2];\n" ::"r"(dst),
                 "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

__device__ __forceinline__ void nb_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void nb_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#endif

/* ---- shared by the TMA kernels (k_vis_tma, k_prefill_tma) ---- */

template <int N> __device__ __forceinline__ void wg_pin_u(uint32_t (*a)[4])
{
#pragma unroll
    for (int i = 0; i < N; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+r"(a[i][e])::"memory");
}

/* The weights as P·V's A fragments: two adjacent n8 score blocks are one k16 step. */
template <typename T, int BN> __device__ __forceinline__ void wg_pack(uint32_t (*pa)[4], float (*sc)[4])
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
        pa[kk][0] = pack2<T>(sc[2 * kk][0], sc[2 * kk][1]);
        pa[kk][1] = pack2<T>(sc[2 * kk][2], sc[2 * kk][3]);
        pa[kk][2] = pack2<T>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
        pa[kk][3] = pack2<T>(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
    }
}

/* A descriptor's two words (wg_desc's fields): lo = start (16-byte units) | LBO << 16, hi = SBO |
 * layout << 30. The words of stage 0 are worked out once; in the loop a product's descriptor is
 * lo plus the stage's and the step's offsets, one add (session 13 counted the descriptors
 * rebuilt every tile at ~60 of k_vis_wg's ~370 instructions a warp). */
__device__ __forceinline__ uint64_t tm_desc(uint32_t lo, uint32_t hi)
{
    uint64_t d;
    asm("mov.b64 %0, {%1, %2};\n" : "=l"(d) : "r"(lo), "r"(hi));
    return d;
}
/* The 128-byte swizzle (layout 1, as TMA's SWIZZLE_128B writes: 8-row atoms of 128-byte rows,
 * 1024-byte aligned, a row's 16-byte chunks XORed with its index): SBO is an atom; LBO is not
 * read for K-major operands nor, at 64 dims, for V's MN-major one (set to 1, as CUTLASS does). */
#define TM_SW_HI ((1024u >> 4) | (1u << 30))
__device__ __forceinline__ uint32_t tm_lo_sw(uint32_t saddr) { return (saddr >> 4) | (1u << 16); }
__device__ __forceinline__ uint32_t tm_lo_u(uint32_t saddr, uint32_t lbo) { return (saddr >> 4) | ((lbo >> 4) << 16); }

/* cuTensorMapEncodeTiled from the driver (the runtime hands out its entry point; the library
 * links no libcuda). NULL where the driver has none. */
static inline PFN_cuTensorMapEncodeTiled_v12000 tm_encoder(void)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050 /* the by-version lookup came with 12.5; meson takes 12.0 and later */
        cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
#else
        cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q);
#endif
        if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) p = NULL;
        return (PFN_cuTensorMapEncodeTiled_v12000)p;
    }();
    return fn;
}

/* A 3-D tiled tensor map of 16-bit elements: dims g[0] (contiguous) × g[1] × g[2], byte strides
 * st[0] (dim 1) and st[1] (dim 2), boxes of b[0] × b[1] × b[2]; swz: the 128-byte swizzle. */
static inline cudaError_t tm_map3(CUtensorMap *m, bool bf16, const void *base, const cuuint64_t g[3], const cuuint64_t st[2],
                           const cuuint32_t b[3], bool swz)
{
    PFN_cuTensorMapEncodeTiled_v12000 enc = tm_encoder();
    if (!enc) return cudaErrorNotSupported;
    const cuuint32_t es[3] = { 1, 1, 1 };
    CUresult r = enc(m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, (void *)base, g,
                     st, b, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     swz ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
