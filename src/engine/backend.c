/* hyocr — backend-independent parts of the compute seam: dispatch, the RoPE table,
 * the argument checks every backend makes alike. */
#include "backend.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "i18n.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

void hyocr_backend_free(hyocr_backend *be)
{
    if (be && be->ops && be->ops->free)
        be->ops->free(be);
}

/* The backend's name at the head of its messages. */
static const char *who(const hyocr_backend *be)
{
    return be && be->kind == HYOCR_BACKEND_CUDA ? _("CUDA backend") : _("CPU backend");
}

static bool invalid(const hyocr_backend *be, GError **error, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static bool invalid(const hyocr_backend *be, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, "%s: %s", who(be), msg);
    return false;
}

/* axis[d] of every rotary dim (spec §5.4.2): R1 cuts the D dims into chunks of
 * 2·section, R2 cuts the D/2 frequencies into chunks of section that both
 * halves share. Sections of 0 are allowed (an axis no dim reads). */
static bool rope_axes(hyocr_rope_params *rp, GError **error)
{
    int D = rp->head_dim, half = D / 2, sum = 0;
    if (rp->n_sections == 0) return true;   /* 1-D: every dim reads axis 0 */
    bool bad = false;
    for (int k = 0; k < rp->n_sections; k++) {
        bad |= rp->section[k] < 0;
        sum += rp->section[k];
    }
    if (bad || sum != half) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("RoPE sections (%d of them) must be non-negative and sum to head_dim/2 = %d; "
                      "fix the rope section config"), rp->n_sections, half);
        return false;
    }
    /* The chunks cover exactly the dims, so the walk ends inside the last non-empty section. */
    bool r1 = rp->layout == HYOCR_ROPE_LAYOUT_R1;
    int unit = r1 ? 2 : 1;
    for (int d = 0; d < D; d++) {
        int idx = r1 ? d : d % half, k = 0, end = unit * rp->section[0];
        while (idx >= end) end += unit * rp->section[++k];
        rp->axis[d] = (uint8_t)k;
    }
    return true;
}

/* transformers builds inv_freq as 1.0 / (base ** (arange(0, dim, 2).float() / dim)):
 * base is a Python float but the exponent tensor is float32, so torch evaluates
 * pow in float32 with the base rounded to float32, and the reciprocal in float32.
 * Doing the same (rather than pow in double) reproduces its table to the ulp. */
static void rope_inv_freq(hyocr_rope_params *rp, double base)
{
    int dim = rp->head_dim, half = MIN(dim / 2, (int)G_N_ELEMENTS(rp->inv_freq));
    float base_f = (float)base;
    for (int i = 0; i < half; i++)
        rp->inv_freq[i] = 1.0f / powf(base_f, (float)(2 * i) / (float)dim);
}

bool hyocr_rope_params_init(hyocr_rope_params *rp, const hyocr_config *cfg, GError **error)
{
    const hyocr_text_config *t = &cfg->text;
    memset(rp, 0, sizeof *rp);
    int dim = t->head_dim;
    if (dim <= 0 || dim % 2 || dim > HYOCR_ROPE_MAX_DIM) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_CONFIG,
                    _("RoPE: head_dim %d must be even and at most %d"), dim, HYOCR_ROPE_MAX_DIM);
        return false;
    }
    rp->head_dim = dim;
    rp->layout = cfg->rope_layout;

    /* NTK alpha scales the base (spec §5.4.1) */
    double base = t->rope_theta;
    if (t->rope_alpha != 0.0 && dim > 2)
        base = t->rope_theta * pow(t->rope_alpha, (double)dim / (double)(dim - 2));
    rope_inv_freq(rp, base);

    int n = t->n_rope_sections;
    if (n < 0) n = 0;
    if (n > (int)G_N_ELEMENTS(rp->section)) n = (int)G_N_ELEMENTS(rp->section);
    rp->n_sections = n;
    for (int k = 0; k < n; k++)
        rp->section[k] = t->rope_section[k];
    return rope_axes(rp, error);
}

bool hyocr_rope_check(const hyocr_backend *be, const char *op, const hyocr_rope_params *rp, int M,
                      const int32_t *pos, int n_axes, int Hq, int Hkv, int min_hq, int max_dim, int *axes,
                      GError **error)
{
    int D = rp ? rp->head_dim : 0;
    if (!rp || M < 0 || Hq < min_hq || Hkv <= 0 || D <= 0 || D % 2 || D > max_dim || n_axes < 1 || (M > 0 && !pos))
        return invalid(be, error, _("%s: invalid arguments (M %d, heads %d/%d, head dim %d, %d axes)"), op, M, Hq,
                       Hkv, D, n_axes);
    if (n_axes != 1 && n_axes < rp->n_sections)
        return invalid(be, error, _("%s: %d position axes given, %d rope sections need them"), op, n_axes,
                       rp->n_sections);
    *axes = rp->n_sections == 0 ? 1 : n_axes;
    return true;
}

