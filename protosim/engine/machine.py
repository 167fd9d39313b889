"""Replay a schedule on a SimPy model of the GPU and write one event log.

The :class:`Machine` launches the schedule's CTAs onto SMs as slots free up
(occupancy from shared memory and threads), runs one SimPy process per warp,
and interprets each op in program order.  Time passes only here; every rule of
protocol semantics is delegated to the pure state machines in
:mod:`protosim.ptx`.  The engine knows no bug: it records what happened (waits,
arrivals, byte completions, buffer accesses, issues, traps) and leaves every
judgement to the checkers.

Undefined behaviour (an arrival past zero, tx-count out of range, use before
init, a launch that cannot fit) *traps*, as it does on silicon: the replay stops
at that cycle and the log ends with a ``trap`` event.  With
``Perturbation.tolerate_ub``, the kinds the H200 was recorded to run through
(:data:`protosim.ptx.mbarrier.SILICON_TOLERATED_UB`) are logged as ``ub`` events
instead and the barrier takes the state silicon showed; the replay goes on.  A replay that goes quiet
with warps still blocked ends with those warps listed in
:attr:`RunResult.blocked` -- what a watchdog would report.

Cycle costs come from the :class:`~protosim.arch.ArchProfile`; hardware
latencies go through :class:`~protosim.engine.perturb.Perturber` so that an
exploration can jitter them and inject stalls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import simpy

from protosim.arch import ArchProfile, load_profile
from protosim.engine.log import EventLog
from protosim.engine.order import fresh, join_into, joined
from protosim.engine.perturb import Perturbation, Perturber
from protosim.engine.units import LatencyTables, MemorySystem, SmUnits, l2_resident
from protosim.gcpause import gc_paused
from protosim.ir import (
    WARP_PART,
    Access,
    Arrive,
    ArriveExpectTx,
    BulkCommit,
    BulkWait,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    CtaProgram,
    CtaSync,
    ExpectTx,
    Fence,
    GlobalStore,
    LocalLoad,
    MbarInit,
    MmaSync,
    Mma,
    MmaCommit,
    NamedBarrierSync,
    Op,
    Schedule,
    Sleep,
    SmemStore,
    ThreadCopy,
    TmaLoad,
    TmaStore,
    TmemAlloc,
    TmemDealloc,
    TmemLoad,
    Wait,
    WaitLd,
    WarpSync,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)
from protosim.ptx import mbarrier as mb
from protosim.ptx.groups import AsyncGroups
from protosim.ptx.mbarrier import MBarrierState

THREADS = {"all": 32, "warp0": 32, "one": 1, "each_warp": 1}
"""Threads of one warp that execute an op, by issuer rule."""
LANE_WRITES = (SmemStore, ThreadCopy)
"""Synchronous shared-memory stores: with 32 lanes, each lane writes its own bytes, and an
elected lane's later release does not carry the other lanes' (``lane_release`` events)."""
CTA_SYNC_ID = 0


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Trap:
    """Undefined behaviour that killed the kernel."""

    t: float
    cta: int
    who: str
    op: int
    kind: str
    """``arrival_underflow``, ``tx_out_of_range``, ``use_before_init``,
    ``reinit_without_inval``, ``count_out_of_range``, ``launch_failure``, ``unsupported``."""
    target: str
    """The barrier (or resource) involved."""
    detail: str
    state: MBarrierState | None = None


@dataclass(frozen=True, slots=True)
class Blocked:
    """A warp that never got past an op."""

    cta: int
    who: str
    op: int
    op_kind: str
    since: float
    on: str
    """``mbarrier`` / ``bar.sync`` / ``bulk_wait`` / ``wgmma_wait`` / ``wgmma_issue`` / ``tmem_alloc``."""
    target: str
    detail: str
    tile: tuple[int, int] | None = None
    k: int | None = None
    use: int | None = None
    parity: int | None = None


@dataclass
class UnitStats:
    """Where time went: busy cycles per unit kind and blocked cycles per role."""

    tma_busy: float = 0.0
    mma_busy: float = 0.0
    lsu_busy: float = 0.0
    l2_busy: float = 0.0
    hbm_busy: float = 0.0
    l2_hits: int = 0
    l2_misses: int = 0
    sms_used: int = 0
    stall: dict[str, dict[str, float]] = field(default_factory=dict)
    """role -> {"mbarrier": cycles, "bar.sync": ..., ...}, summed over the role's warps."""
    warps: dict[str, int] = field(default_factory=dict)
    """role -> number of warps that ran (to average stalls)."""


@dataclass
class RunResult:
    schedule: Schedule
    arch: ArchProfile
    perturbation: Perturbation
    log: EventLog
    end_cycle: float
    trap: Trap | None
    blocked: list[Blocked]
    barriers: dict[tuple[int, str], MBarrierState]
    stats: UnitStats
    ctas_launched: int
    ctas_finished: int

    @property
    def deadlocked(self) -> bool:
        return self.trap is None and (bool(self.blocked) or self.ctas_finished < len(self.schedule.ctas))


# --------------------------------------------------------------------------- CTA state


class _Wakeup(simpy.Event):
    """An event that succeeds ``delay`` cycles after it is fired: a waiter woken by
    a completion resumes after the wake-up latency in one scheduler step (SimPy's
    own ``Timeout`` is built the same way)."""

    __slots__ = ()

    def fire_in(self, delay: float, value: Any = None) -> None:
        self._ok = True
        self._value = value
        self.env.schedule(self, simpy.events.NORMAL, delay)


class _BarrierCell:
    """One mbarrier: its pure state, its waiters, and what the phase in progress
    (and the last completed one) carries for happens-before."""

    __slots__ = ("name", "count", "state", "waiters", "acc_clock", "acc_seqs", "acc_upto", "last_clock", "last_seqs",
                 "last_upto")

    def __init__(self, name: str, count: int):
        self.name = name
        self.count = count
        self.state = MBarrierState()
        self.waiters: list[tuple[int, _Wakeup]] = []
        self.acc_clock: list[int] | None = None
        self.acc_seqs: list[int] = []
        self.acc_upto: dict[str, int] = {}
        """thread -> last access seq of its MMAs a tcgen05.commit in this phase covers."""
        self.last_clock: list[int] | None = None
        self.last_seqs: tuple[int, ...] = ()
        self.last_upto: tuple[tuple[str, int], ...] = ()

    def contribute(self, clock, seqs=(), upto: tuple[str, int] | None = None) -> None:
        self.acc_clock = joined(self.acc_clock, clock)
        if seqs:
            self.acc_seqs.extend(seqs)
        if upto is not None:
            key, seq = upto
            if seq > self.acc_upto.get(key, -1):
                self.acc_upto[key] = seq

    def news(self) -> tuple:
        """What a waiter of the last completed phase learns: (phases completed, clock, seqs, MMA prefixes)."""
        return (self.state.completed, self.last_clock, self.last_seqs, self.last_upto)


