"""The Triton corpus's sm_90 kernels at shapes drawn fresh, on the GPU, and their prediction:
the TTGIR reader's timing on launches it was not built against.

    python -m kernels.triton.shape_sweep run --seed S --out sweep.jsonl [--commit SHA]   # GPU machine
    python -m kernels.triton.shape_sweep run --launch mm_ptr_64x64x32_s1_w4:M=1024,N=4096,K=1024 ... --out probe.jsonl
    python -m kernels.triton.shape_sweep predict sweep.jsonl [--json]                    # CPU

``run`` draws, with ``random.Random(seed)``, two shapes for every sm_90 kernel of the corpus
(tests/fixtures/triton/corpus/index.json) other than its own: matmuls M, N, K from 256 to
4096 (multiples of the blocks, at most 2^33 multiply-adds so a replay stays seconds), attention
Z_H 16, 32 or 64 and N_CTX from 512 to 4096 -- every integer a multiple of 16, as Triton
specialized the saved kernels for.  Each is built as the corpus builds its own call
(``kernels.triton.corpus.call_spec``), launched in a child process by ``corpus_run``'s runner --
the TTGIR Triton compiled for it compared with the saved one (the same kernel, so the saved
file predicts it), the output checked against torch, kernel-only time measured -- and one JSON
line written per launch, with the launch values the reader needs.

``predict`` replays each saved TTGIR at the row's launch (every CTA, the inputs in L2 as the
runner leaves them) and prints predicted against measured kernel-only time (min over
repetitions), their ratio, and the mean absolute error.  Rows whose TTGIR differed, or whose
output was not correct, are listed and not counted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "triton" / "corpus"
SIZES = (256, 512, 1024, 2048, 4096)
MAX_MACS = 2 ** 33
SHAPES_PER_KERNEL = 2


def _index(triton_version: str) -> list[dict]:
    return [r for r in json.loads((CORPUS / "index.json").read_text())
            if r.get("triton") == triton_version and r.get("target") == "sm90" and r.get("compiled")
            and r.get("expected") == "correct"]


def draw_shapes(variant: dict, rng: random.Random, n: int = SHAPES_PER_KERNEL) -> list[dict]:
    """``n`` shapes for ``variant`` other than its own (see the module docstring)."""
    if variant["kernel"].startswith("attn"):
        keys, pools = ("Z_H", "N_CTX"), ((16, 32, 64), (512, 1024, 2048, 4096))
        ok = lambda s: s["N_CTX"] % variant["BLOCK_M"] == 0 and s["Z_H"] * s["N_CTX"] ** 2 <= 32 * 2048 ** 2  # noqa: E731
    else:
        keys, pools = ("M", "N", "K"), (SIZES, SIZES, SIZES)
        ok = lambda s: (s["M"] % variant["BLOCK_M"] == 0 and s["N"] % variant["BLOCK_N"] == 0  # noqa: E731
                        and s["K"] % variant["BLOCK_K"] == 0 and s["M"] * s["N"] * s["K"] <= MAX_MACS)
    own = {k: variant[k] for k in keys}
    candidates = [s for s in ({k: v for k, v in zip(keys, vals, strict=True)}
                              for vals in _product(pools)) if ok(s) and s != own]
    return rng.sample(candidates, min(n, len(candidates)))


def _product(pools):
    out = [()]
    for pool in pools:
        out = [p + (x,) for p in out for x in pool]
    return out


def plan(seed: int, triton_version: str) -> list[tuple[dict, dict, dict]]:
    """(variant, shape, index record) in a fixed order, shapes drawn with ``seed``, for the
    corpus records of ``triton_version``."""
    from kernels.triton.corpus import VARIANTS

    by_name = {v["name"]: v for v in VARIANTS}
    rng = random.Random(seed)
    out = []
    for rec in sorted(_index(triton_version), key=lambda r: r["file"]):
        variant = by_name.get(rec["variant"])
        if variant is None:
            continue
        for shape in draw_shapes(variant, rng):
            out.append((variant, shape, rec))
    return out


def chosen(launches: list[str], triton_version: str) -> list[tuple[dict, dict, dict]]:
    """(variant, shape, index record) for each ``VARIANT:KEY=V,...`` given (a designed probe
    rather than a draw); an unknown variant or key raises ValueError naming it."""
    from kernels.triton.corpus import VARIANTS

    by_name = {v["name"]: v for v in VARIANTS}
    records = {r["variant"]: r for r in _index(triton_version)}
    out = []
    for text in launches:
        name, _, values = text.partition(":")
        if name not in records or name not in by_name:
            raise ValueError(f"--launch {text!r}: no sm_90 corpus kernel {name!r}; one of: {', '.join(sorted(records))}")
        variant = by_name[name]
        keys = ("Z_H", "N_CTX") if variant["kernel"].startswith("attn") else ("M", "N", "K")
        shape = {}
        for pair in filter(None, values.split(",")):
            key, _, v = pair.partition("=")
            if key not in keys or not v.isdigit() or int(v) < 16 or int(v) % 16:
                raise ValueError(f"--launch {text!r}: {pair!r}: give {', '.join(k + '=N' for k in keys)} with N a "
                                 "multiple of 16 (as the saved kernel was specialized)")
            shape[key] = int(v)
        if set(shape) != set(keys):
            raise ValueError(f"--launch {text!r}: give every one of {', '.join(keys)}")
        out.append((variant, shape, records[name]))
    return out


def launch_values(spec: dict) -> dict:
    """What the TTGIR reader needs to walk the kernel at this call: every integer argument by
    name, and the grid's CTAs."""
    values = {a["name"]: a["int"] for a in spec["args"] if "int" in a}
    grid = [int(g) for g in spec["grid"]] + [1] * (3 - len(spec["grid"]))
    values["ctas"] = grid[0] * grid[1] * grid[2]
    if grid[1] > 1 or grid[2] > 1:
        values["grid"] = grid
    return values


