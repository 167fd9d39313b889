"""Cross-CTA protocol checks in a thread-block cluster.

``peer_exited``
    A CTA exited while a peer's access to its storage was not known to it: an arrive on
    one of its barriers, a multicast copy into its shared memory, a 2-CTA MMA reading its
    operands or writing its TMEM, a DSMEM load or store.  Its shared memory is gone once it
    exits (CUDA C++ Programming Guide, "Distributed Shared Memory": a block must not exit
    while others of its cluster may still access its shared memory -- hence the
    ``cluster.sync()`` before exit).  Judged by order, not by time: the access must be
    *known* to the exiting CTA (through a barrier it waited on, or ``barrier.cluster``)
    by the time its last warp finished, so a run that happened to be safe is still flagged.
``tmem_freed_early``
    The same for ``tcgen05.dealloc``: a CTA freed TMEM columns while a peer's 2-CTA MMA
    (or copy) into them was not known to it to have completed.
``peer_uninitialized``
    A peer's arrive, expect_tx or multicast complete_tx on CTA *b*'s barrier not ordered after
    *b*'s ``mbarrier.init`` of it: nothing (``fence.mbarrier_init.release.cluster`` and a cluster
    barrier) made the init visible to the issuer first, so the op may hit an uninitialised
    barrier -- undefined (PTX mbarrier: an op on an uninitialised object), whatever the timing.
``arrival_mismatch``
    On a barrier that receives arrivals from more than one CTA, an arrival landed during
    a different phase than the one it was for (``use``): the barrier's count does not cover
    every CTA's arrivals, or one CTA ran a round ahead (a lapped rendezvous), so one CTA's
    arrivals complete a phase meant for all of them.

Every message names both CTAs.
"""

from __future__ import annotations

from collections import defaultdict

from protosim.checkers.base import Finding, cyc
from protosim.checkers.races import Knowledge

PEER_EXITED, TMEM_FREED, UNINIT, ARRIVAL = "peer_exited", "tmem_freed_early", "peer_uninitialized", "arrival_mismatch"
KINDS = (PEER_EXITED, TMEM_FREED, UNINIT, ARRIVAL)


def check(result) -> list[Finding]:
    if result.schedule.cluster == 1:
        return []
    log = result.log
    findings: list[Finding] = []
    seen: set[tuple] = set()
    exits = {e.cta: e for e in log.of_kind("cta_exit")}
    _peer_accesses(result, exits, findings, seen)
    _peer_barrier_ops(log, exits, findings, seen)
    findings += _arrival_mismatch(log)
    return sorted(findings, key=lambda f: f.cycle)


def _peer_accesses(result, exits: dict, findings: list[Finding], seen: set) -> None:
    """peer_exited / tmem_freed_early for a peer's access to a CTA's buffer: its completion must
    be known to the owner when the owner exits (or frees that TMEM)."""
    log = result.log
    frees = defaultdict(list)
    for e in log.of_kind("tmem_dealloc"):
        frees[e.cta].append(e)
    knowledge = Knowledge.of(log)
    space = {b.name: b.space for b in result.schedule.buffers}
    for e in log.of_kind("access"):
        d = e.data
        owner = d.get("owner", e.cta)
        if owner == e.cta:
            continue
        ex = exits.get(owner)
        if ex is not None and not knowledge.known(e, ex.data["clock"]):
            _once(findings, seen, (PEER_EXITED, e.cta, e.who, e.op, owner), Finding(
                PEER_EXITED, owner, e.who, e.op, ex.t,
                f"CTA {owner} exited at cycle {cyc(ex.t)} without knowing that CTA {e.cta} {e.who} op #{e.op} "
                f"({'read' if d['mode'] == 'r' else 'wrote'} its {d['buffer']}[{d['stage']}], {d['content']}, "
                f"issued at cycle {cyc(e.t)}) had completed: its shared memory may be gone under the peer's access; "
                f"put a cluster barrier (barrier.cluster.arrive + wait) before the exit",
                {"exited": owner, "exit_cycle": ex.t, "peer": e.cta, "who": e.who, "op": e.op,
                 "buffer": d["buffer"], "stage": d["stage"], "mode": d["mode"], "issued": e.t}))
        if space.get(d["buffer"]) == "tmem":
            for fr in frees.get(owner, ()):
                if not knowledge.known(e, fr.data["clock"]):  # in flight at the dealloc, or issued after it
                    _once(findings, seen, (TMEM_FREED, e.cta, e.who, e.op, owner), Finding(
                        TMEM_FREED, owner, fr.who, fr.op, fr.t,
                        f"CTA {owner} {fr.who} freed its TMEM (tcgen05.dealloc, op #{fr.op}) at cycle {cyc(fr.t)} "
                        f"without knowing that CTA {e.cta} {e.who} op #{e.op} ({d['buffer']}[{d['stage']}], "
                        f"{d['content']}, issued at cycle {cyc(e.t)}) had completed; wait for the peer (a cluster "
                        f"barrier after its last MMA is known complete) before the dealloc",
                        {"freed": owner, "cycle": fr.t, "peer": e.cta, "who": e.who, "op": e.op,
                         "buffer": d["buffer"], "stage": d["stage"], "issued": e.t}))


