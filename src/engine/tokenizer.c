/* hyocr — byte-level BPE tokenizer read from tokenizer.json (HF `tokenizers` format).
 *
 * The goal is id-for-id agreement with HF tokenizers (0.23, Oniguruma regex backend), which is what
 * transformers' TokenizersBackend calls. Behaviours mirrored on purpose (read from tokenizers'
 * source, not guessed):
 *  - Added tokens are cut out of the raw text before anything else, leftmost-longest, in two
 *    passes: tokens with normalized=false first, then normalized=true ones in the gaps (no
 *    normalizer is supported, so both passes see the raw text). single_word/lstrip/rstrip follow
 *    AddedVocabulary::find_matches, including its quirks (a discarded single_word match still
 *    consumes its bytes in the match iterator). Added-token ids are derived the way HF derives
 *    them (vocab id when the content is in the vocab, else the next free id from vocab size);
 *    a file whose ids disagree is refused, because HF would silently renumber.
 *  - Each Split (Isolated) turns a piece into matches and the gaps between them; empty pieces
 *    vanish. Match iteration copies the onig crate's FindMatches (an empty match right at the end
 *    of the previous match is skipped by one character).
 *  - BPE merging is the Word::merge_all priority queue: lowest rank first, ties to the leftmost
 *    position, stale entries dropped when the pair no longer produces the queued id.
 *    A duplicated merge pair keeps the rank of its LAST occurrence (HashMap collect).
 *  - Decoding passes EVERY token (added ones too) through the ByteLevel decoder: a token whose
 *    characters all belong to the byte alphabet becomes those bytes, any other token contributes
 *    its UTF-8 verbatim. Then String::from_utf8_lossy over the concatenation.
 *  - post_processor is ignored: encode never adds special tokens (add_special_tokens=False).
 *
 * Regex dialect. tokenizers compiles Split patterns with onig::Regex::new, i.e. ONIG_OPTION_NONE
 * and OnigDefaultSyntax = ONIG_SYNTAX_ONIGURUMA over UTF-8. Per Oniguruma's doc/RE, with a Unicode
 * encoding \s is U+0009-000D, U+0085 and Zs/Zl/Zp (so U+3000 and U+00A0 ARE spaces), \w is
 * L|M|N|Pc, \d is Nd, \h is [0-9a-fA-F], \uHHHH is a code point, `.` excludes only \n, ^/$ are
 * always line anchors, (?m) means dot-all, {,n} means {0,n} and a fixed {n}? means ({n})?.
 * GLib 2.74's GRegex is PCRE2 with UTF and UCP switched on (checked: \s matches U+3000, \w
 * matches é), but PCRE2's UCP \s also matches U+180E, its \w lacks M, \h is horizontal space,
 * \u is unknown, and GLib's default newline convention is ANY. So patterns are translated
 * (translate_regex) into explicit classes and compiled with MULTILINE + NEWLINE_LF; constructs
 * we cannot map faithfully are refused with an error. Remaining known gap: the Unicode tables
 * (PCRE2 10.42 vs the Oniguruma bundled in onig_sys) may differ for recently assigned code
 * points, and POSIX brackets ([[:alpha:]]) follow PCRE2's UCP meaning. */
#include "tokenizer.h"
#include "error.h"
#include "json.h"
#include "i18n.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <errno.h>
#include <string.h>

#define JSON_FILE_LIMIT  (256 * 1024 * 1024)
#define ID_LIMIT         (1 << 24)
#define CACHE_WORD_MAX   256      /* longer words are not cached, like tokenizers' MAX_LENGTH */
#define CACHE_ENTRIES    65536
#define BL_NCP           324      /* byte-level code points are all < 256 + 68 */

enum { ID_KNOWN = 1, ID_SPECIAL = 2 };

typedef struct {
    char *content;
    size_t len;
    int32_t id;
    bool single_word, lstrip, rstrip, normalized, special;
} AddedTok;

/* Byte trie, first-child/next-sibling: the added-token set is small and most text positions
 * fail on the root's first comparison. value = index into added[] or -1. */
typedef struct {
    int32_t child, sibling, value;
    guint8 byte;
} TrieNode;

typedef struct {
    uint64_t key;     /* (a << 32) | b */
    uint32_t rank;
    int32_t id;       /* merged token; -1 marks an empty slot */
} MergeSlot;

struct hyocr_tokenizer {
    char *path;
    int32_t n_ids;                 /* max id + 1 */
    GHashTable *vocab;             /* model token → id + 1 (keys owned) */
    const char **id_str;           /* [n_ids] added content, else model token, else NULL (borrowed) */
    guint vocab_size;              /* number of vocab entries (HF's get_vocab_size) */
    MergeSlot *merges;
    size_t merge_mask;
    int32_t byte_id[256];          /* vocab id of each byte's alphabet character, -1 absent */
    bool fast_bytes;               /* every byte has an id and no prefix/suffix applies */
    char *prefix, *suffix, *unk_token;
    int32_t unk_id;
    bool fuse_unk, byte_fallback, ignore_merges;
    gunichar byte_cp[256];
    int16_t cp_byte[BL_NCP];
    AddedTok *added;
    size_t n_added;
    GHashTable *added_index;       /* content → index into added[] + 1 */
    GArray *trie[2];               /* TrieNode; [0] normalized=false, [1] normalized=true */
    GPtrArray *splits;             /* GRegex * */
    GByteArray *dec;               /* decoded bytes of every id, back to back */
    uint32_t *dec_off;             /* [n_ids + 1] */
    guint8 *id_flags;              /* [n_ids] */
    GMutex cache_lock;             /* encode takes a const tokenizer and may run on many threads */
    GHashTable *cache;             /* WordKey → int32_t[1 + n] (count first) */
};

/* ================================================================== UTF-8 */

typedef enum { U8_VALID, U8_INVALID, U8_TRUNCATED } U8Kind;

/* Classifies the sequence at s by Unicode's table of well-formed sequences (Table 3-7). For
 * INVALID, *len is the maximal subpart (at least 1) — the unit that both Python's
 * errors="replace" and Rust's from_utf8_lossy turn into one U+FFFD. TRUNCATED means every byte
 * present fits but the input ends first. */
static U8Kind utf8_next(const guint8 *s, size_t n, size_t *len)
{
    guint8 c = s[0];
    size_t need;
    guint8 lo = 0x80, hi = 0xBF;
    if (c < 0x80) { *len = 1; return U8_VALID; }
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else { *len = 1; return U8_INVALID; }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n) { *len = i; return U8_TRUNCATED; }
        if (s[i] < lo || s[i] > hi) { *len = i; return U8_INVALID; }
        lo = 0x80, hi = 0xBF;
    }
    *len = need + 1;
    return U8_VALID;
}

static bool utf8_valid(const guint8 *s, size_t n)
{
    size_t i = 0, len;
    while (i < n) {
        if (s[i] < 0x80) { i++; continue; }
        if (utf8_next(s + i, n - i, &len) != U8_VALID) return false;
        i += len;
    }
    return true;
}

/* Appends s as valid UTF-8, each maximal invalid subpart replaced by U+FFFD. Unless final, an
 * incomplete sequence at the end is left unconsumed. Returns the bytes consumed. */
