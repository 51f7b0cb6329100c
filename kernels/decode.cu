/* hyocr — the kernels of a decode step's tail: the greedy token choice with the
 * repetition penalty (so only ids leave the device) and the finite check. */
#include "hk-common.h"
#include <limits.h>
#include <math.h>

static __global__ void k_nonfinite(const void *x, int t, size_t n, int *flag)
{
    bool bad = false;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        bad |= !isfinite(hk_ld(x, t, i));
    if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1;
}

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
       int32_t *ids, int32_t *nonfinite, unsigned *ctr, PickPart *parts)
{
    __shared__ Cand sh[PICK_THREADS / 32];
    __shared__ int s_last;
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
    Cand best = { -INFINITY, INT_MAX, 0 };
    bool bad = false;
#pragma unroll
    for (int j = 0; j < PICK_PER_THREAD; j++) {
        int v = base + j * PICK_THREADS;
        if (v >= V) break;
        float y = l[j];
        bad |= !isfinite(y);
        if (pen && (set[v >> 5] >> (v & 31) & 1u))
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
        set[best.id >> 5] |= 1u << (best.id & 31);
        ctr[row] = 0;   /* ready for the next call */
    }
}

extern "C" {

cudaError_t hk_nonfinite(cudaStream_t s, const void *x, hk_dtype t, size_t n, int *flag)
{
    if (!n) return cudaSuccess;
    k_nonfinite<<<hk_grid_1d(n, 256) < 4096 ? hk_grid_1d(n, 256) : 4096, 256, 0, s>>>(x, (int)t, n, flag);
    return cudaGetLastError();
}

size_t hk_pick_work_bytes(int n, int V)
{
    size_t nc = ((size_t)V + PICK_CHUNK - 1) / PICK_CHUNK;
    return ((size_t)n * sizeof(unsigned) + 15) / 16 * 16 + (size_t)n * nc * sizeof(PickPart);
}

cudaError_t hk_pick_greedy(cudaStream_t s, const float *logits, int n, int V, uint32_t *seen, const int32_t *slots,
                           const float *penalties, int reciprocal, int32_t *ids, int32_t *nonfinite, void *work)
{
    if (n <= 0 || V <= 0) return cudaSuccess;
    unsigned nc = (unsigned)((V + PICK_CHUNK - 1) / PICK_CHUNK);
    unsigned *ctr = (unsigned *)work;
    PickPart *parts = (PickPart *)((uint8_t *)work + ((size_t)n * sizeof(unsigned) + 15) / 16 * 16);
    k_pick<<<dim3(nc, (unsigned)n), PICK_THREADS, 0, s>>>(logits, V, seen, slots, penalties, reciprocal, ids,
                                                          nonfinite, ctr, parts);
    return cudaGetLastError();
}

} /* extern "C" */
