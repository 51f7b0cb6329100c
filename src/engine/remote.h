/* hyocr — jobs run on a remote OpenAI-compatible server (vLLM, or another
 * hyocr's `hyocr serve`), with the shape of local submission (hyocr.h): submit
 * a job, get its events (TOKEN pieces as they stream, then DONE with the final
 * text, or ERROR, or CANCELLED), wait for its result, cancel it.
 *
 * The request is the one local inference makes: the page decoded here (EXIF
 * rotation, a document's page rendered, max_side applied), sent as PNG in a
 * data: URI with the official task prompt in Tencent's conversation (an empty
 * system message, then the image and the task text), greedy unless the job
 * samples, the job's repetition penalty (else the server's model default,
 * which vLLM and hyocr serve both take from generation_config), max_tokens in
 * both spellings, streamed. The final text gets the same clean-up a local job
 * gets. So for the same model the answer equals the local one.
 *
 * A remote has a thread per request it keeps in flight (concurrency): jobs
 * wait in a FIFO and go out that many at a time, so a cluster's replicas all
 * work. 503 and 429 are retried with backoff, honouring Retry-After. Events
 * come on those threads, one at a time (never two callbacks at once). The API
 * key is sent only in the Authorization header and never appears in a message. */
#pragma once
#include "hyocr.h"
#include <gio/gio.h>

G_BEGIN_DECLS

#define HYOCR_REMOTE_ERROR (hyocr_remote_error_quark())
GQuark hyocr_remote_error_quark(void);

/* What went wrong, for a front end to word or to act on ("Test connection"). */
typedef enum {
    HYOCR_REMOTE_ERROR_ADDRESS,     /* the URL is not http(s)://host[:port][/path] */
    HYOCR_REMOTE_ERROR_DNS,         /* the host name does not resolve */
    HYOCR_REMOTE_ERROR_REFUSED,     /* nothing listens there (connection refused) */
    HYOCR_REMOTE_ERROR_NETWORK,     /* unreachable, reset before an answer, … */
    HYOCR_REMOTE_ERROR_TLS,         /* the certificate is not trusted, or TLS failed */
    HYOCR_REMOTE_ERROR_AUTH,        /* 401/403: no key, or the wrong one */
    HYOCR_REMOTE_ERROR_MODEL,       /* the server does not serve that model name */
    HYOCR_REMOTE_ERROR_NOT_OPENAI,  /* it answers, but not as an OpenAI-compatible server */
    HYOCR_REMOTE_ERROR_BUSY,        /* 503/429 still after the retries */
    HYOCR_REMOTE_ERROR_TIMEOUT,     /* it sent nothing for timeout seconds */
    HYOCR_REMOTE_ERROR_DROPPED,     /* the connection closed before the answer ended */
    HYOCR_REMOTE_ERROR_MALFORMED,   /* the answer is not a chat completion */
    HYOCR_REMOTE_ERROR_REJECTED,    /* 400 and other 4xx: the server refused the request (its message) */
    HYOCR_REMOTE_ERROR_SERVER,      /* 5xx, or an error event in the stream (its message) */
} HyocrRemoteError;

/* The certificate a HYOCR_REMOTE_ERROR_TLS refusal is about, as data for a front
 * end that offers to trust it (shows it, then passes its fingerprint as
 * trusted_fingerprint): the one the server presented, with what the system found
 * wrong with it (problems, may be NULL). NULL when the error names none (the
 * handshake failed otherwise). Valid as long as the error. */
GTlsCertificate *hyocr_remote_error_get_certificate(const GError *error, GTlsCertificateFlags *problems);
/* "AB:CD:…": the SHA-256 of the certificate's DER, as GNOME's certificate viewer and
 * `openssl x509 -noout -fingerprint -sha256` show it. */
char            *hyocr_remote_certificate_fingerprint(GTlsCertificate *cert);

