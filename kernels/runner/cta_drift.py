"""How far apart in time the CTAs that read one tile ask for it, on the GPU (issue 16).

kernels/microbench/cta_drift.py builds, per config, the kernel as TVM builds it (``_c0``) and the
same kernel with thread 0 stamping ``%globaltimer`` and ``clock64()`` at the top of every MMA
k-iteration (``_c1``). This times both kernel-only (inputs in L2) and reads the stamps of ``_c1``'s
last launch. Run on the GPU machine:

    python -m kernels.runner.cta_drift --cubin B/v4_drift_512x512x2048_n16_s2_c0.sm_90a.cubin --out results.jsonl

(``--cubin`` names any one of the cubins; the others, listed in the folder's ``cta_drift.json``,
are read from beside it.) The stamped kernel runs with its own shared memory and again with more,
so that at most 3, 2 or 1 CTAs fit an SM (:data:`FORCED_SMEM`): the same grid and reads at fewer
CTAs an SM. (``--blocked``: :func:`measure_blocked`, the co-residency test with SMs held by
kernels/microbench/sm_blocker.cu; ``--tiles``: :func:`measure_tiles`, the persistent configs' co-readers over
their whole tile walk; and with ``--warm-inputs`` A and B read again after D's fill; ``--segments``: :func:`measure_segments`, the same for v5 with
five stamps a k-iteration.) One JSON line per config: the kernel times, and per run for every CTA's
k-iteration the gap to the nearest other CTA's same iteration over the same A tile and over the
same B tile (``%globaltimer`` ns; the quantiles, and the share within 125 / 250 / 500 ns), the
same between CTAs on one SM (``clock64`` cycles, exact), and the timer's granularity.
"""

from __future__ import annotations

import json
import statistics
import sys
from math import nan
from pathlib import Path

from . import timing as T
from .launch_cost import Driver, folder_bench_exit, take_flag
from .sm_blocker import Spinners
from .v5_parts import kernel_args, one_tile_operands

WITHIN_NS = (125, 250, 500)
"""~250, ~500 and ~1,000 cycles at 1.8-2 GHz: l2_stagger's readers shared fully 250 cycles apart
and hardly at all 1,000 apart."""


def nearest_gaps(times: list[list[int]], groups: list[int]) -> list[int]:
    """For every (CTA, iteration): the gap to the nearest other CTA of the same group at the same
    iteration (none for a CTA alone in its group)."""
    by: dict[tuple[int, int], list[int]] = {}
    for c, row in enumerate(times):
        for k, t in enumerate(row):
            by.setdefault((groups[c], k), []).append(t)
    gaps = []
    for ts in by.values():
        ts.sort()
        for i, t in enumerate(ts):
            near = [abs(t - ts[j]) for j in (i - 1, i + 1) if 0 <= j < len(ts)]
            if near:
                gaps.append(min(near))
    return gaps


def summary(gaps: list[int]) -> dict:
    """:func:`summary_of` less the minimum, and the share of gaps within each of :data:`WITHIN_NS`."""
    if not gaps:
        return {}
    return {**{k: v for k, v in summary_of(gaps).items() if k != "min"},
            **{f"within_{w}": sum(g <= w for g in gaps) / len(gaps) for w in WITHIN_NS}}


FORCED_SMEM = {1: 200 * 1024, 2: 100 * 1024, 3: 68 * 1024}
"""Dynamic shared memory that leaves room for at most 1, 2 or 3 CTAs an SM (228 KiB an SM, 1 KiB
reserved a CTA): the stamped kernel is run at each of these above its own need, and at its own, so
a config's k-iteration can be read at several CTAs an SM with the same grid and the same reads."""


