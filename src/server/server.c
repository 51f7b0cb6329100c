/* hyocr serve — the server: binds the port first (a taken port fails at once),
 * then loads and warms up the engine on a thread while /health answers 503;
 * routes /v1/chat/completions, /v1/models, /health, /metrics and the web page
 * (web.c: /, /web/…); checks the key (Bearer, as vLLM; for /v1/… and the page's
 * /web/api/…, not for the page's files, which ask for it) and the body's size
 * before the body is read; answers other origins as vLLM does (cors.c); logs one
 * line per request; and on SIGTERM (or SIGINT) drains: new requests get 503,
 * the ones in flight finish, then it exits. A second signal cancels them. */
#include "error.h"
#include "server.h"
#include "json.h"
#include "hyocr-build-config.h"
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef enum { STATE_LOADING, STATE_READY, STATE_DRAINING } server_state;

struct hyocr_server {
    const hyocr_server_options *opt;
    SoupServer    *soup;
    GMainLoop     *loop;
    GMainContext  *main;
    hyocr_engine  *engine;       /* NULL while loading */
    server_state   state;
    int            in_flight;    /* requests held (completions, parses) */
    int            exit_status;
    int            signals;      /* SIGTERM/SIGINT seen */
    hyocr_metrics *metrics;
    gint64         created;      /* unix seconds */
    GThread       *loader;
    bool           loopback;     /* listening on this machine only: the Host header is checked */
};

/* ---- what the other files read ------------------------------------------------------------ */

hyocr_engine *hyocr_server_engine(hyocr_server *s) { return s->engine; }
hyocr_metrics *hyocr_server_metrics(hyocr_server *s) { return s->metrics; }
int hyocr_server_max_side(hyocr_server *s) { return s->opt->max_side; }
int hyocr_server_max_queue(hyocr_server *s) { return s->opt->engine.max_queue; }
int64_t hyocr_server_max_request_size(hyocr_server *s) { return s->opt->max_request_size; }

const char *hyocr_server_state_name(hyocr_server *s)
{
    return s->state == STATE_LOADING ? "loading" : s->state == STATE_READY ? "ready" : "draining";
}

const char *hyocr_server_model_name(hyocr_server *s)
{
    return s->opt->served_names[0];
}

static void maybe_quit(hyocr_server *s)
{
    if (s->state == STATE_DRAINING && s->in_flight == 0) g_main_loop_quit(s->loop);
}

void hyocr_server_hold(hyocr_server *s)
{
    s->in_flight++;
}

void hyocr_server_release(hyocr_server *s)
{
    s->in_flight--;
    maybe_quit(s);
}

void hyocr_server_note(hyocr_server *s, SoupServerMessage *msg, int prompt_tokens, int gen_tokens,
                       const char *finish_reason)
{
    (void)s;
    g_object_set_data_full(G_OBJECT(msg), "hyocr-note",
                           g_strdup_printf(_("; %d prompt + %d completion tokens, %s"), prompt_tokens, gen_tokens,
                                           finish_reason),
                           g_free);
}

/* ---- one line per request ------------------------------------------------------------------- */

typedef struct {
    gint64      arrival;      /* monotonic µs */
    char       *host;         /* the client's address (gone with the connection) */
    GByteArray *body;         /* what was read of the body, up to the limit */
    bool        too_big;
    guint       sent_status;  /* the status line that went out, 0 before the headers */
} request_state;

static void request_state_free(request_state *r)
{
    if (r->body) g_byte_array_unref(r->body);
    g_free(r->host);
    g_free(r);
}

static request_state *state_of(SoupServerMessage *msg)
{
    return g_object_get_data(G_OBJECT(msg), "hyocr-request");
}

/* The status the client was sent: a stream its client left is logged with the 200 it got,
 * not the 500 libsoup sets on the message once its connection is gone; a client gone before
 * any answer with 499, nginx's number for it — no server error either way. */
