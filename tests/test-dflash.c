/* The DFlash draft (issue 20): loading and checking dflash/ beside a model, and the draft's
 * forward on the CPU backend against the authors' reference (tests/data/dflash, written by
 * tests/reference/make_dflash_fixtures.py). */
#include "checkpoint.h"
#include "dflash.h"
#include "error.h"
#include "safetensors.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- folders */

static hyocr_checkpoint *open_target(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-dflash", NULL);
    g_autoptr(GError) err = NULL;
    hyocr_checkpoint *ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    return ck;
}

static char *fixture_draft_file(const char *name)
{
    return hyocr_test_data("ckpt-dflash", "dflash", name, NULL);
}

/* A temporary model folder: ckpt-dflash's files linked, and dflash/ holding the config text
 * given (NULL: the fixture's) and the fixture's weights (or a file written by the caller). */
static char *model_with_draft(const char *config_text, bool link_weights)
{
    char *tmp = hyocr_test_tmpdir();
    g_autofree char *src = hyocr_test_data("ckpt-dflash", NULL);
    g_autoptr(GDir) d = g_dir_open(src, 0, NULL);
    g_assert_nonnull(d);
    for (const char *n; (n = g_dir_read_name(d));) {
        if (strcmp(n, "dflash") == 0) continue;
        g_autofree char *from = g_build_filename(src, n, NULL), *to = g_build_filename(tmp, n, NULL);
        g_assert_cmpint(symlink(from, to), ==, 0);
    }
    g_autofree char *dd = g_build_filename(tmp, "dflash", NULL);
    g_assert_cmpint(g_mkdir(dd, 0755), ==, 0);
    g_autofree char *cfg = g_build_filename(dd, "config.json", NULL);
    if (config_text) {
        g_assert_true(g_file_set_contents(cfg, config_text, -1, NULL));
    } else {
        g_autofree char *from = fixture_draft_file("config.json");
        g_assert_cmpint(symlink(from, cfg), ==, 0);
    }
    if (link_weights) {
        g_autofree char *from = fixture_draft_file("model.safetensors");
        g_autofree char *to = g_build_filename(dd, "model.safetensors", NULL);
        g_assert_cmpint(symlink(from, to), ==, 0);
    }
    return tmp;
}

static void assert_error(const GError *err, int code, const char *const *needles)
{
    g_assert_nonnull(err);
    g_assert_true(err->domain == HYOCR_ERROR);
    if (err->code != code) g_error("code %d, want %d: %s", err->code, code, err->message);
    for (int i = 0; needles[i]; i++)
        if (!strstr(err->message, needles[i])) g_error("'%s' not in: %s", needles[i], err->message);
}

/* ---------------------------------------------------------------- loading */

static void test_load_fixture(void)
{
    g_autoptr(hyocr_checkpoint) ck = open_target();
    g_assert_null(hyocr_checkpoint_draft_error(ck));
    const hyocr_checkpoint *dr = hyocr_checkpoint_draft(ck);
    g_assert_nonnull(dr);
    g_assert_null(hyocr_checkpoint_dflash_config(ck));
    const hyocr_dflash_config *c = hyocr_checkpoint_dflash_config(dr);
    g_assert_nonnull(c);
    g_assert_cmpint(c->hidden_size, ==, 64);
    g_assert_cmpint(c->num_layers, ==, 5);
    g_assert_cmpint(c->num_heads, ==, 4);
    g_assert_cmpint(c->num_kv_heads, ==, 2);
    g_assert_cmpint(c->head_dim, ==, 32);
    g_assert_cmpint(c->intermediate_size, ==, 224);
    g_assert_cmpint(c->vocab_size, ==, 2023);
    g_assert_cmpint(c->block_size, ==, 16);
    g_assert_cmpint(c->mask_token_id, ==, 2022);
    g_assert_cmpint(c->n_target_layers, ==, 4);
    const int taps[] = { 1, 3, 5, 6 };
    for (int i = 0; i < 4; i++) g_assert_cmpint(c->target_layer_ids[i], ==, taps[i]);
    g_assert_cmpint(c->num_target_layers, ==, 8);
    g_assert_cmpfloat(c->rms_norm_eps, ==, 1e-5f);
    g_assert_cmpfloat(c->rope_theta, ==, 10000.0);
    hyocr_checkpoint_stats s;
    hyocr_checkpoint_get_stats(dr, &s);
    g_assert_cmpint(s.n_tensors, ==, 3 + 5 * 11);
    g_assert_cmpint(s.n_params, ==, 355392);   /* the reference's count (manifest.json) */
    g_assert_cmpint(s.n_ignored, ==, 0);
    g_assert_cmpuint(s.bytes_per_dtype[HYOCR_DTYPE_F32], ==, 355392 * 4);
}

