"""The seed article's hgemm steps v1-v6 as schedules, op by op.

Each builder mirrors the article's TIRx kernel (``../shared/seeds/000_*.txt``):
the same barriers and counts, the same waits with the parity the code would
compute (bug knobs change that computation, never the logical tags), the same
prefetch and persistent tile order.  On an arch whose MMA is ``wgmma`` (H200)
the tcgen05 MMA + commit becomes the Hopper port of ``kernels/``: every warp
issues the wgmma, commits, ``wait_group 0``, then one thread arrives on the MMA
barrier -- the stand-in for ``tcgen05.commit`` (shared/docs/DEVICE.md).

Logical tags are computed from the loop structure alone: ``use`` counts the
producer ops of each barrier in program order, so a wait paired with the k-th
load into a stage says so whatever parity the (possibly buggy) code passes.
"""

from __future__ import annotations

import functools

from protosim.arch import ArchProfile, load_profile
from protosim.config import ACC_BYTES, F16_BYTES, ConfigError, GemmConfig
from protosim.gcpause import gc_paused
from protosim.ir import (
    WARP_PART,
    Access,
    ArriveExpectTx,
    Arrive,
    BarrierDecl,
    BufferDecl,
    BulkCommit,
    BulkWait,
    CtaProgram,
    CtaSync,
    Fence,
    GlobalStore,
    MbarInit,
    Mma,
    MmaCommit,
    NamedBarrierSync,
    Op,
    RoleDecl,
    Schedule,
    Sleep,
    SmemStore,
    ThreadCopy,
    TmaLoad,
    TmaStore,
    TmemAlloc,
    TmemDealloc,
    TmemLoad,
    Wait,
    WaitLd,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)

WARPS = 4
TMEM_ALLOC_COLUMNS = 512  # the seed allocates all 512 columns
STORE_SYNC_ID = 10  # T.cuda.warpgroup_sync(10)


def a_tile(m: int, k: int) -> str:
    return f"A[m={m},k={k}]"


def b_tile(n: int, k: int) -> str:
    return f"B[n={n},k={k}]"


def acc_content(tile: tuple[int, int], k: int) -> str:
    return f"acc{tile}@k={k}"


def d_content(tile: tuple[int, int]) -> str:
    return f"D{tile}"


class _Cta:
    """Writes the op stream of one CTA's warpgroup, in the kernel's own words."""

    def __init__(self, cfg: GemmConfig, arch: ArchProfile, step: int):
        self.cfg = cfg
        self.arch = arch
        self.step = step
        self.ops: list[Op] = []
        self.uses: dict[str, int] = {}
        """Producer ops issued so far per barrier: the next op's logical ``use``."""
        self.tcgen05 = arch.mma_kind == "tcgen05"
        self.a_bytes = cfg.BLK_M * cfg.BLK_K * F16_BYTES
        self.b_bytes = cfg.BLK_N * cfg.BLK_K * F16_BYTES

    def ns(self, ns: int) -> int:
        return round(ns * self.arch.clock_ghz)

    def next_use(self, barrier: str) -> int:
        use = self.uses.get(barrier, 0)
        self.uses[barrier] = use + 1
        return use

    # -- prologue / epilogue -------------------------------------------------
    def prologue(self, barriers: list[str]) -> None:
        for name in barriers:
            self.ops.append(MbarInit(barrier=name, issuer="one"))
        if self.tcgen05:
            self.ops.append(TmemAlloc(columns=TMEM_ALLOC_COLUMNS, issuer="warp0"))
        self.ops += [Fence(fence="proxy_async"), Fence(fence="mbarrier_init"), CtaSync()]

    def teardown(self) -> None:
        self.ops.append(CtaSync())
        if self.tcgen05:
            self.ops.append(TmemDealloc(columns=TMEM_ALLOC_COLUMNS, issuer="warp0"))

    def accumulator_to_registers(self, tile: tuple[int, int]) -> None:
        """TMEM -> registers (each warp its 32 lanes); on wgmma it is already there."""
        if self.tcgen05:
            final = acc_content(tile, self.cfg.k_tiles - 1)
            self.ops += [
                TmemLoad(bytes=32 * self.cfg.BLK_N * ACC_BYTES, src=Access("acc", 0, final, WARP_PART), tile=tile),
                WaitLd(tile=tile),
            ]

    def store_direct(self, tile: tuple[int, int]) -> None:
        """v1-v3: each thread writes its output row straight to global memory."""
        self.accumulator_to_registers(tile)
        self.ops.append(GlobalStore(bytes=32 * self.cfg.BLK_N * F16_BYTES, tile=tile))

    def store_tma(self, tile: tuple[int, int], cta_wide: bool = True) -> None:
        """v4+: registers -> Dsmem -> one thread's TMA store, drained before reuse.

        ``cta_wide=False``: the leading sync covers the warpgroup only (a named
        barrier), for kernels whose CTA has warps outside it (ws's producer)."""
        cfg = self.cfg
        self.accumulator_to_registers(tile)
        self.ops += [
            CtaSync() if cta_wide else NamedBarrierSync(barrier_id=STORE_SYNC_ID, threads=128),
            SmemStore(bytes=32 * cfg.BLK_N * F16_BYTES, dst=Access("D", 0, d_content(tile), WARP_PART), tile=tile),
            Fence(fence="proxy_async"),
            NamedBarrierSync(barrier_id=STORE_SYNC_ID, threads=128),
            TmaStore(bytes=cfg.BLK_M * cfg.BLK_N * F16_BYTES, src=Access("D", 0, d_content(tile)), issuer="one", tile=tile),
            BulkCommit(issuer="one"),
        ]
        if not cfg.skip_store_wait:
            self.ops.append(BulkWait(n=0, issuer="one"))
        self.ops.append(NamedBarrierSync(barrier_id=STORE_SYNC_ID, threads=128))

    # -- K-loop pieces --------------------------------------------------------
    def thread_copy(self, tile: tuple[int, int], k: int) -> None:
        m, n = tile
        self.ops += [
            ThreadCopy(bytes=self.a_bytes // WARPS, dst=Access("A", 0, a_tile(m, k), WARP_PART), src=a_tile(m, k), tile=tile, k=k),
            ThreadCopy(bytes=self.b_bytes // WARPS, dst=Access("B", 0, b_tile(n, k), WARP_PART), src=b_tile(n, k), tile=tile, k=k),
            CtaSync(k=k),
        ]

    def tma_load(self, stage: int, tile: tuple[int, int], k: int) -> int:
        """One k-tile of A and B into ``stage``; returns the barrier use it fills."""
        cfg = self.cfg
        m, n = tile
        bar = f"tma_bar[{stage}]"
        use = self.next_use(bar)
        who = cfg.tma_issuer
        if cfg.producer_delay_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.producer_delay_ns), issuer=who, tile=tile, k=k, label="producer delay"))
        self.ops += [
            TmaLoad(barrier=bar, use=use, bytes=self.a_bytes, dst=Access("A", stage, a_tile(m, k)), issuer=who, tile=tile, k=k),
            TmaLoad(barrier=bar, use=use, bytes=self.b_bytes, dst=Access("B", stage, b_tile(n, k)), issuer=who, tile=tile, k=k),
            ArriveExpectTx(barrier=bar, use=use, bytes=cfg.stage_bytes + cfg.expect_tx_delta, issuer=who, tile=tile, k=k),
        ]
        return use

    def wait(self, barrier: str, parity: int, use: int, which: str, tile: tuple[int, int], k: int,
             lag: bool = True) -> None:
        """A wait on ``barrier``; ``wait_parity_flip == which`` flips its parity and, with
        ``lag``, the lagging warp sleeps before it."""
        cfg = self.cfg
        if lag and cfg.lag_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.lag_ns), warp=cfg.lag_warp, tile=tile, k=k, label="lagging warp"))
        if cfg.wait_parity_flip == which:
            parity ^= 1
        self.ops.append(Wait(barrier=barrier, parity=parity, use=use, tile=tile, k=k))

    def mma(self, stage: int, tile: tuple[int, int], k: int, barrier: str = "mma_bar") -> int:
        """The MMA of k-tile k on ``stage`` and its completion arrival on ``barrier``."""
        cfg = self.cfg
        m, n = tile
        use = self.next_use(barrier)
        if cfg.consumer_delay_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.consumer_delay_ns), issuer="one", tile=tile, k=k, label="consumer delay"))
        reads = (Access("A", stage, a_tile(m, k)), Access("B", stage, b_tile(n, k)))
        shape = dict(m=cfg.BLK_M, n=cfg.BLK_N, k_elems=cfg.BLK_K, accumulate=k != 0, tile=tile, k=k)
        if self.tcgen05:
            self.ops += [
                Mma(reads=reads, writes=(Access("acc", 0, acc_content(tile, k)),), issuer="one", **shape),
                MmaCommit(barrier=barrier, use=use, issuer="one", tile=tile, k=k),
            ]
        else:
            self.ops += [
                Wgmma(reads=reads, **shape),
                WgmmaCommit(tile=tile, k=k),
                WgmmaWait(n=0, tile=tile, k=k),
                Arrive(barrier=barrier, use=use, issuer="one", tile=tile, k=k),
            ]
        return use


