/* hyocr-gtk pieces without windows: the spotting parser, JSON answers, field
 * names, presets → engine tasks, the memory refusal message, the model folder
 * check, texture conversion. */
#include "app-test.h"
#include "error.h"
#include "hyocr-image-util.h"
#include "hyocr-window-private.h"
#include "document.h"
#include "hyocr-json.h"
#include "hyocr-memory.h"
#include "models.h"
#include "hyocr-spotting.h"
#include "hyocr-worker.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

static void test_spotting_parse(void)
{
    g_autoptr(GPtrArray) l = hyocr_spotting_parse("Hello world(12,34),(560,78)\n"
                                                  "Total (USD)(100, 200), (300, 250)\n"
                                                  "no box here\n"
                                                  "reversed(900,800),(100,50)\n"
                                                  "two(1,2),(3,4)items(5,6),(7,8)\n"
                                                  "clamped(0,0),(1200,99999)\n"
                                                  "unfinished(10,20),(30,4");
    g_assert_cmpuint(l->len, ==, 6);
    HyocrSpotLine *a = l->pdata[0], *b = l->pdata[1], *c = l->pdata[2], *d = l->pdata[4], *e = l->pdata[5];
    g_assert_cmpstr(a->text, ==, "Hello world");
    g_assert_cmpint(a->x1, ==, 12);
    g_assert_cmpint(a->y1, ==, 34);
    g_assert_cmpint(a->x2, ==, 560);
    g_assert_cmpint(a->y2, ==, 78);
    g_assert_cmpstr(b->text, ==, "Total (USD)");
    g_assert_cmpint(b->y2, ==, 250);
    g_assert_cmpstr(c->text, ==, "reversed");
    g_assert_cmpint(c->x1, ==, 100);
    g_assert_cmpint(c->x2, ==, 900);
    g_assert_cmpint(c->y1, ==, 50);
    g_assert_cmpstr(((HyocrSpotLine *)l->pdata[3])->text, ==, "two");
    g_assert_cmpstr(d->text, ==, "items");
    g_assert_cmpint(d->x2, ==, 7);
    g_assert_cmpint(e->x2, ==, 1000);
    g_assert_cmpint(e->y2, ==, 1000);
    g_autofree char *json = hyocr_spotting_to_json(l);
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, json, -1, NULL));
    JsonArray *arr = json_node_get_array(json_parser_get_root(p));
    g_assert_cmpuint(json_array_get_length(arr), ==, 6);
    JsonObject *o = json_array_get_object_element(arr, 1);
    g_assert_cmpstr(json_object_get_string_member(o, "text"), ==, "Total (USD)");
    g_assert_cmpint(json_array_get_int_element(json_object_get_array_member(o, "box"), 3), ==, 250);
}

/* The JIT-compiled regex does not check UTF-8: on a truncated sequence it stepped over the
 * bytes that followed (reading past the end of a line that ended in one), lost items and
 * returned text that was not UTF-8 (which GTK and JSON then refuse). */
static void test_spotting_invalid_utf8(void)
{
    static const struct { const char *in; const char *texts[3]; } cases[] = {
        { "a\xe4" "b(1,2),(3,4)", { "a\xEF\xBF\xBD" "b" } },
        { "\xff(1,2),(3,4)", { "\xEF\xBF\xBD" } },
        { "x\xf0\x9f\x98(1,2),(3,4)y(5,6),(7,8)", { "x\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", "y" } },
        { "\x80\x80(1,2),(3,4)", { "\xEF\xBF\xBD\xEF\xBF\xBD" } },
        { "ok(1,2),(3,4)\xf4", { "ok" } },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GPtrArray) l = hyocr_spotting_parse(cases[i].in);
        guint n = 0;
        while (n < 3 && cases[i].texts[n]) n++;
        g_assert_cmpuint(l->len, ==, n);
        for (guint k = 0; k < n; k++) {
            HyocrSpotLine *s = l->pdata[k];
            g_assert_true(g_utf8_validate(s->text, -1, NULL));
            g_assert_cmpstr(s->text, ==, cases[i].texts[k]);
            g_assert_cmpint(s->x1, ==, 1 + 4 * (int)k);
            g_assert_cmpint(s->y2, ==, 4 + 4 * (int)k);
        }
    }
}

