/* hyocr — the decode attention of a graph-replayed step (issues 15 and 17): k_decode (the
 * before) against k_decode_staged with 2, 3 and 4 stages and k_decode_mma (2 stages on the
 * tensor cores, "mma2"; attention-decode.cu), on the text
 * model's shapes (16 q heads, 8 KV heads, head dim 128, KV blocks of 16 tokens scattered over
 * the cache) for 1, 4 and 16 rows at contexts of 1087 (a 1024² page) and 4191 (a 2048² page)
 * tokens. As the engine's bound steps run it: splits derived on the device (dev_split_len)
 * from the context bound (the context rounded up to 1024, decode.c) with the split length the
 * engine picks (hk_decode_split_len) and, as a sweep, 128/256/512; the new k/v stored by the
 * kernel (kv_write). A call is one layer: 24 calls, each over its own layer's cache (so the
 * L2 holds no layer's keys for the next, as in a step), captured in one graph; µs a call is the
 * graph's time / 24, median of 20 replays after 3; GB/s counts the K and V bytes the rows
 * read (rows · ctx · 8 heads · 128 · 2 · 2 bytes). diff: max |staged − k_decode| over the
 * outputs and how many differ in any bit (0 expected of the staged kernels: the same splits,
 * rounds and sums; mma2 sums in another order and rounds P); the
 * exit status is 1 when one exceeds 2 output ulps of the largest |k_decode| value or is not
 * finite. Build and run (GPU machine, repository root):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/decode_bench.cu -o /tmp/decode-bench && /tmp/decode-bench
 * An argument "bf16" runs bf16 instead; the A100 code: -gencode=arch=compute_80,code=sm_80.
 * HK_BENCH_ROWS, HK_BENCH_CTX, HK_BENCH_SPLITS and HK_BENCH_STAGES (comma-separated) replace
 * the sweep's lists, e.g. HK_BENCH_ROWS=8,16 HK_BENCH_SPLITS=0,384,512 HK_BENCH_STAGES=2;
 * Splits may be up to 2048 keys (a row's whole context in one CTA: no partials, no merge), and
 * the tensor-core rows run at every depth asked for (mma3, mma4; the engine takes mma2, and
 * mma4 where a row's keys fit one CTA);
 * HK_BENCH_PDL=1 launches each call as a programmatic dependent of the one before, as the
 * engine does (its first rounds' copies then start under the call before). Built with
 * -DHK_DECODE_BENCH_DEEP, HK_BENCH_STAGES may ask for mma5 and mma6 too.
 * HK_BENCH_ORDERED=1 gives each row its blocks in order instead of scattered (the same µs on the
 * H200: session 32, which also timed a split's head CTAs side by side and a block's heads one after
 * the other in the cache, both no faster; their switches are at 1474db1's attention-decode.cu). */
#include "../kernels/attention-decode.cu"
#include "bench-timing.h"
#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

enum { HQ = 16, HKV = 8, D = 128, BS = 16, LAYERS = 24, REPS = 20, MAX_ROWS = 16, MAX_CTX = 4191 };

template <typename T> static __global__ void k_fill(T *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = T((float)(h & 0xffff) / 65535.0f * 4.0f - 2.0f);
    }
}

/* The layers' caches (each its own K and V), the rows' q|k|v, the block tables. */
struct fixture {
    void *k[LAYERS], *v[LAYERS], *qkv, *out;
    int32_t *bt;
    hk_seq *seqs;
    unsigned *ctr;
    float *part;
    size_t blocks;   /* per layer */
};

