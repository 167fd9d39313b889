"""``unreleased_write``: data stored by a warp's 32 lanes, published by one lane.

The vector clocks of :mod:`protosim.engine.order` are per warp; the memory model's
release is per thread.  A ``st.shared`` executed by all 32 lanes is 32 stores, each
lane's own; an ``mbarrier.arrive`` by one elected lane (issuer ``one`` or
``each_warp``) releases only *that lane's* earlier stores (PTX memory model: release
covers the executing thread's prior operations; the other lanes' stores are ordered
before it only through a synchronisation among the lanes -- ``__syncwarp`` /
``bar.warp.sync``, ``bar.sync``, a named barrier).  The same holds for any op one lane
executes on data all lanes wrote: a single-lane TMA store or MMA reading shared memory
the warp just filled.  (``fence.proxy.async`` orders a thread's own stores for the async
proxy; it does not order the other lanes' stores before the issuing lane.)

The engine logs, per warp, the stores all 32 lanes made since the lanes last
synchronised, and when they become every lane's knowledge: a ``lane_release`` event at
a warp sync, or the seqs an all-lane arrive adds to its phase.  Here, per buffer
stage and part, a read of data written by 32 lanes is flagged when the reader is
ordered after the store by the warp-level clocks (so ``raw_race`` is silent) but not
by those lane-exact observations -- the release it relied on did not carry the store.
A read by the same warp's 32 lanes is exempt (each lane reads what it wrote).

The model has no lane timing, so such a read never *sees* stale data in a replay:
the finding makes the verdict not OK, never the outcome ``wrong`` (like a race).
"""

from __future__ import annotations

from collections import defaultdict

from protosim.checkers.base import Finding, cyc, storage_key
from protosim.checkers.races import Knowledge
from protosim.engine.log import ABSENT
from protosim.engine.order import ordered_after

KIND = "unreleased_write"


def check(result) -> list[Finding]:
    log = result.log
    space = {b.name: b.space for b in result.schedule.buffers}
    parts_of = {b.name: b.parts for b in result.schedule.buffers}
    lane_known: dict[int, list[int]] = defaultdict(list)  # seq -> (warp, clock value) pairs laid flat (ordered_after)
    for e in log.of_kind("lane_release"):
        pair = (e.warp, e.at)
        for seq in e.seqs:
            lane_known[seq] += pair
    lane_writes: set[int] = set()
    slots: set[tuple] = set()  # (cta, buffer, stage) with a lane write: only these streams matter
    for e in log.of_kind("access"):
        if e.mode == "w" and e.lanes > 1 and space.get(e.buffer) == "smem":
            lane_writes.add(e.seq)
            slots.add(storage_key(e))
    if not lane_writes:
        return []
    for e in log.of_kind("wait"):  # an all-lane arrive's phase carries its lanes' stores
        if e.seqs:
            pair = (e.warp, e.at)
            for seq in e.seqs:
                if seq in lane_writes:
                    lane_known[seq] += pair
    carried_by: dict[int, list] = defaultdict(list)  # lane-write seq -> single-lane arrives that left it out
    for e in log.of_kind("arrive"):
        if e.unreleased is not ABSENT:
            for seq in e.unreleased:
                carried_by[seq].append(e)
    knowledge = Knowledge.of(log)
    waited = defaultdict(list)  # (cta, who) -> waits, to name the arrive a reader relied on
    for e in log.of_kind("wait"):
        waited[(e.cta, e.who)].append(e)
    streams: dict[tuple, list] = defaultdict(list)
    for e in log.of_kind("access"):
        key = storage_key(e)
        if key not in slots:
            continue
        for p in (range(parts_of[e.buffer]) if e.part is None else (e.part,)):
            streams[(*key, p)].append(e)
    findings: dict[tuple, Finding] = {}
    for (cta, buffer, stage, part), events in streams.items():
        last_write_of: dict[str, object] = {}
        for e in events:
            if e.mode == "w":
                last_write_of[e.content] = e
                continue
            w = last_write_of.get(e.content)
            if w is None or w.seq not in lane_writes:
                continue
            if e.who == w.who and e.lanes > 1:
                continue  # the same lanes read back what they stored
            key = (e.cta, e.who, e.op)
            if key in findings:
                continue
            clock = e.clock
            if not knowledge.known(w, clock):
                continue  # not ordered at all: raw_race says so
            if ordered_after(lane_known.get(w.seq), clock):
                continue
            findings[key] = _finding(e, w, buffer, stage, part if parts_of[buffer] > 1 else None,
                                     _relied_on(carried_by.get(w.seq, []), waited[(e.cta, e.who)], e))
    return sorted(findings.values(), key=lambda f: f.cycle)


def _relied_on(arrives: list, waits: list, read):
    """The single-lane arrive the reader most plausibly learnt of the store through: one
    whose barrier phase the reader's warp waited for before the read, else the first."""
    for a in arrives:
        for wt in waits:
            if (wt.data["barrier"] == a.data["barrier"] and wt.data["completed_return"] > a.data["completed"]
                    and wt.t <= read.t):
                return a
    return arrives[0] if arrives else None


def _finding(r, w, buffer: str, stage: int, part, arrive) -> Finding:
    d = r.data
    where = f"{buffer}[{stage}]" + (f" part {part}" if part is not None else "")
    head = (f"CTA {r.cta}: {r.who} op #{r.op} read {where} ({d['content']}) at cycle {cyc(r.t)}, stored by "
            f"{w.who} op #{w.op} with all 32 lanes")
    ev = {"buffer": buffer, "stage": stage, "part": part, "content": d["content"], "tile": d["tile"],
          "writer": {"who": w.who, "op": w.op, "issued": w.t}}
    if arrive is not None:
        a = arrive.data
        ev["arrive"] = {"who": arrive.who, "op": arrive.op, "barrier": a["barrier"], "use": a["use"], "cycle": arrive.t}
        why = (f"; the reader learnt of it only through {arrive.who}'s single-lane arrive on {a['barrier']} "
               f"(op #{arrive.op}, phase {a['use']}, cycle {cyc(arrive.t)}), which releases that lane's own stores, "
               f"not the other 31 lanes' -- add __syncwarp() (bar.warp.sync) in {w.who} before the elected arrive")
    else:
        why = (f"; {r.who} executes the read with one lane and no __syncwarp() (bar.warp.sync) or bar.sync of "
               f"{w.who} lies between the store and it, so the other 31 lanes' stores are not ordered before it "
               f"-- add __syncwarp() (or a named barrier) before the single-lane op")
    return Finding(KIND, r.cta, r.who, r.op, r.t, head + why, ev,
                   tiles=())
