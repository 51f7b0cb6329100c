/* hyocr fuzzing: the document harnesses (fuzz-pdf, fuzz-tiff, fuzz-webp, fuzz-heif) share one
 * body. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Bytes a format's sniffing needs at an offset (RIFF … WEBP has a size between). */
typedef struct {
    size_t      at;
    const char *bytes;
    size_t      len;
} fuzz_magic;

/* Opens data, the magic bytes written over it (so mutations stay in one format), as a
 * document with a pixel limit of 16 Mi pixels, and reads its first and last pages as a job
 * and an export would: their sizes, then each rendered under a small budget (the last byte
 * odd: a small max_side too). */
void fuzz_document(const uint8_t *data, size_t size, const fuzz_magic *magic, int n_magic);
