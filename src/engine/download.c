/* hyocr — the Hub client (download.h) on libsoup 3 (sync API, one session per plan/run call so
 * the session lives on the calling thread, as libsoup requires).
 *
 * Hub protocol (huggingface_hub's hf_api.py / file_download.py):
 *   GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true
 *       → {"sha": commit, "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256", "size"}}]}
 *   GET {endpoint}/api/models/{repo}/tree/{commit}/{folder}?recursive=true   (fallback when a
 *       mirror ignores blobs=true; paginated with Link: <…>; rel="next")
 *       → [{"type": "file", "path", "size", "oid", "lfs": {"oid", "size"}}]
 *   GET {endpoint}/{repo}/resolve/{commit}/{path}   (LFS files redirect to a CDN)
 * Revisions and paths are percent-encoded; errors carry X-Error-Code (RepoNotFound,
 * RevisionNotFound, EntryNotFound, GatedRepo). Everything is fetched at the resolved commit
 * so a branch moving mid-download cannot mix two revisions. */
#define _GNU_SOURCE
#include "download.h"
#include "json.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "i18n.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define INCOMPLETE     ".incomplete"
#define BUF_SIZE       (256 * 1024)
#define MAX_JSON_BYTES (64 * 1024 * 1024)
#define MAX_REDIRECTS  10

typedef enum { NET_OK, NET_RETRY, NET_FAIL } net_result;

typedef struct {
    char *content_sha256;   /* what we computed, for the manifest */
    bool  in_state;         /* the partial folder's state lists this file with the same identity */
    bool  state_verified;
} file_extra;

struct hyocr_download {
    char *endpoint, *host, *repo, *revision, *subfolder, *dest_dir, *partial_dir, *token;
    char *version_name;
    GCancellable *cancellable;
    hyocr_download_progress_fn on_progress;
    void *user_data;
    int max_retries;
    double retry_delay, max_wait;
    unsigned timeout;
    gint64 progress_us;

    bool planned;
    char *commit;
    GStringChunk *strings;
    GArray *files;          /* hyocr_download_file */
    GArray *extra;          /* file_extra, parallel to files */
    hyocr_download_summary summary;
    hyocr_download_failure failure;
    char *failure_file;

    SoupSession *session;   /* only during plan/run */
    int lock_fd;            /* the partial folder, flock()ed during run */
    int64_t fetched;
    double rate;
    gint64 rate_t;          /* µs of the last rate sample */
    int64_t rate_bytes;
    gint64 emit_t;
};

/* ------------------------------------------------------------------ errors */

static gboolean failv(hyocr_download *dl, GError **error, hyocr_download_failure_kind kind, int code,
                      const char *file, const char *fmt, va_list ap)
{
    dl->failure.kind = kind;
    g_free(dl->failure_file);
    dl->failure_file = g_strdup(file);
    dl->failure.file = dl->failure_file;
    if (code < 0)
        code = kind == HYOCR_DOWNLOAD_FAILURE_CANCELLED ? HYOCR_ERROR_CANCELLED
             : kind == HYOCR_DOWNLOAD_FAILURE_CHECKSUM ? HYOCR_ERROR_CHECKPOINT
             : kind == HYOCR_DOWNLOAD_FAILURE_INVALID  ? HYOCR_ERROR_INVALID_ARGUMENT
             : HYOCR_ERROR_IO;
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    g_set_error_literal(error, HYOCR_ERROR, code, msg);
    return FALSE;
}

static gboolean failf(hyocr_download *dl, GError **error, hyocr_download_failure_kind kind, const char *file,
                      const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static gboolean failf(hyocr_download *dl, GError **error, hyocr_download_failure_kind kind, const char *file,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(dl, error, kind, -1, file, fmt, ap);
    va_end(ap);
    return FALSE;
}

static gboolean fail_parse(hyocr_download *dl, GError **error, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean fail_parse(hyocr_download *dl, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(dl, error, HYOCR_DOWNLOAD_FAILURE_SERVER, HYOCR_ERROR_PARSE, NULL, fmt, ap);
    va_end(ap);
    return FALSE;
}

static gboolean fail_cancelled(hyocr_download *dl, GError **error)
{
    if (!g_file_test(dl->partial_dir, G_FILE_TEST_IS_DIR))
        return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_CANCELLED, NULL, _("download cancelled"));
    return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_CANCELLED, NULL,
                 _("download cancelled; what was fetched is kept in %s and the next download resumes it"),
                 dl->partial_dir);
}

static char *fmt_size(int64_t bytes) { return g_format_size((guint64)MAX(bytes, 0)); }

/* ------------------------------------------------------------------ params */

void hyocr_download_params_init(hyocr_download_params *p)
{
    memset(p, 0, sizeof *p);
    p->version = HYOCR_MODEL_VERSION_1_5;
    p->max_retries = 5;
    p->retry_delay = 1.0;
    p->max_wait = 120.0;
    p->timeout = 30;
    p->progress_interval = 0.1;
}

const char *hyocr_download_default_endpoint(void)
{
    const char *env = g_getenv("HF_ENDPOINT");
    return env && *env ? env : HYOCR_DOWNLOAD_DEFAULT_ENDPOINT;
}

/* Spaces and trailing slashes are no part of the address. */
static char *trim_endpoint(const char *in)
{
    char *e = g_strstrip(g_strdup(in));
    while (*e && e[strlen(e) - 1] == '/') e[strlen(e) - 1] = '\0';
    return e;
}

char *hyocr_download_endpoint_host(const char *endpoint)
{
    g_autofree char *e = endpoint ? trim_endpoint(endpoint) : NULL;
    g_autoptr(GUri) uri = e ? g_uri_parse(e, G_URI_FLAGS_NONE, NULL) : NULL;
    const char *scheme = uri ? g_uri_get_scheme(uri) : NULL;
    if (!scheme || (g_ascii_strcasecmp(scheme, "http") && g_ascii_strcasecmp(scheme, "https")) ||
        !g_uri_get_host(uri) || !*g_uri_get_host(uri))
        return NULL;
    return g_strdup(g_uri_get_host(uri));
}

static char *normalize_endpoint(const char *in, char **host, GError **error)
{
    *host = hyocr_download_endpoint_host(in);
    if (!*host) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("endpoint “%s” is not an http(s) URL (example: %s)"), in, HYOCR_DOWNLOAD_DEFAULT_ENDPOINT);
        return NULL;
    }
    return trim_endpoint(in);
}

static gboolean valid_repo(const char *repo)
{
    const char *slash = strchr(repo, '/');
    if (!slash || slash == repo || !slash[1] || strchr(slash + 1, '/')) return FALSE;
    for (const char *p = repo; *p; p++)
        if (!g_ascii_isalnum(*p) && !strchr("-_./", *p)) return FALSE;
    return strstr(repo, "..") == NULL;
}

static gboolean set_text(char **dst, const char *value, const char *fallback)
{
    *dst = g_strdup(value && *value ? value : fallback);
    return TRUE;
}

