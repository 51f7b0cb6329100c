/* hyocr — paged attention of decode rows: one query row per sequence; the
 * context is cut into splits spread over many CTAs (flash-decoding), each writing
 * an unnormalised partial (max, sum, acc); the last split of a row to finish
 * merges them. Plain FMA: a single row has no matrix shape for the tensor cores,
 * and the kernel is bound by reading the cache. */
#include "hk-common.h"
#include "hk-flash.h"
#include <math.h>

#define DEC_THREADS 128
#define DEC_TG (DEC_THREADS / 16)   /* token groups: 16 lanes × 8 dims cover D = 128 */
#define DEC_U 8                     /* key (and value) rows in flight per thread */

/* A CTA's time line for bench/decode_trace.cu, only when built with HK_DECODE_TRACE:
 * per CTA five words, %globaltimer at its start, after q, after its rounds and at its end,
 * then (SM << 8) | how it ended (0: partial written, 1: merged the row, 2: a row of one split). */
#ifdef HK_DECODE_TRACE
__device__ unsigned long long g_dec_trace[65536 * 5];
__device__ __forceinline__ unsigned long long dec_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned dec_smid()
{
    unsigned id;
    asm("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}
#define DEC_TRACE(k, v) do { if (threadIdx.x == 0) g_dec_trace[(blockIdx.x + blockIdx.y * gridDim.x) * 5 + (k)] = (v); } while (0)
#define DEC_TRACE_END(sp, last) do { DEC_TRACE(3, dec_now()); \
    DEC_TRACE(4, (unsigned long long)dec_smid() << 8 | ((sp).n_parts == 1 ? 2u : (unsigned)(last))); } while (0)
#else
#define DEC_TRACE(k, v) do {} while (0)
#define DEC_TRACE_END(sp, last) do {} while (0)
#endif

struct DecArgs {
    const void *q, *k, *v;   /* the qkv rows, the K and V caches (hk_paged_fill) */
    void *out;
    int q_stride, Hq, Hkv, G, block_size;
    float scale_log2;
    const hk_seq *seqs;
    const int32_t *bt;
    const hk_split *splits;
    unsigned *counters;
    float *part_acc, *part_ml;
    int dev_split_len, dev_max_splits;   /* > 0: splits derived from n_past here (graph replay) */
    int kv_write;                        /* store the decode rows' new k/v in the cache */
    int bs_shift;                        /* log2 of block_size where it is a power of two, else -1 */
};

/* The cache slot of token t of a split whose blocks' ids are blk from the row's block b0: by a
 * shift and a mask where the block size is a power of two (the engine's 16), where a division by
 * the size takes ~20 instructions a token and a thread stages 8 tokens a round. Level in
 * decode_bench, +1 % for 16 concurrent pages (H100, bench/results/2026-12-07-s33). */
__device__ __forceinline__ size_t dec_slot(const DecArgs &a, const int *blk, int b0, int t)
{
    if (a.bs_shift >= 0) return ((size_t)blk[(t >> a.bs_shift) - b0] << a.bs_shift) + (t & ((1 << a.bs_shift) - 1));
    return (size_t)blk[t / a.block_size - b0] * a.block_size + t % a.block_size;
}

/* The split of this CTA. With dev_split_len, row r = sequence r (one decode row
 * each) owns CTAs [r·max, (r+1)·max) of a fixed grid and those past its context exit,
 * so a captured launch serves every context up to max·split_len. */
__device__ __forceinline__ bool dec_split(const DecArgs &a, hk_split &sp)
{
    if (a.dev_split_len <= 0) {
        sp = a.splits[blockIdx.x];
        return true;
    }
    int L = a.dev_split_len, row = blockIdx.x / a.dev_max_splits, i = blockIdx.x - row * a.dev_max_splits;
    int ctx = a.seqs[row].n_past + 1, n = (ctx + L - 1) / L;
    if (i >= n) return false;
    sp.seq = row;
    sp.t0 = i * L;
    sp.t1 = min(ctx, sp.t0 + L);
    sp.row = row;
    sp.part0 = row * a.dev_max_splits;
    sp.part = sp.part0 + i;
    sp.n_parts = n;
    sp.pad_ = 0;
    return true;
}

/* What a CTA of split sp knows of its row: the sequence, its first query head and KV head, the
 * split's keys (L) and first block (b0), its new token (inew: a decode row's one new token, −1 where
 * it is not in this split); the split's block ids go into blk (shared), then a barrier. */
struct DecCta {
    hk_seq s;
    int head0, kvh, L, b0, inew;
};

template <int GT>
__device__ __forceinline__ DecCta dec_cta(const DecArgs &a, const hk_split &sp, int *blk)
{
    DecCta c;
    c.s = a.seqs[sp.seq];
    c.head0 = blockIdx.y * GT;
    c.kvh = c.head0 / a.G;
    c.L = sp.t1 - sp.t0;
    c.b0 = sp.t0 / a.block_size;
    c.inew = sp.t1 == c.s.n_past + 1 ? c.s.n_past - sp.t0 : -1;
    const int nb = (sp.t1 - 1) / a.block_size - c.b0 + 1;
    for (int i = threadIdx.x; i < nb; i += DEC_THREADS) blk[i] = a.bt[c.s.bt_off + c.b0 + i];
    __syncthreads();
    return c;
}

__device__ __forceinline__ float2 to_f2(__half2 h) { return __half22float2(h); }
__device__ __forceinline__ float2 to_f2(__nv_bfloat162 h) { return __bfloat1622float2(h); }

template <typename T> __device__ __forceinline__ void unpack8(float *f, int4 raw)
{
    const typename vec2<T>::type *h = (const typename vec2<T>::type *)&raw;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 v = to_f2(h[i]);
        f[2 * i] = v.x;
        f[2 * i + 1] = v.y;
    }
}

