/* hyocr — the spotting answer, `text(x1,y1),(x2,y2)` per item (spec §8.3), as text lines with
 * boxes in the model's 0…1000 scale of the page it saw. */
#pragma once
#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct {
    char *text;
    int   x1, y1, x2, y2;   /* 0…1000, x1 ≤ x2, y1 ≤ y2 */
} hyocr_spot_line;

/* Every complete item, in the model's (reading) order; an unfinished last item (still
 * streaming) is left out. Never NULL; the array frees its items. */
GPtrArray *hyocr_spot_parse(const char *text);

/* Adds lines to b as one array value, [{"text": …, "box": [x1, y1, x2, y2]}, …]: the shape the
 * app saves and copies and the server's /web/api/spotting answers. */
void hyocr_spot_lines_add_json(JsonBuilder *b, const GPtrArray *lines);

G_END_DECLS