typedef struct {
    const char         *url;          /* http(s)://host[:port], with or without /v1 */
    const char         *api_key;      /* NULL: none sent */
    const char         *model;        /* the served model name; NULL: the first /v1/models lists */
    const char         *trusted_certificate;   /* PEM file: accept this certificate (a self-signed
                                                * server's) besides those the system trusts */
    const char         *trusted_fingerprint;   /* the same, given as the SHA-256 of the certificate
                                                * (hyocr_remote_certificate_fingerprint's; case, colons
                                                * and spaces ignored) */
    int                 concurrency;  /* requests in flight at most; ≤ 0 = 8 */
    int                 timeout_s;    /* seconds without a byte from the server before giving up; ≤ 0 = 300 */
    int                 max_retries;  /* of a 503/429; < 0 = 6 */
    double              retry_max_s;  /* the longest wait between them; ≤ 0 = 60 */
    hyocr_model_version version;      /* which official prompts (they differ for translation) and penalty;
                                       * default 1.5; a hyocr serve's own word replaces it */
} hyocr_remote_params;

typedef struct hyocr_remote hyocr_remote;
typedef struct hyocr_remote_job hyocr_remote_job;

void hyocr_remote_params_init(hyocr_remote_params *p);
/* Checks the URL and reads the certificate (or the fingerprint); no network (a job, or
 * hyocr_remote_check, reaches the server). */
hyocr_remote *hyocr_remote_new(const hyocr_remote_params *p, GError **error);
/* Cancels what is in flight or queued (their CANCELLED events come first), then
 * drops the owner's reference. */
void          hyocr_remote_free(hyocr_remote *r);
/* For another thread that asks the server (hyocr_remote_check, hyocr_remote_get_metrics)
 * while the owner may free the remote: those calls stay valid until its unref. */
hyocr_remote *hyocr_remote_ref(hyocr_remote *r);
void          hyocr_remote_unref(hyocr_remote *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_remote, hyocr_remote_free)

/* How messages name the server: its URL without the key or a password. */
const char *hyocr_remote_server_name(const hyocr_remote *r);
/* The model name jobs ask for (NULL until known: given, or hyocr_remote_check learnt it). */
const char *hyocr_remote_model(hyocr_remote *r);
/* The release whose prompts and penalty jobs send: params.version, or what a
 * hyocr serve said it serves (hyocr_remote_check learns it from /v1/models). */
hyocr_model_version hyocr_remote_model_version(hyocr_remote *r);

/* Asks /v1/models (blocking): the server is reachable, trusted, takes the key and
 * is OpenAI-compatible, and serves the model (when none was given, the first it
 * lists becomes the jobs' model). *models (may be NULL) gets the names listed.
 * Fails with the HyocrRemoteError that says what is wrong. */
bool hyocr_remote_check(hyocr_remote *r, char ***models, GError **error);

/* The server's memory and load when it is a hyocr serve (its /metrics), blocking. */
typedef struct {
    int64_t memory_used;   /* bytes the server's engine holds (device memory, or host on a CPU server) */
    int64_t kv_used;       /* of it, the KV cache the running requests hold */
    int     running, waiting;
} hyocr_remote_metrics;
/* False (HYOCR_REMOTE_ERROR_NOT_OPENAI) when /metrics is not hyocr serve's. */
bool hyocr_remote_get_metrics(hyocr_remote *r, hyocr_remote_metrics *out, GError **error);

/* Thread-safe: queues a job (as hyocr_engine_submit: strings copied, image_data,
 * document and cancellable referenced; image and the callbacks' data must stay
 * valid until the job has ended). rendered_chat, on_logits and speculative
 * decoding are the local engine's only. */
hyocr_remote_job *hyocr_remote_submit(hyocr_remote *r, const hyocr_job_params *params, GError **error);
/* As hyocr_request_wait. A remote result has the text, the token ids when the
 * server sends them (hyocr serve, vLLM with return_token_ids), prompt_tokens,
 * the image's size, the stop reason and total/first-token times. */
bool              hyocr_remote_job_wait(hyocr_remote_job *job, hyocr_job_result *out, GError **error);
/* Thread-safe: closes the job's connection (the server stops its job) or takes it
 * off the queue; ends with a CANCELLED event. */
void              hyocr_remote_job_cancel(hyocr_remote_job *job);
bool              hyocr_remote_job_is_done(hyocr_remote_job *job);
hyocr_remote_job *hyocr_remote_job_ref(hyocr_remote_job *job);
void              hyocr_remote_job_unref(hyocr_remote_job *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_remote_job, hyocr_remote_job_unref)
/* Thread-safe: cancels every job submitted before (as hyocr_engine_cancel). */
void              hyocr_remote_cancel(hyocr_remote *r);
/* Requests on the wire now (for tests and gauges). */
int               hyocr_remote_in_flight(hyocr_remote *r);

G_END_DECLS
