"""The seed article's six Blackwell GEMM steps, ported to the released TIRx API.

This is the kernel code of the seed article ("TIRx 与高性能GEMM (上)",
``shared/seeds/000_16aa9fc6f057beeb.txt``) as it builds on
``apache-tvm==0.27.0.post1`` for ``sm_100a`` (compile-only here).  Each
``hgemm_vN(cfg)`` returns the (uncompiled) ``@T.prim_func`` of step N,
parameterised by a :class:`protosim.config.GemmConfig`; build it with
``kernels.toolchain.compiler.compile_primfunc(func, "sm_100a", name)``.

The code is kept op by op as the article writes it -- the same barriers, the
same waits, the same phase variables and flips, the same ``tid == 0`` /
``elect_sync`` issuers -- so it can be read side by side with the article.

    v1  one output tile, K == BLK_K: thread copy -> tcgen05.mma -> TMEM -> GMEM
    v2  + K-loop: one mma_bar reused every k-tile, ``phase_mma ^= 1``
    v3  + 2-D grid of CTAs, one output tile per CTA
    v4  + TMA loads (tma_bar + arrive.expect_tx) and a TMA store
          (cp.async.bulk commit_group / wait_group 0)
    v5  + PIPE_DEPTH ring of A/B stages: prefetch, ``stage = k % PIPE_DEPTH``,
          ``phase_tma`` flips when ``stage == PIPE_DEPTH - 1``.  (The article's
          "complete kernel" listing for step 5 is a copy of step 4; v5 here is
          built from the step-5 snippets, exactly as step 6 reuses them.)
    v6  + persistent CTAs (``ClusterPersistentScheduler2D``, 1-D grid of
          ``sm_count`` CTAs, ``while tile_scheduler.valid()``)

API changes that mattered (old seed -> released 0.27; see
``shared/docs/DEVICE.md``):

* ``tma_shared_layout`` (``tvm.tirx.cuda.operator...``) ->
  ``mma_shared_layout`` in ``tvm.backend.cuda.tile_primitive.tma_utils``;
  ``ClusterPersistentScheduler2D`` lives in
  ``tvm.backend.cuda.lang.tile_scheduler`` (same signature as the seed uses:
  ``(prefix, num_m_tiles, num_n_tiles, num_clusters, l2_group_size)``).
* PTX ops take their full modifier spelling and typed operands:
  ``mbarrier.init.shared.b64(p, T.uint32(1))``,
  ``mbarrier.arrive.expect_tx.shared.b64(p, T.uint32(n))``,
  ``fence.proxy.async_.shared__cta()``, ``fence.mbarrier_init.release.cluster()``,
  ``tcgen05.alloc/dealloc/relinquish_alloc_permit/commit/wait__ld`` with
  ``cta_group__1`` in the name, ``cp.async_.bulk.commit_group/wait_group``.
* ``T.ptx.elect_sync()`` -> ``T.cuda.elect_sync()``; the blocking
  ``T.ptx.mbarrier.try_wait(p, ph)`` -> ``T.cuda.mbarrier_wait(p, ph)`` (a
  ``mbarrier.try_wait.parity`` spin loop in the generated CUDA).
* ``dispatch="tma"`` -> ``dispatch="tma_auto"``.
* The TMEM buffer's ``allocated_addr`` is a column offset (``0``), no longer
  the address the alloc wrote; ``pool.alloc((1,), "uint32")`` is a scalar slot:
  ``T.address_of(tmem_addr)`` for the alloc, ``tmem_addr[0]`` for the dealloc.
* The stage index is written ``T.meta_var(k % PIPE_DEPTH)`` (inlined, not a
  let-bound variable) so that ``tma_auto`` can prove the stage's SMEM offset
  aligned, also for ``PIPE_DEPTH == 1``.

Added for correctness, not in the seed:

* ``fence.proxy.async.shared::cta`` after the thread-written A/B tiles of
  v1-v3 (generic-proxy writes read by ``tcgen05.mma``, an async-proxy reader);
  the seed only fenced after the barrier init.  (The seed already fences
  Dsmem before the TMA store in v4+.)
* ``tcgen05.fence::after_thread_sync`` after every MMA-completion wait, before
  the ``tcgen05.ld`` of the accumulator (and before an MMA is issued after a
  thread barrier).
* v6: ``tcgen05.fence::before_thread_sync`` / ``after_thread_sync`` around the
  end-of-tile ``cta_sync``, so the epilogue's ``tcgen05.ld`` is ordered before
  the next tile's MMA overwrites the accumulator.

Other deviations from the article's text:

* ``stage`` and ``next_k`` are ``T.meta_var`` expressions (above), not plain
  assignments.
* v6 writes its K-loop twice, under a Python-level ``if`` on
  ``reset_phase_per_tile`` (the seed's literal loop, and the fixed one), and
  shares the epilogue between them as an ``@T.inline`` helper.
* Widths the seed never uses: the swizzle atom is the widest one a row of
  BLK_K (A/B) or BLK_N (Dsmem) fp16 fills (the seed: 128B for 64 and 128); and
  when BLK_N is not a power of two <= 128, the TMEM -> register copy is split
  into several ``Tx.wg.copy_async`` (one ``tcgen05.ld.32x32b`` moves at most
  128 columns, and the released tile op emits exactly one per call).  With the
  seed's BLK_N = 128 it is the seed's single copy.
* Refused with :class:`~protosim.config.ConfigError` (field named): v1 with
  K != BLK_K, v1/v2 with more than one output tile (the article says step 1 is
  1x1, and step 2 copies ``A[:, k-slice]`` whole), shared memory over 227 KB,
  and any bug or delay knob other than the two below (not modelled here; a
  silently correct kernel would misrepresent the config).

Bug knobs honoured (same names and meaning as the simulator's builders):

* ``skip_mma_phase_flip`` (v2-v6): ``phase_mma ^= 1`` is left out.
* ``reset_phase_per_tile`` (v6): ``True`` is the seed's literal code
  (``phase_tma = phase_mma = 0`` and the stage index restart every output
  tile; correct only when ``K_TILES % (2 * PIPE_DEPTH) == 0``).  ``False`` (the
  default) is the fix: the phases live outside the tile loop and a running
  k-iteration counter gives the ring stage, so ring position and parities
  carry across tiles.
"""

