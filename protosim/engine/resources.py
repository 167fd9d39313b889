"""The hardware resources ops share: SM pipes, the tensor-core queue, L2 and HBM.

Bulk data movement is modelled as *fluid FIFO pipes*: a pipe of ``rate`` bytes
per cycle serves transfers in arrival order, so a transfer of ``b`` bytes
arriving at ``t`` leaves the pipe at ``max(t, free_at) + b / rate``.  A TMA load
passes through its SM's TMA pipe and the chip-wide L2 pipe (and the HBM pipe on
an L2 miss); it lands at the later of its unloaded latency (the measured
size-dependent table) and the moment its last byte clears the busiest pipe plus
the table's zero-byte latency.  Unloaded, the two agree by construction (the
SM pipe's rate is the table's slope); loaded, queueing shows.  Pipes cost no
SimPy events: only the landing is an event.

The L2 is an LRU of the profile's capacity keyed by global tile id: the first
touch of a tile comes from DRAM, later touches hit until evicted.  That makes
the persistent scheduler's ``l2_group_size`` matter, as it does on silicon.  A
touch while the first one's fill from DRAM is still in flight is a hit on that
miss: its data cannot reach the SM before the fill does (:meth:`MemorySystem.filling`).
A written tile takes its bytes of the LRU too, and its bytes go to DRAM as they are
written, queued in the HBM pipe with the misses: a written byte costs what a read byte
does (:meth:`MemorySystem.write`).
What the L2 holds when the kernel starts is a launch condition
(``l2_at_launch``): cold, or the inputs just written (:func:`resident_at_launch`).

The tensor core is an in-order queue per SM for ``tcgen05.mma``: an MMA of occupancy
``o`` starts at ``max(now, free_at)``, frees the unit at ``start + o`` and completes
(results visible, commit may fire) ``tail`` cycles later -- the issue-to-issue interval
and the latency of TIMING_SOURCES.md.  Hopper's wgmma blocks in flight share it
instruction by instruction instead, as measured (:class:`SharedTensorCore`).
"""

from __future__ import annotations

import re
from collections import OrderedDict

from protosim.arch import ArchProfile, interpolate
from protosim.ir import WARP_PART, Schedule

_TENSOR = re.compile(r"[A-Za-z_]\w*?(?=[\[(@#{]|$)")


def tensor_of(key: str) -> str:
    """The global tensor a tile key names: ``A[m=0,k=3]`` -> ``A``, ``a@7#2`` -> ``a``."""
    m = _TENSOR.match(key)
    return m.group(0) if m else key


def launch_l2_bytes(schedule: Schedule, arch: ArchProfile) -> float:
    """The L2 a launch's lines can fill: the profile's capacity for the SMs its first wave takes
    (CTA ``i`` on SM ``i % sm_count``, :func:`read_tpcs`), so a persistent grid of 8 CTAs on
    the H200 has ~28 MB of its 49, a grid that covers the chip all of it."""
    return arch.l2_capacity(min(len(schedule.ctas), arch.sm_count))


def l2_resident(schedule: Schedule, arch: ArchProfile, readers: dict[str, int] | None = None) -> frozenset[str]:
    """The tensors in L2 at launch under the schedule's ``l2_at_launch`` (``readers``: :func:`read_tpcs`)."""
    if schedule.l2_at_launch == "inputs":
        if readers is None:
            readers = read_tpcs(schedule, arch)
        capacity = launch_l2_bytes(schedule, arch)
        return resident_at_launch(schedule, capacity, readers, arch.l2_shared_footprint_at(capacity))
    return frozenset()


ACROSS_TPCS = -1
"""In place of a TPC: a tile SMs of more than one TPC read."""


def read_tpcs(schedule: Schedule, arch: ArchProfile) -> dict[str, int]:
    """Global tile -> the TPC its readers' SMs are on, or :data:`ACROSS_TPCS`, with CTA ``i`` on SM
    ``i % sm_count``: the first wave's placement (``Machine._launcher`` hands out every SM once,
    then each again); later waves are placed as slots free up."""
    readers: dict[str, int] = {}
    for cta in schedule.ctas:
        tpc = arch.l2_tpc(cta.index % arch.sm_count)
        for ops in cta.roles:
            for op in ops:
                if op.global_traffic() == "read":
                    key = op.src or op.dst.content
                    if readers.setdefault(key, tpc) != tpc:
                        readers[key] = ACROSS_TPCS
    return readers


