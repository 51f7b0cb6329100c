/* hyocr — choosing the next token from fp32 logits: repetition penalty with the
 * reference's semantics (HF RepetitionPenaltyLogitsProcessor), then greedy or
 * temperature / top-k / top-p sampling with a seeded generator. */
#pragma once
#include "hyocr.h"
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct {
    float    temperature;         /* ≤ 0: greedy */
    int      top_k;               /* ≤ 0: off */
    float    top_p;               /* ≥ 1 or ≤ 0: off */
    float    repetition_penalty;  /* 1 (or ≤ 0): off */
    uint64_t seed;
} hyocr_sampler_params;

typedef struct hyocr_sampler hyocr_sampler;

hyocr_sampler *hyocr_sampler_init(const hyocr_sampler_params *p, int n_vocab);
void           hyocr_sampler_free(hyocr_sampler *s);
/* Adds ids to the set the penalty applies to (prompt, then each generated token). */
void           hyocr_sampler_accept(hyocr_sampler *s, const int32_t *ids, int n);
/* Applies the penalty to logits in place (over the distinct ids accepted so far),
 * then picks a token. Greedy ties go to the lowest id (torch.argmax). */
int32_t        hyocr_sampler_sample(hyocr_sampler *s, float *logits);
/* Penalty only (exposed for tests and for GPU-side parity checks). */
void           hyocr_sampler_apply_penalty(const hyocr_sampler *s, float *logits);
/* The ids a draw would choose from after temperature, top-k and top-p (no
 * penalty is applied, nothing is drawn), in no particular order; returns how
 * many were written to ids (room for n_vocab). A greedy sampler gives its
 * argmax. For tests and parity checks. */
int            hyocr_sampler_candidates(hyocr_sampler *s, const float *logits, int32_t *ids);

/* How the penalty divides positive logits. torch on CUDA (the R1 reference, HF
 * generate on GPU) turns `logits / p` with a Python-float p into ℓ·fl(1/p); torch on
 * CPU and vLLM's CUDA kernel compute ℓ/p. The two differ in the last bit for some ℓ. */
typedef enum {
    HYOCR_PENALTY_DIVIDE_RECIPROCAL,  /* ℓ · fl(1/p) — default */
    HYOCR_PENALTY_DIVIDE_TRUE,        /* ℓ / p */
} hyocr_penalty_divide;

void           hyocr_sampler_set_penalty_divide(hyocr_sampler *s, hyocr_penalty_divide mode);

/* The generator: u ∈ [0, 1) of draw n under seed. Counter-based, so a device
 * that draws inside a replayed graph gets the same u as the host for a draw. */
double         hyocr_sampler_uniform(uint64_t seed, uint64_t n);
bool           hyocr_sampler_is_greedy(const hyocr_sampler *s);
/* The u of this sampler's next draw, counted as made: for a draw done elsewhere
 * (on the device) so that a later host draw continues the same sequence. */
double         hyocr_sampler_next_uniform(hyocr_sampler *s);
/* The counter of the next draw; draws made elsewhere (the rows of a speculative round after
 * its first, which drew with the u of the tokens they stood for) counted as made. */
uint64_t       hyocr_sampler_draw_index(const hyocr_sampler *s);
void           hyocr_sampler_skip_draws(hyocr_sampler *s, uint64_t n);
/* One draw with u from logits the penalty was already applied to: temperature,
 * top-k, top-p (HF's kept set), then the first kept id, walking ids upwards, at
 * which the cumulative weight exceeds u·Z. The device pick follows these rules. */
int32_t        hyocr_sampler_draw(const hyocr_sampler_params *p, const float *logits, int n_vocab, double u);
/* The log-probability of id under logits (a log-softmax in double, rounded to float), and the
 * n_top most likely ids with theirs into top_ids and top_lp, most likely first, ties to the
 * lower id. Finite logits only (the scheduler checks them first). */
float          hyocr_sampler_logprobs(const float *logits, int n_vocab, int32_t id, int n_top, int32_t *top_ids,
                                      float *top_lp);
/* The same as one token's record: logprob, n_top = MIN(n_top, n_vocab) and top[] (the rest zero). */
hyocr_token_logprobs hyocr_sampler_token_logprobs(const float *logits, int n_vocab, int32_t id, int n_top);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_sampler, hyocr_sampler_free)

G_END_DECLS
