/* hyocr — the DFlash draft's kernels (issue 20): per-head norm then RoPE (Qwen3's order), and
 * attention of a block over a contiguous context cache with no mask. One CTA per row for the
 * norm. The attention reads every cached key once per KV head: a CTA takes a split of the keys
 * for one KV head and all the queries that share it (the block's rows × the group's heads), and
 * a second kernel merges the splits' partial softmaxes (flash-decoding); shapes past its limits
 * take one CTA per (row, query head). Where a round is captured, the grids are sized for the
 * cache's capacity and the keys in use come from the cursor on the device. */
#include "hk-flash.h"
#include "hk-rope.h"
#include <math.h>

#define APPEND_THREADS 128
#define APPEND_CHUNK   1024   /* keys whose scores sit in shared memory at once */
#define SPLIT_KEYS     128    /* keys of one split-kernel CTA */
#define SPLIT_CHUNK    16     /* keys in shared memory at once */
#define SPLIT_MAXQ     32     /* queries of one KV head: rows × group heads */
#define SPLIT_MAXD     128

/* One CTA per row, one warp per head: the head's RMS over D, the weight, then the rotation.
 * Row r sits at position cursor[0] + r: a replayed graph reads the cursor the host wrote. */
static __global__ void k_qknorm_rope(void *qkv, int t, const int32_t *cursor, int Hq, int Hkv, int D, hk_rope rope,
                                     const void *qn, int qnt, const void *kn, int knt, float eps)
{
    __shared__ float cs[HK_ROPE_MAX_DIM], sn[HK_ROPE_MAX_DIM];
    const int row = blockIdx.x, half = D / 2, pos = cursor[0] + row;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float s, c;
        sincosf(rope.inv_freq[d < half ? d : d - half] * (float)pos, &s, &c);
        cs[d] = hk_round(c, t);
        sn[d] = hk_round(s, t);
    }
    __syncthreads();
    hk_rope_norm_heads<true>(qkv, t, row, Hq, Hkv, D, cs, sn, qn, qnt, kn, knt, eps);
}

/* k | v of row r (after Hq query heads) → cache row cursor[0] + r, rows past cap dropped. */
static __global__ void k_kv_append(const void *qkv, int t, void *kc, void *vc, int ct, const int32_t *cursor, int cap,
                                   int M, int Hq, int Hkv, int D)
{
    const int n_past = cursor[0];
    size_t W = (size_t)Hkv * D, n = (size_t)M * W;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / W, c = i % W, src = r * (Hq + 2 * Hkv) * D + (size_t)Hq * D + c;
        if (n_past < 0 || (size_t)n_past + r >= (size_t)cap) continue;
        size_t dst = ((size_t)n_past + r) * W + c;
        hk_st(kc, ct, dst, hk_ld(qkv, t, src));
        hk_st(vc, ct, dst, hk_ld(qkv, t, src + W));
    }
}

/* One CTA per (row, query head): scores of a chunk of keys into shared memory, the chunk's
 * maximum and sum folded into the running ones, then each thread's dims of the weighted values. */
