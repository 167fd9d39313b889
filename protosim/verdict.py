"""Verdicts: findings, the outcome a GPU would show, and timing -- as plain records.

:func:`judge` replays a schedule once and runs every checker; :func:`explore`
replays it under many seeded perturbations and collects the *set* of outcomes
it can reach.  Outcome classes, from the findings alone:

``fault``     the replay trapped on undefined behaviour (unspecified launch failure);
``deadlock``  it went quiet with warps blocked (a watchdog timeout on silicon);
``wrong``     a data hazard corrupted output tiles (listed);
``correct``   none of those -- possibly with findings that did not bite this time.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import field
from typing import Any, Callable

from protosim._dataclass_cache import DataclassCache
from protosim.arch import ArchProfile, load_profile
from protosim.clock import elapsed_us
from protosim.checkers import Finding, run_checkers
from protosim.engine import Perturbation, RunResult, race_plan, replay
from protosim.engine.perturb import iter_explore_plan
from protosim.ir import Schedule, content_hash, validate_for
from protosim.ptx.mbarrier import SILICON_TOLERATED_UB

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

OUTCOMES = ("correct", "wrong", "deadlock", "fault")
HAZARDS = ("raw_hazard", "war_hazard")


@dataclass(frozen=True)
class Outcome:
    kind: str
    wrong_tiles: tuple[tuple[int, int], ...] = ()
    hung: tuple[str, ...] = ()
    fault: str = ""

    def summary(self, limit: int = 4) -> str:
        if self.kind == "wrong":
            tiles = ", ".join(str(t) for t in self.wrong_tiles[:limit])
            more = f" (+{len(self.wrong_tiles) - limit})" if len(self.wrong_tiles) > limit else ""
            return f"wrong: tiles {tiles}{more}"
        if self.kind == "deadlock":
            more = f" (+{len(self.hung) - limit})" if len(self.hung) > limit else ""
            return "deadlock: " + "; ".join(self.hung[:limit]) + more
        if self.kind == "fault":
            return f"fault: {self.fault}"
        return "correct"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "wrong_tiles": [list(t) for t in self.wrong_tiles], "hung": list(self.hung),
                "fault": self.fault}


def classify(result: RunResult, findings: list[Finding]) -> Outcome:
    if result.trap is not None:
        t = result.trap
        return Outcome("fault", fault=f"{t.kind} on {t.target} (CTA {t.cta}, cycle {t.t:,.0f})")
    if result.deadlocked:
        hung = []
        for b in sorted(result.blocked, key=lambda b: (b.on != "mbarrier", b.cta, b.since)):
            label = f"CTA {b.cta} {b.on} {b.target}" + (f" phase {b.use}" if b.use is not None else "")
            if label not in hung:
                hung.append(label)
        if not hung:
            hung.append(f"{len(result.schedule.ctas) - result.ctas_finished} CTA(s) never finished")
        return Outcome("deadlock", hung=tuple(hung))
    tiles = sorted({t for f in findings if f.kind in HAZARDS for t in f.tiles})
    if tiles:
        return Outcome("wrong", wrong_tiles=tuple(tiles))
    return Outcome("correct")


@dataclass(frozen=True)
class Timing:
    """Where the time went.  Busy fractions are over the SMs the kernel used."""

    cycles: float
    microseconds: float
    """The replay's cycles at the arch's clock: the SMs' time."""
    kernel_us: float
    """What a kernel-only measurement should read: ``microseconds`` plus the launch's fixed
    cost (:attr:`protosim.arch.ArchProfile.launch_fixed_us`, an empty kernel's time)."""
    events: int
    sms_used: int
    tma_busy: float
    mma_busy: float
    l2_busy: float
    hbm_busy: float
    l2_hit_rate: float
    stall: dict[str, dict[str, float]]
    """role -> blocked cycles per warp, by what blocked it."""

    @staticmethod
    def of(result: RunResult) -> Timing:
        s = result.stats
        cycles = max(result.end_cycle, 1.0)
        sms = max(s.sms_used, 1)
        stall = {
            role: {on: c / s.warps.get(role, 1) for on, c in sorted(per.items())}
            for role, per in s.stall.items()
        }
        reads = s.l2_hits + s.l2_misses
        elapsed = elapsed_us(result.arch, result.end_cycle, s.tensor_spans, s.tensor_flops)
        return Timing(
            cycles=result.end_cycle,
            microseconds=elapsed,
            kernel_us=elapsed + result.arch.launch_fixed_us,
            events=len(result.log),
            sms_used=s.sms_used,
            tma_busy=s.tma_busy / (cycles * sms),
            mma_busy=s.mma_busy / (cycles * sms),
            l2_busy=s.l2_busy / cycles,
            hbm_busy=s.hbm_busy / cycles,
            l2_hit_rate=s.l2_hits / reads if reads else 0.0,
            stall=stall,
        )

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class Verdict:
    name: str
    arch: str
    perturbation: str
    findings: list[Finding]
    outcome: Outcome
    timing: Timing
    l2_at_launch: str = "cold"
    """The launch condition the replay assumed (part of the schedule hash; printed with every verdict)."""
    _hash: str | None = field(default=None, repr=False, compare=False)
    _schedule: Schedule | None = field(default=None, repr=False, compare=False)

    @property
    def schedule_hash(self) -> str:
        """The schedule's content hash (:func:`protosim.ir.content_hash`), computed when first
        read: a loop of verdicts that never reads it (a property sweep, the verdicts/s
        benchmark) skips hashing every schedule -- about a fifth of a single-CTA verdict."""
        if self._hash is None:
            self._hash = content_hash(self._schedule)
            self._schedule = None
        return self._hash

    def __getstate__(self) -> dict[str, Any]:
        # a verdict sent to another process carries its hash, not its schedule
        _ = self.schedule_hash
        return dict(self.__dict__)

    @property
    def ok(self) -> bool:
        return not self.findings

    def kinds(self) -> list[str]:
        seen: list[str] = []
        for f in self.findings:
            if f.kind not in seen:
                seen.append(f.kind)
        return seen

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "schedule_hash": self.schedule_hash,
            "arch": self.arch,
            "l2_at_launch": self.l2_at_launch,
            "perturbation": self.perturbation,
            "ok": self.ok,
            "finding_kinds": self.kinds(),
            "findings": [f.to_json() for f in self.findings],
            "outcome": self.outcome.to_json(),
            "timing": self.timing.to_json(),
        }


