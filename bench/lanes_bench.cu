/* hyocr — would a 16-row decode step run faster as two 8-row steps side by side (issues 15 and
 * 17)? The 16-row step waits on its chain of kernels (session 29: neither the weights nor the
 * keys hot in the L2 shorten it), and the rows of a step are independent until the head: two
 * lanes of 8 rows, each its own chain on its own stream, could fill each other's ramps and tails
 * (NanoFlow's intra-device overlap), at the price of reading each layer's weights twice (34.6 MB
 * a layer: the L2 may serve the second lane). A step's 24 layers as the engine runs them —
 * q|k|v (NORM), the paged decode attention (the engine's kernel, stages and one-wave split rule,
 * the new k/v stored by it, programmatic dependent launch), o (RESIDUAL), gate|up (NORM_GLU),
 * down (RESIDUAL); rope_qknorm left out as in kv_prefetch_bench (a programmatic dependent that
 * runs under its neighbours, session 26) — each layer its own weights and cache (decode_bench's
 * fixture), in one graph; µs a step is the graph's time, median of 20 replays after 3.
 *   one16      the step as the engine runs it: 16 rows, one stream
 *   one8       8 rows alone (what each lane costs by itself)
 *   two8/r16   two streams of 8 rows, each attention split as in a 16-row step (half the
 *              machine's wave each): the same splits, so the same bits as one16
 *   two8/r8    two streams, each split as an 8-row step (a whole wave each)
 * The residual rows after one step are compared with one16's (every lane's products are the
 * same per-row sums; two8/r16's attention the same splits): "same bits" or the largest
 * difference. Contexts: a 16-page burst's 1087 / 1215 / 1343. Build and run (GPU machine,
 * repository root):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/lanes_bench.cu -o /tmp/lanes && /tmp/lanes */
#define main decode_bench_main   /* decode_bench.cu's fixture, not its table */
#include "decode_bench.cu"
#undef main
#include "../kernels/gemv.cu"
#include "bench-fill.h"
#include <cmath>

enum { HID = 1024, QO = HQ * D, INTER = 3584, MAX_LANES = 4 };

struct layer_w {
    __half *qkv, *o, *gu, *d;
};

/* What one lane of rows owns: its rows of q|k|v, the attention's output, the residual and
 * the activation, its sequences (row0 counted from its own first row), counters and partials. */
struct lane {
    int rows, split_len, stages;
    __half *qkv, *out, *act;
    float *res, *part;
    hk_seq *seqs;
    unsigned *ctr;
};

static int sms;

static void product(cudaStream_t s, int mode, void *out, const void *x, float *res, const __half *nw, const __half *w,
                    int M, int N, int K)
{
    CK(hk_gemm_rows_ex(s, HK_F16, mode, out, HK_F16, x, res, nw, HK_F16, 1e-6f, w, M, N, K, 1,
                       hk_gemm_rows_groups(N, sms)));
}

static hk_paged_args lane_attn(const fixture &f, const lane &ln, int ctx, int l)
{
    hk_paged_args a = call_args(f, HK_F16, ln.rows, ctx, ln.split_len, ln.stages, l);
    a.qkv = ln.qkv;
    a.out = ln.out;
    a.seqs = ln.seqs;
    a.counters = ln.ctr;
    a.part_ml = ln.part + (a.part_ml - a.part_acc);   /* call_args's layout, in the lane's buffer */
    a.part_acc = ln.part;
    a.pdl = 1;
    return a;
}

static void lane_step(cudaStream_t s, const fixture &f, const std::vector<layer_w> &w, const __half *nw, const lane &ln,
                      int ctx)
{
    const int M = ln.rows;
    for (int l = 0; l < LAYERS; l++) {
        product(s, HK_GEMV_NORM, ln.qkv, NULL, ln.res, nw, w[l].qkv, M, (HQ + 2 * HKV) * D, HID);
        hk_paged_args a = lane_attn(f, ln, ctx, l);
        CK(hk_attention_decode(s, &a));
        product(s, HK_GEMV_RESIDUAL, NULL, ln.out, ln.res, NULL, w[l].o, M, HID, QO);
        product(s, HK_GEMV_NORM_GLU, ln.act, NULL, ln.res, nw, w[l].gu, M, INTER, HID);
        product(s, HK_GEMV_RESIDUAL, NULL, ln.act, ln.res, NULL, w[l].d, M, HID, INTER);
    }
}

