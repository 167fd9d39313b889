// The v5 k-loop's control path without its MMA: 128 threads (one warpgroup), a ring of `depth`
// stages of A + B 128 x 64 fp16 boxes (tensor maps as the GEMM kernels encode them), and per
// k-iteration what kernels/tirx/hopper.py's v5 does around its wgmma block:
//
//   every thread: wait full[stage] (try_wait.parity loop)
//   every thread: spin `mma_cycles` on clock64               (stands in for the wgmma block)
//   mode 0: thread 0 arrives on mma_bar; every thread waits on it   (v5's release)
//   mode 1: __syncthreads() instead                                 (the same join, a CTA barrier)
//   mode 2: no join
//   thread 0: refill this stage for k + depth: two tensor loads and arrive.expect_tx
//             (refill 0), or a plain arrive that completes the stage's next phase with no data
//             (refill 1: the same loop and waits without the TMA)
//
// cycles[b]: clock64 over the k-loop, thread 0 of CTA b.  Per k-iteration, less `mma_cycles`, it
// is the path the model times with its arrive / wake / issue costs.  kernels/runner/refill_loop.py
// runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o refill_loop.sm_90a.cubin refill_loop.cu
#include "tma_ptx.cuh"

constexpr int MAX_DEPTH = 4;

extern "C" __global__ void __launch_bounds__(128) refill_loop(const __grid_constant__ CUtensorMap A_map,
                                                              const __grid_constant__ CUtensorMap B_map,
                                                              int kt, int kwrap, int depth, int mode, int mma_cycles, int refill_kind,
                                                              long long *cycles) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t full[MAX_DEPTH];
    __shared__ __align__(8) uint64_t mma_bar;
    const int tx = threadIdx.x, m = blockIdx.x;
    if (tx == 0) {
        for (int s = 0; s < depth; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&mma_bar)) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncthreads();
    auto refill = [&](int k) {
        const int s = k % depth, x = (k % kwrap) * 64;
        const uint32_t bar = smem_addr(&full[s]);
        if (refill_kind == 1) {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
            return;
        }
        const uint32_t dst = smem_addr(smem + (size_t)s * 32768);
        tensor_load(dst, &A_map, x, m * 128, bar);
        tensor_load(dst + 16384, &B_map, x, m * 128, bar);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(32768) : "memory");
    };
    if (tx == 0)
        for (int k = 0; k < depth && k < kt; ++k) refill(k);
    const long long t0 = clock64();
    for (int k = 0; k < kt; ++k) {
        wait_parity(smem_addr(&full[k % depth]), (k / depth) & 1);
        const long long spin0 = clock64();
        while (clock64() - spin0 < mma_cycles) {
        }
        if (mode == 0) {
            if (tx == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(&mma_bar)) : "memory");
            wait_parity(smem_addr(&mma_bar), k & 1);
        } else if (mode == 1) {
            __syncthreads();
        }
        if (tx == 0 && k + depth < kt) refill(k + depth);
    }
    if (tx == 0) cycles[blockIdx.x] = clock64() - t0;
}
