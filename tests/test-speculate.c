/* Speculative decoding on the target (issue 20) on ckpt-dflash and its tiny draft, on the CPU
 * backend and, when one is usable, the CUDA backend (rounds then go through captured graphs):
 * the target keeps the tapped layers' outputs as the reference (taps.f32); a step whose blocks
 * verify drafts right for their first k positions and wrong after commits k + 1 tokens a round
 * and exactly the tokens plain decoding gives (greedy at penalty 1.0 and 1.08, which changes the
 * text, and sampled: the z-lab rule); a block and a plain row share a step; and with the real
 * draft every round proposes what the authors' dflash_generate proposed (blocks.txt). */
#include "dflash.h"
#include "error.h"
#include "hyocr.h"
#include "image.h"
#include "resize.h"
#include "prompt.h"
#include "speculate.h"
#include "testutil.h"
#include "tokenizer.h"

#include <math.h>
#include <string.h>

#define CASE  "odd_137x91.png__recognize"
#define N_NEW 64
#define W_TAP (4 * 64)

typedef struct {
    hyocr_checkpoint *ck;
    hyocr_backend    *be;
    hyocr_model      *m;
    hyocr_dflash     *d;
    hyocr_prompt     *p;
    hyocr_buf        *embeds;
    int               n_embeds;
    int               V;
} env;

/* The case's environment on a backend; false (a loud skip) without CUDA. */
static bool env_open(env *E, bool cuda)
{
    memset(E, 0, sizeof *E);
    g_autofree char *dir = hyocr_test_data("ckpt-dflash", NULL);
    g_autoptr(GError) err = NULL;
    hyocr_backend_params bp = { .n_threads = 2 };
    E->be = cuda ? hyocr_backend_cuda_init(&bp, &err) : hyocr_backend_cpu_init(&bp, &err);
    if (!E->be) {
        g_assert_true(cuda);
        g_test_skip("no usable CUDA device");
        g_test_message("CUDA backend unavailable: %s", err ? err->message : "?");
        return false;
    }
    E->ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    E->m = hyocr_model_load(E->be, E->ck, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_model_kv_init(E->m, 16, 0, 512, 0, &err));
    E->d = hyocr_dflash_load(E->be, hyocr_checkpoint_draft(E->ck), E->m, &err);
    g_assert_no_error(err);
    E->V = E->m->cfg.text.vocab_size;

    const hyocr_config *cfg = hyocr_checkpoint_config(E->ck);
    g_autofree char *img_path = hyocr_test_data("images", "odd_137x91.png", NULL);
    g_autoptr(hyocr_image) img = hyocr_image_load(img_path, NULL, &err);
    g_assert_no_error(err);
    g_autoptr(hyocr_pixels) px = hyocr_pixels_from_image(img, &cfg->processor, 0, &err);
    g_assert_no_error(err);
    g_autofree char *tok_path = g_build_filename(dir, "tokenizer.json", NULL);
    g_autoptr(hyocr_tokenizer) tok = hyocr_tokenizer_load(tok_path, &err);
    g_assert_no_error(err);
    g_autofree char *text = hyocr_task_prompt(HYOCR_TASK_RECOGNIZE, cfg->version, NULL, NULL, &err);
    g_assert_no_error(err);
    E->p = hyocr_prompt_build(tok, cfg, text, px->grid_h, px->grid_w, &err);
    g_assert_no_error(err);
    /* the prompt is the reference's */
    g_autofree char *ids_path = hyocr_test_data("dflash", "e2e", CASE, "input_ids.txt", NULL);
    g_autoptr(GArray) want = hyocr_test_read_ints(ids_path);
    g_assert_cmpint(E->p->n, ==, (int)want->len);
    for (int i = 0; i < E->p->n; i++) g_assert_cmpint(E->p->ids[i], ==, g_array_index(want, int64_t, i));
    E->embeds = hyocr_vision_forward(E->m, px, &E->n_embeds, NULL, NULL, NULL, &err);
    g_assert_no_error(err);
    return true;
}

static void env_close(env *E)
{
    E->be->ops->buf_free(E->be, E->embeds);
    hyocr_prompt_free(E->p);
    hyocr_dflash_free(E->d);
    hyocr_model_free(E->m);
    hyocr_backend_free(E->be);
    hyocr_checkpoint_free(E->ck);
}

static GArray *fixture_ints(const char *name)
{
    g_autofree char *path = hyocr_test_data("dflash", "e2e", CASE, name, NULL);
    return hyocr_test_read_ints(path);
}

static hyocr_sampler *make_sampler(env *E, float penalty, float temperature)
{
    hyocr_sampler_params sp = { .repetition_penalty = penalty, .temperature = temperature, .seed = 7 };
    hyocr_sampler *s = hyocr_sampler_init(&sp, E->V);
    hyocr_sampler_set_penalty_divide(s, E->be->kind == HYOCR_BACKEND_CPU ? HYOCR_PENALTY_DIVIDE_TRUE
                                                                         : HYOCR_PENALTY_DIVIDE_RECIPROCAL);
    hyocr_sampler_accept(s, E->p->ids, E->p->n);
    return s;
}

/* The prompt through the target; taps (may be NULL) get the tapped layers' outputs. Returns the
 * first token, chosen (and added to the set) by s. */
static int32_t prefill(env *E, hyocr_kv_seq *kv, hyocr_buf *taps, hyocr_sampler *s)
{
    g_autofree float *logits = g_new(float, E->V);
    hyocr_text_seq q = { .ids = E->p->ids, .pos = E->p->pos, .n_new = E->p->n, .kv = kv, .image_embeds = E->embeds,
                         .n_image_rows = E->n_embeds, .image_token_id = E->m->cfg.image_token_id, .taps = taps };
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_text_forward(E->m, &q, 1, logits, NULL, NULL, &err));
    g_assert_no_error(err);
    int32_t tok = hyocr_sampler_sample(s, logits);
    hyocr_sampler_accept(s, &tok, 1);
    return tok;
}

/* What a pick slot must hold: the prompt and the tokens so far. */
typedef struct {
    GArray *ids;
    int     slot;
} history;

