/* hyocr — what engine.c (loading, one job's stages) and batch.c (the
 * scheduler: the engine's thread, continuous batching) share, and the job's
 * end that remote.c's jobs hand over the same way. Not installed; not part of
 * the API. */
#pragma once
#include "hyocr.h"
#include "memplan.h"
#include "model.h"
#include "pinned.h"
#include "postprocess.h"
#include "sampler.h"
#include "speculate.h"
#include "tokenizer.h"

G_BEGIN_DECLS

/* Jobs that decode together where the params leave max_batch at 0 (params_init's too). */
#define HYOCR_DEFAULT_MAX_BATCH 16

/* The strings and arrays of a submitted job's params, copied, and its image's bytes and
 * document, referenced, so the job owns what it reads for its life (batch.c, remote.c): a
 * front end may let go of them once it has submitted. The cancellable is the caller's
 * business (a remote job wraps it). */
typedef struct {
    char           *image_path, *custom_prompt, *rendered_chat, *name;
    char          **fields, **stop;
    int32_t        *stop_token_ids;
    GBytes         *image_data;
    hyocr_document *document;
} hyocr_job_copies;

/* *dst = *src with its strings and arrays pointing into own's copies. */
void hyocr_job_params_copy(hyocr_job_params *dst, hyocr_job_copies *own, const hyocr_job_params *src);
/* top_logprobs in range where the job asks for logprobs (local and remote jobs alike). */
bool hyocr_job_params_check_logprobs(const hyocr_job_params *p, GError **error);
void hyocr_job_copies_clear(hyocr_job_copies *own);

struct hyocr_engine {
    char               *model_dir;
    hyocr_engine_params params;           /* as given (model_dir → ours), for a reload in another dtype */
    hyocr_tuning        tuning;           /* the HYOCR_* switches, read once at init (tuning.h) */
    GError             *cuda_unusable;    /* why CUDA was not used though the device was auto */
    hyocr_log_fn        log;
    void               *log_data;
    hyocr_checkpoint   *ck;
    hyocr_tokenizer    *tok;
    hyocr_backend      *be;
    hyocr_model        *model;            /* NULL only after a failed dtype reload */
    int                 max_model_len;
    int                 kv_fixed_blocks;  /* the engine's fixed pool, 0 when it grows per job */
    int32_t             eos[2 * HYOCR_MAX_EOS + 1];
    int                 n_eos;
    gint                cancel_gen;       /* atomic: hyocr_engine_cancel bumps it; a job submitted before is
                                           * cancelled */
    gint                busy;             /* atomic: jobs hold device memory (the plan is not "at rest") */
    struct hyocr_sched *sched;            /* batch.c: the thread that loads the model and runs every job */
    gint                live_kv_blocks;   /* atomic: KV blocks held by the running jobs, for mem_info */
    int64_t             kv_block_bytes;   /* fixed after load, so mem_info never touches the pool */
    GMutex              model_lock;       /* held while be/model are swapped (dtype reload) and by mem_info */
    hyocr_dflash       *draft;            /* the DFlash draft on the backend, NULL: no speculation */
    int                 spec_tokens;      /* drafts a round for the jobs that speculate (0 with no draft) */
    hyocr_spec_standin *standin;          /* HYOCR_DRAFT_STANDIN (tests, benchmarks): proposes known text */
    bool                standin_no_draft; /* … and the draft does not run */
    hyocr_pinned_pool  *pixels_pool;      /* pinned pages' pixels (pinned.h); NULL: ordinary memory */
};

/* Where a job of a batch is. */
typedef enum {
    JOB_QUEUED,      /* planned, waiting for room */
    JOB_RUNNING,     /* holds KV blocks, decodes */
    JOB_SWAPPED,     /* preempted: its K/V sit in host memory */
    JOB_RECOMPUTE,   /* preempted: its K/V are gone, the prefill is redone on resume */
    JOB_REDO,        /* non-finite in FP16: set aside for a BF16 rerun */
    JOB_VISION,      /* its vision pass runs on the side lane, beside the decode steps */
    JOB_FINISHED,
} job_phase;

typedef struct {
    hyocr_engine           *eng;
    hyocr_request          *handle;         /* the submitted job this state runs (NULL when only planning) */
    int                     cancel_gen;     /* the engine's cancel generation when it was submitted */
    const hyocr_job_params *job;
    hyocr_job_result       *res;
    gint64                  t0, t_stage;
    hyocr_image            *img_owned;
    const hyocr_image      *img;
    hyocr_pixels           *px;
    int                     grid_h, grid_w;   /* the patch grid (also when planning, without px) */
    int                     img_w, img_h;     /* the image's size (also when planning, without img) */
    hyocr_prompt           *prompt;
    hyocr_buf              *vision;
    int                     n_vision_rows;
    hyocr_kv_seq           *seq;
    hyocr_sampler          *sampler;
    hyocr_detokenizer      *detok;
    GString                *text;
    glong                   n_chars;
    size_t                  streamed;       /* bytes of text the TOKEN events have carried */
    bool                    stop_matched;   /* text ends at a stop string: nothing more joins it */
    hyocr_tail_check        tail;
    float                  *raw_logits;     /* logprobs: the row before the penalty changes it */
    int                     n_gen;
    /* scheduling */
    job_phase               phase;
    bool                    prepared;       /* preprocessed and its memory checked (plan set) */
    int                     batch_size;     /* jobs in the forward pass that chose the next token */
    int                     order;          /* admission order: the latest is preempted first */
    int32_t                 next_id;        /* the token the next decode step feeds */
    int                     kv_tokens;      /* what its pool share must hold at most */
    hyocr_memplan           plan;
    int64_t                 redo_prefill;   /* the plan's prefill bytes for a recompute (kv_tokens long) */
    float                  *host_vision;    /* merger output kept for a recompute */
    size_t                  host_vision_n;
    void                   *swap;           /* its K/V while swapped out */
    size_t                  swap_bytes;
    int                     pick_slot;      /* -1: none */
    int                     pick_synced;    /* generated tokens the slot's penalty set holds */
    hyocr_spec_job         *spec;           /* the job's draft state; NULL: it decodes one token a step */
    int                     n_drafts;       /* this step: drafts its round verifies (0: a plain step) */
    bool                    vision_offload; /* its plan fits only with the vision weights off the device */
    /* decode + pixels done ahead on a thread while the GPU runs other jobs */
    GThread                *prefetch;       /* joined before anything reads img/px */
    GError                 *prefetch_error;
} job_state;

