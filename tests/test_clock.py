"""protosim.clock: a replay's cycles become time at the tensor clock inside the chip's wgmma spans,
at clock_ghz (plus the measured switch cost) in tensor-idle gaps past the hold, and at clock_ghz
throughout where no wgmma ran (results/silicon/microbench/2026-12-03_h200_sm_clock_wgmma.md); the
tensor clock falls with the chip's wgmma FLOP rate (2026-12-04_h200_cta_drift.md part 8)."""

from __future__ import annotations

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.clock import elapsed_us, loaded_tensor_clock_ghz, switch_ns
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
    assert r.stats.tensor_flops == 2 * 128 * 128 * 1024  # every wgmma counted once, whole tile
    assert v.timing.microseconds == pytest.approx(elapsed_us(H200, r.end_cycle, spans, r.stats.tensor_flops))
    assert v.timing.microseconds > r.end_cycle / H200.clock_ghz / 1e3  # slower than at 1.98 GHz throughout


def test_two_warpgroups_count_the_tile_once():
    # Triton at num_warps 8: each wgmma of the 128 x 128 tile is two warpgroups' halves
    from pathlib import Path

    from protosim.engine.machine import replay
    from protosim.frontends.ttgir import read

    fixture = Path(__file__).parent / "fixtures/triton/corpus/triton-3.6.0/mm_ptr_128x128x64_s3_w8.sm90.ttgir"
    schedule, _ = read(fixture)
    assert [r.warps for r in schedule.roles] == [8]
    ops = [op for cta in schedule.ctas for role in cta.roles for op in role if type(op).__name__ == "Wgmma"]
    assert replay(schedule).stats.tensor_flops == sum(2 * op.m * op.n * op.k_elems for op in ops) > 0


def test_the_loaded_clock_is_the_fixed_point_of_its_rule():
    cycles, flops = 100_000.0, 4e11
    f = loaded_tensor_clock_ghz(H200, cycles, flops)
    rate_tflops = flops / (cycles / f) / 1e3  # FLOP per ns -> TFLOP/s
    assert f == pytest.approx(H200.tensor_clock_ghz - H200.tensor_clock_ghz_per_tflops * rate_tflops)
    assert loaded_tensor_clock_ghz(H200, cycles, 0.0) == H200.tensor_clock_ghz
    assert loaded_tensor_clock_ghz(H200, cycles, 2 * flops) < f < H200.tensor_clock_ghz


def test_a_loaded_replay_takes_longer_than_an_idle_chip_would():
    spans = [(0.0, 50_000.0)]
    light = elapsed_us(H200, 50_000, spans, 0.0)
    heavy = elapsed_us(H200, 50_000, spans, 5e11)
    ratio = H200.tensor_clock_ghz / loaded_tensor_clock_ghz(H200, 50_000, 5e11)
    lead = 0.5 * switch_ns(H200, float("inf")) / 1e3
    assert (heavy - lead) == pytest.approx((light - lead) * ratio)