def resident_at_launch(schedule: Schedule, capacity: float, readers: dict[str, int] | None = None,
                       shared_footprint: float = 1.0) -> frozenset[str]:
    """The input tensors still in L2 when the kernel starts, if its inputs were written
    just before the launch (in the order the kernel first reads them) and then its
    outputs -- what ``kernels.runner.gemm`` does.  L2 keeps the most recent writes: walking back
    from the outputs, a tensor is resident while it and everything written after it
    fit.  A tile that SMs of more than one TPC read takes ``shared_footprint`` times its bytes
    (:meth:`ArchProfile.l2_shared_footprint_at`: the steady state of a kernel launched again on
    the same inputs).  A tensor that only partly fits counts as cold (the conservative side)."""
    readers = readers or {}
    reads: dict[str, dict[str, float]] = {}
    written = 0.0
    for cta in schedule.ctas:
        for role, ops in zip(schedule.roles, cta.roles, strict=True):
            for op in ops:
                io = op.global_traffic()
                if io == "read":  # keyed by the global tile it reads
                    key = op.src or op.dst.content
                    dst = getattr(op, "dst", None)  # a load into registers has none: each warp reads its share
                    per_warp = op.per_warp and (dst is None or dst.part == WARP_PART)
                    size = op.bytes * (role.warps if per_warp else 1)
                    reads.setdefault(tensor_of(key), {})[key] = size * (shared_footprint if readers.get(key) == ACROSS_TPCS else 1)
                elif io == "write":
                    written += op.bytes * (role.warps if op.per_warp else 1)
    resident = []
    for name in reversed(list(reads)):
        written += sum(reads[name].values())
        if written > capacity:
            break
        resident.append(name)
    return frozenset(resident)


class Pipe:
    """A fluid FIFO bandwidth server."""

    __slots__ = ("rate", "free_at", "busy")

    def __init__(self, rate: float):
        self.rate = rate
        self.free_at = 0.0
        self.busy = 0.0
        """Cycles spent serving (for utilisation)."""

    def serve(self, now: float, nbytes: float) -> float:
        """Queue ``nbytes`` at ``now``; return when the last byte leaves."""
        service = nbytes / self.rate
        start = self.free_at if self.free_at > now else now
        self.free_at = start + service
        self.busy += service
        return self.free_at


