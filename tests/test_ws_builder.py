"""The ws builder (``hgemm_ws``) mirrors kernels/tirx/hopper.py's warp-specialized kernel:
its barriers and roles, its loop order, the one place each knob acts, the parities it
passes, and the verdicts that follow from them."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from conftest import build

from kernels.spec import BARRIER_NAMES, ROLE_NAMES
from protosim.arch import load_profile
from protosim.builders import BUILDERS, CONFIGS, persistent_tiles
from protosim.config import ConfigError, GemmConfig
from protosim.engine import Perturbation
from protosim.ir import (
    Arrive,
    ArriveExpectTx,
    BulkWait,
    MbarInit,
    Op,
    Sleep,
    TmaLoad,
    TmaStore,
    Wait,
    Wgmma,
)
from protosim.verdict import judge

# 4 x 2 output tiles over 3 persistent CTAs (3, 3 and 2 tiles); K_TILES = 9 is odd and
# not a multiple of the ring, so a per-tile reset of the phases matters.
BASE = {"arch": "h200", "M": 512, "N": 256, "K": 576, "PIPE_DEPTH": 4, "sm_count": 3}
MMA, PRODUCER = 0, 1  # role indices


def ws(**knobs) -> object:
    return build("hgemm_ws", **{**BASE, **knobs})


def role_ops(s, cta: int, role: int) -> list[Op]:
    return list(s.ctas[cta].roles[role])


def of(ops, cls, barrier_prefix: str | None = None) -> list:
    return [o for o in ops if isinstance(o, cls) and (barrier_prefix is None or o.barrier.startswith(barrier_prefix))]


# ------------------------------------------------------------------ structure


def test_registered_for_scenarios():
    assert "hgemm_ws" in BUILDERS and CONFIGS["hgemm_ws"] is GemmConfig


def test_barriers_roles_and_init_order_are_the_kernels():
    s = ws()
    depth = BASE["PIPE_DEPTH"]
    assert {b.name: b.count for b in s.barriers} == {
        "mma_bar": 1, **{f"tma_bar[{i}]": 1 for i in range(depth)}, **{f"empty_bar[{i}]": 1 for i in range(depth)}}
    # warps 0-3 are the wgmma warpgroup, warp 4 the producer: 160 threads, named as the timeout record names them
    assert [(r.name, r.warps) for r in s.roles] == [(ROLE_NAMES[0], 4), (ROLE_NAMES[1], 1)]
    assert s.threads_per_cta == 160
    # every barrier name a silicon timeout can report is a barrier (array) of the schedule
    assert set(BARRIER_NAMES.values()) == {b.name.split("[")[0] for b in s.barriers}
    inits = [o.barrier for o in role_ops(s, 0, MMA) if isinstance(o, MbarInit)]
    assert inits == [n for i in range(depth) for n in (f"tma_bar[{i}]", f"empty_bar[{i}]")] + ["mma_bar"]
    assert all(o.issuer == "one" for o in role_ops(s, 0, MMA) if isinstance(o, MbarInit))
    assert not of(role_ops(s, 0, PRODUCER), MbarInit)


def test_mma_bar_is_initialized_and_never_used():
    s = ws()
    for cta in s.ctas:
        for ops in cta.roles:
            assert not [o for o in ops if getattr(o, "barrier", None) == "mma_bar" and not isinstance(o, MbarInit)]


def test_persistent_tile_order_and_grid():
    s = ws()
    cfg = GemmConfig.from_dict(BASE)
    expected = persistent_tiles(cfg.m_tiles, cfg.n_tiles, 3, cfg.l2_group_size)
    assert len(s.ctas) == 3
    for cta, tiles in zip(s.ctas, expected, strict=True):
        for role in (MMA, PRODUCER):
            walked = list(dict.fromkeys(o.tile for o in cta.roles[role] if o.tile is not None))
            assert walked == tiles
    # never more CTAs than tiles (kernels/spec.py grid_ctas), whatever sm_count says
    assert len(ws(sm_count=100).ctas) == cfg.m_tiles * cfg.n_tiles


def test_op_counts_per_role():
    s = ws()
    cfg = GemmConfig.from_dict(BASE)
    tiles = persistent_tiles(cfg.m_tiles, cfg.n_tiles, 3, cfg.l2_group_size)
    for cta, mine in zip(s.ctas, tiles, strict=True):
        steps = len(mine) * cfg.k_tiles
        mma, prod = list(cta.roles[MMA]), list(cta.roles[PRODUCER])
        # producer: one empty wait, two TMA loads and one arrive.expect_tx per k-tile; nothing else on barriers
        assert len(of(prod, Wait, "empty_bar")) == len(of(prod, Wait)) == steps
        assert len(of(prod, TmaLoad)) == 2 * steps and len(of(prod, ArriveExpectTx)) == steps
        assert not of(prod, Arrive) and not of(prod, Wgmma) and not of(prod, TmaStore)
        assert all(o.issuer == "one" for o in of(prod, TmaLoad) + of(prod, ArriveExpectTx))
        assert all(o.issuer == "all" for o in of(prod, Wait))  # the whole warp waits
        # consumer: one full wait, one wgmma and one release per k-tile; one store per tile
        assert len(of(mma, Wait, "tma_bar")) == len(of(mma, Wait)) == steps
        assert len(of(mma, Wgmma)) == steps
        assert len(of(mma, Arrive, "empty_bar")) == len(of(mma, Arrive)) == steps
        assert all(o.issuer == "one" for o in of(mma, Arrive))
        assert not of(mma, TmaLoad) and not of(mma, ArriveExpectTx)
        assert len(of(mma, TmaStore)) == len(of(mma, BulkWait)) == len(mine)


def test_stage_handover_order_within_each_role():
    """Producer: wait empty[s] -> load into s -> arrive.expect_tx tma_bar[s]; consumer:
    wait tma_bar[s] -> wgmma on stage s -> arrive on empty[s], stages in ring order."""
    s = ws()
    depth = BASE["PIPE_DEPTH"]
    prod = [o for o in role_ops(s, 0, PRODUCER) if isinstance(o, (Wait, TmaLoad, ArriveExpectTx))]
    for j in range(0, len(prod), 4):
        w, a, b, e = prod[j:j + 4]
        stage = (j // 4) % depth
        assert w.barrier == f"empty_bar[{stage}]"
        assert a.dst.stage == b.dst.stage == stage and {a.dst.buffer, b.dst.buffer} == {"A", "B"}
        assert a.barrier == b.barrier == e.barrier == f"tma_bar[{stage}]"
        assert e.bytes == GemmConfig.from_dict(BASE).stage_bytes
    mma = [o for o in role_ops(s, 0, MMA) if isinstance(o, (Wait, Wgmma, Arrive))]
    for j in range(0, len(mma), 3):
        w, g, r = mma[j:j + 3]
        stage = (j // 3) % depth
        assert w.barrier == f"tma_bar[{stage}]" and r.barrier == f"empty_bar[{stage}]"
        assert {a.stage for a in g.reads} == {stage}
        assert (w.tile, w.k) == (g.tile, g.k) == (r.tile, r.k)
        assert g.accumulate  # hopper.py: zero_acc() per tile, then every wgmma passes scale-d = T.bool(True)


def _expected_parities(n_steps_per_tile: int, tiles: int, depth: int, start: int, flip: bool, reset: bool):
    """(stage, parity) of each wait, from the kernel's loop written out in plain Python."""
    out = []
    stage, phase = 0, start
    for _ in range(tiles):
        if reset:
            stage, phase = 0, start
        for _ in range(n_steps_per_tile):
            out.append((stage, phase))
            stage += 1
            if stage == depth:
                stage = 0
                if flip:
                    phase ^= 1
    return out


