"""Global loads and stores by the width Triton gives them: what one SM issues per cycle with many
warps in flight, apart from the memory behind.

The alignment pairs (results/silicon/triton/2026-12-02_h200_alignment.md) ran 1.14-1.59x slower at
a length not divisible by 16, where every access is one element a lane, than at an aligned one; the
model said 1.9-6.1x.  Its store cost, 17 cycles per warp ``st.global`` per SM, was measured with one
CTA of 4 warps storing in a row -- a latency, not the SM's rate with 32-64 warps.  These kernels
measure the rate:

- :func:`rewrite`: program ``pid`` stores ``BLOCK`` elements ``ITERS`` times into its own two slots
  in turn (the slots fit in the L2 many times over), under the mask ``i < n``: ``n`` a
  multiple of 16 gives vector stores of ``sizePerThread`` elements, ``n`` one less the same count of
  scalar stores per element (Triton's AxisInfo).  ``LOAD=1`` loads and sums instead (the slots stay
  in the SM's L1 after the first pass).
Run by ``kernels/runner/access_rate.py``; imports triton only."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rewrite(x_ptr, out_ptr, n, rot, ITERS: tl.constexpr, BLOCK: tl.constexpr, LOAD: tl.constexpr):
    """Iteration ``it`` touches sub-slot ``it % rot`` of the program's ``rot`` slots: ``rot`` is a
    runtime argument, so no compiler can prove an address loop-invariant and hoist the access."""
    pid = tl.program_id(0)
    i = tl.arange(0, BLOCK)
    ok = i < n
    base = x_ptr + pid.to(tl.int64) * n * rot + i
    if LOAD:
        acc = tl.zeros((BLOCK,), tl.float32)
        for it in range(ITERS):
            acc += tl.load(base + (it % rot) * n, mask=ok, other=0.0).to(tl.float32)
        tl.store(out_ptr + pid.to(tl.int64) * BLOCK + i, acc)
    else:
        for it in range(ITERS):
            tl.store(base + (it % rot) * n, (i + it).to(x_ptr.dtype.element_ty), mask=ok)
