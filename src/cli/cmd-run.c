/* hyocr run — OCR one image: text streams to stdout as it is generated;
 * --dump writes the model inputs and the logits. Several pages (repeated
 * --image, files or folders after the options, the pages of a PDF or TIFF,
 * --repeat) run as one continuously batched run: each text is printed when its
 * job ends, a progress line per page goes to stderr when it is a terminal, and
 * a summary line with the aggregate tokens/s ends the run. JSON has one shape
 * for any count of pages: an array (json) or a line per page (jsonl) of
 * objects that each name their image, written as the pages end, in order.
 * --server URL runs the same jobs on an OpenAI-compatible server (remote.h),
 * --concurrency at a time, with the same output. */
#include "cli.h"
#include "error.h"
#include "document.h"
#include "export.h"
#include "models.h"
#include "hyocr.h"
#include "json.h"
#ifdef HYOCR_CLI_REMOTE
#include "remote.h"
#endif
#include "stop.h"
#include "hyocr-build-config.h"
#include <glib/gi18n.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char    *model, *task, *prompt, *device, *format, *dump, *rope, *posemb, *dtype, *mem_limit;
    char    *pages, *password_file, *password;
    char    *server, *api_key_file, *api_key, *model_name, *trust_cert, *model_version;   /* --server */
    int      concurrency, timeout;
    char   **fields, **images, **rest, **outputs, **stop;
    int      max_new_tokens, threads, max_side, top_k, max_model_len, max_batch, repeat, spec_tokens;
    int      logprobs;   /* -1: off */
    double   temperature, top_p, repetition_penalty, swap_gib;
    gint64   seed;
    gboolean ignore_eos;
    gboolean no_tail_stop;
    gboolean warmup;
} run_opts;

typedef struct {
    hyocr_engine *eng;
    bool          json;         /* json or jsonl: nothing streams */
    const char   *dump_dir;
    FILE         *logits_file;
    GError       *dump_error;   /* first failure while dumping; cancels the job */
    bool          printed;      /* text mode: something went to stdout */
} run_ctx;

/* SIGINT, SIGTERM → cancel: the jobs end, what they wrote is reported and the
 * JSON is closed. The store is a plain atomic, safe in a handler. A remote's
 * cancel takes locks, which a handler must not: it is woken through a pipe. */
static hyocr_engine *volatile sigint_engine;
static volatile int sigint_pipe = -1;

static void on_sigint(int sig)
{
    (void)sig;
    if (sigint_engine) hyocr_engine_cancel(sigint_engine);
    if (sigint_pipe >= 0) {
        ssize_t n = write(sigint_pipe, "c", 1);
        (void)n;
    }
}

typedef struct {
    void (*intr)(int), (*term)(int);
} cancel_handlers;

static cancel_handlers cancel_on_signals(hyocr_engine *eng)
{
    sigint_engine = eng;
    return (cancel_handlers){ signal(SIGINT, on_sigint), signal(SIGTERM, on_sigint) };
}

static void cancel_handlers_restore(cancel_handlers h)
{
    signal(SIGINT, h.intr);
    signal(SIGTERM, h.term);
    sigint_engine = NULL;
}

/* ---- the command's words for the engine's errors ----------------------------------- */

/* A --gpu-memory-limit value this command parses that is at least bytes. */
static char *limit_value(int64_t bytes)
{
    return g_strdup_printf("%" G_GINT64_FORMAT "M", (bytes + (1 << 20) - 1) >> 20);
}

/* A memory refusal (the plan the engine's error carries): the numbers, and what
 * to change named by this command's options. */
static char *refusal_words(const hyocr_memplan *plan, const char *model)
{
    g_autofree char *need = hyocr_memplan_format_bytes(plan->total);
    g_autofree char *budget = hyocr_memplan_format_bytes(plan->budget);
    g_autofree char *limit = limit_value(plan->total);
    if (plan->prompt_tokens == 0)   /* the weights alone, at load */
        return g_strdup_printf(_("%s: the model's weights and the %s backend's scratch take %s, more than the memory "
                                 "limit of %s; pass --gpu-memory-limit %s or more (a page needs more on top: "
                                 "hyocr inspect --device %s shows how much)"),
                               model, plan->backend_kind == HYOCR_BACKEND_CUDA ? "cuda" : "cpu", need, budget, limit,
                               plan->backend_kind == HYOCR_BACKEND_CUDA ? "cuda" : "cpu");
    g_autofree char *parts = hyocr_memplan_describe(plan);
    g_autofree char *have = plan->budget_is_limit
        ? g_strdup_printf(_("the memory limit is %s"), budget)
        : g_strdup_printf(_("the GPU has %s for it (free plus what hyocr holds)"), budget);
    g_autofree char *first = plan->budget_is_limit
        ? g_strdup_printf(_("pass --gpu-memory-limit %s"), limit)
        : g_strdup(_("free GPU memory (other programs hold it)"));
    GString *a = g_string_new(first);
    const hyocr_memplan_advice *adv = &plan->advice;
    if (adv->max_side) {
        g_autofree char *n = hyocr_memplan_format_bytes(adv->max_side_total);
        g_string_append_printf(a, _(", or pass --max-side %d (needs %s)"), adv->max_side, n);
    }
    if (adv->max_new_tokens) {
        g_autofree char *n = hyocr_memplan_format_bytes(adv->max_new_tokens_total);
        g_string_append_printf(a, _(", or lower --max-new-tokens to %d (needs %s)"), adv->max_new_tokens, n);
    }
    char *words = g_strdup_printf(_("this %d×%d page (%d×%d patches, %d prompt tokens, up to %d new) needs %s (%s) "
                                    "but %s: %s"),
                                  plan->image_width, plan->image_height, plan->grid_w, plan->grid_h,
                                  plan->prompt_tokens, plan->max_new_tokens, need, parts, have, a->str);
    g_string_free(a, TRUE);
    return words;
}

/* What the command prints for an error: the engine's message, or its own words
 * where the error carries data to word (model: for a refusal at load). */
static char *error_words(const GError *err, const char *model)
{
    const hyocr_memplan *plan = hyocr_error_get_memplan(err);
    if (plan) return refusal_words(plan, model);
    if (g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_MODEL_MISSING))
        return g_strdup_printf(_("%s; get the model with `hyocr download`, or give its folder with --model DIR"),
                               err->message);
    if (g_error_matches(err, HYOCR_ERROR, HYOCR_ERROR_PASSWORD))
        return g_strdup_printf(_("%s (give the password in a file with --password-file FILE)"), err->message);
