/* hyocr — speculative decoding with the DFlash draft (issue 20; dflash-notes §1).
 *
 * A round: the draft proposes drafts after the last committed token (the bonus), the target
 * runs [bonus, drafts] as one verify block, each row choosing the token plain decoding would
 * have chosen there (the repetition penalty over the history and the block's tokens before the
 * row; a sampled row drawing with the u of the token it stands for), and the drafts are taken
 * while each equals the choice of the row before it; then the target's own choice follows. The
 * output is, token for token, what plain decoding gives; the drafts only decide how many tokens
 * one forward commits. Jobs that speculate and jobs that do not share a step: every sequence
 * brings its own block (or its one row). The draft's context is the target's tapped layers of
 * every token in the cache: a round extends it with the block's rows, a plain step keeps its
 * row aside until the next round takes them in.
 *
 * The adaptive fallback: a job that speculates measures its acceptance over windows of rounds
 * and goes back to plain steps when a round commits fewer tokens than it costs (the measured
 * cost of a round over a plain step at the batch size), trying again after a backoff that
 * doubles while it keeps failing. */
#pragma once
#include "dflash.h"
#include "sampler.h"

G_BEGIN_DECLS

#define HYOCR_SPEC_PENDING 64   /* tapped rows of plain steps gathered before the context takes them */
/* The fallback's constants, set when a round cost 6.4 plain steps on an H200: a draft that is
 * always wrong costs a window a try, and the tries of a 1024-token page (at 0, ~130, ~390, ~900)
 * then added about 4 % to its plain time. A round now costs ~2.2 plain steps, and a page whose
 * drafts are all wrong decodes at 0.98× plain (docs/PERFORMANCE.md, issue 20). */
#define HYOCR_SPEC_WINDOW  2    /* rounds over which acceptance is measured */
#define HYOCR_SPEC_BACKOFF 128  /* plain steps after a first failed window; doubles to ... */
#define HYOCR_SPEC_BACKOFF_MAX 1024
#define HYOCR_SPEC_MIN_THRESHOLD 1.05   /* tokens a round must commit at least, whatever was measured */

/* The fallback's state for one job. */
typedef struct {
    bool on;                       /* speculating */
    int  left;                     /* rounds left in this window (on), plain steps before the next try (off) */
    int  window_rounds, window_tokens;
    int  backoff;                  /* plain steps of the next fallback */
    int  fallbacks;
} hyocr_spec_policy;

void hyocr_spec_policy_init(hyocr_spec_policy *p);
/* Whether this step speculates; a plain step counts towards the next try. */
bool hyocr_spec_policy_speculate(hyocr_spec_policy *p);
/* A round committed tokens; threshold: tokens a round must commit on average to be worth it. */
void hyocr_spec_policy_round(hyocr_spec_policy *p, int committed, double threshold);

/* Step times of the engine, by batch size, for the fallback's threshold: the measured cost of a
 * round over that of a plain step. */
#define HYOCR_SPEC_COST_SAMPLES 16
#define HYOCR_SPEC_COST_BUCKETS 6
typedef struct {
    double ms[2][HYOCR_SPEC_COST_BUCKETS][HYOCR_SPEC_COST_SAMPLES];   /* [plain, round][bucket] */
    int    n[2][HYOCR_SPEC_COST_BUCKETS];
} hyocr_spec_costs;

/* A step of batch jobs took ms; round: every job of it speculated (plain: none did). */
void   hyocr_spec_costs_note(hyocr_spec_costs *c, int batch, bool round, double ms);
/* The median round over the median plain step at that batch size (2 until both are measured),
 * and HYOCR_SPEC_MIN_THRESHOLD at least. */
double hyocr_spec_costs_threshold(const hyocr_spec_costs *c, int batch);
/* Whether plain steps at that batch size have been measured (HYOCR_SPEC_COST_PLAIN of them): until
 * then jobs step plainly, so the first windows are judged against what a round really costs. */
