/* hyocr — HYOCR_PROFILE=1: the CUDA backend's GPU time per op. The profiler
 * wraps the backend's op table: every GPU op runs between two events recorded on
 * the stream, the pairs are read where the host waits anyway (a download, a sync,
 * a buffer freed), and the table (calls, ms, %, µs/call; GEMMs by N×K and rows)
 * goes to stderr when the profiler is freed. A second table holds the time between
 * one op's end and the next one's start: where the card waited for the host (its
 * launches, downloads, the scheduler's work between decode steps), by the op that
 * came after the wait. A third holds the host's own time between op calls (the return
 * of one to the call of the next; waits, downloads and allocations count as calls), by the
 * pair, and in each call: which stretch of the engine's code the card's idle time is spent in. Nothing of it
 * runs unless profiling. */
#include "cuda-profile.h"
#include <stdio.h>

struct hyocr_cuda_profile {
    hyocr_backend_ops        ops;     /* first: the backend's ops pointer leads back here (P) */
    const hyocr_backend_ops *inner;   /* the ops being timed */
    cudaStream_t             stream;
    bool                     capturing;
    char                     gpu_name[256];
    GArray                  *recs;    /* prof_rec, recorded but not yet read */
    GPtrArray               *free;    /* idle events */
    GHashTable              *stats;   /* interned op name → prof_stat */
    GHashTable              *idle;    /* interned op name → prof_stat of the gaps before it */
    cudaEvent_t              last;    /* the end of the last op read (NULL: none yet) */
    GHashTable              *host;    /* interned "op → op" → prof_stat of the host's time between the calls */
    const char              *host_prev;   /* the last op called (NULL: none yet) */
    bool                     host_on;     /* a GPU op has been called: the host table counts */
    gint64                   host_ret;    /* when it returned */
};

/* The profiler whose ops a backend runs: its table is the profiler's first member. */
static inline hyocr_cuda_profile *P(hyocr_backend *be)
{
    return (hyocr_cuda_profile *)be->ops;
}

typedef struct {
    const char *name;
    cudaEvent_t a, b;
} prof_rec;

typedef struct {
    int64_t calls;
    double  ms;
} prof_stat;

static cudaEvent_t prof_event(hyocr_cuda_profile *p)
{
    if (p->free->len) return g_ptr_array_steal_index_fast(p->free, p->free->len - 1);
    cudaEvent_t e = NULL;
    if (cudaEventCreate(&e) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return e;
}

static float prof_elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, a, b) == cudaSuccess) return ms;
    cudaGetLastError();
    return 0.0f;
}

static void prof_add(GHashTable *table, const char *name, float ms)
{
    prof_stat *st = g_hash_table_lookup(table, name);
    if (!st) {
        st = g_new0(prof_stat, 1);
        g_hash_table_insert(table, (gpointer)name, st);
    }
    st->calls++;
    st->ms += ms;
}

void hyocr_cuda_profile_resolve(hyocr_cuda_profile *p)
{
    if (!p) return;
    for (guint i = 0; i < p->recs->len; i++) {
        prof_rec *r = &g_array_index(p->recs, prof_rec, i);
        prof_add(p->stats, r->name, prof_elapsed(r->a, r->b));
        /* the gap since the op before: ops follow each other on the one stream */
        if (p->last) {
            prof_add(p->idle, r->name, MAX(0.0f, prof_elapsed(p->last, r->a)));
            g_ptr_array_add(p->free, p->last);
        }
        p->last = r->b;
        g_ptr_array_add(p->free, r->a);
    }
    g_array_set_size(p->recs, 0);
}

/* The host's time since the last op call returned, by the pair of ops around it; returns when
 * this call began. Counted from the first GPU op on (gpu): the weights' load before it is only
 * allocations and uploads. */
static gint64 host_enter(hyocr_cuda_profile *p, const char *name, bool gpu)
{
    gint64 now = g_get_monotonic_time();
    p->host_on |= gpu;
    if (!p->host_on || !p->host_prev) return now;
    g_autofree char *pair = g_strconcat(p->host_prev, " -> ", name, NULL);
    prof_add(p->host, g_intern_string(pair), (float)((double)(now - p->host_ret) / 1e3));
    return now;
}

