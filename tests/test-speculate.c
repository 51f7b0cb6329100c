/* Speculative decoding on the target (issue 20), CPU fp32, on ckpt-dflash and its tiny draft:
 * the target keeps the tapped layers' outputs as the reference (taps.f32), a verify round over
 * the bonus and the drafts commits exactly the tokens plain greedy decoding gives (penalty 1.0
 * and 1.08, drafts right for their first k positions and wrong after), and with the real draft
 * every round proposes what the authors' dflash_generate proposed (blocks.txt). */
#include "dflash.h"
#include "resize.h"
#include "prompt.h"
#include "speculate.h"
#include "testutil.h"
#include "tokenizer.h"

#include <math.h>
#include <string.h>

#define CASE  "odd_137x91.png__recognize"
#define N_NEW 64

typedef struct {
    hyocr_checkpoint *ck;
    hyocr_backend    *be;
    hyocr_model      *m;
    hyocr_dflash     *d;
    hyocr_prompt     *p;
    hyocr_buf        *embeds;
    int               n_embeds;
} env;

static env E;

static void env_setup(void)
{
    g_autofree char *dir = hyocr_test_data("ckpt-dflash", NULL);
    g_autoptr(GError) err = NULL;
    E.ck = hyocr_checkpoint_open(dir, &err);
    g_assert_no_error(err);
    hyocr_backend_params bp = { .n_threads = 2 };
    E.be = hyocr_backend_cpu_init(&bp, &err);
    g_assert_no_error(err);
    E.m = hyocr_model_load(E.be, E.ck, &err);
    g_assert_no_error(err);
    g_assert_true(hyocr_model_kv_init(E.m, 16, 0, 256, 0, &err));
    E.d = hyocr_dflash_load(E.be, hyocr_checkpoint_draft(E.ck), E.m, &err);
    g_assert_no_error(err);

    const hyocr_config *cfg = hyocr_checkpoint_config(E.ck);
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
    E.p = hyocr_prompt_build(tok, cfg, text, px->grid_h, px->grid_w, &err);
    g_assert_no_error(err);
    /* the prompt is the reference's */
    g_autofree char *ids_path = hyocr_test_data("dflash", "e2e", CASE, "input_ids.txt", NULL);
    g_autoptr(GArray) want = hyocr_test_read_ints(ids_path);
    g_assert_cmpint(E.p->n, ==, (int)want->len);
    for (int i = 0; i < E.p->n; i++) g_assert_cmpint(E.p->ids[i], ==, g_array_index(want, int64_t, i));
    E.embeds = hyocr_vision_forward(E.m, px, &E.n_embeds, NULL, NULL, NULL, &err);
    g_assert_no_error(err);
}

static void env_teardown(void)
{
    E.be->ops->buf_free(E.be, E.embeds);
    hyocr_prompt_free(E.p);
    hyocr_dflash_free(E.d);
    hyocr_model_free(E.m);
    hyocr_backend_free(E.be);
    hyocr_checkpoint_free(E.ck);
}

static GArray *fixture_ints(const char *name)
{
    g_autofree char *path = hyocr_test_data("dflash", "e2e", CASE, name, NULL);
    return hyocr_test_read_ints(path);
}

static hyocr_sampler *greedy_sampler(float penalty)
{
    hyocr_sampler_params sp = { .repetition_penalty = penalty };
    hyocr_sampler *s = hyocr_sampler_init(&sp, E.m->cfg.text.vocab_size);
    hyocr_sampler_accept(s, E.p->ids, E.p->n);
    return s;
}

/* The prompt through the target; taps (may be NULL) get the tapped layers' outputs. Returns the
 * first token, chosen (and added to the set) by s. */
static int32_t prefill(hyocr_kv_seq *kv, hyocr_buf *taps, hyocr_sampler *s)
{
    g_autofree float *logits = g_new(float, E.m->cfg.text.vocab_size);
    hyocr_text_seq q = { .ids = E.p->ids, .pos = E.p->pos, .n_new = E.p->n, .kv = kv, .image_embeds = E.embeds,
                         .n_image_rows = E.n_embeds, .image_token_id = E.m->cfg.image_token_id, .taps = taps };
    g_autoptr(GError) err = NULL;
    g_assert_true(hyocr_text_forward(E.m, &q, 1, logits, NULL, NULL, &err));
    g_assert_no_error(err);
    int32_t tok = hyocr_sampler_sample(s, logits);
    hyocr_sampler_accept(s, &tok, 1);
    return tok;
}

