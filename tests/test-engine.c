/* The public engine API end to end on the tiny fixture checkpoints: streamed
 * events and their order, tokens equal to the reference's greedy output,
 * cancellation from another thread, length limits, the logits sink, and errors
 * that leave the engine usable. */
#define _GNU_SOURCE   /* memmem */
#include "error.h"
#include "hyocr.h"
#include "testutil.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define CKPT  "ckpt-flat"
#define IMAGE "odd_137x91.png"
#define TASK  HYOCR_TASK_RECOGNIZE
#define CASE  "odd_137x91.png__recognize"

/* The nested checkpoint is the 1.5-style one (no penalty in generation_config). */
#define CKPT15  "ckpt-nested"
#define CASE15  "odd_137x91.png__recognize"

static hyocr_engine *open_engine(const char *ckpt, int max_model_len, GError **error)
{
    g_autofree char *dir = hyocr_test_data(ckpt, NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    ep.max_model_len = max_model_len;
    return hyocr_engine_init(&ep, error);
}

static gboolean require_fixtures(void)
{
    g_autofree char *ck = hyocr_test_data(CKPT, "config.json", NULL);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    g_autofree char *ref = hyocr_test_data("model", CKPT, CASE, "greedy.txt", NULL);
    return hyocr_test_require(ck) && hyocr_test_require(img) && hyocr_test_require(ref);
}

/* Everything a job's callback saw. */
typedef struct {
    GArray  *types;        /* hyocr_event_type, in order */
    GString *pieces;       /* by their lengths: text can hold NUL bytes */
    GArray  *tokens;       /* int32_t from TOKEN events */
    char    *done_text;
    size_t   done_len;
    int      bad_utf8;
    int      prompt_tokens;
} recorder;

static void recorder_init(recorder *r)
{
    memset(r, 0, sizeof *r);
    r->types = g_array_new(FALSE, FALSE, sizeof(int));
    r->pieces = g_string_new(NULL);
    r->tokens = g_array_new(FALSE, FALSE, sizeof(int32_t));
}

static void recorder_clear(recorder *r)
{
    g_array_unref(r->types);
    g_string_free(r->pieces, TRUE);
    g_array_unref(r->tokens);
    g_free(r->done_text);
}

/* UTF-8 where NUL bytes are characters (GLib's validator stops at them). */
static bool utf8_ok(const char *s, size_t len)
{
    for (const char *p = s, *end = s + len; p < end;) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        if (!g_utf8_validate(p, (nul ? nul : end) - p, NULL)) return false;
        p = nul ? nul + 1 : end;
    }
    return true;
}

static void record(const hyocr_event *ev, void *data)
{
    recorder *r = data;
    int t = ev->type;
    g_array_append_val(r->types, t);
    if (ev->type == HYOCR_EVENT_PREPROCESS) {
        g_assert_nonnull(ev->prompt);
        g_assert_nonnull(ev->pixels);
        r->prompt_tokens = ev->prompt_tokens;
    } else if (ev->type == HYOCR_EVENT_TOKEN) {
        g_assert_nonnull(ev->piece);
        if (!utf8_ok(ev->piece, ev->piece_len)) r->bad_utf8++;
        g_string_append_len(r->pieces, ev->piece, (gssize)ev->piece_len);
        if (ev->token >= 0) g_array_append_val(r->tokens, ev->token);   /* -1: the text left at the end */
        g_assert_cmpint(ev->n_generated, ==, (int)r->tokens->len);
    } else if (ev->type == HYOCR_EVENT_DONE) {
        r->done_text = g_memdup2(ev->piece, ev->piece_len + 1);
        r->done_len = ev->piece_len;
    } else if (ev->type == HYOCR_EVENT_ERROR) {
        g_assert_nonnull(ev->error);
    }
}

static void job_init(hyocr_job_params *jp, const char *image_path, recorder *r)
{
    hyocr_job_params_init(jp);
    jp->image_path = image_path;
    jp->task = TASK;
    jp->max_new_tokens = 48;
    jp->repetition_penalty = 1.0f;
    jp->on_event = record;
    jp->user_data = r;
}

static int count_type(const recorder *r, hyocr_event_type t)
{
    int n = 0;
    for (guint i = 0; i < r->types->len; i++) n += g_array_index(r->types, int, i) == (int)t;
    return n;
}