static void test_no_draft(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    g_assert_null(hyocr_checkpoint_draft(ck));
    g_assert_null(hyocr_checkpoint_draft_error(ck));
}

/* A broken draft leaves the model usable and says why it is not used. */
static void test_broken_draft_is_not_fatal(void)
{
    g_autofree char *dir = model_with_draft("{\"architectures\": [\"DFlashDraftModel\"]", true);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    g_assert_null(hyocr_checkpoint_draft(ck));
    g_autofree char *path = g_build_filename(dir, "dflash", "config.json", NULL);
    assert_error(hyocr_checkpoint_draft_error(ck), HYOCR_ERROR_PARSE,
                 (const char *const[]){ path, "not valid JSON", NULL });
    hyocr_test_rmdir(dir);
}

typedef void (*edit_fn)(JsonObject *o);

static char *edited_config(edit_fn edit)
{
    g_autofree char *path = fixture_draft_file("config.json");
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_file(p, path, NULL));
    JsonNode *root = json_parser_get_root(p);
    edit(json_node_get_object(root));
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}

/* Opens the edited draft beside the fixture's target; NULL err when it loads. */
static hyocr_checkpoint *open_edited(edit_fn edit, char **dir_out, GError **err)
{
    g_autofree char *text = edited_config(edit);
    *dir_out = model_with_draft(text, true);
    g_autoptr(hyocr_checkpoint) target = open_target();
    g_autofree char *dd = g_build_filename(*dir_out, "dflash", NULL);
    return hyocr_checkpoint_open_draft(dd, hyocr_checkpoint_config(target), err);
}

static void expect_config_error(edit_fn edit, int code, const char *const *needles)
{
    g_autofree char *dir = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) dr = open_edited(edit, &dir, &err);
    g_assert_null(dr);
    g_autofree char *path = g_build_filename(dir, "dflash", "config.json", NULL);
    assert_error(err, code, (const char *const[]){ path, NULL });
    assert_error(err, code, needles);
    hyocr_test_rmdir(dir);
}

static JsonObject *dc(JsonObject *o) { return json_object_get_object_member(o, "dflash_config"); }
static JsonArray *ints(int n, const int *v)
{
    JsonArray *a = json_array_new();
    for (int i = 0; i < n; i++) json_array_add_int_element(a, v[i]);
    return a;
}

