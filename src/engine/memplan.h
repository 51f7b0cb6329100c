/* hyocr — memory plan: the device bytes a job takes, computed from the config
 * and the backend's element sizes alone (no device, no weights needed), so a
 * job that cannot fit is refused before it starts and `hyocr inspect` can say
 * what a page costs on a card it does not have.
 *
 * The plan mirrors what model.c, vision.c, text.c and engine.c allocate, buffer
 * by buffer; whoever changes their allocations changes the plan with them
 * (test-memplan compares it with what the CPU backend really allocated).
 *
 * A job runs in two phases that never overlap in memory: the vision tower +
 * merger (its scratch is freed before the KV pool is allocated), then prefill and
 * decode over the KV pool. Its peak is weights + backend scratch + the larger
 * phase. A job that speculates adds the draft's context and scratch to the
 * second phase; the draft's weights are part of the weights. */
#pragma once
#include "config.h"
#include "hyocr-types.h"
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Rows per chunk of the row-wise parts (norms, GEMMs, MLP) of the ViT blocks
 * and merger, and of the prefill. Multiples of 512: the CPU backend runs its
 * GEMMs on 512-row tiles, so chunked results stay bit-identical. */
#define HYOCR_VIT_CHUNK_ROWS  4096
#define HYOCR_TEXT_CHUNK_ROWS 1024

/* Device scratch the CUDA backend keeps for itself: cuBLAS(Lt) workspace (32 MiB, grown by a
 * quarter as backend-cuda.c's scratch_need does) and the host↔device staging buffer (32 MiB,
 * scratch_fixed: exactly), plus 4 MiB for op metadata and decode partials and 8 for the split
 * prefill's partials (HK_PF_SPLIT_PART_MAX, 6 MiB, grown by a quarter). With HYOCR_PREFILL_SPARE
 * (the default) a chunk whose MLP buffers are larger holds its partials there instead, bytes
 * plan_prefill already counts; smaller chunks still take the 8. */
#define HYOCR_MEMPLAN_CUDA_BACKEND ((int64_t)84 << 20)
/* And once a vision pass has run on its side lane (batch.c): that lane's own GEMM
 * workspace (grown by a quarter) and staging: 40 + 32 MiB. */
#define HYOCR_MEMPLAN_CUDA_SIDE ((int64_t)72 << 20)

/* Token-choice slots of the device pick path (decode.c): one penalty set of
 * ceil(vocab/32) 32-bit words each, allocated at once on the first decode step. */
#define HYOCR_MEMPLAN_PICK_SLOTS 64

typedef struct {
    int     act_elem;         /* bytes per activation / weight / KV element: 4 (CPU) or 2 (CUDA) */
    int     matrix_elem;      /* bytes per element of a weight matrix: act_elem, or 2 where the CPU keeps
                               * a BF16 checkpoint's (hyocr_memplan_params_bf16) */
    int     draft_matrix_elem; /* the same for the draft's matrices */
    int64_t backend_bytes;    /* the backend's own scratch (HYOCR_MEMPLAN_CUDA_BACKEND, 0 on the CPU) */
    bool    lm_head_tied;     /* the head shares the embedding buffer */
    int     kv_block_size;    /* tokens per KV block */
    int     kv_fixed_blocks;  /* > 0: a fixed pool, held through the vision phase too */
    int     max_model_len;    /* caps the KV pool; 0 = no cap */
    int     vit_chunk_rows;
    int     text_chunk_rows;
    bool    vision_offload;   /* the vision weights leave the device after the vision pass */
    const hyocr_dflash_config *draft;  /* the DFlash draft on the device, NULL: none (speculation off) */
    int     spec_tokens;      /* drafts a round of this job; 0: it does not speculate */
} hyocr_memplan_params;

/* What would let a job that does not fit run, as data: each front end words it
 * in its own terms (the CLI names its options, the app its preferences, a
 * server its request fields). Besides these, the budget can grow to the plan's
 * total: a higher memory limit (budget_is_limit), or memory other programs
 * hold given back. A field of 0 offers nothing. */
typedef struct {
    int     max_side;              /* the largest long image edge (a multiple of 32) at which the job fits */
    int64_t max_side_total;        /* what the job needs then */
    int     max_new_tokens;        /* the largest max_new_tokens at which it fits */
    int64_t max_new_tokens_total;  /* what the job needs then */
} hyocr_memplan_advice;