hyocr_download *hyocr_download_new(const hyocr_download_params *p, GError **error)
{
    g_autoptr(hyocr_download) dl = g_new0(hyocr_download, 1);
    const char *endpoint = p->endpoint && *p->endpoint ? p->endpoint : hyocr_download_default_endpoint();
    dl->endpoint = normalize_endpoint(endpoint, &dl->host, error);
    if (!dl->endpoint) return NULL;
    set_text(&dl->repo, p->repo, HYOCR_DOWNLOAD_DEFAULT_REPO);
    if (!valid_repo(dl->repo)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("repository “%s” is not of the form owner/name"), dl->repo);
        return NULL;
    }
    set_text(&dl->revision, p->revision, "main");
    if (p->version != HYOCR_MODEL_VERSION_1_0 && p->version != HYOCR_MODEL_VERSION_1_5) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("unknown model version %d"), (int)p->version);
        return NULL;
    }
    dl->version_name = g_strdup(p->version == HYOCR_MODEL_VERSION_1_0 ? "1.0" : "1.5");
    dl->subfolder = g_strdup(p->subfolder ? p->subfolder : p->version == HYOCR_MODEL_VERSION_1_0 ? "v1.0" : "");
    g_strdelimit(dl->subfolder, "\\", '/');
    while (*dl->subfolder && dl->subfolder[strlen(dl->subfolder) - 1] == '/')
        dl->subfolder[strlen(dl->subfolder) - 1] = '\0';
    if (dl->subfolder[0] == '/' || strstr(dl->subfolder, "..")) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("subfolder “%s” must be a relative path inside the repository"), dl->subfolder);
        return NULL;
    }
    dl->dest_dir = p->dest_dir && *p->dest_dir ? g_canonicalize_filename(p->dest_dir, NULL)
                                               : hyocr_models_dest(NULL, p->version);
    if (!strcmp(dl->dest_dir, "/")) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("the model folder cannot be /"));
        return NULL;
    }
    dl->partial_dir = g_strconcat(dl->dest_dir, ".partial", NULL);
    const char *env_token = g_getenv("HF_TOKEN");
    dl->token = g_strdup(p->token && *p->token ? p->token : env_token && *env_token ? env_token : NULL);
    dl->cancellable = p->cancellable ? g_object_ref(p->cancellable) : g_cancellable_new();
    dl->on_progress = p->on_progress;
    dl->user_data = p->user_data;
    dl->max_retries = MAX(p->max_retries, 0);
    dl->retry_delay = p->retry_delay > 0 ? p->retry_delay : 1.0;
    dl->max_wait = p->max_wait > 0 ? p->max_wait : 120.0;
    dl->timeout = p->timeout ? p->timeout : 30;
    dl->progress_us = (gint64)(MAX(p->progress_interval, 0.0) * 1e6);
    dl->lock_fd = -1;
    dl->strings = g_string_chunk_new(4096);
    dl->files = g_array_new(FALSE, TRUE, sizeof(hyocr_download_file));
    dl->extra = g_array_new(FALSE, TRUE, sizeof(file_extra));
    return g_steal_pointer(&dl);
}

void hyocr_download_free(hyocr_download *dl)
{
    if (!dl) return;
    g_free(dl->endpoint);
    g_free(dl->host);
    g_free(dl->repo);
    g_free(dl->revision);
    g_free(dl->subfolder);
    g_free(dl->dest_dir);
    g_free(dl->partial_dir);
    g_free(dl->token);
    g_free(dl->version_name);
    g_free(dl->commit);
    g_free(dl->failure_file);
    g_clear_object(&dl->cancellable);
    if (dl->extra)
        for (guint i = 0; i < dl->extra->len; i++) g_free(g_array_index(dl->extra, file_extra, i).content_sha256);
    if (dl->extra) g_array_free(dl->extra, TRUE);
    if (dl->files) g_array_free(dl->files, TRUE);
    if (dl->strings) g_string_chunk_free(dl->strings);
    g_free(dl);
}

void hyocr_download_cancel(hyocr_download *dl) { g_cancellable_cancel(dl->cancellable); }

const hyocr_download_failure *hyocr_download_get_failure(const hyocr_download *dl) { return &dl->failure; }

/* ------------------------------------------------------------------ progress */

static int64_t bytes_on_disk(const hyocr_download *dl)
{
    int64_t done = 0;
    for (guint i = 0; i < dl->files->len; i++) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        done += f->done ? f->size : f->have;
    }
    return done;
}

/* Exponential moving average over ~3 s, so the ETA neither jumps nor lags minutes. */
static void update_rate(hyocr_download *dl, gint64 now)
{
    if (!dl->rate_t) {
        dl->rate_t = now;
        dl->rate_bytes = dl->fetched;
        return;
    }
    double dt = (double)(now - dl->rate_t) / 1e6;
    if (dt < 0.25) return;
    double inst = (double)(dl->fetched - dl->rate_bytes) / dt;
    double a = 1.0 - exp(-dt / 3.0);
    dl->rate = dl->rate > 0 ? dl->rate + a * (inst - dl->rate) : inst;
    dl->rate_t = now;
    dl->rate_bytes = dl->fetched;
}

static void emit(hyocr_download *dl, hyocr_download_phase phase, int index, const char *message)
{
    gint64 now = g_get_monotonic_time();
    if (phase == HYOCR_DOWNLOAD_PHASE_FETCHING) {
        update_rate(dl, now);
        if (now - dl->emit_t < dl->progress_us) return;
    }
    dl->emit_t = now;
    if (!dl->on_progress) return;
    hyocr_download_progress p = {
        .phase = phase, .file_index = index, .n_files = (int)dl->files->len,
        .total = dl->summary.total_bytes, .fetched = dl->fetched, .rate = dl->rate, .eta = -1, .message = message,
    };
    if (index >= 0 && index < (int)dl->files->len) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, index);
        p.file = f->name;
        p.file_done = f->done ? f->size : f->have;
        p.file_total = f->size;
    }
    p.done = bytes_on_disk(dl);
    if (dl->rate > 0) p.eta = (double)(p.total - p.done) / dl->rate;
    dl->on_progress(&p, dl->user_data);
}

/* ------------------------------------------------------------------ HTTP */

static SoupSession *session_new(const hyocr_download *dl)
{
    SoupSession *s = soup_session_new_with_options("timeout", dl->timeout, "idle-timeout", 60u,
                                                   "user-agent", "hyocr/" HYOCR_VERSION " ", NULL);
    /* Byte offsets must be those of the file itself, never of a compressed transfer. */
    soup_session_remove_feature_by_type(s, SOUP_TYPE_CONTENT_DECODER);
    return s;
}

static char *uri_host(const char *url)
{
    g_autoptr(GUri) u = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);
    return g_strdup(u && g_uri_get_host(u) ? g_uri_get_host(u) : "?");
}

static net_result net_error(hyocr_download *dl, const GError *err, const char *url, const char *what, GError **error)
{
    if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        fail_cancelled(dl, error);
        return NET_FAIL;
    }
    g_autofree char *host = uri_host(url);
    dl->failure.http_status = 0;
    if (err->domain == G_TLS_ERROR) {
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NETWORK, what,
              _("secure connection to %s failed while fetching %s: %s — check the system clock and any proxy"),
              host, what, err->message);
        return NET_FAIL;
    }
    failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NETWORK, what,
          _("could not reach %s (fetching %s): %s"),
          host, what, err->message);
    /* A name that does not resolve will not resolve in a second either. */
    return err->domain == G_RESOLVER_ERROR ? NET_FAIL : NET_RETRY;
}

static double parse_retry_after(SoupMessageHeaders *h)
{
    const char *v = soup_message_headers_get_one(h, "Retry-After");
    if (!v) return 0;
    char *end;
    double s = g_ascii_strtod(v, &end);
    if (end != v && s >= 0) return s;
    g_autoptr(GDateTime) when = soup_date_time_new_from_http_string(v);
    if (!when) return 0;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    return MAX(0.0, (double)g_date_time_difference(when, now) / 1e6);
}

