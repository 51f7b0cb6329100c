/* hyocr; checkpoint folder: config + safetensors under Tencent's canonical tensor names.
 *
 * The table of tensors the model needs (spec §2.2) is derived from the config, so a tiny test
 * checkpoint and the release are checked by the same code. Tensors present in the files but not
 * needed (image_sep, MTP leftovers, ...) are counted, never an error.
 *
 * Tied head: when tie_word_embeddings is true the head is the embedding, and a stored
 * lm_head.weight is ignored (as vLLM and llama.cpp do, spec §2.1). When it is false,
 * lm_head.weight must be present: transformers would otherwise run with a random head. */
#include "checkpoint.h"
#include "error.h"
#include "i18n.h"

#include <stdarg.h>
#include <string.h>

struct hyocr_checkpoint {
    char                  *dir;
    hyocr_config          *cfg;
    hyocr_safetensors     *st;
    GHashTable            *by_canon;     /* canonical name (owned) → const hyocr_tensor* */
    GHashTable            *other_canon;  /* canonical name (owned) → dtype string of an unusable tensor */
    hyocr_checkpoint_stats stats;
    hyocr_dflash_config   *dcfg;         /* set when this is a DFlash draft (then cfg is NULL) */
    hyocr_checkpoint      *draft;        /* the model folder's dflash/, when present and usable */
    GError                *draft_error;  /* why a present dflash/ is unusable */
};

/* ------------------------------------------------------------------ names */

