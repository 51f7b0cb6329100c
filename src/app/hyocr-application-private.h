/* hyocr-gtk — shared between hyocr-application.c and hyocr-application-actions.c. */
#pragma once
#include "hyocr-application.h"
#include "hyocr-window.h"

G_BEGIN_DECLS

struct _HyocrApplication {
    AdwApplication parent_instance;
    char          *model_override;
    guint          n_notifications;
};

void         hyocr_application_setup_actions(HyocrApplication *self);
/* The window, created when there is none yet. */
HyocrWindow *hyocr_application_ensure_window(HyocrApplication *self);

G_END_DECLS
