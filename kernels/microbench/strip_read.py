"""Reading a matrix in column strips, and loads whose lanes are not contiguous: what the H200's
memory gives a kernel by the shape of its accesses rather than by its bytes.

Issue 16, held-out sets 3 and 5: the column sums (a program sums a ``BLOCK_M x BLOCK_N`` tile down
its share of the rows, then adds the partial sums into the output) ran at 2.1-2.6 TB/s where the
model (once each program's rows were keyed as its own) gives 4 TB/s; GPT-J's rotary embedding,
which reads and writes every other element, ran 4x slower than the contiguous NeoX form.  Two
kernels here take the shape apart:

- :func:`strip`: program ``(pid_n, pid_m)`` (or ``(pid_m, pid_n)``, ``ROW_FASTEST``) reads a
  ``BLOCK_N``-column strip of ``ROWS`` rows in ``BLOCK_M``-row tiles, sums the columns in fp32 and
  stores (``ATOMIC=0``) or atomically adds (``ATOMIC=1``) its ``BLOCK_N`` sums.  Strip widths from
  128 bytes to whole rows, the same bytes in all.
- :func:`strided`: program ``pid`` reads ``BLOCK`` elements at ``STRIDE * i + PHASE`` and writes
  them back the same way (``STRIDE = 1``: contiguous; ``2``: GPT-J's pairing); ``PAIR=1`` reads and
  writes both elements of each pair as GPT-J's kernel does.

Run by ``kernels/runner/strip_read.py``; imports triton only."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def strip(x_ptr, out_ptr, M, N, ROWS, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
          ROW_FASTEST: tl.constexpr, ATOMIC: tl.constexpr):
    if ROW_FASTEST:
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
    else:
        pid_n = tl.program_id(0)
        pid_m = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    r_lo = pid_m * ROWS
    for r0 in range(r_lo, r_lo + ROWS, BLOCK_M):
        r = r0 + rows
        acc += tl.load(x_ptr + r[:, None].to(tl.int64) * N + cols[None, :]).to(tl.float32)
    sums = tl.sum(acc, 0)
    if ATOMIC:
        tl.atomic_add(out_ptr + cols, sums, sem="relaxed")
    else:
        tl.store(out_ptr + pid_m.to(tl.int64) * N + cols, sums)


@triton.jit
def strided(x_ptr, y_ptr, n, STRIDE: tl.constexpr, PAIR: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    a = tl.load(x_ptr + STRIDE * i, mask=ok).to(tl.float32)
    if PAIR:
        b = tl.load(x_ptr + STRIDE * i + 1, mask=ok).to(tl.float32)
        tl.store(y_ptr + STRIDE * i, (a * 0.5 - b).to(y_ptr.dtype.element_ty), mask=ok)
        tl.store(y_ptr + STRIDE * i + 1, (b * 0.5 + a).to(y_ptr.dtype.element_ty), mask=ok)
    else:
        tl.store(y_ptr + STRIDE * i, (a * 2.0).to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def lanes_apart(x_ptr, out_ptr, STRIDE: tl.constexpr, ITERS: tl.constexpr, BLOCK: tl.constexpr,
                STORE: tl.constexpr):
    """Loads (``STORE=0``) or stores (``STORE=1``) whose lanes are ``STRIDE`` fp16 elements apart (2
    bytes each; ``STRIDE = 64``: every lane in its own 128-byte line), ``ITERS`` times over two
    regions of a few KB (a load's stay in the SM's L1): the cost of an instruction by the lines its
    lanes touch, apart from the memory behind."""
    pid = tl.program_id(0)
    i = tl.arange(0, BLOCK)
    base = (pid % 16) * (2 * BLOCK * STRIDE)
    if STORE:
        for it in range(ITERS):
            tl.store(x_ptr + base + (it % 2) * (BLOCK * STRIDE) + i * STRIDE, (2 * i + it % 2).to(tl.float16))
    else:
        acc = tl.zeros((BLOCK,), tl.float32)
        for it in range(ITERS):
            acc += tl.load(x_ptr + base + (it % 2) * (BLOCK * STRIDE) + i * STRIDE).to(tl.float32)
        tl.store(out_ptr + pid * BLOCK + i, acc)
