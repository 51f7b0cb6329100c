/* hyocr — a chat completion's reply from an OpenAI-compatible server, read
 * (remote-reply.h). The event stream is parsed byte by byte as the WHATWG
 * rules say, so an event split anywhere across network reads reads the same;
 * each event's data is one JSON value through the engine's JSON door. */
#include "remote-reply.h"
#include "remote.h"
#include "error.h"
#include "i18n.h"
#include "json.h"
#include <string.h>

/* One event (or one line) at most: a chunk holds a few tokens' text; a whole
 * non-streamed answer of 8192 tokens is well under this. */
#define REPLY_MAX_EVENT (8 << 20)
/* A chunk nests 4 levels; anything deeper is not a chat completion. */
#define REPLY_MAX_DEPTH 32

void hyocr_remote_reply_init(hyocr_remote_reply *r, const char *server, hyocr_remote_piece_fn on_piece, void *data)
{
    memset(r, 0, sizeof *r);
    r->server = g_strdup(server);
    r->on_piece = on_piece;
    r->data = data;
    r->text = g_string_new(NULL);
    r->token_ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    r->logprobs = g_array_new(FALSE, FALSE, sizeof(hyocr_token_logprobs));
    r->prompt_tokens = r->completion_tokens = -1;
    r->line = g_string_new(NULL);
    r->event_data = g_string_new(NULL);
}

void hyocr_remote_reply_clear(hyocr_remote_reply *r)
{
    g_free(r->server);
    if (r->text) g_string_free(r->text, TRUE);
    if (r->token_ids) g_array_unref(r->token_ids);
    if (r->logprobs) g_array_unref(r->logprobs);
    g_free(r->finish_reason);
    g_free(r->stop_text);
    if (r->line) g_string_free(r->line, TRUE);
    if (r->event_data) g_string_free(r->event_data, TRUE);
    memset(r, 0, sizeof *r);
}

static bool malformed(hyocr_remote_reply *r, GError **error, const char *what)
{
    g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MALFORMED,
                _("%s sent an answer that is not an OpenAI chat completion: %s"), r->server, what);
    return false;
}

/* ---- NUL bytes ---------------------------------------------------------------------------- */

/* A token can decode to a NUL byte, which a server sends as \u0000 (hyocr serve
 * does); json-glib cuts its C strings there, so the JSON door refuses it. Each
 * \u0000 in a string becomes \uffff, a noncharacter no text of a model's
 * holds, and back to NUL in the content (true: the text had one). */
static bool nul_escapes_out(GString *json)
{
    bool in_string = false, any = false;
    for (size_t i = 0; i < json->len; i++) {
        char c = json->str[i];
        if (!in_string) {
            in_string = c == '"';
        } else if (c == '"') {
            in_string = false;
        } else if (c == '\\' && i + 1 < json->len) {
            if (i + 5 < json->len && !memcmp(json->str + i + 1, "u0000", 5)) {
                memcpy(json->str + i + 1, "uffff", 5);
                any = true;
            }
            i++;   /* the escaped character is never a quote that ends the string */
        }
    }
    return any;
}

/* The content with U+FFFF back to NUL bytes: *len gets its bytes. */
static char *nul_bytes_in(const char *content, size_t *len)
{
    GString *out = g_string_new(NULL);
    for (const char *p = content; *p; p++) {
        if (!strncmp(p, "\xEF\xBF\xBF", 3)) {
            g_string_append_c(out, '\0');
            p += 2;
        } else {
            g_string_append_c(out, *p);
        }
    }
    *len = out->len;
    return g_string_free(out, FALSE);
}

/* ---- one chat.completion(.chunk) object ------------------------------------------------ */

/* A member that must be a string when present; *out NULL when absent or null. */
static bool opt_string(JsonObject *o, const char *key, const char **out)
{
    JsonNode *n = json_object_get_member(o, key);
    *out = NULL;
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) return false;
    *out = json_node_get_string(n);
    return true;
}

static bool opt_count(JsonObject *o, const char *key, int *out)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) return false;
    gint64 v = json_node_get_int(n);
    if (v < 0 || v > G_MAXINT) return false;
    *out = (int)v;
    return true;
}

/* "token_ids": [ints] (vLLM's and hyocr serve's return_token_ids), appended to ids. */
static bool read_ids(JsonObject *o, GArray *ids)
{
    JsonNode *n = json_object_get_member(o, "token_ids");
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (!JSON_NODE_HOLDS_ARRAY(n)) return false;
    JsonArray *a = json_node_get_array(n);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64) return false;
        gint64 v = json_node_get_int(e);
        if (v < 0 || v > G_MAXINT32) return false;
        int32_t id = (int32_t)v;
        g_array_append_val(ids, id);
    }
    return true;
}

