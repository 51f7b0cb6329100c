/* hyocr — model weights on a backend, scratch buffers and the paged KV storage. */
#include "model.h"
#include "error.h"
#include "i18n.h"
#include "memplan.h"
#include <math.h>
#include <string.h>

static void buf_free(hyocr_model *m, hyocr_buf *b)
{
    if (b) m->be->ops->buf_free(m->be, b);
}

typedef struct {
    hyocr_model            *m;
    const hyocr_checkpoint *ck;
    GError                **error;
    bool                    failed;
} loader;

/* Uploads the named tensors back to back into one new weight buffer of n
 * elements: fused QKV and gate|up weights are built this way. The checkpoint
 * validated shapes at open; the size check here guards the buffer anyway.
 * matrix: only matmul and embed read it (hyocr_weight_kind). */
static hyocr_buf *load_cat(loader *ld, size_t n, const char *const *names, int n_names, bool matrix)
{
    if (ld->failed) return NULL;
    hyocr_model *m = ld->m;
    size_t off = 0;
    const hyocr_tensor *ts[4] = { 0 };   /* at most q|k|v */
    g_assert(n_names <= 4);
    for (int i = 0; i < n_names; i++) {
        const hyocr_tensor *t = ts[i] = hyocr_checkpoint_get(ld->ck, "%s", names[i]);
        if (!t) {
            g_set_error(ld->error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT, _("%s: the checkpoint has no tensor %s; download it again"),
                        hyocr_checkpoint_dir(ld->ck), names[i]);
            ld->failed = true;
            return NULL;
        }
        off += (size_t)hyocr_tensor_numel(t);
    }
    if (off != n) {
        g_set_error(ld->error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: tensor %s%s has %zu elements but config.json implies %zu; the checkpoint and its config disagree"),
                    hyocr_checkpoint_dir(ld->ck), names[0], n_names > 1 ? _(" (with its fused partners)") : "", off, n);
        ld->failed = true;
        return NULL;
    }
    hyocr_buf *b = m->be->ops->alloc(m->be, hyocr_weight_kind(ts, n_names, matrix), n, ld->error);
    if (!b) {
        ld->failed = true;
        return NULL;
    }
    off = 0;
    for (int i = 0; i < n_names; i++) {
        const hyocr_tensor *t = hyocr_checkpoint_get(ld->ck, "%s", names[i]);
        if (!m->be->ops->upload_weight(m->be, b, off, t, ld->error)) {
            buf_free(m, b);
            ld->failed = true;
            return NULL;
        }
        off += (size_t)hyocr_tensor_numel(t);
    }
    for (int i = 0; i < n_names; i++) hyocr_tensor_release(ts[i]);
    return b;
}

