/* Continuous batching (hyocr_engine_run_batch) on the tiny fixture checkpoint:
 * batched tokens equal the reference's greedy output and each job run alone,
 * for several batch sizes; a tiny KV pool forces preemption (swap and
 * recompute) and every job still finishes with the same tokens; a memory
 * budget for one job runs four; a bad image or a cancelled job does not stop
 * the others; each job's events come in order; NaN/Inf weights give a clear
 * error instead of text. Jobs submitted while others decode join their decode
 * steps; cancelling one frees its KV blocks within a step; the queue is bounded;
 * many threads submit at once; freeing the engine ends what it still holds. */
#include "engine-internal.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "hyocr.h"
#include "model.h"
#include "testutil.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#if HYOCR_HAVE_TIFF
#include <tiffio.h>
#endif
#if HYOCR_HAVE_PDF
#include <cairo-pdf.h>
#endif

#define CKPT    "ckpt-flat"
#define MAX_NEW 48
#define N_CASES 3

/* The reference cases of the flat checkpoint: image, task, greedy ids at penalty 1. */
static const struct {
    const char *image;
    hyocr_task  task;
    const char *dir;
} cases[N_CASES] = {
    { "odd_137x91.png", HYOCR_TASK_RECOGNIZE, "odd_137x91.png__recognize" },
    { "big_420x300.png", HYOCR_TASK_SPOTTING, "big_420x300.png__spotting" },
    { "tiny_40x30.png", HYOCR_TASK_EXTRACT_FIELDS, "tiny_40x30.png__extract_fields" },
};
static const char *const fields[] = { "姓名", "date", "total", NULL };

typedef struct {
    int      max_batch;
    int      kv_blocks;
    int64_t  swap_space;
    int64_t  memory_limit;
    int      kv_block_size;
    bool     cuda;
    int      n_swapped, n_freed;   /* preemption notices seen in the log */
} engine_opts;

static void count_log(hyocr_log_level level, const char *message, void *data)
{
    engine_opts *o = data;
    (void)level;
    if (strstr(message, "swapped out")) o->n_swapped++;
    if (strstr(message, "recomputed on resume")) o->n_freed++;
}

static hyocr_engine *open_engine_dir(const char *dir, engine_opts *o, GError **error)
{
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = o && o->cuda ? HYOCR_DEVICE_CUDA : HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    if (o) {
        if (o->max_batch) ep.max_batch = o->max_batch;
        ep.kv_n_blocks = o->kv_blocks;
        ep.kv_block_size = o->kv_block_size;
        ep.swap_space = o->swap_space;
        ep.memory_limit = o->memory_limit;
        ep.log = count_log;
        ep.log_data = (void *)o;
    }
    return hyocr_engine_init(&ep, error);
}

static hyocr_engine *open_engine(engine_opts *o)
{
    g_autofree char *dir = hyocr_test_data(CKPT, NULL);
    g_autoptr(GError) err = NULL;
    hyocr_engine *eng = open_engine_dir(dir, o, &err);
    g_assert_no_error(err);
    return eng;
}

static gboolean require_fixtures(void)
{
    for (int i = 0; i < N_CASES; i++) {
        g_autofree char *img = hyocr_test_data("images", cases[i].image, NULL);
        g_autofree char *ref = hyocr_test_data("model", CKPT, cases[i].dir, "greedy.txt", NULL);
        if (!hyocr_test_require(img) || !hyocr_test_require(ref)) return FALSE;
    }
    g_autofree char *ck = hyocr_test_data(CKPT, "config.json", NULL);
    return hyocr_test_require(ck);
}

/* ---- per-job event recorder ------------------------------------------------------ */

typedef struct {
    GArray  *types;
    GArray  *tokens;
    GString *pieces;
    int      cancel_at;          /* > 0: cancel the job's cancellable at this many tokens */
    GCancellable *cancellable;
    hyocr_engine *cancel_engine; /* non-NULL: hyocr_engine_cancel at cancel_at */
} recorder;

static void recorder_init(recorder *r)
{
    memset(r, 0, sizeof *r);
    r->types = g_array_new(FALSE, FALSE, sizeof(int));
    r->tokens = g_array_new(FALSE, FALSE, sizeof(int32_t));
    r->pieces = g_string_new(NULL);
}

static void recorder_clear(recorder *r)
{
    g_array_unref(r->types);
    g_array_unref(r->tokens);
    g_string_free(r->pieces, TRUE);
    if (r->cancellable) g_object_unref(r->cancellable);
}

static void record(const hyocr_event *ev, void *data)
{
    recorder *r = data;
    int t = ev->type;
    g_array_append_val(r->types, t);
    if (ev->type != HYOCR_EVENT_TOKEN) return;
    g_string_append_len(r->pieces, ev->piece, (gssize)ev->piece_len);   /* NUL bytes too */
    if (ev->token < 0) return;
    g_array_append_val(r->tokens, ev->token);
    g_assert_cmpint(ev->n_generated, ==, (int)r->tokens->len);
    if (r->cancel_at > 0 && (int)r->tokens->len == r->cancel_at) {
        if (r->cancellable) g_cancellable_cancel(r->cancellable);
        if (r->cancel_engine) hyocr_engine_cancel(r->cancel_engine);
    }
}

/* preprocess, vision, prefill, token…, then exactly one end event */
static void check_event_order(const recorder *r, hyocr_event_type end)
{
    const GArray *t = r->types;
    g_assert_cmpuint(t->len, >=, 4);
    g_assert_cmpint(g_array_index(t, int, 0), ==, HYOCR_EVENT_PREPROCESS);
    g_assert_cmpint(g_array_index(t, int, 1), ==, HYOCR_EVENT_VISION);
    g_assert_cmpint(g_array_index(t, int, 2), ==, HYOCR_EVENT_PREFILL);
    for (guint i = 3; i + 1 < t->len; i++) g_assert_cmpint(g_array_index(t, int, i), ==, HYOCR_EVENT_TOKEN);
    g_assert_cmpint(g_array_index(t, int, t->len - 1), ==, end);
}

/* ---- jobs ---------------------------------------------------------------------------- */

typedef struct {
    int               n;
    hyocr_job_params *jp;
    hyocr_job_result *res;
    recorder         *rec;
    char            **paths;
} job_set;

/* n jobs cycling through the reference cases from case first. */
static void job_set_init_from(job_set *s, int n, int first)
{
    s->n = n;
    s->jp = g_new0(hyocr_job_params, n);
    s->res = g_new0(hyocr_job_result, n);
    s->rec = g_new0(recorder, n);
    s->paths = g_new0(char *, n + 1);
    for (int i = 0; i < n; i++) {
        int c = (first + i) % N_CASES;
        s->paths[i] = hyocr_test_data("images", cases[c].image, NULL);
        recorder_init(&s->rec[i]);
        hyocr_job_params *jp = &s->jp[i];
        hyocr_job_params_init(jp);
        jp->image_path = s->paths[i];
        jp->task = cases[c].task;
        jp->fields = fields;
        jp->max_new_tokens = MAX_NEW;
        jp->repetition_penalty = 1.0f;
        jp->on_event = record;
        jp->user_data = &s->rec[i];
    }
}

static void job_set_init(job_set *s, int n)
{
    job_set_init_from(s, n, 0);
}

static void job_set_clear(job_set *s)
{
    for (int i = 0; i < s->n; i++) {
        hyocr_job_result_clear(&s->res[i]);
        recorder_clear(&s->rec[i]);
    }
    g_strfreev(s->paths);
    g_free(s->jp);
    g_free(s->res);
    g_free(s->rec);
}

static void assert_ids(const GArray *got, const GArray *want)
{
    g_assert_nonnull(got);
    g_assert_cmpuint(got->len, ==, want->len);
    for (guint i = 0; i < want->len; i++)
        g_assert_cmpint(g_array_index(got, int32_t, i), ==, g_array_index(want, int32_t, i));
}

static GArray *reference_ids(int c)
{
    g_autofree char *path = hyocr_test_data("model", CKPT, cases[c].dir, "greedy.txt", NULL);
    g_autoptr(GArray) raw = hyocr_test_read_ints(path);
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < raw->len; i++) {
        int32_t v = (int32_t)g_array_index(raw, int64_t, i);
        g_array_append_val(ids, v);
    }
    return ids;
}

/* Every job succeeded with the reference tokens and its events in order. */
static void check_all_reference(const job_set *s)
{
    for (int i = 0; i < s->n; i++) {
        g_assert_no_error(s->res[i].error);
        g_autoptr(GArray) want = reference_ids(i % N_CASES);
        assert_ids(s->res[i].token_ids, want);
        assert_ids(s->rec[i].tokens, want);
        check_event_order(&s->rec[i], HYOCR_EVENT_DONE);
        g_assert_cmpmem(s->rec[i].pieces->str, s->rec[i].pieces->len, s->res[i].raw_text, s->res[i].raw_text_len);
        g_assert_true(s->res[i].stop_reason == HYOCR_STOP_EOS || s->res[i].stop_reason == HYOCR_STOP_MAX_NEW_TOKENS);
        g_assert_cmpint(s->res[i].prompt_tokens, >, 0);
        g_assert_cmpint(s->res[i].grid_h, >, 0);
    }
}

