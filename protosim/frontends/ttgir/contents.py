"""Which data each shared-memory or TMEM read expects: the rule "a read expects what its
role last knew to be there", made exact with the release/acquire of mbarriers.

The walk tags every write with its own content (``buf#n``: the n-th write into ``buf``)
and leaves reads untagged.  This pass then replays each role's ops in program order,
keeping the role's *view*: for every (buffer, stage), the newest content the role knows
is there.

* A role's own write (a copy it issued, an MMA, a store) enters its view at once: a read
  of it in the same role expects it, landed or not -- reading before the wait for it is
  the hazard.
* An arrival on an mbarrier (``arrive``, ``arrive.expect_tx``, a ``tcgen05.commit``)
  releases the arriving role's whole view to that phase of the barrier (release is
  cumulative, PTX ISA memory consistency model); a TMA load adds its own write to the
  phase its ``complete_tx`` counts toward.
* A wait on a phase acquires what was released to it.

So a consumer partition's read of stage s expects the tile the producer's TMA load put
there for the phase it waited on -- and a wait that returns early (a parity not flipped)
leaves a read that expects data which has not landed: a ``raw_hazard``.  A read whose role
holds nothing for the stage (no wait at all) expects nothing in particular; the races
checker judges it by happens-before.
In a single stream (no partitions), a ring buffer filled only by copies from global memory and
read no more often than filled is paired in order instead: its n-th read means the n-th tile
copied in (:func:`_streamed`), which is what Triton's software pipeline means -- so a copy
aliased onto the stage being read is a hazard even where the stage holds an older tile.  The
pipeline's zero fills (copies past the last k-tile, masked off in every lane) are not tiles
copied in: no read means them, and in a persistent kernel they come between tiles.
"""

from __future__ import annotations

import dataclasses

from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    CpAsync,
    LocalLoad,
    MbarInit,
    Mma,
    MmaCommit,
    Op,
    TmaLoad,
    TmaStore,
    TmemCopy,
    TmemLoad,
    Wait,
    Wgmma,
)

Key = tuple[str, int]
View = dict[Key, str]

_READ_FIELDS = {LocalLoad: ("src",), TmaStore: ("src",), TmemLoad: ("src",), TmemCopy: ("src",),
                Wgmma: ("reads",), Mma: ("reads",)}


