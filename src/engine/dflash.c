/* hyocr — the DFlash draft's forward (dflash.h; dflash-notes §1). Arithmetic as the authors'
 * reference (z-lab/dflash, DFlashDraftModel): K = RoPE(k_norm(k_proj(x))), V = v_proj(x) for the
 * context rows and the block rows alike, Q = RoPE(q_norm(q_proj(block))); norms before RoPE. */
#include "dflash.h"
#include "error.h"
#include "i18n.h"
#include <math.h>
#include <string.h>

#define OPS (d->be->ops)
#define CTX_CHUNK 512   /* context rows per pass (a prompt's taps arrive all at once) */

static void buf_free(hyocr_dflash *d, hyocr_buf *b)
{
    if (b) d->be->ops->buf_free(d->be, b);
}

/* ---------------------------------------------------------------- weights */

typedef struct {
    hyocr_dflash           *d;
    const hyocr_checkpoint *ck;
    GError                **error;
    bool                    failed;
} loader;

/* The named tensors of one prefix back to back in one weight buffer (fused q|k|v, gate|up).
 * Every 2-D tensor of the draft is a product's weights (hyocr_weight_kind's matrix). */
static hyocr_buf *load_cat(loader *ld, const char *prefix, const char *const *names, int k)
{
    if (ld->failed) return NULL;
    hyocr_dflash *d = ld->d;
    const hyocr_tensor *t[3];
    size_t n = 0;
    for (int i = 0; i < k; i++) {
        t[i] = hyocr_checkpoint_get(ld->ck, "%s%s", prefix, names[i]);
        if (!t[i]) {   /* validated at open; kept so a misuse fails cleanly */
            g_set_error(ld->error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT, _("%s: the draft checkpoint has no tensor %s%s; download it again"),
                        hyocr_checkpoint_dir(ld->ck), prefix, names[i]);
            ld->failed = true;
            return NULL;
        }
        n += (size_t)hyocr_tensor_numel(t[i]);
    }
    hyocr_buf *b = OPS->alloc(d->be, hyocr_weight_kind(t, k, t[0]->n_dims == 2), n, ld->error);
    size_t off = 0;
    for (int i = 0; b && i < k; i++) {
        if (!OPS->upload_weight(d->be, b, off, t[i], ld->error)) {
            buf_free(d, b);
            b = NULL;
        }
        off += (size_t)hyocr_tensor_numel(t[i]);
    }
    for (int i = 0; b && i < k; i++) hyocr_tensor_release(t[i]);
    ld->failed = b == NULL;
    return b;
}

static hyocr_buf *load1(loader *ld, const char *name)
{
    const char *names[] = { name };
    return load_cat(ld, "", names, 1);
}

static void load_layer(loader *ld, hyocr_dflash_layer *L, int i)
{
    static const char *const qkv[] = { "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight" };
    static const char *const gu[] = { "mlp.gate_proj.weight", "mlp.up_proj.weight" };
    static const char *const one[][1] = { { "input_layernorm.weight" }, { "self_attn.o_proj.weight" },
                                          { "self_attn.q_norm.weight" }, { "self_attn.k_norm.weight" },
                                          { "post_attention_layernorm.weight" }, { "mlp.down_proj.weight" } };
    g_autofree char *p = g_strdup_printf("layers.%d.", i);
    L->in_norm = load_cat(ld, p, one[0], 1);
    L->qkv_w = load_cat(ld, p, qkv, 3);
    L->o_w = load_cat(ld, p, one[1], 1);
    L->q_norm = load_cat(ld, p, one[2], 1);
    L->k_norm = load_cat(ld, p, one[3], 1);
    L->post_norm = load_cat(ld, p, one[4], 1);
    L->gate_up_w = load_cat(ld, p, gu, 2);
    L->down_w = load_cat(ld, p, one[5], 1);
}

