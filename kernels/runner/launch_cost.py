"""What a kernel costs on the GPU beyond its SMs' cycles (issue 16, part 3: a microbenchmark).

The simulator's time is the cycles from the first CTA's start to the last CTA's end.  A
kernel-only measurement (kernels/runner/timing.py: CUDA events around the launch alone)
also holds what the GPU spends around those cycles: the front end reading the launch,
the CTAs' dispatch, the end of the grid, the events themselves.  Kernels that do nothing
measure exactly that part, with the same method, across the grids, block sizes and
shared-memory sizes the GEMM kernels use.  Run on the GPU machine:

    nvcc -cubin -arch=sm_90a -o B/launch_cost.sm_90a.cubin kernels/microbench/launch_cost.cu   # on the CPU machine
    python -m kernels.runner.launch_cost --cubin B/launch_cost.sm_90a.cubin --out results.jsonl

One JSON line per (kernel, grid, block, dynamic shared memory), with the provenance of the
run; a table on stdout.  The kernels are loaded through the driver API (ctypes on
libcuda) and launched on torch's current stream, so :func:`kernel_time` times them
exactly as it times a GEMM launch.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import timing as T

GRIDS = (1, 8, 33, 66, 132, 264)
BLOCKS = (128, 384)
SMEM = (0, 196_608)
"""No dynamic shared memory, and 192 KiB (one CTA per SM: the GEMM kernels' 2-4 stage rings)."""
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # cuda.h, CUfunction_attribute


class Driver:
    """The few driver calls needed to load a cubin and launch from it on a given stream."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.modules: dict[int, ctypes.c_void_p] = {}
        """Each loaded function's module (by the function's handle), for :meth:`read_int64s`."""

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError(f"{what}: CUDA driver error {rc} ({(name.value or b'?').decode()})")

    def function(self, cubin: bytes, name: str, smem: int) -> ctypes.c_void_p:
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), f"cuModuleGetFunction({name})")
        if smem:
            self.check(self.lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem), "cuFuncSetAttribute")
        self.modules[fn.value] = module
        return fn

    def read_int64s(self, fn: ctypes.c_void_p, name: str) -> list[int]:
        """The ``__device__`` array ``name`` of ``fn``'s module, as int64s (call once the launches are done)."""
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        self.check(self.lib.cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size), self.modules[fn.value], name.encode()),
                   f"cuModuleGetGlobal({name})")
        out = (ctypes.c_int64 * (size.value // 8))()
        self.check(self.lib.cuMemcpyDtoH_v2(out, ptr, ctypes.c_size_t(size.value)), f"cuMemcpyDtoH({name})")
        return list(out)

    def launcher(self, fn, grid: int, block: int, smem: int, stream: int, args: list[ctypes.c_void_p]):
        pointers = [ctypes.pointer(a) for a in args]  # kernelParams: one pointer to each argument's value
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(p, ctypes.c_void_p) for p in pointers]) if args else None

        def launch() -> None:
            _alive = (args, pointers)  # noqa: F841 - the array points into these
            self.check(self.lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, smem, ctypes.c_void_p(stream), params, None),
                       "cuLaunchKernel")
        return launch


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    out = torch.zeros(max(GRIDS), dtype=torch.int32, device="cuda")
    rows = []
    for kernel in ("empty_kernel", "store_one"):
        for smem in SMEM:
            fn = drv.function(cubin, kernel, smem)
            for block in BLOCKS:
                for grid in GRIDS:
                    args = [ctypes.c_void_p(out.data_ptr())] if kernel == "store_one" else []
                    t = T.kernel_time(torch, drv.launcher(fn, grid, block, smem, stream, args), reps=reps, warmup=3)
                    rows.append({"kernel": kernel, "grid": grid, "block": block, "smem": smem, "kernel_ms": t})
                    print(f"{kernel:<13} grid {grid:>4} block {block:>4} smem {smem:>6}: median {t['median'] * 1e3:7.2f} us"
                          f"  min {t['min'] * 1e3:7.2f} us", flush=True)
    # torch's own spin kernel with no cycles to spin: one CTA of one thread
    t = T.kernel_time(torch, lambda: torch.cuda._sleep(0), reps=reps, warmup=3)
    rows.append({"kernel": "torch.cuda._sleep(0)", "grid": 1, "block": 1, "smem": 0, "kernel_ms": t})
    print(f"torch.cuda._sleep(0): median {t['median'] * 1e3:7.2f} us  min {t['min'] * 1e3:7.2f} us")
    return rows


WAVES = (1, 2, 4, 8, 16, 32, 64)
"""``--waves``: grids of this many CTAs per SM slot, for the CTAs' turnover on an SM."""
WAVE_SMEM = ((196_608, 1), (98_304, 2))
"""(dynamic shared memory, CTAs per SM it allows): one CTA per SM as the GEMM kernels' stage rings, and two."""


