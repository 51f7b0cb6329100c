/* hyocr — CUDA backend: the op table of backend.h in FP16 (default) or BF16
 * with an fp32 residual stream.
 *
 * HYOCR_BUF_F32 buffers hold float; every other kind holds the compute type.
 * GEMMs go through cuBLASLt (fp32 accumulation, bias in the epilogue), the rest
 * through our kernels (the .cu files in kernels/, reached via kernels/hyocr-kernels.h).
 * Ops run on one stream: they enqueue and return, download_f32 and sync wait.
 * Between side_begin and side_end they go to a second stream of higher priority
 * instead (a page's vision pass beside the decode steps), with their own GEMM
 * workspace and staging; buffers taken and given back there are stream-ordered
 * (cudaMallocAsync), and other frees wait for that lane's work rather than the
 * host, so the host does not wait for it. Every device allocation goes through
 * dev_alloc, which enforces the memory limit and turns failure into HYOCR_ERROR_NO_MEMORY. The ops are not
 * thread-safe (one stream, one caller at a time); mem_info is. */
#include "backend.h"
#include "cuda-profile.h"
#include "error.h"
#include "i18n.h"
#include "hyocr-build-config.h"
#include "../../kernels/hyocr-kernels.h"
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#define LT_WORKSPACE   (32u << 20)   /* cuBLASLt / cuBLAS workspace (Hopper wants 32 MiB) */
#define STAGE_BYTES    (32u << 20)   /* host↔device conversion staging */
#define PIN_HALF       (1u << 20)    /* pinned metadata ring: two halves */
#define UP_HALF        (8u << 20)    /* pinned ring of large uploads: two halves (≤ STAGE_BYTES / 2) */
#define UP_MIN         (4u << 20)    /* uploads from this size on go through it */
#define PLAN_CACHE_MAX 1024
#define MIB(x)         ((double)(x) / (1024.0 * 1024.0))

enum { BUCKET_SCRATCH = HYOCR_BUF_KV + 1, N_BUCKETS };

typedef struct {
    void  *ptr;
    size_t cap;
} scratch;

/* What a lane (a stream) owns: work on two streams at once must not share a
 * workspace or a staging buffer. The current lane's are in cuda_backend's
 * fields of the same names; side_begin and side_end swap them with these. */
typedef struct {
    cudaStream_t stream;
    scratch      lt_ws, stage, conv_x, conv_bias;
} cuda_lane;

/* A buffer, and whether it came from the stream-ordered allocator (on the side lane, or on the
 * main one unless HYOCR_ORDERED_ALLOC=0: main). */
typedef struct {
    hyocr_buf base;
    bool      ordered, main;
} cuda_buf;

/* The bytes a metadata buffer last received (a host copy; len 0: unknown). */
typedef struct {
    uint8_t *bytes;
    size_t   len, cap;
} meta_held;

typedef struct {
    hyocr_backend    base;
    int              device, sm_count, cc;
    char             gpu_name[256];
    hk_dtype         act;
    cudaStream_t     stream;
    cublasHandle_t   blas;
    cublasLtHandle_t lt;
    /* accounting (mem_lock also guards reads from other threads) */
    GMutex           mem_lock;
    int64_t          memory_limit;
    int64_t          bytes[N_BUCKETS];
    int64_t          total, peak;
    /* scratch */
    scratch          lt_ws, stage, meta, part, counters, conv_x, conv_bias;
    /* metadata buffers: meta (work lists, ids, the pick's rows), pos (rope positions), and what each holds */
    scratch          pos;
    meta_held        meta_held, pos_held;
    /* pinned metadata ring: copies come from here so they do not serialise the host */
    uint8_t         *pin;
    size_t           pin_used;
    int              pin_half;
    cudaEvent_t      pin_done[2];
    /* large uploads (the page's pixels): pinned ring, its copy threads */
    uint8_t         *up_pin;
    cudaEvent_t      up_done[2];
    GThreadPool     *up_pool;
    int              up_threads;
    bool             up_f16;          /* the ring's copies make fp16 on the host (F16C) */
    GHashTable      *plans;
    /* small results (finite flag, picked ids) and their pinned landing place */
    scratch          small;
    uint8_t         *pin_small;
    scratch          lp;              /* pick_logprobs: the rows' asks, results, chunk partials */
    /* decode_bind: the step's metadata blob, its pinned source and layout */
    scratch          dmeta;
    uint8_t         *dmeta_host;
    size_t           dmeta_host_cap;
    cudaEvent_t      dmeta_done;
    bool             bound, bound_sampling, bound_shared, bound_first, capturing;
    int              bound_rows, bound_maxb;
    int              bound_blocks, bound_block_rows;   /* verify blocks of the step, the most rows of one */
    int              bound_block_total;                /* rows in verify blocks */
    size_t           o_ids, o_pos, o_seqs, o_rs, o_bt, o_slots, o_pens, o_draws, o_first, o_dseqs, o_blk;
    /* bumped whenever scratch a captured graph may point into moves */
    uint64_t         epoch;
    /* the other lane (the side stream while the main one is current, and back) */
    cuda_lane        other;
    bool             on_side;
    bool             side_pending;   /* work was queued there and is not known to be done */
    GArray          *held;           /* dev_frees put off meanwhile (held_free) */
    /* HYOCR_PROFILE=1: per-op GPU time (cuda-profile.c), resolved where the host waits anyway */
    hyocr_cuda_profile *prof;
    bool             gemv;          /* our kernels for decode-sized GEMMs, 1..16 rows (HYOCR_NO_GEMV=1: cuBLAS) */
    int              pdl;           /* fused products as programmatic dependents (sm_90+; HYOCR_PDL=0: off) */
    int              split_override; /* HYOCR_DECODE_SPLIT: keys per split of bound decode steps (tuning) */
    int              decode_stages;  /* HYOCR_DECODE_STAGES: the staged decode kernel for several rows (0: off) */
    bool             decode_mma;     /* HYOCR_DECODE_MMA: its two-round depth on the tensor cores (k_decode_mma) */
    int              dec_ctas_per_sm[2][HK_DECODE_STAGES_MAX + 1]; /* a decode kernel's CTAs an SM, by mma and stages (0: not yet asked) */
    int              rows_wide;      /* HYOCR_ROWS_WIDE as tuning.h has it (−1 off, 0 or 1 the card's rule,
                                      * more: that many groups), capped at HK_GEMM_ROWS_GROUPS_MAX */
    int              rope_heads;     /* HYOCR_ROPE_HEADS: rope_qknorm's heads a block for ≤ 16 rows (0: a row) */
    bool             verify_kernel; /* verify blocks by the block kernel (HYOCR_VERIFY_KERNEL=0: row by row) */
    bool             invariant;     /* decode rows computed alike in steps of any rows (HYOCR_INVARIANT) */
    int              wgmma_built;   /* the code this device runs has the Hopper vision attention (probed) */
    int              wgmma;         /* the vision kernel (hk_vis_kernel): k_vis_tma, k_vis_wg
                                     * (HYOCR_VIS_TMA=0) or the mma.sync one (HYOCR_NO_WGMMA=1) */
    hk_prefill_kind  prefill;       /* the prefill tiles' kernel (HYOCR_PREFILL_TEMPLATE=1: the 64-row template) */
    int              pf_split;      /* split-KV prefill's CTAs an SM (HYOCR_PREFILL_SPLIT); 0: never split */
    bool             pf_spare;      /* its partials in attention_paged's spare where it has more room
                                     * (HYOCR_PREFILL_SPARE=0: never) */
    bool             vis_lazy;      /* the Hopper kernels' lazy rescale (HYOCR_VIS_LAZY_RESCALE=0: every tile) */
    bool             ordered_main;  /* the main lane's activations stream-ordered too (HYOCR_ORDERED_ALLOC=0: not) */
    cudaMemPool_t    keep_pool;     /* the stream-ordered pool, where it keeps what is given back (HYOCR_POOL_KEEP) */
} cuda_backend;

static inline cuda_backend *CB(hyocr_backend *be) { return (cuda_backend *)be; }

/* ---------------------------------------------------------------- errors */

/* what: the step, marked N_() where it is words rather than a function's name. */
static bool ck(cudaError_t e, const char *what, GError **error)
{
    if (e == cudaSuccess) return true;
    cudaGetLastError();   /* clear non-sticky errors so the next op starts clean */
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND, _("CUDA backend: %s failed: %s (%s)"), _(what),
                cudaGetErrorString(e), cudaGetErrorName(e));
    return false;
}

static bool ck_blas(cublasStatus_t s, const char *what, GError **error)
{
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND, _("CUDA backend: %s failed: %s"), _(what),
                cublasGetStatusString(s));
    return false;
}

static bool invalid(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool invalid(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("CUDA backend: %s"), msg);
    return false;
}

static bool need(const char *op, const char *what, const hyocr_buf *b, size_t n, GError **error)
{
    if (!b || (!b->data && b->n > 0))
        return invalid(error, _("%s: buffer '%s' is missing"), op, what);
    if (b->n < n)
        return invalid(error, _("%s: buffer '%s' holds %zu elements but %zu are needed"), op, what, b->n, n);
    return true;
}

/* Attention and rope read their operands as the compute type. */
static bool need_act(const char *op, const char *what, const hyocr_buf *b, GError **error)
{
    if (b->kind == HYOCR_BUF_F32)
        return invalid(error, _("%s: buffer '%s' is F32 but this op needs an activation (or KV) buffer"), op, what);
    return true;
}

/* ---------------------------------------------------------------- memory */

static const char *bucket_name(int b)
{
    static const char *names[] = { N_("activations"), N_("fp32 buffers"), N_("weights"), N_("KV cache"), N_("scratch") };
    return b >= 0 && b < N_BUCKETS ? _(names[b]) : "?";
}

static char *usage_string(cuda_backend *cb)
{
    return g_strdup_printf(_("weights %.1f MiB, KV cache %.1f MiB, activations %.1f MiB, scratch %.1f MiB"),
                           MIB(cb->bytes[HYOCR_BUF_WEIGHT]), MIB(cb->bytes[HYOCR_BUF_KV]),
                           MIB(cb->bytes[HYOCR_BUF_ACT] + cb->bytes[HYOCR_BUF_F32]),
                           MIB(cb->bytes[BUCKET_SCRATCH]));
}

/* The memory the stream-ordered pool keeps, back to the system, once the work that gave it back
 * is done (the pool cannot release what backs an allocation still in flight). */
static void release_kept(cuda_backend *cb)
{
    if (!cb->keep_pool) return;
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(cb->keep_pool, 0);
    cudaGetLastError();
}

static cudaError_t dev_take(cuda_backend *cb, void **p, size_t bytes, bool ordered)
{
    return ordered ? cudaMallocAsync(p, bytes ? bytes : 256, cb->stream) : cudaMalloc(p, bytes ? bytes : 256);
}

/* The one place device memory is taken; ordered: from the stream-ordered allocator, in the
 * current stream's order (a cudaFree would wait for the whole device). */
static void *dev_alloc(cuda_backend *cb, int bucket, size_t bytes, bool ordered, GError **error)
{
    g_mutex_lock(&cb->mem_lock);
    bool over = cb->memory_limit > 0 && (bytes > (size_t)INT64_MAX ||
                                         cb->total + (int64_t)bytes > cb->memory_limit);
    int64_t in_use = cb->total;
    g_autofree char *usage = usage_string(cb);
    g_mutex_unlock(&cb->mem_lock);
    if (over) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CUDA backend: allocating %.1f MiB of %s would exceed the memory limit of %.1f MiB "
                      "(%.1f MiB in use: %s); raise the limit or use a smaller image"),
                    MIB(bytes), bucket_name(bucket), MIB(cb->memory_limit), MIB(in_use), usage);
        return NULL;
    }
    void *p = NULL;
    cudaError_t e = dev_take(cb, &p, bytes, ordered);
    if (e == cudaErrorMemoryAllocation && cb->keep_pool && !cb->capturing) {
        /* what the pool keeps may be what this allocation lacks */
        cudaGetLastError();
        release_kept(cb);
        e = dev_take(cb, &p, bytes, ordered);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        cudaGetLastError();
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CUDA backend: out of device memory allocating %.1f MiB of %s (hyocr holds %.1f MiB: %s; "
                      "the device has %.1f of %.1f MiB free): %s"),
                    MIB(bytes), bucket_name(bucket), MIB(in_use), usage, MIB(fr), MIB(tot), cudaGetErrorString(e));
        return NULL;
    }
    g_mutex_lock(&cb->mem_lock);
    cb->bytes[bucket] += (int64_t)bytes;
    cb->total += (int64_t)bytes;
    if (cb->total > cb->peak) cb->peak = cb->total;
    g_mutex_unlock(&cb->mem_lock);
    return p;
}

typedef struct {
    void  *p;
    int    bucket;
    size_t bytes;
} held_free;

/* cudaFree waits for the whole device: while the side lane has work queued, frees
 * wait for it to be done instead of the host (a decode step beside a vision pass
 * grows its logits and the like on its first step at a new row count, and each such
 * free held that step until the pass was done: one step ran beside each 1024² pass,
 * H200 session 9 call 5). The memory counts as held until then. A stream-ordered buffer goes
 * back in the order of `ordered`, the stream given. */
static void dev_free(cuda_backend *cb, int bucket, void *p, size_t bytes, cudaStream_t ordered)
{
    if (!p) return;
    if (!ordered && cb->side_pending) {
        if (!cb->held) cb->held = g_array_new(FALSE, FALSE, sizeof(held_free));
        held_free h = { p, bucket, bytes };
        g_array_append_val(cb->held, h);
        return;
    }
    if (ordered) cudaFreeAsync(p, ordered);
    else cudaFree(p);
    g_mutex_lock(&cb->mem_lock);
    cb->bytes[bucket] -= (int64_t)bytes;
    cb->total -= (int64_t)bytes;
    g_mutex_unlock(&cb->mem_lock);
}

/* Grows a scratch buffer to cap bytes (≥ bytes); the old one may still be read by queued work,
 * so wait first. */
static bool scratch_grow(cuda_backend *cb, scratch *s, size_t bytes, size_t cap, GError **error)
{
    if (s->cap >= bytes) return true;
    if (cb->capturing)
        return g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                           _("CUDA backend: scratch would grow during a graph capture (a bug in hyocr: the step must run once "
                             "uncaptured first; please report it)")), false;
    /* Graphs point into these (the GEMM workspace, decode partials, bound metadata, results). */
    if (s == &cb->lt_ws || s == &cb->part || s == &cb->counters || s == &cb->small || s == &cb->dmeta) cb->epoch++;
    if (s->ptr) {
        if (!ck(cudaStreamSynchronize(cb->stream), N_("stream synchronize"), error)) return false;
        dev_free(cb, BUCKET_SCRATCH, s->ptr, s->cap, NULL);
        s->ptr = NULL;
        s->cap = 0;
    }
    s->ptr = dev_alloc(cb, BUCKET_SCRATCH, cap, false, error);
    if (!s->ptr) return false;
    s->cap = cap;
    return true;
}

/* Scratch of a size that varies with the call: grown by a quarter more than asked, so that a
 * slowly growing need does not reallocate (and wait) every time. */
static bool scratch_need(cuda_backend *cb, scratch *s, size_t bytes, GError **error)
{
    return scratch_grow(cb, s, bytes, bytes < 4096 ? 4096 : bytes + bytes / 4, error);
}

/* Scratch of one size for good (the staging buffer, used in STAGE_BYTES pieces): exactly that;
 * the quarter more had held 8 MiB that nothing used through every job's peak. (The GEMM
 * workspace keeps its quarter: cuBLASLt is offered all of it, and its picks depend on it.) */
static bool scratch_fixed(cuda_backend *cb, scratch *s, size_t bytes, GError **error)
{
    return scratch_grow(cb, s, bytes, bytes, error);
}

static void scratch_release(cuda_backend *cb, scratch *s)
{
    dev_free(cb, BUCKET_SCRATCH, s->ptr, s->cap, NULL);
    s->ptr = NULL;
    s->cap = 0;
}

/* ---------------------------------------------------------------- metadata upload */

/* Host-side builder for the small integer arrays an op needs; 16-byte aligned parts. */
typedef struct {
    GByteArray *b;
} meta_pack;

static size_t meta_add(meta_pack *m, const void *data, size_t bytes)
{
    static const uint8_t zero[16];
    size_t pad = (16 - m->b->len % 16) % 16;
    g_byte_array_append(m->b, zero, (guint)pad);
    size_t off = m->b->len;
    if (bytes) g_byte_array_append(m->b, data, (guint)bytes);
    return off;
}

/* Copies metadata to the device buffer dst through the pinned ring, so the copy is
 * asynchronous (a pageable copy would wait for the stream). Bytes equal to what dst
 * holds already are not sent again: every layer of a prefill chunk uploads the same
 * positions and the same attention work list, and each copy on the stream is a gap
 * between two kernels (48 copies a chunk before). dst is only written here, in stream
 * order, so what it last received is what the next kernel reads. */
