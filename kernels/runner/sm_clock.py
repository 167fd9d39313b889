"""The SM clock kernels run at on this GPU (issue 16: the cycles -> microseconds of every prediction).

protosim counts cycles and converts them at the profile's ``clock_ghz`` (1.98 on the H200,
nvidia-smi's maximum).  If kernels run at a lower clock, every prediction is too fast by the
ratio, whatever the kernel.  kernels/microbench/sm_clock.cu reads %clock64 and %globaltimer
around a spin of a given number of cycles in each CTA: cycles / ns is the clock.  Measured:

* ``idle``: the kernels alone, 1 and 132 CTAs, a light spin and one with every thread doing FMAs,
  10 us to 10 ms;
* ``after_mma``: the same spins launched right after ~1 s of fp16 ``torch.matmul`` (tensor cores
  at full power: the state the long GEMM kernels run in), and nvidia-smi's ``clocks.sm``
  sampled every 50 ms during that matmul burst;
* with ``--wgmma`` instead: ``during_wgmma``, the clock while one warpgroup a CTA issues the GEMM
  kernels' block of eight wgmma m64n128k16 over and over (``spin_wgmma``; ``_n64`` and ``_n16``
  the same with m64n64k16 and m64n16k16), beside ``spin`` and ``spin_fma`` at the same grid and
  length, in turn;
* with ``--duty``: ``spin_wgmma_duty``, the same blocks with a pause after each -- every thread
  spinning ``idle`` clock64 cycles, or thread 0 in ``__nanosleep(idle)`` and the others at
  ``bar.sync`` -- the clock of a loop that alternates the tensor core's work with something else,
  as the GEMMs' k-loops do.

Run on the GPU machine:
    python -m kernels.runner.sm_clock --cubin B/sm_clock.sm_90a.cubin --out results.jsonl [--wgmma | --duty]
"""

from __future__ import annotations

import ctypes
import statistics
import subprocess
import sys
import time

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit, take_flag

SPINS = (20_000, 200_000, 2_000_000, 20_000_000)
"""Cycles to spin: ~10 us, ~100 us, ~1 ms, ~10 ms at 1.98 GHz."""
GRIDS = (1, 132)


SMEM = {"spin": 0, "spin_fma": 0, "spin_wgmma": 2 * 128 * 128, "spin_wgmma_n64": 2 * 128 * 128,
        "spin_wgmma_n16": 2 * 128 * 128, "spin_wgmma_duty": 2 * 128 * 128}
"""Dynamic shared memory each kernel is launched with: spin_wgmma's A and B boxes."""


def _spin_args(kernel: str, cycles: int, out, sink) -> list:
    """The kernel's arguments: cycles to spin, the (cycles, ns) pairs out, and the sink of the
    kernels that compute."""
    args = [ctypes.c_longlong(cycles), ctypes.c_void_p(out.data_ptr())]
    return args if kernel == "spin" else args + [ctypes.c_void_p(sink.data_ptr())]


def _clocks(torch, out, grid: int) -> list[float]:
    """Each CTA's clock64 cycles / globaltimer ns, after the launch finished."""
    torch.cuda.synchronize()
    return [c / ns for c, ns in out[: 2 * grid].view(grid, 2).cpu().tolist() if ns > 0]


def _spin(torch, drv: Driver, fns: dict, kernel: str, grid: int, cycles: int, out, sink, stream) -> dict:
    drv.launcher(fns[kernel], grid, 128, SMEM[kernel], stream, _spin_args(kernel, cycles, out, sink))()
    ghz = _clocks(torch, out, grid)
    return {"kernel": kernel, "grid": grid, "cycles": cycles, "ghz_median": round(statistics.median(ghz), 4),
            "ghz_min": round(min(ghz), 4), "ghz_max": round(max(ghz), 4)}


class ClockProbe:
    """The SM clock right now: the ``spin`` kernel on every SM for ``cycles`` (~50 us), the median
    CTA's clock64 cycles / globaltimer ns.  The GEMM runner calls it after each timed config
    (``--clock-probe``), so a record says what clock its kernel-only time was taken at."""

    def __init__(self, torch, cubin: bytes, ctas: int = 132, cycles: int = 100_000):
        self.torch, self.drv = torch, Driver()
        self.fn = self.drv.function(cubin, "spin", 0)
        self.out = torch.zeros(2 * ctas, dtype=torch.int64, device="cuda")
        self.ctas, self.cycles = ctas, cycles

    def __call__(self) -> float:
        args = _spin_args("spin", self.cycles, self.out, None)
        self.drv.launcher(self.fn, self.ctas, 32, 0, self.torch.cuda.current_stream().cuda_stream, args)()
        return round(statistics.median(_clocks(self.torch, self.out, self.ctas)), 4)


