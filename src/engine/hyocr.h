/* hyocr — public API of libhyocr: load a HunyuanOCR checkpoint once, then run
 * OCR jobs (one image + one task) that stream their text through a callback.
 *
 *     hyocr_engine_params ep;
 *     hyocr_engine_params_init(&ep);
 *     ep.model_dir = "/path/to/HunyuanOCR";
 *     hyocr_engine *eng = hyocr_engine_init(&ep, &error);
 *
 *     hyocr_job_params jp;
 *     hyocr_job_params_init(&jp);
 *     jp.image_path = "page.png";
 *     jp.task = HYOCR_TASK_PARSE_DOCUMENT;
 *     jp.on_event = my_callback;            // pieces of text as they are generated
 *     hyocr_job_result res = { 0 };
 *     hyocr_engine_run(eng, &jp, &res, &error);
 *     ...
 *     hyocr_job_result_clear(&res);
 *     hyocr_engine_free(eng);
 *
 * An engine is a long-lived scheduler with a thread of its own: that thread
 * loads the model (hyocr_engine_init waits for it) and runs every job, and the
 * jobs' callbacks are invoked on it. Jobs may be submitted from any thread at
 * any time (hyocr_engine_submit); they wait in a bounded FIFO queue and are
 * admitted between decode steps while memory allows, so a job submitted while
 * others decode joins them (continuous batching): their decode steps are
 * shared, a new job's vision + prefill runs between steps, and when the KV pool
 * is full the latest admitted job is preempted (its K/V swapped to host memory,
 * or recomputed) and resumed later. hyocr_engine_run and hyocr_engine_run_batch
 * submit jobs and wait for them. There is no global state: several engines may
 * coexist. */
#pragma once
#include "config.h"
#include "document.h"
#include "hyocr-types.h"
#include "resize.h"
#include "memplan.h"
#include "prompt.h"
#include <gio/gio.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct hyocr_engine hyocr_engine;

typedef enum {
    HYOCR_DEVICE_AUTO,   /* CUDA when usable, else CPU (one notice through the log callback) */
    HYOCR_DEVICE_CPU,
    HYOCR_DEVICE_CUDA,
} hyocr_device;

/* Model-variant switches (spec §0.2). CONFIG keeps what the checkpoint's config says (R1 by default). */
typedef enum {
    HYOCR_VARIANT_CONFIG,
    HYOCR_VARIANT_R1,
    HYOCR_VARIANT_R2,
} hyocr_variant;

typedef enum {
    HYOCR_LOG_INFO,
    HYOCR_LOG_WARNING,
} hyocr_log_level;

typedef void (*hyocr_log_fn)(hyocr_log_level level, const char *message, void *user_data);

