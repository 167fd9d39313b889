"""A pipelined copy whose mask is off in every lane reads no global memory (``CpAsync.zero_fill``).

Triton's software pipeline issues, inside its k-loop, the copy for k-tile ``k + stages - 1``,
masked with ``k < iterations - (stages - 1)`` (splat into the tile's mask and ``andi``-ed with
the bounds check).  In the last ``stages - 1`` iterations that mask is off in every lane:
``cp.async`` with a source size of 0 writes zeros into shared memory and reads nothing.  The
reader used to charge those copies the L2 bandwidth of a full tile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from protosim.builders.triton_pipeline import PipelineConfig, build
from protosim.engine.machine import replay
from protosim.frontends.ttgir import read
from protosim.ir import CpAsync
from tests.triton_corpus import fixture_copy, replacing

CORPUS = Path(__file__).resolve().parent / "fixtures" / "triton" / "corpus" / "triton-3.6.0"
KERNEL = CORPUS / "mm_ptr_64x128x64_s5_w4.sm90.ttgir"
IN_LOOP_GUARD = "%acc_141 = arith.cmpi slt, %acc_127, %acc_140 : i32"
"""``k < iterations - 4``: the guard splat into both in-loop copies' masks."""


def copies(path: Path, launch: dict | None = None) -> list[CpAsync]:
    schedule, _ = read(path, launch)
    return [op for op in schedule.ctas[0].roles[0] if isinstance(op, CpAsync)]


@pytest.mark.parametrize("k", [256, 1024, 4096])
def test_the_copies_past_the_last_k_tile_are_zero_fills(k):
    got = copies(KERNEL, {"K": k})
    iterations, stages = k // 64, 5
    # two copies (A and B) per k-tile: the prologue's 4 tiles, then one tile per iteration
    assert len(got) == 2 * (stages - 1 + iterations)
    assert [op.zero_fill for op in got] == [False] * 2 * iterations + [True] * 2 * (stages - 1)


def test_a_guard_the_walk_cannot_evaluate_false_keeps_the_copy(tmp_path):
    """Always-true guard (``k < k + 1`` is not what Triton writes; any guard that holds):
    no copy is a zero fill, and every one reads its tile."""
    edited = fixture_copy(tmp_path, KERNEL, replacing([(IN_LOOP_GUARD, IN_LOOP_GUARD.replace("slt", "sge").replace(
        "%acc_127, %acc_140", "%acc_127, %acc_127"))]))
    assert not any(op.zero_fill for op in copies(edited, {"K": 256}))


def test_a_zero_fill_takes_no_l2_bandwidth():
    """The same kernel at K = 256 (4 iterations, 4 tail copies of 5 stages): the tail copies
    no longer occupy the chip's L2 pipe, so the replay is shorter and the pipe less busy."""
    schedule, _ = read(KERNEL, {"K": 256, "M": 1024, "N": 2048, "stride_am": 256, "stride_bk": 2048,
                                "stride_cm": 2048, "ctas": 256})
    with_fill = replay(schedule)
    unfilled = tuple(replace(c, roles=tuple(tuple(replace(op, zero_fill=False) if isinstance(op, CpAsync) else op
                                                 for op in ops) for ops in c.roles)) for c in schedule.ctas)
    as_reads = replay(replace(schedule, ctas=unfilled))
    assert with_fill.stats.l2_busy < 0.6 * as_reads.stats.l2_busy
    assert with_fill.end_cycle < as_reads.end_cycle


def test_the_builder_marks_the_same_copies():
    s = build(PipelineConfig(K=256, num_stages=4))
    ops = [op for op in s.ctas[0].roles[0] if isinstance(op, CpAsync)]
    tiles = 256 // PipelineConfig(K=256, num_stages=4).BLOCK_K
    assert [op.zero_fill for op in ops] == [False] * 2 * tiles + [True] * 2 * 3
