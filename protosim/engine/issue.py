"""Co-resident CTAs sharing their SM sub-partitions' instruction issue.

A warp's local work -- the instructions between the ops others can see, which the interpreter
pays as one stretch of cycles (:attr:`~protosim.engine.state.WarpState.debt`) -- issues on its
sub-partition's warp scheduler.  Every cost in the profile was measured with one CTA on the SM,
its own warps included; what one CTA alone does not see is the warps of *other* CTAs on the same
SM issuing on the same scheduler at the same time.  Each makes the stretch
``issue_share_per_warp`` longer: ``kernels/microbench/issue_share.cu`` ran one warp's dependent
integer stream at 29.0 cycles an iteration alone and 42.0 / 54.0 / 66.0 with 1 / 2 / 3 other
CTAs' warps running the same stream on its sub-partition (+0.43 of 29 each), while other CTAs'
warps suspended in ``try_wait`` cost it nothing -- a blocked warp is not counted.  The part of a
stretch that issues nothing (:attr:`~protosim.engine.state.WarpState.idle`: a sleep, an injected
stall, the rest of an own arrive's round trip) is not stretched, and a stretch that is all of that
does not count as working (one that mixes both counts for its whole length).

The share is read when a stretch starts (the warps working at that moment) and kept for the
whole stretch: stretches are short (tens to a few hundred cycles) next to the waits between them.
The wgmma chain is not a warp's local work (the tensor-core unit times it).  Results and the
trial that adopted this rule: results/silicon/microbench/2026-12-04_h200_cta_drift.md part 6,
docs/semantics.md "Co-resident CTAs share their sub-partitions' issue".
"""

from __future__ import annotations


def stretched(cycles: float, others: int, per_warp: float) -> float:
    """``cycles`` of a warp's local work with ``others`` warps of other CTAs working on its
    sub-partition as it starts."""
    return cycles * (1.0 + per_warp * others) if others else cycles


def subpartition(warp_in_cta: int, subpartitions: int) -> int:
    """The warp scheduler a CTA's warp issues on (warp slots go round the schedulers)."""
    return warp_in_cta % subpartitions
