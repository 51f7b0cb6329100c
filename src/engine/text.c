/* hyocr — the decoder (spec §5) over a batch of sequences packed row-wise, with
 * K/V in the paged cache. Prefill rows carry the prompt's 4-axis XD-RoPE
 * positions; decode rows use the 1-D position = cache length (spec §5.4.4). */
#include "model.h"
#include "error.h"
#include "i18n.h"
#include "memplan.h"
#include "sampler.h"
#include <math.h>
#include <string.h>

#define OPS (m->be->ops)

typedef struct {
    int      M;                /* rows over all sequences */
    int      n_axes;           /* 4 when any sequence brings its own positions, else 1 */
    int32_t *ids;              /* [M] */
    int32_t *pos;              /* [n_axes · M] axis-major */
    int     *row0;             /* [n_seqs + 1]: first row of each sequence */
    int     *img_used;         /* [n_seqs]: image rows already scattered */
} text_batch;

/* Rows r0..r0+rows of the batch: their positions, and one view per sequence with
 * rows in the chunk (its cache then holds the sequence's earlier rows). */
typedef struct {
    int             r0, rows;
    int32_t        *pos;       /* [n_axes · rows] */
    hyocr_seq_view *views;
    int            *seq;       /* sequence of each view */
    int             n_views;
} text_chunk;

static void text_batch_clear(text_batch *b)
{
    g_free(b->ids);
    g_free(b->pos);
    g_free(b->row0);
    g_free(b->img_used);
}

static int count_image_tokens(const hyocr_text_seq *q)
{
    int n = 0;
    for (int i = 0; i < q->n_new; i++) n += q->ids[i] == q->image_token_id;
    return n;
}

static bool check_seq(const hyocr_model *m, const hyocr_text_seq *q, int s, GError **error)
{
    if (q->n_new <= 0 || !q->ids || !q->kv) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("text model: sequence %d has no tokens or no KV cache"), s);
        return false;
    }
    for (int i = 0; i < q->n_new; i++) {
        if (q->ids[i] < 0 || q->ids[i] >= m->cfg.text.vocab_size) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("text model: token id %d at position %d is outside the vocabulary of %d tokens"), q->ids[i], i,
                        m->cfg.text.vocab_size);
            return false;
        }
    }
    size_t tap_w = (size_t)m->n_tap_layers * m->cfg.text.hidden_size;
    if (q->taps && (!m->n_tap_layers || q->taps->n < (size_t)q->n_new * tap_w)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("text model: sequence %d asks for the outputs of %d layers in %zu values, but %zu are needed"), s,
                    m->n_tap_layers, q->taps->n, (size_t)q->n_new * tap_w);
        return false;
    }
    int count = q->image_embeds ? count_image_tokens(q) : 0;
    if (q->image_embeds && count != q->n_image_rows) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("the prompt has %d image tokens (id %d) but the vision tower produced %d rows; the chat template and "
                      "the model disagree"), count,
                    q->image_token_id, q->n_image_rows);
        return false;
    }
    return true;
}

static bool check_seqs(const hyocr_model *m, const hyocr_text_seq *seqs, int n_seqs, GError **error)
{
    if (n_seqs <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("text model: no sequences to run"));
        return false;
    }
    for (int s = 0; s < n_seqs; s++)
        if (!check_seq(m, &seqs[s], s, error)) return false;
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
    b->row0 = g_new(int, n_seqs + 1);
    b->img_used = g_new0(int, n_seqs);
    int row = 0;
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_text_seq *q = &seqs[s];
        b->row0[s] = row;
        memcpy(b->ids + row, q->ids, sizeof(int32_t) * q->n_new);
        for (int a = 0; a < b->n_axes; a++)
            for (int i = 0; i < q->n_new; i++)
                b->pos[(size_t)a * b->M + row + i] = q->pos ? q->pos[(size_t)a * q->n_new + i] : q->kv->n_tokens + i;
        row += q->n_new;
    }
    b->row0[n_seqs] = row;
}

static void text_chunk_init(text_chunk *c, const text_batch *b, int n_seqs, int max_rows)
{
    memset(c, 0, sizeof *c);
    c->pos = g_new(int32_t, (size_t)b->n_axes * max_rows);
    c->views = g_new0(hyocr_seq_view, n_seqs);
    c->seq = g_new0(int, n_seqs);
}

