// Kernels that do (almost) nothing, to measure what a launch costs on the GPU beyond the
// SMs' own cycles: kernels/runner/launch_cost.py times them with kernels/runner/timing.py,
// the method the GEMM runs use, so the difference is the fixed part of every kernel-only
// time.  Build (on the CPU machine): nvcc -cubin -arch=sm_90a -o launch_cost.sm_90a.cubin launch_cost.cu
extern "C" __global__ void empty_kernel() {}

// One store per CTA: a kernel whose CTAs write global memory, as every GEMM's epilogue does
// (the end of a grid waits for its stores to be visible).
extern "C" __global__ void store_one(unsigned *out) {
    if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x;
}