typedef struct hyocr_memplan {
    /* the job; a plan of the weights alone (an engine refused at load) has no
     * image and no prompt */
    int     grid_h, grid_w;     /* ViT patch grid */
    int     n_patches;
    int     image_tokens;       /* merger rows = placeholder tokens */
    int     prompt_tokens;
    int     max_new_tokens;
    int     kv_tokens;          /* tokens the pool is sized for: prompt + max_new − 1, capped */
    int     act_elem;
    /* model-wide, bytes */
    int64_t weights;            /* as uploaded: fused QKV and gate|up, a tied head once, compute dtype */
    int64_t vision_weights;     /* the ViT + merger part of weights */
    bool    vision_offload;     /* planned with the vision weights off the device during prefill/decode */
    int64_t backend;            /* the backend's own scratch */
    int64_t kv_per_token;       /* layers × 2 × kv_heads × head_dim × elem */
    int64_t kv_per_block;
    /* the job, bytes */
    int64_t kv;                 /* the pool: blocks × kv_per_block */
    int64_t vision_embed;       /* scratch of the patch embedding: pixels + residual */
    int64_t vision_blocks;      /* scratch while the ViT blocks run */
    int64_t vision_merger;      /* scratch peak of the merger (residual at its start, output at its end) */
    int64_t vision;             /* max of the three */
    int64_t image_embeds;       /* merger output, held until the prefill ends */
    int64_t prefill;            /* text scratch of the chunked prefill; decode reuses it */
    int64_t pick;               /* the device pick path's penalty sets, from the first decode step */
    /* speculative decoding (speculate.c): 0 where the engine has no draft / the job does not speculate */
    int64_t draft_weights;      /* the DFlash draft's own weights (its embedding and head are the target's) */
    int64_t draft_ctx;          /* the job's draft context: every draft layer's k and v of its tokens (KV
                                 * storage, like the pool: in kv_reserved) */
    int64_t draft_scratch;      /* the draft's activations and logits, the job's tapped rows, the verify
                                 * rows' logits beyond a plain step's */
    int64_t prefill_taps;       /* the prompt's tapped rows, from the prefill until the context has them */
    int64_t peak_vision;        /* weights + backend + vision (+ kv for a fixed pool) */
    int64_t peak_text;          /* weights (less vision_weights when offloaded) + backend + kv + prefill
                                 * + max(image_embeds, pick) */
    int64_t total;              /* max(peak_vision, peak_text): what the job needs */
    /* filled by the engine (hyocr_engine_plan_job / hyocr_engine_memory_plan) */
    hyocr_backend_kind backend_kind;  /* where the budget is: RAM (CPU) or the card's memory */
    int     image_width, image_height;  /* the image as the job sees it (max_side applied); 0 = not known */
    int64_t budget;             /* the memory limit, or on CUDA free + held; 0 = unknown */
    bool    budget_is_limit;    /* the budget is the memory limit (a fraction resolved), not free memory */
    bool    fits;               /* total ≤ budget (true when the budget is unknown) */
    hyocr_memplan_advice advice;  /* when it does not fit: what would make it */
} hyocr_memplan;

/* Defaults for a backend kind: element size, backend scratch, block size 16,
 * the chunk sizes above, no fixed pool, no length cap, tied head. */
void    hyocr_memplan_params_init(hyocr_memplan_params *p, hyocr_backend_kind kind);

/* The weights as the loaders upload them: matrices of matrix_elem bytes an element, the
 * rest (norms, biases, tables) of elem. */
int64_t hyocr_memplan_weights(const hyocr_config *cfg, int elem, int matrix_elem, bool lm_head_tied);
int64_t hyocr_memplan_vision_weights(const hyocr_config *cfg, int elem, int matrix_elem);
/* matrix_elem and draft_matrix_elem for a model and draft whose tensors are (or are not) all BF16
 * (hyocr_checkpoint_stats.bf16_only): bf16_elem (hyocr_backend.bf16_elem, what the backend's
 * HYOCR_BUF_WEIGHT_BF16 takes: 2 on both backends unless told otherwise) or act_elem. */
void    hyocr_memplan_params_bf16(hyocr_memplan_params *p, bool model_bf16, bool draft_bf16, int bf16_elem);
int     hyocr_memplan_matrix_elem(int act_elem, bool bf16_only, int bf16_elem);
int64_t hyocr_memplan_kv_per_token(const hyocr_config *cfg, int elem);
/* The DFlash draft's weights as dflash.c uploads them; one token's row of its context cache. */
int64_t hyocr_memplan_draft_weights(const hyocr_dflash_config *d, int elem, int matrix_elem);
int64_t hyocr_memplan_draft_ctx_per_token(const hyocr_dflash_config *d, int elem);
/* Placeholder tokens of a grid_h × grid_w patch grid: (h/2)·(w/2 + 1) + 2. */
int     hyocr_memplan_image_tokens(int grid_h, int grid_w);
/* Tokens the KV pool must hold for a job: the decode loop feeds back all but
 * the last generated token and stops one short of max_model_len (0 = no cap). */
int     hyocr_memplan_kv_tokens(int prompt_tokens, int max_new_tokens, int max_model_len);
/* Rows of one prefill chunk for a call of `rows` rows, chunk_rows the model's setting: the
 * whole call up to twice the setting, else the setting. A 1024² page (1087 rows) then runs
 * in one pass, not 1024 + 63: 9.9 against 13.1 ms of prefill on an H200 at the same peak
 * (bench/results/2026-12-03-h200-s6, call1); a 2048² page's 4191 rows keep 1024-row chunks,
 * which hold its peak under 2.4 GiB (one chunk: 2.51). */
int     hyocr_memplan_text_chunk(int64_t rows, int chunk_rows);

/* The plan of one job. Odd or empty grids plan no vision (the job would be
 * refused by the vision tower anyway). */
void    hyocr_memplan_for_job(const hyocr_config *cfg, const hyocr_memplan_params *p, int grid_h, int grid_w,
                              int prompt_tokens, int max_new_tokens, hyocr_memplan *out);

/* "2.39 GiB", "41.0 MiB", "12.0 KiB". */
char   *hyocr_memplan_format_bytes(int64_t bytes);
/* The parts of the phase that sets the total: "weights 1.86 GiB + KV cache
 * 417.0 MiB (4448 tokens) + prefill 41.0 MiB + image embeddings 8.1 MiB +
 * backend scratch 84.0 MiB". */
char   *hyocr_memplan_describe(const hyocr_memplan *plan);

G_END_DECLS