/* One tensor, name given printf-style; matrix: only matmul and embed read it. */
static hyocr_buf *load1(loader *ld, size_t n, bool matrix, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static hyocr_buf *load1(loader *ld, size_t n, bool matrix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *name = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    const char *names[] = { name };
    return load_cat(ld, n, names, 1, matrix);
}

/* Several tensors of one layer, "<prefix>.<suffix>", concatenated. */
static hyocr_buf *load_fused(loader *ld, size_t n, const char *prefix, const char *const *suffixes, int k, bool matrix)
{
    char *names[4];
    for (int i = 0; i < k; i++) names[i] = g_strconcat(prefix, ".", suffixes[i], NULL);
    hyocr_buf *b = load_cat(ld, n, (const char *const *)names, k, matrix);
    for (int i = 0; i < k; i++) g_free(names[i]);
    return b;
}

static void load_vit_block(loader *ld, hyocr_vit_block *b, int i)
{
    const hyocr_vision_config *v = &ld->m->cfg.vision;
    size_t C = (size_t)v->hidden_size, I = (size_t)v->intermediate_size;
    g_autofree char *p = g_strdup_printf("vit.layers.%d", i);
    static const char *const qkv_w[] = { "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight" };
    static const char *const qkv_b[] = { "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias" };

    b->ln1_g = load1(ld, C, false, "%s.input_layernorm.weight", p);
    b->ln1_b = load1(ld, C, false, "%s.input_layernorm.bias", p);
    b->qkv_w = load_fused(ld, 3 * C * C, p, qkv_w, 3, true);
    b->qkv_b = load_fused(ld, 3 * C, p, qkv_b, 3, false);
    b->o_w = load1(ld, C * C, true, "%s.self_attn.o_proj.weight", p);
    b->o_b = load1(ld, C, false, "%s.self_attn.o_proj.bias", p);
    b->ln2_g = load1(ld, C, false, "%s.post_attention_layernorm.weight", p);
    b->ln2_b = load1(ld, C, false, "%s.post_attention_layernorm.bias", p);
    b->fc1_w = load1(ld, I * C, true, "%s.mlp.dense_h_to_4h.weight", p);
    b->fc1_b = load1(ld, I, false, "%s.mlp.dense_h_to_4h.bias", p);
    b->fc2_w = load1(ld, C * I, true, "%s.mlp.dense_4h_to_h.weight", p);
    b->fc2_b = load1(ld, C, false, "%s.mlp.dense_4h_to_h.bias", p);
}

static void load_vision(loader *ld)
{
    hyocr_model *m = ld->m;
    const hyocr_vision_config *v = &m->cfg.vision;
    size_t C = (size_t)v->hidden_size, T = (size_t)v->out_hidden_size;
    size_t pp = (size_t)v->num_channels * v->patch_size * v->patch_size;
    size_t edge = (size_t)hyocr_config_pos_edge(&m->cfg);

    m->patch_w = load1(ld, C * pp, true, "vit.embeddings.patch_embedding.weight");
    m->patch_b = load1(ld, C, false, "vit.embeddings.patch_embedding.bias");
    m->pos_table = load1(ld, (edge * edge + 1) * C, false, "vit.embeddings.position_embedding.weight");
    m->vit = g_new0(hyocr_vit_block, v->num_layers);
    for (int i = 0; i < v->num_layers; i++) load_vit_block(ld, &m->vit[i], i);

    m->before_rms = load1(ld, C, false, "vit.perceive.before_rms.weight");
    m->proj0_w = load1(ld, 2 * C * 4 * C, true, "vit.perceive.proj.0.weight");   /* [2C, C, 2, 2] = [2C, 4C] (c, dy, dx) */
    m->proj0_b = load1(ld, 2 * C, false, "vit.perceive.proj.0.bias");
    m->proj2_w = load1(ld, 4 * C * 2 * C, true, "vit.perceive.proj.2.weight");   /* 1×1 conv = [4C, 2C] */
    m->proj2_b = load1(ld, 4 * C, false, "vit.perceive.proj.2.bias");
    m->newline = load1(ld, 4 * C, false, "vit.perceive.image_newline");
    m->mlp_w = load1(ld, T * 4 * C, true, "vit.perceive.mlp.weight");
    m->mlp_b = load1(ld, T, false, "vit.perceive.mlp.bias");
    m->img_begin = load1(ld, T, false, "vit.perceive.image_begin");
    m->img_end = load1(ld, T, false, "vit.perceive.image_end");
    m->after_rms = load1(ld, T, false, "vit.perceive.after_rms.weight");
}

static void load_text_layer(loader *ld, hyocr_text_layer *L, int i)
{
    const hyocr_text_config *t = &ld->m->cfg.text;
    size_t H = (size_t)t->hidden_size, D = (size_t)t->head_dim, I = (size_t)t->intermediate_size;
    size_t q = (size_t)t->num_heads * D, kv = (size_t)t->num_kv_heads * D;
    g_autofree char *p = g_strdup_printf("model.layers.%d", i);
    static const char *const qkv[] = { "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight" };
    static const char *const gu[] = { "mlp.gate_proj.weight", "mlp.up_proj.weight" };

    L->in_norm = load1(ld, H, false, "%s.input_layernorm.weight", p);
    L->qkv_w = load_fused(ld, (q + 2 * kv) * H, p, qkv, 3, true);
    L->o_w = load1(ld, H * q, true, "%s.self_attn.o_proj.weight", p);
    L->q_norm = load1(ld, D, false, "%s.self_attn.query_layernorm.weight", p);
    L->k_norm = load1(ld, D, false, "%s.self_attn.key_layernorm.weight", p);
    L->post_norm = load1(ld, H, false, "%s.post_attention_layernorm.weight", p);
    L->gate_up_w = load_fused(ld, 2 * I * H, p, gu, 2, true);
    L->down_w = load1(ld, H * I, true, "%s.mlp.down_proj.weight", p);
}

static void load_text(loader *ld)
{
    hyocr_model *m = ld->m;
    const hyocr_text_config *t = &m->cfg.text;
    size_t H = (size_t)t->hidden_size, V = (size_t)t->vocab_size;
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ld->ck, &st);

    m->embed = load1(ld, V * H, true, "model.embed_tokens.weight");
    m->layers = g_new0(hyocr_text_layer, t->num_layers);
    for (int i = 0; i < t->num_layers; i++) load_text_layer(ld, &m->layers[i], i);
    m->final_norm = load1(ld, H, false, "model.norm.weight");
    /* A tied head shares the embedding buffer instead of a second 120k×1024 copy. */
    m->lm_head = st.lm_head_tied ? m->embed : load1(ld, V * H, true, "lm_head.weight");
}

