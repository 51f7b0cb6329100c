/* hyocr — the token choice at the end of a decode step: the repetition penalty,
 * then the argmax (greedy) or a draw with temperature / top-k / top-p, so only
 * ids leave the device. */
#include "hk-common.h"
#include <limits.h>
#include <math.h>

/* A candidate of the argmax: torch.argmax order (a NaN beats every number, then
 * the larger value, then the lower id). */
struct Cand {
    float v;
    int   id;
    int   nan;
};

__device__ __forceinline__ bool cand_better(const Cand &a, const Cand &b)
{
    if (a.nan != b.nan) return a.nan;
    if (!a.nan && a.v != b.v) return a.v > b.v;
    return a.id < b.id;
}

__device__ __forceinline__ Cand cand_shfl(const Cand &c, int o)
{
    Cand r;
    r.v = __shfl_xor_sync(0xffffffffu, c.v, o);
    r.id = __shfl_xor_sync(0xffffffffu, c.id, o);
    r.nan = __shfl_xor_sync(0xffffffffu, c.nan, o);
    return r;
}

#define PICK_THREADS 256
#define PICK_PER_THREAD 16
#define PICK_CHUNK (PICK_THREADS * PICK_PER_THREAD)
#define PICK_MAX_EXTRA 64   /* a verify block's tokens before a row (HYOCR_DFLASH_MAX_BLOCK) */
/* The election counters sit at the start of the work area for this many rows, whatever the
 * call's row count, so a call of n rows never finds another call's partials (left where its
 * counters are) in place of zeroed counters: each call leaves its own counters zero. */
#define PICK_CTR_ROWS 8192

/* A verify row's penalty set beyond its slot: the tokens its block's rows before it fed
 * (step_ids[first + 1 .. row]). Loaded by the whole CTA; *n = −1 for a plain row. */
__device__ void load_extra(const int32_t *first, const int32_t *step_ids, int row, int *ex, int *n)
{
    const int f = first ? first[row] : -1;
    const int k = f >= 0 ? min(row - f, PICK_MAX_EXTRA) : -1;
    for (int i = threadIdx.x; i < k; i += blockDim.x) ex[i] = step_ids[f + 1 + i];
    if (threadIdx.x == 0) *n = k;
    __syncthreads();
}

__device__ __forceinline__ bool in_extra(const int *ex, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (ex[i] == v) return true;
    return false;
}

struct PickPart {
    Cand c;
    int  bad;
};

