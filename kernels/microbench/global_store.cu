// The thread-copy steps' epilogue alone: each of 128 threads writes its wgmma accumulator
// fragment (m64nNk16 D layout: lane l holds rows l/4 and l/4 + 8 of its warp's 16, columns
// 8i + 2 (l % 4) + {0, 1}) straight to a row-major fp16 D in global memory -- the stores TVM
// lowers kernels/tirx/hopper.py's store_direct to: one 2-byte STG.E.U16 per element (ptxas 13.0
// keeps them 2-byte: 128 per thread at BLK_N 128), so each warp instruction writes 64 bytes over
// 8 rows, 8 bytes in each of 8 different 32-byte sectors.
//   u16        that pattern, 2 x 2-byte stores per element pair (the kernel's)
//   u32        the same bytes, one 4-byte store per element pair
//   coalesced  the same bytes of the tile, 16 bytes per lane, consecutive lanes consecutive
// CTA b writes the BM x BN tile (b % gm, b / gm) of a (gm * 128) x ld matrix `reps` times.
// Per CTA: clock64 from a __syncthreads to the last store issued (`issue`), and to a
// __threadfence after them (`drain`: the CTA's stores performed).  kernels/runner/global_store.py
// runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o global_store.sm_90a.cubin global_store.cu
#include <cstdint>
#include <cuda_fp16.h>

template <int BN, int MODE>
__device__ void store_tile(__half *D, int ld, int gm, long long *cycles, int reps) {
    const int tx = threadIdx.x, warp = tx / 32, lane = tx % 32;
    const int m0 = (blockIdx.x % gm) * 128, n0 = (blockIdx.x / gm) * BN;
    const __half v = __float2half(tx * 0.001f);
    __syncthreads();
    long long t0 = clock64();
    for (int r = 0; r < reps; ++r) {
        if (MODE == 2) {  // coalesced: the tile's 128 * BN * 2 bytes, 16 per lane per store
            const int per_row = BN * 2 / 16, total = 128 * per_row;
            for (int c = tx; c < total; c += 128) {
                int row = c / per_row, col = (c % per_row) * 8;
                int4 w = make_int4(tx + r, c, row, col);
                *reinterpret_cast<int4 *>(D + (size_t)(m0 + row) * ld + n0 + col) = w;
            }
        } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int i = 0; i < BN / 8; ++i) {
                    int row = m0 + h * 64 + warp * 16 + lane / 4, col = n0 + i * 8 + (lane % 4) * 2;
                    __half *p = D + (size_t)row * ld + col, *q = p + 8 * (size_t)ld;
                    if (MODE == 0) {
                        asm volatile("st.global.b16 [%0], %1;" :: "l"(p), "h"(__half_as_ushort(v)) : "memory");
                        asm volatile("st.global.b16 [%0], %1;" :: "l"(p + 1), "h"(__half_as_ushort(v)) : "memory");
                        asm volatile("st.global.b16 [%0], %1;" :: "l"(q), "h"(__half_as_ushort(v)) : "memory");
                        asm volatile("st.global.b16 [%0], %1;" :: "l"(q + 1), "h"(__half_as_ushort(v)) : "memory");
                    } else {
                        uint32_t w = (uint32_t)__half_as_ushort(v) * 0x10001u;
                        asm volatile("st.global.b32 [%0], %1;" :: "l"(p), "r"(w) : "memory");
                        asm volatile("st.global.b32 [%0], %1;" :: "l"(q), "r"(w) : "memory");
                    }
                }
            }
        }
    }
    long long t1 = clock64();
    __threadfence();
    __syncthreads();
    long long t2 = clock64();
    if (tx == 0) {
        cycles[2 * blockIdx.x] = t1 - t0;
        cycles[2 * blockIdx.x + 1] = t2 - t0;
    }
}

#define STORE(BN) \
extern "C" __global__ void __launch_bounds__(128) u16_bn##BN(__half *D, int ld, int gm, long long *c, int reps) { store_tile<BN, 0>(D, ld, gm, c, reps); } \
extern "C" __global__ void __launch_bounds__(128) u32_bn##BN(__half *D, int ld, int gm, long long *c, int reps) { store_tile<BN, 1>(D, ld, gm, c, reps); } \
extern "C" __global__ void __launch_bounds__(128) coalesced_bn##BN(__half *D, int ld, int gm, long long *c, int reps) { store_tile<BN, 2>(D, ld, gm, c, reps); }
STORE(16)
STORE(64)
STORE(128)
