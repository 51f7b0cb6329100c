/* hyocr — what an OpenAI-compatible server (vLLM, hyocr serve) answers a chat
 * completion, read: the server-sent event stream (WHATWG's rules: LF, CR or CRLF
 * line ends, data lines joined, comments skipped) of chat.completion.chunk
 * objects ending with [DONE], or one chat.completion object. Text pieces, token
 * ids (where the server returns them), log-probabilities (where asked for, their
 * tokens named by id: vLLM's return_tokens_as_token_ids), the finish reason, vLLM's
 * stop_reason and the usage are taken; every other field (reasoning_content, …) is
 * ignored. Bytes come from the network: anything malformed is an error that
 * says what, never a crash. The engine's own; remote.c, its tests and the
 * fuzz-remote harness use it. */
#pragma once
#include "hyocr.h"
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

/* A content delta as it came (len bytes, may be ""), with the token ids its chunk
 * carried (n_ids may be 0) and their log-probabilities (n_lps may be 0). */
typedef void (*hyocr_remote_piece_fn)(const char *piece, size_t len, const int32_t *ids, int n_ids,
                                      const hyocr_token_logprobs *lps, int n_lps, void *data);

typedef struct {
    char                 *server;          /* how messages name the server */
    hyocr_remote_piece_fn on_piece;
    void                 *data;
    GString              *text;            /* every piece, concatenated */
    GArray               *token_ids;       /* int32_t; empty when the server sends none */
    GArray               *logprobs;        /* hyocr_token_logprobs; empty when the server sends none */
    char                 *finish_reason;   /* "stop", "length", "abort", …; NULL until one came */
    char                 *stop_text;       /* vLLM's "stop_reason" with the finish: the stop string … */
    bool                  has_stop_id;     /* … or the stop token (also a generation_config EOS that is
                                            * not the tokenizer's: 1.5's 120020) */
    int64_t               stop_id;
    int                   prompt_tokens;   /* usage; -1 until it came */
    int                   completion_tokens;
    int                   n_chunks;        /* content deltas */
    bool                  done;            /* [DONE] (or the whole JSON object) was read */
    /* the event stream's state */
    GString              *line, *event_data;
    bool                  last_cr;         /* the previous byte ended a line with CR */
    bool                  started;         /* past a leading byte-order mark */
    bool                  has_data;
} hyocr_remote_reply;

/* server: for messages ("http://gpu-box:8000"). */
void hyocr_remote_reply_init(hyocr_remote_reply *r, const char *server, hyocr_remote_piece_fn on_piece, void *data);
void hyocr_remote_reply_clear(hyocr_remote_reply *r);
/* Bytes of the event stream, as they arrive (any split). False with error
 * (HYOCR_REMOTE_ERROR MALFORMED, or SERVER for an error event the server sent). */
bool hyocr_remote_reply_feed(hyocr_remote_reply *r, const char *buf, size_t len, GError **error);
/* The stream ended: false (DROPPED) when the answer had not (no [DONE] and no finish reason). */
bool hyocr_remote_reply_end(hyocr_remote_reply *r, GError **error);
/* A whole chat.completion object (a server that answered without streaming). */
bool hyocr_remote_reply_parse_json(hyocr_remote_reply *r, const char *body, size_t len, GError **error);

/* The message of an error reply's body: OpenAI's {"error": {"message"}}, vLLM's
 * older {"message"} or FastAPI's {"detail"}; NULL when it has none. *code: the
 * error's "code" when it is a string (may be NULL). */
char *hyocr_remote_error_message(const char *body, size_t len, char **code);

G_END_DECLS
