"""protosim's own input fuzzer (issue 11).

Hypothesis draws inputs on every path the CLI reads -- scenario TOML, schedule JSON,
Triton TTGIR with its launch / metadata JSON, command-line flags, crosscheck JSON-lines
records -- runs ``protosim`` on each and checks the exit-status contract
(:mod:`tests.fuzz.contract`), not merely that nothing crashed.

* :mod:`tests.fuzz.strategies` -- one strategy per input path, mutating the real
  inputs (``scenarios/*.toml``, schedules printed by ``protosim schedule``, the Triton
  fixtures, the silicon records) and generating some from scratch;
* :mod:`tests.fuzz.oracles` -- which inputs are nonsense that must be refused with
  status 2 (the rest may be judged or refused: 0, 1 or 2);
* :mod:`tests.fuzz.contract` -- runs one input (a forked ``main(argv)`` by default,
  a real subprocess for a sample) under a wall-clock and memory limit and returns
  the contract violations;
* ``test_fuzz_*.py`` -- the suites (CI size by default, ``-m slow`` large);
* :mod:`tests.fuzz.census` -- ``python -m tests.fuzz.census``: N inputs per path, a
  table of statuses and violations.

Environment: ``PROTOSIM_FUZZ_EXAMPLES`` (examples per suite; defaults in sizes.py: 12-60 in CI, 80-400 slow),
``PROTOSIM_FUZZ_TIMEOUT`` (seconds per example, default 180), ``PROTOSIM_FUZZ_MODE``
(``fork`` | ``subprocess`` | ``inproc``), ``PROTOSIM_FUZZ_SUBPROCESS_PCT`` (share of
examples run as a real subprocess, default 10), ``PROTOSIM_FUZZ_SEED`` (fixed
Hypothesis seed), ``PROTOSIM_FUZZ_SHRINK=1`` (shrink failing examples).
"""
