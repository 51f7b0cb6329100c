/* hyocr — command-line entry point: subcommand dispatch plus the foundation
 * commands (inspect, tokenize, detokenize, prepare). */
#include "cli.h"
#include "checkpoint.h"
#include "error.h"
#include "hyocr-build-config.h"
#include "hyocr.h"
#include "memplan.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

static int fail(GError *error)
{
    g_printerr("hyocr: %s\n", error ? error->message : _("unknown error"));
    return 1;
}

static int usage_error(GOptionContext *ctx, const char *msg)
{
    g_printerr("hyocr: %s\n\n", msg);
    g_autofree char *help = g_option_context_get_help(ctx, TRUE, NULL);
    g_printerr("%s", help);
    return 2;
}

GOptionContext *hyocr_cli_context_new(const char *parameter_string, const GOptionEntry *entries)
{
    GOptionContext *ctx = g_option_context_new(parameter_string);
    g_option_context_set_translation_domain(ctx, GETTEXT_PACKAGE);
    g_option_context_add_main_entries(ctx, entries, GETTEXT_PACKAGE);
    return ctx;
}

gboolean hyocr_cli_parse(GOptionContext *ctx, int *argc, char ***argv)
{
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &error)) {
        g_printerr("hyocr: %s\n", error->message);
        return FALSE;
    }
    return TRUE;
}

static hyocr_tokenizer *load_tokenizer(const char *model_dir, GError **error)
{
    g_autofree char *path = g_build_filename(model_dir, "tokenizer.json", NULL);
    return hyocr_tokenizer_load(path, error);
}

/* ---------------------------------------------------------------- inspect */

static void print_config(const hyocr_config *c)
{
    g_print("version        %s (%s config.json)\n", c->version == HYOCR_MODEL_VERSION_1_5 ? "1.5" : "1.0",
            c->nested_layout ? "nested transformers-5" : "flat Tencent");
    g_print("text           %d layers, hidden %d, %d heads / %d kv heads × %d, mlp %d, vocab %d\n",
            c->text.num_layers, c->text.hidden_size, c->text.num_heads, c->text.num_kv_heads,
            c->text.head_dim, c->text.intermediate_size, c->text.vocab_size);
    g_print("rope           theta %g, NTK alpha %g, xdrope section [%d, %d, %d, %d] (%s layout)\n",
            c->text.rope_theta, c->text.rope_alpha, c->text.rope_section[0], c->text.rope_section[1],
            c->text.rope_section[2], c->text.rope_section[3],
            c->rope_layout == HYOCR_ROPE_LAYOUT_R1 ? "R1 transformers" : "R2 original");
    g_print("vision         %d layers, hidden %d, %d heads, mlp %d, patch %d, merge %d, position grid %d×%d\n",
            c->vision.num_layers, c->vision.hidden_size, c->vision.num_heads, c->vision.intermediate_size,
            c->vision.patch_size, c->vision.spatial_merge_size, hyocr_config_pos_edge(c), hyocr_config_pos_edge(c));
    g_print("processor      min %" G_GINT64_FORMAT " px, max %" G_GINT64_FORMAT " px\n",
            c->processor.min_pixels, c->processor.max_pixels);
    GString *eos = g_string_new(NULL);
    for (int i = 0; i < c->generation.n_eos; i++)
        g_string_append_printf(eos, "%s%d", i ? ", " : "", c->generation.eos_ids[i]);
    char rp[32] = "none";
    if (c->generation.repetition_penalty > 0) g_snprintf(rp, sizeof rp, "%g", c->generation.repetition_penalty);
    g_print("generation     eos [%s], repetition penalty %s\n", eos->str, rp);
    g_string_free(eos, TRUE);
    g_print("image tokens   start %d, image %d, end %d\n", c->im_start_id, c->image_token_id, c->im_end_id);
}

