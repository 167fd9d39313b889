"""The model's k-iteration for the co-residency records of ``cta_drift --blocked`` (CPU only).

``kernels/runner/cta_drift.py --blocked`` ran each grid's first ``grid`` CTAs on ``gemm_sms`` SMs
(the rest held by spinning CTAs) and recorded the median k-iteration in ``clock64`` cycles. This
replays the same CTAs of the builder's schedule (inputs in L2, as the runner's repeated launches
leave them) on an H200 profile of ``gemm_sms`` SMs, and reads each CTA's k-iteration from its TMA
loads' issue times (the first load of each k-tile; the median gap per CTA, then the median over
CTAs). Prints silicon next to the model. Run:

    python -m kernels.runner.cta_drift_replay results/silicon/microbench/2026-12-04_h200_09f8da8_cta_drift_blocked.jsonl
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path


def k_iteration(result) -> float:
    """The median over CTAs of each CTA's median gap between the first TMA loads of successive k-tiles."""
    first: dict[int, dict[int, float]] = {}
    for e in result.log.of_kind("issue"):
        if e.what == "tma_load":
            tiles = first.setdefault(e.cta, {})
            if e.k not in tiles or e.t < tiles[e.k]:
                tiles[e.k] = e.t
    per_cta = []
    for tiles in first.values():
        times = sorted(tiles.values())
        gaps = [b - a for a, b in zip(times, times[1:])]
        if gaps:
            per_cta.append(statistics.median(gaps))
    if not per_cta:
        raise ValueError("no CTA issued TMA loads for two k-tiles: not a TMA GEMM schedule")
    return statistics.median(per_cta)


def replay_row(row: dict) -> float:
    """The model's k-iteration for one ``cta_drift --blocked`` record row."""
    from protosim.arch import load_profile
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.engine.machine import replay

    c = row["config"]
    cfg = GemmConfig(M=c["M"], N=c["N"], K=c["K"], BLK_N=c["BLK_N"], PIPE_DEPTH=c["PIPE_DEPTH"], arch="h200")
    schedule = BUILDERS["hgemm_" + row["step"]](cfg)
    schedule = dataclasses.replace(schedule, ctas=schedule.ctas[: row["grid"]], l2_at_launch="inputs")
    arch = dataclasses.replace(load_profile("h200"), sm_count=row["gemm_sms"])
    return k_iteration(replay(schedule, arch))


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kernels.runner.cta_drift_replay", description=__doc__.split("\n\n")[0],
                                 epilog="Each row is replayed once (seconds to a minute on 2 cores).")
    ap.add_argument("record", type=Path, help="a cta_drift --blocked JSON-lines record")
    args = ap.parse_args(argv)
    try:
        rows = [json.loads(line) for line in args.record.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        print(f"cta_drift_replay: cannot read {args.record}: {exc}", file=sys.stderr)
        return 2
    rows = [r for r in rows if r.get("kind") == "cta_drift" and r.get("mode") == "blocked"]
    if not rows:
        print(f"cta_drift_replay: {args.record} has no cta_drift --blocked rows", file=sys.stderr)
        return 2
    print(f"{'config':34s} {'CTAs on SMs':>12s} {'silicon':>8s} {'model':>8s}  error")
    for r in rows:
        c = r["config"]
        model = replay_row(r)
        silicon = r["iteration_cycles_median"]
        label = f"{r['step']} {c['M']}x{c['N']}x{c['K']} n{c['BLK_N']} p{c['PIPE_DEPTH']}"
        print(f"{label:34s} {r['grid']:>5d} on {r['gemm_sms']:>3d} {silicon:8.0f} {model:8.0f}  {100 * (model / silicon - 1):+6.1f}%",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
