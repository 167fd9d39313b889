"""A corpus of Gluon kernels compiled to TTGIR, each with the verdict it should get, so
the simulator's TTGIR reader can be judged against kernels nobody here tuned it on.

    /work/tri-3.9.0/bin/python -m kernels.triton.gluon_corpus --out tests/fixtures/triton/gluon
    /work/tri-3.6.0/bin/python -m kernels.triton.gluon_corpus --out tests/fixtures/triton/gluon
    ... [--only SUBSTR] [--list]

Two families:

* **Sanitizer pairs.**  Triton's concurrency sanitizer (ConSan,
  TRITON_INSTRUMENTATION_MODE=consan) is tested by python/test/gluon/test_consan.py in
  triton-lang/triton: each test runs a small kernel in a buggy and a valid variant and
  checks what ConSan prints.  Each kernel here re-expresses one such test's protocol for
  ONE CTA in our own words (the test is named in the `pair` field and in a comment); the
  expected verdict is the test's, mapped onto a small vocabulary (VOCAB below) and kept
  verbatim in `triton_message`.
* **Tutorial-style kernels**: correct TMA / wgmma / tcgen05 / warp-specialized /
  persistent kernels (expected "clean").

Nothing needs a GPU: each kernel is compiled for explicit targets (sm_90a, sm_100a) the
way the JIT would compile it on the device -- the JIT's own binder computes the signature
and the specialization (divisibility) from stand-in arguments, then
triton.compile(GluonASTSource(...), target=GPUTarget(...)).  For every (kernel, target)
it writes under <out>/triton-<version>/:

    <name>.<target>.ttgir        kernel.asm["ttgir"] as Triton produced it
    <name>.<target>.json         the compiled kernel's metadata (JSON-able fields)
    <name>.<target>.launch.json  integer scalar arguments by name, plus "ctas" (grid size)
    <name>.<target>.alloc.mlir   the TTGIR after Triton's own allocate-shared-memory,
                                 allocate-tensor-memory and membar passes (allocation.offset,
                                 ttg.shared, ttg.tensor_memory_size, CTA barriers)

and merges its records into <out>/index.json (records of the other Triton version kept).
A kernel the installed Gluon cannot compile is recorded with compiled=false and the
error's first line.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon.language.nvidia import blackwell, hopper
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

TRITON_VERSION = triton.__version__
V36 = TRITON_VERSION.startswith("3.6")

# ---------------------------------------------------------------------------------------
# Version switches: the few names that changed between Triton 3.6 and 3.9.
# ---------------------------------------------------------------------------------------
TMA_LOAD = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
TMA_STORE = tma.async_store if hasattr(tma, "async_store") else tma.async_copy_shared_to_global
CP_ASYNC = getattr(cp, "async_load", None) or cp.async_copy_global_to_shared


@gluon.constexpr_function
def tmem_reg_layout(dtype, shape, tmem_layout, num_warps):
    """The register layout of a TMEM load/store (32x32b), whichever API this Gluon has."""
    def uw(x):
        return uw(x.value) if isinstance(x, ttgl.constexpr) else x

    dtype, shape, tmem_layout, num_warps = uw(dtype), [uw(s) for s in uw(shape)], uw(tmem_layout), uw(num_warps)
    from triton.experimental.gluon.language._semantic import _compute_tmem_reg_layout
    if V36:  # (element_ty, shape, layout, num_warps, instr_variant)
        return _compute_tmem_reg_layout(dtype, shape, tmem_layout, num_warps, "32x32b")
    return _compute_tmem_reg_layout(dtype, shape, shape, tmem_layout, num_warps, "32x32b")  # + alloc_shape


# ---------------------------------------------------------------------------------------
# Verdict vocabulary and Triton's messages (verbatim from test_consan.py's asserts).
# ---------------------------------------------------------------------------------------
VOCAB = ("clean", "outstanding_writes", "outstanding_reads", "outstanding", "deadlock", "expect_bytes_mismatch",
         "overarrive", "barrier_misuse", "missing_fence")
M_W = "Buffer being accessed has outstanding writes"
M_R = "Buffer being accessed has outstanding reads"
M_ANY = "Buffer being accessed has outstanding"
M_CP = "Accessing buffer with pending access. Pending access type: async_copy_global_to_shared"
M_TMA_ST = "Accessing buffer with pending access. Pending access type: async_copy_shared_to_global"
M_WGMMA = "Accessing buffer with pending access. Pending access type: warpgroup_mma operand read"
M_DEAD = "Deadlock detected"
M_UNDERFLOW = "Barrier arrive underflow"
M_REINIT = "Barrier re-initialized without prior invalidation"
M_UNINIT = "Barrier used before initialization or after invalidation"
M_FENCE = "Async shared-memory access is missing fence_async_shared"
CONSAN = "triton-lang/triton python/test/gluon/test_consan.py::"

XB = 128  # the tests' XBLOCK
X = ttgl.constexpr(XB)
F16_TILE_BYTES = ttgl.constexpr(XB * XB * 2)
# Register layouts for 4-warp partitions.
ROWS = ttgl.constexpr(ttgl.BlockedLayout([1, XB], [32, 1], [4, 1], [0, 1]))  # one row per thread
TILE = ttgl.constexpr(ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]))
VEC = ttgl.constexpr(ttgl.BlockedLayout([1], [32], [4], [0]))
CPV = ttgl.constexpr(ttgl.BlockedLayout([XB], [32], [4], [0]))  # whole row per thread: 16-byte cp.async
FLAT = ttgl.constexpr(ttgl.SwizzledSharedLayout(1, 1, 1, [0]))
FLAT2 = ttgl.constexpr(ttgl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
NVMMA16 = ttgl.constexpr(ttgl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2))
NVMMA32 = ttgl.constexpr(ttgl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2))
WGMMA_ACC = ttgl.constexpr(ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 16]))
TMEM_ACC = ttgl.constexpr(blackwell.TensorMemoryLayout((XB, XB), 1))


@gluon.jit
def _store_tile(out, val, layout: ttgl.constexpr, BM: ttgl.constexpr, BN: ttgl.constexpr, ld):
    om = ttgl.arange(0, BM, ttgl.SliceLayout(1, layout))[:, None]
    on = ttgl.arange(0, BN, ttgl.SliceLayout(0, layout))[None, :]
    ttgl.store(out + om * ld + on, val)


@gluon.jit
def _tile_ptrs(base, layout: ttgl.constexpr, BM: ttgl.constexpr, BN: ttgl.constexpr, ld):
    om = ttgl.arange(0, BM, ttgl.SliceLayout(1, layout))[:, None]
    on = ttgl.arange(0, BN, ttgl.SliceLayout(0, layout))[None, :]
    return base + om * ld + on


# =======================================================================================
# Sanitizer pairs: TMA, mbarrier, cp.async (sm_90a and sm_100a)
# =======================================================================================

@gluon.jit
def consan_tma_read_before_wait(in_desc, out, FAILURE: ttgl.constexpr):
    # After test_async_tma_kernel: one TMA load into a tile; the buggy variant reads the
    # tile before waiting on the barrier the copy completes (it waits afterwards).
    smem = ttgl.allocate_shared_memory(ttgl.float16, [X, X], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.expect(bar.index(0), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(0), smem)
    mbarrier.wait(bar.index(0), 0, pred=(not FAILURE))
    val = smem.load(TILE)
    mbarrier.wait(bar.index(0), 0, pred=FAILURE)
    mbarrier.invalidate(bar.index(0))
    _store_tile(out, val, TILE, X, X, X)


@gluon.jit
def consan_tma_two_tiles_one_barrier(a_desc, b_desc, out, FAILURE: ttgl.constexpr):
    # After test_async_tma_kernel_2bufs_1bar: two TMA loads complete on one barrier
    # (expect of both tiles' bytes); the sum of both tiles is read before the wait.
    a = ttgl.allocate_shared_memory(ttgl.float16, [X, X], a_desc.layout)
    b = ttgl.allocate_shared_memory(ttgl.float16, [X, X], b_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.expect(bar.index(0), 2 * F16_TILE_BYTES)
    TMA_LOAD(a_desc, [0, 0], bar.index(0), a)
    TMA_LOAD(b_desc, [0, 0], bar.index(0), b)
    mbarrier.wait(bar.index(0), 0, pred=(not FAILURE))
    val = a.load(TILE) + b.load(TILE)
    mbarrier.wait(bar.index(0), 0, pred=FAILURE)
    mbarrier.invalidate(bar.index(0))
    _store_tile(out, val, TILE, X, X, X)


@gluon.jit
def consan_tma_expect_bytes(in_desc, out, DELTA: ttgl.constexpr):
    # After test_async_tma_expect_bytes_mismatch: the barrier expects the tile's bytes
    # plus DELTA (-16: under, +16: over); 0 is our own matching control.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [X, X], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.expect(bar.index(0), F16_TILE_BYTES + DELTA)
    TMA_LOAD(in_desc, [0, 0], bar.index(0), smem)
    mbarrier.wait(bar.index(0), 0)
    val = smem.load(TILE)
    mbarrier.invalidate(bar.index(0))
    _store_tile(out, val, TILE, X, X, X)


@gluon.jit
def consan_tma_interleave(in_desc, out, FAILURE: ttgl.constexpr):
    # After test_tma_interleave_kernel: two tiles, two barriers, both loads in flight; the
    # buggy variant waits only the first barrier and reads both tiles; the kernel ends
    # with a TMA store of tile 0 (fence, store, store_wait).
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    mbarrier.expect(bar.index(0), F16_TILE_BYTES)
    mbarrier.expect(bar.index(1), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(0), smem.index(0))
    TMA_LOAD(in_desc, [0, 0], bar.index(1), smem.index(1))
    mbarrier.wait(bar.index(0), 0)
    if not FAILURE:
        mbarrier.wait(bar.index(1), 0)
    ptrs = _tile_ptrs(out, TILE, X, X, X)
    ttgl.store(ptrs, smem.index(0).load(TILE))
    ttgl.store(ptrs, smem.index(1).load(TILE))
    mbarrier.invalidate(bar.index(0))
    mbarrier.invalidate(bar.index(1))
    fence_async_shared()
    TMA_STORE(in_desc, [0, 0], smem.index(0))
    tma.store_wait(0)


@gluon.jit
def consan_tma_wait_other_barrier(in_desc, out, FAILURE: ttgl.constexpr):
    # After test_tma_wait_tracks_only_waited_barrier: two loads on two barriers; only
    # barrier 1 is waited before the read; the buggy variant reads tile 0.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    mbarrier.expect(bar.index(0), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(0), smem.index(0))
    mbarrier.expect(bar.index(1), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(1), smem.index(1))
    mbarrier.wait(bar.index(1), 0)
    if FAILURE:
        val = smem.index(0).load(TILE)
    else:
        val = smem.index(1).load(TILE)
    _store_tile(out, val, TILE, X, X, X)
    if not FAILURE:
        mbarrier.wait(bar.index(0), 0)
    mbarrier.invalidate(bar.index(0))
    mbarrier.invalidate(bar.index(1))


@gluon.jit
def consan_tma_same_tile_two_loads(in_desc, out, WAIT_LATEST: ttgl.constexpr):
    # After test_tma_wait_does_not_publish_overwritten_row: two TMA loads write the SAME
    # tile, each on its own barrier.  Waiting the later load's barrier before the read is
    # valid; waiting only the earlier one leaves the second write in flight.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [X, X], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    mbarrier.expect(bar.index(0), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(0), smem)
    mbarrier.expect(bar.index(1), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(1), smem)
    if WAIT_LATEST:
        mbarrier.wait(bar.index(1), 0)
    else:
        mbarrier.wait(bar.index(0), 0)
    val = smem.load(TILE)
    _store_tile(out, val, TILE, X, X, X)
    if WAIT_LATEST:
        mbarrier.wait(bar.index(0), 0)
    else:
        mbarrier.wait(bar.index(1), 0)
    mbarrier.invalidate(bar.index(0))
    mbarrier.invalidate(bar.index(1))


@gluon.jit
def consan_cp_async_wait_group(inp, FAILURE: ttgl.constexpr):
    # After test_async_copy: cp.async into stage 0, then stage 1, each its own group;
    # wait_group(1) retires stage 0's group before stage 0 is copied into again;
    # wait_group(2) (the bug) retires nothing.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], NVMMA16)
    ptrs = _tile_ptrs(inp, ROWS, X, X, X)
    CP_ASYNC(smem.index(0), ptrs)
    cp.commit_group()
    CP_ASYNC(smem.index(1), ptrs)
    cp.commit_group()
    cp.wait_group(2 if FAILURE else 1)
    CP_ASYNC(smem.index(0), ptrs)
    cp.commit_group()
    cp.wait_group(0)


@gluon.jit
def consan_tma_store_reuse(out_desc, FAILURE: ttgl.constexpr):
    # After test_tma_store: two TMA stores read stages 0 and 1; store_wait(1) lets stage
    # 0 be overwritten; stage 1 may be overwritten only after store_wait(0) (skipped in
    # the buggy variant).
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], out_desc.layout)
    val = ttgl.full([X, X], 42, ttgl.float16, ROWS)
    TMA_STORE(out_desc, [0, 0], smem.index(0))
    TMA_STORE(out_desc, [0, 0], smem.index(1))
    tma.store_wait(1)
    smem.index(0).store(val)
    if not FAILURE:
        tma.store_wait(0)
    smem.index(1).store(val)


# ---------------------------------------------------------------------------------------
# Barrier misuse and deadlocks (no data)
# ---------------------------------------------------------------------------------------

@gluon.jit
def consan_overarrival():
    # After test_deadlock_overarrival: count-1 barrier arrived twice completes phases 0
    # and 1; the wait for parity 0 then waits for a phase nobody will complete.
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    mbarrier.arrive(bar.index(0), count=1)
    mbarrier.arrive(bar.index(0), count=1)
    mbarrier.wait(bar.index(0), 0)


@gluon.jit
def consan_reinit(WITH_INVALIDATE: ttgl.constexpr):
    # After test_barrier_reinit_requires_invalidate: init twice, with or without an
    # invalidate between.
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    if WITH_INVALIDATE:
        mbarrier.invalidate(bar.index(0))
    mbarrier.init(bar.index(0), count=1)
    mbarrier.invalidate(bar.index(0))


@gluon.jit
def consan_use_without_init(USE: ttgl.constexpr):
    # After test_barrier_use_without_init: a barrier never initialised is waited,
    # arrived, invalidated or expected; "init" is our own valid control.
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    if USE == "init":
        mbarrier.init(bar.index(0), count=1)
        mbarrier.arrive(bar.index(0), count=1)
        mbarrier.wait(bar.index(0), 0)
        mbarrier.invalidate(bar.index(0))
    elif USE == "wait":
        mbarrier.wait(bar.index(0), 0)
    elif USE == "arrive":
        mbarrier.arrive(bar.index(0), count=1)
    elif USE == "invalidate":
        mbarrier.invalidate(bar.index(0))
    else:
        mbarrier.expect(bar.index(0), F16_TILE_BYTES)


@gluon.jit
def consan_use_after_invalidate(USE: ttgl.constexpr):
    # After test_barrier_use_after_invalidate: init, invalidate, then use.
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.invalidate(bar.index(0))
    if USE == "wait":
        mbarrier.wait(bar.index(0), 0)
    elif USE == "arrive":
        mbarrier.arrive(bar.index(0), count=1)
    else:
        mbarrier.expect(bar.index(0), F16_TILE_BYTES)


@gluon.jit
def _ws_wait0(bar):
    mbarrier.wait(bar.index(0), 0)


@gluon.jit
def _ws_wait1(bar):
    mbarrier.wait(bar.index(1), 0)


@gluon.jit
def _ws_nothing(bar):
    pass


@gluon.jit
def _ws_arrive1(bar):
    mbarrier.arrive(bar.index(1), count=1)


@gluon.jit
def consan_ws_deadlock(KIND: ttgl.constexpr):
    # After test_deadlock_two_partitions ("two_partitions": each partition waits a
    # barrier nobody arrives on), test_deadlock_after_other_partition_returns ("after_return":
    # one worker arrives on barrier 1 and returns, the other waits barrier 0 forever) and
    # test_deadlock_with_padded_warp_specialize_partition ("padded": three 1-warp workers
    # wait, the default partition does nothing).
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    if KIND == "two_partitions":
        ttgl.warp_specialize([(_ws_wait0, (bar, )), (_ws_wait1, (bar, ))], [4], [32])
    elif KIND == "after_return":
        ttgl.warp_specialize([(_ws_nothing, (bar, )), (_ws_wait0, (bar, )), (_ws_arrive1, (bar, ))], [4, 4], [32, 32])
    else:
        ttgl.warp_specialize([(_ws_nothing, (bar, )), (_ws_wait0, (bar, )), (_ws_wait0, (bar, )), (_ws_wait0, (bar, ))],
                             [1, 1, 1], [32, 32, 32])


@gluon.jit
def _ws_arrive_then_wait(bar, MINE: ttgl.constexpr, OTHER: ttgl.constexpr, COUNT: ttgl.constexpr):
    mbarrier.arrive(bar.index(OTHER), count=COUNT)
    mbarrier.wait(bar.index(MINE), 0)


@gluon.jit
def _ws_wait_only(bar, MINE: ttgl.constexpr):
    mbarrier.wait(bar.index(MINE), 0)


@gluon.jit
def consan_ws_arrival_count(KIND: ttgl.constexpr):
    # "underarrival" after test_deadlock_underarrival: count-2 barriers, each partition
    # arrives once on the other's barrier then waits its own -> deadlock.
    # "underflow" after test_barrier_underflow: arrive with count 2 on a count-1 barrier.
    # "balanced" is our own control: count-1 barriers, one arrival each -> clean.
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    if KIND == "underarrival":
        mbarrier.init(bar.index(0), count=2)
        mbarrier.init(bar.index(1), count=2)
        ttgl.warp_specialize([(_ws_arrive_then_wait, (bar, 0, 1, 1)), (_ws_arrive_then_wait, (bar, 1, 0, 1))], [4],
                             [32])
    elif KIND == "underflow":
        mbarrier.init(bar.index(0), count=1)
        mbarrier.init(bar.index(1), count=1)
        ttgl.warp_specialize([(_ws_arrive_then_wait, (bar, 0, 1, 2)), (_ws_wait_only, (bar, 1))], [4], [32])
    else:
        mbarrier.init(bar.index(0), count=1)
        mbarrier.init(bar.index(1), count=1)
        ttgl.warp_specialize([(_ws_arrive_then_wait, (bar, 0, 1, 1)), (_ws_arrive_then_wait, (bar, 1, 0, 1))], [4],
                             [32])


@gluon.jit
def _ws_wait_then_arrive(bar):
    mbarrier.wait(bar.index(0), 0)
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def _ws_wait_phase1(bar):
    mbarrier.wait(bar.index(0), 1)


@gluon.jit
def consan_ws_different_phases():
    # After test_deadlock_different_phases (valid): phase 0 completed before the fork;
    # one partition waits parity 0 then completes phase 1, the other waits parity 1.
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.arrive(bar.index(0), count=1)
    ttgl.warp_specialize([(_ws_wait_then_arrive, (bar, )), (_ws_wait_phase1, (bar, ))], [4], [32])


@gluon.jit
def _ws_tma_own_tile(in_desc, smem, bar, I: ttgl.constexpr):
    mbarrier.expect(bar.index(I), F16_TILE_BYTES)
    TMA_LOAD(in_desc, [0, 0], bar.index(I), smem.index(I))
    mbarrier.wait(bar.index(I), 0)


@gluon.jit
def consan_ws_tma_signals(in_desc):
    # After test_deadlock_exempt_when_tma_signals (valid): each partition waits a barrier
    # that only its own TMA load completes.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    ttgl.warp_specialize([(_ws_tma_own_tile, (in_desc, smem, bar, 0)), (_ws_tma_own_tile, (in_desc, smem, bar, 1))],
                         [4], [32])


# ---------------------------------------------------------------------------------------
# Warp-specialized shared-memory handoffs through mbarriers
# ---------------------------------------------------------------------------------------

@gluon.jit
def _ws_sw_consumer(smem, bar, FAILURE: ttgl.constexpr):
    mbarrier.wait(bar.index(0), 0, pred=(not FAILURE))
    val = smem.index(0).load(VEC)
    smem.index(1).store(val)
    mbarrier.arrive(bar.index(1), count=1)


@gluon.jit
def _ws_sw_producer(smem, bar, FAILURE: ttgl.constexpr):
    smem.index(0).store(ttgl.arange(0, X, VEC).to(ttgl.float16))
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def consan_ws_store_wait_load(out, FAILURE: ttgl.constexpr):
    # After test_ws_store_wait_load: a worker writes buffer 0 and arrives; the default
    # partition waits (skipped in the buggy variant) and reads it.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X], FLAT)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    ttgl.warp_specialize([(_ws_sw_consumer, (smem, bar, FAILURE)), (_ws_sw_producer, (smem, bar, FAILURE))], [4],
                         [32])
    mbarrier.wait(bar.index(1), 0)
    ttgl.store(out + ttgl.arange(0, X, VEC), smem.index(0).load(VEC))


@gluon.jit
def _ws_lw_writer(smem, bar, FAILURE: ttgl.constexpr):
    mbarrier.wait(bar.index(0), 0, pred=(not FAILURE))
    smem.index(0).store(ttgl.arange(0, X, VEC).to(ttgl.float16))
    mbarrier.arrive(bar.index(1), count=1)


@gluon.jit
def _ws_lw_reader(smem, bar, FAILURE: ttgl.constexpr):
    val = smem.index(0).load(VEC)
    mbarrier.arrive(bar.index(0), count=1)
    smem.index(1).store(val)


@gluon.jit
def consan_ws_load_wait_store(out, FAILURE: ttgl.constexpr):
    # After test_ws_load_wait_store: a worker reads buffer 0 and arrives; the default
    # partition overwrites buffer 0 after waiting (skipped in the buggy variant).
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X], FLAT)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    ttgl.warp_specialize([(_ws_lw_writer, (smem, bar, FAILURE)), (_ws_lw_reader, (smem, bar, FAILURE))], [4], [32])
    mbarrier.wait(bar.index(1), 0)
    ttgl.store(out + ttgl.arange(0, X, VEC), smem.index(0).load(VEC))


@gluon.jit
def _ws_reader_arrive(smem, bar, ARRIVE_ON: ttgl.constexpr, SINK: ttgl.constexpr):
    val = smem.index(0).load(VEC)
    mbarrier.arrive(bar.index(ARRIVE_ON), count=1)
    smem.index(SINK).store(val)


@gluon.jit
def _ws_two_readers_writer(smem, bar, MISSING: ttgl.constexpr, ONE_BAR: ttgl.constexpr):
    if ONE_BAR:
        mbarrier.wait(bar.index(0), 0, pred=(MISSING == "none"))
    else:
        if MISSING != "1":
            mbarrier.wait(bar.index(0), 0)
        if MISSING != "2":
            mbarrier.wait(bar.index(1), 0)
    smem.index(0).store(ttgl.arange(0, X, VEC).to(ttgl.float16))
    mbarrier.arrive(bar.index(2), count=1)


@gluon.jit
def consan_ws_two_readers(out, MISSING: ttgl.constexpr, ONE_BAR: ttgl.constexpr):
    # Two readers of buffer 0 and a writer that overwrites it after both have read.
    # ONE_BAR=False after test_ws_two_loads_two_bars (each reader arrives its own
    # barrier; MISSING "1"/"2" drops one of the writer's waits); ONE_BAR=True after
    # test_ws_two_loads_one_bar (both arrive one count-2 barrier; MISSING "all" drops the wait).
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, X], FLAT)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [3, 1], mbarrier.MBarrierLayout())
    if ONE_BAR:
        mbarrier.init(bar.index(0), count=2)
        mbarrier.init(bar.index(1), count=1)
        mbarrier.init(bar.index(2), count=1)
        ttgl.warp_specialize([(_ws_reader_arrive, (smem, bar, 0, 1)), (_ws_reader_arrive, (smem, bar, 0, 2)),
                              (_ws_two_readers_writer, (smem, bar, MISSING, ONE_BAR))], [4, 4], [32, 32])
    else:
        for i in ttgl.static_range(3):
            mbarrier.init(bar.index(i), count=1)
        ttgl.warp_specialize([(_ws_reader_arrive, (smem, bar, 0, 1)), (_ws_reader_arrive, (smem, bar, 1, 2)),
                              (_ws_two_readers_writer, (smem, bar, MISSING, ONE_BAR))], [4, 4], [32, 32])
    mbarrier.wait(bar.index(2), 0)
    ttgl.store(out + ttgl.arange(0, X, VEC), smem.index(0).load(VEC))


@gluon.jit
def _ws_loop_reader(smem, bar, WAIT_ON: ttgl.constexpr, ARRIVE_ON: ttgl.constexpr, SINK: ttgl.constexpr,
                    SKIP_WAIT: ttgl.constexpr):
    acc = ttgl.zeros([X], ttgl.float16, VEC)
    phase = 0
    for _ in range(10):
        if not SKIP_WAIT:
            mbarrier.wait(bar.index(WAIT_ON), phase)
        phase = phase ^ 1
        val = smem.index(0).load(VEC)
        mbarrier.arrive(bar.index(ARRIVE_ON), count=1)
        acc = acc + val
    smem.index(SINK).store(acc)


@gluon.jit
def _ws_loop_writer(smem, bar, MISSING: ttgl.constexpr):
    phase = 0
    for _ in range(10):
        if MISSING != "0":
            mbarrier.wait(bar.index(0), phase)
        if MISSING != "1":
            mbarrier.wait(bar.index(1), phase)
        phase = phase ^ 1
        smem.index(0).store(ttgl.arange(0, X, VEC).to(ttgl.float16))
        mbarrier.arrive(bar.index(2), count=1)
        mbarrier.arrive(bar.index(3), count=1)


@gluon.jit
def consan_ws_loop_two_readers(MISSING: ttgl.constexpr):
    # After test_ws_two_loads_two_bars_loop: ten rounds; the writer fills buffer 0 and
    # signals "full" barriers 2 and 3, each reader waits its "full" barrier, reads, and
    # arrives its "empty" barrier (0 or 1) the writer waits.  "full" barriers start
    # with one arrival so round 0 can read.  MISSING drops one wait: "0"/"1" the
    # writer's, "2"/"3" a reader's.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, X], FLAT)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [4, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(4):
        mbarrier.init(bar.index(i), count=1)
    mbarrier.arrive(bar.index(2), count=1)
    mbarrier.arrive(bar.index(3), count=1)
    ttgl.warp_specialize([(_ws_loop_reader, (smem, bar, 2, 0, 1, MISSING == "2")),
                          (_ws_loop_reader, (smem, bar, 3, 1, 2, MISSING == "3")),
                          (_ws_loop_writer, (smem, bar, MISSING))], [4, 4], [32, 32])


@gluon.jit
def _ws_order_writer(smem, bar):
    phase = 0
    for _ in range(10):
        mbarrier.wait(bar.index(2), phase)
        phase = phase ^ 1
        smem.index(0).store(ttgl.arange(0, X, VEC).to(ttgl.float16))
        mbarrier.arrive(bar.index(0), count=1)
        smem.index(1).store(ttgl.arange(0, X, VEC).to(ttgl.float16))
        mbarrier.arrive(bar.index(1), count=1)


@gluon.jit
def _ws_order_reader(smem, bar, FAILURE: ttgl.constexpr):
    acc = ttgl.zeros([X], ttgl.float16, VEC)
    phase = 0
    for _ in range(10):
        mbarrier.wait(bar.index(0), phase)
        val = smem.index(1 if FAILURE else 0).load(VEC)
        mbarrier.wait(bar.index(1), phase)
        phase = phase ^ 1
        mbarrier.arrive(bar.index(2), count=1)
        acc = acc + val
    smem.index(2).store(acc)


@gluon.jit
def consan_ws_load_ordering(FAILURE: ttgl.constexpr):
    # After test_ws_load_ordering: buffer 0 is published by barrier 0, buffer 1 by
    # barrier 1; the buggy reader reads buffer 1 after waiting only barrier 0.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [3, X], FLAT)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [3, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(3):
        mbarrier.init(bar.index(i), count=1)
    mbarrier.arrive(bar.index(2), count=1)
    ttgl.warp_specialize([(_ws_order_writer, (smem, bar)), (_ws_order_reader, (smem, bar, FAILURE))], [4], [32])


@gluon.jit
def _ws_cp_pingpong(inp, smem, FAILURE: ttgl.constexpr, BASE: ttgl.constexpr):
    offs = ttgl.arange(0, X, CPV)
    acc = ttgl.zeros([X], ttgl.float16, CPV)
    CP_ASYNC(smem.index(BASE), inp + offs)
    cp.commit_group()
    for i in range(1, 10):
        if i < 9:
            CP_ASYNC(smem.index(BASE + i % 2), inp + offs)
            cp.commit_group()
            cp.wait_group(1)
        else:
            cp.wait_group(0)
        rb: ttgl.constexpr = 0 if (FAILURE and BASE == 2) else BASE
        acc = acc + smem.index(rb + (i - 1) % 2).load(CPV)
    smem.index(BASE).store(acc)


@gluon.jit
def consan_ws_cp_async_groups(inp, FAILURE: ttgl.constexpr):
    # After test_ws_async_copy_commits: two partitions each run a cp.async ping-pong over
    # their own two buffers; a partition's wait_group covers only its own copies, so the
    # buggy second partition reading the first one's buffers races with them.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [4, X], FLAT)
    ttgl.warp_specialize([(_ws_cp_pingpong, (inp, smem, FAILURE, 0)), (_ws_cp_pingpong, (inp, smem, FAILURE, 2))], [4],
                         [32])


@gluon.jit
def _ws_cp_publisher(inp, smem, bar):
    offs = ttgl.arange(0, X, CPV)
    CP_ASYNC(smem.index(0), inp + offs)
    cp.commit_group()
    CP_ASYNC(smem.index(1), inp + offs)
    cp.commit_group()
    cp.wait_group(1)
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def _ws_cp_subscriber(inp, smem, bar, FAILURE: ttgl.constexpr):
    mbarrier.wait(bar.index(0), 0)
    val = smem.index(1 if FAILURE else 0).load(CPV)
    smem.index(0).store(val)


@gluon.jit
def consan_ws_cp_async_visibility(inp, FAILURE: ttgl.constexpr):
    # After test_ws_async_copy_wait_visibility: a partition copies buffers 0 and 1 with
    # cp.async, wait_group(1) (buffer 0 done), then arrives; the other partition waits
    # the barrier and reads buffer 0 (valid) or buffer 1 (still in flight).
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, X], FLAT)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    ttgl.warp_specialize([(_ws_cp_publisher, (inp, smem, bar)), (_ws_cp_subscriber, (inp, smem, bar, FAILURE))], [4],
                         [32])


@gluon.jit
def _ws_fence_producer(smem, bar, WHERE: ttgl.constexpr):
    smem.store(ttgl.full([X, X], 42.0, ttgl.float16, ROWS))
    if WHERE == "producer":
        fence_async_shared()
    mbarrier.arrive(bar, count=1)
    if WHERE == "producer_after_arrive":
        fence_async_shared()


@gluon.jit
def _ws_fence_consumer(out_desc, smem, bar, WHERE: ttgl.constexpr):
    mbarrier.wait(bar, 0)
    if WHERE == "consumer":
        fence_async_shared()
    TMA_STORE(out_desc, [0, 0], smem)
    tma.store_wait(0)


@gluon.jit
def consan_ws_fence_before_tma_store(out_desc, WHERE: ttgl.constexpr):
    # After test_fence_async_shared_across_warp_specialize: one partition writes a tile
    # with ordinary stores and arrives; the other waits and TMA-stores it.  The generic
    # -> async proxy fence must sit between the writes and the TMA read: in the producer
    # before its arrive, or in the consumer after its wait.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    ttgl.warp_specialize([(_ws_fence_producer, (smem, bar.index(0), WHERE)),
                          (_ws_fence_consumer, (out_desc, smem, bar.index(0), WHERE))], [4], [32])


@gluon.jit
def _ws_alias_writer(alias0, bar, OVERLAP: ttgl.constexpr):
    if OVERLAP:
        alias0.store(ttgl.full([X, 2 * X], 42.0, ttgl.float16, ttgl.BlockedLayout([2, X], [32, 1], [4, 1], [0, 1])))
    else:
        alias0.store(ttgl.full([X, X], 42.0, ttgl.float16, ROWS))
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def _ws_alias_reader(alias1, sink, bar, MISSING_BAR: ttgl.constexpr):
    if not MISSING_BAR:
        mbarrier.wait(bar.index(0), 0)
    sink.store(alias1.load(ROWS))


@gluon.jit
def consan_ws_alias_views(MISSING_BAR: ttgl.constexpr, OVERLAP: ttgl.constexpr):
    # After test_aliasing_shared_visibility_outstanding_write: a [128, 256] buffer; the
    # writer stores its left half (or, OVERLAP, the whole buffer), the reader reads the
    # right half, after the writer's barrier unless MISSING_BAR.  Only an overlapping
    # write without the wait races.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [X, 2 * X], FLAT2)
    sink = ttgl.allocate_shared_memory(ttgl.float16, [X, X], FLAT2)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    alias0 = smem if OVERLAP else smem.slice(0, X, dim=1)
    alias1 = smem.slice(X, X, dim=1)
    ttgl.warp_specialize([(_ws_alias_writer, (alias0, bar, OVERLAP)), (_ws_alias_reader, (alias1, sink, bar, MISSING_BAR))],
                         [4], [32])


# =======================================================================================
# Sanitizer pairs: wgmma (sm_90a only)
# =======================================================================================

@gluon.jit
def consan_wgmma_operand_overwrite(FAILURE: ttgl.constexpr, TWO: ttgl.constexpr):
    # After test_warpgroup_mma (TWO=False): an async wgmma reads A and B from shared
    # memory; the buggy variant overwrites A before warpgroup_mma_wait(0).
    # After test_warpgroup_mma2 (TWO=True): two async wgmmas, wait(1) retires only the
    # first, so A is still being read by the second when the buggy variant overwrites it.
    a = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    b = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    acc = ttgl.zeros([X, X], ttgl.float16, WGMMA_ACC)
    acc = hopper.warpgroup_mma(a, b, acc, is_async=True)
    if TWO:
        acc = hopper.warpgroup_mma(a, b, acc, is_async=True)
        acc = hopper.warpgroup_mma_wait(num_outstanding=1, deps=[acc])
    if FAILURE:
        a.store(ttgl.full([X, X], 42, ttgl.float16, ROWS))
    acc = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    a.store(ttgl.full([X, X], 42, ttgl.float16, ROWS))


@gluon.jit
def consan_wgmma_ring(a_desc, b_desc, FAILURE: ttgl.constexpr):
    # After test_multibuffered_wgmma_loop: TMA loads run one tile ahead of an async wgmma
    # that keeps one MMA in flight (wait(1)).  With 3 buffers the buffer reloaded is the
    # one retired by wait(1); with 2 (the bug) it is the one the in-flight wgmma reads.
    NBUF: ttgl.constexpr = 2 if FAILURE else 3
    acc = ttgl.zeros([X, X], ttgl.float32, WGMMA_ACC)
    a = ttgl.allocate_shared_memory(ttgl.float16, [NBUF, X, X], a_desc.layout)
    b = ttgl.allocate_shared_memory(ttgl.float16, [NBUF, X, X], b_desc.layout)
    bars = ttgl.allocate_shared_memory(ttgl.int64, [NBUF, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(NBUF):
        mbarrier.init(bars.index(i), count=1)
    mbarrier.expect(bars.index(0), 2 * F16_TILE_BYTES)
    TMA_LOAD(a_desc, [0, 0], bars.index(0), a.index(0))
    TMA_LOAD(b_desc, [0, 0], bars.index(0), b.index(0))
    ins = 1
    ext = 0
    phase = 0
    for i in range(10):
        if i < 9:
            mbarrier.expect(bars.index(ins), 2 * F16_TILE_BYTES)
            TMA_LOAD(a_desc, [0, 0], bars.index(ins), a.index(ins))
            TMA_LOAD(b_desc, [0, 0], bars.index(ins), b.index(ins))
            ins = (ins + 1) % NBUF
        mbarrier.wait(bars.index(ext), phase)
        acc = hopper.warpgroup_mma(a.index(ext), b.index(ext), acc, is_async=True)
        acc = hopper.warpgroup_mma_wait(num_outstanding=1, deps=[acc])
        ext = (ext + 1) % NBUF
        if ext == 0:
            phase = phase ^ 1
    acc = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    for i in ttgl.static_range(NBUF):
        mbarrier.invalidate(bars.index(i))


@gluon.jit
def _ws_wgmma_issuer(a, b, bar):
    acc = ttgl.zeros([X, X], ttgl.float16, WGMMA_ACC)
    acc = hopper.warpgroup_mma(a.index(0), b.index(0), acc, is_async=True)
    acc = hopper.warpgroup_mma(a.index(1), b.index(1), acc, is_async=True)
    acc = hopper.warpgroup_mma_wait(num_outstanding=1, deps=[acc])
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def _ws_wgmma_overwriter(a, b, bar, FAILURE: ttgl.constexpr):
    mbarrier.wait(bar.index(0), 0)
    a.index(1 if FAILURE else 0).store(ttgl.full([X, X], 42, ttgl.float16, ROWS))


@gluon.jit
def consan_ws_wgmma_visibility(FAILURE: ttgl.constexpr):
    # After test_ws_wgmma_wait_visibility: the default partition issues wgmmas on buffer
    # pairs 0 and 1, waits until one is outstanding and arrives; the worker then
    # overwrites A[0] (retired) or A[1] (still read: the bug).
    a = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], NVMMA16)
    b = ttgl.allocate_shared_memory(ttgl.float16, [2, X, X], NVMMA16)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    ttgl.warp_specialize([(_ws_wgmma_issuer, (a, b, bar)), (_ws_wgmma_overwriter, (a, b, bar, FAILURE))], [4], [32])


# =======================================================================================
# Sanitizer pairs: tcgen05 / TMEM (sm_100a only)
# =======================================================================================

@gluon.jit
def consan_tcgen05_access(in_desc, out_desc, FAILURE: ttgl.constexpr, ACCESS: ttgl.constexpr):
    # After test_tcgen5_mma: a tcgen05_mma reads A, B (shared) and writes the TMEM
    # accumulator; tcgen05_commit arrives on a barrier when it is done.  Then one access
    # that conflicts with it: a TMA load into A ("tma_cp") or a store to A
    # ("local_store") -- writes over an operand still read --, a TMEM load ("tmem_load",
    # then a TMA store of the result) or store ("tmem_store") of the accumulator still
    # written.  The valid variant waits the commit barrier first.
    a = ttgl.allocate_shared_memory(ttgl.float16, [X, X], in_desc.layout)
    b = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    mma_bar = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [X, X], TMEM_ACC)
    mbarrier.init(mma_bar.index(0), count=1)
    mbarrier.init(mma_bar.index(1), count=1)
    blackwell.tcgen05_mma(a, b, acc)
    blackwell.tcgen05_commit(mma_bar.index(0))
    if not FAILURE:
        mbarrier.wait(mma_bar.index(0), 0)
    REG: ttgl.constexpr = tmem_reg_layout(ttgl.float32, [X, X], TMEM_ACC, 4)
    if ACCESS == "tma_cp":
        mbarrier.expect(mma_bar.index(1), F16_TILE_BYTES)
        TMA_LOAD(in_desc, [0, 0], mma_bar.index(1), a)
        mbarrier.wait(mma_bar.index(1), 0)
    elif ACCESS == "local_store":
        a.store(ttgl.full([X, X], 42, ttgl.float16, ROWS))
    elif ACCESS == "tmem_load":
        res = acc.load(REG)
        c = ttgl.allocate_shared_memory(ttgl.float16, [X, X], out_desc.layout, res.to(ttgl.float16))
        fence_async_shared()
        TMA_STORE(out_desc, [0, 0], c)
        tma.store_wait(0)
    else:
        acc.store(ttgl.full([X, X], 42, ttgl.float32, REG))
    mbarrier.invalidate(mma_bar.index(0))
    mbarrier.invalidate(mma_bar.index(1))


@gluon.jit
def consan_tcgen05_copy(inp, out, FAILURE: ttgl.constexpr, ACCESS: ttgl.constexpr):
    # After test_tcgen5_copy: tcgen05_copy moves a shared tile into TMEM and commits to a
    # barrier; then the source is overwritten ("local_store": outstanding read) or TMEM
    # is loaded ("tmem_load": outstanding write) -- before the wait in the buggy variant.
    tl_: ttgl.constexpr = blackwell.TensorMemoryLayout((X, X), 1)
    tmem = blackwell.allocate_tensor_memory(ttgl.int32, [X, X], tl_)
    REG: ttgl.constexpr = tmem_reg_layout(ttgl.int32, [X, X], tl_, 4)
    ptrs = _tile_ptrs(inp, REG, X, X, X)
    smem = ttgl.allocate_shared_memory(ttgl.int32, [X, X], NVMMA32)
    smem.store(ttgl.load(ptrs))
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    blackwell.tcgen05_copy(smem, tmem)
    blackwell.tcgen05_commit(bar.index(0))
    if not FAILURE:
        mbarrier.wait(bar.index(0), 0)
    if ACCESS == "local_store":
        smem.store(ttgl.zeros([X, X], ttgl.int32, REG))
    else:
        ttgl.store(_tile_ptrs(out, REG, X, X, X), tmem.load(REG))
    if FAILURE:
        mbarrier.wait(bar.index(0), 0)
    mbarrier.invalidate(bar.index(0))


@gluon.jit
def consan_tcgen05_multibar(BUF: ttgl.constexpr, BAR: ttgl.constexpr):
    # After test_tcgen5_mma_multibar: MMA 0 writes accumulator 0 and arrives barrier 1
    # (barrier 0 is attached with a false predicate), MMA 1 writes accumulator 1 and
    # arrives barrier 2, a commit arrives barrier 3.  Waiting barrier BAR then storing
    # accumulator BUF is valid iff that barrier covers the MMA writing it (BAR//2 >= BUF).
    a = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    b = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [4, 1], mbarrier.MBarrierLayout())
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [2, X, X], TMEM_ACC)
    for i in ttgl.static_range(4):
        mbarrier.init(bar.index(i), count=1)
    blackwell.tcgen05_mma(a, b, acc.index(0), mbarriers=[bar.index(0), bar.index(1)], mbarrier_preds=[False, True])
    blackwell.tcgen05_mma(a, b, acc.index(1), mbarriers=[bar.index(2)])
    blackwell.tcgen05_commit(bar.index(3))
    mbarrier.wait(bar.index(BAR), 0)
    REG: ttgl.constexpr = tmem_reg_layout(ttgl.float32, [X, X], TMEM_ACC, 4)
    acc.index(BUF).store(ttgl.full([X, X], 42, ttgl.float32, REG))
    for i in ttgl.static_range(4):
        mbarrier.invalidate(bar.index(i))


@gluon.jit
def consan_tcgen05_ring(a_desc, b_desc, FAILURE: ttgl.constexpr):
    # After test_multibuffered_loop: TMA loads run two tiles ahead of tcgen05_mmas that
    # each arrive one of two MMA barriers; an MMA is waited one iteration after it is
    # issued.  With 3 buffers the reloaded buffer's MMA has been waited; with 2 (the
    # bug) the TMA load overwrites operands of an MMA still in flight.
    NBUF: ttgl.constexpr = 2 if FAILURE else 3
    a = ttgl.allocate_shared_memory(ttgl.float16, [NBUF, X, X], a_desc.layout)
    b = ttgl.allocate_shared_memory(ttgl.float16, [NBUF, X, X], b_desc.layout)
    ld = ttgl.allocate_shared_memory(ttgl.int64, [NBUF, 1], mbarrier.MBarrierLayout())
    mm = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [X, X], TMEM_ACC)
    for i in ttgl.static_range(NBUF):
        mbarrier.init(ld.index(i), count=1)
    for i in ttgl.static_range(2):
        mbarrier.init(mm.index(i), count=1)
    for i in ttgl.static_range(2):
        mbarrier.expect(ld.index(i), 2 * F16_TILE_BYTES)
        TMA_LOAD(a_desc, [0, 0], ld.index(i), a.index(i))
        TMA_LOAD(b_desc, [0, 0], ld.index(i), b.index(i))
    ins = 2 % NBUF
    ext = 0
    phase = 0
    mma_id = 0
    wait_id = 0
    mma_phase = 0
    mbarrier.wait(ld.index(0), 0)
    blackwell.tcgen05_mma(a.index(0), b.index(0), acc, use_acc=False, mbarriers=[mm.index(0)])
    ext = 1 % NBUF
    if ext == 0:
        phase = phase ^ 1
    mma_id = 1
    for i in range(10):
        if i < 8:
            mbarrier.expect(ld.index(ins), 2 * F16_TILE_BYTES)
            TMA_LOAD(a_desc, [0, 0], ld.index(ins), a.index(ins))
            TMA_LOAD(b_desc, [0, 0], ld.index(ins), b.index(ins))
            ins = (ins + 1) % NBUF
        if i < 9:
            mbarrier.wait(ld.index(ext), phase)
            blackwell.tcgen05_mma(a.index(ext), b.index(ext), acc, mbarriers=[mm.index(mma_id)])
            mma_id = (mma_id + 1) % 2
            ext = (ext + 1) % NBUF
            if ext == 0:
                phase = phase ^ 1
        mbarrier.wait(mm.index(wait_id), mma_phase)
        wait_id = (wait_id + 1) % 2
        if wait_id == 0:
            mma_phase = mma_phase ^ 1
    for i in ttgl.static_range(NBUF):
        mbarrier.invalidate(ld.index(i))
    for i in ttgl.static_range(2):
        mbarrier.invalidate(mm.index(i))


@gluon.jit
def _ws_tmem_reader(alias0, sink, bar):
    sink.store(alias0.load(ROWS))
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def _ws_tmem_writer(alias1, bar, FAILURE: ttgl.constexpr):
    if not FAILURE:
        mbarrier.wait(bar.index(0), 0)
    alias1.store(ttgl.zeros([X, X // 2], ttgl.float32, ttgl.BlockedLayout([1, X // 2], [32, 1], [4, 1], [0, 1])))


@gluon.jit
def consan_ws_tmem_alias(FAILURE: ttgl.constexpr):
    # After test_aliasing_tensor_visibility_outstanding_read: a [128, 256] TMEM buffer;
    # one partition reads columns 0..127, the other writes columns 64..127 -- after the
    # reader's barrier, or (the bug) without waiting.
    smem = ttgl.allocate_shared_memory(ttgl.float32, [X, X], FLAT2)
    tl_: ttgl.constexpr = blackwell.TensorMemoryLayout((X, 2 * X), 1)
    tmem = blackwell.allocate_tensor_memory(ttgl.float32, [X, 2 * X], tl_)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    ttgl.warp_specialize([(_ws_tmem_reader, (tmem.slice(0, X), smem, bar)),
                          (_ws_tmem_writer, (tmem.slice(X // 2, X // 2), bar, FAILURE))], [4], [32])


@gluon.jit
def consan_tcgen05_then_cp_async(a_ptr, FAILURE: ttgl.constexpr):
    # After test_mma_read_async_copy_write (buggy): a tcgen05_mma reads A and a cp.async
    # then writes A with nothing ordering it after the MMA.  The valid variant (ours)
    # commits the MMA to a barrier and waits it before the copy.
    a = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    b = ttgl.allocate_shared_memory(ttgl.float16, [X, X], NVMMA16)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    tmem = blackwell.allocate_tensor_memory(ttgl.float32, [X, X], TMEM_ACC)
    mbarrier.init(bar.index(0), count=1)
    blackwell.tcgen05_mma(a, b, tmem, use_acc=False)
    if not FAILURE:
        blackwell.tcgen05_commit(bar.index(0))
        mbarrier.wait(bar.index(0), 0)
    CP_ASYNC(a, _tile_ptrs(a_ptr, ttgl.BlockedLayout([1, 4], [32, 1], [4, 1], [0, 1]), X, X, X))
    cp.commit_group()
    cp.wait_group(0)


@gluon.jit
def consan_tcgen05_local_alloc_loop(a_ptr, K, FAILURE: ttgl.constexpr):
    # After test_mma_read_local_alloc_write (buggy): each K step stores a freshly loaded
    # A tile into a shared allocation and issues a tcgen05_mma on it, with no wait on the
    # previous MMA (which reads the same memory once the allocator reuses it).  The valid
    # variant (ours) commits and waits each MMA before the next step's store.
    BK: ttgl.constexpr = 64
    L: ttgl.constexpr = ttgl.BlockedLayout([1, 4], [32, 1], [4, 1], [0, 1])
    a_layout: ttgl.constexpr = ttgl.NVMMASharedLayout.get_default_for([X, BK], ttgl.float16)
    b = ttgl.allocate_shared_memory(ttgl.float16, [BK, X], ttgl.NVMMASharedLayout.get_default_for([BK, X], ttgl.float16))
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    tmem = blackwell.allocate_tensor_memory(ttgl.float32, [X, X], TMEM_ACC)
    mbarrier.init(bar.index(0), count=1)
    om = ttgl.arange(0, X, ttgl.SliceLayout(1, L))[:, None]
    ok = ttgl.arange(0, BK, ttgl.SliceLayout(0, L))[None, :]
    use_acc = False
    phase = 0
    for k in range(0, K, BK):
        a_val = ttgl.load(a_ptr + om * K + ok + k)
        a = ttgl.allocate_shared_memory(ttgl.float16, [X, BK], a_layout, a_val)
        blackwell.tcgen05_mma(a, b, tmem, use_acc=use_acc)
        use_acc = True
        if not FAILURE:
            blackwell.tcgen05_commit(bar.index(0))
            mbarrier.wait(bar.index(0), phase)
            phase = phase ^ 1
    blackwell.tcgen05_commit(bar.index(0))
    mbarrier.wait(bar.index(0), phase)
    mbarrier.invalidate(bar.index(0))


# =======================================================================================
# Tutorial-style correct kernels (expected "clean"), in the form of Gluon's tutorials
# =======================================================================================

@gluon.jit
def tut_tma_copy(in_desc, out_desc, BM: ttgl.constexpr, BN: ttgl.constexpr):
    # Copy one tile per CTA global -> shared -> global with TMA, completion on an mbarrier.
    off_m = ttgl.program_id(0) * BM
    off_n = ttgl.program_id(1) * BN
    smem = ttgl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.expect(bar.index(0), BM * BN * 2)
    TMA_LOAD(in_desc, [off_m, off_n], bar.index(0), smem)
    mbarrier.wait(bar.index(0), 0)
    mbarrier.invalidate(bar.index(0))
    TMA_STORE(out_desc, [off_m, off_n], smem)
    tma.store_wait(0)


@gluon.jit
def _epilogue_tma_store(c_desc, acc, off_m, off_n, BM: ttgl.constexpr, BN: ttgl.constexpr):
    c = ttgl.allocate_shared_memory(ttgl.float16, [BM, BN], c_desc.layout, acc.to(ttgl.float16))
    fence_async_shared()
    TMA_STORE(c_desc, [off_m, off_n], c)
    tma.store_wait(0)


@gluon.jit
def tut_wgmma_pipelined(a_desc, b_desc, c_desc, K, BM: ttgl.constexpr, BN: ttgl.constexpr, BK: ttgl.constexpr,
                        STAGES: ttgl.constexpr):
    # C = A @ B on sm_90a: a STAGES-deep ring of A/B tiles filled by TMA; `ready[s]`
    # completes when stage s is loaded, `empty[s]` when the wgmma that read it retired.
    # wgmma runs async with one group in flight; phases are flipped by hand from the
    # step counter.  Assumes K >= (STAGES - 1) * BK.
    off_m = ttgl.program_id(0) * BM
    off_n = ttgl.program_id(1) * BN
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BK, BN], b_desc.layout)
    ready = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    TILE_BYTES: ttgl.constexpr = (BM * BK + BK * BN) * 2
    num_k = ttgl.cdiv(K, BK)
    for i in ttgl.static_range(STAGES - 1):
        mbarrier.expect(ready.index(i), TILE_BYTES)
        TMA_LOAD(a_desc, [off_m, i * BK], ready.index(i), a_s.index(i))
        TMA_LOAD(b_desc, [i * BK, off_n], ready.index(i), b_s.index(i))
    acc_layout: ttgl.constexpr = ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
    acc = ttgl.zeros([BM, BN], ttgl.float32, acc_layout)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        acc = hopper.warpgroup_mma(a_s.index(s), b_s.index(s), acc, is_async=True)
        acc = hopper.warpgroup_mma_wait(num_outstanding=1, deps=[acc])
        # step k-1's wgmma has retired: release its stage
        prev = (k + STAGES - 1) % STAGES
        mbarrier.arrive(empty.index(prev), count=1, pred=k > 0)
        # refill that stage with step k + STAGES - 1 once it is empty
        kn = k + STAGES - 1
        more = kn < num_k
        mbarrier.wait(empty.index(prev), ((kn // STAGES) + 1) & 1, pred=more & (kn >= STAGES))
        mbarrier.expect(ready.index(prev), TILE_BYTES, pred=more)
        TMA_LOAD(a_desc, [off_m, kn * BK], ready.index(prev), a_s.index(prev), pred=more)
        TMA_LOAD(b_desc, [kn * BK, off_n], ready.index(prev), b_s.index(prev), pred=more)
    acc = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    for i in ttgl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
        mbarrier.invalidate(empty.index(i))
    _epilogue_tma_store(c_desc, acc, off_m, off_n, BM, BN)


@gluon.jit
def _tmem_epilogue(c_desc, acc_tmem, off_m, off_n, BM: ttgl.constexpr, BN: ttgl.constexpr, NUM_WARPS: ttgl.constexpr):
    REG: ttgl.constexpr = tmem_reg_layout(ttgl.float32, [BM, BN], blackwell.TensorMemoryLayout((BM, BN), 1), NUM_WARPS)
    acc = acc_tmem.load(REG)
    _epilogue_tma_store(c_desc, acc, off_m, off_n, BM, BN)


@gluon.jit
def tut_tcgen05_pipelined(a_desc, b_desc, c_desc, K, BM: ttgl.constexpr, BN: ttgl.constexpr, BK: ttgl.constexpr,
                          STAGES: ttgl.constexpr):
    # C = A @ B on sm_100a: the accumulator lives in tensor memory; each tcgen05_mma
    # arrives `empty[s]` when it has read its stage, and a final tcgen05_commit arrives
    # `acc_bar` when all MMAs are done, before the TMEM load.  Assumes K >= (STAGES-1)*BK.
    off_m = ttgl.program_id(0) * BM
    off_n = ttgl.program_id(1) * BN
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BK, BN], b_desc.layout)
    ready = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    acc_bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    mbarrier.init(acc_bar.index(0), count=1)
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [BM, BN], blackwell.TensorMemoryLayout((BM, BN), 1))
    TILE_BYTES: ttgl.constexpr = (BM * BK + BK * BN) * 2
    num_k = ttgl.cdiv(K, BK)
    for i in ttgl.static_range(STAGES - 1):
        mbarrier.expect(ready.index(i), TILE_BYTES)
        TMA_LOAD(a_desc, [off_m, i * BK], ready.index(i), a_s.index(i))
        TMA_LOAD(b_desc, [i * BK, off_n], ready.index(i), b_s.index(i))
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        blackwell.tcgen05_mma(a_s.index(s), b_s.index(s), acc, use_acc=k > 0, mbarriers=[empty.index(s)])
        kn = k + STAGES - 1
        sn = kn % STAGES
        more = kn < num_k
        # stage sn was last read by the MMA of step kn - STAGES (= k - 1)
        mbarrier.wait(empty.index(sn), ((kn // STAGES) + 1) & 1, pred=more & (kn >= STAGES))
        mbarrier.expect(ready.index(sn), TILE_BYTES, pred=more)
        TMA_LOAD(a_desc, [off_m, kn * BK], ready.index(sn), a_s.index(sn), pred=more)
        TMA_LOAD(b_desc, [kn * BK, off_n], ready.index(sn), b_s.index(sn), pred=more)
    blackwell.tcgen05_commit(acc_bar.index(0))
    mbarrier.wait(acc_bar.index(0), 0)
    for i in ttgl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
        mbarrier.invalidate(empty.index(i))
    mbarrier.invalidate(acc_bar.index(0))
    _tmem_epilogue(c_desc, acc, off_m, off_n, BM, BN, 4)


@gluon.jit
def _ws_load_partition(a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, K, BK: ttgl.constexpr,
                       STAGES: ttgl.constexpr):
    # Producer: wait stage empty (parity starts at 1, so the first pass does not block),
    # then TMA both tiles into it.
    TILE_BYTES: ttgl.constexpr = (a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    for k in range(ttgl.cdiv(K, BK)):
        s = k % STAGES
        mbarrier.wait(empty.index(s), ((k // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(s), TILE_BYTES)
        TMA_LOAD(a_desc, [off_m, k * BK], ready.index(s), a_s.index(s))
        TMA_LOAD(b_desc, [k * BK, off_n], ready.index(s), b_s.index(s))


@gluon.jit
def _ws_tcgen05_partition(a_s, b_s, acc, ready, empty, acc_bar, K, BK: ttgl.constexpr, STAGES: ttgl.constexpr):
    # MMA issuer: wait stage ready, issue tcgen05_mma releasing the stage on completion;
    # commit the accumulator barrier after the last MMA.
    for k in range(ttgl.cdiv(K, BK)):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        blackwell.tcgen05_mma(a_s.index(s), b_s.index(s), acc, use_acc=k > 0, mbarriers=[empty.index(s)])
    blackwell.tcgen05_commit(acc_bar.index(0))


@gluon.jit
def _ws_tmem_epilogue_partition(c_desc, acc, acc_bar, off_m, off_n, BM: ttgl.constexpr, BN: ttgl.constexpr):
    mbarrier.wait(acc_bar.index(0), 0)
    _tmem_epilogue(c_desc, acc, off_m, off_n, BM, BN, 4)


@gluon.jit
def tut_ws_tcgen05_matmul(a_desc, b_desc, c_desc, K, BM: ttgl.constexpr, BN: ttgl.constexpr, BK: ttgl.constexpr,
                          STAGES: ttgl.constexpr):
    # Warp-specialized C = A @ B on sm_100a: a 1-warp TMA load partition, a 1-warp MMA
    # partition and the default (4-warp) partition as epilogue, talking through
    # ready/empty rings and one accumulator barrier.
    off_m = ttgl.program_id(0) * BM
    off_n = ttgl.program_id(1) * BN
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BK, BN], b_desc.layout)
    ready = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    acc_bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    mbarrier.init(acc_bar.index(0), count=1)
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [BM, BN], blackwell.TensorMemoryLayout((BM, BN), 1))
    ttgl.warp_specialize([
        (_ws_tmem_epilogue_partition, (c_desc, acc, acc_bar, off_m, off_n, BM, BN)),
        (_ws_load_partition, (a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, K, BK, STAGES)),
        (_ws_tcgen05_partition, (a_s, b_s, acc, ready, empty, acc_bar, K, BK, STAGES)),
    ], [1, 1], [24, 24])


@gluon.jit
def _ws_wgmma_consumer(c_desc, a_s, b_s, ready, empty, off_m, off_n, K, BM: ttgl.constexpr, BN: ttgl.constexpr,
                       BK: ttgl.constexpr, STAGES: ttgl.constexpr):
    acc_layout: ttgl.constexpr = ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
    acc = ttgl.zeros([BM, BN], ttgl.float32, acc_layout)
    for k in range(ttgl.cdiv(K, BK)):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        acc = hopper.warpgroup_mma(a_s.index(s), b_s.index(s), acc, is_async=True)
        acc = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[acc])
        mbarrier.arrive(empty.index(s), count=1)
    _epilogue_tma_store(c_desc, acc, off_m, off_n, BM, BN)


@gluon.jit
def tut_ws_wgmma_matmul(a_desc, b_desc, c_desc, K, BM: ttgl.constexpr, BN: ttgl.constexpr, BK: ttgl.constexpr,
                        STAGES: ttgl.constexpr):
    # Warp-specialized C = A @ B on sm_90a: a 1-warp TMA producer feeds the default
    # 4-warp partition, which runs wgmma, releases each stage and stores the tile.
    off_m = ttgl.program_id(0) * BM
    off_n = ttgl.program_id(1) * BN
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BK, BN], b_desc.layout)
    ready = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    ttgl.warp_specialize([
        (_ws_wgmma_consumer, (c_desc, a_s, b_s, ready, empty, off_m, off_n, K, BM, BN, BK, STAGES)),
        (_ws_load_partition, (a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, K, BK, STAGES)),
    ], [1], [24])


@gluon.jit
def tut_persistent_tcgen05_matmul(a_desc, b_desc, c_desc, M, N, K, BM: ttgl.constexpr, BN: ttgl.constexpr,
                                  BK: ttgl.constexpr, STAGES: ttgl.constexpr):
    # Persistent C = A @ B on sm_100a: each CTA walks tiles pid, pid + #CTAs, ...; the
    # load ring's counter and phases run on across tiles, the accumulator barrier's
    # phase flips once per tile.
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [STAGES, BK, BN], b_desc.layout)
    ready = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = ttgl.allocate_shared_memory(ttgl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    acc_bar = ttgl.allocate_shared_memory(ttgl.int64, [1, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    mbarrier.init(acc_bar.index(0), count=1)
    acc = blackwell.allocate_tensor_memory(ttgl.float32, [BM, BN], blackwell.TensorMemoryLayout((BM, BN), 1))
    TILE_BYTES: ttgl.constexpr = (BM * BK + BK * BN) * 2
    tiles_n = ttgl.cdiv(N, BN)
    num_tiles = ttgl.cdiv(M, BM) * tiles_n
    cnt = 0
    acc_phase = 0
    for tile in range(ttgl.program_id(0), num_tiles, ttgl.num_programs(0)):
        off_m = (tile // tiles_n) * BM
        off_n = (tile % tiles_n) * BN
        for k in range(ttgl.cdiv(K, BK)):
            s = cnt % STAGES
            mbarrier.wait(empty.index(s), ((cnt // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), TILE_BYTES)
            TMA_LOAD(a_desc, [off_m, k * BK], ready.index(s), a_s.index(s))
            TMA_LOAD(b_desc, [k * BK, off_n], ready.index(s), b_s.index(s))
            mbarrier.wait(ready.index(s), (cnt // STAGES) & 1)
            blackwell.tcgen05_mma(a_s.index(s), b_s.index(s), acc, use_acc=k > 0, mbarriers=[empty.index(s)])
            cnt += 1
        blackwell.tcgen05_commit(acc_bar.index(0))
        mbarrier.wait(acc_bar.index(0), acc_phase)
        acc_phase ^= 1
        _tmem_epilogue(c_desc, acc, off_m, off_n, BM, BN, 4)
    for i in ttgl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
        mbarrier.invalidate(empty.index(i))
    mbarrier.invalidate(acc_bar.index(0))


@gluon.jit
def tut_persistent_wgmma_matmul(a_desc, b_desc, c_desc, M, N, K, BM: ttgl.constexpr, BN: ttgl.constexpr,
                                BK: ttgl.constexpr):
    # Persistent C = A @ B on sm_90a with a two-stage ring: the next K step's TMA load is
    # issued before this step's wgmma, into the stage the previous (fully waited) wgmma
    # used; the ring counter and its phases carry across tiles.
    a_s = ttgl.allocate_shared_memory(ttgl.float16, [2, BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(ttgl.float16, [2, BK, BN], b_desc.layout)
    ready = ttgl.allocate_shared_memory(ttgl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in ttgl.static_range(2):
        mbarrier.init(ready.index(i), count=1)
    TILE_BYTES: ttgl.constexpr = (BM * BK + BK * BN) * 2
    acc_layout: ttgl.constexpr = ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
    tiles_n = ttgl.cdiv(N, BN)
    num_tiles = ttgl.cdiv(M, BM) * tiles_n
    num_k = ttgl.cdiv(K, BK)
    cnt = 0
    for tile in range(ttgl.program_id(0), num_tiles, ttgl.num_programs(0)):
        off_m = (tile // tiles_n) * BM
        off_n = (tile % tiles_n) * BN
        s0 = cnt % 2
        mbarrier.expect(ready.index(s0), TILE_BYTES)
        TMA_LOAD(a_desc, [off_m, 0], ready.index(s0), a_s.index(s0))
        TMA_LOAD(b_desc, [0, off_n], ready.index(s0), b_s.index(s0))
        acc = ttgl.zeros([BM, BN], ttgl.float32, acc_layout)
        for k in range(num_k):
            s = cnt % 2
            sn = (cnt + 1) % 2
            more = k + 1 < num_k
            mbarrier.expect(ready.index(sn), TILE_BYTES, pred=more)
            TMA_LOAD(a_desc, [off_m, (k + 1) * BK], ready.index(sn), a_s.index(sn), pred=more)
            TMA_LOAD(b_desc, [(k + 1) * BK, off_n], ready.index(sn), b_s.index(sn), pred=more)
            mbarrier.wait(ready.index(s), (cnt // 2) & 1)
            acc = hopper.warpgroup_mma(a_s.index(s), b_s.index(s), acc, is_async=True)
            acc = hopper.warpgroup_mma_wait(num_outstanding=0, deps=[acc])
            cnt += 1
        _epilogue_tma_store(c_desc, acc, off_m, off_n, BM, BN)
    for i in ttgl.static_range(2):
        mbarrier.invalidate(ready.index(i))


@gluon.jit
def tut_cp_async_copy(inp, out, n_rows, BR: ttgl.constexpr, BC: ttgl.constexpr):
    # Ampere-style pipeline: row blocks of `inp` are cp.async'ed into a 2-stage ring one
    # block ahead; wait_group(1) retires the block about to be read; each block is
    # loaded from shared memory and written to `out`.
    L: ttgl.constexpr = ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, BR, BC], ttgl.SwizzledSharedLayout(8, 1, 1, [1, 0]))
    rows = ttgl.arange(0, BR, ttgl.SliceLayout(1, L))[:, None]
    cols = ttgl.arange(0, BC, ttgl.SliceLayout(0, L))[None, :]
    nb = ttgl.cdiv(n_rows, BR)
    CP_ASYNC(smem.index(0), inp + rows * BC + cols)
    cp.commit_group()
    for i in range(nb):
        nxt = i + 1
        CP_ASYNC(smem.index(nxt % 2), inp + (nxt * BR + rows) * BC + cols, mask=(nxt * BR + rows < n_rows) & (cols < BC))
        cp.commit_group()
        cp.wait_group(1)
        val = smem.index(i % 2).load(L)
        ttgl.store(out + (i * BR + rows) * BC + cols, val)
    cp.wait_group(0)


@gluon.jit
def tut_tma_store_ring(out_desc, n_tiles, BM: ttgl.constexpr, BN: ttgl.constexpr):
    # Double-buffered TMA stores: tile i (filled with the value i) is written into stage
    # i % 2 after store_wait(1) has retired the store that last read that stage; a
    # fence orders the generic writes before the TMA read.
    smem = ttgl.allocate_shared_memory(ttgl.float16, [2, BM, BN], out_desc.layout)
    L: ttgl.constexpr = ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    for i in range(n_tiles):
        s = i % 2
        tma.store_wait(1)
        smem.index(s).store(ttgl.full([BM, BN], 0, ttgl.float16, L) + i.to(ttgl.float16))
        fence_async_shared()
        TMA_STORE(out_desc, [i * BM, 0], smem.index(s))
    tma.store_wait(0)


# =======================================================================================
# The table: kernels, their arguments, variants and expected verdicts
# =======================================================================================

def ptr(name, dtype, shape):
    return {"kind": "tensor", "name": name, "dtype": dtype, "shape": list(shape)}


def desc(name, dtype, shape, block):
    return {"kind": "tensordesc", "name": name, "dtype": dtype, "shape": list(shape), "block": list(block)}


def scalar(name, value):
    return {"kind": "int", "name": name, "value": value}


@dataclass
class Variant:
    name: str
    constexprs: dict
    expected: str
    message: str = ""
    note: str = ""


@dataclass
class Spec:
    name: str
    fn: object
    pair: str  # the test it re-expresses ("" for tutorial kernels)
    targets: tuple
    args: list
    variants: list
    num_warps: int = 4
    grid: tuple = (1, )
    ref: dict = field(default_factory=dict)  # output tensor -> torch expression over the inputs
    kind: str = "consan"


def fail_ok(expected, message, fail_name="failure", ok_name="valid", key="FAILURE", extra=None, note=""):
    extra = extra or {}
    return [Variant(fail_name, {key: True, **extra}, expected, message, note), Variant(ok_name, {key: False, **extra}, "clean")]


H = (90, 100)  # Hopper features: compile for both targets
T128 = (XB, XB)
IN = desc("in_desc", "fp16", T128, T128)
OUT_F16 = ptr("out", "fp16", T128)

SPECS: list[Spec] = [
    Spec("tma_read_before_wait", consan_tma_read_before_wait, "test_async_tma_kernel", H, [IN, OUT_F16],
         fail_ok("outstanding_writes", M_W), ref={"out": "in_desc"}),
    Spec("tma_two_tiles_one_barrier", consan_tma_two_tiles_one_barrier, "test_async_tma_kernel_2bufs_1bar", H,
         [desc("a_desc", "fp16", T128, T128), desc("b_desc", "fp16", T128, T128), OUT_F16],
         fail_ok("outstanding_writes", M_W), ref={"out": "a_desc + b_desc"}),
    Spec("tma_expect_bytes", consan_tma_expect_bytes, "test_async_tma_expect_bytes_mismatch", H, [IN, OUT_F16], [
        Variant("under", {"DELTA": -16}, "expect_bytes_mismatch", M_DEAD, "ConSan reports the mismatch as a deadlock"),
        Variant("over", {"DELTA": 16}, "expect_bytes_mismatch", M_DEAD, "ConSan reports the mismatch as a deadlock"),
        Variant("match", {"DELTA": 0}, "clean", "", "our control; the test has no matching variant"),
    ], ref={"out": "in_desc"}),
    Spec("tma_interleave", consan_tma_interleave, "test_tma_interleave_kernel", H, [IN, OUT_F16],
         fail_ok("outstanding_writes", M_W), ref={"out": "in_desc"}),
    Spec("tma_wait_other_barrier", consan_tma_wait_other_barrier, "test_tma_wait_tracks_only_waited_barrier", H,
         [IN, OUT_F16], fail_ok("outstanding_writes", M_W), ref={"out": "in_desc"}),
    Spec("tma_same_tile_two_loads", consan_tma_same_tile_two_loads, "test_tma_wait_does_not_publish_overwritten_row", H,
         [IN, OUT_F16], [Variant("wait_earlier", {"WAIT_LATEST": False}, "outstanding_writes", M_W),
                         Variant("wait_latest", {"WAIT_LATEST": True}, "clean")], ref={"out": "in_desc"}),
    Spec("cp_async_wait_group", consan_cp_async_wait_group, "test_async_copy", H, [ptr("inp", "fp16", T128)],
         fail_ok("outstanding_writes", M_CP, note="a second cp.async into a stage whose first copy is in flight")),
    Spec("tma_store_reuse", consan_tma_store_reuse, "test_tma_store", H, [desc("out_desc", "fp16", T128, T128)],
         fail_ok("outstanding_reads", M_TMA_ST, note="a store into a stage a TMA store still reads")),
    Spec("overarrival", consan_overarrival, "test_deadlock_overarrival", H, [],
         [Variant("failure", {}, "deadlock", M_DEAD, "over-arrival: the waited parity never comes back")]),
    Spec("reinit", consan_reinit, "test_barrier_reinit_requires_invalidate", H, [],
         [Variant("no_invalidate", {"WITH_INVALIDATE": False}, "barrier_misuse", M_REINIT),
          Variant("invalidate", {"WITH_INVALIDATE": True}, "clean")]),
    Spec("use_without_init", consan_use_without_init, "test_barrier_use_without_init", H, [],
         [Variant(u, {"USE": u}, "barrier_misuse", M_UNINIT) for u in ("wait", "arrive", "invalidate", "expect")] +
         [Variant("init", {"USE": "init"}, "clean", "", "our control")]),
    Spec("use_after_invalidate", consan_use_after_invalidate, "test_barrier_use_after_invalidate", H, [],
         [Variant(u, {"USE": u}, "barrier_misuse", M_UNINIT) for u in ("wait", "arrive", "expect")]),
    Spec("ws_deadlock", consan_ws_deadlock, "test_deadlock_two_partitions", H, [],
         [Variant("two_partitions", {"KIND": "two_partitions"}, "deadlock", M_DEAD),
          Variant("after_return", {"KIND": "after_return"}, "deadlock", M_DEAD,
                  "test_deadlock_after_other_partition_returns (single-CTA barrier)"),
          Variant("padded", {"KIND": "padded"}, "deadlock", M_DEAD,
                  "test_deadlock_with_padded_warp_specialize_partition")]),
    Spec("ws_arrival_count", consan_ws_arrival_count, "test_deadlock_underarrival", H, [],
         [Variant("underarrival", {"KIND": "underarrival"}, "deadlock", M_DEAD),
          Variant("underflow", {"KIND": "underflow"}, "overarrive", M_UNDERFLOW, "test_barrier_underflow"),
          Variant("balanced", {"KIND": "balanced"}, "clean", "", "our control")]),
    Spec("ws_different_phases", consan_ws_different_phases, "test_deadlock_different_phases", H, [],
         [Variant("valid", {}, "clean")]),
    Spec("ws_tma_signals", consan_ws_tma_signals, "test_deadlock_exempt_when_tma_signals", H, [IN],
         [Variant("valid", {}, "clean")]),
    Spec("ws_store_wait_load", consan_ws_store_wait_load, "test_ws_store_wait_load", H, [ptr("out", "fp16", (XB, ))],
         fail_ok("outstanding_writes", M_ANY, note="a read of a buffer another partition is writing"),
         ref={"out": "arange"}),
    Spec("ws_load_wait_store", consan_ws_load_wait_store, "test_ws_load_wait_store", H, [ptr("out", "fp16", (XB, ))],
         fail_ok("outstanding_reads", M_ANY, note="a write of a buffer another partition is reading"),
         ref={"out": "arange"}),
    Spec("ws_two_readers", consan_ws_two_readers, "test_ws_two_loads_two_bars", H, [ptr("out", "fp16", (XB, ))],
         [Variant("missing_1", {"MISSING": "1", "ONE_BAR": False}, "outstanding_reads", M_ANY),
          Variant("missing_2", {"MISSING": "2", "ONE_BAR": False}, "outstanding_reads", M_ANY),
          Variant("none", {"MISSING": "none", "ONE_BAR": False}, "clean"),
          Variant("one_bar_missing", {"MISSING": "all", "ONE_BAR": True}, "outstanding_reads", M_ANY,
                  "test_ws_two_loads_one_bar"),
          Variant("one_bar", {"MISSING": "none", "ONE_BAR": True}, "clean", "", "test_ws_two_loads_one_bar")],
         ref={"out": "arange"}),
    Spec("ws_loop_two_readers", consan_ws_loop_two_readers, "test_ws_two_loads_two_bars_loop", H, [],
         [Variant("missing_0", {"MISSING": "0"}, "outstanding_reads", M_ANY),
          Variant("missing_2", {"MISSING": "2"}, "outstanding_writes", M_ANY,
                  "the test also accepts 'Deadlock detected' here"),
          Variant("none", {"MISSING": "none"}, "clean")]),
    Spec("ws_load_ordering", consan_ws_load_ordering, "test_ws_load_ordering", H, [],
         fail_ok("outstanding_writes", M_ANY)),
    Spec("ws_cp_async_groups", consan_ws_cp_async_groups, "test_ws_async_copy_commits", H, [ptr("inp", "fp16", (XB, ))],
         fail_ok("outstanding_writes", M_ANY + " | " + M_CP,
                 note="the test accepts outstanding writes, outstanding reads or the cp.async pending access")),
    Spec("ws_cp_async_visibility", consan_ws_cp_async_visibility, "test_ws_async_copy_wait_visibility", H,
         [ptr("inp", "fp16", (XB, ))], fail_ok("outstanding_writes", M_W + " | " + M_CP)),
    Spec("ws_fence_before_tma_store", consan_ws_fence_before_tma_store, "test_fence_async_shared_across_warp_specialize",
         H, [desc("out_desc", "fp16", T128, T128)],
         [Variant("none", {"WHERE": "none"}, "missing_fence", M_FENCE),
          Variant("producer_after_arrive", {"WHERE": "producer_after_arrive"}, "missing_fence", M_FENCE),
          Variant("producer", {"WHERE": "producer"}, "clean"),
          Variant("consumer", {"WHERE": "consumer"}, "clean")], ref={"out_desc": "full42"}),
    Spec("ws_alias_views", consan_ws_alias_views, "test_aliasing_shared_visibility_outstanding_write", H, [],
         [Variant(f"{'missing' if m else 'bar'}_{'overlap' if o else 'disjoint'}", {"MISSING_BAR": m, "OVERLAP": o},
                  "outstanding" if (m and o) else "clean", M_ANY if (m and o) else "") for m in (True, False)
          for o in (True, False)]),
    # ---- wgmma (sm_90a)
    Spec("wgmma_operand_overwrite", consan_wgmma_operand_overwrite, "test_warpgroup_mma", (90, ), [],
         fail_ok("outstanding_reads", M_WGMMA, extra={"TWO": False})),
    Spec("wgmma2_operand_overwrite", consan_wgmma_operand_overwrite, "test_warpgroup_mma2", (90, ), [],
         fail_ok("outstanding_reads", M_WGMMA, extra={"TWO": True})),
    Spec("wgmma_ring", consan_wgmma_ring, "test_multibuffered_wgmma_loop", (90, ),
         [desc("a_desc", "fp16", T128, T128), desc("b_desc", "fp16", T128, T128)],
         fail_ok("outstanding_reads", M_WGMMA, fail_name="two_buffers", ok_name="three_buffers")),
    Spec("ws_wgmma_visibility", consan_ws_wgmma_visibility, "test_ws_wgmma_wait_visibility", (90, ), [],
         fail_ok("outstanding_reads", M_WGMMA)),
    # ---- tcgen05 (sm_100a)
    *[Spec(f"tcgen05_{acc}", consan_tcgen05_access, "test_tcgen5_mma", (100, ),
           [IN, desc("out_desc", "fp16", T128, T128)],
           fail_ok("outstanding_reads" if acc in ("tma_cp", "local_store") else "outstanding_writes",
                   M_R if acc in ("tma_cp", "local_store") else M_W, extra={"ACCESS": acc},
                   note="the test checks no message for local_store" if acc == "local_store" else ""))
      for acc in ("tma_cp", "local_store", "tmem_load", "tmem_store")],
    *[Spec(f"tcgen05_copy_{acc}", consan_tcgen05_copy, "test_tcgen5_copy", (100, ),
           [ptr("inp", "i32", T128), ptr("out", "i32", T128)],
           fail_ok("outstanding_reads" if acc == "local_store" else "outstanding_writes",
                   M_R if acc == "local_store" else M_W, extra={"ACCESS": acc}),
           ref={"out": "inp"} if acc == "tmem_load" else {}) for acc in ("local_store", "tmem_load")],
    Spec("tcgen05_multibar", consan_tcgen05_multibar, "test_tcgen5_mma_multibar", (100, ), [],
         [Variant(f"buf{u}_bar{r}", {"BUF": u, "BAR": r}, "outstanding_writes" if r // 2 < u else "clean",
                  M_W if r // 2 < u else "") for u, r in ((1, 1), (0, 1), (1, 2), (1, 3))]),
    Spec("tcgen05_ring", consan_tcgen05_ring, "test_multibuffered_loop", (100, ),
         [desc("a_desc", "fp16", T128, T128), desc("b_desc", "fp16", T128, T128)],
         fail_ok("outstanding_reads", M_R, fail_name="two_buffers", ok_name="three_buffers")),
    Spec("ws_tmem_alias", consan_ws_tmem_alias, "test_aliasing_tensor_visibility_outstanding_read", (100, ), [],
         fail_ok("outstanding", M_ANY)),
    Spec("tcgen05_then_cp_async", consan_tcgen05_then_cp_async, "test_mma_read_async_copy_write", (100, ),
         [ptr("a_ptr", "fp16", T128)], fail_ok("outstanding_reads", M_R, ok_name="valid_ours")),
    Spec("tcgen05_local_alloc_loop", consan_tcgen05_local_alloc_loop, "test_mma_read_local_alloc_write", (100, ),
         [ptr("a_ptr", "fp16", (XB, 512)), scalar("K", 512)], fail_ok("outstanding_reads", M_R, ok_name="valid_ours")),
]

MM = dict(M=256, N=256, K=512, BM=128, BN=128, BK=64)


def mm_args(M, N, K, BM, BN, BK, scalars=("K", )):
    vals = {"M": M, "N": N, "K": K}
    return [desc("a_desc", "fp16", (M, K), (BM, BK)), desc("b_desc", "fp16", (K, N), (BK, BN)),
            desc("c_desc", "fp16", (M, N), (BM, BN))] + [scalar(n, vals[n]) for n in scalars]


def clean(**cx):
    return [Variant("clean", cx, "clean")]


MM_REF = {"c_desc": "a_desc @ b_desc"}
TUTORIAL_SPECS: list[Spec] = [
    Spec("tma_copy", tut_tma_copy, "", H, [desc("in_desc", "fp16", (512, 256), T128), desc("out_desc", "fp16", (512, 256), T128)],
         clean(BM=XB, BN=XB), grid=(4, 2), ref={"out_desc": "in_desc"}, kind="tutorial"),
    Spec("wgmma_pipelined", tut_wgmma_pipelined, "", (90, ), mm_args(**MM), clean(BM=128, BN=128, BK=64, STAGES=3),
         grid=(2, 2), ref=MM_REF, kind="tutorial"),
    Spec("tcgen05_pipelined", tut_tcgen05_pipelined, "", (100, ), mm_args(**MM), clean(BM=128, BN=128, BK=64, STAGES=3),
         grid=(2, 2), ref=MM_REF, kind="tutorial"),
    Spec("ws_tcgen05_matmul", tut_ws_tcgen05_matmul, "", (100, ), mm_args(**MM), clean(BM=128, BN=128, BK=64, STAGES=3),
         grid=(2, 2), ref=MM_REF, kind="tutorial"),
    Spec("ws_wgmma_matmul", tut_ws_wgmma_matmul, "", (90, ), mm_args(**MM), clean(BM=128, BN=128, BK=64, STAGES=3),
         grid=(2, 2), ref=MM_REF, kind="tutorial"),
    Spec("persistent_tcgen05_matmul", tut_persistent_tcgen05_matmul, "", (100, ),
         mm_args(512, 512, 256, 128, 128, 64, scalars=("M", "N", "K")), clean(BM=128, BN=128, BK=64, STAGES=3),
         grid=(4, ), ref=MM_REF, kind="tutorial"),
    Spec("persistent_wgmma_matmul", tut_persistent_wgmma_matmul, "", (90, ),
         mm_args(512, 512, 256, 128, 128, 64, scalars=("M", "N", "K")), clean(BM=128, BN=128, BK=64),
         grid=(4, ), ref=MM_REF, kind="tutorial"),
    Spec("cp_async_copy", tut_cp_async_copy, "", H, [ptr("inp", "fp16", (512, 64)), ptr("out", "fp16", (512, 64)),
                                                     scalar("n_rows", 512)], clean(BR=64, BC=64), ref={"out": "inp"},
         kind="tutorial"),
    Spec("tma_store_ring", tut_tma_store_ring, "", H, [desc("out_desc", "fp16", (512, 128), (64, 128)), scalar("n_tiles", 8)],
         clean(BM=64, BN=128),
         ref={"out_desc": "torch.arange(8, dtype=torch.float32).repeat_interleave(64)[:, None].expand(512, 128)"},
         kind="tutorial"),
]


# =======================================================================================
# Compiling
# =======================================================================================

TORCH_DTYPE = {"fp16": "float16", "fp32": "float32", "bf16": "bfloat16", "i32": "int32", "i8": "int8"}
GL_DTYPE = {"fp16": ttgl.float16, "fp32": ttgl.float32, "bf16": ttgl.bfloat16, "i32": ttgl.int32, "i8": ttgl.int8}


class _FakeDtype:
    """Stands in for a torch dtype: the JIT's binder reads only its name."""

    def __init__(self, name):
        self.name = name
        self.is_floating_point = name.startswith(("float", "bfloat"))

    def __str__(self):
        return "torch." + self.name