static bool meta_upload_to(cuda_backend *cb, scratch *dst, meta_held *held, const void *data, size_t bytes,
                           GError **error)
{
    if (!bytes) return true;
    if (!cb->capturing && held->len == bytes && memcmp(held->bytes, data, bytes) == 0) return true;
    held->len = 0;   /* unknown until the copy below is queued */
    if (!scratch_need(cb, dst, bytes, error)) return false;
    bool ok;
    if (bytes > PIN_HALF || !cb->pin) {
        ok = ck(cudaMemcpyAsync(dst->ptr, data, bytes, cudaMemcpyHostToDevice, cb->stream), N_("metadata copy"), error);
    } else {
        if (cb->pin_used + bytes > PIN_HALF) {
            /* Switch halves: the other half's copies were queued long ago; wait for them. */
            if (!ck(cudaEventRecord(cb->pin_done[cb->pin_half], cb->stream), N_("event record"), error)) return false;
            cb->pin_half ^= 1;
            cb->pin_used = 0;
            if (!ck(cudaEventSynchronize(cb->pin_done[cb->pin_half]), N_("event synchronize"), error)) return false;
        }
        uint8_t *src = cb->pin + (size_t)cb->pin_half * PIN_HALF + cb->pin_used;
        memcpy(src, data, bytes);
        cb->pin_used += (bytes + 15) & ~(size_t)15;
        ok = ck(cudaMemcpyAsync(dst->ptr, src, bytes, cudaMemcpyHostToDevice, cb->stream), N_("metadata copy"), error);
    }
    if (!ok || cb->capturing) return ok;
    if (held->cap < bytes) {
        g_free(held->bytes);
        held->bytes = g_malloc(bytes);
        held->cap = bytes;
    }
    memcpy(held->bytes, data, bytes);
    held->len = bytes;
    return true;
}

static bool meta_upload(cuda_backend *cb, const void *data, size_t bytes, GError **error)
{
    return meta_upload_to(cb, &cb->meta, &cb->meta_held, data, bytes, error);
}

static inline void *meta_ptr(cuda_backend *cb, size_t off) { return (uint8_t *)cb->meta.ptr + off; }
static inline void *bound_ptr(cuda_backend *cb, size_t off) { return (uint8_t *)cb->dmeta.ptr + off; }

/* ---------------------------------------------------------------- buffers */

static hk_dtype buf_t(const cuda_backend *cb, const hyocr_buf *b)
{
    return b->kind == HYOCR_BUF_F32 ? HK_F32 : cb->act;
}

static inline void *at(const hyocr_buf *b, size_t off) { return (uint8_t *)b->data + off * (size_t)b->elem_size; }

static hyocr_buf *cuda_alloc(hyocr_backend *be, hyocr_buf_kind kind, size_t n, GError **error)
{
    cuda_backend *cb = CB(be);
    if (kind == HYOCR_BUF_WEIGHT_BF16) kind = HYOCR_BUF_WEIGHT;   /* converted like any weight (bf16_elem 2) */
    if ((int)kind < 0 || kind > HYOCR_BUF_KV) {
        invalid(error, _("unknown buffer kind %d"), (int)kind);
        return NULL;
    }
    int es = kind == HYOCR_BUF_F32 ? 4 : 2;
    if (n > (size_t)INT64_MAX / 8) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                    _("CUDA backend: cannot allocate %zu elements: the size overflows"), n);
        return NULL;
    }
    size_t bytes = n * (size_t)es;
    /* not while capturing: the allocation would become a node of the graph */
    bool main = !cb->on_side && cb->ordered_main && !cb->capturing && (kind == HYOCR_BUF_ACT || kind == HYOCR_BUF_F32);
    bool ordered = cb->on_side || main;
    void *p = dev_alloc(cb, (int)kind, bytes, ordered, error);
    if (!p) return NULL;
    /* Zeroed like the CPU backend's buffers, so nothing reads garbage. */
    if (!ck(cudaMemsetAsync(p, 0, bytes ? bytes : 1, cb->stream), N_("memset"), error)) {
        dev_free(cb, (int)kind, p, bytes, ordered ? cb->stream : NULL);
        return NULL;
    }
    cuda_buf *cbuf = g_new0(cuda_buf, 1);
    hyocr_buf *b = &cbuf->base;
    cbuf->ordered = ordered;
    cbuf->main = main;
    b->kind = kind;
    b->elem_size = es;
    b->n = n;
    b->data = p;
    return b;
}

static void cuda_buf_free(hyocr_backend *be, hyocr_buf *b)
{
    if (!b) return;
    cuda_backend *cb = CB(be);
    /* A stream-ordered buffer is given back in the current stream's order (the side
     * lane's work that read it is done by the time the main lane frees it), the main
     * lane's own in the main stream's (only that lane reads them); any other may still be
     * read by queued kernels, so wait first. */
    const cuda_buf *cbuf = (const cuda_buf *)b;
    if (!cbuf->ordered) {
        cudaStreamSynchronize(cb->stream);
        hyocr_cuda_profile_resolve(cb->prof);
    }
    cudaStream_t order = !cbuf->ordered ? NULL : cbuf->main && cb->on_side ? cb->other.stream : cb->stream;
    dev_free(cb, (int)b->kind, b->data, b->n * (size_t)b->elem_size, order);
    g_free(b);
}

/* ---------------------------------------------------------------- transfers */

static bool cuda_upload_weight(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const hyocr_tensor *t,
                               GError **error)
{
    cuda_backend *cb = CB(be);
    const char *name = t && t->name ? t->name : "(unnamed)";
    if (!t || (t->dtype != HYOCR_DTYPE_F32 && t->dtype != HYOCR_DTYPE_F16 && t->dtype != HYOCR_DTYPE_BF16)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("CUDA backend: tensor %s%s%s: only F32, F16 and BF16 weights can be loaded; the checkpoint has another "
                      "type"), name,
                    t && t->file ? _(" in ") : "", t && t->file ? t->file : "");
        return false;
    }
    size_t esz = t->dtype == HYOCR_DTYPE_F32 ? 4 : 2, n = 1;
    bool bad = t->n_dims < 0 || t->n_dims > HYOCR_MAX_DIMS;
    for (int i = 0; !bad && i < t->n_dims; i++) {
        bad = t->shape[i] < 0 || (t->shape[i] > 0 && n > SIZE_MAX / esz / (size_t)t->shape[i]);
        n *= bad ? 1 : (size_t)t->shape[i];
    }
    if (bad || n * esz > t->nbytes || (n > 0 && !t->data)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CHECKPOINT,
                    _("CUDA backend: tensor %s%s%s: its shape does not fit the %zu bytes stored; the file is damaged: download "
                      "the model again"), name,
                    t->file ? _(" in ") : "", t->file ? t->file : "", t->nbytes);
        return false;
    }
    if (dst_off > SIZE_MAX - n || !need("upload_weight", name, dst, dst_off + n, error)) return false;
    hk_dtype st = t->dtype == HYOCR_DTYPE_F32 ? HK_F32 : t->dtype == HYOCR_DTYPE_F16 ? HK_F16 : HK_BF16;
    hk_dtype dt = buf_t(cb, dst);
    if (n && !scratch_fixed(cb, &cb->stage, STAGE_BYTES, error)) return false;
    /* Raw bytes to the device, converted there; the pageable copy waits for the
     * previous chunk's conversion, so one staging buffer suffices. */
    size_t chunk = STAGE_BYTES / esz;
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        if (!ck(cudaMemcpyAsync(cb->stage.ptr, (const uint8_t *)t->data + i * esz, m * esz, cudaMemcpyHostToDevice,
                                cb->stream), N_("weight upload"), error) ||
            !ck(hk_convert(cb->stream, at(dst, dst_off + i), dt, cb->stage.ptr, st, m), N_("weight conversion"), error))
            return false;
    }
    return true;
}

/* fp32 → fp16 on the host exactly as the device's conversion (cvt.rn.f16.f32: round to
 * nearest even, subnormal results kept, every NaN to 0x7fff), where F16C makes it cheap:
 * a large upload to an fp16 buffer then sends half the bytes and needs no conversion
 * pass on the device. /backend-cuda/upload_large holds the two paths to the same bits. */
#if defined(__x86_64__) && defined(__GNUC__)
#define HOST_F16 1
__attribute__((target("avx,f16c"))) static uint16_t f16_one(float v)
{
    return v != v ? 0x7fff : _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* Streaming stores: the pinned ring is not read back by the CPU, and a plain store would
 * first read every line it writes (the copy is memory bound: ~15-25 GB/s on the H200's host). */
__attribute__((target("avx,f16c"))) static void f16_from_f32(uint16_t *d, const float *s, size_t n)
{
    const __m128i canon = _mm_set1_epi16(0x7fff);
    size_t i = 0;
    for (; i < n && (uintptr_t)(d + i) % 16; i++) d[i] = f16_one(s[i]);
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(s + i);
        __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        __m128i m = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extractf128_si256(nan, 1));
        _mm_stream_si128((__m128i *)(d + i), _mm_blendv_epi8(h, canon, m));
    }
    for (; i < n; i++) d[i] = f16_one(s[i]);
    _mm_sfence();
}

static bool host_f16_ok(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}
#else
#define HOST_F16 0
static void f16_from_f32(uint16_t *d, const float *s, size_t n)
{
    (void)d, (void)s, (void)n;
    g_assert_not_reached();
}

static bool host_f16_ok(void)
{
    return false;
}
#endif

/* A pageable source copies at a few GB/s and waits for the stream; so large
 * uploads are copied into a pinned ring by a few threads, each half's transfer
 * overlapping the copy into the other. */
typedef struct {
    GMutex lock;
    GCond  cond;
    int    left;
} up_join;

typedef struct {
    void        *dst;
    const float *src;
    size_t       n;     /* values */
    bool         f16;   /* converted to fp16 on the way, else copied */
    up_join     *join;
} up_slice;

static void up_copy(gpointer data, gpointer unused)
{
    up_slice *t = data;
    if (t->f16) f16_from_f32(t->dst, t->src, t->n);
    else memcpy(t->dst, t->src, t->n * 4);
    g_mutex_lock(&t->join->lock);
    if (--t->join->left == 0) g_cond_signal(&t->join->cond);
    g_mutex_unlock(&t->join->lock);
}

/* The ring and the threads, on the first large upload; false: use the pageable path. */
static bool up_ready(cuda_backend *cb)
{
    if (cb->up_pin) return true;
    if (!cb->up_done[0] && (cudaEventCreateWithFlags(&cb->up_done[0], cudaEventDisableTiming) != cudaSuccess ||
                            cudaEventCreateWithFlags(&cb->up_done[1], cudaEventDisableTiming) != cudaSuccess)) {
        cudaGetLastError();
        return false;
    }
    void *p = NULL;
    if (cudaHostAlloc(&p, 2 * (size_t)UP_HALF, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    cb->up_pin = p;
    cb->up_f16 = host_f16_ok();
    cb->up_threads = CLAMP((int)g_get_num_processors() / 2, 1, 8);
    if (cb->up_threads > 1)
        cb->up_pool = g_thread_pool_new(up_copy, NULL, cb->up_threads - 1, TRUE, NULL);
    if (!cb->up_pool) cb->up_threads = 1;
    return true;
}

/* n values from src into the pinned dst, by the ring's threads (as fp16 where f16). */
static void up_fill(cuda_backend *cb, void *dst, const float *src, size_t n, bool f16)
{
    enum { MAX_SLICES = 8 };
    up_join join = { .left = 0 };
    up_slice sl[MAX_SLICES];
    int k = MIN(cb->up_threads, MAX_SLICES);
    size_t per = (n / (size_t)k + 31) & ~(size_t)31;
    g_mutex_init(&join.lock);
    g_cond_init(&join.cond);
    int used = 0;
    for (size_t off = 0; off < n; off += per, used++)
        sl[used] = (up_slice){ (uint8_t *)dst + off * (f16 ? 2 : 4), src + off, MIN(per, n - off), f16, &join };
    join.left = used;
    for (int i = 1; i < used; i++) g_thread_pool_push(cb->up_pool, &sl[i], NULL);
    if (used) up_copy(&sl[0], NULL);
    g_mutex_lock(&join.lock);
    while (join.left > 0) g_cond_wait(&join.cond, &join.lock);
    g_mutex_unlock(&join.lock);
    g_mutex_clear(&join.lock);
    g_cond_clear(&join.cond);
}

/* n floats to dst (device, type dt) through the ring: an F32 destination takes the
 * transfer directly, so does an F16 one converted on the host (up_f16), others the
 * matching half of the device stage, converted there. */
static bool upload_pinned(cuda_backend *cb, void *dst, int esz, hk_dtype dt, const float *src, size_t n,
                          GError **error)
{
    const bool f16 = dt == HK_F16 && cb->up_f16 && HOST_F16;
    const int tb = f16 ? 2 : 4;   /* bytes a value takes in the ring */
    size_t chunk = UP_HALF / 4;
    for (size_t i = 0, k = 0; i < n; i += chunk, k++) {
        size_t m = MIN(chunk, n - i);
        int h = (int)(k & 1);
        uint8_t *pin = cb->up_pin + (size_t)h * UP_HALF;
        bool direct = dt == HK_F32 || f16;
        void *to = direct ? (uint8_t *)dst + i * (size_t)esz : (uint8_t *)cb->stage.ptr + (size_t)h * UP_HALF;
        /* the transfer from this half two chunks ago must be done before it is refilled */
        if (!ck(cudaEventSynchronize(cb->up_done[h]), N_("upload"), error)) return false;
        up_fill(cb, pin, src + i, m, f16);
        if (!ck(cudaMemcpyAsync(to, pin, m * tb, cudaMemcpyHostToDevice, cb->stream), N_("upload"), error) ||
            !ck(cudaEventRecord(cb->up_done[h], cb->stream), N_("upload"), error))
            return false;
        if (!direct &&
            !ck(hk_convert(cb->stream, (uint8_t *)dst + i * (size_t)esz, dt, to, HK_F32, m), N_("conversion"), error))
            return false;
    }
    return true;
}

/* Whether src is pinned host memory (host_alloc's: a page's pixels from the engine's pool). */
static bool host_pinned(const void *src)
{
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, src) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return at.type == cudaMemoryTypeHost;
}

/* From pinned memory the copies (and the conversion on the device) are queued and the host
 * goes on: src must stay untouched until the next wait, as for write_bytes. From pageable
 * memory a large upload goes through the pinned ring, which the host fills first. */
static bool cuda_upload_f32(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const float *src, size_t n,
                            GError **error)
{
    cuda_backend *cb = CB(be);
    if (dst_off > SIZE_MAX - n || !need("upload_f32", "dst", dst, dst_off + n, error)) return false;
    if (!n) return true;
    bool f32 = dst->kind == HYOCR_BUF_F32;
    if (!f32 && !scratch_fixed(cb, &cb->stage, STAGE_BYTES, error)) return false;
    if (n * 4 >= UP_MIN && !cb->capturing && !host_pinned(src) && up_ready(cb))
        return upload_pinned(cb, at(dst, dst_off), dst->elem_size, buf_t(cb, dst), src, n, error);
    if (f32)
        return ck(cudaMemcpyAsync(at(dst, dst_off), src, n * 4, cudaMemcpyHostToDevice, cb->stream), N_("upload"), error);
    size_t chunk = STAGE_BYTES / 4;
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        if (!ck(cudaMemcpyAsync(cb->stage.ptr, src + i, m * 4, cudaMemcpyHostToDevice, cb->stream), N_("upload"), error) ||
            !ck(hk_convert(cb->stream, at(dst, dst_off + i), buf_t(cb, dst), cb->stage.ptr, HK_F32, m), N_("conversion"),
                error))
            return false;
    }
    return true;
}

static bool cuda_download_f32(hyocr_backend *be, const hyocr_buf *src, size_t src_off, float *dst, size_t n,
                              GError **error)
{
    cuda_backend *cb = CB(be);
    if (src_off > SIZE_MAX - n || !need("download_f32", "src", src, src_off + n, error)) return false;
    if (!n) return ck(cudaStreamSynchronize(cb->stream), N_("stream synchronize"), error);
    if (src->kind == HYOCR_BUF_F32)
        return ck(cudaMemcpyAsync(dst, at(src, src_off), n * 4, cudaMemcpyDeviceToHost, cb->stream), N_("download"),
                  error) &&
               ck(cudaStreamSynchronize(cb->stream), N_("download"), error) &&
               (hyocr_cuda_profile_resolve(cb->prof), true);
    if (!scratch_fixed(cb, &cb->stage, STAGE_BYTES, error)) return false;
    size_t chunk = STAGE_BYTES / 4;
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        if (!ck(hk_convert(cb->stream, cb->stage.ptr, HK_F32, at(src, src_off + i), buf_t(cb, src), m), N_("conversion"),
                error) ||
            !ck(cudaMemcpyAsync(dst + i, cb->stage.ptr, m * 4, cudaMemcpyDeviceToHost, cb->stream), N_("download"), error) ||
            !ck(cudaStreamSynchronize(cb->stream), N_("download"), error))
            return false;
    }
    return true;
}

static bool cuda_copy(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, const hyocr_buf *src, size_t src_off,
                      size_t n, GError **error)
{
    cuda_backend *cb = CB(be);
    if (dst_off > SIZE_MAX - n || src_off > SIZE_MAX - n || !need("copy", "dst", dst, dst_off + n, error) ||
        !need("copy", "src", src, src_off + n, error))
        return false;
    if (!n) return true;
    hk_dtype dt = buf_t(cb, dst), st = buf_t(cb, src);
    if (dt == st)
        return ck(cudaMemcpyAsync(at(dst, dst_off), at(src, src_off), n * (size_t)dst->elem_size,
                                  cudaMemcpyDeviceToDevice, cb->stream), N_("copy"), error);
    return ck(hk_convert(cb->stream, at(dst, dst_off), dt, at(src, src_off), st, n), N_("copy"), error);
}

/* ---------------------------------------------------------------- matmul */