class _SyncPoint:
    """One use of a ``bar.sync`` barrier: arrivals so far and their joined clock."""

    __slots__ = ("target", "arrived", "event", "clock")

    def __init__(self, env: simpy.Environment, target: int, width: int):
        self.target = target
        self.arrived = 0
        self.event = _Wakeup(env)
        self.clock = fresh(width)


class _Groups:
    """A thread's async groups, the warps waiting on them, and (for happens-before)
    every committed group's operation ids in order, untrimmed."""

    __slots__ = ("groups", "waiters", "committed", "open", "known")

    def __init__(self) -> None:
        self.groups = AsyncGroups()
        self.waiters: list[tuple[int, bool, simpy.Event]] = []
        self.committed: list[list[int]] = []
        self.open: list[int] = []
        self.known = 0
        """Committed groups whose completion this thread has already observed."""

    def issue(self, op_id: int) -> None:
        self.groups = self.groups.issue(op_id)
        self.open.append(op_id)

    def commit(self) -> None:
        self.groups = self.groups.commit()
        self.committed.append(self.open)
        self.open = []

    def newly_guaranteed(self, n: int) -> list[int]:
        """Op ids a ``wait_group n`` that just returned guarantees, not reported before."""
        upto = max(self.known, len(self.committed) - n)
        ids = [op for g in self.committed[self.known:upto] for op in g]
        self.known = upto
        return ids

    def notify(self) -> None:
        still = []
        for n, read, ev in self.waiters:
            if self.groups.wait_satisfied(n, read):
                ev.succeed()
            else:
                still.append((n, read, ev))
        self.waiters = still


class _Cta:
    def __init__(self, prog: CtaProgram, sm: SmUnits, schedule: Schedule):
        self.index = prog.index
        self.sm = sm
        self.width = sum(r.warps for r in schedule.roles)
        """Warps in the CTA: the length of every vector clock."""
        self.barriers = {b.name: _BarrierCell(b.name, b.count) for b in schedule.barriers}
        self.syncs: dict[int, _SyncPoint] = {}
        self.bulk: dict[str, _Groups] = {}
        self.wgmma: dict[str, _Groups] = {}
        self.cp_async: dict[str, _Groups] = {}
        self.mma_last_done: dict[str, float] = {}
        self.mma_last_seq: dict[str, int] = {}
        """Each thread's last MMA access seq: a tcgen05.commit covers all of that thread's MMA
        accesses up to it (they complete in order), so a phase carries one number per thread."""
        self.mma_lanes: dict[str, int] = {}
        """Lanes of each warp that issued MMAs (1, or 32 for an MMA every lane issued)."""
        self.rendezvous: dict[tuple[int, int], list[Any]] = {}
        self.tmem_held = 0


class _Warp:
    __slots__ = ("cta", "role", "role_name", "warp", "warps", "who", "blocked", "tmem_done", "tmem_seqs", "stall",
                 "done", "g", "clock", "debt", "wait_c0", "lane_writes")

    def __init__(self, cta: _Cta, role: int, role_name: str, warp: int, warps: int, g: int):
        self.cta = cta
        self.role = role
        self.role_name = role_name
        self.warp = warp
        self.warps = warps
        self.who = f"{role_name}.w{warp}"
        self.blocked: tuple | None = None
        """(op index, op, on, target, detail, since, use, parity) while blocked."""
        self.tmem_done = 0.0
        self.tmem_seqs: list[int] = []
        self.stall: dict[str, float] = {}
        self.done = False
        self.g = g
        """Index of this warp in the CTA (its vector-clock component)."""
        self.clock = fresh(cta.width)
        self.wait_c0 = 0
        """Phases the barrier had completed when the current blocked wait began."""
        self.debt = 0.0
        """Cycles of purely local work (fences, commits, sleeps, satisfied waits) not
        yet paid with a SimPy timeout: paid before the next op that others can see."""
        self.lane_writes: dict[tuple[str, int, int | None], int] = {}
        """(buffer, stage, part) -> seq of the last store all 32 lanes made there since the
        warp last synchronised its lanes (__syncwarp, bar.sync): each lane knows only its own
        bytes, so an elected lane's arrive does not release them."""

    def tick(self) -> tuple[int, ...]:
        self.clock[self.g] += 1
        return tuple(self.clock)


# --------------------------------------------------------------------------- machine