static void e_no_hidden(JsonObject *o) { json_object_remove_member(o, "hidden_size"); }
static void e_hidden_string(JsonObject *o) { json_object_set_string_member(o, "hidden_size", "64"); }
static void e_hidden_other(JsonObject *o) { json_object_set_int_member(o, "hidden_size", 128); }
static void e_vocab_other(JsonObject *o) { json_object_set_int_member(o, "vocab_size", 3000); }
static void e_no_dflash(JsonObject *o) { json_object_remove_member(o, "dflash_config"); }
static void e_dflash_list(JsonObject *o) { json_object_set_array_member(o, "dflash_config", json_array_new()); }
static void e_no_mask(JsonObject *o) { json_object_remove_member(dc(o), "mask_token_id"); }
static void e_mask_big(JsonObject *o) { json_object_set_int_member(dc(o), "mask_token_id", 5000); }
static void e_taps_bad_entry(JsonObject *o)
{
    JsonArray *a = ints(1, (const int[]){ 1 });
    json_array_add_string_element(a, "x");
    json_object_set_array_member(dc(o), "target_layer_ids", a);
}
static void e_taps_empty(JsonObject *o) { json_object_set_array_member(dc(o), "target_layer_ids", json_array_new()); }
static void e_taps_last(JsonObject *o) { json_object_set_array_member(dc(o), "target_layer_ids", ints(4, (const int[]){ 1, 3, 5, 7 })); }
static void e_taps_beyond(JsonObject *o) { json_object_set_array_member(dc(o), "target_layer_ids", ints(4, (const int[]){ 1, 3, 5, 9 })); }
static void e_target_layers(JsonObject *o) { json_object_set_int_member(o, "num_target_layers", 24); }
static void e_no_theta(JsonObject *o) { json_object_remove_member(o, "rope_theta"); }
static void e_scaled(JsonObject *o)
{
    JsonObject *s = json_object_new();
    json_object_set_string_member(s, "type", "linear");
    json_object_set_double_member(s, "factor", 2.0);
    json_object_set_object_member(o, "rope_scaling", s);
}
static void e_sliding(JsonObject *o) { json_object_set_boolean_member(o, "use_sliding_window", TRUE); }
static void e_layer_type(JsonObject *o)
{
    JsonArray *a = json_object_get_array_member(o, "layer_types");
    json_array_remove_element(a, 4);
    json_array_add_string_element(a, "sliding_attention");
}
static void e_gelu(JsonObject *o) { json_object_set_string_member(o, "hidden_act", "gelu"); }
static void e_bias(JsonObject *o) { json_object_set_boolean_member(o, "attention_bias", TRUE); }
static void e_arch(JsonObject *o)
{
    JsonArray *a = json_array_new();
    json_array_add_string_element(a, "Qwen3ForCausalLM");
    json_object_set_array_member(o, "architectures", a);
}
static void e_block_one(JsonObject *o) { json_object_set_int_member(o, "block_size", 1); }
static void e_kv_heads(JsonObject *o) { json_object_set_int_member(o, "num_key_value_heads", 3); }
static void e_head_odd(JsonObject *o) { json_object_set_int_member(o, "head_dim", 33); }
static void e_eps_string(JsonObject *o) { json_object_set_string_member(o, "rms_norm_eps", "1e-5"); }

