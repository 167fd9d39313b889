"""Build a plan's kernels on the CPU and prepare the folder the GPU machine needs.

    python -m kernels.toolchain.build --plan silicon --bundle .gpu

compiles every distinct kernel of the plan for sm_90a (cached by content hash
under ``--cache``), and writes into ``--bundle``:

* ``kernels/<key>.so`` -- one per kernel, each checked to hold a CUDA fat binary;
* ``manifest.json``     -- the plan's jobs with the file each one loads (and, for the thread-copy
  steps, what the kernel's SASS says of its copy: ``copy_stream``, where ``cuobjdump`` is here);
* ``tvm/``              -- the installed tvm package trimmed to its runtime (no
  ``libtvm_compiler.so``, sources, headers, relax, topi: ~12 MB instead of ~300);
* ``wheels/``           -- the ``apache-tvm-ffi`` wheel for CPython 3.12, the GPU
  machine's Python, matching the version installed here.

Run the bundle with :mod:`kernels.runner.gemm`.

Nothing is downloaded on the GPU machine.  ``--seed-steps`` instead compiles the
seed's Blackwell steps for sm_100a (compile-only here) and prints what each holds.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from protosim.config import ConfigError

from ..plans import PLANS, Job, load_plan_file
from ..spec import KernelSpec
from . import compiler

KERNELS = Path(__file__).resolve().parents[1]
ROOT = KERNELS.parent
DEFAULT_CACHE = ROOT / "build" / "kernels"
TRIM_DIRS = ("3rdparty", "include", "src", "web", "relax", "topi", "__pycache__")
TRIM_FILES = ("libtvm_compiler.so",)


def toolchain_fingerprint() -> str:
    """What else decides the binary: our kernel sources, tvm's and nvcc's versions."""
    from importlib.metadata import version

    h = hashlib.sha256()
    for path in ("tirx/hopper.py", "spec.py", "toolchain/compiler.py"):
        h.update((KERNELS / path).read_bytes())
    h.update(version("apache-tvm").encode())
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout if shutil.which("nvcc") else ""
    h.update(nvcc.encode())
    return h.hexdigest()[:16]


def _compile_one(spec_dict: dict, out: str) -> tuple[str, float]:
    """Worker: build one Hopper kernel to ``out`` (runs in a child with the stub on its path)."""
    from protosim.config import GemmConfig

    from ..tirx import hopper

    spec = KernelSpec(spec_dict["step"], GemmConfig.from_dict(spec_dict["config"]), spec_dict["trace"])
    t = time.perf_counter()
    mod = compiler.compile_primfunc(hopper.build(spec), "sm_90a", spec.name)
    compiler.export(mod, Path(out), spec.name)
    return out, time.perf_counter() - t


def build_plan(jobs: list[Job], cache: Path, workers: int, log=print) -> dict[str, Path]:
    """Compile each distinct kernel once; returns spec key -> cached .so."""
    fingerprint = toolchain_fingerprint()
    todo: dict[str, KernelSpec] = {}
    for job in jobs:
        todo.setdefault(job.spec.key, job.spec)
    paths = {key: cache / f"{key}-{fingerprint}.so" for key in todo}
    missing = [key for key in todo if not paths[key].exists()]
    log(f"{len(todo)} kernels, {len(todo) - len(missing)} cached, {len(missing)} to build ({workers} workers)")
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        # Labelled by name *and* key: the name leaves out fields such as sm_count, and two kernels
        # that differ only there must not collide in the work list (one would never be built).
        compile_in_pool(_compile_one, {f"{todo[key].name} [{key}]": (todo[key].to_dict(), str(paths[key])) for key in missing},
                        workers, log)
    return paths


def compile_in_pool(worker, todo: dict[str, tuple], workers: int, log=print) -> None:
    """``worker(*args)`` for each ``label: args`` of ``todo`` in ``workers`` processes; the
    worker builds one kernel and returns ``(anything, seconds)``.  A failed build raises
    :class:`~kernels.toolchain.compiler.BuildError` naming its label (the cause is tvm's or nvcc's message)."""
    with cf.ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(worker, *args): label for label, args in todo.items()}
        for i, fut in enumerate(cf.as_completed(futures), 1):
            try:
                _, seconds = fut.result()
            except Exception as exc:
                raise compiler.BuildError(f"{futures[fut]}: {exc}") from exc
            log(f"  [{i}/{len(todo)}] {futures[fut]}  {seconds:.1f} s")


def trim_tvm(dest: Path) -> int:
    import tvm

    src = Path(tvm.__file__).parent
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*TRIM_DIRS, *TRIM_FILES))
    return sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())


def ffi_wheel(dest: Path) -> Path:
    """The apache-tvm-ffi wheel for CPython 3.12 (the GPU machine's Python), same version as here."""
    from importlib.metadata import version

    ver = version("apache-tvm-ffi")
    dest.mkdir(parents=True, exist_ok=True)
    found = list(dest.glob(f"apache_tvm_ffi-{ver}-cp312-*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
           "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
           "-d", str(dest), f"apache-tvm-ffi=={ver}"]
    subprocess.run(cmd, check=True)
    found = list(dest.glob("apache_tvm_ffi-*cp312*.whl"))
    if not found:
        raise compiler.BuildError(f"pip downloaded no cp312 wheel of apache-tvm-ffi=={ver} into {dest}")
    return found[0]


THREAD_COPY_STEPS = ("v2", "v3")
"""The Hopper steps whose k-loop copies A and B with the threads (kernels/tirx/hopper.py)."""


def copy_stream(so: Path) -> dict | None:
    """What the built kernel's SASS says of its thread copy (``kernels.toolchain.sass``): the
    record carries it, and ``protosim crosscheck`` predicts the copy from it
    (``Case.copy_cycles``).  None where no ``cuobjdump`` is here to read it."""
    from .sass import analyse, find_cuobjdump

    tool = find_cuobjdump()
    if tool is None:
        return None
    s = analyse(so, tool=tool)
    return {"loads": s.loads, "load_bytes": s.load_bytes, "max_in_flight": s.max_in_flight, "cycles": round(s.cycles, 1),
            "latency": s.latency, "scoreboards": s.scoreboards, "regs_per_thread": s.regs_per_thread}


def write_bundle(jobs: list[Job], paths: dict[str, Path], bundle: Path, log=print) -> None:
    (bundle / "kernels").mkdir(parents=True, exist_ok=True)
    for old in (bundle / "kernels").glob("*.so"):
        old.unlink()
    manifest = []
    for job in jobs:
        so = bundle / "kernels" / f"{job.spec.key}.so"
        if not so.exists():
            shutil.copy2(paths[job.spec.key], so)
        entry = {**job.to_dict(), "name": job.spec.name, "key": job.spec.key, "so": f"kernels/{so.name}"}
        stream = copy_stream(so) if job.spec.step in THREAD_COPY_STEPS else None
        if stream:
            entry["copy_stream"] = stream
        manifest.append(entry)
    unread = [e["name"] for e in manifest if e["spec"]["step"] in THREAD_COPY_STEPS and "copy_stream" not in e]
    if unread:
        log(f"note: no cuobjdump here, so the thread copies of {len(unread)} kernel(s) ({unread[0]}, ...) are not read off "
            "their SASS: crosscheck will predict them by the builders' rule (install the CUDA toolkit's cuobjdump, or "
            "pip install triton, which ships one)")
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))
    size = trim_tvm(bundle / "tvm")
    wheel = ffi_wheel(bundle / "wheels")
    total = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file())
    log(f"bundle {bundle}: {len(manifest)} jobs, {len(paths)} kernels, tvm runtime {size / 1e6:.1f} MB, {wheel.name}; {total / 1e6:.1f} MB in all")