/* One cached cuBLASLt configuration per shape, output type and pointer alignment. */
typedef struct {
    int      M, N, K;
    int      ot, has_bias;
    int      align_a, align_b, align_d;
} plan_key;

typedef struct {
    cublasLtMatmulDesc_t   desc;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t   algo;
    bool                   ok;   /* false: no Lt algorithm, use cublasGemmEx */
} plan;

static guint plan_hash(gconstpointer p)
{
    const uint8_t *b = p;
    guint h = 2166136261u;
    for (size_t i = 0; i < sizeof(plan_key); i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean plan_equal(gconstpointer a, gconstpointer b) { return memcmp(a, b, sizeof(plan_key)) == 0; }

static void plan_free(gpointer p)
{
    plan *pl = p;
    if (pl->desc) cublasLtMatmulDescDestroy(pl->desc);
    if (pl->la) cublasLtMatrixLayoutDestroy(pl->la);
    if (pl->lb) cublasLtMatrixLayoutDestroy(pl->lb);
    if (pl->ld) cublasLtMatrixLayoutDestroy(pl->ld);
    g_free(pl);
}

static int ptr_align(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    int a = 1;
    while (a < 256 && !(v & (uintptr_t)a)) a <<= 1;
    return a;
}

static cudaDataType_t cuda_type(hk_dtype t)
{
    return t == HK_F32 ? CUDA_R_32F : t == HK_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* Builds the Lt description of D[N×M] (column-major) = op(A = w)ᵀ·B (x): the
 * row-major out[M,N] = x·wᵀ seen from cuBLAS' column-major side. */
static plan *plan_build(cuda_backend *cb, const plan_key *k)
{
    plan *pl = g_new0(plan, 1);
    cudaDataType_t ct = cuda_type(cb->act), dt = cuda_type((hk_dtype)k->ot);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref = NULL;
    size_t ws = cb->lt_ws.cap;
    uint32_t aa = (uint32_t)k->align_a, ab = (uint32_t)k->align_b, ad = (uint32_t)k->align_d;
    int n_res = 0;
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    bool ok = cublasLtMatmulDescCreate(&pl->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == 0 &&
              cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == 0 &&
              cublasLtMatrixLayoutCreate(&pl->la, ct, (uint64_t)k->K, (uint64_t)k->N, k->K) == 0 &&
              cublasLtMatrixLayoutCreate(&pl->lb, ct, (uint64_t)k->K, (uint64_t)k->M, k->K) == 0 &&
              cublasLtMatrixLayoutCreate(&pl->ld, dt, (uint64_t)k->N, (uint64_t)k->M, k->N) == 0;
    if (ok && k->has_bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        ok = cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0 &&
             cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &dt, sizeof dt) == 0;
    }
    ok = ok && cublasLtMatmulPreferenceCreate(&pref) == 0 &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) == 0 &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa) == 0 &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab) == 0 &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ad, sizeof ad) == 0 &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ad, sizeof ad) == 0 &&
         cublasLtMatmulAlgoGetHeuristic(cb->lt, pl->desc, pl->la, pl->lb, pl->ld, pl->ld, pref, 1, &res, &n_res) == 0 &&
         n_res > 0;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    pl->ok = ok;
    if (ok) pl->algo = res.algo;
    return pl;
}

static plan *plan_get(cuda_backend *cb, const plan_key *k)
{
    plan *pl = g_hash_table_lookup(cb->plans, k);
    if (pl) return pl;
    if (g_hash_table_size(cb->plans) >= PLAN_CACHE_MAX) g_hash_table_remove_all(cb->plans);
    pl = plan_build(cb, k);
    g_hash_table_insert(cb->plans, g_memdup2(k, sizeof *k), pl);
    return pl;
}

/* Legacy path when Lt has no algorithm for the combination: GemmEx, then the bias. */
static bool gemm_fallback(cuda_backend *cb, void *out, hk_dtype ot, const void *x, const void *w, const void *bias,
                          int M, int N, int K, GError **error)
{
    const float one = 1.0f, zero = 0.0f;
    cudaDataType_t ct = cuda_type(cb->act);
    if (!ck_blas(cublasGemmEx(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, ct, K, x, ct, K, &zero, out,
                              cuda_type(ot), N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), "cublasGemmEx", error))
        return false;
    return !bias || ck(hk_bias_add(cb->stream, out, ot, bias, ot, M, N), N_("bias add"), error);
}

/* The column groups a CTA of a product of 2..16 rows (hk_gemm_rows_ex, HYOCR_ROWS_WIDE): the
 * card's rule unless switched off (q|k|v and gate|up share their normalised rows over 16
 * columns), or the forced count. They depend on N only, never on M or the mode, and never change
 * the bits: a row's stay those of any step, and the fused products those of the unfused ones. */
static int rows_groups(const cuda_backend *cb, int N)
{
    return cb->rows_wide < 0 ? 1 : cb->rows_wide > 1 ? cb->rows_wide : hk_gemm_rows_groups(N, cb->sm_count);
}

/* hk_gemm_rows_ex in that layout. */
static bool rows_product(cuda_backend *cb, int mode, void *out, hk_dtype ot, const void *x, float *res, const void *nw,
                         hk_dtype nwt, float eps, const void *w, int M, int N, int K, int pdl, const char *what,
                         GError **error)
{
    return ck(hk_gemm_rows_ex(cb->stream, cb->act, mode, out, ot, x, res, nw, nwt, eps, w, M, N, K, pdl,
                              rows_groups(cb, N)),
              what, error);
}

/* Decode-sized products are memory bound (the weights are read once) and cuBLAS
 * reads the weights below memory speed there. Single rows go to hk_gemv (batch 1
 * decode +5 %); from 2 rows on cuBLAS beat that CUDA-core kernel (H200, session 2:
 * git show 5acdb8e:bench/results/2026-12-02-h200-s2/README.md), and 2..16 rows
 * (batched decode, the speculative verify step) go to the tensor-core hk_gemm_rows
 * instead (cuBLAS measured 13–18 µs a product there where one row takes hk_gemv ~8). */
#define GEMV_ROWS 1

/* Whether a product of M rows goes to the one-row CUDA-core kernels (hk_gemv, hk_gemv1). Not
 * in the invariant mode: there a row's sums must be hk_gemm_rows's, the order a verify step's
 * rows get, so that speculation's tokens are plain decoding's bit for bit. */
static bool one_row(const cuda_backend *cb, int M)
{
    return M <= GEMV_ROWS && !cb->invariant;
}

static bool gemv_fits(const cuda_backend *cb, const hyocr_buf *x, const void *xp, const void *wp, const void *bp, int M,
                      int K)
{
    return cb->gemv && !bp && x->kind != HYOCR_BUF_F32 && ptr_align(xp) >= 16 && ptr_align(wp) >= 16 &&
           (one_row(cb, M) ? K % 8 == 0 : M <= HK_GEMM_ROWS_MAX && K % 32 == 0);
}

static bool cuda_matmul(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, const hyocr_buf *w, size_t w_off,
                        const hyocr_buf *bias, int M, int N, int K, GError **error)
{
    cuda_backend *cb = CB(be);
    if (M < 0 || N < 0 || K < 0) return invalid(error, _("matmul: negative dimension (%d, %d, %d)"), M, N, K);
    if (!need("matmul", "out", out, (size_t)M * N, error) || !need("matmul", "x", x, (size_t)M * K, error) ||
        !need("matmul", "w", w, w_off + (size_t)N * K, error) ||
        (bias && !need("matmul", "bias", bias, (size_t)N, error)))
        return false;
    if (w->kind == HYOCR_BUF_F32)
        return invalid(error, _("matmul: weights in an F32 buffer are not supported (upload them as WEIGHT)"));
    if (M == 0 || N == 0) return true;
    hk_dtype ot = buf_t(cb, out);
    const void *xp = x->data, *bp = bias ? bias->data : NULL;
    /* cuBLAS wants A and B of one type, and the epilogue bias of D's type. */
    if (x->kind == HYOCR_BUF_F32) {
        if (!scratch_need(cb, &cb->conv_x, (size_t)M * K * 2, error) ||
            !ck(hk_convert(cb->stream, cb->conv_x.ptr, cb->act, x->data, HK_F32, (size_t)M * K), N_("conversion"), error))
            return false;
        xp = cb->conv_x.ptr;
    }
    if (bias && buf_t(cb, bias) != ot) {
        if (!scratch_need(cb, &cb->conv_bias, (size_t)N * 4, error) ||
            !ck(hk_convert(cb->stream, cb->conv_bias.ptr, ot, bias->data, buf_t(cb, bias), (size_t)N), N_("conversion"),
                error))
            return false;
        bp = cb->conv_bias.ptr;
    }
    if (K == 0) {
        if (!ck(cudaMemsetAsync(out->data, 0, (size_t)M * N * out->elem_size, cb->stream), N_("memset"), error)) return false;
        return !bp || ck(hk_bias_add(cb->stream, out->data, ot, bp, ot, M, N), N_("bias add"), error);
    }
    const void *wp = at(w, w_off);
    /* One row and many outputs (the head): hk_gemv1 sums in hk_gemv's order there (one
     * warp per output) and, launched as a programmatic dependent, starts streaming the
     * weights while the kernel before it (the final norm) finishes. */
    if (gemv_fits(cb, x, xp, wp, bp, M, K) && one_row(cb, M) && N > 2048)
        return ck(hk_gemv1(cb->stream, cb->act, HK_GEMV_PLAIN, out->data, ot, xp, NULL, NULL, HK_F32, 0.0f, wp, N, K,
                           cb->pdl), "gemv", error);
    if (gemv_fits(cb, x, xp, wp, bp, M, K) && one_row(cb, M))
        return ck(hk_gemv(cb->stream, cb->act, out->data, ot, xp, wp, M, N, K), "gemv", error);
    /* As a programmatic dependent it reads its first weights before the kernel before
     * has finished: only where they are constant. */
    if (gemv_fits(cb, x, xp, wp, bp, M, K))
        return rows_product(cb, HK_GEMV_PLAIN, out->data, ot, xp, NULL, NULL, HK_F32, 0.0f, wp, M, N, K,
                            cb->pdl && w->kind == HYOCR_BUF_WEIGHT, "gemm_rows", error);
    plan_key k;
    memset(&k, 0, sizeof k);
    k = (plan_key){ M, N, K, ot, bp != NULL, ptr_align(wp), ptr_align(xp), ptr_align(out->data) };
    if (bp && ptr_align(bp) < k.align_d) k.align_d = ptr_align(bp);
    plan *pl = plan_get(cb, &k);
    if (pl->ok) {
        const float one = 1.0f, zero = 0.0f;
        if (bp && cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp) != 0)
            return ck_blas(CUBLAS_STATUS_INTERNAL_ERROR, N_("cuBLASLt bias pointer"), error);
        cublasStatus_t s = cublasLtMatmul(cb->lt, pl->desc, &one, wp, pl->la, xp, pl->lb, &zero, out->data, pl->ld,
                                          out->data, pl->ld, &pl->algo, cb->lt_ws.ptr, cb->lt_ws.cap, cb->stream);
        if (s == CUBLAS_STATUS_SUCCESS) return true;
        if (s != CUBLAS_STATUS_NOT_SUPPORTED) return ck_blas(s, "cublasLtMatmul", error);
        pl->ok = false;
    }
    return gemm_fallback(cb, out->data, ot, xp, wp, bp, M, N, K, error);
}

/* The fused products: one row through hk_gemv1, 2..16 rows (batched decode, the verify
 * step) through hk_gemm_rows's modes, which give the bits of the unfused ops (their
 * products go through hk_gemm_rows too). The model fuses steps of up to cuda_fused_rows
 * rows, so what the checks below refuse it never asks for. */
#define FUSED1_MAX_K 8192   /* hk_gemv1 holds a normalised row in shared memory */

static int cuda_fused_rows(hyocr_backend *be, int K, bool norm)
{
    if (K <= 0 || K % 8 || (norm && K > FUSED1_MAX_K)) return 0;
    /* HYOCR_NO_GEMV: the unfused products of several rows are cuBLAS's, whose sums differ;
     * the invariant mode has no one-row kernels to fall back on */
    if (!CB(be)->gemv || K % 32 || (norm && K > HK_GEMM_ROWS_NORM_MAX_K)) return CB(be)->invariant ? 0 : 1;
    return HK_GEMM_ROWS_MAX;
}

static bool fused_args(const cuda_backend *cb, const char *op, const hyocr_buf *f32, const char *f32_name,
                       const hyocr_buf *w, const hyocr_buf *x, const hyocr_buf *norm_w, int M, int N, int K,
                       GError **error)
{
    const bool one = one_row(cb, M);
    if (M < 1 || M > HK_GEMM_ROWS_MAX || N < 0 || K <= 0 || K % (one ? 8 : 32))
        return invalid(error,
                       _("%s: the CUDA version takes 1 to %d rows and K a positive multiple of 8 (of 32 for more "
                         "than one row); got %d×%d×%d"),
                       op, HK_GEMM_ROWS_MAX, M, N, K);
    if (f32->kind != HYOCR_BUF_F32) return invalid(error, _("%s: buffer '%s' must be F32"), op, f32_name);
    if (w->kind == HYOCR_BUF_F32) return invalid(error, _("%s: weights in an F32 buffer are not supported"), op);
    if (x && !need_act(op, "x", x, error)) return false;
    /* several rows read the residual and the norm weight in 16-byte loads */
    if (ptr_align(w->data) < 16 || (x && ptr_align(x->data) < 16) ||
        (!one && (ptr_align(f32->data) < 16 || (norm_w && ptr_align(norm_w->data) < 16))))
        return invalid(error, _("%s: operands must be 16-byte aligned"), op);
    const int max_k = one ? FUSED1_MAX_K : HK_GEMM_ROWS_NORM_MAX_K;
    if (norm_w && K > max_k)
        return invalid(error, _("%s: K = %d is over the %d the CUDA version holds for %d rows"), op, K, max_k, M);
    return true;
}

static bool cuda_norm_matmul(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *residual, const hyocr_buf *norm_w,
                             float eps, const hyocr_buf *w, int M, int N, int K, bool glu, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!need("norm_matmul", "out", out, (size_t)M * N, error) ||
        !need("norm_matmul", "residual", residual, (size_t)M * K, error) ||
        !need("norm_matmul", "norm weight", norm_w, (size_t)K, error) ||
        !need("norm_matmul", "w", w, (size_t)(glu ? 2 : 1) * N * K, error) ||
        !fused_args(cb, "norm_matmul", residual, "residual", w, NULL, norm_w, M, N, K, error))
        return false;
    const int mode = glu ? HK_GEMV_NORM_GLU : HK_GEMV_NORM;
    if (one_row(cb, M))
        return ck(hk_gemv1(cb->stream, cb->act, mode, out->data, buf_t(cb, out), NULL, residual->data, norm_w->data,
                           buf_t(cb, norm_w), eps, w->data, N, K, cb->pdl),
                  "norm_matmul", error);
    return rows_product(cb, mode, out->data, buf_t(cb, out), NULL, residual->data, norm_w->data, buf_t(cb, norm_w), eps,
                        w->data, M, N, K, cb->pdl && w->kind == HYOCR_BUF_WEIGHT, "norm_matmul", error);
}

static bool cuda_matmul_residual(hyocr_backend *be, hyocr_buf *residual, const hyocr_buf *x, const hyocr_buf *w, int M,
                                 int N, int K, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!need("matmul_residual", "residual", residual, (size_t)M * N, error) ||
        !need("matmul_residual", "x", x, (size_t)M * K, error) ||
        !need("matmul_residual", "w", w, (size_t)N * K, error) ||
        !fused_args(cb, "matmul_residual", residual, "residual", w, x, NULL, M, N, K, error))
        return false;
    if (one_row(cb, M))
        return ck(hk_gemv1(cb->stream, cb->act, HK_GEMV_RESIDUAL, NULL, HK_F32, x->data, residual->data, NULL, HK_F32,
                           0.0f, w->data, N, K, cb->pdl),
                  "matmul_residual", error);
    return rows_product(cb, HK_GEMV_RESIDUAL, NULL, HK_F32, x->data, residual->data, NULL, HK_F32, 0.0f, w->data, M, N,
                        K, cb->pdl && w->kind == HYOCR_BUF_WEIGHT, "matmul_residual", error);
}

/* ---------------------------------------------------------------- norms, pointwise */

static bool cuda_add_layernorm(hyocr_backend *be, hyocr_buf *out, hyocr_buf *residual, const hyocr_buf *delta,
                               const hyocr_buf *gamma, const hyocr_buf *beta, int M, int N, float eps, GError **error)
{
    cuda_backend *cb = CB(be);
    size_t mn = (size_t)M * N;
    if (M < 0 || N < 0) return invalid(error, _("add_layernorm: negative dimension (%d, %d)"), M, N);
    if (!need("add_layernorm", "out", out, mn, error) || !need("add_layernorm", "residual", residual, mn, error) ||
        (delta && !need("add_layernorm", "delta", delta, mn, error)) ||
        !need("add_layernorm", "gamma", gamma, (size_t)N, error) || !need("add_layernorm", "beta", beta, (size_t)N, error))
        return false;
    hk_dtype ot = buf_t(cb, out);
    return ck(hk_add_norm(cb->stream, out->data, ot, residual->data, buf_t(cb, residual), delta ? delta->data : NULL,
                          delta ? buf_t(cb, delta) : HK_F32, gamma->data, buf_t(cb, gamma), beta->data,
                          buf_t(cb, beta), M, N, eps, 1, ot), "add_layernorm", error);
}

