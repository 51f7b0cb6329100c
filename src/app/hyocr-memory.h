/* hyocr-gtk — the words for what the engine's memory plan (memplan.h) says
 * will not fit: what it needs, what there is, and which preference to change
 * to what (the plan's advice). */
#pragma once
#include "error.h"
#include "hyocr.h"

G_BEGIN_DECLS

/* NULL when plan->fits. A plan with no job (the weights alone, refused at
 * load) says to raise the memory limit. */
char *hyocr_memory_refusal(const hyocr_memplan *plan);
/* A memory refusal of the engine (one that carries its plan) gets the words
 * above as its message; any other error stays as it is. */
void  hyocr_memory_reword_error(GError *error);

G_END_DECLS
