/* hyocr — speculative decoding rounds (speculate.h). */
#include "speculate.h"
#include "error.h"
#include "i18n.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fallback ------------------------------------------------------------------ */

void hyocr_spec_policy_init(hyocr_spec_policy *p)
{
    *p = (hyocr_spec_policy){ .on = true, .left = HYOCR_SPEC_WINDOW, .backoff = HYOCR_SPEC_BACKOFF };
}

bool hyocr_spec_policy_speculate(hyocr_spec_policy *p)
{
    if (p->on) return true;
    if (--p->left > 0) return false;
    *p = (hyocr_spec_policy){ .on = true, .left = HYOCR_SPEC_WINDOW, .backoff = p->backoff,
                              .fallbacks = p->fallbacks };
    return false;   /* this step was the last plain one */
}

void hyocr_spec_policy_round(hyocr_spec_policy *p, int committed, double threshold)
{
    p->window_rounds++;
    p->window_tokens += committed;
    if (--p->left > 0) return;
    bool pays = p->window_tokens >= threshold * p->window_rounds;
    p->window_rounds = p->window_tokens = 0;
    p->left = HYOCR_SPEC_WINDOW;
    if (pays) {
        p->backoff = HYOCR_SPEC_BACKOFF;
        return;
    }
    p->on = false;
    p->left = p->backoff;
    p->backoff = MIN(2 * p->backoff, HYOCR_SPEC_BACKOFF_MAX);
    p->fallbacks++;
}

static int cost_bucket(int batch)
{
    int b = 0;
    while (b < HYOCR_SPEC_COST_BUCKETS - 1 && batch > (1 << b)) b++;
    return b;   /* 1, 2, 3-4, 5-8, 9-16, 17+ */
}

void hyocr_spec_costs_note(hyocr_spec_costs *c, int batch, bool round, double ms)
{
    int b = cost_bucket(batch), k = round ? 1 : 0;
    c->ms[k][b][c->n[k][b] % HYOCR_SPEC_COST_SAMPLES] = ms;
    c->n[k][b]++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of what was noted (graph captures are outliers it ignores); 0 with fewer than 3. */
static double cost_median(const hyocr_spec_costs *c, int k, int b)
{
    int n = MIN(c->n[k][b], HYOCR_SPEC_COST_SAMPLES);
    if (n < 3) return 0;
    double v[HYOCR_SPEC_COST_SAMPLES];
    memcpy(v, c->ms[k][b], sizeof(double) * (size_t)n);
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

bool hyocr_spec_costs_plain_known(const hyocr_spec_costs *c, int batch)
{
    return c->n[0][cost_bucket(batch)] >= HYOCR_SPEC_COST_PLAIN;
}

double hyocr_spec_costs_threshold(const hyocr_spec_costs *c, int batch)
{
    int b = cost_bucket(batch);
    double plain = cost_median(c, 0, b), round = cost_median(c, 1, b);
    /* a round does a plain step's work and more: one token a round never pays, however the clock read */
    return MAX(plain > 0 && round > 0 ? round / plain : 2.0, HYOCR_SPEC_MIN_THRESHOLD);
}

/* ---- a job's draft state ------------------------------------------------------------- */

static size_t tap_width(const hyocr_dflash *d)
{
    return (size_t)d->cfg.n_target_layers * d->cfg.hidden_size;
}

void hyocr_spec_job_free(hyocr_dflash *d, hyocr_spec_job *j)
{
    if (!j) return;
    hyocr_dflash_ctx_free(d, j->ctx);
    if (j->taps) d->be->ops->buf_free(d->be, j->taps);
    if (j->pending) d->be->ops->buf_free(d->be, j->pending);
    g_free(j);
}

hyocr_spec_job *hyocr_spec_job_new(hyocr_dflash *d, int k, int max_tokens, GError **error)
{
    const int B = d->cfg.block_size;
    if (k < 1 || k > B - 1) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("speculative decoding: %d drafts a round is out of range (1 to %d)"),
                    k, B - 1);
        return NULL;
    }
    hyocr_spec_job *j = g_new0(hyocr_spec_job, 1);
    j->k = k;
    hyocr_spec_policy_init(&j->policy);
    hyocr_backend *be = d->be;
    j->ctx = hyocr_dflash_ctx_new(d, error);
    bool ok = j->ctx && hyocr_dflash_ctx_reserve(d, j->ctx, max_tokens, error) &&
              (j->taps = be->ops->alloc(be, HYOCR_BUF_ACT, (size_t)B * tap_width(d), error)) &&
              (j->pending = be->ops->alloc(be, HYOCR_BUF_ACT, (size_t)HYOCR_SPEC_PENDING * tap_width(d), error));
    if (ok) return j;
    hyocr_spec_job_free(d, j);
    return NULL;
}

