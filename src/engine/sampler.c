/* hyocr — next-token choice with the semantics of HF generate():
 * RepetitionPenaltyLogitsProcessor, then (sampling only) TemperatureLogitsWarper,
 * TopKLogitsWarper, TopPLogitsWarper, then a draw from the softmax.
 *
 * The generator is counter-based: draw n of a seed uses hyocr_sampler_uniform(seed, n),
 * so the device, which draws inside a captured graph, and this host code give the
 * same token for the same logits. Seeds do NOT reproduce torch's generator, so
 * sampled outputs never match the reference token for token (greedy outputs do).
 * The draw walks the kept tokens in id order (as the device does), not in
 * torch's sorted order: the distribution is the same, the mapping from u is not. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float   v;   /* temperature-scaled logit */
    int32_t id;
    double  w;   /* exp(v - max), unnormalised probability */
} cand;

struct hyocr_sampler {
    hyocr_sampler_params p;
    hyocr_penalty_divide divide;
    int       n_vocab;
    uint64_t *seen;      /* bitset: distinct ids of the sequence so far */
    uint64_t  n_draws;   /* draws made so far: the counter of the generator */
    cand     *cands;     /* n_vocab scratch entries, reused every step */
    uint8_t  *keep;      /* n_vocab flags: the kept set, walked in id order */
    float    *heap;      /* top_k scratch (min-heap), NULL when top-k is off */
};

/* ---------- generator ---------- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double hyocr_sampler_uniform(uint64_t seed, uint64_t n)
{
    uint64_t z = mix64(mix64(seed + 0x9e3779b97f4a7c15ull) + (n + 1) * 0x9e3779b97f4a7c15ull);
    return (double)(z >> 11) * 0x1.0p-53;
}

/* ---------- parameters ---------- */

static bool penalty_on(const hyocr_sampler_params *p)
{
    return isfinite(p->repetition_penalty) && p->repetition_penalty > 0.0f &&
           p->repetition_penalty != 1.0f;
}

/* `!(t > 0)` also sends NaN to greedy. */
static bool greedy(const hyocr_sampler_params *p)
{
    return !(p->temperature > 0.0f) || !isfinite(p->temperature);
}

static bool top_k_on(const hyocr_sampler *s)
{
    return s->p.top_k > 0 && s->p.top_k < s->n_vocab;
}

static bool top_p_on(const hyocr_sampler_params *p)
{
    return p->top_p > 0.0f && p->top_p < 1.0f;
}

hyocr_sampler *hyocr_sampler_init(const hyocr_sampler_params *p, int n_vocab)
{
    g_return_val_if_fail(p != NULL, NULL);
    g_return_val_if_fail(n_vocab > 0, NULL);

    hyocr_sampler *s = g_new0(hyocr_sampler, 1);
    s->p = *p;
    s->divide = HYOCR_PENALTY_DIVIDE_RECIPROCAL;
    s->n_vocab = n_vocab;
    s->seen = g_new0(uint64_t, (n_vocab + 63) / 64);
    if (!greedy(p)) {
        s->cands = g_new(cand, n_vocab);
        s->keep = g_new(uint8_t, n_vocab);
        if (top_k_on(s))
            s->heap = g_new(float, s->p.top_k);
    }
    return s;
}

void hyocr_sampler_free(hyocr_sampler *s)
{
    if (!s) return;
    g_free(s->seen);
    g_free(s->cands);
    g_free(s->keep);
    g_free(s->heap);
    g_free(s);
}

void hyocr_sampler_set_penalty_divide(hyocr_sampler *s, hyocr_penalty_divide mode)
{
    g_return_if_fail(s != NULL);
    g_return_if_fail(mode == HYOCR_PENALTY_DIVIDE_RECIPROCAL || mode == HYOCR_PENALTY_DIVIDE_TRUE);
    s->divide = mode;
}

