"""Census: N fuzz inputs per input path, run, and count what protosim did.

    python -m tests.fuzz.census --examples 150 --seed 0 --json results/fuzz/census.json

prints a table -- per input path: examples, exit statuses 0/1/2/3, timeouts,
tracebacks / escaped exceptions, examples with a contract violation -- then the
violations by category and the distinct failure classes (category + rule: the oracle
rule, the exception type and innermost protosim frame, or where a hang was), most
frequent first, each with its smallest reproducer.  The JSON has all of it and the
commit it ran on.

The inputs are the suites' strategies (tests/fuzz/strategies.py) drawn with a fixed
Hypothesis seed and de-duplicated; each runs as the suites run it (forked ``main``,
a subprocess for a sample and for crosscheck).  To census another checkout, run this
module from that checkout (it fuzzes the ``protosim`` it imports).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from . import contract
from .contract import FuzzCase, check, protosim_root
from .strategies import STRATEGIES
from .tirx_mutants import tirx_cases

if importlib.util.find_spec("tvm") is not None:  # the TIRx path (tirx_mutants.py) reads kernels with apache-tvm
    STRATEGIES = {**STRATEGIES, "tirx": tirx_cases}

CATEGORIES = ("exit3", "exception", "traceback", "timeout", "crash", "systemexit", "bad_status", "not_refused",
              "refused_valid", "stderr_shape", "stderr_no_file", "stderr_no_field", "stdout_empty", "json_invalid", "json_ok",
              "ok_status", "ok_inconsistent", "status_semantics", "output_file", "schedule_roundtrip", "harness_error")


def _key(case: FuzzCase) -> str:
    h = hashlib.sha256(json.dumps(case.argv).encode())
    for k in sorted(case.files):
        h.update(k.encode() + b"\0" + case.files[k] + b"\0")
    h.update(repr(case.setup).encode() + case.mode.encode())
    return h.hexdigest()


def draw(path: str, n: int, seed: int) -> list[FuzzCase]:
    """``n`` distinct cases of one path (fewer if the strategy runs dry)."""
    out: list[FuzzCase] = []
    seen: set[str] = set()

    @hypothesis_seed(seed)
    @settings(max_examples=8 * n, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(STRATEGIES[path]())
    def collect(case: FuzzCase) -> None:
        k = _key(case)
        if k not in seen and len(out) < n:
            seen.add(k)
            out.append(case)

    collect()
    return out


def _commit(root: Path) -> tuple[str, bool | None]:
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "protosim"], capture_output=True,
                                    text=True, check=True).stdout.strip())
        return sha, dirty
    except (OSError, subprocess.CalledProcessError):
        return "unknown", None


def run(paths: list[str], n: int, seed: int, log=sys.stderr) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    classes: dict[tuple[str, str, str], dict[str, Any]] = {}
    cats: dict[str, Counter] = defaultdict(Counter)
    examples: list[dict[str, Any]] = []
    for path in paths:
        t0 = time.monotonic()
        cases = draw(path, n, seed)
        row = {"examples": len(cases), "status_0": 0, "status_1": 0, "status_2": 0, "status_3": 0, "timeouts": 0,
               "raised": 0, "crashed": 0, "tracebacks": 0, "violating": 0, "expect_refuse": 0, "expect_valid": 0,
               "seconds": 0.0}
        for i, case in enumerate(cases):
            ch = check(case)
            r = ch.result
            row["expect_refuse"] += case.expect == "refuse"
            row["expect_valid"] += case.expect == "valid"
            status = r.effective if r.effective is not None else r.status
            if r.timed_out:
                row["timeouts"] += 1
            elif r.exception or (r.systemexit is not None and status is None):
                row["raised"] += 1
            elif status in (0, 1, 2, 3):
                row[f"status_{status}"] += 1
            else:
                row["crashed"] += 1
            if r.exception or contract.TRACEBACK in r.stderr or contract.TRACEBACK in r.stdout:
                row["tracebacks"] += 1
            examples.append({"path": path, "command": case.command(), "status": status, "timed_out": r.timed_out,
                             "raised": r.exc_type, "seconds": round(r.seconds, 2), "mode": r.mode, "expect": case.expect,
                             "violations": sorted({v.category for v in ch.violations})})
            if ch.violations:
                row["violating"] += 1
            for cat in {v.category for v in ch.violations}:
                cats[path][cat] += 1
            for v in ch.violations:
                k = (path, v.category, v.rule)
                c = classes.setdefault(k, {"path": path, "category": v.category, "rule": v.rule, "count": 0,
                                           "detail": v.detail, "reproducer": None, "size": None})
                c["count"] += 1
                size = sum(len(b) for b in case.files.values()) + 200 * len(case.mutations)
                if c["size"] is None or size < c["size"]:
                    c["size"], c["detail"] = size, v.detail
                    c["reproducer"] = case.reproducer(limit=800)
                    c["status"] = r.status
                    c["stderr"] = r.stderr.strip()[-600:]
                    c["exception"] = (r.exception or "")[-1500:]
                    c["hang_stack"] = r.hang_stack[:1500]
            if log and (i + 1) % 25 == 0:
                print(f"  {path}: {i + 1}/{len(cases)} ({time.monotonic() - t0:.0f} s)", file=log, flush=True)
        row["seconds"] = round(time.monotonic() - t0, 1)
        rows[path] = row
        if log:
            print(f"{path}: {row}", file=log, flush=True)
    sha, dirty = _commit(Path.cwd())
    return {
        "commit": sha, "protosim_dirty": dirty, "protosim": str(protosim_root()), "examples_per_path": n, "seed": seed,
        "timeout_s": contract.TIMEOUT_S, "subprocess_pct": __import__("tests.fuzz.strategies", fromlist=["x"]).SUBPROCESS_PCT,
        "python": sys.version.split()[0], "hypothesis": __import__("hypothesis").__version__,
        "paths": rows, "categories": {p: dict(c) for p, c in cats.items()},
        "classes": sorted(({k: v for k, v in c.items() if k != "size"} for c in classes.values()),
                          key=lambda c: (-c["count"], c["path"], c["category"], c["rule"])),
        "examples": examples,
    }


def table(census: dict[str, Any]) -> str:
    rows = census["paths"]
    head = ("input path", "examples", "0", "1", "2", "3", "timeout", "raised", "tracebacks", "violating", "must-refuse",
            "valid", "s")
    lines = [f"protosim fuzz census: commit {census['commit']}"
             + (" (protosim/ modified)" if census.get("protosim_dirty") else "")
             + f", {census['examples_per_path']} examples per path, seed {census['seed']}, "
             f"limit {census['timeout_s']:.0f} s per example", "",
             "columns: exit status 0/1/2/3 (argparse's usage exit counts as 2); timeout: killed at the limit; raised: an",
             "exception escaped main() (a traceback, no status of the contract); tracebacks: examples showing one;",
             "violating: examples with any contract violation; must-refuse / valid: what the oracles expected", ""]
    data = [(p, r["examples"], r["status_0"], r["status_1"], r["status_2"], r["status_3"], r["timeouts"],
             r["raised"] + r["crashed"], r["tracebacks"], r["violating"], r["expect_refuse"], r["expect_valid"], r["seconds"])
            for p, r in rows.items()]
    tot = tuple(round(sum(d[i] for d in data), 1) for i in range(1, len(head)))
    data.append(("total", *tot))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *data)]
    fmt = lambda row: "  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, widths)))  # noqa: E731
    lines += [fmt(head), fmt(["-" * w for w in widths])] + [fmt(d) for d in data]
    cats = sorted({c for cs in census["categories"].values() for c in cs}, key=lambda c: CATEGORIES.index(c)
                  if c in CATEGORIES else 99)
    if cats:
        lines += ["", "examples with a violation, by category:"]
        chead = ("input path", *cats)
        cdata = [(p, *(census["categories"].get(p, {}).get(c, 0) for c in cats)) for p in rows]
        cw = [max(len(str(x)) for x in col) for col in zip(chead, *cdata)]
        cf = lambda row: "  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, cw)))  # noqa: E731
        lines += [cf(chead), cf(["-" * w for w in cw])] + [cf(d) for d in cdata]
    lines += ["", f"distinct failure classes ({len(census['classes'])}), most frequent first:"]
    for c in census["classes"]:
        lines.append(f"  {c['count']:4d}  {c['path']:<14} {c['category']:<16} {c['rule'][:70]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.census", description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=150, help="inputs per path (default 150)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--paths", default=",".join(STRATEGIES), help=f"comma-separated, of {', '.join(STRATEGIES)}")
    ap.add_argument("--json", type=Path, help="write the census as JSON here")
    ap.add_argument("--txt", type=Path, help="also write the printed table here")
    ap.add_argument("--commit", help="record this commit instead of `git rev-parse HEAD` of the current folder")
    args = ap.parse_args(argv)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    census = run(paths, args.examples, args.seed)
    if args.commit:
        census["commit"] = args.commit
    text = table(census)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(census, indent=1) + "\n")
    if args.txt:
        args.txt.parent.mkdir(parents=True, exist_ok=True)
        args.txt.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
