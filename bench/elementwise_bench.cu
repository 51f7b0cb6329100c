/* hyocr — the memory-bound passes of the prefill and the vision tower (issue 17): each kernel as
 * it was before (copied here) against the tree's (kernels/elementwise.cu through its hk_* entry
 * point), at the shapes of a 2048² page: the prefill's 1024-row chunks and its 4191 rows in one
 * pass (hidden 1024, q|k|v 4096 wide with 16 + 8 + 8 heads of 128, intermediate 3584), the
 * vision tower's 16384 rows × 1152 and its GELU over 16384 × 4304. Prints, per kernel, µs a call
 * (median of 50), the rate over the bytes each call really moves (the fp32 residual counted at 4
 * bytes) and max |Δ| between the old and the new output on the same input (0 where the new
 * kernel keeps the old one's arithmetic); the one-row rows are a decode step's calls (their µs is
 * latency). The rows "N heads a block" time rope_qknorm's launch for 1, 4 and 16 rows with a
 * row's heads spread over blocks of N (HYOCR_ROPE_HEADS; old = a row a block), the same bits
 * expected (the exit status is 1 if not). Build and run (GPU machine):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/elementwise_bench.cu \
 *       -o /tmp/elementwise-bench && /tmp/elementwise-bench */
#include "../kernels/elementwise.cu"
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

/* elementwise.cu's probe reaches the vision attention; nothing here calls it. */
extern "C" cudaError_t hk_vision_probe(cudaStream_t s, int *wgmma)
{
    *wgmma = 0;
    return cudaSuccess;
}

/* ---- the kernels as they were (git show 2e0e70c:kernels/elementwise.cu) ---- */

template <int V>
static __global__ void old_add_norm_warp(void *out, int ot, void *res, int rt, const void *delta, int dlt,
                                         const void *w, int wt, const void *b, int bt, int M, int N, float eps,
                                         int layernorm, int round_t)
{
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= M) return;
    const int nv = N >> 2;
    const size_t base = (size_t)row * nv;
    float4 v[V];
    float sum = 0.0f, sq = 0.0f;
#pragma unroll
    for (int k = 0; k < V; k++) {
        int c = lane + 32 * k;
        v[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (c >= nv) continue;
        float4 r = hk_ld4(res, rt, base + c);
        if (delta) {
            float4 d = hk_ld4(delta, dlt, base + c);
            r.x = hk_round(r.x + d.x, rt);
            r.y = hk_round(r.y + d.y, rt);
            r.z = hk_round(r.z + d.z, rt);
            r.w = hk_round(r.w + d.w, rt);
            hk_st4(res, rt, base + c, r);
        }
        v[k] = r;
        sum += (r.x + r.y) + (r.z + r.w);
        sq = __fadd_rn(sq, hk_sq4(r));
    }
    if (layernorm) {
        float mean = hk_warp_sum(sum) / N, var = 0.0f;
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (lane + 32 * k >= nv) continue;
            float a = v[k].x - mean, bb = v[k].y - mean, c = v[k].z - mean, d = v[k].w - mean;
            var += (a * a + bb * bb) + (c * c + d * d);
        }
        float rstd = rsqrtf(hk_warp_sum(var) / N + eps);
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = lane + 32 * k;
            if (c >= nv) continue;
            float4 g = hk_ld4(w, wt, c), bb = b ? hk_ld4(b, bt, c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f), o;
            o.x = (v[k].x - mean) * rstd * g.x;
            o.y = (v[k].y - mean) * rstd * g.y;
            o.z = (v[k].z - mean) * rstd * g.z;
            o.w = (v[k].w - mean) * rstd * g.w;
            if (b) {
                o.x += bb.x;
                o.y += bb.y;
                o.z += bb.z;
                o.w += bb.w;
            }
            hk_st4(out, ot, base + c, o);
        }
    } else {
        float rstd = rsqrtf(hk_warp_sum(sq) / N + eps);
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = lane + 32 * k;
            if (c >= nv) continue;
            float4 g = hk_ld4(w, wt, c), o;
            o.x = hk_round(v[k].x * rstd, round_t) * g.x;
            o.y = hk_round(v[k].y * rstd, round_t) * g.y;
            o.z = hk_round(v[k].z * rstd, round_t) * g.z;
            o.w = hk_round(v[k].w * rstd, round_t) * g.w;
            hk_st4(out, ot, base + c, o);
        }
    }
}