template <typename T> static void fixture_init(fixture &f)
{
    /* every row's blocks for the longest context, scattered: a shuffled pool with a spare quarter */
    int per_row = (MAX_CTX + 1 + BS - 1) / BS;
    f.blocks = (size_t)MAX_ROWS * per_row * 5 / 4;
    size_t n = f.blocks * BS * HKV * D;
    for (int l = 0; l < LAYERS; l++) {
        CK(cudaMalloc(&f.k[l], n * sizeof(T)));
        CK(cudaMalloc(&f.v[l], n * sizeof(T)));
        k_fill<T><<<1024, 256>>>((T *)f.k[l], n, 0x1000u + l);
        k_fill<T><<<1024, 256>>>((T *)f.v[l], n, 0x2000u + l);
    }
    size_t nq = (size_t)MAX_ROWS * (HQ + 2 * HKV) * D;
    CK(cudaMalloc(&f.qkv, nq * sizeof(T)));
    k_fill<T><<<256, 256>>>((T *)f.qkv, nq, 0x3000u);
    CK(cudaMalloc(&f.out, (size_t)MAX_ROWS * HQ * D * sizeof(T)));
    std::vector<int32_t> pool(f.blocks);
    for (size_t i = 0; i < f.blocks; i++) pool[i] = (int32_t)i;
    srand(7);
    if (!getenv("HK_BENCH_ORDERED"))   /* set: each row's blocks in order, as a page's prompt gets them from the KV pool (kvcache.c) */
        for (size_t i = f.blocks - 1; i > 0; i--) std::swap(pool[i], pool[(size_t)rand() % (i + 1)]);
    CK(cudaMalloc(&f.bt, f.blocks * sizeof(int32_t)));
    CK(cudaMemcpy(f.bt, pool.data(), f.blocks * sizeof(int32_t), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&f.seqs, MAX_ROWS * sizeof(hk_seq)));
    CK(cudaMalloc(&f.ctr, MAX_ROWS * HQ * sizeof(unsigned)));
    CK(cudaMemset(f.ctr, 0, MAX_ROWS * HQ * sizeof(unsigned)));
    /* the most partials: 16 rows of a 5120-token bound in 64-key splits */
    size_t parts = (size_t)MAX_ROWS * (5120 / 64);
    CK(cudaMalloc(&f.part, parts * HQ * (D + 2) * sizeof(float)));
    CK(cudaDeviceSynchronize());
}

/* rows sequences of ctx tokens each (n_past = ctx − 1, one new row), table r at r·per_row. */
static void fixture_rows(fixture &f, int rows, int ctx)
{
    int per_row = (MAX_CTX + 1 + BS - 1) / BS;
    std::vector<hk_seq> s(rows);
    for (int r = 0; r < rows; r++) s[r] = { r, ctx - 1, 1, r * per_row };
    CK(cudaMemcpy(f.seqs, s.data(), rows * sizeof(hk_seq), cudaMemcpyHostToDevice));
}

static hk_paged_args call_args(const fixture &f, hk_dtype t, int rows, int ctx, int split_len, int stages, int mma, int layer)
{
    int bound = (ctx + 1023) / 1024 * 1024, max_splits = (bound + split_len - 1) / split_len;
    int parts = rows * max_splits;
    hk_paged_args a = {};
    a.t = t;
    a.qkv = f.qkv;
    a.out = f.out;
    a.k_cache = f.k[layer];
    a.v_cache = f.v[layer];
    a.block_size = BS;
    a.Hq = HQ;
    a.Hkv = HKV;
    a.D = D;
    a.scale = 1.0f / sqrtf((float)D);
    a.seqs = f.seqs;
    a.n_seqs = rows;
    a.block_tables = f.bt;
    a.total_rows = rows;
    a.n_dec_rows = rows;
    a.counters = f.ctr;
    a.part_acc = f.part;
    a.part_ml = f.part + (size_t)parts * HQ * D;
    a.split_max = split_len;
    a.n_splits = parts;
    a.dev_split_len = split_len;
    a.dev_max_splits = max_splits;
    a.decode_kv_write = 1;
    a.decode_stages = stages;
    a.decode_mma = mma;
    a.pdl = getenv("HK_BENCH_PDL") != NULL;   /* set: each call a programmatic dependent of the one before, as the engine launches them */
    return a;
}

/* µs a call: the 24 layers' calls in one graph, median of REPS replays. */
static double time_us(const fixture &f, hk_dtype t, int rows, int ctx, int split_len, int stages, int mma)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int l = 0; l < LAYERS; l++) {   /* uncaptured first: the shared-memory attributes, errors */
        hk_paged_args a = call_args(f, t, rows, ctx, split_len, stages, mma, l);
        CK(hk_attention_decode(s, &a));
    }
    CK(cudaStreamSynchronize(s));
    double ms = bench_graph_median_ms(s, REPS, [&] {
        for (int l = 0; l < LAYERS; l++) {
            hk_paged_args a = call_args(f, t, rows, ctx, split_len, stages, mma, l);
            CK(hk_attention_decode(s, &a));
        }
    });
    CK(cudaStreamDestroy(s));
    return ms * 1e3 / LAYERS;
}

static float to_f(__half h) { return __half2float(h); }
static float to_f(__nv_bfloat16 h) { return __bfloat162float(h); }

