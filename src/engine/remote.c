/* hyocr — jobs on a remote OpenAI-compatible server (remote.h), over libsoup 3.
 *
 * A thread per request in flight, each with a session of its own (libsoup's
 * sync API in a thread needs no main loop, and a session is not shared across
 * threads), takes jobs from one FIFO. Blocking reads of the event stream end
 * on the job's cancellable, which closes the connection: the server sees the
 * client go and stops the job. */
#include "remote.h"
#include "engine-internal.h"
#include "remote-reply.h"
#include "error.h"
#include "i18n.h"
#include "json.h"
#include "postprocess.h"
#include "stop.h"
#include "hyocr-build-config.h"
#include <libsoup/soup.h>
#include <string.h>

#define REMOTE_DEFAULT_CONCURRENCY 8
#define REMOTE_DEFAULT_TIMEOUT_S   300
#define REMOTE_DEFAULT_RETRIES     6
#define REMOTE_DEFAULT_RETRY_MAX_S 60.0
/* An error reply's body, or /v1/models and /metrics, read at most: they are small. */
#define REMOTE_MAX_SMALL_BODY (4 << 20)
/* A non-streamed answer read at most (8192 tokens of text are well under it). */
#define REMOTE_MAX_BODY (64 << 20)

/* An extended error domain (as error.c's): a TLS refusal carries the certificate
 * refused, through g_error_copy and the jobs' results, for a front end to show. */
typedef struct {
    GTlsCertificate     *cert;
    GTlsCertificateFlags problems;
} HyocrRemoteErrorPrivate;

static void hyocr_remote_error_private_init(HyocrRemoteErrorPrivate *priv)
{
    priv->cert = NULL;
    priv->problems = 0;
}

static void hyocr_remote_error_private_copy(const HyocrRemoteErrorPrivate *src, HyocrRemoteErrorPrivate *dst)
{
    dst->cert = src->cert ? g_object_ref(src->cert) : NULL;
    dst->problems = src->problems;
}

static void hyocr_remote_error_private_clear(HyocrRemoteErrorPrivate *priv)
{
    g_clear_object(&priv->cert);
}

G_DEFINE_EXTENDED_ERROR(HyocrRemoteError, hyocr_remote_error)

GTlsCertificate *hyocr_remote_error_get_certificate(const GError *error, GTlsCertificateFlags *problems)
{
    if (!error || error->domain != HYOCR_REMOTE_ERROR) return NULL;
    HyocrRemoteErrorPrivate *priv = hyocr_remote_error_get_private(error);
    if (problems) *problems = priv->problems;
    return priv->cert;
}

/* Lower-case hex without separators: how fingerprints are compared. */
static char *fingerprint_hex(GTlsCertificate *cert)
{
    g_autoptr(GByteArray) der = NULL;
    g_object_get(cert, "certificate", &der, NULL);
    return der ? g_compute_checksum_for_data(G_CHECKSUM_SHA256, der->data, der->len) : NULL;
}

char *hyocr_remote_certificate_fingerprint(GTlsCertificate *cert)
{
    g_autofree char *hex = fingerprint_hex(cert);
    if (!hex) return NULL;
    GString *s = g_string_sized_new(96);
    for (size_t i = 0; hex[i]; i += 2)
        g_string_append_printf(s, "%s%c%c", i ? ":" : "", g_ascii_toupper(hex[i]), g_ascii_toupper(hex[i + 1]));
    return g_string_free(s, FALSE);
}

/* A fingerprint as given (any case, colons or spaces between the digits), compared
 * form; NULL when it is not 64 hexadecimal digits. */
static char *fingerprint_normal(const char *given)
{
    GString *s = g_string_sized_new(64);
    for (const char *c = given; *c; c++) {
        if (*c == ':' || *c == ' ') continue;
        if (!g_ascii_isxdigit(*c)) break;
        g_string_append_c(s, g_ascii_tolower(*c));
    }
    bool ok = s->len == 64 && strspn(given, "0123456789abcdefABCDEF: ") == strlen(given);
    return g_string_free(s, !ok);
}

struct hyocr_remote {
    gint             ref;            /* the owner's (hyocr_remote_free) and hyocr_remote_ref's */
    GUri            *base;           /* scheme://host[:port][/path], without /v1 */
    char            *name;           /* for messages */
    char            *auth;           /* "Bearer KEY" or NULL; wiped when freed */
    GTlsCertificate *trusted;
    char            *fingerprint;    /* the trusted certificate's SHA-256 (fingerprint_normal), or NULL */
    unsigned         timeout_s;
    int              max_retries;
    double           retry_max_s;
    gint             version;        /* atomic: hyocr_model_version, the server's word when it says it */
    GMutex           lock;
    GCond            cond;
    char            *model;          /* under lock once known */
    GQueue           queue;          /* hyocr_remote_job *, waiting */
    GPtrArray       *live;           /* submitted and not ended */
    bool             quit;
    gint             in_flight;      /* atomic */
    GMutex           event_lock;     /* one callback at a time, as the engine's one thread gives */
    GThread        **workers;
    int              n_workers;
};

struct hyocr_remote_job {
    gint              ref;
    hyocr_remote     *remote;
    hyocr_job_end     end;           /* its result, handed to hyocr_remote_job_wait */
    GCancellable     *cancel;        /* ours: the connection's */
    GCancellable     *user_cancel;   /* params.cancellable, linked to ours */
    gulong            user_cancel_id;
    hyocr_job_params  params;        /* its strings and references are ours (the strings in `own`) */
    hyocr_job_copies  own;
    gint64            t0, t_first;
    int               n_generated;   /* the server's count (usage), else the ids or pieces */
};

void hyocr_remote_params_init(hyocr_remote_params *p)
{
    memset(p, 0, sizeof *p);
    p->max_retries = -1;
    p->version = HYOCR_MODEL_VERSION_1_5;
}

const char *hyocr_remote_server_name(const hyocr_remote *r)
{
    return r->name;
}

const char *hyocr_remote_model(hyocr_remote *r)
{
    g_mutex_lock(&r->lock);
    const char *m = r->model;
    g_mutex_unlock(&r->lock);
    return m;
}

