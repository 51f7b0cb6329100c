/* hyocr — one speculative decoding round on the target (issue 20; dflash-notes §1): the target
 * runs the bonus token and the drafts as one forward, takes the drafts as long as each is the
 * token plain greedy decoding would have chosen there (the repetition penalty applied row by row,
 * over the history and the drafts taken before that row), adds its own token after them, and
 * forgets the K/V of the rows it did not take. The output is, token for token, what plain greedy
 * decoding gives; the drafts only decide how many tokens one forward commits. */
#pragma once
#include "dflash.h"
#include "sampler.h"

G_BEGIN_DECLS

/* kv holds the sequence up to, not including, bonus (the last committed token, not yet run
 * through the target). sampler is greedy; its penalty set holds the prompt and every committed
 * token, bonus included. Runs [bonus, drafts[0..n_drafts)] (1 + n_drafts ≤ HYOCR_VERIFY_MAX_ROWS)
 * and writes the committed tokens to out (room for n_drafts + 1): the drafts taken, then the
 * target's own token; *n_out of them (1 to n_drafts + 1), each added to the sampler's set. kv
 * then holds bonus and the drafts taken. When taps is not NULL ([1 + n_drafts, taps · hidden]),
 * its first *n_out rows are the tap-layer outputs of the tokens now in kv (bonus and the drafts
 * taken): the draft's next context rows. */
bool hyocr_spec_verify(hyocr_model *m, hyocr_kv_seq *kv, hyocr_sampler *sampler, int32_t bonus,
                       const int32_t *drafts, int n_drafts, hyocr_buf *taps, int32_t *out, int *n_out,
                       GError **error);

/* A whole round with the DFlash draft: proposes block_size − 1 tokens after bonus, verifies them
 * (hyocr_spec_verify) and feeds the kept rows' taps to the draft's context, which afterwards
 * covers exactly the tokens in kv. */
bool hyocr_spec_round(hyocr_model *m, hyocr_dflash *d, hyocr_dflash_ctx *ctx, hyocr_kv_seq *kv,
                      hyocr_sampler *sampler, int32_t bonus, int32_t *out, int *n_out, GError **error);

G_END_DECLS
