/* hyocr — a checkpoint folder: config + tensors under one canonical name scheme.
 *
 * Canonical names are Tencent's on-disk names (vit.*, model.*, lm_head.weight).
 * transformers-5 names (model.vision_tower.*, model.language_model.*, …) are
 * renamed to them on open. Every tensor the model needs is checked against the
 * config (presence, dtype, shape, byte range) before anything runs. */
#pragma once
#include "config.h"
#include "safetensors.h"

G_BEGIN_DECLS

typedef struct hyocr_checkpoint hyocr_checkpoint;

typedef struct {
    size_t  n_tensors;            /* tensors the model uses */
    size_t  n_ignored;            /* present in the files, unused (e.g. image_sep, MTP) */
    int64_t n_params;             /* parameters counted once (tied head not twice) */
    int64_t n_params_vision;
    int64_t n_params_text;
    size_t  bytes_per_dtype[HYOCR_DTYPE_COUNT];
    bool    lm_head_tied;         /* true when lm_head reuses embed_tokens */
    bool    bf16_only;            /* every tensor the model uses is BF16 (the releases are) */
    bool    transformers_names;   /* file used the transformers-5 scheme */
    int     n_files;
} hyocr_checkpoint_stats;

hyocr_checkpoint   *hyocr_checkpoint_open(const char *dir, GError **error);
void                hyocr_checkpoint_free(hyocr_checkpoint *ck);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_checkpoint, hyocr_checkpoint_free)

const hyocr_config *hyocr_checkpoint_config(const hyocr_checkpoint *ck);
hyocr_config       *hyocr_checkpoint_config_mut(hyocr_checkpoint *ck);
const char         *hyocr_checkpoint_dir(const hyocr_checkpoint *ck);
void                hyocr_checkpoint_get_stats(const hyocr_checkpoint *ck, hyocr_checkpoint_stats *out);

/* The DFlash speculative-decoding draft in the model folder's dflash/ (issue 20), opened and
 * checked with the model: NULL when the folder has none, or when it is unusable; then
 * draft_error says why (the model itself is fine and runs without speculation). */
const hyocr_checkpoint    *hyocr_checkpoint_draft(const hyocr_checkpoint *ck);
const GError              *hyocr_checkpoint_draft_error(const hyocr_checkpoint *ck);
/* Opens dir (a dflash/ folder: config.json + model.safetensors, F32, F16 or BF16) as the draft of
 * a model with config target: its config, its fit to the target, and every tensor it needs. */
hyocr_checkpoint          *hyocr_checkpoint_open_draft(const char *dir, const hyocr_config *target, GError **error);
/* A draft's config; NULL for a model checkpoint (whose config is hyocr_checkpoint_config). */
const hyocr_dflash_config *hyocr_checkpoint_dflash_config(const hyocr_checkpoint *ck);

/* Canonical name, printf-style. Never NULL for tensors the model uses (validated
 * at open); "lm_head.weight" resolves to the embedding when tied. */
const hyocr_tensor *hyocr_checkpoint_get(const hyocr_checkpoint *ck, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Maps a transformers-5 name to the canonical one (newly allocated; a copy when already canonical). */
char *hyocr_checkpoint_canonical_name(const char *name);

/* Parameter count of the tensors the model uses under cfg, computed from the config alone
 * (the tied head counted once; image_sep, which the model never reads, not counted).
 * vision/text may be NULL. */
int64_t hyocr_checkpoint_expected_params(const hyocr_config *cfg, int64_t *vision, int64_t *text);

G_END_DECLS