#ifdef HYOCR_CLI_REMOTE
    if (g_error_matches(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_AUTH))
        return g_strdup_printf(_("%s (give the key in a file with --api-key-file FILE, or in HYOCR_API_KEY)"),
                               err->message);
    if (g_error_matches(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TLS))
        return g_strdup_printf(_("%s (its PEM file: --trust-certificate FILE)"), err->message);
    if (g_error_matches(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_MODEL))
        return g_strdup_printf(_("%s (--model-name NAME)"), err->message);
    if (g_error_matches(err, HYOCR_REMOTE_ERROR, HYOCR_REMOTE_ERROR_TIMEOUT))
        return g_strdup_printf(_("%s (--timeout S waits longer)"), err->message);
#endif
    return g_strdup(err->message);
}

/* Warnings only; info lines would be noise. */
static void on_log(hyocr_log_level level, const char *message, void *data)
{
    (void)data;
    if (level >= HYOCR_LOG_WARNING) fprintf(stderr, "hyocr: %s\n", message);
}

/* The engine, with the CUDA → CPU fallback said once on stderr. */
static hyocr_engine *open_engine(const hyocr_engine_params *ep, GError **error)
{
    hyocr_engine *eng = hyocr_engine_init(ep, error);
    const GError *why = eng ? hyocr_engine_get_cuda_unusable(eng) : NULL;
    if (why) fprintf(stderr, _("hyocr: the GPU is not usable (%s); running on the CPU\n"), why->message);
    return eng;
}

static void dump_failed(run_ctx *ctx, GError *err)
{
    if (!ctx->dump_error) ctx->dump_error = err;
    else g_error_free(err);
    hyocr_engine_cancel(ctx->eng);
}

static void on_event(const hyocr_event *ev, void *data)
{
    run_ctx *ctx = data;
    if (ev->type == HYOCR_EVENT_PREPROCESS && ctx->dump_dir) {
        GError *err = NULL;
        if (!hyocr_cli_dump_inputs(ctx->dump_dir, ev->prompt, ev->pixels, &err)) dump_failed(ctx, err);
    } else if (ev->type == HYOCR_EVENT_TOKEN && !ctx->json && ev->piece_len) {
        fwrite(ev->piece, 1, ev->piece_len, stdout);   /* NUL bytes too, as the reference prints them */
        fflush(stdout);
        ctx->printed = true;
    } else if (ev->type == HYOCR_EVENT_RESTART && !ctx->json && ctx->printed) {
        /* what was printed cannot be taken back: mark where the redone answer starts */
        fputs("\n", stdout);
        fflush(stdout);
        fputs(_("hyocr run: FP16 overflowed; the answer above is discarded and starts again in BF16 below\n"),
              stderr);
    }
}

static void on_logits(const float *logits, int n_vocab, int step, void *data)
{
    run_ctx *ctx = data;
    (void)step;
    if (!ctx->logits_file || ctx->dump_error) return;
    if (fwrite(logits, sizeof(float), (size_t)n_vocab, ctx->logits_file) != (size_t)n_vocab)
        dump_failed(ctx, g_error_new(HYOCR_ERROR, HYOCR_ERROR_IO, _("%s/logits.f32: write failed: %s"),
                                     ctx->dump_dir, g_strerror(errno)));
}

static bool parse_variant(const char *s, hyocr_variant *out, const char *opt, GError **error)
{
    if (!s) *out = HYOCR_VARIANT_CONFIG;
    else if (!g_ascii_strcasecmp(s, "r1")) *out = HYOCR_VARIANT_R1;
    else if (!g_ascii_strcasecmp(s, "r2")) *out = HYOCR_VARIANT_R2;
    else {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s: expected r1 or r2, got “%s”"), opt, s);
        return false;
    }
    return true;
}

/* The task names, all of them, from the engine. */
static char *task_names(void)
{
    GString *s = g_string_new(NULL);
    for (int t = 0; t < HYOCR_TASK_CUSTOM; t++) g_string_append_printf(s, "%s%s", t ? ", " : "", hyocr_task_name(t));
    return g_string_free(s, FALSE);
}

/* No --model: the installed model the app would use too, when it is complete. */
static bool default_model(run_opts *o, GError **error)
{
    g_autofree char *dir = hyocr_models_default_folder();
    g_auto(GStrv) missing = hyocr_models_missing_files(dir);
    if (missing[0]) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("no model is installed (%s lacks %s): get one with `hyocr download`, or give its folder with "
                      "--model DIR"), dir, missing[0]);
        return false;
    }
    o->model = g_steal_pointer(&dir);
    return true;
}

