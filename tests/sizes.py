"""How much the property tests explore: a default run (``make test``, CI) and ``make slow``.

The default run must finish on CI's loaded 2-core machine, where Python runs 2-7x slower
than on a workstation; ``make slow`` (``PROTOSIM_SLOW=1``) runs every test at the sizes
the suites were written with.  The fuzz suites keep their own sizes (tests/fuzz/sizes.py).
"""

from __future__ import annotations

import os

SLOW = os.environ.get("PROTOSIM_SLOW") == "1"


def examples(default: int, slow: int) -> int:
    """Hypothesis ``max_examples`` for the default run, or for ``make slow``."""
    return slow if SLOW else default
