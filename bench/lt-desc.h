/* hyocr benchmarks — the engine's cuBLASLt description of a product (backend-cuda.c's plan_build):
 * D[N×M] = Aᵀ(K×N)·B(K×M) column-major, the row-major out[M,N] = x·wᵀ, fp16 inputs, fp32 compute
 * and a bias epilogue in D's type; shared by lt_algos and patch_gemm. */
#pragma once
#include <cublasLt.h>

struct lt_desc {
    cublasLtMatmulDesc_t   desc;
    cublasLtMatrixLayout_t la, lb, ld;
};

/* The first failing call's status, or CUBLAS_STATUS_SUCCESS. */
static cublasStatus_t lt_desc_make(lt_desc *d, int M, int N, int K, cudaDataType_t out, const void *bias)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    cublasStatus_t s;
    if ((s = cublasLtMatmulDescCreate(&d->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        (s = cublasLtMatmulDescSetAttribute(d->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
        (s = cublasLtMatmulDescSetAttribute(d->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) ||
        (s = cublasLtMatmulDescSetAttribute(d->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)) ||
        (s = cublasLtMatmulDescSetAttribute(d->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &out, sizeof out)) ||
        (s = cublasLtMatmulDescSetAttribute(d->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)) ||
        (s = cublasLtMatrixLayoutCreate(&d->la, CUDA_R_16F, K, N, K)) ||
        (s = cublasLtMatrixLayoutCreate(&d->lb, CUDA_R_16F, K, M, K)))
        return s;
    return cublasLtMatrixLayoutCreate(&d->ld, out, N, M, N);
}

static void lt_desc_free(lt_desc *d)
{
    cublasLtMatrixLayoutDestroy(d->la);
    cublasLtMatrixLayoutDestroy(d->lb);
    cublasLtMatrixLayoutDestroy(d->ld);
    cublasLtMatmulDescDestroy(d->desc);
}