#define HYOCR_SPEC_COST_PLAIN 5
bool   hyocr_spec_costs_plain_known(const hyocr_spec_costs *c, int batch);

/* A job's draft state. */
typedef struct {
    hyocr_dflash_ctx *ctx;
    hyocr_buf        *taps;        /* [block_size, taps · hidden]: the tapped rows of the job's last step */
    hyocr_buf        *pending;     /* [HYOCR_SPEC_PENDING, taps · hidden]: rows of plain steps not in ctx yet */
    int               n_pending;
    int               k;           /* drafts a round */
    hyocr_spec_policy policy;
    int               rounds, round_tokens;   /* rounds run and the tokens they committed */
} hyocr_spec_job;

/* k drafts a round (1 to block_size − 1); the context sized for max_tokens tokens. */
hyocr_spec_job *hyocr_spec_job_new(hyocr_dflash *d, int k, int max_tokens, GError **error);
void            hyocr_spec_job_free(hyocr_dflash *d, hyocr_spec_job *j);
/* taps[n] of the prompt (a prefill with taps) become the context. */
bool            hyocr_spec_job_prefill(hyocr_dflash *d, hyocr_spec_job *j, const hyocr_buf *taps, int n,
                                       GError **error);
/* After a plain step of the job that was not a hyocr_spec_step (its taps row 0 set by it): the
 * row joins the pending ones. */
bool            hyocr_spec_job_keep_row(hyocr_dflash *d, hyocr_spec_job *j, GError **error);

/* One sequence of a step. */
typedef struct {
    hyocr_kv_seq   *kv;            /* up to, not including, bonus */
    hyocr_spec_job *job;           /* NULL: no draft state (no taps kept) */
    int32_t         bonus;         /* the last committed token, not yet run through the target */
    int             n_drafts;      /* 0: one plain row; else a verify block of 1 + n_drafts rows */
    const int32_t  *drafts;        /* NULL: the draft proposes them (job set); else these are verified (the
                                    * test-only stand-in; with a job the draft still runs, for its cost) */
    bool            no_draft;      /* with drafts given: the draft does not run either (benchmarks: its cost by
                                    * difference; the context is not extended, only counted) */
    hyocr_pick      pick;          /* slot (its set: the prompt and every committed token), penalty, draw */
    /* results */
    int32_t         out[HYOCR_DFLASH_MAX_BLOCK];   /* committed: the drafts taken, then the target's choice */
    int             n_out;
    bool            nonfinite;     /* a committed row's logits held NaN or ±Inf */
} hyocr_spec_seq;

/* One step for every sequence: the draft's proposals, one forward of all their rows, the
 * choices, the acceptance. Each kv then holds bonus and the drafts taken (n_out tokens more);
 * a job's context covers the same tokens (or keeps the plain row pending). The slots are not
 * updated: the caller adds out to them (hyocr_model_pick_slot_set). d may be NULL when no
 * sequence has a job. */
bool hyocr_spec_step(hyocr_model *m, hyocr_dflash *d, hyocr_spec_seq *seqs, int n, GError **error);

/* The test-only draft stand-in (HYOCR_DRAFT_STANDIN): known continuations, one per line; a
 * round proposes the continuation that agrees with the job's tokens so far for its first k
 * positions (k may be fractional: rounds alternate so that k is the mean) and wrong tokens
 * after, so the machinery is measured at a chosen acceptance. */
typedef struct hyocr_spec_standin hyocr_spec_standin;
hyocr_spec_standin *hyocr_spec_standin_load(const char *path, double k, GError **error);
void                hyocr_spec_standin_free(hyocr_spec_standin *s);
/* drafts[n] after the tokens gen[n_gen], for the job's round-th round. */
void                hyocr_spec_standin_drafts(const hyocr_spec_standin *s, const int32_t *gen, int n_gen, int round,
                                              int vocab, int32_t *drafts, int n);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_spec_standin, hyocr_spec_standin_free)

G_END_DECLS