static void assert_ids_equal(const GArray *got, const char *ref_path)
{
    g_autoptr(GArray) ref = hyocr_test_read_ints(ref_path);
    g_assert_cmpuint(got->len, ==, ref->len);
    for (guint i = 0; i < ref->len; i++)
        g_assert_cmpint(g_array_index(got, int32_t, i), ==, (int32_t)g_array_index(ref, int64_t, i));
}

/* ---- streaming ----------------------------------------------------------------- */

static void check_event_order(const recorder *r)
{
    /* preprocess, vision, prefill, token…, done: exactly that shape */
    const GArray *t = r->types;
    g_assert_cmpuint(t->len, >=, 5);
    g_assert_cmpint(g_array_index(t, int, 0), ==, HYOCR_EVENT_PREPROCESS);
    g_assert_cmpint(g_array_index(t, int, 1), ==, HYOCR_EVENT_VISION);
    g_assert_cmpint(g_array_index(t, int, 2), ==, HYOCR_EVENT_PREFILL);
    for (guint i = 3; i + 1 < t->len; i++) g_assert_cmpint(g_array_index(t, int, i), ==, HYOCR_EVENT_TOKEN);
    g_assert_cmpint(g_array_index(t, int, t->len - 1), ==, HYOCR_EVENT_DONE);
}

static void run_reference_case(const char *ckpt, const char *case_name, float rp, const char *ref_file)
{
    g_autofree char *ref = hyocr_test_data("model", ckpt, case_name, ref_file, NULL);
    if (!require_fixtures() || !hyocr_test_require(ref)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(ckpt, 0, &err);
    g_assert_no_error(err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    recorder r;
    recorder_init(&r);
    hyocr_job_params jp;
    job_init(&jp, img, &r);
    jp.repetition_penalty = rp;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);

    check_event_order(&r);
    g_assert_cmpint(r.bad_utf8, ==, 0);
    /* the fixture model writes byte 0 (id 188) in some answers: compare by length */
    g_assert_cmpmem(r.pieces->str, r.pieces->len, res.raw_text, res.raw_text_len);
    g_assert_cmpmem(r.done_text, r.done_len, res.text, res.text_len);
    g_assert_cmpuint(r.tokens->len, ==, res.token_ids->len);
    g_assert_cmpint(memcmp(r.tokens->data, res.token_ids->data, r.tokens->len * sizeof(int32_t)), ==, 0);
    g_assert_cmpint(r.prompt_tokens, ==, res.prompt_tokens);
    g_assert_cmpfloat(res.repetition_penalty, ==, rp);

    /* The whole pipeline (decode, resize, prompt, model, sampler) against HF generate. */
    assert_ids_equal(res.token_ids, ref);
    if (res.token_ids->len == 48)
        g_assert_true(res.stop_reason == HYOCR_STOP_MAX_NEW_TOKENS || res.stop_reason == HYOCR_STOP_EOS);
    else
        g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_EOS);
    g_assert_cmpfloat(res.timings.total_ms, >=, res.timings.vision_ms + res.timings.prefill_ms);
    g_assert_cmpfloat(res.timings.first_token_ms, >, 0);
    g_assert_cmpint(res.memory.weights, >, 0);
    hyocr_job_result_clear(&res);
    recorder_clear(&r);
}

/* On whatever device "auto" picks (the CPU here, CUDA on the GPU machine): the
 * warm-up gives back every buffer it took (an idle engine holds its weights),
 * and the next job still gives the reference's tokens. */
static void test_warmup(void)
{
    g_autofree char *ref = hyocr_test_data("model", CKPT, CASE, "greedy.txt", NULL);
    if (!require_fixtures()) return;
    g_autofree char *dir = hyocr_test_data(CKPT, NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.n_threads = 2;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = hyocr_engine_init(&ep, &err);
    g_assert_no_error(err);
    hyocr_mem_info before, after;
    hyocr_engine_mem_info(eng, &before);
    g_assert_true(hyocr_engine_warmup(eng, &err));
    g_assert_no_error(err);
    hyocr_engine_mem_info(eng, &after);
    g_test_message("warm-up on %s", hyocr_engine_backend_name(eng));
    g_assert_cmpint(after.weights, ==, before.weights);
    g_assert_cmpint(after.kv_reserved, ==, 0);
    g_assert_cmpint(after.kv_used, ==, 0);
    /* the backend may keep the small scratch it grew (op metadata, decode partials):
     * within its planned share, never the job's activations */
    hyocr_memplan_params mp;
    hyocr_memplan_params_init(&mp, hyocr_engine_backend_kind(eng));
    g_assert_cmpint(after.workspace, <=, MAX(before.workspace, mp.backend_bytes));
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    hyocr_job_params_init(&jp);
    jp.image_path = img;
    jp.max_new_tokens = 48;
    jp.repetition_penalty = 1.0f;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);
    assert_ids_equal(res.token_ids, ref);
    hyocr_job_result_clear(&res);
}

