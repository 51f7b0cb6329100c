/* hyocr-gtk — job memory estimate. */
#include "hyocr-memory.h"
#include <glib/gi18n.h>

#define PROMPT_TEXT_TOKENS 128   /* template + the longest preset prompt, generously */

static int64_t kv_bytes_per_token(const hyocr_config *cfg, int elem_size)
{
    const hyocr_text_config *t = &cfg->text;
    return (int64_t)2 * t->num_layers * t->num_kv_heads * t->head_dim * elem_size;
}

/* Working buffers of the vision tower and merger (see vision.c's scratch slots)
 * plus the prefill of the whole prompt; attention is computed in tiles, so no
 * n² term. */
static int64_t activation_bytes(const hyocr_config *cfg, int elem_size, int n_patches, int prompt)
{
    const hyocr_vision_config *v = &cfg->vision;
    const hyocr_text_config *t = &cfg->text;
    int patch_dim = 3 * v->patch_size * v->patch_size;
    int64_t vision = (int64_t)n_patches * ((int64_t)(patch_dim + 6 * v->hidden_size + v->intermediate_size) * elem_size +
                                           (int64_t)v->hidden_size * 4);
    int64_t qkv = (int64_t)(t->num_heads + 2 * t->num_kv_heads) * t->head_dim;
    int64_t text = (int64_t)prompt * ((4 * t->hidden_size + 2 * t->intermediate_size + qkv) * elem_size +
                                      (int64_t)t->hidden_size * 4);
    return vision + text + (int64_t)t->vocab_size * 4;
}

gboolean hyocr_job_estimate(const hyocr_config *cfg, int elem_size, int width, int height,
                            int max_new_tokens, HyocrJobEstimate *out, GError **error)
{
    const hyocr_processor_config *pc = &cfg->processor;
    int factor = pc->patch_size * pc->merge_size, rh, rw;
    if (!hyocr_smart_resize(height, width, factor, pc->min_pixels, pc->max_pixels, &rh, &rw, error))
        return FALSE;
    int gh = rh / pc->patch_size, gw = rw / pc->patch_size;
    int hm = gh / pc->merge_size, wm = gw / pc->merge_size;
    *out = (HyocrJobEstimate){ .width = width, .height = height };
    out->n_patches = gh * gw;
    out->image_tokens = hm * (wm + 1) + 2;
    int prompt = out->image_tokens + PROMPT_TEXT_TOKENS;
    int ctx = cfg->text.max_position_embeddings > 0 ? cfg->text.max_position_embeddings : G_MAXINT;
    out->tokens = (int)MIN((int64_t)prompt + max_new_tokens, (int64_t)ctx);
    out->kv_bytes = (int64_t)out->tokens * kv_bytes_per_token(cfg, elem_size);
    out->activation_bytes = activation_bytes(cfg, elem_size, out->n_patches, prompt);
    out->total_bytes = out->kv_bytes + out->activation_bytes;
    return TRUE;
}

int64_t hyocr_memory_available(const hyocr_mem_info *mem, int64_t limit)
{
    int64_t reusable = mem->kv_reserved + mem->workspace;
    int64_t avail = mem->free + reusable;
    if (limit > 0) avail = mem->free > 0 ? MIN(avail, limit - mem->weights) : limit - mem->weights;
    return MAX(avail, 0);
}

static char *fmt(int64_t bytes)
{
    return g_format_size_full((guint64)MAX(bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
}

char *hyocr_memory_check(const HyocrJobEstimate *est, const hyocr_mem_info *mem, int64_t limit,
                         gboolean cpu)
{
    int64_t avail = hyocr_memory_available(mem, limit);
    if (est->total_bytes <= avail) return NULL;
    g_autofree char *need = fmt(est->total_bytes), *have = fmt(avail), *kv = fmt(est->kv_bytes);
    const char *where = limit > 0 ? _("within the memory limit")
                        : cpu   ? _("in RAM")
                                : _("on the GPU");
    const char *advice = limit > 0
        ? _("Lower “Maximum image side” or “Maximum new tokens” in Preferences, or raise the memory limit.")
        : _("Lower “Maximum image side” or “Maximum new tokens” in Preferences, or close programs that use the memory.");
    /* Translators: e.g. "This job needs about 3.1 GiB (a 3000 × 4000 image becomes 11877 tokens; 1.2 GiB of it
     * for up to 8192 new tokens), but only 1.0 GiB is free on the GPU." followed by advice. */
    return g_strdup_printf(_("This job needs about %s (a %d × %d image becomes %d tokens; %s of it for the answer’s "
                             "cache), but only %s is free %s. %s"),
                           need, est->width, est->height, est->image_tokens, kv, have, where, advice);
}