/* Engine text can hold NUL bytes; GTK text cannot: the app shows each as ␀. */
static void test_displayable_text(void)
{
    g_autofree char *a = hyocr_worker_displayable_text("a\0b\0", 4);
    g_assert_cmpstr(a, ==, "a\xE2\x90\x80" "b\xE2\x90\x80");
    g_autofree char *b = hyocr_worker_displayable_text("plain", 5);
    g_assert_cmpstr(b, ==, "plain");
    g_autofree char *c = hyocr_worker_displayable_text("", 0);
    g_assert_cmpstr(c, ==, "");
}

static void test_json_prettify(void)
{
    g_autofree char *a = hyocr_json_prettify("```json\n{\"name\": \"Ann\", \"total\": \"€3\"}\n```");
    g_assert_nonnull(a);
    g_assert_nonnull(strstr(a, "\"name\" : \"Ann\""));
    g_assert_nonnull(strchr(a, '\n'));
    g_autofree char *b = hyocr_json_prettify("  [1, 2]  ");
    g_assert_nonnull(b);
    g_assert_null(hyocr_json_prettify("name: Ann"));
    g_assert_null(hyocr_json_prettify("```json\n{\"unterminated\": \n```"));
    g_assert_null(hyocr_json_prettify(""));
}

static void test_fields_parse(void)
{
    g_auto(GStrv) a = hyocr_fields_parse(" name, date ;total,,\n姓名，金额 ");
    const char *want[] = { "name", "date", "total", "姓名", "金额", NULL };
    g_assert_cmpstrv(a, want);
    g_auto(GStrv) b = hyocr_fields_parse(" , ;");
    g_assert_cmpuint(g_strv_length(b), ==, 0);
    /* GRegex returns no split at all for text that is not UTF-8; the loop over it crashed */
    g_auto(GStrv) c = hyocr_fields_parse("a\xff,b");
    const char *want_c[] = { "a\xEF\xBF\xBD", "b", NULL };
    g_assert_cmpstrv(c, want_c);
}

