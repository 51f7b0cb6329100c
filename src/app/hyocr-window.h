/* hyocr-gtk — the main window: task picker, job queue, result view, memory
 * gauge, and the drop/paste/open entry points. */
#pragma once
#include "hyocr-application.h"
#include "hyocr-job.h"
#include "hyocr-result-view.h"
#include "hyocr-vram-gauge.h"
#include "hyocr-worker.h"
#include <adwaita.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_WINDOW (hyocr_window_get_type())
G_DECLARE_FINAL_TYPE(HyocrWindow, hyocr_window, HYOCR, WINDOW, AdwApplicationWindow)

HyocrWindow *hyocr_window_new(HyocrApplication *app);

/* Entry points shared by drop, paste, Open and the command line. Each file or
 * texture becomes a queued job with the current preset (a document, a job per
 * page; a folder, its files in a format the engine reads, the others counted in
 * a toast); a file in no such format and a preset that lacks input (no field
 * names) are refused with a toast. Return the jobs added. */
guint        hyocr_window_add_files(HyocrWindow *self, GFile **files, guint n_files);
gboolean     hyocr_window_add_texture(HyocrWindow *self, GdkTexture *texture, const char *title);
void         hyocr_window_toast(HyocrWindow *self, const char *message);
/* Queues the image of job again, with its own task or the one picked now; the
 * new job is selected. NULL (and a toast) when the current task lacks input. */
HyocrJob    *hyocr_window_run_again(HyocrWindow *self, HyocrJob *job, gboolean current_task);
/* Replaces every failed job with a new one of the same image and task. */
guint        hyocr_window_retry_failed(HyocrWindow *self);
/* Reloads the engine from the settings (model folder, device, memory limit). */
void         hyocr_window_reload_engine(HyocrWindow *self);
/* The API key typed in Preferences: used from now on for this session (and the engine
 * reconnects); the keyring keeps it for the next ones. */
void         hyocr_window_set_server_key(HyocrWindow *self, const char *key);
/* Asks for a model folder (the dialog over parent) and uses it: remembered in
 * the settings, and it replaces a --model folder of this session. */
void         hyocr_window_choose_model_folder(HyocrWindow *self, GtkWindow *parent);

GSettings   *hyocr_window_get_settings(HyocrWindow *self);
HyocrWorker *hyocr_window_get_worker(HyocrWindow *self);
void         hyocr_window_select_job(HyocrWindow *self, HyocrJob *job);
/* The job with this id (hyocr_job_get_id) and its place in the queue, or NULL. */
HyocrJob    *hyocr_window_find_job(HyocrWindow *self, guint id, guint *position);

G_END_DECLS
