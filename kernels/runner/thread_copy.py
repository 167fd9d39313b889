"""The seed's v2/v3 thread copy alone, on the GPU (issue 16, part 3: a microbenchmark).

kernels/microbench/thread_copy.cu is the copy loop of kernels/tirx/hopper.py ``thread_copy``
as TVM lowers it (128 threads; per k-iteration 64 + BN/2 two-byte ``ld.global.nc`` per thread,
8 per unrolled iteration, each stored into the 128B-swizzled tile; then a barrier), with no
MMA.  Each CTA reads ``clock64`` around its whole K loop; the kernel is also timed kernel-only.
Run on the GPU machine:

    python -m kernels.runner.thread_copy --cubin B/thread_copy.sm_90a.cubin --out results.jsonl

One JSON line per (BN, grid): cycles per k-iteration (median and max over the CTAs) and the
kernel-only time.  ``--raster m``: the co-residency sweep instead -- the v3 kernel's raster (m
fastest) over 2048 x 2048 inputs in L2, 1-6 CTAs per SM (:func:`measure_mfast`).
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit

K = 4096
GRIDS = (1, 8, 132, 264, 792, 1024)
"""One CTA alone; one per SM on 8 and on every SM; 2, 6 and ~7.8 per SM (v3 at 4096^2 is 1024)."""
GN = 32  # tiles per row of the grid: A rows up to 32 * 128 = 4096, B rows up to 32 * BN


def _timed_copy(torch, drv: Driver, fn, a, b, bn: int, tiles_fast: int, grid: int, smem: int, stream, reps: int) -> dict:
    """One launch configuration: kernel-only time and each CTA's clock64 cycles per k-iteration
    (``tiles_fast``: the tiles along the grid's fastest dimension, the kernel's ``gn`` / ``gm``)."""
    cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
    args = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_int(K), ctypes.c_int(tiles_fast),
            ctypes.c_void_p(cycles.data_ptr())]
    t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, args), reps=reps, warmup=2)
    per_k = [c / (K // 64) for c in cycles.cpu().tolist()]
    return {"grid": grid, "threads": 128, "smem": smem, "k_iterations": K // 64, "loads_per_thread_per_k": 64 + bn // 2,
            "cycles_per_k_median": round(statistics.median(per_k), 1), "cycles_per_k_max": round(max(per_k), 1),
            "kernel_ms": t}


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for bn in (16, 32, 64, 128):
        smem = (128 + bn) * 64 * 2
        fn = drv.function(cubin, f"copy_bn{bn}", smem if smem > 48 * 1024 else 0)
        for grid in GRIDS:
            # Only the rows this grid reads, written just before (the GEMM runner's "inputs" L2
            # state: M x K and N x K). Two 4096 x 4096 inputs (64 MB, more than the 50 MB L2)
            # left the first tiles' rows in DRAM: the first run of this benchmark timed that.
            a = torch.randn(128 * -(-grid // GN), K, device="cuda", dtype=torch.float16)
            b = torch.randn(bn * min(grid, GN), K, device="cuda", dtype=torch.float16)
            row = {"bn": bn, **_timed_copy(torch, drv, fn, a, b, bn, GN, grid, smem, stream, reps)}
            rows.append(row)
            print(f"BN {bn:>3} grid {grid:>4}: {row['cycles_per_k_median']:8.1f} cycles/k-iteration (max {row['cycles_per_k_max']:8.1f}),"
                  f" kernel {row['kernel_ms']['median'] * 1e3:9.2f} us", flush=True)
    return rows


MFAST_M = 2048
"""The co-residency sweep's GEMM: v3 at 2048 x 2048 x K (A and B 16 MB each, in L2 once written)."""
PER_SM = (1, 2, 3, 4, 5, 6)
"""CTAs per SM in the co-residency sweep: grids of 132 x c (the block scheduler spreads them)."""


def measure_mfast(torch, cubin: bytes, reps: int) -> list[dict]:
    """The v3 kernel's raster (m fastest) over its own 2048 x 2048 inputs, written just before:
    the first 132 x c tiles for c CTAs per SM, to see how co-resident copies share an SM."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    gm = MFAST_M // 128
    a = torch.randn(MFAST_M, K, device="cuda", dtype=torch.float16)
    rows = []
    for bn in (16, 32, 64, 128):
        smem = (128 + bn) * 64 * 2
        fn = drv.function(cubin, f"copy_mfast_bn{bn}", smem if smem > 48 * 1024 else 0)
        tiles = gm * (MFAST_M // bn)
        b = torch.randn(MFAST_M, K, device="cuda", dtype=torch.float16)
        for c in PER_SM:
            grid = min(tiles, 132 * c)
            a.add_(0)
            b.add_(0)  # rewrite both inputs just before: L2 holds them (32 MB of 50)
            row = {"raster": "m", "bn": bn, "ctas_per_sm": grid / 132, "bytes_per_cta_per_k": (128 + bn) * 64 * 2,
                   **_timed_copy(torch, drv, fn, a, b, bn, gm, grid, smem, stream, reps)}
            rows.append(row)
            print(f"m-fast BN {bn:>3} grid {grid:>4} ({grid / 132:.1f}/SM): {row['cycles_per_k_median']:8.1f} cycles/k "
                  f"(max {row['cycles_per_k_max']:8.1f}), kernel {row['kernel_ms']['median'] * 1e3:9.2f} us", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    # --raster m: the co-residency sweep in the v3 kernel's raster (measure_mfast); n (default): the grid sweep
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--raster", choices=("n", "m"), default="n")
    known, rest = pre.parse_known_args(argv)
    fn = measure_mfast if known.raster == "m" else measure
    argv = rest
    return cubin_bench_exit("thread_copy", __doc__, argv, fn, 10, "JSON lines, one per (BN, grid)",
                                epilog="--raster {n,m}: n (default) the grid sweep, n fastest; m the co-residency sweep in "
                                       "the v3 kernel's raster (m fastest, 2048 x 2048 inputs in L2, 1-6 CTAs per SM)")

if __name__ == "__main__":
    sys.exit(main())
