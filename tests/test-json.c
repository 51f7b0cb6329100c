/* Tests for the bounded JSON door (json.c): nesting depth, trailing data, and the
 * lexical corners where a bracket is not a bracket (strings, comments). */
#include "json.h"
#include "error.h"

#include <string.h>

static void expect_ok(const char *text, int max_depth)
{
    g_autoptr(GError) err = NULL;
    if (!hyocr_json_check(text, strlen(text), max_depth, &err))
        g_error("'%s' refused: %s", text, err->message);
}

static void expect_refused(const char *text, int max_depth, const char *needle)
{
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_json_check(text, strlen(text), max_depth, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_PARSE);
    if (!strstr(err->message, needle)) g_error("'%s': message lacks '%s': %s", text, needle, err->message);
}

static char *nest(int n, const char *inner)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < n; i++) g_string_append_c(s, i % 2 ? '{' : '[');
    g_string_append(s, inner);
    for (int i = n - 1; i >= 0; i--) g_string_append_c(s, i % 2 ? '}' : ']');
    return g_string_free(s, FALSE);
}

static void test_depth(void)
{
    /* objects need keys: nest only arrays for the well-formed case */
    GString *ok = g_string_new(NULL);
    for (int i = 0; i < HYOCR_JSON_MAX_DEPTH; i++) g_string_append_c(ok, '[');
    for (int i = 0; i < HYOCR_JSON_MAX_DEPTH; i++) g_string_append_c(ok, ']');
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) root = hyocr_json_parse(ok->str, ok->len, HYOCR_JSON_MAX_DEPTH, "ok.json", &err);
    g_assert_no_error(err);
    g_assert_nonnull(root);
    g_string_free(ok, TRUE);

    g_autofree char *deep = nest(HYOCR_JSON_MAX_DEPTH + 1, "");
    expect_refused(deep, HYOCR_JSON_MAX_DEPTH, "nested deeper than 128 levels at byte 128 (line 1, column 129)");
    expect_refused("[[[", 2, "at byte 2");
    expect_ok("[[1],[2],[[3]]]", 3);
    /* what crashed json-glib: 80 000 unclosed brackets, refused before any recursion */
    g_autofree char *bomb = g_strnfill(80000, '[');
    g_autoptr(JsonNode) none = hyocr_json_parse(bomb, 80000, HYOCR_JSON_MAX_DEPTH, "config.json", &err);
    g_assert_null(none);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_PARSE);
    g_assert_true(g_str_has_prefix(err->message, "config.json: JSON nested deeper than 128 levels at byte 128"));
}

static void test_brackets_that_are_not(void)
{
    expect_ok("[\"[[[[\", '[[[[', \"\\\"[[[\"]", 2);
    expect_ok("/* [[[[ */ [1] /* ]]]] */", 1);
    /* json-glib's comments run from a slash to the next: what follows is read, and counted */
    expect_refused("/* a / [[[1]]]", 2, "JSON nested deeper than 2 levels at byte 9");
    expect_refused("/**x/ [1] /* / [2]", 2, "trailing data after the JSON value at byte 15");
    expect_refused("//[[[1]]]", 2, "JSON nested deeper than 2 levels at byte 4");
    expect_refused("[12/x/, 1e999]", 2, "a number beyond what 64-bit integers and doubles hold at byte 8");
    expect_ok("\xEF\xBB\xBF[1]", 1);
    expect_ok("  {\"a\": [\"]\"]}\n", 2);
    expect_ok("", 1);          /* empty: json-glib's to judge (hyocr_json_parse refuses it) */
    expect_ok("[1, 2", 1);     /* unfinished: json-glib's to judge */
}

static void test_trailing(void)
{
    expect_refused("{\"a\":1}{\"b\":2}", 8, "trailing data after the JSON value at byte 7 (line 1, column 8)");
    expect_refused("{}\n\n  x", 8, "at byte 6 (line 3, column 3)");
    expect_refused("1 2", 8, "at byte 2");
    expect_refused("\"a\" \"b\"", 8, "at byte 4");
    expect_refused("[1]]", 8, "at byte 3");
    expect_refused("true false", 8, "at byte 5");
    expect_refused("[1] // x", 8, "at byte 7");   /* "//" is a whole comment to json-glib */
    /* a NUL is not a structural character: it ends nothing and is trailing data like any other */
    g_autoptr(GError) nul = NULL;
    g_assert_false(hyocr_json_check("[1]\0", 4, 8, &nul));
    g_assert_nonnull(strstr(nul->message, "at byte 3"));
    g_assert_true(hyocr_json_check("[\0]", 3, 8, NULL));   /* json-glib refuses it */
    expect_ok("{\"a\":1}  \n\t\r", 8);
    expect_ok("true /* done */", 8);

    g_autoptr(GError) err = NULL;
    const char *two = "{\"a\": 1}\n{\"b\": 2}";
    g_autoptr(JsonNode) root = hyocr_json_parse(two, strlen(two), 8, "/m/config.json", &err);
    g_assert_null(root);
    g_assert_cmpstr(err->message, ==, "/m/config.json: trailing data after the JSON value at byte 9 (line 2, column 1)");
}

/* json-glib made bytes that are not UTF-8 of a lone low surrogate and of C's octal escapes
 * (\200), and cut a string at \u0000 (found by fuzz-json); a high surrogate alone it calls
 * an unterminated string. */