def _peer_barrier_ops(log, exits: dict, findings: list[Finding], seen: set) -> None:
    """peer_uninitialized / peer_exited for a peer's op on a CTA's barrier: ordered after the
    barrier's init, and before the owner's exit."""
    inits: dict[tuple[int, str], list] = defaultdict(list)
    for e in log.of_kind("init"):
        inits[(e.cta, e.data["barrier"])].append(e)
    for kind in ("arrive", "expect_tx", "complete_tx"):
        for e in log.of_kind(kind):
            src = e.data.get("from_cta")
            if src is None or src == e.cta:
                continue
            clock = e.data.get("clock")
            init = inits.get((e.cta, e.data["barrier"]))
            if clock is not None and init and not any(clock[i.data["warp"]] >= i.data["at"] for i in init):
                _once(findings, seen, (UNINIT, src, e.who, e.op, e.cta), Finding(
                    UNINIT, e.cta, e.who, e.op, e.t,
                    f"CTA {src} {e.who} op #{e.op}: {kind} on CTA {e.cta}'s {e.data['barrier']} (phase "
                    f"{e.data['use']}) is not ordered after CTA {e.cta}'s mbarrier.init of it ({init[0].who}, "
                    f"cycle {cyc(init[0].t)}): the barrier may not be initialised yet when it lands; after the "
                    f"inits, fence.mbarrier_init.release.cluster and a cluster barrier in every CTA",
                    {"owner": e.cta, "peer": src, "who": e.who, "op": e.op, "barrier": e.data["barrier"],
                     "use": e.data["use"], "what": kind}))
            ex = exits.get(e.cta)
            late = ex is not None and (e.t > ex.t or (clock is not None and not _ordered(clock, ex.data["clock"])))
            if late:
                _once(findings, seen, (PEER_EXITED, src, e.who, e.op, e.cta), Finding(
                    PEER_EXITED, e.cta, e.who, e.op, e.t,
                    f"CTA {src} {e.who} op #{e.op}: {kind} on CTA {e.cta}'s {e.data['barrier']} (phase "
                    f"{e.data['use']}) at cycle {cyc(e.t)} is not ordered before CTA {e.cta}'s exit at cycle "
                    f"{cyc(ex.t)}: the barrier may no longer exist; put a cluster barrier before the exit",
                    {"exited": e.cta, "exit_cycle": ex.t, "peer": src, "who": e.who, "op": e.op,
                     "barrier": e.data["barrier"], "use": e.data["use"], "what": kind}))


def _ordered(at_issue, exit_clock) -> bool:
    """The exiting CTA had learnt of the issuing warp's state at (or after) the arrival:
    every component of the issue clock is in its past."""
    return all(x <= y for x, y in zip(at_issue, exit_clock))


def _arrival_mismatch(log) -> list[Finding]:
    shared = {(e.cta, e.data["barrier"]) for e in log.of_kind("arrive") if e.data.get("from_cta") is not None}
    out: list[Finding] = []
    seen: set[tuple] = set()
    for e in log.of_kind("arrive"):
        d = e.data
        key = (e.cta, d["barrier"])
        if key not in shared or d["completed"] == d["use"]:
            continue
        src = d.get("from_cta", e.cta)
        tag = (key, d["use"], src)
        if tag in seen:
            continue
        seen.add(tag)
        early = d["completed"] > d["use"]
        out.append(Finding(
            ARRIVAL, e.cta, e.who, e.op, e.t,
            f"CTA {src} {e.who} op #{e.op} arrived on CTA {e.cta}'s {d['barrier']} for phase {d['use']} at cycle "
            f"{cyc(e.t)}, during phase {d['completed']}: "
            + ("that phase had already completed without it -- other arrivals completed it: the barrier's count "
               "does not cover every CTA's arrivals (multiply it by the CTAs that arrive), or a CTA arrived for a "
               "later round before this one finished (wait for the round before arriving again)" if early else
               "it arrived before the phase it belongs to was in flight: this CTA ran ahead of the round (wait for "
               "the round before arriving for the next)"),
            {"barrier": d["barrier"], "owner": e.cta, "from_cta": src, "use": d["use"], "landed_in_phase": d["completed"]}))
    return out


def _once(findings: list[Finding], seen: set, key: tuple, f: Finding) -> None:
    if key not in seen:
        seen.add(key)
        findings.append(f)