/* One {"token": "token_id:N", "logprob": x} of logprobs: the id vLLM's return_tokens_as_token_ids
 * names (hyocr asks for it: a token's text may be a piece of a character), and its number. */
static bool read_token_logprob(JsonNode *n, int32_t *id, float *logprob)
{
    if (!JSON_NODE_HOLDS_OBJECT(n)) return false;
    JsonObject *o = json_node_get_object(n);
    const char *tok = NULL;
    JsonNode *lp = json_object_get_member(o, "logprob");
    if (!opt_string(o, "token", &tok) || !tok || !g_str_has_prefix(tok, "token_id:") || !lp ||
        !JSON_NODE_HOLDS_VALUE(lp) ||
        (json_node_get_value_type(lp) != G_TYPE_DOUBLE && json_node_get_value_type(lp) != G_TYPE_INT64))
        return false;
    char *end = NULL;
    const char *digits = tok + strlen("token_id:");
    guint64 v = g_ascii_strtoull(digits, &end, 10);
    if (!g_ascii_isdigit(*digits) || *end || v > G_MAXINT32) return false;
    *id = (int32_t)v;
    *logprob = (float)json_node_get_double(lp);
    return true;
}

/* A choice's "logprobs": {"content": [{token, logprob, "top_logprobs": [{token, logprob}, …]}, …]}
 * (null or absent: none), its entries appended to out. */
static bool read_logprobs(JsonObject *c, GArray *out)
{
    JsonNode *n = json_object_get_member(c, "logprobs");
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (!JSON_NODE_HOLDS_OBJECT(n)) return false;
    JsonNode *content = json_object_get_member(json_node_get_object(n), "content");
    if (!content || JSON_NODE_HOLDS_NULL(content)) return true;
    if (!JSON_NODE_HOLDS_ARRAY(content)) return false;
    JsonArray *a = json_node_get_array(content);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        hyocr_token_logprobs lp = { 0 };
        int32_t id;
        if (!read_token_logprob(e, &id, &lp.logprob)) return false;
        JsonNode *top = json_object_get_member(json_node_get_object(e), "top_logprobs");
        if (top && !JSON_NODE_HOLDS_NULL(top)) {
            if (!JSON_NODE_HOLDS_ARRAY(top) || json_array_get_length(json_node_get_array(top)) > HYOCR_TOP_LOGPROBS_MAX)
                return false;
            JsonArray *t = json_node_get_array(top);
            lp.n_top = (int)json_array_get_length(t);
            for (int k = 0; k < lp.n_top; k++)
                if (!read_token_logprob(json_array_get_element(t, (guint)k), &lp.top[k].id, &lp.top[k].logprob))
                    return false;
        }
        g_array_append_val(out, lp);
    }
    return true;
}

static bool read_usage(hyocr_remote_reply *r, JsonObject *o, GError **error)
{
    JsonNode *n = json_object_get_member(o, "usage");
    if (!n || JSON_NODE_HOLDS_NULL(n)) return true;
    if (!JSON_NODE_HOLDS_OBJECT(n)) return malformed(r, error, _("\"usage\" is not an object"));
    JsonObject *u = json_node_get_object(n);
    if (!opt_count(u, "prompt_tokens", &r->prompt_tokens) || !opt_count(u, "completion_tokens", &r->completion_tokens))
        return malformed(r, error, _("a token count in \"usage\" is not a count"));
    return true;
}

/* The server's error, sent as an event (or as the object) once the answer had begun. */
static bool server_error(hyocr_remote_reply *r, JsonNode *e, GError **error)
{
    const char *msg = NULL;
    if (JSON_NODE_HOLDS_OBJECT(e)) msg = hyocr_json_str(json_node_get_object(e), "message");
    else if (JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING) msg = json_node_get_string(e);
    g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_SERVER, _("%s stopped the answer with an error: %s"),
                r->server, msg && *msg ? msg : _("(no message)"));
    return false;
}

/* choices[0]: the delta (chunk) or message (whole answer), its ids, its finish;
 * nuls: its strings had \u0000 escapes (nul_escapes_out). */