static bool parse_args(int argc, char **argv, run_opts *o, GError **error)
{
    g_autofree char *names = task_names();
    g_autofree char *task_help = g_strdup_printf(_("Task: %s (default recognize)"), names);
    hyocr_job_params defaults;
    hyocr_job_params_init(&defaults);
    g_autofree char *tokens_help = g_strdup_printf(_("Generated tokens at most, 1 or more (default %d)"),
                                                   defaults.max_new_tokens);
    GOptionEntry entries[] = {
        { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model,
          N_("Model folder (config.json, tokenizer.json, weights); default: the installed one, as `hyocr models` "
             "lists it"), "DIR" },
        { "image", 'i', 0, G_OPTION_ARG_FILENAME_ARRAY, &o->images,
          N_("Input image or document (PNG, JPEG, TIFF, WebP, HEIC, AVIF, PDF); repeat it, or give files and folders "
             "after the options, to run several"),
          "FILE" },
        { "task", 't', 0, G_OPTION_ARG_STRING, &o->task, task_help, "NAME" },
        { "fields", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->fields, N_("extract_fields: keys, comma-separated or repeated"), "KEYS" },
        { "prompt", 'p', 0, G_OPTION_ARG_STRING, &o->prompt, N_("Custom prompt instead of a task"), "TEXT" },
        { "max-new-tokens", 'n', 0, G_OPTION_ARG_INT, &o->max_new_tokens, tokens_help, "N" },
        { "temperature", 0, 0, G_OPTION_ARG_DOUBLE, &o->temperature, N_("Sampling temperature (0 = greedy)"), "T" },
        { "top-k", 0, 0, G_OPTION_ARG_INT, &o->top_k, N_("Top-k sampling (0 = off)"), "K" },
        { "top-p", 0, 0, G_OPTION_ARG_DOUBLE, &o->top_p, N_("Top-p sampling (1 = off)"), "P" },
        { "seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, N_("Sampling seed"), "S" },
        { "repetition-penalty", 0, 0, G_OPTION_ARG_DOUBLE, &o->repetition_penalty,
          N_("Repetition penalty (default: the model’s)"), "R" },
        { "device", 'd', 0, G_OPTION_ARG_STRING, &o->device, N_("auto, cpu or cuda"), "DEV" },
        { "threads", 0, 0, G_OPTION_ARG_INT, &o->threads, N_("CPU threads (0 = all cores)"), "N" },
        { "dtype", 0, 0, G_OPTION_ARG_STRING, &o->dtype, N_("CUDA compute type: f16 (default) or bf16"), "T" },
        { "gpu-memory-limit", 0, 0, G_OPTION_ARG_STRING, &o->mem_limit,
          N_("GPU memory this process may use: bytes (8G, 2500M) or a fraction of the card (0.5)"), "SIZE" },
        { "max-side", 0, 0, G_OPTION_ARG_INT, &o->max_side, N_("Shrink the image so its long edge is at most PX"), "PX" },
        { "max-model-len", 0, 0, G_OPTION_ARG_INT, &o->max_model_len, N_("Prompt + output tokens at most"), "N" },
        { "format", 'f', 0, G_OPTION_ARG_STRING, &o->format,
          N_("Output: text (streamed), json (an array of one object per image) or jsonl (a line per image); "
             "JSON is written as each image ends"), "FMT" },
        { "dump", 0, 0, G_OPTION_ARG_FILENAME, &o->dump, N_("Write model inputs, logits.f32 and generated_ids.txt"), "DIR" },
        { "rope", 0, 0, G_OPTION_ARG_STRING, &o->rope, N_("XD-RoPE layout variant: r1 (transformers) or r2"), "V" },
        { "posemb", 0, 0, G_OPTION_ARG_STRING, &o->posemb, N_("Position-table interpolation: r1 or r2"), "V" },
        { "stop", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->stop,
          N_("End the answer before the first TEXT it holds; repeat for several (at most 16)"), "TEXT" },
        { "logprobs", 0, 0, G_OPTION_ARG_INT, &o->logprobs,
          N_("JSON output: each token's log-probability, with its N most likely alternatives (0 to 20)"), "N" },
        { "ignore-eos", 0, 0, G_OPTION_ARG_NONE, &o->ignore_eos, N_("Generate max-new-tokens tokens (benchmarks)"), NULL },
        { "no-tail-stop", 0, 0, G_OPTION_ARG_NONE, &o->no_tail_stop,
          N_("Do not stop when the answer's tail repeats (1.5 models; benchmarks)"), NULL },
        { "warmup", 0, 0, G_OPTION_ARG_NONE, &o->warmup,
          N_("Warm the GPU engine up before the pages, as hyocr serve does: the timings are then a warm "
             "engine's (benchmarks)"), NULL },
        { "max-batch", 0, 0, G_OPTION_ARG_INT, &o->max_batch, N_("Several images: jobs decoding together at most (16)"),
          "N" },
        { "swap-space", 0, 0, G_OPTION_ARG_DOUBLE, &o->swap_gib,
          N_("Several images: GiB of host memory for the KV cache of preempted jobs (0 = recompute them)"), "GIB" },
        { "repeat", 0, 0, G_OPTION_ARG_INT, &o->repeat, N_("Run every image N times, as N jobs (benchmarks)"), "N" },
        { "pages", 0, 0, G_OPTION_ARG_STRING, &o->pages,
          N_("Pages of each PDF or TIFF to read, as 1-3,7 or 5- (default: all)"), "PAGES" },
        { "output", 'o', 0, G_OPTION_ARG_FILENAME_ARRAY, &o->outputs,
          N_("Also write the pages' results to FILE, in the format its extension names (.txt, .md, .json, .jsonl, "
             ".pdf searchable, .html); repeat for several"), "FILE" },
        { "password-file", 0, 0, G_OPTION_ARG_FILENAME, &o->password_file,
          N_("Encrypted PDFs: read the password from the first line of FILE"), "FILE" },
        { "speculative-tokens", 0, 0, G_OPTION_ARG_INT, &o->spec_tokens,
          N_("Speculative decoding with the model's DFlash draft: drafts a round (0 = off; default: the draft's "
             "block size − 1, 15)"), "N" },
#ifdef HYOCR_CLI_REMOTE
        { "server", 0, 0, G_OPTION_ARG_STRING, &o->server,
          N_("Run the jobs on this OpenAI-compatible server (vLLM, hyocr serve) instead of this computer: "
             "http(s)://HOST:PORT; the pages are sent to it"), "URL" },
        { "api-key-file", 0, 0, G_OPTION_ARG_FILENAME, &o->api_key_file,
          N_("--server: read the API key from the first line of FILE (else from HYOCR_API_KEY)"), "FILE" },
        { "model-name", 0, 0, G_OPTION_ARG_STRING, &o->model_name,
          N_("--server: the model name it serves (default: the first it lists)"), "NAME" },
        { "concurrency", 0, 0, G_OPTION_ARG_INT, &o->concurrency,
          N_("--server: requests in flight at most (default 8)"), "N" },
        { "trust-certificate", 0, 0, G_OPTION_ARG_FILENAME, &o->trust_cert,
          N_("--server: trust this certificate (PEM), a self-signed server's"), "FILE" },
        { "model-version", 0, 0, G_OPTION_ARG_STRING, &o->model_version,
          N_("--server: the HunyuanOCR release a vLLM serves, 1.0 or 1.5 (default 1.5; a hyocr serve says its "
             "own): its official prompts and repetition penalty are sent"), "V" },
        { "timeout", 0, 0, G_OPTION_ARG_INT, &o->timeout,
          N_("--server: give up on a server that sends nothing for S seconds (default 300)"), "S" },
#endif
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->rest, NULL, NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("— read, parse or translate the text in an image"), entries);
    if (!g_option_context_parse(ctx, &argc, &argv, error)) return false;
    if (!o->images && !o->rest) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("no image given: --image FILE, or files and folders after the options"));
        return false;
    }
    if (o->max_new_tokens != -1 && o->max_new_tokens < 1) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--max-new-tokens: expected 1 or more, got %d"), o->max_new_tokens);
        return false;
    }
    if (o->server && (o->model || o->dump || o->device)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--server runs the jobs on the server: --model, --device and --dump are for this computer "
                      "(the server's model is --model-name)"));
        return false;
    }
    if (!hyocr_cli_check_range("--concurrency", o->concurrency, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--timeout", o->timeout, 0, INFINITY, error))
        return false;
    if (!o->server && !o->model && !default_model(o, error)) return false;
    if (!hyocr_cli_check_range("--repeat", o->repeat, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--max-batch", o->max_batch, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--swap-space", o->swap_gib, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--speculative-tokens", o->spec_tokens, -1, INFINITY, error))
        return false;
    if (o->task && o->prompt) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("give either --task or --prompt, not both"));
        return false;
    }
    for (char **out = o->outputs; out && *out; out++) {
        hyocr_export_format f;
        if (hyocr_export_format_for_path(*out, &f)) continue;
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--output %s: the extension names no format hyocr writes (%s)"), *out, hyocr_export_extensions());
        return false;
    }
    if (o->format && strcmp(o->format, "text") && strcmp(o->format, "json") && strcmp(o->format, "jsonl")) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--format: expected text, json or jsonl, got “%s”"), o->format);
        return false;
    }
    if (o->logprobs > HYOCR_TOP_LOGPROBS_MAX) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--logprobs: at most %d alternatives a token (got %d)"), HYOCR_TOP_LOGPROBS_MAX, o->logprobs);
        return false;
    }
    if (o->logprobs >= 0 && (!o->format || !strcmp(o->format, "text"))) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--logprobs: the log-probabilities are written in JSON: add --format json or jsonl"));
        return false;
    }
    return true;
}

