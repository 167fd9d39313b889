"""Scalar global stores by the lines one warp instruction spreads over, every byte of a row written:
what the chip takes per warp ``st.global`` when its lanes are ``S`` elements apart.

Why: a Triton store the compiler cannot vectorize (a length not divisible by 16) keeps the
layout it would have vectorized -- ``sizePerThread`` 4 fp32 or 8 fp16 elements -- and stores one
element a lane at a time, so the lanes of one instruction are 16 bytes apart and it spreads over
4 lines, the next instruction filling the gaps.  The model charged such stores the seed
epilogue's 3.9 a cycle (8 rows of 8 bytes an instruction); access_rate.py's narrow rows (14.97 /
10.23 instructions a cycle at 2 / 4 bytes) are contiguous scalar stores, not these (its pointer,
not only its mask, is unaligned there: one element a thread).  This kernel sweeps the spread alone:

- :func:`spread`: program ``pid`` writes rows of ``BLOCK`` elements, one element a thread a
  register (layout ``[1], [32], [WARPS]``: element ``i`` is lane ``i % 32`` of warp
  ``(i // 32) % WARPS``, register ``r = i // (32 WARPS)``).  Lane ``l`` of warp ``w`` writes, at
  register ``r``, element ``((r // S) * WARPS + w) * 32 S + l * S + r % S``: the lanes ``S``
  elements apart and the warp's next ``S - 1`` registers filling the gaps -- Triton's unaligned
  store exactly, where ``S`` is its ``sizePerThread`` (a permutation of the row).  ``S = 1`` is
  contiguous.  The offsets are multiplied by ``one`` (1 at run time) so that Triton's AxisInfo
  proves no contiguity and every store is one element a lane, whatever ``S``.
- ``STREAM = 0``: iteration ``it`` writes the program's slot ``it % 2`` (L2-resident);
  ``STREAM = 1``: every iteration a fresh row (the stores go on to DRAM, as a kernel's output).

Run by ``kernels/runner/store_lines.py``; imports triton only."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def spread(out_ptr, one, S: tl.constexpr, WARPS: tl.constexpr, ITERS: tl.constexpr, BLOCK: tl.constexpr,
           STREAM: tl.constexpr):
    tl.static_assert(BLOCK % (32 * S * WARPS) == 0)
    pid = tl.program_id(0)
    i = tl.arange(0, BLOCK)
    r = i // (32 * WARPS)
    offs = (((r // S) * WARPS + (i // 32) % WARPS) * (32 * S) + (i % 32) * S + r % S) * one
    for it in range(ITERS):
        row = it * tl.num_programs(0) + pid if STREAM else pid * 2 + it % 2
        tl.store(out_ptr + row.to(tl.int64) * BLOCK + offs, (i + it).to(out_ptr.dtype.element_ty))
