"""What compiled code makes of a copy: a thread copy's loads in flight, a store's bank conflicts.

A thread copy's time is set by its instruction stream (docs/semantics.md "Thread copies"):
``ThreadCopy.in_flight`` loads outstanding per lane, one load latency per round.  That number
is ptxas's scheduling decision, so it comes from compiled code.  Read off the SASS of the seed's
v2/v3 kernels (ptxas 13.0; results/silicon/microbench/2026-12-01_thread_copy_sass.md):

* an element-wise copy (2-byte ``LDG.E.U16`` per element, the Hopper port's swizzled copy) is
  unrolled whole and its loads hoisted above the stores in a rolling window: the stream of a
  k-tile takes 7.1-10.1 load latencies over nine builds with 72-128 loads per lane, median 8.1
  -- :data:`ELEMENTWISE_ROUNDS`, whatever the number of loads.  (Those nine were ``nvcc -O3``
  builds of the generated source; the kernels TVM builds, with its own ptxas options, take
  6.6-7.7 over 87 builds, median 7.25, and one shape 13.2: results/silicon/microbench/
  2026-12-03_tvm_thread_copy_sass.md.  Where the compiled kernel is known, its own stream is
  used instead: :func:`with_compiled_copy`;)
* a vectorized copy (16-byte ``LDG.E.128``, the seed's Blackwell copy) issues all of its 16
  loads per lane before the first store: one round.

Both frontends and the builders state ``in_flight`` through :func:`with_copy_streams`, so the
rule lives here once; ``crosscheck`` replaces it by the kernel's own (:func:`with_compiled_copy`,
``Case.copy_cycles``).  Loads of 4 or 8 bytes were not observed; they take the element-wise rule.
``python -m kernels.toolchain.sass`` measures a compiled kernel's own numbers.

A wgmma's descriptors (:attr:`protosim.ir.Wgmma.descriptors`) are where ptxas builds them: in
uniform registers when every execution of the MMA addresses the same shared memory, in
per-thread registers moved with ``R2UR`` before each instruction when the address moves with a
stage index held in a variable -- the Hopper v5/v6/ws kernels with more than one stage
(27 ``R2UR`` in the MMA block's SASS; v2-v4 and one-stage rings have none).  The MMA block then
takes ~520 cycles at BLK_N 16-64 instead of 400-516 (results/silicon/timing/2026-12-01_bn_sweep.md).
:func:`with_wgmma_descriptors` states it for the builders and the TIRx frontend alike.  Not seen
by it: ptxas unrolls a k-loop of one or two iterations and folds the stage (v5 at K = 128, two
stages, has no ``R2UR``); the rule says ``per_thread`` there.

A wait on a ring stage's mbarrier (:attr:`protosim.ir.Wait.computed_address`) makes the barrier's
address at run time before its first try: TVM's sm_90a code goes through ``S2UR SR_CgaCtaId`` ->
``ULEA`` -> ``LEA`` on the wait's path, ~150 cycles where a try_wait on a completed phase alone
takes 23 (kernels/microbench/v5_parts.py PARTS 99: v5 at one CTA with that wait skipped).
:func:`with_ring_wait_addresses` marks, in one role's program, every wait on a barrier array of
which the role waits on two or more elements -- the v5/v6/ws rings of two or more stages, not
``mma_bar`` nor a one-stage ring -- for the builders and the TIRx frontend alike; what it costs
is the arch's ``wait_address_cycles`` (0 where not measured).

A shared-memory store's bank conflict follows from its lanes' addresses (:func:`bank_ways`).
The Hopper epilogue writes each thread's wgmma accumulator fragment into a row-major D tile
(:func:`fragment_store_ways`): on the H200 that store takes 8x the conflict-free time at BLK_N 64
and 128, 4x at 32, 2x at 16, exactly as counted here
(results/silicon/microbench/2026-12-01_h200_smem_store.md).
"""

from __future__ import annotations

import dataclasses

from protosim.ir import Op, ThreadCopy, Wait, Wgmma

ELEMENTWISE_ROUNDS = 8
"""Load latencies one k-tile's element-wise copy stream waits, for a schedule whose compiled
kernel is not known (SASS of nine ``nvcc -O3`` builds: 7.1-10.1; of the 87 kernels TVM built for
the records, median 7.25 -- not changed yet)."""
VECTOR_BYTES = 16
"""Loads this wide (128-bit) were all issued before the first store in every build read."""


BANKS = 32
"""Shared memory has 32 banks of 4 bytes (CUDA guide, compute capability 9.0 and 10.0)."""


