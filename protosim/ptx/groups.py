"""Per-thread async-group counters, as pure values.

Three PTX mechanisms share one shape -- a thread issues asynchronous operations,
``commit_group`` closes the uncommitted ones into a new group, and
``wait_group N`` blocks until at most the N most recent groups are pending:

* ``cp.async.bulk.commit_group`` / ``cp.async.bulk.wait_group{.read} N`` (PTX 9.1,
  9.7.9.27.2): bulk copies such as a TMA store.  ``.read`` waits only until the
  sources have been read (the shared-memory tile may be reused), not until the
  writes are visible.
* ``cp.async.commit_group`` / ``cp.async.wait_group N`` (9.7.9.25.3.2-3): Ampere
  copies, Triton's ``async_commit_group`` / ``async_wait {num}``.
* ``wgmma.commit_group`` / ``wgmma.wait_group N``: Hopper MMAs of a warpgroup.

The ISA's wording is "wait till only N or fewer of the most recent groups are
pending and all the prior groups committed by the executing thread are
complete" -- so the test is on *position*, not on a count of incomplete groups:
with groups completing out of order, an old incomplete group blocks even when
fewer than N groups are incomplete.  A commit with nothing uncommitted makes an
empty group, which is trivially complete.  Operations issued but never committed
are not waited for at all -- a classic bug this model must let through.
"""

from __future__ import annotations

from typing import NamedTuple

Stage = str
"""Completion stage of an operation: ``"read"`` (sources read) or ``"done"``."""


class AsyncGroups(NamedTuple):
    """Outstanding operations of one thread, by group.

    Each operation is an integer id.  ``unread`` / ``undone`` hold ids whose
    source reads / full completion have not happened yet.  A named tuple, not a frozen
    dataclass: a replay makes one per issue, commit and completion of every warp, and a
    tuple is made in a fifth of the time (issue 15).
    """

    uncommitted: tuple[int, ...] = ()
    """Issued since the last commit, oldest first."""
    groups: tuple[tuple[int, ...], ...] = ()
    """Committed groups still holding an incomplete operation, oldest first.
    Fully complete groups at the *old* end are dropped; others stay so that
    positions keep their meaning."""
    unread: frozenset[int] = frozenset()
    undone: frozenset[int] = frozenset()

    def issue(self, op: int) -> AsyncGroups:
        # An id may be reused only once no group still lists it (else a finished
        # group would look pending again).
        if op in self.undone or op in self.uncommitted or any(op in g for g in self.groups):
            raise ValueError(f"operation id {op} is still tracked; ids must be unique while their group is")
        return AsyncGroups(self.uncommitted + (op,), self.groups, self.unread | {op}, self.undone | {op})

    def commit(self) -> AsyncGroups:
        return AsyncGroups((), self.groups + (self.uncommitted,), self.unread, self.undone)._trim()

    def complete(self, op: int, stage: Stage = "done") -> AsyncGroups:
        """Mark *op* read (``stage="read"``) or done; done implies read."""
        unread = self.unread - {op}
        undone = self.undone - {op} if stage == "done" else self.undone
        return AsyncGroups(self.uncommitted, self.groups, unread, undone)._trim()

    def wait_satisfied(self, n: int, read_only: bool = False) -> bool:
        """Would ``wait_group{.read} n`` return now?"""
        if n < 0:
            raise ValueError(f"wait_group needs N >= 0, got {n}")
        outstanding = self.unread if read_only else self.undone
        older = self.groups[: max(0, len(self.groups) - n)]
        return not any(op in outstanding for group in older for op in group)

    def pending_groups(self, read_only: bool = False) -> int:
        """How many committed groups still hold an incomplete operation."""
        outstanding = self.unread if read_only else self.undone
        return sum(1 for g in self.groups if any(op in outstanding for op in g))

    def _trim(self) -> AsyncGroups:
        groups = self.groups
        while groups and not any(op in self.undone for op in groups[0]):
            groups = groups[1:]
        if groups is self.groups:
            return self
        return AsyncGroups(self.uncommitted, groups, self.unread, self.undone)

    def check(self) -> None:
        """Representation invariants (for tests)."""
        assert self.unread <= self.undone
        committed = {op for g in self.groups for op in g}
        assert not committed & set(self.uncommitted)
        if self.groups:
            assert any(op in self.undone for op in self.groups[0])