static void text_chunk_clear(text_chunk *c)
{
    g_free(c->pos);
    g_free(c->views);
    g_free(c->seq);
}

static void text_chunk_set(text_chunk *c, const text_batch *b, const hyocr_text_seq *seqs, int n_seqs, int r0,
                           int rows)
{
    c->r0 = r0;
    c->rows = rows;
    for (int a = 0; a < b->n_axes; a++)
        memcpy(c->pos + (size_t)a * rows, b->pos + (size_t)a * b->M + r0, sizeof(int32_t) * rows);
    c->n_views = 0;
    for (int s = 0; s < n_seqs; s++) {
        int lo = MAX(r0, b->row0[s]), hi = MIN(r0 + rows, b->row0[s + 1]);
        if (lo >= hi) continue;
        c->seq[c->n_views] = s;
        c->views[c->n_views++] = (hyocr_seq_view){
            .block_table = seqs[s].kv->blocks, .n_past = seqs[s].kv->n_tokens + (lo - b->row0[s]), .n_new = hi - lo,
        };
    }
}

/* Overwrites the embedding rows of the image placeholders among the chunk's
 * rows of sequence s with the merger output, in order (masked_scatter); runs of
 * placeholders are one copy each. */
static bool scatter_image(hyocr_model *m, hyocr_buf *h, const hyocr_text_seq *q, text_batch *b, int s,
                          const text_chunk *c, GError **error)
{
    const size_t H = (size_t)m->cfg.text.hidden_size;
    int lo = MAX(c->r0, b->row0[s]) - b->row0[s], hi = MIN(c->r0 + c->rows, b->row0[s + 1]) - b->row0[s];
    int at = b->row0[s] - c->r0;   /* chunk row of the sequence's row 0 */
    for (int i = lo; i < hi;) {
        if (q->ids[i] != q->image_token_id) {
            i++;
            continue;
        }
        int j = i;
        while (j < hi && q->ids[j] == q->image_token_id) j++;
        if (!OPS->copy(m->be, h, (size_t)(at + i) * H, q->image_embeds, (size_t)b->img_used[s] * H,
                       (size_t)(j - i) * H, error))
            return false;
        b->img_used[s] += j - i;
        i = j;
    }
    return true;
}

static bool embed_rows(hyocr_model *m, hyocr_buf *h, text_batch *b, const hyocr_text_seq *seqs, const text_chunk *c,
                       GError **error)
{
    const int H = m->cfg.text.hidden_size;
    if (!OPS->embed(m->be, h, m->embed, b->ids + c->r0, c->rows, H, error)) return false;
    for (int v = 0; v < c->n_views; v++) {
        int s = c->seq[v];
        if (seqs[s].image_embeds && !scatter_image(m, h, &seqs[s], b, s, c, error)) return false;
    }
    return true;
}

typedef struct {
    hyocr_buf *h, *a, *qkv, *att, *delta, *gu, *act, *last, *logits;
    hyocr_buf *mlp;                  /* gu and act in one allocation: the attention's spare */
    hyocr_buf  gu_view, act_view;    /* what gu and act point to */
} text_bufs;

/* One chunk's worth of every role (the residual h included: a chunk runs
 * through all layers before the next starts), the last rows and the logits. */
static bool text_bufs_get(hyocr_model *m, int rows, int n_seqs, text_bufs *t, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    size_t qkv_w = (size_t)(c->num_heads + 2 * c->num_kv_heads) * c->head_dim;
    size_t H = (size_t)c->hidden_size, I = (size_t)c->intermediate_size, M = (size_t)rows;
    t->h = hyocr_model_scratch(m, HYOCR_SCRATCH_T_H, HYOCR_BUF_F32, M * H, error);
    t->a = hyocr_model_scratch(m, HYOCR_SCRATCH_T_A, HYOCR_BUF_ACT, M * H, error);
    t->qkv = hyocr_model_scratch(m, HYOCR_SCRATCH_T_QKV, HYOCR_BUF_ACT, M * qkv_w, error);
    t->att = hyocr_model_scratch(m, HYOCR_SCRATCH_T_ATT, HYOCR_BUF_ACT, M * (size_t)c->num_heads * c->head_dim, error);
    t->delta = hyocr_model_scratch(m, HYOCR_SCRATCH_T_DELTA, HYOCR_BUF_ACT, M * H, error);
    /* one buffer, so that while the attention runs (neither holds anything then) the
     * backend has the two together for its partials (attention_paged's spare) */
    t->mlp = hyocr_model_scratch(m, HYOCR_SCRATCH_T_MLP, HYOCR_BUF_ACT, M * 3 * I, error);
    t->last = hyocr_model_scratch(m, HYOCR_SCRATCH_T_LAST, HYOCR_BUF_ACT, (size_t)n_seqs * H, error);
    t->logits = hyocr_model_scratch(m, HYOCR_SCRATCH_T_LOGITS, HYOCR_BUF_F32, (size_t)n_seqs * c->vocab_size, error);
    if (!t->h || !t->a || !t->qkv || !t->att || !t->delta || !t->mlp || !t->last || !t->logits) return false;
    t->gu_view = hyocr_buf_view(t->mlp, 0, M * 2 * I);
    t->act_view = hyocr_buf_view(t->mlp, M * 2 * I, M * I);
    t->gu = &t->gu_view;
    t->act = &t->act_view;
    return true;
}

