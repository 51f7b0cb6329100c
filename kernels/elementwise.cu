/* hyocr — memory-bound kernels: conversions, norms with the fused residual add,
 * activations, rotary + QK norm, position-table interpolation, gathers, the
 * finite check. */
#include "hk-common.h"
#include "hk-rope.h"
#include <math.h>

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

static __global__ void k_probe(int *unused) {}

/* Whether p can take hk_ld4/hk_st4 accesses for type t. */
static inline bool hk_vec4_ok(const void *p, hk_dtype t)
{
    return !p || (uintptr_t)p % (t == HK_F32 ? 16u : 8u) == 0;
}

static __global__ void k_convert(void *dst, int dt, const void *src, int st, size_t n)
{
    GRID_STRIDE(i, n) hk_st(dst, dt, i, hk_ld(src, st, i));
}

static __global__ void k_add(void *x, int xt, const void *y, int yt, size_t n)
{
    GRID_STRIDE(i, n) hk_st(x, xt, i, hk_ld(x, xt, i) + hk_ld(y, yt, i));
}

/* Exact erf form: the tanh approximation visibly changes late ViT layers. */
static __global__ void k_gelu(void *x, int xt, size_t n)
{
    GRID_STRIDE(i, n) {
        float v = hk_ld(x, xt, i);
        hk_st(x, xt, i, 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
    }
}

__device__ __forceinline__ float hk_gelu_erf(float v)
{
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

static __global__ void k_gelu4(void *x, int xt, size_t n4)
{
    GRID_STRIDE(j, n4) {
        float4 v = hk_ld4(x, xt, j);
        v.x = hk_gelu_erf(v.x);
        v.y = hk_gelu_erf(v.y);
        v.z = hk_gelu_erf(v.z);
        v.w = hk_gelu_erf(v.w);
        hk_st4(x, xt, j, v);
    }
}

/* Elements 8j..8j+7 of a buffer of run-time type t in one 16-byte access (two for fp32);
 * the launchers check the alignment (16 bytes) and that n is a multiple of 8. */
union hk_pack8 {
    uint4          u;
    __half2        h[4];
    __nv_bfloat162 b[4];
};

__device__ __forceinline__ void hk_ld8(const void *p, int t, size_t j, float v[8])
{
    if (t == HK_F32) {
        float4 a = ((const float4 *)p)[2 * j], b = ((const float4 *)p)[2 * j + 1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        return;
    }
    hk_pack8 q;
    q.u = ((const uint4 *)p)[j];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 f = t == HK_F16 ? __half22float2(q.h[k]) : __bfloat1622float2(q.b[k]);
        v[2 * k] = f.x;
        v[2 * k + 1] = f.y;
    }
}

__device__ __forceinline__ void hk_st8(void *p, int t, size_t j, const float v[8])
{
    if (t == HK_F32) {
        ((float4 *)p)[2 * j] = make_float4(v[0], v[1], v[2], v[3]);
        ((float4 *)p)[2 * j + 1] = make_float4(v[4], v[5], v[6], v[7]);
        return;
    }
    hk_pack8 q;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (t == HK_F16) q.h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
        else q.b[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
    }
    ((uint4 *)p)[j] = q.u;
}

/* Whether p can take hk_ld8/hk_st8 accesses. */
static inline bool hk_vec8_ok(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

/* Groups of 8 elements a thread takes in one round of the memory-bound pointwise kernels: all
 * its loads are issued before the first use, 32 bytes in flight a thread (fp16) where one 8-byte
 * access each (k_gelu4, k_swiglu4) left the H200 at 1.8–2.2 TB/s in the profile, under half its
 * bandwidth. */
#define HK_PW_UNROLL 2

static __global__ void __launch_bounds__(256) k_gelu8(void *x, int xt, size_t n8)
{
    const size_t step = (size_t)gridDim.x * blockDim.x * HK_PW_UNROLL;
    for (size_t j0 = (size_t)blockIdx.x * blockDim.x * HK_PW_UNROLL + threadIdx.x; j0 < n8; j0 += step) {
        float v[HK_PW_UNROLL][8];
#pragma unroll
        for (int u = 0; u < HK_PW_UNROLL; u++) {
            size_t j = j0 + (size_t)u * blockDim.x;
            if (j < n8) hk_ld8(x, xt, j, v[u]);
        }
#pragma unroll
        for (int u = 0; u < HK_PW_UNROLL; u++) {
            size_t j = j0 + (size_t)u * blockDim.x;
            if (j >= n8) continue;
#pragma unroll
            for (int k = 0; k < 8; k++) v[u][k] = hk_gelu_erf(v[u][k]);
            hk_st8(x, xt, j, v[u]);
        }
    }
}

static __global__ void k_swiglu(void *out, int ot, const void *gu, int gt, size_t M, size_t I)
{
    GRID_STRIDE(e, M * I) {
        size_t m = e / I, i = e - m * I;
        float g = hk_ld(gu, gt, m * 2 * I + i), u = hk_ld(gu, gt, m * 2 * I + I + i);
        hk_st(out, ot, e, hk_swiglu1(g, u, ot));
    }
}

/* Rows on the y axis, so no division per element; I4 = I / 4. */
static __global__ void k_swiglu4(void *out, int ot, const void *gu, int gt, int M, int I4)
{
    for (int m = blockIdx.y; m < M; m += gridDim.y)
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < I4; j += gridDim.x * blockDim.x) {
            size_t r = (size_t)m * 2 * I4 + j;
            float4 g = hk_ld4(gu, gt, r), u = hk_ld4(gu, gt, r + I4), o;
            o.x = hk_swiglu1(g.x, u.x, ot);
            o.y = hk_swiglu1(g.y, u.y, ot);
            o.z = hk_swiglu1(g.z, u.z, ot);
            o.w = hk_swiglu1(g.w, u.w, ot);
            hk_st4(out, ot, (size_t)m * I4 + j, o);
        }
}

/* Rows of I8 = I / 8 groups flattened into one index, a 32-bit division per 8 outputs (the
 * launcher keeps n8 under 2^31). */
static __global__ void __launch_bounds__(256) k_swiglu8(void *out, int ot, const void *gu, int gt, unsigned n8,
                                                       unsigned I8)
{
    const unsigned step = gridDim.x * blockDim.x * HK_PW_UNROLL;
    for (unsigned e0 = blockIdx.x * blockDim.x * HK_PW_UNROLL + threadIdx.x; e0 < n8; e0 += step) {
        float g[HK_PW_UNROLL][8], u[HK_PW_UNROLL][8];
#pragma unroll
        for (int r = 0; r < HK_PW_UNROLL; r++) {
            unsigned e = e0 + r * blockDim.x;
            if (e >= n8) continue;
            size_t src = (size_t)e + (size_t)(e / I8) * I8;   /* row m's gate at 2·m·I8 + (e − m·I8) */
            hk_ld8(gu, gt, src, g[r]);
            hk_ld8(gu, gt, src + I8, u[r]);
        }
#pragma unroll
        for (int r = 0; r < HK_PW_UNROLL; r++) {
            unsigned e = e0 + r * blockDim.x;
            if (e >= n8) continue;
#pragma unroll
            for (int k = 0; k < 8; k++) g[r][k] = hk_swiglu1(g[r][k], u[r][k], ot);
            hk_st8(out, ot, e, g[r]);
        }
    }
}

static __global__ void k_bias_add(void *x, int xt, const void *b, int bt, size_t M, size_t N)
{
    GRID_STRIDE(e, M * N) hk_st(x, xt, e, hk_ld(x, xt, e) + hk_ld(b, bt, e % N));
}

/* One block per row. The residual is re-read from global memory in later passes
 * (it is in L1/L2), which keeps any N working without a register cap. */
static __global__ void k_add_norm(void *out, int ot, void *res, int rt, const void *delta, int dlt,
                                  const void *w, int wt, const void *b, int bt, int N, float eps,
                                  int layernorm, int round_t)
{
    __shared__ float sh[32];
    size_t base = (size_t)blockIdx.x * N;
    float sum = 0.0f, sq = 0.0f;
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        float v = hk_ld(res, rt, base + i);
        if (delta) {
            v = hk_round(v + hk_ld(delta, dlt, base + i), rt);
            hk_st(res, rt, base + i, v);
        }
        sum += v;
        sq += v * v;
    }
    if (layernorm) {
        float mean = hk_block_sum(sum, sh) / N;
        float var = 0.0f;
        for (int i = threadIdx.x; i < N; i += blockDim.x) {
            float d = hk_ld(res, rt, base + i) - mean;
            var += d * d;
        }
        float rstd = rsqrtf(hk_block_sum(var, sh) / N + eps);
        for (int i = threadIdx.x; i < N; i += blockDim.x) {
            float v = (hk_ld(res, rt, base + i) - mean) * rstd * hk_ld(w, wt, i);
            if (b) v += hk_ld(b, bt, i);
            hk_st(out, ot, base + i, v);
        }
    } else {
        float rstd = rsqrtf(hk_block_sum(sq, sh) / N + eps);
        for (int i = threadIdx.x; i < N; i += blockDim.x) {
            float v = hk_round(hk_ld(res, rt, base + i) * rstd, round_t);
            hk_st(out, ot, base + i, v * hk_ld(w, wt, i));
        }
    }
}

/* One warp per row, the row held in registers (V float4 per lane, N ≤ 128·V,
 * N a multiple of 4): one read of the residual instead of three, and no block
 * barriers. Same formulas as k_add_norm; only the summation order differs.
 * Lane l sums the squares of float4 l, l + 32, … in that order (hk_sq4), then a
 * warp sum: hk_gemm_rows's NORM and hk_gemv1 (gemv.cu) repeat exactly these sums,
 * so a decode row normalised there and a prefill row here agree bit for bit.
 * Every load of the row (residual, delta, then the weights) is issued before the
 * first store: the compiler cannot tell res and out from the other operands, and
 * with a store between two loads it issued them one round trip at a time, which
 * held the prefill's 1024-row calls to ~0.9 TB/s of their real traffic (fp32
 * residual read and written, fp16 delta and out). */
template <int V>
static __global__ void __launch_bounds__(128)
k_add_norm_warp(void *out, int ot, void *res, int rt, const void *delta, int dlt, const void *w, int wt, const void *b,
                int bt, int M, int N, float eps, int layernorm, int round_t)
{
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= M) return;
    const int nv = N >> 2;
    const size_t base = (size_t)row * nv;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 v[V], g[V];
#pragma unroll
    for (int k = 0; k < V; k++) v[k] = lane + 32 * k < nv ? hk_ld4(res, rt, base + lane + 32 * k) : zero;
    if (delta) {
        float4 d[V];
#pragma unroll
        for (int k = 0; k < V; k++) d[k] = lane + 32 * k < nv ? hk_ld4(delta, dlt, base + lane + 32 * k) : zero;
#pragma unroll
        for (int k = 0; k < V; k++) {
            v[k].x = hk_round(v[k].x + d[k].x, rt);
            v[k].y = hk_round(v[k].y + d[k].y, rt);
            v[k].z = hk_round(v[k].z + d[k].z, rt);
            v[k].w = hk_round(v[k].w + d[k].w, rt);
        }
    }
#pragma unroll
    for (int k = 0; k < V; k++) g[k] = lane + 32 * k < nv ? hk_ld4(w, wt, lane + 32 * k) : zero;
    if (delta) {
#pragma unroll
        for (int k = 0; k < V; k++)
            if (lane + 32 * k < nv) hk_st4(res, rt, base + lane + 32 * k, v[k]);
    }
    float sum = 0.0f, sq = 0.0f;
#pragma unroll
    for (int k = 0; k < V; k++) {
        if (lane + 32 * k >= nv) continue;
        float4 r = v[k];
        sum += (r.x + r.y) + (r.z + r.w);
        sq = __fadd_rn(sq, hk_sq4(r));
    }
    if (layernorm) {
        float mean = hk_warp_sum(sum) / N, var = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (lane + 32 * k >= nv) continue;
            float a = v[k].x - mean, b1 = v[k].y - mean, c = v[k].z - mean, d = v[k].w - mean;
            var += (a * a + b1 * b1) + (c * c + d * d);
        }
        float rstd = rsqrtf(hk_warp_sum(var) / N + eps);
        float4 bb[V];
#pragma unroll
        for (int k = 0; k < V; k++) bb[k] = b && lane + 32 * k < nv ? hk_ld4(b, bt, lane + 32 * k) : zero;
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = lane + 32 * k;
            if (c >= nv) continue;
            float4 o;
            o.x = (v[k].x - mean) * rstd * g[k].x;
            o.y = (v[k].y - mean) * rstd * g[k].y;
            o.z = (v[k].z - mean) * rstd * g[k].z;
            o.w = (v[k].w - mean) * rstd * g[k].w;
            if (b) {
                o.x += bb[k].x;
                o.y += bb[k].y;
                o.z += bb[k].z;
                o.w += bb[k].w;
            }
            hk_st4(out, ot, base + c, o);
        }
    } else {
        float rstd = rsqrtf(hk_warp_sum(sq) / N + eps);
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = lane + 32 * k;
            if (c >= nv) continue;
            float4 o;
            o.x = hk_round(v[k].x * rstd, round_t) * g[k].x;
            o.y = hk_round(v[k].y * rstd, round_t) * g[k].y;
            o.z = hk_round(v[k].z * rstd, round_t) * g[k].z;
            o.w = hk_round(v[k].w * rstd, round_t) * g[k].w;
            hk_st4(out, ot, base + c, o);
        }
    }
}

