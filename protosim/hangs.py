"""Where a replay hung, in the kernel's terms: the barrier array, the role, the k-tile.

A kernel's watchdog knows what a thread knows when its wait runs out of budget: which
barrier array it waits on (``tma_bar``, not the schedule's ``tma_bar[1]``) and at which
stage, the role of the thread, and the thread's own k-tile counter -- running over every
output tile it walked, as a persistent kernel counts it.  The silicon records
(``kernels/spec.py`` ``DIAG_FIELDS``) name a timeout that way, so the simulator names its
hangs the same way, and a reader compares the two without translating.

:func:`hang_sites` is the one function that does it; the cross-check matches silicon
timeouts against it and the deadlock explanation prints it.
"""

from __future__ import annotations

import re

from protosim._dataclass_cache import DataclassCache
from protosim.engine.result import RunResult
from protosim.ir import Schedule

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

_ARRAY = re.compile(r"^(?P<base>.*?)\[(?P<stage>\d+)\]$")


@dataclass(frozen=True)
class HangSite:
    """One warp stuck in an mbarrier wait, as the kernel would report it."""

    cta: int
    barrier: str
    """The barrier array: the declared name without its index (``tma_bar[1]`` -> ``tma_bar``)."""
    stage: int | None
    """The index in the array (None for a barrier that is not one of an array)."""
    role: str
    k: int | None
    """The waiting thread's running k-tile: k-tiles of the tiles it walked before this one,
    plus this op's k (None: the op is not in a k-loop, e.g. the epilogue's wait)."""
    who: str
    """The warp (``role.wN``)."""

    def __str__(self) -> str:
        stage = f"[{self.stage}]" if self.stage is not None else ""
        k = f" k{self.k}" if self.k is not None else ""
        return f"CTA {self.cta} {self.role} waits on {self.barrier}{stage}{k}"


def barrier_array(name: str) -> tuple[str, int | None]:
    """(array, index) of a declared barrier name: ``tma_bar[1]`` -> (``tma_bar``, 1)."""
    m = _ARRAY.match(name)
    return (m.group("base"), int(m.group("stage"))) if m else (name, None)


def running_k(schedule: Schedule, cta: int, role: str, tile: tuple[int, int] | None, k: int | None) -> int | None:
    """The k-tile counter of a thread of ``role`` in CTA ``cta`` at an op tagged
    (``tile``, ``k``): the k-tiles of every tile its program reached first, plus ``k``.

    Counted from the program itself (distinct k tags per tile, tiles in the order the
    role first touches them), so it needs no knowledge of the builder's config."""
    return _k_at(_tiles_walked(schedule, cta, role), tile, k)


def _k_at(walked: dict[tuple[int, int], int], tile: tuple[int, int] | None, k: int | None) -> int | None:
    if k is None or tile is None or tile not in walked:
        return k
    return walked[tile] + k


def _tiles_walked(schedule: Schedule, cta: int, role: str) -> dict[tuple[int, int], int]:
    """tile -> k-tiles of the tiles the role's program touched before it."""
    names = [r.name for r in schedule.roles]
    if role not in names:
        return {}
    ks: dict[tuple[int, int], set[int]] = {}
    for op in _program(schedule, cta)[names.index(role)]:
        if op.tile is not None and op.k is not None:
            ks.setdefault(op.tile, set()).add(op.k)
    walked, before = {}, 0
    for t, seen in ks.items():
        walked[t] = before
        before += len(seen)
    return walked


def _program(schedule: Schedule, cta: int):
    for prog in schedule.ctas:
        if prog.index == cta:
            return prog.roles
    raise KeyError(f"CTA {cta} is not in schedule {schedule.name!r}")


def hang_sites(result: RunResult) -> list[HangSite]:
    """Every mbarrier wait a warp of the replay is stuck in, in the order the warps began
    waiting (the first is what a watchdog would most likely name: silicon's first timeout
    is whichever hung thread began waiting first, by tens of cycles)."""
    sites = []
    walks: dict[tuple[int, str], dict] = {}  # one walk of a program per (CTA, role)
    for b in sorted(result.blocked, key=lambda b: (b.since, b.cta, b.who)):
        if b.on != "mbarrier":
            continue
        role = b.who.rsplit(".", 1)[0]
        array, stage = barrier_array(b.target)
        walk = walks.get((b.cta, role))
        if walk is None:
            walk = walks[(b.cta, role)] = _tiles_walked(result.schedule, b.cta, role)
        sites.append(HangSite(b.cta, array, stage, role, _k_at(walk, b.tile, b.k), b.who))
    return sites


_DATACLASSES.save()  # after the module's last dataclass
