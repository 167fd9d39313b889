"""Hardware units as bandwidth pipes and in-order queues.

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
the persistent scheduler's ``l2_group_size`` matter, as it does on silicon.

The tensor core is an in-order queue per SM: an MMA of occupancy ``o`` starts at
``max(now, free_at)``, frees the unit at ``start + o`` and completes (results
visible, commit may fire) ``tail`` cycles later -- the issue-to-issue interval
and the latency of TIMING_SOURCES.md.
"""

from __future__ import annotations

from collections import OrderedDict

from protosim.arch import ArchProfile, interpolate


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
    """Chip-wide L2 and HBM bandwidth shared by all SMs, and the L2's contents."""

    def __init__(self, arch: ArchProfile):
        self.l2_pipe = Pipe(arch.l2_bytes_per_clk)
        self.hbm_pipe = Pipe(arch.hbm_bytes_per_clk)
        self.capacity = arch.l2_bytes
        self._lru: OrderedDict[str, int] = OrderedDict()
        self._used = 0
        self.hits = 0
        self.misses = 0

    def read(self, now: float, key: str, nbytes: int) -> tuple[bool, float]:
        """A read of global tile ``key``: (L2 hit?, when its last byte clears the chip)."""
        lru = self._lru
        if key in lru:
            lru.move_to_end(key)
            self.hits += 1
            pipe = self.l2_pipe  # Pipe.serve, inlined: this is on every TMA load's path
            service = nbytes / pipe.rate
            start = pipe.free_at if pipe.free_at > now else now
            pipe.free_at = start + service
            pipe.busy += service
            return True, pipe.free_at
        self.misses += 1
        lru[key] = nbytes
        self._used += nbytes
        while self._used > self.capacity and len(lru) > 1:
            _, size = lru.popitem(last=False)
            self._used -= size
        done = self.hbm_pipe.serve(now, nbytes)
        return False, max(done, self.l2_pipe.serve(now, nbytes))

    def write(self, now: float, nbytes: int) -> float:
        """Writes land in L2 (write-back); HBM traffic for them is not modelled."""
        return self.l2_pipe.serve(now, nbytes)


class MmaUnit:
    """One SM's tensor core: an in-order queue that also completes in order."""

    __slots__ = ("free_at", "busy", "last_done")

    def __init__(self) -> None:
        self.free_at = 0.0
        self.busy = 0.0
        self.last_done = 0.0

    def submit(self, now: float, occupancy: float, tail: float) -> tuple[float, float, float]:
        """(start, unit free again, results complete) for an MMA issued at ``now``."""
        start = self.free_at if self.free_at > now else now
        self.free_at = start + occupancy
        self.busy += occupancy
        done = self.free_at + tail
        if done < self.last_done:  # a perturbed predecessor holds completion order
            done = self.last_done
        self.last_done = done
        return start, self.free_at, done


class SmUnits:
    """The per-SM units a CTA's ops use."""

    def __init__(self, index: int, arch: ArchProfile):
        self.index = index
        self.tma = Pipe(arch.tma_sm_bytes_per_clk)
        self.lsu = Pipe(arch.lsu_bytes_per_clk)
        self.smem = Pipe(arch.smem_bytes_per_clk)
        self.mma = MmaUnit()
        self.tmem_free = arch.tmem_columns
        self.tmem_waiters: list = []


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