static void history_open(env *E, history *h, const int32_t *first, int n)
{
    h->ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    g_array_append_vals(h->ids, E->p->ids, (guint)E->p->n);
    g_array_append_vals(h->ids, first, (guint)n);
    g_autoptr(GError) err = NULL;
    h->slot = hyocr_model_pick_slot_new(E->m, (const int32_t *)h->ids->data, (int)h->ids->len, &err);
    g_assert_no_error(err);
}

static void history_add(env *E, history *h, const int32_t *ids, int n)
{
    g_array_append_vals(h->ids, ids, (guint)n);
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_model_pick_slot_set(E->m, h->slot, (const int32_t *)h->ids->data, (int)h->ids->len, &err));
    g_assert_no_error(err);
}

static void history_close(env *E, history *h)
{
    hyocr_model_pick_slot_free(E->m, h->slot);
    g_array_free(h->ids, TRUE);
}

static hyocr_pick pick_for(const history *h, hyocr_sampler *s, float penalty, float temperature)
{
    hyocr_pick k = { .slot = h->slot, .penalty = penalty };
    if (temperature > 0) {
        k.seed = 7;
        k.n_draw = hyocr_sampler_draw_index(s);
        k.draw = (hyocr_pick_draw){ .temperature = temperature, .top_k = 40, .top_p = 0.95f,
                                    .u = hyocr_sampler_next_uniform(s) };
    }
    return k;
}

/* Plain decoding: one token per step, chosen on the device as the scheduler chooses it. */
static void plain_tokens(env *E, float penalty, float temperature, int n, int32_t *out)
{
    g_autoptr(hyocr_sampler) s = make_sampler(E, penalty, temperature);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E->m);
    out[0] = prefill(E, kv, NULL, s);
    history h;
    history_open(E, &h, out, 1);
    g_autoptr(GError) err = NULL;
    for (int i = 1; i < n; i++) {
        hyocr_text_seq q = { .ids = &out[i - 1], .n_new = 1, .kv = kv };
        hyocr_pick pk = pick_for(&h, s, penalty, temperature);
        bool nf = true;
        g_assert_true(hyocr_text_decode(E->m, &q, 1, &pk, &out[i], &nf, NULL, NULL, &err));
        g_assert_no_error(err);
        g_assert_false(nf);
        g_array_append_val(h.ids, out[i]);   /* the pick added it to the slot */
    }
    history_close(E, &h);
    hyocr_model_seq_free(E->m, kv);
}

static void test_prefill_taps(gconstpointer cuda)
{
    env E;
    if (!env_open(&E, GPOINTER_TO_INT(cuda))) return;
    g_autoptr(GError) err = NULL;
    hyocr_buf *taps = E.be->ops->alloc(E.be, HYOCR_BUF_ACT, (size_t)E.p->n * W_TAP, &err);
    g_assert_no_error(err);
    g_autoptr(hyocr_sampler) s = make_sampler(&E, 1.0f, 0);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    int32_t first = prefill(&E, kv, taps, s);
    g_autoptr(GArray) greedy = fixture_ints("greedy.txt");
    g_assert_cmpint(first, ==, g_array_index(greedy, int64_t, 0));
    g_autofree float *got = g_new(float, (size_t)E.p->n * W_TAP);
    g_assert_true(E.be->ops->download_f32(E.be, taps, 0, got, (size_t)E.p->n * W_TAP, &err));
    g_autofree char *path = hyocr_test_data("dflash", "e2e", CASE, "taps.f32", NULL);
    size_t n = 0;
    g_autofree float *want = hyocr_test_read_f32(path, &n);
    g_assert_cmpuint(n, ==, (size_t)E.p->n * W_TAP);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)got[i] - want[i]));
        den = fmax(den, fabs((double)want[i]));
    }
    g_test_message("%s: prefill taps (layers 1, 3, 5, 6) vs reference: max rel %.3g", E.be->ops->name, num / den);
    g_assert_cmpfloat(num / den, <=, E.be->kind == HYOCR_BACKEND_CPU ? 1e-4 : 1e-2);
    E.be->ops->buf_free(E.be, taps);
    hyocr_model_seq_free(E.m, kv);
    env_close(&E);
}

/* The CPU loop equals the reference's greedy (the premise of the comparisons below). */
static void test_plain_matches_reference(void)
{
    env E;
    env_open(&E, false);
    int32_t got[N_NEW];
    plain_tokens(&E, 1.0f, 0, N_NEW, got);
    g_autoptr(GArray) want = fixture_ints("greedy.txt");
    g_assert_cmpint(want->len, ==, N_NEW);
    for (int i = 0; i < N_NEW; i++) g_assert_cmpint(got[i], ==, g_array_index(want, int64_t, i));
    env_close(&E);
}

/* One sequence decoded by steps whose blocks verify drafts that are the plain continuation for
 * their first k positions and a wrong token after (k < 0: plain rows, no drafts). */
typedef struct {
    hyocr_kv_seq  *kv;
    hyocr_sampler *s;
    history        h;
    int32_t        got[N_NEW + HYOCR_DFLASH_MAX_BLOCK];
    int32_t        drafts[HYOCR_DFLASH_MAX_BLOCK];
    int            have, rounds, k;
} runner;

static void runner_open(env *E, runner *r, float penalty, float temperature, int k)
{
    memset(r, 0, sizeof *r);
    r->s = make_sampler(E, penalty, temperature);
    r->kv = hyocr_model_seq_new(E->m);
    r->got[r->have++] = prefill(E, r->kv, NULL, r->s);
    history_open(E, &r->h, r->got, 1);
    r->k = k;
}

static void runner_seq(env *E, runner *r, const int32_t *plain, int n, float penalty, float temperature,
                       hyocr_spec_seq *q)
{
    int nd = r->k < 0 ? 0 : 15;
    for (int i = 0; i < nd; i++) {
        int at = r->have + i;   /* the position draft i stands for */
        r->drafts[i] = i < r->k && at < n ? plain[at] : (at < n ? (plain[at] + 1) % E->V : 0);
    }
    *q = (hyocr_spec_seq){ .kv = r->kv, .bonus = r->got[r->have - 1], .n_drafts = nd, .drafts = r->drafts,
                           .pick = pick_for(&r->h, r->s, penalty, temperature) };
}