static void test_presets(void)
{
    GSettings *s = app_test_settings();
    app_test_reset_settings();
    static const struct { const char *preset, *target; hyocr_task task; } cases[] = {
        { "recognize", "en", HYOCR_TASK_RECOGNIZE },
        { "spotting", "en", HYOCR_TASK_SPOTTING },
        { "parse-document", "en", HYOCR_TASK_PARSE_DOCUMENT },
        { "parse-table", "en", HYOCR_TASK_PARSE_TABLE },
        { "parse-formula", "en", HYOCR_TASK_PARSE_FORMULA },
        { "parse-chart", "en", HYOCR_TASK_PARSE_CHART },
        { "translate", "en", HYOCR_TASK_TRANSLATE_EN },
        { "translate", "zh", HYOCR_TASK_TRANSLATE_ZH },
        { "subtitles", "en", HYOCR_TASK_SUBTITLES },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_settings_set_string(s, "preset", cases[i].preset);
        g_settings_set_string(s, "translate-target", cases[i].target);
        g_autoptr(HyocrJobOptions) o = hyocr_job_options_new_from_settings(s, NULL);
        g_assert_nonnull(o);
        g_assert_cmpint(o->task, ==, cases[i].task);
        g_assert_cmpstr(hyocr_preset_get_nick(o->preset), ==, cases[i].preset);
    }
    /* Every task of the engine (prompt.h) is offered, as `hyocr run --task` offers it: a
     * preset's nick is the task's name with dashes, translation's two targets one preset. */
    gboolean offered[HYOCR_TASK_COUNT] = { FALSE };
    offered[HYOCR_TASK_TRANSLATE_ZH] = TRUE;   /* checked above, through the target */
    for (int p = 0; p < HYOCR_N_PRESETS; p++) {
        hyocr_task t = hyocr_preset_get_task((HyocrPreset)p);
        offered[t] = TRUE;
        g_autofree char *nick = g_strdelimit(g_strdup(hyocr_preset_get_nick((HyocrPreset)p)), "-", '_');
        g_autofree char *name = g_strdup(hyocr_task_name(t));
        if (t == HYOCR_TASK_TRANSLATE_EN) name[strlen("translate")] = 0;
        g_assert_cmpstr(nick, ==, name);
        g_assert_cmpstr(hyocr_preset_get_label((HyocrPreset)p), !=, "");
    }
    for (int t = 0; t < HYOCR_TASK_COUNT; t++)
        if (!offered[t]) g_test_fail_printf("the app offers no preset for the task %s", hyocr_task_name((hyocr_task)t));
    /* Presets that need input refuse without it, with a message that says what to type. */
    g_autoptr(GError) error = NULL;
    g_settings_set_string(s, "preset", "extract-fields");
    g_assert_null(hyocr_job_options_new_from_settings(s, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT);
    g_assert_nonnull(strstr(error->message, "field"));
    const char *keys[] = { "name", "total", NULL };
    g_settings_set_strv(s, "fields", keys);
    g_autoptr(HyocrJobOptions) f = hyocr_job_options_new_from_settings(s, NULL);
    g_assert_cmpint(f->task, ==, HYOCR_TASK_EXTRACT_FIELDS);
    g_assert_cmpstrv(f->fields, keys);
    g_clear_error(&error);
    g_settings_set_string(s, "preset", "custom");
    g_settings_set_string(s, "custom-prompt", "   ");
    g_assert_null(hyocr_job_options_new_from_settings(s, &error));
    g_assert_nonnull(error);
    g_settings_set_string(s, "custom-prompt", " Read the licence plate. ");
    g_autoptr(HyocrJobOptions) c = hyocr_job_options_new_from_settings(s, NULL);
    g_assert_cmpstr(c->custom_prompt, ==, "Read the licence plate.");
    /* Generation options: 0 penalty means the model's default (< 0 for the engine). */
    g_settings_set_int(s, "max-new-tokens", 77);
    g_settings_set_double(s, "repetition-penalty", 0.0);
    g_autoptr(HyocrJobOptions) g = hyocr_job_options_new_from_settings(s, NULL);
    g_assert_cmpint(g->max_new_tokens, ==, 77);
    g_assert_cmpfloat(g->repetition_penalty, <, 0);
    g_settings_set_double(s, "repetition-penalty", 1.25);
    g_autoptr(HyocrJobOptions) h = hyocr_job_options_new_from_settings(s, NULL);
    g_assert_cmpfloat_with_epsilon(h->repetition_penalty, 1.25, 1e-6);
    app_test_reset_settings();
}

/* The refusal names the numbers of the engine's plan and the preferences to
 * change (a plan as the engine fills it: image, budget, device, advice). */
static void test_memory_refusal_words(void)
{
    g_autofree char *dir = app_test_data("ckpt-flat", NULL);
    g_autoptr(hyocr_config) cfg = hyocr_config_load(dir, NULL);
    hyocr_memplan_params p;
    hyocr_memplan_params_init(&p, HYOCR_BACKEND_CUDA);
    hyocr_memplan plan;
    hyocr_memplan_for_job(cfg, &p, 188, 250, 11900, 8192, &plan);
    plan.backend_kind = HYOCR_BACKEND_CUDA;
    plan.image_width = 3000;
    plan.image_height = 4000;
    plan.budget = plan.total;
    plan.budget_is_limit = TRUE;
    plan.fits = TRUE;
    g_assert_null(hyocr_memory_refusal(&plan));
    plan.budget = plan.total / 2;
    plan.fits = FALSE;
    plan.advice = (hyocr_memplan_advice){ .max_side = 1536, .max_side_total = plan.budget - 1 };
    g_autofree char *limit = hyocr_memory_refusal(&plan);
    g_assert_nonnull(limit);
    g_assert_nonnull(strstr(limit, "3000 × 4000"));
    g_assert_nonnull(strstr(limit, "memory limit"));
    g_assert_nonnull(strstr(limit, "Maximum image side"));
    g_assert_nonnull(strstr(limit, "“Maximum image side” to 1536 or less"));
    g_assert_null(strstr(limit, "Maximum new tokens"));   /* the advice offers none */
    g_autofree char *mib = g_strdup_printf("%" G_GINT64_FORMAT " MiB or more", (plan.total + (1 << 20) - 1) >> 20);
    g_assert_nonnull(strstr(limit, mib));
    g_assert_nonnull(strstr(limit, "weights"));   /* the plan's parts */
    g_autofree char *tokens = g_strdup_printf("%d tokens", plan.image_tokens);
    g_assert_nonnull(strstr(limit, tokens));
    plan.budget_is_limit = FALSE;
    g_autofree char *gpu = hyocr_memory_refusal(&plan);
    g_assert_nonnull(strstr(gpu, "on the GPU"));
    g_assert_nonnull(strstr(gpu, "close programs"));
    plan.backend_kind = HYOCR_BACKEND_CPU;
    g_autofree char *cpu = hyocr_memory_refusal(&plan);
    g_assert_nonnull(strstr(cpu, "in RAM"));
}

/* A job the engine refuses (CPU, the tiny checkpoint, a memory limit between
 * its weights and the page): the plan's advice comes back as data, and the app
 * words it with the preferences and the values that fit; the engine's error
 * for the same job carries the same plan and gets the same words. */
static void test_memory_refusal_engine(void)
{
    g_autofree char *dir = app_test_data("ckpt-flat", NULL);
    g_autofree char *image = app_test_data("images", "big_420x300.png", NULL);
    hyocr_engine_params ep;
    hyocr_engine_params_init(&ep);
    ep.model_dir = dir;
    ep.device = HYOCR_DEVICE_CPU;
    ep.n_threads = 1;
    ep.memory_limit = 1000 << 10;   /* the weights take 832 KiB (bf16 matrices), this page 1.1 MiB */
    g_autoptr(GError) err = NULL;
    g_autoptr(hyocr_engine) eng = hyocr_engine_init(&ep, &err);
    g_assert_no_error(err);
    hyocr_job_params jp;
    hyocr_job_params_init(&jp);
    jp.image_path = image;
    jp.max_new_tokens = 12;
    hyocr_memplan plan;
    g_assert_true(hyocr_engine_plan_job(eng, &jp, &plan, &err));
    g_assert_false(plan.fits);
    g_assert_cmpint(plan.advice.max_side, >, 0);
    g_autofree char *words = hyocr_memory_refusal(&plan);
    g_test_message("%s", words);
    g_assert_nonnull(strstr(words, "420 × 300"));
    g_assert_nonnull(strstr(words, "within the memory limit"));
    g_autofree char *side = g_strdup_printf("“Maximum image side” to %d or less", plan.advice.max_side);
    g_assert_nonnull(strstr(words, side));
    g_assert_null(strstr(words, "--"));

    g_assert_false(hyocr_engine_run(eng, &jp, NULL, &err));
    g_assert_error(err, HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY);
    g_assert_null(strstr(err->message, "Preferences"));   /* the engine's own words */
    hyocr_memory_reword_error(err);
    g_assert_cmpstr(err->message, ==, words);
    g_clear_error(&err);

    /* Any other error keeps the engine's message. */
    err = g_error_new_literal(HYOCR_ERROR, HYOCR_ERROR_NO_MEMORY, "cannot allocate");
    hyocr_memory_reword_error(err);
    g_assert_cmpstr(err->message, ==, "cannot allocate");
}

static void test_model_folder(void)
{
    g_autofree char *good = app_test_data("ckpt-flat", NULL);
    g_auto(GStrv) none = hyocr_models_missing_files(good);
    g_assert_cmpuint(g_strv_length(none), ==, 0);
    g_autofree char *tmp = g_dir_make_tmp("hyocr-units-XXXXXX", NULL);
    g_auto(GStrv) all = hyocr_models_missing_files(tmp);
    const char *want[] = { "config.json", "tokenizer.json", "*.safetensors", NULL };
    g_assert_cmpstrv(all, want);
    g_autofree char *cfg = g_build_filename(tmp, "config.json", NULL);
    g_file_set_contents(cfg, "{}", -1, NULL);
    g_auto(GStrv) two = hyocr_models_missing_files(tmp);
    g_assert_cmpuint(g_strv_length(two), ==, 2);
    g_remove(cfg);
    g_rmdir(tmp);
    g_autofree char *def = hyocr_models_default_folder();
    g_assert_true(g_str_has_prefix(def, g_get_user_data_dir()));
    /* HunyuanOCR-1.5, -1.0 or the legacy name (test-app-download checks the order). */
    g_autofree char *models = g_build_filename(g_get_user_data_dir(), "hyocr", "models", "HunyuanOCR", NULL);
    g_assert_true(g_str_has_prefix(def, models));
}

/* Pixels of a pasted texture reach the engine as the decoder would give them. */
static void test_texture_roundtrip(void)
{
    g_autofree char *path = app_test_data("images", "odd_137x91.png", NULL);
    g_autoptr(hyocr_image) want = hyocr_image_load(path, NULL, NULL);
    g_autoptr(GdkTexture) tex = gdk_texture_new_from_filename(path, NULL);
    g_assert_nonnull(tex);
    g_autoptr(hyocr_image) got = hyocr_image_from_texture(tex, NULL);
    g_assert_cmpint(got->width, ==, want->width);
    g_assert_cmpint(got->height, ==, want->height);
    g_assert_cmpmem(got->rgb, (gsize)got->width * got->height * 3, want->rgb, (gsize)want->width * want->height * 3);
    g_autoptr(GdkTexture) back = hyocr_texture_from_image(got);
    g_autoptr(hyocr_image) again = hyocr_image_from_texture(back, NULL);
    g_assert_cmpmem(again->rgb, (gsize)got->width * got->height * 3, got->rgb, (gsize)got->width * got->height * 3);
}

/* A 1×1 GIF: gdk-pixbuf reads it, the engine does not (document.h's list). */
static const char gif_1x1[] = "GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00"
                              ",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";

static hyocr_image *render_file(const char *path, int max_side, GError **error)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(HyocrJobOptions) opts = g_new0(HyocrJobOptions, 1);
    g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
    return hyocr_job_render(job, max_side, error);
}

