// The seed's v2/v3 thread copy (kernels/tirx/hopper.py thread_copy, as TVM lowers it): 128
// threads copy a 128 x 64 fp16 tile of A and a BN x 64 tile of B per k-iteration, one 2-byte
// load and one 2-byte shared store per element, into the 128B-swizzled layout, then a
// barrier -- without the MMA, so what is left is the copy's own cost per k-iteration.
// kernels/runner/thread_copy.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o thread_copy.sm_90a.cubin thread_copy.cu
#include <cuda_fp16.h>

template <int BN>
__device__ void copy_tiles(const half *__restrict__ A, const half *__restrict__ B, int K, int m, int n, long long *cycles) {
    extern __shared__ __align__(1024) unsigned char smem[];
    half *As = reinterpret_cast<half *>(smem);
    half *Bs = As + 128 * 64;
    const int tx = threadIdx.x;
    long long t0 = clock64();
    for (int k = 0; k < K / 64; ++k) {
#pragma unroll 8  // as nvcc unrolls the kernel's loop (its PTX: 8 ld.global.nc.u16 per iteration)
        for (int i = 0; i < 128 * 64 / 128; ++i) {  // 64 loads per thread
            int e = i * 128 + tx, r = e / 64, c = e % 64;
            As[r * 64 + (((c / 8) ^ (r % 8)) * 8) + c % 8] = A[(long)(m * 128 + r) * K + k * 64 + c];
        }
#pragma unroll 8
        for (int i = 0; i < BN * 64 / 128; ++i) {   // BN / 2 loads per thread
            int e = i * 128 + tx, r = e / 64, c = e % 64;
            Bs[r * 64 + (((c / 8) ^ (r % 8)) * 8) + c % 8] = B[(long)(n * BN + r) * K + k * 64 + c];
        }
        asm volatile("fence.proxy.async.shared::cta;");
        __syncthreads();
    }
    long long t1 = clock64();
    if (tx == 0) cycles[blockIdx.x] = t1 - t0;
}

// One CTA per (m, n) tile, tiles in row-major order over a grid of gm x gn.
#define COPY(BN) \
extern "C" __global__ void __launch_bounds__(128) copy_bn##BN(const half *__restrict__ A, const half *__restrict__ B, int K, int gn, long long *cycles) { \
    copy_tiles<BN>(A, B, K, blockIdx.x / gn, blockIdx.x % gn, cycles); \
}
COPY(16)
COPY(32)
COPY(64)
COPY(128)
