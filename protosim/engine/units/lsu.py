"""Copies the warps make themselves, through the SM's load/store unit: synchronous thread
copies global -> shared, register stores to shared memory, shared -> register loads,
global loads into registers and global stores, and the asynchronous ``cp.async`` with its
commit/wait groups.

A synchronous copy is known to its own warp when it finishes.  When all 32 lanes stored,
each lane knows only its own bytes until the lanes synchronise (``lane_writes``): an
elected lane's later release does not carry the others' (``unreleased_write``).
"""

from __future__ import annotations

import simpy

from protosim.arch import interpolate
from protosim.engine import resolve
from protosim.engine.state import THREADS, CtaState, WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.engine.units.groups import GroupTable
from protosim.ir import (
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    GlobalLoad,
    GlobalLoadWait,
    GlobalStore,
    LocalLoad,
    Op,
    SmemStore,
    ThreadCopy,
)

LANE_WRITES = (SmemStore, ThreadCopy)
"""Synchronous shared-memory stores: with 32 lanes, each lane writes its own bytes, and an
elected lane's later release does not carry the other lanes' (``lane_release`` events)."""


def copy_rounds(op: ThreadCopy) -> float:
    """Load latencies one lane of a thread copy waits in sequence: its ``bytes / 32 /
    load_bytes`` loads, ``in_flight`` at a time, each stored once it returns (at least one).

    A copy loop's time is set by its instruction stream, not by bandwidth: ptxas unrolls the
    loop and hoists some of the loads above the stores, and a lane stalls at each store whose
    load is still out.  With ``in_flight = 0`` every load is out at once (one latency)."""
    if not op.in_flight:
        return 1.0
    return max(1.0, op.loads_per_lane / op.in_flight)


def load_issue_cycles(width: int, arch) -> float:
    """Cycles one warp ``ld.global`` of ``width`` bytes per lane holds its SM's load/store unit:
    its issue (2-byte loads more than wider ones) or its bytes at the SM's rate, whichever is
    more (docs/semantics.md "Thread copies")."""
    issue = arch.global_load_subword_issue_cycles if width < 4 else arch.global_load_issue_cycles
    return max(issue, 32 * width / arch.lsu_bytes_per_clk)