/* The app reads a file with the engine's readers only: a corrupt PNG fails with the
 * file's name, a GIF (which gdk-pixbuf could decode) with the engine's word for it,
 * and max_side is applied as `hyocr run` applies it. */
static void test_load_image_errors(void)
{
    g_autofree char *tmp = g_dir_make_tmp("hyocr-units-XXXXXX", NULL);
    g_autofree char *bad = g_build_filename(tmp, "broken.png", NULL);
    g_file_set_contents(bad, "\x89PNG\r\n\x1a\n\0\0\0\rIHDRgarbage", 24, NULL);
    g_autoptr(GError) error = NULL;
    g_assert_null(render_file(bad, 0, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(error->message, "broken.png"));
    g_clear_error(&error);
    g_remove(bad);

    g_autofree char *gif = g_build_filename(tmp, "pixel.gif", NULL);
    g_file_set_contents(gif, gif_1x1, sizeof gif_1x1 - 1, NULL);
    g_autoptr(GdkPixbuf) pb = gdk_pixbuf_new_from_file(gif, NULL);
    g_assert_nonnull(pb);   /* so the refusal below is the engine's list, not a broken file */
    g_assert_null(render_file(gif, 0, &error));
    g_assert_error(error, HYOCR_ERROR, HYOCR_ERROR_IMAGE);
    g_assert_nonnull(strstr(error->message, "looks like a GIF image"));
    g_assert_nonnull(strstr(error->message, "which hyocr does not read"));
    g_remove(gif);
    g_rmdir(tmp);

    g_autofree char *ok = app_test_data("images", "big_420x300.png", NULL);
    g_autoptr(hyocr_image) scaled = render_file(ok, 100, NULL);
    g_assert_cmpint(MAX(scaled->width, scaled->height), ==, 100);
}

/* The MIME types of the formats the engine reads, in its order. */
static GPtrArray *engine_mime_types(void)
{
    GPtrArray *all = g_ptr_array_new();
    size_t n;
    const hyocr_format_info *formats = hyocr_formats(&n);
    for (size_t i = 0; i < n; i++)
        for (const char *const *m = formats[i].mime_types; *m; m++) g_ptr_array_add(all, (gpointer)*m);
    return all;
}

static int cmp_strp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Open's filter offers exactly those formats: no gdk-pixbuf extras, no pattern. */
static void test_open_filter(void)
{
    g_autoptr(GtkFileFilter) filter = hyocr_window_open_filter_new();
    g_autoptr(GVariant) v = g_variant_ref_sink(gtk_file_filter_to_gvariant(filter));
    g_autoptr(GVariant) rules = g_variant_get_child_value(v, 1);
    g_autoptr(GPtrArray) want = engine_mime_types();
    g_autoptr(GPtrArray) got = g_ptr_array_new();
    for (gsize i = 0; i < g_variant_n_children(rules); i++) {
        guint32 kind;
        const char *value;
        g_variant_get_child(rules, i, "(u&s)", &kind, &value);
        g_assert_cmpuint(kind, ==, 1);   /* a MIME type, not a glob */
        g_ptr_array_add(got, (gpointer)value);
    }
    /* GTK keeps a rule per type added, by the shared MIME database's own name for
     * it (image/heic is image/heif there), in its own order */
    g_assert_cmpuint(got->len, ==, want->len);
    g_autoptr(GPtrArray) canonical = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < want->len; i++) {
        g_autofree char *type = g_content_type_from_mime_type(want->pdata[i]);
        g_ptr_array_add(canonical, g_content_type_get_mime_type(type));
    }
    g_ptr_array_sort(canonical, cmp_strp);
    g_ptr_array_sort(got, cmp_strp);
    for (guint i = 0; i < got->len; i++) g_assert_cmpstr(got->pdata[i], ==, canonical->pdata[i]);
}

