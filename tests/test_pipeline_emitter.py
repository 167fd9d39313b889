"""The ring emitter (``protosim.pipeline.Pipeline``) and its use counter: uses counted per
barrier whatever the code's parity or stage order, parities flipping at each wrap, a ring it
writes replaying clean, and the same schedule as the hand-written ``Role`` ring."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protosim.ir import Access, Arrive, ArriveExpectTx, MmaCommit, Op, TmaLoad, Wait
from protosim.pipeline import Pipeline, PipelineState, ScheduleBuilder, UseCounter
from protosim.verdict import judge

TILE = 128 * 64 * 2


def test_use_counter_counts_each_barrier_apart():
    u = UseCounter()
    assert (u.count("a"), u.last("a")) == (0, 0)  # a wait before any fill belongs to phase 0
    assert [u.take("a"), u.take("a"), u.take("b"), u.take("a")] == [0, 1, 0, 2]
    assert (u.count("a"), u.last("a"), u.count("b"), u.last("b")) == (3, 2, 1, 0)


def _ring(stages: int, empty: bool = True) -> tuple[Pipeline, list[Op], list[Op]]:
    prod: list[Op] = []
    cons: list[Op] = []
    pipe = Pipeline([f"full[{s}]" for s in range(stages)], [f"empty[{s}]" for s in range(stages)] if empty else (),
                    producer=prod.append, consumer=cons.append)
    return pipe, prod, cons


@given(stages=st.integers(1, 5), steps=st.integers(1, 40))
def test_uses_are_fills_so_far_and_parities_flip_at_each_wrap(stages, steps):
    pipe, prod, cons = _ring(stages)
    put, get = PipelineState.producer_start(stages), PipelineState.consumer_start(stages)
    for _ in range(steps):
        pipe.producer_acquire(put)
        pipe.producer_commit(put, TILE, [(TILE, Access("A", put.index, "x"))])
        pipe.consumer_wait(get)
        pipe.consumer_release(get)
        put, get = put.advance(), get.advance()
    fills: dict[str, int] = {}
    for op in prod:
        if isinstance(op, ArriveExpectTx):
            fills[op.barrier] = fills.get(op.barrier, 0) + 1
    waits = [op for op in cons if isinstance(op, Wait)]
    releases = [op for op in cons if isinstance(op, Arrive)]
    acquires = [op for op in prod if isinstance(op, Wait)]
    for i, (w, r, a) in enumerate(zip(waits, releases, acquires, strict=True)):
        stage, lap = i % stages, i // stages
        assert (w.barrier, w.use, w.parity) == (f"full[{stage}]", lap, lap % 2)  # fill `lap` of the stage
        assert (r.barrier, r.use) == (f"empty[{stage}]", lap)  # the release of that fill
        assert (a.barrier, a.use, a.parity) == (f"empty[{stage}]", lap - 1, (lap - 1) % 2)  # the previous release
    assert sum(fills.values()) == steps
    # every TMA load of a fill carries the fill's use
    tagged = [(op.barrier, op.use) for op in prod if isinstance(op, (TmaLoad, ArriveExpectTx))]
    assert tagged[0::2] == tagged[1::2]


def test_a_restarted_cursor_keeps_counting_the_intent():
    """The reset-per-tile bug: the code's cursor restarts, the uses per barrier do not."""
    pipe, _, cons = _ring(3, empty=False)
    for _tile in range(2):
        at = PipelineState.consumer_start(3)
        for _k in range(2):  # two k-tiles of a three-stage ring: stage 2 is never reached
            pipe.consumer_wait(at)
            at = at.advance()
    assert [(op.barrier, op.parity, op.use) for op in cons] == [
        ("full[0]", 0, 0), ("full[1]", 0, 0), ("full[0]", 0, 1), ("full[1]", 0, 1)]


def test_parity_argument_changes_the_parity_not_the_use():
    pipe, _, cons = _ring(2)
    get = PipelineState.consumer_start(2)
    assert pipe.consumer_wait(get, parity=1) == 0
    assert (cons[0].parity, cons[0].use) == (1, 0)


