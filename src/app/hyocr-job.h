/* hyocr-gtk — one OCR job: an image, the options it was queued with, and what
 * the worker reports while it runs (state, progress, streamed text).
 *
 * Properties change on the main context only. The worker thread reports
 * through the hyocr_job_post_* functions, which are thread-safe: they collect
 * changes under a lock and schedule at most one flush per frame (16 ms), so a
 * 16K-token answer costs about 60 main-loop callbacks a second, not one per token. */
#pragma once
#include "hyocr-preset.h"
#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_JOB_QUEUED,
    HYOCR_JOB_PREPARING,    /* decoding, checking memory, building the prompt */
    HYOCR_JOB_READING,      /* vision tower and prompt prefill */
    HYOCR_JOB_WRITING,      /* generating tokens */
    HYOCR_JOB_DONE,
    HYOCR_JOB_FAILED,
    HYOCR_JOB_CANCELLED,
} HyocrJobState;

/* Why a job failed: each has its own title and remedy where it is shown. */
typedef enum {
    HYOCR_JOB_FAILURE_NONE,
    HYOCR_JOB_FAILURE_IMAGE,     /* the file could not be read as an image */
    HYOCR_JOB_FAILURE_MEMORY,    /* the job does not fit in the memory allowed */
    HYOCR_JOB_FAILURE_OTHER,
} HyocrJobFailure;

#define HYOCR_TYPE_JOB_STATE (hyocr_job_state_get_type())
GType hyocr_job_state_get_type(void);
const char *hyocr_job_state_get_label(HyocrJobState state);   /* translated */

#define HYOCR_TYPE_JOB (hyocr_job_get_type())
G_DECLARE_FINAL_TYPE(HyocrJob, hyocr_job, HYOCR, JOB, GObject)

HyocrJob *hyocr_job_new_for_file(GFile *file, const HyocrJobOptions *opts);
/* A new job for the same image (file, page, or pasted pixels) with these options. */
HyocrJob *hyocr_job_new_again(HyocrJob *old, const HyocrJobOptions *opts, GError **error);
/* Page `page` (0-based) of a document of several pages (a PDF, a TIFF) opened from file. */
HyocrJob *hyocr_job_new_for_page(GFile *file, hyocr_document *doc, int page, const HyocrJobOptions *opts);
/* Converts the pixels now (the texture may not be usable from the worker thread). */
HyocrJob *hyocr_job_new_for_texture(GdkTexture *texture, const char *title, const HyocrJobOptions *opts,
                                    GError **error);

guint                   hyocr_job_get_id(HyocrJob *self);            /* unique in the process, from 1 */
const char             *hyocr_job_get_title(HyocrJob *self);
GFile                  *hyocr_job_get_file(HyocrJob *self);          /* NULL for pasted/dropped pixels */
hyocr_document         *hyocr_job_get_document(HyocrJob *self);      /* page jobs only, else NULL */
int                     hyocr_job_get_page(HyocrJob *self);          /* 0-based; 0 but for page jobs */
const HyocrJobOptions  *hyocr_job_get_options(HyocrJob *self);
/* A file job's preview is small (the file is read again to show it larger);
 * a pasted or dropped image's is the image itself. */
#define HYOCR_JOB_PREVIEW_SIDE 512
GdkTexture             *hyocr_job_get_preview(HyocrJob *self);
HyocrJobState           hyocr_job_get_state(HyocrJob *self);
gboolean                hyocr_job_is_finished(HyocrJob *self);
gboolean                hyocr_job_is_active(HyocrJob *self);         /* preparing, reading or writing */
double                  hyocr_job_get_progress(HyocrJob *self);
double                  hyocr_job_get_elapsed(HyocrJob *self);       /* seconds; live while running */
const char             *hyocr_job_get_text(HyocrJob *self);
int                     hyocr_job_get_n_tokens(HyocrJob *self);
const char             *hyocr_job_get_message(HyocrJob *self);       /* why it failed or was refused */
HyocrJobFailure         hyocr_job_get_failure(HyocrJob *self);
GCancellable           *hyocr_job_get_cancellable(HyocrJob *self);

/* Why the engine stopped (DONE, CANCELLED) and how long each stage took; zeros before. */
hyocr_stop_reason       hyocr_job_get_stop_reason(HyocrJob *self);
const hyocr_timings    *hyocr_job_get_timings(HyocrJob *self);
/* The job's row in the history (hyocr-history.h), 0 when it has none; its result is
 * stored there once hyocr_job_is_stored. */
gint64                  hyocr_job_get_history_id(HyocrJob *self);
void                    hyocr_job_set_history_id(HyocrJob *self, gint64 id);
gboolean                hyocr_job_is_stored(HyocrJob *self);
void                    hyocr_job_set_stored(HyocrJob *self);
/* A job that ended in an earlier run, shown again from the history: never queued. */
void                    hyocr_job_restore(HyocrJob *self, HyocrJobState state, const char *text, const char *message,
                                          int n_tokens);

/* Stops the job: at once when still queued, within one decode step when running. */
void hyocr_job_cancel(HyocrJob *self);
/* The file job's image (the page of a document) read again, its long side at most
 * max_side; any thread. */
hyocr_image *hyocr_job_render(HyocrJob *self, int max_side, GError **error);
/* Loads a preview of a queued file job in a thread, if it has none yet. */
void hyocr_job_ensure_preview(HyocrJob *self);

/* ---- worker side (any thread) ---- */

/* Claims a queued job for running; FALSE when it was cancelled meanwhile. */
gboolean     hyocr_job_claim(HyocrJob *self);
/* The decoded pixels of a texture job (NULL for file jobs); the job keeps them. */
const hyocr_image *hyocr_job_peek_image(HyocrJob *self);
void         hyocr_job_post_state(HyocrJob *self, HyocrJobState state);
void         hyocr_job_post_prompt(HyocrJob *self, const char *prompt);
void         hyocr_job_post_preview(HyocrJob *self, GdkTexture *texture);
void         hyocr_job_post_piece(HyocrJob *self, const char *piece, int n_generated);
void         hyocr_job_post_restart(HyocrJob *self);
/* Ends the job: final_text replaces the streamed text when it differs (the
 * engine's clean-up of repeats); message explains FAILED or CANCELLED. */
void         hyocr_job_post_finish(HyocrJob *self, HyocrJobState state, const char *final_text, const char *message);
/* Each engine event of the job, for its timings and why it stopped (before the
 * hyocr_job_post_finish that its last event brings). */
void         hyocr_job_post_timing(HyocrJob *self, const hyocr_event *ev);
/* Ends the job as FAILED for this reason, message in the app's words. */
void         hyocr_job_post_failure(HyocrJob *self, HyocrJobFailure failure, const char *message);

G_END_DECLS
