"""The model's k-iteration for the co-residency records of ``cta_drift --blocked`` (CPU only).

``kernels/runner/cta_drift.py --blocked`` ran each grid's first ``grid`` CTAs on ``gemm_sms`` SMs
(the rest held by spinning CTAs) and recorded, from thread 0's ``clock64`` at the top of every
iteration of the MMA k-loop, the median gap between successive tops over every CTA's iterations
(pooled), and in later records the median gap by iteration (``iteration_cycles_by_k``).  This
replays the same CTAs of the builder's schedule (inputs in L2, as the runner's repeated launches
leave them) on an H200 profile of ``gemm_sms`` SMs and reads the same statistics from the wgmma
role's warp 0: the top of k-iteration ``k`` is where its first wait of k-tile ``k`` begins.  Prints
silicon next to the model.  A record taken without ``--warm-inputs`` had all of D written with NaN
before each launch (32 MB at 4096 x 4096), which the model's L2 (49.2 MB, LRU) keeps A and B
through and the H200 did not quite (results/silicon/microbench/2026-12-04_h200_cta_drift.md part 7).
Run:

    python -m kernels.runner.cta_drift_replay results/silicon/microbench/2026-12-04_h200_f0eb71b_cta_drift_blocked_warm.jsonl
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path


def loop_tops(result) -> dict[int, list[float]]:
    """Per CTA, the top of each of its k-iterations in order: where the wgmma role's warp 0
    begins its first wait of that k-tile (what thread 0's stamp at the loop's top precedes)."""
    schedule = result.schedule
    roles = [r.name for r, ops in zip(schedule.roles, schedule.ctas[0].roles, strict=True)
             if any(type(op).__name__ == "Wgmma" for op in ops)]
    if not roles:
        raise ValueError("no role issues wgmma: not a Hopper GEMM schedule")
    lead = f"{roles[0]}.w0"
    first: dict[int, dict[int, float]] = {}
    for e in result.log.of_kind("wait"):
        if e.who == lead and e.k is not None:
            tops = first.setdefault(e.cta, {})
            if e.k not in tops or e.begin < tops[e.k]:
                tops[e.k] = e.begin
    return {cta: [tops[k] for k in sorted(tops)] for cta, tops in first.items()}


def k_iteration(result) -> tuple[float, list[float]]:
    """Silicon's statistics of a launch: the median gap between successive loop tops over every
    CTA's iterations, and the median gap by iteration (from the top of k to the top of k + 1)."""
    rows = [tops for tops in loop_tops(result).values() if len(tops) > 1]
    if not rows:
        raise ValueError("no CTA ran two k-iterations: nothing to time")
    pooled = statistics.median(b - a for r in rows for a, b in zip(r, r[1:]))
    depth = min(len(r) for r in rows) - 1
    return pooled, [statistics.median(r[k + 1] - r[k] for r in rows) for k in range(depth)]


def replay_grid(step: str, config: dict, grid: int, **arch_changes):
    """The builder's schedule of a cta_drift config, its first ``grid`` CTAs, replayed on an H200
    profile with ``arch_changes`` (inputs in L2, as the runner's repeated launches leave them)."""
    from protosim.arch import load_profile
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.engine.machine import replay

    c = config
    cfg = GemmConfig(M=c["M"], N=c["N"], K=c["K"], BLK_N=c["BLK_N"], PIPE_DEPTH=c["PIPE_DEPTH"], arch="h200")
    schedule = BUILDERS["hgemm_" + step](cfg)
    schedule = dataclasses.replace(schedule, ctas=schedule.ctas[:grid], l2_at_launch="inputs")
    return replay(schedule, dataclasses.replace(load_profile("h200"), **arch_changes))


def replay_row(row: dict) -> tuple[float, list[float]]:
    """The model's k-iteration for one ``cta_drift --blocked`` record row (:func:`k_iteration`)."""
    return k_iteration(replay_grid(row["step"], row["config"], row["grid"], sm_count=row["gemm_sms"]))


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
    print(f"{'config':30s} {'CTAs on SMs':>12s} {'warm':>4s} {'silicon':>8s} {'model':>8s}  error   by iteration (first 3): silicon / model")
    for r in rows:
        c = r["config"]
        model, model_by_k = replay_row(r)
        silicon = r["iteration_cycles_median"]
        label = f"{r['step']} {c['M']}x{c['N']}x{c['K']} n{c['BLK_N']} p{c['PIPE_DEPTH']}"
        by_k = r.get("iteration_cycles_by_k")
        shown = (" / ".join(f"{x:.0f}" for x in by_k[:3]) if by_k else "-") + "  |  " + " / ".join(f"{x:.0f}" for x in model_by_k[:3])
        print(f"{label:30s} {r['grid']:>5d} on {r['gemm_sms']:>3d} {'yes' if r.get('warm_inputs') else 'no':>4s} "
              f"{silicon:8.0f} {model:8.0f}  {100 * (model / silicon - 1):+6.1f}%  {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
