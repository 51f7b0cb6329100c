/* hyocr — the error domain. It is an extended GError domain (GLib ≥ 2.68) so a
 * refusal can carry its memory plan as data through g_propagate_error,
 * g_error_copy and the batch's per-job results. */
#include "error.h"
#include "memplan.h"

typedef struct {
    hyocr_memplan *plan;   /* NULL unless attached */
} HyocrErrorPrivate;

static void hyocr_error_private_init(HyocrErrorPrivate *priv)
{
    priv->plan = NULL;
}

static void hyocr_error_private_copy(const HyocrErrorPrivate *src, HyocrErrorPrivate *dst)
{
    dst->plan = src->plan ? g_memdup2(src->plan, sizeof *src->plan) : NULL;
}

static void hyocr_error_private_clear(HyocrErrorPrivate *priv)
{
    g_clear_pointer(&priv->plan, g_free);
}

G_DEFINE_EXTENDED_ERROR(HyocrError, hyocr_error)

const hyocr_memplan *hyocr_error_get_memplan(const GError *error)
{
    if (!error || error->domain != HYOCR_ERROR) return NULL;
    return hyocr_error_get_private(error)->plan;
}

void hyocr_error_set_memplan(GError *error, const hyocr_memplan *plan)
{
    g_return_if_fail(error != NULL && error->domain == HYOCR_ERROR && plan != NULL);
    HyocrErrorPrivate *priv = hyocr_error_get_private(error);
    g_free(priv->plan);
    priv->plan = g_memdup2(plan, sizeof *plan);
}
