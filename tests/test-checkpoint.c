/* Tests for config.json & co. and checkpoint folders. Tiny checkpoints are written here from a
 * hand-written tensor table (spec §2.2 at tiny sizes); each tensor's first element is its row
 * number in that table, so a lookup that lands on the wrong tensor is caught, not just a
 * lookup that lands on a tensor of the right shape. */
#include "checkpoint.h"
#include "error.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* Tiny dimensions: vision C, heads, I, layers, patch, merge, max_image_size (edge 4);
 * text H, heads, kv heads, head_dim (≠ H/heads on purpose), F, vocab, layers. */
#define VC 8
#define VI 12
#define VL 2
#define VP 2
#define VM 2
#define VE 4
#define TH 16
#define TQ 4
#define TKV 2
#define TD 8
#define TF 20
#define TV 40
#define TL 2

/* Plain writes: g_file_set_contents fsyncs on overwrite, slow on a busy disk. */
static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    g_assert_nonnull(fp);
    g_assert_cmpuint(fwrite(data, 1, n, fp), ==, n);
    g_assert_cmpint(fclose(fp), ==, 0);
}

/* ------------------------------------------------------------------ tensor table */

typedef struct {
    char    name[96];
    int     n_dims;
    int64_t shape[4];
    bool    vision;
} spec_t;

static void add(GArray *a, bool vision, int n, int64_t d0, int64_t d1, int64_t d2, int64_t d3, const char *fmt, int layer)
{
    spec_t s = { .n_dims = n, .shape = { d0, d1, d2, d3 }, .vision = vision };
    g_snprintf(s.name, sizeof s.name, fmt, layer);
    g_array_append_val(a, s);
}

/* The canonical tensors of the tiny model (lm_head optional). */
static GArray *tiny_table(bool lm_head)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(spec_t));
    add(a, true, 4, VC, 3, VP, VP, "vit.embeddings.patch_embedding.weight", 0);
    add(a, true, 1, VC, 0, 0, 0, "vit.embeddings.patch_embedding.bias", 0);
    add(a, true, 2, VE * VE + 1, VC, 0, 0, "vit.embeddings.position_embedding.weight", 0);
    for (int i = 0; i < VL; i++) {
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.input_layernorm.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.input_layernorm.bias", i);
        add(a, true, 2, VC, VC, 0, 0, "vit.layers.%d.self_attn.q_proj.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.self_attn.q_proj.bias", i);
        add(a, true, 2, VC, VC, 0, 0, "vit.layers.%d.self_attn.k_proj.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.self_attn.k_proj.bias", i);
        add(a, true, 2, VC, VC, 0, 0, "vit.layers.%d.self_attn.v_proj.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.self_attn.v_proj.bias", i);
        add(a, true, 2, VC, VC, 0, 0, "vit.layers.%d.self_attn.o_proj.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.self_attn.o_proj.bias", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.post_attention_layernorm.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.post_attention_layernorm.bias", i);
        add(a, true, 2, VI, VC, 0, 0, "vit.layers.%d.mlp.dense_h_to_4h.weight", i);
        add(a, true, 1, VI, 0, 0, 0, "vit.layers.%d.mlp.dense_h_to_4h.bias", i);
        add(a, true, 2, VC, VI, 0, 0, "vit.layers.%d.mlp.dense_4h_to_h.weight", i);
        add(a, true, 1, VC, 0, 0, 0, "vit.layers.%d.mlp.dense_4h_to_h.bias", i);
    }
    add(a, true, 1, VC, 0, 0, 0, "vit.perceive.before_rms.weight", 0);
    add(a, true, 4, 2 * VC, VC, VM, VM, "vit.perceive.proj.0.weight", 0);
    add(a, true, 1, 2 * VC, 0, 0, 0, "vit.perceive.proj.0.bias", 0);
    add(a, true, 4, 4 * VC, 2 * VC, 1, 1, "vit.perceive.proj.2.weight", 0);
    add(a, true, 1, 4 * VC, 0, 0, 0, "vit.perceive.proj.2.bias", 0);
    add(a, true, 2, TH, 4 * VC, 0, 0, "vit.perceive.mlp.weight", 0);
    add(a, true, 1, TH, 0, 0, 0, "vit.perceive.mlp.bias", 0);
    add(a, true, 1, 4 * VC, 0, 0, 0, "vit.perceive.image_newline", 0);
    add(a, true, 1, TH, 0, 0, 0, "vit.perceive.image_begin", 0);
    add(a, true, 1, TH, 0, 0, 0, "vit.perceive.image_end", 0);
    add(a, true, 1, TH, 0, 0, 0, "vit.perceive.after_rms.weight", 0);
    add(a, false, 2, TV, TH, 0, 0, "model.embed_tokens.weight", 0);
    for (int i = 0; i < TL; i++) {
        add(a, false, 1, TH, 0, 0, 0, "model.layers.%d.input_layernorm.weight", i);
        add(a, false, 2, TQ * TD, TH, 0, 0, "model.layers.%d.self_attn.q_proj.weight", i);
        add(a, false, 2, TKV * TD, TH, 0, 0, "model.layers.%d.self_attn.k_proj.weight", i);
        add(a, false, 2, TKV * TD, TH, 0, 0, "model.layers.%d.self_attn.v_proj.weight", i);
        add(a, false, 2, TH, TQ * TD, 0, 0, "model.layers.%d.self_attn.o_proj.weight", i);
        add(a, false, 1, TD, 0, 0, 0, "model.layers.%d.self_attn.query_layernorm.weight", i);
        add(a, false, 1, TD, 0, 0, 0, "model.layers.%d.self_attn.key_layernorm.weight", i);
        add(a, false, 1, TH, 0, 0, 0, "model.layers.%d.post_attention_layernorm.weight", i);
        add(a, false, 2, TF, TH, 0, 0, "model.layers.%d.mlp.gate_proj.weight", i);
        add(a, false, 2, TF, TH, 0, 0, "model.layers.%d.mlp.up_proj.weight", i);
        add(a, false, 2, TH, TF, 0, 0, "model.layers.%d.mlp.down_proj.weight", i);
    }
    add(a, false, 1, TH, 0, 0, 0, "model.norm.weight", 0);
    if (lm_head) add(a, false, 2, TV, TH, 0, 0, "lm_head.weight", 0);
    return a;
}

static int64_t numel(const spec_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->n_dims; i++) n *= s->shape[i];
    return n;
}

/* transformers-5 names, written from the spec's rename list (independently of checkpoint.c). */
static char *to_transformers(const char *canon)
{
    if (g_str_has_prefix(canon, "model.")) return g_strconcat("model.language_model.", canon + 6, NULL);
    if (!g_str_has_prefix(canon, "vit.")) return g_strdup(canon);
    static const char *const map[][2] = {
        { ".perceive.proj.0.", ".patch_merger.proj_conv." }, { ".perceive.proj.2.", ".patch_merger.proj_out." },
        { ".perceive.", ".patch_merger." }, { ".input_layernorm.", ".layer_norm1." },
        { ".post_attention_layernorm.", ".layer_norm2." }, { ".mlp.dense_h_to_4h.", ".mlp.fc1." },
        { ".mlp.dense_4h_to_h.", ".mlp.fc2." },
    };
    g_autofree char *s = g_strconcat("model.vision_tower.", canon + 4, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(map); i++) {
        char *hit = strstr(s, map[i][0]);
        if (!hit) continue;
        *hit = '\0';
        char *r = g_strconcat(s, map[i][1], hit + strlen(map[i][0]), NULL);
        g_free(s);
        s = r;
        break;
    }
    return g_steal_pointer(&s);
}

/* ------------------------------------------------------------------ safetensors writer */

static uint16_t f32_to_f16_exact(float f)   /* only for the small exact values used here */
{
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000;
    if ((b & 0x7fffffff) == 0) return (uint16_t)sign;
    int exp = (int)((b >> 23) & 0xff) - 127 + 15;
    g_assert_true(exp > 0 && exp < 31 && (b & 0x1fff) == 0);
    return (uint16_t)(sign | ((uint32_t)exp << 10) | ((b >> 13) & 0x3ff));
}

/* Element k of table row `row`: the row number first, then a small pattern. */
static float value_at(int row, int64_t k) { return k == 0 ? (float)row : (float)(k % 5) * 0.5f - 1.0f; }

static void append_values(GByteArray *data, const char *dt, int row, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        float v = value_at(row, k);
        if (!strcmp(dt, "F32")) {
            g_byte_array_append(data, (const guint8 *)&v, 4);
        } else if (!strcmp(dt, "BF16")) {
            uint32_t b;
            memcpy(&b, &v, 4);
            uint16_t h = (uint16_t)(b >> 16);
            g_byte_array_append(data, (const guint8 *)&h, 2);
        } else if (!strcmp(dt, "F16")) {
            uint16_t h = f32_to_f16_exact(v);
            g_byte_array_append(data, (const guint8 *)&h, 2);
        } else if (!strcmp(dt, "I64")) {
            int64_t x = (int64_t)v;
            g_byte_array_append(data, (const guint8 *)&x, 8);
        } else {
            uint8_t x = (uint8_t)row;
            g_byte_array_append(data, &x, 1);
        }
    }
}

