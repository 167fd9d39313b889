// Register math of two kinds mixed: whether an SM sub-partition's pipes overlap -- the
// special-function unit (MUFU.EX2), the FMA pipe (FFMA) and the ALU pipe (FMNMX) -- or take
// turns.  A Triton row kernel's loop body is such a mix: cross-entropy's online logsumexp issues
// per element two MUFU.EX2, ~9 FMUL/FADD/FFMA, two FSETP and an FMNMX (cuobjdump of
// kernels/triton/heldout4.py's cross_entropy_fwd_kernel, Triton 3.6, sm_90a).  alu_rate.cu
// measured each kind alone; here each step of a chain is one instruction of the first kind then K
// of the second, dependent in turn, 8 independent chains a thread (as alu_rate.cu), one CTA of
// `warps` warps on one SM (or one CTA on every SM); thread 0 stamps clock64 around the rounds.
// kernels/runner/alu_mix.py runs it.  Build (CPU):
//   nvcc -cubin -arch=sm_90a -O3 -o alu_mix.sm_90a.cubin alu_mix.cu
#include <cstdint>

#define CHAINS 8

__device__ __forceinline__ float ffma(float x, float a, float b) {
    float y; asm volatile("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(x), "f"(a), "f"(b)); return y; }
__device__ __forceinline__ float fmax_(float x, float b) {
    float y; asm volatile("max.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(b)); return y; }
__device__ __forceinline__ float ex2(float x) {
    float y; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }

template <int K> struct Ex2Ffma { __device__ float operator()(float x, float a, float b) const {
    x = ex2(x);
#pragma unroll
    for (int j = 0; j < K; ++j) x = ffma(x, a, b);
    return x; } };
template <int K> struct Ex2Fmax { __device__ float operator()(float x, float, float b) const {
    x = ex2(x);
#pragma unroll
    for (int j = 0; j < K; ++j) x = fmax_(x, b);
    return x; } };
template <int K> struct FmaxFfma { __device__ float operator()(float x, float a, float b) const {
    x = fmax_(x, b);
#pragma unroll
    for (int j = 0; j < K; ++j) x = ffma(x, a, b);
    return x; } };

template <typename Step>
__device__ void run(long long *cycles, float *sink, int rounds, Step step) {
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = -1.0f - 1e-3f * (threadIdx.x + c);
    const float a = 0.5f, b = -1.0f;  // keeps ex2's argument in [-2, 0): no inf, no denormal
    __syncthreads();
    long long t0 = clock64();
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
#pragma unroll
            for (int c = 0; c < CHAINS; ++c) x[c] = step(x[c], a, b);
        }
    }
    __syncthreads();
    long long t1 = clock64();
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    if (s == 12345.678f) sink[threadIdx.x] = s;  // never true: keeps the chains live
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

#define KERNEL(name, Step) \
extern "C" __global__ void __launch_bounds__(1024) name(long long *cycles, float *sink, int rounds) { run(cycles, sink, rounds, Step()); }
KERNEL(mix_ex2_ffma1, Ex2Ffma<1>)
KERNEL(mix_ex2_ffma2, Ex2Ffma<2>)
KERNEL(mix_ex2_ffma4, Ex2Ffma<4>)
KERNEL(mix_ex2_ffma8, Ex2Ffma<8>)
KERNEL(mix_ex2_ffma16, Ex2Ffma<16>)
KERNEL(mix_ex2_fmax1, Ex2Fmax<1>)
KERNEL(mix_ex2_fmax2, Ex2Fmax<2>)
KERNEL(mix_ex2_fmax4, Ex2Fmax<4>)
KERNEL(mix_fmax_ffma1, FmaxFfma<1>)
KERNEL(mix_fmax_ffma2, FmaxFfma<2>)
KERNEL(mix_fmax_ffma4, FmaxFfma<4>)