class MemorySystem:
    """Chip-wide L2 and HBM bandwidth shared by all SMs, and the L2's contents.

    A tile read by SMs of more than one TPC (:meth:`ArchProfile.l2_tpc`) takes
    :meth:`ArchProfile.l2_shared_footprint_at` times its bytes of the LRU's capacity, from the
    second TPC's read on (results/silicon/microbench/2026-12-05_h200_l2_side_map.md;
    docs/semantics.md "L2 partitions")."""

    def __init__(self, arch: ArchProfile, resident: frozenset[str] = frozenset(),
                 launch_readers: dict[str, int] | None = None, capacity: float | None = None):
        self.resident = resident
        """Tensors in L2 at launch: the first touch of their tiles hits."""
        self._touched: set[str] = set()
        """Tiles of resident tensors already read: what was in L2 at launch is there for the first
        touch only -- a tile the LRU has since evicted is read from DRAM again, like any other."""
        self.launch_readers = launch_readers or {}
        """Tile -> its readers' TPC (``read_tpcs``): a resident tile read across TPCs takes its footprint at launch."""
        self.l2_pipe = Pipe(arch.l2_bytes_per_clk)
        self.merge_window = arch.l2_merge_window_cycles
        self.hbm_pipe = Pipe(arch.hbm_bytes_per_clk)
        self.store_pipe = Pipe(arch.global_store_chip_per_clk)
        """Warp ``st.global`` instructions, all SMs together (the L2 takes so many per cycle)."""
        self.capacity = arch.l2_bytes if capacity is None else capacity
        """Bytes the LRU holds: the whole L2, or what a launch on few SMs reaches (:func:`launch_l2_bytes`)."""
        self.extra_copy = arch.l2_shared_footprint_at(self.capacity) - 1.0
        self._lru: OrderedDict[str, float] = OrderedDict()
        """Tile -> the bytes of L2 it occupies (its bytes, more once a second TPC has read it)."""
        self._readers: dict[str, int] = {}
        """Tile -> the TPC that has read it since it came into L2, or ACROSS_TPCS."""
        self._used = 0.0
        self._in_l2_at: dict[str, float] = {}
        """Tile -> the cycle its fill from DRAM is in L2 (for the tiles a miss is bringing in)."""
        self._asked: dict[str, tuple[float, float]] = {}
        """Tile -> (when, done): the latest read of it that asked the L2 for most of its lines,
        and when its last byte clears the chip -- what a read of the same tile soon after shares."""
        self._writes = 0
        self.hits = 0
        self.misses = 0
        self.written = 0
        """Bytes written (each sent to DRAM as it is written)."""

    def read(self, now: float, key: str, nbytes: int, tpc: int = 0) -> tuple[bool, float]:
        """A read of global tile ``key`` by an SM of TPC ``tpc``: (L2 hit?, when its last byte
        clears the chip -- for a hit on a fill still in flight, no earlier than the fill is in L2)."""
        lru = self._lru
        if key not in lru and self.resident and key not in self._touched and tensor_of(key) in self.resident:
            # written just before the launch: in L2 already, with its footprint if read across TPCs
            self._touched.add(key)
            self._insert(key, nbytes, ACROSS_TPCS if self.launch_readers.get(key) == ACROSS_TPCS else tpc)
        if key in lru:
            lru.move_to_end(key)
            self.hits += 1
            first = self._readers[key]
            if first != tpc and first != ACROSS_TPCS:  # a second TPC's first read: the footprint
                self._readers[key] = ACROSS_TPCS
                extra = nbytes * self.extra_copy
                lru[key] += extra
                self._used += extra
                self._evict()
            done = self._send(now, key, nbytes)
            if self._in_l2_at:
                filled = self._in_l2_at.get(key)
                if filled is not None and filled > done:
                    return True, filled
            return True, done
        self.misses += 1
        self._insert(key, nbytes, tpc)
        done = self.hbm_pipe.serve(now, nbytes)
        return False, max(done, self._send(now, key, nbytes))

    def _send(self, now: float, key: str, nbytes: int) -> float:
        """When the L2 has sent ``nbytes`` of tile ``key`` to an SM that asked at ``now``.

        The lines go through the chip's pipe, except those another SM's read of the tile is
        still fetching: two SMs asking for the same lines at once get them fetched once
        (kernels/microbench/l2_stagger.cu: a pair reading the same bytes together takes what one
        reader does; 1,000 cycles apart, what two distinct readers do; a line read long before is
        no cheaper).  A read ``dt`` cycles after another of the same tile that is still under way
        shares ``1 - dt / l2_merge_window_cycles`` of its bytes, and is done no sooner than that
        one nor than its own bytes could stream."""
        pipe = self.l2_pipe  # Pipe.serve, inlined: this is on every TMA load's path
        charged = float(nbytes)
        asked = self._asked.get(key) if self.merge_window else None
        if asked is not None and asked[1] > now:
            shared = 1.0 - (now - asked[0]) / self.merge_window
            if shared > 0.0:
                charged = nbytes * (1.0 - min(1.0, shared))
        done = now
        if charged:
            service = charged / pipe.rate
            start = pipe.free_at if pipe.free_at > now else now
            pipe.free_at = done = start + service
            pipe.busy += service
        if charged < nbytes:
            done = max(done, asked[1], now + nbytes / pipe.rate)
        if charged >= nbytes / 2:  # this read asked for most of its lines itself: later ones share it
            self._asked[key] = (now, done)
        return done

    def filling(self, key: str, in_l2_at: float) -> None:
        """The miss on ``key`` just read brings its data into L2 at ``in_l2_at``: the reader's
        landing less the L2-hit latency (from L2 on, its path is a hit's)."""
        self._in_l2_at[key] = in_l2_at

    def _insert(self, key: str, nbytes: int, tpc: int) -> None:
        size = nbytes * (1.0 + self.extra_copy) if tpc == ACROSS_TPCS else float(nbytes)
        self._lru[key] = size
        self._readers[key] = tpc
        self._used += size
        self._evict()

    def _evict(self) -> None:
        """Drop least recently used tiles while over capacity (never the last one left)."""
        lru = self._lru
        while self._used > self.capacity and len(lru) > 1:
            old, size = lru.popitem(last=False)
            self._used -= size
            del self._readers[old]
            self._in_l2_at.pop(old, None)
            self._asked.pop(old, None)

    def write(self, now: float, nbytes: int, tpc: int = 0) -> float:
        """A write of ``nbytes`` from an SM of TPC ``tpc``: when its last byte clears the
        L2.  Its bytes take their place in the LRU, as a tile of their own (kernels write an
        output once; one that writes what it read holds it twice), and go to DRAM now, queued
        in the HBM pipe with the misses: the steady state of repeated launches, whose written
        lines all go back (docs/semantics.md "Written bytes and DRAM")."""
        self._writes += 1
        self.written += nbytes
        self._insert(f"~write{self._writes}", nbytes, tpc)  # '~' starts no tensor name
        self.hbm_pipe.serve(now, nbytes)
        return self.l2_pipe.serve(now, nbytes)


