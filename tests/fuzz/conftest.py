"""Sizes and settings of the fuzz suites.

CI runs every ``test_fuzz_*`` suite at a modest size (``CI_EXAMPLES`` per input path,
the whole package in about two minutes on two cores when the contract holds);
``pytest -m slow`` (``make slow``) runs the ``*_large`` variants at ``SLOW_EXAMPLES``.
``PROTOSIM_FUZZ_EXAMPLES`` overrides both.  The default run is derandomized -- the same
inputs on every run, so ``make test`` and CI are reproducible -- and finding *new* inputs is
the job of ``make fuzz`` (``PROTOSIM_FUZZ_RANDOM=1``: each run draws new ones), ``make slow``
and ``make census``; ``PROTOSIM_FUZZ_SEED`` pins a random run.  Failing examples are not shrunk unless
``PROTOSIM_FUZZ_SHRINK=1``: a hang costs the whole wall-clock limit per shrink step,
and the failure report already prints a reproducer with the list of mutations.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: protosim's input fuzzer (tests/fuzz): the exit-status contract on every input path")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/fuzz/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.fuzz)
