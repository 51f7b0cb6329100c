/* Tokenizer tests: HF reference fixtures when present, plus a hand-built tokenizer.json whose
 * expected ids are derived by hand from the release pre-tokenizer and the merge list below. */
#include "tokenizer.h"
#include "error.h"
#include "testutil.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* The release's three Split regexes (spec §6), written with a regex-level \u escape for U+3040
 * like the release file, so the Oniguruma → PCRE2 translation is exercised. */
#define RE_DIGITS "\\p{N}{1,3}"
#define RE_CJK    "[一-龥\\u3040-ゟ゠-ヿ]+"
#define RE_MAIN   "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+" \
                  "| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Merges of the hand-built tokenizer, as raw byte strings; merge k creates id 256 + k. */
static const char *const MERGES[][2] = {
    { "b", "c" },           /* 256 */
    { "a", "b" },           /* 257 */
    { " ", "b" },           /* 258 */
    { "\r", "\n" },         /* 259 */
    { "1", "2" },           /* 260 */
    { "12", "3" },          /* 261 */
    { "4", "5" },           /* 262 */
    { "a", "\xE4" },        /* 263  would glue 'a' to a following 一/你 if CJK were not split off */
    { "h", "e" },           /* 264 */
    { "he", "l" },          /* 265 */
    { "l", "o" },           /* 266 */
    { "\xE4", "\xBD" },     /* 267 */
    { "\xE4\xBD", "\xA0" }, /* 268  你 */
    { "x", "x" },           /* 269 */
    { "a", "\xE3" },        /* 270  would glue 'a' to あ/゠ */
    { "\x80", "\n" },       /* 271  tail of U+3000 + LF */
    { "\x8E", "\n" },       /* 272  tail of U+180E + LF */
};
#define N_MERGES ((int)G_N_ELEMENTS(MERGES))

enum { T_S = 273, T_SX, T_HELL, T_GX, T_SW, T_L, T_ABLT, T_END };

/* ------------------------------------------------------------------ helpers */

/* GPT-2 bytes_to_unicode, written independently of the library. */
static gunichar byte_char(int b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return (gunichar)b;
    int n = 0;
    for (int c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))) n++;
    return (gunichar)(256 + n);
}

static char *byte_level(const char *raw)
{
    GString *s = g_string_new(NULL);
    for (const guint8 *p = (const guint8 *)raw; *p; p++) g_string_append_unichar(s, byte_char(*p));
    return g_string_free(s, FALSE);
}

static JsonNode *added(int id, const char *content, bool special, bool normalized)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "id"); json_builder_add_int_value(b, id);
    json_builder_set_member_name(b, "content"); json_builder_add_string_value(b, content);
    json_builder_set_member_name(b, "single_word"); json_builder_add_boolean_value(b, id == T_SW);
    json_builder_set_member_name(b, "lstrip"); json_builder_add_boolean_value(b, id == T_L);
    json_builder_set_member_name(b, "rstrip"); json_builder_add_boolean_value(b, id == T_L);
    json_builder_set_member_name(b, "normalized"); json_builder_add_boolean_value(b, normalized);
    json_builder_set_member_name(b, "special"); json_builder_add_boolean_value(b, special);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static JsonNode *split_node(const char *regex)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "type"); json_builder_add_string_value(b, "Split");
    json_builder_set_member_name(b, "pattern");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "Regex"); json_builder_add_string_value(b, regex);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "behavior"); json_builder_add_string_value(b, "Isolated");
    json_builder_set_member_name(b, "invert"); json_builder_add_boolean_value(b, FALSE);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

static JsonNode *byte_level_node(void)
{
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "type", "ByteLevel");
    json_object_set_boolean_member(o, "add_prefix_space", FALSE);
    json_object_set_boolean_member(o, "trim_offsets", TRUE);
    json_object_set_boolean_member(o, "use_regex", FALSE);
    JsonNode *n = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(n, o);
    return n;
}

/* Replaces the pre-tokenizer's Splits by the given regexes (NULL-terminated). */
static void set_splits(JsonObject *root, const char *const *regexes)
{
    JsonArray *list = json_array_new();
    for (; *regexes; regexes++) json_array_add_element(list, split_node(*regexes));
    json_array_add_element(list, byte_level_node());
    JsonObject *pt = json_object_new();
    json_object_set_string_member(pt, "type", "Sequence");
    json_object_set_array_member(pt, "pretokenizers", list);
    json_object_set_object_member(root, "pre_tokenizer", pt);
}

