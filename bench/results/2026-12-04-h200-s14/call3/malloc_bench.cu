#include <cuda_runtime.h>
#include <stdio.h>
#include <chrono>
int main() {
  cudaFree(0);
  size_t mb[] = {4, 12, 38, 75, 113, 150, 300};
  for (size_t s : mb) {
    double ta = 0, tf = 0;
    for (int r = 0; r < 6; r++) {
      void *p;
      auto t0 = std::chrono::steady_clock::now();
      cudaMalloc(&p, s << 20);
      auto t1 = std::chrono::steady_clock::now();
      cudaFree(p);
      auto t2 = std::chrono::steady_clock::now();
      if (r) { ta += std::chrono::duration<double, std::micro>(t1 - t0).count(); tf += std::chrono::duration<double, std::micro>(t2 - t1).count(); }
    }
    printf("%4zu MiB: cudaMalloc %.1f us, cudaFree %.1f us\n", s, ta / 5, tf / 5);
  }
}