/* Decode-sized steps (batch 1, batches of a few jobs, a verify block) take the fused
 * products up to the rows the model says (m->fused_rows, hyocr_model_load). */
static bool use_fused(const hyocr_model *m, int rows)
{
    return rows <= m->fused_rows;
}

/* The fused layer: the products add into the residual h themselves, so delta
 * is not used and the final norm takes h as it is. */
static bool text_layer_fused(hyocr_model *m, int l, const text_batch *b, const text_chunk *k, const text_bufs *t,
                             GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    const hyocr_text_layer *L = &m->layers[l];
    const int M = k->rows, H = c->hidden_size, D = c->head_dim, Hq = c->num_heads, Hkv = c->num_kv_heads;
    const float eps = c->rms_norm_eps, scale = (float)pow((double)D, -0.5);

    return OPS->norm_matmul(m->be, t->qkv, t->h, L->in_norm, eps, L->qkv_w, M, (Hq + 2 * Hkv) * D, H, false, error) &&
           OPS->rope_qknorm(m->be, t->qkv, M, k->pos, b->n_axes, Hq, Hkv, &m->rope, L->q_norm, L->k_norm, eps,
                            error) &&
           OPS->attention_paged(m->be, t->att, t->qkv, m->k_cache[l], m->v_cache[l], m->kv_block_size, k->views,
                                k->n_views, Hq, Hkv, D, scale, t->mlp, error) &&
           OPS->matmul_residual(m->be, t->h, t->att, L->o_w, M, H, Hq * D, error) &&
           OPS->norm_matmul(m->be, t->act, t->h, L->post_norm, eps, L->gate_up_w, M, c->intermediate_size, H, true,
                            error) &&
           OPS->matmul_residual(m->be, t->h, t->act, L->down_w, M, H, c->intermediate_size, error);
}

/* One decoder layer over the chunk's rows. As in the ViT, the MLP output stays
 * in delta and is added by the next add_rmsnorm (or the final norm); pending says
 * whether delta holds one now (not before the first layer, nor after a tap). The
 * attention may fill mlp (gu and act: written only later, by gate|up and SwiGLU) with
 * its own partials. */
static bool text_layer(hyocr_model *m, int l, bool pending, const text_batch *b, const text_chunk *k,
                       const text_bufs *t, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    const hyocr_text_layer *L = &m->layers[l];
    const int M = k->rows, H = c->hidden_size, D = c->head_dim, Hq = c->num_heads, Hkv = c->num_kv_heads;
    const int I = c->intermediate_size;
    const float scale = (float)pow((double)D, -0.5);

    if (use_fused(m, M)) return text_layer_fused(m, l, b, k, t, error);
    return OPS->add_rmsnorm(m->be, t->a, t->h, pending ? t->delta : NULL, L->in_norm, M, H, c->rms_norm_eps, error) &&
           OPS->matmul(m->be, t->qkv, t->a, L->qkv_w, 0, NULL, M, (Hq + 2 * Hkv) * D, H, error) &&
           OPS->rope_qknorm(m->be, t->qkv, M, k->pos, b->n_axes, Hq, Hkv, &m->rope, L->q_norm, L->k_norm,
                            c->rms_norm_eps, error) &&
           OPS->attention_paged(m->be, t->att, t->qkv, m->k_cache[l], m->v_cache[l], m->kv_block_size, k->views,
                                k->n_views, Hq, Hkv, D, scale, t->mlp, error) &&
           OPS->matmul(m->be, t->delta, t->att, L->o_w, 0, NULL, M, H, Hq * D, error) &&
           OPS->add_rmsnorm(m->be, t->a, t->h, t->delta, L->post_norm, M, H, c->rms_norm_eps, error) &&
           OPS->matmul(m->be, t->gu, t->a, L->gate_up_w, 0, NULL, M, 2 * I, H, error) &&
           OPS->swiglu(m->be, t->act, t->gu, M, I, error) &&
           OPS->matmul(m->be, t->delta, t->act, L->down_w, 0, NULL, M, H, I, error);
}