typedef struct {
    GString    *header;
    GByteArray *data;
} st_builder;

static void sb_init(st_builder *b)
{
    b->header = g_string_new("{\"__metadata__\":{\"format\":\"pt\"}");
    b->data = g_byte_array_new();
}

static void sb_add(st_builder *b, const char *name, const char *dt, const spec_t *s, int row)
{
    g_string_append_printf(b->header, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", name, dt);
    for (int d = 0; d < s->n_dims; d++) g_string_append_printf(b->header, "%s%" G_GINT64_FORMAT, d ? "," : "", s->shape[d]);
    guint begin = b->data->len;
    append_values(b->data, dt, row, numel(s));
    g_string_append_printf(b->header, "],\"data_offsets\":[%u,%u]}", begin, b->data->len);
}

static void sb_write(st_builder *b, const char *path)
{
    g_string_append_c(b->header, '}');
    while (b->header->len % 8) g_string_append_c(b->header, ' ');
    uint64_t le = GUINT64_TO_LE((uint64_t)b->header->len);
    g_autoptr(GByteArray) f = g_byte_array_new();
    g_byte_array_append(f, (const guint8 *)&le, 8);
    g_byte_array_append(f, (const guint8 *)b->header->str, (guint)b->header->len);
    g_byte_array_append(f, b->data->data, b->data->len);
    write_bytes(path, f->data, f->len);
    g_string_free(b->header, TRUE);
    g_byte_array_free(b->data, TRUE);
}

/* ------------------------------------------------------------------ model writer */

typedef struct {
    bool        transformers_names;
    bool        lm_head;
    bool        shards;          /* vision and text in two shards + index */
    const char *dtype;           /* "BF16", "F32", or "MIX" (vision F32, text F16) */
    const char *skip;            /* canonical name left out */
    const char *reshape;         /* canonical name stored with last dim + 1 */
    const char *retype;          /* canonical name stored with dtype retype_as */
    const char *retype_as;
    bool        extras;          /* image_sep, an MTP tensor, a U8 tensor */
    bool        duplicate;       /* one tensor stored under both names */
} model_opts;

static const char *row_dtype(const model_opts *o, const spec_t *s)
{
    if (o->retype && !strcmp(o->retype, s->name)) return o->retype_as;
    if (!strcmp(o->dtype, "MIX")) return s->vision ? "F32" : "F16";
    return o->dtype;
}

static void write_model(const char *dir, const model_opts *o)
{
    g_autoptr(GArray) t = tiny_table(o->lm_head);
    st_builder b[2];
    sb_init(&b[0]);
    sb_init(&b[1]);
    g_autoptr(GString) index = g_string_new("{\"metadata\":{},\"weight_map\":{");
    static const char *const shard_names[2] = { "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors" };
    for (guint i = 0; i < t->len; i++) {
        spec_t s = g_array_index(t, spec_t, i);
        if (o->skip && !strcmp(o->skip, s.name)) continue;
        if (o->reshape && !strcmp(o->reshape, s.name)) s.shape[s.n_dims - 1]++;
        g_autofree char *name = o->transformers_names ? to_transformers(s.name) : g_strdup(s.name);
        int k = o->shards && !s.vision ? 1 : 0;
        sb_add(&b[k], name, row_dtype(o, &s), &s, (int)i);
        g_string_append_printf(index, "%s\"%s\":\"%s\"", i ? "," : "", name, shard_names[k]);
        if (o->duplicate && i == 5) {
            g_autofree char *other = to_transformers(s.name);
            sb_add(&b[k], o->transformers_names ? s.name : other, "F32", &s, 99);
        }
    }
    if (o->extras) {
        spec_t sep = { "", 1, { TH }, true }, mtp = { "", 2, { 2, TH }, false }, u8 = { "", 1, { 3 }, false };
        sb_add(&b[0], o->transformers_names ? "model.vision_tower.patch_merger.image_sep" : "vit.perceive.image_sep", "F32", &sep, 200);
        sb_add(&b[0], "model.mtp_layers.0.proj.weight", "F32", &mtp, 201);
        sb_add(&b[0], "model.some_mask", "U8", &u8, 202);
    }
    if (o->shards) {
        g_string_append(index, "}}");
        for (int k = 0; k < 2; k++) {
            g_autofree char *p = g_build_filename(dir, shard_names[k], NULL);
            sb_write(&b[k], p);
        }
        g_autofree char *ip = g_build_filename(dir, "model.safetensors.index.json", NULL);
        write_bytes(ip, index->str, index->len);
    } else {
        g_autofree char *p = g_build_filename(dir, "model.safetensors", NULL);
        sb_write(&b[0], p);
        g_string_free(b[1].header, TRUE);
        g_byte_array_free(b[1].data, TRUE);
    }
}

/* ------------------------------------------------------------------ config writers */

static const char *FLAT_CONFIG =
    "{\"architectures\": [\"HunYuanVLForConditionalGeneration\"], \"model_type\": \"hunyuan_vl\","
    " \"add_classification_head\": false, \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"attention_head_dim\": 8, \"bos_token_id\": 30, \"eod_token_id\": 32, \"eos_token_id\": [31, 32],"
    " \"hidden_act\": \"silu\", \"hidden_size\": 16, \"image_start_token_id\": 35, \"image_end_token_id\": 36,"
    " \"image_token_id\": 37, \"image_newline_token_id\": 38, \"intermediate_size\": 20,"
    " \"max_position_embeddings\": 32768, \"mlp_bias\": false, \"norm_type\": \"rms\", \"num_attention_heads\": 4,"
    " \"num_experts\": 1, \"num_hidden_layers\": 2, \"num_key_value_heads\": 2, \"org_vocab_size\": 40,"
    " \"pad_id\": 33, \"pad_token_id\": -1, \"kv_lora_rank\": 512, \"q_lora_rank\": 1536, \"use_mla\": false,"
    " \"use_cla\": false, \"cla_share_factor\": 2, \"moe_topk\": [1], \"num_nextn_predict_layers\": 1,"
    " \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0,"
    " \"rope_scaling\": {\"alpha\": 1000.0, \"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 1.0, \"mscale\": 1.0,"
    "   \"mscale_all_dim\": 1.0, \"type\": \"xdrope\", \"xdrope_section\": [1, 1, 1, 1]},"
    " \"sep_token_id\": 0, \"text_start_id\": 7, \"text_end_id\": 8, \"tie_word_embeddings\": true,"
    " \"transformers_version\": \"4.49.0\", \"use_qk_norm\": true,"
    " \"vision_config\": {\"add_patchemb_bias\": true, \"cat_extra_token\": 1, \"hidden_act\": \"gelu\","
    "   \"hidden_size\": 8, \"intermediate_size\": 12, \"interpolate_mode\": \"bilinear\", \"max_image_size\": 8,"
    "   \"num_attention_heads\": 2, \"num_channels\": 3, \"num_hidden_layers\": 2, \"out_hidden_size\": 16,"
    "   \"patch_size\": 2, \"rms_norm_eps\": 1e-05, \"spatial_merge_size\": 2, \"text_hidden_size\": 16}}";

static const char *NESTED_CONFIG =
    "{\"architectures\": [\"HunYuanVLForConditionalGeneration\"], \"model_type\": \"hunyuan_vl\","
    " \"image_token_id\": 37, \"im_start_id\": 35, \"im_end_id\": 36, \"im_newline_id\": 38,"
    " \"tie_word_embeddings\": false, \"transformers_version\": \"5.17.0\","
    " \"text_config\": {\"model_type\": \"hunyuan_vl_text\", \"hidden_size\": 16, \"head_dim\": 8,"
    "   \"intermediate_size\": 20, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"num_hidden_layers\": 2,"
    "   \"vocab_size\": 40, \"rms_norm_eps\": 1e-05, \"max_position_embeddings\": 131072, \"bos_token_id\": 30,"
    "   \"eos_token_id\": 31, \"eod_token_id\": 32, \"pad_token_id\": 33, \"tie_word_embeddings\": false,"
    "   \"hidden_act\": \"silu\", \"head_dim_unused\": null, \"rope_scaling\": null,"
    "   \"rope_parameters\": {\"rope_type\": \"dynamic\", \"type\": \"dynamic\", \"alpha\": 1000.0,"
    "     \"mrope_section\": [1, 1, 1, 1], \"rope_theta\": 10000.0, \"beta_fast\": 32}},"
    " \"vision_config\": {\"model_type\": \"hunyuan_vl_vision\", \"hidden_size\": 8, \"intermediate_size\": 12,"
    "   \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"patch_size\": 2, \"spatial_merge_size\": 2,"
    "   \"num_channels\": 3, \"max_image_size\": 8, \"rms_norm_eps\": 1e-05, \"out_hidden_size\": 4096,"
    "   \"text_hidden_size\": 3072, \"hidden_act\": \"gelu\"}}";

static const char *PREPROC =
    "{\"image_processor_type\": \"HunYuanVLImageProcessor\", \"min_pixels\": 1024, \"max_pixels\": 4194304,"
    " \"patch_size\": 2, \"merge_size\": 2, \"temporal_patch_size\": 1, \"resample\": 1,"
    " \"image_mean\": [0.48145466, 0.4578275, 0.40821073], \"image_std\": [0.26862954, 0.26130258, 0.27577711],"
    " \"rescale_factor\": 0.00392156862745098}";

static const char *PREPROC_SIZE =
    "{\"size\": {\"shortest_edge\": 4096, \"longest_edge\": 16777216}, \"patch_size\": 2, \"merge_size\": 2,"
    " \"temporal_patch_size\": 1, \"image_mean\": 0.5, \"image_std\": [0.25, 0.5, 1.0]}";

static void put(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    write_bytes(p, text, strlen(text));
}

static void put_json(const char *dir, const char *name, JsonNode *root)
{
    g_autofree char *text = json_to_string(root, TRUE);
    put(dir, name, text);
}

static void rm(const char *dir, const char *name)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_unlink(p);
}

