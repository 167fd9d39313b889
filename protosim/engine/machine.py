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
at that cycle and the log ends with a ``trap`` event.  A replay that goes quiet
with warps still blocked ends with those warps listed in
:attr:`RunResult.blocked` -- what a watchdog would report.

Cycle costs come from the :class:`~protosim.arch.ArchProfile`; hardware
latencies go through :class:`~protosim.engine.perturb.Timing` so that an
exploration can jitter them and inject stalls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import simpy

from protosim.arch import ArchProfile, load_profile
from protosim.engine.log import EventLog
from protosim.engine.order import fresh, join_into, joined
from protosim.engine.perturb import Perturbation, Timing
from protosim.engine.units import LatencyTables, MemorySystem, SmUnits
from protosim.ir import (
    WARP_PART,
    Access,
    Arrive,
    ArriveExpectTx,
    BulkCommit,
    BulkWait,
    CtaProgram,
    CtaSync,
    ExpectTx,
    Fence,
    GlobalStore,
    MbarInit,
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
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)
from protosim.ptx import mbarrier as mb
from protosim.ptx.groups import AsyncGroups
from protosim.ptx.mbarrier import MBarrierState

THREADS = {"all": 32, "warp0": 32, "one": 1, "each_warp": 1}
"""Threads of one warp that execute an op, by issuer rule."""
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


class _BarrierCell:
    """One mbarrier: its pure state, its waiters, and what the phase in progress
    (and the last completed one) carries for happens-before."""

    __slots__ = ("name", "count", "state", "waiters", "acc_clock", "acc_seqs", "last_clock", "last_seqs")

    def __init__(self, name: str, count: int):
        self.name = name
        self.count = count
        self.state = MBarrierState()
        self.waiters: list[tuple[int, simpy.Event]] = []
        self.acc_clock: list[int] | None = None
        self.acc_seqs: list[int] = []
        self.last_clock: list[int] | None = None
        self.last_seqs: tuple[int, ...] = ()

    def contribute(self, clock, seqs=()) -> None:
        self.acc_clock = joined(self.acc_clock, clock)
        if seqs:
            self.acc_seqs.extend(seqs)


class _SyncPoint:
    __slots__ = ("target", "arrived", "event", "clock")

    def __init__(self, env: simpy.Environment, target: int, width: int):
        self.target = target
        self.arrived = 0
        self.event = env.event()
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
    def __init__(self, env: simpy.Environment, prog: CtaProgram, sm: SmUnits, schedule: Schedule):
        self.index = prog.index
        self.sm = sm
        self.width = sum(r.warps for r in schedule.roles)
        """Warps in the CTA: the length of every vector clock."""
        self.barriers = {b.name: _BarrierCell(b.name, b.count) for b in schedule.barriers}
        self.syncs: dict[int, _SyncPoint] = {}
        self.bulk: dict[str, _Groups] = {}
        self.wgmma: dict[str, _Groups] = {}
        self.mma_last_done: dict[str, float] = {}
        self.mma_uncommitted: dict[str, list[int]] = {}
        """Access seqs of each thread's MMAs not yet covered by a commit."""
        self.rendezvous: dict[tuple[int, int], list[Any]] = {}
        self.tmem_held = 0


