/* hyocr fuzzing: the image harnesses share one body. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Decodes data, its first bytes replaced by magic (so mutations stay in one
 * format), as a job does (EXIF orientation applied) but with a pixel limit of
 * 16 Mi pixels; when the last byte is odd, again with a small max_side (the
 * Lanczos pre-scale). */
void fuzz_image(const uint8_t *data, size_t size, const char *magic, size_t magic_len);
