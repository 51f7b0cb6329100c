/* Fuzzes the output clean-up (postprocess.c): clean_repeated_substrings of both
 * versions and the streaming tail-repetition stop, on any bytes. */
#include "fuzz.h"
#include "postprocess.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;   /* any bytes, NUL included: generated text can hold them */
    for (int v = 0; v < 2; v++) {
        size_t len = 0;
        g_autofree char *clean = hyocr_clean_repeated_substrings(text, size, v ? HYOCR_MODEL_VERSION_1_5
                                                                                : HYOCR_MODEL_VERSION_1_0, &len);
        fuzz_require(clean && clean[len] == '\0', "no result");
        /* at most U+FFFD (3 bytes) for every byte that is not UTF-8 */
        fuzz_require(len <= 3 * size, "clean-up grew %zu bytes into %zu", size, len);
    }
    (void)hyocr_has_tail_repetition(text, size);
    /* the stop as a job calls it, with the text growing a piece at a time */
    hyocr_tail_check tc;
    hyocr_tail_check_init(&tc);
    for (size_t end = 0; end < size;) {
        end = MIN(size, end + 1 + (size_t)(data[end] & 0x3f));
        if (hyocr_tail_check_should_stop(&tc, text, end, -1)) break;
    }
    return 0;
}