class _Warp:
    __slots__ = ("cta", "role", "role_name", "warp", "warps", "who", "blocked", "tmem_done", "tmem_seqs", "stall",
                 "done", "g", "clock")

    def __init__(self, cta: _Cta, role: int, role_name: str, warp: int, warps: int, g: int):
        self.cta = cta
        self.role = role
        self.role_name = role_name
        self.warp = warp
        self.warps = warps
        self.who = f"{role_name}.w{warp}"
        self.blocked: Blocked | None = None
        self.tmem_done = 0.0
        self.tmem_seqs: list[int] = []
        self.stall: dict[str, float] = {}
        self.done = False
        self.g = g
        """Index of this warp in the CTA (its vector-clock component)."""
        self.clock = fresh(cta.width)

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
        self.timing = Timing(self.perturbation)
        self.env = simpy.Environment()
        self.log = EventLog()
        self.memory = MemorySystem(self.arch)
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
        self._handlers = {
            MbarInit: self._mbar_init,
            Arrive: self._arrive,
            ExpectTx: self._expect_tx,
            ArriveExpectTx: self._arrive_expect_tx,
            Wait: self._wait,
            TmaLoad: self._tma_load,
            TmaStore: self._tma_store,
            BulkCommit: self._bulk_commit,
            BulkWait: self._bulk_wait,
            ThreadCopy: self._thread_copy,
            SmemStore: self._smem_store,
            GlobalStore: self._global_store,
            Mma: self._mma,
            MmaCommit: self._mma_commit,
            Wgmma: self._wgmma,
            WgmmaCommit: self._wgmma_commit,
            WgmmaWait: self._wgmma_wait,
            TmemLoad: self._tmem_load,
            WaitLd: self._wait_ld,
            TmemAlloc: self._tmem_alloc,
            TmemDealloc: self._tmem_dealloc,
            CtaSync: self._cta_sync,
            NamedBarrierSync: self._named_sync,
            Fence: self._fence,
            Sleep: self._sleep,
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
            self.env.run()
        return self._result()

    def _launcher(self, slots: simpy.Store) -> Iterator[simpy.Event]:
        for prog in self.schedule.ctas:
            sm = yield slots.get()
            if self.trap:
                return
            self.env.process(self._cta(prog, self.sms[sm], slots))

    def _cta(self, prog: CtaProgram, sm: SmUnits, slots: simpy.Store) -> Iterator[simpy.Event]:
        cta = _Cta(self.env, prog, sm, self.schedule)
        self.ctas.append(cta)
        procs = []
        g = 0
        for r, (role, ops) in enumerate(zip(self.schedule.roles, prog.roles)):
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
        handlers = self._handlers
        timing = self.timing
        first = w.warp == 0
        for i, op in enumerate(ops):
            if self.trap:
                return
            issuer = op.issuer
            if (issuer == "one" or issuer == "warp0") and not first:
                continue
            if timing.stalls:
                stall = timing.stall()
                if stall:
                    yield self.env.timeout(stall)
            yield from handlers[type(op)](w, i, op)
        w.done = True

    # -- helpers ---------------------------------------------------------------
    def _block(self, w: _Warp, i: int, op: Op, on: str, target: str, detail: str = "", **extra: Any) -> float:
        w.blocked = Blocked(w.cta.index, w.who, i, op.kind, self.env.now, on, target, detail,
                            tile=op.tile, k=op.k, **extra)
        return self.env.now

    def _unblock(self, w: _Warp, since: float) -> None:
        on = w.blocked.on if w.blocked else "other"
        w.blocked = None
        w.stall[on] = w.stall.get(on, 0.0) + (self.env.now - since)

    def _at(self, t: float, fn) -> None:
        """Call ``fn()`` at cycle ``t`` (no process, one event)."""
        ev = self.env.timeout(max(0.0, t - self.env.now))
        ev.callbacks.append(lambda _ev: fn())

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _access(self, w: _Warp, i: int, acc: Access, mode: str, t0: float, t1: float, tile,
                clock: tuple[int, ...]) -> int:
        """Log one buffer access; ``clock`` is the issuing warp's vector clock at issue."""
        part = w.warp if acc.part == WARP_PART else acc.part
        seq = self._next_seq()
        self.log.emit(self.env.now, "access", w.cta.index, w.who, i, buffer=acc.buffer, stage=acc.stage, part=part,
                      mode=mode, content=acc.content, t0=t0, t1=t1, tile=tile, seq=seq, clock=clock)
        return seq

    def _observe(self, w: _Warp, i: int, seqs, how: str) -> None:
        """Warp ``w`` now knows that the accesses ``seqs`` have completed."""
        if seqs:
            self.log.emit(self.env.now, "observe", w.cta.index, w.who, i, seqs=tuple(seqs), warp=w.g,
                          at=w.clock[w.g], how=how)

    def _learn_phase(self, w: _Warp, i: int, cell: _BarrierCell, clock, seqs) -> None:
        """A wait on ``cell`` succeeded having observed a phase with this knowledge."""
        join_into(w.clock, clock)
        w.tick()
        self._observe(w, i, seqs, f"wait {cell.name}")

    def _raise_trap(self, cta: _Cta, who: str, i: int, target: str, what: str, kind: str, detail: str,
                    state: MBarrierState | None) -> None:
        if self.trap:
            return
        self.trap = Trap(self.env.now, cta.index, who, i, kind, target, detail, state)
        self.log.emit(self.env.now, "trap", cta.index, who, i, ub=kind, target=target, what=what,
                      detail=detail, state=state)

    def _apply(self, cta: _Cta, who: str, i: int, cell: _BarrierCell, step: mb.Step, what: str) -> bool:
        """Install an mbarrier step: trap on undefined behaviour, wake waiters on completion."""
        if step.undefined is not None:
            self._raise_trap(cta, who, i, cell.name, what, step.undefined.kind, step.undefined.detail, cell.state)
            return False
        cell.state = step.state
        if step.phase_completed:
            state = step.state
            cell.last_clock, cell.last_seqs = cell.acc_clock, tuple(cell.acc_seqs)
            cell.acc_clock, cell.acc_seqs = None, []
            self.log.emit(self.env.now, "phase", cta.index, who, i, barrier=cell.name, completed=state.completed)
            if cell.waiters:
                parity = state.parity
                keep = []
                news = (state.completed, cell.last_clock, cell.last_seqs)
                for p, ev in cell.waiters:
                    if p != parity:
                        ev.succeed(news)
                    else:
                        keep.append((p, ev))
                cell.waiters = keep
        return True

    # -- mbarrier ops -------------------------------------------------------------
    def _mbar_init(self, w: _Warp, i: int, op: MbarInit):
        yield self.env.timeout(self.arch.mbar_init_cycles)
        cell = w.cta.barriers[op.barrier]
        self._apply(w.cta, w.who, i, cell, mb.init(cell.state, cell.count), "init")

    def _arrive_n(self, w: _Warp, i: int, op: Op, cell: _BarrierCell, threads: int, fn) -> None:
        """``threads`` separate arrive-ons (each thread's own), stopping at a trap.
        Each carries the warp's clock into the phase it lands in (release)."""
        clock = w.tick()
        for _ in range(threads):
            cell.contribute(clock)
            if not self._apply(w.cta, w.who, i, cell, fn(cell.state), op.kind):
                return

    def _arrive(self, w: _Warp, i: int, op: Arrive):
        yield self.env.timeout(self.arch.arrive_cycles)
        cell = w.cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        self.log.emit(self.env.now, "arrive", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                      count=op.count * threads, completed=cell.state.completed)
        self._arrive_n(w, i, op, cell, threads, lambda s: mb.arrive(s, op.count))

    def _expect_tx(self, w: _Warp, i: int, op: ExpectTx):
        yield self.env.timeout(self.arch.arrive_cycles)
        cell = w.cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        self.log.emit(self.env.now, "expect_tx", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                      bytes=op.bytes * threads, completed=cell.state.completed)
        for _ in range(threads):  # not an arrival: no release, no clock
            if not self._apply(w.cta, w.who, i, cell, mb.expect_tx(cell.state, op.bytes), op.kind):
                return

    def _arrive_expect_tx(self, w: _Warp, i: int, op: ArriveExpectTx):
        yield self.env.timeout(self.arch.arrive_cycles)
        cell = w.cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        now, c = self.env.now, cell.state.completed
        self.log.emit(now, "expect_tx", w.cta.index, w.who, i, barrier=op.barrier, use=op.use,
                      bytes=op.bytes * threads, completed=c)
        self.log.emit(now, "arrive", w.cta.index, w.who, i, barrier=op.barrier, use=op.use, count=threads, completed=c)
        self._arrive_n(w, i, op, cell, threads, lambda s: mb.arrive_expect_tx(s, op.bytes))

    def _wait(self, w: _Warp, i: int, op: Wait):
        env = self.env
        p = self.perturbation
        if p.skew_cycles and w.warp == p.skew_warp:
            yield env.timeout(p.skew_cycles)
        cell = w.cta.barriers[op.barrier]
        begin = env.now
        state = cell.state
        if not state.initialized:
            self._raise_trap(w.cta, w.who, i, op.barrier, "wait", "use_before_init",
                             "try_wait on an mbarrier that was never initialized", state)
            return
        c0 = state.completed
        if mb.test_wait_parity(state, op.parity):
            known = (cell.last_clock, cell.last_seqs)
            yield env.timeout(self.timing.scale(self.arch.wait_ready_cycles))
            c_ret, blocked = c0, False
        else:
            ev = env.event()
            cell.waiters.append((op.parity, ev))
            since = self._block(w, i, op, "mbarrier", op.barrier, use=op.use, parity=op.parity)
            c_ret, *known = yield ev
            self._unblock(w, since)
            yield env.timeout(self.timing.scale(self.arch.wake_cycles))
            blocked = True
        self._learn_phase(w, i, cell, *known)
        self.log.emit(env.now, "wait", w.cta.index, w.who, i, barrier=op.barrier, parity=op.parity, use=op.use,
                      begin=begin, completed_begin=c0, completed_return=c_ret, blocked=blocked,
                      tile=op.tile, k=op.k)

    # -- TMA -------------------------------------------------------------------
    def _tma_load(self, w: _Warp, i: int, op: TmaLoad):
        env, arch, timing = self.env, self.arch, self.timing
        yield env.timeout(arch.tma_issue_cycles)
        now = env.now
        hit, chip_done = self.memory.read(now, op.src or op.dst.content, op.bytes)
        sm_done = w.cta.sm.tma.serve(now, op.bytes)
        lat, base = self.latency.load(hit, op.bytes)
        land = max(now + timing.scale(lat), max(sm_done, chip_done) + timing.scale(base)) + timing.unit_stall()
        cta = w.cta
        self.log.emit(now, "issue", cta.index, w.who, i, what="tma_load", threads=1, tile=op.tile, k=op.k,
                      barrier=op.barrier, use=op.use, bytes=op.bytes, lands=land)
        clock = w.tick()
        seq = self._access(w, i, op.dst, "w", now, land, op.tile, clock)

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

    def _tma_store(self, w: _Warp, i: int, op: TmaStore):
        env, arch, timing = self.env, self.arch, self.timing
        yield env.timeout(arch.tma_issue_cycles)
        now = env.now
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
        self._async_seqs[op_id] = (self._access(w, i, op.src, "r", now, read_done, op.tile, w.tick()),)

        def finish(stage: str) -> None:
            g.groups = g.groups.complete(op_id, stage)
            g.notify()

        self._at(read_done, lambda: finish("read"))
        self._at(done, lambda: finish("done"))

    def _bulk_commit(self, w: _Warp, i: int, op: BulkCommit):
        yield self.env.timeout(self.arch.op_issue_cycles)
        self._thread_groups(w.cta.bulk, w.who).commit()

    def _wait_groups(self, w: _Warp, i: int, op: Op, g: _Groups, n: int, read: bool, on: str):
        env = self.env
        yield env.timeout(self.arch.op_issue_cycles)
        if not g.groups.wait_satisfied(n, read):
            ev = env.event()
            g.waiters.append((n, read, ev))
            since = self._block(w, i, op, on, w.who,
                                f"{g.groups.pending_groups(read)} group(s) pending, waiting for <= {n}")
            yield ev
            self._unblock(w, since)
        w.tick()
        seqs = [s for op_id in g.newly_guaranteed(n) for s in self._async_seqs.pop(op_id, ())]
        self._observe(w, i, seqs, on)

    def _bulk_wait(self, w: _Warp, i: int, op: BulkWait):
        yield from self._wait_groups(w, i, op, self._thread_groups(w.cta.bulk, w.who), op.n, op.read, "bulk_wait")

    # -- thread-driven data movement ------------------------------------------
    def _thread_copy(self, w: _Warp, i: int, op: ThreadCopy):
        env, arch = self.env, self.arch
        now = env.now
        part = w.warp if op.dst.part == WARP_PART else op.dst.part
        hit, chip_done = self.memory.read(now, f"{op.src or op.dst.content}#{part}", op.bytes)
        lsu_done = w.cta.sm.lsu.serve(now, op.bytes)
        lat = arch.global_load_l2_cycles if hit else arch.global_load_dram_cycles
        done = max(lsu_done, chip_done) + self.timing.scale(lat) + arch.smem_latency
        seq = self._access(w, i, op.dst, "w", now, done, op.tile, w.tick())
        yield env.timeout(done - now)
        w.tick()
        self._observe(w, i, (seq,), "synchronous")

    def _smem_store(self, w: _Warp, i: int, op: SmemStore):
        env = self.env
        now = env.now
        done = w.cta.sm.smem.serve(now, op.bytes) + self.arch.smem_latency
        seq = self._access(w, i, op.dst, "w", now, done, op.tile, w.tick())
        yield env.timeout(done - now)
        w.tick()
        self._observe(w, i, (seq,), "synchronous")

    def _global_store(self, w: _Warp, i: int, op: GlobalStore):
        # Stores retire asynchronously; the warp pays only for pushing bytes into the LSU.
        now = self.env.now
        self.memory.write(now, op.bytes)
        yield self.env.timeout(w.cta.sm.lsu.serve(now, op.bytes) - now)

    # -- MMA -------------------------------------------------------------------
    def _mma(self, w: _Warp, i: int, op: Mma):
        env, arch = self.env, self.arch
        occupancy, insts = arch.mma_cycles(op.m, op.n, op.k_elems)
        yield env.timeout(arch.mma_thread_issue_cycles * insts)
        now = env.now
        start, free, done = w.cta.sm.mma.submit(now, occupancy, self.timing.scale(arch.mma_tail_cycles) + self.timing.unit_stall())
        key = w.who
        if done > w.cta.mma_last_done.get(key, 0.0):
            w.cta.mma_last_done[key] = done
        self.log.emit(now, "issue", w.cta.index, w.who, i, what="mma", threads=THREADS[op.issuer], tile=op.tile, k=op.k)
        clock = w.tick()
        seqs = [self._access(w, i, acc, "r", start, free, op.tile, clock) for acc in op.reads]
        seqs += [self._access(w, i, acc, "w", start, done, op.tile, clock) for acc in op.writes]
        w.cta.mma_uncommitted.setdefault(key, []).extend(seqs)

    def _mma_commit(self, w: _Warp, i: int, op: MmaCommit):
        env = self.env
        yield env.timeout(self.arch.op_issue_cycles)
        cta = w.cta
        when = max(env.now, cta.mma_last_done.get(w.who, 0.0))
        self.log.emit(env.now, "issue", cta.index, w.who, i, what="mma_commit", threads=THREADS[op.issuer],
                      tile=op.tile, k=op.k, barrier=op.barrier, use=op.use)
        clock = w.tick()
        covered = tuple(cta.mma_uncommitted.pop(w.who, ()))

        def arrive() -> None:
            if self.trap:
                return
            cell = cta.barriers[op.barrier]
            cell.contribute(clock, covered)
            self.log.emit(env.now, "arrive", cta.index, "mma", i, barrier=op.barrier, use=op.use, count=1,
                          completed=cell.state.completed, who_issued=w.who)
            self._apply(cta, "mma", i, cell, mb.arrive(cell.state, 1), "tcgen05.commit")

        self._at(when, arrive)

    def _wgmma(self, w: _Warp, i: int, op: Wgmma):
        """``.sync.aligned``: the MMA starts once every warp of the role has issued it."""
        env, arch = self.env, self.arch
        occupancy, insts = arch.mma_cycles(op.m, op.n, op.k_elems)
        yield env.timeout(arch.mma_thread_issue_cycles * insts)
        cta = w.cta
        key = (w.role, i)
        rv = cta.rendezvous.get(key)
        if rv is None:
            rv = cta.rendezvous[key] = [0, env.event(), None]
        rv[0] += 1
        if rv[0] < w.warps:
            since = self._block(w, i, op, "wgmma_issue", f"{w.role_name} wgmma #{i}")
            yield rv[1]
            self._unblock(w, since)
        else:
            del cta.rendezvous[key]
            now = env.now
            start, free, done = cta.sm.mma.submit(now, occupancy, self.timing.scale(arch.mma_tail_cycles) + self.timing.unit_stall())
            self._async_id += 1
            op_id = self._async_id
            self.log.emit(now, "issue", cta.index, w.who, i, what="wgmma", threads=32 * w.warps, tile=op.tile, k=op.k)
            clock = w.tick()
            seqs = [self._access(w, i, acc, "r", start, free, op.tile, clock) for acc in op.reads]
            seqs += [self._access(w, i, acc, "w", start, done, op.tile, clock) for acc in op.writes]
            members = [f"{w.role_name}.w{j}" for j in range(w.warps)]
            self._async_seqs[op_id] = tuple(seqs)

            def finish() -> None:
                for who in members:
                    g = self._thread_groups(cta.wgmma, who)
                    g.groups = g.groups.complete(op_id, "done")
                    g.notify()

            self._at(done, finish)
            for who in members:  # every warp of the group now tracks it
                self._thread_groups(cta.wgmma, who).issue(op_id)
            rv[1].succeed(op_id)

    def _wgmma_commit(self, w: _Warp, i: int, op: WgmmaCommit):
        yield self.env.timeout(self.arch.op_issue_cycles)
        self._thread_groups(w.cta.wgmma, w.who).commit()

    def _wgmma_wait(self, w: _Warp, i: int, op: WgmmaWait):
        # The seqs of a wgmma are shared by the warps of its group: each warp's wait
        # observes them, so they stay in the table (get, not pop).
        g = self._thread_groups(w.cta.wgmma, w.who)
        env = self.env
        yield env.timeout(self.arch.op_issue_cycles)
        if not g.groups.wait_satisfied(op.n, False):
            ev = env.event()
            g.waiters.append((op.n, False, ev))
            since = self._block(w, i, op, "wgmma_wait", w.who,
                                f"{g.groups.pending_groups(False)} group(s) pending, waiting for <= {op.n}")
            yield ev
            self._unblock(w, since)
        w.tick()
        seqs = [s for op_id in g.newly_guaranteed(op.n) for s in self._async_seqs.get(op_id, ())]
        self._observe(w, i, seqs, "wgmma_wait")

    # -- TMEM ------------------------------------------------------------------
    def _tmem_load(self, w: _Warp, i: int, op: TmemLoad):
        env, arch = self.env, self.arch
        yield env.timeout(arch.op_issue_cycles)
        now = env.now
        done = now + self.timing.scale(arch.tmem_load_latency) + op.bytes / arch.tmem_bytes_per_clk
        w.tmem_done = max(w.tmem_done, done)
        w.tmem_seqs.append(self._access(w, i, op.src, "r", now, done, op.tile, w.tick()))

    def _wait_ld(self, w: _Warp, i: int, op: WaitLd):
        env = self.env
        if w.tmem_done > env.now:
            since = self._block(w, i, op, "wait_ld", w.who)
            yield env.timeout(w.tmem_done - env.now)
            self._unblock(w, since)
        else:
            yield env.timeout(self.arch.op_issue_cycles)
        w.tick()
        self._observe(w, i, w.tmem_seqs, "wait_ld")
        w.tmem_seqs = []

    def _tmem_alloc(self, w: _Warp, i: int, op: TmemAlloc):
        env, arch = self.env, self.arch
        if not arch.has_tmem:
            self._raise_trap(w.cta, w.who, i, "tmem", "tcgen05.alloc", "unsupported",
                             f"tcgen05.alloc on {arch.name} ({arch.target}), which has no Tensor Memory", None)
            return
        yield env.timeout(arch.tmem_alloc_cycles)
        sm = w.cta.sm
        if sm.tmem_free < op.columns:
            ev = env.event()
            sm.tmem_waiters.append((op.columns, ev))
            since = self._block(w, i, op, "tmem_alloc", f"tmem@sm{sm.index}", f"{sm.tmem_free} columns free")
            yield ev
            self._unblock(w, since)
        else:
            sm.tmem_free -= op.columns
        w.cta.tmem_held += op.columns

    def _tmem_return(self, sm: SmUnits, columns: int) -> None:
        sm.tmem_free += columns
        while sm.tmem_waiters and sm.tmem_waiters[0][0] <= sm.tmem_free:
            cols, ev = sm.tmem_waiters.pop(0)
            sm.tmem_free -= cols
            ev.succeed()

    def _tmem_dealloc(self, w: _Warp, i: int, op: TmemDealloc):
        yield self.env.timeout(self.arch.op_issue_cycles)
        cols = min(op.columns, w.cta.tmem_held)
        w.cta.tmem_held -= cols
        self._tmem_return(w.cta.sm, cols)

    # -- bar.sync, fences, sleeps --------------------------------------------------
    def _bar_sync(self, w: _Warp, i: int, op: Op, barrier_id: int, threads: int):
        env = self.env
        cta = w.cta
        sp = cta.syncs.get(barrier_id)
        if sp is None:
            sp = cta.syncs[barrier_id] = _SyncPoint(env, threads, cta.width)
        sp.arrived += 32
        join_into(sp.clock, w.tick())
        if sp.arrived >= sp.target:
            ev = sp.event
            cta.syncs[barrier_id] = _SyncPoint(env, threads, cta.width)
            ev.succeed()
        else:
            since = self._block(w, i, op, "bar.sync", f"bar {barrier_id}",
                                f"{sp.arrived} of {sp.target} threads arrived")
            yield sp.event
            self._unblock(w, since)
        join_into(w.clock, sp.clock)
        w.tick()
        yield env.timeout(self.arch.cta_sync_cycles)

    def _cta_sync(self, w: _Warp, i: int, op: CtaSync):
        yield from self._bar_sync(w, i, op, CTA_SYNC_ID, self.schedule.threads_per_cta)

    def _named_sync(self, w: _Warp, i: int, op: NamedBarrierSync):
        yield from self._bar_sync(w, i, op, op.barrier_id, op.threads)

    def _fence(self, w: _Warp, i: int, op: Fence):
        yield self.env.timeout(self.arch.fence_cycles)

    def _sleep(self, w: _Warp, i: int, op: Sleep):
        if op.warp is None or op.warp == w.warp:
            yield self.env.timeout(op.cycles)

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
        for w in self.warps:
            stats.warps[w.role_name] = stats.warps.get(w.role_name, 0) + 1
            per = stats.stall.setdefault(w.role_name, {})
            for on, cycles in w.stall.items():
                per[on] = per.get(on, 0.0) + cycles
            if w.blocked is not None and not w.done:
                b = w.blocked
                detail = b.detail
                if b.on == "mbarrier":
                    st = w.cta.barriers[b.target].state
                    detail = (f"phase {st.completed} (parity {st.parity}) in flight: pending {st.pending}/"
                              f"{w.cta.barriers[b.target].count}, tx {st.tx}")
                blocked.append(Blocked(b.cta, b.who, b.op, b.op_kind, b.since, b.on, b.target, detail,
                                       b.tile, b.k, b.use, b.parity))
                per = stats.stall[w.role_name]
                per[b.on] = per.get(b.on, 0.0) + (self.env.now - b.since)
        barriers = {(c.index, name): cell.state for c in self.ctas for name, cell in c.barriers.items()}
        end = self.trap.t if self.trap else self.env.now
        return RunResult(
            schedule=self.schedule,
            arch=self.arch,
            perturbation=self.perturbation,
            log=self.log,
            end_cycle=end,
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
