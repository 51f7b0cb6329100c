/* hyocr benchmarks — deterministic fills of device buffers (hashed indices), shared by the
 * .cu micro-benchmarks that take a model's shapes with made-up values (gemm_rows_bench,
 * l2_prefetch_bench, lt_algos, patch_gemm). */
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

static __global__ void k_fill_h(__half *p, size_t n, uint32_t seed, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = __float2half(((float)(h & 0xffff) / 65535.0f * 2.0f - 1.0f) * scale);
    }
}

static __global__ void k_fill_f(float *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2246822519u ^ seed;
        h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = (float)(h & 0xffff) / 65535.0f * 6.0f - 3.0f;
    }
}
