// The GEMM's k-loop reduced to its two consumers of shared memory: TMA loads writing a ring of
// stages, and wgmma reading them -- alone and together, at 1 to 3 CTAs on every SM (issue 16: the
// TMA steps with 128-column tiles run 14-28% slower than the model at 2-3 CTAs an SM, while
// neither the chip's L2 rate, nor the tensor core's one-CTA rate, nor occupancy explains it).
//
// One warpgroup (128 threads) per CTA (tma_wgmma_n128_wg2: two, each its own half); per k-iteration, on stage s = k % depth:
//   every thread: wait full[s] (try_wait.parity loop)
//   mma != 0:     the warpgroup issues the v4-v6 kernels' block -- for each 64-row half of the
//                 128 x 64 A box, four wgmma m64nNk16 stepping 16 columns through the 128B-swizzled
//                 A and B boxes -- then commit_group and wait_group 0
//   every thread: bar.sync 1, 128 (the stage is free)
//   thread 0:     refill the stage for k + depth: arrive.expect_tx and two tensor loads (A 128 x 64,
//                 B N x 64 fp16 boxes) when load != 0, else a plain arrive (the stage's next phase
//                 completes with no data: wgmma re-reads what is there)
// cycles[b]: clock64 over the k-loop, thread 0 of CTA b.  The accumulators are stored only when
// `out` is not null (never, in the runner): a runtime condition, so ptxas keeps every wgmma.
// kernels/runner/tma_wgmma.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o tma_wgmma.sm_90a.cubin tma_wgmma.cu
#include "tma_ptx.cuh"

constexpr int MAX_DEPTH = 4;
constexpr int A_BOX = 128 * 128;  // 128 rows of 64 fp16: one 128-byte swizzle span a row

// A shared-memory matrix descriptor for a K-major box of 128-byte rows, 128B swizzle (PTX ISA,
// "Matrix Descriptor Format"): start address >> 4, leading byte offset 1 (unused when swizzled),
// stride byte offset 1024 >> 4 (eight rows make one swizzle atom), swizzle mode 1 in bits 62-63.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// m64nNk16, f32 += f16 * f16, both operands from shared memory, K-major (written out per N:
// an asm statement needs its accumulator registers listed one by one).
__device__ __forceinline__ void wgmma_n16(float *d, uint64_t a, uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(a), "l"(b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_n32(float *d, uint64_t a, uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(a), "l"(b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_n64(float *d, uint64_t a, uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(a), "l"(b), "r"(accumulate));
}

__device__ __forceinline__ void wgmma_n128(float *d, uint64_t a, uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "r"(accumulate));
}

// HALVES 64-row halves of the block from half h0 on: both for a one-warpgroup CTA, its own for each
// of two (no branch on the warpgroup: a divergent path makes ptxas serialize the wgmmas).
template <int N, int HALVES>
__device__ __forceinline__ void wgmma_block(float *acc, uint32_t a, uint32_t b, int h0) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int hh = 0; hh < HALVES; ++hh)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const uint64_t da = sw128_desc(a + (h0 + hh) * 64 * 128 + kk * 32), db = sw128_desc(b + kk * 32);
            float *d = acc + hh * (N / 2);
            if constexpr (N == 16) wgmma_n16(d, da, db, 1);
            else if constexpr (N == 32) wgmma_n32(d, da, db, 1);
            else if constexpr (N == 64) wgmma_n64(d, da, db, 1);
            else wgmma_n128(d, da, db, 1);
        }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

template <int N, int WGS>
__device__ __forceinline__ void loop(const CUtensorMap *A_map, const CUtensorMap *B_map, int kt, int depth, int load,
                                     int mma, int gm, long long *cycles, float *out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t full[MAX_DEPTH];
    constexpr int B_BOX = N * 128, STAGE = A_BOX + B_BOX;
    const int tx = threadIdx.x, m = blockIdx.x % gm, n = blockIdx.x / gm;
    constexpr int ACC = N * 2 / WGS;  // a thread's fp32 accumulators: its warpgroup's halves
    const int h0 = WGS == 1 ? 0 : tx / 128;
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    if (tx == 0) {
        for (int s = 0; s < depth; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto refill = [&](int k) {
        const int s = k % depth;
        const uint32_t bar = smem_addr(&full[s]), dst = smem_addr(smem + (size_t)s * STAGE);
        if (!load) {
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
            return;
        }
        expect_tx(bar, STAGE);
        tensor_load(dst, A_map, k * 64, m * 128, bar);
        tensor_load(dst + A_BOX, B_map, k * 64, n * N, bar);
    };
    if (tx == 0)
        for (int k = 0; k < depth && k < kt; ++k) refill(k);
    const long long t0 = clock64();
    for (int k = 0; k < kt; ++k) {
        const int s = k % depth;
        wait_parity(smem_addr(&full[s]), (k / depth) & 1);
        if (mma) wgmma_block<N, 2 / WGS>(acc, smem_addr(smem + (size_t)s * STAGE), smem_addr(smem + (size_t)s * STAGE + A_BOX), h0);
        asm volatile("bar.sync 1, %0;" :: "r"(128 * WGS) : "memory");
        if (tx == 0 && k + depth < kt) refill(k + depth);
    }
    if (tx == 0) cycles[blockIdx.x] = clock64() - t0;
    if (out)
#pragma unroll
        for (int i = 0; i < ACC; ++i) out[(size_t)(blockIdx.x * 128 * WGS + tx) * ACC + i] = acc[i];
}

#define TMA_WGMMA(N)                                                                                                  \
    extern "C" __global__ void __launch_bounds__(128) tma_wgmma_n##N(                                                 \
        const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, int kt, int depth,      \
        int load, int mma, int gm, long long *cycles, float *out) {                                                   \
        loop<N, 1>(&A_map, &B_map, kt, depth, load, mma, gm, cycles, out);                                            \
    }
TMA_WGMMA(16)
TMA_WGMMA(32)
TMA_WGMMA(64)
TMA_WGMMA(128)

// The same block split over two warpgroups (256 threads), each issuing the four wgmma of its own
// 64-row half, as Triton's num_warps = 8 kernels do: do a CTA's two warpgroups overlap on the
// tensor core as two CTAs' do?
extern "C" __global__ void __launch_bounds__(256) tma_wgmma_n128_wg2(
    const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, int kt, int depth, int load,
    int mma, int gm, long long *cycles, float *out) {
    loop<128, 2>(&A_map, &B_map, kt, depth, load, mma, gm, cycles, out);
}