static size_t utf8_append_lossy(GString *out, const guint8 *s, size_t n, bool final)
{
    size_t i = 0, len;
    while (i < n) {
        size_t run = i;
        while (run < n && s[run] < 0x80) run++;
        g_string_append_len(out, (const char *)s + i, (gssize)(run - i));
        if ((i = run) >= n) break;
        U8Kind k = utf8_next(s + i, n - i, &len);
        if (k == U8_TRUNCATED && !final) break;
        if (k == U8_VALID) g_string_append_len(out, (const char *)s + i, (gssize)len);
        else g_string_append(out, "\xEF\xBF\xBD");
        i += len;
    }
    return i;
}

/* Unicode White_Space, which is also Oniguruma's Unicode \s and Rust's char::is_whitespace. */
static bool is_white_space(gunichar c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Rust regex's Unicode \w (Alphabetic, M, Nd, Pc, Join_Control), used by single_word. Alphabetic
 * is approximated by L + Nl; its Other_Alphabetic members are mostly marks, covered by M. */
static bool is_word_char(gunichar c)
{
    switch (g_unichar_type(c)) {
    case G_UNICODE_LOWERCASE_LETTER: case G_UNICODE_MODIFIER_LETTER: case G_UNICODE_OTHER_LETTER:
    case G_UNICODE_TITLECASE_LETTER: case G_UNICODE_UPPERCASE_LETTER: case G_UNICODE_LETTER_NUMBER:
    case G_UNICODE_SPACING_MARK: case G_UNICODE_ENCLOSING_MARK: case G_UNICODE_NON_SPACING_MARK:
    case G_UNICODE_DECIMAL_NUMBER: case G_UNICODE_CONNECT_PUNCTUATION:
        return true;
    default:
        return c == 0x200C || c == 0x200D;
    }
}

/* ================================================================== byte-level alphabet */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes take
 * U+0100.. in byte order. */
static void byte_level_tables(hyocr_tokenizer *tok)
{
    int extra = 0;
    for (int i = 0; i < BL_NCP; i++) tok->cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        tok->byte_cp[b] = printable ? (gunichar)b : (gunichar)(256 + extra++);
        tok->cp_byte[tok->byte_cp[b]] = (int16_t)b;
    }
}

static void append_mapped(const hyocr_tokenizer *tok, GString *s, const guint8 *w, size_t n)
{
    for (size_t i = 0; i < n; i++) g_string_append_unichar(s, tok->byte_cp[w[i]]);
}

/* ================================================================== errors */

typedef struct {
    const char *path;
    GError **error;
} Loader;

static bool G_GNUC_PRINTF(3, 4) fail(Loader *ld, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(ld->error, HYOCR_ERROR, code, "%s: %s", ld->path, msg);
    return false;
}

/* ================================================================== JSON access */

/* A member that is present and not JSON null. */
static JsonNode *member(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return (n && !JSON_NODE_HOLDS_NULL(n)) ? n : NULL;
}

static bool node_is(JsonNode *n, GType t)
{
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == t;
}

static bool opt_bool(Loader *ld, JsonObject *o, const char *where, const char *key, bool *out)
{
    JsonNode *n = member(o, key);
    if (!n) return true;
    if (!node_is(n, G_TYPE_BOOLEAN))
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.%s must be true or false"), where, key);
    *out = json_node_get_boolean(n);
    return true;
}

/* NULL with no error when absent or null. */
static bool opt_string(Loader *ld, JsonObject *o, const char *where, const char *key, const char **out)
{
    JsonNode *n = member(o, key);
    *out = NULL;
    if (!n) return true;
    if (!node_is(n, G_TYPE_STRING))
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.%s must be a string"), where, key);
    *out = json_node_get_string(n);
    return true;
}

static JsonObject *need_object(Loader *ld, JsonObject *o, const char *where, const char *key)
{
    JsonNode *n = member(o, key);
    if (!n || !JSON_NODE_HOLDS_OBJECT(n)) {
        fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.%s is missing or not an object"), where, key);
        return NULL;
    }
    return json_node_get_object(n);
}

static JsonArray *need_array(Loader *ld, JsonObject *o, const char *where, const char *key)
{
    JsonNode *n = member(o, key);
    if (!n || !JSON_NODE_HOLDS_ARRAY(n)) {
        fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.%s is missing or not an array"), where, key);
        return NULL;
    }
    return json_node_get_array(n);
}

/* The "type" string of a component object ("" when absent). */
static const char *type_of(JsonObject *o)
{
    JsonNode *n = member(o, "type");
    return node_is(n, G_TYPE_STRING) ? json_node_get_string(n) : "";
}

static bool parse_id(Loader *ld, JsonNode *n, const char *what, int32_t *out)
{
    if (!node_is(n, G_TYPE_INT64) || json_node_get_int(n) < 0 || json_node_get_int(n) >= ID_LIMIT)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s: id must be an integer in [0, %d)"), what, ID_LIMIT);
    *out = (int32_t)json_node_get_int(n);
    return true;
}

static JsonNode *load_json(Loader *ld)
{
    GStatBuf sb;
    if (g_stat(ld->path, &sb) != 0) {
        fail(ld, HYOCR_ERROR_IO, _("cannot read: %s (is this the model folder's tokenizer.json?)"),
             g_strerror(errno));
        return NULL;
    }
    if (sb.st_size > JSON_FILE_LIMIT) {
        fail(ld, HYOCR_ERROR_PARSE, _("%lld bytes is too large for a tokenizer (limit %d MB)"),
             (long long)sb.st_size, JSON_FILE_LIMIT >> 20);
        return NULL;
    }
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(ld->path, &text, &len, &err)) {
        fail(ld, HYOCR_ERROR_IO, _("cannot read: %s"), err->message);
        return NULL;
    }
    /* the message already names the file: it goes out as is */
    JsonNode *r = hyocr_json_parse(text, len, HYOCR_JSON_MAX_DEPTH, ld->path, ld->error);
    if (r && !JSON_NODE_HOLDS_OBJECT(r)) {
        fail(ld, HYOCR_ERROR_PARSE, _("the top level is not a JSON object"));
        json_node_unref(r);
        return NULL;
    }
    return r;
}

/* ================================================================== regex translation */

#define ONIG_SPACE "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
                   "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define ONIG_WORD  "\\p{L}\\p{M}\\p{N}\\p{Pc}"
#define ONIG_HEX   "0-9A-Fa-f"

