"""The book's step 9 -- multi-consumer warp specialization -- on the released TIRx.

Source: "Scaling GEMM with Warp Specialization and Clusters", step 9
(``shared/docs/book/gemm_steps_7_9.md``, "Step 9: Multi-Consumer Warp Specialization" and
its "Complete Kernel" listing), ported to ``apache-tvm==0.27.0.post1`` for ``sm_100a``
(compile-only here).  ``consumers_step9(cfg)`` returns the uncompiled ``@T.prim_func``.

As in the book, step 9 keeps step 8's two-CTA cluster (``T.cta_id_in_cluster([2, 1])``,
``tcgen05.mma.cta_group::2`` issued by CTA 0, CTA 0's ``tma2mma`` / ``ld2mma`` reached from
CTA 1 through ``remote_view(0)``) and adds a second MMA consumer: the cluster tile is
``(NUM_CONSUMER * 2 * BLK_M) x (2 * BLK_N)`` -- the book's 512x256.  The cluster parts are
written here from the book's listing, independent of step 8's module (``cluster_sm100.py``),
with the released spellings step 8's port found.

Rows and columns (``m_st = (m_idx * 4 + cbx) * BLK_M``, ``n_st = (n_idx * 2 + cbx) * BLK_N``):
consumer c's A / D rows in CTA ``cbx`` are ``m_st + c * 2 * BLK_M`` (+BLK_M); both consumers
share the stored-B slices ``n_st`` of the pair (``2 * BLK_N`` output columns); consumer c
accumulates into TMEM columns ``[c * 2 * BLK_N, (c + 1) * 2 * BLK_N)`` of each CTA.

Roles (three warpgroups, 384 threads per CTA, ``SM_COUNT / 2`` persistent clusters):

    warpgroup 2, warp 3  TMA producer, both CTAs, one elected lane: per k-tile
                         ``mma2tma.wait`` (own CTA), TMA ``Asmem[stage, 0]``,
                         ``Asmem[stage, 1]`` and ``Bsmem[stage]`` (``cta_group=2``) onto
                         CTA 0's ``tma2mma[stage]``; CTA 0's lane arms it with the bytes of
                         both CTAs: ``2 * (2 * BLK_M + BLK_N) * BLK_K * 2``.
    warpgroup 2, warp c  MMA consumer c (c = 0, 1), CTA 0 only, one elected lane: per tile
                         ``ld2mma.wait(c)``; per k-tile ``tma2mma.wait(stage)`` (both
                         consumers wait on the same full barrier), ``tcgen05.mma.cta_group::2``
                         of ``Asmem[stage, c]`` x ``Bsmem[stage]`` into its TMEM columns,
                         multicast ``tcgen05.commit`` (mask 3) onto ``mma2tma[stage]``; after
                         the K loop a multicast commit onto ``mma2ld[c]``.
    warpgroup c          writeback of consumer c (c = 0, 1), both CTAs: ``mma2ld.wait(c)``,
                         per ``EPI_N``-column chunk TMEM -> registers -> ``Dsmem[c]`` -> one
                         thread's TMA store between two ``warpgroup_sync(10 + c)``; then all
                         128 threads arrive on CTA 0's ``ld2mma[c]``.

Barriers: ``tma2mma[PIPE_DEPTH]`` (full, count 1), ``mma2tma[PIPE_DEPTH]`` (empty, count
``NUM_CONSUMER``: a stage is free once *both* consumers' MMAs have read it),
``mma2ld[NUM_CONSUMER]`` (count 1) and ``ld2mma[NUM_CONSUMER]`` (count ``128 * 2``: both
CTAs' writeback warpgroup c) -- the last two indexed by consumer, not by stage.

Differences from the book's listing:

* Step 7's port changes (``ws_sm100`` docstring): released spellings
  (``T.cuda.elect_sync()``, full PTX modifier names), barriers initialised after
  ``pool.commit()``, TMEM ``allocated_addr=0``, shapes/depth/L2 group/CTA count from
  :class:`~protosim.config.GemmConfig`, a depth-1 ring indexing SMEM stage 0 as a constant.
* ``T.cuda.cluster_sync()`` after the barrier init where the book has ``cta_sync``: CTA 1's
  TMA completes on and its writeback arrives at CTA 0's barriers (as step 8's port).
* ``EPI_N = min(64, 2 * BLK_N)``; ``BLK_N <= 128`` (the pair MMA's N is ``2 * BLK_N``).
* Added, as in step 7: ``tcgen05.fence::after_thread_sync`` after each consumer's
  ``ld2mma`` wait and ``fence::before_thread_sync`` before the writeback's ``ld2mma``
  arrive; TMEM freed by warpgroup 0 warp 0 only (the book's ``if warp_id == 0`` holds in
  all three warpgroups).

Bug knobs honoured (step 7's set, same meaning; each changes only the code it names):
``skip_mma_phase_flip`` (the producers' empty-ring state never flips), ``expect_tx_delta``
(CTA 0's ``arrive.expect_tx``), ``wait_parity_flip`` (``"mma"``: the producers'
``mma2tma`` waits, ``"tma"``: the one ``tma2mma`` wait both consumers run),
``skip_store_wait``, ``reset_phase_per_tile``; and the cluster knobs, as in step 8
(the simulator's ``hgemm_v9``, ``protosim/builders/book_gemm.py``, builds the same):
``multicast_skip_rank`` (that rank issues none of its TMA loads), ``release_unscaled``
(each ``ld2mma[c]`` counts one CTA's 128 writeback threads instead of both CTAs' 256),
``expect_tx_local`` (CTA 0 arms ``tma2mma`` with its own stage bytes only),
``skip_exit_sync`` (``cta_sync`` instead of ``cluster_sync`` before the TMEM dealloc and
exit).  The config's cluster must be the kernel's: ``cluster_m = 2``, ``cluster_n = 1``.
Refused with :class:`~protosim.config.ConfigError`: ``tma_issuer="each_warp"``, the delay
knobs, any other cluster shape.
"""