typedef struct {
    const char         *model_dir;
    hyocr_device        device;
    int                 n_threads;        /* CPU threads; 0 = all cores */
    int                 cuda_device;      /* ordinal */
    hyocr_compute_dtype cuda_dtype;       /* F16 (default) or BF16 */
    int64_t             memory_limit;     /* bytes the backend may take; 0 = no limit; < 0: −millionths of the card
                                           * (hyocr_memory_limit_fraction) */
    int                 max_model_len;    /* prompt + output tokens; 0 = the config's max_position_embeddings */
    int                 kv_block_size;    /* tokens per KV block; 0 = 16 */
    int                 kv_n_blocks;      /* fixed pool size; 0 = grow on demand up to max_model_len */
    hyocr_variant       rope_variant;     /* XD-RoPE section layout */
    hyocr_variant       posemb_variant;   /* ViT position-table interpolation */
    hyocr_log_fn        log;              /* NULL: g_message for warnings, g_info otherwise */
    void               *log_data;
    int                 vit_chunk_rows;   /* rows per chunk of the ViT's row-wise parts; 0 = 4096 */
    int                 text_chunk_rows;  /* prefill rows per chunk; 0 = 1024; a call of up to twice
                                           * this many rows is one chunk (hyocr_memplan_text_chunk).
                                           * Multiples of 512 keep the CPU backend's results
                                           * bit-identical */
    int                 max_batch;        /* jobs decoding together at most; ≤ 0 = 16 */
    int64_t             swap_space;       /* bytes of (pinned) host memory for the K/V of preempted jobs;
                                           * 0 = recompute them instead */
    int                 max_queue;        /* hyocr_engine_submit: jobs waiting for admission at most
                                           * (HYOCR_ERROR_BUSY beyond); ≤ 0 = no bound */
    int                 speculative_tokens;  /* speculative decoding with the model's DFlash draft (dflash/):
                                              * drafts a round, at most the draft's block size − 1;
                                              * 0 = off (the draft is not loaded); < 0 = the default
                                              * (the block size − 1, 15 for the release) */
    int                 speculative_max_batch;  /* jobs decoding together above which every job steps
                                                 * plainly; ≤ 0 = 1 (on an H200 rounds of 4 and 16
                                                 * jobs cost more than they saved, docs/PERFORMANCE.md) */
    /* Tests and benchmarks only: instead of the draft's proposals, a round verifies the
     * continuation (one a line of this file, token ids) that agrees with the job's tokens so far,
     * right for draft_standin_k drafts (a mean when fractional) and wrong after; the draft still
     * runs. NULL: the HYOCR_DRAFT_STANDIN* switches (tuning.h). */
    const char         *draft_standin;
    double              draft_standin_k;
    bool                draft_standin_no_draft;  /* and the draft does not run (its cost, by difference);
                                                  * HYOCR_DRAFT_STANDIN_NO_DRAFT=1 */
} hyocr_engine_params;

void hyocr_engine_params_init(hyocr_engine_params *p);
/* The memory_limit that stands for a fraction f ∈ (0, 1] of the device (or of the RAM
 * for the CPU); the backend resolves it to bytes once it knows the size. */
int64_t hyocr_memory_limit_fraction(double f);

/* Loads config, tokenizer, checkpoint, backend and weights. */
hyocr_engine *hyocr_engine_init(const hyocr_engine_params *p, GError **error);
void          hyocr_engine_free(hyocr_engine *eng);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_engine, hyocr_engine_free)

const hyocr_config *hyocr_engine_config(const hyocr_engine *eng);
/* Why the engine runs on the CPU though HYOCR_DEVICE_AUTO asked for the GPU (the CUDA
 * backend's error), or NULL: it runs on CUDA, the CPU was asked for, or the build has no
 * CUDA. The front ends say it in their own words, once. */
const GError       *hyocr_engine_get_cuda_unusable(const hyocr_engine *eng);
/* The backend's name, for showing ("cpu", "cuda"; "none" after a failed precision reload). */
const char         *hyocr_engine_backend_name(const hyocr_engine *eng);
/* The kind of backend the engine runs on, for deciding by (HYOCR_BACKEND_NONE after a
 * failed precision reload). Thread-safe. */
hyocr_backend_kind  hyocr_engine_backend_kind(hyocr_engine *eng);
/* A conversation as the release's chat template renders it (prompt.h,
 * hyocr_chat_render), for hyocr_job_params.rendered_chat; *n_images gets its
 * image parts (a job takes exactly one). Thread-safe. */
char               *hyocr_engine_render_chat(hyocr_engine *eng, const hyocr_chat_message *msgs, int n_msgs,
                                             int *n_images, GError **error);

typedef enum {
    HYOCR_STOP_NONE,            /* the job failed before generating */
    HYOCR_STOP_EOS,
    HYOCR_STOP_MAX_NEW_TOKENS,
    HYOCR_STOP_MAX_MODEL_LEN,
    HYOCR_STOP_REPETITION,      /* streaming tail-repetition check */
    HYOCR_STOP_CANCELLED,
    HYOCR_STOP_REQUESTED,       /* one of the job's stop strings or stop tokens */
} hyocr_stop_reason;

