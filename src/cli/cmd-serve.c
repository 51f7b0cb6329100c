/* hyocr serve — the OpenAI-compatible server (src/server/): options, the key
 * (flag, file or environment), then the server until it is stopped. */
#include "cli.h"
#include "error.h"
#include "models.h"
#include "server.h"
#include <glib/gi18n.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#define DEFAULT_PORT         8000
#define DEFAULT_MAX_QUEUE    256
#define DEFAULT_REQUEST_SIZE "64M"
#define DEFAULT_NAME         "tencent/HunyuanOCR"

typedef struct {
    char   *model, *host, *api_key, *api_key_file, *media_dir, *mem_limit, *mem_fraction, *device, *dtype, *max_body;
    char   *cors_origins, *cors_methods, *cors_headers, *hosts_json;   /* JSON lists, as given */
    char  **names, **origins, **methods, **headers, **hosts;          /* … and as lists */
    int     port, max_queue, max_model_len, max_side, max_batch, threads;
    gboolean no_web_ui, allow_credentials;
    double  swap_gib;
} serve_opts;

static void serve_opts_clear(serve_opts *o)
{
    g_free(o->model);
    g_free(o->host);
    g_free(o->api_key);
    g_free(o->api_key_file);
    g_free(o->media_dir);
    g_free(o->mem_limit);
    g_free(o->mem_fraction);
    g_free(o->device);
    g_free(o->dtype);
    g_free(o->max_body);
    g_free(o->cors_origins);
    g_free(o->cors_methods);
    g_free(o->cors_headers);
    g_free(o->hosts_json);
    g_strfreev(o->names);
    g_strfreev(o->origins);
    g_strfreev(o->methods);
    g_strfreev(o->headers);
    g_strfreev(o->hosts);
}

/* A JSON list of strings into *out; false: text is not one. */
static bool json_list(const char *text, char ***out)
{
    g_autoptr(JsonParser) p = json_parser_new();
    JsonNode *root = json_parser_load_from_data(p, text, -1, NULL) ? json_parser_get_root(p) : NULL;
    JsonArray *a = root && JSON_NODE_HOLDS_ARRAY(root) ? json_node_get_array(root) : NULL;
    g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *n = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) return false;
        g_ptr_array_add(items, g_strdup(json_node_get_string(n)));
    }
    if (!a) return false;
    g_ptr_array_add(items, NULL);
    *out = (char **)g_ptr_array_steal(items, NULL);
    return true;
}

/* --allowed-origins and its kin, as vLLM takes them; NULL text: ["*"]. */
static bool cors_list(const char *opt, const char *text, char ***out, GError **error)
{
    if (!text) {
        *out = g_strdupv((char *[]){ "*", NULL });
        return true;
    }
    if (json_list(text, out)) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                _("%s: expected a JSON list of strings, as vLLM takes it ('[\"https://example.com\"]'), got "
                  "“%s”"), opt, text);
    return false;
}

/* --allowed-hosts (hyocr's own); NULL text: none given (*out stays NULL). */
static bool hosts_list(const char *text, char ***out, GError **error)
{
    if (!text || json_list(text, out)) return true;
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                _("%s: expected a JSON list of host names ('[\"ocr.example.com\"]'), got “%s”"), "--allowed-hosts",
                text);
    return false;
}

