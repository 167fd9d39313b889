"""Every built-in scenario against the outcome its file declares (SimPy's examples/.out idea).

The expectations in scenarios/*.toml were written from the bug's mechanism (each
file says why in a comment); this test holds the simulator to them.
"""

from __future__ import annotations

import pytest

from protosim.report import run_scenario
from protosim.scenarios import builtin_dir, load_scenario

FILES = sorted(builtin_dir().glob("*.toml"))


def test_there_are_scenarios_for_every_seed_step_and_bug_knob():
    text = "\n".join(f.read_text() for f in FILES)
    for step in range(1, 7):
        assert f'builder = "hgemm_v{step}"' in text
    for knob in ("skip_mma_phase_flip", "reset_phase_per_tile", 'tma_issuer = "each_warp"', "expect_tx_delta = -",
                 "expect_tx_delta = 1", "wait_parity_flip", "skip_store_wait", "producer_delay_ns", "lag_ns"):
        assert knob in text, knob


SLOW = {"v6_full_chip_h200": "one 132-CTA replay, 127 s on the slow 2-core VM",
        "v6_persistent": "its adaptive exploration runs to the 400-replay cap, 232 s on the slow 2-core VM"}
"""Scenarios whose whole exploration is left to ``make slow`` (and ``make demo``); the default
run still checks their nominal replay (test_slow_scenarios_nominal_replay)."""


@pytest.mark.parametrize("path", [pytest.param(f, marks=pytest.mark.slow) if f.stem in SLOW else f for f in FILES],
                         ids=[f.stem for f in FILES])
def test_scenario_agrees_with_its_expectation(path):
    scenario = load_scenario(path)
    assert scenario.expect.declared, f"{path.name} declares no [expect]"
    report = run_scenario(scenario, budget_s=3600)  # the whole exploration, however slow the machine
    assert report.problems == []


@pytest.mark.parametrize("name", sorted(n for n in SLOW if n != "v6_full_chip_h200"))
def test_slow_scenarios_nominal_replay(name):
    """The nominal replay of a scenario whose exploration is slow gives the outcome its [expect] names."""
    scenario = load_scenario(builtin_dir() / f"{name}.toml")
    report = run_scenario(scenario, runs=1)  # nominal only
    assert scenario.expect.nominal and report.verdict.outcome.kind == scenario.expect.nominal
