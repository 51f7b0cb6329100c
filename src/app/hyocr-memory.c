/* hyocr-gtk — memory refusal message. */
#include "hyocr-memory.h"
#include <glib/gi18n.h>

static char *fmt(int64_t bytes)
{
    return g_format_size_full((guint64)MAX(bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
}

char *hyocr_memory_refusal(const hyocr_memplan *plan, int width, int height, gboolean is_limit, gboolean cpu)
{
    if (plan->fits) return NULL;
    g_autofree char *need = fmt(plan->total), *have = fmt(plan->budget), *kv = fmt(plan->kv);
    g_autofree char *parts = hyocr_memplan_describe(plan);
    const char *where = is_limit ? _("within the memory limit") : cpu ? _("in RAM") : _("on the GPU");
    const char *advice = is_limit
        ? _("Lower “Maximum image side” or “Maximum new tokens” in Preferences, or raise the memory limit.")
        : _("Lower “Maximum image side” or “Maximum new tokens” in Preferences, or close programs that use the memory.");
    /* Translators: "This job needs 3.1 GiB (a 3000 × 4000 image becomes 11877 tokens, and the cache for the
     * answer takes 1.2 GiB), but only 2.0 GiB is available on the GPU." + details + advice */
    return g_strdup_printf(_("This job needs %s (a %d × %d image becomes %d tokens, and the cache for the answer "
                             "takes %s), but only %s is available %s. %s\n\n%s"),
                           need, width, height, plan->image_tokens, kv, have, where, advice, parts);
}
