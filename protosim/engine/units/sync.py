"""The warp's own ordering and delay ops: ``bar.sync`` (CTA-wide and named barriers),
``__syncwarp``, fences and ``nanosleep``.

A ``bar.sync`` releases every participant once the last of its threads arrives, after the
barrier latency, and joins all their clocks (each knows what every other did before).
All lanes take part, so the warp's lanes are synchronised too: the stores its 32 lanes
made are every lane's from then on (``lane_release``).  Fences and sleeps only cost time.

``barrier.cluster`` (PTX ISA, "barrier.cluster") is the cluster's hardware barrier: each
thread's n-th ``arrive`` counts toward phase n, and its ``wait`` returns once every
non-exited thread of every CTA in the cluster has made its n-th arrival.  ``arrive.release``
(the default) carries the warp's clock to the waiters, ``arrive.relaxed`` carries nothing;
``wait`` is an acquire.  A second arrive before the wait is undefined (``cluster_rearrive``).
"""

from __future__ import annotations

import simpy

from protosim.engine.order import fresh, join_into
from protosim.engine.state import CtaState, Wakeup, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.ir import ClusterArrive, ClusterWait, CtaSync, Fence, NamedBarrierSync, Op, Sleep, WarpSync

CTA_SYNC_ID = 0


class SyncPoint:
    """One use of a ``bar.sync`` barrier: arrivals so far and their joined clock."""

    __slots__ = ("target", "arrived", "event", "clock")

    def __init__(self, env: simpy.Environment, target: int, width: int):
        self.target = target
        self.arrived = 0
        self.event = Wakeup(env)
        self.clock = fresh(width)


class ClusterBarrier:
    """One cluster's ``barrier.cluster``: per phase, the warps that arrived (or exited) and
    the clock their releases carry; per warp, how many times it arrived and waited."""

    __slots__ = ("warps", "arrived", "clocks", "events", "arrivals", "waits", "exited", "ready")

    def __init__(self, warps: int):
        self.warps = warps
        """Warps of the whole cluster (an aligned arrive is one per warp)."""
        self.arrived: dict[int, int] = {}
        self.clocks: dict[int, list[int] | None] = {}
        self.events: dict[int, Wakeup] = {}
        self.arrivals: dict[WarpState, int] = {}
        self.waits: dict[WarpState, int] = {}
        self.ready: dict[int, float] = {}
        """Per phase, when the releasing warps' remote mbarrier ops have all landed: a release
        makes the thread's prior operations visible to the waiters, so they pass no earlier."""
        self.exited: list[int] = []
        """For each exited warp, how many arrivals it had made: it counts for every later phase."""

    def complete(self, phase: int) -> bool:
        return self.arrived.get(phase, 0) + sum(1 for n in self.exited if n <= phase) >= self.warps


