/* hyocr — vision attention microbenchmark: the head_dim-72 kernels (mma.sync
 * variants, and on Hopper the wgmma ones) against the shared 64-row template, on
 * the same random qkv. Prints max |Δ| and times; exits 1 when a variant is over
 * its tolerance. Build and run (GPU machine):
 * nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Ikernels bench/flash_bench.cu -o /tmp/flash-bench
 * /tmp/flash-bench
 * The wg… rows take k_vis_wg's launched softmax (the lazy rescale). With -DFB_VIS_LAZY: only
 * the launched shape and the overlapped one, each lazy and with O rescaled every tile (…E;
 * bench/vis-lazy.sh). (The wg2x128s… rows, the two-row-block kernel, went with it in session 20:
 * docs/PERFORMANCE.md.) */
#include "../kernels/attention-prefill.cu"
#include "../kernels/attention-vision.cu"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

template <typename T> static __global__ void k_fill(T *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = T((float)(h & 0xffff) / 65535.0f * 4.0f - 2.0f);
    }
}

template <typename T> static void run_old(cudaStream_t s, T *out, const T *qkv, int n, int H, float scale)
{
    FaArgs a = {};
    a.q = qkv; a.k = qkv + (size_t)H * 72; a.v = qkv + (size_t)2 * H * 72; a.out = out;
    a.q_stride = a.kv_stride = 3 * H * 72; a.out_stride = H * 72; a.n = n; a.G = 1; a.Hkv = H;
    a.scale_log2 = scale * LOG2E;
    dim3 grid((unsigned)((n + FA_BM - 1) / FA_BM), (unsigned)H);
    cudaError_t e = launch_flash<T, 72, 80, false>(s, a, grid);
    CK(e);
}

template <typename T, int W, int MW> static void run_new(cudaStream_t s, T *out, const T *qkv, int n, int H, float scale)
{
    constexpr int BM = 16 * W * MW;
    k_flash_vis<T, W, MW><<<dim3((unsigned)((n + BM - 1) / BM), (unsigned)H), 32 * W, 0, s>>>(qkv, out, n, H,
                                                                                            scale * LOG2E);
    CK(cudaGetLastError());
}

/* Mean of reps back-to-back launches: no host gap inside the timed span. */
template <typename F> static double time_ms(cudaStream_t s, F f, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    f(); f();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < reps; i++) f();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a); cudaEventDestroy(b);
    return ms / reps;
}

/* max |new − old| against 4 output ulps (of the largest |old|; the rel-L2 of new − old
 * printed beside it); nonfinite values fail. */
template <typename T> static bool diff(const char *what, const T *a, const T *b, size_t n, float ulp)
{
    std::vector<T> ha(n), hb(n);
    CK(cudaMemcpy(ha.data(), a, n * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b, n * sizeof(T), cudaMemcpyDeviceToHost));
    double mx = 0, sum = 0, big = 0, num = 0, den = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float x = (float)ha[i], y = (float)hb[i];
        if (!isfinite(x) || !isfinite(y)) { bad++; continue; }
        double d = fabs(x - y);
        mx = d > mx ? d : mx;
        sum += d;
        num += d * d;
        den += (double)x * x;
        big = fabs(x) > big ? fabs(x) : big;
    }
    double rl = sqrt(num / (den > 0 ? den : 1e-30));
    bool ok = bad == 0 && mx <= 4.0 * ulp * (big > 0 ? big : 1.0) ;
    printf("  %-8s max|d| %.3g  mean|d| %.3g  max|old| %.3g  rel-L2 %.3g  nonfinite %zu  %s\n", what, mx, sum / n,
           big, rl, bad, ok ? "PASS" : "FAIL");
    return ok;
}

/* FB_DUMP=DIR: each variant's output to DIR/TYPE-VARIANT-N.bin ('/' and ' ' in a name as
 * '_'), so that two builds of a kernel can be compared bit for bit (cmp). */
