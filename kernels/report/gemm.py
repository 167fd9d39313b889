"""Tables of recorded silicon runs (results/silicon/*.jsonl).

    python -m kernels.report.gemm       # outcome table and 4096^3 benchmark table
    python -m kernels.report.gemm --json  # the same, as JSON

Outcomes are grouped by kernel and delay; each cell counts launches per outcome,
with the timeout site (barrier/role@k) or the number of wrong tiles.  Nothing here
judges a run: the records are what the GPU showed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "results" / "silicon"


def load(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def delay_label(d: dict) -> str:
    parts = []
    if d.get("producer_delay_ns"):
        parts.append(f"producer {d['producer_delay_ns'] / 1000:g} us")
    if d.get("consumer_delay_ns"):
        parts.append(f"consumer {d['consumer_delay_ns'] / 1000:g} us")
    if d.get("lag_ns"):
        parts.append(f"warp {d['lag_warp']} lags {d['lag_ns'] / 1000:g} us")
    return ", ".join(parts) or "none"


def detail(r: dict) -> str:
    if r["outcome"] == "timeout":
        t = r["timeout"]
        if "host" in t:
            return t["host"]
        if "rank" in t:  # cluster kernels: "rank 1 timed out on tma_bar stage 0" (records before clusters have no rank)
            return f"rank {t['rank']} (cluster {t['cluster']}, CTA {t['cta']}) {t['barrier']}[{t['stage']}]/{t['role']}@k{t['k']}"
        return f"{t['barrier']}/{t['role']}@k{t['k']}"
    if r["outcome"] == "wrong":
        return f"{len(r['wrong_tiles'])}/{r['tiles']} tiles"
    return ""


def outcome_table(rows: list[dict]) -> list[dict]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r["kind"] == "outcome":
            groups[(r["name"], delay_label(r["delays"]))].append(r)
    table = []
    for (name, delay), rs in groups.items():
        counts = Counter(r["outcome"] for r in rs)
        details = Counter(detail(r) for r in rs if detail(r))
        table.append({"kernel": name, "knobs": rs[0]["knobs"], "delay": delay, "launches": len(rs), "outcomes": dict(counts),
                      "details": dict(details)})
    table.sort(key=lambda t: (bool(t["knobs"]), t["kernel"], t["delay"]))
    return table


def bench_table(rows: list[dict]) -> list[dict]:
    return [{"kernel": r["name"], "commit": r["commit"], **r["bench"]} for r in rows if r["kind"] == "bench"]


def timeout_sentence(r: dict) -> str | None:
    """One line for a kernel-side timeout record: which CTA (rank / cluster where the kernel
    ran on clusters) timed out on which barrier and stage, in which role and k-tile."""
    t = r.get("timeout") or {}
    if r.get("outcome") != "timeout" or "barrier" not in t:
        return None
    who = f"rank {t['rank']} of cluster {t['cluster']} (CTA {t['cta']})" if "rank" in t else f"CTA {t['cta']}"
    return f"{who} timed out on {t['barrier']} stage {t['stage']} ({t['role']}, k-tile {t['k']}, tile {t['tile']}, parity {t['parity']})"


def render(outcomes: list[dict], bench: list[dict]) -> str:
    w = max((len(t["kernel"]) for t in outcomes), default=10)
    lines = [f"{'kernel':<{w}}  {'delay':<26} {'n':>3}  outcome", "-" * (w + 60)]
    for t in outcomes:
        outs = ", ".join(f"{k} x{v}" for k, v in sorted(t["outcomes"].items()))
        det = "; ".join(f"{k} x{v}" for k, v in sorted(t["details"].items()))
        lines.append(f"{t['kernel']:<{w}}  {t['delay']:<26} {t['launches']:>3}  {outs}{'  [' + det + ']' if det else ''}")
    if bench:
        lines += ["", f"{'kernel (4096^3)':<{w}}  {'ms':>8} {'TFLOP/s':>8} {'torch':>8} {'ratio':>6}", "-" * (w + 40)]
        for b in bench:
            med = (f"   median {b['median_ms']:.4f} ms {b['median_tflops']:.1f} TFLOP/s (torch {b['torch_median_tflops']:.1f})"
                   if "median_ms" in b else "")
            lines.append(f"{b['kernel']:<{w}}  {b['ms']:>8.4f} {b['tflops']:>8.1f} {b['torch_tflops']:>8.1f} {b['ratio_vs_torch']:>6.3f}{med}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.report.gemm", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of .jsonl records (default results/silicon)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    rows = load(args.results)
    if not rows:
        print(f"no records under {args.results}", file=sys.stderr)
        return 2
    outcomes, bench = outcome_table(rows), bench_table(rows)
    print(json.dumps({"outcomes": outcomes, "bench": bench}, indent=1) if args.json else render(outcomes, bench))
    return 0


if __name__ == "__main__":
    sys.exit(main())