static bool check_shapes(const hyocr_config *cfg, const char *dir, GError **error)
{
    const hyocr_text_config *t = &cfg->text;
    const hyocr_vision_config *v = &cfg->vision;
    if (t->hidden_size <= 0 || t->num_layers <= 0 || t->num_heads <= 0 || t->num_kv_heads <= 0 ||
        t->head_dim <= 0 || t->head_dim % 2 || t->head_dim / 2 > 256 || t->intermediate_size <= 0 ||
        t->vocab_size <= 0 || t->num_heads % t->num_kv_heads || v->hidden_size <= 0 || v->num_layers <= 0 ||
        v->num_heads <= 0 || v->hidden_size % v->num_heads || v->patch_size <= 0 || v->spatial_merge_size != 2 ||
        v->out_hidden_size != t->hidden_size || hyocr_config_pos_edge(cfg) <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s/config.json: hyocr cannot run a model of this shape (text: hidden size %d, %d layers, %d/%d heads, "
                      "head_dim %d; vision: hidden size %d, %d heads, merge %d, out %d)"), dir, t->hidden_size, t->num_layers,
                    t->num_heads, t->num_kv_heads, t->head_dim, v->hidden_size, v->num_heads,
                    v->spatial_merge_size, v->out_hidden_size);
        return false;
    }
    return true;
}

/* The fused decode products: 7 launches a layer instead of 10, batch-1 decode +14 % on
 * an H200 (session 2: git show 5acdb8e:bench/results/2026-12-02-h200-s2/fuse-README.md).
 * By default on CUDA only (the CPU gains nothing from them); the tuning's fuse overrides.
 * Steps of up to the rows the backend's fused products take for every product of a layer. */
static int fused_rows(hyocr_backend *be, const hyocr_text_config *c)
{
    const hyocr_backend_ops *o = be->ops;
    if (!o->norm_matmul || !o->matmul_residual || !o->fused_rows) return 0;
    hyocr_switch fuse = be->tuning.fuse;
    if (fuse == HYOCR_SWITCH_DEFAULT ? be->kind != HYOCR_BACKEND_CUDA : fuse != HYOCR_SWITCH_ON) return 0;
    int rows = o->fused_rows(be, c->hidden_size, true);                      /* qkv, gate|up */
    rows = MIN(rows, o->fused_rows(be, c->num_heads * c->head_dim, false));   /* o */
    return MIN(rows, o->fused_rows(be, c->intermediate_size, false));         /* down */
}

hyocr_model *hyocr_model_load(hyocr_backend *be, const hyocr_checkpoint *ck, GError **error)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(ck);
    if (!check_shapes(cfg, hyocr_checkpoint_dir(ck), error)) return NULL;

    g_autoptr(hyocr_model) m = g_new0(hyocr_model, 1);
    m->be = be;
    m->ck = ck;
    m->cfg = *cfg;
    /* The strings belong to the checkpoint's config; the model never needs them. */
    m->cfg.bos_token = m->cfg.eos_token = m->cfg.pad_token = m->cfg.chat_template = NULL;
    m->live_seqs = g_ptr_array_new();
    m->vit_chunk_rows = HYOCR_VIT_CHUNK_ROWS;
    m->text_chunk_rows = HYOCR_TEXT_CHUNK_ROWS;
    m->fused_rows = fused_rows(be, &m->cfg.text);
    if (!hyocr_rope_params_init(&m->rope, &m->cfg, error)) return NULL;

    loader ld = { .m = m, .ck = ck, .error = error };
    load_vision(&ld);
    load_text(&ld);
    if (ld.failed) return NULL;
    return g_steal_pointer(&m);
}