/* Plain greedy decoding: one token per forward. */
static void plain_tokens(float penalty, int n, int32_t *out)
{
    g_autoptr(hyocr_sampler) s = greedy_sampler(penalty);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    out[0] = prefill(kv, NULL, s);
    g_autofree float *logits = g_new(float, E.m->cfg.text.vocab_size);
    g_autoptr(GError) err = NULL;
    for (int i = 1; i < n; i++) {
        hyocr_text_seq q = { .ids = &out[i - 1], .n_new = 1, .kv = kv };
        g_assert_true(hyocr_text_forward(E.m, &q, 1, logits, NULL, NULL, &err));
        out[i] = hyocr_sampler_sample(s, logits);
        hyocr_sampler_accept(s, &out[i], 1);
    }
    hyocr_model_seq_free(E.m, kv);
}

static void test_prefill_taps(void)
{
    const int W = 4 * 64;
    g_autoptr(GError) err = NULL;
    hyocr_buf *taps = E.be->ops->alloc(E.be, HYOCR_BUF_ACT, (size_t)E.p->n * W, &err);
    g_assert_no_error(err);
    g_autoptr(hyocr_sampler) s = greedy_sampler(1.0f);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    int32_t first = prefill(kv, taps, s);
    g_autoptr(GArray) greedy = fixture_ints("greedy.txt");
    g_assert_cmpint(first, ==, g_array_index(greedy, int64_t, 0));
    g_autofree float *got = g_new(float, (size_t)E.p->n * W);
    g_assert_true(E.be->ops->download_f32(E.be, taps, 0, got, (size_t)E.p->n * W, &err));
    g_autofree char *path = hyocr_test_data("dflash", "e2e", CASE, "taps.f32", NULL);
    size_t n = 0;
    g_autofree float *want = hyocr_test_read_f32(path, &n);
    g_assert_cmpuint(n, ==, (size_t)E.p->n * W);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)got[i] - want[i]));
        den = fmax(den, fabs((double)want[i]));
    }
    g_test_message("prefill taps (layers 1, 3, 5, 6) vs reference: max rel %.3g", num / den);
    g_assert_cmpfloat(num / den, <=, 1e-4);
    E.be->ops->buf_free(E.be, taps);
    hyocr_model_seq_free(E.m, kv);
}

/* The plain C loop equals the reference's greedy (the premise of the comparisons below). */
static void test_plain_matches_reference(void)
{
    int32_t got[N_NEW];
    plain_tokens(1.0f, N_NEW, got);
    g_autoptr(GArray) want = fixture_ints("greedy.txt");
    g_assert_cmpint(want->len, ==, N_NEW);
    for (int i = 0; i < N_NEW; i++) g_assert_cmpint(got[i], ==, g_array_index(want, int64_t, i));
}

/* Rounds whose drafts are the plain continuation for their first k positions and a wrong token
 * after: every round commits k + 1 tokens, and the tokens are the plain ones. */
static void spec_with_k(float penalty, int k, const int32_t *plain, int n)
{
    const int B = 16, V = E.m->cfg.text.vocab_size;
    g_autoptr(hyocr_sampler) s = greedy_sampler(penalty);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    g_autofree int32_t *got = g_new(int32_t, n + B);
    int have = 0, rounds = 0;
    got[have++] = prefill(kv, NULL, s);
    g_autoptr(GError) err = NULL;
    while (have < n) {
        int32_t drafts[15], out[16];
        for (int i = 0; i < B - 1; i++) {
            int at = have + i;   /* the position draft i stands for */
            drafts[i] = i < k && at < n ? plain[at] : (at < n ? (plain[at] + 1) % V : 0);
        }
        int n_out = 0, before = kv->n_tokens;
        g_assert_true(hyocr_spec_verify(E.m, kv, s, got[have - 1], drafts, B - 1, NULL, out, &n_out, &err));
        g_assert_no_error(err);
        if (have + k < n) g_assert_cmpint(n_out, ==, k + 1);
        g_assert_cmpint(kv->n_tokens, ==, before + n_out);
        memcpy(got + have, out, sizeof(int32_t) * (size_t)n_out);
        have += n_out;
        rounds++;
    }
    for (int i = 0; i < n; i++)
        if (got[i] != plain[i]) g_error("penalty %g, k %d: token %d is %d, plain decoding gives %d", penalty, k, i, got[i], plain[i]);
    g_test_message("penalty %.2f, %d right drafts a round: %d tokens in %d rounds, same as plain", penalty, k, n, rounds);
    hyocr_model_seq_free(E.m, kv);
}