def judge(schedule: Schedule, arch: ArchProfile | None = None, perturbation: Perturbation | None = None,
          schedule_hash: str | None = None) -> tuple[Verdict, RunResult]:
    """Replay once and judge: the verdict and the raw result (for explain and traces).
    A schedule with ops the arch lacks is a :class:`ScheduleError` (checked on direct
    calls; explorations check once and pass ``schedule_hash``)."""
    arch = arch or load_profile(schedule.arch)
    if schedule_hash is None:
        validate_for(schedule, arch)
    result = replay(schedule, arch, perturbation)
    findings = run_checkers(result)
    verdict = Verdict(
        name=schedule.name,
        arch=arch.name,
        perturbation=result.perturbation.describe(),
        findings=findings,
        outcome=classify(result, findings),
        timing=Timing.of(result),
        l2_at_launch=schedule.l2_at_launch,
        _hash=schedule_hash,
        _schedule=None if schedule_hash else schedule,
    )
    return verdict, result


@dataclass
class OutcomeClass:
    """One reachable outcome and the evidence of the runs that reached it."""

    kind: str
    runs: int = 0
    first: str = ""
    """The first perturbation (in plan order) that reached it."""
    min_magnitude: float = float("inf")
    """Smallest perturbation magnitude among the runs that reached it (a sample, not a bound)."""
    tiles: set[tuple[int, int]] = field(default_factory=set)
    hung: set[str] = field(default_factory=set)
    faults: set[str] = field(default_factory=set)
    finding_kinds: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "runs": self.runs,
            "first": self.first,
            "min_magnitude": None if self.min_magnitude == float("inf") else self.min_magnitude,
            "wrong_tiles": sorted(list(t) for t in self.tiles),
            "hung": sorted(self.hung),
            "faults": sorted(self.faults),
            "finding_kinds": sorted(self.finding_kinds),
        }