__device__ Cand pick_block_best(Cand best, Cand *sh)
{
    for (int o = 16; o > 0; o >>= 1) {
        Cand other = cand_shfl(best, o);
        if (cand_better(other, best)) best = other;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = best;
    __syncthreads();
    if (warp == 0) {
        best = lane < PICK_THREADS / 32 ? sh[lane] : Cand{ -INFINITY, INT_MAX, 0 };
        for (int o = 16; o > 0; o >>= 1) {
            Cand other = cand_shfl(best, o);
            if (cand_better(other, best)) best = other;
        }
    }
    return best;   /* valid in thread 0 */
}

/* Grid (chunks, rows): each CTA takes PICK_CHUNK logits of a row with all its
 * loads in flight at once, leaves its best in parts; the row's last CTA to finish
 * (elected through ctr, which it leaves zero) merges them. The rounding of the
 * penalty is spelled out (_rn intrinsics) so it matches torch whatever the flags. */
static __global__ void __launch_bounds__(PICK_THREADS)
k_pick(const float *logits, int V, uint32_t *seen, const int32_t *slots, const float *penalties, int reciprocal,
       const hk_draw *draws, int32_t *ids, int32_t *nonfinite, unsigned *ctr, PickPart *parts, const int32_t *first,
       const int32_t *step_ids)
{
    __shared__ Cand sh[PICK_THREADS / 32];
    __shared__ int s_last, ex[PICK_MAX_EXTRA], n_ex;
    const int row = blockIdx.y, nc = gridDim.x, words = (V + 31) / 32;
    const float *x = logits + (size_t)row * V;
    uint32_t *set = seen + (size_t)slots[row] * words;
    const float p = penalties[row];
    const bool pen = isfinite(p) && p > 0.0f && p != 1.0f;
    const float inv = __frcp_rn(p);
    const int base = blockIdx.x * PICK_CHUNK + threadIdx.x;
    float l[PICK_PER_THREAD];
#pragma unroll
    for (int j = 0; j < PICK_PER_THREAD; j++) {
        int v = base + j * PICK_THREADS;
        l[j] = v < V ? __ldg(x + v) : -INFINITY;
    }
    load_extra(first, step_ids, row, ex, &n_ex);
    const int nx = n_ex;
    Cand best = { -INFINITY, INT_MAX, 0 };
    bool bad = false;
#pragma unroll
    for (int j = 0; j < PICK_PER_THREAD; j++) {
        int v = base + j * PICK_THREADS;
        if (v >= V) break;
        float y = l[j];
        bad |= !isfinite(y);
        if (pen && ((set[v >> 5] >> (v & 31) & 1u) || (nx > 0 && in_extra(ex, nx, v))))
            y = y < 0.0f ? __fmul_rn(y, p) : reciprocal ? __fmul_rn(y, inv) : __fdiv_rn(y, p);
        Cand c = { y, v, y != y };
        if (cand_better(c, best)) best = c;
    }
    int any_bad = __syncthreads_or(bad);
    best = pick_block_best(best, sh);
    if (threadIdx.x == 0) {
        parts[(size_t)row * nc + blockIdx.x] = PickPart{ best, any_bad };
        __threadfence();
        s_last = atomicAdd(&ctr[row], 1u) == (unsigned)nc - 1;
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    best = Cand{ -INFINITY, INT_MAX, 0 };
    bad = false;
    for (int c = threadIdx.x; c < nc; c += PICK_THREADS) {
        const PickPart *pp = &parts[(size_t)row * nc + c];   /* other CTAs wrote it: past L1 */
        PickPart q;
        q.c.v = __ldcg(&pp->c.v);
        q.c.id = __ldcg(&pp->c.id);
        q.c.nan = __ldcg(&pp->c.nan);
        q.bad = __ldcg(&pp->bad);
        bad |= q.bad != 0;
        if (cand_better(q.c, best)) best = q.c;
    }
    any_bad = __syncthreads_or(bad);
    best = pick_block_best(best, sh);
    if (threadIdx.x == 0) {
        ids[row] = best.id;
        nonfinite[row] = any_bad;
        /* a sampled row's bit is k_sample's to set; a verify row's, the host's */
        if (nx < 0 && (!draws || !(draws[row].temperature > 0.0f && isfinite(draws[row].temperature))))
            set[best.id >> 5] |= 1u << (best.id & 31);
        ctr[row] = 0;   /* ready for the next call */
    }
}

/* ---- sampling: one CTA per row ----
 * The host sampler's rules (sampler.c, hyocr_sampler_draw) without sorting: the
 * k-th largest value (top-k) and the top-p border are found by radix selection on
 * the values' ordered bit patterns, 8 bits per pass. Weights exp(v - max) are
 * computed once (fp32) and counted in fixed point (2^-40 units, at most 2^40 · V
 * in a sum), so every sum, histogram and scan is an integer one: the same logits
 * give the same token on every run, whatever order the threads add in. Passes
 * whose order does not matter stride over the row (coalesced); the last ones walk
 * each thread's contiguous slice, so the ids are visited upwards with u·Z as the
 * target, as on the host. */
#define SAMPLE_THREADS 1024
#define SAMPLE_ONE 1099511627776.0f   /* 2^40 */

__device__ __forceinline__ uint32_t okey(float v)
{
    uint32_t u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

__device__ __forceinline__ unsigned long long wfix(float w)
{
    return (unsigned long long)(w * SAMPLE_ONE);
}

struct SampleSh {
    unsigned long long hist_m[256];
    unsigned           hist_c[256];
    unsigned long long warp_ull[SAMPLE_THREADS / 32];
    float              warp_f[SAMPLE_THREADS / 32];
    uint32_t           prefix;
    unsigned long long above;
};

/* Exclusive prefix over the block in thread order; *total gets the sum. */
__device__ unsigned long long sample_scan(unsigned long long x, unsigned long long *total, SampleSh *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned long long inc = x;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned long long y = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o) inc += y;
    }
    __syncthreads();
    if (lane == 31) sh->warp_ull[warp] = inc;
    __syncthreads();
    unsigned long long before = 0, all = 0;
    for (int w = 0; w < SAMPLE_THREADS / 32; w++) {
        unsigned long long t = sh->warp_ull[w];
        if (w < warp) before += t;
        all += t;
    }
    *total = all;
    return before + inc - x;
}

__device__ float sample_max(float v, SampleSh *sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = hk_warp_max(v);
    __syncthreads();
    if (lane == 0) sh->warp_f[warp] = v;
    __syncthreads();
    float r = -INFINITY;
    for (int w = 0; w < SAMPLE_THREADS / 32; w++) r = fmaxf(r, sh->warp_f[w]);
    return r;
}

/* The largest key K with the count (w NULL) or the mass of the candidates
 * (key ≥ lo) with key ≥ K reaching need. *above = their mass with key > K. */
__device__ uint32_t sample_select(const float *v, const float *w, int V, uint32_t lo, double need,
                                  unsigned long long *above, SampleSh *sh)
{
    uint32_t prefix = 0, mask = 0;
    unsigned long long acc = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += SAMPLE_THREADS) {
            sh->hist_m[b] = 0;
            sh->hist_c[b] = 0;
        }
        __syncthreads();
        /* Most values share their top bits, so the first passes would pile every
         * thread's atomics onto one or two bins: each thread sums runs of equal bins
         * in registers and adds once per run instead. */
        int run_b = -1;
        unsigned long long run = 0;
        for (int i = threadIdx.x; i < V; i += SAMPLE_THREADS) {
            float x = v[i];
            uint32_t k = okey(x);
            if (x == -INFINITY || k < lo || (k & mask) != prefix) continue;
            int b = (k >> shift) & 255;
            if (b != run_b) {
                if (run) w ? (void)atomicAdd(&sh->hist_m[run_b], run) : (void)atomicAdd(&sh->hist_c[run_b], (unsigned)run);
                run_b = b;
                run = 0;
            }
            run += w ? wfix(w[i]) : 1u;
        }
        if (run) w ? (void)atomicAdd(&sh->hist_m[run_b], run) : (void)atomicAdd(&sh->hist_c[run_b], (unsigned)run);
        __syncthreads();
        if (threadIdx.x == 0) {
            int digit = -1, low = 0;
            for (int b = 255; b >= 0; b--) {
                unsigned long long h = w ? sh->hist_m[b] : sh->hist_c[b];
                if (!h) continue;
                low = b;
                if ((double)(acc + h) >= need) { digit = b; break; }
                acc += h;
            }
            if (digit < 0) {   /* rounding left the target unreached: keep everything */
                digit = low;
                acc -= w ? sh->hist_m[low] : sh->hist_c[low];
            }
            sh->prefix = prefix | (uint32_t)digit << shift;
            sh->above = acc;
        }
        __syncthreads();
        prefix = sh->prefix;
        acc = sh->above;
        mask |= 255u << shift;
        __syncthreads();
    }
    *above = acc;
    return prefix;
}

