/* Fuzzes encode and decode on the test checkpoint's tokenizer (a byte-level BPE
 * like the release's). First byte even: the rest is text to encode; valid UTF-8
 * must decode back to itself. Odd: the rest is little-endian int32 ids (any
 * value) to decode, whole and streamed, which must agree. */
#include "fuzz.h"
#include "fuzz-tokenizer.h"

#include <stdlib.h>
#include <string.h>

#ifndef HYOCR_TEST_DATA
#define HYOCR_TEST_DATA "tests/data"
#endif

static hyocr_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    const char *data_dir = g_getenv("HYOCR_TEST_DATA");
    g_autofree char *path = g_build_filename(data_dir ? data_dir : HYOCR_TEST_DATA, "ckpt-flat", "tokenizer.json", NULL);
    g_autoptr(GError) err = NULL;
    tok = hyocr_tokenizer_load(path, &err);
    if (!tok) g_error("%s", err->message);
    return 0;
}

static void encode_text(const char *text, size_t len)
{
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    hyocr_tokenizer_encode(tok, text, (gssize)len, ids);
    fuzz_check_decode(tok, (const int32_t *)(void *)ids->data, ids->len);
    if (memchr(text, 0, len) || !g_utf8_validate(text, (gssize)len, NULL)) return;
    size_t back_len = 0;
    g_autofree char *back = hyocr_tokenizer_decode(tok, (const int32_t *)(void *)ids->data, ids->len, false, &back_len);
    fuzz_require(back_len == len && memcmp(back, text, len) == 0, "decode(encode(text)) is not the text");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    if (data[0] % 2 == 0) {
        encode_text((const char *)data + 1, size - 1);
        return 0;
    }
    size_t n = (size - 1) / 4;
    g_autofree int32_t *ids = g_new(int32_t, n + 1);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data + 1 + 4 * i;
        ids[i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    }
    fuzz_check_decode(tok, ids, n);
    return 0;
}
