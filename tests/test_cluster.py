"""Thread-block clusters: the IR's cluster fields, the engine's cross-CTA semantics
(multicast TMA, remote arrives, barrier.cluster, 2-CTA tcgen05, TMEM column ranges) and
the checkers' cross-CTA findings, on hand-written schedules; then the Hopper cluster builder
(hgemm_ws with cluster_m / cluster_n) and its knobs.  docs/semantics.md "Clusters"."""

from __future__ import annotations

import dataclasses
import re

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.checkers import run_checkers
from protosim.config import GemmConfig
from protosim.engine.machine import replay
from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    BarrierDecl,
    BufferDecl,
    ClusterArrive,
    ClusterWait,
    CtaSync,
    Fence,
    CtaProgram,
    LocalLoad,
    MbarInit,
    Mma,
    MmaCommit,
    RoleDecl,
    Schedule,
    ScheduleError,
    Sleep,
    SmemStore,
    TmaLoad,
    TmemAlloc,
    TmemDealloc,
    TmemLoad,
    TmemStore,
    WaitLd,
    WaitSt,
    Wait,
    content_hash,
    from_json,
    to_json,
    validate,
    validate_for,
)
from protosim.verdict import classify

SYNC = (ClusterArrive(), ClusterWait())


def kinds(result) -> set[str]:
    return {f.kind for f in run_checkers(result)}


def ring(k_tiles: int = 3, skip_rank: int | None = None, release: int = 2, exit_sync: bool = True,
         expect: int = 4000, init_sync: bool = True) -> Schedule:
    """Two CTAs, each loading its own A (2000 B) and half of a shared B (1000 B) multicast to
    both, on a one-stage ring: the Hopper cluster kernels' protocol in miniature."""
    def prog(rank: int) -> CtaProgram:
        start = list(SYNC) if init_sync else [CtaSync()]  # without: only the CTA's own warps are ordered
        prod: list = [MbarInit(barrier="full", issuer="one"), MbarInit(barrier="empty", issuer="one"), *start]
        cons: list = list(start)
        for k in range(k_tiles):
            prod += [Wait(barrier="empty", parity=(k + 1) % 2, use=k - 1, issuer="one"),
                     ArriveExpectTx(barrier="full", use=k, bytes=expect, issuer="one"),
                     TmaLoad(barrier="full", use=k, bytes=2000, dst=Access("A", 0, f"A{rank}.{k}"), issuer="one", k=k)]
            if rank != skip_rank:
                prod.append(TmaLoad(barrier="full", use=k, bytes=1000, dst=Access("B", 0, f"B.{k}", part=rank),
                                    multicast=(0, 1), issuer="one", k=k))
            cons += [Wait(barrier="full", parity=k % 2, use=k),
                     LocalLoad(bytes=64, src=Access("A", 0, f"A{rank}.{k}")),
                     LocalLoad(bytes=64, src=Access("B", 0, f"B.{k}")),
                     *(Arrive(barrier="empty", use=k, cta=r, issuer="one") for r in (0, 1))]
        if exit_sync:
            prod += SYNC
            cons += SYNC
        return CtaProgram(rank, (tuple(prod), tuple(cons)))

    return Schedule(name="ring", arch="h200", barriers=(BarrierDecl("full", 1), BarrierDecl("empty", release)),
                    buffers=(BufferDecl("A", "smem", bytes=2000), BufferDecl("B", "smem", bytes=2000, parts=2)),
                    roles=(RoleDecl("producer", 1), RoleDecl("consumer", 1)), ctas=(prog(0), prog(1)), cluster=2)


# -- IR ----------------------------------------------------------------------------------------------------------


def test_cluster_schedule_round_trips_and_the_cluster_is_part_of_its_identity():
    s = ring()
    validate(s)
    assert from_json(to_json(s)) == s
    one = dataclasses.replace(s, cluster=1, ctas=s.ctas[:1])
    assert "cluster" not in to_json(one)  # schedules written before clusters keep their hashes
    assert content_hash(s) != content_hash(dataclasses.replace(s, cluster=1))


@pytest.mark.parametrize("mutate, words", [
    (lambda s: dataclasses.replace(s, ctas=s.ctas[:1]), "lacks rank(s) [1]"),
    (lambda s: dataclasses.replace(s, cluster=1), "cluster rank 1, but the cluster has 1 CTA"),
    (lambda s: dataclasses.replace(s, ctas=(s.ctas[0], CtaProgram(1, ((Arrive(barrier="full", use=0, cta=5),), ())))),
     "cluster rank 5"),
])
def test_bad_cluster_schedules_are_refused_naming_the_fix(mutate, words):
    with pytest.raises(ScheduleError, match=re.escape(words)):
        validate(mutate(ring()))


