/* The tuning switches (tuning.h): one parsing rule for every HYOCR_* variable
 * (unset or empty: the default, "0": off, anything else: on), and an engine
 * that reads them once at init and hands them to its backend and model. */
#include "engine-internal.h"
#include "testutil.h"
#include "tuning.h"

#include <string.h>

static const char *const NAMES[] = {
    "HYOCR_PROFILE", "HYOCR_NO_GRAPH", "HYOCR_NO_GEMV", "HYOCR_CPU_GENERIC",
    "HYOCR_FUSE", "HYOCR_PDL", "HYOCR_DECODE_SPLIT", "HYOCR_RESIZE_THREADS", "HYOCR_NO_WGMMA",
    "HYOCR_VERIFY_KERNEL", "HYOCR_TEXT_CHUNK_ROWS", "HYOCR_PREFILL_TEMPLATE", "HYOCR_DECODE_STAGES",
    "HYOCR_ROPE_HEADS", "HYOCR_PREFILL_SPLIT", "HYOCR_VISION_BESIDE",
    "HYOCR_VIS_LAZY_RESCALE", "HYOCR_VIS_TMA", "HYOCR_PREFILL_TMA", "HYOCR_VIT_CHUNK_ROWS", "HYOCR_ORDERED_ALLOC",
    "HYOCR_PREFILL_SPARE", "HYOCR_CPU_F32_WEIGHTS",
    "HYOCR_ROWS_WIDE", "HYOCR_INVARIANT", "HYOCR_PICK_LOGPROBS", "HYOCR_PINNED_PIXELS", "HYOCR_POOL_KEEP",
    "HYOCR_DECODE_MMA",
    "HYOCR_DRAFT_STANDIN", "HYOCR_DRAFT_STANDIN_K", "HYOCR_DRAFT_STANDIN_NO_DRAFT",
};

static void clear_env(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(NAMES); i++) g_unsetenv(NAMES[i]);
}

/* Every variable set to v. */
static hyocr_tuning read_all(const char *v)
{
    for (size_t i = 0; i < G_N_ELEMENTS(NAMES); i++) g_setenv(NAMES[i], v, TRUE);
    hyocr_tuning t;
    hyocr_tuning_from_env(&t);
    clear_env();
    return t;
}

static void test_defaults(void)
{
    clear_env();
    hyocr_tuning t, zero;
    memset(&t, 0xff, sizeof t);
    memset(&zero, 0, sizeof zero);
    hyocr_tuning_from_env(&t);
    g_assert_cmpmem(&t, sizeof t, &zero, sizeof zero);
    /* empty is unset */
    t = read_all("");
    g_assert_cmpmem(&t, sizeof t, &zero, sizeof zero);
}

static void test_on(void)
{
    for (int i = 0; i < 2; i++) {
        hyocr_tuning t = read_all(i ? "yes" : "1");
        g_assert_true(t.profile);
        g_assert_true(t.no_graph);
        g_assert_true(t.no_gemv);
        g_assert_true(t.cpu_generic);
        g_assert_true(t.cpu_f32_weights);
        g_assert_true(t.no_wgmma);
        g_assert_true(t.prefill_template);
        g_assert_cmpint(t.prefill_split, ==, i ? 0 : 1);   /* a count: "yes" is not a number */
        g_assert_cmpint(t.vis_lazy, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.fuse, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.pdl, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.vision_beside, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.ordered_alloc, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.prefill_spare, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.vis_tma, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.prefill_tma, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.invariant, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.pick_logprobs, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.pinned_pixels, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.pool_keep, ==, HYOCR_SWITCH_ON);
        g_assert_cmpint(t.decode_mma, ==, HYOCR_SWITCH_ON);
        g_assert_true(t.draft_standin_no_draft);
        g_assert_cmpint(t.rows_wide, ==, i ? 0 : 1);   /* a count too */
    }
}

/* "0" is off for every switch: HYOCR_CPU_GENERIC=0 used to turn the portable
 * paths on (only the variable's presence was checked). */
static void test_zero_is_off(void)
{
    hyocr_tuning t = read_all("0");
    g_assert_false(t.profile);
    g_assert_false(t.no_graph);
    g_assert_false(t.no_gemv);
    g_assert_false(t.cpu_generic);
    g_assert_false(t.cpu_f32_weights);
    g_assert_false(t.no_wgmma);
    g_assert_false(t.prefill_template);
    g_assert_cmpint(t.fuse, ==, HYOCR_SWITCH_OFF);
    g_assert_cmpint(t.pdl, ==, HYOCR_SWITCH_OFF);
    g_assert_cmpint(t.vision_beside, ==, HYOCR_SWITCH_OFF);
    g_assert_cmpint(t.ordered_alloc, ==, HYOCR_SWITCH_OFF);   /* off, where unset is stream-ordered */
    g_assert_cmpint(t.prefill_spare, ==, HYOCR_SWITCH_OFF);   /* off, where unset is the backend's spare */
    g_assert_cmpint(t.decode_split, ==, 0);
    g_assert_cmpint(t.decode_stages, ==, -1);   /* k_decode, where unset is the backend's rule */
    g_assert_cmpint(t.rope_heads, ==, 0);
    g_assert_cmpint(t.rows_wide, ==, -1);   /* off, where unset is the backend's rule */
    g_assert_cmpint(t.text_chunk_rows, ==, 0);
    g_assert_cmpint(t.prefill_split, ==, -1);   /* off, where unset is the backend's default */
    g_assert_cmpint(t.vis_lazy, ==, HYOCR_SWITCH_OFF);   /* every tile, where unset is the backend's lazy */
    g_assert_cmpint(t.vis_tma, ==, HYOCR_SWITCH_OFF);   /* k_vis_wg, where unset is k_vis_tma on Hopper */
    g_assert_cmpint(t.prefill_tma, ==, HYOCR_SWITCH_OFF);   /* k_prefill, where unset is k_prefill_tma */
    g_assert_cmpint(t.invariant, ==, HYOCR_SWITCH_OFF);
    g_assert_cmpint(t.pick_logprobs, ==, HYOCR_SWITCH_OFF);   /* the host path, where unset is the backend's */
    g_assert_cmpint(t.pinned_pixels, ==, HYOCR_SWITCH_OFF);
    g_assert_cmpint(t.pool_keep, ==, HYOCR_SWITCH_OFF);
    g_assert_cmpint(t.decode_mma, ==, HYOCR_SWITCH_OFF);   /* k_decode_staged, where unset is k_decode_mma */
    g_assert_false(t.draft_standin_no_draft);
    g_assert_true(t.rows_verify);   /* the block kernel is the default: 0 turns it off */
    g_assert_cmpint(t.resize_threads, ==, 1);   /* a thread count below 1 is one thread */
    g_setenv("HYOCR_CPU_GENERIC", "0", TRUE);
    hyocr_tuning_from_env(&t);
    clear_env();
    g_assert_false(t.cpu_generic);
}