@dataclass
class OutcomeSet:
    runs: int
    seed: int
    max_stall: int
    classes: dict[str, OutcomeClass]
    stopped: str = "fixed"
    """Why exploration stopped: ``fixed`` (the asked number of replays), ``converged``
    (the last ``patience`` replays brought no new outcome, hang site, fault or finding
    kind), ``cap`` (the adaptive cap), ``budget`` (the time budget)."""
    asked: int | None = None
    """Replays asked for (``None``: adaptive)."""
    targets: tuple[str, ...] = ()
    """Roles and warps the plan aimed a lag at."""
    seconds: float = 0.0
    tolerated: int = 0
    """Replays repeated with silicon-tolerated UB not trapping (included in ``runs``)."""

    def kinds(self) -> set[str]:
        return set(self.classes)

    def bad(self) -> list[OutcomeClass]:
        """Reached outcomes other than ``correct``, fault first."""
        return [self.classes[k] for k in reversed(OUTCOMES) if k in self.classes and k != "correct"]

    def clean(self) -> bool:
        """Every replay correct, and no replay reported a finding."""
        return all(k == "correct" and not c.finding_kinds for k, c in self.classes.items())

    def describe_stop(self) -> str:
        twins = f", {self.tolerated} of them repeated with silicon-tolerated UB" if self.tolerated else ""
        return {
            "fixed": f"{self.runs} replays: {self.asked} as asked" + (f" + {self.tolerated} with silicon-tolerated UB"
                                                                      if self.tolerated else ""),
            "converged": f"stopped after {self.runs} replays: the last {EXPLORE_PATIENCE} brought nothing new",
            "cap": f"stopped at the cap of {self.runs} replays",
            "budget": f"stopped by the time budget after {self.runs}"
                      + (f" of {self.asked:,}" if self.asked else "") + f" replays ({self.seconds:.0f} s; --budget)",
        }[self.stopped] + ("" if self.stopped == "fixed" else twins)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "seed": self.seed,
            "max_stall": self.max_stall,
            "stopped": self.stopped,
            "asked": self.asked,
            "targets": list(self.targets),
            "seconds": round(self.seconds, 3),
            "tolerated": self.tolerated,
            "outcomes": sorted(self.classes),
            "classes": [self.classes[k].to_json() for k in OUTCOMES if k in self.classes],
        }


EXPLORE_MIN_RUNS = 24
"""Adaptive exploration replays at least this many (the old fixed default)."""
EXPLORE_PATIENCE = 32
"""... and stops once this many replays in a row brought nothing new."""
EXPLORE_CAP = 400
"""... and never more than this many."""
EXPLORE_BUDGET_S = 20.0
"""Wall-clock budget of one exploration (``--budget`` raises it): a small schedule converges
in well under a second, and a gate in CI must not hang on ``--runs 1000000``."""


def lag_targets(schedule: Schedule) -> list[tuple[str, int]]:
    """Every (role, warp) the schedule has: what a targeted lag may hit."""
    return [(r.name, w) for r in schedule.roles for w in range(r.warps)]


