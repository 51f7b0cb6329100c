/* hyocr — bounded JSON parsing (see json.h). The pre-scan follows json-glib 1.6's
 * lexer where it matters for counting brackets: double-quoted strings with
 * backslash escapes, single-quoted strings without (json-glib accepts them), and
 * comments (from a slash to the next). Anything it does not understand it leaves to json-glib. */
#include "json.h"
#include "error.h"
#include "i18n.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const char *p;
    size_t      n, at;
} scan;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_structural(char c) { return c && strchr("[]{},:\"'", c) != NULL; }

/* White space and comments. json-glib 1.6 reads a comment from a '/' to the next '/'
 * (its GScanner's one-character comment pair is "//"): a C comment is one, so are "//"
 * and "/x/"; a comment left open runs to the end. Read any other way, the pre-scan and
 * json-glib would see different values (found by fuzz-json). */
static void skip_blank(scan *s)
{
    while (s->at < s->n) {
        if (is_space(s->p[s->at])) {
            s->at++;
        } else if (s->p[s->at] == '/') {
            const char *end = memchr(s->p + s->at + 1, '/', s->n - s->at - 1);
            s->at = end ? (size_t)(end - s->p) + 1 : s->n;
        } else {
            return;
        }
    }
}

/* The code unit of a \uXXXX escape at at, or -1. */
static int escape_unit(const scan *s, size_t at)
{
    if (at + 6 > s->n || s->p[at] != '\\' || s->p[at + 1] != 'u') return -1;
    int v = 0;
    for (size_t i = at + 2; i < at + 6; i++) {
        int d = g_ascii_xdigit_value(s->p[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Past the closing quote (or to the end of an unterminated string). json-glib reads C's
 * octal escapes (\200, a byte that is not UTF-8), reads any four characters after \u as hex
 * digits, turns a lone low surrogate (\udc00) into bytes that are not UTF-8 and cuts a
 * string at \u0000; so an escape must be one of JSON's, a \u escape four hex digits naming
 * a character other than U+0000, surrogates only in pairs: *bad gets the offset of one
 * that is not. */
static void skip_string(scan *s, size_t *bad)
{
    char quote = s->p[s->at++];
    while (s->at < s->n) {
        char c = s->p[s->at];
        if (c == quote) {
            s->at++;
            return;
        }
        if (quote != '"' || c != '\\' || s->at + 1 >= s->n) {
            s->at++;
            continue;
        }
        if (s->p[s->at + 1] != 'u') {
            if (!s->p[s->at + 1] || !strchr("\"\\/bfnrt", s->p[s->at + 1])) {
                *bad = s->at;
                return;
            }
            s->at += 2;
            continue;
        }
        int u = escape_unit(s, s->at);
        int low = u >= 0xD800 && u <= 0xDBFF ? escape_unit(s, s->at + 6) : -1;
        if (u <= 0 || (u >= 0xDC00 && u <= 0xDFFF) || (u >= 0xD800 && u <= 0xDBFF && (low < 0xDC00 || low > 0xDFFF))) {
            *bad = s->at;
            return;
        }
        s->at += low >= 0 ? 12 : 6;
    }
}

/* A number, true/false/null or anything else json-glib will judge. */
static void skip_literal(scan *s)
{
    while (s->at < s->n && !is_space(s->p[s->at]) && !is_structural(s->p[s->at]) && s->p[s->at] != '/')
        s->at++;
}

/* json-glib keeps integers in 64 bits and wraps the larger ones without a word
 * (99999999999999999999 reads as -1), and takes 1e999 as infinity, which it then prints
 * as "inf". Its scanner also reads ".5", "0x1F" and "0b11". A number literal outside
 * int64 or double is refused; anything else that is not a number is left to json-glib. */
static bool number_in_range(const char *p, size_t n)
{
    size_t sign = n > 0 && p[0] == '-';
    if (sign >= n || !(g_ascii_isdigit(p[sign]) || p[sign] == '.')) return true;
    g_autofree char *lit = g_strndup(p, n);
    const char *digits = lit + sign;
    int base = g_ascii_strncasecmp(digits, "0x", 2) == 0 ? 16 : g_ascii_strncasecmp(digits, "0b", 2) == 0 ? 2 : 10;
    g_autoptr(GError) err = NULL;
    if (base != 10) {
        guint64 v;
        if (!g_ascii_string_to_unsigned(digits + 2, base, 0, G_MAXINT64, &v, &err))
            return !g_error_matches(err, G_NUMBER_PARSER_ERROR, G_NUMBER_PARSER_ERROR_OUT_OF_BOUNDS);
        return true;
    }
    if (!strpbrk(lit, ".eE")) {
        gint64 v;
        if (!g_ascii_string_to_signed(lit, 10, G_MININT64, G_MAXINT64, &v, &err))
            return !g_error_matches(err, G_NUMBER_PARSER_ERROR, G_NUMBER_PARSER_ERROR_OUT_OF_BOUNDS);
        return true;
    }
    char *end = NULL;
    double d = g_ascii_strtod(lit, &end);
    return *end != '\0' || isfinite(d);
}

static void set_at_error(GError **error, const scan *s, size_t at, const char *what)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at; i++, col++)
        if (s->p[i] == '\n') line++, col = 0;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s at byte %zu (line %zu, column %zu)"), what, at, line, col);
}

bool hyocr_json_check(const char *data, size_t len, int max_depth, GError **error)
{
    scan s = { data, data ? len : 0, 0 };
    if (s.n >= 3 && memcmp(s.p, "\xEF\xBB\xBF", 3) == 0) s.at = 3;   /* json-glib skips a BOM */
    int depth = 0;
    for (;;) {
        skip_blank(&s);
        if (s.at >= s.n) return true;   /* unfinished or empty: json-glib says what is missing */
        char c = s.p[s.at];
        if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                g_autofree char *what = g_strdup_printf(_("JSON nested deeper than %d levels"), max_depth);
                set_at_error(error, &s, s.at, what);
                return false;
            }
            s.at++;
            continue;
        }
        if (c == ']' || c == '}') {
            if (depth == 0) return true;   /* a stray closer: json-glib's error */
            depth--;
            s.at++;
        } else if (c == '"' || c == '\'') {
            size_t bad = SIZE_MAX;
            skip_string(&s, &bad);
            if (bad != SIZE_MAX) {
                set_at_error(error, &s, bad, _("an escape JSON does not have (it has \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\u with four hex "
                                                     "digits naming a character other than \\u0000, surrogates in pairs)"));
                return false;
            }
        } else if (c == ',' || c == ':') {
            s.at++;
            continue;
        } else {
            size_t start = s.at;
            skip_literal(&s);
            if (!number_in_range(s.p + start, s.at - start)) {
                set_at_error(error, &s, start, _("a number beyond what 64-bit integers and doubles hold"));
                return false;
            }
        }
        if (depth == 0) break;   /* the first value is complete */
    }
    skip_blank(&s);
    if (s.at < s.n) {
        set_at_error(error, &s, s.at, _("trailing data after the JSON value"));
        return false;
    }
    return true;
}

