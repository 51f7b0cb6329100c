/* hyocr-gtk — shared between hyocr-application.c, hyocr-application-actions.c
 * and the tests. */
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
/* Desktop notifications asked for so far (sent or not: tests have no session bus). */
guint        hyocr_application_get_n_notifications(HyocrApplication *self);

G_END_DECLS