template <typename T> static void dump(const char *tn, const char *name, int n, const T *d, size_t count)
{
    const char *dir = getenv("FB_DUMP");
    if (!dir) return;
    std::vector<T> h(count);
    CK(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    char path[512];
    snprintf(path, sizeof path, "%s/%s-%s-%d.bin", dir, tn, name, n);
    for (char *c = path + MIN(strlen(dir) + 1, strlen(path)); *c; c++)
        if (*c == '/' || *c == ' ') *c = '_';
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(h.data(), sizeof(T), count, f) != count) { fprintf(stderr, "FB_DUMP: cannot write %s\n", path); exit(1); }
    fclose(f);
}

typedef void (*vis_fn)(cudaStream_t, void *, const void *, int, int, float);
template <typename T, int W, int MW> static void vis(cudaStream_t s, void *o, const void *q, int n, int H, float sc)
{
    run_new<T, W, MW>(s, (T *)o, (const T *)q, n, H, sc);
}
template <typename T, int NWG, int BN, int NS, int MINB, bool OVL, bool LAZY = true>
static void wg(cudaStream_t s, void *o, const void *q, int n, int H, float sc)
{
    cudaError_t e = vis_wg_launch<T, NWG, BN, NS, MINB, OVL, LAZY>(s, o, q, n, H, sc);
    CK(e);
}
template <typename T, int NC, int BN, int NS, int F>
static void tm(cudaStream_t s, void *o, const void *q, int n, int H, float sc)
{
    cudaError_t e = vis_tma_launch<T, NC, BN, NS, F, true>(s, o, q, n, H, sc);
    CK(e);
}
/* W, MW: the mma.sync kernel's warps and row blocks; or (wgmma) NWG warpgroups, BN keys, NS
 * stages, MINB CTAs an SM, o: softmax under P·V. (The warp-specialised ws… rows went with
 * k_vis_ws: docs/PERFORMANCE.md.) */
struct variant { const char *name; int a, b, c; vis_fn f16, bf16; bool ok; double us[2]; };
#define WG(NWG, BN, NS, MINB, OVL) { "wg" #NWG "x" #BN "s" #NS "/" #MINB #OVL, NWG, BN, MINB, \
                                     wg<__half, NWG, BN, NS, MINB, OVL>, wg<__nv_bfloat16, NWG, BN, NS, MINB, OVL>, \
                                     true, { 0, 0 } }
/* k_vis_wg with O, l and the row max rescaled at every tile (HYOCR_VIS_LAZY_RESCALE=0) */
#define WGE(NWG, BN, NS, MINB, OVL) { "wg" #NWG "x" #BN "s" #NS "/" #MINB #OVL "E", NWG, BN, MINB, \
                                      wg<__half, NWG, BN, NS, MINB, OVL, false>, \
                                      wg<__nv_bfloat16, NWG, BN, NS, MINB, OVL, false>, true, { 0, 0 } }
/* k_vis_tma: NC consumer warpgroups, BN keys, NS stages, F its switches (TM_OVL 1, TM_QS 2,
 * TM_NOPP 4) */
#define TM(NC, BN, NS, F) { "tm" #NC "x" #BN "s" #NS "f" #F, NC, BN, 1, \
                            tm<__half, NC, BN, NS, F>, tm<__nv_bfloat16, NC, BN, NS, F>, true, { 0, 0 } }
#define o true
#define s false
static variant V[] = {
    { "W4 MW2", 4, 2, 0, vis<__half, 4, 2>, vis<__nv_bfloat16, 4, 2>, true, { 0, 0 } },
#if defined(FB_VIS_TMA)
    WG(4, 64, 2, 1, s), TM(4, 64, 2, 2), TM(4, 64, 2, 6), TM(4, 64, 3, 6), TM(4, 64, 4, 6), TM(3, 64, 4, 2),
    TM(3, 64, 2, 2), TM(3, 64, 2, 6),
#elif !defined(FB_VIS_LAZY)
    WG(2, 64, 3, 2, s), WG(4, 64, 3, 1, s), WG(4, 64, 4, 1, s), WG(4, 64, 2, 1, s), WG(4, 64, 3, 1, o),
    WG(4, 64, 4, 1, o), WG(3, 64, 3, 1, s), WG(3, 64, 4, 1, s), WG(3, 64, 3, 1, o),
#else
    /* the launched one (WG_NWG …) lazy and every tile; the overlapped schedule (softmax
     * under P·V, 3 stages) too, as a shorter softmax changes its balance: with 3
     * warpgroups, as 4 run out of registers for it (ptxas serialises their wgmma) */
    WG(4, 64, 2, 1, s), WGE(4, 64, 2, 1, s), WG(3, 64, 3, 1, o), WGE(3, 64, 3, 1, o),
#endif
};
#undef o
#undef s
#define NV (int)(sizeof V / sizeof V[0])

