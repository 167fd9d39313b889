"""protosim.clock: a replay's cycles become time at the tensor clock inside the chip's wgmma spans,
at clock_ghz (plus the measured switch cost) in tensor-idle gaps past the hold, and at clock_ghz
throughout where no wgmma ran (results/silicon/microbench/2026-12-03_h200_sm_clock_wgmma.md)."""

from __future__ import annotations

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.clock import elapsed_us, switch_ns
from protosim.config import GemmConfig
from protosim.engine.result import merged_spans
from protosim.verdict import judge

H200 = load_profile("h200")


def test_no_span_is_the_plain_clock():
    assert elapsed_us(H200, 19_800, []) == pytest.approx(19_800 / H200.clock_ghz / 1e3)


def test_one_span_runs_at_the_tensor_clock_after_half_a_switch():
    ns = 1e3 * elapsed_us(H200, 10_000, [(0.0, 10_000.0)])
    assert ns == pytest.approx(10_000 / H200.tensor_clock_ghz + 0.5 * switch_ns(H200, float("inf")))


def test_a_gap_within_the_hold_stays_at_the_tensor_clock_and_a_longer_one_pays_a_switch():
    hold = H200.tensor_clock_hold_cycles
    short, long_ = hold - 1, hold + 1
    t_short = elapsed_us(H200, 2_000 + short, [(0.0, 1_000.0), (1_000.0 + short, 2_000.0 + short)])
    t_long = elapsed_us(H200, 2_000 + long_, [(0.0, 1_000.0), (1_000.0 + long_, 2_000.0 + long_)])
    lead = 0.5 * switch_ns(H200, float("inf"))
    assert 1e3 * t_short == pytest.approx(lead + (2_000 + short) / H200.tensor_clock_ghz)
    assert 1e3 * t_long == pytest.approx(lead + 2_000 / H200.tensor_clock_ghz + long_ / H200.clock_ghz
                                         + switch_ns(H200, long_))
    assert t_long > t_short  # two switches cost more than the faster clock saves


def test_switch_cost_is_flat_past_the_table_and_linear_inside():
    table = H200.tensor_clock_switch_ns
    assert switch_ns(H200, 0) == table[0][1] and switch_ns(H200, 10 ** 9) == table[-1][1]
    (x0, y0), (x1, y1) = table[0], table[1]
    assert switch_ns(H200, (x0 + x1) / 2) == pytest.approx((y0 + y1) / 2)


def test_spans_merge_in_order():
    assert merged_spans([[5.0, 9.0], [0.0, 2.0], [1.0, 3.0], [9.0, 12.0]]) == [(0.0, 3.0), (5.0, 12.0)]


def test_a_wgmma_kernel_is_timed_by_the_rule():
    v, r = judge(BUILDERS["hgemm_v5"](GemmConfig(M=128, N=128, K=1024, arch="h200")))
    spans = r.stats.tensor_spans
    assert spans and spans == sorted(spans) and all(a < b for a, b in spans)
    assert v.timing.microseconds == pytest.approx(elapsed_us(H200, r.end_cycle, spans))
    assert v.timing.microseconds > r.end_cycle / H200.clock_ghz / 1e3  # slower than at 1.98 GHz throughout
