/* hyocr — error domain shared by every part of the engine.
 * Messages name the file (or input) and the problem, and where possible what to
 * do, in words of the engine's own parameters (a memory limit, max_side), never
 * in a front end's (a command-line option, a preference): front ends that want
 * their own words read the data an error carries (hyocr_error_get_memplan). */
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
    HYOCR_ERROR_PASSWORD,    /* the document is encrypted: no password, or not the right one */
    HYOCR_ERROR_BUSY,        /* the engine's queue is full: try again later */
    HYOCR_ERROR_MODEL_MISSING, /* no model where one was looked for, or not its files: the front end
                                * says how its user gets one (hyocr download, the app's Models page) */
} HyocrError;

typedef struct hyocr_memplan hyocr_memplan;   /* memplan.h */

/* The memory plan a HYOCR_ERROR_NO_MEMORY refusal carries: a job refused before
 * it ran (what it needs, what there is, hyocr_memplan_advice: what to change),
 * or an engine whose weights alone exceed the memory limit (a plan with no
 * job). NULL for every other error. Valid as long as the error. */
const hyocr_memplan *hyocr_error_get_memplan(const GError *error);
/* Engine side: attaches a copy of plan to error (of the HYOCR_ERROR domain). */
void                 hyocr_error_set_memplan(GError *error, const hyocr_memplan *plan);

G_END_DECLS
