"""``tx_mismatch``: the bytes a phase expects differ from the bytes sent to it.

Two checks on the logical tags: (1) per barrier phase (``use``), the bytes of
``expect_tx`` against the bytes of the TMA loads issued for that phase (in a cluster, by
every CTA whose loads complete on it: a multicast counts once in each destination) -- too
many expected hangs the barrier, too few completes it before the data is in;
(2) a byte completion that lands while the barrier is in a *different* phase
than the one it was issued for -- bytes spilling into the next phase, which
completes it early.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, cyc
from protosim.engine.log import ABSENT

KIND = "tx_mismatch"


def check(result) -> list[Finding]:
    log = result.log
    expected: dict[tuple, int] = {}
    first: dict[tuple, object] = {}
    for e in log.of_kind("expect_tx"):
        key = (e.cta, e.barrier, e.use)
        expected[key] = expected.get(key, 0) + e.bytes
        first.setdefault(key, e)
    issued: dict[tuple, int] = {}
    sources: dict[tuple, dict[int, int]] = {}  # in a cluster: (cta, barrier, use) -> issuing CTA -> bytes
    cluster = result.schedule.cluster
    for e in log.of_kind("issue"):
        if e.what == "tma_load":
            # A multicast (or a cta_group::2 load) sends its bytes to other CTAs' barriers: ``to``.
            for cta in (e.cta,) if e.to is ABSENT else e.to:
                key = (cta, e.barrier, e.use)
                issued[key] = issued.get(key, 0) + e.bytes
                first.setdefault(key, e)
                if cluster > 1:
                    per = sources.setdefault(key, {})
                    per[e.cta] = per.get(e.cta, 0) + e.bytes
    # A trap cuts the run short: the phases in flight on the trapping barrier never got
    # all their producers, so their byte counts prove nothing.
    trap = result.trap
    cut = (trap.cta, trap.target, trap.state.completed) if trap is not None and trap.state is not None else None
    findings = []
    bad = [k for k in first if expected.get(k, 0) != issued.get(k, 0)]
    for key in sorted(bad):
        exp, got = expected.get(key, 0), issued.get(key, 0)
        cta, barrier, use = key
        if cut and (cta, barrier) == cut[:2] and use >= cut[2]:
            continue
        anchor = first[key]
        what = "too many: the phase can never complete" if exp > got else "too few: the phase completes before all data lands"
        evidence = {"barrier": barrier, "use": use, "expected_bytes": exp, "issued_bytes": got}
        by = ""
        if cluster > 1:
            sent = sources.get(key, {})
            # The other CTAs of its cluster that sent nothing to this phase (a rank that never
            # issues its share sends nothing anywhere, so every silent peer is named).
            first_rank = cta - cta % cluster
            peers = set(range(first_rank, first_rank + cluster)) - set(sent)
            by = "; by source: " + ", ".join(f"CTA {c} {n}" for c, n in sorted(sent.items()))
            by += "".join(f", none from CTA {c}" for c in sorted(peers))
            evidence["sources"] = {str(c): n for c, n in sorted(sent.items())}
            evidence["silent_peers"] = sorted(peers)
        findings.append(Finding(
            KIND, cta, anchor.who, anchor.op, anchor.t,
            f"CTA {cta}: phase {use} of {barrier} expects {exp} bytes but its TMA loads bring {got} ({what}){by}",
            evidence,
        ))
    for e in log.of_kind("complete_tx"):
        if e.completed != e.use:  # landed outside the phase it was issued for
            d = e.data
            findings.append(Finding(
                KIND, e.cta, d.get("who_issued", e.who), e.op, e.t,
                f"CTA {e.cta}: {d['bytes']} bytes issued for phase {d['use']} of {d['barrier']} landed at cycle "
                f"{cyc(e.t)} during phase {d['completed']}",
                {"barrier": d["barrier"], "use": d["use"], "landed_in_phase": d["completed"], "bytes": d["bytes"],
                 "issued": d["issue"]},
            ))
    return findings
