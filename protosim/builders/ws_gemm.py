"""The warp-specialized persistent GEMM (``kernels/tirx/hopper.py`` step ``ws``) as a schedule.

Two roles per CTA, as in the kernel (160 threads):

``mma`` (warps 0-3, the wgmma warpgroup)
    per tile, per k-tile: wait on ``tma_bar[stage]`` (the kernel's ``full_bar``) with
    ``phase_tma``; wgmma, commit, ``wait_group 0``; thread 0 arrives on
    ``empty_bar[stage]`` (the stage is free again); the stage index advances and
    ``phase_tma`` flips when it wraps.  After the K loop the accumulator goes through
    Dsmem to one TMA store (the Hopper v4+ epilogue, all on the warpgroup's named
    barrier 1).
``producer`` (warp 4)
    per tile, per k-tile: the whole warp waits on ``empty_bar[stage]`` with
    ``phase_empty`` (starting at 1, which a fresh barrier satisfies); lane 0 issues
    the two TMA loads and ``arrive.expect_tx`` on ``tma_bar[stage]``; the stage index
    advances and ``phase_empty`` flips when it wraps.

``mma_bar`` is initialized, as in the kernel, and never used.  Barrier names are the
ones the kernel's timeout record uses (``kernels/spec.py`` ``BARRIER_NAMES``, role
names ``ROLE_NAMES``), so a silicon timeout "tma_bar stage s, role mma" names the
simulator's ``tma_bar[s]`` waited on by ``mma.w*``.

Bug knobs, applied where the kernel applies them:

* ``skip_mma_phase_flip`` -- the *producer's* ``phase_empty`` never flips (the empty
  barrier is the one the MMA side arrives on); ``phase_tma`` still flips;
* ``wait_parity_flip = "mma"`` flips the producer's empty waits, ``"tma"`` the
  consumer's full waits;
* ``reset_phase_per_tile`` -- both roles restart at stage 0 with their initial
  parities (1 for empty, 0 for full) at every tile;
* ``expect_tx_delta``, ``skip_store_wait`` -- as in v4-v6;
* ``tma_issuer = "each_warp"`` is refused (one producer warp by construction).

Delay knobs: ``producer_delay_ns`` sleeps in lane 0 before each TMA issue (after the
empty wait), ``consumer_delay_ns`` in thread 0 before each wgmma; ``lag_warp`` /
``lag_ns`` sleep before each *consumer* full wait (the kernel's producer calls no
``lag()``; ``lag_warp`` is one of warps 0-3).

Logical tags come from the loop structure, not from the parities -- the ring is one
:class:`protosim.pipeline.Pipeline` over both roles, which counts them: the n-th load into
stage s (in the producer's program order) is use n of ``tma_bar[s]``; the n-th read of
stage s (consumer order) waits for that same use, and its release is use n of
``empty_bar[s]``; the producer's wait before its n-th load into stage s waits for the
release of the (n-1)-th read -- use ``n - 1``, which is -1 (the vacuous phase before
init, parity 1) for the first load into each stage.

``tcgen05`` archs (b200): refused.  The kernel's consumer never waits for its own MMAs
before the epilogue (``wait_group 0`` does that on Hopper); a Blackwell port needs an
extra ``tcgen05.commit`` onto a barrier the epilogue waits on, which no kernel here has.
"""

from __future__ import annotations

from collections.abc import Callable

from protosim.arch import load_profile
from protosim.builders.gemm_cta import MMA_ROLE, PRODUCER_ROLE, GemmCta, barrier_inits, empty_bar, storage, tma_bar
from protosim.builders.seed_gemm import persistent_tiles
from protosim.config import ConfigError, GemmConfig
from protosim.gcpause import gc_paused
from protosim.ir import CtaProgram, CtaSync, MbarInit, Op, RoleDecl, Schedule
from protosim.pipeline import Pipeline, PipelineState
from protosim.ptxas import as_compiled

CONSUMER_WARPS = 4
PRODUCER_WARPS = 1


def check(cfg: GemmConfig, mma_kind: str) -> None:
    """Raise :class:`ConfigError` for what the ws kernel cannot be."""
    if cfg.tma_issuer != "one":
        raise ConfigError("tma_issuer", "ws has one producer warp by construction; each_warp applies to hgemm_v4-v6")
    if mma_kind != "wgmma":
        raise ConfigError(
            "arch",
            f"{cfg.arch}: hgemm_ws mirrors the Hopper ws kernel (wgmma, completion by wait_group 0); a {mma_kind} "
            "port needs a commit the epilogue waits on, which no kernel has -- use arch = \"h200\", or hgemm_v6 on "
            f"{cfg.arch}",
        )


def grid_ctas(cfg: GemmConfig, sm_count: int) -> int:
    """Persistent CTAs launched: one per SM (or ``sm_count``), no more than tiles (kernels/spec.py)."""
    return min(cfg.sm_count or sm_count, cfg.m_tiles * cfg.n_tiles)


