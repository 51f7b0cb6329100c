/* hyocr — memory plan (see memplan.h). Each phase below replays, in order, the
 * buffers its code takes and gives back; the phase's peak is the high-water mark. */
#include "memplan.h"
#include "i18n.h"
#include <string.h>

typedef struct {
    int64_t live, peak;
} tracker;

static void take(tracker *t, int64_t bytes)
{
    t->live += bytes;
    if (t->live > t->peak) t->peak = t->live;
}

static void give(tracker *t, int64_t bytes)
{
    t->live -= bytes;
}

void hyocr_memplan_params_init(hyocr_memplan_params *p, hyocr_backend_kind kind)
{
    memset(p, 0, sizeof *p);
    p->act_elem = kind == HYOCR_BACKEND_CUDA ? 2 : 4;
    p->matrix_elem = p->draft_matrix_elem = p->act_elem;
    p->backend_bytes = kind == HYOCR_BACKEND_CUDA ? HYOCR_MEMPLAN_CUDA_BACKEND : 0;
    p->lm_head_tied = true;
    p->kv_block_size = 16;
    p->vit_chunk_rows = HYOCR_VIT_CHUNK_ROWS;
    p->text_chunk_rows = HYOCR_TEXT_CHUNK_ROWS;
}

/* Weight elements: in matrices (model.c's load1 and load_fused with matrix set: hyocr_weight_kind's
 * matrix) and the rest (norms, biases, the position table, the merger's vectors). */
typedef struct {
    int64_t mat, rest;
} weight_elems;

static int64_t weight_bytes(weight_elems w, int elem, int matrix_elem)
{
    return w.mat * matrix_elem + w.rest * elem;
}

/* The buffers model.c's load_vision uploads. */
static weight_elems vision_weight_elems(const hyocr_config *cfg)
{
    const hyocr_vision_config *v = &cfg->vision;
    int64_t C = v->hidden_size, I = v->intermediate_size, T = v->out_hidden_size;
    int64_t pp = (int64_t)v->num_channels * v->patch_size * v->patch_size, edge = hyocr_config_pos_edge(cfg);
    int64_t block_mat = 3 * C * C + C * C + I * C + C * I, block_rest = 2 * C + 3 * C + C + 2 * C + I + C;
    int64_t merger_mat = 8 * C * C + 8 * C * C + T * 4 * C, merger_rest = C + 2 * C + 4 * C + 4 * C + T + 3 * T;
    return (weight_elems){ C * pp + v->num_layers * block_mat + merger_mat,
                           C + (edge * edge + 1) * C + v->num_layers * block_rest + merger_rest };
}

/* … and load_text: fused q|k|v and gate|up are one buffer each, which costs the same. */
static weight_elems text_weight_elems(const hyocr_config *cfg, bool tied)
{
    const hyocr_text_config *t = &cfg->text;
    int64_t H = t->hidden_size, D = t->head_dim, I = t->intermediate_size, V = t->vocab_size;
    int64_t q = (int64_t)t->num_heads * D, kv = (int64_t)t->num_kv_heads * D;
    int64_t layer_mat = (q + 2 * kv) * H + H * q + 2 * I * H + H * I, layer_rest = H + 2 * D + H;
    return (weight_elems){ V * H + t->num_layers * layer_mat + (tied ? 0 : V * H), t->num_layers * layer_rest + H };
}

int64_t hyocr_memplan_weights(const hyocr_config *cfg, int elem, int matrix_elem, bool lm_head_tied)
{
    return weight_bytes(vision_weight_elems(cfg), elem, matrix_elem) +
           weight_bytes(text_weight_elems(cfg, lm_head_tied), elem, matrix_elem);
}

int64_t hyocr_memplan_vision_weights(const hyocr_config *cfg, int elem, int matrix_elem)
{
    return weight_bytes(vision_weight_elems(cfg), elem, matrix_elem);
}

int hyocr_memplan_matrix_elem(int act_elem, bool bf16_only, int bf16_elem)
{
    return bf16_only && bf16_elem > 0 ? bf16_elem : act_elem;
}

void hyocr_memplan_params_bf16(hyocr_memplan_params *p, bool model_bf16, bool draft_bf16, int bf16_elem)
{
    p->matrix_elem = hyocr_memplan_matrix_elem(p->act_elem, model_bf16, bf16_elem);
    p->draft_matrix_elem = hyocr_memplan_matrix_elem(p->act_elem, draft_bf16, bf16_elem);
}