/* k and v as kv_alloc_storage made them: views into one allocation, which k's
 * extra last entry holds. */
static void free_kv_storage(hyocr_model *m, hyocr_buf **k, hyocr_buf **v)
{
    if (k) {
        buf_free(m, k[m->cfg.text.num_layers]);
        g_free(k[0]);   /* the views, k's then v's */
    }
    g_free(k);
    g_free(v);
}

static void free_vit(hyocr_model *m)
{
    for (int i = 0; m->vit && i < m->cfg.vision.num_layers; i++) {
        hyocr_vit_block *b = &m->vit[i];
        hyocr_buf *all[] = { b->ln1_g, b->ln1_b, b->qkv_w, b->qkv_b, b->o_w, b->o_b,
                             b->ln2_g, b->ln2_b, b->fc1_w, b->fc1_b, b->fc2_w, b->fc2_b };
        for (size_t j = 0; j < G_N_ELEMENTS(all); j++) buf_free(m, all[j]);
    }
    g_free(m->vit);
    m->vit = NULL;
    hyocr_buf **rest[] = { &m->patch_w, &m->patch_b, &m->pos_table, &m->before_rms, &m->proj0_w, &m->proj0_b,
                           &m->proj2_w, &m->proj2_b, &m->newline, &m->mlp_w, &m->mlp_b, &m->img_begin,
                           &m->img_end, &m->after_rms };
    for (size_t j = 0; j < G_N_ELEMENTS(rest); j++) {
        buf_free(m, *rest[j]);
        *rest[j] = NULL;
    }
}

/* ---- vision weights off the device ------------------------------------------------ */

bool hyocr_model_vision_loaded(const hyocr_model *m)
{
    return !m->vision_out;
}

int64_t hyocr_model_vision_weight_bytes(const hyocr_model *m)
{
    int elem = m->be->dtype == HYOCR_COMPUTE_F32 ? 4 : 2;
    hyocr_checkpoint_stats st = { 0 };
    if (m->ck) hyocr_checkpoint_get_stats(m->ck, &st);
    return hyocr_memplan_vision_weights(&m->cfg, elem, hyocr_memplan_matrix_elem(elem, st.bf16_only, m->be->bf16_elem));
}

bool hyocr_model_vision_unload(hyocr_model *m)
{
    if (m->vision_out || !m->ck) return false;
    /* Queued work may still read the weights (the merger ran just before). */
    if (!m->be->ops->sync(m->be, NULL)) return false;
    free_vit(m);
    m->vision_out = true;
    return true;
}

bool hyocr_model_vision_reload(hyocr_model *m, GError **error)
{
    if (!m->vision_out) return true;
    loader ld = { .m = m, .ck = m->ck, .error = error };
    load_vision(&ld);
    if (ld.failed) {
        free_vit(m);
        g_prefix_error(error, _("reloading the vision weights: "));
        return false;
    }
    m->vision_out = false;
    return true;
}

static void free_text(hyocr_model *m)
{
    for (int i = 0; m->layers && i < m->cfg.text.num_layers; i++) {
        hyocr_text_layer *L = &m->layers[i];
        hyocr_buf *all[] = { L->in_norm, L->qkv_w, L->o_w, L->q_norm, L->k_norm, L->post_norm,
                             L->gate_up_w, L->down_w };
        for (size_t j = 0; j < G_N_ELEMENTS(all); j++) buf_free(m, all[j]);
    }
    g_free(m->layers);
    if (m->lm_head != m->embed) buf_free(m, m->lm_head);
    buf_free(m, m->embed);
    buf_free(m, m->final_norm);
}

static void seq_drop(hyocr_model *m, hyocr_kv_seq *seq)
{
    if (m->kv_pool) hyocr_kv_seq_release(m->kv_pool, seq);
    g_free(seq->blocks);
    g_free(seq);
}

