/* hyocr — the vision tower's patch embedding as the engine runs it (backend-cuda.c's plan_build:
 * fp16 pixels [M×768] times the fp16 weight [1152×768]ᵀ into fp32 rows with an fp32 bias epilogue,
 * cuBLASLt's first heuristic answer, 32 MiB of workspace), after the page's pixels go up from pinned
 * memory as the engine's upload does: the GPU time of each part (events) and the host's time in each
 * call, cold (the process's first) and warm. HYOCR_PROFILE read ~0.9 ms a warm call (H100, session
 * 33's profiles); the product is ~7 GFLOP.
 * Build and run (GPU machine):
 *   nvcc -O3 -std=c++17 -arch=sm_90 bench/patch_gemm.cu -lcublasLt -o /tmp/patch-gemm && /tmp/patch-gemm */
#include "bench-fill.h"
#include "lt-desc.h"
#include <cuda_fp16.h>
#include <chrono>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define LK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d cublasLt status %d\n", __FILE__, __LINE__, (int)s_); exit(1); } } while (0)

static double now_us()
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
    const int M = argc > 1 ? atoi(argv[1]) : 4096, N = 1152, K = 768;
    cublasLtHandle_t lt;
    LK(cublasLtCreate(&lt));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    size_t ws_cap = 32u << 20;
    void *ws, *x, *w, *d, *bias;
    float *host;
    CK(cudaMalloc(&ws, ws_cap));
    CK(cudaMalloc(&x, (size_t)M * K * 2));
    CK(cudaMalloc(&w, (size_t)N * K * 2));
    CK(cudaMalloc(&d, (size_t)M * N * 4));
    CK(cudaMalloc(&bias, (size_t)N * 4));
    CK(cudaMemset(bias, 0, (size_t)N * 4));
    CK(cudaMallocHost(&host, (size_t)M * K * 4));
    for (size_t i = 0; i < (size_t)M * K; i++) host[i] = (float)(i % 255) / 255.0f;
    void *stage;
    CK(cudaMalloc(&stage, (size_t)M * K * 4));
    k_fill_h<<<512, 256, 0, st>>>((__half *)x, (size_t)M * K, 1, 1.0f);
    k_fill_h<<<512, 256, 0, st>>>((__half *)w, (size_t)N * K, 2, 0.1f);
    CK(cudaStreamSynchronize(st));

    double t0 = now_us();
    lt_desc dsc;
    LK(lt_desc_make(&dsc, M, N, K, CUDA_R_32F, bias));
    cublasLtMatmulPreference_t pref;
    LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_cap, sizeof ws_cap));
    cublasLtMatmulHeuristicResult_t res[8];
    int n_res = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(lt, dsc.desc, dsc.la, dsc.lb, dsc.ld, dsc.ld, pref, 8, res, &n_res));
    printf("M %d N %d K %d: heuristic %.0f us, %d answers, the first's workspace %zu B\n", M, N, K, now_us() - t0,
           n_res, res[0].workspaceSize);

    cudaEvent_t e[4];
    for (int i = 0; i < 4; i++) CK(cudaEventCreate(&e[i]));
    const float one = 1.0f, zero = 0.0f;
    for (int a = 0; a < (n_res < 3 ? n_res : 3); a++)
        for (int it = 0; it < 6; it++) {
            CK(cudaEventRecord(e[0], st));
            double h0 = now_us();
            CK(cudaMemcpyAsync(stage, host, (size_t)M * K * 4, cudaMemcpyHostToDevice, st));
            double h1 = now_us();
            CK(cudaEventRecord(e[1], st));
            LK(cublasLtMatmul(lt, dsc.desc, &one, w, dsc.la, x, dsc.lb, &zero, d, dsc.ld, d, dsc.ld, &res[a].algo, ws, ws_cap, st));
            double h2 = now_us();
            CK(cudaEventRecord(e[2], st));
            CK(cudaStreamSynchronize(st));
            float up, mm;
            CK(cudaEventElapsedTime(&up, e[0], e[1]));
            CK(cudaEventElapsedTime(&mm, e[1], e[2]));
            printf("algo %d run %d: upload %.1f us (host %.1f), product %.1f us = %.0f TFLOP/s (host in the call %.1f us)\n",
                   a, it, up * 1e3, h1 - h0, mm * 1e3, 2.0 * M * N * K / (mm * 1e-3) / 1e12, h2 - h1);
        }
    return 0;
}
