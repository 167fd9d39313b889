"""Registers per thread of a compiled Triton kernel (``n_regs`` in the metadata beside its
TTGIR) limit how many CTAs an SM holds: the TTGIR itself does not say how many registers
ptxas gave the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import Machine
from protosim.frontends.ttgir import TtgirError, read
from tests.triton_corpus import fixture_copy

CORPUS = Path(__file__).resolve().parent / "fixtures" / "triton" / "corpus" / "triton-3.6.0"
S1 = "mm_ptr_64x64x32_s1_w4.sm90"
H200 = load_profile("h200")


def copy_with(tmp_path: Path, n_regs) -> Path:
    return fixture_copy(tmp_path, CORPUS / f"{S1}.ttgir", meta=None if n_regs is None else {"n_regs": n_regs})


def test_registers_from_the_metadata_bound_the_ctas_an_sm_holds(tmp_path):
    """The H200 gave this kernel (Triton 3.6) 72 registers a thread (results/silicon/triton,
    2026-12-02 registers record): 4 warps x 32 x 72, rounded to 256 a warp, is 9,216 of the
    SM's 65,536 -- 7 CTAs, where threads (16) and shared memory (25) would allow more."""
    plain, _ = read(copy_with(tmp_path, None))
    assert plain.regs_per_thread == 0
    assert Machine(plain, H200).occupancy() == 16  # 2,048 threads / 128

    schedule, _ = read(copy_with(tmp_path, 72))
    assert schedule.regs_per_thread == 72
    assert Machine(schedule, H200).occupancy() == 7
    schedule, _ = read(copy_with(tmp_path, 64))
    assert Machine(schedule, H200).occupancy() == 8


@pytest.mark.parametrize("bad", [0, 256, -3, 7.5, True, "72"])
def test_impossible_register_counts_are_refused_with_the_fix(tmp_path, bad):
    with pytest.raises(TtgirError, match="n_regs") as e:
        read(copy_with(tmp_path, bad))
    assert "1 to 255" in str(e.value)