static cudaError_t old_add_norm(cudaStream_t s, void *out, hk_dtype ot, void *res, hk_dtype rt, const void *delta,
                                hk_dtype dlt, const void *w, hk_dtype wt, const void *b, hk_dtype bt, int M, int N,
                                float eps, int layernorm, hk_dtype round_t)
{
    unsigned blocks = (unsigned)((M + 3) / 4);
    int v = (N + 127) / 128;
    if (v == 8)
        old_add_norm_warp<8><<<blocks, 128, 0, s>>>(out, ot, res, rt, delta, dlt, w, wt, b, bt, M, N, eps, layernorm,
                                                    round_t);
    else if (v == 9)
        old_add_norm_warp<9><<<blocks, 128, 0, s>>>(out, ot, res, rt, delta, dlt, w, wt, b, bt, M, N, eps, layernorm,
                                                    round_t);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

static __global__ void old_rope_qknorm_k(void *qkv, int t, int M, const int32_t *pos, int n_axes, int Hq, int Hkv,
                                         int D, hk_rope rope, const void *qn, int qnt, const void *kn, int knt,
                                         float eps)
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
    hk_rope_norm_heads<false>(qkv, t, row, Hq, Hkv, D, cs, sn, qn, qnt, kn, knt, eps);
}

/* GELU and SwiGLU as they were are k_gelu4 and k_swiglu4, still in elementwise.cu (the
 * launchers take them for widths a multiple of 4 but not of 8). */
static cudaError_t old_gelu(cudaStream_t s, void *x, hk_dtype xt, size_t n)
{
    k_gelu4<<<hk_grid_1d(n / 4, 256), 256, 0, s>>>(x, xt, n / 4);
    return cudaGetLastError();
}

static cudaError_t old_swiglu(cudaStream_t s, void *out, hk_dtype ot, const void *gu, hk_dtype gt, int M, int I)
{
    int I4 = I / 4;
    dim3 grid((unsigned)((I4 + 255) / 256), (unsigned)(M < 65535 ? M : 65535));
    k_swiglu4<<<grid, 256, 0, s>>>(out, ot, gu, gt, M, I4);
    return cudaGetLastError();
}

/* ---- harness ---- */

static __global__ void k_fill(void *p, int t, size_t n, uint32_t seed, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        hk_st(p, t, i, lo + (hi - lo) * (float)(h & 0xffffff) / 16777215.0f);
    }
}

static size_t tsize(hk_dtype t) { return t == HK_F32 ? 4 : 2; }

static void *dev(size_t n, hk_dtype t, uint32_t seed, float lo, float hi)
{
    void *p;
    CK(cudaMalloc(&p, n * tsize(t)));
    k_fill<<<1024, 256>>>(p, t, n, seed, lo, hi);
    CK(cudaGetLastError());
    return p;
}

static std::vector<float> host(const void *p, hk_dtype t, size_t n)
{
    std::vector<float> f(n);
    float *tmp;
    CK(cudaMalloc(&tmp, n * 4));
    CK(hk_convert(0, tmp, HK_F32, p, t, n));
    CK(cudaMemcpy(f.data(), tmp, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(tmp));
    return f;
}

static double max_diff(const std::vector<float> &a, const std::vector<float> &b)
{
    double m = 0.0;
    for (size_t i = 0; i < a.size(); i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d != d) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

template <typename F> static double time_us(F fn)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) CK(fn());
    std::vector<float> t(50);
    for (auto &x : t) {
        CK(cudaEventRecord(a));
        CK(fn());
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&x, a, b));
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[t.size() / 2] * 1e3;
}

static void row(const char *what, double bytes, double us_old, double us_new, double diff)
{
    printf("| %s | %.1f | %.1f → %.1f | %.2f → %.2f TB/s | %.2f× | %.3g |\n", what, bytes / 1e6, us_old, us_new,
           bytes / us_old * 1e-6, bytes / us_new * 1e-6, us_old / us_new, diff);
}

static const char *tname(hk_dtype t) { return t == HK_F16 ? "f16" : "bf16"; }

