"""Undefined behaviour the replay trapped on: ``arrival_underflow`` (an arrive with
no arrival pending), ``tx_out_of_range``, ``use_before_init``,
``reinit_without_inval``, ``count_out_of_range``, and the launch-time traps
``launch_failure`` / ``unsupported``.  On the H200 these kill the kernel with
"unspecified launch failure" (shared/docs/DEVICE.md), so they are faults.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc

KINDS = ("arrival_underflow", "tx_out_of_range", "use_before_init", "reinit_without_inval",
         "count_out_of_range", "launch_failure", "unsupported")


def check(result) -> list[Finding]:
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
