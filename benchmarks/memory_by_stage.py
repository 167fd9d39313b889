"""Where a judge's memory goes, stage by stage: issue 15's memory targets, taken apart.

Run:  python benchmarks/memory_by_stage.py [--arch h200] [--shape 4096,4096,4096] [--step hgemm_v6]
                                           [--no-sizes] [--json] [--no-record]

One process builds the schedule, replays it and runs the checkers, and prints its resident set
after each stage (``VmRSS``: what it holds now; the peak is ``ru_maxrss``) -- then, for the event
log the replay wrote, each kind's events and bytes as the engine stores them (a tuple a record,
``sys.getsizeof`` over the records and what they hold, an object held by several counted once)
beside an estimate of the same log stored as columns: 8 bytes a field (a number in a typed array,
or a reference) plus the tuples and dicts the fields hold.  The estimate is an upper bound for a
columnar log with the same fields (narrower integer columns would be smaller), not a measurement
of one: none is built.

Issue 15's targets: the full chip (v6 4096^3) under 400 MB on h200 and b200, 8192x8192x4096 on
b200 under 2 GB (``benchmarks/bench.py`` measures those rows' peaks).  Each run appends one JSON
line to results/bench/memory.jsonl (date, commit, machine, versions, the rows).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench import _git, machine, versions  # noqa: E402

RECORD = ROOT / "results" / "bench" / "memory.jsonl"
MB = 1024 * 1024


def rss_mb() -> float:
    """The resident set now (``VmRSS``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Sizer:
    """``sys.getsizeof`` summed over objects reachable through tuples, lists and dicts, each
    object counted once however many hold it (the engine shares barrier names, tiles, times)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def deep(self, obj) -> int:
        total, stack = 0, [obj]
        while stack:
            x = stack.pop()
            if id(x) in self.seen:
                continue
            self.seen.add(id(x))
            total += sys.getsizeof(x)
            if isinstance(x, (tuple, list)):
                stack.extend(x)
            elif isinstance(x, dict):
                stack.extend(x.keys())
                stack.extend(x.values())
        return total


def log_sizes(events) -> list[dict]:
    """Per kind: events, bytes as stored (rows), bytes as columns (estimate)."""
    rows, cols = Sizer(), Sizer()
    by: dict[str, dict] = defaultdict(lambda: {"events": 0, "fields": 0, "row_bytes": 0, "column_bytes": 0})
    for e in events:
        d = by[e.kind]
        d["events"] += 1
        d["fields"] = len(e)
        d["row_bytes"] += rows.deep(e)
        d["column_bytes"] += 8 * len(e) + sum(cols.deep(v) for v in e if isinstance(v, (tuple, list, dict)))
    return [{"kind": k, **v} for k, v in sorted(by.items(), key=lambda kv: -kv[1]["row_bytes"])]


def measure(step: str, arch: str, shape: tuple[int, int, int], sizes: bool) -> dict:
    from protosim.arch import load_profile
    from protosim.builders import BUILDERS
    from protosim.checkers import run_checkers
    from protosim.config import GemmConfig
    from protosim.engine.machine import replay

    stages = []

    def stage(name: str, seconds: float | None, detail: str = "") -> None:
        gc.collect()
        now = rss_mb()
        stages.append({"stage": name, "rss_mb": now, "added_mb": now - (stages[-1]["rss_mb"] if stages else 0.0),
                       "peak_mb": peak_mb(), "seconds": seconds, "detail": detail})

    stage("imports", None)
    M, N, K = shape
    t = time.perf_counter()
    schedule = BUILDERS[step](GemmConfig(M=M, N=N, K=K, arch=arch))
    stage("schedule built", time.perf_counter() - t, f"{schedule.op_count():,} ops in {len(schedule.ctas)} CTAs")
    profile = load_profile(arch)
    t = time.perf_counter()
    result = replay(schedule, profile)
    stage("replayed", time.perf_counter() - t, f"{len(result.log):,} events")
    t = time.perf_counter()
    findings = run_checkers(result)
    stage("checked", time.perf_counter() - t, f"{len(findings)} findings")
    kinds = log_sizes(result.log.events) if sizes else []
    return {"step": step, "arch": arch, "shape": list(shape), "stages": stages, "kinds": kinds}


def report(out: dict) -> str:
    lines = [f"{out['step']} {'x'.join(map(str, out['shape']))} on {out['arch']}",
             f"{'stage':<16} {'RSS':>9} {'added':>9} {'peak':>9} {'time':>8}  detail"]
    for s in out["stages"]:
        secs = "-" if s["seconds"] is None else f"{s['seconds']:.1f} s"
        lines.append(f"{s['stage']:<16} {s['rss_mb']:>6,.0f} MB {s['added_mb']:>+6,.0f} MB {s['peak_mb']:>6,.0f} MB "
                     f"{secs:>8}  {s['detail']}")
    if out["kinds"]:
        lines += ["", f"{'event kind':<14} {'events':>10} {'fields':>6} {'as rows':>10} {'a row':>7} {'as columns':>11} {'ratio':>6}"]
        total_r = total_c = 0
        for k in out["kinds"]:
            total_r += k["row_bytes"]
            total_c += k["column_bytes"]
            lines.append(f"{k['kind']:<14} {k['events']:>10,} {k['fields']:>6} {k['row_bytes'] / MB:>7,.1f} MB "
                         f"{k['row_bytes'] / k['events']:>5,.0f} B {k['column_bytes'] / MB:>8,.1f} MB "
                         f"{k['column_bytes'] / k['row_bytes']:>6.2f}")
        events = sum(k["events"] for k in out["kinds"])
        lines.append(f"{'all':<14} {events:>10,} {'':>6} {total_r / MB:>7,.1f} MB {total_r / events:>5,.0f} B "
                     f"{total_c / MB:>8,.1f} MB {total_c / total_r:>6.2f}")
        lines.append("as columns: an estimate (8 B a field plus the tuples and dicts it holds), no such log is built")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="h200", help="architecture profile (default h200)")
    ap.add_argument("--shape", default="4096,4096,4096", help="M,N,K (default 4096,4096,4096: the full chip)")
    ap.add_argument("--step", default="hgemm_v6", help="a GEMM builder, hgemm_v1 .. hgemm_v9 or hgemm_ws (default hgemm_v6)")
    ap.add_argument("--no-sizes", action="store_true", help="skip the per-kind sizes of the log (~20 s at 4096^3)")
    ap.add_argument("--json", action="store_true", help="print the record as JSON instead of tables")
    ap.add_argument("--no-record", action="store_true", help=f"do not append to {RECORD.relative_to(ROOT)}")
    ap.add_argument("--note", default="", help="a note stored with the record")
    args = ap.parse_args()
    from protosim.arch import available
    from protosim.builders import BUILDERS
    from protosim.config import ConfigError, GemmConfig

    if args.arch not in available():
        ap.error(f"--arch {args.arch}: one of {', '.join(available())}")
    gemm_steps = sorted(name for name in BUILDERS if name.startswith("hgemm_"))  # the builders of a GemmConfig
    if args.step not in gemm_steps:
        ap.error(f"--step {args.step}: one of {', '.join(gemm_steps)}")
    try:
        shape = tuple(int(x) for x in args.shape.split(","))
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--shape {args.shape!r}: give M,N,K, three positive integers")
    try:
        GemmConfig(M=shape[0], N=shape[1], K=shape[2], arch=args.arch).validate()
        out = measure(args.step, args.arch, shape, sizes=not args.no_sizes)
    except ConfigError as e:  # the shape, or a step the arch lacks (hgemm_v7-9 are sm_100a kernels)
        ap.error(f"--step {args.step} --arch {args.arch} --shape {args.shape}: {e}")
    commit = _git("rev-parse", "HEAD")
    record = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": commit,
              "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
              "machine": machine(), "versions": versions(), "note": args.note, **out}
    print(json.dumps(record, indent=1) if args.json else report(out))
    if not args.no_record:
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        with RECORD.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"(appended to {RECORD.relative_to(ROOT)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