template <typename T> static void suite(const char *tn, int ti, cudaStream_t s)
{
    const int H = 16;
    const float scale = 1.0f / sqrtf(72.0f), ulp = ti ? 1.0f / 128 : 1.0f / 1024;
    for (int n : { 1, 64, 65, 100, 129, 193, 1000, 4096, 4200, 16384 }) {
        size_t nq = (size_t)n * 3 * H * 72, no = (size_t)n * H * 72;
        T *qkv, *o0, *o1;
        CK(cudaMalloc(&qkv, nq * sizeof(T)));
        CK(cudaMalloc(&o0, no * sizeof(T)));
        CK(cudaMalloc(&o1, no * sizeof(T)));
        k_fill<T><<<1024, 256, 0, s>>>(qkv, nq, 1234u + n);
        run_old<T>(s, o0, qkv, n, H, scale);
        printf("%s n=%d H=%d D=72\n", tn, n, H);
        int reps = n > 8192 ? 20 : 50;
        double tf = 4.0 * n * (double)n * H * 72 * 1e-9;
        if (n >= 4096) {
            double t = time_ms(s, [&] { run_old<T>(s, o0, qkv, n, H, scale); }, reps);
            printf("  old      %9.1f us  %5.0f TFLOP/s\n", t * 1e3, tf / t);
        }
        for (int v = 0; v < NV; v++) {
            if (!V[v].ok && V[v].c) continue;
            vis_fn f = ti ? V[v].bf16 : V[v].f16;
            CK(cudaMemsetAsync(o1, 0xff, no * sizeof(T), s));
            f(s, o1, qkv, n, H, scale);
            CK(cudaStreamSynchronize(s));
            V[v].ok &= diff<T>(V[v].name, o0, o1, no, ulp);
            dump<T>(tn, V[v].name, n, o1, no);
            if (n >= 4096) {
                double t = time_ms(s, [&] { f(s, o1, qkv, n, H, scale); }, reps);
                printf("  %-8s %9.1f us  %5.0f TFLOP/s\n", V[v].name, t * 1e3, tf / t);
                if (n == 16384) V[v].us[ti] = t * 1e3;
            }
        }
        cudaFree(qkv);
        cudaFree(o0);
        cudaFree(o1);
    }
}

int main(void)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device %s, %d SMs\n", p.name, p.multiProcessorCount);
    int wgmma = 0;
    CK(hk_vision_probe(s, &wgmma));
    printf("wgmma kernels: %s\n", wgmma ? "built" : "not built (the wg variants are skipped)");
    if (!wgmma)
        for (int v = 0; v < NV; v++) V[v].ok = V[v].c == 0;
    int bad = 0;
    suite<__half>("f16", 0, s);
    suite<__nv_bfloat16>("bf16", 1, s);
    int best = -1;
    for (int v = 0; v < NV; v++)
        if (!V[v].ok && !(V[v].c && !wgmma)) {
            printf("FAIL %s\n", V[v].name);
            bad++;
        }
    for (int v = 0; v < NV; v++)
        if (V[v].ok && (best < 0 || V[v].us[0] + V[v].us[1] < V[best].us[0] + V[best].us[1])) best = v;
    if (best < 0) printf("CHOICE none\n");
    else printf("CHOICE %s\n", V[best].name);
    return bad ? 1 : 0;
}
