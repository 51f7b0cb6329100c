/* hyocr — reading the tuning switches (tuning.h), once. */
#include "tuning.h"
#include <stdlib.h>
#include <string.h>

static hyocr_switch env_switch(const char *name)
{
    const char *v = g_getenv(name);
    if (!v || !*v) return HYOCR_SWITCH_DEFAULT;
    return strcmp(v, "0") == 0 ? HYOCR_SWITCH_OFF : HYOCR_SWITCH_ON;
}

/* The count given, 0 when unset, empty or not a number (or negative). */
static int env_count(const char *name)
{
    const char *v = g_getenv(name);
    if (!v || !*v) return 0;
    gint64 n = g_ascii_strtoll(v, NULL, 10);
    return (int)CLAMP(n, 0, G_MAXINT);
}

/* A count whose "0" is off (-1), not the default: unset (0) leaves the backend's default, which
 * may be on once measured. */
static int env_count_or_off(const char *name)
{
    const char *v = g_getenv(name);
    return v && strcmp(v, "0") == 0 ? -1 : env_count(name);
}

void hyocr_tuning_from_env(hyocr_tuning *t)
{
    memset(t, 0, sizeof *t);
    t->profile = env_switch("HYOCR_PROFILE") == HYOCR_SWITCH_ON;
    t->no_graph = env_switch("HYOCR_NO_GRAPH") == HYOCR_SWITCH_ON;
    t->no_gemv = env_switch("HYOCR_NO_GEMV") == HYOCR_SWITCH_ON;
    t->cpu_generic = env_switch("HYOCR_CPU_GENERIC") == HYOCR_SWITCH_ON;
    t->cpu_f32_weights = env_switch("HYOCR_CPU_F32_WEIGHTS") == HYOCR_SWITCH_ON;
    t->fuse = env_switch("HYOCR_FUSE");
    t->pdl = env_switch("HYOCR_PDL");
    t->decode_split = env_count("HYOCR_DECODE_SPLIT");
    t->decode_stages = env_count_or_off("HYOCR_DECODE_STAGES");
    t->decode_mma = env_switch("HYOCR_DECODE_MMA");
    t->rows_wide = env_count_or_off("HYOCR_ROWS_WIDE");   /* on by default since session 19 */
    t->rope_heads = env_count("HYOCR_ROPE_HEADS");
    t->text_chunk_rows = env_count("HYOCR_TEXT_CHUNK_ROWS");
    t->vit_chunk_rows = env_count("HYOCR_VIT_CHUNK_ROWS");
    t->ordered_alloc = env_switch("HYOCR_ORDERED_ALLOC");
    t->pool_keep = env_switch("HYOCR_POOL_KEEP");
    /* set but below 1 (or not a number): one thread, as it always meant */
    const char *rt = g_getenv("HYOCR_RESIZE_THREADS");
    t->resize_threads = rt && *rt ? MAX(env_count("HYOCR_RESIZE_THREADS"), 1) : 0;
    t->rows_verify = env_switch("HYOCR_VERIFY_KERNEL") == HYOCR_SWITCH_OFF;
    t->no_wgmma = env_switch("HYOCR_NO_WGMMA") == HYOCR_SWITCH_ON;
    t->prefill_template = env_switch("HYOCR_PREFILL_TEMPLATE") == HYOCR_SWITCH_ON;
    t->prefill_split = env_count_or_off("HYOCR_PREFILL_SPLIT");
    t->invariant = env_switch("HYOCR_INVARIANT");
    t->vision_beside = env_switch("HYOCR_VISION_BESIDE");
    t->prefill_spare = env_switch("HYOCR_PREFILL_SPARE");   /* on by default since session 20 */
    t->vis_lazy = env_switch("HYOCR_VIS_LAZY_RESCALE");
    t->vis_tma = env_switch("HYOCR_VIS_TMA");
    t->prefill_tma = env_switch("HYOCR_PREFILL_TMA");
    t->pick_logprobs = env_switch("HYOCR_PICK_LOGPROBS");
    t->pinned_pixels = env_switch("HYOCR_PINNED_PIXELS");
    const char *si = g_getenv("HYOCR_DRAFT_STANDIN");
    if (si) g_strlcpy(t->draft_standin, si, sizeof t->draft_standin);
    const char *k = g_getenv("HYOCR_DRAFT_STANDIN_K");
    t->draft_standin_k = k && *k ? MAX(g_ascii_strtod(k, NULL), 0.0) : 0.0;   /* a non-number: 0 */
    t->draft_standin_no_draft = env_switch("HYOCR_DRAFT_STANDIN_NO_DRAFT") == HYOCR_SWITCH_ON;
}