int hyocr_remote_in_flight(hyocr_remote *r)
{
    return g_atomic_int_get(&r->in_flight);
}

/* ---- the address ------------------------------------------------------------------------ */

static bool parse_url(hyocr_remote *r, const char *url, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GUri) u = url ? g_uri_parse(url, G_URI_FLAGS_NONE, &err) : NULL;
    const char *scheme = u ? g_uri_get_scheme(u) : NULL;
    if (!u || (g_ascii_strcasecmp(scheme, "http") && g_ascii_strcasecmp(scheme, "https")) || !g_uri_get_host(u) ||
        !*g_uri_get_host(u)) {
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_ADDRESS,
                    _("“%s” is not a server address: give it as http://HOST:PORT or https://HOST:PORT"),
                    url ? url : "");
        return false;
    }
    /* what is asked is PATH/v1/…: a trailing /v1 (as OpenAI clients write base URLs) is the same server */
    g_autofree char *path = g_strdup(g_uri_get_path(u));
    while (*path && path[strlen(path) - 1] == '/') path[strlen(path) - 1] = 0;
    if (g_str_has_suffix(path, "/v1")) path[strlen(path) - 3] = 0;
    g_autofree char *lower = g_ascii_strdown(scheme, -1);
    r->base = g_uri_build(G_URI_FLAGS_NONE, lower, NULL, g_uri_get_host(u), g_uri_get_port(u), path, NULL, NULL);
    /* the name leaves out a user and password written into the URL */
    r->name = g_uri_to_string(r->base);
    return true;
}

static GUri *endpoint(hyocr_remote *r, const char *rel)
{
    g_autofree char *path = g_strconcat(g_uri_get_path(r->base), rel, NULL);
    return g_uri_build(G_URI_FLAGS_NONE, g_uri_get_scheme(r->base), NULL, g_uri_get_host(r->base),
                       g_uri_get_port(r->base), path, NULL, NULL);
}

/* ---- talking to it --------------------------------------------------------------------- */

static SoupSession *session_new(hyocr_remote *r)
{
    g_autofree char *ua = g_strdup_printf("hyocr/%s", HYOCR_VERSION);
    return soup_session_new_with_options("timeout", r->timeout_s, "idle-timeout", 60u, "user-agent", ua, NULL);
}

/* Asked only of a certificate the system does not trust: the one the user trusts
 * passes; another is kept on the message, for the error to carry. */
static gboolean on_accept_certificate(SoupMessage *msg, GTlsCertificate *peer, GTlsCertificateFlags errors,
                                      gpointer data)
{
    hyocr_remote *r = data;
    if (r->trusted && g_tls_certificate_is_same(r->trusted, peer)) return TRUE;
    g_autofree char *fp = r->fingerprint ? fingerprint_hex(peer) : NULL;
    if (fp && g_str_equal(fp, r->fingerprint)) return TRUE;
    g_object_set_data_full(G_OBJECT(msg), "hyocr-refused-certificate", g_object_ref(peer), g_object_unref);
    g_object_set_data(G_OBJECT(msg), "hyocr-refused-problems", GUINT_TO_POINTER(errors));
    return FALSE;
}

static SoupMessage *message_new(hyocr_remote *r, const char *method, const char *rel)
{
    g_autoptr(GUri) u = endpoint(r, rel);
    SoupMessage *msg = soup_message_new_from_uri(method, u);
    SoupMessageHeaders *h = soup_message_get_request_headers(msg);
    if (r->auth) soup_message_headers_replace(h, "Authorization", r->auth);
    g_signal_connect(msg, "accept-certificate", G_CALLBACK(on_accept_certificate), r);
    return msg;
}

static const char *tls_problem(GTlsCertificateFlags f)
{
    if (f & G_TLS_CERTIFICATE_UNKNOWN_CA) return _("it is signed by no authority this computer trusts (self-signed?)");
    if (f & G_TLS_CERTIFICATE_BAD_IDENTITY) return _("it is made out to another host name");
    if (f & G_TLS_CERTIFICATE_EXPIRED) return _("it has expired");
    if (f & G_TLS_CERTIFICATE_NOT_ACTIVATED) return _("it is not valid yet");
    if (f & G_TLS_CERTIFICATE_REVOKED) return _("it was revoked");
    return _("it is not valid");
}

/* HYOCR_REMOTE_ERROR_TLS, with the certificate refused as its data. */
G_GNUC_PRINTF(4, 5)
static void tls_refusal(GError **error, GTlsCertificate *cert, GTlsCertificateFlags problems, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    GError *e = g_error_new_valist(HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS, format, ap);
    va_end(ap);
    HyocrRemoteErrorPrivate *priv = hyocr_remote_error_get_private(e);
    priv->cert = cert ? g_object_ref(cert) : NULL;
    priv->problems = problems;
    g_propagate_error(error, e);
}

