/* hyocr-gtk — task presets and job options. */
#include "hyocr-preset.h"
#include "error.h"
#include <glib/gi18n.h>

G_DEFINE_ENUM_TYPE(HyocrPreset, hyocr_preset,
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_RECOGNIZE, "recognize"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_SPOTTING, "spotting"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_PARSE_DOCUMENT, "parse-document"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_PARSE_TABLE, "parse-table"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_PARSE_FORMULA, "parse-formula"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_PARSE_CHART, "parse-chart"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_TRANSLATE, "translate"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_EXTRACT_FIELDS, "extract-fields"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_SUBTITLES, "subtitles"),
    G_DEFINE_ENUM_VALUE(HYOCR_PRESET_CUSTOM, "custom"))

/* Each preset's task is the engine's (prompt.c holds the official prompts); the
 * words are the app's. */
static const struct {
    hyocr_task  task;
    const char *label, *hint, *extension;
    gboolean    parse;
} presets[HYOCR_N_PRESETS] = {
    [HYOCR_PRESET_RECOGNIZE] = { HYOCR_TASK_RECOGNIZE, N_("Recognize Text"), N_("All the text in the image"), "txt" },
    [HYOCR_PRESET_SPOTTING] = { HYOCR_TASK_SPOTTING, N_("Text with Boxes"), N_("Each line of text and where it is"), "txt" },
    [HYOCR_PRESET_PARSE_DOCUMENT] = { HYOCR_TASK_PARSE_DOCUMENT, N_("Parse Document"),
                                      N_("Markdown, with tables in HTML and formulas in LaTeX"), "md", TRUE },
    [HYOCR_PRESET_PARSE_TABLE] = { HYOCR_TASK_PARSE_TABLE, N_("Parse Table"), N_("The table, as HTML"), "md", TRUE },
    [HYOCR_PRESET_PARSE_FORMULA] = { HYOCR_TASK_PARSE_FORMULA, N_("Parse Formula"), N_("The formulas, as LaTeX"), "md",
                                     TRUE },
    [HYOCR_PRESET_PARSE_CHART] = { HYOCR_TASK_PARSE_CHART, N_("Parse Chart"),
                                   N_("A chart's data as a Markdown table, a flowchart as Mermaid"), "md", TRUE },
    [HYOCR_PRESET_TRANSLATE] = { HYOCR_TASK_TRANSLATE_EN, N_("Translate"), "", "md" },
    [HYOCR_PRESET_EXTRACT_FIELDS] = { HYOCR_TASK_EXTRACT_FIELDS, N_("Extract Fields"), "", "json" },
    [HYOCR_PRESET_SUBTITLES] = { HYOCR_TASK_SUBTITLES, N_("Subtitles"), N_("The subtitles of a video frame"), "txt" },
    [HYOCR_PRESET_CUSTOM] = { HYOCR_TASK_CUSTOM, N_("Custom Prompt"), "", "txt" },
};

const char *hyocr_preset_get_nick(HyocrPreset preset)
{
    g_autoptr(GEnumClass) klass = g_type_class_ref(HYOCR_TYPE_PRESET);
    GEnumValue *v = g_enum_get_value(klass, (int)preset);
    return v ? v->value_nick : NULL;
}

const char *hyocr_preset_get_label(HyocrPreset preset)
{
    g_return_val_if_fail((unsigned)preset < HYOCR_N_PRESETS, "");
    return _(presets[preset].label);
}

const char *hyocr_preset_get_hint(HyocrPreset preset)
{
    g_return_val_if_fail((unsigned)preset < HYOCR_N_PRESETS, "");
    return *presets[preset].hint ? _(presets[preset].hint) : "";
}

hyocr_task hyocr_preset_get_task(HyocrPreset preset)
{
    g_return_val_if_fail((unsigned)preset < HYOCR_N_PRESETS, HYOCR_TASK_RECOGNIZE);
    return presets[preset].task;
}

const char *hyocr_preset_get_extension(HyocrPreset preset)
{
    g_return_val_if_fail((unsigned)preset < HYOCR_N_PRESETS, "txt");
    return presets[preset].extension;
}

gboolean hyocr_preset_is_parse(HyocrPreset preset)
{
    return (unsigned)preset < HYOCR_N_PRESETS && presets[preset].parse;
}

char **hyocr_fields_parse(const char *text)
{
    g_autoptr(GStrvBuilder) b = g_strv_builder_new();
    g_autofree char *valid = g_utf8_make_valid(text ? text : "", -1);   /* GRegex wants UTF-8 */
    g_auto(GStrv) parts = g_regex_split_simple("[,;\n\xEF\xBC\x8C]", valid, 0, 0);
    for (char **p = parts; *p; p++) {
        g_autofree char *key = g_strstrip(g_strdup(*p));
        if (*key) g_strv_builder_add(b, key);
    }
    return g_strv_builder_end(b);
}

static hyocr_task preset_task(HyocrPreset preset, const char *target)
{
    if (preset == HYOCR_PRESET_TRANSLATE && g_strcmp0(target, "zh") == 0) return HYOCR_TASK_TRANSLATE_ZH;
    return hyocr_preset_get_task(preset);
}

/* The preset's own inputs; the checks mirror what the engine would refuse, but
 * in words that point at the field to fill. */
static gboolean read_preset_inputs(HyocrJobOptions *o, GSettings *settings, GError **error)
{
    if (o->preset == HYOCR_PRESET_EXTRACT_FIELDS) {
        o->fields = g_settings_get_strv(settings, "fields");
        if (!o->fields[0]) {
            g_set_error_literal(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                                _("Type the names of the fields to extract, separated by commas"));
            return FALSE;
        }
    } else if (o->preset == HYOCR_PRESET_CUSTOM) {
        g_autofree char *prompt = g_settings_get_string(settings, "custom-prompt");
        o->custom_prompt = g_strdup(g_strstrip(prompt));
        if (!*o->custom_prompt) {
            g_set_error_literal(error, HYOCR_ERROR, HYOCR_ERROR_PROMPT,
                                _("Type a prompt for the custom task"));
            return FALSE;
        }
    }
    return TRUE;
}

HyocrJobOptions *hyocr_job_options_new_from_settings(GSettings *settings, GError **error)
{
    g_autoptr(HyocrJobOptions) o = g_new0(HyocrJobOptions, 1);
    g_autofree char *target = g_settings_get_string(settings, "translate-target");
    o->preset = (HyocrPreset)g_settings_get_enum(settings, "preset");
    o->task = preset_task(o->preset, target);
    o->max_new_tokens = g_settings_get_int(settings, "max-new-tokens");
    o->max_side = g_settings_get_int(settings, "max-image-side");
    double penalty = g_settings_get_double(settings, "repetition-penalty");
    o->repetition_penalty = penalty > 0 ? (float)penalty : -1.0f;
    if (!read_preset_inputs(o, settings, error)) return NULL;
    return g_steal_pointer(&o);
}

HyocrJobOptions *hyocr_job_options_copy(const HyocrJobOptions *opts)
{
    HyocrJobOptions *o = g_memdup2(opts, sizeof *opts);
    o->fields = g_strdupv(opts->fields);
    o->custom_prompt = g_strdup(opts->custom_prompt);
    return o;
}

void hyocr_job_options_free(HyocrJobOptions *opts)
{
    if (!opts) return;
    g_strfreev(opts->fields);
    g_free(opts->custom_prompt);
    g_free(opts);
}
