/* hyocr — task presets and the chat prompt for one image + one task.
 * Rendering follows Tencent's template with the empty system message (spec §3.6):
 *   BOS, sys-terminator, im_start, image×N, im_end, task text, <hy_User> */
#pragma once
#include "config.h"
#include "tokenizer.h"
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    HYOCR_TASK_RECOGNIZE,        /* extract the text */
    HYOCR_TASK_SPOTTING,         /* text + boxes */
    HYOCR_TASK_PARSE_DOCUMENT,   /* Markdown, tables HTML, formulas LaTeX */
    HYOCR_TASK_PARSE_TABLE,
    HYOCR_TASK_PARSE_FORMULA,
    HYOCR_TASK_PARSE_CHART,
    HYOCR_TASK_TRANSLATE_ZH,
    HYOCR_TASK_TRANSLATE_EN,
    HYOCR_TASK_EXTRACT_FIELDS,   /* user-given keys, JSON out */
    HYOCR_TASK_SUBTITLES,
    HYOCR_TASK_CUSTOM,
    HYOCR_TASK_COUNT,
} hyocr_task;

const char *hyocr_task_name(hyocr_task task);                  /* "recognize", "spotting", … */
bool        hyocr_task_from_name(const char *name, hyocr_task *out);

/* The official prompt text for the task and model version. fields is a
 * NULL-terminated list (EXTRACT_FIELDS), custom the user's text (CUSTOM). */
char *hyocr_task_prompt(hyocr_task task, hyocr_model_version version,
                        const char *const *fields, const char *custom, GError **error);

typedef struct {
    int32_t *ids;            /* [n] */
    int32_t *pos;            /* [4 · n], axis-major: pos[a·n + t] (a: 0 seq, 1 w, 2 h, 3 image) */
    int      n;
    int      image_start;    /* index of the first image token (image_begin slot) */
    int      n_image;        /* Hm·(Wm+1)+2 */
    int      merged_h, merged_w;
} hyocr_prompt;

/* grid_h/grid_w: patch grid of the image (hyocr_pixels). */
hyocr_prompt *hyocr_prompt_build(const hyocr_tokenizer *tok, const hyocr_config *cfg,
                                 const char *text, int grid_h, int grid_w, GError **error);
void          hyocr_prompt_free(hyocr_prompt *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_prompt, hyocr_prompt_free)

G_END_DECLS