void hyocr_sampler_accept(hyocr_sampler *s, const int32_t *ids, int n)
{
    g_return_if_fail(s != NULL);
    g_return_if_fail(n == 0 || ids != NULL);
    for (int i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= s->n_vocab) {
            g_critical("hyocr_sampler_accept: token id %d outside the vocabulary [0, %d); ignored",
                       (int)id, s->n_vocab);
            continue;
        }
        s->seen[id >> 6] |= UINT64_C(1) << (id & 63);
    }
}

/* ---------- penalty ---------- */

/* HF: torch.where(score < 0, score * p, score / p) — so 0 (and -0) take the
 * division branch; both branches leave zero unchanged anyway. */
void hyocr_sampler_apply_penalty(const hyocr_sampler *s, float *logits)
{
    g_return_if_fail(s != NULL && logits != NULL);
    if (!penalty_on(&s->p)) return;

    const float p = s->p.repetition_penalty;
    const float inv = 1.0f / p;
    const bool reciprocal = s->divide == HYOCR_PENALTY_DIVIDE_RECIPROCAL;
    const int n_words = (s->n_vocab + 63) / 64;
    for (int w = 0; w < n_words; w++) {
        for (uint64_t bits = s->seen[w]; bits; bits &= bits - 1) {
            int id = w * 64 + __builtin_ctzll(bits);
            float x = logits[id];
            if (x < 0.0f)
                logits[id] = x * p;
            else
                logits[id] = reciprocal ? x * inv : x / p;
        }
    }
}

/* ---------- greedy ---------- */

/* torch.argmax: first maximum; a NaN counts as the maximum. */
static int32_t argmax(const float *x, int n)
{
    int32_t best = 0;
    float bv = x[0];
    if (isnan(bv)) return 0;
    for (int i = 1; i < n; i++) {
        float v = x[i];
        if (v > bv) { bv = v; best = i; }
        else if (v != v) return i;
    }
    return best;
}

/* ---------- sampling ---------- */

/* Scaled candidates; NaN and -inf can never be drawn, so they are dropped here.
 * Scaling uses fl(1/T) like torch's CUDA division by a Python float. */
static int collect(hyocr_sampler *s, const float *logits)
{
    const float t = s->p.temperature;
    const float inv = 1.0f / t;
    int n = 0;
    for (int i = 0; i < s->n_vocab; i++) {
        float v = t == 1.0f ? logits[i] : logits[i] * inv;
        if (isnan(v) || v == -INFINITY) continue;
        s->cands[n].v = v;
        s->cands[n].id = i;
        n++;
    }
    return n;
}

static void heap_sift_down(float *h, int k, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < k && h[l] < h[m]) m = l;
        if (r < k && h[r] < h[m]) m = r;
        if (m == i) return;
        float t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

static void heap_sift_up(float *h, int i)
{
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (h[parent] <= h[i]) return;
        float t = h[i]; h[i] = h[parent]; h[parent] = t;
        i = parent;
    }
}

/* HF TopKLogitsWarper: drop every score below the k-th largest, so ties with
 * the k-th are all kept (more than k tokens may survive). */
static int apply_top_k(hyocr_sampler *s, int n)
{
    const int k = s->p.top_k;
    if (n <= k) return n;
    float *h = s->heap;
    for (int i = 0; i < k; i++) {
        h[i] = s->cands[i].v;
        heap_sift_up(h, i);
    }
    for (int i = k; i < n; i++) {
        if (s->cands[i].v > h[0]) {
            h[0] = s->cands[i].v;
            heap_sift_down(h, k, 0);
        }
    }
    const float thr = h[0];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (s->cands[i].v >= thr) s->cands[m++] = s->cands[i];
    return m;
}

/* exp(v - max); the v == max test keeps +inf logits finite (weight 1). */
static double weigh(cand *c, int n)
{
    float mx = c[0].v;
    for (int i = 1; i < n; i++)
        if (c[i].v > mx) mx = c[i].v;
    double z = 0.0;
    for (int i = 0; i < n; i++) {
        c[i].w = c[i].v == mx ? 1.0 : exp((double)c[i].v - (double)mx);
        z += c[i].w;
    }
    return z;
}

