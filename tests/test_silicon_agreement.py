"""Silicon as a regression suite: every recorded H200 launch, replayed through the
current simulator (no GPU), must lie in the outcome set the simulator predicts for
its config -- or match it exactly when the config has explicit delays.

The records are results/silicon/*.jsonl (kernels.runner.gemm's launch records, append-only
evidence).  A disagreement the simulator cannot yet explain away is listed in
``KNOWN_DISAGREEMENTS`` with its diagnosis; such an entry must keep disagreeing,
so fixing the model forces the entry out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protosim.crosscheck import compare_many, render

SILICON = Path(__file__).resolve().parent.parent / "results" / "silicon"
RUNS = 8  # the same as `protosim crosscheck report`'s default: the predicted sets are the report's


def _records() -> list[dict]:
    out = []
    for path in sorted(SILICON.glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def _matches(entry: dict, case) -> bool:
    return case.step in entry["steps"] and case.config.bug_knobs == entry["knobs"] and case.delayed == entry["delayed"]


def _known(case) -> str | None:
    """The diagnosis of a disagreement we have not fixed, or None."""
    return next((e["why"] for e in KNOWN_DISAGREEMENTS if _matches(e, case)), None)


KNOWN_DISAGREEMENTS: list[dict] = []
"""None today.  The last one (ws, phases reset per tile, odd K_TILES, the full chip and a 20 us
producer nanosleep: silicon's first timed-out CTA was one the replays did not hang) was resolved
when the replays began to hang 100 of the 132 CTAs at that site, silicon's nine among them
(docs/crosscheck.md, 'Known disagreements')."""


@pytest.fixture(scope="module")
def reports():
    records = _records()
    if not records:
        pytest.skip(f"no silicon records under {SILICON}")
    return compare_many(records, runs=RUNS, workers=2, stop_when_covered=True)


def test_every_recorded_launch_is_predicted(reports):
    unexplained = [r for r in reports if not r.agree and _known(r.prediction.case) is None]
    assert not unexplained, "silicon outcomes outside the simulator's predicted sets:\n" + render(unexplained)


def test_known_disagreements_still_disagree(reports):
    """Every entry must still explain a disagreement; one that explains none has been
    fixed (or never matched) and must go."""
    used = {KNOWN_DISAGREEMENTS.index(e) for r in reports if not r.agree for e in KNOWN_DISAGREEMENTS
            if _matches(e, r.prediction.case)}
    stale = [e["why"][:60] for i, e in enumerate(KNOWN_DISAGREEMENTS) if i not in used]
    assert not stale, f"these KNOWN_DISAGREEMENTS entries explain no disagreement any more: {stale}"


def test_the_records_cover_every_outcome_kind(reports):
    """The suite means something only if silicon showed every class the simulator predicts."""
    kinds = {o.kind for r in reports for o, _ in r.launches}
    assert kinds == {"correct", "wrong", "deadlock", "fault"}


@pytest.mark.slow
def test_the_full_chip_cluster_records_are_predicted():
    """results/silicon/cluster/: the first ws_cluster runs (2048^2 and 4096^3 on 132 CTAs, each
    cluster knob with and without delays).  Kept apart from the top-level records because
    their full-chip replays take minutes (2.5 on 2 cores); the default run judges the 240
    drawn cluster configs of seed 41 instead."""
    records = [json.loads(line) for path in sorted((SILICON / "cluster").glob("*.jsonl"))
               for line in path.read_text().splitlines() if line.strip()]
    reports = compare_many(records, runs=RUNS, workers=2, stop_when_covered=True)
    assert reports and all(r.agree for r in reports), render([r for r in reports if not r.agree])


@pytest.mark.slow
def test_the_timing_campaign_records_are_predicted():
    """results/silicon/timing/: issue 16's kernel-only timing runs (correct configs up to 4096^3,
    every launch correct).  Kept apart from the top-level records because ~20 of their configs
    replay ~600k ops each (the campaign's report took 17 min on 2 cores)."""
    records = [json.loads(line) for path in sorted((SILICON / "timing").glob("*.jsonl"))
               for line in path.read_text().splitlines() if line.strip()]
    reports = compare_many(records, runs=RUNS, workers=2, stop_when_covered=True)
    assert reports and all(r.agree for r in reports), render([r for r in reports if not r.agree])
