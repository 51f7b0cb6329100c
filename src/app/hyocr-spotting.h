/* hyocr-gtk — reads the spotting answer, `text(x1,y1),(x2,y2)` per item
 * (spec §8.3), into text lines with boxes normalised to 0…1000. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    char *text;
    int   x1, y1, x2, y2;   /* 0…1000, x1 ≤ x2, y1 ≤ y2 */
} HyocrSpotLine;

/* Every complete item in the text, in order; an unfinished last item (still
 * streaming) is left out. Bytes that are not UTF-8 become U+FFFD. Never NULL. */
GPtrArray *hyocr_spotting_parse(const char *text);

/* [{"text": …, "box": [x1, y1, x2, y2]}, …] */
char *hyocr_spotting_to_json(const GPtrArray *lines);

G_END_DECLS
