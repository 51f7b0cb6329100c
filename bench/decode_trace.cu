/* hyocr — where the time of a decode attention call goes (issues 15 and 17): every CTA of
 * the last layer's launch on a time line, from the %globaltimer stamps attention-decode.cu
 * takes when built with HK_DECODE_TRACE (start, after q, after its rounds, at its end; its SM
 * and how it ended). decode_bench.cu's fixture and timing (one graph of 24 layers' calls, the
 * split length the engine picks); per case: the active CTAs, the span, CTAs an SM, and the
 * quantiles of the start, the wait for q, the rounds, the finish (the merging split's apart)
 * and the end. It found the merge at ~40 % of a one-row call (bench/results/2026-12-04-h200-s11,
 * call8). Build and run (GPU machine, repository root):
 *   nvcc -O3 -std=c++17 -DHK_DECODE_TRACE -gencode=arch=compute_90a,code=sm_90a -Ikernels \
 *       bench/decode_trace.cu -o /tmp/decode-trace && /tmp/decode-trace */
#define main decode_bench_main   /* the fixture and timing of decode_bench.cu, not its table */
#include "decode_bench.cu"
#undef main

static void pct(const char *name, std::vector<double> v)
{
    if (v.empty()) { printf("  %-22s (none)\n", name); return; }
    std::sort(v.begin(), v.end());
    auto q = [&](double p) { return v[(size_t)(p * (v.size() - 1))]; };
    printf("  %-22s n %4zu  min %6.2f  p25 %6.2f  p50 %6.2f  p75 %6.2f  p90 %6.2f  max %6.2f us\n", name, v.size(), q(0),
           q(0.25), q(0.5), q(0.75), q(0.9), q(1));
}
enum { TRACE_WORDS = 65536 * 5 };

/* One case's table from the stamps of the last launch (every CTA slot it ran wrote them). */
static void report(const std::vector<unsigned long long> &h, int sm, int rows, int ctx, int len, int st, double us)
{
    unsigned long long t0 = ~0ull, tend = 0;
    for (size_t i = 0; i < h.size() / 5; i++)
        if (h[i * 5] && h[i * 5 + 3]) {
            t0 = std::min(t0, h[i * 5]);
            tend = std::max(tend, h[i * 5 + 3]);
        }
    std::vector<double> start, wait, rounds, fin_last, fin_other, endv;
    std::vector<int> per_sm(256, 0);
    int merged = 0, direct = 0;
    for (size_t i = 0; i < h.size() / 5; i++) {
        const unsigned long long *r = &h[i * 5];
        if (!r[0] || !r[3]) continue;   /* a split past its row's context: exited at once */
        start.push_back((r[0] - t0) / 1e3);
        wait.push_back((r[1] - r[0]) / 1e3);
        rounds.push_back((r[2] - r[1]) / 1e3);
        endv.push_back((r[3] - t0) / 1e3);
        int how = (int)(r[4] & 0xff);
        per_sm[(r[4] >> 8) & 0xff]++;
        merged += how == 1;
        direct += how == 2;
        (how == 1 ? fin_last : fin_other).push_back((r[3] - r[2]) / 1e3);
    }
    int smin = 1 << 30, smax = 0;
    for (int s = 0; s < sm; s++) smin = std::min(smin, per_sm[s]), smax = std::max(smax, per_sm[s]);
    printf("rows %d ctx %d split %d stages %d: %.2f us a call (graph median); last layer's launch: %zu active CTAs, "
           "span %.2f us, %d..%d CTAs ran on an SM, %d merging, %d single-split\n", rows, ctx, len, st, us, start.size(),
           (tend - t0) / 1e3, smin, smax, merged, direct);
    pct("start", start);
    pct("to q read", wait);
    pct("rounds", rounds);
    pct("finish (others)", fin_other);
    pct("finish (merging)", fin_last);
    pct("end", endv);
}

int main()
{
    fixture f;
    fixture_init<__half>(f);
    int sm = 0;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    std::vector<unsigned long long> zero(TRACE_WORDS, 0ull), h(TRACE_WORDS);
    for (int rows : { 16, 4, 1 })
        for (int ctx : { 1087, 4191 }) {
            fixture_rows(f, rows, ctx);
            int bound = (ctx + 1023) / 1024 * 1024;
            int len = hk_decode_split_len(sm, (int64_t)bound * rows, rows, HQ, HKV);
            for (int st : { 0, 2, 4 }) {
                CK(cudaMemcpyToSymbol(g_dec_trace, zero.data(), TRACE_WORDS * sizeof(unsigned long long)));
                double us = time_us(f, HK_F16, rows, ctx, len, st);
                CK(cudaMemcpyFromSymbol(h.data(), g_dec_trace, TRACE_WORDS * sizeof(unsigned long long)));
                report(h, sm, rows, ctx, len, st, us);
            }
        }
    return 0;
}
