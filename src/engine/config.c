/* hyocr; model configuration read from a checkpoint folder.
 *
 * Precedence rules follow transformers' HunYuanVLConfig (models/hunyuan_vl/configuration_hunyuan_vl.py):
 *  - Text fields may live at the top level (legacy flat Tencent layout), inside `text_config`
 *    (transformers-5 layout), or both (the 1.5 release duplicates them). transformers folds the
 *    recognised top-level text keys OVER the nested dict ({**text_config, **top_level_text_keys}),
 *    so when a key appears in both places the TOP-LEVEL value wins. We do the same.
 *  - Legacy aliases: attention_head_dim → head_dim, org_vocab_size → vocab_size (only when the
 *    canonical key is absent), pad_id → pad_token_id (when pad_token_id is absent or -1).
 *  - A legacy `rope_scaling` dict takes precedence over `rope_parameters` (the base class does
 *    `rope_scaling or rope_parameters`); a theta inside the dict beats the separate `rope_theta`.
 *  - The merger's output width is the text hidden size: transformers overwrites
 *    vision_config.text_hidden_size with text_config.hidden_size, whatever the file says.
 *  - JSON null counts as absent (transformers writes None as null).
 * Fields that size tensors are required; the rest default to transformers' class defaults. */
#include "config.h"
#include "error.h"
#include "json.h"
#include "i18n.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#define JSON_FILE_LIMIT (64 * 1024 * 1024)
#define SIZE_LIMIT      (1 << 20)      /* any single width/count; keeps products in int64 */
#define VOCAB_LIMIT     (1 << 24)

/* ------------------------------------------------------------------ JSON files */

/* Parses PATH into a JSON object. Callers check for optional files beforehand. */
static JsonObject *json_load_object(const char *path, GError **error)
{
    GStatBuf sb;
    if (g_stat(path, &sb) != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot read: %s"), path, g_strerror(errno));
        return NULL;
    }
    if (sb.st_size > JSON_FILE_LIMIT) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                    _("%s: %lld bytes is far too large for a configuration file (limit %d MB)"),
                    path, (long long)sb.st_size, JSON_FILE_LIMIT >> 20);
        return NULL;
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) root = hyocr_json_read_file(path, &err);
    if (!root && err->code == HYOCR_ERROR_PARSE)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE,
                    _("%s (the file is not valid JSON; fix it or download the model again)"), err->message);
    else if (!root)
        g_propagate_error(error, g_steal_pointer(&err));
    if (!root) return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s: expected a JSON object at the top level"), path);
        return NULL;
    }
    return json_object_ref(json_node_get_object(root));
}

static const char *node_kind(JsonNode *n)
{
    if (!n || JSON_NODE_HOLDS_NULL(n)) return _("null");
    if (JSON_NODE_HOLDS_OBJECT(n)) return _("an object");
    if (JSON_NODE_HOLDS_ARRAY(n)) return _("an array");
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_STRING) return _("a string");
    if (t == G_TYPE_BOOLEAN) return _("a boolean");
    if (t == G_TYPE_INT64) return _("an integer");
    return _("a number");
}

static bool node_is_number(JsonNode *n)
{
    if (!JSON_NODE_HOLDS_VALUE(n)) return false;
    GType t = json_node_get_value_type(n);
    return t == G_TYPE_INT64 || t == G_TYPE_DOUBLE;
}

/* Integral doubles (1024.0) are accepted: some exporters write every number as a float. */
static bool node_to_int64(JsonNode *n, int64_t *out)
{
    if (!JSON_NODE_HOLDS_VALUE(n)) return false;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64) {
        *out = json_node_get_int(n);
        return true;
    }
    if (t == G_TYPE_DOUBLE) {
        double d = json_node_get_double(n);
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9.0e15) return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------ scoped lookups */

/* A set of JSON objects searched in order (first one holding a non-null key wins). */
typedef struct {
    const char *path;        /* file named in messages */
    const char *label;       /* "text field", "vision_config field", "field" */
    const char *looked;      /* appended to "missing" messages */
    JsonObject *obj[2];
} scope;

static JsonNode *sc_node(const scope *s, const char *key)
{
    for (int i = 0; i < 2; i++) {
        if (!s->obj[i] || !json_object_has_member(s->obj[i], key)) continue;
        JsonNode *n = json_object_get_member(s->obj[i], key);
        if (n && !JSON_NODE_HOLDS_NULL(n)) return n;
    }
    return NULL;
}

static bool sc_missing(const scope *s, const char *key, GError **error)
{
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("%s: %s '%s' missing%s"), s->path, s->label, key, s->looked);
    return false;
}

static bool sc_type_error(const scope *s, const char *key, const char *want, JsonNode *n, GError **error)
{
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("%s: %s '%s' must be %s, found %s"),
                s->path, s->label, key, want, node_kind(n));
    return false;
}

/* For lists: names the entry, and shows a bad integer's value. */
static bool sc_elem_error(const scope *s, const char *key, guint i, const char *want, JsonNode *e, GError **error)
{
    g_autofree char *found = NULL;
    if (JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_INT64)
        found = g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(e));
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("%s: %s '%s': entry %u must be %s, found %s"),
                s->path, s->label, key, i, want, found ? found : node_kind(e));
    return false;
}

/* *found (optional) tells whether the key was present; absent + !required leaves *out = def. */
static bool sc_int64(const scope *s, const char *key, bool required, int64_t def, int64_t *out,
                     bool *found, GError **error)
{
    JsonNode *n = sc_node(s, key);
    if (found) *found = n != NULL;
    if (!n) {
        *out = def;
        return required ? sc_missing(s, key, error) : true;
    }
    if (!node_to_int64(n, out)) return sc_type_error(s, key, _("an integer"), n, error);
    return true;
}

static bool sc_int(const scope *s, const char *key, bool required, int def, int *out, GError **error)
{
    int64_t v;
    if (!sc_int64(s, key, required, def, &v, NULL, error)) return false;
    if (v < INT_MIN || v > INT_MAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("%s: %s '%s' = %lld is out of range"),
                    s->path, s->label, key, (long long)v);
        return false;
    }
    *out = (int)v;
    return true;
}