class _FakeTensor:
    """Stands in for a 16-byte aligned contiguous CUDA tensor during specialization."""

    def __init__(self, dtype, shape):
        self.dtype = _FakeDtype(TORCH_DTYPE[dtype])
        self.shape = tuple(shape)

    def data_ptr(self):
        return 1 << 20

    def stride(self):
        st = [1]
        for d in reversed(self.shape[1:]):
            st.insert(0, st[0] * d)
        return tuple(st)


def desc_layout(a):
    return ttgl.NVMMASharedLayout.get_default_for(a["block"], GL_DTYPE[a["dtype"]])


def make_args(spec_args, tensor_factory):
    """Positional kernel arguments from the table: tensors from tensor_factory(arg),
    descriptors over them, integers as they are."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    out = []
    for a in spec_args:
        if a["kind"] == "int":
            out.append(a["value"])
        elif a["kind"] == "tensor":
            out.append(tensor_factory(a))
        else:
            out.append(TensorDescriptor.from_tensor(tensor_factory(a), a["block"], desc_layout(a)))
    return out


def target_name(cap):
    return f"sm{cap}a"


def compile_for(spec: Spec, variant: Variant, cap: int):
    """Compile as the JIT would on a device of capability `cap`: its binder turns the
    arguments into the signature and the specialization, then triton.compile."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import create_function_from_signature

    fn = spec.fn
    target = GPUTarget("cuda", cap, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    args = make_args(spec.args, lambda a: _FakeTensor(a["dtype"], a["shape"]))
    kwargs = dict(variant.constexprs, num_warps=spec.num_warps, debug=False, instrumentation_mode="")
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, options, bound, specialization, None)
    src = GluonASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__), signature


