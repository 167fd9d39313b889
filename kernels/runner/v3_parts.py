"""The seed's v3 kernel with parts switched off, on the GPU (issue 16: what slows co-resident v3 CTAs).

kernels/microbench/v3_parts.py builds, per config, the v3 kernel as TVM generates it (``p3``),
without its wgmma block (``p1``: only the copy) and without its copy (``p2``: only the MMA);
this times each kernel-only, inputs in L2 (written once before the
first launch, and written again before every repetition), with one CTA per SM (128 CTAs) and with two to four per SM (256 / 512 CTAs).  Run on
the GPU machine:

    python -m kernels.runner.v3_parts --cubin B/v3_parts_1024x1024x4096_n64_p3.sm_90a.cubin --out results.jsonl

(``--cubin`` names any one of the cubins; the others are read from beside it.)  One JSON line per
(config, parts, inputs): grid, CTAs per SM, kernel-only time and the cycles per k-iteration it implies for
one CTA (``(time - launch) x clock / k-tiles``, every CTA of the grid on the GPU at once).

``--forced`` (:func:`measure_forced`) runs the kernel as built of the ``--set forced`` grids instead,
each at its own shared memory and padded to allow at most each smaller count of CTAs an SM:

    python -m kernels.runner.v3_parts --forced --cubin B/v3_parts_4096x4096x1024_n128_p3.sm_90a.cubin --out forced.jsonl
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

from . import timing as T
from .launch_cost import Driver, folder_bench_exit
from .tma_stream import SM_COUNT
from kernels.microbench.v3_parts import CTAS_PER_SM, FORCED_CONFIGS, forced_plan, forced_smem  # no tvm at import

CONFIGS = ((1024, 1024, 4096, 64), (2048, 2048, 4096, 64), (1024, 2048, 4096, 128), (2048, 2048, 4096, 128))
SMEM = {64: 25_600, 128: 33_792}
"""Dynamic shared memory per CTA: ``protosim.engine.machine.smem_bytes`` of the v3 builder (the
seed's T.SMEMPool layout: barriers, then A and B)."""
DIAG_WORDS = 16  # kernels/spec.py
CLOCK_GHZ = 1.98
LAUNCH_US = 3.0  # protosim/arch/h200.toml launch_fixed_us


def kernel_args(A, B, D, diag) -> list:
    """The v3 kernel's parameters: A, B, D, the diag words, no delays, the watchdog budget."""
    return [ctypes.c_void_p(A.data_ptr()), ctypes.c_void_p(B.data_ptr()), ctypes.c_void_p(D.data_ptr()),
            ctypes.c_void_p(diag.data_ptr()), ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(1), ctypes.c_int64(1 << 40)]


def operands(torch, m: int, n: int, k: int):
    return (torch.randn(m, k, dtype=torch.float16, device="cuda"), torch.randn(n, k, dtype=torch.float16, device="cuda"),
            torch.empty(m, n, dtype=torch.float16, device="cuda"), torch.zeros(DIAG_WORDS, dtype=torch.int32, device="cuda"))


def measure(torch, folder: Path, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for m, n, k, bn in CONFIGS:
        grid = (m // 128) * (n // bn)
        A, B, D, diag = operands(torch, m, n, k)
        for parts in (3, 2, 1):
            cubin = folder / f"v3_parts_{m}x{n}x{k}_n{bn}_p{parts}.sm_90a.cubin"
            fn = drv.function(cubin.read_bytes(), "kernel_kernel", SMEM[bn])
            args = kernel_args(A, B, D, diag)

            def rewrite_inputs() -> None:  # written again before every repetition
                A.add_(0)
                B.add_(0)

            for inputs, before in (("written once", None), ("rewritten", rewrite_inputs)):
                t = T.kernel_time(torch, drv.launcher(fn, grid, 128, SMEM[bn], stream, args), reps=reps, warmup=2,
                                  before=before)
                per_sm = min(CTAS_PER_SM[bn], -(-grid // SM_COUNT))
                k_iter = (t["median"] * 1e3 - LAUNCH_US) * CLOCK_GHZ * 1e3 / (k // 64)
                row = {"config": {"M": m, "N": n, "K": k, "BLK_N": bn}, "parts": parts,
                       "parts_kept": {3: "copy+mma", 2: "mma", 1: "copy"}[parts], "inputs": inputs, "grid": grid,
                       "ctas_per_sm": per_sm, "diag_timeouts": int(diag[0].item()), "kernel_ms": t,
                       "cycles_per_k_iteration_per_cta": round(k_iter, 1)}
                if parts == 3:  # the product is what the kernel computes
                    ref = (A.float() @ B.float().T)
                    row["max_abs_error"] = float((D.float() - ref).abs().max().item())
                rows.append(row)
                print(f"v3 {m}x{n}x{k} n{bn} grid {grid:>4} (~{per_sm}/SM) parts {row['parts_kept']:<8} inputs {inputs:<12}: "
                      f"{t['median'] * 1e3:8.1f} us, {k_iter:7.0f} cycles per k-iteration per CTA", flush=True)
        del A, B, D, diag
    return rows


def measure_forced(torch, folder: Path, reps: int) -> list[dict]:
    """--forced: the kernel as built (PARTS 3) of every :data:`FORCED_CONFIGS` grid in ``folder``, at
    its own shared memory and padded to allow at most each smaller count of CTAs an SM
    (:func:`forced_plan`, :func:`forced_smem`), inputs in L2 (written once before the first launch)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for m, n, k, bn in FORCED_CONFIGS:
        cubin = folder / f"v3_parts_{m}x{n}x{k}_n{bn}_p3.sm_90a.cubin"
        if not cubin.is_file():  # a run may carry only some of the grids
            continue
        grid = (m // 128) * (n // bn)
        A, B, D, diag = operands(torch, m, n, k)
        ref = A.float() @ B.float().T
        fn = drv.function(cubin.read_bytes(), "kernel_kernel", forced_smem(1))  # the most any run asks for
        for per_sm in forced_plan(bn, grid, SM_COUNT):
            smem = SMEM[bn] if per_sm is None else forced_smem(per_sm)
            D.fill_(float("nan"))
            diag.zero_()
            t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, kernel_args(A, B, D, diag)), reps=reps, warmup=2)
            torch.cuda.synchronize()
            err = float((D.float() - ref).abs().max().item())
            rows.append({"config": {"M": m, "N": n, "K": k, "BLK_N": bn}, "parts": 3, "grid": grid, "smem": smem,
                         "forced_ctas_per_sm": per_sm, "inputs": "written once", "kernel_ms": t,
                         "max_abs_error": err if err == err else "nan", "diag_timeouts": int(diag[0].item())})
            print(f"v3 {m}x{n}x{k} n{bn} grid {grid:>4}: {per_sm or 'own'} CTAs an SM ({smem} B): "
                  f"{t['median'] * 1e3:8.1f} us, max |error| {err:.3f}", flush=True)
        del A, B, D, diag, ref
    return rows


def main(argv: list[str] | None = None) -> int:
    from .launch_cost import take_flag

    forced, argv = take_flag(argv, "--forced")
    if forced:
        return folder_bench_exit("v3_parts", __doc__, argv, measure_forced, 5, "JSON lines, one per (grid, CTAs an SM)")
    return folder_bench_exit("v3_parts", __doc__, argv, measure, 5, "JSON lines, one per (config, parts)")


if __name__ == "__main__":
    sys.exit(main())
