"""Where a judge's memory goes, stage by stage: issue 15's memory targets, taken apart.

Run:  python benchmarks/memory_by_stage.py [--arch h200] [--shape 4096,4096,4096] [--step hgemm_v6]
                                           [--no-sizes] [--json] [--no-record]

One process builds the schedule, replays it and runs the checkers, and prints its resident set
after each stage (``VmRSS``: what it holds now; the peak is ``ru_maxrss``) -- then, for the event
log the replay wrote, each kind's events and bytes as the engine stores them (a tuple a record,
``sys.getsizeof`` over the records and what they hold, an object held by several counted once)
beside the same records built as typed columns, measured: each numeric field a numpy array of
the narrowest exact type (float64; int8..int64; bool), every other field an index into a table
of its distinct values (equal values one entry; the table's objects counted once).  The records
are rebuilt from the columns and compared with the log (equal, or the script fails); building the
columns from the finished log is timed (``encode``: this script's way, a Python loop over the
fields that are not numbers -- a replay writing columns would pay about that per event), and the
rebuild is timed: what a checker that reads records would pay per record read, were the log
stored as columns.  ``checker reads`` counts the records the checkers asked the log for
(``EventLog.of_kind``), so the two multiply to that cost for this run.

Issue 15's targets: the full chip (v6 4096^3) under 400 MB on h200 and b200, 8192x8192x4096 on
b200 under 2 GB (``benchmarks/bench.py`` measures those rows' peaks).  Each run appends one JSON
line to results/bench/memory.jsonl (date, commit, machine, versions, the rows).
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.script_args import add_gemm_args, add_record_args, print_and_record, with_gemm_config  # noqa: E402

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


def log_sizes(events, reads: dict[str, int]) -> list[dict]:
    """Per kind: events, bytes as stored (rows), bytes as typed columns (built), the rebuild."""
    import numpy  # noqa: F401 -- imported here, not inside the first kind's timed encode

    rows = Sizer()
    by: dict[str, list] = defaultdict(list)
    for e in events:
        by[e.kind].append(e)
    out = []
    for kind, records in by.items():
        row_bytes = sum(rows.deep(e) for e in records)
        entry = {"kind": kind, "events": len(records), "fields": len(records[0]), "row_bytes": row_bytes,
                 "checker_reads": reads.get(kind, 0)}
        if len({type(e) for e in records}) == 1 and isinstance(records[0], tuple) and len({len(e) for e in records}) == 1:
            gc.disable()
            t = time.perf_counter()
            columns = [typed_column(values) for values in zip(*records)]
            entry["encode_us_per_event"] = (time.perf_counter() - t) / len(records) * 1e6
            gc.enable()
            entry["typed_column_bytes"] = columns_bytes(columns)
            entry["rebuild_us_per_event"] = rebuild_seconds(type(records[0]), columns, records) / len(records) * 1e6
        out.append(entry)
    return sorted(out, key=lambda k: -k["row_bytes"])


def typed_column(values: tuple) -> tuple:
    """One field of every record of a kind as ``("array", a)`` (numbers) or ``("table", index, objects)``."""
    import numpy as np

    types = set(map(type, values))
    if types == {float}:
        return ("array", np.array(values, dtype=np.float64))
    if types == {bool}:
        return ("array", np.array(values, dtype=np.bool_))
    if types == {int} and -2**63 <= min(values) and max(values) < 2**63:
        for dtype in (np.int8, np.int16, np.int32, np.int64):
            info = np.iinfo(dtype)
            if info.min <= min(values) and max(values) <= info.max:
                return ("array", np.array(values, dtype=dtype))
    table: dict = {}
    objects: list = []
    index = []
    for v in values:
        try:  # equal values of one type share an entry (1 and 1.0 and True do not)
            key = (type(v), tuple(map(type, v)), v) if type(v) is tuple else (type(v), v)
            hash(key)
        except TypeError:  # a dict or list: kept as the object it is
            key = ("id", id(v))
        i = table.get(key)
        if i is None:
            i = table[key] = len(objects)
            objects.append(v)
        index.append(i)
    dtype = np.uint8 if len(objects) <= 2**8 else np.uint16 if len(objects) <= 2**16 else np.uint32
    return ("table", np.array(index, dtype=dtype), objects)


def columns_bytes(columns: list[tuple]) -> int:
    tables = Sizer()
    return sum(c[1].nbytes + (tables.deep(c[2]) if c[0] == "table" else 0) for c in columns)


def rebuild_seconds(cls: type, columns: list[tuple], records: list) -> float:
    """Rebuild every record from ``columns`` (timed, the collector off) and check it is the log's."""
    from itertools import repeat

    gc.disable()
    try:
        t = time.perf_counter()
        fields = [c[1].tolist() if c[0] == "array" else list(map(c[2].__getitem__, c[1].tolist())) for c in columns]
        rebuilt = list(map(tuple.__new__, repeat(cls), zip(*fields)))
        seconds = time.perf_counter() - t
    finally:
        gc.enable()
    if rebuilt != records or any(type(a) is not type(b) for x, y in zip(rebuilt, records) for a, b in zip(x, y)):
        raise AssertionError(f"typed columns of {cls.__name__} do not rebuild the log's records")
    return seconds


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
    reads: dict[str, int] = defaultdict(int)
    of_kind = result.log.of_kind

    def counted(kind: str) -> list:  # the records the checkers read, by kind
        got = of_kind(kind)
        reads[kind] += len(got)
        return got

    result.log.of_kind = counted
    t = time.perf_counter()
    findings = run_checkers(result)
    stage("checked", time.perf_counter() - t, f"{len(findings)} findings")
    del result.log.of_kind
    kinds = log_sizes(result.log.events, reads) if sizes else []
    return {"step": step, "arch": arch, "shape": list(shape), "stages": stages, "kinds": kinds}