static void print_stats(const hyocr_checkpoint_stats *s)
{
    g_print("tensors        %zu used, %zu ignored, in %d file%s (%s names)\n", s->n_tensors, s->n_ignored,
            s->n_files, s->n_files == 1 ? "" : "s", s->transformers_names ? "transformers-5" : "Tencent");
    g_print("parameters     %" G_GINT64_FORMAT " (vision %" G_GINT64_FORMAT ", text %" G_GINT64_FORMAT ")\n",
            s->n_params, s->n_params_vision, s->n_params_text);
    for (int d = 0; d < HYOCR_DTYPE_COUNT; d++)
        if (s->bytes_per_dtype[d])
            g_print("bytes %-8s %zu (%.1f MiB)\n", hyocr_dtype_name((hyocr_dtype)d), s->bytes_per_dtype[d],
                    s->bytes_per_dtype[d] / 1048576.0);
    g_print("lm_head        %s\n", s->lm_head_tied ? "tied to embed_tokens" : "explicit lm_head.weight");
}

/* The DFlash draft beside the model (issue 20), or why there is none to use. */
static void print_draft(const hyocr_checkpoint *ck)
{
    const hyocr_checkpoint *dr = hyocr_checkpoint_draft(ck);
    const GError *err = hyocr_checkpoint_draft_error(ck);
    if (!dr) {
        g_print("draft          %s\n", err ? "unusable, the model runs without it:" : "none (no dflash/ folder)");
        if (err) g_print("               %s\n", err->message);
        return;
    }
    const hyocr_dflash_config *d = hyocr_checkpoint_dflash_config(dr);
    hyocr_checkpoint_stats s;
    hyocr_checkpoint_get_stats(dr, &s);
    GString *taps = g_string_new(NULL);
    for (int i = 0; i < d->n_target_layers; i++) g_string_append_printf(taps, "%s%d", i ? ", " : "", d->target_layer_ids[i]);
    g_print("draft          DFlash, %d layers, hidden %d, %d heads / %d kv heads × %d, mlp %d, rope theta %g\n",
            d->num_layers, d->hidden_size, d->num_heads, d->num_kv_heads, d->head_dim, d->intermediate_size,
            d->rope_theta);
    g_print("  block        %d (bonus + %d drafts), mask token %d, reads target layers [%s]\n", d->block_size,
            d->block_size - 1, d->mask_token_id, taps->str);
    g_string_free(taps, TRUE);
    g_print("  tensors      %zu used, %zu ignored, %" G_GINT64_FORMAT " parameters\n", s.n_tensors, s.n_ignored,
            s.n_params);
    for (int t = 0; t < HYOCR_DTYPE_COUNT; t++)
        if (s.bytes_per_dtype[t])
            g_print("  bytes %-6s %zu (%.1f MiB)\n", hyocr_dtype_name((hyocr_dtype)t), s.bytes_per_dtype[t],
                    s.bytes_per_dtype[t] / 1048576.0);
}

#define GIB(x) ((double)(x) / (1024.0 * 1024.0 * 1024.0))

/* Prompt tokens of the recognize task for a grid; without a tokenizer, the
 * image tokens plus a generous 64 for the template and task text. */
static int plan_prompt_tokens(const hyocr_config *cfg, const hyocr_tokenizer *tok, int gh, int gw)
{
    g_autofree char *text = hyocr_task_prompt(HYOCR_TASK_RECOGNIZE, cfg->version, NULL, NULL, NULL);
    g_autoptr(hyocr_prompt) p = tok && text ? hyocr_prompt_build(tok, cfg, text, gh, gw, NULL) : NULL;
    return p ? p->n : hyocr_memplan_image_tokens(gh, gw) + 64;
}

/* The memory plan (memplan.h) of square pages on a device kind: arithmetic from
 * the config, so no GPU is needed to see what a job will take on one. */