bool hyocr_spec_job_prefill(hyocr_dflash *d, hyocr_spec_job *j, const hyocr_buf *taps, int n, GError **error)
{
    return hyocr_dflash_ctx_append(d, j->ctx, taps, n, error);
}

static bool flush_pending(hyocr_dflash *d, hyocr_spec_job *j, GError **error)
{
    if (!j->n_pending) return true;
    if (!hyocr_dflash_ctx_append(d, j->ctx, j->pending, j->n_pending, error)) return false;
    j->n_pending = 0;
    return true;
}

bool hyocr_spec_job_keep_row(hyocr_dflash *d, hyocr_spec_job *j, GError **error)
{
    const size_t W = tap_width(d);
    if (!d->be->ops->copy(d->be, j->pending, (size_t)j->n_pending * W, j->taps, 0, W, error)) return false;
    j->n_pending++;
    return j->n_pending < HYOCR_SPEC_PENDING || flush_pending(d, j, error);
}

/* ---- a step ------------------------------------------------------------------------------- */

typedef struct {
    hyocr_model    *m;
    hyocr_dflash   *d;
    hyocr_spec_seq *seqs;
    const int      *row0;
    int             n, rows;
} step_ctx;

static bool drafting(const hyocr_spec_seq *q)
{
    return q->job && q->n_drafts > 0 && !(q->drafts && q->no_draft);
}

/* Before the target's forward: each job's draft proposes into the rows after its bonus, or,
 * where the drafts are given, past the step's rows where nobody reads them. */
static bool step_before(void *data, bool captured, GError **error)
{
    (void)captured;
    step_ctx *c = data;
    for (int i = 0; i < c->n; i++) {
        hyocr_spec_seq *q = &c->seqs[i];
        if (!drafting(q)) continue;
        size_t off = q->drafts ? (size_t)c->rows : (size_t)c->row0[i] + 1;
        if (!hyocr_dflash_propose_ops(c->d, q->job->ctx, q->n_drafts, c->m->step_ids, off, error)) return false;
    }
    return true;
}

/* After it: the block's tapped rows become context rows at the cursor. */
static bool step_after(void *data, bool captured, GError **error)
{
    (void)captured;
    step_ctx *c = data;
    for (int i = 0; i < c->n; i++) {
        hyocr_spec_seq *q = &c->seqs[i];
        if (drafting(q) && !hyocr_dflash_extend_ops(c->d, q->job->ctx, q->job->taps, 1 + q->n_drafts, error))
            return false;
    }
    return true;
}

static bool check_step(const hyocr_dflash *d, const hyocr_spec_seq *seqs, int n, GError **error)
{
    for (int i = 0; i < n; i++) {
        const hyocr_spec_seq *q = &seqs[i];
        int max = q->job ? d->cfg.block_size - 1 : HYOCR_DFLASH_MAX_BLOCK - 1;
        if (q->n_drafts < 0 || q->n_drafts > max || (q->n_drafts > 0 && !q->job && !q->drafts)) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("speculative step: sequence %d has %d drafts; it may have at most %d, given or proposed by a draft model"),
                        i, q->n_drafts, max);
            return false;
        }
        if (q->job && q->job->ctx->n + q->job->n_pending != q->kv->n_tokens) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("speculative step: sequence %d: the draft's context covers %d tokens but the KV cache holds %d"), i,
                        q->job->ctx->n + q->job->n_pending, q->kv->n_tokens);
            return false;
        }
    }
    return true;
}