def measure_waves(torch, cubin: bytes, reps: int) -> list[dict]:
    """``store_one`` CTAs (each writes a word and exits) in grids of 1-64 waves of the SMs'
    slots: the kernel-only time's slope per wave is what it costs an SM to retire a CTA and
    start the next, beside a CTA's own (tiny) work."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    out = torch.zeros(132 * 2 * max(WAVES), dtype=torch.int32, device="cuda")
    rows = []
    for smem, per_sm in WAVE_SMEM:
        fn = drv.function(cubin, "store_one", smem)
        for waves in WAVES:
            grid = 132 * per_sm * waves
            t = T.kernel_time(torch, drv.launcher(fn, grid, 128, smem, stream, [ctypes.c_void_p(out.data_ptr())]),
                              reps=reps, warmup=3)
            rows.append({"kernel": "store_one", "grid": grid, "block": 128, "smem": smem, "ctas_per_sm": per_sm,
                         "waves": waves, "kernel_ms": t})
            print(f"store_one smem {smem:>6} ({per_sm}/SM) waves {waves:>3} grid {grid:>6}: median "
                  f"{t['median'] * 1e3:8.2f} us", flush=True)
    return rows


def provenance(torch, commit: str) -> dict:
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda, "commit": commit,
           "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20).stdout.strip().split(",")
        env["driver"], env["max_sm_clock"] = q[0].strip(), q[1].strip()
    except (OSError, subprocess.TimeoutExpired, IndexError):
        env["driver"] = env["max_sm_clock"] = None
    return env


def run_cubin_bench(kind: str, doc: str, argv: list[str] | None, measure, reps: int, out_help: str,
                    epilog: str | None = None) -> list[dict] | None:
    """The command line every cubin microbenchmark shares: ``--cubin``, ``--out``, ``--reps``,
    ``--commit``; ``measure(torch, cubin, reps)`` -> rows, appended to ``--out`` as JSON lines of
    ``kind`` with the run's provenance.  None (after one line on stderr) when it cannot run.
    ``epilog``: the benchmark's own options, for ``--help`` (the caller parses them)."""
    ap = argparse.ArgumentParser(prog=f"python -m kernels.runner.{kind}", description=doc.split("\n\n")[0], epilog=epilog)
    ap.add_argument("--cubin", type=Path, required=True, help=f"{kind}.sm_90a.cubin (nvcc -cubin, see kernels/microbench/{kind}.cu)")
    ap.add_argument("--out", type=Path, required=True, help=out_help)
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--commit", default="unknown")
    args = ap.parse_args(argv)
    if not args.cubin.is_file():
        print(f"{kind}: {args.cubin}: no such cubin; build it with nvcc -cubin (see kernels/microbench/{kind}.cu)", file=sys.stderr)
        return None
    import torch

    if not torch.cuda.is_available():
        print(f"{kind}: no CUDA device", file=sys.stderr)
        return None
    torch.zeros(1, device="cuda")  # the primary context, current on this thread, for the driver calls
    env = provenance(torch, args.commit)
    rows = measure(torch, args.cubin.read_bytes(), args.reps)
    with args.out.open("a") as f:
        for r in rows:
            f.write(json.dumps({"kind": kind, **env, **r}) + "\n")
    return rows


def take_flag(argv: list[str] | None, flag: str) -> tuple[bool, list[str]]:
    """(whether ``flag`` was given, the arguments without it): a benchmark's own switch, taken
    out before :func:`run_cubin_bench` parses the shared ones."""
    args = list(sys.argv[1:] if argv is None else argv)
    given = flag in args
    return given, [a for a in args if a != flag]


def take_value(argv: list[str] | None, option: str) -> tuple[str | None, list[str]]:
    """(the value given after ``option``, or None; the arguments without the two): a benchmark's
    own option, taken out as :func:`take_flag` takes a switch.  An option with nothing after it
    gives ``""``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if option not in args:
        return None, args
    i = args.index(option)
    value = args[i + 1] if i + 1 < len(args) else ""
    return value, args[:i] + args[i + 2:]


def cubin_bench_exit(*args, **kwargs) -> int:
    """:func:`run_cubin_bench` as a command's exit status: 0 when it measured, 2 when it could not run."""
    return 0 if run_cubin_bench(*args, **kwargs) is not None else 2


def folder_bench_exit(kind: str, doc: str, argv: list[str] | None, measure_folder, reps: int, out_help: str) -> int:
    """:func:`cubin_bench_exit` for a benchmark of several cubins in one folder: ``--cubin`` names
    any one of them, and ``measure_folder(torch, folder, reps)`` reads the others from beside it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    cubin_arg = argv[argv.index("--cubin") + 1] if "--cubin" in argv and argv.index("--cubin") + 1 < len(argv) else None
    folder = Path(cubin_arg).parent if cubin_arg else Path(".")
    return cubin_bench_exit(kind, doc, argv, lambda torch, cubin, n: measure_folder(torch, folder, n), reps, out_help)


def main(argv: list[str] | None = None) -> int:
    waves, argv = take_flag(argv, "--waves")
    if waves:
        return cubin_bench_exit("launch_cost", __doc__, argv, measure_waves, 10, "JSON lines, one per grid",
                                epilog="--waves: store_one CTAs in 1-64 waves of the SMs' slots (a CTA's turnover)")
    rows = run_cubin_bench("launch_cost", __doc__, argv, measure, 30, "JSON lines, one per measured kernel",
                           epilog="--waves: store_one CTAs in 1-64 waves of the SMs' slots (a CTA's turnover)")
    if rows is None:
        return 2
    empty = [r["kernel_ms"]["median"] * 1e3 for r in rows if r["kernel"] == "empty_kernel"]
    print(f"empty kernels: median of medians {statistics.median(empty):.2f} us, range {min(empty):.2f}-{max(empty):.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
