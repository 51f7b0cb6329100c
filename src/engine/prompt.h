/* hyocr — task presets, the release's chat template, and the prompt for one
 * image. A task runs as Tencent's scripts send it (spec §3.6): an empty system
 * message, then one user message holding the image and the task text:
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

/* A conversation as the release's chat template reads it. */
typedef enum {
    HYOCR_CHAT_SYSTEM,
    HYOCR_CHAT_USER,
    HYOCR_CHAT_ASSISTANT,
    HYOCR_CHAT_OTHER,        /* a role the template renders nothing for (tool, developer, …) */
} hyocr_chat_role;

typedef struct {
    const char *text;        /* a text part; NULL: an image part */
} hyocr_chat_part;

typedef struct {
    hyocr_chat_role        role;
    const char            *content;   /* the content as a string, or NULL: parts */
    const hyocr_chat_part *parts;
    int                    n_parts;
} hyocr_chat_message;

/* Renders messages as the release's chat template does (spec §3.6): BOS, then,
 * when the first message is a system one (even an empty one), its text (or its
 * first part's) and the system marker; each user message's string, or its parts
 * in order (an image as im_start, image, im_end: one image token, expanded by
 * hyocr_prompt_build_rendered), then <hy_User>; each assistant message's text
 * then <hy_Assistant>. Other messages render nothing. *n_images (may be NULL)
 * gets the image parts rendered. */
char *hyocr_chat_render(const hyocr_tokenizer *tok, const hyocr_config *cfg, const hyocr_chat_message *msgs,
                        int n_msgs, int *n_images, GError **error);

typedef struct {
    int32_t *ids;            /* [n] */
    int32_t *pos;            /* [4 · n], axis-major: pos[a·n + t] (a: 0 seq, 1 w, 2 h, 3 image) */
    int      n;
    int      image_start;    /* index of the first image token (image_begin slot) */
    int      n_image;        /* Hm·(Wm+1)+2 */
    int      merged_h, merged_w;
} hyocr_prompt;

/* The task text as Tencent's scripts send it; grid_h/grid_w: patch grid of the
 * image (hyocr_pixels). */
hyocr_prompt *hyocr_prompt_build(const hyocr_tokenizer *tok, const hyocr_config *cfg,
                                 const char *text, int grid_h, int grid_w, GError **error);
/* A rendered conversation (hyocr_chat_render) holding exactly one image: its
 * image token becomes the grid's N_img tokens (spec §3.5), as the processor
 * replaces it before tokenizing. */
hyocr_prompt *hyocr_prompt_build_rendered(const hyocr_tokenizer *tok, const hyocr_config *cfg,
                                          const char *rendered, int grid_h, int grid_w, GError **error);
void          hyocr_prompt_free(hyocr_prompt *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_prompt, hyocr_prompt_free)

G_END_DECLS
