"""``wrong_parity``: a wait passes a parity other than that of the phase it waits for.

To wait for phase *u* of a barrier a thread must pass parity ``u % 2``: that is
the whole contract of ``try_wait.parity``.  A wait tagged with ``use = u`` and
passing the other parity names phase ``u - 1`` (already complete: it returns at
once, an early return) or ``u + 1`` (not yet started: it blocks past the phase it
needs, often forever).  This is the static form of the phase-flip bugs -- it
holds whatever the timing, so it is reported even on runs where the bug did not
bite.  One finding per CTA and barrier (with a count), not per iteration.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc, role_of
from protosim.ir import Wait

KIND = "wrong_parity"


def check(result) -> list[Finding]:
    # Where each (CTA, role, op) wait first returned; an op index names an op within its role,
    # so the role is part of the key (a wait of another role at the same index is another op).
    # One pass over the log: a lookup per bad barrier was O(bad barriers x waits).
    first: dict[tuple[int, str, int], float] = {}
    roles: dict[str, str] = {}  # a warp's name -> its role (a few names, half a million waits)
    for e in result.log.of_kind("wait"):
        role = roles.get(e.who)
        if role is None:
            role = roles[e.who] = role_of(e.who)
        key = (e.cta, role, e.op)
        if key not in first or e.t < first[key]:
            first[key] = e.t
    executed = set(first) | {(b.cta, role_of(b.who), b.op) for b in result.blocked}
    bad_waits: dict[tuple[int, str], list] = {}
    for cta in result.schedule.ctas:
        for role, ops in zip(result.schedule.roles, cta.roles, strict=True):
            for i, op in enumerate(ops):
                if isinstance(op, Wait) and op.parity != op.use % 2 and (cta.index, role.name, i) in executed:
                    bad_waits.setdefault((cta.index, op.barrier), []).append((role.name, i, op))
    findings = []
    for (cta, barrier), bad in bad_waits.items():
        role, i, op = bad[0]
        when = first.get((cta, role, i), 0.0)
        findings.append(Finding(
            KIND, cta, role, i, when,
            f"CTA {cta}: {role} op #{i} waits on {barrier} for phase {op.use} (parity {op.use % 2}) but passes "
            f"parity {op.parity}, which names phase {op.use - 1} or {op.use + 1}: it returns at once if "
            f"{op.use - 1} was the last phase to complete, or blocks until {op.use + 1} does; "
            f"{len(bad)} such wait(s) on this barrier (first at cycle {cyc(when)}, tile {op.tile}, k={op.k})",
            {"barrier": barrier, "use": op.use, "parity": op.parity, "count": len(bad), "tile": op.tile, "k": op.k},
        ))
    return findings
