/* hyocr fuzzing: what every harness (fuzz-<name>.c) shares.
 *
 * A harness defines LLVMFuzzerTestOneInput and, when it needs set-up done once,
 * LLVMFuzzerInitialize. Under -Dfuzzing=true (clang) libFuzzer drives it; in every
 * other build driver.c does, replaying the files and folders it is given, so
 * `meson test --suite fuzz` replays tests/fuzz/regressions/<name>/ and
 * tests/fuzz/corpus/<name>/ with the plain compiler too. A harness reports a
 * finding by crashing: an assertion (g_assert* / fuzz_require), a sanitizer
 * report, or a GLib critical or warning (made fatal by fuzz_init). */
#pragma once
#include <glib.h>
#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Criticals and warnings abort (findings); debug and info output is dropped. Call
 * from LLVMFuzzerInitialize. Idempotent. */
void fuzz_init(void);

/* A private folder for harnesses whose entry point reads files, made on the first
 * call and removed at exit. */
const char *fuzz_dir(void);
/* Writes data to fuzz_dir()/name (replacing it) and returns the path, owned by the caller. */
char *fuzz_write(const char *name, const void *data, size_t len);
/* Removes fuzz_dir()/name if it exists. */
void fuzz_remove(const char *name);

/* Splits data at each NUL byte into at most max parts; *n gets the count. The
 * parts point into data (not NUL-terminated). Lets one input carry several text
 * files (no JSON text holds a NUL byte). */
typedef struct {
    const uint8_t *data;
    size_t         len;
} fuzz_part;
void fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts, int max, int *n);

/* Prints why an input was refused when HYOCR_FUZZ_VERBOSE is set (to see which
 * seeds get past the first checks); silent otherwise. */
void fuzz_note(const GError *err);

/* Prints the message and aborts (libFuzzer saves the input on SIGABRT, not on the
 * SIGTRAP of g_error). */
G_NORETURN void fuzz_fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* A finding when cond is false. */
#define fuzz_require(cond, ...) \
    do { if (!(cond)) fuzz_fail(__VA_ARGS__); } while (0)

G_END_DECLS