/* PyTorch's source index for align_corners=False, written without FMA
 * contraction so the integer cell matches the CPU backend bit for bit. */
__device__ __forceinline__ void bilinear_src(int i, float s, int edge, int *i0, int *i1, float *l0, float *l1)
{
    float src = __fsub_rn(__fmul_rn(s, __fadd_rn((float)i, 0.5f)), 0.5f);
    if (src < 0.0f) src = 0.0f;
    int a = (int)src;
    if (a > edge - 1) a = edge - 1;
    *i0 = a;
    *i1 = a < edge - 1 ? a + 1 : a;
    *l1 = __fsub_rn(src, (float)a);
    *l0 = __fsub_rn(1.0f, *l1);
}

static __global__ void k_posemb_add(void *x, int xt, const void *table, int tt, int edge, int gw, int C,
                                    float sy, float sx)
{
    int row = blockIdx.x, y = row / gw, xx = row - y * gw;
    int y0, y1, x0, x1;
    float ly0, ly1, lx0, lx1;
    bilinear_src(y, sy, edge, &y0, &y1, &ly0, &ly1);
    bilinear_src(xx, sx, edge, &x0, &x1, &lx0, &lx1);
    size_t r00 = ((size_t)y0 * edge + x0) * C, r01 = ((size_t)y0 * edge + x1) * C;
    size_t r10 = ((size_t)y1 * edge + x0) * C, r11 = ((size_t)y1 * edge + x1) * C;
    for (int c = blockIdx.y * blockDim.x + threadIdx.x; c < C; c += gridDim.y * blockDim.x) {
        float top = __fadd_rn(__fmul_rn(lx0, hk_ld(table, tt, r00 + c)), __fmul_rn(lx1, hk_ld(table, tt, r01 + c)));
        float bot = __fadd_rn(__fmul_rn(lx0, hk_ld(table, tt, r10 + c)), __fmul_rn(lx1, hk_ld(table, tt, r11 + c)));
        float p = __fadd_rn(__fmul_rn(ly0, top), __fmul_rn(ly1, bot));
        size_t o = (size_t)row * C + c;
        hk_st(x, xt, o, hk_ld(x, xt, o) + p);
    }
}

