"""Compile a TIRx PrimFunc to a loadable ``.so`` on a machine with no GPU.

Everything that bites on the CPU build machine (../shared/docs/DEVICE.md,
"Pitfalls") is handled here, in one place:

* no driver here, so ``libtvm_runtime_cuda.so`` cannot load and ``tvm.compile``
  silently returns a source-only module.  We build a stub ``libcuda.so.1`` from
  ``stub_libcuda.c`` and put it on the loader path *before* tvm is imported
  (the loader reads ``LD_LIBRARY_PATH`` at process start, so a process that
  lacks it re-executes itself once with it set: :func:`ensure_stub_on_path`);
* nvcc rather than NVRTC (NVRTC needs ``cuda-bindings``);
* ``with target:`` around ``tvm.compile`` or nvcc is given no architecture;
* a module with no device binary is refused loudly (:class:`BuildError`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUB_SOURCE = HERE / "stub_libcuda.c"
STUB_DIR = Path(os.environ.get("PROTOSIM_STUB_DIR", Path.home() / ".cache" / "protosim" / "stub-libcuda"))

ARCHES = ("sm_90a", "sm_100a")
"""sm_90a runs on our H200; sm_100a (Blackwell) is compile-only here."""

FATBIN_MAGIC = b"\x50\xed\x55\xba"
"""First word of an embedded CUDA fat binary; a source-only export has none."""


class BuildError(RuntimeError):
    """A kernel could not be built into a device binary; the message says why and what to do."""


def build_stub_libcuda() -> Path:
    """Compile the stub driver once per machine; returns its folder."""
    lib = STUB_DIR / "libcuda.so.1"
    if lib.exists() and lib.stat().st_mtime >= STUB_SOURCE.stat().st_mtime:
        return STUB_DIR
    if shutil.which("gcc") is None:
        raise BuildError("gcc not found: it is needed once to build the stub libcuda.so.1 (apt install gcc)")
    STUB_DIR.mkdir(parents=True, exist_ok=True)
    tmp = lib.with_suffix(f".{os.getpid()}.tmp")  # two test workers may build it at once; the rename is atomic
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(tmp), str(STUB_SOURCE)],
        check=True,
    )
    tmp.replace(lib)
    return STUB_DIR


def stub_on_loader_path() -> bool:
    return str(STUB_DIR) in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)


def real_driver_present() -> bool:
    """A machine with an NVIDIA driver needs no stub (and must not get one)."""
    return any(Path(p).exists() for p in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib64/libcuda.so.1"))


def ensure_stub_on_path() -> None:
    """Re-execute this process with the stub on ``LD_LIBRARY_PATH`` if it is not there.

    Call before ``import tvm``.  The dynamic loader reads the variable once, at
    start-up, so setting it from Python afterwards has no effect."""
    if stub_on_loader_path() or real_driver_present() or "tvm" in sys.modules:
        return
    folder = build_stub_libcuda()
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(folder), env.get("LD_LIBRARY_PATH", "")) if p)
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def env_for_subprocess() -> dict[str, str]:
    """The environment a child process needs to build kernels (stub on the path)."""
    env = dict(os.environ)
    if not real_driver_present():
        folder = build_stub_libcuda()
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(folder), env.get("LD_LIBRARY_PATH", "")) if p)
    env.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
    return env


def _import_tvm():
    if not (stub_on_loader_path() or real_driver_present()):
        raise BuildError(
            "the stub libcuda.so.1 is not on LD_LIBRARY_PATH, so tvm would build source-only modules; "
            "call kernels.toolchain.compiler.ensure_stub_on_path() before importing tvm, or run through "
            "`python -m kernels.toolchain.build`, which does"
        )
    if shutil.which("nvcc") is None:
        raise BuildError("nvcc not found on PATH: the CUDA toolkit (nvcc 12.8+ for sm_100a) is needed to build kernels")
    os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
    import tvm
    import tvm.support.nvcc

    return tvm


def out_dir_main(module: str, doc: str, build, argv: list[str] | None = None) -> int:
    """The command line of a microbenchmark that builds kernels from generated source:
    ``python -m MODULE OUT_DIR`` runs ``build(Path(OUT_DIR))`` with the stub on the loader path
    (:func:`ensure_stub_on_path`); 2 and a usage line for anything else."""
    args = sys.argv[1:] if argv is None else argv
    usage = doc.split("\n\n")[0] + f"\nusage: python -m {module} OUT_DIR"
    if args in (["-h"], ["--help"]):
        print(usage)
        return 0
    if len(args) != 1 or args[0].startswith("-"):  # an unknown flag is not a folder to build into
        print(usage, file=sys.stderr)
        return 2
    ensure_stub_on_path()
    build(Path(args[0]))
    return 0


def compile_primfunc(func, arch: str, name: str = "kernel"):
    """``tvm.compile`` for ``arch``; returns the runtime module (refuses source-only)."""
    if arch not in ARCHES:
        raise BuildError(f"{name}: arch {arch!r} is not one of {', '.join(ARCHES)}")
    tvm = _import_tvm()
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with target:
        mod = tvm.compile(tvm.IRModule({"main": func}), target=target, tir_pipeline="tirx")
    runtime = mod.mod if hasattr(mod, "mod") else mod
    cuda = [m for m in runtime.imports if m.kind == "cuda"]
    # Property bit 2 is "binary serialisable with device code"; a source-only CUDA
    # module has mask 1.  Checked again on the exported file (fat-binary magic).
    if not cuda or not cuda[0].get_property_mask() & 2:
        raise BuildError(
            f"{name}: tvm produced a source-only CUDA module (no device binary). "
            "libtvm_runtime_cuda.so could not load: is the stub libcuda.so.1 on LD_LIBRARY_PATH?"
        )
    return mod


def cuda_source(mod) -> str:
    runtime = mod.mod if hasattr(mod, "mod") else mod
    return "\n".join(m.inspect_source() for m in runtime.imports if m.kind == "cuda")


def export(mod, path: Path, name: str = "kernel") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.so")  # concurrent builders of one key must not share it
    mod.export_library(str(tmp))
    if FATBIN_MAGIC not in tmp.read_bytes():
        tmp.unlink()
        raise BuildError(f"{name}: the exported library holds no CUDA fat binary (source-only build); refusing to write {path}")
    tmp.replace(path)
    return path
