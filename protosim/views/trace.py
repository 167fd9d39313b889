"""A timeline as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open.

Format: the Trace Event Format (the "JSON Object Format": ``{"traceEvents": [...]}``),
https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU.
Mapping:

* a process per CTA (``pid`` = CTA + 1, named ``CTA n``), a thread per track
  (``tid``; named ``mma.w0`` ..., ``TMA``, ``MMA``);
* slices are complete events (``ph: X``).  Both viewers want the slices of one
  thread properly nested, but a TMA engine has several transfers in flight: a track
  whose slices overlap is split into lanes (``TMA``, ``TMA #2`` ...), each slice on
  the first lane that is free when it starts;
* barrier state is a counter (``ph: C``) per barrier: phase parity, pending
  arrivals, tx-count;
* the op that completed a phase is joined to each wait it released by a flow
  (``ph: s`` -> ``ph: f``, ``bp: e``); an arrival outside any slice of its track
  (a warp's arrive, a commit landing after its MMA) gets a one-cycle ``arrive``
  slice for the flow to start from;
* findings are instant events (``ph: i``, thread scope) with their evidence in ``args``.

Timestamps are microseconds (the format's unit) converted from cycles at the
profile's clock; every slice keeps its cycles in ``args``.
"""

from __future__ import annotations

import bisect
from typing import Any

from protosim.timeline import Slice, Timeline

EPS_CYCLES = 0.5
"""Flow ends sit half a cycle inside their slices so the viewers bind them to it."""


def _lanes(slices: list[Slice]) -> list[tuple[int, Slice]]:
    """Assign each slice of one track a lane so that slices within a lane never overlap
    without nesting (greedy interval partitioning: optimal for intervals)."""
    ends: list[float] = []
    out = []
    for s in sorted(slices, key=lambda s: (s.t0, -s.t1)):
        for lane, end in enumerate(ends):
            if end <= s.t0:
                ends[lane] = s.t1
                break
        else:
            lane = len(ends)
            ends.append(s.t1)
        out.append((lane, s))
    return out


def to_trace_events(tl: Timeline) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    tids: dict[tuple[int, str], int] = {}

    def tid(cta: int, track: str) -> int:
        key = (cta, track)
        if key not in tids:
            tids[key] = len(tids) + 1
            events.append({"ph": "M", "name": "thread_name", "pid": cta + 1, "tid": tids[key], "args": {"name": track}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": cta + 1, "tid": tids[key],
                           "args": {"sort_index": tids[key]}})
        return tids[key]

    for cta in tl.ctas:
        events.append({"ph": "M", "name": "process_name", "pid": cta + 1, "tid": 0, "args": {"name": f"CTA {cta}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": cta + 1, "tid": 0, "args": {"sort_index": cta}})
        for track in tl.tracks[cta]:
            tid(cta, track)

    # An op that completed a phase outside any slice of its track (a warp's arrive, a
    # tcgen05.commit landing after its MMA) gets a one-cycle slice for the flow to start from.
    by_track: dict[tuple[int, str], list[Slice]] = {}
    for s in tl.slices:
        by_track.setdefault((s.cta, s.track), []).append(s)
    for f in tl.flows:
        t = f.src_t - EPS_CYCLES
        if not any(s.t0 <= t <= s.t1 for s in by_track.get((f.cta, f.src_track), [])):
            by_track.setdefault((f.cta, f.src_track), []).append(
                Slice(f.cta, f.src_track, "arrive", f.src_t - 1.0, f.src_t, "arrive", {"completes": f.name}))

    lane_of: dict[tuple[int, str], list[tuple[float, float, str]]] = {}
    for (cta, track), slices in by_track.items():
        for lane, s in _lanes(slices):
            name = track if lane == 0 else f"{track} #{lane + 1}"
            lane_of.setdefault((cta, track), []).append((s.t0, s.t1, name))
            events.append({"ph": "X", "name": s.name, "cat": s.cat, "pid": cta + 1, "tid": tid(cta, name),
                           "ts": tl.us(s.t0), "dur": tl.us(max(s.t1 - s.t0, 0.0)),
                           "args": {"cycles": [round(s.t0, 1), round(s.t1, 1)], **s.args}})
    starts = {key: [t0 for t0, _, _ in spans] for key, spans in lane_of.items()}  # sorted: _lanes sorts by start
    longest = {key: max((t1 - t0 for t0, t1, _ in spans), default=0.0) for key, spans in lane_of.items()}

    def lane_at(cta: int, track: str, t: float) -> str:
        """The lane of ``track`` whose slice encloses ``t`` (flows bind to it): only slices
        starting within the track's longest slice before ``t`` can enclose it."""
        key = (cta, track)
        spans = lane_of.get(key, [])
        hi = bisect.bisect_right(starts.get(key, []), t)
        lo = bisect.bisect_left(starts.get(key, []), t - longest.get(key, 0.0))
        for t0, t1, name in spans[lo:hi]:
            if t0 <= t <= t1:
                return name
        return track

    for n, f in enumerate(tl.flows, 1):
        src_t, dst_t = f.src_t - EPS_CYCLES, f.dst_t - EPS_CYCLES
        events.append({"ph": "s", "id": n, "name": f.name, "cat": "release", "pid": f.cta + 1,
                       "tid": tid(f.cta, lane_at(f.cta, f.src_track, src_t)), "ts": tl.us(src_t)})
        events.append({"ph": "f", "bp": "e", "id": n, "name": f.name, "cat": "release", "pid": f.cta + 1,
                       "tid": tid(f.cta, lane_at(f.cta, f.dst_track, dst_t)), "ts": tl.us(dst_t)})

    for c in tl.counters:
        events.append({"ph": "C", "name": c.barrier, "pid": c.cta + 1, "tid": 0, "ts": tl.us(c.t),
                       "args": {"phase": c.phase, "pending": c.pending, "tx": c.tx}})

    for m in tl.markers:
        events.append({"ph": "i", "s": "t", "name": ("FIRST " if m.first else "") + m.kind, "cat": "finding",
                       "pid": m.cta + 1, "tid": tid(m.cta, m.track), "ts": tl.us(m.t),
                       "args": {"message": m.message, "cycle": round(m.t, 1), "evidence": m.evidence}})

    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"producer": "protosim", "schedule": tl.name, "arch": tl.arch, "clock_ghz": tl.clock_ghz,
                      "outcome": tl.outcome, "cycles": round(tl.end_cycle, 1), "ctas": tl.ctas,
                      "ctas_total": tl.ctas_total, "note": tl.note},
    }
