/* hyocr — model configuration read from a checkpoint folder.
 * Accepts the legacy flat Tencent config.json (1.0 and 1.5 releases) and the
 * transformers-5 nested text_config/vision_config layout. */
#pragma once
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

G_BEGIN_DECLS

#define HYOCR_MAX_EOS 8

typedef enum {
    HYOCR_MODEL_VERSION_1_0,
    HYOCR_MODEL_VERSION_1_5,
} hyocr_model_version;

/* Spec §0.2: R1 = transformers (default), R2 = Tencent's original code / vLLM native. */
typedef enum {
    HYOCR_ROPE_LAYOUT_R1,  /* contiguous (2·section)-dim chunks over the full rotary vector */
    HYOCR_ROPE_LAYOUT_R2,  /* section blocks over the half-frequencies, both rotate-half partners same axis */
} hyocr_rope_layout;

typedef enum {
    HYOCR_POSEMB_R1,       /* bilinear to an explicit (h, w) size */
    HYOCR_POSEMB_R2,       /* scale factor (h + 0.1) / edge */
} hyocr_posemb_interp;

typedef struct {
    int    hidden_size;          /* 1024 */
    int    num_layers;           /* 24 */
    int    num_heads;            /* 16 */
    int    num_kv_heads;         /* 8 */
    int    head_dim;             /* 128 */
    int    intermediate_size;    /* 3584 */
    int    vocab_size;           /* 120818 */
    float  rms_norm_eps;         /* 1e-5 */
    double rope_theta;           /* 10000 */
    double rope_alpha;           /* 1000 (NTK alpha); 0 = plain RoPE */
    int    rope_section[4];      /* xdrope/mrope section, half-head units: 16,16,16,16 */
    int    n_rope_sections;      /* 4 (0 = 1-D RoPE) */
    int    max_position_embeddings;
    bool   tie_word_embeddings;
} hyocr_text_config;

typedef struct {
    int   hidden_size;           /* 1152 */
    int   intermediate_size;     /* 4304 */
    int   num_layers;            /* 27 */
    int   num_heads;             /* 16 → head_dim 72 */
    int   patch_size;            /* 16 */
    int   spatial_merge_size;    /* 2 */
    int   num_channels;          /* 3 */
    int   max_image_size;        /* 2048 → position table edge 128 */
    int   out_hidden_size;       /* = text hidden_size */
    float eps;                   /* LayerNorm and merger RMSNorm eps */
} hyocr_vision_config;

typedef struct {
    int64_t min_pixels;
    int64_t max_pixels;
    int     patch_size;
    int     merge_size;
    int     temporal_patch_size;
    float   image_mean[3];
    float   image_std[3];
    double  rescale_factor;
} hyocr_processor_config;

typedef struct {
    int32_t eos_ids[HYOCR_MAX_EOS];
    int     n_eos;
    float   repetition_penalty;  /* 0 when the file has none */
    bool    do_sample;
    float   temperature;         /* 0 when absent */
    int     top_k;               /* 0 when absent */
    float   top_p;               /* 0 when absent */
} hyocr_generation_config;

typedef struct {
    hyocr_text_config       text;
    hyocr_vision_config     vision;
    hyocr_processor_config  processor;
    hyocr_generation_config generation;
    hyocr_model_version     version;
    hyocr_rope_layout       rope_layout;
    hyocr_posemb_interp     posemb_interp;
    bool                    nested_layout;   /* config.json had text_config/vision_config */
    /* token ids from config.json (tokenizer ids are authoritative, see tokenizer.h) */
    int32_t image_token_id, im_start_id, im_end_id, im_newline_id;
    int32_t bos_id, eos_id, eod_id, pad_id;
    /* tokenizer_config.json */
    char   *bos_token, *eos_token, *pad_token;
    char   *chat_template;       /* NULL when absent */
} hyocr_config;

/* The DFlash speculative-decoding draft (issue 20): dflash/config.json of the 1.5 release, a
 * Qwen3-style config with the draft's own fields (block_size, dflash_config). */
#define HYOCR_DFLASH_MAX_TAPS 8
#define HYOCR_DFLASH_MAX_BLOCK 64   /* the bonus token and up to 63 drafts: a verify block's rows */

typedef struct {
    int     hidden_size;            /* 1024: the target's, since it shares the embedding and head */
    int     intermediate_size;      /* 3584 */
    int     num_layers;             /* 5 */
    int     num_heads;              /* 16 */
    int     num_kv_heads;           /* 8 */
    int     head_dim;               /* 128 */
    int     vocab_size;             /* 120818 */
    int     block_size;             /* 16: the bonus token and block_size − 1 drafts */
    int32_t mask_token_id;          /* 120817 */
    int     target_layer_ids[HYOCR_DFLASH_MAX_TAPS];   /* 1, 8, 15, 22: the target layers it reads */
    int     n_target_layers;
    int     num_target_layers;      /* layers of the target it was made for; 0 when the file has none */
    float   rms_norm_eps;           /* 1e-5 */
    double  rope_theta;             /* 10000, 1-D positions */
} hyocr_dflash_config;

/* Reads dir/config.json as a DFlash draft config. Every field that sizes a tensor or changes the
 * arithmetic is checked; what hyocr does not implement (a RoPE scaling, sliding windows, biases,
 * another activation) is an error naming the file and key. */
bool hyocr_dflash_config_load(const char *dir, hyocr_dflash_config *out, GError **error);

/* Reads config.json, generation_config.json, preprocessor_config.json (or the
 * "image_processor" section of transformers-5's processor_config.json, which wins),
 * tokenizer_config.json and chat_template.jinja from dir. Missing optional files leave defaults;
 * missing config.json or a missing required field is an error naming the file and key.
 * Where config.json has a key both at the top level and in text_config, the top level wins
 * (as in transformers). */
hyocr_config *hyocr_config_load(const char *dir, GError **error);
void          hyocr_config_free(hyocr_config *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(hyocr_config, hyocr_config_free)

int  hyocr_config_vision_head_dim(const hyocr_config *cfg);
int  hyocr_config_pos_edge(const hyocr_config *cfg);   /* max_image_size / patch_size */
/* id is one of generation.eos_ids (generation_config.json's eos_token_id, or config.json's
 * when that file has none, as transformers does). */
bool hyocr_config_is_eos(const hyocr_config *cfg, int32_t id);

G_END_DECLS
