/* hyocr — would the decode attention run faster with part of its layer's cache already in the
 * L2 (issues 15 and 17)? A decode step's layers as the engine runs them — q|k|v (NORM), the
 * paged decode attention (the engine's kernel, split length and stages, the new k/v stored by
 * it, programmatic dependent launch), o (RESIDUAL), gate|up (NORM_GLU), down (RESIDUAL) — 24
 * layers, each with its own weights and its own cache (decode_bench.cu's fixture: KV blocks of
 * 16 scattered over the pool), in one graph; µs a layer is the graph's time / 24, median of 20
 * replays after 3. Variants: no prefetch; each attention call asking the L2 for the next
 * layer's blocks of its splits' first pf_tokens keys (hk_paged_args.pf_k: a bulk prefetch,
 * evict-last), pf_tokens sized for a budget of MB over the rows; "hot": every layer's attention
 * reads layer 0's cache (what it costs from the L2 where the cache fits). Each with the L2's
 * persisting set-aside at 0 and at its largest (cudaLimitPersistingL2CacheSize: whether
 * evict-last needs it). One-row steps use 2-row products (the engine's one-row GEMV differs;
 * the window the prefetch has is about the same). The outputs of layer 0 with and without the
 * prefetch are compared bit for bit (a prefetch changes no value). Build and run (GPU machine,
 * repository root):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/kv_prefetch_bench.cu -o /tmp/kvpf && /tmp/kvpf */
#define main decode_bench_main   /* decode_bench.cu's fixture, not its table */
#include "decode_bench.cu"
#undef main
#include "../kernels/gemv.cu"
#include "bench-fill.h"

enum { HID = 1024, QO = HQ * D, INTER = 3584 };

struct layer_w {
    __half *qkv, *o, *gu, *d;
};

struct step_bufs {
    float *res;
    __half *nw, *act;
};

/* One layer: the products around the engine's attention call a (its cache and prefetch set). */
static void layer(cudaStream_t s, const fixture &f, const layer_w &w, const step_bufs &b, hk_paged_args a, int M)
{
    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_NORM, f.qkv, HK_F16, NULL, b.res, b.nw, HK_F16, 1e-6f, w.qkv, M,
                    (HQ + 2 * HKV) * D, HID, 1));
    CK(hk_attention_decode(s, &a));
    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_RESIDUAL, NULL, HK_F16, f.out, b.res, NULL, HK_F16, 0.0f, w.o, M, HID, QO, 1));
    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_NORM_GLU, b.act, HK_F16, NULL, b.res, b.nw, HK_F16, 1e-6f, w.gu, M, INTER, HID, 1));
    CK(hk_gemm_rows(s, HK_F16, HK_GEMV_RESIDUAL, NULL, HK_F16, b.act, b.res, NULL, HK_F16, 0.0f, w.d, M, HID, INTER, 1));
}

enum { PF_OFF = -1, PF_HOT = -2 };

/* The attention call of layer l for the variant: pf_mb ≥ 0 the prefetch budget (0: all of
 * the next layer's keys), PF_OFF none, PF_HOT layer 0's cache everywhere. */
static hk_paged_args attn_args(const fixture &f, int rows, int ctx, int len, int stages, int l, int pf_mb)
{
    hk_paged_args a = call_args(f, HK_F16, rows, ctx, len, stages, pf_mb == PF_HOT ? 0 : l);
    a.pdl = 1;
    if (pf_mb >= 0 && l + 1 < LAYERS) {
        a.pf_k = f.k[l + 1];
        a.pf_v = f.v[l + 1];
        int per_row = (ctx + len - 1) / len;   /* splits a row */
        long tokens = pf_mb ? ((long)pf_mb << 20) / ((long)rows * HKV * D * 2 * 2) / per_row : len;
        a.pf_tokens = (int)std::min<long>(len, tokens / BS * BS);
    }
    return a;
}

