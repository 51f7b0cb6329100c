/* Stop sequences (stop.c): where a stop string is found (the earliest, only one
 * that ends in the new bytes), what the stream holds back, and which requests are
 * refused. The engine's use of them runs in test-engine's /engine/stop-*. */
#include "error.h"
#include "stop.h"
#include <string.h>

static void test_find(void)
{
    const char *const stop[] = { "END", "ab", NULL };
    const char *t = "xxabyyEND";
    size_t at = 99;
    int which = -1;
    /* every byte new: the earliest match wins, whatever its place in the list */
    g_assert_true(hyocr_stop_find(stop, t, strlen(t), 0, &at, &which));
    g_assert_cmpuint(at, ==, 2);
    g_assert_cmpint(which, ==, 1);
    /* only matches that end past `from` count: "ab" ended before byte 5 */
    g_assert_true(hyocr_stop_find(stop, t, strlen(t), 5, &at, &which));
    g_assert_cmpuint(at, ==, 6);
    g_assert_cmpint(which, ==, 0);
    /* a match across the old text and the new byte */
    g_assert_true(hyocr_stop_find(stop, t, strlen(t), 8, &at, &which));
    g_assert_cmpuint(at, ==, 6);
    g_assert_false(hyocr_stop_find(stop, t, 8, 4, &at, &which));   /* "xxabyyEN" */
    /* the same start: the first in the list */
    const char *const same[] = { "abc", "ab", NULL };
    g_assert_true(hyocr_stop_find(same, "zabc", 4, 0, &at, &which));
    g_assert_cmpuint(at, ==, 1);
    g_assert_cmpint(which, ==, 0);
    /* text with NUL bytes is searched by its length */
    const char nul[] = { 'a', '\0', 'E', 'N', 'D' };
    g_assert_true(hyocr_stop_find(stop, nul, sizeof nul, 0, &at, &which));
    g_assert_cmpuint(at, ==, 2);
    g_assert_false(hyocr_stop_find(NULL, t, strlen(t), 0, &at, &which));
}

static void test_held(void)
{
    const char *const stop[] = { "STOP", "</s>", NULL };
    g_assert_cmpuint(hyocr_stop_held(stop, "text ST", 7), ==, 2);
    g_assert_cmpuint(hyocr_stop_held(stop, "text STO", 8), ==, 3);
    g_assert_cmpuint(hyocr_stop_held(stop, "text </", 7), ==, 2);
    g_assert_cmpuint(hyocr_stop_held(stop, "text", 4), ==, 0);
    g_assert_cmpuint(hyocr_stop_held(stop, "S", 1), ==, 1);
    /* a whole stop string is found, not held */
    g_assert_cmpuint(hyocr_stop_held(stop, "xSTOP", 5), ==, 0);
    /* the longest of several starts: "a" of "ab", "aa" of "aab" */
    const char *const over[] = { "ab", "aab", NULL };
    g_assert_cmpuint(hyocr_stop_held(over, "xaa", 3), ==, 2);
    /* a multibyte start is held whole: "段落" is E6 AE B5 E8 90 BD */
    const char *const cjk[] = { "段落", NULL };
    g_assert_cmpuint(hyocr_stop_held(cjk, "文\xe6\xae\xb5", 6), ==, 3);
    g_assert_cmpuint(hyocr_stop_held(NULL, "abc", 3), ==, 0);
}

static void test_check(void)
{
    g_autoptr(GError) err = NULL;
    const char *const fine[] = { "a", "段落", NULL };
    g_assert_true(hyocr_stop_strings_check(fine, &err));
    g_assert_true(hyocr_stop_strings_check(NULL, &err));
    const char *const empty[] = { "a", "", NULL };
    g_assert_false(hyocr_stop_strings_check(empty, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "stop string 2 must be UTF-8 text of 1 to 256 bytes (it has 0)"));
    g_clear_error(&err);
    g_autofree char *long_ = g_strnfill(HYOCR_STOP_MAX_BYTES + 1, 'x');
    const char *const too_long[] = { long_, NULL };
    g_assert_false(hyocr_stop_strings_check(too_long, &err));
    g_assert_nonnull(strstr(err->message, "(it has 257)"));
    g_clear_error(&err);
    const char *const bad[] = { "\xff\xfe", NULL };
    g_assert_false(hyocr_stop_strings_check(bad, &err));
    g_clear_error(&err);
    const char *many[HYOCR_STOP_MAX_STRINGS + 2] = { 0 };
    for (int i = 0; i <= HYOCR_STOP_MAX_STRINGS; i++) many[i] = "x";
    g_assert_false(hyocr_stop_strings_check(many, &err));
    g_assert_nonnull(strstr(err->message, "at most 16 stop strings (got 17)"));
    g_clear_error(&err);

    const int32_t ids[] = { 0, 7, 99 };
    g_assert_true(hyocr_stop_tokens_check(ids, 3, 100, &err));
    g_assert_true(hyocr_stop_tokens_check(ids, 3, 0, &err));   /* no vocabulary: not checked */
    g_assert_false(hyocr_stop_tokens_check(ids, 3, 99, &err));
    g_assert_nonnull(strstr(err->message, "stop token id 99 is not in the vocabulary (0 to 98)"));
    g_clear_error(&err);
    g_assert_false(hyocr_stop_tokens_check(ids, HYOCR_STOP_MAX_TOKENS + 1, 0, &err));
    g_assert_nonnull(strstr(err->message, "at most 256 stop token ids"));
    g_assert_true(hyocr_stop_token_is(ids, 3, 7));
    g_assert_false(hyocr_stop_token_is(ids, 3, 8));
    g_assert_false(hyocr_stop_token_is(NULL, 0, 0));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/stop/find", test_find);
    g_test_add_func("/stop/held", test_held);
    g_test_add_func("/stop/check", test_check);
    return g_test_run();
}
