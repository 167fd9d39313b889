"""The v3 kernel at M = 128, BLK_N 16 with its CTAs placed apart or started apart, on the GPU
(issue 16: why two or more of its CTAs run 1.7x slower than one).

kernels/microbench/v3_lines.py builds the kernel as TVM generates it (``v3_lines_original``) and
variants that change only its prologue (``SPREAD``: working CTAs ``SPREAD`` blocks apart, the
blocks between them exiting at once; ``STAGGER``: odd working CTAs start that many cycles late;
each working CTA writes its SM id).  This times each kernel-only with 1, 2 and 8 working CTAs,
inputs in L2 (written once, before the first launch), and checks the working tiles' product.
Run on the GPU machine:

    python -m kernels.runner.v3_lines --cubin B/v3_lines_original.sm_90a.cubin --out results.jsonl

(``--cubin`` names any one of the cubins; the others are read from beside it.)  One JSON line per
(variant, working CTAs): grid, SM ids, kernel-only time and the cycles per k-iteration it
implies (``(time - launch) x clock / k-tiles``).
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

from . import timing as T
from .launch_cost import Driver, folder_bench_exit
from .v3_parts import CLOCK_GHZ, DIAG_WORDS, LAUNCH_US

M, N, K, BLK_N = 128, 128, 2048, 16  # kernels/microbench/v3_lines.py SHAPE
VARIANTS = (("original", 1, 0), ("s1_t0", 1, 0), ("s1_t1800", 1, 1800), ("s2_t0", 2, 0), ("s4_t0", 4, 0), ("s66_t0", 66, 0))
"""(cubin suffix, SPREAD, STAGGER): kernels/microbench/v3_lines.py VARIANTS, and the kernel itself."""
WORKING = (1, 2, 8)
SMEM = 19_456
"""Dynamic shared memory per CTA: ``protosim.engine.machine.smem_bytes`` of the v3 builder at
BLK_N 16 (barriers, then A and B)."""


def measure(torch, folder: Path, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    A = torch.randn(M, K, dtype=torch.float16, device="cuda")
    B = torch.randn(N, K, dtype=torch.float16, device="cuda")
    ref = A.float() @ B.float().T
    rows = []
    for suffix, spread, stagger in VARIANTS:
        cubin = folder / f"v3_lines_{suffix}.sm_90a.cubin"
        fn = drv.function(cubin.read_bytes(), "kernel_kernel", SMEM)
        for working in WORKING:
            D = torch.zeros(M, N, dtype=torch.float16, device="cuda")
            diag = torch.full((DIAG_WORDS,), -1, dtype=torch.int32, device="cuda")
            diag[:8] = 0
            args = [ctypes.c_void_p(A.data_ptr()), ctypes.c_void_p(B.data_ptr()), ctypes.c_void_p(D.data_ptr()),
                    ctypes.c_void_p(diag.data_ptr()), ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(1),
                    ctypes.c_int64(1 << 40)]
            grid = working * spread
            t = T.kernel_time(torch, drv.launcher(fn, grid, 128, SMEM, stream, args), reps=reps, warmup=2)
            cols = slice(0, working * BLK_N)
            err = float((D[:, cols].float() - ref[:, cols]).abs().max().item())
            k_iter = (t["median"] * 1e3 - LAUNCH_US) * CLOCK_GHZ * 1e3 / (K // 64)
            smids = [int(x) for x in diag[8:8 + working].tolist()] if suffix != "original" else None
            row = {"config": {"M": M, "N": N, "K": K, "BLK_N": BLK_N}, "variant": suffix, "spread": spread,
                   "stagger_cycles": stagger, "working_ctas": working, "grid": grid, "smids": smids,
                   "diag_timeouts": int(diag[0].item()), "max_abs_error": err, "kernel_ms": t,
                   "cycles_per_k_iteration": round(k_iter, 1)}
            rows.append(row)
            print(f"v3_lines {suffix:<9} working {working} (grid {grid:>3}) SMs {smids}: {t['median'] * 1e3:7.1f} us, "
                  f"{k_iter:6.0f} cycles per k-iteration, max |error| {err:.3g}", flush=True)
            del D, diag
    return rows


def main(argv: list[str] | None = None) -> int:
    return folder_bench_exit("v3_lines", __doc__, argv, measure, 10, "JSON lines, one per (variant, working CTAs)")


if __name__ == "__main__":
    sys.exit(main())
