"""Sizes and Hypothesis settings of the fuzz suites (see conftest.py)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed

CI_EXAMPLES = {"scenario_toml": 60, "schedule_json": 60, "ttgir": 40, "cli": 40, "crosscheck": 6, "tirx": 40}
SLOW_EXAMPLES = {"scenario_toml": 400, "schedule_json": 400, "ttgir": 300, "cli": 400, "crosscheck": 80, "tirx": 400}


def examples(path: str, slow: bool) -> int:
    env = os.environ.get("PROTOSIM_FUZZ_EXAMPLES")
    if env:
        return int(env)
    return (SLOW_EXAMPLES if slow else CI_EXAMPLES)[path]


def fuzz(path: str, slow: bool = False):
    """Decorator: Hypothesis settings for the suite of one input path."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    if os.environ.get("PROTOSIM_FUZZ_SHRINK") == "1":
        phases.append(Phase.shrink)
    pinned = os.environ.get("PROTOSIM_FUZZ_SEED")
    s = settings(max_examples=examples(path, slow), deadline=None, database=None, phases=phases, print_blob=True,
                 derandomize=not slow and pinned is None and os.environ.get("PROTOSIM_FUZZ_RANDOM") != "1",
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                        HealthCheck.large_base_example])

    def wrap(f):
        f = s(f)
        if pinned is not None:
            f = hypothesis_seed(int(pinned))(f)
        return f

    return wrap