static JsonNode *parse(const char *text)
{
    g_autoptr(GError) err = NULL;
    JsonNode *n = json_from_string(text, &err);
    g_assert_no_error(err);
    return n;
}

static JsonObject *member(JsonNode *root, const char *key)
{
    JsonObject *o = json_node_get_object(root);
    return key ? json_object_get_object_member(o, key) : o;
}

/* A complete folder: config (flat or nested), preprocessor, generation, tokenizer files. */
static char *tiny_folder(bool nested, const model_opts *o)
{
    char *dir = hyocr_test_tmpdir();
    put(dir, "config.json", nested ? NESTED_CONFIG : FLAT_CONFIG);
    put(dir, "preprocessor_config.json", PREPROC);
    if (nested) {
        put(dir, "generation_config.json", "{\"eos_token_id\": 32, \"do_sample\": false}");
        put(dir, "tokenizer_config.json", "{\"bos_token\": \"<s>\", \"chat_template\": \"old\"}");
        put(dir, "chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
    } else {
        put(dir, "generation_config.json", "{\"eos_token_id\": [31, 32], \"repetition_penalty\": 1.03}");
        put(dir, "tokenizer_config.json",
            "{\"bos_token\": {\"content\": \"<s>\", \"lstrip\": false}, \"eos_token\": \"</s>\", \"pad_token\": null,"
            " \"chat_template\": \"{{ bos_token }}\"}");
    }
    if (o) write_model(dir, o);
    return dir;
}

/* ------------------------------------------------------------------ error helpers */

static void assert_error(const GError *err, int code, const char *const *needles)
{
    g_assert_nonnull(err);
    if (err->domain != HYOCR_ERROR || err->code != code)
        g_error("expected code %d, got %d: %s", code, err->code, err->message);
    for (; *needles; needles++)
        if (!strstr(err->message, *needles)) g_error("message lacks '%s': %s", *needles, err->message);
    if (g_test_verbose()) g_test_message("%s", err->message);
}

#define ASSERT_ERR(err, code, ...) assert_error((err), (code), (const char *const[]){ __VA_ARGS__, NULL })

static void expect_open_error(const char *dir, int code, const char *const *needles)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dir, &err);
    g_assert_null(ck);
    assert_error(err, code, needles);
}

#define EXPECT_OPEN_ERR(dir, code, ...) expect_open_error((dir), (code), (const char *const[]){ __VA_ARGS__, NULL })

static void expect_config_error(const char *dir, int code, const char *const *needles)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(dir, &err);
    g_assert_null(cfg);
    assert_error(err, code, needles);
}

#define EXPECT_CFG_ERR(dir, code, ...) expect_config_error((dir), (code), (const char *const[]){ __VA_ARGS__, NULL })

static hyocr_checkpoint *open_ok(const char *dir)
{
    g_autoptr(GError) err = NULL;
    hyocr_checkpoint *ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    g_assert_nonnull(ck);
    return ck;
}

static float first_value(const hyocr_tensor *t)
{
    g_autofree float *v = g_new(float, hyocr_tensor_numel(t));
    hyocr_tensor_to_f32(t, v);
    return v[0];
}

/* Every canonical name resolves to the tensor written for that table row. */
static void check_all_rows(const hyocr_checkpoint *ck, bool lm_head)
{
    g_autoptr(GArray) t = tiny_table(lm_head);
    for (guint i = 0; i < t->len; i++) {
        const spec_t *s = &g_array_index(t, spec_t, i);
        const hyocr_tensor *x = hyocr_checkpoint_get(ck, "%s", s->name);
        if (!x) g_error("%s not found", s->name);
        g_assert_cmpint(x->n_dims, ==, s->n_dims);
        for (int d = 0; d < s->n_dims; d++) g_assert_cmpint(x->shape[d], ==, s->shape[d]);
        if (first_value(x) != (float)i) g_error("%s holds row %g, expected %u", s->name, first_value(x), i);
    }
}

static void table_params(bool lm_head, int64_t *vision, int64_t *text)
{
    g_autoptr(GArray) t = tiny_table(lm_head);
    *vision = *text = 0;
    for (guint i = 0; i < t->len; i++) {
        const spec_t *s = &g_array_index(t, spec_t, i);
        *(s->vision ? vision : text) += numel(s);
    }
}

/* ------------------------------------------------------------------ checkpoints */

static void test_flat(void)
{
    model_opts o = { .dtype = "BF16", .shards = true };
    g_autofree char *dir = tiny_folder(false, &o);
    g_autoptr(hyocr_checkpoint) ck = open_ok(dir);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    int64_t pv, pt;
    table_params(false, &pv, &pt);
    g_autoptr(GArray) table = tiny_table(false);
    g_assert_cmpuint(st.n_tensors, ==, table->len);
    g_assert_cmpuint(st.n_ignored, ==, 0);
    g_assert_cmpint(st.n_params_vision, ==, pv);
    g_assert_cmpint(st.n_params_text, ==, pt);
    g_assert_cmpint(st.n_params, ==, pv + pt);
    g_assert_cmpint(hyocr_checkpoint_expected_params(hyocr_checkpoint_config(ck), NULL, NULL), ==, pv + pt);
    g_assert_cmpuint(st.bytes_per_dtype[HYOCR_DTYPE_BF16], ==, 2 * (pv + pt));
    g_assert_cmpuint(st.bytes_per_dtype[HYOCR_DTYPE_F32], ==, 0);
    g_assert_true(st.lm_head_tied);
    g_assert_false(st.transformers_names);
    g_assert_cmpint(st.n_files, ==, 2);
    check_all_rows(ck, false);
    g_assert_true(hyocr_checkpoint_get(ck, "lm_head.weight") == hyocr_checkpoint_get(ck, "model.embed_tokens.weight"));
    g_assert_true(hyocr_checkpoint_get(ck, "vit.layers.%d.mlp.dense_4h_to_h.bias", 1) != NULL);
    g_assert_null(hyocr_checkpoint_get(ck, "vit.layers.%d.mlp.dense_4h_to_h.bias", 2));
    g_assert_cmpstr(hyocr_checkpoint_dir(ck), ==, dir);

    const hyocr_config *c = hyocr_checkpoint_config(ck);
    g_assert_false(c->nested_layout);
    g_assert_cmpint(c->text.head_dim, ==, TD);            /* attention_head_dim alias */
    g_assert_cmpint(c->text.vocab_size, ==, TV);          /* org_vocab_size alias */
    g_assert_cmpint(c->pad_id, ==, 33);                   /* pad_token_id -1 → pad_id */
    g_assert_cmpint(c->eos_id, ==, 31);
    g_assert_cmpint(c->im_start_id, ==, 35);              /* image_start_token_id spelling */
    g_assert_cmpint(c->im_newline_id, ==, 38);
    g_assert_cmpint(c->version, ==, HYOCR_MODEL_VERSION_1_0);
    g_assert_cmpint(c->generation.n_eos, ==, 2);
    g_assert_cmpint(c->generation.eos_ids[1], ==, 32);
    g_assert_cmpfloat_with_epsilon(c->generation.repetition_penalty, 1.03f, 1e-6);
    g_assert_true(hyocr_config_is_eos(c, 31) && hyocr_config_is_eos(c, 32) && !hyocr_config_is_eos(c, 30));
    g_assert_cmpstr(c->bos_token, ==, "<s>");
    g_assert_cmpstr(c->eos_token, ==, "</s>");
    g_assert_null(c->pad_token);
    g_assert_cmpstr(c->chat_template, ==, "{{ bos_token }}");
    hyocr_test_rmdir(dir);
}

