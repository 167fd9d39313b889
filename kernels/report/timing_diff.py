"""Two timing reports of the same records, side by side: what a model change did (issue 16).

Each input is the JSON that ``protosim crosscheck report --timing --json FILE`` writes.  For the
configs both reports have (matched by label): MAPE, configs past 25%, step-to-step speed-ups within
5%, the worst errors, and every config whose error moved by more than ``--moved`` points, closer
to silicon or farther from it -- the numbers a results note quotes for an after-the-fact judgement.

    python -m kernels.report.timing_diff BEFORE.json AFTER.json [--moved 0.05] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PAST = 0.25
SPEEDUP_OK = 0.05


def load(path: Path) -> dict:
    """The ``timing.configs`` section of a report (``rows`` and ``speedups``)."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg}, line {e.lineno}); give a report written by --json") from None
    try:
        configs = data["timing"]["configs"]
        configs["rows"], configs["speedups"]
    except (KeyError, TypeError):
        raise ValueError(f"{path}: no timing section; write it with `protosim crosscheck report --timing --json FILE`") from None
    return configs


def summary(rows: list[dict], speedups: list[dict]) -> dict:
    errs = [r["error"] for r in rows]
    return {"configs": len(rows), "mape": sum(map(abs, errs)) / len(errs) if errs else None,
            "past_25": sum(abs(e) > PAST for e in errs), "worst_fast": min(errs, default=None),
            "worst_slow": max(errs, default=None), "speedups": len(speedups),
            "speedups_within_5": sum(abs(s["error"]) <= SPEEDUP_OK for s in speedups)}


def diff(before: dict, after: dict, moved_points: float = 0.05) -> dict:
    """Both reports over the configs they share, and the configs that moved (error in percent
    points: ``moved_points`` 0.05 = 0.05 of a point)."""
    a = {r["label"]: r for r in before["rows"]}
    b = {r["label"]: r for r in after["rows"]}
    common = [k for k in a if k in b]
    keep = set(common)
    pair = lambda s: (s["from"], s["to"])  # noqa: E731
    sa = [s for s in before["speedups"] if s["from"] in keep and s["to"] in keep]
    sb = [s for s in after["speedups"] if s["from"] in keep and s["to"] in keep]
    moved = []
    for k in common:
        ea, eb = a[k]["error"], b[k]["error"]
        if abs(eb - ea) * 100 > moved_points:
            moved.append({"label": k, "before": ea, "after": eb, "closer": abs(eb) < abs(ea)})
    moved.sort(key=lambda m: -abs(m["after"] - m["before"]))
    sb_by = {pair(s): s for s in sb}
    speedups_moved = [{"from": s["from"], "to": s["to"], "before": s["error"], "after": sb_by[pair(s)]["error"]}
                      for s in sa if pair(s) in sb_by and abs(sb_by[pair(s)]["error"] - s["error"]) * 100 > moved_points]
    return {"before": summary([a[k] for k in common], sa), "after": summary([b[k] for k in common], sb),
            "only_before": sorted(set(a) - keep), "only_after": sorted(set(b) - keep),
            "moved": moved, "speedups_moved": speedups_moved}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def render(d: dict) -> str:
    a, b = d["before"], d["after"]
    lines = [f"{a['configs']} configs in both reports",
             f"  MAPE               {a['mape'] * 100:.2f}% -> {b['mape'] * 100:.2f}%" if a["configs"] else "  (none)",
             f"  past 25%           {a['past_25']} -> {b['past_25']}",
             f"  speed-ups <= 5%    {a['speedups_within_5']} of {a['speedups']} -> {b['speedups_within_5']} of {b['speedups']}",
             f"  worst (fast/slow)  {_pct(a['worst_fast'])} / {_pct(a['worst_slow'])} -> {_pct(b['worst_fast'])} / {_pct(b['worst_slow'])}"]
    closer = sum(m["closer"] for m in d["moved"])
    lines.append(f"  moved: {len(d['moved'])} ({closer} closer to silicon, {len(d['moved']) - closer} farther)")
    lines += [f"    {m['label']:56s} {_pct(m['before'])} -> {_pct(m['after'])}" for m in d["moved"]]
    if d["speedups_moved"]:
        lines.append(f"  speed-ups that moved: {len(d['speedups_moved'])}")
        lines += [f"    {s['from']} -> {s['to']}: {_pct(s['before'])} -> {_pct(s['after'])}" for s in d["speedups_moved"]]
    for side in ("only_before", "only_after"):
        if d[side]:
            lines.append(f"  {side.replace('_', ' ')} (not compared): {len(d[side])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.report.timing_diff", description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path, help="a report JSON (protosim crosscheck report --timing --json)")
    ap.add_argument("after", type=Path, help="the same records' report under the changed model")
    ap.add_argument("--moved", type=float, default=0.05, help="list configs whose error moved by more than this many percent points (default 0.05)")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(argv)
    try:
        d = diff(load(args.before), load(args.after), args.moved)
    except OSError as e:
        print(f"timing_diff: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"timing_diff: {e}", file=sys.stderr)
        return 2
    print(json.dumps(d, indent=1) if args.json else render(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
