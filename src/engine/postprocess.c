/* hyocr — the official clients' output clean-up (spec §7.2–7.3), on code points.
 *
 * Both checks ask "does the end of the text consist of c copies of its last L
 * characters?", i.e. does that suffix have period L. For the tail check that
 * is one memcmp per L (L ≤ 256). For clean_repeated_substrings, L runs up to
 * n/10 and the reference rescans blocks for every L (quadratic on long
 * texts); here the Z-array of the reversed text gives, for every L, how far
 * the period-L run reaches back from the end, in O(n) total. */
#include "postprocess.h"

#include <string.h>

enum {
    TAIL_WINDOW     = 8000,   /* infer_stream checks the last 8000 characters */
    TAIL_COPIES     = 8,      /* has_tail_repetition min_repeats */
    TAIL_MAX_UNIT   = 256,
    CHECK_FIRST     = 4000,
    CHECK_STEP      = 1000,
    CLEAN_COPIES    = 10,
    CLEAN_MIN_1_0   = 8000,
    CLEAN_MIN_1_5   = 2000,
};

/* Python's str.isspace() (Zs, or bidi class WS/B/S) — wider than
 * g_unichar_isspace(), which misses \v, U+001C–U+001F and U+0085. */
static bool py_isspace(gunichar c)
{
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
    switch (c) {
    case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202f: case 0x205f: case 0x3000:
        return true;
    default:
        return c >= 0x2000 && c <= 0x200a;
    }
}

/* The text as valid UTF-8: NULL when it already is, else a copy with U+FFFD for every bad
 * byte (*len updated). NUL bytes are text here (a token can decode to byte 0), and GLib's
 * UTF-8 functions stop at them, so they work between the NULs. */
static char *repair(const char *text, size_t *len)
{
    const char *end = text + *len;
    bool valid = true;
    for (const char *p = text; valid && p < end;) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        valid = g_utf8_validate(p, (nul ? nul : end) - p, NULL);
        p = nul ? nul + 1 : end;
    }
    if (valid) return NULL;
    GString *out = g_string_sized_new(*len + 16);
    for (const char *p = text; p < end;) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        g_autofree char *part = g_utf8_make_valid(p, (nul ? nul : end) - p);
        g_string_append(out, part);
        if (!nul) break;
        g_string_append_c(out, '\0');
        p = nul + 1;
    }
    *len = out->len;
    return g_string_free(out, FALSE);
}

/* Code points of valid UTF-8 text[0, len), NUL bytes included. */
static gunichar *to_ucs4(const char *text, size_t len, glong *n)
{
    gunichar *u = g_new(gunichar, len + 1);
    glong k = 0;
    for (const char *p = text, *end = text + len; p < end; p = g_utf8_next_char(p))
        u[k++] = g_utf8_get_char(p);
    *n = k;
    return u;
}

/* Characters of valid UTF-8 text[0, len), NUL bytes included. */
static glong count_chars(const char *text, size_t len)
{
    glong n = 0;
    for (size_t i = 0; i < len; i++) n += ((guchar)text[i] & 0xc0) != 0x80;
    return n;
}

/* ---------- streaming tail check (1.5 clients) ---------- */

static bool has_period_suffix(const gunichar *s, glong n, glong unit, int copies)
{
    glong span = (glong)copies * unit;
    return memcmp(s + n - span, s + n - span + unit, (size_t)(span - unit) * sizeof *s) == 0;
}

static bool tail_repeats(const gunichar *s, glong n)
{
    if (n < 2 * TAIL_COPIES) return false;
    glong upper = MIN(TAIL_MAX_UNIT, n / TAIL_COPIES);
    /* Units made only of whitespace are skipped: those are the L ≤ the
     * trailing whitespace run. */
    glong ws = 0;
    while (ws < upper && py_isspace(s[n - 1 - ws])) ws++;
    for (glong unit = ws + 1; unit <= upper; unit++)
        if (has_period_suffix(s, n, unit, TAIL_COPIES)) return true;
    return false;
}

