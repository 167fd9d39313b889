"""``lapped_wait``: a wait for a phase that was already two or more phases old.

PTX (9.7.13.15.16) defines ``test_wait``/``try_wait`` only for the current
phase and the one just before it.  When the barrier has advanced past the
waited-for phase twice, the parity names the phase in flight again and the
waiter blocks until *that* completes (or forever) -- the lagging-warp hazard of
ARCHITECTURE.md.  Flagged whether or not it ended in a deadlock.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc

KIND = "lapped_wait"


def check(result) -> list[Finding]:
    out = []
    seen = set()
    candidates = [(e.cta, e.who, e.op, e.t, e.data) for e in result.log.of_kind("wait")
                  if e.completed_begin >= e.use + 2]
    for b in result.blocked:
        if b.on == "mbarrier" and b.use is not None:
            st = result.barriers[(b.cta, b.target)]
            if st.completed >= b.use + 2:
                candidates.append((b.cta, b.who, b.op, b.since, {
                    "barrier": b.target, "use": b.use, "parity": b.parity, "completed_begin": st.completed,
                    "tile": b.tile, "k": b.k, "blocked_forever": True}))
    for cta, who, op, t, d in candidates:
        key = (cta, who, op)
        if key in seen:
            continue
        seen.add(key)
        out.append(Finding(
            KIND, cta, who, op, t,
            f"CTA {cta} {who}: wait on {d['barrier']} for phase {d['use']} (parity {d['parity']}) started at "
            f"cycle {cyc(t)} when {d['completed_begin']} phases had completed; the barrier lapped the waiter"
            + (" and it never returned" if d.get("blocked_forever") else ""),
            {"barrier": d["barrier"], "use": d["use"], "parity": d["parity"],
             "phases_completed": d["completed_begin"], "tile": d["tile"], "k": d["k"]},
        ))
    return out