static char **split_fields(char **raw)
{
    GPtrArray *out = g_ptr_array_new();
    for (char **f = raw; f && *f; f++) {
        g_auto(GStrv) parts = g_strsplit(*f, ",", -1);
        for (char **p = parts; *p; p++) {
            char *s = g_strstrip(g_strdup(*p));
            if (*s) g_ptr_array_add(out, s);
            else g_free(s);
        }
    }
    g_ptr_array_add(out, NULL);
    return (char **)g_ptr_array_free(out, FALSE);
}

static bool fill_job(const run_opts *o, hyocr_job_params *jp, char ***fields, GError **error)
{
    hyocr_job_params_init(jp);
    if (o->prompt) {
        jp->task = HYOCR_TASK_CUSTOM;
        jp->custom_prompt = o->prompt;
    } else if (o->task && !hyocr_task_from_name(o->task, &jp->task)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT, _("--task: unknown task “%s”"), o->task);
        return false;
    }
    *fields = split_fields(o->fields);
    jp->fields = (const char *const *)*fields;
    if (jp->task == HYOCR_TASK_EXTRACT_FIELDS && !(*fields)[0]) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                    _("--task extract_fields needs the keys to extract: --fields name,date,total"));
        return false;
    }
    if (o->max_new_tokens > 0) jp->max_new_tokens = o->max_new_tokens;
    jp->temperature = (float)o->temperature;
    jp->top_k = o->top_k;
    jp->top_p = (float)o->top_p;
    jp->seed = (uint64_t)o->seed;
    jp->repetition_penalty = (float)o->repetition_penalty;
    jp->max_side = o->max_side;
    jp->ignore_eos = o->ignore_eos;
    jp->no_tail_stop = o->no_tail_stop;
    jp->logprobs = o->logprobs >= 0;
    jp->top_logprobs = MAX(o->logprobs, 0);
    jp->stop = (const char *const *)o->stop;
    if (!hyocr_stop_strings_check(jp->stop, error)) {
        g_prefix_error(error, "--stop: ");
        return false;
    }
    return true;
}

static bool fill_engine(const run_opts *o, hyocr_engine_params *ep, GError **error)
{
    hyocr_engine_params_init(ep);
    ep->model_dir = o->model;
    ep->n_threads = o->threads;
    ep->max_model_len = o->max_model_len;
    if (o->max_batch > 0) ep->max_batch = o->max_batch;
    ep->speculative_tokens = o->spec_tokens;
    ep->swap_space = (int64_t)(o->swap_gib * 1024.0 * 1024.0 * 1024.0);
    ep->log = on_log;
    return hyocr_cli_parse_device(o->device, &ep->device, error) &&
           hyocr_cli_parse_dtype(o->dtype, &ep->cuda_dtype, error) &&
           hyocr_cli_parse_memory_limit(o->mem_limit, &ep->memory_limit, error) &&
           parse_variant(o->rope, &ep->rope_variant, "--rope", error) &&
           parse_variant(o->posemb, &ep->posemb_variant, "--posemb", error);
}

static bool open_dump(run_ctx *ctx, GError **error)
{
    if (!ctx->dump_dir) return true;
    if (g_mkdir_with_parents(ctx->dump_dir, 0755) != 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("--dump %s: cannot create the folder: %s"), ctx->dump_dir,
                    g_strerror(errno));
        return false;
    }
    g_autofree char *path = g_build_filename(ctx->dump_dir, "logits.f32", NULL);
    ctx->logits_file = fopen(path, "wb");
    if (!ctx->logits_file) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s: cannot create: %s"), path, g_strerror(errno));
        return false;
    }
    return true;
}

static bool write_ids(const char *dir, const GArray *ids, GError **error)
{
    g_autoptr(GString) s = g_string_new(NULL);
    for (guint i = 0; ids && i < ids->len; i++)
        g_string_append_printf(s, "%s%d", i ? " " : "", g_array_index(ids, int32_t, i));
    g_string_append_c(s, '\n');
    g_autofree char *path = g_build_filename(dir, "generated_ids.txt", NULL);
    return g_file_set_contents(path, s->str, (gssize)s->len, error);
}

static bool close_dump(run_ctx *ctx, const hyocr_job_result *res, GError **error)
{
    if (!ctx->dump_dir) return true;
    bool ok = fclose(ctx->logits_file) == 0;
    ctx->logits_file = NULL;
    if (!ok) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, _("%s/logits.f32: write failed"), ctx->dump_dir);
        return false;
    }
    return write_ids(ctx->dump_dir, res->token_ids, error);
}

static void json_memory(JsonBuilder *b, const hyocr_mem_info *m)
{
    json_builder_set_member_name(b, "memory");
    json_builder_begin_object(b);
    const struct { const char *k; int64_t v; } f[] = {
        { "total", m->total }, { "free", m->free }, { "weights", m->weights }, { "kv_reserved", m->kv_reserved },
        { "kv_used", m->kv_used }, { "workspace", m->workspace }, { "peak", m->peak },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(f); i++) hyocr_json_member_int(b, f[i].k, f[i].v);
    json_builder_end_object(b);
}

