"""How an SM's tensor core shares itself between CTAs' wgmma blocks, on the GPU (issue 16).

kernels/microbench/wgmma_share.cu: the CTAs of one SM (1-3, one warpgroup each) start the v4-v6
kernels' block of eight m64nNk16 at offsets ``rank * stagger`` cycles from a common instant (the
SM's clock64), commit, wait.  The replay serves wgmma blocks in order, a whole block at a time:
the first block finishes as if alone (rank 0's time does not depend on the others), the second
after it.  If the unit interleaves the blocks' instructions, rank 0 is slowed by every block that
starts while its own is in flight.  Run on the GPU machine:

    python -m kernels.runner.wgmma_share --cubin B/wgmma_share.sm_90a.cubin --out results.jsonl

One JSON line per (N, CTAs an SM, stagger): for each rank, the median over SMs of its mean start
and mean wait return, in cycles from the common instant; SMs that did not get exactly that many
CTAs are counted and left out.
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

REPS = 34
"""Repetitions a launch (the kernel's first WARMUP = 2 are not summed)."""
TIMED = REPS - 2
NS = (16, 64, 128)
PER_SM = (1, 2, 3)
STAGGERS = (0, 64, 128, 256, 512)
A_BOX = 128 * 128  # wgmma_ptx.cuh's A_BOX: bytes of the A box
SMID_SLOTS = 256
"""Entries of the per-SM rank counters (above any %smid of the chip)."""


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for n in NS:
        smem = A_BOX + n * 128
        fn = drv.function(cubin, f"wgmma_share_n{n}", smem if smem > 48 * 1024 else 0)
        for per_sm in PER_SM:
            for stagger in (STAGGERS if per_sm > 1 else (0,)):
                grid = per_sm * SM_COUNT
                ranks = torch.zeros(SMID_SLOTS, dtype=torch.int32, device="cuda")
                starts = torch.zeros(SMID_SLOTS * REPS, dtype=torch.int64, device="cuda")
                out = torch.zeros(4 * grid, dtype=torch.int64, device="cuda")
                args = [ctypes.c_int(REPS), ctypes.c_int(stagger), ctypes.c_void_p(ranks.data_ptr()),
                        ctypes.c_void_p(starts.data_ptr()), ctypes.c_void_p(out.data_ptr())]
                drv.launcher(fn, grid, 128, smem, stream, args)()
                torch.cuda.synchronize()
                counts = ranks.cpu().tolist()
                recs = out.view(grid, 4).cpu().tolist()
                good = [r for r in recs if counts[r[0]] == per_sm]
                row = {"n": n, "per_sm": per_sm, "stagger": stagger, "grid": grid, "reps_timed": TIMED, "smem": smem,
                       "sms": len({r[0] for r in good}),
                       "sms_other_count": len({r[0] for r in recs if counts[r[0]] != per_sm}), "ranks": []}
                for rank in range(per_sm):
                    mine = [r for r in good if r[1] == rank]
                    began = [r[2] / TIMED for r in mine]
                    done = [r[3] / TIMED for r in mine]
                    if not mine:
                        continue
                    row["ranks"].append({
                        "rank": rank, "ctas": len(mine),
                        "start_median": round(statistics.median(began), 1),
                        "done_median": round(statistics.median(done), 1),
                        "done_min": round(min(done), 1), "done_max": round(max(done), 1),
                        "block_median": round(statistics.median(d - b for d, b in zip(done, began)), 1)})
                rows.append(row)
                text = "  ".join(f"r{x['rank']} start {x['start_median']:6.0f} done {x['done_median']:6.0f} "
                                 f"(block {x['block_median']:5.0f})" for x in row["ranks"])
                print(f"n {n:>3} {per_sm}/SM stagger {stagger:>3} ({row['sms']} SMs, {row['sms_other_count']} other): {text}",
                      flush=True)
                del ranks, starts, out
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("wgmma_share", __doc__, argv, measure, 1, "JSON lines, one per (N, CTAs an SM, stagger)")


if __name__ == "__main__":
    sys.exit(main())
