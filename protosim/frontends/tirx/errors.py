"""The one error type of the TIRx frontend."""

from __future__ import annotations


class TirxError(ValueError):
    """A TIRx program (or its launch) the frontend cannot turn into a schedule.

    The message names where (``file.py:LINE``, or the argument), what (the op or
    construct) and the fix; ``cli.main`` prints it as one line and exits 2."""
