"""Run a bundle's jobs on the GPU and append one JSON line per launch.

    python -m kernels.runner.gemm --bundle .gpu --out results.jsonl

The bundle is what ``kernels.toolchain.build`` wrote.  Launches run in child
processes through :mod:`kernels.runner.launch` (the parent never touches CUDA): one
child runs the launches in order and appends a record after each; after a kernel
fault it records the fault and exits, and a fresh child goes on at the next launch.
Jobs marked ``may_fault`` get a child of their own per launch.  A child that
outlives ``--child-timeout`` is killed and its launch recorded as a host-side
``timeout``.

Every launch draws fresh random inputs (never zeros) and fills D with NaN, so a
tile nobody wrote is wrong; the reference is fp32 through torch.  The inputs are
written just before the launch, so they start in L2 when they fit; a job with
``l2_at_launch = "cold"`` (or every job, under ``--l2 flush``) has a scratch buffer
of 4x the L2 written after them, so the kernel reads them from DRAM.  Each record
says which: ``l2_at_launch`` is ``inputs`` or ``flushed``.  Outcomes:
``correct``; ``wrong`` (which output tiles, their relative error); ``timeout``
(the kernel's watchdog record: barrier, role, iteration); ``fault``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..spec import BARRIER_NAMES, CLUSTER_STEPS, DIAG_FIELDS, DIAG_WORDS, ROLE_NAMES, TRACE_CAP, TRACE_EVENTS, grid_ctas
from . import launch as L
from . import timing as T

REL_TOL = 1e-2
"""A tile is wrong when max|D - ref| > REL_TOL * max|ref| over the tile (fp16 output
rounding is ~5e-4 relative; a stale or missing k-tile moves a tile by >> 1%)."""
PROG = "kernels.runner.gemm"
DEFAULT_TIMEOUT_CYCLES = 100_000_000  # ~50 ms at the H200's 1.98 GHz boost clock: >> any correct wait here


# ----------------------------------------------------------------------------- child side


def _tile_errors(torch, d, ref, bm: int, bn: int) -> tuple[list[list[int]], float]:
    """Per output tile relative error; returns (wrong tiles as [m, n], worst relative error)."""
    m_tiles, n_tiles = d.shape[0] // bm, d.shape[1] // bn
    diff = (d.float() - ref).abs().reshape(m_tiles, bm, n_tiles, bn)
    scale = ref.abs().reshape(m_tiles, bm, n_tiles, bn).amax(dim=(1, 3)).clamp_min(1e-6)
    err = diff.amax(dim=(1, 3)) / scale
    err = torch.where(torch.isfinite(err), err, torch.full_like(err, float("inf")))
    bad = (err > REL_TOL).nonzero().tolist()
    return [[int(m), int(n)] for m, n in bad], float(err.max())


def _trace_summary(torch, trace) -> dict:
    """Counts per event and mean gaps (cycles) between paired events of the same k-tile."""
    used = trace[trace[:, 0] != 0]
    t = [[int(x) for x in row] for row in used.cpu().tolist()]
    rows = len(t)
    counts: dict[str, int] = {}
    first: dict[tuple[int, int], int] = {}
    for ev, k, clk, _tile in t:
        name = TRACE_EVENTS.get(ev, str(ev))
        counts[name] = counts.get(name, 0) + 1
        first.setdefault((ev, k), clk)

    def mean_gap(a: int, b: int) -> float | None:
        gaps = [first[(b, k)] - c for (e, k), c in first.items() if e == a and (b, k) in first]
        return round(sum(gaps) / len(gaps), 1) if gaps else None

    clocks = [c for _, _, c, _ in t]
    return {
        "rows": rows,
        "events": counts,
        "span_cycles": (max(clocks) - min(clocks)) if clocks else 0,
        "mean_cycles": {
            "tma_issue_to_load_complete": mean_gap(1, 7),
            "load_complete_to_wait_return": mean_gap(7, 2),
            "mma_issue_to_done": mean_gap(3, 4),
            "mma_issue_to_mma_complete": mean_gap(3, 8),
            "mma_issue_to_stage_released": mean_gap(3, 9),
            "store_issue_to_done": mean_gap(5, 6),
        },
        "rows_raw": sorted(t, key=lambda r: r[2])[:2048],  # CTA 0's events (event, k, clock64, tile) for timing comparisons with the simulator
    }


def flush_l2(torch) -> None:
    """Evict everything from L2 by writing a buffer of 4x its size (writes allocate in L2)."""
    size = 4 * torch.cuda.get_device_properties(0).L2_cache_size
    scratch = torch.empty(size // 4, device="cuda", dtype=torch.int32)
    scratch.fill_(1)
    del scratch


def l2_state(job: dict, meta: dict) -> str:
    """What L2 holds at this job's launches, as the record says it: ``inputs`` or ``flushed``."""
    return "flushed" if meta.get("l2") == "flush" or job.get("l2_at_launch") == "cold" else "inputs"


