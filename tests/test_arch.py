"""Architecture profiles: every constant sourced, guesses marked, tables sane."""

from __future__ import annotations

import pytest

from protosim.arch import ArchProfile, available, interpolate, load_profile


@pytest.mark.parametrize("name", available())
def test_every_field_has_a_source(name):
    p = load_profile(name)
    fields = [f for f in ArchProfile.__dataclass_fields__ if f not in ("name", "target", "description", "constants")]
    for f in fields:
        c = p.constants[f]
        assert c.source.strip(), f
        if "no measurement" in c.source or "not found" in c.source:
            assert c.guess, f"{name}.{f} says it has no source but is not marked a guess"


def test_both_archs_exist_with_their_mma():
    assert {"h200", "b200"} <= set(available())
    assert load_profile("h200").mma_kind == "wgmma" and not load_profile("h200").has_tmem
    assert load_profile("b200").mma_kind == "tcgen05" and load_profile("b200").tmem_columns == 512


def test_mma_rates_match_the_datasheet_arithmetic():
    h = load_profile("h200")
    occ, insts = h.mma_cycles(64, 128, 16)
    assert insts == 1 and occ == 65  # measured issue-to-issue for m64n128k16
    # 2*64*128*16 FLOP per 65 cycles ~ 4033 FLOP/clk/SM, the dense fp16 peak of 4096
    assert 2 * 64 * 128 * 16 / occ == pytest.approx(4096, rel=0.02)


def test_latency_tables_interpolate_through_measurements_and_grow():
    h = load_profile("h200")
    for x, y in h.tma_l2_latency:
        assert interpolate(h.tma_l2_latency, x) == pytest.approx(y)
    xs = [1024 * k for k in range(1, 65)]
    ys = [interpolate(h.tma_dram_latency, x) for x in xs]
    assert ys == sorted(ys)
    assert all(interpolate(h.tma_dram_latency, x) > interpolate(h.tma_l2_latency, x) for x in xs)