/* Kept after top-k (lo) and top-p (border; ties at it kept while the mass before
 * them, *t running in id order, stays below need). */
__device__ __forceinline__ bool sample_kept(float x, float wt, uint32_t lo, bool top_p, uint32_t border,
                                            unsigned long long above, double need, unsigned long long *t)
{
    if (x == -INFINITY) return false;
    uint32_t k = okey(x);
    if (k < lo || (top_p && k < border)) return false;
    if (!top_p || k != border) return true;
    bool keep = (double)(above + *t) < need;
    *t += wfix(wt);
    return keep;
}

static __global__ void __launch_bounds__(SAMPLE_THREADS)
k_sample(const float *logits, int V, uint32_t *seen, const int32_t *slots, const float *penalties, int reciprocal,
         const hk_draw *draws, int32_t *ids, float *work, const int32_t *first, const int32_t *step_ids)
{
    __shared__ SampleSh sh;
    __shared__ int ex[PICK_MAX_EXTRA], n_ex;
    const int row = blockIdx.x;
    const hk_draw d = draws[row];
    if (!(d.temperature > 0.0f && isfinite(d.temperature))) return;
    load_extra(first, step_ids, row, ex, &n_ex);
    const int nx = n_ex;
    const bool mark = nx < 0;   /* a verify row's choice is the host's to add */
    uint32_t *set = seen + (size_t)slots[row] * ((V + 31) / 32);
    const float *x = logits + (size_t)row * V;
    float *v = work + (size_t)row * 2 * V, *w = v + V;
    const float p = penalties[row], pinv = __frcp_rn(p), tinv = __frcp_rn(d.temperature);
    const bool pen = isfinite(p) && p > 0.0f && p != 1.0f;

    /* penalty, temperature; NaN and -inf can never be drawn: -inf marks both */
    float mx = -INFINITY;
    unsigned long long cnt = 0;
    for (int i = threadIdx.x; i < V; i += SAMPLE_THREADS) {
        float y = x[i];
        if (pen && ((set[i >> 5] >> (i & 31) & 1u) || (nx > 0 && in_extra(ex, nx, i))))
            y = y < 0.0f ? __fmul_rn(y, p) : reciprocal ? __fmul_rn(y, pinv) : __fdiv_rn(y, p);
        if (d.temperature != 1.0f) y = __fmul_rn(y, tinv);
        if (y != y) y = -INFINITY;
        v[i] = y;
        mx = fmaxf(mx, y);
        cnt += y != -INFINITY;
    }
    mx = sample_max(mx, &sh);
    unsigned long long n_ok;
    sample_scan(cnt, &n_ok, &sh);
    if (n_ok == 0) {   /* nothing drawable: the argmax k_pick left stays */
        if (threadIdx.x == 0 && mark) set[ids[row] >> 5] |= 1u << (ids[row] & 31);
        return;
    }
    /* v == mx also keeps a +inf maximum finite (weight 1) */
    for (int i = threadIdx.x; i < V; i += SAMPLE_THREADS) {
        float y = v[i];
        w[i] = y == -INFINITY ? 0.0f : y == mx ? 1.0f : expf(y - mx);
    }
    __syncthreads();
    unsigned long long above = 0;
    uint32_t lo = okey(-INFINITY) + 1;
    if (d.top_k > 0 && (unsigned long long)d.top_k < n_ok) lo = sample_select(v, NULL, V, lo, d.top_k, &above, &sh);

    uint32_t border = 0;
    double need = 0.0;
    const bool top_p = d.top_p > 0.0f && d.top_p < 1.0f;
    if (top_p) {
        unsigned long long z = 0, z_all;
        for (int i = threadIdx.x; i < V; i += SAMPLE_THREADS)
            if (v[i] != -INFINITY && okey(v[i]) >= lo) z += wfix(w[i]);
        sample_scan(z, &z_all, &sh);
        need = (double)d.top_p * (double)z_all;
        border = sample_select(v, w, V, lo, need, &above, &sh);
    }

    /* From here each thread walks its own slice of ids, in order. */
    const int per = (V + SAMPLE_THREADS - 1) / SAMPLE_THREADS;
    const int i0 = min(V, (int)threadIdx.x * per), i1 = min(V, i0 + per);
    unsigned long long tied = 0, tied_before = 0, tied_all;
    if (top_p) {
        for (int i = i0; i < i1; i++)
            if (v[i] != -INFINITY && okey(v[i]) == border) tied += wfix(w[i]);
        tied_before = sample_scan(tied, &tied_all, &sh);
    }
    unsigned long long kept = 0, t = tied_before;
    for (int i = i0; i < i1; i++)
        if (sample_kept(v[i], w[i], lo, top_p, border, above, need, &t)) kept += wfix(w[i]);
    unsigned long long z_kept;
    unsigned long long before = sample_scan(kept, &z_kept, &sh);
    unsigned long long target = (unsigned long long)(d.u * (double)z_kept);
    if (target >= z_kept) target = z_kept - 1;
    if (target < before || target >= before + kept) return;   /* another thread's slice */
    unsigned long long acc = before;
    t = tied_before;
    for (int i = i0; i < i1; i++) {
        if (!sample_kept(v[i], w[i], lo, top_p, border, above, need, &t)) continue;
        acc += wfix(w[i]);
        if (target < acc) {
            ids[row] = i;
            if (mark) set[i >> 5] |= 1u << (i & 31);
            return;
        }
    }
}

