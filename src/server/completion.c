/* hyocr serve — one chat completion: the job submitted to the engine's
 * scheduler (it joins the running batch between decode steps), its events
 * carried from the engine's thread to the main loop, and the reply: one JSON
 * object, or server-sent chat.completion.chunk events ending with [DONE].
 *
 * Nothing is sent before the first token, so what fails before it (an image
 * that does not decode, a job the memory plan refuses) is an HTTP error with
 * its status. A client that goes away cancels its job: the socket is watched
 * while the message waits. */
#include "server.h"
#include "error.h"
#include "json.h"
#include <errno.h>
#include <math.h>
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct {
    hyocr_event_type  type;
    int32_t           token;
    char             *piece;         /* piece_len bytes: a token may decode to a NUL byte */
    size_t            piece_len;
    int               prompt_tokens;
    GArray           *prompt_ids;    /* PREPROCESS, when the client asked for token ids */
    GError           *error;
    hyocr_stop_reason stop;
    int               stop_string;
    bool              has_logprobs;  /* TOKEN, when the request asked */
    hyocr_token_logprobs logprobs;
} post;

typedef struct {
    gint               ref;
    hyocr_server      *server;
    SoupServerMessage *msg;            /* NULL once libsoup is done with it */
    hyocr_chat_request req;
    hyocr_request     *job;
    char              *rendered;
    char               id[48];
    gint64             created;        /* unix seconds */
    gint64             t_arrival, t_first;
    GAsyncQueue       *events;         /* post *, from the engine's thread */
    gint               scheduled;      /* atomic: a drain is queued on the main context */
    GMainContext      *main;
    GArray            *token_ids;
    GArray            *logprobs;       /* hyocr_token_logprobs, one per token id, when asked */
    GArray            *prompt_ids;
    int                prompt_tokens;
    bool               started;        /* the stream's headers went out */
    bool               ended;          /* the job's end event was handled */
    bool               gone;           /* the client went away */
    bool               closed;         /* the response is complete (nothing more is written) */
    hyocr_stop_reason  stop;           /* the end's, once it came */
    int                stop_string;
    GSource           *watch;
    gulong             finished_id;
} completion;

static void post_free(post *p)
{
    g_free(p->piece);
    if (p->prompt_ids) g_array_unref(p->prompt_ids);
    g_clear_error(&p->error);
    g_free(p);
}

static completion *completion_ref(completion *c)
{
    g_atomic_int_inc(&c->ref);
    return c;
}

static void stop_watch(completion *c)
{
    if (!c->watch) return;
    g_source_destroy(c->watch);
    g_source_unref(c->watch);
    c->watch = NULL;
}

static void completion_unref(completion *c)
{
    if (!g_atomic_int_dec_and_test(&c->ref)) return;
    stop_watch(c);
    if (c->msg) {
        if (c->finished_id) g_signal_handler_disconnect(c->msg, c->finished_id);
        g_object_unref(c->msg);
    }
    hyocr_server_release(c->server);
    hyocr_request_unref(c->job);
    hyocr_chat_request_clear(&c->req);
    g_free(c->rendered);
    g_async_queue_unref(c->events);
    g_array_unref(c->token_ids);
    g_array_unref(c->logprobs);
    if (c->prompt_ids) g_array_unref(c->prompt_ids);
    g_main_context_unref(c->main);
    g_free(c);
}

/* ---- the reply ------------------------------------------------------------------------------ */

static const char *finish_reason(hyocr_stop_reason stop)
{
    switch (stop) {
    case HYOCR_STOP_MAX_NEW_TOKENS:
    case HYOCR_STOP_MAX_MODEL_LEN: return "length";
    case HYOCR_STOP_CANCELLED:     return "abort";
    default:                       return "stop";
    }
}

static void add_ids(JsonBuilder *b, const char *name, const int32_t *ids, guint n)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_array(b);
    for (guint i = 0; i < n; i++) json_builder_add_int_value(b, ids[i]);
    json_builder_end_array(b);
}

static void add_prompt_ids(completion *c, JsonBuilder *b)
{
    add_ids(b, "prompt_token_ids", c->prompt_ids ? (const int32_t *)c->prompt_ids->data : NULL,
            c->prompt_ids ? c->prompt_ids->len : 0);
}

