// One small TMA load's latency while every other SM floods the L2 (issue 16: how the chip shares
// its L2 -> shared rate among requests).  The model serves the chip's L2 as one first-come
// first-served pipe: a load that arrives behind a burst waits for every byte ahead of it, then
// its unloaded latency's zero-byte part.  If the L2 instead serves the SMs' requests side by
// side, a small load behind a burst is late by its share only.
//
// 132 CTAs, one an SM (the host asks for most of an SM's shared memory), one thread each.  All
// meet at a grid barrier (an atomic counter; every CTA is resident), then:
//   CTA 0 (the probe):   spins `delay` cycles, issues one bulk load of `probe_bytes` and times
//                        it from issue to its mbarrier wait's return;
//   the others (flood):  when `flood` != 0, issue `loads` bulk loads of `chunk` bytes each from
//                        a part of `src` (in L2) onto one mbarrier, and wait for all: with
//                        `flood` 1 each its own part; with `flood` G >= 2 groups of G flooders
//                        (CTAs 1..G, G+1..2G, ...) read the same part at once -- the GEMMs' A tile,
//                        which the CTAs of one row of the grid read together.  With `strided`
//                        the same parts go to flooders P apart instead (P = the number of parts,
//                        ceil(131 / G)): flooder b reads part (b - 1) % P, as a GEMM grid whose CTA b
//                        takes M-tile b % m_tiles spreads the readers of one A tile over the grid.
// `part_of_sm` (may be null): the part a flooder reads by its %smid instead (-1: it does not flood),
// so that the readers of a part can be chosen by where they run (l2_queue --burst-gpc); `sm_of_cta`
// (may be null): each CTA's %smid.
// out[0] = probe latency, out[1] = the probe's actual delay after the barrier (cycles);
// out[2b], out[2b+1] = flooder b's cycles from the barrier to its last issue and to its last byte.
// kernels/runner/l2_queue.py runs it.  Build (CPU machine):
//   nvcc -cubin -arch=sm_90a -O3 -o l2_queue.sm_90a.cubin l2_queue.cu
#include "tma_ptx.cuh"

extern "C" __global__ void __launch_bounds__(32, 1) l2_queue(const char *__restrict__ src, int chunk, int loads,
                                                           int probe_bytes, int delay, int flood,
                                                           unsigned *counter, long long *out, int strided,
                                                           const int *part_of_sm, int *sm_of_cta) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x != 0) return;
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (sm_of_cta) sm_of_cta[blockIdx.x] = (int)smid;
    const uint32_t b = smem_addr(&bar);
    init_barrier(b, 1);
    const int chosen = part_of_sm ? part_of_sm[smid] : -1;  // read before the barrier: not timed
    grid_meet(counter);
    const long long t0 = clock64();
    if (blockIdx.x == 0) {
        while (clock64() - t0 < delay) {
        }
        const long long t1 = clock64();
        expect_tx(b, probe_bytes);
        bulk_load(smem_addr(smem), src, probe_bytes, b);  // src[0, probe_bytes): no flooder reads it
        wait_parity(b, 0);
        out[0] = clock64() - t1;
        out[1] = t1 - t0;
        return;
    }
    if (!flood) return;
    expect_tx(b, chunk * loads);
    const int parts = (gridDim.x - 1 + flood - 1) / flood;
    int part = strided ? (blockIdx.x - 1) % parts : (blockIdx.x - 1) / flood;
    if (part_of_sm) {
        part = chosen;
        if (part < 0) return;
    }
    const int owner = flood <= 1 && !part_of_sm ? blockIdx.x : 1 + part * flood;  // never 0: the probe's part
    const char *mine = src + (size_t)owner * loads * chunk;
    for (int j = 0; j < loads; ++j) bulk_load(smem_addr(smem + (size_t)j * chunk), mine + (size_t)j * chunk, chunk, b);
    const long long t1 = clock64();
    wait_parity(b, 0);
    out[2 * blockIdx.x] = t1 - t0;
    out[2 * blockIdx.x + 1] = clock64() - t0;
}