static void wrote_headers(SoupServerMessage *msg, gpointer data)
{
    (void)data;
    request_state *r = state_of(msg);
    if (r) r->sent_status = soup_server_message_get_status(msg);
}

static void log_request(SoupServer *soup, SoupServerMessage *msg, gpointer data)
{
    (void)soup;
    bool aborted = GPOINTER_TO_INT(data);
    request_state *r = state_of(msg);
    guint status = r && r->sent_status ? r->sent_status : aborted ? 499 : soup_server_message_get_status(msg);
    double secs = r ? (double)(g_get_monotonic_time() - r->arrival) / 1e6 : 0;
    const char *note = g_object_get_data(G_OBJECT(msg), "hyocr-note");
    const char *host = r && r->host ? r->host : "?";
    fprintf(stderr, "hyocr serve: %s \"%s %s\" %u %.3f s%s%s\n", host,
            soup_server_message_get_method(msg), g_uri_get_path(soup_server_message_get_uri(msg)),
            status, secs, note ? note : "",
            aborted ? _(" (the connection closed before the response was complete)") : "");
    fflush(stderr);
}

/* ---- before the body: key, size --------------------------------------------------------------- */

/* Constant time in the key's length: the comparison says nothing of where it differs. */
static bool key_matches(const char *want, const char *got)
{
    size_t n = strlen(want), m = got ? strlen(got) : 0;
    unsigned diff = (unsigned)(n ^ m);
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)want[i] ^ (unsigned char)(i < m ? got[i] : 0);
    return diff == 0;
}

static bool authorized(hyocr_server *s, SoupServerMessage *msg)
{
    if (!s->opt->api_key) return true;
    const char *auth = soup_message_headers_get_one(soup_server_message_get_request_headers(msg), "Authorization");
    if (!auth || g_ascii_strncasecmp(auth, "Bearer ", 7) != 0) return false;
    const char *key = auth + 7;
    while (*key == ' ') key++;
    return key_matches(s->opt->api_key, key);
}

static void on_chunk(SoupServerMessage *msg, GBytes *chunk, gpointer data)
{
    hyocr_server *s = data;
    request_state *r = state_of(msg);
    gsize n = g_bytes_get_size(chunk);
    if (r->too_big || (int64_t)(r->body->len + n) > s->opt->max_request_size) {
        r->too_big = true;
        g_byte_array_set_size(r->body, 0);
        return;
    }
    g_byte_array_append(r->body, g_bytes_get_data(chunk, NULL), (guint)n);
}

static void too_large(hyocr_server *s, SoupServerMessage *msg)
{
    hyocr_api_error e = { 0 };
    hyocr_api_error_set(&e, 413, NULL, _("the request body is larger than the server's limit of %lld bytes "
                                         "(--max-request-size)"), (long long)s->opt->max_request_size);
    e.code = "request_too_large";
    hyocr_api_error_reply(msg, &e);
    hyocr_api_error_clear(&e);
}

static void early(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query, gpointer data)
{
    (void)soup;
    (void)query;
    hyocr_server *s = data;
    request_state *r = g_new0(request_state, 1);
    r->arrival = g_get_monotonic_time();
    r->host = g_strdup(soup_server_message_get_remote_host(msg));
    r->body = g_byte_array_new();
    g_object_set_data_full(G_OBJECT(msg), "hyocr-request", r, (GDestroyNotify)request_state_free);
    g_signal_connect(msg, "wrote-headers", G_CALLBACK(wrote_headers), NULL);
    if (!hyocr_host_check(s->opt, s->loopback, msg)) return;   /* first: a rebound name gets nothing */
    if (hyocr_cors_applies(path)) {
        if (hyocr_cors_preflight(s->opt, msg)) return;   /* before the key: browsers send none with it */
        hyocr_cors_answer(s->opt, msg);                  /* on every answer, errors too */
    }
    if ((g_str_has_prefix(path, "/v1/") || g_str_has_prefix(path, "/web/api/")) && !authorized(s, msg)) {
        hyocr_api_error e = { 0 };
        hyocr_api_error_set(&e, 401, NULL, _("a valid API key is needed: send the header "
                                             "\"Authorization: Bearer KEY\""));
        e.code = "invalid_api_key";
        hyocr_api_error_reply(msg, &e);
        hyocr_api_error_clear(&e);
        return;
    }
    SoupMessageHeaders *h = soup_server_message_get_request_headers(msg);
    if (soup_message_headers_get_encoding(h) == SOUP_ENCODING_CONTENT_LENGTH &&
        soup_message_headers_get_content_length(h) > (goffset)s->opt->max_request_size) {
        too_large(s, msg);   /* refused before a byte of the body is read */
        return;
    }
    /* the body is gathered here, to the limit: a chunked body longer than that is not kept */
    soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
    g_signal_connect(msg, "got-chunk", G_CALLBACK(on_chunk), s);
}