static bool sc_double(const scope *s, const char *key, double def, double *out, bool *found, GError **error)
{
    JsonNode *n = sc_node(s, key);
    if (found) *found = n != NULL;
    if (!n) {
        *out = def;
        return true;
    }
    if (!node_is_number(n)) return sc_type_error(s, key, _("a number"), n, error);
    *out = json_node_get_double(n);
    return true;
}

static bool sc_bool(const scope *s, const char *key, bool def, bool *out, GError **error)
{
    JsonNode *n = sc_node(s, key);
    if (!n) {
        *out = def;
        return true;
    }
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN)
        return sc_type_error(s, key, _("true or false"), n, error);
    *out = json_node_get_boolean(n);
    return true;
}

/* Returns the string or NULL when absent; a non-string is an error (*ok = false). */
static const char *sc_string(const scope *s, const char *key, bool *ok, GError **error)
{
    JsonNode *n = sc_node(s, key);
    *ok = true;
    if (!n) return NULL;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        *ok = sc_type_error(s, key, _("a string"), n, error);
        return NULL;
    }
    return json_node_get_string(n);
}

static JsonObject *sc_object(const scope *s, const char *key, bool *ok, GError **error)
{
    JsonNode *n = sc_node(s, key);
    *ok = true;
    if (!n) return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        *ok = sc_type_error(s, key, _("an object"), n, error);
        return NULL;
    }
    return json_node_get_object(n);
}

/* An int or a list of ints (eos_token_id). n_max bounds the list. */
static bool sc_id_list(const scope *s, const char *key, int32_t *ids, int n_max, int *n, GError **error)
{
    JsonNode *node = sc_node(s, key);
    *n = 0;
    if (!node) return true;
    int64_t v;
    if (node_to_int64(node, &v)) {
        ids[(*n)++] = (int32_t)CLAMP(v, INT32_MIN, INT32_MAX);
        return true;
    }
    if (!JSON_NODE_HOLDS_ARRAY(node)) return sc_type_error(s, key, _("an integer or a list of integers"), node, error);
    JsonArray *a = json_node_get_array(node);
    guint len = json_array_get_length(a);
    if (len > (guint)n_max) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("%s: %s '%s' lists %u ids; at most %d are supported"),
                    s->path, s->label, key, len, n_max);
        return false;
    }
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!node_to_int64(e, &v) || v < 0 || v > INT32_MAX)
            return sc_elem_error(s, key, i, _("a non-negative integer"), e, error);
        ids[(*n)++] = (int32_t)v;
    }
    return true;
}

/* ------------------------------------------------------------------ config.json: text */

static bool check_hidden_act(const scope *s, const char *want, GError **error)
{
    bool ok;
    const char *act = sc_string(s, "hidden_act", &ok, error);
    if (!ok) return false;
    if (act && strcmp(act, want) != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: %s 'hidden_act' is '%s'; HunyuanOCR uses '%s' and hyocr implements only that"),
                    s->path, s->label, act, want);
        return false;
    }
    return true;
}

static bool check_no_bias(const scope *s, const char *key, GError **error)
{
    bool v;
    if (!sc_bool(s, key, false, &v, error)) return false;
    if (v) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: %s '%s' is true; HunyuanOCR's language model has no biases and hyocr does not load them"),
                    s->path, s->label, key);
        return false;
    }
    return true;
}

static bool parse_text_sizes(const scope *s, hyocr_text_config *t, GError **error)
{
    if (!sc_int(s, "hidden_size", true, 0, &t->hidden_size, error) ||
        !sc_int(s, "num_hidden_layers", true, 0, &t->num_layers, error) ||
        !sc_int(s, "num_attention_heads", true, 0, &t->num_heads, error) ||
        !sc_int(s, "intermediate_size", true, 0, &t->intermediate_size, error) ||
        !sc_int(s, "num_key_value_heads", false, t->num_heads, &t->num_kv_heads, error) ||
        !sc_int(s, "max_position_embeddings", false, 2048, &t->max_position_embeddings, error))
        return false;

    const char *vocab_key = sc_node(s, "vocab_size") ? "vocab_size" : "org_vocab_size";
    if (!sc_node(s, vocab_key)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: %s 'vocab_size' missing (also looked for 'org_vocab_size')%s"), s->path, s->label,
                    s->looked);
        return false;
    }
    if (!sc_int(s, vocab_key, true, 0, &t->vocab_size, error)) return false;

    const char *hd_key = sc_node(s, "head_dim") ? "head_dim" : "attention_head_dim";
    int hd_default = t->num_heads > 0 ? t->hidden_size / t->num_heads : 0;
    if (!sc_int(s, hd_key, false, hd_default, &t->head_dim, error)) return false;

    double eps;
    if (!sc_double(s, "rms_norm_eps", 1e-5, &eps, NULL, error)) return false;
    t->rms_norm_eps = (float)eps;
    return sc_bool(s, "tie_word_embeddings", true, &t->tie_word_embeddings, error) &&
           check_hidden_act(s, "silu", error) && check_no_bias(s, "attention_bias", error) &&
           check_no_bias(s, "mlp_bias", error);
}

/* Reads a section list (xdrope_section / mrope_section) into t. */
static bool parse_sections(const scope *rs, const char *key, JsonNode *n, hyocr_text_config *t, GError **error)
{
    if (!JSON_NODE_HOLDS_ARRAY(n)) return sc_type_error(rs, key, _("a list of integers"), n, error);
    JsonArray *a = json_node_get_array(n);
    guint len = json_array_get_length(a);
    if (len < 3 || len > 4) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: %s '%s' has %u entries; HunyuanOCR's multimodal RoPE needs 3 or 4 axes"),
                    rs->path, rs->label, key, len);
        return false;
    }
    for (guint i = 0; i < len; i++) {
        int64_t v;
        JsonNode *e = json_array_get_element(a, i);
        if (!node_to_int64(e, &v) || v <= 0 || v > SIZE_LIMIT)
            return sc_elem_error(rs, key, i, _("a positive integer"), e, error);
        t->rope_section[i] = (int)v;
    }
    t->n_rope_sections = (int)len;
    return true;
}

