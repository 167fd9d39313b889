"""``early_return``: a wait that returned before the phase it waits for completed.

A ``Wait`` carries the phase it logically waits for (``use``).  It returned
early when, at the moment it succeeded, fewer than ``use + 1`` phases had
completed: its parity matched an *older* phase of the same parity (PTX
``try_wait.parity`` cannot tell which).  Waits of several warps at the same op
(a role's op index) and phase are reported once, listing the warps.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc, describe_producer, phase_times, producers, role_of

KIND = "early_return"


def check(result) -> list[Finding]:
    log = result.log
    waits = [e for e in log.of_kind("wait") if e.completed_return <= e.use]
    if not waits:
        return []
    done_at = phase_times(log.of_kind("phase"))
    grouped: dict[tuple, list] = {}
    for e in waits:
        grouped.setdefault((e.cta, role_of(e.who), e.op, e.barrier, e.use), []).append(e)
    findings = []
    for (cta, _role, op, barrier, use), events in grouped.items():
        first = min(events, key=lambda e: e.t)
        d = first.data
        satisfied_by = d["completed_return"] - 1
        when = done_at.get((cta, barrier, satisfied_by))
        older = (
            f"phase {satisfied_by} (parity {satisfied_by & 1}) had completed"
            + (f" at cycle {cyc(when)}" if when is not None else "")
            if satisfied_by >= 0
            else "no phase had completed yet: parity 1 is vacuously complete right after init"
        )
        prods = sorted(producers(log, cta, barrier, use), key=lambda e: e.t)
        late = [p for p in prods if p.t > first.t]
        if late:
            tail = f"; phase {use}'s producer arrived later: " + ", ".join(describe_producer(p) for p in late[:3])
        elif not prods:
            tail = f"; phase {use}'s producer never ran"
        else:
            tail = ""
        findings.append(
            Finding(
                KIND,
                cta,
                first.who,
                op,
                first.t,
                f"CTA {cta}: wait on {barrier} with parity {d['parity']} for phase {use} "
                f"(tile {d['tile']}, k={d['k']}) returned at cycle {cyc(first.t)} because {older}{tail}",
                {
                    "barrier": barrier,
                    "parity": d["parity"],
                    "use": use,
                    "returned": first.t,
                    "began": d["begin"],
                    "phases_completed": d["completed_return"],
                    "satisfied_by_phase": satisfied_by,
                    "satisfied_at": when,
                    "producer_times": [p.t for p in prods],
                    "warps": sorted(e.who for e in events),
                    "tile": d["tile"],
                    "k": d["k"],
                },
            )
        )
    return findings