static bool cuda_add_rmsnorm(hyocr_backend *be, hyocr_buf *out, hyocr_buf *residual, const hyocr_buf *delta,
                             const hyocr_buf *w, int M, int N, float eps, GError **error)
{
    cuda_backend *cb = CB(be);
    size_t mn = (size_t)M * N;
    if (M < 0 || N < 0) return invalid(error, _("add_rmsnorm: negative dimension (%d, %d)"), M, N);
    if (!need("add_rmsnorm", "out", out, mn, error) || !need("add_rmsnorm", "residual", residual, mn, error) ||
        (delta && !need("add_rmsnorm", "delta", delta, mn, error)) || !need("add_rmsnorm", "weight", w, (size_t)N, error))
        return false;
    hk_dtype ot = buf_t(cb, out);
    return ck(hk_add_norm(cb->stream, out->data, ot, residual->data, buf_t(cb, residual), delta ? delta->data : NULL,
                          delta ? buf_t(cb, delta) : HK_F32, w->data, buf_t(cb, w), NULL, HK_F32, M, N, eps, 0, ot),
              "add_rmsnorm", error);
}

static bool cuda_add(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *y, size_t n, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!need("add", "x", x, n, error) || !need("add", "y", y, n, error)) return false;
    return ck(hk_add(cb->stream, x->data, buf_t(cb, x), y->data, buf_t(cb, y), n), N_("add"), error);
}

static bool cuda_gelu(hyocr_backend *be, hyocr_buf *x, size_t n, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!need("gelu", "x", x, n, error)) return false;
    return ck(hk_gelu(cb->stream, x->data, buf_t(cb, x), n), "gelu", error);
}

static bool cuda_swiglu(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *gu, int M, int I, GError **error)
{
    cuda_backend *cb = CB(be);
    if (M < 0 || I < 0) return invalid(error, _("swiglu: negative dimension (%d, %d)"), M, I);
    if (!need("swiglu", "out", out, (size_t)M * I, error) || !need("swiglu", "gate_up", gu, (size_t)M * 2 * I, error))
        return false;
    return ck(hk_swiglu(cb->stream, out->data, buf_t(cb, out), gu->data, buf_t(cb, gu), M, I), "swiglu", error);
}

/* ---------------------------------------------------------------- vision helpers */

static bool cuda_posemb_add(hyocr_backend *be, hyocr_buf *x, const hyocr_buf *table, size_t table_row0, int edge,
                            int gh, int gw, int C, hyocr_posemb_interp interp, GError **error)
{
    cuda_backend *cb = CB(be);
    if (edge <= 0 || gh <= 0 || gw <= 0 || C <= 0)
        return invalid(error, _("posemb_add: invalid sizes edge %d, grid %d×%d, C %d"), edge, gh, gw, C);
    if (!need("posemb_add", "x", x, (size_t)gh * gw * C, error) ||
        !need("posemb_add", "table", table, (table_row0 + (size_t)edge * edge) * C, error))
        return false;
    bool copy = gh == edge && gw == edge;
    return ck(hk_posemb_add(cb->stream, x->data, buf_t(cb, x), at(table, table_row0 * C), buf_t(cb, table), edge, gh,
                            gw, C, hyocr_posemb_scale(gh, edge, copy, interp), hyocr_posemb_scale(gw, edge, copy, interp)),
              "posemb_add", error);
}

static bool cuda_merge_gather(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, int gh, int gw, int C,
                              GError **error)
{
    cuda_backend *cb = CB(be);
    if (gh <= 0 || gw <= 0 || C <= 0 || gh % 2 || gw % 2)
        return invalid(error, _("merge_gather: grid %d×%d (C %d) must be positive and even"), gh, gw, C);
    size_t n = (size_t)gh * gw * C;
    if (!need("merge_gather", "out", out, n, error) || !need("merge_gather", "x", x, n, error)) return false;
    return ck(hk_merge_gather(cb->stream, out->data, buf_t(cb, out), x->data, buf_t(cb, x), gh, gw, C), "merge_gather",
              error);
}

static bool cuda_append_newline(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *x, const hyocr_buf *newline,
                                int Hm, int Wm, int C, GError **error)
{
    cuda_backend *cb = CB(be);
    if (Hm < 0 || Wm < 0 || C < 0) return invalid(error, _("append_newline: negative dimension (%d, %d, %d)"), Hm, Wm, C);
    if (!need("append_newline", "out", out, (size_t)Hm * (Wm + 1) * C, error) ||
        !need("append_newline", "x", x, (size_t)Hm * Wm * C, error) ||
        !need("append_newline", "newline", newline, (size_t)C, error))
        return false;
    return ck(hk_append_newline(cb->stream, out->data, buf_t(cb, out), x->data, buf_t(cb, x), newline->data,
                                buf_t(cb, newline), Hm, Wm, C), "append_newline", error);
}

static bool cuda_embed(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *table, const int32_t *ids, int n, int C,
                       GError **error)
{
    cuda_backend *cb = CB(be);
    if (n < 0 || C <= 0 || (n > 0 && !ids)) return invalid(error, _("embed: invalid arguments (%d ids, width %d)"), n, C);
    if (!need("embed", "out", out, (size_t)n * C, error) || !need("embed", "table", table, (size_t)C, error))
        return false;
    size_t rows = table->n / (size_t)C;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= rows)
            return invalid(error, _("embed: token id %d at position %d is outside the embedding table (%zu rows); "
                             "the tokenizer and checkpoint do not match"), ids[i], i, rows);
    if (!n) return true;
    const int32_t *dev_ids;
    if (cb->bound) {
        if (n != cb->bound_rows) return invalid(error, _("embed: %d ids but the bound decode step has %d rows"), n,
                                                cb->bound_rows);
        dev_ids = bound_ptr(cb, cb->o_ids);
    } else {
        /* after the upload: it may have moved the metadata buffer */
        if (!meta_upload(cb, ids, (size_t)n * sizeof(int32_t), error)) return false;
        dev_ids = cb->meta.ptr;
    }
    return ck(hk_embed(cb->stream, out->data, buf_t(cb, out), table->data, buf_t(cb, table), dev_ids, n, C),
              "embed", error);
}

/* ---------------------------------------------------------------- attention */

static bool cuda_attention_full(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv, int n, int H, int D,
                                float scale, GError **error)
{
    cuda_backend *cb = CB(be);
    if (n < 0 || H <= 0 || D <= 0 || D > 256 || D % 8)
        return invalid(error, _("attention_full: unsupported shape n %d, heads %d, head dim %d (the CUDA kernels "
                         "take head dims up to 256 in steps of 8)"), n, H, D);
    if (!need("attention_full", "out", out, (size_t)n * H * D, error) ||
        !need("attention_full", "qkv", qkv, (size_t)n * 3 * H * D, error) ||
        !need_act("attention_full", "out", out, error) || !need_act("attention_full", "qkv", qkv, error))
        return false;
    if (n == 0) return true;
    if (D != 72 && D != 128)
        return ck(hk_attention_full_generic(cb->stream, cb->act, out->data, qkv->data, n, H, D, scale),
                  N_("attention_full (generic head dim)"), error);
    return ck(hk_attention_full(cb->stream, cb->act, out->data, qkv->data, n, H, D, scale, cb->wgmma,
                                cb->vis_lazy),
              "attention_full", error);
}

/* The model's table in the kernels' layout (hyocr_rope_params_init worked it out). */
static void rope_table(const hyocr_rope_params *rp, hk_rope *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->inv_freq, rp->inv_freq, sizeof(float) * (size_t)(rp->head_dim / 2));
    memcpy(out->axis, rp->axis, (size_t)rp->head_dim);
}

static bool cuda_rope_qknorm(hyocr_backend *be, hyocr_buf *qkv, int M, const int32_t *pos, int n_axes, int Hq, int Hkv,
                             const hyocr_rope_params *rope, const hyocr_buf *q_norm, const hyocr_buf *k_norm, float eps,
                             GError **error)
{
    cuda_backend *cb = CB(be);
    int axes;
    if (!hyocr_rope_check(be, "rope_qknorm", rope, M, pos, n_axes, Hq, Hkv, 1, HK_ROPE_MAX_DIM, &axes, error))
        return false;
    int D = rope->head_dim;
    if (!need("rope_qknorm", "qkv", qkv, (size_t)M * (Hq + 2 * Hkv) * D, error) ||
        !need("rope_qknorm", "q_norm", q_norm, (size_t)D, error) ||
        !need("rope_qknorm", "k_norm", k_norm, (size_t)D, error) || !need_act("rope_qknorm", "qkv", qkv, error))
        return false;
    if (M == 0) return true;
    hk_rope tab;
    rope_table(rope, &tab);
    const int32_t *dev_pos;
    if (cb->bound) {
        if (M != cb->bound_rows || n_axes != 1)
            return invalid(error, _("rope_qknorm: %d rows, %d axes but the bound decode step has %d rows, 1 axis"), M,
                           n_axes, cb->bound_rows);
        dev_pos = bound_ptr(cb, cb->o_pos);
    } else {
        if (!meta_upload_to(cb, &cb->pos, &cb->pos_held, pos, (size_t)n_axes * M * sizeof(int32_t), error))
            return false;
        dev_pos = cb->pos.ptr;
    }
    return ck(hk_rope_qknorm(cb->stream, qkv->data, cb->act, M, dev_pos, axes, Hq, Hkv, D, &tab, q_norm->data,
                             buf_t(cb, q_norm), k_norm->data, buf_t(cb, k_norm), eps, cb->bound && cb->pdl,
                             M <= 16 ? cb->rope_heads : 0),
              "rope_qknorm", error);
}

/* Work lists of one paged call: prefill tiles for multi-row sequences, context
 * splits for single-row (decode) sequences — or, in the invariant mode, a one-row
 * block each for the block kernel (as bound steps have them). */
typedef struct {
    GArray *seqs, *bt, *row_seq, *tiles, *splits, *blocks;
    GArray *pf_splits, *pf_merges;   /* split-KV prefill (pf_split_len > 0) instead of tiles */
    int     total_rows, parts, dec_rows, split_len, block_ctx, pf_split_len;
    hk_prefill_kind prefill;   /* the kernel of this call's prefill tiles */
} paged_plan;

static void paged_plan_clear(paged_plan *p)
{
    GArray *a[] = { p->seqs, p->bt, p->row_seq, p->tiles, p->splits, p->blocks, p->pf_splits, p->pf_merges };
    for (size_t i = 0; i < G_N_ELEMENTS(a); i++)
        if (a[i]) g_array_free(a[i], TRUE);
}

/* The split-KV prefill's CTAs an SM where HYOCR_PREFILL_SPLIT is unset. H200, session 8
 * (bench/results/2026-12-03-h200-s8 call 5): a 2048² page's prefill 31.9 → 28.2 ms with the
 * 32 MiB partials, whose +34 MB would have taken the page past its 2.4 GiB target; within
 * HK_PF_SPLIT_PART_MAX (6 MiB, in memplan.h's HYOCR_MEMPLAN_CUDA_BACKEND) only the short last
 * chunk splits (16 CTAs that each scanned every key become 80; the 1024-row chunks' 16 items
 * do not fit; prefill_bench's "MW2 s8 9M" row, where it splits in 16: 549 → 447 µs a layer).
 * The 1024-row chunks split too where their partials go to the layer's MLP buffers (pf_room,
 * the default since session 20). */
#define PF_SPLIT_DEFAULT HK_PF_SPLIT_PER_SM
/* rope_qknorm's heads a block for steps of up to 16 rows where HYOCR_ROPE_HEADS is unset: the
 * same bits as a row a block; H200, session 8 (calls 4–5), the engine's graph steps: batch 1
 * at 4191 1012 → 1035 tokens/s, batch 4 at 1087 3819 → 3900, batch 16 8429 → 8455. */
#define ROPE_HEADS_DEFAULT 4

/* Whether this call's prefill items are split (pf_split_len: key tiles a split; the call
 * then runs the largest k_prefill variant, as the splits make the CTAs it lacked). */
static void pf_split_plan(const cuda_backend *cb, paged_plan *p, const hyocr_seq_view *seqs, int n_seqs, int G,
                          int Hkv, size_t part_max)
{
    p->pf_split_len = 0;
    if (!cb->pf_split || cb->prefill == HK_PREFILL_TEMPLATE) return;
    int tr = hk_prefill_tile_rows(cb->prefill);
    int64_t items = 0, key_tiles = 0;
    int max_tiles = 0;
    for (int s = 0; s < n_seqs; s++) {
        if (seqs[s].n_new < 2) continue;
        int n = (seqs[s].n_new * G + tr - 1) / tr;
        items += n;
        for (int t = 0; t < n; t++) {
            int kt = hk_prefill_key_tiles(seqs[s].n_past, seqs[s].n_new, G, t, tr);
            key_tiles += kt;
            max_tiles = MAX(max_tiles, kt);
        }
    }
    p->pf_split_len = hk_prefill_split_len(cb->prefill, items, key_tiles, max_tiles, Hkv, cb->sm_count, cb->pf_split,
                                           part_max);
    if (p->pf_split_len) p->prefill = cb->prefill;
}

/* Appends the splits of item (seq, tile) and its merge. */
static void pf_split_item(paged_plan *p, int seq, int tile, int key_tiles)
{
    guint at = p->pf_splits->len;
    g_array_set_size(p->pf_splits, at + (guint)((key_tiles + p->pf_split_len - 1) / p->pf_split_len));
    int4 merge;
    hk_prefill_splits(&g_array_index(p->pf_splits, int4, at), &merge, seq, tile, key_tiles, p->pf_split_len, (int)at);
    g_array_append_val(p->pf_merges, merge);
}

static void paged_plan_build(const cuda_backend *cb, paged_plan *p, const hyocr_seq_view *seqs, int n_seqs, int bs,
                             int Hq, int Hkv, int D, size_t pf_part_max)
{
    p->seqs = g_array_new(FALSE, FALSE, sizeof(hk_seq));
    p->bt = g_array_new(FALSE, FALSE, sizeof(int32_t));
    p->row_seq = g_array_new(FALSE, FALSE, sizeof(int32_t));
    p->tiles = g_array_new(FALSE, FALSE, sizeof(int32_t) * 2);
    p->splits = g_array_new(FALSE, FALSE, sizeof(hk_split));
    p->blocks = g_array_new(FALSE, FALSE, sizeof(hk_block));
    p->pf_splits = g_array_new(FALSE, FALSE, sizeof(int32_t) * 4);
    p->pf_merges = g_array_new(FALSE, FALSE, sizeof(int32_t) * 4);
    const bool as_blocks = cb->invariant && cb->verify_kernel && D == 128 && hk_verify_fits(1, Hq, Hkv, D);
    int64_t dec_ctx = 0;
    int dec = 0;
    for (int s = 0; s < n_seqs; s++)
        if (seqs[s].n_new == 1) dec_ctx += seqs[s].n_past + 1, dec++;
    p->split_len = hk_decode_split_len(cb->sm_count, dec_ctx, dec, Hq, Hkv);
    int G = Hq / Hkv, row = 0;
    int64_t tiles128 = 0;
    for (int s = 0; s < n_seqs; s++)
        if (seqs[s].n_new > 1) tiles128 += ((int64_t)seqs[s].n_new * G + 127) / 128;
    p->prefill = hk_prefill_for_call(cb->prefill, tiles128, Hkv, cb->sm_count);
    pf_split_plan(cb, p, seqs, n_seqs, G, Hkv, pf_part_max);
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_seq_view *sv = &seqs[s];
        int nb = (sv->n_past + sv->n_new + bs - 1) / bs;
        hk_seq hs = { row, sv->n_past, sv->n_new, (int)p->bt->len };
        g_array_append_val(p->seqs, hs);
        g_array_append_vals(p->bt, sv->block_table, (guint)nb);
        for (int i = 0; i < sv->n_new; i++) g_array_append_val(p->row_seq, s);
        if (sv->n_new > 1) {
            /* causal: the last tiles see the most keys; launched first, they do not trail the grid */
            int tr = hk_prefill_tile_rows(p->prefill), n_tiles = (sv->n_new * G + tr - 1) / tr;
            for (int t = n_tiles - 1; t >= 0; t--)
                if (p->pf_split_len) pf_split_item(p, s, t, hk_prefill_key_tiles(sv->n_past, sv->n_new, G, t, tr));
                else g_array_append_vals(p->tiles, (int32_t[]){ s, t }, 1);
        } else if (sv->n_new == 1 && as_blocks) {
            hk_block b = { row, 1, sv->n_past, hs.bt_off };
            g_array_append_val(p->blocks, b);
            p->block_ctx = MAX(p->block_ctx, sv->n_past + 1);
        } else if (sv->n_new == 1) {
            int ctx = sv->n_past + 1, n = (ctx + p->split_len - 1) / p->split_len;
            guint at = p->splits->len;
            g_array_set_size(p->splits, at + (guint)n);
            hk_decode_splits(&g_array_index(p->splits, hk_split, at), s, p->dec_rows++, ctx, p->split_len, p->parts);
            p->parts += n;
        }
        row += sv->n_new;
    }
    p->total_rows = row;
}

/* Partials and the per-row election counters of the decode splits. The
 * counters start zeroed and every merge leaves them zero again. */
