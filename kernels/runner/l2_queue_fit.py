"""Which queue explains the l2_queue probe latencies (CPU only; kernels/runner/l2_queue.py measures them).

Two fluid models of the chip's L2 -> shared path, each with a chip rate ``C`` (bytes/cycle) and a
``slack`` (cycles of queueing a load's own unloaded latency absorbs; 0 = the whole zero-byte
latency comes after the queue, as protosim's engine has it):

* ``at issue`` -- protosim's engine: a load's bytes join one first-come first-served chip queue
  all at once when it is issued;
* ``trickle`` -- they join it as the SM's copy engine emits them (``tma_sm_bytes_per_clk``), so a
  load issued while a burst is still being emitted waits only for the bytes emitted before it.

The flood is replayed as the kernel issues it (131 SMs, six 32 KiB bulk loads ~97 cycles apart
from cycle 30); the probe at its measured delay.  Prints each model's probe latencies and its mean
absolute percentage error against the measurement.  Run:

    python -m kernels.runner.l2_queue_fit results/silicon/microbench/2026-12-02_h200_310f574_l2_queue.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

L2_LATENCY = [(2048, 361), (8192, 396), (16384, 469), (32768, 621)]
"""The H200 profile's tma_l2_latency table (2-D tensor loads, one in flight, L2 hit)."""
SM_RATE = 118.0
"""tma_sm_bytes_per_clk of the H200 profile: what one SM's copy engine emits."""
FLOODERS, LOADS, CHUNK, FIRST, GAP = 131, 6, 32768, 30, 97
"""The flood as the kernel issues it: the first load ~30 cycles after the barrier, one per ~97."""


def latency(nbytes: float) -> float:
    """The profile's table, interpolated (extrapolated below 2 KiB: the zero-byte part)."""
    pts = L2_LATENCY
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if nbytes <= x1 or (x1, y1) == pts[-1]:
            return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)
    raise AssertionError


def at_issue(probe: int, t: float, rate: float, slack: float) -> float:
    """The engine's queue: every flood load issued before the probe is ahead of it, whole."""
    ahead = sum(CHUNK * FLOODERS for j in range(LOADS) if FIRST + j * GAP <= t)
    first = FIRST if ahead else t
    chip_done = max(first + ahead / rate, t) + probe / rate
    return max(t + latency(probe), chip_done + latency(0) - slack) - t


def trickle(probe: int, t: float, rate: float, slack: float, horizon: int = 30000) -> float:
    """Bytes join the chip queue at each SM's emission rate; the probe's SM is idle."""
    emitted = served = per_sm = 0.0
    ahead = None
    for now in range(1, horizon):
        issued = sum(CHUNK for j in range(LOADS) if FIRST + j * GAP <= now)
        per_sm = min(issued, per_sm + SM_RATE) if now >= FIRST else 0.0
        emitted = FLOODERS * per_sm
        if ahead is None and now >= t:
            ahead = emitted + probe  # the probe's bytes join behind what was emitted before it
        served = min(emitted + (probe if ahead is not None else 0), served + rate)
        if ahead is not None and served >= ahead:
            return max(t + latency(probe), now + latency(0) - slack) - t
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_file():
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in Path(args[0]).read_text().splitlines() if line.strip()]
    # flood 1: each flooder its own bytes (the shared modes, flood >= 2, ask another question)
    probes = [(r["probe_bytes"], r["delay"], r["probe_delay_median"], r["probe_cycles_median"]) for r in rows if r["flood"] == 1]
    print("measured      " + " ".join(f"{m:>5.0f}" for *_, m in probes))
    for name, model in (("at issue", at_issue), ("trickle", trickle)):
        for rate in (4200, 5050, 7000):
            for slack in (0, 250):
                got = [model(pb, t, rate, slack) for pb, _, t, _ in probes]
                mape = statistics.mean(abs(g - m) / m for g, (*_, m) in zip(got, probes))
                print(f"{name:<8} C {rate:>4} slack {slack:>3}: MAPE {mape:5.0%}  " + " ".join(f"{g:>5.0f}" for g in got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
