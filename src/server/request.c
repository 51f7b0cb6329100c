/* hyocr serve — the OpenAI chat-completions request: JSON → the conversation
 * (hyocr_chat_message, rendered by the engine as the release's template does),
 * the one image's bytes, the sampling parameters and the stop sequences. Fields
 * hyocr does not know are ignored, as vLLM ignores unknown fields; one vLLM would
 * honour but hyocr cannot (a frequency penalty, a logit bias, a response format) is
 * refused by name (400, with the field in "param"), not ignored: the client would
 * otherwise get an answer that quietly differs from the one it asked for. */
#include "server.h"
#include "json.h"
#include "stop.h"
#include <errno.h>
#include <math.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>

/* Request bodies nest a few levels (messages → content → part → image_url). */
#define REQUEST_MAX_DEPTH 32

typedef struct {
    hyocr_chat_request         *r;
    const hyocr_request_limits *lim;
    hyocr_api_error            *e;
} parse_ctx;

/* ---- the image ---------------------------------------------------------------------------- */

static bool is_b64(unsigned char c)
{
    return g_ascii_isalnum(c) || c == '+' || c == '/';
}

/* Standard base64, padded: anything else is named with its offset, where a
 * lenient decoder would quietly skip it and hand the image decoder garbage. */
static GBytes *decode_base64(const char *s, size_t n, hyocr_api_error *e)
{
    size_t pad = 0;
    while (pad < 2 && n > pad && s[n - 1 - pad] == '=') pad++;
    for (size_t i = 0; i < n - pad; i++) {
        if (is_b64((unsigned char)s[i])) continue;
        hyocr_api_error_set(e, 400, "messages",
                            _("the image's data: URI is not valid base64: byte %zu of its data is '%s'"), i,
                            g_ascii_isprint(s[i]) ? (char[]){ s[i], 0 } : "(a control byte)");
        return NULL;
    }
    if (n == 0 || n % 4 != 0) {
        hyocr_api_error_set(e, 400, "messages",
                            _("the image's data: URI is not valid base64: %zu characters, not a multiple of 4"), n);
        return NULL;
    }
    g_autofree char *copy = g_strndup(s, n);
    gsize len = 0;
    guchar *data = g_base64_decode(copy, &len);
    return g_bytes_new_take(data, len);
}

static GBytes *from_data_uri(const char *url, hyocr_api_error *e)
{
    const char *comma = strchr(url, ',');
    if (!comma) {
        hyocr_api_error_set(e, 400, "messages", _("the image's data: URI has no ',' before its data"));
        return NULL;
    }
    g_autofree char *meta = g_strndup(url + 5, (gsize)(comma - url - 5));
    const char *data = comma + 1;
    if (g_str_has_suffix(meta, ";base64")) return decode_base64(data, strlen(data), e);
    GBytes *raw = g_uri_unescape_bytes(data, -1, NULL, NULL);
    if (!raw) hyocr_api_error_set(e, 400, "messages", _("the image's data: URI has a malformed %%-escape"));
    return raw;
}

/* file:// under the allowed folder only (as vLLM's --allowed-local-media-path):
 * the real path, links resolved, must lie inside it. */
static GBytes *from_file_uri(const char *url, const hyocr_request_limits *lim, hyocr_api_error *e)
{
    if (!lim->allowed_media_dir) {
        hyocr_api_error_set(e, 400, "messages",
                            _("file:// images are not read: the server was started without "
                              "--allowed-local-media-path"));
        return NULL;
    }
    g_autofree char *path = g_filename_from_uri(url, NULL, NULL);
    g_autofree char *shown = path ? g_filename_display_name(path) : NULL;
    g_autofree char *real = path ? realpath(path, NULL) : NULL;
    g_autofree char *root = realpath(lim->allowed_media_dir, NULL);
    size_t rn = root ? strlen(root) : 0;
    if (!real || !root || strncmp(real, root, rn) != 0 || (real[rn] != '/' && strcmp(root, "/") != 0)) {
        hyocr_api_error_set(e, 400, "messages",
                            real ? _("%s is not under the folder the server reads images from") :
                                   _("%s: no such file"), shown ? shown : url);
        return NULL;
    }
    GStatBuf st;
    if (g_stat(real, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > lim->max_body) {
        hyocr_api_error_set(e, 400, "messages", _("%s is not a regular file of at most %lld bytes"), shown,
                            (long long)lim->max_body);
        return NULL;
    }
    g_autoptr(GError) err = NULL;
    char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(real, &data, &len, &err)) {
        hyocr_api_error_set(e, 400, "messages", "%s", err->message);
        return NULL;
    }
    return g_bytes_new_take(data, len);
}