static int total_preempted(const job_set *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) n += s->res[i].n_preempted;
    return n;
}

static void run_set(hyocr_engine *eng, job_set *s)
{
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_run_batch(eng, s->jp, s->n, s->res, &err));
    g_assert_no_error(err);
}

/* ---- batched = reference --------------------------------------------------------------- */

static void test_batch_sizes(void)
{
    if (!require_fixtures()) return;
    static const int sizes[] = { 1, 2, 4 };
    for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        engine_opts o = { .max_batch = sizes[k] };
        g_autoptr(hyocr_engine) eng = open_engine(&o);
        job_set s;
        job_set_init(&s, 6);
        run_set(eng, &s);
        check_all_reference(&s);
        g_assert_cmpint(total_preempted(&s), ==, 0);
        job_set_clear(&s);
        /* the engine is idle and usable again: no KV left behind */
        hyocr_mem_info mi;
        hyocr_engine_mem_info(eng, &mi);
        g_assert_cmpint(mi.kv_used, ==, 0);
        g_assert_cmpint(mi.kv_reserved, ==, 0);
    }
}

/* A burst of jobs grows the pool once: the second job's admission makes room
 * for the jobs queued behind it too (each growth copies the whole pool), where
 * it used to grow once a job. Same page four times, so the estimate is exact. */
static void test_burst_grows_once(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    job_set s;
    job_set_init(&s, 4);
    for (int i = 0; i < s.n; i++) {
        g_free(s.paths[i]);
        s.paths[i] = hyocr_test_data("images", cases[1].image, NULL);
        s.jp[i].image_path = s.paths[i];
        s.jp[i].task = cases[1].task;
    }
    run_set(eng, &s);
    hyocr_engine_stats st;
    hyocr_engine_get_stats(eng, &st);
    g_assert_cmpint(st.largest_batch, ==, 4);
    g_assert_cmpint(st.kv_grows, ==, 1);
    g_autoptr(GArray) want = reference_ids(1);
    for (int i = 0; i < s.n; i++) {
        g_assert_no_error(s.res[i].error);
        assert_ids(s.res[i].token_ids, want);
    }
    job_set_clear(&s);
}

/* A CUDA engine of up to max_batch jobs on the flat checkpoint; NULL (the test skipped,
 * loudly) without a usable CUDA device or the fixtures. */
static hyocr_engine *open_cuda_engine(engine_opts *o)
{
    if (!require_fixtures()) return NULL;
    g_autofree char *dir = hyocr_test_data(CKPT, NULL);
    g_autoptr(GError) err = NULL;
    hyocr_engine *eng = open_engine_dir(dir, o, &err);
    if (!eng) {
        g_test_skip("no usable CUDA device");
        g_test_message("CUDA engine unavailable: %s", err ? err->message : "?");
    }
    return eng;
}

/* CUDA: jobs admitted next to decoding ones have their vision pass on the backend's
 * side lane, beside the decode steps (HYOCR_VISION_BESIDE), and get the tokens they get
 * alone; with the switch off, none does. Skipped (loudly) without a CUDA device. */
static void test_cuda_vision_beside(void)
{
    engine_opts o = { .max_batch = 4, .cuda = true };
    g_autoptr(hyocr_engine) eng = open_cuda_engine(&o);
    if (!eng) return;
    enum { N = 6 };
    GArray *alone[N];
    for (int i = 0; i < N; i++) {
        job_set one;
        job_set_init_from(&one, 1, i);
        run_set(eng, &one);
        g_assert_no_error(one.res[0].error);
        alone[i] = g_array_ref(one.res[0].token_ids);
        job_set_clear(&one);
    }
    hyocr_engine_stats st;
    for (int beside = 1; beside >= 0; beside--) {
        eng->tuning.vision_beside = beside ? HYOCR_SWITCH_ON : HYOCR_SWITCH_OFF;
        hyocr_engine_get_stats(eng, &st);
        int64_t before = st.vision_beside;
        job_set s;
        job_set_init(&s, N);
        run_set(eng, &s);
        for (int i = 0; i < N; i++) {
            g_assert_no_error(s.res[i].error);
            assert_ids(s.res[i].token_ids, alone[i]);
        }
        job_set_clear(&s);
        hyocr_engine_get_stats(eng, &st);
        g_assert_cmpint(st.largest_batch, >=, 2);
        /* the first job starts alone; each later one beside the steps of those before */
        g_assert_cmpint(st.vision_beside - before, ==, beside ? N - 1 : 0);
    }
    hyocr_mem_info mi;
    hyocr_engine_mem_info(eng, &mi);
    g_assert_cmpint(mi.kv_reserved, ==, 0);
    for (int i = 0; i < N; i++) g_array_unref(alone[i]);
}

/* Sampling with a seed is per job: batched draws equal the same job alone. */
static void count_logits(const float *logits, int n_vocab, int step, void *data)
{
    (void)logits;
    (void)n_vocab;
    int *steps = data;
    g_assert_cmpint(step, ==, *steps);
    (*steps)++;
}

static void test_sampling_alone(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    job_set s;
    job_set_init(&s, 3);
    for (int i = 0; i < 3; i++) {
        s.jp[i].temperature = 0.8f;
        s.jp[i].top_k = 20;
        s.jp[i].seed = 1234 + (uint64_t)i;
        s.jp[i].repetition_penalty = 1.1f;
        s.jp[i].ignore_eos = true;
        s.jp[i].max_new_tokens = 20;
    }
    run_set(eng, &s);
    for (int i = 0; i < 3; i++) {
        hyocr_job_params jp = s.jp[i];
        jp.on_event = NULL;
        hyocr_job_result alone = { 0 };
        g_autoptr(GError) err = NULL;
        g_assert_true(hyocr_engine_run(eng, &jp, &alone, &err));
        g_assert_no_error(s.res[i].error);
        assert_ids(s.res[i].token_ids, alone.token_ids);
        g_assert_cmpuint(alone.token_ids->len, ==, 20);
        hyocr_job_result_clear(&alone);
        /* A logits sink keeps the choice on the host: the same draws, the same tokens. */
        int steps = 0;
        jp.on_logits = count_logits;
        jp.logits_data = &steps;
        hyocr_job_result host = { 0 };
        g_assert_true(hyocr_engine_run(eng, &jp, &host, &err));
        g_assert_cmpint(steps, ==, 20);
        assert_ids(s.res[i].token_ids, host.token_ids);
        hyocr_job_result_clear(&host);
    }
    job_set_clear(&s);
}

static GArray *reference_rp_ids(int c)
{
    g_autofree char *path = hyocr_test_data("model", CKPT, cases[c].dir, "greedy_rp.txt", NULL);
    g_autoptr(GArray) raw = hyocr_test_read_ints(path);
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < raw->len; i++) {
        int32_t v = (int32_t)g_array_index(raw, int64_t, i);
        g_array_append_val(ids, v);
    }
    return ids;
}

/* Greedy jobs with a penalty share steps with a sampled job and a job with a
 * logits sink (tokens chosen on the host), then decode alone (chosen by the
 * backend): the penalty sets follow them across, so the tokens equal the
 * reference's. */
static void test_mixed_paths(void)
{
    g_autofree char *ref = hyocr_test_data("model", CKPT, cases[0].dir, "greedy_rp.txt", NULL);
    if (!require_fixtures() || !hyocr_test_require(ref)) return;
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    job_set s;
    job_set_init(&s, 3);
    for (int i = 0; i < 3; i++) s.jp[i].repetition_penalty = 1.08f;
    s.jp[1].temperature = 0.7f;
    s.jp[1].seed = 7;
    s.jp[1].max_new_tokens = 6;
    s.jp[1].ignore_eos = true;
    int steps = 0;
    s.jp[2].on_logits = count_logits;
    s.jp[2].logits_data = &steps;
    s.jp[2].max_new_tokens = 12;
    run_set(eng, &s);
    g_autoptr(GArray) want0 = reference_rp_ids(0), want2 = reference_rp_ids(2);
    g_assert_no_error(s.res[0].error);
    assert_ids(s.res[0].token_ids, want0);
    g_assert_cmpuint(s.res[1].token_ids->len, ==, 6);
    g_assert_cmpint(steps, ==, (int)s.res[2].token_ids->len);
    g_assert_cmpuint(want2->len, >=, s.res[2].token_ids->len);
    g_array_set_size(want2, s.res[2].token_ids->len);
    assert_ids(s.res[2].token_ids, want2);
    job_set_clear(&s);
}

/* A job asking for log-probabilities takes the step's choice to the host while it runs
 * (its raw rows are needed): the others' tokens stay the reference's across the switch,
 * and it has one entry a token. */
