"""One CTA's ops of the seed's hgemm kernels, in the kernels' own words: :class:`GemmCta`.

Shared by the seed's steps (``seed_gemm``) and the warp-specialized kernel (``ws_gemm``):
prologue and teardown, the thread-copy and TMA loads of a k-tile, the MMA, the epilogues,
and the waits with the kernels' bug and delay knobs applied where the kernels apply them.
Barrier ops go through a :class:`protosim.pipeline.Pipeline`, which writes each op's
logical ``use``; the knobs change only what the code computes (the parity, the stage).
On an arch whose MMA is ``wgmma`` (H200) the tcgen05 MMA + commit becomes the Hopper port
of ``kernels/``: every warp issues the wgmma, commits, ``wait_group 0``, then one thread
arrives -- the stand-in for ``tcgen05.commit`` (shared/docs/DEVICE.md).

The two kernel families write the same protocol with different barrier inits, thread
barriers and fences; :class:`KernelFamily` holds those differences in one place (the seed's
``kernels/tirx/seed_sm100.py`` on tcgen05 archs, ``kernels/tirx/hopper.py`` otherwise), so
the builders match the kernels op for op (``tests/test_builders_mirror_kernels.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from protosim._dataclass_cache import DataclassCache
from protosim import ptxas
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

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

WARPS = 4
TMEM_ALLOC_COLUMNS = 512  # the seed allocates all 512 columns
MMA_BAR = "mma_bar"
MMA_ROLE = "mma"
"""The warpgroup that issues the MMAs (all of v1-v6; ws's consumer), named as the kernels'
timeout records name it (``kernels/spec.py`` ``ROLE_NAMES``), so a simulated hang and a
silicon one read alike (``protosim.hangs``)."""
PRODUCER_ROLE = "producer"  # ws's TMA warp: ROLE_NAMES[1]
CTA = None
"""A sync id meaning the CTA-wide ``bar.sync 0`` (``T.cuda.cta_sync()``), not a named barrier."""


@dataclass(frozen=True)
class KernelFamily:
    """What the seed's kernels and the Hopper kernels write differently around one protocol.

    A sync id is a named barrier of the MMA warpgroup (``T.cuda.warpgroup_sync(id)``:
    ``bar.sync id, 128``) or :data:`CTA` (``T.cuda.cta_sync()``).  Quoted code is the
    kernel's own line; :func:`family` picks the family from the arch."""

    name: str
    init_every_stage: bool
    """Hopper's one kernel body inits ``full_bar[s]`` and ``empty_bar[s]`` for every stage,
    then ``mma_bar``, whichever the step uses (hopper.py ``for s in T.serial(PIPE):
    ...init(full_bar[s])... init(empty_bar[s])``, then ``init(mma_bar[0])``); the seed inits
    ``mma_bar`` then each ``tma_bar[s]`` of a TMA step (seed_sm100.py v4-v6
    ``init(mma_bar.ptr_to([0]))``, ``init(tma_bar.ptr_to([s]))``), ``mma_bar`` alone in v1-v3."""
    prologue_fences: tuple[str, ...]
    """Before the prologue's ``cta_sync``: the seed ``fence.proxy.async_.shared__cta()`` and
    ``fence.mbarrier_init.release.cluster()``; Hopper only the latter."""
    copy_sync: int | None
    """After v1-v3's thread copies (and their ``fence.proxy.async``): the seed ``cta_sync()``,
    Hopper ``warpgroup_sync(MMA_SYNC_BAR)`` = 2 (hopper.py ``thread_copy``)."""
    store_entry_sync: int | None
    """First sync of the TMA-store epilogue: the seed ``cta_sync()`` after ``tcgen05.wait::ld``,
    Hopper ``warpgroup_sync(STORE_BAR)`` = 1 (hopper.py ``store_tma``)."""
    store_sync: int
    """The epilogue's syncs around the store: the seed ``warpgroup_sync(10)``, Hopper
    ``warpgroup_sync(STORE_BAR)`` = 1."""
    tile_end_sync: int | None
    """v6's end of a tile: the seed ``cta_sync()``, Hopper ``warpgroup_sync(MMA_SYNC_BAR)`` = 2."""
    tcgen05_fences: bool
    """The seed's added tcgen05 fences: ``tcgen05.fence__after_thread_sync()`` after every
    wait on ``mma_bar``, and ``fence__before_thread_sync()`` / ``fence__after_thread_sync()``
    around v6's end-of-tile ``cta_sync`` (seed_sm100.py v6 ``epilogue``)."""
    clamp_grid: bool
    """v6's persistent grid: Hopper launches ``min(sm_count, tiles)`` CTAs (kernels/spec.py
    ``grid_ctas``), the seed ``sm_count`` whatever the tiles (seed_sm100.py ``SM_COUNT``)."""
    copy_load_bytes: int
    """v1-v3's thread copy as compiled (ptxas 13.0 SASS, results/silicon/microbench/
    2026-12-01_thread_copy_sass.md): Hopper's swizzled element-wise copy lowers to 2-byte
    ``LDG.E.U16`` per element; the seed's to 16-byte ``LDG.E.128``.  How many a lane keeps in
    flight follows from the width (:mod:`protosim.ptxas`)."""
    copy_regs_extra: int
    """Registers per thread of v1-v3 beyond the fp32 accumulator the thread holds (ptxas 13.0,
    ``cuobjdump -res-usage``): Hopper BLK_N + 32 (48/64/96/168 at BLK_N 16/32/64/128: 168, not 160,
    at 128 -- the same 3 CTAs per SM); the seed accumulates in TMEM and its epilogue's
    ``tcgen05.ld`` holds BLK_N registers, 136 at BLK_N 128 (one build: BLK_N + 8)."""

    direct_store_bytes: int
    """v1-v3's epilogue straight to global memory as compiled: Hopper's ``D[r, c] = acc``
    per element lowers to one 2-byte ``STG.E.U16`` each (ptxas 13.0: 128 per thread at BLK_N
    128); the seed's ``Tx.copy`` of a thread's row to 16-byte ``STG.E.128`` (16 per thread)
    (results/silicon/microbench/2026-12-01_h200_global_store.md)."""

    epilogue_store: str
    """How the TMA steps' epilogue writes the accumulator into the D tile (the lowered CUDA of
    each family): ``fragment_rows`` -- Hopper: each thread's wgmma fragment, one 32-bit store per
    fp16 pair, into row-major rows (bank-conflicted: :func:`protosim.ptxas.fragment_store_ways`);
    ``swizzled_rows`` -- the seed: each thread one row (``tcgen05.ld`` 32x32b), 16-byte stores
    into the 128B-swizzled tile (conflict-free)."""

    def epilogue_store_ways(self, cfg: GemmConfig) -> int:
        """The bank conflict of the epilogue's shared-memory store (:mod:`protosim.ptxas`)."""
        if self.epilogue_store == "fragment_rows":
            return ptxas.fragment_store_ways(cfg.BLK_N * F16_BYTES)
        # lane l writes 16 bytes of row l (128-byte rows), chunk index XOR (l % 8)
        return ptxas.bank_ways([lane * 128 + (lane % 8) * 16 for lane in range(32)], 16)

    def copy_regs(self, cfg: GemmConfig) -> int:
        """Registers per thread of the v1-v3 kernel for ``cfg``: the accumulator's fp32 registers
        (in registers on Hopper, TMEM columns read back on the seed) plus the family's extra."""
        return cfg.BLK_M * cfg.BLK_N // (32 * WARPS) + self.copy_regs_extra


SEED = KernelFamily("seed_sm100", init_every_stage=False, prologue_fences=("proxy_async", "mbarrier_init"),
                    copy_sync=CTA, store_entry_sync=CTA, store_sync=10, tile_end_sync=CTA, tcgen05_fences=True,
                    clamp_grid=False, copy_load_bytes=16, copy_regs_extra=8, direct_store_bytes=16,
                    epilogue_store="swizzled_rows")
HOPPER = KernelFamily("hopper", init_every_stage=True, prologue_fences=("mbarrier_init",),
                      copy_sync=2, store_entry_sync=1, store_sync=1, tile_end_sync=2, tcgen05_fences=False,
                      clamp_grid=True, copy_load_bytes=2, copy_regs_extra=32, direct_store_bytes=2,
                      epilogue_store="fragment_rows")


def family(arch: ArchProfile) -> KernelFamily:
    """The seed's kernels on tcgen05 archs; the Hopper port (wgmma) everywhere else."""
    return SEED if arch.mma_kind == "tcgen05" else HOPPER


def a_tile(m: int, k: int) -> str:
    return f"A[m={m},k={k}]"


def b_tile(n: int, k: int) -> str:
    return f"B[n={n},k={k}]"


@functools.lru_cache(maxsize=1 << 16)
def operand(buffer: str, stage: int, content: str, part: int | None = None) -> Access:
    """``Access(buffer, stage, content, part)``, one object for each value.  Every CTA that reads an
    A or B k-tile names it twice (its TMA load, its MMA): the full chip's v6 at 4096^3 held 264 k
    such accesses of 6 k values, with a content string each -- 35 MB of the schedule's 129 MB
    (``benchmarks/memory_by_stage.py``).  An access is a frozen value: sharing one object changes
    nothing a replay or a schedule hash reads."""
    return Access(buffer, stage, content, part)


def acc_content(tile: tuple[int, int], k: int) -> str:
    return f"acc{tile}@k={k}"


def d_content(tile: tuple[int, int]) -> str:
    return f"D{tile}"


def tma_bar(stage: int) -> str:
    """The full barrier of a stage (the kernels' ``tma_bar`` / ``full_bar``)."""
    return f"tma_bar[{stage}]"


def empty_bar(stage: int) -> str:
    """A stage's empty barrier (Hopper's ``empty_bar``: ws's MMA releases the stage on it)."""
    return f"empty_bar[{stage}]"


def barrier_inits(fam: KernelFamily, stages: int, tma: bool) -> list[str]:
    """The barriers a kernel inits, in its order (:attr:`KernelFamily.init_every_stage`)."""
    if fam.init_every_stage:
        return [name for s in range(stages) for name in (tma_bar(s), empty_bar(s))] + [MMA_BAR]
    return [MMA_BAR, *(tma_bar(s) for s in range(stages) if tma)]


def persistent_ctas(cfg: GemmConfig, arch: ArchProfile) -> int:
    """CTAs of a persistent grid: one per SM (or ``sm_count``), clamped to the tiles where
    the kernel clamps (:attr:`KernelFamily.clamp_grid`)."""
    n = cfg.sm_count or arch.sm_count
    return min(n, cfg.m_tiles * cfg.n_tiles) if family(arch).clamp_grid else n


def storage(cfg: GemmConfig, arch: ArchProfile, stages: int, tma: bool) -> tuple[tuple[BarrierDecl, ...],
                                                                                tuple[BufferDecl, ...]]:
    """The kernel's barriers (:func:`barrier_inits`, each of count 1) and buffers (A and B
    stages, the output tile D, TMEM accumulator on tcgen05)."""
    barriers = [BarrierDecl(name, 1) for name in barrier_inits(family(arch), stages, tma)]
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
        self.family = family(arch)
        self.a_bytes = cfg.BLK_M * cfg.BLK_K * F16_BYTES
        self.b_bytes = cfg.BLK_N * cfg.BLK_K * F16_BYTES
        self.tx_bytes = cfg.stage_bytes + cfg.expect_tx_delta
        """What each stage's ``arrive.expect_tx`` announces (one int for the CTA's every fill)."""

    def ns(self, ns: int) -> int:
        return round(ns * self.arch.clock_ghz)

    def ring(self, stages: int) -> Pipeline:
        """The TMA ring of ``stages`` stages, filled and read by this warpgroup alone."""
        return Pipeline([tma_bar(s) for s in range(stages)], producer=self.ops.append)

    def mma_done(self) -> Pipeline:
        """``mma_bar`` as a one-stage ring: the MMA's completion fills it (``tcgen05.commit``,
        or thread 0's arrive after ``wait_group 0`` on Hopper) and the warpgroup waits on it."""
        return Pipeline([MMA_BAR], producer=self.ops.append, fill="mma_commit" if self.tcgen05 else "arrive")

    def sync(self, sync_id: int | None, **tags) -> Op:
        """``cta_sync()`` for :data:`CTA`, else the MMA warpgroup's ``warpgroup_sync(id)``."""
        if sync_id is CTA:
            return CtaSync(**tags)
        return NamedBarrierSync(barrier_id=sync_id, threads=128, **tags)

    # -- prologue / epilogue -------------------------------------------------
    def prologue(self, stages: int, tma: bool) -> None:
        """Thread 0 inits the barriers (:func:`barrier_inits`), warp 0 allocates TMEM
        (tcgen05), then :meth:`prologue_sync`."""
        for name in barrier_inits(self.family, stages, tma):
            self.ops.append(MbarInit(barrier=name, issuer="one"))
        if self.tcgen05:
            self.ops.append(TmemAlloc(columns=TMEM_ALLOC_COLUMNS, issuer="warp0"))
        self.prologue_sync()

    def prologue_sync(self) -> None:
        """The fences every thread runs after the inits, and the CTA-wide sync."""
        self.ops += [*(Fence(fence=f) for f in self.family.prologue_fences), CtaSync()]

    def teardown(self) -> None:
        self.ops.append(CtaSync())
        if self.tcgen05:
            self.ops.append(TmemDealloc(columns=TMEM_ALLOC_COLUMNS, issuer="warp0"))

    def after_mma_wait(self, tile: tuple[int, int], k: int) -> None:
        """After a wait on ``mma_bar``: the seed's ``tcgen05.fence__after_thread_sync()``."""
        if self.family.tcgen05_fences:
            self.ops.append(Fence(fence="tcgen05_after_thread_sync", tile=tile, k=k))

    def tile_end(self, tile: tuple[int, int]) -> None:
        """v6's end of a tile: the seed's ``tcgen05.fence__before_thread_sync(); cta_sync();
        tcgen05.fence__after_thread_sync()``, Hopper's ``warpgroup_sync(MMA_SYNC_BAR)``."""
        fences = self.family.tcgen05_fences
        if fences:
            self.ops.append(Fence(fence="tcgen05_before_thread_sync", tile=tile))
        self.ops.append(self.sync(self.family.tile_end_sync, tile=tile))
        if fences:
            self.ops.append(Fence(fence="tcgen05_after_thread_sync", tile=tile))

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
        self.ops.append(GlobalStore(bytes=32 * self.cfg.BLK_N * F16_BYTES, store_bytes=self.family.direct_store_bytes,
                                    tile=tile))

    def store_tma(self, tile: tuple[int, int]) -> None:
        """v4+: registers -> Dsmem -> one thread's TMA store, drained before reuse; the
        syncs are the family's (:attr:`KernelFamily.store_entry_sync`, ``store_sync``)."""
        cfg = self.cfg
        fam = self.family
        self.accumulator_to_registers(tile)
        self.ops += [
            self.sync(fam.store_entry_sync),
            SmemStore(bytes=32 * cfg.BLK_N * F16_BYTES, dst=Access("D", 0, d_content(tile), WARP_PART), tile=tile,
                      bank_ways=fam.epilogue_store_ways(cfg)),
            Fence(fence="proxy_async"),
            self.sync(fam.store_sync),
            TmaStore(bytes=cfg.BLK_M * cfg.BLK_N * F16_BYTES, src=Access("D", 0, d_content(tile)), issuer="one", tile=tile),
            BulkCommit(issuer="one"),
        ]
        if not cfg.skip_store_wait:
            self.ops.append(BulkWait(n=0, issuer="one"))
        self.ops.append(self.sync(fam.store_sync))

    # -- K-loop pieces --------------------------------------------------------
    def thread_copy(self, tile: tuple[int, int], k: int) -> None:
        m, n = tile
        width = self.family.copy_load_bytes  # in_flight: stated for the A + B stream (protosim.ptxas.with_copy_streams)
        self.ops += [
            ThreadCopy(bytes=self.a_bytes // WARPS, dst=Access("A", 0, a_tile(m, k), WARP_PART), src=a_tile(m, k), tile=tile, k=k,
                       load_bytes=width),
            ThreadCopy(bytes=self.b_bytes // WARPS, dst=Access("B", 0, b_tile(n, k), WARP_PART), src=b_tile(n, k), tile=tile, k=k,
                       load_bytes=width),
            Fence(fence="proxy_async", tile=tile, k=k),  # thread-written SMEM read by the MMA (async proxy)
            self.sync(self.family.copy_sync, k=k),
        ]

    def tma_load(self, ring: Pipeline, at: PipelineState, tile: tuple[int, int], k: int) -> None:
        """One k-tile of A and B into stage ``at.index``: two TMA loads, then
        ``arrive.expect_tx`` of the bytes the code announces (``expect_tx_delta`` off)."""
        cfg = self.cfg
        m, n = tile
        who = cfg.tma_issuer
        if cfg.producer_delay_ns:
            self.ops.append(Sleep(cycles=self.ns(cfg.producer_delay_ns), issuer=who, tile=tile, k=k, label="producer delay"))
        loads = ((self.a_bytes, operand("A", at.index, a_tile(m, k))), (self.b_bytes, operand("B", at.index, b_tile(n, k))))
        ring.producer_commit(at, self.tx_bytes, loads, issuer=who, tile=tile, k=k)

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
        reads = (operand("A", stage, a_tile(m, k)), operand("B", stage, b_tile(n, k)))
        shape = dict(m=cfg.BLK_M, n=cfg.BLK_N, k_elems=cfg.BLK_K, tile=tile, k=k)
        if self.tcgen05:  # the seed: gemm_async(..., accum=(k != 0))
            self.ops.append(Mma(reads=reads, writes=(Access("acc", 0, acc_content(tile, k)),), issuer="one",
                                accumulate=k != 0, **shape))
        else:  # Hopper zeroes the register accumulator per tile (zero_acc()), then every wgmma passes scale-d = T.bool(True)
            self.ops += [Wgmma(reads=reads, accumulate=True, **shape), WgmmaCommit(tile=tile, k=k), WgmmaWait(n=0, tile=tile, k=k)]


_DATACLASSES.save()  # after the module's last dataclass
