"""Registers ptxas spilled (``n_spills`` in the compile's metadata) are said, not silently ignored.

Two held-out kernels (``kernels/triton/heldout.py``) spill: the ragged matmul (96 registers a
thread) and split-K 4 (92).  They ran 3.4x and 12x slower on the H200 than the replay, which does
not see local memory (results/silicon/triton/2026-12-02_h200_heldout.md).  ``kernels/triton/corpus.py``
writes ``n_regs`` and ``n_spills`` from the cubin (cuobjdump's REG and STACK / 4, equal to what the
H200's driver reported for all 19 kernels); the reader validates them, carries the spill count
in the schedule, and ``protosim run`` says the prediction does not time it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from protosim.frontends.ttgir import TtgirError, metadata, read
from tests.triton_corpus import fixture_copy

HELDOUT = Path(__file__).resolve().parent / "fixtures" / "triton" / "heldout" / "triton-3.6.0"
RAGGED = HELDOUT / "ho_mm_ragged_1000x1500x1000_128x128x64_w4_s3.sm90.ttgir"
BMM = HELDOUT / "ho_bmm_b8_1024_128x128x64_w8_s3.sm90.ttgir"
MEASURED = Path(__file__).resolve().parents[1] / "results" / "silicon" / "triton" / "2026-12-02_h200_heldout_1131787.jsonl"


def test_the_cpu_compiles_registers_and_spills_are_what_the_h200_reported():
    """The fixtures' metadata (cuobjdump on the CPU's cubin) against the driver's numbers."""
    rows = [json.loads(line) for line in MEASURED.read_text().splitlines()]
    assert len(rows) == 19
    for row in rows:
        meta = metadata(HELDOUT.parent / (row["record"] + ".ttgir"))
        assert (meta["n_regs"], meta["n_spills"]) == (row["n_regs"], row["n_spills"]), row["record"]


def test_a_spilling_kernel_carries_its_spills_and_one_that_does_not_carries_none():
    spilled, _ = read(RAGGED, {"ctas": 1})
    clean, _ = read(BMM, {"ctas": 1})
    assert spilled.config["n_spills"] == 96 and spilled.regs_per_thread == 255
    assert "n_spills" not in clean.config


def test_the_run_says_the_spills_are_not_timed():
    out = subprocess.run([sys.executable, "-m", "protosim", "run", str(RAGGED), "--runs", "1"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "spilled 96 registers" in out.stdout and "does not time spill traffic" in out.stdout


@pytest.mark.parametrize("bad", [-1, "96", 1.5, True])
def test_a_malformed_spill_count_is_refused(tmp_path, bad):
    path = fixture_copy(tmp_path, RAGGED, meta={"n_spills": bad})
    with pytest.raises(TtgirError, match="n_spills"):
        read(path, {"ctas": 1})