/* ---- plain routes ------------------------------------------------------------------------------- */

static void reply_error(SoupServerMessage *msg, guint status, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void reply_error(SoupServerMessage *msg, guint status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    hyocr_api_error e = { 0 };
    hyocr_api_error_set(&e, status, NULL, "%s", text);
    if (status == 503) e.retry_after = 1;
    hyocr_api_error_reply(msg, &e);
    hyocr_api_error_clear(&e);
}

bool hyocr_server_method_is(SoupServerMessage *msg, const char *want)
{
    if (!strcmp(soup_server_message_get_method(msg), want)) return true;
    reply_error(msg, 405, _("%s takes %s"), g_uri_get_path(soup_server_message_get_uri(msg)), want);
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Allow", want);
    return false;
}

/* 503 while the engine loads or the server drains; true when it may serve. */
static bool serving(hyocr_server *s, SoupServerMessage *msg)
{
    if (s->state == STATE_READY) return true;
    reply_error(msg, 503, s->state == STATE_LOADING ? _("the model is loading; try again shortly")
                                                    : _("the server is shutting down"));
    return false;
}

static void on_health(hyocr_server *s, SoupServerMessage *msg)
{
    if (!hyocr_server_method_is(msg, "GET") || !serving(s, msg)) return;
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "text/plain", SOUP_MEMORY_STATIC, "", 0);
}

static void on_metrics(hyocr_server *s, SoupServerMessage *msg)
{
    if (!hyocr_server_method_is(msg, "GET")) return;
    char *text = hyocr_metrics_render(s->metrics, s->engine, hyocr_server_model_name(s));
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "text/plain; version=0.0.4; charset=utf-8", SOUP_MEMORY_TAKE, text,
                                     strlen(text));
}

static void on_models(hyocr_server *s, SoupServerMessage *msg)
{
    if (!hyocr_server_method_is(msg, "GET")) return;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "object");
    json_builder_add_string_value(b, "list");
    json_builder_set_member_name(b, "data");
    json_builder_begin_array(b);
    for (char **n = s->opt->served_names; *n; n++) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "id");
        json_builder_add_string_value(b, *n);
        json_builder_set_member_name(b, "object");
        json_builder_add_string_value(b, "model");
        json_builder_set_member_name(b, "created");
        json_builder_add_int_value(b, s->created);
        json_builder_set_member_name(b, "owned_by");
        json_builder_add_string_value(b, "hyocr");
        json_builder_set_member_name(b, "root");
        json_builder_add_string_value(b, s->opt->engine.model_dir);
        if (s->engine) {
            json_builder_set_member_name(b, "max_model_len");
            const hyocr_config *cfg = hyocr_engine_config(s->engine);
            json_builder_add_int_value(b, s->opt->engine.max_model_len > 0 ? s->opt->engine.max_model_len
                                                                             : cfg->text.max_position_embeddings);
            /* a hyocr client sends this release's official prompts and penalty (remote.h) */
            json_builder_set_member_name(b, "hyocr_model_version");
            json_builder_add_string_value(b, cfg->version == HYOCR_MODEL_VERSION_1_0 ? "1.0" : "1.5");
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    char *json = hyocr_json_to_data(root, false);
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_TAKE, json, strlen(json));
}

