/* hyocr-gtk — how much memory a job will take, and whether it fits, so a job
 * that cannot run is refused before it starts with a message that says why. */
#pragma once
#include "hyocr.h"

G_BEGIN_DECLS

typedef struct {
    int     width, height;        /* image after max_side */
    int     image_tokens;         /* placeholder tokens the image becomes */
    int     n_patches;            /* ViT patches */
    int     tokens;               /* prompt + max_new_tokens, capped at the context */
    int64_t kv_bytes;             /* KV cache for all tokens */
    int64_t activation_bytes;     /* vision + prefill working buffers */
    int64_t total_bytes;
} HyocrJobEstimate;

/* elem_size: bytes per activation/KV element of the backend (4 CPU, 2 CUDA). */
gboolean hyocr_job_estimate(const hyocr_config *cfg, int elem_size, int width, int height,
                            int max_new_tokens, HyocrJobEstimate *out, GError **error);

/* Bytes a job may take given the live figures: under a limit, what the weights
 * leave of it; otherwise what is free plus the KV pool and scratch we already
 * hold and reuse. */
int64_t hyocr_memory_available(const hyocr_mem_info *mem, int64_t limit);

/* NULL when the job fits; otherwise a translated sentence saying what it needs,
 * what is there and what to change. */
char *hyocr_memory_check(const HyocrJobEstimate *est, const hyocr_mem_info *mem, int64_t limit,
                         gboolean cpu);

G_END_DECLS
