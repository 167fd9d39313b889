"""``raw_hazard`` / ``war_hazard``: a read that did not see the data it expects.

Every write to a buffer stage says which data it puts there (``content``) and
over which cycles it touches the stage (``t0..t1``: a TMA load from issue to
landing, an MMA from start to completion, a thread copy while it runs); every
read says which data it expects and when it reads.  Per stage (and per part,
for stages written piecewise by warps), a read of content *c* over
``[r0, r1]`` is clean iff

* some write of *c* finished by ``r0`` -- otherwise ``raw_hazard``: the reader
  did not wait for the writer (the write is still in flight, or never came);
* no *later-issued* write of other content starts before ``r1`` -- otherwise
  ``war_hazard``: the writer did not wait for the reader;
* no *earlier-issued* write of other content lands after the *c* write --
  otherwise ``raw_hazard`` (stale data landed on top).

Writes of the same content (a duplicated TMA) never conflict.  A read with no content
expects nothing in particular (the TTGIR reader's read of memory no op of the kernel
writes): it is not judged here -- what it reads is uninitialised, not raced.  Each hazardous
read names its output tile, which is how a verdict knows which tiles come out
wrong.  One finding per read op (not per part).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict

from protosim.checkers.base import Cells, Finding, columns_words, cyc, storage_key, where

RAW, WAR = "raw_hazard", "war_hazard"


class _Write:
    __slots__ = ("seq", "issued", "t0", "t1", "content", "event")

    def __init__(self, e):
        self.seq, self.issued, self.t0, self.t1, self.content, self.event = e.seq, e.t, e.t0, e.t1, e.content, e


def check(result) -> list[Finding]:
    cells = Cells(result.schedule, result.log)
    writes: dict[tuple, list[_Write]] = defaultdict(list)
    reads: dict[tuple, list] = defaultdict(list)
    for e in result.log.of_kind("access"):
        key = storage_key(e)
        if e.mode == "w":
            writes[key].append(_Write(e))
        else:
            reads[key].append(e)
    findings = []
    for key, rs in reads.items():
        buffer = key[1]
        nparts = cells.parts[buffer]
        by_cell = _index_writes(writes.get(key, []), cells, buffer)
        for r in rs:
            if not r.content:
                continue  # a read that expects nothing in particular (memory nobody writes: not a protocol's data)
            for cell in cells.of(r):
                hazard = _judge(r, by_cell[cell])
                if hazard is not None:
                    part, span = cells.split(cell)
                    findings.append(_finding(r, part if nparts > 1 else None, span, *hazard))
                    break
    return findings


class _PartWrites:
    """The writes covering one part of one stage, in issue order (so by issue cycle too)."""

    def __init__(self, ws: list[_Write]):
        self.ws = ws
        self.issued = [w.issued for w in ws]
        self.by_content: dict[str, list[int]] = defaultdict(list)
        for i, w in enumerate(ws):
            self.by_content[w.content].append(i)
        # per content, the issue cycles of its writes: a read finds the writes issued by its
        # start with one bisection, not a scan of every write of that content (a loop that
        # rewrites one stage with the same content thousands of times made that quadratic)
        self.issued_by_content = {c: [ws[i].issued for i in idx] for c, idx in self.by_content.items()}
        # how much earlier than its issue (log) cycle a write can have landed: 0 for every write
        # the engine logs at issue; kept general so the search stays exact if one is logged later
        self.max_lead = max((w.issued - w.t1 for w in ws), default=0.0)
        self.max_span = max((w.t1 - w.issued for w in ws), default=0.0)

    def last_landed(self, content: str, r0: float) -> int | None:
        """Index of the last-issued write of ``content`` that landed by ``r0``, or None.  A write
        issued after ``r0 + max_lead`` cannot have landed by then, so the search starts at the
        last one issued by that cycle and walks back over those still in flight."""
        mine = self.by_content.get(content)
        if not mine:
            return None
        ws = self.ws
        for j in range(bisect_right(self.issued_by_content[content], r0 + max(0.0, self.max_lead)) - 1, -1, -1):
            if ws[mine[j]].t1 <= r0:
                return mine[j]
        return None


def _index_writes(ws: list[_Write], cells: Cells, buffer: str) -> dict:
    """Per cell of the stage, the writes covering it, in issue order."""
    ws = sorted(ws, key=lambda w: w.seq)
    covering: dict = {cell: [] for cell in cells.all(buffer)}
    for w in ws:
        for cell in cells.of(w.event):
            covering[cell].append(w)
    return {cell: _PartWrites(cws) for cell, cws in covering.items()}


def _judge(r, pw: _PartWrites):
    """None if the read is clean, else (kind, offending write or None, why)."""
    c, r0, r1 = r.content, r.t0, r.t1
    anchor_i = pw.last_landed(c, r0)
    if anchor_i is None:
        mine = pw.by_content.get(c)
        if mine:
            w = pw.ws[mine[0]]
            return RAW, w, f"the write of {c} was still in flight (it lands at cycle {cyc(w.t1)})"
        before = [w for w in pw.ws if w.t1 <= r0]
        held = f"it held {before[-1].content}" if before else "it was never written"
        return RAW, None, f"{c} was never written to it ({held})"
    anchor = pw.ws[anchor_i]
    # Later-issued writes of other data that start before the read ends: scan forward
    # while their issue cycle (<= their t0) is before r1 (by index: a slice would copy
    # the rest of the stage's writes for every read).
    ws = pw.ws
    for j in range(anchor_i + 1, len(ws)):
        w = ws[j]
        if w.issued >= r1:
            break
        if w.content != c and w.t0 < r1:
            return WAR, w, f"{w.content} was written over it from cycle {cyc(w.t0)} while the read ran until {cyc(r1)}"
    # Earlier-issued writes that land after the anchor: only those issued within
    # max_span of the anchor's landing can.
    lo = bisect_left(pw.issued, anchor.t1 - pw.max_span)
    for w in pw.ws[lo:anchor_i]:
        if w.content != c and w.t1 > anchor.t1 and w.t0 < r1:
            return RAW, w, f"an older write of {w.content} landed at cycle {cyc(w.t1)}, after {c}"
    return None


def _finding(r, part, span, kind: str, w: _Write | None, why: str) -> Finding:
    d = r.data
    place = f"{where(r)}{d['buffer']}[{d['stage']}]" + (f" part {part}" if part is not None else "") + columns_words(span)
    tile = d["tile"]
    ev = {
        "buffer": d["buffer"],
        "stage": d["stage"],
        "part": part,
        "expected": d["content"],
        "read": [d["t0"], d["t1"]],
        "tile": tile,
    }
    if span:
        ev["columns"] = list(span)
    if "owner" in d:
        ev["owner"] = d["owner"]
    if w is not None:
        ev["writer"] = {"who": w.event.who, "op": w.event.op, "content": w.content, "t0": w.t0, "t1": w.t1,
                        "cta": w.event.cta}
        if w.event.cta != r.cta:
            why = f"{why} (written by CTA {w.event.cta} {w.event.who} op #{w.event.op})"
    return Finding(
        kind, r.cta, r.who, r.op, d["t0"],
        f"CTA {r.cta}: {r.who} op #{r.op} read {place} over cycles {cyc(d['t0'])}..{cyc(d['t1'])} expecting "
        f"{d['content']}, but {why}" + (f"; output tile {tile} is wrong" if tile is not None else ""),
        ev,
        tiles=(tuple(tile),) if tile is not None else (),
    )