/* The desktop entry's MimeType, generated at build time, is the same list. */
static void test_desktop_mime_types(void)
{
    const char *path = g_getenv("HYOCR_DESKTOP_FILE");
    g_assert_nonnull(path);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_assert_true(g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, NULL));
    g_auto(GStrv) mimes = g_key_file_get_string_list(kf, "Desktop Entry", "MimeType", NULL, NULL);
    g_assert_nonnull(mimes);
    g_autoptr(GPtrArray) want = engine_mime_types();
    g_assert_cmpuint(g_strv_length(mimes), ==, want->len);
    for (guint i = 0; i < want->len; i++) g_assert_cmpstr(mimes[i], ==, want->pdata[i]);
}

typedef struct {
    HyocrJob   *job;
    const char *want;
} text_wait;

static gboolean job_text_is(gpointer data)
{
    const text_wait *w = data;
    return g_strcmp0(hyocr_job_get_text(w->job), w->want) == 0;
}

/* An FP16 overflow makes the engine redo a job: what it streamed before goes,
 * also when the restart and the new pieces land in the same flush. */
static void test_job_restart(void)
{
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    g_autoptr(GFile) file = g_file_new_for_path("/nonexistent/page.png");
    g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
    hyocr_job_post_piece(job, "first ", 1);
    hyocr_job_post_piece(job, "try", 2);
    text_wait w = { job, "first try" };
    g_assert_true(app_test_wait(job_text_is, &w, APP_TEST_WAIT_MS));
    hyocr_job_post_restart(job);
    hyocr_job_post_piece(job, "again", 1);
    w.want = "again";
    g_assert_true(app_test_wait(job_text_is, &w, APP_TEST_WAIT_MS));
    g_assert_cmpint(hyocr_job_get_n_tokens(job), ==, 1);
    hyocr_job_post_restart(job);
    w.want = "";
    g_assert_true(app_test_wait(job_text_is, &w, APP_TEST_WAIT_MS));
    g_assert_cmpint(hyocr_job_get_n_tokens(job), ==, 0);
}

