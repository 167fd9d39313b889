"""The TMA unit: bulk tensor loads (completing bytes on an mbarrier) and stores (tracked
by the issuing thread's bulk groups), and ``cp.async.bulk.commit_group`` / ``wait_group``.

A load passes through its SM's TMA pipe and the chip's L2 (HBM on a miss) and lands at
the later of its measured unloaded latency and the moment its last byte clears the
busiest pipe (:mod:`protosim.engine.resources`).  Shared memory changes only while the
bytes stream in at the end of the transfer.
"""

from __future__ import annotations

import dataclasses

from protosim.engine import resolve
from protosim.engine.log import ABSENT, CompleteTxEvent, IssueEvent
from protosim.engine.resources import tensor_of
from protosim.engine.state import THREADS, CtaState, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.engine.units.groups import GroupTable
from protosim.ir import BulkCommit, BulkWait, Op, TmaLoad, TmaStore
from protosim.ptx import mbarrier as mb


_new = tuple.__new__  # event records without a Python-level constructor call (hot path)


class TmaUnit(Unit):
    name = "tma"

    def __init__(self, machine):
        super().__init__(machine)
        self.bulk = GroupTable(machine, "bulk_wait")

    def handlers(self) -> dict[type[Op], Handler]:
        a = self.arch
        tma_issue = lambda w, op: a.tma_issue_cycles  # noqa: E731
        return {
            TmaLoad: Handler(tma_issue, self.load),
            TmaStore: Handler(tma_issue, self.store),
            BulkWait: Handler(self.issue_cost, self.bulk.wait, self.bulk.woken),
        }

    def local(self):
        return {BulkCommit: self.bulk.commit}

    def cta_finished(self, cta: CtaState) -> None:
        self.bulk.drop(cta)

    def load(self, w: WarpState, i: int, op: TmaLoad) -> None:
        m = self.m
        env, timing = m.env, m.timing
        now = env.now
        key = op.src or op.dst.content
        start = now + self._descriptor(w.cta.sm, key)
        hit, chip_done = m.memory.read(start, key, op.bytes, w.cta.sm.tpc)
        sm_done = w.cta.sm.tma.serve(start, op.bytes)
        lat, base = m.latency.load(hit, op.bytes)
        if hit and m.perturbation.l2_hit_extra:
            lat, base = lat + m.perturbation.l2_hit_extra, base + m.perturbation.l2_hit_extra
        land = max(start + timing.scale(lat), max(sm_done, chip_done) + timing.scale(base)) + timing.unit_stall()
        if not hit:
            m.memory.filling(key, land - timing.scale(m.latency.l2_base))
        cta = w.cta
        if op.multicast or op.barrier_cta is not None or op.dst.cta is not None:
            self._cluster_load(w, i, op, now, land)
            return
        m.log.events.append(_new(IssueEvent, (now, "issue", cta.index, w.who, i, "tma_load", 1, op.tile, op.k,
                                              op.barrier, op.use, op.bytes, land, ABSENT)))
        clock = w.tick()
        # Shared memory changes only while the bytes stream in at the end of the
        # transfer, not during the latency before the first byte.
        fill = max(now, land - op.bytes / self.arch.tma_sm_bytes_per_clk)
        seq = m.access(w, i, op.dst, "w", fill, land, op.tile, clock)

        def landed() -> None:
            if m.trap:
                return
            cell = resolve.barrier(cta, op.barrier)
            cell.contribute(clock, (seq,))
            m.log.events.append(_new(CompleteTxEvent, (env.now, "complete_tx", cta.index, "tma", i, op.barrier, op.use,
                                                       op.bytes, cell.state.completed, now, w.who, ABSENT, ABSENT)))
            m.mbarrier.apply(cta, "tma", i, cell, mb.complete_tx(cell.state, op.bytes), "complete_tx")

        m.at(land, landed)

    def _descriptor(self, sm, key: str) -> float:
        """Cycles before a load through ``key``'s tensor map can start: the descriptor's fetch on
        the SM's first load of that tensor in this kernel (docs/semantics.md "Engine timing", TMA loads)."""
        tensor = tensor_of(key)
        if tensor in sm.descriptors:
            return 0.0
        sm.descriptors.add(tensor)
        return self.m.timing.scale(self.arch.tma_descriptor_fetch_cycles)

    def _cluster_load(self, w: WarpState, i: int, op: TmaLoad, now: float, land: float) -> None:
        """A load whose bytes or byte count go to other CTAs of the cluster: ``.multicast::cluster``
        (one read from L2, the same bytes written at the same offset in every CTA of the mask, and
        a complete_tx on each one's barrier) or ``.cta_group::2`` (the complete_tx goes to the
        pair leader's barrier).  A peer's copy lands ``multicast_extra_cycles`` after the local one."""
        m = self.m
        env = m.env
        if op.multicast:
            dests = [(r, r) for r in op.multicast]  # (data rank, barrier rank)
        else:
            dests = [(op.dst.cta, op.barrier_cta if op.barrier_cta is not None else op.dst.cta)]
        src = w.cta
        to = tuple(resolve.peer(src, b).index for _, b in dests)
        m.log.emit(now, "issue", src.index, w.who, i, what="tma_load", threads=1, tile=op.tile, k=op.k,
                   barrier=op.barrier, use=op.use, bytes=op.bytes, lands=land, to=to)
        clock = w.tick()
        extra = m.timing.scale(self.arch.multicast_extra_cycles)
        for data_rank, bar_rank in dests:
            dst = dataclasses.replace(op.dst, cta=data_rank)
            owner = resolve.peer(src, data_rank)
            at = land if owner is src else land + extra
            fill = max(now, at - op.bytes / self.arch.tma_sm_bytes_per_clk)
            seq = m.access(w, i, dst, "w", fill, at, op.tile, clock)
            target = resolve.peer(src, bar_rank)

            def landed(target=target, seq=seq) -> None:
                if m.trap:
                    return
                cell = target.barriers[op.barrier]
                cell.contribute(clock, (seq,))
                m.log.emit(env.now, "complete_tx", target.index, "tma", i, barrier=op.barrier, use=op.use,
                           bytes=op.bytes, completed=cell.state.completed, issue=now, who_issued=w.who,
                           from_cta=src.index, clock=clock)
                m.mbarrier.apply(target, "tma", i, cell, mb.complete_tx(cell.state, op.bytes), "complete_tx")

            m.at(at, landed)

    def store(self, w: WarpState, i: int, op: TmaStore) -> None:
        m = self.m
        arch, timing = self.arch, m.timing
        now = m.env.now
        # The engine reads the tile out of shared memory as it streams it to L2, so the
        # read ends when the last byte clears the slower of the two pipes.
        sm_done = w.cta.sm.tma.serve(now, op.bytes)
        chip_done = m.memory.write(now, op.bytes, w.cta.sm.tpc)
        read_done = max(sm_done, chip_done) + timing.scale(arch.smem_latency) + timing.unit_stall()
        lat, base = m.latency.store_latency(op.bytes)
        done = max(now + timing.scale(lat), read_done + timing.scale(base))
        op_id = self.bulk.new_op()
        g = self.bulk.of(w.cta, w.who)
        g.issue(op_id)
        m.log.emit(now, "issue", w.cta.index, w.who, i, what="tma_store", threads=1, tile=op.tile, k=op.k)
        self.bulk.seqs[op_id] = (m.access(w, i, op.src, "r", now, read_done, op.tile, w.tick(), THREADS[op.issuer]),)
        m.at(read_done, lambda: g.complete(op_id, "read"))
        m.at(done, lambda: g.complete(op_id, "done"))
