"""A wait whose barrier address the code computes at run time (a ring stage's barrier in TVM's
Hopper kernels) pays the arch's ``wait_address_cycles`` before its first try, whether or not the
phase is complete; the Hopper builders mark exactly their waits on rings of two or more stages
(kernels/microbench/v5_parts.py PARTS 99; results/silicon/microbench/2026-12-04_h200_loop_clock.md)."""

from __future__ import annotations

import pytest

from conftest import hand_schedule
from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.engine import replay
from protosim.ir import Arrive, MbarInit, Sleep, Wait, dumps, loads


def _arrive_then_wait(computed: bool, arch: str = "h200"):
    """One warp arrives, then (past its arrive's round trip, which the address would overlap) waits."""
    wait = Wait(barrier="bar", parity=0, use=0, computed_address=True) if computed else Wait(barrier="bar", parity=0, use=0)
    settle = Sleep(cycles=int(2 * load_profile(arch).arrive_wait_round_trip_cycles))
    return hand_schedule(("w", 1, [MbarInit(barrier="bar", issuer="one"), Arrive(barrier="bar", use=0, issuer="one"),
                                   settle, wait]), arch=arch)


def test_the_address_overlaps_the_own_arrives_round_trip():
    """Right behind the warp's own arrive, the address is made while the arrive travels: the wait
    passes at the later of the round trip's end and the address plus a ready try."""
    arch = load_profile("h200")
    ops = lambda c: [MbarInit(barrier="bar", issuer="one"), Arrive(barrier="bar", use=0, issuer="one"),  # noqa: E731
                     Wait(barrier="bar", parity=0, use=0, computed_address=c)]
    plain, computed = (replay(hand_schedule(("w", 1, ops(c)))).log.of_kind("wait")[0].t for c in (False, True))
    arrived = plain - (arch.arrive_wait_round_trip_cycles - arch.arrive_cycles)
    assert computed == pytest.approx(arrived + max(arch.wait_address_cycles + arch.wait_ready_cycles,
                                                   arch.arrive_wait_round_trip_cycles - arch.arrive_cycles))


def test_a_computed_address_costs_its_cycles_before_a_satisfied_wait():
    arch = load_profile("h200")
    assert arch.wait_address_cycles > 0
    plain, computed = (replay(_arrive_then_wait(c)).log.of_kind("wait")[0].t for c in (False, True))
    assert computed - plain == pytest.approx(arch.wait_address_cycles)


def test_the_flag_round_trips_and_a_plain_wait_serializes_as_before():
    s = _arrive_then_wait(True)
    assert loads(dumps(s)) == s
    assert "computed_address" not in dumps(_arrive_then_wait(False))  # a default is omitted: old hashes hold


def _waits(step: str, arch: str, **kw):
    cfg = GemmConfig(M=128, N=128, K=512, arch=arch, **kw)
    s = BUILDERS[f"hgemm_{step}"](cfg)
    return [op for role in s.ctas[0].roles for op in role if isinstance(op, Wait)]


@pytest.mark.parametrize("step", ["v5", "v6", "ws"])
def test_hopper_ring_waits_are_marked_and_no_other(step):
    waits = _waits(step, "h200", PIPE_DEPTH=2)
    ring = [w for w in waits if w.barrier.startswith(("tma_bar", "full", "empty"))]
    assert ring and all(w.computed_address for w in ring)
    assert all(not w.computed_address for w in waits if w not in ring)  # mma_bar: one barrier, a constant address


def test_a_one_stage_ring_is_not_marked_and_the_seed_s_rings_cost_nothing_on_b200():
    assert not any(w.computed_address for w in _waits("v4", "h200"))
    assert any(w.computed_address for w in _waits("v5", "b200", PIPE_DEPTH=2))  # the same TVM code shape ...
    assert load_profile("b200").wait_address_cycles == 0  # ... not measured on sm_100a


def test_the_rule_reads_arrays_per_role():
    from protosim.ptxas import with_ring_wait_addresses

    def w(name):
        return Wait(barrier=name, parity=0, use=0)

    ops = (w("full[0]"), w("full[1]"), w("acc[0]"), w("mma_bar"), w("x]"))
    marked = [op.computed_address for op in with_ring_wait_addresses(ops)]
    assert marked == [True, True, False, False, False]  # one element of acc[...]: a constant address
    assert with_ring_wait_addresses(ops[2:]) == ops[2:]  # no array waited at two elements: unchanged