class Machine:
    """One replay of ``schedule`` on ``arch`` under ``perturbation``."""

    def __init__(self, schedule: Schedule, arch: ArchProfile | None = None, perturbation: Perturbation | None = None):
        self.schedule = schedule
        self.arch = arch or load_profile(schedule.arch)
        self.perturbation = perturbation or Perturbation.none()
        self.timing = Perturber(self.perturbation)
        self.env = simpy.Environment()
        self.log = EventLog()
        self.memory = MemorySystem(self.arch, l2_resident(schedule, self.arch))
        self.latency = LatencyTables(self.arch)
        self.sms = [SmUnits(i, self.arch) for i in range(self.arch.sm_count)]
        self.trap: Trap | None = None
        self.warps: list[_Warp] = []
        self.ctas: list[_Cta] = []
        self.finished = 0
        self._seq = 0
        self._async_id = 0
        self._async_seqs: dict[int, tuple[int, ...]] = {}
        """Access seqs of each bulk-group / wgmma-group operation, by operation id."""
        self._cp_lanes: dict[int, tuple[tuple[str, int, int | None], int]] = {}
        """cp.async operations all 32 lanes issued: op id -> (slot, seq), a lane write once waited for."""
        self._mma_shapes: dict[tuple[int, int, int], tuple[float, int]] = {}
        a = self.arch
        # How each op kind runs, in three shapes (see _warp):
        #   local:  thread-local work -- its cost joins the warp's debt, no event at all;
        #   (pre, begin, finish): pay ``pre`` cycles (plus debt), ``begin`` acts and returns
        #   an event to wait for (or None), ``finish`` runs when that event fires.
        # A ``pre`` of None means "act at the warp's real time": only the debt is paid.
        self._local = {
            Fence: lambda w, op: a.fence_cycles,
            WgmmaCommit: self._wgmma_commit,
            BulkCommit: self._bulk_commit,
            CpAsyncCommit: self._cp_async_commit,
            MmaSync: lambda w, op: self._mma_shape(op)[0],
            Sleep: lambda w, op: self.timing.sleep(op.cycles) if op.warp is None or op.warp == w.warp else 0.0,
        }
        issue = lambda w, op: a.op_issue_cycles  # noqa: E731
        self._specs = {
            MbarInit: (lambda w, op: a.mbar_init_cycles, self._mbar_init, None),
            Arrive: (lambda w, op: a.arrive_cycles, self._arrive, None),
            ExpectTx: (lambda w, op: a.arrive_cycles, self._expect_tx, None),
            ArriveExpectTx: (lambda w, op: a.arrive_cycles, self._arrive_expect_tx, None),
            # Without a skew a wait has no cost of its own before probing: skip the call.
            Wait: (self._wait_skew if self.perturbation.skew_cycles else None, self._wait, self._wait_woken),
            TmaLoad: (lambda w, op: a.tma_issue_cycles, self._tma_load, None),
            TmaStore: (lambda w, op: a.tma_issue_cycles, self._tma_store, None),
            BulkWait: (issue, self._bulk_wait, self._groups_woken),
            CpAsync: (issue, self._cp_async, None),
            CpAsyncWait: (issue, self._cp_async_wait, self._groups_woken),
            LocalLoad: (None, self._local_load, self._sync_done),
            ThreadCopy: (None, self._thread_copy, self._sync_done),
            SmemStore: (None, self._smem_store, self._sync_done),
            GlobalStore: (None, self._global_store, None),
            Mma: (self._mma_issue_cost, self._mma, None),
            MmaCommit: (issue, self._mma_commit, None),
            Wgmma: (self._mma_issue_cost, self._wgmma, self._unblocked),
            WgmmaWait: (issue, self._wgmma_wait, self._groups_woken),
            TmemLoad: (issue, self._tmem_load, None),
            WaitLd: (None, self._wait_ld, self._wait_ld_done),
            TmemAlloc: (lambda w, op: a.tmem_alloc_cycles if a.has_tmem else 0.0, self._tmem_alloc, self._tmem_granted),
            TmemDealloc: (issue, self._tmem_dealloc, None),
            CtaSync: (None, self._cta_sync, self._bar_released),
            NamedBarrierSync: (None, self._named_sync, self._bar_released),
            # bar.warp.sync: no measurement; a cheap op in the warp's stream, like commit_group.
            WarpSync: (issue, self._warp_sync, None),
        }

    # -- running ---------------------------------------------------------------
    def occupancy(self) -> int:
        """CTAs per SM: limited by threads, shared memory and the CTA slot count."""
        a, s = self.arch, self.schedule
        smem = smem_bytes(s) + a.smem_reserved_per_cta_bytes
        return max(0, min(a.max_ctas_per_sm, a.max_threads_per_sm // s.threads_per_cta, a.smem_per_sm_bytes // smem))

    def run(self) -> RunResult:
        a, s = self.arch, self.schedule
        need = smem_bytes(s)
        per_sm = self.occupancy()
        if need > a.smem_per_cta_bytes or s.threads_per_cta > a.max_threads_per_cta or per_sm == 0:
            self.trap = Trap(0.0, 0, "launch", -1, "launch_failure", "launch",
                             f"CTA needs {need} B shared memory (max {a.smem_per_cta_bytes}) "
                             f"and {s.threads_per_cta} threads (max {a.max_threads_per_cta})")
            self.log.emit(0.0, "trap", 0, "launch", -1, ub="launch_failure", target="launch", what="launch",
                          detail=self.trap.detail)
        else:
            slots = simpy.Store(self.env)
            slots.items.extend(sm for _ in range(per_sm) for sm in range(a.sm_count))
            self.env.process(self._launcher(slots))
            with gc_paused():
                self.env.run()
        result = self._result()
        # Bound methods in the dispatch tables and the environment's processes refer back
        # to the machine: drop them so reference counting frees the run without a full
        # collection (which, after a large replay, costs seconds).
        self._specs = self._local = None
        self.env = self.warps = self.ctas = None
        return result

    def _launcher(self, slots: simpy.Store) -> Iterator[simpy.Event]:
        for prog in self.schedule.ctas:
            sm = yield slots.get()
            if self.trap:
                return
            self.env.process(self._cta(prog, self.sms[sm], slots))

    def _cta(self, prog: CtaProgram, sm: SmUnits, slots: simpy.Store) -> Iterator[simpy.Event]:
        cta = _Cta(prog, sm, self.schedule)
        self.ctas.append(cta)
        procs = []
        g = 0
        for r, (role, ops) in enumerate(zip(self.schedule.roles, prog.roles, strict=True)):
            for w in range(role.warps):
                warp = _Warp(cta, r, role.name, w, role.warps, g)
                g += 1
                self.warps.append(warp)
                procs.append(self.env.process(self._warp(warp, ops)))
        yield simpy.AllOf(self.env, procs)
        if cta.tmem_held:  # the hardware frees TMEM at exit only if dealloc'd; keep the model going
            self._tmem_return(sm, cta.tmem_held)
            cta.tmem_held = 0
        self.finished += 1
        slots.put(sm.index)

    def _warp(self, w: _Warp, ops: tuple[Op, ...]) -> Iterator[simpy.Event]:
        """Run one warp's program: the interpreter loop (kept flat: it is the hot path)."""
        env, specs, local = self.env, self._specs, self._local
        timing = self.timing
        stalls = timing.stalls
        first = w.warp == 0
        for i, op in enumerate(ops):
            if self.trap:
                return
            issuer = op.issuer
            if not first and (issuer == "one" or issuer == "warp0"):
                continue
            if stalls:
                w.debt += timing.stall()
            cls = type(op)
            cost = local.get(cls)
            if cost is not None:
                w.debt += cost(w, op)
                continue
            pre, begin, finish = specs[cls]
            c = pre(w, op) if pre is not None else 0.0
            if c or w.debt:
                d = c + w.debt
                w.debt = 0.0
                yield env.timeout(d)
                if self.trap:
                    return
            ev = begin(w, i, op)
            if ev is not None:
                value = yield ev
                if finish is not None:
                    finish(w, i, op, value)
        if w.debt:
            yield env.timeout(w.debt)
            w.debt = 0.0
        w.done = True

    # -- helpers ---------------------------------------------------------------
    def _block(self, w: _Warp, i: int, op: Op, on: str, target: str, detail: str = "",
               use: int | None = None, parity: int | None = None) -> None:
        w.blocked = (i, op, on, target, detail, self.env.now, use, parity)

    def _unblocked(self, w: _Warp, i: int = -1, op: Op | None = None, value: Any = None) -> None:
        _, _, on, _, _, since, _, _ = w.blocked
        w.blocked = None
        w.stall[on] = w.stall.get(on, 0.0) + (self.env.now - since)

    def _at(self, t: float, fn) -> None:
        """Call ``fn()`` at cycle ``t`` (no process, one event)."""
        ev = self.env.timeout(max(0.0, t - self.env.now))
        ev.callbacks.append(lambda _ev: fn())

    def _access(self, w: _Warp, i: int, acc: Access, mode: str, t0: float, t1: float, tile,
                clock: tuple[int, ...], lanes: int = 1, mma: str | None = None) -> int:
        """Log one buffer access; ``clock`` is the issuing warp's vector clock at issue,
        ``lanes`` how many of its lanes executed the op, ``mma`` the issuing thread of an MMA."""
        part = w.warp if acc.part == WARP_PART else acc.part
        self._seq += 1
        if mma is None:
            self.log.emit(self.env.now, "access", w.cta.index, w.who, i, buffer=acc.buffer, stage=acc.stage, part=part,
                          mode=mode, content=acc.content, t0=t0, t1=t1, tile=tile, seq=self._seq, clock=clock,
                          lanes=lanes)
        else:
            self.log.emit(self.env.now, "access", w.cta.index, w.who, i, buffer=acc.buffer, stage=acc.stage, part=part,
                          mode=mode, content=acc.content, t0=t0, t1=t1, tile=tile, seq=self._seq, clock=clock,
                          lanes=lanes, mma=mma)
        return self._seq

    @staticmethod
    def _slot(w: _Warp, acc: Access) -> tuple[str, int, int | None]:
        return (acc.buffer, acc.stage, w.warp if acc.part == WARP_PART else acc.part)

    def _lane_release(self, w: _Warp, i: int, how: str) -> None:
        """The warp's lanes just synchronised (after a tick): every lane now knows every
        lane's earlier stores, so any later release by any lane carries them."""
        if w.lane_writes:
            self.log.emit(self.env.now + w.debt, "lane_release", w.cta.index, w.who, i,
                          seqs=tuple(w.lane_writes.values()), warp=w.g, at=w.clock[w.g], how=how)
            w.lane_writes = {}

    def _observe(self, w: _Warp, i: int, seqs, how: str, t: float | None = None) -> None:
        """Warp ``w`` now knows that the accesses ``seqs`` have completed."""
        if seqs:
            self.log.emit(self.env.now if t is None else t, "observe", w.cta.index, w.who, i, seqs=tuple(seqs),
                          warp=w.g, at=w.clock[w.g], how=how)

    def _raise_trap(self, cta: _Cta, who: str, i: int, target: str, what: str, kind: str, detail: str,
                    state: MBarrierState | None) -> None:
        if self.trap:
            return
        self.trap = Trap(self.env.now, cta.index, who, i, kind, target, detail, state)
        self.log.emit(self.env.now, "trap", cta.index, who, i, ub=kind, target=target, what=what,
                      detail=detail, state=state)

    def _apply(self, cta: _Cta, who: str, i: int, cell: _BarrierCell, step: mb.Step, what: str) -> bool:
        """Install an mbarrier step: trap on undefined behaviour (or, where the replay tolerates
        it as silicon did, log it and install the state silicon showed), wake waiters on completion."""
        u = step.undefined
        if u is not None:
            if u.after is None or not self.perturbation.tolerate_ub or u.kind not in mb.SILICON_TOLERATED_UB:
                self._raise_trap(cta, who, i, cell.name, what, u.kind, u.detail, cell.state)
                return False
            self.log.emit(self.env.now, "ub", cta.index, who, i, ub=u.kind, target=cell.name, what=what,
                          detail=u.detail, state=cell.state, after=u.after)
            cell.state = u.after  # no phase completes; a re-init may flip the parity under waiters
            self._wake(cell)
            return True
        cell.state = step.state
        if step.phase_completed:
            cell.last_clock, cell.last_seqs = cell.acc_clock, tuple(cell.acc_seqs)
            cell.last_upto = tuple(cell.acc_upto.items()) if cell.acc_upto else ()
            cell.acc_clock, cell.acc_seqs = None, []
            if cell.acc_upto:
                cell.acc_upto = {}
            self.log.emit(self.env.now, "phase", cta.index, who, i, barrier=cell.name, completed=step.state.completed)
            self._wake(cell)
        return True

    def _wake(self, cell: _BarrierCell) -> None:
        """Wake the waiters whose parity now tests complete, with the last phase's news."""
        if cell.waiters:
            parity = cell.state.parity
            keep = []
            news = cell.news()
            wake = self.timing.scale(self.arch.wake_cycles)
            for p, ev in cell.waiters:
                if p != parity:
                    ev.fire_in(wake, news)
                else:
                    keep.append((p, ev))
            cell.waiters = keep

    # -- mbarrier ops -------------------------------------------------------------
    def _mbar_init(self, w: _Warp, i: int, op: MbarInit) -> None:
        cell = w.cta.barriers[op.barrier]
        self._apply(w.cta, w.who, i, cell, mb.init(cell.state, cell.count), "init")

    def _arrive_n(self, w: _Warp, i: int, op: Op, cell: _BarrierCell, threads: int, fn) -> None:
        """``threads`` separate arrive-ons (each thread's own), stopping at a trap.
        Each carries the warp's clock into the phase it lands in (release).  When every
        lane arrives, each releases its own stores: together, the stores all lanes made
        since their last warp sync travel with the phase; one elected lane's arrive
        carries none of them (the arrive event lists them as ``unreleased``)."""
        clock = w.tick()
        if threads > 1 and w.lane_writes:
            cell.contribute(clock, tuple(w.lane_writes.values()))
        else:
            cell.contribute(clock)  # every thread of this warp carries the same clock
        for _ in range(threads):
            if not self._apply(w.cta, w.who, i, cell, fn(cell.state), op.kind):
                return

    def _arrive(self, w: _Warp, i: int, op: Arrive) -> None:
        cell = w.cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        if threads == 1 and w.lane_writes:
            self.log.emit(self.env.now, "arrive", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                          count=op.count, completed=cell.state.completed, unreleased=tuple(w.lane_writes.values()))
        else:
            self.log.emit(self.env.now, "arrive", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                          count=op.count * threads, completed=cell.state.completed)
        self._arrive_n(w, i, op, cell, threads, lambda s: mb.arrive(s, op.count))

    def _expect_tx(self, w: _Warp, i: int, op: ExpectTx) -> None:
        cell = w.cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        self.log.emit(self.env.now, "expect_tx", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                      bytes=op.bytes * threads, completed=cell.state.completed)
        for _ in range(threads):  # not an arrival: no release, no clock
            if not self._apply(w.cta, w.who, i, cell, mb.expect_tx(cell.state, op.bytes), op.kind):
                return

    def _arrive_expect_tx(self, w: _Warp, i: int, op: ArriveExpectTx) -> None:
        cell = w.cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        now, c = self.env.now, cell.state.completed
        self.log.emit(now, "expect_tx", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                      bytes=op.bytes * threads, completed=c)
        if threads == 1 and w.lane_writes:
            self.log.emit(now, "arrive", w.cta.index, w.who, i, barrier=op.barrier, use=op.use, count=threads,
                          completed=c, unreleased=tuple(w.lane_writes.values()))
        else:
            self.log.emit(now, "arrive", w.cta.index, w.who, i, barrier=op.barrier, use=op.use, count=threads,
                          completed=c)
        self._arrive_n(w, i, op, cell, threads, lambda s: mb.arrive_expect_tx(s, op.bytes))

    def _wait_skew(self, w: _Warp, op: Wait) -> float:
        p = self.perturbation
        hit = w.warp == p.skew_warp and (not p.skew_role or w.role_name == p.skew_role)
        return p.skew_cycles if hit else 0.0

    def _wait(self, w: _Warp, i: int, op: Wait) -> simpy.Event | None:
        """Probe the barrier at the warp's real time; block unless the parity's phase is done."""
        cell = w.cta.barriers[op.barrier]
        state = cell.state
        if not state.initialized:
            self._raise_trap(w.cta, w.who, i, op.barrier, "wait", "use_before_init",
                             "try_wait on an mbarrier that was never initialized", state)
            return None
        if mb.test_wait_parity(state, op.parity):
            w.debt += self.timing.scale(self.arch.wait_ready_cycles)
            self._waited(w, i, op, cell, self.env.now, state.completed, state.completed, cell.last_clock,
                         cell.last_seqs, cell.last_upto, False)
            return None
        ev = _Wakeup(self.env)
        cell.waiters.append((op.parity, ev))
        w.wait_c0 = state.completed
        self._block(w, i, op, "mbarrier", op.barrier, use=op.use, parity=op.parity)
        return ev

    def _wait_woken(self, w: _Warp, i: int, op: Wait, news) -> None:
        c_ret, clock, seqs, upto = news
        begin = w.blocked[5]
        self._unblocked(w)
        self._waited(w, i, op, w.cta.barriers[op.barrier], begin, w.wait_c0, c_ret, clock, seqs, upto, True)

    def _waited(self, w: _Warp, i: int, op: Wait, cell: _BarrierCell, begin: float, c0: int, c_ret: int,
                clock, seqs, upto, blocked: bool) -> None:
        if clock is not None:  # acquire: learn what the observed phase carried
            join_into(w.clock, clock)
        w.clock[w.g] += 1
        # The wait event doubles as the observation of the accesses the phase carried:
        # ``seqs`` one by one, ``upto`` as (thread, seq) -- all of that thread's MMA
        # accesses up to seq (a tcgen05.commit tracks every earlier MMA of its thread).
        self.log.emit(self.env.now + w.debt, "wait", w.cta.index, w.who, i, barrier=op.barrier, parity=op.parity,
                      use=op.use, begin=begin, completed_begin=c0, completed_return=c_ret, blocked=blocked,
                      tile=op.tile, k=op.k, seqs=seqs, upto=upto, warp=w.g, at=w.clock[w.g])

    # -- TMA -------------------------------------------------------------------
    def _tma_load(self, w: _Warp, i: int, op: TmaLoad) -> None:
        env, timing = self.env, self.timing
        now = env.now
        hit, chip_done = self.memory.read(now, op.src or op.dst.content, op.bytes)
        sm_done = w.cta.sm.tma.serve(now, op.bytes)
        lat, base = self.latency.load(hit, op.bytes)
        if hit and self.perturbation.l2_hit_extra:
            lat, base = lat + self.perturbation.l2_hit_extra, base + self.perturbation.l2_hit_extra
        land = max(now + timing.scale(lat), max(sm_done, chip_done) + timing.scale(base)) + timing.unit_stall()
        cta = w.cta
        self.log.emit(now, "issue", cta.index, w.who, i, what="tma_load", threads=1, tile=op.tile, k=op.k,
                      barrier=op.barrier, use=op.use, bytes=op.bytes, lands=land)
        clock = w.tick()
        # Shared memory changes only while the bytes stream in at the end of the
        # transfer, not during the latency before the first byte.
        fill = max(now, land - op.bytes / self.arch.tma_sm_bytes_per_clk)
        seq = self._access(w, i, op.dst, "w", fill, land, op.tile, clock)

        def landed() -> None:
            if self.trap:
                return
            cell = cta.barriers[op.barrier]
            cell.contribute(clock, (seq,))
            self.log.emit(env.now, "complete_tx", cta.index, "tma", i, barrier=op.barrier, use=op.use,
                          bytes=op.bytes, completed=cell.state.completed, issue=now, who_issued=w.who)
            self._apply(cta, "tma", i, cell, mb.complete_tx(cell.state, op.bytes), "complete_tx")

        self._at(land, landed)

    def _thread_groups(self, table: dict[str, _Groups], key: str) -> _Groups:
        g = table.get(key)
        if g is None:
            g = table[key] = _Groups()
        return g

    def _tma_store(self, w: _Warp, i: int, op: TmaStore) -> None:
        arch, timing = self.arch, self.timing
        now = self.env.now
        # The engine reads the tile out of shared memory as it streams it to L2, so the
        # read ends when the last byte clears the slower of the two pipes.
        sm_done = w.cta.sm.tma.serve(now, op.bytes)
        chip_done = self.memory.write(now, op.bytes)
        read_done = max(sm_done, chip_done) + timing.scale(arch.smem_latency) + timing.unit_stall()
        lat, base = self.latency.store_latency(op.bytes)
        done = max(now + timing.scale(lat), read_done + timing.scale(base))
        self._async_id += 1
        op_id = self._async_id
        g = self._thread_groups(w.cta.bulk, w.who)
        g.issue(op_id)
        self.log.emit(now, "issue", w.cta.index, w.who, i, what="tma_store", threads=1, tile=op.tile, k=op.k)
        self._async_seqs[op_id] = (self._access(w, i, op.src, "r", now, read_done, op.tile, w.tick(),
                                                THREADS[op.issuer]),)

        def finish(stage: str) -> None:
            g.groups = g.groups.complete(op_id, stage)
            g.notify()

        self._at(read_done, lambda: finish("read"))
        self._at(done, lambda: finish("done"))

    def _bulk_commit(self, w: _Warp, op: BulkCommit) -> float:
        self._thread_groups(w.cta.bulk, w.who).commit()
        return self.arch.op_issue_cycles

    def _wait_groups(self, w: _Warp, i: int, op: Op, g: _Groups, n: int, read: bool, on: str) -> simpy.Event | None:
        if g.groups.wait_satisfied(n, read):
            self._groups_known(w, i, op)
            return None
        ev = self.env.event()
        g.waiters.append((n, read, ev))
        self._block(w, i, op, on, w.who, f"waiting for <= {n} pending group(s)")
        return ev

    def _groups_woken(self, w: _Warp, i: int, op: Op, value: Any) -> None:
        self._unblocked(w)
        self._groups_known(w, i, op)

    def _groups_known(self, w: _Warp, i: int, op: Op) -> None:
        """A wait_group returned: the warp now knows the guaranteed operations completed."""
        w.tick()
        table = self._async_seqs
        if isinstance(op, (BulkWait, CpAsyncWait)):  # per-thread groups: nobody else shares them
            groups = w.cta.bulk if isinstance(op, BulkWait) else w.cta.cp_async
            ids = self._thread_groups(groups, w.who).newly_guaranteed(op.n)
            seqs = [s for op_id in ids for s in table.pop(op_id, ())]
            self._observe(w, i, seqs, op.kind)
            if self._cp_lanes:  # each lane waited for its own copies: lane writes from here on
                for op_id in ids:
                    lane = self._cp_lanes.pop(op_id, None)
                    if lane is not None:
                        w.lane_writes[lane[0]] = lane[1]
        else:  # a wgmma's seqs are shared by the warps of its group: get, not pop
            ids = self._thread_groups(w.cta.wgmma, w.who).newly_guaranteed(op.n)
            seqs = [s for op_id in ids for s in table.get(op_id, ())]
            self._observe(w, i, seqs, "wgmma_wait")

    def _bulk_wait(self, w: _Warp, i: int, op: BulkWait) -> simpy.Event | None:
        return self._wait_groups(w, i, op, self._thread_groups(w.cta.bulk, w.who), op.n, op.read, "bulk_wait")

    # -- cp.async groups (Ampere-style software pipelines) --------------------
    def _cp_async(self, w: _Warp, i: int, op: CpAsync) -> None:
        """The warp's share of an asynchronous global -> shared copy: timed like a thread
        copy (LSU, L2/HBM), but the warp moves on and the copy joins its open group."""
        first, done = self._global_to_shared(w, op)
        done += self.timing.unit_stall()  # an asynchronous unit: perturbable like TMA
        self._async_id += 1
        op_id = self._async_id
        g = self._thread_groups(w.cta.cp_async, w.who)
        g.issue(op_id)
        lanes = THREADS[op.issuer]
        seq = self._access(w, i, op.dst, "w", min(first, done), done, op.tile, w.tick(), lanes)
        self._async_seqs[op_id] = (seq,)
        if lanes > 1:
            self._cp_lanes[op_id] = (self._slot(w, op.dst), seq)

        def finish() -> None:
            g.groups = g.groups.complete(op_id, "done")
            g.notify()

        self._at(done, finish)

    def _cp_async_commit(self, w: _Warp, op: CpAsyncCommit) -> float:
        self._thread_groups(w.cta.cp_async, w.who).commit()
        return self.arch.op_issue_cycles

    def _cp_async_wait(self, w: _Warp, i: int, op: CpAsyncWait) -> simpy.Event | None:
        return self._wait_groups(w, i, op, self._thread_groups(w.cta.cp_async, w.who), op.n, False, "cp_async_wait")

    def _local_load(self, w: _Warp, i: int, op: LocalLoad) -> simpy.Event:
        now = self.env.now
        done = w.cta.sm.smem.serve(now, op.bytes) + self.arch.smem_latency
        seq = self._access(w, i, op.src, "r", now, done, op.tile, w.tick(), THREADS[op.issuer])
        return self.env.timeout(done - now, seq)

    # -- thread-driven data movement ------------------------------------------
    def _global_to_shared(self, w: _Warp, op: ThreadCopy | CpAsync) -> tuple[float, float]:
        """(first write, done) of one warp's global -> shared copy through the LSU and
        L2/HBM: ld.global then st.shared, so shared memory is written once the first
        loads return.  Thread copies and cp.async share this timing."""
        arch = self.arch
        now = self.env.now
        part = w.warp if op.dst.part == WARP_PART else op.dst.part
        hit, chip_done = self.memory.read(now, f"{op.src or op.dst.content}#{part}", op.bytes)
        lsu_done = w.cta.sm.lsu.serve(now, op.bytes)
        lat = self.timing.scale(arch.global_load_l2_cycles + self.perturbation.l2_hit_extra if hit else arch.global_load_dram_cycles)
        done = max(lsu_done, chip_done) + lat + arch.smem_latency
        return min(now + lat, done), done

    def _thread_copy(self, w: _Warp, i: int, op: ThreadCopy) -> simpy.Event:
        first, done = self._global_to_shared(w, op)
        seq = self._access(w, i, op.dst, "w", first, done, op.tile, w.tick(), THREADS[op.issuer])
        return self.env.timeout(done - self.env.now, seq)

    def _smem_store(self, w: _Warp, i: int, op: SmemStore) -> simpy.Event:
        now = self.env.now
        done = w.cta.sm.smem.serve(now, op.bytes) + self.arch.smem_latency
        seq = self._access(w, i, op.dst, "w", now, done, op.tile, w.tick(), THREADS[op.issuer])
        return self.env.timeout(done - now, seq)

    def _sync_done(self, w: _Warp, i: int, op: Op, seq: int) -> None:
        """A synchronous copy finished: its own warp knows (each lane its own bytes, when all
        32 lanes stored: then it is a lane write until the warp's lanes synchronise)."""
        w.tick()
        self._observe(w, i, (seq,), "synchronous")
        if op.__class__ in LANE_WRITES and THREADS[op.issuer] > 1:
            w.lane_writes[self._slot(w, op.dst)] = seq

    def _global_store(self, w: _Warp, i: int, op: GlobalStore) -> simpy.Event:
        # Stores retire asynchronously; the warp pays only for pushing bytes into the LSU.
        now = self.env.now
        self.memory.write(now, op.bytes)
        return self.env.timeout(w.cta.sm.lsu.serve(now, op.bytes) - now)

    # -- MMA -------------------------------------------------------------------
    def _mma_shape(self, op: Mma | Wgmma) -> tuple[float, int]:
        """(occupancy, instructions) of an MMA tile op, computed once per shape."""
        key = (op.m, op.n, op.k_elems)
        shape = self._mma_shapes.get(key)
        if shape is None:
            shape = self._mma_shapes[key] = self.arch.mma_cycles(*key)
        return shape

    def _mma_issue_cost(self, w: _Warp, op: Mma | Wgmma) -> float:
        return self.arch.mma_thread_issue_cycles * self._mma_shape(op)[1]

    def _mma(self, w: _Warp, i: int, op: Mma) -> None:
        arch, timing = self.arch, self.timing
        occupancy, _ = self._mma_shape(op)
        now = self.env.now
        start, free, done = w.cta.sm.mma.submit(now, occupancy, timing.scale(arch.mma_tail_cycles) + timing.unit_stall())
        key = w.who
        if done > w.cta.mma_last_done.get(key, 0.0):
            w.cta.mma_last_done[key] = done
        lanes = THREADS[op.issuer]
        self.log.emit(now, "issue", w.cta.index, w.who, i, what="mma", threads=lanes, tile=op.tile, k=op.k)
        clock = w.tick()
        seqs = [self._access(w, i, acc, "r", start, free, op.tile, clock, lanes, key) for acc in op.reads]
        seqs += [self._access(w, i, acc, "w", start, done, op.tile, clock, lanes, key) for acc in op.writes]
        if seqs:
            w.cta.mma_last_seq[key] = seqs[-1]
        if lanes > w.cta.mma_lanes.get(key, 0):
            w.cta.mma_lanes[key] = lanes

    def _mma_commit(self, w: _Warp, i: int, op: MmaCommit) -> None:
        """``tcgen05.commit``, by each executing thread: a thread that issued MMAs arrives once
        *all* its earlier MMAs completed (not only those since its last commit: PTX), one
        that issued none committed an empty group and arrives at once."""
        env = self.env
        cta = w.cta
        key = w.who
        threads = THREADS[op.issuer]
        busy = min(threads, cta.mma_lanes.get(key, 0))  # committing threads with MMAs; the rest commit empty groups
        when = max(env.now, cta.mma_last_done.get(key, 0.0))
        self.log.emit(env.now, "issue", cta.index, w.who, i, what="mma_commit", threads=threads,
                      tile=op.tile, k=op.k, barrier=op.barrier, use=op.use)
        clock = w.tick()
        last = cta.mma_last_seq.get(key)
        upto = (key, last) if last is not None else None

        def arrive(n: int, empty: bool) -> None:
            if self.trap:
                return
            cell = cta.barriers[op.barrier]
            cell.contribute(clock, (), None if empty else upto)
            if empty:
                self.log.emit(env.now, "arrive", cta.index, "mma", i, barrier=op.barrier, use=op.use, count=n,
                              completed=cell.state.completed, who_issued=w.who, empty_groups=n)
            else:
                self.log.emit(env.now, "arrive", cta.index, "mma", i, barrier=op.barrier, use=op.use, count=n,
                              completed=cell.state.completed, who_issued=w.who)
            for _ in range(n):
                if not self._apply(cta, "mma", i, cell, mb.arrive(cell.state, 1), "tcgen05.commit"):
                    return

        if threads > busy:
            self._at(env.now, lambda: arrive(threads - busy, True))
        if busy:
            self._at(when, lambda: arrive(busy, False))

    def _wgmma(self, w: _Warp, i: int, op: Wgmma) -> simpy.Event | None:
        """``.sync.aligned``: the MMA starts once every warp of the role has issued it."""
        env, arch, timing = self.env, self.arch, self.timing
        cta = w.cta
        key = (w.role, i)
        rv = cta.rendezvous.get(key)
        if rv is None:
            rv = cta.rendezvous[key] = [0, env.event()]
        rv[0] += 1
        if rv[0] < w.warps:
            self._block(w, i, op, "wgmma_issue", f"{w.role_name} wgmma #{i}")
            return rv[1]
        del cta.rendezvous[key]
        occupancy, insts = self._mma_shape(op)
        # The issuing warps build two smem descriptors per instruction between wgmmas; on
        # silicon that lengthens every instruction's slot (arch: wgmma_issue_overhead).
        occupancy += arch.wgmma_issue_overhead * insts
        now = env.now
        start, free, done = cta.sm.mma.submit(now, occupancy, timing.scale(arch.mma_tail_cycles) + timing.unit_stall())
        self._async_id += 1
        op_id = self._async_id
        self.log.emit(now, "issue", cta.index, w.who, i, what="wgmma", threads=32 * w.warps, tile=op.tile, k=op.k)
        clock = w.tick()
        seqs = [self._access(w, i, acc, "r", start, free, op.tile, clock, 32) for acc in op.reads]
        seqs += [self._access(w, i, acc, "w", start, done, op.tile, clock, 32) for acc in op.writes]
        members = [self._thread_groups(cta.wgmma, f"{w.role_name}.w{j}") for j in range(w.warps)]
        self._async_seqs[op_id] = tuple(seqs)
        for g in members:  # every warp of the group now tracks it
            g.issue(op_id)

        def finish() -> None:
            for g in members:
                g.groups = g.groups.complete(op_id, "done")
                g.notify()

        self._at(done, finish)
        rv[1].succeed(op_id)
        return None

    def _wgmma_commit(self, w: _Warp, op: WgmmaCommit) -> float:
        self._thread_groups(w.cta.wgmma, w.who).commit()
        return self.arch.op_issue_cycles

    def _wgmma_wait(self, w: _Warp, i: int, op: WgmmaWait) -> simpy.Event | None:
        return self._wait_groups(w, i, op, self._thread_groups(w.cta.wgmma, w.who), op.n, False, "wgmma_wait")

    # -- TMEM ------------------------------------------------------------------
    def _tmem_load(self, w: _Warp, i: int, op: TmemLoad) -> None:
        arch = self.arch
        now = self.env.now
        done = now + self.timing.scale(arch.tmem_load_latency) + op.bytes / arch.tmem_bytes_per_clk
        w.tmem_done = max(w.tmem_done, done)
        w.tmem_seqs.append(self._access(w, i, op.src, "r", now, done, op.tile, w.tick(), THREADS[op.issuer]))

    def _wait_ld(self, w: _Warp, i: int, op: WaitLd) -> simpy.Event | None:
        now = self.env.now
        if w.tmem_done > now:
            self._block(w, i, op, "wait_ld", w.who)
            return self.env.timeout(w.tmem_done - now)
        w.debt += self.arch.op_issue_cycles
        self._wait_ld_known(w, i)
        return None

    def _wait_ld_done(self, w: _Warp, i: int, op: WaitLd, value: Any) -> None:
        self._unblocked(w)
        self._wait_ld_known(w, i)

    def _wait_ld_known(self, w: _Warp, i: int) -> None:
        w.tick()
        self._observe(w, i, w.tmem_seqs, "wait_ld")
        w.tmem_seqs = []

    def _tmem_alloc(self, w: _Warp, i: int, op: TmemAlloc) -> simpy.Event | None:
        arch = self.arch
        if not arch.has_tmem:
            self._raise_trap(w.cta, w.who, i, "tmem", "tcgen05.alloc", "unsupported",
                             f"tcgen05.alloc on {arch.name} ({arch.target}), which has no Tensor Memory", None)
            return None
        sm = w.cta.sm
        if sm.tmem_free < op.columns:
            ev = self.env.event()
            sm.tmem_waiters.append((op.columns, ev))
            self._block(w, i, op, "tmem_alloc", f"tmem@sm{sm.index}", f"{sm.tmem_free} columns free")
            return ev
        sm.tmem_free -= op.columns
        w.cta.tmem_held += op.columns
        return None

    def _tmem_granted(self, w: _Warp, i: int, op: TmemAlloc, value: Any) -> None:
        self._unblocked(w)
        w.cta.tmem_held += op.columns

    def _tmem_return(self, sm: SmUnits, columns: int) -> None:
        sm.tmem_free += columns
        while sm.tmem_waiters and sm.tmem_waiters[0][0] <= sm.tmem_free:
            cols, ev = sm.tmem_waiters.pop(0)
            sm.tmem_free -= cols
            ev.succeed()

    def _tmem_dealloc(self, w: _Warp, i: int, op: TmemDealloc) -> None:
        cols = min(op.columns, w.cta.tmem_held)
        w.cta.tmem_held -= cols
        self._tmem_return(w.cta.sm, cols)

    # -- bar.sync --------------------------------------------------------------------
    def _bar_sync(self, w: _Warp, i: int, op: Op, barrier_id: int, threads: int) -> simpy.Event | None:
        cta = w.cta
        sp = cta.syncs.get(barrier_id)
        if sp is None:
            sp = cta.syncs[barrier_id] = _SyncPoint(self.env, threads, cta.width)
        sp.arrived += 32
        join_into(sp.clock, w.tick())
        if w.lane_writes:  # every lane takes part: the warp's lanes are synchronised too
            self._lane_release(w, i, op.kind)
        if sp.arrived >= sp.target:  # last arrival: release everyone after the barrier latency
            cta.syncs[barrier_id] = _SyncPoint(self.env, threads, cta.width)
            sp.event.fire_in(self.arch.cta_sync_cycles, sp)
            w.debt += self.arch.cta_sync_cycles
            join_into(w.clock, sp.clock)
            w.tick()
            return None
        self._block(w, i, op, "bar.sync", f"bar {barrier_id}", f"{sp.arrived} of {sp.target} threads arrived")
        return sp.event

    def _bar_released(self, w: _Warp, i: int, op: Op, sp: _SyncPoint) -> None:
        self._unblocked(w)
        join_into(w.clock, sp.clock)
        w.tick()

    def _warp_sync(self, w: _Warp, i: int, op: WarpSync) -> None:
        """``__syncwarp()``: the lanes meet; every lane's earlier stores are now every lane's."""
        w.tick()
        self._lane_release(w, i, "warp_sync")

    def _cta_sync(self, w: _Warp, i: int, op: CtaSync) -> simpy.Event | None:
        return self._bar_sync(w, i, op, CTA_SYNC_ID, self.schedule.threads_per_cta)

    def _named_sync(self, w: _Warp, i: int, op: NamedBarrierSync) -> simpy.Event | None:
        return self._bar_sync(w, i, op, op.barrier_id, op.threads)

    # -- result ----------------------------------------------------------------
    def _result(self) -> RunResult:
        stats = UnitStats()
        for sm in self.sms:
            stats.tma_busy += sm.tma.busy
            stats.mma_busy += sm.mma.busy
            stats.lsu_busy += sm.lsu.busy
            if sm.tma.busy or sm.mma.busy or sm.lsu.busy:
                stats.sms_used += 1
        stats.l2_busy = self.memory.l2_pipe.busy
        stats.hbm_busy = self.memory.hbm_pipe.busy
        stats.l2_hits, stats.l2_misses = self.memory.hits, self.memory.misses
        blocked = []
        end = self.env.now
        for w in self.warps:
            stats.warps[w.role_name] = stats.warps.get(w.role_name, 0) + 1
            per = stats.stall.setdefault(w.role_name, {})
            for on, cycles in w.stall.items():
                per[on] = per.get(on, 0.0) + cycles
            if w.blocked is not None and not w.done:
                i, op, on, target, detail, since, use, parity = w.blocked
                if on == "mbarrier":
                    cell = w.cta.barriers[target]
                    st = cell.state
                    detail = (f"phase {st.completed} (parity {st.parity}) in flight: pending {st.pending}/"
                              f"{cell.count}, tx {st.tx}")
                blocked.append(Blocked(w.cta.index, w.who, i, op.kind, since, on, target, detail,
                                       op.tile, op.k, use, parity))
                per[on] = per.get(on, 0.0) + (end - since)
        barriers = {(c.index, name): cell.state for c in self.ctas for name, cell in c.barriers.items()}
        return RunResult(
            schedule=self.schedule,
            arch=self.arch,
            perturbation=self.perturbation,
            log=self.log,
            end_cycle=self.trap.t if self.trap else end,
            trap=self.trap,
            blocked=blocked,
            barriers=barriers,
            stats=stats,
            ctas_launched=len(self.ctas),
            ctas_finished=self.finished,
        )


def smem_bytes(s: Schedule) -> int:
    """Shared memory one CTA needs, laid out as the seed's ``T.SMEMPool`` does:
    the TMEM address slot and the mbarriers first, then each buffer at its alignment."""
    offset = 4 if any(b.space == "tmem" for b in s.buffers) else 0
    if s.barriers:
        offset = -(-offset // 8) * 8 + 8 * len(s.barriers)
    for b in s.buffers:
        if b.space != "smem":
            continue
        offset = -(-offset // b.align) * b.align + b.bytes * b.stages
    return offset


def replay(schedule: Schedule, arch: ArchProfile | None = None, perturbation: Perturbation | None = None) -> RunResult:
    """Replay ``schedule`` once and return the raw result (log, trap, blocked warps, stats)."""
    return Machine(schedule, arch, perturbation).run()