static int hex_value(char c)
{
    return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* An Oniguruma class shorthand as an explicit class (or class body inside [...]). */
static bool put_class(GString *o, const char *body, bool negate, bool in_class, char **why)
{
    if (in_class && negate) {
        *why = g_strdup("a negated shorthand (\\S, \\W, \\H) inside [...] cannot be mapped to PCRE2");
        return false;
    }
    if (in_class) g_string_append(o, body);
    else g_string_append_printf(o, "[%s%s]", negate ? "^" : "", body);
    return true;
}

/* Translates the escape at *pp (pointing at the backslash); advances *pp. */
static bool translate_escape(GString *o, const char **pp, bool in_class, char **why)
{
    const char *p = *pp;
    char e = p[1];
    *pp = p + 2;
    switch (e) {
    case '\0':
        *why = g_strdup("the pattern ends with a lone backslash");
        return false;
    case 'u': {
        int v = 0;
        for (int i = 2; i < 6; i++) {
            int h = hex_value(p[i]);
            if (h < 0) { *why = g_strdup("\\u must be followed by four hex digits"); return false; }
            v = v * 16 + h;
        }
        g_string_append_printf(o, "\\x{%04X}", v);
        *pp = p + 6;
        return true;
    }
    case 's': case 'S': return put_class(o, ONIG_SPACE, e == 'S', in_class, why);
    case 'w': case 'W': return put_class(o, ONIG_WORD, e == 'W', in_class, why);
    case 'h': case 'H': return put_class(o, ONIG_HEX, e == 'H', in_class, why);
    case 'd': g_string_append(o, "\\p{Nd}"); return true;
    case 'D': g_string_append(o, "\\P{Nd}"); return true;
    case 'b': case 'B':
        if (in_class) break;   /* backspace in both dialects */
        g_string_append(o, e == 'b'
            ? "(?:(?<=[" ONIG_WORD "])(?![" ONIG_WORD "])|(?<![" ONIG_WORD "])(?=[" ONIG_WORD "]))"
            : "(?:(?<=[" ONIG_WORD "])(?=[" ONIG_WORD "])|(?<![" ONIG_WORD "])(?![" ONIG_WORD "]))");
        return true;
    case 'x':
        if (p[2] != '{') {
            int v = 0, i = 2;
            for (; i < 4 && hex_value(p[i]) >= 0; i++) v = v * 16 + hex_value(p[i]);
            if (v >= 0x80) {
                *why = g_strdup("\\xHH above 7F is a raw byte in Oniguruma; write \\x{HHHH} instead");
                return false;
            }
        }
        break;
    default:
        break;
    }
    if (strchr("xpPo", e) && p[2] == '{') {   /* \x{..} \p{..}: copy through the brace */
        const char *close = strchr(p + 2, '}');
        if (!close) { *why = g_strdup("unterminated \\x{...} or \\p{...}"); return false; }
        g_string_append_len(o, p, close + 1 - p);
        *pp = close + 1;
        return true;
    }
    /* Same meaning in both dialects: copy the backslash and the whole (UTF-8) character. */
    const char *next = g_utf8_next_char(p + 1);
    g_string_append_len(o, p, next - p);
    *pp = next;
    return true;
}

/* Handles '{' outside a class. Oniguruma intervals are {n} {n,} {n,m} {,m}; anything else is a
 * literal brace in both dialects. {,m} becomes {0,m}; quantifier suffixes whose meaning differs
 * ({n}? is "optional" in Oniguruma, {..}+ is possessive in PCRE2) are refused. */
static bool translate_brace(GString *o, const char **pp, char **why)
{
    const char *p = *pp, *q = p + 1;
    const char *d1 = q;
    while (g_ascii_isdigit(*q)) q++;
    bool has_d1 = q > d1, comma = *q == ',';
    if (comma) q++;
    const char *d2 = q;
    while (g_ascii_isdigit(*q)) q++;
    bool has_d2 = q > d2;
    if (*q != '}' || !(has_d1 || (comma && has_d2))) {
        g_string_append_c(o, '{');
        *pp = p + 1;
        return true;
    }
    if ((!comma && q[1] == '?') || q[1] == '+') {
        *why = g_strdup("an interval followed by '?' or '+' means different things in Oniguruma "
                        "and PCRE2; add a group, e.g. (?:x{n})?");
        return false;
    }
    g_string_append(o, has_d1 ? "{" : "{0");
    g_string_append_len(o, p + 1, q + 1 - (p + 1));
    *pp = q + 1;
    return true;
}

/* Refuses inline options whose letters mean something else in PCRE2. */
static bool check_group(const char *p, char **why)
{
    if (p[1] != '?') return true;
    for (const char *q = p + 2; *q && *q != ')' && *q != ':'; q++) {
        if (!strchr("imx-", *q)) return true;    /* not an option group */
        if (*q == 'm') {
            *why = g_strdup("(?m) means dot-all in Oniguruma but multi-line in PCRE2; use (?s)");
            return false;
        }
    }
    return true;
}

/* Oniguruma (ONIG_SYNTAX_ONIGURUMA, UTF-8) pattern → PCRE2 pattern for GRegex. */
static char *translate_regex(const char *re, char **why)
{
    g_autoptr(GString) o = g_string_new(NULL);
    bool in_class = false;
    const char *p = re;
    while (*p) {
        if (*p == '\\') {
            if (!translate_escape(o, &p, in_class, why)) return NULL;
        } else if (in_class && *p == '[') {
            const char *end = p[1] == ':' ? strstr(p + 2, ":]") : NULL;
            if (!end) {
                *why = g_strdup("nested character classes are Oniguruma-only");
                return NULL;
            }
            g_string_append_len(o, p, end + 2 - p);
            p = end + 2;
        } else if (in_class && p[0] == '&' && p[1] == '&') {
            *why = g_strdup("class intersection (&&) is Oniguruma-only");
            return NULL;
        } else if (!in_class && *p == '[') {
            in_class = true;
            g_string_append_c(o, *p++);
            if (*p == '^') g_string_append_c(o, *p++);
            if (*p == ']') g_string_append_c(o, *p++);   /* a leading ']' is literal */
        } else if (in_class && *p == ']') {
            in_class = false;
            g_string_append_c(o, *p++);
        } else if (!in_class && *p == '{') {
            if (!translate_brace(o, &p, why)) return NULL;
        } else {
            if (!in_class && *p == '(' && !check_group(p, why)) return NULL;
            g_string_append_c(o, *p++);
        }
    }
    return g_string_free(g_steal_pointer(&o), FALSE);
}

/* ================================================================== pipeline parsing */

static bool parse_normalizer(Loader *ld, JsonObject *root)
{
    JsonNode *n = member(root, "normalizer");
    if (!n) return true;
    if (!JSON_NODE_HOLDS_OBJECT(n)) return fail(ld, HYOCR_ERROR_TOKENIZER, _("normalizer must be an object or null"));
    JsonObject *o = json_node_get_object(n);
    JsonNode *list = member(o, "normalizers");
    if (g_strcmp0(type_of(o), "Sequence") == 0 && list && JSON_NODE_HOLDS_ARRAY(list) &&
        json_array_get_length(json_node_get_array(list)) == 0)
        return true;
    return fail(ld, HYOCR_ERROR_TOKENIZER,
                _("normalizer \"%s\" is not supported (only null or an empty Sequence, as in the "
                  "HunyuanOCR release)"), type_of(o));
}

static bool compile_split(Loader *ld, hyocr_tokenizer *tok, JsonObject *s, guint index)
{
    g_autofree char *where = g_strdup_printf("pre_tokenizer.pretokenizers[%u]", index);
    const char *behavior = NULL;
    bool invert = false;
    if (!opt_string(ld, s, where, "behavior", &behavior) || !opt_bool(ld, s, where, "invert", &invert))
        return false;
    if (g_strcmp0(behavior, "Isolated") != 0 || invert)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s: only Split with behavior Isolated and invert false "
                      "is supported (found behavior %s, invert %s)"), where,
                    behavior ? behavior : "(none)", invert ? "true" : "false");
    JsonObject *pat = need_object(ld, s, where, "pattern");
    if (!pat) return false;
    const char *regex = NULL, *literal = NULL;
    if (!opt_string(ld, pat, where, "Regex", &regex) || !opt_string(ld, pat, where, "String", &literal))
        return false;
    if (!regex && !literal)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.pattern has neither Regex nor String"), where);
    g_autofree char *why = NULL;
    g_autofree char *pcre = regex ? translate_regex(regex, &why) : g_regex_escape_string(literal, -1);
    if (!pcre)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s: regex /%s/ is not supported: %s"), where, regex, why);
    g_autoptr(GError) err = NULL;
    GRegex *re = g_regex_new(pcre, G_REGEX_OPTIMIZE | G_REGEX_MULTILINE | G_REGEX_NEWLINE_LF, 0, &err);
    if (!re)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s: cannot compile regex /%s/: %s"), where,
                    regex ? regex : literal, err->message);
    g_ptr_array_add(tok->splits, re);
    return true;
}