/* transformers-5 component → Tencent component, inside model.vision_tower.* only. */
static const char *vit_component(const char *c, const char *prev)
{
    static const struct { const char *from, *to; } map[] = {
        { "patch_merger", "perceive" }, { "proj_conv", "proj.0" }, { "proj_out", "proj.2" },
        { "layer_norm1", "input_layernorm" }, { "layer_norm2", "post_attention_layernorm" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
        if (strcmp(c, map[i].from) == 0) return map[i].to;
    if (prev && strcmp(prev, "mlp") == 0) {
        if (strcmp(c, "fc1") == 0) return "dense_h_to_4h";
        if (strcmp(c, "fc2") == 0) return "dense_4h_to_h";
    }
    return c;
}

char *hyocr_checkpoint_canonical_name(const char *name)
{
    static const char text_prefix[] = "model.language_model.", vit_prefix[] = "model.vision_tower.";
    if (g_str_has_prefix(name, text_prefix))
        return g_strconcat("model.", name + strlen(text_prefix), NULL);
    if (!g_str_has_prefix(name, vit_prefix))
        return g_strdup(name);
    g_auto(GStrv) parts = g_strsplit(name + strlen(vit_prefix), ".", -1);
    GString *out = g_string_new("vit");
    for (int i = 0; parts[i]; i++) {
        g_string_append_c(out, '.');
        g_string_append(out, vit_component(parts[i], i > 0 ? parts[i - 1] : NULL));
    }
    return g_string_free(out, FALSE);
}

/* ------------------------------------------------------------------ the tensor table */

typedef struct {
    char    name[128];
    int     n_dims;
    int64_t shape[HYOCR_MAX_DIMS];
    bool    vision;
} expect;

static void want(GArray *a, bool vision, int n_dims, const int64_t *shape, const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static void want(GArray *a, bool vision, int n_dims, const int64_t *shape, const char *fmt, ...)
{
    expect e = { .n_dims = n_dims, .vision = vision };
    memcpy(e.shape, shape, sizeof(int64_t) * (size_t)n_dims);
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(e.name, sizeof e.name, fmt, ap);
    va_end(ap);
    g_array_append_val(a, e);
}

#define S1(a)          1, (const int64_t[]){ (a) }
#define S2(a, b)       2, (const int64_t[]){ (a), (b) }
#define S4(a, b, c, d) 4, (const int64_t[]){ (a), (b), (c), (d) }

static void want_vision(GArray *a, const hyocr_config *cfg)
{
    const hyocr_vision_config *v = &cfg->vision;
    const int64_t C = v->hidden_size, I = v->intermediate_size, p = v->patch_size, m = v->spatial_merge_size;
    const int64_t E = hyocr_config_pos_edge(cfg), Th = cfg->text.hidden_size;
    want(a, true, S4(C, v->num_channels, p, p), "vit.embeddings.patch_embedding.weight");
    want(a, true, S1(C), "vit.embeddings.patch_embedding.bias");
    want(a, true, S2(E * E + 1, C), "vit.embeddings.position_embedding.weight");
    static const char *const norms[] = { "input_layernorm", "post_attention_layernorm" };
    static const char *const projs[] = { "q_proj", "k_proj", "v_proj", "o_proj" };
    for (int i = 0; i < v->num_layers; i++) {
        for (int k = 0; k < 2; k++) {
            want(a, true, S1(C), "vit.layers.%d.%s.weight", i, norms[k]);
            want(a, true, S1(C), "vit.layers.%d.%s.bias", i, norms[k]);
        }
        for (int k = 0; k < 4; k++) {
            want(a, true, S2(C, C), "vit.layers.%d.self_attn.%s.weight", i, projs[k]);
            want(a, true, S1(C), "vit.layers.%d.self_attn.%s.bias", i, projs[k]);
        }
        want(a, true, S2(I, C), "vit.layers.%d.mlp.dense_h_to_4h.weight", i);
        want(a, true, S1(I), "vit.layers.%d.mlp.dense_h_to_4h.bias", i);
        want(a, true, S2(C, I), "vit.layers.%d.mlp.dense_4h_to_h.weight", i);
        want(a, true, S1(C), "vit.layers.%d.mlp.dense_4h_to_h.bias", i);
    }
    want(a, true, S1(C), "vit.perceive.before_rms.weight");
    want(a, true, S4(2 * C, C, m, m), "vit.perceive.proj.0.weight");
    want(a, true, S1(2 * C), "vit.perceive.proj.0.bias");
    want(a, true, S4(4 * C, 2 * C, 1, 1), "vit.perceive.proj.2.weight");
    want(a, true, S1(4 * C), "vit.perceive.proj.2.bias");
    want(a, true, S2(Th, 4 * C), "vit.perceive.mlp.weight");
    want(a, true, S1(Th), "vit.perceive.mlp.bias");
    want(a, true, S1(4 * C), "vit.perceive.image_newline");
    want(a, true, S1(Th), "vit.perceive.image_begin");
    want(a, true, S1(Th), "vit.perceive.image_end");
    want(a, true, S1(Th), "vit.perceive.after_rms.weight");
}

static void want_text(GArray *a, const hyocr_config *cfg)
{
    const hyocr_text_config *t = &cfg->text;
    const int64_t H = t->hidden_size, D = t->head_dim, Q = (int64_t)t->num_heads * D;
    const int64_t KV = (int64_t)t->num_kv_heads * D, F = t->intermediate_size;
    want(a, false, S2(t->vocab_size, H), "model.embed_tokens.weight");
    for (int i = 0; i < t->num_layers; i++) {
        want(a, false, S1(H), "model.layers.%d.input_layernorm.weight", i);
        want(a, false, S2(Q, H), "model.layers.%d.self_attn.q_proj.weight", i);
        want(a, false, S2(KV, H), "model.layers.%d.self_attn.k_proj.weight", i);
        want(a, false, S2(KV, H), "model.layers.%d.self_attn.v_proj.weight", i);
        want(a, false, S2(H, Q), "model.layers.%d.self_attn.o_proj.weight", i);
        want(a, false, S1(D), "model.layers.%d.self_attn.query_layernorm.weight", i);
        want(a, false, S1(D), "model.layers.%d.self_attn.key_layernorm.weight", i);
        want(a, false, S1(H), "model.layers.%d.post_attention_layernorm.weight", i);
        want(a, false, S2(F, H), "model.layers.%d.mlp.gate_proj.weight", i);
        want(a, false, S2(F, H), "model.layers.%d.mlp.up_proj.weight", i);
        want(a, false, S2(H, F), "model.layers.%d.mlp.down_proj.weight", i);
    }
    want(a, false, S1(H), "model.norm.weight");
    if (!t->tie_word_embeddings)
        want(a, false, S2(t->vocab_size, H), "lm_head.weight");
}

/* The draft's own tensors, named as DFlashDraftModel's state dict; the embedding and the head
 * are the target's. */
static void want_draft(GArray *a, const hyocr_dflash_config *d)
{
    const int64_t H = d->hidden_size, D = d->head_dim, Q = (int64_t)d->num_heads * D;
    const int64_t KV = (int64_t)d->num_kv_heads * D, F = d->intermediate_size;
    want(a, false, S2(H, d->n_target_layers * H), "fc.weight");
    want(a, false, S1(H), "hidden_norm.weight");
    for (int i = 0; i < d->num_layers; i++) {
        want(a, false, S1(H), "layers.%d.input_layernorm.weight", i);
        want(a, false, S2(Q, H), "layers.%d.self_attn.q_proj.weight", i);
        want(a, false, S2(KV, H), "layers.%d.self_attn.k_proj.weight", i);
        want(a, false, S2(KV, H), "layers.%d.self_attn.v_proj.weight", i);
        want(a, false, S2(H, Q), "layers.%d.self_attn.o_proj.weight", i);
        want(a, false, S1(D), "layers.%d.self_attn.q_norm.weight", i);
        want(a, false, S1(D), "layers.%d.self_attn.k_norm.weight", i);
        want(a, false, S1(H), "layers.%d.post_attention_layernorm.weight", i);
        want(a, false, S2(F, H), "layers.%d.mlp.gate_proj.weight", i);
        want(a, false, S2(F, H), "layers.%d.mlp.up_proj.weight", i);
        want(a, false, S2(H, F), "layers.%d.mlp.down_proj.weight", i);
    }
    want(a, false, S1(H), "norm.weight");
}

static GArray *expected_tensors(const hyocr_config *cfg)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(expect));
    want_vision(a, cfg);
    want_text(a, cfg);
    return a;
}

static GArray *expected_of(const hyocr_checkpoint *ck)
{
    if (!ck->dcfg) return expected_tensors(ck->cfg);
    GArray *a = g_array_new(FALSE, FALSE, sizeof(expect));
    want_draft(a, ck->dcfg);
    return a;
}

static int64_t expect_numel(const expect *e)
{
    int64_t n = 1;
    for (int i = 0; i < e->n_dims; i++) n *= e->shape[i];
    return n;
}

int64_t hyocr_checkpoint_expected_params(const hyocr_config *cfg, int64_t *vision, int64_t *text)
{
    g_autoptr(GArray) a = expected_tensors(cfg);
    int64_t v = 0, t = 0;
    for (guint i = 0; i < a->len; i++) {
        const expect *e = &g_array_index(a, expect, i);
        *(e->vision ? &v : &t) += expect_numel(e);
    }
    if (vision) *vision = v;
    if (text) *text = t;
    return v + t;
}

/* ------------------------------------------------------------------ validation */

static char *shape_str(int n_dims, const int64_t *shape)
{
    GString *s = g_string_new("[");
    for (int i = 0; i < n_dims; i++) g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "", shape[i]);
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

/* "'canon'" or "'canon' (stored as 'name')" */
static char *tensor_label(const char *canon, const hyocr_tensor *t)
{
    if (strcmp(canon, t->name) == 0) return g_strdup_printf("'%s'", canon);
    return g_strdup_printf("'%s' (stored as '%s')", canon, t->name);
}

static bool missing_error(const hyocr_checkpoint *ck, const expect *e, GError **error)
{
    const char *dt = g_hash_table_lookup(ck->other_canon, e->name);
    if (dt) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: tensor '%s' has dtype %s; hyocr needs F32, F16 or BF16 weights; convert the checkpoint "
                      "or download the original release"), ck->dir, e->name, dt);
    } else if (strcmp(e->name, "lm_head.weight") == 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: tensor 'lm_head.weight' is missing, and config.json says tie_word_embeddings is false "
                      "(so the head is not the embedding); the weights are incomplete; download the model again"),
                    ck->dir);
    } else {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: tensor '%s' is missing from the weights (looked for Tencent and transformers names); the "
                      "download is incomplete or the folder holds a different model; download the model again"),
                    ck->dir, e->name);
    }
    return false;
}