class SyncUnit(Unit):
    name = "sync"

    def __init__(self, machine):
        super().__init__(machine)
        self.points: dict[CtaState, dict[int, SyncPoint]] = {}
        self.clusters: dict[int, ClusterBarrier] = {}
        """Cluster barriers by the index of the cluster's rank-0 CTA."""

    def handlers(self) -> dict[type[Op], Handler]:
        return {
            CtaSync: Handler(None, self.cta_sync, self.released),
            NamedBarrierSync: Handler(None, self.named_sync, self.released),
            # bar.warp.sync: no measurement; a cheap op in the warp's stream, like commit_group.
            WarpSync: Handler(self.issue_cost, self.warp_sync),
            ClusterArrive: Handler(self.issue_cost, self.cluster_arrive),
            ClusterWait: Handler(None, self.cluster_wait, self.cluster_released),
        }

    def local(self):
        a = self.arch
        return {
            Fence: lambda w, op: a.fence_cycles,
            Sleep: self._sleep,
        }

    def _sleep(self, w: WarpState, op: Sleep) -> float:
        """A nanosleep's cycles: the warp's to wait, not to issue (``WarpState.idle``)."""
        if op.warp is not None and op.warp != w.warp:
            return 0.0
        cycles = self.m.timing.sleep(op.cycles)
        w.idle += cycles
        return cycles

    def cta_started(self, cta: CtaState) -> None:
        self.points[cta] = {}
        if cta.rank == 0 and len(cta.peers) > 1:
            self.clusters[cta.index] = ClusterBarrier(cta.width)

    # -- barrier.cluster -------------------------------------------------------------
    def _cluster(self, w: WarpState) -> ClusterBarrier:
        return self.clusters[w.cta.peers[0].index]

    def cluster_arrive(self, w: WarpState, i: int, op: ClusterArrive) -> None:
        m = self.m
        cb = self._cluster(w)
        n = cb.arrivals.get(w, 0)
        if n > cb.waits.get(w, 0):
            m.raise_trap(w.cta, w.who, i, "barrier.cluster", "barrier.cluster.arrive", "cluster_rearrive",
                         f"barrier.cluster.arrive a second time (arrival {n + 1}) before barrier.cluster.wait", None)
            return
        cb.arrivals[w] = n + 1
        clock = w.tick()
        if not op.relaxed:  # .release: what this warp did is visible to every waiter of phase n
            cb.clocks[n] = list(clock) if cb.clocks.get(n) is None else list(map(max, cb.clocks[n], clock))
            if w.lane_writes:  # .aligned: every lane takes part, so each lane's stores go with it
                self.lane_release(w, i, op.kind)
            if w.remote_until > cb.ready.get(n, 0.0):
                cb.ready[n] = w.remote_until
        cb.arrived[n] = cb.arrived.get(n, 0) + 1
        m.log.emit(m.env.now, "cluster_arrive", w.cta.index, w.who, i, phase=n, relaxed=op.relaxed)
        self._settle(cb, n)

    def _settle(self, cb: ClusterBarrier, phase: int) -> None:
        if cb.complete(phase):
            ev = cb.events.get(phase)
            if ev is None:
                ev = cb.events[phase] = Wakeup(self.m.env)
            if not ev.triggered:
                now = self.m.env.now
                delay = max(self.m.timing.scale(self.arch.cluster_sync_cycles), cb.ready.get(phase, now) - now)
                ev.fire_in(delay, phase)

    def warp_exited(self, w: WarpState) -> None:
        """An exited thread no longer takes part: it counts as arrived for every later phase."""
        if len(w.cta.peers) > 1:
            cb = self._cluster(w)
            n = cb.arrivals.get(w, 0)
            cb.exited.append(n)
            for phase in list(cb.events) + [n]:
                self._settle(cb, phase)

    def cluster_wait(self, w: WarpState, i: int, op: ClusterWait) -> simpy.Event | None:
        m = self.m
        cb = self._cluster(w)
        n = cb.waits.get(w, 0)
        cb.waits[w] = n + 1
        ev = cb.events.get(n)
        if ev is None:
            ev = cb.events[n] = Wakeup(m.env)
        if cb.arrivals.get(w, 0) <= n:
            detail = f"wait {n + 1} without its arrive"
        else:
            detail = f"{cb.arrived.get(n, 0)} of {cb.warps} warps arrived"
        m.block(w, i, op, "barrier.cluster", f"cluster of CTA {w.cta.peers[0].index}", detail)
        return ev

    def cluster_released(self, w: WarpState, i: int, op: ClusterWait, phase: int) -> None:
        m = self.m
        m.unblocked(w)
        cb = self._cluster(w)
        join_into(w.clock, cb.clocks.get(phase))
        w.tick()
        if w.lane_writes:
            self.lane_release(w, i, op.kind)
        m.log.emit(m.env.now, "cluster_wait", w.cta.index, w.who, i, phase=phase, warp=w.g, at=w.clock[w.g])

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
