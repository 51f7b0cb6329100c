/* hyocr — the per-head RMSNorm and rotate-half RoPE that the language model and the DFlash
 * draft share, in the order each model applies them: HunyuanOCR's language model rotates q and
 * k, then normalises each head (RMSNorm_HF); Qwen3, the draft's family, normalises, then rotates.
 * The caller has put the row's D cos/sin values, rounded to the compute type as the reference
 * rounds them, in shared memory; one warp per head of the row. */
#pragma once
#include "hk-common.h"

#define HK_ROPE_PAIRS_PER_LANE (HK_ROPE_MAX_DIM / 64)

template <bool NORM_FIRST>
__device__ __forceinline__ void hk_rope_norm_heads(void *qkv, int t, int row, int Hq, int Hkv, int D,
                                                   const float *cs, const float *sn, const void *qn, int qnt,
                                                   const void *kn, int knt, float eps)
{
    const int lane = threadIdx.x & 31, heads = Hq + Hkv, half = D / 2;
    for (int h = threadIdx.x >> 5; h < heads; h += blockDim.x >> 5) {
        size_t base = (size_t)row * (Hq + 2 * Hkv) * D + (size_t)h * D;
        const void *w = h < Hq ? qn : kn;
        int wt = h < Hq ? qnt : knt;
        float lo[HK_ROPE_PAIRS_PER_LANE], hi[HK_ROPE_PAIRS_PER_LANE];
        float sq = 0.0f;
#pragma unroll
        for (int k = 0; k < HK_ROPE_PAIRS_PER_LANE; k++) {
            int i = lane + 32 * k;
            lo[k] = hi[k] = 0.0f;
            if (i >= half) continue;
            float x0 = hk_ld(qkv, t, base + i), x1 = hk_ld(qkv, t, base + i + half);
            lo[k] = NORM_FIRST ? x0 : hk_round(x0 * cs[i] - x1 * sn[i], t);
            hi[k] = NORM_FIRST ? x1 : hk_round(x1 * cs[i + half] + x0 * sn[i + half], t);
            sq += lo[k] * lo[k] + hi[k] * hi[k];
        }
        float rstd = rsqrtf(hk_warp_sum(sq) / D + eps);
#pragma unroll
        for (int k = 0; k < HK_ROPE_PAIRS_PER_LANE; k++) {
            int i = lane + 32 * k;
            if (i >= half) continue;
            float y0 = hk_round(hk_round(lo[k] * rstd, t) * hk_ld(w, wt, i), t);
            float y1 = hk_round(hk_round(hi[k] * rstd, t) * hk_ld(w, wt, i + half), t);
            hk_st(qkv, t, base + i, NORM_FIRST ? y0 * cs[i] - y1 * sn[i] : y0);
            hk_st(qkv, t, base + i + half, NORM_FIRST ? y1 * cs[i + half] + y0 * sn[i + half] : y1);
        }
    }
}
