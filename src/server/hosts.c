/* hyocr serve — the Host header, against DNS rebinding.
 *
 * A web site can point a name of its own at 127.0.0.1 once the browser has its page: the
 * page's calls to that name then reach a hyocr serve on this machine as the site's own origin,
 * so CORS never applies, and the page may read every answer (the text of any file under
 * --allowed-local-media-path included). What gives it away is the Host header, which
 * carries the site's name. While the server listens on loopback it answers only requests
 * whose Host is an IP address (no name to rebind), localhost or a name under .localhost
 * (which browsers resolve themselves, never through DNS), or a name --allowed-hosts lists (a
 * reverse proxy's, a name in /etc/hosts); the others get a 403. Listening beyond this
 * machine it answers any Host unless --allowed-hosts is given, which then holds there too.
 * ["*"] turns the check off. */
#include "server.h"
#include <glib/gi18n.h>
#include <string.h>

/* The name of a Host value: without its port and a last dot, lower-case; an IPv6 literal
 * without its brackets. */
static char *host_name(const char *value)
{
    const char *end;
    if (value[0] == '[') {
        end = strchr(value, ']');
        return end ? g_ascii_strdown(value + 1, end - value - 1) : g_ascii_strdown(value, -1);
    }
    end = strchr(value, ':');
    /* two colons: an IPv6 address without brackets, whole */
    if (end && strchr(end + 1, ':')) end = NULL;
    char *name = g_ascii_strdown(value, end ? end - value : -1);
    size_t n = strlen(name);
    if (n > 1 && name[n - 1] == '.') name[n - 1] = '\0';
    return name;
}

static bool listed(char **hosts, const char *name)
{
    for (char **h = hosts; h && *h; h++)
        if (!strcmp(*h, "*") || !g_ascii_strcasecmp(*h, name)) return true;
    return false;
}

bool hyocr_host_allowed(const hyocr_server_options *opt, bool loopback, const char *value)
{
    if (!value || (!loopback && !opt->allowed_hosts)) return true;   /* HTTP/1.0 sends none; no browser does */
    g_autofree char *name = host_name(value);
    return g_hostname_is_ip_address(name) || !strcmp(name, "localhost") || g_str_has_suffix(name, ".localhost") ||
           listed(opt->allowed_hosts, name);
}

bool hyocr_host_check(const hyocr_server_options *opt, bool loopback, SoupServerMessage *msg)
{
    const char *value = soup_message_headers_get_one(soup_server_message_get_request_headers(msg), "Host");
    if (hyocr_host_allowed(opt, loopback, value)) return true;
    g_autofree char *name = host_name(value);
    hyocr_api_error e = { 0 };
    if (loopback)
        hyocr_api_error_set(&e, 403, NULL,
                            _("the server does not answer to the host name “%s”: listening on this machine only, it "
                              "answers to localhost and IP addresses, so that no web site can reach it through a "
                              "name of its own (DNS rebinding); a name of yours (a reverse proxy's, one in "
                              "/etc/hosts) goes in --allowed-hosts"), name);
    else
        hyocr_api_error_set(&e, 403, NULL, _("the server does not answer to the host name “%s”: --allowed-hosts does "
                                             "not list it"), name);
    e.code = "host_not_allowed";
    hyocr_api_error_reply(msg, &e);
    hyocr_api_error_clear(&e);
    return false;
}