/* layer 0's output of one kernel */
template <typename T>
static std::vector<T> output(const fixture &f, hk_dtype t, int rows, int ctx, int split_len, int stages, int mma)
{
    size_t no = (size_t)rows * HQ * D;
    CK(cudaMemset(f.out, 0xff, no * sizeof(T)));
    hk_paged_args a = call_args(f, t, rows, ctx, split_len, stages, mma, 0);
    CK(hk_attention_decode(NULL, &a));
    CK(cudaDeviceSynchronize());
    std::vector<T> h(no);
    CK(cudaMemcpy(h.data(), f.out, no * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

/* A comma-separated list from the environment (the sweep's rows, contexts, split lengths —
 * 0 the engine's pick — and stages, 0 k_decode), else the default; values past max dropped. */
static std::vector<int> env_list(const char *name, std::vector<int> dflt, int max)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    std::vector<int> out;
    for (char *end; *v; v = *end ? end + 1 : end) {
        long x = strtol(v, &end, 10);
        if (end == v) break;
        if (x >= 0 && x <= max) out.push_back((int)x);
    }
    return out.empty() ? dflt : out;
}

template <typename T> static int run(hk_dtype t, float ulp)
{
    int dev = 0, sm = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev));
    fixture f;
    fixture_init<T>(f);
    int bad = 0;
    std::vector<int> rows_list = env_list("HK_BENCH_ROWS", { 1, 4, 16 }, MAX_ROWS),
                     ctx_list = env_list("HK_BENCH_CTX", { 1087, 4191 }, MAX_CTX),
                     sweep = env_list("HK_BENCH_SPLITS", { 0, 128, 256, 512 }, 2 * HK_SPLIT_MAX),
                     stages = env_list("HK_BENCH_STAGES", { 0, 2, 3, 4 }, HK_DECODE_STAGES_MAX + 2);
    printf("%-5s %4s %5s %5s  %-9s %9s %8s %12s %6s\n", "rows", "", "ctx", "split", "kernel", "us/call", "GB/s",
           "max|d|", "bits");
    for (int rows : rows_list)
        for (int ctx : ctx_list) {
            fixture_rows(f, rows, ctx);
            int bound = (ctx + 1023) / 1024 * 1024;
            for (int sw : sweep) {
                int len = sw ? sw : hk_decode_split_len(sm, (int64_t)bound * rows, rows, HQ, HKV);
                if (sw && sw == hk_decode_split_len(sm, (int64_t)bound * rows, rows, HQ, HKV)) continue;
                double bytes = (double)rows * ctx * HKV * D * 2 * sizeof(T);
                std::vector<T> ref = output<T>(f, t, rows, ctx, len, 0, 0);
                float top = 0.0f;
                for (T x : ref) top = fmaxf(top, fabsf(to_f(x)));
                for (int v = 0; v < 2 * (int)stages.size(); v++) {   /* each depth, then on the tensor cores */
                    int st = stages[v / 2], mma = v % 2;
                    if ((mma && st < 2) || (!mma && st > HK_DECODE_STAGES_MAX)) continue;
#ifndef HK_DECODE_BENCH_DEEP
                    if (st > HK_DECODE_STAGES_MAX) continue;
#endif
                    double us = time_us(f, t, rows, ctx, len, st, mma);
                    double mx = 0.0;
                    size_t nbits = 0;
                    bool finite = true;
                    if (st) {
                        std::vector<T> got = output<T>(f, t, rows, ctx, len, st, mma);
                        for (size_t i = 0; i < got.size(); i++) {
                            float g = to_f(got[i]), r = to_f(ref[i]);
                            finite &= isfinite(g) && isfinite(r);
                            mx = fmax(mx, fabs((double)g - r));
                            nbits += memcmp(&got[i], &ref[i], sizeof(T)) != 0;
                        }
                    }
                    bool ok = finite && mx <= 2.0 * ulp * top;
                    bad |= !ok;
                    char name[16];
                    snprintf(name, sizeof name, mma ? "mma%d" : st ? "staged%d" : "k_decode", st);
                    printf("%-5d rows %5d %5d%s %-9s %9.2f %8.0f %12.3g %6zu%s\n", rows, ctx, len, sw ? "*" : " ", name,
                           us, bytes / us * 1e-3, mx, nbits, ok ? "" : "  MISMATCH");
                }
            }
        }
    printf("(* a split length of the sweep, not the engine's pick)\n");
    return bad;
}

int main(int argc, char **argv)
{
    bool bf16 = argc > 1 && strcmp(argv[1], "bf16") == 0;
    int bad = bf16 ? run<__nv_bfloat16>(HK_BF16, 1.0f / 128) : run<__half>(HK_F16, 1.0f / 1024);
    if (bad) fprintf(stderr, "decode_bench: staged outputs differ from k_decode's\n");
    return bad ? 1 : 0;
}