static void test_lossless_penalty(gconstpointer data)
{
    float penalty = *(const float *)data;
    int32_t plain[N_NEW];
    plain_tokens(penalty, N_NEW, plain);
    if (penalty != 1.0f) {   /* the penalty changes the text here, so a round that misapplied it would show */
        int32_t off[N_NEW];
        plain_tokens(1.0f, N_NEW, off);
        g_assert_true(memcmp(off, plain, sizeof plain) != 0);
    }
    static const int ks[] = { 0, 1, 3, 6, 15 };
    for (size_t i = 0; i < G_N_ELEMENTS(ks); i++) spec_with_k(penalty, ks[i], plain, N_NEW);
}

/* The real draft: each round's block is the reference's, and the tokens are greedy's. */
static void test_draft_rounds_match_reference(void)
{
    const int W = 4 * 64;
    g_autoptr(hyocr_sampler) s = greedy_sampler(1.0f);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    g_autoptr(GError) err = NULL;
    hyocr_buf *taps = E.be->ops->alloc(E.be, HYOCR_BUF_ACT, (size_t)E.p->n * W, &err);
    int32_t got[N_NEW + 16];
    int have = 0, round = 0;
    got[have++] = prefill(kv, taps, s);
    hyocr_dflash_ctx *ctx = hyocr_dflash_ctx_new(E.d);
    g_assert_true(hyocr_dflash_ctx_append(E.d, ctx, taps, E.p->n, &err));
    g_assert_no_error(err);
    E.be->ops->buf_free(E.be, taps);
    g_autoptr(GArray) blocks = fixture_ints("blocks.txt");
    g_autoptr(GArray) greedy = fixture_ints("greedy.txt");
    while (have < N_NEW) {
        /* the proposal this round, as the reference's (bonus + 15 drafts per line) */
        int32_t drafts[15];
        g_assert_true(hyocr_dflash_propose(E.d, ctx, got[have - 1], drafts, NULL, &err));
        g_assert_cmpuint((guint)(round + 1) * 16, <=, blocks->len);
        g_assert_cmpint(got[have - 1], ==, g_array_index(blocks, int64_t, round * 16));
        for (int i = 0; i < 15; i++) g_assert_cmpint(drafts[i], ==, g_array_index(blocks, int64_t, round * 16 + 1 + i));
        int32_t out[16];
        int n_out = 0;
        g_assert_true(hyocr_spec_round(E.m, E.d, ctx, kv, s, got[have - 1], out, &n_out, &err));
        g_assert_no_error(err);
        g_assert_cmpint(ctx->n, ==, kv->n_tokens);
        memcpy(got + have, out, sizeof(int32_t) * (size_t)n_out);
        have += n_out;
        round++;
    }
    for (int i = 0; i < N_NEW; i++) g_assert_cmpint(got[i], ==, g_array_index(greedy, int64_t, i));
    g_test_message("real draft: %d tokens in %d rounds, every proposal the reference's", N_NEW, round);
    hyocr_dflash_ctx_free(E.d, ctx);
    hyocr_model_seq_free(E.m, kv);
}

static void test_verify_misuse(void)
{
    g_autoptr(hyocr_sampler) s = greedy_sampler(1.0f);
    hyocr_kv_seq *kv = hyocr_model_seq_new(E.m);
    int32_t first = prefill(kv, NULL, s);
    int32_t drafts[64] = { 0 }, out[65];
    int n_out = 0, before = kv->n_tokens;
    g_autoptr(GError) err = NULL;
    g_assert_false(hyocr_spec_verify(E.m, kv, s, first, drafts, 64, NULL, out, &n_out, &err));
    g_assert_nonnull(strstr(err->message, "64 drafts (at most 63)"));
    g_clear_error(&err);
    drafts[0] = 99999;   /* not a token: nothing runs, nothing changes */
    g_assert_false(hyocr_spec_verify(E.m, kv, s, first, drafts, 3, NULL, out, &n_out, &err));
    g_assert_nonnull(strstr(err->message, "outside the vocabulary"));
    g_assert_cmpint(kv->n_tokens, ==, before);
    hyocr_model_seq_free(E.m, kv);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    env_setup();
    static const float p1 = 1.0f, p108 = 1.08f;
    g_test_add_func("/speculate/prefill-taps", test_prefill_taps);
    g_test_add_func("/speculate/plain-matches-reference", test_plain_matches_reference);
    g_test_add_data_func("/speculate/lossless/penalty-1.0", &p1, test_lossless_penalty);
    g_test_add_data_func("/speculate/lossless/penalty-1.08", &p108, test_lossless_penalty);
    g_test_add_func("/speculate/draft-rounds-match-reference", test_draft_rounds_match_reference);
    g_test_add_func("/speculate/verify-misuse", test_verify_misuse);
    int rc = g_test_run();
    env_teardown();
    return rc;
}