# ---------------------------------------------------------------------------- steps


def _storage(cfg: GemmConfig, arch: ArchProfile, stages: int, tma: bool) -> tuple[tuple[BarrierDecl, ...], tuple[BufferDecl, ...]]:
    barriers = [BarrierDecl("mma_bar", 1)]
    if tma:
        barriers += [BarrierDecl(f"tma_bar[{s}]", 1) for s in range(stages)]
    parts = 1 if tma else WARPS  # thread copies write a quarter per warp
    buffers = [
        BufferDecl("A", "smem", stages, cfg.BLK_M * cfg.BLK_K * F16_BYTES, parts=parts, align=1024),
        BufferDecl("B", "smem", stages, cfg.BLK_N * cfg.BLK_K * F16_BYTES, parts=parts, align=1024),
    ]
    if tma:
        buffers.append(BufferDecl("D", "smem", 1, cfg.BLK_M * cfg.BLK_N * F16_BYTES, parts=WARPS, align=1024))
    if arch.mma_kind == "tcgen05":
        buffers.append(BufferDecl("acc", "tmem", 1, columns=cfg.BLK_N, parts=WARPS))
    return tuple(barriers), tuple(buffers)


def _schedule(step: int, cfg: GemmConfig, arch: ArchProfile, stages: int, tma: bool, ctas: list[list[Op]]) -> Schedule:
    barriers, buffers = _storage(cfg, arch, stages, tma)
    return Schedule(
        name=f"hgemm_v{step}",
        arch=arch.name,
        barriers=barriers,
        buffers=buffers,
        roles=(RoleDecl("wg", WARPS),),
        ctas=tuple(CtaProgram(i, (tuple(ops),)) for i, ops in enumerate(ctas)),
        config=cfg.to_dict(),
    )


def _grid(cfg: GemmConfig) -> list[tuple[int, int]]:
    """``bx, by = T.cta_id([M // BLK_M, N // BLK_N])``: x fastest."""
    return [(bx, by) for by in range(cfg.n_tiles) for bx in range(cfg.m_tiles)]


def _thread_copy_steps(step: int, cfg: GemmConfig, arch: ArchProfile) -> Schedule:
    """v1-v3: thread copies into one SMEM stage, one MMA barrier."""
    ctas = []
    for tile in _grid(cfg):
        c = _Cta(cfg, arch, step)
        c.prologue(["mma_bar"])
        phase_mma = 0
        for k in range(cfg.k_tiles):
            c.thread_copy(tile, k)
            use = c.mma(0, tile, k)
            c.wait("mma_bar", phase_mma, use, "mma", tile, k)
            if not cfg.skip_mma_phase_flip:
                phase_mma ^= 1
        c.store_direct(tile)
        c.teardown()
        ctas.append(c.ops)
    return _schedule(step, cfg, arch, 1, False, ctas)


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


def build_v4(cfg: GemmConfig) -> Schedule:
    """Step 4: TMA loads with ``arrive.expect_tx``, load-then-wait, TMA store."""
    arch = load_profile(cfg.arch)
    ctas = []
    for tile in _grid(cfg):
        c = _Cta(cfg, arch, 4)
        c.prologue(["mma_bar", "tma_bar[0]"])
        phase_tma = phase_mma = 0
        for k in range(cfg.k_tiles):
            use = c.tma_load(0, tile, k)
            c.wait("tma_bar[0]", phase_tma, use, "tma", tile, k)
            use = c.mma(0, tile, k)
            c.wait("mma_bar", phase_mma, use, "mma", tile, k)
            phase_tma ^= 1
            if not cfg.skip_mma_phase_flip:
                phase_mma ^= 1
        c.store_tma(tile)
        c.teardown()
        ctas.append(c.ops)
    return _schedule(4, cfg, arch, 1, True, ctas)