static void test_counts(void)
{
    static const struct { const char *v; int split, threads; } cases[] = {
        { "96", 96, 96 }, { "3", 3, 3 }, { "-5", 0, 1 }, { "many", 0, 1 }, { "12abc", 12, 12 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_setenv("HYOCR_DECODE_SPLIT", cases[i].v, TRUE);
        g_setenv("HYOCR_RESIZE_THREADS", cases[i].v, TRUE);
        g_setenv("HYOCR_TEXT_CHUNK_ROWS", cases[i].v, TRUE);
        g_setenv("HYOCR_VIT_CHUNK_ROWS", cases[i].v, TRUE);
        g_setenv("HYOCR_DECODE_STAGES", cases[i].v, TRUE);
        g_setenv("HYOCR_ROPE_HEADS", cases[i].v, TRUE);
        g_setenv("HYOCR_PREFILL_SPLIT", cases[i].v, TRUE);
        g_setenv("HYOCR_ROWS_WIDE", cases[i].v, TRUE);
        hyocr_tuning t;
        hyocr_tuning_from_env(&t);
        clear_env();
        g_assert_cmpint(t.decode_split, ==, cases[i].split);
        g_assert_cmpint(t.text_chunk_rows, ==, cases[i].split);
        g_assert_cmpint(t.vit_chunk_rows, ==, cases[i].split);
        g_assert_cmpint(t.decode_stages, ==, cases[i].split);
        g_assert_cmpint(t.rope_heads, ==, cases[i].split);
        g_assert_cmpint(t.prefill_split, ==, cases[i].split);
        g_assert_cmpint(t.rows_wide, ==, cases[i].split);
        g_assert_cmpint(t.resize_threads, ==, cases[i].threads);
    }
}

/* What an engine read at init is what its backend and model run with. Each case
 * runs in a subprocess that sets its environment before any thread exists (the
 * engine starts one; setenv is not safe beside it). */
static void engine_case(bool fuse)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", NULL);
    g_setenv("HYOCR_CPU_GENERIC", "0", TRUE);
    g_setenv("HYOCR_RESIZE_THREADS", "2", TRUE);
    g_setenv("HYOCR_TEXT_CHUNK_ROWS", "1536", TRUE);
    g_setenv("HYOCR_VIT_CHUNK_ROWS", "2048", TRUE);
    if (fuse) g_setenv("HYOCR_FUSE", "1", TRUE);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 2;
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = hyocr_engine_init(&ep, &err);
    g_assert_no_error(err);
    g_assert_false(eng->tuning.cpu_generic);
    g_assert_cmpint(eng->tuning.resize_threads, ==, 2);
    g_assert_cmpmem(&eng->be->tuning, sizeof eng->be->tuning, &eng->tuning, sizeof eng->tuning);
    /* the CPU's default is unfused; HYOCR_FUSE=1 fuses its steps, whatever their rows */
    g_assert_cmpint(eng->model->fused_rows, ==, fuse ? INT_MAX : 0);
    g_assert_cmpint(eng->model->text_chunk_rows, ==, 1536);   /* the params left it at 0 */
    g_assert_cmpint(eng->model->vit_chunk_rows, ==, 2048);
}

static void test_engine_hands_down(gconstpointer fuse)
{
    g_autofree char *dir = hyocr_test_data("ckpt-flat", "config.json", NULL);
    if (!hyocr_test_require(dir)) return;
    if (g_test_subprocess()) {
        engine_case(GPOINTER_TO_INT(fuse));
        return;
    }
    clear_env();
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tuning/defaults", test_defaults);
    g_test_add_func("/tuning/on", test_on);
    g_test_add_func("/tuning/zero-is-off", test_zero_is_off);
    g_test_add_func("/tuning/counts", test_counts);
    g_test_add_data_func("/tuning/engine-hands-down/default", GINT_TO_POINTER(0), test_engine_hands_down);
    g_test_add_data_func("/tuning/engine-hands-down/fused", GINT_TO_POINTER(1), test_engine_hands_down);
    return g_test_run();
}
