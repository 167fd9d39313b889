"""Run the Triton corpus (tests/fixtures/triton/corpus/index.json) on the GPU at hand.

    python -m kernels.triton.corpus_run --out results.jsonl [--only SUBSTR] [--commit SHA]
    python -m kernels.triton.corpus_run --out results.jsonl --edits DIR
    python -m kernels.triton.corpus_run --dry-run            # CPU: rebuild every call, launch nothing

For each index record of the installed Triton version and the GPU's target (default:
triton 3.6.0, sm90 -- the H200): rebuild the call (torch tensors on cuda, fp16 random
inputs, outputs filled with NaN), JIT-launch the corpus kernel with the record's
constexprs and options, compare the TTGIR the device compiled with the saved one
(``loc(...)`` and ``#loc`` lines removed), check the output against an fp32 torch
reference, and time the kernel alone: 3 warm-up launches, then N repetitions of
``torch.cuda._sleep`` (so that start event, launch and end event are all queued before the
GPU reaches them), start event, launch, end event.  The wall time of the Python launch
call is reported separately (host_us).  One JSON line per kernel is appended to --out.

Each record runs in a child process with a timeout (--timeout), so a fault or a hang in
one kernel cannot take the others with it; a kernel past the timeout is recorded as
outcome "timeout".

--edits DIR runs edited TTGIR files: DIR/<edit>.ttgir with a sidecar DIR/<edit>.edit.json
{"record": "<index file, e.g. triton-3.6.0/mm_ptr_64x64x32_s3_w4.sm90>", "edit": "what was
changed"}; each file is compiled with triton.compile(path) and launched with the call of
that record (the TTGIR's own parameters, filled by name), in a child process with the
timeout.

Imports only torch, triton, numpy and the standard library (and the kernel sources a
record names -- kernels/triton/corpus.py, or its ``source`` such as kernels/triton/heldout.py
-- which import triton only).  A record's reference is a matmul, an attention, or (``op:
torch``) one torch expression of its tensors that its kernel source wrote.
"""

from __future__ import annotations

import argparse
import builtins
import collections
import json
import math
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "triton" / "corpus"
RESULT_TAG = "CORPUS_RUN_RESULT "
READY_TAG = "CORPUS_RUN_READY"


# ---------------------------------------------------------------------------------------
# Text helpers (no torch needed)
# ---------------------------------------------------------------------------------------


def strip_loc(text: str) -> str:
    """TTGIR without location information: '#loc...' lines dropped, every ' loc(...)'
    (balanced parentheses) removed, trailing spaces trimmed."""
    out = []
    for line in text.splitlines():
        if line.startswith("#loc"):
            continue
        buf, i = [], 0
        while True:
            j = line.find(" loc(", i)
            if j < 0:
                buf.append(line[i:])
                break
            buf.append(line[i:j])
            k, depth, in_str = j + 5, 1, False
            while k < len(line) and depth:
                ch = line[k]
                if in_str:
                    if ch == "\\":
                        k += 1
                    elif ch == '"':
                        in_str = False
                elif ch == '"':
                    in_str = True
                elif ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                k += 1
            i = k
        out.append("".join(buf).rstrip())
    return "\n".join(out).strip() + "\n"


def first_diff(a: str, b: str) -> str | None:
    la, lb = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            return f"line {n}: saved {x.strip()[:160]!r} vs device {y.strip()[:160]!r}"
    if len(la) != len(lb):
        return f"length: saved {len(la)} lines vs device {len(lb)} lines"
    return None


def ttgir_params(ttgir: str) -> list[str]:
    head = next((ln for ln in ttgir.splitlines() if ln.lstrip().startswith("tt.func public")), "")
    return re.findall(r"%([A-Za-z_][\w.]*): ", head)


def load_index(corpus: Path) -> list[dict]:
    recs = json.loads((corpus / "index.json").read_text())
    if not isinstance(recs, list):
        raise SystemExit(f"{corpus / 'index.json'}: not a list of records")
    return recs


# ---------------------------------------------------------------------------------------
# Building a call from a record (torch)
# ---------------------------------------------------------------------------------------


def torch_dtype(torch, name: str):
    dt = getattr(torch, name, None)
    if dt is None:
        raise ValueError(f"torch has no dtype {name!r}")
    return dt