/* A failure before any answer (or while reading one, answer: true), in the server's terms. */
static void transport_error(hyocr_remote *r, SoupMessage *msg, const GError *err, bool answer, GError **error)
{
    const char *host = g_uri_get_host(r->base);
    if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled"));
    else if (err->domain == G_RESOLVER_ERROR)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_DNS,
                    _("%s: the host name “%s” was not found (%s); check the address"), r->name, host, err->message);
    else if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED))
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_REFUSED,
                    _("%s refused the connection: is the server running, and on that port?"), r->name);
    else if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TIMEOUT,
                    _("%s sent nothing for %u s; it may be overloaded or stalled"), r->name, r->timeout_s);
    else if (g_error_matches(err, G_TLS_ERROR, G_TLS_ERROR_UNAVAILABLE))
        /* GLib's TLS lives in a module (glib-networking); without it every https address fails */
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS,
                    _("%s: this computer cannot make secure (https) connections: GLib has no TLS support "
                      "(the glib-networking package is missing)"), r->name);
    else if (err->domain == G_TLS_ERROR) {
        GTlsCertificateFlags f = msg ? soup_message_get_tls_peer_certificate_errors(msg) : 0;
        GTlsCertificate *refused = msg ? g_object_get_data(G_OBJECT(msg), "hyocr-refused-certificate") : NULL;
        if (refused) f = GPOINTER_TO_UINT(g_object_get_data(G_OBJECT(msg), "hyocr-refused-problems"));
        if (refused && (r->trusted || r->fingerprint))
            tls_refusal(error, refused, f,
                        _("%s: its certificate is not trusted: it is not the certificate trusted for this server "
                          "(a new certificate, or another server at this address?)"), r->name);
        else if (g_error_matches(err, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE) || f || refused)
            tls_refusal(error, refused, f,
                        _("%s: its certificate is not trusted: %s. If it is your own server, trust its certificate "
                          "explicitly"), r->name, tls_problem(f));
        else
            g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS,
                        _("%s: the secure connection failed (%s); does the server speak https?"), r->name,
                        err->message);
    } else if (err->domain == SOUP_SESSION_ERROR && !answer)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NOT_OPENAI,
                    _("%s does not answer as an HTTP server should (%s); is the address right (http or https, the "
                      "port)?"), r->name, err->message);
    else if (answer)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_DROPPED,
                    _("the connection to %s broke before the answer was complete: %s"), r->name, err->message);
    else
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NETWORK, _("%s could not be reached: %s"), r->name,
                    err->message);
}

/* A small body, whole (an error reply, /v1/models, /metrics). */
static GBytes *read_small(GInputStream *in, GCancellable *c, gsize max, GError **error)
{
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[16384];
    for (;;) {
        gssize n = g_input_stream_read(in, chunk, sizeof chunk, c, error);
        if (n < 0) return NULL;
        if (n == 0) break;
        if (buf->len + (gsize)n > max) break;   /* what follows would not change the verdict */
        g_byte_array_append(buf, chunk, (guint)n);
    }
    return g_byte_array_free_to_bytes(g_steal_pointer(&buf));
}

/* What a status other than 200 means, with the server's own message. */
static void status_error(hyocr_remote *r, SoupMessage *msg, GBytes *body, const char *path, int retries,
                         GError **error)
{
    guint st = soup_message_get_status(msg);
    gsize len = 0;
    const char *data = body ? g_bytes_get_data(body, &len) : NULL;
    g_autofree char *code = NULL;
    g_autofree char *said = hyocr_remote_error_message(data, len, &code);
    g_autofree char *valid = said ? g_utf8_make_valid(said, -1) : NULL;
    const char *why = valid && *valid ? valid : soup_status_get_phrase(st) ? soup_status_get_phrase(st) : "";
    if (st == 401 || st == 403)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_AUTH,
                    r->auth ? _("%s refused the API key (HTTP %u: %s)") : _("%s asks for an API key (HTTP %u: %s)"),
                    r->name, st, why);
    else if (st == 404 && ((code && strstr(code, "model")) || (said && g_strrstr(said, "model"))))
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MODEL,
                    _("%s does not serve the model “%s” (%s); pick one the server lists"), r->name,
                    r->model ? r->model : "", why);
    else if (st == 404 || st == 405 || (st >= 300 && st < 400) || st < 200)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NOT_OPENAI,
                    _("%s has no %s (HTTP %u): is it an OpenAI-compatible server (vLLM, hyocr serve), and is the "
                      "address right?"), r->name, path, st);
    else if (st == 503 || st == 429)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_BUSY,
                    _("%s is busy (HTTP %u: %s), still after %d tries; try again later"), r->name, st, why,
                    retries + 1);
    else if (st >= 400 && st < 500)
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_REJECTED, _("%s refused the request (HTTP %u): %s"),
                    r->name, st, why);
    else
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_SERVER, _("%s failed (HTTP %u): %s"), r->name, st,
                    why);
}

/* A blocking GET of a small JSON or text body; NULL with the error that says what is wrong. */
static GBytes *get_small(hyocr_remote *r, const char *rel, GError **error)
{
    g_autoptr(SoupSession) s = session_new(r);
    g_autoptr(SoupMessage) msg = message_new(r, "GET", rel);
    g_autoptr(GError) err = NULL;
    g_autoptr(GInputStream) in = soup_session_send(s, msg, NULL, &err);
    if (!in) {
        transport_error(r, msg, err, false, error);
        return NULL;
    }
    g_autoptr(GBytes) body = read_small(in, NULL, REMOTE_MAX_SMALL_BODY, &err);
    if (!body) {
        transport_error(r, msg, err, true, error);
        return NULL;
    }
    if (soup_message_get_status(msg) != SOUP_STATUS_OK) {
        status_error(r, msg, body, rel, 0, error);
        return NULL;
    }
    return g_steal_pointer(&body);
}

/* ---- /v1/models: the connection test ---------------------------------------------------- */

/* A hyocr serve says which release it serves: its prompts and penalty are sent then. */
static void learn_version(hyocr_remote *r, JsonNode *data, const char *model)
{
    JsonArray *a = json_node_get_array(data);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *m = json_array_get_element(a, i);
        JsonObject *o = JSON_NODE_HOLDS_OBJECT(m) ? json_node_get_object(m) : NULL;
        if (!o || g_strcmp0(hyocr_json_str(o, "id"), model)) continue;
        const char *v = hyocr_json_str(o, "hyocr_model_version");
        if (!g_strcmp0(v, "1.0")) g_atomic_int_set(&r->version, HYOCR_MODEL_VERSION_1_0);
        else if (!g_strcmp0(v, "1.5")) g_atomic_int_set(&r->version, HYOCR_MODEL_VERSION_1_5);
    }
}