static bool sections_equal(JsonNode *a, JsonNode *b)
{
    if (!JSON_NODE_HOLDS_ARRAY(a) || !JSON_NODE_HOLDS_ARRAY(b)) return false;
    JsonArray *x = json_node_get_array(a), *y = json_node_get_array(b);
    if (json_array_get_length(x) != json_array_get_length(y)) return false;
    for (guint i = 0; i < json_array_get_length(x); i++) {
        int64_t u, v;
        if (!node_to_int64(json_array_get_element(x, i), &u) || !node_to_int64(json_array_get_element(y, i), &v) || u != v)
            return false;
    }
    return true;
}

static bool parse_rope_dict(const scope *ts, const char *dict_key, JsonObject *d, hyocr_text_config *t, GError **error)
{
    g_autofree char *label = g_strdup_printf("%s '%s' key", ts->label, dict_key);
    scope rs = { ts->path, label, "", { d, NULL } };
    bool ok;
    const char *type = sc_string(&rs, sc_node(&rs, "rope_type") ? "rope_type" : "type", &ok, error);
    if (!ok) return false;
    if (!type) type = "default";
    bool ntk = strcmp(type, "xdrope") == 0 || strcmp(type, "dynamic") == 0;
    if (!ntk && strcmp(type, "default") != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: %s: RoPE type '%s' is not supported (HunyuanOCR uses 'xdrope', which transformers calls "
                      "'dynamic')"),
                    ts->path, dict_key, type);
        return false;
    }
    double alpha, theta;
    if (!sc_double(&rs, "alpha", 0.0, &alpha, NULL, error) ||
        !sc_double(&rs, "rope_theta", t->rope_theta, &theta, NULL, error))
        return false;
    /* A 'dynamic' dict without alpha is transformers' dynamic NTK by factor, which only differs
     * from plain RoPE past max_position_embeddings; the engine treats it as plain RoPE. */
    t->rope_alpha = ntk ? alpha : 0.0;
    t->rope_theta = theta;

    JsonNode *xs = sc_node(&rs, "xdrope_section"), *ms = sc_node(&rs, "mrope_section");
    if (xs && ms && !sections_equal(xs, ms)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: %s has both 'mrope_section' and 'xdrope_section' and they differ; keep one of them"),
                    ts->path, dict_key);
        return false;
    }
    if (ms) return parse_sections(&rs, "mrope_section", ms, t, error);
    if (xs) return parse_sections(&rs, "xdrope_section", xs, t, error);
    return true;
}

static bool parse_rope(const scope *ts, hyocr_text_config *t, GError **error)
{
    t->n_rope_sections = 0;
    t->rope_alpha = 0.0;
    if (!sc_double(ts, "rope_theta", 10000.0, &t->rope_theta, NULL, error)) return false;
    bool ok;
    JsonObject *d = sc_object(ts, "rope_scaling", &ok, error);
    if (!ok) return false;
    const char *key = "rope_scaling";
    if (!d) {
        d = sc_object(ts, "rope_parameters", &ok, error);
        if (!ok) return false;
        key = "rope_parameters";
    }
    return d ? parse_rope_dict(ts, key, d, t, error) : true;
}

/* ------------------------------------------------------------------ config.json: vision, ids */

static bool parse_vision(const scope *vs, hyocr_vision_config *v, GError **error)
{
    if (!sc_int(vs, "hidden_size", true, 0, &v->hidden_size, error) ||
        !sc_int(vs, "intermediate_size", true, 0, &v->intermediate_size, error) ||
        !sc_int(vs, "num_hidden_layers", true, 0, &v->num_layers, error) ||
        !sc_int(vs, "patch_size", false, 16, &v->patch_size, error) ||
        !sc_int(vs, "spatial_merge_size", false, 2, &v->spatial_merge_size, error) ||
        !sc_int(vs, "num_channels", false, 3, &v->num_channels, error) ||
        !sc_int(vs, "max_image_size", false, 2048, &v->max_image_size, error))
        return false;
    const char *heads_key = sc_node(vs, "num_attention_heads") ? "num_attention_heads" : "attention_heads";
    if (!sc_node(vs, heads_key)) return sc_missing(vs, "num_attention_heads", error);
    if (!sc_int(vs, heads_key, true, 0, &v->num_heads, error)) return false;
    const char *eps_key = sc_node(vs, "rms_norm_eps") ? "rms_norm_eps" : "layer_norm_eps";
    double eps;
    if (!sc_double(vs, eps_key, 1e-5, &eps, NULL, error)) return false;
    v->eps = (float)eps;
    return check_hidden_act(vs, "gelu", error);
}

/* First present key of a NULL-terminated alias list; def when none. */
static bool sc_int32_alias(const scope *s, const char *const *keys, int32_t def, int32_t *out, GError **error)
{
    for (; *keys; keys++) {
        if (!sc_node(s, *keys)) continue;
        int v;
        if (!sc_int(s, *keys, true, 0, &v, error)) return false;
        *out = v;
        return true;
    }
    *out = def;
    return true;
}

static bool parse_token_ids(const scope *ts, hyocr_config *cfg, int32_t *eos_list, int *n_eos, GError **error)
{
    static const char *const img[] = { "image_token_id", NULL };
    static const char *const start[] = { "im_start_id", "image_start_token_id", NULL };
    static const char *const end[] = { "im_end_id", "image_end_token_id", NULL };
    static const char *const nl[] = { "im_newline_id", "image_newline_token_id", NULL };
    static const char *const bos[] = { "bos_token_id", NULL };
    static const char *const eod[] = { "eod_token_id", NULL };
    static const char *const pad[] = { "pad_token_id", NULL };
    static const char *const pad_legacy[] = { "pad_id", NULL };
    /* Defaults are transformers' for the image ids; the generic ids have no meaningful
     * default for this vocabulary, so absent = -1 (the tokenizer is authoritative). */
    if (!sc_int32_alias(ts, img, 120120, &cfg->image_token_id, error) ||
        !sc_int32_alias(ts, start, 120118, &cfg->im_start_id, error) ||
        !sc_int32_alias(ts, end, 120119, &cfg->im_end_id, error) ||
        !sc_int32_alias(ts, nl, 120121, &cfg->im_newline_id, error) ||
        !sc_int32_alias(ts, bos, -1, &cfg->bos_id, error) ||
        !sc_int32_alias(ts, eod, -1, &cfg->eod_id, error) ||
        !sc_int32_alias(ts, pad, -1, &cfg->pad_id, error))
        return false;
    if (cfg->pad_id < 0 && !sc_int32_alias(ts, pad_legacy, -1, &cfg->pad_id, error)) return false;
    if (!sc_id_list(ts, "eos_token_id", eos_list, HYOCR_MAX_EOS, n_eos, error)) return false;
    cfg->eos_id = *n_eos > 0 ? eos_list[0] : -1;
    return true;
}