static bool read_choice(hyocr_remote_reply *r, JsonObject *c, const char *part, bool nuls, GError **error)
{
    JsonNode *d = json_object_get_member(c, part);
    const char *content = NULL, *finish = NULL;
    if (d && !JSON_NODE_HOLDS_NULL(d)) {
        if (!JSON_NODE_HOLDS_OBJECT(d))
            return malformed(r, error, !strcmp(part, "delta") ? _("a choice's \"delta\" is not an object")
                                                              : _("a choice's \"message\" is not an object"));
        if (!opt_string(json_node_get_object(d), "content", &content))
            return malformed(r, error, _("\"content\" is not a string"));
    }
    if (!opt_string(c, "finish_reason", &finish)) return malformed(r, error, _("\"finish_reason\" is not a string"));
    guint before = r->token_ids->len;
    if (!read_ids(c, r->token_ids)) return malformed(r, error, _("\"token_ids\" is not a list of token ids"));
    int n_ids = (int)(r->token_ids->len - before);
    guint lp_before = r->logprobs->len;
    if (!read_logprobs(c, r->logprobs))
        return malformed(r, error, _("\"logprobs\" is not a list of tokens named by id (token_id:N) with their "
                                     "log-probabilities"));
    int n_lps = (int)(r->logprobs->len - lp_before);
    if (content || n_ids || n_lps) {
        size_t len = content ? strlen(content) : 0;
        g_autofree char *with_nuls = nuls && content ? nul_bytes_in(content, &len) : NULL;
        if (with_nuls) content = with_nuls;
        g_string_append_len(r->text, content ? content : "", (gssize)len);
        r->n_chunks++;
        if (r->on_piece)
            r->on_piece(content ? content : "", len, n_ids ? &g_array_index(r->token_ids, int32_t, before) : NULL,
                        n_ids, n_lps ? &g_array_index(r->logprobs, hyocr_token_logprobs, lp_before) : NULL, n_lps,
                        r->data);
    }
    if (finish) {
        g_free(r->finish_reason);
        r->finish_reason = g_strdup(finish);
        JsonNode *why = json_object_get_member(c, "stop_reason");
        GType t = why && JSON_NODE_HOLDS_VALUE(why) ? json_node_get_value_type(why) : G_TYPE_INVALID;
        g_free(r->stop_text);
        r->stop_text = t == G_TYPE_STRING ? g_strdup(json_node_get_string(why)) : NULL;
        r->has_stop_id = t == G_TYPE_INT64;
        r->stop_id = r->has_stop_id ? json_node_get_int(why) : 0;
    }
    return true;
}

static bool read_object(hyocr_remote_reply *r, const char *json, size_t len, const char *part, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GString) copy = g_string_new_len(json, (gssize)len);
    bool nuls = nul_escapes_out(copy);
    g_autoptr(JsonNode) root = hyocr_json_parse(copy->str, copy->len, REPLY_MAX_DEPTH, NULL, &err);
    if (!root) {
        g_autofree char *what = g_strdup_printf(_("an event is not JSON (%s)"), err->message);
        return malformed(r, error, what);
    }
    if (!JSON_NODE_HOLDS_OBJECT(root)) return malformed(r, error, _("an event is not a JSON object"));
    JsonObject *o = json_node_get_object(root);
    JsonNode *e = json_object_get_member(o, "error");
    if (e && !JSON_NODE_HOLDS_NULL(e)) return server_error(r, e, error);
    JsonNode *ch = json_object_get_member(o, "choices");
    if (!ch || !JSON_NODE_HOLDS_ARRAY(ch)) return malformed(r, error, _("an object has no \"choices\" list"));
    JsonArray *a = json_node_get_array(ch);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *c = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_OBJECT(c)) return malformed(r, error, _("a choice is not an object"));
        JsonObject *co = json_node_get_object(c);
        JsonNode *idx = json_object_get_member(co, "index");
        /* we ask for one answer (n = 1): choice 0 is it */
        if (idx && JSON_NODE_HOLDS_VALUE(idx) && json_node_get_value_type(idx) == G_TYPE_INT64 &&
            json_node_get_int(idx) != 0)
            continue;
        if (!read_choice(r, co, part, nuls, error)) return false;
    }
    return read_usage(r, o, error);
}

bool hyocr_remote_reply_parse_json(hyocr_remote_reply *r, const char *body, size_t len, GError **error)
{
    if (!read_object(r, body, len, "message", error)) return false;
    if (!r->finish_reason) return malformed(r, error, _("the answer has no \"finish_reason\""));
    r->done = true;
    return true;
}

/* ---- the event stream ------------------------------------------------------------------ */