static char **model_names(hyocr_remote *r, GBytes *body, GError **error)
{
    gsize len = 0;
    const char *data = g_bytes_get_data(body, &len);
    g_autoptr(JsonNode) root = hyocr_json_parse(data, len, 32, NULL, NULL);
    JsonNode *d = root && JSON_NODE_HOLDS_OBJECT(root) ? json_object_get_member(json_node_get_object(root), "data")
                                                       : NULL;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; d && JSON_NODE_HOLDS_ARRAY(d) && i < json_array_get_length(json_node_get_array(d)); i++) {
        JsonNode *m = json_array_get_element(json_node_get_array(d), i);
        const char *id = JSON_NODE_HOLDS_OBJECT(m) ? hyocr_json_str(json_node_get_object(m), "id") : NULL;
        if (id && g_utf8_validate(id, -1, NULL)) g_ptr_array_add(names, g_strdup(id));
    }
    if (!d || !JSON_NODE_HOLDS_ARRAY(d) || names->len == 0) {
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NOT_OPENAI,
                    _("%s answers /v1/models, but not with a list of models: is it an OpenAI-compatible server "
                      "(vLLM, hyocr serve)?"), r->name);
        return NULL;
    }
    g_ptr_array_add(names, NULL);
    g_mutex_lock(&r->lock);
    g_autofree char *model = g_strdup(r->model ? r->model : names->pdata[0]);
    g_mutex_unlock(&r->lock);
    learn_version(r, d, model);
    return (char **)g_ptr_array_free(g_steal_pointer(&names), FALSE);
}

bool hyocr_remote_check(hyocr_remote *r, char ***models, GError **error)
{
    if (models) *models = NULL;
    g_autoptr(GBytes) body = get_small(r, "/v1/models", error);
    if (!body) return false;
    g_auto(GStrv) names = model_names(r, body, error);
    if (!names) return false;
    g_mutex_lock(&r->lock);
    if (!r->model) r->model = g_strdup(names[0]);
    bool known = g_strv_contains((const char *const *)names, r->model);
    g_autofree char *model = g_strdup(r->model);
    g_mutex_unlock(&r->lock);
    if (!known) {
        g_autofree char *list = g_strjoinv(", ", names);
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MODEL,
                    _("%s does not serve the model “%s”; it serves: %s"), r->name, model, list);
        return false;
    }
    if (models) *models = g_steal_pointer(&names);
    return true;
}

/* ---- /metrics: a hyocr serve's figures ---------------------------------------------------- */

/* The value of a Prometheus sample named name (any labels), or false. */
static bool metric(const char *text, const char *name, double *out)
{
    size_t n = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, name, n) || (l[n] != '{' && l[n] != ' ')) continue;
        const char *v = l[n] == '{' ? strchr(l + n, '}') : l + n;
        if (!v) return false;
        v += v[0] == '}';
        char *end;
        *out = g_ascii_strtod(v, &end);
        return end != v;
    }
    return false;
}

bool hyocr_remote_get_metrics(hyocr_remote *r, hyocr_remote_metrics *out, GError **error)
{
    memset(out, 0, sizeof *out);
    g_autoptr(GBytes) body = get_small(r, "/metrics", error);
    if (!body) return false;
    g_autofree char *text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
    double used, kv, running, waiting;
    if (!metric(text, "hyocr:gpu_memory_used_bytes", &used) || !metric(text, "hyocr:gpu_memory_kv_used_bytes", &kv) ||
        !metric(text, "hyocr:num_requests_running", &running) ||
        !metric(text, "hyocr:num_requests_waiting", &waiting)) {
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NOT_OPENAI,
                    _("%s is not a hyocr server: its /metrics has no hyocr figures"), r->name);
        return false;
    }
    *out = (hyocr_remote_metrics){ .memory_used = (int64_t)used, .kv_used = (int64_t)kv, .running = (int)running,
                                   .waiting = (int)waiting };
    return true;
}

/* ---- a job's request ------------------------------------------------------------------- */

/* The page as the local engine decodes it: a document's page rendered, EXIF
 * applied by the readers, max_side by the readers or here for decoded pixels. */
static hyocr_image *page_image(const hyocr_job_params *jp, const hyocr_image **src, GError **error)
{
    hyocr_image_options opts = { .max_side = jp->max_side };
    hyocr_image *owned = NULL;
    if (jp->image) {
        *src = jp->image;
        return NULL;
    }
    if (jp->document) {
        hyocr_render_options ro = { .max_side = jp->max_side };
        owned = hyocr_document_render(jp->document, jp->page, &ro, error);
    } else if (jp->image_data) {
        gsize len = 0;
        const void *data = g_bytes_get_data(jp->image_data, &len);
        owned = hyocr_image_load_from_memory(data, len, jp->image_path ? jp->image_path : "image", &opts, error);
    } else if (jp->image_path) {
        owned = hyocr_image_load(jp->image_path, &opts, error);
    } else {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("job has no image (path, data, decoded or document)"));
    }
    *src = owned;
    return owned;
}

static char *image_url(hyocr_remote_job *job, GError **error)
{
    const hyocr_image *src = NULL;
    g_autoptr(hyocr_image) owned G_GNUC_UNUSED = page_image(&job->params, &src, error);   /* src's owner */
    if (!src) return NULL;
    hyocr_image *small = NULL;
    if (!hyocr_image_fit(src, job->params.max_side, 0, &small, error)) return NULL;
    g_autoptr(hyocr_image) fitted G_GNUC_UNUSED = small;   /* freed with the scope */
    if (small) src = small;
    job->end.res.image_width = src->width;
    job->end.res.image_height = src->height;
    g_autoptr(GBytes) png = hyocr_image_encode_png(src, error);
    if (!png) return NULL;
    gsize len = 0;
    const guchar *data = g_bytes_get_data(png, &len);
    g_autofree char *b64 = g_base64_encode(data, len);
    return g_strconcat("data:image/png;base64,", b64, NULL);
}

static void add_member_int(JsonBuilder *b, const char *k, gint64 v)
{
    json_builder_set_member_name(b, k);
    json_builder_add_int_value(b, v);
}

static void add_member_double(JsonBuilder *b, const char *k, double v)
{
    json_builder_set_member_name(b, k);
    json_builder_add_double_value(b, v);
}

/* Tencent's conversation, as hyocr serve and vLLM's chat template render it
 * into the local prompt: an empty system message, then the image and the task. */
