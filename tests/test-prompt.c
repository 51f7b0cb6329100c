/* Prompt building: task texts and the full model input (ids + XD-RoPE positions)
 * against what the transformers processor produced for the fixtures; the chat
 * template renderer against jinja2's rendering of the template
 * (tests/data/chat/cases.json). */
#include "testutil.h"
#include "error.h"
#include "resize.h"
#include "prompt.h"
#include <json-glib/json-glib.h>

#include <string.h>

static const char *ckpts[] = { "ckpt-flat", "ckpt-nested" };

static void test_task_names(void)
{
    for (int i = 0; i < HYOCR_TASK_COUNT; i++) {
        hyocr_task t;
        g_assert_true(hyocr_task_from_name(hyocr_task_name((hyocr_task)i), &t));
        g_assert_cmpint(t, ==, i);
    }
    hyocr_task t;
    g_assert_false(hyocr_task_from_name("ocr-everything", &t));
    g_assert_false(hyocr_task_from_name(NULL, &t));
    g_assert_null(hyocr_task_name(HYOCR_TASK_COUNT));
}

static void test_task_versions(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *en15 = hyocr_task_prompt(HYOCR_TASK_TRANSLATE_EN, HYOCR_MODEL_VERSION_1_5, NULL, NULL, &error);
    g_autofree char *en10 = hyocr_task_prompt(HYOCR_TASK_TRANSLATE_EN, HYOCR_MODEL_VERSION_1_0, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(en15, !=, en10);
    g_assert_true(g_str_has_suffix(en15, "翻译为英文。"));
    g_assert_true(g_str_has_prefix(en10, "先提取文字"));
    g_autofree char *zh = hyocr_task_prompt(HYOCR_TASK_TRANSLATE_ZH, HYOCR_MODEL_VERSION_1_5, NULL, NULL, &error);
    g_assert_true(g_str_has_suffix(zh, "翻译为中文。"));
    /* the document prompt is the no-space form the official scripts run */
    g_autofree char *doc = hyocr_task_prompt(HYOCR_TASK_PARSE_DOCUMENT, HYOCR_MODEL_VERSION_1_0, NULL, NULL, &error);
    g_assert_nonnull(strstr(doc, "用markdown格式表示"));
}

static void test_fields_repr(void)
{
    g_autoptr(GError) error = NULL;
    const char *keys[] = { "姓名", " date ", "it's", "a\\b", NULL };
    g_autofree char *p = hyocr_task_prompt(HYOCR_TASK_EXTRACT_FIELDS, HYOCR_MODEL_VERSION_1_5, keys, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(p, ==, "提取图片中的: ['姓名', 'date', \"it's\", 'a\\\\b'] 的字段内容，并按照 JSON 格式返回。");

    g_autofree char *none = hyocr_task_prompt(HYOCR_TASK_EXTRACT_FIELDS, HYOCR_MODEL_VERSION_1_5, NULL, NULL, &error);
    g_assert_null(none);
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
    g_assert_nonnull(strstr(error->message, "at least one field name"));
    g_assert_null(strstr(error->message, "--"));   /* the engine names no command-line option */
    g_clear_error(&error);

    const char *empty[] = { "a", "  ", NULL };
    g_autofree char *bad = hyocr_task_prompt(HYOCR_TASK_EXTRACT_FIELDS, HYOCR_MODEL_VERSION_1_0, empty, NULL, &error);
    g_assert_null(bad);
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
    g_assert_nonnull(strstr(error->message, "field 2"));
    g_clear_error(&error);

    g_autofree char *custom = hyocr_task_prompt(HYOCR_TASK_CUSTOM, HYOCR_MODEL_VERSION_1_5, NULL, "", &error);
    g_assert_null(custom);
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
}

static hyocr_task task_of(const char *name)
{
    hyocr_task t;
    g_assert_true(hyocr_task_from_name(name, &t));
    return t;
}

static void assert_ints_equal(const char *path, const int32_t *got, int n)
{
    g_autoptr(GArray) want = hyocr_test_read_ints(path);
    g_assert_cmpint((int)want->len, ==, n);
    for (int i = 0; i < n; i++)
        if (g_array_index(want, int64_t, i) != got[i])
            g_error("%s: element %d is %d, reference %" G_GINT64_FORMAT, path, i, got[i],
                    g_array_index(want, int64_t, i));
}

/* One fixture case: the task text, then ids and positions from the real image. */
static void check_case(const char *ckpt, const hyocr_config *cfg, const hyocr_tokenizer *tok,
                       const char *image, const char *task)
{
    g_autofree char *dir = hyocr_test_data("prompts", ckpt, image, task, NULL);
    g_autofree char *text_path = g_build_filename(dir, "text.txt", NULL);
    g_autofree char *want_text = NULL;
    g_assert_true(g_file_get_contents(text_path, &want_text, NULL, NULL));

    g_autoptr(GError) error = NULL;
    const char *fields[] = { "姓名", "date", "total", NULL };
    g_autofree char *text = hyocr_task_prompt(task_of(task), cfg->version, fields, want_text, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(text, ==, want_text);

    g_autofree char *img_path = hyocr_test_data("images", image, NULL);
    g_autoptr(hyocr_image) img = hyocr_image_load(img_path, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(hyocr_pixels) px = hyocr_pixels_from_image(img, &cfg->processor, 0, &error);
    g_assert_no_error(error);
    g_autoptr(hyocr_prompt) p = hyocr_prompt_build(tok, cfg, text, px->grid_h, px->grid_w, &error);
    g_assert_no_error(error);

    g_autofree char *ids_path = g_build_filename(dir, "input_ids.txt", NULL);
    assert_ints_equal(ids_path, p->ids, p->n);
    g_autofree char *pos_path = g_build_filename(dir, "position_ids.txt", NULL);
    assert_ints_equal(pos_path, p->pos, 4 * p->n);
    g_assert_cmpint(p->n_image, ==, p->merged_h * (p->merged_w + 1) + 2);
    g_assert_cmpint(p->ids[p->image_start - 1], ==, cfg->im_start_id);
    g_assert_cmpint(p->ids[p->image_start + p->n_image], ==, cfg->im_end_id);
}

static void test_fixture_prompts(void)
{
    int n_cases = 0;
    for (size_t c = 0; c < G_N_ELEMENTS(ckpts); c++) {
        g_autofree char *root = hyocr_test_data("prompts", ckpts[c], NULL);
        if (!hyocr_test_require(root)) return;
        g_autofree char *model = hyocr_test_data(ckpts[c], NULL);
        g_autoptr(GError) error = NULL;
        g_autoptr(hyocr_config) cfg = hyocr_config_load(model, &error);
        g_assert_no_error(error);
        g_autofree char *tok_path = g_build_filename(model, "tokenizer.json", NULL);
        g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(tok_path, &error);
        g_assert_no_error(error);

        GDir *images = g_dir_open(root, 0, NULL);
        for (const char *image; (image = g_dir_read_name(images));) {
            g_autofree char *idir = g_build_filename(root, image, NULL);
            GDir *tasks = g_dir_open(idir, 0, NULL);
            for (const char *task; (task = g_dir_read_name(tasks)); n_cases++)
                check_case(ckpts[c], cfg, tok, image, task);
            g_dir_close(tasks);
        }
        g_dir_close(images);
    }
    g_test_message("%d prompt cases identical to the transformers processor", n_cases);
    g_assert_cmpint(n_cases, >=, 2 * HYOCR_TASK_COUNT);
}

static void test_bad_grid(void)
{
    g_autofree char *model = hyocr_test_data("ckpt-flat", NULL);
    if (!hyocr_test_require(model)) return;
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(model, &error);
    g_assert_no_error(error);
    g_autofree char *tok_path = g_build_filename(model, "tokenizer.json", NULL);
    g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(tok_path, &error);
    g_assert_no_error(error);

    g_assert_null(hyocr_prompt_build(tok, cfg, "x", 3, 4, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&error);

    /* a task text that smuggles in an image token must not shift the image span */
    g_autofree char *smuggled = g_strdup_printf("look %s here", hyocr_tokenizer_token(tok, cfg->image_token_id));
    g_assert_null(hyocr_prompt_build(tok, cfg, smuggled, 4, 4, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
    g_clear_error(&error);

    /* a config whose image token id is not in the vocabulary is named */
    hyocr_config broken = *cfg;
    broken.image_token_id = 999999;
    g_assert_null(hyocr_prompt_build(tok, &broken, "x", 4, 4, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "image_token_id"));
}

/* ---- the chat template ------------------------------------------------------------------------ */

typedef struct {
    hyocr_chat_message *msgs;
    int                 n;
    GPtrArray          *owned;   /* parts arrays */
} chat;

/* An OpenAI-shaped message list as the renderer takes it: image_url parts are images. */
static void chat_from_json(chat *c, JsonArray *arr)
{
    c->n = (int)json_array_get_length(arr);
    c->msgs = g_new0(hyocr_chat_message, MAX(c->n, 1));
    c->owned = g_ptr_array_new_with_free_func(g_free);
    for (int i = 0; i < c->n; i++) {
        JsonObject *m = json_array_get_object_element(arr, (guint)i);
        const char *role = json_object_get_string_member(m, "role");
        c->msgs[i].role = !strcmp(role, "system") ? HYOCR_CHAT_SYSTEM : !strcmp(role, "user") ? HYOCR_CHAT_USER
                        : !strcmp(role, "assistant") ? HYOCR_CHAT_ASSISTANT : HYOCR_CHAT_OTHER;
        JsonNode *content = json_object_get_member(m, "content");
        if (JSON_NODE_HOLDS_VALUE(content)) {
            c->msgs[i].content = json_node_get_string(content);
            continue;
        }
        JsonArray *parts = json_node_get_array(content);
        int np = (int)json_array_get_length(parts);
        hyocr_chat_part *p = g_new0(hyocr_chat_part, MAX(np, 1));
        g_ptr_array_add(c->owned, p);
        for (int k = 0; k < np; k++) {
            JsonObject *part = json_array_get_object_element(parts, (guint)k);
            if (!strcmp(json_object_get_string_member(part, "type"), "text"))
                p[k].text = json_object_get_string_member(part, "text");
        }
        c->msgs[i].parts = p;
        c->msgs[i].n_parts = np;
    }
}

static void chat_clear(chat *c)
{
    g_free(c->msgs);
    g_ptr_array_unref(c->owned);
}

static void load_model_text(const char *ckpt, hyocr_config **cfg, hyocr_tokenizer **tok)
{
    g_autofree char *model = hyocr_test_data(ckpt, NULL);
    g_autoptr(GError) error = NULL;
    *cfg = hyocr_config_load(model, &error);
    g_assert_no_error(error);
    g_autofree char *tok_path = g_build_filename(model, "tokenizer.json", NULL);
    *tok = hyocr_tokenizer_load(tok_path, &error);
    g_assert_no_error(error);
}

/* Every conversation renders as jinja2 renders the template, on both fixture
 * tokenizers; the image parts are counted. */
static void test_chat_template(void)
{
    g_autofree char *path = hyocr_test_data("chat", "cases.json", NULL);
    if (!hyocr_test_require(path)) return;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    g_assert_true(json_parser_load_from_file(parser, path, &error));
    JsonArray *cases = json_node_get_array(json_parser_get_root(parser));
    for (size_t k = 0; k < G_N_ELEMENTS(ckpts); k++) {
        g_autoptr(hyocr_config) cfg = NULL;
        g_autoptr(hyocr_tokenizer) tok = NULL;
        load_model_text(ckpts[k], &cfg, &tok);
        for (guint i = 0; i < json_array_get_length(cases); i++) {
            JsonObject *cs = json_array_get_object_element(cases, i);
            chat c;
            chat_from_json(&c, json_object_get_array_member(cs, "messages"));
            int n_images = -1;
            g_autofree char *got = hyocr_chat_render(tok, cfg, c.msgs, c.n, &n_images, &error);
            g_assert_no_error(error);
            g_test_message("%s: %s", json_object_get_string_member(cs, "name"), got);
            g_assert_cmpstr(got, ==, json_object_get_string_member(cs, "rendered"));
            g_assert_cmpint(n_images, ==, json_object_get_int_member(cs, "images"));
            chat_clear(&c);
        }
    }
}

/* Tencent's conversation (an empty system message, the image, the task text)
 * is the task prompt, id for id; a conversation with no image or two images is
 * refused by name. The image may come after the text. */
static void test_chat_prompt(void)
{
    g_autofree char *model = hyocr_test_data("ckpt-flat", NULL);
    if (!hyocr_test_require(model)) return;
    g_autoptr(hyocr_config) cfg = NULL;
    g_autoptr(hyocr_tokenizer) tok = NULL;
    load_model_text("ckpt-flat", &cfg, &tok);
    g_autoptr(GError) error = NULL;
    const char *task = "提取图中的文字。";
    const hyocr_chat_part parts[] = { { NULL }, { task } };
    hyocr_chat_message msgs[] = {
        { .role = HYOCR_CHAT_SYSTEM, .content = "" },
        { .role = HYOCR_CHAT_USER, .parts = parts, .n_parts = 2 },
    };
    g_autofree char *rendered = hyocr_chat_render(tok, cfg, msgs, 2, NULL, &error);
    g_autoptr(hyocr_prompt) a = hyocr_prompt_build_rendered(tok, cfg, rendered, 4, 6, &error);
    g_autoptr(hyocr_prompt) b = hyocr_prompt_build(tok, cfg, task, 4, 6, &error);
    g_assert_no_error(error);
    g_assert_cmpint(a->n, ==, b->n);
    g_assert_cmpmem(a->ids, a->n * sizeof(int32_t), b->ids, b->n * sizeof(int32_t));
    g_assert_cmpmem(a->pos, 4 * a->n * sizeof(int32_t), b->pos, 4 * b->n * sizeof(int32_t));

    /* text first: the image span moves, its positions keep their grid layout */
    const hyocr_chat_part after[] = { { task }, { NULL } };
    msgs[1].parts = after;
    g_autofree char *r2 = hyocr_chat_render(tok, cfg, msgs, 2, NULL, &error);
    g_autoptr(hyocr_prompt) c = hyocr_prompt_build_rendered(tok, cfg, r2, 4, 6, &error);
    g_assert_no_error(error);
    g_assert_cmpint(c->n, ==, b->n);
    g_assert_cmpint(c->image_start, >, b->image_start);
    g_assert_cmpint(c->n_image, ==, b->n_image);
    g_assert_cmpint(c->pos[1 * c->n + c->image_start + 1], ==, 0);
    g_assert_cmpint(c->ids[c->n - 1], ==, b->ids[b->n - 1]);

    const hyocr_chat_part none[] = { { task } }, two[] = { { NULL }, { task }, { NULL } };
    msgs[1].parts = none;
    msgs[1].n_parts = 1;
    g_autofree char *r0 = hyocr_chat_render(tok, cfg, msgs, 2, NULL, &error);
    g_assert_null(hyocr_prompt_build_rendered(tok, cfg, r0, 4, 6, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
    g_assert_nonnull(strstr(error->message, "holds 0 image"));
    g_clear_error(&error);
    msgs[1].parts = two;
    msgs[1].n_parts = 3;
    g_autofree char *r3 = hyocr_chat_render(tok, cfg, msgs, 2, NULL, &error);
    g_assert_null(hyocr_prompt_build_rendered(tok, cfg, r3, 4, 6, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
    g_assert_nonnull(strstr(error->message, "holds 2 image"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/prompt/task-names", test_task_names);
    g_test_add_func("/prompt/task-versions", test_task_versions);
    g_test_add_func("/prompt/fields-repr", test_fields_repr);
    g_test_add_func("/prompt/fixtures", test_fixture_prompts);
    g_test_add_func("/prompt/bad-grid", test_bad_grid);
    g_test_add_func("/prompt/chat-template", test_chat_template);
    g_test_add_func("/prompt/chat-prompt", test_chat_prompt);
    return g_test_run();
}