/* The hand-built tokenizer.json; merges as ["a","b"] pairs or legacy "a b" strings. */
static JsonNode *make_json(bool legacy_merges)
{
    JsonObject *vocab = json_object_new();
    for (int b = 0; b < 256; b++) {
        char s[8];
        s[g_unichar_to_utf8(byte_char(b), s)] = '\0';
        json_object_set_int_member(vocab, s, b);
    }
    JsonArray *merges = json_array_new();
    for (int k = 0; k < N_MERGES; k++) {
        g_autofree char *a = byte_level(MERGES[k][0]), *b = byte_level(MERGES[k][1]);
        g_autofree char *joined = g_strconcat(a, b, NULL);
        json_object_set_int_member(vocab, joined, 256 + k);
        if (legacy_merges) {
            g_autofree char *line = g_strconcat(a, " ", b, NULL);
            json_array_add_string_element(merges, line);
        } else {
            JsonArray *pair = json_array_new();
            json_array_add_string_element(pair, a);
            json_array_add_string_element(pair, b);
            json_array_add_array_element(merges, pair);
        }
    }
    JsonObject *model = json_object_new();
    json_object_set_string_member(model, "type", "BPE");
    json_object_set_null_member(model, "dropout");
    json_object_set_null_member(model, "unk_token");
    json_object_set_null_member(model, "continuing_subword_prefix");
    json_object_set_null_member(model, "end_of_word_suffix");
    json_object_set_boolean_member(model, "fuse_unk", FALSE);
    json_object_set_boolean_member(model, "byte_fallback", FALSE);
    json_object_set_boolean_member(model, "ignore_merges", FALSE);
    json_object_set_object_member(model, "vocab", vocab);
    json_object_set_array_member(model, "merges", merges);

    JsonArray *add = json_array_new();
    json_array_add_element(add, added(T_S, "<|s|>", true, false));
    json_array_add_element(add, added(T_SX, "<|s|>x", true, false));
    json_array_add_element(add, added(T_HELL, "hell", false, true));
    json_array_add_element(add, added(T_GX, "\xC4\xA0x", false, false));   /* "Ġx" */
    json_array_add_element(add, added(T_SW, "[SW]", true, false));
    json_array_add_element(add, added(T_L, "<L>", true, false));
    json_array_add_element(add, added(T_ABLT, "ab<", false, true));

    JsonObject *dec = json_object_new();
    json_object_set_string_member(dec, "type", "ByteLevel");
    JsonObject *root = json_object_new();
    json_object_set_string_member(root, "version", "1.0");
    json_object_set_null_member(root, "truncation");
    json_object_set_null_member(root, "padding");
    json_object_set_array_member(root, "added_tokens", add);
    json_object_set_null_member(root, "normalizer");
    static const char *const release[] = { RE_DIGITS, RE_CJK, RE_MAIN, NULL };
    set_splits(root, release);
    json_object_set_null_member(root, "post_processor");
    json_object_set_object_member(root, "decoder", dec);
    json_object_set_object_member(root, "model", model);
    JsonNode *n = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(n, root);
    return n;
}

typedef struct {
    char *dir, *path;
} TmpFile;

static TmpFile write_tmp(const char *text)
{
    TmpFile t;
    t.dir = hyocr_test_tmpdir();
    t.path = g_build_filename(t.dir, "tokenizer.json", NULL);
    g_autoptr(GError) err = NULL;
    g_file_set_contents(t.path, text, -1, &err);
    g_assert_no_error(err);
    return t;
}

static void tmp_free(TmpFile *t)
{
    hyocr_test_rmdir(t->dir);
    g_free(t->dir);
    g_free(t->path);
}

static char *to_text(JsonNode *n)
{
    g_autoptr(JsonGenerator) g = json_generator_new();
    json_generator_set_root(g, n);
    return json_generator_to_data(g, NULL);
}

static hyocr_tokenizer *load_node(JsonNode *n, GError **error)
{
    g_autofree char *text = to_text(n);
    TmpFile t = write_tmp(text);
    hyocr_tokenizer *tok = hyocr_tokenizer_load(t.path, error);
    tmp_free(&t);
    return tok;
}

static hyocr_tokenizer *load_default(void)
{
    g_autoptr(JsonNode) n = make_json(false);
    g_autoptr(GError) err = NULL;
    hyocr_tokenizer *tok = load_node(n, &err);
    g_assert_no_error(err);
    g_assert_nonnull(tok);
    return tok;
}

static GArray *encode(const hyocr_tokenizer *tok, const char *text, gssize len)
{
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    hyocr_tokenizer_encode(tok, text, len, ids);
    return ids;
}

