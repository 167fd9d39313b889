"""The timeline a replay is drawn from, its Chrome / Perfetto trace, and its PNG.

The trace is checked against the Trace Event Format's rules that both viewers
rely on (required fields per phase, non-negative durations, slices of one thread
properly nested, every flow start matched by a finish and both bound to an
enclosing slice, counters numeric); the timeline's barrier counters against the
engine's own final barrier state.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from protosim.explain import primary
from protosim.scenarios import load_scenario
from protosim.timeline import MMA, TMA, build_timeline
from protosim.verdict import judge
from protosim.views.trace import to_trace_events

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"


def replay(name: str, max_ctas: int = 8):
    verdict, result = judge(load_scenario(SCENARIOS / name).build())
    return verdict, result, build_timeline(result, verdict.findings, verdict.outcome.summary(), max_ctas=max_ctas,
                                           first=primary(verdict.findings))


REQUIRED = {"X": {"name", "ts", "dur", "pid", "tid"}, "C": {"name", "ts", "pid", "args"}, "i": {"name", "ts", "pid", "tid", "s"},
            "s": {"id", "ts", "pid", "tid"}, "f": {"id", "ts", "pid", "tid", "bp"}, "M": {"name", "pid", "args"}}


def check_trace(trace: dict) -> None:
    """Assert the Trace Event Format rules the viewers depend on."""
    assert isinstance(trace["traceEvents"], list)
    events = trace["traceEvents"]
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = defaultdict(list)
    for e in events:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - e.keys()
        assert not missing, (missing, e)
        if e["ph"] in ("X", "i", "s", "f"):
            assert (e["pid"], e["tid"]) in named, f"unnamed thread {e['pid'], e['tid']}"
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0
            slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
    for key, spans in slices.items():  # nested or disjoint, never partly overlapping
        stack: list[float] = []
        for t0, t1 in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= t0 + 1e-9:
                stack.pop()
            assert not stack or t1 <= stack[-1] + 1e-9, f"slices overlap on {key}"
            stack.append(t1)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == finishes.keys()
    for fid, s in starts.items():
        f = finishes[fid]
        assert s["ts"] <= f["ts"]
        for end in (s, f):  # bound to a slice that encloses it on its own thread
            assert any(t0 <= end["ts"] <= t1 for t0, t1 in slices[(end["pid"], end["tid"])]), end
    json.loads(json.dumps(trace))  # plain JSON all the way down


@pytest.mark.parametrize("name", ["v2_no_phase_flip.toml", "v5_ring.toml", "v6_reset_phase_odd_k.toml",
                                  "v4_tma_four_issuers.toml", "v4_hopper_port.toml"])
def test_trace_follows_the_trace_event_format(name):
    verdict, _, tl = replay(name)
    trace = to_trace_events(tl)
    check_trace(trace)
    instants = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert len(instants) == len(tl.markers) >= len([f for f in verdict.findings if f.cta in tl.ctas])
    if verdict.findings:
        assert sum(e["name"].startswith("FIRST ") for e in instants) == 1


def test_counters_end_where_the_engine_left_each_barrier():
    _, result, tl = replay("v6_reset_phase_odd_k.toml")
    last = {}
    for c in tl.counters:
        last[(c.cta, c.barrier)] = c
    assert last
    for (cta, barrier), c in last.items():
        engine = result.barriers[(cta, barrier)]
        assert (c.completed, c.pending, c.tx) == (engine.completed, engine.pending, engine.tx), barrier


def test_every_released_wait_has_a_flow_from_the_op_that_completed_its_phase():
    _, result, tl = replay("v5_ring.toml")
    blocked = [e for e in result.log if e.kind == "wait" and e.data["blocked"] and e.cta in tl.ctas]
    assert blocked and len(tl.flows) == len(blocked)
    for f in tl.flows:
        assert f.src_t <= f.dst_t
        assert f.src_track in (TMA, MMA) or f.src_track.startswith("mma.")
    # on the tcgen05 port an MMA's commit completes mma_bar; the TMA engine completes tma_bar
    assert {f.src_track for f in tl.flows if f.name.startswith("mma_bar")} == {MMA}
    assert {f.src_track for f in tl.flows if f.name.startswith("tma_bar")} == {TMA}


def test_first_finding_is_marked_with_its_evidence():
    verdict, _, tl = replay("v2_no_phase_flip.toml")
    first = [m for m in tl.markers if m.first]
    assert len(first) == 1 and first[0].kind == primary(verdict.findings).kind == "early_return"
    assert first[0].evidence["barrier"] == "mma_bar"


def test_large_launches_keep_max_ctas_and_say_so():
    _, result, tl = replay("v5_ring.toml", max_ctas=2)
    assert len(result.schedule.ctas) > 2
    assert tl.ctas == [0, 1] and {s.cta for s in tl.slices} <= {0, 1}
    assert "showing 2 of" in tl.note
    assert to_trace_events(tl)["otherData"]["note"] == tl.note


def test_ctas_with_findings_are_kept_first():
    verdict, _, tl = replay("v6_reset_phase_odd_k.toml", max_ctas=1)
    assert tl.ctas == [primary(verdict.findings).cta]


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib", reason="protosim plot needs matplotlib (extra 'plot')")
    from protosim.views.plot import plot

    _, _, tl = replay("v2_no_phase_flip.toml")
    out = plot(tl, tmp_path / "v2.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


@pytest.mark.parametrize("command, suffix", [("trace", ".json"), ("plot", ".png")])
def test_cli_writes_the_view(tmp_path, command, suffix):
    if command == "plot":
        pytest.importorskip("matplotlib", reason="protosim plot needs matplotlib (extra 'plot')")
    out = tmp_path / f"v2{suffix}"
    res = subprocess.run([sys.executable, "-m", "protosim.cli", command, str(SCENARIOS / "v2_no_phase_flip.toml"), "-o", str(out)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 1, res.stderr  # written, and the nominal replay has findings
    assert out.exists() and out.stat().st_size > 1000 and str(out) in res.stdout
    if command == "trace":
        check_trace(json.loads(out.read_text()))


@pytest.mark.parametrize("extra, message", [(["--max-ctas", "0"], "--max-ctas 0"), (["--cta", "7"], "--cta 7: the schedule has CTAs 0..0")])
def test_cli_view_errors_are_one_line(tmp_path, extra, message):
    pytest.importorskip("matplotlib", reason="protosim plot needs matplotlib (extra 'plot')")
    res = subprocess.run([sys.executable, "-m", "protosim.cli", "plot", str(SCENARIOS / "v2_no_phase_flip.toml"), "-o",
                          str(tmp_path / "x.png"), *extra], capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1
