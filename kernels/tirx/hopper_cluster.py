"""``ws_cluster``: the warp-specialized persistent Hopper GEMM (``ws``) on thread-block
clusters of ``cluster_m x cluster_n`` CTAs, with TMA multicast (sm_90a, runs on the H200).

The code is the ``ws`` step's in :mod:`kernels.tirx.hopper` (same macros: bounded waits,
wgmma, epilogue, delays, watchdog), with four places marked ``CLUSTER`` there: the loads
(multicast slices), the release (remote arrives), the barrier counts and the cluster
barriers.  :func:`build` is ``hopper.build`` for a ``ws_cluster`` spec; a 1x1 cluster
builds the ``ws`` kernel itself (same CUDA, op for op).  The numbers below (slices, masks,
peers, counts, grid) are :class:`kernels.spec.ClusterGeometry` and
:func:`kernels.spec.grid_ctas`, which need no tvm.

Notation.  ``CM = cluster_m``, ``CN = cluster_n``, ``CS = CM * CN``; ``BM, BN, BK`` the
block tile (BK = 64 fp16 = one 128-byte swizzle row); ``KT = K / BK``; ``PIPE =
PIPE_DEPTH``; ``stage_bytes = (BM + BN) * BK * 2``.

Launch
------
1-D grid of ``CTAS = min(sm_count or 132) // CS, cluster_tiles) * CS`` CTAs, clusters of
``(CS, 1, 1)`` (TIRx ``T.cta_id_in_cluster([CS])``, which tvm's runtime turns into the
launch's cluster dimension), 160 threads: warps 0-3 the consumer (wgmma) warpgroup, warp 4
the TMA producer.  Per CTA: ``rank r = %cluster_ctarank = blockIdx.x % CS``, ``cluster c =
blockIdx.x / CS``, ``rm = r % CM`` (position along M), ``rn = r / CM`` (along N).  The CTAs
with the same ``rn`` (a rank column, CM of them) compute vertically adjacent output tiles
and share the B tile; the CTAs with the same ``rm`` (a rank row, CN of them) share the A
tile.

Shared memory (identical offsets in every CTA): ``tma_bar[PIPE]`` (full), ``mma_bar[1]``
(initialised, unused by ws), ``empty_bar[PIPE]``, then 1024-aligned ``Asmem[PIPE][BM][BK]``,
``Bsmem[PIPE][BN][BK]`` (128B-swizzled, K-major), ``Dsmem[BM][BN]``.

Tiles.  The output is cut into cluster tiles of ``CM x CN`` block tiles (``M/BM/CM`` by
``N/BN/CN`` of them).  Cluster ``c`` walks cluster tiles ``t = c, c + CTAS/CS, ...`` in the
group-major order of ``ws`` (``l2_group_size`` cluster-tile rows per group, the
``persistent_tiles`` function applied to the cluster-tile grid), giving ``(cm_i, cn_i)``; CTA
``r`` computes block tile ``m_idx = cm_i * CM + rm``, ``n_idx = cn_i * CN + rn``.  Every CTA
of a cluster walks the same tiles and the same k-tiles, in lock step through the ring.

Slices and masks (per k-tile ``k``; B is stored N x K):

* A: if ``CN == 1`` the CTA loads its whole A tile, rows ``[m_idx*BM, +BM)``, cols
  ``[k*BK, +BK)``, into ``Asmem[stage]``, plain TMA (``cp.async.bulk.tensor.2d.shared::cluster
  .global.mbarrier::complete_tx::bytes``) completing on its own ``tma_bar[stage]``.  If
  ``CN > 1`` it loads slice ``rn`` only: rows ``[m_idx*BM + rn*BM/CN, +BM/CN)`` into
  ``Asmem[stage][rn*BM/CN:]`` with ``.multicast::cluster``, ``cta_mask = a_mask(r) =
  sum_j 1 << (rm + j*CM)`` (its rank row, itself included): the bytes land at that offset in
  every CTA of the mask and each one's ``tma_bar[stage]`` gets complete_tx of ``BM/CN*BK*2``.
* B: symmetric.  ``CM == 1``: the whole B tile, rows ``[n_idx*BN, +BN)``.  ``CM > 1``: slice
  ``rm``, rows ``[n_idx*BN + rm*BN/CM, +BN/CM)`` into ``Bsmem[stage][rm*BN/CM:]``,
  ``cta_mask = b_mask(r) = ((1 << CM) - 1) << (rn*CM)`` (its rank column).
* A slice is a whole number of 8-row swizzle atoms (``check_cluster`` refuses otherwise), so
  it starts 1024-aligned and the wgmma descriptors read the assembled tile as if one CTA
  had loaded it.

So each CTA's ``tma_bar[stage]`` receives, per use, complete_tx from ``CN`` A sources and
``CM`` B sources (itself among them): ``stage_bytes`` in all.  Each CTA's stage is written by
the ``CM + CN - 1`` CTAs of its rank row and rank column, and its own multicasts write into
those same CTAs (the relation is symmetric), so a stage of CTA r may be refilled only when
the consumers of all of them have released it.  ``release_peers(r)`` lists them, self
excluded, in the order the consumer arrives: row peers ``rm + ((rn + j) % CN) * CM`` for ``j = 1 .. CN-1``, then
column peers ``(rm + i) % CM + rn*CM`` for ``i = 1 .. CM-1``.

2x1 (CM=2, CN=1): each CTA loads its whole A (16 KiB at BM=128, BK=64) and half of B
(rows ``rm*BN/2``), multicast with mask ``0b11``; peers: the other rank; empty count 2.
1x2 (CM=1, CN=2): half of A (rows ``rn*64``) multicast with mask ``0b11``, whole B; peers:
the other rank; empty count 2.  2x2: A mask ``0b101 << rm``, B mask ``0b11 << 2*rn``,
peers ``[r ^ 2, r ^ 1]``, empty count 3.

Init (program order, every CTA)
-------------------------------
1. thread 0: for ``s`` in ``0..PIPE-1``: ``mbarrier.init(tma_bar[s], 1)``,
   ``mbarrier.init(empty_bar[s], CM + CN - 1)`` (``release_unscaled``: 1); then
   ``mbarrier.init(mma_bar[0], 1)``.
2. all 160 threads: ``fence.mbarrier_init.release.cluster``.
3. all 160 threads of all CS CTAs: ``barrier.cluster.arrive`` (release) then
   ``barrier.cluster.wait`` (acquire) -- no peer multicasts into or arrives on a barrier
   before it is initialised.

Producer (warp 4; every lane runs the waits and the loop, lane 0 issues)
-----------------------------------------------------------------------
State ``stage = 0``, ``phase_empty = 1`` (a fresh barrier passes a parity-1 wait), ``kc = 0``.
Per tile (``reset_phase_per_tile``: ``stage = 0, phase_empty = 1`` at its start), for
``k = 0 .. KT-1``:

1. wait ``empty_bar[stage]`` (own CTA), parity ``phase_empty`` (``wait_parity_flip="mma"``:
   ``phase_empty ^ 1``); bounded (below).  Role ``producer``, barrier ``empty_bar``.
2. lane 0, unless this thread has aborted: ``nanosleep(producer_delay_ns)`` if > 0; then
   the A load (whole tile or multicast slice, above), then the B load (likewise), then
   ``mbarrier.arrive.expect_tx(tma_bar[stage], TX)`` on its own full barrier, with
   ``TX = stage_bytes + expect_tx_delta`` (``expect_tx_local``: ``(BM/CN + BN/CM)*BK*2 +
   expect_tx_delta``, only the bytes its own loads bring it).  The copies are issued before
   the arrive, as in ``ws``; a peer's multicast may also land before it (tx runs negative
   while the pending arrival holds the phase open).  ``multicast_skip_rank = r``: the CTA of
   rank r issues no multicast load (neither its A slice nor its B slice; a whole-tile plain
   load, where the cluster has no multicast along that operand, is still issued) and still
   arrives with expect_tx.
3. ``stage += 1``; at ``PIPE``: ``stage = 0`` and ``phase_empty ^= 1`` (not with
   ``skip_mma_phase_flip``); ``kc += 1``.

Consumer (warps 0-3, 128 threads)
---------------------------------
State ``stage = 0``, ``phase_tma = 0``, ``kc = 0``.  Per tile (``reset_phase_per_tile``:
``stage = 0, phase_tma = 0``): zero the accumulator; for ``k = 0 .. KT-1``:

1. ``nanosleep(lag_ns)`` in warp ``lag_warp`` if > 0.
2. wait ``tma_bar[stage]`` (own CTA), parity ``phase_tma`` (``wait_parity_flip="tma"``:
   ``^ 1``); bounded; every thread.  Role ``mma``, barrier ``tma_bar``.
3. thread 0: ``nanosleep(consumer_delay_ns)`` if > 0; all: ``wgmma.fence``, 2 x BK/16
   ``wgmma.mma_async m64nBNk16`` on ``Asmem[stage]``, ``Bsmem[stage]``, ``commit_group``,
   ``wait_group 0``.
4. thread 0, unless aborted: ``mbarrier.arrive(empty_bar[stage])`` on its own CTA; then for
   each ``p`` in ``release_peers(r)``: ``mapa.shared::cluster.u32`` of
   ``empty_bar[stage]``'s address into rank ``p`` and ``mbarrier.arrive.shared::cluster.b64``
   on it (one arrival each; ``CM + CN - 2`` remote arrives per k-tile).
5. ``stage += 1``; at ``PIPE``: ``stage = 0``, ``phase_tma ^= 1``; ``kc += 1``.

Then the ``ws`` epilogue, per tile: ``bar.sync 1, 128``; registers -> fp16 -> ``Dsmem``;
``fence.proxy.async.shared::cta``; ``bar.sync 1, 128``; thread 0 (unless aborted): TMA
store of ``Dsmem`` to D tile ``(m_idx, n_idx)``, ``cp.async.bulk.commit_group``,
``cp.async.bulk.wait_group 0`` (not with ``skip_store_wait``); ``bar.sync 1, 128``.

Exit
----
All 160 threads of all CS CTAs: ``barrier.cluster.arrive`` + ``barrier.cluster.wait``: no
CTA leaves while a peer may still arrive on its empty barriers (the last k-tiles' remote
releases come after the owner's producer stopped waiting) or multicast into it.
``skip_exit_sync``: ``bar.sync 0`` (the ``ws`` exit) instead.

Bounded waits and timeouts
--------------------------
Every wait is ``hopper.py``'s ``bounded_wait`` (``try_wait.parity`` loop, ``clock64``
budget ``timeout_cycles``; after budget/16 it also polls the grid-wide ``diag[0]``).  The
first thread past its budget writes ``diag``: barrier (1 ``tma_bar``, 3 ``empty_bar``),
stage, role, its running k-tile ``kc``, tile ordinal, parity, ``blockIdx.x``, thread, and
for this step ``diag[9] = rank``, ``diag[10] = cluster`` (``kernels.spec.DIAG_FIELDS``).  A
thread that timed out (or saw ``diag[0]``) stops waiting, loading and arriving -- remote
arrives included -- but keeps executing the wgmma and named barriers, and reaches the exit
cluster barrier like everyone else: a CTA that stopped still takes part in it, so its peers
are not left waiting in ``barrier.cluster.wait`` (the one unbounded wait, reached only
after every wait of every thread of the cluster has returned or run out).

Bug knobs: ``multicast_skip_rank``, ``release_unscaled``, ``expect_tx_local``,
``skip_exit_sync`` (above), and ``ws``'s ``skip_mma_phase_flip``, ``wait_parity_flip``,
``expect_tx_delta``, ``skip_store_wait``, ``reset_phase_per_tile``; the delay knobs are
launch arguments as in ``ws``.  Refused (``ConfigError``): ``tma_issuer="each_warp"``,
``trace``, the cluster knobs on a 1x1 cluster, M or N not a whole number of cluster tiles,
a slice that is not whole swizzle atoms (``BLK_N/cluster_m`` or ``BLK_M/cluster_n`` not a
multiple of 8), fewer CTAs (``sm_count``) than one cluster.
"""

from __future__ import annotations

from protosim.config import GemmConfig

from ..spec import KernelSpec

STEP = "ws_cluster"


def build(cfg: GemmConfig):
    """The uncompiled ``@T.prim_func`` of ``ws_cluster`` for ``cfg`` (``hopper.build``)."""
    from . import hopper

    return hopper.build(KernelSpec(STEP, cfg))