static void print_memory_plan(const hyocr_checkpoint *ck, const char *model, hyocr_backend_kind kind, int max_new)
{
    const hyocr_config *cfg = hyocr_checkpoint_config(ck);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    hyocr_memplan_params p;
    hyocr_memplan_params_init(&p, kind);
    p.lm_head_tied = st.lm_head_tied;
    p.max_model_len = cfg->text.max_position_embeddings > 0 ? cfg->text.max_position_embeddings : 0;
    /* the draft beside the model: its weights, and a context for every page (speculation is on by default) */
    const hyocr_checkpoint *dr = hyocr_checkpoint_draft(ck);
    p.draft = dr ? hyocr_checkpoint_dflash_config(dr) : NULL;
    p.spec_tokens = p.draft ? p.draft->block_size - 1 : 0;
    hyocr_checkpoint_stats ds = { 0 };
    if (dr) hyocr_checkpoint_get_stats(dr, &ds);
    hyocr_memplan_params_bf16(&p, st.bf16_only, ds.bf16_only, 2);   /* 2: what both backends keep a bf16 matrix in */
    g_autoptr(hyocr_tokenizer) tok = load_tokenizer(model, NULL);
    hyocr_memplan plan;
    hyocr_memplan_for_job(cfg, &p, 0, 0, 0, 1, &plan);
    g_print("memory plan    %s, %d-byte activations/KV, %d-byte weight matrices, up to %d new tokens%s\n",
            kind == HYOCR_BACKEND_CUDA ? "cuda" : "cpu", p.act_elem, p.matrix_elem, max_new,
            tok ? "" : " (no tokenizer: prompt text estimated)");
    g_print("  weights      %.3f GiB (%" G_GINT64_FORMAT " bytes)\n", GIB(plan.weights), plan.weights);
    g_print("  KV cache     %.1f MiB per 1K tokens (%" G_GINT64_FORMAT " bytes per token)\n",
            plan.kv_per_token * 1024 / 1048576.0, plan.kv_per_token);
    if (plan.backend) g_print("  backend      %.1f MiB of its own scratch\n", plan.backend / 1048576.0);
    if (p.draft)
        g_print("  draft        %.1f MiB of weights (in the weights above), its context %.1f MiB per 1K tokens: the "
                "pages below speculate (--speculative-tokens 0 saves both)\n", plan.draft_weights / 1048576.0,
                hyocr_memplan_draft_ctx_per_token(p.draft, p.act_elem) * 1024 / 1048576.0);
    g_print("  %-10s %8s %8s %8s %8s %8s %8s %8s %8s  GiB\n", "page", "patches", "prompt", "vision", "prefill", "KV",
            "peak-vis", "total", "tight");
    static const int sides[] = { 1024, 2048, 4096 };
    for (size_t i = 0; i < G_N_ELEMENTS(sides); i++) {
        const hyocr_processor_config *pc = &cfg->processor;
        int rh, rw;
        if (pc->patch_size <= 0 || !hyocr_smart_resize(sides[i], sides[i], pc->patch_size * pc->merge_size,
                                                       pc->min_pixels, pc->max_pixels, &rh, &rw, NULL))
            continue;
        int gh = rh / pc->patch_size, gw = rw / pc->patch_size;
        hyocr_memplan_for_job(cfg, &p, gh, gw, plan_prompt_tokens(cfg, tok, gh, gw), max_new, &plan);
        g_autofree char *page = g_strdup_printf("%d×%d", sides[i], sides[i]);
        /* what the engine falls back to under a limit: the vision weights off the device while it decodes */
        hyocr_memplan tight;
        p.vision_offload = true;
        hyocr_memplan_for_job(cfg, &p, gh, gw, plan.prompt_tokens, max_new, &tight);
        p.vision_offload = false;
        g_print("  %-11s %8d %8d %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", page, plan.n_patches, plan.prompt_tokens,
                GIB(plan.vision), GIB(plan.prefill + plan.image_embeds), GIB(plan.kv), GIB(plan.peak_vision),
                GIB(plan.total), GIB(tight.total));
    }
    g_print("  (tight: the total when the vision weights leave the device while a page is decoded, which the\n"
            "   engine does by itself when only that fits)\n");
}

