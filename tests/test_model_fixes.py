"""Issue 11, item 4 (model fixes), on hand-written schedules:

1. ``tcgen05.commit`` tracks *every* earlier MMA of its thread, so a second commit in a
   row (empty[s], then acc_full) still tells the epilogue the accumulator is written;
2. (a) an elected lane's arrive releases only that lane's stores: data all 32 lanes
   stored needs a warp sync first (``unreleased_write``); (b) ``tcgen05.commit`` by
   all 32 lanes is 32 commits, 31 of them empty groups that arrive at once;
3. ``Perturbation.tolerate_ub`` runs through the undefined behaviour the H200 was
   recorded to survive (``SILICON_TOLERATED_UB``) instead of trapping.
"""

from __future__ import annotations

import pytest

from conftest import hand_schedule
from protosim.checkers import FINDING_KINDS
from protosim.engine import Perturbation, replay
from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    BufferDecl,
    BulkCommit,
    BulkWait,
    CtaSync,
    ExpectTx,
    Fence,
    LocalLoad,
    MbarInit,
    Mma,
    MmaCommit,
    NamedBarrierSync,
    Sleep,
    SmemStore,
    TmaLoad,
    TmaStore,
    TmemAlloc,
    TmemLoad,
    Wait,
    WaitLd,
    WarpSync,
    dumps,
    loads,
)
from protosim.ptx import mbarrier as mb
from protosim.verdict import judge

# --------------------------------------------------------------------------- 1. commits in a row

MMA_BUFS = [BufferDecl("A", "smem", 1, 16384), BufferDecl("acc", "tmem", 1, columns=128)]
MMA_BARS = (("full", 1), ("empty", 1), ("acc_full", 1), ("other", 1))


def _mma_role(commits: list) -> list:
    """Load A, wait for it, one MMA into acc, then the given commits."""
    return [
        *(MbarInit(barrier=b, issuer="one") for b, _ in MMA_BARS),
        TmemAlloc(columns=512, issuer="warp0"), CtaSync(),
        Arrive(barrier="other", use=0, issuer="one"),  # something unrelated to the MMA
        ArriveExpectTx(barrier="full", use=0, bytes=16384, issuer="one"),
        TmaLoad(barrier="full", use=0, bytes=16384, dst=Access("A", 0, "A0"), issuer="one"),
        Wait(barrier="full", parity=0, use=0),
        Mma(m=128, n=128, k_elems=64, reads=(Access("A", 0, "A0"),), writes=(Access("acc", 0, "c"),), issuer="one",
            tile=(0, 0)),
        *commits,
    ]