static GBytes *load_image(const char *url, const hyocr_request_limits *lim, hyocr_api_error *e)
{
    if (g_str_has_prefix(url, "data:")) return from_data_uri(url, e);
    if (g_str_has_prefix(url, "file:")) return from_file_uri(url, lim, e);
    if (g_str_has_prefix(url, "http://") || g_str_has_prefix(url, "https://")) {
        hyocr_api_error_set(e, 400, "messages",
                            _("remote image URLs are not fetched: send the image in the request as a data: URI "
                              "(data:image/png;base64,…)"));
        return NULL;
    }
    hyocr_api_error_set(e, 400, "messages", _("an image_url must be a data: URI (or file:// where allowed)"));
    return NULL;
}

/* ---- messages ----------------------------------------------------------------------------- */

static const char *string_or_null(JsonNode *n, bool *ok)
{
    *ok = true;
    if (!n || JSON_NODE_HOLDS_NULL(n)) return NULL;
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING) return json_node_get_string(n);
    *ok = false;
    return NULL;
}

static const char *image_url_of(JsonObject *part)
{
    JsonNode *u = json_object_get_member(part, "image_url");
    if (!u) return NULL;
    if (JSON_NODE_HOLDS_VALUE(u) && json_node_get_value_type(u) == G_TYPE_STRING) return json_node_get_string(u);
    if (!JSON_NODE_HOLDS_OBJECT(u)) return NULL;
    JsonNode *url = json_object_get_member(json_node_get_object(u), "url");
    bool ok;
    return string_or_null(url, &ok);
}

/* One content part: text, or an image (loaded when the template renders it:
 * in a user message). */
static bool parse_part(parse_ctx *c, JsonNode *node, hyocr_chat_role role, hyocr_chat_part *out)
{
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        hyocr_api_error_set(c->e, 400, "messages", _("a content part must be an object"));
        return false;
    }
    JsonObject *part = json_node_get_object(node);
    bool ok;
    const char *type = string_or_null(json_object_get_member(part, "type"), &ok);
    if (type && !strcmp(type, "text")) {
        out->text = string_or_null(json_object_get_member(part, "text"), &ok);
        if (!out->text) {
            hyocr_api_error_set(c->e, 400, "messages", _("a text part needs a \"text\" string"));
            return false;
        }
        return true;   /* UTF-8: hyocr_json_parse refuses any other body */
    }
    if (!type || strcmp(type, "image_url")) {
        hyocr_api_error_set(c->e, 400, "messages", _("content parts of type \"%s\" are not supported (text and "
                                                     "image_url are)"), type ? type : "(none)");
        return false;
    }
    const char *url = image_url_of(part);
    if (!url) {
        hyocr_api_error_set(c->e, 400, "messages", _("an image_url part needs an \"image_url\": {\"url\": …}"));
        return false;
    }
    if (role != HYOCR_CHAT_USER) {
        hyocr_api_error_set(c->e, 400, "messages", _("images are read from user messages only"));
        return false;
    }
    out->text = NULL;
    if (++c->r->n_images > 1) return true;   /* refused once counted */
    c->r->image = load_image(url, c->lim, c->e);
    return c->r->image != NULL;
}

