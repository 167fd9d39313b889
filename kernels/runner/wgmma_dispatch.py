"""When a warpgroup's warps go on after a block of wgmma, on the GPU (issue 16).

kernels/microbench/wgmma_dispatch.cu: each CTA's one warpgroup reads clock64, issues the v4-v6
kernels' block of eight m64nNk16 (uniform descriptors), reads clock64 again (the first
instruction after the block), then commits and waits and reads it a third time.  If the warps
went on as soon as they had handed the instructions over, the second read would come a few
cycles after the first; if each HGMMA holds the in-order warp until the tensor core takes it,
it comes when the last instruction starts -- seven of eight issue intervals.  Grids: one CTA,
one on each of 132 SMs, three on each (the unit shared).  Run on the GPU machine:

    python -m kernels.runner.wgmma_dispatch --cubin B/wgmma_dispatch.sm_90a.cubin --out results.jsonl

One JSON line per (N, grid): cycles from before the block to the instruction after it, and to
the wait's return (median and range over CTAs of each CTA's mean over its repetitions).
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

REPS = 64
NS = (16, 64, 128)
GRIDS = (1, SM_COUNT, 3 * SM_COUNT)
A_BOX = 128 * 128  # wgmma_ptx.cuh's A_BOX: bytes of the A box


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for n in NS:
        smem = A_BOX + n * 128
        fn = drv.function(cubin, f"wgmma_dispatch_n{n}", smem if smem > 48 * 1024 else 0)
        for grid in GRIDS:
            out = torch.zeros(3 * grid, dtype=torch.int64, device="cuda")
            args = [ctypes.c_int(REPS), ctypes.c_void_p(out.data_ptr())]
            t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, args), reps=reps, warmup=2)
            recs = out.view(grid, 3).cpu().tolist()
            went = [r[1] / REPS for r in recs]
            done = [r[2] / REPS for r in recs]
            row = {"n": n, "grid": grid, "reps": REPS, "smem": smem,
                   "went_on_cycles_median": round(statistics.median(went), 1), "went_on_cycles_min": round(min(went), 1),
                   "went_on_cycles_max": round(max(went), 1), "done_cycles_median": round(statistics.median(done), 1),
                   "done_cycles_min": round(min(done), 1), "done_cycles_max": round(max(done), 1), "kernel_ms": t}
            rows.append(row)
            print(f"n {n:>3} grid {grid:>4}: went on after {row['went_on_cycles_median']:7.1f} cycles "
                  f"({row['went_on_cycles_min']:.0f}-{row['went_on_cycles_max']:.0f}), wait returned after "
                  f"{row['done_cycles_median']:7.1f} ({row['done_cycles_min']:.0f}-{row['done_cycles_max']:.0f})", flush=True)
            del out
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("wgmma_dispatch", __doc__, argv, measure, 5, "JSON lines, one per (N, grid)")


if __name__ == "__main__":
    sys.exit(main())
