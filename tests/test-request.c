/* hyocr serve's request parser and error mapping without a server: every way a
 * /v1/chat/completions body can be malformed is a 400 with the field at fault in
 * "param" and a message that says what is wrong (test-serve.sh checks the HTTP side of
 * a few of them; this checks them all, message by message), and the engine's errors
 * become the API's statuses. */
#include "server.h"
#include "error.h"
#include "stop.h"
#include <glib/gstdio.h>
#include <string.h>

/* A user message holding IMAGE, then text; "%s" in a case's body stands for it. */
#define IMAGE_PART "{\"type\": \"image_url\", \"image_url\": {\"url\": \"data:image/png;base64,AAAA\"}}"
#define USER       "{\"role\": \"user\", \"content\": [" IMAGE_PART ", {\"type\": \"text\", \"text\": \"x\"}]}"

typedef struct {
    const char *body;      /* a JSON object's members after "messages"; or a whole body when it starts with '!' */
    const char *param;     /* NULL: none */
    const char *message;   /* a regular expression the message must match */
} bad_case;

static const bad_case bad_cases[] = {
    /* the body */
    { "!", NULL, "^the request body is not valid JSON: " },
    { "![1]", NULL, "^the request body must be a JSON object$" },
    { "!{\"model\": 5, \"messages\": [" USER "]}", "model", "^\"model\" must be a string$" },
    /* messages */
    { "!{}", "messages", "^\"messages\" must be a non-empty list$" },
    { "!{\"messages\": []}", "messages", "^\"messages\" must be a non-empty list$" },
    { "!{\"messages\": {}}", "messages", "^\"messages\" must be a non-empty list$" },
    { "!{\"messages\": [1]}", "messages", "^every message must be an object$" },
    { "!{\"messages\": [{\"content\": \"x\"}]}", "messages", "^every message needs a \"role\" string$" },
    { "!{\"messages\": [{\"role\": 3, \"content\": \"x\"}]}", "messages", "^every message needs a \"role\" string$" },
    { "!{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}", "messages", "^unknown message role \"robot\"$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "messages",
      "^a message's content must be a string or a list of parts$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [7]}]}", "messages", "^a content part must be an object$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}", "messages",
      "^a text part needs a \"text\" string$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_audio\"}]}]}", "messages",
      "^content parts of type \"input_audio\" are not supported \\(text and image_url are\\)$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"text\": \"x\"}]}]}", "messages",
      "^content parts of type \"\\(none\\)\" are not supported" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}", "messages",
      "^an image_url part needs an \"image_url\": \\{\"url\": …\\}$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {\"url\": 4}}]}]}",
      "messages", "^an image_url part needs an \"image_url\"" },
    { "!{\"messages\": [{\"role\": \"system\", \"content\": [" IMAGE_PART "]}]}", "messages",
      "^images are read from user messages only$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": \"\\udc00 lone\"}]}", NULL,
      "^the request body is not valid JSON: an escape JSON does not have .*surrogates in pairs" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": \"\xc3\x28\"}]}", NULL,
      "^the request body is not valid JSON: JSON data must be UTF-8 encoded$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": \"no image\"}]}", "messages",
      "^the request has no image: hyocr reads the text in an image; add a user content part" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [" IMAGE_PART ", " IMAGE_PART ", " IMAGE_PART "]}]}",
      "messages", "^the request has 3 images: hyocr reads one image per request$" },
    /* the image's URL */
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"data:image/png;base64,AAA\"}}]}]}", "messages",
      "^the image's data: URI is not valid base64: 3 characters, not a multiple of 4$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"data:image/png;base64,\"}}]}]}", "messages",
      "^the image's data: URI is not valid base64: 0 characters" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"data:image/png;base64,AA\\nA\"}}]}]}", "messages",
      "^the image's data: URI is not valid base64: byte 2 of its data is '\\(a control byte\\)'$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"data:image/png;base64\"}}]}]}", "messages", "^the image's data: URI has no ',' before its data$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"data:image/png,%zz\"}}]}]}", "messages", "^the image's data: URI has a malformed %-escape$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"ftp://example.com/a.png\"}}]}]}", "messages",
      "^an image_url must be a data: URI \\(or file:// where allowed\\)$" },
    { "!{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
      "{\"url\": \"http://example.com/a.png\"}}]}]}", "messages",
      "^remote image URLs are not fetched: send the image in the request as a data: URI" },
    /* parameters */
    { "\"max_tokens\": \"12\"", "max_tokens", "^\"max_tokens\" must be a number$" },
    { "\"max_tokens\": 1.5", "max_tokens", "^\"max_tokens\" must be an integer$" },
    { "\"max_completion_tokens\": -3", "max_completion_tokens", "^\"max_completion_tokens\" must be at least 1 \\(got -3\\)$" },
    { "\"max_tokens\": 3000000000", "max_tokens", "^\"max_tokens\" must be at least 1 \\(got 3e\\+09\\)$" },
    { "\"temperature\": -0.5", "temperature", "^\"temperature\" must be 0 or more \\(got -0.5\\)$" },
    { "\"top_p\": 0", "top_p", "^\"top_p\" must be in \\(0, 1\\] \\(got 0\\)$" },
    { "\"top_p\": 1.5", "top_p", "^\"top_p\" must be in \\(0, 1\\] \\(got 1.5\\)$" },
    { "\"top_k\": -2", "top_k", "^\"top_k\" must be -1, 0 \\(off\\) or a positive count \\(got -2\\)$" },
    { "\"repetition_penalty\": 0", "repetition_penalty", "^\"repetition_penalty\" must be above 0 \\(got 0\\)$" },
    { "\"seed\": 2.5", "seed", "^\"seed\" must be an integer$" },
    { "\"seed\": [1]", "seed", "^\"seed\" must be a number$" },
    { "\"n\": 2", "n", "^\"n\" must be 1: hyocr returns one answer per request$" },
    { "\"stream\": \"yes\"", "stream", "^\"stream\" must be true or false$" },
    { "\"ignore_eos\": 1", "ignore_eos", "^\"ignore_eos\" must be true or false$" },
    { "\"stream_options\": 5", "stream_options", "^\"stream_options\" must be an object$" },
    { "\"stream_options\": {\"include_usage\": \"y\"}", "include_usage", "^\"include_usage\" must be true or false$" },
    { "\"include_stop_str_in_output\": 0", "include_stop_str_in_output",
      "^\"include_stop_str_in_output\" must be true or false$" },
    { "\"stop\": 5", "stop", "^\"stop\" must be a string or a list of strings$" },
    { "\"stop\": [\"a\", 5]", "stop", "^\"stop\" must be a string or a list of strings$" },
    { "\"stop_token_ids\": [1, -2]", "stop_token_ids", "^\"stop_token_ids\" must be a list of token ids$" },
    { "\"stop_token_ids\": [1.5]", "stop_token_ids", "^\"stop_token_ids\" must be a list of token ids$" },
    { "\"stop_token_ids\": 7", "stop_token_ids", "^\"stop_token_ids\" must be a list of token ids$" },
    { "\"stop_token_ids\": [3000000000]", "stop_token_ids", "^\"stop_token_ids\" must be a list of token ids$" },
    { "\"logprobs\": 1", "logprobs", "^\"logprobs\" must be true or false$" },
    { "\"logprobs\": true, \"top_logprobs\": -1", "top_logprobs", "^\"top_logprobs\" must be between 0 and 20 \\(got -1\\)$" },
    { "\"return_tokens_as_token_ids\": \"no\"", "return_tokens_as_token_ids",
      "^\"return_tokens_as_token_ids\" must be true or false$" },
    { "\"best_of\": 2", "best_of", "^\"best_of\" is not supported: hyocr returns one answer per request$" },
    { "\"skip_special_tokens\": false", "skip_special_tokens", "^\"skip_special_tokens\" is not supported: " },
    { "\"response_format\": {\"type\": \"json_object\"}", "response_format",
      "^\"response_format\" is not supported: hyocr does not constrain its output" },
};