void hyocr_model_free(hyocr_model *m)
{
    if (!m) return;
    if (m->live_seqs) {
        for (guint i = 0; i < m->live_seqs->len; i++) seq_drop(m, m->live_seqs->pdata[i]);
        g_ptr_array_free(m->live_seqs, TRUE);
    }
    free_kv_storage(m, m->k_cache, m->v_cache);
    if (m->kv_pool) hyocr_kv_pool_free(m->kv_pool);
    hyocr_text_decode_release(m);
    hyocr_model_trim_scratch(m);
    free_vit(m);
    free_text(m);
    g_free(m);
}

hyocr_buf *hyocr_model_scratch(hyocr_model *m, int slot, hyocr_buf_kind kind, size_t n, GError **error)
{
    /* Callers ask for several buffers in a row and check once: after the first
     * failure the rest fail quietly, keeping the first (most telling) message. */
    if (error && *error) return NULL;
    hyocr_buf *b = m->scratch[slot];
    if (b && b->kind == kind && b->n >= n) return b;
    buf_free(m, b);
    m->scratch[slot] = m->be->ops->alloc(m->be, kind, n > 0 ? n : 1, error);
    return m->scratch[slot];
}

void hyocr_model_scratch_release(hyocr_model *m, int slot)
{
    buf_free(m, m->scratch[slot]);
    m->scratch[slot] = NULL;
}

void hyocr_model_trim_scratch(hyocr_model *m)
{
    for (int i = 0; i < HYOCR_SCRATCH_COUNT; i++) hyocr_model_scratch_release(m, i);
}

/* ---- paged KV storage ---------------------------------------------------------- */

static size_t kv_block_elems(const hyocr_model *m)
{
    return (size_t)m->kv_block_size * m->cfg.text.num_kv_heads * m->cfg.text.head_dim;
}

int64_t hyocr_model_kv_bytes_per_block(const hyocr_model *m)
{
    int es = m->k_cache && m->k_cache[0] ? m->k_cache[0]->elem_size
                                         : (m->be->dtype == HYOCR_COMPUTE_F32 ? 4 : 2);
    return (int64_t)kv_block_elems(m) * es * 2 * m->cfg.text.num_layers;
}

/* Every layer's K and V storage as views into one allocation: a job's pool is
 * made, grown and given back with one allocation and one free where it took one
 * a layer and tensor (48 on the 1B model; on CUDA each free also waits for the
 * device). k gets one entry more than the layers: the allocation itself. */
static bool kv_alloc_storage(hyocr_model *m, int n_blocks, hyocr_buf ***k_out, hyocr_buf ***v_out, GError **error)
{
    int nl = m->cfg.text.num_layers;
    size_t n = (size_t)n_blocks * kv_block_elems(m);
    if (n > SIZE_MAX / 2 / (size_t)nl) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, _("KV cache of %d blocks × %d tokens: too large"),
                    n_blocks, m->kv_block_size);
        return false;
    }
    hyocr_buf *all = m->be->ops->alloc(m->be, HYOCR_BUF_KV, n * 2 * nl, error);
    if (!all) {
        g_prefix_error(error, _("KV cache of %d blocks × %d tokens: "), n_blocks, m->kv_block_size);
        return false;
    }
    hyocr_buf *views = g_new(hyocr_buf, 2 * nl), **k = g_new(hyocr_buf *, nl + 1), **v = g_new(hyocr_buf *, nl);
    for (int l = 0; l < nl; l++) {
        views[l] = hyocr_buf_view(all, (size_t)l * n, n);
        views[nl + l] = hyocr_buf_view(all, (size_t)(nl + l) * n, n);
        k[l] = &views[l];
        v[l] = &views[nl + l];
    }
    k[nl] = all;
    *k_out = k;
    *v_out = v;
    return true;
}

/* Frees the storage and the pool (no sequence may hold blocks). */
static void kv_drop(hyocr_model *m)
{
    free_kv_storage(m, m->k_cache, m->v_cache);
    m->k_cache = m->v_cache = NULL;
    if (m->kv_pool) hyocr_kv_pool_free(m->kv_pool);
    m->kv_pool = NULL;
}