static void add_messages(JsonBuilder *b, const char *url, const char *prompt)
{
    json_builder_set_member_name(b, "messages");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "role");
    json_builder_add_string_value(b, "system");
    json_builder_set_member_name(b, "content");
    json_builder_add_string_value(b, "");
    json_builder_end_object(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "role");
    json_builder_add_string_value(b, "user");
    json_builder_set_member_name(b, "content");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "type");
    json_builder_add_string_value(b, "image_url");
    json_builder_set_member_name(b, "image_url");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "url");
    json_builder_add_string_value(b, url);
    json_builder_end_object(b);
    json_builder_end_object(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "type");
    json_builder_add_string_value(b, "text");
    json_builder_set_member_name(b, "text");
    json_builder_add_string_value(b, prompt);
    json_builder_end_object(b);
    json_builder_end_array(b);
    json_builder_end_object(b);
    json_builder_end_array(b);
}

/* Decoding as local: greedy unless the job samples; the job's penalty, else
 * the model's. 1.5 ships no penalty in generation_config, and Tencent's clients
 * send 1.08, as the local engine applies (a server would use 1.0); 1.0's
 * generation_config has its 1.03, which the server applies when it is left out. */
static void add_sampling(JsonBuilder *b, const hyocr_job_params *jp, hyocr_model_version version)
{
    add_member_int(b, "max_tokens", jp->max_new_tokens);
    add_member_int(b, "max_completion_tokens", jp->max_new_tokens);
    bool sample = jp->temperature > 0;
    add_member_double(b, "temperature", sample ? jp->temperature : 0.0);
    if (sample) {
        if (jp->top_p > 0 && jp->top_p < 1) add_member_double(b, "top_p", jp->top_p);
        if (jp->top_k > 0) add_member_int(b, "top_k", jp->top_k);
        /* the JSON integer range OpenAI's seed takes */
        add_member_int(b, "seed", (gint64)(jp->seed & G_MAXINT64));
    }
    float penalty = jp->repetition_penalty >= 0 ? jp->repetition_penalty
                    : version == HYOCR_MODEL_VERSION_1_5 ? 1.08f : 0.0f;
    if (penalty > 0) {
        char rp[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(rp, sizeof rp, "%g", penalty);   /* 1.08, not 1.0800000429 */
        add_member_double(b, "repetition_penalty", g_ascii_strtod(rp, NULL));
    }
    if (jp->ignore_eos) {
        json_builder_set_member_name(b, "ignore_eos");
        json_builder_add_boolean_value(b, TRUE);
    }
}

/* The job's stop strings and tokens, in the names OpenAI and vLLM give them. */
static void add_stops(JsonBuilder *b, const hyocr_job_params *jp)
{
    if (jp->stop && jp->stop[0]) {
        json_builder_set_member_name(b, "stop");
        json_builder_begin_array(b);
        for (int i = 0; jp->stop[i]; i++) json_builder_add_string_value(b, jp->stop[i]);
        json_builder_end_array(b);
    }
    if (jp->stop_included) {
        json_builder_set_member_name(b, "include_stop_str_in_output");
        json_builder_add_boolean_value(b, TRUE);
    }
    if (jp->n_stop_token_ids > 0) {
        json_builder_set_member_name(b, "stop_token_ids");
        json_builder_begin_array(b);
        for (int i = 0; i < jp->n_stop_token_ids; i++) json_builder_add_int_value(b, jp->stop_token_ids[i]);
        json_builder_end_array(b);
    }
}

/* logprobs, with the tokens named by id (vLLM's return_tokens_as_token_ids): a token's
 * text may be a piece of a character, which no string names. */
static void add_logprobs(JsonBuilder *b, const hyocr_job_params *jp)
{
    if (!jp->logprobs) return;
    json_builder_set_member_name(b, "logprobs");
    json_builder_add_boolean_value(b, TRUE);
    add_member_int(b, "top_logprobs", jp->top_logprobs);
    json_builder_set_member_name(b, "return_tokens_as_token_ids");
    json_builder_add_boolean_value(b, TRUE);
}

hyocr_model_version hyocr_remote_model_version(hyocr_remote *r)
{
    return (hyocr_model_version)g_atomic_int_get(&r->version);
}

static GBytes *request_body(hyocr_remote *r, hyocr_remote_job *job, const char *model, GError **error)
{
    const hyocr_job_params *jp = &job->params;
    hyocr_model_version version = hyocr_remote_model_version(r);
    g_autofree char *prompt = hyocr_task_prompt(jp->task, version, jp->fields, jp->custom_prompt, error);
    if (!prompt) return NULL;
    g_autofree char *url = image_url(job, error);
    if (!url) return NULL;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "model");
    json_builder_add_string_value(b, model);
    add_messages(b, url, prompt);
    add_sampling(b, jp, version);
    add_stops(b, jp);
    json_builder_set_member_name(b, "stream");
    json_builder_add_boolean_value(b, TRUE);
    json_builder_set_member_name(b, "stream_options");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "include_usage");
    json_builder_add_boolean_value(b, TRUE);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "return_token_ids");
    json_builder_add_boolean_value(b, TRUE);
    add_logprobs(b, jp);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    char *json = hyocr_json_to_data(root, false);
    return g_bytes_new_take(json, strlen(json));
}

/* ---- a job's events -------------------------------------------------------------------- */

static double ms_since(gint64 t0)
{
    return (double)(g_get_monotonic_time() - t0) / 1000.0;
}

static void emit(hyocr_remote_job *job, hyocr_event *ev)
{
    if (!job->params.on_event) return;
    ev->elapsed_ms = ms_since(job->t0);
    g_mutex_lock(&job->remote->event_lock);
    job->params.on_event(ev, job->params.user_data);
    g_mutex_unlock(&job->remote->event_lock);
}

typedef struct {
    hyocr_remote_job   *job;
    hyocr_remote_reply *reply;
} piece_ctx;