int main()
{
    int dev = 0, sm = 0, l2 = 0, persist_max = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    CK(cudaDeviceGetAttribute(&persist_max, cudaDevAttrMaxPersistingL2CacheSize, dev));
    fixture f;
    fixture_init<__half>(f);
    std::vector<layer_w> w(LAYERS);
    auto fill = [](__half **p, size_t n, uint32_t seed, float scale) {
        CK(cudaMalloc(p, n * 2));
        k_fill_h<<<1024, 256>>>(*p, n, seed, scale);
    };
    for (int l = 0; l < LAYERS; l++) {
        fill(&w[l].qkv, (size_t)(HQ + 2 * HKV) * D * HID, 0x100u + l, 0.05f);
        fill(&w[l].o, (size_t)HID * QO, 0x200u + l, 0.05f);
        fill(&w[l].gu, (size_t)2 * INTER * HID, 0x300u + l, 0.05f);
        fill(&w[l].d, (size_t)HID * INTER, 0x400u + l, 0.05f);
    }
    step_bufs b;
    CK(cudaMalloc(&b.res, (size_t)MAX_ROWS * HID * 4));
    k_fill_f<<<64, 256>>>(b.res, (size_t)MAX_ROWS * HID, 7);
    fill(&b.nw, HID, 9, 1.0f);
    fill(&b.act, (size_t)MAX_ROWS * INTER, 13, 0.05f);
    CK(cudaDeviceSynchronize());
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("# %d SMs, L2 %d MiB (persisting set-aside up to %d MiB)\n", sm, l2 >> 20, persist_max >> 20);
    printf("%-8s %4s %5s %5s %6s %10s %9s %6s %s\n", "setaside", "rows", "ctx", "split", "pf", "pf_tokens", "us/layer",
           "x off", "layer 0 out");
    struct { int rows, ctx; } cases[] = { { 1, 4191 }, { 1, 1087 }, { 4, 1087 }, { 16, 1215 }, { 16, 1087 } };
    const int budgets[] = { PF_OFF, 0, 8, 16, 24, 32, PF_HOT };
    int bad = 0;
    for (int persist = 0; persist < 2; persist++) {
        CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, persist ? (size_t)persist_max : 0));
        for (auto &c : cases) {
            fixture_rows(f, c.rows, c.ctx);
            const int bound = (c.ctx + 1023) / 1024 * 1024, stages = c.rows >= 8 ? 2 : 0;
            int len = hk_decode_split_len(sm, (int64_t)bound * c.rows, c.rows, HQ, HKV);
            if (stages) {
                int per = hk_decode_ctas_per_sm(HQ, HKV, stages, HK_SPLIT_WAVE_MAX, BS);
                int wave = hk_decode_split_len_wave(sm, per, bound - 512, c.rows, HQ, HKV);
                if (wave > 0) len = wave;
            }
            const int M = c.rows < 2 ? 2 : c.rows;
            double off_us = 0;
            std::vector<__half> ref;
            for (int pf : budgets) {
                auto step = [&] {
                    for (int l = 0; l < LAYERS; l++) layer(s, f, w[l], b, attn_args(f, c.rows, c.ctx, len, stages, l, pf), M);
                };
                step();   /* uncaptured first: attributes, errors */
                CK(cudaStreamSynchronize(s));
                const double us = bench_graph_median_ms(s, REPS, step) * 1e3 / LAYERS;
                /* layer 0's attention alone, on the fixture's q|k|v again (the products wrote theirs):
                 * the prefetch must change no bit */
                k_fill<__half><<<256, 256, 0, s>>>((__half *)f.qkv, (size_t)MAX_ROWS * (HQ + 2 * HKV) * D, 0x3000u);
                hk_paged_args a0 = attn_args(f, c.rows, c.ctx, len, stages, 0, pf == PF_HOT ? PF_OFF : pf);
                a0.pdl = 0;
                a0.decode_kv_write = 0;
                CK(cudaMemsetAsync(f.out, 0xff, (size_t)c.rows * QO * 2, s));
                CK(hk_attention_decode(s, &a0));
                CK(cudaStreamSynchronize(s));
                std::vector<__half> got((size_t)c.rows * QO);
                CK(cudaMemcpy(got.data(), f.out, got.size() * 2, cudaMemcpyDeviceToHost));
                const char *cmp = "reference";
                if (pf == PF_OFF) ref = got, off_us = us;
                else cmp = memcmp(got.data(), ref.data(), got.size() * 2) ? (bad = 1, "DIFFERS") : "same bits";
                char name[16];
                snprintf(name, sizeof name, pf == PF_OFF ? "off" : pf == PF_HOT ? "hot" : pf ? "%d MB" : "all", pf);
                printf("%-8s %4d %5d %5d %6s %10d %9.2f %6.3f %s\n", persist ? "max" : "0", c.rows, c.ctx, len, name,
                       attn_args(f, c.rows, c.ctx, len, stages, 0, pf).pf_tokens, us, off_us / us, cmp);
                fflush(stdout);
            }
        }
    }
    CK(cudaGetLastError());
    if (bad) fprintf(stderr, "kv_prefetch_bench: a prefetch changed the attention's output\n");
    return bad;
}
