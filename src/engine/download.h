/* hyocr — the Hub client: fetching a HunyuanOCR checkpoint from the Hugging Face Hub
 * (or a mirror) over HTTP: the file list, LFS checksums, resumable transfers, checks.
 *
 * The weights are Tencent's, under the Tencent Hunyuan Community License, so we never
 * bundle them; this downloads one revision's files into a model folder:
 *
 *     hyocr_download_params p;
 *     hyocr_download_params_init(&p);
 *     p.version = HYOCR_MODEL_VERSION_1_0;       // 1.5 (repo root) is the default
 *     p.on_progress = show;                      // called on the thread that runs
 *     g_autoptr(hyocr_download) dl = hyocr_download_new(&p, &error);
 *     const hyocr_download_summary *s = hyocr_download_plan(dl, &error);   // list, sizes, free space
 *     hyocr_download_run(dl, &error);            // fetch, verify, install
 *
 * Files go to "<dest>.partial/" (in-flight ones as "<name>.incomplete"); each is checked
 * against the Hub's sha256 (LFS files) or git blob sha1 (small files) before it is kept,
 * and the finished folder replaces <dest> in one rename, so an existing model stays usable
 * until the new one is complete. A later run resumes with HTTP Range requests. A manifest
 * (HYOCR_DOWNLOAD_MANIFEST) in the model folder records what was verified; models.h reads
 * it back (which models are installed, and whether they are complete).
 *
 * Threads: plan and run block; call them from a worker thread (the same one for both),
 * never from a GUI main loop. hyocr_download_cancel and g_cancellable_cancel on the
 * params' cancellable may be called from any thread; a cancelled object stays cancelled,
 * so resume with a new one. A second download into the same folder while one runs fails
 * with INVALID_ARGUMENT. No global state.
 *
 * Errors are GErrors in HYOCR_ERROR (IO for network, HTTP and disk problems, CHECKPOINT
 * for checksum mismatches, CANCELLED, INVALID_ARGUMENT); hyocr_download_get_failure tells
 * a front end which kind of problem it was and the numbers behind it. Messages say what
 * failed and where; what to do about an unreachable server, a missing revision or a
 * failing one depends on what the front end offers (a mirror option, a version choice),
 * so each words that from the failure kind. */
#pragma once
#include "config.h"
#include "models.h"
#include <gio/gio.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

#define HYOCR_DOWNLOAD_DEFAULT_ENDPOINT "https://huggingface.co"
#define HYOCR_DOWNLOAD_DEFAULT_REPO     "tencent/HunyuanOCR"
/* Marks a string for xgettext (po/ passes --keyword=HYOCR_N_) and leaves it as it is. */
#define HYOCR_N_(text) text
/* Shown by front ends before a download starts; pass it through _() to translate it. */
#define HYOCR_DOWNLOAD_LICENCE_NOTICE HYOCR_N_( \
    "The HunyuanOCR weights are Tencent's, under the Tencent Hunyuan Community License " \
    "Agreement (the LICENSE file of the model repository). That licence does not apply in the " \
    "European Union, the United Kingdom or South Korea. Downloading means you accept its terms.")

typedef enum {
    HYOCR_DOWNLOAD_PHASE_LISTING,      /* asking for the file list */
    HYOCR_DOWNLOAD_PHASE_RESUMING,     /* re-reading a partial file to continue its checksum */
    HYOCR_DOWNLOAD_PHASE_FETCHING,
    HYOCR_DOWNLOAD_PHASE_VERIFIED,     /* file just passed its checksum */
    HYOCR_DOWNLOAD_PHASE_WAITING,      /* backing off before a retry; message says why */
    HYOCR_DOWNLOAD_PHASE_INSTALLING,   /* moving the finished folder into place */
    HYOCR_DOWNLOAD_PHASE_DONE,
} hyocr_download_phase;

typedef struct {
    hyocr_download_phase phase;
    const char *file;         /* local name of the current file, NULL while listing/installing */
    int         file_index;   /* 0-based among the plan's files */
    int         n_files;
    int64_t     file_done;    /* bytes of the current file on disk */
    int64_t     file_total;
    int64_t     done;         /* bytes of all files on disk (resumed ones included) */
    int64_t     total;
    int64_t     fetched;      /* bytes received over the network by this run */
    double      rate;         /* bytes/s, smoothed; 0 until known */
    double      eta;          /* seconds left; < 0 when unknown */
    const char *message;      /* WAITING: the reason and the delay; otherwise NULL */
} hyocr_download_progress;

typedef void (*hyocr_download_progress_fn)(const hyocr_download_progress *p, void *user_data);

