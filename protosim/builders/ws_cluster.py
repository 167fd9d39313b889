"""The warp-specialized persistent GEMM on thread-block clusters (``kernels/tirx/hopper_cluster.py``,
the kernels' step ``ws_cluster``) as a schedule: ``hgemm_ws`` with ``cluster_m x cluster_n > 1``.

A cluster of ``cluster_m x cluster_n`` CTAs computes a block of ``cluster_m x cluster_n``
output tiles; CTA ``(i, j)`` of the cluster (rank ``i + j * cluster_m``) computes tile
``(M block * cluster_m + i, N block * cluster_n + j)``.  CTAs in one row of the cluster
(same ``i``) share the A tile, CTAs in one column share the B tile.  Each CTA loads

* its share of the A tile: all of it when ``cluster_n == 1``, else slice ``j`` of ``cluster_n``
  (rows), multicast to the CTAs of its row (``TmaLoad.multicast``);
* its share of the B tile: likewise slice ``i`` of ``cluster_m``, multicast to its column;

so every stage of every CTA is filled by several sources, each completing bytes on that CTA's
``tma_bar[s]``: the ``arrive.expect_tx`` announces all of them (``stage_bytes``).  A stage may be
refilled only when the consumers of every CTA that the stage's multicasts write into have
read it, so each consumer releases the stage on ``empty_bar[s]`` of every such peer (remote
arrives, ``Arrive.cta``) and ``empty_bar[s]`` counts one arrival per peer.  A cluster barrier
(``barrier.cluster.arrive`` + ``wait``) follows the barrier inits (no peer may arrive on a
barrier before it is initialised) and precedes the exit (no CTA may exit while a peer may
still arrive on its barriers or multicast into it).

Cluster bug knobs (protosim/config.py): ``multicast_skip_rank`` (that rank issues no multicast
slice), ``release_unscaled`` (``empty_bar`` counts one CTA's arrival), ``expect_tx_local`` (the
expect_tx counts only the bytes this CTA's own loads bring it), ``skip_exit_sync`` (no cluster
barrier before exit).  The single-CTA knobs act as in ``hgemm_ws``.
"""

from __future__ import annotations

from protosim.arch import ArchProfile, load_profile
from protosim.builders.gemm_cta import (
    MMA_BAR,
    MMA_ROLE,
    PRODUCER_ROLE,
    WARPS,
    GemmCta,
    a_tile,
    b_tile,
    empty_bar,
    tma_bar,
)
from protosim.builders import ws_gemm
from protosim.builders.seed_gemm import persistent_tiles
from protosim.config import F16_BYTES, ConfigError, GemmConfig
from protosim.ir import (
    Access,
    BarrierDecl,
    BufferDecl,
    ClusterArrive,
    ClusterWait,
    CtaProgram,
    CtaSync,
    Fence,
    Op,
    RoleDecl,
    Schedule,
    Sleep,
)
from protosim.pipeline import Pipeline, PipelineState
from protosim.ptxas import as_compiled

CONSUMER_WARPS = 4
PRODUCER_WARPS = 1


def check(cfg: GemmConfig, arch: ArchProfile) -> None:
    """Raise :class:`ConfigError` for a cluster shape the kernel cannot run."""
    if cfg.m_tiles % cfg.cluster_m:
        raise ConfigError("M", f"M={cfg.M} is {cfg.m_tiles} tiles of {cfg.BLK_M}, not a multiple of cluster_m="
                               f"{cfg.cluster_m}; pick M as a multiple of {cfg.cluster_m * cfg.BLK_M}")
    if cfg.n_tiles % cfg.cluster_n:
        raise ConfigError("N", f"N={cfg.N} is {cfg.n_tiles} tiles of {cfg.BLK_N}, not a multiple of cluster_n="
                               f"{cfg.cluster_n}; pick N as a multiple of {cfg.cluster_n * cfg.BLK_N}")
    if cfg.cluster_size > arch.max_cluster_size:
        raise ConfigError("cluster_m", f"{cfg.cluster_m}x{cfg.cluster_n}: {arch.name} allows clusters of at most "
                                       f"{arch.max_cluster_size} CTAs")
    if (cfg.sm_count or arch.sm_count) < cfg.cluster_size:
        raise ConfigError("sm_count", f"{cfg.sm_count}: a persistent grid of clusters of {cfg.cluster_size} needs at "
                                      f"least {cfg.cluster_size} CTAs")
    for dim, blk, parts in (("BLK_M", cfg.BLK_M, cfg.cluster_n), ("BLK_N", cfg.BLK_N, cfg.cluster_m)):
        if blk % (8 * parts):
            raise ConfigError(dim, f"{blk} rows cannot be split into {parts} multicast slices of whole 8-row "
                                   f"swizzle atoms; use a multiple of {8 * parts}")


