"""The book's step 8 -- the 2-CTA cluster Blackwell fp16 GEMM -- on the released TIRx.

Source: "Scaling GEMM with Warp Specialization and Clusters", step 8
(``shared/docs/book/gemm_steps_7_9.md``, "Step 8: Two-CTA Cluster", its "Complete
Kernel" listing), ported to ``apache-tvm==0.27.0.post1`` for ``sm_100a``
(compile-only here) on top of step 7 (:mod:`kernels.tirx.ws_sm100`):
``cluster_step8(cfg)`` returns the uncompiled ``@T.prim_func``.

Shape: clusters of two CTAs (``T.cta_id_in_cluster([2, 1])`` -> ``__cluster_dims__(2, 1, 1)``),
``SM_COUNT / 2`` persistent clusters walking ``ClusterPersistentScheduler2D`` over
``2*BLK_M x 2*BLK_N`` cluster tiles (the book's 256 x 256 for BLK_M = BLK_N = 128).
CTA ``cbx`` loads ``A[m_base + cbx*BLK_M : +BLK_M]`` and stored-B rows
``B[n_base + cbx*BLK_N : +BLK_N]`` into its own SMEM; one ``tcgen05.mma.cta_group::2``
(M = 256 across the pair, N = 2*BLK_N) reads both CTAs' slices and writes both CTAs'
TMEM, so each CTA ends up with all ``2*BLK_N`` columns of its own ``BLK_M`` rows.

Roles (two warpgroups per CTA, as in step 7):

    warpgroup 1, warp 3  TMA producer, in both CTAs: one elected lane waits on its own
                         CTA's ``mma2tma[stage]``, issues its A and B slice loads with
                         ``cta_group=2`` completing on CTA 0's ``tma2mma[stage]``
                         (``tma2mma.remote_view(0)``: a ``mapa`` of the barrier address);
                         only CTA 0's lane arms that barrier with
                         ``mbarrier.arrive.expect_tx.shared::cluster`` for the bytes of
                         *both* CTAs (``2 * stage_bytes``).
    warpgroup 1, warp 0  MMA, CTA 0 only (``if cbx == 0``), one elected lane: per tile
                         ``ld2mma.wait`` (256 arrivals: both CTAs' writeback threads), per
                         k-tile ``tma2mma.wait`` then ``tcgen05.mma.cta_group::2``, and
                         ``tcgen05.commit.cta_group::2 ... multicast::cluster`` with mask 3
                         onto ``mma2tma[stage]`` (both CTAs' producers may reuse the stage);
                         after the K loop the same multicast commit onto ``mma2ld[0]``
                         (both CTAs' writebacks may read TMEM).
    warpgroup 0          writeback, both CTAs: ``mma2ld.wait``, then the 2*BLK_N columns
                         in two BLK_N-column chunks (TMEM -> registers -> fp16 -> Dsmem ->
                         one thread's TMA store), then every thread arrives on CTA 0's
                         ``ld2mma[0]`` (``mbarrier.arrive.shared::cluster`` on the mapped
                         address).

TMEM: ``tcgen05.alloc/dealloc/relinquish_alloc_permit.cta_group::2`` by warp 0 of
warpgroup 0 in each CTA (both peers take part in a 2-CTA allocation); ``cluster_sync``
before the dealloc so neither CTA frees TMEM the other's MMA or writeback still uses.

Differences from the book's listing, and why:

* As in step 7 (see :mod:`kernels.tirx.ws_sm100`): BLK_N, BLK_K, PIPE_DEPTH, the L2
  group and SM_COUNT come from :class:`~protosim.config.GemmConfig` (the book: 128,
  64, 4, 8, 148); released PTX spellings; barriers initialised after
  ``pool.commit()``; the TMEM buffer's ``allocated_addr`` is 0; ``slot()`` for a
  depth-1 ring; one register buffer per chunk hoisted out of the tile loop.
* ``T.cuda.cluster_sync()`` after the barrier init, where the book has a
  ``cta_sync``: CTA 1's TMA completes on and its writeback arrives at CTA 0's
  barriers, which must be initialised (and the init fenced to the cluster) first.
* The TMEM dealloc is done by warp 0 of warpgroup 0 only (the book's
  ``if warp_id == 0`` is true in both warpgroups), as in step 7.
* Added tcgen05 fences, as in step 7: ``fence::after_thread_sync`` after the MMA's
  ``ld2mma`` wait, ``fence::before_thread_sync`` before the writeback's ``ld2mma``
  arrive.
* The book's per-chunk ``cp.async.bulk.wait_group 0`` is kept: Dsmem is reused by
  the second chunk.
* ``BLK_N`` (the stored-B slice per CTA) is at most 128: the MMA's N is 2*BLK_N
  and tcgen05 tops out at N = 256.

Bug knobs honoured (each changes only the code it names):

* ``expect_tx_delta``: bytes added to CTA 0's ``arrive.expect_tx`` (the count no
  longer matches what both CTAs' TMA loads deliver).
* ``skip_mma_phase_flip``: the producers' empty-ring state (``tma_ps``) never flips
  its phase when the stage wraps (both CTAs).
* ``wait_parity_flip``: ``"mma"`` inverts the parity of the producers' ``mma2tma``
  waits, ``"tma"`` that of the MMA's ``tma2mma`` waits.
* ``skip_store_wait``: no ``cp.async.bulk.wait_group 0`` after each chunk's TMA
  store, so the next chunk overwrites Dsmem while the store reads it.

Cluster bug knobs (protosim/config.py; the simulator's ``hgemm_v8`` builds the same,
``protosim/builders/book_gemm.py``):

* ``multicast_skip_rank``: the CTA of that rank never issues its TMA loads (its A and
  B slices), so CTA 0's ``tma2mma`` waits for bytes that never come.
* ``release_unscaled``: ``ld2mma`` is initialised with one CTA's 128 writeback threads
  instead of both CTAs' 256, so the first CTA to read out its TMEM frees the
  accumulator for the next tile while the other may still be reading.
* ``expect_tx_local``: CTA 0 arms ``tma2mma`` with its own stage bytes only, not both
  CTAs'.
* ``skip_exit_sync``: ``T.cuda.cta_sync()`` (step 7's) instead of ``cluster_sync()``
  before the TMEM dealloc and exit, so a CTA may leave while its peer still arrives on
  its barriers.

The cluster shape: clusters of two CTAs along M by construction, so the config must say
``cluster_m = 2``, ``cluster_n = 1`` (the launch it describes; ``multicast_skip_rank``
ranges over ranks 0 and 1); other values are refused.

Refused with :class:`~protosim.config.ConfigError`: ``reset_phase_per_tile``,
``tma_issuer="each_warp"`` and the delay knobs (not built here); BLK_N > 128;
M / N not multiples of the cluster tile; an odd ``sm_count``; a cluster shape other
than 2 x 1.
"""

