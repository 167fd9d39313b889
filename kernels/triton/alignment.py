"""Aligned / unaligned pairs: the same Triton kernel at a length divisible by 16 and at one that is not.

Triton specialises an integer argument divisible by 16 (``tt.divisibility = 16`` in the TTGIR) and
vectorises a masked ``tl.load`` / ``tl.store`` only as far as its AxisInfo analysis proves the mask
constant: ``offs < N`` with an ``N`` of no known divisibility is one element per load
(protosim/frontends/ttgir/axisinfo.py).  These pairs test that rule's consequence for time on the
H200: each kernel once at an aligned length and once a few elements off, the rest equal.  The
kernels are held-out set 6's (``kernels/triton/heldout6.py``, written by an author who had not seen
protosim); the pairs are this project's choice of sizes -- a targeted check of one rule, predicted
before it runs, not a held-out set.

    /tmp/tri36/bin/python -m kernels.triton.corpus --kernels kernels.triton.alignment --out tests/fixtures/triton/alignment
    python -m kernels.triton.corpus_run --corpus tests/fixtures/triton/alignment --out results.jsonl
"""

from __future__ import annotations

from kernels.triton.heldout6 import BUILDERS, KERNELS, NUM_SMS_H200, TARGET, flops  # noqa: F401  (corpus.py reads them)


def _v(name, kernel, num_warps, num_stages, **kw):
    return {"name": name, "kernel": kernel, "targets": TARGET, "num_warps": num_warps, "num_stages": num_stages, **kw}


def _pair(stem: str, kernel: str, num_warps: int, num_stages: int, size: str, aligned: int, odd: int, **kw):
    """The kernel at ``size = aligned`` (a multiple of 16) and at ``size = odd`` (not one)."""
    assert aligned % 16 == 0 and odd % 16, (stem, aligned, odd)
    return [_v(f"{stem}_{size.lower()}{n}", kernel, num_warps, num_stages, **{size: n}, **kw) for n in (aligned, odd)]


VARIANTS = [
    # fused AdamW, one block a program and a 528-program grid-stride loop (fp32 p, m, v; bf16 g)
    *_pair("al_adamw_b1024_w4", "adamw", 4, 1, "N", 1 << 24, (1 << 24) + 1, BLOCK=1024, step=10),
    *_pair("al_adamw_persist_b4096_s2_w8", "adamw", 8, 2, "N", 12582912, 12582917, BLOCK=4096,
           GRID=4 * NUM_SMS_H200, step=1000),
    # row kernels: the length is also the row stride, so the pointer's alignment goes with it
    *_pair("al_softmax_bwd_bf16_w8", "softmax_bwd", 8, 1, "N", 4096, 4095, M=16384, BLOCK_N=4096, ROWS=1,
           dtype="bfloat16"),
    *_pair("al_softmax_bwd_fp16_r4_w1", "softmax_bwd", 1, 1, "N", 512, 500, M=65536, BLOCK_N=512, ROWS=4,
           dtype="float16"),
    *_pair("al_quant_int8_fp16_w4", "quant_int8_rowwise", 4, 1, "N", 8192, 8191, M=8192, BLOCK_N=8192,
           dtype="float16"),
    # GPT-2's vocabulary as it is (50257) and padded (50304)
    *_pair("al_cross_entropy_bf16_b4096_s2_w8", "cross_entropy", 8, 2, "V", 50304, 50257, M=4096, BLOCK_V=4096,
           dtype="bfloat16"),
    *_pair("al_layernorm_bwd_dx_fp16_w8", "layernorm_bwd_dx", 8, 1, "N", 4096, 4100, M=8192, BLOCK_N=8192, ROWS=1,
           dtype="float16"),
]