def test_columns_only_on_tmem_and_pairs_only_from_the_even_cta():
    base = ring()
    bad = dataclasses.replace(base, ctas=(base.ctas[0], CtaProgram(1, (
        (LocalLoad(bytes=4, src=Access("A", 0, "x", columns=(0, 8))),), ()))))
    with pytest.raises(ScheduleError, match="column ranges are for TMEM"):
        validate(bad)
    odd = dataclasses.replace(base, ctas=(base.ctas[0], CtaProgram(1, (
        (Mma(m=256, n=64, k_elems=16, cta_group=2),), ()))))
    with pytest.raises(ScheduleError, match="even CTA of a pair"):
        validate(odd)


def test_an_arch_refuses_clusters_larger_than_it_allows():
    s = dataclasses.replace(ring(), cluster=16)
    with pytest.raises(ScheduleError, match="at most 8"):
        validate_for(s, load_profile("h200"))


# -- engine + checkers on hand-written schedules ---------------------------------------------------------------


def test_the_multicast_ring_is_clean_and_both_ctas_get_both_halves():
    r = replay(ring())
    assert not r.blocked and r.trap is None
    assert kinds(r) == set()
    landed = {(e.cta, e.data["from_cta"]) for e in r.log.of_kind("complete_tx") if "from_cta" in e.data}
    assert landed == {(0, 0), (0, 1), (1, 0), (1, 1)}  # each CTA's multicast lands in both


def test_a_rank_that_never_issues_its_half_hangs_its_peers_and_the_finding_names_the_sources():
    r = replay(ring(skip_rank=1))
    found = run_checkers(r)
    assert classify(r, found).kind == "deadlock"
    tx = [f for f in found if f.kind == "tx_mismatch" and f.cta == 0]
    assert tx and "CTA 0 3000" in tx[0].message and tx[0].evidence["sources"] == {"0": 3000}


def test_a_remote_arrive_lands_after_the_cluster_network_latency():
    r = replay(ring())
    lat = load_profile("h200").remote_arrive_cycles
    remote = [e for e in r.log.of_kind("arrive") if e.data.get("from_cta") is not None]
    assert remote
    # the consumer issues the two arrives back to back: the local one lands at issue, the remote one lat later
    for e in remote:
        local = next(x for x in r.log.of_kind("arrive") if x.cta == e.data["from_cta"] and x.who == e.who
                     and x.op == e.op - 1 and "from_cta" not in x.data) if e.cta == 1 else None
        if local is not None:
            assert e.t - local.t >= lat - 1


def test_a_release_count_not_scaled_by_the_cluster_is_an_arrival_mismatch_naming_both_ctas():
    found = run_checkers(replay(ring(release=1)))
    mism = [f for f in found if f.kind == "arrival_mismatch"]
    assert mism
    assert any("CTA 1" in f.message and "CTA 0's empty" in f.message for f in mism)
    assert {"war_race"} <= {f.kind for f in found}


def test_exiting_without_a_cluster_barrier_is_peer_exited_and_with_one_it_is_not():
    bad = [f for f in run_checkers(replay(ring(exit_sync=False))) if f.kind == "peer_exited"]
    assert bad and all("CTA 0" in f.message and "CTA 1" in f.message for f in bad)
    assert not [f for f in run_checkers(replay(ring())) if f.kind == "peer_exited"]


def _dsmem(relaxed: bool) -> Schedule:
    """CTA 0 stores into CTA 1's buffer, both pass a cluster barrier, CTA 1 reads it."""
    p0 = (SmemStore(bytes=128, dst=Access("X", 0, "x", cta=1)), ClusterArrive(relaxed=relaxed), ClusterWait())
    p1 = (ClusterArrive(), ClusterWait(), LocalLoad(bytes=128, src=Access("X", 0, "x")))
    return Schedule(name="dsmem", arch="h200", barriers=(), buffers=(BufferDecl("X", "smem", bytes=128),),
                    roles=(RoleDecl("w", 1),), ctas=(CtaProgram(0, (p0,)), CtaProgram(1, (p1,))), cluster=2)


