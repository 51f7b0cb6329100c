/* Fuzzes the one door every JSON text goes through (hyocr_json_parse, the depth and
 * trailing-data pre-scan, then json-glib) and the app's JSON answer view. What it
 * accepts must print (hyocr_json_to_data, what we write) and read back as the same value. */
#include "fuzz.h"
#include "json.h"
#include "hyocr-json.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) root = hyocr_json_parse((const char *)data, size, HYOCR_JSON_MAX_DEPTH, "in.json", &err);
    fuzz_require(!root == !!err, "a root and an error, or neither");
    if (err)
        fuzz_require(err->domain != 0 && g_str_has_prefix(err->message, "in.json"), "unnamed error: %s", err->message);
    if (root) {
        g_autofree char *text = hyocr_json_to_data(root, false);
        g_autoptr(GError) again_err = NULL;
        g_autoptr(JsonNode) again = hyocr_json_parse(text, strlen(text), HYOCR_JSON_MAX_DEPTH, NULL, &again_err);
        fuzz_require(again && json_node_equal(root, again), "printed JSON does not read back: %s",
                     again_err ? again_err->message : text);
    }
    /* the model's answer as the app shows it: a C string, maybe in a code fence */
    g_autofree char *answer = g_strndup((const char *)data, size);
    g_autofree char *pretty = hyocr_json_prettify(answer);
    (void)pretty;
    return 0;
}