static __global__ void k_attention_append(void *out, int t, const void *qkv, const void *kc, const void *vc, int ct,
                                          const int32_t *cursor, int cap, int M, int Hq, int Hkv, int D, float scale)
{
    __shared__ float q[HK_ROPE_MAX_DIM], s[APPEND_CHUNK], red[32];
    const int n_keys = max(0, min(cursor[0] + M, cap));
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

/* The split kernels' weighted values of a chunk of nc keys: thread d keeps dimension d of every
 * query's output, rescaled by the query's correction for the chunk's new maximum first. */
__device__ __forceinline__ void split_add_values(float (&acc)[SPLIT_MAXQ], const float (*ps)[SPLIT_CHUNK],
                                                 const float *corr_s, const float (*vs)[SPLIT_MAXD], int Q, int nc,
                                                 int D, int tid)
{
    if (tid < D) {
#pragma unroll
        for (int q = 0; q < SPLIT_MAXQ; q++) {
            if (q >= Q) break;
            float a = acc[q] * corr_s[q];
            for (int j = 0; j < nc; j++) a += ps[q][j] * vs[j][tid];
            acc[q] = a;
        }
    }
}

/* A split kernel's partial for its queries: D accumulated values each (thread d writes
 * dimension d), then the split's maximum score and sum of weights (thread q, query q's). */
__device__ __forceinline__ void split_store(float *out, const float (&acc)[SPLIT_MAXQ], float m, float l, int Q, int D,
                                            int tid)
{
    if (tid < D) {
#pragma unroll
        for (int q = 0; q < SPLIT_MAXQ; q++) {
            if (q >= Q) break;
            out[(size_t)q * (D + 2) + tid] = acc[q];
        }
    }
    if (tid < Q) {
        out[(size_t)tid * (D + 2) + D] = m;
        out[(size_t)tid * (D + 2) + D + 1] = l;
    }
}

/* Grid (splits, KV heads), APPEND_THREADS threads. The queries of KV head g are q = r·G + j for
 * row r and head g·G + j. part[(split · Hkv + g) · Q + q] holds D accumulated values, then the
 * split's maximum score and sum of weights. */
static __global__ void __launch_bounds__(APPEND_THREADS)
k_append_split(float *part, int t, const void *qkv, const void *kc, const void *vc, int ct, const int32_t *cursor,
               int cap, int M, int Hq, int Hkv, int D, float scale)
{
    __shared__ float qs[SPLIT_MAXQ][SPLIT_MAXD];
    __shared__ float ks[SPLIT_CHUNK][SPLIT_MAXD + 1], vs[SPLIT_CHUNK][SPLIT_MAXD];
    __shared__ float ps[SPLIT_MAXQ][SPLIT_CHUNK], corr_s[SPLIT_MAXQ];
    const int G = Hq / Hkv, Q = M * G, g = blockIdx.y, tid = threadIdx.x;
    const int n_keys = max(0, min(cursor[0] + M, cap));
    const int j0 = blockIdx.x * SPLIT_KEYS, j1 = min(j0 + SPLIT_KEYS, n_keys);
    const size_t W = (size_t)Hkv * D, row_w = (size_t)(Hq + 2 * Hkv) * D;
    float *out = part + ((size_t)blockIdx.x * Hkv + g) * Q * (D + 2);
    for (int i = tid; i < Q * D; i += APPEND_THREADS) {
        int q = i / D, d = i % D, r = q / G, h = g * G + q % G;
        qs[q][d] = hk_ld(qkv, t, (size_t)r * row_w + (size_t)h * D + d) * scale;
    }
    float m = -INFINITY, l = 0.0f, acc[SPLIT_MAXQ];
#pragma unroll
    for (int q = 0; q < SPLIT_MAXQ; q++) acc[q] = 0.0f;
    for (int c0 = j0; c0 < j1; c0 += SPLIT_CHUNK) {
        const int nc = min(SPLIT_CHUNK, j1 - c0);
        for (int i = tid; i < SPLIT_CHUNK * D; i += APPEND_THREADS) {
            int j = i / D, d = i % D;
            size_t at = (size_t)(c0 + j) * W + (size_t)g * D + d;
            ks[j][d] = j < nc ? hk_ld(kc, ct, at) : 0.0f;
            vs[j][d] = j < nc ? hk_ld(vc, ct, at) : 0.0f;
        }
        __syncthreads();   /* also publishes qs on the first chunk */
        for (int i = tid; i < Q * SPLIT_CHUNK; i += APPEND_THREADS) {
            int q = i / SPLIT_CHUNK, j = i % SPLIT_CHUNK;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += qs[q][d] * ks[j][d];
            ps[q][j] = j < nc ? dot : -INFINITY;
        }
        __syncthreads();
        if (tid < Q) {   /* thread q keeps query q's running maximum and sum */
            float mb = m;
            for (int j = 0; j < nc; j++) mb = fmaxf(mb, ps[tid][j]);
            float c = expf(m - mb), sum = 0.0f;
            for (int j = 0; j < SPLIT_CHUNK; j++) {
                float p = j < nc ? expf(ps[tid][j] - mb) : 0.0f;
                ps[tid][j] = p;
                sum += p;
            }
            l = l * c + sum;
            m = mb;
            corr_s[tid] = c;
        }
        __syncthreads();
        split_add_values(acc, ps, corr_s, vs, Q, nc, D, tid);
        __syncthreads();   /* ks, vs, ps are rewritten by the next chunk */
    }
    split_store(out, acc, m, l, Q, D, tid);
}

/* ---- the split kernels on the tensor cores (head dim 128, K/V of the compute type) ----
 * The same split and partial layout as k_append_split / k_verify_split, the arithmetic of the
 * prefill kernel (attention-prefill.cu): two warps hold the 32 queries of a KV head (16 rows
 * each as mma A fragments), a split's keys come in tiles of 64 through shared memory, q·kᵀ and
 * P·V are mma.sync m16n8k16 with fp32 accumulation and an online softmax in base 2. P goes in
 * as its rounding plus what the rounding lost (hk_pv EXACT): a verify row must weigh the values
 * as the decode kernel's fp32 does, or a near-tie that plain decoding breaks one way breaks the
 * other (with P rounded to fp16, the 2048² speed run left plain decoding at token 619). Those
 * kernels did the products on the CUDA cores with 32 accumulators a thread (spilled to local
 * memory): a 16-row block over a 4K context took ~123 µs a layer, about 30× its bytes' time. */
#define BF_THREADS 64
#define BF_KEYS    64
#define BF_D       128
#define BF_DS      (BF_D + 8)   /* +16 bytes a row: conflict-free ldmatrix */

/* Where a block's queries and keys are: rows row0.., keys [0, n_keys), row r sees keys up to
 * lim0 + r (causal: the block's own position) or all of them (the draft). */
struct BfBlock {
    int row0, n_rows, n_keys, lim0, causal, bt_off;
};

template <typename T, bool PAGED>
__device__ __forceinline__ const T *bf_key(const void *base, int key, int g, int W, int bs, const int32_t *bt,
                                           int bt_off)
{
    size_t slot = PAGED ? (size_t)bt[bt_off + key / bs] * bs + key % bs : (size_t)key;
    return (const T *)base + slot * W + (size_t)g * BF_D;
}

template <typename T, bool PAGED>
__device__ __forceinline__ void bf_load_kv(T *s, const void *base, int key0, int key1, int g, int W, int bs,
                                           const int32_t *bt, int bt_off)
{
    for (int c = threadIdx.x; c < BF_KEYS * (BF_D / 8); c += BF_THREADS) {
        int r = c / (BF_D / 8), ch = c % (BF_D / 8), key = key0 + r;
        bool ok = key < key1;
        cp16(s + r * BF_DS + ch * 8, bf_key<T, PAGED>(base, ok ? key : key0, g, W, bs, bt, bt_off) + ch * 8, ok);
    }
}

/* Grid (splits, KV heads, blocks). out: this split's partials, query q at q · (D + 2). */
template <typename T, bool PAGED>
__device__ void bf_split(float *out, const BfBlock &b, const void *qkv, const void *kc, const void *vc, int bs,
                         const int32_t *bt, int Hq, int Hkv, float scale_log2)
{
    __shared__ __align__(16) T sK[BF_KEYS * BF_DS];
    __shared__ __align__(16) T sV[BF_KEYS * BF_DS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, tig = lane & 3;
    const int G = Hq / Hkv, Q = b.n_rows * G, g = blockIdx.y, W = Hkv * BF_D;
    const int j0 = blockIdx.x * SPLIT_KEYS, j1 = min(j0 + SPLIT_KEYS, b.n_keys);
    if (j0 >= j1) {   /* a split past the keys in use: the merge skips it */
        for (int q = threadIdx.x; q < Q; q += BF_THREADS) out[(size_t)q * (BF_D + 2) + BF_D] = -INFINITY;
        return;
    }
    const size_t row_w = (size_t)(Hq + 2 * Hkv) * BF_D;
    for (int c = threadIdx.x; c < SPLIT_MAXQ * (BF_D / 8); c += BF_THREADS) {   /* Q through sK */
        int q = c / (BF_D / 8), ch = c % (BF_D / 8), qq = q < Q ? q : 0;
        const T *src = (const T *)qkv + (size_t)(b.row0 + qq / G) * row_w + (size_t)(g * G + qq % G) * BF_D;
        cp16(sK + q * BF_DS + ch * 8, src + ch * 8, q < Q);
    }
    cp_commit();
    cp_wait_all();
    __syncthreads();
    uint32_t qf[1][BF_D / 16][4];
    {
        int mi = lane >> 3;
#pragma unroll
        for (int kk = 0; kk < BF_D / 16; kk++)
            ldsm_x4(qf[0][kk], sK + (warp * 16 + (lane & 7) + (mi & 1) * 8) * BF_DS + kk * 16 + (mi >> 1) * 8);
    }
    __syncthreads();
    int lim[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        int q = min(warp * 16 + gq + 8 * h, Q - 1);
        lim[h] = min(b.causal ? b.lim0 + q / G : b.n_keys - 1, j1 - 1);
    }
    float o[1][BF_D / 8][4];
#pragma unroll
    for (int dt = 0; dt < BF_D / 8; dt++) o[0][dt][0] = o[0][dt][1] = o[0][dt][2] = o[0][dt][3] = 0.0f;
    float m[2] = { -1e30f, -1e30f }, l[2] = { 0.0f, 0.0f };
    const int n_tiles = (j1 - j0 + BF_KEYS - 1) / BF_KEYS;
    bf_load_kv<T, PAGED>(sK, kc, j0, j1, g, W, bs, bt, b.bt_off);
    cp_commit();
    for (int j = 0; j < n_tiles; j++) {
        const int key0 = j0 + j * BF_KEYS;
        cp_wait_all();
        __syncthreads();
        bf_load_kv<T, PAGED>(sV, vc, key0, j1, g, W, bs, bt, b.bt_off);
        cp_commit();
        float sc[1][BF_KEYS / 8][4];
        hk_qk<T, 1, BF_KEYS, BF_D / 16, BF_DS>(sc, qf, sK, lane);
        hk_softmax_tile<BF_KEYS, BF_D>(
            sc[0], o[0], m, l, tig,
            [&](float v, int h, int k) { return key0 + k <= lim[h] ? v * scale_log2 : -INFINITY; },
            [](float m0, float m1) { return exp2f(m0 - m1); }, [](float v, float mx) { return exp2f(v - mx); });
        cp_wait_all();
        __syncthreads();
        if (j + 1 < n_tiles) {
            bf_load_kv<T, PAGED>(sK, kc, key0 + BF_KEYS, j1, g, W, bs, bt, b.bt_off);
            cp_commit();
        }
        hk_pv<T, 1, BF_KEYS, BF_D, BF_DS, true>(o, sc, sV, lane);   /* as decode's fp32 weights */
    }
    /* the partial as the merges read it: values relative to e^m, m in the score's natural units */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int q = warp * 16 + gq + 8 * h;
        const float sum = hk_quad_sum(l[h]);
        if (q >= Q) continue;
        float *p = out + (size_t)q * (BF_D + 2);
#pragma unroll
        for (int dt = 0; dt < BF_D / 8; dt++) {
            p[dt * 8 + 2 * tig] = o[0][dt][2 * h];
            p[dt * 8 + 2 * tig + 1] = o[0][dt][2 * h + 1];
        }
        if (tig == 0) {
            p[BF_D] = sum > 0.0f ? m[h] / LOG2E : -INFINITY;
            p[BF_D + 1] = sum;
        }
    }
}

/* The draft's block over its contiguous cache (every key visible): k_append_split's layout. */
template <typename T>
__global__ void __launch_bounds__(BF_THREADS)
k_append_flash(float *part, const void *qkv, const void *kc, const void *vc, const int32_t *cursor, int cap, int M,
               int Hq, int Hkv, float scale_log2)
{
    BfBlock b = { 0, M, max(0, min(cursor[0] + M, cap)), 0, 0, 0 };
    float *out = part + ((size_t)blockIdx.x * Hkv + blockIdx.y) * M * (Hq / Hkv) * (BF_D + 2);
    bf_split<T, false>(out, b, qkv, kc, vc, 0, NULL, Hq, Hkv, scale_log2);
}

/* A verify block over the paged cache (row r sees keys up to n_past + r): k_verify_split's layout. */
template <typename T>
__global__ void __launch_bounds__(BF_THREADS)
k_verify_flash(float *part, const void *qkv, const void *kc, const void *vc, int bs, const int32_t *bt,
               const hk_block *blocks, int Hq, int Hkv, float scale_log2)
{
    const hk_block bk = blocks[blockIdx.z];
    BfBlock b = { bk.row0, bk.n_rows, bk.n_past + bk.n_rows, bk.n_past, 1, bk.bt_off };
    float *out = part + (((size_t)blockIdx.z * gridDim.x + blockIdx.x) * Hkv + blockIdx.y) * SPLIT_MAXQ * (BF_D + 2);
    bf_split<T, true>(out, b, qkv, kc, vc, bs, bt, Hq, Hkv, scale_log2);
}

/* The tensor-core kernels take head dim 128 with K/V of the compute type, up to SPLIT_MAXQ queries. */
static bool bf_fits(int t, int ct, int Q, int D)
{
    return D == BF_D && ct == t && Q <= SPLIT_MAXQ && (t == HK_F16 || t == HK_BF16);
}

/* One CTA per (row, query head): the splits' partials weighed by exp(mₛ − max). */
static __global__ void k_append_merge(void *o, int t, const float *part, int splits, int M, int Hq, int Hkv, int D)
{
    const int r = blockIdx.x / Hq, h = blockIdx.x % Hq, G = Hq / Hkv, g = h / G, Q = M * G, q = r * G + h % G;
    float mx = -INFINITY;
    for (int s = 0; s < splits; s++) mx = fmaxf(mx, part[(((size_t)s * Hkv + g) * Q + q) * (D + 2) + D]);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float num = 0.0f, den = 0.0f;
        for (int s = 0; s < splits; s++) {
            const float *p = part + (((size_t)s * Hkv + g) * Q + q) * (D + 2);
            if (p[D] == -INFINITY) continue;   /* a split past the keys in use */
            float w = expf(p[D] - mx);
            num += w * p[d];
            den += w * p[D + 1];
        }
        hk_st(o, t, ((size_t)r * Hq + h) * D + d, den > 0.0f ? num / den : 0.0f);
    }
}

