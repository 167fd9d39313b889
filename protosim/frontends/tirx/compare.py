"""Two schedules of one kernel, op for op, up to names: :func:`op_diff`.

A builder names things by intent (``tma_bar[0]``, ``A``, ``A[m=0,k=3]``), the TIRx frontend
by the code (``full_bar[0]``, ``Asmem``, ``A[0,3]``).  Two schedules are the same protocol
when one consistent renaming of barriers, buffers and contents maps one onto the other and
every op then agrees field by field -- labels, ``tile`` and ``k`` aside (informative tags a
frontend cannot read from code).  Used by the tests that pin the builders to the kernels
(``tests/test_tirx_frontend.py``) and by ``protosim tirx-diff``.  An access's cluster rank
(``Access.cta``) and TMEM column range count; a rank equal to the executing CTA's own is its
own storage, a column range that is the whole stage is the stage (:func:`local`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from protosim.ir import Access, Op, Schedule

IGNORED = ("label", "tile", "k")

RANK_FIELDS = ("cta", "barrier_cta")
"""Fields naming the cluster rank of a barrier's CTA; ``None`` is the executing CTA's own."""


def local(op: Op, rank: int | None, columns: dict[str, int] | None = None) -> Op:
    """``op`` in one spelling: every rank equal to the executing CTA's own (``rank``) written
    ``None`` -- a plain local ``mbarrier.arrive`` and an arrive on ``mapa(addr, own rank)``, or a
    builder that names the own rank among a release's peers, reach the same barrier, and the
    engine resolves both to the CTA itself (``engine.resolve.peer``), as it does accesses --
    and a TMEM access's column range that is its whole stage (``columns[buffer]`` columns)
    written ``None`` ("all of it")."""
    columns = columns or {}

    def acc(x: Access) -> Access:
        if rank is not None and x.cta == rank:
            x = dataclasses.replace(x, cta=None)
        if x.columns is not None and x.columns == (0, columns.get(x.buffer, -1)):
            x = dataclasses.replace(x, columns=None)
        return x

    changes: dict[str, Any] = {}
    for f in dataclasses.fields(op):
        v = getattr(op, f.name)
        if f.name in RANK_FIELDS and rank is not None and v == rank:
            changes[f.name] = None
        elif isinstance(v, Access):
            w = acc(v)
            if w is not v:
                changes[f.name] = w
        elif isinstance(v, tuple) and any(isinstance(x, Access) for x in v):
            w = tuple(acc(x) if isinstance(x, Access) else x for x in v)
            if any(x is not y for x, y in zip(v, w)):
                changes[f.name] = w
    return dataclasses.replace(op, **changes) if changes else op


class _Names:
    """A bijection built as it goes: the first pairing of a name fixes it."""

    def __init__(self, what: str):
        self.what, self.fwd, self.back = what, {}, {}

    def same(self, a: str, b: str) -> bool:
        if a in self.fwd or b in self.back:
            return self.fwd.get(a) == b and self.back.get(b) == a
        self.fwd[a], self.back[b] = b, a
        return True


@dataclasses.dataclass
class Renaming:
    barriers: _Names = dataclasses.field(default_factory=lambda: _Names("barrier"))
    buffers: _Names = dataclasses.field(default_factory=lambda: _Names("buffer"))
    contents: _Names = dataclasses.field(default_factory=lambda: _Names("content"))


def _same_value(a: Any, b: Any, names: Renaming, field: str) -> bool:
    if isinstance(a, Access) and isinstance(b, Access):
        return (names.buffers.same(a.buffer, b.buffer) and a.stage == b.stage and a.part == b.part
                and a.cta == b.cta and a.columns == b.columns
                and (a.content == b.content == "" or (bool(a.content) and bool(b.content)
                                                     and names.contents.same(a.content, b.content))))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_value(x, y, names, field) for x, y in zip(a, b))
    if field == "barrier":
        return names.barriers.same(a, b)
    return a == b


def _src(op: Op) -> str:
    """A copy's global source: ``src``, which defaults to the content it writes."""
    return op.src or op.dst.content  # type: ignore[attr-defined]


def op_diff(a: Op, b: Op, names: Renaming) -> str | None:
    """Why op ``a`` is not op ``b`` under ``names`` (extended as it goes), or None."""
    if type(a) is not type(b):
        return f"{a.kind} vs {b.kind}"
    for f in dataclasses.fields(a):
        if f.name in IGNORED:
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "src" and isinstance(x, str):  # "" means "the content it writes"
            x, y = _src(a), _src(b)
            if not names.contents.same(x, y):
                return f"{a.kind}.src: {x!r} vs {y!r}"
            continue
        if not _same_value(x, y, names, f.name):
            return f"{a.kind}.{f.name}: {x!r} vs {y!r}"
    return None


def schedule_diff(a: Schedule, b: Schedule, limit: int = 5) -> list[str]:
    """Differences between two schedules (roles, CTA programs op for op), at most ``limit``."""
    out: list[str] = []
    if [r.warps for r in a.roles] != [r.warps for r in b.roles]:
        return [f"roles: {[(r.name, r.warps) for r in a.roles]} vs {[(r.name, r.warps) for r in b.roles]}"]
    if len(a.ctas) != len(b.ctas):
        return [f"{len(a.ctas)} CTAs vs {len(b.ctas)}"]
    if a.cluster != b.cluster:
        return [f"cluster: {a.cluster} vs {b.cluster} CTAs"]
    names = Renaming()
    clustered = a.cluster > 1
    cols_a = {d.name: d.columns for d in a.buffers if d.space == "tmem"}
    cols_b = {d.name: d.columns for d in b.buffers if d.space == "tmem"}
    for ca, cb in zip(a.ctas, b.ctas):
        names.contents = _Names("content")  # data lives in a CTA's own buffers: one renaming per CTA
        rank = ca.index % a.cluster if clustered else None
        for role, oa, ob in zip(a.roles, ca.roles, cb.roles):
            for i, (x, y) in enumerate(zip(oa, ob)):
                x, y = local(x, rank, cols_a), local(y, rank, cols_b)
                why = op_diff(x, y, names)
                if why:
                    out.append(f"CTA {ca.index} role {role.name} op #{i}: {why}")
                    break
            if len(oa) != len(ob) and not out:
                out.append(f"CTA {ca.index} role {role.name}: {len(oa)} ops vs {len(ob)}")
            if len(out) >= limit:
                return out
    decl_a = {names.barriers.fwd.get(d.name, d.name): d.count for d in a.barriers}
    decl_b = {d.name: d.count for d in b.barriers}
    for name, count in decl_a.items():
        if name in decl_b and decl_b[name] != count:
            out.append(f"barrier {name}: count {count} vs {decl_b[name]}")
    for d in a.buffers:
        other = next((x for x in b.buffers if x.name == names.buffers.fwd.get(d.name)), None)
        if other is not None and dataclasses.replace(other, name=d.name) != d:
            out.append(f"buffer {d.name}: {d} vs {other}")
    return out[:limit]
