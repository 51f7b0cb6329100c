/* Helpers shared by the GTest programs. */
#pragma once
#include <glib.h>
#include <stdint.h>

/* Path under tests/data (HYOCR_TEST_DATA env overrides the compiled-in path). */
char   *hyocr_test_data(const char *first, ...) G_GNUC_NULL_TERMINATED;
/* Skips the current test (loudly) when the fixture is absent. Returns FALSE then. */
gboolean hyocr_test_require(const char *path);
/* Reads a raw little-endian float32 file; *n gets the element count. */
float  *hyocr_test_read_f32(const char *path, size_t *n);
/* Reads whitespace-separated integers. */
GArray *hyocr_test_read_ints(const char *path);
/* A fresh temporary directory, removed with hyocr_test_rmdir. */
char   *hyocr_test_tmpdir(void);
void    hyocr_test_rmdir(const char *path);