static bool check_model_type(const char *path, JsonObject *top, GError **error)
{
    scope s = { path, _("field"), "", { top, NULL } };
    bool ok;
    const char *mt = sc_string(&s, "model_type", &ok, error);
    if (!ok) return false;
    if (mt && !g_str_has_prefix(mt, "hunyuan")) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: model_type is '%s', not 'hunyuan_vl': this folder holds a different model. "
                      "Choose a HunyuanOCR checkpoint folder"), path, mt);
        return false;
    }
    return true;
}

static bool parse_config_json(const char *dir, hyocr_config *cfg, int32_t *eos_list, int *n_eos, GError **error)
{
    g_autofree char *path = g_build_filename(dir, "config.json", NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING,
                    _("%s is not a HunyuanOCR checkpoint folder: config.json missing"), dir);
        return false;
    }
    g_autoptr(JsonObject) top = json_load_object(path, error);
    if (!top || !check_model_type(path, top, error)) return false;

    scope ts0 = { path, _("field"), "", { top, NULL } };
    bool ok;
    JsonObject *text = sc_object(&ts0, "text_config", &ok, error);
    if (!ok) return false;
    JsonObject *vision = sc_object(&ts0, "vision_config", &ok, error);
    if (!ok) return false;
    if (!vision) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("%s: 'vision_config' missing; a HunyuanOCR config.json describes its vision tower there"), path);
        return false;
    }
    cfg->nested_layout = text != NULL;

    /* Top level first: transformers merges top-level text keys over text_config. */
    scope ts = { path, _("text field"), text ? _(" (looked in text_config and top level)") : "", { top, text } };
    scope vs = { path, _("vision_config field"), "", { vision, NULL } };
    if (!parse_text_sizes(&ts, &cfg->text, error) || !parse_rope(&ts, &cfg->text, error) ||
        !parse_vision(&vs, &cfg->vision, error) || !parse_token_ids(&ts, cfg, eos_list, n_eos, error))
        return false;
    cfg->vision.out_hidden_size = cfg->text.hidden_size;
    return true;
}

/* ------------------------------------------------------------------ generation_config.json */

static bool load_generation(const char *dir, hyocr_config *cfg, const int32_t *eos_list, int n_eos, GError **error)
{
    g_autofree char *path = g_build_filename(dir, "generation_config.json", NULL);
    hyocr_generation_config *g = &cfg->generation;
    if (g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_autoptr(JsonObject) o = json_load_object(path, error);
        if (!o) return false;
        scope s = { path, _("field"), "", { o, NULL } };
        double rp, temp, top_p;
        int top_k;
        if (!sc_id_list(&s, "eos_token_id", g->eos_ids, HYOCR_MAX_EOS, &g->n_eos, error) ||
            !sc_double(&s, "repetition_penalty", 0.0, &rp, NULL, error) ||
            !sc_bool(&s, "do_sample", false, &g->do_sample, error) ||
            !sc_double(&s, "temperature", 0.0, &temp, NULL, error) ||
            !sc_int(&s, "top_k", false, 0, &top_k, error) ||
            !sc_double(&s, "top_p", 0.0, &top_p, NULL, error))
            return false;
        g->repetition_penalty = (float)rp;
        g->temperature = (float)temp;
        g->top_k = top_k;
        g->top_p = (float)top_p;
        if (rp < 0.0 || temp < 0.0 || top_k < 0 || top_p < 0.0 || top_p > 1.0) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                        _("%s: invalid sampling values (repetition_penalty %g, temperature %g, top_k %d, top_p %g)"),
                        path, rp, temp, top_k, top_p);
            return false;
        }
    }
    /* Like transformers, without a generation eos the model config's eos applies. */
    if (g->n_eos == 0) {
        memcpy(g->eos_ids, eos_list, sizeof(int32_t) * (size_t)n_eos);
        g->n_eos = n_eos;
    }
    return true;
}

/* ------------------------------------------------------------------ preprocessor_config.json */

static bool read_triplet(const scope *s, const char *key, const float *def, float *out, GError **error)
{
    JsonNode *n = sc_node(s, key);
    if (!n) {
        memcpy(out, def, 3 * sizeof(float));
        return true;
    }
    if (node_is_number(n)) {
        out[0] = out[1] = out[2] = (float)json_node_get_double(n);
        return true;
    }
    if (!JSON_NODE_HOLDS_ARRAY(n)) return sc_type_error(s, key, _("a list of 3 numbers (R, G, B)"), n, error);
    JsonArray *a = json_node_get_array(n);
    if (json_array_get_length(a) != 3) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, _("%s: %s '%s' must list 3 numbers (R, G, B), found %u"),
                    s->path, s->label, key, json_array_get_length(a));
        return false;
    }
    for (guint i = 0; i < 3; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!node_is_number(e)) return sc_elem_error(s, key, i, _("a number"), e, error);
        out[i] = (float)json_node_get_double(e);
    }
    return true;
}

/* max_pixels (top level) beats size.longest_edge, as in transformers' processor __init__;
 * the older size.max_pixels spelling is accepted too. */
static bool read_pixels(const scope *s, JsonObject *size, const char *key, const char *edge_key,
                        int64_t *out, GError **error)
{
    bool found;
    if (!sc_int64(s, key, false, 0, out, &found, error)) return false;
    if (found) return true;
    if (size) {
        scope ss = { s->path, _("'size' field"), "", { size, NULL } };
        if (!sc_int64(&ss, edge_key, false, 0, out, &found, error)) return false;
        if (found) return true;
        if (!sc_int64(&ss, key, false, 0, out, &found, error)) return false;
        if (found) return true;
    }
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                _("%s: '%s' missing (looked for '%s' and 'size.%s'); the image size limits cannot be guessed; "
                  "use the preprocessor_config.json that came with the model"), s->path, key, key, edge_key);
    return false;
}

