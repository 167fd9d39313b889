"""The tensor core: ``tcgen05.mma`` and its commit, ``wgmma`` with its groups, ``mma.sync``.

Each SM's tensor core is an in-order queue (:class:`protosim.engine.resources.MmaUnit`):
an MMA occupies it for its issue-to-issue interval and completes ``tail`` cycles after.
A ``tcgen05.commit`` arrives on its mbarrier once every MMA its thread issued before it
has completed (PTX: all earlier MMAs, not only those since the last commit); a thread
that issued none commits an empty group and arrives at once.  ``wgmma`` is
``.sync.aligned``: it starts once every warp of the role has issued it, and joins every
member warp's open wgmma group; the wgmma blocks in flight on an SM share its tensor core
instruction by instruction (:class:`protosim.engine.resources.SharedTensorCore`), so each
block leaves the unit when the sharing says, known only as later blocks come.
"""

from __future__ import annotations

from typing import Any

import simpy

from protosim.engine import resolve
from protosim.engine.log import ABSENT, IssueEvent
from protosim.engine.state import THREADS, CtaState, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.engine.units.groups import GroupTable
from protosim.ir import Mma, MmaCommit, MmaSync, Op, TmemCopy, Wgmma, WgmmaCommit, WgmmaWait
from protosim.ptx import mbarrier as mb


_new = tuple.__new__  # event records without a Python-level constructor call (hot path)
_NO_TARGET = (ABSENT,) * 5
"""An issue event's barrier, use, bytes, lands, to: none for an MMA or a wgmma."""


class MmaIssuers:
    """A CTA's MMA-issuing threads, by name (``role.wN``), and its wgmma rendezvous."""

    __slots__ = ("last_done", "last_seq", "lanes", "rendezvous", "issuing")

    def __init__(self) -> None:
        self.last_done: dict[str, float] = {}
        self.last_seq: dict[str, int] = {}
        """Each thread's last MMA access seq: a tcgen05.commit covers all of that thread's MMA
        accesses up to it (they complete in order), so a phase carries one number per thread."""
        self.lanes: dict[str, int] = {}
        """Lanes of each warp that issued MMAs (1, or 32 for an MMA every lane issued)."""
        self.rendezvous: dict[tuple[int, int, int], list[Any]] = {}
        """(role, op index) -> [warps arrived, event]: a wgmma waiting for its warpgroup."""
        self.issuing = 0.0
        """The cycle the CTA's warps finish issuing the wgmma instructions given them so far
        (the issue chain of :meth:`TensorCoreUnit.wgmma_issue`)."""


