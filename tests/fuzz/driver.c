/* hyocr fuzzing: a main for harnesses built without libFuzzer. Runs
 * LLVMFuzzerTestOneInput once on every file given, and on every file of every
 * folder given (sorted, not recursive), so the regressions and seed corpus of a
 * harness are replayed by `meson test` in any build. Options in libFuzzer's
 * style (-name=value) are ignored, so one command line serves both. */
#include "fuzz.h"

#include <stdio.h>
#include <string.h>

/* Harnesses without set-up do not define it. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_file(const char *path)
{
    g_autofree char *data = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &data, &len, &err)) g_error("%s", err->message);
    fprintf(stderr, "running %s (%zu bytes)\n", path, (size_t)len);
    /* a copy of exactly len bytes, so a read past the input is a sanitizer finding */
    g_autofree uint8_t *copy = g_memdup2(data, len);
    LLVMFuzzerTestOneInput(copy, len);
}

static int run_dir(const char *dir)
{
    g_autoptr(GError) err = NULL;
    GDir *d = g_dir_open(dir, 0, &err);
    if (!d) g_error("%s", err->message);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *name; (name = g_dir_read_name(d));)
        if (name[0] != '.') g_ptr_array_add(names, g_build_filename(dir, name, NULL));
    g_dir_close(d);
    if (names->len) qsort(names->pdata, names->len, sizeof(char *), cmp_str);   /* an empty folder has no pdata */
    for (guint i = 0; i < names->len; i++) run_file(names->pdata[i]);
    return (int)names->len;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        if (g_file_test(argv[i], G_FILE_TEST_IS_DIR)) n += run_dir(argv[i]);
        else run_file(argv[i]), n++;
    }
    printf("%d inputs ran without a finding\n", n);
    return n > 0 ? 0 : 1;   /* a replay of nothing proves nothing */
}