static net_result http_status_error(hyocr_download *dl, SoupMessage *msg, const char *url, const char *what,
                                    double *retry_after, GError **error)
{
    guint st = soup_message_get_status(msg);
    SoupMessageHeaders *h = soup_message_get_response_headers(msg);
    const char *code = soup_message_headers_get_one(h, "X-Error-Code");
    const char *emsg = soup_message_headers_get_one(h, "X-Error-Message");
    g_autofree char *host = uri_host(url);
    /* Translators: HTTP status code, reason, host, then the server's error code in parentheses, if any */
    g_autofree char *detail = g_strdup_printf(_("HTTP %u %s from %s%s%s%s"), st, soup_message_get_reason_phrase(msg),
                                              host, code || emsg ? " (" : "", code ? code : emsg ? emsg : "",
                                              code || emsg ? ")" : "");
    dl->failure.http_status = (int)st;
    if (st == 401 || st == 403 || (code && !strcmp(code, "GatedRepo"))) {
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_ACCESS, what,
              _("access to %s denied: %s — %s may be gated: accept Tencent's licence on its model page and set "
                "HF_TOKEN to a token of that account (the licence does not apply in the EU, the UK or South Korea)"),
              what, detail, dl->repo);
        return NET_FAIL;
    }
    if (st == 404) {
        const char *why = !code ? _("not found")
                        : !strcmp(code, "RevisionNotFound") ? _("that revision does not exist")
                        : !strcmp(code, "RepoNotFound") ? _("that repository does not exist")
                        : !strcmp(code, "EntryNotFound") ? _("that file is not in this revision") : _("not found");
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NOT_FOUND, what,
              _("%s: %s, %s"), what, why, detail);
        return NET_FAIL;
    }
    if (st == 429) {
        *retry_after = parse_retry_after(h);
        dl->failure.retry_after = *retry_after;
        g_autofree char *wait = *retry_after > 0 ? g_strdup_printf(_("; the server asks to wait %.0f s"), *retry_after)
                                                 : g_strdup("");
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED, what,
              _("rate limited while fetching %s: %s%s — wait and run the download again (it resumes)"), what, detail,
              wait);
        return NET_RETRY;
    }
    failf(dl, error, HYOCR_DOWNLOAD_FAILURE_SERVER, what, _("fetching %s failed: %s"), what, detail);
    return st >= 500 ? NET_RETRY : NET_FAIL;
}

static bool same_host(const char *url, const char *host)
{
    g_autofree char *h = uri_host(url);
    return g_ascii_strcasecmp(h, host) == 0;
}

/* GET url (Range from `from` when > 0), following redirects by hand so that the token is
 * only ever sent to the endpoint's own host, never to the CDN it redirects to. On NET_OK
 * the message's status is 2xx or 416 and *body is open. */
static net_result http_open(hyocr_download *dl, const char *url, int64_t from, const char *what,
                            SoupMessage **out_msg, GInputStream **body, double *retry_after, GError **error)
{
    g_autofree char *cur = g_strdup(url);
    *retry_after = 0;
    for (int hop = 0; hop <= MAX_REDIRECTS; hop++) {
        g_autoptr(SoupMessage) msg = soup_message_new("GET", cur);
        if (!msg) {
            failf(dl, error, HYOCR_DOWNLOAD_FAILURE_SERVER, what, _("cannot fetch %s: bad URL %s"), what, cur);
            return NET_FAIL;
        }
        soup_message_set_flags(msg, SOUP_MESSAGE_NO_REDIRECT);
        SoupMessageHeaders *h = soup_message_get_request_headers(msg);
        soup_message_headers_replace(h, "Accept-Encoding", "identity");
        if (from > 0) soup_message_headers_set_range(h, from, -1);
        if (dl->token && same_host(cur, dl->host)) {
            g_autofree char *auth = g_strconcat("Bearer ", dl->token, NULL);
            soup_message_headers_replace(h, "Authorization", auth);
        }
        g_autoptr(GError) err = NULL;
        GInputStream *in = soup_session_send(dl->session, msg, dl->cancellable, &err);
        if (!in) return net_error(dl, err, cur, what, error);
        guint st = soup_message_get_status(msg);
        if (st == 301 || st == 302 || st == 303 || st == 307 || st == 308) {
            const char *loc = soup_message_headers_get_one(soup_message_get_response_headers(msg), "Location");
            g_input_stream_close(in, NULL, NULL);
            g_object_unref(in);
            g_autofree char *next = loc ? g_uri_resolve_relative(cur, loc, G_URI_FLAGS_NONE, NULL) : NULL;
            if (!next) {
                failf(dl, error, HYOCR_DOWNLOAD_FAILURE_SERVER, what,
                      _("fetching %s: redirect without a usable Location from %s"), what, cur);
                return NET_FAIL;
            }
            g_free(cur);
            cur = g_steal_pointer(&next);
            continue;
        }
        if (SOUP_STATUS_IS_SUCCESSFUL(st) || st == SOUP_STATUS_REQUESTED_RANGE_NOT_SATISFIABLE) {
            *out_msg = g_steal_pointer(&msg);
            *body = in;
            return NET_OK;
        }
        g_input_stream_close(in, NULL, NULL);
        g_object_unref(in);
        return http_status_error(dl, msg, cur, what, retry_after, error);
    }
    failf(dl, error, HYOCR_DOWNLOAD_FAILURE_SERVER, what, _("fetching %s: more than %d redirects"), what,
          MAX_REDIRECTS);
    return NET_FAIL;
}

static gboolean sleep_cancellable(hyocr_download *dl, double seconds)
{
    gint64 until = g_get_monotonic_time() + (gint64)(seconds * 1e6);
    while (g_get_monotonic_time() < until) {
        if (g_cancellable_is_cancelled(dl->cancellable)) return FALSE;
        g_usleep(20000);
    }
    return !g_cancellable_is_cancelled(dl->cancellable);
}

/* Decides whether to try again after *why. Returns TRUE after waiting (why cleared);
 * FALSE with *error set (why moved there, or a cancellation). */
static gboolean retry_wait(hyocr_download *dl, int attempt, double retry_after, int index, GError **why,
                           GError **error)
{
    if (attempt >= dl->max_retries || retry_after > dl->max_wait) {
        g_propagate_error(error, g_steal_pointer(why));
        return FALSE;
    }
    double delay = retry_after > 0 ? retry_after : MIN(dl->retry_delay * (double)(1 << MIN(attempt, 16)), dl->max_wait);
    /* Translators: the reason, then seconds to wait, the attempt and the attempts allowed */
    g_autofree char *msg = g_strdup_printf(_("%s; retrying in %.0f s (%d of %d)"), (*why)->message, ceil(delay),
                                           attempt + 1, dl->max_retries);
    g_clear_error(why);
    emit(dl, HYOCR_DOWNLOAD_PHASE_WAITING, index, msg);
    if (!sleep_cancellable(dl, delay)) return fail_cancelled(dl, error);
    dl->rate_t = 0;   /* the pause is not part of the transfer rate */
    dl->failure = (hyocr_download_failure){ 0 };
    return TRUE;
}

static GBytes *read_all(GInputStream *in, hyocr_download *dl, GError **error)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[16384];
    for (;;) {
        gssize n = g_input_stream_read(in, chunk, sizeof chunk, dl->cancellable, error);
        if (n < 0) return NULL;
        if (n == 0) break;
        if (buf->len + (gsize)n > MAX_JSON_BYTES) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE, _("answer larger than %d MiB"),
                        MAX_JSON_BYTES >> 20);
            return NULL;
        }
        g_byte_array_append(buf, chunk, (guint)n);
    }
    return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}

