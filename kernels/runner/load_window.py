"""How many global loads an SM keeps in flight, on the GPU (issue 16: co-resident thread copies).

kernels/microbench/load_window.cu: every warp of 128-thread CTAs runs rounds of W independent
loads, all issued before the first is consumed (W = 1 .. 32; checked in the SASS), from
L2-resident memory, each load a new line.  Grids of 132 x c CTAs put c CTAs on each SM (as far
as registers allow: the kernel records %smid and each CTA's start and end, and the rows say how
many CTAs actually overlapped on an SM).  If an SM served any number of outstanding loads, a
round would take one L2 latency whatever W and c; where it serves at most some number at once,
a round's time grows with W x warps per SM past that number.  Run on the GPU machine:

    python -m kernels.runner.load_window --cubin B/load_window.sm_90a.cubin --out results.jsonl

One JSON line per (kernel, grid, share): W, bytes per lane (2: the seed's LDG.E.U16 copy, 64 bytes per
warp instruction; 4; 16: 512 bytes), ``cg`` (ld.global.cg, L2 only) or ``nc`` (ld.global.nc, the
copy's LDG.E.CONSTANT), CTAs overlapping per SM (median over SMs), cycles per round (median
CTA), warp loads in flight per SM (W x 4 warps x overlapping CTAs) and warp loads served per
cycle per SM (median over SMs: loads / the SM's busy span).  Then a sharing sweep: ``share``
consecutive CTAs read the same chunks at the same time (:data:`SHARING`); and a waiters sweep:
four more warps per CTA poll an mbarrier while the loads run (:data:`WAITERS`); and a stores sweep:
one shared store per load, as in the seed's copy (:data:`EACH`); and 1,024-thread CTAs on 1 to 132
SMs (:data:`ONE_SM`).
"""

from __future__ import annotations

import ctypes
import statistics
import sys

from . import timing as T
from .launch_cost import Driver, cubin_bench_exit
from .tma_stream import SM_COUNT

WINDOWS = (1, 2, 4, 8, 16, 32)
KERNELS = (("b2", "cg"), ("b4", "cg"), ("b16", "cg"), ("b2", "nc"))
CTAS_PER_SM = (1, 2, 4, 8, 16)
LOADS_PER_WARP = 256  # load_window.cu LOADS
WARPS = 4
BUFFER = 32 << 20
"""32 MiB: L2-resident on the H200 (50 MiB) after the warm-up launches."""
SHARING = (("b2", "nc"), (4, 16), (1, 4), (1, 8, 32, 128))
"""The sharing sweep: (kernel, windows, CTAs per SM, shares): ``share`` consecutive CTAs, each on
an SM of its own, read the same chunks at the same time -- as the CTAs of a GEMM row or column
read one A or B tile (the v3 kernel at 2048^2 BLK_N 64: 32 CTAs read each A tile)."""
WAITERS = (("b2", "nc"), (8, 16), (1, 2, 4))
"""The waiters sweep: the same kernels launched with 256 threads, warps 4-7 polling an mbarrier
(``mbarrier.try_wait`` in a loop) until the four load warps are done -- do waiting warps slow
the loads of their SM?"""
EACH = (("b2", "nc_each"), (8, 16, 32))
"""The stores sweep: every loaded value stored to its own shared slot, W ``STS.U16`` per round as in
the seed's copy (one shared store per load), at every CTAs-per-SM count."""
ONE_SM = ((("b2", "nc_sm"), 16), (("b4", "cg_sm"), 16), (("b16", "cg_sm"), 8)), (1, 8, 33, 66, 132)
"""The SM-or-chip sweep: CTAs of 32 load warps (eight CTAs' worth on one SM) on 1 to 132 SMs -- is the
limit on loads of each width the SM's or the chip's?"""
CHUNK = 512  # load_window.cu: bytes between two chunks (BUFFER / CHUNK must be a multiple of every W)