/* A verify block's attention over the paged cache (grid: splits, KV heads, blocks): as
 * k_append_split with the keys addressed through the block table and a causal limit, row r of
 * the block seeing the keys up to its own position n_past + r (all stored before). Partials at
 * ((block · splits + split) · Hkv + g) · SPLIT_MAXQ + q. */
static __global__ void __launch_bounds__(APPEND_THREADS)
k_verify_split(float *part, int t, const void *qkv, const void *kc, const void *vc, int ct, int bs, const int32_t *bt,
               const hk_block *blocks, int Hq, int Hkv, int D, float scale)
{
    __shared__ float qs[SPLIT_MAXQ][SPLIT_MAXD];
    __shared__ float ks[SPLIT_CHUNK][SPLIT_MAXD + 1], vs[SPLIT_CHUNK][SPLIT_MAXD];
    __shared__ float ps[SPLIT_MAXQ][SPLIT_CHUNK], corr_s[SPLIT_MAXQ];
    const hk_block bk = blocks[blockIdx.z];
    const int G = Hq / Hkv, Q = bk.n_rows * G, g = blockIdx.y, tid = threadIdx.x;
    const int j0 = blockIdx.x * SPLIT_KEYS, j1 = min(j0 + SPLIT_KEYS, bk.n_past + bk.n_rows);
    const size_t W = (size_t)Hkv * D, row_w = (size_t)(Hq + 2 * Hkv) * D;
    float *out = part + (((size_t)blockIdx.z * gridDim.x + blockIdx.x) * Hkv + g) * SPLIT_MAXQ * (D + 2);
    for (int i = tid; i < Q * D; i += APPEND_THREADS) {
        int q = i / D, d = i % D, r = q / G, h = g * G + q % G;
        qs[q][d] = hk_ld(qkv, t, (size_t)(bk.row0 + r) * row_w + (size_t)h * D + d) * scale;
    }
    float m = -INFINITY, l = 0.0f, acc[SPLIT_MAXQ];
#pragma unroll
    for (int q = 0; q < SPLIT_MAXQ; q++) acc[q] = 0.0f;
    for (int c0 = j0; c0 < j1; c0 += SPLIT_CHUNK) {
        const int nc = min(SPLIT_CHUNK, j1 - c0);
        for (int i = tid; i < SPLIT_CHUNK * D; i += APPEND_THREADS) {
            int j = i / D, d = i % D, key = c0 + j;
            float kv = 0.0f, vv = 0.0f;
            if (j < nc) {
                size_t slot = (size_t)bt[bk.bt_off + key / bs] * bs + key % bs;
                kv = hk_ld(kc, ct, slot * W + (size_t)g * D + d);
                vv = hk_ld(vc, ct, slot * W + (size_t)g * D + d);
            }
            ks[j][d] = kv;
            vs[j][d] = vv;
        }
        __syncthreads();   /* also publishes qs on the first chunk */
        for (int i = tid; i < Q * SPLIT_CHUNK; i += APPEND_THREADS) {
            int q = i / SPLIT_CHUNK, j = i % SPLIT_CHUNK;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += qs[q][d] * ks[j][d];
            ps[q][j] = j < nc && c0 + j <= bk.n_past + q / G ? dot : -INFINITY;
        }
        __syncthreads();
        if (tid < Q) {   /* a chunk past a row's position leaves it as it was */
            float mb = m;
            for (int j = 0; j < nc; j++) mb = fmaxf(mb, ps[tid][j]);
            float c = mb == -INFINITY ? 1.0f : expf(m - mb), sum = 0.0f;
            for (int j = 0; j < SPLIT_CHUNK; j++) {
                float p = ps[tid][j] == -INFINITY ? 0.0f : expf(ps[tid][j] - mb);
                ps[tid][j] = p;
                sum += p;
            }
            l = l * c + sum;
            m = mb;
            corr_s[tid] = c;
        }
        __syncthreads();
        split_add_values(acc, ps, corr_s, vs, Q, nc, D, tid);
        __syncthreads();
    }
    split_store(out, acc, m, l, Q, D, tid);
}