static void runner_take(env *E, runner *r, const hyocr_spec_seq *q, int n)
{
    g_assert_false(q->nonfinite);
    if (r->k >= 0 && r->have + r->k < n) g_assert_cmpint(q->n_out, ==, r->k + 1);
    if (q->n_drafts) hyocr_sampler_skip_draws(r->s, (uint64_t)q->n_out - 1);
    memcpy(r->got + r->have, q->out, sizeof(int32_t) * (size_t)q->n_out);
    r->have += q->n_out;
    r->rounds++;
    history_add(E, &r->h, q->out, q->n_out);
}

static void runner_close(env *E, runner *r)
{
    history_close(E, &r->h);
    hyocr_model_seq_free(E->m, r->kv);
    hyocr_sampler_free(r->s);
}

static void spec_with_k(env *E, float penalty, float temperature, int k, const int32_t *plain, int n)
{
    runner r;
    runner_open(E, &r, penalty, temperature, k);
    g_autoptr(GError) err = NULL;
    while (r.have < n) {
        hyocr_spec_seq q;
        runner_seq(E, &r, plain, n, penalty, temperature, &q);
        int before = r.kv->n_tokens;
        g_assert_true(hyocr_spec_step(E->m, NULL, &q, 1, &err));
        g_assert_no_error(err);
        g_assert_cmpint(r.kv->n_tokens, ==, before + q.n_out);
        runner_take(E, &r, &q, n);
    }
    for (int i = 0; i < n; i++)
        if (r.got[i] != plain[i])
            g_error("%s, penalty %g, T %g, k %d: token %d is %d, plain decoding gives %d", E->be->ops->name, penalty,
                    temperature, k, i, r.got[i], plain[i]);
    g_test_message("%s, penalty %.2f, T %.1f, %d right drafts a round: %d tokens in %d rounds, same as plain",
                   E->be->ops->name, penalty, temperature, k, n, r.rounds);
    runner_close(E, &r);
}

typedef struct {
    bool  cuda;
    float penalty, temperature;
} lossless_case;

static void test_lossless(gconstpointer data)
{
    const lossless_case *c = data;
    env E;
    if (!env_open(&E, c->cuda)) return;
    int32_t plain[N_NEW];
    plain_tokens(&E, c->penalty, c->temperature, N_NEW, plain);
    if (c->penalty != 1.0f) {   /* the penalty changes the text here, so a round that misapplied it would show */
        int32_t off[N_NEW];
        plain_tokens(&E, 1.0f, c->temperature, N_NEW, off);
        g_assert_true(memcmp(off, plain, sizeof plain) != 0);
    }
    static const int ks[] = { 0, 1, 3, 6, 15 };
    for (size_t i = 0; i < G_N_ELEMENTS(ks); i++) spec_with_k(&E, c->penalty, c->temperature, ks[i], plain, N_NEW);
    env_close(&E);
}

/* A block (3 right drafts) and a plain row in one step, at penalty 1.08: both sequences give
 * their plain tokens. */
static void test_mixed_step(gconstpointer cuda)
{
    env E;
    if (!env_open(&E, GPOINTER_TO_INT(cuda))) return;
    int32_t plain[N_NEW];
    plain_tokens(&E, 1.08f, 0, N_NEW, plain);
    runner a, b;
    runner_open(&E, &a, 1.08f, 0, 3);
    runner_open(&E, &b, 1.08f, 0, -1);
    g_autoptr(GError) err = NULL;
    while (a.have < N_NEW || b.have < N_NEW) {
        hyocr_spec_seq q[2];
        runner_seq(&E, &a, plain, N_NEW, 1.08f, 0, &q[0]);
        runner_seq(&E, &b, plain, N_NEW, 1.08f, 0, &q[1]);
        g_assert_true(hyocr_spec_step(E.m, NULL, q, 2, &err));
        g_assert_no_error(err);
        runner_take(&E, &a, &q[0], N_NEW);
        runner_take(&E, &b, &q[1], N_NEW);
    }
    for (int i = 0; i < N_NEW; i++) {
        g_assert_cmpint(a.got[i], ==, plain[i]);
        g_assert_cmpint(b.got[i], ==, plain[i]);
    }
    runner_close(&E, &a);
    runner_close(&E, &b);
    env_close(&E);
}

/* The real draft: each round's block is the reference's, and the tokens are greedy's. */
static void test_draft_rounds_match_reference(gconstpointer cuda)
{
    env E;
    if (!env_open(&E, GPOINTER_TO_INT(cuda))) return;
    g_autoptr(hyocr_sampler) s = make_sampler(&E, 1.0f, 0);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    g_autoptr(GError) err = NULL;
    hyocr_buf *taps = E.be->ops->alloc(E.be, HYOCR_BUF_ACT, (size_t)E.p->n * W_TAP, &err);
    int32_t got[N_NEW + 16];
    int have = 0, round = 0, near_ties = 0;
    got[have++] = prefill(&E, kv, taps, s);
    hyocr_spec_job *job = hyocr_spec_job_new(E.d, 15, E.p->n + N_NEW + 16, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_spec_job_prefill(E.d, job, taps, E.p->n, &err));
    g_assert_no_error(err);
    E.be->ops->buf_free(E.be, taps);
    history h;
    history_open(&E, &h, got, 1);
    g_autoptr(GArray) blocks = fixture_ints("blocks.txt");
    g_autoptr(GArray) greedy = fixture_ints("greedy.txt");
    while (have < N_NEW) {
        /* the proposal this round, as the reference's (bonus + 15 drafts per line) */
        int32_t drafts[15];
        g_assert_true(hyocr_dflash_propose(E.d, job->ctx, got[have - 1], drafts, NULL, &err));
        g_assert_cmpuint((guint)(round + 1) * 16, <=, blocks->len);
        g_assert_cmpint(got[have - 1], ==, g_array_index(blocks, int64_t, round * 16));
        for (int i = 0; i < 15; i++) {
            int32_t want = (int32_t)g_array_index(blocks, int64_t, round * 16 + 1 + i);
            if (E.be->kind == HYOCR_BACKEND_CPU) g_assert_cmpint(drafts[i], ==, want);
            else near_ties += drafts[i] != want;   /* FP16: counted, the tokens below must still be greedy's */
        }
        hyocr_spec_seq q = { .kv = kv, .job = job, .bonus = got[have - 1], .n_drafts = 15,
                             .pick = { .slot = h.slot, .penalty = 1.0f } };
        g_assert_true(hyocr_spec_step(E.m, E.d, &q, 1, &err));
        g_assert_no_error(err);
        g_assert_cmpint(job->ctx->n, ==, kv->n_tokens);
        memcpy(got + have, q.out, sizeof(int32_t) * (size_t)q.n_out);
        have += q.n_out;
        history_add(&E, &h, q.out, q.n_out);
        round++;
    }
    for (int i = 0; i < N_NEW; i++) g_assert_cmpint(got[i], ==, g_array_index(greedy, int64_t, i));
    g_assert_cmpint(job->rounds, ==, round);
    g_test_message("%s, real draft: %d tokens in %d rounds, %d proposals off the reference's", E.be->ops->name,
                   N_NEW, round, near_ties);
    history_close(&E, &h);
    hyocr_spec_job_free(E.d, job);
    hyocr_model_seq_free(E.m, kv);
    env_close(&E);
}