static char *ids_str(const int32_t *v, size_t n)
{
    GString *s = g_string_new("[");
    for (size_t i = 0; i < n; i++) g_string_append_printf(s, "%s%d", i ? " " : "", v[i]);
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

/* Expected ids end with -1. */
static void check_ids_len(const hyocr_tokenizer *tok, const char *text, gssize len, const int32_t *expect)
{
    size_t n = 0;
    while (expect[n] >= 0) n++;
    g_autoptr(GArray) ids = encode(tok, text, len);
    g_autofree char *got = ids_str((int32_t *)ids->data, ids->len), *want = ids_str(expect, n);
    g_autofree char *shown = g_strescape(text, NULL);
    if (g_strcmp0(got, want) != 0) g_test_message("text \"%s\": got %s want %s", shown, got, want);
    g_assert_cmpstr(got, ==, want);
}

#define CHECK(tok, text, ...) check_ids_len(tok, text, -1, (const int32_t[]){ __VA_ARGS__, -1 })

/* Pieces put end to end, by their lengths (text can hold NUL bytes). */
static char *stream_decode(const hyocr_tokenizer *tok, const int32_t *ids, size_t n, bool skip, size_t *len)
{
    g_autoptr(hyocr_detokenizer) dt = hyocr_detokenizer_init(tok, skip);
    GString *s = g_string_new(NULL);
    for (size_t i = 0; i < n; i++) {
        size_t plen = 0;
        g_autofree char *part = hyocr_detokenizer_push(dt, ids[i], &plen);
        g_assert_cmpuint(plen, >=, strlen(part));
        g_string_append_len(s, part, (gssize)plen);
    }
    size_t tlen = 0;
    g_autofree char *tail = hyocr_detokenizer_flush(dt, &tlen);
    g_string_append_len(s, tail, (gssize)tlen);
    if (len) *len = s->len;
    return g_string_free(s, FALSE);
}

static void check_decode(const hyocr_tokenizer *tok, const int32_t *ids, size_t n, bool skip, const char *want)
{
    size_t got_len = 0, streamed_len = 0;
    g_autofree char *got = hyocr_tokenizer_decode(tok, ids, n, skip, &got_len);
    g_autofree char *streamed = stream_decode(tok, ids, n, skip, &streamed_len);
    g_assert_cmpmem(got, got_len, want, strlen(want));
    g_assert_cmpmem(streamed, streamed_len, want, strlen(want));
}

#define DECODE(tok, skip, want, ...) do { \
        const int32_t v_[] = { __VA_ARGS__ }; \
        check_decode(tok, v_, G_N_ELEMENTS(v_), skip, want); \
    } while (0)

/* ------------------------------------------------------------------ fixture cases */

static GBytes *hex_bytes(const char *hex)
{
    size_t n = strlen(hex) / 2;
    guint8 *b = g_malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        b[i] = (guint8)(g_ascii_xdigit_value(hex[2 * i]) * 16 + g_ascii_xdigit_value(hex[2 * i + 1]));
    return g_bytes_new_take(b, n);
}

static void check_case(const hyocr_tokenizer *tok, JsonObject *c)
{
    const char *name = json_object_get_string_member(c, "name");
    g_autoptr(GBytes) raw = json_object_has_member(c, "bytes_hex")
        ? hex_bytes(json_object_get_string_member(c, "bytes_hex"))
        : g_bytes_new(json_object_get_string_member(c, "text"), strlen(json_object_get_string_member(c, "text")));
    JsonArray *want = json_object_get_array_member(c, "ids");
    g_autoptr(GArray) wids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < json_array_get_length(want); i++) {
        int32_t v = (int32_t)json_array_get_int_element(want, i);
        g_array_append_val(wids, v);
    }
    gsize len;
    const char *data = g_bytes_get_data(raw, &len);
    g_autoptr(GArray) ids = encode(tok, data, (gssize)len);
    g_autofree char *got = ids_str((int32_t *)ids->data, ids->len);
    g_autofree char *exp = ids_str((int32_t *)wids->data, wids->len);
    if (strcmp(got, exp) != 0) g_test_message("case %s: got %s want %s", name, got, exp);
    g_assert_cmpstr(got, ==, exp);
    const char *keys[2] = { "decoded", "decoded_skip" };
    for (int skip = 0; skip < 2; skip++) {
        g_autofree char *d = hyocr_tokenizer_decode(tok, (int32_t *)wids->data, wids->len, skip, NULL);
        g_autofree char *s = stream_decode(tok, (int32_t *)wids->data, wids->len, skip, NULL);
        if (strcmp(d, json_object_get_string_member(c, keys[skip])) != 0) g_test_message("case %s: %s", name, keys[skip]);
        g_assert_cmpstr(d, ==, json_object_get_string_member(c, keys[skip]));
        g_assert_cmpstr(s, ==, d);
    }
}