/* The call's own time on the host (a wait, an allocation, a launch), then the gap begins. */
static void host_leave(hyocr_cuda_profile *p, const char *name, gint64 t0)
{
    p->host_ret = g_get_monotonic_time();
    if (!p->host_on) return;
    g_autofree char *in = g_strconcat("in ", name, NULL);
    prof_add(p->host, g_intern_string(in), (float)((double)(p->host_ret - t0) / 1e3));
    p->host_prev = name;
}

/* Nothing is timed inside a capture: event nodes of a graph gave no elapsed
 * times (H200, CUDA 12), so a graph counts as one op, "graph launch". */
static cudaEvent_t prof_begin(hyocr_cuda_profile *p)
{
    if (p->capturing) return NULL;
    cudaEvent_t e = prof_event(p);
    if (e) cudaEventRecord(e, p->stream);
    return e;
}

static bool prof_end(hyocr_cuda_profile *p, cudaEvent_t a, const char *name, bool ok)
{
    if (!a) return ok;
    cudaEvent_t b = prof_event(p);
    if (!b) {
        g_ptr_array_add(p->free, a);
        return ok;
    }
    cudaEventRecord(b, p->stream);
    prof_rec r = { name, a, b };
    g_array_append_val(p->recs, r);
    /* Bound the events in flight on long runs without a download. */
    if (p->recs->len >= 65536 && cudaStreamSynchronize(p->stream) == cudaSuccess) hyocr_cuda_profile_resolve(p);
    return ok;
}

static gint prof_cmp(gconstpointer a, gconstpointer b, gpointer stats)
{
    const prof_stat *x = g_hash_table_lookup(stats, *(const char *const *)a);
    const prof_stat *y = g_hash_table_lookup(stats, *(const char *const *)b);
    return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : 0;
}

/* One table, largest first; prefix goes before each name (the gaps' rows must not read as
 * the ops' in bench/profile_diff.py and bench/roofline.py, which key rows by name). */
static void prof_table(GHashTable *stats, const char *title, const char *gpu, const char *head, const char *prefix)
{
    GPtrArray *names = g_ptr_array_new();
    double total = 0.0;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, stats);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        g_ptr_array_add(names, k);
        total += ((prof_stat *)v)->ms;
    }
    g_ptr_array_sort_with_data(names, prof_cmp, stats);
    fprintf(stderr, "hyocr CUDA profile (%s): %s, %.3f ms in all\n", gpu, title, total);
    fprintf(stderr, "%-44s %10s %12s %8s %10s\n", head, "calls", "total ms", "%", "us/call");
    for (guint i = 0; i < names->len; i++) {
        const prof_stat *st = g_hash_table_lookup(stats, names->pdata[i]);
        g_autofree char *name = g_strconcat(prefix, (const char *)names->pdata[i], NULL);
        fprintf(stderr, "%-44s %10" G_GINT64_FORMAT " %12.3f %7.2f%% %10.2f\n", name, st->calls, st->ms,
                total > 0 ? 100.0 * st->ms / total : 0.0, st->calls ? 1e3 * st->ms / st->calls : 0.0);
    }
    g_ptr_array_free(names, TRUE);
}

static void prof_print(hyocr_cuda_profile *p)
{
    hyocr_cuda_profile_resolve(p);
    prof_table(p->stats, "GPU time per op (event to event)", p->gpu_name, "op", "");
    prof_table(p->idle, "the card idle before each op (the end of the op before to its start)", p->gpu_name,
               "idle before", "idle before ");
    prof_table(p->host, "the host between op calls (the return of one to the call of the next) and in them", p->gpu_name,
               "host between", "host ");
}

void hyocr_cuda_profile_free(hyocr_cuda_profile *p)
{
    if (!p) return;
    if (p->stream) cudaStreamSynchronize(p->stream);
    prof_print(p);
    if (p->last) cudaEventDestroy(p->last);
    for (guint i = 0; i < p->free->len; i++) cudaEventDestroy(p->free->pdata[i]);
    g_ptr_array_free(p->free, TRUE);
    g_array_free(p->recs, TRUE);
    g_hash_table_destroy(p->stats);
    g_hash_table_destroy(p->idle);
    g_hash_table_destroy(p->host);
    g_free(p);
}

/* GEMMs by role: the caller-visible shape N×K, decode-sized (≤ 64 rows) or not. */
static const char *prof_matmul_name(int M, int N, int K)
{
    char buf[96];
    g_snprintf(buf, sizeof buf, "matmul N=%d K=%d %s", N, K, M <= 64 ? "(<=64 rows)" : "(>64 rows)");
    return g_intern_string(buf);
}

