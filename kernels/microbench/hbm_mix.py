"""Streams of global reads and writes in fixed proportions: what the H200's DRAM gives a kernel
that reads R bytes and writes W bytes, for outputs larger than the L2 (whose lines must go back
to DRAM while the kernel runs) and smaller (whose lines can stay dirty in L2 past its end).

Issue 16, held-out set 2: ``h2_bias_gelu`` (128 MB in, 128 MB out) moved 2.5 TB/s in all, where a
TMA read stream alone gets 4.3 TB/s and ``atomic_rate``'s plain stores of 277 MB 4.2 TB/s.  The
model sends no written byte to DRAM.  Each program here handles ``BLOCK`` elements at
``pid * BLOCK`` -- the elementwise kernels' form -- in one of these modes:

- ``read``: loads ``x``, writes one fp32 sum per program (R : W = 1 : 0);
- ``write``: stores a pattern to ``y`` (0 : 1);
- ``copy``: ``y = x`` (1 : 1);
- ``add``: ``y = x + z`` (2 : 1);
- ``split``: ``y = x; z = -x`` (1 : 2);
- ``inplace``: ``x = 2 x`` (1 : 1 on the same lines).

Run by ``kernels/runner/hbm_mix.py``; imports triton only."""

from __future__ import annotations

import triton
import triton.language as tl

MODES = ("read", "write", "copy", "add", "split", "inplace")
TRAFFIC = {"read": (1, 0), "write": (0, 1), "copy": (1, 1), "add": (2, 1), "split": (1, 2), "inplace": (1, 1)}
"""Mode -> (arrays read, arrays written), each of n elements."""


@triton.jit
def stream(x_ptr, y_ptr, z_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if MODE == "read":
        v = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(z_ptr + pid, tl.sum(v.to(tl.float32), 0))
    elif MODE == "write":
        tl.store(y_ptr + offs, (offs & 255).to(y_ptr.dtype.element_ty), mask=mask)
    elif MODE == "copy":
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    elif MODE == "add":
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(z_ptr + offs, mask=mask), mask=mask)
    elif MODE == "split":
        v = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, v, mask=mask)
        tl.store(z_ptr + offs, -v, mask=mask)
    else:  # inplace
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
