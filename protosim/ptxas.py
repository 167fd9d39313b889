"""What ptxas makes of a thread copy loop: how many of its loads a lane keeps in flight.

A thread copy's time is set by its instruction stream (docs/semantics.md "Thread copies"):
``ThreadCopy.in_flight`` loads outstanding per lane, one load latency per round.  That number
is ptxas's scheduling decision, so it comes from compiled code.  Read off the SASS of the seed's
v2/v3 kernels (ptxas 13.0; results/silicon/microbench/2026-12-01_thread_copy_sass.md):

* an element-wise copy (2-byte ``LDG.E.U16`` per element, the Hopper port's swizzled copy) is
  unrolled whole and its loads hoisted above the stores in a rolling window: the stream of a
  k-tile takes 7.1-10.1 load latencies over nine builds with 72-128 loads per lane, median 8.1
  -- :data:`ELEMENTWISE_ROUNDS`, whatever the number of loads;
* a vectorized copy (16-byte ``LDG.E.128``, the seed's Blackwell copy) issues all of its 16
  loads per lane before the first store: one round.

Both frontends and the builders state ``in_flight`` through :func:`with_copy_streams`, so the
rule lives here once.  Loads of 4 or 8 bytes were not observed; they take the element-wise rule.
``python -m kernels.toolchain.sass`` measures a compiled kernel's own numbers.
"""

from __future__ import annotations

import dataclasses

from protosim.ir import Op, ThreadCopy

ELEMENTWISE_ROUNDS = 8
"""Load latencies one k-tile's element-wise copy stream waits (SASS of nine builds: 7.1-10.1)."""
VECTOR_BYTES = 16
"""Loads this wide (128-bit) were all issued before the first store in every build read."""


def copy_in_flight(loads: int, load_bytes: int) -> int:
    """Loads a lane keeps outstanding in a copy stream of ``loads`` loads of ``load_bytes``."""
    if load_bytes >= VECTOR_BYTES:
        return max(1, loads)
    return max(1, -(-loads // ELEMENTWISE_ROUNDS))


def with_copy_streams(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """``ops`` with each run of back-to-back thread copies of one load width (one stream: the
    A and B tiles of a k-iteration, say) given the ``in_flight`` of the whole run.  A copy
    that already states ``in_flight`` is left as it is."""
    out = list(ops)
    i = 0
    while i < len(out):
        op = out[i]
        if not isinstance(op, ThreadCopy):
            i += 1
            continue
        j = i
        while j < len(out) and isinstance(out[j], ThreadCopy) and out[j].load_bytes == op.load_bytes:
            j += 1
        loads = sum(int(c.loads_per_lane) for c in out[i:j])
        window = copy_in_flight(loads, op.load_bytes)
        for n in range(i, j):
            if not out[n].in_flight:
                out[n] = dataclasses.replace(out[n], in_flight=window)
        i = j
    return tuple(out)
