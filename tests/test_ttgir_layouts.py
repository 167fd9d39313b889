"""Data between warps: which ``ttg.convert_layout`` and ``tt.reduce`` statements Triton lowers
through shared memory (docs/triton.md "Layout conversions and reductions across warps").

The element -> warp maps are checked against layouts whose ownership is plain from their
fields; the exchanges the reader emits against Triton's own scratch size in the metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from protosim.frontends.ttgir import read
from protosim.frontends.ttgir.layouts import crosses_warps, parse, warps_holding
from protosim.ir import CtaSync, LocalLoad, RegisterMath, SmemStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
ROWS = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>"
"""64 x 64: warp w holds rows 2w, 2w+1, 2w+8, ... (2 rows a warp, a 8-row tile repeated)."""
ROWS_WIDE = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>"
COLS = "#ttg.blocked<{sizePerThread = [8, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]}>"


def test_a_blocked_layout_gives_each_warp_its_rows():
    held = warps_holding(parse(ROWS, {}), (64, 64))
    for (row, col), warps in held.items():
        assert warps == {row // 2 % 4}, (row, col)


def test_a_tensor_smaller_than_the_layout_is_held_by_every_warp_it_wraps_onto():
    held = warps_holding(parse(ROWS, {}), (2, 64))  # two rows: warps 1-3 repeat warp 0's rows
    assert all(warps == {0, 1, 2, 3} for warps in held.values())


def test_a_slice_is_held_by_every_warp_along_the_removed_dimension():
    held = warps_holding(parse(f"#ttg.slice<{{dim = 0, parent = {ROWS}}}>", {}), (64,))
    assert all(warps == {0, 1, 2, 3} for warps in held.values())


@pytest.mark.parametrize("src, dst, crosses", [(ROWS, ROWS_WIDE, False), (ROWS, COLS, True), (COLS, ROWS, True),
                                               (ROWS, "#ttg.slice<{dim = 1, parent = #blocked9}>", None)])
def test_a_conversion_crosses_warps_when_an_element_changes_hands(src, dst, crosses):
    """Rows to rows with other vector widths stays in each warp (registers and shuffles); rows
    to columns hands almost every element to another warp; a layout not read is None."""
    assert crosses_warps(src, dst, (64, 64), ()) is crosses


def exchanges(schedule) -> list[str]:
    """The kinds of CTA 0's ops in order, keeping only those of an exchange and the math."""
    keep = (SmemStore, LocalLoad, CtaSync, RegisterMath)
    return [type(op).__name__ for ops in schedule.ctas[0].roles for op in ops if isinstance(op, keep)]


def test_a_transpose_goes_through_shared_memory_in_rounds_of_tritons_scratch():
    """``tl.trans`` of a 64 x 64 fp16 tile, stored in a layout whose warps split the other
    dimension: 8 KB through a scratch of Triton's ``shared`` (8,192 B in the metadata) -- one
    round: store, barrier, load.  The scratch is declared at the metadata's size."""
    schedule, _ = read(FIXTURES / "heldout3" / "triton-3.6.0" / "h3_transpose_f16_64x64_w4.sm90.ttgir", {"ctas": 1})
    ops = exchanges(schedule)
    assert ops.count("SmemStore") == ops.count("LocalLoad") == 1
    assert ops.index("SmemStore") < ops.index("CtaSync") < ops.index("LocalLoad")
    scratch = [b for b in schedule.buffers if b.name == "~scratch"]
    assert len(scratch) == 1 and scratch[0].bytes == 8192


def test_a_gemv_exchanges_its_weight_tile_and_its_partial_sums_each_iteration():
    """The held-out GEMV (32 x 256 fp16 weight tiles, 4 warps, K = 8192: 32 iterations)
    converts its weight tile to a layout spreading K over the warps (16 KB through a 4 KB
    scratch: 4 rounds), the vector likewise (512 B, 1 round), and its ``tl.sum`` over K then
    combines the 4 warps' partial sums (1 round) -- 6 a iteration, none outside the loop."""
    schedule, _ = read(FIXTURES / "heldout2" / "triton-3.6.0" / "h2_gemv_b1_8192x8192_32x256_w4.sm90.ttgir",
                       {"ctas": 1})
    assert exchanges(schedule).count("SmemStore") == 32 * 6


def test_an_elementwise_kernel_exchanges_nothing():
    schedule, _ = read(FIXTURES / "heldout2" / "triton-3.6.0" / "h2_bias_gelu_8192x8192_b1024_w4.sm90.ttgir",
                       {"ctas": 1})
    ops = exchanges(schedule)
    assert "SmemStore" not in ops and "CtaSync" not in ops
    assert all(b.name != "~scratch" for b in schedule.buffers)