static void test_mixed_logprobs(void)
{
    g_autofree char *ref = hyocr_test_data("model", CKPT, cases[0].dir, "greedy_rp.txt", NULL);
    if (!require_fixtures() || !hyocr_test_require(ref)) return;
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    job_set s;
    job_set_init(&s, 2);
    for (int i = 0; i < 2; i++) s.jp[i].repetition_penalty = 1.08f;
    s.jp[1].logprobs = true;
    s.jp[1].top_logprobs = 2;
    s.jp[1].max_new_tokens = 7;
    run_set(eng, &s);
    g_autoptr(GArray) want0 = reference_rp_ids(0), want1 = reference_rp_ids(1);
    g_assert_no_error(s.res[0].error);
    assert_ids(s.res[0].token_ids, want0);
    g_assert_null(s.res[0].logprobs);
    g_assert_cmpuint(want1->len, >=, s.res[1].token_ids->len);
    g_array_set_size(want1, s.res[1].token_ids->len);
    assert_ids(s.res[1].token_ids, want1);
    g_assert_cmpuint(s.res[1].logprobs->len, ==, s.res[1].token_ids->len);
    for (guint i = 0; i < s.res[1].logprobs->len; i++) {
        const hyocr_token_logprobs *lp = &g_array_index(s.res[1].logprobs, hyocr_token_logprobs, i);
        g_assert_cmpint(lp->n_top, ==, 2);
        g_assert_cmpfloat(lp->logprob, <=, lp->top[0].logprob);
        g_assert_cmpfloat(lp->top[1].logprob, <=, lp->top[0].logprob);
    }
    job_set_clear(&s);
}

/* ---- preemption ------------------------------------------------------------------------ */

/* A pool of a little more than one job's blocks: four jobs must take turns. */
/* Sampled jobs (seeded) give the same tokens however often they are preempted:
 * each draw's u follows the job's token count, on the device and on the host. */
static void sample_params(hyocr_job_params *jp, int i)
{
    jp->temperature = 0.9f;
    jp->top_k = 40;
    jp->top_p = 0.95f;
    jp->seed = 77 + (uint64_t)i;
    jp->ignore_eos = true;
}

static void check_alone(hyocr_engine *eng, job_set *s)
{
    for (int i = 0; i < s->n; i++) {
        hyocr_job_params jp = s->jp[i];
        jp.on_event = NULL;
        hyocr_job_result alone = { 0 };
        g_autoptr(GError) err = NULL;
        g_assert_no_error(s->res[i].error);
        g_assert_true(hyocr_engine_run(eng, &jp, &alone, &err));
        assert_ids(s->res[i].token_ids, alone.token_ids);
        hyocr_job_result_clear(&alone);
    }
}

static void run_preempting(int64_t swap_space, bool sampled)
{
    if (!require_fixtures()) return;
    /* learn the largest job's need */
    g_autoptr(hyocr_engine) probe = open_engine(NULL);
    int most = 0;
    for (int c = 0; c < N_CASES; c++) {
        g_autofree char *img = hyocr_test_data("images", cases[c].image, NULL);
        hyocr_job_params jp;
        hyocr_job_params_init(&jp);
        jp.image_path = img;
        jp.task = cases[c].task;
        jp.fields = fields;
        jp.max_new_tokens = MAX_NEW;
        hyocr_memplan plan;
        g_autoptr(GError) err = NULL;
        g_assert_true(hyocr_engine_plan_job(probe, &jp, &plan, &err));
        most = MAX(most, plan.kv_tokens);
    }
    engine_opts o = { .kv_block_size = 16, .kv_blocks = (most + 15) / 16 + 2, .swap_space = swap_space };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    job_set s;
    job_set_init(&s, 6);
    for (int i = 0; i < s.n; i++) {
        s.jp[i].ignore_eos = false;
        if (sampled) sample_params(&s.jp[i], i);
    }
    run_set(eng, &s);
    if (sampled) check_alone(probe, &s);
    else check_all_reference(&s);
    g_test_message("preemptions: %d", total_preempted(&s));
    g_assert_cmpint(total_preempted(&s), >, 0);
    /* swap while the swap space lasts, else recompute */
    g_assert_cmpint(o.n_swapped + o.n_freed, ==, total_preempted(&s));
    if (swap_space) g_assert_cmpint(o.n_swapped, >, 0);
    else g_assert_cmpint(o.n_swapped, ==, 0);
    job_set_clear(&s);
}

static void test_preempt_recompute(void)
{
    run_preempting(0, false);
}

static void test_preempt_swap(void)
{
    run_preempting((int64_t)64 << 20, false);
}

static void test_preempt_sampled(void)
{
    run_preempting(0, true);
    run_preempting((int64_t)64 << 20, true);
}

/* A fixed pool with room for a prompt and a few tokens: every job fails with
 * a clear error once it outgrows the pool alone; none hangs, none crashes. */
static void test_pool_too_small(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .kv_block_size = 16, .kv_blocks = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    job_set s;
    job_set_init(&s, 3);
    for (int i = 0; i < 3; i++) {
        s.jp[i].ignore_eos = true;
        s.jp[i].max_new_tokens = 200;
    }
    run_set(eng, &s);
    for (int i = 0; i < 3; i++) {
        g_assert_error(s.res[i].error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
        g_assert_nonnull(strstr(s.res[i].error->message, s.paths[i]));
        g_assert_nonnull(strstr(s.res[i].error->message, "KV cache"));
        const GArray *t = s.rec[i].types;
        g_assert_cmpint(g_array_index(t, int, t->len - 1), ==, HYOCR_EVENT_ERROR);
        g_assert_cmpuint(s.res[i].token_ids->len, <, 4 * 16);
    }
    hyocr_mem_info mi;
    hyocr_engine_mem_info(eng, &mi);
    g_assert_cmpint(mi.kv_used, ==, 0);
    job_set_clear(&s);
}

/* A memory limit that fits one job but not four at once: all four finish,
 * within the limit. */
static void test_budget_one_of_four(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) probe = open_engine(NULL);
    job_set s;
    job_set_init(&s, 4);
    int64_t most = 0;
    for (int i = 0; i < s.n; i++) {
        s.jp[i].image_path = s.paths[1];   /* the biggest page, four times */
        s.jp[i].task = cases[1].task;
        s.jp[i].max_new_tokens = 400;
        s.jp[i].ignore_eos = true;
        hyocr_memplan plan;
        g_autoptr(GError) err = NULL;
        g_assert_true(hyocr_engine_plan_job(probe, &s.jp[i], &plan, &err));
        most = MAX(most, plan.total);
    }
    /* a little above one job; four pools would need about four times its KV */
    int64_t limit = most + most / 20;
    engine_opts o = { .memory_limit = limit, .max_batch = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    run_set(eng, &s);
    for (int i = 0; i < s.n; i++) {
        g_assert_no_error(s.res[i].error);
        g_assert_cmpuint(s.res[i].token_ids->len, ==, 400);
        g_assert_cmpint(s.res[i].memory.peak, <=, limit);
        assert_ids(s.res[i].token_ids, s.res[0].token_ids);
    }
    job_set_clear(&s);
}

/* A limit with room for about two jobs' KV next to the scratch: the four
 * jobs decode together and preempt each other, within the limit. */
static void test_budget_preempts(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) probe = open_engine(NULL);
    job_set s;
    job_set_init(&s, 4);
    hyocr_memplan plan;
    for (int i = 0; i < s.n; i++) {
        s.jp[i].image_path = s.paths[1];
        s.jp[i].task = cases[1].task;
        s.jp[i].max_new_tokens = 400;
        s.jp[i].ignore_eos = true;
    }
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_plan_job(probe, &s.jp[0], &plan, &err));
    hyocr_job_params alone_jp = s.jp[0];
    alone_jp.on_event = NULL;
    hyocr_job_result alone = { 0 };
    g_assert_true(hyocr_engine_run(probe, &alone_jp, &alone, &err));
    const hyocr_config *cfg = hyocr_engine_config(probe);
    int64_t margin = 4 * ((int64_t)cfg->text.vocab_size * 4 + (int64_t)cfg->text.hidden_size * 8);
    hyocr_memplan again;   /* a preempted job's prefill is redone over its generated tokens too */
    hyocr_engine_memory_plan(probe, plan.grid_h, plan.grid_w, plan.kv_tokens, 1, &again);
    int64_t scratch = MAX(plan.vision, plan.image_embeds + MAX(plan.prefill, again.prefill)) + margin;
    int64_t limit = plan.weights + plan.backend + plan.pick + scratch + plan.kv * 2;
    engine_opts o = { .memory_limit = limit, .max_batch = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    run_set(eng, &s);
    for (int i = 0; i < s.n; i++) {
        g_assert_no_error(s.res[i].error);
        assert_ids(s.res[i].token_ids, alone.token_ids);
        g_assert_cmpint(s.res[i].memory.peak, <=, limit);
    }
    g_assert_cmpint(total_preempted(&s), >, 0);
    hyocr_job_result_clear(&alone);
    job_set_clear(&s);
}

/* A limit just under what a job needs with every weight on the device: its
 * vision weights leave the device after the vision pass, and it runs within the
 * limit; the next job brings them back. */