def metadata_json(kernel) -> dict:
    md = kernel.metadata
    d = md._asdict() if hasattr(md, "_asdict") else dict(vars(md))
    d.pop("extern_libs", None)  # a path on the compiling machine
    return json.loads(json.dumps(d, default=str))


def alloc_module(ttgir: str, cap: int) -> str:
    """The TTGIR after Triton's own shared/tensor-memory allocation and membar passes
    (the passes the backend runs before LLVM), in structured form."""
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend, get_ptx_version_from_options

    ctx = ir.context()
    ir.load_dialects(ctx)
    be = CUDABackend(GPUTarget("cuda", cap, 32))
    be.load_dialects(ctx)
    mod = ir.parse_mlir_module_str(ttgir, ctx) if hasattr(ir, "parse_mlir_module_str") else None
    if mod is None:
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".ttgir", delete=False) as f:
            f.write(ttgir)
        mod = ir.parse_mlir_module(f.name, ctx)
    mod.context = ctx
    pm = ir.pass_manager(ctx)
    pm.enable_debug()
    if V36:
        passes.ttgpuir.add_allocate_warp_groups(pm)
    else:
        passes.ttgpuir.add_allocate_warp_groups(pm, False)
    opts = be.parse_options({})
    ptx = get_ptx_version_from_options(opts, be.target.arch)
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, cap, ptx)
    nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
    if not V36:  # 3.6 has no separate membar pass (it runs inside add_to_llvmir): allocation only
        nvidia.passes.ttgpuir.add_membar(pm, cap, ptx)
    pm.run(mod, "alloc")
    return str(mod)