hyocr_dflash *hyocr_dflash_load(hyocr_backend *be, const hyocr_checkpoint *draft, hyocr_model *target,
                                GError **error)
{
    const hyocr_dflash_config *cfg = draft ? hyocr_checkpoint_dflash_config(draft) : NULL;
    if (!cfg || !target || target->be != be) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("DFlash draft: it needs a draft checkpoint and its target model loaded on the same backend"));
        return NULL;
    }
    if (cfg->hidden_size != target->cfg.text.hidden_size || cfg->vocab_size != target->cfg.text.vocab_size) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: this draft (hidden size %d, vocabulary %d) does not belong to the model (hidden size %d, vocabulary %d); "
                      "use the draft made for this model"),
                    hyocr_checkpoint_dir(draft), cfg->hidden_size, cfg->vocab_size, target->cfg.text.hidden_size,
                    target->cfg.text.vocab_size);
        return NULL;
    }
    if (!be->ops->qknorm_rope || !be->ops->attention_append) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND, _("DFlash draft: the %s backend cannot run a draft model yet"),
                    be->ops->name);
        return NULL;
    }
    g_autoptr(hyocr_dflash) d = g_new0(hyocr_dflash, 1);
    d->be = be;
    d->target = target;
    d->cfg = *cfg;
    hyocr_rope_params_init_plain(&d->rope, cfg->head_dim, cfg->rope_theta);
    d->layers = g_new0(hyocr_dflash_layer, cfg->num_layers);
    loader ld = { d, draft, error, false };
    d->fc_w = load1(&ld, "fc.weight");
    d->hidden_norm = load1(&ld, "hidden_norm.weight");
    d->final_norm = load1(&ld, "norm.weight");
    for (int i = 0; i < cfg->num_layers; i++) load_layer(&ld, &d->layers[i], i);
    if (ld.failed) return NULL;
    /* From now on the target keeps what the draft reads, for the sequences that ask. */
    memcpy(target->tap_layers, cfg->target_layer_ids, sizeof(int) * (size_t)cfg->n_target_layers);
    target->n_tap_layers = cfg->n_target_layers;
    return g_steal_pointer(&d);
}

void hyocr_dflash_free(hyocr_dflash *d)
{
    if (!d) return;
    for (int i = 0; d->layers && i < d->cfg.num_layers; i++) {
        hyocr_dflash_layer *L = &d->layers[i];
        hyocr_buf *bufs[] = { L->in_norm, L->qkv_w, L->o_w, L->q_norm, L->k_norm, L->post_norm, L->gate_up_w,
                              L->down_w };
        for (size_t k = 0; k < G_N_ELEMENTS(bufs); k++) buf_free(d, bufs[k]);
    }
    g_free(d->layers);
    buf_free(d, d->fc_w);
    buf_free(d, d->hidden_norm);
    buf_free(d, d->final_norm);
    for (int i = 0; i < HYOCR_DFLASH_SCRATCH_COUNT; i++) buf_free(d, d->scratch[i]);
    g_free(d);
}

void hyocr_dflash_trim_scratch(hyocr_dflash *d)
{
    for (int i = 0; d && i < HYOCR_DFLASH_SCRATCH_COUNT; i++) {
        buf_free(d, d->scratch[i]);
        d->scratch[i] = NULL;
    }
}

static hyocr_buf *scratch(hyocr_dflash *d, int slot, hyocr_buf_kind kind, size_t n, GError **error)
{
    if (error && *error) return NULL;   /* several asked in a row, checked once */
    hyocr_buf *b = d->scratch[slot];
    if (b && b->kind == kind && b->n >= n) return b;
    buf_free(d, b);
    d->scratch[slot] = OPS->alloc(d->be, kind, n > 0 ? n : 1, error);
    return d->scratch[slot];
}

/* ---------------------------------------------------------------- the context cache */

static size_t kv_width(const hyocr_dflash *d) { return (size_t)d->cfg.num_kv_heads * d->cfg.head_dim; }

hyocr_dflash_ctx *hyocr_dflash_ctx_new(hyocr_dflash *d, GError **error)
{
    hyocr_dflash_ctx *c = g_new0(hyocr_dflash_ctx, 1);
    c->k = g_new0(hyocr_buf *, d->cfg.num_layers);
    c->v = g_new0(hyocr_buf *, d->cfg.num_layers);
    c->io = OPS->alloc(d->be, HYOCR_BUF_F32, (size_t)1 + d->cfg.block_size, error);
    if (!c->io) {
        hyocr_dflash_ctx_free(d, c);
        return NULL;
    }
    return c;
}

