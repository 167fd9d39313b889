"""The one place an op's reference to storage becomes state.

An op names a barrier (``op.barrier``) and buffers (:class:`~protosim.ir.Access`) by
their declared names; which CTA's storage that is, and which part of a buffer a warp's
access covers, is decided here and nowhere else.  Every unit asks these functions, so
an address in another CTA of a cluster (``mapa`` / ``shared::cluster``: a rank and a
name) is one more field on the op and one more branch in :func:`barrier` -- not an
edit of every handler.
"""

from __future__ import annotations

from protosim.engine.state import BarrierCell, CtaState, WarpState
from protosim.ir import WARP_PART, Access

Slot = tuple[str, int, int | None]
"""(buffer, stage, part): the bytes one access covers."""


def barrier(cta: CtaState, name: str) -> BarrierCell:
    """The mbarrier ``name`` as seen by CTA ``cta`` (today always its own)."""
    return cta.barriers[name]


def part(w: WarpState, acc: Access) -> int | None:
    """The part of the buffer ``acc`` covers when warp ``w`` executes it (``None``: all)."""
    return w.warp if acc.part == WARP_PART else acc.part


def slot(w: WarpState, acc: Access) -> Slot:
    return (acc.buffer, acc.stage, w.warp if acc.part == WARP_PART else acc.part)