/* Merges GT heads' partial states: (m, l, acc) of the row's splits → the output. The
 * electing CTA of a row calls this over all the row's parts in global memory. Each thread
 * merges its own outputs' parts in one pass (a running max, as the rounds do), so the
 * loads of every part are independent and in flight together: the two-pass merge with
 * block-wide reductions before it took ~5 µs of dependent round trips, 40 % of a one-row
 * call at 1087 or 4191 keys (bench/results/2026-12-04-h200-s11, call8). */
template <typename T, int GT>
__device__ void dec_merge_parts(const DecArgs &a, const hk_split &sp, int head0)
{
    constexpr int D = 128;
    const hk_seq s = a.seqs[sp.seq];
    const size_t ml_stride = (size_t)a.Hq * 2, acc_stride = (size_t)a.Hq * D;
#pragma unroll
    for (int k = 0; k < GT * D / DEC_THREADS; k++) {
        int i = threadIdx.x + k * DEC_THREADS, g = i / D, d = i - g * D;
        const float *ml = a.part_ml + ((size_t)sp.part0 * a.Hq + head0 + g) * 2;
        const float *src = a.part_acc + ((size_t)sp.part0 * a.Hq + head0 + g) * D + d;
        float M = -INFINITY, num = 0.0f, den = 0.0f;
#pragma unroll 4
        for (int p = 0; p < sp.n_parts; p++) {
            const float m = __ldcg(ml + p * ml_stride), l = __ldcg(ml + p * ml_stride + 1);
            const float x = __ldcg(src + p * acc_stride);
            if (m > M) {   /* every part has a finite max: its split holds keys */
                const float c = exp2f(M - m);
                num *= c;
                den *= c;
                M = m;
            }
            const float w = exp2f(m - M);
            num += w * x;
            den += w * l;
        }
        ((T *)a.out)[(size_t)s.row0 * a.Hq * D + (size_t)(head0 + g) * D + d] = T(num / den);
    }
}

/* Round of DEC_TG·DEC_U keys from base: key rows of this thread's token group
 * into kr/vr. The row's new token (index inew, -1: not in this split) is taken
 * from the qkv row (kn, vn) instead of the cache, which the kernel may be
 * writing it to; with_new false leaves it zero (patched after the grid wait). */
__device__ __forceinline__ void dec_load(const DecArgs &a, const hk_split &sp, const int *blk, int b0, int base, int L,
                                         int kvh, int inew, bool with_new, int4 kn, int4 vn, int4 *kr, int4 *vr)
{
    constexpr int D = 128;
    const int lane16 = threadIdx.x & 15, tg = threadIdx.x >> 4;
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        int i = base + u * DEC_TG + tg;
        kr[u] = vr[u] = make_int4(0, 0, 0, 0);
        if (i == inew) {
            if (with_new) {
                kr[u] = kn;
                vr[u] = vn;
            }
        } else if (i < L) {
            int t = sp.t0 + i;
            size_t slot = dec_slot(a, blk, b0, t);
            size_t off = (slot * a.Hkv + kvh) * D + lane16 * 8;
            kr[u] = __ldcs((const int4 *)((const uint16_t *)a.k + off));   /* read once per step */
            vr[u] = __ldcs((const int4 *)((const uint16_t *)a.v + off));
        }
    }
}

/* Online softmax over one round of keys (see dec_load) for GT heads. */
template <typename T, int GT>
__device__ __forceinline__ void dec_round(const int4 *kr, const int4 *vr, int base, int L, const float (&q)[GT][8],
                                          float (&m)[GT], float (&l)[GT], float (&acc)[GT][8])
{
    const int tg = threadIdx.x >> 4;
    float sc[DEC_U][GT];
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        float k8[8];
        unpack8<T>(k8, kr[u]);
        bool ok = base + u * DEC_TG + tg < L;
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float d = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; e++) d += q[g][e] * k8[e];
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
            sc[u][g] = ok ? d : -INFINITY;
        }
    }
#pragma unroll
    for (int g = 0; g < GT; g++) {
        float mx = m[g];
#pragma unroll
        for (int u = 0; u < DEC_U; u++) mx = fmaxf(mx, sc[u][g]);
        float corr = exp2f(m[g] - mx);
        m[g] = mx;
        l[g] *= corr;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] *= corr;
    }
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        float v8[8];
        unpack8<T>(v8, vr[u]);
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float p = exp2f(sc[u][g] - m[g]);
            l[g] += p;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[g][e] += p * v8[e];
        }
    }
}