static bool decode_scratch_n(cuda_backend *cb, int parts, int dec_rows, int Hq, int Hkv, int D, GError **error)
{
    if (!parts) return true;
    size_t n_ctr = (size_t)dec_rows * (Hq / hk_decode_heads_per_cta(Hq, Hkv));
    if (cb->counters.cap < n_ctr * sizeof(unsigned)) {
        if (!scratch_need(cb, &cb->counters, n_ctr * sizeof(unsigned), error) ||
            !ck(cudaMemsetAsync(cb->counters.ptr, 0, cb->counters.cap, cb->stream), N_("memset"), error))
            return false;
    }
    return scratch_need(cb, &cb->part, (size_t)parts * Hq * (D + 2) * sizeof(float), error);
}

static bool decode_scratch(cuda_backend *cb, const paged_plan *pp, int Hq, int Hkv, int D, GError **error)
{
    return decode_scratch_n(cb, pp->parts, pp->dec_rows, Hq, Hkv, D, error);
}

/* The staged kernel's rounds by k_decode_mma (HYOCR_DECODE_MMA, on by default): on the
 * tensor cores a warp's 16 keys take ~40 instructions where k_decode_staged spends ~75 a key and
 * head, and at 16 rows that kernel waits on its own instruction chains (Nsight Compute). H100,
 * session 33 (bench/results/2026-12-07-s33, calls 3–5): 16 rows × 1215 keys 38.0 → 35.7 µs a
 * layer at 512-key splits, × 4191 109.7 → 105.6; 16 concurrent 1024² pages +2–4 %, the same
 * tokens. Deeper rounds lose at those splits (fewer CTAs an SM) and win where a row's keys fit
 * one CTA (bound_stages). */
static int decode_mma_for(const cuda_backend *cb, int stages)
{
    return stages >= 2 && cb->decode_mma;
}

/* The middle of a bound step's stretch of contexts: its bound less half a step (the bound is a
 * multiple of the step), the context its splits are sized for. */
static int bound_typical(const cuda_backend *cb, int block_size)
{
    return (int)((int64_t)cb->bound_maxb * block_size - HYOCR_DECODE_CTX_STEP / 2);
}

/* The one-wave split of a bound step of several rows through the staged kernel of that many
 * stages (hk_decode_split_len_wave at the middle of the bound's stretch of contexts; 0 where
 * there is none), and in *splits how many a row takes there. */
static int bound_wave_len(cuda_backend *cb, int Hq, int Hkv, int block_size, int stages, int *splits)
{
    const int mma = decode_mma_for(cb, stages);
    int *per_sm = &cb->dec_ctas_per_sm[mma][stages];
    if (*per_sm == 0) *per_sm = hk_decode_ctas_per_sm(Hq, Hkv, stages, mma, HK_SPLIT_WAVE_MAX, block_size);
    const int typical = bound_typical(cb, block_size);
    const int len = hk_decode_split_len_wave(cb->sm_count, *per_sm, typical, cb->bound_rows, Hq, Hkv, stages);
    if (splits) *splits = len ? (typical + len - 1) / len : 0;
    return len;
}

/* The split of a one-row bound step through the staged kernel (bound_stages' three or four
 * rounds, or the depth HYOCR_DECODE_STAGES asks for): the shortest whose CTAs are at most one an
 * SM at the middle of the bound's stretch of contexts (0 where that is longer than the kernel
 * takes). */
static int one_row_len(const cuda_backend *cb, int Hq, int Hkv, int block_size, int stages)
{
    return hk_decode_split_len_wave(cb->sm_count, 1, bound_typical(cb, block_size), 1, Hq, Hkv, stages);
}

/* Keys per split of a bound step: sized for its context bound (max_blocks), so
 * the grid is fixed and the splits past a row's context idle. Steps of several rows
 * through the staged kernel take splits whose CTAs make one wave at the middle of the
 * bound's stretch of contexts, where that is short (bound_wave_len). */
static int bound_split_len(cuda_backend *cb, int Hq, int Hkv, int block_size, int stages)
{
    if (cb->split_override > 0) return cb->split_override;
    int64_t cap = (int64_t)cb->bound_maxb * block_size;
    int len = hk_decode_split_len(cb->sm_count, cap * cb->bound_rows, cb->bound_rows, Hq, Hkv);
    if (stages < 2) return len;
    int wave = cb->bound_rows < 2 ? one_row_len(cb, Hq, Hkv, block_size, stages)
                                  : bound_wave_len(cb, Hq, Hkv, block_size, stages, NULL);
    return wave > 0 ? wave : len;
}

/* The decode kernel of a step of rows decode rows (ctx_cap: the bound step's context bound, 0
 * where there is none): one row, below; several, the staged kernel where HYOCR_DECODE_STAGES
 * asks for it, else two rounds deep from DECODE_STAGED_ROWS rows on (k_decode_staged: the same bits, so the
 * invariant mode may mix them; by default on the tensor cores, decode_mma_for). H200, session 8,
 * the engine's graph steps at 1087-token contexts, k_decode → two rounds, tokens/s
 * (bench/results/2026-12-03-h200-s8 call7, twice
 * each, alike): 2 rows 2279 → 2116, 4 3916 → 3560, 6 5567 → 5213, 8 5980 → 6469, 10 6635 →
 * 6676, 12 7485 → 7280, 14 7993 → 8101, 16 8468 → 8954 (three rounds lost at 16, call4). From
 * 8 rows on it gains on the whole (12 rows lose 3 %); below, it loses 6–9 %. */
#define DECODE_STAGED_ROWS 8
/* One row: k_decode in an eager step (no bound); in a bound step bound_stages' three or four
 * rounds, and past their caps k_decode_mma two rounds deep where the bound reaches
 * DECODE_MMA_ONE_ROW keys (H100, session 33, decode_bench at the one-row split: × 4191 keys 17.25
 * → 15.25 µs a layer, × 1215 11.2 against 11.4), at hk_decode_split_len's split.
 * HYOCR_DECODE_STAGES, where set, applies to one row too, its keys then over at most one CTA an
 * SM (one_row_len). */
#define DECODE_MMA_ONE_ROW 4096
static int decode_stages_for(const cuda_backend *cb, int rows, int64_t ctx_cap)
{
    if (cb->decode_stages >= 0) return cb->decode_stages;
    if (rows <= 1) return cb->decode_mma && ctx_cap >= DECODE_MMA_ONE_ROW ? 2 : 0;
    return rows >= DECODE_STAGED_ROWS ? 2 : 0;
}

/* A bound step of several rows takes its keys four rounds deep on the tensor cores where
 * that kernel's one-wave split (one CTA an SM: 128 KB of stages) holds a row's keys in one CTA
 * (no partials, no merge) and fills DECODE_DEEP_FILL of the card — 14 to 16 rows of 8 KV heads
 * on 132 SMs —, else decode_stages_for's two rounds (three CTAs an SM, a row's keys over three
 * or more). H100, session 35 (bench/results/2026-12-07-s35): decode_bench with programmatic
 * launches, × 1215 keys, two rounds at 448-key splits → four in one split, µs a layer: 16 rows
 * 31.01 → 29.33 (× 1343 33.92 → 32.09; call1), 15 rows 30.07 → 27.75, 14 rows 29.50 → 26.57
 * (call3), 12 rows 28.31 → 25.70, but 8 rows 20.38 → 23.83 (64 CTAs: half the card; call2); 16
 * concurrent 1024² pages 5600 / 5716 / 5809 → 5744 / 5824 / 5952 tokens/s (call1) and 5679 /
 * 5756 / 5746 → 5810 / 5887 / 5928 (call2), 14 pages at max batch 14 5247 / 5312 → 5489 / 5475
 * (call4), alternated rounds, the same tokens. Below ~80 % the engine loses where the bench
 * gained (its two-round split there is shorter than the bench's): 12 pages at max batch 12 (96
 * CTAs, 73 %) 5056 / 5243 → 5040 / 4999 (call4). Where a row still takes two CTAs it loses too:
 * 8 rows (two 768-key splits a row against six of 256) 4616 / 4674 / 4660 → 4517 / 4536 / 4520
 * (call2). Three rounds were level with two (call1), five and six with four (call3). */
#define DECODE_DEEP_STAGES 4
#define DECODE_DEEP_FILL 0.8
/* One row of a bound step (batch-1 decode) takes its keys three rounds deep on the tensor cores
 * over at most one CTA an SM (one_row_len: 128-key splits for a 1024² page's bound, 320 for
 * 2048²'s) where that split is within the kernel's cap; past it, four rounds so split (a 4096²
 * page's bound: 1088 keys, past three rounds' 1024); past that, decode_stages_for's rule
 * (hk_decode_one_row_stages, the depths HK_ONE_ROW_STAGES_MIN..MAX). A row's
 * 1–17 K keys are latency, and fewer, deeper CTAs spend less of it on the merge. H100, session
 * 36, decode_bench with programmatic launches, µs a layer: one row × 1215 keys 8.82 (mma2, the
 * old 64-key split) → 6.95 (mma3, 128), × 4191 14.25 (mma2, 192) → 11.91 (mma3, 256). Session 38
 * (bench/results/2026-12-08-s38), the engine's batch-1 decode, 256 tokens, the warm jobs,
 * alternated, the same token ids: after a 1024² page 1100–1140 (k_decode, the rule before) →
 * 1144–1163 tokens/s, after 2048² 941–951 (mma2 at 192) → 980–996 (call0b, call1), after 4096²
 * 626–635 (mma2 at the old split) → 703–705 with three rounds there and 726–735 with four at
 * 1088 (call1). */
static int bound_stages(cuda_backend *cb, int Hq, int Hkv, int block_size, int rows)
{
    const int stages = decode_stages_for(cb, rows, (int64_t)cb->bound_maxb * block_size);
    if (cb->decode_stages >= 0 || !cb->decode_mma || cb->split_override > 0) return stages;
    if (rows < 2) {
        const int deep = hk_decode_one_row_stages(cb->sm_count, bound_typical(cb, block_size), Hq, Hkv);
        return deep ? deep : stages;
    }
    if (stages != 2) return stages;
    int splits = 0;
    if (!bound_wave_len(cb, Hq, Hkv, block_size, DECODE_DEEP_STAGES, &splits) || splits != 1)
        return stages;   /* a row over several CTAs: their merge remains */
    const int64_t ctas = (int64_t)rows * (Hq / hk_decode_heads_per_cta(Hq, Hkv));
    const int per_sm = cb->dec_ctas_per_sm[1][DECODE_DEEP_STAGES];
    return ctas >= DECODE_DEEP_FILL * per_sm * cb->sm_count ? DECODE_DEEP_STAGES : stages;
}

/* Paged attention of a bound decode step: every operand on the device. */
static bool attention_bound(cuda_backend *cb, hyocr_buf *out, const hyocr_buf *qkv, hyocr_buf *k_cache,
                            hyocr_buf *v_cache, int block_size, int n_seqs, int rows, int Hq, int Hkv, int D,
                            float scale, GError **error)
{
    if (n_seqs != cb->bound_rows || rows != n_seqs)
        return invalid(error, _("attention_paged: %d sequences, %d rows but the bound decode step has %d rows"), n_seqs,
                       rows, cb->bound_rows);
    const int stages = bound_stages(cb, Hq, Hkv, block_size, rows);
    int split_len = bound_split_len(cb, Hq, Hkv, block_size, stages);
    int max_splits = (cb->bound_maxb * block_size + split_len - 1) / split_len, parts = rows * max_splits;
    if (D == 128 && !decode_scratch_n(cb, parts, rows, Hq, Hkv, D, error)) return false;
    /* rows of one verify block read each other's new K/V: all are stored before any attends, and
     * the attention (which would stream the cache early as a programmatic dependent) waits */
    bool shared = cb->bound_shared;
    /* the blocks by the block kernel (each key read once per KV head for the whole block, on the
     * tensor cores) where each fits it, the other rows by the decode kernel; in the invariant
     * mode every row is in a block (bound_fill), one of one row where it verifies nothing */
    bool blocks = (shared || cb->invariant) && D == 128 && cb->bound_blocks > 0 && cb->verify_kernel &&
                  hk_verify_fits(cb->bound_block_rows, Hq, Hkv, D);
    size_t vparts = blocks ? hk_verify_part_floats(cb->bound_maxb * block_size, cb->bound_blocks, Hq, Hkv, D) : 0;
    if (vparts && !scratch_need(cb, &cb->part, vparts * sizeof(float), error)) return false;
    hk_paged_args a = {
        .t = cb->act, .qkv = qkv->data, .out = out->data, .k_cache = k_cache->data, .v_cache = v_cache->data,
        .kv_slots = (int64_t)(k_cache->n / ((size_t)Hkv * D)), .block_size = block_size, .Hq = Hq, .Hkv = Hkv, .D = D, .scale = scale,
        .seqs = bound_ptr(cb, cb->o_seqs), .n_seqs = n_seqs, .block_tables = bound_ptr(cb, cb->o_bt),
        .row_seq = bound_ptr(cb, cb->o_rs), .total_rows = rows, .n_dec_rows = rows,
        .counters = cb->counters.ptr, .part_acc = cb->part.ptr,
        .part_ml = D == 128 ? (float *)cb->part.ptr + (size_t)parts * Hq * D : NULL,
        .split_max = split_len, .n_splits = parts, .dev_split_len = split_len, .dev_max_splits = max_splits,
        .decode_kv_write = !shared && !blocks, .pdl = shared || blocks ? 0 : cb->pdl,
        .decode_stages = stages, .decode_mma = decode_mma_for(cb, stages),
    };
    if (D != 128)
        return ck(hk_kv_write(cb->stream, &a), N_("KV write"), error) &&
               ck(hk_attention_paged_generic(cb->stream, &a), N_("paged attention (generic head dim)"), error);
    /* every row decodes: the decode kernel stores the new k/v itself (one launch less a layer) */
    if (a.decode_kv_write) return ck(hk_attention_decode(cb->stream, &a), N_("paged attention (decode)"), error);
    if (!ck(hk_kv_write(cb->stream, &a), N_("KV write"), error)) return false;
    if (!blocks) return ck(hk_attention_decode(cb->stream, &a), N_("paged attention (decode)"), error);
    a.seqs = bound_ptr(cb, cb->o_dseqs);
    return (cb->bound_block_total == rows || ck(hk_attention_decode(cb->stream, &a), N_("paged attention (decode)"), error)) &&
           ck(hk_attention_verify(cb->stream, cb->act, out->data, qkv->data, k_cache->data, v_cache->data, block_size,
                                  bound_ptr(cb, cb->o_bt), bound_ptr(cb, cb->o_blk), cb->bound_blocks,
                                  cb->bound_maxb * block_size, Hq, Hkv, D, scale, cb->part.ptr),
              N_("paged attention (verify blocks)"), error);
}

/* Views of one sequence (the rows of a verify block) read each other's new K/V: the decode
 * kernel must not store them itself while others read. */
static bool views_share(const hyocr_seq_view *seqs, int n_seqs)
{
    for (int i = 1; i < n_seqs; i++)
        for (int j = 0; j < i; j++)
            if (seqs[i].block_table == seqs[j].block_table) return true;
    return false;
}

/* The room for a call's split-prefill partials in the caller's spare buffer (attention_paged;
 * HYOCR_PREFILL_SPARE=0 turns it off), 0 where it has less than the backend's own
 * (HK_PF_SPLIT_PART_MAX, in the memory plan). A 2048² page's 1024-row chunks need 8.5 MB a
 * split level (16 items × 532 KB) and two levels to split at all, which the backend's 6 MiB
 * cannot hold; their MLP buffers (text.c's mlp: gu and act, 22 MB) hold about two and a half.
 * Not while capturing: the graph would keep the spare's address. */
static size_t pf_room(const cuda_backend *cb, const hyocr_buf *spare)
{
    size_t bytes = cb->pf_spare && spare && spare->data && !cb->capturing ? spare->n * (size_t)spare->elem_size : 0;
    return bytes > HK_PF_SPLIT_PART_MAX ? bytes : 0;
}

