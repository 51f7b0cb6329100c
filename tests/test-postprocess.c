/* Output clean-up of the official clients (spec §7.2–7.3): the streaming
 * tail-repetition stop and clean_repeated_substrings in its 1.0 and 1.5
 * variants. Expected results follow from the reference's Python (read in
 * Tencent-Hunyuan/HunyuanOCR inference/utils/output_utils.py and
 * Hunyuan-OCR-master/utils.py); a literal C rendering of that algorithm
 * (slow, per-block comparisons) also serves as an oracle for random texts. */
#include "postprocess.h"
#include "testutil.h"

#include <string.h>

/* ---------- text builders ---------- */

/* count pairwise distinct code points from base: no repetition inside. */
static void add_distinct(GString *s, int count, gunichar base)
{
    for (int i = 0; i < count; i++)
        g_string_append_unichar(s, base + i);
}

static void add_repeat(GString *s, const char *unit, int times)
{
    for (int i = 0; i < times; i++)
        g_string_append(s, unit);
}

static char *prefix_plus(int prefix_chars, const char *unit, int times)
{
    GString *s = g_string_new(NULL);
    add_distinct(s, prefix_chars, 0x4e00);
    add_repeat(s, unit, times);
    return g_string_free(s, FALSE);
}

static glong n_chars(const char *s)
{
    return g_utf8_strlen(s, -1);
}

/* ---------- reference transliteration (oracle) ---------- */

static bool py_space(gunichar c)
{
    static const gunichar extra[] = { 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2028,
                                      0x2029, 0x202f, 0x205f, 0x3000 };
    if ((c >= 0x09 && c <= 0x0d) || (c >= 0x2000 && c <= 0x200a)) return true;
    for (size_t i = 0; i < G_N_ELEMENTS(extra); i++)
        if (c == extra[i]) return true;
    return false;
}

