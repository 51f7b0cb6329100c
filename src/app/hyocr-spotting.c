/* hyocr-gtk — spotting lines as JSON. */
#include "hyocr-spotting.h"
#include "json.h"
#include <json-glib/json-glib.h>

char *hyocr_spotting_to_json(const GPtrArray *lines)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_array(b);
    for (guint i = 0; i < lines->len; i++) {
        const HyocrSpotLine *l = g_ptr_array_index(lines, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "text");
        json_builder_add_string_value(b, l->text);
        json_builder_set_member_name(b, "box");
        json_builder_begin_array(b);
        json_builder_add_int_value(b, l->x1);
        json_builder_add_int_value(b, l->y1);
        json_builder_add_int_value(b, l->x2);
        json_builder_add_int_value(b, l->y2);
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return hyocr_json_to_data(root, true);
}