static bool check_byte_level(Loader *ld, JsonObject *o, const char *where)
{
    bool prefix = false, use_regex = true;
    if (!opt_bool(ld, o, where, "add_prefix_space", &prefix) || !opt_bool(ld, o, where, "use_regex", &use_regex))
        return false;
    if (prefix || use_regex)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s: ByteLevel needs add_prefix_space=false and "
                      "use_regex=false (the release's setting); found %s/%s"), where,
                    prefix ? "true" : "false", use_regex ? "true" : "false");
    return true;
}

/* Sequence[Split(Isolated)*, ByteLevel] or a bare ByteLevel. */
static bool parse_pre_tokenizer(Loader *ld, hyocr_tokenizer *tok, JsonObject *root)
{
    JsonObject *pt = need_object(ld, root, "tokenizer", "pre_tokenizer");
    if (!pt) return false;
    if (g_strcmp0(type_of(pt), "ByteLevel") == 0) return check_byte_level(ld, pt, "pre_tokenizer");
    if (g_strcmp0(type_of(pt), "Sequence") != 0)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("pre_tokenizer \"%s\" is not supported (expected a "
                      "Sequence of Split then ByteLevel)"), type_of(pt));
    JsonArray *list = need_array(ld, pt, "pre_tokenizer", "pretokenizers");
    if (!list) return false;
    guint n = json_array_get_length(list);
    for (guint i = 0; i < n; i++) {
        JsonNode *e = json_array_get_element(list, i);
        JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
        const char *type = type_of(o);
        g_autofree char *where = g_strdup_printf("pre_tokenizer.pretokenizers[%u]", i);
        if (i + 1 == n && g_strcmp0(type, "ByteLevel") == 0) return check_byte_level(ld, o, where);
        if (g_strcmp0(type, "Split") != 0)
            return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s: \"%s\" is not supported here (expected Split, "
                          "and ByteLevel last)"), where, type);
        if (!compile_split(ld, tok, o, i)) return false;
    }
    return fail(ld, HYOCR_ERROR_TOKENIZER, _("pre_tokenizer: the Sequence must end with ByteLevel"));
}

static bool parse_decoder(Loader *ld, JsonObject *root)
{
    JsonNode *n = member(root, "decoder");
    JsonObject *o = n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
    if (g_strcmp0(type_of(o), "ByteLevel") == 0) return true;
    return fail(ld, HYOCR_ERROR_TOKENIZER, _("decoder \"%s\" is not supported (only ByteLevel)"),
                o ? type_of(o) : "null");
}

/* ================================================================== model */

static size_t merge_slot(const hyocr_tokenizer *tok, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 32)) & tok->merge_mask;
}

static const MergeSlot *merge_find(const hyocr_tokenizer *tok, int32_t a, int32_t b)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    for (size_t i = merge_slot(tok, key);; i = (i + 1) & tok->merge_mask) {
        const MergeSlot *s = &tok->merges[i];
        if (s->id < 0) return NULL;
        if (s->key == key) return s;
    }
}

/* Later duplicates overwrite earlier ones, as HF's HashMap collect does. */
static void merge_put(hyocr_tokenizer *tok, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    size_t i = merge_slot(tok, key);
    while (tok->merges[i].id >= 0 && tok->merges[i].key != key) i = (i + 1) & tok->merge_mask;
    tok->merges[i] = (MergeSlot){ key, rank, id };
}

static int32_t vocab_get(const hyocr_tokenizer *tok, const char *s)
{
    return GPOINTER_TO_INT(g_hash_table_lookup(tok->vocab, s)) - 1;
}

static bool parse_vocab(Loader *ld, hyocr_tokenizer *tok, JsonObject *model)
{
    JsonObject *v = need_object(ld, model, "model", "vocab");
    if (!v) return false;
    tok->vocab = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GList) names = json_object_get_members(v);
    for (GList *l = names; l; l = l->next) {
        int32_t id;
        g_autofree char *what = g_strdup_printf("model.vocab[\"%s\"]", (const char *)l->data);
        if (!parse_id(ld, json_object_get_member(v, l->data), what, &id)) return false;
        g_hash_table_replace(tok->vocab, g_strdup(l->data), GINT_TO_POINTER(id + 1));
        tok->n_ids = MAX(tok->n_ids, id + 1);
    }
    tok->vocab_size = g_hash_table_size(tok->vocab);
    return true;
}

/* One merge as its two halves: "a b" (legacy) or ["a", "b"]. */
static bool merge_halves(Loader *ld, JsonNode *e, guint i, char **a, char **b)
{
    if (node_is(e, G_TYPE_STRING)) {
        g_auto(GStrv) parts = g_strsplit(json_node_get_string(e), " ", -1);
        if (g_strv_length(parts) == 2) {
            *a = g_strdup(parts[0]), *b = g_strdup(parts[1]);
            return true;
        }
    } else if (JSON_NODE_HOLDS_ARRAY(e)) {
        JsonArray *p = json_node_get_array(e);
        if (json_array_get_length(p) == 2 && node_is(json_array_get_element(p, 0), G_TYPE_STRING) &&
            node_is(json_array_get_element(p, 1), G_TYPE_STRING)) {
            *a = g_strdup(json_array_get_string_element(p, 0));
            *b = g_strdup(json_array_get_string_element(p, 1));
            return true;
        }
    }
    return fail(ld, HYOCR_ERROR_TOKENIZER, _("model.merges[%u] must be \"a b\" or [\"a\", \"b\"]"), i);
}

static bool parse_merges(Loader *ld, hyocr_tokenizer *tok, JsonObject *model)
{
    JsonArray *m = need_array(ld, model, "model", "merges");
    if (!m) return false;
    guint n = json_array_get_length(m);
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap *= 2;
    tok->merges = g_new(MergeSlot, cap);
    for (size_t i = 0; i < cap; i++) tok->merges[i].id = -1;
    tok->merge_mask = cap - 1;
    size_t plen = tok->prefix ? strlen(tok->prefix) : 0;
    for (guint i = 0, rank = 0; i < n; i++) {
        JsonNode *e = json_array_get_element(m, i);
        g_autofree char *a = NULL, *b = NULL;
        if (node_is(e, G_TYPE_STRING) && g_str_has_prefix(json_node_get_string(e), "#version"))
            continue;   /* merges.txt header that legacy files may carry; it takes no rank */
        if (!merge_halves(ld, e, i, &a, &b)) return false;
        if (strlen(b) < plen || strncmp(b, tok->prefix ? tok->prefix : "", plen) != 0)
            return fail(ld, HYOCR_ERROR_TOKENIZER, _("model.merges[%u]: \"%s\" lacks the "
                          "continuing_subword_prefix"), i, b);
        g_autofree char *joined = g_strconcat(a, b + plen, NULL);
        int32_t ia = vocab_get(tok, a), ib = vocab_get(tok, b), ij = vocab_get(tok, joined);
        if (ia < 0 || ib < 0 || ij < 0)
            return fail(ld, HYOCR_ERROR_TOKENIZER, _("model.merges[%u] (\"%s\" + \"%s\"): \"%s\" is not "
                          "in model.vocab"), i, a, b, ia < 0 ? a : ib < 0 ? b : joined);
        merge_put(tok, ia, ib, rank++, ij);
    }
    return true;
}

