/* hyocr — task presets, the chat template, and the prompt for one image. */
#include "prompt.h"
#include "error.h"
#include "i18n.h"

#include <string.h>

/* Literal pieces of Tencent's chat template (spec §3.6). They are the template's
 * text, not ids: ids always come from the tokenizer. */
#define TEMPLATE_SYSTEM_END    "<｜hy_place▁holder▁no▁3｜>"
#define TEMPLATE_USER_END      "<｜hy_User｜>"
#define TEMPLATE_ASSISTANT_END "<｜hy_Assistant｜>"

typedef struct {
    const char *name;
    const char *v15;   /* official 1.5 prompt (inference/utils/tasks.py) */
    const char *v10;   /* 1.0 scripts' prompt; NULL = same as 1.5 */
} task_info;

/* The 1.5 prompts are the fixed Chinese task prompts; Tencent notes that hand-tweaked
 * wording silently degrades quality, so these are byte-exact copies of the official texts. */
static const task_info tasks[HYOCR_TASK_COUNT] = {
    [HYOCR_TASK_RECOGNIZE]      = { "recognize", "提取图中的文字。", NULL },
    [HYOCR_TASK_SPOTTING]       = { "spotting", "检测并识别图片中的文字，将文本坐标格式化输出。", NULL },
    [HYOCR_TASK_PARSE_DOCUMENT] = { "parse_document",
        "提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，"
        "文档中公式用latex格式表示，按照阅读顺序组织进行解析。", NULL },
    [HYOCR_TASK_PARSE_TABLE]    = { "parse_table", "把图中的表格解析为HTML。", NULL },
    [HYOCR_TASK_PARSE_FORMULA]  = { "parse_formula", "识别图片中的公式，用LaTeX格式表示。", NULL },
    [HYOCR_TASK_PARSE_CHART]    = { "parse_chart",
        "解析图中的图表，对于流程图使用Mermaid格式表示，其他图表使用Markdown格式表示。", NULL },
    [HYOCR_TASK_TRANSLATE_ZH]   = { "translate_zh",
        "按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为中文。",
        "先提取文字，再将文字内容翻译为中文。若是文档，则其中页眉、页脚忽略。公式用latex格式表示，表格用html格式表示。" },
    [HYOCR_TASK_TRANSLATE_EN]   = { "translate_en",
        "按照阅读顺序，提取图中文字，公式用latex格式表示，表格用markdown格式表示，再将文字内容翻译为英文。",
        "先提取文字，再将文字内容翻译为英文。若是文档，则其中页眉、页脚忽略。公式用latex格式表示，表格用html格式表示。" },
    [HYOCR_TASK_EXTRACT_FIELDS] = { "extract_fields", NULL, NULL },
    [HYOCR_TASK_SUBTITLES]      = { "subtitles", "提取图片中的字幕。", NULL },
    [HYOCR_TASK_CUSTOM]         = { "custom", NULL, NULL },
};

const char *hyocr_task_name(hyocr_task task)
{
    return task >= 0 && task < HYOCR_TASK_COUNT ? tasks[task].name : NULL;
}

bool hyocr_task_from_name(const char *name, hyocr_task *out)
{
    for (int i = 0; i < HYOCR_TASK_COUNT && name; i++) {
        if (strcmp(tasks[i].name, name) == 0) {
            *out = (hyocr_task)i;
            return true;
        }
    }
    return false;
}

/* Python's repr() of a str: the IE prompt embeds the key list as the reference
 * scripts format it, e.g. ['姓名', 'date']. */
static void append_py_repr(GString *s, const char *str)
{
    char quote = (strchr(str, '\'') && !strchr(str, '"')) ? '"' : '\'';
    g_string_append_c(s, quote);
    for (const char *p = str; *p; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        if (c == '\\' || c == (gunichar)quote) { g_string_append_c(s, '\\'); g_string_append_c(s, (char)c); }
        else if (c == '\n') g_string_append(s, "\\n");
        else if (c == '\r') g_string_append(s, "\\r");
        else if (c == '\t') g_string_append(s, "\\t");
        else if (c < 0x20 || c == 0x7f) g_string_append_printf(s, "\\x%02x", c);
        else g_string_append_unichar(s, c);
    }
    g_string_append_c(s, quote);
}

static char *fields_prompt(const char *const *fields, GError **error)
{
    if (!fields || !fields[0]) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                    _("task extract_fields needs at least one field name (such as name, date, total)"));
        return NULL;
    }
    GString *s = g_string_new("提取图片中的: [");
    for (int i = 0; fields[i]; i++) {
        g_autofree char *key = g_strstrip(g_strdup(fields[i]));
        if (!g_utf8_validate(key, -1, NULL) || !*key) {
            /* an empty or undecodable key makes a prompt the model was never trained on */
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                        _("field %d of extract_fields is empty or not UTF-8"), i + 1);
            g_string_free(s, TRUE);
            return NULL;
        }
        if (i) g_string_append(s, ", ");
        append_py_repr(s, key);
    }
    g_string_append(s, "] 的字段内容，并按照 JSON 格式返回。");
    return g_string_free(s, FALSE);
}

