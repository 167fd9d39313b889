"""Cluster protocols with ``protosim.pipeline.ScheduleBuilder``: README's cluster example run from
README.md (correct, its one-line bug edit, the exit cluster barrier dropped), the same ring
written with a ``Pipeline``, the cluster ops each method writes, and bad input refused where it
is written.  docs/api.md "Clusters"; docs/semantics.md "Clusters"."""

from __future__ import annotations

import re

import pytest

from protosim.ir import (
    Access,
    Arrive,
    ArriveExpectTx,
    ClusterArrive,
    ClusterWait,
    ExpectTx,
    Mma,
    MmaCommit,
    ScheduleError,
    TmaLoad,
    from_json,
    to_json,
)
from protosim.pipeline import PipelineState, ScheduleBuilder
from protosim.verdict import explore, judge
from test_pipeline_api import _mask, _readme_example, _run

TILE = 128 * 64 * 2


def _cluster_example() -> tuple[str, list[str], str]:
    blocks, section = _readme_example("A cluster")
    code = [b for lang, b in blocks if lang == "python"]
    printed = [b for lang, b in blocks if lang == "text"]
    assert len(code) == 1 and len(printed) == 2, "the cluster subsection holds one python block and two outputs"
    return code[0], printed, section


def _schedule(code: str):
    """The example's schedule, without its replays."""
    scope: dict = {"__name__": "readme_cluster"}
    exec(compile(code.split("\nverdict, _ = judge(schedule)")[0], "README.md", "exec"), scope)
    return scope["schedule"]


# --------------------------------------------------------------------------- README's cluster example


def test_readme_cluster_example_runs_and_prints_what_readme_says():
    code, printed, _ = _cluster_example()
    assert len(code.splitlines()) <= 40
    assert _mask(_run(code)) == _mask(printed[0]), "README's cluster output block is out of date"


def test_readme_cluster_example_is_a_clean_two_cta_cluster():
    code, _, _ = _cluster_example()
    s = _schedule(code)
    assert s.cluster == 2 and len(s.ctas) == 2
    assert s.barrier("empty[0]").count == 2
    verdict, _ = judge(s)
    assert verdict.ok and verdict.outcome.kind == "correct", [f.message for f in verdict.findings[:3]]
    assert from_json(to_json(s)) == s
    for cta in s.ctas:
        mma, producer = cta.roles
        assert [op.multicast for op in producer if isinstance(op, TmaLoad) and op.dst.buffer == "B"] == [(0, 1)] * 6
        assert [op.dst.part for op in producer if isinstance(op, TmaLoad) and op.dst.buffer == "B"] == [cta.index] * 6
        assert [op.cta for op in mma if isinstance(op, Arrive)] == [0, 1] * 6  # both CTAs' empty barriers
        for ops in cta.roles:  # barrier.cluster after the init and before the exit, in every role
            kinds = [op.kind for op in ops]
            assert kinds.count("cluster_arrive") == kinds.count("cluster_wait") == 2
            assert kinds[-2:] == ["cluster_arrive", "cluster_wait"]


def test_readme_cluster_bug_edit_prints_what_readme_says_and_is_an_arrival_mismatch():
    code, printed, section = _cluster_example()
    edit = re.search(r"Change `(count=CLUSTER)` to `(count=1)`", section)
    assert edit, "the cluster subsection names its one-line bug edit"
    assert code.count(edit[1]) == 1
    bug = code.replace(edit[1], edit[2])
    assert _mask(_run(bug)) == _mask(printed[1]), (
        "the README's output block for its cluster bug edit is out of date: rerun the edited example and paste it")
    verdict, _ = judge(_schedule(bug))
    kinds = set(verdict.kinds())
    assert {"arrival_mismatch", "war_race"} <= kinds
    # the stage written while the peer still reads it: an ordering race at nominal timing; whether
    # the write also overlaps the read in time (war_hazard) depends on when the multicast lands
    reached = explore(_schedule(bug))
    assert any("war_hazard" in c.finding_kinds for c in reached.classes.values())
    mism = [f for f in verdict.findings if f.kind == "arrival_mismatch"]
    assert any("CTA 1" in f.message and "CTA 0's empty" in f.message for f in mism)


