/* hyocr — vision tower (patch embed, position table, pre-norm ViT blocks) and the
 * "perceive" merger (spec §4). The residual stream is an fp32 buffer; block
 * inputs/outputs are activation buffers. */
#include "model.h"
#include "error.h"
#include "i18n.h"
#include <math.h>

#define OPS (m->be->ops)

typedef struct {
    int n, C, H, D, I;   /* patches, width, heads, head dim, MLP width */
    int rows;            /* rows per chunk of the row-wise parts */
    float eps, scale;
} vit_dims;

static inline hyocr_buf rows_of(const hyocr_buf *b, size_t r0, size_t k, size_t width)
{
    return hyocr_buf_view(b, r0 * width, k * width);
}

static bool check_cancel(hyocr_cancel_fn cancel, void *data, GError **error)
{
    if (cancel && cancel(data)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled"));
        return false;
    }
    return true;
}

static bool check_grid(const hyocr_model *m, const hyocr_pixels *px, GError **error)
{
    const hyocr_vision_config *v = &m->cfg.vision;
    int pd = v->num_channels * v->patch_size * v->patch_size;
    if (px->grid_h <= 0 || px->grid_w <= 0 || px->grid_h % 2 || px->grid_w % 2 ||
        px->n_patches != px->grid_h * px->grid_w || px->patch_dim != pd || !px->data) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("vision tower: a grid of %d×%d with %d patches of %d values does not fit the model "
                      "(it needs an even grid and %d values per patch)"), px->grid_h, px->grid_w, px->n_patches, px->patch_dim, pd);
        return false;
    }
    return true;
}

/* Patch GEMM (+bias) into the residual, then the interpolated position table.
 * The pixels' buffer is gone before the blocks take theirs. */
static hyocr_buf *embed_patches(hyocr_model *m, const hyocr_pixels *px, const vit_dims *d, GError **error)
{
    const int K = px->patch_dim;
    /* ACT, not F32: the reference casts pixel_values to the model dtype before the conv. */
    hyocr_buf *pix = hyocr_model_scratch(m, HYOCR_SCRATCH_V_PIX, HYOCR_BUF_ACT, (size_t)d->n * K, error);
    hyocr_buf *x = hyocr_model_scratch(m, HYOCR_SCRATCH_V_X, HYOCR_BUF_F32, (size_t)d->n * d->C, error);
    bool ok = pix && x && OPS->upload_f32(m->be, pix, 0, px->data, (size_t)d->n * K, error) &&
              OPS->matmul(m->be, x, pix, m->patch_w, 0, m->patch_b, d->n, d->C, K, error) &&
              OPS->posemb_add(m->be, x, m->pos_table, 1, hyocr_config_pos_edge(&m->cfg), px->grid_h, px->grid_w,
                              d->C, m->cfg.posemb_interp, error);
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_V_PIX);
    return ok ? x : NULL;
}

/* Whole-image buffers (residual, q|k|v, attention output: attention needs all
 * rows at once) and chunk-sized ones for everything row-wise. */
typedef struct {
    hyocr_buf *x, *qkv, *att, *a, *delta, *h;
} vit_bufs;

static bool vit_bufs_get(hyocr_model *m, const vit_dims *d, vit_bufs *t, GError **error)
{
    size_t n = (size_t)d->n, k = (size_t)d->rows;
    t->x = m->scratch[HYOCR_SCRATCH_V_X];
    t->a = hyocr_model_scratch(m, HYOCR_SCRATCH_V_A, HYOCR_BUF_ACT, k * d->C, error);
    t->qkv = hyocr_model_scratch(m, HYOCR_SCRATCH_V_QKV, HYOCR_BUF_ACT, n * 3 * d->C, error);
    t->att = hyocr_model_scratch(m, HYOCR_SCRATCH_V_ATT, HYOCR_BUF_ACT, n * d->C, error);
    t->delta = hyocr_model_scratch(m, HYOCR_SCRATCH_V_DELTA, HYOCR_BUF_ACT, k * d->C, error);
    t->h = hyocr_model_scratch(m, HYOCR_SCRATCH_V_MLP, HYOCR_BUF_ACT, k * d->I, error);
    return t->a && t->qkv && t->att && t->delta && t->h;
}

/* LayerNorm 1 of block b and its q|k|v, for rows r0..r0+k; the residual first
 * takes the previous block's MLP output when delta is given. */
