/* hyocr — would the decode step's products run faster from the L2? A decode layer as the
 * engine runs it at 2 and 16 rows — q|k|v (NORM), a stand-in for RoPE + attention (a kernel
 * streaming the bytes of the rows' K/V with evict-first loads), o (RESIDUAL), gate|up
 * (NORM_GLU), down (RESIDUAL), each layer with its own weights (24 layers: the L2 holds none of
 * them for the next) — in one graph, the products with programmatic dependent launch as in
 * the engine; µs a layer is the graph's time / 24, median of 20 replays after 3.
 *
 * Variants: the products' weights prefetched into the L2 while the attention stand-in runs
 * (cp.async.bulk.prefetch.L2 with an evict-last policy on sm_90, prefetch.global.L2 per line
 * otherwise), by a kernel launched before it or by the stand-in itself; and "hot", every
 * layer reading layer 0's weights (an upper bound: what a product costs from the L2). Build
 * and run (GPU machine, repository root):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/l2_prefetch_bench.cu -o /tmp/l2pf && /tmp/l2pf */
#include "../kernels/gemv.cu"
#include "bench-timing.h"
#include "bench-fill.h"
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) bench_ck((x), #x)

enum { LAYERS = 24, REPS = 20, H = 1024, QO = 2048, I = 3584 };

/* Byte ranges to bring into the L2. */
struct pf_set {
    const char *p[5];
    size_t      bytes[5];
    int         n;
};

enum { PF_CHUNK = 32 << 10 };

/* Thread `part` of `parts` issues its share of the ranges' chunks. bulk: one TMA prefetch a
 * chunk (sm_90), else one prefetch instruction a 128-byte line of the chunk. */
static __device__ void pf_issue(const pf_set &s, int part, int parts, bool bulk)
{
#if __CUDA_ARCH__ >= 900
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
#endif
    for (int r = 0; r < s.n; r++) {
        const size_t chunks = (s.bytes[r] + PF_CHUNK - 1) / PF_CHUNK;
        for (size_t c = part; c < chunks; c += parts) {
            const char *a = s.p[r] + c * PF_CHUNK;
            const size_t len = s.bytes[r] - c * PF_CHUNK < PF_CHUNK ? s.bytes[r] - c * PF_CHUNK : PF_CHUNK;
#if __CUDA_ARCH__ >= 900
            if (bulk) {
                asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(a),
                             "r"((unsigned)len), "l"(pol) : "memory");
                continue;
            }
#endif
            for (size_t o = 0; o < len; o += 128) asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(a + o));
        }
    }
}

static __global__ void k_prefetch(pf_set s, bool bulk)
{
    pf_issue(s, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x, bulk);
}

/* The attention stand-in: every byte of [src, src + n) read once, evict-first; one CTA's
 * threads may first issue a share of the prefetches (pf_parts of them do). */
static __global__ void k_stream(const int4 *src, size_t n4, int *sink, pf_set s, int pf_mode)
{
    if (pf_mode) pf_issue(s, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x, pf_mode == 1);
    int acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        const int4 v = __ldcs(src + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x7fffffff) *sink = acc;   /* keeps the loads */
}

struct layer_w {
    __half *qkv, *o, *gu, *d;
};

