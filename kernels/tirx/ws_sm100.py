"""The book's step 7 -- the warp-specialized Blackwell fp16 GEMM -- on the released TIRx.

Source: "Scaling GEMM with Warp Specialization and Clusters", step 7
(``shared/docs/book/gemm_steps_7_9.md``, its "Complete Kernel" listing), ported
to ``apache-tvm==0.27.0.post1`` for ``sm_100a`` (compile-only here), in the same
shape as the seed's steps v1-v6 (:mod:`kernels.tirx.seed_sm100`):
``ws_step7(cfg)`` returns the uncompiled ``@T.prim_func``; build it with
``kernels.toolchain.compiler.compile_primfunc(func, "sm_100a", name)``.

Structure (two warpgroups, 256 threads, ``SM_COUNT`` persistent CTAs walking
``ClusterPersistentScheduler2D`` tiles -- every role walks the same tile
sequence on its own copy of the scheduler state):

    warpgroup 1, warp 3  TMA producer: one elected lane, per tile, per k-tile:
                         ``mma2tma.wait(stage, phase)`` (starts at phase 1:
                         fresh buffers are empty), two TMA loads onto
                         ``tma2mma[stage]``, ``arrive.expect_tx``, advance.
    warpgroup 1, warp 0  MMA: one elected lane, per tile: ``ld2mma.wait`` (the
                         accumulator is free; starts at phase 1), then per
                         k-tile ``tma2mma.wait`` (phase 0 start), ``tcgen05.mma``,
                         ``tcgen05.commit`` onto ``mma2tma[stage]``; after the
                         K loop ``tcgen05.commit`` onto ``mma2ld[0]``.
    warpgroup 0          writeback (128 threads): ``mma2ld.wait``, TMEM ->
                         registers, every thread arrives on ``ld2mma[0]``
                         (count 128), fp16 cast, registers -> Dsmem,
                         ``warpgroup_sync(10)``, one thread's TMA store
                         (commit_group / wait_group 0), ``warpgroup_sync(10)``.

Barriers: ``tma2mma[PIPE_DEPTH]`` (full, ``TMABar``), ``mma2tma[PIPE_DEPTH]``
(empty, ``TCGen05Bar``), ``mma2ld[1]`` (accumulator full, ``TCGen05Bar``),
``ld2mma[1]`` (accumulator empty, ``MBarrier``, 128 arrivals).  Stage and
phase per role live in ``PipelineState`` (``tvm.backend.cuda.lang.pipeline``),
which the released package ships with the same interface the book uses.

Differences from the book's listing, and why:

* The book's ``hgemm_v7(M, N, K)`` fixes BLK_N=128, PIPE_DEPTH=2, l2 group 8
  and SM_COUNT=148; here they come from :class:`~protosim.config.GemmConfig`
  (``sm_count`` None = 148), with the seed port's swizzle choice and split
  TMEM loads for widths the book never uses (``seed_sm100._swizzle`` /
  ``_ld_chunk``).
* Released spellings, as in ``seed_sm100.py``: ``T.cuda.elect_sync()`` (the
  book's ``T.filter(lane_id, T.ptx.elect_sync())``; a bare ``elect_sync`` is a
  canonical thread filter, so the wrapper is redundant), full PTX modifier
  names for ``tcgen05.alloc/dealloc/relinquish/wait::ld/fence``, the proxy and
  mbarrier-init fences and ``cp.async.bulk`` groups; the TMEM buffer's
  ``allocated_addr`` is the column offset 0, not ``tmem_addr[0]``.
* The barriers are initialised after ``pool.commit()`` (the book calls
  ``init`` between the allocations and the commit).
* ``PipelineState.stage`` is a runtime local, so the TMA/MMA SMEM offsets are
  computed at run time; for a depth-1 ring the SMEM stage is the constant 0
  (``slot``), since ``tma_auto`` cannot prove ``Asmem[stage]`` aligned there.
  The book only builds depth 2 (and names 2 the minimum for overlap).
* The grid is ``SM_COUNT`` CTAs as in the book (and seed v6), even when there
  are fewer tiles: the extra CTAs find ``valid()`` false at once.

Added for correctness, not in the book:

* ``tcgen05.fence::after_thread_sync`` after the MMA warp's ``ld2mma`` wait
  (the MMA that overwrites the accumulator is ordered after the writeback's
  ``tcgen05.ld``), and ``tcgen05.fence::before_thread_sync`` in the writeback
  between ``tcgen05.wait::ld`` and the ``ld2mma`` arrive (the pair the PTX
  memory model asks for around a thread-sync of tcgen05 ops).
* TMEM is freed by warp 0 of warpgroup 0 only -- the warp that allocated it.
  The book's ``if warp_id == 0`` is true in *both* warpgroups, so it would
  relinquish and dealloc twice.

Bug knobs honoured (names and meaning as in the simulator's ws builder,
``protosim/builders/ws_gemm.py``; each changes only the code it names):

* ``skip_mma_phase_flip``: the producer's empty-ring state (``tma_ps``) never
  flips its phase when the stage index wraps -- the ring the MMA releases.
* ``expect_tx_delta``: bytes added to the producer's ``arrive.expect_tx``.
* ``wait_parity_flip``: ``"mma"`` inverts the parity of the producer's
  ``mma2tma`` waits, ``"tma"`` that of the MMA warp's ``tma2mma`` waits.
* ``skip_store_wait``: no ``cp.async.bulk.wait_group 0`` after the TMA store,
  so the next tile's writeback can overwrite Dsmem while the store reads it.
* ``reset_phase_per_tile``: every role re-initialises its ``PipelineState``
  (stage 0, start phase) at the top of each tile, as the seed's step 6 did
  with its phase variables.

Refused with :class:`~protosim.config.ConfigError`: ``tma_issuer="each_warp"``
(one producer warp by construction) and the delay knobs (not built here).
"""