static void on_piece(const char *piece, size_t len, const int32_t *ids, int n_ids, const hyocr_token_logprobs *lps,
                     int n_lps, void *data)
{
    piece_ctx *pc = data;
    hyocr_remote_job *job = pc->job;
    if (!job->t_first) job->t_first = g_get_monotonic_time();
    int n = pc->reply->token_ids->len ? (int)pc->reply->token_ids->len : pc->reply->n_chunks;
    hyocr_event ev = { .type = HYOCR_EVENT_TOKEN, .token = n_ids == 1 ? ids[0] : -1, .piece = piece,
                       .piece_len = len, .n_generated = n, .batch_size = 1,
                       .logprobs = n_ids == 1 && n_lps == 1 ? lps : NULL };
    emit(job, &ev);
}

/* Why the answer ended. A "stop" is the job's own stop string or token only where vLLM's
 * stop_reason names one of the job's: vLLM also names the generation_config EOS it stopped
 * on (1.5's 120020) there, an end of sequence like any other. */
static hyocr_stop_reason stop_reason(const hyocr_remote_reply *reply, const hyocr_job_params *jp, int *stop_string)
{
    const char *finish = reply->finish_reason;
    if (!finish) return HYOCR_STOP_NONE;
    if (!strcmp(finish, "length")) return HYOCR_STOP_MAX_NEW_TOKENS;
    if (!strcmp(finish, "abort")) return HYOCR_STOP_CANCELLED;
    for (int i = 0; reply->stop_text && jp->stop && jp->stop[i]; i++)
        if (!strcmp(jp->stop[i], reply->stop_text)) {
            *stop_string = i + 1;
            return HYOCR_STOP_REQUESTED;
        }
    if (reply->has_stop_id && reply->stop_id >= 0 && reply->stop_id <= G_MAXINT32 &&
        hyocr_stop_token_is(jp->stop_token_ids, jp->n_stop_token_ids, (int32_t)reply->stop_id))
        return HYOCR_STOP_REQUESTED;
    return HYOCR_STOP_EOS;
}

/* The answer into the result, cleaned up as a local job's is. */
static void take_answer(hyocr_remote *r, hyocr_remote_job *job, hyocr_remote_reply *reply)
{
    hyocr_job_result *res = &job->end.res;
    res->raw_text_len = reply->text->len;
    res->raw_text = g_strndup(reply->text->str, reply->text->len);
    res->text = hyocr_clean_repeated_substrings(reply->text->str, reply->text->len, hyocr_remote_model_version(r),
                                                &res->text_len);
    if (reply->token_ids->len) res->token_ids = g_array_ref(reply->token_ids);
    if (job->params.logprobs) res->logprobs = g_array_ref(reply->logprobs);
    res->prompt_tokens = reply->prompt_tokens > 0 ? reply->prompt_tokens : 0;
    res->stop_reason = stop_reason(reply, &job->params, &res->stop_string);
    res->repetition_penalty = job->params.repetition_penalty;
    res->timings.total_ms = ms_since(job->t0);
    if (job->t_first) res->timings.first_token_ms = (double)(job->t_first - job->t0) / 1000.0;
    double decode_s = (res->timings.total_ms - res->timings.first_token_ms) / 1000.0;
    int n = reply->completion_tokens >= 0 ? reply->completion_tokens
            : reply->token_ids->len          ? (int)reply->token_ids->len
                                             : reply->n_chunks;
    job->n_generated = n;
    res->timings.decode_ms = decode_s * 1000.0;
    if (decode_s > 0 && n > 1) res->timings.decode_tokens_per_s = (double)(n - 1) / decode_s;
}

/* ---- a job on the wire ----------------------------------------------------------------- */

/* Waits s seconds unless the job is cancelled first. */
static bool sleep_cancellable(GCancellable *c, double s)
{
    GPollFD pfd;
    if (g_cancellable_make_pollfd(c, &pfd)) {
        g_poll(&pfd, 1, (gint)(s * 1000));
        g_cancellable_release_fd(c);
    }
    return !g_cancellable_is_cancelled(c);
}

/* Retry-After: seconds, or an HTTP date; else exponential backoff from half a second. */
static double retry_delay(hyocr_remote *r, SoupMessage *msg, int attempt)
{
    const char *ra = soup_message_headers_get_one(soup_message_get_response_headers(msg), "Retry-After");
    double d = -1;
    if (ra) {
        char *end;
        guint64 v = g_ascii_strtoull(ra, &end, 10);
        if (end != ra && *end == 0) d = (double)v;
        g_autoptr(GDateTime) when = end == ra ? soup_date_time_new_from_http_string(ra) : NULL;
        if (when) {
            g_autoptr(GDateTime) now = g_date_time_new_now_utc();
            d = MAX(0.0, (double)g_date_time_difference(when, now) / 1e6);
        }
    }
    if (d < 0) d = 0.5 * (double)(1u << MIN(attempt, 16));
    return MIN(d, r->retry_max_s);
}

static bool read_stream(hyocr_remote *r, hyocr_remote_job *job, SoupMessage *msg, GInputStream *in, GError **error)
{
    hyocr_remote_reply reply;
    piece_ctx pc = { job, &reply };
    hyocr_remote_reply_init(&reply, r->name, on_piece, &pc);
    const char *type = soup_message_headers_get_content_type(soup_message_get_response_headers(msg), NULL);
    bool ok = true;
    GError *err = NULL;
    if (type && !g_ascii_strcasecmp(type, "application/json")) {
        /* a server that answered without streaming */
        g_autoptr(GBytes) body = read_small(in, job->cancel, REMOTE_MAX_BODY, &err);
        if (!body) transport_error(r, msg, err, true, error), ok = false;
        else ok = hyocr_remote_reply_parse_json(&reply, g_bytes_get_data(body, NULL), g_bytes_get_size(body), error);
    } else if (!type || g_ascii_strcasecmp(type, "text/event-stream")) {
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NOT_OPENAI,
                    _("%s answered with %s, not an event stream: is it an OpenAI-compatible server (vLLM, hyocr "
                      "serve)?"), r->name, type ? type : _("no content type"));
        ok = false;
    } else {
        char buf[16384];
        for (;;) {
            gssize n = g_input_stream_read(in, buf, sizeof buf, job->cancel, &err);
            if (n < 0) {
                transport_error(r, msg, err, true, error);
                ok = false;
                break;
            }
            if (n == 0) {
                ok = hyocr_remote_reply_end(&reply, error);
                break;
            }
            if (!hyocr_remote_reply_feed(&reply, buf, (size_t)n, error)) {
                ok = false;
                break;
            }
            if (reply.done) break;
        }
    }
    g_clear_error(&err);
    if (ok && job->params.logprobs && reply.logprobs->len != reply.token_ids->len) {
        g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_NOT_OPENAI,
                    _("%s sent log-probabilities for %u of the answer's %u tokens: it may not return them by "
                      "token id, as vLLM and hyocr serve do"), r->name, reply.logprobs->len, reply.token_ids->len);
        ok = false;
    }
    if (ok) take_answer(r, job, &reply);
    else if (reply.token_ids->len) job->end.res.token_ids = g_array_ref(reply.token_ids);
    hyocr_remote_reply_clear(&reply);
    return ok;
}

