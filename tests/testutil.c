#include "testutil.h"
#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

char *hyocr_test_data(const char *first, ...)
{
    const char *root = g_getenv("HYOCR_TEST_DATA");
    if (!root) root = HYOCR_TEST_DATA;
    GPtrArray *parts = g_ptr_array_new();
    g_ptr_array_add(parts, (gpointer)root);
    va_list ap;
    va_start(ap, first);
    for (const char *p = first; p; p = va_arg(ap, const char *))
        g_ptr_array_add(parts, (gpointer)p);
    va_end(ap);
    g_ptr_array_add(parts, NULL);
    char *path = g_build_filenamev((char **)parts->pdata);
    g_ptr_array_free(parts, TRUE);
    return path;
}

gboolean hyocr_test_require(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_EXISTS)) return TRUE;
    g_autofree char *msg = g_strdup_printf("fixture missing: %s (run tests/reference/make_fixtures.py on the GPU machine)", path);
    g_test_skip(msg);
    return FALSE;
}

float *hyocr_test_read_f32(const char *path, size_t *n)
{
    gchar *buf = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &buf, &len, &err))
        g_error("cannot read %s: %s", path, err->message);
    *n = len / sizeof(float);
    return (float *)buf;
}

GArray *hyocr_test_read_ints(const char *path)
{
    g_autofree gchar *buf = NULL;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &buf, NULL, &err))
        g_error("cannot read %s: %s", path, err->message);
    GArray *a = g_array_new(FALSE, FALSE, sizeof(int64_t));
    char *p = buf, *end;
    for (;;) {
        while (*p && g_ascii_isspace(*p)) p++;
        if (!*p) break;
        int64_t v = g_ascii_strtoll(p, &end, 10);
        if (end == p) g_error("%s: not an integer near '%.10s'", path, p);
        g_array_append_val(a, v);
        p = end;
    }
    return a;
}

char *hyocr_test_tmpdir(void)
{
    g_autoptr(GError) err = NULL;
    char *d = g_dir_make_tmp("hyocr-test-XXXXXX", &err);
    g_assert_no_error(err);
    return d;
}

static void rm_rf(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        GDir *d = g_dir_open(path, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            rm_rf(child);
        }
        if (d) g_dir_close(d);
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

void hyocr_test_rmdir(const char *path) { if (path) rm_rf(path); }
