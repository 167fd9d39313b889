"""The replay's SimPy environment: SimPy's own, with one timeout shared by back-to-back waiters.

In a full-chip replay more than half of the timeouts are due at the same instant as the one
scheduled just before them: the warps of a warpgroup pay the same local cost from the same
wake-up, one after another (issue 15: 55,094 of 99,756 timeouts of v6 4096^2 x 256 on h200).
SimPy pops such events one step each, in the order it scheduled them.  Here the second asks
for the same due time right after the first was scheduled, so :meth:`ReplayEnvironment.timeout`
hands back the first: its waiters resume in the order they would have, in one step instead of
two, and the heap holds one entry instead of two.

Why nothing else can tell the difference.  SimPy orders its queue by ``(time, priority,
eid)``, the eid counting every schedule call.  A timeout ``B`` asked for while ``A`` is the
event scheduled last, due at the same time, NORMAL priority both, would take the eid right
after ``A``'s: nothing can sort between them, so SimPy would pop ``B`` right after ``A``
and run its callbacks then.  Merged, ``B``'s callbacks run right after ``A``'s, in the same
step -- the same order, unless ``A``'s callbacks schedule an URGENT event for that instant
(SimPy runs those before ``B`` would have been popped).  URGENT events come only from starting
a process (``Environment.process``'s Initialize) or an interrupt; the engine starts processes
only in its launchers, which wait on :class:`simpy.Timeout` made directly (never shared) and on
store or condition events -- a :class:`SharedTimeout`'s callbacks are warp resumes and
:meth:`~protosim.engine.machine.Machine.at` callbacks, which start nothing.  A timeout with a
value is shared only with one of the very same value (its waiters read it), and only while
it is still queued.  The same holds for the wake-ups of a barrier's waiters (:class:`WaiterWakeup`)
and of warps waiting for their async groups (:class:`WaiterEvent`): each is fired in a loop
over the waiters, one right after another, with the same news; the second one's waiter
resumes in the first one's step.  Those events have one waiter, which waits on it before it
is fired and never after.  ``python -m tests.eventlog_corpus`` holds the event logs equal, event
for event, to the logs recorded before the change.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL, PENDING, Timeout

from protosim.engine.state import Wakeup


class ReplayEnvironment(simpy.Environment):
    """:class:`simpy.Environment` whose :meth:`timeout` may return the timeout scheduled just
    before it (the module says when and why that is exact)."""

    def __init__(self) -> None:
        super().__init__()
        self._last: Any = None
        """The event scheduled last, and when it is due."""
        self._last_due = -1.0

    def schedule(self, event: simpy.Event, priority=NORMAL, delay: float = 0) -> None:
        # SimPy's own body (one heap push), plus what the next timeout() compares against.
        due = self._now + delay
        heappush(self._queue, (due, priority, next(self._eid), event))
        self._last = event
        self._last_due = due

    def timeout(self, delay: float, value: Any = None) -> Timeout:  # type: ignore[override]
        last = self.shareable(SharedTimeout, value, self._now + delay)
        return last if last is not None else SharedTimeout(self, delay, value)

    def shareable(self, cls: type, value: Any, due: float) -> simpy.Event | None:
        """The event scheduled last, if it is a ``cls``, still queued, due at ``due`` with the very
        same value: the one rule for when a new event may take its step (the module says why)."""
        last = self._last
        if last.__class__ is cls and last._value is value and last.callbacks is not None and self._last_due == due:
            return last
        return None


class SharedTimeout(Timeout):
    """A timeout :meth:`ReplayEnvironment.timeout` made, which a later one may share (a
    plain :class:`simpy.Timeout` is never shared: the launchers wait on those)."""


def _joined(event: simpy.Event, due: float) -> bool:
    """Whether the event scheduled last is of ``event``'s class, still queued, due at
    ``due`` with the same value: then ``event``'s waiters are added to its step (and
    ``event`` needs no step of its own)."""
    last = event.env.shareable(event.__class__, event._value, due)
    if last is not None:
        last.callbacks += event.callbacks
        event.callbacks = None  # its one waiter resumes in ``last``'s step
        return True
    return False


class WaiterWakeup(Wakeup):
    """One mbarrier waiter's wake-up (the wait makes it; that warp alone waits on it, before
    it is fired), shared with the waiter woken just before it (the module says when)."""

    __slots__ = ()

    def fire_in(self, delay: float, value: Any = None) -> None:
        self._ok = True
        self._value = value
        if not _joined(self, self.env._now + delay):
            self.env.schedule(self, NORMAL, delay)


class WaiterEvent(simpy.Event):
    """One warp's wait for its async groups (``wait_group``), shared like :class:`WaiterWakeup`."""

    def succeed(self, value: Any = None) -> simpy.Event:
        if self._value is not PENDING:
            raise RuntimeError(f"{self} has already been triggered")
        self._ok = True
        self._value = value
        if not _joined(self, self.env._now):
            self.env.schedule(self)
        return self
