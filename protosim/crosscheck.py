"""Simulator verdicts against silicon: predict, observe, agree.

For a :class:`~protosim.strategies.Case` the simulator predicts the *set* of
outcomes a GPU may show (:func:`predict`: the nominal replay plus seeded timing
perturbations; for a config with explicit delays the perturbations also stretch
and shrink every ``nanosleep`` within PTX's [0, 2t], because the H200 does).  A
silicon launch record (``kernels.runner.gemm``'s JSON line) becomes an :class:`Observed`
in the simulator's words: a watchdog ``timeout`` is a ``deadlock``.  :func:`agree`
then decides, with the reason spelled out: the observed kind must be in the
predicted set; wrong tiles must be among the tiles some replay found wrong; a
timeout's barrier and role must be where some replay hung that CTA.

For delayed configs it also reports whether silicon matched the *nominal* replay
exactly (kind, tiles, barrier, role and k-tile): the issue asked for that, and the
H200's nanosleep showed why it cannot be the agreement rule (docs/crosscheck.md).

Where a prediction's schedule comes from (``source``): ``"kernel"`` -- read by the TIRx
frontend from the very kernel the H200 runs (``kernels.tirx.extracted``; needs apache-tvm
and the repository's ``kernels/``), what ``protosim crosscheck`` uses by default; or
``"builder"`` -- the hand-written builder, pinned to the kernel op for op by
``tests/test_builders_mirror_kernels.py``, no tvm needed and faster for large sweeps.

Apart from ``source="kernel"`` this module is pure (no GPU, no tvm, no torch): the CI
regression test and ``protosim crosscheck report`` both use it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protosim import hangs
from protosim.arch import load_profile
from protosim.builders import estimate_ops
from protosim.config import DELAY_KNOBS, LAUNCH_KNOBS, ConfigError, GemmConfig
from protosim.engine import explore_plan, race_plan
from protosim.ir import content_hash
from protosim.strategies import STEPS, Case
from protosim.verdict import judge

SILICON_KIND = {"correct": "correct", "wrong": "wrong", "timeout": "deadlock", "fault": "fault"}
"""Silicon outcome -> simulator outcome class (verdict.OUTCOMES)."""

SIM_STEP_OF_KERNEL = {"ws_cluster": "ws"}
"""Kernel steps the simulator models as another step: ``ws_cluster`` (kernels/tirx/hopper_cluster.py)
is ``ws`` with ``cluster_m x cluster_n > 1`` (its records read back as ws cases; :func:`job_for` maps back)."""


@dataclass(frozen=True)
class Site:
    """Where a protocol hung: the barrier kind, the role waiting and its running k-tile
    (counted over all tiles the CTA walked, as the kernel's ``diag`` counts it)."""

    barrier: str
    role: str
    k: int | None

    def __str__(self) -> str:
        return f"{self.barrier} ({self.role}) k{self.k}"


@dataclass(frozen=True)
class Observed:
    """One silicon launch in the simulator's terms."""

    kind: str
    tiles: tuple[tuple[int, int], ...] = ()
    site: Site | None = None
    cta: int | None = None
    detail: str = ""
    elapsed_ms: float | None = None
    """Events around the first call: the host path (tvm-ffi, tensor maps) included."""
    kernel_ms: float | None = None
    """Kernel-only median over repetitions (``kernels.runner.timing``); None in records
    written before the runner took it, or when it could not be taken."""
    traced: bool = False
    """The launch ran the traced build (a ``_trace`` job: every role writes timestamped rows),
    another binary than the kernel: its outcome counts, its time does not (:meth:`CaseReport.measured_ms`)."""


def kernel_only_ms(record: dict[str, Any]) -> float | None:
    """The record's kernel-only median time, if it has one."""
    k = record.get("kernel_ms")
    return k.get("median") if isinstance(k, dict) else None


def case_of(record: dict[str, Any]) -> Case:
    """The case a launch record ran: its step and config with its delays and L2 state
    applied.  ``kernels.runner.gemm`` has always written the inputs just before the launch, so a
    record says ``flushed`` only when the run evicted them (``--l2 flush``).  Where the build read
    the kernel's thread copy off its SASS (``copy_stream``, kernels.toolchain.build), the case's
    copy is that kernel's (:attr:`Case.copy_cycles`)."""
    l2 = "cold" if record.get("l2_at_launch") == "flushed" else "inputs"
    stream = record.get("copy_stream")
    cycles = stream.get("cycles") if isinstance(stream, dict) else None
    return Case(SIM_STEP_OF_KERNEL.get(record["step"], record["step"]),
                GemmConfig.from_dict({**record["config"], **record.get("delays", {}), "l2_at_launch": l2}),
                float(cycles) if isinstance(cycles, (int, float)) and cycles > 0 else None)


def is_traced(record: dict[str, Any]) -> bool:
    """Whether a launch record ran the traced build: ``kernels.runner.gemm`` names its job
    ``..._trace`` and writes the trace's summary into the record."""
    return "trace" in record or str(record.get("name", "")).endswith("_trace")


def observe(record: dict[str, Any]) -> Observed:
    kind = SILICON_KIND[record["outcome"]]
    if kind == "wrong":
        return Observed(kind, tiles=tuple(sorted((m, n) for m, n in record["wrong_tiles"])), elapsed_ms=record.get("elapsed_ms"),
                        kernel_ms=kernel_only_ms(record), traced=is_traced(record))
    if kind == "deadlock":
        t = record.get("timeout", {})
        if "barrier" not in t:  # the host killed a silent child: no kernel record of where
            return Observed(kind, detail=str(t.get("host", "host timeout")))
        return Observed(kind, site=Site(str(t["barrier"]), str(t["role"]), int(t["k"])), cta=int(t["cta"]),
                        detail=f"first timeout: CTA {t['cta']} thread {t['thread']}")
    if kind == "fault":
        return Observed(kind, detail=str(record.get("fault", "")))
    return Observed(kind, elapsed_ms=record.get("elapsed_ms"), kernel_ms=kernel_only_ms(record), traced=is_traced(record))


@dataclass
class Prediction:
    """The outcome set of one case, with what each class needs for matching."""

    case: Case
    delayed: bool
    """Has explicit delays: silicon is also compared with the nominal replay exactly."""
    runs: int
    nominal: str
    """The nominal replay's outcome summary."""
    kinds: set[str] = field(default_factory=set)
    tiles: set[tuple[int, int]] = field(default_factory=set)
    """Union of wrong tiles over the replays."""
    nominal_tiles: tuple[tuple[int, int], ...] = ()
    sites: dict[int, set[Site]] = field(default_factory=dict)
    """CTA -> the mbarrier waits it hung in, over the replays (:func:`hang_sites`)."""
    nominal_sites: dict[int, set[Site]] = field(default_factory=dict)
    finding_kinds: set[str] = field(default_factory=set)
    cycles: float = 0.0
    """Nominal replay length in cycles."""
    us: float = 0.0
    """The predicted kernel-only time: the cycles at the arch's clock plus the launch's fixed
    cost (:attr:`protosim.verdict.Timing.kernel_us`) -- what kernel-only measurements read."""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.to_dict(), "label": self.case.label(), "delayed": self.delayed, "runs": self.runs,
            "nominal": self.nominal, "kinds": sorted(self.kinds), "wrong_tiles": sorted(list(t) for t in self.tiles),
            "sites": {str(c): sorted(str(s) for s in ss) for c, ss in sorted(self.sites.items())},
            "finding_kinds": sorted(self.finding_kinds), "cycles": round(self.cycles), "us": round(self.us, 3),
            "seconds": round(self.seconds, 3),
        }


