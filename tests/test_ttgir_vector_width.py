"""The width of a global load or store, as the TTGIR reader gives it, against the SASS Triton made.

``kernels.toolchain.sass.global_widths`` read the byte widths of every ``LDG`` / ``STG`` off each
held-out kernel's cubin when it was compiled (``global_widths`` in its metadata, Triton 3.6,
sm_90a); ``axisinfo.access_widths`` gives the widths the reader assigns the module's ``tt.load`` /
``tt.store`` statements (the layout's vector, narrowed by Triton's AxisInfo rules).  The two sets
must be equal, kernel by kernel, except for the listed disagreement, a strict xfail with its
reason.  (Before the AxisInfo rules and the slice layouts, 106 of 115 agreed.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protosim.frontends.ttgir import parse
from protosim.frontends.ttgir.axisinfo import KMAX, access_widths, pow2_divisor

FIXTURES = Path(__file__).parent / "fixtures" / "triton"
SETS = ("heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "alignment", "gemm_parts", "heldout7",
        "heldout8", "heldout9")
KNOWN = {
    # set 6's cross-entropy, and the same kernel in the alignment pairs
    "cross_entropy_bf16_v50304_b4096_s2_w8": (CE := (
        "its label is an i64 the kernel truncates to i32 at once (arith.trunci): ptxas loads only the low "
        "half (LDG.E, 4 bytes) where the reader counts the 8-byte element")),
    "al_cross_entropy_bf16_b4096_s2_w8": CE,
}


def _records():
    for s in SETS:
        for md in sorted((FIXTURES / s / "triton-3.6.0").glob("*.sm90.json")):
            if md.name.endswith(".launch.json"):
                continue
            data = json.loads(md.read_text())
            if "global_widths" in data:
                stem = md.name.removesuffix(".sm90.json")
                why = next((w for k, w in KNOWN.items() if k in stem), None)  # the alignment pairs' too
                marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                yield pytest.param(md.with_name(md.name.replace(".json", ".ttgir")), data["global_widths"],
                                   id=f"{s}:{stem}", marks=marks)


RECORDS = list(_records())


def test_the_held_out_sets_carry_their_sass_widths():
    assert len(RECORDS) >= 100


@pytest.mark.parametrize("ttgir, sass", RECORDS)
def test_the_reader_gives_each_access_the_width_ptxas_gave_it(ttgir, sass):
    mod = parse(ttgir.read_text(), str(ttgir))
    assert access_widths(mod) == sass


def _widths(name: str) -> dict:
    path = FIXTURES / "heldout6" / "triton-3.6.0" / f"{name}.sm90.ttgir"
    return access_widths(parse(path.read_text(), str(path)))


def test_a_mask_against_a_length_not_divisible_by_16_makes_every_element_its_own_load():
    # the same AdamW loop: N = 16,777,216 is specialised divisible by 16, N = 12,582,917 is not
    assert _widths("adamw_16m_b1024_w4") == {"ldg": [16], "stg": [16]}
    assert _widths("adamw_persist_12m_b4096_s2_w8") == {"ldg": [2, 4], "stg": [4]}


def test_a_per_channel_gather_through_an_integer_division_is_one_element_a_load():
    # GroupNorm's w[offs // HW]: the pointer is constant over HW elements, contiguous over none
    assert _widths("groupnorm_silu_fp16_c512_64x64_b4096_s3_w4")["ldg"] == [2, 16]


def test_a_slice_of_an_mma_accumulator_is_two_columns_a_thread_and_one_row():
    # the fp8 GEMM's scales: a column scale (slice dim 0: along N) LDG.E.64, a row scale LDG.E
    path = FIXTURES / "heldout5" / "triton-3.6.0" / "h5_fp8_rowwise_persistent.sm90.ttgir"
    assert access_widths(parse(path.read_text(), str(path))) == {"ldg": [4, 8]}


def test_powers_of_two_as_triton_counts_them():
    assert pow2_divisor(0) == KMAX and pow2_divisor(48) == 16 and pow2_divisor(-8) == 8 and pow2_divisor(7) == 1