from __future__ import annotations

import dataclasses

from protosim.config import DELAY_KNOBS, ConfigError, GemmConfig

from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TCGen05Bar, TMABar
from tvm.backend.cuda.lang.tile_scheduler import ClusterPersistentScheduler2D
from tvm.backend.cuda.tile_primitive.tma_utils import mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.layout import S, TCol, TileLayout, TLane, tid_in_wg

from kernels.tirx.seed_sm100 import (
    B200_SM_COUNT,
    F16_SIZE,
    SMEM_LIMIT,
    TMEM_COLS,
    _check,
    _ld_chunk,
    _swizzle,
    acc_type,
    a_type,
    b_type,
    d_type,
)
from kernels.tirx.ws_sm100 import HONOURED_KNOBS as STEP7_KNOBS
from kernels.tirx.ws_sm100 import CONSUMER_START, PRODUCER_START, WB_BAR, advance_frozen_phase, slot

NUM_CONSUMER = 2
"""MMA consumers (and writeback warpgroups) per CTA pair."""

CTA_GROUP = 2
"""CTAs per cluster, and the ``cta_group`` of the MMAs, their commits, the TMA loads and the TMEM alloc."""

BOTH_CTAS = 0b11
"""``cta_mask`` of the multicast commits: CTA 0 and CTA 1."""

EPI_N = 64
"""Columns per writeback chunk (the book's ``EPI_N``)."""

HONOURED_KNOBS = (*STEP7_KNOBS, "multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync")
"""The simulator's bug knobs step 9 builds: step 7's and the cluster knobs; the others are refused."""


