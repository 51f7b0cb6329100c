/* hyocr — vision tower (patch embed, position table, pre-norm ViT blocks) and the
 * "perceive" merger (spec §4). The residual stream is an fp32 buffer; block
 * inputs/outputs are activation buffers. */
#include "model.h"
#include "error.h"
#include <math.h>

#define OPS (m->be->ops)

typedef struct {
    int n, C, H, D, I;   /* patches, width, heads, head dim, MLP width */
    float eps, scale;
} vit_dims;

static bool check_cancel(hyocr_cancel_fn cancel, void *data, GError **error)
{
    if (cancel && cancel(data)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, "cancelled");
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
                    "pixel values: grid %d×%d with %d patches of %d values does not fit the model "
                    "(even grid, %d values per patch)", px->grid_h, px->grid_w, px->n_patches, px->patch_dim, pd);
        return false;
    }
    return true;
}

/* Patch GEMM (+bias) into the residual, then the interpolated position table. */
static hyocr_buf *embed_patches(hyocr_model *m, const hyocr_pixels *px, const vit_dims *d, GError **error)
{
    const int K = px->patch_dim;
    /* ACT, not F32: the reference casts pixel_values to the model dtype before the conv. */
    hyocr_buf *pix = hyocr_model_scratch(m, HYOCR_SCRATCH_V_PIX, HYOCR_BUF_ACT, (size_t)d->n * K, error);
    hyocr_buf *x = hyocr_model_scratch(m, HYOCR_SCRATCH_V_X, HYOCR_BUF_F32, (size_t)d->n * d->C, error);
    if (!pix || !x) return NULL;
    if (!OPS->upload_f32(m->be, pix, 0, px->data, (size_t)d->n * K, error) ||
        !OPS->matmul(m->be, x, pix, m->patch_w, 0, m->patch_b, d->n, d->C, K, error) ||
        !OPS->posemb_add(m->be, x, m->pos_table, 1, hyocr_config_pos_edge(&m->cfg), px->grid_h, px->grid_w,
                         d->C, m->cfg.posemb_interp, error))
        return NULL;
    return x;
}

/* One block. On entry delta holds the previous block's MLP output (not yet added)
 * unless first; on return it holds this block's, so the residual add fuses with
 * the next LayerNorm. */
static bool vit_block(hyocr_model *m, const hyocr_vit_block *b, const vit_dims *d, bool first, GError **error)
{
    size_t n = (size_t)d->n;
    hyocr_buf *x = m->scratch[HYOCR_SCRATCH_V_X];
    hyocr_buf *a = hyocr_model_scratch(m, HYOCR_SCRATCH_V_A, HYOCR_BUF_ACT, n * d->C, error);
    hyocr_buf *delta = hyocr_model_scratch(m, HYOCR_SCRATCH_V_DELTA, HYOCR_BUF_ACT, n * d->C, error);
    hyocr_buf *qkv = hyocr_model_scratch(m, HYOCR_SCRATCH_V_QKV, HYOCR_BUF_ACT, n * 3 * d->C, error);
    hyocr_buf *att = hyocr_model_scratch(m, HYOCR_SCRATCH_V_ATT, HYOCR_BUF_ACT, n * d->C, error);
    hyocr_buf *h = hyocr_model_scratch(m, HYOCR_SCRATCH_V_MLP, HYOCR_BUF_ACT, n * d->I, error);
    if (!a || !delta || !qkv || !att || !h) return false;

    return OPS->add_layernorm(m->be, a, x, first ? NULL : delta, b->ln1_g, b->ln1_b, d->n, d->C, d->eps, error) &&
           OPS->matmul(m->be, qkv, a, b->qkv_w, 0, b->qkv_b, d->n, 3 * d->C, d->C, error) &&
           OPS->attention_full(m->be, att, qkv, d->n, d->H, d->D, d->scale, error) &&
           OPS->matmul(m->be, delta, att, b->o_w, 0, b->o_b, d->n, d->C, d->C, error) &&
           OPS->add_layernorm(m->be, a, x, delta, b->ln2_g, b->ln2_b, d->n, d->C, d->eps, error) &&
           OPS->matmul(m->be, h, a, b->fc1_w, 0, b->fc1_b, d->n, d->I, d->C, error) &&
           OPS->gelu(m->be, h, n * d->I, error) &&
           OPS->matmul(m->be, delta, h, b->fc2_w, 0, b->fc2_b, d->n, d->C, d->I, error);
}

static bool download_copy(hyocr_model *m, const hyocr_buf *b, size_t n, float **out, size_t *out_n, GError **error)
{
    float *host = g_try_new(float, n);
    if (!host) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, "stage dump: cannot allocate %zu floats", n);
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

/* Conv 2×2/2 → GELU → conv 1×1 → newline column → Linear: rows of the merged grid
 * (without begin/end), [Hm·(Wm+1), T] in slot M_MLP. */