/* Paths and messages may hold bytes that are not UTF-8 (file names on Linux). */
static void json_add_string(JsonBuilder *b, const char *s)
{
    g_autofree char *valid = g_utf8_make_valid(s, -1);
    json_builder_add_string_value(b, valid);
}

/* "logprobs": [{"logprob", "top_logprobs": [{"id", "logprob"}, …]}, …], one a token id. */
static void json_logprobs(JsonBuilder *b, const GArray *lps)
{
    json_builder_set_member_name(b, "logprobs");
    json_builder_begin_array(b);
    for (guint i = 0; i < lps->len; i++) {
        const hyocr_token_logprobs *lp = &g_array_index(lps, hyocr_token_logprobs, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "logprob");
        json_builder_add_double_value(b, lp->logprob);
        json_builder_set_member_name(b, "top_logprobs");
        json_builder_begin_array(b);
        for (int k = 0; k < lp->n_top; k++) {
            json_builder_begin_object(b);
            hyocr_json_member_int(b, "id", lp->top[k].id);
            json_builder_set_member_name(b, "logprob");
            json_builder_add_double_value(b, lp->top[k].logprob);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

/* One result as a JSON object: its image, page (1-based) only for a page of a
 * document of several, error (the result's unless given) only when it failed. */
static void json_result(JsonBuilder *b, const char *backend, const hyocr_job_result *r, const GError *error,
                        const hyocr_cli_page *pg)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "image");
    json_add_string(b, pg->path);
    if (pg->n_pages > 1) hyocr_json_member_int(b, "page", pg->page + 1);
    if (!error) error = r->error;
    if (error) {
        g_autofree char *words = error_words(error, NULL);
        json_builder_set_member_name(b, "error");
        json_add_string(b, words);
    }
    if (r->redone) hyocr_json_member_str(b, "redone_dtype", r->redone_dtype == HYOCR_COMPUTE_BF16 ? "bf16" : "fp32");
    json_builder_set_member_name(b, "text");
    hyocr_json_add_text(b, r->text ? r->text : "", r->text ? r->text_len : 0);
    json_builder_set_member_name(b, "token_ids");
    json_builder_begin_array(b);
    for (guint i = 0; r->token_ids && i < r->token_ids->len; i++)
        json_builder_add_int_value(b, g_array_index(r->token_ids, int32_t, i));
    json_builder_end_array(b);
    if (r->logprobs) json_logprobs(b, r->logprobs);
    hyocr_json_member_int(b, "prompt_tokens", r->prompt_tokens);
    hyocr_json_member_int(b, "image_tokens", r->n_image_tokens);
    hyocr_json_member_str(b, "stop_reason", hyocr_stop_reason_name(r->stop_reason));
    hyocr_json_member_int(b, "preempted", r->n_preempted);
    json_builder_set_member_name(b, "speculative");
    json_builder_begin_object(b);
    hyocr_json_member_int(b, "rounds", r->speculative_rounds);
    hyocr_json_member_int(b, "tokens", r->speculative_tokens);
    hyocr_json_member_int(b, "fallbacks", r->speculative_fallbacks);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "repetition_penalty");
    /* the double nearest the decimal given, not the float's binary expansion */
    char rp[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(rp, sizeof rp, "%g", r->repetition_penalty);
    json_builder_add_double_value(b, g_ascii_strtod(rp, NULL));
    hyocr_json_member_str(b, "backend", backend ? backend : "");
    hyocr_export_add_timings(b, &r->timings);
    json_memory(b, &r->memory);
    json_builder_end_object(b);
}

static char *node_text(JsonBuilder *b, bool pretty)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return hyocr_json_to_data(root, pretty);
}

/* ---- JSON output: written page by page, in the pages' order ------------------------ */

/* A jsonl line at a time, flushed; or the elements of one array, closed when
 * the run ends (a cancelled run too). */
typedef struct {
    bool                lines;     /* jsonl */
    const char         *backend;   /* "cpu", "cuda", "remote" */
    guint               written;
} json_out;

/* A page ended with this result (error: instead of the result's own). */
static void json_out_put(json_out *out, const hyocr_cli_page *pg, const hyocr_job_result *r, const GError *error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_result(b, out->backend, r, error, pg);
    g_autofree char *text = node_text(b, !out->lines);
    if (out->lines) printf("%s\n", text);
    else printf("%s%s", out->written ? ",\n" : "[\n", text);
    out->written++;
    fflush(stdout);
}

static void json_out_close(json_out *out)
{
    if (!out->lines) printf(out->written ? "\n]\n" : "[]\n");
    fflush(stdout);
}

static void run_opts_clear(run_opts *o)
{
    g_free(o->model);
    g_strfreev(o->images);
    g_strfreev(o->rest);
    g_free(o->task);
    g_free(o->prompt);
    g_free(o->device);
    g_free(o->dtype);
    g_free(o->mem_limit);
    g_free(o->format);
    g_free(o->dump);
    g_free(o->rope);
    g_free(o->posemb);
    g_free(o->pages);
    g_strfreev(o->outputs);
    g_free(o->password_file);
    if (o->password) memset(o->password, 0, strlen(o->password));
    g_free(o->password);
    g_strfreev(o->fields);
    g_strfreev(o->stop);
    g_free(o->server);
    g_free(o->api_key_file);
    if (o->api_key) memset(o->api_key, 0, strlen(o->api_key));
    g_free(o->api_key);
    g_free(o->model_name);
    g_free(o->trust_cert);
    g_free(o->model_version);
}

/* Runs the job; the dump's own failure, when any, is the one reported. */
static bool run_job(run_ctx *ctx, hyocr_job_params *jp, hyocr_job_result *res, GError **error)
{
    jp->on_event = on_event;
    jp->user_data = ctx;
    if (ctx->dump_dir) {
        jp->on_logits = on_logits;
        jp->logits_data = ctx;
    }
    cancel_handlers h = cancel_on_signals(ctx->eng);
    GError *err = NULL;
    bool ok = hyocr_engine_run(ctx->eng, jp, res, &err);
    cancel_handlers_restore(h);
    if (ctx->dump_error) {
        g_clear_error(&err);
        g_propagate_error(error, g_steal_pointer(&ctx->dump_error));
        return false;
    }
    if (!ok) g_propagate_error(error, err);
    return ok;
}

