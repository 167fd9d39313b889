"""Where a role stands in a ring of stages: :class:`PipelineState`, the stage cursor.

The cursor says what the kernel's code computes -- the stage it touches and the parity it
passes to a wait -- and counts the steps taken.  It is frozen: :meth:`PipelineState.advance`
returns the next position and is the only place a phase flips.
"""

from __future__ import annotations

from protosim._dataclass_cache import DataclassCache

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

__all__ = ["PipelineState", "stage_index"]


@dataclass(frozen=True)
class PipelineState:
    """A position in a ring of ``stages`` stages.

    ``count`` is the number of steps taken since the kernel began, ``index`` the stage
    (always ``count % stages``) and ``phase`` the parity the next wait on that stage
    passes.  Values are immutable: :meth:`advance` returns the next position.
    """

    stages: int
    index: int = 0
    phase: int = 0
    count: int = 0

    def __post_init__(self) -> None:
        if self.stages < 1:
            raise ValueError(f"PipelineState: stages = {self.stages}; a ring has at least one stage")
        if self.phase not in (0, 1):
            raise ValueError(f"PipelineState: phase = {self.phase}; a phase (parity) is 0 or 1")
        if self.count < 0:
            raise ValueError(f"PipelineState: count = {self.count}; count steps from 0")
        if self.index != self.count % self.stages:
            raise ValueError(
                f"PipelineState: index {self.index} with count {self.count} of {self.stages} stages; the index is "
                f"count % stages = {self.count % self.stages} (build states with producer_start / consumer_start "
                "and advance)"
            )

    @classmethod
    def producer_start(cls, stages: int) -> PipelineState:
        """Where a producer starts: stage 0, phase 1.

        The producer's first wait on each stage's *empty* barrier must not block -- the
        ring starts with every stage free.  A fresh mbarrier counts its phase -1 as
        complete, and parity 1 names that phase, so the producer starts at phase 1
        (CUTLASS's ``make_producer_start_state``)."""
        return cls(stages, 0, 1, 0)

    @classmethod
    def consumer_start(cls, stages: int) -> PipelineState:
        """Where a consumer starts: stage 0, phase 0 -- it waits for the first fill (phase 0)."""
        return cls(stages, 0, 0, 0)

    @property
    def use(self) -> int:
        """Which use of its stage this step is (``count // stages``): the k-th fill of stage
        s is phase k of ``full[s]``.  Computed from the count, never from ``phase``."""
        return self.count // self.stages

    def advance(self, n: int = 1) -> PipelineState:
        """The position ``n`` steps on: the index wraps, the phase flips at each wrap."""
        if n < 0:
            raise ValueError(f"PipelineState.advance({n}): a ring only moves forward")
        wraps = (self.index + n) // self.stages
        return PipelineState(self.stages, (self.index + n) % self.stages, self.phase ^ (wraps & 1), self.count + n)


def stage_index(at: int | PipelineState, stages: int, what: str) -> int:
    """The stage ``at`` names (a stage number or a state's index) in a ring of ``stages``;
    ``what`` names the ring in the error when it does not fit."""
    if isinstance(at, PipelineState):
        if at.stages != stages:
            raise ValueError(f"{what} has {stages} stage(s) but the state is a ring of {at.stages}")
        return at.index
    if not 0 <= at < stages:
        raise IndexError(f"{what}: stage {at} of {stages}")
    return at


_DATACLASSES.save()  # after the module's last dataclass