def hang_sites(result) -> dict[int, set[Site]]:
    """CTA -> every mbarrier wait a warp of it is stuck in, as the kernel names it
    (:func:`protosim.hangs.hang_sites`: barrier array, role, running k-tile).

    The kernel's ``diag`` names the first thread of the whole grid whose wait ran out
    of budget: whichever hung thread began waiting first, by tens of cycles -- a
    difference the model's timing does not resolve.  So a silicon site matches when
    it is *one of* the CTA's stuck waits, not necessarily its earliest."""
    sites: dict[int, set[Site]] = {}
    for h in hangs.hang_sites(result):
        sites.setdefault(h.cta, set()).add(Site(h.barrier, h.role, h.k))
    return sites


RACY_FACTOR = 4
"""A config whose nominal replay already reports protocol findings has outcomes that
hinge on races; it gets this many times the replays (a clean nominal rarely moves)."""


SOURCES = ("kernel", "builder")
"""Where a prediction's schedule comes from (the module docstring says which is which)."""


def schedule_of(case: Case, source: str = "builder"):
    """The schedule ``case`` is predicted from: the builder's, or the one the TIRx frontend
    reads from the kernel that runs on the H200 (``source="kernel"``)."""
    if source == "builder":
        return case.build()
    if source != "kernel":
        raise ValueError(f"source = {source!r}; use one of {', '.join(SOURCES)}")
    from kernels.tirx.extracted import extract_schedule  # needs apache-tvm and the repository's kernels/

    return case.with_compiled_copy(extract_schedule(case.step, case.config))