/* A whole (JSON) answer, with retries; *next_link gets a Link rel="next" URL if any. */
static GBytes *http_get_all(hyocr_download *dl, const char *url, const char *what, char **next_link, GError **error)
{
    for (int attempt = 0;; attempt++) {
        g_autoptr(SoupMessage) msg = NULL;
        g_autoptr(GInputStream) body = NULL;
        g_autoptr(GError) why = NULL;
        double ra = 0;
        net_result r = http_open(dl, url, 0, what, &msg, &body, &ra, &why);
        if (r == NET_OK && soup_message_get_status(msg) != SOUP_STATUS_OK) {
            failf(dl, &why, HYOCR_DOWNLOAD_FAILURE_SERVER, what, _("fetching %s: unexpected HTTP %u"),
                  what, soup_message_get_status(msg));
            r = NET_FAIL;
        }
        if (r == NET_OK) {
            g_autoptr(GError) rerr = NULL;
            GBytes *bytes = read_all(body, dl, &rerr);
            if (bytes) {
                if (next_link) {
                    const char *link = soup_message_headers_get_list(soup_message_get_response_headers(msg), "Link");
                    *next_link = NULL;
                    if (link) {
                        const char *rel = strstr(link, "rel=\"next\"");
                        const char *lt = rel ? g_strrstr_len(link, rel - link, "<") : NULL;
                        const char *gt = lt ? strchr(lt, '>') : NULL;
                        if (gt) {
                            g_autofree char *ref = g_strndup(lt + 1, (gsize)(gt - lt - 1));
                            *next_link = g_uri_resolve_relative(url, ref, G_URI_FLAGS_NONE, NULL);
                        }
                    }
                }
                return bytes;
            }
            r = net_error(dl, rerr, url, what, &why);
        }
        if (r == NET_FAIL || !retry_wait(dl, attempt, ra, -1, &why, error)) {
            if (why) g_propagate_error(error, g_steal_pointer(&why));
            return NULL;
        }
    }
}

static JsonNode *http_get_json(hyocr_download *dl, const char *url, const char *what, char **next_link,
                               GError **error)
{
    g_autoptr(GBytes) bytes = http_get_all(dl, url, what, next_link, error);
    if (!bytes) return NULL;
    gsize len;
    const char *data = g_bytes_get_data(bytes, &len);
    g_autoptr(GError) perr = NULL;
    JsonNode *root = hyocr_json_parse(data, len, HYOCR_JSON_MAX_DEPTH, NULL, &perr);
    if (!root)
        fail_parse(dl, error, _("%s from %s is not valid JSON (%s) — is %s a Hugging Face endpoint or mirror?"),
                   what, url, perr->message, dl->endpoint);
    return root;
}

/* ------------------------------------------------------------------ the file list */

static char *esc_segment(const char *s) { return g_uri_escape_string(s, NULL, FALSE); }
static char *esc_path(const char *s) { return g_uri_escape_string(s, "/", FALSE); }

static char *resolve_url(const hyocr_download *dl, const char *remote)
{
    g_autofree char *rev = esc_segment(dl->commit), *path = esc_path(remote);
    return g_strdup_printf("%s/%s/resolve/%s/%s", dl->endpoint, dl->repo, rev, path);
}

static bool wanted_file(const char *name)
{
    static const char *const names[] = {
        "config.json", "generation_config.json", "preprocessor_config.json", "processor_config.json",
        "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
        "model.safetensors", "model.safetensors.index.json",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        if (!strcmp(name, names[i])) return true;
    return g_pattern_match_simple("model-*-of-*.safetensors", name);
}

static char *hex_or_null(const char *s, size_t len)
{
    if (!s || strlen(s) != len) return NULL;
    for (const char *p = s; *p; p++)
        if (!g_ascii_isxdigit(*p)) return NULL;
    return g_ascii_strdown(s, -1);
}

/* The 1.5 release's speculative-decoding draft (issue 20): optional, kept in dflash/ as in the
 * repository. Its tokenizer and template copies are the model's own and are not needed. */
static bool draft_file(const char *path)
{
    return !strcmp(path, "dflash/config.json") || !strcmp(path, "dflash/model.safetensors");
}

/* The local name of a repository file we need from the chosen folder, else NULL. */
static const char *selected_name(const hyocr_download *dl, const char *path)
{
    if (!*dl->subfolder && draft_file(path)) return path;
    const char *name = path;
    if (*dl->subfolder) {
        size_t n = strlen(dl->subfolder);
        if (strncmp(path, dl->subfolder, n) || path[n] != '/') return NULL;
        name = path + n + 1;
    }
    return !strchr(name, '/') && wanted_file(name) ? name : NULL;
}

static void add_candidate(hyocr_download *dl, const char *path, int64_t size, const char *lfs_sha256,
                          const char *git_oid)
{
    const char *name = selected_name(dl, path);
    if (!name || size < 0) return;
    for (guint i = 0; i < dl->files->len; i++)
        if (!strcmp(g_array_index(dl->files, hyocr_download_file, i).name, name)) return;
    g_autofree char *sha = hex_or_null(lfs_sha256, 64), *oid = sha ? NULL : hex_or_null(git_oid, 40);
    hyocr_download_file f = {
        .name = g_string_chunk_insert(dl->strings, name),
        .remote = g_string_chunk_insert(dl->strings, path),
        .size = size,
        .sha256 = sha ? g_string_chunk_insert(dl->strings, sha) : NULL,
        .git_oid = oid ? g_string_chunk_insert(dl->strings, oid) : NULL,
    };
    file_extra x = { 0 };
    g_array_append_val(dl->files, f);
    g_array_append_val(dl->extra, x);
}

static JsonObject *obj_obj(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

/* Returns FALSE when a sibling we need lacks its size or any checksum (a mirror that
 * ignores blobs=true): the tree API has them. */
static gboolean take_siblings(hyocr_download *dl, JsonArray *siblings)
{
    gboolean complete = TRUE;
    for (guint i = 0; i < json_array_get_length(siblings); i++) {
        JsonNode *n = json_array_get_element(siblings, i);
        JsonObject *s = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
        const char *path = hyocr_json_str(s, "rfilename");
        if (!path || !selected_name(dl, path)) continue;
        JsonObject *lfs = obj_obj(s, "lfs");
        int64_t size = hyocr_json_int(s, "size");
        if (size < 0 && lfs) size = hyocr_json_int(lfs, "size");
        const char *sha = lfs ? hyocr_json_str(lfs, "sha256") : NULL, *oid = hyocr_json_str(s, "blobId");
        complete = complete && size >= 0 && (sha || oid);
        add_candidate(dl, path, size, sha, oid);
    }
    return complete;
}

static gboolean fetch_tree(hyocr_download *dl, GError **error)
{
    g_autofree char *rev = esc_segment(dl->commit), *folder = esc_path(dl->subfolder);
    g_autofree char *url = g_strdup_printf("%s/api/models/%s/tree/%s%s%s?recursive=true", dl->endpoint, dl->repo,
                                           rev, *folder ? "/" : "", folder);
    g_autofree char *what = g_strdup_printf(_("the file list of %s%s%s at %s"), dl->repo, *dl->subfolder ? "/" : "",
                                            dl->subfolder, dl->revision);
    for (int page = 0; url && page < 1000; page++) {
        char *next = NULL;
        g_autoptr(JsonNode) root = http_get_json(dl, url, what, &next, error);
        g_free(url);
        url = next;
        if (!root) return FALSE;
        if (!JSON_NODE_HOLDS_ARRAY(root))
            return fail_parse(dl, error, _("%s: expected a JSON array from the tree API"), what);
        JsonArray *a = json_node_get_array(root);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            JsonNode *n = json_array_get_element(a, i);
            JsonObject *e = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
            const char *type = hyocr_json_str(e, "type"), *path = hyocr_json_str(e, "path");
            if (!path || (type && strcmp(type, "file"))) continue;
            JsonObject *lfs = obj_obj(e, "lfs");
            add_candidate(dl, path, hyocr_json_int(e, "size"), lfs ? hyocr_json_str(lfs, "oid") : NULL,
                          hyocr_json_str(e, "oid"));
        }
    }
    return TRUE;
}

static bool has_file(const hyocr_download *dl, const char *name)
{
    for (guint i = 0; i < dl->files->len; i++)
        if (!strcmp(g_array_index(dl->files, hyocr_download_file, i).name, name)) return true;
    return false;
}

static gboolean check_complete_set(hyocr_download *dl, GError **error)
{
    const char *missing = !has_file(dl, "config.json") ? "config.json"
                        : !has_file(dl, "tokenizer.json") ? "tokenizer.json" : NULL;
    bool shards = false;
    for (guint i = 0; i < dl->files->len; i++)
        if (g_pattern_match_simple("model-*-of-*.safetensors", g_array_index(dl->files, hyocr_download_file, i).name))
            shards = true;
    if (!missing && !has_file(dl, "model.safetensors") && !(shards && has_file(dl, "model.safetensors.index.json")))
        missing = _("model.safetensors (or an index and its shards)");
    if (!missing) return TRUE;
    return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NOT_FOUND, NULL,
                 _("revision “%s” of %s has no %s in %s%s (the folder of version %s)"),
                 dl->revision, dl->repo, missing, *dl->subfolder ? dl->subfolder : _("the repository root"),
                 *dl->subfolder ? "/" : "", dl->version_name);
}