static void test_vision_offload(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) probe = open_engine(NULL);
    g_autofree char *img = hyocr_test_data("images", cases[2].image, NULL);
    hyocr_job_params jp;
    hyocr_job_params_init(&jp);
    jp.image_path = img;
    jp.task = cases[2].task;
    jp.fields = fields;
    jp.max_new_tokens = 400;   /* the KV cache makes the text phase the larger */
    jp.ignore_eos = true;
    hyocr_memplan plan;
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_plan_job(probe, &jp, &plan, &err));
    g_assert_cmpint(plan.peak_text, >, plan.peak_vision);
    hyocr_job_result want = { 0 };
    g_assert_true(hyocr_engine_run(probe, &jp, &want, &err));

    engine_opts o = { .memory_limit = plan.total - 1 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    /* the plan a caller (the app) checks says what the run will do */
    hyocr_memplan tight;
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &tight, &err));
    g_assert_true(tight.fits);
    g_assert_true(tight.vision_offload);
    g_assert_cmpint(tight.total, <=, o.memory_limit);
    for (int round = 0; round < 2; round++) {
        hyocr_job_result res = { 0 };
        g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
        g_assert_no_error(err);
        assert_ids(res.token_ids, want.token_ids);
        g_assert_cmpint(res.memory.peak, <=, o.memory_limit);
        g_assert_cmpint(res.memory.weights, <, plan.weights);   /* the vision weights are out */
        hyocr_job_result_clear(&res);
    }
    hyocr_job_result_clear(&want);
}

/* ---- failures stay with their job ---------------------------------------------------------- */

static void test_bad_image_among_good(void)
{
    if (!require_fixtures()) return;
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *bad = g_build_filename(tmp, "broken.png", NULL);
    static const char junk[] = "\x89PNG\r\n\x1a\nthis is not really a png";
    g_assert_true(g_file_set_contents(bad, junk, sizeof junk - 1, NULL));
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    job_set s;
    job_set_init(&s, 4);
    s.jp[3] = s.jp[1];          /* case 1 again, at index 3 */
    s.jp[3].user_data = &s.rec[3];
    s.jp[1].image_path = bad;   /* index 1 is broken */
    run_set(eng, &s);
    g_assert_error(s.res[1].error, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(s.res[1].error->message, "broken.png"));
    g_assert_cmpuint(s.rec[1].types->len, ==, 1);
    g_assert_cmpint(g_array_index(s.rec[1].types, int, 0), ==, HYOCR_EVENT_ERROR);
    g_assert_cmpint(s.res[1].stop_reason, ==, HYOCR_STOP_NONE);
    static const int good[] = { 0, 2, 3 };
    for (size_t k = 0; k < G_N_ELEMENTS(good); k++) {
        int i = good[k];
        g_assert_no_error(s.res[i].error);
        g_autoptr(GArray) want = reference_ids(i == 3 ? 1 : i);
        assert_ids(s.res[i].token_ids, want);
        check_event_order(&s.rec[i], HYOCR_EVENT_DONE);
    }
    job_set_clear(&s);
    hyocr_test_rmdir(tmp);
}

#if HYOCR_HAVE_TIFF
static void tiff_page_rgb(TIFF *t, const hyocr_image *img)
{
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, img->width);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, img->height);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    for (int y = 0; y < img->height; y++)
        g_assert_cmpint(TIFFWriteScanline(t, img->rgb + (size_t)y * img->width * 3, (uint32_t)y, 0), ==, 1);
    g_assert_true(TIFFWriteDirectory(t));
}

/* Floating-point samples: a page libtiff's RGBA interface refuses. */
static void tiff_page_float(TIFF *t)
{
    float px[16 * 8] = { 0 };
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 16);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 8);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 32);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    for (int y = 0; y < 8; y++) g_assert_cmpint(TIFFWriteScanline(t, px + y * 16, (uint32_t)y, 0), ==, 1);
    g_assert_true(TIFFWriteDirectory(t));
}

/* A document's pages as jobs: a 4-page TIFF holding the reference images (lossless, so the
 * very same pixels) and a page that cannot be read. Each readable page gives the reference
 * tokens; the unreadable one fails with its page named, and the others finish. */
static void test_document_pages(void)
{
    if (!require_fixtures()) return;
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *path = g_build_filename(tmp, "scan.tif", NULL);
    TIFF *t = TIFFOpen(path, "w");
    static const int page_case[4] = { 0, -1, 2, 1 };
    for (int p = 0; p < 4; p++) {
        if (page_case[p] < 0) {
            tiff_page_float(t);
            continue;
        }
        g_autofree char *png = hyocr_test_data("images", cases[page_case[p]].image, NULL);
        g_autoptr(hyocr_image) img = hyocr_image_load(png, NULL, NULL);
        g_assert_nonnull(img);
        tiff_page_rgb(t, img);
    }
    TIFFClose(t);
    g_autoptr(hyocr_document) doc = hyocr_document_open(path, NULL, NULL);
    g_assert_nonnull(doc);
    g_assert_cmpint(hyocr_document_n_pages(doc), ==, 4);

    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    job_set s;
    job_set_init(&s, 4);
    char *names[4];
    for (int p = 0; p < 4; p++) {
        int c = page_case[p] < 0 ? 0 : page_case[p];
        s.jp[p].image_path = NULL;
        s.jp[p].document = doc;
        s.jp[p].page = p;
        s.jp[p].task = cases[c].task;
        names[p] = g_strdup_printf("scan.tif, page %d", p + 1);
        s.jp[p].name = names[p];
    }
    run_set(eng, &s);
    g_assert_error(s.res[1].error, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(s.res[1].error->message, "scan.tif, page 2: unsupported TIFF"));
    for (int p = 0; p < 4; p++) {
        if (page_case[p] < 0) continue;
        g_assert_no_error(s.res[p].error);
        g_autoptr(GArray) want = reference_ids(page_case[p]);
        assert_ids(s.res[p].token_ids, want);
        check_event_order(&s.rec[p], HYOCR_EVENT_DONE);
    }
    for (int p = 0; p < 4; p++) g_free(names[p]);
    job_set_clear(&s);
    hyocr_test_rmdir(tmp);
}
#endif

#if HYOCR_HAVE_PDF
/* A PDF page is rendered to the model's pixel budget (the fixture's max_pixels is 25 600):
 * the job sees exactly what hyocr_document_render gives under that budget, and the planning
 * of a queue of pages learns their size without rendering them. */
static void test_pdf_page_budget(void)
{
    if (!require_fixtures()) return;
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *path = g_build_filename(tmp, "a4.pdf", NULL);
    cairo_surface_t *surf = cairo_pdf_surface_create(path, 595, 842);
    cairo_t *cr = cairo_create(surf);
    for (int p = 0; p < 2; p++) {
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_rectangle(cr, 60 + 100 * p, 80, 300, 40);
        cairo_fill(cr);
        cairo_show_page(cr);
    }
    cairo_destroy(cr);
    cairo_surface_destroy(surf);
    g_autoptr(hyocr_document) doc = hyocr_document_open(path, NULL, NULL);
    g_assert_nonnull(doc);
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    const hyocr_config *cfg = hyocr_engine_config(eng);
    hyocr_render_options ro = { .max_pixels = cfg->processor.max_pixels };
    g_autoptr(hyocr_image) page2 = hyocr_document_render(doc, 1, &ro, NULL);
    g_assert_nonnull(page2);
    g_assert_cmpint((int64_t)page2->width * page2->height, <=, cfg->processor.max_pixels);

    job_set s;
    job_set_init(&s, 3);
    for (int i = 0; i < 3; i++) {
        s.jp[i].image_path = NULL;
        s.jp[i].task = HYOCR_TASK_RECOGNIZE;
    }
    s.jp[0].document = doc;
    s.jp[0].page = 1;
    s.jp[1].image = page2;
    s.jp[2].document = doc;
    s.jp[2].page = 2;   /* past the end: named in the error */
    run_set(eng, &s);
    g_assert_no_error(s.res[0].error);
    g_assert_no_error(s.res[1].error);
    g_assert_cmpint(s.res[0].image_width, ==, page2->width);
    g_assert_cmpint(s.res[0].image_height, ==, page2->height);
    assert_ids(s.res[0].token_ids, s.res[1].token_ids);
    g_assert_error(s.res[2].error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(s.res[2].error->message, "a4.pdf: there is no page 3 (the document has 2 pages)"));
    hyocr_memplan plan;
    g_assert_true(hyocr_engine_plan_job(eng, &s.jp[0], &plan, NULL));
    g_assert_cmpint(plan.image_width, ==, page2->width);
    job_set_clear(&s);
    hyocr_test_rmdir(tmp);
}
#endif