from __future__ import annotations

import dataclasses

from protosim.config import DELAY_KNOBS, ConfigError, GemmConfig

from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TCGen05Bar, TMABar
from tvm.backend.cuda.lang.tile_scheduler import ClusterPersistentScheduler2D
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.layout import S, TCol, TileLayout, TLane, tid_in_wg

from kernels.tirx.seed_sm100 import (
    B200_SM_COUNT,
    TMEM_COLS,
    _ab_layouts,
    _check,
    _d_layout,
    _ld_chunk,
    acc_type,
    a_type,
    b_type,
    d_type,
)

HONOURED_KNOBS = ("skip_mma_phase_flip", "expect_tx_delta", "wait_parity_flip", "skip_store_wait", "reset_phase_per_tile")
"""The simulator's bug knobs step 7 builds; the others are refused, not ignored."""

WB_BAR = 10
"""Named barrier (``bar.sync 10, 128``) of the writeback warpgroup, as in the book."""

PRODUCER_START, CONSUMER_START = 1, 0
"""Initial phases: a producer's first wait on a fresh (empty) barrier passes, a consumer's blocks."""


@T.inline
def advance_frozen_phase(ps):
    """``PipelineState.advance`` minus the phase flip (the ``skip_mma_phase_flip`` bug):
    the stage index wraps as usual, the parity waited for stays at its start.  (A
    ``PipelineState`` subclass would lose the state's names in the generated CUDA:
    the released meta-class naming records resources per constructor scope.)"""
    if ps.depth > 1:
        ps.stage = ps.stage + 1
        if ps.stage == ps.depth:
            ps.stage = 0


def slot(ps):
    """The SMEM stage ``ps`` points at: ``ps.stage``, or the constant 0 for a depth-1 ring
    (``tma_auto`` cannot prove ``Asmem[stage]`` aligned when the stage axis has extent 1
    and the index is a runtime local)."""
    return ps.stage if ps.depth > 1 else 0