static bool parse_args(int argc, char **argv, serve_opts *o, GError **error)
{
    GOptionEntry entries[] = {
        { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model,
          N_("Model folder (default: the one hyocr download installed)"), "DIR" },
        { "host", 0, 0, G_OPTION_ARG_STRING, &o->host, N_("Address to listen on (127.0.0.1: this machine only)"),
          "ADDR" },
        { "port", 0, 0, G_OPTION_ARG_INT, &o->port, N_("Port to listen on (8000; 0: any free port)"), "N" },
        { "api-key", 0, 0, G_OPTION_ARG_STRING, &o->api_key,
          N_("Key clients must send (Authorization: Bearer KEY); also from HYOCR_API_KEY"), "KEY" },
        { "api-key-file", 0, 0, G_OPTION_ARG_FILENAME, &o->api_key_file, N_("Read the key from this file"), "FILE" },
        { "served-model-name", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->names,
          N_("Model name clients ask for (default: tencent/HunyuanOCR and --model as given); repeat it for several"),
          "NAME" },
        { "no-web-ui", 0, 0, G_OPTION_ARG_NONE, &o->no_web_ui,
          N_("Do not serve the web page at / (the API only)"), NULL },
        { "max-queue", 0, 0, G_OPTION_ARG_INT, &o->max_queue,
          N_("Requests waiting for the engine at most; beyond, 503 (256)"), "N" },
        { "max-request-size", 0, 0, G_OPTION_ARG_STRING, &o->max_body, N_("Largest request body (64M)"), "SIZE" },
        { "allowed-local-media-path", 0, 0, G_OPTION_ARG_FILENAME, &o->media_dir,
          N_("Serve file:// images from under this folder"), "DIR" },
        { "allowed-origins", 0, 0, G_OPTION_ARG_STRING, &o->cors_origins,
          N_("Web origins whose pages may call the API, as a JSON list (default [\"*\"]: any, as vLLM)"), "JSON" },
        { "allowed-methods", 0, 0, G_OPTION_ARG_STRING, &o->cors_methods,
          N_("HTTP methods those pages may use, as a JSON list (default [\"*\"])"), "JSON" },
        { "allowed-headers", 0, 0, G_OPTION_ARG_STRING, &o->cors_headers,
          N_("Request headers those pages may send, as a JSON list (default [\"*\"])"), "JSON" },
        { "allow-credentials", 0, 0, G_OPTION_ARG_NONE, &o->allow_credentials,
          N_("Let those pages send credentials (Access-Control-Allow-Credentials)"), NULL },
        { "allowed-hosts", 0, 0, G_OPTION_ARG_STRING, &o->hosts_json,
          N_("Host names the server answers to beyond localhost and IP addresses, as a JSON list ([\"*\"]: any)"),
          "JSON" },
        { "gpu-memory-limit", 0, 0, G_OPTION_ARG_STRING, &o->mem_limit,
          N_("GPU memory this process may use: bytes (8G, 2500M) or a fraction of the card (0.5)"), "SIZE" },
        { "gpu-memory-utilization", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &o->mem_fraction, NULL, NULL },
        { "max-model-len", 0, 0, G_OPTION_ARG_INT, &o->max_model_len, N_("Prompt + output tokens at most"), "N" },
        { "swap-space", 0, 0, G_OPTION_ARG_DOUBLE, &o->swap_gib,
          N_("GiB of host memory for the KV cache of preempted requests (0: recompute them)"), "GIB" },
        { "max-side", 0, 0, G_OPTION_ARG_INT, &o->max_side, N_("Shrink every image so its long edge is at most PX"),
          "PX" },
        { "max-batch", 0, 0, G_OPTION_ARG_INT, &o->max_batch, N_("Requests decoding together at most (16)"), "N" },
        { "device", 'd', 0, G_OPTION_ARG_STRING, &o->device, N_("auto, cpu or cuda"), "DEV" },
        { "threads", 0, 0, G_OPTION_ARG_INT, &o->threads, N_("CPU threads (0 = all cores)"), "N" },
        { "dtype", 0, 0, G_OPTION_ARG_STRING, &o->dtype, N_("CUDA compute type: f16 (default) or bf16"), "T" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = hyocr_cli_context_new(N_("— serve the model over an OpenAI-compatible HTTP API"),
                                                          entries);
    if (!g_option_context_parse(ctx, &argc, &argv, error)) return false;
    if (!hyocr_cli_check_range("--port", o->port, 0, 65535, error) ||
        !hyocr_cli_check_range("--max-queue", o->max_queue, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--max-batch", o->max_batch, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--max-side", o->max_side, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--max-model-len", o->max_model_len, 0, INFINITY, error) ||
        !hyocr_cli_check_range("--swap-space", o->swap_gib, 0, INFINITY, error))
        return false;
    if (o->mem_limit && o->mem_fraction) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("give --gpu-memory-limit or --gpu-memory-utilization, not both"));
        return false;
    }
    /* file:// images and pages of any origin would let every web site read the text of the
     * files under that folder: no other origin then, unless --allowed-origins names some */
    const char *origins = o->cors_origins ? o->cors_origins : o->media_dir ? "[]" : NULL;
    return cors_list("--allowed-origins", origins, &o->origins, error) &&
           cors_list("--allowed-methods", o->cors_methods, &o->methods, error) &&
           cors_list("--allowed-headers", o->cors_headers, &o->headers, error) &&
           hosts_list(o->hosts_json, &o->hosts, error);
}

/* --api-key, else --api-key-file (its first line), else HYOCR_API_KEY; NULL: none. */
static bool find_key(const serve_opts *o, char **key, GError **error)
{
    if (o->api_key) {
        *key = g_strdup(o->api_key);
    } else if (o->api_key_file) {
        g_autofree char *text = NULL;
        if (!g_file_get_contents(o->api_key_file, &text, NULL, error)) return false;
        char *nl = strpbrk(text, "\r\n");
        if (nl) *nl = '\0';
        *key = g_strdup(g_strstrip(text));
    } else {
        *key = g_strdup(g_getenv("HYOCR_API_KEY"));
    }
    if (*key && !**key) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("the API key is empty"));
        g_clear_pointer(key, g_free);
        return false;
    }
    return true;
}

