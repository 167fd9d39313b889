// Holds SMs so that another kernel runs on the rest (issue 16: cta_drift's co-residency test).
// One CTA an SM (the host asks for most of an SM's shared memory), one thread each: it writes its
// %smid to out[blockIdx.x], counts itself in `started`, and spins `cycles` clock64 cycles.  A kernel
// launched on another stream while these spin gets only the SMs they leave, so a grid can be run
// at several CTAs an SM on few SMs -- the same CTAs sharing an SM, a fraction of the chip's L2
// traffic.  kernels/runner/cta_drift.py --blocked runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o sm_blocker.sm_90a.cubin sm_blocker.cu
extern "C" __global__ void __launch_bounds__(32, 1) sm_blocker(long long cycles, unsigned *started, int *out) {
    if (threadIdx.x != 0) return;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    out[blockIdx.x] = (int)smid;
    atomicAdd(started, 1u);
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}
