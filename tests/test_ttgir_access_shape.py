"""What a global access costs by its shape, not its bytes.

1. A loop's induction variable carries the program id when its bounds do: the column sum of
   held-out set 3 (``colsum_split_kernel``: program ``(pid_n, pid_m)`` sums rows ``pid_m *
   ROWS_PER_SPLIT ...`` of columns ``pid_n * BLOCK_N ...``) read the same L2 keys in every
   ``pid_m`` while the loop ``range(row_start, row_end, BLOCK_M)`` hid the program id: the model
   had 15 of 16 programs hit in L2 what they read from DRAM on the H200.
2. A warp instruction whose lanes are not contiguous touches more 128-byte lines
   (:mod:`protosim.frontends.ttgir.coalescing`); GPT-J's rotary embedding (held-out set 5,
   ``rope_kernel`` with ``INTERLEAVED``) puts its lanes along the heads, 128 bytes apart.

Expected values are computed from the kernels' sources and launch records, not from the reader."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from protosim.arch import load_profile
from protosim.engine.units.lsu import lsu_cycles
from protosim.frontends.ttgir import read
from protosim.frontends.ttgir.coalescing import coalesced_lines, lines_per_instruction
from protosim.ir import CpAsync, GlobalLoad, GlobalStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
COLSUM = FIXTURES / "heldout3" / "triton-3.6.0" / "h3_colsum_f16_32x256_split16_w4_s3.sm90"
GPTJ = FIXTURES / "heldout5" / "triton-3.6.0" / "h5_rope_gptj_fp16_h32d64.sm90"
NEOX = FIXTURES / "heldout5" / "triton-3.6.0" / "h5_rope_neox_bf16_h32d128.sm90"


def _read(stem: Path, **launch):
    record = json.loads(stem.with_name(stem.name + ".launch.json").read_text())
    return read(stem.with_name(stem.name + ".ttgir"), {**record, **launch})[0]


def _ops(schedule, cta: int, cls):
    return [op for ops in schedule.ctas[cta].roles for op in ops if isinstance(op, cls)]


def test_a_loop_whose_bounds_carry_the_program_id_keys_each_programs_rows_apart():
    gx = json.loads(COLSUM.with_name(COLSUM.name + ".launch.json").read_text())["grid"][0]
    schedule = _read(COLSUM, grid=[gx, 3, 1], ctas=3 * gx)  # three pid_m rows of programs
    # CTA c is (pid_n, pid_m) = (c % gx, c // gx): CTAs 0 and gx read the same columns, other rows
    same_columns = [{op.src for op in _ops(schedule, c, GlobalLoad)} for c in (0, gx, 2 * gx)]
    assert all(len(keys) > 1 for keys in same_columns)
    assert not same_columns[0] & same_columns[1] and not same_columns[1] & same_columns[2]
    # while the loop's n-th read of one program is its own: no two iterations share a key
    assert len(same_columns[0]) == len(_ops(schedule, 0, GlobalLoad))


BLOCKED = "#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, warpsPerCTA = {wpc}, order = {order}}}>"


def _layout(spt, tpw, wpc, order) -> str:
    return BLOCKED.format(spt=list(spt), tpw=list(tpw), wpc=list(wpc), order=list(order))


def test_contiguous_lanes_touch_the_lines_their_bytes_fill():
    # 32 x 64 fp16, 8 elements (16 bytes) a lane along the rows, 8 lanes a row: a warp
    # instruction covers 4 rows x 128 bytes
    rows, cols = np.indices((32, 64))
    offsets = rows * 64 + cols
    layout = _layout([1, 8], [4, 8], [4, 1], [1, 0])
    assert lines_per_instruction(offsets, layout, 2, 16) == 4 == coalesced_lines(16)


def test_lanes_along_the_rows_of_a_matrix_touch_a_line_each():
    # GPT-J: a [heads, pairs] tile, lanes along heads (64 fp16 = 128 bytes apart), 2 warps along pairs
    heads, pairs = np.indices((32, 32))
    offsets = heads * 64 + 2 * pairs
    layout = _layout([1, 1], [32, 1], [1, 2], [0, 1])
    assert lines_per_instruction(offsets, layout, 2, 2) == 32
    # the same tile with the lanes along the pairs: 32 lanes x 4 bytes apart = one line
    along = _layout([1, 1], [1, 32], [2, 1], [1, 0])
    assert lines_per_instruction(offsets, along, 2, 2) == 1


def test_lanes_apart_in_a_row_are_one_run_and_rows_apart_are_not():
    # Triton's unaligned fp32 store: 4 elements a thread kept, one stored at a time -- the lanes 16
    # bytes apart, 4 adjacent lines, one run; the same elements a lane down the rows of a 2 KB-wide
    # matrix: 4 lines 2 KB apart, not a run (a row's stores have the scattered cost)
    flat = np.arange(1024)
    apart = _layout([4], [32], [8], [0])
    assert lines_per_instruction(flat, apart, 4, 4, run=True) == lines_per_instruction(flat, apart, 4, 4) == 4
    rows, cols = np.indices((32, 32))
    down = _layout([1, 4], [32, 1], [1, 8], [1, 0])  # lanes along the rows, 4 elements a thread along a row
    offsets = rows * 512 + cols
    assert lines_per_instruction(offsets, down, 4, 4) == 32
    assert lines_per_instruction(offsets, down, 4, 4, run=True) is None
    # a run with one line skipped still is one (a contiguous run that is not line-aligned touches
    # its first and last lines only partly); two skipped is not
    one = _layout([1], [32], [8], [0])  # element i: lane i % 32, one register
    lane = np.arange(256) % 32
    eight = (np.arange(256) // 32) * 4096 + lane * 8  # fp32 lanes 32 bytes apart: 8 adjacent lines
    assert lines_per_instruction(eight, one, 4, 4, run=True) == 8
    assert lines_per_instruction(np.where(lane < 16, eight, eight + 32), one, 4, 4, run=True) == 8  # one skipped
    assert lines_per_instruction(np.where(lane < 16, eight, eight + 64), one, 4, 4, run=True) is None  # two
    # masked-off lanes are not part of the run (half the lanes off: still 4 adjacent lines)
    assert lines_per_instruction(np.where(lane < 16, eight, -1), one, 4, 4, run=True) == 4


def test_masked_off_lanes_touch_nothing():
    heads, pairs = np.indices((32, 32))
    offsets = np.where(heads < 8, heads * 64 + 2 * pairs, -1)  # 8 of 32 lanes on
    layout = _layout([1, 1], [32, 1], [1, 2], [0, 1])
    assert lines_per_instruction(offsets, layout, 2, 2) == 8
    assert lines_per_instruction(np.full((32, 32), -1), layout, 2, 2) is None


def test_a_layout_the_reader_does_not_map_gives_no_answer():
    offsets = np.arange(64).reshape(8, 8)
    assert lines_per_instruction(offsets, "#ttg.slice<{dim = 0, parent = #blocked}>", 2, 2) is None
    # blocked layouts no compiler makes (found by the input fuzzer): lanes that are not a 32-thread warp,
    # sizes past what the int64 instruction keys hold, a zero size
    for spt, tpw, wpc in (([1, 8], [10**40, 8], [4, 1]), ([1, 8], [8, 8], [4, 1]), ([1, 2**40], [4, 8], [1, 1]),
                          ([0, 8], [4, 8], [4, 1])):
        assert lines_per_instruction(offsets, _layout(spt, tpw, wpc, [1, 0]), 2, 16) is None


def test_gptj_rope_loads_and_stores_are_uncoalesced_and_neox_is_not():
    gptj = _read(GPTJ, ctas=4)
    wide = [op for op in _ops(gptj, 0, GlobalLoad) if op.load_bytes == 2] + _ops(gptj, 0, GlobalStore)
    assert len(wide) == 4 and all(op.lines == 32 for op in wide)  # x1, x2 loads; both stores
    neox = _read(NEOX, ctas=4)
    assert all(op.lines is None for op in _ops(neox, 0, GlobalLoad))
    # a store's lines are stated even when contiguous (contiguous stores have their own cost): as
    # many as its lanes' bytes fill (16-byte lanes: 4), not a line a lane
    assert all(op.lines == max(1, 32 * op.store_bytes // 128) for op in _ops(neox, 0, GlobalStore))


def test_an_uncoalesced_load_holds_the_lsu_a_line_at_a_time():
    # the rule, at a cost per line large enough to show (the profile's own value may be 0: unmeasured)
    arch = dataclasses.replace(load_profile("h200"), l1_line_load_cycles=1.0)
    plain = GlobalLoad(bytes=64 * 32, src="x", load_bytes=2)
    apart = GlobalLoad(bytes=64 * 32, src="x", load_bytes=2, lines=32)
    assert lsu_cycles(apart, arch) == pytest.approx(lsu_cycles(plain, arch) / arch.global_load_subword_issue_cycles
                                                    * 32 * arch.l1_line_load_cycles)


def test_a_malformed_layout_gives_no_answer_rather_than_an_error():
    offsets = np.arange(64).reshape(8, 8)
    assert lines_per_instruction(offsets, _layout([0, 8], [4, 8], [4, 1], [1, 0]), 2, 16) is None
    assert lines_per_instruction(offsets, _layout([1, 8], [4, 8], [4, 1], [1, 1]), 2, 16) is None


# -- loads a thread has out at once (ldg_in_flight, read off the SASS) ---------------------------

def _warp(*ops, l2: str = "inputs"):
    from protosim.ir import CtaProgram, RoleDecl, Schedule

    return Schedule("loads", "h200", (), (), (RoleDecl("w", 1),), (CtaProgram(0, (tuple(ops),)),), l2_at_launch=l2)


def test_loads_issued_one_at_a_time_wait_a_latency_each():
    """8 16-byte loads a lane: all out at once, one latency after their issue; one at a time,
    eight latencies (the last issued long before)."""
    from protosim.engine.machine import replay
    from protosim.ir import GlobalLoadWait

    arch = load_profile("h200")
    tile = dict(bytes=8 * 32 * 16, src="x", load_bytes=16)
    together = replay(_warp(GlobalLoad(**tile), GlobalLoadWait()), arch).end_cycle
    serial = replay(_warp(GlobalLoad(**tile, in_flight=1), GlobalLoadWait()), arch).end_cycle
    pairs = replay(_warp(GlobalLoad(**tile, in_flight=4), GlobalLoadWait()), arch).end_cycle
    issue = lsu_cycles(GlobalLoad(**tile), arch)
    assert together == pytest.approx(issue + arch.global_load_l2_cycles)
    assert serial == pytest.approx(8 * arch.global_load_l2_cycles)
    assert pairs == pytest.approx(2 * arch.global_load_l2_cycles)


SERIAL_SASS = """
        /*0650*/               @P0 LDG.E.128 R24, desc[UR6][R28.64] ;
        /*0660*/                   ISETP.LT.AND.EX P3, PT, R91, R0, !P4, P3 ;
        /*0670*/                   FADD R84, R24, R84 ;
        /*0680*/                   CS2R R24, SRZ ;
        /*0690*/               @P3 LDG.E.128 R24, desc[UR6][R30.64] ;
        /*06a0*/                   FADD R82, R25, R82 ;
