"""What every unit of the engine is: a family of ops, their handlers, and the unit's own state.

A handler runs an op in one of two shapes (the interpreter loop in
:meth:`protosim.engine.machine.Machine._warp` calls them):

* **local** -- thread-local work (a fence, a commit, a sleep): ``cost(warp, op)`` returns
  cycles that join the warp's debt; no SimPy event at all.
* :class:`Handler` ``(pre, begin, finish)`` -- pay ``pre(warp, op)`` cycles (plus the debt;
  ``None`` means "act at the warp's real time": only the debt is paid), then
  ``begin(warp, i, op)`` acts and returns an event to wait for (or ``None``), and
  ``finish(warp, i, op, value)`` runs when that event fires.

A unit keeps its in-flight state per CTA, created in :meth:`Unit.cta_started` and dropped
in :meth:`Unit.cta_finished`; a CTA's storage (mbarriers) is reached only through
:mod:`protosim.engine.resolve`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import simpy

from protosim.engine.state import CtaState, WarpState
from protosim.ir import Op

if TYPE_CHECKING:
    from protosim.engine.machine import Machine


class Handler(NamedTuple):
    pre: Callable[[WarpState, Op], float] | None
    begin: Callable[[WarpState, int, Op], simpy.Event | None]
    finish: Callable[[WarpState, int, Op, Any], None] | None = None


LocalCost = Callable[[WarpState, Op], float]


class Unit:
    """One hardware unit's ops.  Subclasses set :attr:`name` (the ``Op.unit`` of the ops
    they replay) and return their tables from :meth:`handlers` and :meth:`local`."""

    name = ""

    def __init__(self, machine: Machine):
        self.m = machine
        self.arch = machine.arch

    def handlers(self) -> dict[type[Op], Handler]:
        return {}

    def local(self) -> dict[type[Op], LocalCost]:
        return {}

    def issue_cost(self, w: WarpState, op: Op) -> float:
        """The plain issue cost of an instruction with no measured cost of its own."""
        return self.arch.op_issue_cycles

    def cta_started(self, cta: CtaState) -> None:
        """A CTA was launched: create its state."""

    def cta_finished(self, cta: CtaState) -> None:
        """Every warp of ``cta`` finished: release what it holds, drop its state."""
