"""Issue 15's benchmarks in one table: full chip, 8192x8192x4096, a cold `protosim run`,
single-CTA verdicts/s and sweep throughput, with each row's peak memory.

Run:  python benchmarks/bench.py [--quick] [--cold-runs N] [--no-record]
      (make bench runs it, then benchmarks/bench_tirx.py)

Every row runs in a subprocess of its own (``bench.py --row NAME``), so its peak memory is
that process's alone: the ``max RSS`` column is ``ru_maxrss`` from ``os.wait4`` on the row's
process -- the largest resident set it reached -- and, for the sweep rows, the largest of it
and of any worker it waited for (``RUSAGE_CHILDREN`` inside the row).  The cold-run row is
the median wall time of N fresh ``protosim run`` processes (interpreter start, imports, the
scenario's build, one replay, the checkers and the printed report) and the largest RSS any
of them reached, with .pyc files as an installed protosim has them (written by a first,
uncounted run); where PYTHONDONTWRITEBYTECODE is set, a second row times the runs as this
environment makes them (no .pyc: every module compiled from source on each start).

Other processes on the machine slow a row down (and halve the 2-worker sweep on 2 cores):
each row records how many cores were idle just before it started (``idle_cores_at_start``).

Targets (issue 15): full chip v6 4096^3 < 8 s and < 400 MB on h200 and on b200;
8192x8192x4096 on b200 < 40 s and < 2 GB; cold run < 60 ms; >= 2,000 single-CTA verdicts
per second per core; sweep throughput from 1 to 2 workers within 10% of linear.  Each row
prints met / MISSED.  Wall times are one run each on whatever machine this is (other
processes share its cores): compare rows within a run, and runs on one machine.

Each run appends one JSON line to results/bench/bench.jsonl: date, commit, whether the
tree had uncommitted changes, the machine, Python and package versions, and every row.
``--src DIR`` measures another checkout (a clean export of an older commit, say) with this
harness: rows import protosim from DIR.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "results" / "bench" / "bench.jsonl"

# The cold-run scenario: v4_tma (hgemm_v4, 4 CTAs) with K=256 is the built-in scenario at
# M=N=K=256; nominal replay only (--runs 1), as a quick verdict is asked for.
COLD_SCENARIO = "scenarios/v4_tma.toml"
COLD_ARGS = ["--set", "K=256", "--runs", "1", "--quiet"]

MB = 1024 * 1024


# --------------------------------------------------------------------------- rows (run in a child)


class Heartbeat:
    """A line on stderr every ``every`` seconds while a slow row works: what it is doing."""

    def __init__(self, label: str, every: float = 15.0):
        self.label, self.every, self.phase = label, every, "starting"
        self.start = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            print(f"  ... {self.label}: {self.phase} ({time.perf_counter() - self.start:.0f} s)", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self._stop.set()


def timed(fn):
    gc.collect()  # start each measurement from a clean heap, outside the timing
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def row_gemm(arch: str, M: int, N: int, K: int) -> dict:
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.verdict import judge

    beat = Heartbeat(f"v6 {M}x{N}x{K} {arch}")
    try:
        cfg = GemmConfig(M=M, N=N, K=K, arch=arch)
        beat.phase = "building the schedule"
        schedule, t_build = timed(lambda: BUILDERS["hgemm_v6"](cfg))
        beat.phase = f"replaying and judging {schedule.op_count():,} ops in {len(schedule.ctas)} CTAs"
        (verdict, result), t_judge = timed(lambda: judge(schedule))
    finally:
        beat.stop()
    return {"ctas": len(schedule.ctas), "ops": schedule.op_count(), "build_s": t_build, "judge_s": t_judge,
            "seconds": t_build + t_judge, "events": len(result.log), "events_per_s": len(result.log) / t_judge,
            "outcome": verdict.outcome.kind, "sim_us": verdict.timing.microseconds}


SMALL = [
    ("hgemm_v1", dict()),
    ("hgemm_v2", dict(K=256)),
    ("hgemm_v4", dict(K=256)),
    ("hgemm_v5", dict(K=256)),
    ("hgemm_v4", dict(K=256, wait_parity_flip="tma")),
    ("hgemm_v2", dict(K=256, skip_mma_phase_flip=True)),
]
"""The single-CTA configs of the 'verdicts/s' row (issue 2's, also run by bench_engine.py)."""


def row_verdicts(seconds: float = 3.0) -> dict:
    """Build + replay + check the single-CTA configs round-robin for ``seconds``, one process."""
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.verdict import judge

    configs = [(BUILDERS[b], GemmConfig(**kw)) for b, kw in SMALL]
    gc.collect()
    n, events = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        build, cfg = configs[n % len(configs)]
        verdict, result = judge(build(cfg))
        events += len(result.log)
        n += 1
    dt = time.perf_counter() - start
    return {"verdicts": n, "seconds": dt, "verdicts_per_s": n / dt, "events_per_s": events / dt, "kinds": len(SMALL)}


SWEEP_ITEMS = [(step, dict(M=m, N=n, K=k, **knob))
               for step in ("hgemm_v3", "hgemm_v4", "hgemm_v5")
               for m, n, k in ((256, 256, 256), (256, 256, 512), (512, 256, 256), (512, 512, 256))
               for knob in (dict(), dict(skip_mma_phase_flip=True))]
SWEEP_REPEAT = 6
"""A sweep of 24 configs (steps x shapes x one bug knob), each a nominal judge of 4 to 16 CTAs,
each config SWEEP_REPEAT times: 144 items, a few seconds on one core."""


def sweep_item(item: tuple[str, dict]) -> str:
    """One sweep item: build and judge, the outcome kind (module level: workers import it)."""
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.verdict import judge

    step, kw = item
    verdict, _ = judge(BUILDERS[step](GemmConfig(**kw)))
    return verdict.outcome.kind


def _pool_sweep(items, work_fn, workers: int) -> list:
    """Stand-in while protosim.sweep is absent: the standard library's process pool, in order."""
    if workers == 1:
        return [work_fn(x) for x in items]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(work_fn, items))


