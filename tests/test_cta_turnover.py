"""An SM's slot takes its next CTA ``cta_turnover_cycles`` after the last one exited (docs/semantics.md
"CTA turnover"), against the H200's grids of one-word CTAs
(results/silicon/microbench/2026-12-01_h200_launch_cost.md, "CTA turnover")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import replay
from protosim.ir import BufferDecl, CtaProgram, GlobalStore, RoleDecl, Schedule

H200 = load_profile("h200")
RECORD = (Path(__file__).resolve().parent.parent / "results" / "silicon" / "microbench"
          / "2026-12-01_h200_d342ab4_launch_waves.jsonl")


def one_word_ctas(grid: int, smem: int) -> Schedule:
    """``store_one``: 128 threads, thread 0 stores a word; ``smem`` bytes of shared memory per CTA
    (the runner's dynamic shared memory, less the 1 KiB the model reserves per CTA)."""
    store = GlobalStore(bytes=4, store_bytes=4)
    return Schedule("store_one", "h200", (), (BufferDecl("S", "smem", bytes=smem - 1024, parts=1),),
                    (RoleDecl("w", 1), RoleDecl("idle", 3)), tuple(CtaProgram(i, ((store,), ())) for i in range(grid)))


def kernel_us(s: Schedule) -> float:
    r = replay(s)
    assert r.trap is None
    return H200.cycles_to_us(r.end_cycle) + H200.launch_fixed_us


def _rows() -> dict[tuple[int, int], float]:
    rows = [json.loads(line) for line in RECORD.read_text().splitlines()]
    return {(r["ctas_per_sm"], r["waves"]): r["kernel_ms"]["median"] * 1e3 for r in rows}


@pytest.mark.parametrize("per_sm, smem", [(1, 196_608), (2, 98_304)])
def test_each_wave_costs_what_the_h200_measured(per_sm, smem):
    """The time per wave from 8 to 64 waves of the slots, within 10%; every grid within 20%
    (one wave: the model waits for the store to land, +0.4-0.5 us)."""
    measured = _rows()
    model = {w: kernel_us(one_word_ctas(132 * per_sm * w, smem)) for w in (1, 8, 64)}
    slope = (model[64] - model[8]) / 56
    assert slope == pytest.approx((measured[(per_sm, 64)] - measured[(per_sm, 8)]) / 56, rel=0.10)
    for w, us in model.items():
        assert us == pytest.approx(measured[(per_sm, w)], rel=0.20)


def test_a_slot_waits_for_its_last_cta_to_leave():
    one_wave = replay(one_word_ctas(132, 196_608)).end_cycle
    two_waves = replay(one_word_ctas(264, 196_608)).end_cycle
    # the second wave's CTAs start cta_turnover_cycles after the first wave's exit (its store issue)
    assert two_waves - one_wave == pytest.approx(H200.cta_turnover_cycles + H200.global_store_issue_cycles)