static bool cuda_attention_paged(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv, hyocr_buf *k_cache,
                                 hyocr_buf *v_cache, int block_size, const hyocr_seq_view *seqs, int n_seqs, int Hq,
                                 int Hkv, int D, float scale, hyocr_buf *spare, GError **error)
{
    cuda_backend *cb = CB(be);
    int64_t rows;
    if (!hyocr_paged_check(be, k_cache, v_cache, block_size, seqs, n_seqs, Hq, Hkv, D, &rows, error) ||
        !need_act("attention_paged", "k_cache", k_cache, error) || !need_act("attention_paged", "v_cache", v_cache, error))
        return false;
    if (D > 256 || D % 8)
        return invalid(error, _("attention_paged: unsupported head dim %d; the CUDA kernels take head dims up to 256 in "
                         "steps of 8"), D);
    if (rows > INT_MAX / 64) return invalid(error, _("attention_paged: too many rows (%lld) in one call; run fewer jobs together"), (long long)rows);
    if (!need("attention_paged", "qkv", qkv, (size_t)rows * (Hq + 2 * Hkv) * D, error) ||
        !need("attention_paged", "out", out, (size_t)rows * Hq * D, error) || !need_act("attention_paged", "qkv", qkv, error) ||
        !need_act("attention_paged", "out", out, error))
        return false;
    if (rows == 0) return true;
    if (cb->bound) return attention_bound(cb, out, qkv, k_cache, v_cache, block_size, n_seqs, (int)rows, Hq, Hkv, D,
                                          scale, error);

    paged_plan pp = { 0 };
    const size_t room = pf_room(cb, spare);
    paged_plan_build(cb, &pp, seqs, n_seqs, block_size, Hq, Hkv, D, room ? room : HK_PF_SPLIT_PART_MAX);
    meta_pack mp = { g_byte_array_new() };
    size_t o_seqs = meta_add(&mp, pp.seqs->data, pp.seqs->len * sizeof(hk_seq));
    size_t o_bt = meta_add(&mp, pp.bt->data, pp.bt->len * sizeof(int32_t));
    size_t o_rs = meta_add(&mp, pp.row_seq->data, pp.row_seq->len * sizeof(int32_t));
    size_t o_tiles = meta_add(&mp, pp.tiles->data, pp.tiles->len * sizeof(int32_t) * 2);
    size_t o_splits = meta_add(&mp, pp.splits->data, pp.splits->len * sizeof(hk_split));
    size_t o_blk = meta_add(&mp, pp.blocks->data, pp.blocks->len * sizeof(hk_block));
    size_t o_pfs = meta_add(&mp, pp.pf_splits->data, pp.pf_splits->len * sizeof(int4));
    size_t o_pfm = meta_add(&mp, pp.pf_merges->data, pp.pf_merges->len * sizeof(int4));
    const int n_blocks = (int)pp.blocks->len, n_pfs = (int)pp.pf_splits->len;
    size_t vparts = n_blocks ? hk_verify_part_floats(pp.block_ctx, n_blocks, Hq, Hkv, D) : 0;
    /* the split prefill's partials: in the spare buffer where it has the room, else in the
     * decode partials' scratch (the merge is done reading them before the decode kernel of
     * the same call writes its own) */
    size_t pfparts = n_pfs ? hk_prefill_part_floats(pp.prefill, n_pfs, Hkv) : 0;
    bool ok = meta_upload(cb, mp.b->data, mp.b->len, error) && decode_scratch(cb, &pp, Hq, Hkv, D, error) &&
              (!vparts || scratch_need(cb, &cb->part, vparts * sizeof(float), error)) &&
              (!pfparts || room || scratch_need(cb, &cb->part, pfparts * sizeof(float), error));
    g_byte_array_free(mp.b, TRUE);
    if (ok) {
        const int stages = decode_stages_for(cb, pp.dec_rows, 0);
        hk_paged_args a = {
            .t = cb->act, .qkv = qkv->data, .out = out->data, .k_cache = k_cache->data, .v_cache = v_cache->data,
            .kv_slots = (int64_t)(k_cache->n / ((size_t)Hkv * D)), .block_size = block_size, .Hq = Hq, .Hkv = Hkv, .D = D, .scale = scale,
            .seqs = meta_ptr(cb, o_seqs), .n_seqs = n_seqs, .block_tables = meta_ptr(cb, o_bt),
            .row_seq = meta_ptr(cb, o_rs), .total_rows = pp.total_rows,
            .tiles = meta_ptr(cb, o_tiles), .n_tiles = (int)pp.tiles->len, .prefill = pp.prefill,
            .pf_splits = meta_ptr(cb, o_pfs), .n_pf_splits = n_pfs, .pf_merges = meta_ptr(cb, o_pfm),
            .n_pf_merges = (int)pp.pf_merges->len, .pf_part = room ? spare->data : cb->part.ptr,
            .splits = meta_ptr(cb, o_splits), .n_splits = (int)pp.splits->len,
            .n_dec_rows = pp.dec_rows, .counters = cb->counters.ptr,
            .part_acc = cb->part.ptr, .part_ml = pp.parts ? (float *)cb->part.ptr + (size_t)pp.parts * Hq * D : NULL,
            .split_max = pp.split_len,
            .decode_kv_write = pp.tiles->len == 0 && n_pfs == 0 && pp.blocks->len == 0 && !views_share(seqs, n_seqs),
            .decode_stages = stages, .decode_mma = decode_mma_for(cb, stages),
        };
        /* Only decode rows: the decode kernel stores their new k/v itself. No PDL here:
         * the kernel may follow the upload of its own work list directly. */
        if (D != 128)
            ok = ck(hk_kv_write(cb->stream, &a), N_("KV write"), error) &&
                 ck(hk_attention_paged_generic(cb->stream, &a), N_("paged attention (generic head dim)"), error);
        else
            ok = (a.decode_kv_write || ck(hk_kv_write(cb->stream, &a), N_("KV write"), error)) &&
             ck(hk_attention_prefill(cb->stream, &a), N_("paged attention (prefill)"), error) &&
             ck(hk_attention_decode(cb->stream, &a), N_("paged attention (decode)"), error) &&
             (!n_blocks || ck(hk_attention_verify(cb->stream, cb->act, out->data, qkv->data, k_cache->data,
                                                  v_cache->data, block_size, meta_ptr(cb, o_bt), meta_ptr(cb, o_blk),
                                                  n_blocks, pp.block_ctx, Hq, Hkv, D, scale, cb->part.ptr),
                              N_("paged attention (decode rows as blocks)"), error));
    }
    paged_plan_clear(&pp);
    return ok;
}

/* ---------------------------------------------------------------- checks, raw transfers, pinned memory */

#define PIN_SMALL (64u << 10)   /* pinned landing place of flags and picked ids */
#define PICK_MAX  ((int)(PIN_SMALL / 8))

static bool small_ready(cuda_backend *cb, size_t bytes, GError **error)
{
    if (!cb->pin_small) {
        cudaError_t e = cudaHostAlloc((void **)&cb->pin_small, PIN_SMALL, cudaHostAllocDefault);
        if (e != cudaSuccess) {
            cb->pin_small = NULL;
            return ck(e, N_("pinned allocation"), error);
        }
    }
    /* zeroed when it grows: the pick's election counters start at zero */
    if (cb->small.cap >= bytes) return true;
    return scratch_need(cb, &cb->small, bytes, error) &&
           ck(cudaMemsetAsync(cb->small.ptr, 0, cb->small.cap, cb->stream), N_("memset"), error);
}

/* Copies bytes of the small results to the pinned mirror and waits. */
static bool small_fetch(cuda_backend *cb, size_t bytes, GError **error)
{
    bool ok = ck(cudaMemcpyAsync(cb->pin_small, cb->small.ptr, bytes, cudaMemcpyDeviceToHost, cb->stream),
                 N_("result download"), error) &&
              ck(cudaStreamSynchronize(cb->stream), N_("result download"), error);
    hyocr_cuda_profile_resolve(cb->prof);
    return ok;
}

static bool cuda_check_finite(hyocr_backend *be, const hyocr_buf *b, size_t n, bool *finite, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!need("check_finite", "b", b, n, error) || !small_ready(cb, sizeof(int), error)) return false;
    if (!ck(cudaMemsetAsync(cb->small.ptr, 0, sizeof(int), cb->stream), N_("memset"), error) ||
        !ck(hk_nonfinite(cb->stream, b->data, buf_t(cb, b), n, cb->small.ptr), N_("finite check"), error) ||
        !small_fetch(cb, sizeof(int), error))
        return false;
    int flag;
    memcpy(&flag, cb->pin_small, sizeof flag);
    *finite = flag == 0;
    return true;
}

static bool byte_range(const char *op, const hyocr_buf *b, size_t off, size_t bytes, GError **error)
{
    size_t have = b ? b->n * (size_t)b->elem_size : 0;
    if (!b || (!b->data && have) || off > have || bytes > have - off)
        return invalid(error, _("%s: bytes [%zu, %zu) are outside the buffer (%zu bytes)"), op, off, off + bytes, have);
    return true;
}

static bool cuda_read_bytes(hyocr_backend *be, const hyocr_buf *src, size_t off, void *dst, size_t bytes,
                            GError **error)
{
    cuda_backend *cb = CB(be);
    if (!byte_range("read_bytes", src, off, bytes, error)) return false;
    bool ok = (!bytes || ck(cudaMemcpyAsync(dst, (const uint8_t *)src->data + off, bytes, cudaMemcpyDeviceToHost,
                                            cb->stream), "read_bytes", error)) &&
              ck(cudaStreamSynchronize(cb->stream), "read_bytes", error);
    hyocr_cuda_profile_resolve(cb->prof);
    return ok;
}

/* From pinned memory the copy is queued and src must stay untouched until the
 * next wait; from pageable memory it is staged before this returns. */
static bool cuda_write_bytes(hyocr_backend *be, hyocr_buf *dst, size_t off, const void *src, size_t bytes,
                             GError **error)
{
    cuda_backend *cb = CB(be);
    if (!byte_range("write_bytes", dst, off, bytes, error)) return false;
    return !bytes || ck(cudaMemcpyAsync((uint8_t *)dst->data + off, src, bytes, cudaMemcpyHostToDevice, cb->stream),
                        "write_bytes", error);
}

/* Pinned host memory: not device memory, so not in the accounting. */
static void *cuda_host_alloc(hyocr_backend *be, size_t bytes, GError **error)
{
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault);
    if (e == cudaSuccess) return p;
    cudaGetLastError();
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY,
                _("CUDA backend: cannot pin %.1f MiB of host memory: %s"), MIB(bytes), cudaGetErrorString(e));
    return NULL;
}

static void cuda_host_free(hyocr_backend *be, void *p, size_t bytes)
{
    (void)be;
    (void)bytes;
    if (p) cudaFreeHost(p);
}

/* ---------------------------------------------------------------- greedy choice */

G_STATIC_ASSERT(sizeof(hk_draw) == sizeof(hyocr_pick_draw));
G_STATIC_ASSERT(G_STRUCT_OFFSET(hk_draw, u) == G_STRUCT_OFFSET(hyocr_pick_draw, u));
G_STATIC_ASSERT(G_STRUCT_OFFSET(hk_draw, top_p) == G_STRUCT_OFFSET(hyocr_pick_draw, top_p));

static bool any_draw(const hyocr_pick_draw *d, int n)
{
    for (int i = 0; d && i < n; i++)
        if (d[i].temperature > 0.0f) return true;
    return false;
}

static bool cuda_pick(hyocr_backend *be, const hyocr_buf *logits, int n, int V, hyocr_buf *seen, const int32_t *slots,
                      const float *penalties, const hyocr_pick_draw *draws, const int32_t *first,
                      const hyocr_buf *step_ids, GError **error)
{
    cuda_backend *cb = CB(be);
    size_t words = ((size_t)V + 31) / 32;
    if (n < 0 || n > PICK_MAX || V <= 0 || (n > 0 && !cb->bound && (!slots || !penalties)))
        return invalid(error, _("pick: invalid arguments (%d rows, at most %d; vocabulary %d)"), n, PICK_MAX, V);
    if (!need("pick", "logits", logits, (size_t)n * V, error) || !need("pick", "seen", seen, words, error))
        return false;
    if (logits->kind != HYOCR_BUF_F32 || seen->kind != HYOCR_BUF_F32)
        return invalid(error, _("pick: logits and seen must be F32 buffers"));
    bool verify = cb->bound ? cb->bound_first : first != NULL;
    if (verify && (!step_ids || step_ids->kind != HYOCR_BUF_F32 || step_ids->n < (size_t)n))
        return invalid(error, _("pick: rows that verify need the step's ids (%d rows)"), n);
    size_t n_slots = seen->n / words;
    for (int i = 0; !cb->bound && i < n; i++) {
        if (slots[i] < 0 || (size_t)slots[i] >= n_slots)
            return invalid(error, _("pick: row %d uses slot %d but the seen buffer holds %zu slots"), i, slots[i],
                           n_slots);
        if (first && first[i] > i)
            return invalid(error, _("pick: row %d verifies a block from row %d"), i, first[i]);
    }
    if (cb->bound && n != cb->bound_rows)
        return invalid(error, _("pick: %d rows but the bound decode step has %d"), n, cb->bound_rows);
    if (!n) return true;
    bool sampling = cb->bound ? cb->bound_sampling : any_draw(draws, n);
    /* ids and flags for the most rows first: the work area (and its counters) never moves */
    size_t work_off = (size_t)PICK_MAX * 8;
    size_t sample_off = (work_off + hk_pick_work_bytes(n, V) + 255) / 256 * 256;
    if (!small_ready(cb, sample_off + (sampling ? hk_sample_work_bytes(n, V) : 0), error)) return false;
    const int32_t *d_slots, *d_first = NULL;
    const float *d_pens;
    const hk_draw *d_draws = NULL;
    if (cb->bound) {
        d_slots = bound_ptr(cb, cb->o_slots);
        d_pens = bound_ptr(cb, cb->o_pens);
        if (sampling) d_draws = bound_ptr(cb, cb->o_draws);
        if (verify) d_first = bound_ptr(cb, cb->o_first);
    } else {
        meta_pack mp = { g_byte_array_new() };
        size_t o_s = meta_add(&mp, slots, (size_t)n * sizeof(int32_t));
        size_t o_p = meta_add(&mp, penalties, (size_t)n * sizeof(float));
        size_t o_d = sampling ? meta_add(&mp, draws, (size_t)n * sizeof(hyocr_pick_draw)) : 0;
        size_t o_f = verify ? meta_add(&mp, first, (size_t)n * sizeof(int32_t)) : 0;
        bool ok = meta_upload(cb, mp.b->data, mp.b->len, error);
        g_byte_array_free(mp.b, TRUE);
        if (!ok) return false;
        d_slots = meta_ptr(cb, o_s);
        d_pens = meta_ptr(cb, o_p);
        if (sampling) d_draws = meta_ptr(cb, o_d);
        if (verify) d_first = meta_ptr(cb, o_f);
    }
    int32_t *d_ids = cb->small.ptr;
    uint8_t *small = cb->small.ptr;
    return ck(hk_pick(cb->stream, logits->data, n, V, seen->data, d_slots, d_pens, d_draws, 1, d_ids, d_ids + n,
                      small + work_off, sampling ? (float *)(small + sample_off) : NULL, d_first,
                      verify ? (const int32_t *)step_ids->data : NULL),
              "pick", error);
}

static bool cuda_pick_fetch(hyocr_backend *be, int n, int32_t *ids, bool *nonfinite, GError **error)
{
    cuda_backend *cb = CB(be);
    if (n < 0 || n > PICK_MAX || (n && cb->small.cap < (size_t)n * 8))
        return invalid(error, _("pick_fetch: %d rows asked but no pick of that size was made"), n);
    if (!n) return true;
    if (!small_fetch(cb, (size_t)n * 8, error)) return false;
    const int32_t *h = (const int32_t *)cb->pin_small;
    memcpy(ids, h, sizeof(int32_t) * n);
    for (int i = 0; nonfinite && i < n; i++) nonfinite[i] = h[n + i] != 0;
    return true;
}

G_STATIC_ASSERT(sizeof(hk_token_logprobs) == sizeof(hyocr_token_logprobs));
G_STATIC_ASSERT(HK_TOP_LOGPROBS_MAX == HYOCR_TOP_LOGPROBS_MAX);
G_STATIC_ASSERT(G_STRUCT_OFFSET(hk_token_logprobs, top) == G_STRUCT_OFFSET(hyocr_token_logprobs, top));

static bool cuda_pick_logprobs(hyocr_backend *be, const hyocr_buf *logits, int n, int V, const int32_t *n_top,
                               hyocr_token_logprobs *out, GError **error)
{
    cuda_backend *cb = CB(be);
    if (n < 0 || n > PICK_MAX || V <= 0 || (n && cb->small.cap < (size_t)n * 8) ||
        (V + 4095) / 4096 > 256)
        return invalid(error, _("pick_logprobs: invalid arguments (%d rows, vocabulary %d)"), n, V);
    if (logits->kind != HYOCR_BUF_F32) return invalid(error, _("pick_logprobs: logits must be an F32 buffer"));
    if (!need("pick_logprobs", "logits", logits, (size_t)n * V, error)) return false;
    for (int i = 0; i < n; i++)
        if (n_top[i] > HYOCR_TOP_LOGPROBS_MAX)
            return invalid(error, _("pick_logprobs: row %d asks for %d alternatives (at most %d)"), i, n_top[i],
                           HYOCR_TOP_LOGPROBS_MAX);
    if (!n) return true;
    size_t o_out = ((size_t)n * sizeof(int32_t) + 255) / 256 * 256;
    size_t o_work = (o_out + (size_t)n * sizeof(hk_token_logprobs) + 255) / 256 * 256;
    if (!scratch_need(cb, &cb->lp, o_work + hk_logprobs_work_bytes(n, V), error)) return false;
    uint8_t *d = cb->lp.ptr;
    g_autofree hk_token_logprobs *h = g_new(hk_token_logprobs, n);
    bool ok = ck(cudaMemcpyAsync(d, n_top, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice, cb->stream),
                 N_("upload"), error) &&
              ck(hk_logprobs(cb->stream, logits->data, n, V, (const int32_t *)d, (const int32_t *)cb->small.ptr,
                             d + o_work, (hk_token_logprobs *)(d + o_out)),
                 "pick_logprobs", error) &&
              ck(cudaMemcpyAsync(h, d + o_out, (size_t)n * sizeof(hk_token_logprobs), cudaMemcpyDeviceToHost, cb->stream),
                 N_("result download"), error) &&
              ck(cudaStreamSynchronize(cb->stream), N_("result download"), error);
    hyocr_cuda_profile_resolve(cb->prof);
    for (int i = 0; ok && i < n; i++)
        if (n_top[i] >= 0) memcpy(&out[i], &h[i], sizeof out[i]);
    return ok;
}

/* ---------------------------------------------------------------- bound decode steps, graphs */

/* Lays the blob out for rows × max_blocks; the offsets depend on nothing else, so
 * a graph captured for that shape finds every field where it looked. */
