"""Engine semantics on hand-written schedules: what the log must show."""

from __future__ import annotations

import pytest

from conftest import hand_schedule
from protosim.arch import interpolate, load_profile
from protosim.engine import Perturbation, replay
from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    BufferDecl,
    BulkCommit,
    BulkWait,
    CtaSync,
    MbarInit,
    Mma,
    MmaCommit,
    Sleep,
    TmaLoad,
    TmaStore,
    TmemAlloc,
    Wait,
)
from protosim.verdict import judge

H200 = load_profile("h200")
INIT = [MbarInit(barrier="bar", issuer="one"), CtaSync()]


def waits(result, who=None):
    return [e for e in result.log.of_kind("wait") if who is None or e.who == who]


def test_consumer_blocks_until_producer_arrives_then_wakes():
    s = hand_schedule(
        ("prod", 1, INIT + [Sleep(cycles=1000), Arrive(barrier="bar", use=0, issuer="one")]),
        ("cons", 2, [CtaSync(), Wait(barrier="bar", parity=0, use=0)]),
    )
    r = replay(s)
    (arrive,) = r.log.of_kind("arrive")
    ws = waits(r)
    assert len(ws) == 2 and {w.who for w in ws} == {"cons.w0", "cons.w1"}  # each warp waits itself
    for w in ws:
        assert w.data["blocked"] and w.data["completed_return"] == 1
        assert w.t == pytest.approx(arrive.t + H200.wake_cycles)
    v, _ = judge(s)
    assert v.ok and v.outcome.kind == "correct"


def test_vacuous_parity_one_returns_at_once_and_is_an_early_return():
    s = hand_schedule(
        ("prod", 1, INIT + [Sleep(cycles=1000), Arrive(barrier="bar", use=0, issuer="one")]),
        ("cons", 1, [CtaSync(), Wait(barrier="bar", parity=1, use=0)]),
    )
    v, r = judge(s)
    (w,) = waits(r)
    assert not w.data["blocked"] and w.data["completed_return"] == 0
    assert {"early_return", "wrong_parity"} <= set(v.kinds())
    assert v.outcome.kind == "correct"  # no data was touched: the bug did not bite here


def test_arrival_past_zero_traps():
    s = hand_schedule(("t", 1, INIT + [
        ArriveExpectTx(barrier="bar", use=0, bytes=128, issuer="one"),
        Arrive(barrier="bar", use=0, issuer="one"),
    ]))
    v, r = judge(s)
    assert r.trap is not None and r.trap.kind == "arrival_underflow"
    assert r.trap.state.pending == 0 and r.trap.state.tx == 128
    assert v.outcome.kind == "fault" and "arrival_underflow" in v.kinds()


def test_wait_nobody_completes_is_a_deadlock_with_barrier_state():
    s = hand_schedule(("t", 2, INIT + [Wait(barrier="bar", parity=0, use=0)]))
    v, r = judge(s)
    assert r.deadlocked and len(r.blocked) == 2
    (f,) = [f for f in v.findings if f.kind == "deadlock"]
    assert f.evidence["barrier_state"] == {"phase": 0, "parity": 0, "pending": 1, "expected": 1, "tx": 0}
    assert v.outcome.kind == "deadlock" and "bar" in v.outcome.hung[0]


def test_tma_landing_completes_the_phase_after_the_measured_latency():
    buf = BufferDecl("S", "smem", 1, 16384)
    s = hand_schedule(("t", 1, INIT + [
        ArriveExpectTx(barrier="bar", use=0, bytes=16384, issuer="one"),
        TmaLoad(barrier="bar", use=0, bytes=16384, dst=Access("S", 0, "x"), issuer="one"),
        Wait(barrier="bar", parity=0, use=0),
    ]), buffers=[buf])
    r = replay(s)
    (issue,) = [e for e in r.log.of_kind("issue") if e.data["what"] == "tma_load"]
    (land,) = r.log.of_kind("complete_tx")
    (phase,) = r.log.of_kind("phase")  # init completes no phase: the landing does
    assert phase.t == land.t
    # first touch comes from DRAM: the measured DRAM latency for 16 KiB, after the descriptor's
    # fetch (the tensor's first load on this SM)
    assert land.t - issue.t == pytest.approx(H200.tma_descriptor_fetch_cycles + interpolate(H200.tma_dram_latency, 16384))
    # the latency tables are measured to a waiter's return: a landing's waiter returns
    # ``tma_landing_wake_cycles`` after it (0 on the H200), an arrive's ``wake_cycles`` after
    # (test_consumer_blocks_until_producer_arrives_then_wakes)
    (w,) = waits(r)
    assert w.t == pytest.approx(land.t + H200.tma_landing_wake_cycles)
    assert H200.tma_landing_wake_cycles < H200.wake_cycles


def test_commit_arrives_only_when_prior_mmas_complete():
    b200 = load_profile("b200")
    bufs = [BufferDecl("A", "smem", 1, 16384), BufferDecl("acc", "tmem", 1, columns=128)]
    mma = Mma(m=128, n=128, k_elems=64, reads=(Access("A", 0, "a"),), writes=(Access("acc", 0, "c"),), issuer="one")
    s = hand_schedule(("t", 1, INIT + [TmemAlloc(columns=512, issuer="warp0"), mma, mma,
                                       MmaCommit(barrier="bar", use=0, issuer="one"),
                                       Wait(barrier="bar", parity=0, use=0)]), buffers=bufs, arch="b200")
    r = replay(s)
    issues = [e for e in r.log.of_kind("issue") if e.data["what"] == "mma"]
    occupancy, _ = b200.mma_cycles(128, 128, 64)
    second_done = max(issues[0].t + occupancy, issues[1].t) + occupancy + b200.mma_tail_cycles
    (arrive,) = [e for e in r.log.of_kind("arrive") if e.who == "mma"]
    assert arrive.t == pytest.approx(second_done)


