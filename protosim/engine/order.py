"""Happens-before bookkeeping: vector clocks over the warps of one CTA.

Timing tells whether a replay *happened* to read stale data; ordering tells
whether the protocol *guarantees* it cannot.  The engine keeps a vector clock
per warp (one component per warp of the CTA) and moves knowledge along the
synchronisation edges the hardware provides:

* ``bar.sync`` / named barriers: every participant leaves with the join of all
  participants' clocks;
* mbarrier: each arrival (a thread's arrive, a TMA's complete-tx, a tcgen05
  commit) joins its clock into the phase being built; a wait that succeeds
  joins the clock of the phase it observed -- and *only* that phase: an early
  return observes an older phase and learns nothing about the one it needed;
* completion of an asynchronous operation (TMA load or store, MMA, TMEM load)
  becomes known to a warp when a wait covering it returns (the mbarrier phase
  it signals, ``wait_group``, ``wait::ld``); synchronous work (thread copies,
  shared-memory stores) is known to its own warp when it ends.

Two refinements the per-warp clocks cannot express on their own:

* *MMA prefixes*: a ``tcgen05.commit`` tracks every earlier MMA of its thread, and a
  thread's MMAs complete in order, so the commit's phase carries one number per
  thread -- "its MMA accesses up to seq *s*" (the wait event's ``upto``) -- instead
  of a list that would grow with every commit;
* *lanes*: release is per thread.  Stores all 32 lanes of a warp made are each
  lane's own until the lanes synchronise (``__syncwarp``, ``bar.sync``): a
  ``lane_release`` event marks that point, and a phase every lane arrived on
  carries the stores itself.  An elected lane's arrive carries the warp's clock
  (so ``raw_race`` stays silent) but not those stores; ``unreleased_write`` tells
  the two apart.

The engine logs, for every buffer access, the issuing warp's clock, and for
every completion a warp learns of, an ``observe`` event (which accesses, which
warp, at which clock).  The ``races`` checker decides from those whether each
conflicting pair was ordered; nothing here judges.
"""

from __future__ import annotations

from collections.abc import Sequence

Clock = list[int]


def fresh(width: int) -> Clock:
    return [0] * width


def join_into(dst: Clock, src: Clock | tuple[int, ...] | None) -> None:
    """``dst := max(dst, src)`` component-wise, in place (clocks of one width)."""
    if src is not None:
        # a loop, not ``dst[:] = map(max, dst, src)``: a third of the time on clocks of 4-12
        # warps, and this runs at every wait that observes (issue 15)
        for g, c in enumerate(src):
            if c > dst[g]:
                dst[g] = c


def joined(a: Clock | tuple[int, ...] | None, b: Clock | tuple[int, ...]) -> list[int]:
    if a is None:
        return list(b)
    return list(map(max, a, b))


def ordered_after(observations: Sequence[int] | None, clock: tuple[int, ...]) -> bool:
    """Is an access with these completion ``observations`` known to a warp whose clock is
    ``clock``?  True iff some observation is in its past.  ``observations``: (warp, clock
    value) pairs laid flat -- warp, value, warp, value ... (no tuple a pair: the checkers
    keep one such sequence an access)."""
    if observations:
        pairs = iter(observations)
        for g, c in zip(pairs, pairs):  # a loop, not any(<generator>): the races checker asks this per access pair
            if clock[g] >= c:
                return True
    return False