/* Small files first: a wrong folder or revision shows up before gigabytes move. */
static int by_size(gconstpointer a, gconstpointer b)
{
    const hyocr_download_file *x = a, *y = b;
    return x->size < y->size ? -1 : x->size > y->size ? 1 : strcmp(x->name, y->name);
}

static gboolean fetch_listing(hyocr_download *dl, GError **error)
{
    g_autofree char *rev = esc_segment(dl->revision);
    g_autofree char *url = g_strdup_printf("%s/api/models/%s/revision/%s?blobs=true", dl->endpoint, dl->repo, rev);
    g_autofree char *what = g_strdup_printf(_("revision “%s” of %s"), dl->revision, dl->repo);
    g_autoptr(JsonNode) root = http_get_json(dl, url, what, NULL, error);
    if (!root) return FALSE;
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (!o) return fail_parse(dl, error, _("%s: expected a JSON object from %s"), what, url);
    const char *sha = hyocr_json_str(o, "sha");
    dl->commit = g_strdup(sha && *sha ? sha : dl->revision);
    JsonNode *sib = json_object_get_member(o, "siblings");
    gboolean usable = sib && JSON_NODE_HOLDS_ARRAY(sib) && take_siblings(dl, json_node_get_array(sib));
    if (!usable || dl->files->len == 0) {
        g_array_set_size(dl->files, 0);
        g_array_set_size(dl->extra, 0);
        if (!fetch_tree(dl, error)) return FALSE;
    }
    if (!check_complete_set(dl, error)) return FALSE;
    g_array_sort(dl->files, by_size);
    return TRUE;
}

/* ------------------------------------------------------------------ local state */

static bool same_identity(JsonObject *e, const hyocr_download_file *f)
{
    return e && hyocr_json_int(e, "size") == f->size && !g_strcmp0(hyocr_json_str(e, "sha256"), f->sha256) &&
           !g_strcmp0(hyocr_json_str(e, "git_oid"), f->git_oid);
}

static bool read_bool(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN && json_node_get_boolean(n);
}

/* What earlier attempts left in the partial folder that still matches this plan. */
static void scan_partial(hyocr_download *dl)
{
    g_autofree char *state_path = g_build_filename(dl->partial_dir, HYOCR_MODELS_PARTIAL_STATE, NULL);
    JsonObject *state = hyocr_json_load_object(state_path);
    for (guint i = 0; i < dl->files->len; i++) {
        hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        file_extra *x = &g_array_index(dl->extra, file_extra, i);
        JsonObject *e = hyocr_models_record_file(state, f->name);
        x->in_state = same_identity(e, f);
        x->state_verified = x->in_state && read_bool(e, "verified");
        g_autofree char *final = g_build_filename(dl->partial_dir, f->name, NULL);
        g_autofree char *tmp = g_strconcat(final, INCOMPLETE, NULL);
        if (x->state_verified && hyocr_models_file_size(final) == f->size) {
            f->done = true;
            f->have = f->size;
            g_free(x->content_sha256);
            x->content_sha256 = g_strdup(hyocr_json_str(e, "content_sha256"));
        } else if (x->in_state) {
            int64_t have = hyocr_models_file_size(tmp);
            f->have = have > 0 && have <= f->size ? have : 0;
        }
    }
    if (state) json_object_unref(state);
}

/* The destination already holds exactly this commit's files. */
static bool dest_up_to_date(const hyocr_download *dl)
{
    g_autofree char *path = g_build_filename(dl->dest_dir, HYOCR_DOWNLOAD_MANIFEST, NULL);
    JsonObject *m = hyocr_json_load_object(path);
    bool ok = m && !g_strcmp0(hyocr_json_str(m, "commit"), dl->commit) &&
              !g_strcmp0(hyocr_json_str(m, "repo"), dl->repo) &&
              !g_strcmp0(hyocr_json_str(m, "subfolder"), dl->subfolder);
    for (guint i = 0; ok && i < dl->files->len; i++) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        g_autofree char *fp = g_build_filename(dl->dest_dir, f->name, NULL);
        ok = same_identity(hyocr_models_record_file(m, f->name), f) && hyocr_models_file_size(fp) == f->size;
    }
    if (m) json_object_unref(m);
    return ok;
}

/* A folder holding files that hyocr did not put there is never replaced. */
static gboolean check_dest(hyocr_download *dl, GError **error)
{
    if (!g_file_test(dl->dest_dir, G_FILE_TEST_EXISTS)) return TRUE;
    if (!g_file_test(dl->dest_dir, G_FILE_TEST_IS_DIR))
        return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_INVALID, NULL,
                     _("%s exists and is not a folder — choose another destination"), dl->dest_dir);
    g_autofree char *manifest = g_build_filename(dl->dest_dir, HYOCR_DOWNLOAD_MANIFEST, NULL);
    if (g_file_test(manifest, G_FILE_TEST_EXISTS)) return TRUE;
    g_autoptr(GDir) d = g_dir_open(dl->dest_dir, 0, NULL);
    if (d && !g_dir_read_name(d)) return TRUE;
    return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_INVALID, NULL,
                 _("%s already holds files that hyocr did not download — choose a new or empty folder "
                 "(hyocr replaces the whole folder when a download completes)"), dl->dest_dir);
}