char *hyocr_task_prompt(hyocr_task task, hyocr_model_version version,
                        const char *const *fields, const char *custom, GError **error)
{
    if (task < 0 || task >= HYOCR_TASK_COUNT) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT, _("unknown task %d"), (int)task);
        return NULL;
    }
    if (task == HYOCR_TASK_EXTRACT_FIELDS)
        return fields_prompt(fields, error);
    if (task == HYOCR_TASK_CUSTOM) {
        if (!custom || !*custom || !g_utf8_validate(custom, -1, NULL)) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                        _("task custom needs a prompt text in UTF-8 (such as “Describe the image.”)"));
            return NULL;
        }
        return g_strdup(custom);
    }
    const char *text = (version == HYOCR_MODEL_VERSION_1_0 && tasks[task].v10) ? tasks[task].v10 : tasks[task].v15;
    return g_strdup(text);
}

static bool lookup_special(const hyocr_tokenizer *tok, const char *str, const char *what,
                           int32_t *id, GError **error)
{
    *id = str ? hyocr_tokenizer_find(tok, str) : -1;
    if (*id >= 0) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_TOKENIZER,
                _("tokenizer.json has no %s token \"%s\": the chat template cannot be rendered "
                  "(is this a HunyuanOCR tokenizer?)"), what, str ? str : "(unset)");
    return false;
}

/* Token string for a config id, checked to exist in the tokenizer. */
static const char *config_token(const hyocr_tokenizer *tok, int32_t id, const char *key, GError **error)
{
    const char *s = id >= 0 ? hyocr_tokenizer_token(tok, id) : NULL;
    if (!s)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("config.json: %s = %d is not a token of tokenizer.json (vocabulary has %d ids)"),
                    key, id, hyocr_tokenizer_n_vocab(tok));
    return s;
}

typedef struct {
    const char *bos, *im_start, *im_end, *image;
} template_tokens;

static bool template_tokens_get(const hyocr_tokenizer *tok, const hyocr_config *cfg, template_tokens *t,
                                GError **error)
{
    int32_t id;
    t->bos = cfg->bos_token ? cfg->bos_token : config_token(tok, cfg->bos_id, "bos_token_id", error);
    t->im_start = t->bos ? config_token(tok, cfg->im_start_id, "im_start_id", error) : NULL;
    t->im_end = t->im_start ? config_token(tok, cfg->im_end_id, "im_end_id", error) : NULL;
    t->image = t->im_end ? config_token(tok, cfg->image_token_id, "image_token_id", error) : NULL;
    return t->image && lookup_special(tok, TEMPLATE_SYSTEM_END, "system-end", &id, error) &&
           lookup_special(tok, TEMPLATE_USER_END, "user-end", &id, error) &&
           lookup_special(tok, TEMPLATE_ASSISTANT_END, "assistant-end", &id, error);
}

/* The template takes a system message's string, else its first part's text
 * (nothing when that part is an image). */
static const char *system_text(const hyocr_chat_message *m)
{
    if (m->content) return m->content;
    return m->n_parts > 0 && m->parts[0].text ? m->parts[0].text : "";
}

/* A message's string or its parts in order; images only when n_images is given
 * (the template prints an assistant's content as text). */
static void render_content(GString *s, const template_tokens *t, const hyocr_chat_message *m, int *n_images)
{
    if (m->content) {
        g_string_append(s, m->content);
        return;
    }
    for (int i = 0; i < m->n_parts; i++) {
        if (m->parts[i].text) {
            g_string_append(s, m->parts[i].text);
        } else if (n_images) {
            g_string_append(s, t->im_start);
            g_string_append(s, t->image);
            g_string_append(s, t->im_end);
            (*n_images)++;
        }
    }
}

char *hyocr_chat_render(const hyocr_tokenizer *tok, const hyocr_config *cfg, const hyocr_chat_message *msgs,
                        int n_msgs, int *n_images, GError **error)
{
    template_tokens t;
    if (!template_tokens_get(tok, cfg, &t, error)) return NULL;
    int images = 0, first = 0;
    GString *s = g_string_new(t.bos);
    if (n_msgs > 0 && msgs[0].role == HYOCR_CHAT_SYSTEM) {
        g_string_append(s, system_text(&msgs[0]));
        g_string_append(s, TEMPLATE_SYSTEM_END);
        first = 1;
    }
    for (int i = first; i < n_msgs; i++) {
        if (msgs[i].role == HYOCR_CHAT_USER) {
            render_content(s, &t, &msgs[i], &images);
            g_string_append(s, TEMPLATE_USER_END);
        } else if (msgs[i].role == HYOCR_CHAT_ASSISTANT) {
            render_content(s, &t, &msgs[i], NULL);
            g_string_append(s, TEMPLATE_ASSISTANT_END);
        }
    }
    if (n_images) *n_images = images;
    return g_string_free(s, FALSE);
}