static void test_config_errors(void)
{
    const int C = HYOCR_ERROR_CONFIG, K = HYOCR_ERROR_CHECKPOINT;
    expect_config_error(e_no_hidden, C, (const char *const[]){ "'hidden_size' missing", NULL });
    expect_config_error(e_hidden_string, C, (const char *const[]){ "'hidden_size' must be an integer, found a string", NULL });
    expect_config_error(e_hidden_other, K, (const char *const[]){ "'hidden_size' is 128 but the model's is 64", NULL });
    expect_config_error(e_vocab_other, K, (const char *const[]){ "'vocab_size' is 3000 but the model's is 2023", NULL });
    expect_config_error(e_no_dflash, C, (const char *const[]){ "'dflash_config' missing", NULL });
    expect_config_error(e_dflash_list, C, (const char *const[]){ "'dflash_config' must be an object, found an array", NULL });
    expect_config_error(e_no_mask, C, (const char *const[]){ "dflash_config field 'mask_token_id' missing", NULL });
    expect_config_error(e_mask_big, C, (const char *const[]){ "'mask_token_id' 5000 is outside the vocabulary (2023)", NULL });
    expect_config_error(e_taps_bad_entry, C, (const char *const[]){ "'target_layer_ids': entry 1 must be", NULL });
    expect_config_error(e_taps_empty, C, (const char *const[]){ "'target_layer_ids' lists 0 layers", NULL });
    expect_config_error(e_taps_last, K, (const char *const[]){ "names layer 7", "0 to 6", NULL });
    expect_config_error(e_taps_beyond, C, (const char *const[]){ "names layer 9 but 'num_target_layers' is 8", NULL });
    expect_config_error(e_target_layers, K, (const char *const[]){ "'num_target_layers' is 24 but the model's is 8", NULL });
    expect_config_error(e_no_theta, C, (const char *const[]){ "'rope_theta' missing", NULL });
    expect_config_error(e_scaled, C, (const char *const[]){ "rope_scaling type 'linear'", NULL });
    expect_config_error(e_sliding, C, (const char *const[]){ "'use_sliding_window' is true", NULL });
    expect_config_error(e_layer_type, C, (const char *const[]){ "'layer_types': entry 4 must be \"full_attention\"", NULL });
    expect_config_error(e_gelu, C, (const char *const[]){ "'hidden_act' is 'gelu'", NULL });
    expect_config_error(e_bias, C, (const char *const[]){ "'attention_bias' is true", NULL });
    expect_config_error(e_arch, C, (const char *const[]){ "does not name DFlashDraftModel", NULL });
    expect_config_error(e_block_one, C, (const char *const[]){ "'block_size' 1", NULL });
    expect_config_error(e_kv_heads, C, (const char *const[]){ "(4) is not a multiple of num_key_value_heads (3)", NULL });
    expect_config_error(e_head_odd, C, (const char *const[]){ "head_dim 33 must be even", NULL });
    expect_config_error(e_eps_string, C, (const char *const[]){ "'rms_norm_eps' must be a number, found a string", NULL });
}

/* transformers 5 writes rope_parameters instead of rope_theta; and without target_layer_ids the
 * reference derives the layers from num_target_layers (here 1..5, so fc no longer fits). */
static void e_rope_parameters(JsonObject *o)
{
    json_object_remove_member(o, "rope_theta");
    json_object_remove_member(o, "rope_scaling");
    JsonObject *r = json_object_new();
    json_object_set_string_member(r, "rope_type", "default");
    json_object_set_double_member(r, "rope_theta", 5000.0);
    json_object_set_object_member(o, "rope_parameters", r);
}
static void e_derived_taps(JsonObject *o) { json_object_remove_member(dc(o), "target_layer_ids"); }

static void test_config_variants(void)
{
    g_autofree char *dir = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) dr = open_edited(e_rope_parameters, &dir, &err);
    g_assert_no_error(err);
    g_assert_cmpfloat(hyocr_checkpoint_dflash_config(dr)->rope_theta, ==, 5000.0);
    hyocr_test_rmdir(dir);
    g_clear_pointer(&dir, g_free);
    g_autoptr(hyocr_checkpoint) dr2 = open_edited(e_derived_taps, &dir, &err);
    g_assert_null(dr2);
    g_autofree char *weights = g_build_filename(dir, "dflash", "model.safetensors", NULL);
    assert_error(err, HYOCR_ERROR_CHECKPOINT,
                 (const char *const[]){ weights, "'fc.weight' has shape [64, 256], but config.json implies [64, 320]", NULL });
    hyocr_test_rmdir(dir);
}

static void test_folder_errors(void)
{
    g_autoptr(hyocr_checkpoint) target = open_target();
    g_autofree char *dir = model_with_draft(NULL, false);
    g_autofree char *dd = g_build_filename(dir, "dflash", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) dr = hyocr_checkpoint_open_draft(dd, hyocr_checkpoint_config(target), &err);
    g_assert_null(dr);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->message, dd));
    g_clear_error(&err);
    g_autofree char *cfg = g_build_filename(dd, "config.json", NULL);
    g_assert_cmpint(g_unlink(cfg), ==, 0);
    g_assert_null(hyocr_checkpoint_open_draft(dd, hyocr_checkpoint_config(target), &err));
    assert_error(err, HYOCR_ERROR_IO, (const char *const[]){ dd, "has no config.json", NULL });
    hyocr_test_rmdir(dir);
}

