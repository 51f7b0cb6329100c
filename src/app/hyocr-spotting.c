/* hyocr-gtk — spotting lines as JSON. */
#include "hyocr-spotting.h"
#include "json.h"
#include <json-glib/json-glib.h>

char *hyocr_spotting_to_json(const GPtrArray *lines)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    hyocr_spot_lines_add_json(b, lines);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return hyocr_json_to_data(root, true);
}
