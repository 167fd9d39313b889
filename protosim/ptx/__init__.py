"""Pure PTX state machines: no SimPy, no I/O.  See docs/semantics.md."""

from protosim.ptx.groups import AsyncGroups
from protosim.ptx.mbarrier import MAX_COUNT, TX_LIMIT, MBarrierState, Step, Undefined

__all__ = ["AsyncGroups", "MAX_COUNT", "TX_LIMIT", "MBarrierState", "Step", "Undefined"]