class MmaUnit:
    """One SM's tensor core: an in-order queue that also completes in order."""

    __slots__ = ("free_at", "busy", "last_done")

    def __init__(self) -> None:
        self.free_at = 0.0
        self.busy = 0.0
        self.last_done = 0.0

    def submit(self, now: float, occupancy: float, tail: float, issued: float = 0.0) -> tuple[float, float, float]:
        """(start, unit free again, results complete) for an MMA issued at ``now`` whose last
        instruction leaves the issuing warps at ``issued`` (a wgmma's issue chain)."""
        start = self.free_at if self.free_at > now else now
        self.free_at = start + occupancy
        self.busy += occupancy
        done = self.free_at + tail
        if issued + tail > done:
            done = issued + tail
        if done < self.last_done:  # a perturbed predecessor holds completion order
            done = self.last_done
        self.last_done = done
        return start, self.free_at, done


class SharedTensorCore:
    """One SM's tensor core as the wgmma blocks in flight on it share it.

    The unit interleaves the instructions of the blocks in flight: each advances at an equal
    share of the unit, none faster than its own issue chain feeds it (``cap``: the share that
    makes a block alone leave the unit as its chain ends), what a capped block leaves going to
    the others (processor sharing, water-filled).  A block joins the sharing when its chain
    hands over its first instruction; the blocks already in flight are first served, at their
    own pace, the instructions the unit holds of them, ``wgmma_unit_queue_instructions`` of each
    (``enter``'s ``held``), the newcomer taking what they leave.  So a block that
    starts later slows the ones in flight, less the later it starts.  Measured
    (kernels/microbench/wgmma_share.cu, H200): two CTAs an SM starting eight m64n128k16 together
    finish at ~1,010 and ~1,110 cycles where one alone takes 590 (an in-order queue would finish
    the first at ~590), and the first slows less the later the second starts (939 / 821 / 716 /
    591 at 64 / 128 / 256 / 512 cycles apart); results/silicon/microbench/2026-12-03_h200_wgmma_share.md.

    Pure bookkeeping of work left: the tensor-core unit of the engine arms one wake-up per SM at
    :meth:`next_change` and calls :meth:`leave` then."""

    __slots__ = ("blocks", "t", "version")

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        """The blocks in flight, in issue order."""
        self.t = 0.0
        """The cycle ``blocks`` were last advanced to."""
        self.version = 0
        """Bumped at every change: a wake-up armed before it is stale."""

    def enter(self, now: float, work: float, first: float, last: float, held: float, token) -> float:
        """A block of ``work`` cycles of the unit is issued at ``now``; its issue chain hands the
        unit its instructions from ``first`` to ``last``, at most at the share that ends it with
        its chain (``cap``).  Each block in flight is owed ``held`` more cycles ahead of it (the
        instructions the unit already holds).  Returns when it would leave if no other block
        entered (what the log records at issue)."""
        self._advance(now)
        for b in self.blocks:
            if b.starts <= now:
                b.owed = max(b.owed, min(b.left, held))
        cap = work / (last - first) if last - first > work else 1.0
        mine = _Block(work, cap, token, first, max(last, first))
        self.blocks.append(mine)
        _share(self.blocks, now)
        self.version += 1
        if len(self.blocks) == 1:
            return first + work / cap
        # run a copy forward with no one else entering, until this block leaves
        sim = [b.copy() for b in self.blocks]
        mine, t = sim[-1], now
        while True:
            t = _flow(sim, t, _next_change(sim, t))
            if mine.left <= _EPS:
                return t
            sim = [b for b in sim if b.left > _EPS]
            _share(sim, t)

    def next_change(self) -> float | None:
        """When, as things stand, a block next leaves, is paid what it was owed, joins, or has its
        cap lifted."""
        if not self.blocks:
            return None
        return self.t + _next_change(self.blocks, self.t)

    def leave(self, now: float) -> list:
        """Advance to ``now``: the tokens of the blocks whose work is done, in issue order."""
        self._advance(now)
        gone = [b.token for b in self.blocks if b.left <= _EPS]
        if gone:
            self.blocks = [b for b in self.blocks if b.left > _EPS]
            _share(self.blocks, now)
        self.version += 1
        return gone

    def _advance(self, now: float) -> None:
        """Bring the blocks to ``now``, through the changes on the way."""
        t = self.t
        while t < now:
            t = _flow(self.blocks, t, min(_next_change(self.blocks, t), now - t))
        self.t = now