static bool parse_processor(const char *path, JsonObject *o, hyocr_processor_config *p, GError **error)
{
    static const float clip_mean[3] = { 0.48145466f, 0.4578275f, 0.40821073f };
    static const float clip_std[3] = { 0.26862954f, 0.26130258f, 0.27577711f };
    scope s = { path, _("field"), "", { o, NULL } };
    bool ok;
    JsonObject *size = sc_object(&s, "size", &ok, error);
    return ok && read_pixels(&s, size, "min_pixels", "shortest_edge", &p->min_pixels, error) &&
           read_pixels(&s, size, "max_pixels", "longest_edge", &p->max_pixels, error) &&
           sc_int(&s, "patch_size", false, 16, &p->patch_size, error) &&
           sc_int(&s, "merge_size", false, 2, &p->merge_size, error) &&
           sc_int(&s, "temporal_patch_size", false, 1, &p->temporal_patch_size, error) &&
           read_triplet(&s, "image_mean", clip_mean, p->image_mean, error) &&
           read_triplet(&s, "image_std", clip_std, p->image_std, error) &&
           sc_double(&s, "rescale_factor", 1.0 / 255.0, &p->rescale_factor, NULL, error);
}

static bool validate_processor(const char *p, const hyocr_config *cfg, GError **error);

/* transformers 5 saves the image processor inside processor_config.json ("image_processor")
 * and reads that first; older folders have preprocessor_config.json. */
static bool load_processor(const char *dir, hyocr_config *cfg, GError **error)
{
    g_autofree char *nested = g_build_filename(dir, "processor_config.json", NULL);
    g_autofree char *legacy = g_build_filename(dir, "preprocessor_config.json", NULL);
    g_autoptr(JsonObject) root = NULL;
    JsonObject *o = NULL;
    const char *path = legacy;
    if (g_file_test(nested, G_FILE_TEST_EXISTS)) {
        if (!(root = json_load_object(nested, error))) return false;
        JsonNode *ip = json_object_get_member(root, "image_processor");
        if (ip && JSON_NODE_HOLDS_OBJECT(ip)) {
            o = json_node_get_object(ip);
            path = nested;
        }
    }
    if (!o && g_file_test(legacy, G_FILE_TEST_EXISTS)) {
        g_clear_pointer(&root, json_object_unref);
        if (!(root = json_load_object(legacy, error))) return false;
        o = root;
    }
    if (!o) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO,
                    _("%s: preprocessor_config.json missing (nor does a processor_config.json hold an image_processor "
                      "section); it holds the image size limits and normalisation of this model. Download the "
                      "complete model folder again"), dir);
        return false;
    }
    return parse_processor(path, o, &cfg->processor, error) && validate_processor(path, cfg, error);
}

/* ------------------------------------------------------------------ tokenizer_config.json */

/* A special token is either "text" or {"content": "text", ...}. */
static bool token_string(const scope *s, const char *key, char **out, GError **error)
{
    JsonNode *n = sc_node(s, key);
    if (!n) return true;
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING) {
        *out = g_strdup(json_node_get_string(n));
        return true;
    }
    if (JSON_NODE_HOLDS_OBJECT(n)) {
        scope cs = { s->path, _("token field"), "", { json_node_get_object(n), NULL } };
        bool ok;
        const char *c = sc_string(&cs, "content", &ok, error);
        if (!ok) return false;
        *out = g_strdup(c);
        return true;
    }
    return sc_type_error(s, key, _("a string or an object with 'content'"), n, error);
}

static const char *string_member(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) return NULL;
    return json_node_get_string(n);
}

/* chat_template is a string, or a list of {name, template} where "default" is the one used. */
static bool template_from_node(const scope *s, JsonNode *n, char **out, GError **error)
{
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING) {
        *out = g_strdup(json_node_get_string(n));
        return true;
    }
    if (!JSON_NODE_HOLDS_ARRAY(n)) return sc_type_error(s, "chat_template", _("a string"), n, error);
    JsonArray *a = json_node_get_array(n);
    const char *first = NULL;
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_OBJECT(e)) continue;
        JsonObject *eo = json_node_get_object(e);
        const char *name = string_member(eo, "name"), *tmpl = string_member(eo, "template");
        if (tmpl && (!first || g_strcmp0(name, "default") == 0)) first = tmpl;
    }
    *out = g_strdup(first);
    return true;
}

static bool load_tokenizer_config(const char *dir, hyocr_config *cfg, GError **error)
{
    g_autofree char *path = g_build_filename(dir, "tokenizer_config.json", NULL);
    if (g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_autoptr(JsonObject) o = json_load_object(path, error);
        if (!o) return false;
        scope s = { path, _("field"), "", { o, NULL } };
        JsonNode *t = sc_node(&s, "chat_template");
        if (!token_string(&s, "bos_token", &cfg->bos_token, error) ||
            !token_string(&s, "eos_token", &cfg->eos_token, error) ||
            !token_string(&s, "pad_token", &cfg->pad_token, error) ||
            (t && !template_from_node(&s, t, &cfg->chat_template, error)))
            return false;
    }
    /* transformers 5 saves the template in its own file, which takes precedence. */
    g_autofree char *jpath = g_build_filename(dir, "chat_template.jinja", NULL);
    if (!g_file_test(jpath, G_FILE_TEST_EXISTS)) return true;
    g_autofree char *text = NULL;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(jpath, &text, NULL, &ioerr)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot read: %s"), jpath, ioerr->message);
        return false;
    }
    g_free(cfg->chat_template);
    cfg->chat_template = g_steal_pointer(&text);
    return true;
}

/* ------------------------------------------------------------------ validation */

static bool bad(GError **error, const char *path, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static bool bad(GError **error, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG, "%s: %s", path, msg);
    return false;
}

static bool in_range(int v, int lo, int hi) { return v >= lo && v <= hi; }