def _order(content: str) -> int:
    """The write number of ``buf#n`` (writes into one buffer are numbered in walk order)."""
    tail = content.rsplit("#", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _merge(into: View, new: View) -> None:
    for key, content in new.items():
        old = into.get(key)
        if old is None or _order(content) > _order(old):
            into[key] = content


def _writes(op: Op) -> list[Access]:
    if isinstance(op, Mma):
        return list(op.writes)
    if isinstance(op, TmemCopy):
        return [op.dst]
    dst = getattr(op, "dst", None)
    return [dst] if isinstance(dst, Access) else []


class _Epochs:
    """A barrier's uses start over when it is initialised again, so a phase is named by
    (barrier, epoch, use): the epoch counts the role's own inits of the barrier (a role
    that never initialises it sees the first)."""

    def __init__(self) -> None:
        self.inits: dict[str, int] = {}

    def see(self, op: Op) -> None:
        if isinstance(op, MbarInit):
            self.inits[op.barrier] = self.inits.get(op.barrier, 0) + 1

    def phase(self, barrier: str, use: int) -> tuple[str, int, int]:
        return barrier, self.inits.get(barrier, 1), use


def _stream_contents(ops: list[Op], streamed: dict[str, list[str]]) -> list[Op]:
    """Tag the reads of streamed buffers (:func:`_streamed`) in order; other reads are left
    for the view rule (they keep an empty content until :func:`resolve` tags them)."""
    count: dict[str, int] = {}
    filled: dict[str, int] = {}

    def tag(a: Access) -> Access:
        if a.buffer not in streamed or a.content:
            return a
        n = count.get(a.buffer, 0)
        count[a.buffer] = n + 1
        if n >= filled.get(a.buffer, 0):  # a read cannot mean a copy issued after it
            return a
        return dataclasses.replace(a, content=streamed[a.buffer][n])

    out = []
    for op in ops:
        if not _zero_fill(op):
            for w in _writes(op):
                filled[w.buffer] = filled.get(w.buffer, 0) + 1
        fields = _READ_FIELDS.get(type(op))
        if fields:
            changes = {f: tuple(tag(a) for a in getattr(op, f)) if isinstance(getattr(op, f), tuple)
                       else tag(getattr(op, f)) for f in fields}
            op = dataclasses.replace(op, **changes)
        out.append(op)
    return out


def _zero_fill(op: Op) -> bool:
    """A copy whose mask is off in every lane (Triton's pipelined copy for a k-tile past the
    loop's end): it writes zeros that no read of the stream means.  A persistent kernel runs
    the pipeline once per tile, so these sit between one tile's copies and the next's."""
    return isinstance(op, CpAsync) and op.zero_fill


def _released(roles: list[list[Op]]) -> dict[tuple[str, int, int], View]:
    """What each phase carries: the arriving roles' views at their arrivals, plus the bytes
    of the TMA loads that complete on it."""
    out: dict[tuple[str, int, int], View] = {}
    for ops in roles:
        view: View = {}
        epochs = _Epochs()
        for op in ops:
            epochs.see(op)
            for w in _writes(op):
                _merge(view, {(w.buffer, w.stage): w.content})
            if isinstance(op, TmaLoad):
                _merge(out.setdefault(epochs.phase(op.barrier, op.use), {}), {(op.dst.buffer, op.dst.stage): op.dst.content})
            elif isinstance(op, (Arrive, ArriveExpectTx, MmaCommit)):
                _merge(out.setdefault(epochs.phase(op.barrier, op.use), {}), view)
    return out


def _tag(access: Access, view: View) -> Access:
    """The read expects what its role's view holds there; where the view holds nothing (the
    role neither wrote the stage nor acquired a write of it) it expects nothing in
    particular: either the memory is uninitialised, or another role's write is unordered with
    the read -- which the races checker reports by the vector clocks, whatever the data."""
    if access.content:  # tagged by the stream rule
        return access
    return dataclasses.replace(access, content=view.get((access.buffer, access.stage), ""))


def _streamed(ops: list[Op], pipelined: set[str]) -> dict[str, list[str]]:
    """A single stream's ring buffers: those only ever filled by copies from global memory
    (cp.async, TMA) and read no more often than filled -- Triton's software pipeline.  Its
    n-th read of such a buffer means the n-th tile copied in, whatever stage the code
    computes (so a copy aliased onto the stage being read is a hazard even when the stage
    holds an older, landed tile).  Only buffers filled inside a loop (``pipelined``) qualify:
    straight-line code reads the stage it names.  Buffer -> its writes' contents in program order."""
    fills: dict[str, list[str]] = {}
    other: set[str] = set()
    reads: dict[str, int] = {}
    for op in ops:
        for w in _writes(op):
            if _zero_fill(op):  # the pipeline's copy past the last k-tile: no tile a read means
                continue
            if isinstance(op, (CpAsync, TmaLoad)):
                fills.setdefault(w.buffer, []).append(w.content)
            else:
                other.add(w.buffer)
        for f in _READ_FIELDS.get(type(op), ()):
            value = getattr(op, f)
            for a in value if isinstance(value, tuple) else (value,):
                reads[a.buffer] = reads.get(a.buffer, 0) + 1
    return {b: c for b, c in fills.items() if b in pipelined and b not in other and reads.get(b, 0) <= len(c)}


def resolve(roles: list[list[Op]], pipelined: set[str] = frozenset()) -> list[list[Op]]:
    """Each role's ops with every read's ``content`` set to what the role expects there
    (see the module docstring).  ``roles``: each role's ops in program order; ``pipelined``:
    the buffers copied into inside a loop."""
    if len(roles) == 1:
        streamed = _streamed(roles[0], set(pipelined))
        if streamed:
            roles = [_stream_contents(roles[0], streamed)]
    released = _released(roles)
    out = []
    for ops in roles:
        view: View = {}
        epochs = _Epochs()
        new = []
        for op in ops:
            epochs.see(op)
            if isinstance(op, Wait):
                _merge(view, released.get(epochs.phase(op.barrier, op.use), {}))
            fields = _READ_FIELDS.get(type(op))
            if fields:
                changes = {}
                for f in fields:
                    value = getattr(op, f)
                    changes[f] = (tuple(_tag(a, view) for a in value) if isinstance(value, tuple)
                                  else _tag(value, view))
                op = dataclasses.replace(op, **changes)
            for w in _writes(op):
                _merge(view, {(w.buffer, w.stage): w.content})
            new.append(op)
        out.append(new)
    return out