static void test_greedy(void)
{
    run_reference_case(CKPT, CASE, 1.0f, "greedy.txt");
}

static void test_greedy_rp(void)
{
    run_reference_case(CKPT, CASE, 1.08f, "greedy_rp.txt");
}

static void test_greedy_15(void)
{
    run_reference_case(CKPT15, CASE15, 1.0f, "greedy.txt");
    run_reference_case(CKPT15, CASE15, 1.08f, "greedy_rp.txt");
}

/* ---- logits sink --------------------------------------------------------------------- */

typedef struct {
    int    steps;
    int    n_vocab;
    float *first;
} sink;

static void on_logits(const float *logits, int n_vocab, int step, void *data)
{
    sink *s = data;
    g_assert_cmpint(step, ==, s->steps);
    s->steps++;
    s->n_vocab = n_vocab;
    if (step == 0) s->first = g_memdup2(logits, sizeof(float) * n_vocab);
}

/* With a penalty on, the sink must still see the raw logits: the first step's
 * equal the reference's prefill logits, which would not hold after penalising
 * the prompt's ids. */
static void test_logits_sink(void)
{
    g_autofree char *ref = hyocr_test_data("model", CKPT, CASE, "prefill_logits.f32", NULL);
    if (!require_fixtures() || !hyocr_test_require(ref)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_assert_no_error(err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.repetition_penalty = 1.5f;
    jp.max_new_tokens = 6;
    sink s = { 0 };
    jp.on_logits = on_logits;
    jp.logits_data = &s;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_cmpint(s.steps, ==, (int)res.token_ids->len);
    size_t n = 0;
    g_autofree float *want = hyocr_test_read_f32(ref, &n);
    g_assert_cmpint(s.n_vocab, ==, (int)n);
    float scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmaxf(scale, fabsf(want[i]));
        worst = fmaxf(worst, fabsf(want[i] - s.first[i]));
    }
    g_assert_cmpfloat(worst, <=, 1e-4f * scale);
    g_free(s.first);
    hyocr_job_result_clear(&res);
}

/* ---- limits -------------------------------------------------------------------------- */

static void test_max_new_tokens(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.max_new_tokens = 5;
    jp.ignore_eos = true;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_cmpuint(res.token_ids->len, ==, 5);
    g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_MAX_NEW_TOKENS);
    g_assert_cmpstr(hyocr_stop_reason_name(res.stop_reason), ==, "max_new_tokens");
    hyocr_job_result_clear(&res);
}

/* Learns the prompt length of the test job with a generous limit. */
static int prompt_length(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_assert_no_error(err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.max_new_tokens = 1;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    int n = res.prompt_tokens;
    g_assert_cmpint(n, >, 0);
    hyocr_job_result_clear(&res);
    return n;
}

static void test_max_model_len_stop(void)
{
    if (!require_fixtures()) return;
    int n = prompt_length();
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, n + 3, &err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.ignore_eos = true;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_cmpuint(res.token_ids->len, ==, 3);
    g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_MAX_MODEL_LEN);
    hyocr_job_result_clear(&res);
}

static void test_max_model_len_refused(void)
{
    if (!require_fixtures()) return;
    int n = prompt_length();
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, n, &err);   /* no room for one token */
    g_assert_no_error(err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    recorder r;
    recorder_init(&r);
    hyocr_job_params jp;
    job_init(&jp, img, &r);
    hyocr_job_result res = { 0 };
    g_assert_false(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_TOO_LONG);
    g_autofree char *ns = g_strdup_printf("%d", n);
    g_assert_nonnull(strstr(err->message, ns));
    g_assert_nonnull(strstr(err->message, "max_model_len"));
    /* refused before any model work */
    g_assert_cmpint(count_type(&r, HYOCR_EVENT_VISION), ==, 0);
    g_assert_cmpint(count_type(&r, HYOCR_EVENT_ERROR), ==, 1);
    g_assert_cmpuint(res.token_ids ? res.token_ids->len : 0, ==, 0);
    hyocr_job_result_clear(&res);
    recorder_clear(&r);
}

/* ---- cancellation ---------------------------------------------------------------------- */