def sweep_runner():
    """``protosim.sweep.run_sweep`` when the sweep module is there, else the stand-in above."""
    src = Path(os.environ.get("BENCH_SRC", str(ROOT)))
    try:
        if not (src / "protosim" / "sweep").is_dir():  # an older checkout: not the sweep module of this tree
            raise ImportError
        from protosim.sweep import run_sweep  # the sweep runner of issue 15 part 2
    except ImportError:
        return "concurrent.futures stand-in (protosim.sweep.run_sweep absent)", _pool_sweep
    return "protosim.sweep.run_sweep", lambda items, fn, workers: run_sweep(items, fn, workers=workers)


def row_sweep(workers: int, repeat: int = 3) -> dict:
    """The sweep's wall time with ``workers`` workers (best of ``repeat``, each from a fresh pool)."""
    import resource

    from benchmarks.bench import sweep_item  # by its module name, so that any worker can import it

    name, run = sweep_runner()
    items = SWEEP_ITEMS * SWEEP_REPEAT
    sweep_item(items[0])  # imports done before the clock starts (forked workers inherit them)
    best = None
    for _ in range(repeat):  # best of: other processes share the cores
        gc.collect()
        t = time.perf_counter()
        out = run(items, sweep_item, workers)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    outcomes = out if isinstance(out, list) else list(out)
    return {"workers": workers, "items": len(items), "seconds": best, "items_per_s": len(items) / best,
            "runner": name, "outcomes": sorted(set(map(str, outcomes))),
            "children_max_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


ROWS = {
    "full_h200": lambda: row_gemm("h200", 4096, 4096, 4096),
    "full_b200": lambda: row_gemm("b200", 4096, 4096, 4096),
    "big_b200": lambda: row_gemm("b200", 8192, 8192, 4096),
    "verdicts": row_verdicts,
    "sweep_1": lambda: row_sweep(1),
    "sweep_2": lambda: row_sweep(2),
    "sweep_n": lambda: row_sweep(os.cpu_count() or 1),
}


def child(name: str) -> int:
    out = ROWS[name]()
    print("BENCH-ROW " + json.dumps(out), flush=True)
    return 0


# --------------------------------------------------------------------------- the parent


def run_child(argv: list[str], env: dict, cwd: Path) -> tuple[int, float, float, str]:
    """Run one process; (exit status, wall s, its max RSS in MB, stdout).  stderr passes through."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, env=env, cwd=cwd)
    stdout = b""
    # Read stdout until EOF (rows print little), then reap with wait4 to get this child's rusage.
    stdout = p.stdout.read()
    p.stdout.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, time.perf_counter() - t, usage.ru_maxrss / 1024, stdout.decode(errors="replace")


def idle_cores(seconds: float = 0.5) -> float | None:
    """How many cores sat idle over ``seconds`` just now (/proc/stat): what other processes leave
    to a row.  The load average lags by a minute (it still counts the row before)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v[:8])  # idle + iowait, all but guest time
    try:
        i0, t0 = sample()
        time.sleep(seconds)
        i1, t1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return (os.cpu_count() or 1) * (i1 - i0) / max(1, t1 - t0)


