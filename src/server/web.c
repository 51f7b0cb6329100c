/* hyocr serve — the web page: GET / and /web/… serve one self-contained page (HTML, CSS
 * and JavaScript compiled into the binary as GResources, src/server/web/), and /web/api/…
 * give it what the engine knows, so no rule lives twice: the task list and the official
 * prompts (prompt.c), the spotting lines of an answer (spotting.c), a parse-document
 * answer as HTML (export.c's Markdown), and the server's state. The answers themselves
 * come from /v1/chat/completions, streamed, as any client gets them.
 *
 * Every response of the page carries a Content-Security-Policy that allows this origin
 * only: nothing is loaded from elsewhere, and no inline script runs (the rendered
 * answers, whose HTML is the model's, are shown in a sandboxed frame on top of it). */
#include "server.h"
#include "export.h"
#include "json.h"
#include "spotting.h"
#include "hyocr-build-config.h"
#include "hyocr-web-resources.h"
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define RESOURCE_PREFIX "/io/github/hyocr/web/"
#define API_MAX_DEPTH   8

static const char csp[] = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
                          "connect-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'; "
                          "form-action 'none'; frame-ancestors 'none'";

static void page_headers(SoupServerMessage *msg)
{
    SoupMessageHeaders *h = soup_server_message_get_response_headers(msg);
    soup_message_headers_replace(h, "Content-Security-Policy", csp);
    soup_message_headers_replace(h, "X-Content-Type-Options", "nosniff");
    soup_message_headers_replace(h, "Referrer-Policy", "no-referrer");
    soup_message_headers_replace(h, "Cache-Control", "no-cache");
}

static void reply_error(SoupServerMessage *msg, guint status, const char *param, const char *text)
{
    hyocr_api_error e = { 0 };
    hyocr_api_error_set(&e, status, param, "%s", text);
    if (status == 503) e.retry_after = 1;
    hyocr_api_error_reply(msg, &e);
    hyocr_api_error_clear(&e);
    page_headers(msg);
}

static void reply_json(SoupServerMessage *msg, JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    char *json = hyocr_json_to_data(root, false);
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_TAKE, json, strlen(json));
    page_headers(msg);
}

/* ---- the page's files ------------------------------------------------------------------------ */

static const char *content_type(const char *name)
{
    if (g_str_has_suffix(name, ".html")) return "text/html; charset=utf-8";
    if (g_str_has_suffix(name, ".js")) return "text/javascript; charset=utf-8";
    if (g_str_has_suffix(name, ".css")) return "text/css; charset=utf-8";
    if (g_str_has_suffix(name, ".svg")) return "image/svg+xml";
    return "application/octet-stream";
}

/* A file name of the page: letters, digits, '-' and one '.'; nothing that climbs. */
static bool plain_name(const char *name)
{
    int dots = 0;
    for (const char *p = name; *p; p++) {
        if (*p == '.') dots++;
        else if (!g_ascii_isalnum(*p) && *p != '-') return false;
    }
    return *name && dots == 1;
}

/* The resource is looked up through its own handle: in a static library, an object file
 * only registered by a constructor would be left out by the linker. */
static void serve_file(SoupServerMessage *msg, const char *name)
{
    g_autofree char *path = g_strconcat(RESOURCE_PREFIX, name, NULL);
    g_autoptr(GBytes) data = plain_name(name) ? g_resource_lookup_data(hyocr_web_get_resource(), path, 0, NULL) : NULL;
    if (!data) {
        g_autofree char *text = g_strdup_printf(_("the page has no file %s"), name);
        reply_error(msg, 404, NULL, text);
        return;
    }
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, content_type(name), SOUP_MEMORY_COPY, g_bytes_get_data(data, NULL),
                                     g_bytes_get_size(data));
    page_headers(msg);
}

/* ---- /web/api/… ------------------------------------------------------------------------------- */

static hyocr_model_version version_of(hyocr_server *s)
{
    hyocr_engine *eng = hyocr_server_engine(s);
    return eng ? hyocr_engine_config(eng)->version : HYOCR_MODEL_VERSION_1_5;
}