static bool kv_set_blocks(hyocr_model *m, int n_blocks, GError **error)
{
    if (!kv_alloc_storage(m, n_blocks, &m->k_cache, &m->v_cache, error)) return false;
    m->kv_pool = hyocr_kv_pool_init(n_blocks, m->kv_block_size);
    return true;
}

static int kv_blocks_for(const hyocr_model *m, int64_t n_tokens)
{
    int64_t b = (MAX(n_tokens, 0) + m->kv_block_size - 1) / m->kv_block_size;
    if (m->kv_max_blocks && b > m->kv_max_blocks) b = m->kv_max_blocks;
    return (int)MIN(b, (int64_t)G_MAXINT);
}

bool hyocr_model_kv_init(hyocr_model *m, int block_size, int n_blocks, int initial_tokens, int max_tokens,
                         GError **error)
{
    if (m->live_seqs->len > 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache: cannot be re-created while %u sequences use it; wait for the jobs to finish"), m->live_seqs->len);
        return false;
    }
    if (block_size <= 0 || n_blocks < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache: the block size (%d) must be positive and the block count (%d) not negative"), block_size, n_blocks);
        return false;
    }
    kv_drop(m);
    m->kv_block_size = block_size;
    m->kv_fixed = n_blocks > 0;
    m->kv_max_blocks = max_tokens > 0 ? (max_tokens + block_size - 1) / block_size : 0;
    if (!m->kv_fixed) n_blocks = kv_blocks_for(m, initial_tokens);
    return n_blocks == 0 || kv_set_blocks(m, n_blocks, error);
}

bool hyocr_model_kv_resize(hyocr_model *m, int n_tokens, GError **error)
{
    if (m->kv_block_size <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("KV cache: not created yet"));
        return false;
    }
    if (m->kv_fixed) return true;
    for (guint i = 0; i < m->live_seqs->len; i++) {
        const hyocr_kv_seq *s = m->live_seqs->pdata[i];
        if (s->n_blocks > 0) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("KV cache: cannot be resized while a sequence holds %d blocks; wait for the jobs to finish"), s->n_blocks);
            return false;
        }
    }
    int want = kv_blocks_for(m, n_tokens);
    if (m->kv_pool && hyocr_kv_pool_n_blocks(m->kv_pool) == want) return true;
    kv_drop(m);
    return want == 0 || kv_set_blocks(m, want, error);
}

bool hyocr_model_kv_grow(hyocr_model *m, int n_blocks, GError **error)
{
    int have = m->kv_pool ? hyocr_kv_pool_n_blocks(m->kv_pool) : 0;
    if (m->kv_block_size <= 0 || n_blocks <= have) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache: cannot grow from %d to %d blocks"), have, n_blocks);
        return false;
    }
    if (!m->kv_pool) return kv_set_blocks(m, n_blocks, error);
    hyocr_buf **k2, **v2;
    if (!kv_alloc_storage(m, n_blocks, &k2, &v2, error)) return false;
    size_t n = (size_t)have * kv_block_elems(m);
    for (int l = 0; l < m->cfg.text.num_layers; l++) {
        if (!m->be->ops->copy(m->be, k2[l], 0, m->k_cache[l], 0, n, error) ||
            !m->be->ops->copy(m->be, v2[l], 0, m->v_cache[l], 0, n, error)) {
            free_kv_storage(m, k2, v2);
            return false;
        }
    }
    free_kv_storage(m, m->k_cache, m->v_cache);
    m->k_cache = k2;
    m->v_cache = v2;
    hyocr_kv_pool_grow(m->kv_pool, n_blocks);
    m->kv_grows++;
    return true;
}

hyocr_kv_seq *hyocr_model_seq_new(hyocr_model *m)
{
    hyocr_kv_seq *seq = g_new0(hyocr_kv_seq, 1);
    hyocr_kv_seq_init(seq);
    g_ptr_array_add(m->live_seqs, seq);
    return seq;
}

void hyocr_model_seq_free(hyocr_model *m, hyocr_kv_seq *seq)
{
    if (!seq) return;
    g_ptr_array_remove_fast(m->live_seqs, seq);
    seq_drop(m, seq);
}

