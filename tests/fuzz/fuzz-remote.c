/* Fuzzes reading an OpenAI-compatible server's reply (remote-reply.c): the
 * bytes as an event stream, fed whole and in pieces the input's first byte
 * sizes, must read the same (the network splits a stream anywhere); what is
 * read is UTF-8 and the pieces make the text. The same bytes as a whole JSON
 * answer, and as an error reply's body. */
#include "fuzz.h"
#include "remote-reply.h"
#include "remote.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

/* UTF-8 apart from NUL bytes (a token may decode to one, sent as \u0000). */
static bool utf8_with_nuls(const char *s, size_t len)
{
    for (size_t at = 0; at < len;) {
        const char *nul = memchr(s + at, 0, len - at);
        size_t end = nul ? (size_t)(nul - s) : len;
        if (!g_utf8_validate(s + at, (gssize)(end - at), NULL)) return false;
        at = end + 1;
    }
    return true;
}

static void on_piece(const char *piece, size_t len, const int32_t *ids, int n_ids, const hyocr_token_logprobs *lps,
                     int n_lps, void *data)
{
    (void)ids;
    (void)n_ids;
    for (int i = 0; i < n_lps; i++)
        fuzz_require(lps[i].n_top >= 0 && lps[i].n_top <= HYOCR_TOP_LOGPROBS_MAX, "kept %d alternatives", lps[i].n_top);
    g_string_append_len(data, piece, (gssize)len);
}

typedef struct {
    bool     ok;
    int      code;
    GString *pieces;
    hyocr_remote_reply r;
} outcome;

static void read_stream(outcome *o, const char *text, size_t len, size_t step)
{
    o->pieces = g_string_new(NULL);
    hyocr_remote_reply_init(&o->r, "http://fuzz", on_piece, o->pieces);
    g_autoptr(GError) err = NULL;
    o->ok = true;
    for (size_t i = 0; o->ok && i < len; i += step)
        o->ok = hyocr_remote_reply_feed(&o->r, text + i, MIN(step, len - i), &err);
    if (o->ok) o->ok = hyocr_remote_reply_end(&o->r, &err);
    o->code = err ? err->code : -1;
    fuzz_require(o->ok == (err == NULL), "ok without error or an error with ok");
    fuzz_require(!err || g_utf8_validate(err->message, -1, NULL), "a message that is not UTF-8");
}

static void outcome_clear(outcome *o)
{
    g_string_free(o->pieces, TRUE);
    hyocr_remote_reply_clear(&o->r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t step = 1 + data[0] % 64;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    outcome whole, split;
    read_stream(&whole, text, len, len ? len : 1);
    read_stream(&split, text, len, step);
    fuzz_require(whole.ok == split.ok && whole.code == split.code, "split at %zu reads otherwise (%d/%d vs %d/%d)",
                 step, whole.ok, whole.code, split.ok, split.code);
    /* what came before a failure came the same way too */
    fuzz_require(g_string_equal(whole.r.text, split.r.text), "split at %zu: another text", step);
    fuzz_require(whole.r.token_ids->len == split.r.token_ids->len, "split at %zu: other token ids", step);
    fuzz_require(whole.r.logprobs->len == split.r.logprobs->len, "split at %zu: other logprobs", step);
    fuzz_require(g_string_equal(whole.r.text, whole.pieces), "the pieces do not make the text");
    fuzz_require(utf8_with_nuls(whole.r.text->str, whole.r.text->len), "text that is not UTF-8");
    fuzz_require(!whole.ok || whole.r.done, "read whole without being done");
    fuzz_require(g_strcmp0(whole.r.finish_reason, split.r.finish_reason) == 0, "another finish reason");
    outcome_clear(&whole);
    outcome_clear(&split);

    hyocr_remote_reply r;
    hyocr_remote_reply_init(&r, "http://fuzz", NULL, NULL);
    g_autoptr(GError) err = NULL;
    bool ok = hyocr_remote_reply_parse_json(&r, text, len, &err);
    fuzz_require(ok == (err == NULL) && (!ok || r.finish_reason), "a whole answer without a finish");
    hyocr_remote_reply_clear(&r);

    g_autofree char *code = NULL;
    g_autofree char *msg = hyocr_remote_error_message(text, len, &code);
    fuzz_require(!msg || g_utf8_validate(msg, -1, NULL), "an error message that is not UTF-8");
    return 0;
}
