/* Tests for reading an OpenAI-compatible server's reply (remote-reply.c): the
 * event stream split anywhere reads the same; vLLM's extra fields are ignored;
 * every malformed reply is refused with the message that says what. */
#include "remote-reply.h"
#include "remote.h"
#include "error.h"

#include <string.h>

#define SERVER "http://gpu:8000"

typedef struct {
    GString *pieces;   /* "piece|" per callback */
    int      n_ids, n_lps;
} seen;

static void on_piece(const char *piece, size_t len, const int32_t *ids, int n_ids, const hyocr_token_logprobs *lps,
                     int n_lps, void *data)
{
    seen *s = data;
    g_string_append_len(s->pieces, piece, (gssize)len);
    g_string_append_c(s->pieces, '|');
    for (int i = 0; i < n_ids; i++) g_assert_cmpint(ids[i], >=, 0);
    for (int i = 0; i < n_lps; i++) g_assert_cmpint(lps[i].n_top, <=, HYOCR_TOP_LOGPROBS_MAX);
    s->n_ids += n_ids;
    s->n_lps += n_lps;
}

/* Feeds text in pieces of `step` bytes (0: whole), then the end. */
static bool feed(hyocr_remote_reply *r, const char *text, size_t step, GError **error)
{
    size_t len = strlen(text);
    if (!step) step = len ? len : 1;
    for (size_t i = 0; i < len; i += step)
        if (!hyocr_remote_reply_feed(r, text + i, MIN(step, len - i), error)) return false;
    return hyocr_remote_reply_end(r, error);
}

/* vLLM's stream, with the fields it adds, CRLF and CR line ends, a comment, a BOM, a
 * data field split over two lines, token ids, a usage chunk, [DONE]. */
static const char vllm_stream[] =
    "\xEF\xBB\xBF"
    ": ping\r\n\r\n"
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
    "\"assistant\",\"content\":\"\",\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"你好\"},\"token_ids\":[5,6],\"stop_reason\":null}]}\r\r"
    "data: {\"choices\":[{\"index\":0,\n"
    "data: \"delta\":{\"content\":\" world\"},\"token_ids\":[7]}]}\r\n\r\n"
    "event: message\nid: 3\nretry: 10\n"
    "data:{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other choice\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}\n\n"
    "data: [DONE]\n\n"
    "data: anything after [DONE] is not read\n\n";

static void test_stream_any_split(void)
{
    for (size_t step = 0; step <= 7; step++) {
        seen s = { g_string_new(NULL), 0, 0 };
        hyocr_remote_reply r;
        hyocr_remote_reply_init(&r, SERVER, on_piece, &s);
        g_autoptr(GError) err = NULL;
        g_assert_true(feed(&r, vllm_stream, step, &err));
        g_assert_no_error(err);
        g_assert_true(r.done);
        g_assert_cmpstr(r.text->str, ==, "你好 world");
        g_assert_cmpstr(s.pieces->str, ==, "|你好| world|");
        g_assert_cmpuint(r.token_ids->len, ==, 3);
        g_assert_cmpint(g_array_index(r.token_ids, int32_t, 2), ==, 7);
        g_assert_cmpint(s.n_ids, ==, 3);
        g_assert_cmpstr(r.finish_reason, ==, "length");
        g_assert_cmpint(r.prompt_tokens, ==, 12);
        g_assert_cmpint(r.completion_tokens, ==, 3);
        hyocr_remote_reply_clear(&r);
        g_string_free(s.pieces, TRUE);
    }
}

/* A token that decodes to a NUL byte comes as \u0000 (hyocr serve sends it so); an
 * escaped backslash before u0000 is text. */
static void test_nul_escape(void)
{
    static const char stream[] =
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\\u0000b\\\\u0000\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n";
    seen s = { g_string_new(NULL), 0, 0 };
    hyocr_remote_reply r;
    hyocr_remote_reply_init(&r, SERVER, on_piece, &s);
    g_autoptr(GError) err = NULL;
    g_assert_true(feed(&r, stream, 0, &err));
    g_assert_no_error(err);
    g_assert_cmpmem(r.text->str, r.text->len, "a\0b\\u0000", 9);
    g_assert_cmpmem(s.pieces->str, s.pieces->len, "a\0b\\u0000|", 10);
    hyocr_remote_reply_clear(&r);
    g_string_free(s.pieces, TRUE);
}