/* The round's host work before its forward: the context catches up, the cursor and block. */
static bool begin_rounds(hyocr_dflash *d, hyocr_spec_seq *seqs, int n, GError **error)
{
    for (int i = 0; i < n; i++) {
        hyocr_spec_seq *q = &seqs[i];
        if (drafting(q) &&
            (!flush_pending(d, q->job, error) || !hyocr_dflash_round_begin(d, q->job->ctx, q->bonus, error)))
            return false;
    }
    return true;
}

static uint64_t step_signature(const step_ctx *c)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < c->n; i++) {
        const hyocr_spec_seq *q = &c->seqs[i];
        if (!drafting(q)) continue;
        h = (h ^ (uint64_t)(i * 131 + q->n_drafts * 7 + (q->drafts ? 1 : 2))) * 1099511628211ull;
        h = hyocr_dflash_signature(c->d, q->job->ctx, h);
    }
    return h;
}

/* Acceptance: drafts while each is the choice of the row before it, then that row's choice. */
static void accept(hyocr_spec_seq *q, const int32_t *next, const bool *nf, const int32_t *fed)
{
    int a = 0;
    while (a < q->n_drafts && fed[1 + a] == next[a]) a++;
    q->nonfinite = false;
    for (int r = 0; r <= a; r++) {
        q->out[r] = next[r];
        q->nonfinite |= nf[r];
    }
    q->n_out = a + 1;
}

static bool settle_seq(hyocr_model *m, hyocr_dflash *d, hyocr_spec_seq *q, const int32_t *next, const bool *nf,
                       const int32_t *fed, GError **error)
{
    accept(q, next, nf, fed);
    /* bonus and the drafts taken stay; the target's own last token has not been run yet */
    hyocr_kv_seq_rewind(q->kv, q->kv->n_tokens - (q->n_drafts + 1) + q->n_out);
    if (!q->job) return true;
    if (!q->n_drafts) return hyocr_spec_job_keep_row(d, q->job, error);
    if (q->drafts && q->no_draft && !flush_pending(d, q->job, error)) return false;
    q->job->ctx->n += q->n_out;
    q->job->rounds++;
    q->job->round_tokens += q->n_out;
    (void)m;
    return true;
}

bool hyocr_spec_step(hyocr_model *m, hyocr_dflash *d, hyocr_spec_seq *seqs, int n, GError **error)
{
    bool any_job = false;
    for (int i = 0; i < n; i++) any_job |= drafting(&seqs[i]) || seqs[i].job;
    if (n <= 0 || (any_job && !d)) {
        if (n <= 0)
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("speculative step: no sequences to run"));
        else
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("speculative step: %d sequences carry draft state but no draft model is loaded"), n);
        return false;
    }
    if (d && !check_step(d, seqs, n, error)) return false;
    if (!d) {
        for (int i = 0; i < n; i++)
            if (seqs[i].n_drafts < 0 || seqs[i].n_drafts >= HYOCR_DFLASH_MAX_BLOCK || (seqs[i].n_drafts && !seqs[i].drafts)) {
                g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                            _("speculative step: sequence %d has %d drafts but neither drafts given nor a draft model to propose them"), i,
                            seqs[i].n_drafts);
                return false;
            }
    }
    if (d && !begin_rounds(d, seqs, n, error)) return false;
    g_autofree hyocr_text_seq *tq = g_new0(hyocr_text_seq, n);
    g_autofree hyocr_pick *picks = g_new(hyocr_pick, n);
    g_autofree int *row0 = g_new(int, n + 1);
    int rows = 0;
    for (int i = 0; i < n; i++) {
        row0[i] = rows;
        rows += 1 + seqs[i].n_drafts;
    }
    row0[n] = rows;
    g_autofree int32_t *ids = g_new0(int32_t, rows);
    for (int i = 0; i < n; i++) {
        hyocr_spec_seq *q = &seqs[i];
        ids[row0[i]] = q->bonus;
        if (q->drafts) memcpy(ids + row0[i] + 1, q->drafts, sizeof(int32_t) * (size_t)q->n_drafts);
        tq[i] = (hyocr_text_seq){ .ids = ids + row0[i], .n_new = 1 + q->n_drafts, .kv = q->kv,
                                  .taps = q->job ? q->job->taps : NULL };
        picks[i] = q->pick;
    }
    step_ctx c = { m, d, seqs, row0, n, rows };
    bool hooked = false;
    for (int i = 0; i < n; i++) hooked |= drafting(&seqs[i]);
    hyocr_decode_hooks hooks = { step_before, step_after, &c, hooked ? step_signature(&c) : 0 };
    g_autofree int32_t *next = g_new(int32_t, rows);
    g_autofree int32_t *fed = g_new0(int32_t, rows);
    g_autofree bool *nf = g_new(bool, rows);
    /* A step without drafts (every job falling back) is a plain step that keeps taps: no block,
     * so no ids to upload nor fed ids to fetch (about 30 µs a step on the H200, 3 % of a step). */
    if (rows == n ? !hyocr_text_decode(m, tq, n, picks, next, nf, NULL, NULL, error)
                  : !hyocr_text_decode_round(m, tq, n, picks, hooked ? &hooks : NULL, next, nf, fed, error))
        return false;
    for (int i = 0; i < n; i++)
        if (!settle_seq(m, d, &seqs[i], next + row0[i], nf + row0[i], fed + row0[i], error)) return false;
    return true;
}