class TensorCoreUnit(Unit):
    name = "tensor_core"

    def __init__(self, machine):
        super().__init__(machine)
        self.issuers: dict[CtaState, MmaIssuers] = {}
        self.wgmma = GroupTable(machine, "wgmma_wait", shared=True)
        self._shapes: dict[tuple[int, int, int, str, int], tuple[float, int, float]] = {}

    def handlers(self) -> dict[type[Op], Handler]:
        return {
            Mma: Handler(self.mma_issue_cost, self.mma),
            TmemCopy: Handler(self.issue_cost, self.tmem_copy),
            MmaCommit: Handler(self.issue_cost, self.commit),
            Wgmma: Handler(self.mma_issue_cost, self.wgmma_issue, self.m.unblocked),
            WgmmaWait: Handler(self.issue_cost, self.wgmma.wait, self.wgmma.woken),
        }

    def local(self):
        return {WgmmaCommit: self.wgmma.commit, MmaSync: lambda w, op: self.shape(op)[0]}

    def cta_started(self, cta: CtaState) -> None:
        self.issuers[cta] = MmaIssuers()

    def cta_finished(self, cta: CtaState) -> None:
        self.wgmma.drop(cta)
        del self.issuers[cta]  # a commit still in flight captured what it needs

    def _cycles(self, op: Mma | Wgmma | MmaSync) -> tuple[float, int, float]:
        """(occupancy at the op's descriptor floor, instructions, occupancy at the uniform
        floor) of an MMA tile op, computed once per shape."""
        desc = getattr(op, "descriptors", "uniform")
        width = getattr(op, "operand_bytes", 2)
        key = (op.m, op.n, op.k_elems, desc, width)
        entry = self._shapes.get(key)
        if entry is None:
            floor = self.arch.wgmma_per_thread_desc_issue_min if desc == "per_thread" else None
            # the profile's instruction K is for 2-byte operands: an instruction covers 32 bytes of K
            k = -(-op.k_elems * width // 2)
            occupancy, insts = self.arch.mma_cycles(op.m, op.n, k, floor)
            uniform = occupancy if floor is None else self.arch.mma_cycles(op.m, op.n, k)[0]
            entry = self._shapes[key] = (occupancy, insts, uniform)
        return entry

    def shape(self, op: Mma | Wgmma | MmaSync) -> tuple[float, int]:
        """(occupancy, instructions) of an MMA tile op.  A wgmma whose descriptors are built in
        per-thread registers has a longer floor per instruction (the R2UR moves before each:
        docs/semantics.md "wgmma"); one of 1-byte operands covers twice the K of an f16 one
        (``Wgmma.operand_bytes``)."""
        occupancy, insts, _ = self._cycles(op)
        return occupancy, insts

    def tensor_cycles(self, op: Wgmma) -> float:
        """Cycles a wgmma tile holds the tensor core: its instructions' issue-to-issue interval
        at the uniform-descriptor floor (``mma_issue_min``), whatever the descriptors: building
        them in per-thread registers slows the issuing warps (:meth:`shape`), not the unit."""
        return self._cycles(op)[2]

    def mma_issue_cost(self, w: WarpState, op: Mma | Wgmma) -> float:
        return self.arch.mma_thread_issue_cycles * self.shape(op)[1]

    # -- tcgen05 ---------------------------------------------------------------------
    @staticmethod
    def thread_key(w: WarpState) -> str:
        """The MMA-issuing thread's name in the log: ``role.wN``, qualified with its CTA in a
        cluster (a commit multicast to a peer carries it to a waiter in another CTA)."""
        return w.who if len(w.cta.peers) == 1 else f"{w.who}@{w.cta.index}"

    def mma(self, w: WarpState, i: int, op: Mma) -> None:
        m = self.m
        arch, timing = self.arch, m.timing
        now = m.env.now
        tail = timing.scale(arch.mma_tail_cycles) + timing.unit_stall()
        if op.cta_group == 2:
            # The pair's MMA: each SM's tensor core computes its CTA's m/2 rows (PTX
            # tcgen05.mma.cta_group::2), so both queues are busy and it is done when both are.
            occupancy, _ = self.arch.mma_cycles(op.m // 2, op.n, op.k_elems)
            start, free, done = w.cta.sm.mma.submit(now, occupancy, tail)
            peer = w.cta.peers[w.cta.rank + 1] if len(w.cta.peers) > w.cta.rank + 1 else w.cta
            if peer is not w.cta:
                s2, f2, d2 = peer.sm.mma.submit(now, occupancy, tail)
                start, free, done = min(start, s2), max(free, f2), max(done, d2)
        else:
            occupancy, _ = self.shape(op)
            start, free, done = w.cta.sm.mma.submit(now, occupancy, tail)
        self._issued(w, i, op, "mma", start, free, done, op.reads, op.writes)

    def tmem_copy(self, w: WarpState, i: int, op: TmemCopy) -> None:
        """``tcgen05.cp``: shared memory -> TMEM through the tensor core's queue, in order with
        the thread's MMAs (its commit covers it)."""
        m = self.m
        now = m.env.now
        occupancy = op.bytes / self.arch.tmem_bytes_per_clk
        start, free, done = w.cta.sm.mma.submit(now, occupancy, m.timing.scale(self.arch.mma_tail_cycles))
        self._issued(w, i, op, "tmem_copy", start, free, done, (op.src,), (op.dst,))

    def _issued(self, w: WarpState, i: int, op, what: str, start: float, free: float, done: float,
                reads, writes) -> None:
        """Log an MMA-like op's issue and accesses, and remember it for its thread's commit."""
        m = self.m
        st = self.issuers[w.cta]
        key = self.thread_key(w)
        if done > st.last_done.get(key, 0.0):
            st.last_done[key] = done
        lanes = THREADS[op.issuer]
        m.log.events.append(_new(IssueEvent, (m.env.now, "issue", w.cta.index, w.who, i, what, lanes, op.tile, op.k,
                                              *_NO_TARGET)))
        clock = w.tick()
        seqs = [m.access(w, i, acc, "r", start, free, op.tile, clock, lanes, key) for acc in reads]
        seqs += [m.access(w, i, acc, "w", start, done, op.tile, clock, lanes, key) for acc in writes]
        if seqs:
            st.last_seq[key] = seqs[-1]
        if lanes > st.lanes.get(key, 0):
            st.lanes[key] = lanes

    def commit(self, w: WarpState, i: int, op: MmaCommit) -> None:
        """``tcgen05.commit``, by each executing thread: a thread that issued MMAs arrives once
        *all* its earlier MMAs completed (not only those since its last commit: PTX), one
        that issued none committed an empty group and arrives at once."""
        m = self.m
        env = m.env
        cta = w.cta
        st = self.issuers[cta]
        key = self.thread_key(w)
        threads = THREADS[op.issuer]
        busy = min(threads, st.lanes.get(key, 0))  # committing threads with MMAs; the rest commit empty groups
        when = max(env.now, st.last_done.get(key, 0.0))
        m.log.emit(env.now, "issue", cta.index, w.who, i, what="mma_commit", threads=threads,
                   tile=op.tile, k=op.k, barrier=op.barrier, use=op.use)
        clock = w.tick()
        last = st.last_seq.get(key)
        upto = (key, last) if last is not None else None

        targets = [resolve.peer(cta, r) for r in op.multicast] if op.multicast else [cta]

        def arrive(n: int, empty: bool) -> None:
            for target in targets:  # .multicast::cluster: the same arrival on each CTA of the mask
                if m.trap:
                    return
                cell = target.barriers[op.barrier]
                cell.contribute(clock, (), None if empty else upto)
                extra = {} if target is cta else {"from_cta": cta.index, "clock": clock}
                if empty:
                    m.log.emit(env.now, "arrive", target.index, "mma", i, barrier=op.barrier, use=op.use, count=n,
                               completed=cell.state.completed, who_issued=w.who, empty_groups=n, **extra)
                else:
                    m.log.emit(env.now, "arrive", target.index, "mma", i, barrier=op.barrier, use=op.use, count=n,
                               completed=cell.state.completed, who_issued=w.who, **extra)
                for _ in range(n):
                    if not m.mbarrier.apply(target, "mma", i, cell, mb.arrive(cell.state, 1), "tcgen05.commit"):
                        return

        if threads > busy:
            m.at(env.now, lambda: arrive(threads - busy, True))
        if busy:
            m.at(when, lambda: arrive(busy, False))

    # -- wgmma -----------------------------------------------------------------------
    def _arm(self, sm) -> None:
        """Arm the wake-up for the next wgmma block to leave ``sm``'s tensor core (one live
        wake-up per SM: every change makes the armed one stale and arms another)."""
        m = self.m
        share = sm.wgmma
        t = share.next_change()
        if t is None:
            return
        version = share.version

        def wake() -> None:
            if share.version != version or m.trap:
                return
            now = m.env.now
            for block in share.leave(now):
                block[0](now)
            self._arm(sm)

        m.at(t, wake)

    def wgmma_issue(self, w: WarpState, i: int, op: Wgmma) -> simpy.Event | None:
        """``.sync.aligned`` over a warpgroup: the MMA starts once the four warps of the issuing
        warp's warpgroup have issued it.  A role of more warps is several warpgroups, each its
        own wgmma of its share of the tile (Triton's ``num_warps = 8``: each warpgroup's rows):
        ``1 / warpgroups`` of its instructions, its own rendezvous and groups."""
        m = self.m
        env, arch, timing = m.env, self.arch, m.timing
        cta = w.cta
        rendezvous = self.issuers[cta].rendezvous
        group = w.warp // 4
        first_warp = 4 * group
        size = min(4, w.warps - first_warp)  # warps in this warpgroup
        key = (w.role, i, group)
        rv = rendezvous.get(key)
        if rv is None:
            rv = rendezvous[key] = [0, env.event()]
        rv[0] += 1
        if rv[0] < size:
            m.block(w, i, op, "wgmma_issue", f"{w.role_name} wgmma #{i}")
            return rv[1]
        del rendezvous[key]
        chain, insts = self.shape(op)
        occupancy = self.tensor_cycles(op)
        groups = -(-w.warps // 4)
        if groups > 1:
            chain, occupancy, insts = chain / groups, occupancy / groups, -(-insts // groups)
        # Two clocks: the tensor core spends each instruction's issue-to-issue interval
        # (``occupancy``), while the CTA's issue chain spends the instruction's floor plus the
        # descriptor building between instructions (``chain``: wgmma_issue_overhead) and
        # cannot go faster.  A CTA completes its wgmmas at the end of its chain at the
        # earliest; other CTAs' blocks share the unit meanwhile, instruction by instruction
        # (resources.SharedTensorCore: each block in flight slows the others).  One chain per
        # CTA, not per warpgroup: two warpgroups of one CTA overlap little (84 of 8 x 24 cycles
        # a block).  results/silicon/microbench/2026-12-02_h200_tma_wgmma.md, 2026-12-03_h200_wgmma_share.md
        now = env.now
        issuers = self.issuers[cta]
        tail = timing.scale(arch.mma_tail_cycles) + timing.unit_stall()
        chain_start = issuers.issuing if issuers.issuing > now else now
        chained = issuers.issuing = chain_start + chain + arch.wgmma_issue_overhead * insts
        floor = chained + tail
        if op.serialized:
            # ptxas C7515: each of this warpgroup's instructions waits for the one before to complete;
            # the other warpgroups' instructions go on meanwhile (gemm_parts' serialized 128 x 128
            # dot_loop at 8 warps ran at the unserialized chain's rate), so it binds only where one
            # warpgroup's instructions with their tails outlast the CTA's chain
            floor = max(floor, now + (chain + arch.wgmma_issue_overhead * insts + tail * insts))
        sm = cta.sm
        sm.mma.busy += occupancy
        block = [None]  # what leave() hands back: the callback, set below
        held = arch.wgmma_unit_queue_instructions * occupancy / insts
        leaves = sm.wgmma.enter(now, occupancy, chain_start, chained, held, block)
        self._arm(sm)
        op_id = self.wgmma.new_op()
        m.log.events.append(_new(IssueEvent, (now, "issue", cta.index, w.who, i, "wgmma", 32 * size, op.tile, op.k,
                                              *_NO_TARGET)))
        clock = w.tick()
        # The operands are read until the last instruction leaves the unit, the results written
        # until a tail after; logged with the times known now, corrected if a block that enters
        # later slows this one (checkers read the log only once the replay is over).
        first = len(m.log.events)
        span = [chain_start, max(leaves, chained)]  # the tensor core's time on the block: the chip's clock
        m.tensor_spans.append(span)
        m.tensor_flops += 2.0 * op.m * op.n * op.k_elems / groups  # this warpgroup's share of the tile
        seqs = [m.access(w, i, acc, "r", chain_start, max(leaves, chained), op.tile, clock, 32) for acc in op.reads]
        seqs += [m.access(w, i, acc, "w", chain_start, max(leaves + tail, floor), op.tile, clock, 32)
                 for acc in op.writes]
        members = [self.wgmma.of(cta, f"{w.role_name}.w{j}") for j in range(first_warp, first_warp + size)]
        self.wgmma.seqs[op_id] = tuple(seqs)
        for g in members:  # every warp of the group now tracks it
            g.issue(op_id)

        def finish() -> None:
            for g in members:
                g.complete(op_id, "done")

        def left_unit(t: float) -> None:
            if t > leaves:
                span[1] = max(t, chained)
                events = m.log.events
                for k in range(first, first + len(op.reads)):
                    events[k] = events[k]._replace(t1=max(t, chained))
                for k in range(first + len(op.reads), first + len(seqs)):
                    events[k] = events[k]._replace(t1=max(t + tail, floor))
            m.at(max(t + tail, floor), finish)

        block[0] = left_unit
        rv[1].succeed(op_id)
        return None
