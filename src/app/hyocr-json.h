/* hyocr-gtk — the "extract fields" answer as JSON. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* The JSON value in the model's answer (a ```json fence around it is allowed),
 * re-indented; NULL when the answer is not valid JSON. */
char *hyocr_json_prettify(const char *text);

G_END_DECLS
