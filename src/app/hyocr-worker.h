/* hyocr-gtk — the inference thread. It owns the engine (loads it, so the UI
 * never waits on a model load), takes jobs from an async queue, prepares them
 * (decode, prompt, memory) and submits them to the engine's scheduler, which
 * runs them on its own thread: a page added while others decode joins their
 * decode steps. Jobs report through their thread-safe post functions; load
 * results come back to the main context as property changes. */
#pragma once
#include "hyocr-job.h"

G_BEGIN_DECLS

typedef enum {
    HYOCR_WORKER_IDLE,      /* nothing asked yet */
    HYOCR_WORKER_LOADING,
    HYOCR_WORKER_READY,
    HYOCR_WORKER_FAILED,    /* see hyocr_worker_get_error */
} HyocrWorkerState;

#define HYOCR_TYPE_WORKER_STATE (hyocr_worker_state_get_type())
GType hyocr_worker_state_get_type(void);

/* What the engine is loaded with; or, with server_url, the server jobs run on. */
typedef struct {
    char        *model_dir;
    hyocr_device device;
    int64_t      memory_limit;   /* bytes, 0 = none */
    int          n_threads;      /* 0 = all cores */
    char        *server_url;     /* "A server": jobs go there (pages leave the computer) */
    char        *server_model;   /* its model name; NULL: the first it lists */
    char        *server_key;     /* the API key; NULL: the keyring's for server_url (looked up on the thread) */
    char        *server_fingerprint;   /* a certificate the user trusts for server_url (SHA-256), or NULL */
} HyocrEngineSettings;

void hyocr_engine_settings_clear(HyocrEngineSettings *s);

#define HYOCR_TYPE_WORKER (hyocr_worker_get_type())
G_DECLARE_FINAL_TYPE(HyocrWorker, hyocr_worker, HYOCR, WORKER, GObject)

HyocrWorker     *hyocr_worker_new(void);
/* (Re)loads the engine after the jobs queued so far. */
void             hyocr_worker_load(HyocrWorker *self, const HyocrEngineSettings *settings);
/* Jobs wait while no engine is loaded and run once one is. */
void             hyocr_worker_push(HyocrWorker *self, HyocrJob *job);
/* Cancels every job and stops the thread; waits for it (within one decode step,
 * or the end of an engine load). Called by dispose too. */
void             hyocr_worker_shutdown(HyocrWorker *self);

HyocrWorkerState hyocr_worker_get_state(HyocrWorker *self);
const GError    *hyocr_worker_get_error(HyocrWorker *self);
const char      *hyocr_worker_get_model_dir(HyocrWorker *self);   /* of the last load */
gboolean         hyocr_worker_is_cpu(HyocrWorker *self);
/* Why the engine runs on the CPU though the GPU was wanted ("No NVIDIA driver —
 * …", in full), or NULL: for Preferences and About, not a toast at every load. */
const char      *hyocr_worker_get_gpu_note(HyocrWorker *self);
/* Live figures from any thread, and whether they are the CPU's (RAM) or the GPU's, read
 * with them: hyocr_worker_is_cpu says so only once the load is announced on the main
 * thread, after the engine already answers here. FALSE when no engine is loaded. */
gboolean         hyocr_worker_get_mem_info(HyocrWorker *self, hyocr_mem_info *out, gboolean *cpu);
/* The memory limit of the loaded engine, bytes (0 = none). */
int64_t          hyocr_worker_get_memory_limit(HyocrWorker *self);
/* Jobs run on a server (the last load was one): its name for messages, or NULL. */
const char      *hyocr_worker_get_server(HyocrWorker *self);
/* A hyocr serve's memory and load, from its /metrics (blocking: call it off the
 * main thread); FALSE with error when the server is not one, or no server is used. */
gboolean         hyocr_worker_get_server_metrics(HyocrWorker *self, int64_t *memory_used, int *running,
                                                 GError **error);

/* The engine's text (len bytes, maybe with NUL bytes) as the app shows, copies and
 * saves it: each NUL becomes ␀ (U+2400). */
char            *hyocr_worker_displayable_text(const char *text, size_t len);

G_END_DECLS
