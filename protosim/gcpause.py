"""Pause Python's cyclic garbage collector around allocation-heavy phases.

A full-chip replay allocates millions of small, acyclic objects (events, tuples,
dicts).  Each time the young generations overflow, the collector also walks the
old generation, whose size grows with the log: collection cost becomes quadratic
in the run length (a 4096^3 replay took 36 s with it on and 12 s with it off).
Reference counting still frees everything that is not cyclic.

When the phase ends, what it allocated and kept (a replay's log) would all sit in the
youngest generation, and the first allocation after re-enabling would walk every one
of those objects (~1.3 s after a 148-CTA replay at K=1024).  So the pause ends by
moving them straight to the oldest generation (``gc.freeze`` then ``gc.unfreeze``:
two list splices).  Nothing is exempted from collection: cyclic garbage is still found
by the next full collection, which CPython runs only once the old generation has grown
by a quarter since the last one.
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
            gc.freeze()
            gc.unfreeze()
            gc.enable()
