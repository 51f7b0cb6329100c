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
    gboolean       capture;          /* --capture: the window is not shown */
    GdkClipboard  *kept_clipboard;   /* held for its text until another client takes it */
};

void         hyocr_application_setup_actions(HyocrApplication *self);
/* The window, created when there is none yet. */
HyocrWindow *hyocr_application_ensure_window(HyocrApplication *self);
/* Desktop notifications asked for so far (sent or not: tests have no session bus). */
guint        hyocr_application_get_n_notifications(HyocrApplication *self);
/* A capture's answer is on the clipboard (or it failed): said with "Open". */
void         hyocr_application_notify_capture(HyocrApplication *self, HyocrJob *job);
/* A capture that failed before it became a job, told where no window is seen. */
void         hyocr_application_notify_capture_failed(HyocrApplication *self, const char *message);
/* Keeps the process (not the window) while clipboard holds our text and no clipboard
 * manager took it: until something else is copied. */
void         hyocr_application_keep_clipboard(HyocrApplication *self, GdkClipboard *clipboard);

G_END_DECLS
