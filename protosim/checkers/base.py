"""What every checker shares: the :class:`Finding` record and small log helpers."""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import Any

from protosim.engine.log import Event


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




def cyc(t: float) -> str:
    return f"{t:,.0f}"


def phase_times(events: list[Event]) -> dict[tuple[int, str, int], float]:
    """(cta, barrier, phase index) -> cycle the phase completed."""
    return {(e.cta, e.data["barrier"], e.data["completed"] - 1): e.t for e in events}


def producers(log, cta: int, barrier: str, use: int) -> list[Event]:
    """Arrivals and byte completions that belong to phase ``use`` of ``barrier``."""
    return [
        e
        for kind in ("arrive", "complete_tx")
        for e in log.of_kind(kind)
        if e.cta == cta and e.data["barrier"] == barrier and e.data["use"] == use
    ]


def describe_producer(e: Event) -> str:
    if e.kind == "complete_tx":
        return f"TMA bytes ({e.data['bytes']}) landed at cycle {cyc(e.t)}"
    if e.who == "mma":
        return f"tcgen05.commit arrived at cycle {cyc(e.t)}"
    return f"{e.who} arrived at cycle {cyc(e.t)}"
