"""Serialized wgmmas (docs/semantics.md "wgmma"): ptxas makes every HGMMA wait for itself when it
cannot keep a chain's accumulators untouched (C7515); the SASS reader finds it, the TTGIR reader
takes it from the metadata, and the replay puts each instruction's tail on the issuing chain.
Held to gemm_parts' H200 runs (results/silicon/triton/2026-12-02_h200_gemm_parts.md): the 2048^3
GEMM with W stored K x N (chained) and N x K (serialized: not reached, a strict xfail), and the
serialized 128 x 128 dot_loop at 8 warps."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from kernels.toolchain.sass import wgmma_serialized
from protosim.arch import load_profile
from protosim.frontends.ttgir import TtgirError, read
from protosim.engine.machine import replay
from protosim.ir import CtaProgram, RoleDecl, Schedule, Wgmma, WgmmaCommit, WgmmaWait
from protosim.verdict import judge

ROOT = Path(__file__).resolve().parent.parent
PARTS = ROOT / "tests" / "fixtures" / "triton" / "gemm_parts" / "triton-3.6.0"
RECORD = ROOT / "results" / "silicon" / "triton" / "2026-12-02_h200_gemm_parts_957b774.jsonl"
NK, KN = "linear_2048_epi0_nomask_wnk", "linear_2048_epi0_nomask_wkn"


def _listing(*lines: str) -> str:
    return "\n".join(f"        /*{16 * i:04x}*/                   {text} ;" for i, text in enumerate(lines))


CHAINED = _listing("WARPGROUP.ARRIVE", "HGMMA.64x256x16.F32 R24, gdesc[UR8].tnspB, R24",
                   "HGMMA.64x256x16.F32 R24, gdesc[UR8].tnspB, R24",
                   "HGMMA.64x256x16.F32 R24, gdesc[UR20].tnspB, R24",
                   "HGMMA.64x256x16.F32 R24, gdesc[UR8].tnspB, R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x1",
                   "BAR.SYNC.DEFER_BLOCKING 0x0")
SERIAL = _listing(*[x for _ in range(4) for x in ("WARPGROUP.ARRIVE", "HGMMA.64x256x16.F32 R24, gdesc[UR8], R24, gsb0",
                                                  "WARPGROUP.DEPBAR.LE gsb0, 0x0")], "BAR.SYNC.DEFER_BLOCKING 0x0")


def test_the_sass_reader_tells_a_chain_from_a_serialized_one():
    assert wgmma_serialized(CHAINED) is False
    assert wgmma_serialized(SERIAL) is True
    # one drain missing between two HGMMA: a chain there, so not serialized
    assert wgmma_serialized(SERIAL.replace("WARPGROUP.DEPBAR.LE gsb0, 0x0", "NOP", 1)) is False
    assert wgmma_serialized(_listing("HGMMA.64x64x16.F32 R24, gdesc[UR8], R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0")) is None
    assert wgmma_serialized(_listing("LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]")) is None


def _copy(tmp: Path, name: str, serialized: bool | None) -> Path:
    for f in PARTS.glob(f"{name}.sm90.*"):
        shutil.copy(f, tmp / f.name)
    meta = json.loads((tmp / f"{name}.sm90.json").read_text())
    meta.pop("wgmma_serialized", None)
    if serialized is not None:
        meta["wgmma_serialized"] = serialized
    (tmp / f"{name}.sm90.json").write_text(json.dumps(meta))
    return tmp / f"{name}.sm90.ttgir"


def test_the_metadata_field_is_a_boolean(tmp_path):
    path = _copy(tmp_path, NK, None)
    meta = json.loads(path.with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**meta, "wgmma_serialized": "yes"}))
    with pytest.raises(TtgirError, match="wgmma_serialized"):
        read(path)


def _wgmmas(schedule):
    return [op for op in schedule.ctas[0].roles[0] if isinstance(op, Wgmma)]


def _one_warpgroup(serialized: bool) -> Schedule:
    ops = (Wgmma(m=64, n=256, k_elems=64, serialized=serialized), WgmmaCommit(), WgmmaWait(n=0))
    return Schedule("wgmma", "h200", (), (), (RoleDecl("mma", 4),), (CtaProgram(0, (ops,)),))


def test_one_warpgroup_alone_waits_out_every_tail():
    """One warpgroup, nothing to overlap: its four m64n256k16 serialized take three more tails than
    chained (each instruction after the first issues once the one before completed)."""
    tail = load_profile("h200").mma_tail_cycles
    chained, serial = (replay(_one_warpgroup(s)).end_cycle for s in (False, True))
    assert serial - chained == pytest.approx(3 * tail)


def test_a_serialized_kernel_waits_after_every_wgmma(tmp_path):
    """The reader takes the flag from the metadata and puts ptxas's wait after each wgmma; a missing
    field reads as not serialized.  With its copies exposed behind every wait, one CTA is slower."""
    (tmp_path / "s").mkdir()
    (tmp_path / "c").mkdir()
    (tmp_path / "n").mkdir()
    serial, _ = read(_copy(tmp_path / "s", NK, True), launch={"ctas": 1})
    chained, _ = read(_copy(tmp_path / "c", NK, False), launch={"ctas": 1})
    unsaid, _ = read(_copy(tmp_path / "n", NK, None), launch={"ctas": 1})
    assert all(op.serialized for op in _wgmmas(serial)) and not any(op.serialized for op in _wgmmas(chained))
    ops = serial.ctas[0].roles[0]
    after = [ops[ops.index(op) + 2] for op in _wgmmas(serial)]  # wgmma, commit, then the wait ptxas put in
    assert all(isinstance(w, WgmmaWait) and w.n == 0 for w in after)
    t_serial, t_chained, t_unsaid = (judge(s)[0].timing.cycles for s in (serial, chained, unsaid))
    assert t_unsaid == t_chained < t_serial


def _measured(record: Path, name: str) -> float:
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    return min(r["kernel_us"]["min"] for r in rows if r["record"].endswith(f"/{name}.sm90"))


def _predicted(name: str) -> float:
    meta = json.loads((PARTS / f"{name}.sm90.json").read_text())
    schedule, _ = read(PARTS / f"{name}.sm90.ttgir")
    schedule = dataclasses.replace(schedule, l2_at_launch="inputs", regs_per_thread=meta["n_regs"])
    return judge(schedule)[0].timing.kernel_us


def test_the_2048_gemm_with_w_k_by_n_against_the_h200():
    """The chained kernel: within 8% of the H200's kernel-only time (27.2 us)."""
    assert _predicted(KN) == pytest.approx(_measured(RECORD, KN), rel=0.08)


@pytest.mark.xfail(strict=True, reason="W N x K (serialized) runs 35.8 us; the wait after each wgmma brings the "
                   "prediction from 26.1 to 29.6 (0.83). Putting every tail on the CTA's chain gave 35.6 but "
                   "overshot the serialized 128 x 128 dot_loop by 56%: the rest is not explained (results/silicon/"
                   "triton/2026-12-02_h200_gemm_parts.md)")
def test_the_2048_gemm_with_w_n_by_k_against_the_h200():
    assert _predicted(NK) == pytest.approx(_measured(RECORD, NK), rel=0.08)


def test_a_serialized_dot_loop_runs_at_the_chains_rate():
    """gemm_parts' 128 x 128 dot_loop at 8 warps, serialized by ptxas in both layouts: the two
    warpgroups' instructions fill each other's tails -- 183.7 us measured, within 8%."""
    record = ROOT / "results" / "silicon" / "triton" / "2026-12-02_h200_gemm_parts_dot_loop_3fda3cb.jsonl"
    name = "dot_loop_128x128x64_wnk_w8"
    assert json.loads((PARTS / f"{name}.sm90.json").read_text())["wgmma_serialized"] is True
    assert _predicted(name) == pytest.approx(_measured(record, name), rel=0.08)