const char *hyocr_stop_reason_name(hyocr_stop_reason r);   /* "eos", "max_new_tokens", … */

/* The bytes a generated token decodes to alone (UTF-8, or a piece of a character; a special
 * token gives its text), as log-probabilities name their tokens; empty for an id outside the
 * vocabulary. Thread-safe. */
GBytes *hyocr_engine_token_bytes(hyocr_engine *eng, int32_t id);
/* … and as text: those bytes with any piece of a character as U+FFFD (Python's
 * errors="replace"); *len gets its bytes (a token may decode to a NUL byte). */
char   *hyocr_engine_token_text(hyocr_engine *eng, int32_t id, size_t *len);

typedef enum {
    HYOCR_EVENT_PREPROCESS,   /* image decoded, pixels and prompt ready (prompt, pixels set) */
    HYOCR_EVENT_VISION,       /* vision tower + merger done */
    HYOCR_EVENT_PREFILL,      /* prompt processed; first token about to be chosen */
    HYOCR_EVENT_TOKEN,        /* one generated token (token, piece) */
    HYOCR_EVENT_DONE,
    HYOCR_EVENT_ERROR,        /* error set */
    HYOCR_EVENT_CANCELLED,
    HYOCR_EVENT_RESTART,      /* FP16 overflowed: the job starts over in another precision (BF16) once
                               * the others are done; discard what it streamed so far */
} hyocr_event_type;

/* How likely a generated token was: log-probabilities from the raw logits, before the repetition
 * penalty and the temperature (vLLM's default raw_logprobs), with the job's top alternatives. */
#define HYOCR_TOP_LOGPROBS_MAX 20

typedef struct {
    int32_t id;
    float   logprob;
} hyocr_logprob;

typedef struct {
    float         logprob;                       /* the chosen token's */
    int           n_top;                         /* the job's top_logprobs */
    hyocr_logprob top[HYOCR_TOP_LOGPROBS_MAX];   /* the most likely ids, most likely first (ties: lower id) */
} hyocr_token_logprobs;

typedef struct {
    hyocr_event_type    type;
    double              elapsed_ms;    /* since the job started */
    int32_t             token;         /* TOKEN; -1 for the final flush of bytes that never formed a
                                        * character (piece is then U+FFFD…) */
    const char         *piece;         /* TOKEN: newly completed UTF-8 text (may be ""), special tokens
                                        * skipped; DONE: the final text */
    size_t              piece_len;     /* bytes of piece: text can hold NUL bytes (a token may decode to
                                        * byte 0, as in the reference), so use this, not strlen */
    int                 n_generated;   /* tokens generated so far */
    int                 batch_size;    /* TOKEN: jobs whose tokens the same forward pass chose (1 for the
                                        * first token, which comes from the job's own prefill) */
    int                 prompt_tokens;
    const hyocr_prompt *prompt;        /* PREPROCESS */
    const hyocr_pixels *pixels;        /* PREPROCESS */
    const GError       *error;         /* ERROR */
    hyocr_stop_reason   stop_reason;   /* DONE, CANCELLED: why it ended */
    int                 stop_string;   /* DONE: as hyocr_job_result's */
    const hyocr_token_logprobs *logprobs;   /* TOKEN with a real token (not -1), where the job asked */
} hyocr_event;

typedef void (*hyocr_event_fn)(const hyocr_event *ev, void *user_data);
/* Receives the fp32 logits [n_vocab] each generated token was chosen from,
 * before the repetition penalty; step counts from 0. */
typedef void (*hyocr_logits_fn)(const float *logits, int n_vocab, int step, void *user_data);