typedef struct {
    hyocr_engine *eng;
    GMutex        lock;
    GCond         cond;
    int           tokens;
    int           tokens_at_cancel;   /* -1 until cancelled */
    bool          asked;
    int           cancelled_events;
    hyocr_job_result res;
    GError       *error;
    bool          ok;
} cancel_ctx;

/* At the third token, hand over to the main thread and wait until it has
 * called hyocr_engine_cancel: the count after that is deterministic. */
static void cancel_event(const hyocr_event *ev, void *data)
{
    cancel_ctx *c = data;
    if (ev->type == HYOCR_EVENT_CANCELLED) c->cancelled_events++;
    if (ev->type != HYOCR_EVENT_TOKEN) return;
    g_mutex_lock(&c->lock);
    c->tokens++;
    if (c->tokens == 3) {
        c->asked = true;
        g_cond_broadcast(&c->cond);
        while (c->tokens_at_cancel < 0) g_cond_wait(&c->cond, &c->lock);
    }
    g_mutex_unlock(&c->lock);
}

static gpointer cancel_worker(gpointer data)
{
    cancel_ctx *c = data;
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = cancel_event;
    jp.user_data = c;
    jp.max_new_tokens = 1000;
    jp.ignore_eos = true;
    c->ok = hyocr_engine_run(c->eng, &jp, &c->res, &c->error);
    return NULL;
}

