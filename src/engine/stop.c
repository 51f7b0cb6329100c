/* hyocr — stop sequences: see stop.h. Texts are bytes with a length (an answer can
 * hold NUL bytes); the strings are NUL-terminated UTF-8, so they never hold one. */
#define _GNU_SOURCE   /* memmem */
#include "stop.h"
#include "error.h"
#include <glib/gi18n.h>
#include <string.h>

bool hyocr_stop_strings_check(const char *const *stop, GError **error)
{
    int n = 0;
    for (; stop && stop[n]; n++) {
        size_t len = strlen(stop[n]);
        if (len == 0 || len > HYOCR_STOP_MAX_BYTES || !g_utf8_validate(stop[n], (gssize)len, NULL)) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("stop string %d must be UTF-8 text of 1 to %d bytes (it has %zu)"), n + 1,
                        HYOCR_STOP_MAX_BYTES, len);
            return false;
        }
    }
    if (n > HYOCR_STOP_MAX_STRINGS) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("at most %d stop strings (got %d)"), HYOCR_STOP_MAX_STRINGS, n);
        return false;
    }
    return true;
}

bool hyocr_stop_tokens_check(const int32_t *ids, int n, int V, GError **error)
{
    if (n > HYOCR_STOP_MAX_TOKENS) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("at most %d stop token ids (got %d)"), HYOCR_STOP_MAX_TOKENS, n);
        return false;
    }
    for (int i = 0; i < n && V > 0; i++) {
        if (ids[i] >= 0 && ids[i] < V) continue;
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("stop token id %d is not in the vocabulary (0 to %d)"), ids[i], V - 1);
        return false;
    }
    return true;
}

bool hyocr_stop_token_is(const int32_t *ids, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

bool hyocr_stop_find(const char *const *stop, const char *text, size_t len, size_t from, size_t *at, int *which)
{
    bool found = false;
    for (int i = 0; stop && stop[i]; i++) {
        size_t n = strlen(stop[i]);
        /* a match that ends past `from` starts at from − n + 1 or later; none ended before */
        size_t start = from + 1 > n ? from + 1 - n : 0;
        size_t end = found ? MIN(len, *at + n - 1) : len;   /* only an earlier one matters now */
        if (end < start + n) continue;
        const char *p = memmem(text + start, end - start, stop[i], n);
        if (!p) continue;
        *at = (size_t)(p - text);
        *which = i;
        found = true;
    }
    return found;
}

size_t hyocr_stop_held(const char *const *stop, const char *text, size_t len)
{
    size_t held = 0;
    for (int i = 0; stop && stop[i]; i++) {
        size_t n = strlen(stop[i]);
        for (size_t k = MIN(n - 1, len); k > held; k--)
            if (!memcmp(text + len - k, stop[i], k)) {
                held = k;
                break;
            }
    }
    return held;
}