ALLOC_PASSES = (["allocate-warp-groups", "allocate-shared-memory-nv", "triton-tensor-memory-allocation"] +
                ([] if V36 else ["triton-nvidia-gpu-membar"]))


def module_shared(text: str):
    m = re.search(r'"?ttg\.shared"?\s*=\s*(\d+)', text)
    return int(m.group(1)) if m else None


def launch_json(spec: Spec) -> dict:
    d = {a["name"]: a["value"] for a in spec.args if a["kind"] == "int"}
    n = 1
    for g in spec.grid:
        n *= g
    d["ctas"] = n
    return d


def first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0][:400] if lines else type(exc).__name__


def run_one(spec: Spec, variant: Variant, cap: int, vdir: Path, root: Path) -> dict:
    stem = f"{spec.name}-{variant.name}.{target_name(cap)}"
    rec = {
        "file": str((vdir / f"{stem}.ttgir").relative_to(root)), "triton": TRITON_VERSION, "target": target_name(cap),
        "kernel": f"{spec.name}-{variant.name}", "source": spec.fn.fn.__name__ if hasattr(spec.fn, "fn") else str(spec.fn),
        "kind": spec.kind, "variant": variant.name, "pair": (CONSAN + spec.pair) if spec.pair else "",
        "expected": variant.expected, "triton_message": variant.message, "note": variant.note,
        "constexprs": variant.constexprs, "num_warps": spec.num_warps, "args": spec.args, "grid": list(spec.grid),
        "ref": spec.ref, "compiled": False, "error": ""
    }
    for suffix in (".ttgir", ".json", ".launch.json", ".alloc.mlir", ".error.txt"):
        (vdir / f"{stem}{suffix}").unlink(missing_ok=True)
    try:
        kernel, signature = compile_for(spec, variant, cap)
    except Exception as exc:  # noqa: BLE001  (what Triton said is the record)
        rec["error"] = first_line(exc)
        (vdir / f"{stem}.error.txt").write_text(traceback.format_exc()[-6000:])
        return rec
    ttgir = kernel.asm["ttgir"]
    md = metadata_json(kernel)
    md["signature"] = signature
    (vdir / f"{stem}.ttgir").write_text(ttgir)
    (vdir / f"{stem}.json").write_text(json.dumps(md, indent=1) + "\n")
    (vdir / f"{stem}.launch.json").write_text(json.dumps(launch_json(spec)) + "\n")
    rec.update(compiled=True, shared=md.get("shared"), tmem_size=md.get("tmem_size"), signature=signature)
    try:
        alloc = alloc_module(ttgir, cap)
        (vdir / f"{stem}.alloc.mlir").write_text(alloc)
        rec["alloc_shared"] = module_shared(alloc)
        rec["alloc_passes"] = ALLOC_PASSES
    except Exception as exc:  # noqa: BLE001
        rec["alloc_error"] = first_line(exc)
    return rec


