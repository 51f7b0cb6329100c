/* hyocr — an experiment for bench/flash_bench.cu (-DFB_VIS_WG2), not launched by the engine:
 * the Hopper vision attention with two 64-row blocks a warpgroup (k_vis_wg2).
 *
 * k_vis_wg runs four warpgroups of one 64-row block each, and at every tile all of them
 * issue q·kᵀ, wait for it, run the softmax and then P·V, so the tensor cores, MUFU and the
 * issue slots take turns (session 14: per tile and sub-partition ~1216 tensor, ~1024 MUFU and
 * ~1200 issue cycles of work against ~3100 spent). Here each warpgroup owns two row blocks,
 * A and B, and orders a tile's work so that one block's softmax runs under the other's
 * product: q·kᵀ A, q·kᵀ B, then (softmax A ‖ q·kᵀ B), P·V A, (softmax B ‖ P·V A), P·V B
 * — FlashAttention-2's two row blocks a warp (the mma.sync kernel's MW = 2) on wgmma, the
 * "128-row consumer" that session 8's warp-specialised kernel lacked. Two warpgroups (256
 * rows, the same grid as k_vis_wg) and a register file of up to 255 a thread for the
 * doubled state. The arithmetic of a row block is k_vis_wg's (same softmax, same products),
 * so with the same BN and LAZY it should give k_vis_wg's bits: flash_bench's FB_DUMP and cmp
 * say whether it does. If it wins, it takes k_vis_wg's place in kernels/attention-vision.cu
 * rather than standing beside it. */
#pragma once

/* One row block's turn in a tile, its q·kᵀ done: the softmax of its scores, O rescaled, P
 * packed, and its P·V issued (not waited for). */
template <typename T, bool LAZY>
__device__ __forceinline__ void wg2_block(float (*sc)[4], float *m, float *l, float *corr, float (*o)[4],
                                          uint32_t (*p)[4], int key0, int n, int tig, float c, uint64_t dV)
{
    wg_pin<8>(sc);
    if (wg_softmax_tile<64, LAZY>(sc, m, l, corr, key0, n, tig, c)) wg_rescale(o, corr);
    wg_pack<T, 64>(p, sc);
    wg_pin_u<4>(p);
    wg_pin<FV_D / 8>(o);
    wg_fence();
    wg_issue_pv<T, 64>(o, p, dV);
    wg_commit();
}

template <typename T, int NS, bool LAZY>
__global__ void __launch_bounds__(256, 1) k_vis_wg2(const T *qkv, T *out, int n, int H, float c)
{
#if HK_HAVE_WGMMA
    constexpr int NWG = 2, BN = 64, BM = 256, AHEAD = NS - 1;
    typedef WgShape<NWG, BN, NS> S; /* NT = 256 threads; the stages' layout */
    static_assert(NS >= 2, "stages");
    extern __shared__ __align__(128) unsigned char wg_raw[];
    T *sm = (T *)wg_raw;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2, q = warp & 3;
    const int r0 = blockIdx.x * BM, head = blockIdx.y, stride = 3 * H * FV_D;
    const T *qb = qkv + (size_t)head * FV_D, *kb = qb + (size_t)H * FV_D, *vb = kb + (size_t)H * FV_D;

    WgSlots<S::NT, BN> sl;
    const uint32_t sbase = smem_addr(sm);
    const int n_tiles = wg_kv_begin<T, NWG, BN, NS, AHEAD>(sm, sl, sbase, kb, vb, stride, n);
    const uint64_t dK0 = wg_desc(sm, 128, WG_CK * 128), dV0 = wg_desc(sm + S::KT, WG_CV * 128, 128);
    /* block b of this warp: rows r0 + 128·wg + 64·b + 16·q .. + 15 */
    const int rowA = r0 + wg * 128 + q * 16, rowB = rowA + 64;
    uint32_t qa[WG_DK / 16][4], qb2[WG_DK / 16][4], pa[BN / 16][4], pb[BN / 16][4];
    wg_load_q<T>(qa, qb, stride, rowA, n, lane);
    wg_load_q<T>(qb2, qb, stride, rowB, n, lane);
    float sa[BN / 8][4], sb[BN / 8][4], oa[FV_D / 8][4], ob[FV_D / 8][4];
    float ma[2] = { -1e30f, -1e30f }, mb[2] = { -1e30f, -1e30f }, la[2] = { 0.0f, 0.0f }, lb[2] = { 0.0f, 0.0f };
    float ca[2], cb[2];
#pragma unroll
    for (int i = 0; i < BN / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) sa[i][e] = sb[i][e] = 0.0f;
#pragma unroll
    for (int i = 0; i < FV_D / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) oa[i][e] = ob[i][e] = 0.0f;
#pragma unroll
    for (int i = 0; i < BN / 16; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) pa[i][e] = pb[i][e] = 0u;

    for (int j = 0; j < n_tiles; j++) {
        cp_wait<AHEAD - 1>();
        wg_fence_smem();
        __syncthreads();
        if (j + AHEAD < n_tiles) wg_load_any<T, NWG, BN, NS>(sl, sm, sbase, kb, vb, stride, j + AHEAD, n);
        cp_commit();
        const uint64_t stg = (uint64_t)((j % NS) * (S::ST / 8));

        wg_pin<BN / 8>(sa);
        wg_pin<BN / 8>(sb);
        wg_fence();
        wg_issue_qk<T, BN>(sa, qa, dK0 + stg);
        wg_commit();
        wg_issue_qk<T, BN>(sb, qb2, dK0 + stg);
        wg_commit();
        wg_wait<1>(); /* q·kᵀ A done; B's runs under A's softmax */
        wg2_block<T, LAZY>(sa, ma, la, ca, oa, pa, j * BN, n, lane & 3, c, dV0 + stg);
        wg_wait<1>(); /* q·kᵀ B done; A's P·V runs under B's softmax */
        wg2_block<T, LAZY>(sb, mb, lb, cb, ob, pb, j * BN, n, lane & 3, c, dV0 + stg);
        wg_wait<0>();
        wg_pin<FV_D / 8>(oa);
        wg_pin<FV_D / 8>(ob);
        wg_pin_u<BN / 16>(pa);
        wg_pin_u<BN / 16>(pb);
    }
    wg_store<T>(out, oa, la, rowA, n, H, head, lane);
    wg_store<T>(out, ob, lb, rowB, n, H, head, lane);
#else
    __trap();
#endif
}

template <typename T, int NS, bool LAZY>
static cudaError_t vis_wg2_launch(cudaStream_t s, void *out, const void *qkv, int n, int H, float scale)
{
    typedef WgShape<2, 64, NS> S;
    if (S::SMEM > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(k_vis_wg2<T, NS, LAZY>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)S::SMEM);
        if (e != cudaSuccess) return e;
    }
    dim3 g((unsigned)((n + 255) / 256), (unsigned)H);
    k_vis_wg2<T, NS, LAZY><<<g, S::NT, S::SMEM, s>>>((const T *)qkv, (T *)out, n, H, scale * LOG2E);
    return cudaGetLastError();
}