/* Copies one sequence's blocks into a fresh table of the new pool/storage. */
static bool kv_move_seq(hyocr_model *m, const hyocr_kv_seq *s, hyocr_kv_pool *pool2, hyocr_buf **k2,
                        hyocr_buf **v2, hyocr_kv_seq *t, GError **error)
{
    hyocr_kv_seq_init(t);
    /* a swapped-out sequence holds no blocks but keeps its token count */
    t->n_tokens = s->n_blocks == 0 ? s->n_tokens : 0;
    if (s->n_blocks == 0) return true;
    if (!hyocr_kv_seq_reserve(pool2, t, s->n_blocks * m->kv_block_size, error)) return false;
    size_t be = kv_block_elems(m);
    for (int i = 0; i < s->n_blocks; i++) {
        for (int l = 0; l < m->cfg.text.num_layers; l++) {
            if (!m->be->ops->copy(m->be, k2[l], (size_t)t->blocks[i] * be, m->k_cache[l],
                                  (size_t)s->blocks[i] * be, be, error) ||
                !m->be->ops->copy(m->be, v2[l], (size_t)t->blocks[i] * be, m->v_cache[l],
                                  (size_t)s->blocks[i] * be, be, error))
                return false;
        }
    }
    hyocr_kv_seq_commit(t, s->n_tokens);
    return true;
}

/* Replaces the pool by a bigger one (or makes the first); every live sequence
 * keeps its tokens. A new table is built per sequence because block ids cannot
 * be chosen. */
static bool kv_grow(hyocr_model *m, int new_blocks, GError **error)
{
    hyocr_buf **k2, **v2;
    if (!kv_alloc_storage(m, new_blocks, &k2, &v2, error)) return false;
    hyocr_kv_pool *pool2 = hyocr_kv_pool_init(new_blocks, m->kv_block_size);
    guint n = m->live_seqs->len;
    hyocr_kv_seq *moved = g_new0(hyocr_kv_seq, MAX(n, 1));
    bool ok = true;
    for (guint i = 0; i < n && ok; i++)
        ok = kv_move_seq(m, m->live_seqs->pdata[i], pool2, k2, v2, &moved[i], error);
    if (!ok) {
        for (guint i = 0; i < n; i++) g_free(moved[i].blocks);
        g_free(moved);
        hyocr_kv_pool_free(pool2);
        free_kv_storage(m, k2, v2);
        return false;
    }
    for (guint i = 0; i < n; i++) {
        hyocr_kv_seq *s = m->live_seqs->pdata[i];
        if (m->kv_pool) hyocr_kv_seq_release(m->kv_pool, s);
        g_free(s->blocks);
        *s = moved[i];
    }
    g_free(moved);
    kv_drop(m);
    m->k_cache = k2;
    m->v_cache = v2;
    m->kv_pool = pool2;
    if (n > 0) m->kv_grows++;
    return true;
}

bool hyocr_model_kv_reserve(hyocr_model *m, hyocr_kv_seq *seq, int n_more, GError **error)
{
    if (m->kv_block_size <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("KV cache: not created yet"));
        return false;
    }
    if (n_more < 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache: cannot reserve a negative number of tokens (%d)"), n_more);
        return false;
    }
    g_autoptr(GError) local = NULL;
    if (m->kv_pool && hyocr_kv_seq_reserve(m->kv_pool, seq, n_more, &local)) return true;
    int have = m->kv_pool ? hyocr_kv_pool_n_blocks(m->kv_pool) : 0;
    int n_free = m->kv_pool ? hyocr_kv_pool_n_free(m->kv_pool) : 0;
    int64_t want = ((int64_t)seq->n_tokens + n_more + m->kv_block_size - 1) / m->kv_block_size;
    int64_t need = want - seq->n_blocks - n_free;
    int64_t target = MAX((int64_t)have * 2, have + need);
    if (m->kv_max_blocks) target = MIN(target, m->kv_max_blocks);
    if (m->kv_fixed || target < have + need || target > G_MAXINT) {
        if (local) {
            g_propagate_error(error, g_steal_pointer(&local));
        } else {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                        _("KV cache: %lld blocks of %d tokens would exceed its cap of %d blocks; lower max_batch or the "
                          "new tokens, or raise the memory limit"),
                        (long long)(have + need), m->kv_block_size, m->kv_max_blocks);
        }
        return false;
    }
    if (!kv_grow(m, (int)target, error)) return false;
    return hyocr_kv_seq_reserve(m->kv_pool, seq, n_more, error);
}

