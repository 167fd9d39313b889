"""How fast one SM moves global -> shared with cp.async, on the GPU (issue 16: cp.async-fed matmuls).

kernels/microbench/cp_async_window.cu: every warp of a CTA runs rounds of W cp.async copies of
512 bytes a warp instruction (16 bytes a lane, Triton's ``LDGSTS.E.BYPASS.128``), each a new
L2-resident line, then commits, waits with ``cp.async.wait_group DEPTH - 1`` and ``bar.sync``
as Triton's pipelined loops do; the ``ld16`` kernels move the same bytes through registers
(``ld.global.cg.v4`` of all W, then W ``st.shared.v4``).  Grids of 132 x c CTAs put c CTAs on
each SM (as far as shared memory allows: the rows say how many overlapped); a second sweep runs
one CTA on 1, 33, 66 and 132 SMs (is a limit the SM's or the chip's?).  Run on the GPU machine:

    python -m kernels.runner.cp_async_window --cubin B/cp_async_window.sm_90a.cubin --out results.jsonl

One JSON line per launch: the kernel, W, DEPTH, lane bytes, warps per CTA, grid, CTAs
overlapping per SM (median over SMs), cycles per round (median CTA) and bytes moved per cycle
per SM (median over SMs: the SM's bytes over its busy span), and the kernel-only time.
"""

from __future__ import annotations

import ctypes
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .load_window import summarize
from .tma_stream import SM_COUNT

COPIES_PER_WARP = 256  # cp_async_window.cu COPIES
CHUNK = 512  # cp_async_window.cu CHUNK
BUFFER = 32 << 20
"""32 MiB: L2-resident on the H200 (50 MiB) after the warm-up launches."""

WINDOWS = (1, 2, 4, 8, 16, 32)
CTAS_PER_SM = (1, 2, 4)
SM_SWEEP = (("cp16", 16, 1), ("ld16", 16, 1), ("cp16", 8, 1)), (1, 33, 66, 132)
"""(kernel, W, DEPTH) launched as one CTA on each of 1 .. 132 SMs."""
DEPTHS = ((4, 2), (8, 2), (16, 2), (8, 4))
NARROW = (("cp4", 8), ("cp4", 16), ("cp8", 8), ("cp8", 16))
WARPS_SWEEP = ((8, 1), (16, 1), (8, 2))
"""(W, DEPTH) of cp16 at 8 warps a CTA (256 threads), one and two CTAs an SM."""


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    buf = torch.randint(0, 255, (BUFFER,), dtype=torch.uint8, device="cuda")
    nchunks = BUFFER // CHUNK
    rows = []

    def run(kind: str, w: int, depth: int, c: int, threads: int = 128, grid: int | None = None) -> None:
        name = f"{kind}_w{w}_d{depth}"
        lane_bytes = int(kind[2:])
        warps = threads // 32
        smem = warps * depth * w * 32 * lane_bytes
        fn = drv.function(cubin, name, smem if smem > 48 * 1024 else 0)
        rounds = COPIES_PER_WARP // w
        grid = grid or SM_COUNT * c
        out = torch.zeros(3 * grid, dtype=torch.int64, device="cuda")
        args = [ctypes.c_void_p(buf.data_ptr()), ctypes.c_uint(nchunks), ctypes.c_void_p(out.data_ptr())]
        t = T.kernel_time(torch, drv.launcher(fn, grid, threads, smem, stream, args), reps=reps, warmup=2)
        s = summarize(out.view(grid, 3).cpu().tolist(), w, rounds, warps)
        per_instr = 32 * lane_bytes
        row = {"kernel": name, "op": "ld.global+st.shared" if kind.startswith("ld") else "cp.async", "window": w,
               "depth": depth, "lane_bytes": lane_bytes, "bytes_per_warp_instruction": per_instr,
               "warps_per_cta": warps, "smem_per_cta": smem, "grid": grid, "ctas_per_sm_asked": c, "rounds": rounds,
               **s, "bytes_per_clk_per_sm": round(s["warp_loads_per_clk_per_sm"] * per_instr, 2),
               "bytes_in_flight_per_warp": w * depth * per_instr, "kernel_ms": t}
        rows.append(row)
        print(f"{name:<12} warps {warps} grid {grid:>4} overlap {row['ctas_overlapping_median']:>3}: "
              f"{row['cycles_per_round_median']:8.1f} cyc/round, {row['bytes_per_clk_per_sm']:6.1f} B/clk/SM, "
              f"kernel {t['median'] * 1e3:8.2f} us", flush=True)
        del out

    for kind in ("cp16", "ld16"):
        for w in WINDOWS:
            for c in CTAS_PER_SM:
                run(kind, w, 1, c)
    kernels, grids = SM_SWEEP
    for kind, w, depth in kernels:
        for grid in grids:
            run(kind, w, depth, 1, grid=grid)
    for w, depth in DEPTHS:
        for c in (1, 2):
            run("cp16", w, depth, c)
        run("cp16", w, depth, 1, grid=33)
    for kind, w in NARROW:
        for c in (1, 2):
            run(kind, w, 1, c)
    for w, depth in WARPS_SWEEP:
        for c in (1, 2):
            run("cp16", w, depth, c, threads=256)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("cp_async_window", __doc__, argv, measure, 5, "JSON lines, one per launch")


if __name__ == "__main__":
    sys.exit(main())