/* out[cell, c·4 + dy·2 + dx] = x[(2i+dy)·gw + 2j+dx, c] */
static __global__ void k_merge_gather(void *out, int ot, const void *x, int xt, int gw, int C, size_t n)
{
    size_t C4 = 4 * (size_t)C;
    int Wm = gw / 2;
    GRID_STRIDE(e, n) {
        size_t cell = e / C4, k = e - cell * C4;
        int c = (int)(k >> 2), dy = (int)(k >> 1) & 1, dx = (int)k & 1;
        int i = (int)(cell / Wm), j = (int)(cell - (size_t)i * Wm);
        size_t src = ((size_t)(2 * i + dy) * gw + 2 * j + dx) * C + c;
        hk_st(out, ot, e, hk_ld(x, xt, src));
    }
}

static __global__ void k_append_newline(void *out, int ot, const void *x, int xt, const void *nl, int nt,
                                        int Wm, int C, size_t n)
{
    GRID_STRIDE(e, n) {
        size_t r = e / C;
        int c = (int)(e - r * C);
        int i = (int)(r / (Wm + 1)), j = (int)(r - (size_t)i * (Wm + 1));
        float v = j < Wm ? hk_ld(x, xt, ((size_t)i * Wm + j) * C + c) : hk_ld(nl, nt, c);
        hk_st(out, ot, e, v);
    }
}

