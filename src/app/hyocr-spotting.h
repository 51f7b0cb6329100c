/* hyocr-gtk — the spotting answer, `text(x1,y1),(x2,y2)` per item (spec §8.3), as text lines
 * with boxes normalised to 0…1000: the engine's parser (spotting.h, also the exports'), and the
 * JSON the app copies and saves of it. */
#pragma once
#include "spotting.h"
#include <glib.h>

G_BEGIN_DECLS

typedef hyocr_spot_line HyocrSpotLine;

/* Every complete item in the text, in order; an unfinished last item (still
 * streaming) is left out. Bytes that are not UTF-8 become U+FFFD. Never NULL. */
static inline GPtrArray *hyocr_spotting_parse(const char *text)
{
    return hyocr_spot_parse(text);
}

/* [{"text": …, "box": [x1, y1, x2, y2]}, …] */
char *hyocr_spotting_to_json(const GPtrArray *lines);

G_END_DECLS
