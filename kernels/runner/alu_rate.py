"""Register math on one SM, on the GPU (issue 16: the elementwise math of Triton kernels).

kernels/microbench/alu_rate.cu runs, per thread, rounds of 8 independent chains of one
instruction -- FFMA, FMUL, FMNMX, MUFU.EX2, F2FP (two fp32 to packed fp16x2), SHFL.BFLY, and the
conversions I2F.F16.S16 (Triton's int8 / int16 -> fp16), PRMT, I2FP.F32.S32 (int32 -> fp32) and
F2I.TRUNC (fp32 -> int32), FRND.FLOOR (math.floor) -- in one CTA of 1-32 warps on one SM, and in one CTA on every SM.
``ex2_i2f`` steps a chain through MUFU.EX2, then I2F.F16.S16 and a PRMT (three instructions a
step: its per-instruction numbers are per step), to tell whether I2F shares the MUFU's pipe.  Run on the GPU machine:

    python -m kernels.runner.alu_rate --cubin B/alu_rate.sm_90a.cubin --out results.jsonl

One JSON line per (instruction, warps, grid): clock64 cycles of the rounds per CTA (median, max
over the CTAs), the cycles one warp took per instruction of its own, and the SM's warp
instructions per cycle.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

KINDS = ("ffma", "fmul", "fmax", "ex2", "cvt_f16x2", "shfl_bfly", "i2f_f16_s16", "prmt", "i2f_f32_s32",
         "f2i_s32_f32", "frnd_floor", "ex2_i2f")
ROUNDS = 256
PER_ROUND = 4 * 8
"""Instructions of the kind per thread per round: 4 unrolled steps of 8 chains."""


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for kind in KINDS:
        fn = drv.function(cubin, f"rate_{kind}", 0)
        for grid, warps in [(1, w) for w in (1, 2, 4, 8, 16, 32)] + [(SM_COUNT, 4), (SM_COUNT, 16)]:
            cycles = torch.zeros(grid, dtype=torch.int64, device="cuda")
            sink = torch.zeros(32 * warps, dtype=torch.float32, device="cuda")
            args = [ctypes.c_void_p(cycles.data_ptr()), ctypes.c_void_p(sink.data_ptr()), ctypes.c_int(ROUNDS)]
            t = T.kernel_time(torch, drv.launcher(fn, grid, 32 * warps, 0, stream, args), reps=reps, warmup=2)
            per_cta = cycles.cpu().tolist()
            med = statistics.median(per_cta)
            n = ROUNDS * PER_ROUND  # instructions per thread, so per warp
            row = {"kind": kind, "grid": grid, "warps": warps, "rounds": ROUNDS, "instructions_per_warp": n,
                   "cycles_median": med, "cycles_max": max(per_cta),
                   "warp_cycles_per_instruction": round(med / n, 3),
                   "sm_warp_instructions_per_cycle": round(warps * n / med, 3), "kernel_ms": t}
            rows.append(row)
            print(f"{kind:<10} grid {grid:>3} warps {warps:>2}: {row['warp_cycles_per_instruction']:7.3f} cycles per "
                  f"instruction per warp, SM {row['sm_warp_instructions_per_cycle']:6.3f} warp instr/clk", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("alu_rate", __doc__, argv, measure, 5, "JSON lines, one per (instruction, warps, grid)")


if __name__ == "__main__":
    sys.exit(main())