def lsu_cycles(op: ThreadCopy | CpAsync | GlobalLoad, arch) -> float:
    """Cycles one warp's copy holds its SM's load/store unit (docs/semantics.md "Thread copies").

    A thread copy is ``loads_per_lane`` warp ``ld.global`` instructions (:func:`load_issue_cycles`)
    and one ``st.shared`` of the loaded value each; a load into registers the instructions alone
    (at least one).  A ``cp.async`` is timed by its bytes."""
    cls = op.__class__
    if cls is ThreadCopy:
        return op.loads_per_lane * (load_issue_cycles(op.load_bytes, arch) + arch.copy_store_issue_cycles)
    if cls is GlobalLoad:
        per = load_issue_cycles(op.load_bytes, arch)
        if op.lines is not None:  # lanes not contiguous: the L1 serves the instruction a line at a time
            per = max(per, op.lines * arch.l1_line_load_cycles)
        return max(1, -(-op.bytes // (32 * op.load_bytes))) * per
    return op.bytes / arch.lsu_bytes_per_clk


class LsuUnit(Unit):
    name = "lsu"

    def __init__(self, machine):
        super().__init__(machine)
        self.cp_async = GroupTable(machine, "cp_async_wait", after_known=self._lane_copies_known)
        self.lane_copies: dict[int, tuple[resolve.Slot, int]] = {}
        """cp.async operations all 32 lanes issued: op id -> (slot, seq), a lane write once waited for."""

    def handlers(self) -> dict[type[Op], Handler]:
        return {
            CpAsync: Handler(self.issue_cost, self.cp_async_copy),
            CpAsyncWait: Handler(self.issue_cost, self.cp_async.wait, self.cp_async.woken),
            LocalLoad: Handler(None, self.local_load, self.sync_done),
            ThreadCopy: Handler(None, self.thread_copy, self.sync_done),
            SmemStore: Handler(None, self.smem_store, self.sync_done),
            GlobalStore: Handler(None, self.global_store),
            GlobalLoad: Handler(None, self.global_load),
            GlobalLoadWait: Handler(None, self.global_load_wait, self.m.unblocked),
        }

    def local(self):
        return {CpAsyncCommit: self.cp_async.commit}

    def cta_finished(self, cta: CtaState) -> None:
        self.cp_async.drop(cta)

    # -- global -> shared ------------------------------------------------------------
    def _global_to_shared(self, w: WarpState, op: ThreadCopy | CpAsync, rounds: float = 1.0) -> tuple[float, float]:
        """(first write, done) of one warp's global -> shared copy through the LSU and
        L2/HBM: ld.global then st.shared, so shared memory is written once the first
        loads return.  The SM's load/store unit serves its warps' copies in turn
        (:func:`lsu_cycles`): co-resident copies slow each other there.  Thread copies and
        cp.async share this timing; a thread copy whose lanes keep only some loads in flight
        waits ``rounds`` load latencies (:func:`copy_rounds`)."""
        now = self.m.env.now
        lat, done, _ = self._read(w, op, f"{op.src or op.dst.content}#{resolve.part(w, op.dst)}", rounds,
                                  self.arch.smem_latency)
        return min(now + lat, done), done

    def _read(self, w: WarpState, op: ThreadCopy | CpAsync | GlobalLoad, key: str, rounds: float = 1.0,
              after: float = 0.0) -> tuple[float, float, float]:
        """(load latency, done, instructions issued) of one warp's loads of global tile ``key``:
        they hold the SM's load/store unit (:func:`lsu_cycles`), go through the chip's L2 (HBM on
        a miss), and the registers fill ``rounds`` latencies after the issue or one after the
        later of the unit and the chip's pipe, whichever is later; ``done`` is ``after`` cycles
        past that (a copy's store into shared memory)."""
        m, arch = self.m, self.arch
        now = m.env.now
        nbytes = getattr(op, "memory_bytes", None)
        hit, chip_done = m.memory.read(now, key, op.bytes if nbytes is None else nbytes, w.cta.sm.tpc)
        issued = w.cta.sm.lsu.serve(now, lsu_cycles(op, arch))
        lat = m.timing.scale(arch.global_load_l2_cycles + m.perturbation.l2_hit_extra if hit else arch.global_load_dram_cycles)
        done = max(now + rounds * lat, max(issued, chip_done) + lat) + after
        if not hit:  # (computed as done less after: the replays' floats stay what they were)
            m.memory.filling(key, done - after - m.timing.scale(arch.global_load_l2_cycles))
        return lat, done, issued

    def thread_copy(self, w: WarpState, i: int, op: ThreadCopy) -> simpy.Event:
        m = self.m
        first, done = self._global_to_shared(w, op, copy_rounds(op))
        seq = m.access(w, i, op.dst, "w", first, done, op.tile, w.tick(), THREADS[op.issuer])
        return m.env.timeout(done - m.env.now, seq)

    def smem_store(self, w: WarpState, i: int, op: SmemStore) -> simpy.Event:
        return self._shared_access(w, i, op, op.dst, "w", op.bank_ways)

    def local_load(self, w: WarpState, i: int, op: LocalLoad) -> simpy.Event:
        return self._shared_access(w, i, op, op.src, "r")

    def _shared_access(self, w: WarpState, i: int, op: SmemStore | LocalLoad, acc, mode: str,
                       ways: int = 1) -> simpy.Event:
        """Registers <-> shared memory: the SM's shared-memory pipe, then its latency.  An
        n-way bank conflict replays every instruction n times: the pipe serves n x the bytes
        (docs/semantics.md "Shared-memory bank conflicts")."""
        m = self.m
        now = m.env.now
        done = w.cta.sm.smem.serve(now, op.bytes * ways) + self.arch.smem_latency
        if acc.cta is not None and acc.cta != w.cta.rank:
            # DSMEM: a peer SM's shared memory -- a store crosses the SM-to-SM network once, a load
            # there and back (results/silicon/cluster_probes: ~165 extra cycles per dependent load)
            done += m.timing.scale(self.arch.remote_arrive_cycles) * (2 if mode == "r" else 1)
        seq = m.access(w, i, acc, mode, now, done, op.tile, w.tick(), THREADS[op.issuer])
        return m.env.timeout(done - now, seq)

    def sync_done(self, w: WarpState, i: int, op: Op, seq: int) -> None:
        """A synchronous copy finished: its own warp knows (each lane its own bytes, when all
        32 lanes stored: then it is a lane write until the warp's lanes synchronise)."""
        w.tick()
        self.m.observe(w, i, (seq,), "synchronous")
        if op.__class__ in LANE_WRITES and THREADS[op.issuer] > 1:
            w.lane_writes[resolve.slot(w, op.dst)] = seq

    def global_load(self, w: WarpState, i: int, op: GlobalLoad) -> simpy.Event | None:
        """``ld.global`` into registers: the warp is held while its load instructions issue
        (:func:`lsu_cycles`, its SM's load/store unit shared with the other warps there), and its
        registers fill one L2 or DRAM load latency after the later of that and the chip's L2 /
        HBM pipe -- the rule of a thread copy's loads, less its stores (docs/semantics.md "Global
        loads into registers")."""
        m = self.m
        now = m.env.now
        rounds = max(1.0, op.bytes / (32 * op.load_bytes) / op.in_flight) if op.in_flight else 1.0
        _, ready, issued = self._read(w, op, f"{op.src}#{w.warp}", rounds)
        filled = w.loads_ready
        filled.append(max(ready, filled[-1]) if filled else ready)  # returned in issue order
        return m.env.timeout(issued - now) if issued > now else None

    def global_load_wait(self, w: WarpState, i: int, op: GlobalLoadWait) -> simpy.Event | None:
        """The scoreboard: the warp's first use of loaded registers waits until at most
        ``pending`` of its loads are out."""
        m = self.m
        filled = w.loads_ready
        if len(filled) <= op.pending:
            return None
        t = filled[len(filled) - 1 - op.pending]
        now = m.env.now
        if t <= now:
            return None
        m.block(w, i, op, "global_load", "registers")
        return m.env.timeout(t - now)

    def global_store(self, w: WarpState, i: int, op: GlobalStore) -> simpy.Event:
        """``st.global``: the warp is held while its store instructions issue -- a fixed cost
        each on its SM, and a chip-wide rate shared with every SM's stores -- and the kernel
        is not over until the last of them has landed, ``global_store_latency`` later
        (docs/semantics.md "Global stores")."""
        m, arch = self.m, self.arch
        now = m.env.now
        instructions = -(-op.bytes // (THREADS[op.issuer] * op.store_bytes))
        at_sm, at_chip = instructions, instructions  # in the pipes' units: scattered-lane store instructions
        # where the frontend counted the lines (a Triton store's layout and offsets), 32 contiguous
        # lanes span their bytes' lines, one more where the run is not line-aligned; where it did not
        # (the seed's epilogues: a fragment's 8 rows, a thread's own row), the measured fixed cost
        contiguous = op.lines is not None and op.lines <= max(1, 32 * op.store_bytes // 128) + 1
        if not contiguous:  # lanes apart: a line at a time, where that costs more than the issue
            at_sm *= max(1.0, (op.lines or 1) * arch.l1_line_store_cycles / arch.global_store_issue_cycles)
            if op.lines is not None and op.store_bytes <= 4:
                # lanes apart within one run of lines (a row), one element a lane: by its lines (measured
                # at 1-4 bytes a lane; wider lanes apart keep the scattered rule, measured at 16 bytes)
                lines_per_clk = interpolate(arch.global_store_spread_lines_per_clk, op.lines)
                at_chip *= arch.global_store_chip_per_clk * op.lines / lines_per_clk
        else:  # contiguous lanes: the chip takes more of the narrow ones, and an SM issues them at least that fast
            rate = interpolate(arch.global_store_contiguous_chip_per_clk, max(2, op.store_bytes))
            at_chip *= arch.global_store_chip_per_clk / rate
            at_sm *= min(1.0, arch.sm_count / rate / arch.global_store_issue_cycles)
        issued = max(w.cta.sm.stores.serve(now, at_sm), m.memory.store_pipe.serve(now, at_chip))
        m.memory.write(now, op.bytes if op.memory_bytes is None else op.memory_bytes, w.cta.sm.tpc)
        m.at(issued + m.timing.scale(arch.global_store_latency), _landed)
        return m.env.timeout(issued - now)

    # -- cp.async groups (Ampere-style software pipelines) ---------------------------
    def cp_async_copy(self, w: WarpState, i: int, op: CpAsync) -> None:
        """The warp's share of an asynchronous global -> shared copy: timed like a thread
        copy (LSU, L2/HBM), but the warp moves on and the copy joins its open group."""
        m = self.m
        if op.zero_fill:  # no global read: the instructions through the LSU, then the zeros land
            issued = w.cta.sm.lsu.serve(m.env.now, lsu_cycles(op, self.arch))
            first = done = issued + m.timing.scale(self.arch.smem_latency)
        else:
            first, done = self._global_to_shared(w, op)
        done += m.timing.unit_stall()  # an asynchronous unit: perturbable like TMA
        op_id = self.cp_async.new_op()
        g = self.cp_async.of(w.cta, w.who)
        g.issue(op_id)
        lanes = THREADS[op.issuer]
        seq = m.access(w, i, op.dst, "w", min(first, done), done, op.tile, w.tick(), lanes)
        self.cp_async.seqs[op_id] = (seq,)
        if lanes > 1:
            self.lane_copies[op_id] = (resolve.slot(w, op.dst), seq)
        m.at(done, lambda: g.complete(op_id, "done"))

    def _lane_copies_known(self, w: WarpState, ids: list[int]) -> None:
        """Each lane waited for its own copies: from here on they are lane writes."""
        if self.lane_copies:
            for op_id in ids:
                lane = self.lane_copies.pop(op_id, None)
                if lane is not None:
                    w.lane_writes[lane[0]] = lane[1]


def _landed() -> None:
    """A warp's stores landed: nothing to do but be an event, so that the replay (the kernel)
    lasts until then."""