/* The row's new token: its k/v from the qkv row into kn/vn (this lane's 8 dims),
 * stored in the cache with kv_write by the first token group of the group's first
 * CTA; and q (the GT heads, scaled to log2 units). After the grid wait. */
template <typename T, int GT>
__device__ __forceinline__ void dec_row(const DecArgs &a, const hk_split &sp, const hk_seq &s, const int *blk, int b0,
                                        int head0, int kvh, int inew, int4 &kn, int4 &vn, float (&q)[GT][8])
{
    constexpr int D = 128;
    const int lane16 = threadIdx.x & 15, tg = threadIdx.x >> 4;
    const T *row = (const T *)a.q + (size_t)s.row0 * a.q_stride;
    kn = vn = make_int4(0, 0, 0, 0);
    if (inew >= 0) {
        kn = *(const int4 *)(row + (size_t)(a.Hq + kvh) * D + lane16 * 8);
        vn = *(const int4 *)(row + (size_t)(a.Hq + a.Hkv + kvh) * D + lane16 * 8);
        if (a.kv_write && tg == 0 && head0 % a.G == 0) {
            int t = s.n_past;
            size_t slot = dec_slot(a, blk, b0, t);
            size_t off = (slot * a.Hkv + kvh) * D + lane16 * 8;
            *(int4 *)((uint16_t *)a.k + off) = kn;
            *(int4 *)((uint16_t *)a.v + off) = vn;
        }
    }
#pragma unroll
    for (int g = 0; g < GT; g++) {
        unpack8<T>(q[g], *(const int4 *)(row + (size_t)(head0 + g) * D + lane16 * 8));
#pragma unroll
        for (int e = 0; e < 8; e++) q[g][e] *= a.scale_log2;
    }
}

/* After the rounds, once red holds NG groups' states (red_acc [NG][GT][D], then red_m and
 * red_l [NG][GT]): merges them into this split's partial (or the output, for a row of one
 * split); the last split of the row to finish merges the partials (no second launch). red
 * may alias the key stages: every thread is past its rounds at the barrier before it. */
template <typename T, int GT, int NG>
__device__ __forceinline__ void dec_finish_groups(const DecArgs &a, const hk_split &sp, const hk_seq &s, int head0,
                                                  const float *red, int *s_last)
{
    constexpr int D = 128;
    const float *red_acc = red, *red_m = red_acc + NG * GT * D, *red_l = red_m + NG * GT;
#pragma unroll
    for (int k = 0; k < GT * D / DEC_THREADS; k++) {
        int i = threadIdx.x + k * DEC_THREADS, g = i / D, d = i - g * D;
        float M = -INFINITY;
#pragma unroll
        for (int j = 0; j < NG; j++) M = fmaxf(M, red_m[j * GT + g]);
        float num = 0.0f, den = 0.0f;
#pragma unroll
        for (int j = 0; j < NG; j++) {
            float w = exp2f(red_m[j * GT + g] - M);
            num += w * red_acc[(j * GT + g) * D + d];
            den += w * red_l[j * GT + g];
        }
        if (sp.n_parts == 1) {
            ((T *)a.out)[(size_t)s.row0 * a.Hq * D + (size_t)(head0 + g) * D + d] = T(num / den);
        } else {
            size_t o = (size_t)sp.part * a.Hq + head0 + g;
            a.part_acc[o * D + d] = num;
            if (d == 0) {
                a.part_ml[o * 2] = M;
                a.part_ml[o * 2 + 1] = den;
            }
        }
    }
    if (sp.n_parts == 1) return;

    /* Elect the last split of this row (threadFenceReduction pattern). */
    __threadfence();
    __syncthreads();
    unsigned *ctr = &a.counters[(size_t)sp.row * gridDim.y + blockIdx.y];
    if (threadIdx.x == 0) *s_last = atomicAdd(ctr, 1u) == (unsigned)sp.n_parts - 1;
    __syncthreads();
    if (!*s_last) return;
    __threadfence();
    dec_merge_parts<T, GT>(a, sp, head0);
    if (threadIdx.x == 0) *ctr = 0;   /* ready for the next call */
}