typedef struct {
    const char         *image_path;        /* either a file (a document's first page; its name in
                                            * messages with image_data) … */
    const hyocr_image  *image;             /* … or decoded RGB (not taken over) … */
    GBytes             *image_data;        /* … or an encoded image in any format hyocr reads (referenced) … */
    hyocr_document     *document;          /* … or page `page` (0-based) of a document (referenced
                                            * while the job lives; a PDF page is rendered to fit the
                                            * model's max_pixels, see hyocr_render_options) */
    int                 page;
    const char         *name;              /* how messages name the job; NULL: image_path */
    hyocr_task          task;
    const char *const  *fields;            /* EXTRACT_FIELDS: NULL-terminated */
    const char         *custom_prompt;     /* CUSTOM: the whole prompt text */
    const char         *rendered_chat;     /* instead of the task: a conversation holding the one image, as
                                            * hyocr_engine_render_chat renders it */
    int                 max_new_tokens;    /* default 8192 */
    float               temperature;       /* ≤ 0: greedy (default) */
    int                 top_k;
    float               top_p;
    uint64_t            seed;
    float               repetition_penalty;  /* < 0: model default (generation_config, else 1.08 for 1.5, else 1) */
    int                 max_side;          /* > 0: Lanczos pre-scale of the long edge */
    bool                ignore_eos;        /* benchmarks: generate max_new_tokens */
    bool                no_tail_stop;      /* disable the 1.5 streaming tail-repetition stop */
    const char *const  *stop;              /* NULL-terminated UTF-8 strings, as many and as long as stop.h
                                            * allows (NULL: none):
                                            * the answer ends before the first of them its text holds
                                            * (OpenAI's "stop"); the stream holds back what could still
                                            * become one */
    bool                stop_included;     /* … and ends after it instead (vLLM's include_stop_str_in_output) */
    const int32_t      *stop_token_ids;    /* ids that end the answer after them (stop.h's limit), also with
                                            * ignore_eos (vLLM's stop_token_ids) */
    int                 n_stop_token_ids;
    bool                logprobs;          /* each token's log-probability (hyocr_token_logprobs), without
                                            * speculation: the backend computes them beside its choice */
    int                 top_logprobs;      /* … and that many most likely alternatives, 0..HYOCR_TOP_LOGPROBS_MAX */
    int                 speculative_tokens;  /* < 0: the engine's (default); 0: no speculation for this job;
                                              * N: at most N drafts a round (speculation needs the engine's on) */
    hyocr_event_fn      on_event;
    void               *user_data;
    hyocr_logits_fn     on_logits;
    void               *logits_data;
    GCancellable       *cancellable;       /* optional, in addition to hyocr_engine_cancel */
} hyocr_job_params;

void hyocr_job_params_init(hyocr_job_params *p);

typedef struct {
    double preprocess_ms, vision_ms, prefill_ms, decode_ms, total_ms;
    double first_token_ms;       /* job start → first TOKEN event */
    double decode_tokens_per_s;  /* tokens after the first / decode time */
} hyocr_timings;

typedef struct {
    char             *text;            /* final text (clean_repeated_substrings applied) */
    char             *raw_text;        /* concatenated streamed pieces, before clean-up */
    size_t            text_len, raw_text_len;   /* their bytes: both can hold NUL bytes */
    GArray           *token_ids;       /* int32_t, generated ids including a final eos */
    GArray           *logprobs;        /* hyocr_token_logprobs, one per token id, where the job asked; else NULL */
    int               prompt_tokens;
    int               n_image_tokens;
    int               image_width, image_height;      /* after decode (and max_side) */
    int               grid_h, grid_w;
    hyocr_stop_reason stop_reason;
    int               stop_string;     /* REQUESTED by a stop string: 1 + its index in the job's stop; else 0 */
    float             repetition_penalty;             /* the value used */
    hyocr_timings     timings;
    hyocr_mem_info    memory;          /* backend figures after the job (kv_used at its end) */
    GError           *error;           /* hyocr_engine_run_batch: why this job failed or was cancelled */
    bool              redone;          /* FP16 overflowed (NaN/Inf): the job was rerun in redone_dtype */
    hyocr_compute_dtype redone_dtype;
    int               n_preempted;     /* times the job was preempted (swapped out or recomputed) */
    int               speculative_rounds;  /* speculative rounds (draft + verify) the job ran */
    int               speculative_tokens;  /* tokens those rounds committed (their mean: tokens / rounds) */
    int               speculative_fallbacks;  /* times the job went back to plain steps for low acceptance */
} hyocr_job_result;

