/* hyocr fuzzing: what the tokenizer harnesses check on any ids. */
#pragma once
#include "tokenizer.h"
#include <stddef.h>

/* Decodes ids whole and through the streaming decoder, with and without special
 * tokens: both must give the same bytes, valid UTF-8. */
void fuzz_check_decode(const hyocr_tokenizer *tok, const int32_t *ids, size_t n);
