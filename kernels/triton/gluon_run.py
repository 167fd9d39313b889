"""Run the Gluon corpus (kernels/triton/gluon_corpus.py) on the GPU: for every record of
tests/fixtures/triton/gluon/index.json made by the installed Triton for this GPU's target
(triton-3.6.0, sm90a on the H200), launch the same source through the JIT, check the
TTGIR the device compiled equals the saved one (locations ignored), check the output
against a torch reference where the kernel computes one, and time it.  One JSON line per
kernel is appended to --out.

    python -m kernels.triton.gluon_run --out results/gluon_h200.jsonl [--only SUBSTR] [--commit SHA]

It must not hang: every kernel runs in a worker process watched by this one.  A worker
that sits in a launch longer than --timeout seconds (20) is killed and the kernel is
recorded with outcome "timeout"; the rest go on in a fresh worker.  Kernels expected to
deadlock (or to hang: expect-byte mismatches, over-arrival, barrier misuse) each get a
worker of their own, --jobs of them at a time.

Outcomes: "correct" / "wrong" (a reference exists: max relative error below / above
1e-2), "completed" (no reference, the launch returned), "timeout", "error" (Triton or
CUDA raised; the message is kept).  Timing: kernel only, CUDA events around one launch
with torch.cuda._sleep(200000) queued before the start event, 3 warm-ups, 20 reps,
min and median in ms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "tests" / "fixtures" / "triton" / "gluon" / "index.json"
HANGERS = {"deadlock", "expect_bytes_mismatch", "overarrive", "barrier_misuse"}


def strip_locs(text: str) -> str:
    """TTGIR without location info: no #locN definitions, no loc(...) suffixes."""
    out = []
    for line in text.splitlines():
        if line.startswith("#loc"):
            continue
        res, i = [], 0
        while True:
            m = re.compile(r"(?<![\w#.])loc\(").search(line, i)
            if not m:
                res.append(line[i:])
                break
            res.append(line[i:m.start()].rstrip())
            depth, k = 0, m.end() - 1
            while k < len(line):
                c = line[k]
                if c == '"':
                    k = line.index('"', k + 1)
                elif c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            i = k + 1
        ln = "".join(res).rstrip()
        if ln.strip():
            out.append(ln)
    return "\n".join(out)


def first_diff(a: str, b: str):
    la, lb = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return {"line": n + 1, "saved": x[:300], "device": y[:300]}
    if len(la) != len(lb):
        return {"line": min(len(la), len(lb)) + 1, "saved_lines": len(la), "device_lines": len(lb)}
    return None


# ---------------------------------------------------------------------------------------
# Worker: runs kernels in this process, reports progress through a file
# ---------------------------------------------------------------------------------------

def _torch_dtype(torch, name):
    return {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16, "i32": torch.int32,
            "i8": torch.int8}[name]


def _make_tensor(torch, a, is_output, gen):
    dt = _torch_dtype(torch, a["dtype"])
    if is_output:
        return torch.full(a["shape"], -1 if not dt.is_floating_point else float("nan"), dtype=dt, device="cuda")
    if dt.is_floating_point:
        return torch.randn(a["shape"], generator=gen, device="cuda", dtype=torch.float32).to(dt)
    return torch.randint(-1000, 1000, a["shape"], generator=gen, device="cuda", dtype=dt)


