/* hyocr — device helpers of the tensor-core attention kernels (attention-prefill.cu,
 * attention-vision.cu; included by nvcc only): PTX wrappers for mma.sync, ldmatrix
 * and cp.async, and the online softmax and output store of fragment rows. */
#pragma once
#include "hk-common.h"

/* ---- small PTX wrappers (arch-guarded; sm_75 is the oldest target) ---- */

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

/* ---- one warp's 16 query rows in mma C fragments ----
 * Lane (g = lane / 4, tig = lane % 4) holds rows g (half h = 0) and g + 8 (h = 1):
 * of a key tile's scores, keys nt·8 + 2·tig + e of its NK / 8 n8 tiles; of the
 * output, dims dt·8 + 2·tig + e of its ND / 8 tiles. The four lanes of a quad
 * share a row. */

/* S = Q·Kᵀ of MW row blocks × NK keys over KS k16 steps (16·KS dims), K's rows DS
 * elements apart in shared memory; every K fragment loaded feeds the MW blocks. */
template <typename T, int MW, int NK, int KS, int DS>
__device__ __forceinline__ void hk_qk(float (*sc)[NK / 8][4], const uint32_t (*qf)[KS][4], const T *sK, int lane)
{
#pragma unroll
    for (int w = 0; w < MW; w++)
#pragma unroll
        for (int nt = 0; nt < NK / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[w][nt][e] = 0.0f;
    int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
#pragma unroll
        for (int p = 0; p < NK / 16; p++) {
            uint32_t b[4];
            ldsm_x4(b, sK + (p * 16 + (lane & 7) + (mi >> 1) * 8) * DS + kk * 16 + (mi & 1) * 8);
#pragma unroll
            for (int w = 0; w < MW; w++) {
                mma16816<T>(sc[w][2 * p], qf[w][kk], b);
                mma16816<T>(sc[w][2 * p + 1], qf[w][kk], b + 2);
            }
        }
    }
}

/* What pack2 lost: (a, b) minus the pair packed in hi, packed again. */
template <typename T> __device__ __forceinline__ uint32_t pack2_rest(float a, float b, uint32_t hi);
template <> __device__ __forceinline__ uint32_t pack2_rest<__half>(float a, float b, uint32_t hi)
{
    float2 f = __half22float2(*(__half2 *)&hi);
    return pack2<__half>(a - f.x, b - f.y);
}
template <> __device__ __forceinline__ uint32_t pack2_rest<__nv_bfloat16>(float a, float b, uint32_t hi)
{
    float2 f = __bfloat1622float2(*(__nv_bfloat162 *)&hi);
    return pack2<__nv_bfloat16>(a - f.x, b - f.y);
}

/* O += P·V of MW row blocks, ND output dims, NK keys, V's rows DS elements apart.
 * P comes straight from the score registers (the C layout of two adjacent n8 tiles
 * is the A layout of one k16 step); every V fragment loaded feeds the MW blocks.
 * EXACT: P as the sum of two products, its rounding to T and what that rounding lost,
 * so the weights keep ~16 (fp16: 22) bits as fp32 arithmetic nearly would: where the
 * result must agree with a kernel that weighs the values in fp32 (the speculative
 * verify against plain decoding) and the kernel is bound by memory, not by the MMAs. */
