// The Hopper TMA steps' epilogue store alone: each of 128 threads writes its wgmma accumulator
// fragment (m64nNk16 D layout: lane l holds rows l/4 and l/4 + 8 of its warp's 16, columns
// (l % 4) * 2 + 8j, two fp16 per 32-bit store) into a row-major BLK_M x BN fp16 tile in shared
// memory -- the index expression TVM lowers kernels/tirx/hopper.py's epilogue to
// (warp * 16 + l / 4) * BN + (l % 4) * 2 + ...: rows BN * 2 bytes apart, so lanes l and l + 4
// fall in the same bank whenever a row is a multiple of 128 bytes.  `conflict_free` writes the
// same bytes with consecutive lanes on consecutive words (the control).
// Each CTA times its stores with clock64 (after a __syncthreads, to the last warp's last store
// retiring at a second __syncthreads).  kernels/runner/smem_store.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o smem_store.sm_90a.cubin smem_store.cu
#include <cstdint>

template <int BN, bool FRAGMENT>
__device__ void store_tile(long long *cycles, int reps) {
    extern __shared__ __align__(1024) uint32_t smem[];
    const int tx = threadIdx.x, warp = tx / 32, lane = tx % 32;
    uint32_t v = tx * 2654435761u;
    __syncthreads();
    long long t0 = clock64();
    for (int r = 0; r < reps; ++r) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {      // BN / 8 column groups of 8 ...
#pragma unroll
            for (int h = 0; h < 2; ++h) {        // ... in rows l/4 and l/4 + 8: BN / 4 stores per thread
                int word;
                if (FRAGMENT)
                    word = ((warp * 16 + lane / 4 + 8 * h) * BN + (lane % 4) * 2 + 8 * j) / 2;
                else
                    word = (warp * 16 * BN + (j * 2 + h) * 64 + lane * 2) / 2;
                asm volatile("st.shared.u32 [%0], %1;" :: "r"((uint32_t)__cvta_generic_to_shared(smem + word)), "r"(v + j) : "memory");
            }
        }
    }
    __syncthreads();
    long long t1 = clock64();
    if (tx == 0) cycles[blockIdx.x] = t1 - t0;
}

#define STORE(BN) \
extern "C" __global__ void __launch_bounds__(128) fragment_bn##BN(long long *cycles, int reps) { store_tile<BN, true>(cycles, reps); } \
extern "C" __global__ void __launch_bounds__(128) conflict_free_bn##BN(long long *cycles, int reps) { store_tile<BN, false>(cycles, reps); }
STORE(16)
STORE(32)
STORE(64)
STORE(128)