/* The engine's split for a bound step of `rows` rows (backend-cuda.c, bound_split_len). */
static int split_for(int rows, int ctx, int stages)
{
    const int bound = (ctx + 1023) / 1024 * 1024;
    int len = hk_decode_split_len(sms, (int64_t)bound * rows, rows, HQ, HKV);
    if (stages) {
        int per = hk_decode_ctas_per_sm(HQ, HKV, stages, 0, HK_SPLIT_WAVE_MAX, BS);
        int wave = hk_decode_split_len_wave(sms, per, bound - 512, rows, HQ, HKV);
        if (wave > 0) len = wave;
    }
    return len;
}

int main()
{
    int dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    fixture f;
    fixture_init<__half>(f);
    std::vector<layer_w> w(LAYERS);
    auto fill = [](__half **p, size_t n, uint32_t seed, float scale) {
        CK(cudaMalloc(p, n * 2));
        k_fill_h<<<1024, 256>>>(*p, n, seed, scale);
    };
    for (int l = 0; l < LAYERS; l++) {
        fill(&w[l].qkv, (size_t)(HQ + 2 * HKV) * D * HID, 0x100u + l, 0.05f);
        fill(&w[l].o, (size_t)HID * QO, 0x200u + l, 0.02f);
        fill(&w[l].gu, (size_t)2 * INTER * HID, 0x300u + l, 0.05f);
        fill(&w[l].d, (size_t)HID * INTER, 0x400u + l, 0.02f);
    }
    __half *nw, *act;
    float *res, *res0;
    fill(&nw, HID, 9, 1.0f);
    fill(&act, (size_t)MAX_ROWS * INTER, 13, 0.05f);
    CK(cudaMalloc(&res, (size_t)MAX_ROWS * HID * 4));
    CK(cudaMalloc(&res0, (size_t)MAX_ROWS * HID * 4));
    k_fill_f<<<64, 256>>>(res0, (size_t)MAX_ROWS * HID, 7);
    /* lane i ≥ 1's own counters, partials and sequences (the fixture's serve lane 0) */
    unsigned *ctr[MAX_LANES];
    float *part[MAX_LANES];
    hk_seq *seqs[MAX_LANES];
    const size_t part_floats = (size_t)MAX_ROWS * (5120 / 64) * HQ * (D + 2);
    ctr[0] = f.ctr, part[0] = f.part, seqs[0] = f.seqs;
    for (int i = 1; i < MAX_LANES; i++) {
        CK(cudaMalloc(&ctr[i], MAX_ROWS * HQ * sizeof(unsigned)));
        CK(cudaMemset(ctr[i], 0, MAX_ROWS * HQ * sizeof(unsigned)));
        CK(cudaMalloc(&part[i], part_floats * sizeof(float)));
        CK(cudaMalloc(&seqs[i], MAX_ROWS * sizeof(hk_seq)));
    }
    CK(cudaDeviceSynchronize());
    cudaStream_t st[MAX_LANES];
    cudaEvent_t fork, join[MAX_LANES];
    for (int i = 0; i < MAX_LANES; i++) {
        CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming));
    }
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    printf("# %d SMs; µs a step of 24 layers (median of %d graph replays)\n", sms, REPS);
    printf("%-10s %5s %6s %10s %8s %s\n", "variant", "ctx", "split", "us/step", "x one16", "residual after a step");
    const int per_row = (MAX_CTX + 1 + BS - 1) / BS, stages = 2;
    int bad = 0;
    for (int ctx : { 1087, 1215, 1343 }) {
        /* the fixture's sequences are rows 0..15 (one lane of 16 rows, or lane 0); lane i ≥ 1 of
         * r rows has rows i·r.. counted from its own row 0 */
        fixture_rows(f, MAX_ROWS, ctx);
        const size_t qkv_w = (size_t)(HQ + 2 * HKV) * D;
        auto lane_at = [&](int rows, int i, int split) {
            const int first = i * rows;
            std::vector<hk_seq> h(rows);
            for (int r = 0; r < rows; r++) h[r] = { r, ctx - 1, 1, (first + r) * per_row };
            if (i) CK(cudaMemcpy(seqs[i], h.data(), rows * sizeof(hk_seq), cudaMemcpyHostToDevice));
            lane ln = { rows, split, rows >= 8 ? stages : 0, (__half *)f.qkv + first * qkv_w,
                        (__half *)f.out + first * QO, act + (size_t)first * INTER, res + (size_t)first * HID,
                        part[i], seqs[i], ctr[i] };
            return ln;
        };
        const int len16 = split_for(MAX_ROWS, ctx, stages), len8 = split_for(8, ctx, stages),
                  len4 = split_for(4, ctx, 0);
        std::vector<float> ref((size_t)MAX_ROWS * HID), got(ref.size());
        double us16 = 0;
        struct { const char *name; int lanes, rows, split; } vars[] = {
            { "one16", 1, 16, len16 }, { "one8", 1, 8, len8 }, { "two8/r16", 2, 8, len16 },
            { "two8/r8", 2, 8, len8 }, { "four4/r16", 4, 4, len16 }, { "four4/r4", 4, 4, len4 },
        };
        for (auto &v : vars) {
            std::vector<lane> ln;
            for (int i = 0; i < v.lanes; i++) ln.push_back(lane_at(v.rows, i, v.split));
            auto step = [&] {
                if (v.lanes == 1) return lane_step(st[0], f, w, nw, ln[0], ctx);
                CK(cudaEventRecord(fork, st[0]));
                for (int i = 1; i < v.lanes; i++) CK(cudaStreamWaitEvent(st[i], fork, 0));
                for (int i = 0; i < v.lanes; i++) lane_step(st[i], f, w, nw, ln[i], ctx);
                for (int i = 1; i < v.lanes; i++) {
                    CK(cudaEventRecord(join[i], st[i]));
                    CK(cudaStreamWaitEvent(st[0], join[i], 0));
                }
            };
            cudaStream_t s = st[0];
            /* one step uncaptured from the same residual: attributes, errors, and the rows to compare */
            CK(cudaMemcpyAsync(res, res0, (size_t)MAX_ROWS * HID * 4, cudaMemcpyDeviceToDevice, s));
            step();
            CK(cudaStreamSynchronize(s));
            CK(cudaMemcpy(got.data(), res, got.size() * 4, cudaMemcpyDeviceToHost));
            const double us = bench_graph_median_ms(s, REPS, step) * 1e3;
            char cmp[64] = "reference";
            const size_t n = (size_t)(v.lanes * v.rows) * HID;
            if (v.lanes == 1 && v.rows == MAX_ROWS) {
                ref = got, us16 = us;
            } else {
                double worst = 0;
                size_t nf = 0;
                for (size_t i = 0; i < n; i++) {
                    nf += !std::isfinite(got[i]);
                    worst = std::max(worst, (double)fabsf(got[i] - ref[i]));
                }
                if (nf) snprintf(cmp, sizeof cmp, "%zu not finite", nf), bad = 1;
                else if (!memcmp(got.data(), ref.data(), n * 4)) snprintf(cmp, sizeof cmp, "same bits");
                else snprintf(cmp, sizeof cmp, "max |d| %.3g", worst);
                if (v.lanes > 1 && v.split == len16 && v.rows >= 8 && strcmp(cmp, "same bits")) bad = 1;
            }
            printf("%-10s %5d %6d %10.1f %8.3f %s\n", v.name, ctx, v.split, us, us16 / us, cmp);
            fflush(stdout);
        }
    }
    CK(cudaGetLastError());
    if (bad) fprintf(stderr, "lanes_bench: two lanes with one16's splits changed the step's output\n");
    return bad;
}
