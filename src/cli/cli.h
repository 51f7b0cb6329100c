/* hyocr CLI — one function per subcommand; main.c dispatches. Each returns the
 * process exit status and prints errors to stderr. */
#pragma once
#include <glib.h>
#include "document.h"
#include "resize.h"
#include "prompt.h"
#include "hyocr.h"

int hyocr_cmd_inspect(int argc, char **argv);
int hyocr_cmd_tokenize(int argc, char **argv);
int hyocr_cmd_detokenize(int argc, char **argv);
int hyocr_cmd_prepare(int argc, char **argv);
int hyocr_cmd_run(int argc, char **argv);        /* cmd-run.c */
int hyocr_cmd_download(int argc, char **argv);   /* cmd-download.c */
int hyocr_cmd_models(int argc, char **argv);     /* cmd-download.c */
int hyocr_cmd_serve(int argc, char **argv);      /* cmd-serve.c */

/* A subcommand's option context: translated help, entries added. */
GOptionContext *hyocr_cli_context_new(const char *parameter_string, const GOptionEntry *entries);
/* Parses; on failure prints "hyocr: <why>" to stderr and returns FALSE. */
gboolean        hyocr_cli_parse(GOptionContext *ctx, int *argc, char ***argv);

/* options.c: values of the options of the commands that open an engine. */
bool hyocr_cli_parse_device(const char *s, hyocr_device *out, GError **error);
bool hyocr_cli_parse_dtype(const char *s, hyocr_compute_dtype *out, GError **error);
/* "0.5": a fraction of the card (negative in the engine params); "8G", "2500M", "123456": bytes. */
bool hyocr_cli_parse_memory_limit(const char *s, int64_t *out, GError **error);
bool hyocr_cli_parse_bytes(const char *opt, const char *s, int64_t *out, GError **error);
/* v within [lo, hi] (hi INFINITY: no upper bound); else an error naming opt and v. */
bool hyocr_cli_check_range(const char *opt, double v, double lo, double hi, GError **error);
bool hyocr_cli_parse_fraction(const char *opt, const char *s, double *out, GError **error);

/* Shared by prepare and run: writes input_ids.txt, position_ids.txt, grid_thw.txt, pixel_values.f32. */
gboolean hyocr_cli_dump_inputs(const char *dir, const hyocr_prompt *prompt, const hyocr_pixels *px, GError **error);

/* inputs.c: the pages one run reads. */
#define HYOCR_CLI_MAX_JOBS 100000

typedef struct {
    char           *path;      /* the file */
    hyocr_document *doc;       /* NULL when it could not be opened (error says why) */
    int             page;      /* 0-based */
    int             n_pages;   /* of its document */
    char           *label;     /* how output and messages name it: "scan.pdf, page 3" */
    GError         *error;
} hyocr_cli_page;

typedef struct {
    char      **images;     /* --image values */
    char      **rest;       /* files and folders after the options */
    const char *pages;      /* --pages, for documents of several pages; NULL = all */
    const char *password;   /* for encrypted PDFs */
    int         repeat;
} hyocr_cli_inputs;

void       hyocr_cli_page_free(hyocr_cli_page *p);
/* hyocr_cli_page, in order; NULL with error set for a bad folder, a page selection a document
 * cannot satisfy, or too many jobs. skipped (may be NULL) gets the paths in the folders whose
 * names say no readable format (document.h's list), sorted, to be reported. */
GPtrArray *hyocr_cli_collect_pages(const hyocr_cli_inputs *in, GPtrArray *skipped, GError **error);
