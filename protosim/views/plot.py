"""A timeline as a PNG: a compact Gantt chart of one CTA, readable in a README or
an issue comment.  Rows are the CTA's warps and units (overlapping transfers get
extra lanes), bars are coloured by what they are, barrier phase completions are
ticks on a row per barrier, and the first finding is a red line with its kind.

Needs matplotlib (``pip install 'protosim[plot]'``); nothing else in protosim does.
"""

from __future__ import annotations

import io

from pathlib import Path

from protosim.timeline import Timeline
from protosim.views.trace import _lanes

COLORS = {"wait": "#e8a33d", "hung": "#c0392b", "tma": "#3c7dc4", "mma": "#4caf50", "copy": "#9e9e9e"}
LABELS = {"wait": "blocked wait", "hung": "never returned", "tma": "TMA transfer (issue -> land)",
          "mma": "MMA", "copy": "thread copy / store"}


class PlotError(RuntimeError):
    pass


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotError("protosim plot needs matplotlib: pip install 'protosim[plot]' (or pip install matplotlib)") from exc
    return plt


def default_cta(tl: Timeline) -> int:
    """The CTA of the first finding, else the first CTA shown."""
    first = [m for m in tl.markers if m.first] or tl.markers
    return first[0].cta if first else tl.ctas[0]


def plot(tl: Timeline, out: Path, cta: int | None = None, width: float = 11.0) -> Path:
    plt = _pyplot()
    cta = default_cta(tl) if cta is None else cta
    if cta not in tl.ctas:
        raise PlotError(f"CTA {cta} is not in the timeline (shown: {tl.ctas[:12]}{' ...' if len(tl.ctas) > 12 else ''})")
    rows: list[tuple[str, list]] = []
    per_track: dict[str, list] = {}
    for s in tl.slices:
        if s.cta == cta:
            per_track.setdefault(s.track, []).append(s)
    for track in tl.tracks[cta]:
        slices = per_track.get(track, [])
        lanes: dict[int, list] = {}
        for lane, s in _lanes(slices):
            lanes.setdefault(lane, []).append(s)
        for lane in sorted(lanes) or [0]:
            rows.append((track if lane == 0 else f"{track} #{lane + 1}", lanes.get(lane, [])))
    barriers = sorted({c.barrier for c in tl.counters if c.cta == cta})
    n = len(rows) + len(barriers)
    fig, ax = plt.subplots(figsize=(width, 0.9 + 0.32 * n))
    seen = set()
    min_width = tl.end_cycle / 2000  # a zero-length slice still shows as a sliver
    for y, (_, slices) in enumerate(rows):
        spans: dict[str, list] = {}
        for s in slices:
            spans.setdefault(s.cat, []).append((s.t0, max(s.t1 - s.t0, min_width)))
        for cat, xs in spans.items():  # one artist per row and kind: thousands of slices stay fast
            label = LABELS.get(cat) if cat not in seen else None
            seen.add(cat)
            ax.broken_barh(xs, (y - 0.38, 0.76), facecolors=COLORS.get(cat, "#777"), edgecolor="white", linewidth=0.4,
                           label=label)
    for i, b in enumerate(barriers):
        y = len(rows) + i
        points = [c for c in tl.counters if c.cta == cta and c.barrier == b]
        completions = [c.t for prev, c in zip(points, points[1:], strict=False) if c.completed > prev.completed]
        ax.vlines(completions, y - 0.35, y + 0.35, color="#555", linewidth=0.8)
    row_of = {name: y for y, (name, _) in enumerate(rows)}
    marks = [m for m in tl.markers if m.cta == cta and m.track in row_of]
    if marks:
        ax.scatter([m.t for m in marks], [row_of[m.track] for m in marks], marker="v", s=22, color="#c0392b",
                   zorder=3, label="finding")
    first = next((m for m in marks if m.first), None)
    if first is not None:
        ax.axvline(first.t, color="#c0392b", linewidth=1.2, zorder=2)
        right = first.t > 0.6 * tl.end_cycle  # keep the label inside the axes
        ax.annotate(f"first: {first.kind} @ {first.t:,.0f}", (first.t, -0.5), xytext=(-4 if right else 4, -3),
                    textcoords="offset points", color="#c0392b", fontsize=8, va="top", ha="right" if right else "left",
                    bbox={"boxstyle": "square,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}, zorder=4)
    labels = [r[0] for r in rows] + [f"{b} phases" for b in barriers]
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0, max(tl.end_cycle, 1.0) * 1.01)
    ax.set_xlabel(f"cycles ({tl.arch}, {tl.clock_ghz:g} GHz; {tl.us(tl.end_cycle):.2f} µs in all)", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.25)
    ax.set_title(f"{tl.name} - CTA {cta} - {tl.outcome}", fontsize=10, loc="left")
    if seen or marks:
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = io.BytesIO()  # render first, then write: matplotlib does not report a failed close (a full disk)
    fig.savefig(png, format="png", dpi=130)
    plt.close(fig)
    Path(out).write_bytes(png.getvalue())
    return out
