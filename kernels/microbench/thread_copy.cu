// The seed's v2/v3 thread copy (kernels/tirx/hopper.py thread_copy, as TVM lowers it): 128
// threads copy a 128 x 64 fp16 tile of A and a BN x 64 tile of B per k-iteration, one 2-byte
// load and one 2-byte shared store per element, into the 128B-swizzled layout, then a
// barrier -- without the MMA, so what is left is the copy's own cost per k-iteration.
// kernels/runner/thread_copy.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o thread_copy.sm_90a.cubin thread_copy.cu
#include <cuda_fp16.h>

// The index expressions are TVM's own for K = 4096 (copied from the lowered v3 kernel): with K
// a compile-time constant, each unrolled load is one base register plus an immediate offset.
// (A first version computed r = e / 64, c = e % 64 with K a parameter: ~30 integer
// instructions per element made it 3.7x slower than the real kernel's whole k-iteration.)
constexpr int K = 4096;

template <int BN>
__device__ void copy_tiles(const half *__restrict__ A, const half *__restrict__ B, int m, int n, long long *cycles) {
    extern __shared__ __align__(1024) unsigned char smem[];
    half *As = reinterpret_cast<half *>(smem);
    half *Bs = As + 128 * 64;
    const int tx = threadIdx.x;
    long long t0 = clock64();
    for (int k = 0; k < K / 64; ++k) {
        for (int i = 0; i < 128 * 64 / 128; ++i) {  // 64 loads per thread (nvcc unrolls by 8, as in the kernel)
            As[i * 128 + (tx >> 6) * 64 + ((((tx & 63) >> 3) ^ (((i & 3) * 2) + (tx >> 6))) * 8) + (tx & 7)] =
                A[m * (128 * K) + i * (2 * K) + (tx >> 6) * K + k * 64 + (tx & 63)];
        }
        for (int i = 0; i < BN * 64 / 128; ++i) {   // BN / 2 loads per thread
            Bs[i * 128 + (tx >> 6) * 64 + ((((tx & 63) >> 3) ^ (((i & 3) * 2) + (tx >> 6))) * 8) + (tx & 7)] =
                B[n * (BN * K) + i * (2 * K) + (tx >> 6) * K + k * 64 + (tx & 63)];
        }
        asm volatile("fence.proxy.async.shared::cta;");
        __syncthreads();
    }
    long long t1 = clock64();
    if (tx == 0) cycles[blockIdx.x] = t1 - t0;
}

// One CTA per (m, n) tile, tiles in row-major order over a grid of gm x gn.
#define COPY(BN) \
extern "C" __global__ void __launch_bounds__(128) copy_bn##BN(const half *__restrict__ A, const half *__restrict__ B, int k_unused, int gn, long long *cycles) { \
    copy_tiles<BN>(A, B, blockIdx.x / gn, blockIdx.x % gn, cycles); \
}
COPY(16)
COPY(32)
COPY(64)
COPY(128)

// The v3 kernel's raster (kernels/tirx/hopper.py tile_coords: m fastest), gm tiles per column:
// CTAs that share an SM read different A rows and B rows, as in the GEMM.
#define COPY_M(BN) \
extern "C" __global__ void __launch_bounds__(128) copy_mfast_bn##BN(const half *__restrict__ A, const half *__restrict__ B, int k_unused, int gm, long long *cycles) { \
    copy_tiles<BN>(A, B, blockIdx.x % gm, blockIdx.x / gm, cycles); \
}
COPY_M(16)
COPY_M(32)
COPY_M(64)
COPY_M(128)
