/* hyocr — byte-level BPE tokenizer read from tokenizer.json (HF tokenizers format).
 * Pre-tokenizer pipeline of the release: three regex Splits then ByteLevel;
 * added tokens are matched verbatim before pre-tokenization. */
#pragma once
#include <glib.h>
#include <stdint.h>
#include <stdbool.h>

G_BEGIN_DECLS

typedef struct hyocr_tokenizer hyocr_tokenizer;

hyocr_tokenizer *hyocr_tokenizer_load(const char *tokenizer_json_path, GError **error);
void             hyocr_tokenizer_free(hyocr_tokenizer *tok);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_tokenizer, hyocr_tokenizer_free)

/* Appends ids (int32_t) to out. Invalid UTF-8 is replaced by U+FFFD first, with
 * Python's bytes.decode(errors="replace") semantics (maximal subpart). */
void        hyocr_tokenizer_encode(const hyocr_tokenizer *tok, const char *text, gssize len, GArray *out);
/* Decoded text, newly allocated, valid UTF-8 (invalid bytes → U+FFFD like HF).
 * skip_special drops added tokens marked special; no clean-up of spaces. The text
 * can hold NUL bytes (a token may decode to byte 0, as in HF): *len gets its length,
 * and a NUL follows it. */
char       *hyocr_tokenizer_decode(const hyocr_tokenizer *tok, const int32_t *ids, size_t n, bool skip_special,
                                   size_t *len);

int         hyocr_tokenizer_n_vocab(const hyocr_tokenizer *tok);            /* max id + 1 */
int32_t     hyocr_tokenizer_find(const hyocr_tokenizer *tok, const char *token); /* -1 when absent */
const char *hyocr_tokenizer_token(const hyocr_tokenizer *tok, int32_t id);  /* raw vocab string, NULL if none */
/* The bytes id decodes to, alone (a piece of a character stays a piece; a special token
 * gives its text); empty for an id outside the vocabulary. */
GBytes     *hyocr_tokenizer_token_bytes(const hyocr_tokenizer *tok, int32_t id);
bool        hyocr_tokenizer_is_special(const hyocr_tokenizer *tok, int32_t id);

/* Streaming decoder: push ids, get back only complete UTF-8 (incomplete
 * trailing bytes are held until the next push or flush). The pieces of a push
 * sequence and its flush, put end to end, are exactly hyocr_tokenizer_decode of
 * the same ids, NUL bytes included: use the lengths. */
typedef struct hyocr_detokenizer hyocr_detokenizer;
hyocr_detokenizer *hyocr_detokenizer_init(const hyocr_tokenizer *tok, bool skip_special);
void               hyocr_detokenizer_free(hyocr_detokenizer *dt);
/* Returns newly allocated text (possibly ""), owned by the caller; *len gets its length. */
char              *hyocr_detokenizer_push(hyocr_detokenizer *dt, int32_t id, size_t *len);
/* Remaining held-back bytes, as U+FFFD where they never completed. */
char              *hyocr_detokenizer_flush(hyocr_detokenizer *dt, size_t *len);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_detokenizer, hyocr_detokenizer_free)

G_END_DECLS
