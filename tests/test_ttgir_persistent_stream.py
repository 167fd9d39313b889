"""A persistent kernel with pointer loads runs Triton's software pipeline once per output tile.

Each tile's pipeline issues ``stages - 1`` copies past its last k-tile, masked off in every lane
(zero fills, ``CpAsync.zero_fill``); the next tile's prologue then refills the ring.  The reader's
stream rule pairs a ring buffer's n-th read with the n-th tile copied in: counting the zero
fills as tiles shifted every later tile's reads by ``stages - 1`` copies, and a correct kernel
(checked against torch on the H200) was judged ``wrong`` with a raw_hazard on every CTA's
second tile.  The kernel is ``kernels/triton/heldout.py``'s ``mm_persistent_ptr_kernel``,
written apart from the reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from protosim.frontends.ttgir import read
from protosim.ir import CpAsync
from protosim.verdict import judge
from tests.triton_corpus import fixture_copy, replacing

HELDOUT = Path(__file__).resolve().parent / "fixtures" / "triton" / "heldout" / "triton-3.6.0"
KERNEL = HELDOUT / "ho_persist_ptr_4096x4096x1024_128x128x64_w8_s3.sm90.ttgir"
SMALL = {"M": 512, "N": 512, "K": 256, "stride_am": 256, "stride_bk": 512, "stride_cm": 512, "ctas": 4}
"""16 output tiles on 4 CTAs: each CTA runs the pipeline 4 times, 4 k-tiles each."""
IN_LOOP_WAIT = "ttg.async_wait %a_68, %b_70 {num = 2 : i32}"
"""The k-loop's wait: at most the two newest groups (the next k-tile's A and B) pending."""


def test_each_tile_ends_with_zero_fills_and_the_next_starts_with_real_copies():
    schedule, _ = read(KERNEL, SMALL)
    fills = [op.zero_fill for op in schedule.ctas[0].roles[0] if isinstance(op, CpAsync)]
    stages, k_tiles, tiles = 3, 256 // 64, 4
    per_tile = [False] * 2 * k_tiles + [True] * 2 * (stages - 1)
    assert fills == per_tile * tiles


@pytest.mark.parametrize("launch", [SMALL, dict(SMALL, ctas=1), dict(SMALL, K=1024, stride_am=1024)])
def test_the_correct_persistent_kernel_is_judged_correct(launch):
    verdict, _ = judge(read(KERNEL, launch)[0])
    assert verdict.outcome.kind == "correct", verdict.kinds()


def test_reading_a_stage_before_its_copy_lands_is_still_a_hazard(tmp_path):
    """The same kernel with its k-loop wait loosened to four pending groups: the wgmma reads a
    stage whose copy may not have landed.  The stream rule must still pair the read with that
    copy, so the replay shows the stale read."""
    edited = fixture_copy(tmp_path, KERNEL, replacing([(IN_LOOP_WAIT, IN_LOOP_WAIT.replace("num = 2", "num = 4"))]))
    verdict, _ = judge(read(edited, SMALL)[0])
    assert "raw_hazard" in verdict.kinds() or "raw_race" in verdict.kinds()