/* The output of layer l, when it is a tap layer, for the chunk's rows of each sequence that
 * keeps taps (the DFlash draft's context): one 2-D copy per sequence into its column of the
 * taps. In the unfused layer the MLP output still waits in delta: it is added to h here (the
 * same float adds add_rmsnorm would do), and the next layer then has nothing pending. */
static bool keep_taps(hyocr_model *m, int l, const hyocr_text_seq *seqs, int n_seqs, const text_batch *b,
                      const text_chunk *k, const text_bufs *t, bool *pending, GError **error)
{
    int slot = -1;
    for (int i = 0; i < m->n_tap_layers; i++)
        if (m->tap_layers[i] == l) slot = i;
    bool any = false;
    for (int s = 0; s < n_seqs; s++) any |= seqs[s].taps != NULL;
    if (slot < 0 || !any || l >= m->cfg.text.num_layers - 1) return true;
    const size_t H = (size_t)m->cfg.text.hidden_size, W = (size_t)m->n_tap_layers * H;
    if (*pending && !OPS->add(m->be, t->h, t->delta, (size_t)k->rows * H, error)) return false;
    *pending = false;
    for (int s = 0; s < n_seqs; s++) {
        if (!seqs[s].taps) continue;
        int lo = MAX(k->r0, b->row0[s]), hi = MIN(k->r0 + k->rows, b->row0[s + 1]);
        if (lo < hi && !OPS->copy_rows(m->be, seqs[s].taps, (size_t)(lo - b->row0[s]) * W + (size_t)slot * H, W,
                                       t->h, (size_t)(lo - k->r0) * H, H, hi - lo, (int)H, error))
            return false;
    }
    return true;
}

/* Final norm of the sequences whose last row is in this chunk, into their slot of last. */
static bool text_last_rows(hyocr_model *m, const text_batch *b, const text_chunk *k, const text_bufs *t,
                           bool pending, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    const size_t H = (size_t)c->hidden_size;
    for (int v = 0; v < k->n_views; v++) {
        int s = k->seq[v], row = b->row0[s + 1] - 1 - k->r0;
        if (row >= k->rows) continue;
        hyocr_buf out = hyocr_buf_view(t->last, (size_t)s * H, H), h = hyocr_buf_view(t->h, row * H, H),
                  d = hyocr_buf_view(t->delta, row * H, H);
        if (!OPS->add_rmsnorm(m->be, &out, &h, pending ? &d : NULL, m->final_norm, 1, (int)H,
                              c->rms_norm_eps, error))
            return false;
    }
    return true;
}

/* The head on each sequence's last row only. */
static bool text_logits(hyocr_model *m, int n_seqs, const text_bufs *t, float *logits, GError **error)
{
    const hyocr_text_config *c = &m->cfg.text;
    const size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size;
    return OPS->matmul(m->be, t->logits, t->last, m->lm_head, 0, NULL, n_seqs, (int)V, (int)H, error) &&
           OPS->download_f32(m->be, t->logits, 0, logits, n_seqs * V, error);
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
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled"));
    return true;
}

bool hyocr_text_prepare(hyocr_model *m, int rows, int n_seqs, GError **error)
{
    text_bufs t;
    return text_bufs_get(m, hyocr_memplan_text_chunk(rows, m->text_chunk_rows), n_seqs, &t, error);
}

/* Long prompts run in chunks of rows, each through all layers before the next
 * (its attention reads the earlier chunks' K/V from the cache), so the scratch
 * is one chunk's worth however long the prompt is. */
