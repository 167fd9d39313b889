// How many global loads one SM keeps in flight (issue 16: why co-resident thread copies slow
// each other).  Each warp runs 256 / W rounds; a round issues W independent loads back to back
// and then stores their XOR to shared memory, which waits for all W -- a window of W loads, as
// in the seed's v2/v3 copy, where ptxas hoists 13-16 LDG.E.U16 above their STS.U16.  (A store of
// each value to one slot lets ptxas drop all loads but the last: the stores overwrite each other.)  Every load of a warp reads a different
// L2-resident chunk of 512 bytes.
//   LANE_BYTES 2   ld.u16: a warp instruction reads 64 contiguous bytes (the seed's copy: 2 sectors)
//   LANE_BYTES 4   ld.u32: 128 bytes (4 sectors, one line)
//   LANE_BYTES 16  ld.v4.u32: 512 bytes (16 sectors, four lines; Triton's and the Blackwell copy)
//   CG 1: ld.global.cg (L2 only); CG 0: ld.global.nc (the LDG.E.CONSTANT the seed's copy is)
// Launched with 128 threads: four load warps.  With 256, warps 4-7 wait on an mbarrier the load
// warps complete at their end, polling it as the GEMM kernels' waits do (the `waiters` rows).
// __launch_bounds__(256, 1): without the minimum-CTAs hint ptxas holds the kernel to ~32 registers
// and reuses load destinations, so a round of 32 has only ~5-8 loads out (read in its SASS); with
// it every W-load round issues all W before the first XOR (checked for all 24 kernels, cuobjdump).
// Per CTA: %smid, and clock64 at the start and the end (after a __syncthreads), so the runner
// knows how many CTAs shared each SM while they ran.  kernels/runner/load_window.py runs it.
// Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o load_window.sm_90a.cubin load_window.cu
#include <cstdint>

constexpr int CHUNK = 512;  // bytes between two chunks: every load starts a new line, even the 512-byte one
constexpr int LOADS = 256;  // loads per warp in the kernel: LOADS / W rounds

template <int LANE_BYTES, int CG>
__device__ __forceinline__ void load(uint4 &v, const char *p) {
    if (LANE_BYTES == 2) {
        unsigned short h;
        if (CG) asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(h) : "l"(p) : "memory");
        else asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(p) : "memory");
        v.x = h;
    } else if (LANE_BYTES == 4) {
        if (CG) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v.x) : "l"(p) : "memory");
        else asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v.x) : "l"(p) : "memory");
    } else {
        if (CG) asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
        else asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    }
}