def make_tensors(torch, rec: dict, device: str, seed: int) -> dict:
    g = torch.Generator(device=device).manual_seed(seed)
    out = {}
    for tname, t in rec["tensors"].items():
        dt = torch_dtype(torch, t["dtype"])
        shape = tuple(int(s) for s in t["shape"])
        if t["init"] == "nan":
            x = torch.full(shape, float("nan"), dtype=torch.float32, device=device)
            x = x.to(dt) if dt.is_floating_point and dt.itemsize > 1 else torch.zeros(shape, dtype=dt, device=device)
        elif t["init"] == "randn":
            x = torch.randn(shape, dtype=torch.float32, device=device, generator=g).to(dt)
        elif t["init"] == "zeros":
            x = torch.zeros(shape, dtype=dt, device=device)
        else:
            raise ValueError(f"unknown init {t['init']!r} for tensor {tname}")
        out[tname] = x
    return out


def make_descriptor(tensor, block_shape):
    from triton.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor(tensor, list(tensor.shape), list(tensor.stride()), [int(b) for b in block_shape])


def build_call(torch, rec: dict, device: str, seed: int = 0):
    """(tensors, positional args in the kernel's parameter order, kwargs)."""
    tensors = make_tensors(torch, rec, device, seed)
    args = []
    for a in rec["args"]:
        if "tensor" in a:
            args.append(tensors[a["tensor"]])
        elif "desc" in a:
            args.append(make_descriptor(tensors[a["desc"]], a["block_shape"]))
        elif "int" in a:
            args.append(int(a["int"]))
        else:
            raise ValueError(f"argument {a.get('name')!r}: no tensor, desc or int")
    kwargs = dict(rec["constexprs"])
    kwargs.update(num_warps=int(rec["num_warps"]), num_stages=int(rec["num_stages"]))
    return tensors, args, kwargs


def build_ttgir_args(torch, rec: dict, ttgir: str, signature: dict | None, device: str, seed: int = 0):
    """Arguments for a kernel compiled from TTGIR text: one per tt.func parameter, filled
    by name from the record (tensors, ints, descriptors; a host descriptor's hidden shape
    and stride parameters are left to Triton's launcher when the signature says
    tensordesc, else given as ints)."""
    tensors = make_tensors(torch, rec, device, seed)
    by_name = {a["name"]: a for a in rec["args"]}
    params = ttgir_params(ttgir)
    sig_types = list(signature.values()) if signature else [None] * len(params)
    launcher_expands = any(isinstance(s, str) and s.startswith("tensordesc") for s in sig_types)
    args, hidden, cur = [], [], None
    for p in params:
        a = by_name.get(p)
        if a is not None and "tensor" in a:
            args.append(tensors[a["tensor"]])
            cur = None
        elif a is not None and "desc" in a:
            t = tensors[a["desc"]]
            args.append(make_descriptor(t, a["block_shape"]))
            hidden, cur = list(t.shape) + list(t.stride()), p
        elif cur and (p.startswith(cur + "_") or p.startswith(cur + ".")) and hidden:
            v = int(hidden.pop(0))
            if not launcher_expands:
                args.append(v)
        elif a is not None and "int" in a:
            args.append(int(a["int"]))
            cur = None
        else:
            raise ValueError(f"TTGIR parameter %{p} is not an argument of record {rec['file']}")
    return tensors, args


def kernel_of(rec: dict):
    """The @triton.jit function a record was compiled from: ``KERNELS[kernel]`` of its
    ``source`` module (the corpus's own by default; ``kernels.triton.heldout``...)."""
    import importlib

    sys.path.insert(0, str(ROOT))
    return importlib.import_module(rec.get("source", "kernels.triton.corpus")).KERNELS[rec["kernel"]]


REFERENCE_GLOBALS = {"__builtins__": {"__import__": builtins.__import__}}
"""What a reference expression sees besides its tensors, torch and math: no builtins but
``__import__``.  A C function that imports lazily (torch.remainder with a Python scalar, on
CPU and GPU alike) looks ``__import__`` up in the calling frame's builtins -- the expression's:
with none at all, held-out set 8's rotary and histogram references raised KeyError."""