from __future__ import annotations

from protosim.config import ConfigError, GemmConfig

from tvm.backend.cuda.lang.pipeline import MBarrier, PipelineState, TCGen05Bar, TMABar
from tvm.backend.cuda.lang.tile_scheduler import ClusterPersistentScheduler2D
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.layout import S, TCol, TileLayout, TLane, tid_in_wg

from kernels.tirx.seed_sm100 import B200_SM_COUNT, TMEM_COLS, _ab_layouts, _d_layout, _ld_chunk, acc_type, a_type, b_type, d_type
from kernels.tirx.ws_sm100 import CONSUMER_START, PRODUCER_START, WB_BAR, _check_ws, advance_frozen_phase, slot

CTA_GROUP = 2
"""CTAs per cluster, and the ``cta_group`` of the MMA, its commits, TMA loads and TMEM alloc."""

BOTH_CTAS = 0b11
"""``cta_mask`` of the multicast commits: CTA 0 and CTA 1."""

CLUSTER_KNOBS = ("multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync")
"""The cluster bug knobs (protosim/config.py), built here and in step 9."""

HONOURED_KNOBS = ("expect_tx_delta", "skip_mma_phase_flip", "wait_parity_flip", "skip_store_wait", *CLUSTER_KNOBS)
"""The simulator's bug knobs step 8 builds; the others are refused, not ignored."""


def check_cluster_shape(cfg: GemmConfig, step: str) -> None:
    """The config's cluster is the kernel's: two CTAs along M (``cta_group::2``)."""
    if cfg.cluster_m != CTA_GROUP:
        raise ConfigError("cluster_m", f"{cfg.cluster_m}: {step} runs clusters of {CTA_GROUP} CTAs along M (tcgen05 "
                                       f"cta_group::2); set cluster_m = {CTA_GROUP}")
    if cfg.cluster_n != 1:
        raise ConfigError("cluster_n", f"{cfg.cluster_n}: {step}'s cluster is {CTA_GROUP} CTAs along M only; set cluster_n = 1")


