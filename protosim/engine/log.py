"""The one event log a replay writes and every checker reads.

An :class:`Event` is ``(t, kind, cta, who, op, data)``: the cycle, what
happened, which CTA, which actor (``"mma.w1"`` for warp 1 of role ``mma``, or a
unit such as ``"tma"``), the index of the op in its role's program (-1 for unit
events without one) and a small dict of facts.  Kinds and their data:

``wait``         a barrier wait returned: barrier, parity, use, begin,
                 completed_begin, completed_return (phases completed when it
                 succeeded), blocked (bool); and, as an observation (below),
                 seqs / warp / at of the accesses the observed phase carried,
                 and upto: ((thread, seq), ...) -- all of that thread's MMA
                 accesses with seq <= seq (a tcgen05.commit covers every earlier
                 MMA of its thread, so a phase carries one number per thread)
``arrive``       barrier, use, count, completed (phases completed before it);
                 unreleased: seqs of stores all 32 lanes of the warp made since
                 they last synchronised, which this single-lane arrive does not
                 release; a tcgen05.commit's arrivals (who ``mma``) add who_issued,
                 and empty_groups for the threads that had issued no MMA
``expect_tx``    barrier, use, bytes, completed
``complete_tx``  barrier, use, bytes, completed (before it), issue (cycle)
``phase``        barrier, completed (new count), pending/tx reset
``access``       buffer, stage, part (None = all), mode ("r"/"w"), content,
                 t0, t1 (when the unit touches the data), tile, seq (issue order),
                 clock, lanes (lanes of the warp that executed the op: 1 or 32; a
                 TMA load's copy engine counts 1), mma (the issuing thread, on an
                 MMA's accesses only); the event's own time is the issue cycle
``issue``        an op that must have one issuer was issued: op kind, threads,
                 tile, k
``observe``      a warp learnt that accesses completed (happens-before):
                 seqs, warp (its index in the CTA), at (its clock), how
``lane_release`` a warp's lanes synchronised (__syncwarp, bar.sync, named barrier):
                 seqs of the stores all 32 lanes made since the last one, now known
                 to every lane -- warp / at as in ``observe``, how
``trap``         undefined behaviour: target (barrier or unit), what, ub (kind), detail
``ub``           undefined behaviour the replay ran through (``tolerate_ub``, kinds in
                 SILICON_TOLERATED_UB): target, what, ub, detail, state (before),
                 after (the state silicon showed, now installed)
``sync``         a bar.sync released: barrier id, threads
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple


class Event(NamedTuple):
    t: float
    kind: str
    cta: int
    who: str
    op: int
    data: dict[str, Any]


_new = tuple.__new__


class EventLog:
    """Append-only list of events with a per-kind index built on first query."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._by_kind: dict[str, list[Event]] | None = None
        self.derived: dict[str, Any] = {}
        """Indexes checkers build from the finished log and share (``races.Knowledge``)."""

    def emit(self, t: float, kind: str, cta: int, who: str, op: int, **data: Any) -> None:
        # tuple.__new__ directly: the NamedTuple constructor costs a Python call per event.
        self.events.append(_new(Event, (t, kind, cta, who, op, data)))

    def of_kind(self, kind: str) -> list[Event]:
        if self._by_kind is None or sum(map(len, self._by_kind.values())) != len(self.events):
            index: dict[str, list[Event]] = defaultdict(list)
            for e in self.events:
                index[e.kind].append(e)
            self._by_kind = index
        return self._by_kind.get(kind, [])

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self):
        return iter(self.events)
