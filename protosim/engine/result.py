"""What one replay returns: the log, how it ended, where warps hung, where time went.

Plain records: a :class:`RunResult` holds the event log every checker reads, the trap
that ended the replay (undefined behaviour, as silicon traps), the warps still blocked
when it went quiet (what a watchdog would report), and per-unit busy and stall cycles.
"""

from __future__ import annotations

from dataclasses import field

from protosim._dataclass_cache import DataclassCache
from protosim.arch import ArchProfile
from protosim.engine.log import EventLog
from protosim.engine.perturb import Perturbation
from protosim.ir import Schedule
from protosim.ptx.mbarrier import MBarrierState

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)


@dataclass(frozen=True, slots=True)
class Trap:
    """Undefined behaviour that killed the kernel."""

    t: float
    cta: int
    who: str
    op: int
    kind: str
    """``arrival_underflow``, ``tx_out_of_range``, ``use_before_init``,
    ``reinit_without_inval``, ``count_out_of_range``, ``launch_failure``, ``unsupported``."""
    target: str
    """The barrier (or resource) involved."""
    detail: str
    state: MBarrierState | None = None


@dataclass(frozen=True, slots=True)
class Blocked:
    """A warp that never got past an op."""

    cta: int
    who: str
    op: int
    op_kind: str
    since: float
    on: str
    """``mbarrier`` / ``bar.sync`` / ``bulk_wait`` / ``wgmma_wait`` / ``wgmma_issue`` / ``tmem_alloc``."""
    target: str
    detail: str
    tile: tuple[int, int] | None = None
    k: int | None = None
    use: int | None = None
    parity: int | None = None


@dataclass
class UnitStats:
    """Where time went: busy cycles per unit kind and blocked cycles per role."""

    tma_busy: float = 0.0
    mma_busy: float = 0.0
    lsu_busy: float = 0.0
    l2_busy: float = 0.0
    hbm_busy: float = 0.0
    l2_hits: int = 0
    l2_misses: int = 0
    sms_used: int = 0
    stall: dict[str, dict[str, float]] = field(default_factory=dict)
    """role -> {"mbarrier": cycles, "bar.sync": ..., ...}, summed over the role's warps."""
    warps: dict[str, int] = field(default_factory=dict)
    """role -> number of warps that ran (to average stalls)."""
    tensor_spans: list[tuple[float, float]] = field(default_factory=list)
    """The cycles some SM's tensor core worked on wgmma blocks, as sorted disjoint (start, end)
    spans (:func:`merged_spans`): what :mod:`protosim.clock` reads the chip's clock from."""
    tensor_flops: float = 0.0
    """Operations of every wgmma the replay ran (2 m n k each, whatever the operand type): with
    the cycles, the load :mod:`protosim.clock` lowers the tensor clock by."""


def merged_spans(spans) -> list[tuple[float, float]]:
    """``spans`` ([start, end] pairs, any order, overlapping) as sorted disjoint (start, end) spans."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


@dataclass
class RunResult:
    schedule: Schedule
    arch: ArchProfile
    perturbation: Perturbation
    log: EventLog
    end_cycle: float
    trap: Trap | None
    blocked: list[Blocked]
    barriers: dict[tuple[int, str], MBarrierState]
    stats: UnitStats
    ctas_launched: int
    ctas_finished: int

    @property
    def deadlocked(self) -> bool:
        return self.trap is None and (bool(self.blocked) or self.ctas_finished < len(self.schedule.ctas))


_DATACLASSES.save()  # after the module's last dataclass
