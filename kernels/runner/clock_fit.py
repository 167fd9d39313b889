"""The loaded tensor clock's two constants, fitted from ``cta_drift`` k-loop clocks (CPU only).

``kernels/runner/cta_drift.py`` (default mode) ran v4 / v5 grids whole at their own occupancy and at
forced fewer CTAs an SM (dynamic shared memory padded), and recorded for every stamped launch the
SM clock over each CTA's k-loop (``loop_clock_ghz``: clock64 cycles per %globaltimer ns, median over
CTAs).  This replays each launch's grid at the same CTAs an SM (inputs in L2, as the runner's
repeated launches leave them) and takes the model's wgmma work rate ``x = FLOPs / cycles / 1e3``
(TFLOP/s per GHz); the rule of :func:`protosim.clock.loaded_tensor_clock_ghz`,
``f = a - b * x * f``, is linear in ``(a, b)`` given the measured ``f``, and is fitted by least
absolute deviations over every row: grids whose CTAs idle in step on the whole chip (the clock
switch rule's, 1.65-1.72 GHz) weigh as one outlier each, not as a square.
Prints each row's measured clock beside the rule's, and ``a``, ``b``; beside them, from the same
replays, each launch's k-iteration on silicon and in the model (the pooled median gap between loop
tops, as :mod:`kernels.runner.cta_drift_replay` reads them).  Run:

    python -m kernels.runner.clock_fit results/silicon/microbench/2026-12-04_h200_899c253_cta_drift_clock.jsonl \\
        results/silicon/microbench/2026-12-04_h200_899c253_cta_drift_msweep_clock.jsonl \\
        results/silicon/microbench/2026-12-04_h200_193a2dc_cta_drift_sm_counts.jsonl
"""

from __future__ import annotations

import dataclasses
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np


@dataclasses.dataclass(frozen=True)
class LaunchRow:
    """One stamped launch of a cta_drift record: the grid and the CTAs an SM it ran at (what the
    model replays), and what silicon read: the k-loop clock and the k-iteration in cycles."""

    step: str
    config: tuple[tuple[str, int], ...]
    grid: int
    ctas_per_sm: int
    loop_clock_ghz: float = dataclasses.field(compare=False)
    iteration_cycles: float = dataclasses.field(compare=False)

    @property
    def label(self) -> str:
        c = dict(self.config)
        return f"{self.step} {c['M']}x{c['N']}x{c['K']} n{c['BLK_N']}"