static bool parse_model_flags(Loader *ld, hyocr_tokenizer *tok, JsonObject *model)
{
    JsonNode *d = member(model, "dropout");
    if (d && ((!node_is(d, G_TYPE_DOUBLE) && !node_is(d, G_TYPE_INT64)) || json_node_get_double(d) != 0.0))
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("model.dropout must be null or 0: BPE dropout makes "
                      "encoding random and is only meant for training"));
    const char *unk, *prefix, *suffix;
    if (!opt_string(ld, model, "model", "unk_token", &unk) ||
        !opt_string(ld, model, "model", "continuing_subword_prefix", &prefix) ||
        !opt_string(ld, model, "model", "end_of_word_suffix", &suffix) ||
        !opt_bool(ld, model, "model", "fuse_unk", &tok->fuse_unk) ||
        !opt_bool(ld, model, "model", "byte_fallback", &tok->byte_fallback) ||
        !opt_bool(ld, model, "model", "ignore_merges", &tok->ignore_merges))
        return false;
    tok->unk_token = g_strdup(unk);
    tok->prefix = g_strdup(prefix);
    tok->suffix = g_strdup(suffix);
    return true;
}

static bool parse_model(Loader *ld, hyocr_tokenizer *tok, JsonObject *root)
{
    JsonObject *model = need_object(ld, root, "tokenizer", "model");
    if (!model) return false;
    const char *type = type_of(model);
    if (*type && strcmp(type, "BPE") != 0)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("model type \"%s\" is not supported (only BPE)"), type);
    if (!parse_model_flags(ld, tok, model) || !parse_vocab(ld, tok, model) || !parse_merges(ld, tok, model))
        return false;
    tok->unk_id = tok->unk_token ? vocab_get(tok, tok->unk_token) : -1;
    if (tok->unk_token && tok->unk_id < 0)
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("model.unk_token \"%s\" is not in model.vocab"), tok->unk_token);
    bool all = true;
    for (int b = 0; b < 256; b++) {
        char s[8];
        s[g_unichar_to_utf8(tok->byte_cp[b], s)] = '\0';
        tok->byte_id[b] = vocab_get(tok, s);
        all = all && tok->byte_id[b] >= 0;
    }
    tok->fast_bytes = all && !tok->prefix && !tok->suffix;
    return true;
}

/* ================================================================== added tokens */

static int32_t trie_child(GArray *t, int32_t node, guint8 byte)
{
    for (int32_t c = g_array_index(t, TrieNode, node).child; c >= 0; c = g_array_index(t, TrieNode, c).sibling)
        if (g_array_index(t, TrieNode, c).byte == byte) return c;
    return -1;
}

static void trie_insert(GArray *t, const char *s, size_t n, int32_t value)
{
    if (t->len == 0) g_array_append_val(t, ((TrieNode){ -1, -1, -1, 0 }));
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = trie_child(t, node, (guint8)s[i]);
        if (c < 0) {
            TrieNode fresh = { -1, g_array_index(t, TrieNode, node).child, -1, (guint8)s[i] };
            g_array_append_val(t, fresh);
            c = (int32_t)t->len - 1;
            g_array_index(t, TrieNode, node).child = c;
        }
        node = c;
    }
    g_array_index(t, TrieNode, node).value = value;
}

/* Longest pattern starting at s; -1 when none. */
static int32_t trie_longest(GArray *t, const char *s, size_t n, size_t *len)
{
    int32_t node = 0, best = -1;
    for (size_t i = 0; i < n; i++) {
        if ((node = trie_child(t, node, (guint8)s[i])) < 0) break;
        int32_t v = g_array_index(t, TrieNode, node).value;
        if (v >= 0) best = v, *len = i + 1;
    }
    return best;
}

static bool parse_added_one(Loader *ld, JsonObject *o, guint i, AddedTok *a, int32_t *file_id)
{
    g_autofree char *where = g_strdup_printf("added_tokens[%u]", i);
    const char *content = NULL;
    a->normalized = true;   /* AddedToken's default */
    if (!o) return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s must be an object"), where);
    if (!parse_id(ld, member(o, "id"), where, file_id) || !opt_string(ld, o, where, "content", &content) ||
        !opt_bool(ld, o, where, "single_word", &a->single_word) || !opt_bool(ld, o, where, "lstrip", &a->lstrip) ||
        !opt_bool(ld, o, where, "rstrip", &a->rstrip) || !opt_bool(ld, o, where, "normalized", &a->normalized) ||
        !opt_bool(ld, o, where, "special", &a->special))
        return false;
    if (!content) return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.content is missing"), where);
    if (!utf8_valid((const guint8 *)content, strlen(content)))
        return fail(ld, HYOCR_ERROR_TOKENIZER, _("%s.content is not valid UTF-8"), where);
    a->content = g_strdup(content);
    a->len = strlen(content);
    return true;
}

/* HF's id rule (AddedVocabulary::add_tokens): an existing content keeps its id, a vocab token
 * keeps its vocab id, anything else takes the next id counting from the vocab size. */
static int32_t hf_added_id(const hyocr_tokenizer *tok, gsize slot, const char *content, int32_t *next_id)
{
    if (slot) return tok->added[slot - 1].id;
    int32_t id = vocab_get(tok, content);
    return id >= 0 ? id : (*next_id)++;
}

/* Reads added_tokens in file order, checks their ids, and builds the two match tries. */
static bool parse_added_tokens(Loader *ld, hyocr_tokenizer *tok, JsonObject *root)
{
    JsonNode *n = member(root, "added_tokens");
    tok->added_index = g_hash_table_new(g_str_hash, g_str_equal);
    for (int k = 0; k < 2; k++) tok->trie[k] = g_array_new(FALSE, FALSE, sizeof(TrieNode));
    if (!n) return true;
    if (!JSON_NODE_HOLDS_ARRAY(n)) return fail(ld, HYOCR_ERROR_TOKENIZER, _("added_tokens must be an array"));
    JsonArray *arr = json_node_get_array(n);
    guint count = json_array_get_length(arr);
    tok->added = g_new0(AddedTok, count);
    int32_t next_id = (int32_t)tok->vocab_size;
    for (guint i = 0; i < count; i++) {
        JsonNode *e = json_array_get_element(arr, i);
        AddedTok a = { 0 };
        int32_t file_id, id;
        if (!parse_added_one(ld, JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL, i, &a, &file_id)) {
            g_free(a.content);
            return false;
        }
        if (a.len == 0) { g_free(a.content); continue; }   /* HF ignores empty tokens */
        gsize slot = GPOINTER_TO_SIZE(g_hash_table_lookup(tok->added_index, a.content));
        id = hf_added_id(tok, slot, a.content, &next_id);
        if (id != file_id) {
            fail(ld, HYOCR_ERROR_TOKENIZER, _("added_tokens[%u] \"%s\" has id %d but HF tokenizers would "
                   "give it id %d (vocab id, or the next id after the vocab); the file is inconsistent"),
                 i, a.content, file_id, id);
            g_free(a.content);
            return false;
        }
        a.id = id;
        if (slot) {   /* same content again: the later flags win */
            g_free(a.content);
            a.content = tok->added[slot - 1].content;
            tok->added[slot - 1] = a;
            continue;
        }
        tok->added[tok->n_added] = a;
        g_hash_table_insert(tok->added_index, a.content, GSIZE_TO_POINTER(++tok->n_added));
        tok->n_ids = MAX(tok->n_ids, id + 1);
    }
    for (size_t i = 0; i < tok->n_added; i++)
        trie_insert(tok->trie[tok->added[i].normalized], tok->added[i].content, tok->added[i].len, (int32_t)i);
    return true;
}

