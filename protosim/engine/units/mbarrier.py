"""mbarrier ops: init, arrive, expect_tx, arrive.expect_tx and the parity wait.

The rules (when a phase completes, what is undefined) are the pure state machine of
:mod:`protosim.ptx.mbarrier`; this unit applies its steps to a CTA's barrier cells at
the replay's cycle, wakes waiters, and carries happens-before: every arrival joins the
arriving warp's clock into the phase in progress, and a wait that passes learns what
the phase it observed carried.  :meth:`MBarrierUnit.apply` is the one place a step is
installed -- the TMA unit's ``complete_tx`` and the tensor core's ``tcgen05.commit``
arrive through it too.
"""

from __future__ import annotations

import simpy

from protosim.engine import resolve
from protosim.engine.environment import WaiterWakeup
from protosim.engine.log import ABSENT, ArriveEvent, ExpectTxEvent, PhaseEvent, WaitEvent
from protosim.engine.order import join_into
from protosim.engine.state import THREADS, BarrierCell, CtaState, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.ir import Arrive, ArriveExpectTx, ExpectTx, MbarInit, MbarInval, Op, Wait
from protosim.ptx import mbarrier as mb

_new = tuple.__new__  # event records without a Python-level constructor call (hot path)


class MBarrierUnit(Unit):
    name = "mbarrier"

    def __init__(self, machine):
        super().__init__(machine)
        self.wait_began: dict[WarpState, int] = {}
        """Phases a barrier had completed when a warp's blocked wait began."""

    def handlers(self) -> dict[type[Op], Handler]:
        a = self.arch
        arrive_cost = lambda w, op: a.arrive_cycles  # noqa: E731
        return {
            MbarInit: Handler(lambda w, op: a.mbar_init_cycles, self.init),
            MbarInval: Handler(lambda w, op: a.mbar_init_cycles, self.inval),
            Arrive: Handler(arrive_cost, self.arrive),
            ExpectTx: Handler(arrive_cost, self.expect_tx),
            ArriveExpectTx: Handler(arrive_cost, self.arrive_expect_tx),
            # Without a skew or an address to compute a wait has no cost before probing: skip the call.
            Wait: Handler(self.wait_cost if self.m.perturbation.skew_cycles or a.wait_address_cycles else None,
                          self.wait, self.wait_woken),
        }

    # -- installing a step ---------------------------------------------------------
    def apply(self, cta: CtaState, who: str, i: int, cell: BarrierCell, step: mb.Step, what: str) -> bool:
        """Install an mbarrier step: trap on undefined behaviour (or, where the replay tolerates
        it as silicon did, log it and install the state silicon showed), wake waiters on completion."""
        m = self.m
        u = step.undefined
        if u is not None:
            if u.after is None or not m.perturbation.tolerate_ub or u.kind not in mb.SILICON_TOLERATED_UB:
                m.raise_trap(cta, who, i, cell.name, what, u.kind, u.detail, cell.state)
                return False
            m.log.emit(m.env.now, "ub", cta.index, who, i, ub=u.kind, target=cell.name, what=what,
                       detail=u.detail, state=cell.state, after=u.after)
            cell.state = u.after  # no phase completes; a re-init may flip the parity under waiters
            self.wake(cell)
            return True
        cell.state = step.state
        if step.phase_completed:
            cell.last_clock, cell.last_seqs = cell.acc_clock, tuple(cell.acc_seqs)
            cell.last_upto = tuple(cell.acc_upto.items()) if cell.acc_upto else ()
            cell.acc_clock, cell.acc_seqs = None, []
            if cell.acc_upto:
                cell.acc_upto = {}
            cell.completed_by = None  # a warp's own arrive sets it again (``arrive``)
            m.log.events.append(_new(PhaseEvent, (m.env.now, "phase", cta.index, who, i, cell.name, step.state.completed)))
            self.wake(cell, what)
        return True

    def wake(self, cell: BarrierCell, what: str = "") -> None:
        """Wake the waiters whose parity now tests complete, with the last phase's news:
        ``wake_cycles`` after the completion, or ``tma_landing_wake_cycles`` after a TMA load's
        landing (``what`` ``complete_tx``), whose latency tables are measured to a waiter's return."""
        if cell.waiters:
            parity = cell.state.parity
            keep = []
            news = cell.news()
            a = self.arch
            wake = self.m.timing.scale(a.tma_landing_wake_cycles if what == "complete_tx" else a.wake_cycles)
            for p, ev in cell.waiters:
                if p != parity:
                    ev.fire_in(wake, news)
                else:
                    keep.append((p, ev))
            cell.waiters = keep

    # -- ops -----------------------------------------------------------------------
    def init(self, w: WarpState, i: int, op: MbarInit) -> None:
        cell = resolve.barrier(w.cta, op.barrier)
        self.apply(w.cta, w.who, i, cell, mb.init(cell.state, cell.count), "init")
        if len(w.cta.peers) > 1:  # peers may use it: the cluster checker orders their ops after this
            m = self.m
            m.log.emit(m.env.now, "init", w.cta.index, w.who, i, barrier=op.barrier, warp=w.g, at=w.tick()[w.g])

    def inval(self, w: WarpState, i: int, op: MbarInval) -> None:
        cell = resolve.barrier(w.cta, op.barrier)
        self.apply(w.cta, w.who, i, cell, mb.inval(cell.state), "inval")

    def _arrive_n(self, w: WarpState, i: int, op: Op, cta: CtaState, cell: BarrierCell, threads: int, fn,
                  clock: tuple[int, ...], writes: tuple[int, ...]) -> None:
        """``threads`` separate arrive-ons (each thread's own) on ``cta``'s ``cell``, stopping at
        a trap.  Each carries the warp's clock at issue into the phase it lands in (release).
        When every lane arrives, each releases its own stores: together, the stores all lanes
        made since their last warp sync (``writes``) travel with the phase; one elected lane's
        arrive carries none of them (the arrive event lists them as ``unreleased``)."""
        if writes:
            cell.contribute(clock, writes)
        else:
            cell.contribute(clock)  # every thread of this warp carries the same clock
        for _ in range(threads):
            if not self.apply(cta, w.who, i, cell, fn(cell.state), op.kind):
                return

    def _log_arrive(self, w: WarpState, i: int, op: Op, cta: CtaState, cell: BarrierCell, count: int,
                    threads: int, clock: tuple[int, ...] = ()) -> None:
        """The arrive event, in the barrier's CTA (``from_cta``: the arriving warp's, when it is a
        cluster peer's); a single lane's arrive lists the lane writes it does not release."""
        m = self.m
        remote = (ABSENT, ABSENT) if cta is w.cta else (w.cta.index, clock)
        if threads == 1 and w.lane_writes:
            unreleased, count = tuple(w.lane_writes.values()), count
        else:
            unreleased, count = ABSENT, count * threads
        m.log.events.append(_new(ArriveEvent, (m.env.now, "arrive", cta.index, w.who, i, op.barrier, op.use, count,
                                               cell.state.completed, unreleased, ABSENT, ABSENT, *remote)))

    def _at(self, w: WarpState, cta: CtaState, act) -> None:
        """Run ``act`` on ``cta``'s barrier: now if it is the warp's own CTA, else after the cluster
        network's latency (an ``mbarrier.arrive.shared::cluster`` on a peer travels to its SM)."""
        if cta is w.cta:
            act()
            return
        m = self.m
        lands = m.env.now + m.timing.scale(self.arch.remote_arrive_cycles)
        if lands > w.remote_until:
            w.remote_until = lands
        m.at(lands, lambda: None if m.trap else act())

    def arrive(self, w: WarpState, i: int, op: Arrive) -> None:
        threads = THREADS[op.issuer]
        clock = w.tick()
        writes = tuple(w.lane_writes.values()) if threads > 1 and w.lane_writes else ()
        if op.cta is None:  # the hot path: the warp's own barrier, now
            cell = w.cta.barriers[op.barrier]
            self._log_arrive(w, i, op, w.cta, cell, op.count, threads)
            before = cell.state.completed
            self._arrive_n(w, i, op, w.cta, cell, threads, lambda s: mb.arrive(s, op.count), clock, writes)
            if cell.state.completed != before:  # its own try_wait sees this after the round trip
                cell.completed_by = (w, self.m.env.now - self.arch.arrive_cycles)
            return
        cta = resolve.peer(w.cta, op.cta)
        cell = cta.barriers[op.barrier]

        def act() -> None:
            self._log_arrive(w, i, op, cta, cell, op.count, threads, clock)
            self._arrive_n(w, i, op, cta, cell, threads, lambda s: mb.arrive(s, op.count), clock, writes)

        self._at(w, cta, act)

    def _log_expect(self, w: WarpState, i: int, op: ExpectTx | ArriveExpectTx, cta: CtaState, cell: BarrierCell,
                    threads: int) -> None:
        m = self.m
        m.log.events.append(_new(ExpectTxEvent, (m.env.now, "expect_tx", cta.index, w.who, i, op.barrier, op.use,
                                                 op.bytes * threads, cell.state.completed,
                                                 ABSENT if cta is w.cta else w.cta.index)))

    def expect_tx(self, w: WarpState, i: int, op: ExpectTx) -> None:
        cta = resolve.peer(w.cta, op.cta)
        cell = cta.barriers[op.barrier]
        threads = THREADS[op.issuer]

        def act() -> None:
            self._log_expect(w, i, op, cta, cell, threads)
            for _ in range(threads):  # not an arrival: no release, no clock
                if not self.apply(cta, w.who, i, cell, mb.expect_tx(cell.state, op.bytes), op.kind):
                    return

        self._at(w, cta, act)

    def arrive_expect_tx(self, w: WarpState, i: int, op: ArriveExpectTx) -> None:
        cta = resolve.peer(w.cta, op.cta)
        cell = cta.barriers[op.barrier]
        threads = THREADS[op.issuer]
        clock = w.tick()
        writes = tuple(w.lane_writes.values()) if threads > 1 and w.lane_writes else ()

        def act() -> None:
            self._log_expect(w, i, op, cta, cell, threads)
            self._log_arrive(w, i, op, cta, cell, 1, threads, clock)
            self._arrive_n(w, i, op, cta, cell, threads, lambda s: mb.arrive_expect_tx(s, op.bytes), clock, writes)

        self._at(w, cta, act)

    def wait_cost(self, w: WarpState, op: Wait) -> float:
        """Before the first try: the barrier's address, where the code computes it, and the
        perturbation's skew of one warp's waits."""
        p = self.m.perturbation
        hit = p.skew_cycles and w.warp == p.skew_warp and (not p.skew_role or w.role_name == p.skew_role)
        address = self.m.timing.scale(self.arch.wait_address_cycles) if op.computed_address else 0.0
        return address + (p.skew_cycles if hit else 0.0)

    def wait(self, w: WarpState, i: int, op: Wait) -> simpy.Event | None:
        """Probe the barrier at the warp's real time; block unless the parity's phase is done."""
        m = self.m
        cell = resolve.barrier(w.cta, op.barrier)
        state = cell.state
        if not state.initialized:
            m.raise_trap(w.cta, w.who, i, op.barrier, "wait", "use_before_init",
                         "try_wait on an mbarrier that was never initialized", state)
            return None
        if mb.test_wait_parity(state, op.parity):
            cost = self.arch.wait_ready_cycles
            own = cell.completed_by
            if own is not None and own[0] is w:
                # the warp's own arrive completed the phase: its try_wait passes once the arrive
                # has made the round trip to the barrier (mbar_roundtrip.cu), not sooner
                rest = own[1] + self.arch.arrive_wait_round_trip_cycles - (m.env.now + w.debt)
                cell.completed_by = None
                if rest > cost:  # the arrive's trip to the barrier and back: a latency, no issue
                    waited = m.timing.scale(rest)
                    w.debt += waited
                    w.idle += waited
                    return self._passed(w, i, op, cell)
            w.debt += m.timing.scale(cost)
            return self._passed(w, i, op, cell)
        ev = WaiterWakeup(m.env)
        cell.waiters.append((op.parity, ev))
        self.wait_began[w] = state.completed
        m.block(w, i, op, "mbarrier", op.barrier, use=op.use, parity=op.parity)
        return ev

    def _passed(self, w: WarpState, i: int, op: Wait, cell: BarrierCell) -> None:
        """The first try passed: the wait observed the last completed phase without blocking."""
        state = cell.state
        self._waited(w, i, op, self.m.env.now, state.completed, state.completed, cell.last_clock,
                     cell.last_seqs, cell.last_upto, False)

    def wait_woken(self, w: WarpState, i: int, op: Wait, news) -> None:
        c_ret, clock, seqs, upto = news
        begin = w.blocked[5]
        self.m.unblocked(w)
        self._waited(w, i, op, begin, self.wait_began.pop(w), c_ret, clock, seqs, upto, True)

    def _waited(self, w: WarpState, i: int, op: Wait, begin: float, c0: int, c_ret: int,
                clock, seqs, upto, blocked: bool) -> None:
        if clock is not None:  # acquire: learn what the observed phase carried
            join_into(w.clock, clock)
        w.advance()
        # The wait event doubles as the observation of the accesses the phase carried:
        # ``seqs`` one by one, ``upto`` as (thread, seq) -- all of that thread's MMA
        # accesses up to seq (a tcgen05.commit tracks every earlier MMA of its thread).
        now = self.m.env.now
        if w.debt:  # (now + 0.0 would be a new float in every event: ~12 MB at 4096^3)
            now += w.debt
        self.m.log.events.append(_new(WaitEvent, (now, "wait", w.cta.index, w.who, i, op.barrier,
                                                  op.parity, op.use, begin, c0, c_ret, blocked, op.tile, op.k, seqs,
                                                  upto, w.g, w.clock[w.g])))
