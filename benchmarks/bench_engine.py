"""Engine speed: events per second, full-chip v6 wall time, small-config verdicts per second.

Run:  python benchmarks/bench_engine.py [--quick]

Targets (issue #2): v6 at M=N=K=4096 on the full chip in < 10 s on one core;
>= 500 single-CTA small-config verdicts per second.  Wall times are one run each
on whatever machine this is: compare rows within one run, not across machines.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protosim.builders import BUILDERS  # noqa: E402
from protosim.config import GemmConfig  # noqa: E402
from protosim.verdict import judge  # noqa: E402


def timed(fn):
    gc.collect()  # start each measurement from a clean heap, outside the timing
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def full_chip(arch: str) -> dict:
    cfg = GemmConfig(M=4096, N=4096, K=4096, arch=arch)
    schedule, t_build = timed(lambda: BUILDERS["hgemm_v6"](cfg))
    (verdict, result), t_judge = timed(lambda: judge(schedule))
    return {
        "case": f"v6 4096^3 full chip {arch} ({len(schedule.ctas)} CTAs)",
        "build_s": t_build,
        "judge_s": t_judge,
        "total_s": t_build + t_judge,
        "events": len(result.log),
        "events_per_s": len(result.log) / t_judge,
        "cycles": verdict.timing.cycles,
        "us": verdict.timing.microseconds,
        "outcome": verdict.outcome.kind,
        "target": "< 10 s",
        "ok": t_build + t_judge < 10,
    }


def small_verdicts(seconds: float) -> dict:
    """Build + replay + check single-CTA configs round-robin for ``seconds`` (bench.py's row)."""
    from benchmarks.bench import row_verdicts  # the one loop both benchmarks time

    r = row_verdicts(seconds)
    return {"case": f"single-CTA small configs (K<=256), {r['kinds']} kinds", **r,
            "target": ">= 500/s", "ok": r["verdicts_per_s"] >= 500}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the B200 full-chip row")
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu'}")
    rows = [full_chip("h200")]
    if not args.quick:
        rows.append(full_chip("b200"))
    small = small_verdicts(3.0)

    print()
    print(f"{'case':<42} {'build s':>8} {'judge s':>8} {'total s':>8} {'events':>10} {'events/s':>10} {'sim µs':>8}  target")
    for r in rows:
        print(f"{r['case']:<42} {r['build_s']:8.2f} {r['judge_s']:8.2f} {r['total_s']:8.2f} {r['events']:10,} "
              f"{r['events_per_s']:10,.0f} {r['us']:8.1f}  {r['target']} {'met' if r['ok'] else 'MISSED'}")
    print()
    print(f"{'case':<52} {'verdicts':>9} {'verdicts/s':>11} {'events/s':>10}  target")
    print(f"{small['case']:<52} {small['verdicts']:9,} {small['verdicts_per_s']:11,.0f} {small['events_per_s']:10,.0f}  "
          f"{small['target']} {'met' if small['ok'] else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