typedef struct {
    const char   *endpoint;     /* NULL: $HF_ENDPOINT, else HYOCR_DOWNLOAD_DEFAULT_ENDPOINT */
    const char   *repo;         /* NULL: HYOCR_DOWNLOAD_DEFAULT_REPO */
    const char   *revision;     /* branch, tag or commit; NULL: "main" */
    hyocr_model_version version;  /* 1.5: repository root; 1.0: the v1.0/ folder */
    const char   *subfolder;    /* overrides the folder implied by version ("" = root) */
    const char   *dest_dir;     /* NULL: hyocr_models_dest(NULL, version) */
    const char   *token;        /* NULL: $HF_TOKEN (sent to the endpoint's host only) */
    GCancellable *cancellable;  /* optional */
    hyocr_download_progress_fn on_progress;
    void         *user_data;
    int           max_retries;  /* per request, after connection loss, 429 or 5xx; default 5 */
    double        retry_delay;  /* first back-off in seconds, doubling; default 1 */
    double        max_wait;     /* longest single wait (Retry-After included); default 120 s */
    unsigned      timeout;      /* seconds without data before a connection counts as lost; default 30 */
    double        progress_interval;  /* least seconds between FETCHING callbacks; default 0.1, 0: every chunk */
} hyocr_download_params;

void hyocr_download_params_init(hyocr_download_params *p);

typedef struct {
    const char *name;       /* path in the model folder */
    const char *remote;     /* path in the repository */
    int64_t     size;
    const char *sha256;     /* LFS content hash, lower-case hex; NULL for plain git files */
    const char *git_oid;    /* git blob sha1 of a plain file; NULL when the server gave none */
    int64_t     have;       /* bytes already downloaded by an earlier attempt */
    bool        done;       /* already complete and verified in the partial folder */
} hyocr_download_file;

typedef struct {
    const char *endpoint;
    const char *repo;
    const char *revision;     /* as asked */
    const char *commit;       /* what it resolved to */
    const char *subfolder;    /* "" for the root */
    const char *dest_dir;
    const char *partial_dir;
    const hyocr_download_file *files;
    int         n_files;
    int64_t     total_bytes;
    int64_t     have_bytes;   /* already on disk from earlier attempts */
    int64_t     free_bytes;   /* on the destination's file system; -1 when unknown */
    bool        up_to_date;   /* dest already holds this commit, complete */
} hyocr_download_summary;

typedef enum {
    HYOCR_DOWNLOAD_FAILURE_NONE,
    HYOCR_DOWNLOAD_FAILURE_NETWORK,       /* DNS, refused, timed out, connection lost (after retries) */
    HYOCR_DOWNLOAD_FAILURE_ACCESS,        /* HTTP 401/403: gated repository, licence, token */
    HYOCR_DOWNLOAD_FAILURE_NOT_FOUND,     /* HTTP 404: repository, revision, folder or file */
    HYOCR_DOWNLOAD_FAILURE_RATE_LIMITED,  /* HTTP 429 after retries; retry_after says when */
    HYOCR_DOWNLOAD_FAILURE_SERVER,        /* 5xx after retries, or an answer we cannot use */
    HYOCR_DOWNLOAD_FAILURE_NO_SPACE,      /* need_bytes vs free_bytes */
    HYOCR_DOWNLOAD_FAILURE_CHECKSUM,      /* file names it; the bad copy is deleted */
    HYOCR_DOWNLOAD_FAILURE_DISK,          /* other local file errors */
    HYOCR_DOWNLOAD_FAILURE_CANCELLED,
    HYOCR_DOWNLOAD_FAILURE_INVALID,       /* bad parameters or destination; a download already running there */
} hyocr_download_failure_kind;

typedef struct {
    hyocr_download_failure_kind kind;
    int         http_status;   /* 0 when no HTTP answer was involved */
    double      retry_after;   /* RATE_LIMITED: seconds the server asked to wait; 0 if none */
    int64_t     need_bytes;    /* NO_SPACE */
    int64_t     free_bytes;    /* NO_SPACE */
    const char *file;          /* the file concerned, or NULL */
} hyocr_download_failure;

typedef struct hyocr_download hyocr_download;

/* $HF_ENDPOINT when set, else HYOCR_DOWNLOAD_DEFAULT_ENDPOINT: the server a download asks. */
const char *hyocr_download_default_endpoint(void);
/* The host of an endpoint, or NULL when it is not an http(s) URL with a host (the only
 * endpoints hyocr_download_new takes). */
char       *hyocr_download_endpoint_host(const char *endpoint);

/* Checks and copies the parameters; no I/O. */
hyocr_download *hyocr_download_new(const hyocr_download_params *p, GError **error);
void            hyocr_download_free(hyocr_download *dl);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_download, hyocr_download_free)

/* Fetches the revision's file list and sizes, looks at what earlier attempts left and at
 * the free space. Changes nothing on disk. Owned by dl; fetched once. */
const hyocr_download_summary *hyocr_download_plan(hyocr_download *dl, GError **error);
/* Plans if needed, then downloads what is missing, verifies and installs. Fails with
 * NO_SPACE before fetching anything when the file system is too small. */
gboolean hyocr_download_run(hyocr_download *dl, GError **error);
/* Thread-safe: stops plan/run soon with a CANCELLED error; the partial folder stays. */
void     hyocr_download_cancel(hyocr_download *dl);
/* Kind and details of the last error of plan/run. */
const hyocr_download_failure *hyocr_download_get_failure(const hyocr_download *dl);

G_END_DECLS