/* --output: every page that ran (a file that could not be opened has no page to write), in
 * order, with its answer or why it failed. */
static bool write_outputs(const run_opts *o, const char *backend, hyocr_cli_page *const *pages, guint n_pages,
                          const hyocr_job_result *res, GError **error)
{
    if (!o->outputs) return true;
    g_autofree hyocr_export_page *ep = g_new0(hyocr_export_page, n_pages);
    g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func(g_free);
    hyocr_task task = HYOCR_TASK_RECOGNIZE;
    if (o->prompt) task = HYOCR_TASK_CUSTOM;
    else if (o->task) hyocr_task_from_name(o->task, &task);
    int n = 0;
    for (guint i = 0; i < n_pages; i++) {
        const hyocr_cli_page *pg = pages[i];
        if (!pg->doc) continue;
        char *why = res[i].error ? error_words(res[i].error, NULL) : NULL;
        if (why) g_ptr_array_add(words, why);
        ep[n++] = (hyocr_export_page){ .document = pg->doc, .page = pg->page, .task = task,
                                       .text = res[i].error ? NULL : res[i].text, .error = why,
                                       .timings = &res[i].timings, .image_width = res[i].image_width,
                                       .image_height = res[i].image_height };
    }
    g_autofree char *model = o->server ? g_strdup(o->model_name) : g_path_get_basename(o->model);
    hyocr_export ex = { .pages = ep, .n_pages = n, .model = model, .backend = backend };
    for (char **out = o->outputs; *out; out++) {
        hyocr_export_format f;
        hyocr_export_format_for_path(*out, &f);
        if (!hyocr_export_write(&ex, f, *out, error)) return false;
    }
    return true;
}