static bool check_tensor(const hyocr_checkpoint *ck, const expect *e, const hyocr_tensor *t, GError **error)
{
    g_autofree char *label = tensor_label(e->name, t);
    if (t->dtype != HYOCR_DTYPE_F32 && t->dtype != HYOCR_DTYPE_F16 && t->dtype != HYOCR_DTYPE_BF16) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: tensor %s has dtype %s; hyocr needs F32, F16 or BF16 weights. Convert the checkpoint "
                      "or download the original release"), t->file, label,
                    hyocr_dtype_name(t->dtype));
        return false;
    }
    bool same = t->n_dims == e->n_dims;
    for (int i = 0; same && i < e->n_dims; i++) same = t->shape[i] == e->shape[i];
    if (!same) {
        g_autofree char *have = shape_str(t->n_dims, t->shape), *need = shape_str(e->n_dims, e->shape);
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: tensor %s has shape %s, but config.json implies %s; the weights and config.json belong to "
                      "different models; use the config.json that came with these weights"),
                    t->file, label, have, need);
        return false;
    }
    return true;
}

static void count_tensor(hyocr_checkpoint_stats *s, const expect *e, const hyocr_tensor *t)
{
    int64_t n = hyocr_tensor_numel(t);
    s->n_tensors++;
    s->n_params += n;
    *(e->vision ? &s->n_params_vision : &s->n_params_text) += n;
    s->bytes_per_dtype[t->dtype] += t->nbytes;
}

