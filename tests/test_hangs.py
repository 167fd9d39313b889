"""Hangs named in the kernel's terms (protosim.hangs): the barrier array and stage, the
role, and the thread's running k-tile -- what a silicon timeout record names."""

from __future__ import annotations

import pytest

from protosim.engine import replay
from protosim.hangs import barrier_array, hang_sites
from protosim.scenarios import builtin_dir, load_scenario


@pytest.mark.parametrize("name, expected", [("tma_bar[1]", ("tma_bar", 1)), ("empty_bar[12]", ("empty_bar", 12)),
                                            ("mma_bar", ("mma_bar", None)), ("a[b][3]", ("a[b]", 3)),
                                            ("x[]", ("x[]", None))])
def test_barrier_array(name, expected):
    assert barrier_array(name) == expected


def k_tiles_walked(schedule, cta: int, tile, k: int, k_tiles: int) -> int:
    """The kernel's own rule (kernels/spec.py DIAG_FIELDS "k"): output tiles the CTA started
    before this one, times K_TILES from the config, plus k."""
    order = []
    for program in next(p for p in schedule.ctas if p.index == cta).roles:
        for op in program:
            if op.tile is not None and op.tile not in order:
                order.append(op.tile)
    return order.index(tile) * k_tiles + k


@pytest.mark.parametrize("scenario", ["v6_reset_phase_odd_k", "v4_expect_tx_too_few"])
def test_running_k_is_the_kernels_counter(scenario):
    sc = load_scenario(builtin_dir() / f"{scenario}.toml")
    schedule = sc.build()
    result = replay(schedule)
    sites = hang_sites(result)
    assert sites, f"{scenario} should hang in its nominal replay"
    k_tiles = sc.config.K // sc.config.BLK_K
    by_who = {(b.cta, b.who): b for b in result.blocked}
    for s in sites:
        b = by_who[(s.cta, s.who)]
        assert s.k == k_tiles_walked(schedule, s.cta, b.tile, b.k, k_tiles)
        assert f"{s.barrier}[{s.stage}]" == b.target or (s.stage is None and s.barrier == b.target)
        assert s.role == b.who.rsplit(".", 1)[0]


def test_sites_come_in_the_order_warps_began_waiting():
    result = replay(load_scenario(builtin_dir() / "v6_reset_phase_odd_k.toml").build())
    since = {(b.cta, b.who): b.since for b in result.blocked}
    order = [since[(s.cta, s.who)] for s in hang_sites(result)]
    assert order == sorted(order) and len(order) > 1


def test_a_replay_that_finishes_has_no_sites():
    assert hang_sites(replay(load_scenario(builtin_dir() / "v5_ring.toml").build())) == []


def test_the_deadlock_finding_names_the_hang_in_the_kernels_terms():
    from protosim.checkers import run_checkers

    result = replay(load_scenario(builtin_dir() / "v6_reset_phase_odd_k.toml").build())
    sites = {(s.cta, s.who): s for s in hang_sites(result)}
    deadlocks = [f for f in run_checkers(result) if f.kind == "deadlock" and f.evidence.get("resource") == "mbarrier"]
    assert deadlocks
    for f in deadlocks:
        for w in f.evidence["warps"]:
            s = sites[(f.cta, w["who"])]
            assert w["kernel_site"] == {"barrier": s.barrier, "stage": s.stage, "role": s.role, "k": s.k}
        first = sites[(f.cta, f.who)]
        assert f"{first.role} waits on {first.barrier}, k-tile {first.k}" in f.message