@pytest.mark.parametrize("knobs", [{}, {"skip_mma_phase_flip": True}, {"reset_phase_per_tile": True},
                                   {"wait_parity_flip": "mma"}, {"wait_parity_flip": "tma"}])
def test_parity_sequences_of_both_roles(knobs):
    s = ws(**knobs)
    cfg = GemmConfig.from_dict({**BASE, **knobs})
    depth = cfg.PIPE_DEPTH
    for cta in s.ctas:
        tiles = len({o.tile for o in cta.roles[MMA] if o.tile is not None})
        empty = of(cta.roles[PRODUCER], Wait)
        full = of(cta.roles[MMA], Wait)
        want_empty = _expected_parities(cfg.k_tiles, tiles, depth, 1, not cfg.skip_mma_phase_flip, cfg.reset_phase_per_tile)
        want_full = _expected_parities(cfg.k_tiles, tiles, depth, 0, True, cfg.reset_phase_per_tile)
        flip_e, flip_f = int(cfg.wait_parity_flip == "mma"), int(cfg.wait_parity_flip == "tma")
        assert [(int(w.barrier[-2]), w.parity) for w in empty] == [(st, p ^ flip_e) for st, p in want_empty]
        assert [(int(w.barrier[-2]), w.parity) for w in full] == [(st, p ^ flip_f) for st, p in want_full]


