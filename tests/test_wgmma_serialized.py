"""Serialized wgmmas (docs/semantics.md "wgmma"): ptxas makes every HGMMA wait for itself when it
cannot keep a chain's accumulators untouched (C7515); the SASS reader finds it, the TTGIR reader
takes it from the metadata, and the replay puts each instruction's tail on the issuing chain.
Held to gemm_parts' H200 runs of the same 2048^3 GEMM with W stored N x K (serialized by ptxas)
and K x N (chained): results/silicon/triton/2026-12-02_h200_gemm_parts.md."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from kernels.toolchain.sass import wgmma_serialized
from protosim.arch import load_profile
from protosim.frontends.ttgir import TtgirError, read
from protosim.ir import Wgmma, WgmmaWait
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


def test_a_serialized_kernel_waits_after_every_wgmma_and_pays_each_tail(tmp_path):
    """One CTA (its chain binds): every instruction after the first of each warpgroup's wgmma adds
    the measured tail, 2 warpgroups x 3 x 62 cycles a k-iteration of 32; a missing field reads as
    not serialized."""
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
    assert t_unsaid == t_chained
    tail = load_profile("h200").mma_tail_cycles
    assert 32 * 2 * 3 * tail <= t_serial - t_chained <= 2 * 32 * 2 * 3 * tail


def _measured(name: str) -> float:
    rows = [json.loads(line) for line in RECORD.read_text().splitlines()]
    return min(r["kernel_us"]["min"] for r in rows if r["record"].endswith(f"/{name}.sm90"))


@pytest.mark.parametrize("name", [NK, KN])
def test_the_2048_gemm_in_both_layouts_against_the_h200(name):
    """Both 2048^3 GEMMs within 8% of the H200's kernel-only time (N x K: 35.8 us, 0.73 before the
    rule; K x N: 27.2 us)."""
    meta = json.loads((PARTS / f"{name}.sm90.json").read_text())
    schedule, _ = read(PARTS / f"{name}.sm90.ttgir")
    schedule = dataclasses.replace(schedule, l2_at_launch="inputs", regs_per_thread=meta["n_regs"])
    verdict, _ = judge(schedule)
    assert verdict.timing.kernel_us == pytest.approx(_measured(name), rel=0.08)
