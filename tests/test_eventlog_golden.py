"""Every replay of the golden corpus writes the event log it wrote before the engine was
split by unit (tests/eventlog_corpus.py; the file names the commit it was recorded at).

Each corpus entry is one test: a failure names the schedule and the replays that changed,
and whether the schedule itself changed (a builder or frontend edit) or only its log (an
engine edit)."""

from __future__ import annotations

import json

import pytest

from tests.eventlog_corpus import GOLDEN, corpus, differences, record_one

GOLDEN_CASES = json.loads(GOLDEN.read_text())["cases"]
ENTRIES = dict(corpus())
SLOW = {"scenario:v6_full_chip_h200"}  # 37 s alone: `make slow` replays it


def test_the_corpus_is_the_recorded_one():
    assert sorted(ENTRIES) == sorted(GOLDEN_CASES)


def _sample(position: int):
    """The nominal replay and one perturbed replay, rotating over the plan from entry to
    entry, so that every perturbation kind runs on some entries: 2 replays of 9 per entry
    keep the default run to minutes on a slow 2-core CI machine (all 9: ``make slow``)."""
    return lambda n: [0] if n == 1 else [0, 1 + position % (n - 1)]


@pytest.mark.parametrize("position,name", [
    pytest.param(i, n, marks=pytest.mark.slow) if n in SLOW else (i, n) for i, n in enumerate(ENTRIES)])
def test_event_log_unchanged(position, name):
    assert differences({name: GOLDEN_CASES[name]}, {name: record_one(ENTRIES[name], _sample(position))}) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ENTRIES))
def test_every_replay_of_the_event_log_unchanged(name):
    assert differences({name: GOLDEN_CASES[name]}, {name: record_one(ENTRIES[name])}) == []