"""
BATCHED_SASS = """
        /*0100*/                   LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0110*/                   LDG.E.128 R8, desc[UR6][R2.64+0x4000] ;
        /*0120*/                   LDG.E.128 R12, desc[UR6][R2.64+0x8000] ;
        /*0130*/                   FADD R40, R4, R40 ;
        /*0140*/                   FADD R41, R9, R41 ;
        /*0150*/                   LDG.E.U16 R16, desc[UR6][R2.64+0xc000] ;
        /*0160*/                   HADD2.F32 R42, -RZ, R16.H0_H0 ;
"""


def test_the_sass_says_how_many_loads_a_thread_has_out():
    from kernels.toolchain.sass import loads_in_flight

    assert loads_in_flight(SERIAL_SASS) == 1  # each LDG's register read before the next is issued
    assert loads_in_flight(BATCHED_SASS) == 3  # three out before the first FADD reads R4
    assert loads_in_flight("        /*0000*/                   EXIT ;") is None


def test_the_reader_takes_the_metadatas_loads_in_flight(tmp_path):
    """Held-out set 5's bias gradient: a 64 x 128 bf16 tile a program, 4 warps -- 8 16-byte loads
    a lane -- and its compile's metadata says one at a time."""
    stem = FIXTURES / "heldout5" / "triton-3.6.0" / "h5_bias_grad_bf16_n4096.sm90"
    meta = json.loads(stem.with_name(stem.name + ".json").read_text())
    assert meta["ldg_in_flight"] == 1
    loads = [op for op in _ops(_read(stem, grid=[32, 2, 1], ctas=64), 0, GlobalLoad) if op.load_bytes == 16]
    assert loads and all(op.bytes // (32 * 16) == 8 and op.in_flight == 1 for op in loads)
    # the same TTGIR without the SASS's number: every load out at once
    dst = tmp_path / stem.name
    for ext in (".ttgir", ".launch.json"):
        dst.with_name(dst.name + ext).write_text(stem.with_name(stem.name + ext).read_text())
    dst.with_name(dst.name + ".json").write_text(json.dumps({k: v for k, v in meta.items() if k != "ldg_in_flight"}))
    plain = [op for op in _ops(_read(dst, grid=[32, 2, 1], ctas=64), 0, GlobalLoad) if op.load_bytes == 16]
    assert plain and all(op.in_flight == 0 for op in plain)


def test_a_grid_stride_loop_is_keyed_by_the_tiles_it_visits():
    """Set 1's persistent pointer GEMM walks ``range(pid, num_tiles, num_programs)``: one index space
    all CTAs share, whose tiles' A and B panels repeat between CTAs.  Keyed by the program id (the
    loop's lower bound) the panels were never shared (predicted 0.88 -> 1.90 of its H200 time); each
    CTA walked on its own, the tile coordinates the loop decodes are roots at their current values:
    CTAs 0 and 1, whose first tiles are neighbours, share one of the two panels they first copy."""
    stem = FIXTURES / "heldout" / "triton-3.6.0" / "ho_persist_ptr_4096x4096x1024_128x128x64_w8_s3.sm90"
    schedule = _read(stem, M=512, N=512, stride_bk=512, stride_cm=512, ctas=2)  # 16 tiles, 8 a CTA
    copies = [[op.src for ops in schedule.ctas[c].roles for op in ops if isinstance(op, CpAsync)] for c in (0, 1)]
    first = [set(keys[:2]) for keys in copies]  # the first K step's A and B copies (cp.async: 3 stages)
    assert len(first[0]) == len(first[1]) == 2
    assert len(first[0] & first[1]) == 1
    assert not any("%pid@" in key for key in first[0] | first[1])
