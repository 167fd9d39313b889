"""Which L2 partition each SM reads through, on the GPU (issue 16: the SM -> L2 side map).

kernels/microbench/l2_side_map.cu: one CTA an SM, one at a time; CTA 0 reads a set of lines, then
target CTA t reads them twice, timing every load (``ld.global.cg``: the L2, never the L1). Mode 0:
each target its own lines; mode 1: every target the same lines.  Run on the GPU machine:

    python -m kernels.runner.l2_side_map --cubin B/l2_side_map.sm_90a.cubin --out results.jsonl --commit SHA

One JSON line per (mode, launch): each CTA's SM, its mean first- and second-pass load latency, and
(mode 1) the first pass's per-line latencies; with :func:`sides_by_pass` / :func:`sides_by_lines`
the split of the SMs the records show.  The model's map (``ArchProfile.l2_side``: SMs below
``sum(gpc_sms[:4])`` on side 0) is a guess that this is meant to replace.
"""

from __future__ import annotations

import ctypes
import random
import statistics
import sys

from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

LINES = 256
"""Lines a target reads (32 KiB: 132 targets' own lines, 4.3 MB, all fit in L2)."""
LINE_WORDS = 32
SMEM = 160 * 1024
"""More than half an SM's shared memory: one CTA an SM."""
TIMEOUT_CYCLES = 2_000_000_000
"""~1 s at 1.98 GHz for one wait: a launch of 132 turns takes ~20 ms."""


def chase_lines(targets: int, n: int = LINES, seed: int = 0) -> list[int]:
    """The buffer's words: line ``i`` of target ``t``'s ``n`` lines holds, in its word 0, the index of
    the next line of a random cycle through those ``n`` lines, starting at line ``t * n``."""
    rng = random.Random(seed)
    words = [0] * (targets * n * LINE_WORDS)
    for t in range(targets):
        order = list(range(t * n + 1, (t + 1) * n))
        rng.shuffle(order)
        cycle = [t * n] + order
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            words[a * LINE_WORDS] = b
    return words


def two_groups(values: list[float]) -> tuple[float, list[int]]:
    """The best split of ``values`` into a low and a high group (1-D two-means over the sorted
    values): (the gap between the groups' means over the lower mean, 0/1 for each value)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    xs = [values[i] for i in order]
    best, cut = None, 1
    for k in range(1, len(xs)):
        lo, hi = xs[:k], xs[k:]
        mlo, mhi = sum(lo) / len(lo), sum(hi) / len(hi)
        cost = sum((x - mlo) ** 2 for x in lo) + sum((x - mhi) ** 2 for x in hi)
        if best is None or cost < best:
            best, cut = cost, k
    mlo, mhi = statistics.fmean(xs[:cut]), statistics.fmean(xs[cut:])
    label = [0] * len(values)
    for i in order[cut:]:
        label[i] = 1
    return (mhi - mlo) / mlo if mlo else 0.0, label


def sides_by_pass(smids: list[int], first: list[float], second: list[float]) -> dict:
    """Mode 0: the SMs whose first pass over the warmer's lines was slower than their second (their
    own copies) by the larger group's margin are the warmer's other side.  Returns the split, or
    says there is none (first and second passes alike everywhere: no near copies kept)."""
    ratio = [f / s if s else 1.0 for f, s in zip(first, second)]
    gap, label = two_groups(ratio)
    return {"ratio_gap": round(gap, 4), "far_from_warmer": sorted(sm for sm, lab in zip(smids, label) if lab),
            "near_warmer": sorted(sm for sm, lab in zip(smids, label) if not lab)}


def sides_by_lines(smids: list[int], per_line: list[list[int]]) -> dict:
    """Mode 1: each SM's slow lines (above its own median) as a bit pattern; SMs agreeing with the
    first CTA's pattern on more than half the lines are on its side.  The agreement of every SM
    with it is returned, so a split that is not there shows as agreements near one half."""
    def pattern(lat: list[int]) -> list[bool]:
        m = statistics.median(lat)
        return [x > m for x in lat]

    ref = pattern(per_line[0])
    agree = [sum(a == b for a, b in zip(ref, pattern(lat))) / len(ref) for lat in per_line]
    return {"agreement": [round(a, 3) for a in agree],
            "with_cta0": sorted(sm for sm, a in zip(smids, agree) if a > 0.5),
            "against_cta0": sorted(sm for sm, a in zip(smids, agree) if a <= 0.5)}


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "l2_side_map", SMEM)
    lines = torch.tensor(chase_lines(SM_COUNT), dtype=torch.int64).to(torch.int32).cuda()
    turn = torch.zeros(1, dtype=torch.int32, device="cuda")
    status = torch.zeros(1, dtype=torch.int32, device="cuda")
    first = torch.zeros(SM_COUNT, dtype=torch.int64, device="cuda")
    second = torch.zeros(SM_COUNT, dtype=torch.int64, device="cuda")
    per_line = torch.zeros(SM_COUNT * LINES, dtype=torch.int32, device="cuda")
    smids = torch.full((SM_COUNT,), -1, dtype=torch.int32, device="cuda")
    rows = []
    for mode in (0, 1):
        for rep in range(reps):
            turn.zero_()
            status.zero_()
            args = [ctypes.c_void_p(lines.data_ptr()), ctypes.c_int(LINES), ctypes.c_int(mode), ctypes.c_void_p(turn.data_ptr()),
                    ctypes.c_longlong(TIMEOUT_CYCLES), ctypes.c_void_p(first.data_ptr()), ctypes.c_void_p(second.data_ptr()),
                    ctypes.c_void_p(per_line.data_ptr()), ctypes.c_void_p(smids.data_ptr()), ctypes.c_void_p(status.data_ptr())]
            drv.launcher(fn, SM_COUNT, 32, SMEM, stream, args)()
            torch.cuda.synchronize()
            sm = smids.tolist()
            f = [x / LINES for x in first.tolist()]
            s = [x / LINES for x in second.tolist()]
            row = {"mode": mode, "launch": rep, "lines": LINES, "status": int(status.item()), "sms": sm,
                   "first_pass_cycles": [round(x, 1) for x in f], "second_pass_cycles": [round(x, 1) for x in s],
                   "warmer_sm": sm[0]}
            if row["status"]:
                print(f"mode {mode} launch {rep}: a wait timed out (status {row['status']}); the row is kept as measured", flush=True)
            if mode == 0:
                row["split"] = sides_by_pass(sm, f, s)
                print(f"mode 0 launch {rep}: first pass {statistics.median(f):.0f}, second {statistics.median(s):.0f} cycles "
                      f"(median over SMs); split gap {row['split']['ratio_gap']:.3f}, {len(row['split']['far_from_warmer'])} SMs "
                      f"far from the warmer (SM {sm[0]})", flush=True)
            else:
                lat = per_line.tolist()
                row["per_line_cycles"] = [lat[t * LINES:(t + 1) * LINES] for t in range(SM_COUNT)]
                row["split"] = sides_by_lines(sm, row["per_line_cycles"])
                print(f"mode 1 launch {rep}: {len(row['split']['with_cta0'])} SMs read CTA 0's lines as it does, "
                      f"{len(row['split']['against_cta0'])} the other way", flush=True)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("l2_side_map", __doc__, argv, measure, 2, "JSON lines, one per (mode, launch)")


if __name__ == "__main__":
    sys.exit(main())