static hyocr_chat_role role_of(const char *role, bool *known)
{
    *known = true;
    if (!strcmp(role, "system")) return HYOCR_CHAT_SYSTEM;
    if (!strcmp(role, "user")) return HYOCR_CHAT_USER;
    if (!strcmp(role, "assistant")) return HYOCR_CHAT_ASSISTANT;
    /* roles of the OpenAI API the template renders nothing for */
    *known = !strcmp(role, "developer") || !strcmp(role, "tool") || !strcmp(role, "function");
    return HYOCR_CHAT_OTHER;
}

static bool parse_message(parse_ctx *c, JsonNode *node, hyocr_chat_message *m)
{
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        hyocr_api_error_set(c->e, 400, "messages", _("every message must be an object"));
        return false;
    }
    JsonObject *o = json_node_get_object(node);
    bool ok, known;
    const char *role = string_or_null(json_object_get_member(o, "role"), &ok);
    if (!role) {
        hyocr_api_error_set(c->e, 400, "messages", _("every message needs a \"role\" string"));
        return false;
    }
    m->role = role_of(role, &known);
    if (!known) {
        hyocr_api_error_set(c->e, 400, "messages", _("unknown message role \"%s\""), role);
        return false;
    }
    JsonNode *content = json_object_get_member(o, "content");
    m->content = string_or_null(content, &ok);
    if (ok) {
        if (!m->content) m->content = "";   /* an assistant turn with tool calls has none */
        return true;
    }
    if (!JSON_NODE_HOLDS_ARRAY(content)) {
        hyocr_api_error_set(c->e, 400, "messages", _("a message's content must be a string or a list of parts"));
        return false;
    }
    JsonArray *parts = json_node_get_array(content);
    m->n_parts = (int)json_array_get_length(parts);
    hyocr_chat_part *p = g_new0(hyocr_chat_part, MAX(m->n_parts, 1));
    g_ptr_array_add(c->r->owned, p);
    m->parts = p;
    for (int i = 0; i < m->n_parts; i++)
        if (!parse_part(c, json_array_get_element(parts, (guint)i), m->role, &p[i])) return false;
    return true;
}

static bool parse_messages(parse_ctx *c, JsonObject *root)
{
    JsonNode *n = json_object_get_member(root, "messages");
    if (!n || !JSON_NODE_HOLDS_ARRAY(n) || json_array_get_length(json_node_get_array(n)) == 0) {
        hyocr_api_error_set(c->e, 400, "messages", _("\"messages\" must be a non-empty list"));
        return false;
    }
    JsonArray *arr = json_node_get_array(n);
    c->r->n_msgs = (int)json_array_get_length(arr);
    c->r->msgs = g_new0(hyocr_chat_message, c->r->n_msgs);
    for (int i = 0; i < c->r->n_msgs; i++)
        if (!parse_message(c, json_array_get_element(arr, (guint)i), &c->r->msgs[i])) return false;
    if (c->r->n_images == 1) return true;
    if (c->r->n_images == 0)
        hyocr_api_error_set(c->e, 400, "messages",
                            _("the request has no image: hyocr reads the text in an image; add a user content part "
                              "{\"type\": \"image_url\", \"image_url\": {\"url\": \"data:image/png;base64,…\"}}"));
    else
        hyocr_api_error_set(c->e, 400, "messages",
                            _("the request has %d images: hyocr reads one image per request"), c->r->n_images);
    return false;
}

/* ---- parameters --------------------------------------------------------------------------- */

/* A number member: absent or null leaves *out; false with e set when it is
 * not a number. */
static bool number(parse_ctx *c, JsonObject *o, const char *key, double *out, bool *present)
{
    JsonNode *n = json_object_get_member(o, key);
    if (present) *present = false;
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
    if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE) {
        hyocr_api_error_set(c->e, 400, key, _("\"%s\" must be a number"), key);
        return false;
    }
    *out = t == G_TYPE_INT64 ? (double)json_node_get_int(n) : json_node_get_double(n);
    if (present) *present = true;
    return true;
}