def _epilogue(wait_on: str, sleep: int = 0) -> list:
    return [CtaSync(), Wait(barrier=wait_on, parity=0, use=0), *([Sleep(cycles=sleep)] if sleep else []),
            TmemLoad(bytes=128 * 128 * 4 // 4, src=Access("acc", 0, "c"), tile=(0, 0)), WaitLd(tile=(0, 0))]


def _commit_chain(wait_on: str = "acc_full", sleep: int = 0):
    commits = [MmaCommit(barrier="empty", use=0, issuer="one"), MmaCommit(barrier="acc_full", use=0, issuer="one")]
    return hand_schedule(("mma", 1, _mma_role(commits)), ("epi", 1, _epilogue(wait_on, sleep)),
                         barriers=MMA_BARS, buffers=MMA_BUFS, arch="b200")


def test_second_commit_in_a_row_still_covers_the_mma():
    v, r = judge(_commit_chain())
    assert v.ok, [f.message for f in v.findings]
    assert v.outcome.kind == "correct"
    # bounded: the acc_full phase carries one number for the MMA thread, not the MMA's seqs
    (w,) = [e for e in r.log.of_kind("wait") if e.data["barrier"] == "acc_full"]
    mma_seqs = [e.data["seq"] for e in r.log.of_kind("access") if e.data.get("mma") == "mma.w0"]
    assert w.data["seqs"] == () and w.data["upto"] == (("mma.w0", max(mma_seqs)),)


def test_epilogue_waiting_on_nothing_relevant_races():
    # "other" completed before the MMA was even issued; the sleep keeps the read after the
    # MMA in this replay (no hazard), but nothing orders it
    v, _ = judge(_commit_chain(wait_on="other", sleep=5000))
    assert "raw_race" in v.kinds() and "raw_hazard" not in v.kinds()
    (f,) = [f for f in v.findings if f.kind == "raw_race"]
    assert f.who == "epi.w0" and f.evidence["buffer"] == "acc"


def test_commit_covers_mmas_of_earlier_commits_and_not_later_ones():
    """The prefix is per issuing thread and stops at the commit: an MMA issued after the
    commit is not covered by it."""
    mma = Mma(m=128, n=128, k_elems=64, reads=(Access("A", 0, "A0"),), writes=(Access("acc", 0, "c2"),),
              issuer="one", tile=(0, 0))
    role = _mma_role([MmaCommit(barrier="empty", use=0, issuer="one"), MmaCommit(barrier="acc_full", use=0, issuer="one"),
                      mma])
    epi = [CtaSync(), Wait(barrier="acc_full", parity=0, use=0), Sleep(cycles=5000),
           TmemLoad(bytes=4096, src=Access("acc", 0, "c2"), tile=(0, 0)), WaitLd()]
    v, _ = judge(hand_schedule(("mma", 1, role), ("epi", 1, epi), barriers=MMA_BARS, buffers=MMA_BUFS, arch="b200"))
    assert "raw_race" in v.kinds()


# --------------------------------------------------------------------------- 2a. lane-level release

D = [BufferDecl("D", "smem", 1, 4096)]


def _publish(*between, arrive_issuer: str = "one", count: int = 1, consumer_warps: int = 1):
    prod = [MbarInit(barrier="bar", issuer="one"), CtaSync(),
            SmemStore(bytes=4096, dst=Access("D", 0, "d")),  # all 32 lanes store
            *between,
            Arrive(barrier="bar", use=0, issuer=arrive_issuer)]
    cons = [CtaSync(), Wait(barrier="bar", parity=0, use=0), LocalLoad(bytes=4096, src=Access("D", 0, "d"))]
    return hand_schedule(("prod", 1, prod), ("cons", consumer_warps, cons), barriers=(("bar", count),), buffers=D)


@pytest.mark.parametrize("issuer", ["one", "each_warp"])
def test_elected_arrive_after_all_lane_stores_is_unreleased_write(issuer):
    v, r = judge(_publish(arrive_issuer=issuer))
    assert v.kinds() == ["unreleased_write"] and not v.ok
    assert v.outcome.kind == "correct"  # no lane timing in the model: a race-like finding, not a hazard
    (f,) = v.findings
    assert f.who == "cons.w0" and f.evidence["writer"]["who"] == "prod.w0"
    assert f.evidence["arrive"]["barrier"] == "bar"
    assert "prod.w0" in f.message and "bar" in f.message and "__syncwarp()" in f.message
    (a,) = r.log.of_kind("arrive")
    assert a.data["unreleased"]  # the engine says which stores the arrive left out


@pytest.mark.parametrize("sync", [WarpSync(), NamedBarrierSync(barrier_id=1, threads=32)], ids=["syncwarp", "bar.sync"])
def test_a_warp_sync_before_the_elected_arrive_releases_every_lane(sync):
    v, r = judge(_publish(sync))
    assert v.ok, [f.message for f in v.findings]
    assert r.log.of_kind("lane_release")


def test_a_fence_alone_does_not_release_the_other_lanes():
    assert judge(_publish(Fence(fence="proxy_async")))[0].kinds() == ["unreleased_write"]


def test_every_lane_arriving_releases_its_own_stores():
    v, r = judge(_publish(arrive_issuer="all", count=32))
    assert v.ok, [f.message for f in v.findings]
    (w,) = r.log.of_kind("wait")
    assert w.data["seqs"]  # the stores travel with the phase


def test_the_same_lanes_reading_back_their_own_stores_is_not_flagged():
    s = hand_schedule(("t", 1, [SmemStore(bytes=4096, dst=Access("D", 0, "d")),
                                LocalLoad(bytes=4096, src=Access("D", 0, "d"))]), barriers=(), buffers=D)
    assert judge(s)[0].ok


def _tma_store(*between):
    ops = [SmemStore(bytes=4096, dst=Access("D", 0, "d")), Fence(fence="proxy_async"), *between,
           TmaStore(bytes=4096, src=Access("D", 0, "d"), issuer="one"), BulkCommit(issuer="one"),
           BulkWait(n=0, issuer="one")]
    return hand_schedule(("t", 1, ops), barriers=(), buffers=D)


def test_single_lane_tma_store_of_all_lane_stores_needs_a_warp_sync():
    v, _ = judge(_tma_store())
    assert v.kinds() == ["unreleased_write"]
    (f,) = v.findings
    assert "one lane" in f.message and "__syncwarp()" in f.message and "arrive" not in f.evidence
    assert judge(_tma_store(WarpSync()))[0].ok


def test_warp_sync_round_trips_and_costs_time():
    s = _publish(WarpSync())
    assert loads(dumps(s)) == s
    with_sync = replay(s).log.of_kind("arrive")[0].t
    without = replay(_publish()).log.of_kind("arrive")[0].t
    assert with_sync > without


# --------------------------------------------------------------------------- 2b. commit by all lanes


def _commit_by(issuer: str, count: int = 1):
    commits = [MmaCommit(barrier="acc_full", use=0, issuer=issuer)]
    return hand_schedule(("mma", 1, _mma_role(commits)), ("epi", 1, _epilogue("acc_full")),
                         barriers=(("full", 1), ("empty", 1), ("acc_full", count), ("other", 1)),
                         buffers=MMA_BUFS, arch="b200")


@pytest.mark.parametrize("issuer", ["all", "warp0"])
def test_commit_by_all_lanes_is_32_arrivals_that_complete_a_count_1_barrier_early(issuer):
    v, r = judge(_commit_by(issuer))
    assert r.trap is None  # count 1, no bytes: every arrival completes a phase, none underflows
    phases = [e for e in r.log.of_kind("phase") if e.data["barrier"] == "acc_full"]
    mma_done = max(e.data["t1"] for e in r.log.of_kind("access") if e.data.get("mma"))
    assert len(phases) == 32 and sum(p.t < mma_done for p in phases) == 31  # 31 empty groups at once
    assert v.outcome.kind == "wrong" and {"overissue", "raw_hazard", "raw_race"} <= set(v.kinds())
    (f,) = [f for f in v.findings if f.kind == "overissue"]
    assert f.evidence["threads"] == 32 and "empty groups" in f.message


def test_commit_by_all_lanes_underflows_a_phase_that_also_waits_for_bytes():
    """With bytes expected on the barrier, the first empty group takes pending to 0 and
    the second has no arrival left: arrival_underflow, a fault."""
    commits = [ExpectTx(barrier="acc_full", use=0, bytes=1024, issuer="one"),
               MmaCommit(barrier="acc_full", use=0, issuer="all")]
    s = hand_schedule(("mma", 1, _mma_role(commits)), ("epi", 1, _epilogue("acc_full")),
                      barriers=MMA_BARS, buffers=MMA_BUFS, arch="b200")
    v, r = judge(s)
    assert r.trap.kind == "arrival_underflow" and r.trap.target == "acc_full" and v.outcome.kind == "fault"


def test_commit_by_one_lane_is_clean():
    v, _ = judge(_commit_by("one"))
    assert v.ok, [f.message for f in v.findings]


def test_commit_by_all_lanes_on_a_count_32_barrier_completes_with_the_mma():
    """31 empty groups arrive at once, the issuing lane's arrives when the MMA is done: the
    phase completes exactly then, so the epilogue is ordered after the MMA (overissue stays)."""
    v, r = judge(_commit_by("all", count=32))
    assert r.trap is None and v.kinds() == ["overissue"] and v.outcome.kind == "correct"
    arrivals = [e for e in r.log.of_kind("arrive") if e.data["barrier"] == "acc_full"]
    assert sorted(e.data["count"] for e in arrivals) == [1, 31]


# --------------------------------------------------------------------------- 3. tolerated UB

TOLERANT = Perturbation(tolerate_ub=True)
INIT = [MbarInit(barrier="bar", issuer="one"), CtaSync()]


def _tx_overflow(*after):
    return hand_schedule(("t", 1, INIT + [ExpectTx(barrier="bar", use=0, bytes=mb.TX_LIMIT, issuer="one"),
                                          ExpectTx(barrier="bar", use=0, bytes=1, issuer="one"), *after]))


def test_tx_overflow_traps_by_default():
    v, r = judge(_tx_overflow())
    assert r.trap.kind == "tx_out_of_range" and v.outcome.kind == "fault"


def test_tolerated_tx_overflow_is_a_finding_but_no_trap():
    v, r = judge(_tx_overflow(), perturbation=TOLERANT)
    assert r.trap is None and v.outcome.kind == "correct" and not v.ok
    (f,) = [f for f in v.findings if f.kind == "tx_out_of_range"]
    assert f.evidence["tolerated"] and f.evidence["after"]["tx"] == mb.TX_LIMIT + 1
    assert "went on" in f.message and "traps" not in f.message
    (ub,) = r.log.of_kind("ub")
    assert r.barriers[(0, "bar")].tx == mb.TX_LIMIT + 1  # the arithmetic value; the phase stays open
    # a wait for that phase never returns: the outcome is a deadlock, by the usual rules
    v, r = judge(_tx_overflow(Wait(barrier="bar", parity=0, use=0)), perturbation=TOLERANT)
    assert r.trap is None and v.outcome.kind == "deadlock" and "tx_out_of_range" in v.kinds()


def _reinit():
    ops = INIT + [Arrive(barrier="bar", use=0, issuer="one"), Wait(barrier="bar", parity=0, use=0),
                  MbarInit(barrier="bar", issuer="one"),  # live barrier, no inval
                  Arrive(barrier="bar", use=1, issuer="one"),
                  Wait(barrier="bar", parity=1, use=1)]
    return hand_schedule(("t", 1, ops))


def test_reinit_of_a_live_barrier_traps_by_default_and_resets_when_tolerated():
    v, r = judge(_reinit())
    assert r.trap.kind == "reinit_without_inval" and v.outcome.kind == "fault"
    v, r = judge(_reinit(), perturbation=TOLERANT)
    assert r.trap is None and "reinit_without_inval" in v.kinds()
    # the re-init put the barrier back to phase 0 (as on the H200, probe reinit_live): the
    # next arrive completes phase "0" again, and a wait on parity 1 hangs
    assert v.outcome.kind == "deadlock"
    st = r.barriers[(0, "bar")]
    assert (st.completed, st.pending, st.expected, st.tx) == (1, 1, 1, 0)


def test_tolerate_ub_leaves_other_kinds_trapping():
    s = hand_schedule(("t", 1, INIT + [Arrive(barrier="bar", use=0, issuer="one"),
                                       Arrive(barrier="bar", use=0, count=2, issuer="one")]))
    v, r = judge(s, perturbation=TOLERANT)
    assert r.trap.kind == "arrival_underflow" and v.outcome.kind == "fault"


def test_arrive_expect_tx_past_the_range_still_arrives_when_tolerated():
    st = mb.init(mb.MBarrierState(), 1).state
    st = mb.expect_tx(st, mb.TX_LIMIT).state
    step = mb.arrive_expect_tx(st, 1)
    assert step.undefined.kind == "tx_out_of_range" and step.state == st  # untouched, as before
    assert step.undefined.after == mb.MBarrierState(1, 0, mb.TX_LIMIT + 1, 0)


def test_tolerated_kinds_and_description():
    assert mb.SILICON_TOLERATED_UB == {"tx_out_of_range", "reinit_without_inval"}
    assert mb.init(mb.init(mb.MBarrierState(), 1).state, 2).undefined.after == mb.MBarrierState(2, 2, 0, 0)
    assert mb.arrive(mb.MBarrierState(1, 1, 0, 0), 2).undefined.after is None  # traps on silicon
    assert "tolerate_ub" in TOLERANT.describe() and TOLERANT.describe().startswith("nominal")
    assert "tolerate_ub" not in Perturbation().describe()
    assert "unreleased_write" in FINDING_KINDS
