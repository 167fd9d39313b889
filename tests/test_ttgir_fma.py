"""A float add of a multiply's only use is one FMA (``registers.fused_adds``): Triton compiles
with fp fusion on, and LLVM contracts the pair."""

from __future__ import annotations

from pathlib import Path

from protosim.frontends.ttgir import read
from protosim.ir import RegisterMath
from tests.triton_corpus import fixture_copy

CORPUS = Path(__file__).resolve().parent / "fixtures" / "triton" / "corpus" / "triton-3.6.0"
ATTN = "attn_d64_128x64_s2_w4.sm90"
SCALE = "%qk_74 = arith.subf %qk_71, %qk_73"
"""``qk * qk_scale - m_ij``: the multiply (``%qk_71``) has this subtraction as its only use."""

# The loop body of this kernel's SASS (Triton 3.9, sm_90a, cuobjdump -sass): FADD 72, FMUL 68,
# FFMA 68 on the FP32 pipe per iteration and warp.
SASS_FP32_PER_ITERATION = 72 + 68 + 68


def copy(tmp_path: Path, edit=None, meta=None) -> Path:
    def insert(text: str) -> str:  # edit = (marker, line): ``line`` after the line holding ``marker``
        lines = text.splitlines(keepends=True)
        at = [i for i, line in enumerate(lines) if edit[0] in line]
        assert len(at) == 1, "fixture changed"
        lines.insert(at[0] + 1, edit[1] + "\n")
        return "".join(lines)
    return fixture_copy(tmp_path, CORPUS / f"{ATTN}.ttgir", insert if edit else None, meta)


def fp32_per_iteration(path: Path) -> float:
    schedule, _ = read(path)
    iterations = schedule.config["launch"]["N_CTX"] // 64  # BLOCK_N
    ops = schedule.ctas[0].roles[0]
    return sum(op.fp32 for op in ops if isinstance(op, RegisterMath)) / iterations


def test_the_reader_counts_what_the_sass_issues(tmp_path):
    got = fp32_per_iteration(copy(tmp_path))
    assert abs(got - SASS_FP32_PER_ITERATION) <= 0.1 * SASS_FP32_PER_ITERATION


def test_a_multiply_used_twice_is_not_fused(tmp_path):
    fused = fp32_per_iteration(copy(tmp_path))
    twice = fp32_per_iteration(copy(tmp_path, (SCALE, "      %again = arith.addf %qk_71, %qk_71 : tensor<128x64xf32, #mma>")))
    # the subtraction pays its own 64 instructions a thread, and the new add 64 more
    assert twice - fused >= 2 * 64 - 1


def test_a_compile_without_fp_fusion_fuses_nothing(tmp_path):
    fused = fp32_per_iteration(copy(tmp_path))
    off = fp32_per_iteration(copy(tmp_path, meta={"enable_fp_fusion": False}))
    assert off - fused >= 64