static bool integer(parse_ctx *c, JsonObject *o, const char *key, int64_t *out, bool *present)
{
    double v = 0;
    bool has = false;
    if (!number(c, o, key, &v, &has)) return false;
    if (present) *present = has;
    if (!has) return true;
    JsonNode *n = json_object_get_member(o, key);
    if (json_node_get_value_type(n) == G_TYPE_INT64) {
        *out = json_node_get_int(n);
        return true;
    }
    if (v != floor(v)) {
        hyocr_api_error_set(c->e, 400, key, _("\"%s\" must be an integer"), key);
        return false;
    }
    /* a float with no fraction (512.0, 1e3) is that integer; past int64's range it is
     * clamped so the key's own range check refuses it (casting 4e96 is undefined) */
    *out = v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
    return true;
}

static bool boolean(parse_ctx *c, JsonObject *o, const char *key, bool *out)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        hyocr_api_error_set(c->e, 400, key, _("\"%s\" must be true or false"), key);
        return false;
    }
    *out = json_node_get_boolean(n);
    return true;
}

static bool in_range(parse_ctx *c, const char *key, double v, double lo, double hi, const char *what)
{
    if (v >= lo && v <= hi) return true;
    hyocr_api_error_set(c->e, 400, key, _("\"%s\" must be %s (got %g)"), key, what, v);
    return false;
}

static bool parse_max_tokens(parse_ctx *c, JsonObject *o)
{
    static const char *const keys[] = { "max_completion_tokens", "max_tokens" };
    for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
        int64_t v = 0;
        bool has = false;
        if (!integer(c, o, keys[i], &v, &has)) return false;
        if (!has) continue;
        if (!in_range(c, keys[i], (double)v, 1, G_MAXINT, _("at least 1"))) return false;
        c->r->max_tokens = (int)v;
        return true;
    }
    return true;
}

static bool parse_sampling(parse_ctx *c, JsonObject *o)
{
    hyocr_chat_request *r = c->r;
    bool has;
    int64_t v = 0;
    if (!number(c, o, "temperature", &r->temperature, &has) ||
        (has && !in_range(c, "temperature", r->temperature, 0, 100, _("0 or more"))) ||
        !number(c, o, "top_p", &r->top_p, &has) ||
        (has && !in_range(c, "top_p", r->top_p, 1e-9, 1, _("in (0, 1]"))) ||
        !integer(c, o, "top_k", &v, &has) ||
        (has && !in_range(c, "top_k", (double)v, -1, G_MAXINT, _("-1, 0 (off) or a positive count"))) ||
        !number(c, o, "repetition_penalty", &r->repetition_penalty, &has) ||
        (has && !in_range(c, "repetition_penalty", r->repetition_penalty, 1e-6, 100, _("above 0"))))
        return false;
    r->top_k = v > 0 ? (int)v : 0;
    int64_t seed = 0;
    if (!integer(c, o, "seed", &seed, &r->has_seed)) return false;
    r->seed = (uint64_t)seed;
    int64_t n = 1;
    if (!integer(c, o, "n", &n, NULL)) return false;
    if (n != 1) {
        hyocr_api_error_set(c->e, 400, "n", _("\"n\" must be 1: hyocr returns one answer per request"));
        return false;
    }
    return true;
}

