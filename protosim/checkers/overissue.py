"""``overissue``: an op meant to be issued by one thread was issued by several.

TMA copies, tcgen05 MMAs and their commits are *tile* operations: one thread
starts work for the whole CTA (the seed: "if 128 threads all issue the op, the
same work is submitted 128 times"; "elect_sync in each warp gives four TMA
issuers").  Grouped per op of the program (a role's op index: roles number their ops
apart) and per CTA.
"""

from __future__ import annotations

from protosim.checkers.base import Finding, role_of

KIND = "overissue"
SINGLE_ISSUER = ("tma_load", "tma_store", "mma", "mma_commit")


def check(result) -> list[Finding]:
    issues = result.log.of_kind("issue")
    # An op that can over-issue shows it in at least one event: a thread count above one,
    # or an issuer other than the role's first warp.  Only those ops are grouped.
    roles = {who: role_of(who) for who in {e.who for e in issues}}
    suspects = {(e.cta, roles[e.who], e.op) for e in issues
                if e.what in SINGLE_ISSUER and (e.threads > 1 or not e.who.endswith(".w0"))}
    counts: dict[tuple, list] = {}
    if not suspects:
        return []
    for e in issues:
        if e.what in SINGLE_ISSUER and (e.cta, roles[e.who], e.op) in suspects:
            counts.setdefault((e.cta, roles[e.who], e.op, e.tile, e.k), []).append(e)
    findings = []
    reported: set[tuple] = set()
    for (cta, role, op, tile, k), events in counts.items():
        threads = sum(e.data["threads"] for e in events)
        if threads <= 1 or (cta, role, op) in reported:
            continue
        reported.add((cta, role, op))  # once per op of the program, not per loop iteration
        first = events[0]
        why = ("; each thread's tcgen05.commit arrives on the barrier once: the threads that issued no MMA "
               "commit empty groups, which arrive at once" if first.data["what"] == "mma_commit" else "")
        findings.append(Finding(
            KIND, cta, first.who, op, first.t,
            f"CTA {cta}: {first.data['what']} (op #{op}, tile {tile}, k={k}) issued by {threads} threads "
            f"({', '.join(sorted({e.who for e in events}))}); it must have exactly one issuer{why}",
            {"what": first.data["what"], "threads": threads, "issuers": sorted({e.who for e in events}),
             "tile": tile, "k": k},
        ))
    return findings