static bool cmd_run(run_opts *o, const hyocr_cli_page *pg, hyocr_job_result *res, GError **error)
{
    hyocr_engine_params ep;
    hyocr_job_params jp;
    g_auto(GStrv) fields = NULL;
    if (!fill_engine(o, &ep, error) || !fill_job(o, &jp, &fields, error)) return false;
    jp.document = pg->doc;
    jp.page = pg->page;
    jp.name = pg->label;
    g_autoptr(hyocr_engine) eng = open_engine(&ep, error);
    if (!eng) return false;

    run_ctx ctx = { .eng = eng, .json = o->format && strcmp(o->format, "text"), .dump_dir = o->dump };
    if (!open_dump(&ctx, error)) return false;
    bool ok = run_job(&ctx, &jp, res, error);
    if (ctx.printed) putchar('\n');
    GError *dump_err = NULL;
    bool dump_ok = close_dump(&ctx, res, &dump_err);
    /* A cancelled job still reports what it generated (stop_reason "cancelled"). */
    bool cancelled = !ok && error && *error && g_error_matches(*error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
    if (ctx.json && (ok || cancelled)) {
        json_out out = { .lines = !strcmp(o->format, "jsonl"), .backend = hyocr_engine_backend_name(eng) };
        json_out_put(&out, pg, res, cancelled ? *error : NULL);
        json_out_close(&out);
    }
    fflush(stdout);
    hyocr_cli_page *const one[1] = { (hyocr_cli_page *)pg };
    if (ok && !write_outputs(o, hyocr_engine_backend_name(eng), one, 1, res, error)) return false;
    if (ok && !dump_ok) {
        g_propagate_error(error, dump_err);
        return false;
    }
    g_clear_error(&dump_err);
    return ok;
}

/* ---- several pages: one batched run ---------------------------------------------- */

/* A progress line per page on stderr, when it is a terminal (a log file gets the summary). */
typedef struct {
    bool   on;
    guint  done, total;
} progress;

typedef struct {
    bool                  text;    /* print each text when its job ends */
    bool                  stream;  /* one page on a server: its text streams, as a local run's does */
    bool                  printed; /* streamed: something went to stdout */
    const hyocr_cli_page *page;
    progress             *pr;
    gint64                t0;
    int                   n_generated;   /* at its end: the count a server reported without token ids */
} many_ctx;

static void progress_line(many_ctx *c, const hyocr_event *ev)
{
    progress *pr = c->pr;
    pr->done++;
    double s = (double)(g_get_monotonic_time() - c->t0) / 1e6;
    if (ev->type == HYOCR_EVENT_DONE)
        fprintf(stderr, _("hyocr run: [%u/%u] %s: done, %d tokens, %.1f s since the run began\n"), pr->done,
                pr->total, c->page->label, ev->n_generated, s);
    else if (ev->type == HYOCR_EVENT_ERROR)
        fprintf(stderr, _("hyocr run: [%u/%u] %s: failed\n"), pr->done, pr->total, c->page->label);
    else
        fprintf(stderr, _("hyocr run: [%u/%u] %s: cancelled\n"), pr->done, pr->total, c->page->label);
}

static void on_many_event(const hyocr_event *ev, void *data)
{
    many_ctx *c = data;
    bool end = ev->type == HYOCR_EVENT_DONE || ev->type == HYOCR_EVENT_ERROR || ev->type == HYOCR_EVENT_CANCELLED;
    if (end) c->n_generated = ev->n_generated;
    if (c->stream) {
        if (ev->type == HYOCR_EVENT_TOKEN && ev->piece_len) {
            fwrite(ev->piece, 1, ev->piece_len, stdout);   /* NUL bytes too */
            c->printed = true;
        }
        if (end && c->printed) putchar('\n');
        fflush(stdout);
        return;
    }
    if (end && c->pr->on) progress_line(c, ev);
    if (!c->text || ev->type != HYOCR_EVENT_DONE) return;
    printf("==> %s <==\n", c->page->label);
    if (ev->piece) fwrite(ev->piece, 1, ev->piece_len, stdout);
    printf("\n\n");
    fflush(stdout);
}

/* Errors per page, then the summary: jobs, tokens, wall time, aggregate tokens/s. */
static int report_many(const hyocr_job_result *res, const many_ctx *ctx, GPtrArray *pages, double wall_s)
{
    int failed = 0, cancelled = 0;
    int64_t tokens = 0;
    for (guint i = 0; i < pages->len; i++) {
        tokens += res[i].token_ids ? (int64_t)res[i].token_ids->len : ctx[i].n_generated;
        if (!res[i].error) continue;
        failed++;
        cancelled += g_error_matches(res[i].error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED);
        g_autofree char *msg = error_words(res[i].error, NULL);
        const hyocr_cli_page *pg = pages->pdata[i];
        if (strstr(msg, pg->path)) fprintf(stderr, _("hyocr run: %s\n"), msg);
        else fprintf(stderr, _("hyocr run: %s: %s\n"), pg->label, msg);
    }
    fprintf(stderr, _("hyocr run: %u jobs (%d failed), %lld tokens in %.2f s: %.1f tokens/s\n"),
            pages->len, failed, (long long)tokens, wall_s, wall_s > 0 ? (double)tokens / wall_s : 0.0);
    return cancelled ? 130 : failed ? 1 : 0;
}

/* ---- where the jobs run: this computer's engine, or a server ------------------------------- */

typedef struct {
    hyocr_engine *eng;
#ifdef HYOCR_CLI_REMOTE
    hyocr_remote *remote;
#endif
} run_target;

typedef struct {
    hyocr_request    *local;
#ifdef HYOCR_CLI_REMOTE
    hyocr_remote_job *remote;
#endif
} run_handle;

static bool target_submit(run_target *t, const hyocr_job_params *jp, run_handle *h, GError **error)
{
#ifdef HYOCR_CLI_REMOTE
    if (t->remote) return (h->remote = hyocr_remote_submit(t->remote, jp, error)) != NULL;
#endif
    return (h->local = hyocr_engine_submit(t->eng, jp, error)) != NULL;
}

static bool handle_live(const run_handle *h)
{
#ifdef HYOCR_CLI_REMOTE
    if (h->remote) return true;
#endif
    return h->local != NULL;
}

static void handle_wait(run_handle *h, hyocr_job_result *res)
{
#ifdef HYOCR_CLI_REMOTE
    if (h->remote) {
        hyocr_remote_job_wait(h->remote, res, NULL);
        g_clear_pointer(&h->remote, hyocr_remote_job_unref);
        return;
    }
#endif
    hyocr_request_wait(h->local, res, NULL);
    g_clear_pointer(&h->local, hyocr_request_unref);
}

#ifdef HYOCR_CLI_REMOTE
/* A signal's byte wakes this thread, which cancels the remote's jobs ('q' ends it). */
typedef struct {
    int           fds[2];
    GThread      *thread;
    hyocr_remote *remote;
} remote_canceller;

static gpointer canceller_main(gpointer data)
{
    remote_canceller *rc = data;
    char c;
    while (read(rc->fds[0], &c, 1) == 1 && c != 'q') hyocr_remote_cancel(rc->remote);
    return NULL;
}

static void canceller_start(remote_canceller *rc, hyocr_remote *remote)
{
    rc->remote = remote;
    rc->thread = NULL;
    if (!remote || !g_unix_open_pipe(rc->fds, FD_CLOEXEC, NULL)) return;
    rc->thread = g_thread_new("hyocr-sigint", canceller_main, rc);
    sigint_pipe = rc->fds[1];
}

static void canceller_stop(remote_canceller *rc)
{
    if (!rc->thread) return;
    sigint_pipe = -1;
    ssize_t n = write(rc->fds[1], "q", 1);
    (void)n;
    g_thread_join(rc->thread);
    close(rc->fds[0]);
    close(rc->fds[1]);
}
#endif

/* The pages that opened are submitted together (the engine batches them; a
 * server gets them --concurrency at a time) and waited for in order, each
 * written as JSON once it and those before it have ended; the others get their
 * reason as result. wall_s: the batch alone, without loading the model. */
static bool run_batch(run_opts *o, run_target *t, GPtrArray *pages, hyocr_job_result *res, many_ctx *ctx,
                      json_out *json, double *wall_s, GError **error)
{
    g_auto(GStrv) fields = NULL;
    hyocr_job_params proto;
    if (!fill_job(o, &proto, &fields, error)) return false;
    guint n = pages->len;
    g_autofree run_handle *req = g_new0(run_handle, n);
    progress pr = { .on = isatty(fileno(stderr)) };
    bool text = !o->format || !strcmp(o->format, "text");
    bool stream = text && n == 1 && o->server;
    gint64 t0 = g_get_monotonic_time();
    for (guint i = 0; i < n; i++) pr.total += !((hyocr_cli_page *)pages->pdata[i])->error;
    cancel_handlers h = cancel_on_signals(t->eng);
#ifdef HYOCR_CLI_REMOTE
    remote_canceller rc;
    canceller_start(&rc, t->remote);
#endif
    for (guint i = 0; i < n; i++) {
        const hyocr_cli_page *pg = pages->pdata[i];
        if (pg->error) continue;
        ctx[i] = (many_ctx){ .text = text, .stream = stream, .page = pg, .pr = &pr, .t0 = t0 };
        hyocr_job_params jp = proto;
        jp.document = pg->doc;
        jp.page = pg->page;
        jp.name = pg->label;
        jp.on_event = on_many_event;
        jp.user_data = &ctx[i];
        GError *err = NULL;
        if (!target_submit(t, &jp, &req[i], &err)) res[i].error = err;
    }
    for (guint i = 0; i < n; i++) {
        const hyocr_cli_page *pg = pages->pdata[i];
        if (pg->error) res[i].error = g_error_copy(pg->error);
        else if (handle_live(&req[i])) handle_wait(&req[i], &res[i]);
        if (json) json_out_put(json, pg, &res[i], NULL);
    }
    *wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
#ifdef HYOCR_CLI_REMOTE
    canceller_stop(&rc);
#endif
    cancel_handlers_restore(h);
    return true;
}

/* The first line of a file, without its line end: where a secret (a key, a password) is given,
 * since the command line is for every user of the machine to read. A failure is worded by
 * failed_fmt (the option, then "%s: %s" for the file and why). */
static char *read_secret_file(const char *path, const char *failed_fmt, GError **error)
{
    char *text = NULL;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_IO, failed_fmt, path, err->message);
        return NULL;
    }
    text[strcspn(text, "\r\n")] = 0;
    return text;
}

#ifdef HYOCR_CLI_REMOTE
/* --api-key-file's first line, else HYOCR_API_KEY. */
static bool read_api_key(run_opts *o, GError **error)
{
    if (!o->api_key_file) {
        o->api_key = g_strdup(g_getenv("HYOCR_API_KEY"));
        return true;
    }
    o->api_key = read_secret_file(o->api_key_file, _("--api-key-file %s: %s"), error);
    return o->api_key != NULL;
}

/* The server, checked before the first page goes (reachable, trusted, the key
 * taken, the model served), so a server that is down is said once. */
