"""Fuzz the scenario_toml input path: scenario TOML files (scenarios/*.toml mutated, and from scratch).

Every example must keep the exit-status contract (tests/fuzz/contract.py).  CI size by
default; `pytest -m slow` runs the large variant.  See tests/fuzz/conftest.py for sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from .contract import assert_contract
from .sizes import fuzz
from .strategies import scenario_toml_cases


@fuzz("scenario_toml")
@given(case=scenario_toml_cases())
def test_scenario_toml(case):
    assert_contract(case)


@pytest.mark.slow
@fuzz("scenario_toml", slow=True)
@given(case=scenario_toml_cases())
def test_scenario_toml_large(case):
    assert_contract(case)
