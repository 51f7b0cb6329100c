/* hyocr — the tuning switches for diagnostics and A/B runs: the HYOCR_* environment
 * variables of docs/HACKING.md, read once by hyocr_tuning_from_env when an engine
 * starts and handed down from there (hyocr_backend_params → the backend, which
 * keeps them → the model, which resolves its own at load; the image passes get
 * resize_threads as an argument). Nothing else in the engine reads the environment
 * for them. The zero value is every default. */
#pragma once
#include <glib.h>
#include <stdbool.h>

G_BEGIN_DECLS

/* A switch whose default depends on where it applies (the backend, the card). */
typedef enum {
    HYOCR_SWITCH_DEFAULT,
    HYOCR_SWITCH_OFF,
    HYOCR_SWITCH_ON,
} hyocr_switch;

typedef struct {
    bool         profile;         /* HYOCR_PROFILE: CUDA per-op timing table when the backend is freed */
    bool         no_graph;        /* HYOCR_NO_GRAPH: decode steps op by op instead of as CUDA graphs */
    bool         no_gemv;         /* HYOCR_NO_GEMV: products of 1..16 rows through cuBLAS, not ours */
    bool         cpu_generic;     /* HYOCR_CPU_GENERIC: the CPU backend's portable paths (no OpenBLAS, no AVX2) */
    bool         cpu_f32_weights; /* HYOCR_CPU_F32_WEIGHTS: the CPU backend widens a BF16 checkpoint's weight
                                   * matrices to fp32 at load instead of keeping their 16 bits (the same
                                   * products, twice the memory: for A/B runs and the tests that show it) */
    hyocr_switch fuse;            /* HYOCR_FUSE: the fused decode products; default on for CUDA */
    hyocr_switch pdl;             /* HYOCR_PDL: programmatic dependent launch in captured decode steps;
                                   * default on from sm_90, never below */
    int          decode_split;    /* HYOCR_DECODE_SPLIT: keys per split of the graph's decode attention
                                   * (rounded to what the kernels take); 0 = chosen per step */
    int          decode_stages;   /* HYOCR_DECODE_STAGES: CUDA decode steps (one row too) through the
                                   * staged decode kernel, that many rounds deep (2..4); 0 = unset (the
                                   * backend's rule), -1 = "0": k_decode */
    hyocr_switch decode_mma;      /* HYOCR_DECODE_MMA: those of two rounds on the tensor cores (k_decode_mma,
                                   * not the same bits as k_decode); default on, "0": k_decode_staged */
    int          rows_wide;       /* HYOCR_ROWS_WIDE: CUDA products of 2..16 rows with 16 columns a CTA (two groups of
                                   * 8 sharing the x chunks or normalised rows; the same bits) where 8 a CTA take
                                   * more than a wave (q|k|v, gate|up); unset (0 here) or 1 = the card's rule
                                   * (the default since session 19), 2 = every such product (tests), "0" = off
                                   * (-1 here) */
    int          rope_heads;      /* HYOCR_ROPE_HEADS: CUDA rope_qknorm of decode-sized steps (≤ 16 rows)
                                   * with a row's heads spread over blocks of that many; 0 = unset (4) */
    int          text_chunk_rows; /* HYOCR_TEXT_CHUNK_ROWS: prefill rows per chunk where the engine's
                                   * params leave it at 0; 0 = the default (HYOCR_TEXT_CHUNK_ROWS) */
    hyocr_switch ordered_alloc;   /* HYOCR_ORDERED_ALLOC: the CUDA main lane's activations from the
                                   * stream-ordered allocator, so a buffer given back does not wait for
                                   * the device; default on (the backend's, since session 21), "0" = off */
    hyocr_switch pool_keep;       /* HYOCR_POOL_KEEP: CUDA's stream-ordered pool keeps the memory given back to
                                   * it until the engine is idle, instead of returning it to the system at every
                                   * synchronisation; "0" = off */
    int          vit_chunk_rows;  /* HYOCR_VIT_CHUNK_ROWS: rows per chunk of the ViT's row-wise parts where
                                   * the engine's params leave it at 0; 0 = the default (HYOCR_VIT_CHUNK_ROWS) */
    int          resize_threads;  /* HYOCR_RESIZE_THREADS: threads of the resize and pixel-packing passes;
                                   * 0 = the cores, at most 8 */
    bool         rows_verify;     /* HYOCR_VERIFY_KERNEL=0: CUDA verify blocks row by row, not by the block kernel */
    bool         no_wgmma;        /* HYOCR_NO_WGMMA: the vision attention's mma.sync kernel on Hopper too */
    bool         prefill_template; /* HYOCR_PREFILL_TEMPLATE: the prefill's paged attention by the 64-row
                                    * template, not k_prefill */
    int          prefill_split;   /* HYOCR_PREFILL_SPLIT: k_prefill calls short of CTAs split each item's keys
                                   * (split-KV); 1 = on at the default CTAs an SM, N > 1 = about N CTAs an
                                   * SM; −1 ("0") = off; 0 (unset) = the backend's default (on:
                                   * backend-cuda.c's PF_SPLIT_DEFAULT) */
    hyocr_switch prefill_spare;   /* HYOCR_PREFILL_SPARE: CUDA, the split prefill's partials in the layer's MLP
                                   * buffers (free while the attention runs; attention_paged's spare), 22 MB for a
                                   * 1024-row chunk instead of the backend's 6 MiB, so long chunks split too;
                                   * default on (the backend's, since session 20), "0" = off */
    hyocr_switch vision_beside;   /* HYOCR_VISION_BESIDE: a page admitted next to decoding ones has its vision
                                   * pass on the backend's side lane, beside the decode steps (batch.c);
                                   * default off: no gain measured (batch.c's BESIDE_DEFAULT) */
    hyocr_switch invariant;       /* HYOCR_INVARIANT: CUDA decode rows computed alike whatever the step's
                                   * rows (speculation's verify rows then equal plain decoding's) */
    hyocr_switch vis_lazy;        /* HYOCR_VIS_LAZY_RESCALE: k_vis_wg rescales O only when a row's max
                                   * rose by more than 2^8; default on (the backend's), "0": every tile */
    hyocr_switch vis_tma;         /* HYOCR_VIS_TMA: the vision attention's TMA kernel on Hopper (k_vis_tma,
                                   * the default since session 27); =0: k_vis_wg */
    hyocr_switch prefill_tma;     /* HYOCR_PREFILL_TMA: the prefill's paged attention by k_prefill_tma on
                                   * Hopper (the default since session 28); =0: k_prefill */
    hyocr_switch pinned_pixels;   /* HYOCR_PINNED_PIXELS: pages' pixels (up to 16 MiB) in pinned memory
                                   * (pinned.h); default on for CUDA, "0": ordinary memory */
    hyocr_switch pick_logprobs;   /* HYOCR_PICK_LOGPROBS: the log-probabilities a job asks for computed
                                   * beside the backend's token choice (pick_logprobs), not by the host
                                   * path; default on, "0": the host path */
    /* Tests and benchmarks only (speculate.h, the draft stand-in): */
    char         draft_standin[1024];     /* HYOCR_DRAFT_STANDIN: a file of known continuations; "" = off */
    double       draft_standin_k;         /* HYOCR_DRAFT_STANDIN_K: right drafts a round (a mean if fractional) */
    bool         draft_standin_no_draft;  /* HYOCR_DRAFT_STANDIN_NO_DRAFT: and the draft does not run */
} hyocr_tuning;

/* Reads every switch. One rule for all: unset or empty is the default, "0" is off,
 * anything else on (a number for the counts: a non-number there counts as 0, and
 * HYOCR_RESIZE_THREADS below 1 as 1). */
void hyocr_tuning_from_env(hyocr_tuning *t);

G_END_DECLS
