/* hyocr — backend-independent parts of the compute seam: dispatch, RoPE tables. */
#include "backend.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "i18n.h"
#include <math.h>
#include <string.h>

void hyocr_backend_free(hyocr_backend *be)
{
    if (be && be->ops && be->ops->free)
        be->ops->free(be);
}

/* transformers builds inv_freq as 1.0 / (base ** (arange(0, dim, 2).float() / dim)):
 * base is a Python float but the exponent tensor is float32, so torch evaluates
 * pow in float32 with the base rounded to float32, and the reciprocal in float32.
 * Doing the same (rather than pow in double) reproduces its table to the ulp. */
void hyocr_rope_params_init(hyocr_rope_params *rp, const hyocr_config *cfg)
{
    const hyocr_text_config *t = &cfg->text;
    memset(rp, 0, sizeof *rp);
    int dim = t->head_dim;
    rp->head_dim = dim;
    rp->layout = cfg->rope_layout;

    double base = t->rope_theta;
    if (t->rope_alpha != 0.0 && dim > 2)
        base = t->rope_theta * pow(t->rope_alpha, (double)dim / (double)(dim - 2));
    float base_f = (float)base;
    int half = dim / 2;
    if (half > (int)G_N_ELEMENTS(rp->inv_freq))
        half = (int)G_N_ELEMENTS(rp->inv_freq);
    for (int i = 0; i < half; i++) {
        float e = (float)(2 * i) / (float)dim;
        rp->inv_freq[i] = 1.0f / powf(base_f, e);
    }

    int n = t->n_rope_sections;
    if (n < 0) n = 0;
    if (n > (int)G_N_ELEMENTS(rp->section)) n = (int)G_N_ELEMENTS(rp->section);
    rp->n_sections = n;
    for (int k = 0; k < n; k++)
        rp->section[k] = t->rope_section[k];
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

/* The same table as hyocr_rope_params_init for a plain base (no NTK alpha, no sections). */
void hyocr_rope_params_init_plain(hyocr_rope_params *rp, int head_dim, double theta)
{
    memset(rp, 0, sizeof *rp);
    rp->head_dim = head_dim;
    float base_f = (float)theta;
    int half = MIN(head_dim / 2, (int)G_N_ELEMENTS(rp->inv_freq));
    for (int i = 0; i < half; i++)
        rp->inv_freq[i] = 1.0f / powf(base_f, (float)(2 * i) / (float)head_dim);
}
