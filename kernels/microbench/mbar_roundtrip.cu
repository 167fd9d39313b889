// v5's mbarrier round trip alone, with a TMA load landing at a chosen moment around it (issue 16).
//
// v5_parts (results/silicon/microbench/2026-12-03_h200_v5_parts.md) found that one sequence --
// thread 0 arrives on mma_bar right after wgmma.wait_group, then every thread try_waits on it,
// thread 0 right behind its own arrive -- costs ~145 cycles a k-iteration in v5 and ~90 in v4, for
// the same SASS.  The difference between the two loops around it: in v5 the stage loaded one
// iteration ahead lands during the wgmma block or the round trip (the model puts that landing
// ~1,170 cycles after the issue, ~100-250 cycles before the round trip); in v4 the load is issued
// after the round trip and waited for, so nothing lands meanwhile.
//
// One CTA of one warpgroup.  Per iteration:
//   bar.sync 1, 128                           (the warps start the iteration together)
//   thread 0, when load != 0:                 arrive.expect_tx on ld_bar and the two tensor loads of
//                                             a v5 stage (A 128 x 64, B N x 64 fp16, into stage 1)
//   every thread: spin until `delay` cycles after the issue
//   mma != 0: the v4-v6 block of eight wgmma on stage 0 (never loaded: the values do not matter),
//             commit_group, wait_group 0      -- as the kernels, right before the round trip
//   the round trip, as TVM emits it:          thread 0 mbarrier.arrive on rt_bar (count 1); every
//             thread mbarrier.try_wait.parity on it in a C loop (selp'd predicate), counting its
//             failed tries
//   load != 0: every thread waits on ld_bar
// Thread 0 writes, per iteration, the cycles (clock64) from the issue to the block's start, of
// the block, of the round trip, from the issue to ld_bar's wait returning, and its failed tries.
// The accumulators are stored only when `out` is not null (never, in the runner).
// kernels/runner/mbar_roundtrip.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o mbar_roundtrip.sm_90a.cubin mbar_roundtrip.cu
#include "wgmma_ptx.cuh"

constexpr int FIELDS = 5;  // per iteration: to_block, block, round_trip, to_landed, failed tries

__device__ __forceinline__ void arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared.b64 _, [%0];" :: "r"(bar) : "memory");
}

// TVM's tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint: one probe, its predicate as 0/1.
__device__ __forceinline__ uint32_t try_wait(uint32_t bar, uint32_t parity) {
    uint32_t ok;
    asm volatile("{ .reg .pred pd0; mbarrier.try_wait.parity.shared.b64 pd0, [%1], %2; selp.b32 %0, 1, 0, pd0; }"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    return ok;
}

template <int N>
__device__ __forceinline__ void round_trips(const CUtensorMap *A_map, const CUtensorMap *B_map, int iters, int kt,
                                            int load, int mma, int delay, long long *rec, float *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t ld_bar, rt_bar;
    constexpr int STAGE = A_BOX + N * 128;
    const int tx = threadIdx.x;
    const uint32_t ld = smem_addr(&ld_bar), rt = smem_addr(&rt_bar);
    const uint32_t stage0 = smem_addr(smem), stage1 = smem_addr(smem + STAGE);
    float acc[N];
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = 0.f;
    if (tx == 0) {
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(ld) : "memory");
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(rt) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    for (int it = 0; it < iters; ++it) {
        asm volatile("bar.sync 1, 128;" ::: "memory");
        const long long t_issue = clock64();
        if (load && tx == 0) {
            expect_tx(ld, STAGE);
            tensor_load(stage1, A_map, (it % kt) * 64, 0, ld);
            tensor_load(stage1 + A_BOX, B_map, (it % kt) * 64, 0, ld);
        }
        while (clock64() - t_issue < delay) {
        }
        const long long t_block = clock64();
        if (mma) {
            wgmma_block<N>(acc, stage0, stage0 + A_BOX);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        }
        const long long t_trip = clock64();
        if (tx == 0) arrive(rt);
        int failed = 0;
        uint32_t ok = try_wait(rt, it & 1);
        while (!ok) {
            ++failed;
            ok = try_wait(rt, it & 1);
        }
        const long long t_back = clock64();
        if (load) wait_parity(ld, it & 1);
        const long long t_landed = clock64();
        if (tx == 0) {
            long long *r = rec + (size_t)it * FIELDS;
            r[0] = t_block - t_issue;
            r[1] = t_trip - t_block;
            r[2] = t_back - t_trip;
            r[3] = t_landed - t_issue;
            r[4] = failed;
        }
    }
    if (out)
#pragma unroll
        for (int i = 0; i < N; ++i) out[(size_t)tx * N + i] = acc[i];
}

#define MBAR_ROUNDTRIP(N)                                                                                             \
    extern "C" __global__ void __launch_bounds__(128) mbar_roundtrip_n##N(                                            \
        const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, int iters, int kt,      \
        int load, int mma, int delay, long long *rec, float *out) {                                                   \
        round_trips<N>(&A_map, &B_map, iters, kt, load, mma, delay, rec, out);                                        \
    }
MBAR_ROUNDTRIP(64)
MBAR_ROUNDTRIP(128)
