/* hyocr serve — an OpenAI-compatible HTTP server (libsoup 3) on one engine,
 * whose scheduler lets every request join the running batch. What the files of
 * src/server share; not part of libhyocr.
 *
 *   server.c      the server: listening, loading and warming the engine, routing,
 *                 keys, body limits, one log line per request, draining on SIGTERM
 *   request.c     the OpenAI chat-completions request: JSON → messages, image, parameters
 *   completion.c  one chat completion: the job, its events, the reply (JSON or SSE)
 *   stream.c      server-sent events over a paused libsoup message
 *   metrics.c     Prometheus counters and histograms (/metrics)
 *   errors.c      OpenAI-shaped errors, and the engine's errors in the API's terms
 *   cors.c        cross-origin requests to the API, as vLLM answers them
 *   hosts.c       the Host header, against DNS rebinding
 *   web.c         the web page (GET /, GResources of web/) and the JSON it reads (/web/api/…) */
#pragma once
#include "hyocr.h"
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

typedef struct {
    char               *host;              /* address to bind: "127.0.0.1" */
    int                 port;              /* 0: any free port (printed) */
    char               *api_key;           /* NULL: no key asked */
    char              **served_names;      /* model names answered to; the first is listed */
    int64_t             max_request_size;  /* bytes of a request body */
    char               *allowed_media_dir; /* file:// images are read under it only; NULL: none */
    int                 max_side;          /* every image's long side at most (0: as sent) */
    bool                no_web_ui;         /* GET / and /web/… answer 404 */
    char              **allowed_origins;   /* cross-origin calls of the API: origins, "*" any (vLLM's) … */
    char              **allowed_methods;   /* … methods a preflight may name, "*" any … */
    char              **allowed_headers;   /* … headers a preflight may name, "*" any */
    bool                allow_credentials; /* Access-Control-Allow-Credentials: true */
    char              **allowed_hosts;     /* Host names answered to beyond localhost and IP addresses, "*"
                                            * any; NULL: checked only while listening on loopback */
    hyocr_engine_params engine;            /* model_dir, memory, device, max_batch, max_queue, … */
} hyocr_server_options;

/* Runs the server until SIGTERM/SIGINT has drained it; the process's exit status. */
int hyocr_server_run(const hyocr_server_options *opt);

/* ---- errors.c ---------------------------------------------------------------------------- */

typedef struct {
    guint       status;        /* 400, 401, 404, 405, 413, 500, 503 */
    char       *message;
    const char *type;          /* OpenAI's: invalid_request_error, authentication_error, server_error, … */
    const char *param;         /* the request field at fault, or NULL */
    const char *code;          /* a machine-readable code, or NULL */
    int         retry_after;   /* 503: seconds for Retry-After (0: none) */
} hyocr_api_error;