static __global__ void k_embed(void *out, int ot, const void *table, int tt, const int32_t *ids, int C)
{
    size_t src = (size_t)ids[blockIdx.x] * C, dst = (size_t)blockIdx.x * C;
    for (int c = blockIdx.y * blockDim.x + threadIdx.x; c < C; c += gridDim.y * blockDim.x)
        hk_st(out, ot, dst + c, hk_ld(table, tt, src + c));
}

/* As k_embed, the ids in device memory and checked: an id outside the table gives a zero row. */
static __global__ void k_embed_ids(void *out, int ot, const void *table, int tt, const int32_t *ids, int C, int rows)
{
    const int id = ids[blockIdx.x];
    const bool ok = id >= 0 && id < rows;
    size_t src = ok ? (size_t)id * C : 0, dst = (size_t)blockIdx.x * C;
    for (int c = blockIdx.y * blockDim.x + threadIdx.x; c < C; c += gridDim.y * blockDim.x)
        hk_st(out, ot, dst + c, ok ? hk_ld(table, tt, src + c) : 0.0f);
}

/* Grid (rows, column blocks): one row of a 2-D copy per blockIdx.x. */
static __global__ void k_copy_rows(void *dst, int dt, size_t ds, const void *src, int st, size_t ss, int cols)
{
    const size_t r = blockIdx.x;
    for (int c = blockIdx.y * blockDim.x + threadIdx.x; c < cols; c += gridDim.y * blockDim.x)
        hk_st(dst, dt, r * ds + c, hk_ld(src, st, r * ss + c));
}

