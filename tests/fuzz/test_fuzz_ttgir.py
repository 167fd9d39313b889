"""Fuzz the ttgir input path: Triton TTGIR with its launch and metadata JSON (tests/fixtures/triton, mutated).

Every example must keep the exit-status contract (tests/fuzz/contract.py).  CI size by
default; `pytest -m slow` runs the large variant.  See tests/fuzz/conftest.py for sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from .contract import assert_contract
from .sizes import fuzz
from .strategies import ttgir_cases


@fuzz("ttgir")
@given(case=ttgir_cases())
def test_ttgir(case):
    assert_contract(case)


@pytest.mark.slow
@fuzz("ttgir", slow=True)
@given(case=ttgir_cases())
def test_ttgir_large(case):
    assert_contract(case)
