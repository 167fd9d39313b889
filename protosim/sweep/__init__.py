"""Sweeps: many configs judged in parallel, on local processes or on a Ray cluster.

One runner serves every campaign loop -- ``protosim sweep``, ``protosim crosscheck plan`` and
``crosscheck report`` (``protosim.crosscheck.predict_many`` / ``compare_many``) -- and any
script::

    from protosim.sweep import run_sweep

    results = run_sweep(items, work_fn, workers=None, ray=None, progress=None,
                        on_result=None, chunk_size=None) -> list

* ``items``: a sequence of picklable work items (small: a config, not a built schedule);
  ``work_fn``: a module-level function ``item -> result`` (picklable by reference).
* ``workers``: local processes (default ``os.cpu_count()``; ``1`` runs in this process, the
  baseline); ``ray``: ``"HOST:PORT"``, ``"auto"`` or ``"local"`` runs the items as Ray tasks
  instead (needs ``pip install 'protosim[sweep]'``).
* ``progress(done, total)``, ``on_result(index, result)``: called in this process as results
  arrive, in completion order (``on_result`` is how ``--out`` writes rows as they finish).
* Returns the results in item order, whatever the engine: same items, same list.
* Ctrl-C raises :class:`SweepInterrupted` (a ``KeyboardInterrupt``) whose ``done`` maps item
  index -> result for what finished; :class:`SweepError`: Ray missing or unreachable.

For benchmarks, :func:`throughput` times the runner on a fixed batch of single-CTA verdicts::

    throughput(workers: int, n: int = 200, ray: str | None = None) -> dict
    # {"workers": 2, "n": 200, "seconds": 0.41, "per_s": 488.0, "engine": "processes"}

What ``protosim sweep`` sweeps (scenario grids, Hypothesis draws) and its table are in
:mod:`protosim.sweep.grid`; docs/sweep.md is the user's guide.
"""

from __future__ import annotations

import time
from typing import Any

from protosim.sweep.runner import SweepError, SweepInterrupted, run_sweep

__all__ = ["SweepError", "SweepInterrupted", "run_sweep", "throughput"]

THROUGHPUT_SCENARIO = "v2_k_loop.toml"
"""The built-in scenario :func:`throughput` judges: one CTA, a K loop, a few ms per verdict."""


def throughput(workers: int, n: int = 200, ray: str | None = None) -> dict[str, Any]:
    """Judge ``n`` copies of a single-CTA scenario (nominal replay only) through
    :func:`run_sweep` on ``workers`` processes (or ``ray``) and time it, pool start included:
    what a sweep of ``n`` small configs costs end to end.  Compare ``per_s`` across worker
    counts for the scaling (issue 15's target: 2 workers within 10% of twice 1 worker)."""
    from protosim.scenarios import builtin_dir
    from protosim.sweep.grid import judge_item, scenario_items

    path = builtin_dir() / THROUGHPUT_SCENARIO
    item = scenario_items(path, [], runs=1, seed=None, max_stall=None, max_ops=2_000_000)[0]
    start = time.perf_counter()
    rows = run_sweep([item] * n, judge_item, workers=workers, ray=ray)
    seconds = time.perf_counter() - start
    assert all(r["outcome"] == rows[0]["outcome"] for r in rows)  # one config: one verdict, whichever worker
    return {"workers": workers, "n": n, "seconds": round(seconds, 3), "per_s": round(n / seconds, 1),
            "engine": "ray" if ray else ("inline" if workers == 1 else "processes")}