def overlap(spans: list[tuple[int, int]]) -> int:
    """The most of these (start, end) intervals open at one instant."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    most = now = 0
    for _, d in edges:
        now += d
        most = max(most, now)
    return most


def summarize(records: list[list[int]], w: int, rounds: int, warps: int = WARPS) -> dict:
    """Per-SM numbers from each CTA's (smid, t0, t1)."""
    by_sm: dict[int, list[tuple[int, int]]] = {}
    for sm, t0, t1 in records:
        by_sm.setdefault(sm, []).append((t0, t1))
    per_round = [(t1 - t0) / rounds for _, t0, t1 in records]
    conc = [overlap(s) for s in by_sm.values()]
    rate = [len(s) * warps * rounds * w / (max(b for _, b in s) - min(a for a, _ in s)) for s in by_sm.values()]
    return {"sms": len(by_sm), "ctas_overlapping_median": statistics.median(conc), "ctas_overlapping_max": max(conc),
            "cycles_per_round_median": round(statistics.median(per_round), 1),
            "cycles_per_round_max": round(max(per_round), 1),
            "in_flight_per_sm": w * warps * statistics.median(conc),
            "warp_loads_per_clk_per_sm": round(statistics.median(rate), 4)}


def measure(torch, cubin: bytes, reps: int) -> list[dict]:
    drv = Driver()
    stream = torch.cuda.current_stream().cuda_stream
    buf = torch.randint(0, 255, (BUFFER,), dtype=torch.uint8, device="cuda")
    nchunks = BUFFER // CHUNK
    rows = []

    def run(width: str, op: str, w: int, c: int, share: int, threads: int = 128, grid: int | None = None) -> None:
        name = f"w{w}_{width}_{op}"
        fn = drv.function(cubin, name, 0)
        rounds = LOADS_PER_WARP // w
        grid = grid or SM_COUNT * c
        warps = threads // 32 if op.endswith("_sm") else WARPS  # the _sm kernel: every warp loads
        out = torch.zeros(3 * grid, dtype=torch.int64, device="cuda")
        args = [ctypes.c_void_p(buf.data_ptr()), ctypes.c_uint(nchunks), ctypes.c_int(share), ctypes.c_void_p(out.data_ptr())]
        t = T.kernel_time(torch, drv.launcher(fn, grid, threads, 0, stream, args), reps=reps, warmup=2)
        row = {"kernel": name, "window": w, "lane_bytes": int(width[1:]), "cache": op.split("_")[0],
               "store_each": op.endswith("_each"), "grid": grid, "share": share, "threads": threads,
               "ctas_per_sm_asked": c, "rounds": rounds, "warps_per_cta": warps,
               **summarize(out.view(grid, 3).cpu().tolist(), w, rounds, warps), "kernel_ms": t}
        rows.append(row)
        print(f"{name:<11} grid {grid:>5} share {share:>3} threads {threads} overlap {row['ctas_overlapping_median']:>4} in flight/SM "
              f"{row['in_flight_per_sm']:>6}: {row['cycles_per_round_median']:8.1f} cyc/round, "
              f"{row['warp_loads_per_clk_per_sm']:.3f} warp loads/clk/SM, kernel {t['median'] * 1e3:8.2f} us", flush=True)
        del out

    for width, op in KERNELS:
        for w in WINDOWS:
            for c in CTAS_PER_SM:
                run(width, op, w, c, 1)
    (width, op), windows, ctas, shares = SHARING
    for w in windows:
        for c in ctas:
            for share in shares:
                run(width, op, w, c, share)
    (width, op), windows, ctas = WAITERS
    for w in windows:
        for c in ctas:
            for threads in (128, 256):
                run(width, op, w, c, 1, threads)
    (width, op), windows = EACH
    for w in windows:
        for c in CTAS_PER_SM:
            run(width, op, w, c, 1)
    kernels, grids = ONE_SM
    for (width, op), w in kernels:
        for grid in grids:
            run(width, op, w, 1, 1, 1024, grid)
    return rows


def main(argv: list[str] | None = None) -> int:
    return cubin_bench_exit("load_window", __doc__, argv, measure, 5, "JSON lines, one per (kernel, grid, share)")


if __name__ == "__main__":
    sys.exit(main())
