// The GEMM's k-loop reduced to its two consumers of shared memory: TMA loads writing a ring of
// stages, and wgmma reading them -- alone and together, at 1 to 3 CTAs on every SM (issue 16: the
// TMA steps with 128-column tiles run 14-28% slower than the model at 2-3 CTAs an SM, while
// neither the chip's L2 rate, nor the tensor core's one-CTA rate, nor occupancy explains it).
//
// One warpgroup (128 threads) per CTA (tma_wgmma_n128_wg2: two, each its own half); per k-iteration, on stage s = k % depth:
//   every thread: wait full[s] (try_wait.parity loop)
//   mma != 0:     the warpgroup issues the v4-v6 kernels' block -- for each 64-row half of the
//                 128 x 64 A box, four wgmma m64nNk16 stepping 16 columns through the 128B-swizzled
//                 A and B boxes -- then commit_group and wait_group 0
//   every thread: bar.sync 1, 128 (the stage is free)
//   thread 0:     refill the stage for k + depth: arrive.expect_tx and two tensor loads (A 128 x 64,
//                 B N x 64 fp16 boxes) when load != 0, else a plain arrive (the stage's next phase
//                 completes with no data: wgmma re-reads what is there)
// cycles[b]: clock64 over the k-loop, thread 0 of CTA b.  The accumulators are stored only when
// `out` is not null (never, in the runner): a runtime condition, so ptxas keeps every wgmma.
// kernels/runner/tma_wgmma.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o tma_wgmma.sm_90a.cubin tma_wgmma.cu
#include "wgmma_ptx.cuh"

constexpr int MAX_DEPTH = 4;
// HALVES 64-row halves of the block from half h0 on: both for a one-warpgroup CTA, its own for each
// of two (no branch on the warpgroup: a divergent path makes ptxas serialize the wgmmas).
template <int N, int HALVES>
__device__ __forceinline__ void wgmma_block(float *acc, uint32_t a, uint32_t b, int h0) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int hh = 0; hh < HALVES; ++hh)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const uint64_t da = sw128_desc(a + (h0 + hh) * 64 * 128 + kk * 32), db = sw128_desc(b + kk * 32);
            float *d = acc + hh * (N / 2);
            if constexpr (N == 16) wgmma_n16(d, da, db, 1);
            else if constexpr (N == 32) wgmma_n32(d, da, db, 1);
            else if constexpr (N == 64) wgmma_n64(d, da, db, 1);
            else wgmma_n128(d, da, db, 1);
        }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

template <int N, int WGS>
__device__ __forceinline__ void loop(const CUtensorMap *A_map, const CUtensorMap *B_map, int kt, int depth, int load,
                                     int mma, int gm, long long *cycles, float *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t full[MAX_DEPTH];
    constexpr int B_BOX = N * 128, STAGE = A_BOX + B_BOX;
    const int tx = threadIdx.x, m = blockIdx.x % gm, n = blockIdx.x / gm;
    constexpr int ACC = N * 2 / WGS;  // a thread's fp32 accumulators: its warpgroup's halves
    const int h0 = WGS == 1 ? 0 : tx / 128;
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    if (tx == 0) {
        for (int s = 0; s < depth; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto refill = [&](int k) {
        const int s = k % depth;
        const uint32_t bar = smem_addr(&full[s]), dst = smem_addr(smem + (size_t)s * STAGE);
        if (!load) {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
            return;
        }
        expect_tx(bar, STAGE);
        tensor_load(dst, A_map, k * 64, m * 128, bar);
        tensor_load(dst + A_BOX, B_map, k * 64, n * N, bar);
    };
    if (tx == 0)
        for (int k = 0; k < depth && k < kt; ++k) refill(k);
    const long long t0 = clock64();
    for (int k = 0; k < kt; ++k) {
        const int s = k % depth;
        wait_parity(smem_addr(&full[s]), (k / depth) & 1);
        if (mma) wgmma_block<N, 2 / WGS>(acc, smem_addr(smem + (size_t)s * STAGE), smem_addr(smem + (size_t)s * STAGE + A_BOX), h0);
        asm volatile("bar.sync 1, %0;" :: "r"(128 * WGS) : "memory");
        if (tx == 0 && k + depth < kt) refill(k + depth);
    }
    if (tx == 0) cycles[blockIdx.x] = clock64() - t0;
    if (out)
#pragma unroll
        for (int i = 0; i < ACC; ++i) out[(size_t)(blockIdx.x * 128 * WGS + tx) * ACC + i] = acc[i];
}

#define TMA_WGMMA(N)                                                                                                  \
    extern "C" __global__ void __launch_bounds__(128) tma_wgmma_n##N(                                                 \
        const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, int kt, int depth,      \
        int load, int mma, int gm, long long *cycles, float *out) {                                                   \
        loop<N, 1>(&A_map, &B_map, kt, depth, load, mma, gm, cycles, out);                                            \
    }
TMA_WGMMA(16)
TMA_WGMMA(32)
TMA_WGMMA(64)
TMA_WGMMA(128)

// The same block split over two warpgroups (256 threads), each issuing the four wgmma of its own
// 64-row half, as Triton's num_warps = 8 kernels do: do a CTA's two warpgroups overlap on the
// tensor core as two CTAs' do?
extern "C" __global__ void __launch_bounds__(256) tma_wgmma_n128_wg2(
    const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, int kt, int depth, int load,
    int mma, int gm, long long *cycles, float *out) {
    loop<128, 2>(&A_map, &B_map, kt, depth, load, mma, gm, cycles, out);
}
