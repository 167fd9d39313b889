"""Checkers on hand-written and seed schedules: each bug class found, no false alarms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import build, hand_schedule
from protosim import checkers
from protosim.arch import interpolate, load_profile
from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    BufferDecl,
    CtaSync,
    Fence,
    MbarInit,
    Mma,
    TmaLoad,
    TmemAlloc,
    Wait,
)
from protosim.verdict import judge

INIT = [MbarInit(barrier="bar", issuer="one"), CtaSync()]
BUFS = [BufferDecl("A", "smem", 1, 16384), BufferDecl("acc", "tmem", 1, columns=128)]


def load(use: int, content: str) -> list:
    """arrive.expect_tx + the TMA load of one 16 KiB tile into A[0] for phase ``use``."""
    return [ArriveExpectTx(barrier="bar", use=use, bytes=16384, issuer="one"),
            TmaLoad(barrier="bar", use=use, bytes=16384, dst=Access("A", 0, content), issuer="one")]


def on_b200(*ops) -> object:
    return judge(hand_schedule(("t", 1, INIT + [TmemAlloc(columns=512, issuer="warp0"), *ops]),
                               buffers=BUFS, arch="b200"))[0]


def mma(content="A0", tile=(0, 0)):
    return Mma(m=128, n=128, k_elems=64, reads=(Access("A", 0, content),), writes=(Access("acc", 0, "c"),),
               issuer="one", tile=tile)


def test_wrong_parity_is_a_wait_that_ran_in_its_own_role():
    """An op index names an op within its role: role b's wait at index 4 returning says
    nothing of role a's op 4, a wrong-parity wait a never reaches (it hangs at op 1)."""
    a = [CtaSync(), Wait(barrier="never", parity=0, use=0), CtaSync(), CtaSync(),
         Wait(barrier="bar", parity=1, use=0)]
    b = [MbarInit(barrier="bar", issuer="one"), MbarInit(barrier="never", issuer="one"), CtaSync(),
         Arrive(barrier="bar", use=0, issuer="one"), Wait(barrier="bar", parity=0, use=0)]
    schedule = hand_schedule(("a", 1, a), ("b", 1, b), barriers=(("bar", 1), ("never", 1)))
    verdict, _ = judge(schedule)
    assert "deadlock" in verdict.kinds()
    assert "wrong_parity" not in verdict.kinds()
    # the same wait in role b, where it runs, is reported, at the cycle it returned
    b_bad = [*b[:4], Wait(barrier="bar", parity=0, use=1)]  # phase 1 named by phase 0's parity: returns at once
    verdict, result = judge(hand_schedule(("a", 1, a[:1]), ("b", 1, b_bad), barriers=(("bar", 1), ("never", 1))))
    found = [f for f in verdict.findings if f.kind == "wrong_parity"]
    returned = [e.t for e in result.log.of_kind("wait") if e.who == "b.w0" and e.op == 4]
    assert len(found) == 1 and found[0].who == "b" and found[0].op == 4
    assert returned and found[0].cycle == min(returned)


def test_overissue_counts_the_issuers_of_one_role_op():
    """Role a's op 2 is a TMA load each of its two warps issues; role b's op 2 a correct
    one-thread load of the same tile: one finding, a's, naming a's two warps only."""
    tma = dict(barrier="bar", use=0, bytes=16384, dst=Access("A", 0, "A0"), tile=(0, 0), k=0)
    a = [MbarInit(barrier="bar", issuer="one"), CtaSync(), TmaLoad(**tma, issuer="each_warp")]
    b = [Fence(), CtaSync(), TmaLoad(**tma, issuer="one")]
    verdict, _ = judge(hand_schedule(("a", 2, a), ("b", 1, b), buffers=BUFS[:1]))
    found = [f for f in verdict.findings if f.kind == "overissue"]
    assert [(f.op, f.evidence["threads"], f.evidence["issuers"]) for f in found] == [(2, 2, ["a.w0", "a.w1"])]


def test_early_return_groups_the_warps_of_one_role_op():
    """Roles a and b each wait at their op 3 on phase 1 of the barrier with phase 0's parity
    (returning at once): two ops, two findings, each naming its own role's warps."""
    early = Wait(barrier="bar", parity=0, use=1)
    a = [MbarInit(barrier="bar", issuer="one"), CtaSync(), Arrive(barrier="bar", use=0, issuer="one"), early]
    b = [Fence(), CtaSync(), Fence(), early]
    verdict, _ = judge(hand_schedule(("a", 2, a), ("b", 1, b), barriers=(("bar", 1),)))
    found = sorted((f.who, f.op, tuple(f.evidence["warps"])) for f in verdict.findings if f.kind == "early_return")
    assert [w for _, _, w in found] == [("a.w0", "a.w1"), ("b.w0",)], found


def test_correct_seed_configs_have_no_findings(small_seed_configs):
    for builder, config in small_seed_configs:
        verdict, _ = judge(build(builder, **config))
        assert verdict.ok, (builder, config, verdict.kinds())


def test_read_before_the_load_lands_is_a_raw_hazard_and_race():
    v = on_b200(*load(0, "A0"), mma(), Wait(barrier="bar", parity=0, use=0))  # no wait before the read
    assert {"raw_hazard", "raw_race"} <= set(v.kinds())
    assert v.outcome.kind == "wrong" and v.outcome.wrong_tiles == ((0, 0),)