static size_t bound_layout(cuda_backend *cb, int rows, int maxb)
{
    size_t off = 0;
#define PLACE(field, bytes) (cb->field = off, off = (off + (bytes) + 15) & ~(size_t)15)
    PLACE(o_ids, (size_t)rows * 4);
    PLACE(o_pos, (size_t)rows * 4);
    PLACE(o_seqs, (size_t)rows * sizeof(hk_seq));
    PLACE(o_rs, (size_t)rows * 4);
    PLACE(o_bt, (size_t)rows * maxb * 4);
    PLACE(o_slots, (size_t)rows * 4);
    PLACE(o_pens, (size_t)rows * 4);
    PLACE(o_draws, (size_t)rows * sizeof(hyocr_pick_draw));
    PLACE(o_first, (size_t)rows * 4);
    PLACE(o_dseqs, (size_t)rows * sizeof(hk_seq));
    PLACE(o_blk, (size_t)rows * sizeof(hk_block));
#undef PLACE
    return off;
}

static void bound_fill(cuda_backend *cb, uint8_t *h, const hyocr_decode_meta *dm)
{
    int R = dm->n_rows, maxb = dm->max_blocks;
    memcpy(h + cb->o_ids, dm->ids, (size_t)R * 4);
    int32_t *pos = (int32_t *)(h + cb->o_pos), *rs = (int32_t *)(h + cb->o_rs), *bt = (int32_t *)(h + cb->o_bt);
    int32_t *slots = (int32_t *)(h + cb->o_slots);
    float *pens = (float *)(h + cb->o_pens);
    hk_seq *seqs = (hk_seq *)(h + cb->o_seqs);
    memset(bt, 0, (size_t)R * maxb * 4);
    for (int r = 0; r < R; r++) {
        const hyocr_seq_view *v = &dm->views[r];
        pos[r] = v->n_past;
        rs[r] = r;
        seqs[r] = (hk_seq){ r, v->n_past, 1, r * maxb };
        memcpy(bt + (size_t)r * maxb, v->block_table, (size_t)(v->n_past / dm->block_size + 1) * 4);
        slots[r] = dm->pick_slots ? dm->pick_slots[r] : 0;
        pens[r] = dm->pick_penalties ? dm->pick_penalties[r] : 1.0f;
    }
    hyocr_pick_draw *draws = (hyocr_pick_draw *)(h + cb->o_draws);
    if (dm->pick_draws) memcpy(draws, dm->pick_draws, (size_t)R * sizeof *draws);
    else memset(draws, 0, (size_t)R * sizeof *draws);
    int32_t *first = (int32_t *)(h + cb->o_first);
    for (int r = 0; r < R; r++) first[r] = dm->pick_first ? dm->pick_first[r] : -1;
    /* Verify blocks (the rows of one sequence, marked by the pick's first): the decode kernel
     * leaves their rows (n_past −1: no split) to the block kernel, which reads each key once.
     * The invariant mode puts every row in a block, a lone row in one of its own: the block
     * kernel gives a row the same bits whatever block it is in (its splits start at fixed keys). */
    hk_seq *dseqs = (hk_seq *)(h + cb->o_dseqs);
    hk_block *blk = (hk_block *)(h + cb->o_blk);
    memcpy(dseqs, seqs, (size_t)R * sizeof *seqs);
    cb->bound_blocks = cb->bound_block_rows = cb->bound_block_total = 0;
    const bool runs = dm->shared && dm->pick_first;
    for (int r = 0; (runs || cb->invariant) && r < R;) {
        int f = runs ? dm->pick_first[r] : -1, e = r + 1;
        while (f >= 0 && e < R && dm->pick_first[e] == f) e++;
        if ((f == r && e - r > 1) || cb->invariant) {
            /* the keys through the last row's copy of the table: the first row's ends at its own
             * KV block, and a block of rows crossing into the next read that one's slots as block 0's */
            blk[cb->bound_blocks++] = (hk_block){ r, e - r, dm->views[r].n_past, (e - 1) * maxb };
            cb->bound_block_rows = MAX(cb->bound_block_rows, e - r);
            cb->bound_block_total += e - r;
            for (int i = r; i < e; i++) dseqs[i].n_past = -1;
        }
        r = e;
    }
}

static bool bound_check(const hyocr_decode_meta *dm, GError **error)
{
    if (!dm || dm->n_rows <= 0 || dm->n_rows > PICK_MAX || dm->max_blocks <= 0 || dm->block_size <= 0 || !dm->ids ||
        !dm->views)
        return invalid(error, _("decode_bind: invalid step (%d rows, %d blocks)"), dm ? dm->n_rows : 0,
                       dm ? dm->max_blocks : 0);
    for (int r = 0; r < dm->n_rows; r++) {
        const hyocr_seq_view *v = &dm->views[r];
        if (v->n_new != 1 || v->n_past < 0 || !v->block_table)
            return invalid(error, _("decode_bind: row %d is not a one-token decode row"), r);
        if (v->n_past / dm->block_size + 1 > dm->max_blocks)
            return invalid(error, _("decode_bind: row %d needs %d blocks, more than the bound %d"), r,
                           v->n_past / dm->block_size + 1, dm->max_blocks);
        if (dm->pick_first && (dm->pick_first[r] > r || dm->pick_first[r] < -1))
            return invalid(error, _("decode_bind: row %d verifies a block from row %d"), r, dm->pick_first[r]);
    }
    return true;
}

static bool cuda_decode_bind(hyocr_backend *be, const hyocr_decode_meta *dm, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!bound_check(dm, error)) return false;
    size_t bytes = bound_layout(cb, dm->n_rows, dm->max_blocks);
    /* The last step's copy reads the pinned blob; let it finish before rewriting it. */
    if (!ck(cudaEventSynchronize(cb->dmeta_done), N_("event synchronize"), error)) return false;
    if (cb->dmeta_host_cap < bytes) {
        if (cb->dmeta_host) cudaFreeHost(cb->dmeta_host);
        cb->dmeta_host = NULL;
        cb->dmeta_host_cap = 0;
        size_t cap = bytes + bytes / 2;
        if (!ck(cudaHostAlloc((void **)&cb->dmeta_host, cap, cudaHostAllocDefault), N_("pinned allocation"), error))
            return false;
        cb->dmeta_host_cap = cap;
    }
    if (!scratch_need(cb, &cb->dmeta, bytes, error)) return false;
    bound_fill(cb, cb->dmeta_host, dm);
    if (!ck(cudaMemcpyAsync(cb->dmeta.ptr, cb->dmeta_host, bytes, cudaMemcpyHostToDevice, cb->stream),
            N_("decode metadata copy"), error) ||
        !ck(cudaEventRecord(cb->dmeta_done, cb->stream), N_("event record"), error))
        return false;
    cb->bound = true;
    cb->bound_sampling = any_draw(dm->pick_draws, dm->n_rows);
    cb->bound_shared = dm->shared;
    cb->bound_first = dm->pick_first != NULL;
    cb->bound_rows = dm->n_rows;
    cb->bound_maxb = dm->max_blocks;
    return true;
}

static void cuda_decode_unbind(hyocr_backend *be)
{
    CB(be)->bound = false;
}

typedef struct {
    cudaGraphExec_t exec;
    uint64_t        epoch;
} cuda_graph;

static bool cuda_graph_begin(hyocr_backend *be, GError **error)
{
    cuda_backend *cb = CB(be);
    if (!ck(cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeRelaxed), N_("graph capture"), error)) return false;
    cb->capturing = true;
    return true;
}

static void *cuda_graph_end(hyocr_backend *be, GError **error)
{
    cuda_backend *cb = CB(be);
    cudaGraph_t g = NULL;
    cb->capturing = false;
    if (!ck(cudaStreamEndCapture(cb->stream, &g), N_("graph capture"), error)) {
        if (g) cudaGraphDestroy(g);
        return NULL;
    }
    cuda_graph *cg = g_new0(cuda_graph, 1);
    cg->epoch = cb->epoch;
    bool ok = ck(cudaGraphInstantiateWithFlags(&cg->exec, g, 0), N_("graph instantiation"), error);
    cudaGraphDestroy(g);
    if (!ok) {
        g_free(cg);
        return NULL;
    }
    return cg;
}

static bool cuda_graph_launch(hyocr_backend *be, void *graph, bool *stale, GError **error)
{
    cuda_backend *cb = CB(be);
    cuda_graph *cg = graph;
    *stale = cg->epoch != cb->epoch;
    if (*stale) return true;
    return ck(cudaGraphLaunch(cg->exec, cb->stream), N_("graph launch"), error);
}

static void cuda_graph_free(hyocr_backend *be, void *graph)
{
    (void)be;
    cuda_graph *cg = graph;
    if (!cg) return;
    cudaGraphExecDestroy(cg->exec);
    g_free(cg);
}


static void cuda_mem_info(hyocr_backend *be, hyocr_mem_info *out)
{
    cuda_backend *cb = CB(be);
    memset(out, 0, sizeof *out);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) {
        out->total = (int64_t)tot;
        out->free = (int64_t)fr;
    } else {
        cudaGetLastError();
    }
    g_mutex_lock(&cb->mem_lock);
    out->weights = cb->bytes[HYOCR_BUF_WEIGHT];
    out->kv_reserved = cb->bytes[HYOCR_BUF_KV];
    out->workspace = cb->bytes[HYOCR_BUF_ACT] + cb->bytes[HYOCR_BUF_F32] + cb->bytes[BUCKET_SCRATCH];
    out->peak = cb->peak;
    g_mutex_unlock(&cb->mem_lock);
    out->limit = cb->memory_limit;
}

static bool cuda_sync(hyocr_backend *be, GError **error)
{
    bool ok = ck(cudaStreamSynchronize(CB(be)->stream), N_("stream synchronize"), error);
    hyocr_cuda_profile_resolve(CB(be)->prof);
    return ok;
}

static void cuda_release_cached(hyocr_backend *be)
{
    release_kept(CB(be));
}

/* ---------------------------------------------------------------- the side lane */

static void lane_swap(cuda_backend *cb)
{
    cuda_lane cur = { cb->stream, cb->lt_ws, cb->stage, cb->conv_x, cb->conv_bias };
    cb->stream = cb->other.stream;
    cb->lt_ws = cb->other.lt_ws;
    cb->stage = cb->other.stage;
    cb->conv_x = cb->other.conv_x;
    cb->conv_bias = cb->other.conv_bias;
    cb->other = cur;
    cb->on_side = !cb->on_side;
    /* the legacy handle of gemm_fallback follows */
    cublasSetStream(cb->blas, cb->stream);
    if (cb->lt_ws.ptr) cublasSetWorkspace(cb->blas, cb->lt_ws.ptr, cb->lt_ws.cap);
}

/* The side lane's stream, of the highest priority (the main one has the lowest): its
 * vision pass keeps the card while the decode steps fill the gaps it leaves. The other
 * way round, each step's ~150 kernels took SMs first and stretched every pass to 40–60
 * ms; a green context of 72–120 SMs for it was slower still (H200, session 9 calls
 * 6–7; the green context's code is at e473d8b). */
static bool side_stream(cuda_backend *cb, GError **error)
{
    int lo = 0, hi = 0;
    return ck(cudaDeviceGetStreamPriorityRange(&lo, &hi), N_("creating a stream"), error) &&
           ck(cudaStreamCreateWithPriority(&cb->other.stream, cudaStreamNonBlocking, hi), N_("creating a stream"), error);
}

/* Whether the device has CUDA's stream-ordered allocator (memory pools). */
static bool pools_supported(cuda_backend *cb)
{
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, cb->device) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return pools != 0;
}

static void keep_pool(cuda_backend *cb)
{
    cudaMemPool_t pool;
    uint64_t all = UINT64_MAX;
    if (cudaDeviceGetMemPool(&pool, cb->device) == cudaSuccess &&
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &all) == cudaSuccess)
        cb->keep_pool = pool;
    cudaGetLastError();
}

/* False without an error where there is no side lane (profiling: its timers are
 * on the main stream; a card without stream-ordered allocation). */
static bool cuda_side_begin(hyocr_backend *be, GError **error)
{
    cuda_backend *cb = CB(be);
    if (cb->on_side || cb->prof || cb->capturing) return false;
    if (!cb->other.stream) {
        if (!pools_supported(cb)) return false;
        if (!side_stream(cb, error)) return false;
    }
    lane_swap(cb);
    if (scratch_need(cb, &cb->lt_ws, LT_WORKSPACE, error)) {
        cublasSetWorkspace(cb->blas, cb->lt_ws.ptr, cb->lt_ws.cap);
        return true;
    }
    lane_swap(cb);
    return false;
}

static void cuda_side_end(hyocr_backend *be)
{
    cuda_backend *cb = CB(be);
    if (!cb->on_side) return;
    lane_swap(cb);
    cb->side_pending = true;
}

static void side_done(cuda_backend *cb)
{
    cb->side_pending = false;
    for (guint i = 0; cb->held && i < cb->held->len; i++) {
        held_free *h = &g_array_index(cb->held, held_free, i);
        dev_free(cb, h->bucket, h->p, h->bytes, NULL);
    }
    if (cb->held) g_array_set_size(cb->held, 0);
}

/* Whether the side lane's work is done (waiting for it when wait); false with
 * an error when it failed. */
static bool cuda_side_idle(hyocr_backend *be, bool wait, GError **error)
{
    cuda_backend *cb = CB(be);
    cudaStream_t side = cb->on_side ? cb->stream : cb->other.stream;
    if (!side) return true;
    cudaError_t e = wait ? cudaStreamSynchronize(side) : cudaStreamQuery(side);
    if (e == cudaErrorNotReady) return false;
    if (e == cudaSuccess) side_done(cb);
    return ck(e, N_("stream synchronize"), error);
}

static void cuda_free(hyocr_backend *be)
{
    cuda_backend *cb = CB(be);
    cuda_side_end(be);
    if (cb->other.stream) cudaStreamSynchronize(cb->other.stream);
    side_done(cb);
    if (cb->held) g_array_free(cb->held, TRUE);
    if (cb->stream) cudaStreamSynchronize(cb->stream);
    hyocr_cuda_profile_free(cb->prof);
    cb->prof = NULL;
    if (cb->plans) g_hash_table_destroy(cb->plans);
    if (cb->keep_pool) {   /* the pool outlives the backend: as the next one expects to find it */
        uint64_t none = 0;
        cudaMemPoolSetAttribute(cb->keep_pool, cudaMemPoolAttrReleaseThreshold, &none);
    }
    scratch *s[] = { &cb->lt_ws, &cb->stage, &cb->meta, &cb->pos, &cb->part, &cb->counters, &cb->conv_x,
                     &cb->conv_bias, &cb->small, &cb->lp, &cb->dmeta, &cb->other.lt_ws, &cb->other.stage,
                     &cb->other.conv_x, &cb->other.conv_bias };
    for (size_t i = 0; i < G_N_ELEMENTS(s); i++) scratch_release(cb, s[i]);
    g_free(cb->meta_held.bytes);
    g_free(cb->pos_held.bytes);
    if (cb->lt) cublasLtDestroy(cb->lt);
    if (cb->blas) cublasDestroy(cb->blas);
    for (int i = 0; i < 2; i++)
        if (cb->pin_done[i]) cudaEventDestroy(cb->pin_done[i]);
    if (cb->pin) cudaFreeHost(cb->pin);
    if (cb->up_pool) g_thread_pool_free(cb->up_pool, FALSE, TRUE);
    for (int i = 0; i < 2; i++)
        if (cb->up_done[i]) cudaEventDestroy(cb->up_done[i]);
    if (cb->up_pin) cudaFreeHost(cb->up_pin);
    if (cb->pin_small) cudaFreeHost(cb->pin_small);
    if (cb->dmeta_host) cudaFreeHost(cb->dmeta_host);
    if (cb->dmeta_done) cudaEventDestroy(cb->dmeta_done);
    if (cb->stream) cudaStreamDestroy(cb->stream);
    if (cb->other.stream) cudaStreamDestroy(cb->other.stream);
    g_mutex_clear(&cb->mem_lock);
    g_free(cb);
}

/* ---------------------------------------------------------------- the DFlash draft's ops */

/* The draft's cursor: one word of an F32 buffer, read by the kernels on the device. */
static bool cursor_ok(const char *op, const hyocr_buf *cursor, GError **error)
{
    if (!need(op, "cursor", cursor, 1, error)) return false;
    if (cursor->kind != HYOCR_BUF_F32) return invalid(error, _("%s: the cursor must be an F32 buffer (raw int32)"), op);
    return true;
}

static bool cuda_qknorm_rope(hyocr_backend *be, hyocr_buf *qkv, int M, const hyocr_buf *cursor, int Hq, int Hkv,
                             const hyocr_rope_params *rope, const hyocr_buf *q_norm, const hyocr_buf *k_norm, float eps,
                             GError **error)
{
    cuda_backend *cb = CB(be);
    int D = rope ? rope->head_dim : 0;
    if (!rope || M < 0 || Hq < 0 || Hkv <= 0 || D <= 0 || D % 2 || D > HK_ROPE_MAX_DIM)
        return invalid(error, _("qknorm_rope: invalid arguments (M %d, heads %d/%d, head dim %d)"), M, Hq, Hkv, D);
    if (!cursor_ok("qknorm_rope", cursor, error) ||
        !need("qknorm_rope", "qkv", qkv, (size_t)M * (Hq + 2 * Hkv) * D, error) ||
        (Hq > 0 && !need("qknorm_rope", "q_norm", q_norm, (size_t)D, error)) ||
        !need("qknorm_rope", "k_norm", k_norm, (size_t)D, error) || !need_act("qknorm_rope", "qkv", qkv, error))
        return false;
    hk_rope tab;
    rope_table(rope, &tab);
    if (M == 0) return true;
    return ck(hk_qknorm_rope(cb->stream, qkv->data, cb->act, M, cursor->data, Hq, Hkv, D, &tab,
                             Hq > 0 ? q_norm->data : NULL, Hq > 0 ? buf_t(cb, q_norm) : HK_F32, k_norm->data,
                             buf_t(cb, k_norm), eps),
              "qknorm_rope", error);
}

