"""One int object for each value a schedule and its event log hold many times over: barrier uses,
op indices, vector-clock counts.

CPython keeps one object for each int from -5 to 256; every larger int an expression makes is a new
28-byte object.  A replay's events each name their op by index and carry their warp's clock count,
and ``enumerate`` or ``+= 1`` made those anew in every warp of every CTA (at 4096^3 on the full chip,
~40 MB of equal ints in the log); a schedule's ops count their barrier's uses the same way (1.1 M
objects of 1,538 values at 8192x8192x4096; ``benchmarks/memory_by_stage.py``, issue 15).  Taking
them from one table makes equal values one object; values never change.  The table stops at
``LIMIT`` values (36 MB if a replay ever reaches it): a larger value is itself, as before.
"""

from __future__ import annotations

LIMIT = 1 << 20

_TABLE: list[int] = list(range(1 << 12))


def indices(n: int) -> list[int] | range:
    """0 .. n - 1 as the table's objects, for ``zip`` (a list that may run longer than ``n``);
    past ``LIMIT``, a plain range."""
    if n > len(_TABLE):
        if n > LIMIT:
            return range(n)
        _TABLE.extend(range(len(_TABLE), min(LIMIT, max(n, 2 * len(_TABLE)))))
    return _TABLE


def shared(n: int) -> int:
    """``n`` as the table's object for it (``n`` itself where it is negative or past ``LIMIT``)."""
    if 0 <= n < len(_TABLE):
        return _TABLE[n]
    if n < 0 or n >= LIMIT:
        return n
    indices(n + 1)
    return _TABLE[n]