/* ---- log-probabilities of the raw rows (the host's rules: sampler.c,
 * hyocr_sampler_logprobs), for the rows that ask, after k_pick chose their ids ----
 * k_lp_part: each CTA takes PICK_CHUNK logits of a row and keeps their maximum, the sum of
 * exp(l − that maximum) in double, and its n_top largest (ties: the lower id) in order;
 * k_lp_merge: one CTA a row folds the chunks (each sum scaled to the row's maximum) into
 * log-sum-exp, then the chosen id's and the top ids' l − lse. Only the order of the double
 * additions differs from the host's. */
struct LpPart {
    double sum;
    float  mx;
    int    n;
    int    id[HK_TOP_LOGPROBS_MAX];
    float  v[HK_TOP_LOGPROBS_MAX];
};

__device__ double block_sum_d(double x, double *sh)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = x;
    __syncthreads();
    double r = 0.0;
    for (int w = 0; w < (int)blockDim.x / 32; w++) r += sh[w];
    return r;
}

/* The block's best candidate, in every thread (pick_block_best leaves it in thread 0). */
__device__ Cand block_best_all(Cand c, Cand *sh, Cand *out)
{
    c = pick_block_best(c, sh);
    if (threadIdx.x == 0) *out = c;
    __syncthreads();
    return *out;
}

