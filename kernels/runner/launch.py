"""The one child-process launcher of the GPU runners (:mod:`.gemm`, :mod:`.mbar_probes`).

The parent never touches CUDA.  A kernel fault ("unspecified launch failure") poisons
the CUDA context for the rest of a process (DEVICE.md), and a kernel may hang, so every
launch runs in a child: the child appends one JSON record per launch and exits with
:data:`FAULTED` after recording a fault; the parent (:func:`run_tasks`) starts a fresh
child for whatever is left, kills a child that outlives its timeout, and writes a
host-side record for a launch whose child ended without one.  A child that cannot start
CUDA or the tvm runtime exits with :data:`SETUP_FAILED`: then nothing will run, and the
runner says so instead of recording every launch as a fault.

What a task is and what a record holds is the runner's business; this module knows only
that records are JSON lines carrying the parent's ``run`` id.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAULTED = 3  # child exit status: it recorded a fault, its context is poisoned; start a fresh child for the rest
SETUP_FAILED = 4  # child exit status: CUDA / the tvm runtime did not start; nothing will run


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_run_id() -> str:
    """Tells this run's records from earlier ones in the same file."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"


def have_gpu() -> bool:
    return any(Path("/dev").glob("nvidia[0-9]*"))


def fault_text(exc: BaseException) -> str:
    """A launch's exception as one line: its type and the first line of its message."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


# ----------------------------------------------------------------------------- child side


def setup_runtime():
    """Runtime-only tvm (DEVICE.md): CUDA through torch first, then tvm, then the CUDA runtime library."""
    import torch

    torch.zeros(1, device="cuda")
    os.environ["TVM_USE_RUNTIME_LIB"] = "1"
    import tvm

    ctypes.CDLL(str(Path(tvm.__file__).parent / "lib" / "libtvm_runtime_cuda.so"), mode=ctypes.RTLD_GLOBAL)
    return torch, tvm


def environment() -> dict:
    """Provenance a child gives once CUDA is up: GPU, driver, torch, CUDA, ffi versions."""
    import torch

    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        env["driver"] = out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        env["driver"] = None
    from importlib.metadata import PackageNotFoundError, version

    try:
        env["tvm_ffi"] = version("apache-tvm-ffi")
    except PackageNotFoundError:
        env["tvm_ffi"] = None
    return env


def start_child_runtime(prog: str, load: Callable[[object], object] = lambda tvm: None):
    """``(torch, provenance, load(tvm))`` for a child, or ``None`` after one line on stderr
    naming what did not start (no GPU, no torch, no tvm runtime, a module that does not
    load); the child then exits with :data:`SETUP_FAILED`."""
    try:
        torch, tvm = setup_runtime()
        loaded = load(tvm)
    except Exception as exc:  # noqa: BLE001  (no GPU, no torch, no tvm runtime: say which, run nothing)
        print(f"{prog}: cannot start the GPU runtime: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    return torch, {**environment(), "tvm": getattr(tvm, "__version__", None)}, loaded


# ----------------------------------------------------------------------------- parent side


def host_environment() -> dict:
    """Provenance the parent can give without touching CUDA (for records it writes itself)."""
    from importlib.metadata import PackageNotFoundError, version

    env: dict = {"gpu": None, "driver": None, "cuda": None}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False)
        if out.stdout.strip():
            env["gpu"], env["driver"] = (x.strip() for x in out.stdout.splitlines()[0].split(",", 1))
    except (OSError, subprocess.TimeoutExpired):
        pass
    for name, dist in (("torch", "torch"), ("tvm_ffi", "apache-tvm-ffi")):
        try:
            env[name] = version(dist)
        except PackageNotFoundError:
            env[name] = None
    return env


def recorded(out: Path, run_id: str, key: Callable[[dict], Hashable]) -> set:
    """``key(record)`` of every record of run ``run_id`` in ``out`` (the file may hold earlier runs too)."""
    if not out.exists():
        return set()
    return {key(r) for r in (json.loads(line) for line in out.read_text().splitlines() if line.strip()) if r.get("run") == run_id}


def preload_torch() -> bool:
    """Import torch (not CUDA) once in the parent, so forked children skip the
    seconds it costs: with a process per launch for launches that may fault, the
    import would otherwise dominate a batch.  Forking is safe while the parent has
    not initialised CUDA, and the parent never does.  Whether children can be forked."""
    try:
        import multiprocessing

        import torch  # noqa: F401

        return "fork" in multiprocessing.get_all_start_methods()
    except ImportError:
        return False


def spawn(argv: Sequence[str], timeout: float, bundle: Path) -> int:
    """``python -m <argv>`` as a fresh interpreter in the repository root, with the bundle's
    trimmed tvm first on its path when it has one; its exit status (raises
    ``subprocess.TimeoutExpired`` after killing it)."""
    env = dict(os.environ)
    if (bundle / "tvm").is_dir():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(bundle.resolve()), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", *argv], timeout=timeout, check=False, env=env, cwd=ROOT).returncode


def fork(target: Callable[..., int], args: tuple, timeout: float) -> int:
    """``target(*args)`` in a forked process (see :func:`preload_torch`); its exit status,
    raising ``subprocess.TimeoutExpired`` after killing it, as :func:`spawn` does."""
    import multiprocessing

    proc = multiprocessing.get_context("fork").Process(target=_forked_entry, args=(target, args))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
        raise subprocess.TimeoutExpired("forked child", timeout)
    return proc.exitcode if proc.exitcode is not None else 1


def _forked_entry(target: Callable[..., int], args: tuple) -> None:
    sys.stdout.flush()
    os._exit(target(*args))


def run_tasks(tasks: Sequence[Hashable], start: Callable[[list], int], done: Callable[[], set],
              host_record: Callable[[Hashable, str, str], None], child_timeout: float,
              progress: Callable[[], None] = lambda: None) -> bool:
    """Run ``tasks`` in order through children until each one has a record.

    ``start(remaining)`` runs one child over the remaining tasks and returns its exit
    status (:func:`spawn` or :func:`fork`); ``done()`` is the set of tasks recorded so far.
    When a child records nothing, the task it was on hung or killed its process:
    ``host_record(task, outcome, why)`` records it (``outcome`` is ``timeout`` or
    ``fault``) and the next child starts after it.  ``False`` when a child could not start
    the GPU runtime (:data:`SETUP_FAILED`): the caller says so; nothing more is run."""
    remaining = list(tasks)
    while remaining:
        host = None
        try:
            rc = start(remaining)
            if rc == SETUP_FAILED:
                return False
            if rc not in (0, FAULTED):
                host = ("fault", f"the child process died (exit status {rc}) before recording this launch")
        except subprocess.TimeoutExpired:
            host = ("timeout", f"the child process gave no record within {child_timeout} s and was killed")
        finished = done()
        left = [t for t in remaining if t not in finished]
        if left and len(left) == len(remaining):
            outcome, why = host or ("fault", "the child process exited without recording this launch")
            host_record(left[0], outcome, why)
            left = left[1:]
        remaining = left
        progress()
    return True
