"""The seed's v2/v3 thread copy alone, on the GPU (issue 16, part 3: a microbenchmark).

kernels/microbench/thread_copy.cu is the copy loop of kernels/tirx/hopper.py ``thread_copy``
as TVM lowers it (128 threads; per k-iteration 64 + BN/2 two-byte ``ld.global.nc`` per thread,
8 per unrolled iteration, each stored into the 128B-swizzled tile; then a barrier), with no
MMA.  Each CTA reads ``clock64`` around its whole K loop; the kernel is also timed kernel-only.
Run on the GPU machine:

    python -m kernels.runner.thread_copy --cubin B/thread_copy.sm_90a.cubin --out results.jsonl

One JSON line per (BN, grid): cycles per k-iteration (median and max over the CTAs) and the
kernel-only time.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, run_cubin_bench

K = 4096
GRIDS = (1, 8, 132, 264, 792, 1024)
"""One CTA alone; one per SM on 8 and on every SM; 2, 6 and ~7.8 per SM (v3 at 4096^2 is 1024)."""
GN = 32  # tiles per row of the grid: A rows up to 32 * 128 = 4096, B rows up to 32 * BN


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
            cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
            args = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_int(K), ctypes.c_int(GN),
                    ctypes.c_void_p(cycles.data_ptr())]
            t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, args), reps=reps, warmup=2)
            per_k = [c / (K // 64) for c in cycles.cpu().tolist()]
            row = {"bn": bn, "grid": grid, "threads": 128, "smem": smem, "k_iterations": K // 64,
                   "loads_per_thread_per_k": 64 + bn // 2, "cycles_per_k_median": round(statistics.median(per_k), 1),
                   "cycles_per_k_max": round(max(per_k), 1), "kernel_ms": t}
            rows.append(row)
            print(f"BN {bn:>3} grid {grid:>4}: {row['cycles_per_k_median']:8.1f} cycles/k-iteration (max {row['cycles_per_k_max']:8.1f}),"
                  f" kernel {t['median'] * 1e3:9.2f} us", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return 0 if run_cubin_bench("thread_copy", __doc__, argv, measure, 10, "JSON lines, one per (BN, grid)") is not None else 2

if __name__ == "__main__":
    sys.exit(main())
