"""The engine's units, one module per hardware unit, each replaying the ops whose
``Op.unit`` names it:

==================  ==============================================================
``mbarrier``        init, arrive, expect_tx, arrive.expect_tx, the parity wait
``tma``             TMA loads and stores, bulk commit / wait_group
``tensor_core``     tcgen05.mma and commit, wgmma and its groups, mma.sync
``tmem``            tcgen05.alloc / dealloc, tcgen05.ld, wait::ld
``lsu``             thread copies, shared stores and loads, global stores, cp.async
``sync``            bar.sync, named barriers, __syncwarp, fences, nanosleep
``alu``             register math (elementwise ops, reductions) on the SM's schedulers
==================  ==============================================================

Adding an op: docs/architecture.md, "Adding an op".
"""

from protosim.engine.units.alu import AluUnit
from protosim.engine.units.base import Handler, LocalCost, Unit
from protosim.engine.units.lsu import LsuUnit
from protosim.engine.units.mbarrier import MBarrierUnit
from protosim.engine.units.sync import SyncUnit
from protosim.engine.units.tensor_core import TensorCoreUnit
from protosim.engine.units.tma import TmaUnit
from protosim.engine.units.tmem import TmemUnit

UNITS: tuple[type[Unit], ...] = (MBarrierUnit, TmaUnit, TensorCoreUnit, TmemUnit, LsuUnit, SyncUnit, AluUnit)

__all__ = ["UNITS", "Handler", "LocalCost", "Unit", "MBarrierUnit", "TmaUnit", "TensorCoreUnit", "TmemUnit",
           "LsuUnit", "SyncUnit", "AluUnit"]
