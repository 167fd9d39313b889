"""A ``warp_group_dot`` whose accumulator nothing reads is deleted by ptxas
(protosim/frontends/ttgir/liveness.py): the reader times it as the one placeholder
``HGMMA.64x8x16`` the SASS keeps, and keeps its shared-memory reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from protosim.frontends.ttgir import read
from protosim.frontends.ttgir.text import parse
from protosim.ir import Wgmma
from tests.triton_corpus import fixture_copy, replacing

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
GLUON = FIXTURES / "gluon" / "triton-3.6.0"
RING = "wgmma_ring-three_buffers.sm90a.ttgir"
LOOP_DOT = "%acc_12 = ttng.warp_group_dot"
RESULT_WAIT = "%acc = ttng.warp_group_dot_wait %phase#0 {pendings = 0 : i32}"


def ring_text() -> str:
    return (GLUON / RING).read_text()


def dots(text: str) -> list[int]:
    return [i + 1 for i, line in enumerate(text.splitlines()) if "ttng.warp_group_dot " in line]


# Which fixtures' dots are dead was read from the SASS (cuobjdump -sass of each kernel built for
# sm_90a): the dead ones compile to `HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ` placeholders, the
# live ones to real HGMMAs.
@pytest.mark.parametrize("name, dead", [
    ("wgmma_ring-three_buffers", True),
    ("wgmma_ring-two_buffers", True),
    ("wgmma_operand_overwrite-valid", True),
    ("wgmma2_operand_overwrite-valid", True),
    ("ws_wgmma_visibility-valid", True),
    ("wgmma_pipelined-clean", False),
    ("persistent_wgmma_matmul-clean", False),
    ("ws_wgmma_matmul-clean", False),
])
def test_the_dots_ptxas_deletes_are_the_dead_ones(name, dead):
    text = (GLUON / f"{name}.sm90a.ttgir").read_text()
    mod = parse(text, name)
    assert dots(text)
    assert mod.dead_dots == (frozenset(dots(text)) if dead else frozenset())


def test_no_matmul_or_attention_of_the_triton_corpus_loses_a_dot():
    for path in sorted((FIXTURES / "corpus" / "triton-3.6.0").glob("*.ttgir")):
        assert parse(path.read_text(), str(path)).dead_dots == frozenset(), path.name


def test_reading_the_final_accumulator_keeps_every_dot_of_the_chain():
    """The loop's dots feed one another through the carried accumulator: one use of the
    loop's result (after the last wait) keeps them all."""
    text = ring_text()
    assert RESULT_WAIT in text
    used = text.replace(RESULT_WAIT, RESULT_WAIT + "\n    %used = arith.addf %acc, %acc : tensor<128x128xf32, #mma>")
    assert parse(text, RING).dead_dots == frozenset(dots(text))
    assert parse(used, RING).dead_dots == frozenset()


def test_a_use_inside_the_loop_keeps_the_dot():
    text = ring_text()
    wait = "%acc_13 = ttng.warp_group_dot_wait %acc_12 {pendings = 1 : i32} : tensor<128x128xf32, #mma>"
    assert wait in text
    used = text.replace(wait, wait + "\n      %seen = arith.addf %acc_13, %acc_13 : tensor<128x128xf32, #mma>")
    assert parse(used, RING).dead_dots == frozenset()


def test_a_dead_dot_is_timed_as_the_placeholder_and_keeps_its_reads(tmp_path):
    schedule, _ = read(fixture_copy(tmp_path, GLUON / RING))
    wgmmas = [op for role in schedule.ctas[0].roles for op in role if isinstance(op, Wgmma)]
    assert len(wgmmas) == 10
    assert {(op.m, op.n, op.k_elems) for op in wgmmas} == {(64, 8, 16)}
    assert all(len(op.reads) == 2 for op in wgmmas)  # A and B: the race checkers still see them

    use = replacing([(RESULT_WAIT, RESULT_WAIT + "\n    %used = arith.addf %acc, %acc : tensor<128x128xf32, #mma>")])
    schedule, _ = read(fixture_copy(tmp_path, GLUON / RING, use))
    wgmmas = [op for role in schedule.ctas[0].roles for op in role if isinstance(op, Wgmma)]
    assert {(op.m, op.n, op.k_elems) for op in wgmmas} == {(128, 128, 128)}


def test_the_run_report_says_which_dot_was_deleted():
    from protosim.scenarios import load_scenario

    dead = load_scenario(GLUON / RING)
    assert "line(s) " + ", ".join(str(n) for n in dots(ring_text())) in dead.description
    live = load_scenario(GLUON / "wgmma_pipelined-clean.sm90a.ttgir")
    assert "ptxas deletes" not in live.description
