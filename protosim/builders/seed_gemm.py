"""The seed article's hgemm steps v1-v6 as schedules, op by op.

Each builder mirrors the article's TIRx kernel (``../shared/seeds/000_*.txt``):
the same barriers and counts, the same waits with the parity the code would
compute (bug knobs change that computation, never the logical tags), the same
prefetch and persistent tile order.  The ops of one CTA are written by
:class:`protosim.builders.gemm_cta.GemmCta` (which ports the tcgen05 MMA to wgmma on
the H200).

Logical tags are computed from the loop structure alone: the TMA ring and ``mma_bar``
are :class:`protosim.pipeline.Pipeline` rings, which count each barrier's fills and
waits in program order, so a wait paired with the k-th load into a stage says so
whatever parity (or, with ``reset_phase_per_tile``, whatever stage) the buggy code uses.
"""

from __future__ import annotations

from protosim.arch import ArchProfile, load_profile
from protosim.builders.gemm_cta import MMA_ROLE, WARPS, GemmCta, family, persistent_ctas, storage
from protosim.config import ConfigError, GemmConfig
from protosim.gcpause import gc_paused
from protosim.ir import CtaProgram, Op, RoleDecl, Schedule
from protosim.pipeline import Pipeline, PipelineState
from protosim.ptxas import as_compiled, with_copy_streams

MMA_START = PipelineState.consumer_start(1)
"""Where the warpgroup's ``phase_mma`` starts: it waits for the first MMA's completion."""


def _wait_mma(c: GemmCta, done: Pipeline, at: PipelineState, stage: int, tile: tuple[int, int], k: int) -> PipelineState:
    """The MMA of k-tile k on ``stage``, its completion onto ``mma_bar`` and the wait for it
    (then the seed's tcgen05 fence); returns the ``mma_bar`` position after.
    ``skip_mma_phase_flip``: the code passes its start parity every time."""
    c.mma(stage, tile, k)
    done.producer_commit(at, tile=tile, k=k)
    c.wait(done.consumer_wait, at, "mma", tile, k, parity=MMA_START.phase if c.cfg.skip_mma_phase_flip else at.phase)
    c.after_mma_wait(tile, k)
    return at.advance()


def _schedule(step: int, cfg: GemmConfig, arch: ArchProfile, stages: int, tma: bool, ctas: list[list[Op]],
              regs_per_thread: int = 0) -> Schedule:
    barriers, buffers = storage(cfg, arch, stages, tma)
    return Schedule(
        name=f"hgemm_v{step}",
        arch=arch.name,
        barriers=barriers,
        buffers=buffers,
        roles=(RoleDecl(MMA_ROLE, WARPS),),
        ctas=tuple(CtaProgram(i, (as_compiled(tuple(ops)),)) for i, ops in enumerate(ctas)),
        l2_at_launch=cfg.l2_at_launch,
        config=cfg.to_dict(),
        regs_per_thread=regs_per_thread,
    )


def _grid(cfg: GemmConfig) -> list[tuple[int, int]]:
    """``bx, by = T.cta_id([M // BLK_M, N // BLK_N])``: x fastest."""
    return [(bx, by) for by in range(cfg.n_tiles) for bx in range(cfg.m_tiles)]


def _thread_copy_steps(step: int, cfg: GemmConfig, arch: ArchProfile) -> Schedule:
    """v1-v3: thread copies into one SMEM stage, one MMA barrier."""
    ctas = []
    for tile in _grid(cfg):
        c = GemmCta(cfg, arch)
        c.prologue(1, tma=False)
        done, at = c.mma_done(), MMA_START
        for k in range(cfg.k_tiles):
            c.thread_copy(tile, k)
            at = _wait_mma(c, done, at, 0, tile, k)
        c.store_direct(tile)
        c.teardown()
        ctas.append(with_copy_streams(tuple(c.ops)))  # each k-tile's A + B copies: one stream (protosim.ptxas)
    # The thread-copy kernels' registers bound their CTAs per SM (3 at BLK_N 128, where shared
    # memory alone would allow 6); the TMA steps state none: shared memory binds them first.
    return _schedule(step, cfg, arch, 1, False, ctas, regs_per_thread=family(arch).copy_regs(cfg))


def build_v1(cfg: GemmConfig) -> Schedule:
    """Step 1: one 128x128x64 tile per CTA; no K loop."""
    if cfg.k_tiles != 1:
        raise ConfigError("K", f"v1 has no K loop: K must equal BLK_K ({cfg.BLK_K}), got {cfg.K}; use hgemm_v2 for longer K")
    return _thread_copy_steps(1, cfg, load_profile(cfg.arch))


def build_v2(cfg: GemmConfig) -> Schedule:
    """Step 2: the K loop, one output tile, ``phase_mma ^= 1`` after each wait."""
    if cfg.m_tiles != 1 or cfg.n_tiles != 1:
        raise ConfigError("M", f"v2 computes one output tile: set M = BLK_M and N = BLK_N (got {cfg.M}x{cfg.N}); use hgemm_v3 for a grid")
    return _thread_copy_steps(2, cfg, load_profile(cfg.arch))