/* Sends the request (again while the server says 503 or 429) and reads the answer. */
static bool send_job(hyocr_remote *r, SoupSession *s, hyocr_remote_job *job, GBytes *body, GError **error)
{
    for (int attempt = 0;; attempt++) {
        g_autoptr(SoupMessage) msg = message_new(r, "POST", "/v1/chat/completions");
        soup_message_headers_replace(soup_message_get_request_headers(msg), "Accept", "text/event-stream");
        soup_message_set_request_body_from_bytes(msg, "application/json", body);
        g_autoptr(GError) err = NULL;
        g_atomic_int_inc(&r->in_flight);
        g_autoptr(GInputStream) in = soup_session_send(s, msg, job->cancel, &err);
        bool ok = false, retry = false;
        if (!in) {
            transport_error(r, msg, err, false, error);
        } else if (soup_message_get_status(msg) == SOUP_STATUS_OK) {
            ok = read_stream(r, job, msg, in, error);
        } else {
            guint st = soup_message_get_status(msg);
            g_autoptr(GBytes) eb = read_small(in, job->cancel, REMOTE_MAX_SMALL_BODY, NULL);
            retry = (st == 503 || st == 429) && attempt < r->max_retries;
            if (!retry) status_error(r, msg, eb, "/v1/chat/completions", attempt, error);
        }
        /* closing before the end drops the connection: the server stops the job */
        if (in) g_input_stream_close(in, NULL, NULL);
        g_atomic_int_dec_and_test(&r->in_flight);
        if (!retry) return ok;
        if (!sleep_cancellable(job->cancel, retry_delay(r, msg, attempt))) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled"));
            return false;
        }
    }
}

/* ---- jobs ------------------------------------------------------------------------------- */

static void job_free(hyocr_remote_job *job)
{
    if (job->user_cancel) {
        g_cancellable_disconnect(job->user_cancel, job->user_cancel_id);
        g_object_unref(job->user_cancel);
    }
    g_object_unref(job->cancel);
    hyocr_job_copies_clear(&job->own);
    hyocr_job_end_clear(&job->end);
    g_free(job);
}

hyocr_remote_job *hyocr_remote_job_ref(hyocr_remote_job *job)
{
    g_atomic_int_inc(&job->ref);
    return job;
}

void hyocr_remote_job_unref(hyocr_remote_job *job)
{
    if (job && g_atomic_int_dec_and_test(&job->ref)) job_free(job);
}

void hyocr_remote_job_cancel(hyocr_remote_job *job)
{
    g_cancellable_cancel(job->cancel);
}

bool hyocr_remote_job_is_done(hyocr_remote_job *job)
{
    return hyocr_job_end_is_done(&job->end);
}

bool hyocr_remote_job_wait(hyocr_remote_job *job, hyocr_job_result *out, GError **error)
{
    return hyocr_job_end_wait(&job->end, out, error);
}

/* The end event, then waiters wake; the worker's reference goes. */
static void job_end(hyocr_remote *r, hyocr_remote_job *job, GError *err)
{
    bool cancelled = err ? g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED)
                         : job->end.res.stop_reason == HYOCR_STOP_CANCELLED;
    if (cancelled && !err) err = g_error_new(HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled"));
    if (err && !job->end.res.text) {
        job->end.res.text = g_strdup("");
        job->end.res.raw_text = g_strdup("");
    }
    if (cancelled) job->end.res.stop_reason = HYOCR_STOP_CANCELLED;
    job->end.res.error = err;
    hyocr_event ev = { .stop_reason = job->end.res.stop_reason, .stop_string = job->end.res.stop_string,
                       .prompt_tokens = job->end.res.prompt_tokens, .n_generated = job->n_generated };
    if (cancelled) ev.type = HYOCR_EVENT_CANCELLED;
    else if (err) {
        ev.type = HYOCR_EVENT_ERROR;
        ev.error = err;
    } else {
        ev.type = HYOCR_EVENT_DONE;
        ev.piece = job->end.res.text;
        ev.piece_len = job->end.res.text_len;
    }
    emit(job, &ev);
    g_mutex_lock(&r->lock);
    g_ptr_array_remove(r->live, job);
    g_mutex_unlock(&r->lock);
    hyocr_job_end_mark_done(&job->end);
    hyocr_remote_job_unref(job);
}

static void run_job(hyocr_remote *r, SoupSession *s, hyocr_remote_job *job)
{
    GError *err = NULL;
    job->t0 = g_get_monotonic_time();
    g_autofree char *model = g_strdup(hyocr_remote_model(r));
    if (g_cancellable_is_cancelled(job->cancel)) {
        g_set_error(&err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("cancelled"));
    } else if (!model) {
        /* no name given and no check run: the server's first model, as a check learns it */
        char **names = NULL;
        if (hyocr_remote_check(r, &names, &err)) model = g_strdup(hyocr_remote_model(r));
        g_strfreev(names);
    }
    if (!err) {
        g_autoptr(GBytes) body = request_body(r, job, model, &err);
        if (body) send_job(r, s, job, body, &err);
    }
    job_end(r, job, err);
}