void hyocr_dflash_ctx_free(hyocr_dflash *d, hyocr_dflash_ctx *c)
{
    if (!c) return;
    for (int l = 0; l < d->cfg.num_layers; l++) {
        buf_free(d, c->k[l]);
        buf_free(d, c->v[l]);
    }
    buf_free(d, c->io);
    g_free(c->k);
    g_free(c->v);
    g_free(c);
}

/* Grows by doubling, the old rows copied over (the same on every backend). */
bool hyocr_dflash_ctx_reserve(hyocr_dflash *d, hyocr_dflash_ctx *c, int rows, GError **error)
{
    rows += d->cfg.block_size;
    if (rows <= c->cap) return true;
    int cap = MAX(rows, MIN(MAX(2 * c->cap, 256), G_MAXINT / 2));
    size_t W = kv_width(d);
    for (int l = 0; l < d->cfg.num_layers; l++) {
        hyocr_buf **pair[2] = { &c->k[l], &c->v[l] };
        for (int i = 0; i < 2; i++) {
            hyocr_buf *nb = OPS->alloc(d->be, HYOCR_BUF_KV, (size_t)cap * W, error);
            if (!nb) return false;
            if (*pair[i] && c->n > 0 && !OPS->copy(d->be, nb, 0, *pair[i], 0, (size_t)c->n * W, error)) {
                buf_free(d, nb);
                return false;
            }
            buf_free(d, *pair[i]);
            *pair[i] = nb;
        }
    }
    c->cap = cap;
    return true;
}

/* io[0 .. n) = words (int32 as raw bits). */
static bool io_write(hyocr_dflash *d, hyocr_dflash_ctx *c, const int32_t *words, int n, GError **error)
{
    return OPS->upload_f32(d->be, c->io, 0, (const float *)words, (size_t)n, error);
}

/* fc and hidden_norm over m rows of taps (from row r0), then each layer's k | v of them into the
 * cache at the cursor. */
static bool context_rows(hyocr_dflash *d, hyocr_dflash_ctx *c, const hyocr_buf *taps, int r0, int m, GError **error)
{
    const hyocr_dflash_config *g = &d->cfg;
    const int H = g->hidden_size, W = g->n_target_layers * H, D = g->head_dim, Hq = g->num_heads;
    const int Hkv = g->num_kv_heads;
    hyocr_buf *cb = scratch(d, HYOCR_DFLASH_C, HYOCR_BUF_F32, (size_t)m * H, error);
    hyocr_buf *cn = scratch(d, HYOCR_DFLASH_CN, HYOCR_BUF_ACT, (size_t)m * H, error);
    hyocr_buf *kv = scratch(d, HYOCR_DFLASH_KV, HYOCR_BUF_ACT, (size_t)m * 2 * Hkv * D, error);
    if (!cb || !cn || !kv) return false;
    hyocr_buf in = hyocr_buf_view(taps, (size_t)r0 * W, (size_t)m * W);
    if (!OPS->matmul(d->be, cb, &in, d->fc_w, 0, NULL, m, H, W, error) ||
        !OPS->add_rmsnorm(d->be, cn, cb, NULL, d->hidden_norm, m, H, g->rms_norm_eps, error))
        return false;
    for (int l = 0; l < g->num_layers; l++) {
        const hyocr_dflash_layer *L = &d->layers[l];
        if (!OPS->matmul(d->be, kv, cn, L->qkv_w, (size_t)Hq * D * H, NULL, m, 2 * Hkv * D, H, error) ||
            !OPS->qknorm_rope(d->be, kv, m, c->io, 0, Hkv, &d->rope, NULL, L->k_norm, g->rms_norm_eps, error) ||
            !OPS->attention_append(d->be, NULL, kv, c->k[l], c->v[l], c->io, m, 0, Hkv, D, 0.0f, error))
            return false;
    }
    return true;
}

static bool taps_fit(const hyocr_dflash *d, const hyocr_buf *taps, int n, GError **error)
{
    const size_t W = (size_t)d->cfg.n_target_layers * d->cfg.hidden_size;
    if (n >= 0 && taps && taps->n >= (size_t)n * W) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                _("DFlash draft: %d context rows need %zu hidden-state values from the model, but %zu were given"), n, (size_t)MAX(n, 0) * W,
                taps ? taps->n : 0);
    return false;
}