int main()
{
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    std::vector<layer_w> w(LAYERS);
    auto fill = [](__half **p, size_t n, uint32_t seed) {
        CK(cudaMalloc(p, n * 2));
        k_fill_h<<<1024, 256>>>(*p, n, seed, 0.05f);
    };
    for (int l = 0; l < LAYERS; l++) {
        fill(&w[l].qkv, (size_t)4096 * H, 0x100u + l);
        fill(&w[l].o, (size_t)H * QO, 0x200u + l);
        fill(&w[l].gu, (size_t)2 * I * H, 0x300u + l);
        fill(&w[l].d, (size_t)H * I, 0x400u + l);
    }
    float *res;
    __half *nw, *qkv_out, *att, *act;
    int *sink;
    const size_t kv_max = (size_t)96 << 20;
    int4 *kv;
    CK(cudaMalloc(&res, (size_t)16 * H * 4));
    CK(cudaMalloc(&nw, H * 2));
    CK(cudaMalloc(&qkv_out, (size_t)16 * 4096 * 2));
    CK(cudaMalloc(&att, (size_t)16 * QO * 2));
    CK(cudaMalloc(&act, (size_t)16 * I * 2));
    CK(cudaMalloc(&sink, 4));
    const size_t kv_step = (size_t)12 << 20;   /* layer l streams from l · 12 MB: 288 MB in all, cold */
    CK(cudaMalloc(&kv, kv_max + kv_step * LAYERS));
    k_fill_f<<<64, 256>>>(res, (size_t)16 * H, 7);
    fill(&nw, H, 9);
    fill(&att, (size_t)16 * QO, 11);
    fill(&act, (size_t)16 * I, 13);
    CK(cudaMemset(kv, 1, kv_max + kv_step * LAYERS));
    CK(cudaDeviceSynchronize());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("# %d SMs, L2 %d MiB; weights a layer %.1f MB\n", sms, l2 >> 20,
           (4096.0 * H + H * QO + 2.0 * I * H + H * I) * 2 / 1e6);
    printf("%-34s %4s %8s %10s\n", "variant", "rows", "KV MB", "us/layer");

    enum { NONE, KERNEL_BULK, KERNEL_LINES, INSIDE_BULK, INSIDE_LINES, HOT, NO_STREAM, STREAM_ONLY };
    const char *names[] = { "no prefetch", "prefetch kernel (bulk)", "prefetch kernel (lines)",
                            "inside the stand-in (bulk)", "inside the stand-in (lines)",
                            "hot (layer 0's weights)", "products only", "stand-in only" };
    struct { int M; size_t kv_bytes; } cases[] = { { 2, (size_t)17 << 20 }, { 16, (size_t)71 << 20 } };
    for (auto &c : cases)
        for (int next_qkv = 0; next_qkv < 2; next_qkv++)
            for (int v = 0; v <= STREAM_ONLY; v++) {
                if (next_qkv && (v == HOT || v == NO_STREAM || v == STREAM_ONLY || v == NONE)) continue;
                const int M = c.M;
                auto layer = [&](int l) {
                    const layer_w &L = w[v == HOT ? 0 : l], &N = w[v == HOT ? 0 : (l + 1) % LAYERS];
                    pf_set ps = {};
                    ps.p[0] = (const char *)L.o, ps.bytes[0] = (size_t)H * QO * 2;
                    ps.p[1] = (const char *)L.gu, ps.bytes[1] = (size_t)2 * I * H * 2;
                    ps.p[2] = (const char *)L.d, ps.bytes[2] = (size_t)H * I * 2;
                    ps.n = 3;
                    if (next_qkv) ps.p[3] = (const char *)N.qkv, ps.bytes[3] = (size_t)4096 * H * 2, ps.n = 4;
                    const bool prods = v != STREAM_ONLY, stream = v != NO_STREAM;
                    if (prods)
                        CK(hk_gemm_rows(s, HK_F16, HK_GEMV_NORM, qkv_out, HK_F16, NULL, res, nw, HK_F16, 1e-6f, L.qkv, M,
                                        4096, H, 1));
                    if (v == KERNEL_BULK || v == KERNEL_LINES) k_prefetch<<<sms, 128, 0, s>>>(ps, v == KERNEL_BULK);
                    const int pf_mode = v == INSIDE_BULK ? 1 : v == INSIDE_LINES ? 2 : 0;
                    if (stream)
                        k_stream<<<sms * 4, 256, 0, s>>>(kv + l * (kv_step / 16), c.kv_bytes / 16, sink, ps,
                                                         pf_mode);
                    if (!prods) return;
                    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_RESIDUAL, NULL, HK_F16, att, res, NULL, HK_F16, 0.0f, L.o, M, H,
                                    QO, 1));
                    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_NORM_GLU, act, HK_F16, NULL, res, nw, HK_F16, 1e-6f, L.gu, M, I,
                                    H, 1));
                    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_RESIDUAL, NULL, HK_F16, act, res, NULL, HK_F16, 0.0f, L.d, M, H,
                                    I, 1));
                };
                for (int l = 0; l < LAYERS; l++) layer(l);
                CK(cudaStreamSynchronize(s));
                const double us = bench_graph_median_ms(s, REPS, [&] {
                    for (int l = 0; l < LAYERS; l++) layer(l);
                }) * 1e3 / LAYERS;
                char name[80];
                snprintf(name, sizeof name, "%s%s", names[v], next_qkv ? " + next q|k|v" : "");
                printf("%-34s %4d %8.0f %10.2f\n", name, M, c.kv_bytes / 1e6, us);
                fflush(stdout);
            }
    CK(cudaGetLastError());
    return 0;
}
