// How fast one SM moves global -> shared with cp.async, against ld.global + st.shared (issue 16:
// Triton's cp.async-fed matmuls run 0.71-0.75 of their predicted speed, and gemm_parts' copy
// loop moves ~28-33 B a cycle an SM whether 33 or 132 SMs copy -- where ld.global reached 110 B a
// cycle on one SM, load_window.cu).  Every warp of the CTA copies: ROUNDS rounds of W copies of 32
// lanes x LANE_BYTES from L2-resident memory, each warp instruction a new 512-byte chunk, into
// shared slots of its own (no two in-flight copies write one address, as in Triton's stages).
// A round ends as Triton's pipelined loop waits for a stage: cp.async.commit_group, then
// cp.async.wait_group DEPTH - 1 and bar.sync -- so DEPTH rounds are in flight (DEPTH 1: W copies a
// warp; DEPTH 2: a round issues while the previous one lands, as a 3-stage loop).
//   KIND 0  cp.async.cg.shared.global [dst], [src], 16, 16   (Triton's form, LDGSTS ... .128)
//   KIND 1  cp.async.ca.shared.global [dst], [src], LANE_BYTES, LANE_BYTES   (4 or 8 bytes a lane)
//   KIND 2  ld.global.cg.v4 of all W, then W st.shared.v4 (the same bytes through registers)
// Per CTA: %smid, and clock64 at the start and the end, as load_window.cu records them.
// kernels/runner/cp_async_window.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o cp_async_window.sm_90a.cubin cp_async_window.cu
#include <cstdint>

constexpr int CHUNK = 512;  // bytes between two chunks: every warp instruction starts a new line
constexpr int COPIES = 256;  // warp copy instructions per warp in the kernel: COPIES / W rounds

template <int KIND, int LANE_BYTES>
__device__ __forceinline__ void copy(uint32_t dst, const char *src) {
    if (KIND == 0) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, 16;" :: "r"(dst), "l"(src) : "memory");
    } else if (LANE_BYTES == 4) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, 4;" :: "r"(dst), "l"(src) : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, 8;" :: "r"(dst), "l"(src) : "memory");
    }
}

template <int W, int LANE_BYTES, int DEPTH, int KIND>
__device__ void rounds_of_copies(const char *__restrict__ buf, unsigned nchunks, long long *out) {
    extern __shared__ __align__(128) char smem[];
    const int tx = threadIdx.x, lane = tx % 32, warp = tx / 32, warps = blockDim.x / 32;
    const unsigned gwarp = blockIdx.x * warps + warp;
    // this warp's slots: DEPTH x W of 32 x LANE_BYTES bytes; lane l writes its LANE_BYTES at l
    const uint32_t mine = (uint32_t)__cvta_generic_to_shared(smem) + warp * (DEPTH * W * 32 * LANE_BYTES) + lane * LANE_BYTES;
    const char *const base = buf + lane * LANE_BYTES;
    unsigned chunk = (gwarp * COPIES) % nchunks;  // a multiple of W: nchunks and COPIES are
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    __syncthreads();
    long long t0 = clock64();
#pragma unroll 1
    for (int r = 0; r < COPIES / W; ++r) {
        const char *p = base + (size_t)chunk * CHUNK;
        const uint32_t slots = mine + (r % DEPTH) * (W * 32 * LANE_BYTES);
        if (KIND == 2) {
            uint4 v[W];
#pragma unroll
            for (int j = 0; j < W; ++j)
                asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w) : "l"(p + j * CHUNK) : "memory");
#pragma unroll
            for (int j = 0; j < W; ++j)
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(slots + j * 32 * 16), "r"(v[j].x), "r"(v[j].y), "r"(v[j].z), "r"(v[j].w) : "memory");
        } else {
#pragma unroll
            for (int j = 0; j < W; ++j) copy<KIND, LANE_BYTES>(slots + j * 32 * LANE_BYTES, p + j * CHUNK);
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group %0;" :: "n"(DEPTH - 1) : "memory");
        }
        __syncthreads();  // Triton's async_wait is followed by a barrier: every warp's copies are in
        chunk += W;
        if (chunk >= nchunks) chunk = 0;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    long long t1 = clock64();
    if (tx == 0) {
        out[3 * blockIdx.x] = smid;
        out[3 * blockIdx.x + 1] = t0;
        out[3 * blockIdx.x + 2] = t1;
    }
}

#define K(NAME, W, B, D, KIND) \
extern "C" __global__ void __launch_bounds__(256, 1) NAME(const char *__restrict__ buf, unsigned nchunks, long long *out) { \
    rounds_of_copies<W, B, D, KIND>(buf, nchunks, out); \
}
// 16-byte cp.async, one round in flight, W = 1 .. 32; and the same bytes through registers
#define CG16(W) K(cp16_w##W##_d1, W, 16, 1, 0) K(ld16_w##W##_d1, W, 16, 1, 2)
CG16(1)
CG16(2)
CG16(4)
CG16(8)
CG16(16)
CG16(32)
// two rounds in flight (a round issues while the last lands)
K(cp16_w4_d2, 4, 16, 2, 0)
K(cp16_w8_d2, 8, 16, 2, 0)
K(cp16_w16_d2, 16, 16, 2, 0)
K(cp16_w8_d4, 8, 16, 4, 0)
// narrow lanes: cp.async.ca of 4 and 8 bytes (a warp instruction 128 / 256 bytes of a 512-byte chunk)
K(cp4_w8_d1, 8, 4, 1, 1)
K(cp4_w16_d1, 16, 4, 1, 1)
K(cp8_w8_d1, 8, 8, 1, 1)
K(cp8_w16_d1, 16, 8, 1, 1)
