"""Reads of lines other SMs read a little earlier, on the GPU (issue 16).

kernels/microbench/l2_stagger.cu: 132 CTAs, one an SM, the first ``active`` of them flooding.
After a grid barrier flooder b -- rank ``b % group`` of group ``b // group`` -- spins ``rank x
stagger`` cycles, then loads its group's 192 KiB (six 32 KiB bulk loads) from the L2.  Group 1:
each its own bytes; group G, stagger 0: G SMs read the same bytes at once (l2_queue's shared
floods); stagger S: each reads them S cycles after the rank before it.  Run on the GPU machine:

    python -m kernels.runner.l2_stagger --cubin B/l2_stagger.sm_90a.cubin --out results.jsonl

One JSON line per (active, group, stagger): for each rank, the median over its flooders of the
cycles from its first issue to its last byte ("took") and from the barrier to its last byte
("landed"), each the median over ``--reps`` launches.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

SMEM = 200 * 1024
"""Dynamic shared memory per CTA: more than half an SM's, so one CTA an SM (as l2_queue's)."""
CHUNK, LOADS = 32768, 6
"""A flooder's bytes: six 32 KiB bulk loads (192 KiB), as l2_queue's flood."""
MODES = ([(1, 1, 0), (SM_COUNT // 2, 1, 0), (SM_COUNT, 1, 0)]
         + [(SM_COUNT, g, s) for g in (2, 4) for s in (0, 250, 1000, 2500, 5000, 10000)]
         + [(SM_COUNT, 32, s) for s in (0, 250, 1000)])
"""(active, group, stagger): one SM alone, half the chip and the whole chip each reading its own
bytes; then pairs and fours of SMs offset by 0 to 10,000 cycles; groups of 32 slightly offset."""


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "l2_stagger", SMEM)
    src = torch.randn(SM_COUNT * LOADS * CHUNK // 2, device="cuda", dtype=torch.float16)
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(3 * SM_COUNT, dtype=torch.int64, device="cuda")
    rows = []
    for active, group, stagger in MODES:
        took: dict[int, list[float]] = {}
        landed: dict[int, list[float]] = {}
        for _ in range(reps):
            src.add_(0)  # the whole source written just before: in L2
            counter.zero_()
            out.zero_()
            args = [ctypes.c_void_p(src.data_ptr()), ctypes.c_int(CHUNK), ctypes.c_int(LOADS), ctypes.c_int(group),
                    ctypes.c_int(stagger), ctypes.c_int(active), ctypes.c_void_p(counter.data_ptr()),
                    ctypes.c_void_p(out.data_ptr())]
            drv.launcher(fn, SM_COUNT, 32, SMEM, stream, args)()
            torch.cuda.synchronize()
            o = out.cpu().tolist()
            for rank in range(group):
                mine = [b for b in range(active) if b % group == rank]
                took.setdefault(rank, []).append(statistics.median(o[3 * b + 2] - o[3 * b] for b in mine))
                landed.setdefault(rank, []).append(statistics.median(o[3 * b + 2] for b in mine))
        ranks = range(group) if group <= 4 else (0, 1, group // 2, group - 1)
        row = {"active": active, "group": group, "stagger": stagger, "chunk": CHUNK, "loads": LOADS, "reps": reps,
               "distinct_bytes": -(-active // group) * LOADS * CHUNK, "requested_bytes": active * LOADS * CHUNK,
               "took_median": {r: statistics.median(took[r]) for r in ranks},
               "landed_median": {r: statistics.median(landed[r]) for r in ranks},
               "took_all_ranks_median": statistics.median(statistics.median(took[r]) for r in range(group))}
        print(f"active {active:>3}, group {group:>2}, stagger {stagger:>5}: took by rank "
              + " ".join(f"{r}:{row['took_median'][r]:.0f}" for r in ranks)
              + "; landed by rank " + " ".join(f"{r}:{row['landed_median'][r]:.0f}" for r in ranks), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("l2_stagger", __doc__, argv, measure, 9, "JSON lines, one per (active, group, stagger)")


if __name__ == "__main__":
    sys.exit(main())