hyocr_buf_kind hyocr_weight_kind(const hyocr_tensor *const *t, int n, bool matrix)
{
    if (!matrix || n <= 0) return HYOCR_BUF_WEIGHT;
    for (int i = 0; i < n; i++)
        if (!t[i] || t[i]->dtype != HYOCR_DTYPE_BF16) return HYOCR_BUF_WEIGHT;
    return HYOCR_BUF_WEIGHT_BF16;
}

int64_t hyocr_memory_limit_resolve(int64_t limit, int64_t total)
{
    if (limit >= 0) return limit;
    return total > 0 ? (int64_t)((double)total * (double)-limit / 1e6) : 0;
}

/* R1: an explicit output size, so torch's source scale is in/out in float. R2: the
 * original code's scale_factor, a float32 tensor (out + 0.1)/edge read back with
 * .item(), whose reciprocal in double torch rounds to float. */
float hyocr_posemb_scale(int out, int edge, bool copy, hyocr_posemb_interp interp)
{
    if (copy) return 1.0f;
    if (interp == HYOCR_POSEMB_R2) {
        float sf = ((float)out + 0.1f) / (float)edge;
        return (float)(1.0 / (double)sf);
    }
    return (float)edge / (float)out;
}

static bool cache_ok(const hyocr_backend *be, const char *what, const hyocr_buf *b, size_t n, GError **error)
{
    if (!b || !b->data) return invalid(be, error, _("attention_paged: buffer '%s' is missing"), what);
    if (b->n < n)
        return invalid(be, error, _("attention_paged: buffer '%s' holds %zu elements but %zu are needed"), what, b->n,
                       n);
    return true;
}

bool hyocr_paged_check(const hyocr_backend *be, const hyocr_buf *k_cache, const hyocr_buf *v_cache, int block_size,
                       const hyocr_seq_view *seqs, int n_seqs, int Hq, int Hkv, int D, int64_t *rows, GError **error)
{
    if (n_seqs < 0 || (n_seqs > 0 && !seqs) || block_size <= 0 || Hq <= 0 || Hkv <= 0 || Hq % Hkv || D <= 0)
        return invalid(be, error,
                       _("attention_paged: invalid shape (%d sequences, block size %d, heads %d/%d, head dim %d)"),
                       n_seqs, block_size, Hq, Hkv, D);
    size_t block_elems = (size_t)block_size * Hkv * D;
    if (!cache_ok(be, "k_cache", k_cache, block_elems, error) || !cache_ok(be, "v_cache", v_cache, k_cache->n, error))
        return false;
    size_t cache_blocks = k_cache->n / block_elems;
    int64_t total = 0;
    for (int s = 0; s < n_seqs; s++) {
        const hyocr_seq_view *sv = &seqs[s];
        if (sv->n_past < 0 || sv->n_new < 0 || sv->n_past > INT_MAX - sv->n_new ||
            (sv->n_past + sv->n_new > 0 && !sv->block_table))
            return invalid(be, error, _("attention_paged: sequence %d has invalid lengths (past %d, new %d)"), s,
                           sv->n_past, sv->n_new);
        int nb = (sv->n_past + sv->n_new + block_size - 1) / block_size;
        for (int i = 0; i < nb; i++)
            if (sv->block_table[i] < 0 || (size_t)sv->block_table[i] >= cache_blocks)
                return invalid(be, error, _("attention_paged: sequence %d, block table entry %d is block %d but the "
                                            "cache has %zu blocks"), s, i, sv->block_table[i], cache_blocks);
        total += sv->n_new;
    }
    if (rows) *rows = total;
    return true;
}

#if !HYOCR_HAVE_CUDA
hyocr_backend *hyocr_backend_cuda_init(const hyocr_backend_params *p, GError **error)
{
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_BACKEND,
                _("this build of hyocr was built without CUDA support; use the CPU backend "
                  "or rebuild with -Dcuda=enabled"));
    return NULL;
}
#endif

/* The same table as hyocr_rope_params_init for a plain base (no NTK alpha, no
 * sections: every dim reads axis 0). */
void hyocr_rope_params_init_plain(hyocr_rope_params *rp, int head_dim, double theta)
{
    memset(rp, 0, sizeof *rp);
    rp->head_dim = head_dim;
    rope_inv_freq(rp, theta);
}