/* ---------------------------------------------------------------- weights rewritten */

typedef enum { KEEP, DROP, RESHAPE, TO_BF16, TO_I64 } rewrite_op;

static uint16_t bf16_of(float f)   /* the fixture's values are bf16-exact: truncation is exact */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* Writes the fixture's draft weights to path with one tensor (target; NULL: all) changed. */
static void rewrite_weights(const char *path, const char *target, rewrite_op op)
{
    g_autofree char *src = fixture_draft_file("model.safetensors");
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_safetensors) st = hyocr_safetensors_open_file(src, &err);
    g_assert_no_error(err);
    g_autoptr(JsonBuilder) hb = json_builder_new();
    json_builder_begin_object(hb);
    g_autoptr(GByteArray) data = g_byte_array_new();
    for (size_t i = 0; i < hyocr_safetensors_count(st); i++) {
        const hyocr_tensor *t = hyocr_safetensors_at(st, i);
        rewrite_op o = !target || strcmp(t->name, target) == 0 ? op : KEEP;
        if (o == DROP) continue;
        size_t n = (size_t)hyocr_tensor_numel(t), start = data->len;
        g_autofree float *f = g_new(float, n);
        hyocr_tensor_to_f32(t, f);
        const char *dt = "F32";
        if (o == TO_BF16) {
            dt = "BF16";
            for (size_t k = 0; k < n; k++) {
                uint16_t b = bf16_of(f[k]);
                g_byte_array_append(data, (const guint8 *)&b, 2);
            }
        } else if (o == TO_I64) {
            dt = "I64";
            for (size_t k = 0; k < n; k++) {
                int64_t v = (int64_t)f[k];
                g_byte_array_append(data, (const guint8 *)&v, 8);
            }
        } else {
            g_byte_array_append(data, (const guint8 *)f, (guint)(n * 4));
        }
        json_builder_set_member_name(hb, t->name);
        json_builder_begin_object(hb);
        json_builder_set_member_name(hb, "dtype");
        json_builder_add_string_value(hb, dt);
        json_builder_set_member_name(hb, "shape");
        json_builder_begin_array(hb);
        if (o == RESHAPE) {   /* same count, other shape: [n] */
            json_builder_add_int_value(hb, (gint64)n);
        } else {
            for (int d = 0; d < t->n_dims; d++) json_builder_add_int_value(hb, t->shape[d]);
        }
        json_builder_end_array(hb);
        json_builder_set_member_name(hb, "data_offsets");
        json_builder_begin_array(hb);
        json_builder_add_int_value(hb, (gint64)start);
        json_builder_add_int_value(hb, (gint64)data->len);
        json_builder_end_array(hb);
        json_builder_end_object(hb);
    }
    json_builder_end_object(hb);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(hb);
    json_generator_set_root(gen, root);
    gsize hlen = 0;
    g_autofree char *header = json_generator_to_data(gen, &hlen);
    uint64_t len = hlen;
    g_autoptr(GByteArray) file = g_byte_array_new();
    g_byte_array_append(file, (const guint8 *)&len, 8);
    g_byte_array_append(file, (const guint8 *)header, (guint)hlen);
    g_byte_array_append(file, data->data, data->len);
    g_assert_true(g_file_set_contents(path, (const char *)file->data, file->len, NULL));
}

static hyocr_checkpoint *open_rewritten(const char *target, rewrite_op op, char **dir_out, GError **err)
{
    *dir_out = model_with_draft(NULL, false);
    g_autofree char *dd = g_build_filename(*dir_out, "dflash", NULL);
    g_autofree char *w = g_build_filename(dd, "model.safetensors", NULL);
    rewrite_weights(w, target, op);
    g_autoptr(hyocr_checkpoint) t = open_target();
    return hyocr_checkpoint_open_draft(dd, hyocr_checkpoint_config(t), err);
}

