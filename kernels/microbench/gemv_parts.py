"""The held-out GEMV (``kernels/triton/heldout2.py`` ``gemv_kernel``) taken apart: what holds its
weight stream to 1.6 TB/s on the H200 where a plain stream reaches 4.5 (issue 16; the model,
which now sends its per-iteration layout conversions and cross-warp sum through shared memory,
predicts 0.38-0.62 of its time).

Every variant streams the same N x K fp16 weight in BLOCK_N x BLOCK_K tiles, a program per
BLOCK_N rows, K in an inner loop, as the held-out kernel does:

- ``sum3d``: the held-out kernel's body -- ``tl.sum(w[:, None, :] * x[None, :, :], axis=2)`` each
  iteration (a layout conversion of w and x, a reduction across warps);
- ``sum2d``: ``tl.sum(w * x[None, :], axis=1)`` each iteration (the plain 2-D form);
- ``acc2d``: ``acc += w * x[None, :]`` into a BLOCK_N x BLOCK_K fp32 accumulator, one ``tl.sum``
  after the loop (no reduction in the loop);
- ``load``: ``acc += w`` (the loads alone, with an add to keep them).

Run by ``kernels/runner/gemv_parts.py``; imports triton only."""

from __future__ import annotations

import triton
import triton.language as tl

MODES = ("sum3d", "sum2d", "acc2d", "load")


@triton.jit
def gemv_part(x_ptr, w_ptr, y_ptr, N, K, stride_wn,
              MODE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_n = offs_n < N
    w_ptrs = w_ptr + offs_n[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
    x_ptrs = x_ptr + offs_k
    if MODE == "sum3d":
        acc3 = tl.zeros((BLOCK_N, 1), dtype=tl.float32)
    elif MODE == "sum2d":
        acc1 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    else:
        acc2 = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kmask = offs_k + k0 < K
        w = tl.load(w_ptrs, mask=mask_n[:, None] & kmask[None, :], other=0.0).to(tl.float32)
        x = tl.load(x_ptrs, mask=kmask, other=0.0).to(tl.float32)
        if MODE == "sum3d":
            acc3 += tl.sum(w[:, None, :] * x[None, None, :], axis=2)
        elif MODE == "sum2d":
            acc1 += tl.sum(w * x[None, :], axis=1)
        elif MODE == "acc2d":
            acc2 += w * x[None, :]
        else:
            acc2 += w
        w_ptrs += BLOCK_K
        x_ptrs += BLOCK_K
    if MODE == "sum3d":
        out = tl.sum(acc3, axis=1)
    elif MODE == "sum2d":
        out = acc1
    else:
        out = tl.sum(acc2, axis=1)
    tl.store(y_ptr + offs_n, out.to(y_ptr.dtype.element_ty), mask=mask_n)