from __future__ import annotations

from protosim.config import DELAY_KNOBS, ConfigError, GemmConfig

if __name__ == "__main__":  # CLI: the stub libcuda must be on the loader path before tvm loads
    from kernels.toolchain.compiler import ensure_stub_on_path

    ensure_stub_on_path()

import tvm
from tvm.backend.cuda.lang.tile_scheduler import ClusterPersistentScheduler2D
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx.layout import S, TCol, TileLayout, TLane, tid_in_wg

B200_SM_COUNT = 148
"""Persistent CTAs when ``cfg.sm_count`` is ``None`` (one per SM of a B200)."""

F16_SIZE = 2
TMEM_COLS = 512

a_type = tvm.DataType("float16")
b_type = tvm.DataType("float16")
d_type = tvm.DataType("float16")
acc_type = tvm.DataType("float32")


def _swizzle(cols: int, field: str) -> SwizzleMode:
    """The widest swizzle atom a row of ``cols`` fp16 elements fills (the seed: 128B)."""
    row_bytes = cols * F16_SIZE
    for atom, mode in ((128, SwizzleMode.SWIZZLE_128B_ATOM), (64, SwizzleMode.SWIZZLE_64B_ATOM), (32, SwizzleMode.SWIZZLE_32B_ATOM)):
        if row_bytes % atom == 0:
            return mode
    raise ConfigError(field, f"{cols} fp16 elements = {row_bytes} B rows fit no swizzle atom (32/64/128 B)")


HONOURED_KNOBS = ("skip_mma_phase_flip", "reset_phase_per_tile")
"""The simulator's bug knobs this port builds; the others are refused, not ignored."""

SMEM_LIMIT = 232448
"""Max dynamic shared memory per CTA on sm_100 (227 KB)."""