/* id, object, created, model */
static void begin_object(completion *c, JsonBuilder *b, const char *object)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "id");
    json_builder_add_string_value(b, c->id);
    json_builder_set_member_name(b, "object");
    json_builder_add_string_value(b, object);
    json_builder_set_member_name(b, "created");
    json_builder_add_int_value(b, c->created);
    json_builder_set_member_name(b, "model");
    json_builder_add_string_value(b, c->req.model ? c->req.model : hyocr_server_model_name(c->server));
}

/* … "choices": [{"index": 0, "<inner>": {: the one choice a reply (inner "message") or a
 * chunk ("delta") holds, open for its fields. */
static void begin_choice(completion *c, JsonBuilder *b, const char *object, const char *inner)
{
    begin_object(c, b, object);
    json_builder_set_member_name(b, "choices");
    json_builder_begin_array(b);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "index");
    json_builder_add_int_value(b, 0);
    json_builder_set_member_name(b, inner);
    json_builder_begin_object(b);
}

/* vLLM's "stop_reason": the request's stop string or stop token that ended the answer, else null. */
static void add_stop_reason(completion *c, JsonBuilder *b, const char *finish)
{
    json_builder_set_member_name(b, "stop_reason");
    if (!finish || c->stop != HYOCR_STOP_REQUESTED || (!c->stop_string && !c->token_ids->len))
        json_builder_add_null_value(b);
    else if (c->stop_string)
        json_builder_add_string_value(b, c->req.stop[c->stop_string - 1]);
    else
        json_builder_add_int_value(b, g_array_index(c->token_ids, int32_t, c->token_ids->len - 1));
}

/* "token", "logprob", "bytes" of one id: OpenAI's bytes are the token's own (a piece of a
 * character stays a piece, for the client to join), its text those bytes with any piece as
 * U+FFFD, or "token_id:N" where the request asks so. A log-probability JSON cannot hold is
 * vLLM's -9999.0. */
static void add_token_fields(completion *c, JsonBuilder *b, int32_t id, float logprob)
{
    hyocr_engine *eng = hyocr_server_engine(c->server);
    g_autoptr(GBytes) bytes = hyocr_engine_token_bytes(eng, id);
    gsize n = 0;
    const guint8 *d = g_bytes_get_data(bytes, &n);
    size_t text_len = 0;
    g_autofree char *text = c->req.tokens_as_ids ? g_strdup_printf("token_id:%d", id)
                                                 : hyocr_engine_token_text(eng, id, &text_len);
    if (c->req.tokens_as_ids) text_len = strlen(text);
    json_builder_set_member_name(b, "token");
    hyocr_json_add_text(b, text, text_len);
    json_builder_set_member_name(b, "logprob");
    json_builder_add_double_value(b, isfinite(logprob) ? logprob : -9999.0);
    json_builder_set_member_name(b, "bytes");
    json_builder_begin_array(b);
    for (gsize i = 0; i < n; i++) json_builder_add_int_value(b, d[i]);
    json_builder_end_array(b);
}

/* "logprobs": {"content": [one entry a token: its fields and "top_logprobs"]}, or null when
 * the request did not ask. */