/* Plain steps of a job with draft state keep their rows pending; the next round takes them in
 * first, and the context then covers every token of the cache. */
static void test_pending_rows(void)
{
    env E;
    env_open(&E, false);
    g_autoptr(hyocr_sampler) s = make_sampler(&E, 1.0f, 0);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    g_autoptr(GError) err = NULL;
    hyocr_buf *taps = E.be->ops->alloc(E.be, HYOCR_BUF_ACT, (size_t)E.p->n * W_TAP, &err);
    int32_t got[N_NEW + 16];
    int have = 0;
    got[have++] = prefill(&E, kv, taps, s);
    hyocr_spec_job *job = hyocr_spec_job_new(E.d, 15, E.p->n + N_NEW + 16, &err);
    g_assert_true(hyocr_spec_job_prefill(E.d, job, taps, E.p->n, &err));
    E.be->ops->buf_free(E.be, taps);
    history h;
    history_open(&E, &h, got, 1);
    g_autoptr(GArray) greedy = fixture_ints("greedy.txt");
    for (int step = 0; have < N_NEW; step++) {
        hyocr_spec_seq q = { .kv = kv, .job = job, .bonus = got[have - 1], .n_drafts = step % 5 == 4 ? 15 : 0,
                             .pick = { .slot = h.slot, .penalty = 1.0f } };
        g_assert_true(hyocr_spec_step(E.m, E.d, &q, 1, &err));
        g_assert_no_error(err);
        g_assert_cmpint(job->ctx->n + job->n_pending, ==, kv->n_tokens);
        if (q.n_drafts) g_assert_cmpint(job->n_pending, ==, 0);
        memcpy(got + have, q.out, sizeof(int32_t) * (size_t)q.n_out);
        have += q.n_out;
        if (q.n_drafts) history_add(&E, &h, q.out, q.n_out);
        else g_array_append_vals(h.ids, q.out, 1);   /* a plain row's choice joined the slot */
    }
    for (int i = 0; i < N_NEW; i++) g_assert_cmpint(got[i], ==, g_array_index(greedy, int64_t, i));
    history_close(&E, &h);
    hyocr_spec_job_free(E.d, job);
    hyocr_model_seq_free(E.m, kv);
    env_close(&E);
}

static void test_step_misuse(void)
{
    env E;
    env_open(&E, false);
    g_autoptr(hyocr_sampler) s = make_sampler(&E, 1.0f, 0);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    int32_t first = prefill(&E, kv, NULL, s);
    history h;
    history_open(&E, &h, &first, 1);
    int32_t drafts[64] = { 0 };
    int before = kv->n_tokens;
    g_autoptr(GError) err = NULL;
    hyocr_spec_seq q = { .kv = kv, .bonus = first, .n_drafts = 64, .drafts = drafts, .pick = { .slot = h.slot } };
    g_assert_false(hyocr_spec_step(E.m, NULL, &q, 1, &err));
    g_assert_nonnull(strstr(err->message, "has 64 drafts"));
    g_clear_error(&err);
    q.n_drafts = 3;
    drafts[0] = 99999;   /* not a token: nothing runs, nothing changes */
    g_assert_false(hyocr_spec_step(E.m, NULL, &q, 1, &err));
    g_assert_nonnull(strstr(err->message, "outside the vocabulary"));
    g_assert_cmpint(kv->n_tokens, ==, before);
    g_clear_error(&err);
    hyocr_spec_job *job = hyocr_spec_job_new(E.d, 15, 256, &err);
    g_assert_no_error(err);
    q = (hyocr_spec_seq){ .kv = kv, .job = job, .bonus = first, .n_drafts = 15, .pick = { .slot = h.slot } };
    g_assert_false(hyocr_spec_step(E.m, E.d, &q, 1, &err));   /* the context lacks the prompt */
    g_assert_nonnull(strstr(err->message, "the draft's context covers 0 tokens but the KV cache holds 24"));
    g_clear_error(&err);
    g_assert_null(hyocr_spec_job_new(E.d, 16, 256, &err));
    g_assert_nonnull(strstr(err->message, "16 drafts a round is out of range (1 to 15)"));
    hyocr_spec_job_free(E.d, job);
    history_close(&E, &h);
    hyocr_model_seq_free(E.m, kv);
    env_close(&E);
}

/* The stand-in proposes the continuation that agrees with the tokens so far, k right a round on
 * average, then wrong ones. */
