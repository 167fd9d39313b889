"""What every checker shares: the :class:`Finding` record and small log helpers."""

from __future__ import annotations

import math

from dataclasses import field
from typing import Any

from protosim._dataclass_cache import DataclassCache
from protosim.engine.log import ABSENT, Event

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a replay, with the evidence that proves it.

    ``tiles`` lists output tiles whose values this finding corrupts (data
    hazards); the outcome class is derived from findings, never the reverse.
    """

    kind: str
    cta: int
    who: str
    op: int
    cycle: float
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    tiles: tuple[tuple[int, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "cta": self.cta,
            "who": self.who,
            "op": self.op,
            "cycle": round(self.cycle, 1),
            "message": self.message,
            "evidence": plain(self.evidence),
            "tiles": [list(t) for t in self.tiles],
        }


def plain(v: Any) -> Any:
    """Evidence as JSON values: tuples to lists, records to their fields, floats to one
    decimal, and non-finite floats to strings (JSON has none; ``JSON.parse`` rejects them)."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, float):
        return round(v, 1) if math.isfinite(v) else str(v)
    if hasattr(v, "__dataclass_fields__"):
        return {k: plain(getattr(v, k)) for k in v.__dataclass_fields__}
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return str(v)




def storage_key(e: Event) -> tuple[int, str, int]:
    """(owner CTA, buffer, stage) of an access event: a DSMEM access, a multicast copy or a
    2-CTA MMA operand names the CTA whose storage it touches (``owner``)."""
    owner = e.owner
    return (e.cta if owner is ABSENT else owner, e.buffer, e.stage)


class Cells:
    """The pieces of a buffer stage accesses are checked on: its parts (what warps write
    separately) and, for TMEM accessed by column ranges, the spans between every range
    boundary the replay used -- so two accesses conflict exactly where they overlap.

    A cell is a part number, or ``(part, (lo, hi))`` for a buffer accessed by columns."""

    def __init__(self, schedule, log) -> None:
        self.parts = {b.name: b.parts for b in schedule.buffers}
        width = {b.name: b.columns for b in schedule.buffers}
        cuts: dict[str, set[int]] = {}
        for e in log.of_kind("access"):
            c = e.columns
            if c is not None and c is not ABSENT:
                cuts.setdefault(e.buffer, {0, width[e.buffer]}).update(c)
        self.spans = {name: list(zip(sorted(p), sorted(p)[1:])) for name, p in cuts.items()}
        self._of: dict[tuple, tuple] = {}

    def of(self, e: Event) -> tuple:
        """The cells access event ``e`` covers (the same few answers for millions of events:
        remembered per buffer, part and column range)."""
        key = (e.buffer, e.part, e.columns)
        cells = self._of.get(key)
        if cells is None:
            cells = self._of[key] = self._cells(*key)
        return cells

    def _cells(self, buffer: str, part: int | None, c) -> tuple:
        parts = range(self.parts[buffer]) if part is None else (part,)
        spans = self.spans.get(buffer)
        if spans is None:
            return tuple(parts)
        chosen = spans if c is None or c is ABSENT else [s for s in spans if c[0] <= s[0] and s[1] <= c[1]]
        return tuple((p, s) for p in parts for s in chosen)

    def all(self, buffer: str) -> list:
        parts = range(self.parts[buffer])
        spans = self.spans.get(buffer)
        return list(parts) if spans is None else [(p, s) for p in parts for s in spans]

    @staticmethod
    def split(cell) -> tuple[int, tuple[int, int] | None]:
        """(part, column span or None) of a cell."""
        return (cell, None) if not isinstance(cell, tuple) else cell


def columns_words(span: tuple[int, int] | None) -> str:
    return f" columns {span[0]}..{span[1] - 1}" if span else ""


def where(e: Event) -> str:
    """``CTA n`` of the storage an access event touched, said from the issuer's side:
    empty for its own CTA, ``CTA 1's `` for a peer's."""
    owner = e.owner
    return "" if owner is ABSENT or owner == e.cta else f"CTA {owner}'s "


def role_of(who: str) -> str:
    """The role of a warp's name (``mma.w1`` -> ``mma``).  An event's ``op`` is an index in
    its role's program: ops of two roles with the same index are different ops."""
    return who.rpartition(".w")[0]


def cyc(t: float) -> str:
    return f"{t:,.0f}"


def phase_times(events: list[Event]) -> dict[tuple[int, str, int], float]:
    """(cta, barrier, phase index) -> cycle the phase completed."""
    return {(e.cta, e.barrier, e.completed - 1): e.t for e in events}


def producers(log, cta: int, barrier: str, use: int) -> list[Event]:
    """Arrivals and byte completions that belong to phase ``use`` of ``barrier``."""
    return [
        e
        for kind in ("arrive", "complete_tx")
        for e in log.of_kind(kind)
        if e.cta == cta and e.barrier == barrier and e.use == use
    ]


def describe_producer(e: Event) -> str:
    if e.kind == "complete_tx":
        return f"TMA bytes ({e.bytes}) landed at cycle {cyc(e.t)}"
    if e.who == "mma":
        return f"tcgen05.commit arrived at cycle {cyc(e.t)}"
    return f"{e.who} arrived at cycle {cyc(e.t)}"


_DATACLASSES.save()  # after the module's last dataclass
