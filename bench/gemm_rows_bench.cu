/* hyocr — hk_gemm_rows's products of a batched decode step (gemv.cu) on the model's shapes —
 * q|k|v (NORM, N 4096, K 1024), gate|up (NORM_GLU, N 3584, K 1024), o (RESIDUAL, N 1024, K 2048),
 * down (RESIDUAL, N 1024, K 3584) and the head (PLAIN, N 120832, K 1024) — at 2, 8, 9 and 16
 * rows, fp16, in every layout of hk_gemm_rows_ex: 1 to HK_GEMM_ROWS_GROUPS_MAX column groups a
 * CTA (HYOCR_ROWS_WIDE); the rule's pick for this card is marked *. The baseline for a change to k_gemm_rows. A call is one layer: 24 calls,
 * each with its own weights (the L2 holds none of them for the next), in one graph; µs a call
 * is the graph's time / 24, median of 20 replays after 3. GB/s counts the weights. (Its
 * rows_norm_held variant, HK_GEMV_NORM_HELD, and K split over CTAs, HYOCR_ROWS_SPLIT, were
 * measured no faster and removed: docs/PERFORMANCE.md.) Build and run (GPU machine, repository
 * root):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/gemm_rows_bench.cu -o /tmp/gemm-rows-bench && /tmp/gemm-rows-bench */
#include "../kernels/gemv.cu"
#include "bench-timing.h"
#include "bench-fill.h"
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

enum { LAYERS = 24, REPS = 20 };

int main()
{
    const struct { const char *name; int mode, N, nw, K; } shapes[] = {
        { "q|k|v NORM", HK_GEMV_NORM, 4096, 4096, 1024 },
        { "gate|up NORM_GLU", HK_GEMV_NORM_GLU, 3584, 7168, 1024 },
        { "o RESIDUAL", HK_GEMV_RESIDUAL, 1024, 1024, 2048 },
        { "down RESIDUAL", HK_GEMV_RESIDUAL, 1024, 1024, 3584 },
        { "lm_head PLAIN", HK_GEMV_PLAIN, 120832, 120832, 1024 },
    };
    std::vector<__half *> w(LAYERS);
    const size_t wn = (size_t)7168 * 1024;
    for (int l = 0; l < LAYERS; l++) {
        CK(cudaMalloc(&w[l], wn * 2));
        k_fill_h<<<1024, 256>>>(w[l], wn, 0x100u + l, 0.1f);
    }
    /* the head: one matrix for every call (247 MB: the L2 keeps little of it for the next) */
    __half *head;
    const size_t hn = (size_t)120832 * 1024;
    CK(cudaMalloc(&head, hn * 2));
    k_fill_h<<<1024, 256>>>(head, hn, 0x200u, 0.1f);
    float *res;
    __half *nw, *out, *x;
    CK(cudaMalloc(&res, (size_t)16 * 4096 * 4));
    CK(cudaMalloc(&nw, 1024 * 2));
    CK(cudaMalloc(&out, (size_t)16 * 120832 * 2));
    CK(cudaMalloc(&x, (size_t)16 * 3584 * 2));
    k_fill_f<<<64, 256>>>(res, (size_t)16 * 4096, 7);
    k_fill_h<<<4, 256>>>(nw, 1024, 9, 1.0f);
    k_fill_h<<<64, 256>>>(x, (size_t)16 * 3584, 11, 1.0f);
    CK(cudaDeviceSynchronize());
    int dev, sms;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("%-18s %4s %6s %10s %8s\n", "product", "rows", "groups", "us", "GB/s");
    for (auto &sh : shapes)
        for (int M : { 2, 8, 9, 16 })
            for (int G = 1; G <= HK_GEMM_ROWS_GROUPS_MAX; G++) {
                /* the residual, read by the norms and added to by o and down, stays bounded:
                 * the weights are ±0.1 and x ±1, 24 × 23 additions */
                auto call = [&](int l) {
                    return hk_gemm_rows_ex(s, HK_F16, sh.mode, out, HK_F16, x, res, nw, HK_F16, 1e-6f,
                                           (size_t)sh.nw * sh.K <= wn ? w[l] : head, M, sh.N, sh.K, 0, G);
                };
                for (int l = 0; l < LAYERS; l++) CK(call(l));
                CK(cudaStreamSynchronize(s));
                const double us = bench_graph_median_ms(s, REPS, [&] {
                    for (int l = 0; l < LAYERS; l++) CK(call(l));
                }) * 1e3 / LAYERS;
                const double bytes = (double)sh.nw * sh.K * 2;
                const bool pick = G == hk_gemm_rows_groups(sh.N, sms);
                printf("%-18s %4d %5d%s %10.2f %8.0f\n", sh.name, M, G, pick ? "*" : " ", us, bytes / us * 1e-3);
            }
    return 0;
}