def test_dropping_the_exit_cluster_sync_is_peer_exited():
    code, _, section = _cluster_example()
    assert "Drop the last `b.cluster_sync()`" in section
    head, sync, tail = code.rpartition("    b.cluster_sync()")
    for replacement in ("", "    b.cta_sync()"):  # no barrier at all, or only the CTA's own
        verdict, _ = judge(_schedule(head + replacement + tail))
        assert verdict.outcome.kind == "correct" and not verdict.ok
        exited = [f for f in verdict.findings if f.kind == "peer_exited"]
        assert exited and all("CTA 0" in f.message and "CTA 1" in f.message for f in exited)


# --------------------------------------------------------------------------- the same ring with a Pipeline


def ring(release_count: int = 2, exit_sync: bool = True, k_tiles: int = 4, clusters: int = 1):
    """README's cluster ring written with ``ScheduleBuilder.pipeline``: the B load's 4th element
    carries the multicast, ``consumer_release(ranks=...)`` releases every CTA's stage."""
    b = ScheduleBuilder("cluster-pipe", arch="h200", cluster=2)
    full = b.barriers("full", 2)
    empty = b.barriers("empty", 2, count=release_count, starts_free=True)
    A, B = b.buffer("A", stages=2, bytes=TILE), b.buffer("B", stages=2, bytes=TILE, parts=2)
    mma, producer = b.role("mma", 4), b.role("producer", 1)
    for m, n in b.grid(2, clusters):
        mma.init(full, empty)
        b.cluster_sync()
        pipe = b.pipeline(full, empty, producer=producer, consumer=mma)
        put, get = PipelineState.producer_start(2), PipelineState.consumer_start(2)
        for k in range(k_tiles):
            b.tag(k=k)
            a, bb = f"A[m={m},k={k}]", f"B[n={n},k={k}]"
            pipe.producer_acquire(put)
            pipe.producer_commit(put, 2 * TILE, [(TILE, A.at(put, a)),
                                                 (TILE // 2, B.at(put, bb, part=b.rank), "", {"multicast": b.ranks})])
            pipe.consumer_wait(get)
            mma.wgmma(128, 128, 64, reads=[A.at(get, a), B.at(get, bb)], accumulate=k > 0)
            mma.wgmma_commit()
            mma.wgmma_wait(0)
            pipe.consumer_release(get, ranks=b.ranks)
            put, get = put.advance(), get.advance()
        if exit_sync:
            b.cluster_sync()
    return b.build()


def test_the_pipeline_ring_is_clean_over_two_clusters_and_its_bugs_are_found():
    s = ring(clusters=2)
    assert s.cluster == 2 and len(s.ctas) == 4
    verdict, _ = judge(s)
    assert verdict.ok, [f.message for f in verdict.findings[:3]]
    assert {"arrival_mismatch", "war_race"} <= set(judge(ring(release_count=1))[0].kinds())
    assert "peer_exited" in judge(ring(exit_sync=False))[0].kinds()


def test_rank_follows_the_cta_index():
    b = ScheduleBuilder("ranks", cluster=4)
    b.role("r", 1)
    assert b.rank == 0 and b.ranks == (0, 1, 2, 3)
    assert [b.rank for _ in b.grid(4, 2)] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [(b.cta(), b.rank)[1] for _ in range(4)] == [0, 1, 2, 3]


# --------------------------------------------------------------------------- the ops each method writes


def test_each_cluster_method_writes_its_ir_fields():
    b = ScheduleBuilder("ops", arch="b200", cluster=2)
    bar = b.barrier("bar", count=2)
    X = b.buffer("X", bytes=TILE, parts=2)
    acc = b.buffer("acc", space="tmem", columns=128, align=128)
    w = b.role("w", 1)
    s = PipelineState(1)
    for _ in range(2):
        b.cta()
        w.arrive(bar, s, cta=1 - b.rank)
        w.arrive_expect_tx(bar, s, bytes=TILE, cta=0)
        w.expect_tx(bar, s, bytes=TILE, cta=1)
        w.tma_load(bar, s, TILE // 2, X.at(0, "x", part=b.rank), multicast=(0, 1))
        w.tma_load(bar, s, TILE, X.at(0, "y"), barrier_cta=0)
        if b.rank == 0:
            w.mma(256, 128, 64, reads=[X.at(0, "x", cta=r) for r in b.ranks],
                  writes=[acc.at(0, "D", cta=r, columns=(0, 64)) for r in b.ranks], cta_group=2)
            w.commit(bar, s, multicast=b.ranks)
        w.cluster_arrive(relaxed=True)
        w.cluster_wait()
        b.cluster_sync()
    ops = b.build().ctas[0].roles[0]
    assert ops[0] == Arrive(barrier="bar", use=0, cta=1, issuer="one")
    assert ops[1] == ArriveExpectTx(barrier="bar", use=0, bytes=TILE, cta=0, issuer="one")
    assert ops[2] == ExpectTx(barrier="bar", use=0, bytes=TILE, cta=1, issuer="one")
    assert (ops[3].multicast, ops[3].dst.part, ops[4].barrier_cta) == ((0, 1), 0, 0)
    assert isinstance(ops[5], Mma) and ops[5].cta_group == 2
    assert [a.cta for a in ops[5].reads] == [0, 1] and ops[5].writes[1].columns == (0, 64)
    assert ops[6] == MmaCommit(barrier="bar", use=0, multicast=(0, 1), issuer="one")
    assert ops[7:] == (ClusterArrive(relaxed=True), ClusterWait(), ClusterArrive(), ClusterWait())


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("write, words", [
    (lambda w, bar, X, s: w.arrive(bar, s, cta=2), "arrive cta = 2, but the cluster has 2 CTA(s); ranks are 0..1"),
    (lambda w, bar, X, s: w.expect_tx(bar, s, 8, cta=-1), "expect_tx cta = -1"),
    (lambda w, bar, X, s: w.tma_load(bar, s, 8, X.at(0), multicast=(0, 3)), "tma_load multicast = 3"),
    (lambda w, bar, X, s: w.tma_load(bar, s, 8, X.at(0), barrier_cta=5), "tma_load barrier_cta = 5"),
    (lambda w, bar, X, s: w.op(Arrive(barrier="bar[0]", use=0, cta=9)), "arrive cta = 9"),
    (lambda w, bar, X, s: w.wgmma(64, 64, 16, reads=[X.at(0, cta=2)]), "wgmma X access cta = 2"),
])
def test_a_rank_out_of_range_is_refused_where_it_is_written(write, words):
    b = ScheduleBuilder("bad-rank", cluster=2)
    bar, X, w = b.barriers("bar", 1), b.buffer("X", bytes=TILE), b.role("w", 4)
    b.cta()
    with pytest.raises(ScheduleError, match=re.escape(words)):
        write(w, bar, X, PipelineState(1))


def test_without_a_cluster_a_peer_rank_names_the_cluster_parameter():
    b = ScheduleBuilder("no-cluster")
    bar, w = b.barrier("bar"), b.role("w", 1)
    with pytest.raises(ScheduleError, match=re.escape("build with ScheduleBuilder(..., cluster=N)")):
        w.arrive(bar, PipelineState(1), cta=1)


def test_a_grid_not_a_multiple_of_the_cluster_is_refused_naming_the_fix():
    b = ScheduleBuilder("odd", cluster=2)
    w = b.role("w", 1)
    for _ in b.grid(3):
        w.sleep(10)
    with pytest.raises(ScheduleError, match=r"3 CTA\(s\) is not a multiple of cluster=2.*grid of a multiple of 2"):
        b.build()


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_a_bad_cluster_size_is_refused(bad):
    with pytest.raises(ValueError, match="CTAs per cluster, an integer >= 1"):
        ScheduleBuilder("x", cluster=bad)


def test_multicast_and_pair_mistakes_are_refused_naming_the_fix():
    b = ScheduleBuilder("bad-mc", arch="b200", cluster=2)
    bar, X, w = b.barrier("bar"), b.buffer("X", bytes=TILE), b.role("w", 1)
    s = PipelineState(1)
    b.cta()
    with pytest.raises(ValueError, match="leave dst's cta unset"):
        w.tma_load(bar, s, 8, X.at(0, cta=1), multicast=(0, 1))
    with pytest.raises(ValueError, match="names a rank twice"):
        w.tma_load(bar, s, 8, X.at(0), multicast=(1, 1))
    with pytest.raises(ValueError, match="cta_group 1 or 2"):
        w.mma(128, 64, 16, cta_group=4)
    b.cta()  # rank 1
    with pytest.raises(ScheduleError, match=re.escape("issue it only where b.rank % 2 == 0")):
        w.mma(256, 64, 16, reads=[X.at(0, cta=0)], cta_group=2)
