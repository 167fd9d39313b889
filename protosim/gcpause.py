"""Pause Python's cyclic garbage collector around allocation-heavy phases.

A full-chip replay allocates millions of small, acyclic objects (events, tuples,
dicts).  Each time the young generations overflow, the collector also walks the
old generation, whose size grows with the log: collection cost becomes quadratic
in the run length (a 4096^3 replay took 36 s with it on and 12 s with it off).
Reference counting still frees everything that is not cyclic; the collector runs
once, normally, when the phase ends.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