static void add_logprobs(completion *c, JsonBuilder *b, const int32_t *ids, const hyocr_token_logprobs *lps, guint n)
{
    json_builder_set_member_name(b, "logprobs");
    if (!c->req.logprobs) {
        json_builder_add_null_value(b);
        return;
    }
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "content");
    json_builder_begin_array(b);
    for (guint i = 0; i < n; i++) {
        json_builder_begin_object(b);
        add_token_fields(c, b, ids[i], lps[i].logprob);
        json_builder_set_member_name(b, "top_logprobs");
        json_builder_begin_array(b);
        for (int k = 0; k < lps[i].n_top; k++) {
            json_builder_begin_object(b);
            add_token_fields(c, b, lps[i].top[k].id, lps[i].top[k].logprob);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}

/* The tokens a choice carries: the whole answer's, or a chunk's one (none: n 0). */
typedef struct {
    const int32_t              *ids;
    guint                       n;
    const hyocr_token_logprobs *logprobs;   /* n_logprobs: n, or 0 when the request did not ask */
    guint                       n_logprobs;
} choice_tokens;

/* …}, "logprobs", "finish_reason": finish (null until the last chunk), "stop_reason", and
 * the ids when the request asks for them}]: the choice closed. */
static void end_choice(completion *c, JsonBuilder *b, const char *finish, const choice_tokens *t)
{
    json_builder_end_object(b);
    add_logprobs(c, b, t->ids, t->logprobs, MIN(t->n, t->n_logprobs));
    json_builder_set_member_name(b, "finish_reason");
    if (finish) json_builder_add_string_value(b, finish);
    else json_builder_add_null_value(b);
    add_stop_reason(c, b, finish);
    if (c->req.return_token_ids) add_ids(b, "token_ids", t->ids, t->n);
    json_builder_end_object(b);
    json_builder_end_array(b);
}

static void add_usage(completion *c, JsonBuilder *b)
{
    json_builder_set_member_name(b, "usage");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "prompt_tokens");
    json_builder_add_int_value(b, c->prompt_tokens);
    json_builder_set_member_name(b, "completion_tokens");
    json_builder_add_int_value(b, c->token_ids->len);
    json_builder_set_member_name(b, "total_tokens");
    json_builder_add_int_value(b, c->prompt_tokens + (int)c->token_ids->len);
    json_builder_end_object(b);
}

static char *finish_json(JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return hyocr_json_to_data(root, false);
}

static void reply_json(completion *c, const char *text, size_t len, hyocr_stop_reason stop)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    begin_choice(c, b, "chat.completion", "message");
    json_builder_set_member_name(b, "role");
    json_builder_add_string_value(b, "assistant");
    json_builder_set_member_name(b, "content");
    hyocr_json_add_text(b, text, len);
    choice_tokens all = { (const int32_t *)c->token_ids->data, c->token_ids->len,
                          (const hyocr_token_logprobs *)c->logprobs->data, c->logprobs->len };
    end_choice(c, b, finish_reason(stop), &all);
    add_usage(c, b);
    if (c->req.return_token_ids) add_prompt_ids(c, b);
    json_builder_end_object(b);
    char *json = finish_json(b);
    soup_server_message_set_status(c->msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(c->msg, "application/json", SOUP_MEMORY_TAKE, json, strlen(json));
    soup_server_message_unpause(c->msg);
}

/* One chat.completion.chunk: a delta (role and/or content of len bytes), with the token it
 * brings (and its log-probabilities: NULL when none), or the finish. */
static void send_chunk(completion *c, const char *content, size_t len, int32_t token,
                       const hyocr_token_logprobs *lp, const char *finish)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    begin_choice(c, b, "chat.completion.chunk", "delta");
    if (!c->started || content) {
        if (!c->started) {
            json_builder_set_member_name(b, "role");
            json_builder_add_string_value(b, "assistant");
        }
        json_builder_set_member_name(b, "content");
        hyocr_json_add_text(b, content ? content : "", content ? len : 0);
    }
    choice_tokens one = { &token, token >= 0, lp, token >= 0 && lp };
    end_choice(c, b, finish, &one);
    if (c->req.include_usage) {
        json_builder_set_member_name(b, "usage");
        json_builder_add_null_value(b);
    }
    if (c->req.return_token_ids && !c->started) add_prompt_ids(c, b);
    json_builder_end_object(b);
    g_autofree char *json = finish_json(b);
    if (!c->started) hyocr_sse_begin(c->msg);
    c->started = true;
    hyocr_sse_send(c->msg, json);
}

static void send_usage_chunk(completion *c)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    begin_object(c, b, "chat.completion.chunk");
    json_builder_set_member_name(b, "choices");
    json_builder_begin_array(b);
    json_builder_end_array(b);
    add_usage(c, b);
    json_builder_end_object(b);
    g_autofree char *json = finish_json(b);
    hyocr_sse_send(c->msg, json);
}

