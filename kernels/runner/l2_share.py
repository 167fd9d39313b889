"""How much of the L2 holds data every SM reads, on the GPU (issue 16: L2 partition effects).

kernels/microbench/l2_share.cu reads a buffer with one CTA per SM, either every CTA the whole
buffer (mode 0: each line read by SMs on both sides of the chip) or each CTA its own slice as
many times over (mode 1: each line read by one SM) -- the same bytes either way.  Buffers from
~9 to ~86 MB, in three states before each timed launch: ``written once`` (filled, then read by
the warm-up launches and every repetition: the steady state of a kernel launched again and
again on the same inputs, as the GEMM runner times them), ``rewritten`` (filled again before
every repetition: freshly written data) and ``flushed`` (L2 evicted before every repetition).
Run on the GPU machine:

    python -m kernels.runner.l2_share --cubin B/l2_share.sm_90a.cubin --out results.jsonl [--fine]

One JSON line per (mode, size, state): kernel-only time and the bytes read per second.
"""

from __future__ import annotations

import ctypes
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit, take_flag, take_value
from .tma_stream import SM_COUNT

W, CHUNK_BYTES = 8, 512  # l2_share.cu
UNITS = (16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 160)
"""Buffer sizes in units of SM_COUNT x W chunks (540,672 bytes): 8.7 to 86.5 MB."""
FINE = {0: tuple(range(54, 68, 2)), 1: tuple(range(80, 98, 2))}
"""``--fine``: around where each mode stopped fitting in the first sweep (29-36 MB and 43-52 MB)."""
SWEEP_UNITS = (40, 48, 56, 64, 72, 80, 88, 96)
"""``--grid`` sizes: 21.6 to 51.9 MB, where 8 CTAs' lines stopped fitting (30-35 MB) and 66's (43-52 MB)."""


def measure(torch, cubin: bytes, reps: int, fine: bool = False, grid: int = SM_COUNT) -> list[dict]:
    """``grid`` < SM_COUNT (``--grid N``): the first N CTAs alone (the launch puts CTA i on SM i's
    slot first), mode 1 only, written once only -- how much of the L2 the lines of a few SMs can
    hold (the model lets one side's SMs fill all of it)."""
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function(cubin, "l2_share", 0)
    sink = torch.zeros(1, dtype=torch.int32, device="cuda")
    smids = torch.full((SM_COUNT,), -1, dtype=torch.int32, device="cuda")
    scratch = torch.empty(4 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")
    rows = []
    for units in sorted(set(FINE[0] + FINE[1])) if fine else UNITS if grid == SM_COUNT else SWEEP_UNITS:
        nchunks = units * SM_COUNT * W
        nbytes = nchunks * CHUNK_BYTES
        buf = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
        for mode in (0, 1) if grid == SM_COUNT else (1,):
            if fine and units not in FINE[mode]:
                continue
            args = [ctypes.c_void_p(buf.data_ptr()), ctypes.c_uint(nchunks), ctypes.c_int(mode), ctypes.c_void_p(sink.data_ptr()),
                    ctypes.c_void_p(smids.data_ptr())]
            launch = drv.launcher(fn, grid, 128, 0, stream, args)
            states = (("written once", None), ("rewritten", lambda: buf.add_(1)), ("flushed", lambda: scratch.fill_(1)))
            for state, before in states[:1] if fine or grid != SM_COUNT else states:
                if state == "written once":
                    buf.add_(1)
                t = T.kernel_time(torch, launch, reps=reps, warmup=2, before=before)
                read = grid * nbytes
                us = t["median"] * 1e3
                row = {"mode": mode, "reads": "every CTA the whole buffer" if mode == 0 else "each CTA its own slice",
                       "bytes": nbytes, "state": state, "grid": grid, "sms": smids[:grid].tolist(), "kernel_ms": t,
                       "tb_per_s": round(read / ((us - 3.0) * 1e-6) / 1e12, 3)}
                rows.append(row)
                print(f"mode {mode} {nbytes / 1e6:6.1f} MB {state:<12}: {us:8.1f} us, {row['tb_per_s']:6.2f} TB/s "
                      "(less 3 us launch)", flush=True)
        del buf
    return rows


def main(argv: list[str] | None = None) -> int:
    fine, argv = take_flag(argv, "--fine")
    value, args = take_value(argv, "--grid")
    grid = SM_COUNT
    if value is not None:
        if not value.isdigit() or not 1 <= int(value) <= SM_COUNT:
            print(f"l2_share: --grid {value!r}: a CTA count between 1 and {SM_COUNT}", file=sys.stderr)
            return 2
        grid = int(value)
    return cubin_bench_exit("l2_share", __doc__, args, lambda torch, cubin, reps: measure(torch, cubin, reps, fine, grid), 5,
                            "JSON lines, one per (mode, size, state)",
                            epilog="--fine: sizes around each mode's knee, written once only; --grid N: the first N CTAs alone, mode 1")


if __name__ == "__main__":
    sys.exit(main())
