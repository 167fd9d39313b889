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

from collections import defaultdict, namedtuple
from typing import Any, NamedTuple


class Event(NamedTuple):
    """An event of a kind without a record of its own (traps, inits, cluster barriers...)."""

    t: float
    kind: str
    cta: int
    who: str
    op: int
    data: dict[str, Any]


class _Absent:
    """A field this event does not have (``data`` leaves it out); not ``None``, which a
    field may hold (an access's ``columns``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()

_new = tuple.__new__


def _record(kind: str, fields: str, optional: str = ""):
    """A record class for one frequent kind: a tuple ``(t, kind, cta, who, op, *fields,
    *optional)``.  A full-chip replay writes ~1.6 M events, and a dict per event made the
    log most of the replay's memory and ~40% of its time (b200 4096^3: 15.6 s with the
    dicts, 9.4 s storing nothing); a tuple of slots is a third of the size.  Checkers read
    fields as attributes (``e.seq``); ``e.data`` rebuilds the dict the event had, without
    the optional fields it lacks, for everything else."""
    names = fields.split() + optional.split()
    base = namedtuple(f"{kind.title().replace('_', '')}Event", ["t", "kind", "cta", "who", "op", *names])

    if optional:
        def data(self) -> dict[str, Any]:
            return {k: v for k, v in zip(names, self[5:]) if v is not ABSENT}
    else:
        def data(self) -> dict[str, Any]:
            return dict(zip(names, self[5:]))

    cls = type(base.__name__, (base,), {"__slots__": (), "data": property(data), "__module__": __name__,
                                        "_defaults": (ABSENT,) * len(optional.split()),
                                        "kind_name": kind})
    cls.__qualname__ = cls.__name__
    return cls


WaitEvent = _record("wait", "barrier parity use begin completed_begin completed_return blocked tile k seqs upto warp at")
AccessEvent = _record("access", "buffer stage part mode content t0 t1 tile seq clock lanes", "mma owner columns")
ObserveEvent = _record("observe", "seqs warp at how")
ArriveEvent = _record("arrive", "barrier use count completed",
                      "unreleased who_issued empty_groups from_cta clock")
CompleteTxEvent = _record("complete_tx", "barrier use bytes completed issue who_issued", "from_cta clock")
PhaseEvent = _record("phase", "barrier completed")
IssueEvent = _record("issue", "what threads tile k", "barrier use bytes lands to")
ExpectTxEvent = _record("expect_tx", "barrier use bytes completed", "from_cta")
LaneReleaseEvent = _record("lane_release", "seqs warp at how")

RECORDS = {cls.kind_name: cls for cls in (WaitEvent, AccessEvent, ObserveEvent, ArriveEvent, CompleteTxEvent,
                                         PhaseEvent, IssueEvent, ExpectTxEvent, LaneReleaseEvent)}
"""Kind -> its record class."""


class EventLog:
    """Append-only list of events with a per-kind index built on first query."""

    def __init__(self) -> None:
        self.events: list = []
        self._by_kind: dict[str, list] | None = None
        self.derived: dict[str, Any] = {}
        """Indexes checkers build from the finished log and share (``races.Knowledge``)."""

    def emit(self, t: float, kind: str, cta: int, who: str, op: int, **data: Any) -> None:
        cls = RECORDS.get(kind)
        if cls is None:
            # tuple.__new__ directly: the NamedTuple constructor costs a Python call per event.
            self.events.append(_new(Event, (t, kind, cta, who, op, data)))
            return
        names = cls._fields[5:]
        try:
            values = [data.pop(k) for k in names[:len(names) - len(cls._defaults)]]
        except KeyError as e:
            raise TypeError(f"a {kind!r} event needs the field {e.args[0]!r}") from None
        values += [data.pop(k, ABSENT) for k in names[len(values):]]
        if data:
            raise TypeError(f"a {kind!r} event has no field(s) {sorted(data)}")
        self.events.append(_new(cls, (t, kind, cta, who, op, *values)))

    def append(self, event) -> None:
        """Add a record built by its class (the engine's hot paths: no keyword dict)."""
        self.events.append(event)

    def of_kind(self, kind: str) -> list:
        if self._by_kind is None or sum(map(len, self._by_kind.values())) != len(self.events):
            index: dict[str, list] = defaultdict(list)
            for e in self.events:
                index[e.kind].append(e)
            self._by_kind = index
        return self._by_kind.get(kind, [])

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self):
        return iter(self.events)
