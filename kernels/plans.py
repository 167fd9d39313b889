"""Named batches of silicon runs: which kernels to build and how to launch each.

A plan is data (a list of :class:`Job`): the builder compiles the distinct
kernels it names, the GPU runner executes its launches.  Expectations are *not*
part of a plan -- what a run should show is the simulator's business (issue #4);
a plan only says what to run.  ``may_fault`` only decides whether a launch gets
its own process (a fault poisons the CUDA context for the rest of the process,
DEVICE.md), so guessing it wrong costs time, never a wrong record.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from protosim.config import L2_AT_LAUNCH, ConfigError, GemmConfig

from .spec import KernelSpec

NO_DELAY = {"producer_delay_ns": 0, "consumer_delay_ns": 0, "lag_warp": 1, "lag_ns": 0}
# ~20 us before each TMA issue made a phase bug's early return deterministic on the H200 (DEVICE.md).
PRODUCER_DELAY = {**NO_DELAY, "producer_delay_ns": 20_000}
CONSUMER_DELAY = {**NO_DELAY, "consumer_delay_ns": 20_000}
LAG_DELAY = {**NO_DELAY, "lag_warp": 1, "lag_ns": 20_000}


@dataclass(frozen=True)
class Job:
    """Run ``spec`` ``launches`` times with ``delays``; ``kind`` is ``outcome`` or ``bench``.
    ``l2_at_launch``: ``inputs`` launches right after writing the inputs (they start in
    L2 where they fit); ``cold`` evicts L2 first (``GemmConfig.l2_at_launch``)."""

    spec: KernelSpec
    delays: dict = field(default_factory=lambda: dict(NO_DELAY))
    launches: int = 3
    kind: str = "outcome"
    may_fault: bool = False
    l2_at_launch: str = "inputs"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["spec"] = self.spec.to_dict()  # the binary's config: launch conditions are the job's
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Job:
        """A job from its ``to_dict`` form; only ``spec.step`` and ``spec.config`` are required."""
        s = d["spec"]
        spec = KernelSpec(s["step"], GemmConfig.from_dict(s["config"]), s.get("trace", False))
        unknown = set(d.get("delays", {})) - set(NO_DELAY)
        if unknown:
            raise ConfigError("delays", f"unknown delay knob(s) {sorted(unknown)}; known: {', '.join(NO_DELAY)}")
        l2 = d.get("l2_at_launch", "inputs")
        if l2 not in L2_AT_LAUNCH:
            raise ConfigError("l2_at_launch", f"{l2!r}; use {' or '.join(map(repr, L2_AT_LAUNCH))}")
        return cls(spec, {**NO_DELAY, **d.get("delays", {})}, d.get("launches", 3), d.get("kind", "outcome"), d.get("may_fault", False), l2)


def load_plan_file(path) -> list[Job]:
    """A JSON list of jobs (``Job.to_dict`` form): what ``--plan-file`` reads.  Errors name
    the entry and the field."""
    import json
    from pathlib import Path

    try:
        entries = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError("plan-file", f"{path}: {exc}") from exc
    if not isinstance(entries, list):
        raise ConfigError("plan-file", f"{path}: expected a JSON list of jobs")
    jobs = []
    for i, entry in enumerate(entries):
        try:
            job = Job.from_dict(entry)
            from .spec import check

            check(job.spec.step, job.spec.config)
        except ConfigError as exc:
            raise ConfigError(f"plan-file[{i}].{exc.field}", exc.message) from exc
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"plan-file[{i}]", f"expected {{'spec': {{'step': ..., 'config': {{...}}}}, ...}}; missing {exc}") from exc
        jobs.append(job)
    return jobs


def _cfg(**kw) -> GemmConfig:
    return GemmConfig(arch="h200", **kw)


# Shapes: small enough that a timeout costs little, large enough that every CTA of
# a persistent grid gets several tiles (2048^2 = 256 tiles on 132 CTAs).
ONE_TILE = dict(M=128, N=128, K=1024)
GRID = dict(M=1024, N=1024, K=1024)
PERSIST_EVEN = dict(M=2048, N=2048, K=1024)   # K_TILES = 16: every barrier used an even number of times per tile
PERSIST_ODD = dict(M=2048, N=2048, K=1088)    # K_TILES = 17: odd
BIG = dict(M=4096, N=4096, K=4096)


def correct_jobs() -> list[Job]:
    specs = [
        KernelSpec("v2", _cfg(**ONE_TILE)),
        KernelSpec("v3", _cfg(**GRID)),
        KernelSpec("v4", _cfg(**GRID)),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2)),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=4)),
        KernelSpec("v6", _cfg(**PERSIST_EVEN, PIPE_DEPTH=2)),
        KernelSpec("v6", _cfg(**PERSIST_ODD, PIPE_DEPTH=2)),            # carried phases: odd K is fine
        KernelSpec("v6", _cfg(**PERSIST_EVEN, PIPE_DEPTH=2, reset_phase_per_tile=True)),  # the seed, precondition holds
        KernelSpec("ws", _cfg(**PERSIST_EVEN, PIPE_DEPTH=4)),
        KernelSpec("ws", _cfg(**PERSIST_ODD, PIPE_DEPTH=4)),
    ]
    jobs = []
    for spec in specs:
        jobs.append(Job(spec, NO_DELAY))
        jobs.append(Job(spec, PRODUCER_DELAY))
        jobs.append(Job(spec, CONSUMER_DELAY))
    return jobs + lag_jobs()


def lag_jobs() -> list[Job]:
    """One warp of the MMA warpgroup sleeps before each of its barrier waits."""
    specs = [
        KernelSpec("v4", _cfg(**GRID)),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2)),
        KernelSpec("v6", _cfg(**PERSIST_EVEN, PIPE_DEPTH=2)),
        KernelSpec("v6", _cfg(**PERSIST_EVEN, PIPE_DEPTH=2, reset_phase_per_tile=True)),
        KernelSpec("ws", _cfg(**PERSIST_EVEN, PIPE_DEPTH=4)),
    ]
    return [Job(spec, LAG_DELAY) for spec in specs]


def store_race_jobs() -> list[Job]:
    """skip_store_wait where the race has a chance: one k-tile per output tile, so
    the next epilogue rewrites Dsmem ~a thousand cycles after the store was issued."""
    spec = KernelSpec("v6", _cfg(M=2048, N=2048, K=64, PIPE_DEPTH=1, skip_store_wait=True))
    return [Job(spec, NO_DELAY, launches=5), Job(spec, CONSUMER_DELAY, launches=3)]


def bug_jobs() -> list[Job]:
    bugs = [
        KernelSpec("v2", _cfg(**ONE_TILE, skip_mma_phase_flip=True)),
        KernelSpec("v4", _cfg(**GRID, skip_mma_phase_flip=True)),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2, skip_mma_phase_flip=True)),
        KernelSpec("v6", _cfg(**PERSIST_ODD, PIPE_DEPTH=2, reset_phase_per_tile=True)),   # the seed's K_TILES precondition broken
        KernelSpec("ws", _cfg(**PERSIST_ODD, PIPE_DEPTH=4, reset_phase_per_tile=True)),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2, tma_issuer="each_warp")),
        KernelSpec("v4", _cfg(**GRID, expect_tx_delta=1024)),
        KernelSpec("v4", _cfg(**GRID, expect_tx_delta=-1024)),
        KernelSpec("v4", _cfg(**GRID, wait_parity_flip="tma")),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2, wait_parity_flip="tma")),
        KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2, wait_parity_flip="mma")),
        KernelSpec("v6", _cfg(**PERSIST_EVEN, PIPE_DEPTH=2, skip_store_wait=True)),
        KernelSpec("ws", _cfg(**PERSIST_EVEN, PIPE_DEPTH=4, skip_mma_phase_flip=True)),
        KernelSpec("ws", _cfg(**PERSIST_EVEN, PIPE_DEPTH=4, wait_parity_flip="tma")),
        KernelSpec("ws", _cfg(**PERSIST_EVEN, PIPE_DEPTH=4, wait_parity_flip="mma")),
    ]
    jobs = []
    for spec in bugs:
        # Arrivals beyond the pending count and tx-counts out of range trap (DEVICE.md).
        fault = spec.config.tma_issuer == "each_warp" or spec.config.expect_tx_delta < 0
        jobs.append(Job(spec, NO_DELAY, may_fault=fault))
        jobs.append(Job(spec, PRODUCER_DELAY, may_fault=fault))
    return jobs + store_race_jobs()


def bench_jobs() -> list[Job]:
    return [Job(KernelSpec(step, _cfg(**BIG, PIPE_DEPTH=depth)), NO_DELAY, launches=1, kind="bench")
            for step, depth in (("v4", 1), ("v5", 2), ("v5", 4), ("v6", 2), ("v6", 4), ("ws", 4))]


def trace_jobs() -> list[Job]:
    """One launch of each step with CTA 0 traced (issue, land, wait return, MMA done)."""
    specs = [KernelSpec("v2", _cfg(**ONE_TILE), trace=True), KernelSpec("v4", _cfg(**GRID), trace=True),
             KernelSpec("v5", _cfg(**GRID, PIPE_DEPTH=2), trace=True),
             KernelSpec("v6", _cfg(**PERSIST_EVEN, PIPE_DEPTH=2), trace=True),
             KernelSpec("ws", _cfg(**PERSIST_EVEN, PIPE_DEPTH=4), trace=True)]
    return [Job(spec, NO_DELAY, launches=3) for spec in specs]


def _cl(cm: int, cn: int, **kw) -> GemmConfig:
    return _cfg(cluster_m=cm, cluster_n=cn, **kw)


def cluster_correct_jobs() -> list[Job]:
    """ws_cluster without bugs: 2x1 and 1x2 on three shapes (persistent with several tiles per
    cluster at even and odd K_TILES, and a grid with one tile per cluster), a producer delay on
    the persistent ones; 2x2, 4x1, 1x4 and the degenerate 1x1 once each."""
    jobs = []
    for cm, cn in ((2, 1), (1, 2)):
        for shape, delays in ((PERSIST_EVEN, (NO_DELAY, PRODUCER_DELAY)), (PERSIST_ODD, (NO_DELAY, CONSUMER_DELAY)),
                              (GRID, (NO_DELAY,))):
            spec = KernelSpec("ws_cluster", _cl(cm, cn, **shape, PIPE_DEPTH=4))
            jobs += [Job(spec, d) for d in delays]
    for cm, cn in ((2, 2), (4, 1), (1, 4), (1, 1)):
        jobs.append(Job(KernelSpec("ws_cluster", _cl(cm, cn, **PERSIST_EVEN, PIPE_DEPTH=4))))
    return jobs


def cluster_bug_jobs() -> list[Job]:
    """Each cluster knob on 2x1 and 1x2, and ws's knobs on 2x1 (3 launches each, no delay;
    the cluster knobs also with a producer delay)."""
    jobs = []
    for cm, cn in ((2, 1), (1, 2)):
        for knob in (dict(multicast_skip_rank=0), dict(multicast_skip_rank=1), dict(release_unscaled=True),
                     dict(expect_tx_local=True), dict(skip_exit_sync=True)):
            spec = KernelSpec("ws_cluster", _cl(cm, cn, **PERSIST_EVEN, PIPE_DEPTH=4, **knob))
            # a CTA leaving while its peer still arrives on it may trap: a process per launch (a fault
            # elsewhere is still recorded at its launch's synchronize, and a fresh child goes on)
            fault = "skip_exit_sync" in knob
            jobs += [Job(spec, NO_DELAY, may_fault=fault), Job(spec, PRODUCER_DELAY, may_fault=fault)]
    for knob, shape in ((dict(skip_mma_phase_flip=True), PERSIST_EVEN), (dict(wait_parity_flip="tma"), PERSIST_EVEN),
                        (dict(wait_parity_flip="mma"), PERSIST_EVEN), (dict(expect_tx_delta=1024), PERSIST_EVEN),
                        (dict(expect_tx_delta=-1024), PERSIST_EVEN), (dict(skip_store_wait=True), PERSIST_EVEN),
                        (dict(reset_phase_per_tile=True), PERSIST_ODD)):
        spec = KernelSpec("ws_cluster", _cl(2, 1, **shape, PIPE_DEPTH=4, **knob))
        # ws's phase bugs trapped on the H200 (a producer re-arming an unfinished phase)
        jobs.append(Job(spec, NO_DELAY, may_fault="reset_phase_per_tile" in knob or "skip_mma_phase_flip" in knob))
    return jobs


def cluster_bench_jobs() -> list[Job]:
    """4096^3: ws_cluster 2x1, 1x2, 2x2 beside ws (PIPE 4), each with torch.matmul in the same process."""
    specs = [KernelSpec("ws", _cfg(**BIG, PIPE_DEPTH=4))]
    specs += [KernelSpec("ws_cluster", _cl(cm, cn, **BIG, PIPE_DEPTH=4)) for cm, cn in ((2, 1), (1, 2), (2, 2))]
    return [Job(spec, NO_DELAY, launches=1, kind="bench") for spec in specs]


MAX_TILE_ITERATIONS = 32 * 32 * 64
"""Output tiles x k-tiles of 4096^3 with 128x128x64 tiles (~600k ops to replay, ~1 min on a
2-core VM): the timing plan draws nothing larger, so that predicting it stays cheap."""


def timing_jobs(seed: int = 16) -> list[Job]:
    """Issue 16's timing campaign: correct configs only, no delays, 2 launches each (every
    correct launch is then timed kernel-only).  Drawn with a seeded generator from a grid
    stratified by step -- v2 one tile; v3/v4/v5 from one CTA to 4096^2 tiles; v6 and ws also
    persistent on 8, 33, 66 or all 132 SMs -- over K 256-4096, BLK_N 16-128, 1-4 stages, a
    few with L2 flushed, none larger than :data:`MAX_TILE_ITERATIONS`; plus the 4096^3 configs the issue names (v3, v4, v5, v6, ws).  Kernel
    times reach from ~10 us to ~2 ms.  The same seed draws the same plan."""
    import random

    from .spec import check

    rng = random.Random(seed)
    shapes = {"v2": [(128, 128)], "grid": [(128, 128), (256, 256), (512, 512), (1024, 1024), (2048, 2048), (4096, 4096)]}
    per_step = {"v2": 6, "v3": 12, "v4": 12, "v5": 14, "v6": 16, "ws": 16}
    jobs: list[Job] = []
    seen: set = set()

    def add(step: str, cfg: GemmConfig, l2: str = "inputs") -> bool:
        key = (step, cfg, l2)
        if key in seen:
            return False
        try:
            check(step, cfg)
        except ConfigError:
            return False
        seen.add(key)
        jobs.append(Job(KernelSpec(step, cfg), NO_DELAY, launches=2, l2_at_launch=l2))
        return True

    for step, depth in (("v3", 2), ("v4", 1), ("v5", 2), ("v5", 4), ("v6", 2), ("v6", 4), ("ws", 4)):
        add(step, _cfg(**BIG, PIPE_DEPTH=depth))
    for step, n in per_step.items():
        made = 0
        while made < n:
            M, N = rng.choice(shapes["v2" if step == "v2" else "grid"])
            kw = dict(M=M, N=N, K=rng.choice((256, 1024, 2048, 4096)), BLK_N=rng.choice((16, 32, 64, 128)),
                      PIPE_DEPTH=rng.choice((1, 2, 3, 4)) if step in ("v5", "v6", "ws") else 2)
            if step in ("v6", "ws"):
                kw["sm_count"] = rng.choice((8, 33, 66, 132))
            cfg = _cfg(**kw)
            if (M // cfg.BLK_M) * (N // cfg.BLK_N) * (kw["K"] // cfg.BLK_K) > MAX_TILE_ITERATIONS:
                continue
            made += add(step, cfg, "cold" if rng.random() < 0.15 else "inputs")
    return jobs


def fresh_timing_jobs(seed: int, records) -> list[Job]:
    """:func:`timing_jobs` of ``seed`` less every (step, config, L2 state) that one of the launch
    ``records`` (paths of ``kernels.runner.gemm`` JSON lines) already ran: a draw judged only on
    configs the model has not been compared with.  A record's ``flushed`` is a job's ``cold``
    (:func:`protosim.crosscheck.case_of` reads it)."""
    import json
    from pathlib import Path

    from protosim.crosscheck import case_of

    ran = set()
    for path in records:
        for line in Path(path).read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and "config" in r and "step" in r:
                try:
                    config = KernelSpec(r["step"], GemmConfig.from_dict(r["config"])).to_dict()["config"]
                    l2 = case_of(r).config.l2_at_launch  # the record's L2 state as a job names it
                except (ConfigError, TypeError, AttributeError):  # not a GEMM launch of ours: no job matches it
                    continue
                ran.add((r["step"], json.dumps(config, sort_keys=True), l2))
    return [j for j in timing_jobs(seed)
            if (j.spec.step, json.dumps(j.spec.to_dict()["config"], sort_keys=True), j.l2_at_launch) not in ran]


PLANS = {
    "smoke": lambda: [Job(KernelSpec("v4", _cfg(**GRID)), NO_DELAY, launches=1)],
    "correct": correct_jobs,
    "bugs": bug_jobs,
    "bench": bench_jobs,
    "trace": trace_jobs,
    "extra": lambda: lag_jobs() + store_race_jobs(),
    "v4-parity": lambda: [j for j in bug_jobs() if j.spec.step == "v4" and j.spec.config.wait_parity_flip == "tma"]
    + [Job(KernelSpec("v4", _cfg(**GRID, wait_parity_flip="tma")), CONSUMER_DELAY)],
    "silicon": lambda: correct_jobs() + trace_jobs() + bench_jobs() + bug_jobs(),
    "cluster": lambda: cluster_correct_jobs() + cluster_bench_jobs() + cluster_bug_jobs(),
    "timing": timing_jobs,
}


def main(argv: list[str] | None = None) -> int:
    """``python -m kernels.plans --fresh-timing SEED --out PLAN.json [RECORDS...]``: the next fresh
    timing draw as a plan file (default records: every results/silicon/timing/*.jsonl)."""
    import argparse
    import json
    import sys
    from collections import Counter
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="python -m kernels.plans", description=main.__doc__)
    ap.add_argument("--fresh-timing", type=int, required=True, metavar="SEED", help="the draw's seed (kernels.plans.timing_jobs)")
    ap.add_argument("--out", type=Path, required=True, help="where to write the plan (a JSON list of jobs: --plan-file)")
    ap.add_argument("records", nargs="*", type=Path, help="launch records whose configs are left out")
    args = ap.parse_args(argv)
    records = args.records or sorted((Path(__file__).resolve().parent.parent / "results" / "silicon" / "timing").glob("*.jsonl"))
    try:
        jobs = fresh_timing_jobs(args.fresh_timing, records)
    except OSError as e:
        ap.error(f"{e.filename}: {e.strerror}")
    drawn = len(timing_jobs(args.fresh_timing))
    try:
        args.out.write_text(json.dumps([j.to_dict() for j in jobs], indent=1) + "\n")
    except OSError as e:
        ap.error(f"--out {args.out}: {e.strerror}")
    steps = ", ".join(f"{k} {v}" for k, v in Counter(j.spec.step for j in jobs).most_common())
    print(f"seed {args.fresh_timing}: {drawn} drawn, {drawn - len(jobs)} already run, {len(jobs)} kept ({steps}) -> {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