/* "stop": a string, a list of strings, or null. */
static bool parse_stop_strings(parse_ctx *c, JsonObject *o)
{
    hyocr_chat_request *r = c->r;
    JsonNode *n = json_object_get_member(o, "stop");
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    JsonArray *arr = JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
    guint count = arr ? json_array_get_length(arr) : 1;
    if (count > HYOCR_STOP_MAX_STRINGS) {
        hyocr_api_error_set(c->e, 400, "stop", _("\"stop\" has %u strings: at most %d are taken"), count,
                            HYOCR_STOP_MAX_STRINGS);
        return false;
    }
    r->stop = g_new0(const char *, count + 1);
    g_ptr_array_add(r->owned, r->stop);
    for (guint i = 0; i < count; i++) {
        JsonNode *s = arr ? json_array_get_element(arr, i) : n;
        if (!JSON_NODE_HOLDS_VALUE(s) || json_node_get_value_type(s) != G_TYPE_STRING) {
            hyocr_api_error_set(c->e, 400, "stop", _("\"stop\" must be a string or a list of strings"));
            return false;
        }
        r->stop[i] = json_node_get_string(s);
    }
    g_autoptr(GError) err = NULL;
    if (hyocr_stop_strings_check(r->stop, &err)) return true;
    hyocr_api_error_set(c->e, 400, "stop", "%s", err->message);
    return false;
}

/* vLLM's "stop_token_ids": a list of ids, or null. */
static bool parse_stop_tokens(parse_ctx *c, JsonObject *o)
{
    hyocr_chat_request *r = c->r;
    JsonNode *n = json_object_get_member(o, "stop_token_ids");
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    JsonArray *arr = JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
    guint count = arr ? json_array_get_length(arr) : 0;
    if (count > HYOCR_STOP_MAX_TOKENS) {
        hyocr_api_error_set(c->e, 400, "stop_token_ids", _("\"stop_token_ids\" has %u ids: at most %d are taken"),
                            count, HYOCR_STOP_MAX_TOKENS);
        return false;
    }
    r->stop_token_ids = g_new0(int32_t, MAX(count, 1));
    g_ptr_array_add(r->owned, r->stop_token_ids);
    for (guint i = 0; arr && i < count; i++) {
        JsonNode *v = json_array_get_element(arr, i);
        if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_INT64 ||
            json_node_get_int(v) < 0 || json_node_get_int(v) > G_MAXINT32) {
            arr = NULL;
            break;
        }
        r->stop_token_ids[i] = (int32_t)json_node_get_int(v);
    }
    if (!arr) {
        hyocr_api_error_set(c->e, 400, "stop_token_ids", _("\"stop_token_ids\" must be a list of token ids"));
        return false;
    }
    r->n_stop_token_ids = (int)count;   /* the vocabulary's bounds are the engine's to check */
    return true;
}

/* "logprobs": true, and "top_logprobs" 0..20, which needs it (OpenAI's and vLLM's rule);
 * vLLM's "return_tokens_as_token_ids" names their tokens by id. */
static bool parse_logprobs(parse_ctx *c, JsonObject *o)
{
    hyocr_chat_request *r = c->r;
    int64_t top = 0;
    bool has = false;
    g_autofree char *range = g_strdup_printf(_("between 0 and %d"), HYOCR_TOP_LOGPROBS_MAX);
    if (!boolean(c, o, "logprobs", &r->logprobs) || !boolean(c, o, "return_tokens_as_token_ids", &r->tokens_as_ids) ||
        !integer(c, o, "top_logprobs", &top, &has) ||
        (has && !in_range(c, "top_logprobs", (double)top, 0, HYOCR_TOP_LOGPROBS_MAX, range)))
        return false;
    if (has && !r->logprobs) {
        hyocr_api_error_set(c->e, 400, "top_logprobs", _("\"top_logprobs\" needs \"logprobs\": true"));
        return false;
    }
    r->top_logprobs = (int)top;
    return true;
}

/* A member that asks for nothing: absent, null, false, 0, empty, or a response_format of
 * {"type": "text"}. */
static bool asks_nothing(JsonNode *n)
{
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (JSON_NODE_HOLDS_ARRAY(n)) return json_array_get_length(json_node_get_array(n)) == 0;
    if (JSON_NODE_HOLDS_OBJECT(n)) {
        JsonObject *o = json_node_get_object(n);
        JsonNode *type = json_object_get_member(o, "type");
        return json_object_get_size(o) == 0 ||
               (json_object_get_size(o) == 1 && type && JSON_NODE_HOLDS_VALUE(type) &&
                json_node_get_value_type(type) == G_TYPE_STRING && !strcmp(json_node_get_string(type), "text"));
    }
    switch (json_node_get_value_type(n)) {
    case G_TYPE_BOOLEAN: return !json_node_get_boolean(n);
    case G_TYPE_INT64:   return json_node_get_int(n) == 0;
    case G_TYPE_DOUBLE:  return json_node_get_double(n) == 0;
    default:             return false;
    }
}