/* vLLM's logprobs with return_tokens_as_token_ids, a chunk's own token's; null where none came */
static void test_logprobs(void)
{
    static const char stream[] =
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null}]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"token_ids\":[5],\"logprobs\":{\"content\":["
        "{\"token\":\"token_id:5\",\"logprob\":-0.25,\"bytes\":[97],\"top_logprobs\":["
        "{\"token\":\"token_id:5\",\"logprob\":-0.25,\"bytes\":[97]},{\"token\":\"token_id:9\",\"logprob\":-2}]}]}}]}\n\n"
        "data: {\"choices\":[{\"delta\":{\"content\":\"\"},\"token_ids\":[120020],\"logprobs\":{\"content\":["
        "{\"token\":\"token_id:120020\",\"logprob\":-9999.0,\"top_logprobs\":[]}]},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n";
    seen s = { g_string_new(NULL), 0, 0 };
    hyocr_remote_reply r;
    hyocr_remote_reply_init(&r, SERVER, on_piece, &s);
    g_autoptr(GError) err = NULL;
    g_assert_true(feed(&r, stream, 3, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(r.logprobs->len, ==, 2);
    g_assert_cmpint(s.n_lps, ==, 2);
    const hyocr_token_logprobs *a = &g_array_index(r.logprobs, hyocr_token_logprobs, 0);
    g_assert_cmpfloat(a->logprob, ==, -0.25f);
    g_assert_cmpint(a->n_top, ==, 2);
    g_assert_cmpint(a->top[1].id, ==, 9);
    g_assert_cmpfloat(a->top[1].logprob, ==, -2.0f);
    const hyocr_token_logprobs *b = &g_array_index(r.logprobs, hyocr_token_logprobs, 1);
    g_assert_cmpfloat(b->logprob, ==, -9999.0f);
    g_assert_cmpint(b->n_top, ==, 0);
    hyocr_remote_reply_clear(&r);
    g_string_free(s.pieces, TRUE);
}

static void test_end_without_done(void)
{
    hyocr_remote_reply r;
    g_autoptr(GError) err = NULL;
    /* a finish without [DONE]: complete */
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    g_assert_true(feed(&r, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n", 0,
                       &err));
    g_assert_no_error(err);
    hyocr_remote_reply_clear(&r);
    /* neither: the connection closed early; an event without its blank line does not count */
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    g_assert_false(feed(&r, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
                            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n", 0, &err));
    g_assert_error(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_DROPPED);
    g_assert_cmpstr(err->message, ==,
                    "the connection to " SERVER " closed before the answer was complete (after 1 pieces of text)");
    hyocr_remote_reply_clear(&r);
}

typedef struct {
    const char *stream;
    int         code;
    const char *message;
} bad_case;

static const bad_case bad[] = {
    { "data: {not json\n\n", HYOCR_REMOTE_ERROR_MALFORMED, "an event is not JSON (1:1: Parse error: " },
    { "data: [1]\n\n", HYOCR_REMOTE_ERROR_MALFORMED, "an event is not a JSON object" },
    { "data: {}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, "an object has no \"choices\" list" },
    { "data: {\"choices\": {}}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, "an object has no \"choices\" list" },
    { "data: {\"choices\": [1]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, "a choice is not an object" },
    { "data: {\"choices\": [{\"delta\": 3}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "a choice's \"delta\" is not an object" },
    { "data: {\"choices\": [{\"delta\": {\"content\": 42}}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "\"content\" is not a string" },
    { "data: {\"choices\": [{\"delta\": {}, \"finish_reason\": 1}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "\"finish_reason\" is not a string" },
    { "data: {\"choices\": [{\"delta\": {}, \"token_ids\": \"x\"}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "\"token_ids\" is not a list of token ids" },
    { "data: {\"choices\": [{\"delta\": {}, \"token_ids\": [-1]}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "\"token_ids\" is not a list of token ids" },
    { "data: {\"choices\": [{\"delta\": {}, \"token_ids\": [1.5]}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "\"token_ids\" is not a list of token ids" },
    { "data: {\"choices\": [{\"delta\": {}, \"token_ids\": [4294967296]}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "\"token_ids\" is not a list of token ids" },
    { "data: {\"choices\": [], \"usage\": 3}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, "\"usage\" is not an object" },
    { "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": -1}}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "a token count in \"usage\" is not a count" },
    { "data: {\"choices\": [], \"usage\": {\"completion_tokens\": \"3\"}}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "a token count in \"usage\" is not a count" },
    { "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      "the stream ended ([DONE]) without a finish reason" },
    { "data: {\"error\": {\"message\": \"the model overflowed\", \"type\": \"server_error\"}}\n\n",
      HYOCR_REMOTE_ERROR_SERVER, "stopped the answer with an error: the model overflowed" },
    { "data: {\"error\": \"out of memory\"}\n\n", HYOCR_REMOTE_ERROR_SERVER,
      "stopped the answer with an error: out of memory" },
    { "data: {\"error\": {}}\n\n", HYOCR_REMOTE_ERROR_SERVER, "stopped the answer with an error: (no message)" },
#define BAD_LOGPROBS "\"logprobs\" is not a list of tokens named by id (token_id:N) with their log-probabilities"
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":[]}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":{}}}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED,
      BAD_LOGPROBS },
    /* a token named by its text: no id to give */
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"a\",\"logprob\":-1}]}}]}\n\n",
      HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"token_id:\",\"logprob\":-1}]}}]}"
      "\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"token_id:-3\",\"logprob\":-1}]}}]}"
      "\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"token_id:99999999999\","
      "\"logprob\":-1}]}}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"token_id:3\",\"logprob\":\"-1\"}]}}]}"
      "\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"token_id:3\",\"logprob\":-1,"
      "\"top_logprobs\":[{\"token\":\"token_id:4\"}]}]}}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
    /* more alternatives than any request asks for: not kept */
    { "data: {\"choices\":[{\"delta\":{},\"logprobs\":{\"content\":[{\"token\":\"token_id:3\",\"logprob\":-1,"
      "\"top_logprobs\":[" "{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},"
      "{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\","
      "\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":"
      "\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},"
      "{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\","
      "\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":"
      "\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},"
      "{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\",\"logprob\":-1},{\"token\":\"token_id:1\","
      "\"logprob\":-1}]}]}}]}\n\n", HYOCR_REMOTE_ERROR_MALFORMED, BAD_LOGPROBS },
};

static void test_malformed(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        for (size_t step = 0; step <= 1; step++) {
            hyocr_remote_reply r;
            hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
            g_autoptr(GError) err = NULL;
            g_assert_false(feed(&r, bad[i].stream, step, &err));
            g_assert_error(err, HYOCR_REMOTE_ERROR, bad[i].code);
            if (bad[i].message && !strstr(err->message, bad[i].message))
                g_error("case %zu: message lacks '%s': %s", i, bad[i].message, err->message);
            if (bad[i].code == HYOCR_REMOTE_ERROR_MALFORMED)
                g_assert_true(g_str_has_prefix(err->message,
                                               SERVER " sent an answer that is not an OpenAI chat completion: "));
            else
                g_assert_true(g_str_has_prefix(err->message, SERVER " stopped the answer with an error: "));
            hyocr_remote_reply_clear(&r);
        }
    }
}