/* The token groups' states (m, l, acc) into red, then dec_finish_groups. */
template <typename T, int GT>
__device__ __forceinline__ void dec_finish(const DecArgs &a, const hk_split &sp, const hk_seq &s, int head0,
                                           const float (&m)[GT], const float (&l)[GT], const float (&acc)[GT][8],
                                           float *red, int *s_last)
{
    constexpr int D = 128;
    const int lane16 = threadIdx.x & 15, tg = threadIdx.x >> 4;
    float *red_acc = red, *red_m = red_acc + DEC_TG * GT * D, *red_l = red_m + DEC_TG * GT;
#pragma unroll
    for (int g = 0; g < GT; g++) {
        if (lane16 == 0) {
            red_m[tg * GT + g] = m[g];
            red_l[tg * GT + g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < 8; e++) red_acc[(tg * GT + g) * D + lane16 * 8 + e] = acc[g][e];
    }
    __syncthreads();
    dec_finish_groups<T, GT, DEC_TG>(a, sp, s, head0, red, s_last);
}

/* CTA = one split × GT query heads of one KV group. Every thread keeps DEC_U
 * key and value rows in flight, and the next round's while it computes one;
 * each 16-lane token group keeps an online softmax (m, l, acc); the 8 groups are
 * merged through shared memory into this split's partial. The last split of the
 * row to finish merges the partials (no second launch). The cached keys do not
 * depend on the kernels before, so the first round is issued before the grid
 * wait; the new token comes from the qkv row (and, with kv_write, is stored in
 * the cache here: no separate KV write launch). */
template <typename T, int GT>
__global__ void __launch_bounds__(DEC_THREADS) k_decode(DecArgs a)
{
    constexpr int RT = DEC_TG * DEC_U;
    extern __shared__ __align__(16) float dsm[];
    float *red = dsm;
    int *blk = (int *)(red + DEC_TG * GT * 130);   /* block ids of this split */
    __shared__ int s_last;

    hk_griddep_launch_next();
    hk_split sp;
    if (!dec_split(a, sp)) return;   /* whole CTA: before any barrier */
    DEC_TRACE(0, dec_now());
    const DecCta c = dec_cta<GT>(a, sp, blk);
    const hk_seq &s = c.s;
    const int head0 = c.head0, kvh = c.kvh, L = c.L, b0 = c.b0, inew = c.inew;
    const int tg = threadIdx.x >> 4;
    const int4 zero = make_int4(0, 0, 0, 0);
    int4 ka[DEC_U], va[DEC_U], kb[DEC_U], vb[DEC_U];
    dec_load(a, sp, blk, b0, 0, L, kvh, inew, false, zero, zero, ka, va);

    hk_griddep_wait();   /* qkv (q, the new k/v) comes from the kernels before */
    int4 kn, vn;
    float q[GT][8];
    dec_row<T, GT>(a, sp, s, blk, b0, head0, kvh, inew, kn, vn, q);
    DEC_TRACE(1, dec_now());
    if (inew >= 0) {
#pragma unroll
        for (int u = 0; u < DEC_U; u++)
            if (u * DEC_TG + tg == inew) {
                ka[u] = kn;
                va[u] = vn;
            }
    }
    float m[GT], l[GT], acc[GT][8];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -1e30f;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] = 0.0f;
    }

    /* Two register sets in turn. The loop bounds are block-uniform: the shuffles need whole warps. */
    for (int base = 0; base < L; base += 2 * RT) {
        if (base + RT < L) dec_load(a, sp, blk, b0, base + RT, L, kvh, inew, true, kn, vn, kb, vb);
        dec_round<T, GT>(ka, va, base, L, q, m, l, acc);
        if (base + RT >= L) break;
        if (base + 2 * RT < L) dec_load(a, sp, blk, b0, base + 2 * RT, L, kvh, inew, true, kn, vn, ka, va);
        dec_round<T, GT>(kb, vb, base + RT, L, q, m, l, acc);
    }
    DEC_TRACE(2, dec_now());
    dec_finish<T, GT>(a, sp, s, head0, m, l, acc, red, &s_last);
    DEC_TRACE_END(sp, s_last);
}

/* int4 slots of one stage of k_decode_staged: a thread's DEC_U key and DEC_U value rows. */
#define DEC_STAGE_SLOTS (2 * DEC_U * DEC_THREADS)

/* Copies round base's keys of this thread (dec_load's: the same token group, rows and
 * dims) into stage st, slot (2u, 2u + 1)·DEC_THREADS + thread, asynchronously; rows
 * past the split and the new token (taken from qkv when the round is computed) are
 * zero-filled. A thread reads back only what it copied: no barrier between them. */
__device__ __forceinline__ void dec_stage(const DecArgs &a, const hk_split &sp, const int *blk, int b0, int base,
                                          int L, int kvh, int inew, int4 *st)
{
    constexpr int D = 128;
    const int lane16 = threadIdx.x & 15, tg = threadIdx.x >> 4;
#pragma unroll
    for (int u = 0; u < DEC_U; u++) {
        int i = base + u * DEC_TG + tg;
        bool ok = i < L && i != inew;
        size_t off = 0;
        if (ok) {
            int t = sp.t0 + i;
            size_t slot = dec_slot(a, blk, b0, t);
            off = (slot * a.Hkv + kvh) * D + lane16 * 8;
        }
        cp16(&st[(2 * u) * DEC_THREADS + threadIdx.x], (const uint16_t *)a.k + off, ok);
        cp16(&st[(2 * u + 1) * DEC_THREADS + threadIdx.x], (const uint16_t *)a.v + off, ok);
    }
}

/* k_decode with the keys staged through shared memory by cp.async, NS rounds deep:
 * the same splits, rounds, token groups and arithmetic (dec_round, dec_finish), so
 * the same bits, but NS − 1 rounds (32 KB each a CTA) in flight while one is
 * computed instead of one, and no register sets held for them (k_decode: two, 128
 * registers). The first NS − 1 rounds are issued before the grid wait. */
/* (minimum 2 blocks: ptxas's own target, 96 registers, spilled a few bytes at NS = 2;
 * ≤ 119 still lets three CTAs of NS = 2 share an SM) */
