// s11 experiment (not committed): where a k_decode_staged CTA's time goes, from %globaltimer
// stamps (trace.patch): start, after the grid wait + q, after the rounds, after the finish/merge.
#define main decode_bench_main
#include "../bench/decode_bench.cu"
#undef main
static void pct(const char *name, std::vector<double> v)
{
    if (v.empty()) { printf("  %-22s (none)\n", name); return; }
    std::sort(v.begin(), v.end());
    auto q = [&](double p) { return v[(size_t)(p * (v.size() - 1))]; };
    printf("  %-22s n %4zu  min %6.2f  p25 %6.2f  p50 %6.2f  p75 %6.2f  p90 %6.2f  max %6.2f us\n", name, v.size(), q(0),
           q(0.25), q(0.5), q(0.75), q(0.9), q(1));
}
int main()
{
    fixture f;
    fixture_init<__half>(f);
    int sm = 0;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    const size_t N = 65536 * 5;
    std::vector<unsigned long long> z(N, 0ull), h(N);
    for (int rows : { 16, 4, 1 })
        for (int ctx : { 1087, 4191 }) {
            fixture_rows(f, rows, ctx);
            int bound = (ctx + 1023) / 1024 * 1024;
            int len = hk_decode_split_len(sm, (int64_t)bound * rows, rows, HQ, HKV);
            for (int st : { 2, 4 }) {
                CK(cudaMemcpyToSymbol(g_dec_trace, z.data(), N * sizeof(unsigned long long)));
                double us = time_us(f, HK_F16, rows, ctx, len, st);
                CK(cudaMemcpyFromSymbol(h.data(), g_dec_trace, N * sizeof(unsigned long long)));
                unsigned long long t0 = ~0ull, tend = 0;
                std::vector<double> start, wait, rounds, fin_last, fin_other, endv;
                int merged = 0, direct = 0;
                for (size_t i = 0; i < N / 5; i++) {
                    unsigned long long *r = &h[i * 5];
                    if (!r[0] || !r[3]) continue;
                    t0 = std::min(t0, r[0]);
                    tend = std::max(tend, r[3]);
                }
                std::vector<int> per_sm(256, 0);
                for (size_t i = 0; i < N / 5; i++) {
                    unsigned long long *r = &h[i * 5];
                    if (!r[0] || !r[3]) continue;
                    start.push_back((r[0] - t0) / 1e3);
                    wait.push_back((r[1] - r[0]) / 1e3);
                    rounds.push_back((r[2] - r[1]) / 1e3);
                    endv.push_back((r[3] - t0) / 1e3);
                    int flag = (int)(r[4] & 0xff);
                    per_sm[(r[4] >> 8) & 0xff]++;
                    if (flag == 1) { merged++; fin_last.push_back((r[3] - r[2]) / 1e3); }
                    else { if (flag == 2) direct++; fin_other.push_back((r[3] - r[2]) / 1e3); }
                }
                int smin = 1 << 30, smax = 0;
                for (int s = 0; s < sm; s++) { smin = std::min(smin, per_sm[s]); smax = std::max(smax, per_sm[s]); }
                printf("rows %d ctx %d split %d staged%d: %.2f us a call (graph median); last layer's launch: %zu active CTAs, "
                       "span %.2f us, CTAs an SM %d..%d, %d merging, %d single-split\n", rows, ctx, len, st, us,
                       start.size(), (tend - t0) / 1e3, smin, smax, merged, direct);
                pct("start", start);
                pct("grid wait + q", wait);
                pct("rounds", rounds);
                pct("finish (others)", fin_other);
                pct("finish (merging)", fin_last);
                pct("end", endv);
            }
        }
    return 0;
}
