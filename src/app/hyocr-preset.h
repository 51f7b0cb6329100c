/* hyocr-gtk — task presets offered by the window and the options a job is
 * created with (a snapshot of the settings, so later changes leave queued jobs alone). */
#pragma once
#include "hyocr.h"
#include <gio/gio.h>

G_BEGIN_DECLS

/* The engine's tasks (prompt.h) as the window offers them, in its order: one
 * preset per task, translation's two targets being one preset. Values and nicks
 * match the io.github.hyocr.Hyocr.Preset enum of the schema; a nick is the
 * task's name with dashes. */
typedef enum {
    HYOCR_PRESET_RECOGNIZE,
    HYOCR_PRESET_SPOTTING,
    HYOCR_PRESET_PARSE_DOCUMENT,
    HYOCR_PRESET_PARSE_TABLE,
    HYOCR_PRESET_PARSE_FORMULA,
    HYOCR_PRESET_PARSE_CHART,
    HYOCR_PRESET_TRANSLATE,
    HYOCR_PRESET_EXTRACT_FIELDS,
    HYOCR_PRESET_SUBTITLES,
    HYOCR_PRESET_CUSTOM,
    HYOCR_N_PRESETS,
} HyocrPreset;

#define HYOCR_TYPE_PRESET (hyocr_preset_get_type())
GType hyocr_preset_get_type(void);

const char *hyocr_preset_get_nick(HyocrPreset preset);
/* The task picker's words for it: "Parse Table"; a line under it, or "". Translated. */
const char *hyocr_preset_get_label(HyocrPreset preset);
const char *hyocr_preset_get_hint(HyocrPreset preset);
/* The engine's task (translation: the English one; the options pick the target). */
hyocr_task  hyocr_preset_get_task(HyocrPreset preset);
/* File name extension that suits the preset's output ("txt", "md", "json"). */
const char *hyocr_preset_get_extension(HyocrPreset preset);
/* Its answer is Markdown or HTML, which the result view can render. */
gboolean    hyocr_preset_is_parse(HyocrPreset preset);

typedef struct {
    HyocrPreset preset;
    hyocr_task  task;
    char      **fields;            /* EXTRACT_FIELDS, NULL-terminated */
    char       *custom_prompt;     /* CUSTOM */
    int         max_new_tokens;
    int         max_side;          /* 0 = original size */
    float       repetition_penalty;/* < 0: the model's default */
    gboolean    ignore_eos;        /* long runs for benchmarks and the responsiveness test */
} HyocrJobOptions;

/* Reads the preset and generation keys. Fails with a message for the user when
 * the preset lacks what it needs (no field names, an empty custom prompt). */
HyocrJobOptions *hyocr_job_options_new_from_settings(GSettings *settings, GError **error);
HyocrJobOptions *hyocr_job_options_copy(const HyocrJobOptions *opts);
void             hyocr_job_options_free(HyocrJobOptions *opts);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HyocrJobOptions, hyocr_job_options_free)

/* Splits what the user typed ("name, date; total") into trimmed, non-empty keys. */
char **hyocr_fields_parse(const char *text);

G_END_DECLS