static void test_fixture_cases(void)
{
    g_autofree char *cases_path = hyocr_test_data("tokenizer_cases.json", NULL);
    g_autofree char *tok_path = hyocr_test_data("ckpt-flat", "tokenizer.json", NULL);
    if (!hyocr_test_require(cases_path) || !hyocr_test_require(tok_path)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(tok_path, &err);
    g_assert_no_error(err);
    g_autoptr(JsonParser) p = json_parser_new();
    json_parser_load_from_file(p, cases_path, &err);
    g_assert_no_error(err);
    JsonArray *cases = json_node_get_array(json_parser_get_root(p));
    g_assert_cmpuint(json_array_get_length(cases), >, 0);
    for (guint i = 0; i < json_array_get_length(cases); i++)
        check_case(tok, json_array_get_object_element(cases, i));
    g_test_message("%u fixture cases agree", json_array_get_length(cases));
}

/* Both checkpoints carry a tokenizer.json: it must load and agree on a sample. */
static void test_fixture_nested(void)
{
    g_autofree char *a = hyocr_test_data("ckpt-flat", "tokenizer.json", NULL);
    g_autofree char *b = hyocr_test_data("ckpt-nested", "tokenizer.json", NULL);
    if (!hyocr_test_require(a) || !hyocr_test_require(b)) return;
    g_autoptr(hyocr_tokenizer) ta = hyocr_tokenizer_load(a, NULL);
    g_autoptr(hyocr_tokenizer) tb = hyocr_tokenizer_load(b, NULL);
    g_assert_nonnull(ta);
    g_assert_nonnull(tb);
    const char *text = "<｜hy_begin▁of▁sentence｜>识别图片中的文字 HELLO 2026\n<｜hy_User｜>";
    g_autoptr(GArray) x = encode(ta, text, -1), y = encode(tb, text, -1);
    g_assert_cmpmem(x->data, x->len * 4, y->data, y->len * 4);
    g_assert_cmpint(hyocr_tokenizer_find(ta, "<｜hy_User｜>"), ==, hyocr_tokenizer_n_vocab(ta) - 818 + 6);
    g_assert_true(hyocr_tokenizer_is_special(ta, hyocr_tokenizer_find(ta, "<｜hy_User｜>")));
}

/* The released tokenizer, when a path is given: the two tokenisations quoted in spec §6. */
static void test_release_examples(void)
{
    const char *path = g_getenv("HYOCR_RELEASE_TOKENIZER");
    if (!path) {
        g_test_skip("set HYOCR_RELEASE_TOKENIZER=/path/to/HunyuanOCR/tokenizer.json to check spec §6 examples");
        return;
    }
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(path, &err);
    g_assert_no_error(err);
    g_assert_cmpint(hyocr_tokenizer_n_vocab(tok), ==, 120818);
    CHECK(tok, "请逐行识别图片中的所有文字。只输出图片中的文字本身，保留换行，不要解释。",
          1868, 4026, 537, 9977, 12858, 50812, 9738, 292, 1537, 8287, 12858, 1843, 9738, 7812, 270, 12231,
          112273, 270, 4426, 6465, 292);
    CHECK(tok, "HELLO 2026\nNCNN CPU TEST", 93892, 5112, 206, 1717, 21, 185, 18009, 15613, 16678, 21836);
    g_assert_cmpint(hyocr_tokenizer_find(tok, "<｜hy_User｜>"), ==, 120006);
    g_assert_cmpint(hyocr_tokenizer_find(tok, "<｜hy_place▁holder▁no▁102｜>"), ==, 120120);
}

/* ------------------------------------------------------------------ hand-built tokenizer */

static void test_merge_order(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    CHECK(tok, "abc", 'a', 256);             /* b+c (rank 0) beats a+b (rank 1) */
    CHECK(tok, "ab", 257);
    CHECK(tok, "helo", 265, 'o');            /* he, then hel (rank 9) before lo (rank 10) */
    CHECK(tok, "xxx", 269, 'x');             /* equal ranks: leftmost first */
    CHECK(tok, "xxxx", 269, 269);
    g_assert_cmpint(hyocr_tokenizer_n_vocab(tok), ==, T_END);
}

static void test_merges_legacy_strings(void)
{
    g_autoptr(JsonNode) n = make_json(true);
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_tokenizer) tok = load_node(n, &err);
    g_assert_no_error(err);
    CHECK(tok, "abc", 'a', 256);
    CHECK(tok, "helo", 265, 'o');
    CHECK(tok, "a\r\nb", 'a', 259, 'b');
}

static void test_digits(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    CHECK(tok, "12345", 261, 262);           /* "123" "45" */
    CHECK(tok, "1234", 261, '4');
    CHECK(tok, "a12", 'a', 260);
    CHECK(tok, "451", 262, '1');
}

static void test_cjk_runs(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    CHECK(tok, "a你", 'a', 268);                     /* without the split: 263 0xBD 0xA0 */
    CHECK(tok, "a一", 'a', 0xE4, 0xB8, 0x80);         /* U+4E00, first of the range */
    CHECK(tok, "aあ", 'a', 0xE3, 0x81, 0x82);         /* U+3042: needs \u3040 understood */
    CHECK(tok, "a゠", 'a', 0xE3, 0x82, 0xA0);         /* U+30A0 */
    CHECK(tok, "a㐀", 270, 0x90, 0x80);               /* U+3400 is outside: glued by merge 270 */
}

static void test_whitespace(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    CHECK(tok, "a  b", 'a', ' ', 258);                /* \s+(?!\S) leaves one space for " b" */
    CHECK(tok, "a\r\nb", 'a', 259, 'b');
    CHECK(tok, " b", 258);
    /* U+3000 is Oniguruma \s: \s*[\r\n]+ takes "U+3000 LF" as one piece, so 0x80+LF merge */
    CHECK(tok, "x\u3000\n", 'x', 0xE3, 0x80, 271);
    /* U+180E is not (PCRE2's \s would say yes): it stays a gap apart from the LF */
    CHECK(tok, "x\xE1\xA0\x8E\n", 'x', 0xE1, 0xA0, 0x8E, '\n');
}

