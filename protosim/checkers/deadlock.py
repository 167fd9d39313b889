"""``deadlock``: the replay went quiet with warps still blocked.

Nothing is in flight any more (no transfer, no MMA, no timer), so nothing can
wake them: on silicon this is a hang, in our kernels a watchdog timeout.  One
finding per blocked resource, carrying each barrier's phase, pending count and
tx-count, and every warp blocked on it with the op it is stuck at.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc
from protosim.hangs import hang_sites

KIND = "deadlock"


def _kernel_terms(site) -> dict:
    """How the kernel's watchdog would name this wait (``protosim.hangs``): barrier array,
    stage, role and the thread's running k-tile."""
    if site is None:
        return {}
    return {"kernel_site": {"barrier": site.barrier, "stage": site.stage, "role": site.role, "k": site.k}}


def check(result) -> list[Finding]:
    if not result.deadlocked:
        return []
    sites = {(h.cta, h.who): h for h in hang_sites(result)}
    groups: dict[tuple, list] = {}
    for b in result.blocked:
        groups.setdefault((b.cta, b.on, b.target), []).append(b)
    findings = []
    for (cta, on, target), blocked in sorted(groups.items(), key=lambda kv: min(b.since for b in kv[1])):
        first = min(blocked, key=lambda b: b.since)
        evidence = {
            "resource": on,
            "target": target,
            "warps": [
                {"who": b.who, "op": b.op, "op_kind": b.op_kind, "since": b.since, "tile": b.tile, "k": b.k,
                 "use": b.use, "parity": b.parity, **_kernel_terms(sites.get((b.cta, b.who)))}
                for b in blocked
            ],
        }
        if on == "mbarrier":
            st = result.barriers[(cta, target)]
            evidence["barrier_state"] = {"phase": st.completed, "parity": st.parity, "pending": st.pending,
                                         "expected": st.expected, "tx": st.tx}
            want = f"waiting for phase {first.use} with parity {first.parity}"
            site = sites.get((cta, first.who))
            if site is not None and site.k is not None:
                want += f" (in the kernel's terms: {site.role} waits on {site.barrier}, k-tile {site.k})"
        else:
            want = f"at {first.op_kind}"
        findings.append(Finding(
            KIND, cta, first.who, first.op, first.since,
            f"CTA {cta}: {len(blocked)} warp(s) blocked on {on} {target} since cycle {cyc(first.since)}, "
            f"{want}; {first.detail}",
            evidence,
        ))
    unlaunched = len(result.schedule.ctas) - result.ctas_launched
    if unlaunched:
        findings.append(Finding(
            KIND, -1, "launch", -1, result.end_cycle,
            f"{unlaunched} CTA(s) never launched: their SM slots are held by blocked CTAs",
            {"unlaunched": unlaunched},
        ))
    return findings