/* ---- chat completions: the body parsed on a thread, then the job ---------------------------------- */

typedef struct {
    hyocr_server        *server;
    SoupServerMessage   *msg;
    GBytes              *body;
    hyocr_request_limits lim;
    hyocr_chat_request   req;
    hyocr_api_error      err;
    bool                 ok;
    gint64               arrival;
} parse_job;

static void parse_job_free(parse_job *p)
{
    g_object_unref(p->msg);
    g_bytes_unref(p->body);
    hyocr_chat_request_clear(&p->req);
    hyocr_api_error_clear(&p->err);
    g_free(p);
}

/* JSON and base64 of a large page take tens of milliseconds, opening a PDF more: not on
 * the loop that streams everyone's tokens. */
static void parse_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
    (void)source;
    (void)cancel;
    parse_job *p = data;
    gsize len = 0;
    const char *body = g_bytes_get_data(p->body, &len);
    p->ok = hyocr_chat_request_parse(&p->req, body ? body : "", len, &p->lim, &p->err) &&
            hyocr_chat_request_open_image(&p->req, &p->err);
    g_task_return_boolean(task, TRUE);
}

static void parsed(GObject *source, GAsyncResult *res, gpointer data)
{
    (void)source;
    (void)data;
    parse_job *p = g_task_get_task_data(G_TASK(res));
    hyocr_server *s = p->server;
    if (!p->ok) {
        hyocr_api_error_reply(p->msg, &p->err);
        soup_server_message_unpause(p->msg);
    } else {
        hyocr_completion_start(s, p->msg, &p->req, (const char *const *)s->opt->served_names, p->arrival);
    }
    hyocr_server_release(s);
}

static void on_completions(hyocr_server *s, SoupServerMessage *msg)
{
    if (!hyocr_server_method_is(msg, "POST") || !serving(s, msg)) return;
    request_state *r = state_of(msg);
    if (r->too_big) {
        too_large(s, msg);
        return;
    }
    parse_job *p = g_new0(parse_job, 1);
    p->server = s;
    p->msg = g_object_ref(msg);
    p->body = g_byte_array_free_to_bytes(g_steal_pointer(&r->body));
    p->lim = (hyocr_request_limits){ s->opt->max_request_size, s->opt->allowed_media_dir };
    p->arrival = r->arrival;
    hyocr_server_hold(s);
    soup_server_message_pause(msg);
    g_autoptr(GTask) task = g_task_new(NULL, NULL, parsed, NULL);
    g_task_set_task_data(task, p, (GDestroyNotify)parse_job_free);
    g_task_run_in_thread(task, parse_thread);
}

/* The page and its helpers; their bodies are small, read to the same limit. */
static bool on_web(hyocr_server *s, SoupServerMessage *msg, const char *path)
{
    request_state *r = state_of(msg);
    if (r->too_big && g_str_has_prefix(path, "/web/api/")) {
        too_large(s, msg);
        return true;
    }
    g_autoptr(GBytes) body = g_byte_array_free_to_bytes(g_steal_pointer(&r->body));
    return hyocr_web_route(s, msg, path, body);
}

static void route(SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query, gpointer data)
{
    (void)soup;
    (void)query;
    hyocr_server *s = data;
    if (!strcmp(path, "/v1/chat/completions")) on_completions(s, msg);
    else if (!strcmp(path, "/v1/models")) on_models(s, msg);
    else if (!strcmp(path, "/health")) on_health(s, msg);
    else if (!strcmp(path, "/metrics")) on_metrics(s, msg);
    else if (!s->opt->no_web_ui && on_web(s, msg, path)) return;
    else reply_error(msg, 404, _("there is nothing at %s (this server answers /v1/chat/completions, /v1/models, "
                                 "/health and /metrics)"), path);
}

