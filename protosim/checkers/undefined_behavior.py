"""Undefined behaviour the replay trapped on: ``arrival_underflow`` (an arrive with
no arrival pending), ``tx_out_of_range``, ``use_before_init``,
``reinit_without_inval``, ``count_out_of_range``, ``cluster_rearrive`` (a second
``barrier.cluster.arrive`` before the wait), and the launch-time traps
``launch_failure`` / ``unsupported``.  On the H200 these kill the kernel with
"unspecified launch failure" (shared/docs/DEVICE.md), so they are faults.

A replay with ``Perturbation.tolerate_ub`` runs through the kinds the H200 was recorded
*not* to trap on (``SILICON_TOLERATED_UB``: ``tx_out_of_range``,
``reinit_without_inval``): the engine logs each as a ``ub`` event and goes on.  They are
reported here with the same kind -- still undefined behaviour, still a finding -- but the
run has no trap, so its outcome class is whatever it came to (``verdict.classify`` looks
at ``result.trap``, not at these kinds); the message says the replay continued.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc

KINDS = ("arrival_underflow", "tx_out_of_range", "use_before_init", "reinit_without_inval",
         "count_out_of_range", "launch_failure", "unsupported", "cluster_rearrive")


def check(result) -> list[Finding]:
    return _tolerated(result) + _trapped(result)


def _trapped(result) -> list[Finding]:
    trap = result.trap
    if trap is None:
        return []
    evidence = {"target": trap.target, "detail": trap.detail}
    if trap.state is not None:
        s = trap.state
        evidence["barrier_state"] = {"phase": s.completed, "parity": s.parity, "pending": s.pending,
                                     "expected": s.expected, "tx": s.tx}
    where = f"CTA {trap.cta} {trap.who}" if trap.op >= 0 else "at launch"
    return [Finding(trap.kind, trap.cta, trap.who, trap.op, trap.t,
                    f"{where}, cycle {cyc(trap.t)}: {trap.detail} (on {trap.target}) -- the kernel traps",
                    evidence)]


def _tolerated(result) -> list[Finding]:
    out = []
    for e in result.log.of_kind("ub"):
        d = e.data
        s, a = d["state"], d["after"]
        out.append(Finding(
            d["ub"], e.cta, e.who, e.op, e.t,
            f"CTA {e.cta} {e.who}, cycle {cyc(e.t)}: {d['detail']} (on {d['target']}) -- undefined behaviour the H200 "
            f"was recorded to run through (SILICON_TOLERATED_UB); this replay tolerates it and went on with phase "
            f"{a.completed} (parity {a.parity}), pending {a.pending}/{a.expected}, tx {a.tx}",
            {"target": d["target"], "detail": d["detail"], "tolerated": True,
             "barrier_state": {"phase": s.completed, "parity": s.parity, "pending": s.pending, "expected": s.expected,
                               "tx": s.tx},
             "after": {"phase": a.completed, "parity": a.parity, "pending": a.pending, "expected": a.expected,
                       "tx": a.tx}},
        ))
    return out