/* One job's cancellable stops that job alone. */
static void test_cancel_one(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    job_set s;
    job_set_init(&s, 3);
    for (int i = 0; i < 3; i++) s.jp[i].ignore_eos = true;
    s.rec[1].cancellable = g_cancellable_new();
    s.rec[1].cancel_at = 3;
    s.jp[1].cancellable = s.rec[1].cancellable;
    run_set(eng, &s);
    g_assert_error(s.res[1].error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_cmpint(s.res[1].stop_reason, ==, HYOCR_STOP_CANCELLED);
    g_assert_cmpuint(s.res[1].token_ids->len, ==, 3);
    check_event_order(&s.rec[1], HYOCR_EVENT_CANCELLED);
    for (int i = 0; i < 3; i += 2) {
        g_assert_no_error(s.res[i].error);
        g_assert_cmpuint(s.res[i].token_ids->len, ==, MAX_NEW);
        g_assert_cmpint(s.res[i].stop_reason, ==, HYOCR_STOP_MAX_NEW_TOKENS);
        check_event_order(&s.rec[i], HYOCR_EVENT_DONE);
    }
    job_set_clear(&s);
}

/* hyocr_engine_cancel stops every job of the batch, the queued ones too. */
static void test_cancel_all(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 2 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    job_set s;
    job_set_init(&s, 4);
    for (int i = 0; i < 4; i++) s.jp[i].ignore_eos = true;
    s.rec[0].cancel_engine = eng;
    s.rec[0].cancel_at = 2;
    run_set(eng, &s);
    for (int i = 0; i < 4; i++) {
        g_assert_error(s.res[i].error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
        g_assert_cmpint(s.res[i].stop_reason, ==, HYOCR_STOP_CANCELLED);
        g_assert_cmpuint(s.res[i].token_ids ? s.res[i].token_ids->len : 0, <=, 3);
        const GArray *t = s.rec[i].types;
        g_assert_cmpint(g_array_index(t, int, t->len - 1), ==, HYOCR_EVENT_CANCELLED);
    }
    /* the jobs beyond max_batch never started */
    g_assert_cmpuint(s.rec[3].types->len, ==, 1);
    job_set_clear(&s);
    /* and the engine runs the next batch */
    job_set_init(&s, 2);
    run_set(eng, &s);
    check_all_reference(&s);
    job_set_clear(&s);
}

/* ---- non-finite weights -------------------------------------------------------------------- */

static void copy_dir(const char *from, const char *to)
{
    g_autoptr(GDir) d = g_dir_open(from, 0, NULL);
    g_assert_nonnull(d);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *src = g_build_filename(from, name, NULL), *dst = g_build_filename(to, name, NULL);
        if (g_file_test(src, G_FILE_TEST_IS_DIR)) continue;
        g_autofree char *data = NULL;
        gsize len = 0;
        g_assert_true(g_file_get_contents(src, &data, &len, NULL));
        g_assert_true(g_file_set_contents(dst, data, (gssize)len, NULL));
    }
}

/* Writes a NaN into element 0 of the named tensor wherever it is stored. */
static bool poison_tensor(const char *dir, const char *tensor)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        if (!g_str_has_suffix(name, ".safetensors")) continue;
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autofree char *data = NULL;
        gsize len = 0;
        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        uint64_t hlen;
        memcpy(&hlen, data, 8);
        g_autoptr(JsonParser) p = json_parser_new();
        g_assert_true(json_parser_load_from_data(p, data + 8, (gssize)hlen, NULL));
        JsonObject *root = json_node_get_object(json_parser_get_root(p));
        if (!json_object_has_member(root, tensor)) continue;
        JsonObject *t = json_object_get_object_member(root, tensor);
        const char *dtype = json_object_get_string_member(t, "dtype");
        gint64 off = json_array_get_int_element(json_object_get_array_member(t, "data_offsets"), 0);
        char *at = data + 8 + hlen + off;
        if (!strcmp(dtype, "F32")) memcpy(at, (uint32_t[]){ 0x7fc00000u }, 4);
        else if (!strcmp(dtype, "BF16")) memcpy(at, (uint16_t[]){ 0x7fc0 }, 2);
        else memcpy(at, (uint16_t[]){ 0x7e00 }, 2);
        g_assert_true(g_file_set_contents(path, data, (gssize)len, NULL));
        return true;
    }
    return false;
}

static void check_nonfinite(const char *tensor, const char *where)
{
    if (!require_fixtures()) return;
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *src = hyocr_test_data(CKPT, NULL);
    copy_dir(src, tmp);
    g_assert_true(poison_tensor(tmp, tensor));
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine_dir(tmp, NULL, &err);
    g_assert_no_error(err);
    job_set s;
    job_set_init(&s, 2);
    run_set(eng, &s);
    for (int i = 0; i < 2; i++) {
        g_assert_error(s.res[i].error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT);
        g_test_message("%s", s.res[i].error->message);
        g_assert_nonnull(strstr(s.res[i].error->message, "NaN/Inf"));
        g_assert_nonnull(strstr(s.res[i].error->message, where));
        g_assert_nonnull(strstr(s.res[i].error->message, "corrupt"));
        g_assert_false(s.res[i].redone);
        /* no garbage text reached the caller */
        g_assert_cmpuint(s.rec[i].tokens->len, ==, 0);
        g_assert_cmpstr(s.res[i].text, ==, "");
        const GArray *t = s.rec[i].types;
        g_assert_cmpint(g_array_index(t, int, t->len - 1), ==, HYOCR_EVENT_ERROR);
    }
    /* the single-job path says the same */
    hyocr_job_params jp = s.jp[0];
    jp.on_event = NULL;
    g_assert_false(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT);
    job_set_clear(&s);
    hyocr_test_rmdir(tmp);
}

static void test_nonfinite_logits(void)
{
    check_nonfinite("model.norm.weight", "logits");
}

static void test_nonfinite_vision(void)
{
    check_nonfinite("vit.perceive.after_rms.weight", "vision output");
}

static void test_busy_and_empty(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_run_batch(eng, NULL, 0, NULL, &err));
    g_assert_no_error(err);
    job_set s;
    job_set_init(&s, 1);
    s.jp[0].max_new_tokens = 0;   /* invalid: the job fails, the call does not */
    run_set(eng, &s);
    g_assert_error(s.res[0].error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    job_set_clear(&s);
}

/* ---- jobs submitted at any time --------------------------------------------------------------- */

/* Records what each token event says about its step and the engine's KV use,
 * and can hold the engine's thread at one token until the test lets it go. */
typedef struct gate {
    hyocr_engine *eng;
    GArray       *tokens, *batch, *kv_used, *workspace;
    int           end;              /* the end event's type, -1 before */
    int           pause_at;         /* > 0: hold at this token */
    GMutex        lock;
    GCond         cond;
    bool          reached, open;
    int           other_tokens_at_end;   /* set by the test: the partner's count at this job's end */
    struct gate  *partner;
} gate;

static void gate_init(gate *g, hyocr_engine *eng, int pause_at)
{
    memset(g, 0, sizeof *g);
    g->eng = eng;
    g->tokens = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g->batch = g_array_new(FALSE, FALSE, sizeof(int));
    g->kv_used = g_array_new(FALSE, FALSE, sizeof(int64_t));
    g->workspace = g_array_new(FALSE, FALSE, sizeof(int64_t));
    g->end = -1;
    g->pause_at = pause_at;
    g->other_tokens_at_end = -1;
    g_mutex_init(&g->lock);
    g_cond_init(&g->cond);
}

static void gate_clear(gate *g)
{
    g_array_unref(g->tokens);
    g_array_unref(g->batch);
    g_array_unref(g->kv_used);
    g_array_unref(g->workspace);
    g_mutex_clear(&g->lock);
    g_cond_clear(&g->cond);
}

static void gate_event(const hyocr_event *ev, void *data)
{
    gate *g = data;
    if (ev->type == HYOCR_EVENT_DONE || ev->type == HYOCR_EVENT_ERROR || ev->type == HYOCR_EVENT_CANCELLED) {
        g->end = ev->type;
        if (g->partner) g->other_tokens_at_end = (int)((gate *)g->partner)->tokens->len;
        return;
    }
    if (ev->type != HYOCR_EVENT_TOKEN || ev->token < 0) return;
    hyocr_mem_info mi;
    hyocr_engine_mem_info(g->eng, &mi);
    g_array_append_val(g->tokens, ev->token);
    g_array_append_val(g->batch, ev->batch_size);
    g_array_append_val(g->kv_used, mi.kv_used);
    g_array_append_val(g->workspace, mi.workspace);
    if ((int)g->tokens->len != g->pause_at) return;
    g_mutex_lock(&g->lock);
    g->reached = true;
    g_cond_broadcast(&g->cond);
    while (!g->open) g_cond_wait(&g->cond, &g->lock);
    g_mutex_unlock(&g->lock);
}

static void gate_wait_reached(gate *g)
{
    g_mutex_lock(&g->lock);
    while (!g->reached) g_cond_wait(&g->cond, &g->lock);
    g_mutex_unlock(&g->lock);
}

static void gate_open(gate *g)
{
    g_mutex_lock(&g->lock);
    g->open = true;
    g_cond_broadcast(&g->cond);
    g_mutex_unlock(&g->lock);
}

static void case_params(hyocr_job_params *jp, int c, const char *path, int max_new)
{
    hyocr_job_params_init(jp);
    jp->image_path = path;
    jp->task = cases[c].task;
    jp->fields = fields;
    jp->max_new_tokens = max_new;
    jp->repetition_penalty = 1.0f;
    jp->ignore_eos = true;
}