static bool validate_text(const char *p, const hyocr_text_config *t, GError **error)
{
    if (!in_range(t->hidden_size, 1, SIZE_LIMIT) || !in_range(t->num_layers, 1, 4096) ||
        !in_range(t->num_heads, 1, 4096) || !in_range(t->num_kv_heads, 1, 4096) ||
        !in_range(t->head_dim, 2, 4096) || !in_range(t->intermediate_size, 1, SIZE_LIMIT) ||
        !in_range(t->vocab_size, 1, VOCAB_LIMIT) || t->max_position_embeddings < 1)
        return bad(error, p, _("text sizes out of range (hidden_size %d, num_hidden_layers %d, "
                                 "num_attention_heads %d, num_key_value_heads %d, head_dim %d, "
                                 "intermediate_size %d, vocab_size %d, max_position_embeddings %d)"),
                   t->hidden_size, t->num_layers, t->num_heads, t->num_kv_heads, t->head_dim,
                   t->intermediate_size, t->vocab_size, t->max_position_embeddings);
    if (t->num_heads % t->num_kv_heads != 0)
        return bad(error, p, _("num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)"),
                   t->num_heads, t->num_kv_heads);
    if (t->head_dim % 2 != 0) return bad(error, p, _("head_dim %d must be even for RoPE"), t->head_dim);
    if (!(t->rms_norm_eps > 0.0f) || !(t->rope_theta > 0.0) || !(t->rope_alpha >= 0.0) || !isfinite(t->rope_alpha))
        return bad(error, p, _("rms_norm_eps (%g), rope_theta (%g) must be positive and alpha (%g) non-negative"),
                   t->rms_norm_eps, t->rope_theta, t->rope_alpha);
    if (t->n_rope_sections > 0) {
        int sum = 0;
        for (int i = 0; i < t->n_rope_sections; i++) sum += t->rope_section[i];
        if (sum != t->head_dim / 2)
            return bad(error, p, _("RoPE section sums to %d but head_dim/2 is %d (head_dim %d); the sections split "
                         "half of each head across the position axes"), sum, t->head_dim / 2, t->head_dim);
    }
    return true;
}

static bool validate_vision(const char *p, const hyocr_vision_config *v, GError **error)
{
    if (!in_range(v->hidden_size, 1, SIZE_LIMIT) || !in_range(v->intermediate_size, 1, SIZE_LIMIT) ||
        !in_range(v->num_layers, 1, 4096) || !in_range(v->num_heads, 1, 4096) ||
        !in_range(v->patch_size, 1, 1024) || !in_range(v->spatial_merge_size, 1, 64) ||
        !in_range(v->num_channels, 1, 16) || !in_range(v->max_image_size, 1, 65536) || !(v->eps > 0.0f))
        return bad(error, p, _("vision_config sizes out of range (hidden_size %d, intermediate_size %d, "
                                 "num_hidden_layers %d, num_attention_heads %d, patch_size %d, spatial_merge_size %d, "
                                 "num_channels %d, max_image_size %d, eps %g)"),
                   v->hidden_size, v->intermediate_size, v->num_layers, v->num_heads, v->patch_size,
                   v->spatial_merge_size, v->num_channels, v->max_image_size, v->eps);
    if (v->hidden_size % v->num_heads != 0)
        return bad(error, p, _("vision hidden_size %d is not divisible by num_attention_heads %d"), v->hidden_size,
                   v->num_heads);
    if (v->max_image_size % v->patch_size != 0)
        return bad(error, p,
                   _("vision max_image_size %d is not a multiple of patch_size %d (it sizes the position table)"),
                   v->max_image_size, v->patch_size);
    return true;
}

static bool validate_processor(const char *p, const hyocr_config *cfg, GError **error)
{
    const hyocr_processor_config *pp = &cfg->processor;
    if (pp->min_pixels < 1 || pp->max_pixels < pp->min_pixels || pp->max_pixels > ((int64_t)1 << 34))
        return bad(error, p, _("min_pixels %lld / max_pixels %lld: need 0 < min_pixels <= max_pixels <= 2^34"),
                   (long long)pp->min_pixels, (long long)pp->max_pixels);
    if (pp->patch_size != cfg->vision.patch_size || pp->merge_size != cfg->vision.spatial_merge_size)
        return bad(error, p, _("patch_size %d / merge_size %d disagree with config.json's vision patch_size %d / "
                                 "spatial_merge_size %d; the files come from different models"),
                   pp->patch_size, pp->merge_size, cfg->vision.patch_size, cfg->vision.spatial_merge_size);
    if (pp->temporal_patch_size != 1)
        return bad(error, p,
                   _("temporal_patch_size is %d; HunyuanOCR's patch embedding is 2-D (temporal_patch_size 1)"),
                   pp->temporal_patch_size);
    for (int i = 0; i < 3; i++)
        if (!(pp->image_std[i] != 0.0f) || !isfinite(pp->image_std[i]) || !isfinite(pp->image_mean[i]))
            return bad(error, p, _("image_mean/image_std must be finite and image_std non-zero"));
    if (!(pp->rescale_factor > 0.0) || !isfinite(pp->rescale_factor))
        return bad(error, p, _("rescale_factor %g must be positive"), pp->rescale_factor);
    return true;
}

static bool validate_ids(const char *p, const hyocr_config *cfg, GError **error)
{
    const struct { const char *key; int32_t v; } ids[] = {
        { "image_token_id", cfg->image_token_id }, { "im_start_id", cfg->im_start_id }, { "im_end_id", cfg->im_end_id },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++)
        if (ids[i].v < 0 || ids[i].v >= cfg->text.vocab_size)
            return bad(error, p, _("%s %d is outside the vocabulary (vocab_size %d)"), ids[i].key, ids[i].v,
                       cfg->text.vocab_size);
    return true;
}

/* ------------------------------------------------------------------ entry points */

void hyocr_config_free(hyocr_config *cfg)
{
    if (!cfg) return;
    g_free(cfg->bos_token);
    g_free(cfg->eos_token);
    g_free(cfg->pad_token);
    g_free(cfg->chat_template);
    g_free(cfg);
}