bool hyocr_dflash_ctx_append(hyocr_dflash *d, hyocr_dflash_ctx *c, const hyocr_buf *taps, int n, GError **error)
{
    if (!taps_fit(d, taps, n, error) || !hyocr_dflash_ctx_reserve(d, c, c->n + n, error)) return false;
    for (int r0 = 0; r0 < n; r0 += CTX_CHUNK) {
        int32_t at = c->n + r0;
        if (!io_write(d, c, &at, 1, error) || !context_rows(d, c, taps, r0, MIN(CTX_CHUNK, n - r0), error))
            return false;
    }
    c->n += n;
    return true;
}

/* ---------------------------------------------------------------- a round */

typedef struct {
    hyocr_buf *x, *a, *qkv, *att, *delta, *gu, *act, *logits;
} block_bufs;

static bool block_bufs_get(hyocr_dflash *d, block_bufs *t, GError **error)
{
    const hyocr_dflash_config *g = &d->cfg;
    const size_t B = (size_t)g->block_size, H = (size_t)g->hidden_size, D = (size_t)g->head_dim;
    t->x = scratch(d, HYOCR_DFLASH_X, HYOCR_BUF_F32, B * H, error);
    t->a = scratch(d, HYOCR_DFLASH_A, HYOCR_BUF_ACT, B * H, error);
    t->qkv = scratch(d, HYOCR_DFLASH_QKV, HYOCR_BUF_ACT, B * (g->num_heads + 2 * g->num_kv_heads) * D, error);
    t->att = scratch(d, HYOCR_DFLASH_ATT, HYOCR_BUF_ACT, B * g->num_heads * D, error);
    t->delta = scratch(d, HYOCR_DFLASH_DELTA, HYOCR_BUF_ACT, B * H, error);
    t->gu = scratch(d, HYOCR_DFLASH_GU, HYOCR_BUF_ACT, B * 2 * g->intermediate_size, error);
    t->act = scratch(d, HYOCR_DFLASH_ACT, HYOCR_BUF_ACT, B * g->intermediate_size, error);
    t->logits = scratch(d, HYOCR_DFLASH_LOGITS, HYOCR_BUF_F32, (B - 1) * g->vocab_size, error);
    return t->x && t->a && t->qkv && t->att && t->delta && t->gu && t->act && t->logits;
}

/* One layer over the block; its keys go after the context rows and are overwritten next time. */
static bool block_layer(hyocr_dflash *d, hyocr_dflash_ctx *c, int l, const block_bufs *t, GError **error)
{
    const hyocr_dflash_config *g = &d->cfg;
    const hyocr_dflash_layer *L = &d->layers[l];
    const int B = g->block_size, H = g->hidden_size, D = g->head_dim, Hq = g->num_heads, Hkv = g->num_kv_heads;
    const int I = g->intermediate_size;
    const float eps = g->rms_norm_eps, scale = (float)pow((double)D, -0.5);
    return OPS->add_rmsnorm(d->be, t->a, t->x, l == 0 ? NULL : t->delta, L->in_norm, B, H, eps, error) &&
           OPS->matmul(d->be, t->qkv, t->a, L->qkv_w, 0, NULL, B, (Hq + 2 * Hkv) * D, H, error) &&
           OPS->qknorm_rope(d->be, t->qkv, B, c->io, Hq, Hkv, &d->rope, L->q_norm, L->k_norm, eps, error) &&
           OPS->attention_append(d->be, t->att, t->qkv, c->k[l], c->v[l], c->io, B, Hq, Hkv, D, scale, error) &&
           OPS->matmul(d->be, t->delta, t->att, L->o_w, 0, NULL, B, H, Hq * D, error) &&
           OPS->add_rmsnorm(d->be, t->a, t->x, t->delta, L->post_norm, B, H, eps, error) &&
           OPS->matmul(d->be, t->gu, t->a, L->gate_up_w, 0, NULL, B, 2 * I, H, error) &&
           OPS->swiglu(d->be, t->act, t->gu, B, I, error) &&
           OPS->matmul(d->be, t->delta, t->act, L->down_w, 0, NULL, B, H, I, error);
}

