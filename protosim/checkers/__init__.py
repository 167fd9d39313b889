"""Checkers: each reads one replay (its event log, trap and blocked warps) and
returns findings.  One module per bug class; none can change the run.  A new
bug class is a new module added to ``CHECKERS`` -- never a branch in the engine.

A checker that raises does not vanish: it becomes an ``incomplete`` finding, so
a verdict is never "clean" because a checker broke.
"""

from __future__ import annotations

from protosim.checkers import (
    capacity,
    cluster,
    deadlock,
    early_return,
    hazards,
    lapped_wait,
    overissue,
    proxy_fence,
    races,
    tx_mismatch,
    undefined_behavior,
    unreleased_write,
    wrong_parity,
)
from protosim.checkers.base import Finding
from protosim.gcpause import gc_paused

CHECKERS = {
    "capacity": capacity.check,
    "undefined_behavior": undefined_behavior.check,
    "deadlock": deadlock.check,
    "early_return": early_return.check,
    "lapped_wait": lapped_wait.check,
    "wrong_parity": wrong_parity.check,
    "tx_mismatch": tx_mismatch.check,
    "overissue": overissue.check,
    "hazards": hazards.check,
    "races": races.check,
    "unreleased_write": unreleased_write.check,
    "proxy_fence": proxy_fence.check,
    "cluster": cluster.check,
}

FINDING_KINDS = (
    "capacity", *undefined_behavior.KINDS, "deadlock", "early_return", "lapped_wait", "wrong_parity", "tx_mismatch",
    "overissue", "raw_hazard", "war_hazard", "raw_race", "war_race", "unreleased_write", proxy_fence.KIND,
    *cluster.KINDS, "incomplete",
)


def run_checkers(result) -> list[Finding]:
    """All findings of one replay, ordered by cycle."""
    findings: list[Finding] = []
    with gc_paused():
        for name, check in CHECKERS.items():
            try:
                findings.extend(check(result))
            except Exception as e:  # noqa: BLE001 -- reported, not swallowed
                import traceback  # only here: a start that never needs it does not load it
                findings.append(Finding("incomplete", -1, name, -1, 0.0,
                                        f"checker {name} failed: {e!r}; this verdict is incomplete",
                                        {"traceback": traceback.format_exc()}))
    findings.sort(key=lambda f: (f.cycle, f.cta))
    return findings


__all__ = ["CHECKERS", "FINDING_KINDS", "Finding", "run_checkers"]
