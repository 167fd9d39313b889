// How much of the L2 holds data that SMs on both sides of the chip read (issue 16: L2 partition
// effects).  The H100/H200 L2 is two partitions; if each keeps a copy of what its own SMs read,
// data read by every SM fills both and the L2 holds half as much of it.  Two ways to read the
// same bytes from a buffer of `nbytes` already in L2, one CTA of 4 warps per SM:
//   mode 0  every CTA reads the whole buffer (each from its own starting point)
//   mode 1  each CTA reads its own 1/gridDim slice, gridDim times over (the same bytes in all)
//   mode 2  groups of `sharers` CTAs, each group its own slice, each CTA of it the whole slice
// Loads are 16 bytes per lane, `ld.global.cg` (L2 only: the L1 keeps nothing), eight 512-byte
// warp loads in flight per warp.  A launch's time against nbytes shows where each mode's data
// stops fitting.  `rank_of_sm` (may be null) chooses the readers by SM: CTAs on an SM whose entry
// is -1 exit at once, the others take the entry as their rank among `nreaders` (the runner's
// `--sides`: readers on one side of the L2 or on both, from the measured side map).
// kernels/runner/l2_share.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o l2_share.sm_90a.cubin l2_share.cu
#include <cstdint>

constexpr int W = 8;       // warp loads in flight per warp
constexpr int CHUNK = 32;  // uint4 per chunk: a warp load of 512 bytes

extern "C" __global__ void __launch_bounds__(128, 1) l2_share(const uint4 *__restrict__ buf, unsigned nchunks, int mode,
                                                             unsigned *__restrict__ sink, unsigned *__restrict__ smids,
                                                             const int *__restrict__ rank_of_sm, unsigned nreaders,
                                                             unsigned sharers) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    // smids (may be null): each CTA's SM, for runs of fewer CTAs than SMs (`--grid`)
    if (smids != nullptr && threadIdx.x == 0) smids[blockIdx.x] = smid;
    const int chosen = rank_of_sm != nullptr ? rank_of_sm[smid] : (int)blockIdx.x;
    if (chosen < 0) return;  // not a reader (the whole CTA: no barrier below)
    const unsigned rank = (unsigned)chosen, readers = rank_of_sm != nullptr ? nreaders : gridDim.x;
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // Readers share lines in groups of `share` (mode 0: all of them; mode 1: none; mode 2: `sharers`,
    // a divisor of readers): each group its own slice, each reader of a group the whole slice from
    // its own staggered start.  nchunks is a multiple of readers * W (the runner's sizes): no run of
    // W straddles a slice's end.
    const unsigned share = mode == 0 ? readers : mode == 1 ? 1u : sharers;
    const unsigned slice = nchunks / (readers / share);
    const unsigned base = rank / share * slice;
    const unsigned begin = (unsigned)(((unsigned long long)(rank % share) * slice / share) / W * W);
    const unsigned total = nchunks;  // chunks each CTA reads, in every mode
    uint32_t x = 0;
#pragma unroll 1
    for (unsigned t = warp * W; t < total; t += 4 * W) {
        const unsigned first = base + (begin + t) % slice;
        const uint4 *p = buf + (size_t)first * CHUNK + lane;
        uint4 v[W];
#pragma unroll
        for (int j = 0; j < W; ++j)
            asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w) : "l"(p + j * CHUNK) : "memory");
#pragma unroll
        for (int j = 0; j < W; ++j) x ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    if (x == 0x9e3779b9u) sink[0] = x;  // keeps the loads
}