def reference(torch, rec: dict, tensors: dict, before: dict | None = None):
    """(the kernel's output, what it should be).  ``before``: the tensors as they were before the
    launch (a kernel that reads its output, ``C = alpha A B + beta C``, is checked against them)."""
    ref = rec["reference"]
    if ref["op"] == "torch":
        # A kernel source's own reference: one expression over the record's tensors, each as
        # fp32 (with torch and math), giving the output's expected values.
        scope = {name: t.float() for name, t in (before or tensors).items()}
        scope.update(torch=torch, math=math)
        return tensors[ref["out"]], eval(ref["expr"], REFERENCE_GLOBALS, scope)  # noqa: S307 - our own records
    if ref["op"] == "matmul":
        a = tensors[ref["a"]].float()
        b = tensors[ref["b"]].float()
        if ref.get("b_layout") == "NxK":
            b = b.t()
        if ref.get("skip_every"):
            bk, skip = int(ref["block_k"]), int(ref["skip_every"])
            a = a.clone()
            for kt in range(math.ceil(a.shape[1] / bk)):
                if kt % skip == 0:
                    a[:, kt * bk:(kt + 1) * bk] = 0
        return tensors[ref["out"]], a @ b
    if ref["op"] == "attention":
        q, k, v = (tensors[ref[n]].float() for n in ("q", "k", "v"))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        return tensors[ref["out"]], torch.softmax(s, dim=-1) @ v
    raise ValueError(f"unknown reference op {ref['op']!r}")


def tolerance(rec: dict) -> float:
    dts = {t["dtype"] for t in rec["tensors"].values()}
    return 3e-2 if ("bfloat16" in dts or any("float8" in d for d in dts)) else 1e-2


def inputs_before(rec: dict, tensors: dict) -> dict | None:
    """The tensors as they are before the launch, for a kernel source's own reference (``op:
    torch``): a kernel may write a tensor it reads (``C = alpha A B + beta C``, a residual updated
    in place, an accumulating atomic), and its reference is stated on the values before."""
    if rec["reference"].get("op") != "torch":
        return None
    return {n: t.clone() for n, t in tensors.items()}


def check(torch, rec: dict, tensors: dict, before: dict | None = None) -> tuple[str, float, dict]:
    out, ref = reference(torch, rec, tensors, before)
    out = out.float()
    finite = torch.isfinite(out)
    detail = {"elements": out.numel(), "nonfinite": int((~finite).sum())}
    diff = torch.where(finite, (out - ref).abs(), torch.full_like(out, float("inf")))
    scale = ref.abs().max().clamp_min(1e-6)
    detail["wrong_elements"] = int((diff / scale >= tolerance(rec)).sum())
    if detail["nonfinite"]:
        rows = (~finite).reshape(-1, out.shape[-1]).any(dim=1)
        detail["nonfinite_rows"] = int(rows.sum())
        detail["first_nonfinite_row"] = int(rows.nonzero()[0, 0])
    err = (diff.max() / scale).item()
    outcome = "correct" if err < tolerance(rec) else "wrong"
    return outcome, (err if math.isfinite(err) else None), detail  # None: see detail["nonfinite"]


# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------


def time_launches(torch, launch, n: int, sleep_cycles: int) -> tuple[dict, dict]:
    """Kernel-only and host times in µs, by the GEMM runner's method (kernels/runner/timing.py:
    the GPU held by a spin while the host enqueues, the premise checked per repetition)."""
    from kernels.runner.timing import kernel_time

    r = kernel_time(torch, launch, reps=n, warmup=3, spin_cycles=sleep_cycles)

    def summary(xs):
        return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3), "mean": round(statistics.fmean(xs), 3),
                "n": len(xs)}
    return summary([t * 1000.0 for t in r["times"]]), summary([h * 1000.0 for h in r["host_times"]])


# ---------------------------------------------------------------------------------------
# One record / one edit (child process)
# ---------------------------------------------------------------------------------------


def _allocator(torch):
    import triton

    def alloc(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device="cuda")
    triton.set_allocator(alloc)


def run_record(corpus: Path, rec: dict, reps: int, sleep_cycles: int) -> dict:
    import torch

    res: dict = {}
    _allocator(torch)
    fn = kernel_of(rec)
    tensors, args, kwargs = build_call(torch, rec, "cuda", seed=1)
    grid = tuple(int(g) for g in rec["grid"])
    k = fn.warmup(*args, grid=grid, **kwargs)  # compile only
    print(READY_TAG, flush=True)
    before = inputs_before(rec, tensors)
    k = fn[grid](*args, **kwargs)
    torch.cuda.synchronize()
    saved = (corpus / (rec["file"] + ".ttgir")).read_text()
    dev = k.asm["ttgir"] if k is not None and hasattr(k, "asm") else ""
    a, b = strip_loc(saved), strip_loc(dev)
    res["ttgir_match"] = a == b
    if a != b:
        res["ttgir_diff"] = first_diff(a, b)
    res["shared"] = getattr(k.metadata, "shared", None)
    # What ptxas gave the kernel (the driver's numbers once loaded): registers set how many CTAs
    # an SM holds; spills are local-memory traffic the TTGIR does not show.
    res["n_regs"], res["n_spills"] = getattr(k, "n_regs", None), getattr(k, "n_spills", None)
    res["outcome"], res["max_rel_err"], res["check"] = check(torch, rec, tensors, before)
    res["kernel_us"], host = time_launches(torch, lambda: fn[grid](*args, **kwargs), reps, sleep_cycles)
    res["host_us"] = host
    return res