/* ---- the test-only stand-in ------------------------------------------------------------------ */

struct hyocr_spec_standin {
    GPtrArray *lines;   /* GArray of int32_t each */
    double     k;
};

void hyocr_spec_standin_free(hyocr_spec_standin *s)
{
    if (!s) return;
    g_ptr_array_free(s->lines, TRUE);
    g_free(s);
}

static GArray *parse_ids(const char *line)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(int32_t));
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r') p++;
        if (!*p) break;
        char *end = NULL;
        gint64 v = g_ascii_strtoll(p, &end, 10);
        if (end == p || v < 0 || v > G_MAXINT32) {
            g_array_free(a, TRUE);
            return NULL;
        }
        int32_t id = (int32_t)v;
        g_array_append_val(a, id);
        p = end;
    }
    return a;
}

hyocr_spec_standin *hyocr_spec_standin_load(const char *path, double k, GError **error)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, error)) return NULL;
    if (!(k >= 0 && k <= HYOCR_DFLASH_MAX_BLOCK)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s: draft stand-in: %g right drafts a round is out of range"),
                    path, k);
        return NULL;
    }
    hyocr_spec_standin *s = g_new0(hyocr_spec_standin, 1);
    s->lines = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    s->k = k;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        GArray *a = parse_ids(lines[i]);
        if (!a) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("%s:%d: draft stand-in: expected token ids separated by spaces"), path, i + 1);
            hyocr_spec_standin_free(s);
            return NULL;
        }
        if (a->len) g_ptr_array_add(s->lines, a);
        else g_array_free(a, TRUE);
    }
    return s;
}

void hyocr_spec_standin_drafts(const hyocr_spec_standin *s, const int32_t *gen, int n_gen, int round, int vocab,
                               int32_t *drafts, int n)
{
    const GArray *line = NULL;
    for (guint i = 0; i < s->lines->len && !line; i++) {
        const GArray *a = s->lines->pdata[i];
        if ((int)a->len >= n_gen && memcmp(a->data, gen, sizeof(int32_t) * (size_t)n_gen) == 0) line = a;
    }
    /* round r takes floor((r + 1)·k) − floor(r·k) right ones: k on average */
    int right = (int)(floor((round + 1) * s->k) - floor(round * s->k));
    for (int i = 0; i < n; i++) {
        int at = n_gen + i;
        int32_t want = line && at < (int)line->len ? g_array_index(line, int32_t, at) : -1;
        drafts[i] = i < right && want >= 0 ? want : (want >= 0 ? (want + 1) % vocab : 0);
    }
}