/* residual (fp32) += delta, out = norm(residual): the prefill's RMSNorm, the vision's LayerNorm. */
static void bench_norm(hk_dtype t, int M, int N, int layernorm)
{
    size_t n = (size_t)M * N;
    void *res0 = dev(n, HK_F32, 1, -3, 3), *delta = dev(n, t, 2, -2, 2), *w = dev(N, t, 3, 0.5f, 1.5f);
    void *b = layernorm ? dev(N, t, 4, -0.5f, 0.5f) : NULL;
    void *res, *out[2];
    CK(cudaMalloc(&res, n * 4));
    CK(cudaMalloc(&out[0], n * 2));
    CK(cudaMalloc(&out[1], n * 2));
    std::vector<float> r[2], o[2];
    for (int v = 0; v < 2; v++) {
        CK(cudaMemcpy(res, res0, n * 4, cudaMemcpyDeviceToDevice));
        CK(v ? hk_add_norm(0, out[v], t, res, HK_F32, delta, t, w, t, b, t, M, N, 1e-6f, layernorm, t)
             : old_add_norm(0, out[v], t, res, HK_F32, delta, t, w, t, b, t, M, N, 1e-6f, layernorm, t));
        r[v] = host(res, HK_F32, n);
        o[v] = host(out[v], t, n);
    }
    double d = std::max(max_diff(r[0], r[1]), max_diff(o[0], o[1]));
    /* timed with the residual add each call (it grows; the rate does not care) */
    double us0 = time_us([&] { return old_add_norm(0, out[0], t, res, HK_F32, delta, t, w, t, b, t, M, N, 1e-6f,
                                                   layernorm, t); });
    double us1 = time_us([&] { return hk_add_norm(0, out[1], t, res, HK_F32, delta, t, w, t, b, t, M, N, 1e-6f,
                                                  layernorm, t); });
    char what[128];
    snprintf(what, sizeof what, "%s %d × %d (%s)", layernorm ? "add + LayerNorm" : "add + RMSNorm", M, N, tname(t));
    row(what, (double)n * (4 + 4 + 2 + 2), us0, us1, d);
    for (void *p : { res0, delta, w, b, res, out[0], out[1] }) cudaFree(p);
}

static void bench_rope(hk_dtype t, int M)
{
    const int Hq = 16, Hkv = 8, D = 128, W = (Hq + 2 * Hkv) * D;
    size_t n = (size_t)M * W;
    void *x0 = dev(n, t, 5, -3, 3), *qn = dev(D, t, 6, 0.5f, 1.5f), *kn = dev(D, t, 7, 0.5f, 1.5f), *x;
    CK(cudaMalloc(&x, n * 2));
    hk_rope rope;
    memset(&rope, 0, sizeof rope);
    for (int i = 0; i < D / 2; i++) rope.inv_freq[i] = powf(10000.0f, -2.0f * i / D);
    for (int i = 0; i < D; i++) rope.axis[i] = (uint8_t)((i % (D / 2)) / 16);   /* 4 sections of 16 pairs */
    std::vector<int32_t> hp((size_t)4 * M);
    for (size_t i = 0; i < hp.size(); i++) hp[i] = (int32_t)((i * 7919u) % 4200u);
    int32_t *pos;
    CK(cudaMalloc(&pos, hp.size() * 4));
    CK(cudaMemcpy(pos, hp.data(), hp.size() * 4, cudaMemcpyHostToDevice));
    auto old_fn = [&] {
        old_rope_qknorm_k<<<M, 256>>>(x, t, M, pos, 4, Hq, Hkv, D, rope, qn, t, kn, t, 1e-6f);
        return cudaGetLastError();
    };
    auto new_fn = [&] { return hk_rope_qknorm(0, x, t, M, pos, 4, Hq, Hkv, D, &rope, qn, t, kn, t, 1e-6f, 0, 0); };
    std::vector<float> o[2];
    for (int v = 0; v < 2; v++) {
        CK(cudaMemcpy(x, x0, n * 2, cudaMemcpyDeviceToDevice));
        CK(v ? new_fn() : old_fn());
        o[v] = host(x, t, n);
    }
    double d = max_diff(o[0], o[1]);
    double us0 = time_us(old_fn), us1 = time_us(new_fn);
    char what[128];
    snprintf(what, sizeof what, "RoPE + QK-norm %d rows (%s)", M, tname(t));
    row(what, (double)M * (Hq + Hkv) * D * 2 * 2, us0, us1, d);
    for (void *p : { x0, qn, kn, x }) cudaFree(p);
    cudaFree(pos);
}

static bool g_spread_bad;

/* A decode step's rope_qknorm: a row a block (the before) against the heads spread over
 * blocks of hpc (HYOCR_ROPE_HEADS); the same bits expected. */
static void bench_rope_spread(hk_dtype t, int M, int hpc)
{
    const int Hq = 16, Hkv = 8, D = 128, W = (Hq + 2 * Hkv) * D;
    size_t n = (size_t)M * W;
    void *x0 = dev(n, t, 5, -3, 3), *qn = dev(D, t, 6, 0.5f, 1.5f), *kn = dev(D, t, 7, 0.5f, 1.5f), *x;
    CK(cudaMalloc(&x, n * 2));
    hk_rope rope;
    memset(&rope, 0, sizeof rope);
    for (int i = 0; i < D / 2; i++) rope.inv_freq[i] = powf(10000.0f, -2.0f * i / D);
    std::vector<int32_t> hp((size_t)M);
    for (size_t i = 0; i < hp.size(); i++) hp[i] = (int32_t)(1087 + i * 37);
    int32_t *pos;
    CK(cudaMalloc(&pos, hp.size() * 4));
    CK(cudaMemcpy(pos, hp.data(), hp.size() * 4, cudaMemcpyHostToDevice));
    auto fn = [&](int h) { return hk_rope_qknorm(0, x, t, M, pos, 1, Hq, Hkv, D, &rope, qn, t, kn, t, 1e-6f, 0, h); };
    std::vector<float> o[2];
    for (int v = 0; v < 2; v++) {
        CK(cudaMemcpy(x, x0, n * 2, cudaMemcpyDeviceToDevice));
        CK(fn(v ? hpc : 0));
        o[v] = host(x, t, n);
    }
    double d = max_diff(o[0], o[1]);
    double us0 = time_us([&] { return fn(0); }), us1 = time_us([&] { return fn(hpc); });
    char what[128];
    snprintf(what, sizeof what, "RoPE + QK-norm %d rows, %d heads a block (%s)", M, hpc, tname(t));
    row(what, (double)M * (Hq + Hkv) * D * 2 * 2, us0, us1, d);
    if (d != 0.0) {
        printf("MISMATCH: the spread launch changed bits\n");
        g_spread_bad = true;
    }
    for (void *p : { x0, qn, kn, x }) cudaFree(p);
    cudaFree(pos);
}

