"""Which bytes a ``tt.load`` / ``tt.store`` moves (``protosim.frontends.ttgir.values``): the
distinct, unmasked elements its lanes address, evaluated from the statements that compute its
pointers and mask (docs/triton.md "Which bytes a load moves").  Expected counts are computed
here from the kernels' sources."""

from __future__ import annotations

from pathlib import Path

from protosim.frontends.ttgir import read
from protosim.ir import GlobalLoad, GlobalStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"


def memory(schedule, cls) -> list[tuple[int, int | None]]:
    """(bytes, memory_bytes) of CTA 0's loads or stores, in order."""
    return [(op.bytes, op.memory_bytes) for ops in schedule.ctas[0].roles for op in ops if isinstance(op, cls)]


def test_a_table_read_by_every_row_of_one_token_is_read_once():
    """RoPE over rows = (token, head) pairs, BLOCK_R = 32 rows a program and H = 32 heads: a
    program's rows are one token's, so ``cos[tok, d]`` and ``sin[tok, d]`` (fp32, HEAD_DIM / 2 =
    64 wide) name 64 distinct floats each, 32 times over -- 256 bytes, not 8 KB."""
    schedule, _ = read(FIXTURES / "heldout3" / "triton-3.6.0" / "h3_rope_d128_r32_w4.sm90.ttgir", {"ctas": 1})
    loads = memory(schedule, GlobalLoad)
    warps = 4
    x1, x2, cos, sin = loads
    assert x1[1] is None and x2[1] is None  # x: every lane its own element
    assert cos == (32 * 64 * 4 // warps, 64 * 4 // warps) and sin == cos


def test_masked_off_lanes_move_nothing():
    """Layer norm of 5120-wide bf16 rows with an 8192-wide block: 3072 lanes masked off, so the
    loads and the store move 5120 / 8192 of the block's bytes."""
    schedule, _ = read(FIXTURES / "heldout2" / "triton-3.6.0" / "h2_layernorm_bf16_16384x5120_w8.sm90.ttgir",
                       {"ctas": 1})
    for nbytes, mem in memory(schedule, GlobalLoad) + memory(schedule, GlobalStore):
        assert mem == nbytes * 5120 // 8192


def test_a_plain_stream_keeps_its_bytes():
    schedule, _ = read(FIXTURES / "heldout2" / "triton-3.6.0" / "h2_bias_gelu_8192x8192_b1024_w4.sm90.ttgir",
                       {"ctas": 1})
    assert all(mem is None for _, mem in memory(schedule, GlobalLoad) + memory(schedule, GlobalStore))


def test_an_edited_range_is_not_built(tmp_path):
    """A ``tt.make_range`` longer than its type (an input edited past what a compiler emits) is
    not evaluated -- never allocated: ``end = 2^31 - 1`` once made a pytest worker allocate 23 GB."""
    from protosim.frontends.ttgir import TtgirError

    src = FIXTURES / "heldout2" / "triton-3.6.0" / "h2_bias_gelu_8192x8192_b1024_w4.sm90"
    text = src.with_name(src.name + ".ttgir").read_text()
    assert "{end = 1024 : i32, start = 0 : i32}" in text
    dst = tmp_path / "edited.sm90"
    dst.with_name(dst.name + ".ttgir").write_text(text.replace("{end = 1024 : i32, start = 0 : i32}",
                                                               "{end = 2147483647 : i32, start = 0 : i32}"))
    for ext in (".json", ".launch.json"):
        dst.with_name(dst.name + ext).write_text(src.with_name(src.name + ext).read_text())
    try:
        schedule, _ = read(dst.with_name(dst.name + ".ttgir"), {"ctas": 1})
    except TtgirError:
        return  # refused with a message: as good
    assert all(mem is None for _, mem in memory(schedule, GlobalLoad) + memory(schedule, GlobalStore))


def test_a_mask_splat_from_a_scalar_i1_masks_lanes_not_indexes_them():
    """``tt.splat %pred : i1`` (a pipelined copy's predicate) evaluates as integers; the lanes it
    turns on are the non-zero ones.  Taken as an index array it once picked row 1 of a 32 x 128
    tile 4096 times over (128 distinct elements, a 512k-element array per copy)."""
    from protosim.frontends.ttgir.text import Stmt
    from protosim.frontends.ttgir.values import addresses

    L = "#blocked"
    defined = {
        "%r": Stmt(1, ["%r"], "tt.make_range", f"{{end = 4096 : i32, start = 0 : i32}} : tensor<4096xi32, {L}>"),
        "%p": Stmt(2, ["%p"], "tt.splat", f"%x_ptr : !tt.ptr<f16> -> tensor<4096x!tt.ptr<f16>, {L}>"),
        "%q": Stmt(3, ["%q"], "tt.addptr", f"%p, %r : tensor<4096x!tt.ptr<f16>, {L}>, tensor<4096xi32, {L}>"),
        "%m": Stmt(4, ["%m"], "tt.splat", f"%pred : i1 -> tensor<4096xi1, {L}>"),
    }
    on = addresses("%q", "%m", defined, {"%pred": 1}.get)
    off = addresses("%q", "%m", defined, {"%pred": 0}.get)
    assert on[0] == "%x_ptr" and on[1].size == 4096 and on[2] == 4096
    assert off[1].size == 0