def stage_bytes(cfg: GemmConfig) -> int:
    """Bytes one k-tile brings into one CTA: ``NUM_CONSUMER`` A blocks and its B slice."""
    return (NUM_CONSUMER * cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * F16_SIZE


def _check_v9(cfg: GemmConfig) -> tuple[int, int]:
    """Refuse what step 9 does not build; return ``(SM_COUNT, EPI_N)``."""
    cfg.validate()
    for knob in (*cfg.bug_knobs, *(k for k in DELAY_KNOBS if getattr(cfg, k) != getattr(GemmConfig(), k))):
        if knob not in HONOURED_KNOBS:
            raise ConfigError(
                knob,
                f"step 9 builds only the knobs {', '.join(HONOURED_KNOBS)}; "
                f"{knob}={getattr(cfg, knob)!r} is not modelled in kernels/tirx/consumers_sm100.py",
            )
    # the seed port's shape checks on the knob-free config (they refuse knobs of their own)
    _check(dataclasses.replace(cfg, **{k: getattr(GemmConfig(), k) for k in HONOURED_KNOBS}), "step 9")
    if cfg.BLK_N > 128:
        raise ConfigError("BLK_N", f"{cfg.BLK_N}: the 2-CTA MMA's N is 2*BLK_N and tcgen05 allows at most 256; set BLK_N <= 128")
    for dim, rows in (("M", NUM_CONSUMER * CTA_GROUP * cfg.BLK_M), ("N", CTA_GROUP * cfg.BLK_N)):
        if getattr(cfg, dim) % rows:
            raise ConfigError(dim, f"{dim}={getattr(cfg, dim)} is not a multiple of step 9's cluster tile's {rows}")
    if cfg.cluster_m != CTA_GROUP:
        raise ConfigError("cluster_m", f"{cfg.cluster_m}: step 9 runs clusters of {CTA_GROUP} CTAs along M (tcgen05 "
                                       f"cta_group::2); set cluster_m = {CTA_GROUP}")
    if cfg.cluster_n != 1:
        raise ConfigError("cluster_n", f"{cfg.cluster_n}: step 9's cluster is {CTA_GROUP} CTAs along M only; set cluster_n = 1")
    sm_count = cfg.sm_count if cfg.sm_count is not None else B200_SM_COUNT
    if sm_count % CTA_GROUP:
        raise ConfigError("sm_count", f"{sm_count}: clusters of {CTA_GROUP} CTAs need an even CTA count")
    epi_n = min(EPI_N, CTA_GROUP * cfg.BLK_N)
    if CTA_GROUP * cfg.BLK_N % epi_n:
        raise ConfigError("BLK_N", f"2*BLK_N={CTA_GROUP * cfg.BLK_N} is not a multiple of the writeback chunk EPI_N={epi_n}")
    smem = 1024 + cfg.PIPE_DEPTH * stage_bytes(cfg) + NUM_CONSUMER * cfg.BLK_M * epi_n * F16_SIZE
    if smem > SMEM_LIMIT:
        raise ConfigError("PIPE_DEPTH", f"step 9 needs {smem} B of shared memory, over the {SMEM_LIMIT} B a CTA may have on sm_100")
    return sm_count, epi_n


def consumers_step9(cfg: GemmConfig):
    SM_COUNT, EPI = _check_v9(cfg)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    MMA_N = CTA_GROUP * BLK_N  # each consumer's accumulator columns in each CTA
    LD_CHUNK = _ld_chunk(EPI)
    K_TILES = K // BLK_K
    PIPE_DEPTH = cfg.PIPE_DEPTH
    L2_GROUP = cfg.l2_group_size
    WG_NUMBER = NUM_CONSUMER + 1
    TX_BYTES = (1 if cfg.expect_tx_local else CTA_GROUP) * stage_bytes(cfg) + cfg.expect_tx_delta  # both CTAs' A blocks and B slices
    # bug knobs, as compile-time constants
    FLIP_EMPTY = not cfg.skip_mma_phase_flip  # the producers' (empty-ring) phase flips
    WRONG_EMPTY = 1 if cfg.wait_parity_flip == "mma" else 0  # producers' mma2tma waits
    WRONG_FULL = 1 if cfg.wait_parity_flip == "tma" else 0  # consumers' tma2mma waits
    STORE_WAIT = not cfg.skip_store_wait
    RESET = cfg.reset_phase_per_tile
    SKIPS, SKIP_RANK = cfg.multicast_skip_rank >= 0, cfg.multicast_skip_rank  # that rank issues no TMA loads
    LD2MMA_ARRIVALS = 128 * (1 if cfg.release_unscaled else CTA_GROUP)
    EXIT_SYNC = not cfg.skip_exit_sync
    mode = _swizzle(BLK_K, "BLK_K")
    A_layout = mma_shared_layout(a_type, mode, (PIPE_DEPTH, NUM_CONSUMER, BLK_M, BLK_K))
    B_layout = mma_shared_layout(b_type, mode, (PIPE_DEPTH, BLK_N, BLK_K))
    D_layout = mma_shared_layout(d_type, _swizzle(EPI, "BLK_N"), (NUM_CONSUMER, BLK_M, EPI))

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        bx = T.cta_id([SM_COUNT])
        cbx, cby = T.cta_id_in_cluster([CTA_GROUP, 1])
        wg_id = T.warpgroup_id([WG_NUMBER])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- Allocation ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma2mma = TMABar(pool, PIPE_DEPTH)  # full (CTA 0's is used): both CTAs' stage loaded
        mma2tma = TCGen05Bar(pool, PIPE_DEPTH)  # empty: both consumers done reading the stage
        mma2ld = TCGen05Bar(pool, NUM_CONSUMER)  # accumulator c ready for writeback c
        ld2mma = MBarrier(pool, NUM_CONSUMER)  # accumulator c read out in both CTAs (CTA 0's is used)
        pool.move_base_to(1024)
        Asmem = pool.alloc((PIPE_DEPTH, NUM_CONSUMER, BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((PIPE_DEPTH, BLK_N, BLK_K), b_type, layout=B_layout)
        Dsmem = pool.alloc((NUM_CONSUMER, BLK_M, EPI), d_type, layout=D_layout)
        pool.commit()

        # --- Barrier init ---
        tma2mma.init(1)
        mma2tma.init(NUM_CONSUMER)  # each stage: one commit per consumer
        mma2ld.init(1)  # each slot: its consumer's commit
        ld2mma.init(LD2MMA_ARRIVALS)  # each slot: writeback warpgroup c of both CTAs (128 * CTA_GROUP)

        # --- TMEM alloc (both CTAs of the pair) + fences ---
        if wg_id == 0:
            if warp_id == 0:
                T.ptx.tcgen05.alloc.cta_group__2.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))
        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cluster_sync()  # the peer's barriers are initialised before any remote arrive

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            acc_type,
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        # --- Tile scheduler: (NUM_CONSUMER * 2 * BLK_M) x (2 * BLK_N) cluster tiles ---
        tile_scheduler = ClusterPersistentScheduler2D(
            "ts",
            num_m_tiles=M // (NUM_CONSUMER * CTA_GROUP * BLK_M),
            num_n_tiles=N // (CTA_GROUP * BLK_N),
            l2_group_size=L2_GROUP,
            num_clusters=SM_COUNT // CTA_GROUP,
        )
        tile_scheduler.init(bx // CTA_GROUP)
        m_idx = T.meta_var(tile_scheduler.m_idx)
        n_idx = T.meta_var(tile_scheduler.n_idx)
        m_st = T.meta_var((m_idx * NUM_CONSUMER * CTA_GROUP + cbx) * BLK_M)  # consumer 0's rows in this CTA
        n_st = T.meta_var((n_idx * CTA_GROUP + cbx) * BLK_N)

        # --- Cross-CTA barrier views (mapa into CTA 0) ---
        tma2mma_cta0 = tma2mma.remote_view(0)
        ld2mma_cta0 = ld2mma.remote_view(0)

        # =============================================
        # Warpgroup 2: TMA producer (warp 3, both CTAs) + MMA consumers (warps 0, 1; CTA 0)
        # =============================================
        if wg_id == NUM_CONSUMER:
            if warp_id == 3:
                # === TMA producer: NUM_CONSUMER A blocks + one shared B slice per stage ===
                tma_ps = PipelineState(PIPE_DEPTH, phase=PRODUCER_START)

                @T.inline
                def tma_load(k_offset):
                    tma_config = T.meta_var(
                        {"dispatch": "tma_auto", "cta_group": CTA_GROUP, "mbar": tma2mma_cta0.ptr_to([tma_ps.stage])}
                    )
                    for c in T.unroll(NUM_CONSUMER):
                        m_c = T.meta_var(m_st + c * CTA_GROUP * BLK_M)
                        Tx.copy_async(Asmem[slot(tma_ps), c, :, :], A[m_c : m_c + BLK_M, k_offset : k_offset + BLK_K], **tma_config)
                    Tx.copy_async(Bsmem[slot(tma_ps), :, :], B[n_st : n_st + BLK_N, k_offset : k_offset + BLK_K], **tma_config)

                if T.cuda.elect_sync():
                    while tile_scheduler.valid():
                        if RESET:
                            tma_ps.init(PRODUCER_START)
                        for k in range(K_TILES):
                            mma2tma.wait(tma_ps.stage, tma_ps.phase ^ WRONG_EMPTY)
                            if SKIPS:
                                if cbx != SKIP_RANK:
                                    tma_load(k * BLK_K)
                            else:
                                tma_load(k * BLK_K)
                            if cbx == 0:
                                tma2mma_cta0.arrive(tma_ps.stage, TX_BYTES)
                            if FLIP_EMPTY:
                                tma_ps.advance()
                            else:
                                advance_frozen_phase(tma_ps)
                        tile_scheduler.next_tile()

            elif warp_id < NUM_CONSUMER:
                # === MMA consumer warp_id: its A block, its TMEM columns, its mma2ld/ld2mma slot ===
                mma_ps = PipelineState(PIPE_DEPTH, phase=CONSUMER_START)
                ld_ps = PipelineState(1, phase=PRODUCER_START)

                if cbx == 0:
                    if T.cuda.elect_sync():
                        while tile_scheduler.valid():
                            if RESET:
                                mma_ps.init(CONSUMER_START)
                                ld_ps.init(PRODUCER_START)
                            # this consumer's TMEM columns read out in both CTAs
                            ld2mma.wait(warp_id, ld_ps.phase)
                            ld_ps.advance()
                            T.ptx.tcgen05.fence__after_thread_sync()  # added

                            for k in range(K_TILES):
                                tma2mma.wait(mma_ps.stage, mma_ps.phase ^ WRONG_FULL)
                                Tx.gemm_async(
                                    tmem[:, warp_id * MMA_N : warp_id * MMA_N + MMA_N],
                                    Asmem[slot(mma_ps), warp_id, :, :],
                                    Bsmem[slot(mma_ps), :, :],
                                    accum=(k != 0),
                                    dispatch="tcgen05",
                                    cta_group=CTA_GROUP,
                                )
                                mma2tma.arrive(mma_ps.stage, cta_group=CTA_GROUP, cta_mask=BOTH_CTAS)
                                mma_ps.advance()

                            # this consumer's results ready for writeback warpgroup warp_id of both CTAs
                            mma2ld.arrive(warp_id, cta_group=CTA_GROUP, cta_mask=BOTH_CTAS)
                            tile_scheduler.next_tile()

        # =============================================
        # Warpgroups 0, 1: writeback of consumer wg_id (both CTAs)
        # =============================================
        elif wg_id < NUM_CONSUMER:
            wb_ps = PipelineState(1, phase=CONSUMER_START)
            reg = T.alloc_local((EPI,), acc_type)
            reg_f16 = T.alloc_local((EPI,), d_type)
            reg_wg = reg.view(128, EPI, layout=TileLayout(S[(128, EPI) : (1 @ tid_in_wg, 1)]))

            while tile_scheduler.valid():
                if RESET:
                    wb_ps.init(CONSUMER_START)
                # Wait for THIS consumer's results
                mma2ld.wait(wg_id, wb_ps.phase)
                wb_ps.advance()
                T.ptx.tcgen05.fence__after_thread_sync()

                for i in T.unroll(MMA_N // EPI):
                    # TMEM -> registers (warpgroup scope), EPI columns of this consumer's range
                    for c in T.unroll(EPI // LD_CHUNK):
                        col = T.meta_var(wg_id * MMA_N + i * EPI + c * LD_CHUNK)
                        Tx.wg.copy_async(reg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, col : col + LD_CHUNK])
                    T.ptx.tcgen05.wait__ld.sync.aligned()
                    Tx.cast(reg_f16[:], reg[:])

                    # Registers -> Dsmem[wg_id], then one thread's TMA store
                    Tx.copy(Dsmem[wg_id, warp_id * 32 + lane_id, :], reg_f16[:])
                    T.ptx.fence.proxy.async_.shared__cta()
                    T.cuda.warpgroup_sync(WB_BAR + wg_id)
                    if warp_id == 0:
                        if lane_id == 0:
                            m_wb = T.meta_var(m_st + wg_id * CTA_GROUP * BLK_M)
                            n_wb = T.meta_var(n_idx * MMA_N + i * EPI)
                            Tx.copy_async(D[m_wb : m_wb + BLK_M, n_wb : n_wb + EPI], Dsmem[wg_id, :, :], dispatch="tma_auto")
                            T.ptx.cp.async_.bulk.commit_group()
                            if STORE_WAIT:
                                T.ptx.cp.async_.bulk.wait_group(0)
                    T.cuda.warpgroup_sync(WB_BAR + wg_id)

                # this consumer's TMEM columns read out here: all 128 threads arrive on CTA 0's ld2mma[wg_id]
                T.ptx.tcgen05.fence__before_thread_sync()  # added
                ld2mma_cta0.arrive(wg_id)
                tile_scheduler.next_tile()

        # --- Cleanup: both CTAs done with TMEM, then each allocating warp frees it ---
        if EXIT_SYNC:
            T.cuda.cluster_sync()
        else:
            T.cuda.cta_sync()
        if wg_id == 0:
            if warp_id == 0:
                T.ptx.tcgen05.relinquish_alloc_permit.cta_group__2.sync.aligned()
                T.ptx.tcgen05.dealloc.cta_group__2.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel
