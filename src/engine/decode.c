/* hyocr — decoding on the device: what the model keeps between decode steps.
 * The pick slots hold each live job's repetition-penalty set where the backend
 * chooses tokens; the graph cache holds the captured steps, one per row count,
 * context bucket and buffer set, replayed while the shape lasts. The step itself
 * (its ops) is the decoder's (text.c), handed in as a work function. */
#include "model.h"
#include "error.h"
#include "i18n.h"
#include "memplan.h"
#include <string.h>

#define OPS (m->be->ops)

/* ---- pick slots ---------------------------------------------------------------- */

static size_t pick_words(const hyocr_model *m)
{
    return ((size_t)m->cfg.text.vocab_size + 31) / 32;
}

/* Uploads the set of ids[0 .. n) into slot (the set travels as raw words; upload_f32 copies
 * F32 buffers bit for bit). */
static bool slot_upload(hyocr_model *m, int slot, const int32_t *ids, int n, GError **error)
{
    const int V = m->cfg.text.vocab_size;
    const size_t W = pick_words(m);
    g_autofree uint32_t *words = g_new0(uint32_t, W);
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= V) {
            g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                        _("token id %d at position %d is outside the vocabulary of %d tokens"), ids[i], i, V);
            return false;
        }
        words[ids[i] >> 5] |= 1u << (ids[i] & 31);
    }
    return OPS->upload_f32(m->be, m->pick_seen, (size_t)slot * W, (const float *)words, W, error);
}

int hyocr_model_pick_slot_new(hyocr_model *m, const int32_t *ids, int n, GError **error)
{
    const size_t W = pick_words(m);
    if (!m->pick_seen) {   /* the slots the memory plan counts, one per live job */
        m->pick_seen = OPS->alloc(m->be, HYOCR_BUF_F32, HYOCR_MEMPLAN_PICK_SLOTS * W, error);
        if (!m->pick_seen) return -1;
        m->pick_n_slots = HYOCR_MEMPLAN_PICK_SLOTS;
        m->pick_used = g_new0(uint8_t, HYOCR_MEMPLAN_PICK_SLOTS);
    }
    int slot = 0;
    while (slot < m->pick_n_slots && m->pick_used[slot]) slot++;
    if (slot == m->pick_n_slots) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT,
                    _("all %d token-choice slots are taken: finish a job before starting another"), m->pick_n_slots);
        return -1;
    }
    if (!slot_upload(m, slot, ids, n, error)) return -1;
    m->pick_used[slot] = 1;
    return slot;
}

bool hyocr_model_pick_slot_set(hyocr_model *m, int slot, const int32_t *ids, int n, GError **error)
{
    if (slot < 0 || slot >= m->pick_n_slots || !m->pick_used[slot]) {
        g_set_error(error, HYOCR_ERROR, HYOCR_ERROR_INVALID_ARGUMENT, _("token-choice slot %d is not open (a bug in hyocr: please report it)"), slot);
        return false;
    }
    return slot_upload(m, slot, ids, n, error);
}

/* Rounds are few rows; a generous first size keeps the buffer (which captured rounds point
 * into) from moving. */
#define STEP_IDS_MIN 1024

bool hyocr_model_step_ids(hyocr_model *m, int rows, GError **error)
{
    size_t need = (size_t)rows + HYOCR_DFLASH_MAX_BLOCK;
    if (m->step_ids && m->step_ids->n >= need) return true;
    if (m->step_ids) OPS->buf_free(m->be, m->step_ids);
    m->step_ids = OPS->alloc(m->be, HYOCR_BUF_F32, MAX(need, (size_t)STEP_IDS_MIN), error);
    return m->step_ids != NULL;
}

void hyocr_model_pick_slot_free(hyocr_model *m, int slot)
{
    if (slot >= 0 && slot < m->pick_n_slots) m->pick_used[slot] = 0;
}

/* ---- captured decode steps ------------------------------------------------------- */

typedef struct {
    int      rows, max_blocks;
    uint64_t sig;     /* what else the captured work depends on (the caller's key) */
    void    *graph;   /* NULL: this shape ran once uncaptured (that sizes every scratch) */
} decode_graph;

#define DECODE_GRAPHS_MAX 16

static void decode_graph_free(hyocr_model *m, decode_graph *g)
{
    if (g->graph) OPS->graph_free(m->be, g->graph);
    g_free(g);
}

static decode_graph *decode_graph_find(hyocr_model *m, int rows, int max_blocks, uint64_t sig, bool *fresh)
{
    if (!m->decode_graphs) m->decode_graphs = g_ptr_array_new();
    for (guint i = 0; i < m->decode_graphs->len; i++) {
        decode_graph *g = m->decode_graphs->pdata[i];
        if (g->rows == rows && g->max_blocks == max_blocks && g->sig == sig) {
            *fresh = false;
            return g;
        }
    }
    if (m->decode_graphs->len >= DECODE_GRAPHS_MAX)
        decode_graph_free(m, g_ptr_array_steal_index(m->decode_graphs, 0));
    decode_graph *g = g_new0(decode_graph, 1);
    *g = (decode_graph){ rows, max_blocks, sig, NULL };
    g_ptr_array_add(m->decode_graphs, g);
    *fresh = true;
    return g;
}

/* Captures the step; false (nothing run, no error) when the capture did not work out. */
static bool decode_capture(hyocr_model *m, decode_graph *g, hyocr_decode_work_fn work, void *data)
{
    g_autoptr(GError) cap_err = NULL;
    if (!OPS->graph_begin(m->be, &cap_err)) return false;
    bool ok = work(data, true, &cap_err);
    void *graph = OPS->graph_end(m->be, ok ? &cap_err : NULL);
    if (!ok || !graph) {
        if (graph) OPS->graph_free(m->be, graph);
        g_debug("decode graph capture failed (%s); running uncaptured", cap_err ? cap_err->message : "?");
        return false;
    }
    g->graph = graph;
    return true;
}

/* The bound, graph-replayed step. The first step of a shape runs uncaptured
 * (sizing the backend's scratch), the second captures, later ones replay. */
bool hyocr_decode_graphs_run(hyocr_model *m, hyocr_decode_meta *dm, uint64_t sig, hyocr_decode_work_fn work,
                             void *data, GError **error)
{
    int n = dm->n_rows, bs = m->kv_block_size, ctx = 0;
    for (int r = 0; r < n; r++) ctx = MAX(ctx, dm->views[r].n_past + 1);
    int bound = (ctx + HYOCR_DECODE_CTX_STEP - 1) / HYOCR_DECODE_CTX_STEP * HYOCR_DECODE_CTX_STEP;
    int max_blocks = (bound + bs - 1) / bs;
    dm->block_size = bs;
    dm->max_blocks = max_blocks;
    if (!OPS->decode_bind(m->be, dm, error)) return false;
    bool fresh, ok = true, done = false;
    decode_graph *g = decode_graph_find(m, n, max_blocks, sig, &fresh);
    if (g->graph) {
        bool stale = false;
        ok = OPS->graph_launch(m->be, g->graph, &stale, error);
        done = ok && !stale;
        if (stale) {
            OPS->graph_free(m->be, g->graph);
            g->graph = NULL;
        }
    } else if (!fresh && decode_capture(m, g, work, data)) {
        bool stale = false;
        ok = OPS->graph_launch(m->be, g->graph, &stale, error);
        done = ok && !stale;
    }
    if (ok && !done) ok = work(data, false, error);
    OPS->decode_unbind(m->be);
    return ok;
}

bool hyocr_decode_graphs_wanted(const hyocr_model *m)
{
    return OPS->decode_bind && OPS->graph_begin && !m->be->tuning.no_graph;
}

void hyocr_text_decode_release(hyocr_model *m)
{
    if (m->decode_graphs) {
        for (guint i = 0; i < m->decode_graphs->len; i++) decode_graph_free(m, m->decode_graphs->pdata[i]);
        g_ptr_array_free(m->decode_graphs, TRUE);
        m->decode_graphs = NULL;
    }
    if (m->pick_seen) OPS->buf_free(m->be, m->pick_seen);
    m->pick_seen = NULL;
    if (m->step_ids) OPS->buf_free(m->be, m->step_ids);
    m->step_ids = NULL;
    g_free(m->pick_used);
    m->pick_used = NULL;
    m->pick_n_slots = 0;
}
