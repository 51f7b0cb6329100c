/* Fuzzes the app's reading of a spotting answer (hyocr_spotting_parse) and its JSON
 * export, on any bytes. */
#include "fuzz.h"
#include "hyocr-spotting.h"
#include "json.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *text = g_strndup((const char *)data, size);
    g_autoptr(GPtrArray) lines = hyocr_spotting_parse(text);
    for (guint i = 0; i < lines->len; i++) {
        const HyocrSpotLine *l = lines->pdata[i];
        fuzz_require(g_utf8_validate(l->text, -1, NULL), "item %u is not UTF-8", i);
        fuzz_require(l->x1 >= 0 && l->x1 <= l->x2 && l->x2 <= 1000 && l->y1 >= 0 && l->y1 <= l->y2 && l->y2 <= 1000,
                     "item %u box (%d,%d),(%d,%d)", i, l->x1, l->y1, l->x2, l->y2);
    }
    g_autofree char *json = hyocr_spotting_to_json(lines);
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) back = hyocr_json_parse(json, strlen(json), HYOCR_JSON_MAX_DEPTH, NULL, &err);
    fuzz_require(back && JSON_NODE_HOLDS_ARRAY(back) && json_array_get_length(json_node_get_array(back)) == lines->len,
                 "the export does not read back: %s", err ? err->message : json);
    return 0;
}
