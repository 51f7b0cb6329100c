/* hyocr-gtk — the preset picker and the preset's own inputs (target language,
 * field names, custom prompt), all kept in GSettings so they are remembered. */
#pragma once
#include <gtk/gtk.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_TASK_PICKER (hyocr_task_picker_get_type())
G_DECLARE_FINAL_TYPE(HyocrTaskPicker, hyocr_task_picker, HYOCR, TASK_PICKER, GtkWidget)

void hyocr_task_picker_set_settings(HyocrTaskPicker *self, GSettings *settings);

G_END_DECLS