int hyocr_cmd_inspect(int argc, char **argv)
{
    g_autofree char *model = NULL;
    g_autofree char *device = NULL;
    int max_new = 8192;
    GOptionEntry entries[] = {
        { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model, N_("Checkpoint folder"), "DIR" },
        { "device", 0, 0, G_OPTION_ARG_STRING, &device, N_("Also print the memory plan for this device"), "cpu|cuda" },
        { "max-new-tokens", 0, 0, G_OPTION_ARG_INT, &max_new, N_("New tokens the plan makes room for (8192)"), "N" },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("— describe a checkpoint folder"), entries);
    if (!hyocr_cli_parse(ctx, &argc, &argv)) return 2;
    if (!model) return usage_error(ctx, _("--model DIR is required"));
    hyocr_device dev = HYOCR_DEVICE_AUTO;
    if (device && (!hyocr_cli_parse_device(device, &dev, NULL) || dev == HYOCR_DEVICE_AUTO))
        return usage_error(ctx, _("--device must be cpu or cuda"));
    if (max_new < 1) return usage_error(ctx, _("--max-new-tokens must be at least 1"));

    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_checkpoint) ck = hyocr_checkpoint_open(model, &error);
    if (!ck) return fail(error);
    hyocr_checkpoint_stats st;
    hyocr_checkpoint_get_stats(ck, &st);
    g_print("model          %s\n", hyocr_checkpoint_dir(ck));
    print_config(hyocr_checkpoint_config(ck));
    print_stats(&st);
    print_draft(ck);
    if (device)
        print_memory_plan(ck, model, dev == HYOCR_DEVICE_CUDA ? HYOCR_BACKEND_CUDA : HYOCR_BACKEND_CPU, max_new);
    return 0;
}

/* ---------------------------------------------------------------- tokenize */

int hyocr_cmd_tokenize(int argc, char **argv)
{
    g_autofree char *model = NULL;
    GOptionEntry entries[] = {
        { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model, N_("Checkpoint folder (holds tokenizer.json)"), "DIR" },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("TEXT — print token ids on one line"), entries);
    if (!hyocr_cli_parse(ctx, &argc, &argv)) return 2;
    if (!model || argc != 2) return usage_error(ctx, _("usage: hyocr tokenize --model DIR TEXT"));

    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_tokenizer) tok = load_tokenizer(model, &error);
    if (!tok) return fail(error);
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    hyocr_tokenizer_encode(tok, argv[1], -1, ids);
    for (guint i = 0; i < ids->len; i++)
        g_print("%s%d", i ? " " : "", g_array_index(ids, int32_t, i));
    g_print("\n");
    return 0;
}

int hyocr_cmd_detokenize(int argc, char **argv)
{
    g_autofree char *model = NULL;
    gboolean skip = FALSE;
    GOptionEntry entries[] = {
        { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model, N_("Checkpoint folder (holds tokenizer.json)"), "DIR" },
        { "skip-special", 0, 0, G_OPTION_ARG_NONE, &skip, N_("Drop special tokens"), NULL },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("ID… — print the text of token ids"), entries);
    if (!hyocr_cli_parse(ctx, &argc, &argv)) return 2;
    if (!model || argc < 2) return usage_error(ctx, _("usage: hyocr detokenize --model DIR ID…"));

    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_tokenizer) tok = load_tokenizer(model, &error);
    if (!tok) return fail(error);
    g_autofree int32_t *ids = g_new(int32_t, argc - 1);
    for (int i = 1; i < argc; i++) {
        gint64 v;
        if (!g_ascii_string_to_signed(argv[i], 10, 0, hyocr_tokenizer_n_vocab(tok) - 1, &v, &error)) {
            g_printerr(_("hyocr: token id “%s”: %s\n"), argv[i], error->message);
            return 2;
        }
        ids[i - 1] = (int32_t)v;
    }
    size_t len = 0;
    g_autofree char *text = hyocr_tokenizer_decode(tok, ids, (size_t)argc - 1, skip, &len);
    fwrite(text, 1, len, stdout);   /* NUL bytes too: a token may decode to byte 0 */
    putchar('\n');
    return 0;
}

