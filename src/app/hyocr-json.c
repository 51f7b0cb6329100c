/* hyocr-gtk — JSON answers. */
#include "hyocr-json.h"
#include "json.h"
#include <json-glib/json-glib.h>
#include <string.h>

/* The model often wraps JSON in a Markdown code fence; the fence is not part of
 * the value the user wants to copy. */
static char *strip_fence(const char *text)
{
    g_autofree char *s = g_strstrip(g_strdup(text));
    if (!g_str_has_prefix(s, "```")) return g_steal_pointer(&s);
    char *body = strchr(s, '\n');
    if (!body) return g_strdup("");
    char *end = g_strrstr(body, "```");
    if (end) *end = '\0';
    return g_strstrip(g_strdup(body + 1));
}

char *hyocr_json_prettify(const char *text)
{
    g_autofree char *body = strip_fence(text ? text : "");
    if (!*body) return NULL;
    g_autoptr(JsonNode) root = hyocr_json_parse(body, strlen(body), HYOCR_JSON_MAX_DEPTH, NULL, NULL);
    if (!root) return NULL;
    return hyocr_json_to_data(root, true);
}