/* Heuristic, not a recorded fact: no file carries a version number. 1.5 raised the processor's
 * max_pixels from 2048² to 4096² and the context from 32768 to 131072, so either marks 1.5. */
static hyocr_model_version guess_version(const hyocr_config *cfg)
{
    if (cfg->processor.max_pixels > (int64_t)2048 * 2048 || cfg->text.max_position_embeddings >= 131072)
        return HYOCR_MODEL_VERSION_1_5;
    return HYOCR_MODEL_VERSION_1_0;
}

hyocr_config *hyocr_config_load(const char *dir, GError **error)
{
    g_return_val_if_fail(dir != NULL, NULL);
    g_autoptr(hyocr_config) cfg = g_new0(hyocr_config, 1);
    int32_t eos_list[HYOCR_MAX_EOS];
    int n_eos = 0;
    g_autofree char *cpath = g_build_filename(dir, "config.json", NULL);

    if (!parse_config_json(dir, cfg, eos_list, &n_eos, error) ||
        !validate_text(cpath, &cfg->text, error) || !validate_vision(cpath, &cfg->vision, error) ||
        !validate_ids(cpath, cfg, error) ||
        !load_generation(dir, cfg, eos_list, n_eos, error) ||
        !load_processor(dir, cfg, error) ||
        !load_tokenizer_config(dir, cfg, error))
        return NULL;
    cfg->version = guess_version(cfg);
    cfg->rope_layout = HYOCR_ROPE_LAYOUT_R1;
    cfg->posemb_interp = HYOCR_POSEMB_R1;
    return g_steal_pointer(&cfg);
}

int hyocr_config_vision_head_dim(const hyocr_config *cfg)
{
    return cfg->vision.hidden_size / cfg->vision.num_heads;
}

int hyocr_config_pos_edge(const hyocr_config *cfg)
{
    return cfg->vision.max_image_size / cfg->vision.patch_size;
}

bool hyocr_config_is_eos(const hyocr_config *cfg, int32_t id)
{
    for (int i = 0; i < cfg->generation.n_eos; i++)
        if (cfg->generation.eos_ids[i] == id) return true;
    return false;
}

/* ------------------------------------------------------------------ dflash/config.json (the draft) */

/* The rule of the reference (z-lab/dflash build_target_layer_ids) when the file names no layers:
 * evenly from layer 1 to num_target_layers − 3. */
static void default_target_layers(hyocr_dflash_config *d)
{
    int n = MIN(d->num_layers, HYOCR_DFLASH_MAX_TAPS);
    d->n_target_layers = n;
    if (n == 1) {
        d->target_layer_ids[0] = d->num_target_layers / 2;
        return;
    }
    int start = 1, span = d->num_target_layers - 3 - start;
    for (int i = 0; i < n; i++) d->target_layer_ids[i] = (int)lround(start + (double)i * span / (n - 1));
}

static bool parse_dflash_block(const scope *s, hyocr_dflash_config *d, GError **error)
{
    bool ok;
    JsonObject *dc = sc_object(s, "dflash_config", &ok, error);
    if (!ok) return false;
    if (!dc) return sc_missing(s, "dflash_config", error);
    scope ds = { s->path, "dflash_config field", "", { dc, NULL } };
    int64_t mask;
    if (!sc_int64(&ds, "mask_token_id", true, 0, &mask, NULL, error) ||
        !sc_int(s, "num_target_layers", false, 0, &d->num_target_layers, error))
        return false;
    if (mask < 0 || mask > INT32_MAX)
        return bad(error, s->path, _("dflash_config 'mask_token_id' %lld is not a token id"), (long long)mask);
    d->mask_token_id = (int32_t)mask;
    JsonNode *ids = sc_node(&ds, "target_layer_ids");
    if (!ids) {
        if (d->num_target_layers < 4)
            return bad(error, s->path,
                       _("dflash_config 'target_layer_ids' missing and no usable 'num_target_layers' to derive them "
                         "from; the draft cannot know which target layers it reads"));
        default_target_layers(d);
        return true;
    }
    if (!JSON_NODE_HOLDS_ARRAY(ids)) return sc_type_error(&ds, "target_layer_ids", "a list of integers", ids, error);
    JsonArray *a = json_node_get_array(ids);
    guint len = json_array_get_length(a);
    if (len < 1 || len > HYOCR_DFLASH_MAX_TAPS)
        return bad(error, s->path, _("dflash_config 'target_layer_ids' lists %u layers; 1 to %d are supported"), len,
                   HYOCR_DFLASH_MAX_TAPS);
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(a, i);
        int64_t v;
        if (!node_to_int64(e, &v) || v < 0 || v > 4096)
            return sc_elem_error(&ds, "target_layer_ids", i, "a layer index (0 to 4096)", e, error);
        d->target_layer_ids[i] = (int)v;
    }
    d->n_target_layers = (int)len;
    return true;
}

/* RoPE: the release has rope_theta 10000 and rope_scaling null; a transformers-5 save has
 * rope_parameters {rope_type default, rope_theta}. Anything scaled is not what hyocr runs. */
static bool parse_dflash_rope(const scope *s, hyocr_dflash_config *d, GError **error)
{
    bool ok, found;
    JsonObject *scaling = sc_object(s, "rope_scaling", &ok, error);
    if (!ok) return false;
    JsonObject *params = sc_object(s, "rope_parameters", &ok, error);
    if (!ok) return false;
    if (!sc_double(s, "rope_theta", 0.0, &d->rope_theta, &found, error)) return false;
    JsonObject *dict = scaling ? scaling : params;
    if (dict) {
        scope rs = { s->path, scaling ? "rope_scaling field" : "rope_parameters field", "", { dict, NULL } };
        const char *type = sc_string(&rs, "rope_type", &ok, error);
        if (!ok) return false;
        if (!type && !(type = sc_string(&rs, "type", &ok, error)) && !ok) return false;
        if (type && strcmp(type, "default") != 0)
            return bad(error, s->path,
                       _("%s type '%s': the DFlash draft uses plain RoPE and hyocr implements only that"),
                       scaling ? "rope_scaling" : "rope_parameters", type);
        bool f2;
        double theta;
        if (!sc_double(&rs, "rope_theta", 0.0, &theta, &f2, error)) return false;
        if (f2) {
            d->rope_theta = theta;
            found = true;
        }
    }
    if (!found)
        return bad(error, s->path,
                   _("'rope_theta' missing; the draft's RoPE base must be stated (the release says 10000)"));
    return true;
}