static bool vit_attn_in(hyocr_model *m, const hyocr_vit_block *b, const vit_dims *d, const vit_bufs *t, int r0, int k,
                        const hyocr_buf *delta, GError **error)
{
    hyocr_buf x = rows_of(t->x, r0, k, d->C), qkv = rows_of(t->qkv, r0, k, 3 * (size_t)d->C);
    return OPS->add_layernorm(m->be, t->a, &x, delta, b->ln1_g, b->ln1_b, k, d->C, d->eps, error) &&
           OPS->matmul(m->be, &qkv, t->a, b->qkv_w, 0, b->qkv_b, k, 3 * d->C, d->C, error);
}

/* After block b's attention, rows r0..r0+k: O projection, LayerNorm 2, MLP;
 * then the next block's LayerNorm 1 and q|k|v (the residual add fused into
 * it), or after the last block the plain residual add. */
static bool vit_rows(hyocr_model *m, const hyocr_vit_block *b, const hyocr_vit_block *next, const vit_dims *d,
                     const vit_bufs *t, int r0, int k, GError **error)
{
    hyocr_buf x = rows_of(t->x, r0, k, d->C), att = rows_of(t->att, r0, k, d->C);
    bool ok = OPS->matmul(m->be, t->delta, &att, b->o_w, 0, b->o_b, k, d->C, d->C, error) &&
              OPS->add_layernorm(m->be, t->a, &x, t->delta, b->ln2_g, b->ln2_b, k, d->C, d->eps, error) &&
              OPS->matmul(m->be, t->h, t->a, b->fc1_w, 0, b->fc1_b, k, d->I, d->C, error) &&
              OPS->gelu(m->be, t->h, (size_t)k * d->I, error) &&
              OPS->matmul(m->be, t->delta, t->h, b->fc2_w, 0, b->fc2_b, k, d->C, d->I, error);
    if (!ok) return false;
    if (next) return vit_attn_in(m, next, d, t, r0, k, t->delta, error);
    return OPS->add(m->be, &x, t->delta, (size_t)k * d->C, error);
}

/* One block: attention over the whole image, the rest chunk by chunk. */
static bool vit_block(hyocr_model *m, int i, const vit_dims *d, const vit_bufs *t, GError **error)
{
    const hyocr_vit_block *next = i + 1 < m->cfg.vision.num_layers ? &m->vit[i + 1] : NULL;
    if (!OPS->attention_full(m->be, t->att, t->qkv, d->n, d->H, d->D, d->scale, error)) return false;
    for (int r0 = 0; r0 < d->n; r0 += d->rows)
        if (!vit_rows(m, &m->vit[i], next, d, t, r0, MIN(d->rows, d->n - r0), error)) return false;
    return true;
}

static bool download_copy(hyocr_model *m, const hyocr_buf *b, size_t n, float **out, size_t *out_n, GError **error)
{
    float *host = g_try_new(float, n);
    if (!host) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("stage dump: out of host memory for %zu floats"), n);
        return false;
    }
    if (!OPS->download_f32(m->be, b, 0, host, n, error)) {
        g_free(host);
        return false;
    }
    g_free(*out);
    *out = host;
    *out_n = n;
    return true;
}

/* before_rms then the 2×2 gather, by chunks of merged rows (a merged row is
 * two patch rows of x), into [cells, 4C]; the residual x is freed after. */
static hyocr_buf *merger_gather(hyocr_model *m, const vit_dims *d, int gh, int gw, GError **error)
{
    const int C = d->C, Hm = gh / 2, Wm = gw / 2;
    const int step = CLAMP(d->rows / (2 * gw), 1, Hm);
    hyocr_buf *x = m->scratch[HYOCR_SCRATCH_V_X];
    hyocr_buf *a = hyocr_model_scratch(m, HYOCR_SCRATCH_M_NORM, HYOCR_BUF_ACT, (size_t)2 * step * gw * C, error);
    hyocr_buf *g = hyocr_model_scratch(m, HYOCR_SCRATCH_M_GATHER, HYOCR_BUF_ACT, (size_t)Hm * Wm * 4 * C, error);
    bool ok = a && g;
    for (int i0 = 0; ok && i0 < Hm; i0 += step) {
        int k = MIN(step, Hm - i0), pr = 2 * k * gw;   /* merged rows, patch rows */
        hyocr_buf xv = rows_of(x, (size_t)2 * i0 * gw, pr, C);
        hyocr_buf gv = rows_of(g, (size_t)i0 * Wm, (size_t)k * Wm, 4 * (size_t)C);
        ok = OPS->add_rmsnorm(m->be, a, &xv, NULL, m->before_rms, pr, C, d->eps, error) &&
             OPS->merge_gather(m->be, &gv, a, 2 * k, gw, C, error);
    }
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_NORM);
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_V_X);
    return ok ? g : NULL;
}

/* Conv 2×2/2 (a GEMM over the gathered cells) → GELU → conv 1×1, by chunks of
 * cells, into [cells, 4C]. */
