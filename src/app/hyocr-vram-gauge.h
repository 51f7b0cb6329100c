/* hyocr-gtk — memory gauge for the header bar: used/total on the card (or RAM
 * on the CPU backend) and this app's share, broken down in a popover. */
#pragma once
#include "hyocr.h"
#include <gtk/gtk.h>

G_BEGIN_DECLS

#define HYOCR_TYPE_VRAM_GAUGE (hyocr_vram_gauge_get_type())
G_DECLARE_FINAL_TYPE(HyocrVramGauge, hyocr_vram_gauge, HYOCR, VRAM_GAUGE, GtkWidget)

/* cpu: the figures are system RAM (the CPU backend), and this app holds resident
 * bytes (the whole process); on the GPU it holds what the engine has on the card.
 * limit: bytes, 0 = none. */
void       hyocr_vram_gauge_set_figures(HyocrVramGauge *self, const hyocr_mem_info *mem, gboolean cpu, int64_t limit,
                                        int64_t resident);
/* No engine loaded: says so instead of figures. */
void       hyocr_vram_gauge_set_unavailable(HyocrVramGauge *self, const char *reason);

G_END_DECLS
