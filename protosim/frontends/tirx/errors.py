"""The error type of the TIRx frontend (and the divergence the interpreter may split on)."""

from __future__ import annotations


class TirxError(ValueError):
    """A TIRx program (or its launch) the frontend cannot turn into a schedule.

    The message names where (``file.py:LINE``, or the argument), what (the op or
    construct) and the fix; ``cli.main`` prints it as one line and exits 2."""


class Divergent(TirxError):
    """A value an op needs once differs between the threads executing it.  ``values`` (one
    entry per thread of the CTA) and ``mask`` (the executing threads) let the interpreter
    run the op once per group of threads that agree, where the groups are whole warps
    (two MMA warps of one program, each with its own barrier); otherwise it is the error."""

    def __init__(self, message: str, values=None, mask=None):
        super().__init__(message)
        self.values = values
        self.mask = mask
