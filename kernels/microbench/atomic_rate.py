"""Triton's ``tl.atomic_add`` of an fp32 tile into global memory, against ``tl.store`` of the same
tile: how many element atomics the H200 retires per cycle, and what it costs when several
programs add into the same tile (split-K's epilogue: ``kernels/triton/heldout.py``'s
``mm_splitk_kernel`` ran 7-14x slower than the model, which took its ``tt.atomic_rmw`` for free).

Program ``pid`` adds (or stores) a BM x BN tile of values ``pid + row + col`` into tile
``pid % T`` of ``C`` (``T`` tiles of BM x BN fp32, row-major): ``P / T`` programs share each
tile, and they are ``T`` programs apart in launch order -- as split-K's grid ``[tiles, splits]``
puts a tile's splits.  The mask is on (all true), as a bounds-checked epilogue has it.
Run by ``kernels/runner/atomic_rate.py``; imports triton only."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def tile_update(c_ptr, T, BM: tl.constexpr, BN: tl.constexpr, ATOMIC: tl.constexpr):
    pid = tl.program_id(0)
    t = pid % T
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offs = t.to(tl.int64) * (BM * BN) + rows[:, None] * BN + cols[None, :]
    vals = (pid + rows[:, None] + cols[None, :]).to(tl.float32)
    mask = (rows[:, None] < BM) & (cols[None, :] < BN)
    if ATOMIC:
        tl.atomic_add(c_ptr + offs, vals, mask=mask, sem="relaxed")
    else:
        tl.store(c_ptr + offs, vals, mask=mask)


@triton.jit
def region_add(c_ptr, R: tl.constexpr, ONE_LANE_A_LINE: tl.constexpr):
    """Every program adds 1 into each of the same ``R`` counters (a histogram's flush: held-out set
    8's expert histogram, 500 programs x 256 int32 counts into one kilobyte).  ``ONE_LANE_A_LINE``:
    only the first counter of each 128-byte line (a lane a line, R / 32 lines)."""
    offs = tl.arange(0, R)
    if ONE_LANE_A_LINE:
        mask = offs % 32 == 0
    else:
        mask = offs < R
    tl.atomic_add(c_ptr + offs, tl.full((R,), 1, c_ptr.dtype.element_ty), mask=mask, sem="relaxed")