static __global__ void k_nonfinite(const void *x, int t, size_t n, int *flag)
{
    bool bad = false;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        bad |= !isfinite(hk_ld(x, t, i));
    if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1;
}

/* Rotate-half RoPE with per-dim axis and frequency, rounded to the compute
 * type, then RMSNorm_HF over the head. The reference rounds cos/sin to the
 * model dtype; so do we. One block per row: the D cos/sin values of the row
 * once into shared memory (every head shares them), then one warp per head,
 * lane l on the pairs (l, l + D/2), (l + 32, l + 32 + D/2), …: the arithmetic
 * and the order of the sums of hk_rope_norm_heads<false> (hk-rope.h), written
 * out here so that a warp loads several heads (and the norm weights) before it
 * normalises the first. One head at a time, each a round trip for its values
 * and another for the weights before its stores, held the prefill's 1024-row
 * calls to ~0.4 TB/s in the profile (which counts the positions' upload in).
 * Every row takes the same path whatever M is, so a decode row and a prefill
 * row of the same values agree bit for bit.
 * P: pairs a lane holds of a head (D ≤ 64·P); HB: heads a warp loads at once;
 * T: the type of qkv, fixed so that no access carries the three-way choice. The
 * model's D = 128 takes P = 2, HB = 3: 46 registers, five blocks an SM (with the
 * type chosen at run time 68, three; HB = 4 spilled or took 80). A row's heads may
 * be spread over gridDim.y blocks of hpc heads each (a decode step's few rows then
 * reach more SMs); a head's arithmetic is the same either way. */
template <int P, int HB, int T>
static __global__ void __launch_bounds__(256, 4)
k_rope_qknorm(void *qkv, int M, const int32_t *pos, int n_axes, int Hq, int Hkv, int D, hk_rope rope,
              const void *qn, int qnt, const void *kn, int knt, float eps, int hpc)
{
    __shared__ float cs[HK_ROPE_MAX_DIM], sn[HK_ROPE_MAX_DIM];
    constexpr int t = T;
    const int row = blockIdx.x, half = D / 2, h_end = min(Hq + Hkv, (int)(blockIdx.y + 1) * hpc);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const size_t row_base = (size_t)row * (Hq + 2 * Hkv) * D;
    /* As a programmatic dependent (bound decode steps): the next kernel (decode
     * attention) may start prefetching cached keys now, and the positions (copied
     * before the step began) are read before the wait for the qkv product. */
    hk_griddep_launch_next();
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        int a = n_axes > 1 ? rope.axis[d] : 0;
        float s, c;
        sincosf(rope.inv_freq[d < half ? d : d - half] * (float)pos[(size_t)a * M + row], &s, &c);
        cs[d] = hk_round(c, t);
        sn[d] = hk_round(s, t);
    }
    hk_griddep_wait();
    /* the lane's q-norm and k-norm weights at i and i + D/2 */
    float wq0[P], wq1[P], wk0[P], wk1[P];