/* Start of the last max_chars characters, counting lead bytes backwards so
 * only the tail is touched. */
static const char *last_chars(const char *text, size_t len, glong max_chars)
{
    const char *p = text + len;
    glong count = 0;
    while (p > text && count < max_chars) {
        p--;
        if (((guchar)*p & 0xc0) != 0x80) count++;
    }
    return p;
}

bool hyocr_has_tail_repetition(const char *text, size_t len)
{
    g_return_val_if_fail(text != NULL || len == 0, false);
    const char *tail = last_chars(text, len, TAIL_WINDOW);
    size_t tail_len = (size_t)(text + len - tail);
    g_autofree char *repaired = repair(tail, &tail_len);
    glong n = 0;
    g_autofree gunichar *u = to_ucs4(repaired ? repaired : tail, tail_len, &n);
    glong skip = MAX(0, n - TAIL_WINDOW);   /* repaired bytes can add characters */
    return tail_repeats(u + skip, n - skip);
}

void hyocr_tail_check_init(hyocr_tail_check *tc)
{
    g_return_if_fail(tc != NULL);
    tc->next_check_chars = CHECK_FIRST;
}

/* Mirrors infer_stream: once the length reaches the next checkpoint, the next
 * one moves to length + 1000 whatever the outcome. */
bool hyocr_tail_check_should_stop(hyocr_tail_check *tc, const char *text, size_t len, glong n_chars)
{
    g_return_val_if_fail(tc != NULL && (text != NULL || len == 0), false);
    if (n_chars < 0) n_chars = count_chars(text, len);
    if (n_chars < tc->next_check_chars) return false;
    tc->next_check_chars = n_chars + CHECK_STEP;
    return hyocr_has_tail_repetition(text, len);
}

/* ---------- clean_repeated_substrings ---------- */

/* Characters to keep: for the smallest unit L in [2, n/copies] whose copies
 * cover the end at least `copies` times, all but one copy go; else n.
 * With r the reversed text and z[L] = lcp(r, r[L:]), the suffix of k·L
 * characters has period L iff z[L] ≥ (k-1)·L, so the reference's backward
 * count is z[L]/L + 1 (z[L] ≤ n-L keeps it within the text). */
static glong repeated_tail_keep(gunichar *s, glong n, int copies)
{
    glong limit = n / copies;
    if (limit < 2) return n;
    for (glong i = 0, j = n - 1; i < j; i++, j--) {
        gunichar t = s[i]; s[i] = s[j]; s[j] = t;
    }
    g_autofree glong *z = g_new0(glong, limit + 1);
    glong l = 0, r = 0;   /* rightmost match window [l, r) */
    for (glong i = 1; i <= limit; i++) {
        glong k = i < r ? MIN(r - i, z[i - l]) : 0;
        while (i + k < n && s[k] == s[i + k]) k++;
        if (i + k > r) { l = i; r = i + k; }
        z[i] = k;
        glong count = k / i + 1;
        if (i >= 2 && count >= copies) return n - i * (count - 1);
    }
    return n;
}

char *hyocr_clean_repeated_substrings(const char *text, size_t len, hyocr_model_version version, size_t *out_len)
{
    g_return_val_if_fail(text != NULL || len == 0, NULL);
    g_autofree char *repaired = repair(text ? text : "", &len);
    const char *valid = repaired ? repaired : text ? text : "";

    size_t keep_bytes = len;
    glong min_len = version == HYOCR_MODEL_VERSION_1_0 ? CLEAN_MIN_1_0 : CLEAN_MIN_1_5;
    if (count_chars(valid, len) >= min_len) {
        glong n = 0;
        g_autofree gunichar *u = to_ucs4(valid, len, &n);
        glong keep = repeated_tail_keep(u, n, CLEAN_COPIES);
        keep_bytes = (size_t)(g_utf8_offset_to_pointer(valid, keep) - valid);
    }
    if (out_len) *out_len = keep_bytes;
    char *out = g_malloc(keep_bytes + 1);
    memcpy(out, valid, keep_bytes);
    out[keep_bytes] = '\0';
    return out;
}