static void test_added_tokens(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    CHECK(tok, "shello", 's', T_HELL, 'o');          /* matched inside a word */
    CHECK(tok, "<|s|>x", T_SX);                      /* longest at the same start */
    CHECK(tok, "<|s|>y", T_S, 'y');
    CHECK(tok, "a<|s|><|s|>b", 'a', T_S, T_S, 'b');
    CHECK(tok, "<|s|", '<', '|', 's', '|');
    CHECK(tok, "ab<|s|>", 257, T_S);                 /* normalized=false tokens go first */
    CHECK(tok, "ab<c", T_ABLT, 'c');
    CHECK(tok, "\xC4\xA0x", T_GX);
    CHECK(tok, "a [SW] b", 'a', ' ', T_SW, 258);      /* single_word */
    CHECK(tok, "a[SW]b", 'a', '[', 'S', 'W', ']', 'b');
    CHECK(tok, "[SW]", T_SW);
    CHECK(tok, "[SW]x", '[', 'S', 'W', ']', 'x');
    CHECK(tok, "\n[SW]", '\n', T_SW);
    CHECK(tok, "a  <L>  b", 'a', T_L, 'b');           /* lstrip + rstrip eat the spaces */
    g_assert_cmpint(hyocr_tokenizer_find(tok, "<|s|>"), ==, T_S);
    g_assert_cmpint(hyocr_tokenizer_find(tok, "\xC4\xA0" "b"), ==, 258);
    g_assert_cmpint(hyocr_tokenizer_find(tok, "nope"), ==, -1);
    g_assert_cmpstr(hyocr_tokenizer_token(tok, T_HELL), ==, "hell");
    g_assert_cmpstr(hyocr_tokenizer_token(tok, 257), ==, "ab");
    g_assert_null(hyocr_tokenizer_token(tok, T_END));
    g_assert_true(hyocr_tokenizer_is_special(tok, T_S));
    g_assert_false(hyocr_tokenizer_is_special(tok, T_HELL));
    g_assert_false(hyocr_tokenizer_is_special(tok, 'a'));
}

static void test_invalid_utf8_encode(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    /* One U+FFFD (EF BF BD) per maximal subpart; no merges touch these bytes. */
#define FFFD 0xEF, 0xBF, 0xBD
    check_ids_len(tok, "a\xE4\xBD" "b", -1, (const int32_t[]){ 'a', FFFD, 'b', -1 });
    check_ids_len(tok, "\xC0\xAF", -1, (const int32_t[]){ FFFD, FFFD, -1 });
    check_ids_len(tok, "\xED\xA0\x80", -1, (const int32_t[]){ FFFD, FFFD, FFFD, -1 });
    check_ids_len(tok, "\xF4\x90\x80\x80", -1, (const int32_t[]){ FFFD, FFFD, FFFD, FFFD, -1 });
    check_ids_len(tok, "\xE0\x80", -1, (const int32_t[]){ FFFD, FFFD, -1 });
    check_ids_len(tok, "\xF0\x9F\x98", -1, (const int32_t[]){ FFFD, -1 });
    check_ids_len(tok, "\xF0\x9F\x98x", -1, (const int32_t[]){ FFFD, 'x', -1 });
    check_ids_len(tok, "\xFF\xFE", -1, (const int32_t[]){ FFFD, FFFD, -1 });
    check_ids_len(tok, "x\0y", 3, (const int32_t[]){ 'x', 0, 'y', -1 });
}

static void test_decode(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    DECODE(tok, false, "a<|s|>b", 'a', T_S, 'b');
    DECODE(tok, true, "ab", 'a', T_S, 'b');
    DECODE(tok, true, "hell", T_HELL);                /* not special: kept */
    DECODE(tok, false, " x", T_GX);                   /* alphabet-only added token goes through the byte map */
    DECODE(tok, false, " b\r\n你", 258, 259, 268);
    DECODE(tok, false, "a\xEF\xBF\xBD" "b", 'a', 0xE4, 0xBD, 'b');
    DECODE(tok, false, "\xEF\xBF\xBD", 0xF0, 0x9F, 0x98);
    DECODE(tok, false, "\xF0\x9F\x98\x80", 0xF0, 0x9F, 0x98, 0x80);
    DECODE(tok, false, "\xEF\xBF\xBD\xEF\xBF\xBD", 0xC0, 0xAF);
    /* a special token between the bytes of one character breaks it — unless skipped */
    DECODE(tok, false, "\xEF\xBF\xBD<|s|>\xEF\xBF\xBD\xEF\xBF\xBD", 0xE4, T_S, 0xBD, 0xA0);
    DECODE(tok, true, "你", 0xE4, T_S, 0xBD, 0xA0);
    DECODE(tok, false, "ab", 'a', -5, 999999, 'b');   /* unknown ids are dropped */
    /* A token may decode to byte 0; the text keeps it, whole and streamed (the decoder stopped
     * at it: "a" whole, "a" + "" + "b" streamed). */
    const int32_t nul[] = { 'a', 0, 'b' };
    size_t len = 0, slen = 0;
    g_autofree char *whole = hyocr_tokenizer_decode(tok, nul, 3, false, &len);
    g_autofree char *streamed = stream_decode(tok, nul, 3, false, &slen);
    g_assert_cmpmem(whole, len, "a\0b", 3);
    g_assert_cmpmem(streamed, slen, "a\0b", 3);
    g_assert_cmpint(whole[len], ==, '\0');
    const char *text = "Hello, 世界! 123 ab<|s|>\r\n [SW] é";
    g_autoptr(GArray) ids = encode(tok, text, -1);
    g_autofree char *back = hyocr_tokenizer_decode(tok, (int32_t *)ids->data, ids->len, false, NULL);
    g_assert_cmpstr(back, ==, text);
}