static gpointer worker_main(gpointer data)
{
    hyocr_remote *r = data;
    g_autoptr(SoupSession) s = session_new(r);
    for (;;) {
        g_mutex_lock(&r->lock);
        while (!r->quit && g_queue_is_empty(&r->queue)) g_cond_wait(&r->cond, &r->lock);
        hyocr_remote_job *job = g_queue_pop_head(&r->queue);
        g_mutex_unlock(&r->lock);
        if (!job) break;
        run_job(r, s, job);
    }
    return NULL;
}

static void on_user_cancel(GCancellable *user, gpointer data)
{
    (void)user;
    g_cancellable_cancel(((hyocr_remote_job *)data)->cancel);
}

hyocr_remote_job *hyocr_remote_submit(hyocr_remote *r, const hyocr_job_params *params, GError **error)
{
    if (params->rendered_chat || params->on_logits) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("a job on a server takes a task and an image (no rendered conversation, no logits)"));
        return NULL;
    }
    if (!hyocr_job_params_check_logprobs(params, error) || !hyocr_stop_strings_check(params->stop, error) ||
        !hyocr_stop_tokens_check(params->stop_token_ids, params->n_stop_token_ids, 0, error))
        return NULL;
    hyocr_remote_job *job = g_new0(hyocr_remote_job, 1);
    job->ref = 2;   /* the caller's and the worker's */
    job->remote = r;
    hyocr_job_end_init(&job->end);
    job->cancel = g_cancellable_new();
    hyocr_job_params_copy(&job->params, &job->own, params);
    job->params.cancellable = NULL;
    if (params->cancellable) {
        job->user_cancel = g_object_ref(params->cancellable);
        job->user_cancel_id = g_cancellable_connect(job->user_cancel, G_CALLBACK(on_user_cancel), job, NULL);
    }
    g_mutex_lock(&r->lock);
    bool quit = r->quit;
    if (!quit) {
        g_queue_push_tail(&r->queue, job);
        g_ptr_array_add(r->live, job);
        g_cond_signal(&r->cond);
    }
    g_mutex_unlock(&r->lock);
    if (quit) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED, _("the connection to the server is being closed"));
        job->ref = 1;
        hyocr_remote_job_unref(job);
        return NULL;
    }
    return job;
}

void hyocr_remote_cancel(hyocr_remote *r)
{
    g_mutex_lock(&r->lock);
    for (guint i = 0; i < r->live->len; i++) hyocr_remote_job_cancel(r->live->pdata[i]);
    g_mutex_unlock(&r->lock);
}

/* ---- the remote ----------------------------------------------------------------------- */

hyocr_remote *hyocr_remote_new(const hyocr_remote_params *p, GError **error)
{
    g_autoptr(hyocr_remote) r = g_new0(hyocr_remote, 1);
    r->ref = 1;
    g_mutex_init(&r->lock);
    g_cond_init(&r->cond);
    g_mutex_init(&r->event_lock);
    g_queue_init(&r->queue);
    r->live = g_ptr_array_new();
    if (!parse_url(r, p->url, error)) return NULL;
    if (p->api_key && *p->api_key) r->auth = g_strconcat("Bearer ", p->api_key, NULL);
    if (p->trusted_certificate) {
        g_autoptr(GError) err = NULL;
        r->trusted = g_tls_certificate_new_from_file(p->trusted_certificate, &err);
        if (!r->trusted) {
            g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS, _("%s: not a PEM certificate: %s"),
                        p->trusted_certificate, err->message);
            return NULL;
        }
    }
    if (p->trusted_fingerprint && *p->trusted_fingerprint) {
        r->fingerprint = fingerprint_normal(p->trusted_fingerprint);
        if (!r->fingerprint) {
            g_set_error(error, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS,
                        _("“%s” is not a certificate's SHA-256 fingerprint (64 hexadecimal digits)"),
                        p->trusted_fingerprint);
            return NULL;
        }
    }
    r->model = p->model && *p->model ? g_strdup(p->model) : NULL;
    r->timeout_s = p->timeout_s > 0 ? (unsigned)p->timeout_s : REMOTE_DEFAULT_TIMEOUT_S;
    r->max_retries = p->max_retries >= 0 ? p->max_retries : REMOTE_DEFAULT_RETRIES;
    r->retry_max_s = p->retry_max_s > 0 ? p->retry_max_s : REMOTE_DEFAULT_RETRY_MAX_S;
    r->version = (gint)p->version;
    r->n_workers = p->concurrency > 0 ? p->concurrency : REMOTE_DEFAULT_CONCURRENCY;
    r->workers = g_new0(GThread *, r->n_workers);
    for (int i = 0; i < r->n_workers; i++) r->workers[i] = g_thread_new("hyocr-remote", worker_main, r);
    return g_steal_pointer(&r);
}

hyocr_remote *hyocr_remote_ref(hyocr_remote *r)
{
    g_atomic_int_inc(&r->ref);
    return r;
}

void hyocr_remote_unref(hyocr_remote *r)
{
    if (!r || !g_atomic_int_dec_and_test(&r->ref)) return;
    g_free(r->workers);
    g_ptr_array_unref(r->live);
    if (r->base) g_uri_unref(r->base);
    g_free(r->name);
    if (r->auth) memset(r->auth, 0, strlen(r->auth));
    g_free(r->auth);
    g_clear_object(&r->trusted);
    g_free(r->fingerprint);
    g_free(r->model);
    g_mutex_clear(&r->lock);
    g_cond_clear(&r->cond);
    g_mutex_clear(&r->event_lock);
    g_free(r);
}

void hyocr_remote_free(hyocr_remote *r)
{
    if (!r) return;
    g_mutex_lock(&r->lock);
    r->quit = true;
    for (guint i = 0; i < r->live->len; i++) hyocr_remote_job_cancel(r->live->pdata[i]);
    g_cond_broadcast(&r->cond);
    g_mutex_unlock(&r->lock);
    for (int i = 0; i < r->n_workers; i++)
        if (r->workers[i]) g_thread_join(r->workers[i]);
    hyocr_remote_unref(r);
}
