/* hyocr serve — /metrics in the Prometheus text format, named hyocr:… as vLLM
 * names its vllm:… metrics: the engine's gauges (requests running and waiting,
 * KV cache use, device memory) read when scraped, and counters and histograms
 * of the finished requests (tokens, time to first token, time per output token,
 * end-to-end latency). Updated and read on the main thread only. */
#include "server.h"
#include <string.h>

static const double ttft_buckets[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                                       5.0, 7.5, 10.0, 20.0, 40.0, 80.0 };
static const double tpot_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
                                       0.5, 0.75, 1.0, 2.5 };
static const double e2e_buckets[] = { 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                                      50.0, 60.0, 120.0, 240.0 };

#define MAX_BUCKETS 24

typedef struct {
    const char   *name, *help;
    const double *le;
    int           n;
    uint64_t      counts[MAX_BUCKETS];   /* per bucket, not cumulative */
    uint64_t      count;
    double        sum;
} histogram;

static const char *const reasons[] = { "stop", "length", "abort", "error" };

struct hyocr_metrics {
    uint64_t  prompt_tokens, generation_tokens;
    uint64_t  finished[G_N_ELEMENTS(reasons)];
    histogram ttft, tpot, e2e;
};

static void histogram_init(histogram *h, const char *name, const char *help, const double *le, int n)
{
    memset(h, 0, sizeof *h);
    h->name = name;
    h->help = help;
    h->le = le;
    h->n = n;
}

static void observe(histogram *h, double v)
{
    int i = 0;
    while (i < h->n && v > h->le[i]) i++;
    if (i < h->n) h->counts[i]++;
    h->count++;
    h->sum += v;
}

hyocr_metrics *hyocr_metrics_new(void)
{
    hyocr_metrics *m = g_new0(hyocr_metrics, 1);
    histogram_init(&m->ttft, "hyocr:time_to_first_token_seconds",
                   "Time from a request's arrival to its first token.", ttft_buckets, G_N_ELEMENTS(ttft_buckets));
    histogram_init(&m->tpot, "hyocr:time_per_output_token_seconds",
                   "Mean time between a request's tokens after the first.", tpot_buckets,
                   G_N_ELEMENTS(tpot_buckets));
    histogram_init(&m->e2e, "hyocr:e2e_request_latency_seconds", "Time from a request's arrival to its last token.",
                   e2e_buckets, G_N_ELEMENTS(e2e_buckets));
    return m;
}

void hyocr_metrics_free(hyocr_metrics *m)
{
    g_free(m);
}

void hyocr_metrics_add(hyocr_metrics *m, const char *finish_reason, int prompt_tokens, int gen_tokens, double ttft,
                       double e2e)
{
    for (size_t i = 0; i < G_N_ELEMENTS(reasons); i++)
        if (!strcmp(finish_reason, reasons[i])) m->finished[i]++;
    m->prompt_tokens += (uint64_t)MAX(prompt_tokens, 0);
    m->generation_tokens += (uint64_t)MAX(gen_tokens, 0);
    if (ttft < 0) return;
    observe(&m->ttft, ttft);
    observe(&m->e2e, e2e);
    if (gen_tokens > 1) observe(&m->tpot, (e2e - ttft) / (gen_tokens - 1));
}

/* A label value as the text format wants it: \ " and newlines escaped. */
static char *label(const char *v)
{
    GString *s = g_string_new(NULL);
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"') g_string_append_c(s, '\\');
        if (*p == '\n') {
            g_string_append(s, "\\n");
            continue;
        }
        g_string_append_c(s, *p);
    }
    return g_string_free(s, FALSE);
}

