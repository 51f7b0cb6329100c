/* hyocr — speculative decoding rounds (speculate.h). */
#include "speculate.h"
#include "error.h"
#include <string.h>

bool hyocr_spec_verify(hyocr_model *m, hyocr_kv_seq *kv, hyocr_sampler *sampler, int32_t bonus,
                       const int32_t *drafts, int n_drafts, hyocr_buf *taps, int32_t *out, int *n_out,
                       GError **error)
{
    const int V = m->cfg.text.vocab_size, rows = 1 + n_drafts;
    if (n_drafts < 0 || rows > HYOCR_VERIFY_MAX_ROWS || !hyocr_sampler_is_greedy(sampler)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    "speculative round: %d drafts (at most %d) with a greedy choice", n_drafts,
                    HYOCR_VERIFY_MAX_ROWS - 1);
        return false;
    }
    g_autofree int32_t *ids = g_new(int32_t, rows);
    ids[0] = bonus;
    if (n_drafts) memcpy(ids + 1, drafts, sizeof(int32_t) * (size_t)n_drafts);
    const int start = kv->n_tokens;
    g_autofree float *logits = g_new(float, (size_t)rows * V);
    hyocr_text_seq q = { .ids = ids, .n_new = rows, .kv = kv, .taps = taps };
    if (!hyocr_text_verify(m, &q, logits, error)) return false;
    /* Row r predicts the token after ids[r]; plain decoding would have had the penalty set it
     * has now, plus the drafts taken before that row: each is added as it is taken. */
    int n = 0;
    for (int r = 0; r < rows; r++) {
        int32_t tok = hyocr_sampler_sample(sampler, logits + (size_t)r * V);
        hyocr_sampler_accept(sampler, &tok, 1);
        out[n++] = tok;
        if (r == n_drafts || drafts[r] != tok) break;
    }
    /* bonus and the drafts taken stay; the target's own last token has not been run yet */
    hyocr_kv_seq_rewind(kv, start + n);
    *n_out = n;
    return true;
}

bool hyocr_spec_round(hyocr_model *m, hyocr_dflash *d, hyocr_dflash_ctx *ctx, hyocr_kv_seq *kv,
                      hyocr_sampler *sampler, int32_t bonus, int32_t *out, int *n_out, GError **error)
{
    const int B = d->cfg.block_size;
    if (ctx->n != kv->n_tokens) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    "speculative round: the draft's context covers %d tokens, the cache %d", ctx->n, kv->n_tokens);
        return false;
    }
    g_autofree int32_t *drafts = g_new(int32_t, B - 1);
    if (!hyocr_dflash_propose(d, ctx, bonus, drafts, NULL, error)) return false;
    size_t W = (size_t)d->cfg.n_target_layers * d->cfg.hidden_size;
    hyocr_buf *taps = m->be->ops->alloc(m->be, HYOCR_BUF_ACT, (size_t)B * W, error);
    if (!taps) return false;
    bool ok = hyocr_spec_verify(m, kv, sampler, bonus, drafts, B - 1, taps, out, n_out, error) &&
              hyocr_dflash_ctx_append(d, ctx, taps, *n_out, error);
    m->be->ops->buf_free(m->be, taps);
    return ok;
}