def _check_cluster(cfg: GemmConfig) -> int:
    """Step 7's checks with step 8's knobs, then the cluster's shape; the SM count."""
    _check_ws(cfg, "step 8", HONOURED_KNOBS, "kernels/tirx/cluster_sm100.py")
    check_cluster_shape(cfg, "step 8")
    if cfg.BLK_N > 128:
        raise ConfigError("BLK_N", f"{cfg.BLK_N}: the 2-CTA MMA's N is 2*BLK_N and tcgen05 allows at most 256; set BLK_N <= 128")
    for dim, blk in (("M", cfg.BLK_M), ("N", cfg.BLK_N)):
        if getattr(cfg, dim) % (CTA_GROUP * blk):
            raise ConfigError(dim, f"{dim}={getattr(cfg, dim)} is not a multiple of the cluster tile's {CTA_GROUP * blk}")
    sm_count = cfg.sm_count if cfg.sm_count is not None else B200_SM_COUNT
    if sm_count % CTA_GROUP:
        raise ConfigError("sm_count", f"{sm_count}: clusters of {CTA_GROUP} CTAs need an even CTA count")
    return sm_count


def cluster_step8(cfg: GemmConfig):
    SM_COUNT = _check_cluster(cfg)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    MMA_N = CTA_GROUP * BLK_N  # the accumulator's columns in each CTA
    LD_CHUNK = _ld_chunk(BLK_N)
    K_TILES = K // BLK_K
    PIPE_DEPTH = cfg.PIPE_DEPTH
    L2_GROUP = cfg.l2_group_size
    WG_NUMBER = 2
    TX_BYTES = (1 if cfg.expect_tx_local else CTA_GROUP) * cfg.stage_bytes + cfg.expect_tx_delta  # both CTAs' A and B slices
    # bug knobs, as compile-time constants
    FLIP_EMPTY = not cfg.skip_mma_phase_flip
    WRONG_EMPTY = 1 if cfg.wait_parity_flip == "mma" else 0
    WRONG_FULL = 1 if cfg.wait_parity_flip == "tma" else 0
    STORE_WAIT = not cfg.skip_store_wait
    SKIPS, SKIP_RANK = cfg.multicast_skip_rank >= 0, cfg.multicast_skip_rank  # that rank issues no TMA loads
    LD2MMA_ARRIVALS = 128 * (1 if cfg.release_unscaled else CTA_GROUP)
    EXIT_SYNC = not cfg.skip_exit_sync
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
        cbx, cby = T.cta_id_in_cluster([CTA_GROUP, 1])
        wg_id = T.warpgroup_id([WG_NUMBER])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- Allocation ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma2mma = TMABar(pool, PIPE_DEPTH)  # full (CTA 0's is used): both CTAs' stage loaded
        mma2tma = TCGen05Bar(pool, PIPE_DEPTH)  # empty: the pair MMA done reading the stage
        mma2ld = TCGen05Bar(pool, 1)  # accumulator ready for writeback
        ld2mma = MBarrier(pool, 1)  # accumulator read out in both CTAs (CTA 0's is used)
        pool.move_base_to(1024)
        Asmem = pool.alloc((PIPE_DEPTH, BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((PIPE_DEPTH, BLK_N, BLK_K), b_type, layout=B_layout)
        Dsmem = pool.alloc((BLK_M, BLK_N), d_type, layout=D_layout)
        pool.commit()

        # --- Barrier init (thread 0 of each CTA) ---
        tma2mma.init(1)
        mma2tma.init(1)
        mma2ld.init(1)
        ld2mma.init(LD2MMA_ARRIVALS)  # both CTAs' writeback threads (128 * CTA_GROUP)

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

        # --- Tile scheduler (cluster tiles) ---
        tile_scheduler = ClusterPersistentScheduler2D(
            "ts",
            num_m_tiles=M // (CTA_GROUP * BLK_M),
            num_n_tiles=N // (CTA_GROUP * BLK_N),
            l2_group_size=L2_GROUP,
            num_clusters=SM_COUNT // CTA_GROUP,
        )
        tile_scheduler.init(bx // CTA_GROUP)
        m_idx = T.meta_var(tile_scheduler.m_idx)
        n_idx = T.meta_var(tile_scheduler.n_idx)
        m_st = T.meta_var((m_idx * CTA_GROUP + cbx) * BLK_M)
        n_st = T.meta_var((n_idx * CTA_GROUP + cbx) * BLK_N)

        # --- Cross-CTA barrier views (mapa into CTA 0) ---
        tma2mma_cta0 = tma2mma.remote_view(0)
        ld2mma_cta0 = ld2mma.remote_view(0)

        # =============================================
        # Warpgroup 1: TMA producer (warp 3, both CTAs) + MMA (warp 0, CTA 0)
        # =============================================
        if wg_id == 1:
            if warp_id == 3:
                tma_ps = PipelineState(PIPE_DEPTH, phase=PRODUCER_START)

                @T.inline
                def tma_load(k_offset):
                    tma_config = T.meta_var(
                        {"dispatch": "tma_auto", "cta_group": CTA_GROUP, "mbar": tma2mma_cta0.ptr_to([tma_ps.stage])}
                    )
                    Tx.copy_async(Asmem[slot(tma_ps), :, :], A[m_st : m_st + BLK_M, k_offset : k_offset + BLK_K], **tma_config)
                    Tx.copy_async(Bsmem[slot(tma_ps), :, :], B[n_st : n_st + BLK_N, k_offset : k_offset + BLK_K], **tma_config)

                if T.cuda.elect_sync():
                    while tile_scheduler.valid():
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

            elif warp_id == 0:
                mma_ps = PipelineState(PIPE_DEPTH, phase=CONSUMER_START)
                ld_ps = PipelineState(1, phase=PRODUCER_START)

                if cbx == 0:
                    if T.cuda.elect_sync():
                        while tile_scheduler.valid():
                            # TMEM free in both CTAs (256 writeback threads arrived)
                            ld2mma.wait(ld_ps.stage, ld_ps.phase)
                            ld_ps.advance()
                            T.ptx.tcgen05.fence__after_thread_sync()  # added

                            for k in range(K_TILES):
                                tma2mma.wait(mma_ps.stage, mma_ps.phase ^ WRONG_FULL)
                                Tx.gemm_async(
                                    tmem[:, :MMA_N],
                                    Asmem[slot(mma_ps), :, :],
                                    Bsmem[slot(mma_ps), :, :],
                                    accum=(k != 0),
                                    dispatch="tcgen05",
                                    cta_group=CTA_GROUP,
                                )
                                mma2tma.arrive(mma_ps.stage, cta_group=CTA_GROUP, cta_mask=BOTH_CTAS)
                                mma_ps.advance()

                            mma2ld.arrive(0, cta_group=CTA_GROUP, cta_mask=BOTH_CTAS)
                            tile_scheduler.next_tile()

        # =============================================
        # Warpgroup 0: writeback (2*BLK_N columns in two BLK_N-column chunks)
        # =============================================
        elif wg_id == 0:
            wb_ps = PipelineState(1, phase=CONSUMER_START)
            reg = T.alloc_local((BLK_N,), acc_type)
            reg_f16 = T.alloc_local((BLK_N,), d_type)
            reg_wg = reg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))

            while tile_scheduler.valid():
                mma2ld.wait(wb_ps.stage, wb_ps.phase)
                wb_ps.advance()
                T.ptx.tcgen05.fence__after_thread_sync()

                for no in T.unroll(CTA_GROUP):
                    if LD_CHUNK == BLK_N:
                        Tx.wg.copy_async(reg_wg[:, :], tmem[:, no * BLK_N : (no + 1) * BLK_N])
                    else:
                        for c in T.unroll(BLK_N // LD_CHUNK):
                            Tx.wg.copy_async(
                                reg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK],
                                tmem[:, no * BLK_N + c * LD_CHUNK : no * BLK_N + (c + 1) * LD_CHUNK],
                            )
                    T.ptx.tcgen05.wait__ld.sync.aligned()
                    Tx.cast(reg_f16[:], reg[:])
                    Tx.copy(Dsmem[warp_id * 32 + lane_id, 0:BLK_N], reg_f16[:])
                    T.ptx.fence.proxy.async_.shared__cta()
                    T.cuda.warpgroup_sync(WB_BAR)
                    if warp_id == 0:
                        if lane_id == 0:
                            n_st_epi = T.meta_var(n_idx * MMA_N + no * BLK_N)
                            Tx.copy_async(D[m_st : m_st + BLK_M, n_st_epi : n_st_epi + BLK_N], Dsmem[:, :], dispatch="tma_auto")
                            T.ptx.cp.async_.bulk.commit_group()
                            if STORE_WAIT:
                                T.ptx.cp.async_.bulk.wait_group(0)
                    T.cuda.warpgroup_sync(WB_BAR)

                # TMEM read out in this CTA: all 128 threads arrive on CTA 0's ld2mma
                T.ptx.tcgen05.fence__before_thread_sync()  # added
                ld2mma_cta0.arrive(0)
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
