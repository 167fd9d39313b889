"""Global memory through registers: ``GlobalLoad`` / ``GlobalLoadWait`` in the engine
(docs/semantics.md "Global loads into registers"), Triton's ``tt.load`` / ``tt.store`` read
from the TTGIR into them, and a wgmma's operand width."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import replay
from protosim.engine.units.lsu import lsu_cycles
from protosim.frontends.ttgir import read
from protosim.frontends.ttgir.registers import lane_width, moved
from protosim.ir import (
    CtaProgram,
    CtaSync,
    GlobalLoad,
    GlobalLoadWait,
    GlobalStore,
    RoleDecl,
    Schedule,
    ScheduleError,
    SmemStore,
    Sleep,
    Wgmma,
    from_json,
    to_json,
    validate,
)
from tests.triton_corpus import fixture_copy, replacing

H200 = load_profile("h200")
CORPUS = Path(__file__).resolve().parent / "fixtures" / "triton" / "corpus" / "triton-3.6.0"
S1 = "mm_ptr_64x64x32_s1_w4.sm90.ttgir"


def warp_program(ops, warps: int = 1, ctas: int = 1, l2: str = "inputs") -> Schedule:
    return Schedule("loads", "h200", (), (), (RoleDecl("w", warps),), tuple(CtaProgram(i, (tuple(ops),)) for i in range(ctas)),
                    l2_at_launch=l2)


def load(n: int = 0, nbytes: int = 4096, width: int = 16) -> GlobalLoad:
    return GlobalLoad(bytes=nbytes, load_bytes=width, src=f"x@{n}")


def run(ops, **kw):
    return replay(warp_program(ops, **kw), H200)


# -- the engine's rule -------------------------------------------------------------------------
def test_a_load_is_paid_where_its_registers_are_used():
    """The warp moves on after issuing; the wait pays the latency the issue left."""
    issue = lsu_cycles(load(), H200)
    r = run([load(), GlobalLoadWait()])
    assert r.end_cycle == pytest.approx(issue + H200.global_load_l2_cycles)
    assert r.stats.stall["w"]["global_load"] == pytest.approx(H200.global_load_l2_cycles)


def test_loads_issued_together_overlap():
    """Two loads before one use wait one latency (and the second's issue), not two."""
    together = run([load(0), load(1), GlobalLoadWait()]).end_cycle
    apart = run([load(0), GlobalLoadWait(), load(1), GlobalLoadWait()]).end_cycle
    issue = lsu_cycles(load(), H200)
    assert together == pytest.approx(2 * issue + H200.global_load_l2_cycles)
    assert apart == pytest.approx(2 * (issue + H200.global_load_l2_cycles))


def test_work_between_a_load_and_its_use_hides_the_latency():
    r = run([load(), Sleep(cycles=2000), GlobalLoadWait()])
    assert "global_load" not in r.stats.stall.get("w", {})
    assert r.end_cycle == pytest.approx(lsu_cycles(load(), H200) + 2000)


def test_a_wait_with_nothing_loading_costs_nothing():
    assert run([GlobalLoadWait()]).end_cycle == 0.0


def test_a_wait_leaves_the_newest_loads_in_flight():
    """pending = 1: wait for the first load only; the second's latency stays hidden."""
    issue = lsu_cycles(load(), H200)
    r = run([load(0), load(1), GlobalLoadWait(pending=1)])
    assert r.end_cycle == pytest.approx(issue + H200.global_load_l2_cycles)
    assert run([load(0), GlobalLoadWait(pending=1)]).end_cycle == pytest.approx(issue)


def test_a_cold_load_waits_for_dram():
    r = run([load(), GlobalLoadWait()], l2="cold")
    assert r.end_cycle == pytest.approx(lsu_cycles(load(), H200) + H200.global_load_dram_cycles)


def test_warps_on_one_sm_share_its_load_unit():
    """Eight warps' 16 KiB loads queue at the SM's load/store unit: the last one's registers
    fill later than one warp's alone, by the others' issue time."""
    big = load(nbytes=16384)
    alone = run([big, GlobalLoadWait()]).end_cycle
    eight = run([big, GlobalLoadWait()], warps=8).end_cycle
    assert eight == pytest.approx(alone + 7 * lsu_cycles(big, H200))


def test_the_issue_cost_is_per_instruction():
    """lsu_cycles: instructions x the wider of issue and bytes; 2-byte loads issue slower."""
    wide, narrow = load(nbytes=4096, width=16), load(nbytes=4096, width=2)
    assert lsu_cycles(wide, H200) == pytest.approx(8 * max(H200.global_load_issue_cycles, 512 / H200.lsu_bytes_per_clk))
    assert lsu_cycles(narrow, H200) == pytest.approx(64 * H200.global_load_subword_issue_cycles)


def test_a_global_load_round_trips_and_is_validated():
    s = warp_program([load(), GlobalLoadWait()])
    assert from_json(to_json(s)) == s
    for bad in (dataclasses.replace(load(), load_bytes=3), dataclasses.replace(load(), src="")):
        with pytest.raises(ScheduleError, match="ld.global"):
            validate(warp_program([bad]))
    with pytest.raises(ScheduleError, match="pending"):
        validate(warp_program([GlobalLoadWait(pending=-1)]))


# -- the TTGIR reader ---------------------------------------------------------------------------
BLOCKED = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"


@pytest.mark.parametrize("text, layouts, want", [
    ("tensor<64x32x!tt.ptr<f16>, #blocked1>", {"#blocked1": BLOCKED}, (4096, 16)),
    ("tensor<64x32x!tt.ptr<f32>, #blocked1>", {"#blocked1": BLOCKED}, (8192, 16)),  # 8 x 4 B, one 16-byte vector
    ("tensor<64x32x!tt.ptr<f8E4M3FN>, #blocked1>", {"#blocked1": BLOCKED}, (2048, 8)),
    ("tensor<128x!tt.ptr<f16>, " + BLOCKED.replace("[1, 8]", "[1, 1]") + ">", {}, (256, 2)),  # an inline layout
    ("!tt.ptr<tensor<128x64xbf16, #b>>", {"#b": BLOCKED}, (16384, 16)),  # a block pointer
    ("tensor<64x64x!tt.ptr<f16>, #mma>", {"#mma": "#ttg.nvidia_mma<{versionMajor = 3}>"}, (8192, 2)),  # not blocked
    ("!tt.ptr<f32>", {}, (4, 4)),  # a scalar
])
def test_what_a_load_or_store_moves(text, layouts, want):
    assert moved(text, layouts) == want


def test_the_lane_width_follows_the_fastest_dimension():
    col_major = BLOCKED.replace("order = [1, 0]", "order = [0, 1]")  # dim 0 is contiguous: 1 element
    assert lane_width(BLOCKED, 2) == 16 and lane_width(col_major, 2) == 2
    assert lane_width(BLOCKED.replace("[1, 8]", "[1, 3]"), 2) == 4  # 6 bytes: the largest power of two below


def ops_of(path: Path) -> list:
    schedule, _ = read(path)
    return list(schedule.ctas[0].roles[0])


def first_load_on(path: Path, n: int = 4) -> list[str]:
    """The kinds of the first ``n`` ops from the kernel's first global load on."""
    ops = ops_of(path)
    first = next(i for i, op in enumerate(ops) if isinstance(op, GlobalLoad))
    return [type(op).__name__ for op in ops[first:first + n]]


def edited(tmp_path: Path, edits: list[tuple[str, str]]) -> Path:
    return fixture_copy(tmp_path, CORPUS / S1, replacing(edits))


def test_a_triton_load_is_waited_for_where_it_is_stored():
    """mm_ptr s1: each k-iteration loads A, stores it to shared memory, loads B, stores it --
    each store waits for its load, the loads are 16-byte (the layout's [1, 8] fp16), and the
    epilogue's tt.store is one 16-byte st.global per 8 elements."""
    ops = ops_of(CORPUS / S1)
    loads = [i for i, op in enumerate(ops) if isinstance(op, GlobalLoad)]
    assert len(loads) == 2 * 512 // 32  # A and B, K / BLOCK_K iterations
    for i in loads:
        after = [op for op in ops[i + 1:i + 4] if not isinstance(op, CtaSync)]  # the membar barrier comes first
        assert isinstance(after[0], GlobalLoadWait) and isinstance(after[1], SmemStore)
        assert ops[i].load_bytes == 16 and ops[i].bytes == 64 * 32 * 2 // 4
    stores = [op for op in ops if isinstance(op, GlobalStore)]
    assert [(s.bytes, s.store_bytes) for s in stores] == [(64 * 64 * 2 // 4, 16)]


def test_a_register_move_of_a_loaded_value_passes_the_wait_on(tmp_path):
    """An op that only moves registers (convert_layout) does not wait; the store of its result
    does.  An op that emits but reads something else (a barrier) does not wait either."""
    path = edited(tmp_path, [
        ("%a_58 = ttg.local_alloc %a_57 :",
         "%a_x = ttg.convert_layout %a_57 : tensor<64x32xf16, #blocked1> -> tensor<64x32xf16, #blocked1>\n"
         "      gpu.barrier\n      %a_58 = ttg.local_alloc %a_x :"),
    ])
    assert first_load_on(path) == ["GlobalLoad", "CtaSync", "GlobalLoadWait", "SmemStore"]


def test_math_on_a_loaded_value_waits_for_it(tmp_path):
    """Register math reads the registers: it waits for the load, the store after it does not."""
    path = edited(tmp_path, [
        ("%a_58 = ttg.local_alloc %a_57 :",
         "%a_x = arith.addf %a_57, %a_57 : tensor<64x32xf16, #blocked1>\n      %a_58 = ttg.local_alloc %a_x :"),
    ])
    assert first_load_on(path) == ["GlobalLoad", "GlobalLoadWait", "RegisterMath", "SmemStore"]


def test_a_load_carried_into_the_next_iteration_is_waited_for_there(tmp_path):
    """Loads whose registers the next iteration stores (a register pipeline): the first
    iteration stores the initial values and waits for nothing; each later one waits, before
    each store, for the load of the iteration before -- leaving its own new loads in flight --
    so the kernel hides the latency the s1 kernel pays."""
    carried = edited(tmp_path, [
        ("%b_ptrs_52 = %b_ptrs_38)", "%b_ptrs_52 = %b_ptrs_38, %pa = %cst_1, %pb = %cst_0)"),
        ("%a_58 = ttg.local_alloc %a_57 :", "%a_58 = ttg.local_alloc %pa :"),
        ("%b_62 = ttg.local_alloc %b_61 :", "%b_62 = ttg.local_alloc %pb :"),
        ("scf.yield %acc_64#0, %a_ptrs_65, %b_ptrs_66 :", "scf.yield %acc_64#0, %a_ptrs_65, %b_ptrs_66, %a_57, %b_61 :"),
    ])
    ops = ops_of(carried)
    iterations = [i for i, op in enumerate(ops) if isinstance(op, GlobalLoad)][::2]
    bodies = [ops[a:b] for a, b in zip(iterations, iterations[1:] + [len(ops)], strict=True)]
    waits = [[op.pending for op in body if isinstance(op, GlobalLoadWait)] for body in bodies]
    # A of the last iteration (B of the last and the new A still out), then B (the new A and B out)
    assert waits[0] == [] and all(w == [2, 2] for w in waits[1:])

    def cycles(path):
        schedule, _ = read(path)
        return replay(dataclasses.replace(schedule, l2_at_launch="inputs"), H200).end_cycle
    assert cycles(carried) < cycles(CORPUS / S1) - (512 // 32 - 1) * H200.global_load_l2_cycles


def test_the_s1_kernel_pays_its_loads(tmp_path):
    """Judged, the s1 kernel's warps stall on global loads: one L2 latency per load, each
    iteration's two loads one after the other (each waited for before the next is issued)."""
    schedule, _ = read(CORPUS / S1)
    _, result = __import__("protosim.verdict", fromlist=["judge"]).judge(dataclasses.replace(schedule, l2_at_launch="inputs"))
    stall = result.stats.stall["warps"]["global_load"]
    loads_per_warp = 2 * 512 // 32
    warps = 4 * len(schedule.ctas)
    # a store's barrier comes before its wait and takes a little of the latency
    assert 0.9 * H200.global_load_l2_cycles < stall / warps / loads_per_warp <= H200.global_load_l2_cycles


# -- wgmma operand width ------------------------------------------------------------------------
def test_fp8_wgmma_covers_twice_the_k_of_f16():
    """m64nNk32 for 1-byte operands: K = 128 of fp8 is the tensor core time of K = 64 of f16."""
    def mma_busy(op):
        return replay(warp_program([op], warps=4), H200).stats.mma_busy
    f16 = Wgmma(m=128, n=128, k_elems=64)
    assert mma_busy(dataclasses.replace(f16, k_elems=128, operand_bytes=1)) == pytest.approx(mma_busy(f16))
    assert mma_busy(dataclasses.replace(f16, k_elems=32, operand_bytes=4)) == pytest.approx(mma_busy(f16))
    with pytest.raises(ScheduleError, match="operand_bytes"):
        validate(warp_program([dataclasses.replace(f16, operand_bytes=3)], warps=4))


def test_the_reader_takes_the_operand_width_from_the_dot():
    schedule, _ = read(CORPUS / "mm_tma_dev_fp8_128x128x128_s3_w8.sm90.ttgir")
    widths = {op.operand_bytes for op in schedule.ctas[0].roles[0] if isinstance(op, Wgmma)}
    assert widths == {1}


def test_a_tensor_smaller_than_a_warp_instruction_moves_its_own_bytes_from_memory(tmp_path):
    """Set 8's NeoX rotary gathers a 64-wide fp32 cos (and sin) row by a loaded position: its
    addresses are not evaluated, and every one of the 4 warps issues a 16-byte-a-lane instruction
    (512 bytes) for the 256-byte row.  What memory serves is the row, a quarter a warp -- not the
    instructions' 2 KB (which made the replay's HBM carry ~1.5x the kernel's traffic)."""
    path = fixture_copy(tmp_path, Path(__file__).resolve().parent / "fixtures" / "triton" / "heldout8" / "triton-3.6.0"
                        / "h8_rope_neox_bf16_16384tok_w4.sm90.ttgir")
    launch = tmp_path / "h8_rope_neox_bf16_16384tok_w4.sm90.launch.json"
    launch.write_text(launch.read_text().replace('"ctas": 16384', '"ctas": 2'))
    ops = ops_of(path)
    rows = [op for op in ops if isinstance(op, GlobalLoad) and op.src.startswith(("cos", "sin"))]
    assert len(rows) == 4
    for op in rows:
        assert op.bytes == 32 * 16  # one full-width instruction a warp
        assert op.memory_bytes * 4 == 64 * 4  # the four warps' shares: the row's 256 bytes
    q = next(op for op in ops if isinstance(op, GlobalLoad) and op.src.startswith("q1"))
    assert q.memory_bytes is None and q.bytes == 32 * 64 * 2 // 4  # a warp's share of the 32 x 64 tile, as moved