class _Ring:
    """A position in the stage ring: stage index and the parity to wait on.
    ``advance`` is the only place the parity flips (when the index wraps), as in
    CUTLASS's ``PipelineState``; consumers start at parity 0, producers waiting
    for free stages at 1.  ``flip=False`` leaves the flip out (a bug knob)."""

    def __init__(self, depth: int, phase: int = 0, flip: bool = True):
        self.depth, self.index, self.phase, self.flip = depth, 0, phase, flip

    def advance(self) -> None:
        self.index += 1
        if self.index == self.depth:
            self.index = 0
            if self.flip:
                self.phase ^= 1


def _k_loop_ring(c: _Cta, tile: tuple[int, int], ring: _Ring, phase_mma: int) -> int:
    """The step-5 K loop for one tile, starting at the ring's current position.

    With a fresh ring (index 0, phase 0) it is the seed's code exactly:
    ``stage = k % PIPE_DEPTH`` and ``phase_tma ^= 1`` when ``stage == PIPE_DEPTH - 1``.
    Returns the MMA phase after the tile."""
    cfg = c.cfg
    kt, depth = cfg.k_tiles, cfg.PIPE_DEPTH
    first = ring.index
    stage_of = lambda kk: (first + kk) % depth  # noqa: E731
    use_of: dict[int, int] = {}
    for kk in range(min(depth, kt)):  # prefetch
        use_of[kk] = c.tma_load(stage_of(kk), tile, kk)
    for k in range(kt):
        stage = ring.index
        c.wait(f"tma_bar[{stage}]", ring.phase, use_of.pop(k), "tma", tile, k)
        use = c.mma(stage, tile, k)
        c.wait("mma_bar", phase_mma, use, "mma", tile, k)
        if not cfg.skip_mma_phase_flip:
            phase_mma ^= 1
        if k + depth < kt:
            use_of[k + depth] = c.tma_load(stage, tile, k + depth)
        ring.advance()
    return phase_mma


def build_v5(cfg: GemmConfig) -> Schedule:
    """Step 5: a PIPE_DEPTH ring of SMEM stages with prefetch."""
    arch = load_profile(cfg.arch)
    ctas = []
    tma_bars = [f"tma_bar[{s}]" for s in range(cfg.PIPE_DEPTH)]
    for tile in _grid(cfg):
        c = _Cta(cfg, arch, 5)
        c.prologue(["mma_bar", *tma_bars])
        _k_loop_ring(c, tile, _Ring(cfg.PIPE_DEPTH), 0)
        c.store_tma(tile)
        c.teardown()
        ctas.append(c.ops)
    return _schedule(5, cfg, arch, cfg.PIPE_DEPTH, True, ctas)


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
    n_ctas = cfg.sm_count or arch.sm_count
    tma_bars = [f"tma_bar[{s}]" for s in range(cfg.PIPE_DEPTH)]
    ctas = []
    for tiles in persistent_tiles(cfg.m_tiles, cfg.n_tiles, n_ctas, cfg.l2_group_size):
        c = _Cta(cfg, arch, 6)
        c.prologue(["mma_bar", *tma_bars])
        ring, phase_mma = _Ring(cfg.PIPE_DEPTH), 0
        for tile in tiles:
            if cfg.reset_phase_per_tile:
                ring, phase_mma = _Ring(cfg.PIPE_DEPTH), 0
            phase_mma = _k_loop_ring(c, tile, ring, phase_mma)
            c.store_tma(tile)
            c.ops.append(CtaSync(tile=tile))
        c.teardown()
        ctas.append(c.ops)
    return _schedule(6, cfg, arch, cfg.PIPE_DEPTH, True, ctas)


def _gc_paused(build):
    """Builders allocate hundreds of thousands of frozen ops: keep the collector out."""

    @functools.wraps(build)
    def wrapper(cfg: GemmConfig) -> Schedule:
        with gc_paused():
            return build(cfg)

    return wrapper


BUILDERS = {
    name: _gc_paused(fn)
    for name, fn in (("hgemm_v1", build_v1), ("hgemm_v2", build_v2), ("hgemm_v3", build_v3),
                     ("hgemm_v4", build_v4), ("hgemm_v5", build_v5), ("hgemm_v6", build_v6))
}
