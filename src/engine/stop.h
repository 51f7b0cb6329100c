/* hyocr — stop sequences a caller asks for (OpenAI's "stop", vLLM's
 * "stop_token_ids"): the answer ends where one of the strings first appears in
 * the generated text, or at one of the tokens. While the answer streams, the
 * tail of the text that could still grow into a stop string is held back, so no
 * part of one reaches the caller before it is known not to be one. */
#pragma once
#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

/* A search runs over every string each token: these bound what one request costs the batch
 * it shares. */
#define HYOCR_STOP_MAX_STRINGS 16
#define HYOCR_STOP_MAX_BYTES   256
#define HYOCR_STOP_MAX_TOKENS  256

/* stop: NULL-terminated (NULL: none). Fails (HYOCR_ERROR_INVALID_ARGUMENT) on more than
 * HYOCR_STOP_MAX_STRINGS strings, an empty one, one over HYOCR_STOP_MAX_BYTES, or one that
 * is not UTF-8. */
bool   hyocr_stop_strings_check(const char *const *stop, GError **error);
/* ids[n] against a vocabulary of V tokens (V ≤ 0: not checked): at most HYOCR_STOP_MAX_TOKENS,
 * each in [0, V). */
bool   hyocr_stop_tokens_check(const int32_t *ids, int n, int V, GError **error);
bool   hyocr_stop_token_is(const int32_t *ids, int n, int32_t id);

/* The earliest stop string in text[0, len) that ends past byte `from` (the first new byte):
 * its offset in *at and its index in stop in *which. False when none. */
bool   hyocr_stop_find(const char *const *stop, const char *text, size_t len, size_t from, size_t *at, int *which);
/* Bytes at the end of text that are the start of some stop string (not all of one):
 * what to hold back from the stream for now. */
size_t hyocr_stop_held(const char *const *stop, const char *text, size_t len);

G_END_DECLS