static void end_stream(completion *c, const char *finish)
{
    if (finish) send_chunk(c, NULL, 0, -1, NULL, finish);
    if (c->req.include_usage) send_usage_chunk(c);
    hyocr_sse_send(c->msg, "[DONE]");
    hyocr_sse_end(c->msg);
}

static void reply_error(completion *c, const hyocr_api_error *e)
{
    if (!c->msg || c->closed) return;
    c->closed = true;
    if (!c->started) {
        hyocr_api_error_reply(c->msg, e);
        soup_server_message_unpause(c->msg);
        return;
    }
    /* the stream has begun: the error goes as an event, then the stream ends */
    g_autofree char *json = hyocr_api_error_json(e);
    hyocr_sse_send(c->msg, json);
    end_stream(c, NULL);
}

/* ---- events, on the main loop ------------------------------------------------------------------ */

static double since(gint64 t0, gint64 t)
{
    return (double)(t - t0) / 1e6;
}

static void finish(completion *c, const char *reason)
{
    c->ended = true;
    stop_watch(c);
    gint64 now = g_get_monotonic_time();
    double ttft = c->t_first ? since(c->t_arrival, c->t_first) : -1;
    hyocr_metrics_add(hyocr_server_metrics(c->server), reason, c->prompt_tokens, (int)c->token_ids->len, ttft,
                      since(c->t_arrival, now));
    if (c->msg) hyocr_server_note(c->server, c->msg, c->prompt_tokens, (int)c->token_ids->len, reason);
}

static void on_token(completion *c, post *p)
{
    if (p->token >= 0) g_array_append_val(c->token_ids, p->token);
    if (p->has_logprobs) g_array_append_val(c->logprobs, p->logprobs);
    if (!c->t_first) c->t_first = g_get_monotonic_time();
    if (!c->req.stream || !c->msg || c->gone || c->closed) return;
    /* a token that asked for its ids or logprobs gets its chunk, even with no text yet */
    if (p->piece_len || p->token < 0 || c->req.return_token_ids || p->has_logprobs || !c->started)
        send_chunk(c, p->piece, p->piece_len, p->token, p->has_logprobs ? &p->logprobs : NULL, NULL);
}

static void on_restart(completion *c)
{
    g_array_set_size(c->token_ids, 0);
    g_array_set_size(c->logprobs, 0);
    if (!c->started || !c->msg) return;
    /* what was streamed cannot be taken back */
    hyocr_api_error e = { 0 };
    hyocr_api_error_set(&e, 500, NULL, _("the answer overflowed FP16 and restarts in BF16; send the request again"));
    reply_error(c, &e);
    hyocr_api_error_clear(&e);
    hyocr_request_cancel(c->job);
}

static void on_end(completion *c, post *p)
{
    const char *reason = p->type == HYOCR_EVENT_DONE ? finish_reason(p->stop) : p->type == HYOCR_EVENT_CANCELLED
                                                                                   ? "abort" : "error";
    c->stop = p->stop;
    c->stop_string = p->stop_string;
    /* also for a client gone: the write fails, and libsoup lets the message go */
    if (c->msg && !c->closed) {
        if (p->type == HYOCR_EVENT_DONE && c->req.stream) {
            if (!c->started) send_chunk(c, "", 0, -1, NULL, NULL);
            end_stream(c, reason);
            c->closed = true;
        } else if (p->type == HYOCR_EVENT_DONE) {
            reply_json(c, p->piece ? p->piece : "", p->piece ? p->piece_len : 0, p->stop);
            c->closed = true;
        } else {
            hyocr_api_error e = { 0 };
            if (p->error) hyocr_api_error_from_engine(&e, p->error);
            else hyocr_api_error_set(&e, 503, NULL, _("the request was cancelled: the server is shutting down"));
            reply_error(c, &e);
            hyocr_api_error_clear(&e);
        }
    }
    finish(c, reason);
}