def test_bulk_wait_waits_for_committed_stores_only():
    buf = BufferDecl("D", "smem", 1, 32768)
    store = TmaStore(bytes=32768, src=Access("D", 0, "d"), issuer="one")
    committed = replay(hand_schedule(("t", 1, [store, BulkCommit(issuer="one"), BulkWait(n=0, issuer="one")]),
                                     buffers=[buf]))
    uncommitted = replay(hand_schedule(("t", 1, [store, BulkWait(n=0, issuer="one")]), buffers=[buf]))
    lat = interpolate(H200.tma_store_latency, 32768)
    assert committed.stats.stall["t"]["bulk_wait"] >= lat - 2 * H200.tma_issue_cycles
    assert "bulk_wait" not in uncommitted.stats.stall["t"]  # nothing committed: nothing to wait for


def test_cta_sync_releases_all_warps_together():
    s = hand_schedule(("a", 1, [Sleep(cycles=500), CtaSync(), Arrive(barrier="bar", use=0, issuer="one")]),
                      ("b", 3, [CtaSync(), Arrive(barrier="bar", use=0)]), barriers=(("bar", 97),))
    r = replay(s)
    times = {e.who: e.t for e in r.log.of_kind("arrive")}
    assert len(set(times.values())) == 1  # after the sync every warp arrives at the same cycle
    assert min(times.values()) >= 500 + H200.cta_sync_cycles


def test_same_seed_same_log_other_seed_other_timing():
    s = hand_schedule(
        ("prod", 1, INIT + [Sleep(cycles=100), Arrive(barrier="bar", use=0, issuer="one")]),
        ("cons", 4, [CtaSync(), Wait(barrier="bar", parity=0, use=0)]),
    )
    p = Perturbation(seed=7, jitter=0.3, stall_prob=0.5, stall_max=400)
    a, b = replay(s, perturbation=p), replay(s, perturbation=p)
    assert [tuple(e[:5]) for e in a.log] == [tuple(e[:5]) for e in b.log]
    c = replay(s, perturbation=Perturbation(seed=8, jitter=0.3, stall_prob=0.5, stall_max=400))
    assert [e.t for e in a.log] != [e.t for e in c.log]


def test_skew_delays_only_the_named_warp():
    s = hand_schedule(("prod", 1, INIT + [Arrive(barrier="bar", use=0, issuer="one")]),
                      ("cons", 2, [CtaSync(), Wait(barrier="bar", parity=0, use=0)]))
    r = replay(s, perturbation=Perturbation(skew_warp=1, skew_cycles=5000))
    t = {e.who: e.t for e in waits(r)}
    assert t["cons.w0"] < 1000 <= 5000 < t["cons.w1"]


def test_launch_fails_when_shared_memory_does_not_fit():
    s = hand_schedule(("t", 1, [CtaSync()]), buffers=[BufferDecl("huge", "smem", 4, 64 * 1024)])
    v, r = judge(s)
    assert r.trap.kind == "launch_failure"
    assert v.outcome.kind == "fault" and "capacity" in v.kinds()


def test_tmem_on_hopper_is_refused_and_traps_in_the_engine():
    """judge refuses a schedule with ops the arch lacks (an input error, before any replay);
    the engine alone, given one anyway, traps rather than inventing TMEM."""
    import pytest

    from protosim.engine import replay
    from protosim.ir import ScheduleError

    s = hand_schedule(("t", 1, [TmemAlloc(columns=512, issuer="warp0")]),
                      buffers=[BufferDecl("acc", "tmem", 1, columns=128)])
    with pytest.raises(ScheduleError, match="h200 has no tensor memory"):
        judge(s)
    assert replay(s).trap.kind == "unsupported"


def _cp_async_pipeline(wait_n: int):
    """Two cp.async groups (tile 0, tile 1) into two stages, a wait_group, a barrier, and
    every warp reading tile 0 -- with wait_group 1 tile 0 is guaranteed, with 2 nothing is."""
    from protosim.ir import WARP_PART, BufferDecl, CpAsync, CpAsyncCommit, CpAsyncWait, CtaSync, LocalLoad

    ops = [
        CpAsync(bytes=1024, dst=Access("a", 0, "a#0", WARP_PART)), CpAsyncCommit(),
        CpAsync(bytes=1024, dst=Access("a", 1, "a#1", WARP_PART)), CpAsyncCommit(),
        CpAsyncWait(n=wait_n), CtaSync(),
        LocalLoad(bytes=2048, src=Access("a", 0, "a#0")),
    ]
    return hand_schedule(("w", 4, ops), barriers=(), buffers=(BufferDecl("a", "smem", 2, 4096, parts=4),))


def test_cp_async_wait_group_orders_the_copies_it_covers():
    verdict, result = judge(_cp_async_pipeline(1))
    assert verdict.ok
    copies = [e for e in result.log.of_kind("access") if e.data["mode"] == "w" and e.data["stage"] == 0]
    reads = [e for e in result.log.of_kind("access") if e.data["mode"] == "r"]
    assert copies and reads and min(r.data["t0"] for r in reads) >= max(c.data["t1"] for c in copies)


def test_cp_async_wait_allowing_the_group_in_flight_is_a_race():
    verdict, result = judge(_cp_async_pipeline(2))
    assert {"raw_race"} <= {f.kind for f in verdict.findings}
    waits = [e for e in result.log if e.kind == "observe" and e.data.get("how") == "cp_async_wait"]
    assert not waits  # nothing was guaranteed, so nothing was observed