def stamped_run(torch, drv: Driver, folder: Path, name: str, c: dict, smem: int, operands, reps: int) -> dict:
    """Launch ``name``'s stamped kernel with ``smem`` bytes of dynamic shared memory; its times and
    the stamps of its last launch, summarized."""
    its, grid, m_tiles = c["k_iters"], c["grid"], c["m_tiles"]
    fn, t, err, timeouts = timed_variant(torch, drv, folder, name, "c1", c, grid, smem, operands, reps)
    ns = drv.read_int64s(fn, "protosim_drift_ns")
    clk = drv.read_int64s(fn, "protosim_drift_clock")
    sm = drv.read_int64s(fn, "protosim_drift_sm")[:grid]
    ns_rows = [ns[b * its:(b + 1) * its] for b in range(grid)]
    clk_rows = [clk[b * its:(b + 1) * its] for b in range(grid)]
    return {"smem": smem, "kernel_ms": t, "max_abs_error": err, "diag_timeouts": timeouts,
            "a_tile_gap_ns": summary(nearest_gaps(ns_rows, [b % m_tiles for b in range(grid)])),
            "b_tile_gap_ns": summary(nearest_gaps(ns_rows, [b // m_tiles for b in range(grid)])),
            "same_sm_gap_cycles": summary(nearest_gaps(clk_rows, sm)),
            "iteration_ns_median": statistics.median(b - a for r in ns_rows for a, b in zip(r, r[1:])) if its > 1 else None,
            "iteration_cycles_median": statistics.median(b - a for r in clk_rows for a, b in zip(r, r[1:])) if its > 1 else None,
            "ctas_on_busiest_sm": max(sm.count(s_) for s_ in set(sm)),
            # the SM clock over each CTA's k-loop: clock64 cycles per ns of %globaltimer
            "loop_clock_ghz": summary_of([(c_[-1] - c_[0]) / (n_[-1] - n_[0]) for n_, c_ in zip(ns_rows, clk_rows)
                                          if its > 1 and n_[-1] > n_[0]])}


def timed_variant(torch, drv: Driver, folder: Path, name: str, variant: str, c: dict, grid: int, smem: int,
                  operands, reps: int):
    """Launch ``name``'s ``variant`` cubin (``c0`` as built, ``c1`` stamped) ``reps`` times after D's
    NaN fill: (its function, for the stamps; the kernel time; the largest error of D against fp32;
    the kernel's diag timeouts)."""
    A, B, D, diag, maps, ref = operands
    stream = torch.cuda.current_stream().cuda_stream
    fn = drv.function((folder / f"{name}_{variant}.sm_90a.cubin").read_bytes(), "kernel_kernel", smem)
    D.fill_(float("nan"))
    diag.zero_()
    t = T.kernel_time(torch, drv.launcher(fn, grid, c["threads"], smem, stream, kernel_args(maps, diag)), reps=reps, warmup=2)
    torch.cuda.synchronize()
    err = float((D.float() - ref).abs().max().item())
    return fn, t, err if err == err else "nan", int(diag[0].item())


def measure(torch, folder: Path, reps: int) -> list[dict]:
    drv = Driver()
    manifest = json.loads((folder / "cta_drift.json").read_text())
    rows = []
    for name, c in manifest.items():
        m, n, k, bn, grid = c["M"], c["N"], c["K"], c["BLK_N"], c["grid"]
        operands = one_tile_operands(torch, drv, m, n, k, bn)
        A, B, D, diag, maps, ref = operands
        _, t, err, timeouts = timed_variant(torch, drv, folder, name, "c0", c, grid, c["smem"], operands, reps)
        row = {"step": c["step"], "config": {"M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": c["PIPE_DEPTH"]},
               "grid": grid, "threads": c["threads"], "smem": c["smem"], "k_iters": c["k_iters"],
               "kernel_ms_c0": t, "max_abs_error_c0": err, "diag_timeouts_c0": timeouts, "stamped": []}
        for smem in [c["smem"]] + [s_ for _, s_ in sorted(FORCED_SMEM.items(), reverse=True) if s_ > c["smem"]]:
            r = stamped_run(torch, drv, folder, name, c, smem, operands, reps)
            row["stamped"].append(r)
            a, b = r["a_tile_gap_ns"], r["b_tile_gap_ns"]
            print(f"{name} smem {smem // 1024:>3} KiB ({r['ctas_on_busiest_sm']:>2} CTAs on the busiest SM): "
                  f"{t['median'] * 1e3 if smem == c['smem'] else float('nan'):.1f} us as built, stamped "
                  f"{r['kernel_ms']['median'] * 1e3:.1f} us; iteration {r['iteration_ns_median']} ns "
                  f"{r['iteration_cycles_median']} cycles; nearest co-reader A p50/p90 {a.get('p50', nan):.0f}/{a.get('p90', nan):.0f} ns "
                  f"(within 125 ns {a.get('within_125', nan):.2f}), B p50 {b.get('p50', nan):.0f} ns; SM clock over the k-loops p50 "
                  f"{r['loop_clock_ghz'].get('p50', 0):.3f} GHz; max |err| {r['max_abs_error']:.3g}",
                  flush=True)
        rows.append(row)
        del operands, A, B, D, diag
    return rows


BLOCKED_GRID = 132
"""--blocked: the first 132 CTAs of each grid (its first tiles), run on all 132 SMs, or on the SMs
that :data:`BLOCKERS` spinning CTAs of kernels/microbench/sm_blocker.cu leave free."""
BLOCKERS = (0, 66, 99)


def measure_blocked(torch, folder: Path, reps: int, warm_inputs: bool = False) -> list[dict]:
    """Each config's first :data:`BLOCKED_GRID` CTAs with 0, 66 or 99 SMs held by spinning CTAs on
    another stream: the same CTAs at 1, 2 or 4+ CTAs an SM while the chip's L2 traffic stays that of
    132 CTAs -- whether the k-iteration's growth with co-resident CTAs is the SM's or the chip's.

    Each launch follows a NaN fill of all of D (the check that the covered tiles were written): at
    4096 x 4096 that is 32 MB written just before the grid reads A and B.  ``warm_inputs`` reads A
    and B after the fill (a sum of each), so that they are the L2's most recent lines at launch.
    Each row also has the median k-iteration by iteration (``iteration_cycles_by_k``: the gap from
    the top of iteration k to the top of k + 1, median over CTAs, then over launches)."""
    drv = Driver()
    manifest = json.loads((folder / "cta_drift.json").read_text())
    spin = Spinners(torch, drv, folder, max(BLOCKERS))
    rows = []
    for name, c in manifest.items():
        m, n, k, bn, its = c["M"], c["N"], c["K"], c["BLK_N"], c["k_iters"]
        grid = min(BLOCKED_GRID, c["grid"])
        A, B, D, diag, maps, ref = one_tile_operands(torch, drv, m, n, k, bn)
        fn = drv.function((folder / f"{name}_c1.sm_90a.cubin").read_bytes(), "kernel_kernel", c["smem"])
        gemm = drv.launcher(fn, grid, c["threads"], c["smem"], spin.stream.cuda_stream, kernel_args(maps, diag))
        covered = [(b % c["m_tiles"], b // c["m_tiles"]) for b in range(grid)]
        for nblock in BLOCKERS:
            iters, by_k, overlap, sms = [], [], 0, set()
            for _ in range(reps):
                D.fill_(float("nan"))
                if warm_inputs:
                    A.sum(), B.sum()
                spin.run(gemm, nblock)
                clk = drv.read_int64s(fn, "protosim_drift_clock")
                sm = drv.read_int64s(fn, "protosim_drift_sm")[:grid]
                rows_ = [clk[cta * its:(cta + 1) * its] for cta in range(grid)]
                iters.append(statistics.median(b - a for r in rows_ for a, b in zip(r, r[1:])))
                by_k.append([statistics.median(r[k + 1] - r[k] for r in rows_) for k in range(its - 1)])
                overlap += len(spin.held_sms(nblock) & set(sm))
                sms |= set(sm)
            spun = spin.spinning()
            err = max(float((D[i * 128:(i + 1) * 128, j * bn:(j + 1) * bn].float()
                             - ref[i * 128:(i + 1) * 128, j * bn:(j + 1) * bn]).abs().max().item()) for i, j in covered)
            per_sm = grid / max(1, len(sms))
            row = {"step": c["step"], "config": {"M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": c["PIPE_DEPTH"]},
                   "mode": "blocked", "grid": grid, "blockers": nblock, "blockers_started": spun,
                   "gemm_sms": len(sms), "ctas_per_sm": per_sm, "sms_shared_with_blockers": overlap, "reps": reps,
                   "iteration_cycles_median": statistics.median(iters), "iteration_cycles": iters,
                   "iteration_cycles_by_k": [statistics.median(launch[k] for launch in by_k) for k in range(its - 1)],
                   "warm_inputs": warm_inputs, "max_abs_error_covered": err if err == err else "nan"}
            rows.append(row)
            print(f"{name} first {grid} CTAs, {nblock:>2} SMs held ({spun} spinning): on {len(sms)} SMs "
                  f"({per_sm:.1f} CTAs an SM), k-iteration {row['iteration_cycles_median']:.0f} cycles "
                  f"(range {min(iters):.0f}-{max(iters):.0f}); SMs shared with the spinners {overlap}; "
                  f"max |err| {err:.3g}", flush=True)
        del A, B, D, diag
    return rows


def measure_segments(torch, folder: Path, reps: int) -> list[dict]:
    """v5's first 132 CTAs on 132, 66 or 33 SMs (as --blocked) with thread 0's clock64 at five points
    of every k-iteration (``_c2``, kernels/microbench/cta_drift.py SEGMENTS): which part of the
    iteration grows with the CTAs sharing an SM."""
    from kernels.microbench.cta_drift import SEGMENTS

    drv = Driver()
    manifest = json.loads((folder / "cta_drift.json").read_text())
    spin = Spinners(torch, drv, folder, max(BLOCKERS))
    parts = ("stage wait", "block", "round trip", "TMA issue", "to the next top")
    rows = []
    for name, c in manifest.items():
        cubin = folder / f"{name}_c2.sm_90a.cubin"
        if not cubin.is_file():
            continue
        m, n, k, bn, its = c["M"], c["N"], c["K"], c["BLK_N"], c["k_iters"]
        grid = min(BLOCKED_GRID, c["grid"])
        A, B, D, diag, maps, ref = one_tile_operands(torch, drv, m, n, k, bn)
        fn = drv.function(cubin.read_bytes(), "kernel_kernel", c["smem"])
        gemm = drv.launcher(fn, grid, c["threads"], c["smem"], spin.stream.cuda_stream, kernel_args(maps, diag))
        for nblock in BLOCKERS:
            per_rep = []
            for _ in range(reps):
                spin.run(gemm, nblock)
                st = drv.read_int64s(fn, "protosim_segments")
                ns = len(SEGMENTS)
                spans: list[list[int]] = [[] for _ in parts]
                for cta in range(grid):
                    for kk in range(1, its - 2):  # the last two iterations issue no load
                        at = st[(cta * its + kk) * ns:(cta * its + kk + 1) * ns]
                        nxt = st[(cta * its + kk + 1) * ns]
                        for j, d in enumerate((at[1] - at[0], at[2] - at[1], at[3] - at[2], at[4] - at[3], nxt - at[4])):
                            spans[j].append(d)
                per_rep.append([statistics.median(x) for x in spans])
            med = [statistics.median(r[j] for r in per_rep) for j in range(len(parts))]
            row = {"step": c["step"], "config": {"M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": c["PIPE_DEPTH"]},
                   "mode": "segments", "grid": grid, "blockers": nblock, "blockers_started": spin.spinning(),
                   "ctas_per_sm": grid / (132 - nblock), "reps": reps,
                   "segment_cycles_median": dict(zip(parts, med)), "iteration_cycles": sum(med)}
            rows.append(row)
            print(f"{name} {grid} CTAs on {132 - nblock} SMs: " + ", ".join(f"{p_} {v:.0f}" for p_, v in zip(parts, med))
                  + f" (sum {sum(med):.0f})", flush=True)
        del A, B, D, diag
    return rows


def summary_of(values: list[float]) -> dict:
    """n, p10 / p50 / p90, min and max of ``values`` ({} for none)."""
    if not values:
        return {}
    q = statistics.quantiles(values, n=10, method="inclusive") if len(values) > 1 else [values[0]] * 9
    return {"n": len(values), "p10": q[0], "p50": q[4], "p90": q[8], "min": min(values), "max": max(values)}


def tile_gaps(ns: list[int], tiles_of: list[int], ctas: int, tiles: int, k_iters: int, which: int) -> list[int]:
    """For every (CTA, tile of its walk, k) stamped: the gap to the nearest read of the same A
    (``which`` 0: the tile's M index) or B (1: its N index) tile at the same k by another CTA.
    Unstamped slots (a CTA that walked fewer tiles) are zero and left out."""
    by: dict[tuple[int, int], list[int]] = {}
    for c in range(ctas):
        for j in range(tiles):
            slot = c * tiles + j
            row = ns[slot * k_iters:(slot + 1) * k_iters]
            if not row or row[0] == 0:
                continue
            for k, t in enumerate(row):
                by.setdefault((tiles_of[2 * slot + which], k), []).append((t, c))
    gaps = []
    for reads in by.values():
        for t, c in reads:  # a few readers a tile: the nearest read by another CTA, by a scan
            near = [abs(t - u) for u, d in reads if d != c]
            if near:
                gaps.append(min(near))
    return gaps


def measure_tiles(torch, folder: Path, reps: int) -> list[dict]:
    """--tiles: the persistent configs of the folder (``--set persistent``) at their own grid: the
    kernel time as built and stamped, and for each reader of an A or B tile at a k the gap in ns to
    the nearest other CTA reading the same tile at the same k (every tile a CTA walks)."""
    drv = Driver()
    manifest = json.loads((folder / "cta_drift.json").read_text())
    rows = []
    for name, c in manifest.items():
        if not c.get("persistent"):
            continue
        m, n, k, bn, grid, its, tiles = c["M"], c["N"], c["K"], c["BLK_N"], c["grid"], c["k_iters"], c["tiles_per_cta"]
        operands = one_tile_operands(torch, drv, m, n, k, bn)
        row = {"step": c["step"], "config": {"M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": c["PIPE_DEPTH"]},
               "mode": "tiles", "grid": grid, "tiles_per_cta": tiles, "k_iters": its}
        for variant in ("c0", "c1"):
            fn, t, err, timeouts = timed_variant(torch, drv, folder, name, variant, c, grid, c["smem"], operands, reps)
            row[f"kernel_ms_{variant}"], row[f"max_abs_error_{variant}"], row[f"diag_timeouts_{variant}"] = t, err, timeouts
        ns = drv.read_int64s(fn, "protosim_drift_ns")
        tile_ids = drv.read_int64s(fn, "protosim_drift_tile")
        row["sm_of_cta"] = drv.read_int64s(fn, "protosim_drift_sm")[:grid]
        row["a_tile_gap_ns"] = summary(tile_gaps(ns, tile_ids, grid, tiles, its, 0))
        row["b_tile_gap_ns"] = summary(tile_gaps(ns, tile_ids, grid, tiles, its, 1))
        clk = drv.read_int64s(fn, "protosim_drift_clock")
        walks = [[ns[(cta * tiles + j) * its] for j in range(tiles)] for cta in range(grid)]
        ticks = [[clk[(cta * tiles + j) * its] for j in range(tiles)] for cta in range(grid)]
        # the SM clock over each CTA's walk and over each tile (clock64 cycles per ns of %globaltimer):
        # a clock switch counts no cycle, so time spent switching shows as a lower rate than either clock
        row["walk_clock_ghz"] = summary_of([(t[-1] - t[0]) / (w[-1] - w[0]) for w, t in zip(walks, ticks)
                                            if len(w) > 1 and w[-1] and w[0] and w[-1] > w[0]])
        row["tile_clock_ghz"] = summary_of([(t[j + 1] - t[j]) / (w[j + 1] - w[j]) for w, t in zip(walks, ticks)
                                            for j in range(len(w) - 1) if w[j] and w[j + 1] and w[j + 1] > w[j]])
        row["first_tile_start_spread_ns"] = max(w[0] for w in walks) - min(w[0] for w in walks)
        row["tile_ns_median"] = statistics.median(b - a for w in walks for a, b in zip(w, w[1:]) if a and b) if tiles > 1 else None
        a, b = row["a_tile_gap_ns"], row["b_tile_gap_ns"]
        g = row["walk_clock_ghz"]
        print(f"{name}: SM clock over the walk {g.get('p10', 0):.3f} / {g.get('p50', 0):.3f} / {g.get('p90', 0):.3f} GHz (p10/p50/p90)", flush=True)
        print(f"{name}: {row['kernel_ms_c0']['median'] * 1e3:.1f} us as built, {row['kernel_ms_c1']['median'] * 1e3:.1f} stamped; "
              f"A co-readers p50/p90 {a.get('p50', nan):.0f}/{a.get('p90', nan):.0f} ns (within 125 / 500 ns {a.get('within_125', nan):.2f} / "
              f"{a.get('within_500', nan):.2f}); B p50 {b.get('p50', nan):.0f} ns (within 125 {b.get('within_125', nan):.2f}); a tile every "
              f"{row['tile_ns_median']} ns; max |err| {row['max_abs_error_c1']:.3g}", flush=True)
        rows.append(row)
        del operands
    return rows


def main(argv: list[str] | None = None) -> int:
    per_tile, argv = take_flag(argv, "--tiles")
    if per_tile:
        return folder_bench_exit("cta_drift", __doc__, argv, measure_tiles, 10, "JSON lines, one per persistent config")
    segments, argv = take_flag(argv, "--segments")
    if segments:
        return folder_bench_exit("cta_drift", __doc__, argv, measure_segments, 5, "JSON lines, one per (config, SMs held)")
    blocked, argv = take_flag(argv, "--blocked")
    warm, argv = take_flag(argv, "--warm-inputs")
    if blocked:
        return folder_bench_exit("cta_drift", __doc__, argv, lambda torch, folder, reps: measure_blocked(torch, folder, reps, warm),
                                 5, "JSON lines, one per (config, SMs held)")
    return folder_bench_exit("cta_drift", __doc__, argv, measure, 10, "JSON lines, one per config")


if __name__ == "__main__":
    sys.exit(main())