static void head(GString *out, const char *name, const char *type, const char *help)
{
    g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(GString *out, const char *name, const char *labels, double v)
{
    char num[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(num, sizeof num, "%.10g", v);
    g_string_append_printf(out, "%s{%s} %s\n", name, labels, num);
}

static void render_histogram(GString *out, const histogram *h, const char *labels)
{
    head(out, h->name, "histogram", h->help);
    uint64_t cum = 0;
    g_autofree char *bucket = g_strconcat(h->name, "_bucket", NULL);
    for (int i = 0; i < h->n; i++) {
        cum += h->counts[i];
        char le[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(le, sizeof le, "%g", h->le[i]);
        g_autofree char *l = g_strdup_printf("%s,le=\"%s\"", labels, le);
        sample(out, bucket, l, (double)cum);
    }
    g_autofree char *inf = g_strdup_printf("%s,le=\"+Inf\"", labels);
    sample(out, bucket, inf, (double)h->count);
    g_autofree char *sum = g_strconcat(h->name, "_sum", NULL), *count = g_strconcat(h->name, "_count", NULL);
    sample(out, sum, labels, h->sum);
    sample(out, count, labels, (double)h->count);
}

int64_t hyocr_metrics_memory_used(const hyocr_mem_info *mi)
{
    return mi->weights + mi->kv_reserved + mi->workspace;
}

static void render_engine(GString *out, hyocr_engine *eng, const char *labels)
{
    hyocr_engine_stats st = { 0 };
    hyocr_mem_info mi = { 0 };
    if (eng) {
        hyocr_engine_get_stats(eng, &st);
        hyocr_engine_mem_info(eng, &mi);
    }
    head(out, "hyocr:num_requests_running", "gauge", "Requests decoding now (holding KV cache blocks).");
    sample(out, "hyocr:num_requests_running", labels, st.running);
    head(out, "hyocr:num_requests_waiting", "gauge", "Requests queued for admission or preempted.");
    sample(out, "hyocr:num_requests_waiting", labels, st.waiting);
    head(out, "hyocr:kv_cache_usage_perc", "gauge", "Share of the KV cache pool's blocks in use (0 to 1).");
    sample(out, "hyocr:kv_cache_usage_perc", labels,
           st.kv_blocks_total > 0 ? (double)st.kv_blocks_used / (double)st.kv_blocks_total : 0.0);
    head(out, "hyocr:kv_cache_blocks", "gauge", "Blocks of the KV cache pool now (it follows the load).");
    sample(out, "hyocr:kv_cache_blocks", labels, (double)st.kv_blocks_total);
    head(out, "hyocr:kv_cache_grows_total", "counter",
         "Times the KV cache pool was copied into a larger one while requests held it.");
    sample(out, "hyocr:kv_cache_grows_total", labels, (double)st.kv_grows);
    head(out, "hyocr:gpu_memory_used_bytes", "gauge",
         "Device memory the engine holds: weights, KV cache and scratch (host memory on the CPU backend).");
    sample(out, "hyocr:gpu_memory_used_bytes", labels, (double)hyocr_metrics_memory_used(&mi));
    head(out, "hyocr:gpu_memory_kv_used_bytes", "gauge", "KV cache bytes the running requests hold.");
    sample(out, "hyocr:gpu_memory_kv_used_bytes", labels, (double)mi.kv_used);
    head(out, "hyocr:decode_steps_total", "counter", "Shared decode steps run.");
    sample(out, "hyocr:decode_steps_total", labels, (double)st.decode_steps);
    head(out, "hyocr:batch_size_max", "gauge", "The most requests one decode step has run.");
    sample(out, "hyocr:batch_size_max", labels, st.largest_batch);
}

char *hyocr_metrics_render(hyocr_metrics *m, hyocr_engine *eng, const char *model_name)
{
    GString *out = g_string_new(NULL);
    g_autofree char *name = label(model_name);
    g_autofree char *labels = g_strdup_printf("model_name=\"%s\"", name);
    render_engine(out, eng, labels);
    head(out, "hyocr:prompt_tokens_total", "counter", "Prompt tokens of finished requests (the image's included).");
    sample(out, "hyocr:prompt_tokens_total", labels, (double)m->prompt_tokens);
    head(out, "hyocr:generation_tokens_total", "counter", "Tokens generated for finished requests.");
    sample(out, "hyocr:generation_tokens_total", labels, (double)m->generation_tokens);
    head(out, "hyocr:request_success_total", "counter", "Finished requests by finish reason.");
    for (size_t i = 0; i < G_N_ELEMENTS(reasons); i++) {
        g_autofree char *l = g_strdup_printf("%s,finished_reason=\"%s\"", labels, reasons[i]);
        sample(out, "hyocr:request_success_total", l, (double)m->finished[i]);
    }
    render_histogram(out, &m->ttft, labels);
    render_histogram(out, &m->tpot, labels);
    render_histogram(out, &m->e2e, labels);
    return g_string_free(out, FALSE);
}