def predict(case: Case, runs: int = 8, seed: int = 0, max_stall: int = 2000, until=None,
            source: str = "builder") -> Prediction:
    """Replay ``case`` nominally, then under seeded perturbations: ``runs - 1`` of them,
    or ``RACY_FACTOR * runs - 1`` plus the race-resolution replays (``race_plan``) when
    the nominal replay has findings.  With explicit delays the perturbations also vary
    every nanosleep within PTX's [0, 2t].

    ``until(prediction)``, if given, is asked after each replay and stops the plan early
    when it says yes.  Agreement only grows as replays add to the set, so stopping once
    every observation agrees gives the same verdict as the whole plan, for less."""
    start = time.perf_counter()
    schedule = schedule_of(case, source)
    h = content_hash(schedule)
    pred = Prediction(case=case, delayed=case.delayed, runs=0, nominal="")
    plan = explore_plan(runs, seed, max_stall, sleeps=case.delayed)
    i = 0
    while i < len(plan):
        verdict, result = judge(schedule, perturbation=plan[i], schedule_hash=h)
        o = verdict.outcome
        pred.kinds.add(o.kind)
        pred.tiles.update(o.wrong_tiles)
        pred.finding_kinds.update(verdict.kinds())
        sites = hang_sites(result) if o.kind == "deadlock" else {}
        for cta, ss in sites.items():
            pred.sites.setdefault(cta, set()).update(ss)
        if i == 0:
            pred.nominal = o.summary()
            pred.nominal_tiles = o.wrong_tiles
            pred.nominal_sites = sites
            pred.cycles = verdict.timing.cycles
            pred.us = verdict.timing.kernel_us
            if verdict.findings and runs > 1:
                plan = explore_plan(RACY_FACTOR * runs, seed, max_stall, sleeps=case.delayed, far_l2=True) + \
                    race_plan(tuple(r.name for r in schedule.roles))
        i += 1
        if until is not None and until(pred):
            break
    pred.runs = i
    pred.seconds = time.perf_counter() - start
    return pred


@dataclass(frozen=True)
class Agreement:
    agree: bool
    reason: str
    exact: bool | None = None
    """Delayed configs: did silicon match the nominal replay exactly?  None otherwise."""


def matches_nominal(pred: Prediction, obs: Observed) -> bool:
    """Kind, wrong tiles and hang site (barrier, role and k-tile) all as in the nominal replay."""
    if obs.kind != pred.nominal.split(":", 1)[0]:
        return False
    if obs.kind == "wrong":
        return set(obs.tiles) == set(pred.nominal_tiles)
    if obs.kind == "deadlock" and obs.site is not None:
        return obs.site in pred.nominal_sites.get(obs.cta, set())
    return True


def agree(pred: Prediction, obs: Observed) -> Agreement:
    """Does one silicon launch lie in the predicted set?"""
    exact = matches_nominal(pred, obs) if pred.delayed else None
    if obs.kind not in pred.kinds:
        return Agreement(False, f"silicon {obs.kind} is outside the predicted set {{{', '.join(sorted(pred.kinds))}}}", exact)
    if obs.kind == "wrong":
        extra = set(obs.tiles) - pred.tiles
        if extra:
            return Agreement(False, f"{len(extra)} silicon wrong tile(s) no replay found wrong: {_tiles(sorted(extra))}", exact)
    if obs.kind == "deadlock" and obs.site is not None:
        sims = pred.sites.get(obs.cta, set())
        if (obs.site.barrier, obs.site.role) not in {(s.barrier, s.role) for s in sims}:
            where = ", ".join(sorted(str(s) for s in sims)) or "never blocked on an mbarrier"
            return Agreement(False, f"silicon hung CTA {obs.cta} at {obs.site}; the simulator's replays hung it at {where}", exact)
    return Agreement(True, "in the predicted set", exact)


def _tiles(tiles, limit: int = 4) -> str:
    tiles = list(tiles)
    return ", ".join(str(tuple(t)) for t in tiles[:limit]) + (f" (+{len(tiles) - limit})" if len(tiles) > limit else "")


