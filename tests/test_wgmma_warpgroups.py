"""wgmma is ``.sync.aligned`` over a warpgroup (PTX ISA, wgmma.mma_async): in a role of eight
warps -- Triton's ``num_warps = 8`` -- each warpgroup issues its own wgmma of its share of the
tile and waits for its own (docs/semantics.md "wgmma")."""

from __future__ import annotations

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import replay
from protosim.ir import CtaProgram, RoleDecl, Schedule, Sleep, Wgmma, WgmmaCommit, WgmmaWait

H200 = load_profile("h200")
MMA = Wgmma(m=128, n=128, k_elems=64)


def program(warps: int, ops) -> Schedule:
    return Schedule("wg", "h200", (), (), (RoleDecl("w", warps),), (CtaProgram(0, (tuple(ops),)),))


def issues(result):
    return [e for e in result.log.of_kind("issue") if e.data["what"] == "wgmma"]


def test_eight_warps_are_two_warpgroups_each_with_half_the_tile():
    one = replay(program(4, [MMA, WgmmaCommit(), WgmmaWait(n=0)]), H200)
    two = replay(program(8, [MMA, WgmmaCommit(), WgmmaWait(n=0)]), H200)
    assert [e.data["threads"] for e in issues(one)] == [128]
    assert sorted(e.data["threads"] for e in issues(two)) == [128, 128]
    # the tensor core does the same work in two halves, each with its own issue overhead
    assert two.stats.mma_busy == pytest.approx(one.stats.mma_busy)


def test_a_late_warpgroup_does_not_hold_the_other():
    """Warps 4-7 sleep before the wgmma: warps 0-3 issue theirs at once and finish first."""
    late = 3000
    ops = [Sleep(cycles=late, warp=w) for w in range(4, 8)] + [MMA, WgmmaCommit(), WgmmaWait(n=0)]
    r = replay(program(8, ops), H200)
    first, second = sorted(issues(r), key=lambda e: e.t)
    assert first.t < 100 and second.t >= late
    assert r.stats.stall["w"].get("wgmma_issue", 0.0) == pytest.approx(0.0)  # nobody waited at the rendezvous


def test_the_warps_of_a_group_share_each_step_of_the_group_rules():
    """ThreadGroups' memo: a warp taking the step another warp of its CTA just took from the
    same value gets the same result object; another step, or the same step from another value,
    is computed (exact: each result is the pure rule's)."""
    from protosim.engine.units.groups import ThreadGroups
    from protosim.ptx.groups import AsyncGroups

    memo: dict = {}
    w0, w1, other = ThreadGroups(memo), ThreadGroups(memo), ThreadGroups()
    for g in (w0, w1, other):
        g.issue(1)
    assert w1.groups is w0.groups and w0.groups == AsyncGroups().issue(1) == other.groups
    w0.issue(2)
    w1.issue(3)  # another argument: its own result
    assert w0.groups == AsyncGroups().issue(1).issue(2) and w1.groups == AsyncGroups().issue(1).issue(3)
    w0.commit()
    w1.commit()  # the same step from another value: computed, not w0's
    assert w1.groups == AsyncGroups().issue(1).issue(3).commit() != w0.groups
    assert not w0.satisfied(0, False) and w0.satisfied(1, False)
    w0.complete(1, "done")
    w0.complete(2, "done")
    assert w0.satisfied(0, False) and not w1.satisfied(0, False)
