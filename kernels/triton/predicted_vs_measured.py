"""Predicted vs measured kernel time for the corpus's sm_90 kernels (Triton and Gluon), and
whether each outcome the H200 showed is one the simulator reaches.

    python -m kernels.triton.predicted_vs_measured --measured results/silicon/triton/X.jsonl [...] [--json]
    python -m kernels.triton.predicted_vs_measured --outcomes --measured results/silicon/triton/X.jsonl [...]

Reads each measured record's saved TTGIR (tests/fixtures/triton/...), replays it nominally
on the h200 profile at the record's own launch (every CTA), and prints predicted time,
measured kernel-only time (min over repetitions, from ``corpus_run`` / ``gluon_run``),
their ratio, and for matmuls the predicted and measured TFLOP/s next to the roof.

The prediction is of what was measured: the kernel-only time of a launch -- the replay's
cycles plus the launch's fixed cost (``Timing.kernel_us``), which CUDA events around the
launch include -- with the inputs in L2 (``L2_AT_LAUNCH``).

The roof is what this H200 was measured to do: torch's fp16 GEMM (cuBLAS) at 4096^3,
757.0 TFLOP/s (results/silicon, docs/crosscheck.md); NVIDIA's datasheet gives 989.5 TFLOP/s
dense FP16 at the boost clock.  A prediction above the measured roof is flagged ``ROOF`` (twice it for
dots on 1-byte operands, fp8 and int8: :data:`BYTE_OPERAND_SPEEDUP`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

from protosim.arch import load_profile
from protosim.frontends.ttgir import DEFAULT_MAX_OPS, TtgirError, read
from protosim.verdict import judge

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "triton"
ROOF_TFLOPS = load_profile("h200").best_gemm_tflops
"""torch fp16 GEMM 4096^3 on this H200, mean of 20 launches (the profile's ``best_gemm_tflops``; docs/crosscheck.md)."""
DATASHEET_TFLOPS = 989.5
"""NVIDIA H200 SXM datasheet, dense FP16/BF16 tensor core."""
BYTE_OPERAND_SPEEDUP = 2
"""NVIDIA H200 SXM datasheet: dense FP8 and INT8 (1,979 TFLOP/s, TOPS) are twice FP16's.  A kernel
whose dots take 1-byte operands is held to twice the measured fp16 roof -- assumed, not measured
(the same fraction of the datasheet as cuBLAS's fp16 GEMM reached)."""
_BYTE_OPERAND = re.compile(r"x(?:f8E\w+|i8)[,>]")


def roof_tflops(ttgir: str) -> float:
    """The roof a kernel's TFLOP/s is held to: the measured fp16 roof, twice it where a dot
    (``tt.dot``, ``ttng.warp_group_dot``) takes 1-byte operands (fp8, int8)."""
    dots = [line for line in ttgir.splitlines() if "tt.dot " in line or "warp_group_dot " in line]
    return ROOF_TFLOPS * (BYTE_OPERAND_SPEEDUP if any(_BYTE_OPERAND.search(d) for d in dots) else 1)
L2_AT_LAUNCH = "inputs"
"""What the measured launches found in L2: the runners write the inputs, then time repeated
launches on them after warm-ups (the steady state ``kernels.runner.gemm`` measures too)."""


CORPORA = ("corpus", "gluon", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "alignment", "gemm_parts", "heldout7", "heldout8", "heldout9")
"""The fixture folders with an index.json: the Triton corpus, the Gluon corpus, and the five held-out
sets (``kernels/triton/heldout*.py``: written apart from the reader, each kernel ran correctly on
the H200).  tests/triton_corpus.py judges the same folders."""


def summary(ratios: list[float], noun: str) -> str:
    """The line under a table of predicted / measured ratios: count, median, range and mean
    absolute error."""
    s = sorted(ratios)
    mape = sum(abs(x - 1) for x in s) / len(s)
    return (f"{len(s)} {noun}: predicted/measured median {s[len(s) // 2]:.2f}, min {s[0]:.2f}, max {s[-1]:.2f}; "
            f"mean absolute error {100 * mape:.1f}%")


def predict(path: Path, launch: dict | None = None, n_regs: int | None = None, max_ops: int = DEFAULT_MAX_OPS):
    """The nominal verdict of the TTGIR at ``path`` (at ``launch``'s values, else its sidecar's),
    replayed as the runners measure: every CTA, the inputs in L2, and -- when the launch record
    says how many registers the compiled kernel got (``n_regs``) -- the CTAs an SM holds by them.
    Its ``timing.kernel_us`` is the prediction of a kernel-only time."""
    schedule, _ = read(path, launch=launch, max_ops=max_ops)
    schedule = dataclasses.replace(schedule, l2_at_launch=L2_AT_LAUNCH)
    if n_regs:
        schedule = dataclasses.replace(schedule, regs_per_thread=n_regs)
    verdict, _ = judge(schedule)
    return verdict


def _index() -> dict[str, tuple[str, dict]]:
    """Every corpus record by its file stem: (corpus, record)."""
    index = {}
    for corpus in CORPORA:
        if not (FIXTURES / corpus / "index.json").exists():
            continue
        for r in json.loads((FIXTURES / corpus / "index.json").read_text()):
            index[r["file"].removesuffix(".ttgir")] = (corpus, r)
    return index


def _measured_us(rec: dict) -> float | None:
    if isinstance(rec.get("kernel_us"), dict):
        return rec["kernel_us"].get("min")
    if rec.get("time_ms_min") is not None:
        return rec["time_ms_min"] * 1000.0
    return None


def _flops(index_rec: dict | None) -> float | None:
    """2*M*N*K for a matmul record of the Triton corpus (its reference says which tensors), or
    the FLOPs its kernel source stated (``flops``: the held-out kernels)."""
    if index_rec and index_rec.get("flops"):
        return float(index_rec["flops"])
    if not index_rec or (index_rec.get("reference") or {}).get("op") != "matmul":
        return None
    ref, tensors = index_rec["reference"], index_rec.get("tensors", {})
    a, out = tensors.get(ref.get("a"), {}).get("shape"), tensors.get(ref.get("out"), {}).get("shape")
    if not a or not out:
        return None
    return 2.0 * out[0] * out[1] * a[1]


def _measured(measured_files: list[Path]):
    """(corpus record key, H200 record) for every run of a corpus kernel in the files."""
    for mf in measured_files:
        for line in mf.read_text().splitlines():
            rec = json.loads(line)
            yield (rec.get("file") or rec.get("record") or "").removesuffix(".ttgir"), rec


def rows(measured_files: list[Path], max_ops: int = DEFAULT_MAX_OPS, workers: int | None = 1) -> list[dict]:
    """One row per correct run of a corpus kernel in the files, in their order; the predictions
    spread over ``workers`` processes (``protosim.sweep``; None: every core)."""
    index = _index()
    items = []
    for key, rec in _measured(measured_files):
        if key not in index:  # say so: a record of a folder not in CORPORA would vanish from the table
            print(f"predicted_vs_measured: {key}: no fixture in {', '.join(CORPORA)} (tests/fixtures/triton); "
                  "skipped", file=sys.stderr)
            continue
        if rec.get("outcome") not in ("correct", "completed"):
            continue
        corpus, irec = index[key]
        if irec.get("expected") not in ("correct", "clean"):
            continue
        items.append((key, corpus, irec, rec, max_ops))

    return rows_of(items, workers)


def rows_of(items: list[tuple], workers: int | None) -> list[dict]:
    """:func:`_row` of every item, over ``workers`` processes, in the items' order."""
    from protosim.sweep import run_sweep

    def progress(done: int, total: int) -> None:
        print(f"\rpredicted {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return run_sweep(items, _row, workers=workers, chunk_size=1, progress=progress)


def _row(item) -> dict:
    """One kernel's row: its prediction beside its measured time (a sweep's work function)."""
    key, corpus, irec, rec, max_ops = item
    row = {"file": key, "corpus": corpus, "measured_us": _measured_us(rec), "n_spills": rec.get("n_spills")}
    try:
        verdict = predict(FIXTURES / corpus / f"{key}.ttgir", n_regs=rec.get("n_regs"), max_ops=max_ops)
        row["predicted_us"] = verdict.timing.kernel_us
        row["findings"] = verdict.kinds()
    except TtgirError as e:
        row["refused"] = str(e).split(": ", 1)[-1][:160]
    flops = _flops(irec)
    if flops and row.get("predicted_us"):
        row["predicted_tflops"] = flops / row["predicted_us"] / 1e6
        row["roof_tflops"] = roof_tflops((FIXTURES / corpus / f"{key}.ttgir").read_text())
        if row["measured_us"]:
            row["measured_tflops"] = flops / row["measured_us"] / 1e6
    return row


def _before(folder: str, max_ops: int, workers: int | None, as_json: bool) -> int:
    """Predictions for a fixture folder's compiled sm_90 kernels, each with the registers its
    compile reports (``n_regs`` in ``<name>.json``, as the H200's driver does)."""
    items = []
    for key, (corpus, irec) in _index().items():
        if corpus != folder or not irec.get("compiled", True) or not key.endswith(".sm90"):
            continue
        if irec.get("expected") not in (None, "correct", "clean"):
            continue
        meta = FIXTURES / corpus / f"{key}.json"
        n_regs = json.loads(meta.read_text()).get("n_regs") if meta.is_file() else None
        items.append((key, corpus, irec, {"n_regs": n_regs}, max_ops))
    if not items:
        print(f"predicted_vs_measured: no compiled sm_90 kernel in tests/fixtures/triton/{folder}", file=sys.stderr)
        return 2
    table = rows_of(items, workers)
    if as_json:
        for r in table:
            print(json.dumps({k: v for k, v in r.items() if k not in ("measured_us", "measured_tflops", "n_spills")}))
        return 0
    print("| kernel | predicted us | predicted TFLOP/s | findings |")
    print("|---|---|---|---|")
    for r in table:
        if "refused" in r:
            print(f"| {r['file']} | refused: {r['refused']} | | |")
        else:
            pt = r.get("predicted_tflops")
            print(f"| {r['file']} | {r['predicted_us']:.1f} | {f'{pt:.0f}' if pt else ''} | {', '.join(r['findings'])} |")
    return 0


SILICON_OUTCOME = {"correct": "correct", "wrong": "wrong", "timeout": "deadlock", "fault": "fault"}
"""A runner's outcome -> the simulator's outcome class (``completed``: the kernel ran to its end
without a reference to check it against: correct or wrong; ``error`` rows carrying a launch
failure are faults)."""


def outcome_rows(measured_files: list[Path], runs: int = 12, cta_cap: int = 8) -> list[dict]:
    """Every measured record of a kernel in the corpus: the H200's outcome, and the outcome
    set of ``explore`` on the saved TTGIR (launch capped at ``cta_cap`` CTAs)."""
    from protosim.verdict import explore

    index = _index()
    out = []
    for key, rec in _measured(measured_files):
        if key not in index or rec.get("edit_file"):
            continue
        corpus, irec = index[key]
        got = rec.get("outcome")
        if got == "error" and "launch failure" in str(rec.get("error", "")):
            got = "fault"
        if got not in ("correct", "wrong", "timeout", "fault", "completed"):
            continue
        path = FIXTURES / corpus / f"{key}.ttgir"
        launch = json.loads((path.with_name(path.name.replace(".ttgir", ".launch.json"))).read_text())
        schedule, _ = read(path, launch={"ctas": min(cta_cap, launch.get("ctas", 1))})
        outcomes = explore(schedule, runs=runs)
        reached = set(outcomes.classes)
        want = {"correct", "wrong"} if got == "completed" else {SILICON_OUTCOME[got]}
        out.append({"file": key, "expected": irec.get("expected"), "silicon": got, "simulator": sorted(reached),
                    "agrees": bool(want & reached)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.triton.predicted_vs_measured", description=__doc__.split("\n\n")[0])
    ap.add_argument("--measured", nargs="+", type=Path, help="JSON lines from corpus_run / gluon_run")
    ap.add_argument("--before", metavar="FOLDER", choices=CORPORA,
                    help="predict every compiled sm_90 kernel of a fixture folder before it is measured (no --measured): "
                         "a table, or JSON lines with --json, to commit ahead of the run")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--outcomes", action="store_true", help="outcome agreement instead of timing")
    ap.add_argument("--runs", type=int, default=12, help="explore replays per kernel (--outcomes)")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes the predictions spread over (default: every core; 1: this process)")
    ap.add_argument("--max-ops", type=int, default=DEFAULT_MAX_OPS,
                    help=f"refuse a kernel whose schedule would exceed this many ops (default {DEFAULT_MAX_OPS:,})")
    args = ap.parse_args(argv)
    if args.max_ops < 1:
        ap.error("--max-ops: give a positive integer")
    if args.workers is not None and args.workers < 1:
        ap.error("--workers: give a positive integer")
    if args.before:
        if args.measured or args.outcomes:
            ap.error("--before predicts without measurements: leave out --measured and --outcomes")
        return _before(args.before, args.max_ops, args.workers, args.json)
    if not args.measured:
        ap.error("give --measured FILE... (or --before FOLDER to predict ahead of a run)")
    missing = [str(p) for p in args.measured if not p.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.outcomes:
        table = outcome_rows(args.measured, runs=args.runs)
        if args.json:
            for r in table:
                print(json.dumps(r))
            return 0
        print("| kernel | expected | H200 | simulator's outcome set (explore, <= 8 CTAs) | agrees |")
        print("|---|---|---|---|---|")
        for r in table:
            print(f"| {r['file']} | {r['expected']} | {r['silicon']} | {', '.join(r['simulator'])} | "
                  f"{'yes' if r['agrees'] else '**no**'} |")
        n = sum(r["agrees"] for r in table)
        print(f"\n{n}/{len(table)} H200 outcomes are in the simulator's outcome set")
        return 0
    table = rows(args.measured, max_ops=args.max_ops, workers=args.workers)
    if args.json:
        for r in table:
            print(json.dumps(r))
        return 0
    print(f"roof: {ROOF_TFLOPS} TFLOP/s measured (torch fp16 GEMM 4096^3 on this H200); datasheet {DATASHEET_TFLOPS}")
    print("| kernel | predicted us | measured us (min) | predicted / measured | predicted TFLOP/s | measured TFLOP/s "
          "| spilled registers |")
    print("|---|---|---|---|---|---|---|")
    ratios, unspilled = [], []
    for r in table:
        spills = r.get("n_spills") or ""
        if "refused" in r:
            print(f"| {r['file']} | refused: {r['refused']} | | | | | {spills} |")
            continue
        p, m = r.get("predicted_us"), r.get("measured_us")
        ratio = p / m if p and m else None
        if ratio:
            ratios.append(ratio)
            if not spills:
                unspilled.append(ratio)
        pt, mt = r.get("predicted_tflops"), r.get("measured_tflops")
        flag = " ROOF" if pt and pt > r.get("roof_tflops", ROOF_TFLOPS) else ""
        print(f"| {r['file']} | {p:.1f} | {m:.1f} | {ratio:.2f} | {f'{pt:.0f}{flag}' if pt else ''} | "
              f"{f'{mt:.0f}' if mt else ''} | {spills} |" if ratio else f"| {r['file']} | {p} | {m} | | | | {spills} |")
    if ratios:
        print(f"\n{summary(ratios, 'kernels')}")
        if len(unspilled) < len(ratios) and unspilled:
            # ptxas's spills are local-memory traffic the TTGIR does not show: not timed
            print(summary(unspilled, "kernels without spilled registers"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
