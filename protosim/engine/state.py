"""What a replay keeps per CTA and per warp, shared by every unit.

A CTA's *storage* lives here: its mbarriers (:class:`BarrierCell`: the pure PTX state
plus its waiters and what the phase in progress carries for happens-before).  Buffers
hold no state of their own -- an access is an event in the log.  Each unit of
:mod:`protosim.engine.units` keeps its own in-flight state (async groups, bar.sync
points, TMEM columns held) and reaches storage only through
:mod:`protosim.engine.resolve`.

A warp's state is the interpreter's: its vector clock, the local work it has not paid
for yet, what it is blocked on, and the stores its 32 lanes made since they last
synchronised.
"""

from __future__ import annotations

from typing import Any

import simpy

from protosim.engine.order import fresh, joined
from protosim.engine.resources import SmUnits
from protosim.ints import shared
from protosim.ir import CtaProgram, Schedule
from protosim.ptx.mbarrier import MBarrierState

THREADS = {"all": 32, "warp0": 32, "one": 1, "each_warp": 1}
"""Threads of one warp that execute an op, by issuer rule."""


class Wakeup(simpy.Event):
    """An event that succeeds ``delay`` cycles after it is fired: a waiter woken by
    a completion resumes after the wake-up latency in one scheduler step (SimPy's
    own ``Timeout`` is built the same way)."""

    __slots__ = ()

    def fire_in(self, delay: float, value: Any = None) -> None:
        self._ok = True
        self._value = value
        self.env.schedule(self, simpy.events.NORMAL, delay)


class BarrierCell:
    """One mbarrier: its pure state, its waiters, and what the phase in progress
    (and the last completed one) carries for happens-before."""

    __slots__ = ("name", "count", "state", "waiters", "acc_clock", "acc_seqs", "acc_upto", "last_clock", "last_seqs",
                 "last_upto", "completed_by")

    def __init__(self, name: str, count: int):
        self.name = name
        self.count = count
        self.state = MBarrierState()
        self.waiters: list[tuple[int, Wakeup]] = []
        self.acc_clock: list[int] | None = None
        self.acc_seqs: list[int] = []
        self.acc_upto: dict[str, int] = {}
        """thread -> last access seq of its MMAs a tcgen05.commit in this phase covers."""
        self.last_clock: list[int] | None = None
        self.last_seqs: tuple[int, ...] = ()
        self.last_upto: tuple[tuple[str, int], ...] = ()
        self.completed_by: tuple[WarpState, float] | None = None
        """(warp, cycle its arrive issued) when the last phase was completed by a warp's own
        ``mbarrier.arrive`` on this CTA's barrier: what that warp's next try_wait pays the rest
        of the round trip for (``MBarrierUnit.wait``)."""

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


class CtaState:
    """One launched CTA: its SM, its storage, its cluster, and the width of its vector clocks."""

    __slots__ = ("index", "sm", "width", "barriers", "rank", "base", "peers", "exited", "working")

    def __init__(self, prog: CtaProgram, sm: SmUnits, schedule: Schedule):
        self.index = prog.index
        self.sm = sm
        warps = sum(r.warps for r in schedule.roles)
        self.rank = prog.index % schedule.cluster
        """Its rank in its cluster (0 without clusters)."""
        self.width = warps * schedule.cluster
        """Warps in the cluster: the length of every vector clock.  Clocks span the cluster so
        that a remote arrive or a multicast carries happens-before from one CTA to another."""
        self.base = warps * self.rank
        """This CTA's first component in the cluster-wide clocks."""
        self.peers: list[CtaState] = [self]
        """The CTAs of its cluster by rank (set by the launcher once the cluster is placed)."""
        self.exited: float | None = None
        """The cycle its last warp finished (its storage is gone after that)."""
        self.barriers = {b.name: BarrierCell(b.name, b.count) for b in schedule.barriers}
        """The CTA's mbarriers by declared name; read them through :mod:`protosim.engine.resolve`."""
        self.working = [0] * len(sm.working)
        """This CTA's warps paying local work on each sub-partition now (``engine.issue``)."""


class WarpState:
    __slots__ = ("cta", "role", "role_name", "warp", "warps", "who", "blocked", "stall", "done", "g", "clock", "debt", "idle",
                 "lane_writes", "remote_until", "loads_ready")

    def __init__(self, cta: CtaState, role: int, role_name: str, warp: int, warps: int, g: int):
        self.cta = cta
        self.role = role
        self.role_name = role_name
        self.warp = warp
        self.warps = warps
        self.who = f"{role_name}.w{warp}"
        self.blocked: tuple | None = None
        """(op index, op, on, target, detail, since, use, parity) while blocked."""
        self.stall: dict[str, float] = {}
        self.done = False
        self.g = g
        """Index of this warp in the cluster's clocks (its vector-clock component; without
        clusters, its index in the CTA)."""
        self.clock = fresh(cta.width)
        self.debt = 0.0
        """Cycles of purely local work (fences, commits, sleeps, satisfied waits) not
        yet paid with a SimPy timeout: paid before the next op that others can see."""
        self.idle = 0.0
        """The part of ``debt`` that issues nothing (sleeps, a perturbation's injected stalls, the
        rest of an own arrive's round trip):
        what co-resident CTAs' warps do not stretch (:mod:`protosim.engine.issue`)."""
        self.remote_until = 0.0
        """When this warp's last remote mbarrier op (``.shared::cluster`` on a peer) lands: a
        ``barrier.cluster.arrive.release`` after it completes no earlier."""
        self.loads_ready: list[float] = []
        """When the registers of each global load into registers this warp issued have filled
        (``GlobalLoad``, in issue order, non-decreasing): what a ``GlobalLoadWait`` waits for."""
        self.lane_writes: dict[tuple[str, int, int | None], int] = {}
        """(buffer, stage, part) -> seq of the last store all 32 lanes made there since the
        warp last synchronised its lanes (__syncwarp, bar.sync): each lane knows only its own
        bytes, so an elected lane's arrive does not release them."""

    def advance(self) -> None:
        """One more event of this warp on its own vector-clock component."""
        self.clock[self.g] = shared(self.clock[self.g] + 1)  # one object a count (protosim.ints)

    def tick(self) -> tuple[int, ...]:
        """:meth:`advance`, and the clock as it now stands."""
        self.advance()
        return tuple(self.clock)