def run(args) -> int:
    from kernels.triton import corpus_run as R
    from kernels.triton.corpus import call_spec

    env = R.environment(args.commit)
    print(json.dumps(env), flush=True)
    child = argparse.Namespace(corpus=CORPUS, reps=args.reps, sleep_cycles=200000, timeout=20.0, setup_timeout=180.0)
    import triton

    try:
        jobs = chosen(args.launch, triton.__version__) if args.launch else plan(args.seed, triton.__version__)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    lo, hi = args.part
    what = "chosen" if args.launch else f"seed {args.seed}"
    print(f"{len(jobs)} launches ({what}); running {lo}..{min(hi, len(jobs)) - 1}", flush=True)
    with args.out.open("a") as f:
        for n, (variant, shape, rec) in enumerate(jobs, 1):
            if not lo <= n - 1 < hi:
                continue
            spec = call_spec({**variant, **shape}, 90)
            job = {**rec, **spec}
            res = R.in_child(child, job, None)
            row = {**env, "seed": args.seed, "file": rec["file"], "variant": variant["name"], "shape": shape,
                   "launch": launch_values(spec), **res}
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            us = (res.get("kernel_us") or {}).get("min")
            print(f"[{n}/{len(jobs)}] {variant['name']} {shape}: {res.get('outcome')}, ttgir_match "
                  f"{res.get('ttgir_match')}, {us} us", flush=True)
    return 0


def predict_rows(rows: list[dict]) -> list[dict]:
    from kernels.triton.predicted_vs_measured import predict

    out = []
    for row in rows:
        r = {"variant": row["variant"], "shape": row["shape"], "outcome": row.get("outcome"),
             "ttgir_match": row.get("ttgir_match"), "measured_us": (row.get("kernel_us") or {}).get("min")}
        if r["outcome"] == "correct" and r["ttgir_match"] and r["measured_us"]:
            r["predicted_us"] = predict(CORPUS / f"{row['file']}.ttgir", row["launch"], row.get("n_regs")).timing.kernel_us
            r["ratio"] = r["predicted_us"] / r["measured_us"]
        out.append(r)
    return out


def predict(args) -> int:
    if not args.records.is_file():
        print(f"no such file: {args.records}", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip().startswith("{")]
    rows = [r for r in rows if "variant" in r]
    table = predict_rows(rows)
    if args.json:
        for r in table:
            print(json.dumps(r))
        return 0
    print("| kernel | shape | predicted us | measured us (min) | predicted / measured |")
    print("|---|---|---|---|---|")
    ratios = []
    for r in table:
        shape = " ".join(f"{k}={v}" for k, v in r["shape"].items())
        if "ratio" not in r:
            why = "TTGIR differs" if not r["ttgir_match"] else r["outcome"]
            print(f"| {r['variant']} | {shape} | not counted: {why} | | |")
            continue
        ratios.append(r["ratio"])
        print(f"| {r['variant']} | {shape} | {r['predicted_us']:.1f} | {r['measured_us']:.1f} | {r['ratio']:.2f} |")
    if ratios:
        from kernels.triton.predicted_vs_measured import summary

        print(f"\n{summary(ratios, 'launches')}; within 25%: {sum(abs(x - 1) <= 0.25 for x in ratios)}")
    return 0


def _span(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give A:B, two integers") from None
    if not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= A < B")
    return a, b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.triton.shape_sweep", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="draw shapes and launch them (GPU machine; needs torch and triton)")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--seed", type=int, help="draw two shapes per kernel with this seed")
    how.add_argument("--launch", action="append", metavar="VARIANT:M=..,N=..,K=..",
                     help="run this kernel at this shape instead of a draw (repeatable)")
    r.add_argument("--out", type=Path, required=True, help="JSON lines, appended")
    r.add_argument("--commit", default="unknown")
    r.add_argument("--reps", type=int, default=20)
    r.add_argument("--part", type=_span, default=(0, 10 ** 9), metavar="A:B",
                   help="only launches A to B-1 of the plan (a long sweep in several calls)")
    p = sub.add_parser("predict", help="predict the records of a run (CPU)")
    p.add_argument("records", type=Path)
    p.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    return run(args) if args.cmd == "run" else predict(args)


if __name__ == "__main__":
    sys.exit(main())