def build_v3(cfg: GemmConfig) -> Schedule:
    """Step 3: the K loop on a 2-D grid, one CTA per output tile."""
    return _thread_copy_steps(3, cfg, load_profile(cfg.arch))


def _k_loop(c: GemmCta, tile: tuple[int, int], ring: Pipeline, done: Pipeline, get: PipelineState,
            at: PipelineState) -> tuple[PipelineState, PipelineState]:
    """The step-4/5 K loop for one tile, starting at the ring position ``get`` and the
    ``mma_bar`` position ``at``; returns both positions after the tile.

    From a fresh ring it is the seed's code exactly: prefetch ``min(depth, k_tiles)``
    k-tiles, then per k-tile wait on ``stage = k % PIPE_DEPTH`` (``phase_tma ^= 1`` when
    the stage wraps), MMA, wait for it, refill the stage with k-tile ``k + depth``.  (A
    one-stage ring is step 4's load-then-wait.)"""
    kt, depth = c.cfg.k_tiles, ring.stages
    put = get  # the loads run ahead of the reads from the same stage
    for kk in range(min(depth, kt)):  # prefetch
        c.tma_load(ring, put, tile, kk)
        put = put.advance()
    for k in range(kt):
        c.wait(ring.consumer_wait, get, "tma", tile, k)
        at = _wait_mma(c, done, at, get.index, tile, k)
        if k + depth < kt:
            c.tma_load(ring, put, tile, k + depth)
            put = put.advance()
        get = get.advance()
    return get, at


def _ring_step(step: int, cfg: GemmConfig, stages: int) -> Schedule:
    """Steps 4 and 5: one CTA per output tile around the K loop on a ring of ``stages``."""
    arch = load_profile(cfg.arch)
    ctas = []
    for tile in _grid(cfg):
        c = GemmCta(cfg, arch)
        c.prologue(stages, tma=True)
        _k_loop(c, tile, c.ring(stages), c.mma_done(), PipelineState.consumer_start(stages), MMA_START)
        c.store_tma(tile)
        c.teardown()
        ctas.append(c.ops)
    return _schedule(step, cfg, arch, stages, True, ctas)


def build_v4(cfg: GemmConfig) -> Schedule:
    """Step 4: TMA loads with ``arrive.expect_tx``, load-then-wait, TMA store."""
    return _ring_step(4, cfg, 1)


def build_v5(cfg: GemmConfig) -> Schedule:
    """Step 5: a PIPE_DEPTH ring of SMEM stages with prefetch."""
    return _ring_step(5, cfg, cfg.PIPE_DEPTH)


def persistent_tiles(num_m: int, num_n: int, num_ctas: int, l2_group_size: int) -> list[list[tuple[int, int]]]:
    """Tiles of each persistent CTA in execution order, as TIRx's
    ``ClusterPersistentScheduler2D`` (cluster 1x1, group-major) hands them out:
    CTA b takes work items b, b + num_ctas, ...; item -> (m, n) walks groups of
    ``l2_group_size`` M-rows, column-major inside a group."""
    full_groups = num_m // l2_group_size
    tail_rows = num_m - full_groups * l2_group_size
    span = l2_group_size * num_n
    total = num_m * num_n

    def coords(t: int) -> tuple[int, int]:
        if t < full_groups * span:
            group, within = divmod(t, span)
            return group * l2_group_size + within % l2_group_size, within // l2_group_size
        rem = t - full_groups * span
        return full_groups * l2_group_size + rem % tail_rows, rem // tail_rows

    return [[coords(t) for t in range(b, total, num_ctas)] for b in range(num_ctas)]


def build_v6(cfg: GemmConfig) -> Schedule:
    """Step 6: persistent CTAs walking tiles in L2-group order around the step-5 loop.

    ``reset_phase_per_tile`` is the seed's literal code (phases and stage index
    restart per tile); otherwise the ring position and MMA phase carry over."""
    arch = load_profile(cfg.arch)
    n_ctas = persistent_ctas(cfg, arch)
    depth = cfg.PIPE_DEPTH
    start = PipelineState.consumer_start(depth)
    ctas = []
    for tiles in persistent_tiles(cfg.m_tiles, cfg.n_tiles, n_ctas, cfg.l2_group_size):
        c = GemmCta(cfg, arch)
        c.prologue(depth, tma=True)
        ring, done = c.ring(depth), c.mma_done()
        get, at = start, MMA_START
        for tile in tiles:
            if cfg.reset_phase_per_tile:  # the code restarts; the pipelines' counts (the intent) do not
                get, at = start, MMA_START
            get, at = _k_loop(c, tile, ring, done, get, at)
            c.store_tma(tile)
            c.tile_end(tile)
        c.teardown()
        ctas.append(c.ops)
    return _schedule(6, cfg, arch, cfg.PIPE_DEPTH, True, ctas)


BUILDERS = {
    name: gc_paused()(fn)  # builders allocate hundreds of thousands of frozen ops: keep the collector out
    for name, fn in (("hgemm_v1", build_v1), ("hgemm_v2", build_v2), ("hgemm_v3", build_v3),
                     ("hgemm_v4", build_v4), ("hgemm_v5", build_v5), ("hgemm_v6", build_v6))
}