@dataclass
class CaseReport:
    """A case's prediction, its silicon launches and the verdict on each."""

    prediction: Prediction
    launches: list[tuple[Observed, Agreement]]

    @property
    def agree(self) -> bool:
        return all(a.agree for _, a in self.launches)

    def silicon(self) -> str:
        counts = Counter(_observed_label(o) for o, _ in self.launches)
        return ", ".join(f"{label} {n}/{len(self.launches)}" for label, n in counts.most_common())

    def _timed(self) -> list[Observed]:
        """The launches whose time is the kernel's: correct, and not the traced build (its
        timestamp rows added 25-55% to the kernel-only time, results/silicon/timing/2026-12-01_bn_sweep.jsonl)."""
        return [o for o, _ in self.launches if o.kind == "correct" and not o.traced]

    def measured_ms(self) -> float | None:
        """Median over the correct untraced launches: kernel-only where the records have it, else
        (older records) the call's time, host path included -- :meth:`measured_source` says which."""
        correct = self._timed()
        times = sorted(o.kernel_ms for o in correct if o.kernel_ms is not None) or \
            sorted(o.elapsed_ms for o in correct if o.elapsed_ms is not None)
        return times[len(times) // 2] if times else None

    def measured_source(self) -> str | None:
        correct = self._timed()
        if any(o.kernel_ms is not None for o in correct):
            return "kernel"
        return "call" if any(o.elapsed_ms is not None for o in correct) else None

    def to_json(self) -> dict[str, Any]:
        return {**self.prediction.to_json(), "agree": self.agree, "silicon": self.silicon(), "measured_ms": self.measured_ms(),
                "measured": self.measured_source(),
                "launches": [{"kind": o.kind, "tiles": [list(t) for t in o.tiles], "site": str(o.site) if o.site else None,
                              "cta": o.cta, "detail": o.detail, "elapsed_ms": o.elapsed_ms, "kernel_ms": o.kernel_ms, "traced": o.traced, "agree": a.agree, "reason": a.reason,
                              "matches_nominal": a.exact}
                             for o, a in self.launches]}


def _observed_label(o: Observed) -> str:
    if o.kind == "deadlock":
        return f"timeout {o.site}" if o.site else "timeout (host)"
    if o.kind == "wrong":
        return f"wrong {len(o.tiles)} tiles"
    return o.kind


class RecordError(ValueError):
    """A launch-records file that is not what ``kernels.runner.gemm`` writes; names file and line."""


RECORD_MAX_OPS = 60_000
"""Largest config an outcome record may ask to replay (each is replayed 8-24 times): the
largest of the recorded cross-check campaigns is ~48k ops (results/silicon)."""
BENCH_MAX_OPS = 2_000_000
"""Bench records are replayed once (``--timing``): the 4096^3 benches are ~600k ops."""


def read_records(paths: list[Path], max_ops: int = RECORD_MAX_OPS) -> list[dict[str, Any]]:
    """Every launch record of ``paths`` (``kernels.runner.gemm`` JSON lines), each checked the way
    :func:`compare_many` will read it -- its case (step, config, delays, L2 state) and its
    observed outcome -- so a malformed line is refused before any replay.  ``max_ops``
    bounds an outcome record's config (bench records: :data:`BENCH_MAX_OPS`)."""
    records = []
    built: set[str] = set()
    for path in paths:
        try:
            if not path.is_file():  # a directory, a FIFO, a device
                raise RecordError(f"{path}: not a regular file; give kernels.runner.gemm JSON-lines files")
            text = path.read_bytes().decode("utf-8")
        except OSError as e:
            raise RecordError(f"{path}: cannot read it ({e.strerror})") from None
        except UnicodeDecodeError as e:
            raise RecordError(f"{path}: not UTF-8 text (byte {e.start}); give kernels.runner.gemm JSON-lines files") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise RecordError(f"{where}: not a JSON line ({e.msg})") from None
            except RecursionError:
                raise RecordError(f"{where}: nested too deeply to be a launch record") from None
            if not isinstance(r, dict):
                raise RecordError(f"{where}: a launch record is a JSON object; give kernels.runner.gemm JSON-lines files")
            kind = r.get("kind", "outcome")
            if kind not in ("outcome", "bench", "trace"):
                raise RecordError(f"{where}: kind {kind!r}; kernels.runner.gemm writes outcome, bench or trace records")
            if kind == "outcome" or (kind == "bench" and r.get("outcome") == "correct"):
                limit = max_ops if kind == "outcome" else max(max_ops, BENCH_MAX_OPS)
                _check_record(r, where, limit, built)
            records.append(r)
    return records


def attach_copy_streams(records: list[dict[str, Any]], path: Path) -> int:
    """Give each record that lacks one the ``copy_stream`` that ``path`` (JSON lines of ``key`` and
    ``copy_stream``: results/silicon/microbench/2026-12-03_tvm_thread_copy_sass.jsonl, read off the
    kernels as built) lists for its kernel key; returns how many got one.  Records written before
    the build recorded the SASS (kernels.toolchain.build) are predicted from their kernel's own
    copy this way."""
    streams: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: cannot read it ({e})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, stream = row["key"], row["copy_stream"]
            if not isinstance(key, str) or not (stream is None or float(stream["cycles"]) > 0):
                raise ValueError("key must be a string and copy_stream.cycles a positive number")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise RecordError(f"{path}:{n}: not a row of key and copy_stream ({type(e).__name__}: {e}); "
                              "give a file like results/silicon/microbench/2026-12-03_tvm_thread_copy_sass.jsonl") from None
        if stream:
            streams[key] = stream
    attached = 0
    for r in records:
        if "copy_stream" not in r and r.get("key") in streams:
            r["copy_stream"] = streams[r["key"]]
            attached += 1
    return attached


def _check_record(r: dict[str, Any], where: str, max_ops: int, built: set[str]) -> None:
    if SIM_STEP_OF_KERNEL.get(r.get("step"), r.get("step")) not in STEPS:
        raise RecordError(f"{where}: step {r.get('step')!r}; use one of {', '.join(STEPS)}")
    if not isinstance(r.get("config"), dict) or not isinstance(r.get("delays", {}), dict):
        raise RecordError(f"{where}: config and delays must be objects of GemmConfig fields")
    if r.get("outcome") not in SILICON_KIND:
        raise RecordError(f"{where}: outcome {r.get('outcome')!r}; kernels.runner.gemm writes one of {', '.join(SILICON_KIND)}")
    try:
        case = case_of(r)
        if r.get("kind", "outcome") == "outcome":
            observe(r)
        else:
            float(r["bench"]["ms"]), str(r["name"])  # noqa: B018 - what bench_timing reads
    except ConfigError as e:
        raise RecordError(f"{where}: config.{e.field}: {e.message}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # a field of the wrong shape
        raise RecordError(f"{where}: not a kernels.runner.gemm launch record ({type(e).__name__}: {e})") from None
    ops = estimate_ops(case.builder, case.config, load_profile(case.config.arch).sm_count)
    if ops > max_ops:
        raise RecordError(f"{where}: its config would replay ~{ops:,} ops, more than {max_ops:,}; pass --max-ops {ops}")
    key = json.dumps(case.to_dict(), sort_keys=True)
    if key not in built:  # the step's own shape rules (v1: one k-tile, v2: one tile, ws: Hopper only)
        try:
            case.build()
        except ConfigError as e:
            raise RecordError(f"{where}: config.{e.field}: {e.message}") from None
        built.add(key)


def group_records(records: list[dict[str, Any]]) -> dict[str, tuple[Case, list[dict[str, Any]]]]:
    """Outcome launch records grouped by the case they ran (bench records are timing, not outcomes)."""
    groups: dict[str, tuple[Case, list[dict[str, Any]]]] = {}
    for r in records:
        if r.get("kind", "outcome") != "outcome":
            continue
        case = case_of(r)
        key = f"{case.step}|{sorted(case.config.to_dict().items())}"
        groups.setdefault(key, (case, []))[1].append(r)
    return groups


# ----------------------------------------------------------------------------- planning


def draw_cases(n: int, seed: int = 0, strategy=None, **strategy_args) -> list[Case]:
    """``n`` distinct cases from :func:`protosim.strategies.cases` (``strategy_args`` are its
    arguments), or from ``strategy``, any Hypothesis strategy of :class:`Case`; the same
    ones for the same seed (and Hypothesis version): Hypothesis' own generator drives the draws."""
    import json

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from protosim.strategies import cases

    out: list[Case] = []
    seen: set[str] = set()
    if n < 1:  # Hypothesis refuses max_examples=0
        return out

    @hypothesis_seed(seed)
    @settings(max_examples=20 * n, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy if strategy is not None else cases(**strategy_args))
    def collect(case: Case) -> None:
        key = json.dumps(case.to_dict(), sort_keys=True)
        if key not in seen and len(out) < n:
            seen.add(key)
            out.append(case)

    collect()
    return out


def job_for(case: Case, pred: Prediction | None, launches: int = 3) -> dict[str, Any]:
    """The ``kernels.toolchain.build`` / ``kernels.runner.gemm`` job (``Job.to_dict`` form) that runs ``case``:
    delays are launch arguments and the L2 state a launch condition, so they leave the
    binary's config for the job's ``delays`` and ``l2_at_launch``.
    A case the simulator says may fault gets a process per launch (``may_fault``)."""
    cfg = case.config.to_dict()
    delays = {k: cfg.pop(k) for k in DELAY_KNOBS}
    l2 = cfg.pop("l2_at_launch")
    binary = {k: v for k, v in GemmConfig.from_dict(cfg).to_dict().items() if k not in LAUNCH_KNOBS}
    # a ws config on a cluster of more than one CTA runs as the kernels' ws_cluster step (kernels/tirx/hopper_cluster.py)
    step = "ws_cluster" if case.step == "ws" and case.config.cluster_size > 1 else case.step
    return {"spec": {"step": step, "config": binary, "trace": False}, "delays": delays, "l2_at_launch": l2,
            "launches": launches, "kind": "outcome", "may_fault": bool(pred and "fault" in pred.kinds)}


def predict_many(cases_: list[Case], runs: int = 8, seed: int = 0, workers: int | None = None, progress=None,
                 source: str = "builder", ray: str | None = None) -> list[Prediction]:
    """:func:`predict` for each case, spread over processes or a Ray cluster (replays are
    CPU-bound; :func:`protosim.sweep.run_sweep`)."""
    return _map(_predict_from, [(c, runs, seed, source) for c in cases_], workers, progress, ray)


def _predict_from(case: Case, runs: int, seed: int, source: str) -> Prediction:
    return predict(case, runs, seed, source=source)


def _apply(call: tuple) -> Any:
    """One work item of :func:`_map`: ``(function, arguments)``, both picklable."""
    fn, args = call
    return fn(*args)


def _map(fn, arg_tuples: list[tuple], workers: int | None, progress, ray: str | None = None) -> list:
    """``[fn(*args) ...]`` in order, through the one sweep runner.  A prediction takes
    seconds, so each task is one config (``chunk_size=1``): no core idles at the end behind
    a chunk of slow racy configs."""
    from protosim.sweep import run_sweep

    return run_sweep([(fn, args) for args in arg_tuples], _apply, workers=workers, ray=ray, progress=progress, chunk_size=1)


def _covers(observations: list[Observed]):
    return lambda pred: all(agree(pred, o).agree for o in observations)


def _predict_covering(case: Case, runs: int, seed: int, observations: list[Observed], source: str = "builder") -> Prediction:
    return predict(case, runs, seed, until=_covers(observations), source=source)


def compare_many(records: list[dict[str, Any]], runs: int = 8, seed: int = 0, workers: int | None = None, progress=None,
                 stop_when_covered: bool = False, source: str = "builder", ray: str | None = None) -> list[CaseReport]:
    """:func:`compare`, with the predictions spread over processes.  ``stop_when_covered``
    ends each case's exploration as soon as all its launches agree (same verdicts, but
    the predicted sets are then only as large as needed: use it for regression checks,
    not for reporting how sharp the predictions are)."""
    groups = list(group_records(records).values())
    if stop_when_covered:
        preds = _map(_predict_covering, [(c, runs, seed, [observe(r) for r in recs], source) for c, recs in groups],
                     workers, progress, ray)
    else:
        preds = predict_many([c for c, _ in groups], runs, seed, workers, progress, source=source, ray=ray)
    reports = []
    for pred, (_, recs) in zip(preds, groups, strict=True):
        reports.append(CaseReport(pred, [(o, agree(pred, o)) for o in map(observe, recs)]))
    return reports


# ----------------------------------------------------------------------------- the report


def summary(reports: list[CaseReport]) -> dict[str, Any]:
    launches = sum(len(r.launches) for r in reports)
    by_kind: Counter = Counter()
    for r in reports:
        by_kind[r.launches[0][0].kind] += 1
    delayed = [a.exact for r in reports for _, a in r.launches if a.exact is not None]
    return {"cases": len(reports), "agree": sum(r.agree for r in reports), "disagree": sum(not r.agree for r in reports),
            "delayed_launches": len(delayed), "delayed_launches_matching_nominal": sum(delayed),
            "single_outcome_predictions": sum(len(r.prediction.kinds) == 1 for r in reports),
            "launches": launches, "launches_agree": sum(a.agree for r in reports for _, a in r.launches),
            "silicon_kinds": dict(by_kind)}


def render(reports: list[CaseReport], limit: int | None = None) -> str:
    """The agreement table a person reads: one row per case, disagreements first, then
    every disagreement with both sides' evidence."""
    rows = sorted(reports, key=lambda r: (r.agree, r.prediction.case.step, r.prediction.case.label()))
    shown = rows if limit is None else rows[:limit]
    head = ("case", "simulator predicts", "silicon", "agree")
    table = [(r.prediction.case.label(), "{" + ", ".join(sorted(r.prediction.kinds)) + "}",
              r.silicon(), "yes" if r.agree else "NO") for r in shown]
    widths = [max(len(head[i]), *(len(t[i]) for t in table)) if table else len(head[i]) for i in range(4)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)) for t in table]
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more rows (--json has them all)")
    s = summary(reports)
    lines.append("")
    lines.append(f"{s['agree']}/{s['cases']} cases agree ({s['launches_agree']}/{s['launches']} launches); "
                 f"silicon outcomes by case: " + ", ".join(f"{k} {v}" for k, v in sorted(s["silicon_kinds"].items())))
    lines.append(f"predictions naming a single outcome: {s['single_outcome_predictions']}/{s['cases']} "
                 f"(the rest allow several: the agreement is weaker there)")
    if s["delayed_launches"]:
        lines.append(f"launches with explicit delays that match the nominal replay exactly: "
                     f"{s['delayed_launches_matching_nominal']}/{s['delayed_launches']} (nanosleep is not exact; docs/crosscheck.md)")
    bad = [r for r in rows if not r.agree]
    for r in bad:
        p = r.prediction
        lines.append("")
        lines.append(f"DISAGREE {p.case.label()}")
        lines.append(f"  simulator: {p.runs} replay(s), nominal {p.nominal}; set {{{', '.join(sorted(p.kinds))}}}; "
                     f"findings {', '.join(sorted(p.finding_kinds)) or 'none'}")
        for o, a in r.launches:
            if not a.agree:
                lines.append(f"  silicon: {_observed_label(o)}{' -- ' + o.detail if o.detail else ''}: {a.reason}")
                break
    return "\n".join(lines)


