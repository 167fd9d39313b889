"""Run the cluster timing probes on the GPU and append one JSON line per launch.

    python -m kernels.runner.cluster_probes --bundle .gpu/cluster_probes --out F.jsonl --commit SHA

The bundle is what ``kernels.toolchain.cluster_probes`` wrote.  No probe is expected to
fault (no undefined behaviour is exercised), so one child process runs every launch in
order (torch + tvm cost ~8 s per process); should one fault or hang anyway, the shared
launcher (:mod:`kernels.runner.launch`) records it and a fresh child goes on with the rest.
At the end the run is summarised (min / median / p90 per metric, in cycles) and the three
``[cluster]`` constants are derived (:func:`kernels.cluster_probes.constants`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .. import cluster_probes as C
from . import launch as L

PROG = "kernels.runner.cluster_probes"


def tasks(manifest: list[dict], launches: int, only: str | None) -> list[tuple[str, int, int]]:
    """``(probe, spin, launch)`` in run order."""
    return [(p["name"], spin, n) for p in manifest if not only or only in p["name"] for spin in p["spins"] for n in range(launches)]


def _clocks() -> dict:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
        sm, smax, mem = (x.strip() for x in out.stdout.splitlines()[0].split(","))
        return {"sm_clock_mhz": sm, "sm_clock_max_mhz": smax, "mem_clock_mhz": mem}
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}


def _child(args) -> int:
    bundle = args.bundle
    manifest = {p["name"]: p for p in json.loads((bundle / "manifest.json").read_text())["probes"]}
    fns: dict[str, object] = {}
    runtime = L.start_child_runtime(PROG)
    if runtime is None:
        return L.SETUP_FAILED
    torch, env, _ = runtime
    import tvm

    meta_common = {**json.loads(args.meta), **env}
    todo = [tuple(t) for t in json.loads(args.tasks)]
    src = torch.randn(256, 64, dtype=torch.float16, device="cuda")
    with args.out.open("a") as f:
        for name, spin, launch in todo:
            entry = manifest[name]
            p = C.BY_NAME[name]
            if name not in fns:
                fns[name] = tvm.runtime.load_module(str(bundle / entry["so"]))["main"]
            out = torch.zeros(len(C.series(p)) * p.n, dtype=torch.int64, device="cuda")
            meta = torch.zeros(C.META_WORDS, dtype=torch.int32, device="cuda")
            rec = {"schema": 1, "time": L.utc_now(), **meta_common, "probe": name, "kind": p.kind, "cluster": p.cluster,
                   "params": p.params, "n": p.n, "spin": spin, "launch": launch, "budget_cycles": args.budget_cycles}
            try:
                torch.cuda.synchronize()
                t = time.perf_counter()
                fns[name](out, meta, src, spin, args.budget_cycles)
                torch.cuda.synchronize()
                elapsed = (time.perf_counter() - t) * 1e3
                flat, m = out.cpu().tolist(), meta.cpu().tolist()
            except Exception as exc:  # noqa: BLE001  (the launch or its synchronisation failed: the kernel faulted)
                rec.update(outcome="fault", fault=L.fault_text(exc), rows=None)
                f.write(json.dumps(rec) + "\n")
                return L.FAULTED
            ok = m[0] == p.cluster and m[1] == 0
            rec.update(outcome="ok" if ok else "timeout", elapsed_ms=round(elapsed, 3), ctas_done=m[0], wait_timeouts=m[1],
                       smid=m[2:2 + p.cluster], rows=C.decode(p, flat))
            f.write(json.dumps(rec) + "\n")
            f.flush()
    return 0


def report(records: list[dict]) -> dict:
    summary = C.summarize(records)
    return {"summary": summary, "constants": C.constants(summary)}


def print_report(rep: dict) -> None:
    print(f"{'probe':28s} {'metric':18s} {'n':>5s} {'min':>8s} {'median':>8s} {'p90':>8s} {'max':>8s}")
    for key, metrics in rep["summary"].items():
        for m, s in metrics.items():
            if s and "threshold" in s:
                print(f"{key:28s} {m:18s} {s['n']:5d} threshold {s['threshold']:7.1f}  (last miss {s['lo']}, first hit {s['hi']}, "
                      f"{s['errors']} off the step)")
            elif s:
                print(f"{key:28s} {m:18s} {s['n']:5d} {s['min']:8.1f} {s['median']:8.1f} {s['p90']:8.1f} {s['max']:8.1f}")
    print(json.dumps(rep["constants"], indent=1))


def run_all(args) -> int:
    if not L.have_gpu():
        print(f"{PROG}: no NVIDIA GPU on this machine (no /dev/nvidia*): run this on the GPU machine; nothing was run", file=sys.stderr)
        return 2
    manifest = json.loads((args.bundle / "manifest.json").read_text())["probes"]
    todo = tasks(manifest, args.launches, args.only)
    run_id = L.new_run_id()
    meta = {"commit": args.commit, "run": run_id, **_clocks()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(todo)} launches (run {run_id}) {meta}", flush=True)

    def start(remaining: list) -> int:
        return L.spawn([PROG, "--child", "--bundle", str(args.bundle), "--out", str(args.out), "--tasks", json.dumps(remaining),
                        "--meta", json.dumps(meta), "--budget-cycles", str(args.budget_cycles)], args.child_timeout, args.bundle)

    def done() -> set:
        return L.recorded(args.out, run_id, lambda r: (r.get("probe"), r.get("spin"), r.get("launch")))

    def host_record(task, outcome: str, why: str) -> None:
        with args.out.open("a") as f:
            f.write(json.dumps({"schema": 1, "time": L.utc_now(), **meta, **L.host_environment(), "tvm": None, "probe": task[0],
                                "spin": task[1], "launch": task[2], "outcome": outcome, outcome: why, "rows": None}) + "\n")

    if not L.run_tasks(todo, start, done, host_record, args.child_timeout):
        print(f"{PROG}: the GPU runtime did not start (the child's reason is above); stopping", file=sys.stderr)
        return 2
    recs = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    recs = [r for r in recs if r.get("run") == run_id]
    bad = [(r["probe"], r["spin"], r["launch"], r["outcome"]) for r in recs if r["outcome"] != "ok"]
    print(f"{len(recs)} records, {len(bad)} not ok {bad[:10]}")
    print_report(report(recs))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, default=Path(".gpu/cluster_probes"), help="folder made by kernels.toolchain.cluster_probes")
    ap.add_argument("--out", type=Path, help="JSON-lines file to append records to (required unless --report)")
    ap.add_argument("--budget-cycles", type=int, default=C.DEFAULT_BUDGET, help="budget of each bounded wait")
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    ap.add_argument("--only", help="only probes whose name contains this")
    ap.add_argument("--launches", type=int, default=5, help="launches per probe and spin value (default 5)")
    ap.add_argument("--child-timeout", type=float, default=240.0, help="seconds before a silent child is killed")
    ap.add_argument("--report", type=Path, nargs="*", help="summarise these record files (no GPU needed) and exit")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tasks", default="[]", help=argparse.SUPPRESS)
    ap.add_argument("--meta", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.report is not None:
        recs = [json.loads(line) for f in args.report for line in f.read_text().splitlines() if line.strip()]
        print_report(report(recs))
        return 0
    if args.out is None:
        ap.error("--out is required")
    if not (args.bundle / "manifest.json").exists():
        print(f"{PROG}: {args.bundle}/manifest.json not found: build it first with "
              f"`python -m kernels.toolchain.cluster_probes --bundle {args.bundle}`", file=sys.stderr)
        return 2
    return _child(args) if args.child else run_all(args)


if __name__ == "__main__":
    sys.exit(main())