template <typename T, int GT, int NS>
__global__ void __launch_bounds__(DEC_THREADS, 2) k_decode_staged(DecArgs a)
{
    constexpr int RT = DEC_TG * DEC_U;
    extern __shared__ __align__(16) float dsm[];
    int4 *stages = (int4 *)dsm;                              /* [NS][2·DEC_U][DEC_THREADS] */
    int *blk = (int *)(stages + NS * DEC_STAGE_SLOTS);       /* block ids of this split */
    __shared__ int s_last;

    hk_griddep_launch_next();
    hk_split sp;
    if (!dec_split(a, sp)) return;   /* whole CTA: before any barrier */
    DEC_TRACE(0, dec_now());
    const DecCta c = dec_cta<GT>(a, sp, blk);
    const hk_seq &s = c.s;
    const int head0 = c.head0, kvh = c.kvh, L = c.L, b0 = c.b0, inew = c.inew, nr = (L + RT - 1) / RT;
    const int tg = threadIdx.x >> 4;
#pragma unroll
    for (int r = 0; r < NS - 1; r++) {
        if (r < nr) dec_stage(a, sp, blk, b0, r * RT, L, kvh, inew, stages + r * DEC_STAGE_SLOTS);
        cp_commit();   /* empty groups too: the waits count groups */
    }

    hk_griddep_wait();
    int4 kn, vn;
    float q[GT][8];
    dec_row<T, GT>(a, sp, s, blk, b0, head0, kvh, inew, kn, vn, q);
    DEC_TRACE(1, dec_now());
    float m[GT], l[GT], acc[GT][8];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -1e30f;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] = 0.0f;
    }

    /* nr is block-uniform: the shuffles need whole warps */
    for (int r = 0; r < nr; r++) {
        /* the stage read in round r − 1, by this thread only */
        if (r + NS - 1 < nr) dec_stage(a, sp, blk, b0, (r + NS - 1) * RT, L, kvh, inew,
                                       stages + (r + NS - 1) % NS * DEC_STAGE_SLOTS);
        cp_commit();
        cp_wait<NS - 1>();
        const int4 *st = stages + r % NS * DEC_STAGE_SLOTS;
        int4 kr[DEC_U], vr[DEC_U];
#pragma unroll
        for (int u = 0; u < DEC_U; u++) {
            kr[u] = st[(2 * u) * DEC_THREADS + threadIdx.x];
            vr[u] = st[(2 * u + 1) * DEC_THREADS + threadIdx.x];
            if (r * RT + u * DEC_TG + tg == inew) {
                kr[u] = kn;
                vr[u] = vn;
            }
        }
        dec_round<T, GT>(kr, vr, r * RT, L, q, m, l, acc);
    }
    cp_wait_all();   /* empty groups only by now; the stages become the merge's buffers */
    __syncthreads();
    DEC_TRACE(2, dec_now());
    dec_finish<T, GT>(a, sp, s, head0, m, l, acc, dsm, &s_last);
    DEC_TRACE_END(sp, s_last);
}

/* ---- the tensor-core variant (k_decode_mma) ----
 * The same splits, rounds of 64 keys, stages and finish as k_decode_staged, but each warp takes
 * 16 keys of a round through mma.sync m16n8k16: S = Q·Kᵀ with the CTA's GT heads as rows (of 16:
 * the others zero) and the keys as columns, then O += P·V with P from S's fragments (rounded to
 * the compute type, as the prefill kernels round it). A warp's 16 keys cost ~40 instructions
 * where k_decode_staged's 16 lanes a token spend ~75 a key and head (Nsight Compute, session
 * 33): at 16 rows that kernel waits on its own instruction chains, not on memory.
 * A stage: K then V rows of the round's 64 keys, 256 bytes each, the 16-byte chunk c of key k
 * at c ^ (k & 7) so that ldmatrix's eight rows fall on distinct banks. Warp w copies and reads
 * only keys 16w..16w + 15 of a round: no barrier between the copies and the reads but the warp's. */
#define DMMA_WARPS (DEC_THREADS / 32)
#define DMMA_KEYS 16   /* keys a warp takes a round */

__device__ __forceinline__ int dmma_at(int key, int chunk) { return key * 128 + ((chunk ^ (key & 7)) << 3); }

/* Copies this warp's keys of round base into stage st (K rows, then V rows 64 keys on), zero for
 * keys past the split and for the new token (patched from qkv in dmma_patch). */
__device__ __forceinline__ void dmma_stage(const DecArgs &a, const hk_split &sp, const int *blk, int b0, int base,
                                           int L, int kvh, int inew, uint16_t *st)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, c = lane & 15;
#pragma unroll
    for (int i = 0; i < DMMA_KEYS / 2; i++) {
        const int key = w * DMMA_KEYS + (lane >> 4) + 2 * i, t = base + key;
        const bool ok = t < L && t != inew;
        size_t off = 0;
        if (ok) off = (dec_slot(a, blk, b0, sp.t0 + t) * a.Hkv + kvh) * 128 + c * 8;
        cp16(st + dmma_at(key, c), (const uint16_t *)a.k + off, ok);
        cp16(st + 64 * 128 + dmma_at(key, c), (const uint16_t *)a.v + off, ok);
    }
}

