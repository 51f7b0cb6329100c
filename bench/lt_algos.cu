/* hyocr — how far cuBLASLt's first heuristic answer is from its best one, for the
 * products a page runs (the ViT's at 4096-row chunks, the merger's, the prefill's at
 * 1024 rows): the engine takes the first answer (backend-cuda.c, plan_build); this
 * times the first COUNT answers for the same description (fp16 in and out, fp32
 * compute, bias epilogue, 32 MiB of workspace) and prints each one's µs and TFLOP/s.
 * Build and run (GPU machine):
 *   nvcc -O3 -std=c++17 -arch=sm_90 bench/lt_algos.cu -lcublasLt -o /tmp/lt-algos && /tmp/lt-algos */
#include "bench-fill.h"
#include "lt-desc.h"
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define LK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d cublasLt status %d\n", __FILE__, __LINE__, (int)s_); exit(1); } } while (0)

#define COUNT 12

struct shape { const char *what; int M, N, K; };

int main(void)
{
    static const shape S[] = {
        { "vit q|k|v", 4096, 3456, 1152 }, { "vit o", 4096, 1152, 1152 }, { "vit fc1", 4096, 4304, 1152 },
        { "vit fc2", 4096, 1152, 4304 },   { "merger conv", 1024, 2304, 4608 }, { "merger mlp", 1024, 1024, 4608 },
        { "merger conv 2048", 4096, 2304, 4608 }, { "prefill q|k|v", 1024, 4096, 1024 },
        { "prefill gate|up", 1024, 7168, 1024 }, { "prefill down", 1024, 1024, 3584 }, { "prefill o", 1024, 1024, 2048 },
        { "prefill q|k|v 1087", 1087, 4096, 1024 },
    };
    cublasLtHandle_t lt;
    LK(cublasLtCreate(&lt));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    size_t ws_cap = 32u << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_cap));
    __half *A, *B, *D, *bias;
    size_t big = (size_t)4096 * 7168;
    CK(cudaMalloc(&A, big * 2));
    CK(cudaMalloc(&B, big * 2));
    CK(cudaMalloc(&D, big * 2));
    CK(cudaMalloc(&bias, 8192 * 2));
    k_fill_h<<<1024, 256>>>(A, big, 1, 0.05f);
    k_fill_h<<<1024, 256>>>(B, big, 2, 0.05f);
    k_fill_h<<<64, 256>>>(bias, 8192, 3, 0.05f);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const shape &s : S) {
        lt_desc d;
        LK(lt_desc_make(&d, s.M, s.N, s.K, CUDA_R_16F, bias));
        cublasLtMatmulPreference_t pref;
        LK(cublasLtMatmulPreferenceCreate(&pref));
        LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_cap, sizeof ws_cap));
        cublasLtMatmulHeuristicResult_t res[COUNT];
        int n = 0;
        LK(cublasLtMatmulAlgoGetHeuristic(lt, d.desc, d.la, d.lb, d.ld, d.ld, pref, COUNT, res, &n));
        const double flop = 2.0 * s.M * s.N * s.K;
        printf("%s M=%d N=%d K=%d: %d answers\n", s.what, s.M, s.N, s.K, n);
        for (int i = 0; i < n; i++) {
            const float one = 1.0f, zero = 0.0f;
            auto run = [&] {
                return cublasLtMatmul(lt, d.desc, &one, A, d.la, B, d.lb, &zero, D, d.ld, D, d.ld, &res[i].algo, ws, ws_cap, st);
            };
            if (run() != CUBLAS_STATUS_SUCCESS) { printf("  #%d failed\n", i); continue; }
            for (int w = 0; w < 5; w++) run();
            const int reps = 50;
            CK(cudaEventRecord(e0, st));
            for (int r = 0; r < reps; r++) run();
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            double us = 1e3 * ms / reps;
            int tile = 0, splitk = 0, stages = 0;
            size_t sz;
            cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &sz);
            cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &sz);
            cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &sz);
            printf("  #%-2d %8.1f us %6.0f TFLOP/s  tile %d splitk %d stages %d ws %zu\n", i, us, flop / us * 1e-6, tile,
                   splitk, stages, res[i].workspaceSize);
        }
        cublasLtMatmulPreferenceDestroy(pref);
        lt_desc_free(&d);
    }
    return 0;
}