/* A job alone, recorded the same way. */
static void run_gated_alone(hyocr_engine *eng, const hyocr_job_params *proto, gate *g)
{
    hyocr_job_params jp = *proto;
    jp.on_event = gate_event;
    jp.user_data = g;
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_no_error(err);
}

static void assert_same_ids(const GArray *a, const GArray *b)
{
    g_assert_cmpuint(a->len, ==, b->len);
    for (guint i = 0; i < a->len; i++) g_assert_cmpint(g_array_index(a, int32_t, i), ==, g_array_index(b, int32_t, i));
}

/* A page admitted alone where others could join keeps its image embeddings for a recompute on
 * the host, not the device (batch.c, embeds_leave_device): from its second token on, the device
 * holds what it holds for the same job with no room for others (max_batch 1, where nothing is
 * kept) — and the first token came before the copy. */
static void test_alone_embeds_leave(void)
{
    if (!require_fixtures()) return;
    int64_t ws[2][2];
    for (int i = 0; i < 2; i++) {
        engine_opts o = { .max_batch = i ? 4 : 1 };
        g_autoptr(hyocr_engine) eng = open_engine(&o);
        g_autofree char *path = hyocr_test_data("images", cases[0].image, NULL);
        hyocr_job_params jp;
        case_params(&jp, 0, path, 6);
        gate g;
        gate_init(&g, eng, 0);
        run_gated_alone(eng, &jp, &g);
        g_assert_cmpuint(g.workspace->len, ==, 6);
        ws[i][0] = g_array_index(g.workspace, int64_t, 0);
        ws[i][1] = g_array_index(g.workspace, int64_t, 3);
        gate_clear(&g);
    }
    g_test_message("device workspace at tokens 1 and 4: max_batch 1 %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
                   ", max_batch 4 %" G_GINT64_FORMAT " %" G_GINT64_FORMAT, ws[0][0], ws[0][1], ws[1][0], ws[1][1]);
    g_assert_cmpint(ws[1][1], ==, ws[0][1]);
    g_assert_cmpint(ws[1][0], >, ws[0][0]);   /* at the first token the embeddings were still there */
}

/* So does a burst submitted one job at a time: two jobs taken together, the first held at
 * its first token while six more arrive, then let go — the second's admission sizes the pool
 * for all eight (batch.c, take_arrived). Taken only at the loop's next turn, the six made a
 * second growth (the pool at two jobs' size, then eight), each growth holding the old storage
 * and the new at once. 32 tokens a job: the pool's estimate of a job (all its tokens) then
 * covers the block a new job leaves each running one (has_room) at the tiny model's size. */
static void test_arrivals_grow_once(void)
{
    if (!require_fixtures()) return;
    enum { N = 8 };
    engine_opts o = { .max_batch = N };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    g_autofree char *path = hyocr_test_data("images", cases[0].image, NULL);
    hyocr_job_params jp[N];
    gate g[N];
    hyocr_request *req[N];
    for (int i = 0; i < N; i++) {
        case_params(&jp[i], 0, path, 32);
        gate_init(&g[i], eng, i == 0 ? 1 : 0);
        jp[i].on_event = gate_event;
        jp[i].user_data = &g[i];
    }
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_submit_many(eng, jp, 2, req, &err));
    gate_wait_reached(&g[0]);
    for (int i = 2; i < N; i++) {
        req[i] = hyocr_engine_submit(eng, &jp[i], &err);
        g_assert_no_error(err);
    }
    gate_open(&g[0]);
    for (int i = 0; i < N; i++) {
        hyocr_job_result res = { 0 };
        g_assert_true(hyocr_request_wait(req[i], &res, &err));
        g_assert_no_error(res.error);
        g_assert_cmpuint(res.token_ids->len, ==, 32);
        hyocr_job_result_clear(&res);
        hyocr_request_unref(req[i]);
        gate_clear(&g[i]);
    }
    hyocr_engine_stats st;
    hyocr_engine_get_stats(eng, &st);
    g_assert_cmpint(st.largest_batch, >, 2);
    g_assert_cmpint(st.kv_grows, ==, 1);
}

/* A submitted job holds its image's bytes and document itself: the caller may let go of them
 * once hyocr_engine_submit returns (hyocr serve does), and the answers are those of the same
 * image read from its file. Behind a first job, so they are read after the caller's unref. */
static void test_job_holds_inputs(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 1 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    g_autofree char *path = hyocr_test_data("images", cases[0].image, NULL);
    hyocr_job_params jp[4];
    for (int i = 0; i < 4; i++) case_params(&jp[i], 0, path, 8);
    jp[0].max_new_tokens = 24;   /* ahead of the others */
    gchar *bytes = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
    jp[1].image_path = jp[2].image_path = NULL;
    jp[1].image_data = g_bytes_new_take(bytes, len);
    jp[2].document = hyocr_document_open(path, NULL, NULL);
    g_assert_nonnull(jp[2].document);
    hyocr_request *r[4];
    for (int i = 0; i < 4; i++) {
        g_autoptr(GError) err = NULL;
        r[i] = hyocr_engine_submit(eng, &jp[i], &err);
        g_assert_no_error(err);
    }
    g_clear_pointer(&jp[1].image_data, g_bytes_unref);
    g_clear_pointer(&jp[2].document, hyocr_document_unref);
    hyocr_job_result res[4] = { 0 };
    for (int i = 0; i < 4; i++) {
        g_autoptr(GError) err = NULL;
        g_assert_true(hyocr_request_wait(r[i], &res[i], &err));
        g_assert_no_error(res[i].error);
        hyocr_request_unref(r[i]);
    }
    assert_same_ids(res[1].token_ids, res[3].token_ids);   /* bytes, then the file */
    assert_same_ids(res[2].token_ids, res[3].token_ids);   /* document, then the file */
    g_assert_cmpuint(res[3].token_ids->len, ==, 8);
    for (int i = 0; i < 4; i++) hyocr_job_result_clear(&res[i]);
}

/* B is submitted while A decodes (A's thread held at its 4th token meanwhile):
 * B joins A's decode steps (steps of two), and each gets its tokens alone. */
static void test_submit_while_running(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    g_autofree char *pa = hyocr_test_data("images", cases[0].image, NULL);
    g_autofree char *pb = hyocr_test_data("images", cases[1].image, NULL);
    hyocr_job_params ja, jb;
    case_params(&ja, 0, pa, 40);
    case_params(&jb, 1, pb, 12);
    gate alone_a, alone_b, a, b;
    gate_init(&alone_a, eng, 0);
    gate_init(&alone_b, eng, 0);
    run_gated_alone(eng, &ja, &alone_a);
    run_gated_alone(eng, &jb, &alone_b);

    gate_init(&a, eng, 4);
    gate_init(&b, eng, 0);
    ja.on_event = gate_event;
    ja.user_data = &a;
    jb.on_event = gate_event;
    jb.user_data = &b;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_request) ra = hyocr_engine_submit(eng, &ja, &err);
    g_assert_no_error(err);
    gate_wait_reached(&a);
    g_autoptr(hyocr_request) rb = hyocr_engine_submit(eng, &jb, &err);
    g_assert_no_error(err);
    gate_open(&a);
    hyocr_job_result res_a = { 0 }, res_b = { 0 };
    g_assert_true(hyocr_request_wait(ra, &res_a, &err));
    g_assert_true(hyocr_request_wait(rb, &res_b, &err));
    g_assert_no_error(err);

    assert_same_ids(a.tokens, alone_a.tokens);
    assert_same_ids(b.tokens, alone_b.tokens);
    assert_same_ids(res_b.token_ids, alone_b.tokens);
    g_assert_cmpuint(b.tokens->len, ==, 12);
    /* B's first token comes from its own prefill; every later one from a step it shared with A */
    g_assert_cmpint(g_array_index(b.batch, int, 0), ==, 1);
    for (guint i = 1; i < b.batch->len; i++) g_assert_cmpint(g_array_index(b.batch, int, i), ==, 2);
    int shared = 0;
    for (guint i = 0; i < a.batch->len; i++) {
        shared += g_array_index(a.batch, int, i) == 2;
        g_assert_cmpint(g_array_index(alone_a.batch, int, i), ==, 1);
    }
    g_assert_cmpint(shared, ==, 11);
    hyocr_engine_stats st;
    hyocr_engine_get_stats(eng, &st);
    g_assert_cmpint(st.largest_batch, ==, 2);
    g_assert_cmpint(st.running, ==, 0);
    g_assert_cmpint(st.waiting, ==, 0);
    hyocr_mem_info mi;
    hyocr_engine_mem_info(eng, &mi);
    g_assert_cmpint(mi.kv_reserved, ==, 0);   /* idle: the pool is gone */
    hyocr_job_result_clear(&res_a);
    hyocr_job_result_clear(&res_b);
    gate_clear(&alone_a);
    gate_clear(&alone_b);
    gate_clear(&a);
    gate_clear(&b);
}

/* A and B decode together; the test cancels B (from its own thread, while B's
 * callback holds the engine at B's 3rd token). B ends with those 3 tokens, and
 * A's very next step is A's alone: one row, and the engine's KV use is then
 * exactly A's, as when A ran alone. A's tokens are unchanged. */