/* ---- loading, warming up ------------------------------------------------------------------------ */

typedef struct {
    hyocr_server *server;
    hyocr_engine *engine;
    GError       *error;
} loaded;

static void on_engine_log(hyocr_log_level level, const char *message, void *data)
{
    (void)data;
    if (level < HYOCR_LOG_WARNING) return;
    fprintf(stderr, "hyocr serve: %s\n", message);
    fflush(stderr);
}

static gboolean on_loaded(gpointer data)
{
    loaded *l = data;
    hyocr_server *s = l->server;
    g_thread_join(g_steal_pointer(&s->loader));
    if (!l->engine && g_error_matches(l->error, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING)) {
        fprintf(stderr, _("hyocr serve: %s; get the model with `hyocr download`, or give its folder with --model DIR\n"),
                l->error->message);
        s->exit_status = 1;
        g_main_loop_quit(s->loop);
    } else if (!l->engine) {
        fprintf(stderr, _("hyocr serve: %s\n"), l->error->message);
        s->exit_status = 1;
        g_main_loop_quit(s->loop);
    } else {
        s->engine = l->engine;
        if (s->state == STATE_LOADING) s->state = STATE_READY;
        const GError *why = hyocr_engine_get_cuda_unusable(s->engine);
        if (why) fprintf(stderr, _("hyocr serve: the GPU is not usable (%s); running on the CPU\n"), why->message);
        fprintf(stderr, _("hyocr serve: ready: model %s on the %s backend\n"), hyocr_server_model_name(s),
                hyocr_engine_backend_name(s->engine));
        fflush(stderr);
        maybe_quit(s);
    }
    g_clear_error(&l->error);
    g_free(l);
    return G_SOURCE_REMOVE;
}

/* The first GPU job pays module loading, cuBLAS plans and graph capture: paid
 * before /health says ready. */
static gpointer load_thread(gpointer data)
{
    hyocr_server *s = data;
    loaded *l = g_new0(loaded, 1);
    l->server = s;
    hyocr_engine_params ep = s->opt->engine;
    ep.log = on_engine_log;
    l->engine = hyocr_engine_init(&ep, &l->error);
    g_autoptr(GError) warm = NULL;
    if (l->engine && !hyocr_engine_warmup(l->engine, &warm))
        fprintf(stderr, _("hyocr serve: warm-up skipped: %s\n"), warm->message);
    g_main_context_invoke(s->main, on_loaded, l);
    return NULL;
}

/* ---- listening, signals ---------------------------------------------------------------------------- */

static bool is_loopback(GInetAddress *a)
{
    return g_inet_address_get_is_loopback(a);
}

/* The socket made here rather than by libsoup: its accept queue must hold a burst
 * of clients (GSocket's default of 10 let the kernel reset the connections of the
 * rest when 64 came at once). */
#define LISTEN_BACKLOG 1024

static bool listen_socket(hyocr_server *s, GSocketAddress *sa, GError **error)
{
    g_autoptr(GSocket) sock = g_socket_new(g_socket_address_get_family(sa), G_SOCKET_TYPE_STREAM,
                                           G_SOCKET_PROTOCOL_TCP, error);
    if (!sock) return false;
    g_socket_set_listen_backlog(sock, LISTEN_BACKLOG);
    return g_socket_bind(sock, sa, TRUE, error) && g_socket_listen(sock, error) &&
           soup_server_listen_socket(s->soup, sock, 0, error);
}

