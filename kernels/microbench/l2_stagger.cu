// Whether a read of lines another SM read shortly before costs the L2 what a distinct read does
// (issue 16).  l2_queue.cu showed that when groups of 4, 32 or 131 SMs read the same bytes at
// once, the flood lands ~2.2x sooner than when each reads its own.  In a GEMM the SMs sharing a
// tile are not in lock step: this kernel offsets them, to tell a rule that prices a read by
// whether its lines are in flight (what sharing at once does) from one that prices it by whether
// they were read recently (a near copy), and to measure how the saving fades with the offset.
//
// 132 CTAs, one an SM (the host asks for most of an SM's shared memory), one thread each; the
// first `active` take part.  All meet at a grid barrier (an atomic counter; every CTA is
// resident), then flooder b, of group b / group at rank r = b % group, spins r * stagger cycles,
// issues `loads` bulk loads of `chunk` bytes from its group's part of `src` (in L2) onto one
// mbarrier and waits for all of them.
// out[3b], out[3b+1], out[3b+2] = flooder b's cycles from the barrier to its first issue, its last
// issue and its last byte.  kernels/runner/l2_stagger.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o l2_stagger.sm_90a.cubin l2_stagger.cu
#include "tma_ptx.cuh"

extern "C" __global__ void __launch_bounds__(32, 1) l2_stagger(const char *__restrict__ src, int chunk, int loads,
                                                             int group, int stagger, int active,
                                                             unsigned *counter, long long *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x != 0) return;
    const uint32_t b = smem_addr(&bar);
    init_barrier(b, 1);
    grid_meet(counter);
    const long long t0 = clock64();
    if ((int)blockIdx.x >= active) return;
    const long long wait = (long long)(blockIdx.x % group) * stagger;
    while (clock64() - t0 < wait) {
    }
    const long long t1 = clock64();
    expect_tx(b, chunk * loads);
    const char *mine = src + (size_t)(blockIdx.x / group) * loads * chunk;
    for (int j = 0; j < loads; ++j) bulk_load(smem_addr(smem + (size_t)j * chunk), mine + (size_t)j * chunk, chunk, b);
    const long long t2 = clock64();
    wait_parity(b, 0);
    out[3 * blockIdx.x] = t1 - t0;
    out[3 * blockIdx.x + 1] = t2 - t0;
    out[3 * blockIdx.x + 2] = clock64() - t0;
}