def ctas_per_sm(arch, threads: int, smem: int, grid: int) -> int:
    """CTAs an SM holds at once: what ``threads`` threads and ``smem`` bytes of shared memory let
    fit (as :meth:`protosim.engine.machine.Machine.occupancy`, with the launch's own shared
    memory), and no more than the grid gives each SM."""
    fit = min(arch.max_ctas_per_sm, arch.max_threads_per_sm // threads,
              arch.smem_per_sm_bytes // (smem + arch.smem_reserved_per_cta_bytes))
    return min(fit, -(-grid // arch.sm_count))


def launch_rows(records: list[dict], arch) -> list[LaunchRow]:
    """Every stamped launch with a k-loop clock in ``records`` (cta_drift default-mode rows)."""
    rows = []
    for r in records:
        if r.get("kind") != "cta_drift" or r.get("mode") not in (None, "default"):
            continue
        for s in r.get("stamped", []):
            clock = (s.get("loop_clock_ghz") or {}).get("p50")
            if clock is None:
                continue
            rows.append(LaunchRow(r["step"], tuple(sorted(r["config"].items())), r["grid"],
                                  ctas_per_sm(arch, r["threads"], s["smem"], r["grid"]), clock,
                                  s.get("iteration_cycles_median", float("nan"))))
    return rows


def replay_launch(row: LaunchRow) -> tuple[float, float, float]:
    """The model's replay of ``row``'s grid at its CTAs an SM: (cycles, wgmma FLOPs, k-iteration)."""
    from kernels.runner.cta_drift_replay import k_iteration, replay_grid

    result = replay_grid(row.step, dict(row.config), row.grid, max_ctas_per_sm=row.ctas_per_sm)
    return result.end_cycle, result.stats.tensor_flops, k_iteration(result)[0]


def fit_least_absolute(x: np.ndarray, clock: np.ndarray, rounds: int = 200) -> tuple[float, float]:
    """``(a, b)`` minimising the sum of ``|a - b * x * clock - clock|`` (iteratively reweighted
    least squares): the rule solved for ``f`` is ``a / (1 + b * x)``."""
    design = np.c_[np.ones(len(x)), -x * clock]
    weights = np.ones(len(x))
    coef = np.zeros(2)
    for _ in range(rounds):
        coef = np.linalg.lstsq(design * weights[:, None], clock * weights, rcond=None)[0]
        weights = 1.0 / np.sqrt(np.maximum(np.abs(design @ coef - clock), 1e-6))
    return float(coef[0]), float(coef[1])


def main(argv: list[str] | None = None) -> int:
    import argparse

    from protosim.arch import load_profile

    ap = argparse.ArgumentParser(prog="python -m kernels.runner.clock_fit", description=__doc__.split("\n\n")[0],
                                 epilog="Each distinct launch is replayed once (minutes on 2 cores).")
    ap.add_argument("records", type=Path, nargs="+", help="cta_drift JSON-lines records with loop_clock_ghz")
    ap.add_argument("--workers", type=int, default=2, help="replay processes (default 2)")
    ap.add_argument("--json", type=Path, help="write the rows and the fit here")
    args = ap.parse_args(argv)
    records = []
    for path in args.records:
        try:
            records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except (OSError, ValueError) as exc:
            print(f"clock_fit: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    rows = launch_rows(records, load_profile("h200"))
    if len(rows) < 3:
        print("clock_fit: fewer than three stamped launches with a loop clock: nothing to fit", file=sys.stderr)
        return 2
    distinct = sorted(set(rows), key=lambda r: (r.label, r.ctas_per_sm))  # equal: the same replay
    print(f"clock_fit: {len(rows)} launches, {len(distinct)} replays", file=sys.stderr, flush=True)
    with ProcessPoolExecutor(max(1, args.workers)) as pool:
        replayed = dict(zip(distinct, pool.map(replay_launch, distinct)))
    x = np.array([replayed[r][1] / replayed[r][0] / 1e3 for r in rows])
    iteration = [replayed[r][2] for r in rows]
    clock = np.array([r.loop_clock_ghz for r in rows])
    a, b = fit_least_absolute(x, clock)
    rule = a / (1 + b * x)
    print(f"{'grid':28s} {'CTAs':>5s} {'an SM':>5s} {'TFLOP/s':>8s} {'silicon':>8s} {'rule':>6s}   k-iteration: silicon / model")
    for r, xi, fi, it in zip(rows, x, rule, iteration):
        print(f"{r.label:28s} {r.grid:5d} {r.ctas_per_sm:5d} {xi * fi:8.1f} {r.loop_clock_ghz:8.3f} {fi:6.3f}"
              f"   {r.iteration_cycles:6.0f} / {it:6.0f} ({100 * (it / r.iteration_cycles - 1):+5.1f}%)")
    err = rule - clock
    print(f"fit: a = {a:.4f} GHz, b = {b:.3e} GHz per TFLOP/s; |error| median {np.median(abs(err)):.4f}, "
          f"rms {np.sqrt(np.mean(err ** 2)):.4f} GHz (a constant: rms {clock.std():.4f}) over {len(rows)} launches")
    if args.json:
        args.json.write_text(json.dumps({"a_ghz": a, "b_ghz_per_tflops": b, "rows": [
            {**dataclasses.asdict(r), "config": dict(r.config), "model_x": xi, "rule_ghz": fi, "model_iteration_cycles": it}
            for r, xi, fi, it in zip(rows, x.tolist(), rule.tolist(), iteration)]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