static void expect_weights_error(const char *target, rewrite_op op, const char *needle)
{
    g_autofree char *dir = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) dr = open_rewritten(target, op, &dir, &err);
    g_assert_null(dr);
    assert_error(err, HYOCR_ERROR_CHECKPOINT, (const char *const[]){ needle, NULL });
    hyocr_test_rmdir(dir);
}

static void test_weights_errors(void)
{
    expect_weights_error("layers.2.mlp.up_proj.weight", DROP, "tensor 'layers.2.mlp.up_proj.weight' is missing");
    expect_weights_error("fc.weight", RESHAPE, "'fc.weight' has shape [16384], but config.json implies [64, 256]");
    expect_weights_error("norm.weight", TO_I64, "'norm.weight' has dtype I64; hyocr needs F32, F16 or BF16");
}

/* ---------------------------------------------------------------- the forward */

typedef struct {
    hyocr_checkpoint *ck;
    hyocr_backend    *be;
    hyocr_model      *m;
    hyocr_dflash     *d;
} draft_env;

/* On CUDA in dtype when cuda; false (a loud skip) when no CUDA device is usable. */
static bool env_open_on(draft_env *e, const hyocr_checkpoint *draft_or_null, bool cuda, hyocr_compute_dtype dtype)
{
    g_autoptr(GError) err = NULL;
    hyocr_backend_params bp = { .n_threads = 2, .dtype = dtype };
    e->be = cuda ? hyocr_backend_cuda_init(&bp, &err) : hyocr_backend_cpu_init(&bp, &err);
    if (!e->be) {
        g_assert_true(cuda);
        g_test_skip("no usable CUDA device");
        g_test_message("CUDA backend unavailable: %s", err->message);
        return false;
    }
    e->ck = open_target();
    e->m = hyocr_model_load(e->be, e->ck, &err);
    g_assert_no_error(err);
    const hyocr_checkpoint *dr = draft_or_null ? draft_or_null : hyocr_checkpoint_draft(e->ck);
    e->d = hyocr_dflash_load(e->be, dr, e->m, &err);
    g_assert_no_error(err);
    return true;
}

static void env_open(draft_env *e, const hyocr_checkpoint *draft_or_null)
{
    env_open_on(e, draft_or_null, false, HYOCR_COMPUTE_F32);
}

static void env_close(draft_env *e)
{
    hyocr_dflash_free(e->d);
    hyocr_model_free(e->m);
    hyocr_backend_free(e->be);
    hyocr_checkpoint_free(e->ck);
}

static hyocr_buf *upload_taps(draft_env *e, const char *name, int rows)
{
    g_autofree char *path = hyocr_test_data("dflash", "block", name, NULL);
    size_t n = 0;
    g_autofree float *v = hyocr_test_read_f32(path, &n);
    g_assert_cmpuint(n, ==, (size_t)rows * 256);
    g_autoptr(GError) err = NULL;
    hyocr_buf *b = e->be->ops->alloc(e->be, HYOCR_BUF_ACT, n, &err);
    g_assert_no_error(err);
    g_assert_true(e->be->ops->upload_f32(e->be, b, 0, v, n, &err));
    return b;
}

/* max |got − want| / max |want| over the rows; the argmax of every row equal, or (near_ties
 * not NULL: FP16) a near-tie: where the draft is not the reference's argmax, the reference's
 * logits of the two differ by no more than twice the largest error, counted in *near_ties. */
static double compare_logits(const float *got, const float *want, int rows, int V, const int32_t *drafts,
                             int *near_ties)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < (size_t)rows * V; i++) {
        num = fmax(num, fabs((double)got[i] - want[i]));
        den = fmax(den, fabs((double)want[i]));
    }
    for (int r = 0; r < rows; r++) {
        const float *w = want + (size_t)r * V;
        int best = 0;
        for (int v = 0; v < V; v++)
            if (w[v] > w[best]) best = v;
        if (drafts[r] == best) continue;
        g_assert_nonnull(near_ties);
        double gap = (double)w[best] - w[drafts[r]];
        g_test_message("row %d: the draft is %d, the reference's argmax %d: their reference logits differ by %.3g "
                       "(largest error %.3g)", r, drafts[r], best, gap, num);
        g_assert_cmpfloat(gap, <=, 2 * num);
        (*near_ties)++;
    }
    return num / den;
}