static char *case_body(const bad_case *c)
{
    if (c->body[0] == '!') return g_strdup(c->body + 1);
    return g_strdup_printf("{\"messages\": [" USER "], %s}", c->body);
}

static void test_bad(void)
{
    hyocr_request_limits lim = { .max_body = 1 << 20 };
    for (size_t i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        const bad_case *c = &bad_cases[i];
        g_autofree char *body = case_body(c);
        hyocr_chat_request r;
        hyocr_api_error e = { 0 };
        gboolean ok = hyocr_chat_request_parse(&r, body, strlen(body), &lim, &e);
        g_autofree char *shown = g_strescape(body, NULL);   /* a case's body need not be UTF-8 */
        g_test_message("%s → %u %s: %s", shown, e.status, e.param ? e.param : "(none)", e.message);
        g_assert_false(ok);
        g_assert_cmpuint(e.status, ==, 400);
        g_assert_cmpstr(e.param, ==, c->param);
        g_assert_cmpstr(e.type, ==, "invalid_request_error");
        if (!g_regex_match_simple(c->message, e.message, 0, 0))
            g_error("case %zu: message “%s” does not match /%s/", i, e.message, c->message);
        hyocr_chat_request_clear(&r);
        hyocr_api_error_clear(&e);
    }
}

/* More stop strings and ids than a request may hold: counted before any is read. */
static void test_limits(void)
{
    hyocr_request_limits lim = { .max_body = 1 << 20 };
    GString *ids = g_string_new("\"stop_token_ids\": [");
    for (int i = 0; i <= HYOCR_STOP_MAX_TOKENS; i++) g_string_append_printf(ids, "%s%d", i ? ", " : "", i);
    g_string_append_c(ids, ']');
    g_autofree char *body = g_strdup_printf("{\"messages\": [" USER "], %s}", ids->str);
    g_string_free(ids, TRUE);
    hyocr_chat_request r;
    hyocr_api_error e = { 0 };
    g_assert_false(hyocr_chat_request_parse(&r, body, strlen(body), &lim, &e));
    g_assert_cmpstr(e.param, ==, "stop_token_ids");
    g_autofree char *want = g_strdup_printf("\"stop_token_ids\" has %d ids: at most %d are taken",
                                            HYOCR_STOP_MAX_TOKENS + 1, HYOCR_STOP_MAX_TOKENS);
    g_assert_cmpstr(e.message, ==, want);
    hyocr_chat_request_clear(&r);
    hyocr_api_error_clear(&e);
}