static __global__ void __launch_bounds__(PICK_THREADS)
k_lp_part(const float *logits, int V, const int32_t *n_top, LpPart *parts)
{
    __shared__ Cand sh[PICK_THREADS / 32], s_best;
    __shared__ float shf[32];
    __shared__ double shd[PICK_THREADS / 32];
    const int row = blockIdx.y, k = n_top[row];
    if (k < 0) return;
    const float *x = logits + (size_t)row * V;
    const int base = blockIdx.x * PICK_CHUNK + threadIdx.x;
    float l[PICK_PER_THREAD];
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < PICK_PER_THREAD; j++) {
        int v = base + j * PICK_THREADS;
        l[j] = v < V ? __ldg(x + v) : -INFINITY;
        mx = fmaxf(mx, l[j]);
    }
    mx = hk_block_max(mx, shf);
    double sum = 0.0;
    if (mx != -INFINITY) {   /* else every term is exp(−inf − −inf): the chunk adds nothing */
#pragma unroll
        for (int j = 0; j < PICK_PER_THREAD; j++)
            if (base + j * PICK_THREADS < V) sum += exp((double)l[j] - (double)mx);
    }
    sum = block_sum_d(sum, shd);
    LpPart *out = &parts[(size_t)row * gridDim.x + blockIdx.x];
    unsigned taken = 0;
    int got = 0;
    for (; got < k; got++) {
        Cand best = { -INFINITY, INT_MAX, 0 };
#pragma unroll
        for (int j = 0; j < PICK_PER_THREAD; j++) {
            int v = base + j * PICK_THREADS;
            Cand c = { l[j], v, 0 };
            if (v < V && !(taken >> j & 1u) && cand_better(c, best)) best = c;
        }
        best = block_best_all(best, sh, &s_best);
        if (best.id == INT_MAX) break;   /* the chunk has fewer ids than k */
        const int off = best.id - blockIdx.x * PICK_CHUNK;
        if (off % PICK_THREADS == (int)threadIdx.x) taken |= 1u << (off / PICK_THREADS);
        if (threadIdx.x == 0) {
            out->id[got] = best.id;
            out->v[got] = best.v;
        }
    }
    if (threadIdx.x == 0) {
        out->sum = sum;
        out->mx = mx;
        out->n = got;
    }
}

#define LP_MERGE_THREADS 256
static __global__ void __launch_bounds__(LP_MERGE_THREADS)
k_lp_merge(const float *logits, int V, const int32_t *n_top, const int32_t *ids, int nc, const LpPart *parts,
           hk_token_logprobs *out)
{
    __shared__ Cand sh[LP_MERGE_THREADS / 32], s_best;
    __shared__ float shf[32];
    __shared__ double shd[LP_MERGE_THREADS / 32];
    const int row = blockIdx.x, k = n_top[row], c = threadIdx.x;
    if (k < 0) return;
    const LpPart *p = parts + (size_t)row * nc;
    const float mx = hk_block_max(c < nc ? p[c].mx : -INFINITY, shf);
    double part = 0.0;
    if (c < nc && p[c].mx != -INFINITY) part = p[c].sum * exp((double)p[c].mx - (double)mx);
    const double lse = (double)mx + log(block_sum_d(part, shd));
    hk_token_logprobs *o = &out[row];
    int head = 0, got = 0;
    for (; got < k; got++) {
        Cand mine = { -INFINITY, INT_MAX, 0 };
        if (c < nc && head < p[c].n) mine = Cand{ p[c].v[head], p[c].id[head], 0 };
        Cand best = block_best_all(mine, sh, &s_best);
        if (best.id == INT_MAX) break;
        if (mine.id == best.id && c < nc && head < p[c].n) head++;
        if (c == 0) {
            o->top[got].id = best.id;
            o->top[got].logprob = (float)((double)best.v - lse);
        }
    }
    if (c == 0) {
        o->logprob = (float)((double)logits[(size_t)row * V + ids[row]] - lse);
        o->n_top = got;
    }
    if (c >= got && c < HK_TOP_LOGPROBS_MAX) {   /* the unused entries as the host leaves them */
        o->top[c].id = 0;
        o->top[c].logprob = 0.0f;
    }
}

