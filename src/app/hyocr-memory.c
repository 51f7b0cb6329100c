/* hyocr-gtk — memory refusal message, in the words of the preferences. */
#include "hyocr-memory.h"
#include <glib/gi18n.h>

static char *fmt(int64_t bytes)
{
    return g_format_size_full((guint64)MAX(bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
}

/* The "Memory Limit" preference is in MiB: the least that holds bytes. */
static int limit_mib(int64_t bytes)
{
    return (int)MIN((bytes + (1 << 20) - 1) >> 20, G_MAXINT);
}

static char *weights_refusal(const hyocr_memplan *plan)
{
    g_autofree char *need = fmt(plan->total), *have = fmt(plan->budget);
    return g_strdup_printf(_("The model needs %s for its weights alone, more than the memory limit of %s. Raise "
                             "“Memory limit” in Preferences to %d MiB or more."),
                           need, have, limit_mib(plan->total));
}

/* What to change, one sentence each: the preferences the advice names, then
 * the memory itself. */
static char *advice_words(const hyocr_memplan *plan)
{
    const hyocr_memplan_advice *a = &plan->advice;
    GString *s = g_string_new(NULL);
    if (a->max_side) {
        g_autofree char *n = fmt(a->max_side_total);
        g_string_append_printf(s, _("Set “Maximum image side” to %d or less in Preferences (the job then needs %s)."),
                               a->max_side, n);
    }
    if (a->max_new_tokens) {
        g_autofree char *n = fmt(a->max_new_tokens_total);
        if (s->len) g_string_append_c(s, ' ');
        g_string_append_printf(s, _("Set “Maximum new tokens” to %d or less in Preferences (the job then needs %s)."),
                               a->max_new_tokens, n);
    }
    bool other = s->len > 0;
    if (other) g_string_append_c(s, ' ');
    if (plan->budget_is_limit)
        g_string_append_printf(s, other ? _("Otherwise, raise the memory limit to %d MiB or more.")
                                        : _("Raise the memory limit to %d MiB or more."),
                               limit_mib(plan->total));
    else
        g_string_append(s, other ? _("Otherwise, close programs that use the memory.")
                                 : _("Close programs that use the memory."));
    return g_string_free(s, FALSE);
}

char *hyocr_memory_refusal(const hyocr_memplan *plan)
{
    if (plan->fits) return NULL;
    if (plan->prompt_tokens == 0) return weights_refusal(plan);
    g_autofree char *need = fmt(plan->total), *have = fmt(plan->budget), *kv = fmt(plan->kv);
    g_autofree char *parts = hyocr_memplan_describe(plan);
    g_autofree char *advice = advice_words(plan);
    const char *where = plan->budget_is_limit ? _("within the memory limit")
                        : plan->backend_kind == HYOCR_BACKEND_CPU ? _("in RAM") : _("on the GPU");
    /* Translators: "This job needs 3.1 GiB (a 3000 × 4000 image becomes 11877 tokens, and the cache for the
     * answer takes 1.2 GiB), but only 2.0 GiB is available on the GPU." + advice + details */
    return g_strdup_printf(_("This job needs %s (a %d × %d image becomes %d tokens, and the cache for the answer "
                             "takes %s), but only %s is available %s. %s\n\n%s"),
                           need, plan->image_width, plan->image_height, plan->image_tokens, kv, have, where, advice,
                           parts);
}

void hyocr_memory_reword_error(GError *error)
{
    const hyocr_memplan *plan = hyocr_error_get_memplan(error);
    char *words = plan ? hyocr_memory_refusal(plan) : NULL;
    if (!words) return;
    g_free(error->message);
    error->message = words;
}
