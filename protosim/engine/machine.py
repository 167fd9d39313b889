"""Replay a schedule on a SimPy model of the GPU and write one event log.

The :class:`Machine` launches the schedule's CTAs onto SMs as slots free up
(occupancy from shared memory and threads), runs one SimPy process per warp,
and interprets each op in program order by handing it to the unit that executes it
(:mod:`protosim.engine.units`: one module per unit, each registering its op
classes).  Time passes only in the engine; every rule of protocol semantics is
delegated to the pure state machines in :mod:`protosim.ptx`.  The engine knows no
bug: it records what happened (waits, arrivals, byte completions, buffer accesses,
issues, traps) and leaves every judgement to the checkers.

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

This module holds what every unit shares: the launch, the interpreter loop, and the
few services units call (:meth:`Machine.block`, :meth:`Machine.access`,
:meth:`Machine.observe`, :meth:`Machine.at`, :meth:`Machine.raise_trap`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import simpy

from protosim.arch import ArchProfile, load_profile
from protosim.engine import resolve
from protosim.engine.environment import ReplayEnvironment
from protosim.engine.issue import stretched, subpartition
from protosim.engine.log import ABSENT, AccessEvent, EventLog, ObserveEvent
from protosim.engine.perturb import Perturbation, Perturber
from protosim.engine.resources import LatencyTables, MemorySystem, SmUnits, l2_resident, launch_l2_bytes, read_tpcs
from protosim.engine.result import Blocked, RunResult, Trap, UnitStats, merged_spans
from protosim.engine.state import CtaState, WarpState
from protosim.engine.units import UNITS, MBarrierUnit, SyncUnit, Unit
from protosim.ints import indices
from protosim.gcpause import gc_paused
from protosim.ir import Access, CtaProgram, Op, Schedule
from protosim.ptx.mbarrier import MBarrierState


class Machine:
    """One replay of ``schedule`` on ``arch`` under ``perturbation``."""

    def __init__(self, schedule: Schedule, arch: ArchProfile | None = None, perturbation: Perturbation | None = None):
        self.schedule = schedule
        self.arch = arch or load_profile(schedule.arch)
        self.perturbation = perturbation or Perturbation.none()
        self.timing = Perturber(self.perturbation)
        self.env = ReplayEnvironment()
        self.log = EventLog()
        readers = read_tpcs(schedule, self.arch) if schedule.l2_at_launch == "inputs" else None
        self.memory = MemorySystem(self.arch, l2_resident(schedule, self.arch, readers), readers,
                                   launch_l2_bytes(schedule, self.arch))
        self.latency = LatencyTables(self.arch)
        self.sms: dict[int, SmUnits] = {}
        """The SMs a CTA was placed on, by index: made on first use (a 1-CTA replay need not build 148)."""
        self.trap: Trap | None = None
        self.warps: list[WarpState] = []
        self.ctas: list[CtaState] = []
        self.finished = 0
        self._seq = 0
        self._observed: tuple = ()
        """The seqs of the last observation logged (:meth:`observe` shares equal ones)."""
        self.tensor_spans: list[list[float]] = []
        """[start, end] of every wgmma block's time on a tensor core (the tensor core unit keeps
        them up to date): when the chip runs at its tensor clock (:mod:`protosim.clock`)."""
        self.tensor_flops = 0.0
        """The wgmma work done: how loaded the chip's tensor clock runs (:mod:`protosim.clock`)."""
        self.units: list[Unit] = [unit(self) for unit in UNITS]
        self.mbarrier: MBarrierUnit = next(u for u in self.units if isinstance(u, MBarrierUnit))
        """The unit every arrival goes through, whichever unit makes it (TMA's complete_tx, tcgen05.commit)."""
        self.sync: SyncUnit | None = (next(u for u in self.units if isinstance(u, SyncUnit))
                                      if schedule.cluster > 1 else None)
        """Told when a warp exits, in a cluster (an exited thread counts as arrived at barrier.cluster)."""
        self.issue_share = 0.0
        """What another CTA's working warp adds to a warp's local work on its sub-partition (set by
        :meth:`run` where an SM can hold more than one CTA: a lone CTA's costs are the profile's own)."""
        self._local: dict[type[Op], Any] = {}
        self._specs: dict[type[Op], Any] = {}
        for u in self.units:
            self._local.update(u.local())
            self._specs.update(u.handlers())

    # -- running ---------------------------------------------------------------
    def occupancy(self) -> int:
        """CTAs per SM: limited by threads, shared memory, the CTA slot count and, where the
        schedule states its registers per thread, the register file."""
        a, s = self.arch, self.schedule
        smem = smem_bytes(s) + a.smem_reserved_per_cta_bytes
        fit = min(a.max_ctas_per_sm, a.max_threads_per_sm // s.threads_per_cta, a.smem_per_sm_bytes // smem)
        if s.regs_per_thread:
            fit = min(fit, a.regs_per_sm // regs_per_cta(s, a))
        return max(0, fit)

    def run(self) -> RunResult:
        a, s = self.arch, self.schedule
        need = smem_bytes(s)
        per_sm = self.occupancy()
        if per_sm > 1 and (s.cluster > 1 or len(s.ctas) > a.sm_count):
            # Only then can two CTAs be on one SM at once: SmSlots gives the first sm_count CTAs an
            # SM each (ClusterSlots fills a GPC's slots before the next GPC's, so it may double up).
            self.issue_share = a.issue_share_per_warp
        if need > a.smem_per_cta_bytes or s.threads_per_cta > a.max_threads_per_cta or per_sm == 0:
            regs = (f" and {regs_per_cta(s, a)} registers ({s.regs_per_thread} per thread; {a.regs_per_sm} per SM)"
                    if s.regs_per_thread else "")
            self.trap = Trap(0.0, 0, "launch", -1, "launch_failure", "launch",
                             f"CTA needs {need} B shared memory (max {a.smem_per_cta_bytes}) "
                             f"and {s.threads_per_cta} threads (max {a.max_threads_per_cta}){regs}")
            self.log.emit(0.0, "trap", 0, "launch", -1, ub="launch_failure", target="launch", what="launch",
                          detail=self.trap.detail)
        elif s.cluster > max(a.gpc_sms) * per_sm:
            self.trap = Trap(0.0, 0, "launch", -1, "launch_failure", "launch",
                             f"a cluster of {s.cluster} CTAs at {per_sm} CTA(s) per SM does not fit in any GPC "
                             f"(at most {max(a.gpc_sms)} SMs each)")
            self.log.emit(0.0, "trap", 0, "launch", -1, ub="launch_failure", target="launch", what="launch",
                          detail=self.trap.detail)
        elif s.cluster > 1:
            self.env.process(self._cluster_launcher(ClusterSlots(self.env, a, per_sm)))
            with gc_paused():
                self.env.run()
        else:
            # each exit draws its own turnover (a perturbed replay jitters it as every latency)
            turnover = lambda: self.timing.scale(a.cta_turnover_cycles)  # noqa: E731
            self.env.process(self._launcher(SmSlots(self.env, a, per_sm, turnover, len(s.ctas))))
            with gc_paused():
                self.env.run()
        result = self._result()
        # Bound methods in the dispatch tables and the environment's processes refer back
        # to the machine: drop them so reference counting frees the run without a full
        # collection (which, after a large replay, costs seconds).
        self._specs = self._local = None
        self.units = self.mbarrier = self.sync = None
        self.env = self.warps = self.ctas = None
        # Units keep a reference to the machine (a cycle the collector must find): drop what
        # the result now owns, so that the log is freed with the result, not at the next
        # full collection (716k objects, ~1 s, after a 148-CTA replay at K=1024).
        self.log = self.sms = self.memory = None
        return result

    def _launcher(self, slots: SmSlots) -> Iterator[simpy.Event]:
        """Place CTAs one by one as SM slots free up."""
        for prog in self.schedule.ctas:
            sm, free_from = yield slots.get()
            if self.trap:
                return
            if free_from > self.env.now:  # the slot's last CTA has not finished leaving yet
                self.env.process(self._start_later(free_from - self.env.now, prog, sm, slots))
            else:
                self._start([prog], [sm], slots)

    def _start_later(self, delay: float, prog: CtaProgram, sm: int, slots: SmSlots) -> Iterator[simpy.Event]:
        yield simpy.Timeout(self.env, delay)  # not env.timeout: its resume starts a process (engine.environment)
        if not self.trap:
            self._start([prog], [sm], slots)

    def _cluster_launcher(self, slots: ClusterSlots) -> Iterator[simpy.Event]:
        """Place clusters in order, each once one GPC has a slot for every CTA of it (the
        hardware co-schedules a cluster within a GPC: all its CTAs start, or none)."""
        for members in clusters(self.schedule):
            sms = slots.take(len(members))
            while sms is None:
                yield slots.freed()
                if self.trap:
                    return
                sms = slots.take(len(members))
            self._start(members, sms, slots)

    def _start(self, members: list[CtaProgram], sms: list[int], slots) -> None:
        ctas = [CtaState(prog, self._sm(sm), self.schedule) for prog, sm in zip(members, sms, strict=True)]
        for cta in ctas:
            if len(ctas) > 1:
                cta.peers = ctas
            self.ctas.append(cta)
            for u in self.units:
                u.cta_started(cta)
        for cta, prog in zip(ctas, members, strict=True):
            self.env.process(self._cta(cta, prog, slots))

    def _sm(self, index: int) -> SmUnits:
        sm = self.sms.get(index)
        if sm is None:
            sm = self.sms[index] = SmUnits(index, self.arch)
        return sm

    def _cta(self, cta: CtaState, prog: CtaProgram, slots: SmSlots | ClusterSlots) -> Iterator[simpy.Event]:
        procs = []
        warps = []
        g = cta.base
        for r, (role, ops) in enumerate(zip(self.schedule.roles, prog.roles, strict=True)):
            for w in range(role.warps):
                warp = WarpState(cta, r, role.name, w, role.warps, g)
                g += 1
                self.warps.append(warp)
                warps.append(warp)
                procs.append(self.env.process(self._warp(warp, ops)))
        yield simpy.AllOf(self.env, procs)
        cta.exited = self.env.now
        if len(cta.peers) > 1:
            # A cluster CTA's storage is reachable from its peers: its exit is an event the
            # lifetime checker orders their accesses against (what its warps knew by then).
            clock = [0] * cta.width
            for w in warps:
                clock = list(map(max, clock, w.clock))
            self.log.emit(self.env.now, "cta_exit", cta.index, "cta", -1, rank=cta.rank, clock=tuple(clock))
        for u in self.units:
            u.cta_finished(cta)
        self.finished += 1
        slots.put(cta.sm.index)

    def _warp(self, w: WarpState, ops: tuple[Op, ...]) -> Iterator[simpy.Event]:
        """Run one warp's program: the interpreter loop (kept flat: it is the hot path).
        The two handler shapes are described in :mod:`protosim.engine.units.base`."""
        env, specs, local = self.env, self._specs, self._local
        timing = self.timing
        stalls = timing.stalls
        first = w.warp == 0
        share = self.issue_share
        for i, op in zip(indices(len(ops)), ops):  # shared ints (protosim.ints)
            if self.trap:
                return
            issuer = op.issuer
            if not first and (issuer == "one" or issuer == "warp0"):
                continue
            if stalls:
                stall = timing.stall()
                w.debt += stall
                w.idle += stall
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
                if share:
                    yield from self._pay_shared(w, d)
                else:
                    yield env.timeout(d)
                if self.trap:
                    return
            ev = begin(w, i, op)
            if ev is not None:
                value = yield ev
                if finish is not None:
                    finish(w, i, op, value)
        if w.debt:
            d = w.debt
            w.debt = 0.0
            if share:
                yield from self._pay_shared(w, d)
            else:
                yield env.timeout(d)
        w.done = True
        if self.sync is not None:
            self.sync.warp_exited(w)

    def _pay_shared(self, w: WarpState, cycles: float) -> Iterator[simpy.Event]:
        """Pay ``cycles`` of ``w``'s local work on its sub-partition, stretched by the other CTAs'
        warps working there as it starts (:mod:`protosim.engine.issue`)."""
        idle = min(w.idle, cycles)  # what the warp sleeps or stalls issues nothing: not stretched
        w.idle = 0.0
        if idle == cycles:  # nothing to issue: the warp takes no one's slots
            yield self.env.timeout(cycles)
            return
        sm_working, own = w.cta.sm.working, w.cta.working
        sp = subpartition(w.g - w.cta.base, len(own))
        others = sm_working[sp] - own[sp]
        sm_working[sp] += 1
        own[sp] += 1
        yield self.env.timeout(stretched(cycles - idle, others, self.issue_share) + idle)
        sm_working[sp] -= 1
        own[sp] -= 1

    # -- services for the units ------------------------------------------------
    def block(self, w: WarpState, i: int, op: Op, on: str, target: str, detail: str = "",
              use: int | None = None, parity: int | None = None) -> None:
        """Warp ``w`` is about to wait at op ``i`` on ``on`` (``mbarrier``, ``bar.sync``, ...)."""
        w.blocked = (i, op, on, target, detail, self.env.now, use, parity)

    def unblocked(self, w: WarpState, i: int = -1, op: Op | None = None, value: Any = None) -> None:
        """Warp ``w`` got past what it was blocked on: its stall time is counted."""
        _, _, on, _, _, since, _, _ = w.blocked
        w.blocked = None
        w.stall[on] = w.stall.get(on, 0.0) + (self.env.now - since)

    def at(self, t: float, fn) -> None:
        """Call ``fn()`` at cycle ``t`` (no process, one event)."""
        ev = self.env.timeout(max(0.0, t - self.env.now))
        ev.callbacks.append(lambda _ev: fn())

    def access(self, w: WarpState, i: int, acc: Access, mode: str, t0: float, t1: float, tile,
               clock: tuple[int, ...], lanes: int = 1, mma: str | None = None) -> int:
        """Log one buffer access; ``clock`` is the issuing warp's vector clock at issue,
        ``lanes`` how many of its lanes executed the op, ``mma`` the issuing thread of an MMA."""
        part = resolve.part(w, acc)
        self._seq += 1
        if acc.cta is not None or acc.columns is not None:
            # A cluster peer's buffer (``owner``: whose storage it is) or a TMEM column range.
            extra = (mma, resolve.owner(w, acc).index, acc.columns)
        else:
            extra = (ABSENT if mma is None else mma, ABSENT, ABSENT)
        self.log.events.append(_new(AccessEvent, (self.env.now, "access", w.cta.index, w.who, i, acc.buffer, acc.stage,
                                                  part, mode, acc.content, t0, t1, tile, self._seq, clock, lanes,
                                                  *extra)))
        return self._seq

    def observe(self, w: WarpState, i: int, seqs, how: str, t: float | None = None) -> None:
        """Warp ``w`` now knows that the accesses ``seqs`` have completed."""
        if seqs:
            seqs = tuple(seqs)
            if seqs == self._observed:
                # the warps of a warpgroup observe the same completions one after another (a
                # wgmma wait_group): one tuple for them all (267 k observations at 4096^3, ~11 MB)
                seqs = self._observed
            else:
                self._observed = seqs
            self.log.events.append(_new(ObserveEvent, (self.env.now if t is None else t, "observe", w.cta.index, w.who,
                                                       i, seqs, w.g, w.clock[w.g], how)))

    def raise_trap(self, cta: CtaState, who: str, i: int, target: str, what: str, kind: str, detail: str,
                   state: MBarrierState | None) -> None:
        """Undefined behaviour: the kernel dies here (the first trap wins)."""
        if self.trap:
            return
        self.trap = Trap(self.env.now, cta.index, who, i, kind, target, detail, state)
        self.log.emit(self.env.now, "trap", cta.index, who, i, ub=kind, target=target, what=what,
                      detail=detail, state=state)

    # -- result ----------------------------------------------------------------
    def _result(self) -> RunResult:
        stats = UnitStats()
        for _, sm in sorted(self.sms.items()):  # SM order (float sums); an SM no CTA was placed on adds nothing
            stats.tma_busy += sm.tma.busy
            stats.mma_busy += sm.mma.busy
            stats.lsu_busy += sm.lsu.busy
            if sm.tma.busy or sm.mma.busy or sm.lsu.busy or sm.stores.busy:
                stats.sms_used += 1
        stats.l2_busy = self.memory.l2_pipe.busy
        stats.hbm_busy = self.memory.hbm_pipe.busy
        stats.l2_hits, stats.l2_misses = self.memory.hits, self.memory.misses
        stats.tensor_spans = merged_spans(self.tensor_spans)
        stats.tensor_flops = self.tensor_flops
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
                    cell = resolve.barrier(w.cta, target)
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


class SmSlots:
    """Free CTA slots, one CTA at a time: every SM once, then each again, ...  A slot a CTA left
    is free again ``turnover()`` cycles after its exit (``cta_turnover_cycles``): :meth:`get`
    gives ``(SM, free from)``.  Only the first ``ctas`` free slots are listed: a launch of
    ``ctas`` CTAs takes the k-th listed slot for its k-th CTA while any is left (a slot given
    back goes to the end), so the rest are never reached -- and a one-CTA replay need not
    list 132 x 32 of them."""

    def __init__(self, env: simpy.Environment, arch: ArchProfile, per_sm: int, turnover: Callable[[], float],
                 ctas: int):
        self.env = env
        self.turnover = turnover
        self._store = simpy.Store(env)
        n, sms = min(ctas, arch.sm_count * per_sm), arch.sm_count
        self._store.items.extend((i % sms, 0.0) for i in range(n))

    def get(self) -> simpy.Event:
        return self._store.get()

    def put(self, sm: int) -> None:
        self._store.put((sm, self.env.now + self.turnover()))


class ClusterSlots:
    """Free CTA slots per SM, handed out a whole cluster at a time within one GPC
    (``ArchProfile.gpc_sms``): the first GPC, in SM order, with a slot for every CTA of the
    cluster, its SMs with the most free slots first.  (No turnover: not measured for clusters.)"""

    def __init__(self, env: simpy.Environment, arch: ArchProfile, per_sm: int):
        self.env = env
        self.free = [per_sm] * arch.sm_count
        self.gpcs = arch.gpcs()
        self._freed: simpy.Event | None = None

    def take(self, n: int) -> list[int] | None:
        for gpc in self.gpcs:
            if sum(self.free[sm] for sm in gpc) < n:
                continue
            picked: list[int] = []
            while len(picked) < n:
                sm = max(gpc, key=lambda i: self.free[i])  # spread over SMs before doubling up
                self.free[sm] -= 1
                picked.append(sm)
            return picked
        return None

    def put(self, sm: int) -> None:
        self.free[sm] += 1
        if self._freed is not None and not self._freed.triggered:
            self._freed.succeed()

    def freed(self) -> simpy.Event:
        """An event that fires at the next slot freed."""
        self._freed = self.env.event()
        return self._freed


_new = tuple.__new__  # an event record without a Python-level constructor call (hot path)


def clusters(s: Schedule) -> list[list[CtaProgram]]:
    """The schedule's CTAs grouped into clusters (by ``index // cluster``), each by rank,
    in the order the clusters first appear."""
    if s.cluster == 1:
        return [[prog] for prog in s.ctas]
    groups: dict[int, list[CtaProgram]] = {}
    for prog in s.ctas:
        groups.setdefault(prog.index // s.cluster, []).append(prog)
    return [sorted(g, key=lambda p: p.index % s.cluster) for g in groups.values()]


def regs_per_cta(s: Schedule, a: ArchProfile) -> int:
    """Registers a CTA holds: each warp's ``regs_per_thread * 32`` rounded up to the allocation
    unit (CUDA Occupancy Calculator: per-warp granularity)."""
    per_warp = -(-s.regs_per_thread * 32 // a.reg_alloc_unit) * a.reg_alloc_unit
    return per_warp * (s.threads_per_cta // 32)


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