/* Two rounds as the reference made them: 37 context rows and a block, then 5 more rows. */
static void run_block_rounds(draft_env *e, double *rel, int *near_ties)
{
    g_autofree char *ids_path = hyocr_test_data("dflash", "block", "ids.txt", NULL);
    g_autoptr(GArray) ids = hyocr_test_read_ints(ids_path);
    g_assert_cmpuint(ids->len, ==, 4);
    const int V = 2023, B = 16;
    hyocr_dflash_ctx *c = hyocr_dflash_ctx_new(e->d, NULL);
    g_autoptr(GError) err = NULL;
    for (int round = 0; round < 2; round++) {
        int rows = (int)g_array_index(ids, int64_t, 2 * round);
        int32_t bonus = (int32_t)g_array_index(ids, int64_t, 2 * round + 1);
        hyocr_buf *taps = upload_taps(e, round == 0 ? "ctx1.f32" : "ctx2.f32", rows);
        g_assert_true(hyocr_dflash_ctx_append(e->d, c, taps, rows, &err));
        g_assert_no_error(err);
        e->be->ops->buf_free(e->be, taps);
        g_autofree float *logits = g_new(float, (size_t)(B - 1) * V), *again = g_new(float, (size_t)(B - 1) * V);
        int32_t drafts[15], drafts2[15];
        g_assert_true(hyocr_dflash_propose(e->d, c, bonus, drafts, logits, &err));
        g_assert_no_error(err);
        /* the block's keys are not kept: the same proposal again is the same */
        g_assert_true(hyocr_dflash_propose(e->d, c, bonus, drafts2, again, &err));
        g_assert_cmpmem(logits, sizeof(float) * (B - 1) * V, again, sizeof(float) * (B - 1) * V);
        g_assert_cmpmem(drafts, sizeof drafts, drafts2, sizeof drafts2);
        g_autofree char *want_path = hyocr_test_data("dflash", "block", round == 0 ? "logits1.f32" : "logits2.f32", NULL);
        size_t n = 0;
        g_autofree float *want = hyocr_test_read_f32(want_path, &n);
        g_assert_cmpuint(n, ==, (size_t)(B - 1) * V);
        rel[round] = compare_logits(logits, want, B - 1, V, drafts, near_ties);
    }
    g_assert_cmpint(c->n, ==, 42);
    hyocr_dflash_ctx_free(e->d, c);
}

static void test_block_logits(void)
{
    draft_env e = { 0 };
    env_open(&e, NULL);
    double rel[2];
    run_block_rounds(&e, rel, NULL);
    g_test_message("CPU fp32 draft vs reference: round 1 rel %.3g, round 2 rel %.3g", rel[0], rel[1]);
    g_assert_cmpfloat(rel[0], <=, 1e-4);
    g_assert_cmpfloat(rel[1], <=, 1e-4);
    env_close(&e);
}

/* The same rounds on the CUDA backend (FP16 and BF16): within 1e-2 of the reference, the same
 * argmax or a near-tie. */
static void test_block_logits_cuda(gconstpointer dtype)
{
    draft_env e = { 0 };
    hyocr_compute_dtype dt = GPOINTER_TO_INT(dtype);
    if (!env_open_on(&e, NULL, true, dt)) return;
    double rel[2];
    int near_ties = 0;
    run_block_rounds(&e, rel, &near_ties);
    g_test_message("CUDA %s draft vs reference: round 1 rel %.3g, round 2 rel %.3g, %d near-ties",
                   dt == HYOCR_COMPUTE_BF16 ? "bf16" : "fp16", rel[0], rel[1], near_ties);
    g_assert_cmpfloat(rel[0], <=, dt == HYOCR_COMPUTE_BF16 ? 3e-2 : 1e-2);
    g_assert_cmpfloat(rel[1], <=, dt == HYOCR_COMPUTE_BF16 ? 3e-2 : 1e-2);
    env_close(&e);
}

