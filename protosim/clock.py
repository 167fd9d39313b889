"""The time a replay's cycles take: the chip's clock follows its tensor cores.

The replay counts SM cycles (clock64's).  On the H200 the chip does not run every cycle at
``clock_ghz``: while any SM's tensor core works on wgmma blocks it runs at the tensor clock
(~1.8 of 1.98 GHz), and a gap in that work longer than ``tensor_clock_hold_cycles`` runs at
``clock_ghz`` again but pays ``tensor_clock_switch_ns`` of wall time beyond its cycles (the
switch up and the switch back down count no cycle).  Measured in
results/silicon/microbench/2026-12-03_h200_sm_clock_wgmma.md; the constants are in the arch
profile.

The tensor clock itself falls as the whole chip's GEMM work grows: a k-loop on a few SMs runs at
``tensor_clock_ghz`` (1.797), the busiest grids at 1.68-1.76, about
``tensor_clock_ghz_per_tflops`` lower for every TFLOP/s the chip's wgmmas run at (a fit over 88
k-loop clocks, results/silicon/microbench/2026-12-04_h200_cta_drift.md part 8).  The FLOP rate is
a proxy, not the cause -- a warpgroup spinning on wgmma alone holds 1.81 GHz on all 132 SMs -- so
the rule belongs to GEMM-like work, whose operand traffic grows with it.  The rate is the
replay's: its wgmma FLOPs over its cycles at the clock it sets, solved for the clock
(:func:`loaded_tensor_clock_ghz`).

The rule, over the replay's tensor spans (:attr:`protosim.engine.result.UnitStats.tensor_spans`):

* a span runs at the loaded tensor clock;
* a gap between spans of ``g`` cycles runs at the tensor clock if ``g <= hold``, else at
  ``clock_ghz`` plus ``switch_ns(g)``;
* before the first span the chip runs at ``clock_ghz`` (a kernel starts from the state the
  runner's spin left it in) and the first span pays half a switch (the switch down alone);
  after the last span the tail is a gap with no switch back down: half a switch if longer than
  the hold.  The halves are inferred (the measured cost is of the pair), not measured;
* a replay with no span runs at ``clock_ghz`` throughout, as before.
"""

from __future__ import annotations

from protosim.arch import ArchProfile, flat_ends


def switch_ns(arch: ArchProfile, gap_cycles: float) -> float:
    """``tensor_clock_switch_ns`` at ``gap_cycles``: piecewise linear, flat past its ends."""
    return flat_ends(arch.tensor_clock_switch_ns, gap_cycles)


def loaded_tensor_clock_ghz(arch: ArchProfile, end_cycle: float, tensor_flops: float) -> float:
    """The tensor clock of a replay that ran ``tensor_flops`` of wgmma work in ``end_cycle``
    cycles: ``f = tensor_clock_ghz - per_tflops * R`` where the rate R (TFLOP/s) is
    ``tensor_flops * f / end_cycle / 1e3`` -- solved for ``f``."""
    if end_cycle <= 0 or tensor_flops <= 0:
        return arch.tensor_clock_ghz
    return arch.tensor_clock_ghz / (1.0 + arch.tensor_clock_ghz_per_tflops * tensor_flops / end_cycle / 1e3)


def _gap_ns(arch: ArchProfile, tensor_ghz: float, cycles: float, switches: float) -> float:
    """A tensor-idle gap of ``cycles`` between spans (``switches`` 1) or at the end (0.5)."""
    if cycles <= arch.tensor_clock_hold_cycles:
        return cycles / tensor_ghz
    return cycles / arch.clock_ghz + switches * switch_ns(arch, cycles)


def elapsed_us(arch: ArchProfile, end_cycle: float, tensor_spans: list[tuple[float, float]],
               tensor_flops: float = 0.0) -> float:
    """Microseconds from cycle 0 to ``end_cycle`` under the rule above (``tensor_flops``: the
    replay's wgmma work, :attr:`protosim.engine.result.UnitStats.tensor_flops`)."""
    if not tensor_spans:
        return arch.cycles_to_us(end_cycle)
    tensor_ghz = loaded_tensor_clock_ghz(arch, end_cycle, tensor_flops)
    first = tensor_spans[0][0]
    ns = first / arch.clock_ghz + 0.5 * switch_ns(arch, float("inf"))
    previous_end = first
    for start, end in tensor_spans:
        if start > previous_end:
            ns += _gap_ns(arch, tensor_ghz, start - previous_end, 1.0)
        ns += (end - start) / tensor_ghz
        previous_end = end
    tail = max(0.0, end_cycle - previous_end)
    ns += _gap_ns(arch, tensor_ghz, tail, 0.5)
    return ns / 1e3