class _Block:
    """One wgmma block in flight on a :class:`SharedTensorCore`."""

    __slots__ = ("left", "cap", "rate", "token", "starts", "chain_ends", "owed")

    def __init__(self, left: float, cap: float, token, starts: float, chain_ends: float, rate: float = 0.0,
                 owed: float = 0.0):
        self.left = left
        """Cycles of the unit's work still to do."""
        self.cap = cap
        """The most of the unit its chain feeds it, until the chain ends (then all of it)."""
        self.rate = rate
        """Its share of the unit now."""
        self.token = token
        self.starts = starts
        """When its chain hands over its first instruction: it joins the sharing then."""
        self.chain_ends = chain_ends
        self.owed = owed
        """Cycles of its work served ahead of the others: the instructions the unit held of it
        when a later block came."""

    def copy(self) -> _Block:
        return _Block(self.left, self.cap, self.token, self.starts, self.chain_ends, self.rate, self.owed)

    def cap_at(self, t: float) -> float:
        return self.cap if t < self.chain_ends else 1.0


def _share(blocks: list[_Block], t: float) -> None:
    """The unit's shares at ``t``: first the blocks still owed their held instructions, each at
    its cap; then equal shares of the rest among the others that have joined, none above its cap,
    a capped block's rest going to the others (water-filling)."""
    for b in blocks:
        b.rate = 0.0
    left = 1.0
    owed = [b for b in blocks if b.owed > _EPS and b.starts <= t]
    for k, b in enumerate(owed):
        b.rate = min(b.cap_at(t), left / (len(owed) - k))
        left -= b.rate
    joined = [b for b in blocks if b.owed <= _EPS and b.starts <= t]
    n = len(joined)
    for k, b in enumerate(sorted(joined, key=lambda b: b.cap_at(t))):
        b.rate = min(b.cap_at(t), left / (n - k))
        left -= b.rate