def clusters_launched(cfg: GemmConfig, arch: ArchProfile) -> int:
    """Persistent clusters: as many as fit in the CTA budget (one per SM, or ``sm_count``),
    no more than cluster tiles."""
    blocks = (cfg.m_tiles // cfg.cluster_m) * (cfg.n_tiles // cfg.cluster_n)
    return min((cfg.sm_count or arch.sm_count) // cfg.cluster_size, blocks)


def rank_of(cfg: GemmConfig, i: int, j: int) -> int:
    """``%cluster_ctarank`` of the CTA at (i along M, j along N): x (M) varies fastest."""
    return i + j * cfg.cluster_m


class ClusterCta:
    """One CTA's position in its cluster and who shares its operands."""

    def __init__(self, cfg: GemmConfig, rank: int):
        self.rank = rank
        self.i, self.j = rank % cfg.cluster_m, rank // cfg.cluster_m
        self.a_group = tuple(rank_of(cfg, self.i, jj) for jj in range(cfg.cluster_n))
        """CTAs of its row: they share its A tile (slice jj each)."""
        self.b_group = tuple(rank_of(cfg, ii, self.j) for ii in range(cfg.cluster_m))
        """CTAs of its column: they share its B tile (slice ii each)."""
        cm, cn = cfg.cluster_m, cfg.cluster_n
        self.peers = (rank, *(self.i + ((self.j + d) % cn) * cm for d in range(1, cn)),
                      *((self.i + d) % cm + self.j * cm for d in range(1, cm)))
        """Every CTA whose multicasts write into this CTA's stages -- and whose stages this
        CTA's multicasts write into: the CTAs whose ``empty_bar[s]`` this consumer releases,
        in the kernel's order (its own, then its rank row's, then its rank column's:
        kernels.spec.ClusterGeometry ``release_peers``)."""


def _loads(cfg: GemmConfig, cta: ClusterCta, stage: int, tile: tuple[int, int], k: int) -> list:
    """This CTA's TMA loads for k-tile k, A then B (``(bytes, dst, src, fields)``)."""
    m, n = tile
    a_bytes, b_bytes = cfg.BLK_M * cfg.BLK_K * F16_BYTES, cfg.BLK_N * cfg.BLK_K * F16_BYTES
    loads = []
    for name, content, size, split, mine, group in (("A", a_tile(m, k), a_bytes, cfg.cluster_n, cta.j, cta.a_group),
                                                    ("B", b_tile(n, k), b_bytes, cfg.cluster_m, cta.i, cta.b_group)):
        if split == 1:
            loads.append((size, Access(name, stage, content), content, {}))
        elif cfg.multicast_skip_rank != cta.rank:
            part = size // split
            loads.append((part, Access(name, stage, content, part=mine), f"{content}#{mine}", {"multicast": group}))
    return loads


def _fill(cta: ClusterCta):
    """The cluster kernel's refill of a stage: the producer delay, its loads (multicast slices of
    the shared operand), then ``arrive.expect_tx`` of every source's bytes."""
    def fill(p: GemmCta, ring: Pipeline, put: PipelineState, tile: tuple[int, int], k: int) -> None:
        cfg = p.cfg
        if cfg.producer_delay_ns:
            p.ops.append(Sleep(cycles=p.ns(cfg.producer_delay_ns), issuer="one", tile=tile, k=k, label="producer delay"))
        loads = _loads(cfg, cta, put.index, tile, k)
        # expect_tx_local: what its own loads would bring it, (BM/CN + BN/CM) * BK * 2 -- the
        # kernel's constant, whatever multicast_skip_rank leaves out
        local = (cfg.BLK_M // cfg.cluster_n + cfg.BLK_N // cfg.cluster_m) * cfg.BLK_K * F16_BYTES
        announced = (local if cfg.expect_tx_local else cfg.stage_bytes) + cfg.expect_tx_delta
        ring.producer_commit(put, announced, loads, issuer="one", tile=tile, k=k)
    return fill


def _cluster_prologue_sync(g: GemmCta) -> None:
    """After thread 0's inits: ``fence.mbarrier_init.release.cluster`` and the cluster barrier
    (every thread), so no peer arrives on -- or multicasts onto -- a barrier not yet initialised."""
    g.ops += [Fence(fence="mbarrier_init"), ClusterArrive(), ClusterWait()]


def _exit_sync(g: GemmCta) -> None:
    """Before the exit: the cluster barrier (every thread), or with ``skip_exit_sync`` the ``ws``
    exit's ``bar.sync 0``."""
    g.ops += [CtaSync()] if g.cfg.skip_exit_sync else [ClusterArrive(), ClusterWait()]


def build_ws_cluster(cfg: GemmConfig) -> Schedule:
    arch = load_profile(cfg.arch)
    check(cfg, arch)
    depth, size = cfg.PIPE_DEPTH, cfg.cluster_size
    blocks = persistent_tiles(cfg.m_tiles // cfg.cluster_m, cfg.n_tiles // cfg.cluster_n,
                              clusters_launched(cfg, arch), cfg.l2_group_size)
    peers = ClusterCta(cfg, 0).peers
    release_count = 1 if cfg.release_unscaled else len(peers)
    barriers = [b for s in range(depth) for b in (BarrierDecl(tma_bar(s), 1), BarrierDecl(empty_bar(s), release_count))]
    barriers.append(BarrierDecl(MMA_BAR, 1))
    buffers = (
        BufferDecl("A", "smem", depth, cfg.BLK_M * cfg.BLK_K * F16_BYTES, parts=cfg.cluster_n, align=1024),
        BufferDecl("B", "smem", depth, cfg.BLK_N * cfg.BLK_K * F16_BYTES, parts=cfg.cluster_m, align=1024),
        BufferDecl("D", "smem", 1, cfg.BLK_M * cfg.BLK_N * F16_BYTES, parts=WARPS, align=1024),
    )
    ctas = []
    for c_idx, block_list in enumerate(blocks):
        for rank in range(size):
            cta = ClusterCta(cfg, rank)
            tiles = [(bm * cfg.cluster_m + cta.i, bn * cfg.cluster_n + cta.j) for bm, bn in block_list]
            c, p = GemmCta(cfg, arch), GemmCta(cfg, arch)
            ring = Pipeline([tma_bar(s) for s in range(depth)], [empty_bar(s) for s in range(depth)],
                            producer=p.ops.append, consumer=c.ops.append)
            ws_gemm._consumer(c, ring, tiles, enter=_cluster_prologue_sync, release_ranks=cta.peers, leave=_exit_sync)
            ws_gemm._producer(p, ring, tiles, fill=_fill(cta), enter=_cluster_prologue_sync, leave=_exit_sync)
            roles: tuple[tuple[Op, ...], ...] = (as_compiled(tuple(c.ops)), as_compiled(tuple(p.ops)))
            ctas.append(CtaProgram(c_idx * size + rank, roles))
    return Schedule(
        name="hgemm_ws",
        arch=arch.name,
        barriers=tuple(barriers),
        buffers=buffers,
        roles=(RoleDecl(MMA_ROLE, CONSUMER_WARPS), RoleDecl(PRODUCER_ROLE, PRODUCER_WARPS)),
        ctas=tuple(ctas),
        l2_at_launch=cfg.l2_at_launch,
        config=cfg.to_dict(),
        cluster=size,
    )