/* ---- preemption by swapping ------------------------------------------------------ */

static int swap_blocks(const hyocr_model *m, const hyocr_kv_seq *seq)
{
    return m->kv_block_size > 0 ? (seq->n_tokens + m->kv_block_size - 1) / m->kv_block_size : 0;
}

static size_t swap_block_bytes(const hyocr_model *m)
{
    return kv_block_elems(m) * (size_t)(m->k_cache && m->k_cache[0] ? m->k_cache[0]->elem_size : 0);
}

size_t hyocr_model_kv_swap_bytes(const hyocr_model *m, const hyocr_kv_seq *seq)
{
    return (size_t)swap_blocks(m, seq) * swap_block_bytes(m) * 2 * (size_t)m->cfg.text.num_layers;
}

/* Host layout: per layer, the K blocks in table order, then the V blocks. Runs
 * of consecutive block ids (what a fresh pool hands out) move in one copy. */
static bool swap_copy(hyocr_model *m, hyocr_kv_seq *seq, uint8_t *host, bool out, GError **error)
{
    const size_t bb = swap_block_bytes(m);
    const int nb = swap_blocks(m, seq);
    for (int l = 0; l < m->cfg.text.num_layers; l++) {
        hyocr_buf *kv[2] = { m->k_cache[l], m->v_cache[l] };
        for (int w = 0; w < 2; w++) {
            for (int i = 0, run; i < nb; i += run, host += (size_t)run * bb) {
                for (run = 1; i + run < nb && seq->blocks[i + run] == seq->blocks[i] + run;) run++;
                size_t off = (size_t)seq->blocks[i] * bb, bytes = (size_t)run * bb;
                bool ok = out ? m->be->ops->read_bytes(m->be, kv[w], off, host, bytes, error)
                              : m->be->ops->write_bytes(m->be, kv[w], off, host, bytes, error);
                if (!ok) return false;
            }
        }
    }
    return true;
}

bool hyocr_model_kv_swap_out(hyocr_model *m, hyocr_kv_seq *seq, void *host, GError **error)
{
    if (!m->kv_pool || seq->n_blocks < swap_blocks(m, seq)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache swap-out: the sequence holds only %d blocks for its %d tokens"), seq->n_blocks, seq->n_tokens);
        return false;
    }
    if (!swap_copy(m, seq, host, true, error)) return false;
    int n_tokens = seq->n_tokens;
    hyocr_kv_seq_release(m->kv_pool, seq);
    seq->n_tokens = n_tokens;
    return true;
}

bool hyocr_model_kv_swap_in(hyocr_model *m, hyocr_kv_seq *seq, const void *host, GError **error)
{
    if (seq->n_blocks != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("KV cache swap-in: the sequence still holds %d blocks"), seq->n_blocks);
        return false;
    }
    /* Reserve from an empty table, then give the tokens back their count. */
    int n_tokens = seq->n_tokens;
    seq->n_tokens = 0;
    bool ok = hyocr_model_kv_reserve(m, seq, n_tokens, error);
    seq->n_tokens = n_tokens;
    if (ok && !swap_copy(m, seq, (uint8_t *)host, false, error)) {
        hyocr_kv_seq_release(m->kv_pool, seq);
        seq->n_tokens = n_tokens;
        return false;
    }
    return ok;
}

void *hyocr_model_host_alloc(hyocr_model *m, size_t bytes, GError **error)
{
    return m->be->ops->host_alloc(m->be, bytes, error);
}

void hyocr_model_host_free(hyocr_model *m, void *p, size_t bytes)
{
    if (p) m->be->ops->host_free(m->be, p, bytes);
}

/* ---- the finite check ------------------------------------------------------------ */

bool hyocr_model_check_finite(hyocr_model *m, const hyocr_buf *b, size_t n, bool *finite, GError **error)
{
    return m->be->ops->check_finite(m->be, b, n, finite, error);
}
