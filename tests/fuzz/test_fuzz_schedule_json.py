"""Fuzz the schedule_json input path: schedule JSON (protosim schedule output, mutated deeply).

Every example must keep the exit-status contract (tests/fuzz/contract.py).  CI size by
default; `pytest -m slow` runs the large variant.  See tests/fuzz/conftest.py for sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from .contract import assert_contract
from .sizes import fuzz
from .strategies import schedule_json_cases


@fuzz("schedule_json")
@given(case=schedule_json_cases())
def test_schedule_json(case):
    assert_contract(case)


@pytest.mark.slow
@fuzz("schedule_json", slow=True)
@given(case=schedule_json_cases())
def test_schedule_json_large(case):
    assert_contract(case)