def test_barrier_cluster_release_orders_a_dsmem_store_and_relaxed_does_not():
    assert kinds(replay(_dsmem(relaxed=False))) == set()
    assert "raw_race" in kinds(replay(_dsmem(relaxed=True)))


def test_a_second_cluster_arrive_before_the_wait_traps():
    s = _dsmem(False)
    p0 = (ClusterArrive(), ClusterArrive(), ClusterWait())
    r = replay(dataclasses.replace(s, ctas=(CtaProgram(0, (p0,)), s.ctas[1])))
    assert r.trap is not None and r.trap.kind == "cluster_rearrive"


def test_an_exited_warp_counts_as_arrived_at_barrier_cluster():
    s = Schedule(name="exit", arch="h200", barriers=(), buffers=(), roles=(RoleDecl("a", 1), RoleDecl("b", 1)),
                 ctas=tuple(CtaProgram(i, (SYNC, ())) for i in range(2)), cluster=2)
    r = replay(s)
    assert not r.blocked and r.ctas_finished == 2


def _pair(dealloc_early: bool = False) -> Schedule:
    """A 2-CTA MMA by CTA 0 over both CTAs' operands, committed to both CTAs' barriers; each
    CTA reads its own TMEM accumulator after its wait."""
    def prog(rank: int) -> CtaProgram:
        ops: list = [MbarInit(barrier="done", issuer="one"), TmemAlloc(columns=128, cta_group=2, issuer="warp0"),
                     *(SmemStore(bytes=4096, dst=Access(b, 0, f"{b}{rank}", part=-1)) for b in "AB"), *SYNC]
        if rank == 0:
            ops += [Mma(m=256, n=128, k_elems=64, issuer="one", cta_group=2,
                        reads=tuple(Access(b, 0, f"{b}{r}", cta=r) for b in "AB" for r in (0, 1)),
                        writes=tuple(Access("acc", 0, "D", cta=r) for r in (0, 1))),
                    MmaCommit(barrier="done", use=0, multicast=(0, 1), issuer="one")]
        if dealloc_early and rank == 1:
            ops += [TmemDealloc(columns=128, cta_group=2, issuer="warp0"), Wait(barrier="done", parity=0, use=0)]
        else:
            ops += [Wait(barrier="done", parity=0, use=0),
                    TmemLoad(bytes=4096, src=Access("acc", 0, "D", part=-1)), WaitLd()]
            ops += [*SYNC, TmemDealloc(columns=128, cta_group=2, issuer="warp0")]
        return CtaProgram(rank, (tuple(ops),))

    return Schedule(name="pair", arch="b200", barriers=(BarrierDecl("done", 1),),
                    buffers=(BufferDecl("A", "smem", bytes=16384, parts=4), BufferDecl("B", "smem", bytes=16384, parts=4),
                             BufferDecl("acc", "tmem", columns=128, parts=4)),
                    roles=(RoleDecl("w", 4),), ctas=(prog(0), prog(1)), cluster=2)


def test_a_2cta_mma_commit_multicast_releases_both_ctas_and_keeps_both_tensor_cores_busy():
    r = replay(_pair())
    assert r.trap is None and not r.blocked
    assert kinds(r) == set()
    assert r.stats.sms_used == 2  # the peer's tensor core did its half
    assert {e.cta for e in r.log.of_kind("arrive") if e.who == "mma"} == {0, 1}


def test_freeing_tmem_before_the_peer_mma_is_known_done_is_tmem_freed_early():
    found = run_checkers(replay(_pair(dealloc_early=True)))
    early = [f for f in found if f.kind == "tmem_freed_early"]
    assert early and "CTA 1" in early[0].message and "CTA 0" in early[0].message


def _columns(lo: int, hi: int) -> Schedule:
    """One warp stores and reads back TMEM columns [lo, hi); another, unsynchronised and later,
    stores [0, 64)."""
    ops_a = (Sleep(cycles=500), TmemStore(bytes=1024, dst=Access("acc", 0, "new", part=0, columns=(0, 64))), WaitSt())
    ops_b = (TmemStore(bytes=1024, dst=Access("acc", 0, "old", part=0, columns=(lo, hi))), WaitSt(),
             TmemLoad(bytes=1024, src=Access("acc", 0, "old", part=0, columns=(lo, hi))), WaitLd())
    return Schedule(name="cols", arch="b200", barriers=(), buffers=(BufferDecl("acc", "tmem", columns=128),),
                    roles=(RoleDecl("a", 1), RoleDecl("b", 1)), ctas=(CtaProgram(0, (ops_a, ops_b)),))