def run_edit(corpus: Path, ttgir_path: Path, rec: dict, reps: int, sleep_cycles: int) -> dict:
    import torch
    import triton

    _allocator(torch)
    res: dict = {}
    try:
        k = triton.compile(str(ttgir_path))
    except Exception as exc:  # noqa: BLE001  (Triton refused the edited IR: that is the result)
        return {"outcome": "compile_error", "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"}
    text = ttgir_path.read_text()
    sig = getattr(getattr(k, "src", None), "signature", None)
    tensors, args = build_ttgir_args(torch, rec, text, sig if isinstance(sig, dict) else None, "cuda", seed=1)
    grid = tuple(int(g) for g in rec["grid"])
    print(READY_TAG, flush=True)
    before = inputs_before(rec, tensors)
    k[grid](*args)
    torch.cuda.synchronize()
    res["outcome"], res["max_rel_err"], res["check"] = check(torch, rec, tensors, before)
    res["kernel_us"], res["host_us"] = time_launches(torch, lambda: k[grid](*args), reps, sleep_cycles)
    return res


def child_main(args) -> int:
    """--child: run one record (or one edit) and print one result line."""
    try:
        rec = json.loads(args.child_record)
        if args.child_edit:
            res = run_edit(args.corpus, Path(args.child_edit), rec, args.reps, args.sleep_cycles)
        else:
            res = run_record(args.corpus, rec, args.reps, args.sleep_cycles)
    except Exception as exc:  # noqa: BLE001  (report what failed; the parent records it)
        msg = str(exc).strip().splitlines()
        # a CUDA error raised after the launch (illegal address, launch failure, a trap) is the
        # kernel's doing: outcome "fault"; anything else (compile, launcher, arguments) is "error"
        cuda = "CUDA error" in str(exc) or type(exc).__name__ in ("AcceleratorError",)
        res = {"outcome": "fault" if cuda else "error", "error": f"{type(exc).__name__}: {msg[0][:400] if msg else ''}",
               "traceback": traceback.format_exc()[-2000:]}
    print(RESULT_TAG + json.dumps(res, default=str), flush=True)
    return 0


def in_child(args, rec: dict, edit: Path | None) -> dict:
    cmd = [sys.executable, "-m", "kernels.triton.corpus_run", "--child", "--corpus", str(args.corpus),
           "--reps", str(args.reps), "--sleep-cycles", str(args.sleep_cycles), "--child-record", json.dumps(rec)]
    if edit is not None:
        cmd += ["--child-edit", str(edit)]
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    lines: queue.Queue = queue.Queue()
    err_tail: collections.deque = collections.deque(maxlen=40)

    def pump_out():
        for line in p.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def pump_err():
        for line in p.stderr:
            err_tail.append(line.rstrip("\n"))

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=pump_err, daemon=True).start()
    stdout_lines: list[str] = []
    # compile + set-up may take long (a fresh CUDA context, Triton's compile); the kernel
    # itself gets args.timeout seconds from the moment the child says it is ready
    deadline, phase = t0 + args.setup_timeout, "setup"
    timed_out = False
    while True:
        left = deadline - time.time()
        if left <= 0:
            timed_out = True
            break
        try:
            line = lines.get(timeout=min(left, 1.0))
        except queue.Empty:
            continue
        if line is None:
            break
        stdout_lines.append(line)
        if line.startswith(READY_TAG) and phase == "setup":
            deadline, phase = time.time() + args.timeout, "run"
    if timed_out:
        # a hung kernel (or set-up): end the child's own process group, started just above
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            p.kill()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        what = "kernel launches" if phase == "run" else "compile and set-up"
        limit = args.timeout if phase == "run" else args.setup_timeout
        return {"outcome": "timeout", "error": f"{what} gave no result within {limit} s", "phase": phase,
                "wall_s": round(time.time() - t0, 1)}
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
    stdout, stderr = "\n".join(stdout_lines), "\n".join(err_tail)
    for line in reversed((stdout or "").splitlines()):
        if line.startswith(RESULT_TAG):
            try:
                res = json.loads(line[len(RESULT_TAG):])
            except ValueError:
                break
            res["wall_s"] = round(time.time() - t0, 1)
            return res
    tail = (stderr or stdout or "").strip().splitlines()
    return {"outcome": "crash", "error": f"child exited {p.returncode} without a result: {tail[-1][:300] if tail else ''}",
            "wall_s": round(time.time() - t0, 1)}