static void test_standin(void)
{
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "cont.txt", NULL);
    g_assert_true(g_file_set_contents(path, "5 6 7 8 9 10 11 12\n5 6 1 2 3 4\n", -1, NULL));
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_spec_standin) si = hyocr_spec_standin_load(path, 2.5, &err);
    g_assert_no_error(err);
    int32_t gen[] = { 5, 6, 1 }, d[4];
    hyocr_spec_standin_drafts(si, gen, 3, 0, 100, d, 4);   /* round 0: 2 right */
    g_assert_cmpint(d[0], ==, 2);
    g_assert_cmpint(d[1], ==, 3);
    g_assert_cmpint(d[2], ==, 5);   /* 4 + 1: wrong */
    g_assert_cmpint(d[3], ==, 0);   /* past the line */
    hyocr_spec_standin_drafts(si, gen, 2, 1, 100, d, 4);   /* round 1: 3 right, the first line agrees */
    g_assert_cmpint(d[0], ==, 7);
    g_assert_cmpint(d[2], ==, 9);
    g_assert_cmpint(d[3], ==, 11);
    g_assert_true(g_file_set_contents(path, "5 six\n", -1, NULL));
    g_assert_null(hyocr_spec_standin_load(path, 2, &err));
    g_assert_nonnull(strstr(err->message, "cont.txt:1: draft stand-in: expected token ids"));
    hyocr_test_rmdir(dir);
}

/* ---- through the engine's scheduler ------------------------------------------------------ */

typedef struct {
    const char *image;
    hyocr_task  task;
} e2e_case;

static const e2e_case e2e[] = {
    { "odd_137x91.png", HYOCR_TASK_RECOGNIZE },
    { "tiny_40x30.png", HYOCR_TASK_EXTRACT_FIELDS },
};
static const char *const e2e_fields[] = { "name", "date", NULL };

typedef struct {
    bool        cuda;
    int         spec_tokens;   /* engine param */
    const char *standin;       /* HYOCR_DRAFT_STANDIN, or NULL */
    double      standin_k;
    int         max_batch, kv_blocks;   /* max_batch: speculative_max_batch too */
    int64_t     swap_space;
} engine_opts;

/* NULL after a loud skip when o->cuda and no CUDA device is usable. */
static hyocr_engine *open_engine(const engine_opts *o)
{
    g_autofree char *dir = hyocr_test_data("ckpt-dflash", NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = o->cuda ? HYOCR_DEVICE_CUDA : HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    ep.speculative_tokens = o->spec_tokens;
    if (o->max_batch) ep.max_batch = ep.speculative_max_batch = o->max_batch;
    ep.kv_n_blocks = o->kv_blocks;
    ep.swap_space = o->swap_space;
    ep.draft_standin = o->standin;
    ep.draft_standin_k = o->standin_k;
    g_autoptr(GError) err = NULL;
    hyocr_engine *eng = hyocr_engine_init(&ep, &err);
    if (!eng && o->cuda && g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_BACKEND)) {
        g_test_skip("no usable CUDA device");
        g_test_message("CUDA backend unavailable: %s", err->message);
        return NULL;
    }
    g_assert_no_error(err);
    return eng;
}

typedef struct {
    char *path;
    float penalty, temperature;
    int   c, spec_tokens;
    bool  logits;
} e2e_job;

static void count_logits(const float *logits, int n_vocab, int step, void *data)
{
    (*(int *)data)++;
}

static void fill_job(hyocr_job_params *jp, const e2e_job *j, int *logits_seen)
{
    hyocr_job_params_init(jp);
    jp->image_path = j->path;
    jp->task = e2e[j->c].task;
    jp->fields = e2e_fields;
    jp->max_new_tokens = N_NEW;
    jp->repetition_penalty = j->penalty;
    jp->temperature = j->temperature;
    jp->top_k = 40;
    jp->seed = 3;
    jp->speculative_tokens = j->spec_tokens;
    if (j->logits) {
        jp->on_logits = count_logits;
        jp->logits_data = logits_seen;
    }
}

/* Runs the jobs together; results[n]. */
static void run_jobs(hyocr_engine *eng, const e2e_job *jobs, int n, hyocr_job_result *res)
{
    g_autofree hyocr_job_params *jp = g_new(hyocr_job_params, n);
    g_autofree int *seen = g_new0(int, n);
    for (int i = 0; i < n; i++) fill_job(&jp[i], &jobs[i], &seen[i]);
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_run_batch(eng, jp, n, res, &err));
    g_assert_no_error(err);
    for (int i = 0; i < n; i++) {
        g_assert_no_error(res[i].error);
        if (jobs[i].logits) g_assert_cmpint(seen[i], ==, (int)res[i].token_ids->len);
    }
}

static void assert_same(const hyocr_job_result *a, const hyocr_job_result *b)
{
    g_assert_cmpuint(a->token_ids->len, ==, b->token_ids->len);
    g_assert_cmpmem(a->token_ids->data, a->token_ids->len * sizeof(int32_t), b->token_ids->data,
                    b->token_ids->len * sizeof(int32_t));
    g_assert_cmpstr(a->text, ==, b->text);
    g_assert_cmpint(a->stop_reason, ==, b->stop_reason);
}

/* ---- near-ties: where FP16 may choose the other token -------------------------------------
 * On CUDA a verify block's logits differ from a one-row step's in their last bits, as plain
 * decoding's differ from the CPU's: where the two best penalised logits are closer than that
 * noise, the choice may go either way. The CPU's fp32 logits say where: the tiny fixtures have
 * such steps (tiny_40x30 extract_fields at penalty 1.08: 0.0010 apart at step 6, against logits
 * of ±5.6 and FP16's ~1e-2). On CUDA the tokens must be the same up to the first of them. */
#define NEAR_TIE 0.005

typedef struct {
    GArray *prompt;   /* int32_t */
    GArray *logits;   /* float, a row a step */
} logits_run;

static void keep_prompt(const hyocr_event *ev, void *data)
{
    logits_run *r = data;
    if (ev->type == HYOCR_EVENT_PREPROCESS) g_array_append_vals(r->prompt, ev->prompt->ids, (guint)ev->prompt->n);
}

static void keep_logits(const float *logits, int n_vocab, int step, void *data)
{
    g_array_append_vals(((logits_run *)data)->logits, logits, (guint)n_vocab);
}

