// Register math on one SM: how many warp instructions of a kind an SM retires per cycle, and
// how long one warp takes for its own -- the cost of the elementwise math a Triton kernel does
// on its tensors in registers (an attention kernel's softmax: scale, max, subtract, exp2, sum,
// the conversion to fp16).  Each thread runs `rounds` rounds of CHAINS independent chains of one
// instruction (inline PTX, so ptxas cannot fold them); CHAINS = 8 keeps a warp's own latency out
// of the way, so the time is the issue or the pipe.  One CTA of `warps` warps on one SM (or one
// CTA on every SM); thread 0 of each CTA stamps clock64 around the rounds after a __syncthreads
// and stores the cycles at the second one.  kernels/runner/alu_rate.py runs it.  Build (CPU):
//   nvcc -cubin -arch=sm_90a -O3 -o alu_rate.sm_90a.cubin alu_rate.cu
#include <cstdint>

#define CHAINS 8

template <typename Step>
__device__ void run(long long *cycles, float *sink, int rounds, Step step) {
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = 1.0f + 1e-3f * (threadIdx.x + c);
    const float a = 0.999f, b = 1e-4f;
    __syncthreads();
    long long t0 = clock64();
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
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

struct Ffma { __device__ float operator()(float x, float a, float b) const {
    float y; asm volatile("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(x), "f"(a), "f"(b)); return y; } };
struct Fmul { __device__ float operator()(float x, float a, float) const {
    float y; asm volatile("mul.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(a)); return y; } };
struct Fmax { __device__ float operator()(float x, float, float b) const {
    float y; asm volatile("max.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(b)); return y; } };
struct Ex2 { __device__ float operator()(float x, float, float) const {
    float y; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; } };
struct Cvt { __device__ float operator()(float x, float a, float) const {   // two fp32 -> packed fp16x2
    uint32_t y; asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(y) : "f"(x), "f"(a)); return __uint_as_float(y); } };
struct Shfl { __device__ float operator()(float x, float, float) const {   // a reduction's butterfly step
    float y; asm volatile("shfl.sync.bfly.b32 %0, %1, 1, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x)); return y; } };

// Conversions (issue 16: set 6's int8-weight GEMM spends ~1,500 cycles a k-iteration converting its
// int8 tile to fp16 -- per element a PRMT (the byte sign-extended to 16 bits) and an I2F.F16.S16,
// cuobjdump of kernels/triton/gemm_parts.py's w8a16_m96_int8).  The 16-bit register halves cost no
// instruction of their own (checked in the cubin's SASS).
struct I2fF16S16 { __device__ float operator()(float x, float, float) const {   // arith.sitofp i8/i16 -> f16
    float y; asm volatile("{ .reg .b16 lo, hi, r; mov.b32 {lo, hi}, %1; cvt.rn.f16.s16 r, lo; mov.b32 %0, {r, hi}; }"
                          : "=f"(y) : "f"(x)); return y; } };
struct Prmt { __device__ float operator()(float x, float a, float) const {       // a byte sign-extended
    uint32_t y; asm volatile("prmt.b32 %0, %1, %2, 0x9180;" : "=r"(y) : "r"(__float_as_uint(x)), "r"(__float_as_uint(a)));
    return __uint_as_float(y); } };
struct I2fF32S32 { __device__ float operator()(float x, float, float) const {   // arith.sitofp i32 -> f32
    float y; asm volatile("cvt.rn.f32.s32 %0, %1;" : "=f"(y) : "r"(__float_as_int(x))); return y; } };
struct F2iS32F32 { __device__ float operator()(float x, float, float) const {   // arith.fptosi f32 -> i32
    int y; asm volatile("cvt.rzi.s32.f32 %0, %1;" : "=r"(y) : "f"(x)); return __int_as_float(y); } };
struct Frnd { __device__ float operator()(float x, float, float) const {        // math.floor (FRND.FLOOR)
    float y; asm volatile("cvt.rmi.f32.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; } };
struct Ex2I2f { __device__ float operator()(float x, float a, float b) const {   // MUFU.EX2 and I2F: one pipe or two?
    return I2fF16S16()(Ex2()(x, a, b), a, b); } };

#define KERNEL(name, Step) \
extern "C" __global__ void __launch_bounds__(1024) name(long long *cycles, float *sink, int rounds) { run(cycles, sink, rounds, Step()); }
KERNEL(rate_ffma, Ffma)
KERNEL(rate_fmul, Fmul)
KERNEL(rate_fmax, Fmax)
KERNEL(rate_ex2, Ex2)
KERNEL(rate_cvt_f16x2, Cvt)
KERNEL(rate_shfl_bfly, Shfl)
KERNEL(rate_i2f_f16_s16, I2fF16S16)
KERNEL(rate_prmt, Prmt)
KERNEL(rate_i2f_f32_s32, I2fF32S32)
KERNEL(rate_f2i_s32_f32, F2iS32F32)
KERNEL(rate_frnd_floor, Frnd)
KERNEL(rate_ex2_i2f, Ex2I2f)
