// The issue path of a 2-D tensor TMA load as the Hopper TMA steps issue it (cp.async.bulk.tensor,
// a 128 x 64 fp16 box, 128B swizzle, the tensor map a __grid_constant__ parameter -- the GEMM
// kernels' A_map): how long the issuing thread is held by the instruction, and when the bytes
// land measured from the start of the issue.  One thread of one warp per CTA; a k-iteration:
//
//   mode 0 (one load):  arrive.expect_tx(box_bytes); t0; load; t1; wait; t2   (any box size)
//   mode 1 (A and B):   arrive.expect_tx(32 KiB); t0; load A; t1; load B; t2; wait; t3
//   mode 2 (expect_tx): t0; arrive.expect_tx(16 KiB); t1; load; wait         (the arrive's own cost)
//   mode 4 (kernel order): t0; load A; t1; load B; t2; arrive.expect_tx(32 KiB); t3; wait
//                          (the GEMM kernels' order; the third sum is the arrive, not a landing)
//
// out[8 * b + ...]: sums over the k-iterations after the first of (t1 - t0), (t2 - t1), (t3 - t2 or
// t2 - t0 for the landing), then the first k-iteration's own three (the descriptor's first use), and
// the k-iterations summed.  k-iteration k loads box (k % kwrap) of the CTA's 128 rows.  The clock reads are part of every bracket (~ a few cycles each; the
// empty bracket is measured by mode 3: t0; t1).  kernels/runner/tma_issue.py runs it.  Build
// (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o tma_issue.sm_90a.cubin tma_issue.cu
#include "tma_ptx.cuh"

__device__ __forceinline__ long long now() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
    return t;
}

extern "C" __global__ void __launch_bounds__(32) tma_issue(const __grid_constant__ CUtensorMap A_map,
                                                           const __grid_constant__ CUtensorMap B_map,
                                                           int kt, int kwrap, int mode, int box_bytes, long long *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t full;
    if (threadIdx.x != 0) return;
    const uint32_t bar = smem_addr(&full);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    const int m = blockIdx.x % 132;  // a grid of 132 x c CTAs (c an SM: tma_issue.py --per-sm) reads the 132 CTAs' rows
    long long s[3] = {0, 0, 0}, first[3] = {0, 0, 0};
    for (int k = 0; k < kt; ++k) {
        long long d[3] = {0, 0, 0};
        const uint32_t a = smem_addr(smem), b = smem_addr(smem + 16384);
        int x = (k % kwrap) * 64;
        asm volatile("" : "+r"(x));  // computed here, not between the clock reads (a division)
        if (mode == 0) {
            expect_tx(bar, box_bytes);
            long long t0 = now();
            tensor_load(a, &A_map, x, m * 128, bar);
            long long t1 = now();
            wait_parity(bar, k & 1);
            long long t2 = now();
            d[0] = t1 - t0; d[2] = t2 - t0;
        } else if (mode == 1) {
            expect_tx(bar, 32768);
            long long t0 = now();
            tensor_load(a, &A_map, x, m * 128, bar);
            long long t1 = now();
            tensor_load(b, &B_map, x, m * 128, bar);
            long long t2 = now();
            wait_parity(bar, k & 1);
            long long t3 = now();
            d[0] = t1 - t0; d[1] = t2 - t1; d[2] = t3 - t0;
        } else if (mode == 2) {
            long long t0 = now();
            expect_tx(bar, box_bytes);
            long long t1 = now();
            tensor_load(a, &A_map, x, m * 128, bar);
            wait_parity(bar, k & 1);
            d[0] = t1 - t0;
        } else if (mode == 4) {
            // the kernels' own order: the two loads, then arrive.expect_tx (bracket 3 is the arrive)
            long long t0 = now();
            tensor_load(a, &A_map, x, m * 128, bar);
            long long t1 = now();
            tensor_load(b, &B_map, x, m * 128, bar);
            long long t2 = now();
            expect_tx(bar, 32768);
            long long t3 = now();
            wait_parity(bar, k & 1);
            d[0] = t1 - t0; d[1] = t2 - t1; d[2] = t3 - t2;
        } else {
            long long t0 = now();
            long long t1 = now();
            d[0] = t1 - t0;
        }
        if (k == 0) {
            for (int i = 0; i < 3; ++i) first[i] = d[i];
        } else {
            for (int i = 0; i < 3; ++i) s[i] += d[i];
        }
    }
    long long *o = out + 8 * blockIdx.x;
    for (int i = 0; i < 3; ++i) {
        o[i] = s[i];
        o[3 + i] = first[i];
    }
    o[6] = kt - 1;
}