/* ---------------------------------------------------------------- prepare */

static gboolean write_text(const char *dir, const char *name, GString *s, GError **error)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    return g_file_set_contents(path, s->str, (gssize)s->len, error);
}

gboolean hyocr_cli_dump_inputs(const char *dir, const hyocr_prompt *p, const hyocr_pixels *px, GError **error)
{
    if (g_mkdir_with_parents(dir, 0755) != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("cannot create dump folder %s: %s"), dir, g_strerror(errno));
        return FALSE;
    }
    g_autoptr(GString) s = g_string_new(NULL);
    for (int t = 0; t < p->n; t++) g_string_append_printf(s, "%s%d", t ? " " : "", p->ids[t]);
    g_string_append_c(s, '\n');
    if (!write_text(dir, "input_ids.txt", s, error)) return FALSE;
    g_string_truncate(s, 0);
    for (int a = 0; a < 4; a++) {
        for (int t = 0; t < p->n; t++) g_string_append_printf(s, "%s%d", t ? " " : "", p->pos[a * p->n + t]);
        g_string_append_c(s, '\n');
    }
    if (!write_text(dir, "position_ids.txt", s, error)) return FALSE;
    g_string_printf(s, "%d %d %d\n", px->grid_t, px->grid_h, px->grid_w);
    if (!write_text(dir, "grid_thw.txt", s, error)) return FALSE;
    /* raw little-endian float32; every platform we build for is little-endian */
    g_autofree char *path = g_build_filename(dir, "pixel_values.f32", NULL);
    gsize bytes = (gsize)px->n_patches * (gsize)px->patch_dim * sizeof(float);
    return g_file_set_contents(path, (const char *)px->data, (gssize)bytes, error);
}

static char **split_fields(const char *fields)
{
    if (!fields) return NULL;
    /* Chinese keyboards type the full-width comma; accept both. */
    g_autofree char *norm = g_strdup(fields);
    GString *s = g_string_new(NULL);
    for (const char *p = norm; *p; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        if (c == 0xFF0C || c == 0x3001) g_string_append_c(s, ',');
        else g_string_append_unichar(s, c);
    }
    char **v = g_strsplit(s->str, ",", -1);
    g_string_free(s, TRUE);
    return v;
}