/* The new token's k/v (this lane's chunk, kn/vn of dec_row) into the stage of round base, by the
 * lanes that would have copied it. */
__device__ __forceinline__ void dmma_patch(int base, int inew, int4 kn, int4 vn, uint16_t *st)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, key = inew - base;
    if (key < 0 || key >= 64 || key / DMMA_KEYS != w || (key & 1) != lane >> 4) return;
    *(int4 *)(st + dmma_at(key, lane & 15)) = kn;
    *(int4 *)(st + 64 * 128 + dmma_at(key, lane & 15)) = vn;
}

/* One warp's 16 keys of a stage: scores (log2 units) with the heads as rows, the online softmax of
 * this lane's four keys of row (head) gid — m shared by the quad, l this lane's part — and
 * Oᵀ += Vᵀ·Pᵀ with the dims as rows: Pᵀ is then the scores' own fragments (lane (gid, q) holds
 * head gid's keys 2q, 2q + 1 and 8 + 2q, 9 + 2q, the B fragment of key k16 and head column gid),
 * and Oᵀ is 8 tiles of 16 dims × 8 heads, where lane (gid, q) holds heads 2q, 2q + 1. */
template <typename T>
__device__ __forceinline__ void dmma_round(const uint16_t *st, int base, int L, float scale_log2,
                                           const uint32_t (&qf)[8][4], float &m, float &l, float (&o)[8][4])
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, quad = lane & 3;
    const int k0 = w * DMMA_KEYS, mat = lane >> 3, r = lane & 7;
    float sc[2][4] = {};
#pragma unroll
    for (int ks = 0; ks < 8; ks++) {   /* dims 16ks.. : b of key tile 0 and 1 */
        uint32_t kb[4];
        ldsm_x4(kb, st + dmma_at(k0 + (mat >> 1) * 8 + r, 2 * ks + (mat & 1)));
        mma16816<T>(sc[0], qf[ks], kb);
        mma16816<T>(sc[1], qf[ks], kb + 2);
    }
    float x[4] = { sc[0][0], sc[0][1], sc[1][0], sc[1][1] };   /* keys 2q, 2q + 1, 8 + 2q, 9 + 2q */
    float mx = -INFINITY;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const int key = base + k0 + (e >> 1) * 8 + 2 * quad + (e & 1);
        x[e] = key < L ? x[e] * scale_log2 : -INFINITY;
        mx = fmaxf(mx, x[e]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mn = fmaxf(m, mx), corr = exp2f(m - mn);
    m = mn;
    float p[4], ps = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        p[e] = exp2f(x[e] - mn);
        ps += p[e];
    }
    l = l * corr + ps;
    const uint32_t pb[2] = { pack2<T>(p[0], p[1]), pack2<T>(p[2], p[3]) };
    /* heads 2q and 2q + 1 of this lane's Oᵀ columns: their rows' factors */
    const float c0 = __shfl_sync(0xffffffffu, corr, 8 * quad), c1 = __shfl_sync(0xffffffffu, corr, 8 * quad + 4);
#pragma unroll
    for (int t = 0; t < 8; t++) {   /* dims 16t.. : a of keys 0-7 and 8-15, dims +0 and +8 */
        uint32_t va[4];
        ldsm_x4_t(va, st + 64 * 128 + dmma_at(k0 + (mat >> 1) * 8 + r, 2 * t + (mat & 1)));
        o[t][0] *= c0;
        o[t][1] *= c1;
        o[t][2] *= c0;
        o[t][3] *= c1;
        mma16816<T>(o[t], va, pb);
    }
}

/* The warps' states into red as dec_finish_groups reads them (the warps as its groups). */
__device__ __forceinline__ void dmma_store(int GT, float m, float l, const float (&o)[8][4], float *red)
{
    constexpr int D = 128;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, quad = lane & 3;
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    float *red_acc = red, *red_m = red_acc + DMMA_WARPS * GT * D, *red_l = red_m + DMMA_WARPS * GT;
    if (g < GT && quad == 0) {
        red_m[w * GT + g] = m;
        red_l[w * GT + g] = l;
    }
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int h = 2 * quad + e;
        if (h >= GT) continue;
#pragma unroll
        for (int t = 0; t < 8; t++) {
            red_acc[(w * GT + h) * D + 16 * t + g] = o[t][e];
            red_acc[(w * GT + h) * D + 16 * t + g + 8] = o[t][2 + e];
        }
    }
}