typedef struct {
    gint64 loop_time[2];   /* the main context's clock when the flush was dispatched: no later than the flush */
    gint64 wall[2];        /* the clock in the flush: no earlier */
    guint  n;
} FlushTimes;

static void on_flush(HyocrJob *job, GParamSpec *pspec, FlushTimes *t)
{
    if (t->n >= 2) return;
    t->loop_time[t->n] = g_source_get_time(g_main_current_source());
    t->wall[t->n] = g_get_monotonic_time();
    t->n++;
}

/* Pieces posted between two flushes reach the main context as one update, and
 * flushes keep a frame (16 ms) apart even when the worker posts right after one. */
static void test_job_coalesce(void)
{
    g_autoptr(HyocrJobOptions) opts = hyocr_job_options_new_from_settings(app_test_settings(), NULL);
    g_autoptr(GFile) file = g_file_new_for_path("/nonexistent/page.png");
    g_autoptr(HyocrJob) job = hyocr_job_new_for_file(file, opts);
    FlushTimes t = { 0 };
    g_signal_connect(job, "notify::n-updates", G_CALLBACK(on_flush), &t);
    g_autoptr(GString) want = g_string_new(NULL);
    for (int i = 1; i <= 1000; i++) {
        g_autofree char *piece = g_strdup_printf("%d ", i);
        hyocr_job_post_piece(job, piece, i);
        g_string_append(want, piece);
    }
    text_wait w = { job, want->str };
    g_assert_true(app_test_wait(job_text_is, &w, APP_TEST_WAIT_MS));
    g_assert_cmpuint(hyocr_job_get_n_updates(job), ==, 1);
    g_assert_cmpint(hyocr_job_get_n_tokens(job), ==, 1000);

    hyocr_job_post_piece(job, "more", 1001);
    g_string_append(want, "more");
    w.want = want->str;
    g_assert_true(app_test_wait(job_text_is, &w, APP_TEST_WAIT_MS));
    g_assert_cmpuint(hyocr_job_get_n_updates(job), ==, 2);
    g_assert_cmpuint(t.n, ==, 2);
    /* The measured span can only be longer than the real one (a busy machine
     * stretches it), so this fails only when a flush came early. */
    g_assert_cmpint(t.wall[1] - t.loop_time[0], >=, 16000);
}