int64_t hyocr_memplan_kv_per_token(const hyocr_config *cfg, int elem)
{
    const hyocr_text_config *t = &cfg->text;
    return (int64_t)t->num_layers * 2 * t->num_kv_heads * t->head_dim * elem;
}

int64_t hyocr_memplan_draft_weights(const hyocr_dflash_config *d, int elem, int matrix_elem)
{
    int64_t H = d->hidden_size, D = d->head_dim, I = d->intermediate_size;
    int64_t q = (int64_t)d->num_heads * D, kv = (int64_t)d->num_kv_heads * D;
    int64_t layer_mat = (q + 2 * kv) * H + H * q + 2 * I * H + H * I, layer_rest = H + 2 * D + H;
    weight_elems w = { H * d->n_target_layers * H + d->num_layers * layer_mat, 2 * H + d->num_layers * layer_rest };
    return weight_bytes(w, elem, matrix_elem);
}

int64_t hyocr_memplan_draft_ctx_per_token(const hyocr_dflash_config *d, int elem)
{
    return (int64_t)d->num_layers * 2 * d->num_kv_heads * d->head_dim * elem;
}

/* dflash.c and speculate.c: the context (its cache sized for every token the job may hold and
 * a block, 256 rows at least; the cursor), the block's scratch and logits, a context chunk
 * (CTX_CHUNK rows of the prompt at a time), the job's tapped rows (a block, the pending rows of
 * plain steps), and the verify rows' logits and final norms beyond a plain step's. */
static void plan_draft(const hyocr_config *cfg, const hyocr_memplan_params *p, hyocr_memplan *out)
{
    const hyocr_dflash_config *d = p->draft;
    if (!d) return;
    int64_t e = p->act_elem, B = d->block_size, H = d->hidden_size, D = d->head_dim, I = d->intermediate_size;
    int64_t V = d->vocab_size, W = (int64_t)d->n_target_layers * H;
    out->draft_weights = hyocr_memplan_draft_weights(d, e, p->draft_matrix_elem);
    if (p->spec_tokens <= 0) return;
    int64_t rows = MAX((int64_t)out->kv_tokens + B, 256);
    out->draft_ctx = rows * hyocr_memplan_draft_ctx_per_token(d, e);
    int64_t block = B * H * 4 + B * (H + ((int64_t)d->num_heads + 2 * d->num_kv_heads) * D + d->num_heads * D + H +
                                     3 * I) * e + (B - 1) * V * 4 + B * 4;
    int64_t chunk = MIN(MAX(out->prompt_tokens, 1), 512);
    int64_t ctx_chunk = chunk * (H * 4 + H * e + 2 * (int64_t)d->num_kv_heads * D * e);
    int64_t taps = (B + 64) * W * e + (1 + B) * 4;   /* and the cursor */
    int64_t verify = (int64_t)p->spec_tokens * ((int64_t)cfg->text.vocab_size * 4 + cfg->text.hidden_size * e);
    out->draft_scratch = block + ctx_chunk + taps + verify;
    out->prefill_taps = (int64_t)out->prompt_tokens * W * e;
}

int hyocr_memplan_image_tokens(int grid_h, int grid_w)
{
    return (grid_h / 2) * (grid_w / 2 + 1) + 2;
}

