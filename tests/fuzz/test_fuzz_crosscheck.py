"""Fuzz the crosscheck input path: crosscheck report on JSON-lines launch records (real silicon records, mutated).

Every example must keep the exit-status contract (tests/fuzz/contract.py).  CI size by
default; `pytest -m slow` runs the large variant.  See tests/fuzz/conftest.py for sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from .contract import assert_contract
from .sizes import fuzz
from .strategies import crosscheck_cases


@fuzz("crosscheck")
@given(case=crosscheck_cases())
def test_crosscheck(case):
    assert_contract(case)


@pytest.mark.slow
@fuzz("crosscheck", slow=True)
@given(case=crosscheck_cases())
def test_crosscheck_large(case):
    assert_contract(case)