def test_tmem_accesses_conflict_exactly_where_their_column_ranges_overlap():
    assert kinds(replay(_columns(64, 128))) == set()  # disjoint: no conflict
    overlap = [f for f in run_checkers(replay(_columns(32, 96))) if f.kind in ("war_race", "raw_race")]
    assert overlap and "columns 32..63" in overlap[0].message


# -- the Hopper cluster builder -------------------------------------------------------------------------------


def ws(**kw) -> GemmConfig:
    base = dict(M=512, N=512, K=512, BLK_N=128, PIPE_DEPTH=2, arch="h200", sm_count=8, cluster_m=2)
    return GemmConfig.from_dict({**base, **kw})


@pytest.mark.parametrize("shape", [dict(cluster_m=2), dict(cluster_m=1, cluster_n=2), dict(cluster_m=2, cluster_n=2),
                                   dict(cluster_m=2, PIPE_DEPTH=3, K=448), dict(cluster_m=4, M=1024, sm_count=8)])
def test_the_correct_hopper_cluster_kernel_is_clean(shape):
    s = BUILDERS["hgemm_ws"](ws(**shape))
    assert s.cluster == ws(**shape).cluster_size
    r = replay(s)
    found = run_checkers(r)
    assert classify(r, found).kind == "correct" and not found, [f.message for f in found[:3]]


@pytest.mark.parametrize("knob, expected", [
    (dict(multicast_skip_rank=1), {"deadlock", "tx_mismatch"}),
    (dict(release_unscaled=True), {"arrival_mismatch", "war_race"}),
    (dict(expect_tx_local=True), {"tx_mismatch"}),
    (dict(skip_exit_sync=True), {"peer_exited"}),
])
def test_each_cluster_knob_is_found_with_its_kind_naming_both_ctas(knob, expected):
    found = run_checkers(replay(BUILDERS["hgemm_ws"](ws(**knob))))
    assert expected <= {f.kind for f in found}
    cross = [f for f in found if f.kind in expected - {"deadlock"}]
    assert any(f.message.count("CTA ") >= 2 for f in cross)


def test_cluster_knobs_without_a_cluster_are_refused():
    from protosim.config import ConfigError
    with pytest.raises(ConfigError, match="needs a cluster"):
        BUILDERS["hgemm_ws"](ws(cluster_m=1, skip_exit_sync=True))


def _rendezvous(rank1_waits: bool, delay_rank0: int = 5000, rounds: int = 3) -> Schedule:
    """A cross-CTA rendezvous: each round every CTA arrives on its own and its peer's ``meet``
    (count 2: one arrival per CTA) and waits on its own.  CTA 0 is delayed.  Without its waits,
    CTA 1 runs ahead and its next-round arrivals land in a round CTA 0 has not finished:
    the rendezvous is lapped."""
    def prog(rank: int) -> CtaProgram:
        ops: list = [MbarInit(barrier="meet", issuer="one"), *SYNC]
        if rank == 0 and delay_rank0:
            ops.append(Sleep(cycles=delay_rank0))
        for u in range(rounds):
            ops += [Arrive(barrier="meet", use=u, issuer="one"), Arrive(barrier="meet", use=u, cta=1 - rank, issuer="one")]
            if rank == 0 or rank1_waits:
                ops.append(Wait(barrier="meet", parity=u % 2, use=u))
        return CtaProgram(rank, (tuple(ops + list(SYNC)),))

    return Schedule(name="meet", arch="h200", barriers=(BarrierDecl("meet", 2),), buffers=(),
                    roles=(RoleDecl("w", 1),), ctas=(prog(0), prog(1)), cluster=2)


def test_a_rendezvous_lapped_by_a_delayed_cta_is_found_and_names_both_ctas():
    assert kinds(replay(_rendezvous(rank1_waits=True))) == set()  # each waits its round: a delay cannot lap it
    found = run_checkers(replay(_rendezvous(rank1_waits=False)))
    lapped = [f for f in found if f.kind == "arrival_mismatch"]
    assert any(f.message.startswith("CTA 1 ") and "CTA 0's meet" in f.message for f in lapped)
    assert {"lapped_wait"} <= {f.kind for f in found}  # CTA 0's wait began two rounds late


