/* hyocr — HYOCR_PROFILE=1: per-op GPU time of the CUDA backend (cuda-profile.c;
 * private to backend-cuda.c). */
#pragma once
#include "backend.h"
#include <cuda_runtime_api.h>

G_BEGIN_DECLS

typedef struct hyocr_cuda_profile hyocr_cuda_profile;

/* A profiler of the ops of inner (which must outlive it), queued on stream, of
 * the device named gpu_name. */
hyocr_cuda_profile      *hyocr_cuda_profile_new(const hyocr_backend_ops *inner, cudaStream_t stream,
                                                const char *gpu_name);
/* The table to run instead of inner: the same ops, the GPU ones timed. */
const hyocr_backend_ops *hyocr_cuda_profile_ops(hyocr_cuda_profile *p);
/* Reads the finished records; call where the host has waited for the stream.
 * NULL (not profiling): nothing. */
void                     hyocr_cuda_profile_resolve(hyocr_cuda_profile *p);
/* Waits for the stream, prints the table to stderr and frees p (NULL: nothing). */
void                     hyocr_cuda_profile_free(hyocr_cuda_profile *p);

G_END_DECLS