static bool cuda_attention_append(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *qkv, hyocr_buf *k_cache,
                                  hyocr_buf *v_cache, const hyocr_buf *cursor, int M, int Hq, int Hkv, int D,
                                  float scale, GError **error)
{
    cuda_backend *cb = CB(be);
    if (M < 0 || Hq < 0 || Hkv <= 0 || Hq % Hkv || D <= 0 || D > HK_ROPE_MAX_DIM)
        return invalid(error, _("attention_append: invalid shape (%d rows, heads %d/%d, head dim %d)"), M, Hq, Hkv, D);
    size_t kv_row = (size_t)Hkv * D;
    if (!cursor_ok("attention_append", cursor, error) ||
        !need("attention_append", "qkv", qkv, (size_t)M * (Hq + 2 * Hkv) * D, error) ||
        !need("attention_append", "k_cache", k_cache, kv_row, error) ||
        !need("attention_append", "v_cache", v_cache, k_cache->n, error) ||
        (Hq > 0 && !need("attention_append", "out", out, (size_t)M * Hq * D, error)) ||
        !need_act("attention_append", "qkv", qkv, error) || (Hq > 0 && !need_act("attention_append", "out", out, error)))
        return false;
    if (k_cache->kind != v_cache->kind) return invalid(error, _("attention_append: k and v caches of different kinds"));
    size_t rows = k_cache->n / kv_row;
    if (rows > INT_MAX) return invalid(error, _("attention_append: a cache of %zu rows"), rows);
    size_t part = hk_append_part_floats((int)rows, M, Hq, Hkv, D);
    if (part && !scratch_need(cb, &cb->part, part * sizeof(float), error)) return false;
    return ck(hk_attention_append(cb->stream, cb->act, Hq > 0 ? out->data : NULL, qkv->data, k_cache->data,
                                  v_cache->data, buf_t(cb, k_cache), cursor->data, (int)rows, M, Hq, Hkv, D, scale,
                                  cb->part.ptr, cb->part.cap / sizeof(float)),
              "attention_append", error);
}

static bool cuda_argmax(hyocr_backend *be, const hyocr_buf *logits, int n, int V, hyocr_buf *ids, size_t off,
                        GError **error)
{
    cuda_backend *cb = CB(be);
    if (n < 0 || V <= 0 || logits->kind != HYOCR_BUF_F32 || ids->kind != HYOCR_BUF_F32)
        return invalid(error, _("argmax: invalid arguments (%d rows, vocabulary %d; F32 buffers)"), n, V);
    if (off > SIZE_MAX - (size_t)n || !need("argmax", "logits", logits, (size_t)n * V, error) ||
        !need("argmax", "ids", ids, off + (size_t)n, error))
        return false;
    return ck(hk_argmax(cb->stream, logits->data, n, V, (int32_t *)ids->data + off), "argmax", error);
}

static bool cuda_embed_ids(hyocr_backend *be, hyocr_buf *out, const hyocr_buf *table, const hyocr_buf *ids, size_t off,
                           int n, int C, GError **error)
{
    cuda_backend *cb = CB(be);
    if (n < 0 || C <= 0 || ids->kind != HYOCR_BUF_F32 || off > SIZE_MAX - (size_t)n)
        return invalid(error, _("embed_ids: invalid arguments (%d ids, width %d; an F32 buffer of ids)"), n, C);
    if (!need("embed_ids", "ids", ids, off + (size_t)n, error) || !need("embed_ids", "out", out, (size_t)n * C, error) ||
        !need("embed_ids", "table", table, (size_t)C, error))
        return false;
    size_t rows = table->n / (size_t)C;
    return ck(hk_embed_ids(cb->stream, out->data, buf_t(cb, out), table->data, buf_t(cb, table),
                           (const int32_t *)ids->data + off, n, C, rows > INT_MAX ? INT_MAX : (int)rows),
              "embed_ids", error);
}

/* Elements [off, off + (rows − 1)·stride + cols) of b, without overflowing. */
static bool rows_in(const char *what, const hyocr_buf *b, size_t off, size_t stride, int rows, int cols,
                    GError **error)
{
    size_t last = (size_t)(rows - 1);
    if ((stride && last > (SIZE_MAX - (size_t)cols) / stride) || off > SIZE_MAX - (size_t)cols - last * stride)
        return invalid(error, _("copy_rows: %d rows of %d at %zu with stride %zu overflow the %s buffer"), rows, cols, off, stride,
                       what);
    return need("copy_rows", what, b, off + last * stride + (size_t)cols, error);
}

static bool cuda_copy_rows(hyocr_backend *be, hyocr_buf *dst, size_t dst_off, size_t dst_stride, const hyocr_buf *src,
                           size_t src_off, size_t src_stride, int rows, int cols, GError **error)
{
    cuda_backend *cb = CB(be);
    if (rows < 0 || cols < 0 || (rows > 1 && (dst_stride < (size_t)cols || src_stride < (size_t)cols)))
        return invalid(error, _("copy_rows: %d rows of %d with strides %zu and %zu"), rows, cols, dst_stride, src_stride);
    if (!rows || !cols) return true;
    if (!rows_in("dst", dst, dst_off, dst_stride, rows, cols, error) ||
        !rows_in("src", src, src_off, src_stride, rows, cols, error))
        return false;
    hk_dtype dt = buf_t(cb, dst), st = buf_t(cb, src);
    if (dt == st) {
        size_t e = (size_t)dst->elem_size;
        return ck(cudaMemcpy2DAsync(at(dst, dst_off), dst_stride * e, at(src, src_off), src_stride * e, (size_t)cols * e,
                                    (size_t)rows, cudaMemcpyDeviceToDevice, cb->stream),
                  "copy_rows", error);
    }
    return ck(hk_copy_rows(cb->stream, at(dst, dst_off), dt, dst_stride, at(src, src_off), st, src_stride, rows, cols),
              "copy_rows", error);
}

static const hyocr_backend_ops cuda_ops = {
    .name = "cuda",
    .free = cuda_free,
    .alloc = cuda_alloc,
    .buf_free = cuda_buf_free,
    .upload_weight = cuda_upload_weight,
    .upload_f32 = cuda_upload_f32,
    .download_f32 = cuda_download_f32,
    .copy = cuda_copy,
    .matmul = cuda_matmul,
    .add_layernorm = cuda_add_layernorm,
    .add_rmsnorm = cuda_add_rmsnorm,
    .add = cuda_add,
    .gelu = cuda_gelu,
    .swiglu = cuda_swiglu,
    .posemb_add = cuda_posemb_add,
    .merge_gather = cuda_merge_gather,
    .append_newline = cuda_append_newline,
    .attention_full = cuda_attention_full,
    .rope_qknorm = cuda_rope_qknorm,
    .attention_paged = cuda_attention_paged,
    .qknorm_rope = cuda_qknorm_rope,
    .attention_append = cuda_attention_append,
    .argmax = cuda_argmax,
    .embed_ids = cuda_embed_ids,
    .copy_rows = cuda_copy_rows,
    .embed = cuda_embed,
    .mem_info = cuda_mem_info,
    .sync = cuda_sync,
    .release_cached = cuda_release_cached,
    .check_finite = cuda_check_finite,
    .read_bytes = cuda_read_bytes,
    .write_bytes = cuda_write_bytes,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .pick = cuda_pick,
    .pick_fetch = cuda_pick_fetch,
    .pick_logprobs = cuda_pick_logprobs,
    .decode_bind = cuda_decode_bind,
    .decode_unbind = cuda_decode_unbind,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
    .norm_matmul = cuda_norm_matmul,
    .matmul_residual = cuda_matmul_residual,
    .fused_rows = cuda_fused_rows,
    .side_begin = cuda_side_begin,
    .side_end = cuda_side_end,
    .side_idle = cuda_side_idle,
};

/* Picks the device and checks that this build can run on it. */
static bool device_open(cuda_backend *cb, const hyocr_backend_params *p, GError **error)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND, _("CUDA backend: no usable CUDA device: %s"),
                    e != cudaSuccess ? cudaGetErrorString(e) : _("the driver reports no devices"));
        return false;
    }
    cb->device = p ? p->device : 0;
    if (cb->device < 0 || cb->device >= n) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    g_dngettext(GETTEXT_PACKAGE, "CUDA backend: device %d was requested but %d device is present (0..%d)",
                                "CUDA backend: device %d was requested but %d devices are present (0..%d)", n),
                    cb->device, n, n - 1);
        return false;
    }
    struct cudaDeviceProp prop;
    if (!ck(cudaSetDevice(cb->device), N_("selecting the device"), error) ||
        !ck(cudaGetDeviceProperties(&prop, cb->device), N_("reading device properties"), error))
        return false;
    g_strlcpy(cb->gpu_name, prop.name, sizeof cb->gpu_name);
    cb->cc = prop.major * 10 + prop.minor;
    cb->sm_count = prop.multiProcessorCount;
    if (cb->cc < 75) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("CUDA backend: %s has compute capability %d.%d; hyocr needs 7.5 (Turing) or newer — use the CPU "
                      "backend"), cb->gpu_name, prop.major, prop.minor);
        return false;
    }
    if (cb->act == HK_BF16 && cb->cc < 80) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("CUDA backend: BF16 compute needs compute capability 8.0 (Ampere) or newer, but %s is %d.%d; "
                      "use FP16 instead"), cb->gpu_name, prop.major, prop.minor);
        return false;
    }
    return true;
}

static bool runtime_open(cuda_backend *cb, GError **error)
{
    /* The lowest priority: a side lane's vision pass goes first (side_stream). */
    int lo = 0, hi = 0;
    if (cudaDeviceGetStreamPriorityRange(&lo, &hi) != cudaSuccess) cudaGetLastError();
    if (!ck(cudaStreamCreateWithPriority(&cb->stream, cudaStreamNonBlocking, lo), N_("creating a stream"), error))
        return false;
    cudaError_t e = hk_kernels_probe(cb->stream, &cb->wgmma_built);
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
        cudaGetLastError();
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                    _("CUDA backend: this build has no kernels for %s (sm_%d); rebuild hyocr with -Dgpu_archs=%d added"),
                    cb->gpu_name, cb->cc, cb->cc);
        return false;
    }
    if (!ck(e, N_("launching a test kernel"), error) || !ck(cudaStreamSynchronize(cb->stream), N_("test kernel"), error) ||
        !ck_blas(cublasCreate(&cb->blas), "cublasCreate", error) ||
        !ck_blas(cublasLtCreate(&cb->lt), "cublasLtCreate", error) ||
        !ck_blas(cublasSetStream(cb->blas, cb->stream), "cublasSetStream", error) ||
        !scratch_need(cb, &cb->lt_ws, LT_WORKSPACE, error) ||
        !ck_blas(cublasSetWorkspace(cb->blas, cb->lt_ws.ptr, cb->lt_ws.cap), "cublasSetWorkspace", error))
        return false;
    for (int i = 0; i < 2; i++)
        if (!ck(cudaEventCreateWithFlags(&cb->pin_done[i], cudaEventDisableTiming), N_("creating an event"), error))
            return false;
    if (!ck(cudaEventCreateWithFlags(&cb->dmeta_done, cudaEventDisableTiming), N_("creating an event"), error))
        return false;
    /* Pinned memory is an optimisation: without it metadata goes the pageable way. */
    if (cudaHostAlloc((void **)&cb->pin, 2 * PIN_HALF, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        cb->pin = NULL;
    }
    return true;
}

/* The memory limit, a fraction of the card resolved now that the device is chosen,
 * holds from the backend's own first allocation on. Never fails: a card whose size
 * cannot be read gets no fractional limit. */
static bool limit_open(cuda_backend *cb, const hyocr_backend_params *p)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    cb->memory_limit = hyocr_memory_limit_resolve(p ? p->memory_limit : 0, (int64_t)total_b);
    return true;
}

hyocr_backend *hyocr_backend_cuda_init(const hyocr_backend_params *p, GError **error)
{
    cuda_backend *cb = g_new0(cuda_backend, 1);
    g_mutex_init(&cb->mem_lock);
    cb->base.ops = &cuda_ops;
    cb->base.kind = HYOCR_BACKEND_CUDA;
    /* F32 (the zero value of the params) means "the default", FP16. */
    cb->base.dtype = p && p->dtype == HYOCR_COMPUTE_BF16 ? HYOCR_COMPUTE_BF16 : HYOCR_COMPUTE_F16;
    cb->base.bf16_elem = 2;   /* every weight is stored in the compute type */
    cb->act = cb->base.dtype == HYOCR_COMPUTE_BF16 ? HK_BF16 : HK_F16;
    if (p) cb->base.tuning = p->tuning;
    cb->plans = g_hash_table_new_full(plan_hash, plan_equal, g_free, plan_free);
    if (!device_open(cb, p, error) || !limit_open(cb, p) || !runtime_open(cb, error)) {
        cuda_free(&cb->base);
        return NULL;
    }
    const hyocr_tuning *t = &cb->base.tuning;
    cb->gemv = !t->no_gemv;
    cb->pdl = cb->cc >= 90 && t->pdl != HYOCR_SWITCH_OFF;   /* H200: batch-1 decode +4 % (fuse-* results) */
    cb->split_override = MIN(t->decode_split, HK_SPLIT_MAX) / HK_SPLIT_MIN * HK_SPLIT_MIN;
    /* −1: the rule of decode_stages_for; HYOCR_DECODE_STAGES=0 (or out of range): k_decode */
    cb->decode_mma = t->decode_mma != HYOCR_SWITCH_OFF;
    cb->decode_stages = t->decode_stages == 0 ? -1
                        : t->decode_stages >= 2 && t->decode_stages <= HK_DECODE_STAGES_MAX ? t->decode_stages : 0;
    /* unset: the card's rule (16 concurrent 1024² pages 5255 → 5573 tokens/s on an H200, the same
     * bits: bench/results/2026-12-05-h200-s19) */
    cb->rows_wide = MIN(t->rows_wide, HK_GEMM_ROWS_GROUPS_MAX);
    cb->rope_heads = t->rope_heads > 0 ? t->rope_heads : ROPE_HEADS_DEFAULT;
    cb->verify_kernel = !t->rows_verify;
    cb->invariant = t->invariant == HYOCR_SWITCH_ON;
    cb->wgmma = !cb->wgmma_built || t->no_wgmma ? HK_VIS_MMA : t->vis_tma == HYOCR_SWITCH_OFF ? HK_VIS_WG : HK_VIS_TMA;
    cb->prefill = t->prefill_template                                         ? HK_PREFILL_TEMPLATE
                  : cb->wgmma_built && t->prefill_tma != HYOCR_SWITCH_OFF ? HK_PREFILL_TMA
                                                                         : hk_prefill_pick(cb->device);
    cb->pf_split = t->prefill_split < 0    ? 0
                   : t->prefill_split == 0 ? PF_SPLIT_DEFAULT
                   : t->prefill_split == 1 ? HK_PF_SPLIT_PER_SM
                                           : MIN(t->prefill_split, 64);
    /* unset: the partials in the spare where it has the room (H100, session 20: a 2048² page's
     * prefill 24.0 → 22.0 ms and its peak 6.3 MB lower, 4096²'s prefill 179 → 141.5 ms;
     * bench/results/2026-12-05-h200-s20); "0" off */
    cb->pf_spare = t->prefill_spare != HYOCR_SWITCH_OFF;
    /* H200, session 9: the vision attention 0.94× its time, a 2048² page's vision 136–137 → 131 ms */
    cb->vis_lazy = t->vis_lazy != HYOCR_SWITCH_OFF;
    /* unset: stream-ordered (H100, session 20: a warm 1024² page's vision 16.4–17.6 → 15.4–16.1 ms,
     * 16 concurrent 1024² pages 4727–4854 → 5107–5163 tokens/s, the engine's peak the same bytes and
     * the card's 14 MiB more; bench/results/2026-12-05-h200-s20; the default since session 21, whose
     * call1 ran every card suite and memory.sh with it); "0" off */
    cb->ordered_main = t->ordered_alloc != HYOCR_SWITCH_OFF && pools_supported(cb);
    /* "1": the stream-ordered pool (the side lane's and, with the above, the main lane's buffers) keeps
     * what is given back until the engine is idle, where its threshold of 0 gives it back to the
     * system at every synchronisation (each decode step's) and every page maps its scratch anew.
     * Off: on the H200 (session 32, call1) the card's idle time before a prompt's embedding went
     * 508 → 358 µs a page, before its pixels not down at all, and 16 concurrent 1024² pages +1.5 %
     * at the median of three, inside the runs' spread. */
    if (t->pool_keep == HYOCR_SWITCH_ON && pools_supported(cb)) keep_pool(cb);
    if (t->profile) {
        cb->prof = hyocr_cuda_profile_new(&cuda_ops, cb->stream, cb->gpu_name);
        cb->base.ops = hyocr_cuda_profile_ops(cb->prof);
    }
    return &cb->base;
}
