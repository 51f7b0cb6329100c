/* hyocr serve — cross-origin requests, as vLLM answers them (FastAPI's CORSMiddleware with
 * --allowed-origins, --allowed-methods, --allowed-headers, --allow-credentials; every origin,
 * method and header by default): a web page served from elsewhere may call the API from the
 * browser, as it may call vLLM. The API's routes only (/v1/…, /health, /metrics): the web
 * page and its own JSON stay this origin's.
 *
 * A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered before the
 * key is checked, as browsers send none with it: 200 with what is allowed, or 400 naming what
 * is not. Any other request from an allowed origin gets Access-Control-Allow-Origin on its
 * answer, whatever its status; one from another origin is served without it (the browser
 * then keeps the answer from the page). */
#include "server.h"
#include <string.h>

/* What "*" allows of methods, as Starlette spells it. */
#define ALL_METHODS "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"
#define PREFLIGHT_MAX_AGE "600"

static bool has(char **list, const char *v)
{
    for (char **p = list; p && *p; p++)
        if (!strcmp(*p, v)) return true;
    return false;
}

static bool any(char **list)
{
    return has(list, "*");
}

bool hyocr_cors_applies(const char *path)
{
    return g_str_has_prefix(path, "/v1/") || !strcmp(path, "/health") || !strcmp(path, "/metrics");
}

static bool origin_allowed(const hyocr_server_options *opt, const char *origin)
{
    return any(opt->allowed_origins) || has(opt->allowed_origins, origin);
}

/* Access-Control-Allow-Origin (and -Credentials): "*" where every origin is allowed and no
 * credentials are, else the origin itself, which makes the answer vary by it. */
static void allow_origin(const hyocr_server_options *opt, SoupMessageHeaders *h, const char *origin)
{
    if (any(opt->allowed_origins) && !opt->allow_credentials) {
        soup_message_headers_replace(h, "Access-Control-Allow-Origin", "*");
    } else {
        soup_message_headers_replace(h, "Access-Control-Allow-Origin", origin);
        soup_message_headers_append(h, "Vary", "Origin");
    }
    if (opt->allow_credentials) soup_message_headers_replace(h, "Access-Control-Allow-Credentials", "true");
}

/* Every header the preflight names, each allowed (case-insensitively), or "*". */
static bool headers_allowed(const hyocr_server_options *opt, const char *requested)
{
    if (!requested || any(opt->allowed_headers)) return true;
    g_auto(GStrv) names = g_strsplit(requested, ",", -1);
    for (char **n = names; *n; n++) {
        g_autofree char *name = g_ascii_strdown(g_strstrip(*n), -1);
        bool ok = !*name;
        for (char **a = opt->allowed_headers; a && *a && !ok; a++) ok = !g_ascii_strcasecmp(*a, name);
        /* the CORS-safelisted request headers need no allowing */
        ok |= !strcmp(name, "accept") || !strcmp(name, "accept-language") || !strcmp(name, "content-language") ||
              !strcmp(name, "content-type");
        if (!ok) return false;
    }
    return true;
}

bool hyocr_cors_preflight(const hyocr_server_options *opt, SoupServerMessage *msg)
{
    SoupMessageHeaders *req = soup_server_message_get_request_headers(msg);
    const char *origin = soup_message_headers_get_one(req, "Origin");
    const char *method = soup_message_headers_get_one(req, "Access-Control-Request-Method");
    if (strcmp(soup_server_message_get_method(msg), "OPTIONS") != 0 || !origin || !method) return false;
    const char *wanted = soup_message_headers_get_one(req, "Access-Control-Request-Headers");
    GString *refused = g_string_new(NULL);
    if (!origin_allowed(opt, origin)) g_string_append(refused, "Disallowed CORS origin");
    if (!any(opt->allowed_methods) && !has(opt->allowed_methods, method))
        g_string_append_printf(refused, "%sDisallowed CORS method", refused->len ? ", " : "");
    if (!headers_allowed(opt, wanted))
        g_string_append_printf(refused, "%sDisallowed CORS headers", refused->len ? ", " : "");

    SoupMessageHeaders *h = soup_server_message_get_response_headers(msg);
    if (origin_allowed(opt, origin)) allow_origin(opt, h, origin);
    if (any(opt->allowed_methods)) {
        soup_message_headers_replace(h, "Access-Control-Allow-Methods", ALL_METHODS);
    } else {
        g_autofree char *methods = g_strjoinv(", ", opt->allowed_methods);
        soup_message_headers_replace(h, "Access-Control-Allow-Methods", methods);
    }
    if (any(opt->allowed_headers) && wanted) soup_message_headers_replace(h, "Access-Control-Allow-Headers", wanted);
    else if (!any(opt->allowed_headers) && opt->allowed_headers && opt->allowed_headers[0]) {
        g_autofree char *headers = g_strjoinv(", ", opt->allowed_headers);
        soup_message_headers_replace(h, "Access-Control-Allow-Headers", headers);
    }
    soup_message_headers_replace(h, "Access-Control-Max-Age", PREFLIGHT_MAX_AGE);
    guint status = refused->len ? SOUP_STATUS_BAD_REQUEST : SOUP_STATUS_OK;
    if (!refused->len) g_string_append(refused, "OK");
    soup_server_message_set_status(msg, status, NULL);
    gsize len = refused->len;
    soup_server_message_set_response(msg, "text/plain; charset=utf-8", SOUP_MEMORY_TAKE,
                                     g_string_free(refused, FALSE), len);
    return true;
}

void hyocr_cors_answer(const hyocr_server_options *opt, SoupServerMessage *msg)
{
    const char *origin = soup_message_headers_get_one(soup_server_message_get_request_headers(msg), "Origin");
    if (origin && origin_allowed(opt, origin)) allow_origin(opt, soup_server_message_get_response_headers(msg), origin);
}
