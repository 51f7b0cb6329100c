/* hyocr-gtk — what the tests read of the model page. */
#pragma once
#include "hyocr-model-status.h"

G_BEGIN_DECLS

const char *hyocr_model_status_get_title(HyocrModelStatus *self);
const char *hyocr_model_status_get_details(HyocrModelStatus *self);

G_END_DECLS