/* ================================================================== id tables */

/* The ByteLevel decoder's per-token rule: alphabet-only tokens become bytes, others stay text. */
static void append_token_bytes(const hyocr_tokenizer *tok, GByteArray *out, const char *s)
{
    guint start = out->len;
    for (const char *p = s; *p; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        if (c >= BL_NCP || tok->cp_byte[c] < 0) {
            g_byte_array_set_size(out, start);
            g_byte_array_append(out, (const guint8 *)s, (guint)strlen(s));
            return;
        }
        guint8 b = (guint8)tok->cp_byte[c];
        g_byte_array_append(out, &b, 1);
    }
}

static void build_id_tables(hyocr_tokenizer *tok)
{
    g_autoptr(GHashTable) special = g_hash_table_new(g_str_hash, g_str_equal);
    const char **str = tok->id_str = g_new0(const char *, tok->n_ids);
    tok->id_flags = g_new0(guint8, tok->n_ids);
    GHashTableIter it;
    gpointer key, val;
    g_hash_table_iter_init(&it, tok->vocab);
    while (g_hash_table_iter_next(&it, &key, &val))
        str[GPOINTER_TO_INT(val) - 1] = key;
    for (size_t i = 0; i < tok->n_added; i++) {
        str[tok->added[i].id] = tok->added[i].content;   /* added content wins, as in decode */
        if (tok->added[i].special) g_hash_table_add(special, tok->added[i].content);
    }
    tok->dec = g_byte_array_new();
    tok->dec_off = g_new(uint32_t, tok->n_ids + 1);
    for (int32_t id = 0; id < tok->n_ids; id++) {
        tok->dec_off[id] = tok->dec->len;
        if (!str[id]) continue;
        tok->id_flags[id] |= ID_KNOWN;
        /* skip_special tests the token's string, as Tokenizer::decode does */
        if (g_hash_table_contains(special, str[id])) tok->id_flags[id] |= ID_SPECIAL;
        append_token_bytes(tok, tok->dec, str[id]);
    }
    tok->dec_off[tok->n_ids] = tok->dec->len;
}

/* ================================================================== word cache */

typedef struct {
    size_t n;
    const guint8 *data;
} WordKey;

static guint word_hash(gconstpointer k)
{
    const WordKey *w = k;
    guint32 h = 2166136261u;
    for (size_t i = 0; i < w->n; i++) h = (h ^ w->data[i]) * 16777619u;
    return h;
}

static gboolean word_equal(gconstpointer a, gconstpointer b)
{
    const WordKey *x = a, *y = b;
    return x->n == y->n && memcmp(x->data, y->data, x->n) == 0;
}

/* ================================================================== load / free */

hyocr_tokenizer *hyocr_tokenizer_load(const char *tokenizer_json_path, GError **error)
{
    g_return_val_if_fail(tokenizer_json_path != NULL, NULL);
    Loader ld = { tokenizer_json_path, error };
    g_autoptr(JsonNode) doc = load_json(&ld);
    if (!doc) return NULL;
    JsonObject *root = json_node_get_object(doc);
    g_autoptr(hyocr_tokenizer) tok = g_new0(hyocr_tokenizer, 1);
    tok->path = g_strdup(tokenizer_json_path);
    tok->splits = g_ptr_array_new_with_free_func((GDestroyNotify)g_regex_unref);
    g_mutex_init(&tok->cache_lock);
    tok->cache = g_hash_table_new_full(word_hash, word_equal, g_free, g_free);
    byte_level_tables(tok);
    const char *version = NULL;
    if (!opt_string(&ld, root, "tokenizer", "version", &version)) return NULL;
    if (version && strcmp(version, "1.0") != 0) {
        fail(&ld, HYOCR_ERROR_TOKENIZER, _("tokenizer.json version \"%s\" is unknown (expected \"1.0\")"), version);
        return NULL;
    }
    if (!parse_normalizer(&ld, root) || !parse_pre_tokenizer(&ld, tok, root) || !parse_decoder(&ld, root) ||
        !parse_model(&ld, tok, root) || !parse_added_tokens(&ld, tok, root))
        return NULL;
    if (tok->n_ids == 0) {
        fail(&ld, HYOCR_ERROR_TOKENIZER, _("the vocabulary is empty"));
        return NULL;
    }
    build_id_tables(tok);
    return g_steal_pointer(&tok);
}

void hyocr_tokenizer_free(hyocr_tokenizer *tok)
{
    if (!tok) return;
    g_free(tok->path);
    if (tok->vocab) g_hash_table_unref(tok->vocab);
    g_free(tok->id_str);
    g_free(tok->merges);
    g_free(tok->prefix);
    g_free(tok->suffix);
    g_free(tok->unk_token);
    for (size_t i = 0; i < tok->n_added; i++) g_free(tok->added[i].content);
    g_free(tok->added);
    if (tok->added_index) g_hash_table_unref(tok->added_index);
    for (int k = 0; k < 2; k++)
        if (tok->trie[k]) g_array_unref(tok->trie[k]);
    if (tok->splits) g_ptr_array_unref(tok->splits);
    if (tok->dec) g_byte_array_unref(tok->dec);
    g_free(tok->dec_off);
    g_free(tok->id_flags);
    if (tok->cache) g_hash_table_unref(tok->cache);
    g_mutex_clear(&tok->cache_lock);
    g_free(tok);
}

/* ================================================================== BPE */

typedef struct {
    int32_t id;
    int32_t prev, next;
    uint32_t len;      /* 0 once merged into its left neighbour */
} Sym;

typedef struct {
    uint32_t rank, pos;
    int32_t id;
} Cand;

static bool cand_less(const Cand *a, const Cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(GArray *h, Cand c)
{
    g_array_append_val(h, c);
    Cand *v = (Cand *)h->data;
    for (guint i = h->len - 1; i > 0;) {
        guint up = (i - 1) / 2;
        if (!cand_less(&v[i], &v[up])) break;
        Cand t = v[i]; v[i] = v[up]; v[up] = t;
        i = up;
    }
}

static Cand heap_pop(GArray *h)
{
    Cand *v = (Cand *)h->data, top = v[0];
    v[0] = v[h->len - 1];
    g_array_set_size(h, h->len - 1);
    for (guint i = 0;;) {
        guint l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && cand_less(&v[l], &v[m])) m = l;
        if (r < h->len && cand_less(&v[r], &v[m])) m = r;
        if (m == i) break;
        Cand t = v[i]; v[i] = v[m]; v[m] = t;
        i = m;
    }
    return top;
}