/* The op table with every GPU op bracketed by events; used only when profiling. */
#define IN (P(be)->inner)
#define PROF(name, call)                                          \
    do {                                                          \
        const char *n_ = (name);                                  \
        gint64 t_ = host_enter(P(be), n_, true);                  \
        cudaEvent_t pa_ = prof_begin(P(be));                      \
        bool ok_ = prof_end(P(be), pa_, n_, (call));              \
        host_leave(P(be), n_, t_);                                \
        return ok_;                                               \
    } while (0)
/* Calls that queue no GPU op of their own (waits, downloads, allocations): in the host table only. */
#define HOST(name, type, call)                                    \
    do {                                                          \
        gint64 t_ = host_enter(P(be), (name), false);             \
        type r_ = (call);                                         \
        host_leave(P(be), (name), t_);                            \
        return r_;                                                \
    } while (0)

static bool p_copy(hyocr_backend *be, hyocr_buf *d, size_t doff, const hyocr_buf *s, size_t soff, size_t n, GError **e)
{ PROF("copy", IN->copy(be, d, doff, s, soff, n, e)); }
static bool p_upload_f32(hyocr_backend *be, hyocr_buf *d, size_t off, const float *s, size_t n, GError **e)
{ PROF("upload_f32", IN->upload_f32(be, d, off, s, n, e)); }
static bool p_matmul(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *x, const hyocr_buf *w, size_t woff,
                     const hyocr_buf *bias, int M, int N, int K, GError **e)
{ PROF(prof_matmul_name(M, N, K), IN->matmul(be, o, x, w, woff, bias, M, N, K, e)); }
static bool p_add_layernorm(hyocr_backend *be, hyocr_buf *o, hyocr_buf *r, const hyocr_buf *d, const hyocr_buf *g,
                            const hyocr_buf *b, int M, int N, float eps, GError **e)
{ PROF("add_layernorm", IN->add_layernorm(be, o, r, d, g, b, M, N, eps, e)); }
static bool p_add_rmsnorm(hyocr_backend *be, hyocr_buf *o, hyocr_buf *r, const hyocr_buf *d, const hyocr_buf *w, int M,
                          int N, float eps, GError **e)
{ PROF(M <= 64 ? "add_rmsnorm (<=64 rows)" : "add_rmsnorm (>64 rows)", IN->add_rmsnorm(be, o, r, d, w, M, N, eps, e)); }
static bool p_add(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *y, size_t n, GError **e)
{ PROF("add", IN->add(be, x, y, n, e)); }
static bool p_gelu(hyocr_backend *be, hyocr_buf *x, size_t n, GError **e)
{ PROF("gelu", IN->gelu(be, x, n, e)); }
static bool p_swiglu(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *gu, int M, int I, GError **e)
{ PROF(M <= 64 ? "swiglu (<=64 rows)" : "swiglu (>64 rows)", IN->swiglu(be, o, gu, M, I, e)); }
static bool p_posemb_add(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *t, size_t r0, int edge, int gh, int gw, int C,
                         hyocr_posemb_interp in, GError **e)
{ PROF("posemb_add", IN->posemb_add(be, x, t, r0, edge, gh, gw, C, in, e)); }
static bool p_merge_gather(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *x, int gh, int gw, int C, GError **e)
{ PROF("merge_gather", IN->merge_gather(be, o, x, gh, gw, C, e)); }
static bool p_append_newline(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *x, const hyocr_buf *nl, int Hm, int Wm,
                             int C, GError **e)
{ PROF("append_newline", IN->append_newline(be, o, x, nl, Hm, Wm, C, e)); }
static bool p_attention_full(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *qkv, int n, int H, int D, float sc,
                             GError **e)
{ PROF("attention_full (vision)", IN->attention_full(be, o, qkv, n, H, D, sc, e)); }
static bool p_rope_qknorm(hyocr_backend *be, hyocr_buf *qkv, int M, const int32_t *pos, int na, int Hq, int Hkv,
                          const hyocr_rope_params *r, const hyocr_buf *qn, const hyocr_buf *kn, float eps, GError **e)
{ PROF(M <= 64 ? "rope_qknorm (<=64 rows)" : "rope_qknorm (>64 rows)", IN->rope_qknorm(be, qkv, M, pos, na, Hq, Hkv, r, qn, kn, eps, e)); }
static bool p_attention_paged(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *qkv, hyocr_buf *kc, hyocr_buf *vc,
                              int bs, const hyocr_seq_view *sv, int ns, int Hq, int Hkv, int D, float sc,
                              hyocr_buf *spare, GError **e)
{
    int rows = 0;
    for (int i = 0; sv && i < ns; i++) rows += sv[i].n_new;
    PROF(rows == ns ? "attention_paged (decode)" : "attention_paged (prefill)",
         IN->attention_paged(be, o, qkv, kc, vc, bs, sv, ns, Hq, Hkv, D, sc, spare, e));
}
static bool p_embed(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *t, const int32_t *ids, int n, int C, GError **e)
{ PROF("embed", IN->embed(be, o, t, ids, n, C, e)); }
static bool p_pick(hyocr_backend *be, const hyocr_buf *l, int n, int V, hyocr_buf *seen, const int32_t *sl,
                   const float *pe, const hyocr_pick_draw *dr, const int32_t *fi, const hyocr_buf *ids, GError **e)
{ PROF("pick", IN->pick(be, l, n, V, seen, sl, pe, dr, fi, ids, e)); }
static bool p_qknorm_rope(hyocr_backend *be, hyocr_buf *qkv, int M, const hyocr_buf *c, int Hq, int Hkv,
                          const hyocr_rope_params *r, const hyocr_buf *qn, const hyocr_buf *kn, float eps, GError **e)
{ PROF("draft qknorm_rope", IN->qknorm_rope(be, qkv, M, c, Hq, Hkv, r, qn, kn, eps, e)); }
static bool p_attention_append(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *qkv, hyocr_buf *kc, hyocr_buf *vc,
                               const hyocr_buf *c, int M, int Hq, int Hkv, int D, float sc, GError **e)
{
    PROF(Hq ? "draft attention_append" : "draft context store",
         IN->attention_append(be, o, qkv, kc, vc, c, M, Hq, Hkv, D, sc, e));
}
static bool p_argmax(hyocr_backend *be, const hyocr_buf *l, int n, int V, hyocr_buf *ids, size_t off, GError **e)
{ PROF("draft argmax", IN->argmax(be, l, n, V, ids, off, e)); }
static bool p_embed_ids(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *t, const hyocr_buf *ids, size_t off, int n,
                        int C, GError **e)
{ PROF("embed_ids", IN->embed_ids(be, o, t, ids, off, n, C, e)); }
static bool p_copy_rows(hyocr_backend *be, hyocr_buf *d, size_t doff, size_t ds, const hyocr_buf *s, size_t soff,
                        size_t ss, int rows, int cols, GError **e)
{ PROF("copy_rows (taps)", IN->copy_rows(be, d, doff, ds, s, soff, ss, rows, cols, e)); }
static bool p_norm_matmul(hyocr_backend *be, hyocr_buf *o, const hyocr_buf *r, const hyocr_buf *nw, float eps,
                          const hyocr_buf *w, int M, int N, int K, bool glu, GError **e)
{
    char buf[96];
    g_snprintf(buf, sizeof buf, "norm_matmul%s N=%d K=%d", glu ? " glu" : "", N, K);
    PROF(g_intern_string(buf), IN->norm_matmul(be, o, r, nw, eps, w, M, N, K, glu, e));
}
static bool p_matmul_residual(hyocr_backend *be, hyocr_buf *r, const hyocr_buf *x, const hyocr_buf *w, int M, int N,
                              int K, GError **e)
{
    char buf[96];
    g_snprintf(buf, sizeof buf, "matmul_residual N=%d K=%d", N, K);
    PROF(g_intern_string(buf), IN->matmul_residual(be, r, x, w, M, N, K, e));
}
static bool p_graph_launch(hyocr_backend *be, void *g, bool *stale, GError **e)
{ PROF("graph launch (whole decode step)", IN->graph_launch(be, g, stale, e)); }
static void p_buf_free(hyocr_backend *be, hyocr_buf *b)
{
    gint64 t = host_enter(P(be), "buf_free", false);
    IN->buf_free(be, b);
    host_leave(P(be), "buf_free", t);
}
static void p_mem_info(hyocr_backend *be, hyocr_mem_info *out)
{
    gint64 t = host_enter(P(be), "mem_info", false);
    IN->mem_info(be, out);
    host_leave(P(be), "mem_info", t);
}
/* A point in the engine's code: a row of the host table ("@where"), nothing queued. */
static void p_mark(hyocr_backend *be, const char *where)
{
    g_autofree char *name = g_strconcat("@", where, NULL);
    const char *n = g_intern_string(name);
    host_leave(P(be), n, host_enter(P(be), n, false));
}
static bool p_sync(hyocr_backend *be, GError **e)
{ HOST("sync", bool, IN->sync(be, e)); }
static bool p_download_f32(hyocr_backend *be, const hyocr_buf *s, size_t off, float *d, size_t n, GError **e)
{ HOST("download_f32", bool, IN->download_f32(be, s, off, d, n, e)); }
static bool p_check_finite(hyocr_backend *be, const hyocr_buf *b, size_t n, bool *finite, GError **e)
{ HOST("check_finite", bool, IN->check_finite(be, b, n, finite, e)); }
static bool p_pick_fetch(hyocr_backend *be, int n, int32_t *ids, bool *nonfinite, GError **e)
{ HOST("pick_fetch", bool, IN->pick_fetch(be, n, ids, nonfinite, e)); }
static hyocr_buf *p_alloc(hyocr_backend *be, hyocr_buf_kind kind, size_t n, GError **e)
{ HOST("alloc", hyocr_buf *, IN->alloc(be, kind, n, e)); }
static bool p_decode_bind(hyocr_backend *be, const struct hyocr_decode_meta *m, GError **e)
{ HOST("decode_bind", bool, IN->decode_bind(be, m, e)); }