static hyocr_buf *merger_convs(hyocr_model *m, const vit_dims *d, const hyocr_buf *g, int cells, GError **error)
{
    const int C = d->C, step = MIN(cells, d->rows);
    hyocr_buf *p0 = hyocr_model_scratch(m, HYOCR_SCRATCH_M_P0, HYOCR_BUF_ACT, (size_t)step * 2 * C, error);
    hyocr_buf *p2 = hyocr_model_scratch(m, HYOCR_SCRATCH_M_P2, HYOCR_BUF_ACT, (size_t)cells * 4 * C, error);
    bool ok = p0 && p2;
    for (int c0 = 0; ok && c0 < cells; c0 += step) {
        int k = MIN(step, cells - c0);
        hyocr_buf gv = rows_of(g, c0, k, 4 * (size_t)C), pv = rows_of(p2, c0, k, 4 * (size_t)C);
        ok = OPS->matmul(m->be, p0, &gv, m->proj0_w, 0, m->proj0_b, k, 2 * C, 4 * C, error) &&
             OPS->gelu(m->be, p0, (size_t)k * 2 * C, error) &&
             OPS->matmul(m->be, &pv, p0, m->proj2_w, 0, m->proj2_b, k, 4 * C, 2 * C, error);
    }
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_GATHER);
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_P0);
    return ok ? p2 : NULL;
}

/* Newline column, then the Linear by chunks of rows, each landing (through the
 * activation type, as the reference rounds it) in the fp32 rows between the
 * begin and end vectors: [Hm·(Wm+1) + 2, T] in slot M_PRE. */
static hyocr_buf *merger_rows(hyocr_model *m, const vit_dims *d, const hyocr_buf *p2, int Hm, int Wm, GError **error)
{
    const int C = d->C, T = m->cfg.vision.out_hidden_size, rows = Hm * (Wm + 1), step = MIN(rows, d->rows);
    /* Two spare rows: the op's contract sizes its output with the begin/end slots. */
    hyocr_buf *nl = hyocr_model_scratch(m, HYOCR_SCRATCH_M_NL, HYOCR_BUF_ACT, (size_t)(rows + 2) * 4 * C, error);
    bool ok = nl && OPS->append_newline(m->be, nl, p2, m->newline, Hm, Wm, 4 * C, error);
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_P2);
    hyocr_buf *pre = hyocr_model_scratch(m, HYOCR_SCRATCH_M_PRE, HYOCR_BUF_F32, (size_t)(rows + 2) * T, error);
    hyocr_buf *y = hyocr_model_scratch(m, HYOCR_SCRATCH_M_MLP, HYOCR_BUF_ACT, (size_t)step * T, error);
    ok = ok && pre && y && OPS->copy(m->be, pre, 0, m->img_begin, 0, T, error) &&
         OPS->copy(m->be, pre, (size_t)(rows + 1) * T, m->img_end, 0, T, error);
    for (int r0 = 0; ok && r0 < rows; r0 += step) {
        int k = MIN(step, rows - r0);
        hyocr_buf nv = rows_of(nl, r0, k, 4 * (size_t)C);
        ok = OPS->matmul(m->be, y, &nv, m->mlp_w, 0, m->mlp_b, k, T, 4 * C, error) &&
             OPS->copy(m->be, pre, (size_t)(r0 + 1) * T, y, 0, (size_t)k * T, error);
    }
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_NL);
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_MLP);
    return ok ? pre : NULL;
}

/* [begin, grid rows…, end] then after_rms over all of them (spec §4.4 steps 9–10:
 * the stored begin/end vectors are normalised too). Each stage frees the buffers
 * the next does not read, so the merger never holds more than about twice the
 * image's activations. */
static hyocr_buf *merger(hyocr_model *m, const vit_dims *d, int gh, int gw, GError **error)
{
    const int T = m->cfg.vision.out_hidden_size, Hm = gh / 2, Wm = gw / 2;
    const int n_out = Hm * (Wm + 1) + 2;
    hyocr_buf *g = merger_gather(m, d, gh, gw, error);
    hyocr_buf *p2 = g ? merger_convs(m, d, g, Hm * Wm, error) : NULL;
    hyocr_buf *pre = p2 ? merger_rows(m, d, p2, Hm, Wm, error) : NULL;
    if (!pre) return NULL;
    hyocr_buf *out = OPS->alloc(m->be, HYOCR_BUF_ACT, (size_t)n_out * T, error);
    if (!out) return NULL;
    if (!OPS->add_rmsnorm(m->be, out, pre, NULL, m->after_rms, n_out, T, d->eps, error)) {
        OPS->buf_free(m->be, out);
        return NULL;
    }
    hyocr_model_scratch_release(m, HYOCR_SCRATCH_M_PRE);
    return out;
}