def _next_change(blocks: list[_Block], t: float) -> float:
    """Cycles from ``t`` to the next change: a block leaves, is paid what it was owed, joins, or
    has had its last instruction handed over (its cap lifts)."""
    step = float("inf")
    for b in blocks:  # one pass, not four generators: this runs at every wgmma block's entry and exit
        rate = b.rate
        if rate > 0:
            if b.left / rate < step:
                step = b.left / rate
            if b.owed > _EPS and b.owed / rate < step:
                step = b.owed / rate
        if b.starts > t and b.starts - t < step:
            step = b.starts - t
        if b.cap < 1.0 and b.chain_ends > t and b.chain_ends - t < step:
            step = b.chain_ends - t
    return step


def _flow(blocks: list[_Block], t: float, step: float) -> float:
    """Serve ``step`` cycles at the current shares, then share again; the new time."""
    for b in blocks:
        b.left -= b.rate * step
        b.owed -= b.rate * step
    t += step
    _share(blocks, t)
    return t


_EPS = 1e-6
"""Unit cycles of work below which a block has left (float residue of the shares)."""


class Scheduler:
    """One SM sub-partition's warp scheduler: its issue slots and the pipes it issues register
    math to, each a server of cycles (``engine.units.alu``).  The pipes work at the same time:
    a MUFU.EX2 mixed with up to four FFMA costs the EX2 alone on the H200
    (results/silicon/microbench/2026-12-02_h200_alu_mix.md)."""

    __slots__ = ("issue", "mufu", "half", "shfl")

    def __init__(self):
        self.issue = Pipe(1.0)
        self.mufu = Pipe(1.0)
        self.half = Pipe(1.0)
        """The ALU pipe: FMNMX, F2FP."""
        self.shfl = Pipe(1.0)


class SmUnits:
    """The per-SM units a CTA's ops use."""

    def __init__(self, index: int, arch: ArchProfile):
        self.index = index
        self.tpc = arch.l2_tpc(index)
        """The TPC this SM belongs to (what the L2 footprint of a line it reads depends on)."""
        self.tma = Pipe(arch.tma_sm_bytes_per_clk)
        self.lsu = Pipe(1.0)
        """Cycles of the SM's load/store unit (``engine.units.lsu.lsu_cycles``: per instruction and per byte)."""
        self.stores = Pipe(1.0 / arch.global_store_issue_cycles)
        """Warp ``st.global`` instructions this SM issues (a fixed cost each, whatever the width)."""
        self.smem = Pipe(arch.smem_bytes_per_clk)
        self.alu = [Scheduler() for _ in range(arch.sm_subpartitions)]
        self.working = [0] * arch.sm_subpartitions
        """Warps paying local work on each sub-partition now, every CTA's (``engine.issue``)."""
        """Each warp scheduler's issue slots and arithmetic pipes (``engine.units.alu``)."""
        self.mma = MmaUnit()
        self.wgmma = SharedTensorCore()
        """The same tensor core as the wgmma blocks in flight share it."""
        self.tmem_free = arch.tmem_columns
        self.tmem_waiters: list = []
        self.descriptors: set[str] = set()
        """Tensors whose TMA descriptor this SM has fetched in this kernel (their first load paid for it)."""


class LatencyTables:
    """Size-dependent latencies from the profile, with their zero-byte intercepts."""

    def __init__(self, arch: ArchProfile):
        self.l2 = arch.tma_l2_latency
        self.dram = arch.tma_dram_latency
        self.store = arch.tma_store_latency
        self.l2_base = interpolate(self.l2, 0)
        self.dram_base = interpolate(self.dram, 0)
        self.store_base = interpolate(self.store, 0)
        self._cache: dict[tuple[int, int], float] = {}

    def load(self, hit: bool, nbytes: int) -> tuple[float, float]:
        """(latency, zero-byte latency) of a TMA load from L2 (hit) or DRAM."""
        key = (hit, nbytes)
        lat = self._cache.get(key)
        if lat is None:
            lat = self._cache[key] = interpolate(self.l2 if hit else self.dram, nbytes)
        return lat, (self.l2_base if hit else self.dram_base)

    def store_latency(self, nbytes: int) -> tuple[float, float]:
        key = (2, nbytes)
        lat = self._cache.get(key)
        if lat is None:
            lat = self._cache[key] = interpolate(self.store, nbytes)
        return lat, self.store_base
