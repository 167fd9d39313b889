"""The one place an op's reference to storage becomes state.

An op names a barrier (``op.barrier``) and buffers (:class:`~protosim.ir.Access`) by
their declared names; which CTA's storage that is, and which part of a buffer a warp's
access covers, is decided here and nowhere else.  An address in another CTA of the
cluster (``mapa`` / ``shared::cluster``) is a rank on the op or the access: ``cta`` on an
arrive, ``Access.cta`` on a buffer access, the ranks of a multicast.
"""

from __future__ import annotations

from protosim.engine.state import BarrierCell, CtaState, WarpState
from protosim.ir import WARP_PART, Access

Slot = tuple[str, int, int | None, int | None]
"""(buffer, stage, part, rank): the bytes one access covers (rank ``None``: the CTA's own)."""


def peer(cta: CtaState, rank: int | None) -> CtaState:
    """The CTA of cluster rank ``rank`` in ``cta``'s cluster (``None``: ``cta`` itself)."""
    return cta if rank is None else cta.peers[rank]


def barrier(cta: CtaState, name: str, rank: int | None = None) -> BarrierCell:
    """The mbarrier ``name`` of the CTA of cluster rank ``rank`` (``None``: ``cta``'s own)."""
    return peer(cta, rank).barriers[name]


def owner(w: WarpState, acc: Access) -> CtaState:
    """The CTA whose buffer ``acc`` touches when warp ``w`` executes it."""
    return w.cta if acc.cta is None else w.cta.peers[acc.cta]


def part(w: WarpState, acc: Access) -> int | None:
    """The part of the buffer ``acc`` covers when warp ``w`` executes it (``None``: all)."""
    return w.warp if acc.part == WARP_PART else acc.part


def slot(w: WarpState, acc: Access) -> Slot:
    return (acc.buffer, acc.stage, w.warp if acc.part == WARP_PART else acc.part, acc.cta)