def test_correct_producer_empty_waits_run_1_0_1_0_per_stage():
    s = ws()
    per_stage: dict[str, list[int]] = {}
    for w in of(role_ops(s, 0, PRODUCER), Wait):
        per_stage.setdefault(w.barrier, []).append(w.parity)
    assert per_stage and all(ps == [(i + 1) % 2 for i in range(len(ps))] for ps in per_stage.values())


def test_logical_uses_pair_each_load_with_its_read_and_release():
    """n-th load into stage s = use n of tma_bar[s]; the n-th read waits for it and its
    release is use n of empty_bar[s]; the producer's wait before load n is for use n-1."""
    for knobs in ({}, {"reset_phase_per_tile": True}, {"skip_mma_phase_flip": True}):
        s = ws(**knobs)
        for cta in s.ctas:
            prod, mma = list(cta.roles[PRODUCER]), list(cta.roles[MMA])
            n_load: Counter = Counter()
            for o in prod:
                if isinstance(o, Wait):
                    stage = o.barrier[len("empty_bar"):]
                    assert o.use == n_load["tma_bar" + stage] - 1
                elif isinstance(o, ArriveExpectTx):
                    assert o.use == n_load[o.barrier]
                    n_load[o.barrier] += 1
            n_read: Counter = Counter()
            for o in mma:
                if isinstance(o, Wait):
                    assert o.use == n_read[o.barrier]
                elif isinstance(o, Arrive):
                    full = "tma_bar" + o.barrier[len("empty_bar"):]
                    assert o.use == n_read[full]
                    n_read[full] += 1
            assert n_read == n_load  # every load is read exactly once


def _without(ops, cls):
    return [o for o in ops if not isinstance(o, cls)]


def _diff(a: list[Op], b: list[Op]) -> list[tuple[Op, Op]]:
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


@pytest.mark.parametrize("knobs, role, cls, field", [
    ({"skip_mma_phase_flip": True}, PRODUCER, Wait, "parity"),
    ({"wait_parity_flip": "mma"}, PRODUCER, Wait, "parity"),
    ({"wait_parity_flip": "tma"}, MMA, Wait, "parity"),
    ({"expect_tx_delta": -1024}, PRODUCER, ArriveExpectTx, "bytes"),
])
def test_each_bug_knob_changes_one_field_of_one_op_kind(knobs, role, cls, field):
    base, bug = ws(), ws(**knobs)
    changed_roles = set()
    for c0, c1 in zip(base.ctas, bug.ctas, strict=True):
        for r, (a, b) in enumerate(zip(c0.roles, c1.roles, strict=True)):
            pairs = _diff(list(a), list(b))
            for x, y in pairs:
                assert type(x) is type(y) is cls
                assert dataclasses.replace(y, **{field: getattr(x, field)}) == x  # only that field differs
                changed_roles.add(r)
    assert changed_roles == {role}


def test_skip_store_wait_drops_the_store_drain_only():
    base, bug = ws(), ws(skip_store_wait=True)
    for c0, c1 in zip(base.ctas, bug.ctas, strict=True):
        assert c0.roles[PRODUCER] == c1.roles[PRODUCER]
        assert _without(c0.roles[MMA], BulkWait) == list(c1.roles[MMA]) and of(c0.roles[MMA], BulkWait)


@pytest.mark.parametrize("knobs, role, before, issuer, warp", [
    ({"producer_delay_ns": 500}, PRODUCER, TmaLoad, "one", None),  # lane 0, after the empty wait
    ({"consumer_delay_ns": 500}, MMA, Wgmma, "one", None),  # thread 0, before the wgmma
    ({"lag_ns": 500, "lag_warp": 2}, MMA, Wait, "all", 2),  # warp 2 before each full wait; the producer never lags
])
def test_each_delay_knob_sleeps_in_its_one_place(knobs, role, before, issuer, warp):
    base, slow = ws(), ws(**knobs)
    cycles = round(500 * load_profile("h200").clock_ghz)
    for c0, c1 in zip(base.ctas, slow.ctas, strict=True):
        other = 1 - role
        assert c0.roles[other] == c1.roles[other]
        ops = list(c1.roles[role])
        assert _without(ops, Sleep) == list(c0.roles[role])
        sleeps = [i for i, o in enumerate(ops) if isinstance(o, Sleep)]
        targets = [i for i, o in enumerate(ops) if isinstance(o, before)]
        if before is TmaLoad:
            targets = targets[::2]  # the A load of each pair
        assert [i + 1 for i in sleeps] == targets
        for i in sleeps:
            assert (ops[i].cycles, ops[i].issuer, ops[i].warp) == (cycles, issuer, warp)
        if before is TmaLoad:  # after the wait, not before it
            assert all(isinstance(ops[i - 1], Wait) for i in sleeps)