static void test_stream(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    g_autoptr(hyocr_detokenizer) dt = hyocr_detokenizer_init(tok, false);
    const int32_t bytes[] = { 0xE4, 0xBD, 0xA0 };   /* 你 split over three tokens */
    const char *want[] = { "", "", "你" };
    for (int i = 0; i < 3; i++) {
        g_autofree char *s = hyocr_detokenizer_push(dt, bytes[i], NULL);
        g_assert_cmpstr(s, ==, want[i]);
    }
    g_autofree char *a = hyocr_detokenizer_push(dt, 0xE4, NULL);
    g_autofree char *b = hyocr_detokenizer_push(dt, 'b', NULL);   /* can never complete: U+FFFD now */
    g_autofree char *c = hyocr_detokenizer_push(dt, 0xF0, NULL);
    g_autofree char *d = hyocr_detokenizer_flush(dt, NULL);
    g_assert_cmpstr(a, ==, "");
    g_assert_cmpstr(b, ==, "\xEF\xBF\xBD" "b");
    g_assert_cmpstr(c, ==, "");
    g_assert_cmpstr(d, ==, "\xEF\xBF\xBD");
    /* random id streams: pushes + flush == one-shot decode */
    GRand *r = g_rand_new_with_seed(7);
    for (int round = 0; round < 300; round++) {
        int32_t ids[24];
        size_t n = (size_t)g_rand_int_range(r, 0, 24);
        for (size_t i = 0; i < n; i++) ids[i] = g_rand_int_range(r, -2, T_END + 2);   /* id 0 is byte 0 */
        for (int skip = 0; skip < 2; skip++) {
            size_t one_len = 0, many_len = 0;
            g_autofree char *one = hyocr_tokenizer_decode(tok, ids, n, skip, &one_len);
            g_autofree char *many = stream_decode(tok, ids, n, skip, &many_len);
            g_assert_cmpmem(many, many_len, one, one_len);
        }
    }
    g_rand_free(r);
}

/* Translation of Oniguruma constructs, seen through where a single Split cuts "abc"/"abcz". */
static void test_regex_dialect(void)
{
    struct { const char *re; const char *text; int32_t ids[6]; } cases[] = {
        { "ab{,1}", "abc", { 257, 'c', -1 } },           /* {,n} is {0,n}, not a literal */
        /* c{0,1} also matches empty: onig's iterator then cuts before every character */
        { "c{,1}", "abc", { 'a', 'b', 'c', -1 } },
        { "\\h", "abc", { 'a', 'b', 'c', -1 } },         /* \h is a hex digit, not a blank */
        { "\\u0063", "abc", { 257, 'c', -1 } },
        { "\\w+", "ab c", { 257, ' ', 'c', -1 } },
        { "\\bc", "ab c", { 257, ' ', 'c', -1 } },
        { "\\bc", "abc", { 'a', 256, -1 } },             /* no boundary inside the word */
        { ".+", "x\r\n", { 'x', '\r', '\n', -1 } },       /* '.' takes \r: only \n ends a line */
        { "b$", "ab\nab", { 'a', 'b', '\n', 'a', 'b', -1 } },   /* '$' is an end-of-line anchor */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(JsonNode) n = make_json(false);
        const char *const list[] = { cases[i].re, NULL };
        set_splits(json_node_get_object(n), list);
        g_autoptr(GError) err = NULL;
        g_autoptr(hyocr_tokenizer) tok = load_node(n, &err);
        g_assert_no_error(err);
        g_test_message("regex /%s/", cases[i].re);
        check_ids_len(tok, cases[i].text, -1, cases[i].ids);
    }
}

/* ------------------------------------------------------------------ errors */

static void expect_error(JsonNode *n, int code, const char *needle)
{
    g_autofree char *text = to_text(n);
    TmpFile t = write_tmp(text);
    g_autoptr(GError) err = NULL;
    hyocr_tokenizer *tok = hyocr_tokenizer_load(t.path, &err);
    g_assert_null(tok);
    g_assert_error(err, HYOCR_ERROR, code);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, t.path));
    g_assert_nonnull(strstr(err->message, needle));
    tmp_free(&t);
}

static JsonObject *model_of(JsonNode *n)
{
    return json_object_get_object_member(json_node_get_object(n), "model");
}

