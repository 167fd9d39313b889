"""A wgmma's two clocks (docs/semantics.md "wgmma"): the tensor core is held for each
instruction's issue-to-issue interval, the issuing CTA's chain for that plus the descriptor
building between instructions.  One CTA completes at the end of its chain; CTAs sharing an SM
fill one another's gaps (results/silicon/microbench/2026-12-02_h200_tma_wgmma.md)."""

from __future__ import annotations

import dataclasses

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import Machine, replay
from protosim.ir import Access, BufferDecl, CtaProgram, RoleDecl, Schedule, Wgmma, WgmmaCommit, WgmmaWait


def _schedule(ctas: int, n: int = 128, warps: int = 4, blocks: int = 1) -> Schedule:
    """``ctas`` CTAs, each ``blocks`` times: one 128 x n x 64 wgmma (8 instructions), commit, wait."""
    ops = []
    for k in range(blocks):
        ops += [Wgmma(m=128, n=n, k_elems=64, reads=(Access("A", 0, f"A{k}"), Access("B", 0, f"B{k}")), k=k,
                      descriptors="uniform"),
                WgmmaCommit(k=k), WgmmaWait(n=0, k=k)]
    return Schedule("chain", "h200", (), (BufferDecl("A", "smem", bytes=16384), BufferDecl("B", "smem", bytes=128 * n)),
                    (RoleDecl("mma", warps),), tuple(CtaProgram(i, (tuple(ops),)) for i in range(ctas)))


def _issued_and_done(r) -> tuple[float, list[float]]:
    """The first wgmma's issue cycle and the cycles the wgmma waits were satisfied, in order."""
    issued = min(e[0] for e in r.log.events if e[1] == "issue" and e[5] == "wgmma")
    return issued, sorted({e[0] for e in r.log.events if e[1] == "observe"})


def _one_sm():
    """One SM; co-resident CTAs' local work not stretched (``issue_share_per_warp`` 0): these tests
    time the tensor core's sharing alone (the issue share has its own, tests/test_coresident.py)."""
    return dataclasses.replace(load_profile("h200"), sm_count=1, issue_share_per_warp=0.0)


def _rates(n: int):
    a = load_profile("h200")
    unit = max(a.mma_issue_min, a.mma_issue_base + a.mma_issue_per_n * n)
    return a, unit, unit + a.wgmma_issue_overhead


@pytest.mark.parametrize("n", [16, 64, 128])
def test_one_cta_completes_at_the_end_of_its_chain(n):
    a, _, chain = _rates(n)
    t0, done = _issued_and_done(replay(_schedule(1, n), _one_sm()))
    assert done[0] - t0 == pytest.approx(8 * chain + a.mma_tail_cycles)


@pytest.mark.parametrize("n", [16, 128])
def test_ctas_sharing_an_sm_overlap_the_issue_overhead(n):
    """Three CTAs on one SM, each one block: the tensor core works 3 x 8 unit intervals back to
    back; the last CTA's block completes when the unit is done with it, not after three chains.
    The first is slowed too: the unit interleaves the blocks in flight (tests/test_wgmma_share.py)."""
    a, unit, chain = _rates(n)
    arch = _one_sm()
    s = _schedule(3, n)
    assert Machine(s, arch).occupancy() >= 3
    t0, done = _issued_and_done(replay(s, arch))
    assert done[0] - t0 > 8 * chain + a.mma_tail_cycles
    assert done[-1] - t0 == pytest.approx(max(3 * 8 * unit, 8 * chain) + a.mma_tail_cycles)
    assert done[-1] - t0 < 3 * 8 * chain  # what charging the overhead to the tensor core gave


def test_the_tensor_core_busy_time_is_the_unit_intervals_only():
    a, unit, _ = _rates(128)
    r = replay(_schedule(3, 128), _one_sm())
    assert r.stats.mma_busy == pytest.approx(3 * 8 * unit)


def test_two_warpgroups_of_one_cta_share_one_chain():
    """An 8-warp role (Triton's num_warps = 8) issues half the instructions from each warpgroup;
    the CTA's chain holds them in sequence, as one warpgroup issuing all eight would."""
    a, _, chain = _rates(128)
    t0, done = _issued_and_done(replay(_schedule(1, 128, warps=8), _one_sm()))
    assert done[-1] - t0 == pytest.approx(8 * chain + a.mma_tail_cycles)