static void test_nested(void)
{
    model_opts o = { .dtype = "MIX", .transformers_names = true, .lm_head = true };
    g_autofree char *dir = tiny_folder(true, &o);
    g_autoptr(hyocr_checkpoint) ck = open_ok(dir);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    int64_t pv, pt;
    table_params(true, &pv, &pt);
    g_assert_true(st.transformers_names);
    g_assert_false(st.lm_head_tied);
    g_assert_cmpint(st.n_files, ==, 1);
    g_assert_cmpint(st.n_params, ==, pv + pt);
    g_assert_cmpint(st.n_params_text, ==, pt);
    g_assert_cmpuint(st.bytes_per_dtype[HYOCR_DTYPE_F32], ==, 4 * pv);
    g_assert_cmpuint(st.bytes_per_dtype[HYOCR_DTYPE_F16], ==, 2 * pt);
    check_all_rows(ck, true);
    g_assert_true(hyocr_checkpoint_get(ck, "lm_head.weight") != hyocr_checkpoint_get(ck, "model.embed_tokens.weight"));
    g_assert_cmpstr(hyocr_checkpoint_get(ck, "vit.perceive.proj.0.weight")->name, ==,
                    "model.vision_tower.patch_merger.proj_conv.weight");

    const hyocr_config *c = hyocr_checkpoint_config(ck);
    g_assert_true(c->nested_layout);
    g_assert_cmpint(c->version, ==, HYOCR_MODEL_VERSION_1_5);   /* max_position_embeddings 131072 */
    g_assert_cmpint(c->vision.out_hidden_size, ==, TH);          /* not the file's 4096/3072 */
    g_assert_cmpint(c->text.n_rope_sections, ==, 4);
    g_assert_cmpfloat(c->text.rope_alpha, ==, 1000.0);
    g_assert_cmpint(c->generation.n_eos, ==, 1);
    g_assert_cmpint(c->generation.eos_ids[0], ==, 32);
    g_assert_cmpfloat(c->generation.repetition_penalty, ==, 0.0f);
    g_assert_false(c->generation.do_sample);
    g_assert_cmpint(c->pad_id, ==, 33);
    g_assert_cmpint(c->im_start_id, ==, 35);
    g_assert_cmpstr(c->chat_template, ==, "{% for m in messages %}{{ m.content }}{% endfor %}");
    g_assert_false(c->text.tie_word_embeddings);
    hyocr_test_rmdir(dir);
}

/* Both files agree on every shared number. */
static void test_flat_and_nested_agree(void)
{
    g_autofree char *a = tiny_folder(false, NULL), *b = tiny_folder(true, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_config) x = hyocr_config_load(a, &err);
    g_assert_no_error(err);
    g_autoptr(hyocr_config) y = hyocr_config_load(b, &err);
    g_assert_no_error(err);
    const hyocr_text_config *tx = &x->text, *ty = &y->text;   /* max_position_embeddings, tie differ on purpose */
    g_assert_cmpint(tx->hidden_size, ==, ty->hidden_size);
    g_assert_cmpint(tx->num_layers, ==, ty->num_layers);
    g_assert_cmpint(tx->num_heads, ==, ty->num_heads);
    g_assert_cmpint(tx->num_kv_heads, ==, ty->num_kv_heads);
    g_assert_cmpint(tx->head_dim, ==, ty->head_dim);
    g_assert_cmpint(tx->intermediate_size, ==, ty->intermediate_size);
    g_assert_cmpint(tx->vocab_size, ==, ty->vocab_size);
    g_assert_cmpfloat(tx->rms_norm_eps, ==, ty->rms_norm_eps);
    g_assert_cmpfloat(tx->rope_theta, ==, ty->rope_theta);
    g_assert_cmpfloat(tx->rope_alpha, ==, ty->rope_alpha);
    g_assert_cmpint(tx->n_rope_sections, ==, ty->n_rope_sections);
    g_assert_cmpmem(tx->rope_section, sizeof tx->rope_section, ty->rope_section, sizeof ty->rope_section);
    g_assert_cmpmem(&x->vision, sizeof x->vision, &y->vision, sizeof y->vision);
    g_assert_cmpmem(&x->processor, sizeof x->processor, &y->processor, sizeof y->processor);
    g_assert_cmpint(x->image_token_id, ==, y->image_token_id);
    g_assert_cmpint(x->im_end_id, ==, y->im_end_id);
    g_assert_cmpint(x->bos_id, ==, y->bos_id);
    g_assert_cmpint(x->eod_id, ==, y->eod_id);
    g_assert_cmpint(x->pad_id, ==, y->pad_id);
    hyocr_test_rmdir(a);
    hyocr_test_rmdir(b);
}

static void test_canonical_names(void)
{
    static const char *const pairs[][2] = {
        { "model.vision_tower.embeddings.patch_embedding.weight", "vit.embeddings.patch_embedding.weight" },
        { "model.vision_tower.layers.3.layer_norm1.bias", "vit.layers.3.input_layernorm.bias" },
        { "model.vision_tower.layers.26.layer_norm2.weight", "vit.layers.26.post_attention_layernorm.weight" },
        { "model.vision_tower.layers.0.mlp.fc1.weight", "vit.layers.0.mlp.dense_h_to_4h.weight" },
        { "model.vision_tower.layers.0.mlp.fc2.bias", "vit.layers.0.mlp.dense_4h_to_h.bias" },
        { "model.vision_tower.layers.0.self_attn.q_proj.weight", "vit.layers.0.self_attn.q_proj.weight" },
        { "model.vision_tower.patch_merger.proj_conv.weight", "vit.perceive.proj.0.weight" },
        { "model.vision_tower.patch_merger.proj_out.bias", "vit.perceive.proj.2.bias" },
        { "model.vision_tower.patch_merger.mlp.weight", "vit.perceive.mlp.weight" },
        { "model.vision_tower.patch_merger.image_newline", "vit.perceive.image_newline" },
        { "model.vision_tower.patch_merger.before_rms.weight", "vit.perceive.before_rms.weight" },
        { "model.language_model.layers.5.self_attn.query_layernorm.weight", "model.layers.5.self_attn.query_layernorm.weight" },
        { "model.language_model.embed_tokens.weight", "model.embed_tokens.weight" },
        { "model.language_model.norm.weight", "model.norm.weight" },
        { "lm_head.weight", "lm_head.weight" },
        { "vit.perceive.proj.0.weight", "vit.perceive.proj.0.weight" },
        { "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.gate_proj.weight" },
        { "model.vision_tower.fc1", "vit.fc1" },   /* fc1 renames only under mlp */
        { "", "" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(pairs); i++) {
        g_autofree char *c = hyocr_checkpoint_canonical_name(pairs[i][0]);
        g_assert_cmpstr(c, ==, pairs[i][1]);
    }
}

/* The release configuration (v1.0 config.json values, spec §1) gives the spec §9.1 count
 * minus image_sep (1024), which the model never reads. */
static void test_release_param_count(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autoptr(JsonNode) root = parse(FLAT_CONFIG);
    JsonObject *top = member(root, NULL), *vis = member(root, "vision_config");
    json_object_set_int_member(top, "hidden_size", 1024);
    json_object_set_int_member(top, "attention_head_dim", 128);
    json_object_set_int_member(top, "intermediate_size", 3584);
    json_object_set_int_member(top, "num_attention_heads", 16);
    json_object_set_int_member(top, "num_key_value_heads", 8);
    json_object_set_int_member(top, "num_hidden_layers", 24);
    json_object_set_int_member(top, "org_vocab_size", 120818);
    json_object_set_int_member(top, "image_token_id", 120120);
    json_object_set_int_member(top, "image_start_token_id", 120118);
    json_object_set_int_member(top, "image_end_token_id", 120119);
    JsonArray *sec = json_array_new();
    for (int i = 0; i < 4; i++) json_array_add_int_element(sec, 16);
    json_object_set_array_member(json_object_get_object_member(top, "rope_scaling"), "xdrope_section", sec);
    json_object_set_int_member(vis, "hidden_size", 1152);
    json_object_set_int_member(vis, "intermediate_size", 4304);
    json_object_set_int_member(vis, "num_hidden_layers", 27);
    json_object_set_int_member(vis, "num_attention_heads", 16);
    json_object_set_int_member(vis, "patch_size", 16);
    json_object_set_int_member(vis, "max_image_size", 2048);
    put_json(dir, "config.json", root);
    put(dir, "preprocessor_config.json", "{\"min_pixels\": 262144, \"max_pixels\": 4194304, \"patch_size\": 16, \"merge_size\": 2}");
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(dir, &err);
    g_assert_no_error(err);
    int64_t v, t;
    g_assert_cmpint(hyocr_checkpoint_expected_params(cfg, &v, &t), ==, 996208112 - 1024);
    g_assert_cmpint(v, ==, 457198064 - 1024);
    g_assert_cmpint(t, ==, 539010048);
    g_assert_cmpint(hyocr_config_vision_head_dim(cfg), ==, 72);
    g_assert_cmpint(hyocr_config_pos_edge(cfg), ==, 128);
    g_assert_cmpint(cfg->version, ==, HYOCR_MODEL_VERSION_1_0);
    /* No generation_config.json: the eos list of config.json applies. */
    g_assert_cmpint(cfg->generation.n_eos, ==, 2);
    g_assert_true(hyocr_config_is_eos(cfg, 31));
    /* Untied head: + vocab·hidden. */
    json_object_set_boolean_member(top, "tie_word_embeddings", false);
    put_json(dir, "config.json", root);
    g_autoptr(hyocr_config) cfg2 = hyocr_config_load(dir, &err);
    g_assert_no_error(err);
    g_assert_cmpint(hyocr_checkpoint_expected_params(cfg2, NULL, NULL), ==, 996208112 - 1024 + 123717632);
    hyocr_test_rmdir(dir);
}

static void test_tied_with_stored_head(void)
{
    model_opts o = { .dtype = "F32", .lm_head = true };
    g_autofree char *dir = tiny_folder(false, &o);
    g_autoptr(hyocr_checkpoint) ck = open_ok(dir);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    g_assert_true(st.lm_head_tied);
    g_assert_cmpuint(st.n_ignored, ==, 1);
    g_assert_true(hyocr_checkpoint_get(ck, "lm_head.weight") == hyocr_checkpoint_get(ck, "model.embed_tokens.weight"));
    int64_t pv, pt;
    table_params(false, &pv, &pt);
    g_assert_cmpint(st.n_params, ==, pv + pt);   /* the head is not counted twice */
    hyocr_test_rmdir(dir);
}

static void test_untied_missing_head(void)
{
    model_opts o = { .dtype = "F32", .transformers_names = true };
    g_autofree char *dir = tiny_folder(true, &o);
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_CHECKPOINT, dir, "'lm_head.weight'", "tie_word_embeddings");
    hyocr_test_rmdir(dir);
}

