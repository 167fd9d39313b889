"""A replay as a timeline a person can look at: tracks, slices, counters, flows, markers.

One function, :func:`build_timeline`, reads a replay's event log (and its findings)
and returns plain records; the three views -- a Perfetto / Chrome trace
(``protosim.views.trace``), a PNG (``protosim.views.plot``) and an HTML page
(``protosim.views.html``) -- only draw them.  Times stay in cycles here.

Tracks per CTA: one per warp (``mma.w0`` ...), ``TMA`` (loads and stores in flight,
from issue to landing) and ``MMA`` (the tensor core's work, from start to finish).
Slices on warp tracks are the waits that blocked, thread-side copies and stores,
and the ops that hung at the end (deadlock).  Counters follow each mbarrier's
phase, pending arrivals and tx-count, recomputed with the pure PTX model
(``protosim.ptx.mbarrier``) from the same arrive / expect_tx / complete_tx events
the engine applied.  A flow joins the op that completed a phase to each wait it
released.  Findings are markers carrying their evidence.

Large launches stay usable: only ``max_ctas`` CTAs are kept (those with findings
first, then the lowest indices), and the timeline says so in ``note``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protosim.checkers.base import Finding, plain
from protosim.engine.result import RunResult
from protosim.ir import Op, TmaLoad, TmaStore
from protosim.ptx import mbarrier as mb

TMA, MMA = "TMA", "MMA"
TRACK_OF_UNIT = {"tma": TMA, "tensor_core": MMA}
"""Units (``Op.unit``) that move an op's data on their own track; every other access is the warp's own."""


@dataclass(frozen=True)
class Slice:
    cta: int
    track: str
    name: str
    t0: float
    t1: float
    cat: str
    """``wait`` (blocked), ``hung`` (never returned), ``tma``, ``mma``, ``copy``."""
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterPoint:
    cta: int
    barrier: str
    t: float
    phase: int
    """Parity of the current phase."""
    pending: int
    tx: int
    completed: int


@dataclass(frozen=True)
class Flow:
    cta: int
    name: str
    src_track: str
    src_t: float
    dst_track: str
    dst_t: float


@dataclass(frozen=True)
class Marker:
    cta: int
    track: str
    t: float
    kind: str
    message: str
    evidence: dict[str, Any]
    first: bool = False
    """The finding the explanation starts from."""


@dataclass
class Timeline:
    name: str
    arch: str
    clock_ghz: float
    end_cycle: float
    ctas_total: int
    ctas: list[int]
    tracks: dict[int, list[str]]
    slices: list[Slice]
    counters: list[CounterPoint]
    flows: list[Flow]
    markers: list[Marker]
    outcome: str
    note: str = ""

    def us(self, cycles: float) -> float:
        return cycles / (self.clock_ghz * 1000.0)


def _op_at(result: RunResult, cta: int, who: str, op: int) -> Op | None:
    """Op ``op`` of the role that ``who`` (``role.wN``) runs."""
    role = who.rsplit(".", 1)[0]
    roles = [r.name for r in result.schedule.roles]
    if role not in roles or op < 0:
        return None
    program = result.schedule.ctas[cta].roles[roles.index(role)]
    return program[op] if op < len(program) else None


def _track_of(who: str) -> str:
    return {"tma": TMA, "mma": MMA}.get(who, who)


def _pick_ctas(result: RunResult, findings: list[Finding], max_ctas: int) -> list[int]:
    n = len(result.schedule.ctas)
    first_seen: dict[int, float] = {}
    for f in findings:
        first_seen[f.cta] = min(first_seen.get(f.cta, f.cycle), f.cycle)
    if result.trap:
        first_seen.setdefault(result.trap.cta, result.trap.t)
    for b in result.blocked:
        first_seen.setdefault(b.cta, b.since)
    chosen = sorted(first_seen, key=lambda c: (first_seen[c], c))[:max_ctas]
    for c in range(n):
        if len(chosen) >= max_ctas:
            break
        if c not in chosen:
            chosen.append(c)
    return sorted(chosen)


def build_timeline(result: RunResult, findings: list[Finding], outcome: str = "", max_ctas: int = 8,
                   first: Finding | None = None) -> Timeline:
    """The timeline of one replay; ``first`` is the finding to mark as the first."""
    schedule = result.schedule
    shown = _pick_ctas(result, findings, max_ctas)
    keep = set(shown)
    warps = [f"{r.name}.w{w}" for r in schedule.roles for w in range(r.warps)]
    tracks = {c: [*warps, TMA, MMA] for c in shown}
    slices: list[Slice] = []
    flows: list[Flow] = []
    counts = {b.name: b.count for b in schedule.barriers}
    states: dict[tuple[int, str], mb.MBarrierState] = {}
    counters: list[CounterPoint] = []
    phase_at: dict[tuple[int, str, int], tuple[str, float]] = {}
    """(cta, barrier, phases completed) -> (track, time) of the op that completed that phase."""
    unit_ops: set[tuple[int, str, int, float]] = set()

    def state(cta: int, barrier: str) -> mb.MBarrierState:
        key = (cta, barrier)
        if key not in states:
            states[key] = mb.init(mb.MBarrierState(), counts.get(barrier, 1)).state
            counters.append(_point(cta, barrier, 0.0, states[key]))
        return states[key]

    def apply(e, fn, times: int = 1) -> None:
        # The engine applies an arrival of n threads as n arrive-ons, each of which may
        # complete a phase; so do we, with the same pure model.
        key = (e.cta, e.data["barrier"])
        s = state(*key)
        for _ in range(times):
            step = fn(s)
            if step.undefined is not None:  # the engine trapped here; the state stays
                break
            s = step.state
            if step.phase_completed:
                phase_at[(e.cta, key[1], s.completed)] = (_track_of(e.who), e.t)
        states[key] = s
        counters.append(_point(e.cta, key[1], e.t, s))

    for e in result.log:
        if e.cta not in keep:
            continue
        d = e.data
        kind = e.kind
        if kind == "arrive":
            apply(e, lambda s: mb.arrive(s, 1), d.get("count", 1))
        elif kind == "expect_tx":
            apply(e, lambda s, n=d["bytes"]: mb.expect_tx(s, n))
        elif kind == "complete_tx":
            apply(e, lambda s, n=d["bytes"]: mb.complete_tx(s, n))
        elif kind == "ub":  # undefined behaviour the replay tolerated: the engine installed this state
            states[(e.cta, d["target"])] = d["after"]
            counters.append(_point(e.cta, d["target"], e.t, d["after"]))
        elif kind == "wait":
            if d.get("blocked") and e.t > d["begin"]:
                slices.append(Slice(e.cta, e.who, f"wait {d['barrier']} parity {d['parity']}", d["begin"], e.t, "wait",
                                    {"barrier": d["barrier"], "parity": d["parity"], "use": d.get("use"),
                                     "tile": d.get("tile"), "k": d.get("k")}))
                src = phase_at.get((e.cta, d["barrier"], d["completed_return"]))
                if src is not None:
                    flows.append(Flow(e.cta, f"{d['barrier']} phase {d['completed_return'] - 1}", src[0], src[1], e.who, e.t))
        elif kind == "issue" and d.get("what") == "tma_load":
            slices.append(Slice(e.cta, TMA, f"load {d.get('bytes', 0):,} B -> {d.get('barrier')}", e.t, d["lands"], "tma",
                                {"issued_by": e.who, "barrier": d.get("barrier"), "use": d.get("use"),
                                 "tile": d.get("tile"), "k": d.get("k"), "bytes": d.get("bytes")}))
        elif kind == "access":
            op = _op_at(result, e.cta, e.who, e.op)
            op_kind = type(op).__name__ if op is not None else ""
            unit = TRACK_OF_UNIT.get(op.unit) if op is not None else None
            if isinstance(op, TmaLoad):
                continue  # drawn from its issue event, issue -> landing
            if unit is None:
                if d["mode"] == "w" or (op is not None and op.unit == "tmem"):
                    slices.append(Slice(e.cta, e.who, f"{op_kind} {d['buffer']}[{d['stage']}]", d["t0"], max(d["t1"], d["t0"]),
                                        "copy", {"content": d.get("content"), "tile": d.get("tile")}))
                continue
            key = (e.cta, unit, e.op, d["t0"])
            if key in unit_ops:
                continue  # one slice per op, not per operand / per warp
            unit_ops.add(key)
            name = "store D" if isinstance(op, TmaStore) else f"{op_kind} k-tile" if unit == MMA else op_kind
            slices.append(Slice(e.cta, unit, name, d["t0"], max(d["t1"], d["t0"]), unit.lower(),
                                {"issued_by": e.who, "op": e.op, "tile": d.get("tile"), "content": d.get("content")}))
    for b in result.blocked:
        if b.cta in keep:
            slices.append(Slice(b.cta, b.who, f"hung: {b.op_kind} on {b.target}", b.since, max(result.end_cycle, b.since),
                                "hung", {"on": b.on, "target": b.target, "op": b.op}))

    markers = []
    for f in findings:
        if f.cta in keep:
            markers.append(Marker(f.cta, _track_of(f.who), f.cycle, f.kind, f.message, plain(f.evidence),
                                  first=f is first))
    if result.trap and result.trap.cta in keep and not any(m.kind == result.trap.kind for m in markers):
        t = result.trap
        markers.append(Marker(t.cta, _track_of(t.who), t.t, t.kind, f"trap: {t.detail}", {"target": t.target}))
    n = len(schedule.ctas)
    note = "" if len(shown) == n else (f"showing {len(shown)} of {n} CTAs (those with findings first, then the lowest "
                                      f"indices); raise --max-ctas to see more")
    return Timeline(schedule.name, result.arch.name, result.arch.clock_ghz, result.end_cycle, n, shown, tracks,
                    sorted(slices, key=lambda s: (s.cta, s.t0)), counters, flows, markers, outcome, note)


def _point(cta: int, barrier: str, t: float, s: mb.MBarrierState) -> CounterPoint:
    return CounterPoint(cta, barrier, t, s.parity, s.pending, s.tx, s.completed)
