/* hyocr — the decoder (spec §5) over a batch of sequences packed row-wise, with
 * K/V in the paged cache. Prefill rows carry the prompt's 4-axis XD-RoPE
 * positions; decode rows use the 1-D position = cache length (spec §5.4.4). */
#include "model.h"
#include "error.h"
#include <math.h>
#include <string.h>

#define OPS (m->be->ops)

typedef struct {
    int      M;                /* rows over all sequences */
    int      n_axes;           /* 4 when any sequence brings its own positions, else 1 */
    int32_t *ids;              /* [M] */
    int32_t *pos;              /* [n_axes · M] axis-major */
    hyocr_seq_view *views;     /* [n_seqs] */
} text_batch;

static void text_batch_clear(text_batch *b)
{
    g_free(b->ids);
    g_free(b->pos);
    g_free(b->views);
}

static bool check_seqs(const hyocr_model *m, const hyocr_text_seq *seqs, int n_seqs, GError **error)
{
    if (n_seqs <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, "text forward: no sequences");
        return false;
    }
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_text_seq *q = &seqs[s];
        if (q->n_new <= 0 || !q->ids || !q->kv) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        "text forward: sequence %d has no tokens or no cache", s);
            return false;
        }
        for (int i = 0; i < q->n_new; i++) {
            if (q->ids[i] < 0 || q->ids[i] >= m->cfg.text.vocab_size) {
                g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                            "text forward: token id %d at %d is outside the vocabulary (%d)", q->ids[i], i,
                            m->cfg.text.vocab_size);
                return false;
            }
        }
    }
    return true;
}

/* Packs ids and positions; sequences without explicit positions get pos = cache
 * index on every axis, which is what all four axes hold for text tokens. */
static void text_batch_build(text_batch *b, const hyocr_text_seq *seqs, int n_seqs)
{
    b->M = 0;
    b->n_axes = 1;
    for (int s = 0; s < n_seqs; s++) {
        b->M += seqs[s].n_new;
        if (seqs[s].pos) b->n_axes = 4;
    }
    b->ids = g_new(int32_t, b->M);
    b->pos = g_new(int32_t, (size_t)b->n_axes * b->M);
    b->views = g_new0(hyocr_seq_view, n_seqs);
    int row = 0;
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_text_seq *q = &seqs[s];
        memcpy(b->ids + row, q->ids, sizeof(int32_t) * q->n_new);
        for (int a = 0; a < b->n_axes; a++)
            for (int i = 0; i < q->n_new; i++)
                b->pos[(size_t)a * b->M + row + i] = q->pos ? q->pos[(size_t)a * q->n_new + i] : q->kv->n_tokens + i;
        b->views[s] = (hyocr_seq_view){ .block_table = q->kv->blocks, .n_past = q->kv->n_tokens, .n_new = q->n_new };
        row += q->n_new;
    }
}

/* Overwrites the embedding rows of the image placeholders with the merger
 * output, in order (masked_scatter); runs of placeholders are one copy each. */
static bool scatter_image(hyocr_model *m, hyocr_buf *h, const hyocr_text_seq *q, int row0, GError **error)
{
    const size_t H = (size_t)m->cfg.text.hidden_size;
    int used = 0, count = 0;
    for (int i = 0; i < q->n_new; i++) count += q->ids[i] == q->image_token_id;
    if (count != q->n_image_rows) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    "prompt has %d image tokens (id %d) but the vision tower produced %d rows", count,
                    q->image_token_id, q->n_image_rows);
        return false;
    }
    for (int i = 0; i < q->n_new;) {
        if (q->ids[i] != q->image_token_id) {
            i++;
            continue;
        }
        int j = i;
        while (j < q->n_new && q->ids[j] == q->image_token_id) j++;
        if (!OPS->copy(m->be, h, (size_t)(row0 + i) * H, q->image_embeds, (size_t)used * H, (size_t)(j - i) * H,
                       error))
            return false;
        used += j - i;
        i = j;
    }
    return true;
}

static bool embed_rows(hyocr_model *m, const text_batch *b, const hyocr_text_seq *seqs, int n_seqs, GError **error)
{
    const int H = m->cfg.text.hidden_size;
    hyocr_buf *h = hyocr_model_scratch(m, HYOCR_SCRATCH_T_H, HYOCR_BUF_F32, (size_t)b->M * H, error);
    if (!h || !OPS->embed(m->be, h, m->embed, b->ids, b->M, H, error)) return false;
    int row = 0;
    for (int s = 0; s < n_seqs; s++) {
        if (seqs[s].image_embeds && !scatter_image(m, h, &seqs[s], row, error)) return false;
        row += seqs[s].n_new;
    }
    return true;
}

typedef struct {
    hyocr_buf *h, *a, *qkv, *att, *delta, *gu, *act;
} text_bufs;

