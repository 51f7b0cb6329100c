/* hyocr-gtk — what the tests read of the memory gauge. */
#pragma once
#include "hyocr-vram-gauge.h"

G_BEGIN_DECLS

/* How often figures were shown, and the last ones. */
guint                 hyocr_vram_gauge_get_n_updates(HyocrVramGauge *self);
const hyocr_mem_info *hyocr_vram_gauge_get_figures(HyocrVramGauge *self);
const char           *hyocr_vram_gauge_get_summary(HyocrVramGauge *self);   /* the short label */
const char           *hyocr_vram_gauge_get_device_text(HyocrVramGauge *self);
int64_t               hyocr_vram_gauge_get_app_bytes(HyocrVramGauge *self);   /* "This app" */

G_END_DECLS
