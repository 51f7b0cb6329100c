/* Fuzzes the tokenizer.json reader (hyocr_tokenizer_load), then uses whatever it
 * accepted: encodes a probe text (every pre-tokenizer path: words, digits, CJK,
 * spaces, newlines, invalid UTF-8) and decodes ids, whole and streamed. */
#include "fuzz.h"
#include "fuzz-tokenizer.h"
#include "error.h"
#include "tokenizer.h"

static const char probe[] = "Hello wörld 12345 识别文字 ｶﾀ \t\r\n\n  x<|s|>y z a\xff\xe4z \xF0\x9F\x98\x80!";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *path = fuzz_write("tokenizer.json", data, size);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(path, &err);
    fuzz_require(!tok == !!err, "a tokenizer and an error, or neither");
    if (err) {
        fuzz_note(err);
        fuzz_require(err->domain == HYOCR_ERROR, "foreign error: %s", err->message);
        return 0;
    }
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    hyocr_tokenizer_encode(tok, probe, sizeof probe - 1, ids);
    hyocr_tokenizer_encode(tok, probe, sizeof probe - 1, ids);   /* again, from the word cache */
    int n_vocab = hyocr_tokenizer_n_vocab(tok);
    for (guint i = 0; i < ids->len; i++) {
        int32_t id = g_array_index(ids, int32_t, i);
        fuzz_require(id >= 0 && id < n_vocab, "encode gave id %d of %d", id, n_vocab);
    }
    fuzz_check_decode(tok, (const int32_t *)(void *)ids->data, ids->len);
    /* every id once, in order, plus ids the vocabulary does not have */
    int n = MIN(n_vocab, 4096) + 2;
    g_autofree int32_t *all = g_new(int32_t, n);
    for (int i = 0; i < n; i++) all[i] = i - 1;
    fuzz_check_decode(tok, all, (size_t)n);
    return 0;
}
