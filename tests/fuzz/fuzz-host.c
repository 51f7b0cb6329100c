/* Fuzzes hyocr serve's Host rule (src/server/hosts.c): any Host header value a client sends,
 * against DNS rebinding. Never a crash, and the rule's invariants hold: beyond loopback with no
 * --allowed-hosts, or with ["*"], everything is answered; a list only adds names; neither case
 * nor a port changes the answer. */
#include "fuzz.h"
#include "server.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static bool allowed(char **list, bool loopback, const char *value)
{
    hyocr_server_options opt = { .allowed_hosts = list };
    return hyocr_host_allowed(&opt, loopback, value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *value = g_strndup((const char *)data, size);   /* a header value ends at a NUL */
    char *any[] = { "*", NULL }, *some[] = { "ocr.test", "Proxy.Example", NULL };
    fuzz_require(allowed(NULL, false, value), "refused beyond loopback without --allowed-hosts: “%s”", value);
    fuzz_require(allowed(any, true, value) && allowed(any, false, value), "refused with [\"*\"]: “%s”", value);
    bool plain = allowed(NULL, true, value), listed = allowed(some, true, value);
    fuzz_require(!plain || listed, "a list took away “%s”", value);
    fuzz_require(allowed(some, false, value) == listed, "the list answers “%s” differently beyond loopback", value);
    g_autofree char *upper = g_ascii_strup(value, -1);
    fuzz_require(allowed(NULL, true, upper) == plain && allowed(some, true, upper) == listed,
                 "the case of “%s” changed the answer", value);
    /* a name (not an address with colons, not bracketed) with a port is the name */
    if (!strchr(value, ':') && value[0] != '[') {
        g_autofree char *port = g_strconcat(value, ":8000", NULL);
        fuzz_require(allowed(NULL, true, port) == plain && allowed(some, true, port) == listed,
                     "a port changed the answer for “%s”", value);
    }
    return 0;
}
