/* hyocr benchmarks — one timing rule for the .cu micro-benchmarks (decode_bench,
 * gemm_rows_bench, prefill_bench): the median of reps launches on s, back to back, each
 * interval between two events one launch, after 3 untimed ones. Included by each (they are
 * built alone with nvcc; see their headers). */
#pragma once
#include <algorithm>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

static inline void bench_ck(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    exit(1);
}

/* ms: the median of reps calls of launch(), which queues one launch on s */
template <typename F> static double bench_median_ms(cudaStream_t s, int reps, F launch)
{
    for (int i = 0; i < 3; i++) launch();
    std::vector<cudaEvent_t> e(reps + 1);
    for (auto &x : e) bench_ck(cudaEventCreate(&x), "event create");
    bench_ck(cudaEventRecord(e[0], s), "event record");
    for (int i = 0; i < reps; i++) {
        launch();
        bench_ck(cudaEventRecord(e[i + 1], s), "event record");
    }
    bench_ck(cudaEventSynchronize(e[reps]), "event synchronize");
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; i++) bench_ck(cudaEventElapsedTime(&ms[i], e[i], e[i + 1]), "elapsed time");
    for (auto &x : e) cudaEventDestroy(x);
    std::sort(ms.begin(), ms.end());
    return ms[reps / 2];
}

/* The same for one graph of what capture() queues on s, replayed: captured relaxed, as the
 * engine captures (the launchers set shared-memory attributes while capturing). */
template <typename F> static double bench_graph_median_ms(cudaStream_t s, int reps, F capture)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    bench_ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), "capture");
    capture();
    bench_ck(cudaStreamEndCapture(s, &g), "capture");
    bench_ck(cudaGraphInstantiate(&ge, g, 0), "graph instantiate");
    double ms = bench_median_ms(s, reps, [&] { bench_ck(cudaGraphLaunch(ge, s), "graph launch"); });
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    return ms;
}