bool hyocr_dflash_round_begin(hyocr_dflash *d, hyocr_dflash_ctx *c, int32_t bonus, GError **error)
{
    const hyocr_dflash_config *g = &d->cfg;
    const int B = g->block_size;
    if (bonus < 0 || bonus >= g->vocab_size || c->n < 1) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("DFlash draft: a proposal needs a token id below %d (got %d) after some context (got %d rows)"),
                    g->vocab_size, bonus, c->n);
        return false;
    }
    if (!hyocr_dflash_ctx_reserve(d, c, c->n, error)) return false;
    int32_t words[1 + HYOCR_DFLASH_MAX_BLOCK];
    words[0] = c->n;
    words[1] = bonus;
    for (int i = 1; i < B; i++) words[1 + i] = g->mask_token_id;
    return io_write(d, c, words, 1 + B, error);
}

bool hyocr_dflash_propose_ops(hyocr_dflash *d, hyocr_dflash_ctx *c, int n_drafts, hyocr_buf *ids, size_t off,
                              GError **error)
{
    const hyocr_dflash_config *g = &d->cfg;
    const int B = g->block_size, H = g->hidden_size, V = g->vocab_size;
    if (n_drafts < 1 || n_drafts > B - 1) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("DFlash draft: %d drafts do not fit a block of %d tokens"),
                    n_drafts, B);
        return false;
    }
    block_bufs t;
    if (!block_bufs_get(d, &t, error)) return false;
    bool ok = OPS->embed_ids(d->be, t.x, d->target->embed, c->io, 1, B, H, error);
    for (int l = 0; ok && l < g->num_layers; l++) ok = block_layer(d, c, l, &t, error);
    /* only the rows whose drafts are wanted go through the head */
    hyocr_buf rows = hyocr_buf_view(t.a, (size_t)H, (size_t)n_drafts * H);
    return ok && OPS->add_rmsnorm(d->be, t.a, t.x, t.delta, d->final_norm, B, H, g->rms_norm_eps, error) &&
           OPS->matmul(d->be, t.logits, &rows, d->target->lm_head, 0, NULL, n_drafts, V, H, error) &&
           OPS->argmax(d->be, t.logits, n_drafts, V, ids, off, error);
}

bool hyocr_dflash_extend_ops(hyocr_dflash *d, hyocr_dflash_ctx *c, const hyocr_buf *taps, int rows, GError **error)
{
    if (rows < 1 || rows > d->cfg.block_size) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("DFlash draft: %d context rows in one round; it takes 1 to %d"), rows, d->cfg.block_size);
        return false;
    }
    return taps_fit(d, taps, rows, error) && context_rows(d, c, taps, 0, rows, error);
}

static uint64_t mix(uint64_t h, const void *p)
{
    return (h ^ (uint64_t)(uintptr_t)p) * 1099511628211ull;
}

uint64_t hyocr_dflash_signature(const hyocr_dflash *d, const hyocr_dflash_ctx *c, uint64_t h)
{
    for (int i = 0; i < HYOCR_DFLASH_SCRATCH_COUNT; i++) h = mix(h, d->scratch[i] ? d->scratch[i]->data : NULL);
    for (int l = 0; l < d->cfg.num_layers; l++) h = mix(mix(h, c->k[l] ? c->k[l]->data : NULL), c->v[l] ? c->v[l]->data : NULL);
    return mix(h, c->io->data);
}

bool hyocr_dflash_propose(hyocr_dflash *d, hyocr_dflash_ctx *c, int32_t bonus, int32_t *drafts, float *logits,
                          GError **error)
{
    const hyocr_dflash_config *g = &d->cfg;
    const int B = g->block_size, V = g->vocab_size;
    hyocr_buf *ids = scratch(d, HYOCR_DFLASH_IDS, HYOCR_BUF_F32, (size_t)B, error);
    if (!ids || !hyocr_dflash_round_begin(d, c, bonus, error) ||
        !hyocr_dflash_propose_ops(d, c, B - 1, ids, 0, error) ||
        !OPS->download_f32(d->be, ids, 0, (float *)drafts, (size_t)(B - 1), error))
        return false;
    return !logits || OPS->download_f32(d->be, d->scratch[HYOCR_DFLASH_LOGITS], 0, logits, (size_t)(B - 1) * V, error);
}
