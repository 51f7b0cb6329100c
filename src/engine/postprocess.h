/* hyocr — output clean-up of the official clients (spec §7.2–7.3), on Unicode
 * code points like the Python reference, not bytes. */
#pragma once
#include "config.h"
#include <glib.h>
#include <stdbool.h>

G_BEGIN_DECLS

/* Streaming tail-repetition stop of the 1.5 clients: decides whether generation
 * should stop given the text so far. Keeps its own check schedule (first at
 * ≥ 4000 chars, then every ≥ 1000 more). */
typedef struct {
    glong next_check_chars;
} hyocr_tail_check;

/* Texts are given with their lengths in bytes: generated text can hold NUL bytes
 * (characters like any other here). Bytes that are not UTF-8 count as U+FFFD. */
void hyocr_tail_check_init(hyocr_tail_check *tc);
/* text: everything generated so far (UTF-8), n_chars its length in code points
 * (< 0: counted here). */
bool hyocr_tail_check_should_stop(hyocr_tail_check *tc, const char *text, size_t len, glong n_chars);
/* The underlying test on the last ≤ 8000 characters (exposed for tests). */
bool hyocr_has_tail_repetition(const char *text, size_t len);

/* clean_repeated_substrings of the given version (1.0: ≥ 8000 chars, 1.5: ≥ 2000).
 * Returns a new string (valid UTF-8, NUL-terminated) and its length in *out_len
 * (may be NULL). */
char *hyocr_clean_repeated_substrings(const char *text, size_t len, hyocr_model_version version, size_t *out_len);

G_END_DECLS
