"""The mbarrier probes' recorded H200 runs against the model, probe by probe.

    python -m kernels.report.mbar_probes results/silicon/mbar_probes/*.jsonl [--json]

The records are what :mod:`kernels.runner.mbar_probes` appends; the model's prediction
and the comparison are :mod:`protosim.ptx.probes` (pure Python).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from protosim.ptx import probes as P


def load_records(paths: list[Path], run_id: str | None = None) -> list[tuple[str, dict]]:
    rows = []
    for path in paths:
        for n, line in enumerate(Path(path).read_text().splitlines(), 1):
            if line.strip():
                r = json.loads(line)
                if run_id is None or r.get("run") == run_id:
                    rows.append((f"{Path(path).name}:{n}", r))
    return rows


def compare_files(paths: list[Path], as_json: bool, run_id: str | None = None) -> int:
    rows = [(where, r, P.compare(r)) for where, r in load_records(paths, run_id)]
    if as_json:
        # with both sides' observations: the model's state (phase, pending, tx) next to the
        # silicon's raw barrier word at every snap, for whoever decodes that word one day
        print(json.dumps([{"where": w, "launch": r.get("launch"), **c.to_dict(), "model_prediction": P.predict(r["ops"]),
                           "silicon_observed": P.decode(r["ops"], r["words"]) if r.get("words") else None} for w, r, c in rows], indent=1))
        return 0
    if not rows:
        print("no probe records found")
        return 0
    table = [("probe", "rule", "silicon", "model", "agree")]
    for _, r, c in rows:
        verdict = c.verdict + (" (known)" if c.known and c.verdict != "agree" else "")
        table.append((f"{c.probe}#{r.get('launch', 0)}", c.rule, c.silicon, c.model, verdict))
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for i, row in enumerate(table):
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    for _, r, c in rows:
        if c.verdict != "agree":
            print(f"{c.probe}#{r.get('launch', 0)}: {c.verdict}: {c.reason}" + (f" [known: {c.known}]" if c.known else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.report.mbar_probes", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    return compare_files(args.files, args.json)


if __name__ == "__main__":
    sys.exit(main())