def _producer(p: GemmCta, ring: Pipeline, tiles: list[tuple[int, int]], fill: Fill | None = None,
              enter: Step | None = None, leave: Step | None = None) -> None:
    """Warp 4: wait until the MMA released a stage, refill it.  ``skip_mma_phase_flip``:
    the code passes its start parity every time.  ``fill`` / ``enter`` / ``leave``: what the
    cluster kernel writes instead (protosim/builders/ws_cluster.py)."""
    cfg = p.cfg
    (enter or GemmCta.prologue_sync)(p)
    start = PipelineState.producer_start(cfg.PIPE_DEPTH)
    put = start
    for tile in tiles:
        if cfg.reset_phase_per_tile:  # the code restarts; the pipeline's counts (the intent) do not
            put = start
        for k in range(cfg.k_tiles):
            parity = start.phase if cfg.skip_mma_phase_flip else put.phase
            p.wait(ring.producer_acquire, put, "mma", tile, k, parity=parity, lag=False)
            (fill or GemmCta.tma_load)(p, ring, put, tile, k)
            put = put.advance()
    (leave or _cta_sync)(p)


def _consumer(c: GemmCta, ring: Pipeline, tiles: list[tuple[int, int]], enter: Step | None = None,
              release_ranks: tuple[int, ...] = (), leave: Step | None = None) -> None:
    """Warps 0-3: wait for a full stage, multiply, release it; epilogue per tile.  ``enter``
    (after thread 0's inits), ``release_ranks`` (the CTAs whose empty barrier a release
    arrives on) and ``leave``: what the cluster kernel writes instead."""
    cfg = c.cfg
    for name in barrier_inits(c.family, cfg.PIPE_DEPTH, True):  # full[s], empty[s] per stage, then mma_bar
        c.ops.append(MbarInit(barrier=name, issuer="one"))
    (enter or GemmCta.prologue_sync)(c)
    start = PipelineState.consumer_start(cfg.PIPE_DEPTH)
    get = start
    for tile in tiles:
        if cfg.reset_phase_per_tile:
            get = start
        for k in range(cfg.k_tiles):
            c.wait(ring.consumer_wait, get, "tma", tile, k)
            c.mma(get.index, tile, k)
            ring.consumer_release(get, ranks=release_ranks, tile=tile, k=k)
            get = get.advance()
        c.store_tma(tile)
    (leave or GemmCta.teardown)(c)


def _cta_sync(g: GemmCta) -> None:
    g.ops.append(CtaSync())


Step = Callable[[GemmCta], None]
Fill = Callable[[GemmCta, Pipeline, PipelineState, tuple[int, int], int], None]


def build_ws(cfg: GemmConfig) -> Schedule:
    """Step ws: one TMA producer warp and one wgmma warpgroup per persistent CTA."""
    arch = load_profile(cfg.arch)
    check(cfg, arch.mma_kind)
    if cfg.cluster_size > 1:  # the kernels' ws_cluster step (kernels/tirx/hopper_cluster.py)
        from protosim.builders.ws_cluster import build_ws_cluster  # it builds on this module's roles

        return build_ws_cluster(cfg)
    for knob in ("multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync"):
        if getattr(cfg, knob) != getattr(GemmConfig(), knob):
            raise ConfigError(knob, f"{getattr(cfg, knob)!r} needs a cluster; set cluster_m or cluster_n to 2 or more")
    depth = cfg.PIPE_DEPTH
    barriers, buffers = storage(cfg, arch, depth, True)  # Hopper's: tma_bar[s] and empty_bar[s], then mma_bar
    ctas = []
    for i, tiles in enumerate(persistent_tiles(cfg.m_tiles, cfg.n_tiles, grid_ctas(cfg, arch.sm_count), cfg.l2_group_size)):
        c, p = GemmCta(cfg, arch), GemmCta(cfg, arch)  # one op stream per role
        ring = Pipeline([tma_bar(s) for s in range(depth)], [empty_bar(s) for s in range(depth)],
                        producer=p.ops.append, consumer=c.ops.append)
        _consumer(c, ring, tiles)
        _producer(p, ring, tiles)
        roles: tuple[tuple[Op, ...], ...] = (as_compiled(tuple(c.ops)), as_compiled(tuple(p.ops)))
        ctas.append(CtaProgram(i, roles))
    return Schedule(
        name="hgemm_ws",
        arch=arch.name,
        barriers=barriers,
        buffers=buffers,
        roles=(RoleDecl(MMA_ROLE, CONSUMER_WARPS), RoleDecl(PRODUCER_ROLE, PRODUCER_WARPS)),
        ctas=tuple(ctas),
        l2_at_launch=cfg.l2_at_launch,
        config=cfg.to_dict(),
    )


BUILDERS = {"hgemm_ws": gc_paused()(build_ws)}  # hundreds of thousands of frozen ops: keep the collector out