def targeted_plan(schedule: Schedule, max_stall: int) -> list[Perturbation]:
    """Lags aimed at each role and warp that exists (a quarter of ``max_stall`` and all
    of it, before each of that warp's waits), then the model's closest races pushed the
    other way (:func:`race_plan`).  A warp that is not there is never named."""
    sizes = sorted({max(1, max_stall // 4), max(1, max_stall)})
    plan = [Perturbation(skew_role=role, skew_warp=w, skew_cycles=s)
            for s in sizes for role, w in lag_targets(schedule)]
    return plan + race_plan(tuple(r.name for r in schedule.roles))


def exploration_plan(schedule: Schedule, seed: int, max_stall: int) -> Iterator[Perturbation]:
    """The nominal replay, then the targeted lags interleaved with the seeded random
    perturbations of :func:`iter_explore_plan`, which go on without end."""
    targeted = targeted_plan(schedule, max_stall)
    rand = iter_explore_plan(seed, max_stall)
    yield next(rand)  # the nominal replay
    for p in rand:
        if targeted:
            yield targeted.pop(0)
        yield p


def _signature(verdict: Verdict) -> tuple:
    o = verdict.outcome
    return (o.kind, o.hung, o.fault.split(" (")[0], tuple(verdict.kinds()))


def explore(schedule: Schedule, runs: int | None = 24, seed: int = 0, max_stall: int = 2000,
            arch: ArchProfile | None = None, progress: Callable[[int, int], None] | None = None,
            budget_s: float | None = None) -> OutcomeSet:
    """Replay under perturbations (the first is nominal) and collect the outcomes.

    ``runs``: exactly that many replays of :func:`explore_plan` (reproducible, the
    plan the outcome sets of the scenarios were written against).  ``runs=None``:
    adaptive -- :func:`exploration_plan` (lags aimed at every role and warp, then seeded
    random perturbations) until :data:`EXPLORE_PATIENCE` replays in a row brought no new
    outcome, hang site, fault or finding kind (at least :data:`EXPLORE_MIN_RUNS`, at most
    :data:`EXPLORE_CAP`).  Either way exploration stops at ``budget_s`` seconds.  A replay
    that trapped on undefined behaviour the H200 was seen to survive
    (``SILICON_TOLERATED_UB``) is replayed again with the UB tolerated, so the set holds
    both what a trap gives and what carrying on gives."""
    arch = arch or load_profile(schedule.arch)
    validate_for(schedule, arch)
    classes: dict[str, OutcomeClass] = {}
    h = content_hash(schedule)
    plan: Iterator[Perturbation] = iter_explore_plan(seed, max_stall) if runs else exploration_plan(schedule, seed, max_stall)
    total = runs or EXPLORE_CAP
    seen: set[tuple] = set()
    quiet = 0
    done = 0
    stopped = "fixed" if runs else "cap"
    start = time.monotonic()
    budget = EXPLORE_BUDGET_S if budget_s is None else budget_s
    retry: list[Perturbation] = []
    tolerated = 0
    while done < total:
        p = retry.pop() if retry else next(plan, None)
        if p is None:
            break
        verdict, result = judge(schedule, arch, p, schedule_hash=h)
        done += 1
        tolerated += p.tolerate_ub
        o = verdict.outcome
        c = classes.setdefault(o.kind, OutcomeClass(o.kind, first=p.describe()))
        c.runs += 1
        c.min_magnitude = min(c.min_magnitude, p.magnitude)
        c.tiles.update(o.wrong_tiles)
        c.hung.update(o.hung)
        if o.fault:
            c.faults.add(o.fault.split(" (")[0])
        c.finding_kinds.update(verdict.kinds())
        trap = result.trap
        if trap is not None and trap.kind in SILICON_TOLERATED_UB and not p.tolerate_ub:
            retry.append(dataclasses.replace(p, tolerate_ub=True))
            total += 1 if runs else 0
        sig = _signature(verdict)
        quiet = 0 if sig not in seen else quiet + 1
        seen.add(sig)
        if progress:
            progress(done, total)
        if not runs and done >= EXPLORE_MIN_RUNS and quiet >= EXPLORE_PATIENCE and not retry:
            stopped = "converged"
            break
        if time.monotonic() - start > budget and done < total:
            stopped = "budget"
            break
    return OutcomeSet(runs=done, seed=seed, max_stall=max_stall, classes=classes, stopped=stopped, asked=runs,
                      targets=tuple(f"{r}.w{w}" for r, w in lag_targets(schedule)) if not runs else (),
                      seconds=time.monotonic() - start, tolerated=tolerated)


@dataclass
class Slack:
    """How much lag one warp tolerates before the outcome changes.

    Found by doubling then bisecting the skew of :class:`Perturbation` (warp
    ``warp`` sleeps ``skew`` cycles before each wait).  ``tolerated`` is the
    largest skew seen to keep the nominal outcome, ``breaks_at`` the smallest
    seen to change it (``None``: nothing up to ``limit`` did).  Bisection assumes
    the outcome changes once as the skew grows; the numbers are what was run.
    """

    warp: int
    role: str
    """The lagging warp's role (empty: warp ``warp`` of every role that has it)."""
    nominal: str
    tolerated: int
    breaks_at: int | None
    broken: str
    finding_kinds: list[str]
    limit: int
    replays: int

    def summary(self, arch: ArchProfile) -> str:
        if self.breaks_at is None:
            return (f"no change up to a lag of {self.limit:,} cycles ({arch.cycles_to_us(self.limit):.1f} µs) "
                    f"of {self.who} before each wait")
        return (f"{self.nominal} up to a lag of {self.tolerated:,} cycles of {self.who} before each wait; "
                f"at {self.breaks_at:,} cycles ({arch.cycles_to_us(self.breaks_at):.2f} µs): {self.broken} "
                f"({', '.join(self.finding_kinds)})")

    @property
    def who(self) -> str:
        return f"{self.role}.w{self.warp}" if self.role else f"warp {self.warp}"

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def default_slack_target(schedule: Schedule) -> tuple[str, int]:
    """The warp whose lag ``--slack`` measures by default: warp 1 of the first role that
    has one (a non-issuing warp of a warpgroup), else warp 0 of the first role."""
    for r in schedule.roles:
        if r.warps > 1:
            return r.name, 1
    return schedule.roles[0].name, 0


def slack(schedule: Schedule, warp: int | None = None, limit: int = 200_000, arch: ArchProfile | None = None,
          precision: float = 0.05, role: str | None = None) -> Slack:
    """``role``/``warp``: the warp that lags (default :func:`default_slack_target`); a
    warp the schedule does not have is a ``ValueError``."""
    arch = arch or load_profile(schedule.arch)
    validate_for(schedule, arch)
    if role is None and warp is None:
        role, warp = default_slack_target(schedule)
    elif warp is None:
        warp = 0
    have = lag_targets(schedule)
    if (role and (role, warp) not in have) or (not role and all(w != warp for _, w in have)):
        raise ValueError(f"no warp {warp}" + (f" in role {role!r}" if role else "") + "; the schedule has "
                         + ", ".join(f"{r}.w{w}" for r, w in have))
    h = content_hash(schedule)
    base, _ = judge(schedule, arch, schedule_hash=h)
    replays = 1

    def at(skew: int) -> Verdict:
        nonlocal replays
        replays += 1
        return judge(schedule, arch, Perturbation(skew_warp=warp, skew_cycles=skew, skew_role=role or ""), schedule_hash=h)[0]

    ok, bad, bad_v = 0, None, None
    skew = 64
    while skew <= limit:
        v = at(skew)
        if v.outcome.kind != base.outcome.kind:
            bad, bad_v = skew, v
            break
        ok = skew
        skew *= 2
    if bad is None:
        return Slack(warp, role or "", base.outcome.kind, ok, None, "", [], limit, replays)
    while bad - ok > max(1, precision * bad):
        mid = (ok + bad) // 2
        v = at(mid)
        if v.outcome.kind != base.outcome.kind:
            bad, bad_v = mid, v
        else:
            ok = mid
    return Slack(warp, role or "", base.outcome.kind, ok, bad, bad_v.outcome.summary(), bad_v.kinds(), limit, replays)


_DATACLASSES.save()  # after the module's last dataclass
