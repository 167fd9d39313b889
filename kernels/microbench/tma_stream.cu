// TMA loads alone, as the seed's TMA steps issue them: per k-iteration one A chunk and one B
// chunk of `chunk` bytes each into a ring of `depth` stages, one mbarrier per stage with
// arrive.expect_tx, the stage refilled as soon as its wait returns -- no MMA, so what is left
// is the copy engine, L2 and HBM.  One thread issues (thread 0 of a one-warp CTA); co-residency
// is set by the host through the dynamic shared memory it asks for.
//
// CTA b computes "tile" (m, n) = (b % gm, b / gm), as the GEMM's raster does (m fastest): its A
// chunks are shared with every CTA of the same m, its B chunks with every CTA of the same n.
// A chunk (m, k) is at ((m * kt + k) % a_chunks) * chunk in A; B likewise.
//
// Uses cp.async.bulk (the 1-D bulk copy; the same TMA engine as cp.async.bulk.tensor, without a
// tensor map, so the benchmark needs no driver call beyond a launch).
// kernels/runner/tma_stream.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o tma_stream.sm_90a.cubin tma_stream.cu
#include "tma_ptx.cuh"

constexpr int MAX_DEPTH = 8;

// cycles[b]: clock64 from the first issue to the last wait's return, CTA b; issue[b]: the
// cycles thread 0 spent issuing (arrive.expect_tx and the bulk copies, each k-iteration's
// issue bracketed by two clock64 reads) -- the issue path the thread pays before it moves on.
// span[2b], span[2b+1]: %globaltimer (ns, chip-wide) at CTA b's first instruction and after its
// last wait -- with the kernel-only time, how much of a kernel lies outside every CTA.
// The ring both kernels run on thread 0: `load(k, dst, bar)` issues k-iteration k's chunks into
// the stage at `dst`, completing on `bar` (per_k bytes in all).
template <typename Load>
__device__ __forceinline__ void stream_ring(unsigned char *smem, uint64_t *full, int kt, int depth, int per_k,
                                            unsigned long long g0, Load load, long long *cycles, long long *issue,
                                            unsigned long long *span) {
    for (int s = 0; s < depth; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    long long t0 = clock64(), issuing = 0;
    auto issue_k = [&](int k) {
        const long long ti = clock64();
        const int s = k % depth;
        const uint32_t bar = smem_addr(&full[s]);
        expect_tx(bar, per_k);
        load(k, smem_addr(smem + (size_t)s * per_k), bar);
        issuing += clock64() - ti;
    };
    for (int k = 0; k < depth && k < kt; ++k) issue_k(k);
    for (int k = 0; k < kt; ++k) {
        wait_parity(smem_addr(&full[k % depth]), (k / depth) & 1);
        if (k + depth < kt) issue_k(k + depth);
    }
    cycles[blockIdx.x] = clock64() - t0;
    issue[blockIdx.x] = issuing;
    unsigned long long g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    span[2 * blockIdx.x] = g0;
    span[2 * blockIdx.x + 1] = g1;
}

extern "C" __global__ void __launch_bounds__(32) tma_stream(const char *__restrict__ A, const char *__restrict__ B,
                                                            int chunk, int kt, int gm, int depth, int a_chunks,
                                                            int b_chunks, long long *cycles, long long *issue,
                                                            unsigned long long *span) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t full[MAX_DEPTH];
    unsigned long long g0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    if (threadIdx.x != 0) return;
    const int m = blockIdx.x % gm, n = blockIdx.x / gm;
    auto load = [&](int k, uint32_t dst, uint32_t bar) {
        bulk_load(dst, A + (size_t)(((long long)m * kt + k) % a_chunks) * chunk, chunk, bar);
        if (B) bulk_load(dst + chunk, B + (size_t)(((long long)n * kt + k) % b_chunks) * chunk, chunk, bar);
    };
    stream_ring(smem, full, kt, depth, B ? 2 * chunk : chunk, g0, load, cycles, issue, span);
}

// The same stream through 2-D tensor maps (cp.async.bulk.tensor.2d, as the GEMMs and Triton's
// TMA kernels load): A and B are (rows, 64) fp16 tensors -- 128-byte rows, 128B swizzle -- and a
// chunk is the box of `box_rows` rows at row ((m * kt + k) % a_boxes) * box_rows (B likewise), so
// chunk = 128 * box_rows bytes.  Same ring, barriers, stamps and outputs as tma_stream.
extern "C" __global__ void __launch_bounds__(32) tma_stream_2d(const __grid_constant__ CUtensorMap A_map,
                                                               const __grid_constant__ CUtensorMap B_map, int box_rows,
                                                               int kt, int gm, int depth, int a_boxes, int b_boxes,
                                                               long long *cycles, long long *issue,
                                                               unsigned long long *span) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t full[MAX_DEPTH];
    unsigned long long g0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    if (threadIdx.x != 0) return;
    const int m = blockIdx.x % gm, n = blockIdx.x / gm;
    const int chunk = 128 * box_rows;
    auto load = [&](int k, uint32_t dst, uint32_t bar) {
        tensor_load(dst, &A_map, 0, (int)(((long long)m * kt + k) % a_boxes) * box_rows, bar);
        tensor_load(dst + chunk, &B_map, 0, (int)(((long long)n * kt + k) % b_boxes) * box_rows, bar);
    };
    stream_ring(smem, full, kt, depth, 2 * chunk, g0, load, cycles, issue, span);
}
