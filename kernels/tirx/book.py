"""The book's steps after the seed (``../shared/docs/book/gemm_steps_7_9.md``), one module per
step, found by name: ``v7`` warp specialization (ws_sm100.py), ``v8`` the 2-CTA cluster
(cluster_sm100.py), ``v9`` two MMA consumers (consumers_sm100.py).  Each is a builder
``f(GemmConfig) -> PrimFunc`` for sm_100a, compile-only like the seed's v1-v6."""

from __future__ import annotations

import importlib
from collections.abc import Callable

BOOK_STEPS: dict[str, tuple[str, str]] = {
    "v7": ("kernels.tirx.ws_sm100", "ws_step7"),
    "v8": ("kernels.tirx.cluster_sm100", "cluster_step8"),
    "v9": ("kernels.tirx.consumers_sm100", "consumers_step9"),
}
"""Step -> (module, builder): imported on first use, so one step's module never costs another's import."""


def book_step(step: str) -> Callable:
    """The builder of book step ``step`` (``KeyError`` naming the steps there are)."""
    if step not in BOOK_STEPS:
        raise KeyError(f"book step {step!r}; the book's steps here are {', '.join(BOOK_STEPS)}")
    module, name = BOOK_STEPS[step]
    return getattr(importlib.import_module(module), name)