static vit_dims vit_dims_of(const hyocr_model *m, const hyocr_pixels *px)
{
    const hyocr_vision_config *v = &m->cfg.vision;
    vit_dims d = {
        .n = px->grid_h * px->grid_w, .C = v->hidden_size, .H = v->num_heads,
        .D = v->hidden_size / v->num_heads, .I = v->intermediate_size, .eps = v->eps,
    };
    d.rows = MIN(d.n, MAX(m->vit_chunk_rows, 1));
    d.scale = (float)pow((double)d.D, -0.5);   /* head_dim**-0.5 as Python computes it */
    return d;
}

/* Patch embedding, then the blocks. Block i's LayerNorm 1 and q|k|v run in block
 * i−1's chunk loop (the first block's in a loop of their own), so the whole-image
 * buffers are only x, q|k|v and the attention output. The scratch of the blocks
 * is freed before the merger takes its own. */
static bool tower(hyocr_model *m, const hyocr_pixels *px, const vit_dims *d, hyocr_cancel_fn cancel,
                  void *cancel_data, GError **error)
{
    vit_bufs t;
    bool ok = embed_patches(m, px, d, error) && vit_bufs_get(m, d, &t, error);
    for (int r0 = 0; ok && r0 < d->n; r0 += d->rows)
        ok = vit_attn_in(m, &m->vit[0], d, &t, r0, MIN(d->rows, d->n - r0), NULL, error);
    for (int i = 0; ok && i < m->cfg.vision.num_layers; i++)
        ok = check_cancel(cancel, cancel_data, error) && vit_block(m, i, d, &t, error);
    static const int slots[] = { HYOCR_SCRATCH_V_A, HYOCR_SCRATCH_V_QKV, HYOCR_SCRATCH_V_ATT,
                                 HYOCR_SCRATCH_V_DELTA, HYOCR_SCRATCH_V_MLP };
    for (size_t j = 0; j < G_N_ELEMENTS(slots); j++) hyocr_model_scratch_release(m, slots[j]);
    return ok;
}

/* The scratch a vision pass starts and ends without: all of it, or beside the
 * decode steps (m->beside) the vision and merger slots only, since the steps'
 * captured graphs point into the text slots. */
static void trim(hyocr_model *m)
{
    if (!m->beside) {
        hyocr_model_trim_scratch(m);
        return;
    }
    for (int i = HYOCR_SCRATCH_V_X; i <= HYOCR_SCRATCH_M_NORM; i++) hyocr_model_scratch_release(m, i);
}

hyocr_buf *hyocr_vision_forward(hyocr_model *m, const hyocr_pixels *px, int *n_rows, hyocr_vision_debug *dbg,
                                hyocr_cancel_fn cancel, void *cancel_data, GError **error)
{
    if (!check_grid(m, px, error) || !hyocr_model_vision_reload(m, error)) return NULL;
    /* Start from no scratch (a previous decode's buffers included), as the
     * memory plan assumes; beside decode steps their buffers stay. */
    trim(m);
    hyocr_backend_mark(m->be, "vision: trimmed");
    vit_dims d = vit_dims_of(m, px);
    hyocr_buf *out = NULL;
    if (tower(m, px, &d, cancel, cancel_data, error) &&
        (!dbg || !dbg->want ||
         download_copy(m, m->scratch[HYOCR_SCRATCH_V_X], (size_t)d.n * d.C, &dbg->vision_out, &dbg->vision_out_n,
                       error)) &&
        check_cancel(cancel, cancel_data, error))
        out = merger(m, &d, px->grid_h, px->grid_w, error);

    int rows = (px->grid_h / 2) * (px->grid_w / 2 + 1) + 2;
    if (out && dbg && dbg->want &&
        !download_copy(m, out, (size_t)rows * m->cfg.vision.out_hidden_size, &dbg->merger_out,
                       &dbg->merger_out_n, error)) {
        OPS->buf_free(m->be, out);
        out = NULL;
    }
    /* Vision activations scale with the image; do not keep them for the decoder. */
    hyocr_backend_mark(m->be, "vision: queued");
    trim(m);
    hyocr_backend_mark(m->be, "vision: trimmed after");
    if (out && n_rows) *n_rows = rows;
    /* A failed pass may leave the pixels' copy queued (from pinned memory it is: backend.h's
     * upload_f32), and the caller frees them next; a pass that succeeds is waited for anyway. */
    if (!out) OPS->sync(m->be, NULL);
    return out;
}