static void test_cancel_frees_blocks(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    g_autofree char *pa = hyocr_test_data("images", cases[1].image, NULL);
    g_autofree char *pb = hyocr_test_data("images", cases[0].image, NULL);
    hyocr_job_params ja, jb;
    case_params(&ja, 1, pa, 30);
    case_params(&jb, 0, pb, 30);
    gate alone, a, b;
    gate_init(&alone, eng, 0);
    run_gated_alone(eng, &ja, &alone);

    gate_init(&a, eng, 0);
    gate_init(&b, eng, 3);
    b.partner = (struct gate *)&a;
    ja.on_event = gate_event;
    ja.user_data = &a;
    jb.on_event = gate_event;
    jb.user_data = &b;
    const hyocr_job_params both[2] = { ja, jb };
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_request) ra = hyocr_engine_submit(eng, &both[0], &err);
    g_autoptr(hyocr_request) rb = hyocr_engine_submit(eng, &both[1], &err);
    g_assert_no_error(err);
    gate_wait_reached(&b);
    hyocr_request_cancel(rb);
    gate_open(&b);
    hyocr_job_result res_b = { 0 };
    g_assert_false(hyocr_request_wait(rb, &res_b, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_clear_error(&err);
    g_assert_cmpint(b.end, ==, HYOCR_EVENT_CANCELLED);
    g_assert_cmpuint(res_b.token_ids->len, ==, 3);
    g_assert_true(hyocr_request_is_done(rb));
    g_assert_true(hyocr_request_wait(ra, NULL, &err));
    g_assert_no_error(err);

    assert_same_ids(a.tokens, alone.tokens);
    int k = b.other_tokens_at_end;   /* A's tokens when B ended */
    g_assert_cmpint(k, >, 0);
    g_assert_cmpint(k, <, (int)a.tokens->len);
    g_assert_cmpint(g_array_index(a.batch, int, k - 1), ==, 2);   /* they shared the step B ended in */
    for (guint i = (guint)k; i < a.tokens->len; i++) {
        g_assert_cmpint(g_array_index(a.batch, int, i), ==, 1);
        g_assert_cmpint(g_array_index(a.kv_used, int64_t, i), ==, g_array_index(alone.kv_used, int64_t, i));
    }
    g_assert_cmpint(g_array_index(a.kv_used, int64_t, k - 1), >, g_array_index(alone.kv_used, int64_t, k - 1));
    hyocr_job_result_clear(&res_b);
    gate_clear(&alone);
    gate_clear(&a);
    gate_clear(&b);
}

/* max_queue 2: with one job running (held at its first token), two more wait and
 * a third is refused with HYOCR_ERROR_BUSY; once the queue moves, all finish and
 * the engine takes jobs again. */
static void test_queue_bound(void)
{
    if (!require_fixtures()) return;
    g_autofree char *dir = hyocr_test_data(CKPT, NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    ep.max_batch = 1;
    ep.max_queue = 2;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = hyocr_engine_init(&ep, &err);
    g_assert_no_error(err);
    g_autofree char *path = hyocr_test_data("images", cases[2].image, NULL);
    hyocr_job_params jp;
    case_params(&jp, 2, path, 4);
    gate first;
    gate_init(&first, eng, 1);
    hyocr_job_params held = jp;
    held.on_event = gate_event;
    held.user_data = &first;
    hyocr_request *r[4] = { NULL };
    r[0] = hyocr_engine_submit(eng, &held, &err);
    g_assert_no_error(err);
    gate_wait_reached(&first);
    r[1] = hyocr_engine_submit(eng, &jp, &err);
    r[2] = hyocr_engine_submit(eng, &jp, &err);
    g_assert_no_error(err);
    hyocr_engine_stats st;
    hyocr_engine_get_stats(eng, &st);
    g_assert_cmpint(st.running, ==, 1);
    g_assert_cmpint(st.waiting, ==, 2);
    r[3] = hyocr_engine_submit(eng, &jp, &err);
    g_assert_null(r[3]);
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_BUSY);
    g_assert_nonnull(strstr(err->message, "queue is full"));
    g_clear_error(&err);
    gate_open(&first);
    for (int i = 0; i < 3; i++) {
        hyocr_job_result res = { 0 };
        g_assert_true(hyocr_request_wait(r[i], &res, &err));
        g_assert_cmpuint(res.token_ids->len, ==, 4);
        hyocr_job_result_clear(&res);
        hyocr_request_unref(r[i]);
    }
    r[3] = hyocr_engine_submit(eng, &jp, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_request_wait(r[3], NULL, &err));
    hyocr_request_unref(r[3]);
    gate_clear(&first);
}

/* Several threads submit and wait at once; every job gets the reference's tokens. */
typedef struct {
    hyocr_engine *eng;
    int           first;   /* case index of its first job */
    int           ok;
} submitter;

static gpointer submit_thread(gpointer data)
{
    submitter *t = data;
    hyocr_request *r[3];
    char *paths[3];
    hyocr_job_params jp[3];
    for (int i = 0; i < 3; i++) {
        int c = (t->first + i) % N_CASES;
        paths[i] = hyocr_test_data("images", cases[c].image, NULL);
        case_params(&jp[i], c, paths[i], MAX_NEW);
        jp[i].ignore_eos = false;
        r[i] = hyocr_engine_submit(t->eng, &jp[i], NULL);
    }
    for (int i = 0; i < 3; i++) {
        hyocr_job_result res = { 0 };
        g_autoptr(GArray) want = reference_ids((t->first + i) % N_CASES);
        if (r[i] && hyocr_request_wait(r[i], &res, NULL) && res.token_ids->len == want->len &&
            memcmp(res.token_ids->data, want->data, want->len * sizeof(int32_t)) == 0)
            t->ok++;
        hyocr_job_result_clear(&res);
        hyocr_request_unref(r[i]);
        g_free(paths[i]);
    }
    return NULL;
}

static void test_submit_threads(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 4 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    enum { N_THREADS = 6 };
    submitter t[N_THREADS];
    GThread *th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        t[i] = (submitter){ .eng = eng, .first = i };
        th[i] = g_thread_new("submitter", submit_thread, &t[i]);
    }
    for (int i = 0; i < N_THREADS; i++) {
        g_thread_join(th[i]);
        g_assert_cmpint(t[i].ok, ==, 3);
    }
    hyocr_engine_stats st;
    hyocr_engine_get_stats(eng, &st);
    g_assert_cmpint(st.largest_batch, >=, 2);
}

/* Freeing the engine ends the jobs it still holds (running and queued) as
 * cancelled and refuses new ones; the waiters wake, and the requests outlive
 * the engine. The running job is held at its 2nd token until the engine has
 * begun to close (a submission is refused). */
static gpointer free_thread(gpointer data)
{
    hyocr_engine_free(data);
    return NULL;
}

static void test_free_cancels(void)
{
    if (!require_fixtures()) return;
    engine_opts o = { .max_batch = 1 };
    hyocr_engine *eng = open_engine(&o);
    g_autofree char *path = hyocr_test_data("images", cases[0].image, NULL);
    hyocr_job_params jp;
    case_params(&jp, 0, path, 2000);
    gate held;
    gate_init(&held, eng, 2);
    hyocr_job_params first = jp;
    first.on_event = gate_event;
    first.user_data = &held;
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) reqs = g_ptr_array_new_with_free_func((GDestroyNotify)hyocr_request_unref);
    g_ptr_array_add(reqs, hyocr_engine_submit(eng, &first, &err));
    g_assert_no_error(err);
    gate_wait_reached(&held);
    g_ptr_array_add(reqs, hyocr_engine_submit(eng, &jp, &err));   /* one queued for sure */
    g_assert_no_error(err);
    GThread *th = g_thread_new("free", free_thread, eng);
    hyocr_request *r;
    while ((r = hyocr_engine_submit(eng, &jp, &err))) {
        g_ptr_array_add(reqs, r);
        g_thread_yield();
    }
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_nonnull(strstr(err->message, "being closed"));
    g_clear_error(&err);
    gate_open(&held);
    g_thread_join(th);
    for (guint i = 0; i < reqs->len; i++) {
        hyocr_job_result res = { 0 };
        g_assert_true(hyocr_request_is_done(reqs->pdata[i]));
        g_assert_false(hyocr_request_wait(reqs->pdata[i], &res, &err));
        g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
        g_assert_nonnull(strstr(err->message, "closed"));
        g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_CANCELLED);
        g_clear_error(&err);
        hyocr_job_result_clear(&res);
    }
    g_assert_cmpint(held.end, ==, HYOCR_EVENT_CANCELLED);
    g_assert_cmpuint(held.tokens->len, ==, 2);
    gate_clear(&held);
}

/* A job given its image as encoded bytes and its prompt as a rendered
 * conversation (hyocr serve's jobs): Tencent's conversation gives the
 * reference's tokens; bytes that are no image fail the job with an image error. */