static void test_ignored(void)
{
    model_opts o = { .dtype = "BF16", .extras = true, .transformers_names = true };
    g_autofree char *dir = tiny_folder(false, &o);
    g_autoptr(hyocr_checkpoint) ck = open_ok(dir);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    g_assert_cmpuint(st.n_ignored, ==, 3);
    g_autoptr(GArray) table = tiny_table(false);
    g_assert_cmpuint(st.n_tensors, ==, table->len);
    g_assert_nonnull(hyocr_checkpoint_get(ck, "vit.perceive.image_sep"));
    hyocr_test_rmdir(dir);
}

static void test_shape_mismatch(void)
{
    model_opts o = { .dtype = "F32", .transformers_names = true, .reshape = "vit.layers.1.mlp.dense_h_to_4h.weight" };
    g_autofree char *dir = tiny_folder(false, &o);
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_CHECKPOINT, "model.safetensors", "'vit.layers.1.mlp.dense_h_to_4h.weight'",
                    "stored as 'model.vision_tower.layers.1.mlp.fc1.weight'", "shape [12, 9]", "implies [12, 8]");
    hyocr_test_rmdir(dir);
    model_opts o2 = { .dtype = "BF16", .shards = true, .reshape = "model.layers.0.self_attn.k_proj.weight" };
    g_autofree char *dir2 = tiny_folder(false, &o2);
    EXPECT_OPEN_ERR(dir2, HYOCR_ERROR_CHECKPOINT, "model-00002-of-00002.safetensors",
                    "'model.layers.0.self_attn.k_proj.weight' has shape [16, 17]", "implies [16, 16]");
    hyocr_test_rmdir(dir2);
}

static void test_missing_tensor(void)
{
    model_opts o = { .dtype = "BF16", .shards = true, .skip = "model.layers.1.self_attn.key_layernorm.weight" };
    g_autofree char *dir = tiny_folder(false, &o);
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_CHECKPOINT, dir, "'model.layers.1.self_attn.key_layernorm.weight'", "missing");
    hyocr_test_rmdir(dir);
    model_opts o2 = { .dtype = "BF16", .skip = "vit.perceive.image_end", .transformers_names = true, .lm_head = true };
    g_autofree char *dir2 = tiny_folder(true, &o2);
    EXPECT_OPEN_ERR(dir2, HYOCR_ERROR_CHECKPOINT, dir2, "'vit.perceive.image_end'", "missing");
    hyocr_test_rmdir(dir2);
}

static void test_bad_dtypes(void)
{
    model_opts o = { .dtype = "F32", .retype = "vit.perceive.after_rms.weight", .retype_as = "I64" };
    g_autofree char *dir = tiny_folder(false, &o);
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_CHECKPOINT, "'vit.perceive.after_rms.weight'", "dtype I64", "F32, F16 or BF16");
    hyocr_test_rmdir(dir);
    model_opts o2 = { .dtype = "F32", .retype = "model.norm.weight", .retype_as = "U8", .transformers_names = true };
    g_autofree char *dir2 = tiny_folder(false, &o2);
    EXPECT_OPEN_ERR(dir2, HYOCR_ERROR_CHECKPOINT, "'model.norm.weight'", "dtype U8");
    hyocr_test_rmdir(dir2);
}

static void test_two_schemes(void)
{
    model_opts o = { .dtype = "F32", .duplicate = true };
    g_autofree char *dir = tiny_folder(false, &o);
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_CHECKPOINT, "'vit.layers.0.self_attn.q_proj.weight'",
                    "'model.vision_tower.layers.0.self_attn.q_proj.weight'", "two naming schemes");
    hyocr_test_rmdir(dir);
}

static void test_folder_errors(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *nowhere = g_build_filename(dir, "no-such-model", NULL);
    /* a missing model is data (the code): each front end says how its user gets one */
    EXPECT_OPEN_ERR(nowhere, HYOCR_ERROR_MODEL_MISSING, nowhere, "no such folder");
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_MODEL_MISSING, dir, "not a HunyuanOCR checkpoint folder: config.json missing");
    put(dir, "config.json", FLAT_CONFIG);
    g_autofree char *file = g_build_filename(dir, "config.json", NULL);
    EXPECT_OPEN_ERR(file, HYOCR_ERROR_IO, file, "not a folder");
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_IO, "preprocessor_config.json missing");
    put(dir, "preprocessor_config.json", PREPROC);
    EXPECT_OPEN_ERR(dir, HYOCR_ERROR_MODEL_MISSING, "no model.safetensors or model.safetensors.index.json", dir);
    hyocr_test_rmdir(dir);
}

/* ------------------------------------------------------------------ config.json */

static void test_config_malformed(void)
{
    g_autofree char *dir = tiny_folder(false, NULL);
    g_autofree char *path = g_build_filename(dir, "config.json", NULL);
    put(dir, "config.json", "{\n  \"hidden_size\": 16,\n  \"vision_config\": {\n}");
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(dir, &err);
    g_assert_null(cfg);
    ASSERT_ERR(err, HYOCR_ERROR_PARSE, path, "not valid JSON");
    g_autofree char *escaped = g_regex_escape_string(path, -1);
    g_autofree char *pattern = g_strdup_printf("^%s:\\d+:\\d+: ", escaped);
    g_assert_true(g_regex_match_simple(pattern, err->message, 0, 0));   /* PATH:LINE:COL: */
    g_clear_error(&err);
    put(dir, "config.json", "[1, 2]");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, path, "JSON object");
    put(dir, "config.json", "");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, path);
    put(dir, "config.json", FLAT_CONFIG);
    put(dir, "generation_config.json", "{\"eos_token_id\": [1, 2,");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, "generation_config.json");
    put(dir, "generation_config.json", "{}");
    put(dir, "preprocessor_config.json", "{\"min_pixels\": ");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, "preprocessor_config.json");
    put(dir, "preprocessor_config.json", PREPROC);
    put(dir, "tokenizer_config.json", "nope");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, "tokenizer_config.json");
    hyocr_test_rmdir(dir);
}

/* 80 000 '[' overflowed json-glib's recursive parser (a crash, not an error); a
 * second value after the first was accepted and leaked. Every config file goes
 * through the same bounded parse. */
static void test_config_hostile_json(void)
{
    g_autofree char *dir = tiny_folder(false, NULL);
    g_autofree char *path = g_build_filename(dir, "config.json", NULL);
    g_autofree char *bomb = g_strnfill(80000, '[');
    put(dir, "config.json", bomb);
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, path, "nested deeper than 128 levels at byte 128", "not valid JSON");
    g_autofree char *twice = g_strdup_printf("%s\n{\"hidden_size\": 1}", FLAT_CONFIG);
    put(dir, "config.json", twice);
    g_autofree char *at = g_strdup_printf("trailing data after the JSON value at byte %zu", strlen(FLAT_CONFIG) + 1);
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, path, at);
    put(dir, "config.json", FLAT_CONFIG);
    const char *const others[] = { "generation_config.json", "preprocessor_config.json", "tokenizer_config.json" };
    for (size_t i = 0; i < G_N_ELEMENTS(others); i++) {
        put(dir, others[i], bomb);
        EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, others[i], "nested deeper");
        put(dir, others[i], "{}{}");
        EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, others[i], "trailing data after the JSON value at byte 2");
        put(dir, others[i], others[i][0] == 'p' ? PREPROC : "{}");
    }
    hyocr_test_rmdir(dir);
}

/* Edits one key of the nested or flat config, writes it, and expects an error. */
typedef void (*edit_fn)(JsonNode *root);

static void expect_edit_error(bool nested, edit_fn edit, int code, const char *const *needles)
{
    g_autofree char *dir = tiny_folder(nested, NULL);
    g_autoptr(JsonNode) root = parse(nested ? NESTED_CONFIG : FLAT_CONFIG);
    edit(root);
    put_json(dir, "config.json", root);
    expect_config_error(dir, code, needles);
    hyocr_test_rmdir(dir);
}

#define EXPECT_EDIT_ERR(nested, edit, code, ...) \
    expect_edit_error((nested), (edit), (code), (const char *const[]){ __VA_ARGS__, NULL })