template <int LANE_BYTES>
__device__ __forceinline__ void store(uint32_t addr, const uint4 &v) {
    if (LANE_BYTES == 2) asm volatile("st.shared.u16 [%0], %1;" :: "r"(addr), "h"((unsigned short)v.x) : "memory");
    else if (LANE_BYTES == 4) asm volatile("st.shared.u32 [%0], %1;" :: "r"(addr), "r"(v.x) : "memory");
    else asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

template <int W, int LANE_BYTES, int CG, int EACH = 0, int LOADERS = 4>
__device__ void rounds_of_loads(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    __shared__ __align__(16) uint4 slot[EACH ? W * 8 * LANE_BYTES : 32 * LOADERS];
    __shared__ __align__(8) unsigned long long loads_done;
    const int tx = threadIdx.x, lane = tx % 32;
    const uint32_t bar = (uint32_t)__cvta_generic_to_shared(&loads_done);
    if (tx == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(LOADERS) : "memory");
    // `share` consecutive CTAs (each on its own SM: the launch spreads CTAs over the SMs first)
    // read the same chunks at the same time, as the CTAs of a GEMM row read one A tile.
    const unsigned gwarp = (blockIdx.x / share) * LOADERS + tx / 32;
    const uint32_t dst = (uint32_t)__cvta_generic_to_shared(&slot[tx % (32 * LOADERS)]);
    const uint32_t dst_each = (uint32_t)__cvta_generic_to_shared(slot) + (tx % 128) * LANE_BYTES;
    // Warp g reads chunks g * LOADS .. g * LOADS + LOADS - 1 (mod nchunks): a round's W loads are
    // one base register plus immediate offsets, as in the seed's unrolled copy -- no arithmetic
    // between the loads (a first version computed each address with a wrap-around test: a
    // dependent chain of ~26 cycles per load, which the round times measured instead of the loads).
    const char *const base = buf + lane * LANE_BYTES;
    unsigned chunk = (gwarp * LOADS) % nchunks;  // a multiple of W: nchunks and LOADS are
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    __syncthreads();
    long long t0 = clock64();
    if (tx >= 32 * LOADERS) {
        // Waiters (a launch of 256 threads): warps 4-7 wait for the four load warps as the v3
        // kernel's warps wait for their MMA -- mbarrier.try_wait.parity in a loop that reads the
        // clock (kernels/tirx/hopper.py bounded_wait) -- while co-resident CTAs copy.
        uint32_t ok = 0;
        long long spins = 0;
        while (!ok) {
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                         : "=r"(ok) : "r"(bar) : "memory");
            spins += clock64() & 1;
        }
        if (spins == -1) out[0] = 0;  // keeps the clock reads
    } else {
#pragma unroll 1  // one round per iteration: unrolled, ptxas hoists the next round's loads into this one's window
    for (int r = 0; r < LOADS / W; ++r) {
        const char *p = base + (size_t)chunk * CHUNK;
        uint4 v[W];
#pragma unroll
        for (int j = 0; j < W; ++j) load<LANE_BYTES, CG>(v[j], p + j * CHUNK);
        if (EACH) {  // each value to its own slot, as the seed's copy does: W shared stores per round
#pragma unroll
            for (int j = 0; j < W; ++j) store<LANE_BYTES>(dst_each + j * 128 * LANE_BYTES, v[j]);
        } else {
            uint4 x = v[0];
#pragma unroll
            for (int j = 1; j < W; ++j) { x.x ^= v[j].x; x.y ^= v[j].y; x.z ^= v[j].z; x.w ^= v[j].w; }
            store<LANE_BYTES>(dst, x);
        }
        chunk += W;
        if (chunk >= nchunks) chunk = 0;
    }
    if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
    }
    __syncthreads();
    long long t1 = clock64();
    if (tx == 0) {
        out[3 * blockIdx.x] = smid;
        out[3 * blockIdx.x + 1] = t0;
        out[3 * blockIdx.x + 2] = t1;
    }
}

#define WINDOW(W, B, CG, NAME) \
extern "C" __global__ void __launch_bounds__(256, 1) NAME(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) { \
    rounds_of_loads<W, B, CG>(buf, nchunks, share, out); \
}
#define WIDTHS(W) \
WINDOW(W, 2, 1, w##W##_b2_cg) WINDOW(W, 4, 1, w##W##_b4_cg) WINDOW(W, 16, 1, w##W##_b16_cg) WINDOW(W, 2, 0, w##W##_b2_nc)
WIDTHS(1)
WIDTHS(2)
WIDTHS(4)
WIDTHS(8)
WIDTHS(16)
WIDTHS(32)
// Each loaded value stored to its own shared slot (W STS.U16 per round, conflict-free): the seed's
// copy has one shared store per load; do the stores share the loads' throughput?
extern "C" __global__ void __launch_bounds__(256, 1) w8_b2_nc_each(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    rounds_of_loads<8, 2, 0, 1>(buf, nchunks, share, out);
}
extern "C" __global__ void __launch_bounds__(256, 1) w16_b2_nc_each(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    rounds_of_loads<16, 2, 0, 1>(buf, nchunks, share, out);
}
// One CTA of 32 load warps: eight CTAs' worth of loads on one SM, at any number of SMs -- is the
// loads' limit the SM's or the chip's?
extern "C" __global__ void __launch_bounds__(1024, 1) w16_b2_nc_sm(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    rounds_of_loads<16, 2, 0, 0, 32>(buf, nchunks, share, out);
}
extern "C" __global__ void __launch_bounds__(1024, 1) w16_b4_cg_sm(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    rounds_of_loads<16, 4, 1, 0, 32>(buf, nchunks, share, out);
}
extern "C" __global__ void __launch_bounds__(1024, 1) w8_b16_cg_sm(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    rounds_of_loads<8, 16, 1, 0, 32>(buf, nchunks, share, out);
}
extern "C" __global__ void __launch_bounds__(256, 1) w32_b2_nc_each(const char *__restrict__ buf, unsigned nchunks, int share, long long *out) {
    rounds_of_loads<32, 2, 0, 1>(buf, nchunks, share, out);
}
