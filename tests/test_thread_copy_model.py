"""Thread copies timed from their instruction stream, register-bound occupancy, and a read that
hits a fill still in flight (docs/semantics.md "Thread copies", "Registers", "A hit on a fill in
flight")."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.builders.gemm_cta import SEED
from protosim.config import GemmConfig
from protosim.engine.machine import Machine, regs_per_cta, replay
from protosim.engine.resources import MemorySystem
from protosim.engine.units.lsu import copy_rounds
from protosim.ptxas import ELEMENTWISE_ROUNDS, copy_in_flight, with_copy_streams
from protosim.ir import (
    Access,
    BufferDecl,
    CtaProgram,
    RoleDecl,
    Schedule,
    ScheduleError,
    ThreadCopy,
    from_json,
    to_json,
    validate,
)

H200 = load_profile("h200")


def copy_schedule(*ops: ThreadCopy, regs: int = 0, warps: int = 1, ctas: int = 1, l2: str = "inputs") -> Schedule:
    return Schedule("copy", "h200", (), (BufferDecl("A", "smem", bytes=16384, parts=4),), (RoleDecl("w", warps),),
                    tuple(CtaProgram(i, (tuple(ops),)) for i in range(ctas)), l2_at_launch=l2, regs_per_thread=regs)


def copy(nbytes: int = 1024, **kw) -> ThreadCopy:
    return ThreadCopy(bytes=nbytes, dst=Access("A", 0, "A[0]", part=0), src="A[0]", **kw)


# -- copy_rounds: the rule ------------------------------------------------------------

@pytest.mark.parametrize("nbytes, width, in_flight, rounds", [
    (4096, 2, 0, 1.0),     # no limit stated: every load out at once
    (4096, 2, 16, 4.0),    # 64 loads per lane, 16 at a time
    (4096, 2, 9, 64 / 9),  # fractional: the last round is partly filled
    (512, 2, 16, 1.0),     # 8 loads, fewer than the window: still one latency
    (4096, 16, 4, 2.0),    # 8 vector loads, 4 at a time
])
def test_copy_rounds(nbytes, width, in_flight, rounds):
    assert copy_rounds(copy(nbytes, load_bytes=width, in_flight=in_flight)) == pytest.approx(rounds)


def test_a_windowed_copy_waits_its_rounds_of_latency():
    """One warp alone (no queueing): the copy ends ``rounds`` L2-hit latencies (and the shared
    store's latency) after it starts; with no window it ends one latency after its 64 loads
    and stores have passed the SM's load/store unit."""
    plain = replay(copy_schedule(copy(4096, load_bytes=2)))
    windowed = replay(copy_schedule(copy(4096, load_bytes=2, in_flight=8)))
    lat, smem = H200.global_load_l2_cycles, H200.smem_latency
    lsu = 64 * (H200.global_load_subword_issue_cycles + H200.copy_store_issue_cycles)
    assert plain.end_cycle == pytest.approx(lsu + lat + smem)
    assert windowed.end_cycle == pytest.approx(8 * lat + smem)
    assert windowed.end_cycle > plain.end_cycle


def test_a_copy_from_dram_waits_the_dram_latency_per_round():
    cold = replay(copy_schedule(copy(4096, load_bytes=2, in_flight=8), l2="cold"))
    assert cold.end_cycle == pytest.approx(8 * H200.global_load_dram_cycles + H200.smem_latency)


# -- co-resident copies share the SM's load/store unit -----------------------------------------

LOAD_WINDOW = (Path(__file__).resolve().parent.parent / "results" / "silicon" / "microbench"
               / "2026-12-01_h200_a56b4b7_load_window.jsonl")


def window_rounds(window: int, ctas: int, loads: int = 256) -> Schedule:
    """kernels/microbench/load_window.cu's ``_each`` kernels: four warps per CTA, each ``loads``
    2-byte loads in rounds of ``window``, every value stored to shared memory.  With ``share`` 1
    (every row here) each warp reads chunks of its own; here a tile key per CTA and round (a role's
    warps run the same ops, so its four warps name one key: replay with :data:`NO_SHARING`)."""
    def own(cta: int) -> tuple[ThreadCopy, ...]:
        return tuple(ThreadCopy(bytes=32 * window * 2, dst=Access("A", 0, "A[0]", part=0), src=f"buf[{cta}.{r}]",
                                load_bytes=2, in_flight=window) for r in range(loads // window))

    return Schedule("copy", "h200", (), (BufferDecl("A", "smem", bytes=16384, parts=4),), (RoleDecl("w", 4),),
                    tuple(CtaProgram(i, (own(i),)) for i in range(ctas)), l2_at_launch="inputs")


NO_SHARING = dataclasses.replace(H200, l2_merge_window_cycles=0.0)
"""The H200 without shared reads in flight: the kernel's warps read distinct chunks, which
:func:`window_rounds`'s one key per CTA and round cannot say warp by warp."""


def test_a_copy_holds_the_lsu_per_instruction():
    """64 two-byte loads per lane: 64 warp loads and 64 shared stores on the SM's load/store
    unit; a second CTA's copy on the same SM queues behind them (one latency later at most)."""
    op = copy(4096, load_bytes=2, in_flight=64)
    per_warp = 64 * (H200.global_load_subword_issue_cycles + H200.copy_store_issue_cycles)
    one = replay(copy_schedule(op, ctas=1))
    lat, smem = H200.global_load_l2_cycles, H200.smem_latency
    assert one.end_cycle == pytest.approx(per_warp + lat + smem)
    wide = replay(copy_schedule(copy(4096, load_bytes=16, in_flight=8), ctas=1))
    # 8 sixteen-byte loads per lane: 512 bytes each at the SM's byte rate outweigh their issue
    assert wide.end_cycle == pytest.approx(8 * (512 / H200.lsu_bytes_per_clk + H200.copy_store_issue_cycles) + lat + smem)


@pytest.mark.parametrize("row", [r for r in (json.loads(x) for x in LOAD_WINDOW.read_text().splitlines())
                                 if r["kernel"] in ("w16_b2_nc_each", "w32_b2_nc_each")],
                         ids=lambda r: f"{r['kernel']}-{r['ctas_per_sm_asked']}-per-sm")
def test_co_resident_copies_against_the_h200(row):
    """The load_window microbenchmark's copy rows (1 to 16 CTAs per SM, 64 to 2,048 loads in
    flight per SM): kernel-only time within 16% (results/silicon/microbench/2026-12-01_h200_load_window.md);
    where the SM is saturated, its load rate within 10%."""
    s = window_rounds(row["window"], row["grid"])
    end = replay(s, NO_SHARING).end_cycle
    measured = row["kernel_ms"]["median"] * 1e3
    assert H200.cycles_to_us(end) + H200.launch_fixed_us == pytest.approx(measured, rel=0.16)
    if row["ctas_per_sm_asked"] >= 8:
        rate = row["ctas_per_sm_asked"] * 4 * 256 / end
        assert rate == pytest.approx(row["warp_loads_per_clk_per_sm"], rel=0.10)


# -- the stream rule (protosim.ptxas) ------------------------------------------------------

def test_copy_in_flight_by_width():
    assert copy_in_flight(128, 2) == 16 and copy_in_flight(72, 2) == 9 and copy_in_flight(3, 2) == 1
    assert copy_in_flight(16, 16) == 16  # vector loads: all issued before the first store


def test_a_run_of_copies_is_one_stream_and_other_ops_end_it():
    from protosim.ir import Fence

    a, b = copy(8192, load_bytes=2), copy(1024, load_bytes=2)  # 128 + 16 loads per lane
    ops = with_copy_streams((a, b, Fence(fence="proxy_async"), b))
    assert [op.in_flight for op in ops if isinstance(op, ThreadCopy)] == [18, 18, 2]
    stated = copy(8192, load_bytes=2, in_flight=5)
    assert with_copy_streams((stated, b))[0].in_flight == 5  # a stated window is kept
    wide = copy(8192, load_bytes=16)
    assert [op.in_flight for op in with_copy_streams((a, wide))] == [16, 16]  # a width change splits the run


# -- registers --------------------------------------------------------------------------

def test_registers_bound_the_ctas_per_sm():
    free = Machine(copy_schedule(copy(), warps=4)).occupancy()
    bound = Machine(copy_schedule(copy(), warps=4, regs=168)).occupancy()
    # 168 registers x 32 lanes = 5376 per warp (a multiple of 256), x 4 warps = 21504: 3 fit in 64K
    assert regs_per_cta(copy_schedule(copy(), warps=4, regs=168), H200) == 21504
    assert bound == 3 < free


def test_the_allocation_unit_rounds_each_warp_up():
    s = copy_schedule(copy(), warps=4, regs=161)  # 5152 per warp -> 5376
    assert regs_per_cta(s, H200) == 4 * 5376


def test_a_cta_whose_registers_do_not_fit_fails_to_launch():
    s = copy_schedule(copy(), warps=32, regs=255)  # 1024 threads x 255 registers > 64K
    r = replay(s)
    assert r.trap is not None and r.trap.kind == "launch_failure"
    assert "registers" in r.trap.detail and r.ctas_launched == 0


@pytest.mark.parametrize("regs", [-1, 256, True, 1.5])
def test_regs_per_thread_out_of_range_is_refused(regs):
    with pytest.raises(ScheduleError, match="regs_per_thread"):
        validate(copy_schedule(copy(), regs=regs))


@pytest.mark.parametrize("width", [0, 3, 32])
def test_a_load_width_ptx_has_not_is_refused(width):
    with pytest.raises(ScheduleError, match="load_bytes"):
        validate(copy_schedule(copy(load_bytes=width)))


def test_the_new_fields_survive_json_and_default_fields_stay_out():
    s = copy_schedule(copy(4096, load_bytes=2, in_flight=9), regs=96)
    d = to_json(s)
    assert d["regs_per_thread"] == 96
    back = from_json(d)
    assert back.regs_per_thread == 96 and back.ctas[0].roles[0][0] == s.ctas[0].roles[0][0]
    plain = to_json(copy_schedule(copy()))
    assert "regs_per_thread" not in plain
    assert "load_bytes" not in plain["ctas"][0]["roles"][0][0] and "in_flight" not in plain["ctas"][0]["roles"][0][0]


# -- a hit on a fill in flight -----------------------------------------------------------

def test_a_hit_on_a_fill_in_flight_waits_for_the_fill():
    mem = MemorySystem(H200)
    hit, _ = mem.read(0.0, "A[0]", 4096)
    assert not hit
    mem.filling("A[0]", 1000.0)
    hit, ready = mem.read(10.0, "A[0]", 4096)
    assert hit and ready == 1000.0
    hit, ready = mem.read(2000.0, "A[0]", 4096)  # after the fill: an ordinary hit
    assert hit and ready < 2100.0


def test_ctas_reading_one_cold_tile_together_all_wait_for_dram():
    """Two CTAs on two SMs copy the same cold tile at once: the second read hits L2, but its
    data is the first one's fill -- it cannot finish before the DRAM latency."""
    op = copy(4096, load_bytes=2, in_flight=8)
    r = replay(copy_schedule(op, ctas=2, l2="cold"))
    ends = sorted(e.t1 for e in r.log.of_kind("access"))
    assert ends[0] >= 8 * H200.global_load_dram_cycles
    assert ends[1] >= ends[0] - 1e-9


# -- the builders state what the kernels compiled to ----------------------------------------

@pytest.mark.parametrize("bn", [16, 32, 64, 128])
def test_the_hopper_thread_copy_builder_states_its_copy_and_registers(bn):
    s = BUILDERS["hgemm_v3"](GemmConfig(M=256, N=256, K=256, BLK_N=bn, arch="h200"))
    copies = [op for op in s.ctas[0].roles[0] if isinstance(op, ThreadCopy)]
    loads = (128 + bn) * 64 * 2 // (128 * 2)  # one lane's 2-byte loads of A and B per k-tile
    assert {op.load_bytes for op in copies} == {2}
    assert {op.in_flight for op in copies} == {-(-loads // ELEMENTWISE_ROUNDS)}
    # A and B are one stream: together they take ~8 load latencies (the last round partly filled)
    assert ELEMENTWISE_ROUNDS <= sum(copy_rounds(op) for op in copies[:2]) < ELEMENTWISE_ROUNDS + 2
    assert s.regs_per_thread == bn + 32


def test_the_seed_thread_copy_is_one_round_of_vector_loads():
    s = BUILDERS["hgemm_v3"](GemmConfig(M=256, N=256, K=256, arch="b200"))
    copies = [op for op in s.ctas[0].roles[0] if isinstance(op, ThreadCopy)]
    assert {(op.load_bytes, copy_rounds(op)) for op in copies} == {(16, 1.0)}
    assert s.regs_per_thread == 128 + SEED.copy_regs_extra


def test_the_tma_steps_state_no_registers():
    s = BUILDERS["hgemm_v4"](GemmConfig(M=256, N=256, K=256, arch="h200"))
    assert s.regs_per_thread == 0


# -- ... and, where the tools are here, that is what ptxas produced --------------------------

def _tools_or_skip():
    from kernels.toolchain.sass import find_cuobjdump

    tool = find_cuobjdump()
    if tool is None or shutil.which("nvcc") is None:
        pytest.skip("needs nvcc and cuobjdump (CUDA toolkit, or the triton wheel's copy): the SASS cannot be read here")
    pytest.importorskip("tvm", reason="building the kernel needs apache-tvm (make test installs it)")
    return tool


@pytest.mark.slow
@pytest.mark.parametrize("bn", [16, 128])
def test_the_builder_matches_the_compiled_hopper_kernel(bn, tmp_path):
    """Build the v3 kernel as the GPU runs it (kernels.toolchain.build: TVM's own ptxas options),
    read its SASS from the bundle's manifest: the builder's registers give the same CTAs per SM as
    ptxas's, and the builder's rule for the copy (:data:`ELEMENTWISE_ROUNDS` latencies) is within
    15% of the stream's own at 4096^3 (the builds read: 6.6-7.7 rounds of 425 cycles)."""
    _tools_or_skip()
    cfg = {"M": 4096, "N": 4096, "K": 4096, "BLK_N": bn, "arch": "h200"}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"spec": {"step": "v3", "config": cfg}}]))
    out = subprocess.run([sys.executable, "-m", "kernels.toolchain.build", "--plan-file", str(plan), "--cache", str(tmp_path / "c"),
                          "--bundle", str(tmp_path / "b")], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True,
                         timeout=1800, env={**os.environ})
    assert out.returncode == 0, out.stderr[-2000:]
    stream = json.loads((tmp_path / "b" / "manifest.json").read_text())[0]["copy_stream"]
    schedule = BUILDERS["hgemm_v3"](GemmConfig(**cfg))
    assert stream["load_bytes"] == 2 and stream["loads"] == (128 + bn) // 2 and stream["scoreboards"]
    rounds = stream["cycles"] / H200.global_load_l2_cycles
    assert abs(rounds / ELEMENTWISE_ROUNDS - 1) <= 0.15, stream
    built = Machine(schedule).occupancy()
    compiled = Machine(dataclasses.replace(schedule, regs_per_thread=stream["regs_per_thread"])).occupancy()
    assert built == compiled


def test_sass_reader_on_a_listing():
    """The stream reader on a hand-written listing: two loads ahead, stores wait for them."""
    from kernels.toolchain.sass import copy_ops, issue_time, max_in_flight

    listing = "\n".join([
        "        /*0000*/   LDG.E.U16.CONSTANT R2, desc[UR4][R8.64] ;",
        "        /*0010*/   LDG.E.U16.CONSTANT R3, desc[UR4][R8.64+0x100] ;",
        "        /*0020*/   STS.U16 [R10], R2 ;",
        "        /*0030*/   LDG.E.U16.CONSTANT R2, desc[UR4][R8.64+0x200] ;",
        "        /*0040*/   STS.U16 [R10+0x100], R3 ;",
        "        /*0050*/   STS.U16 [R10+0x200], R2 ;",
        "        /*0060*/   MEMBAR.ALL.CTA ;",
        "        /*0070*/   LDG.E.U16.CONSTANT R4, desc[UR4][R8.64+0x300] ;",
    ])
    ops = copy_ops(listing)
    assert [k for k, _, _ in ops] == ["L", "L", "S", "L", "S", "S"]
    assert ops[0][2] == 2 and max_in_flight(ops) == 2
    # load 0 at 0, load 1 at 1, store waits to 100 (then 101), load 2 at 101, store 1 at 101 -> 102,
    # store 2 waits for load 2: 101 + 100 = 201 -> 202
    assert issue_time(ops, 100.0) == 202.0


def test_sass_reader_keeps_a_barrier_before_the_first_store_inside_the_stream():
    """Triton's shape (sm_90, num_stages=1): two vector loads, the barrier that guards the buffer
    others still read, then the stores -- one stream, ended by the fence after the stores; and a
    stream whose loads have no store yet is not over before they return."""
    from kernels.toolchain.sass import copy_ops, issue_time

    listing = "\n".join([
        "        /*0500*/  @!P0 LDG.E.128 R12, desc[UR14][R20.64] ;",
        "        /*0510*/  @!P0 LDG.E.128 R8, desc[UR14][R6.64] ;",
        "        /*0520*/  BAR.SYNC.DEFER_BLOCKING 0x0 ;",
        "        /*0550*/  STS.128 [R4+UR8+0x800], R12 ;",
        "        /*0560*/  STS.128 [R4+UR8], R8 ;",
        "        /*0570*/  MEMBAR.ALL.CTA ;",
        "        /*0580*/  STS.128 [R4+UR8+0x100], R30 ;",
    ])
    ops = copy_ops(listing)
    assert [k for k, _, _ in ops] == ["L", "L", "S", "S"] and ops[0][2] == 16
    assert issue_time(ops, 100.0) == 102.0  # load 0 at 0 returns at 100, its store at 100, the next at 101
    assert issue_time(ops[:2], 100.0) == 101.0  # the loads alone: the last returns at 101


def test_sass_command_without_cuobjdump_says_what_to_install(monkeypatch, capsys):
    from kernels.toolchain import sass

    monkeypatch.setattr(sass, "find_cuobjdump", lambda: None)
    assert sass.main([str(Path("x.cubin"))]) == 2
    assert "cuobjdump" in capsys.readouterr().err


# -- the copy as the compiled kernel's own (its SASS, read by kernels.toolchain.sass) -------------

def _encoded(text: str, stall: int = 1, write: int = 7, read: int = 7, wait: int = 0, at: int = 0) -> str:
    """One instruction as ``cuobjdump -sass`` prints it: the low word beside it, the high word
    (whose top 23 bits are the control bits) on the next line."""
    control = stall | (write << 5) | (read << 8) | (wait << 11)
    return f"        /*{at:04x}*/   {text} ;   /* 0x{0:016x} */\n        /* 0x{control << 41:016x} */"


def test_scoreboard_issue_model_waits_for_every_load_on_the_barrier():
    """Two loads share scoreboard 0; the store of the first waits on it, so it waits for the
    second load too -- which an own-load model would not (it would issue at 100)."""
    from kernels.toolchain.sass import control_stream, copy_controls, copy_ops, issue_time, scoreboard_time

    listing = "\n".join([
        _encoded("LDG.E.U16.CONSTANT R2, desc[UR4][R8.64]", stall=1, write=0, at=0),
        _encoded("IADD3 R9, R9, 0x1, RZ", stall=4, at=0x10),
        _encoded("LDG.E.U16.CONSTANT R3, desc[UR4][R8.64+0x100]", stall=1, write=0, at=0x20),
        _encoded("STS.U16 [R10], R2", stall=1, wait=0b000001, at=0x30),
        _encoded("STS.U16 [R10+0x100], R3", stall=1, at=0x40),
        _encoded("MEMBAR.ALL.CTA", stall=1, at=0x50),
    ])
    stream = copy_controls(control_stream(listing))
    assert [c.text.split()[0] for c in stream][0] == "LDG.E.U16.CONSTANT" and len(stream) == 6
    assert stream[1].stall == 4 and stream[0].write_barrier == 0 and stream[3].wait_mask == 1
    # load 0 at 0, IADD3 at 1, load 1 at 5 (clears at 105), the store waits to 105, the next at 106
    assert scoreboard_time(stream, 100.0) == 108.0
    assert issue_time(copy_ops(listing), 100.0) == 102.0  # its own load only: the difference this model makes


def test_a_listing_without_encodings_has_no_control_stream():
    from kernels.toolchain.sass import control_stream

    assert control_stream("        /*0000*/   LDG.E.U16 R2, desc[UR4][R8.64] ;") == []


def test_device_code_takes_the_fat_binary_out_of_a_library(tmp_path):
    """TVM exports a .so holding its fat binary as data, where cuobjdump does not look: the
    reader writes the embedded fat binary (header size and size from its header) out whole."""
    import struct

    from kernels.toolchain.sass import FATBIN_MAGIC, device_code

    payload = b"device code" * 7
    fatbin = FATBIN_MAGIC + struct.pack("<HHQ", 1, 16, len(payload)) + payload
    lib = tmp_path / "k.so"
    lib.write_bytes(b"\x7fELF" + b"\0" * 60 + fatbin + b"trailing host data")
    out = device_code(lib, tmp_path)
    assert out != lib and out.read_bytes() == fatbin
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF" + fatbin)
    assert device_code(cubin, tmp_path) == cubin  # a cubin or fat binary is read as it is


def test_a_case_with_its_kernels_copy_cycles_waits_that_many_rounds():
    """Case.copy_cycles: every copy stream waits copy_cycles / global_load_l2_cycles rounds (the
    A and B copies of a k-tile share them), and a longer stream replays longer."""
    from protosim.ptxas import with_compiled_copy
    from protosim.strategies import Case

    cfg = GemmConfig(M=128, N=128, K=1024, BLK_N=16, arch="h200")
    typical, slow = Case("v3", cfg), Case("v3", cfg, copy_cycles=5601.0)
    rounds = 5601.0 / H200.global_load_l2_cycles
    copies = [op for op in slow.build().ctas[0].roles[0] if isinstance(op, ThreadCopy)]
    assert sum(copy_rounds(op) for op in copies[:2]) == pytest.approx(rounds)  # A then B: one stream
    assert replay(slow.build()).end_cycle > 1.3 * replay(typical.build()).end_cycle
    assert Case.from_dict(slow.to_dict()) == slow and "copy_cycles" not in typical.to_dict()
    with pytest.raises(ValueError, match="rounds"):
        with_compiled_copy(tuple(copies), 0.0)


def test_a_record_with_a_copy_stream_is_predicted_from_it(tmp_path):
    from protosim.crosscheck import RecordError, attach_copy_streams, case_of

    record = {"step": "v3", "key": "abc", "config": {"M": 128, "N": 128, "K": 1024, "BLK_N": 16, "arch": "h200"},
              "l2_at_launch": "inputs"}
    assert case_of(record).copy_cycles is None
    streams = tmp_path / "streams.jsonl"
    streams.write_text(json.dumps({"key": "abc", "copy_stream": {"cycles": 5601.0, "loads": 72}}) + "\n"
                       + json.dumps({"key": "other", "copy_stream": None}) + "\n")
    records = [dict(record), {**record, "key": "zzz"}, {**record, "copy_stream": {"cycles": 3000.0}}]
    assert attach_copy_streams(records, streams) == 1
    assert [case_of(r).copy_cycles for r in records] == [5601.0, None, 3000.0]  # a record's own stream stays
    streams.write_text('{"key": "abc"}\n')
    with pytest.raises(RecordError, match="streams.jsonl:1"):
        attach_copy_streams(records, streams)


def test_a_fractional_in_flight_survives_json_and_a_negative_one_is_refused():
    s = copy_schedule(copy(4096, load_bytes=2, in_flight=5.46))
    assert from_json(to_json(s)).ctas[0].roles[0][0].in_flight == 5.46
    bad = to_json(s)
    bad["ctas"][0]["roles"][0][0]["in_flight"] = -1.5
    with pytest.raises(ScheduleError, match="in_flight"):
        from_json(bad)