static hyocr_remote *open_remote(run_opts *o, GError **error)
{
    if (!read_api_key(o, error)) return NULL;
    hyocr_remote_params rp;
    hyocr_remote_params_init(&rp);
    rp.url = o->server;
    rp.api_key = o->api_key;
    rp.model = o->model_name;
    rp.trusted_certificate = o->trust_cert;
    rp.concurrency = o->concurrency;
    rp.timeout_s = o->timeout;
    if (o->model_version && !strcmp(o->model_version, "1.0")) rp.version = HYOCR_MODEL_VERSION_1_0;
    else if (o->model_version && strcmp(o->model_version, "1.5")) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("--model-version: expected 1.0 or 1.5, got “%s”"),
                    o->model_version);
        return NULL;
    }
    g_autoptr(hyocr_remote) r = hyocr_remote_new(&rp, error);
    if (!r || !hyocr_remote_check(r, NULL, error)) return NULL;
    g_free(o->model_name);
    o->model_name = g_strdup(hyocr_remote_model(r));
    return g_steal_pointer(&r);
}
#endif

static bool open_target(run_opts *o, run_target *t, GError **error)
{
#ifdef HYOCR_CLI_REMOTE
    if (o->server) return (t->remote = open_remote(o, error)) != NULL;
#endif
    hyocr_engine_params ep;
    return fill_engine(o, &ep, error) && (t->eng = open_engine(&ep, error));
}

static void close_target(run_target *t)
{
#ifdef HYOCR_CLI_REMOTE
    g_clear_pointer(&t->remote, hyocr_remote_free);
#endif
    g_clear_pointer(&t->eng, hyocr_engine_free);
}

static int run_many(run_opts *o, GPtrArray *pages)
{
    g_autoptr(GError) error = NULL;
    run_target t = { 0 };
    guint n = pages->len;
    g_autofree hyocr_job_result *res = g_new0(hyocr_job_result, n);
    g_autofree many_ctx *ctx = g_new0(many_ctx, n);
    double wall_s = 0;
    bool want_json = o->format && strcmp(o->format, "text");
    bool stream = !want_json && n == 1 && o->server;
    json_out json = { .lines = want_json && !strcmp(o->format, "jsonl") };
    bool ok = open_target(o, &t, &error);
    if (ok && o->warmup && t.eng) {
        g_autoptr(GError) warm = NULL;
        if (!hyocr_engine_warmup(t.eng, &warm)) fprintf(stderr, _("hyocr run: warm-up skipped: %s\n"), warm->message);
    }
    json.backend = t.eng ? hyocr_engine_backend_name(t.eng) : "remote";
    ok = ok && run_batch(o, &t, pages, res, ctx, want_json ? &json : NULL, &wall_s, &error);
    if (want_json && json.written) json_out_close(&json);
    int status = 1;
    if (!ok) {
        g_autofree char *words = error_words(error, o->model);
        fprintf(stderr, _("hyocr run: %s\n"), words);
    } else if (stream) {   /* as a local run of one page: its error alone, no summary */
        status = 0;
        if (res[0].error) {
            g_autofree char *words = error_words(res[0].error, NULL);
            fprintf(stderr, _("hyocr run: %s\n"), words);
            status = g_error_matches(res[0].error, HYOCR_ERROR, HYOCR_ERROR_CANCELLED) ? 130 : 1;
        }
    } else {
        status = report_many(res, ctx, pages, wall_s);
    }
    if (ok) {
        g_autoptr(GError) werr = NULL;
        if (!write_outputs(o, json.backend, (hyocr_cli_page *const *)pages->pdata, pages->len, res, &werr)) {
            fprintf(stderr, _("hyocr run: %s\n"), werr->message);
            status = 1;
        }
    }
    for (guint i = 0; i < n; i++) hyocr_job_result_clear(&res[i]);
    close_target(&t);
    return status;
}

static int run_one(run_opts *o, const hyocr_cli_page *pg)
{
    hyocr_job_result res = { 0 };
    g_autoptr(GError) error = NULL;
    /* A file that cannot be opened needs no model to say so. */
    bool ok = !pg->error && cmd_run(o, pg, &res, &error);
    hyocr_job_result_clear(&res);
    if (ok) return 0;
    const GError *why = pg->error ? pg->error : error;
    g_autofree char *words = why ? error_words(why, o->model) : g_strdup(_("failed"));
    fprintf(stderr, _("hyocr run: %s\n"), words);
    return why && g_error_matches(why, HYOCR_ERROR, HYOCR_ERROR_CANCELLED) ? 130 : 1;
}

/* --password-file's first line. */
static bool read_password(run_opts *o, GError **error)
{
    if (!o->password_file) return true;
    o->password = read_secret_file(o->password_file, _("--password-file %s: %s"), error);
    return o->password != NULL;
}

/* A folder's files that are not read are named, never dropped in silence. */
static void report_skipped(const GPtrArray *skipped)
{
    if (skipped->len == 0) return;
    g_autofree char *names = hyocr_format_names();
    for (guint i = 0; i < skipped->len; i++)
        fprintf(stderr, _("hyocr run: skipped %s: not an image or document hyocr reads (%s)\n"),
                (const char *)skipped->pdata[i], names);
}

int hyocr_cmd_run(int argc, char **argv)
{
    /* -1: not given */
    run_opts o = { .repetition_penalty = -1.0, .top_p = 1.0, .spec_tokens = -1, .max_new_tokens = -1, .logprobs = -1 };
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) pages = NULL;
    int status = 1;
    bool ok = parse_args(argc, argv, &o, &error) && read_password(&o, &error);
    if (ok) {
        hyocr_cli_inputs in = { .images = o.images, .rest = o.rest, .pages = o.pages, .password = o.password,
                                .repeat = o.repeat };
        g_autoptr(GPtrArray) skipped = g_ptr_array_new_with_free_func(g_free);
        pages = hyocr_cli_collect_pages(&in, skipped, &error);
        ok = pages != NULL;
        report_skipped(skipped);
    }
    if (ok && pages->len > 1 && o.dump) {
        g_set_error(&error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("--dump takes a single image"));
        ok = false;
    }
    bool text = !o.format || !strcmp(o.format, "text");
    if (!ok)
        fprintf(stderr, _("hyocr run: %s\n"), error->message);
    else if (pages->len == 1 && (text || o.dump) && !o.server)
        status = run_one(&o, pages->pdata[0]);   /* streams the text; --dump */
    else
        status = run_many(&o, pages);
    run_opts_clear(&o);
    return status;
}
