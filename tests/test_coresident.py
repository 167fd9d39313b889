"""Co-resident CTAs: two rules from the H200's microbenchmarks (docs/semantics.md "Co-resident
CTAs"): reads of a tile another SM is fetching at that moment share its lines in the L2
(kernels/microbench/l2_stagger.cu), and other CTAs' working warps stretch a warp's local work on
its sub-partition (kernels/microbench/issue_share.cu)."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import hand_schedule
from protosim.arch import load_profile
from protosim.engine.issue import stretched
from protosim.engine.machine import replay
from protosim.engine.resources import MemorySystem
from protosim.ir import Arrive, CtaProgram, Fence, MbarInit, RoleDecl, Schedule, Sleep, Wait

H200 = load_profile("h200")
TILE = 32768
T0 = 1e6
"""The reads under test start here, long after the warming reads are done."""


# -- the L2 merge window -------------------------------------------------------------------------
def _warm(mem: MemorySystem, key: str) -> None:
    """Bring ``key`` into L2 long before the reads under test (a hit's path is what is measured)."""
    mem.read(0.0, key, TILE)


def test_two_sms_asking_at_once_get_the_lines_fetched_once():
    alone, shared = MemorySystem(H200), MemorySystem(H200)
    _warm(alone, "A[0]"), _warm(alone, "A[1]"), _warm(shared, "A[0]")
    _, a0 = alone.read(T0, "A[0]", TILE)
    _, a1 = alone.read(T0, "A[1]", TILE)  # a distinct tile queues behind the first
    _, s0 = shared.read(T0, "A[0]", TILE)
    _, s1 = shared.read(T0, "A[0]", TILE)  # the same tile at the same cycle rides along
    assert s0 == pytest.approx(a0)
    assert a1 - T0 == pytest.approx(2 * (a0 - T0))
    assert s1 == pytest.approx(s0)  # done with the first read, not a pipe-time later
    assert shared.l2_pipe.busy - TILE / H200.l2_bytes_per_clk == pytest.approx(
        (alone.l2_pipe.busy - 2 * TILE / H200.l2_bytes_per_clk) / 2)  # less the warming reads


@pytest.mark.parametrize("dt_fraction", [0.25, 0.5, 0.75])
def test_a_later_read_shares_less_the_later_it_asks(dt_fraction):
    mem = MemorySystem(H200)
    _warm(mem, "A[0]")
    busy0 = mem.l2_pipe.busy
    mem.read(T0, "A[0]", TILE)
    first = mem.l2_pipe.busy - busy0
    # the first read is still under way only if it outlasts the gap: make it long with a busy pipe
    mem.l2_pipe.free_at = T0 + 10 * H200.l2_merge_window_cycles
    mem._asked["A[0]"] = (T0, mem.l2_pipe.free_at)
    before = mem.l2_pipe.busy
    mem.read(T0 + dt_fraction * H200.l2_merge_window_cycles, "A[0]", TILE)
    assert mem.l2_pipe.busy - before == pytest.approx(first * dt_fraction)


def test_no_sharing_past_the_window_or_once_the_first_read_is_done():
    mem = MemorySystem(H200)
    _warm(mem, "A[0]")
    _, done = mem.read(T0, "A[0]", TILE)
    before = mem.l2_pipe.busy
    mem.read(done + 1.0, "A[0]", TILE)  # the first read has cleared the chip: nothing in flight to share
    full = mem.l2_pipe.busy - before
    assert full == pytest.approx(TILE / H200.l2_bytes_per_clk)
    mem.l2_pipe.free_at = 1e9  # still under way, but asked too long ago
    mem._asked["A[0]"] = (T0, 1e9)
    before = mem.l2_pipe.busy
    mem.read(T0 + H200.l2_merge_window_cycles + 1.0, "A[0]", TILE)
    assert mem.l2_pipe.busy - before == pytest.approx(full)


def test_a_profile_without_a_window_never_shares():
    mem = MemorySystem(dataclasses.replace(H200, l2_merge_window_cycles=0.0))
    _warm(mem, "A[0]")
    _, d0 = mem.read(T0, "A[0]", TILE)
    _, d1 = mem.read(T0, "A[0]", TILE)
    assert d1 - T0 == pytest.approx(2 * (d0 - T0))


# -- the sub-partition issue share ---------------------------------------------------------------
def test_stretched_adds_the_measured_share_per_other_warp():
    assert stretched(100.0, 0, 0.43) == 100.0
    assert stretched(100.0, 3, 0.43) == pytest.approx(229.0)
    # issue_share.cu: 29 cycles alone, 42 / 54 / 66 with 1 / 2 / 3 other CTAs' warps
    for others, measured in ((1, 42.0), (2, 54.0), (3, 66.0)):
        assert stretched(29.0, others, H200.issue_share_per_warp) == pytest.approx(measured, rel=0.03)


def _busy_ctas(ctas: int, warps: int, fences: int, sleeper: bool = False) -> Schedule:
    """``ctas`` CTAs of ``warps`` warps each fencing ``fences`` times (local work only); with
    ``sleeper``, every CTA but the first sleeps for the same time instead."""
    work = tuple(Fence() for _ in range(fences))
    sleep = (Sleep(cycles=int(fences * H200.fence_cycles)),)
    progs = tuple(CtaProgram(c, (sleep if sleeper and c else work,)) for c in range(ctas))
    return Schedule("coresident", "h200", (), (), (RoleDecl("w", warps),), progs)


def _end(schedule: Schedule, sms: int) -> float:
    result = replay(schedule, dataclasses.replace(H200, sm_count=sms))
    assert result.trap is None and not result.blocked
    return result.end_cycle


def test_other_ctas_working_on_the_sm_stretch_a_warps_local_work():
    work = 200 * H200.fence_cycles
    apart = _end(_busy_ctas(2, 4, 200), sms=2)
    together = _end(_busy_ctas(2, 4, 200), sms=1)
    # the second CTA's warps start while the first's are working: each sees one other warp
    assert together - apart == pytest.approx(H200.issue_share_per_warp * work, rel=0.05)
    four = _end(_busy_ctas(4, 4, 200), sms=1)
    assert four - apart == pytest.approx(3 * H200.issue_share_per_warp * work, rel=0.05)


def test_a_ctas_own_warps_and_sleeping_warps_do_not_stretch():
    work = 200 * H200.fence_cycles
    one = _end(_busy_ctas(1, 4, 200), sms=1)
    assert _end(_busy_ctas(1, 8, 200), sms=1) == pytest.approx(one)  # two own warps a sub-partition
    assert _end(_busy_ctas(2, 4, 200, sleeper=True), sms=1) - one < 0.05 * work


def test_one_cta_an_sm_is_the_profiles_own_cost():
    no_share = dataclasses.replace(H200, issue_share_per_warp=0.0)
    s = _busy_ctas(2, 4, 200)
    assert replay(s, dataclasses.replace(H200, sm_count=2)).end_cycle == pytest.approx(
        replay(s, dataclasses.replace(no_share, sm_count=2)).end_cycle)


# -- a warp's own arrive and its try_wait (the mma barrier's round trip) -------------------------
def _own_round_trip(*, first_wait_gap: int = 0) -> Schedule:
    """One warp: init, arrive (completing the count-1 phase), [sleep], wait on it."""
    ops = [MbarInit(barrier="bar", issuer="one"), Fence(), Arrive(barrier="bar", use=0, issuer="one")]
    if first_wait_gap:
        ops.append(Sleep(cycles=first_wait_gap))
    return hand_schedule(("w", 1, ops + [Wait(barrier="bar", parity=0, use=0)]))


def _arrive_to_pass(result) -> float:
    arrive = next(e for e in result.log.of_kind("arrive"))
    wait = next(e for e in result.log.of_kind("wait") if e.who.endswith("w0"))
    return wait.t - (arrive.t - H200.arrive_cycles)


def test_a_warps_own_try_wait_passes_a_round_trip_after_its_arrive():
    res = replay(_own_round_trip(), H200)
    assert res.trap is None and not res.blocked
    assert _arrive_to_pass(res) == pytest.approx(H200.arrive_wait_round_trip_cycles)


def test_a_try_wait_after_the_round_trip_pays_only_the_ready_cost():
    gap = 2 * H200.arrive_wait_round_trip_cycles
    res = replay(_own_round_trip(first_wait_gap=gap), H200)
    assert _arrive_to_pass(res) == pytest.approx(H200.arrive_cycles + gap + H200.wait_ready_cycles)