const hyocr_download_summary *hyocr_download_plan(hyocr_download *dl, GError **error)
{
    if (dl->planned) return &dl->summary;
    dl->failure = (hyocr_download_failure){ 0 };
    if (!check_dest(dl, error)) return NULL;
    if (g_cancellable_is_cancelled(dl->cancellable)) {
        fail_cancelled(dl, error);
        return NULL;
    }
    emit(dl, HYOCR_DOWNLOAD_PHASE_LISTING, -1, NULL);
    bool own_session = !dl->session;
    if (own_session) dl->session = session_new(dl);
    gboolean ok = fetch_listing(dl, error);
    if (own_session) g_clear_object(&dl->session);
    if (!ok) {
        g_array_set_size(dl->files, 0);
        g_array_set_size(dl->extra, 0);
        g_clear_pointer(&dl->commit, g_free);
        return NULL;
    }
    scan_partial(dl);
    hyocr_download_summary *s = &dl->summary;
    *s = (hyocr_download_summary){
        .endpoint = dl->endpoint, .repo = dl->repo, .revision = dl->revision, .commit = dl->commit,
        .subfolder = dl->subfolder, .dest_dir = dl->dest_dir, .partial_dir = dl->partial_dir,
        .files = (const hyocr_download_file *)dl->files->data, .n_files = (int)dl->files->len,
        .free_bytes = hyocr_models_free_space(dl->partial_dir), .up_to_date = dest_up_to_date(dl),
    };
    for (guint i = 0; i < dl->files->len; i++) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        s->total_bytes += f->size;
        s->have_bytes += f->done ? f->size : f->have;
    }
    dl->planned = true;
    return s;
}

/* ------------------------------------------------------------------ disk */

/* The file-system steps that can fail, each with its own words. */
typedef enum {
    STEP_CREATE, STEP_CREATE_FOLDER, STEP_OPEN, STEP_READ, STEP_WRITE, STEP_SEEK, STEP_TRUNCATE, STEP_REMOVE,
    STEP_RENAME, STEP_INSTALL, STEP_MOVE_ASIDE,
} disk_step;

/* A format with the path, then the system's reason. */
static const char *step_words(disk_step step)
{
    switch (step) {
    case STEP_CREATE:        return _("cannot create %s: %s");
    case STEP_CREATE_FOLDER: return _("cannot create the folder %s: %s");
    case STEP_OPEN:          return _("cannot open %s: %s");
    case STEP_READ:          return _("cannot read %s: %s");
    case STEP_WRITE:         return _("cannot write %s: %s");
    case STEP_SEEK:          return _("cannot seek in %s: %s");
    case STEP_TRUNCATE:      return _("cannot truncate %s: %s");
    case STEP_REMOVE:        return _("cannot remove %s: %s");
    case STEP_RENAME:        return _("cannot rename %s: %s");
    case STEP_INSTALL:       return _("cannot move the finished download to %s: %s");
    case STEP_MOVE_ASIDE:    return _("cannot move %s aside: %s");
    }
    return "%s: %s";
}

static gboolean fail_errno(hyocr_download *dl, GError **error, int err, const char *file, disk_step step,
                           const char *path)
{
    if (err == ENOSPC || err == EDQUOT) {
        int64_t need = dl->summary.total_bytes - bytes_on_disk(dl), avail = hyocr_models_free_space(dl->partial_dir);
        dl->failure.need_bytes = need;
        dl->failure.free_bytes = avail;
        g_autofree char *n = fmt_size(need), *a = fmt_size(avail);
        return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NO_SPACE, file,
                     _("disk full while writing %s: %s still to download, %s free — free some space and run the "
                     "download again to resume (the partial download is kept in %s; the installed model, if any, "
                     "is untouched)"), path, n, a, dl->partial_dir);
    }
    g_autofree char *msg = g_strdup_printf(step_words(step), path, g_strerror(err));
    return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_DISK, file, "%s", msg);
}

static gboolean write_all(int fd, const guint8 *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = ENOSPC;
            return FALSE;
        }
        p += w;
        n -= (size_t)w;
    }
    return TRUE;
}

static gboolean fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return FALSE;
    int r = fsync(fd);
    close(fd);
    return r == 0;
}

static gboolean write_json(hyocr_download *dl, const char *path, JsonBuilder *b, GError **error)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = hyocr_json_to_data(root, true);
    size_t len = strlen(text);
    g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail_errno(dl, error, errno, NULL, STEP_CREATE, tmp);
    gboolean ok = write_all(fd, (const guint8 *)text, len) && fsync(fd) == 0;
    int err = errno;
    close(fd);
    if (ok && rename(tmp, path) == 0) return TRUE;
    err = ok ? errno : err;
    g_unlink(tmp);
    return fail_errno(dl, error, err, NULL, STEP_WRITE, path);
}

static void add_file_entry(JsonBuilder *b, const hyocr_download_file *f, const file_extra *x, bool verified,
                           int64_t mtime)
{
    json_builder_begin_object(b);
    hyocr_json_member_str(b, "name", f->name);
    hyocr_json_member_str(b, "remote", f->remote);
    hyocr_json_member_int(b, "size", f->size);
    if (f->sha256) hyocr_json_member_str(b, "sha256", f->sha256);
    if (f->git_oid) hyocr_json_member_str(b, "git_oid", f->git_oid);
    if (x->content_sha256) hyocr_json_member_str(b, "content_sha256", x->content_sha256);
    json_builder_set_member_name(b, "verified");
    json_builder_add_boolean_value(b, verified);
    if (mtime >= 0) hyocr_json_member_int(b, "mtime", mtime);
    json_builder_end_object(b);
}

static void add_header(JsonBuilder *b, const hyocr_download *dl)
{
    hyocr_json_member_int(b, "format", 1);
    hyocr_json_member_str(b, "endpoint", dl->endpoint);
    hyocr_json_member_str(b, "repo", dl->repo);
    hyocr_json_member_str(b, "revision", dl->revision);
    hyocr_json_member_str(b, "commit", dl->commit);
    hyocr_json_member_str(b, "subfolder", dl->subfolder);
    hyocr_json_member_str(b, "version", dl->version_name);
}

static gboolean save_state(hyocr_download *dl, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    add_header(b, dl);
    json_builder_set_member_name(b, "files");
    json_builder_begin_array(b);
    for (guint i = 0; i < dl->files->len; i++) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        add_file_entry(b, f, &g_array_index(dl->extra, file_extra, i), f->done, -1);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autofree char *path = g_build_filename(dl->partial_dir, HYOCR_MODELS_PARTIAL_STATE, NULL);
    return write_json(dl, path, b, error);
}

static bool planned_name(const hyocr_download *dl, const char *entry)
{
    if (!strcmp(entry, HYOCR_MODELS_PARTIAL_STATE)) return true;
    for (guint i = 0; i < dl->files->len; i++) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        if (!strcmp(entry, f->name) && f->done) return true;
        if (g_str_has_prefix(entry, f->name) && !strcmp(entry + strlen(f->name), INCOMPLETE) && f->have > 0)
            return true;
    }
    return false;
}

/* Drops what does not match the plan (another revision's files, unverified leftovers),
 * so that the folder that becomes the model holds nothing else. */