/* A byte without a vocab entry, no unk token, no byte fallback: HF drops the character, so a
 * word of only such bytes has no ids at all. Caching that empty result copied from the empty
 * array's NULL data (UBSan: null pointer passed to memcpy). */
static void test_empty_word(void)
{
    g_autoptr(JsonNode) n = make_json(false);
    JsonObject *vocab = json_object_get_object_member(model_of(n), "vocab");
    json_object_remove_member(vocab, "z");
    json_object_set_int_member(vocab, "zzz-unreachable", 'z');   /* keeps the ids dense */
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_tokenizer) tok = load_node(n, &err);
    g_assert_no_error(err);
    for (int pass = 0; pass < 2; pass++) {   /* the second pass reads the cache */
        g_autoptr(GArray) none = encode(tok, "z", -1);
        g_assert_cmpuint(none->len, ==, 0);
        g_autoptr(GArray) ids = encode(tok, "zz a", -1);
        g_assert_cmpuint(ids->len, ==, 2);
        g_assert_cmpint(g_array_index(ids, int32_t, 0), ==, ' ');
        g_assert_cmpint(g_array_index(ids, int32_t, 1), ==, 'a');
    }
}

static void test_errors(void)
{
    g_autoptr(GError) err = NULL;
    hyocr_tokenizer *tok = hyocr_tokenizer_load("/nonexistent/dir/tokenizer.json", &err);
    g_assert_null(tok);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IO);
    g_assert_nonnull(strstr(err->message, "/nonexistent/dir/tokenizer.json"));
    g_clear_error(&err);

    TmpFile t = write_tmp("{\"model\": {\"type\": \"BPE\",");
    tok = hyocr_tokenizer_load(t.path, &err);
    g_assert_null(tok);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_PARSE);
    g_assert_nonnull(strstr(err->message, t.path));
    tmp_free(&t);

    g_clear_error(&err);
    /* 100 000 '[' overflowed json-glib's stack; a second object after the first was accepted */
    g_autofree char *bomb = g_strnfill(100000, '[');
    const char *const hostile[][2] = {
        { bomb, "JSON nested deeper than 128 levels at byte 128" },
        { "{}\n{\"model\": {}}", "trailing data after the JSON value at byte 3 (line 2, column 1)" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(hostile); i++) {
        TmpFile h = write_tmp(hostile[i][0]);
        tok = hyocr_tokenizer_load(h.path, &err);
        g_assert_null(tok);
        g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_PARSE);
        g_assert_true(g_str_has_prefix(err->message, h.path));
        g_assert_nonnull(strstr(err->message, hostile[i][1]));
        g_clear_error(&err);
        tmp_free(&h);
    }

    g_autoptr(JsonNode) a = make_json(false);
    json_object_set_string_member(model_of(a), "type", "WordPiece");
    expect_error(a, HYOCR_ERROR_TOKENIZER, "WordPiece");

    g_autoptr(JsonNode) b = make_json(false);
    JsonObject *nfc = json_object_new();
    json_object_set_string_member(nfc, "type", "NFC");
    json_object_set_object_member(json_node_get_object(b), "normalizer", nfc);
    expect_error(b, HYOCR_ERROR_TOKENIZER, "NFC");

    g_autoptr(JsonNode) c = make_json(false);
    json_object_set_double_member(model_of(c), "dropout", 0.1);
    expect_error(c, HYOCR_ERROR_TOKENIZER, "dropout");

    g_autoptr(JsonNode) d = make_json(false);
    JsonArray *m = json_object_get_array_member(model_of(d), "merges");
    json_array_add_string_element(m, "q zz");
    expect_error(d, HYOCR_ERROR_TOKENIZER, "zz");

    g_autoptr(JsonNode) e = make_json(false);
    const char *const bad_re[] = { "(", NULL };
    set_splits(json_node_get_object(e), bad_re);
    expect_error(e, HYOCR_ERROR_TOKENIZER, "regex");

    g_autoptr(JsonNode) f = make_json(false);
    const char *const onig_only[] = { "(?m)a.b", NULL };
    set_splits(json_node_get_object(f), onig_only);
    expect_error(f, HYOCR_ERROR_TOKENIZER, "dot-all");

    g_autoptr(JsonNode) g = make_json(false);
    JsonArray *add = json_object_get_array_member(json_node_get_object(g), "added_tokens");
    json_object_set_int_member(json_array_get_object_element(add, 0), "id", 5000);
    expect_error(g, HYOCR_ERROR_TOKENIZER, "<|s|>");

    g_autoptr(JsonNode) h = make_json(false);
    JsonObject *split = json_array_get_object_element(json_object_get_array_member(
        json_object_get_object_member(json_node_get_object(h), "pre_tokenizer"), "pretokenizers"), 0);
    json_object_set_string_member(split, "behavior", "Removed");
    expect_error(h, HYOCR_ERROR_TOKENIZER, "Removed");

    g_autoptr(JsonNode) k = make_json(false);
    JsonObject *dec = json_object_new();
    json_object_set_string_member(dec, "type", "WordPiece");
    json_object_set_object_member(json_node_get_object(k), "decoder", dec);
    expect_error(k, HYOCR_ERROR_TOKENIZER, "decoder");
}