def bank_ways(addresses: list[int], width: int = 4) -> int:
    """How many times over one warp's ``st.shared`` of ``width`` bytes per lane (lane byte
    addresses ``addresses``) hits its busiest bank, relative to a conflict-free store of the
    same width: distinct 4-byte words per bank, over the words per bank of a store that spreads
    evenly (``32 * width / 128``).  Two lanes on one word are one access (a broadcast)."""
    words: dict[int, set[int]] = {}
    for a in addresses:
        for w in range(a // 4, (a + width - 1) // 4 + 1):  # every word the lane touches
            words.setdefault(w % BANKS, set()).add(w)
    busiest = max(len(ws) for ws in words.values())
    even = max(1, len(addresses) * width // (4 * BANKS))
    return max(1, -(-busiest // even))


def fragment_store_ways(row_bytes: int) -> int:
    """The bank conflict of storing a wgmma accumulator fragment (m64nNk16, fp16 pairs: lane l
    holds rows l/4 and l/4 + 8, columns (l % 4) * 2 + 8j) into a row-major tile whose rows are
    ``row_bytes`` apart -- what TVM lowers the Hopper kernels' epilogue to (one 32-bit store per
    pair)."""
    return bank_ways([(lane // 4) * row_bytes + (lane % 4) * 4 for lane in range(32)], 4)


def copy_in_flight(loads: int, load_bytes: int) -> int:
    """Loads a lane keeps outstanding in a copy stream of ``loads`` loads of ``load_bytes``."""
    if load_bytes >= VECTOR_BYTES:
        return max(1, loads)
    return max(1, -(-loads // ELEMENTWISE_ROUNDS))


def _copy_runs(ops: list[Op]):
    """(start, end, loads per lane) of each run of back-to-back thread copies of one load width
    in ``ops``: one stream (the A and B tiles of a k-iteration, say)."""
    i = 0
    while i < len(ops):
        op = ops[i]
        if not isinstance(op, ThreadCopy):
            i += 1
            continue
        j = i
        while j < len(ops) and isinstance(ops[j], ThreadCopy) and ops[j].load_bytes == op.load_bytes:
            j += 1
        yield i, j, sum(c.loads_per_lane for c in ops[i:j])
        i = j


def with_copy_streams(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """``ops`` with each run of back-to-back thread copies of one load width (one stream: the
    A and B tiles of a k-iteration, say) given the ``in_flight`` of the whole run.  A copy
    that already states ``in_flight`` is left as it is."""
    out = list(ops)
    for i, j, _ in _copy_runs(out):
        window = copy_in_flight(sum(int(c.loads_per_lane) for c in out[i:j]), out[i].load_bytes)
        for n in range(i, j):
            if not out[n].in_flight:
                out[n] = dataclasses.replace(out[n], in_flight=window)
    return tuple(out)


def with_compiled_copy(ops: tuple[Op, ...], rounds: float) -> tuple[Op, ...]:
    """``ops`` with each copy stream waiting ``rounds`` load latencies, whatever it stated: what a
    compiled kernel's SASS says of its own copy (``kernels.toolchain.sass``: the issue model's
    cycles over the profile's ``global_load_l2_cycles``), where the builder's rule
    (:data:`ELEMENTWISE_ROUNDS`) is a typical build's."""
    if rounds <= 0:
        raise ValueError(f"rounds = {rounds}: a copy waits at least one load latency; give a positive number")
    out = list(ops)
    for i, j, loads in _copy_runs(out):
        for n in range(i, j):
            out[n] = dataclasses.replace(out[n], in_flight=loads / max(1.0, rounds))
    return tuple(out)


def with_wgmma_descriptors(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """``ops`` (one role's program) with every wgmma marked ``descriptors="per_thread"`` when
    its wgmmas read more than one stage of their buffers (the address moves at run time);
    unchanged otherwise."""
    stages = {tuple((a.buffer, a.stage) for a in op.reads) for op in ops if isinstance(op, Wgmma)}
    if len(stages) < 2:
        return ops
    return tuple(dataclasses.replace(op, descriptors="per_thread") if isinstance(op, Wgmma) else op for op in ops)


def _array(barrier: str) -> str | None:
    """``tma_bar`` of ``tma_bar[1]``; None for a barrier that is not an array element."""
    return barrier[:barrier.index("[")] if barrier.endswith("]") and "[" in barrier else None


def with_ring_wait_addresses(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """``ops`` (one role's program) with every wait marked ``computed_address`` whose barrier is an
    element of an array the role waits on at two or more elements (a ring stage's barrier, its index
    a variable at run time); unchanged otherwise."""
    elements: dict[str, set[str]] = {}
    for op in ops:
        if isinstance(op, Wait) and (array := _array(op.barrier)) is not None:
            elements.setdefault(array, set()).add(op.barrier)
    rings = {a for a, names in elements.items() if len(names) > 1}
    if not rings:
        return ops
    return tuple(dataclasses.replace(op, computed_address=True)
                 if isinstance(op, Wait) and _array(op.barrier) in rings and not op.computed_address else op
                 for op in ops)


def as_compiled(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """One role's program as TVM's compiled code runs it: its wgmma descriptors
    (:func:`with_wgmma_descriptors`) and its ring waits' addresses (:func:`with_ring_wait_addresses`)
    -- what the builders and the TIRx frontend both state of every role."""
    return with_ring_wait_addresses(with_wgmma_descriptors(ops))