/* Grid (SPLIT_MAXQ · Hq, blocks): a block's row × query head, its splits merged. */
static __global__ void k_verify_merge(void *o, int t, const float *part, int splits, const hk_block *blocks, int Hq,
                                      int Hkv, int D)
{
    const hk_block bk = blocks[blockIdx.y];
    const int r = blockIdx.x / Hq, h = blockIdx.x % Hq, G = Hq / Hkv, g = h / G, q = r * G + h % G;
    if (r >= bk.n_rows) return;
    const float *base = part + ((size_t)blockIdx.y * splits * Hkv + g) * SPLIT_MAXQ * (D + 2);
    const size_t step = (size_t)Hkv * SPLIT_MAXQ * (D + 2);   /* from one split to the next */
    float mx = -INFINITY;
    for (int s = 0; s < splits; s++) mx = fmaxf(mx, base[s * step + (size_t)q * (D + 2) + D]);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float num = 0.0f, den = 0.0f;
        for (int s = 0; s < splits; s++) {
            const float *p = base + s * step + (size_t)q * (D + 2);
            if (p[D] == -INFINITY) continue;
            float w = expf(p[D] - mx);
            num += w * p[d];
            den += w * p[D + 1];
        }
        hk_st(o, t, ((size_t)(bk.row0 + r) * Hq + h) * D + d, den > 0.0f ? num / den : 0.0f);
    }
}

