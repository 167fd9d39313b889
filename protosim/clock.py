"""The time a replay's cycles take: the chip's clock follows its tensor cores.

The replay counts SM cycles (clock64's).  On the H200 the chip does not run every cycle at
``clock_ghz``: while any SM's tensor core works on wgmma blocks it runs at
``tensor_clock_ghz`` (1.81 of 1.98 GHz), and a gap in that work longer than
``tensor_clock_hold_cycles`` runs at ``clock_ghz`` again but pays ``tensor_clock_switch_ns`` of
wall time beyond its cycles (the switch up and the switch back down count no cycle).
Measured in results/silicon/microbench/2026-12-03_h200_sm_clock_wgmma.md; the constants are
in the arch profile.

The rule, over the replay's tensor spans (:attr:`protosim.engine.result.UnitStats.tensor_spans`):

* a span runs at the tensor clock;
* a gap between spans of ``g`` cycles runs at the tensor clock if ``g <= hold``, else at
  ``clock_ghz`` plus ``switch_ns(g)``;
* before the first span the chip runs at ``clock_ghz`` (a kernel starts from the state the
  runner's spin left it in) and the first span pays half a switch (the switch down alone);
  after the last span the tail is a gap with no switch back down: half a switch if longer than
  the hold.  The halves are inferred (the measured cost is of the pair), not measured;
* a replay with no span runs at ``clock_ghz`` throughout, as before.
"""

from __future__ import annotations

from protosim.arch import ArchProfile


def switch_ns(arch: ArchProfile, gap_cycles: float) -> float:
    """``tensor_clock_switch_ns`` at ``gap_cycles``: piecewise linear, flat past its ends."""
    table = arch.tensor_clock_switch_ns
    if gap_cycles <= table[0][0]:
        return float(table[0][1])
    for (x0, y0), (x1, y1) in zip(table, table[1:]):
        if gap_cycles <= x1:
            return y0 + (y1 - y0) * (gap_cycles - x0) / (x1 - x0)
    return float(table[-1][1])


def _gap_ns(arch: ArchProfile, cycles: float, switches: float) -> float:
    """A tensor-idle gap of ``cycles`` between spans (``switches`` 1) or at the end (0.5)."""
    if cycles <= arch.tensor_clock_hold_cycles:
        return cycles / arch.tensor_clock_ghz
    return cycles / arch.clock_ghz + switches * switch_ns(arch, cycles)


def elapsed_us(arch: ArchProfile, end_cycle: float, tensor_spans: list[tuple[float, float]]) -> float:
    """Microseconds from cycle 0 to ``end_cycle`` under the rule above."""
    if not tensor_spans:
        return arch.cycles_to_us(end_cycle)
    first = tensor_spans[0][0]
    ns = first / arch.clock_ghz + 0.5 * switch_ns(arch, float("inf"))
    previous_end = first
    for start, end in tensor_spans:
        if start > previous_end:
            ns += _gap_ns(arch, start - previous_end, 1.0)
        ns += (end - start) / arch.tensor_clock_ghz
        previous_end = end
    tail = max(0.0, end_cycle - previous_end)
    ns += _gap_ns(arch, tail, 0.5)
    return ns / 1e3