def _check_ws(cfg: GemmConfig, step: str = "step 7", honoured: tuple[str, ...] = HONOURED_KNOBS, where: str = "kernels/tirx/ws_sm100.py") -> None:
    """Refuse knobs this kernel (``step``, built in ``where``) does not build, then the seed
    port's shape/SMEM checks (PIPE_DEPTH stages of A and B plus one BLK_M x BLK_N Dsmem)."""
    cfg.validate()
    changed = (*cfg.bug_knobs, *(k for k in DELAY_KNOBS if getattr(cfg, k) != getattr(GemmConfig(), k)))
    for knob in changed:
        if knob not in honoured:
            raise ConfigError(
                knob,
                f"{step} builds only the knobs {', '.join(honoured)}; "
                f"{knob}={getattr(cfg, knob)!r} is not modelled in {where}",
            )
    # the shared checks (SMEM budget with Dsmem) on the knob-free config: they refuse knobs of their own
    _check(dataclasses.replace(cfg, **{k: getattr(GemmConfig(), k) for k in honoured}), step, stages=cfg.PIPE_DEPTH, d_tile=True)


def ws_step7(cfg: GemmConfig):
    _check_ws(cfg)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    K_TILES = K // BLK_K
    PIPE_DEPTH = cfg.PIPE_DEPTH
    SM_COUNT = cfg.sm_count if cfg.sm_count is not None else B200_SM_COUNT
    L2_GROUP = cfg.l2_group_size
    WG_NUMBER = 2
    TX_BYTES = cfg.stage_bytes + cfg.expect_tx_delta
    # bug knobs, as compile-time constants
    FLIP_EMPTY = not cfg.skip_mma_phase_flip  # the producer's (empty-ring) phase flips
    WRONG_EMPTY = 1 if cfg.wait_parity_flip == "mma" else 0  # producer's mma2tma waits
    WRONG_FULL = 1 if cfg.wait_parity_flip == "tma" else 0  # MMA warp's tma2mma waits
    STORE_WAIT = not cfg.skip_store_wait
    RESET = cfg.reset_phase_per_tile
    A_layout, B_layout = _ab_layouts(cfg, PIPE_DEPTH)
    D_layout = _d_layout(cfg)

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        bx = T.cta_id([SM_COUNT])
        wg_id = T.warpgroup_id([WG_NUMBER])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- Allocation ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma2mma = TMABar(pool, PIPE_DEPTH)  # full: SMEM stage loaded
        mma2tma = TCGen05Bar(pool, PIPE_DEPTH)  # empty: MMA done reading the stage
        mma2ld = TCGen05Bar(pool, 1)  # accumulator ready for writeback
        ld2mma = MBarrier(pool, 1)  # accumulator read out: TMEM free
        pool.move_base_to(1024)
        Asmem = pool.alloc((PIPE_DEPTH, BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((PIPE_DEPTH, BLK_N, BLK_K), b_type, layout=B_layout)
        Dsmem = pool.alloc((BLK_M, BLK_N), d_type, layout=D_layout)
        pool.commit()

        # --- Barrier init (thread 0 of the CTA) ---
        tma2mma.init(1)
        mma2tma.init(1)
        mma2ld.init(1)
        ld2mma.init(128)  # all 128 writeback threads arrive

        # --- TMEM alloc + fences ---
        if wg_id == 0:
            if warp_id == 0:
                T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))
        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            acc_type,
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        # --- Tile scheduler ---
        tile_scheduler = ClusterPersistentScheduler2D(
            "ts",
            num_m_tiles=M // BLK_M,
            num_n_tiles=N // BLK_N,
            l2_group_size=L2_GROUP,
            num_clusters=SM_COUNT,
        )
        tile_scheduler.init(bx)
        m_st = T.meta_var(tile_scheduler.m_idx * BLK_M)
        n_st = T.meta_var(tile_scheduler.n_idx * BLK_N)

        # =============================================
        # Warpgroup 1: TMA producer (warp 3) + MMA (warp 0)
        # =============================================
        if wg_id == 1:
            if warp_id == 3:
                # === TMA producer ===
                tma_ps = PipelineState(PIPE_DEPTH, phase=PRODUCER_START)

                @T.inline
                def tma_load(k_offset):
                    tma_config = T.meta_var({"dispatch": "tma_auto", "cta_group": 1, "mbar": tma2mma.ptr_to([tma_ps.stage])})
                    Tx.copy_async(Asmem[slot(tma_ps), :, :], A[m_st : m_st + BLK_M, k_offset : k_offset + BLK_K], **tma_config)
                    Tx.copy_async(Bsmem[slot(tma_ps), :, :], B[n_st : n_st + BLK_N, k_offset : k_offset + BLK_K], **tma_config)

                if T.cuda.elect_sync():
                    while tile_scheduler.valid():
                        if RESET:
                            tma_ps.init(PRODUCER_START)
                        for k in range(K_TILES):
                            mma2tma.wait(tma_ps.stage, tma_ps.phase ^ WRONG_EMPTY)
                            tma_load(k * BLK_K)
                            tma2mma.arrive(tma_ps.stage, TX_BYTES)
                            if FLIP_EMPTY:
                                tma_ps.advance()
                            else:
                                advance_frozen_phase(tma_ps)
                        tile_scheduler.next_tile()

            elif warp_id == 0:
                # === MMA ===
                mma_ps = PipelineState(PIPE_DEPTH, phase=CONSUMER_START)
                ld_ps = PipelineState(1, phase=PRODUCER_START)

                if T.cuda.elect_sync():
                    while tile_scheduler.valid():
                        if RESET:
                            mma_ps.init(CONSUMER_START)
                            ld_ps.init(PRODUCER_START)
                        # Wait for TMEM to be free from the previous tile's writeback
                        ld2mma.wait(ld_ps.stage, ld_ps.phase)
                        ld_ps.advance()
                        T.ptx.tcgen05.fence__after_thread_sync()  # added

                        for k in range(K_TILES):
                            tma2mma.wait(mma_ps.stage, mma_ps.phase ^ WRONG_FULL)
                            Tx.gemm_async(
                                tmem[:, :BLK_N],
                                Asmem[slot(mma_ps), :, :],
                                Bsmem[slot(mma_ps), :, :],
                                accum=(k != 0),
                                dispatch="tcgen05",
                                cta_group=1,
                            )
                            mma2tma.arrive(mma_ps.stage, cta_group=1, cta_mask=0)
                            mma_ps.advance()

                        # Signal results ready for writeback
                        mma2ld.arrive(0, cta_group=1, cta_mask=0)
                        tile_scheduler.next_tile()

        # =============================================
        # Warpgroup 0: writeback
        # =============================================
        elif wg_id == 0:
            wb_ps = PipelineState(1, phase=CONSUMER_START)
            reg = T.alloc_local((BLK_N,), acc_type)
            reg_f16 = T.alloc_local((BLK_N,), d_type)
            reg_wg = reg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))

            while tile_scheduler.valid():
                if RESET:
                    wb_ps.init(CONSUMER_START)
                # Wait for the MMA results
                mma2ld.wait(wb_ps.stage, wb_ps.phase)
                wb_ps.advance()
                T.ptx.tcgen05.fence__after_thread_sync()

                # TMEM -> registers (warpgroup scope)
                if LD_CHUNK == BLK_N:
                    Tx.wg.copy_async(reg_wg[:, :], tmem[:, :BLK_N])
                else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
                    for c in T.unroll(BLK_N // LD_CHUNK):
                        Tx.wg.copy_async(reg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
                T.ptx.tcgen05.wait__ld.sync.aligned()
                T.ptx.tcgen05.fence__before_thread_sync()  # added

                # TMEM free (all 128 threads arrive)
                ld2mma.arrive(0)

                Tx.cast(reg_f16[:], reg[:])

                # Registers -> Dsmem, then one thread's TMA store
                Tx.copy(Dsmem[warp_id * 32 + lane_id, 0:BLK_N], reg_f16[:])
                T.ptx.fence.proxy.async_.shared__cta()
                T.cuda.warpgroup_sync(WB_BAR)
                if warp_id == 0:
                    if lane_id == 0:
                        Tx.copy_async(D[m_st : m_st + BLK_M, n_st : n_st + BLK_N], Dsmem[:, :], dispatch="tma_auto")
                        T.ptx.cp.async_.bulk.commit_group()
                        if STORE_WAIT:
                            T.ptx.cp.async_.bulk.wait_group(0)
                T.cuda.warpgroup_sync(WB_BAR)

                tile_scheduler.next_tile()

        # --- Cleanup: the allocating warp frees TMEM ---
        T.cuda.cta_sync()
        if wg_id == 0:
            if warp_id == 0:
                T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
                T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel

