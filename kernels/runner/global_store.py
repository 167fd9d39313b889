"""The thread-copy steps' epilogue alone, on the GPU (issue 16: what v2/v3's direct stores cost).

kernels/microbench/global_store.cu writes 128 x BN fp16 tiles of a row-major D from 128 threads
per CTA in the wgmma accumulator fragment's pattern -- ``u16``: the 2-byte ``STG.E.U16`` per
element the seed's v2/v3 epilogue compiles to (8 bytes in each of 8 sectors per warp
instruction), ``u32``: 4 bytes per element pair, ``coalesced``: 16 bytes per lane, consecutive
(the control).  Grids: one CTA (the SM's own rate, ``reps`` tiles in a row), one CTA per SM, and
the v3 GEMMs' whole outputs (1024^2 to 4096^2, one tile per CTA, the kernel's m-fastest raster).
Run on the GPU machine:

    python -m kernels.runner.global_store --cubin B/global_store.sm_90a.cubin --out results.jsonl

One JSON line per (mode, BN, grid, reps): kernel-only time, clock64 cycles per CTA to the last
store issued and to a ``__threadfence`` after them (median, max over the CTAs), and the warp
store instructions and 32-byte sectors each tile takes.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

MODES = ("u16", "u32", "coalesced")


def shape(mode: str, bn: int) -> tuple[int, int]:
    """(warp store instructions, 32-byte sectors written) for one 128 x BN tile."""
    if mode == "u16":  # per warp: 2 halves x BN/8 column groups x 4 stores; each 8 rows x 8 bytes
        return 4 * bn, 4 * bn * 8
    if mode == "u32":  # 2 stores per column group; each 8 rows x 16 bytes (one sector per row)
        return 2 * bn, 2 * bn * 8
    return 128 * bn * 2 // 512, 128 * bn * 2 // 32  # 16 bytes per lane: 512 bytes per instruction


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for bn in (16, 64, 128):
        runs = [(1, 1, 64), (1, 1, 1), (SM_COUNT, 1, 16), (SM_COUNT, 1, 1)]
        runs += [(size // 128, size // bn, 1) for size in (1024, 2048, 4096)]  # (gm, gn, reps): a GEMM's output
        for mode in MODES:
            fn = drv.function(cubin, f"{mode}_bn{bn}", 0)
            for gm, gn, r in runs:
                grid = gm * gn
                ld = gn * bn
                D = torch.empty((gm * 128, ld), dtype=torch.float16, device="cuda")
                cycles = torch.zeros(2 * grid, dtype=torch.int64, device="cuda")
                args = [ctypes.c_void_p(D.data_ptr()), ctypes.c_int(ld), ctypes.c_int(gm),
                        ctypes.c_void_p(cycles.data_ptr()), ctypes.c_int(r)]
                t = T.kernel_time(torch, drv.launcher(fn, grid, 128, 0, stream, args), reps=reps, warmup=2)
                c = cycles.view(grid, 2).cpu().tolist()
                issue = [x[0] / r for x in c]
                drain = [x[1] / r for x in c]
                insts, sectors = shape(mode, bn)
                row = {"mode": mode, "bn": bn, "gm": gm, "gn": gn, "grid": grid, "reps": r,
                       "bytes_per_tile": 128 * bn * 2, "warp_stores_per_tile": insts, "sectors_per_tile": sectors,
                       "issue_cycles_median": round(statistics.median(issue), 1), "issue_cycles_max": round(max(issue), 1),
                       "drain_cycles_median": round(statistics.median(drain), 1), "drain_cycles_max": round(max(drain), 1),
                       "kernel_ms": t}
                rows.append(row)
                print(f"{mode:<9} BN {bn:>3} grid {grid:>5} ({gm}x{gn}) reps {r:>2}: issue {row['issue_cycles_median']:8.1f} "
                      f"drain {row['drain_cycles_median']:8.1f} (max {row['drain_cycles_max']:8.1f}) cycles/tile, "
                      f"kernel {t['median'] * 1e3:8.2f} us", flush=True)
                del D, cycles
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("global_store", __doc__, argv, measure, 10,
                            "JSON lines, one per (mode, BN, grid, reps)")


if __name__ == "__main__":
    sys.exit(main())