template <typename T, int MW, int NK, int ND, int DS, bool EXACT = false>
__device__ __forceinline__ void hk_pv(float (*o)[ND / 8][4], float (*sc)[NK / 8][4], const T *sV, int lane)
{
    int mi = lane >> 3;
#pragma unroll
    for (int kk = 0; kk < NK / 16; kk++) {
        uint32_t pa[MW][4], pr[EXACT ? MW : 1][4];
#pragma unroll
        for (int w = 0; w < MW; w++) {
            pa[w][0] = pack2<T>(sc[w][2 * kk][0], sc[w][2 * kk][1]);
            pa[w][1] = pack2<T>(sc[w][2 * kk][2], sc[w][2 * kk][3]);
            pa[w][2] = pack2<T>(sc[w][2 * kk + 1][0], sc[w][2 * kk + 1][1]);
            pa[w][3] = pack2<T>(sc[w][2 * kk + 1][2], sc[w][2 * kk + 1][3]);
            if (EXACT) {
                pr[w][0] = pack2_rest<T>(sc[w][2 * kk][0], sc[w][2 * kk][1], pa[w][0]);
                pr[w][1] = pack2_rest<T>(sc[w][2 * kk][2], sc[w][2 * kk][3], pa[w][1]);
                pr[w][2] = pack2_rest<T>(sc[w][2 * kk + 1][0], sc[w][2 * kk + 1][1], pa[w][2]);
                pr[w][3] = pack2_rest<T>(sc[w][2 * kk + 1][2], sc[w][2 * kk + 1][3], pa[w][3]);
            }
        }
        const T *vk = sV + (kk * 16 + (lane & 7) + (mi & 1) * 8) * DS;
#pragma unroll
        for (int q = 0; q < ND / 16; q++) {
            uint32_t b[4];
            ldsm_x4_t(b, vk + q * 16 + (mi >> 1) * 8);
#pragma unroll
            for (int w = 0; w < MW; w++) {
                mma16816<T>(o[w][2 * q], pa[w], b);
                mma16816<T>(o[w][2 * q + 1], pa[w], b + 2);
                if (EXACT) {
                    mma16816<T>(o[w][2 * q], pr[w], b);
                    mma16816<T>(o[w][2 * q + 1], pr[w], b + 2);
                }
            }
        }
        if (ND % 16) {
            uint32_t b[2];
            ldsm_x2_t(b, vk + (ND / 16) * 16);
#pragma unroll
            for (int w = 0; w < MW; w++) {
                mma16816<T>(o[w][ND / 8 - 1], pa[w], b);
                if (EXACT) mma16816<T>(o[w][ND / 8 - 1], pr[w], b);
            }
        }
    }
}

/* The online-softmax update for one tile of NK keys: each score becomes
 * score(raw, h, key in the tile) (the kernel's mask and scale), the row max m
 * rises to the tile's, l and o are rescaled by corr(old m, new m), and the scores
 * become the weights prob(score, new m) that the P·V product reads. */
template <int NK, int ND, typename Score, typename Corr, typename Prob>
__device__ __forceinline__ void hk_softmax_tile(float (*sc)[4], float (*o)[4], float *m, float *l, int tig,
                                                Score score, Corr corr_of, Prob prob)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float mx = m[h];
#pragma unroll
        for (int nt = 0; nt < NK / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float v = score(sc[nt][2 * h + e], h, nt * 8 + 2 * tig + e);
                sc[nt][2 * h + e] = v;
                mx = fmaxf(mx, v);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float corr = corr_of(m[h], mx);
        m[h] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < NK / 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float p = prob(sc[nt][2 * h + e], mx);
                sc[nt][2 * h + e] = p;
                sum += p;
            }
        l[h] = l[h] * corr + sum;
#pragma unroll
        for (int dt = 0; dt < ND / 8; dt++) {
            o[dt][2 * h] *= corr;
            o[dt][2 * h + 1] *= corr;
        }
    }
}

/* The whole row's sum of a per-lane partial (over its quad). */
__device__ __forceinline__ float hk_quad_sum(float s)
{
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    return s;
}

/* Half h of the output fragments times inv, stored to the row at dst. */
template <typename T, int ND>
__device__ __forceinline__ void hk_store_row(T *dst, float (*o)[4], int h, float inv, int tig)
{
    typedef typename vec2<T>::type T2;
    T2 *d = (T2 *)(dst + 2 * tig);
#pragma unroll
    for (int dt = 0; dt < ND / 8; dt++) {
        uint32_t v = pack2<T>(o[dt][2 * h] * inv, o[dt][2 * h + 1] * inv);
        d[dt * 4] = *(T2 *)&v;
    }
}

/* Bidirectional attention over packed qkv rows with the 64-row template, head
 * dim 128 (attention-prefill.cu); hk_attention_full sends the vision tower's 72 to
 * its own kernel. */
cudaError_t hk_flash_full(cudaStream_t s, hk_dtype t, void *out, const void *qkv, int n, int H, int D, float scale);
