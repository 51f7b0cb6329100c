/* hyocr serve — errors in OpenAI's shape:
 *     {"error": {"message": "…", "type": "invalid_request_error", "param": "messages", "code": null}}
 * and the engine's errors worded in the API's terms (what the client sent, the
 * server's limits). */
#include "server.h"
#include "error.h"
#include "json.h"
#include "memplan.h"
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <string.h>

static const char *type_of(guint status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 503: return "service_unavailable_error";
    default:  return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

void hyocr_api_error_set(hyocr_api_error *e, guint status, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* the body is JSON, so UTF-8, whatever the message quotes (a file name's bytes, a
     * library's message cut mid-character): repaired here, once, for every refusal */
    g_free(e->message);
    e->message = g_utf8_make_valid(text, -1);
    e->status = status;
    e->type = type_of(status);
    e->param = param;
    e->code = NULL;
    e->retry_after = 0;
}

void hyocr_api_error_clear(hyocr_api_error *e)
{
    g_free(e->message);
    memset(e, 0, sizeof *e);
}

/* A refused job: the plan's numbers, and what the client can change (the image,
 * max_tokens); the rest is the server's memory, which its operator sets. */
static char *refusal_words(const hyocr_memplan *plan)
{
    g_autofree char *need = hyocr_memplan_format_bytes(plan->total);
    g_autofree char *budget = hyocr_memplan_format_bytes(plan->budget);
    g_autofree char *parts = hyocr_memplan_describe(plan);
    GString *a = g_string_new(NULL);
    const hyocr_memplan_advice *adv = &plan->advice;
    if (adv->max_side) {
        g_autofree char *n = hyocr_memplan_format_bytes(adv->max_side_total);
        g_string_append_printf(a, _("; an image whose long side is at most %d pixels fits (needs %s)"),
                               adv->max_side, n);
    }
    if (adv->max_new_tokens) {
        g_autofree char *n = hyocr_memplan_format_bytes(adv->max_new_tokens_total);
        g_string_append_printf(a, _("; max_tokens %d fits (needs %s)"), adv->max_new_tokens, n);
    }
    char *words = g_strdup_printf(_("this %d×%d image (%d×%d patches, %d prompt tokens, up to %d new) needs %s (%s) "
                                    "but the server has %s for a request%s"),
                                  plan->image_width, plan->image_height, plan->grid_w, plan->grid_h,
                                  plan->prompt_tokens, plan->max_new_tokens, need, parts, budget, a->str);
    g_string_free(a, TRUE);
    return words;
}

void hyocr_api_error_from_engine(hyocr_api_error *e, const GError *err)
{
    if (err->domain != HYOCR_ERROR) {
        hyocr_api_error_set(e, 500, NULL, "%s", err->message);
        return;
    }
    const hyocr_memplan *plan = hyocr_error_get_memplan(err);
    switch (err->code) {
    case HYOCR_ERROR_IMAGE:
        hyocr_api_error_set(e, 400, "messages", _("the image could not be read: %s"), err->message);
        e->code = "invalid_image";
        return;
    case HYOCR_ERROR_PASSWORD:
        hyocr_api_error_set(e, 400, "messages",
                            _("the image could not be read: %s; a request cannot carry a password: send the "
                              "document decrypted"), err->message);
        e->code = "invalid_image";
        return;
    case HYOCR_ERROR_PROMPT:
    case HYOCR_ERROR_TOO_LONG:
    case HYOCR_ERROR_INVALID_ARGUMENT:
        hyocr_api_error_set(e, 400, "messages", "%s", err->message);
        return;
    case HYOCR_ERROR_NO_MEMORY:
        if (plan && plan->prompt_tokens > 0) {
            g_autofree char *words = refusal_words(plan);
            hyocr_api_error_set(e, 400, "messages", "%s", words);
            e->code = "insufficient_memory";
            return;
        }
        hyocr_api_error_set(e, 503, NULL, "%s", err->message);
        e->retry_after = 1;
        return;
    case HYOCR_ERROR_BUSY:
        hyocr_api_error_set(e, 503, NULL, "%s", err->message);
        e->code = "queue_full";
        e->retry_after = 1;
        return;
    case HYOCR_ERROR_CANCELLED:
        hyocr_api_error_set(e, 503, NULL, "%s", err->message);
        e->retry_after = 1;
        return;
    default:
        hyocr_api_error_set(e, 500, NULL, "%s", err->message);
        return;
    }
}

static void add_string_or_null(JsonBuilder *b, const char *name, const char *v)
{
    json_builder_set_member_name(b, name);
    if (v) json_builder_add_string_value(b, v);
    else json_builder_add_null_value(b);
}

static char *error_json(const hyocr_api_error *e, bool wrapped)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    if (wrapped) {
        json_builder_set_member_name(b, "error");
        json_builder_begin_object(b);
    }
    add_string_or_null(b, "message", e->message ? e->message : "");
    add_string_or_null(b, "type", e->type ? e->type : type_of(e->status));
    add_string_or_null(b, "param", e->param);
    add_string_or_null(b, "code", e->code);
    if (wrapped) json_builder_end_object(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return hyocr_json_to_data(root, false);
}

char *hyocr_api_error_json(const hyocr_api_error *e)
{
    return error_json(e, true);
}

void hyocr_api_error_reply(SoupServerMessage *msg, const hyocr_api_error *e)
{
    char *json = error_json(e, true);
    soup_server_message_set_status(msg, e->status, NULL);
    SoupMessageHeaders *h = soup_server_message_get_response_headers(msg);
    if (e->retry_after > 0) {
        char v[16];
        g_snprintf(v, sizeof v, "%d", e->retry_after);
        soup_message_headers_replace(h, "Retry-After", v);
    }
    if (e->status == 401) soup_message_headers_replace(h, "WWW-Authenticate", "Bearer");
    soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_TAKE, json, strlen(json));
}