static bool validate_tensors(hyocr_checkpoint *ck, GError **error)
{
    g_autoptr(GArray) a = expected_of(ck);
    for (guint i = 0; i < a->len; i++) {
        const expect *e = &g_array_index(a, expect, i);
        const hyocr_tensor *t = g_hash_table_lookup(ck->by_canon, e->name);
        if (!t) return missing_error(ck, e, error);
        if (!check_tensor(ck, e, t, error)) return false;
        count_tensor(&ck->stats, e, t);
    }
    size_t all = 0;
    for (int d = 0; d < HYOCR_DTYPE_COUNT; d++) all += ck->stats.bytes_per_dtype[d];
    ck->stats.bf16_only = ck->stats.n_tensors > 0 && ck->stats.bytes_per_dtype[HYOCR_DTYPE_BF16] == all;
    if (ck->cfg && ck->cfg->text.tie_word_embeddings) {
        ck->stats.lm_head_tied = true;
        g_hash_table_replace(ck->by_canon, g_strdup("lm_head.weight"),
                             g_hash_table_lookup(ck->by_canon, "model.embed_tokens.weight"));
    }
    return true;
}

/* ------------------------------------------------------------------ indexing */

static bool index_tensors(hyocr_checkpoint *ck, GError **error)
{
    for (size_t i = 0; i < hyocr_safetensors_count(ck->st); i++) {
        const hyocr_tensor *t = hyocr_safetensors_at(ck->st, i);
        char *canon = hyocr_checkpoint_canonical_name(t->name);
        if (strcmp(canon, t->name) != 0) ck->stats.transformers_names = true;
        const hyocr_tensor *prev = g_hash_table_lookup(ck->by_canon, canon);
        if (prev) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                        _("%s: tensors '%s' and '%s' are the same weight under two naming schemes; remove one of "
                          "the copies or download the model again"), ck->dir, prev->name, t->name);
            g_free(canon);
            return false;
        }
        g_hash_table_insert(ck->by_canon, canon, (gpointer)t);
    }
    for (size_t i = 0; i < hyocr_safetensors_count_other(ck->st); i++) {
        const char *name = hyocr_safetensors_other_name(ck->st, i);
        g_hash_table_insert(ck->other_canon, hyocr_checkpoint_canonical_name(name),
                            (gpointer)hyocr_safetensors_other_dtype(ck->st, name));
    }
    return true;
}

/* ------------------------------------------------------------------ entry points */

void hyocr_checkpoint_free(hyocr_checkpoint *ck)
{
    if (!ck) return;
    if (ck->by_canon) g_hash_table_destroy(ck->by_canon);
    if (ck->other_canon) g_hash_table_destroy(ck->other_canon);
    hyocr_safetensors_free(ck->st);
    hyocr_config_free(ck->cfg);
    g_free(ck->dcfg);
    hyocr_checkpoint_free(ck->draft);
    g_clear_error(&ck->draft_error);
    g_free(ck->dir);
    g_free(ck);
}

static bool check_dir(const char *dir, GError **error)
{
    if (!g_file_test(dir, G_FILE_TEST_EXISTS)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING,
                    _("%s: no such folder (the HunyuanOCR model's folder holds config.json, model.safetensors, ...)"),
                    dir);
        return false;
    }
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO,
                    _("%s is a file, not a folder: choose the folder that holds config.json and the weights"), dir);
        return false;
    }
    return true;
}

static void finish_stats(hyocr_checkpoint *ck)
{
    size_t total = hyocr_safetensors_count(ck->st) + hyocr_safetensors_count_other(ck->st);
    ck->stats.n_ignored = total - ck->stats.n_tensors;
    ck->stats.n_files = hyocr_safetensors_n_files(ck->st);
}

