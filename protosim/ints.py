"""One int object for each value a schedule and its event log hold many times over: barrier uses,
op indices, vector-clock counts.

CPython keeps one object for each int from -5 to 256; every larger int an expression makes is a new
28-byte object.  A replay's events each name their op by index and carry their warp's clock count,
and ``enumerate`` or ``+= 1`` made those anew in every warp of every CTA (at 4096^3 on the full chip,
~40 MB of equal ints in the log); a schedule's ops count their barrier's uses the same way (1.1 M
objects of 1,538 values at 8192x8192x4096; ``benchmarks/memory_by_stage.py``, issue 15).  Taking
them from one table makes equal values one object; values never change.
"""

from __future__ import annotations

_TABLE: list[int] = list(range(1 << 12))


def indices(n: int) -> list[int]:
    """A list whose first ``n`` items are 0 .. n - 1, one object each (longer than ``n``: zip it)."""
    if n > len(_TABLE):
        _TABLE.extend(range(len(_TABLE), max(n, 2 * len(_TABLE))))
    return _TABLE


def shared(n: int) -> int:
    """``n`` (>= 0) as the table's object for it."""
    if n >= len(_TABLE):
        indices(n + 1)
    return _TABLE[n]