static bool text_bufs_get(hyocr_model *m, int M, text_bufs *t, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    size_t qkv_w = (size_t)(c->num_heads + 2 * c->num_kv_heads) * c->head_dim;
    size_t H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    t->h = m->scratch[HYOCR_SCRATCH_T_H];
    t->a = hyocr_model_scratch(m, HYOCR_SCRATCH_T_A, HYOCR_BUF_ACT, M * H, error);
    t->qkv = hyocr_model_scratch(m, HYOCR_SCRATCH_T_QKV, HYOCR_BUF_ACT, M * qkv_w, error);
    t->att = hyocr_model_scratch(m, HYOCR_SCRATCH_T_ATT, HYOCR_BUF_ACT, M * (size_t)c->num_heads * c->head_dim, error);
    t->delta = hyocr_model_scratch(m, HYOCR_SCRATCH_T_DELTA, HYOCR_BUF_ACT, M * H, error);
    t->gu = hyocr_model_scratch(m, HYOCR_SCRATCH_T_GU, HYOCR_BUF_ACT, M * 2 * I, error);
    t->act = hyocr_model_scratch(m, HYOCR_SCRATCH_T_ACT, HYOCR_BUF_ACT, M * I, error);
    return t->a && t->qkv && t->att && t->delta && t->gu && t->act;
}

/* One decoder layer. As in the ViT, the MLP output stays in delta and is added
 * by the next add_rmsnorm (or the final norm). */
static bool text_layer(hyocr_model *m, int l, const text_batch *b, int n_seqs, const text_bufs *t, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    const hyocr_text_layer *L = &m->layers[l];
    const int M = b->M, H = c->hidden_size, D = c->head_dim, Hq = c->num_heads, Hkv = c->num_kv_heads;
    const int I = c->intermediate_size;
    const float scale = (float)pow((double)D, -0.5);

    return OPS->add_rmsnorm(m->be, t->a, t->h, l == 0 ? NULL : t->delta, L->in_norm, M, H, c->rms_norm_eps, error) &&
           OPS->matmul(m->be, t->qkv, t->a, L->qkv_w, 0, NULL, M, (Hq + 2 * Hkv) * D, H, error) &&
           OPS->rope_qknorm(m->be, t->qkv, M, b->pos, b->n_axes, Hq, Hkv, &m->rope, L->q_norm, L->k_norm,
                            c->rms_norm_eps, error) &&
           OPS->attention_paged(m->be, t->att, t->qkv, m->k_cache[l], m->v_cache[l], m->kv_block_size, b->views,
                                n_seqs, Hq, Hkv, D, scale, error) &&
           OPS->matmul(m->be, t->delta, t->att, L->o_w, 0, NULL, M, H, Hq * D, error) &&
           OPS->add_rmsnorm(m->be, t->a, t->h, t->delta, L->post_norm, M, H, c->rms_norm_eps, error) &&
           OPS->matmul(m->be, t->gu, t->a, L->gate_up_w, 0, NULL, M, 2 * I, H, error) &&
           OPS->swiglu(m->be, t->act, t->gu, M, I, error) &&
           OPS->matmul(m->be, t->delta, t->act, L->down_w, 0, NULL, M, H, I, error);
}

/* Final norm, then the head on each sequence's last row only. */
static bool text_logits(hyocr_model *m, const text_batch *b, const hyocr_text_seq *seqs, int n_seqs,
                        const text_bufs *t, float *logits, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    const size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size;
    hyocr_buf *last = hyocr_model_scratch(m, HYOCR_SCRATCH_T_LAST, HYOCR_BUF_ACT, n_seqs * H, error);
    hyocr_buf *out = hyocr_model_scratch(m, HYOCR_SCRATCH_T_LOGITS, HYOCR_BUF_F32, n_seqs * V, error);
    if (!last || !out) return false;
    if (!OPS->add_rmsnorm(m->be, t->a, t->h, t->delta, m->final_norm, b->M, (int)H, c->rms_norm_eps, error))
        return false;
    int row = 0;
    for (int s = 0; s < n_seqs; s++) {
        row += seqs[s].n_new;
        if (!OPS->copy(m->be, last, s * H, t->a, (size_t)(row - 1) * H, H, error)) return false;
    }
    return OPS->matmul(m->be, out, last, m->lm_head, 0, NULL, n_seqs, (int)V, (int)H, error) &&
           OPS->download_f32(m->be, out, 0, logits, n_seqs * V, error);
}

static bool reserve_all(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, GError **error)
{
    for (int s = 0; s < n_seqs; s++)
        if (!hyocr_model_kv_reserve(m, seqs[s].kv, seqs[s].n_new, error)) return false;
    return true;
}

static bool layer_cancelled(hyocr_cancel_fn cancel, void *data, GError **error)
{
    if (!cancel || !cancel(data)) return false;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, "cancelled");
    return true;
}

bool hyocr_text_forward(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, float *logits,
                        hyocr_cancel_fn cancel, void *cancel_data, GError **error)
{
    if (!check_seqs(m, seqs, n_seqs, error)) return false;
    /* Reserve first: growing the pool may move blocks, and views point at block tables. */
    if (!reserve_all(m, seqs, n_seqs, error)) return false;

    text_batch b = { 0 };
    text_batch_build(&b, seqs, n_seqs);
    text_bufs t;
    bool ok = embed_rows(m, &b, seqs, n_seqs, error) && text_bufs_get(m, b.M, &t, error);
    for (int l = 0; ok && l < m->cfg.text.num_layers; l++)
        ok = !layer_cancelled(cancel, cancel_data, error) && text_layer(m, l, &b, n_seqs, &t, error);
    ok = ok && text_logits(m, &b, seqs, n_seqs, &t, logits, error);
    if (ok)
        for (int s = 0; s < n_seqs; s++) hyocr_kv_seq_commit(seqs[s].kv, seqs[s].n_new);
    text_batch_clear(&b);
    return ok;
}
