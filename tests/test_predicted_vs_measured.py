"""kernels.triton.predicted_vs_measured's roof: a matmul's predicted TFLOP/s is flagged against
the measured fp16 roof, and against twice it where the dots take 1-byte operands (fp8, int8:
the datasheet's 2x) -- set 9's int8 GEMM measured 1,317 TOPS, above the fp16 roof."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernels.triton.predicted_vs_measured import BYTE_OPERAND_SPEEDUP, ROOF_TFLOPS, roof_tflops

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"


@pytest.mark.parametrize("fixture, factor", [
    ("heldout9/triton-3.6.0/h9_int8_gemm_dequant_4096.sm90.ttgir", BYTE_OPERAND_SPEEDUP),
    ("heldout8/triton-3.6.0/h8_fp8_rowwise_persist_128x128x128_s4_w8.sm90.ttgir", BYTE_OPERAND_SPEEDUP),
    ("heldout9/triton-3.6.0/h9_gemm_swiglu_bf16.sm90.ttgir", 1),
    ("heldout9/triton-3.6.0/h9_bmm_qkT_fp16_d128.sm90.ttgir", 1),
    ("heldout9/triton-3.6.0/h9_softmax_bwd_fp16_1024.sm90.ttgir", 1),  # no dot at all
])
def test_the_roof_follows_the_dot_operands(fixture, factor):
    assert roof_tflops((FIXTURES / fixture).read_text()) == ROOF_TFLOPS * factor


def test_an_int8_load_outside_a_dot_does_not_raise_the_roof():
    text = "%q = tt.load %p : tensor<128x128xi8, #blocked>\n%c = tt.dot %a, %b, %acc : tensor<64x16xf16> * tensor<16x64xf16> -> tensor<64x64xf32>"
    assert roof_tflops(text) == ROOF_TFLOPS