/* Where a field's value asks for nothing: as asks_nothing says; true (a switch on by default);
 * or 1 (a count or a factor whose neutral value is 1). */
typedef enum {
    NEUTRAL_ZERO,
    NEUTRAL_TRUE,
    NEUTRAL_ONE,
} neutral_value;

static bool is_neutral(JsonNode *n, neutral_value neutral)
{
    if (!n || JSON_NODE_HOLDS_NULL(n) || neutral == NEUTRAL_ZERO) return asks_nothing(n);
    if (!JSON_NODE_HOLDS_VALUE(n)) return false;
    GType t = json_node_get_value_type(n);
    if (neutral == NEUTRAL_TRUE) return t == G_TYPE_BOOLEAN && json_node_get_boolean(n);
    return (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE) && json_node_get_double(n) == 1.0;
}

/* What vLLM would honour and hyocr cannot (OpenAI's fields and vLLM's extra ones): refused
 * when it asks for anything. */
static bool refuse_unsupported(parse_ctx *c, JsonObject *o)
{
    static const struct {
        const char   *key, *why;
        neutral_value neutral;
    } fields[] = {
        { "frequency_penalty", N_("hyocr penalises repeated tokens with \"repetition_penalty\" (as vLLM takes it) "
                                  "instead") },
        { "presence_penalty", N_("hyocr penalises repeated tokens with \"repetition_penalty\" (as vLLM takes it) "
                                 "instead") },
        { "logit_bias", N_("hyocr does not bias tokens") },
        { "min_tokens", N_("hyocr does not hold back the end of an answer") },
        { "response_format", N_("hyocr does not constrain its output; the extract tasks ask for JSON in the prompt") },
        { "tools", N_("hyocr does not call tools") },
        { "min_p", N_("hyocr samples with temperature, top_k and top_p") },
        { "best_of", N_("hyocr returns one answer per request"), NEUTRAL_ONE },
        { "use_beam_search", N_("hyocr does not search beams") },
        { "length_penalty", N_("hyocr does not search beams"), NEUTRAL_ONE },
        { "prompt_logprobs", N_("hyocr returns the log-probabilities of the answer's tokens, not the prompt's") },
        { "allowed_token_ids", N_("hyocr does not restrict the vocabulary") },
        { "bad_words", N_("hyocr does not restrict the vocabulary") },
        { "guided_json", N_("hyocr does not constrain its output; the extract tasks ask for JSON in the prompt") },
        { "guided_regex", N_("hyocr does not constrain its output") },
        { "guided_choice", N_("hyocr does not constrain its output") },
        { "guided_grammar", N_("hyocr does not constrain its output") },
        { "structured_outputs", N_("hyocr does not constrain its output; the extract tasks ask for JSON in the prompt") },
        { "skip_special_tokens", N_("the answer's text never holds the special tokens (return_token_ids gives every "
                                    "id)"), NEUTRAL_TRUE },
        { "echo", N_("the answer does not repeat the prompt") },
        { "add_generation_prompt", N_("hyocr renders the conversation as the release's template does, for an answer"),
          NEUTRAL_TRUE },
        { "continue_final_message", N_("hyocr renders the conversation as the release's template does, for an answer") },
        { "chat_template", N_("hyocr renders the conversation with the release's own template") },
        { "truncate_prompt_tokens", N_("hyocr does not cut prompts; the image's size sets the prompt's length") },
        { "mm_processor_kwargs", N_("the image is resized as the release's processor does; hyocr serve --max-side "
                                    "bounds every image's long side") },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
        if (is_neutral(json_object_get_member(o, fields[i].key), fields[i].neutral)) continue;
        hyocr_api_error_set(c->e, 400, fields[i].key, _("\"%s\" is not supported: %s"), fields[i].key,
                            _(fields[i].why));
        return false;
    }
    return true;
}