def _burst(torch, seconds: float) -> dict:
    """fp16 matmuls for ``seconds`` while nvidia-smi samples the SM clock and power."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for _ in range(8):
            a @ b
        torch.cuda.synchronize()
        n += 8
    elapsed = time.perf_counter() - start
    smi.terminate()
    samples = []
    for line in (smi.communicate(timeout=10)[0] or "").splitlines():
        try:
            clk, power, temp = (float(x) for x in line.split(","))
            samples.append((clk, power, temp))
        except ValueError:
            continue
    tflops = 2 * 8192 ** 3 * n / elapsed / 1e12
    return {"matmuls": n, "seconds": round(elapsed, 3), "tflops": round(tflops, 1),
            "smi_sm_mhz": [s[0] for s in samples], "smi_power_w": [s[1] for s in samples], "smi_temp_c": [s[2] for s in samples]}


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fns = {k: drv.function(cubin, k, 0) for k in ("spin", "spin_fma")}
    out = torch.zeros(2 * max(GRIDS), dtype=torch.int64, device="cuda")
    sink = torch.zeros(1, device="cuda")
    rows = []
    for kernel in fns:
        for grid in GRIDS:
            for cycles in SPINS:
                _spin(torch, drv, fns, kernel, grid, cycles, out, sink, stream)  # warm
                row = {"state": "idle", **_spin(torch, drv, fns, kernel, grid, cycles, out, sink, stream)}
                args = _spin_args(kernel, cycles, out, sink)
                t = T.kernel_time(torch, drv.launcher(fns[kernel], grid, 128, 0, stream, args), reps=reps, warmup=2)
                row["kernel_ms"] = t
                row["implied_ghz"] = round(cycles / ((t["median"] * 1e3 - 2.69) * 1e3), 4) if t["median"] * 1e3 > 3 else None
                rows.append(row)
                print(f"idle      {kernel:<8} grid {grid:>3} {cycles:>9} cycles: clock64/globaltimer {row['ghz_median']:.3f} GHz "
                      f"(min {row['ghz_min']:.3f}), kernel {t['median'] * 1e3:9.2f} us", flush=True)
    for burst in range(3):
        b = _burst(torch, 1.0)
        for kernel in fns:
            for cycles in (200_000, 2_000_000):
                row = {"state": "after_mma", "burst": burst, **_spin(torch, drv, fns, kernel, 132, cycles, out, sink, stream)}
                rows.append(row)
                print(f"after_mma {kernel:<8} grid 132 {cycles:>9} cycles: {row['ghz_median']:.3f} GHz (min {row['ghz_min']:.3f})",
                      flush=True)
        rows.append({"state": "during_mma", "burst": burst, **b})
        mhz = b["smi_sm_mhz"]
        print(f"during_mma burst {burst}: {b['matmuls']} matmuls 8192^3 in {b['seconds']} s = {b['tflops']} TFLOP/s; nvidia-smi SM clock "
              f"{min(mhz, default=0):.0f}-{max(mhz, default=0):.0f} MHz (median {statistics.median(mhz) if mhz else 0:.0f}), "
              f"power up to {max(b['smi_power_w'], default=0):.0f} W", flush=True)
    return rows


def measure_wgmma(torch, cubin: bytes, reps: int) -> list[dict]:
    """``spin``, ``spin_fma`` and the ``spin_wgmma`` kernels in turn at 1 and 132 CTAs, ~100 us to ~10 ms:
    clock64 / globaltimer in each launch, and the kernel-only time's implied clock."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fns = {k: drv.function(cubin, k, SMEM[k]) for k in ("spin", "spin_fma", "spin_wgmma", "spin_wgmma_n64", "spin_wgmma_n16")}
    out = torch.zeros(2 * max(GRIDS), dtype=torch.int64, device="cuda")
    sink = torch.zeros(1, device="cuda")
    rows = []
    for grid in GRIDS:
        for cycles in SPINS[1:]:
            for kernel in fns:
                _spin(torch, drv, fns, kernel, grid, cycles, out, sink, stream)  # warm
                row = {"state": "during_wgmma" if kernel.startswith("spin_wgmma") else "idle",
                       **_spin(torch, drv, fns, kernel, grid, cycles, out, sink, stream)}
                args = _spin_args(kernel, cycles, out, sink)
                t = T.kernel_time(torch, drv.launcher(fns[kernel], grid, 128, SMEM[kernel], stream, args), reps=reps, warmup=2)
                row["kernel_ms"] = t
                row["ghz_after_timing"] = round(statistics.median(_clocks(torch, out, grid)), 4)
                rows.append(row)
                print(f"{kernel:<10} grid {grid:>3} {cycles:>9} cycles: clock64/globaltimer {row['ghz_median']:.3f} GHz "
                      f"(min {row['ghz_min']:.3f}, last timed launch {row['ghz_after_timing']:.3f}), "
                      f"kernel {t['median'] * 1e3:9.2f} us", flush=True)
    return rows