static bool listen_on(hyocr_server *s, GError **error)
{
    const char *host = s->opt->host;
    g_autoptr(GInetAddress) addr = g_inet_address_new_from_string(!strcmp(host, "localhost") ? "127.0.0.1" : host);
    if (!addr) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, _("--host: “%s” is not an IP address"), host);
        return false;
    }
    s->loopback = is_loopback(addr);
    if (!s->loopback && !s->opt->api_key)
        fprintf(stderr, _("hyocr serve: warning: listening on %s, beyond this machine, without --api-key: anyone "
                          "who can reach the port can use the model\n"), host);
    g_autoptr(GSocketAddress) sa = g_inet_socket_address_new(addr, (guint16)s->opt->port);
    g_autoptr(GError) err = NULL;
    if (!listen_socket(s, sa, &err)) {
        if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE))
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
                        _("%s port %d is already in use (another hyocr serve, or vLLM?); stop it or choose another "
                          "port with --port"), host, s->opt->port);
        else
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, _("cannot listen on %s port %d: %s"), host,
                        s->opt->port, err->message);
        return false;
    }
    return true;
}

static int bound_port(hyocr_server *s)
{
    GSList *uris = soup_server_get_uris(s->soup);
    int port = uris ? g_uri_get_port(uris->data) : s->opt->port;
    g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
    return port;
}

static gboolean on_signal(gpointer data)
{
    hyocr_server *s = data;
    if (++s->signals == 1) {
        fprintf(stderr, _("hyocr serve: stopping: %d request(s) in flight finish first (signal again to cancel "
                          "them)\n"), s->in_flight);
        s->state = STATE_DRAINING;
    } else if (s->engine) {
        fprintf(stderr, _("hyocr serve: cancelling the requests in flight\n"));
        hyocr_engine_cancel(s->engine);
    }
    fflush(stderr);
    maybe_quit(s);
    return G_SOURCE_CONTINUE;
}

int hyocr_server_run(const hyocr_server_options *opt)
{
    hyocr_server s = { .opt = opt, .state = STATE_LOADING };
    s.main = g_main_context_ref_thread_default();
    /* This thread owns the loop's context from here on, so what other threads hand it through
     * g_main_context_invoke (the loaded engine, a job's events) waits for the loop: unowned,
     * invoke runs the function on the calling thread at once. A model that failed to load at
     * once had quit the loop before it ran, which then never ended. */
    bool owned = g_main_context_acquire(s.main);
    s.loop = g_main_loop_new(s.main, FALSE);
    s.metrics = hyocr_metrics_new();
    s.created = g_get_real_time() / G_USEC_PER_SEC;
    s.soup = soup_server_new("server-header", "hyocr/" HYOCR_VERSION " ", NULL);
    soup_server_add_early_handler(s.soup, NULL, early, &s, NULL);
    soup_server_add_handler(s.soup, NULL, route, &s, NULL);
    g_signal_connect(s.soup, "request-finished", G_CALLBACK(log_request), GINT_TO_POINTER(FALSE));
    g_signal_connect(s.soup, "request-aborted", G_CALLBACK(log_request), GINT_TO_POINTER(TRUE));
    g_autoptr(GError) err = NULL;
    if (!listen_on(&s, &err)) {
        fprintf(stderr, "hyocr serve: %s\n", err->message);
        s.exit_status = 1;
    } else {
        fprintf(stderr, _("hyocr serve: listening on http://%s:%d (loading %s)\n"), opt->host, bound_port(&s),
                opt->engine.model_dir);
        fflush(stderr);
        guint term = g_unix_signal_add(SIGTERM, on_signal, &s), intr = g_unix_signal_add(SIGINT, on_signal, &s);
        s.loader = g_thread_new("hyocr-load", load_thread, &s);
        g_main_loop_run(s.loop);
        g_source_remove(term);
        g_source_remove(intr);
        /* a load still under way when the loop ended (a signal while loading) */
        while (s.loader) g_main_context_iteration(s.main, TRUE);
    }
    soup_server_disconnect(s.soup);
    g_object_unref(s.soup);
    hyocr_engine_free(s.engine);
    hyocr_metrics_free(s.metrics);
    g_main_loop_unref(s.loop);
    if (owned) g_main_context_release(s.main);
    g_main_context_unref(s.main);
    if (s.exit_status == 0) fprintf(stderr, _("hyocr serve: stopped\n"));
    return s.exit_status;
}