def build_seed_steps(arch: str = "sm_100a") -> list[dict]:
    """Compile the seed's six Blackwell steps; returns one row per step."""
    from protosim.config import GemmConfig

    from ..tirx.seed_sm100 import SEED_STEPS

    rows = []
    for step, fn in SEED_STEPS.items():
        shape = dict(M=128, N=128, K=64) if step == "v1" else dict(M=128, N=128, K=256) if step == "v2" else dict(M=256, N=256, K=256)
        cfg = GemmConfig(arch="b200", sm_count=4, **shape)
        t = time.perf_counter()
        src = compiler.cuda_source(compiler.compile_primfunc(fn(cfg), arch, f"seed {step}"))
        rows.append({"step": step, "seconds": round(time.perf_counter() - t, 2), "tcgen05.mma": "tcgen05.mma" in src,
                     "cp.async.bulk.tensor": "cp.async.bulk.tensor" in src, "source_lines": src.count("\n")})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.toolchain.build", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", default="silicon", help=f"named plan: {', '.join(PLANS)} (default silicon)")
    ap.add_argument("--plan-file", type=Path, help="a JSON list of jobs ({'spec': {'step', 'config', 'trace'}, 'delays', 'launches', 'kind', 'may_fault'}) instead of --plan")
    ap.add_argument("--bundle", type=Path, default=ROOT / ".gpu", help="folder to prepare for the GPU machine (default .gpu)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="content-hash cache of built .so files (default build/kernels)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles (default: all cores)")
    ap.add_argument("--no-bundle", action="store_true", help="only build (fill the cache)")
    ap.add_argument("--seed-steps", action="store_true", help="compile the seed's v1-v6 for sm_100a and report")
    ap.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    args = ap.parse_args(argv)
    if args.plan not in PLANS:
        ap.error(f"unknown plan {args.plan!r}; choose one of {', '.join(PLANS)}")
    compiler.ensure_stub_on_path()  # re-executes this process once, before tvm is imported
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    try:
        if args.seed_steps:
            rows = build_seed_steps()
            print(json.dumps(rows, indent=1) if args.json else "\n".join(str(r) for r in rows))
            return 0
        jobs = load_plan_file(args.plan_file) if args.plan_file else PLANS[args.plan]()
        t = time.perf_counter()
        paths = build_plan(jobs, args.cache, max(1, args.jobs), log)
        if not args.no_bundle:
            write_bundle(jobs, paths, args.bundle, log)
        summary = {"plan": str(args.plan_file) if args.plan_file else args.plan, "jobs": len(jobs), "kernels": len(paths), "seconds": round(time.perf_counter() - t, 1),
                   "bundle": None if args.no_bundle else str(args.bundle)}
        print(json.dumps(summary) if args.json else f"done in {summary['seconds']} s")
        return 0
    except (compiler.BuildError, ConfigError) as exc:
        print(f"kernels.toolchain.build: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