# ----------------------------------------------------------------------------- timing

STEP_ORDER = ("v2", "v3", "v4", "v5", "v6", "ws")


def _line_fit(xs: list[float], ys: list[float]) -> dict[str, float]:
    """Least squares ``y = a + b x``, with the residual spread."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    a = my - b * mx
    sd = (sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True)) / n) ** 0.5
    return {"n": n, "intercept_us": round(a, 2), "slope": round(b, 4), "residual_sd_us": round(sd, 2),
            "sim_us_range": [round(min(xs), 1), round(max(xs), 1)]}


def correct_fit(reports: list[CaseReport]) -> dict[str, float] | None:
    """Measured launch time against the simulated time over configs that are correct on
    both sides and have no explicit delay (a nanosleep's length is not the model's to
    know).  The intercept is what a launch costs outside the kernel's own cycles."""
    used = [r for r in reports if r.prediction.kinds == {"correct"} and not r.prediction.delayed and r.measured_ms() is not None]
    if len(used) < 2:
        return None
    fit = _line_fit([r.prediction.us for r in used], [r.measured_ms() * 1000 for r in used])
    fit["kernel_only"] = sum(r.measured_source() == "kernel" for r in used)
    return fit


def config_timing(points: list[dict[str, Any]], worst: int = 5) -> dict[str, Any]:
    """Per-config timing error over ``points`` (``label``, ``step``, ``shape`` (M, N, K),
    ``sim_us``, ``measured_us``): ``error`` = simulated / measured - 1 (negative: the model
    is optimistic), the mean absolute percentage error, the ``worst`` configs, and the
    step-to-step speed-ups: within each shape and L2 state at launch (``l2``, "inputs" where a
    point has none), the fastest measured config of each step against the next step's
    (STEP_ORDER), predicted ratio over measured ratio - 1.  A step's speed-up is the same
    problem under the same conditions: a kernel whose inputs start in DRAM against one whose
    inputs sit in L2 measures the L2, not the step."""
    rows = [{**p, "error": round(p["sim_us"] / p["measured_us"] - 1, 4)} for p in points if p["measured_us"] > 0]
    rows.sort(key=lambda r: r["error"])
    speedups = []
    by_shape: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        best = by_shape.setdefault((tuple(r["shape"]), r.get("l2", "inputs")), {})
        if r["step"] not in best or r["measured_us"] < best[r["step"]]["measured_us"]:
            best[r["step"]] = r
    for (shape, l2), best in sorted(by_shape.items()):
        chain = [best[s] for s in STEP_ORDER if s in best]
        for a, b in zip(chain, chain[1:], strict=False):
            predicted, measured = a["sim_us"] / b["sim_us"], a["measured_us"] / b["measured_us"]
            speedups.append({"shape": list(shape), "l2": l2, "from": a["label"], "to": b["label"], "predicted": round(predicted, 4),
                             "measured": round(measured, 4), "error": round(predicted / measured - 1, 4)})
    mape = sum(abs(r["error"]) for r in rows) / len(rows) if rows else None
    roofed = [r for r in rows if "roof_us" in r]
    return {"n": len(rows), "mape": round(mape, 4) if mape is not None else None,
            "worst": sorted(rows, key=lambda r: -abs(r["error"]))[:worst], "rows": rows, "speedups": speedups,
            "roof": {"n": len(roofed),
                     "predictions_below": [r["label"] for r in roofed if r["sim_us"] < r["roof_us"]],
                     "measurements_below": [r["label"] for r in roofed if r["measured_us"] < r["roof_us"]],
                     "closest": min(roofed, key=lambda r: r["sim_us"] / r["roof_us"], default=None)}}