static bool blocks_equal(const gunichar *a, const gunichar *b, glong len)
{
    for (glong i = 0; i < len; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static bool oracle_tail(const gunichar *t, glong n)
{
    if (n < 16) return false;
    for (glong len = 1; len <= MIN(256, n / 8); len++) {
        const gunichar *unit = t + n - len;
        bool all_space = true;
        for (glong i = 0; i < len; i++) all_space &= py_space(unit[i]);
        if (all_space) continue;
        bool ok = true;
        for (int k = 2; k <= 8 && ok; k++)
            ok = blocks_equal(t + n - len * k, unit, len);
        if (ok) return true;
    }
    return false;
}

static glong oracle_clean(const gunichar *t, glong n, glong min_len)
{
    if (n < min_len) return n;
    for (glong len = 2; len <= n / 10; len++) {
        int count = 0;
        for (glong i = n - len; i >= 0 && blocks_equal(t + i, t + n - len, len); i -= len)
            count++;
        if (count >= 10) return n - len * (count - 1);
    }
    return n;
}

/* ---------- clean_repeated_substrings ---------- */

/* 3000 characters with a repeated tail: 1.5 (≥ 2000) cleans, 1.0 (≥ 8000) does
 * not — although the UTF-8 is 8880 bytes long: lengths are code points. */
static void test_clean_versions(void)
{
    g_autofree char *text = prefix_plus(2940, "abcde", 12);
    g_assert_cmpint(n_chars(text), ==, 3000);
    g_assert_cmpuint(strlen(text), >, 8000);
    g_autofree char *want = prefix_plus(2940, "abcde", 1);

    g_autofree char *c15 = hyocr_clean_repeated_substrings(text, strlen(text), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpstr(c15, ==, want);
    g_autofree char *c10 = hyocr_clean_repeated_substrings(text, strlen(text), HYOCR_MODEL_VERSION_1_0, NULL);
    g_assert_cmpstr(c10, ==, text);
}

static void test_clean_thresholds(void)
{
    struct { hyocr_model_version v; int min; } cases[] = {
        { HYOCR_MODEL_VERSION_1_5, 2000 }, { HYOCR_MODEL_VERSION_1_0, 8000 } };
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
        g_autofree char *below = prefix_plus(cases[k].min - 1 - 60, "xyz", 20);
        g_autofree char *at = prefix_plus(cases[k].min - 60, "xyz", 20);
        g_autofree char *at_want = prefix_plus(cases[k].min - 60, "xyz", 1);
        g_assert_cmpint(n_chars(below), ==, cases[k].min - 1);
        g_autofree char *r1 = hyocr_clean_repeated_substrings(below, strlen(below), cases[k].v, NULL);
        g_autofree char *r2 = hyocr_clean_repeated_substrings(at, strlen(at), cases[k].v, NULL);
        g_assert_cmpstr(r1, ==, below);
        g_assert_cmpstr(r2, ==, at_want);
    }
}

static void test_clean_needs_ten(void)
{
    g_autofree char *nine = prefix_plus(2500, "unit7", 9);
    g_autofree char *ten = prefix_plus(2500, "unit7", 10);
    g_autofree char *want = prefix_plus(2500, "unit7", 1);
    g_autofree char *r9 = hyocr_clean_repeated_substrings(nine, strlen(nine), HYOCR_MODEL_VERSION_1_5, NULL);
    g_autofree char *r10 = hyocr_clean_repeated_substrings(ten, strlen(ten), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpstr(r9, ==, nine);
    g_assert_cmpstr(r10, ==, want);
}

/* The shortest repeating unit wins ("ab", not "abab"); a text that is nothing
 * but copies collapses to one copy. */
static void test_clean_shortest_unit(void)
{
    g_autofree char *text = prefix_plus(2100, "ab", 40);
    g_autofree char *want = prefix_plus(2100, "ab", 1);
    g_autofree char *r = hyocr_clean_repeated_substrings(text, strlen(text), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpstr(r, ==, want);

    GString *all = g_string_new(NULL);
    add_repeat(all, "ab", 1000);
    g_autofree char *only = g_string_free(all, FALSE);
    g_autofree char *r2 = hyocr_clean_repeated_substrings(only, strlen(only), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpstr(r2, ==, "ab");
}

/* Multi-byte units are cut on character boundaries; a text that is long in
 * bytes but short in characters is left alone. */
static void test_clean_cjk(void)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < 2200; i++) g_string_append_c(s, "0123456789,"[i % 11]);
    g_string_append(s, "|");
    g_autofree char *head = g_strdup(s->str);
    add_repeat(s, "重复文本", 12);
    g_autofree char *text = g_string_free(s, FALSE);
    g_autofree char *want = g_strconcat(head, "重复文本", NULL);
    g_autofree char *r = hyocr_clean_repeated_substrings(text, strlen(text), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpstr(r, ==, want);
    g_assert_true(g_utf8_validate(r, -1, NULL));

    g_autofree char *short_text = prefix_plus(700, "重复文本", 12);   /* 748 chars, 2244 bytes */
    g_assert_cmpuint(strlen(short_text), >=, 2000);
    g_autofree char *r2 = hyocr_clean_repeated_substrings(short_text, strlen(short_text), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpstr(r2, ==, short_text);
}

static void test_clean_invalid_utf8(void)
{
    GString *s = g_string_new(NULL);
    add_distinct(s, 2100, 0x4e00);
    add_repeat(s, "\xff\xfe", 15);
    g_autofree char *text = g_string_free(s, FALSE);
    g_autofree char *r = hyocr_clean_repeated_substrings(text, strlen(text), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_true(g_utf8_validate(r, -1, NULL));
    g_assert_cmpint(n_chars(r), ==, 2102);   /* one copy of the two U+FFFD kept */
}

/* Long input: a million characters, answer in linear time. */
static void test_clean_long(void)
{
    g_autoptr(GRand) rnd = g_rand_new_with_seed(9);
    GString *s = g_string_new(NULL);
    for (int i = 0; i < 1000000; i++)
        g_string_append_unichar(s, 0x4e00 + g_rand_int_range(rnd, 0, 3000));
    g_autofree char *head = g_strdup(s->str);
    add_repeat(s, "末尾重复。", 500);
    g_autofree char *text = g_string_free(s, FALSE);
    g_autofree char *want = g_strconcat(head, "末尾重复。", NULL);

    g_autoptr(GTimer) timer = g_timer_new();
    g_autofree char *r = hyocr_clean_repeated_substrings(text, strlen(text), HYOCR_MODEL_VERSION_1_0, NULL);
    g_autofree char *r2 = hyocr_clean_repeated_substrings(head, strlen(head), HYOCR_MODEL_VERSION_1_5, NULL);
    g_assert_cmpfloat(g_timer_elapsed(timer, NULL), <, 5.0);
    g_assert_cmpstr(r, ==, want);
    g_assert_cmpstr(r2, ==, head);
}

/* ---------- tail-repetition check ---------- */

static void test_tail_copies(void)
{
    g_autofree char *eight = prefix_plus(100, "xyzw", 8);
    g_autofree char *seven = prefix_plus(100, "xyzw", 7);
    g_assert_true(hyocr_has_tail_repetition(eight, strlen(eight)));
    g_assert_false(hyocr_has_tail_repetition(seven, strlen(seven)));

    GString *s = g_string_new(NULL);
    add_repeat(s, "a", 15);
    g_assert_false(hyocr_has_tail_repetition(s->str, strlen(s->str)));   /* needs ≥ 16 characters */
    g_string_append_c(s, 'a');
    g_assert_true(hyocr_has_tail_repetition(s->str, strlen(s->str)));
    g_string_free(s, TRUE);
}

static void test_tail_max_unit(void)
{
    for (int unit = 255; unit <= 257; unit++) {
        GString *u = g_string_new(NULL);
        add_distinct(u, unit, 0x3400);
        GString *s = g_string_new(NULL);
        add_distinct(s, 50, 0x4e00);
        add_repeat(s, u->str, 8);
        g_assert_cmpint(hyocr_has_tail_repetition(s->str, strlen(s->str)), ==, unit <= 256);
        g_string_free(u, TRUE);
        g_string_free(s, TRUE);
    }
}

/* Units made only of (Python) whitespace never trigger a stop. */
static void test_tail_whitespace(void)
{
    const char *blank[] = { " ", "\n", "\t", "\u3000", "\u00a0", "\x1c", "\r\n" };
    for (size_t i = 0; i < G_N_ELEMENTS(blank); i++) {
        g_autofree char *t = prefix_plus(100, blank[i], 64);
        g_assert_false(hyocr_has_tail_repetition(t, strlen(t)));
    }
    /* U+200B is not whitespace for Python: it repeats like any other character. */
    g_autofree char *zw = prefix_plus(100, "\u200b", 64);
    g_assert_true(hyocr_has_tail_repetition(zw, strlen(zw)));

    /* A unit that mixes text and spaces counts. */
    g_autofree char *mixed = prefix_plus(100, "x   ", 8);
    g_assert_true(hyocr_has_tail_repetition(mixed, strlen(mixed)));
    /* Trailing spaces after the copies break the period for every non-blank unit. */
    g_autofree char *trailing = g_strconcat(mixed, "     ", NULL);
    g_assert_false(hyocr_has_tail_repetition(trailing, strlen(trailing)));
}

/* Only the end matters: an old loop followed by fresh text is not a stop. */
static void test_tail_only_end(void)
{
    GString *s = g_string_new(NULL);
    add_repeat(s, "ab", 5000);
    add_distinct(s, 8000, 0x4e00);
    g_assert_false(hyocr_has_tail_repetition(s->str, strlen(s->str)));
    add_repeat(s, "loop", 8);
    g_assert_true(hyocr_has_tail_repetition(s->str, strlen(s->str)));
    g_string_free(s, TRUE);

    g_autofree char *bad = g_strnfill(40, '\xff');   /* 40 × U+FFFD after repair */
    g_assert_true(hyocr_has_tail_repetition(bad, strlen(bad)));
}

/* First check at ≥ 4000 characters, then each ≥ 1000 after the last check. */
static void test_tail_schedule(void)
{
    hyocr_tail_check tc;
    hyocr_tail_check_init(&tc);
    g_autofree char *loop_3998 = prefix_plus(0, "ab", 1999);
    g_assert_false(hyocr_tail_check_should_stop(&tc, loop_3998, strlen(loop_3998), 3998));   /* not checked yet */

    g_autofree char *fresh_4050 = prefix_plus(4050, "", 0);
    g_assert_false(hyocr_tail_check_should_stop(&tc, fresh_4050, strlen(fresh_4050), 4050));   /* checked: clean */

    g_autofree char *loop_5049 = prefix_plus(4049, "ab", 500);
    g_assert_false(hyocr_tail_check_should_stop(&tc, loop_5049, strlen(loop_5049), n_chars(loop_5049)));
    g_autofree char *loop_5050 = prefix_plus(4050, "ab", 500);
    g_assert_true(hyocr_tail_check_should_stop(&tc, loop_5050, strlen(loop_5050), -1));   /* -1: counted here */

    /* The reference's own test: "ab" × 2000 in one piece stops at the first check. */
    hyocr_tail_check tc2;
    hyocr_tail_check_init(&tc2);
    g_autofree char *ab = prefix_plus(0, "ab", 2000);
    g_assert_true(hyocr_tail_check_should_stop(&tc2, ab, strlen(ab), 4000));
}

/* ---------- random texts against the oracle ---------- */

static void test_against_oracle(void)
{
    static const gunichar alphabets[][4] = {
        { 'a', 'b', 0, 0 }, { 'a', 'b', 'c', 0 }, { 'a', ' ', 0, 0 },
        { 0x91cd, 0x590d, ' ', 0 }, { 'a', 0x3000, 0x1c, 'b' },
    };
    static const int prefix_lens[] = { 5, 100, 1500, 2100, 7990, 8100 };
    static const int reps[] = { 1, 7, 8, 9, 10, 11, 30 };
    g_autoptr(GRand) r = g_rand_new_with_seed(31337);
    int cleaned = 0, stopped = 0;

    for (int iter = 0; iter < 150; iter++) {
        const gunichar *al = alphabets[g_rand_int_range(r, 0, G_N_ELEMENTS(alphabets))];
        int n_al = al[3] ? 4 : al[2] ? 3 : 2;
        int pre = prefix_lens[g_rand_int_range(r, 0, G_N_ELEMENTS(prefix_lens))];
        int unit = g_rand_int_range(r, 1, 300);
        int rep = reps[g_rand_int_range(r, 0, G_N_ELEMENTS(reps))];
        g_autofree gunichar *t = g_new(gunichar, pre + unit * rep);
        glong n = 0;
        for (int i = 0; i < pre; i++) t[n++] = al[g_rand_int_range(r, 0, n_al)];
        for (int i = 0; i < unit; i++) t[n + i] = al[g_rand_int_range(r, 0, n_al)];
        for (int k = 1; k < rep; k++) memcpy(t + n + k * unit, t + n, unit * sizeof *t);
        n += (glong)unit * rep;
        if (g_rand_int_range(r, 0, 5) == 0) n = g_rand_int_range(r, 0, n + 1);

        g_autofree char *utf8 = g_ucs4_to_utf8(t, n, NULL, NULL, NULL);
        glong tail_from = MAX(0, n - 8000);
        bool want_stop = oracle_tail(t + tail_from, n - tail_from);
        g_assert_cmpint(hyocr_has_tail_repetition(utf8, strlen(utf8)), ==, want_stop);
        stopped += want_stop;
        for (int v = 0; v < 2; v++) {
            hyocr_model_version ver = v ? HYOCR_MODEL_VERSION_1_5 : HYOCR_MODEL_VERSION_1_0;
            glong keep = oracle_clean(t, n, v ? 2000 : 8000);
            g_autofree char *want = g_ucs4_to_utf8(t, keep, NULL, NULL, NULL);
            g_autofree char *got = hyocr_clean_repeated_substrings(utf8, strlen(utf8), ver, NULL);
            g_assert_cmpstr(got, ==, want);
            cleaned += keep != n;
        }
    }
    /* The draw exercises both outcomes of both functions. */
    g_assert_cmpint(cleaned, >, 10);
    g_assert_cmpint(stopped, >, 10);
    g_assert_cmpint(stopped, <, 140);
}

/* Generated text can hold NUL bytes (a token may decode to byte 0): characters like any other,
 * counted and kept by length. */
static void test_nul_bytes(void)
{
    g_autoptr(GString) s = g_string_new_len("head", 4);
    for (int i = 0; i < 700; i++) g_string_append_len(s, "\0ab", 3);
    size_t len = 0;
    g_autofree char *clean = hyocr_clean_repeated_substrings(s->str, s->len, HYOCR_MODEL_VERSION_1_5, &len);
    g_assert_cmpmem(clean, len, "head\0ab", 7);
    g_assert_true(hyocr_has_tail_repetition(s->str, s->len));
    g_autofree char *short_clean = hyocr_clean_repeated_substrings("a\0b\xff", 4, HYOCR_MODEL_VERSION_1_5, &len);
    g_assert_cmpmem(short_clean, len, "a\0b\xEF\xBF\xBD", 6);
    hyocr_tail_check tc;
    hyocr_tail_check_init(&tc);
    g_assert_true(hyocr_tail_check_should_stop(&tc, s->str, s->len, 4 + 2100 + 2000));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/postprocess/clean/versions", test_clean_versions);
    g_test_add_func("/postprocess/clean/thresholds", test_clean_thresholds);
    g_test_add_func("/postprocess/clean/needs-ten", test_clean_needs_ten);
    g_test_add_func("/postprocess/clean/shortest-unit", test_clean_shortest_unit);
    g_test_add_func("/postprocess/clean/cjk", test_clean_cjk);
    g_test_add_func("/postprocess/clean/invalid-utf8", test_clean_invalid_utf8);
    g_test_add_func("/postprocess/clean/long", test_clean_long);
    g_test_add_func("/postprocess/tail/copies", test_tail_copies);
    g_test_add_func("/postprocess/tail/max-unit", test_tail_max_unit);
    g_test_add_func("/postprocess/tail/whitespace", test_tail_whitespace);
    g_test_add_func("/postprocess/tail/only-end", test_tail_only_end);
    g_test_add_func("/postprocess/tail/schedule", test_tail_schedule);
    g_test_add_func("/postprocess/against-oracle", test_against_oracle);
    g_test_add_func("/postprocess/nul-bytes", test_nul_bytes);
    return g_test_run();
}
