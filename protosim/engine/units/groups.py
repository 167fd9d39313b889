"""Per-thread async groups (bulk copies, cp.async, wgmma) as the engine tracks them.

The pure group rules are :class:`protosim.ptx.groups.AsyncGroups`; this adds what a
replay needs around them: the warps blocked in a ``wait_group``, and for happens-before
every committed group's operation ids in order, so a ``wait_group n`` that returns can
say which operations it newly guarantees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import simpy

from protosim.engine.environment import WaiterEvent
from protosim.engine.state import CtaState, WarpState
from protosim.ir import Op
from protosim.ptx.groups import AsyncGroups

if TYPE_CHECKING:
    from protosim.engine.machine import Machine


_EMPTY = AsyncGroups()


class ThreadGroups:
    """One thread's async groups of one kind.

    The group rules are pure functions of an immutable :class:`AsyncGroups` value, and the
    warps of a warpgroup hold the same value and take the same steps one after another (every
    warp of it tracks a wgmma; each commits and waits in turn): ``memo``, shared by a CTA's
    threads of one table, keeps the last result of each rule, so the second to fourth warp
    taking the step the first just took from the very same value reuse its result (the same
    value, and the same object, which keeps them sharing).  Exact: a rule's result depends on
    the value and the arguments alone."""

    __slots__ = ("groups", "waiters", "committed", "open", "known", "memo")

    def __init__(self, memo: dict | None = None) -> None:
        self.groups = _EMPTY
        self.waiters: list[tuple[int, bool, simpy.Event]] = []
        self.committed: list[list[int]] = []
        self.open: list[int] = []
        self.known = 0
        """Committed groups whose completion this thread has already observed."""
        self.memo: dict = {} if memo is None else memo
        """Rule name -> (the value it was applied to, its arguments, its result)."""

    def _step(self, rule: str, *args):
        state = self.groups
        last = self.memo.get(rule)
        if last is not None and last[0] is state and last[1] == args:
            return last[2]
        out = getattr(state, rule)(*args)
        self.memo[rule] = (state, args, out)
        return out

    def satisfied(self, n: int, read: bool) -> bool:
        """Would ``wait_group{.read} n`` return now?"""
        return self._step("wait_satisfied", n, read)

    def issue(self, op_id: int) -> None:
        self.groups = self._step("issue", op_id)
        self.open.append(op_id)

    def commit(self) -> None:
        self.groups = self._step("commit")
        self.committed.append(self.open)
        self.open = []

    def complete(self, op_id: int, stage: str) -> None:
        """Operation ``op_id`` reached ``stage`` (``read`` / ``done``): wake satisfied waiters."""
        self.groups = self._step("complete", op_id, stage)
        still = []
        for n, read, ev in self.waiters:
            if self.satisfied(n, read):
                ev.succeed()
            else:
                still.append((n, read, ev))
        self.waiters = still

    def newly_guaranteed(self, n: int) -> list[int]:
        """Op ids a ``wait_group n`` that just returned guarantees, not reported before."""
        upto = max(self.known, len(self.committed) - n)
        ids = [op for g in self.committed[self.known:upto] for op in g]
        self.known = upto
        return ids


class GroupTable:
    """A unit's async groups: each CTA's threads' groups by thread name (``role.wN``),
    and the buffer accesses each tracked operation made, by operation id."""

    def __init__(self, machine: Machine, on: str, shared: bool = False,
                 after_known: Callable[[WarpState, list[int]], None] | None = None):
        self.m = machine
        self.on = on
        """What a warp blocked in this kind of wait_group is blocked on (``bulk_wait``, ...)."""
        self.shared = shared
        """Operations belong to several threads' groups (a wgmma: every warp of its warpgroup)."""
        self.after_known = after_known
        """Called with the ids a returning wait_group newly guaranteed (cp.async: lane writes)."""
        self.threads: dict[CtaState, dict[str, ThreadGroups]] = {}
        self.memos: dict[CtaState, dict] = {}
        """Each CTA's threads' shared memo of the group rules (:class:`ThreadGroups`)."""
        self.seqs: dict[int, tuple[int, ...]] = {}
        self._next = 0

    def new_op(self) -> int:
        self._next += 1
        return self._next

    def of(self, cta: CtaState, who: str) -> ThreadGroups:
        table = self.threads.get(cta)
        if table is None:
            table = self.threads[cta] = {}
        g = table.get(who)
        if g is None:
            g = table[who] = ThreadGroups(self.memos.setdefault(cta, {}))
        return g

    def drop(self, cta: CtaState) -> None:
        self.threads.pop(cta, None)
        self.memos.pop(cta, None)

    def commit(self, w: WarpState, op: Op) -> float:
        """``commit_group``: local work that closes the thread's open group."""
        self.of(w.cta, w.who).commit()
        return self.m.arch.op_issue_cycles

    def wait(self, w: WarpState, i: int, op: Op) -> simpy.Event | None:
        """``wait_group{.read} n`` by warp ``w``: on at once, or block until satisfied."""
        n, read = op.n, getattr(op, "read", False)  # only the bulk wait has a .read form
        g = self.of(w.cta, w.who)
        if g.satisfied(n, read):
            self.known(w, i, op)
            return None
        ev = WaiterEvent(self.m.env)
        g.waiters.append((n, read, ev))
        self.m.block(w, i, op, self.on, w.who, f"waiting for <= {n} pending group(s)")
        return ev

    def woken(self, w: WarpState, i: int, op: Op, value=None) -> None:
        self.m.unblocked(w)
        self.known(w, i, op)

    def known(self, w: WarpState, i: int, op: Op) -> None:
        """A wait_group returned: the warp now knows the guaranteed operations completed.
        A thread's own operations leave the table once observed; shared ones stay for the
        other warps of the group."""
        w.tick()
        ids = self.of(w.cta, w.who).newly_guaranteed(op.n)
        take = self.seqs.get if self.shared else self.seqs.pop
        self.m.observe(w, i, [s for op_id in ids for s in take(op_id, ())], op.kind)
        if self.after_known is not None:
            self.after_known(w, ids)
