/* hyocr — the DFlash draft's kernels (issue 20): per-head norm then RoPE (Qwen3's order), and
 * attention of a block over a contiguous context cache with no mask. The draft runs 16 rows a
 * round over a context of at most a page's tokens, so these are plain: one CTA per row for the
 * norm, one CTA per (row, query head) for the attention with an online softmax over chunks of
 * keys in shared memory. */
#include "hk-common.h"
#include <math.h>

#define APPEND_THREADS 128
#define APPEND_CHUNK   1024   /* keys whose scores sit in shared memory at once */

/* One CTA per row, one warp per head: the head's RMS over D, the weight, then the rotation. */
static __global__ void k_qknorm_rope(void *qkv, int t, int M, const int32_t *pos, int n_axes, int Hq, int Hkv, int D,
                                     hk_rope rope, const void *qn, int qnt, const void *kn, int knt, float eps)
{
    __shared__ float cs[HK_ROPE_MAX_DIM], sn[HK_ROPE_MAX_DIM];
    const int row = blockIdx.x, half = D / 2;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        int a = n_axes > 1 ? rope.axis[d] : 0;
        float s, c;
        sincosf(rope.inv_freq[d < half ? d : d - half] * (float)pos[(size_t)a * M + row], &s, &c);
        cs[d] = hk_round(c, t);
        sn[d] = hk_round(s, t);
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, heads = Hq + Hkv;
    for (int h = threadIdx.x >> 5; h < heads; h += blockDim.x >> 5) {
        size_t base = (size_t)row * (Hq + 2 * Hkv) * D + (size_t)h * D;
        const void *w = h < Hq ? qn : kn;
        int wt = h < Hq ? qnt : knt;
        float lo[HK_ROPE_MAX_DIM / 64], hi[HK_ROPE_MAX_DIM / 64];
        float sq = 0.0f;
#pragma unroll
        for (int k = 0; k < HK_ROPE_MAX_DIM / 64; k++) {
            int i = lane + 32 * k;
            lo[k] = hi[k] = 0.0f;
            if (i >= half) continue;
            lo[k] = hk_ld(qkv, t, base + i);
            hi[k] = hk_ld(qkv, t, base + i + half);
            sq += lo[k] * lo[k] + hi[k] * hi[k];
        }
        float rstd = rsqrtf(hk_warp_sum(sq) / D + eps);
#pragma unroll
        for (int k = 0; k < HK_ROPE_MAX_DIM / 64; k++) {
            int i = lane + 32 * k;
            if (i >= half) continue;
            float x0 = hk_round(hk_round(lo[k] * rstd, t) * hk_ld(w, wt, i), t);
            float x1 = hk_round(hk_round(hi[k] * rstd, t) * hk_ld(w, wt, i + half), t);
            hk_st(qkv, t, base + i, x0 * cs[i] - x1 * sn[i]);
            hk_st(qkv, t, base + i + half, x1 * cs[i + half] + x0 * sn[i + half]);
        }
    }
}

/* k | v of row r (after Hq query heads) → cache rows n_past + r. */
static __global__ void k_kv_append(const void *qkv, int t, void *kc, void *vc, int ct, int n_past, int M, int Hq,
                                   int Hkv, int D)
{
    size_t W = (size_t)Hkv * D, n = (size_t)M * W;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / W, c = i % W, src = r * (Hq + 2 * Hkv) * D + (size_t)Hq * D + c;
        size_t dst = ((size_t)n_past + r) * W + c;
        hk_st(kc, ct, dst, hk_ld(qkv, t, src));
        hk_st(vc, ct, dst, hk_ld(qkv, t, src + W));
    }
}

/* One CTA per (row, query head): scores of a chunk of keys into shared memory, the chunk's
 * maximum and sum folded into the running ones, then each thread's dims of the weighted values. */