def measure_row(name: str, src: Path) -> dict:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # other processes on the cores, at the row's start
    idle = idle_cores()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys((str(src), str(ROOT)))), BENCH_SRC=str(src), PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    rc, wall, rss, out = run_child([sys.executable, str(Path(__file__).resolve()), "--row", name], env, src)
    data = {}
    for line in out.splitlines():
        if line.startswith("BENCH-ROW "):
            data = json.loads(line[len("BENCH-ROW "):])
    if rc != 0 or not data:
        return {"error": f"exit {rc}", "max_rss_mb": rss}
    data["max_rss_mb"] = max(rss, data.get("children_max_rss_mb", 0.0))
    data["loadavg_at_start"] = load
    data["idle_cores_at_start"] = idle
    return data


def measure_cold(src: Path, runs: int, bytecode: bool) -> dict:
    """Median wall time of ``runs`` fresh ``protosim run`` processes.  ``bytecode``: as an
    installed protosim runs -- .pyc files written by the first (uncounted) run and read by the
    others (in a bench-private PYTHONPYCACHEPREFIX, so the tree stays clean).  Otherwise the
    environment as it is (this machine sets PYTHONDONTWRITEBYTECODE=1: unless a .pyc exists,
    every protosim module is compiled from source on every start)."""
    exe = Path(sys.executable).with_name("protosim")
    argv = [str(exe), "run", str(src / COLD_SCENARIO), *COLD_ARGS]
    env = dict(os.environ)
    if src != ROOT:
        env["PYTHONPATH"] = str(src)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"protosim-bench-pyc-{os.getuid()}" / src.name)
    walls, rss, codes = [], 0.0, set()
    run_child(argv, env, src)  # warm the page cache (and write the .pyc files), not counted
    for _ in range(runs):
        rc, wall, r, _ = run_child(argv, env, src)
        walls.append(wall)
        rss = max(rss, r)
        codes.add(rc)
    walls.sort()
    return {"runs": runs, "median_s": statistics.median(walls), "min_s": walls[0], "max_s": walls[-1],
            "exit": sorted(codes), "command": "protosim run " + " ".join([COLD_SCENARIO, *COLD_ARGS]), "max_rss_mb": rss,
            "bytecode": "written and read (PYTHONPYCACHEPREFIX)" if bytecode else
                        f"as the environment has it (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    try:
        mem = next(int(x.split()[1]) // 1024 for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
    except (OSError, StopIteration):
        mem = None
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu": model or platform.machine(), "cores": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "mem_mb": mem, "loadavg_at_start": load, "platform": platform.platform()}


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "implementation": platform.python_implementation()}
    for pkg in ("protosim", "simpy", "numpy", "ray", "hypothesis", "apache-tvm"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def fmt_s(x: float | None) -> str:
    return "-" if x is None else (f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s")


def table(rows: list[dict]) -> str:
    head = f"{'row':<50} {'result':>22} {'max RSS':>9}  {'target':<34} {'':6}  detail"
    lines = [head, "-" * len(head)]
    for r in rows:
        verdict = "" if r.get("ok") is None else ("met" if r["ok"] else "MISSED")
        rss = f"{r['max_rss_mb']:,.0f} MB" if r.get("max_rss_mb") is not None else "-"
        lines.append(f"{r['label']:<50} {r['result']:>22} {rss:>9}  {r['target']:<34} {verdict:6}  {r.get('detail', '')}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the b200 full-chip and 8192x8192x4096 rows")
    ap.add_argument("--cold-runs", type=int, default=20, help="fresh `protosim run` processes for the cold row (default 20)")
    ap.add_argument("--no-record", action="store_true", help=f"do not append to {RECORD.relative_to(ROOT)}")
    ap.add_argument("--note", default="", help="a note stored with the record (what this run measures)")
    ap.add_argument("--src", type=Path, default=ROOT, help="the checkout whose protosim the rows import (default: this one)")
    ap.add_argument("--src-commit", default="", help="the commit --src was exported from (a git archive has no .git)")
    ap.add_argument("--only", default="", help="comma-separated rows: full_h200,full_b200,big_b200,cold,verdicts,sweep")
    ap.add_argument("--row", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.row:
        return child(args.row)

    src = args.src.resolve()
    wanted = set(filter(None, args.only.split(","))) or {"full_h200", "full_b200", "big_b200", "cold", "verdicts", "sweep"}
    if args.quick:
        wanted -= {"full_b200", "big_b200"}
    mach, vers = machine(), versions()
    commit = _git("-C", str(src), "rev-parse", "HEAD") if (src / ".git").exists() or src == ROOT else ""
    dirty = bool(_git("-C", str(src), "status", "--porcelain", "--untracked-files=no")) if commit else None
    if args.src_commit:
        commit, dirty = args.src_commit, False
    print(f"# protosim bench {time.strftime('%Y-%m-%d %H:%M')}  commit {commit[:10] or '(src ' + str(src) + ')'}"
          f"{' +dirty' if dirty else ''}  {mach['cpu']}, {mach['cores']} cores, load {mach['loadavg_at_start']}  "
          f"python {vers['python']}, simpy {vers['simpy']}", flush=True)

    rows: list[dict] = []

    def show(r: dict) -> None:
        idle = r.get("data", {}).get("idle_cores_at_start")
        if idle is not None and "cores idle" not in r.get("detail", ""):
            r["detail"] = r.get("detail", "") + f"; {idle:.1f} of {os.cpu_count()} cores idle at start"
        rows.append(r)
        print(f"  {r['label']}: {r['result']}, max RSS {r.get('max_rss_mb', 0):,.0f} MB", file=sys.stderr, flush=True)

    for key, arch, shape, t_s, t_mb in (("full_h200", "h200", "4096^3", 8, 400), ("full_b200", "b200", "4096^3", 8, 400),
                                        ("big_b200", "b200", "8192x8192x4096", 40, 2048)):
        if key not in wanted:
            continue
        print(f"{key}: v6 {shape} full chip on {arch} ...", file=sys.stderr, flush=True)
        d = measure_row(key, src)
        ok = None if "error" in d else (d["seconds"] < t_s and d["max_rss_mb"] < t_mb)
        show({"key": key, "label": f"v6 {shape} full chip {arch}" + (f" ({d['ctas']} CTAs)" if "ctas" in d else ""),
              "result": d.get("error") or f"{d['seconds']:.2f} s", "target": f"< {t_s} s, < {t_mb:,} MB", "ok": ok,
              "detail": "" if "error" in d else f"build {d['build_s']:.2f} s + judge {d['judge_s']:.2f} s, "
                                                f"{d['events']:,} events, {d['events_per_s']:,.0f} ev/s, {d['outcome']}",
              "data": d, "max_rss_mb": d.get("max_rss_mb")})
    if "cold" in wanted:
        print(f"cold: {args.cold_runs} x protosim run {COLD_SCENARIO} {' '.join(COLD_ARGS)} ...", file=sys.stderr, flush=True)
        d = measure_cold(src, args.cold_runs, bytecode=True)
        show({"key": "cold", "label": "cold protosim run, v4_tma K=256 (256^3)", "result": f"{d['median_s'] * 1000:.0f} ms median",
              "target": "< 60 ms", "ok": d["median_s"] < 0.060 and d["exit"] == [0],
              "detail": f"{d['runs']} runs, min {d['min_s'] * 1000:.0f} ms, max {d['max_s'] * 1000:.0f} ms, exit {d['exit']}, .pyc on",
              "data": d, "max_rss_mb": d["max_rss_mb"]})
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            d = measure_cold(src, args.cold_runs, bytecode=False)
            show({"key": "cold_nopyc", "label": "  the same, PYTHONDONTWRITEBYTECODE=1 as here",
                  "result": f"{d['median_s'] * 1000:.0f} ms median", "target": "(no .pyc: modules compiled each run)",
                  "ok": None, "detail": f"{d['runs']} runs, min {d['min_s'] * 1000:.0f} ms, max {d['max_s'] * 1000:.0f} ms",
                  "data": d, "max_rss_mb": d["max_rss_mb"]})
    if "verdicts" in wanted:
        print("verdicts: single-CTA configs for 3 s ...", file=sys.stderr, flush=True)
        d = measure_row("verdicts", src)
        show({"key": "verdicts", "label": f"single-CTA verdicts/s (1 process, {len(SMALL)} kinds)",
              "result": d.get("error") or f"{d['verdicts_per_s']:,.0f} /s", "target": ">= 2,000 /s per core",
              "ok": None if "error" in d else d["verdicts_per_s"] >= 2000,
              "detail": "" if "error" in d else f"{d['verdicts']:,} verdicts in {d['seconds']:.1f} s, {d['events_per_s']:,.0f} ev/s",
              "data": d, "max_rss_mb": d.get("max_rss_mb")})
    if "sweep" in wanted:
        n = os.cpu_count() or 1
        base = None
        for w, key in ((1, "sweep_1"), (2, "sweep_2"), (n, "sweep_n")):
            if key == "sweep_n" and n <= 2:
                continue
            print(f"{key}: sweep of {len(SWEEP_ITEMS) * SWEEP_REPEAT} configs on {w} worker(s) ...", file=sys.stderr, flush=True)
            d = measure_row(key, src)
            if "error" in d:
                show({"key": key, "label": f"sweep, {w} worker(s)", "result": d["error"], "target": "", "ok": None,
                      "data": d, "max_rss_mb": d.get("max_rss_mb")})
                continue
            if w == 1:
                base = d["items_per_s"]
            eff = d["items_per_s"] / (w * base) if base else None
            target, ok = ("(the 1-worker base)", None) if w == 1 else (
                ("1->2 within 10% of linear", eff >= 0.9) if w == 2 else (f"(linear = {w}x)", None))
            show({"key": key, "label": f"sweep, {w} worker(s){' = N, every core' if w == n else ''} ({d['items']} configs)",
                  "result": f"{d['items_per_s']:.1f} configs/s", "target": target, "ok": ok,
                  "detail": (f"{d['seconds']:.2f} s" + (f", {eff:.0%} of linear" if eff is not None and w > 1 else "")
                             + f", {d['idle_cores_at_start']:.1f} of {n} cores idle at start; {d['runner']}"),
                  "data": d, "max_rss_mb": d.get("max_rss_mb")})

    print()
    print(table(rows))
    print("\nmax RSS: the row's own process (ru_maxrss via wait4); sweep rows: the larger of it and any worker; "
          "cold: the largest of its runs.")
    if not args.no_record:
        record = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": commit, "dirty": dirty,
                  "src": str(src), "note": args.note, "quick": args.quick, "machine": mach, "versions": vers,
                  "rows": [{k: v for k, v in r.items()} for r in rows]}
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        with RECORD.open("a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        print(f"recorded in {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path[:0] = list(dict.fromkeys((os.environ.get("BENCH_SRC", str(ROOT)), str(ROOT))))
    sys.exit(main())