/* engine.c: loading and unloading, on the scheduler's thread (a CUDA device is
 * bound to the thread that selected it). */
bool   hyocr_engine_load(hyocr_engine *eng, GError **error);
void   hyocr_engine_unload(hyocr_engine *eng);
/* batch.c: the scheduler's thread, started by hyocr_engine_init once the host
 * side is open; it loads the model and says whether that worked. */
bool   hyocr_sched_start(hyocr_engine *eng, GError **error);
void   hyocr_sched_stop(hyocr_engine *eng);   /* ends every job (cancelled), unloads, joins */
bool   hyocr_request_is_cancelled(const hyocr_request *job);

/* How messages name a job: its name, file, or what it is. */
static inline const char *hyocr_job_name(const hyocr_job_params *job)
{
    return job->name ? job->name : job->image_path ? job->image_path
                                                   : job->document ? hyocr_document_name(job->document)
                                                                   : "(decoded image)";
}

/* engine.c: one job's stages, each false with error set on failure. */
void   hyocr_engine_log(hyocr_engine *eng, hyocr_log_level level, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
void   hyocr_job_state_init(job_state *st, hyocr_engine *eng, const hyocr_job_params *job, hyocr_job_result *res);
bool   hyocr_job_begin(job_state *st, GError **error);          /* validate, sampler, detokenizer */
bool   hyocr_job_preprocess(job_state *st, bool emit_event, GError **error);
void   hyocr_job_drop_inputs(job_state *st);                    /* image, pixels, prompt */
/* Starts decoding the image and making the pixels on a thread; the job's
 * preprocess (or release) takes them. The caller must not touch img/px meanwhile. */
void   hyocr_job_prefetch(job_state *st);
bool   hyocr_job_check_memory(job_state *st, GError **error);   /* fills st->plan; refusal with advice */
/* Drafts a round the job speculates with: 0 when the engine has no draft, the job asks for none or
 * wants the logits (the host chooses its tokens then). */
int    hyocr_job_spec_tokens(const job_state *st);
/* The vision pass queued (engine.c says more); hyocr_job_vision_done then waits for it. */
bool   hyocr_job_vision_queue(job_state *st, bool beside, GError **error);
bool   hyocr_job_vision_done(job_state *st, GError **error);
bool   hyocr_job_cancelled(void *data);
bool   hyocr_job_stage_done(job_state *st, double *ms, GError **error);
void   hyocr_job_emit_simple(job_state *st, hyocr_event_type type);
/* Records and streams one token chosen from logits (NULL on the pick path, id
 * given); returns the stop reason it causes. */
hyocr_stop_reason hyocr_job_take_token(job_state *st, float *logits, int32_t id, const hyocr_token_logprobs *lp);
void   hyocr_job_finish(job_state *st, const GError *err);       /* result, DONE/ERROR/CANCELLED event */
void   hyocr_job_release(job_state *st);                        /* everything but the result */
bool   hyocr_engine_reload(hyocr_engine *eng, hyocr_compute_dtype dtype, GError **error);
bool   hyocr_engine_is_eos(const hyocr_engine *eng, int32_t id);
/* The memory budget of a job (memory limit, or on CUDA free + held); 0 = unknown. */
int64_t hyocr_engine_budget(hyocr_engine *eng);

/* A job's end, handed to the threads that wait for it: a local job (batch.c) and a job on a
 * server (remote.c) alike. The runner fills res, then marks it done (once, after the end
 * event); the first wait takes res. */
typedef struct {
    GMutex           lock;
    GCond            cond;
    bool             done;   /* under lock: the end event has been sent */
    hyocr_job_result res;
} hyocr_job_end;

void   hyocr_job_end_init(hyocr_job_end *e);
void   hyocr_job_end_clear(hyocr_job_end *e);    /* res too */
void   hyocr_job_end_mark_done(hyocr_job_end *e);  /* waiters wake */
bool   hyocr_job_end_is_done(hyocr_job_end *e);
/* Blocks until done; false with the job's error copied when it failed. out (may be NULL)
 * takes the result, which is then the caller's to clear. */
bool   hyocr_job_end_wait(hyocr_job_end *e, hyocr_job_result *out, GError **error);

G_END_DECLS