/* Nothing is timed between these two (see prof_begin). */
static bool p_graph_begin(hyocr_backend *be, GError **e)
{
    bool ok = IN->graph_begin(be, e);
    P(be)->capturing = ok;
    return ok;
}
static void *p_graph_end(hyocr_backend *be, GError **e)
{
    P(be)->capturing = false;
    return IN->graph_end(be, e);
}

hyocr_cuda_profile *hyocr_cuda_profile_new(const hyocr_backend_ops *inner, cudaStream_t stream, const char *gpu_name)
{
    hyocr_cuda_profile *p = g_new0(hyocr_cuda_profile, 1);
    p->inner = inner;
    p->stream = stream;
    g_strlcpy(p->gpu_name, gpu_name, sizeof p->gpu_name);
    p->recs = g_array_new(FALSE, FALSE, sizeof(prof_rec));
    p->free = g_ptr_array_new();
    p->stats = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    p->idle = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    p->host = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    hyocr_backend_ops *o = &p->ops;
    *o = *inner;
    o->copy = p_copy;
    o->upload_f32 = p_upload_f32;
    o->matmul = p_matmul;
    o->add_layernorm = p_add_layernorm;
    o->add_rmsnorm = p_add_rmsnorm;
    o->add = p_add;
    o->gelu = p_gelu;
    o->swiglu = p_swiglu;
    o->posemb_add = p_posemb_add;
    o->merge_gather = p_merge_gather;
    o->append_newline = p_append_newline;
    o->attention_full = p_attention_full;
    o->rope_qknorm = p_rope_qknorm;
    o->attention_paged = p_attention_paged;
    o->embed = p_embed;
    o->pick = p_pick;
    o->qknorm_rope = p_qknorm_rope;
    o->attention_append = p_attention_append;
    o->argmax = p_argmax;
    o->embed_ids = p_embed_ids;
    o->copy_rows = p_copy_rows;
    o->graph_launch = p_graph_launch;
    o->norm_matmul = p_norm_matmul;
    o->matmul_residual = p_matmul_residual;
    o->graph_begin = p_graph_begin;
    o->graph_end = p_graph_end;
    o->sync = p_sync;
    o->download_f32 = p_download_f32;
    o->check_finite = p_check_finite;
    o->pick_fetch = p_pick_fetch;
    o->alloc = p_alloc;
    o->buf_free = p_buf_free;
    o->mem_info = p_mem_info;
    o->mark = p_mark;
    if (inner->decode_bind) o->decode_bind = p_decode_bind;
    return p;
}

const hyocr_backend_ops *hyocr_cuda_profile_ops(hyocr_cuda_profile *p)
{
    return &p->ops;
}