def run_kernel(rec: dict, progress, env: dict, out: dict) -> dict:
    """Fills `out` as it goes, so a failure keeps what was learnt before it."""
    import torch
    from kernels.triton import gluon_corpus as gc

    spec = next(s for s in gc.all_specs() if rec["kernel"].startswith(s.name + "-") and
                any(rec["kernel"] == f"{s.name}-{v.name}" for v in s.variants))
    variant = next(v for v in spec.variants if rec["kernel"] == f"{spec.name}-{v.name}")
    gen = torch.Generator(device="cuda").manual_seed(1234)
    tensors = {}

    def factory(a):
        t = _make_tensor(torch, a, a["name"] in spec.ref, gen)
        tensors[a["name"]] = t
        return t

    args = gc.make_args(spec.args, factory)
    kw = dict(variant.constexprs, num_warps=spec.num_warps)
    grid = tuple(spec.grid)
    progress("compile")
    kernel = spec.fn.warmup(*args, grid=grid, **kw)
    saved = (INDEX.parent / rec["file"]).read_text()
    a, b = strip_locs(saved), strip_locs(kernel.asm["ttgir"])
    out["ttgir_equal"] = a == b
    if a != b:
        out["ttgir_first_diff"] = first_diff(a, b)
    out["shared"] = kernel.metadata.shared
    progress("run")
    spec.fn[grid](*args, **kw)
    torch.cuda.synchronize()
    if spec.ref:
        errs = []
        for name, expr in spec.ref.items():
            got = tensors[name].float()
            ns = {"torch": torch, **{k: v.float() for k, v in tensors.items()}}
            ns["arange"] = torch.arange(got.numel(), device="cuda", dtype=torch.float32).reshape(got.shape)
            ns["full42"] = torch.full_like(got, 42.0)
            ref = eval(expr, ns).to(got.device).float()  # noqa: S307  (expressions from our own table)
            scale = ref.abs().max().clamp_min(1e-6)
            errs.append(((got - ref).abs().max() / scale).item())
        err = max(errs)
        out.update(outcome="correct" if err < 1e-2 else "wrong", max_rel_err=err)
    else:
        out["outcome"] = "completed"
    progress("time")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(23):
        torch.cuda._sleep(200000)
        start.record()
        spec.fn[grid](*args, **kw)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    times.sort()
    out.update(time_ms_min=times[0], time_ms_median=times[len(times) // 2], reps=len(times), warmups=3)
    return out


def worker(names: list[str], out_path: Path, progress_path: Path, env: dict) -> int:
    sys.path.insert(0, str(ROOT))
    recs = {r["kernel"] + "." + r["target"]: r for r in json.loads(INDEX.read_text())
            if r["triton"] == env["triton"]}
    for name in names:
        rec = recs[name]

        def progress(stage, _n=name):
            progress_path.write_text(json.dumps({"kernel": _n, "stage": stage, "t": time.time()}))

        progress("start")
        res = {"schema": 1, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **env, "kind": "gluon",
               "kernel": rec["kernel"], "target": rec["target"], "file": rec["file"], "expected": rec["expected"],
               "pair": rec["pair"]}
        try:
            run_kernel(rec, progress, env, res)
        except Exception as exc:  # noqa: BLE001  (what Triton or CUDA said is the record)
            res.update(outcome="error", error=f"{type(exc).__name__}: {str(exc)[:600]}")
        with out_path.open("a") as f:
            f.write(json.dumps(res) + "\n")
        progress("done")
        if res["outcome"] == "error" and "CUDA" in res.get("error", ""):
            return 3  # the context may be unusable: let the parent start a fresh worker
    return 0


# ---------------------------------------------------------------------------------------
# Parent: hands kernels to workers, kills a stuck one
# ---------------------------------------------------------------------------------------

class Job:
    def __init__(self, names, env, args, tmp):
        self.names = list(names)
        self.tmp = Path(tempfile.mkdtemp(dir=tmp))
        self.out = self.tmp / "out.jsonl"
        self.progress = self.tmp / "progress.json"
        self.args = args
        self.env = env
        self.proc = None
        self.start()

    def start(self):
        self.progress.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "kernels.triton.gluon_run", "--_worker", json.dumps(self.names), "--out",
               str(self.out), "--_progress", str(self.progress), "--_env", json.dumps(self.env)]
        self.log = open(self.tmp / "worker.log", "a")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.t0 = time.time()

    def done_names(self):
        if not self.out.exists():
            return set()
        return {json.loads(ln)["kernel"] + "." + json.loads(ln)["target"] for ln in self.out.read_text().splitlines() if ln}

    def poll(self, sink) -> bool:
        """True when finished.  Kills the worker when a launch has run past the timeout."""
        rc = self.proc.poll()
        now = time.time()
        stage = None
        if self.progress.exists():
            try:
                stage = json.loads(self.progress.read_text())
            except json.JSONDecodeError:
                stage = None
        stuck = None
        if rc is None and stage and stage["stage"] in ("run", "time") and now - stage["t"] > self.args.timeout:
            stuck = stage["kernel"]
        elif rc is None and now - (stage["t"] if stage else self.t0) > self.args.compile_timeout:
            stuck = stage["kernel"] if stage else self.names[0]
        if stuck is None and rc is None:
            return False
        if stuck is not None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        done = self.done_names()
        self.flush(sink)
        remaining = [n for n in self.names if n not in done]
        if stuck is not None or (rc != 0 and remaining):
            culprit = stuck or remaining[0]
            rec = {"schema": 1, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **self.env,
                   "kind": "gluon", "kernel": culprit.rsplit(".", 1)[0], "target": culprit.rsplit(".", 1)[1],
                   "expected": self.args.expected.get(culprit)}
            if stuck is not None:
                rec.update(outcome="timeout", stage=stage["stage"] if stage else "start",
                           timeout_s=self.args.timeout if stage and stage["stage"] in ("run", "time")
                           else self.args.compile_timeout)
            else:
                tail = (self.tmp / "worker.log").read_text()[-600:]
                rec.update(outcome="error", error=f"worker exited {rc}: {tail}")
            sink(rec)
            remaining = [n for n in remaining if n != culprit]
        self.names = remaining
        if remaining:
            self.out.unlink(missing_ok=True)
            self.start()
            return False
        return True

    def flush(self, sink):
        if self.out.exists():
            for ln in self.out.read_text().splitlines():
                if ln:
                    sink(json.loads(ln))
            self.out.unlink()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="JSON-lines file to append one record per kernel to")
    ap.add_argument("--only", default="", help="only kernels whose <name>-<variant>.<target> contains SUBSTR")
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a launch may run (default 20)")
    ap.add_argument("--compile-timeout", type=float, default=180.0, help="seconds a compile may take")
    ap.add_argument("--jobs", type=int, default=4, help="isolated workers at a time for expected hangs")
    ap.add_argument("--skip-hangers", action="store_true", help="leave out kernels expected to deadlock")
    ap.add_argument("--list", action="store_true", help="list what would run and exit")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_progress", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_env", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._worker:
        return worker(json.loads(args._worker), args.out, args._progress, json.loads(args._env))
    if args.out is None and not args.list:
        ap.error("--out is required")

    import triton
    recs = json.loads(INDEX.read_text())
    if args.list:
        target = "sm90a"
        env = {"triton": triton.__version__}
    else:
        import torch
        cap = torch.cuda.get_device_capability()
        target = f"sm{cap[0]}{cap[1]}a"
        env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
               "cuda": torch.version.cuda, "capability": f"{cap[0]}{cap[1]}", "commit": args.commit}
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20, check=False).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            env["driver"] = None
        del torch  # the parent never touches the GPU again
    todo = [r for r in recs if r["triton"] == env["triton"] and r["target"] == target and r["compiled"]
            and args.only in f"{r['kernel']}.{r['target']}"]
    if args.skip_hangers:
        todo = [r for r in todo if r["expected"] not in HANGERS]
    args.expected = {f"{r['kernel']}.{r['target']}": r["expected"] for r in todo}
    if args.list:
        for r in todo:
            print(f"{r['kernel']}.{r['target']}  expected={r['expected']}{'  (isolated)' if r['expected'] in HANGERS else ''}")
        return 0
    print(json.dumps(env), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fout = args.out.open("a")

    def sink(rec):
        fout.write(json.dumps(rec) + "\n")
        fout.flush()
        print(f"{rec['kernel']}.{rec['target']}: {rec['outcome']} expected={rec.get('expected')} "
              f"ttgir_equal={rec.get('ttgir_equal')} t_min={rec.get('time_ms_min')} {rec.get('error', '')[:160]}",
              flush=True)

    tmp = tempfile.mkdtemp(prefix="gluon_run_")
    normal = [f"{r['kernel']}.{r['target']}" for r in todo if r["expected"] not in HANGERS]
    hangers = [f"{r['kernel']}.{r['target']}" for r in todo if r["expected"] in HANGERS]
    active = [Job(normal, env, args, tmp)] if normal else []
    while active or hangers:
        while hangers and len(active) < 1 + args.jobs:
            active.append(Job([hangers.pop(0)], env, args, tmp))
        time.sleep(0.5)
        active = [j for j in active if not j.poll(sink)]
    fout.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
