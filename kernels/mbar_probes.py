"""Differential microtests of the mbarrier model on the H200: one tiny kernel per rule.

    python -m kernels.mbar_probes build --bundle .gpu/probes          # CPU: compile every probe
    python -m kernels.mbar_probes run --bundle .gpu/probes --out F.jsonl --commit SHA   # GPU
    python -m kernels.mbar_probes compare results/silicon/mbar_probes/*.jsonl [--json]

The probes themselves (name, rule, op sequence, output-word layout), the model's
prediction and the comparison live in :mod:`protosim.ptx.probes` (pure Python, no
tvm): one op sequence drives both the kernel built here and the model.

Each kernel is one CTA of one warp; lane 0 executes the probe's ops in order on one
mbarrier in shared memory and writes int64 observation words to ``out``.  Every wait
is bounded (a single ``test_wait``/``try_wait``, or a ``try_wait`` loop with a
``clock64`` budget), so a kernel never hangs.  Probes of undefined behaviour may
trap, which poisons the CUDA context: ``run`` therefore gives each probe a child
process of its own, and a fresh one after every fault.  The parent never touches CUDA.

Bundle layout (``build``): ``probes/<name>.so``, ``manifest.json`` (name, rule, ops,
words, file), and, as in ``kernels.build``, tvm trimmed to its runtime (``tvm/``) and
the ``apache-tvm-ffi`` cp312 wheel (``wheels/``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from protosim.ptx import probes as P

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT / "build" / "mbar_probes"
NO_RECORD = 5  # child exit status: it wrote nothing (setup failed after CUDA started)


# ----------------------------------------------------------------------------- the kernels


def _steps(ops) -> list[tuple]:
    """Ops as kernel steps ``(kind, a, b, first output word)``: plain ints and strings only,
    so every branch on them is decided while the TIRx script is parsed."""
    steps = []
    for op, at in zip(ops, P.word_offsets(ops), strict=True):
        kind, a = op[0], op[1] if len(op) > 1 else 0
        b = 0
        if kind == "arrive" and a is None:
            kind, a = "arrive_plain", 0  # the form without a count operand
        if kind == "try_wait" and op[2] is not None:
            kind, b = "try_wait_hint", op[2]
        if kind == "snap":
            a = 0  # the label is the host's business
        steps.append((kind, a, b, at or 0))
    return steps


def build_kernel(probe: P.Probe):
    """The ``@T.prim_func`` of one probe (not compiled).

    Signature: ``(out: int64[words], src: int64[SRC_WORDS], settle_cycles, budget_cycles)``.
    """
    from tvm.script import tirx as T

    WORDS = P.n_words(probe.ops)
    SRC_WORDS = P.SRC_WORDS

    @T.inline
    def timed_wait(kind, parity, hint, at, bar, out, ok, t0):
        # One probe of the barrier between two clock64 reads: result and cycles.
        t0 = T.cast(T.cuda.clock64(), "int64")
        if kind == "test_wait":
            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
        if kind == "try_wait":
            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity))
        if kind == "try_wait_hint":
            T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(parity), T.uint32(hint))
        out[at + 1] = T.cast(T.cuda.clock64(), "int64") - t0
        out[at] = T.cast(ok, "int64")

    @T.inline
    def do_step(kind, a, b, at, bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles):
        if kind == "init":
            T.ptx.mbarrier.init.shared.b64(T.address_of(bar[0]), T.uint32(a))
            T.ptx.fence.mbarrier_init.release.cluster()  # before the async proxy may signal it
        if kind == "arrive":
            T.ptx.mbarrier.arrive.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "arrive_plain":
            T.ptx.mbarrier.arrive.shared.b64(T.address_of(bar[0]))
        if kind == "expect_tx":
            T.ptx.mbarrier.expect_tx.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "complete_tx":
            T.ptx.mbarrier.complete_tx.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "arrive_expect_tx":
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(bar[0]), T.uint32(a))
        if kind == "bulk_copy":
            T.ptx["cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"](
                T.address_of(data[0]), T.address_of(src[0]), T.uint32(a), T.address_of(bar[0]))
            # Settle by time, not by the barrier: the barrier is the thing under test.
            t0 = T.cast(T.cuda.clock64(), "int64")
            flag = 0
            while flag == 0:
                T.cuda.nano_sleep(T.uint64(1000))
                if T.cast(T.cuda.clock64(), "int64") - t0 >= settle_cycles:
                    flag = 1
            # A memory clobber, so the reads below are not hoisted above the loop; and it
            # orders the async proxy's writes before these generic reads.
            T.ptx.fence.proxy.async_.shared__cta()
            out[at] = data[0]
            out[at + 1] = data[a // 8 - 1]
        if kind == "snap":
            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(0))
            out[at] = T.cast(ok, "int64")
            T.ptx.mbarrier.test_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(1))
            out[at + 1] = T.cast(ok, "int64")
            out[at + 2] = T.cast(bar[0], "int64")  # an ordinary 64-bit load of the barrier word
        if kind == "test_wait" or kind == "try_wait" or kind == "try_wait_hint":
            timed_wait(kind, a, b, at, bar, out, ok, t0)
        if kind == "bounded_wait":
            t0 = T.cast(T.cuda.clock64(), "int64")
            flag = 0
            while flag == 0:
                T.ptx.mbarrier.try_wait.parity.shared.b64(ok, T.address_of(bar[0]), T.uint32(a))
                if ok != T.uint32(0):
                    flag = 1
                else:
                    if T.cast(T.cuda.clock64(), "int64") - t0 > budget_cycles:
                        flag = 2
            out[at + 1] = T.cast(T.cuda.clock64(), "int64") - t0
            out[at] = T.cast(ok, "int64")

    def chain(steps):
        # TIRx has no loop over a Python list: unroll it into nested inline calls.
        if not steps:
            @T.inline
            def done(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles):
                out[0] = T.int64(P.DONE)
            return done
        first, rest = steps[0], chain(steps[1:])

        @T.inline
        def step(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles):
            do_step(first[0], first[1], first[2], first[3], bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles)
            rest(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles)
        return step

    run_probe = chain(_steps(P.normalize(probe.ops)))

    @T.prim_func
    def kernel(
        out: T.Buffer((WORDS,), "int64"),
        src: T.Buffer((SRC_WORDS,), "int64"),
        settle_cycles: T.int64,
        budget_cycles: T.int64,
    ):
        T.device_entry()
        _cta = T.cta_id([1])
        tx = T.thread_id([32])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(128)
        data = pool.alloc((SRC_WORDS,), "int64", align=128)  # bulk-copy destination
        pool.commit()
        ok = T.local_scalar("uint32")
        t0 = T.local_scalar("int64")
        flag = T.local_scalar("int32")
        if tx == 0:
            for i in T.serial(SRC_WORDS):
                data[i] = T.int64(0)  # so a copy that never landed reads as 0, not as stale data
            T.ptx.fence.proxy.async_.shared__cta()  # generic writes before the async proxy's
            run_probe(bar, data, src, out, ok, t0, flag, settle_cycles, budget_cycles)

    return kernel


# ----------------------------------------------------------------------------- build (CPU)


def _fingerprint() -> str:
    from .build import toolchain_fingerprint

    h = hashlib.sha256(toolchain_fingerprint().encode())
    h.update(Path(__file__).read_bytes())
    h.update(Path(P.__file__).read_bytes())
    return h.hexdigest()[:16]


def _compile_one(name: str, out: str) -> tuple[str, float]:
    from . import toolchain

    t = time.perf_counter()
    mod = toolchain.compile_primfunc(build_kernel(P.BY_NAME[name]), "sm_90a", f"probe {name}")
    toolchain.export(mod, Path(out), name)
    return name, time.perf_counter() - t


def cuda_source(name: str) -> str:
    """The generated CUDA of one probe (the caller has the stub libcuda on its loader path)."""
    from . import toolchain

    return toolchain.cuda_source(toolchain.compile_primfunc(build_kernel(P.BY_NAME[name]), "sm_90a", f"probe {name}"))


def build_bundle(bundle: Path, cache: Path, workers: int, only: str | None = None, runtime: bool = True, log=print) -> dict:
    from . import build as kbuild
    from . import toolchain

    probes = [p for p in P.PROBES if not only or only in p.name]
    fp = _fingerprint()
    paths = {p.name: cache / f"{p.name}-{fp}.so" for p in probes}
    missing = [n for n, path in paths.items() if not path.exists()]
    log(f"{len(probes)} probes, {len(probes) - len(missing)} cached, {len(missing)} to build ({workers} workers)")
    t = time.perf_counter()
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        with cf.ProcessPoolExecutor(workers) as pool:
            futures = {pool.submit(_compile_one, n, str(paths[n])): n for n in missing}
            for i, fut in enumerate(cf.as_completed(futures), 1):
                try:
                    _, seconds = fut.result()
                except Exception as exc:  # name the probe; the cause is tvm's or nvcc's message
                    raise toolchain.BuildError(f"probe {futures[fut]}: {exc}") from exc
                log(f"  [{i}/{len(missing)}] {futures[fut]}  {seconds:.1f} s")
    folder = bundle / "probes"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.so"):
        old.unlink()
    manifest = []
    for p in probes:
        (folder / f"{p.name}.so").write_bytes(paths[p.name].read_bytes())
        manifest.append({"name": p.name, "rule": p.rule, "ops": [list(op) for op in p.ops], "words": P.n_words(p.ops),
                         "may_fault": P.predict(p.ops)["outcome"] == "fault", "so": f"probes/{p.name}.so"})
    (bundle / "manifest.json").write_text(json.dumps({"kind": "mbar_probes", "fingerprint": fp, "probes": manifest}, indent=1))
    if runtime:  # the same runtime kernels.build ships, so this folder is self-contained
        kbuild.trim_tvm(bundle / "tvm")
        kbuild.ffi_wheel(bundle / "wheels")
    total = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file())
    log(f"bundle {bundle}: {len(manifest)} probes{', tvm runtime + ffi wheel' if runtime else ''}; {total / 1e6:.1f} MB in all")
    return {"probes": len(manifest), "seconds": round(time.perf_counter() - t, 1), "bytes": total, "bundle": str(bundle)}


# ----------------------------------------------------------------------------- run (GPU)


def _child(args) -> int:
    from .run import SETUP_FAILED, _setup_runtime, environment

    bundle = args.bundle
    entry = {p["name"]: p for p in json.loads((bundle / "manifest.json").read_text())["probes"]}[args.probe]
    try:
        torch, tvm = _setup_runtime(bundle)
        fn = tvm.runtime.load_module(str(bundle / entry["so"]))["main"]
    except Exception as exc:  # noqa: BLE001  (no GPU, no torch, no tvm runtime: say which, run nothing)
        print(f"kernels.mbar_probes: cannot start the GPU runtime: {type(exc).__name__}: {exc}", file=sys.stderr)
        return SETUP_FAILED
    meta = {**json.loads(args.meta), **environment(), "tvm": getattr(tvm, "__version__", None)}
    src = torch.tensor([P.src_word(i) for i in range(P.SRC_WORDS)], dtype=torch.int64, device="cuda")
    with args.out.open("a") as f:
        for launch in range(args.first, args.first + args.count):
            out = torch.zeros(entry["words"], dtype=torch.int64, device="cuda")
            rec = {"schema": 1, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta, "probe": entry["name"],
                   "rule": entry["rule"], "ops": entry["ops"], "launch": launch, "settle_cycles": args.settle_cycles,
                   "budget_cycles": args.budget_cycles}
            try:
                torch.cuda.synchronize()
                t = time.perf_counter()
                fn(out, src, args.settle_cycles, args.budget_cycles)
                torch.cuda.synchronize()
                words = [int(w) for w in out.cpu().tolist()]
            except Exception as exc:  # noqa: BLE001  (the launch or its synchronisation failed: the kernel faulted)
                rec.update(outcome="fault", fault=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", words=None)
                f.write(json.dumps(rec) + "\n")
                return 3  # the context is poisoned: the parent starts a fresh child for the next launch
            rec.update(outcome="ok", elapsed_ms=round((time.perf_counter() - t) * 1e3, 3), words=words, decoded=P.decode(entry["ops"], words))
            f.write(json.dumps(rec) + "\n")
            f.flush()
    return 0


def _recorded(out: Path, run_id: str, probe: str) -> int:
    if not out.exists():
        return 0
    n = 0
    for line in out.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            n += r.get("run") == run_id and r.get("probe") == probe
    return n


def _have_gpu() -> bool:
    return any(Path("/dev").glob("nvidia[0-9]*"))


def run_all(args) -> int:
    from .run import SETUP_FAILED, host_environment

    if not _have_gpu():
        print("kernels.mbar_probes: no NVIDIA GPU on this machine (no /dev/nvidia*): run this on the GPU machine; nothing was run",
              file=sys.stderr)
        return 2
    manifest = json.loads((args.bundle / "manifest.json").read_text())["probes"]
    todo = [p for p in manifest if not args.only or args.only in p["name"]]
    run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
    meta = {"commit": args.commit, "run": run_id}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(todo)} probes x {args.launches} launches (run {run_id})", flush=True)
    env = dict(os.environ)
    if (args.bundle / "tvm").is_dir():  # the bundle's own trimmed tvm first
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(args.bundle.resolve()), env.get("PYTHONPATH", "")) if p)
    for p in todo:
        done = 0
        while done < args.launches:
            cmd = [sys.executable, "-m", "kernels.mbar_probes", "child", "--bundle", str(args.bundle), "--out", str(args.out),
                   "--probe", p["name"], "--first", str(done), "--count", str(args.launches - done), "--meta", json.dumps(meta),
                   "--settle-cycles", str(args.settle_cycles), "--budget-cycles", str(args.budget_cycles)]
            host = None
            try:
                rc = subprocess.run(cmd, timeout=args.child_timeout, check=False, env=env, cwd=ROOT).returncode
                if rc == SETUP_FAILED:
                    print("kernels.mbar_probes: the GPU runtime did not start (the child's reason is above); stopping", file=sys.stderr)
                    return 2
                if rc not in (0, 3):
                    host = ("fault", {"fault": f"the child process died (exit status {rc}) without recording this launch"})
            except subprocess.TimeoutExpired:
                host = ("timeout", {"timeout": f"no record within {args.child_timeout} s: the child was killed"})
            now = _recorded(args.out, run_id, p["name"])
            if now == done:  # nothing recorded: the launch in progress killed or hung its process
                outcome, evidence = host or ("fault", {"fault": "the child process exited without recording this launch"})
                with args.out.open("a") as f:
                    f.write(json.dumps({"schema": 1, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta,
                                        **host_environment(), "tvm": None, "probe": p["name"], "rule": p["rule"], "ops": p["ops"],
                                        "launch": done, "outcome": outcome, **evidence, "words": None}) + "\n")
                now += 1
            done = now
        print(f"  {p['name']}: {done} launches recorded", flush=True)
    return compare_files([args.out], as_json=False, run_id=run_id)


# ----------------------------------------------------------------------------- compare


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


# ----------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.mbar_probes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile every probe for sm_90a on this (CPU) machine and write the bundle")
    b.add_argument("--bundle", type=Path, default=ROOT / ".gpu" / "probes")
    b.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    b.add_argument("--only", help="only probes whose name contains this")
    b.add_argument("--no-runtime", action="store_true", help="leave out tvm/ and wheels/ (carry another bundle's)")
    b.add_argument("--json", action="store_true")
    for name in ("run", "child"):
        r = sub.add_parser(name, help="run the bundle's probes on the GPU, one child process per probe" if name == "run" else argparse.SUPPRESS)
        r.add_argument("--bundle", type=Path, default=Path(".gpu/probes"))
        r.add_argument("--out", type=Path, required=True, help="JSON-lines file to append records to")
        r.add_argument("--settle-cycles", type=int, default=P.DEFAULT_SETTLE_CYCLES, help="time a bulk copy is given to land")
        r.add_argument("--budget-cycles", type=int, default=P.DEFAULT_BUDGET_CYCLES, help="budget of each bounded wait")
        r.add_argument("--meta", default="{}", help=argparse.SUPPRESS)
        if name == "run":
            r.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
            r.add_argument("--only", help="only probes whose name contains this")
            r.add_argument("--launches", type=int, default=2, help="launches per probe (default 2)")
            r.add_argument("--child-timeout", type=float, default=120.0, help="seconds before a silent child is killed")
        else:
            r.add_argument("--probe", required=True)
            r.add_argument("--first", type=int, default=0)
            r.add_argument("--count", type=int, default=1)
    c = sub.add_parser("compare", help="silicon vs model for recorded probe runs")
    c.add_argument("files", nargs="+", type=Path)
    c.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    if args.cmd == "compare":
        return compare_files(args.files, args.json)
    if args.cmd in ("run", "child") and not (args.bundle / "manifest.json").exists():
        print(f"kernels.mbar_probes: {args.bundle}/manifest.json not found: build it first with "
              f"`python -m kernels.mbar_probes build --bundle {args.bundle}`", file=sys.stderr)
        return 2
    if args.cmd == "child":
        return _child(args)
    if args.cmd == "run":
        return run_all(args)
    from . import toolchain

    toolchain.ensure_stub_on_path()  # re-executes this process once, before tvm is imported
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    try:
        summary = build_bundle(args.bundle, args.cache, max(1, args.jobs), args.only, not args.no_runtime, log)
    except toolchain.BuildError as exc:
        print(f"kernels.mbar_probes: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary) if args.json else f"done in {summary['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