/* What a task needs from the user beyond the image: "fields", "prompt", or nothing. */
static const char *task_input(hyocr_task t)
{
    return t == HYOCR_TASK_EXTRACT_FIELDS ? "fields" : t == HYOCR_TASK_CUSTOM ? "prompt" : NULL;
}

/* {"tasks": [{"name": "recognize", "prompt": "提取图中的文字。", "markdown": false, "input": null}, …]}
 * in the engine's order; markdown: the answer is shown rendered too. */
static void on_tasks(hyocr_server *s, SoupServerMessage *msg)
{
    if (!hyocr_server_method_is(msg, "GET")) return;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "tasks");
    json_builder_begin_array(b);
    for (int t = 0; t < HYOCR_TASK_COUNT; t++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "name");
        json_builder_add_string_value(b, hyocr_task_name((hyocr_task)t));
        const char *input = task_input((hyocr_task)t);
        g_autofree char *prompt = input ? NULL : hyocr_task_prompt((hyocr_task)t, version_of(s), NULL, NULL, NULL);
        json_builder_set_member_name(b, "prompt");
        if (prompt) json_builder_add_string_value(b, prompt);
        else json_builder_add_null_value(b);
        json_builder_set_member_name(b, "markdown");
        json_builder_add_boolean_value(b, hyocr_export_is_markdown((hyocr_task)t));
        json_builder_set_member_name(b, "input");
        if (input) json_builder_add_string_value(b, input);
        else json_builder_add_null_value(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    reply_json(msg, b);
}

static JsonObject *body_object(SoupServerMessage *msg, GBytes *body)
{
    gsize len = 0;
    const char *data = body ? g_bytes_get_data(body, &len) : NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) root = hyocr_json_parse(data ? data : "", len, API_MAX_DEPTH, NULL, &err);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_autofree char *text = root ? g_strdup(_("the request body must be a JSON object"))
                                     : g_strdup_printf(_("the request body is not valid JSON: %s"), err->message);
        reply_error(msg, 400, NULL, text);
        return NULL;
    }
    return json_object_ref(json_node_get_object(root));
}

/* The strings of a JSON array member, or NULL (absent, or not all strings). */
static GStrv string_list(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || !JSON_NODE_HOLDS_ARRAY(n)) return NULL;
    JsonArray *a = json_node_get_array(n);
    g_autoptr(GStrvBuilder) sb = g_strv_builder_new();
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING) return NULL;
        g_strv_builder_add(sb, json_node_get_string(e));
    }
    return g_strv_builder_end(sb);
}

/* {"task": "extract_fields", "fields": ["name", "date"]} or {"task": "custom", "prompt": "…"}
 * → {"prompt": "…"}: the text the engine sends for that task, or its error (400). */
static void on_prompt(hyocr_server *s, SoupServerMessage *msg, GBytes *body)
{
    if (!hyocr_server_method_is(msg, "POST")) return;
    g_autoptr(JsonObject) o = body_object(msg, body);
    if (!o) return;
    const char *name = hyocr_json_str(o, "task");
    hyocr_task task;
    if (!name || !hyocr_task_from_name(name, &task)) {
        g_autofree char *text = g_strdup_printf(_("unknown task “%s”"), name ? name : "");
        reply_error(msg, 400, "task", text);
        return;
    }
    g_auto(GStrv) fields = string_list(o, "fields");
    const char *custom = hyocr_json_str(o, "prompt");
    g_autoptr(GError) err = NULL;
    g_autofree char *prompt = hyocr_task_prompt(task, version_of(s), (const char *const *)fields, custom, &err);
    if (!prompt) {
        reply_error(msg, 400, task == HYOCR_TASK_CUSTOM ? "prompt" : "fields", err->message);
        return;
    }
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "prompt");
    json_builder_add_string_value(b, prompt);
    json_builder_end_object(b);
    reply_json(msg, b);
}

static char *body_text(GBytes *body)
{
    gsize len = 0;
    const char *data = body ? g_bytes_get_data(body, &len) : NULL;
    return g_utf8_make_valid(data ? data : "", (gssize)len);
}

