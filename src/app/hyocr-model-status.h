/* hyocr-gtk — the page shown instead of the work area when the model cannot be
 * loaded: what is wrong (which file, what is expected), how to get the model,
 * and a way to choose another folder. Never a dialog, never a crash. */
#pragma once
#include <adwaita.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_MODEL_PROBLEM_MISSING,     /* the folder does not exist */
    HYOCR_MODEL_PROBLEM_INCOMPLETE,  /* required files are missing */
    HYOCR_MODEL_PROBLEM_BROKEN,      /* files exist but do not load */
    HYOCR_MODEL_PROBLEM_DEVICE,      /* the device cannot run it (no CUDA, out of memory) */
} HyocrModelProblem;

#define HYOCR_TYPE_MODEL_STATUS (hyocr_model_status_get_type())
G_DECLARE_FINAL_TYPE(HyocrModelStatus, hyocr_model_status, HYOCR, MODEL_STATUS, GtkWidget)

/* Describes the failed load of folder (error from the engine). */
void              hyocr_model_status_set_problem(HyocrModelStatus *self, const char *folder, const GError *error);
HyocrModelProblem hyocr_model_status_get_problem(HyocrModelStatus *self);
/* Hook for the model download flow: an empty, hidden vertical box below the
 * buttons. Whoever adds children shows it. */
GtkBox           *hyocr_model_status_get_download_area(HyocrModelStatus *self);
/* Shows the download area in place of the how-to text and the Choose Folder button. */
void              hyocr_model_status_set_download_visible(HyocrModelStatus *self, gboolean visible);

G_END_DECLS