# ---------------------------------------------------------------------------------------
# Environment, dry run, main
# ---------------------------------------------------------------------------------------


def environment(commit: str) -> dict:
    env = {"gpu": None, "driver": None, "torch": None, "triton": None, "cuda": None, "capability": None, "commit": commit}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception as exc:  # noqa: BLE001
        env["triton"] = f"unavailable: {exc}"
    try:
        import torch
        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            cap = torch.cuda.get_device_capability()
            env["gpu"] = torch.cuda.get_device_name(0)
            env["capability"] = f"{cap[0]}{cap[1]}"
    except Exception as exc:  # noqa: BLE001
        env["torch"] = f"unavailable: {exc}"
    try:
        env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True, timeout=20, check=False).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        env["driver"] = None
    return env


def select(recs: list[dict], triton_version: str, target: str, only: str | None) -> list[dict]:
    return [r for r in recs if r.get("triton") == triton_version and r.get("target") == target and r.get("compiled")
            and (not only or only in r["file"])]


def dry_run(args, recs: list[dict]) -> int:
    """Rebuild every selected call on the CPU and check it against the saved compile:
    the argument list matches the kernel's parameters, the JIT binder's specialization of
    these very torch tensors and ints equals the one the corpus compiled with, and the
    TTGIR-parameter argument list for --edits can be built."""
    import torch

    sys.path.insert(0, str(ROOT))
    from kernels.triton.corpus import specialize

    bad = 0
    for rec in recs:
        try:
            fn = kernel_of(rec)
            tensors, args_, kwargs = build_call(torch, rec, "cpu", seed=1)
            if len(args_) + len(rec["constexprs"]) != len(fn.arg_names):
                raise ValueError(f"{len(args_)} args + {len(rec['constexprs'])} constexprs for {len(fn.arg_names)} parameters")
            problems = _binder_check(fn, rec, args_, kwargs, specialize)
            ttgir = (args.corpus / (rec["file"] + ".ttgir")).read_text()
            _, targs = build_ttgir_args(torch, rec, ttgir, None, "cpu", seed=1)
            out, ref = reference(torch, rec, tensors)
            if tuple(out.shape) != tuple(ref.shape):
                problems.append(f"reference shape {tuple(ref.shape)} != output {tuple(out.shape)}")
            status = "ok" if not problems else "MISMATCH " + "; ".join(problems)
            bad += bool(problems)
            print(f"{rec['file']}: {status} ({len(args_)} args, {len(targs)} TTGIR args, grid {rec['grid']})")
        except Exception as exc:  # noqa: BLE001
            bad += 1
            print(f"{rec['file']}: ERROR {type(exc).__name__}: {exc}")
    print(f"{len(recs) - bad}/{len(recs)} calls rebuilt and consistent")
    return 1 if bad else 0