#pragma unroll
    for (int k = 0; k < P; k++) {
        const int i = lane + 32 * k;
        const bool in = i < half;
        wq0[k] = in && Hq ? hk_ld(qn, qnt, i) : 0.0f;
        wq1[k] = in && Hq ? hk_ld(qn, qnt, i + half) : 0.0f;
        wk0[k] = in && Hkv ? hk_ld(kn, knt, i) : 0.0f;
        wk1[k] = in && Hkv ? hk_ld(kn, knt, i + half) : 0.0f;
    }
    bool first = true;
    for (int h0 = blockIdx.y * hpc + warp; first || h0 < h_end; h0 += HB * nw) {
        float x0[HB][P], x1[HB][P];
#pragma unroll
        for (int j = 0; j < HB; j++) {
            const int h = h0 + j * nw;
            const size_t base = row_base + (size_t)h * D;
#pragma unroll
            for (int k = 0; k < P; k++) {
                const int i = lane + 32 * k;
                x0[j][k] = x1[j][k] = 0.0f;
                if (h < h_end && i < half) {
                    x0[j][k] = hk_ld(qkv, t, base + i);
                    x1[j][k] = hk_ld(qkv, t, base + i + half);
                }
            }
        }
        /* the first heads' loads are in flight while the block meets here (every warp, once) */
        if (first) __syncthreads();
        first = false;
#pragma unroll
        for (int j = 0; j < HB; j++) {
            const int h = h0 + j * nw;
            if (h >= h_end) continue;   /* warp-uniform */
            const size_t base = row_base + (size_t)h * D;
            const bool q = h < Hq;
            float lo[P], hi[P];
            float sq = 0.0f;
#pragma unroll
            for (int k = 0; k < P; k++) {
                const int i = lane + 32 * k;
                lo[k] = hi[k] = 0.0f;
                if (i >= half) continue;
                const float a = x0[j][k], b = x1[j][k];
                lo[k] = hk_round(a * cs[i] - b * sn[i], t);
                hi[k] = hk_round(b * cs[i + half] + a * sn[i + half], t);
                sq += lo[k] * lo[k] + hi[k] * hi[k];
            }
            const float rstd = rsqrtf(hk_warp_sum(sq) / D + eps);
#pragma unroll
            for (int k = 0; k < P; k++) {
                const int i = lane + 32 * k;
                if (i >= half) continue;
                float y0 = hk_round(hk_round(lo[k] * rstd, t) * (q ? wq0[k] : wk0[k]), t);
                float y1 = hk_round(hk_round(hi[k] * rstd, t) * (q ? wq1[k] : wk1[k]), t);
                hk_st(qkv, t, base + i, y0);
                hk_st(qkv, t, base + i + half, y1);
            }
        }
    }
}

typedef void (*rope_fn)(void *, int, const int32_t *, int, int, int, int, hk_rope, const void *, int, const void *,
                        int, float, int);

template <int T> static rope_fn rope_kernel_t(int D)
{
    return D <= 128 ? k_rope_qknorm<2, 3, T> : k_rope_qknorm<HK_ROPE_PAIRS_PER_LANE, 2, T>;
}

static rope_fn rope_kernel(hk_dtype t, int D)
{
    return t == HK_F16 ? rope_kernel_t<HK_F16>(D) : t == HK_BF16 ? rope_kernel_t<HK_BF16>(D) : rope_kernel_t<HK_F32>(D);
}