def report(out: dict) -> str:
    lines = [f"{out['step']} {'x'.join(map(str, out['shape']))} on {out['arch']}",
             f"{'stage':<16} {'RSS':>9} {'added':>9} {'peak':>9} {'time':>8}  detail"]
    for s in out["stages"]:
        secs = "-" if s["seconds"] is None else f"{s['seconds']:.1f} s"
        lines.append(f"{s['stage']:<16} {s['rss_mb']:>6,.0f} MB {s['added_mb']:>+6,.0f} MB {s['peak_mb']:>6,.0f} MB "
                     f"{secs:>8}  {s['detail']}")
    if out["kinds"]:
        lines += ["", f"{'event kind':<14} {'events':>10} {'fields':>6} {'as rows':>10} {'a row':>7} "
                      f"{'typed columns':>13} {'ratio':>6} {'encode':>10} {'rebuild':>10} {'checker reads':>14}"]
        total_r = total_c = events = reads = rebuild = encode = 0.0
        for k in out["kinds"]:
            total_r += k["row_bytes"]
            events += k["events"]
            reads += k["checker_reads"]
            typed = k.get("typed_column_bytes")
            if typed is None:  # a kind without a record of its own (dicts): not built
                lines.append(f"{k['kind']:<14} {k['events']:>10,} {k['fields']:>6} {k['row_bytes'] / MB:>7,.1f} MB "
                             f"{k['row_bytes'] / k['events']:>5,.0f} B {'-':>13} {'-':>6} {'-':>10} {'-':>10} {k['checker_reads']:>14,}")
                continue
            total_c += typed
            rebuild += k["rebuild_us_per_event"] * k["checker_reads"] / 1e6
            encode += k["encode_us_per_event"] * k["events"] / 1e6
            lines.append(f"{k['kind']:<14} {k['events']:>10,} {k['fields']:>6} {k['row_bytes'] / MB:>7,.1f} MB "
                         f"{k['row_bytes'] / k['events']:>5,.0f} B {typed / MB:>10,.1f} MB {typed / k['row_bytes']:>6.2f} "
                         f"{k['encode_us_per_event']:>7.2f} us {k['rebuild_us_per_event']:>7.2f} us {k['checker_reads']:>14,}")
        lines.append(f"{'all':<14} {events:>10,.0f} {'':>6} {total_r / MB:>7,.1f} MB {total_r / events:>5,.0f} B "
                     f"{total_c / MB:>10,.1f} MB {total_c / total_r:>6.2f} {'':>10} {'':>10} {reads:>14,.0f}")
        lines.append(f"typed columns: built from the log (encode: {encode:.1f} s in all) and rebuilt into its records (equal);"
                     f"\nrebuild: the time a record, so the checkers' reads would cost ~{rebuild:.1f} s of rebuilding were "
                     f"the log stored so")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_gemm_args(ap)
    ap.add_argument("--no-sizes", action="store_true", help="skip the per-kind sizes and typed columns of the log (~1 min at 4096^3)")
    add_record_args(ap, RECORD)
    args = ap.parse_args()
    out = with_gemm_config(ap, args, lambda step, arch, shape: measure(step, arch, shape, sizes=not args.no_sizes))
    print_and_record(args, RECORD, out, report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