/* The first step (after the prefill's, which a plain and a speculative run share) whose
 * penalised top-2 margin on the CPU is below NEAR_TIE; the job's length when none is. */
static int first_near_tie(const e2e_job *j)
{
    engine_opts o = { .spec_tokens = 0 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    logits_run r = { g_array_new(FALSE, FALSE, sizeof(int32_t)), g_array_new(FALSE, FALSE, sizeof(float)) };
    hyocr_job_params jp;
    fill_job(&jp, j, NULL);
    jp.on_event = keep_prompt;
    jp.user_data = &r;
    jp.on_logits = keep_logits;
    jp.logits_data = &r;
    hyocr_job_result res = { 0 };
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_engine_run(eng, &jp, &res, &err));
    const int V = hyocr_engine_config(eng)->text.vocab_size, n = (int)res.token_ids->len;
    g_autofree uint8_t *seen = g_new0(uint8_t, V);
    for (guint i = 0; i < r.prompt->len; i++) seen[g_array_index(r.prompt, int32_t, i)] = 1;
    int at = n;
    for (int step = 0; step < n && at == n; step++) {
        const float *x = &g_array_index(r.logits, float, (size_t)step * V);
        double best = -INFINITY, second = -INFINITY;
        for (int v = 0; v < V; v++) {
            double y = x[v];
            if (seen[v]) y = y > 0 ? y / j->penalty : y * j->penalty;
            if (y > best) {
                second = best;
                best = y;
            } else if (y > second) {
                second = y;
            }
        }
        if (step > 0 && best - second < NEAR_TIE) at = step;
        seen[g_array_index(res.token_ids, int32_t, step)] = 1;
    }
    g_array_free(r.prompt, TRUE);
    g_array_free(r.logits, TRUE);
    hyocr_job_result_clear(&res);
    return at;
}

/* a == b; on CUDA (upto ≥ 0) up to the first near-tie, upto, and the same length. */
static void assert_same_upto(const hyocr_job_result *a, const hyocr_job_result *b, int upto)
{
    if (upto < 0) {
        assert_same(a, b);
        return;
    }
    g_assert_cmpuint(a->token_ids->len, ==, b->token_ids->len);
    int n = MIN(upto, (int)a->token_ids->len), diff = -1;
    for (int i = 0; i < (int)a->token_ids->len && diff < 0; i++)
        if (g_array_index(a->token_ids, int32_t, i) != g_array_index(b->token_ids, int32_t, i)) diff = i;
    if (diff >= 0) g_test_message("differs from token %d on, after the near-tie at %d", diff, upto);
    g_assert_true(diff < 0 || diff >= n);
}

/* The near-ties of the jobs on CUDA; -1 each on the CPU (exact). */
static void near_ties(bool cuda, const e2e_job *jobs, int n, int *upto)
{
    for (int i = 0; i < n; i++) {
        upto[i] = cuda ? first_near_tie(&jobs[i]) : -1;
        if (cuda) g_test_message("case %d, penalty %.2f: the first near-tie at step %d", jobs[i].c, jobs[i].penalty,
                                 upto[i]);
    }
}

/* Each job alone, without speculation: the tokens every other run must give. False after a
 * skip (no CUDA). */