bool hyocr_text_forward(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, float *logits,
                        hyocr_cancel_fn cancel, void *cancel_data, GError **error)
{
    if (!check_seqs(m, seqs, n_seqs, error)) return false;
    /* Reserve first: growing the pool may move blocks, and views point at block tables. */
    if (!reserve_all(m, seqs, n_seqs, error)) return false;

    text_batch b = { 0 };
    text_batch_build(&b, seqs, n_seqs);
    const int step = hyocr_memplan_text_chunk(b.M, m->text_chunk_rows);
    text_chunk k;
    text_chunk_init(&k, &b, n_seqs, step);
    hyocr_backend_mark(m->be, "text: reserved");
    text_bufs t;
    bool ok = text_bufs_get(m, step, n_seqs, &t, error);
    hyocr_backend_mark(m->be, "text: buffers");
    for (int r0 = 0; ok && r0 < b.M; r0 += step) {
        text_chunk_set(&k, &b, seqs, n_seqs, r0, MIN(step, b.M - r0));
        ok = embed_rows(m, t.h, &b, seqs, &k, error);
        bool pending = false;
        for (int l = 0; ok && l < m->cfg.text.num_layers; l++) {
            ok = !layer_cancelled(cancel, cancel_data, error) && text_layer(m, l, pending, &b, &k, &t, error);
            pending = !use_fused(m, k.rows);
            ok = ok && keep_taps(m, l, seqs, n_seqs, &b, &k, &t, &pending, error);
        }
        ok = ok && text_last_rows(m, &b, &k, &t, pending, error);
    }
    ok = ok && text_logits(m, n_seqs, &t, logits, error);
    if (ok)
        for (int s = 0; s < n_seqs; s++) hyocr_kv_seq_commit(seqs[s].kv, seqs[s].n_new);
    text_chunk_clear(&k);
    text_batch_clear(&b);
    hyocr_backend_mark(m->be, "text: done");
    return ok;
}

/* ---- decoding with the token chosen on the device ----------------------------------
 * Every row of a step is a decode row at its own position, with a view of its own: a sequence
 * that brings several rows (a verify block) has them at consecutive positions, each seeing the
 * rows before it through the cache (the backend stores all of them before it attends). */

static bool check_decode(const hyocr_model *m, const hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks,
                         int max_rows, GError **error)
{
    if (!check_seqs(m, seqs, n_seqs, error)) return false;
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_text_seq *q = &seqs[s];
        int slot = picks[s].slot;
        if (q->n_new > max_rows || q->pos || q->image_embeds) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("text model: decode sequence %d must bring 1 to %d tokens, without positions or image rows"), s,
                        max_rows);
            return false;
        }
        if (slot < 0 || slot >= m->pick_n_slots || !m->pick_used[slot]) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("text model: decode sequence %d uses token-choice slot %d, which is not open"), s, slot);
            return false;
        }
        for (int o = 0; o < s; o++)
            if (picks[o].slot == slot) {
                g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                            _("text model: decode sequences %d and %d share token-choice slot %d"), o, s, slot);
                return false;
            }
    }
    return true;
}

/* What the token choice of a step needs per row. */
typedef struct {
    int32_t         *slots, *first;   /* first NULL: no row verifies */
    float           *pens;
    hyocr_pick_draw *draws;           /* NULL: every row greedy */
} pick_rows;

static void pick_rows_clear(pick_rows *p)
{
    g_free(p->slots);
    g_free(p->first);
    g_free(p->pens);
    g_free(p->draws);
}

/* Row i ≥ 1 of a block draws with the sampler's u of the token it stands for. */
static void pick_rows_build(pick_rows *p, const hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks,
                            const text_batch *b, bool block)
{
    p->slots = g_new(int32_t, (guint)b->M);
    p->pens = g_new(float, (guint)b->M);
    p->draws = g_new0(hyocr_pick_draw, (guint)b->M);
    p->first = block ? g_new(int32_t, (guint)b->M) : NULL;
    bool sampling = false;
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_pick *k = &picks[s];
        bool draw = k->draw.temperature > 0.0f;
        sampling |= draw;
        for (int i = 0; i < seqs[s].n_new; i++) {
            int r = b->row0[s] + i;
            p->slots[r] = k->slot;
            p->pens[r] = k->penalty;
            if (p->first) p->first[r] = seqs[s].n_new > 1 ? b->row0[s] : -1;
            if (!draw) continue;
            p->draws[r] = k->draw;
            if (i > 0) p->draws[r].u = hyocr_sampler_uniform(k->seed, k->n_draw + (uint64_t)i);
        }
    }
    if (!sampling) g_clear_pointer(&p->draws, g_free);
}