extern "C" {

cudaError_t hk_kernels_probe(cudaStream_t s, int *wgmma)
{
    *wgmma = 0;
    k_probe<<<1, 1, 0, s>>>(NULL);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    return hk_vision_probe(s, wgmma);
}

cudaError_t hk_convert(cudaStream_t s, void *dst, hk_dtype dt, const void *src, hk_dtype st, size_t n)
{
    if (!n) return cudaSuccess;
    k_convert<<<hk_grid_1d(n, 256), 256, 0, s>>>(dst, dt, src, st, n);
    return cudaGetLastError();
}

cudaError_t hk_add(cudaStream_t s, void *x, hk_dtype xt, const void *y, hk_dtype yt, size_t n)
{
    if (!n) return cudaSuccess;
    k_add<<<hk_grid_1d(n, 256), 256, 0, s>>>(x, xt, y, yt, n);
    return cudaGetLastError();
}

cudaError_t hk_gelu(cudaStream_t s, void *x, hk_dtype xt, size_t n)
{
    if (!n) return cudaSuccess;
    if (n % 8 == 0 && hk_vec8_ok(x)) {
        size_t n8 = n / 8;
        k_gelu8<<<hk_grid_1d((n8 + HK_PW_UNROLL - 1) / HK_PW_UNROLL, 256), 256, 0, s>>>(x, xt, n8);
        return cudaGetLastError();
    }
    if (n % 4 == 0 && hk_vec4_ok(x, xt)) {
        k_gelu4<<<hk_grid_1d(n / 4, 256), 256, 0, s>>>(x, xt, n / 4);
        return cudaGetLastError();
    }
    k_gelu<<<hk_grid_1d(n, 256), 256, 0, s>>>(x, xt, n);
    return cudaGetLastError();
}

cudaError_t hk_swiglu(cudaStream_t s, void *out, hk_dtype ot, const void *gu, hk_dtype gt, int M, int I)
{
    size_t n = (size_t)M * I;
    if (!n) return cudaSuccess;
    if (I % 8 == 0 && n / 8 < (1u << 31) && hk_vec8_ok(out) && hk_vec8_ok(gu)) {
        unsigned n8 = (unsigned)(n / 8);
        k_swiglu8<<<hk_grid_1d((n8 + HK_PW_UNROLL - 1) / HK_PW_UNROLL, 256), 256, 0, s>>>(out, ot, gu, gt, n8,
                                                                                         (unsigned)I / 8);
        return cudaGetLastError();
    }
    if (I % 4 == 0 && hk_vec4_ok(out, ot) && hk_vec4_ok(gu, gt)) {
        int I4 = I / 4;
        dim3 grid((unsigned)((I4 + 255) / 256), (unsigned)(M < 65535 ? M : 65535));
        k_swiglu4<<<grid, 256, 0, s>>>(out, ot, gu, gt, M, I4);
        return cudaGetLastError();
    }
    k_swiglu<<<hk_grid_1d(n, 256), 256, 0, s>>>(out, ot, gu, gt, (size_t)M, (size_t)I);
    return cudaGetLastError();
}

cudaError_t hk_bias_add(cudaStream_t s, void *x, hk_dtype xt, const void *bias, hk_dtype bt, int M, int N)
{
    size_t n = (size_t)M * N;
    if (!n) return cudaSuccess;
    k_bias_add<<<hk_grid_1d(n, 256), 256, 0, s>>>(x, xt, bias, bt, (size_t)M, (size_t)N);
    return cudaGetLastError();
}

cudaError_t hk_add_norm(cudaStream_t s, void *out, hk_dtype ot, void *res, hk_dtype rt, const void *delta,
                        hk_dtype dlt, const void *w, hk_dtype wt, const void *b, hk_dtype bt, int M, int N,
                        float eps, int layernorm, hk_dtype round_t)
{
    if (M <= 0 || N <= 0) return cudaSuccess;
    if (N % 4 == 0 && N <= HK_ADD_NORM_WARP_MAX_N && hk_vec4_ok(out, ot) && hk_vec4_ok(res, rt) &&
        hk_vec4_ok(delta, dlt) && hk_vec4_ok(w, wt) && hk_vec4_ok(b, bt)) {
        unsigned blocks = (unsigned)((M + 3) / 4);
#define HK_NORM_WARP(V) k_add_norm_warp<V><<<blocks, 128, 0, s>>>(out, ot, res, rt, delta, dlt, w, wt, b, bt, M, N, \
                                                                  eps, layernorm, round_t)
        int v = (N + 127) / 128;
        if (v <= 2) HK_NORM_WARP(2);
        else if (v <= 4) HK_NORM_WARP(4);
        else if (v <= 8) HK_NORM_WARP(8);
        else if (v <= 9) HK_NORM_WARP(9);
        else if (v <= 12) HK_NORM_WARP(12);
        else HK_NORM_WARP(16);
#undef HK_NORM_WARP
        return cudaGetLastError();
    }
    int threads = N >= 2048 ? 512 : N >= 512 ? 256 : 128;
    k_add_norm<<<M, threads, 0, s>>>(out, ot, res, rt, delta, dlt, w, wt, b, bt, N, eps, layernorm, round_t);
    return cudaGetLastError();
}