/* An answer (the body, as text) → {"lines": [{"text": "…", "box": [x1, y1, x2, y2]}, …]},
 * boxes in the model's 0…1000 scale of the image; an unfinished last item is left out. */
static void on_spotting(SoupServerMessage *msg, GBytes *body)
{
    if (!hyocr_server_method_is(msg, "POST")) return;
    g_autofree char *text = body_text(body);
    g_autoptr(GPtrArray) lines = hyocr_spot_parse(text);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "lines");
    hyocr_spot_lines_add_json(b, lines);
    json_builder_end_object(b);
    reply_json(msg, b);
}

/* A parse-document answer (the body) → the HTML fragment the .html export writes for it. */
static void on_render(SoupServerMessage *msg, GBytes *body)
{
    if (!hyocr_server_method_is(msg, "POST")) return;
    g_autofree char *text = body_text(body);
    char *html = hyocr_export_markdown_html(text);
    if (!html) {
        reply_error(msg, 501, NULL, _("this build cannot render Markdown (it was built without md4c)"));
        return;
    }
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "text/html; charset=utf-8", SOUP_MEMORY_TAKE, html, strlen(html));
    page_headers(msg);
}

/* {"state": "ready", "model", "backend", "running", "waiting", "max_queue", "max_request_size",
 * "memory_used", "memory_total"} — the numbers /metrics has, for the page's status line, and
 * the body limit, so that the page refuses a file too large before reading it. */
static void on_status(hyocr_server *s, SoupServerMessage *msg)
{
    if (!hyocr_server_method_is(msg, "GET")) return;
    hyocr_engine *eng = hyocr_server_engine(s);
    hyocr_engine_stats st = { 0 };
    hyocr_mem_info mi = { 0 };
    if (eng) {
        hyocr_engine_get_stats(eng, &st);
        hyocr_engine_mem_info(eng, &mi);
    }
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "state");
    json_builder_add_string_value(b, hyocr_server_state_name(s));
    json_builder_set_member_name(b, "version");
    json_builder_add_string_value(b, HYOCR_VERSION);
    json_builder_set_member_name(b, "model");
    json_builder_add_string_value(b, hyocr_server_model_name(s));
    json_builder_set_member_name(b, "backend");
    if (eng) json_builder_add_string_value(b, hyocr_engine_backend_name(eng));
    else json_builder_add_null_value(b);
    json_builder_set_member_name(b, "running");
    json_builder_add_int_value(b, st.running);
    json_builder_set_member_name(b, "waiting");
    json_builder_add_int_value(b, st.waiting);
    json_builder_set_member_name(b, "max_queue");
    json_builder_add_int_value(b, hyocr_server_max_queue(s));
    json_builder_set_member_name(b, "max_request_size");
    json_builder_add_int_value(b, hyocr_server_max_request_size(s));
    json_builder_set_member_name(b, "memory_used");
    json_builder_add_int_value(b, hyocr_metrics_memory_used(&mi));
    json_builder_set_member_name(b, "memory_total");
    json_builder_add_int_value(b, mi.total);
    json_builder_end_object(b);
    reply_json(msg, b);
}

/* ---- routing ----------------------------------------------------------------------------------- */

bool hyocr_web_route(hyocr_server *s, SoupServerMessage *msg, const char *path, GBytes *body)
{
    if (strcmp(path, "/") != 0 && !g_str_has_prefix(path, "/web/")) return false;
    if (!strcmp(path, "/")) {
        if (hyocr_server_method_is(msg, "GET")) serve_file(msg, "index.html");
    } else if (!strcmp(path, "/web/api/tasks")) {
        on_tasks(s, msg);
    } else if (!strcmp(path, "/web/api/prompt")) {
        on_prompt(s, msg, body);
    } else if (!strcmp(path, "/web/api/spotting")) {
        on_spotting(msg, body);
    } else if (!strcmp(path, "/web/api/render")) {
        on_render(msg, body);
    } else if (!strcmp(path, "/web/api/status")) {
        on_status(s, msg);
    } else if (hyocr_server_method_is(msg, "GET")) {
        serve_file(msg, path + strlen("/web/"));
    }
    return true;
}
