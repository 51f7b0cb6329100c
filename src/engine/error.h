/* hyocr — error domain shared by every part of the engine.
 * Messages name the file (or input) and the problem, and where possible what to do. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

#define HYOCR_ERROR (hyocr_error_quark())
GQuark hyocr_error_quark(void);

typedef enum {
    HYOCR_ERROR_IO,          /* file missing, unreadable, mmap failed */
    HYOCR_ERROR_PARSE,       /* malformed JSON or binary header */
    HYOCR_ERROR_CONFIG,      /* config value missing or inconsistent */
    HYOCR_ERROR_CHECKPOINT,  /* tensor missing, wrong dtype/shape/range */
    HYOCR_ERROR_TOKENIZER,
    HYOCR_ERROR_IMAGE,       /* undecodable, truncated, too large, bad aspect */
    HYOCR_ERROR_PROMPT,      /* unknown task, missing fields */
    HYOCR_ERROR_TOO_LONG,    /* prompt or job exceeds max_model_len */
    HYOCR_ERROR_NO_MEMORY,   /* host or device allocation failed / budget exceeded */
    HYOCR_ERROR_BACKEND,     /* device/driver failure */
    HYOCR_ERROR_CANCELLED,
    HYOCR_ERROR_INVALID_ARGUMENT,
} HyocrError;

G_END_DECLS