/* The draft's proposals: one CTA of 1024 threads per row, four loads in flight a thread, the
 * candidates in torch.argmax order. */
#define ARGMAX_THREADS 1024
static __global__ void __launch_bounds__(ARGMAX_THREADS) k_argmax(const float *x, int V, int32_t *out)
{
    __shared__ Cand sh[ARGMAX_THREADS / 32];
    const float *r = x + (size_t)blockIdx.x * V;
    Cand best = { -INFINITY, INT_MAX, 0 };
    for (int v0 = threadIdx.x; v0 < V; v0 += 4 * ARGMAX_THREADS) {
        float y[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int v = v0 + u * ARGMAX_THREADS;
            y[u] = v < V ? __ldg(r + v) : -INFINITY;
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int v = v0 + u * ARGMAX_THREADS;
            Cand c = { y[u], v < V ? v : INT_MAX, y[u] != y[u] };
            if (cand_better(c, best)) best = c;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        Cand other = cand_shfl(best, o);
        if (cand_better(other, best)) best = other;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sh[warp] = best;
    __syncthreads();
    if (warp == 0) {
        best = sh[lane];   /* 32 warps: one candidate a lane */
        for (int o = 16; o > 0; o >>= 1) {
            Cand other = cand_shfl(best, o);
            if (cand_better(other, best)) best = other;
        }
        if (lane == 0) out[blockIdx.x] = best.id;
    }
}

extern "C" {

size_t hk_pick_work_bytes(int n, int V)
{
    size_t nc = ((size_t)V + PICK_CHUNK - 1) / PICK_CHUNK;
    return (size_t)PICK_CTR_ROWS * sizeof(unsigned) + (size_t)n * nc * sizeof(PickPart);
}

size_t hk_sample_work_bytes(int n, int V)
{
    return (size_t)n * 2 * V * sizeof(float);
}

cudaError_t hk_pick(cudaStream_t s, const float *logits, int n, int V, uint32_t *seen, const int32_t *slots,
                    const float *penalties, const hk_draw *draws, int reciprocal, int32_t *ids, int32_t *nonfinite,
                    void *work, float *sample_work, const int32_t *first, const int32_t *step_ids)
{
    if (n <= 0 || V <= 0) return cudaSuccess;
    if (n > PICK_CTR_ROWS) return cudaErrorInvalidValue;
    unsigned nc = (unsigned)((V + PICK_CHUNK - 1) / PICK_CHUNK);
    unsigned *ctr = (unsigned *)work;
    PickPart *parts = (PickPart *)((uint8_t *)work + (size_t)PICK_CTR_ROWS * sizeof(unsigned));
    k_pick<<<dim3(nc, (unsigned)n), PICK_THREADS, 0, s>>>(logits, V, seen, slots, penalties, reciprocal, draws, ids,
                                                          nonfinite, ctr, parts, first, step_ids);
    if (draws && sample_work)
        k_sample<<<(unsigned)n, SAMPLE_THREADS, 0, s>>>(logits, V, seen, slots, penalties, reciprocal, draws, ids,
                                                        sample_work, first, step_ids);
    return cudaGetLastError();
}

size_t hk_logprobs_work_bytes(int n, int V)
{
    size_t nc = ((size_t)V + PICK_CHUNK - 1) / PICK_CHUNK;
    return (size_t)n * nc * sizeof(LpPart);
}

cudaError_t hk_logprobs(cudaStream_t s, const float *logits, int n, int V, const int32_t *n_top, const int32_t *ids,
                        void *work, hk_token_logprobs *out)
{
    if (n <= 0 || V <= 0) return cudaSuccess;
    unsigned nc = (unsigned)((V + PICK_CHUNK - 1) / PICK_CHUNK);
    if (nc > LP_MERGE_THREADS) return cudaErrorInvalidValue;
    LpPart *parts = (LpPart *)work;
    k_lp_part<<<dim3(nc, (unsigned)n), PICK_THREADS, 0, s>>>(logits, V, n_top, parts);
    k_lp_merge<<<(unsigned)n, LP_MERGE_THREADS, 0, s>>>(logits, V, n_top, ids, (int)nc, parts, out);
    return cudaGetLastError();
}

cudaError_t hk_argmax(cudaStream_t s, const float *x, int n, int V, int32_t *out)
{
    if (n <= 0 || V <= 0) return cudaSuccess;
    k_argmax<<<(unsigned)n, ARGMAX_THREADS, 0, s>>>(x, V, out);
    return cudaGetLastError();
}

} /* extern "C" */