def all_specs() -> list[Spec]:
    return SPECS + TUTORIAL_SPECS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/triton/gluon"),
                    help="fixture folder (files go to <out>/triton-<version>/, records to <out>/index.json)")
    ap.add_argument("--only", default="", help="only kernels whose <name>-<variant>.<target> contains SUBSTR")
    ap.add_argument("--list", action="store_true", help="list the kernels and exit")
    args = ap.parse_args(argv)
    root = args.out
    vdir = root / f"triton-{TRITON_VERSION}"
    jobs = [(s, v, cap) for s in all_specs() for v in s.variants for cap in s.targets
            if args.only in f"{s.name}-{v.name}.{target_name(cap)}"]
    if args.list:
        for s, v, cap in jobs:
            print(f"{s.name}-{v.name}.{target_name(cap)}  expected={v.expected}  pair={s.pair or '-'}")
        return 0
    vdir.mkdir(parents=True, exist_ok=True)
    recs = []
    for s, v, cap in jobs:
        rec = run_one(s, v, cap, vdir, root)
        recs.append(rec)
        status = f"ok shared={rec.get('shared')} alloc={rec.get('alloc_shared')}" if rec["compiled"] else "FAILED " + rec["error"]
        print(f"[{TRITON_VERSION}] {rec['kernel']}.{rec['target']}: {status}", flush=True)
    index_path = root / "index.json"
    old = json.loads(index_path.read_text()) if index_path.exists() else []
    new_files = {r["file"] for r in recs}
    if args.only:
        keep = [r for r in old if r["file"] not in new_files]
    else:
        keep = [r for r in old if r["triton"] != TRITON_VERSION]
    merged = sorted(keep + recs, key=lambda r: (r["triton"], r["kind"], r["file"]))
    index_path.write_text(json.dumps(merged, indent=1) + "\n")
    bad = [r for r in recs if not r["compiled"]]
    print(f"{len(recs)} kernels, {len(recs) - len(bad)} compiled, {len(bad)} failed; index: {index_path}")
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
