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
or is missing leaves a read that expects data which has not landed: a ``raw_hazard``.
A single-stream pipeline (no partitions) gets "the newest write issued before the read",
which is what Triton's software pipeline means.  A read of a stage nobody wrote, or whose
writer the role never synchronised with, expects ``<buf>[<stage>]#unwritten``; a read of a
stage no op of the kernel writes expects nothing (``""``: uninitialised memory is not a race,
and the hazards checker leaves it alone).
"""

from __future__ import annotations

import dataclasses

from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
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


def _tag(access: Access, view: View, written: set[Key]) -> Access:
    key = (access.buffer, access.stage)
    if key not in written:  # no op of the kernel writes it: uninitialised memory, no protocol's data
        return dataclasses.replace(access, content="")
    return dataclasses.replace(access, content=view.get(key, f"{access.buffer}[{access.stage}]#unwritten"))


def resolve(roles: list[list[Op]]) -> list[list[Op]]:
    """Each role's ops with every read's ``content`` set to what the role expects there
    (see the module docstring).  ``roles``: each role's ops in program order."""
    released = _released(roles)
    written = {(w.buffer, w.stage) for ops in roles for op in ops for w in _writes(op)}
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
                    changes[f] = (tuple(_tag(a, view, written) for a in value) if isinstance(value, tuple)
                                  else _tag(value, view, written))
                op = dataclasses.replace(op, **changes)
            for w in _writes(op):
                _merge(view, {(w.buffer, w.stage): w.content})
            new.append(op)
        out.append(new)
    return out