int hyocr_memplan_kv_tokens(int prompt_tokens, int max_new_tokens, int max_model_len)
{
    int64_t n = (int64_t)prompt_tokens + MAX(max_new_tokens, 1) - 1;
    if (max_model_len > 0) n = MIN(n, (int64_t)max_model_len - 1);
    return (int)MAX(n, (int64_t)prompt_tokens);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* vision.c: patch embedding, then the ViT blocks (whole-image x, qkv and
 * attention output; chunk-sized norm, delta and MLP buffers). Leaves x live. */
static void plan_tower(const hyocr_config *cfg, const hyocr_memplan_params *p, int64_t n, tracker *t,
                       hyocr_memplan *out)
{
    const hyocr_vision_config *v = &cfg->vision;
    int64_t e = p->act_elem, C = v->hidden_size, I = v->intermediate_size;
    int64_t K = (int64_t)v->num_channels * v->patch_size * v->patch_size;
    int64_t rows = min64(n, MAX(p->vit_chunk_rows, 1));
    int64_t pix = n * K * e, x = n * C * 4;
    take(t, pix);
    take(t, x);
    out->vision_embed = t->live;
    give(t, pix);
    int64_t chunk = rows * C * e * 2 + rows * I * e;   /* norm out, delta; MLP hidden */
    int64_t whole = n * 3 * C * e + n * C * e;         /* qkv, attention out */
    take(t, chunk + whole);
    out->vision_blocks = t->live;
    give(t, chunk + whole);
}

/* vision.c's merger: norm + gather by merged-row chunks (x freed after), the two
 * convolutions by cell chunks, the newline column, the Linear by row chunks into
 * the fp32 pre-norm rows, and the output. Leaves the output live. */
static void plan_merger(const hyocr_config *cfg, const hyocr_memplan_params *p, int gh, int gw, tracker *t,
                        int64_t *out_bytes)
{
    const hyocr_vision_config *v = &cfg->vision;
    int64_t e = p->act_elem, C = v->hidden_size, T = v->out_hidden_size, R = MAX(p->vit_chunk_rows, 1);
    int64_t n = (int64_t)gh * gw, Hm = gh / 2, Wm = gw / 2, cells = Hm * Wm, rows = Hm * (Wm + 1), n_out = rows + 2;
    int64_t merged_rows = MAX(1, min64(R / (2 * (int64_t)gw), Hm));
    int64_t norm = 2 * merged_rows * gw * C * e, gather = cells * 4 * C * e;
    take(t, norm + gather);
    give(t, norm + n * C * 4);                          /* and x */
    int64_t p0 = min64(cells, R) * 2 * C * e, p2 = cells * 4 * C * e;
    take(t, p0 + p2);
    give(t, gather + p0);
    int64_t nl = (rows + 2) * 4 * C * e;
    take(t, nl);
    give(t, p2);
    int64_t pre = n_out * T * 4, y = min64(rows, R) * T * e;
    take(t, pre + y);
    give(t, nl + y);
    *out_bytes = n_out * T * e;
    take(t, *out_bytes);
    give(t, pre);
}

int hyocr_memplan_text_chunk(int64_t rows, int chunk_rows)
{
    int64_t c = MAX(chunk_rows, 1);
    return (int)(rows <= 2 * c ? MAX(rows, 1) : c);
}

/* text.c: one chunk's buffers of every role, the last rows and the logits. */
static int64_t plan_prefill(const hyocr_config *cfg, const hyocr_memplan_params *p, int prompt_tokens)
{
    const hyocr_text_config *c = &cfg->text;
    int64_t e = p->act_elem, H = c->hidden_size, D = c->head_dim, I = c->intermediate_size;
    int64_t rows = hyocr_memplan_text_chunk(MAX(prompt_tokens, 1), p->text_chunk_rows);
    int64_t qkv = ((int64_t)c->num_heads + 2 * c->num_kv_heads) * D, att = (int64_t)c->num_heads * D;
    int64_t per_row = H * 4 + (H + qkv + att + H + 2 * I + I) * e;
    return rows * per_row + H * e + (int64_t)c->vocab_size * 4;
}

static void plan_vision(const hyocr_config *cfg, const hyocr_memplan_params *p, hyocr_memplan *out)
{
    int gh = out->grid_h, gw = out->grid_w;
    if (gh <= 0 || gw <= 0 || gh % 2 || gw % 2) return;
    tracker t = { 0 };
    plan_tower(cfg, p, (int64_t)gh * gw, &t, out);
    t.peak = t.live;
    plan_merger(cfg, p, gh, gw, &t, &out->image_embeds);
    out->vision_merger = t.peak;
    out->vision = MAX(MAX(out->vision_embed, out->vision_blocks), out->vision_merger);
}

void hyocr_memplan_for_job(const hyocr_config *cfg, const hyocr_memplan_params *p, int grid_h, int grid_w,
                           int prompt_tokens, int max_new_tokens, hyocr_memplan *out)
{
    memset(out, 0, sizeof *out);
    int bs = MAX(p->kv_block_size, 1);
    out->grid_h = grid_h;
    out->grid_w = grid_w;
    out->n_patches = grid_h > 0 && grid_w > 0 ? grid_h * grid_w : 0;
    out->image_tokens = out->n_patches ? hyocr_memplan_image_tokens(grid_h, grid_w) : 0;
    out->prompt_tokens = MAX(prompt_tokens, 0);
    out->max_new_tokens = max_new_tokens;
    out->act_elem = p->act_elem;
    out->weights = hyocr_memplan_weights(cfg, p->act_elem, p->matrix_elem, p->lm_head_tied);
    out->vision_weights = hyocr_memplan_vision_weights(cfg, p->act_elem, p->matrix_elem);
    out->vision_offload = p->vision_offload;
    out->backend = p->backend_bytes;
    out->kv_per_token = hyocr_memplan_kv_per_token(cfg, p->act_elem);
    out->kv_per_block = out->kv_per_token * bs;

    int64_t blocks;
    if (p->kv_fixed_blocks > 0) {
        blocks = p->kv_fixed_blocks;
        out->kv_tokens = (int)MIN(blocks * bs, (int64_t)G_MAXINT);
    } else {
        out->kv_tokens = hyocr_memplan_kv_tokens(out->prompt_tokens, max_new_tokens, p->max_model_len);
        blocks = ((int64_t)out->kv_tokens + bs - 1) / bs;
    }
    out->kv = blocks * out->kv_per_block;

    plan_vision(cfg, p, out);
    out->prefill = plan_prefill(cfg, p, out->prompt_tokens);
    plan_draft(cfg, p, out);
    out->weights += out->draft_weights;
    int64_t fixed = out->weights + out->backend;
    out->peak_vision = fixed + out->vision + (p->kv_fixed_blocks > 0 ? out->kv : 0);
    /* The pick slots' penalty sets (model.c) come with the first decode step,
     * after the prefill has freed the image embeddings; its scratch stays. */
    out->pick = (int64_t)HYOCR_MEMPLAN_PICK_SLOTS * ((cfg->text.vocab_size + 31) / 32) * 4;
    out->peak_text = fixed - (p->vision_offload ? out->vision_weights : 0) + out->kv + out->prefill +
                     MAX(out->image_embeds, out->pick) + out->draft_ctx + out->draft_scratch + out->prefill_taps;
    out->total = MAX(out->peak_vision, out->peak_text);
    out->fits = true;
}

char *hyocr_memplan_format_bytes(int64_t bytes)
{
    double b = (double)bytes;
    if (bytes >= ((int64_t)1 << 30)) return g_strdup_printf("%.2f GiB", b / (1 << 30));
    if (bytes >= ((int64_t)1 << 20)) return g_strdup_printf("%.1f MiB", b / (1 << 20));
    return g_strdup_printf("%.1f KiB", b / (1 << 10));
}

static void add_part(GString *s, const char *name, int64_t bytes)
{
    g_autofree char *b = hyocr_memplan_format_bytes(bytes);
    g_string_append_printf(s, "%s%s %s", s->len ? " + " : "", name, b);
}

char *hyocr_memplan_describe(const hyocr_memplan *plan)
{
    GString *s = g_string_new(NULL);
    bool text_phase = plan->peak_text >= plan->peak_vision;
    if (text_phase && plan->vision_offload) {
        add_part(s, _("language-model weights"), plan->weights - plan->vision_weights);
        g_string_append(s, _(" (vision weights off the device)"));
    } else {
        add_part(s, _("weights"), plan->weights);
    }
    bool fixed_kv = plan->peak_vision - plan->weights - plan->backend > plan->vision;
    if (text_phase) {
        add_part(s, _("KV cache"), plan->kv);
        g_string_append_printf(s, _(" (%d tokens)"), plan->kv_tokens);
        add_part(s, _("prefill"), plan->prefill);
        add_part(s, _("image embeddings"), plan->image_embeds);
        if (plan->draft_ctx)
            add_part(s, _("speculative decoding"), plan->draft_ctx + plan->draft_scratch + plan->prefill_taps);
    } else {
        add_part(s, _("vision tower"), plan->vision);
        if (fixed_kv) add_part(s, _("fixed KV pool"), plan->kv);
    }
    if (plan->backend) add_part(s, _("backend scratch"), plan->backend);
    return g_string_free(s, FALSE);
}
