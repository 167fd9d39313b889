"""The book's steps 7, 8 and 9 on b200 as schedules, op for op: ``hgemm_v7``, ``hgemm_v8``, ``hgemm_v9``.

Each builder mirrors one TIRx kernel of ``kernels/tirx/`` (compile-only for ``sm_100a``; the book's
text is ``shared/docs/book/gemm_steps_7_9.md``):

``hgemm_v7`` -- ``ws_sm100.py``, warp specialization in one CTA
    Two warpgroups, 256 threads, ``sm_count`` (default 148) persistent CTAs walking
    ``ClusterPersistentScheduler2D`` tiles (:func:`persistent_tiles`), every role on its own copy of
    the tile sequence.  Roles, in warp order: ``writeback`` (warpgroup 0), ``mma`` (wg 1 warp 0),
    ``idle0`` / ``idle1`` (wg 1 warps 1-2: they only take part in the CTA-wide syncs), ``producer``
    (wg 1 warp 3).  Four barriers: ``tma2mma[s]`` (full, count 1), ``mma2tma[s]`` (empty, count 1),
    ``mma2ld[0]`` (accumulator full, count 1), ``ld2mma[0]`` (accumulator free, count 128).

    * writeback's thread 0 inits the barriers in that order, its warp 0 allocates all 512 TMEM
      columns; every warp: ``fence.proxy.async``, ``fence.mbarrier_init``, ``bar.sync 0``.
    * producer, one elected lane, per tile per k-tile: wait ``mma2tma[s]`` (phase 1 at start),
      TMA A and B into stage s on ``tma2mma[s]``, ``arrive.expect_tx`` of the stage's bytes.
    * mma, one elected lane, per tile: wait ``ld2mma[0]`` (phase 1 at start: TMEM starts free),
      ``tcgen05.fence::after_thread_sync``; per k-tile wait ``tma2mma[s]``, ``tcgen05.mma``
      (``accumulate = k != 0``), ``tcgen05.commit`` onto ``mma2tma[s]``; after the K loop
      ``tcgen05.commit`` onto ``mma2ld[0]``.
    * writeback, 128 threads, per tile: wait ``mma2ld[0]``, ``fence::after_thread_sync``,
      ``tcgen05.ld`` of the BLK_N columns (in ``_ld_chunk`` pieces), ``wait::ld``,
      ``fence::before_thread_sync``, every thread arrives on ``ld2mma[0]``; registers -> Dsmem,
      ``fence.proxy.async``, ``bar.sync 10, 128``, one thread's TMA store + commit_group +
      wait_group 0, ``bar.sync 10, 128``.
    * teardown: ``bar.sync 0`` in every warp, then writeback warp 0 frees TMEM.

``hgemm_v8`` -- ``cluster_sm100.py``, the 2-CTA cluster
    Clusters of two CTAs along M (``Schedule.cluster = 2``; ``cluster_m = 2`` in the config), each
    pair on ``2*BLK_M x 2*BLK_N`` cluster tiles.  Step 7's roles and barriers, with:

    * both CTAs init their barriers (``ld2mma[0]`` counts ``128 * 2``: both CTAs' writeback
      threads), allocate TMEM with ``cta_group::2`` and meet at ``barrier.cluster`` (arrive +
      wait, every warp) instead of ``bar.sync 0``;
    * producer of CTA r: its own A slice (m tile ``2*mi + r``) and B slice (n tile ``2*ni + r``)
      into its own SMEM, completing on CTA 0's ``tma2mma[s]`` (``TmaLoad.barrier_cta = 0``); only
      CTA 0's lane arms that barrier, for both CTAs' bytes (``2 * stage_bytes``);
    * mma, CTA 0 only: ``tcgen05.mma.cta_group::2`` (m = 256 across the pair, n = 2*BLK_N) reading
      both CTAs' A and B slices and writing both CTAs' TMEM columns ``[0, 2*BLK_N)``; its commits
      onto ``mma2tma[s]`` and ``mma2ld[0]`` are multicast to both CTAs (mask 3);
    * writeback of CTA r: the 2*BLK_N columns in two BLK_N-column chunks (ld, wait::ld, Dsmem,
      store between two ``bar.sync 10``), then ``fence::before_thread_sync`` and every thread
      arrives on CTA 0's ``ld2mma[0]`` (``Arrive.cta = 0``);
    * teardown: ``barrier.cluster`` in every warp, then ``tcgen05.dealloc.cta_group::2``.

``hgemm_v9`` -- ``consumers_sm100.py``, two MMA consumers on step 8's cluster
    Three warpgroups (384 threads).  Roles: ``writeback0`` (wg 0), ``writeback1`` (wg 1),
    ``mma0`` / ``mma1`` (wg 2 warps 0-1, CTA 0 only issues), ``idle`` (wg 2 warp 2), ``producer``
    (wg 2 warp 3).  Cluster tiles of ``4*BLK_M x 2*BLK_N``: consumer c's A rows in CTA r are m tile
    ``4*mi + 2*c + r`` (stage part c of ``A``), both consumers share the B slices; consumer c
    accumulates into TMEM columns ``[c*2*BLK_N, (c+1)*2*BLK_N)``.  ``mma2tma[s]`` counts 2 (one
    commit per consumer); ``mma2ld[c]`` and ``ld2mma[c]`` are per consumer; writeback c stores
    ``EPI_N = min(64, 2*BLK_N)``-column chunks through ``Dsmem[c]`` (stage c of ``D``) on named
    barrier ``10 + c``.

Logical tags: every ring goes through a :class:`protosim.pipeline.Pipeline` (the SMEM ring
``tma2mma``/``mma2tma``, and per consumer the accumulator ring ``mma2ld``/``ld2mma``), which
counts ``use`` per role and barrier in program order, so a knob changes what the code passes
(a parity, a byte count, a stage) and never the intent.  ``Access.content`` comes from the
coordinates: ``A[m=..,k=..]`` / ``B[n=..,k=..]`` in BLK units, the accumulator by the tile it
sums (``acc(m, n)@k=..`` in step 7, the pair's cluster tile ``acc[cluster mi,ni]@k=..`` in
steps 8-9 -- one 2-CTA MMA writes the same partial sum into both CTAs' TMEM), ``D(m, n)`` for
a stored output tile (with a column range when a chunk is narrower than BLK_N).  ``tile`` is the
output tile (BLK_M x BLK_N units) an op works for; ``k`` the k-tile.

Bug knobs, where the kernels apply them (each kernel's docstring lists its own):

* ``skip_mma_phase_flip`` -- the producers' empty-ring state never flips its phase;
* ``wait_parity_flip`` -- ``"mma"``: the producers' ``mma2tma`` waits, ``"tma"``: the MMA
  warps' ``tma2mma`` waits pass the other parity;
* ``expect_tx_delta`` -- bytes added to the ``arrive.expect_tx`` (CTA 0's, in a cluster);
* ``skip_store_wait`` -- no ``cp.async.bulk.wait_group 0`` after the TMA stores;
* ``reset_phase_per_tile`` (v7, v9) -- every role re-initialises its pipeline states (stage 0,
  start phase) at the top of each tile;
* cluster knobs (v8, v9): ``multicast_skip_rank`` (that rank never issues its TMA loads: CTA 0's
  ``tma2mma`` waits for bytes that never come), ``release_unscaled`` (``ld2mma`` counts one
  CTA's 128 writeback threads instead of both CTAs' 256), ``expect_tx_local`` (CTA 0 arms
  ``tma2mma`` with its own stage bytes only), ``skip_exit_sync`` (``bar.sync 0`` instead of
  ``barrier.cluster`` before the TMEM dealloc and exit).

The cluster shape: v8 and v9 are clusters of two CTAs along M by construction (``cta_group::2``),
so their configs must say so -- ``cluster_m = 2``, ``cluster_n = 1`` -- and anything else is
refused (as the kernels refuse it): the config then describes the launch, and
``multicast_skip_rank`` ranges over the pair's ranks 0 and 1.  v7 is one CTA: ``cluster_m =
cluster_n = 1``.  Other archs than b200 are refused: the kernels are ``sm_100a`` (tcgen05, TMEM).

``tests/test_book_builders.py`` holds each builder to the schedule the TIRx frontend reads out of
its kernel (``kernels.tirx.extracted``), op for op -- role names included, so a hang reads alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from protosim.arch import load_profile
from protosim.builders.gemm_cta import a_tile, b_tile, operand
from protosim.builders.seed_gemm import persistent_tiles
from protosim.config import ACC_BYTES, DELAY_KNOBS, F16_BYTES, ConfigError, GemmConfig
from protosim.gcpause import gc_paused
from protosim.ir import (
    WARP_PART,
    Access,
    BarrierDecl,
    BufferDecl,
    BulkCommit,
    BulkWait,
    ClusterArrive,
    ClusterWait,
    CtaProgram,
    CtaSync,
    Fence,
    MbarInit,
    Mma,
    NamedBarrierSync,
    Op,
    RoleDecl,
    Schedule,
    SmemStore,
    TmaLoad,
    TmaStore,
    TmemAlloc,
    TmemDealloc,
    TmemLoad,
    WaitLd,
)
from protosim.pipeline import Pipeline, PipelineState
from protosim.ptxas import as_compiled

ARCH = "b200"
SM_COUNT = 148
"""Persistent CTAs when ``sm_count`` is unset (the kernels' ``B200_SM_COUNT``)."""
TMEM_COLS = 512
"""Every step allocates all of the SM's TMEM columns."""
SMEM_LIMIT = 232448
"""Dynamic shared memory a CTA may have on sm_100 (the kernels' ``SMEM_LIMIT``)."""
POOL_BASE = 1024
"""The kernels' SMEM pool: ``tmem_addr`` and the barriers below 1024 bytes, then the stages."""
WB_BAR = 10
"""Named barrier of writeback warpgroup c: ``bar.sync 10 + c, 128``."""
WB_THREADS = 128
CTA_GROUP = 2
EPI_N = 64
"""Step 9's writeback chunk (``min(EPI_N, 2*BLK_N)`` columns)."""
PRODUCER_START = PipelineState.producer_start
CONSUMER_START = PipelineState.consumer_start

BASE_KNOBS = ("skip_mma_phase_flip", "expect_tx_delta", "wait_parity_flip", "skip_store_wait")
CLUSTER_KNOBS = ("multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync")
KNOBS = {
    7: (*BASE_KNOBS, "reset_phase_per_tile"),  # ws_sm100.HONOURED_KNOBS
    8: (*BASE_KNOBS, *CLUSTER_KNOBS),  # cluster_sm100.HONOURED_KNOBS (it refuses reset_phase_per_tile)
    9: (*BASE_KNOBS, "reset_phase_per_tile", *CLUSTER_KNOBS),  # consumers_sm100.HONOURED_KNOBS
}
"""The bug knobs each step's kernel builds (and so this builder honours)."""
KERNEL = {7: "kernels/tirx/ws_sm100.py", 8: "kernels/tirx/cluster_sm100.py", 9: "kernels/tirx/consumers_sm100.py"}


@dataclass(frozen=True)
class Step:
    """What one of the book's steps is made of."""

    number: int
    pair: int
    """CTAs per cluster and the MMA's ``cta_group``: 1 (step 7) or 2."""
    consumers: int
    """MMA consumers (and writeback warpgroups): 1, or 2 in step 9."""

    @property
    def name(self) -> str:
        return f"hgemm_v{self.number}"


STEPS = {7: Step(7, 1, 1), 8: Step(8, CTA_GROUP, 1), 9: Step(9, CTA_GROUP, 2)}


def ld_chunk(cols: int) -> int:
    """Columns per ``tcgen05.ld`` (``Tx.wg.copy_async`` of TMEM): a power of two, at most 128
    (the kernels' ``seed_sm100._ld_chunk``)."""
    chunk = 128
    while cols % chunk:
        chunk //= 2
    return chunk


def epi_cols(step: Step, cfg: GemmConfig) -> int:
    """Columns of one writeback chunk (one Dsmem fill and TMA store): step 7 the whole BLK_N,
    step 8 BLK_N of the pair's 2*BLK_N, step 9 ``min(64, 2*BLK_N)``."""
    return min(EPI_N, step.pair * cfg.BLK_N) if step.consumers > 1 else cfg.BLK_N


def stage_bytes(step: Step, cfg: GemmConfig) -> int:
    """Bytes one k-tile brings into one CTA: its A block(s) and its B slice."""
    return (step.consumers * cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * F16_BYTES


def _swizzle_ok(cols: int, field: str) -> None:
    """The kernels' ``_swizzle``: a row of ``cols`` fp16 must fill a 32, 64 or 128 B swizzle atom."""
    if (cols * F16_BYTES) % 32:
        raise ConfigError(field, f"{cols} fp16 elements = {cols * F16_BYTES} B rows fit no swizzle atom (32/64/128 B); "
                                 f"use a multiple of 16")


def check(step: Step, cfg: GemmConfig) -> int:
    """Raise :class:`ConfigError` for what the step's kernel does not build (naming the field
    and the fix); return the grid's CTA count."""
    cfg.validate()
    if cfg.arch != ARCH:
        raise ConfigError("arch", f"{cfg.arch}: {step.name} mirrors the book's sm_100a kernel ({KERNEL[step.number]}: "
                                  f"tcgen05, TMEM); use arch = \"{ARCH}\"")
    honoured = KNOBS[step.number]
    default = GemmConfig()
    for knob in (*cfg.bug_knobs, *(k for k in DELAY_KNOBS if getattr(cfg, k) != getattr(default, k))):
        if knob not in honoured:
            raise ConfigError(knob, f"{step.name} builds only the knobs {', '.join(honoured)}; {knob}="
                                    f"{getattr(cfg, knob)!r} is not modelled in {KERNEL[step.number]}")
    if step.pair == 1:
        for dim in ("cluster_m", "cluster_n"):
            if getattr(cfg, dim) != 1:
                raise ConfigError(dim, f"{getattr(cfg, dim)}: {step.name} is one CTA per cluster; set {dim} = 1 (the "
                                       f"book's 2-CTA cluster is hgemm_v8)")
    else:
        if cfg.cluster_m != CTA_GROUP:
            raise ConfigError("cluster_m", f"{cfg.cluster_m}: {step.name} runs clusters of {CTA_GROUP} CTAs along M "
                                           f"(tcgen05 cta_group::2); set cluster_m = {CTA_GROUP}")
        if cfg.cluster_n != 1:
            raise ConfigError("cluster_n", f"{cfg.cluster_n}: {step.name}'s cluster is {CTA_GROUP} CTAs along M only; "
                                           f"set cluster_n = 1")
    _swizzle_ok(cfg.BLK_K, "BLK_K")
    epi = epi_cols(step, cfg)
    _swizzle_ok(epi, "BLK_N")
    if step.consumers == 1:  # the seed port's budget: the stages and one BLK_M x BLK_N Dsmem
        smem = POOL_BASE + cfg.PIPE_DEPTH * (cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * F16_BYTES + cfg.BLK_M * cfg.BLK_N * F16_BYTES
    else:
        smem = POOL_BASE + cfg.PIPE_DEPTH * stage_bytes(step, cfg) + step.consumers * cfg.BLK_M * epi * F16_BYTES
    if step.pair > 1:
        if cfg.BLK_N > 128:
            raise ConfigError("BLK_N", f"{cfg.BLK_N}: the 2-CTA MMA's N is 2*BLK_N and tcgen05 allows at most 256; set "
                                       f"BLK_N <= 128")
        for dim, rows in (("M", step.consumers * CTA_GROUP * cfg.BLK_M), ("N", CTA_GROUP * cfg.BLK_N)):
            if getattr(cfg, dim) % rows:
                raise ConfigError(dim, f"{dim}={getattr(cfg, dim)} is not a multiple of {step.name}'s cluster tile's "
                                       f"{rows}; pick {dim} as a multiple of {rows}")
    if smem > SMEM_LIMIT:
        raise ConfigError("PIPE_DEPTH", f"{step.name} needs {smem} B of shared memory, over the {SMEM_LIMIT} B a CTA may "
                                        f"have on sm_100; lower PIPE_DEPTH or BLK_N/BLK_K")
    ctas = cfg.sm_count if cfg.sm_count is not None else SM_COUNT
    if ctas % step.pair:
        raise ConfigError("sm_count", f"{ctas}: clusters of {step.pair} CTAs need an even CTA count")
    return ctas


# --------------------------------------------------------------------------- names


def tma2mma(s: int) -> str:
    return f"tma2mma[{s}]"


def mma2tma(s: int) -> str:
    return f"mma2tma[{s}]"


def mma2ld(c: int) -> str:
    return f"mma2ld[{c}]"


def ld2mma(c: int) -> str:
    return f"ld2mma[{c}]"


def acc_of(step: Step, cluster_tile: tuple[int, int], c: int, k: int) -> str:
    """The partial sum an MMA writes: the output tile's (step 7) or the pair's cluster tile's
    (steps 8-9: one 2-CTA MMA writes the same sum, in both CTAs' TMEM), through k-tile k."""
    if step.pair == 1:
        return f"acc{cluster_tile}@k={k}"
    consumer = f"#c{c}" if step.consumers > 1 else ""
    return f"acc[cluster {cluster_tile[0]},{cluster_tile[1]}]{consumer}@k={k}"


def d_of(tile: tuple[int, int], lo: int, width: int, blk_n: int) -> str:
    """The output data a store writes: tile ``D(m, n)``, or columns of it when a chunk is narrower."""
    return f"D{tile}" if width == blk_n else f"D{tile}[{lo}:{lo + width}]"


# --------------------------------------------------------------------------- one CTA


class BookCta:
    """The op streams of one CTA's roles, the rings they write through, and where the CTA sits
    in its cluster (``rank``)."""

    def __init__(self, step: Step, cfg: GemmConfig, rank: int):
        self.step, self.cfg, self.rank = step, cfg, rank
        self.wb: list[list[Op]] = [[] for _ in range(step.consumers)]
        self.mma: list[list[Op]] = [[] for _ in range(step.consumers)]
        self.idle: list[list[Op]] = [[] for _ in range(3 - step.consumers)]
        self.producer: list[Op] = []
        full = [tma2mma(s) for s in range(cfg.PIPE_DEPTH)]
        empty = [mma2tma(s) for s in range(cfg.PIPE_DEPTH)]
        unused: list[Op] = []  # the side of a ring a Pipeline is not used for
        self.ring = Pipeline(full, empty, producer=self.producer.append, consumer=unused.append, release="mma_commit")
        """The SMEM ring as the producer fills it (its ``produced`` counter)."""
        self.consumers = [Pipeline(full, empty, producer=unused.append, consumer=ops.append, release="mma_commit")
                          for ops in self.mma]
        """The SMEM ring as MMA consumer c reads and releases it (its own ``consumed`` counter)."""
        self.accs = [Pipeline([mma2ld(c)], [ld2mma(c)], producer=self.mma[c].append, consumer=self.wb[c].append,
                              fill="mma_commit", release="arrive") for c in range(step.consumers)]
        """Accumulator ring c: ``mma2ld[c]`` filled by consumer c's commit, ``ld2mma[c]`` released by writeback c."""
        self.a_bytes = cfg.BLK_M * cfg.BLK_K * F16_BYTES
        self.b_bytes = cfg.BLK_N * cfg.BLK_K * F16_BYTES
        self.mma_n = step.pair * cfg.BLK_N

    @property
    def clustered(self) -> bool:
        return self.step.pair > 1

    def roles(self) -> tuple[tuple[Op, ...], ...]:
        """In warp order: writeback warpgroup(s), MMA warp(s), idle warp(s), producer warp."""
        return tuple(as_compiled(tuple(ops)) for ops in (*self.wb, *self.mma, *self.idle, self.producer))

    def every_role(self) -> list[list[Op]]:
        return [*self.wb, *self.mma, *self.idle, self.producer]

    # -- prologue / teardown ----------------------------------------------------------
    def prologue(self, barriers: list[str]) -> None:
        """Thread 0 (writeback warpgroup 0, warp 0) inits the barriers, its warp allocates TMEM;
        every warp fences and meets the others (the CTA, or the cluster in steps 8-9)."""
        first = self.wb[0]
        first += [MbarInit(barrier=b, issuer="one") for b in barriers]
        first.append(TmemAlloc(columns=TMEM_COLS, issuer="warp0", cta_group=self.step.pair))
        for ops in self.every_role():
            ops += [Fence(fence="proxy_async"), Fence(fence="mbarrier_init")]
            ops += [ClusterArrive(), ClusterWait()] if self.clustered else [CtaSync()]

    def teardown(self) -> None:
        """Every warp meets (``barrier.cluster``; ``bar.sync 0`` in step 7 and with
        ``skip_exit_sync``), then writeback warpgroup 0's warp 0 frees TMEM."""
        for ops in self.every_role():
            ops += [ClusterArrive(), ClusterWait()] if self.clustered and not self.cfg.skip_exit_sync else [CtaSync()]
        self.wb[0].append(TmemDealloc(columns=TMEM_COLS, issuer="warp0", cta_group=self.step.pair))

    # -- roles -----------------------------------------------------------------------
    def run_producer(self, tiles: list[tuple[int, int]]) -> None:
        """One elected lane: per tile, per k-tile, wait for the stage to be free, load it."""
        cfg, step, ring = self.cfg, self.step, self.ring
        start = PRODUCER_START(cfg.PIPE_DEPTH)
        put = start
        wrong = 1 if cfg.wait_parity_flip == "mma" else 0
        arms = self.rank == 0  # the pair's CTA 0 arms tma2mma for both CTAs (step 7: the CTA itself)
        loads_here = cfg.multicast_skip_rank != self.rank
        per_cta = stage_bytes(step, cfg)
        announced = (per_cta if cfg.expect_tx_local else step.pair * per_cta) + cfg.expect_tx_delta
        for ct in tiles:
            if cfg.reset_phase_per_tile:
                put = start
            for k in range(cfg.k_tiles):
                tile = self.a_row(ct, 0), self.b_row(ct)
                ring.producer_acquire(put, parity=put.phase ^ wrong, issuer="one", tile=tile, k=k)
                loads = self.loads(ct, put.index, k) if loads_here else []
                if arms:
                    ring.producer_commit(put, announced, loads, issuer="one", cta=0 if self.clustered else None,
                                         tile=tile, k=k)
                else:  # CTA 1: its loads complete on CTA 0's barrier, which CTA 0 arms
                    use = ring.produced.take(tma2mma(put.index))
                    for nbytes, dst, src, fields in loads:
                        self.producer.append(TmaLoad(barrier=tma2mma(put.index), use=use, bytes=nbytes, dst=dst, src=src,
                                                     issuer="one", tile=tile, k=k, **fields))
                put = put.advance() if not cfg.skip_mma_phase_flip else self.advance_frozen(put)

    @staticmethod
    def advance_frozen(at: PipelineState) -> PipelineState:
        """``advance_frozen_phase``: the stage index wraps, the phase stays."""
        nxt = at.advance()
        return PipelineState(nxt.stages, nxt.index, at.phase, nxt.count)

    def a_row(self, ct: tuple[int, int], c: int) -> int:
        """The m tile (BLK_M units) of consumer c's A block in this CTA."""
        return ct[0] * self.step.consumers * self.step.pair + c * self.step.pair + self.rank

    def b_row(self, ct: tuple[int, int]) -> int:
        """The n tile (BLK_N units) of this CTA's B slice."""
        return ct[1] * self.step.pair + self.rank

    def loads(self, ct: tuple[int, int], s: int, k: int) -> list[tuple[int, Access, str, dict]]:
        """This CTA's TMA loads of k-tile k into stage s: A block(s), then its B slice; in a pair
        each completes on CTA 0's ``tma2mma[s]`` (``cta_group::2``)."""
        fields = {"barrier_cta": 0} if self.clustered else {}
        out = []
        for c in range(self.step.consumers):
            part = c if self.step.consumers > 1 else None
            out.append((self.a_bytes, operand("A", s, a_tile(self.a_row(ct, c), k), part), "", fields))
        out.append((self.b_bytes, operand("B", s, b_tile(self.b_row(ct), k)), "", fields))
        return out

    def run_mma(self, c: int, tiles: list[tuple[int, int]]) -> None:
        """MMA consumer c, one elected lane (CTA 0 only in a pair): per tile wait for its
        accumulator to be free, then per k-tile wait for the stage, multiply, release the stage;
        after the K loop, the accumulator is full."""
        cfg, step = self.cfg, self.step
        ops, ring, acc = self.mma[c], self.consumers[c], self.accs[c]
        wrong = 1 if cfg.wait_parity_flip == "tma" else 0
        both = tuple(range(step.pair)) if self.clustered else ()
        mstart, lstart = CONSUMER_START(cfg.PIPE_DEPTH), PRODUCER_START(1)
        get, ld = mstart, lstart
        for ct in tiles:
            if cfg.reset_phase_per_tile:
                get, ld = mstart, lstart
            tile = self.a_row(ct, c), self.b_row(ct)
            acc.producer_acquire(ld, issuer="one", tile=tile, k=0)
            ld = ld.advance()
            ops.append(Fence(fence="tcgen05_after_thread_sync", tile=tile))
            for k in range(cfg.k_tiles):
                ring.consumer_wait(get, parity=get.phase ^ wrong, issuer="one", tile=tile, k=k)
                ops.append(self.mma_op(c, ct, get.index, k, tile))
                ring.consumer_release(get, issuer="one", ranks=both, tile=tile, k=k)
                get = get.advance()
            fields = {"multicast": both} if both else {}
            acc.producer_commit(PipelineState(1), issuer="one", tile=tile, k=cfg.k_tiles - 1, **fields)

    def mma_op(self, c: int, ct: tuple[int, int], s: int, k: int, tile: tuple[int, int]) -> Mma:
        """``tcgen05.mma`` of k-tile k on stage s into consumer c's TMEM columns; in a pair one
        ``cta_group::2`` MMA over both CTAs' slices, writing both CTAs' TMEM."""
        cfg, step = self.cfg, self.step
        cols = (c * self.mma_n, (c + 1) * self.mma_n)
        content = acc_of(step, ct, c, k)
        part = c if step.consumers > 1 else None
        if not self.clustered:
            m, n = ct
            reads = (operand("A", s, a_tile(m, k)), operand("B", s, b_tile(n, k)))
            writes = (Access("acc", 0, content, columns=cols),)
        else:
            ranks = range(step.pair)
            reads = (*(Access("A", s, a_tile(self.a_row(ct, c) - self.rank + r, k), part, cta=r) for r in ranks),
                     *(Access("B", s, b_tile(ct[1] * step.pair + r, k), cta=r) for r in ranks))
            writes = tuple(Access("acc", 0, content, cta=r, columns=cols) for r in ranks)
        return Mma(m=step.pair * cfg.BLK_M, n=self.mma_n, k_elems=cfg.BLK_K, reads=reads, writes=writes,
                   accumulate=k != 0, cta_group=step.pair, issuer="one", tile=tile, k=k)

    def run_writeback(self, c: int, tiles: list[tuple[int, int]]) -> None:
        """Writeback warpgroup c (128 threads): per tile wait for accumulator c, read it out of
        TMEM chunk by chunk through Dsmem to one thread's TMA stores, and free it (step 7 right
        after the TMEM load, steps 8-9 after the last chunk, on CTA 0's ``ld2mma[c]``)."""
        cfg, step = self.cfg, self.step
        ops, acc = self.wb[c], self.accs[c]
        start = CONSUMER_START(1)
        at = start
        width = epi_cols(step, cfg)
        chunk = ld_chunk(width)
        to_cta0 = (0,) if self.clustered else ()
        for ct in tiles:
            if cfg.reset_phase_per_tile:
                at = start
            m = self.a_row(ct, c)
            n0 = ct[1] * step.pair  # the first n tile of the output columns (the pair's 2*BLK_N)
            final = acc_of(step, ct, c, cfg.k_tiles - 1)
            acc.consumer_wait(at, issuer="all", tile=(m, n0), k=cfg.k_tiles - 1)
            here = at
            at = at.advance()
            ops.append(Fence(fence="tcgen05_after_thread_sync", tile=(m, n0)))
            for i in range(self.mma_n // width):
                lo = c * self.mma_n + i * width  # TMEM column
                col = ct[1] * self.mma_n + i * width  # output column
                tile = (m, col // cfg.BLK_N)
                ops += [TmemLoad(bytes=32 * chunk * ACC_BYTES, src=Access("acc", 0, final, WARP_PART,
                                                                        columns=(lo + j, lo + j + chunk)), tile=tile)
                        for j in range(0, width, chunk)]
                ops.append(WaitLd(tile=tile))
                if not self.clustered:  # step 7: TMEM is free as soon as it is in registers
                    ops.append(Fence(fence="tcgen05_before_thread_sync", tile=tile))
                    acc.consumer_release(here, issuer="all", tile=tile)
                content = d_of(tile, col % cfg.BLK_N, width, cfg.BLK_N)
                ops += [
                    SmemStore(bytes=32 * width * F16_BYTES, dst=Access("D", c, content, WARP_PART), tile=tile),
                    Fence(fence="proxy_async", tile=tile),
                    NamedBarrierSync(barrier_id=WB_BAR + c, threads=WB_THREADS, tile=tile),
                    TmaStore(bytes=cfg.BLK_M * width * F16_BYTES, src=Access("D", c, content), issuer="one", tile=tile),
                    BulkCommit(issuer="one", tile=tile),
                ]
                if not cfg.skip_store_wait:
                    ops.append(BulkWait(n=0, issuer="one", tile=tile))
                ops.append(NamedBarrierSync(barrier_id=WB_BAR + c, threads=WB_THREADS, tile=tile))
            if self.clustered:  # every thread arrives on CTA 0's ld2mma[c]
                ops.append(Fence(fence="tcgen05_before_thread_sync", tile=(m, n0)))
                acc.consumer_release(here, issuer="all", ranks=to_cta0, tile=(m, n0))


# --------------------------------------------------------------------------- schedule


def storage(step: Step, cfg: GemmConfig) -> tuple[list[BarrierDecl], list[BufferDecl]]:
    """The barriers in the kernel's init order, with their counts, and the buffers."""
    depth, consumers = cfg.PIPE_DEPTH, step.consumers
    writebacks = 1 if cfg.release_unscaled else step.pair  # CTAs whose writeback threads arrive on ld2mma
    barriers = ([BarrierDecl(tma2mma(s), 1) for s in range(depth)]
                + [BarrierDecl(mma2tma(s), consumers) for s in range(depth)]
                + [BarrierDecl(mma2ld(c), 1) for c in range(consumers)]
                + [BarrierDecl(ld2mma(c), WB_THREADS * writebacks) for c in range(consumers)])
    width = epi_cols(step, cfg)
    buffers = [
        BufferDecl("A", "smem", depth, consumers * cfg.BLK_M * cfg.BLK_K * F16_BYTES, parts=consumers, align=1024),
        BufferDecl("B", "smem", depth, cfg.BLK_N * cfg.BLK_K * F16_BYTES, align=1024),
        BufferDecl("acc", "tmem", 1, columns=consumers * step.pair * cfg.BLK_N, parts=4),
        BufferDecl("D", "smem", consumers, cfg.BLK_M * width * F16_BYTES, parts=4, align=1024),
    ]
    return barriers, buffers


def role_decls(step: Step) -> tuple[RoleDecl, ...]:
    if step.consumers == 1:
        return (RoleDecl("writeback", 4), RoleDecl("mma", 1), RoleDecl("idle0", 1), RoleDecl("idle1", 1),
                RoleDecl("producer", 1))
    return (*(RoleDecl(f"writeback{c}", 4) for c in range(step.consumers)),
            *(RoleDecl(f"mma{c}", 1) for c in range(step.consumers)), RoleDecl("idle", 1), RoleDecl("producer", 1))


def build_step(number: int, cfg: GemmConfig) -> Schedule:
    step = STEPS[number]
    n_ctas = check(step, cfg)
    arch = load_profile(cfg.arch)
    pair = step.pair
    barriers, buffers = storage(step, cfg)
    cluster_tiles = persistent_tiles(cfg.m_tiles // (step.consumers * pair), cfg.n_tiles // pair, n_ctas // pair,
                                     cfg.l2_group_size)
    ctas = []
    for cluster, tiles in enumerate(cluster_tiles):
        for rank in range(pair):
            cta = BookCta(step, cfg, rank)
            cta.prologue([b.name for b in barriers])
            cta.run_producer(tiles)
            if rank == 0:  # in a pair only CTA 0 issues the MMAs (its ``if cbx == 0``)
                for c in range(step.consumers):
                    cta.run_mma(c, tiles)
            for c in range(step.consumers):
                cta.run_writeback(c, tiles)
            cta.teardown()
            ctas.append(CtaProgram(cluster * pair + rank, cta.roles()))
    return Schedule(
        name=step.name,
        arch=arch.name,
        barriers=tuple(barriers),
        buffers=tuple(buffers),
        roles=role_decls(step),
        ctas=tuple(ctas),
        l2_at_launch=cfg.l2_at_launch,
        config=cfg.to_dict(),
        cluster=pair,
    )


def estimate(number: int, cfg: GemmConfig, sm_count: int) -> int:
    """Ops of the step's schedule from its loop structure (within 1x..2.5x of the real count)."""
    step = STEPS[number]
    pair = step.pair
    ctas = cfg.sm_count or sm_count
    tiles = (cfg.m_tiles // (step.consumers * pair)) * (cfg.n_tiles // pair)
    per_k = 4 + 3 * step.consumers  # producer: wait, loads, expect; each MMA warp: wait, mma, commit
    chunks = step.pair * cfg.BLK_N // epi_cols(step, cfg)
    per_tile = step.consumers * (6 + chunks * 9)
    roles = 4 + step.consumers
    return pair * tiles * (cfg.k_tiles * per_k + per_tile) + ctas * (roles * 6 + 2 * cfg.PIPE_DEPTH + 2 * step.consumers + 2)


def build_v7(cfg: GemmConfig) -> Schedule:
    """Book step 7 (``kernels/tirx/ws_sm100.py``): producer, MMA and writeback warps in one CTA."""
    return build_step(7, cfg)


def build_v8(cfg: GemmConfig) -> Schedule:
    """Book step 8 (``kernels/tirx/cluster_sm100.py``): the 2-CTA cluster with ``cta_group::2`` MMAs."""
    return build_step(8, cfg)


def build_v9(cfg: GemmConfig) -> Schedule:
    """Book step 9 (``kernels/tirx/consumers_sm100.py``): two MMA consumers on step 8's cluster."""
    return build_step(9, cfg)


BUILDERS = {name: gc_paused()(fn) for name, fn in (("hgemm_v7", build_v7), ("hgemm_v8", build_v8), ("hgemm_v9", build_v9))}