/* ------------------------------------------------------------------ speed and threads */

static GString *mixed_text(size_t bytes)
{
    static const char *const frags[] = {
        "The quick brown fox ", "jumps over 12345 lazy dogs. ", "识别图片中的文字，", "保留换行。\n",
        "東京都のラーメン ", "Привет, мир! ", "😀🎉 ", "$$x^2 + y^2$$\r\n", "\t\t", "   ", "ümlaut façade ",
        "<table><tr><td>3</td></tr></table>", "Invoice No. 2024-0815, total $1,234.56 ", "한국어 텍스트 ",
    };
    GRand *r = g_rand_new_with_seed(42);
    GString *s = g_string_new(NULL);
    while (s->len < bytes) {
        g_string_append(s, frags[g_rand_int_range(r, 0, G_N_ELEMENTS(frags))]);
        if (g_rand_int_range(r, 0, 4) == 0) g_string_append_printf(s, "w%u ", g_rand_int(r));
    }
    g_rand_free(r);
    return s;
}

static void test_speed(void)
{
    g_autofree char *path = hyocr_test_data("ckpt-flat", "tokenizer.json", NULL);
    g_autoptr(hyocr_tokenizer) tok = g_file_test(path, G_FILE_TEST_EXISTS) ? hyocr_tokenizer_load(path, NULL)
                                                                            : load_default();
    g_assert_nonnull(tok);
    g_autoptr(GString) text = mixed_text(100 * 1024);
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GArray) ids = encode(tok, text->str, (gssize)text->len);
    double secs = (g_get_monotonic_time() - t0) / 1e6;
    g_autoptr(GString) same = g_string_new(NULL);
    for (int i = 0; i < 100 * 1024; i++) g_string_append_c(same, 'a');   /* one 100 KB word */
    t0 = g_get_monotonic_time();
    g_autoptr(GArray) ids2 = encode(tok, same->str, (gssize)same->len);
    double secs2 = (g_get_monotonic_time() - t0) / 1e6;
    g_test_message("100 KB mixed: %u ids in %.3f s; 100 KB single word: %u ids in %.3f s",
                   ids->len, secs, ids2->len, secs2);
    g_autofree char *back = hyocr_tokenizer_decode(tok, (int32_t *)ids->data, ids->len, false, NULL);
    g_assert_cmpstr(back, ==, text->str);
#if defined(__SANITIZE_ADDRESS__)
    const double limit = 10.0;   /* sanitizers slow everything down several times */
#else
    const double limit = 1.0;
#endif
    g_assert_cmpfloat(secs, <, limit);
    g_assert_cmpfloat(secs2, <, limit);
}

typedef struct {
    const hyocr_tokenizer *tok;
    const GString *text;
    GArray *ids;
} Job;

static gpointer encode_job(gpointer data)
{
    Job *j = data;
    j->ids = encode(j->tok, j->text->str, (gssize)j->text->len);
    return NULL;
}

static void test_threads(void)
{
    g_autoptr(hyocr_tokenizer) tok = load_default();
    g_autoptr(GString) text = mixed_text(20 * 1024);
    g_autoptr(GArray) ref = encode(tok, text->str, (gssize)text->len);
    g_autoptr(hyocr_tokenizer) fresh = load_default();   /* cold cache, so threads race to fill it */
    Job jobs[4];
    GThread *th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (Job){ fresh, text, NULL };
        th[i] = g_thread_new("enc", encode_job, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        g_thread_join(th[i]);
        g_assert_cmpmem(jobs[i].ids->data, jobs[i].ids->len * 4, ref->data, ref->len * 4);
        g_array_unref(jobs[i].ids);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tokenizer/fixture/cases", test_fixture_cases);
    g_test_add_func("/tokenizer/fixture/nested", test_fixture_nested);
    g_test_add_func("/tokenizer/release/spec-examples", test_release_examples);
    g_test_add_func("/tokenizer/bpe/merge-order", test_merge_order);
    g_test_add_func("/tokenizer/bpe/legacy-merges", test_merges_legacy_strings);
    g_test_add_func("/tokenizer/bpe/empty-word", test_empty_word);
    g_test_add_func("/tokenizer/pretok/digits", test_digits);
    g_test_add_func("/tokenizer/pretok/cjk", test_cjk_runs);
    g_test_add_func("/tokenizer/pretok/whitespace", test_whitespace);
    g_test_add_func("/tokenizer/pretok/regex-dialect", test_regex_dialect);
    g_test_add_func("/tokenizer/added", test_added_tokens);
    g_test_add_func("/tokenizer/encode/invalid-utf8", test_invalid_utf8_encode);
    g_test_add_func("/tokenizer/decode", test_decode);
    g_test_add_func("/tokenizer/stream", test_stream);
    g_test_add_func("/tokenizer/errors", test_errors);
    g_test_add_func("/tokenizer/speed", test_speed);
    g_test_add_func("/tokenizer/threads", test_threads);
    return g_test_run();
}