def config_points(reports: list[CaseReport]) -> list[dict[str, Any]]:
    """The configs :func:`config_timing` judges: correct on both sides, no explicit delay,
    measured kernel-only (a call's time holds the host path: not the model's to predict)."""
    from protosim.roof import roof

    return [{"label": r.prediction.case.label(), "step": r.prediction.case.step,
             "shape": [r.prediction.case.config.M, r.prediction.case.config.N, r.prediction.case.config.K],
             "l2": r.prediction.case.config.l2_at_launch,
             "sim_us": round(r.prediction.us, 3), "measured_us": round(r.measured_ms() * 1000, 3),
             "roof_us": round(roof(r.prediction.case.config, load_profile(r.prediction.case.config.arch)).us, 3)}
            for r in reports
            if r.prediction.kinds == {"correct"} and not r.prediction.delayed and r.measured_source() == "kernel"]


def render_config_timing(t: dict[str, Any], rows: int | None = None) -> str:
    if not t["n"]:
        return "\nno correct config measured kernel-only: no per-config timing error (records older than the runner's kernel_ms)"
    lines = ["", f"per config, kernel-only ({t['n']} correct configs without delays; error = simulated / measured - 1):",
             f"{'config':<48} {'simulated':>10} {'measured':>10} {'error':>8}"]
    shown = t["rows"] if rows is None else t["rows"][:rows]
    for r in shown:
        lines.append(f"{r['label']:<48} {r['sim_us']:>8.1f}us {r['measured_us']:>8.1f}us {r['error']:>+8.1%}")
    if len(shown) < len(t["rows"]):
        lines.append(f"... {len(t['rows']) - len(shown)} more (--json has every row)")
    lines.append(f"MAPE {t['mape']:.1%}; worst: " + ", ".join(f"{r['label']} {r['error']:+.1%}" for r in t["worst"]))
    roof_ = t.get("roof")
    if roof_ and roof_["n"]:
        c = roof_["closest"]
        lines.append(f"roof (protosim.roof: the measured tensor-core rate, DRAM for cold inputs, plus the launch's fixed cost): "
                     f"{len(roof_['predictions_below'])} of {roof_['n']} predictions below it"
                     + (f" ({', '.join(roof_['predictions_below'][:5])})" if roof_["predictions_below"] else "")
                     + f", {len(roof_['measurements_below'])} measurements below it"
                     + (f" ({', '.join(roof_['measurements_below'][:5])})" if roof_["measurements_below"] else "")
                     + f"; closest: {c['label']} predicted {c['sim_us']:.1f} us, roof {c['roof_us']:.1f} us")
    if t["speedups"]:
        lines.append("")
        lines.append(f"{'step to step, same shape and L2 state (fastest config of each step)':<72} {'predicted':>9} {'measured':>9} {'error':>7}")
        for s in t["speedups"]:
            lines.append(f"{s['from'] + ' -> ' + s['to']:<72} {s['predicted']:>9.3f} {s['measured']:>9.3f} {s['error']:>+7.1%}")
    return "\n".join(lines)