void hyocr_job_result_clear(hyocr_job_result *r);

/* Runs one job to the end (submits it and waits). Returns false with error set
 * on failure (ERROR event sent too) or on cancellation (HYOCR_ERROR_CANCELLED;
 * out still holds what was generated, stop_reason CANCELLED). The engine stays
 * usable after either. out may be NULL. Never call it from a job's callback. */
bool hyocr_engine_run(hyocr_engine *eng, const hyocr_job_params *job, hyocr_job_result *out, GError **error);

/* Runs n_jobs jobs with continuous batching (see the top of this file), each
 * with its own events, in the same order as hyocr_engine_run sends them; the
 * jobs' events interleave. results[i] gets job i's result; a job that fails
 * (bad image, refused for memory, cancelled by its cancellable) has
 * results[i].error set and does not stop the others. Returns false with error
 * set only when the batch could not run at all (bad arguments, the engine is
 * closing). The jobs are queued together (max_queue does not apply: the caller
 * holds them already) behind those submitted before, and share decode steps
 * with any other job the engine runs meanwhile. hyocr_engine_cancel cancels
 * every job of the batch. hyocr_engine_run is the one-job case. */
bool hyocr_engine_run_batch(hyocr_engine *eng, const hyocr_job_params *jobs, int n_jobs, hyocr_job_result *results,
                            GError **error);

/* Pays the one-off costs of a GPU engine's first job (CUDA module loading, cuBLAS
 * initialisation and plans, decode graph capture — about 0.2 s on an H200, where
 * a warm 1024² page then reaches its first token in ~40 ms) by running a
 * synthetic blank 1024×1024 page for a few tokens, nothing streamed. The memory
 * it took is given back. A no-op on the CPU backend (it would take minutes).
 * Call it after hyocr_engine_init where the first answer should come fast (the
 * app does, while it shows "Loading"). hyocr_engine_cancel stops it. */
bool hyocr_engine_warmup(hyocr_engine *eng, GError **error);

/* Thread-safe: stops every job submitted before the call (running, preempted or
 * queued) within one decode step (or ViT block). No effect on later jobs; none
 * when idle. */
void hyocr_engine_cancel(hyocr_engine *eng);

/* Thread-safe: the backend's live memory figures, with kv_used following the jobs
 * running now (0 when idle), so another thread can draw a gauge while jobs run.
 * Must not race hyocr_engine_free. */
void hyocr_engine_mem_info(hyocr_engine *eng, hyocr_mem_info *out);

/* ---- jobs submitted at any time ------------------------------------------------- */

typedef struct hyocr_request hyocr_request;   /* a submitted job: reference-counted, thread-safe */

/* Thread-safe, also from a job's callback: queues a job behind those submitted
 * before (FIFO); the engine's thread admits it between decode steps, so it joins
 * the jobs decoding now when memory allows. Its events come on the engine's
 * thread. The strings of params (image_path, fields, custom_prompt,
 * rendered_chat) are copied and image_data and cancellable referenced; image
 * and the callbacks' data must stay valid until the job has ended (its DONE,
 * ERROR or CANCELLED event; hyocr_request_wait returns then).
 * Fails with HYOCR_ERROR_BUSY when max_queue jobs wait for admission already,
 * or HYOCR_ERROR_CANCELLED when the engine is being freed. */
hyocr_request *hyocr_engine_submit(hyocr_engine *eng, const hyocr_job_params *params, GError **error);
/* n jobs queued together, in order: the scheduler sees them in the same round,
 * so they start together (all or none are queued; out gets n requests). */