def test_arrival_forms():
    done: list[Op] = []
    pipe = Pipeline(["mma_bar"], ["free"], producer=done.append, fill="mma_commit", release="mma_commit")
    at = PipelineState.consumer_start(1)
    assert pipe.producer_commit(at, tile=(0, 0), k=0) == 0
    assert pipe.consumer_release(at) == 0
    assert done == [MmaCommit(barrier="mma_bar", use=0, issuer="one", tile=(0, 0), k=0),
                    MmaCommit(barrier="free", use=0, issuer="one")]
    with pytest.raises(TypeError, match="moves no bytes"):
        pipe.producer_commit(at, TILE)


def test_refusals():
    pipe, _, _ = _ring(2, empty=False)
    with pytest.raises(ValueError, match="no empty barriers"):
        pipe.consumer_release(PipelineState.consumer_start(2))
    with pytest.raises(ValueError, match="ring of 3"):
        pipe.consumer_wait(PipelineState.consumer_start(3))
    with pytest.raises(ValueError, match="one of each per stage"):
        Pipeline(["f0", "f1"], ["e0"], producer=print)
    with pytest.raises(ValueError, match="fill"):
        Pipeline(["f0"], producer=print, fill="tx")
    b = ScheduleBuilder("r")
    with pytest.raises(ValueError, match="starts_free"):
        b.pipeline(b.barriers("full", 2), b.barriers("empty", 2), producer=b.role("p", 1))


# --------------------------------------------------------------------------- replayed


def _builder_ring(stages: int, k_tiles: int, with_pipeline: bool, producer_start: bool = True):
    """The README's ring (one TMA warp, one wgmma warpgroup), written with the Pipeline
    emitter or with Role methods."""
    b = ScheduleBuilder("ring", arch="h200")
    full, empty = b.barriers("full", stages), b.barriers("empty", stages, starts_free=True)
    A, B = b.buffer("A", stages=stages, bytes=TILE), b.buffer("B", stages=stages, bytes=TILE)
    mma, producer = b.role("mma", 4), b.role("producer", 1)
    for m, n in b.grid(2):
        mma.init(full, empty)
        b.cta_sync()
        pipe = b.pipeline(full, empty, producer=producer, consumer=mma)
        start = PipelineState.producer_start if producer_start else PipelineState.consumer_start
        put, get = start(stages), PipelineState.consumer_start(stages)
        for k in range(k_tiles):
            b.tag(k=k)
            a, bb = A.at(put, f"A[m={m},k={k}]"), B.at(put, f"B[n={n},k={k}]")
            if with_pipeline:
                pipe.producer_acquire(put)
                pipe.producer_commit(put, 2 * TILE, [(TILE, a), (TILE, bb)])
                pipe.consumer_wait(get)
            else:
                producer.wait(empty, put)
                producer.tma_load(full, put, TILE, a)
                producer.tma_load(full, put, TILE, bb)
                producer.arrive_expect_tx(full, put, bytes=2 * TILE)
                mma.wait(full, get)
            mma.wgmma(128, 128, 64, reads=[A.at(get, f"A[m={m},k={k}]"), B.at(get, f"B[n={n},k={k}]")],
                      accumulate=k > 0)
            mma.wgmma_commit()
            mma.wgmma_wait(0)
            if with_pipeline:
                pipe.consumer_release(get)
            else:
                mma.arrive(empty, get)
            put, get = put.advance(), get.advance()
        b.cta_sync()
    return b.build()


@pytest.mark.parametrize("stages,k_tiles", [(1, 3), (2, 6), (3, 7)])
def test_emitter_ring_is_the_role_ring_and_replays_clean(stages, k_tiles):
    """Counting per barrier and deriving use from the cursor agree on an in-order ring."""
    s = _builder_ring(stages, k_tiles, with_pipeline=True)
    assert s == _builder_ring(stages, k_tiles, with_pipeline=False)
    verdict, _ = judge(s)
    assert verdict.ok and verdict.outcome.kind == "correct", [f.message for f in verdict.findings]


def test_producer_start_is_what_passes_a_fresh_barrier():
    """Started like a consumer, the producer's first acquire asks for a phase no one completes."""
    verdict, _ = judge(_builder_ring(2, 4, with_pipeline=True, producer_start=False))
    assert {"wrong_parity", "deadlock"} <= set(verdict.kinds())