DUTY_IDLE = (0, 100, 300, 1000, 3000, 10000, 30000, 100000)
"""Pauses after each block: clock64 cycles spun, or ns slept."""


def measure_duty(torch, cubin: bytes, reps: int) -> list[dict]:
    """``spin_wgmma_duty`` at 1 and 132 CTAs for ~2 ms (4M clock64 cycles), every pause of
    :data:`DUTY_IDLE`, spun and slept: the clock over the whole loop (clock64 / globaltimer),
    blocks issued, and the cycles spent inside the blocks."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "spin_wgmma_duty", SMEM["spin_wgmma_duty"])
    out = torch.zeros(4 * max(GRIDS), dtype=torch.int64, device="cuda")
    sink = torch.zeros(1, device="cuda")
    rows = []
    cycles = 4_000_000
    for grid in GRIDS:
        for sleep in (0, 1):
            for idle in DUTY_IDLE:
                args = [ctypes.c_longlong(cycles), ctypes.c_longlong(idle), ctypes.c_int(sleep), ctypes.c_void_p(out.data_ptr()),
                        ctypes.c_void_p(sink.data_ptr())]
                launch = drv.launcher(fn, grid, 128, SMEM["spin_wgmma_duty"], stream, args)
                launch()  # warm
                t = T.kernel_time(torch, launch, reps=reps, warmup=1)
                torch.cuda.synchronize()
                per_cta = out[: 4 * grid].view(grid, 4).cpu().tolist()  # the last timed launch
                ghz = [c / ns for c, ns, _, _ in per_cta if ns > 0]
                c, ns, blocks, inside = per_cta[0]
                row = {"state": "wgmma_duty", "kernel": "spin_wgmma_duty", "grid": grid, "cycles": cycles,
                       "pause": "sleep_ns" if sleep else "spin_cycles", "idle": idle,
                       "ghz_median": round(statistics.median(ghz), 4), "ghz_min": round(min(ghz), 4),
                       "ghz_max": round(max(ghz), 4), "cta0": {"cycles": c, "ns": ns, "blocks": blocks, "in_blocks": inside},
                       "block_cycles": round(inside / blocks, 1), "kernel_ms": t}
                rows.append(row)
                print(f"duty grid {grid:>3} {row['pause']:<11} {idle:>6}: clock {row['ghz_median']:.3f} GHz "
                      f"(min {row['ghz_min']:.3f}), {blocks} blocks of {row['block_cycles']} cycles, "
                      f"{ns / max(blocks, 1):8.1f} ns a block+pause", flush=True)
    return rows


EPILOG = ("--wgmma: the clock while the tensor core works (spin_wgmma, _n64, _n16) beside spin and spin_fma; "
          "--duty: the clock of wgmma blocks alternating with a pause (spin_wgmma_duty)")


def main(argv: list[str] | None = None) -> int:
    duty, argv = take_flag(argv, "--duty")
    wgmma, argv = take_flag(argv, "--wgmma")
    measure_fn, reps = (measure_duty, 3) if duty else (measure_wgmma, 10) if wgmma else (measure, 10)
    return cubin_bench_exit("sm_clock", __doc__, argv, measure_fn, reps, "JSON lines, one per measurement", epilog=EPILOG)


if __name__ == "__main__":
    sys.exit(main())
