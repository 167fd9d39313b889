"""One self-contained HTML page for a replay: verdict, explanation, timing and an
interactive timeline.

:func:`render` returns the page as a string.  Nothing in it reaches the network
(inline CSS and JS, system fonts), so the file can be mailed or attached to a bug.
The timeline is embedded as JSON (``<script type="application/json"
id="timeline-data">``) and drawn as inline SVG by a small vanilla-JS script:
one row per (CTA, track), a row per mbarrier, flows, and findings as markers.

The script only draws what is in view and merges neighbouring slices narrower
than a pixel (a few pixels while thousands are in view; the merged bar's opacity
is the fraction of its span they cover), so a launch with tens of thousands of
slices stays responsive, and the page says when it merged.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from typing import Any

from protosim.checkers.base import plain
from protosim.explain import primary
from protosim.timeline import Timeline
from protosim.verdict import Verdict

LARGE_TIMELINE = 20_000
"""Above this many slices the page says that it draws only what is in view, merged."""
MAX_FINDINGS_LISTED = 300
"""Findings listed in the table; the rest are counted (all are in the verdict JSON)."""


def render(timeline: Timeline, verdict: Verdict, explanation: str, title: str) -> str:
    """The report page for one replay, as a complete HTML document."""
    if not isinstance(timeline, Timeline):
        raise TypeError(f"render: timeline must be a protosim.timeline.Timeline, not {type(timeline).__name__}")
    if not isinstance(verdict, Verdict):
        raise TypeError(f"render: verdict must be a protosim.verdict.Verdict, not {type(verdict).__name__}")
    if not isinstance(explanation, str):
        raise TypeError(f"render: explanation must be a str, not {type(explanation).__name__}")
    if not isinstance(title, str):
        raise TypeError(f"render: title must be a str, not {type(title).__name__}")
    e = html.escape
    tl = timeline
    kinds = Counter(f.kind for f in verdict.findings)
    chips = "".join(f'<span class="chip">{e(k)} <b>×{n}</b></span>' for k, n in kinds.items())
    note = f'<p class="notice" id="timeline-note">{e(tl.note)}</p>' if tl.note else ""
    if len(tl.slices) > LARGE_TIMELINE:
        note += (f'<p class="notice" id="large-note">Large timeline: {len(tl.slices):,} slices. Only the slices in view '
                 f'are drawn, and neighbouring slices narrower than a pixel (a few pixels while very many are in '
                 f'view) are merged into one bar; zoom in to see them one by one.</p>')
    counts = (f"{len(tl.ctas)} of {tl.ctas_total} CTA(s) · {len(tl.slices):,} slices · {len(tl.flows):,} flows · "
              f"{len(tl.markers):,} finding markers")
    return _PAGE.format(
        title=e(title or verdict.name),
        css=_CSS,
        js=_JS,
        subtitle=e(f"{verdict.name} on {verdict.arch} · schedule {verdict.schedule_hash} · replay: {verdict.perturbation}"),
        outcome_kind=e(verdict.outcome.kind),
        outcome=e(verdict.outcome.summary()),
        cycles=e(f"{verdict.timing.cycles:,.0f} cycles ({verdict.timing.microseconds:.2f} µs)"),
        chips=chips or '<span class="chip ok">no findings</span>',
        note=note,
        counts=e(counts),
        explanation=e(explanation),
        findings=_findings_table(verdict),
        n_findings=len(verdict.findings),
        timing=_timing_tables(verdict),
        data=_embed(timeline_data(tl)),
    )


def timeline_data(tl: Timeline) -> dict[str, Any]:
    """The timeline as plain JSON-ready values (the field names of its records)."""
    return {
        "name": tl.name,
        "arch": tl.arch,
        "clock_ghz": tl.clock_ghz,
        "end_cycle": _t(tl.end_cycle),
        "ctas_total": tl.ctas_total,
        "ctas": list(tl.ctas),
        "tracks": {str(c): list(names) for c, names in tl.tracks.items()},
        "slices": [{"cta": s.cta, "track": s.track, "name": s.name, "t0": _t(s.t0), "t1": _t(s.t1), "cat": s.cat,
                    "args": plain(s.args)} for s in tl.slices],
        "counters": [{"cta": p.cta, "barrier": p.barrier, "t": _t(p.t), "phase": p.phase, "pending": p.pending,
                      "tx": p.tx, "completed": p.completed} for p in tl.counters],
        "flows": [{"cta": f.cta, "name": f.name, "src_track": f.src_track, "src_t": _t(f.src_t),
                   "dst_track": f.dst_track, "dst_t": _t(f.dst_t)} for f in tl.flows],
        "markers": [{"cta": m.cta, "track": m.track, "t": _t(m.t), "kind": m.kind, "message": m.message,
                     "evidence": plain(m.evidence), "first": m.first} for m in tl.markers],
        "outcome": tl.outcome,
        "note": tl.note,
    }


def _embed(data: dict[str, Any]) -> str:
    # Inside <script> the HTML parser ends the element at the first "</script" and treats
    # "<!--" specially; JSON never needs a raw "<" outside strings, so escape every one.
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str).replace("<", "\\u003c")


def _t(cycles: float) -> float:
    """Cycles rounded for the page (sub-cycle precision is noise and bloats big pages)."""
    return round(cycles, 2)


def _findings_table(verdict: Verdict) -> str:
    if not verdict.findings:
        return '<p class="muted">No findings.</p>'
    first = primary(verdict.findings)
    e = html.escape
    rows = []
    for f in verdict.findings[:MAX_FINDINGS_LISTED]:
        tag = ' <span class="tag">first</span>' if f is first else ""
        cta = "launch" if f.cta < 0 else str(f.cta)
        rows.append(f'<tr class="finding{" first" if f is first else ""}" data-cycle="{f.cycle:.2f}" '
                    f'title="show cycle {f.cycle:,.0f} in the timeline"><td><span class="kind">{e(f.kind)}</span>{tag}</td>'
                    f'<td class="num">{e(cta)}</td><td>{e(f.who)}</td><td class="num">{f.cycle:,.0f}</td>'
                    f'<td class="msg">{e(f.message)}</td></tr>')
    more = len(verdict.findings) - MAX_FINDINGS_LISTED
    tail = f'<p class="muted">… and {more:,} more findings (all are in <code>protosim run --json</code>).</p>' if more > 0 else ""
    return ('<table class="findings"><thead><tr><th>kind</th><th>CTA</th><th>warp</th><th>cycle</th><th>message</th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table>{tail}')


def _timing_tables(verdict: Verdict) -> str:
    t = verdict.timing
    e = html.escape

    def pct(x: float) -> str:
        return f"{100 * x:.1f} %"

    run = [("cycles", f"{t.cycles:,.0f}"), ("time", f"{t.microseconds:.2f} µs"), ("events", f"{t.events:,}"),
           ("SMs used", f"{t.sms_used:,}")]
    busy = [("TMA busy", pct(t.tma_busy)), ("MMA busy", pct(t.mma_busy)), ("L2 busy", pct(t.l2_busy)),
            ("HBM busy", pct(t.hbm_busy)), ("L2 hit rate", pct(t.l2_hit_rate))]

    def kv(title: str, pairs: list[tuple[str, str]]) -> str:
        body = "".join(f'<tr><th>{e(k)}</th><td class="num">{e(v)}</td></tr>' for k, v in pairs)
        return f'<table class="kv"><caption>{e(title)}</caption>{body}</table>'

    stall_rows = [f'<tr><td>{e(role)}</td><td>{e(what)}</td><td class="num">{c:,.0f}</td>'
                  f'<td class="num">{pct(c / t.cycles) if t.cycles else "-"}</td></tr>'
                  for role, per in t.stall.items() for what, c in sorted(per.items(), key=lambda x: -x[1])]
    stalls = ('<table class="stalls"><caption>Stalls (blocked cycles per warp)</caption><thead><tr><th>role</th>'
              '<th>blocked on</th><th>cycles</th><th>of the run</th></tr></thead><tbody>'
              + ("".join(stall_rows) or '<tr><td colspan="4" class="muted">no stalls</td></tr>') + "</tbody></table>")
    return f'<div class="timing">{kv("Run", run)}{kv("Busy (over the SMs used)", busy)}{stalls}</div>'


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · protosim report</title>
<style>{css}</style>
</head>
<body>
<header>
  <div>
    <h1>{title}</h1>
    <div class="sub">{subtitle}</div>
  </div>
  <div class="verdict">
    <div class="outcome outcome-{outcome_kind}"><span class="badge">{outcome_kind}</span><span>{outcome}</span></div>
    <div class="sub">{cycles}</div>
  </div>
</header>
<div class="chips">{chips}</div>
{note}
<section class="card" id="timeline-card">
  <div class="toolbar">
    <button type="button" id="zoom-out" title="zoom out (-)">−</button>
    <button type="button" id="zoom-in" title="zoom in (+)">+</button>
    <button type="button" id="zoom-reset" title="show everything (0)">reset</button>
    <button type="button" id="zoom-first" title="zoom to the first finding">first finding</button>
    <label><input type="checkbox" id="show-flows" checked> flows</label>
    <span id="range" class="status"></span>
    <span id="drawn" class="status muted"></span>
  </div>
  <div class="legend">
    <span><i class="sw cat-wait"></i>wait (blocked)</span><span><i class="sw cat-hung"></i>hung</span>
    <span><i class="sw cat-tma"></i>TMA</span><span><i class="sw cat-mma"></i>MMA</span>
    <span><i class="sw cat-copy"></i>copy / store</span>
    <span><i class="sw ph0"></i><i class="sw ph1"></i>mbarrier phase parity 0 / 1, line: pending arrivals</span>
    <span><i class="sw flowsw"></i>phase completion → released wait</span>
    <span><i class="dia"></i>finding <i class="dia first"></i>first finding</span>
  </div>
  <div id="timeline"><svg id="axis" aria-label="time axis"></svg><svg id="tl" aria-label="timeline"></svg></div>
  <div class="hint muted">{counts}. Ctrl + wheel (or pinch, + / −) zooms at the pointer; drag or Shift + wheel pans;
    hover a bar, a barrier row or a finding for details; click a finding below to jump to it.</div>
</section>
<section class="card">
  <h2>Explanation</h2>
  <pre id="explanation">{explanation}</pre>
</section>
<section class="card">
  <h2>Findings ({n_findings})</h2>
  {findings}
</section>
<section class="card">
  <h2>Timing</h2>
  {timing}
</section>
<div id="tooltip" role="tooltip" hidden></div>
<script type="application/json" id="timeline-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""

_CSS = """
:root { --fg: #1d2330; --muted: #66707f; --line: #dde2ea; --bg: #f5f7fa; --card: #fff;
  --wait: #f2b63c; --hung: #d64545; --tma: #3b7dd8; --mma: #3c9d5d; --copy: #9a6bc9; --other: #8a94a3;
  --ph0: #e6ebf2; --ph1: #c9d4e3; --marker: #d0312d; }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 20px 40px; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", sans-serif; }
header { display: flex; justify-content: space-between; align-items: flex-start; gap: 24px; flex-wrap: wrap; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 16px; margin: 0 0 10px; }
.sub, .muted { color: var(--muted); }
.sub { font-size: 12.5px; }
.verdict { text-align: right; }
.outcome { display: inline-flex; gap: 10px; align-items: center; font-size: 15px; font-weight: 600; }
.badge { text-transform: uppercase; letter-spacing: .05em; font-size: 12px; color: #fff; padding: 3px 9px;
  border-radius: 4px; background: var(--other); }
.outcome-correct .badge { background: #2e8b57; } .outcome-wrong .badge { background: #c62828; }
.outcome-deadlock .badge { background: #d9822b; } .outcome-fault .badge { background: #7b3fb0; }
.chips { margin: 10px 0 4px; display: flex; gap: 6px; flex-wrap: wrap; }
.chip { font-size: 12px; background: #fff; border: 1px solid var(--line); border-radius: 12px; padding: 1px 9px; }
.chip.ok { color: #2e8b57; }
.notice { background: #fff8e1; border: 1px solid #f0d68a; border-radius: 6px; padding: 6px 10px; margin: 8px 0;
  font-size: 13px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin: 12px 0; }
.toolbar { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; margin-bottom: 6px; }
.toolbar button { font: inherit; min-width: 30px; padding: 2px 9px; border: 1px solid #c3cad5; border-radius: 5px;
  background: #f8f9fb; cursor: pointer; }
.toolbar button:hover { background: #eef1f5; }
.toolbar label { margin-left: 6px; font-size: 13px; }
.status { margin-left: 10px; font-size: 12.5px; font-variant-numeric: tabular-nums; }
.legend { display: flex; gap: 14px; flex-wrap: wrap; font-size: 12px; color: var(--muted); margin: 2px 0 8px; }
.legend span { display: inline-flex; align-items: center; gap: 4px; }
.sw { display: inline-block; width: 14px; height: 10px; border-radius: 2px; }
.sw.flowsw { height: 2px; background: #7d8796; }
.sw.ph0 { background: var(--ph0); } .sw.ph1 { background: var(--ph1); }
.dia { display: inline-block; width: 9px; height: 9px; background: var(--marker); transform: rotate(45deg); margin: 0 3px; }
.dia.first { width: 11px; height: 11px; outline: 2px solid #111; }
#timeline { position: relative; user-select: none; }
#timeline svg { display: block; font-size: 11px; }
#axis { position: sticky; top: 0; z-index: 1; background: var(--card); border-bottom: 1px solid var(--line); }
#tl { cursor: grab; }
#tl.dragging { cursor: grabbing; }
.hint { font-size: 12px; margin-top: 6px; }
.row-bg.cta { fill: #eef2f7; } .row-bg.track { fill: #fff; } .row-bg.counter { fill: #fafbfc; }
.row-line { stroke: #edf0f4; }
.grid { stroke: #e9edf2; }
.label { fill: var(--fg); dominant-baseline: central; }
.label.cta { font-weight: 700; font-size: 12px; }
.label.counter { fill: var(--muted); font-style: italic; }
.tick { fill: var(--fg); text-anchor: middle; font-variant-numeric: tabular-nums; }
.tick.us { fill: var(--muted); font-size: 10px; }
.axis-unit { fill: var(--muted); font-size: 11px; }
.slice { stroke: rgba(0,0,0,.25); stroke-width: .5; }
.slice:hover, .ctr:hover { stroke: #000; stroke-width: 1.5; }
.cat-wait { fill: var(--wait); background: var(--wait); } .cat-hung { fill: url(#hatch); background: var(--hung); }
.cat-tma { fill: var(--tma); background: var(--tma); } .cat-mma { fill: var(--mma); background: var(--mma); }
.cat-copy { fill: var(--copy); background: var(--copy); } .cat-other { fill: var(--other); background: var(--other); }
.slice.merged { stroke: none; }
.slice-label { fill: #fff; font-size: 10px; pointer-events: none; dominant-baseline: central; }
.slice-label.dark { fill: #2b2b2b; }
.ctr.ph0 { fill: var(--ph0); } .ctr.ph1 { fill: var(--ph1); }
.ctr-label { fill: #56606e; font-size: 9.5px; pointer-events: none; dominant-baseline: central; }
.pending { fill: none; stroke: #2b3442; stroke-width: 1.2; pointer-events: none; }
.txline { fill: none; stroke: var(--tma); stroke-width: 1; stroke-dasharray: 3 2; pointer-events: none; }
.flow { stroke: #5d6878; stroke-opacity: .55; stroke-width: 1; }
.flow:hover { stroke-opacity: 1; stroke-width: 2; }
.finding-marker { fill: var(--marker); stroke: #fff; stroke-width: 1.2; cursor: help; }
.finding-marker.first { stroke: #111; stroke-width: 2; }
.finding-marker:hover { fill: #8e0000; }
.first-line { stroke: var(--marker); stroke-width: 1; stroke-dasharray: 4 3; }
pre { margin: 0; white-space: pre-wrap; font: 12.5px/1.5 ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace;
  background: #f8f9fb; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { text-align: left; padding: 3px 10px 3px 0; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.findings { width: 100%; }
.findings thead th { border-bottom: 1px solid var(--line); color: var(--muted); font-weight: 600; }
.findings tr.finding { cursor: pointer; border-bottom: 1px solid #f0f2f5; }
.findings tr.finding:hover { background: #f3f6fa; }
.findings tr.first { background: #fff3f2; }
.findings td:first-child { white-space: nowrap; }
.findings .kind { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.findings .msg { color: #394150; }
.tag { font-size: 10.5px; color: #fff; background: var(--marker); border-radius: 3px; padding: 0 5px; margin-left: 4px; }
.timing { display: flex; gap: 40px; flex-wrap: wrap; align-items: flex-start; }
caption { text-align: left; font-weight: 600; padding-bottom: 4px; white-space: nowrap; }
.kv th { font-weight: normal; color: var(--muted); }
.stalls thead th { color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); }
#tooltip { position: fixed; z-index: 10; max-width: 480px; background: #1f2633; color: #eef1f5; border-radius: 6px;
  padding: 8px 10px; font-size: 12px; line-height: 1.4; box-shadow: 0 4px 14px rgba(0,0,0,.25); pointer-events: none; }
#tooltip .tip-title { font-weight: 700; font-size: 13px; margin-bottom: 3px; }
#tooltip .tip-first { color: #ffcc80; font-weight: 600; }
#tooltip .tip-body { margin-bottom: 5px; }
#tooltip .tip-head { color: #9fb1c8; text-transform: uppercase; font-size: 10px; letter-spacing: .06em; margin-top: 4px; }
#tooltip table { font-size: 12px; }
#tooltip td { padding: 0 10px 0 0; }
#tooltip td:first-child { color: #9fb1c8; white-space: nowrap; }
#tooltip td:last-child { word-break: break-word; }
"""

_JS = r"""
(() => {
"use strict";
const data = JSON.parse(document.getElementById("timeline-data").textContent);

// Layout (pixels).  Rows: a header per CTA, a row per track, a row per mbarrier.
const GUTTER = 150;        // left column with row labels
const PAD_R = 12;
const AXIS_H = 34;
const HEAD_H = 20, TRACK_MIN_H = 20, LANE_H = 13, COUNTER_H = 24;
const MAX_LANES = 4;       // overlapping slices of one track (loads in flight) stack in up to this many lanes
const MERGE_PX = 1;        // slices narrower than this merge with touching neighbours into one bar ...
const BAR_BUDGET = 5000;   // ... or narrower than a few pixels when more slices than this are in view
const MAX_FLOWS = 1500;    // flows drawn per frame; the rest are skipped, and the status line says so
const MIN_SPAN = 20;       // cycles across the view at the deepest zoom
const CATS = new Set(["wait", "hung", "tma", "mma", "copy"]);

const box = document.getElementById("timeline");
const svg = document.getElementById("tl"), axis = document.getElementById("axis");
const tip = document.getElementById("tooltip");
const rangeEl = document.getElementById("range"), drawnEl = document.getElementById("drawn");

const fmt = (c) => Math.round(c).toLocaleString("en-US");
const us = (c) => c / (data.clock_ghz * 1000);
const fmtUs = (c) => { const u = us(c); return u.toFixed(Math.abs(u) < 10 ? 3 : 2); };
const ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};
const esc = (s) => String(s).replace(/[&<>"']/g, (ch) => ESC[ch]);
const key = (cta, track) => cta + "\u0000" + track;
const byNatural = (a, b) => a.localeCompare(b, "en", {numeric: true});

// ---- rows ------------------------------------------------------------------------------
const sliceIdx = new Map();          // (cta, track) -> slice indices
data.slices.forEach((s, i) => {
  const k = key(s.cta, s.track);
  if (!sliceIdx.has(k)) sliceIdx.set(k, []);
  sliceIdx.get(k).push(i);
});
const seriesIdx = new Map();         // (cta, barrier) -> counter point indices, in time order
data.counters.forEach((p, i) => {
  const k = key(p.cta, p.barrier);
  if (!seriesIdx.has(k)) seriesIdx.set(k, []);
  seriesIdx.get(k).push(i);
});
for (const idx of seriesIdx.values()) idx.sort((a, b) => data.counters[a].t - data.counters[b].t || a - b);

// Greedy interval partitioning: each lane holds non-overlapping slices sorted by start.
function packLanes(idx) {
  const lanes = [];
  for (const i of idx) {
    const s = data.slices[i];
    let lane = lanes.find((l) => l.end <= s.t0);
    if (!lane && lanes.length < MAX_LANES) { lane = {items: [], end: -Infinity, maxDur: 0}; lanes.push(lane); }
    if (!lane) lane = lanes.reduce((a, b) => (a.end <= b.end ? a : b));  // too many: overlap in the first free
    lane.items.push(i);
    lane.end = Math.max(lane.end, s.t1);
    lane.maxDur = Math.max(lane.maxDur, s.t1 - s.t0);
  }
  return lanes.length ? lanes : [{items: [], end: 0, maxDur: 0}];
}

const rows = [], trackRow = new Map();
let totalH = 0;
function addRow(row) { row.y = totalH; totalH += row.h; rows.push(row); return row; }
for (const cta of data.ctas) {
  addRow({kind: "cta", label: "CTA " + cta, cta, h: HEAD_H});
  const tracks = [...(data.tracks[cta] || [])];
  for (const s of data.slices) if (s.cta === cta && !tracks.includes(s.track)) tracks.push(s.track);
  for (const track of tracks) {
    const idx = (sliceIdx.get(key(cta, track)) || []).sort((a, b) => data.slices[a].t0 - data.slices[b].t0);
    const lanes = packLanes(idx);
    const row = addRow({kind: "track", label: track, cta, track, lanes, h: Math.max(TRACK_MIN_H, lanes.length * LANE_H + 6)});
    trackRow.set(key(cta, track), row);
  }
  const barriers = [...new Set(data.counters.filter((p) => p.cta === cta).map((p) => p.barrier))].sort(byNatural);
  for (const b of barriers) addRow({kind: "counter", label: b, cta, barrier: b, series: seriesIdx.get(key(cta, b)), h: COUNTER_H});
}

// A finding names a warp ("mma.w1"), a unit ("TMA") or a whole role ("mma"): the role's first warp.
function markerRow(m) {
  return trackRow.get(key(m.cta, m.track))
    || rows.find((r) => r.kind === "track" && r.cta === m.cta && r.track.startsWith(m.track + "."))
    || rows.find((r) => r.kind === "cta" && r.cta === m.cta);
}
const markerRows = data.markers.map(markerRow);
// The first finding is drawn last, on top of any marker at the same spot.
const markerOrder = data.markers.map((m, i) => i).sort((a, b) => (data.markers[a].first ? 1 : 0) - (data.markers[b].first ? 1 : 0));
const firstMarker = data.markers.findIndex((m) => m.first);

// ---- view --------------------------------------------------------------------------------
let maxT = Math.max(1, data.end_cycle);
for (const s of data.slices) if (s.t1 > maxT) maxT = s.t1;
for (const m of data.markers) if (m.t > maxT) maxT = m.t;
const FULL0 = 0, FULL1 = maxT * 1.01;
let v0 = FULL0, v1 = FULL1;
let showFlows = true;
let plotW = 800;             // set by draw(); used to turn pixels into cycles

function setView(a, b) {
  let span = Math.min(Math.max(b - a, MIN_SPAN), FULL1 - FULL0);
  a = Math.min(Math.max(a, FULL0), FULL1 - span);
  v0 = a; v1 = a + span;
  rangeEl.textContent = `cycles ${fmt(v0)} – ${fmt(v1)}  (${fmtUs(v0)} – ${fmtUs(v1)} µs)`;
  rangeEl.dataset.t0 = v0; rangeEl.dataset.t1 = v1;
  scheduleDraw();
}
function zoomAt(t, factor) { setView(t - (t - v0) * factor, t + (v1 - t) * factor); }
function centerOn(t, span) { setView(t - span / 2, t + span / 2); }
const tAtClientX = (cx) => v0 + (cx - svg.getBoundingClientRect().left - GUTTER) / plotW * (v1 - v0);

let pending = false;
function scheduleDraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; draw(); });
}

// ---- drawing -------------------------------------------------------------------------------
// Everything but labels is numbers and fixed class names, so markup strings are safe; text goes
// through esc().  Elements carry an index (data-s slice, data-g merged run, data-c counter point,
// data-f flow, data-m marker) that the hover handler looks up.
let mergedRuns = [];

function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

// First index in the sorted list `items` whose value (via get) is >= x.
function lowerBound(items, x, get) {
  let lo = 0, hi = items.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (get(items[mid]) < x) lo = mid + 1; else hi = mid; }
  return lo;
}

function draw() {
  const width = Math.max(480, box.clientWidth);
  plotW = width - GUTTER - PAD_R;
  const k = plotW / (v1 - v0);
  const X = (t) => GUTTER + (t - v0) * k;
  const clampX = (x) => Math.min(Math.max(x, GUTTER - 4), width + 4);  // keep coordinates small at deep zoom
  const height = Math.max(totalH, 30);
  const out = [];
  out.push(`<defs><clipPath id="plot-clip"><rect x="${GUTTER}" y="0" width="${plotW}" height="${height}"/></clipPath>`,
           `<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">`,
           `<rect width="6" height="6" fill="#d64545"/><rect width="2.5" height="6" fill="#f08a8a"/></pattern>`,
           `<marker id="arrow" viewBox="0 0 6 6" refX="5.5" refY="3" markerWidth="5" markerHeight="5" orient="auto">`,
           `<path d="M0,0L6,3L0,6Z" fill="#5d6878"/></marker></defs>`);
  for (const r of rows) {
    out.push(`<rect class="row-bg ${r.kind}" x="0" y="${r.y}" width="${width}" height="${r.h}"/>`,
             `<line class="row-line" x1="0" x2="${width}" y1="${r.y + r.h - 0.5}" y2="${r.y + r.h - 0.5}"/>`);
  }
  const step = niceStep((v1 - v0) / Math.max(2, plotW / 110));
  const ticks = [];
  for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) ticks.push(t);
  for (const t of ticks) out.push(`<line class="grid" x1="${X(t)}" x2="${X(t)}" y1="0" y2="${height}"/>`);
  out.push(`<g clip-path="url(#plot-clip)">`);
  if (firstMarker >= 0 && markerRows[firstMarker]) {
    const x = X(data.markers[firstMarker].t);
    out.push(`<line class="first-line" x1="${x}" x2="${x}" y1="0" y2="${height}"/>`);
  }

  // Slices: per lane, only those overlapping the view; narrow neighbours merge into one bar.
  // Thousands of SVG elements make every redraw slow, so with many slices in view the merge
  // width grows with their number (up to 4 px).
  let inView = 0;
  for (const r of rows) {
    if (r.kind !== "track") continue;
    for (const lane of r.lanes) {
      const items = lane.items;
      for (let j = lowerBound(items, v0 - lane.maxDur, (i) => data.slices[i].t0); j < items.length && data.slices[items[j]].t0 <= v1; j++) {
        if (data.slices[items[j]].t1 >= v0) inView++;
      }
    }
  }
  const mergePx = inView > BAR_BUDGET ? Math.min(4, 1 + inView / BAR_BUDGET) : MERGE_PX;
  let nSlices = 0;
  mergedRuns = [];
  const emit = (i, x0, x1, y, h) => {
    const s = data.slices[i];
    const cat = CATS.has(s.cat) ? s.cat : "other";
    const w = Math.max(1, x1 - x0);
    out.push(`<rect class="slice cat-${cat}" data-s="${i}" x="${x0}" y="${y}" width="${w}" height="${h}" rx="1.5"/>`);
    nSlices++;
    if (w > 48 && h >= 10) {   // label wide bars with as much of their name as fits
      const vis0 = Math.max(x0, GUTTER), room = Math.min(x1, GUTTER + plotW) - vis0 - 6;
      const n = Math.floor(room / 6);
      if (n >= 4) {
        const text = s.name.length > n ? s.name.slice(0, n - 1) + "…" : s.name;
        const dark = cat === "wait" ? " dark" : "";
        out.push(`<text class="slice-label${dark}" x="${vis0 + 3}" y="${y + h / 2}">${esc(text)}</text>`);
      }
    }
  };
  for (const r of rows) {
    if (r.kind !== "track") continue;
    const laneH = r.lanes.length > 1 ? LANE_H - 2 : r.h - 6;
    r.lanes.forEach((lane, li) => {
      const y = r.y + 3 + li * LANE_H;
      const items = lane.items;
      let run = null;          // narrow slices being merged: {x0, x1, items}
      const flush = () => {
        if (!run) return;
        if (run.items.length === 1) emit(run.items[0], run.x0, run.x1, y, laneH);
        else {
          const cats = {};
          for (const i of run.items) cats[data.slices[i].cat] = (cats[data.slices[i].cat] || 0) + 1;
          const top = Object.keys(cats).sort((a, b) => cats[b] - cats[a])[0];
          // Opacity says how much of the run the slices cover, so merged gaps stay visible as paler bars.
          let busy = 0, t0 = Infinity, t1 = -Infinity;
          for (const i of run.items) { const s = data.slices[i]; busy += s.t1 - s.t0; t0 = Math.min(t0, s.t0); t1 = Math.max(t1, s.t1); }
          const cover = Math.min(1, busy / Math.max(t1 - t0, 1e-9));
          const g = mergedRuns.push({items: run.items, cats, t0, t1, cover}) - 1;
          const opacity = Math.max(0.2, cover).toFixed(2);
          out.push(`<rect class="slice merged cat-${CATS.has(top) ? top : "other"}" data-g="${g}" x="${run.x0}" y="${y}" `
                   + `width="${Math.max(1, run.x1 - run.x0)}" height="${laneH}" fill-opacity="${opacity}"/>`);
          nSlices++;
        }
        run = null;
      };
      for (let j = lowerBound(items, v0 - lane.maxDur, (i) => data.slices[i].t0); j < items.length; j++) {
        const s = data.slices[items[j]];
        if (s.t0 > v1) break;
        if (s.t1 < v0) continue;
        const x0 = clampX(X(s.t0)), x1 = clampX(X(s.t1));
        if (x1 - x0 >= mergePx) { flush(); emit(items[j], x0, x1, y, laneH); continue; }
        if (run && x0 - run.x1 < mergePx) { run.x1 = Math.max(run.x1, x1); run.items.push(items[j]); continue; }
        flush();
        run = {x0, x1, items: [items[j]]};
      }
      flush();
    });
  }

  // Barrier rows: the phase as shaded segments (parity), pending arrivals and tx-count as step lines.
  for (const r of rows) {
    if (r.kind !== "counter") continue;
    const idx = r.series, P = data.counters;
    let maxPending = 1, minTx = 0, maxTx = 0;
    for (const i of idx) { maxPending = Math.max(maxPending, P[i].pending); minTx = Math.min(minTx, P[i].tx); maxTx = Math.max(maxTx, P[i].tx); }
    const top = r.y + 4, bot = r.y + r.h - 4;
    const yPend = (p) => bot - (p.pending / maxPending) * (bot - top);
    const yTx = (p) => bot - ((p.tx - minTx) / (maxTx - minTx)) * (bot - top);
    let j = Math.max(0, lowerBound(idx, v0, (i) => P[i].t) - 1);
    let from = null, pend = "", tx = "";
    for (; j < idx.length; j++) {
      const p = P[idx[j]];
      if (p.t > v1) break;
      const next = j + 1 < idx.length ? P[idx[j + 1]].t : FULL1;
      const x0 = clampX(X(p.t)), x1 = clampX(X(next));
      pend += `${pend ? "L" : "M"}${x0},${yPend(p)}L${x1},${yPend(p)}`;
      if (maxTx > minTx) tx += `${tx ? "L" : "M"}${x0},${yTx(p)}L${x1},${yTx(p)}`;
      if (from === null) from = x0;
      // A segment under a pixel wide folds into the next one, so dense stretches stay covered.
      if (x1 - from < 1 && next <= v1 && j + 1 < idx.length) continue;
      out.push(`<rect class="ctr ph${p.phase & 1}" data-c="${idx[j]}" x="${from}" y="${r.y + 2}" width="${Math.max(1, x1 - from)}" height="${r.h - 4}"/>`);
      if (x1 - from > 46) out.push(`<text class="ctr-label" x="${Math.max(from, GUTTER) + 3}" y="${r.y + r.h / 2}">phase ${p.completed}</text>`);
      from = null;
    }
    if (pend) out.push(`<path class="pending" d="${pend}"/>`);
    if (tx) out.push(`<path class="txline" d="${tx}"/>`);
  }

  // Flows: from the op that completed a phase to each wait it released.  Past MAX_FLOWS in view
  // none are drawn (a subset would look like the only ones; all of them are a grey smear).
  let skipped = 0;
  if (showFlows) {
    const visible = [];
    data.flows.forEach((f, i) => {
      if (Math.min(f.src_t, f.dst_t) > v1 || Math.max(f.src_t, f.dst_t) < v0) return;
      const a = trackRow.get(key(f.cta, f.src_track)), b = trackRow.get(key(f.cta, f.dst_track));
      if (a && b) visible.push([i, f, a, b]);
    });
    if (visible.length > MAX_FLOWS) skipped = visible.length;
    else for (const [i, f, a, b] of visible) {
      out.push(`<line class="flow" data-f="${i}" x1="${clampX(X(f.src_t))}" y1="${a.y + a.h / 2}" x2="${clampX(X(f.dst_t))}" `
               + `y2="${b.y + b.h / 2}" marker-end="url(#arrow)"/>`);
    }
  }

  // Findings as diamonds on their track.
  for (const i of markerOrder) {
    const m = data.markers[i], r = markerRows[i];
    if (!r || m.t < v0 || m.t > v1) continue;
    const x = X(m.t), y = r.y + r.h / 2, s = m.first ? 8 : 6;
    out.push(`<path class="finding-marker${m.first ? " first" : ""}" data-m="${i}" data-kind="${esc(m.kind)}" `
             + `d="M${x},${y - s}L${x + s},${y}L${x},${y + s}L${x - s},${y}Z"/>`);
  }
  out.push(`</g>`);
  for (const r of rows) {
    out.push(`<text class="label ${r.kind}" x="${r.kind === "cta" ? 8 : 18}" y="${r.y + r.h / 2}">${esc(r.label)}</text>`);
  }
  if (!rows.length) out.push(`<text class="label" x="${GUTTER}" y="15">no CTAs in this timeline</text>`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.innerHTML = out.join("");

  // Axis: cycles, and microseconds underneath.
  const ax = [`<text class="axis-unit" x="8" y="13">cycles</text><text class="axis-unit" x="8" y="27">µs</text>`];
  const usDigits = Math.min(4, Math.max(0, Math.ceil(-Math.log10(us(step))) + 1));  // enough to tell ticks apart
  for (const t of ticks) {
    const x = X(t);
    if (x < GUTTER + 10 || x > width - 20) continue;
    ax.push(`<line class="grid" x1="${x}" x2="${x}" y1="${AXIS_H - 5}" y2="${AXIS_H}"/>`,
            `<text class="tick" x="${x}" y="13">${fmt(t)}</text><text class="tick us" x="${x}" y="26">${us(t).toFixed(usDigits)}</text>`);
  }
  axis.setAttribute("width", width);
  axis.setAttribute("height", AXIS_H);
  axis.innerHTML = ax.join("");

  let status = `${nSlices.toLocaleString("en-US")} bars drawn`;
  if (mergedRuns.length) {
    status += `; ${mergedRuns.length.toLocaleString("en-US")} of them merge slices narrower than ${mergePx > 1 ? mergePx.toFixed(1) + " px" : "a pixel"}`
      + " (zoom in to separate them)";
  }
  if (skipped) status += `; ${skipped.toLocaleString("en-US")} flows in view, too many to draw (zoom in)`;
  drawnEl.textContent = status;
  drawnEl.dataset.merged = mergedRuns.length;
}

// ---- tooltip -------------------------------------------------------------------------------
// Built with textContent only: every string from the data stays text.
function val(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en-US") : String(Math.round(v * 100) / 100);
  if (typeof v === "object") { const s = JSON.stringify(v); return s.length > 300 ? s.slice(0, 299) + "…" : s; }
  return String(v);
}
function showTip(ev, title, body, sections, first) {
  tip.replaceChildren();
  const add = (cls, text) => { const d = document.createElement("div"); d.className = cls; d.textContent = text; tip.append(d); };
  add("tip-title", title);
  if (first) add("tip-first", "first finding: the explanation starts here");
  if (body) add("tip-body", body);
  for (const [head, pairs] of sections) {
    if (!pairs.length) continue;
    if (head) add("tip-head", head);
    const table = document.createElement("table");
    for (const [k, v] of pairs) { const tr = table.insertRow(); tr.insertCell().textContent = k; tr.insertCell().textContent = v; }
    tip.append(table);
  }
  tip.hidden = false;
  placeTip(ev);
}
function placeTip(ev) {
  const pad = 14, w = tip.offsetWidth, h = tip.offsetHeight;
  let x = ev.clientX + pad, y = ev.clientY + pad;
  if (x + w > innerWidth - 4) x = ev.clientX - w - pad;
  if (y + h > innerHeight - 4) y = ev.clientY - h - pad;
  tip.style.left = Math.max(4, x) + "px";
  tip.style.top = Math.max(4, y) + "px";
}
function hideTip() { tip.hidden = true; }
const span = (t0, t1) => [["cycles", `${fmt(t0)} – ${fmt(t1)}  (${fmt(t1 - t0)} cycles)`],
                          ["µs", `${fmtUs(t0)} – ${fmtUs(t1)}  (${fmtUs(t1 - t0)} µs)`]];
const entries = (obj) => Object.entries(obj || {}).filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [k, val(v)]);

function tipFor(ev, d) {
  if (d.s !== undefined) {
    const s = data.slices[+d.s];
    showTip(ev, s.name, "", [["", [["where", `CTA ${s.cta} · ${s.track}`], ["kind", s.cat], ...span(s.t0, s.t1)]], ["args", entries(s.args)]]);
  } else if (d.g !== undefined) {
    const g = mergedRuns[+d.g], first = data.slices[g.items[0]];
    const kinds = Object.entries(g.cats).map(([c, n]) => `${n} ${c}`).join(", ");
    showTip(ev, `${g.items.length} slices merged`, "Too narrow to draw one by one at this zoom: zoom in to separate them.",
            [["", [["where", `CTA ${first.cta} · ${first.track}`], ["kinds", kinds], ...span(g.t0, g.t1),
                   ["covered", `${Math.round(g.cover * 100)} % of that span (the bar's opacity)`]]]]);
  } else if (d.c !== undefined) {
    const p = data.counters[+d.c];
    const idx = seriesIdx.get(key(p.cta, p.barrier)), n = idx.indexOf(+d.c);
    const t1 = n + 1 < idx.length ? data.counters[idx[n + 1]].t : data.end_cycle;
    showTip(ev, `mbarrier ${p.barrier}`, "", [["", [["where", `CTA ${p.cta}`], ["phase", `${p.completed} (parity ${p.phase})`],
            ["phases completed", val(p.completed)], ["pending arrivals", val(p.pending)], ["tx-count", `${val(p.tx)} bytes`],
            ...span(p.t, t1)]]]);
  } else if (d.f !== undefined) {
    const f = data.flows[+d.f];
    showTip(ev, f.name, "The op that completed the phase → the wait it released.",
            [["", [["from", `${f.src_track} at cycle ${fmt(f.src_t)}`], ["to", `${f.dst_track} at cycle ${fmt(f.dst_t)}`],
                   ["where", `CTA ${f.cta}`]]]]);
  } else if (d.m !== undefined) {
    const m = data.markers[+d.m];
    showTip(ev, m.kind, m.message, [["", [["where", `CTA ${m.cta} · ${m.track}`], ["cycle", `${fmt(m.t)}  (${fmtUs(m.t)} µs)`]]],
            ["evidence", entries(m.evidence)]], m.first);
  } else {
    hideTip();
  }
}

// ---- interaction ---------------------------------------------------------------------------
let drag = null;
svg.addEventListener("mousemove", (ev) => { if (!drag) tipFor(ev, ev.target.dataset || {}); });
svg.addEventListener("mouseleave", hideTip);
svg.addEventListener("mousedown", (ev) => {
  if (ev.button !== 0) return;
  ev.preventDefault();            // no text selection while dragging
  drag = {x: ev.clientX, v0, v1};
  svg.classList.add("dragging");
  hideTip();
});
window.addEventListener("mousemove", (ev) => {
  if (!drag) return;
  const dt = (ev.clientX - drag.x) / plotW * (drag.v1 - drag.v0);
  setView(drag.v0 - dt, drag.v1 - dt);
});
window.addEventListener("mouseup", () => { drag = null; svg.classList.remove("dragging"); });
// Ctrl + wheel (and trackpad pinch, which Chrome reports as Ctrl + wheel) zooms at the pointer;
// Shift + wheel or a horizontal swipe pans; a plain wheel keeps scrolling the page.
box.addEventListener("wheel", (ev) => {
  const scale = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
  if (ev.ctrlKey || ev.metaKey) {
    ev.preventDefault();
    zoomAt(Math.min(Math.max(tAtClientX(ev.clientX), v0), v1), Math.exp(ev.deltaY * scale * 0.002));
  } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
    ev.preventDefault();
    const dx = (ev.shiftKey ? ev.deltaY || ev.deltaX : ev.deltaX) * scale;
    setView(v0 + dx / plotW * (v1 - v0), v1 + dx / plotW * (v1 - v0));
  }
}, {passive: false});

const mid = () => (v0 + v1) / 2;
const firstSpan = () => Math.max(MIN_SPAN * 10, (FULL1 - FULL0) / 12);
function toFirst() { if (firstMarker >= 0) centerOn(data.markers[firstMarker].t, firstSpan()); }
document.getElementById("zoom-in").addEventListener("click", () => zoomAt(mid(), 0.5));
document.getElementById("zoom-out").addEventListener("click", () => zoomAt(mid(), 2));
document.getElementById("zoom-reset").addEventListener("click", () => setView(FULL0, FULL1));
const firstBtn = document.getElementById("zoom-first");
if (firstMarker < 0) firstBtn.disabled = true;
firstBtn.addEventListener("click", toFirst);
document.getElementById("show-flows").addEventListener("change", (ev) => { showFlows = ev.target.checked; scheduleDraw(); });
document.addEventListener("keydown", (ev) => {
  if (ev.target instanceof HTMLInputElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const pan = (v1 - v0) * 0.2;
  const act = {"+": () => zoomAt(mid(), 0.5), "=": () => zoomAt(mid(), 0.5), "-": () => zoomAt(mid(), 2),
               "0": () => setView(FULL0, FULL1), "ArrowLeft": () => setView(v0 - pan, v1 - pan),
               "ArrowRight": () => setView(v0 + pan, v1 + pan)}[ev.key];
  if (act) { ev.preventDefault(); act(); }
});
// A click on a finding in the table centres the timeline on its cycle.
for (const tr of document.querySelectorAll("tr.finding[data-cycle]")) {
  tr.addEventListener("click", () => {
    centerOn(+tr.dataset.cycle, Math.min(v1 - v0, firstSpan()));
    document.getElementById("timeline-card").scrollIntoView({behavior: "smooth", block: "start"});
  });
}
window.addEventListener("resize", scheduleDraw);

setView(FULL0, FULL1);
draw();               // first frame now, not on the next animation frame
})();
"""