extern "C" {

size_t hk_verify_part_floats(int ctx_cap, int n_blocks, int Hq, int Hkv, int D)
{
    if (ctx_cap <= 0 || n_blocks <= 0 || Hkv <= 0 || Hq % Hkv || D > SPLIT_MAXD) return 0;
    size_t splits = ((size_t)ctx_cap + SPLIT_KEYS - 1) / SPLIT_KEYS;
    return (size_t)n_blocks * splits * Hkv * SPLIT_MAXQ * (D + 2);
}

int hk_verify_fits(int n_rows, int Hq, int Hkv, int D)
{
    return Hkv > 0 && Hq % Hkv == 0 && D <= SPLIT_MAXD && n_rows * (Hq / Hkv) <= SPLIT_MAXQ;
}

cudaError_t hk_attention_verify(cudaStream_t s, hk_dtype t, void *out, const void *qkv, const void *k_cache,
                                const void *v_cache, int block_size, const int32_t *bt, const hk_block *blocks,
                                int n_blocks, int ctx_cap, int Hq, int Hkv, int D, float scale, float *part)
{
    if (n_blocks <= 0) return cudaSuccess;
    if (D > SPLIT_MAXD || Hkv <= 0 || Hq % Hkv || ctx_cap <= 0) return cudaErrorInvalidValue;
    unsigned splits = (unsigned)((ctx_cap + SPLIT_KEYS - 1) / SPLIT_KEYS);
    dim3 grid(splits, (unsigned)Hkv, (unsigned)n_blocks);
    const float sl2 = scale * LOG2E;
    if (!bf_fits(t, t, SPLIT_MAXQ, D))
        k_verify_split<<<grid, APPEND_THREADS, 0, s>>>(part, (int)t, qkv, k_cache, v_cache, (int)t, block_size, bt,
                                                       blocks, Hq, Hkv, D, scale);
    else if (t == HK_BF16)
        k_verify_flash<__nv_bfloat16><<<grid, BF_THREADS, 0, s>>>(part, qkv, k_cache, v_cache, block_size, bt,
                                                                  blocks, Hq, Hkv, sl2);
    else
        k_verify_flash<__half><<<grid, BF_THREADS, 0, s>>>(part, qkv, k_cache, v_cache, block_size, bt, blocks, Hq,
                                                           Hkv, sl2);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    k_verify_merge<<<dim3((unsigned)(SPLIT_MAXQ * Hq), (unsigned)n_blocks), 128, 0, s>>>(out, (int)t, part,
                                                                                       (int)splits, blocks, Hq,
                                                                                       Hkv, D);
    return cudaGetLastError();
}

size_t hk_append_part_floats(int cap, int M, int Hq, int Hkv, int D)
{
    if (Hq <= 0 || Hkv <= 0 || Hq % Hkv || D > SPLIT_MAXD || M * (Hq / Hkv) > SPLIT_MAXQ || cap <= 0) return 0;
    size_t splits = ((size_t)cap + SPLIT_KEYS - 1) / SPLIT_KEYS;
    return splits * Hkv * (size_t)M * (Hq / Hkv) * (D + 2);
}

cudaError_t hk_qknorm_rope(cudaStream_t s, void *qkv, hk_dtype t, int M, const int32_t *cursor, int Hq, int Hkv, int D,
                           const hk_rope *rope, const void *qn, hk_dtype qnt, const void *kn, hk_dtype knt, float eps)
{
    if (M <= 0 || Hq + Hkv <= 0) return cudaSuccess;
    if (D > HK_ROPE_MAX_DIM || D % 2) return cudaErrorInvalidValue;
    k_qknorm_rope<<<(unsigned)M, 256, 0, s>>>(qkv, (int)t, cursor, Hq, Hkv, D, *rope, qn, (int)qnt, kn, (int)knt, eps);
    return cudaGetLastError();
}

cudaError_t hk_attention_append(cudaStream_t s, hk_dtype t, void *out, const void *qkv, void *k_cache,
                                void *v_cache, hk_dtype ct, const int32_t *cursor, int cap, int M, int Hq, int Hkv,
                                int D, float scale, float *part, size_t part_floats)
{
    if (M <= 0) return cudaSuccess;
    if (D > HK_ROPE_MAX_DIM || Hkv <= 0 || (Hq > 0 && Hq % Hkv)) return cudaErrorInvalidValue;
    size_t n = (size_t)M * Hkv * D;
    k_kv_append<<<hk_grid_1d(n, 256), 256, 0, s>>>(qkv, (int)t, k_cache, v_cache, (int)ct, cursor, cap, M, Hq, Hkv, D);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || Hq == 0) return e;
    size_t need = hk_append_part_floats(cap, M, Hq, Hkv, D);
    if (need && part && part_floats >= need) {
        dim3 grid((unsigned)((cap + SPLIT_KEYS - 1) / SPLIT_KEYS), (unsigned)Hkv);
        const float sl2 = scale * LOG2E;
        if (!bf_fits(t, ct, M * (Hq / Hkv), D))
            k_append_split<<<grid, APPEND_THREADS, 0, s>>>(part, (int)t, qkv, k_cache, v_cache, (int)ct, cursor, cap,
                                                           M, Hq, Hkv, D, scale);
        else if (t == HK_BF16)
            k_append_flash<__nv_bfloat16><<<grid, BF_THREADS, 0, s>>>(part, qkv, k_cache, v_cache, cursor, cap, M,
                                                                      Hq, Hkv, sl2);
        else
            k_append_flash<__half><<<grid, BF_THREADS, 0, s>>>(part, qkv, k_cache, v_cache, cursor, cap, M, Hq, Hkv,
                                                               sl2);
        unsigned splits = grid.x;
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
        k_append_merge<<<(unsigned)(M * Hq), 128, 0, s>>>(out, (int)t, part, (int)splits, M, Hq, Hkv, D);
        return cudaGetLastError();
    }
    k_attention_append<<<(unsigned)(M * Hq), APPEND_THREADS, 0, s>>>(out, (int)t, qkv, k_cache, v_cache, (int)ct,
                                                                    cursor, cap, M, Hq, Hkv, D, scale);
    return cudaGetLastError();
}

} /* extern "C" */
