// The PTX the TMA microbenchmarks share (tma_stream.cu, tma_issue.cu, refill_loop.cu): shared
// addresses, bulk and 2-D tensor loads completing on an mbarrier, arrive.expect_tx, and a
// try_wait.parity spin.  Header-only; each .cu includes it and is built on its own with nvcc -cubin.
#pragma once
#include <cuda.h>
#include <cstdint>

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// cp.async.bulk: `bytes` contiguous bytes, no tensor map (the same TMA engine).
__device__ __forceinline__ void bulk_load(uint32_t dst, const char *src, int bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// cp.async.bulk.tensor.2d: the box at (x, y) of `map`, as the Hopper TMA steps issue it.
__device__ __forceinline__ void tensor_load(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

__device__ __forceinline__ void expect_tx(uint32_t bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n"
        "}\n" :: "r"(bar), "r"(parity) : "memory");
}

// One mbarrier of `count` arrivals, initialized and fenced (the microbenchmarks' first lines).
__device__ __forceinline__ void init_barrier(uint32_t bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Every CTA of the grid meets here (one thread each; every CTA must be resident): an atomic counter
// that all of them bump and then read until it holds the grid's size.
__device__ __forceinline__ void grid_meet(unsigned *counter) {
    atomicAdd(counter, 1u);
    unsigned seen = 0;
    while (seen < gridDim.x)
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
}