/* One view per row (see above); seq maps each to its sequence. */
static void decode_views(text_chunk *c, const text_batch *b, const hyocr_text_seq *seqs, int n_seqs)
{
    c->r0 = 0;
    c->rows = b->M;
    memcpy(c->pos, b->pos, sizeof(int32_t) * (size_t)b->M);
    c->n_views = 0;
    for (int s = 0; s < n_seqs; s++)
        for (int i = 0; i < seqs[s].n_new; i++) {
            c->seq[c->n_views] = s;
            c->views[c->n_views++] = (hyocr_seq_view){
                .block_table = seqs[s].kv->blocks, .n_past = seqs[s].kv->n_tokens + i, .n_new = 1,
            };
        }
}

typedef struct {
    hyocr_model              *m;
    text_batch               *b;
    const hyocr_text_seq     *seqs;
    int                       n_seqs;
    const text_chunk         *k;
    const text_bufs          *t;
    const pick_rows          *p;
    bool                      block;   /* ids from the model's step_ids; the pick verifies */
    const hyocr_decode_hooks *hooks;
} decode_work;

/* Embedding, the layers (and taps), the final norm of every row (each is the last of its
 * position), the head and the choice: the work of one step, captured as a whole. Captured, the
 * choice reads the slots, penalties, draws and blocks of the bound meta. */
static bool decode_ops(const decode_work *w, bool captured, GError **error)
{
    hyocr_model *m = w->m;
    const text_bufs *t = w->t;
    const hyocr_text_config *c = &m->cfg.text;
    const int n = w->k->rows, H = c->hidden_size, V = c->vocab_size;
    bool ok = w->block ? OPS->embed_ids(m->be, t->h, m->embed, m->step_ids, 0, n, H, error)
                       : embed_rows(m, t->h, w->b, w->seqs, w->k, error);
    bool pending = false;
    for (int l = 0; ok && l < c->num_layers; l++) {
        ok = text_layer(m, l, pending, w->b, w->k, t, error);
        pending = !use_fused(m, n);
        ok = ok && keep_taps(m, l, w->seqs, w->n_seqs, w->b, w->k, t, &pending, error);
    }
    const pick_rows *p = w->p;
    return ok &&
           OPS->add_rmsnorm(m->be, t->last, t->h, pending ? t->delta : NULL, m->final_norm, n, H, c->rms_norm_eps,
                            error) &&
           OPS->matmul(m->be, t->logits, t->last, m->lm_head, 0, NULL, n, V, H, error) &&
           OPS->pick(m->be, t->logits, n, V, m->pick_seen, captured ? NULL : p->slots, captured ? NULL : p->pens,
                     captured ? NULL : p->draws, captured ? NULL : p->first, w->block ? m->step_ids : NULL, error);
}

static bool decode_work_run(void *data, bool captured, GError **error)
{
    const decode_work *w = data;
    const hyocr_decode_hooks *h = w->hooks;
    return (!h || !h->before || h->before(h->data, captured, error)) && decode_ops(w, captured, error) &&
           (!h || !h->after || h->after(h->data, captured, error));
}

static uint64_t mix(uint64_t h, const void *p)
{
    return (h ^ (uint64_t)(uintptr_t)p) * 1099511628211ull;
}

/* The graph key beyond the shape: the buffers, whether a row samples (the draw
 * kernel is then part of the step), the blocks' layout and the hooks. Whether a
 * step is fused follows from its row count, which the key holds already. */
static uint64_t decode_signature(const decode_work *w)
{
    const hyocr_model *m = w->m;
    const text_bufs *t = w->t;
    uint64_t h = 1469598103934665603ull;
    h = mix(h, (const void *)(uintptr_t)(w->p->draws ? 3 : 4));
    const hyocr_buf *bufs[] = { t->h, t->a, t->qkv, t->att, t->delta, t->gu, t->act, t->last, t->logits, m->pick_seen };
    for (size_t i = 0; i < G_N_ELEMENTS(bufs); i++) h = mix(h, bufs[i]->data);
    for (int l = 0; l < m->cfg.text.num_layers; l++) h = mix(mix(h, m->k_cache[l]->data), m->v_cache[l]->data);
    for (int s = 0; s < w->n_seqs; s++) {
        /* which rows form blocks, and where their taps go */
        h = mix(mix(h, (const void *)(uintptr_t)w->seqs[s].n_new), w->seqs[s].taps ? w->seqs[s].taps->data : NULL);
    }
    if (w->block) h = mix(h, m->step_ids->data);
    return w->hooks ? mix(h, (const void *)(uintptr_t)w->hooks->sig) : h;
}