static void e_no_text_hidden(JsonNode *r) { json_object_remove_member(member(r, "text_config"), "hidden_size"); }
static void e_no_flat_layers(JsonNode *r) { json_object_remove_member(member(r, NULL), "num_hidden_layers"); }
static void e_no_vocab(JsonNode *r) { json_object_remove_member(member(r, NULL), "org_vocab_size"); }
static void e_no_vis_inter(JsonNode *r) { json_object_remove_member(member(r, "vision_config"), "intermediate_size"); }
static void e_no_vision(JsonNode *r) { json_object_remove_member(member(r, NULL), "vision_config"); }
static void e_hidden_string(JsonNode *r) { json_object_set_string_member(member(r, "text_config"), "hidden_size", "16"); }
static void e_hidden_float(JsonNode *r) { json_object_set_double_member(member(r, "text_config"), "hidden_size", 16.5); }
static void e_text_config_list(JsonNode *r) { json_object_set_array_member(member(r, NULL), "text_config", json_array_new()); }
static void e_eps_string(JsonNode *r) { json_object_set_string_member(member(r, "vision_config"), "rms_norm_eps", "x"); }
static void e_tie_int(JsonNode *r) { json_object_set_int_member(member(r, NULL), "tie_word_embeddings", 1); }

static void set_sections(JsonObject *o, const char *key, int a, int b, int c, int d)
{
    JsonArray *s = json_array_new();
    int v[4] = { a, b, c, d };
    for (int i = 0; i < 4 && v[i] >= 0; i++) json_array_add_int_element(s, v[i]);
    json_object_set_array_member(o, key, s);
}

static JsonObject *rope_of(JsonNode *r) { return json_object_get_object_member(member(r, "text_config"), "rope_parameters"); }
static void e_section_sum(JsonNode *r) { set_sections(rope_of(r), "mrope_section", 1, 1, 1, 2); }
static void e_section_two(JsonNode *r) { set_sections(rope_of(r), "mrope_section", 2, 2, -1, -1); }
static void e_section_zero(JsonNode *r) { set_sections(rope_of(r), "mrope_section", 0, 2, 1, 1); }
static void e_section_conflict(JsonNode *r) { set_sections(rope_of(r), "xdrope_section", 2, 1, 1, 0); }
static void e_flat_section(JsonNode *r) { set_sections(json_object_get_object_member(member(r, NULL), "rope_scaling"), "xdrope_section", 2, 2, 2, 2); }
static void e_rope_yarn(JsonNode *r) { json_object_set_string_member(rope_of(r), "rope_type", "yarn"); }
static void e_kv_heads(JsonNode *r) { json_object_set_int_member(member(r, "text_config"), "num_key_value_heads", 3); }
static void e_vis_heads(JsonNode *r) { json_object_set_int_member(member(r, "vision_config"), "num_attention_heads", 3); }
static void e_max_image(JsonNode *r) { json_object_set_int_member(member(r, "vision_config"), "max_image_size", 9); }
static void e_neg_size(JsonNode *r) { json_object_set_int_member(member(r, "text_config"), "intermediate_size", -20); }
static void e_model_type(JsonNode *r) { json_object_set_string_member(member(r, NULL), "model_type", "qwen2_vl"); }
static void e_text_act(JsonNode *r) { json_object_set_string_member(member(r, "text_config"), "hidden_act", "gelu"); }
static void e_vis_act(JsonNode *r) { json_object_set_string_member(member(r, "vision_config"), "hidden_act", "gelu_pytorch_tanh"); }
static void e_bias(JsonNode *r) { json_object_set_boolean_member(member(r, NULL), "attention_bias", true); }
static void e_image_id(JsonNode *r) { json_object_set_int_member(member(r, NULL), "image_token_id", 40); }
static void e_eos_many(JsonNode *r)
{
    JsonArray *a = json_array_new();
    for (int i = 0; i < 9; i++) json_array_add_int_element(a, i);
    json_object_set_array_member(member(r, NULL), "eos_token_id", a);
}

static void test_config_errors(void)
{
    EXPECT_EDIT_ERR(true, e_no_text_hidden, HYOCR_ERROR_CONFIG, "config.json: text field 'hidden_size' missing",
                    "(looked in text_config and top level)");
    EXPECT_EDIT_ERR(false, e_no_flat_layers, HYOCR_ERROR_CONFIG, "config.json: text field 'num_hidden_layers' missing");
    EXPECT_EDIT_ERR(false, e_no_vocab, HYOCR_ERROR_CONFIG, "'vocab_size' missing", "org_vocab_size");
    EXPECT_EDIT_ERR(true, e_no_vis_inter, HYOCR_ERROR_CONFIG, "vision_config field 'intermediate_size' missing");
    EXPECT_EDIT_ERR(false, e_no_vision, HYOCR_ERROR_CONFIG, "'vision_config' missing");
    EXPECT_EDIT_ERR(true, e_hidden_string, HYOCR_ERROR_CONFIG, "'hidden_size' must be an integer, found a string");
    EXPECT_EDIT_ERR(true, e_hidden_float, HYOCR_ERROR_CONFIG, "'hidden_size' must be an integer, found a number");
    EXPECT_EDIT_ERR(true, e_text_config_list, HYOCR_ERROR_CONFIG, "'text_config' must be an object, found an array");
    EXPECT_EDIT_ERR(true, e_eps_string, HYOCR_ERROR_CONFIG, "'rms_norm_eps' must be a number");
    EXPECT_EDIT_ERR(true, e_tie_int, HYOCR_ERROR_CONFIG, "'tie_word_embeddings' must be true or false");
    EXPECT_EDIT_ERR(true, e_section_sum, HYOCR_ERROR_CONFIG, "sums to 5", "head_dim/2 is 4", "head_dim 8");
    EXPECT_EDIT_ERR(false, e_flat_section, HYOCR_ERROR_CONFIG, "sums to 8", "head_dim/2 is 4");
    EXPECT_EDIT_ERR(true, e_section_two, HYOCR_ERROR_CONFIG, "'mrope_section' has 2 entries");
    EXPECT_EDIT_ERR(true, e_section_zero, HYOCR_ERROR_CONFIG, "'mrope_section': entry 0 must be a positive integer, found 0");
    EXPECT_EDIT_ERR(true, e_section_conflict, HYOCR_ERROR_CONFIG, "'mrope_section' and 'xdrope_section'", "differ");
    EXPECT_EDIT_ERR(true, e_rope_yarn, HYOCR_ERROR_CONFIG, "RoPE type 'yarn' is not supported");
    EXPECT_EDIT_ERR(true, e_kv_heads, HYOCR_ERROR_CONFIG, "num_attention_heads (4) is not a multiple of num_key_value_heads (3)");
    EXPECT_EDIT_ERR(true, e_vis_heads, HYOCR_ERROR_CONFIG, "vision hidden_size 8 is not divisible by num_attention_heads 3");
    EXPECT_EDIT_ERR(true, e_max_image, HYOCR_ERROR_CONFIG, "max_image_size 9 is not a multiple of patch_size 2");
    EXPECT_EDIT_ERR(true, e_neg_size, HYOCR_ERROR_CONFIG, "intermediate_size -20");
    EXPECT_EDIT_ERR(true, e_model_type, HYOCR_ERROR_CONFIG, "model_type is 'qwen2_vl'");
    EXPECT_EDIT_ERR(true, e_text_act, HYOCR_ERROR_CONFIG, "'hidden_act' is 'gelu'", "silu");
    EXPECT_EDIT_ERR(true, e_vis_act, HYOCR_ERROR_CONFIG, "'gelu_pytorch_tanh'");
    EXPECT_EDIT_ERR(false, e_bias, HYOCR_ERROR_CONFIG, "'attention_bias' is true");
    EXPECT_EDIT_ERR(false, e_image_id, HYOCR_ERROR_CONFIG, "image_token_id 40 is outside the vocabulary (vocab_size 40)");
    EXPECT_EDIT_ERR(false, e_eos_many, HYOCR_ERROR_CONFIG, "'eos_token_id' lists 9 ids");
}

static void load_ok(const char *dir, hyocr_config **out)
{
    g_autoptr(GError) err = NULL;
    *out = hyocr_config_load(dir, &err);
    g_assert_no_error(err);
}