static bool plain_results(bool cuda, const e2e_job *jobs, int n, hyocr_job_result *res)
{
    engine_opts o = { .cuda = cuda, .spec_tokens = 0 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    if (!eng) return false;
    for (int i = 0; i < n; i++) {
        run_jobs(eng, &jobs[i], 1, &res[i]);
        g_assert_cmpint(res[i].speculative_rounds, ==, 0);
    }
    return true;
}

/* The continuations, one a line, for the stand-in. */
static char *write_continuations(const char *dir, const hyocr_job_result *res, int n)
{
    GString *t = g_string_new(NULL);
    for (int i = 0; i < n; i++) {
        for (guint k = 0; k < res[i].token_ids->len; k++)
            g_string_append_printf(t, "%s%d", k ? " " : "", g_array_index(res[i].token_ids, int32_t, k));
        g_string_append_c(t, '\n');
    }
    char *path = g_build_filename(dir, "continuations.txt", NULL);
    g_assert_true(g_file_set_contents(path, t->str, -1, NULL));
    g_string_free(t, TRUE);
    return path;
}

static void clear_results(hyocr_job_result *res, int n)
{
    for (int i = 0; i < n; i++) hyocr_job_result_clear(&res[i]);
}

#define N_E2E 4   /* both cases at penalty 1.0 and 1.08 */

static void e2e_jobs(e2e_job *jobs, float temperature)
{
    for (int i = 0; i < N_E2E; i++)
        jobs[i] = (e2e_job){ hyocr_test_data("images", e2e[i % 2].image, NULL), i < 2 ? 1.0f : 1.08f, temperature,
                             i % 2, -1, false };
}

static void e2e_jobs_clear(e2e_job *jobs)
{
    for (int i = 0; i < N_E2E; i++) g_free(jobs[i].path);
}

/* Every tiny case with a draft, at penalty 1.0 and 1.08, alone: the stand-in right for 3
 * drafts a round (its first window's rounds commit 4 tokens each), and the real draft (which
 * proposes nothing right on these pages, so the job falls back): the plain tokens. */
static void test_engine_lossless(gconstpointer cuda)
{
    e2e_job jobs[N_E2E];
    e2e_jobs(jobs, 0);
    hyocr_job_result plain[N_E2E] = { 0 }, got[N_E2E] = { 0 };
    if (!plain_results(GPOINTER_TO_INT(cuda), jobs, N_E2E, plain)) {
        e2e_jobs_clear(jobs);
        return;
    }
    int upto[N_E2E];
    near_ties(GPOINTER_TO_INT(cuda), jobs, N_E2E, upto);
    g_autofree char *dir = hyocr_test_tmpdir();
    for (int i = 0; i < N_E2E; i++) {
        /* an engine each, its stand-in knowing the job's continuation alone (the cases share
         * first tokens across penalties), its first window judged before rounds were measured */
        g_autofree char *cont = write_continuations(dir, &plain[i], 1);
        engine_opts with_standin = { .cuda = GPOINTER_TO_INT(cuda), .spec_tokens = -1, .standin = cont,
                                     .standin_k = 3 };
        g_autoptr(hyocr_engine) eng = open_engine(&with_standin);
        run_jobs(eng, &jobs[i], 1, &got[i]);
        assert_same_upto(&got[i], &plain[i], upto[i]);
        g_assert_cmpint(got[i].speculative_rounds, >=, upto[i] < 0 ? HYOCR_SPEC_WINDOW : 1);
        if (upto[i] < 0) g_assert_cmpint(got[i].speculative_tokens, >=, HYOCR_SPEC_WINDOW * 4);
        g_test_message("case %d, penalty %.2f, stand-in k 3: %d tokens, %d rounds committed %d", jobs[i].c,
                       jobs[i].penalty, (int)got[i].token_ids->len, got[i].speculative_rounds,
                       got[i].speculative_tokens);
    }
    clear_results(got, N_E2E);
    engine_opts real = { .cuda = GPOINTER_TO_INT(cuda), .spec_tokens = -1 };
    g_autoptr(hyocr_engine) eng2 = open_engine(&real);
    for (int i = 0; i < N_E2E; i++) {
        run_jobs(eng2, &jobs[i], 1, &got[i]);
        assert_same_upto(&got[i], &plain[i], upto[i]);
        g_assert_cmpint(got[i].speculative_rounds, >=, HYOCR_SPEC_WINDOW);
        g_test_message("case %d, penalty %.2f, real draft: %d rounds committed %d, %d fallbacks", jobs[i].c,
                       jobs[i].penalty, got[i].speculative_rounds, got[i].speculative_tokens,
                       got[i].speculative_fallbacks);
    }
    clear_results(got, N_E2E);
    clear_results(plain, N_E2E);
    hyocr_test_rmdir(dir);
    e2e_jobs_clear(jobs);
}

/* A draft that is always wrong: after the engine's first plain steps (what a step costs), the
 * job's first window (2 rounds of one token) fails and it decodes plainly for the 128 steps
 * after: 2 rounds, 1 fallback over 64 tokens, and the plain tokens. */
static void test_engine_fallback(void)
{
    e2e_job jobs[N_E2E];
    e2e_jobs(jobs, 0);
    hyocr_job_result plain[1] = { 0 }, got[1] = { 0 };
    plain_results(false, jobs, 1, plain);
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *cont = write_continuations(dir, plain, 1);
    engine_opts o = { .spec_tokens = -1, .standin = cont, .standin_k = 0 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    run_jobs(eng, jobs, 1, got);
    assert_same(got, plain);
    g_assert_cmpint((int)got->token_ids->len, ==, N_NEW);
    g_assert_cmpint(got->speculative_rounds, ==, HYOCR_SPEC_WINDOW);
    g_assert_cmpint(got->speculative_tokens, ==, HYOCR_SPEC_WINDOW);
    g_assert_cmpint(got->speculative_fallbacks, ==, 1);
    clear_results(got, 1);
    clear_results(plain, 1);
    hyocr_test_rmdir(dir);
    e2e_jobs_clear(jobs);
}

/* Several jobs decoding together, each verifying its own block, next to a job that does not
 * speculate and, in a second run, one that wants the logits (the host chooses every token then,
 * and the others keep their draft's context on the side): the plain tokens, greedy and sampled. */
static void batch_case(bool cuda, float temperature)
{
    e2e_job jobs[N_E2E + 2];
    e2e_jobs(jobs, temperature);
    jobs[N_E2E] = jobs[0];
    jobs[N_E2E].path = g_strdup(jobs[0].path);
    jobs[N_E2E].spec_tokens = 0;
    jobs[N_E2E + 1] = jobs[3];
    jobs[N_E2E + 1].path = g_strdup(jobs[3].path);
    jobs[N_E2E + 1].logits = true;
    hyocr_job_result plain[N_E2E + 2] = { 0 }, got[N_E2E + 2] = { 0 };
    if (!plain_results(cuda, jobs, N_E2E, plain)) {
        for (int i = 0; i < N_E2E + 2; i++) g_free(jobs[i].path);
        return;
    }
    int upto[N_E2E];
    near_ties(cuda, jobs, N_E2E, upto);
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *cont = write_continuations(dir, plain, N_E2E);
    engine_opts o = { .cuda = cuda, .spec_tokens = -1, .standin = cont, .standin_k = 6.4, .max_batch = 8 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    for (int pass = 0; pass < 2; pass++) {
        int n = N_E2E + 1 + pass;
        run_jobs(eng, jobs, n, got);
        for (int i = 0; i < n; i++) {
            int k = i < N_E2E ? i : i == N_E2E ? 0 : 3;
            assert_same_upto(&got[i], &plain[k], upto[k]);
        }
        for (int i = 0; i < N_E2E && pass == 0; i++)
            if (upto[i] < 0 || upto[i] > 8) g_assert_cmpint(got[i].speculative_rounds, >, 0);
        g_assert_cmpint(got[N_E2E].speculative_rounds, ==, 0);
        if (pass) g_assert_cmpint(got[N_E2E + 1].speculative_rounds, ==, 0);
        hyocr_engine_stats st;
        hyocr_engine_get_stats(eng, &st);
        g_assert_cmpint(st.largest_batch, >=, 2);
        clear_results(got, n);
    }
    clear_results(plain, N_E2E);
    hyocr_test_rmdir(dir);
    for (int i = 0; i < N_E2E + 2; i++) g_free(jobs[i].path);
}

static void test_engine_batch(gconstpointer cuda)
{
    batch_case(GPOINTER_TO_INT(cuda), 0);
}

static void test_engine_batch_sampled(gconstpointer cuda)
{
    batch_case(GPOINTER_TO_INT(cuda), 0.8f);
}

/* A KV pool too small for every job: preempted jobs (swapped out, or recomputed) resume their
 * rounds with their draft's context as it was, and give the plain tokens. */
static void test_engine_preempt(gconstpointer swap)
{
    e2e_job jobs[N_E2E];
    e2e_jobs(jobs, 0);
    hyocr_job_result plain[N_E2E] = { 0 }, got[N_E2E] = { 0 };
    plain_results(false, jobs, N_E2E, plain);
    g_autofree char *dir = hyocr_test_tmpdir();
    g_autofree char *cont = write_continuations(dir, plain, N_E2E);
    engine_opts o = { .spec_tokens = -1, .standin = cont, .standin_k = 3, .max_batch = 4, .kv_blocks = 16,
                      .swap_space = GPOINTER_TO_INT(swap) ? (int64_t)64 << 20 : 0 };
    g_autoptr(hyocr_engine) eng = open_engine(&o);
    run_jobs(eng, jobs, N_E2E, got);
    int preempted = 0;
    for (int i = 0; i < N_E2E; i++) {
        assert_same(&got[i], &plain[i]);
        preempted += got[i].n_preempted;
    }
    g_assert_cmpint(preempted, >, 0);
    clear_results(got, N_E2E);
    clear_results(plain, N_E2E);
    hyocr_test_rmdir(dir);
    e2e_jobs_clear(jobs);
}

/* The near-ties the CUDA comparisons stop at, as the CPU measures them: tiny_40x30 at penalty
 * 1.08 has one at step 6; odd_137x91 at 1.08 has none in 64 tokens. */
static void test_engine_near_ties(void)
{
    e2e_job jobs[N_E2E];
    e2e_jobs(jobs, 0);
    g_assert_cmpint(first_near_tie(&jobs[3]), ==, 6);
    g_assert_cmpint(first_near_tie(&jobs[2]), ==, N_NEW);
    e2e_jobs_clear(jobs);
}

/* Off by the engine's setting or the job's; a model without a draft runs plainly. */
static void test_engine_off(void)
{
    e2e_job jobs[N_E2E];
    e2e_jobs(jobs, 0);
    hyocr_job_result got[1] = { 0 };
    jobs[0].spec_tokens = 0;
    engine_opts on = { .spec_tokens = -1 };
    g_autoptr(hyocr_engine) eng = open_engine(&on);
    run_jobs(eng, jobs, 1, got);
    g_assert_cmpint(got->speculative_rounds, ==, 0);
    clear_results(got, 1);
    jobs[0].spec_tokens = 2;   /* its own number of drafts: rounds of 3 rows */
    run_jobs(eng, jobs, 1, got);
    g_assert_cmpint(got->speculative_rounds, >, 0);
    clear_results(got, 1);
    g_autofree char *flat = hyocr_test_data("ckpt-flat", NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = flat;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) noflash = hyocr_engine_init(&ep, &err);
    g_assert_no_error(err);
    jobs[0].spec_tokens = -1;
    run_jobs(noflash, jobs, 1, got);
    g_assert_cmpint(got->speculative_rounds, ==, 0);
    clear_results(got, 1);
    e2e_jobs_clear(jobs);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    static const char *const names[2] = { "cpu", "cuda" };
    static lossless_case cases[2][3];
    for (int c = 0; c < 2; c++) {
        g_autofree char *p1 = g_strdup_printf("/speculate/%s/prefill-taps", names[c]);
        g_test_add_data_func(p1, GINT_TO_POINTER(c), test_prefill_taps);
        const float pens[] = { 1.0f, 1.08f, 1.08f }, temps[] = { 0, 0, 0.8f };
        /* On CUDA a verify block's logits differ from a one-row step's in their last bits (its
         * products run with more rows), which a greedy choice survives away from near-ties but a
         * draw does not when it lands at a boundary of the cumulative weights: there sampling is
         * lossless in distribution, not token for token. The sampled cases run on the CPU, exact. */
        for (int i = 0; i < (c ? 2 : 3); i++) {
            cases[c][i] = (lossless_case){ c, pens[i], temps[i] };
            g_autofree char *p = g_strdup_printf("/speculate/%s/lossless/penalty-%.2f%s", names[c], pens[i],
                                                 temps[i] > 0 ? "-sampled" : "");
            g_test_add_data_func(p, &cases[c][i], test_lossless);
        }
        g_autofree char *p2 = g_strdup_printf("/speculate/%s/mixed-step", names[c]);
        g_test_add_data_func(p2, GINT_TO_POINTER(c), test_mixed_step);
        g_autofree char *p3 = g_strdup_printf("/speculate/%s/draft-rounds-match-reference", names[c]);
        g_test_add_data_func(p3, GINT_TO_POINTER(c), test_draft_rounds_match_reference);
    }
    g_test_add_func("/speculate/cpu/plain-matches-reference", test_plain_matches_reference);
    g_test_add_func("/speculate/cpu/pending-rows", test_pending_rows);
    g_test_add_func("/speculate/cpu/step-misuse", test_step_misuse);
    g_test_add_func("/speculate/standin", test_standin);
    for (int c = 0; c < 2; c++) {
        g_autofree char *e1 = g_strdup_printf("/speculate/engine/%s/lossless", names[c]);
        g_autofree char *e2 = g_strdup_printf("/speculate/engine/%s/batch", names[c]);
        g_autofree char *e3 = g_strdup_printf("/speculate/engine/%s/batch-sampled", names[c]);
        g_test_add_data_func(e1, GINT_TO_POINTER(c), test_engine_lossless);
        g_test_add_data_func(e2, GINT_TO_POINTER(c), test_engine_batch);
        if (!c) g_test_add_data_func(e3, GINT_TO_POINTER(c), test_engine_batch_sampled);
    }
    g_test_add_func("/speculate/engine/fallback", test_engine_fallback);
    g_test_add_func("/speculate/engine/near-ties", test_engine_near_ties);
    g_test_add_data_func("/speculate/engine/preempt-recompute", GINT_TO_POINTER(0), test_engine_preempt);
    g_test_add_data_func("/speculate/engine/preempt-swap", GINT_TO_POINTER(1), test_engine_preempt);
    g_test_add_func("/speculate/engine/off", test_engine_off);
    return g_test_run();
}
