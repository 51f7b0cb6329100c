/* hyocr — hk_gemm_rows's fused norm products of a batched decode step (gemv.cu) on the model's
 * shapes — q|k|v (NORM, N 4096, K 1024) and gate|up (NORM_GLU, N 3584, K 1024) — at 2, 8, 9 and
 * 16 rows, fp16: the baseline for a change to k_gemm_rows. A call is one layer: 24 calls, each
 * with its own weights (the L2 holds none of them for the next), in one graph; µs a call is the
 * graph's time / 24, median of 20 replays after 3. GB/s counts the weights. (Its rows_norm_held
 * variant, HK_GEMV_NORM_HELD, was measured no faster and removed: docs/PERFORMANCE.md.) Build
 * and run (GPU machine, repository root):
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

enum { LAYERS = 24, REPS = 20, K = 1024 };

int main()
{
    const struct { const char *name; int mode, N, nw; } shapes[] = {
        { "q|k|v NORM", HK_GEMV_NORM, 4096, 4096 }, { "gate|up NORM_GLU", HK_GEMV_NORM_GLU, 3584, 7168 },
    };
    std::vector<__half *> w(LAYERS);
    size_t wn = (size_t)7168 * K;
    for (int l = 0; l < LAYERS; l++) {
        CK(cudaMalloc(&w[l], wn * 2));
        k_fill_h<<<1024, 256>>>(w[l], wn, 0x100u + l, 0.1f);
    }
    float *res;
    __half *nw, *out;
    CK(cudaMalloc(&res, (size_t)16 * K * 4));
    CK(cudaMalloc(&nw, K * 2));
    CK(cudaMalloc(&out, (size_t)16 * 4096 * 2));
    k_fill_f<<<64, 256>>>(res, (size_t)16 * K, 7);
    k_fill_h<<<4, 256>>>(nw, K, 9, 1.0f);
    CK(cudaDeviceSynchronize());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("%-18s %4s %10s %8s\n", "product", "rows", "us", "GB/s");
    for (auto &sh : shapes)
        for (int M : { 2, 8, 9, 16 }) {
            auto call = [&](int l) {
                return hk_gemm_rows(s, HK_F16, sh.mode, out, HK_F16, NULL, res, nw, HK_F16, 1e-6f, w[l], M, sh.N, K, 0);
            };
            for (int l = 0; l < LAYERS; l++) CK(call(l));
            CK(cudaStreamSynchronize(s));
            const double us = bench_graph_median_ms(s, REPS, [&] {
                for (int l = 0; l < LAYERS; l++) CK(call(l));
            }) * 1e3 / LAYERS;
            double bytes = (double)sh.nw * K * 2;
            printf("%-18s %4d %10.2f %8.0f\n", sh.name, M, us, bytes / us * 1e-3);
        }
    return 0;
}