/* A NUL byte inside a data line (the C string above stops before it). */
static void test_nul_byte(void)
{
    static const char s[] = "data: {\"choices\":[]}\0x\n\n";
    hyocr_remote_reply r;
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_remote_reply_feed(&r, s, sizeof s - 1, &err));
    g_assert_error(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MALFORMED);
    g_assert_nonnull(strstr(err->message, "an event holds a NUL byte"));
    hyocr_remote_reply_clear(&r);
}

static void test_limits(void)
{
    /* a line that never ends, past 8 MiB: refused, not kept */
    size_t n = (8u << 20) + 16;
    char *big = g_malloc(n);
    memcpy(big, "data: ", 6);
    memset(big + 6, 'x', n - 6);
    hyocr_remote_reply r;
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_remote_reply_feed(&r, big, n, &err));
    g_assert_nonnull(strstr(err->message, "an event is larger than 8 MiB"));
    hyocr_remote_reply_clear(&r);
    g_clear_error(&err);
    /* many data lines of one event, past 8 MiB together */
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    GString *s = g_string_new(NULL);
    while (s->len < (10u << 20)) g_string_append(s, "data: 0123456789012345678901234567890123456789\n");
    g_assert_false(hyocr_remote_reply_feed(&r, s->str, s->len, &err));
    g_assert_nonnull(strstr(err->message, "an event is larger than 8 MiB"));
    g_string_free(s, TRUE);
    hyocr_remote_reply_clear(&r);
    g_clear_error(&err);
    /* nesting: refused by the JSON door before json-glib recurses */
    GString *deep = g_string_new("data: {\"choices\":");
    for (int i = 0; i < 40; i++) g_string_append_c(deep, '[');
    for (int i = 0; i < 40; i++) g_string_append_c(deep, ']');
    g_string_append(deep, "}\n\n");
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    g_assert_false(feed(&r, deep->str, 0, &err));
    g_assert_nonnull(strstr(err->message, "an event is not JSON ("));
    g_string_free(deep, TRUE);
    hyocr_remote_reply_clear(&r);
    g_free(big);
}