static void apply(completion *c, post *p)
{
    switch (p->type) {
    case HYOCR_EVENT_PREPROCESS:
        c->prompt_tokens = p->prompt_tokens;
        if (p->prompt_ids) c->prompt_ids = g_array_ref(p->prompt_ids);
        break;
    case HYOCR_EVENT_TOKEN: on_token(c, p); break;
    case HYOCR_EVENT_RESTART: on_restart(c); break;
    case HYOCR_EVENT_DONE:
    case HYOCR_EVENT_ERROR:
    case HYOCR_EVENT_CANCELLED: on_end(c, p); break;
    default: break;
    }
}

static gboolean drain(gpointer data)
{
    completion *c = data;
    g_atomic_int_set(&c->scheduled, 0);
    post *p;
    while ((p = g_async_queue_try_pop(c->events))) {
        bool end = p->type == HYOCR_EVENT_DONE || p->type == HYOCR_EVENT_ERROR || p->type == HYOCR_EVENT_CANCELLED;
        apply(c, p);
        post_free(p);
        if (end) completion_unref(c);   /* the engine's reference: its last event */
    }
    return G_SOURCE_REMOVE;
}

/* ---- events, on the engine's thread ----------------------------------------------------------- */

static void on_event(const hyocr_event *ev, void *data)
{
    completion *c = data;
    if (ev->type == HYOCR_EVENT_VISION || ev->type == HYOCR_EVENT_PREFILL) return;
    post *p = g_new0(post, 1);
    p->type = ev->type;
    p->token = ev->token;
    if ((ev->type == HYOCR_EVENT_TOKEN || ev->type == HYOCR_EVENT_DONE) && ev->piece) {
        p->piece = g_malloc(ev->piece_len + 1);
        memcpy(p->piece, ev->piece, ev->piece_len);
        p->piece[ev->piece_len] = '\0';
        p->piece_len = ev->piece_len;
    }
    p->prompt_tokens = ev->prompt_tokens;
    p->stop = ev->stop_reason;
    p->stop_string = ev->stop_string;
    if (ev->type == HYOCR_EVENT_TOKEN && ev->logprobs) {
        p->has_logprobs = true;
        p->logprobs = *ev->logprobs;
    }
    if (ev->error) p->error = g_error_copy(ev->error);
    if (ev->type == HYOCR_EVENT_PREPROCESS && c->req.return_token_ids && ev->prompt) {
        p->prompt_ids = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), (guint)ev->prompt->n);
        g_array_append_vals(p->prompt_ids, ev->prompt->ids, (guint)ev->prompt->n);
    }
    g_async_queue_push(c->events, p);
    if (g_atomic_int_compare_and_exchange(&c->scheduled, 0, 1))
        g_main_context_invoke_full(c->main, G_PRIORITY_DEFAULT, drain, completion_ref(c),
                                   (GDestroyNotify)completion_unref);
}

/* ---- the client going away --------------------------------------------------------------------- */

static void client_gone(completion *c)
{
    if (c->gone) return;
    c->gone = true;
    stop_watch(c);
    if (!c->ended) hyocr_request_cancel(c->job);
}

/* While the message waits (paused), libsoup does not read its socket: a peek
 * tells a closed connection (0 bytes) from a client that sent more. */
static gboolean on_socket(GSocket *sock, GIOCondition cond, gpointer data)
{
    completion *c = data;
    char byte;
    ssize_t n = recv(g_socket_get_fd(sock), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && !(cond & (G_IO_HUP | G_IO_ERR)))
        return G_SOURCE_CONTINUE;
    if (n > 0) {   /* pipelined bytes: nothing more to learn here */
        g_source_unref(g_steal_pointer(&c->watch));
        return G_SOURCE_REMOVE;
    }
    client_gone(c);
    return G_SOURCE_REMOVE;
}