hyocr_checkpoint *hyocr_checkpoint_open(const char *dir, GError **error)
{
    g_return_val_if_fail(dir != NULL, NULL);
    if (!check_dir(dir, error)) return NULL;
    g_autoptr(hyocr_checkpoint) ck = g_new0(hyocr_checkpoint, 1);
    ck->dir = g_strdup(dir);
    ck->by_canon = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    ck->other_canon = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (!(ck->cfg = hyocr_config_load(dir, error)) || !(ck->st = hyocr_safetensors_open_dir(dir, error)) ||
        !index_tensors(ck, error) || !validate_tensors(ck, error))
        return NULL;
    finish_stats(ck);
    /* The draft is optional: without one, or with a broken one, the model runs without
     * speculation, and draft_error says why for inspect and the engine to report. */
    g_autofree char *draft_dir = g_build_filename(dir, "dflash", NULL);
    if (g_file_test(draft_dir, G_FILE_TEST_IS_DIR))
        ck->draft = hyocr_checkpoint_open_draft(draft_dir, ck->cfg, &ck->draft_error);
    return g_steal_pointer(&ck);
}

/* The draft shares the model's embedding and head, and reads its layers: it must fit them. */
static bool draft_fits(const char *dir, const hyocr_dflash_config *d, const hyocr_config *target, GError **error)
{
    const hyocr_text_config *t = &target->text;
    g_autofree char *path = g_build_filename(dir, "config.json", NULL);
    const char *what = NULL;
    int have = 0, want_v = 0;
    if (d->hidden_size != t->hidden_size) what = "hidden_size", have = d->hidden_size, want_v = t->hidden_size;
    else if (d->vocab_size != t->vocab_size) what = "vocab_size", have = d->vocab_size, want_v = t->vocab_size;
    else if (d->num_target_layers && d->num_target_layers != t->num_layers)
        what = "num_target_layers", have = d->num_target_layers, want_v = t->num_layers;
    if (what) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("%s: '%s' is %d but the model's is %d: this draft was made for another model; download the "
                      "model again"), path, what, have, want_v);
        return false;
    }
    for (int i = 0; i < d->n_target_layers; i++)
        /* transformers gives the last layer's state after the final norm; no release reads it. */
        if (d->target_layer_ids[i] >= t->num_layers - 1) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                        _("%s: dflash_config 'target_layer_ids' names layer %d, but the model's layers that a draft "
                          "can read are 0 to %d"), path, d->target_layer_ids[i], t->num_layers - 2);
            return false;
        }
    return true;
}

hyocr_checkpoint *hyocr_checkpoint_open_draft(const char *dir, const hyocr_config *target, GError **error)
{
    g_return_val_if_fail(dir != NULL && target != NULL, NULL);
    if (!check_dir(dir, error)) return NULL;
    g_autoptr(hyocr_checkpoint) ck = g_new0(hyocr_checkpoint, 1);
    ck->dir = g_strdup(dir);
    ck->dcfg = g_new0(hyocr_dflash_config, 1);
    ck->by_canon = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    ck->other_canon = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (!hyocr_dflash_config_load(dir, ck->dcfg, error) || !draft_fits(dir, ck->dcfg, target, error) ||
        !(ck->st = hyocr_safetensors_open_dir(dir, error)) || !index_tensors(ck, error) ||
        !validate_tensors(ck, error))
        return NULL;
    finish_stats(ck);
    return g_steal_pointer(&ck);
}

const hyocr_checkpoint *hyocr_checkpoint_draft(const hyocr_checkpoint *ck) { return ck->draft; }
const GError *hyocr_checkpoint_draft_error(const hyocr_checkpoint *ck) { return ck->draft_error; }
const hyocr_dflash_config *hyocr_checkpoint_dflash_config(const hyocr_checkpoint *ck) { return ck->dcfg; }

const hyocr_config *hyocr_checkpoint_config(const hyocr_checkpoint *ck) { return ck->cfg; }
hyocr_config *hyocr_checkpoint_config_mut(hyocr_checkpoint *ck) { return ck->cfg; }
const char *hyocr_checkpoint_dir(const hyocr_checkpoint *ck) { return ck->dir; }

void hyocr_checkpoint_get_stats(const hyocr_checkpoint *ck, hyocr_checkpoint_stats *out)
{
    *out = ck->stats;
}

const hyocr_tensor *hyocr_checkpoint_get(const hyocr_checkpoint *ck, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *name = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return g_hash_table_lookup(ck->by_canon, name);
}
