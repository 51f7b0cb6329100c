/* hyocr-gtk — the words for a job the engine's memory plan (memplan.h) says
 * will not fit: what it needs, what there is, and which preference to change. */
#pragma once
#include "hyocr.h"

G_BEGIN_DECLS

/* NULL when plan->fits. width × height: the image as the engine sees it;
 * is_limit: the budget is the memory-limit preference (else the card's free
 * memory); cpu: the CPU backend. */
char *hyocr_memory_refusal(const hyocr_memplan *plan, int width, int height, gboolean is_limit, gboolean cpu);

G_END_DECLS
