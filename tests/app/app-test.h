/* Helpers for the hyocr-gtk UI tests: one registered application per test
 * program, windows on the fixture checkpoints, waiting on the main loop. */
#pragma once
/* The tests read what the app keeps private: its -private.h headers. */
#include "hyocr-application-private.h"
#include "hyocr-image-view-private.h"
#include "hyocr-job-private.h"
#include "hyocr-job-row-private.h"
#include "hyocr-model-status-private.h"
#include "hyocr-result-view-private.h"
#include "hyocr-history-view-private.h"
#include "hyocr-vram-gauge-private.h"
#include "hyocr-window-private.h"
#include "hyocr-worker-private.h"

typedef gboolean (*AppTestCond)(gpointer data);

/* g_test_init plus the application, in an XDG_DATA_HOME of its own (its history) (non-unique, registered: startup ran). */
void              app_test_init(int *argc, char ***argv);
HyocrApplication *app_test_app(void);
/* Resets every key of the schema (the memory backend is shared in the process). */
void              app_test_reset_settings(void);
GSettings        *app_test_settings(void);
/* A presented window whose model folder is tests/data/<ckpt> (any path when
 * ckpt starts with '/'), waited until the engine is ready when ready is TRUE. */
HyocrWindow      *app_test_window(const char *ckpt, gboolean ready);
/* Destroys the window and checks it (and its worker) are finalized. */
void              app_test_destroy_window(HyocrWindow *win);

/* The bound of every wait: never reached unless something is wrong, only so a
 * broken test fails with its message instead of hanging. Tests wait for events
 * and conditions, never for time. */
#define APP_TEST_WAIT_MS 60000

/* Iterates the main context until cond holds; FALSE when timeout_ms passed first. */
gboolean          app_test_wait(AppTestCond cond, gpointer data, guint timeout_ms);
/* Waits until the window's worker is in state; fails the test, saying both states, if not. */
void              app_test_wait_worker(HyocrWindow *win, HyocrWorkerState state);
/* Dispatches what is ready now (a job's flush, a queued idle) until nothing is. */
void              app_test_drain(void);
/* Waits until the widget is mapped with a size and a frame that began after
 * this call has been painted: what it shows then is what the state says. */
void              app_test_wait_drawn(GtkWidget *widget);
/* The widget as last painted (after app_test_wait_drawn), as a texture. */
GdkTexture       *app_test_render(GtkWidget *widget);
/* Waits until the job is finished; fails the test on timeout. */
void              app_test_wait_job(HyocrJob *job, guint timeout_ms);
HyocrJob         *app_test_job_at(HyocrWindow *win, guint index);   /* borrowed */

/* The hyocr CLI's answer for the same input: the streamed text (stdout of
 * text mode, trailing newline removed) and the final text (JSON mode). */
void              app_test_cli_run(const char *ckpt, const char *image, const char *task, int max_new_tokens,
                                   char **streamed, char **final_text);
/* The same with the task given as the CLI's arguments (args: "-t", "extract_fields",
 * "--fields", "a,b", …). */
void              app_test_cli_run_args(const char *ckpt, const char *image, const char *const *args,
                                        int max_new_tokens, char **streamed, char **final_text);
/* The same for every page of a document (a PDF, a TIFF): the final texts, in page order. */
GPtrArray        *app_test_cli_pages(const char *ckpt, const char *document, const char *task, int max_new_tokens);
char             *app_test_data(const char *first, ...) G_GNUC_NULL_TERMINATED;
GFile            *app_test_image(const char *name);