static void bench_swiglu(hk_dtype t, int M, int I)
{
    size_t n = (size_t)M * I;
    void *gu = dev(2 * n, t, 8, -5, 5), *out[2];
    CK(cudaMalloc(&out[0], n * 2));
    CK(cudaMalloc(&out[1], n * 2));
    CK(old_swiglu(0, out[0], t, gu, t, M, I));
    CK(hk_swiglu(0, out[1], t, gu, t, M, I));
    double d = max_diff(host(out[0], t, n), host(out[1], t, n));
    double us0 = time_us([&] { return old_swiglu(0, out[0], t, gu, t, M, I); });
    double us1 = time_us([&] { return hk_swiglu(0, out[1], t, gu, t, M, I); });
    char what[128];
    snprintf(what, sizeof what, "SwiGLU prefill %d × %d (%s)", M, I, tname(t));
    row(what, (double)n * 3 * 2, us0, us1, d);
    for (void *p : { gu, out[0], out[1] }) cudaFree(p);
}

static void bench_gelu(hk_dtype t, int M, int N)
{
    size_t n = (size_t)M * N;
    void *x0 = dev(n, t, 9, -6, 6), *x;
    CK(cudaMalloc(&x, n * 2));
    std::vector<float> o[2];
    for (int v = 0; v < 2; v++) {
        CK(cudaMemcpy(x, x0, n * 2, cudaMemcpyDeviceToDevice));
        CK(v ? hk_gelu(0, x, t, n) : old_gelu(0, x, t, n));
        o[v] = host(x, t, n);
    }
    double d = max_diff(o[0], o[1]);
    CK(cudaMemcpy(x, x0, n * 2, cudaMemcpyDeviceToDevice));
    double us0 = time_us([&] { return old_gelu(0, x, t, n); }), us1 = time_us([&] { return hk_gelu(0, x, t, n); });
    char what[128];
    snprintf(what, sizeof what, "GELU vision %d × %d (%s)", M, N, tname(t));
    row(what, (double)n * 2 * 2, us0, us1, d);
    cudaFree(x0);
    cudaFree(x);
}

int main()
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s, %d SMs\n", p.name, p.multiProcessorCount);
    {
        size_t bytes = (size_t)1 << 30;
        void *a, *b;
        CK(cudaMalloc(&a, bytes));
        CK(cudaMalloc(&b, bytes));
        double us = time_us([&] { return cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0); });
        printf("# device copy of 1 GiB: %.2f TB/s (read + write)\n", 2.0 * bytes / us * 1e-6);
        cudaFree(a);
        cudaFree(b);
    }
    printf("\n| kernel | MB a call | µs old → new | rate old → new | speed-up | max |Δ| |\n|---|---:|---:|---:|---:|---:|\n");
    for (hk_dtype t : { HK_F16, HK_BF16 }) {
        bench_norm(t, 1024, 1024, 0);
        bench_norm(t, 4191, 1024, 0);
        bench_norm(t, 95, 1024, 0);
        bench_norm(t, 1, 1024, 0);   /* a decode step's final norm: latency */
        bench_rope(t, 1024);
        bench_rope(t, 4191);
        bench_rope(t, 95);
        bench_rope(t, 1);            /* a decode step's, each layer: latency */
        for (int M : { 1, 4, 16 })   /* HYOCR_ROPE_HEADS */
            for (int hpc : { 8, 4, 2, 1 }) bench_rope_spread(t, M, hpc);
        bench_swiglu(t, 1024, 3584);
        bench_swiglu(t, 4191, 3584);
        bench_norm(t, 16384, 1152, 1);
        bench_gelu(t, 16384, 4304);
    }
    return g_spread_bad ? 1 : 0;
}