def test_waiting_first_makes_the_same_read_clean():
    assert on_b200(*load(0, "A0"), Wait(barrier="bar", parity=0, use=0), mma()).ok


def test_overwriting_a_stage_the_mma_still_reads_is_a_war_race():
    v = on_b200(*load(0, "A0"), Wait(barrier="bar", parity=0, use=0), mma(),
                *load(1, "A1"),  # no wait for the MMA's read before reusing A[0]
                Wait(barrier="bar", parity=1, use=1))
    assert "war_race" in v.kinds()
    # the new load lands ~1000 cycles later, after the MMA's read: a race, not (this time) a hazard
    assert "war_hazard" not in v.kinds() and v.outcome.kind == "correct"


@pytest.mark.parametrize("delta,what", [(-8192, "too few"), (8192, "too many")])
def test_tx_mismatch_both_ways(delta, what):
    s = hand_schedule(("t", 1, INIT + [
        ArriveExpectTx(barrier="bar", use=0, bytes=16384 + delta, issuer="one"),
        TmaLoad(barrier="bar", use=0, bytes=16384, dst=Access("A", 0, "A0"), issuer="one"),
        Wait(barrier="bar", parity=0, use=0),
    ]), buffers=BUFS[:1])
    v, _ = judge(s)
    (f,) = [f for f in v.findings if f.kind == "tx_mismatch" and "expects" in f.message]
    assert what in f.message and f.evidence["expected_bytes"] == 16384 + delta
    # one load: too many leaves tx > 0, too few drives it below 0 -- never back to zero
    assert v.outcome.kind == "deadlock"


def test_four_issuers_are_overissue():
    v, _ = judge(build("hgemm_v4", K=64, tma_issuer="each_warp"))
    (f, *_) = [f for f in v.findings if f.kind == "overissue"]
    assert f.evidence["threads"] == 4 and len(f.evidence["issuers"]) == 4


def test_early_return_groups_warps_and_names_the_late_producer():
    v, r = judge(build("hgemm_v2", K=256, skip_mma_phase_flip=True))
    (f, *_) = [f for f in v.findings if f.kind == "early_return"]
    assert f.evidence["warps"] == ["mma.w0", "mma.w1", "mma.w2", "mma.w3"]
    assert f.evidence["use"] == 1 and f.evidence["parity"] == 0 and f.evidence["satisfied_by_phase"] == 0
    assert max(f.evidence["producer_times"]) > f.evidence["returned"]


def test_a_failing_checker_makes_the_verdict_incomplete(monkeypatch):
    def broken(result):
        raise RuntimeError("boom")

    monkeypatch.setitem(checkers.CHECKERS, "broken", broken)
    v, _ = judge(build("hgemm_v1"))
    assert not v.ok and v.kinds() == ["incomplete"]


@pytest.mark.parametrize("arch", ["b200", "h200"])
def test_cycles_are_plausible(small_seed_configs, arch):
    """Within bounds from arithmetic alone: the tensor-core time of one CTA's tiles plus one
    DRAM load at least; a fully serialised load-then-MMA schedule (x4 slack) at most."""
    a = load_profile(arch)
    for builder, config in small_seed_configs:
        if config["arch"] != arch:
            continue
        v, r = judge(build(builder, **config))
        s = r.schedule
        k_tiles = config.get("K", 64) // 64
        occ, _ = a.mma_cycles(128, 128, 64)
        tiles_per_cta = -(-(config.get("M", 128) // 128) * (config.get("N", 128) // 128) // len(s.ctas))
        dram = interpolate(a.tma_dram_latency, 32768)
        lower = tiles_per_cta * k_tiles * occ + interpolate(a.tma_dram_latency, 16384) / 2
        per_k = dram + occ + a.mma_tail_cycles + 4 * a.wake_cycles + 2000  # 2000: thread copies, syncs, issue
        upper = 4 * (tiles_per_cta * (k_tiles * per_k + 5000))
        assert lower <= v.timing.cycles <= upper, (builder, config, lower, v.timing.cycles, upper)


def test_the_ring_overlaps_loads_with_mmas():
    for arch in ("b200", "h200"):
        v4, _ = judge(build("hgemm_v4", K=2048, arch=arch))
        v5, _ = judge(build("hgemm_v5", K=2048, arch=arch, PIPE_DEPTH=3))
        assert v5.timing.cycles < 0.8 * v4.timing.cycles, arch


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 40), st.integers(0, 30)), max_size=30),
       st.sampled_from("ab"), st.integers(0, 80))
def test_hazards_find_the_last_landed_write_as_the_definition_says(writes, content, r0):
    """``_PartWrites.last_landed`` (a bisection on issue cycles, then a walk back over writes in
    flight) is "the last-issued write of that content that landed by r0", whatever the writes."""
    from protosim.checkers.hazards import _PartWrites

    class W:  # what _PartWrites reads of a write
        def __init__(self, c, issued, span):
            self.content, self.issued, self.t0, self.t1 = c, issued, issued, issued + span

    ws = sorted((W(c, i, d) for c, i, d in writes), key=lambda w: w.issued)  # issue order
    landed = [i for i, w in enumerate(ws) if w.content == content and w.t1 <= r0]
    assert _PartWrites(ws).last_landed(content, r0) == (landed[-1] if landed else None)