/* transformers folds top-level text keys over text_config: the top level wins. */
static void test_precedence(void)
{
    g_autofree char *dir = tiny_folder(true, NULL);
    g_autoptr(JsonNode) root = parse(NESTED_CONFIG);
    JsonObject *top = member(root, NULL), *text = member(root, "text_config");
    json_object_set_double_member(top, "rms_norm_eps", 1e-6);
    json_object_set_int_member(text, "max_position_embeddings", 32768);
    json_object_set_int_member(top, "max_position_embeddings", 131072);
    json_object_set_int_member(top, "eos_token_id", 39);
    json_object_set_null_member(top, "pad_token_id");   /* null = absent: nested 33 stays */
    json_object_set_int_member(top, "attention_head_dim", 99);   /* alias loses to nested head_dim */
    JsonObject *rs = json_object_new();                  /* legacy rope_scaling beats rope_parameters */
    json_object_set_string_member(rs, "type", "xdrope");
    json_object_set_double_member(rs, "alpha", 500.0);
    set_sections(rs, "xdrope_section", 2, 1, 1, -1);
    json_object_set_object_member(top, "rope_scaling", rs);
    json_object_set_double_member(top, "rope_theta", 20000.0);
    put_json(dir, "config.json", root);
    rm(dir, "generation_config.json");
    g_autoptr(hyocr_config) c = NULL;
    load_ok(dir, &c);
    g_assert_cmpfloat(c->text.rms_norm_eps, ==, 1e-6f);
    g_assert_cmpint(c->text.max_position_embeddings, ==, 131072);
    g_assert_cmpint(c->version, ==, HYOCR_MODEL_VERSION_1_5);
    g_assert_cmpint(c->eos_id, ==, 39);
    g_assert_cmpint(c->generation.n_eos, ==, 1);
    g_assert_cmpint(c->generation.eos_ids[0], ==, 39);
    g_assert_cmpint(c->pad_id, ==, 33);
    g_assert_cmpint(c->text.head_dim, ==, TD);
    g_assert_cmpfloat(c->text.rope_alpha, ==, 500.0);
    g_assert_cmpint(c->text.n_rope_sections, ==, 3);
    g_assert_cmpint(c->text.rope_section[0], ==, 2);
    g_assert_cmpfloat(c->text.rope_theta, ==, 20000.0);   /* no theta in the dict: rope_theta applies */
    hyocr_test_rmdir(dir);
}

static void test_defaults_and_plain_rope(void)
{
    g_autofree char *dir = tiny_folder(true, NULL);
    g_autoptr(JsonNode) root = parse(NESTED_CONFIG);
    JsonObject *text = member(root, "text_config"), *vis = member(root, "vision_config"), *top = member(root, NULL);
    json_object_remove_member(text, "rope_parameters");
    json_object_remove_member(text, "num_key_value_heads");
    json_object_remove_member(text, "head_dim");
    json_object_remove_member(text, "rms_norm_eps");
    json_object_remove_member(vis, "rms_norm_eps");
    json_object_set_double_member(vis, "layer_norm_eps", 1e-6);
    json_object_remove_member(vis, "num_attention_heads");
    json_object_set_int_member(vis, "attention_heads", 4);
    json_object_remove_member(top, "image_token_id");
    json_object_remove_member(top, "im_newline_id");
    json_object_set_int_member(text, "vocab_size", 130000);
    put_json(dir, "config.json", root);
    g_autoptr(hyocr_config) c = NULL;
    load_ok(dir, &c);
    g_assert_cmpint(c->text.n_rope_sections, ==, 0);
    g_assert_cmpfloat(c->text.rope_alpha, ==, 0.0);
    g_assert_cmpfloat(c->text.rope_theta, ==, 10000.0);
    g_assert_cmpint(c->text.num_kv_heads, ==, TQ);
    g_assert_cmpint(c->text.head_dim, ==, TH / TQ);
    g_assert_cmpfloat(c->text.rms_norm_eps, ==, 1e-5f);
    g_assert_cmpfloat(c->vision.eps, ==, 1e-6f);
    g_assert_cmpint(c->vision.num_heads, ==, 4);
    g_assert_cmpint(hyocr_config_vision_head_dim(c), ==, 2);
    g_assert_cmpint(c->image_token_id, ==, 120120);
    g_assert_cmpint(c->im_newline_id, ==, 120121);
    g_assert_cmpint(hyocr_config_pos_edge(c), ==, 4);
    hyocr_test_rmdir(dir);
}