/* The order top-p walks in: ascending value; among equal values the higher id
 * counts as smaller, so it is removed first and lower ids win ties like argmax.
 * (torch.sort is not stable: the reference's choice among exact ties is
 * unspecified.) */
static inline bool before(const cand *a, const cand *b)
{
    return a->v < b->v || (a->v == b->v && a->id > b->id);
}

static inline void swap_cand(cand *a, cand *b)
{
    cand t = *a; *a = *b; *b = t;
}

/* Puts the median of first, middle and last at the end as pivot, then splits
 * [lo, hi) around it; returns the pivot's final index. */
static int partition(cand *c, int lo, int hi)
{
    int mid = lo + (hi - lo) / 2, last = hi - 1;
    if (before(&c[mid], &c[lo])) swap_cand(&c[mid], &c[lo]);
    if (before(&c[last], &c[lo])) swap_cand(&c[last], &c[lo]);
    if (before(&c[mid], &c[last])) swap_cand(&c[mid], &c[last]);
    int store = lo;
    for (int i = lo; i < last; i++)
        if (before(&c[i], &c[last])) swap_cand(&c[i], &c[store++]);
    swap_cand(&c[store], &c[last]);
    return store;
}

/* HF TopPLogitsWarper: walking in ascending order, drop tokens while the
 * cumulative probability is ≤ 1 - top_p; the most probable token always stays.
 * Instead of sorting, a quickselect on probability mass finds where the
 * dropped prefix ends (expected O(n)): everything before `lo` is dropped,
 * everything from `hi` on is kept. Returns the kept count, moved to the front. */
static int apply_top_p(hyocr_sampler *s, int n, double z)
{
    cand *c = s->cands;
    const double cut = (1.0 - (double)s->p.top_p) * z;
    double cum = 0.0;
    int lo = 0, hi = n, first = -1;
    while (first < 0 && hi - lo > 1) {
        int p = partition(c, lo, hi);
        double low = 0.0;
        for (int i = lo; i < p; i++) low += c[i].w;
        if (cum + low + c[p].w <= cut) { cum += low + c[p].w; lo = p + 1; }
        else if (cum + low <= cut) first = p;
        else hi = p;
    }
    if (first < 0) first = (lo < hi && cum + c[lo].w <= cut) ? lo + 1 : lo;
    first = MIN(first, n - 1);
    memmove(c, c + first, (size_t)(n - first) * sizeof *c);
    return n - first;
}

/* u·Z over the kept tokens in id order (weights recomputed exactly as weigh() did). */
static int32_t draw(hyocr_sampler *s, const float *logits, int n, double u)
{
    memset(s->keep, 0, (size_t)s->n_vocab);
    float mx = s->cands[0].v;
    for (int i = 0; i < n; i++) {
        s->keep[s->cands[i].id] = 1;
        mx = MAX(mx, s->cands[i].v);
    }
    const float inv = 1.0f / s->p.temperature;
    double z = 0.0;
    for (int i = 0; i < n; i++) z += s->cands[i].w;
    double target = u * z, acc = 0.0;
    int32_t last = s->cands[0].id;
    for (int id = 0; id < s->n_vocab; id++) {
        if (!s->keep[id]) continue;
        float v = s->p.temperature == 1.0f ? logits[id] : logits[id] * inv;
        acc += v == mx ? 1.0 : exp((double)v - (double)mx);
        last = id;
        if (target < acc) return id;
    }
    return last;   /* u·Z rounded up to the sum */
}

/* Leaves the drawable candidates, weighted, at the front of s->cands. */
static int warp(hyocr_sampler *s, const float *logits)
{
    int n = collect(s, logits);
    if (n == 0) return 0;
    if (top_k_on(s)) n = apply_top_k(s, n);
    double z = weigh(s->cands, n);
    if (top_p_on(&s->p)) n = apply_top_p(s, n, z);
    return n;
}