static void test_escapes(void)
{
    expect_refused("[\"\\udc00x\"]", 8, "an escape JSON does not have (it has \\\" \\\\ \\/ \\b \\f \\n \\r "
                   "\\t and \\u with four hex digits naming a character other than \\u0000, surrogates in pairs) "
                   "at byte 2 (line 1, column 3)");
    expect_refused("{\"a\": \"b\\20000c\"}", 8, "at byte 8");   /* json-glib read \\200 as byte 0x80 */
    expect_refused("[\"\\x41\"]", 8, "at byte 2");
    expect_refused("[\"a\\u0000b\"]", 8, "at byte 3");
    expect_refused("{\"k\": \"\\ud83d\"}", 8, "at byte 7");
    expect_refused("[\"\\uD83D\\u0041\"]", 8, "at byte 2");
    expect_refused("[\"\\udc0*/1x\"]", 8, "at byte 2");   /* json-glib read \\udc0* as \\udbff */
    expect_refused("[\"\\u12\"]", 8, "at byte 2");
    expect_ok("[\"\\ud83d\\ude00 \\u00e9 \\\\u0000 \\\"\\u0041\"]", 1);   /* a pair, é, an escaped backslash */
    expect_ok("['\\u0000']", 1);   /* single quotes: json-glib reads no escapes there */
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) pair = hyocr_json_parse("[\"\\ud83d\\ude00\"]", 16, 8, NULL, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(json_array_get_string_element(json_node_get_array(pair), 0), ==, "\xF0\x9F\x98\x80");
}

/* json-glib wrapped integers past 64 bits (99999999999999999999 read as -1) and took 1e999 as
 * infinity, printed as "inf" (found by fuzz-json). */
static void test_numbers(void)
{
    expect_refused("{\"size\": 99999999999999999999}", 8, "a number beyond what 64-bit integers and doubles hold "
                   "at byte 9 (line 1, column 10)");
    expect_refused("[-9223372036854775809]", 8, "at byte 1");
    expect_refused("[18446744073709551615]", 8, "at byte 1");
    expect_refused("[0x8000000000000000]", 8, "at byte 1");
    expect_refused("[1e999]", 8, "at byte 1");
    expect_refused("[0, -1.5e309]", 8, "at byte 4");
    expect_refused("[.1e3080]", 8, "at byte 1");   /* json-glib reads a leading dot (fuzz-json) */
    expect_refused("[-.1e999]", 8, "at byte 1");
    expect_refused("[0b11111111111111111111111111111111111111111111111111111111111111111]", 8, "at byte 1");
    expect_refused("[- 1e999]", 8, "at byte 3");   /* json-glib reads "- 1" as -1 */
    expect_ok("[9223372036854775807, -9223372036854775808, 0x7fffffffffffffff, 1.5e308, 1e-999, -0.0]", 1);
    expect_ok("[12abc, -]", 1);   /* not numbers: json-glib's to judge */
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) big = hyocr_json_parse("[9223372036854775807]", 21, 8, NULL, &err);
    g_assert_no_error(err);
    g_assert_cmpint(json_array_get_int_element(json_node_get_array(big), 0), ==, G_MAXINT64);
}

/* json-glib 1.6 writes a double with an exponent as "1e+30.0", which no JSON reader takes
 * (found by fuzz-json): what we write drops that ".0" and reads back as the same value. */
static void test_written_doubles(void)
{
    const char *in = "{\"a\": 1e30, \"b\": [1E-7, 2.5e+300, 1e22, 123.5], \"s\": \"1e+30.0\"}";
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) root = hyocr_json_parse(in, strlen(in), 8, NULL, &err);
    g_assert_no_error(err);
    for (int pretty = 0; pretty < 2; pretty++) {
        g_autofree char *text = hyocr_json_to_data(root, pretty);
        g_assert_null(strstr(text, "e+30.0,"));
        g_assert_nonnull(strstr(text, "\"1e+30.0\""));   /* a string keeps what it holds */
        g_autoptr(JsonNode) again = hyocr_json_parse(text, strlen(text), 8, NULL, &err);
        g_assert_no_error(err);
        g_assert_true(json_node_equal(root, again));
    }
}

static void test_parse_messages(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) a = hyocr_json_parse("{\"a\": }", 7, 8, "x.json", &err);
    g_assert_null(a);
    g_assert_true(g_str_has_prefix(err->message, "x.json:1:7: "));
    g_clear_error(&err);
    g_autoptr(JsonNode) b = hyocr_json_parse("{\"a\": }", 7, 8, NULL, &err);
    g_assert_null(b);
    g_assert_true(g_str_has_prefix(err->message, "1:7: "));
    g_clear_error(&err);
    g_autoptr(JsonNode) c = hyocr_json_parse(" \n", 2, 8, "x.json", &err);
    g_assert_null(c);
    g_assert_cmpstr(err->message, ==, "x.json: empty, no JSON value");
    g_clear_error(&err);
    g_autoptr(JsonNode) d = hyocr_json_parse(NULL, 0, 8, "x.json", &err);
    g_assert_null(d);
    g_clear_error(&err);
    g_autoptr(JsonNode) e = hyocr_json_parse("{\"k\": [1, \"v\"]}", 15, 8, "x.json", &err);
    g_assert_no_error(err);
    g_assert_cmpstr(json_array_get_string_element(json_object_get_array_member(json_node_get_object(e), "k"), 1),
                    ==, "v");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/json/depth", test_depth);
    g_test_add_func("/json/brackets-that-are-not", test_brackets_that_are_not);
    g_test_add_func("/json/trailing", test_trailing);
    g_test_add_func("/json/escapes", test_escapes);
    g_test_add_func("/json/numbers", test_numbers);
    g_test_add_func("/json/written-doubles", test_written_doubles);
    g_test_add_func("/json/parse-messages", test_parse_messages);
    return g_test_run();
}