static bool dispatch(hyocr_remote_reply *r, GError **error)
{
    if (!r->has_data) return true;
    r->has_data = false;
    GString *d = r->event_data;
    if (d->len && d->str[d->len - 1] == '\n') g_string_truncate(d, d->len - 1);
    bool ok = true;
    if (r->done) {
        /* nothing follows [DONE]; a proxy's trailing bytes are not an answer */
    } else if (!strcmp(d->str, "[DONE]")) {
        if (!r->finish_reason) ok = malformed(r, error, _("the stream ended ([DONE]) without a finish reason"));
        r->done = ok;
    } else {
        ok = read_object(r, d->str, d->len, "delta", error);
    }
    g_string_truncate(d, 0);
    return ok;
}

static bool take_line(hyocr_remote_reply *r, GError **error)
{
    GString *l = r->line;
    if (l->len == 0) return dispatch(r, error);
    if (l->str[0] == ':') {   /* a comment: keep-alives */
        g_string_truncate(l, 0);
        return true;
    }
    const char *colon = memchr(l->str, ':', l->len);
    size_t name_len = colon ? (size_t)(colon - l->str) : l->len;
    if (name_len == 4 && !memcmp(l->str, "data", 4)) {
        const char *v = colon ? colon + 1 : l->str + l->len;
        if (*v == ' ') v++;
        size_t vlen = (size_t)(l->str + l->len - v);
        if (memchr(v, 0, vlen)) {
            g_string_truncate(l, 0);
            return malformed(r, error, _("an event holds a NUL byte"));
        }
        if (r->event_data->len + vlen + 1 > REPLY_MAX_EVENT) {
            g_string_truncate(l, 0);
            return malformed(r, error, _("an event is larger than 8 MiB"));
        }
        g_string_append_len(r->event_data, v, (gssize)vlen);
        g_string_append_c(r->event_data, '\n');
        r->has_data = true;
    }
    /* event:, id:, retry: and unknown fields change nothing we read */
    g_string_truncate(l, 0);
    return true;
}

bool hyocr_remote_reply_feed(hyocr_remote_reply *r, const char *buf, size_t len, GError **error)
{
    size_t i = 0;
    if (!r->started && len) {
        /* a UTF-8 byte-order mark may open the stream; wait until three bytes tell */
        static const char bom[] = "\xEF\xBB\xBF";
        size_t have = r->line->len;
        while (have < 3 && i < len && buf[i] == bom[have]) {
            g_string_append_c(r->line, buf[i++]);
            have++;
        }
        if (have == 3) g_string_truncate(r->line, 0);
        if (have == 3 || i < len) r->started = true;
        if (!r->started) return true;
    }
    for (; i < len; i++) {
        char c = buf[i];
        if (c == '\n' && r->last_cr) {   /* CRLF: the CR ended the line */
            r->last_cr = false;
            continue;
        }
        r->last_cr = c == '\r';
        if (c == '\n' || c == '\r') {
            if (!take_line(r, error)) return false;
            continue;
        }
        if (r->line->len >= REPLY_MAX_EVENT) return malformed(r, error, _("an event is larger than 8 MiB"));
        g_string_append_c(r->line, c);
    }
    return true;
}

bool hyocr_remote_reply_end(hyocr_remote_reply *r, GError **error)
{
    /* an event not closed by a blank line is dropped, as a browser drops it */
    if (r->done) return true;
    if (r->finish_reason) {   /* finished, without the [DONE] some servers leave out */
        r->done = true;
        return true;
    }
    g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_DROPPED,
                _("the connection to %s closed before the answer was complete (after %d pieces of text)"), r->server,
                r->n_chunks);
    return false;
}

/* ---- an error reply's body --------------------------------------------------------------- */

char *hyocr_remote_error_message(const char *body, size_t len, char **code)
{
    if (code) *code = NULL;
    g_autoptr(JsonNode) root = len ? hyocr_json_parse(body, len, REPLY_MAX_DEPTH, NULL, NULL) : NULL;
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) return NULL;
    JsonObject *o = json_node_get_object(root);
    JsonNode *e = json_object_get_member(o, "error");
    if (e && JSON_NODE_HOLDS_OBJECT(e)) {
        JsonObject *eo = json_node_get_object(e);
        if (code && hyocr_json_str(eo, "code")) *code = g_strdup(hyocr_json_str(eo, "code"));
        return g_strdup(hyocr_json_str(eo, "message"));
    }
    if (e && JSON_NODE_HOLDS_VALUE(e) && json_node_get_value_type(e) == G_TYPE_STRING)
        return g_strdup(json_node_get_string(e));
    const char *m = hyocr_json_str(o, "message");
    if (!m) m = hyocr_json_str(o, "detail");
    return g_strdup(m);
}
