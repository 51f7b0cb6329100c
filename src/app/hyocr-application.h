/* hyocr-gtk — the application: command line (--model DIR, files to open),
 * app-wide actions and accelerators, desktop notifications. */
#pragma once
#include "hyocr-job.h"
#include <adwaita.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_APPLICATION (hyocr_application_get_type())
G_DECLARE_FINAL_TYPE(HyocrApplication, hyocr_application, HYOCR, APPLICATION, AdwApplication)

/* extra_flags: tests pass G_APPLICATION_NON_UNIQUE. */
HyocrApplication *hyocr_application_new(GApplicationFlags extra_flags);

/* The folder given with --model: used instead of the setting for this session. */
const char       *hyocr_application_get_model_override(HyocrApplication *self);
void              hyocr_application_set_model_override(HyocrApplication *self, const char *folder);

/* Tells the desktop a job ended while the window was not focused. */
void              hyocr_application_notify_job(HyocrApplication *self, HyocrJob *job);

G_END_DECLS
