/* hyocr CLI — one function per subcommand; main.c dispatches. Each returns the
 * process exit status and prints errors to stderr. */
#pragma once
#include <glib.h>
#include "image.h"
#include "prompt.h"

int hyocr_cmd_inspect(int argc, char **argv);
int hyocr_cmd_tokenize(int argc, char **argv);
int hyocr_cmd_detokenize(int argc, char **argv);
int hyocr_cmd_prepare(int argc, char **argv);
int hyocr_cmd_run(int argc, char **argv);        /* cmd-run.c */
int hyocr_cmd_download(int argc, char **argv);   /* cmd-download.c */
int hyocr_cmd_models(int argc, char **argv);     /* cmd-download.c */

/* A subcommand's option context: translated help, entries added. */
GOptionContext *hyocr_cli_context_new(const char *parameter_string, const GOptionEntry *entries);
/* Parses; on failure prints "hyocr: <why>" to stderr and returns FALSE. */
gboolean        hyocr_cli_parse(GOptionContext *ctx, int *argc, char ***argv);

/* Shared by prepare and run: writes input_ids.txt, position_ids.txt, grid_thw.txt, pixel_values.f32. */
gboolean hyocr_cli_dump_inputs(const char *dir, const hyocr_prompt *prompt, const hyocr_pixels *px, GError **error);