def _check(cfg: GemmConfig, step: str, *, single_k: bool = False, single_tile: bool = False, stages: int = 1, d_tile: bool = False) -> None:
    cfg.validate()
    for knob in (*cfg.bug_knobs, *(k for k in DELAY_KNOBS if getattr(cfg, k) != getattr(GemmConfig(), k))):
        if knob not in HONOURED_KNOBS:
            raise ConfigError(
                knob,
                f"the seed port builds only the knobs {', '.join(HONOURED_KNOBS)}; "
                f"{knob}={getattr(cfg, knob)!r} is not modelled in kernels/tirx/seed_sm100.py",
            )
    # pool: tmem_addr + barriers below 1024, then the A/B stages (+ Dsmem)
    smem = 1024 + stages * (cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * F16_SIZE + (cfg.BLK_M * cfg.BLK_N * F16_SIZE if d_tile else 0)
    if smem > SMEM_LIMIT:
        raise ConfigError(
            "PIPE_DEPTH" if stages > 1 else "BLK_K",
            f"{step} needs {smem} B of shared memory, over the {SMEM_LIMIT} B a CTA may have on sm_100",
        )
    if single_k and cfg.K != cfg.BLK_K:
        raise ConfigError("K", f"{step} has no K-loop: K={cfg.K} must equal BLK_K={cfg.BLK_K}")
    if single_tile:
        if cfg.M != cfg.BLK_M:
            raise ConfigError("M", f"{step} computes one output tile: M={cfg.M} must equal BLK_M={cfg.BLK_M}")
        if cfg.N != cfg.BLK_N:
            raise ConfigError("N", f"{step} computes one output tile: N={cfg.N} must equal BLK_N={cfg.BLK_N}")


def _ab_layouts(cfg: GemmConfig, stages: int | None = None):
    mode = _swizzle(cfg.BLK_K, "BLK_K")
    pre = () if stages is None else (stages,)
    A_layout = mma_shared_layout(a_type, mode, (*pre, cfg.BLK_M, cfg.BLK_K))
    B_layout = mma_shared_layout(b_type, mode, (*pre, cfg.BLK_N, cfg.BLK_K))
    return A_layout, B_layout


def _ld_chunk(blk_n: int) -> int:
    """Columns per ``Tx.wg.copy_async`` TMEM -> registers: ``tcgen05.ld.32x32b``
    moves a power of two, at most 128 columns (x1..x128) per instruction, and
    the released tile op emits exactly one; the seed's BLK_N = 128 is one load."""
    chunk = 128
    while blk_n % chunk:
        chunk //= 2
    return chunk


def _d_layout(cfg: GemmConfig):
    return mma_shared_layout(d_type, _swizzle(cfg.BLK_N, "BLK_N"), (cfg.BLK_M, cfg.BLK_N))


# --------------------------------------------------------------------------- #
# Step 1: one output tile, one K tile; thread copy, one MMA, TMEM -> GMEM.
# --------------------------------------------------------------------------- #
def hgemm_v1(cfg: GemmConfig):
    _check(cfg, "v1", single_k=True, single_tile=True)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    # MMA_M/MMA_N/MMA_K of the article only document the hardware MMA tile;
    # gemm_async derives the MMA shape from the operand/accumulator tiles.
    A_layout, B_layout = _ab_layouts(cfg)

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        # Single-tile kernel: M = BLK_M and N = BLK_N, so the grid is 1x1.
        bx, by = T.cta_id([M // BLK_M, N // BLK_N])
        wg_id = T.warpgroup_id([1])  # single warpgroup (unused below)
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- SMEM allocation ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        mma_bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        Asmem = pool.alloc((BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((BLK_N, BLK_K), b_type, layout=B_layout)
        pool.commit()

        # --- Barrier + TMEM init (warp 0 only) ---
        if warp_id == 0:
            if lane_id == 0:
                T.ptx.mbarrier.init.shared.b64(mma_bar.ptr_to([0]), T.uint32(1))
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))

        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            "float32",
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        m_st = T.meta_var(bx * BLK_M)
        n_st = T.meta_var(by * BLK_N)
        phase_mma: T.int32 = 0

        # --- Load: all threads copy global -> shared (synchronous) ---
        Tx.cta.copy(Asmem[:, :], A[m_st : m_st + BLK_M, :])
        Tx.cta.copy(Bsmem[:, :], B[n_st : n_st + BLK_N, :])
        T.ptx.fence.proxy.async_.shared__cta()  # added: thread-written SMEM read by tcgen05.mma
        T.cuda.cta_sync()

        # --- Compute: a single elected thread issues the MMA ---
        if warp_id == 0:
            if T.cuda.elect_sync():
                Tx.gemm_async(tmem[:, :BLK_N], Asmem[:, :], Bsmem[:, :], accum=False, dispatch="tcgen05", cta_group=1)
                T.ptx.tcgen05.commit.cta_group__1.mbarrier__arrive__one.shared__cluster.b64(mma_bar.ptr_to([0]))

        T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
        T.ptx.tcgen05.fence__after_thread_sync()  # added

        # --- Writeback: TMEM -> RF -> GMEM ---
        Dreg = T.alloc_local((BLK_N,), acc_type)
        Dreg_f16 = T.alloc_local((BLK_N,), d_type)
        Dreg_wg = Dreg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))
        if LD_CHUNK == BLK_N:
            Tx.wg.copy_async(Dreg_wg[:, :], tmem[:, :BLK_N])
        else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
            for c in T.unroll(BLK_N // LD_CHUNK):
                Tx.wg.copy_async(Dreg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        Tx.cast(Dreg_f16[:], Dreg[:])
        m_thr = T.meta_var(m_st + warp_id * 32 + lane_id)
        Tx.copy(D[m_thr, n_st : n_st + BLK_N], Dreg_f16[:])

        # --- Deallocate TMEM ---
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel


# --------------------------------------------------------------------------- #
# Step 2: K-loop on one output tile; one mma_bar reused, phase_mma flips.
# --------------------------------------------------------------------------- #
def hgemm_v2(cfg: GemmConfig):
    _check(cfg, "v2", single_tile=True)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    K_TILES = K // BLK_K
    FLIP_MMA = not cfg.skip_mma_phase_flip
    A_layout, B_layout = _ab_layouts(cfg)

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        bx, by = T.cta_id([M // BLK_M, N // BLK_N])  # still one output tile
        wg_id = T.warpgroup_id([1])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        mma_bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        Asmem = pool.alloc((BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((BLK_N, BLK_K), b_type, layout=B_layout)
        pool.commit()

        if warp_id == 0:
            if lane_id == 0:
                T.ptx.mbarrier.init.shared.b64(mma_bar.ptr_to([0]), T.uint32(1))
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))

        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            "float32",
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        phase_mma: T.int32 = 0
        m_st = T.meta_var(bx * BLK_M)
        n_st = T.meta_var(by * BLK_N)

        # === K-loop: iterate over K in chunks of BLK_K ===
        for i in T.serial(K_TILES):
            # Load the i-th K chunk
            Tx.cta.copy(Asmem[:, :], A[:, i * BLK_K : (i + 1) * BLK_K])
            Tx.cta.copy(Bsmem[:, :], B[:, i * BLK_K : (i + 1) * BLK_K])
            T.ptx.fence.proxy.async_.shared__cta()  # added
            T.cuda.cta_sync()

            # MMA: accum=False for the first tile, True for the rest
            if warp_id == 0:
                if T.cuda.elect_sync():
                    Tx.gemm_async(tmem[:, :BLK_N], Asmem[:, :], Bsmem[:, :], accum=(i != 0), dispatch="tcgen05", cta_group=1)
                    T.ptx.tcgen05.commit.cta_group__1.mbarrier__arrive__one.shared__cluster.b64(mma_bar.ptr_to([0]))

            # Wait for the MMA, then flip the phase
            T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
            T.ptx.tcgen05.fence__after_thread_sync()  # added
            if FLIP_MMA:
                phase_mma ^= 1

        # === Writeback (same as Step 1) ===
        Dreg = T.alloc_local((BLK_N,), acc_type)
        Dreg_f16 = T.alloc_local((BLK_N,), d_type)
        Dreg_wg = Dreg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))
        if LD_CHUNK == BLK_N:
            Tx.wg.copy_async(Dreg_wg[:, :], tmem[:, :BLK_N])
        else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
            for c in T.unroll(BLK_N // LD_CHUNK):
                Tx.wg.copy_async(Dreg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        Tx.cast(Dreg_f16[:], Dreg[:])
        m_thr = T.meta_var(m_st + warp_id * 32 + lane_id)
        Tx.copy(D[m_thr, n_st : n_st + BLK_N], Dreg_f16[:])

        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel


# --------------------------------------------------------------------------- #
# Step 3: 2-D grid, one CTA per output tile.
# --------------------------------------------------------------------------- #
def hgemm_v3(cfg: GemmConfig):
    _check(cfg, "v3")
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    K_TILES = K // BLK_K
    FLIP_MMA = not cfg.skip_mma_phase_flip
    A_layout, B_layout = _ab_layouts(cfg)

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        # 2D grid: one CTA per BLK_M x BLK_N output tile
        bx, by = T.cta_id([M // BLK_M, N // BLK_N])
        wg_id = T.warpgroup_id([1])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        mma_bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        Asmem = pool.alloc((BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((BLK_N, BLK_K), b_type, layout=B_layout)
        pool.commit()

        if warp_id == 0:
            if lane_id == 0:
                T.ptx.mbarrier.init.shared.b64(mma_bar.ptr_to([0]), T.uint32(1))
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))

        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            "float32",
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        phase_mma: T.int32 = 0

        # Per-CTA tile offsets
        m_st = T.meta_var(bx * BLK_M)
        n_st = T.meta_var(by * BLK_N)

        # K-loop with offset A and B slices
        for i in T.serial(K_TILES):
            Tx.cta.copy(Asmem[:, :], A[m_st : m_st + BLK_M, i * BLK_K : (i + 1) * BLK_K])
            Tx.cta.copy(Bsmem[:, :], B[n_st : n_st + BLK_N, i * BLK_K : (i + 1) * BLK_K])
            T.ptx.fence.proxy.async_.shared__cta()  # added
            T.cuda.cta_sync()

            if warp_id == 0:
                if T.cuda.elect_sync():
                    Tx.gemm_async(tmem[:, :BLK_N], Asmem[:, :], Bsmem[:, :], accum=(i != 0), dispatch="tcgen05", cta_group=1)
                    T.ptx.tcgen05.commit.cta_group__1.mbarrier__arrive__one.shared__cluster.b64(mma_bar.ptr_to([0]))

            T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
            T.ptx.tcgen05.fence__after_thread_sync()  # added
            if FLIP_MMA:
                phase_mma ^= 1

        # Writeback to this CTA's output tile
        Dreg = T.alloc_local((BLK_N,), acc_type)
        Dreg_f16 = T.alloc_local((BLK_N,), d_type)
        Dreg_wg = Dreg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))
        if LD_CHUNK == BLK_N:
            Tx.wg.copy_async(Dreg_wg[:, :], tmem[:, :BLK_N])
        else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
            for c in T.unroll(BLK_N // LD_CHUNK):
                Tx.wg.copy_async(Dreg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        Tx.cast(Dreg_f16[:], Dreg[:])
        m_thr = T.meta_var(m_st + warp_id * 32 + lane_id)
        Tx.copy(D[m_thr, n_st : n_st + BLK_N], Dreg_f16[:])

        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel


# --------------------------------------------------------------------------- #
# Step 4: TMA loads (tma_bar + expect_tx) and a TMA store (bulk groups).
# --------------------------------------------------------------------------- #
def hgemm_v4(cfg: GemmConfig):
    _check(cfg, "v4", d_tile=True)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    K_TILES = K // BLK_K
    TX_BYTES = (BLK_M * BLK_K + BLK_N * BLK_K) * F16_SIZE
    FLIP_MMA = not cfg.skip_mma_phase_flip
    A_layout, B_layout = _ab_layouts(cfg)
    D_layout = _d_layout(cfg)

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        bx, by = T.cta_id([M // BLK_M, N // BLK_N])
        wg_id = T.warpgroup_id([1])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- SMEM allocation (now includes Dsmem for the TMA store) ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma_bar = pool.alloc((1,), "uint64", align=8)
        mma_bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        Asmem = pool.alloc((BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((BLK_N, BLK_K), b_type, layout=B_layout)
        Dsmem = pool.alloc((BLK_M, BLK_N), d_type, layout=D_layout)
        pool.commit()

        # --- Barrier + TMEM init ---
        if warp_id == 0 and lane_id == 0:
            T.ptx.mbarrier.init.shared.b64(mma_bar.ptr_to([0]), T.uint32(1))
            T.ptx.mbarrier.init.shared.b64(tma_bar.ptr_to([0]), T.uint32(1))
        if warp_id == 0:
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))

        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            "float32",
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        m_st = T.meta_var(bx * BLK_M)
        n_st = T.meta_var(by * BLK_N)
        phase_tma: T.int32 = 0
        phase_mma: T.int32 = 0

        # --- Inline helpers ---
        @T.inline
        def tma_load(k_st):
            tma_config = T.meta_var({"dispatch": "tma_auto", "cta_group": 1, "mbar": tma_bar.ptr_to([0])})
            Tx.copy_async(Asmem[:, :], A[m_st : m_st + BLK_M, k_st : k_st + BLK_K], **tma_config)
            Tx.copy_async(Bsmem[:, :], B[n_st : n_st + BLK_N, k_st : k_st + BLK_K], **tma_config)
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(tma_bar.ptr_to([0]), T.uint32(TX_BYTES))

        @T.inline
        def mma(accum):
            Tx.gemm_async(tmem[:, :BLK_N], Asmem[:, :], Bsmem[:, :], accum=accum, dispatch="tcgen05", cta_group=1)
            T.ptx.tcgen05.commit.cta_group__1.mbarrier__arrive__one.shared__cluster.b64(mma_bar.ptr_to([0]))

        # --- K-loop with TMA async ---
        tid = T.meta_var(warp_id * 32 + lane_id)
        for k in range(K_TILES):
            k_st = T.meta_var(k * BLK_K)

            # Single thread issues the TMA load
            if tid == 0:
                tma_load(k_st)

            # Wait for TMA; the mbarrier completion makes the tile visible to the MMA
            T.cuda.mbarrier_wait(tma_bar.ptr_to([0]), phase_tma)

            # Single thread issues the MMA
            if tid == 0:
                mma(accum=k != 0)

            # Wait for the MMA
            T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
            T.ptx.tcgen05.fence__after_thread_sync()  # added
            phase_tma ^= 1
            if FLIP_MMA:
                phase_mma ^= 1

        # --- TMA store writeback ---
        Dreg = T.alloc_local((BLK_N,), acc_type)
        Dreg_f16 = T.alloc_local((BLK_N,), d_type)
        Dreg_wg = Dreg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))

        # TMEM -> registers (async; wait::ld, then cta_sync)
        if LD_CHUNK == BLK_N:
            Tx.wg.copy_async(Dreg_wg[:, :], tmem[:, :BLK_N])
        else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
            for c in T.unroll(BLK_N // LD_CHUNK):
                Tx.wg.copy_async(Dreg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        T.cuda.cta_sync()
        # fp32 -> fp16
        Tx.cast(Dreg_f16[:], Dreg[:])
        # registers -> Dsmem, fence to the async proxy, sync
        Tx.copy(Dsmem[warp_id * 32 + lane_id, 0:BLK_N], Dreg_f16[:])
        T.ptx.fence.proxy.async_.shared__cta()
        T.cuda.warpgroup_sync(10)
        # TMA store Dsmem -> GMEM; drain the store group before Dsmem is reused
        if tid == 0:
            Tx.copy_async(D[m_st : m_st + BLK_M, n_st : n_st + BLK_N], Dsmem[:, :], dispatch="tma_auto")
            T.ptx.cp.async_.bulk.commit_group()
            T.ptx.cp.async_.bulk.wait_group(0)
        T.cuda.warpgroup_sync(10)

        # --- Deallocate TMEM ---
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel


# --------------------------------------------------------------------------- #
# Step 5: PIPE_DEPTH-stage ring of A/B tiles, prefetch, per-stage tma_bar.
# --------------------------------------------------------------------------- #
def hgemm_v5(cfg: GemmConfig):
    _check(cfg, "v5", stages=cfg.PIPE_DEPTH, d_tile=True)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    PIPE_DEPTH = cfg.PIPE_DEPTH
    K_TILES = K // BLK_K
    PREFETCH = min(PIPE_DEPTH, K_TILES)
    TX_BYTES = (BLK_M * BLK_K + BLK_N * BLK_K) * F16_SIZE
    FLIP_MMA = not cfg.skip_mma_phase_flip
    A_layout, B_layout = _ab_layouts(cfg, PIPE_DEPTH)
    D_layout = _d_layout(cfg)

    @T.prim_func
    def kernel(
        A: T.Buffer((M, K), a_type),
        B: T.Buffer((N, K), b_type),
        D: T.Buffer((M, N), d_type),
    ):
        T.device_entry()
        bx, by = T.cta_id([M // BLK_M, N // BLK_N])
        wg_id = T.warpgroup_id([1])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- SMEM allocation: one tma_bar and one A/B tile per stage ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma_bar = pool.alloc((PIPE_DEPTH,), "uint64", align=8)
        mma_bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        Asmem = pool.alloc((PIPE_DEPTH, BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((PIPE_DEPTH, BLK_N, BLK_K), b_type, layout=B_layout)
        Dsmem = pool.alloc((BLK_M, BLK_N), d_type, layout=D_layout)
        pool.commit()

        # --- Barrier + TMEM init ---
        if warp_id == 0 and lane_id == 0:
            T.ptx.mbarrier.init.shared.b64(mma_bar.ptr_to([0]), T.uint32(1))
            for s in range(PIPE_DEPTH):
                T.ptx.mbarrier.init.shared.b64(tma_bar.ptr_to([s]), T.uint32(1))
        if warp_id == 0:
            T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(TMEM_COLS))

        T.ptx.fence.proxy.async_.shared__cta()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()

        tmem = T.decl_buffer(
            (128, TMEM_COLS),
            "float32",
            scope="tmem",
            allocated_addr=0,
            layout=TileLayout(S[(128, TMEM_COLS) : (1 @ TLane, 1 @ TCol)]),
        )

        m_st = T.meta_var(bx * BLK_M)
        n_st = T.meta_var(by * BLK_N)
        phase_tma: T.int32 = 0
        phase_mma: T.int32 = 0

        @T.inline
        def tma_load(stage, k_st):
            tma_config = T.meta_var({"dispatch": "tma_auto", "cta_group": 1, "mbar": tma_bar.ptr_to([stage])})
            Tx.copy_async(Asmem[stage, :, :], A[m_st : m_st + BLK_M, k_st : k_st + BLK_K], **tma_config)
            Tx.copy_async(Bsmem[stage, :, :], B[n_st : n_st + BLK_N, k_st : k_st + BLK_K], **tma_config)
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(tma_bar.ptr_to([stage]), T.uint32(TX_BYTES))

        @T.inline
        def mma(stage, accum):
            Tx.gemm_async(tmem[:, :BLK_N], Asmem[stage, :, :], Bsmem[stage, :, :], accum=accum, dispatch="tcgen05", cta_group=1)
            T.ptx.tcgen05.commit.cta_group__1.mbarrier__arrive__one.shared__cluster.b64(mma_bar.ptr_to([0]))

        tid = T.meta_var(warp_id * 32 + lane_id)

        # Prefetch the first PIPE_DEPTH k-tiles
        if tid == 0:
            for s in range(PREFETCH):
                tma_load(s, s * BLK_K)

        for k in range(K_TILES):
            stage = T.meta_var(k % PIPE_DEPTH)

            T.cuda.mbarrier_wait(tma_bar.ptr_to([stage]), phase_tma)

            if tid == 0:
                mma(stage, accum=(k != 0))

            T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
            T.ptx.tcgen05.fence__after_thread_sync()  # added
            if FLIP_MMA:
                phase_mma ^= 1

            # The MMA has finished reading `stage`: refill it with k + PIPE_DEPTH
            next_k = T.meta_var(k + PIPE_DEPTH)
            if next_k < K_TILES:
                if tid == 0:
                    tma_load(stage, next_k * BLK_K)

            if stage == PIPE_DEPTH - 1:
                phase_tma ^= 1

        # --- TMA store writeback (same as Step 4) ---
        Dreg = T.alloc_local((BLK_N,), acc_type)
        Dreg_f16 = T.alloc_local((BLK_N,), d_type)
        Dreg_wg = Dreg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))
        if LD_CHUNK == BLK_N:
            Tx.wg.copy_async(Dreg_wg[:, :], tmem[:, :BLK_N])
        else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
            for c in T.unroll(BLK_N // LD_CHUNK):
                Tx.wg.copy_async(Dreg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        T.cuda.cta_sync()
        Tx.cast(Dreg_f16[:], Dreg[:])
        Tx.copy(Dsmem[warp_id * 32 + lane_id, 0:BLK_N], Dreg_f16[:])
        T.ptx.fence.proxy.async_.shared__cta()
        T.cuda.warpgroup_sync(10)
        if tid == 0:
            Tx.copy_async(D[m_st : m_st + BLK_M, n_st : n_st + BLK_N], Dsmem[:, :], dispatch="tma_auto")
            T.ptx.cp.async_.bulk.commit_group()
            T.ptx.cp.async_.bulk.wait_group(0)
        T.cuda.warpgroup_sync(10)

        # --- Deallocate TMEM ---
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel


# --------------------------------------------------------------------------- #
# Step 6: persistent CTAs pulling output tiles from ClusterPersistentScheduler2D.
# --------------------------------------------------------------------------- #
def hgemm_v6(cfg: GemmConfig):
    _check(cfg, "v6", stages=cfg.PIPE_DEPTH, d_tile=True)
    M, N, K = cfg.M, cfg.N, cfg.K
    BLK_M, BLK_N, BLK_K = cfg.BLK_M, cfg.BLK_N, cfg.BLK_K
    LD_CHUNK = _ld_chunk(BLK_N)
    PIPE_DEPTH = cfg.PIPE_DEPTH
    SM_COUNT = cfg.sm_count if cfg.sm_count is not None else B200_SM_COUNT
    L2_GROUP = cfg.l2_group_size
    K_TILES = K // BLK_K
    PREFETCH = min(PIPE_DEPTH, K_TILES)
    TX_BYTES = (BLK_M * BLK_K + BLK_N * BLK_K) * F16_SIZE
    FLIP_MMA = not cfg.skip_mma_phase_flip
    # The seed asserts K_TILES % (2 * PIPE_DEPTH) == 0 because it resets the
    # phases every tile.  That reset is the `reset_phase_per_tile` bug knob
    # here, so the kernel is built either way; the simulator judges it.
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
        # 1D grid: SM_COUNT persistent CTAs (not a 2D grid anymore)
        bx = T.cta_id([SM_COUNT])
        wg_id = T.warpgroup_id([1])
        warp_id = T.warp_id_in_wg([4])
        lane_id = T.lane_id([32])

        # --- SMEM allocation (same as Step 5) ---
        pool = T.SMEMPool()
        tmem_addr = pool.alloc((1,), "uint32")
        tma_bar = pool.alloc((PIPE_DEPTH,), "uint64", align=8)
        mma_bar = pool.alloc((1,), "uint64", align=8)
        pool.move_base_to(1024)
        Asmem = pool.alloc((PIPE_DEPTH, BLK_M, BLK_K), a_type, layout=A_layout)
        Bsmem = pool.alloc((PIPE_DEPTH, BLK_N, BLK_K), b_type, layout=B_layout)
        Dsmem = pool.alloc((BLK_M, BLK_N), d_type, layout=D_layout)
        pool.commit()

        # --- Barrier + TMEM init (same as Step 5) ---
        if warp_id == 0 and lane_id == 0:
            T.ptx.mbarrier.init.shared.b64(mma_bar.ptr_to([0]), T.uint32(1))
            for s in range(PIPE_DEPTH):
                T.ptx.mbarrier.init.shared.b64(tma_bar.ptr_to([s]), T.uint32(1))
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

        # Tile scheduler: assigns tiles to CTAs in L2-friendly order
        tile_scheduler = ClusterPersistentScheduler2D(
            "ts",
            num_m_tiles=M // BLK_M,
            num_n_tiles=N // BLK_N,
            l2_group_size=L2_GROUP,
            num_clusters=SM_COUNT,
        )
        tile_scheduler.init(bx)

        tid = T.meta_var(warp_id * 32 + lane_id)

        @T.inline
        def tma_load(stage, k_offset, m_st, n_st):
            tma_config = T.meta_var({"dispatch": "tma_auto", "cta_group": 1, "mbar": tma_bar.ptr_to([stage])})
            Tx.copy_async(Asmem[stage, :, :], A[m_st : m_st + BLK_M, k_offset : k_offset + BLK_K], **tma_config)
            Tx.copy_async(Bsmem[stage, :, :], B[n_st : n_st + BLK_N, k_offset : k_offset + BLK_K], **tma_config)
            T.ptx.mbarrier.arrive.expect_tx.shared.b64(tma_bar.ptr_to([stage]), T.uint32(TX_BYTES))

        @T.inline
        def mma(stage, accum):
            Tx.gemm_async(tmem[:, :BLK_N], Asmem[stage, :, :], Bsmem[stage, :, :], accum=accum, dispatch="tcgen05", cta_group=1)
            T.ptx.tcgen05.commit.cta_group__1.mbarrier__arrive__one.shared__cluster.b64(mma_bar.ptr_to([0]))

        @T.inline
        def epilogue(m_st, n_st):
            # === TMA store writeback: TMEM -> RF -> Dsmem -> TMA -> GMEM ===
            Dreg = T.alloc_local((BLK_N,), acc_type)
            Dreg_f16 = T.alloc_local((BLK_N,), d_type)
            Dreg_wg = Dreg.view(128, BLK_N, layout=TileLayout(S[(128, BLK_N) : (1 @ tid_in_wg, 1)]))
            if LD_CHUNK == BLK_N:
                Tx.wg.copy_async(Dreg_wg[:, :], tmem[:, :BLK_N])
            else:  # BLK_N wider than one tcgen05.ld (x1..x128 columns): several loads
                for c in T.unroll(BLK_N // LD_CHUNK):
                    Tx.wg.copy_async(Dreg_wg[:, c * LD_CHUNK : (c + 1) * LD_CHUNK], tmem[:, c * LD_CHUNK : (c + 1) * LD_CHUNK])
            T.ptx.tcgen05.wait__ld.sync.aligned()
            T.cuda.cta_sync()
            Tx.cast(Dreg_f16[:], Dreg[:])
            Tx.copy(Dsmem[warp_id * 32 + lane_id, 0:BLK_N], Dreg_f16[:])
            T.ptx.fence.proxy.async_.shared__cta()
            T.cuda.warpgroup_sync(10)
            if tid == 0:
                Tx.copy_async(D[m_st : m_st + BLK_M, n_st : n_st + BLK_N], Dsmem[:, :], dispatch="tma_auto")
                T.ptx.cp.async_.bulk.commit_group()
                T.ptx.cp.async_.bulk.wait_group(0)
            T.cuda.warpgroup_sync(10)
            # added: order this tile's tcgen05.ld before the next tile's MMA
            # overwrites the accumulator (fence pair around the thread barrier)
            T.ptx.tcgen05.fence__before_thread_sync()
            T.cuda.cta_sync()
            T.ptx.tcgen05.fence__after_thread_sync()

        if RESET:
            # ---- the seed's literal code: phases and stage restart per tile ----
            while tile_scheduler.valid():
                m_st = T.meta_var(tile_scheduler.m_idx * BLK_M)
                n_st = T.meta_var(tile_scheduler.n_idx * BLK_N)

                # === Inner loop: same pipeline as Step 5 ===
                phase_tma: T.int32 = 0
                phase_mma: T.int32 = 0

                # Prefetch the first PIPE_DEPTH stages
                if tid == 0:
                    for s in range(PREFETCH):
                        tma_load(s, s * BLK_K, m_st, n_st)

                # Main K-loop
                for k in range(K_TILES):
                    stage = T.meta_var(k % PIPE_DEPTH)
                    T.cuda.mbarrier_wait(tma_bar.ptr_to([stage]), phase_tma)
                    if tid == 0:
                        mma(stage, accum=(k != 0))
                    T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
                    T.ptx.tcgen05.fence__after_thread_sync()  # added
                    if FLIP_MMA:
                        phase_mma ^= 1
                    next_k = T.meta_var(k + PIPE_DEPTH)
                    if next_k < K_TILES:
                        if tid == 0:
                            tma_load(stage, next_k * BLK_K, m_st, n_st)
                    if stage == PIPE_DEPTH - 1:
                        phase_tma ^= 1

                epilogue(m_st, n_st)
                tile_scheduler.next_tile()  # move to the next tile
        else:
            # ---- the fix: ring position and phases carry across tiles ----
            phase_tma: T.int32 = 0
            phase_mma: T.int32 = 0
            k_iter: T.int32 = 0  # running k-iteration count over all tiles of this CTA
            while tile_scheduler.valid():
                m_st = T.meta_var(tile_scheduler.m_idx * BLK_M)
                n_st = T.meta_var(tile_scheduler.n_idx * BLK_N)

                # Prefetch the first PIPE_DEPTH k-tiles into the ring where it stands
                if tid == 0:
                    for s in range(PREFETCH):
                        tma_load((k_iter + s) % PIPE_DEPTH, s * BLK_K, m_st, n_st)

                for k in range(K_TILES):
                    stage = T.meta_var(k_iter % PIPE_DEPTH)
                    T.cuda.mbarrier_wait(tma_bar.ptr_to([stage]), phase_tma)
                    if tid == 0:
                        mma(stage, accum=(k != 0))
                    T.cuda.mbarrier_wait(mma_bar.ptr_to([0]), phase_mma)
                    T.ptx.tcgen05.fence__after_thread_sync()  # added
                    if FLIP_MMA:
                        phase_mma ^= 1
                    next_k = T.meta_var(k + PIPE_DEPTH)
                    if next_k < K_TILES:
                        if tid == 0:
                            tma_load(stage, next_k * BLK_K, m_st, n_st)
                    if stage == PIPE_DEPTH - 1:
                        phase_tma ^= 1
                    k_iter += 1

                epilogue(m_st, n_st)
                tile_scheduler.next_tile()  # move to the next tile

        # Deallocate TMEM
        T.cuda.cta_sync()
        if warp_id == 0:
            T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
            T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(TMEM_COLS))

    return kernel


SEED_STEPS = {
    "v1": hgemm_v1,
    "v2": hgemm_v2,
    "v3": hgemm_v3,
    "v4": hgemm_v4,
    "v5": hgemm_v5,
    "v6": hgemm_v6,
}
"""Step name -> builder ``f(cfg) -> PrimFunc`` (uncompiled)."""


def _main(argv: list[str] | None = None) -> int:
    """``python -m kernels.tirx.seed_sm100 v4 [--config '{"M": 256}'] [--out file.cu]``: build one step for sm_100a, print its CUDA."""
    import argparse
    import json
    import sys
    import time

    from kernels.toolchain.compiler import compile_primfunc, cuda_source

    p = argparse.ArgumentParser(description=_main.__doc__)
    p.add_argument("step", choices=sorted(SEED_STEPS))
    p.add_argument("--config", default="{}", help="GemmConfig fields as JSON")
    p.add_argument("--out", help="write the CUDA source here instead of stdout")
    args = p.parse_args(argv)
    try:
        func = SEED_STEPS[args.step](GemmConfig.from_dict(json.loads(args.config)))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    mod = compile_primfunc(func, "sm_100a", f"seed_{args.step}")
    dt = time.perf_counter() - t0
    src = cuda_source(mod)
    if args.out:
        with open(args.out, "w") as f:
            f.write(src)
    else:
        print(src)
    print(f"compiled seed {args.step} for sm_100a in {dt:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
