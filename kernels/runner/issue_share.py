"""A warp's instruction stream beside other CTAs' warps on its SM, on the GPU (issue 16).

kernels/microbench/issue_share.cu: c CTAs an SM (1-4, set by the shared memory asked for), one
warpgroup each; rank 0's thread 0 times ``N`` iterations of eight independent integer
multiply-adds while every other warp of the SM does nothing (mode 0), the same stream (1), spins on
``try_wait`` reading a stop flag (2), or does that with a clock check (3). Run on the GPU machine:

    python -m kernels.runner.issue_share --cubin B/issue_share.sm_90a.cubin --out results.jsonl

One JSON line per (mode, CTAs an SM): rank 0's stream cycles (median over the SMs that got exactly
c CTAs, median over launches) and cycles an iteration.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

N = 2000
"""Iterations of the timed stream (eight IMADs and the loop's own three instructions each)."""
SMEM = {1: 200 * 1024, 2: 100 * 1024, 3: 68 * 1024, 4: 50 * 1024}
"""Dynamic shared memory that fits exactly c CTAs an SM (228 KiB an SM, 1 KiB reserved a CTA)."""
MODES = {0: "others idle", 1: "others issue the same stream", 2: "others spin on try_wait", 3: "others spin, clock check"}


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    ranks = torch.zeros(SM_COUNT + 64, dtype=torch.int32, device="cuda")
    stop = torch.zeros(SM_COUNT + 64, dtype=torch.int32, device="cuda")
    out = torch.zeros(2 * (SM_COUNT + 64), dtype=torch.int64, device="cuda")
    rows = []
    for per_sm, smem in SMEM.items():
        fn = drv.function(cubin, "issue_share", smem)
        for mode in MODES:
            if mode and per_sm == 1:
                continue
            cycles = []
            counts = []
            for _ in range(reps):
                ranks.zero_()
                stop.zero_()
                out.zero_()
                args = [ctypes.c_int(N), ctypes.c_int(mode), ctypes.c_void_p(ranks.data_ptr()),
                        ctypes.c_void_p(stop.data_ptr()), ctypes.c_void_p(out.data_ptr())]
                drv.launcher(fn, SM_COUNT * per_sm, 128, smem, stream, args)()
                torch.cuda.synchronize()
                o = out.view(-1, 2).cpu().tolist()
                got = ranks.cpu().tolist()
                mine = [o[s][0] for s in range(len(got)) if got[s] == per_sm and o[s][0] > 0]
                counts.append(len(mine))
                if mine:
                    cycles.append(statistics.median(mine))
            row = {"mode": mode, "what": MODES[mode], "per_sm": per_sm, "n": N, "reps": reps,
                   "sms_measured_median": statistics.median(counts),
                   "stream_cycles_median": statistics.median(cycles) if cycles else None}
            row["cycles_per_iteration"] = row["stream_cycles_median"] / N if cycles else None
            rows.append(row)
            print(f"{per_sm} an SM, {MODES[mode]:<28}: {row['stream_cycles_median']} cycles "
                  f"({row['cycles_per_iteration']:.2f} an iteration) on {row['sms_measured_median']} SMs", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("issue_share", __doc__, argv, measure, 5, "JSON lines, one per (mode, CTAs an SM)")


if __name__ == "__main__":
    sys.exit(main())
