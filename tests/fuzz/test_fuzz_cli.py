"""Fuzz the cli input path: command-line flags of every subcommand, bad input and output paths.

Every example must keep the exit-status contract (tests/fuzz/contract.py).  CI size by
default; `pytest -m slow` runs the large variant.  See tests/fuzz/conftest.py for sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from .contract import assert_contract
from .sizes import fuzz
from .strategies import cli_cases


@fuzz("cli")
@given(case=cli_cases())
def test_cli(case):
    assert_contract(case)


@pytest.mark.slow
@fuzz("cli", slow=True)
@given(case=cli_cases())
def test_cli_large(case):
    assert_contract(case)