cudaError_t hk_posemb_add(cudaStream_t s, void *x, hk_dtype xt, const void *table, hk_dtype tt, int edge, int gh,
                          int gw, int C, float sy, float sx)
{
    if (gh <= 0 || gw <= 0 || C <= 0) return cudaSuccess;
    dim3 grid((unsigned)(gh * gw), (unsigned)((C + 255) / 256));
    k_posemb_add<<<grid, 256, 0, s>>>(x, xt, table, tt, edge, gw, C, sy, sx);
    return cudaGetLastError();
}

cudaError_t hk_merge_gather(cudaStream_t s, void *out, hk_dtype ot, const void *x, hk_dtype xt, int gh, int gw,
                            int C)
{
    size_t n = (size_t)(gh / 2) * (gw / 2) * 4 * C;
    if (!n) return cudaSuccess;
    k_merge_gather<<<hk_grid_1d(n, 256), 256, 0, s>>>(out, ot, x, xt, gw, C, n);
    return cudaGetLastError();
}

cudaError_t hk_append_newline(cudaStream_t s, void *out, hk_dtype ot, const void *x, hk_dtype xt, const void *nl,
                              hk_dtype nt, int Hm, int Wm, int C)
{
    size_t n = (size_t)Hm * (Wm + 1) * C;
    if (!n) return cudaSuccess;
    k_append_newline<<<hk_grid_1d(n, 256), 256, 0, s>>>(out, ot, x, xt, nl, nt, Wm, C, n);
    return cudaGetLastError();
}

cudaError_t hk_embed(cudaStream_t s, void *out, hk_dtype ot, const void *table, hk_dtype tt, const int32_t *ids,
                     int n, int C)
{
    if (n <= 0 || C <= 0) return cudaSuccess;
    dim3 grid((unsigned)n, (unsigned)((C + 255) / 256));
    k_embed<<<grid, 256, 0, s>>>(out, ot, table, tt, ids, C);
    return cudaGetLastError();
}

cudaError_t hk_embed_ids(cudaStream_t s, void *out, hk_dtype ot, const void *table, hk_dtype tt, const int32_t *ids,
                         int n, int C, int rows)
{
    if (n <= 0 || C <= 0) return cudaSuccess;
    dim3 grid((unsigned)n, (unsigned)((C + 255) / 256));
    k_embed_ids<<<grid, 256, 0, s>>>(out, ot, table, tt, ids, C, rows);
    return cudaGetLastError();
}

cudaError_t hk_copy_rows(cudaStream_t s, void *dst, hk_dtype dt, size_t ds, const void *src, hk_dtype st, size_t ss,
                         int rows, int cols)
{
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    dim3 grid((unsigned)rows, (unsigned)min((cols + 255) / 256, 64));
    k_copy_rows<<<grid, 256, 0, s>>>(dst, (int)dt, ds, src, (int)st, ss, cols);
    return cudaGetLastError();
}

cudaError_t hk_rope_qknorm(cudaStream_t s, void *qkv, hk_dtype t, int M, const int32_t *pos, int n_axes, int Hq,
                           int Hkv, int D, const hk_rope *rope, const void *qn, hk_dtype qnt, const void *kn,
                           hk_dtype knt, float eps, int pdl, int heads_per_cta)
{
    size_t items = (size_t)M * (Hq + Hkv);
    const int heads = Hq + Hkv, hpc = heads_per_cta > 0 && heads_per_cta < heads ? heads_per_cta : heads;
    if (!items) return cudaSuccess;
    if (D > HK_ROPE_MAX_DIM || D % 2) return cudaErrorInvalidValue;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)M, (unsigned)((heads + hpc - 1) / hpc));
    cfg.blockDim = dim3(hpc == heads ? 256 : 32 * min(hpc, 8));   /* spread: a warp a head, at most 8 */
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, rope_kernel(t, D), qkv, M, pos, n_axes, Hq, Hkv, D, *rope, qn, (int)qnt, kn,
                              (int)knt, eps, hpc);
}


cudaError_t hk_nonfinite(cudaStream_t s, const void *x, hk_dtype t, size_t n, int *flag)
{
    if (!n) return cudaSuccess;
    k_nonfinite<<<hk_grid_1d(n, 256) < 4096 ? hk_grid_1d(n, 256) : 4096, 256, 0, s>>>(x, (int)t, n, flag);
    return cudaGetLastError();
}

} /* extern "C" */