def _binder_check(fn, rec, args_, kwargs, specialize) -> list[str]:
    """The JIT's own binder (create_function_from_signature) on the rebuilt call vs the
    corpus's specialization."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", int(rec["capability"]), 32))
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kw = {k: v for k, v in kwargs.items() if k not in ("num_warps", "num_stages")}
    _, spec, _ = binder(*args_, **kw)
    sig_jit = [s[0] for s in spec]
    # a constexpr's second field is its value (a string one, ACTIVATION="relu", is not an attribute key)
    attrs_jit = {i: backend.parse_attr(s[1]) for i, s in enumerate(spec)
                 if s[0] != "constexpr" and isinstance(s[1], str) and s[1]}
    const_jit = {i: s[1] for i, s in enumerate(spec) if s[0] == "constexpr"}
    call = {"tensors": rec["tensors"], "args": rec["args"], "constexprs": rec["constexprs"]}
    sig, consts, attrs = specialize(call)
    problems = []
    if list(sig.values()) != sig_jit:
        problems.append(f"signature {list(sig.values())} vs JIT {sig_jit}")
    if {k[0]: v for k, v in attrs.items()} != attrs_jit:
        problems.append(f"attrs {attrs} vs JIT {attrs_jit}")
    if {k[0]: v for k, v in consts.items()} != const_jit:
        problems.append(f"constexprs {consts} vs JIT {const_jit}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="JSON-lines file to append one record per kernel to")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help=f"corpus folder with index.json (default {CORPUS})")
    ap.add_argument("--only", metavar="SUBSTR", help="only records whose file contains SUBSTR")
    ap.add_argument("--triton", help="records of this Triton version (default: the installed one)")
    ap.add_argument("--target", help="records of this target, e.g. sm90 (default: the GPU's; sm90 in --dry-run)")
    ap.add_argument("--commit", default=os.environ.get("PROTOSIM_COMMIT", "unknown"))
    ap.add_argument("--reps", type=int, default=20, help="timed repetitions (default 20)")
    ap.add_argument("--sleep-cycles", type=int, default=200000, help="torch.cuda._sleep before each start event")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds for a kernel's launches (check + timing), counted after its compile, before "
                         "outcome 'timeout' (default 20)")
    ap.add_argument("--setup-timeout", type=float, default=180.0,
                    help="seconds for a child's start, CUDA context and compile (default 180)")
    ap.add_argument("--edits", type=Path, metavar="DIR", help="run DIR/<edit>.ttgir with DIR/<edit>.edit.json sidecars")
    ap.add_argument("--dry-run", action="store_true", help="rebuild every selected call on the CPU; launch nothing")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-record", help=argparse.SUPPRESS)
    ap.add_argument("--child-edit", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child_main(args)

    recs = load_index(args.corpus)
    try:
        import triton
        version = args.triton or triton.__version__
    except ImportError:
        version = args.triton or "3.6.0"
    if args.dry_run:
        sel = select(recs, version, args.target or "sm90", args.only)
        print(f"{len(sel)} records (triton {version}, {args.target or 'sm90'})")
        return dry_run(args, sel)
    if args.timeout is None:
        args.timeout = 20.0
    if args.out is None:
        ap.error("--out FILE is required (except with --dry-run)")
    env = environment(args.commit)
    target = args.target or (f"sm{env['capability']}" if env["capability"] else "sm90")
    print(json.dumps(env), flush=True)

    jobs: list[tuple[dict, Path | None, dict]] = []
    if args.edits:
        by_file = {r["file"]: r for r in recs}
        for side in sorted(args.edits.glob("*.edit.json")):
            ttgir = side.with_name(side.name[: -len(".edit.json")] + ".ttgir")
            try:
                meta = json.loads(side.read_text())
                rec = by_file[meta["record"]]
            except (OSError, ValueError, KeyError) as exc:
                jobs.append(({"file": str(side)}, None, {"edit_error": f"{type(exc).__name__}: {exc}"}))
                continue
            jobs.append((rec, ttgir, {"edit": meta.get("edit"), "edit_file": ttgir.name}))
    else:
        jobs = [(r, None, {}) for r in select(recs, version, target, args.only)]
    print(f"{len(jobs)} to run", flush=True)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    n_bad = 0
    with args.out.open("a") as f:
        for rec, edit, extra in jobs:
            row = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **env, "record": rec.get("file"), **extra}
            if "edit_error" in extra:
                res = {"outcome": "error", "error": extra["edit_error"]}
            elif edit is not None and not edit.exists():
                res = {"outcome": "error", "error": f"{edit} does not exist"}
            else:
                res = in_child(args, rec, edit)
            row.update({"outcome": res.get("outcome"), "max_rel_err": res.get("max_rel_err"),
                        "ttgir_match": res.get("ttgir_match"), "kernel_us": res.get("kernel_us"),
                        "host_us": res.get("host_us")})
            row.update({k: v for k, v in res.items() if k not in row})
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            n_bad += row["outcome"] != "correct"
            ku = (row.get("kernel_us") or {}).get("median")
            print(f"{row['record']}{' [' + extra['edit_file'] + ']' if edit else ''}: {row['outcome']} "
                  f"err={row.get('max_rel_err')} ttgir_match={row.get('ttgir_match')} kernel_us={ku} "
                  f"{row.get('error', '') or row.get('ttgir_diff', '') or ''}", flush=True)
    print(f"{len(jobs) - n_bad}/{len(jobs)} correct", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
