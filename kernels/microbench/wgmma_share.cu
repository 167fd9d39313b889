// How does an SM's tensor core share itself between CTAs (issue 16)?  The model serves wgmma
// blocks in order, a whole block at a time: a CTA that started its block first finishes it as if
// alone, the next waits for it.  If the unit instead interleaves the instructions of every block
// in flight, the first CTA's block is slowed by the second's.  wgmma_dispatch cannot tell the two
// apart: its CTAs issue back to back, and in steady state both rules give each CTA three blocks of
// time.  Here the CTAs of one SM start their block at set offsets from a common instant.
//
// Each CTA (one warpgroup) takes a rank on its SM (atomicAdd on ranks[smid]).  Every repetition,
// rank 0 publishes a start instant (its clock64 + LEAD); the others read it; each CTA spins until
// start + rank * stagger, reads clock64 (t0), issues the v4-v6 kernels' block of eight m64nNk16
// (uniform descriptors, wgmma_ptx.cuh), commits, waits, reads clock64 (t2).  clock64 is the SM's
// counter, the same for every CTA on it.  out[4 * b ..]: %smid, rank, sum over timed repetitions
// of (t0 - start) and of (t2 - start).  Shared memory is not initialized: the values do not
// matter, the timing does.
// kernels/runner/wgmma_share.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o wgmma_share.sm_90a.cubin wgmma_share.cu
#include "wgmma_ptx.cuh"

constexpr long long LEAD = 8000;  // cycles from publishing a start to it: every rank's last block is done by then
constexpr int WARMUP = 2;         // repetitions not summed

template <int N>
__device__ void share(int reps, int stagger, int *ranks, volatile long long *starts, long long *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ int rank_s;
    __shared__ long long start_s;
    const uint32_t a = smem_addr(smem), b = smem_addr(smem + A_BOX);
    float acc[N];
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = 0.f;
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (threadIdx.x == 0) rank_s = atomicAdd(&ranks[smid], 1);
    __syncthreads();
    const int rank = rank_s;
    long long began = 0, done = 0;
    for (int r = 0; r < reps; ++r) {
        if (threadIdx.x == 0) {
            volatile long long *slot = starts + (long long)smid * reps + r;
            long long start;
            if (rank == 0) {
                start = clock64() + LEAD;
                *slot = start;
                __threadfence();
            } else {
                while ((start = *slot) == 0) {
                }
            }
            start_s = start;
        }
        __syncthreads();
        const long long start = start_s;
        const long long go = start + (long long)rank * stagger;
        while (clock64() < go) {
        }
        const long long t0 = clock64();
        wgmma_block<N>(acc, a, b);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        const long long t2 = clock64();
        if (r >= WARMUP) {
            began += t0 - start;
            done += t2 - start;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[4 * blockIdx.x] = smid;
        out[4 * blockIdx.x + 1] = rank;
        out[4 * blockIdx.x + 2] = began;
        out[4 * blockIdx.x + 3] = done;
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i) sum += acc[i];
    if (sum == 12345.f) out[0] = -1;  // keeps every accumulator (and so every wgmma: ptxas drops dead ones) live
}

#define SHARE(N)                                                                                              \
    extern "C" __global__ void __launch_bounds__(128)                                                         \
        wgmma_share_n##N(int reps, int stagger, int *ranks, long long *starts, long long *out) {              \
        share<N>(reps, stagger, ranks, starts, out);                                                          \
    }
SHARE(16)
SHARE(64)
SHARE(128)