static gboolean is_null(gpointer data)
{
    return *(gpointer *)data == NULL;
}

/* Ctrl+Q (app.quit) closes the window as its close button does: its size is
 * remembered, its worker stopped. Last: the application is told to quit. */
static void test_quit_remembers_size(void)
{
    app_test_reset_settings();
    HyocrWindow *win = app_test_window("ckpt-flat", TRUE);
    gtk_window_set_default_size(GTK_WINDOW(win), 777, 555);
    gpointer alive = win;
    g_object_add_weak_pointer(G_OBJECT(win), &alive);
    g_action_group_activate_action(G_ACTION_GROUP(app_test_app()), "quit", NULL);
    g_assert_true(app_test_wait(is_null, &alive, APP_TEST_WAIT_MS));
    g_assert_cmpint(g_settings_get_int(app_test_settings(), "window-width"), ==, 777);
    g_assert_cmpint(g_settings_get_int(app_test_settings(), "window-height"), ==, 555);
}

int main(int argc, char **argv)
{
    app_test_init(&argc, &argv);
    g_test_add_func("/app/units/job-restart", test_job_restart);
    g_test_add_func("/app/units/job-coalesce", test_job_coalesce);
    g_test_add_func("/app/units/spotting-parse", test_spotting_parse);
    g_test_add_func("/app/units/spotting-invalid-utf8", test_spotting_invalid_utf8);
    g_test_add_func("/app/units/displayable-text", test_displayable_text);
    g_test_add_func("/app/units/json-prettify", test_json_prettify);
    g_test_add_func("/app/units/fields-parse", test_fields_parse);
    g_test_add_func("/app/units/presets", test_presets);
    g_test_add_func("/app/units/memory-refusal-words", test_memory_refusal_words);
    g_test_add_func("/app/units/memory-refusal-engine", test_memory_refusal_engine);
    g_test_add_func("/app/units/model-folder", test_model_folder);
    g_test_add_func("/app/units/texture-roundtrip", test_texture_roundtrip);
    g_test_add_func("/app/units/load-image-errors", test_load_image_errors);
    g_test_add_func("/app/units/open-filter", test_open_filter);
    g_test_add_func("/app/units/desktop-mime-types", test_desktop_mime_types);
    g_test_add_func("/app/units/zz-quit-remembers-size", test_quit_remembers_size);
    return g_test_run();
}