def run_launch(torch, fn, job: dict, launch: int, timeout_cycles: int, l2: str = "inputs", timing_reps: int = T.REPS) -> dict:
    """One outcome launch on fresh inputs; a correct one is then timed kernel-only
    (``timing_reps`` repetitions, :func:`timing.kernel_time`) into ``kernel_ms``.  ``elapsed_ms``
    stays what it always was: events around this first call, the host path included."""
    cfg = job["spec"]["config"]
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    seed = int.from_bytes(os.urandom(4), "little")
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=g)
    d = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    diag = torch.zeros(DIAG_WORDS, device="cuda", dtype=torch.int32)
    trace = torch.zeros(TRACE_CAP, 4, device="cuda", dtype=torch.int64)
    delays = job["delays"]
    args = (a, b, d, diag, trace, timeout_cycles, delays["producer_delay_ns"], delays["consumer_delay_ns"], delays["lag_warp"], delays["lag_ns"])
    if l2 == "flushed":
        flush_l2(torch)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    record = {"launch": launch, "seed": seed, "timeout_cycles": timeout_cycles}
    try:
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001  (any error from the launch or its synchronisation is the kernel's fault)
        record.update(outcome="fault", fault=L.fault_text(exc))
        return record
    record["elapsed_ms"] = round(start.elapsed_time(end), 4)
    words = diag.cpu().tolist()
    ref = a.float() @ b.float().T
    wrong, worst = _tile_errors(torch, d, ref, cfg["BLK_M"], cfg["BLK_N"])
    record["max_rel_err"] = worst if worst != float("inf") else "inf"
    # beside the fp32 reference, torch's own fp16 GEMM on the same inputs: max |D - A @ B.T|
    diff = float((d.float() - (a @ b.T).float()).abs().max())
    record["max_abs_diff_torch_f16"] = diff if diff == diff and diff != float("inf") else "nan/inf"
    record["wrong_tiles"] = wrong
    record["tiles"] = (M // cfg["BLK_M"]) * (N // cfg["BLK_N"])
    if words[0]:
        w = dict(zip(DIAG_FIELDS, words[: len(DIAG_FIELDS)], strict=True))
        record["outcome"] = "timeout"
        record["timeout"] = {"barrier": BARRIER_NAMES.get(w["barrier"], w["barrier"]), "stage": w["stage"],
                             "role": ROLE_NAMES.get(w["role"], w["role"]), "k": w["k"], "tile": w["tile"],
                             "parity": w["parity"], "cta": w["cta"], "thread": w["thread"], "threads_timed_out": w["timeouts"]}
        if job["spec"]["step"] in CLUSTER_STEPS and cfg.get("cluster_m", 1) * cfg.get("cluster_n", 1) > 1:
            # the cluster kernels also write the CTA's rank in its cluster and the cluster's index
            record["timeout"].update(rank=w["rank"], cluster=w["cluster"])
    else:
        record["outcome"] = "wrong" if wrong else "correct"
    if job["spec"]["trace"]:
        record["trace"] = _trace_summary(torch, trace)
    if record["outcome"] == "correct" and timing_reps > 0:
        try:
            record["kernel_ms"] = T.kernel_time(torch, lambda: fn(*args), timing_reps,
                                                before=(lambda: flush_l2(torch)) if l2 == "flushed" else None)
        except Exception as exc:  # noqa: BLE001  (the outcome stands; say why it has no kernel time)
            record["kernel_ms"] = {"error": L.fault_text(exc)}
    return record


def run_bench(torch, fn, job: dict, reps: int = 20) -> dict:
    """TFLOP/s of the kernel and of torch.matmul on the same inputs, from one process."""
    cfg = job["spec"]["config"]
    M, N, K = cfg["M"], cfg["N"], cfg["K"]
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    d = torch.empty(M, N, device="cuda", dtype=torch.float16)
    diag = torch.zeros(DIAG_WORDS, device="cuda", dtype=torch.int32)
    trace = torch.zeros(TRACE_CAP, 4, device="cuda", dtype=torch.int64)

    def ours():
        fn(a, b, d, diag, trace, DEFAULT_TIMEOUT_CYCLES, 0, 0, 1, 0)

    def theirs():
        torch.matmul(a, b.T)

    def timed(f) -> float:
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            f()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) / reps

    ms_ours, ms_torch = timed(ours), timed(theirs)
    k_ours, k_torch = T.kernel_time(torch, ours, reps), T.kernel_time(torch, theirs, reps)
    med_ours, med_torch = k_ours["median"], k_torch["median"]
    ref = a.float() @ b.float().T
    wrong, worst = _tile_errors(torch, d, ref, cfg["BLK_M"], cfg["BLK_N"])
    flop = 2 * M * N * K
    return {"launch": 0, "outcome": "wrong" if wrong or diag[0].item() else "correct", "max_rel_err": worst,
            "bench": {"ms": round(ms_ours, 4), "tflops": round(flop / ms_ours / 1e9, 1), "torch_ms": round(ms_torch, 4),
                      "torch_tflops": round(flop / ms_torch / 1e9, 1), "ratio_vs_torch": round(ms_torch / ms_ours, 3), "reps": reps,
                      "median_ms": round(med_ours, 4), "median_tflops": round(flop / med_ours / 1e9, 1),
                      "torch_median_ms": round(med_torch, 4), "torch_median_tflops": round(flop / med_torch / 1e9, 1),
                      "min_ms": k_ours["min"], "host_ms": k_ours["host_ms"], "kernel_ms": k_ours, "torch_kernel_ms": k_torch}}


def child_main(bundle: Path, tasks: list[list[int]], out: Path, timeout_cycles: int, meta: dict) -> int:
    runtime = L.start_child_runtime(PROG, lambda tvm: tvm)
    if runtime is None:
        return L.SETUP_FAILED
    torch, env, tvm = runtime
    meta = {**meta, **env}
    manifest = json.loads((bundle / "manifest.json").read_text())
    loaded: dict[str, object] = {}
    probe = None
    if meta.get("clock_probe"):
        from .sm_clock import ClockProbe

        probe = ClockProbe(torch, Path(meta["clock_probe"]).read_bytes())
    with out.open("a") as f:
        for job_index, launch in tasks:
            job = manifest[job_index]
            if job["so"] not in loaded:
                loaded[job["so"]] = tvm.runtime.load_module(str(bundle / job["so"]))["main"]
            fn = loaded[job["so"]]
            if job["kind"] == "bench":
                rec = run_bench(torch, fn, job)
            else:
                l2 = l2_state(job, meta)
                rec = {"l2_at_launch": l2, **run_launch(torch, fn, job, launch, timeout_cycles, l2, meta.get("timing_reps", T.REPS))}
                if probe is not None and isinstance(rec.get("kernel_ms"), dict) and "median" in rec["kernel_ms"]:
                    rec["sm_clock_ghz"] = probe()  # the clock just after the timed repetitions
            full = {"schema": 1, "time": L.utc_now(), **meta, "job": job_index,
                    "kind": job["kind"], "name": job["name"], "key": job["key"], "step": job["spec"]["step"],
                    "config": job["spec"]["config"], "knobs": _knobs(job["spec"]["config"]), "delays": job["delays"],
                    "grid_ctas": grid_ctas(job["spec"]["step"], _cfg(job["spec"]["config"])), **rec}
            if job.get("copy_stream"):  # what the build read off this kernel's SASS (kernels.toolchain.build)
                full["copy_stream"] = job["copy_stream"]
            f.write(json.dumps(full) + "\n")
            f.flush()
            if rec["outcome"] == "fault" or "error" in rec.get("kernel_ms", {}):
                return L.FAULTED  # the context may be poisoned: the parent starts a fresh child at the next task
    return 0


def _cfg(d: dict):
    from protosim.config import GemmConfig

    return GemmConfig.from_dict(d)


def _knobs(d: dict) -> dict:
    return _cfg(d).bug_knobs


# ----------------------------------------------------------------------------- parent side


def plan_tasks(manifest: list[dict], only: str | None) -> list[list[tuple[int, int]]]:
    """Group launches ``(job, launch)`` into child processes: one batch for everything
    that should not fault, one child per launch for jobs that may."""
    batch: list[tuple[int, int]] = []
    alone: list[list[tuple[int, int]]] = []
    for i, job in enumerate(manifest):
        if only and only not in job["name"]:
            continue
        for launch in range(job["launches"]):
            (alone.append([(i, launch)]) if job["may_fault"] else batch.append((i, launch)))
    return ([batch] if batch else []) + alone


def _recorded(out: Path, run_id: str) -> set:
    return L.recorded(out, run_id, lambda r: (r["job"], r["launch"]))


def parent_main(args) -> int:
    bundle = args.bundle
    manifest = json.loads((bundle / "manifest.json").read_text())
    groups = plan_tasks(manifest, args.only)
    total = sum(len(g) for g in groups)
    run_id = L.new_run_id()
    forking = not args.no_fork and L.preload_torch()
    print(f"{len(manifest)} jobs, {total} launches in {len(groups)} process groups (run {run_id}; "
          f"{'children forked from a parent with torch imported' if forking else 'children start fresh interpreters'})", flush=True)
    meta = {"commit": args.commit, "run": run_id, "timing_reps": args.timing_reps, **({"l2": "flush"} if args.l2 == "flush" else {}),
            **({"clock_probe": str(args.clock_probe)} if args.clock_probe else {})}

    def start(remaining: list) -> int:
        if forking:
            return L.fork(child_main, (bundle, remaining, args.out, args.timeout_cycles, meta), args.child_timeout)
        return L.spawn([PROG, "--child", "--bundle", str(bundle), "--out", str(args.out), "--timeout-cycles",
                        str(args.timeout_cycles), "--tasks", json.dumps(remaining), "--meta", json.dumps(meta)],
                       args.child_timeout, bundle)

    def host_record(task: tuple[int, int], outcome: str, why: str) -> None:
        job_index, launch = task
        job = manifest[job_index]
        with args.out.open("a") as f:
            f.write(json.dumps({"schema": 1, "time": L.utc_now(), **meta, **L.host_environment(), "tvm": None, "job": job_index,
                                "launch": launch, "kind": job["kind"], "name": job["name"], "key": job["key"], "step": job["spec"]["step"],
                                "config": job["spec"]["config"], "knobs": _knobs(job["spec"]["config"]), "delays": job["delays"],
                                "l2_at_launch": l2_state(job, meta), "outcome": outcome,
                                **({"timeout": {"host": why}} if outcome == "timeout" else {"fault": why})}) + "\n")

    def progress() -> None:
        print(f"  {len(_recorded(args.out, run_id))}/{total} launches recorded", flush=True)

    for group in groups:
        if not L.run_tasks(group, start, lambda: _recorded(args.out, run_id), host_record, args.child_timeout, progress):
            print(f"{PROG}: the GPU runtime did not start (see the child's message above); nothing was run", file=sys.stderr)
            return 2
    summarize(args.out, run_id)
    return 0


def summarize(out: Path, run_id: str) -> None:
    rows: dict[tuple[str, str], list[str]] = {}
    for line in out.read_text().splitlines():
        r = json.loads(line)
        if r.get("run") != run_id:
            continue
        d = r.get("delays", {})
        delay = ",".join(f"{k}={v}" for k, v in d.items() if k.endswith("_ns") and v) or "none"
        rows.setdefault((r["name"] + ("" if r["kind"] == "outcome" else " [bench]"), delay), []).append(r["outcome"])
    width = max(len(n) for n, _ in rows) if rows else 10
    for (name, delay), outs in rows.items():
        print(f"{name:<{width}}  {delay:<28} {' '.join(outs)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, default=Path(".gpu"), help="folder made by kernels.toolchain.build (default .gpu)")
    ap.add_argument("--out", type=Path, required=True, help="JSON-lines file to append launch records to")
    ap.add_argument("--only", help="run only jobs whose name contains this")
    ap.add_argument("--timeout-cycles", type=int, default=DEFAULT_TIMEOUT_CYCLES, help="the kernels' watchdog budget per wait")
    ap.add_argument("--child-timeout", type=float, default=300.0, help="seconds before a silent child is killed")
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"), help="git commit the bundle was built from")
    ap.add_argument("--l2", choices=("job", "flush"), default="job",
                    help="job (default): as each job says (inputs just written start in L2 unless it says cold); "
                         "flush: evict L2 after writing the inputs, for every job")
    ap.add_argument("--timing-reps", type=int, default=T.REPS, metavar="N",
                    help=f"kernel-only repetitions after each correct outcome launch (default {T.REPS}; 0: none): "
                         "CUDA events around the launch alone, see kernels/runner/timing.py")
    ap.add_argument("--clock-probe", type=Path, metavar="CUBIN",
                    help="sm_clock.sm_90a.cubin (kernels/microbench/sm_clock.cu): after each timed config, measure the SM "
                         "clock (clock64 / globaltimer on every SM) into the record's sm_clock_ghz")
    ap.add_argument("--no-fork", action="store_true", help="start each child as a fresh interpreter (default: fork from a parent that imported torch)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tasks", help=argparse.SUPPRESS)
    ap.add_argument("--meta", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not (args.bundle / "manifest.json").exists():
        ap.error(f"{args.bundle}/manifest.json not found: build the bundle first with `python -m kernels.toolchain.build --bundle {args.bundle}`")
    if args.clock_probe is not None and not args.clock_probe.is_file():
        ap.error(f"--clock-probe {args.clock_probe}: no such cubin; build it with nvcc -cubin (see kernels/microbench/sm_clock.cu)")
    if args.timing_reps < 0:
        ap.error(f"--timing-reps {args.timing_reps}: give a count of repetitions, 0 for none")
    if args.child:
        return child_main(args.bundle, json.loads(args.tasks), args.out, args.timeout_cycles, json.loads(args.meta))
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