static void sym_add(GArray *syms, int32_t id, uint32_t len)
{
    Sym s = { id, (int32_t)syms->len - 1, -1, len };
    if (syms->len) g_array_index(syms, Sym, syms->len - 1).next = (int32_t)syms->len;
    g_array_append_val(syms, s);
}

/* Byte fallback: <0xHH> for every byte of the symbol string, all or nothing. */
static bool sym_add_byte_fallback(const hyocr_tokenizer *tok, GArray *syms, const char *s)
{
    size_t n = strlen(s);
    int32_t ids[64];
    if (n > G_N_ELEMENTS(ids)) return false;
    for (size_t i = 0; i < n; i++) {
        char name[8];
        g_snprintf(name, sizeof name, "<0x%02X>", (guint8)s[i]);
        if ((ids[i] = vocab_get(tok, name)) < 0) return false;
    }
    for (size_t i = 0; i < n; i++) sym_add(syms, ids[i], 1);
    return true;
}

/* BPE::merge_word's symbol setup for the general case (prefix/suffix, missing bytes, unk). */
static void initial_symbols_slow(const hyocr_tokenizer *tok, const guint8 *w, size_t n, GArray *syms)
{
    int32_t unk = -1;
    uint32_t unk_len = 0;
    g_autoptr(GString) s = g_string_new(NULL);
    for (size_t i = 0; i < n; i++) {
        g_string_assign(s, i > 0 && tok->prefix ? tok->prefix : "");
        g_string_append_unichar(s, tok->byte_cp[w[i]]);
        if (i + 1 == n && tok->suffix) g_string_append(s, tok->suffix);
        int32_t id = vocab_get(tok, s->str);
        if (id >= 0) {
            if (unk >= 0) sym_add(syms, unk, unk_len);
            unk = -1;
            sym_add(syms, id, 1);
            continue;
        }
        if (tok->byte_fallback && sym_add_byte_fallback(tok, syms, s->str)) continue;
        if (tok->unk_id < 0) continue;   /* HF drops the character silently */
        if (unk >= 0 && tok->fuse_unk) { unk_len++; continue; }
        if (unk >= 0) sym_add(syms, unk, unk_len);
        unk = tok->unk_id, unk_len = 1;
    }
    if (unk >= 0) sym_add(syms, unk, unk_len);
}

