/* hyocr — spotting answer parser. */
#include "spotting.h"
#include <stdlib.h>

/* Lazy text followed by two coordinate pairs: text may hold parentheses of its own
 * ("Total (USD)"), only digit pairs end an item. */
#define ITEM_PATTERN "(.*?)\\(\\s*(\\d+)\\s*,\\s*(\\d+)\\s*\\)\\s*,\\s*\\(\\s*(\\d+)\\s*,\\s*(\\d+)\\s*\\)"

static GRegex *item_regex(void)
{
    static gsize once;
    if (g_once_init_enter(&once)) {
        GRegex *r = g_regex_new(ITEM_PATTERN, G_REGEX_OPTIMIZE, 0, NULL);
        g_once_init_leave(&once, (gsize)r);
    }
    return (GRegex *)once;
}

static void line_free(gpointer p)
{
    hyocr_spot_line *l = p;
    g_free(l->text);
    g_free(l);
}

static int coord(const GMatchInfo *m, int group)
{
    g_autofree char *s = g_match_info_fetch(m, group);
    long v = strtol(s, NULL, 10);
    return (int)CLAMP(v, 0, 1000);
}

static hyocr_spot_line *line_from_match(const GMatchInfo *m)
{
    g_autofree char *raw = g_match_info_fetch(m, 1);
    hyocr_spot_line *l = g_new0(hyocr_spot_line, 1);
    l->text = g_strdup(g_strstrip(raw));
    int x1 = coord(m, 2), y1 = coord(m, 3), x2 = coord(m, 4), y2 = coord(m, 5);
    l->x1 = MIN(x1, x2);
    l->x2 = MAX(x1, x2);
    l->y1 = MIN(y1, y2);
    l->y2 = MAX(y1, y2);
    return l;
}

GPtrArray *hyocr_spot_parse(const char *text)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(line_free);
    /* The JIT-compiled regex trusts its subject to be UTF-8 and reads past the end of a
     * truncated sequence; the answer is the model's, so repair it first. */
    g_autofree char *valid = g_utf8_make_valid(text ? text : "", -1);
    g_auto(GStrv) lines = g_strsplit(valid, "\n", -1);
    for (char **l = lines; *l; l++) {
        g_autoptr(GMatchInfo) m = NULL;
        g_regex_match(item_regex(), *l, 0, &m);
        while (g_match_info_matches(m)) {
            g_ptr_array_add(out, line_from_match(m));
            g_match_info_next(m, NULL);
        }
    }
    return out;
}

void hyocr_spot_lines_add_json(JsonBuilder *b, const GPtrArray *lines)
{
    json_builder_begin_array(b);
    for (guint i = 0; i < lines->len; i++) {
        const hyocr_spot_line *l = lines->pdata[i];
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "text");
        json_builder_add_string_value(b, l->text);
        json_builder_set_member_name(b, "box");
        json_builder_begin_array(b);
        json_builder_add_int_value(b, l->x1);
        json_builder_add_int_value(b, l->y1);
        json_builder_add_int_value(b, l->x2);
        json_builder_add_int_value(b, l->y2);
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}