def test_clusters_are_placed_within_one_gpc_so_a_large_cluster_may_wait_for_a_second_wave():
    """33 clusters of 4 at one CTA per SM: the H200 profile's GPCs hold 30 at once (its
    ``gpc_sms`` is inferred from the 4096^3 bench, where 120 CTAs ran in one wave and 132 in
    two); the other 3 start when a cluster finishes.  Clusters of 2 all fit."""
    def starts(cm: int, cn: int) -> list[float]:
        cfg = GemmConfig(M=1536, N=1536, K=64, BLK_N=128, PIPE_DEPTH=4, arch="h200", sm_count=132,
                         cluster_m=cm, cluster_n=cn)
        r = replay(BUILDERS["hgemm_ws"](cfg))
        first: dict[int, float] = {}
        for e in r.log:
            first.setdefault(e.cta, e.t)
        return sorted(first.values())
    four = starts(2, 2)
    first_wave = [t for t in four if t < four[0] + 1000]  # a CTA's first event comes a few hundred cycles in
    assert len(four) == 132 and len(first_wave) == 120
    two = starts(2, 1)
    assert max(two) < two[0] + 1000


def test_a_release_at_barrier_cluster_covers_remote_arrives_still_in_flight():
    """A consumer's last remote release, then the exit cluster barrier: the barrier.cluster
    release makes the remote arrive visible before any waiter passes, so no perturbation can
    let the peer exit first (before the fix, stalled replays reported peer_exited)."""
    from protosim.verdict import explore
    assert explore(ring(), runs=40).clean


def test_a_peer_op_not_ordered_after_the_barrier_init_is_found_whatever_the_timing():
    found = run_checkers(replay(ring(init_sync=False)))
    uninit = [f for f in found if f.kind == "peer_uninitialized"]
    assert any(f.message.startswith("CTA 1 ") and "CTA 0's" in f.message for f in uninit)
    assert not [f for f in run_checkers(replay(ring())) if f.kind == "peer_uninitialized"]


def _tvm_multicast1(after_init: tuple) -> Schedule:
    """apache/tvm's tests/python/tirx/codegen/test_codegen_hopper.py
    ``test_cp_async_bulk_tensor_global_to_shared_multicast1`` (shape (16, 16), float32), written
    out by hand -- the TIRx frontend refuses its ``T.thread_binding`` loops: a cluster of 4 CTAs of
    128 threads; thread 0 of each inits its barrier (count 1), ``fence.proxy.async``,
    ``arrive.expect_tx`` of the tile; CTA 0's thread 0 multicasts the tile to all four (mask
    0b1111); every thread waits, then ``cta_sync``.  ``after_init``: what follows the init."""
    total = 4 * 16 * 16

    def prog(rank: int) -> CtaProgram:
        ops = [MbarInit(barrier="bar", issuer="one"), *after_init, Fence(fence="proxy_async", issuer="one"),
               ArriveExpectTx(barrier="bar", use=0, bytes=total, issuer="one")]
        if rank == 0:
            ops.append(TmaLoad(barrier="bar", use=0, bytes=total, dst=Access("A_smem", 0, "A"), src="A",
                               multicast=(0, 1, 2, 3), issuer="one"))
        ops += [Wait(barrier="bar", parity=0, use=0), CtaSync()]
        return CtaProgram(rank, (tuple(ops),))

    return Schedule(name="tvm-multicast1", arch="h200", barriers=(BarrierDecl("bar", 1),),
                    buffers=(BufferDecl("A_smem", "smem", bytes=total),), roles=(RoleDecl("w", 4),),
                    ctas=tuple(prog(r) for r in range(4)), cluster=4)


def test_a_public_multicast_kernel_written_by_others_shows_both_init_races():
    """Input we did not write.  As written, warps 1-3 wait on the barrier with nothing ordering
    thread 0's init before them (use_before_init, a trap in the model).  With a CTA-local sync
    added, CTA 0's multicast still lands on the peers' barriers with nothing ordering their inits
    first (peer_uninitialized, found by order).  With fence.mbarrier_init + a cluster barrier it
    is clean."""
    as_written = replay(_tvm_multicast1(()))
    assert as_written.trap is not None and as_written.trap.kind == "use_before_init"
    local = [f for f in run_checkers(replay(_tvm_multicast1((CtaSync(),)))) if f.kind == "peer_uninitialized"]
    assert {f.cta for f in local} == {1, 2, 3}
    assert kinds(replay(_tvm_multicast1((Fence(fence="mbarrier_init"), *SYNC)))) == set()