/* The log-probabilities the plain step's picks ask for (one row a sequence), after its choice. */
static bool decode_logprobs(hyocr_model *m, const hyocr_buf *logits, const hyocr_pick *picks, int n,
                            hyocr_token_logprobs *out, GError **error)
{
    bool any = false;
    for (int i = 0; i < n; i++) any |= picks[i].logprobs;
    if (!any) return true;
    if (!OPS->pick_logprobs || !out)
        return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                           _("log-probabilities asked of a decode step that cannot give them")), false;
    g_autofree int32_t *n_top = g_new(int32_t, n);
    for (int i = 0; i < n; i++) n_top[i] = picks[i].logprobs ? picks[i].top_logprobs : -1;
    return OPS->pick_logprobs(m->be, logits, n, m->cfg.text.vocab_size, n_top, out, error);
}

static bool decode_run(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks, bool block,
                       const hyocr_decode_hooks *hooks, int32_t *next, bool *nonfinite, int32_t *fed,
                       hyocr_token_logprobs *logprobs, GError **error)
{
    if (!check_decode(m, seqs, n_seqs, picks, block ? HYOCR_DFLASH_MAX_BLOCK : 1, error)) return false;
    if (!reserve_all(m, seqs, n_seqs, error)) return false;

    text_batch b = { 0 };
    text_batch_build(&b, seqs, n_seqs);
    const int R = b.M;
    text_chunk k;
    text_chunk_init(&k, &b, R, R);
    decode_views(&k, &b, seqs, n_seqs);
    pick_rows p = { 0 };
    pick_rows_build(&p, seqs, n_seqs, picks, &b, block);
    text_bufs t;
    bool ok = text_bufs_get(m, R, R, &t, error);
    /* the rows' tokens where the step (and the draft before it) reads and writes them */
    ok = ok && (!block || (hyocr_model_step_ids(m, R, error) &&
                           OPS->upload_f32(m->be, m->step_ids, 0, (const float *)b.ids, (size_t)R, error)));
    decode_work w = { m, &b, seqs, n_seqs, &k, &t, &p, block, hooks };
    if (ok && hyocr_decode_graphs_wanted(m)) {
        hyocr_decode_meta dm = { .n_rows = R, .ids = b.ids, .views = k.views, .pick_slots = p.slots,
                                 .pick_penalties = p.pens, .pick_draws = p.draws, .pick_first = p.first,
                                 .shared = block && R > n_seqs };
        ok = hyocr_decode_graphs_run(m, &dm, decode_signature(&w), decode_work_run, &w, error);
    } else if (ok) {
        ok = decode_work_run(&w, false, error);
    }
    g_autofree bool *nf = g_new(bool, (guint)R);
    ok = ok && (block || decode_logprobs(m, t.logits, picks, R, logprobs, error)) &&
         OPS->pick_fetch(m->be, R, next, nf, error) &&
         (!fed || !block || OPS->download_f32(m->be, m->step_ids, 0, (float *)fed, (size_t)R, error));
    if (ok) {
        if (nonfinite) memcpy(nonfinite, nf, sizeof(bool) * (size_t)R);
        if (fed && !block) memcpy(fed, b.ids, sizeof(int32_t) * (size_t)R);
        for (int s = 0; s < n_seqs; s++) hyocr_kv_seq_commit(seqs[s].kv, seqs[s].n_new);
    }
    pick_rows_clear(&p);
    text_chunk_clear(&k);
    text_batch_clear(&b);
    return ok;
}

bool hyocr_text_decode(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks, int32_t *next,
                       bool *nonfinite, hyocr_token_logprobs *logprobs, float *logits, GError **error)
{
    if (!picks) return hyocr_text_forward(m, seqs, n_seqs, logits, NULL, NULL, error);
    return decode_run(m, seqs, n_seqs, picks, false, NULL, next, nonfinite, NULL, logprobs, error);
}

bool hyocr_text_decode_round(hyocr_model *m, hyocr_text_seq *seqs, int n_seqs, const hyocr_pick *picks,
                             const hyocr_decode_hooks *hooks, int32_t *next, bool *nonfinite, int32_t *fed,
                             GError **error)
{
    return decode_run(m, seqs, n_seqs, picks, true, hooks, next, nonfinite, fed, NULL, error);
}
