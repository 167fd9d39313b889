"""The warp's own ordering and delay ops: ``bar.sync`` (CTA-wide and named barriers),
``__syncwarp``, fences and ``nanosleep``.

A ``bar.sync`` releases every participant once the last of its threads arrives, after the
barrier latency, and joins all their clocks (each knows what every other did before).
All lanes take part, so the warp's lanes are synchronised too: the stores its 32 lanes
made are every lane's from then on (``lane_release``).  Fences and sleeps only cost time.
"""

from __future__ import annotations

import simpy

from protosim.engine.order import fresh, join_into
from protosim.engine.state import CtaState, Wakeup, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.ir import CtaSync, Fence, NamedBarrierSync, Op, Sleep, WarpSync

CTA_SYNC_ID = 0


class SyncPoint:
    """One use of a ``bar.sync`` barrier: arrivals so far and their joined clock."""

    __slots__ = ("target", "arrived", "event", "clock")

    def __init__(self, env: simpy.Environment, target: int, width: int):
        self.target = target
        self.arrived = 0
        self.event = Wakeup(env)
        self.clock = fresh(width)


class SyncUnit(Unit):
    name = "sync"

    def __init__(self, machine):
        super().__init__(machine)
        self.points: dict[CtaState, dict[int, SyncPoint]] = {}

    def handlers(self) -> dict[type[Op], Handler]:
        return {
            CtaSync: Handler(None, self.cta_sync, self.released),
            NamedBarrierSync: Handler(None, self.named_sync, self.released),
            # bar.warp.sync: no measurement; a cheap op in the warp's stream, like commit_group.
            WarpSync: Handler(self.issue_cost, self.warp_sync),
        }

    def local(self):
        a, timing = self.arch, self.m.timing
        return {
            Fence: lambda w, op: a.fence_cycles,
            Sleep: lambda w, op: timing.sleep(op.cycles) if op.warp is None or op.warp == w.warp else 0.0,
        }

    def cta_started(self, cta: CtaState) -> None:
        self.points[cta] = {}

    def cta_finished(self, cta: CtaState) -> None:
        del self.points[cta]

    def cta_sync(self, w: WarpState, i: int, op: CtaSync) -> simpy.Event | None:
        return self._bar_sync(w, i, op, CTA_SYNC_ID, self.m.schedule.threads_per_cta)

    def named_sync(self, w: WarpState, i: int, op: NamedBarrierSync) -> simpy.Event | None:
        return self._bar_sync(w, i, op, op.barrier_id, op.threads)

    def _bar_sync(self, w: WarpState, i: int, op: Op, barrier_id: int, threads: int) -> simpy.Event | None:
        m = self.m
        cta = w.cta
        points = self.points[cta]
        sp = points.get(barrier_id)
        if sp is None:
            sp = points[barrier_id] = SyncPoint(m.env, threads, cta.width)
        sp.arrived += 32
        join_into(sp.clock, w.tick())
        if w.lane_writes:  # every lane takes part: the warp's lanes are synchronised too
            self.lane_release(w, i, op.kind)
        if sp.arrived >= sp.target:  # last arrival: release everyone after the barrier latency
            points[barrier_id] = SyncPoint(m.env, threads, cta.width)
            sp.event.fire_in(self.arch.cta_sync_cycles, sp)
            w.debt += self.arch.cta_sync_cycles
            join_into(w.clock, sp.clock)
            w.tick()
            return None
        m.block(w, i, op, "bar.sync", f"bar {barrier_id}", f"{sp.arrived} of {sp.target} threads arrived")
        return sp.event

    def released(self, w: WarpState, i: int, op: Op, sp: SyncPoint) -> None:
        self.m.unblocked(w)
        join_into(w.clock, sp.clock)
        w.tick()

    def warp_sync(self, w: WarpState, i: int, op: WarpSync) -> None:
        """``__syncwarp()``: the lanes meet; every lane's earlier stores are now every lane's."""
        w.tick()
        self.lane_release(w, i, "warp_sync")

    def lane_release(self, w: WarpState, i: int, how: str) -> None:
        """The warp's lanes just synchronised (after a tick): every lane now knows every
        lane's earlier stores, so any later release by any lane carries them."""
        if w.lane_writes:
            self.m.log.emit(self.m.env.now + w.debt, "lane_release", w.cta.index, w.who, i,
                            seqs=tuple(w.lane_writes.values()), warp=w.g, at=w.clock[w.g], how=how)
            w.lane_writes = {}