def test_reset_restarts_both_rings_at_each_tile_and_changes_nothing_before():
    base, bug = ws(), ws(reset_phase_per_tile=True)
    for c0, c1 in zip(base.ctas, bug.ctas, strict=True):
        for r in (MMA, PRODUCER):
            first = next(o.tile for o in c0.roles[r] if o.tile is not None)
            n = next(i for i, o in enumerate(c0.roles[r]) if o.tile not in (None, first))
            assert c0.roles[r][:n] == c1.roles[r][:n]  # the first tile is the carried code
            starts = [o for o in c1.roles[r] if isinstance(o, Wait) and o.k == 0]
            assert {o.barrier[-3:] for o in starts} == {"[0]"}  # every tile starts at stage 0 ...
            assert {o.parity for o in starts} == {1 if r == PRODUCER else 0}  # ... with the initial parity


def test_reset_with_odd_k_tiles_misnames_only_the_stage_used_oddly():
    # K_TILES = 9 = 2 * 4 + 1: stage 0 takes three k-tiles per tile, stages 1-3 two
    s = ws(reset_phase_per_tile=True)
    bad = {o.barrier for cta in s.ctas for ops in cta.roles for o in ops if isinstance(o, Wait) and o.parity != o.use % 2}
    assert bad == {"tma_bar[0]", "empty_bar[0]"}
    assert not [o for cta in ws().ctas for ops in cta.roles for o in ops if isinstance(o, Wait) and o.parity != o.use % 2]


def test_reset_with_k_tiles_a_multiple_of_twice_the_ring_is_the_carried_schedule():
    # K_TILES = 8 = 2 * PIPE_DEPTH: each tile ends where the ring started, so resetting changes nothing
    assert ws(K=512, reset_phase_per_tile=True).ctas == ws(K=512).ctas
    # K_TILES = 4 = PIPE_DEPTH: the stage wraps to 0 but the parities have flipped once
    assert ws(K=256, reset_phase_per_tile=True).ctas != ws(K=256).ctas


@pytest.mark.parametrize("fields, field", [
    ({"tma_issuer": "each_warp"}, "tma_issuer"),
    ({"arch": "b200"}, "arch"),
])
def test_refused_configs_name_the_field(fields, field):
    with pytest.raises(ConfigError) as e:
        ws(**fields)
    assert e.value.field == field
    assert "hgemm_v" in e.value.message  # and says where the knob / arch does apply


# ------------------------------------------------------------------ behaviour


def test_correct_config_replays_clean_and_tolerates_perturbation():
    s = ws()
    v, r = judge(s)
    assert v.ok and v.outcome.kind == "correct", [f.message for f in v.findings[:3]]
    assert r.ctas_finished == len(s.ctas) and not r.blocked
    for p in (Perturbation(seed=3, jitter=0.3), Perturbation(seed=5, skew_warp=1, skew_cycles=5000)):
        v, _ = judge(s, perturbation=p)
        assert v.outcome.kind == "correct", p.describe()


@pytest.mark.parametrize("delay", [{"producer_delay_ns": 5000}, {"consumer_delay_ns": 5000}, {"lag_ns": 5000}])
def test_correct_config_is_correct_with_delays(delay):
    v, _ = judge(ws(**delay))
    assert v.ok and v.outcome.kind == "correct"


def test_reset_with_odd_k_tiles_is_not_correct():
    v, _ = judge(ws(reset_phase_per_tile=True))
    assert v.outcome.kind != "correct"
    assert "wrong_parity" in v.kinds()


def test_reset_with_even_k_tiles_is_correct():
    v, _ = judge(ws(K=512, reset_phase_per_tile=True))
    assert v.ok and v.outcome.kind == "correct"


def test_wrong_empty_parity_hangs_both_roles_at_the_first_k_tile():
    v, r = judge(ws(wait_parity_flip="mma"))
    assert v.outcome.kind == "deadlock"
    hung = {(b.who.split(".")[0], b.target, b.k) for b in r.blocked if b.on == "mbarrier"}
    assert hung == {("producer", "empty_bar[0]", 0), ("mma", "tma_bar[0]", 0)}


def test_missing_empty_flip_with_a_slow_producer_hangs_the_producer_before_its_fifth_load():
    """With the producer slower than the MMA, every stage is released before it comes back
    to stage 0, so its parity-1 wait names the phase in flight and blocks (the silicon
    timeout: empty_bar stage 0, producer, k = 4)."""
    v, r = judge(ws(skip_mma_phase_flip=True, producer_delay_ns=2000))
    assert v.outcome.kind == "deadlock"
    prod = {(b.target, b.k, b.parity) for b in r.blocked if b.who.startswith("producer")}
    assert prod == {("empty_bar[0]", 4, 1)}