static void watch_socket(completion *c)
{
    GSocket *sock = soup_server_message_get_socket(c->msg);
    if (!sock) return;
    c->watch = g_socket_create_source(sock, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
    g_source_set_callback(c->watch, (GSourceFunc)(void (*)(void))on_socket, c, NULL);
    g_source_attach(c->watch, c->main);
}

/* libsoup is done with the message: written, or the connection broke. */
static void on_finished(SoupServerMessage *msg, completion *c)
{
    g_signal_handler_disconnect(msg, c->finished_id);
    g_object_unref(g_steal_pointer(&c->msg));
    if (!c->ended) client_gone(c);
    completion_unref(c);   /* the message's reference */
}

/* ---- starting ---------------------------------------------------------------------------------- */

static bool model_known(const char *model, const char *const *names)
{
    if (!model) return true;
    for (const char *const *n = names; n && *n; n++)
        if (!strcmp(*n, model)) return true;
    return false;
}

static void fill_job(completion *c, hyocr_job_params *jp)
{
    const hyocr_chat_request *r = &c->req;
    hyocr_job_params_init(jp);
    jp->document = r->document;
    jp->rendered_chat = c->rendered;
    jp->max_side = hyocr_server_max_side(c->server);
    if (r->max_tokens > 0) jp->max_new_tokens = r->max_tokens;
    /* the model's own decoding where the request leaves a parameter out, as
     * vLLM applies generation_config: greedy, the release's penalty */
    jp->temperature = r->temperature > 0 ? (float)r->temperature : 0.0f;
    jp->top_p = r->top_p > 0 ? (float)r->top_p : 1.0f;
    jp->top_k = r->top_k;
    jp->seed = r->has_seed ? r->seed : ((uint64_t)g_random_int() << 32 | g_random_int());
    jp->repetition_penalty = r->repetition_penalty > 0 ? (float)r->repetition_penalty : -1.0f;
    jp->ignore_eos = r->ignore_eos;
    jp->no_tail_stop = r->ignore_eos;   /* benchmarks ask for exactly max_tokens */
    jp->stop = r->stop;
    jp->stop_included = r->stop_included;
    jp->logprobs = r->logprobs;
    jp->top_logprobs = r->top_logprobs;
    jp->stop_token_ids = r->stop_token_ids;
    jp->n_stop_token_ids = r->n_stop_token_ids;
    jp->on_event = on_event;
    jp->user_data = c;
}

static bool submit(completion *c, const char *const *names, hyocr_api_error *e)
{
    hyocr_engine *eng = hyocr_server_engine(c->server);
    if (!model_known(c->req.model, names)) {
        hyocr_api_error_set(e, 404, "model", _("the model `%s` does not exist; this server has `%s`"), c->req.model,
                            hyocr_server_model_name(c->server));
        e->code = "model_not_found";
        return false;
    }
    g_autoptr(GError) err = NULL;
    int n_images = 0;
    c->rendered = hyocr_engine_render_chat(eng, c->req.msgs, c->req.n_msgs, &n_images, &err);
    hyocr_job_params jp;
    if (c->rendered) {
        fill_job(c, &jp);
        completion_ref(c);   /* the engine's, until its last event */
        c->job = hyocr_engine_submit(eng, &jp, &err);
        if (!c->job) completion_unref(c);
    }
    if (c->job) return true;
    hyocr_api_error_from_engine(e, err);
    return false;
}

void hyocr_completion_start(hyocr_server *s, SoupServerMessage *msg, hyocr_chat_request *r,
                            const char *const *names, gint64 arrival)
{
    completion *c = g_new0(completion, 1);
    c->ref = 1;   /* the message's */
    c->server = s;
    c->msg = g_object_ref(msg);
    c->req = *r;
    memset(r, 0, sizeof *r);
    c->created = g_get_real_time() / G_USEC_PER_SEC;
    c->t_arrival = arrival;
    g_snprintf(c->id, sizeof c->id, "chatcmpl-%08x%08x%08x", g_random_int(), g_random_int(), g_random_int());
    c->events = g_async_queue_new();
    c->main = g_main_context_ref_thread_default();
    c->token_ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    c->logprobs = g_array_new(FALSE, FALSE, sizeof(hyocr_token_logprobs));
    hyocr_server_hold(s);
    hyocr_api_error e = { 0 };
    if (!submit(c, names, &e)) {
        hyocr_api_error_reply(msg, &e);
        soup_server_message_unpause(msg);
        hyocr_api_error_clear(&e);
        c->ended = true;
        hyocr_server_note(s, msg, 0, 0, "error");
        completion_unref(c);
        return;
    }
    c->finished_id = g_signal_connect(msg, "finished", G_CALLBACK(on_finished), c);
    watch_socket(c);
}
