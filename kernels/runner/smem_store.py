"""The TMA steps' epilogue store alone, on the GPU (issue 16: shared-memory bank conflicts).

kernels/microbench/smem_store.cu writes a BLK_M = 128 x BN fp16 tile from 128 threads, either in
the wgmma accumulator fragment's pattern that the Hopper epilogue uses (rows BN * 2 bytes apart:
lanes l and l + 4 share a bank when a row is a multiple of 128 bytes) or with consecutive lanes
on consecutive words (the control).  ``reps`` = 2 is one epilogue (the two m64 halves of a
128-row tile).  Run on the GPU machine:

    python -m kernels.runner.smem_store --cubin B/smem_store.sm_90a.cubin --out results.jsonl

One JSON line per (pattern, BN, grid, reps): clock64 cycles per CTA per repetition (median, max
over the CTAs) -- one CTA alone, and 1-3 CTAs on every SM.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT, smem_for


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for bn in (16, 32, 64, 128):
        for pattern in ("fragment", "conflict_free"):
            for grid, per_sm, r in ((1, 1, 2), (1, 1, 64), (SM_COUNT, 1, 64), (2 * SM_COUNT, 2, 64), (3 * SM_COUNT, 3, 64)):
                smem = smem_for(per_sm) if grid > 1 else 128 * bn * 2
                fn = drv.function(cubin, f"{pattern}_bn{bn}", smem if smem > 48 * 1024 else 0)
                cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
                args = [ctypes.c_void_p(cycles.data_ptr()), ctypes.c_int(r)]
                t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, args), reps=reps, warmup=2)
                per = [c / r for c in cycles.cpu().tolist()]
                row = {"pattern": pattern, "bn": bn, "grid": grid, "ctas_per_sm": per_sm, "reps": r, "smem": smem,
                       "stores_per_thread_per_rep": bn // 4, "bytes_per_rep": 128 * bn * 2 // 2,
                       "cycles_per_rep_median": round(statistics.median(per), 1), "cycles_per_rep_max": round(max(per), 1),
                       "kernel_ms": t}
                rows.append(row)
                print(f"{pattern:<13} BN {bn:>3} grid {grid:>4} ({per_sm}/SM) reps {r:>3}: {row['cycles_per_rep_median']:8.1f} "
                      f"cycles/rep (max {row['cycles_per_rep_max']:8.1f}), kernel {t['median'] * 1e3:8.2f} us", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("smem_store", __doc__, argv, measure, 10,
                                "JSON lines, one per (pattern, BN, grid, reps)")


if __name__ == "__main__":
    sys.exit(main())
