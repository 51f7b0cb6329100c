/* hyocr — the desktop entry's MimeType, written from the engine's list of readable
 * formats (document.h) at build time: "Open With" offers what this build reads,
 * the file chooser's filter and the CLI's folder scan follow the same list.
 *
 *     desktop-mime-types TEMPLATE OUTPUT   (TEMPLATE holds @MIME_TYPES@) */
#include "document.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TEMPLATE OUTPUT\n", argv[0]);
        return 2;
    }
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    if (!g_file_get_contents(argv[1], &text, NULL, &error)) {
        fprintf(stderr, "%s\n", error->message);
        return 1;
    }
    const char *at = strstr(text, "@MIME_TYPES@");
    if (!at) {
        fprintf(stderr, "%s: no @MIME_TYPES@\n", argv[1]);
        return 1;
    }
    g_autoptr(GString) out = g_string_new_len(text, at - text);
    size_t n;
    const hyocr_format_info *formats = hyocr_formats(&n);
    for (size_t i = 0; i < n; i++)
        for (const char *const *m = formats[i].mime_types; *m; m++) g_string_append_printf(out, "%s;", *m);
    g_string_append(out, at + strlen("@MIME_TYPES@"));
    if (!g_file_set_contents(argv[2], out->str, (gssize)out->len, &error)) {
        fprintf(stderr, "%s\n", error->message);
        return 1;
    }
    return 0;
}