/* The release stores F32 (HF) or BF16 (the config's dtype): both load to the same values. */
static void test_bf16_weights(void)
{
    g_autofree char *dir = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) dr = open_rewritten(NULL, TO_BF16, &dir, &err);
    g_assert_no_error(err);
    hyocr_checkpoint_stats s;
    hyocr_checkpoint_get_stats(dr, &s);
    g_assert_cmpuint(s.bytes_per_dtype[HYOCR_DTYPE_BF16], ==, 355392 * 2);
    draft_env e = { 0 };
    env_open(&e, dr);
    double rel[2];
    run_block_rounds(&e, rel, NULL);
    g_assert_cmpfloat(rel[0], <=, 1e-4);
    g_assert_cmpfloat(rel[1], <=, 1e-4);
    env_close(&e);
    hyocr_test_rmdir(dir);
}

static void test_misuse(void)
{
    draft_env e = { 0 };
    env_open(&e, NULL);
    hyocr_dflash_ctx *c = hyocr_dflash_ctx_new(e.d, NULL);
    g_autoptr(GError) err = NULL;
    int32_t drafts[15];
    g_assert_false(hyocr_dflash_propose(e.d, c, 5, drafts, NULL, &err));   /* no context yet */
    assert_error(err, HYOCR_ERROR_INVALID_ARGUMENT, (const char *const[]){ "after some context (got 0 rows)", NULL });
    g_clear_error(&err);
    hyocr_buf *taps = upload_taps(&e, "ctx2.f32", 5);
    g_assert_false(hyocr_dflash_ctx_append(e.d, c, taps, 6, &err));
    assert_error(err, HYOCR_ERROR_INVALID_ARGUMENT, (const char *const[]){ "6 context rows need 1536 hidden-state values from the model, but 1280", NULL });
    g_clear_error(&err);
    g_assert_true(hyocr_dflash_ctx_append(e.d, c, taps, 5, &err));
    g_assert_false(hyocr_dflash_propose(e.d, c, 2023, drafts, NULL, &err));
    assert_error(err, HYOCR_ERROR_INVALID_ARGUMENT, (const char *const[]){ "a token id below 2023 (got 2023)", NULL });
    e.be->ops->buf_free(e.be, taps);
    hyocr_dflash_ctx_free(e.d, c);
    env_close(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/dflash/load/fixture", test_load_fixture);
    g_test_add_func("/dflash/load/no-draft", test_no_draft);
    g_test_add_func("/dflash/load/broken-is-not-fatal", test_broken_draft_is_not_fatal);
    g_test_add_func("/dflash/load/config-errors", test_config_errors);
    g_test_add_func("/dflash/load/config-variants", test_config_variants);
    g_test_add_func("/dflash/load/folder-errors", test_folder_errors);
    g_test_add_func("/dflash/load/weights-errors", test_weights_errors);
    g_test_add_func("/dflash/forward/block-logits", test_block_logits);
    g_test_add_data_func("/dflash/forward/cuda-fp16/block-logits", GINT_TO_POINTER(HYOCR_COMPUTE_F16),
                         test_block_logits_cuda);
    g_test_add_data_func("/dflash/forward/cuda-bf16/block-logits", GINT_TO_POINTER(HYOCR_COMPUTE_BF16),
                         test_block_logits_cuda);
    g_test_add_func("/dflash/forward/bf16-weights", test_bf16_weights);
    g_test_add_func("/dflash/forward/misuse", test_misuse);
    return g_test_run();
}
