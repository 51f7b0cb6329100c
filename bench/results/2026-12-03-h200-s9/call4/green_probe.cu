// s9: why the green context for the side lane is not made (diagnostic, not committed)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
__global__ void k(int *x) { if (threadIdx.x == 0) atomicAdd(x, 1); }
typedef CUresult (*fn_get_res)(CUdevice, CUdevResource *, CUdevResourceType);
typedef CUresult (*fn_split)(CUdevResource *, unsigned *, const CUdevResource *, CUdevResource *, unsigned, unsigned);
typedef CUresult (*fn_desc)(CUdevResourceDesc *, CUdevResource *, unsigned);
typedef CUresult (*fn_green)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned);
typedef CUresult (*fn_gstream)(CUstream *, CUgreenCtx, unsigned, int);
static void *get(const char *n, unsigned v) {
  void *f = NULL; cudaDriverEntryPointQueryResult q;
  cudaError_t e = cudaGetDriverEntryPointByVersion(n, &f, v, cudaEnableDefault, &q);
  printf("entry %s v%u: err %d q %d fn %p\n", n, v, (int)e, (int)q, f); return f;
}
int main() {
  cudaFree(0);
  int drv = 0; cudaDriverGetVersion(&drv); printf("driver %d, sizeof(CUdevResource) %zu\n", drv, sizeof(CUdevResource));
  for (unsigned v : {12040u, 12080u, 13000u}) {
    fn_get_res gr = (fn_get_res)get("cuDeviceGetDevResource", v);
    fn_split sp = (fn_split)get("cuDevSmResourceSplitByCount", v);
    fn_desc ds = (fn_desc)get("cuDevResourceGenerateDesc", v);
    fn_green gc = (fn_green)get("cuGreenCtxCreate", v);
    fn_gstream gs = (fn_gstream)get("cuGreenCtxStreamCreate", v);
    if (!gr || !sp || !ds || !gc || !gs) continue;
    CUdevResource all, part, rest; unsigned n = 1; CUdevResourceDesc d; CUgreenCtx g; CUstream s;
    CUresult r = gr(0, &all, CU_DEV_RESOURCE_TYPE_SM); printf("get_res %d sms %u\n", (int)r, all.sm.smCount);
    for (unsigned want : {100u, 96u, 64u}) {
      n = 1; r = sp(&part, &n, &all, &rest, 0, want); printf("split(%u) %d n %u part %u rest %u\n", want, (int)r, n, part.sm.smCount, rest.sm.smCount);
    }
    r = ds(&d, &part, 1); printf("desc %d\n", (int)r);
    r = gc(&g, d, 0, CU_GREEN_CTX_DEFAULT_STREAM); printf("green %d\n", (int)r);
    if (r) continue;
    r = gs(&s, g, CU_STREAM_NON_BLOCKING, 0); printf("gstream %d\n", (int)r);
    if (r) continue;
    void *p = NULL; cudaError_t e = cudaMallocAsync(&p, 256, (cudaStream_t)s); printf("mallocAsync %d %s\n", (int)e, cudaGetErrorString(e));
    int *x; cudaMalloc(&x, 4); cudaMemset(x, 0, 4);
    k<<<64, 32, 0, (cudaStream_t)s>>>(x); e = cudaGetLastError(); printf("launch %d %s\n", (int)e, cudaGetErrorString(e));
    e = cudaStreamSynchronize((cudaStream_t)s); printf("sync %d %s\n", (int)e, cudaGetErrorString(e));
    int h = 0; cudaMemcpy(&h, x, 4, cudaMemcpyDeviceToHost); printf("kernel wrote %d (want 64)\n", h);
    break;
  }
  return 0;
}