static void test_processor(void)
{
    g_autofree char *dir = tiny_folder(false, NULL);
    g_autoptr(hyocr_config) a = NULL;
    load_ok(dir, &a);
    g_assert_cmpint(a->processor.min_pixels, ==, 1024);
    g_assert_cmpint(a->processor.max_pixels, ==, 4194304);
    g_assert_cmpint(a->processor.patch_size, ==, 2);
    g_assert_cmpfloat(a->processor.image_mean[1], ==, 0.4578275f);
    g_assert_cmpfloat(a->processor.image_std[2], ==, 0.27577711f);
    g_assert_cmpfloat(a->processor.rescale_factor, ==, 1.0 / 255.0);
    g_assert_cmpint(a->version, ==, HYOCR_MODEL_VERSION_1_0);

    put(dir, "preprocessor_config.json", PREPROC_SIZE);
    g_autoptr(hyocr_config) b = NULL;
    load_ok(dir, &b);
    g_assert_cmpint(b->processor.min_pixels, ==, 4096);
    g_assert_cmpint(b->processor.max_pixels, ==, 16777216);
    g_assert_cmpint(b->version, ==, HYOCR_MODEL_VERSION_1_5);   /* max_pixels 4096² */
    g_assert_cmpfloat(b->processor.image_mean[2], ==, 0.5f);     /* one number → all channels */
    g_assert_cmpfloat(b->processor.image_std[1], ==, 0.5f);
    g_assert_cmpfloat(b->processor.rescale_factor, ==, 1.0 / 255.0);

    /* Top-level max_pixels beats size.longest_edge, as in transformers. */
    put(dir, "preprocessor_config.json", "{\"size\": {\"shortest_edge\": 4096, \"longest_edge\": 16777216},"
        " \"max_pixels\": 1000000, \"patch_size\": 2, \"merge_size\": 2}");
    g_autoptr(hyocr_config) c = NULL;
    load_ok(dir, &c);
    g_assert_cmpint(c->processor.min_pixels, ==, 4096);
    g_assert_cmpint(c->processor.max_pixels, ==, 1000000);

    put(dir, "preprocessor_config.json", "{\"size\": {\"min_pixels\": 100, \"max_pixels\": 200}, \"patch_size\": 2, \"merge_size\": 2}");
    g_autoptr(hyocr_config) d = NULL;
    load_ok(dir, &d);
    g_assert_cmpint(d->processor.max_pixels, ==, 200);

    put(dir, "preprocessor_config.json", "{\"min_pixels\": 100, \"patch_size\": 2, \"merge_size\": 2}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "preprocessor_config.json", "'max_pixels' missing", "size.longest_edge");
    put(dir, "preprocessor_config.json", "{\"min_pixels\": 100, \"max_pixels\": 200, \"patch_size\": 16, \"merge_size\": 2}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "preprocessor_config.json", "patch_size 16", "different models");
    put(dir, "preprocessor_config.json", "{\"min_pixels\": 300, \"max_pixels\": 200, \"patch_size\": 2, \"merge_size\": 2}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "min_pixels 300");
    put(dir, "preprocessor_config.json", "{\"min_pixels\": 1, \"max_pixels\": 200, \"patch_size\": 2, \"merge_size\": 2, \"image_std\": [1, 0, 1]}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "image_std");
    put(dir, "preprocessor_config.json", "{\"min_pixels\": 1, \"max_pixels\": 200, \"patch_size\": 2, \"merge_size\": 2, \"image_mean\": [1, 0]}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "'image_mean' must list 3 numbers (R, G, B), found 2");
    put(dir, "preprocessor_config.json", "{\"min_pixels\": 1, \"max_pixels\": 200, \"patch_size\": 2, \"merge_size\": 2, \"temporal_patch_size\": 2}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "temporal_patch_size is 2");
    rm(dir, "preprocessor_config.json");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_IO, dir, "preprocessor_config.json missing");

    /* transformers 5: processor_config.json with an image_processor section, read first. */
    put(dir, "preprocessor_config.json", PREPROC);
    put(dir, "processor_config.json", "{\"processor_class\": \"HunYuanVLProcessor\", \"image_processor\": {\"min_pixels\": 9216,"
        " \"max_pixels\": 50176, \"size\": {\"longest_edge\": 1, \"shortest_edge\": 1}, \"patch_size\": 2, \"merge_size\": 2}}");
    g_autoptr(hyocr_config) e = NULL;
    load_ok(dir, &e);
    g_assert_cmpint(e->processor.min_pixels, ==, 9216);
    g_assert_cmpint(e->processor.max_pixels, ==, 50176);
    put(dir, "processor_config.json", "{\"processor_class\": \"HunYuanVLProcessor\"}");   /* no section: legacy file */
    g_autoptr(hyocr_config) f = NULL;
    load_ok(dir, &f);
    g_assert_cmpint(f->processor.max_pixels, ==, 4194304);
    put(dir, "processor_config.json", "{\"image_processor\": {\"min_pixels\": 9216, \"patch_size\": 2, \"merge_size\": 2}}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "processor_config.json", "'max_pixels' missing");
    rm(dir, "preprocessor_config.json");
    put(dir, "processor_config.json", "{\"processor_class\": \"HunYuanVLProcessor\"}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_IO, "preprocessor_config.json missing", "processor_config.json");
    put(dir, "processor_config.json", "{\"image_processor\": ");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_PARSE, "processor_config.json");
    hyocr_test_rmdir(dir);
}

static void test_generation(void)
{
    g_autofree char *dir = tiny_folder(true, NULL);
    put(dir, "generation_config.json", "{\"eos_token_id\": [120007, 120020], \"repetition_penalty\": 1.08,"
        " \"do_sample\": true, \"temperature\": 0.7, \"top_k\": 20, \"top_p\": 0.9, \"pad_token_id\": 1}");
    g_autoptr(hyocr_config) a = NULL;
    load_ok(dir, &a);
    g_assert_cmpint(a->generation.n_eos, ==, 2);
    g_assert_true(hyocr_config_is_eos(a, 120020) && !hyocr_config_is_eos(a, 31));
    g_assert_cmpfloat_with_epsilon(a->generation.repetition_penalty, 1.08f, 1e-6);
    g_assert_true(a->generation.do_sample);
    g_assert_cmpfloat_with_epsilon(a->generation.temperature, 0.7f, 1e-6);
    g_assert_cmpint(a->generation.top_k, ==, 20);
    g_assert_cmpfloat_with_epsilon(a->generation.top_p, 0.9f, 1e-6);

    put(dir, "generation_config.json", "{\"temperature\": 1}");   /* no eos: config.json's applies */
    g_autoptr(hyocr_config) b = NULL;
    load_ok(dir, &b);
    g_assert_cmpint(b->generation.n_eos, ==, 1);
    g_assert_cmpint(b->generation.eos_ids[0], ==, 31);
    g_assert_cmpfloat(b->generation.temperature, ==, 1.0f);
    g_assert_cmpfloat(b->generation.repetition_penalty, ==, 0.0f);

    put(dir, "generation_config.json", "{\"eos_token_id\": \"120020\"}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "generation_config.json", "'eos_token_id' must be an integer or a list");
    put(dir, "generation_config.json", "{\"repetition_penalty\": \"high\"}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "generation_config.json", "'repetition_penalty' must be a number");
    put(dir, "generation_config.json", "{\"top_p\": 2.0}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "generation_config.json", "top_p 2");
    put(dir, "generation_config.json", "{\"eos_token_id\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "generation_config.json", "lists 9 ids");
    hyocr_test_rmdir(dir);
}

static void test_tokenizer_config(void)
{
    g_autofree char *dir = tiny_folder(true, NULL);
    rm(dir, "chat_template.jinja");
    put(dir, "tokenizer_config.json", "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"},"
        " {\"name\": \"default\", \"template\": \"D\"}], \"eos_token\": {\"content\": \"<e>\"}}");
    g_autoptr(hyocr_config) a = NULL;
    load_ok(dir, &a);
    g_assert_cmpstr(a->chat_template, ==, "D");
    g_assert_cmpstr(a->eos_token, ==, "<e>");
    g_assert_null(a->bos_token);
    rm(dir, "tokenizer_config.json");
    g_autoptr(hyocr_config) b = NULL;
    load_ok(dir, &b);
    g_assert_null(b->chat_template);
    put(dir, "tokenizer_config.json", "{\"bos_token\": 5}");
    EXPECT_CFG_ERR(dir, HYOCR_ERROR_CONFIG, "tokenizer_config.json", "'bos_token'");
    hyocr_test_rmdir(dir);
}

/* ------------------------------------------------------------------ fixtures */

static hyocr_checkpoint *open_fixture(const char *name)
{
    g_autofree char *dir = hyocr_test_data(name, NULL);
    g_autofree char *cfg = g_build_filename(dir, "config.json", NULL);
    if (!hyocr_test_require(cfg)) return NULL;
    return open_ok(dir);
}

static void test_fixture_flat(void)
{
    g_autoptr(hyocr_checkpoint) ck = open_fixture("ckpt-flat");
    if (!ck) return;
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    const hyocr_config *c = hyocr_checkpoint_config(ck);
    g_assert_false(c->nested_layout);
    g_assert_false(st.transformers_names);
    g_assert_true(st.lm_head_tied);
    g_assert_cmpint(st.n_files, ==, 2);
    g_assert_cmpint(st.n_params, ==, hyocr_checkpoint_expected_params(c, NULL, NULL));
    g_assert_cmpuint(st.bytes_per_dtype[HYOCR_DTYPE_BF16], ==, 2 * st.n_params);
    g_assert_cmpint(c->generation.n_eos, ==, 2);
    g_assert_cmpfloat_with_epsilon(c->generation.repetition_penalty, 1.03f, 1e-6);
    g_assert_nonnull(c->chat_template);
}

static void test_fixture_nested(void)
{
    g_autoptr(hyocr_checkpoint) ck = open_fixture("ckpt-nested");
    if (!ck) return;
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    const hyocr_config *c = hyocr_checkpoint_config(ck);
    g_assert_true(c->nested_layout);
    g_assert_true(st.transformers_names);
    g_assert_false(st.lm_head_tied);
    g_assert_cmpint(st.n_files, ==, 1);
    g_assert_cmpint(st.n_params, ==, hyocr_checkpoint_expected_params(c, NULL, NULL));
    g_assert_cmpuint(st.bytes_per_dtype[HYOCR_DTYPE_F32] / 4 + st.bytes_per_dtype[HYOCR_DTYPE_F16] / 2, ==, st.n_params);
    g_assert_cmpint(c->generation.n_eos, ==, 1);
    g_assert_nonnull(c->chat_template);
    g_assert_true(hyocr_checkpoint_get(ck, "lm_head.weight") != hyocr_checkpoint_get(ck, "model.embed_tokens.weight"));
}

static void test_fixtures_agree(void)
{
    g_autoptr(hyocr_checkpoint) a = open_fixture("ckpt-flat");
    if (!a) return;
    g_autoptr(hyocr_checkpoint) b = open_fixture("ckpt-nested");
    if (!b) return;
    const hyocr_config *x = hyocr_checkpoint_config(a), *y = hyocr_checkpoint_config(b);
    const hyocr_text_config *tx = &x->text, *ty = &y->text;
    g_assert_cmpint(tx->hidden_size, ==, ty->hidden_size);
    g_assert_cmpint(tx->num_layers, ==, ty->num_layers);
    g_assert_cmpint(tx->num_heads, ==, ty->num_heads);
    g_assert_cmpint(tx->num_kv_heads, ==, ty->num_kv_heads);
    g_assert_cmpint(tx->head_dim, ==, ty->head_dim);
    g_assert_cmpint(tx->intermediate_size, ==, ty->intermediate_size);
    g_assert_cmpint(tx->vocab_size, ==, ty->vocab_size);
    g_assert_cmpfloat(tx->rms_norm_eps, ==, ty->rms_norm_eps);
    g_assert_cmpfloat(tx->rope_theta, ==, ty->rope_theta);
    g_assert_cmpfloat(tx->rope_alpha, ==, ty->rope_alpha);
    g_assert_cmpint(tx->n_rope_sections, ==, ty->n_rope_sections);
    g_assert_cmpmem(tx->rope_section, sizeof tx->rope_section, ty->rope_section, sizeof ty->rope_section);
    /* The fixtures' position tables differ on purpose (max_image_size 128 vs 256). */
    hyocr_vision_config vx = x->vision, vy = y->vision;
    vx.max_image_size = vy.max_image_size = 0;
    g_assert_cmpmem(&vx, sizeof vx, &vy, sizeof vy);
    g_assert_cmpint(x->processor.patch_size, ==, y->processor.patch_size);
    g_assert_cmpint(x->processor.merge_size, ==, y->processor.merge_size);
    g_assert_cmpmem(x->processor.image_mean, sizeof x->processor.image_mean, y->processor.image_mean, sizeof y->processor.image_mean);
    g_assert_cmpmem(x->processor.image_std, sizeof x->processor.image_std, y->processor.image_std, sizeof y->processor.image_std);
    g_assert_cmpint(x->image_token_id, ==, y->image_token_id);
    g_assert_cmpint(x->im_start_id, ==, y->im_start_id);
    g_assert_cmpint(x->im_end_id, ==, y->im_end_id);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/checkpoint/flat", test_flat);
    g_test_add_func("/checkpoint/nested", test_nested);
    g_test_add_func("/checkpoint/canonical-names", test_canonical_names);
    g_test_add_func("/checkpoint/release-param-count", test_release_param_count);
    g_test_add_func("/checkpoint/tied-with-stored-head", test_tied_with_stored_head);
    g_test_add_func("/checkpoint/untied-missing-head", test_untied_missing_head);
    g_test_add_func("/checkpoint/ignored", test_ignored);
    g_test_add_func("/checkpoint/shape-mismatch", test_shape_mismatch);
    g_test_add_func("/checkpoint/missing-tensor", test_missing_tensor);
    g_test_add_func("/checkpoint/bad-dtypes", test_bad_dtypes);
    g_test_add_func("/checkpoint/two-schemes", test_two_schemes);
    g_test_add_func("/checkpoint/folder-errors", test_folder_errors);
    g_test_add_func("/config/flat-and-nested-agree", test_flat_and_nested_agree);
    g_test_add_func("/config/malformed", test_config_malformed);
    g_test_add_func("/config/hostile-json", test_config_hostile_json);
    g_test_add_func("/config/errors", test_config_errors);
    g_test_add_func("/config/precedence", test_precedence);
    g_test_add_func("/config/defaults", test_defaults_and_plain_rope);
    g_test_add_func("/config/processor", test_processor);
    g_test_add_func("/config/generation", test_generation);
    g_test_add_func("/config/tokenizer", test_tokenizer_config);
    g_test_add_func("/checkpoint/fixture-flat", test_fixture_flat);
    g_test_add_func("/checkpoint/fixture-nested", test_fixture_nested);
    g_test_add_func("/checkpoint/fixtures-agree", test_fixtures_agree);
    return g_test_run();
}