/* file:// where the server reads none, a folder, and a file over the body limit. */
static void test_file_urls(void)
{
    g_autofree char *dir = g_dir_make_tmp("hyocr-request-XXXXXX", NULL);
    g_autofree char *sub = g_build_filename(dir, "sub", NULL);
    g_autofree char *big = g_build_filename(dir, "big.png", NULL);
    g_assert_cmpint(g_mkdir(sub, 0700), ==, 0);
    g_assert_true(g_file_set_contents(big, "0123456789abcdef", 16, NULL));
    struct {
        const char *dir, *path, *message;
    } cases[] = {
        { NULL, big, "^file:// images are not read: the server was started without --allowed-local-media-path$" },
        { dir, sub, "/sub is not a regular file of at most 8 bytes$" },
        { dir, big, "/big.png is not a regular file of at most 8 bytes$" },
        { dir, "/nonexistent/x.png", "^/nonexistent/x.png: no such file$" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        hyocr_request_limits lim = { .max_body = 8, .allowed_media_dir = cases[i].dir };
        g_autofree char *uri = g_filename_to_uri(cases[i].path, NULL, NULL);
        g_autofree char *body = g_strdup_printf("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
                                                "\"image_url\", \"image_url\": {\"url\": \"%s\"}}]}]}", uri);
        hyocr_chat_request r;
        hyocr_api_error e = { 0 };
        g_assert_false(hyocr_chat_request_parse(&r, body, strlen(body), &lim, &e));
        g_test_message("%s → %s", uri, e.message);
        g_assert_cmpuint(e.status, ==, 400);
        g_assert_cmpstr(e.param, ==, "messages");
        if (!g_regex_match_simple(cases[i].message, e.message, 0, 0))
            g_error("file case %zu: message “%s” does not match /%s/", i, e.message, cases[i].message);
        hyocr_chat_request_clear(&r);
        hyocr_api_error_clear(&e);
    }
    g_remove(big);
    g_rmdir(sub);
    g_rmdir(dir);
}

/* A well-formed request: what the parser hands on. */
static void test_good(void)
{
    hyocr_request_limits lim = { .max_body = 1 << 20 };
    const char *body = "{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"\"}, " USER "], "
                       "\"max_completion_tokens\": 7, \"max_tokens\": 99, \"temperature\": 0.5, \"top_p\": 0.9, "
                       "\"top_k\": -1, \"seed\": 1e3, \"stop\": \"END\", \"stop_token_ids\": [5], "
                       "\"stream\": true, \"stream_options\": {\"include_usage\": true}, \"logprobs\": true, "
                       "\"top_logprobs\": 2, \"frequency_penalty\": 0, \"unknown\": {\"x\": 1}}";
    hyocr_chat_request r;
    hyocr_api_error e = { 0 };
    g_assert_true(hyocr_chat_request_parse(&r, body, strlen(body), &lim, &e));
    g_assert_cmpstr(r.model, ==, "m");
    g_assert_cmpint(r.n_msgs, ==, 2);
    g_assert_cmpint(r.n_images, ==, 1);
    g_assert_cmpuint(g_bytes_get_size(r.image), ==, 3);   /* "AAAA" */
    g_assert_cmpint(r.max_tokens, ==, 7);                 /* max_completion_tokens first, as vLLM */
    g_assert_cmpfloat(r.temperature, ==, 0.5);
    g_assert_cmpfloat(r.top_p, ==, 0.9);
    g_assert_cmpint(r.top_k, ==, 0);
    g_assert_true(r.has_seed);
    g_assert_cmpuint(r.seed, ==, 1000);
    g_assert_cmpstr(r.stop[0], ==, "END");
    g_assert_null(r.stop[1]);
    g_assert_cmpint(r.n_stop_token_ids, ==, 1);
    g_assert_cmpint(r.stop_token_ids[0], ==, 5);
    g_assert_true(r.stream && r.include_usage && r.logprobs);
    g_assert_cmpint(r.top_logprobs, ==, 2);
    hyocr_chat_request_clear(&r);
    g_assert_null(e.message);
}

/* The parsed image opened as a document of one page; bytes that are no image are a 400 in the
 * API's words (test-serve.sh sends a PDF of 3 pages and an encrypted one). */
static void test_open_image(void)
{
    hyocr_request_limits lim = { .max_body = 1 << 20 };
    g_autofree char *png_path = g_build_filename(HYOCR_TEST_DATA, "images", "tiny_40x30.png", NULL);
    gchar *png = NULL;
    gsize png_len = 0;
    g_assert_true(g_file_get_contents(png_path, &png, &png_len, NULL));
    g_autofree char *png_b64 = g_base64_encode((const guchar *)png, png_len);
    g_free(png);
    g_autofree char *junk_b64 = g_base64_encode((const guchar *)"certainly not an image", 22);
    const char *urls[] = { png_b64, junk_b64 };
    for (int i = 0; i < 2; i++) {
        g_autofree char *body = g_strdup_printf("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
                                                "\"image_url\", \"image_url\": {\"url\": \"data:image/png;base64,%s\"}}]}]}",
                                                urls[i]);
        hyocr_chat_request r;
        hyocr_api_error e = { 0 };
        g_assert_true(hyocr_chat_request_parse(&r, body, strlen(body), &lim, &e));
        bool opened = hyocr_chat_request_open_image(&r, &e);
        if (i == 0) {
            g_assert_true(opened);
            g_assert_cmpint(hyocr_document_n_pages(r.document), ==, 1);
            g_assert_cmpstr(hyocr_document_name(r.document), ==, "image");
        } else {
            g_assert_false(opened);
            g_assert_cmpuint(e.status, ==, 400);
            g_assert_cmpstr(e.code, ==, "invalid_image");
            g_assert_true(g_str_has_prefix(e.message, "the image could not be read: image: not a file hyocr can read"));
        }
        hyocr_chat_request_clear(&r);
        hyocr_api_error_clear(&e);
    }
}

/* The engine's errors in the API's terms: what the client sent is a 400, a full engine or
 * one shutting down a 503 the client may retry, anything else the server's 500. */
static void test_engine_errors(void)
{
    struct {
        GQuark  domain;
        int     code;
        guint   status;
        const char *api_code, *param, *message;
        int     retry_after;
    } cases[] = {
        { HYOCR_ERROR, HYOCR_ERROR_IMAGE, 400, "invalid_image", "messages", "the image could not be read: bad", 0 },
        { HYOCR_ERROR, HYOCR_ERROR_PASSWORD, 400, "invalid_image", "messages",
          "the image could not be read: bad; a request cannot carry a password: send the document decrypted", 0 },
        { HYOCR_ERROR, HYOCR_ERROR_PROMPT, 400, NULL, "messages", "bad", 0 },
        { HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, 503, NULL, NULL, "bad", 1 },
        { HYOCR_ERROR, HYOCR_ERROR_BUSY, 503, "queue_full", NULL, "bad", 1 },
        { HYOCR_ERROR, HYOCR_ERROR_CANCELLED, 503, NULL, NULL, "bad", 1 },
        { HYOCR_ERROR, HYOCR_ERROR_IO, 500, NULL, NULL, "bad", 0 },
        { G_IO_ERROR, G_IO_ERROR_FAILED, 500, NULL, NULL, "bad", 0 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = g_error_new_literal(cases[i].domain, cases[i].code, "bad");
        hyocr_api_error e = { 0 };
        hyocr_api_error_from_engine(&e, err);
        g_test_message("case %zu: %u %s", i, e.status, e.message);
        g_assert_cmpuint(e.status, ==, cases[i].status);
        g_assert_cmpstr(e.code, ==, cases[i].api_code);
        g_assert_cmpstr(e.param, ==, cases[i].param);
        g_assert_cmpstr(e.message, ==, cases[i].message);
        g_assert_cmpint(e.retry_after, ==, cases[i].retry_after);
        /* OpenAI's shape, always these four members */
        g_autofree char *json = hyocr_api_error_json(&e);
        g_autoptr(JsonParser) p = json_parser_new();
        g_assert_true(json_parser_load_from_data(p, json, -1, NULL));
        JsonObject *o = json_object_get_object_member(json_node_get_object(json_parser_get_root(p)), "error");
        g_assert_cmpuint(json_object_get_size(o), ==, 4);
        g_assert_cmpstr(json_object_get_string_member(o, "message"), ==, cases[i].message);
        g_assert_true(json_object_has_member(o, "type") && json_object_has_member(o, "param") &&
                      json_object_has_member(o, "code"));
        hyocr_api_error_clear(&e);
    }
}

/* The Host rule (hosts.c) beyond what test-serve can reach over loopback: a server listening
 * beyond this machine, with and without --allowed-hosts, and the forms a Host value takes. */
static void test_hosts(void)
{
    static const struct {
        const char *value;
        bool        loopback, listed, want;
    } cases[] = {
        { NULL, true, false, true },                 /* HTTP/1.0: no Host (no browser sends none) */
        { "localhost", true, false, true },          { "localhost:8000", true, false, true },
        { "LocalHost.", true, false, true },         { "a.b.localhost:1", true, false, true },
        { "127.0.0.1:8000", true, false, true },     { "10.1.2.3", true, false, true },
        { "[::1]:8000", true, false, true },         { "[fe80::1]", true, false, true },
        { "::1", true, false, true },                /* without brackets: an address, whole */
        { "localhost.evil.test", true, false, false }, { "evillocalhost", true, false, false },
        { "rebound.test:8000", true, false, false }, { "", true, false, false },
        { "[::1", true, false, false },              { "127.0.0.1.evil.test", true, false, false },
        { "ocr.test:443", true, true, true },        { "OCR.TEST.", true, true, true },
        { "other.test", true, true, false },
        /* beyond loopback: any Host, unless --allowed-hosts is given; then the same rule */
        { "rebound.test", false, false, true },      { "rebound.test", false, true, false },
        { "ocr.test", false, true, true },           { "192.168.1.5:8000", false, true, true },
    };
    char *list[] = { "ocr.test", NULL };
    hyocr_server_options opt = { 0 };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        opt.allowed_hosts = cases[i].listed ? list : NULL;
        if (hyocr_host_allowed(&opt, cases[i].loopback, cases[i].value) != cases[i].want)
            g_error("Host “%s” (%s, %s): expected %s", cases[i].value ? cases[i].value : "(none)",
                    cases[i].loopback ? "loopback" : "beyond", cases[i].listed ? "listed" : "no list",
                    cases[i].want ? "answered" : "refused");
    }
    char *any[] = { "*", NULL };
    opt.allowed_hosts = any;
    g_assert_true(hyocr_host_allowed(&opt, true, "rebound.test"));
    g_assert_true(hyocr_host_allowed(&opt, false, "rebound.test"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/request/bad", test_bad);
    g_test_add_func("/request/limits", test_limits);
    g_test_add_func("/request/file-urls", test_file_urls);
    g_test_add_func("/request/good", test_good);
    g_test_add_func("/request/open-image", test_open_image);
    g_test_add_func("/request/engine-errors", test_engine_errors);
    g_test_add_func("/request/hosts", test_hosts);
    return g_test_run();
}