static bool parse_stream(parse_ctx *c, JsonObject *o)
{
    hyocr_chat_request *r = c->r;
    if (!boolean(c, o, "stream", &r->stream) || !boolean(c, o, "ignore_eos", &r->ignore_eos) ||
        !boolean(c, o, "return_token_ids", &r->return_token_ids))
        return false;
    JsonNode *so = json_object_get_member(o, "stream_options");
    if (!so || JSON_NODE_HOLDS_NULL(so)) return true;
    if (!JSON_NODE_HOLDS_OBJECT(so)) {
        hyocr_api_error_set(c->e, 400, "stream_options", _("\"stream_options\" must be an object"));
        return false;
    }
    return boolean(c, json_node_get_object(so), "include_usage", &r->include_usage);
}

bool hyocr_chat_request_parse(hyocr_chat_request *r, const char *body, size_t len, const hyocr_request_limits *lim,
                              hyocr_api_error *e)
{
    memset(r, 0, sizeof *r);
    r->temperature = r->top_p = r->repetition_penalty = -1;
    r->owned = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;
    r->root = hyocr_json_parse(body, len, REQUEST_MAX_DEPTH, NULL, &err);
    if (!r->root) {
        hyocr_api_error_set(e, 400, NULL, _("the request body is not valid JSON: %s"), err->message);
        return false;
    }
    if (!JSON_NODE_HOLDS_OBJECT(r->root)) {
        hyocr_api_error_set(e, 400, NULL, _("the request body must be a JSON object"));
        return false;
    }
    JsonObject *o = json_node_get_object(r->root);
    parse_ctx c = { r, lim, e };
    bool ok;
    const char *model = string_or_null(json_object_get_member(o, "model"), &ok);
    if (!ok) {
        hyocr_api_error_set(e, 400, "model", _("\"model\" must be a string"));
        return false;
    }
    r->model = g_strdup(model);
    return parse_messages(&c, o) && parse_max_tokens(&c, o) && parse_sampling(&c, o) && parse_stop_strings(&c, o) &&
           boolean(&c, o, "include_stop_str_in_output", &r->stop_included) && parse_stop_tokens(&c, o) &&
           parse_logprobs(&c, o) && refuse_unsupported(&c, o) && parse_stream(&c, o);
}

/* The image as a document (named "image" in messages), so the engine renders its one page as
 * `hyocr run` renders a file: a PDF page to fit the model's max_pixels. A document of several
 * pages (a PDF, a multi-page TIFF) is refused as several images are: the API holds one image a
 * request, and answering the first page alone would drop the others unsaid. */
bool hyocr_chat_request_open_image(hyocr_chat_request *r, hyocr_api_error *e)
{
    g_autoptr(GError) err = NULL;
    r->document = hyocr_document_open_bytes(r->image, "image", NULL, &err);
    if (!r->document) {
        hyocr_api_error_from_engine(e, err);
        return false;
    }
    int n = hyocr_document_n_pages(r->document);
    if (n == 1) return true;
    hyocr_api_error_set(e, 400, "messages",
                        _("the image is a document of %d pages: hyocr reads one image per request; send each page "
                          "as an image of its own (hyocr run reads whole documents)"), n);
    e->code = "invalid_image";
    return false;
}

void hyocr_chat_request_clear(hyocr_chat_request *r)
{
    g_free(r->msgs);
    if (r->image) g_bytes_unref(r->image);
    if (r->document) hyocr_document_unref(r->document);
    g_free(r->model);
    if (r->owned) g_ptr_array_unref(r->owned);
    if (r->root) json_node_unref(r->root);
    memset(r, 0, sizeof *r);
}