static bool fill(const serve_opts *o, bool model_given, hyocr_server_options *so, GError **error)
{
    memset(so, 0, sizeof *so);
    so->host = o->host ? o->host : "127.0.0.1";
    so->port = o->port;
    so->allowed_media_dir = o->media_dir;
    so->max_side = o->max_side;
    so->no_web_ui = o->no_web_ui;
    so->allow_credentials = o->allow_credentials;
    so->allowed_origins = o->origins;
    so->allowed_methods = o->methods;
    so->allowed_headers = o->headers;
    so->allowed_hosts = o->hosts;
    /* scripts written for `vllm serve tencent/HunyuanOCR` ask for its Hub name; vLLM
     * also answers to --model as given */
    static const char *default_names[3];
    default_names[0] = DEFAULT_NAME;
    default_names[1] = model_given && strcmp(o->model, DEFAULT_NAME) ? o->model : NULL;
    so->served_names = o->names && o->names[0] ? o->names : (char **)default_names;
    hyocr_engine_params *ep = &so->engine;
    hyocr_engine_params_init(ep);
    ep->model_dir = o->model;
    ep->n_threads = o->threads;
    ep->max_model_len = o->max_model_len;
    if (o->max_batch > 0) ep->max_batch = o->max_batch;
    ep->max_queue = o->max_queue > 0 ? o->max_queue : DEFAULT_MAX_QUEUE;
    ep->swap_space = (int64_t)(o->swap_gib * 1024.0 * 1024.0 * 1024.0);
    if (o->mem_fraction) {
        double f;
        if (!hyocr_cli_parse_fraction("--gpu-memory-utilization", o->mem_fraction, &f, error)) return false;
        ep->memory_limit = hyocr_memory_limit_fraction(f);
    }
    return hyocr_cli_parse_bytes("--max-request-size", o->max_body ? o->max_body : DEFAULT_REQUEST_SIZE,
                                 &so->max_request_size, error) &&
           hyocr_cli_parse_device(o->device, &ep->device, error) &&
           hyocr_cli_parse_dtype(o->dtype, &ep->cuda_dtype, error) &&
           hyocr_cli_parse_memory_limit(o->mem_limit, &ep->memory_limit, error);
}

int hyocr_cmd_serve(int argc, char **argv)
{
    serve_opts o = { .port = DEFAULT_PORT };
    g_autoptr(GError) error = NULL;
    hyocr_server_options so;
    g_autofree char *key = NULL;
    int status = 1;
    bool ok = parse_args(argc, argv, &o, &error);
    bool model_given = o.model != NULL;
    if (ok && !model_given) o.model = hyocr_models_default_folder();
    if (ok && find_key(&o, &key, &error) && fill(&o, model_given, &so, &error)) {
        so.api_key = key;
        if (o.media_dir && !o.cors_origins)
            fprintf(stderr, _("hyocr serve: warning: web pages of other origins may not call the API while "
                              "--allowed-local-media-path is given (--allowed-origins names those that may)\n"));
        status = hyocr_server_run(&so);
    } else {
        fprintf(stderr, _("hyocr serve: %s\n"), error->message);
        status = 2;
    }
    serve_opts_clear(&o);
    return status;
}
