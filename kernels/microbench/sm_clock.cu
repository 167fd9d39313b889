// The SM clock a kernel runs at: each CTA's thread 0 reads %clock64 (SM cycles, what every
// cycle count in protosim's profiles is in) and %globaltimer (ns) around a spin of a given
// number of cycles.  cycles / ns is the clock the kernel ran at; the profiles convert cycles to
// microseconds at clock_ghz (1.98 on the H200), so a kernel that runs slower than that is
// predicted too fast by the same factor.  kernels/runner/sm_clock.py runs it, alone and right
// after tensor-core work, and while the tensor core works (spin_wgmma).
// Build (CPU machine): nvcc -cubin -arch=sm_90a -O3 -o sm_clock.sm_90a.cubin sm_clock.cu
#include "wgmma_ptx.cuh"

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

// Thread 0 spins; the other threads exit (a light load).
extern "C" __global__ void spin(long long cycles, long long *out) {
    if (threadIdx.x != 0) return;
    unsigned long long g0 = globaltimer();
    long long c0 = clock64(), c1 = c0;
    while (c1 - c0 < cycles) c1 = clock64();
    unsigned long long g1 = globaltimer();
    out[2 * blockIdx.x] = c1 - c0;
    out[2 * blockIdx.x + 1] = (long long)(g1 - g0);
}

// Every thread runs dependent FMAs until thread 0's spin ends (a heavier load on the SM).
extern "C" __global__ void spin_fma(long long cycles, long long *out, float *sink) {
    __shared__ volatile int stop;
    if (threadIdx.x == 0) stop = 0;
    __syncthreads();
    float x = threadIdx.x * 1e-3f, y = 1.0001f;
    unsigned long long g0 = globaltimer();
    long long c0 = clock64(), c1 = c0;
    while (!stop) {
#pragma unroll
        for (int i = 0; i < 64; ++i) x = fmaf(x, y, 1e-7f);
        if (threadIdx.x == 0) {
            c1 = clock64();
            if (c1 - c0 >= cycles) stop = 1;
        }
    }
    unsigned long long g1 = globaltimer();
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = c1 - c0;
        out[2 * blockIdx.x + 1] = (long long)(g1 - g0);
    }
    if (x == 12345.0f) sink[0] = x;  // keep the FMAs
}

// One warpgroup issues the GEMM kernels' block of eight wgmma m64n128k16 (A and B boxes in the
// dynamic shared memory, never written: the values do not matter), commit and wait_group 0, over
// and over until thread 0's spin ends: the clock while the tensor core works.  128 threads.
template <int N>
__device__ __forceinline__ void spin_wgmma_n(long long cycles, long long *out, float *sink) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ volatile int stop;
    if (threadIdx.x == 0) stop = 0;
    __syncthreads();
    float acc[N];
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = 0.f;
    const uint32_t a = smem_addr(smem), b = smem_addr(smem + A_BOX);
    unsigned long long g0 = globaltimer();
    long long c0 = clock64(), c1 = c0;
    while (!stop) {
        wgmma_block<N>(acc, a, b);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (threadIdx.x == 0) {
            c1 = clock64();
            if (c1 - c0 >= cycles) stop = 1;
        }
        asm volatile("bar.sync 1, 128;" ::: "memory");  // every warp sees stop before the next block
    }
    unsigned long long g1 = globaltimer();
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = c1 - c0;
        out[2 * blockIdx.x + 1] = (long long)(g1 - g0);
    }
    float sum = 0.f;  // every accumulator read, so that ptxas keeps both halves' wgmmas
#pragma unroll
    for (int i = 0; i < N; ++i) sum += acc[i];
    if (sum == 12345.0f) sink[0] = sum;
}

extern "C" __global__ void __launch_bounds__(128) spin_wgmma(long long cycles, long long *out, float *sink) {
    spin_wgmma_n<128>(cycles, out, sink);
}

// The same with m64n64k16 and m64n16k16 blocks: does the clock depend on the instruction's size?
extern "C" __global__ void __launch_bounds__(128) spin_wgmma_n64(long long cycles, long long *out, float *sink) {
    spin_wgmma_n<64>(cycles, out, sink);
}

extern "C" __global__ void __launch_bounds__(128) spin_wgmma_n16(long long cycles, long long *out, float *sink) {
    spin_wgmma_n<16>(cycles, out, sink);
}

// spin_wgmma with a pause after every block: all threads spin `idle` clock64 cycles (sleep == 0)
// or thread 0 sleeps `idle` ns in __nanosleep while the others wait at bar.sync (sleep != 0, the
// warps off the issue slots as in a suspended try_wait).  out[4 * b ..]: clock64 cycles,
// globaltimer ns, blocks issued, clock64 cycles inside the blocks (fence to wait_group).
extern "C" __global__ void __launch_bounds__(128) spin_wgmma_duty(long long cycles, long long idle, int sleep,
                                                                 long long *out, float *sink) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ volatile int stop;
    if (threadIdx.x == 0) stop = 0;
    __syncthreads();
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    const uint32_t a = smem_addr(smem), b = smem_addr(smem + A_BOX);
    long long blocks = 0, in_blocks = 0;
    unsigned long long g0 = globaltimer();
    long long c0 = clock64(), c1 = c0;
    while (!stop) {
        const long long s = clock64();
        wgmma_block<128>(acc, a, b);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        const long long e = clock64();
        in_blocks += e - s;
        ++blocks;
        if (sleep) {
            if (threadIdx.x == 0) __nanosleep((unsigned)idle);
        } else {
            while (clock64() - e < idle) {
            }
        }
        if (threadIdx.x == 0) {
            c1 = clock64();
            if (c1 - c0 >= cycles) stop = 1;
        }
        asm volatile("bar.sync 1, 128;" ::: "memory");
    }
    unsigned long long g1 = globaltimer();
    if (threadIdx.x == 0) {
        out[4 * blockIdx.x] = c1 - c0;
        out[4 * blockIdx.x + 1] = (long long)(g1 - g0);
        out[4 * blockIdx.x + 2] = blocks;
        out[4 * blockIdx.x + 3] = in_blocks;
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) sum += acc[i];
    if (sum == 12345.0f) sink[0] = sum;
}