int hyocr_cmd_prepare(int argc, char **argv)
{
    g_autofree char *model = NULL, *image = NULL, *task = NULL, *fields = NULL, *prompt = NULL, *dump = NULL;
    int max_side = 0;
    GOptionEntry entries[] = {
        { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model, N_("Checkpoint folder"), "DIR" },
        { "image", 'i', 0, G_OPTION_ARG_FILENAME, &image, N_("Input image or document (its first page)"), "FILE" },
        { "task", 't', 0, G_OPTION_ARG_STRING, &task, N_("Task preset (recognize, spotting, parse_document, …)"), "NAME" },
        { "fields", 0, 0, G_OPTION_ARG_STRING, &fields, N_("Keys for extract_fields, comma-separated"), "A,B" },
        { "prompt", 'p', 0, G_OPTION_ARG_STRING, &prompt, N_("Custom prompt text"), "TEXT" },
        { "max-side", 0, 0, G_OPTION_ARG_INT, &max_side, N_("Pre-scale the long edge to at most PX"), "PX" },
        { "dump", 'd', 0, G_OPTION_ARG_FILENAME, &dump, N_("Folder for the dump files"), "DIR" },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("— build the model input for an image and a task"), entries);
    if (!hyocr_cli_parse(ctx, &argc, &argv)) return 2;
    if (!model || !image || !dump) return usage_error(ctx, _("--model, --image and --dump are required"));
    if (!task && !prompt) return usage_error(ctx, _("give --task NAME or --prompt TEXT"));

    hyocr_task t = HYOCR_TASK_CUSTOM;
    if (task && !hyocr_task_from_name(task, &t)) {
        g_printerr(_("hyocr: unknown task “%s”; known:"), task);
        for (int i = 0; i < HYOCR_TASK_COUNT; i++) g_printerr(" %s", hyocr_task_name((hyocr_task)i));
        g_printerr("\n");
        return 2;
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(hyocr_config) cfg = hyocr_config_load(model, &error);
    if (!cfg) return fail(error);
    g_autoptr(hyocr_tokenizer) tok = load_tokenizer(model, &error);
    if (!tok) return fail(error);
    g_auto(GStrv) keys = split_fields(fields);
    g_autofree char *text = hyocr_task_prompt(t, cfg->version, (const char *const *)keys, prompt, &error);
    if (!text) return fail(error);
    hyocr_image_options opts = { .max_side = max_side };
    g_autoptr(hyocr_image) img = hyocr_image_load(image, &opts, &error);
    if (!img) return fail(error);
    g_autoptr(hyocr_pixels) px = hyocr_pixels_from_image(img, &cfg->processor, 0, &error);
    if (!px) return fail(error);
    g_autoptr(hyocr_prompt) p = hyocr_prompt_build(tok, cfg, text, px->grid_h, px->grid_w, &error);
    if (!p) return fail(error);
    if (!hyocr_cli_dump_inputs(dump, p, px, &error)) return fail(error);
    g_print("%d tokens (%d image), grid %d×%d, resized %d×%d → %s\n", p->n, p->n_image, px->grid_h, px->grid_w,
            px->resized_width, px->resized_height, dump);
    return 0;
}

/* ---------------------------------------------------------------- dispatch */

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} command;

static const command commands[] = {
    { "run", hyocr_cmd_run, N_("read, parse or translate an image (streams the answer)") },
#ifdef HYOCR_CLI_SERVE
    { "serve", hyocr_cmd_serve, N_("serve the model over an OpenAI-compatible HTTP API, as vLLM does") },
#endif
#ifdef HYOCR_CLI_DOWNLOAD
    { "download", hyocr_cmd_download, N_("download the model from Hugging Face or a mirror") },
    { "models", hyocr_cmd_models, N_("list installed models") },
#endif
    { "inspect", hyocr_cmd_inspect, N_("describe a checkpoint folder") },
    { "prepare", hyocr_cmd_prepare, N_("write the model input for an image and a task") },
    { "tokenize", hyocr_cmd_tokenize, N_("print the token ids of a text") },
    { "detokenize", hyocr_cmd_detokenize, N_("print the text of token ids") },
};

static int print_usage(FILE *f)
{
    fputs(_("usage: hyocr COMMAND [OPTIONS]   (hyocr COMMAND --help for its options)\n\ncommands:\n"), f);
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, _(commands[i].help));
    return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    hyocr_i18n_bind();
    textdomain(GETTEXT_PACKAGE);
    if (argc < 2) return print_usage(stderr);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return print_usage(stdout);
    if (!strcmp(argv[1], "--version")) {
        printf("hyocr %s\n", HYOCR_VERSION);
        return 0;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        /* GOptionContext wants the program name first: "hyocr run …" → argv[1..] */
        argv[1] = g_strdup_printf("hyocr %s", commands[i].name);
        int rc = commands[i].fn(argc - 1, argv + 1);
        g_free(argv[1]);
        return rc;
    }
    fprintf(stderr, _("hyocr: unknown command “%s”\n\n"), argv[1]);
    return print_usage(stderr);
}
