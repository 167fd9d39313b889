"""One CTA's ops of the seed's hgemm kernels, in the kernels' own words: :class:`GemmCta`.

Shared by the seed's steps (``seed_gemm``) and the warp-specialized kernel (``ws_gemm``):
prologue and teardown, the thread-copy and TMA loads of a k-tile, the MMA, the epilogues,
and the waits with the kernels' bug and delay knobs applied where the kernels apply them.
Barrier ops go through a :class:`protosim.pipeline.Pipeline`, which writes each op's
logical ``use``; the knobs change only what the code computes (the parity, the stage).
On an arch whose MMA is ``wgmma`` (H200) the tcgen05 MMA + commit becomes the Hopper port
of ``kernels/``: every warp issues the wgmma, commits, ``wait_group 0``, then one thread
arrives -- the stand-in for ``tcgen05.commit`` (shared/docs/DEVICE.md).
"""

from __future__ import annotations

from collections.abc import Callable

from protosim.arch import ArchProfile
from protosim.config import ACC_BYTES, F16_BYTES, GemmConfig
from protosim.ir import (
    WARP_PART,
    Access,
    BarrierDecl,
    BufferDecl,
    BulkCommit,
    BulkWait,
    CtaSync,
    Fence,
    GlobalStore,
    MbarInit,
    Mma,
    NamedBarrierSync,
    Op,
    Sleep,
    SmemStore,
    ThreadCopy,
    TmaStore,
    TmemAlloc,
    TmemDealloc,
    TmemLoad,
    WaitLd,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)
from protosim.pipeline import Pipeline, PipelineState

WARPS = 4
TMEM_ALLOC_COLUMNS = 512  # the seed allocates all 512 columns
STORE_SYNC_ID = 10  # T.cuda.warpgroup_sync(10)
MMA_BAR = "mma_bar"
MMA_ROLE = "mma"
"""The warpgroup that issues the MMAs (all of v1-v6; ws's consumer), named as the kernels'
timeout records name it (``kernels/spec.py`` ``ROLE_NAMES``), so a simulated hang and a
silicon one read alike (``protosim.hangs``)."""
PRODUCER_ROLE = "producer"  # ws's TMA warp: ROLE_NAMES[1]


def a_tile(m: int, k: int) -> str:
    return f"A[m={m},k={k}]"


def b_tile(n: int, k: int) -> str:
    return f"B[n={n},k={k}]"


def acc_content(tile: tuple[int, int], k: int) -> str:
    return f"acc{tile}@k={k}"


def d_content(tile: tuple[int, int]) -> str:
    return f"D{tile}"


def tma_bar(stage: int) -> str:
    """The full barrier of a stage (the kernels' ``tma_bar`` / ``full_bar``)."""
    return f"tma_bar[{stage}]"


def storage(cfg: GemmConfig, arch: ArchProfile, stages: int, tma: bool) -> tuple[tuple[BarrierDecl, ...],
                                                                                tuple[BufferDecl, ...]]:
    """The seed's barriers (``mma_bar``, a ``tma_bar`` per stage) and buffers (A and B
    stages, the output tile D, TMEM accumulator on tcgen05)."""
    barriers = [BarrierDecl(MMA_BAR, 1)]
    if tma:
        barriers += [BarrierDecl(tma_bar(s), 1) for s in range(stages)]
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


class GemmCta:
    """Writes the op stream of one CTA's warpgroup (or one role of it), in the kernel's own words."""

    def __init__(self, cfg: GemmConfig, arch: ArchProfile):
        self.cfg = cfg
        self.arch = arch
        self.ops: list[Op] = []
        self.tcgen05 = arch.mma_kind == "tcgen05"
        self.a_bytes = cfg.BLK_M * cfg.BLK_K * F16_BYTES
        self.b_bytes = cfg.BLK_N * cfg.BLK_K * F16_BYTES

    def ns(self, ns: int) -> int:
        return round(ns * self.arch.clock_ghz)

    def ring(self, stages: int) -> Pipeline:
        """The TMA ring of ``stages`` stages, filled and read by this warpgroup alone."""
        return Pipeline([tma_bar(s) for s in range(stages)], producer=self.ops.append)

    def mma_done(self) -> Pipeline:
        """``mma_bar`` as a one-stage ring: the MMA's completion fills it (``tcgen05.commit``,
        or thread 0's arrive after ``wait_group 0`` on Hopper) and the warpgroup waits on it."""
        return Pipeline([MMA_BAR], producer=self.ops.append, fill="mma_commit" if self.tcgen05 else "arrive")

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

    def tma_load(self, ring: Pipeline, at: PipelineState, tile: tuple[int, int], k: int) -> None:
        """One k-tile of A and B into stage ``at.index``: two TMA loads, then
        ``arrive.expect_tx`` of the bytes the code announces (``expect_tx_delta`` off)."""
        cfg = self.cfg
        m, n = tile
        who = cfg.tma_issuer
        if cfg.producer_delay_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.producer_delay_ns), issuer=who, tile=tile, k=k, label="producer delay"))
        loads = ((self.a_bytes, Access("A", at.index, a_tile(m, k))), (self.b_bytes, Access("B", at.index, b_tile(n, k))))
        ring.producer_commit(at, cfg.stage_bytes + cfg.expect_tx_delta, loads, issuer=who, tile=tile, k=k)

    def wait(self, wait: Callable[..., int], at: PipelineState, which: str, tile: tuple[int, int], k: int,
             parity: int | None = None, lag: bool = True) -> None:
        """A wait written by ``wait`` (a pipeline's ``consumer_wait`` / ``producer_acquire``)
        at ``at``, passing ``parity`` (default: ``at.phase``); ``wait_parity_flip == which``
        flips it and, with ``lag``, the lagging warp sleeps before it."""
        cfg = self.cfg
        if lag and cfg.lag_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.lag_ns), warp=cfg.lag_warp, tile=tile, k=k, label="lagging warp"))
        parity = at.phase if parity is None else parity
        if cfg.wait_parity_flip == which:
            parity ^= 1
        wait(at, parity=parity, tile=tile, k=k)

    def mma(self, stage: int, tile: tuple[int, int], k: int) -> None:
        """The MMA of k-tile k on ``stage``; on wgmma also its commit and ``wait_group 0``.
        The completion arrival is the caller's (a pipeline's commit or release)."""
        cfg = self.cfg
        m, n = tile
        if cfg.consumer_delay_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.consumer_delay_ns), issuer="one", tile=tile, k=k, label="consumer delay"))
        reads = (Access("A", stage, a_tile(m, k)), Access("B", stage, b_tile(n, k)))
        shape = dict(m=cfg.BLK_M, n=cfg.BLK_N, k_elems=cfg.BLK_K, accumulate=k != 0, tile=tile, k=k)
        if self.tcgen05:
            self.ops.append(Mma(reads=reads, writes=(Access("acc", 0, acc_content(tile, k)),), issuer="one", **shape))
        else:
            self.ops += [Wgmma(reads=reads, **shape), WgmmaCommit(tile=tile, k=k), WgmmaWait(n=0, tile=tile, k=k)]