/* Sliding windows, biases and other activations change the arithmetic; refuse them by name. */
static bool check_dflash_plain(const scope *s, GError **error)
{
    bool v;
    if (!check_hidden_act(s, "silu", error) || !sc_bool(s, "attention_bias", false, &v, error)) return false;
    if (v)
        return bad(error, s->path, _("'attention_bias' is true; the DFlash draft has no biases and hyocr loads none"));
    if (!sc_bool(s, "use_sliding_window", false, &v, error)) return false;
    if (v) return bad(error, s->path, _("'use_sliding_window' is true; hyocr runs the draft with full attention only"));
    JsonNode *lt = sc_node(s, "layer_types");
    if (!lt) return true;
    if (!JSON_NODE_HOLDS_ARRAY(lt)) return sc_type_error(s, "layer_types", "a list of strings", lt, error);
    JsonArray *a = json_node_get_array(lt);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING ||
            strcmp(json_node_get_string(e), "full_attention") != 0)
            return sc_elem_error(s, "layer_types", i, "\"full_attention\"", e, error);
    }
    return true;
}

static bool check_dflash_architecture(const scope *s, GError **error)
{
    JsonNode *n = sc_node(s, "architectures");
    if (!n) return true;
    if (!JSON_NODE_HOLDS_ARRAY(n)) return sc_type_error(s, "architectures", "a list of strings", n, error);
    JsonArray *a = json_node_get_array(n);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING &&
            strcmp(json_node_get_string(e), "DFlashDraftModel") == 0)
            return true;
    }
    return bad(error, s->path, _("'architectures' does not name DFlashDraftModel: this folder holds another kind of "
                 "model, not the DFlash draft"));
}

static bool validate_dflash(const char *p, const hyocr_dflash_config *d, GError **error)
{
    if (!in_range(d->hidden_size, 1, SIZE_LIMIT) || !in_range(d->num_layers, 1, 4096) ||
        !in_range(d->num_heads, 1, 4096) || !in_range(d->num_kv_heads, 1, 4096) ||
        !in_range(d->head_dim, 2, 256) || !in_range(d->intermediate_size, 1, SIZE_LIMIT) ||
        !in_range(d->vocab_size, 1, VOCAB_LIMIT) || !in_range(d->num_target_layers, 0, 4096))
        return bad(error, p, _("draft sizes out of range (hidden_size %d, num_hidden_layers %d, "
                                 "num_attention_heads %d, num_key_value_heads %d, head_dim %d (2 to 256), "
                                 "intermediate_size %d, vocab_size %d, num_target_layers %d)"), d->hidden_size, d->num_layers, d->num_heads, d->num_kv_heads,
                   d->head_dim, d->intermediate_size, d->vocab_size, d->num_target_layers);
    if (d->num_heads % d->num_kv_heads != 0)
        return bad(error, p, _("num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)"), d->num_heads,
                   d->num_kv_heads);
    if (d->head_dim % 2 != 0) return bad(error, p, _("head_dim %d must be even for RoPE"), d->head_dim);
    if (!in_range(d->block_size, 2, HYOCR_DFLASH_MAX_BLOCK))
        return bad(error, p, _("'block_size' %d: a draft block holds the bonus token and 1 to 63 drafts"),
                   d->block_size);
    if (d->mask_token_id >= d->vocab_size)
        return bad(error, p, _("dflash_config 'mask_token_id' %d is outside the vocabulary (%d)"), d->mask_token_id,
                   d->vocab_size);
    if (!(d->rms_norm_eps > 0.0f) || !(d->rope_theta > 0.0) || !isfinite(d->rope_theta))
        return bad(error, p, _("rms_norm_eps (%g) and rope_theta (%g) must be positive"), d->rms_norm_eps,
                   d->rope_theta);
    for (int i = 0; i < d->n_target_layers; i++)
        if (d->num_target_layers > 0 && d->target_layer_ids[i] >= d->num_target_layers)
            return bad(error, p, _("dflash_config 'target_layer_ids' names layer %d but 'num_target_layers' is %d"),
                       d->target_layer_ids[i], d->num_target_layers);
    return true;
}

bool hyocr_dflash_config_load(const char *dir, hyocr_dflash_config *out, GError **error)
{
    g_autofree char *path = g_build_filename(dir, "config.json", NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO,
                    _("%s: the DFlash draft folder has no config.json; download the model again"), dir);
        return false;
    }
    g_autoptr(JsonObject) top = json_load_object(path, error);
    if (!top) return false;
    hyocr_dflash_config d = { 0 };
    scope s = { path, _("field"), "", { top, NULL } };
    double eps;
    if (!check_dflash_architecture(&s, error) || !check_dflash_plain(&s, error) ||
        !sc_int(&s, "hidden_size", true, 0, &d.hidden_size, error) ||
        !sc_int(&s, "intermediate_size", true, 0, &d.intermediate_size, error) ||
        !sc_int(&s, "num_hidden_layers", true, 0, &d.num_layers, error) ||
        !sc_int(&s, "num_attention_heads", true, 0, &d.num_heads, error) ||
        !sc_int(&s, "num_key_value_heads", false, d.num_heads, &d.num_kv_heads, error) ||
        !sc_int(&s, "head_dim", false, d.num_heads > 0 ? d.hidden_size / d.num_heads : 0, &d.head_dim, error) ||
        !sc_int(&s, "vocab_size", true, 0, &d.vocab_size, error) ||
        !sc_int(&s, "block_size", true, 0, &d.block_size, error) ||
        !sc_double(&s, "rms_norm_eps", 1e-6, &eps, NULL, error) ||   /* Qwen3Config's default */
        !parse_dflash_block(&s, &d, error) || !parse_dflash_rope(&s, &d, error))
        return false;
    d.rms_norm_eps = (float)eps;
    if (!validate_dflash(path, &d, error)) return false;
    *out = d;
    return true;
}
