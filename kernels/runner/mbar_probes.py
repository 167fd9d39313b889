"""Run a probe bundle's mbarrier probes on the GPU and append one JSON line per launch.

    python -m kernels.runner.mbar_probes --bundle .gpu/probes --out F.jsonl --commit SHA

The bundle is what ``kernels.toolchain.mbar_probes`` wrote.  Probes of undefined
behaviour may trap, which poisons the CUDA context, so each probe gets a child process
of its own and a fresh one after every fault (:mod:`kernels.runner.launch`, the
launcher the protocol-kernel runner uses too).  At the end the run is compared with the
model (:mod:`kernels.report.mbar_probes`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from protosim.ptx import probes as P

from ..report.mbar_probes import compare_files
from . import launch as L

PROG = "kernels.runner.mbar_probes"


def _child(args) -> int:
    bundle = args.bundle
    entry = {p["name"]: p for p in json.loads((bundle / "manifest.json").read_text())["probes"]}[args.probe]
    runtime = L.start_child_runtime(PROG, lambda tvm: tvm.runtime.load_module(str(bundle / entry["so"]))["main"])
    if runtime is None:
        return L.SETUP_FAILED
    torch, env, fn = runtime
    meta = {**json.loads(args.meta), **env}
    src = torch.tensor([P.src_word(i) for i in range(P.SRC_WORDS)], dtype=torch.int64, device="cuda")
    with args.out.open("a") as f:
        for launch in range(args.first, args.first + args.count):
            out = torch.zeros(entry["words"], dtype=torch.int64, device="cuda")
            rec = {"schema": 1, "time": L.utc_now(), **meta, "probe": entry["name"],
                   "rule": entry["rule"], "ops": entry["ops"], "launch": launch, "settle_cycles": args.settle_cycles,
                   "budget_cycles": args.budget_cycles}
            try:
                torch.cuda.synchronize()
                t = time.perf_counter()
                fn(out, src, args.settle_cycles, args.budget_cycles)
                torch.cuda.synchronize()
                words = [int(w) for w in out.cpu().tolist()]
            except Exception as exc:  # noqa: BLE001  (the launch or its synchronisation failed: the kernel faulted)
                rec.update(outcome="fault", fault=L.fault_text(exc), words=None)
                f.write(json.dumps(rec) + "\n")
                return L.FAULTED  # the context is poisoned: the parent starts a fresh child for the next launch
            rec.update(outcome="ok", elapsed_ms=round((time.perf_counter() - t) * 1e3, 3), words=words, decoded=P.decode(entry["ops"], words))
            f.write(json.dumps(rec) + "\n")
            f.flush()
    return 0


def run_all(args) -> int:
    if not L.have_gpu():
        print(f"{PROG}: no NVIDIA GPU on this machine (no /dev/nvidia*): run this on the GPU machine; nothing was run",
              file=sys.stderr)
        return 2
    manifest = json.loads((args.bundle / "manifest.json").read_text())["probes"]
    todo = [p for p in manifest if not args.only or args.only in p["name"]]
    run_id = L.new_run_id()
    meta = {"commit": args.commit, "run": run_id}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(todo)} probes x {args.launches} launches (run {run_id})", flush=True)

    def start(remaining: list[tuple[str, int]]) -> int:
        # the child records launches in order, so what is left is always a run of consecutive launches
        name, first = remaining[0]
        return L.spawn([PROG, "--child", name, "--bundle", str(args.bundle), "--out", str(args.out),
                        "--first", str(first), "--count", str(len(remaining)), "--meta", json.dumps(meta),
                        "--settle-cycles", str(args.settle_cycles), "--budget-cycles", str(args.budget_cycles)],
                       args.child_timeout, args.bundle)

    def done() -> set:
        return L.recorded(args.out, run_id, lambda r: (r.get("probe"), r.get("launch")))

    for p in todo:
        def host_record(task: tuple[str, int], outcome: str, why: str, p: dict = p) -> None:
            with args.out.open("a") as f:
                f.write(json.dumps({"schema": 1, "time": L.utc_now(), **meta, **L.host_environment(), "tvm": None, "probe": p["name"],
                                    "rule": p["rule"], "ops": p["ops"], "launch": task[1], "outcome": outcome, outcome: why,
                                    "words": None}) + "\n")

        if not L.run_tasks([(p["name"], n) for n in range(args.launches)], start, done, host_record, args.child_timeout):
            print(f"{PROG}: the GPU runtime did not start (the child's reason is above); stopping", file=sys.stderr)
            return 2
        print(f"  {p['name']}: {sum(name == p['name'] for name, _ in done())} launches recorded", flush=True)
    return compare_files([args.out], as_json=False, run_id=run_id)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, default=Path(".gpu/probes"), help="folder made by kernels.toolchain.mbar_probes")
    ap.add_argument("--out", type=Path, required=True, help="JSON-lines file to append records to")
    ap.add_argument("--settle-cycles", type=int, default=P.DEFAULT_SETTLE_CYCLES, help="time a bulk copy is given to land")
    ap.add_argument("--budget-cycles", type=int, default=P.DEFAULT_BUDGET_CYCLES, help="budget of each bounded wait")
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    ap.add_argument("--only", help="only probes whose name contains this")
    ap.add_argument("--launches", type=int, default=2, help="launches per probe (default 2)")
    ap.add_argument("--child-timeout", type=float, default=120.0, help="seconds before a silent child is killed")
    ap.add_argument("--child", dest="probe", help=argparse.SUPPRESS)  # the launcher's child: run launches of this probe
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--meta", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not (args.bundle / "manifest.json").exists():
        print(f"{PROG}: {args.bundle}/manifest.json not found: build it first with "
              f"`python -m kernels.toolchain.mbar_probes --bundle {args.bundle}`", file=sys.stderr)
        return 2
    return _child(args) if args.probe else run_all(args)


if __name__ == "__main__":
    sys.exit(main())
