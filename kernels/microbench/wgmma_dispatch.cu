// When do a warpgroup's warps go on after issuing a block of wgmma (issue 16: the replay holds them
// until the tensor core has taken the block's last instruction, from gemm_parts' copy loop)?  Each
// CTA, one warpgroup, REPS times: clock64; the v4-v6 kernels' block (two 64-row halves x four
// m64nNk16 through 128B-swizzled K-major boxes, descriptors in uniform registers); clock64 (the
// first instruction after the block: when the warp went on); commit_group; wait_group 0; clock64.
// Shared memory is not initialized: the values do not matter, the timing does.
// out[3 * b ..]: %smid, the sum over REPS of (after the block - before), of (after the wait - before).
// The wgmma wrappers are wgmma_ptx.cuh's, shared with tma_wgmma.cu.
// kernels/runner/wgmma_dispatch.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o wgmma_dispatch.sm_90a.cubin wgmma_dispatch.cu
#include "wgmma_ptx.cuh"

template <int N>
__device__ void dispatch(int reps, long long *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const uint32_t a = smem_addr(smem), b = smem_addr(smem + A_BOX);
    float acc[N];
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = 0.f;
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    long long went_on = 0, done = 0;
    __syncthreads();
    for (int r = 0; r < reps; ++r) {
        const long long t0 = clock64();
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                const uint64_t da = sw128_desc(a + hh * 64 * 128 + kk * 32), db = sw128_desc(b + kk * 32);
                float *d = acc + hh * (N / 2);
                if constexpr (N == 16) wgmma_n16(d, da, db, 1);
                else if constexpr (N == 64) wgmma_n64(d, da, db, 1);
                else wgmma_n128(d, da, db, 1);
            }
        const long long t1 = clock64();
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        const long long t2 = clock64();
        went_on += t1 - t0;
        done += t2 - t0;
    }
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = smid;
        out[3 * blockIdx.x + 1] = went_on;
        out[3 * blockIdx.x + 2] = done;
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < N; ++i) sum += acc[i];
    if (sum == 12345.f) out[0] = -1;  // keeps every accumulator (and so every wgmma: ptxas drops dead ones) live
}

#define DISPATCH(N) \
extern "C" __global__ void __launch_bounds__(128) wgmma_dispatch_n##N(int reps, long long *out) { dispatch<N>(reps, out); }
DISPATCH(16)
DISPATCH(64)
DISPATCH(128)