static void merge_all(const hyocr_tokenizer *tok, GArray *syms)
{
    Sym *v = (Sym *)syms->data;
    g_autoptr(GArray) heap = g_array_sized_new(FALSE, FALSE, sizeof(Cand), syms->len);
    for (guint i = 0; i + 1 < syms->len; i++) {
        const MergeSlot *m = merge_find(tok, v[i].id, v[i + 1].id);
        if (m) heap_push(heap, (Cand){ m->rank, i, m->id });
    }
    while (heap->len) {
        Cand top = heap_pop(heap);
        Sym *cur = &v[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        Sym right = v[cur->next];
        const MergeSlot *m = merge_find(tok, cur->id, right.id);
        if (!m || m->id != top.id) continue;   /* stale entry */
        v[cur->next].len = 0;
        cur->id = top.id, cur->len += right.len, cur->next = right.next;
        if (right.next >= 0) v[right.next].prev = (int32_t)top.pos;
        if (cur->prev >= 0 && (m = merge_find(tok, v[cur->prev].id, cur->id)))
            heap_push(heap, (Cand){ m->rank, (uint32_t)cur->prev, m->id });
        if (cur->next >= 0 && (m = merge_find(tok, cur->id, v[cur->next].id)))
            heap_push(heap, (Cand){ m->rank, top.pos, m->id });
    }
}

/* ids of one pre-tokenized piece (raw bytes; the byte-level mapping is implicit). */
static GArray *bpe_word(const hyocr_tokenizer *tok, const guint8 *w, size_t n)
{
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    if (tok->ignore_merges) {
        g_autoptr(GString) s = g_string_new(NULL);
        append_mapped(tok, s, w, n);
        int32_t id = vocab_get(tok, s->str);
        if (id >= 0) return g_array_append_val(ids, id);
    }
    g_autoptr(GArray) syms = g_array_sized_new(FALSE, FALSE, sizeof(Sym), (guint)n);
    if (tok->fast_bytes)
        for (size_t i = 0; i < n; i++) sym_add(syms, tok->byte_id[w[i]], 1);
    else
        initial_symbols_slow(tok, w, n, syms);
    merge_all(tok, syms);
    for (guint i = 0; i < syms->len; i++)
        if (g_array_index(syms, Sym, i).len) g_array_append_val(ids, g_array_index(syms, Sym, i).id);
    return ids;
}

static void encode_word(const hyocr_tokenizer *tok, const guint8 *w, size_t n, GArray *out)
{
    hyocr_tokenizer *mut = (hyocr_tokenizer *)tok;   /* only the cache changes */
    WordKey probe = { n, w };
    if (n < CACHE_WORD_MAX) {
        g_mutex_lock(&mut->cache_lock);
        const int32_t *hit = g_hash_table_lookup(tok->cache, &probe);
        if (hit) g_array_append_vals(out, hit + 1, (guint)hit[0]);
        g_mutex_unlock(&mut->cache_lock);
        if (hit) return;
    }
    g_autoptr(GArray) ids = bpe_word(tok, w, n);
    g_array_append_vals(out, ids->data, ids->len);
    if (n >= CACHE_WORD_MAX) return;
    WordKey *key = g_malloc(sizeof *key + n);
    key->n = n;
    key->data = memcpy(key + 1, w, n);
    int32_t *val = g_new(int32_t, ids->len + 1);
    val[0] = (int32_t)ids->len;
    if (ids->len) memcpy(val + 1, ids->data, ids->len * sizeof(int32_t));   /* an empty GArray's data is NULL */
    g_mutex_lock(&mut->cache_lock);
    if (g_hash_table_size(tok->cache) >= CACHE_ENTRIES) g_hash_table_remove_all(tok->cache);
    g_hash_table_replace(tok->cache, key, val);
    g_mutex_unlock(&mut->cache_lock);
}

/* ================================================================== encode */

/* Applies splits[level..] to the piece, then BPE. Depth-first keeps HF's piece order. */
static void pretokenize(const hyocr_tokenizer *tok, guint level, const char *p, size_t n, GArray *out)
{
    if (n == 0) return;
    if (level == tok->splits->len) {
        encode_word(tok, (const guint8 *)p, n, out);
        return;
    }
    GRegex *re = g_ptr_array_index(tok->splits, level);
    size_t last_end = 0, prev = 0;
    gssize last_match_end = -1;
    while (last_end <= n) {
        GMatchInfo *mi = NULL;
        int s = 0, e = 0;
        bool found = g_regex_match_full(re, p, (gssize)n, (gint)last_end, 0, &mi, NULL) &&
                     g_match_info_fetch_pos(mi, 0, &s, &e);
        g_match_info_free(mi);
        if (!found) break;
        if (s == e && last_match_end == e) {   /* onig FindMatches: step over the empty match */
            last_end += last_end < n ? (size_t)(g_utf8_next_char(p + last_end) - (p + last_end)) : 1;
            continue;
        }
        last_end = (size_t)e, last_match_end = e;
        pretokenize(tok, level + 1, p + prev, (size_t)s - prev, out);
        pretokenize(tok, level + 1, p + s, (size_t)(e - s), out);
        prev = (size_t)e;
    }
    pretokenize(tok, level + 1, p + prev, n - prev, out);
}

static size_t trailing_space_start(const char *p, size_t end)
{
    const char *q = p + end;
    while (q > p) {
        const char *c = g_utf8_prev_char(q);
        if (!is_white_space(g_utf8_get_char(c))) break;
        q = c;
    }
    return (size_t)(q - p);
}

static size_t leading_space_len(const char *p, size_t n)
{
    const char *q = p;
    while (q < p + n && is_white_space(g_utf8_get_char(q))) q = g_utf8_next_char(q);
    return (size_t)(q - p);
}

/* single_word: no word character touching either end of the match. */
static bool single_word_ok(const char *p, size_t n, size_t start, size_t stop)
{
    if (start > 0 && is_word_char(g_utf8_get_char(g_utf8_prev_char(p + start)))) return false;
    if (stop < n && is_word_char(g_utf8_get_char(p + stop))) return false;
    return true;
}

static void split_added(const hyocr_tokenizer *tok, int phase, const char *p, size_t n, GArray *out);

/* AddedVocabulary::find_matches over one piece, then the gaps go to the next phase. */
static void match_added(const hyocr_tokenizer *tok, int phase, const char *p, size_t n, GArray *out)
{
    GArray *trie = tok->trie[phase];
    size_t pos = 0, start_offset = 0;
    while (pos < n) {
        size_t mlen = 0;
        int32_t idx = trie_longest(trie, p + pos, n - pos, &mlen);
        if (idx < 0) { pos++; continue; }
        const AddedTok *a = &tok->added[idx];
        size_t start = pos, stop = pos + mlen;
        pos = stop;   /* the match iterator moves on whether or not the match is used */
        if (a->single_word && !single_word_ok(p, n, start, stop)) continue;
        if (a->lstrip) start = MAX(trailing_space_start(p, start), start_offset);
        if (a->rstrip) stop += leading_space_len(p + stop, n - stop);
        if (start_offset < start) split_added(tok, phase + 1, p + start_offset, start - start_offset, out);
        g_array_append_val(out, a->id);
        start_offset = stop;
    }
    if (start_offset < n) split_added(tok, phase + 1, p + start_offset, n - start_offset, out);
}

static void split_added(const hyocr_tokenizer *tok, int phase, const char *p, size_t n, GArray *out)
{
    if (n == 0) return;
    if (phase == 2) pretokenize(tok, 0, p, n, out);
    else if (tok->trie[phase]->len == 0) split_added(tok, phase + 1, p, n, out);
    else match_added(tok, phase, p, n, out);
}

void hyocr_tokenizer_encode(const hyocr_tokenizer *tok, const char *text, gssize len, GArray *out)
{
    g_return_if_fail(tok != NULL && out != NULL && g_array_get_element_size(out) == sizeof(int32_t));
    if (!text) return;
    size_t n = len < 0 ? strlen(text) : (size_t)len;
    g_autoptr(GString) fixed = NULL;
    if (!utf8_valid((const guint8 *)text, n)) {
        fixed = g_string_sized_new(n + 16);
        utf8_append_lossy(fixed, (const guint8 *)text, n, true);
        text = fixed->str, n = fixed->len;
    }
    split_added(tok, 0, text, n, out);
}

/* ================================================================== decode */

static void append_id(const hyocr_tokenizer *tok, int32_t id, bool skip_special, GByteArray *buf)
{
    if (id < 0 || id >= tok->n_ids || !(tok->id_flags[id] & ID_KNOWN)) return;   /* HF skips unknown ids */
    if (skip_special && (tok->id_flags[id] & ID_SPECIAL)) return;
    g_byte_array_append(buf, tok->dec->data + tok->dec_off[id], tok->dec_off[id + 1] - tok->dec_off[id]);
}

/* A GString's text, handing its length out: decoded text can hold NUL bytes. */
static char *text_steal(GString *s, size_t *len)
{
    if (len) *len = s->len;
    return g_string_free(s, FALSE);
}

char *hyocr_tokenizer_decode(const hyocr_tokenizer *tok, const int32_t *ids, size_t n, bool skip_special,
                             size_t *len)
{
    g_return_val_if_fail(tok != NULL && (ids != NULL || n == 0), NULL);
    g_autoptr(GByteArray) buf = g_byte_array_new();
    for (size_t i = 0; i < n; i++) append_id(tok, ids[i], skip_special, buf);
    GString *s = g_string_sized_new(buf->len + 1);
    utf8_append_lossy(s, buf->data, buf->len, true);
    return text_steal(s, len);
}

GBytes *hyocr_tokenizer_token_bytes(const hyocr_tokenizer *tok, int32_t id)
{
    g_return_val_if_fail(tok != NULL, NULL);
    g_autoptr(GByteArray) buf = g_byte_array_new();
    append_id(tok, id, false, buf);
    return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}

int hyocr_tokenizer_n_vocab(const hyocr_tokenizer *tok)
{
    return tok ? tok->n_ids : 0;
}

int32_t hyocr_tokenizer_find(const hyocr_tokenizer *tok, const char *token)
{
    if (!tok || !token) return -1;
    gsize slot = GPOINTER_TO_SIZE(g_hash_table_lookup(tok->added_index, token));
    return slot ? tok->added[slot - 1].id : vocab_get(tok, token);
}

const char *hyocr_tokenizer_token(const hyocr_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || id >= tok->n_ids) return NULL;
    return tok->id_str[id];
}

bool hyocr_tokenizer_is_special(const hyocr_tokenizer *tok, int32_t id)
{
    return tok && id >= 0 && id < tok->n_ids && (tok->id_flags[id] & ID_SPECIAL);
}

/* ================================================================== streaming */

struct hyocr_detokenizer {
    const hyocr_tokenizer *tok;
    bool skip_special;
    GByteArray *pending;   /* an incomplete UTF-8 sequence (at most 3 bytes) */
};

hyocr_detokenizer *hyocr_detokenizer_init(const hyocr_tokenizer *tok, bool skip_special)
{
    g_return_val_if_fail(tok != NULL, NULL);
    hyocr_detokenizer *dt = g_new0(hyocr_detokenizer, 1);
    dt->tok = tok;
    dt->skip_special = skip_special;
    dt->pending = g_byte_array_new();
    return dt;
}

void hyocr_detokenizer_free(hyocr_detokenizer *dt)
{
    if (!dt) return;
    g_byte_array_unref(dt->pending);
    g_free(dt);
}

/* Lossy decoding only ever looks one sequence ahead, so emitting everything but an incomplete
 * tail gives exactly the one-shot result. */
char *hyocr_detokenizer_push(hyocr_detokenizer *dt, int32_t id, size_t *len)
{
    g_return_val_if_fail(dt != NULL, NULL);
    append_id(dt->tok, id, dt->skip_special, dt->pending);
    GString *s = g_string_new(NULL);
    size_t used = utf8_append_lossy(s, dt->pending->data, dt->pending->len, false);
    g_byte_array_remove_range(dt->pending, 0, (guint)used);
    return text_steal(s, len);
}

char *hyocr_detokenizer_flush(hyocr_detokenizer *dt, size_t *len)
{
    g_return_val_if_fail(dt != NULL, NULL);
    GString *s = g_string_new(NULL);
    utf8_append_lossy(s, dt->pending->data, dt->pending->len, true);
    g_byte_array_set_size(dt->pending, 0);
    return text_steal(s, len);
}