template <typename T, int GT, int NS>
__global__ void __launch_bounds__(DEC_THREADS, 2) k_decode_mma(DecArgs a)
{
    constexpr int RT = DMMA_WARPS * DMMA_KEYS, STAGE = 2 * 64 * 128;   /* halves a stage */
    static_assert(RT == 64 && GT <= 8, "a stage holds 64 keys; the heads are the rows 0..7 of a fragment");
    extern __shared__ __align__(16) float dsm[];
    uint16_t *stages = (uint16_t *)dsm;
    int *blk = (int *)(stages + NS * STAGE);
    __shared__ int s_last;

    hk_griddep_launch_next();
    hk_split sp;
    if (!dec_split(a, sp)) return;   /* whole CTA: before any barrier */
    const DecCta c = dec_cta<GT>(a, sp, blk);
    const hk_seq &s = c.s;
    const int head0 = c.head0, kvh = c.kvh, L = c.L, b0 = c.b0, inew = c.inew, nr = (L + RT - 1) / RT;
#pragma unroll
    for (int r = 0; r < NS - 1; r++) {
        if (r < nr) dmma_stage(a, sp, blk, b0, r * RT, L, kvh, inew, stages + r * STAGE);
        cp_commit();
    }

    hk_griddep_wait();
    int4 kn, vn;
    float qs[GT][8];
    dec_row<T, GT>(a, sp, s, blk, b0, head0, kvh, inew, kn, vn, qs);   /* kn, vn and the cache write */
    const int lane = threadIdx.x & 31, g = lane >> 2, quad = lane & 3;
    uint32_t qf[8][4];
    {
        const T *q = (const T *)a.q + (size_t)s.row0 * a.q_stride + (size_t)(head0 + g) * 128;
#pragma unroll
        for (int ks = 0; ks < 8; ks++) {
            qf[ks][0] = g < GT ? *(const uint32_t *)(q + 16 * ks + 2 * quad) : 0u;
            qf[ks][2] = g < GT ? *(const uint32_t *)(q + 16 * ks + 8 + 2 * quad) : 0u;
            qf[ks][1] = qf[ks][3] = 0u;
        }
    }
    float m = -1e30f, l = 0.0f, o[8][4] = {};
    for (int r = 0; r < nr; r++) {
        if (r + NS - 1 < nr) dmma_stage(a, sp, blk, b0, (r + NS - 1) * RT, L, kvh, inew,
                                        stages + (r + NS - 1) % NS * STAGE);
        cp_commit();
        cp_wait<NS - 1>();
        uint16_t *st = stages + r % NS * STAGE;
        if (inew >= 0) dmma_patch(r * RT, inew, kn, vn, st);
        __syncwarp();
        dmma_round<T>(st, r * RT, L, a.scale_log2, qf, m, l, o);
        __syncwarp();   /* this warp's reads of the stage before its next copies into it */
    }
    cp_wait_all();
    __syncthreads();
    dmma_store(GT, m, l, o, dsm);
    __syncthreads();
    dec_finish_groups<T, GT, DMMA_WARPS>(a, sp, s, head0, dsm, &s_last);
}

static int decode_gt(const hk_paged_args *p)
{
    return hk_decode_heads_per_cta(p->Hq, p->Hkv);
}

/* The kernel of GT heads a CTA and that many rounds of staged keys (0: k_decode), on the tensor
 * cores with mma (the engine takes two rounds at its splits, four where a row's keys fit one CTA:
 * backend-cuda.c's bound_stages); NULL for one there is none of. */
template <typename T>
static const void *decode_kernel(int GT, int stages, int mma)
{
    if (mma) switch (stages) {
    case 2: return GT == 2 ? (const void *)k_decode_mma<T, 2, 2> : (const void *)k_decode_mma<T, 1, 2>;
    case 3: return GT == 2 ? (const void *)k_decode_mma<T, 2, 3> : (const void *)k_decode_mma<T, 1, 3>;
    case 4: return GT == 2 ? (const void *)k_decode_mma<T, 2, 4> : (const void *)k_decode_mma<T, 1, 4>;
#ifdef HK_DECODE_BENCH_DEEP   /* decode_bench only: five and six rounds (160 and 192 KB of stages) */
    case 5: return GT == 2 ? (const void *)k_decode_mma<T, 2, 5> : (const void *)k_decode_mma<T, 1, 5>;
    case 6: return GT == 2 ? (const void *)k_decode_mma<T, 2, 6> : (const void *)k_decode_mma<T, 1, 6>;
#endif
    default: return NULL;
    }
    switch (stages) {
    case 0: return GT == 2 ? (const void *)k_decode<T, 2> : (const void *)k_decode<T, 1>;
    case 2: return GT == 2 ? (const void *)k_decode_staged<T, 2, 2> : (const void *)k_decode_staged<T, 1, 2>;
    case 3: return GT == 2 ? (const void *)k_decode_staged<T, 2, 3> : (const void *)k_decode_staged<T, 1, 3>;
    case 4: return GT == 2 ? (const void *)k_decode_staged<T, 2, 4> : (const void *)k_decode_staged<T, 1, 4>;
    default: return NULL;
    }
}