static hyocr_buf *merger_grid(hyocr_model *m, const vit_dims *d, int gh, int gw, GError **error)
{
    const int C = d->C, T = m->cfg.vision.out_hidden_size;
    const int Hm = gh / 2, Wm = gw / 2, cells = Hm * Wm, rows = Hm * (Wm + 1);
    hyocr_buf *x = m->scratch[HYOCR_SCRATCH_V_X];
    hyocr_buf *a = m->scratch[HYOCR_SCRATCH_V_A];
    hyocr_buf *g = hyocr_model_scratch(m, HYOCR_SCRATCH_M_GATHER, HYOCR_BUF_ACT, (size_t)cells * 4 * C, error);
    hyocr_buf *p0 = hyocr_model_scratch(m, HYOCR_SCRATCH_M_P0, HYOCR_BUF_ACT, (size_t)cells * 2 * C, error);
    hyocr_buf *p2 = hyocr_model_scratch(m, HYOCR_SCRATCH_M_P2, HYOCR_BUF_ACT, (size_t)cells * 4 * C, error);
    /* Two spare rows: the op's contract sizes its output with the begin/end slots. */
    hyocr_buf *nl = hyocr_model_scratch(m, HYOCR_SCRATCH_M_NL, HYOCR_BUF_ACT, (size_t)(rows + 2) * 4 * C, error);
    hyocr_buf *y = hyocr_model_scratch(m, HYOCR_SCRATCH_M_MLP, HYOCR_BUF_ACT, (size_t)rows * T, error);
    if (!g || !p0 || !p2 || !nl || !y) return NULL;

    bool ok = OPS->add_rmsnorm(m->be, a, x, NULL, m->before_rms, d->n, C, d->eps, error) &&
              OPS->merge_gather(m->be, g, a, gh, gw, C, error) &&
              OPS->matmul(m->be, p0, g, m->proj0_w, 0, m->proj0_b, cells, 2 * C, 4 * C, error) &&
              OPS->gelu(m->be, p0, (size_t)cells * 2 * C, error) &&
              OPS->matmul(m->be, p2, p0, m->proj2_w, 0, m->proj2_b, cells, 4 * C, 2 * C, error) &&
              OPS->append_newline(m->be, nl, p2, m->newline, Hm, Wm, 4 * C, error) &&
              OPS->matmul(m->be, y, nl, m->mlp_w, 0, m->mlp_b, rows, T, 4 * C, error);
    return ok ? y : NULL;
}

/* [begin, grid rows…, end] then after_rms over all of them (spec §4.4 steps 9–10:
 * the stored begin/end vectors are normalised too). */
static hyocr_buf *merger(hyocr_model *m, const vit_dims *d, int gh, int gw, GError **error)
{
    const int T = m->cfg.vision.out_hidden_size;
    const int rows = (gh / 2) * (gw / 2 + 1), n_out = rows + 2;
    hyocr_buf *y = merger_grid(m, d, gh, gw, error);
    if (!y) return NULL;
    hyocr_buf *pre = hyocr_model_scratch(m, HYOCR_SCRATCH_M_PRE, HYOCR_BUF_F32, (size_t)n_out * T, error);
    if (!pre) return NULL;
    if (!OPS->copy(m->be, pre, 0, m->img_begin, 0, T, error) ||
        !OPS->copy(m->be, pre, T, y, 0, (size_t)rows * T, error) ||
        !OPS->copy(m->be, pre, (size_t)(rows + 1) * T, m->img_end, 0, T, error))
        return NULL;
    hyocr_buf *out = OPS->alloc(m->be, HYOCR_BUF_ACT, (size_t)n_out * T, error);
    if (!out) return NULL;
    if (!OPS->add_rmsnorm(m->be, out, pre, NULL, m->after_rms, n_out, T, d->eps, error)) {
        OPS->buf_free(m->be, out);
        return NULL;
    }
    return out;
}

static vit_dims vit_dims_of(const hyocr_model *m, const hyocr_pixels *px)
{
    const hyocr_vision_config *v = &m->cfg.vision;
    vit_dims d = {
        .n = px->grid_h * px->grid_w, .C = v->hidden_size, .H = v->num_heads,
        .D = v->hidden_size / v->num_heads, .I = v->intermediate_size, .eps = v->eps,
    };
    d.scale = (float)pow((double)d.D, -0.5);   /* head_dim**-0.5 as Python computes it */
    return d;
}

static bool tower(hyocr_model *m, const hyocr_pixels *px, const vit_dims *d, hyocr_cancel_fn cancel,
                  void *cancel_data, GError **error)
{
    if (!embed_patches(m, px, d, error)) return false;
    for (int i = 0; i < m->cfg.vision.num_layers; i++) {
        if (!check_cancel(cancel, cancel_data, error)) return false;
        if (!vit_block(m, &m->vit[i], d, i == 0, error)) return false;
    }
    /* The last block's MLP output still has to reach the residual. */
    return OPS->add(m->be, m->scratch[HYOCR_SCRATCH_V_X], m->scratch[HYOCR_SCRATCH_V_DELTA],
                    (size_t)d->n * d->C, error);
}

hyocr_buf *hyocr_vision_forward(hyocr_model *m, const hyocr_pixels *px, int *n_rows, hyocr_vision_debug *dbg,
                                hyocr_cancel_fn cancel, void *cancel_data, GError **error)
{
    if (!check_grid(m, px, error)) return NULL;
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
    hyocr_model_trim_scratch(m);
    if (out && n_rows) *n_rows = rows;
    return out;
}
