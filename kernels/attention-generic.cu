/* hyocr — attention for any head dim ≤ 256, bidirectional and paged. */
#include "hk-common.h"
#include <math.h>

/* The fast kernels (attention-vision.cu, attention-prefill.cu, attention-decode.cu) are
 * built for the release's head dims (72 vision, 128 text). Any other D ≤ 256 (the tiny
 * test checkpoints, future variants) goes through these: one warp per (query row,
 * head), lanes split the head dims, keys in order with an online softmax in fp32.
 * Slow but exact enough, and correct for every shape. */
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

extern "C" {

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

} /* extern "C" */