static __global__ void k_attention_append(void *out, int t, const void *qkv, const void *kc, const void *vc, int ct,
                                          int n_keys, int Hq, int Hkv, int D, float scale)
{
    __shared__ float q[HK_ROPE_MAX_DIM], s[APPEND_CHUNK], red[32];
    const int row = blockIdx.x / Hq, h = blockIdx.x % Hq, g = h / (Hq / Hkv);
    const size_t W = (size_t)Hkv * D, koff = (size_t)g * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x)
        q[d] = hk_ld(qkv, t, (size_t)row * (Hq + 2 * Hkv) * D + (size_t)h * D + d);
    __syncthreads();
    float m = -INFINITY, l = 0.0f, acc[HK_ROPE_MAX_DIM / APPEND_THREADS] = { 0.0f };
    for (int j0 = 0; j0 < n_keys; j0 += APPEND_CHUNK) {
        int nb = min(APPEND_CHUNK, n_keys - j0);
        float mb = -INFINITY;
        for (int j = threadIdx.x; j < nb; j += blockDim.x) {
            size_t kr = (size_t)(j0 + j) * W + koff;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += q[d] * hk_ld(kc, ct, kr + d);
            s[j] = dot * scale;
            mb = fmaxf(mb, s[j]);
        }
        mb = hk_block_max(mb, red);
        float mn = fmaxf(m, mb), corr = expf(m - mn), sb = 0.0f;
        for (int j = threadIdx.x; j < nb; j += blockDim.x) {
            s[j] = expf(s[j] - mn);
            sb += s[j];
        }
        sb = hk_block_sum(sb, red);   /* its barriers also publish s */
        l = l * corr + sb;
        m = mn;
#pragma unroll
        for (int k = 0; k < HK_ROPE_MAX_DIM / APPEND_THREADS; k++) {
            int d = threadIdx.x + k * APPEND_THREADS;
            if (d >= D) continue;
            float a = acc[k] * corr;
            for (int j = 0; j < nb; j++) a += s[j] * hk_ld(vc, ct, (size_t)(j0 + j) * W + koff + d);
            acc[k] = a;
        }
        __syncthreads();   /* s is rewritten by the next chunk */
    }
#pragma unroll
    for (int k = 0; k < HK_ROPE_MAX_DIM / APPEND_THREADS; k++) {
        int d = threadIdx.x + k * APPEND_THREADS;
        if (d < D) hk_st(out, t, ((size_t)row * Hq + h) * D + d, l > 0.0f ? acc[k] / l : 0.0f);
    }
}

extern "C" {

cudaError_t hk_qknorm_rope(cudaStream_t s, void *qkv, hk_dtype t, int M, const int32_t *pos, int n_axes, int Hq,
                           int Hkv, int D, const hk_rope *rope, const void *qn, hk_dtype qnt, const void *kn,
                           hk_dtype knt, float eps)
{
    if (M <= 0 || Hq + Hkv <= 0) return cudaSuccess;
    if (D > HK_ROPE_MAX_DIM || D % 2) return cudaErrorInvalidValue;
    k_qknorm_rope<<<(unsigned)M, 256, 0, s>>>(qkv, (int)t, M, pos, n_axes, Hq, Hkv, D, *rope, qn, (int)qnt, kn,
                                              (int)knt, eps);
    return cudaGetLastError();
}

cudaError_t hk_attention_append(cudaStream_t s, hk_dtype t, void *out, const void *qkv, void *k_cache,
                                void *v_cache, hk_dtype ct, int n_past, int M, int Hq, int Hkv, int D, float scale)
{
    if (M <= 0) return cudaSuccess;
    if (D > HK_ROPE_MAX_DIM || Hkv <= 0 || (Hq > 0 && Hq % Hkv)) return cudaErrorInvalidValue;
    size_t n = (size_t)M * Hkv * D;
    k_kv_append<<<hk_grid_1d(n, 256), 256, 0, s>>>(qkv, (int)t, k_cache, v_cache, (int)ct, n_past, M, Hq, Hkv, D);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || Hq == 0) return e;
    k_attention_append<<<(unsigned)(M * Hq), APPEND_THREADS, 0, s>>>(out, (int)t, qkv, k_cache, v_cache, (int)ct,
                                                                    n_past + M, Hq, Hkv, D, scale);
    return cudaGetLastError();
}

} /* extern "C" */