void hyocr_api_error_set(hyocr_api_error *e, guint status, const char *param, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
void hyocr_api_error_clear(hyocr_api_error *e);
/* An engine error in the API's terms: what the client sent (400), the queue (503),
 * the server (500); a memory refusal names what the client may change. */
void hyocr_api_error_from_engine(hyocr_api_error *e, const GError *err);
/* {"error": {"message", "type", "param", "code"}} with the status (and Retry-After). */
void hyocr_api_error_reply(SoupServerMessage *msg, const hyocr_api_error *e);
/* The error object alone, for an SSE event after the stream has begun. */
char *hyocr_api_error_json(const hyocr_api_error *e);

/* ---- request.c ------------------------------------------------------------------------- */

typedef struct {
    int64_t     max_body;          /* bytes, also for a file:// image */
    const char *allowed_media_dir; /* NULL: file:// refused */
} hyocr_request_limits;

typedef struct {
    hyocr_chat_message *msgs;
    int                 n_msgs;
    int                 n_images;         /* image parts the template renders (user messages) */
    GBytes             *image;            /* the one image, encoded … */
    hyocr_document     *document;         /* … and opened (hyocr_chat_request_open_image) */
    char               *model;            /* NULL when not sent */
    int                 max_tokens;       /* 0: not sent */
    double              temperature;      /* < 0: not sent */
    double              top_p;            /* < 0: not sent */
    int                 top_k;            /* 0: off */
    bool                has_seed;
    uint64_t            seed;
    double              repetition_penalty;   /* < 0: not sent (the model's) */
    bool                stream, include_usage, ignore_eos, return_token_ids;
    bool                logprobs;         /* each token's log-probability … */
    int                 top_logprobs;     /* … with that many alternatives */
    bool                tokens_as_ids;    /* … their tokens as "token_id:N" (vLLM's return_tokens_as_token_ids) */
    const char        **stop;             /* NULL-terminated; NULL: none */
    bool                stop_included;    /* include_stop_str_in_output */
    int32_t            *stop_token_ids;
    int                 n_stop_token_ids;
    GPtrArray          *owned;            /* what msgs, stop and stop_token_ids point into */
    JsonNode           *root;
} hyocr_chat_request;

/* Parses a /v1/chat/completions body. False with e set (400, with the param
 * at fault) when it is malformed, asks for what hyocr does not do (n > 1, a
 * remote image, a logit bias, …), or has no image or several. */
bool hyocr_chat_request_parse(hyocr_chat_request *r, const char *body, size_t len, const hyocr_request_limits *lim,
                              hyocr_api_error *e);
/* Opens the parsed request's image (its header; a PDF's cross-references): false with e set
 * (400) when it cannot be read or is a document of several pages. */
bool hyocr_chat_request_open_image(hyocr_chat_request *r, hyocr_api_error *e);
void hyocr_chat_request_clear(hyocr_chat_request *r);

/* ---- metrics.c --------------------------------------------------------------------------- */

typedef struct hyocr_metrics hyocr_metrics;

hyocr_metrics *hyocr_metrics_new(void);
void           hyocr_metrics_free(hyocr_metrics *m);
/* A finished completion: its tokens and times (seconds; ttft < 0 when no token came). */
void           hyocr_metrics_add(hyocr_metrics *m, const char *finish_reason, int prompt_tokens, int gen_tokens,
                                 double ttft, double e2e);
/* The device memory the engine holds (weights, KV cache, scratch), as /metrics and the page show it. */
int64_t        hyocr_metrics_memory_used(const hyocr_mem_info *mi);
/* The Prometheus text exposition: the counters plus the engine's gauges now. */
char          *hyocr_metrics_render(hyocr_metrics *m, hyocr_engine *eng, const char *model_name);

/* ---- stream.c ---------------------------------------------------------------------------- */

/* Starts a 200 text/event-stream response on a paused message. */
void hyocr_sse_begin(SoupServerMessage *msg);
/* One "data: …" event (the text is sent as it is: JSON or [DONE]). */
void hyocr_sse_send(SoupServerMessage *msg, const char *data);
void hyocr_sse_end(SoupServerMessage *msg);

/* ---- completion.c ----------------------------------------------------------------------- */

typedef struct hyocr_server hyocr_server;

/* What a completion needs of the server. */
hyocr_engine   *hyocr_server_engine(hyocr_server *s);
const char     *hyocr_server_model_name(hyocr_server *s);
int             hyocr_server_max_side(hyocr_server *s);
int             hyocr_server_max_queue(hyocr_server *s);
int64_t         hyocr_server_max_request_size(hyocr_server *s);
/* True when the request's method is want; else a 405 naming it (with Allow) is set. */
bool            hyocr_server_method_is(SoupServerMessage *msg, const char *want);
/* "loading", "ready" or "draining". */
const char     *hyocr_server_state_name(hyocr_server *s);
hyocr_metrics  *hyocr_server_metrics(hyocr_server *s);
/* A completion holds the server (drain waits) until the job has ended and its
 * message is written. */
void            hyocr_server_hold(hyocr_server *s);
void            hyocr_server_release(hyocr_server *s);
/* Notes what the request log line says of a completion. */
void            hyocr_server_note(hyocr_server *s, SoupServerMessage *msg, int prompt_tokens, int gen_tokens,
                                  const char *finish_reason);

/* Takes a parsed request (r's contents, owned from now on) and answers msg
 * (paused); names: the model names served; arrival: when the request came
 * (monotonic µs). */
void hyocr_completion_start(hyocr_server *s, SoupServerMessage *msg, hyocr_chat_request *r,
                            const char *const *names, gint64 arrival);

/* ---- cors.c ------------------------------------------------------------------------------ */

/* Whether path is one of the API's routes, which answer other origins. */
bool hyocr_cors_applies(const char *path);
/* Answers a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method): 200 with
 * what is allowed, 400 naming what is not. False, touching nothing, for any other request. */
bool hyocr_cors_preflight(const hyocr_server_options *opt, SoupServerMessage *msg);
/* Access-Control-Allow-Origin on the answer to a request from an allowed origin. */
void hyocr_cors_answer(const hyocr_server_options *opt, SoupServerMessage *msg);

/* ---- hosts.c ----------------------------------------------------------------------------- */

/* Whether a request with this Host header value (NULL: none) may be answered by a server
 * listening on loopback or beyond it. */
bool hyocr_host_allowed(const hyocr_server_options *opt, bool loopback, const char *value);
/* Answers a request whose Host is not allowed with a 403 naming it; false then. */
bool hyocr_host_check(const hyocr_server_options *opt, bool loopback, SoupServerMessage *msg);

/* ---- web.c ----------------------------------------------------------------------------- */

/* Answers GET / and /web/… (the page's files, and /web/api/…: tasks, prompt, spotting,
 * render, status) with their Content-Security-Policy; body: the request's body (POST).
 * False when path is none of the page's. */
bool hyocr_web_route(hyocr_server *s, SoupServerMessage *msg, const char *path, GBytes *body);

G_END_DECLS