static void test_chat_job(void)
{
    if (!require_fixtures()) return;
    g_autoptr(hyocr_engine) eng = open_engine(NULL);
    g_autofree char *path = hyocr_test_data("images", cases[0].image, NULL);
    g_autofree char *data = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    g_autoptr(GBytes) bytes = g_bytes_new(data, len);
    g_autoptr(GError) err = NULL;
    const hyocr_config *cfg = hyocr_engine_config(eng);
    g_autofree char *task = hyocr_task_prompt(cases[0].task, cfg->version, NULL, NULL, &err);
    const hyocr_chat_part parts[] = { { NULL }, { task } };
    const hyocr_chat_message msgs[] = {
        { .role = HYOCR_CHAT_SYSTEM, .content = "" },
        { .role = HYOCR_CHAT_USER, .parts = parts, .n_parts = 2 },
    };
    int n_images = 0;
    g_autofree char *rendered = hyocr_engine_render_chat(eng, msgs, 2, &n_images, &err);
    g_assert_no_error(err);
    g_assert_cmpint(n_images, ==, 1);
    hyocr_job_params jp;
    hyocr_job_params_init(&jp);
    jp.image_data = bytes;
    jp.rendered_chat = rendered;
    jp.max_new_tokens = MAX_NEW;
    jp.repetition_penalty = 1.0f;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_autoptr(GArray) want = reference_ids(0);
    assert_ids(res.token_ids, want);
    hyocr_job_result_clear(&res);

    g_autoptr(GBytes) junk = g_bytes_new_static("not an image at all", 19);
    jp.image_data = junk;
    g_assert_false(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    hyocr_job_result_clear(&res);
}

/* ---- swapping a sequence's K/V (model.c) ----------------------------------------------- */

/* Token pos's K (w = 0) or V row of layer l, read through the sequence's table. */
static void kv_row(hyocr_model *m, const hyocr_kv_seq *seq, int l, int w, int pos, float *out)
{
    size_t row = (size_t)m->cfg.text.num_kv_heads * m->cfg.text.head_dim;
    int64_t slot = hyocr_kv_seq_slot(m->kv_pool, seq, pos);
    g_assert_cmpint(slot, >=, 0);
    hyocr_buf *b = w ? m->v_cache[l] : m->k_cache[l];
    g_autoptr(GError) err = NULL;
    g_assert_true(m->be->ops->download_f32(m->be, b, (size_t)slot * row, out, row, &err));
}

static void test_model_swap(void)
{
    g_autofree char *dir = hyocr_test_data(CKPT, NULL);
    g_autofree char *cfg = hyocr_test_data(CKPT, "config.json", NULL);
    if (!hyocr_test_require(cfg)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    hyocr_backend_params bp = { .n_threads = 1 };
    hyocr_backend *be = hyocr_backend_cpu_init(&bp, &err);
    hyocr_model *m = hyocr_model_load(be, ck, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_model_kv_init(m, 4, 8, 0, 0, &err));
    const int L = m->cfg.text.num_layers, T = 10;
    const size_t row = (size_t)m->cfg.text.num_kv_heads * m->cfg.text.head_dim;

    /* fill the whole pool with distinct values, then give a sequence 10 tokens */
    for (int l = 0; l < L; l++)
        for (int w = 0; w < 2; w++) {
            hyocr_buf *b = w ? m->v_cache[l] : m->k_cache[l];
            g_autofree float *v = g_new(float, b->n);
            for (size_t i = 0; i < b->n; i++) v[i] = (float)(i % 977) + 1000.0f * l + 0.5f * w;
            g_assert_true(be->ops->upload_f32(be, b, 0, v, b->n, &err));
        }
    hyocr_kv_seq *other = hyocr_model_seq_new(m), *seq = hyocr_model_seq_new(m);
    g_assert_true(hyocr_model_kv_reserve(m, other, 4, &err));
    g_assert_true(hyocr_model_kv_reserve(m, seq, T, &err));
    hyocr_kv_seq_commit(seq, T);
    g_autofree float *before = g_new(float, (size_t)L * 2 * T * row);
    for (int l = 0; l < L; l++)
        for (int w = 0; w < 2; w++)
            for (int t = 0; t < T; t++) kv_row(m, seq, l, w, t, before + (((size_t)l * 2 + w) * T + t) * row);

    size_t bytes = hyocr_model_kv_swap_bytes(m, seq);
    g_assert_cmpuint(bytes, ==, (size_t)3 * 4 * row * sizeof(float) * 2 * L);   /* 3 blocks of 4 */
    void *host = hyocr_model_host_alloc(m, bytes, &err);
    g_assert_nonnull(host);
    g_assert_true(hyocr_model_kv_swap_out(m, seq, host, &err));
    g_assert_cmpint(seq->n_blocks, ==, 0);
    g_assert_cmpint(seq->n_tokens, ==, T);
    g_assert_cmpint(hyocr_kv_pool_n_free(m->kv_pool), ==, 7);

    /* another sequence takes the freed blocks and scribbles on them */
    hyocr_kv_seq *thief = hyocr_model_seq_new(m);
    g_assert_true(hyocr_model_kv_reserve(m, thief, 12, &err));
    for (int l = 0; l < L; l++)
        for (int w = 0; w < 2; w++) {
            hyocr_buf *b = w ? m->v_cache[l] : m->k_cache[l];
            g_autofree float *z = g_new0(float, b->n);
            g_assert_true(be->ops->upload_f32(be, b, 0, z, b->n, &err));
        }
    hyocr_model_seq_free(m, thief);

    g_assert_true(hyocr_model_kv_swap_in(m, seq, host, &err));
    g_assert_cmpint(seq->n_tokens, ==, T);
    g_assert_cmpint(seq->n_blocks, ==, 3);
    g_autofree float *got = g_new(float, row);
    for (int l = 0; l < L; l++)
        for (int w = 0; w < 2; w++)
            for (int t = 0; t < T; t++) {
                kv_row(m, seq, l, w, t, got);
                g_assert_cmpmem(got, row * sizeof(float), before + (((size_t)l * 2 + w) * T + t) * row,
                                row * sizeof(float));
            }
    /* swapping in a sequence that holds blocks, or bytes outside a buffer, are errors */
    g_assert_false(hyocr_model_kv_swap_in(m, seq, host, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_assert_false(be->ops->read_bytes(be, m->k_cache[0], m->k_cache[0]->n * 4 - 2, host, 4, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_assert_false(be->ops->write_bytes(be, m->k_cache[0], SIZE_MAX, host, 4, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    hyocr_model_host_free(m, host, bytes);
    hyocr_model_seq_free(m, seq);
    hyocr_model_seq_free(m, other);
    hyocr_model_free(m);
    hyocr_backend_free(be);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/batch/sizes", test_batch_sizes);
    g_test_add_func("/batch/cuda/vision-beside", test_cuda_vision_beside);
    g_test_add_func("/batch/sampling-alone", test_sampling_alone);
    g_test_add_func("/batch/mixed-paths", test_mixed_paths);
    g_test_add_func("/batch/mixed-logprobs", test_mixed_logprobs);
    g_test_add_func("/batch/alone-embeds-leave", test_alone_embeds_leave);
    g_test_add_func("/batch/burst-grows-once", test_burst_grows_once);
    g_test_add_func("/batch/arrivals-grow-once", test_arrivals_grow_once);
    g_test_add_func("/batch/preempt-recompute", test_preempt_recompute);
    g_test_add_func("/batch/preempt-swap", test_preempt_swap);
    g_test_add_func("/batch/preempt-sampled", test_preempt_sampled);
    g_test_add_func("/batch/pool-too-small", test_pool_too_small);
    g_test_add_func("/batch/budget-one-of-four", test_budget_one_of_four);
    g_test_add_func("/batch/budget-preempts", test_budget_preempts);
    g_test_add_func("/batch/vision-offload", test_vision_offload);
    g_test_add_func("/batch/bad-image", test_bad_image_among_good);
#if HYOCR_HAVE_TIFF
    g_test_add_func("/batch/document-pages", test_document_pages);
#endif
#if HYOCR_HAVE_PDF
    g_test_add_func("/batch/pdf-page-budget", test_pdf_page_budget);
#endif
    g_test_add_func("/batch/cancel-one", test_cancel_one);
    g_test_add_func("/batch/cancel-all", test_cancel_all);
    g_test_add_func("/batch/nonfinite-logits", test_nonfinite_logits);
    g_test_add_func("/batch/nonfinite-vision", test_nonfinite_vision);
    g_test_add_func("/batch/busy-and-empty", test_busy_and_empty);
    g_test_add_func("/batch/model-swap", test_model_swap);
    g_test_add_func("/batch/submit-while-running", test_submit_while_running);
    g_test_add_func("/batch/job-holds-inputs", test_job_holds_inputs);
    g_test_add_func("/batch/cancel-frees-blocks", test_cancel_frees_blocks);
    g_test_add_func("/batch/queue-bound", test_queue_bound);
    g_test_add_func("/batch/submit-threads", test_submit_threads);
    g_test_add_func("/batch/free-cancels", test_free_cancels);
    g_test_add_func("/batch/chat-job", test_chat_job);
    return g_test_run();
}
