/* hyocr fuzzing: helpers shared by the harnesses (fuzz.h). */
#include "fuzz.h"

#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz finding: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* Errors, criticals and warnings are findings; the rest is noise here. */
static GLogWriterOutput writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    if (level & (G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO | G_LOG_LEVEL_MESSAGE))
        return G_LOG_WRITER_HANDLED;
    g_log_writer_standard_streams(level, fields, n_fields, user_data);
    abort();
}

void fuzz_init(void)
{
    static gsize done;
    if (!g_once_init_enter(&done)) return;
    g_log_set_writer_func(writer, NULL, NULL);
    g_once_init_leave(&done, 1);
}

void fuzz_note(const GError *err)
{
    static int verbose = -1;
    if (verbose < 0) verbose = g_getenv("HYOCR_FUZZ_VERBOSE") != NULL;
    if (verbose && err) fprintf(stderr, "refused: %s\n", err->message);
}

static char *dir_path;

static void remove_dir(void)
{
    GDir *d = g_dir_open(dir_path, 0, NULL);
    for (const char *name; d && (name = g_dir_read_name(d));) {
        g_autofree char *p = g_build_filename(dir_path, name, NULL);
        g_remove(p);
    }
    if (d) g_dir_close(d);
    g_rmdir(dir_path);
}

const char *fuzz_dir(void)
{
    if (!dir_path) {
        g_autoptr(GError) err = NULL;
        dir_path = g_dir_make_tmp("hyocr-fuzz-XXXXXX", &err);
        if (!dir_path) g_error("cannot make a folder for the harness: %s", err->message);
        atexit(remove_dir);
    }
    return dir_path;
}

char *fuzz_write(const char *name, const void *data, size_t len)
{
    char *path = g_build_filename(fuzz_dir(), name, NULL);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
        g_error("cannot write %s", path);
    return path;
}

void fuzz_remove(const char *name)
{
    g_autofree char *path = g_build_filename(fuzz_dir(), name, NULL);
    g_remove(path);
}

void fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts, int max, int *n)
{
    *n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && *n < max; i++) {
        if (i < size && data[i] != 0) continue;
        parts[(*n)++] = (fuzz_part){ data + start, i - start };
        start = i + 1;
    }
}