static void test_whole_json(void)
{
    static const char ok[] =
        "{\"id\":\"c\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
        "\"content\":\"text\",\"reasoning_content\":null,\"tool_calls\":[]},\"finish_reason\":\"stop\",\"stop_reason\":"
        "null,\"token_ids\":[1,2]}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2},\"prompt_logprobs\":null}";
    hyocr_remote_reply r;
    hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_remote_reply_parse_json(&r, ok, strlen(ok), &err));
    g_assert_no_error(err);
    g_assert_cmpstr(r.text->str, ==, "text");
    g_assert_cmpstr(r.finish_reason, ==, "stop");
    g_assert_cmpuint(r.token_ids->len, ==, 2);
    g_assert_cmpint(r.prompt_tokens, ==, 4);
    g_assert_null(r.stop_text);
    g_assert_false(r.has_stop_id);
    hyocr_remote_reply_clear(&r);

    /* vLLM's stop_reason: the stop string, or the stop token (an EOS of generation_config's too) */
    static const char *const why[] = { "\"END\"", "120020" };
    for (guint i = 0; i < G_N_ELEMENTS(why); i++) {
        g_autofree char *json = g_strdup_printf("{\"choices\":[{\"message\":{\"content\":\"t\"},"
                                                "\"finish_reason\":\"stop\",\"stop_reason\":%s}]}", why[i]);
        hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
        g_assert_true(hyocr_remote_reply_parse_json(&r, json, strlen(json), &err));
        g_assert_cmpstr(r.stop_text, ==, i == 0 ? "END" : NULL);
        g_assert_true(r.has_stop_id == (i == 1));
        g_assert_cmpint(r.stop_id, ==, i == 1 ? 120020 : 0);
        hyocr_remote_reply_clear(&r);
    }

    static const char *const bad_json[][2] = {
        { "{\"choices\":[{\"message\":{\"content\":\"x\"}}]}", "the answer has no \"finish_reason\"" },
        { "{\"choices\":[{\"message\":[]}]}", "a choice's \"message\" is not an object" },
        { "[]", "an event is not a JSON object" },
        { "", "an event is not JSON" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad_json); i++) {
        hyocr_remote_reply_init(&r, SERVER, NULL, NULL);
        g_clear_error(&err);
        g_assert_false(hyocr_remote_reply_parse_json(&r, bad_json[i][0], strlen(bad_json[i][0]), &err));
        g_assert_error(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MALFORMED);
        if (!strstr(err->message, bad_json[i][1])) g_error("'%s': %s", bad_json[i][0], err->message);
        hyocr_remote_reply_clear(&r);
    }
}