template <typename T>
static cudaError_t decode_t(cudaStream_t s, const hk_paged_args *p)
{
    if (p->D != 128) return cudaErrorInvalidValue;
    DecArgs a = {};
    hk_paged_fill(a, p);
    a.Hq = p->Hq;
    a.splits = p->splits;
    a.counters = p->counters;
    a.part_acc = p->part_acc;
    a.part_ml = p->part_ml;
    a.dev_split_len = p->dev_split_len;
    a.dev_max_splits = p->dev_max_splits;
    a.kv_write = p->decode_kv_write;
    a.bs_shift = p->block_size > 0 && !(p->block_size & (p->block_size - 1)) ? __builtin_ctz((unsigned)p->block_size) : -1;
    const int GT = decode_gt(p);
    const void *k = decode_kernel<T>(GT, p->decode_stages, p->decode_mma);
    if (!k) return cudaErrorInvalidValue;
    const size_t smem = hk_decode_smem_staged(GT, p->split_max, p->block_size, p->decode_stages);
    cudaError_t e = cudaSuccess;
    /* the staged kernels take over the 48 KB a launch gets without asking (NS = 2 already) */
    if (p->decode_stages) e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)p->n_splits, (unsigned)(p->Hq / GT));
    cfg.blockDim = dim3(DEC_THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = p->pdl ? 1 : 0;
    void *args[] = { &a };
    return cudaLaunchKernelExC(&cfg, k, args);
}

extern "C" {

int hk_decode_heads_per_cta(int Hq, int Hkv)
{
    return Hkv > 0 && (Hq / Hkv) % 2 == 0 ? 2 : 1;
}

size_t hk_decode_smem(int GT, int split_max, int block_size)
{
    size_t floats = (size_t)DEC_TG * GT * 128 + 2 * (size_t)DEC_TG * GT;
    size_t blocks = (size_t)split_max / (block_size > 0 ? block_size : 1) + 2;
    return floats * sizeof(float) + blocks * sizeof(int);
}

size_t hk_decode_smem_staged(int GT, int split_max, int block_size, int stages)
{
    if (stages <= 0) return hk_decode_smem(GT, split_max, block_size);
    /* the merge's buffers alias the stages (a stage alone is larger) */
    size_t blocks = (size_t)split_max / (block_size > 0 ? block_size : 1) + 2;
    return (size_t)stages * DEC_STAGE_SLOTS * sizeof(int4) + blocks * sizeof(int);
}

int hk_decode_splits(hk_split *out, int seq, int row, int ctx, int split_len, int part0)
{
    int n = (ctx + split_len - 1) / split_len;
    for (int i = 0; i < n; i++) {
        int t0 = i * split_len, t1 = t0 + split_len < ctx ? t0 + split_len : ctx;
        out[i] = (hk_split){ seq, t0, t1, part0 + i, row, part0, n, 0 };
    }
    return n;
}

int hk_decode_split_len(int sm_count, int64_t total_ctx, int rows, int Hq, int Hkv)
{
    int64_t grid_y = Hq / hk_decode_heads_per_cta(Hq, Hkv);
    int64_t target = 2 * (int64_t)(sm_count > 0 ? sm_count : 80);
    int64_t len = (total_ctx * grid_y + target - 1) / target;
    len = (len + HK_SPLIT_MIN - 1) / HK_SPLIT_MIN * HK_SPLIT_MIN;
    if (len < HK_SPLIT_MIN) len = HK_SPLIT_MIN;
    if (len > (rows > 1 ? HK_SPLIT_ROWS_MAX : HK_SPLIT_MAX)) len = rows > 1 ? HK_SPLIT_ROWS_MAX : HK_SPLIT_MAX;
    return (int)len;
}

int hk_decode_ctas_per_sm(int Hq, int Hkv, int stages, int mma, int split_max, int block_size)
{
    const int GT = hk_decode_heads_per_cta(Hq, Hkv);
    const void *k = decode_kernel<__half>(GT, stages, mma);
    const size_t smem = hk_decode_smem_staged(GT, split_max, block_size, stages);
    int n = 0;
    if (!k || (stages && cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, DEC_THREADS, smem) != cudaSuccess)
        return 0;
    return n;
}

int hk_decode_split_len_wave(int sm_count, int ctas_per_sm, int ctx, int rows, int Hq, int Hkv, int stages)
{
    int64_t per_split = (int64_t)rows * (Hq / hk_decode_heads_per_cta(Hq, Hkv));
    int64_t splits = per_split > 0 ? (int64_t)ctas_per_sm * sm_count / per_split : 0;
    if (splits < 1 || ctx < 1) return 0;
    int64_t len = (ctx + splits - 1) / splits;
    len = (len + HK_SPLIT_MIN - 1) / HK_SPLIT_MIN * HK_SPLIT_MIN;
    return len <= (int64_t)HK_SPLIT_WAVE_MAX * (stages > 2 ? stages - 1 : 1) ? (int)len : 0;
}

int hk_decode_one_row_stages(int sm_count, int ctx, int Hq, int Hkv)
{
    for (int stages = HK_ONE_ROW_STAGES_MIN; stages <= HK_ONE_ROW_STAGES_MAX; stages++)
        if (hk_decode_split_len_wave(sm_count, 1, ctx, 1, Hq, Hkv, stages)) return stages;
    return 0;
}

cudaError_t hk_attention_decode(cudaStream_t s, const hk_paged_args *p)
{
    if (p->n_splits <= 0) return cudaSuccess;
    return p->t == HK_BF16 ? decode_t<__nv_bfloat16>(s, p) : decode_t<__half>(s, p);
}

} /* extern "C" */
