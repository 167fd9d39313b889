"""The v5 k-loop's control path without its MMA, on the GPU (issue 16: v5/v6 run ~15% longer
per k-iteration than the model, and not because of the TMA instruction).

kernels/microbench/refill_loop.cu runs v5's loop around its wgmma block: 128 threads wait on the
stage's full barrier, spin ``mma_cycles`` in place of the wgmma block, join (mode 0: thread 0
arrives on an mbarrier every thread waits on, as v5 does; mode 1: ``__syncthreads``; mode 2: no
join), then thread 0 refills the stage (two tensor loads and ``arrive.expect_tx``; or, refill
``arrive``, a plain arrive that completes the stage's next phase with no data).  Run on the
GPU machine:

    python -m kernels.runner.refill_loop --cubin B/refill_loop.sm_90a.cubin --out results.jsonl

One JSON line per (mode, depth, mma_cycles, grid): clock64 cycles per k-iteration (median over
the CTAs) and that less ``mma_cycles`` -- the control path.
"""

from __future__ import annotations

import ctypes
import itertools
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_issue import ROWS, TensorMap

MODES = {0: "mbarrier join (v5)", 1: "__syncthreads join", 2: "no join"}
REFILLS = {0: "TMA", 1: "arrive"}
"""Thread 0's refill: two tensor loads and arrive.expect_tx, or a plain arrive (no data, no TMA)."""
KT, KWRAP = 256, 8
MMA_CYCLES = 773
"""v5's 128x128x64 wgmma block, issue to wait_group 0 (the GEMM traces; the profile's mma costs)."""


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    a = torch.randn(ROWS, KWRAP * 64, device="cuda", dtype=torch.float16)
    b = torch.randn(ROWS, KWRAP * 64, device="cuda", dtype=torch.float16)
    a_map, b_map = TensorMap(drv, a.data_ptr(), KWRAP * 64, ROWS), TensorMap(drv, b.data_ptr(), KWRAP * 64, ROWS)
    rows = []
    for depth in (2, 4):
        smem = depth * 32768
        fn = drv.function(cubin, "refill_loop", smem if smem > 48 * 1024 else 0)
        for refill, spin, mode in itertools.product(REFILLS, (0, MMA_CYCLES), MODES):
            for grid in (1, 132) if refill == 0 else (1,):
                cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
                args = [a_map.value, b_map.value, ctypes.c_int(KT), ctypes.c_int(KWRAP), ctypes.c_int(depth),
                        ctypes.c_int(mode), ctypes.c_int(spin), ctypes.c_int(refill), ctypes.c_void_p(cycles.data_ptr())]
                t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, args), reps=reps, warmup=2,
                                  before=lambda: (a.add_(0), b.add_(0)))
                per_k = statistics.median(c / KT for c in cycles.cpu().tolist())
                row = {"mode": mode, "what": MODES[mode], "refill": REFILLS[refill], "depth": depth, "mma_cycles": spin,
                       "grid": grid, "kt": KT, "cycles_per_k_median": round(per_k, 1),
                       "control_cycles_per_k": round(per_k - spin, 1), "kernel_ms": t}
                rows.append(row)
                print(f"{MODES[mode]:<20} {REFILLS[refill]:<7} depth {depth} spin {spin:>4} grid {grid:>3}: {per_k:8.1f} "
                      f"cycles/k, control {per_k - spin:7.1f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("refill_loop", __doc__, argv, measure, 10,
                                "JSON lines, one per (depth, refill, mma_cycles, mode, grid)")


if __name__ == "__main__":
    sys.exit(main())
