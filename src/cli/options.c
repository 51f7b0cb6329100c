/* hyocr CLI — option values shared by the commands that open an engine (run,
 * serve): device, compute type, memory limit. */
#include "cli.h"
#include "error.h"
#include <glib/gi18n.h>
#include <math.h>
#include <string.h>

bool hyocr_cli_check_range(const char *opt, double v, double lo, double hi, GError **error)
{
    if (v >= lo && v <= hi) return true;
    if (isinf(hi) && lo == 0)
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s cannot be negative (got %g)"), opt, v);
    else if (isinf(hi))
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s must be at least %g (got %g)"), opt, lo, v);
    else
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s must be %g…%g (got %g)"), opt, lo, hi, v);
    return false;
}

/* A fraction in (0, 1], the whole string a number. */
bool hyocr_cli_parse_fraction(const char *opt, const char *s, double *out, GError **error)
{
    char *end = NULL;
    double f = s ? g_ascii_strtod(s, &end) : 0;
    if (s && end != s && *end == '\0' && f > 0 && f <= 1) {
        *out = f;
        return true;
    }
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s: expected a fraction in (0, 1], got “%s”"), opt,
                s ? s : "");
    return false;
}

bool hyocr_cli_parse_device(const char *s, hyocr_device *out, GError **error)
{
    if (!s || !strcmp(s, "auto")) *out = HYOCR_DEVICE_AUTO;
    else if (!strcmp(s, "cpu")) *out = HYOCR_DEVICE_CPU;
    else if (!strcmp(s, "cuda")) *out = HYOCR_DEVICE_CUDA;
    else {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--device: expected auto, cpu or cuda, got “%s”"), s);
        return false;
    }
    return true;
}

bool hyocr_cli_parse_dtype(const char *s, hyocr_compute_dtype *out, GError **error)
{
    if (!s || !strcmp(s, "f16") || !strcmp(s, "fp16")) { *out = HYOCR_COMPUTE_F16; return true; }
    if (!strcmp(s, "bf16")) { *out = HYOCR_COMPUTE_BF16; return true; }
    g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("--dtype: expected f16 or bf16, got “%s”"), s);
    return false;
}

/* A number with an optional K/M/G suffix (and "B" or "iB" after it): the number and the
 * suffix's scale, or false when s is not that. */
static bool parse_size(const char *s, double *v, double *scale)
{
    char *end = NULL;
    *v = s ? g_ascii_strtod(s, &end) : 0;
    *scale = 1;
    if (!s || end == s) return false;
    if (!*end) return true;
    switch (g_ascii_toupper(*end)) {
    case 'K': *scale = 1024.0; break;
    case 'M': *scale = 1024.0 * 1024; break;
    case 'G': *scale = 1024.0 * 1024 * 1024; break;
    default: return false;
    }
    return !end[1] || !g_ascii_strcasecmp(end + 1, "iB") || !g_ascii_strcasecmp(end + 1, "B");
}

/* "0.5" is a fraction of the card (negative in the engine params, resolved by the
 * backend once it knows the card); "8G", "2500M", "123456" are bytes. */
bool hyocr_cli_parse_memory_limit(const char *s, int64_t *out, GError **error)
{
    if (!s) return true;
    double v, scale;
    if (!parse_size(s, &v, &scale) || v <= 0) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("--gpu-memory-limit: expected bytes (8G, 2500M) or a fraction of the card (0.5), got “%s”"), s);
        return false;
    }
    *out = (v < 1 && scale == 1) ? hyocr_memory_limit_fraction(v) : (int64_t)(v * scale);
    return true;
}

/* "64M", "1G", "500000": bytes, for opt (named in the message). */
bool hyocr_cli_parse_bytes(const char *opt, const char *s, int64_t *out, GError **error)
{
    double v, scale;
    if (!parse_size(s, &v, &scale) || v < 1 || v * scale > 9e18) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("%s: expected bytes (64M, 1G), got “%s”"), opt,
                    s ? s : "");
        return false;
    }
    *out = (int64_t)(v * scale);
    return true;
}
