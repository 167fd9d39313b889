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

from dataclasses import dataclass, field
from typing import Any, Callable

from protosim.arch import ArchProfile, load_profile
from protosim.checkers import Finding, run_checkers
from protosim.engine import Perturbation, RunResult, explore_plan, replay
from protosim.ir import Schedule, content_hash

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
        return Timing(
            cycles=result.end_cycle,
            microseconds=result.arch.cycles_to_us(result.end_cycle),
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
    schedule_hash: str
    arch: str
    perturbation: str
    findings: list[Finding]
    outcome: Outcome
    timing: Timing

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
            "perturbation": self.perturbation,
            "ok": self.ok,
            "finding_kinds": self.kinds(),
            "findings": [f.to_json() for f in self.findings],
            "outcome": self.outcome.to_json(),
            "timing": self.timing.to_json(),
        }


def judge(schedule: Schedule, arch: ArchProfile | None = None, perturbation: Perturbation | None = None,
          schedule_hash: str | None = None) -> tuple[Verdict, RunResult]:
    """Replay once and judge: the verdict and the raw result (for explain and traces)."""
    arch = arch or load_profile(schedule.arch)
    result = replay(schedule, arch, perturbation)
    findings = run_checkers(result)
    verdict = Verdict(
        name=schedule.name,
        schedule_hash=schedule_hash or content_hash(schedule),
        arch=arch.name,
        perturbation=result.perturbation.describe(),
        findings=findings,
        outcome=classify(result, findings),
        timing=Timing.of(result),
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

    def kinds(self) -> set[str]:
        return set(self.classes)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "seed": self.seed,
            "max_stall": self.max_stall,
            "outcomes": sorted(self.classes),
            "classes": [self.classes[k].to_json() for k in OUTCOMES if k in self.classes],
        }


def explore(schedule: Schedule, runs: int = 24, seed: int = 0, max_stall: int = 2000,
            arch: ArchProfile | None = None, progress: Callable[[int, int], None] | None = None) -> OutcomeSet:
    """Replay under ``runs`` perturbations (the first is nominal) and collect outcomes."""
    arch = arch or load_profile(schedule.arch)
    classes: dict[str, OutcomeClass] = {}
    h = content_hash(schedule)
    plan = explore_plan(runs, seed, max_stall)
    for n, p in enumerate(plan):
        verdict, _ = judge(schedule, arch, p, schedule_hash=h)
        o = verdict.outcome
        c = classes.setdefault(o.kind, OutcomeClass(o.kind, first=p.describe()))
        c.runs += 1
        c.min_magnitude = min(c.min_magnitude, p.magnitude)
        c.tiles.update(o.wrong_tiles)
        c.hung.update(o.hung)
        if o.fault:
            c.faults.add(o.fault.split(" (")[0])
        c.finding_kinds.update(verdict.kinds())
        if progress:
            progress(n + 1, len(plan))
    return OutcomeSet(runs=len(plan), seed=seed, max_stall=max_stall, classes=classes)


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
                    f"of warp {self.warp} before each wait")
        return (f"{self.nominal} up to a lag of {self.tolerated:,} cycles of warp {self.warp} before each wait; "
                f"at {self.breaks_at:,} cycles ({arch.cycles_to_us(self.breaks_at):.2f} µs): {self.broken} "
                f"({', '.join(self.finding_kinds)})")

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def slack(schedule: Schedule, warp: int = 1, limit: int = 200_000, arch: ArchProfile | None = None,
          precision: float = 0.05) -> Slack:
    arch = arch or load_profile(schedule.arch)
    h = content_hash(schedule)
    base, _ = judge(schedule, arch, schedule_hash=h)
    replays = 1

    def at(skew: int) -> Verdict:
        nonlocal replays
        replays += 1
        return judge(schedule, arch, Perturbation(skew_warp=warp, skew_cycles=skew), schedule_hash=h)[0]

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
        return Slack(warp, base.outcome.kind, ok, None, "", [], limit, replays)
    while bad - ok > max(1, precision * bad):
        mid = (ok + bad) // 2
        v = at(mid)
        if v.outcome.kind != base.outcome.kind:
            bad, bad_v = mid, v
        else:
            ok = mid
    return Slack(warp, base.outcome.kind, ok, bad, bad_v.outcome.summary(), bad_v.kinds(), limit, replays)