static void test_cancel(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    cancel_ctx c = { .tokens_at_cancel = -1 };
    c.eng = open_engine(CKPT, 0, &err);
    g_assert_no_error(err);
    g_mutex_init(&c.lock);
    g_cond_init(&c.cond);
    GThread *th = g_thread_new("job", cancel_worker, &c);
    g_mutex_lock(&c.lock);
    while (!c.asked) g_cond_wait(&c.cond, &c.lock);
    hyocr_engine_cancel(c.eng);
    c.tokens_at_cancel = c.tokens;
    g_cond_broadcast(&c.cond);
    g_mutex_unlock(&c.lock);
    g_thread_join(th);

    g_assert_false(c.ok);
    g_assert_error(c.error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_cmpint(c.res.stop_reason, ==, HYOCR_STOP_CANCELLED);
    g_assert_cmpint(c.cancelled_events, ==, 1);
    /* at most the step already under way may finish */
    g_assert_cmpint(c.tokens, <=, c.tokens_at_cancel + 1);
    g_assert_cmpuint(c.res.token_ids->len, ==, (guint)c.tokens);

    /* the engine runs the next job normally */
    hyocr_job_result_clear(&c.res);
    g_clear_error(&c.error);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.max_new_tokens = 4;
    jp.ignore_eos = true;
    g_assert_true(hyocr_engine_run(c.eng, &jp, &c.res, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(c.res.token_ids->len, ==, 4);
    hyocr_job_result_clear(&c.res);
    hyocr_engine_free(c.eng);
    g_mutex_clear(&c.lock);
    g_cond_clear(&c.cond);
}

static void cancel_by_cancellable(const hyocr_event *ev, void *data)
{
    if (ev->type == HYOCR_EVENT_TOKEN && ev->n_generated == 2) g_cancellable_cancel(data);
}

static void test_cancellable(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = cancel_by_cancellable;
    jp.user_data = cancel;
    jp.cancellable = cancel;
    jp.ignore_eos = true;
    hyocr_job_result res = { 0 };
    g_assert_false(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    g_assert_cmpuint(res.token_ids->len, ==, 2);
    hyocr_job_result_clear(&res);
}

/* ---- errors ------------------------------------------------------------------------- */

static void test_missing_model_dir(void)
{
    g_autoptr(GError) err = NULL;
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = "/nonexistent/hyocr-model";
    ep.device = HYOCR_DEVICE_CPU;
    g_assert_null(hyocr_engine_init(&ep, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING);
    g_assert_nonnull(strstr(err->message, "/nonexistent/hyocr-model"));
    g_clear_error(&err);

    /* a folder without a model */
    g_autofree char *tmp = hyocr_test_tmpdir();
    ep.model_dir = tmp;
    g_assert_null(hyocr_engine_init(&ep, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING);
    g_assert_nonnull(strstr(err->message, tmp));
    hyocr_test_rmdir(tmp);
}

static void test_corrupt_image(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_autofree char *tmp = hyocr_test_tmpdir();
    g_autofree char *bad = g_build_filename(tmp, "broken.png", NULL);
    static const char junk[] = "\x89PNG\r\n\x1a\nthis is not really a png";
    g_assert_true(g_file_set_contents(bad, junk, sizeof junk - 1, NULL));

    recorder r;
    recorder_init(&r);
    hyocr_job_params jp;
    job_init(&jp, bad, &r);
    hyocr_job_result res = { 0 };
    g_assert_false(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_cmpint(count_type(&r, HYOCR_EVENT_ERROR), ==, 1);
    g_assert_cmpint(count_type(&r, HYOCR_EVENT_PREPROCESS), ==, 0);
    g_clear_error(&err);
    hyocr_job_result_clear(&res);
    recorder_clear(&r);

    /* the same engine still works */
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    recorder_init(&r);
    job_init(&jp, img, &r);
    jp.max_new_tokens = 3;
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_no_error(err);
    g_assert_cmpint(count_type(&r, HYOCR_EVENT_DONE), ==, 1);
    hyocr_job_result_clear(&res);
    recorder_clear(&r);
    hyocr_test_rmdir(tmp);
}

static void test_bad_job(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    hyocr_job_params jp;
    job_init(&jp, NULL, NULL);
    jp.on_event = NULL;
    g_assert_false(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_clear_error(&err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.max_new_tokens = 0;
    g_assert_false(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
}

/* ---- stop sequences ------------------------------------------------------------------ */

/* One run of the test job (48 tokens, EOS ignored so every run has them all) with the
 * given stop strings and tokens; the stream must add up to the answer's raw text. */
static void run_stopped(hyocr_engine *eng, const char *const *stop, bool included, const int32_t *ids, int n_ids,
                        hyocr_job_result *res, recorder *r)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    recorder_init(r);
    job_init(&jp, img, r);
    jp.ignore_eos = true;
    jp.stop = stop;
    jp.stop_included = included;
    jp.stop_token_ids = ids;
    jp.n_stop_token_ids = n_ids;
    memset(res, 0, sizeof *res);
    g_assert_true(hyocr_engine_run(eng, &jp, res, &err));
    g_assert_no_error(err);
    g_assert_cmpmem(r->pieces->str, r->pieces->len, res->raw_text, res->raw_text_len);
    g_assert_cmpuint(r->tokens->len, ==, res->token_ids->len);
}

/* The engine, and its answer with no stops in *plain. */
static hyocr_engine *stop_setup(hyocr_job_result *plain)
{
    g_autoptr(GError) err = NULL;
    hyocr_engine *eng = open_engine(CKPT, 0, &err);
    g_assert_no_error(err);
    recorder r;
    run_stopped(eng, NULL, false, NULL, 0, plain, &r);
    recorder_clear(&r);
    return eng;
}

/* A job with these stops fails before it runs, with a message holding `says`. */
static void stops_refused(hyocr_engine *eng, const char *const *stop, const int32_t *ids, int n, const char *says)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.stop = stop;
    jp.stop_token_ids = ids;
    jp.n_stop_token_ids = n;
    g_assert_false(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, says));
}

/* A piece of the plain answer's text from byte `from`, whole characters, no NUL: a stop string. */
static char *stop_from(const hyocr_job_result *plain, size_t from, int chars)
{
    const char *p = plain->raw_text + from, *end = plain->raw_text + plain->raw_text_len;
    while (p < end && ((guchar)*p & 0xc0) == 0x80) p++;   /* to a character's start */
    const char *q = p;
    for (int i = 0; i < chars && q < end && *q; i++) q = g_utf8_next_char(q);
    g_assert_true(q > p);
    return g_strndup(p, (gsize)(q - p));
}

/* The answer ends before the first stop string its text holds (after it when asked), its
 * tokens are the plain run's up to the one that completed it, and the stream never carried
 * a byte of it; a string the text only starts at its end is held back, then given. */
static void test_stop_strings(void)
{
    if (!require_fixtures()) return;
    hyocr_job_result plain, res;
    recorder r;
    g_autoptr(hyocr_engine) eng = stop_setup(&plain);
    g_assert_cmpuint(plain.raw_text_len, >, 8);

    g_autofree char *mid = stop_from(&plain, plain.raw_text_len / 2, 2);
    const char *first = memmem(plain.raw_text, plain.raw_text_len, mid, strlen(mid));
    size_t cut = (size_t)(first - plain.raw_text);
    const char *const one[] = { mid, NULL };
    for (int included = 0; included <= 1; included++) {
        run_stopped(eng, one, included, NULL, 0, &res, &r);
        size_t want = cut + (included ? strlen(mid) : 0);
        g_assert_cmpmem(res.raw_text, res.raw_text_len, plain.raw_text, want);
        g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_REQUESTED);
        g_assert_cmpstr(hyocr_stop_reason_name(res.stop_reason), ==, "requested");
        g_assert_cmpint(res.stop_string, ==, 1);
        g_assert_cmpuint(res.token_ids->len, <, plain.token_ids->len);
        g_assert_cmpmem(res.token_ids->data, res.token_ids->len * 4, plain.token_ids->data, res.token_ids->len * 4);
        recorder_clear(&r);
        hyocr_job_result_clear(&res);
    }

    /* two strings: the one found earlier in the text wins, whatever its place in the list */
    g_autofree char *early = stop_from(&plain, 0, 1);
    const char *const two[] = { mid, early, NULL };
    run_stopped(eng, two, false, NULL, 0, &res, &r);
    const char *e = memmem(plain.raw_text, plain.raw_text_len, early, strlen(early));
    g_assert_cmpuint(res.raw_text_len, ==, (size_t)(MIN(e, first) - plain.raw_text));
    g_assert_cmpint(res.stop_string, ==, e < first ? 2 : 1);
    recorder_clear(&r);
    hyocr_job_result_clear(&res);

    /* the text ends with the start of a string it never completes: held, then streamed at the end */
    const char *last = g_utf8_find_prev_char(plain.raw_text, plain.raw_text + plain.raw_text_len);
    g_autofree char *tail = g_strdup_printf("%.*s\x01never", (int)(plain.raw_text + plain.raw_text_len - last), last);
    if (!memchr(last, 0, (size_t)(plain.raw_text + plain.raw_text_len - last))) {
        const char *const held[] = { tail, NULL };
        run_stopped(eng, held, false, NULL, 0, &res, &r);
        g_assert_cmpmem(res.raw_text, res.raw_text_len, plain.raw_text, plain.raw_text_len);
        g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_MAX_NEW_TOKENS);
        g_assert_cmpint(res.stop_string, ==, 0);
        g_assert_cmpint(count_type(&r, HYOCR_EVENT_TOKEN), ==, (int)res.token_ids->len + 1);   /* + the rest */
        recorder_clear(&r);
        hyocr_job_result_clear(&res);
    }

    const char *const empty[] = { "", NULL };
    stops_refused(eng, empty, NULL, 0, "stop string 1 must be UTF-8 text");
    hyocr_job_result_clear(&plain);
}

/* A stop token ends the answer after its first appearance, also with EOS ignored. */
static void test_stop_tokens(void)
{
    if (!require_fixtures()) return;
    hyocr_job_result plain, res;
    recorder r;
    g_autoptr(hyocr_engine) eng = stop_setup(&plain);
    const int32_t *ids = (const int32_t *)plain.token_ids->data;
    int32_t stop_id = ids[plain.token_ids->len / 2];
    guint k = 0;
    while (ids[k] != stop_id) k++;
    run_stopped(eng, NULL, false, &stop_id, 1, &res, &r);
    g_assert_cmpuint(res.token_ids->len, ==, k + 1);
    g_assert_cmpmem(res.token_ids->data, (k + 1) * 4, ids, (k + 1) * 4);
    g_assert_cmpint(res.stop_reason, ==, HYOCR_STOP_REQUESTED);
    g_assert_cmpint(res.stop_string, ==, 0);
    recorder_clear(&r);
    hyocr_job_result_clear(&res);

    int32_t outside = 1 << 30;
    stops_refused(eng, NULL, &outside, 1, "is not in the vocabulary");
    hyocr_job_result_clear(&plain);
}

/* ---- log-probabilities ----------------------------------------------------------- */

/* The raw rows a job's tokens came from (on_logits), and the logprobs its TOKEN events carried. */
typedef struct {
    GPtrArray *rows;      /* float[V] each */
    GArray    *events;    /* hyocr_token_logprobs */
    int        V;
} logprob_seen;

static void keep_row(const float *logits, int V, int step, void *data)
{
    logprob_seen *ls = data;
    g_assert_cmpint(step, ==, (int)ls->rows->len);
    ls->V = V;
    g_ptr_array_add(ls->rows, g_memdup2(logits, sizeof(float) * (size_t)V));
}

static void keep_logprobs(const hyocr_event *ev, void *data)
{
    logprob_seen *ls = data;
    if (ev->type != HYOCR_EVENT_TOKEN || ev->token < 0) return;
    g_assert_nonnull(ev->logprobs);
    g_array_append_val(ls->events, *ev->logprobs);
}

/* log-softmax of row at id, another way than the engine's: a sum in long double, no shift */
static double logprob_of(const float *row, int V, int32_t id)
{
    long double z = 0.0L;
    for (int v = 0; v < V; v++) z += expl((long double)row[v]);
    return (double)((long double)row[id] - logl(z));
}

static void run_logprobs(hyocr_engine *eng, int top, hyocr_job_result *res, logprob_seen *ls)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.ignore_eos = true;
    jp.repetition_penalty = 1.3f;   /* the logprobs are the raw rows', before it */
    jp.logprobs = top >= 0;
    jp.top_logprobs = MAX(top, 0);
    jp.on_event = ls ? keep_logprobs : NULL;
    jp.user_data = ls;
    jp.on_logits = ls ? keep_row : NULL;
    jp.logits_data = ls;
    memset(res, 0, sizeof *res);
    g_assert_true(hyocr_engine_run(eng, &jp, res, &err));
    g_assert_no_error(err);
}

/* Each token's log-probability is the log-softmax of the raw row it came from, its top ids
 * are that row's largest, in order; asking for them changes no token. */
static void check_token_logprobs(const float *row, int V, int32_t id, const hyocr_token_logprobs *lp, int top)
{
    g_assert_cmpfloat_with_epsilon(lp->logprob, logprob_of(row, V, id), 1e-4);
    g_assert_cmpfloat(lp->logprob, <=, 0.0);
    g_assert_cmpint(lp->n_top, ==, top);
    for (int i = 0; i < top; i++) {
        const hyocr_logprob *t = &lp->top[i];
        g_assert_cmpfloat_with_epsilon(t->logprob, logprob_of(row, V, t->id), 1e-4);
        if (i) g_assert_cmpfloat(t->logprob, <=, lp->top[i - 1].logprob);
        if (t->id == id) g_assert_cmpfloat(t->logprob, ==, lp->logprob);
    }
    /* nothing left out beats the last one kept */
    float floor = row[lp->top[top - 1].id];
    for (int v = 0; v < V; v++) {
        bool kept = false;
        for (int i = 0; i < top; i++) kept |= lp->top[i].id == v;
        if (!kept) g_assert_cmpfloat(row[v], <=, floor);
    }
}

static void test_logprobs(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_assert_no_error(err);
    hyocr_job_result plain, res;
    run_logprobs(eng, -1, &plain, NULL);
    g_assert_null(plain.logprobs);
    const int top = 5;
    logprob_seen ls = { g_ptr_array_new_with_free_func(g_free), g_array_new(FALSE, FALSE, sizeof(hyocr_token_logprobs)) };
    run_logprobs(eng, top, &res, &ls);
    g_assert_cmpuint(res.token_ids->len, ==, plain.token_ids->len);
    g_assert_cmpmem(res.token_ids->data, res.token_ids->len * 4, plain.token_ids->data, plain.token_ids->len * 4);
    g_assert_nonnull(res.logprobs);
    g_assert_cmpuint(res.logprobs->len, ==, res.token_ids->len);
    g_assert_cmpuint(ls.rows->len, ==, res.token_ids->len);
    g_assert_cmpuint(ls.events->len, ==, res.token_ids->len);
    int penalised = 0;
    for (guint i = 0; i < res.token_ids->len; i++) {
        const hyocr_token_logprobs *lp = &g_array_index(res.logprobs, hyocr_token_logprobs, i);
        int32_t id = g_array_index(res.token_ids, int32_t, i);
        check_token_logprobs(ls.rows->pdata[i], ls.V, id, lp, top);
        g_assert_cmpmem(lp, sizeof *lp, &g_array_index(ls.events, hyocr_token_logprobs, i), sizeof *lp);
        penalised += lp->top[0].id != id;   /* the penalty moved the choice off the raw argmax */
    }
    g_test_message("%d of %u tokens were not their raw row's argmax", penalised, res.token_ids->len);
    /* without on_logits the backend chooses and computes them (pick_logprobs): on the CPU the
     * same values, bit for bit, as the host path's above */
    hyocr_job_result picked;
    run_logprobs(eng, top, &picked, NULL);
    g_assert_cmpuint(picked.token_ids->len, ==, res.token_ids->len);
    g_assert_cmpmem(picked.token_ids->data, picked.token_ids->len * 4, res.token_ids->data, res.token_ids->len * 4);
    g_assert_cmpuint(picked.logprobs->len, ==, res.logprobs->len);
    g_assert_cmpmem(picked.logprobs->data, picked.logprobs->len * sizeof(hyocr_token_logprobs), res.logprobs->data,
                    res.logprobs->len * sizeof(hyocr_token_logprobs));
    hyocr_job_result_clear(&picked);
    hyocr_job_result_clear(&res);
    hyocr_job_result_clear(&plain);
    g_ptr_array_unref(ls.rows);
    g_array_unref(ls.events);

    /* the chosen token's alone */
    run_logprobs(eng, 0, &res, NULL);
    g_assert_cmpuint(res.logprobs->len, ==, res.token_ids->len);
    g_assert_cmpint(g_array_index(res.logprobs, hyocr_token_logprobs, 0).n_top, ==, 0);
    hyocr_job_result_clear(&res);

    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.logprobs = true;
    jp.top_logprobs = HYOCR_TOP_LOGPROBS_MAX + 1;
    g_assert_false(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(err->message, "top_logprobs must be between 0 and 20 (got 21)"));
}

/* max_side is one rule for a file and for decoded pixels (Pillow's thumbnail size:
 * 137×91 at 70 is 70×47, where scaling and rounding would give 70×46). */
static void test_max_side(void)
{
    if (!require_fixtures()) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(CKPT, 0, &err);
    g_assert_no_error(err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    g_autoptr(hyocr_image) pixels = hyocr_image_load(img, NULL, &err);
    g_assert_no_error(err);
    hyocr_job_params jp;
    for (int decoded = 0; decoded < 2; decoded++) {
        job_init(&jp, decoded ? NULL : img, NULL);
        jp.image = decoded ? pixels : NULL;
        jp.on_event = NULL;
        jp.max_side = 70;
        hyocr_memplan plan;
        g_assert_true(hyocr_engine_plan_job(eng, &jp, &plan, &err));
        g_assert_no_error(err);
        g_assert_cmpint(plan.image_width, ==, 70);
        g_assert_cmpint(plan.image_height, ==, 47);
        jp.max_side = 137;   /* fits already: untouched */
        g_assert_true(hyocr_engine_plan_job(eng, &jp, &plan, &err));
        g_assert_cmpint(plan.image_width, ==, 137);
        g_assert_cmpint(plan.image_height, ==, 91);
    }
}

/* The model default: generation_config's value when it has one (1.03 in the flat,
 * 1.0-style checkpoint), else 1.08 for 1.5 (the nested one has none). */
static void check_default_penalty(const char *ckpt, float want)
{
    g_autofree char *dir = hyocr_test_data(ckpt, "config.json", NULL);
    if (!require_fixtures() || !hyocr_test_require(dir)) return;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = open_engine(ckpt, 0, &err);
    g_assert_no_error(err);
    g_autofree char *img = hyocr_test_data("images", IMAGE, NULL);
    hyocr_job_params jp;
    job_init(&jp, img, NULL);
    jp.on_event = NULL;
    jp.repetition_penalty = -1;
    jp.max_new_tokens = 1;
    hyocr_job_result res = { 0 };
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    g_assert_cmpfloat_with_epsilon(res.repetition_penalty, want, 1e-6);
    hyocr_job_result_clear(&res);
}

static void test_default_penalty(void)
{
    check_default_penalty(CKPT, 1.03f);
    check_default_penalty(CKPT15, 1.08f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/engine/greedy", test_greedy);
    g_test_add_func("/engine/warmup", test_warmup);
    g_test_add_func("/engine/greedy-rp", test_greedy_rp);
    g_test_add_func("/engine/greedy-1.5", test_greedy_15);
    g_test_add_func("/engine/logits-sink", test_logits_sink);
    g_test_add_func("/engine/max-new-tokens", test_max_new_tokens);
    g_test_add_func("/engine/max-model-len-stop", test_max_model_len_stop);
    g_test_add_func("/engine/max-model-len-refused", test_max_model_len_refused);
    g_test_add_func("/engine/cancel", test_cancel);
    g_test_add_func("/engine/cancellable", test_cancellable);
    g_test_add_func("/engine/missing-model-dir", test_missing_model_dir);
    g_test_add_func("/engine/corrupt-image", test_corrupt_image);
    g_test_add_func("/engine/bad-job", test_bad_job);
    g_test_add_func("/engine/max-side", test_max_side);
    g_test_add_func("/engine/default-penalty", test_default_penalty);
    g_test_add_func("/engine/stop-strings", test_stop_strings);
    g_test_add_func("/engine/stop-tokens", test_stop_tokens);
    g_test_add_func("/engine/logprobs", test_logprobs);
    return g_test_run();
}