static gboolean prepare_partial(hyocr_download *dl, GError **error)
{
    if (g_mkdir_with_parents(dl->partial_dir, 0755) != 0)
        return fail_errno(dl, error, errno, NULL, STEP_CREATE_FOLDER, dl->partial_dir);
    /* Two downloads into one folder (the app and the command, say) would corrupt each other. */
    dl->lock_fd = open(dl->partial_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dl->lock_fd < 0) return fail_errno(dl, error, errno, NULL, STEP_OPEN, dl->partial_dir);
    if (flock(dl->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_INVALID, NULL,
                     _("another download into %s is running (its files are in %s) — wait for it to finish or stop it"),
                     dl->dest_dir, dl->partial_dir);
    static const char *const folders[] = { "", "dflash" };   /* the model's and its draft's */
    for (size_t k = 0; k < G_N_ELEMENTS(folders); k++) {
        g_autofree char *dir = g_build_filename(dl->partial_dir, folders[k], NULL);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *entry;
        while (d && (entry = g_dir_read_name(d))) {
            g_autofree char *name = *folders[k] ? g_strconcat(folders[k], "/", entry, NULL) : g_strdup(entry);
            if (planned_name(dl, name)) continue;
            g_autofree char *p = g_build_filename(dl->partial_dir, name, NULL);
            if (g_file_test(p, G_FILE_TEST_IS_REGULAR) && g_unlink(p) != 0)
                return fail_errno(dl, error, errno, NULL, STEP_REMOVE, p);
        }
    }
    return save_state(dl, error);
}

/* ------------------------------------------------------------------ one file */

typedef struct {
    GChecksum *sha256, *sha1;   /* sha1 over "blob <size>\0" + data: git's object id */
    int64_t hashed;
} file_hash;

static void hash_reset(file_hash *h, const hyocr_download_file *f)
{
    g_clear_pointer(&h->sha256, g_checksum_free);
    g_clear_pointer(&h->sha1, g_checksum_free);
    h->sha256 = g_checksum_new(G_CHECKSUM_SHA256);
    if (f->git_oid) {
        h->sha1 = g_checksum_new(G_CHECKSUM_SHA1);
        char head[64];
        int n = g_snprintf(head, sizeof head, "blob %" G_GINT64_FORMAT, f->size);
        g_checksum_update(h->sha1, (const guchar *)head, n + 1);   /* the NUL belongs to the header */
    }
    h->hashed = 0;
}

static void hash_update(file_hash *h, const guint8 *p, size_t n)
{
    g_checksum_update(h->sha256, p, (gssize)n);
    if (h->sha1) g_checksum_update(h->sha1, p, (gssize)n);
    h->hashed += (int64_t)n;
}

static void hash_clear(file_hash *h)
{
    g_clear_pointer(&h->sha256, g_checksum_free);
    g_clear_pointer(&h->sha1, g_checksum_free);
}

static gboolean hash_prefix(hyocr_download *dl, int fd, int64_t n, file_hash *h, const char *path, GError **error)
{
    g_autofree guint8 *buf = g_malloc(BUF_SIZE);
    while (h->hashed < n) {
        if (g_cancellable_is_cancelled(dl->cancellable)) return fail_cancelled(dl, error);
        ssize_t r = pread(fd, buf, (size_t)MIN((int64_t)BUF_SIZE, n - h->hashed), (off_t)h->hashed);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return fail_errno(dl, error, r < 0 ? errno : EIO, NULL, STEP_READ, path);
        hash_update(h, buf, (size_t)r);
    }
    return TRUE;
}

static gboolean restart_file(hyocr_download *dl, int fd, file_hash *h, hyocr_download_file *f, const char *path,
                             GError **error)
{
    if (ftruncate(fd, 0) != 0) return fail_errno(dl, error, errno, f->name, STEP_TRUNCATE, path);
    f->have = 0;
    hash_reset(h, f);
    return TRUE;
}

/* One GET of the rest of f, appended to fd. */
static net_result transfer(hyocr_download *dl, int index, int fd, file_hash *h, const char *path, bool *spliced,
                           double *retry_after, GError **error)
{
    hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, index);
    g_autofree char *url = resolve_url(dl, f->remote);
    g_autoptr(SoupMessage) msg = NULL;
    g_autoptr(GInputStream) body = NULL;
    net_result r = http_open(dl, url, f->have, f->name, &msg, &body, retry_after, error);
    if (r != NET_OK) return r;
    guint st = soup_message_get_status(msg);
    goffset start = 0, end = 0, total = 0;
    bool ranged = st == SOUP_STATUS_PARTIAL_CONTENT &&
                  soup_message_headers_get_content_range(soup_message_get_response_headers(msg), &start, &end, &total);
    if (st == SOUP_STATUS_REQUESTED_RANGE_NOT_SATISFIABLE || (f->have > 0 && !(ranged && start == f->have))) {
        /* The server would not continue where we stopped: start the file over. */
        if (!restart_file(dl, fd, h, f, path, error)) return NET_FAIL;
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_SERVER, f->name,
              _("%s: the server did not resume the transfer (HTTP %u); starting the file again"), f->name, st);
        return NET_RETRY;
    }
    *spliced = *spliced || f->have > 0;
    g_autofree guint8 *buf = g_malloc(BUF_SIZE);
    for (;;) {
        g_autoptr(GError) err = NULL;
        gssize n = g_input_stream_read(body, buf, BUF_SIZE, dl->cancellable, &err);
        if (n < 0) {
            if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
                fail_cancelled(dl, error);
                return NET_FAIL;
            }
            g_autofree char *host = uri_host(url);
            failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NETWORK, f->name,
                  _("connection to %s lost after %lld of %lld bytes of %s: %s"), host, (long long)f->have,
                  (long long)f->size, f->name, err->message);
            return NET_RETRY;
        }
        if (n == 0) break;
        if (f->have + n > f->size) {
            failf(dl, error, HYOCR_DOWNLOAD_FAILURE_CHECKSUM, f->name,
                  _("%s: the server sent more than the %lld bytes the file list gives; the download was deleted — "
                    "run the download again, and if this repeats the server or mirror (%s) serves a different file "
                    "than its list says"), f->name, (long long)f->size, dl->host);
            restart_file(dl, fd, h, f, path, NULL);
            return NET_FAIL;
        }
        if (!write_all(fd, buf, (size_t)n)) {
            fail_errno(dl, error, errno, f->name, STEP_WRITE, path);
            return NET_FAIL;
        }
        hash_update(h, buf, (size_t)n);
        f->have += n;
        dl->fetched += n;
        emit(dl, HYOCR_DOWNLOAD_PHASE_FETCHING, index, NULL);
    }
    if (f->have < f->size) {
        g_autofree char *host = uri_host(url);
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NETWORK, f->name,
              _("connection to %s closed after %lld of %lld bytes of %s"), host, (long long)f->have, (long long)f->size, f->name);
        return NET_RETRY;
    }
    return NET_OK;
}

/* NULL when the hashes match, else "sha256 <want> expected, got <got>". */
static char *hash_mismatch(file_hash *h, const hyocr_download_file *f)
{
    const char *got256 = g_checksum_get_string(h->sha256);
    if (f->sha256 && strcmp(got256, f->sha256))
        return g_strdup_printf(_("sha256 %s expected, got %s"), f->sha256, got256);
    if (f->git_oid && strcmp(g_checksum_get_string(h->sha1), f->git_oid))
        return g_strdup_printf(_("git blob id %s expected, got %s"), f->git_oid, g_checksum_get_string(h->sha1));
    return NULL;
}

static gboolean fetch_attempts(hyocr_download *dl, int index, int fd, file_hash *h, const char *tmp,
                               bool *spliced, GError **error)
{
    hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, index);
    for (int attempt = 0;; attempt++) {
        if (h->hashed != f->have) {
            hash_reset(h, f);
            if (f->have > 0) emit(dl, HYOCR_DOWNLOAD_PHASE_RESUMING, index, NULL);
            if (!hash_prefix(dl, fd, f->have, h, tmp, error)) return FALSE;
        }
        if (f->have >= f->size) return TRUE;
        if (lseek(fd, (off_t)f->have, SEEK_SET) < 0) return fail_errno(dl, error, errno, f->name, STEP_SEEK, tmp);
        g_autoptr(GError) why = NULL;
        double ra = 0;
        net_result r = transfer(dl, index, fd, h, tmp, spliced, &ra, &why);
        if (r == NET_OK) return TRUE;
        if (r == NET_FAIL || !retry_wait(dl, attempt, ra, index, &why, error)) {
            if (why) g_propagate_error(error, g_steal_pointer(&why));
            return FALSE;
        }
    }
}