static void test_error_message(void)
{
    static const struct { const char *body, *message, *code; } cases[] = {
        { "{\"error\":{\"message\":\"Invalid API key\",\"type\":\"x\",\"code\":\"invalid_api_key\"}}", "Invalid API key",
          "invalid_api_key" },
        { "{\"object\":\"error\",\"message\":\"The model `m` does not exist.\",\"code\":404}",
          "The model `m` does not exist.", NULL },
        { "{\"detail\":\"Not Found\"}", "Not Found", NULL },
        { "{\"error\":\"plain\"}", "plain", NULL },
        { "<html>502 Bad Gateway</html>", NULL, NULL },
        { "{\"error\":{\"message\":5}}", NULL, NULL },
        { "", NULL, NULL },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *code = NULL;
        g_autofree char *m = hyocr_remote_error_message(cases[i].body, strlen(cases[i].body), &code);
        g_assert_cmpstr(m, ==, cases[i].message);
        g_assert_cmpstr(code, ==, cases[i].code);
    }
}

static void test_params(void)
{
    /* an address that is none is refused before any network */
    static const char *const bad_urls[] = { "ftp://h:1", "localhost:8000", "http://", "" };
    for (size_t i = 0; i < G_N_ELEMENTS(bad_urls); i++) {
        hyocr_remote_params p;
        hyocr_remote_params_init(&p);
        p.url = bad_urls[i];
        g_autoptr(GError) err = NULL;
        g_assert_null(hyocr_remote_new(&p, &err));
        g_assert_error(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_ADDRESS);
    }
    /* the name for messages: no password, no /v1, no key */
    hyocr_remote_params p;
    hyocr_remote_params_init(&p);
    p.url = "https://user:pw@Example.org:8443/ocr/v1/";
    p.api_key = "sk-secret";
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_remote) r = hyocr_remote_new(&p, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(hyocr_remote_server_name(r), ==, "https://Example.org:8443/ocr");
    /* a certificate file that is none */
    p.url = "https://example.org";
    p.trusted_certificate = HYOCR_TEST_DATA "/ckpt-flat/config.json";
    g_clear_error(&err);
    g_assert_null(hyocr_remote_new(&p, &err));
    g_assert_error(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS);
    g_assert_true(g_str_has_prefix(err->message, HYOCR_TEST_DATA "/ckpt-flat/config.json: not a PEM certificate: "));
    /* a trusted fingerprint: 64 hex digits, any case, colons or spaces between */
    p.trusted_certificate = NULL;
    static const char *const bad[] = { "abc", "zz:00000000000000000000000000000000000000000000000000000000000000",
                                       "00000000000000000000000000000000000000000000000000000000000000000" };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        p.trusted_fingerprint = bad[i];
        g_clear_error(&err);
        g_assert_null(hyocr_remote_new(&p, &err));
        g_assert_error(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS);
        g_autofree char *want = g_strdup_printf("“%s” is not a certificate's SHA-256 fingerprint (64 hexadecimal "
                                                "digits)", bad[i]);
        g_assert_cmpstr(err->message, ==, want);
        g_assert_null(hyocr_remote_error_get_certificate(err, NULL));
    }
    p.trusted_fingerprint = "AB:cd:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:"
                            "00:0f";
    g_clear_error(&err);
    g_autoptr(hyocr_remote) pinned = hyocr_remote_new(&p, &err);
    g_assert_no_error(err);
    g_assert_nonnull(pinned);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/remote-reply/stream-any-split", test_stream_any_split);
    g_test_add_func("/remote-reply/nul-escape", test_nul_escape);
    g_test_add_func("/remote-reply/end-without-done", test_end_without_done);
    g_test_add_func("/remote-reply/logprobs", test_logprobs);
    g_test_add_func("/remote-reply/malformed", test_malformed);
    g_test_add_func("/remote-reply/nul-byte", test_nul_byte);
    g_test_add_func("/remote-reply/limits", test_limits);
    g_test_add_func("/remote-reply/whole-json", test_whole_json);
    g_test_add_func("/remote-reply/error-message", test_error_message);
    g_test_add_func("/remote-reply/params", test_params);
    return g_test_run();
}
