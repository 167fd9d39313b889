"""``raw_race`` / ``war_race``: conflicting accesses that no synchronisation orders.

Where ``raw_hazard`` / ``war_hazard`` say a replay *did* read the wrong data,
these say the protocol does not *guarantee* the right data, whatever the
timing: an access is ordered after another only if the issuing warp had learnt
(through waits and barriers, see :mod:`protosim.engine.order`) that the other
had completed.  Per buffer stage and part, in issue order:

* a read of content *c* must be ordered after the write that produced *c*
  (otherwise ``raw_race``: the reader may run ahead of the data);
* a write must be ordered after every read of the previous contents
  (otherwise ``war_race``: it may overwrite data still being read).

Consecutive writes are not checked against each other (an in-order unit, or a
duplicated TMA of the same data); ``overissue`` and ``tx_mismatch`` cover those.
One finding per racing op, with the access it races with.
"""

from __future__ import annotations

from collections import defaultdict

from protosim.checkers.base import Finding, cyc
from protosim.engine.order import ordered_after

RAW, WAR = "raw_race", "war_race"


def check(result) -> list[Finding]:
    log = result.log
    observed: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for kind in ("observe", "wait"):  # a wait observes what its phase carried
        for e in log.of_kind(kind):
            d = e.data
            if d["seqs"]:
                pair = (d["warp"], d["at"])
                for seq in d["seqs"]:
                    observed[seq].append(pair)
    parts_of = {b.name: b.parts for b in result.schedule.buffers}
    streams: dict[tuple, list] = defaultdict(list)
    for e in log.of_kind("access"):  # already in issue (seq) order
        d = e.data
        part = d["part"]
        if part is None:
            for p in range(parts_of[d["buffer"]]):
                streams[(e.cta, d["buffer"], d["stage"], p)].append(e)
        else:
            streams[(e.cta, d["buffer"], d["stage"], part)].append(e)
    findings: dict[tuple, Finding] = {}
    for (_cta, buffer, stage, part), events in streams.items():
        last_write_of: dict[str, object] = {}
        reads_since_write: list = []
        for e in events:
            d = e.data
            clock = d["clock"]
            if d["mode"] == "r":
                w = last_write_of.get(d["content"])
                if w is not None and not ordered_after(observed.get(w.data["seq"]), clock):
                    _add(findings, RAW, e, w, buffer, stage, part,
                         f"its issuer had not observed the write of {d['content']} by {w.who} op #{w.op} complete")
                reads_since_write.append(e)
            else:
                content = d["content"]
                for r in reads_since_write:
                    rd = r.data
                    if rd["content"] != content and not ordered_after(observed.get(rd["seq"]), clock):
                        _add(findings, WAR, e, r, buffer, stage, part,
                             f"its issuer had not observed the read of {rd['content']} by {r.who} op #{r.op} "
                             f"(tile {rd['tile']}) complete")
                        break
                reads_since_write = []
                last_write_of[content] = e
    return sorted(findings.values(), key=lambda f: f.cycle)


def _add(findings, kind, e, other, buffer, stage, part, why) -> None:
    key = (kind, e.cta, e.op, e.who)
    if key in findings:
        return
    d = e.data
    what = "read" if kind == RAW else "wrote"
    where = f"{buffer}[{stage}]" + (f" part {part}" if part is not None else "")
    findings[key] = Finding(
        kind, e.cta, e.who, e.op, e.t,
        f"CTA {e.cta}: {e.who} op #{e.op} {what} {where} ({d['content']}) at cycle {cyc(e.t)} unordered: {why}",
        {"buffer": buffer, "stage": stage, "part": part, "content": d["content"], "tile": d["tile"],
         "other": {"who": other.who, "op": other.op, "content": other.data["content"], "issued": other.t,
                   "mode": other.data["mode"]}},
    )
