"""Register math of two kinds mixed, on the GPU (issue 16: whether a sub-partition's pipes overlap).

kernels/microbench/alu_mix.cu runs, per thread, rounds of 8 independent chains whose every step
is one instruction of a first kind (MUFU.EX2 or FMNMX) then K of a second (FFMA or FMNMX), in one
CTA of 4-32 warps on one SM and in one CTA on every SM.  Run on the GPU machine:

    python -m kernels.runner.alu_mix --cubin B/alu_mix.sm_90a.cubin --out results.jsonl

One JSON line per (mix, warps, grid): clock64 cycles of the rounds per CTA (median, max over the
CTAs) and the cycles one step (1 + K instructions) took per warp, beside what alu_rate's
one-kind rates give if the pipes take turns (the sum) and if they overlap (the largest).
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

ALONE = {"ex2": 8.09, "ffma": 1.13, "fmax": 2.1}
"""Cycles per warp instruction per sub-partition of each kind alone (alu_rate.cu on this H200:
results/silicon/microbench/2026-12-01_h200_alu_rate.md)."""
MIXES = [("ex2", "ffma", k) for k in (1, 2, 4, 8, 16)] + [("ex2", "fmax", k) for k in (1, 2, 4)] \
    + [("fmax", "ffma", k) for k in (1, 2, 4)]
ROUNDS = 256
STEPS = 2 * 8
"""Steps per thread per round: 2 unrolled steps of 8 chains."""


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for head, tail, k in MIXES:
        fn = drv.function(cubin, f"mix_{head}_{tail}{k}", 0)
        for grid, warps in [(1, w) for w in (4, 8, 16, 32)] + [(SM_COUNT, 16)]:
            cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
            sink = torch.zeros(32 * warps, dtype=torch.float32, device="cuda")
            args = [ctypes.c_void_p(cycles.data_ptr()), ctypes.c_void_p(sink.data_ptr()), ctypes.c_int(ROUNDS)]
            t = T.kernel_time(torch, drv.launcher(fn, grid, 32 * warps, 0, stream, args), reps=reps, warmup=2)
            per_cta = cycles.cpu().tolist()
            med = statistics.median(per_cta)
            steps = ROUNDS * STEPS  # per thread, so per warp
            per_sp = max(1, warps // 4)  # warps on each of the SM's 4 schedulers
            row = {"mix": f"{head}+{k}x{tail}", "head": head, "tail": tail, "k": k, "grid": grid, "warps": warps,
                   "rounds": ROUNDS, "steps_per_warp": steps, "cycles_median": med, "cycles_max": max(per_cta),
                   "warp_cycles_per_step": round(med / steps, 3),
                   "subpartition_cycles_per_step": round(med / steps / per_sp, 3),
                   "alone_sum": round(ALONE[head] + k * ALONE[tail], 3),
                   "alone_max": round(max(ALONE[head], k * ALONE[tail], 1 + k), 3), "kernel_ms": t}
            rows.append(row)
            print(f"{row['mix']:<12} grid {grid:>3} warps {warps:>2}: {row['subpartition_cycles_per_step']:7.3f} "
                  f"cycles per step per scheduler (alone: sum {row['alone_sum']}, max {row['alone_max']})", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("alu_mix", __doc__, argv, measure, 5, "JSON lines, one per (mix, warps, grid)")


if __name__ == "__main__":
    sys.exit(main())
