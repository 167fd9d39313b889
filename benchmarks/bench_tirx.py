"""TIRx frontend speed: how long reading a real kernel's schedule takes, next to the builder.

Run:  python benchmarks/bench_tirx.py [--quick]

Target (issue 12): extracting a 4096^3 kernel's schedule takes seconds, not minutes (the
first prototype walker needed ~460 s for Hopper v6).  Each row builds the ``PrimFunc``
(tvm's parser), extracts its schedule (``protosim.frontends.tirx.extract``: the SIMT
interpreter over every CTA, then roles, storage and tags) and, for the steps a builder
models, times the builder on the same config in the same run.  Wall times are one run
each on whatever machine this is: compare the ratio within a run, not across machines.
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_engine import timed  # noqa: E402 - one way to time a step in every benchmark
from kernels.tirx.extracted import launch_args, primfunc  # noqa: E402
from protosim.builders import BUILDERS  # noqa: E402
from protosim.config import GemmConfig  # noqa: E402
from protosim.frontends.tirx import extract  # noqa: E402


CASES = [
    ("seed v6", "v6", dict(arch="b200", PIPE_DEPTH=4)),
    ("hopper v6", "v6", dict(arch="h200", PIPE_DEPTH=4)),
    ("hopper ws", "ws", dict(arch="h200", PIPE_DEPTH=4)),
    ("book v7", "v7", dict(arch="b200", PIPE_DEPTH=4)),
]


def row(label: str, step: str, fields: dict, size: int) -> dict:
    cfg = GemmConfig(M=size, N=size, K=size, **fields)
    func, t_parse = timed(lambda: primfunc(step, cfg))
    schedule, t_extract = timed(lambda: extract(func, cfg.arch, args=launch_args(cfg)))
    builder = BUILDERS.get(f"hgemm_{step}")
    t_builder = timed(lambda: builder(cfg))[1] if builder else None
    return {"case": f"{label} {size}^3 {cfg.arch} ({len(schedule.ctas)} CTAs)", "parse_s": t_parse,
            "extract_s": t_extract, "ops": schedule.op_count(), "builder_s": t_builder}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1024^3 instead of 4096^3")
    args = ap.parse_args()
    size = 1024 if args.quick else 4096
    print(f"# TIRx frontend, {platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"| case | parse s | extract s | ops | ops/s | builder s | extract / builder |")
    print("|---|---|---|---|---|---|---|")
    for label, step, fields in CASES:
        r = row(label, step, fields, size)
        ratio = f"{r['extract_s'] / r['builder_s']:.1f}x" if r["builder_s"] else "(no builder)"
        builder = f"{r['builder_s']:.2f}" if r["builder_s"] else "-"
        print(f"| {r['case']} | {r['parse_s']:.2f} | {r['extract_s']:.2f} | {r['ops']:,} | {r['ops'] / r['extract_s']:,.0f} "
              f"| {builder} | {ratio} |", flush=True)
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB (the whole run)")


if __name__ == "__main__":
    main()