JsonNode *hyocr_json_parse(const char *data, size_t len, int max_depth, const char *name, GError **error)
{
    g_autoptr(GError) err = NULL;
    if (!hyocr_json_check(data, len, max_depth, &err)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, "%s%s%s", name ? name : "", name ? ": " : "",
                    err->message);
        return NULL;
    }
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, data ? data : "", data ? (gssize)len : 0, &err)) {
        /* json-glib quotes the broken text cut where its lexer stopped, maybe mid-character:
         * every message hyocr passes on (a 400's body, a remote server's fault) is UTF-8 */
        g_autofree char *valid = g_utf8_make_valid(err->message, -1);
        const char *msg = valid;
        bool located = g_str_has_prefix(msg, "<data>:");   /* <data>:LINE:COL: … */
        if (located) msg += strlen(name ? "<data>" : "<data>:");
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, "%s%s%s", name ? name : "",
                    name && !located ? ": " : "", msg);
        return NULL;
    }
    JsonNode *root = json_parser_steal_root(parser);
    if (!root)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PARSE, _("%s%sempty, no JSON value"), name ? name : "",
                    name ? ": " : "");
    return root;
}

JsonNode *hyocr_json_read_file(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot read: %s"), path, ioerr->message);
        return NULL;
    }
    return hyocr_json_parse(text, len, HYOCR_JSON_MAX_DEPTH, path, error);
}

JsonObject *hyocr_json_load_object(const char *path)
{
    g_autoptr(JsonNode) root = hyocr_json_read_file(path, NULL);
    return root && JSON_NODE_HOLDS_OBJECT(root) ? json_object_ref(json_node_get_object(root)) : NULL;
}

const char *hyocr_json_str(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING ? json_node_get_string(n) : NULL;
}

int64_t hyocr_json_int(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64 ? json_node_get_int(n) : -1;
}

/* Outside strings json-glib writes no control characters; inside, quotes and backslashes it
 * does escape, so the string bounds found here are right. Outside strings it has one more
 * slip: a double printed with an exponent gets ".0" appended ("1e+30.0", not JSON), and
 * an exponent is never followed by a '.' in JSON, so that ".0" is dropped. */
static char *repair_generator_output(const char *json)
{
    GString *out = g_string_sized_new(strlen(json) + 16);
    bool in_string = false, escaped = false, in_exponent = false;
    for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
        if (in_string && (*p < 0x20 || *p == 0xFF)) {
            g_string_append_printf(out, "\\u%04x", *p == 0xFF ? 0 : *p);
            continue;
        }
        if (!in_string) {
            if (in_exponent && p[0] == '.' && p[1] == '0') {
                p++;
                continue;
            }
            in_exponent = (in_exponent && (g_ascii_isdigit(*p) || *p == '+' || *p == '-')) ||
                          ((*p == 'e' || *p == 'E') && p > (const unsigned char *)json && g_ascii_isdigit(p[-1]));
        }
        if (in_string && !escaped && *p == '"') in_string = false;
        else if (!in_string && *p == '"') in_string = true;
        escaped = in_string && !escaped && *p == '\\';
        g_string_append_c(out, (char)*p);
    }
    return g_string_free(out, FALSE);
}

char *hyocr_json_to_data(JsonNode *root, bool pretty)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, pretty);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    return repair_generator_output(text);
}

void hyocr_json_add_text(JsonBuilder *b, const char *text, size_t len)
{
    g_autofree char *copy = g_malloc(len + 1);
    for (size_t i = 0; i < len; i++) copy[i] = text[i] ? text[i] : (char)0xFF;
    copy[len] = '\0';
    json_builder_add_string_value(b, copy);
}

void hyocr_json_member_str(JsonBuilder *b, const char *name, const char *v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_string_value(b, v);
}

void hyocr_json_member_int(JsonBuilder *b, const char *name, gint64 v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_int_value(b, v);
}