int hyocr_sampler_candidates(hyocr_sampler *s, const float *logits, int32_t *ids)
{
    g_return_val_if_fail(s != NULL && logits != NULL && ids != NULL, 0);
    int n = greedy(&s->p) ? 0 : warp(s, logits);
    if (n == 0) {
        ids[0] = argmax(logits, s->n_vocab);
        return 1;
    }
    for (int i = 0; i < n; i++)
        ids[i] = s->cands[i].id;
    return n;
}

int32_t hyocr_sampler_sample(hyocr_sampler *s, float *logits)
{
    g_return_val_if_fail(s != NULL && logits != NULL, 0);
    hyocr_sampler_apply_penalty(s, logits);
    if (greedy(&s->p)) return argmax(logits, s->n_vocab);
    double u = hyocr_sampler_uniform(s->p.seed, s->n_draws++);
    int n = warp(s, logits);
    if (n == 0) return argmax(logits, s->n_vocab);   /* nothing drawable: all NaN/-inf */
    return draw(s, logits, n, u);
}

bool hyocr_sampler_is_greedy(const hyocr_sampler *s)
{
    return greedy(&s->p);
}

double hyocr_sampler_next_uniform(hyocr_sampler *s)
{
    return hyocr_sampler_uniform(s->p.seed, s->n_draws++);
}

uint64_t hyocr_sampler_draw_index(const hyocr_sampler *s)
{
    return s->n_draws;
}

void hyocr_sampler_skip_draws(hyocr_sampler *s, uint64_t n)
{
    s->n_draws += n;
}

int32_t hyocr_sampler_draw(const hyocr_sampler_params *p, const float *logits, int n_vocab, double u)
{
    g_return_val_if_fail(p != NULL && logits != NULL && n_vocab > 0, 0);
    hyocr_sampler_params q = *p;
    q.repetition_penalty = 1.0f;
    g_autoptr(hyocr_sampler) s = hyocr_sampler_init(&q, n_vocab);
    if (greedy(&q)) return argmax(logits, n_vocab);
    int n = warp(s, logits);
    if (n == 0) return argmax(logits, n_vocab);
    return draw(s, logits, n, u);
}

/* Inserts (id, l) into the n kept of at most cap, largest first: scanning ids upwards and
 * moving only past strictly smaller values keeps the lower id first among equals. */
static void top_insert(int32_t *ids, float *vals, int *n, int cap, int32_t id, float l)
{
    if (*n == cap && !(l > vals[cap - 1])) return;
    int i = *n < cap ? (*n)++ : cap - 1;
    for (; i > 0 && vals[i - 1] < l; i--) {
        ids[i] = ids[i - 1];
        vals[i] = vals[i - 1];
    }
    ids[i] = id;
    vals[i] = l;
}

float hyocr_sampler_logprobs(const float *logits, int n_vocab, int32_t id, int n_top, int32_t *top_ids, float *top_lp)
{
    float mx = logits[0];
    for (int v = 1; v < n_vocab; v++) mx = MAX(mx, logits[v]);
    double sum = 0.0;
    int n = 0;
    for (int v = 0; v < n_vocab; v++) {
        sum += exp((double)logits[v] - mx);
        if (n_top > 0) top_insert(top_ids, top_lp, &n, n_top, v, logits[v]);
    }
    double lse = mx + log(sum);
    for (int i = 0; i < n; i++) top_lp[i] = (float)(top_lp[i] - lse);
    return (float)(logits[id] - lse);
}

hyocr_token_logprobs hyocr_sampler_token_logprobs(const float *logits, int n_vocab, int32_t id, int n_top)
{
    hyocr_token_logprobs lp = { .n_top = MIN(n_top, n_vocab) };
    int32_t ids[HYOCR_TOP_LOGPROBS_MAX];
    float vals[HYOCR_TOP_LOGPROBS_MAX];
    lp.logprob = hyocr_sampler_logprobs(logits, n_vocab, id, lp.n_top, ids, vals);
    for (int i = 0; i < lp.n_top; i++) lp.top[i] = (hyocr_logprob){ ids[i], vals[i] };
    return lp;
}