def bench_timing(records: list[dict[str, Any]], workers: int | None = None, ray: str | None = None) -> dict[str, Any]:
    """Bench launches (one process, many repetitions: launch overhead amortised) against
    the nominal replay of the same config, and the step-to-step speed-ups on both sides,
    each step represented by its fastest measured config."""
    groups: dict[str, tuple[Case, list[float]]] = {}
    for r in records:
        if r.get("kind") == "bench" and r.get("outcome") == "correct":
            case = case_of(r)
            k = kernel_only_ms(r["bench"])  # kernel-only where the record has it; older ones: back-to-back mean
            groups.setdefault(r["name"], (case, []))[1].append((r["bench"]["ms"] if k is None else k) * 1000)
    names = sorted(groups, key=lambda n: (STEP_ORDER.index(groups[n][0].step), groups[n][0].config.PIPE_DEPTH))
    preds = _map(predict, [(groups[n][0], 1, 0) for n in names], workers, None, ray)
    rows = []
    for name, pred in zip(names, preds, strict=True):
        case, times = groups[name]
        measured = sorted(times)[len(times) // 2]
        rows.append({"label": case.label(), "step": case.step, "sim_us": round(pred.us, 1), "measured_us": round(measured, 1),
                     "launches": len(times), "measured_over_sim": round(measured / pred.us, 3)})
    best: dict[str, dict] = {}
    for row in rows:
        if row["step"] not in best or row["measured_us"] < best[row["step"]]["measured_us"]:
            best[row["step"]] = row
    chain = [best[s] for s in STEP_ORDER if s in best]
    speedups = []
    for a, b in zip(chain, chain[1:], strict=False):
        predicted, measured = a["sim_us"] / b["sim_us"], a["measured_us"] / b["measured_us"]
        speedups.append({"from": a["label"], "to": b["label"], "predicted": round(predicted, 3), "measured": round(measured, 3),
                         "error": round(predicted / measured - 1, 3)})
    return {"rows": rows, "speedups": speedups}


def render_timing(fit: dict | None, bench: dict[str, Any]) -> str:
    lines = ["", "TIMING"]
    if fit:
        lines.append(f"correct configs without delays ({fit['n']}, simulated {fit['sim_us_range'][0]}-{fit['sim_us_range'][1]} us): "
                     f"measured = {fit['intercept_us']} us + {fit['slope']} x simulated (residual sd {fit['residual_sd_us']} us)"
                     + (f"; kernel-only times for {fit['kernel_only']} of them" if fit.get("kernel_only") else
                        "; times of the whole call: the intercept is the launch outside the kernel (host call, tensor maps)"))
    if bench["rows"]:
        lines.append("")
        lines.append(f"{'bench config':<44} {'simulated':>10} {'measured':>10} {'measured/sim':>13}")
        for r in bench["rows"]:
            lines.append(f"{r['label']:<44} {r['sim_us']:>8.1f}us {r['measured_us']:>8.1f}us {r['measured_over_sim']:>13.2f}")
        lines.append("")
        lines.append(f"{'speed-up (fastest config of each step)':<60} {'predicted':>9} {'measured':>9} {'error':>7}")
        for s in bench["speedups"]:
            step_a, step_b = s["from"].split()[0], s["to"].split()[0]
            lines.append(f"{step_a + ' -> ' + step_b + '  (' + s['from'].split()[2] + ' -> ' + s['to'].split()[2] + ')':<60} "
                         f"{s['predicted']:>9.3f} {s['measured']:>9.3f} {s['error']:>+7.1%}")
    return "\n".join(lines)
