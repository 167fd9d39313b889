// How much a warp's instruction stream slows when other CTAs' warps share its SM (issue 16: v5's
// k-iteration grows 10-25% in its instruction-bound parts at four CTAs an SM, cta_drift part 5,
// where the model keeps each warp's issue private).
//
// c CTAs an SM (the host sets the shared memory), 128 threads (one warpgroup) each; a CTA takes a
// rank on its SM (atomicAdd on ranks[smid]). Rank 0's thread 0 (as the GEMMs' thread 0 issues
// their TMA loads and waits) times `n` iterations of an issue-bound stream: eight independent
// integer multiply-adds on registers, no memory. Meanwhile every other warp of the SM --
// rank 0's warps 1-3 and all warps of the other ranks -- does, by `mode`:
//   0: nothing (returns at once): the stream alone on its SM;
//   1: the same stream (every thread);
//   2: spins on mbarrier.try_wait.parity of a barrier that never completes, reading a stop flag each
//      time round (the GEMMs' waiting warps), until rank 0 is done;
//   3: as 2 with a clock64 read and a compare each time round (TVM's timed wait loop).
// out[2 * smid] = rank 0's stream cycles, out[2 * smid + 1] = CTAs that took a rank on the SM.
// kernels/runner/issue_share.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o issue_share.sm_90a.cubin issue_share.cu
#include <cstdint>

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned stream(int n, unsigned seed) {
    unsigned a = seed, b = seed + 1, c = seed + 2, d = seed + 3, e = seed + 4, f = seed + 5, g = seed + 6, h = seed + 7;
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
        a = a * 3u + 1u; b = b * 5u + 1u; c = c * 7u + 1u; d = d * 9u + 1u;
        e = e * 11u + 1u; f = f * 13u + 1u; g = g * 15u + 1u; h = h * 17u + 1u;
    }
    return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

extern "C" __global__ void __launch_bounds__(128) issue_share(int n, int mode, int *ranks, volatile int *stop,
                                                            long long *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t never;
    __shared__ int rank_s;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (threadIdx.x == 0) {
        rank_s = atomicAdd(&ranks[smid], 1);
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&never)) : "memory");
    }
    __syncthreads();
    const int rank = rank_s;
    const bool timed = rank == 0 && threadIdx.x == 0;
    unsigned sink = 0;
    if (timed) {
        const long long t0 = clock64();
        sink = stream(n, smid);
        const long long t1 = clock64();
        out[2 * smid] = t1 - t0;
        out[2 * smid + 1] = ranks[smid];
        __threadfence();
        stop[smid] = 1;
    } else if (mode == 1) {
        sink = stream(n, threadIdx.x);
    } else if (mode >= 2) {
        const uint32_t bar = smem_u32(&never);
        const long long t0 = clock64();
        while (!stop[smid]) {
            uint32_t ok;
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}"
                         : "=r"(ok) : "r"(bar) : "memory");
            if (ok) break;
            if (mode == 3 && clock64() - t0 > (1ll << 40)) break;
        }
    }
    if (sink == 0x12345u) out[0] = -1;  // keeps the stream live
}
