/* hyocr fuzzing: the decode checks shared by the tokenizer harnesses. */
#include "fuzz.h"
#include "fuzz-tokenizer.h"

#include <string.h>

/* Valid UTF-8 with NUL bytes allowed (GLib's validator stops at them). */
static bool utf8_with_nuls(const char *s, size_t len)
{
    for (const char *p = s, *end = s + len; p < end;) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        if (!g_utf8_validate(p, (nul ? nul : end) - p, NULL)) return false;
        p = nul ? nul + 1 : end;
    }
    return true;
}

static void check(const hyocr_tokenizer *tok, const int32_t *ids, size_t n, bool skip_special)
{
    size_t whole_len = 0;
    g_autofree char *whole = hyocr_tokenizer_decode(tok, ids, n, skip_special, &whole_len);
    fuzz_require(whole[whole_len] == '\0', "decode text not terminated");
    fuzz_require(utf8_with_nuls(whole, whole_len), "decode gave invalid UTF-8");
    g_autoptr(hyocr_detokenizer) dt = hyocr_detokenizer_init(tok, skip_special);
    g_autoptr(GString) streamed = g_string_new(NULL);
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        g_autofree char *piece = hyocr_detokenizer_push(dt, ids[i], &len);
        g_string_append_len(streamed, piece, (gssize)len);
    }
    size_t rest_len = 0;
    g_autofree char *rest = hyocr_detokenizer_flush(dt, &rest_len);
    g_string_append_len(streamed, rest, (gssize)rest_len);
    fuzz_require(streamed->len == whole_len && memcmp(streamed->str, whole, whole_len) == 0,
                 "streamed decode (%zu bytes) differs from the whole decode (%zu bytes)", streamed->len, whole_len);
}

void fuzz_check_decode(const hyocr_tokenizer *tok, const int32_t *ids, size_t n)
{
    check(tok, ids, n, false);
    check(tok, ids, n, true);
}