bool       hyocr_engine_submit_many(hyocr_engine *eng, const hyocr_job_params *params, int n, hyocr_request **out,
                                    GError **error);
/* Blocks until the job has ended, then moves its result into out (may be NULL;
 * a second wait gets an empty result). Returns false with error set as
 * hyocr_engine_run does. Never call it from a callback of the same engine. */
bool       hyocr_request_wait(hyocr_request *job, hyocr_job_result *out, GError **error);
/* Thread-safe: stops the job within one decode step (or ViT block): its KV
 * blocks go back to the pool then and the other jobs decode on; a queued or
 * preempted job ends without running further. Ends with a CANCELLED event. */
void       hyocr_request_cancel(hyocr_request *job);
bool       hyocr_request_is_done(hyocr_request *job);   /* thread-safe */
hyocr_request *hyocr_request_ref(hyocr_request *job);
void       hyocr_request_unref(hyocr_request *job);     /* any thread; the engine holds its own while it runs */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_request, hyocr_request_unref)

typedef struct {
    int     running;         /* jobs decoding (holding KV blocks) */
    int     waiting;         /* submitted and not yet admitted, or preempted and waiting to resume */
    int     last_batch;      /* jobs in the latest decode step */
    int     largest_batch;   /* the most jobs one decode step has run */
    int64_t decode_steps;    /* shared decode steps run so far */
    int64_t kv_blocks_total; /* the KV pool now (0 when idle) */
    int64_t kv_blocks_used;
    int64_t kv_grows;        /* times the pool was replaced by a larger one while jobs held it */
    int64_t vision_beside;   /* vision passes run beside decode steps (the backend's side lane) */
} hyocr_engine_stats;

/* Thread-safe: what the scheduler is doing now (for gauges and metrics). */
void hyocr_engine_get_stats(hyocr_engine *eng, hyocr_engine_stats *out);
/* Thread-safe: changes max_batch for the jobs admitted from now on. */
void hyocr_engine_set_max_batch(hyocr_engine *eng, int max_batch);

/* The memory plan of a job on this engine (memplan.h): weights, KV pool, vision
 * and prefill scratch, the peak; budget and fits say whether it fits the memory
 * limit or, on CUDA without one, the card's free memory plus what the engine
 * holds (budget 0: nothing known, fits). A job that fits only with the vision
 * weights off the device while it decodes gets that plan (vision_offload set),
 * as hyocr_engine_run would run it. hyocr_engine_run refuses a job that does
 * not fit before its vision tower, with HYOCR_ERROR_NO_MEMORY. Arithmetic
 * only; thread-safe, also while a job runs. */
void hyocr_engine_memory_plan(hyocr_engine *eng, int grid_h, int grid_w, int prompt_tokens, int max_new_tokens,
                              hyocr_memplan *out);
/* The same for a job as hyocr_engine_run would see it: decodes the image
 * (max_side applied) and builds the prompt to learn the grid and prompt length;
 * runs nothing. Fails as the job's preprocessing would. Also fills the image
 * size, and for a job that does not fit the advice (the largest max_side and
 * max_new_tokens that would fit): hyocr_engine_run's refusal of the same job
 * carries the same plan (hyocr_error_get_memplan). Thread-safe. */
bool hyocr_engine_plan_job(hyocr_engine *eng, const hyocr_job_params *job, hyocr_memplan *out, GError **error);

/* ---- translations, for the programs ------------------------------------------- */

/* The build tree this program was started from when it runs uninstalled
 * (build/src/cli/hyocr, build/src/app/hyocr-gtk); NULL when installed. */
char *hyocr_uninstalled_build_root(void);
/* Binds the "hyocr" domain (the programs' and the engine's messages): to
 * $HYOCR_LOCALEDIR when set, else to the build tree's catalogs when uninstalled,
 * else to the install prefix's. */
void  hyocr_i18n_bind(void);

G_END_DECLS