static gboolean fetch_file(hyocr_download *dl, int index, GError **error)
{
    hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, index);
    g_autofree char *final = g_build_filename(dl->partial_dir, f->name, NULL);
    g_autofree char *tmp = g_strconcat(final, INCOMPLETE, NULL);
    g_autofree char *folder = g_path_get_dirname(final);   /* dflash/ for the draft's files */
    if (g_mkdir_with_parents(folder, 0755) != 0)
        return fail_errno(dl, error, errno, f->name, STEP_CREATE_FOLDER, folder);
    bool spliced = false, started_over = false;
    file_hash h = { 0 };
    int fd = -1;
    gboolean ok = FALSE;
    for (;;) {
        fd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            fail_errno(dl, error, errno, f->name, STEP_CREATE, tmp);
            break;
        }
        int64_t have = lseek(fd, 0, SEEK_END);
        f->have = have > 0 && have <= f->size ? have : 0;
        if (have > f->size && ftruncate(fd, 0) != 0) {
            fail_errno(dl, error, errno, f->name, STEP_TRUNCATE, tmp);
            break;
        }
        h.hashed = -1;
        if (!fetch_attempts(dl, index, fd, &h, tmp, &spliced, error)) break;
        g_autofree char *bad = hash_mismatch(&h, f);
        if (!bad) {
            ok = TRUE;
            break;
        }
        close(fd);
        fd = -1;
        g_unlink(tmp);
        f->have = 0;
        /* A file stitched from several transfers may have met a changed file on the server;
         * one clean download from the start settles whether the data itself is bad. */
        if (spliced && !started_over) {
            started_over = true;
            spliced = false;
            continue;
        }
        failf(dl, error, HYOCR_DOWNLOAD_FAILURE_CHECKSUM, f->name,
              _("%s: checksum mismatch (%s); the damaged download was deleted — run the download again, and if "
              "this repeats the server or mirror (%s) serves a different file than its list says"),
              f->name, bad, dl->host);
        break;
    }
    if (ok && fsync(fd) != 0) ok = fail_errno(dl, error, errno, f->name, STEP_WRITE, tmp);
    if (fd >= 0) close(fd);
    if (ok && rename(tmp, final) != 0) ok = fail_errno(dl, error, errno, f->name, STEP_RENAME, tmp);
    if (ok) {
        file_extra *x = &g_array_index(dl->extra, file_extra, index);
        g_free(x->content_sha256);
        x->content_sha256 = g_strdup(g_checksum_get_string(h.sha256));
        f->done = true;
        f->have = f->size;
        emit(dl, HYOCR_DOWNLOAD_PHASE_VERIFIED, index, NULL);
    }
    hash_clear(&h);
    return ok;
}

/* ------------------------------------------------------------------ install */

static void rm_tree(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            rm_tree(child);
        }
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

static gboolean write_manifest(hyocr_download *dl, GError **error)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *when = g_date_time_format_iso8601(now);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    add_header(b, dl);
    hyocr_json_member_str(b, "verified_at", when);
    json_builder_set_member_name(b, "files");
    json_builder_begin_array(b);
    for (guint i = 0; i < dl->files->len; i++) {
        const hyocr_download_file *f = &g_array_index(dl->files, hyocr_download_file, i);
        /* the time lets `hyocr models` notice a changed file without rehashing */
        g_autofree char *p = g_build_filename(dl->partial_dir, f->name, NULL);
        GStatBuf st;
        int64_t mtime = g_stat(p, &st) == 0 ? (int64_t)st.st_mtime : -1;
        add_file_entry(b, f, &g_array_index(dl->extra, file_extra, i), true, mtime);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autofree char *path = g_build_filename(dl->partial_dir, HYOCR_DOWNLOAD_MANIFEST, NULL);
    return write_json(dl, path, b, error);
}

static gboolean swap_into_place(hyocr_download *dl, GError **error)
{
    if (!g_file_test(dl->dest_dir, G_FILE_TEST_EXISTS)) {
        if (rename(dl->partial_dir, dl->dest_dir) != 0)
            return fail_errno(dl, error, errno, NULL, STEP_INSTALL, dl->dest_dir);
        return TRUE;
    }
    /* Exchange the two folders in one step: no moment without a usable model. */
    if (renameat2(AT_FDCWD, dl->partial_dir, AT_FDCWD, dl->dest_dir, RENAME_EXCHANGE) == 0) {
        rm_tree(dl->partial_dir);
        return TRUE;
    }
    g_autofree char *old = g_strconcat(dl->dest_dir, ".old", NULL);
    rm_tree(old);
    if (rename(dl->dest_dir, old) != 0) return fail_errno(dl, error, errno, NULL, STEP_MOVE_ASIDE, dl->dest_dir);
    if (rename(dl->partial_dir, dl->dest_dir) != 0) {
        int err = errno;
        rename(old, dl->dest_dir);
        return fail_errno(dl, error, err, NULL, STEP_INSTALL, dl->dest_dir);
    }
    rm_tree(old);
    return TRUE;
}

static gboolean install(hyocr_download *dl, GError **error)
{
    emit(dl, HYOCR_DOWNLOAD_PHASE_INSTALLING, -1, NULL);
    if (!write_manifest(dl, error)) return FALSE;
    g_autofree char *state = g_build_filename(dl->partial_dir, HYOCR_MODELS_PARTIAL_STATE, NULL);
    g_unlink(state);
    fsync_dir(dl->partial_dir);
    if (!swap_into_place(dl, error)) return FALSE;
    g_autofree char *parent = g_path_get_dirname(dl->dest_dir);
    fsync_dir(parent);
    return TRUE;
}

/* Refuses before anything is fetched when the rest cannot fit (the old model stays meanwhile). */
static gboolean check_space(hyocr_download *dl, GError **error)
{
    int64_t need = dl->summary.total_bytes - bytes_on_disk(dl);
    int64_t avail = hyocr_models_free_space(dl->partial_dir);
    if (avail < 0 || need <= avail) return TRUE;
    dl->failure.need_bytes = need;
    dl->failure.free_bytes = avail;
    g_autofree char *n = fmt_size(need), *a = fmt_size(avail), *parent = g_path_get_dirname(dl->partial_dir);
    return failf(dl, error, HYOCR_DOWNLOAD_FAILURE_NO_SPACE, NULL,
                 _("not enough disk space in %s: the download needs %s more, %s is free — free some space or "
                 "choose another folder"), parent, n, a);
}

static gboolean run_planned(hyocr_download *dl, GError **error)
{
    const hyocr_download_summary *s = hyocr_download_plan(dl, error);
    if (!s) return FALSE;
    if (!s->up_to_date) {
        if (!check_space(dl, error) || !prepare_partial(dl, error)) return FALSE;
        for (guint i = 0; i < dl->files->len; i++) {
            if (g_array_index(dl->files, hyocr_download_file, i).done) continue;
            if (!fetch_file(dl, (int)i, error) || !save_state(dl, error)) return FALSE;
        }
        if (g_cancellable_is_cancelled(dl->cancellable)) return fail_cancelled(dl, error);
        if (!install(dl, error)) return FALSE;
        dl->summary.up_to_date = true;
    }
    emit(dl, HYOCR_DOWNLOAD_PHASE_DONE, -1, NULL);
    return TRUE;
}

gboolean hyocr_download_run(hyocr_download *dl, GError **error)
{
    dl->failure = (hyocr_download_failure){ 0 };
    dl->session = session_new(dl);
    gboolean ok = run_planned(dl, error);
    g_clear_object(&dl->session);
    if (dl->lock_fd >= 0) close(dl->lock_fd);
    dl->lock_fd = -1;
    return ok;
}
