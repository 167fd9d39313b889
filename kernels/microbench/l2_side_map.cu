// Which L2 partition each SM reads through (issue 16: the SM -> L2 side map the model guesses).
//
// The H200's L2 is two partitions; an SM reaches lines homed in the other one through the
// crossbar, later.  One CTA per SM (the shared memory the runner asks for keeps it so), thread 0
// only, one at a time by a global turn counter:
//   for each target CTA t: CTA 0 (the warmer) reads lines L_t by a pointer chase, then CTA t reads
//   the same lines twice, timing every dependent load (clock64 around it, the load's value used
//   before the second read of the clock).
//   mode 0: L_t is CTA t's own 256 lines (no one else read them but the warmer);
//   mode 1: every target reads L_0 (the same 256 lines for all).
// If a partition keeps a copy of what its SMs read, a target on the warmer's side finds every line
// near on its first pass and one on the other side half of them far (mode 0: the first pass slower
// than the second on one side only).  If not, each line is near or far by its home alone, and two
// SMs on the same side see the same lines far (mode 1: the per-line pattern groups the SMs).
// Waits are bounded (timeout_cycles): a CTA that waits too long sets *status and stops.
// kernels/runner/l2_side_map.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o l2_side_map.sm_90a.cubin l2_side_map.cu
#include <cstdint>

constexpr int LINE_WORDS = 32;  // 128-byte lines of unsigned

__device__ __forceinline__ unsigned load_cg(const unsigned *p) {
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned read_turn(const unsigned *turn) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(turn) : "memory");
    return v;
}

__device__ __forceinline__ void set_turn(unsigned *turn, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(turn), "r"(v) : "memory");
}

// false on timeout
__device__ bool wait_turn(const unsigned *turn, unsigned want, long long timeout_cycles) {
    const long long t0 = clock64();
    while (read_turn(turn) != want) {
        __nanosleep(200);
        if (clock64() - t0 > timeout_cycles) return false;
    }
    return true;
}

// The chase through `n` lines from line `start` (word 0 of each line holds the next line's index).
__device__ unsigned chase(const unsigned *lines, unsigned start, int n) {
    unsigned idx = start;
#pragma unroll 1
    for (int i = 0; i < n; ++i) idx = load_cg(lines + (size_t)idx * LINE_WORDS);
    return idx;
}

// The same, each load timed; returns the sum of the loads' cycles.  The loaded value is stored to
// shared memory before the second clock read: the store waits for the load (a side effect ptxas
// keeps), and a warp issues in order, so the clock is read after the data came back.
__device__ long long chase_timed(const unsigned *lines, unsigned start, int n, int *per_line) {
    __shared__ unsigned slot;
    const unsigned at = (unsigned)__cvta_generic_to_shared(&slot);
    unsigned idx = start;
    long long sum = 0;
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
        const long long a = clock64();
        idx = load_cg(lines + (size_t)idx * LINE_WORDS);
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(at), "r"(idx) : "memory");
        const long long b = clock64();
        sum += b - a;
        if (per_line != nullptr) per_line[i] = (int)(b - a);
    }
    return sum;
}

extern "C" __global__ void __launch_bounds__(32, 1)
    l2_side_map(const unsigned *__restrict__ lines, int n, int mode, unsigned *turn, long long timeout_cycles,
                long long *__restrict__ first_pass, long long *__restrict__ second_pass, int *__restrict__ per_line,
                unsigned *__restrict__ smids, unsigned *__restrict__ status) {
    if (threadIdx.x != 0) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    smids[blockIdx.x] = smid;
    const unsigned me = blockIdx.x;
    volatile unsigned sink = 0;
#pragma unroll 1
    for (unsigned t = 0; t < gridDim.x; ++t) {
        const unsigned start = (mode == 0 ? t : 0) * (unsigned)n;  // the first line of L_t
        if (me == 0) {
            if (!wait_turn(turn, 2 * t, timeout_cycles)) { atomicExch(status, 1u + 2 * t); return; }
            sink = chase(lines, start, n);
            set_turn(turn, 2 * t + 1);
        }
        if (me == t) {
            if (!wait_turn(turn, 2 * t + 1, timeout_cycles)) { atomicExch(status, 2u + 2 * t); return; }
            first_pass[t] = chase_timed(lines, start, n, per_line + (size_t)t * n);
            second_pass[t] = chase_timed(lines, start, n, nullptr);
            set_turn(turn, 2 * t + 2);
        }
    }
    (void)sink;
}