/* The processor's text-level expansion of the one image token into n copies. */
static char *expand_image(const char *rendered, const char *image, int n, GError **error)
{
    size_t len = strlen(image);
    const char *at = strstr(rendered, image);
    int count = 0;
    for (const char *p = at; p; p = strstr(p + len, image)) count++;
    if (count != 1) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                    _("the conversation holds %d image tokens; hyocr reads exactly one image"), count);
        return NULL;
    }
    GString *s = g_string_sized_new(strlen(rendered) + (size_t)n * len);
    g_string_append_len(s, rendered, at - rendered);
    for (int i = 0; i < n; i++) g_string_append_len(s, image, (gssize)len);
    g_string_append(s, at + len);
    return g_string_free(s, FALSE);
}

/* XD-RoPE positions (spec §5.4.3): sequence index on every axis, except the image
 * grid, whose tokens get (column, row, image index) on axes 1–3. */
static void fill_positions(hyocr_prompt *p)
{
    int n = p->n;
    for (int a = 0; a < 4; a++)
        for (int t = 0; t < n; t++) p->pos[a * n + t] = t;
    int grid0 = p->image_start + 1;   /* after the image_begin slot */
    int cols = p->merged_w + 1;       /* the newline column */
    for (int k = 0; k < p->merged_h * cols; k++) {
        int t = grid0 + k;
        p->pos[1 * n + t] = k % cols;
        p->pos[2 * n + t] = k / cols;
        p->pos[3 * n + t] = 0;
    }
}

static int find_image_span(const hyocr_prompt *p, int32_t image_id, int *count)
{
    int start = -1;
    *count = 0;
    for (int t = 0; t < p->n; t++) {
        if (p->ids[t] != image_id) continue;
        if (start < 0) start = t;
        (*count)++;
    }
    return start;
}

hyocr_prompt *hyocr_prompt_build_rendered(const hyocr_tokenizer *tok, const hyocr_config *cfg,
                                          const char *rendered, int grid_h, int grid_w, GError **error)
{
    int merge = cfg->vision.spatial_merge_size > 0 ? cfg->vision.spatial_merge_size : 2;
    if (grid_h <= 0 || grid_w <= 0 || grid_h % merge || grid_w % merge) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("image grid %d×%d is not a positive multiple of the merge size %d"), grid_h, grid_w, merge);
        return NULL;
    }
    template_tokens t;
    if (!template_tokens_get(tok, cfg, &t, error)) return NULL;
    int hm = grid_h / merge, wm = grid_w / merge;
    int n_image = hm * (wm + 1) + 2;
    g_autofree char *expanded = expand_image(rendered, t.image, n_image, error);
    if (!expanded) return NULL;

    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    hyocr_tokenizer_encode(tok, expanded, -1, ids);
    hyocr_prompt *p = g_new0(hyocr_prompt, 1);
    p->n = (int)ids->len;
    p->ids = (int32_t *)g_array_free(g_steal_pointer(&ids), FALSE);
    p->pos = g_new(int32_t, 4 * (size_t)p->n);
    p->merged_h = hm;
    p->merged_w = wm;
    int count;
    p->image_start = find_image_span(p, cfg->image_token_id, &count);
    p->n_image = count;
    if (count != n_image) {
        /* The tokenizer merged the image tokens with the text around them. */
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                    _("the prompt holds %d image tokens where the image needs %d; "
                      "remove special tokens from the task text"), count, n_image);
        hyocr_prompt_free(p);
        return NULL;
    }
    fill_positions(p);
    return p;
}

hyocr_prompt *hyocr_prompt_build(const hyocr_tokenizer *tok, const hyocr_config *cfg,
                                 const char *text, int grid_h, int grid_w, GError **error)
{
    const hyocr_chat_part parts[] = { { NULL }, { text } };
    const hyocr_chat_message msgs[] = {
        { .role = HYOCR_CHAT_SYSTEM, .content = "" },   /* the empty system message of Tencent's scripts */
        { .role = HYOCR_CHAT_USER, .parts = parts, .n_parts = 2 },
    };
    g_autofree char *rendered = hyocr_chat_render(tok, cfg, msgs, 2, NULL, error);
    return rendered ? hyocr_prompt_build_rendered(tok, cfg, rendered, grid_h, grid_w, error) : NULL;
}

void hyocr_prompt_free(hyocr_prompt *p)
{
    if (!p) return;
    g_free(p->ids);
    g_free(p->pos);
    g_free(p);
}
