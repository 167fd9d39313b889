"""The schedule IR: what a kernel does, as plain data.

A :class:`Schedule` declares storage (mbarriers, shared-memory and TMEM buffers)
and *roles* (groups of warps running one program), then gives, per CTA, each
role's ops in program order -- the straight-line trace of the kernel with loops
unrolled and phase variables already evaluated.  A schedule is what a frontend
produces (hand-written builder, TIRx extractor, TTGIR reader) and all the engine
consumes; nothing downstream knows where it came from.

Ops carry *logical tags* that do not depend on any bug: ``use`` is the index of
the barrier phase an op belongs to by the protocol's intent (the k-th load into
stage s is use k of that stage's barrier), ``Access.content`` names the data a
write produces or a read expects (``"A[m=0,k=3]"``), ``tile`` names the output
tile.  Checkers compare what happened with these tags: a wait for use 5 that
returned while only 5 phases (0..4) had completed returned early.

*Issuer rules* say which threads of a role execute an op, mirroring the source:

* ``"all"`` -- every thread (every warp executes it, 32 threads each);
* ``"warp0"`` -- every thread of the role's first warp;
* ``"one"`` -- one thread (``tid == 0``, or ``elect_sync`` inside ``warp_id == 0``);
* ``"each_warp"`` -- one elected thread in *every* warp (``elect_sync`` without a
  warp guard: the seed's four-TMA-issuers bug).

Everything here is a frozen dataclass whose repr is valid Python, and a schedule
round-trips through JSON (:func:`to_json` / :func:`from_json`) with a stable
content hash (:func:`content_hash`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import weakref
from dataclasses import field
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from protosim._dataclass_cache import DataclassCache
from protosim.gcpause import gc_paused

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass
"""``dataclasses.dataclass``, its generated methods' bytecode cached beside the .pyc (the same
classes: protosim._dataclass_cache says why; it saves ~25 ms of every start)."""

Issuer = Literal["all", "warp0", "one", "each_warp"]
ISSUERS: tuple[str, ...] = ("all", "warp0", "one", "each_warp")
SCHEMA = 1


class ScheduleError(ValueError):
    """A schedule that cannot be replayed; the message names the op and the fix."""


# --------------------------------------------------------------------------- storage


@dataclass(frozen=True, slots=True)
class BarrierDecl:
    """One mbarrier per CTA (arrays are spelled out: ``tma_bar[0]``, ``tma_bar[1]``)."""

    name: str
    count: int
    """Expected arrivals per phase, as passed to ``mbarrier.init``."""


@dataclass(frozen=True, slots=True)
class BufferDecl:
    """A buffer with ``stages`` independent slots, per CTA.

    ``space="smem"`` buffers cost ``bytes`` of shared memory per stage;
    ``space="tmem"`` buffers cost ``columns`` TMEM columns per stage.  ``parts``
    is how many disjoint pieces threads write separately (a 128-row tile written
    by four warps has 4 parts); a TMA or MMA access covers all parts.
    """

    name: str
    space: Literal["smem", "tmem"]
    stages: int = 1
    bytes: int = 0
    columns: int = 0
    parts: int = 1
    align: int = 128
    """Alignment the base needs (1024 for 128B-swizzled TMA tiles)."""


@dataclass(frozen=True, slots=True)
class RoleDecl:
    """A group of ``warps`` consecutive warps running one program."""

    name: str
    warps: int


WARP_PART = -1
"""``Access.part`` meaning "the part numbered like the executing warp" (warp w of the
role writes rows 32w..32w+31), so one op serves all four warps."""


@dataclass(frozen=True, slots=True)
class Access:
    """One stage (or one part of one stage) of a buffer, and the data it holds."""

    buffer: str
    stage: int = 0
    content: str = ""
    part: int | None = None
    """``None``: the whole stage; ``WARP_PART``: the executing warp's part."""
    cta: int | None = None
    """Cluster rank of the CTA whose buffer this is (``mapa`` / ``shared::cluster``: a DSMEM
    access, a 2-CTA MMA's peer operand); ``None``: the executing CTA's own."""
    columns: tuple[int, int] | None = None
    """TMEM only: the column range ``[lo, hi)`` of the stage it covers (``None``: all of it),
    so two accesses conflict only where their ranges overlap."""


# --------------------------------------------------------------------------- ops


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """Base of all ops.  ``issuer`` says who executes it; the rest are tags."""

    kind: ClassVar[str] = "op"
    unit: ClassVar[str] = ""
    """The hardware unit that executes it -- and the engine module whose handler replays
    it (``protosim.engine.units``): ``mbarrier``, ``tma``, ``tensor_core``, ``tmem``,
    ``lsu`` (thread and async copies) or ``sync`` (bar.sync, fences, sleeps)."""
    needs: ClassVar[str | None] = None
    """A unit not every arch has (``tcgen05``, ``wgmma``, ``tma``): ``ArchProfile.unsupported``."""
    global_io: ClassVar[str | None] = None
    """``read`` / ``write``: the op moves bytes from / to global memory (the L2 model)."""
    per_warp: ClassVar[bool] = False
    """``bytes`` is each executing warp's share (thread copies), not the whole transfer."""
    issuer: Issuer = "all"
    tile: tuple[int, int] | None = None
    k: int | None = None
    label: str = ""

    def accesses(self) -> tuple[Access, ...]:
        """Every buffer access the op makes (reads and writes)."""
        return ()

    def global_traffic(self) -> str | None:
        """What this op, as given, moves to or from global memory: its class's ``global_io``
        (a masked-off copy overrides it: it moves nothing)."""
        return self.global_io


@dataclass(frozen=True, slots=True, kw_only=True)
class MbarInit(Op):
    """``mbarrier.init`` with the declared count."""

    kind: ClassVar[str] = "mbar_init"
    unit: ClassVar[str] = "mbarrier"
    barrier: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Arrive(Op):
    """``mbarrier.arrive`` by each executing thread, ``count`` arrivals each."""

    kind: ClassVar[str] = "arrive"
    unit: ClassVar[str] = "mbarrier"
    barrier: str
    use: int
    count: int = 1
    cta: int | None = None
    """Cluster rank of the CTA whose barrier it is (``mbarrier.arrive.shared::cluster`` on a
    ``mapa``-ed address); ``None``: the executing CTA's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectTx(Op):
    """``mbarrier.expect_tx``."""

    kind: ClassVar[str] = "expect_tx"
    unit: ClassVar[str] = "mbarrier"
    barrier: str
    use: int
    bytes: int
    cta: int | None = None
    """Cluster rank of the barrier's CTA, as for :class:`Arrive`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ArriveExpectTx(Op):
    """``mbarrier.arrive.expect_tx``: expect ``bytes``, then arrive once."""

    kind: ClassVar[str] = "arrive_expect_tx"
    unit: ClassVar[str] = "mbarrier"
    barrier: str
    use: int
    bytes: int
    cta: int | None = None
    """Cluster rank of the barrier's CTA, as for :class:`Arrive`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait(Op):
    """``try_wait.parity`` in a loop until it succeeds (blocking)."""

    kind: ClassVar[str] = "wait"
    unit: ClassVar[str] = "mbarrier"
    barrier: str
    parity: int
    use: int
    """The phase this wait is for, by the protocol's intent."""
    computed_address: bool = False
    """The code computes the barrier's address at run time before the first try (a ring stage's
    barrier in TVM's Hopper kernels: ``S2UR SR_CgaCtaId`` -> ``ULEA`` -> ``LEA``), which costs
    the arch's ``wait_address_cycles`` whether or not the phase is complete."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TmaLoad(Op):
    """``cp.async.bulk.tensor`` global -> shared, completing ``bytes`` on ``barrier``."""

    kind: ClassVar[str] = "tma_load"
    unit: ClassVar[str] = "tma"
    needs: ClassVar[str | None] = "tma"
    global_io: ClassVar[str | None] = "read"
    barrier: str
    use: int
    bytes: int
    dst: Access
    src: str = ""
    """Global tile id (``"A[m=0,k=3]"``); the L2 model keys on it.  Defaults to dst.content."""
    multicast: tuple[int, ...] = ()
    """``.multicast::cluster``: the cluster ranks whose shared memory receives the bytes, each
    at ``dst``'s CTA-relative offset, and whose ``barrier`` (same offset) gets the
    complete_tx.  Empty: only ``dst``'s CTA."""
    barrier_cta: int | None = None
    """``.cta_group::2``: the rank whose ``barrier`` receives the complete_tx (the pair's
    leader), while the bytes land in ``dst``'s CTA.  ``None``: the destination's own."""

    def accesses(self) -> tuple[Access, ...]:
        if not self.multicast:
            return (self.dst,)
        return tuple(dataclasses.replace(self.dst, cta=r) for r in self.multicast)


@dataclass(frozen=True, slots=True, kw_only=True)
class TmaStore(Op):
    """``cp.async.bulk.tensor`` shared -> global; tracked by the issuing thread's bulk groups."""

    kind: ClassVar[str] = "tma_store"
    unit: ClassVar[str] = "tma"
    needs: ClassVar[str | None] = "tma"
    global_io: ClassVar[str | None] = "write"
    bytes: int
    src: Access

    def accesses(self) -> tuple[Access, ...]:
        return (self.src,)


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkCommit(Op):
    """``cp.async.bulk.commit_group``."""

    kind: ClassVar[str] = "bulk_commit"
    unit: ClassVar[str] = "tma"
    needs: ClassVar[str | None] = "tma"


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkWait(Op):
    """``cp.async.bulk.wait_group{.read} n``."""

    kind: ClassVar[str] = "bulk_wait"
    unit: ClassVar[str] = "tma"
    needs: ClassVar[str | None] = "tma"
    n: int = 0
    read: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadCopy(Op):
    """Synchronous global -> shared copy by the executing warps (``Tx.cta.copy``).

    Each executing warp copies ``bytes`` into ``dst`` (usually its own part), as the compiled
    code does it: every lane loads ``load_bytes`` per ``ld.global`` and stores each value to
    shared memory once it has arrived, keeping at most ``in_flight`` loads outstanding (how
    far ptxas hoisted the loads above the stores).  ``in_flight = 0``: no limit stated, every
    load in flight at once.  The timing rule is docs/semantics.md "Thread copies"."""

    kind: ClassVar[str] = "thread_copy"
    unit: ClassVar[str] = "lsu"
    global_io: ClassVar[str | None] = "read"
    per_warp: ClassVar[bool] = True
    bytes: int
    dst: Access
    src: str = ""
    load_bytes: int = 16
    """Bytes one lane loads per instruction: 16 for a 128-bit vector load, 2 for the
    element-wise fp16 copy TVM lowers ``Tx.cta.copy`` to (``ld.global.nc.u16``)."""
    in_flight: float = 0
    """Loads a lane keeps outstanding on average (its memory-level parallelism: the stream's
    loads over the rounds of load latency its compiled code waits); 0 = all of them."""

    @property
    def loads_per_lane(self) -> float:
        """``ld.global`` instructions each of the warp's 32 lanes executes for ``bytes``."""
        return self.bytes / (32 * self.load_bytes)

    def accesses(self) -> tuple[Access, ...]:
        return (self.dst,)


@dataclass(frozen=True, slots=True, kw_only=True)
class SmemStore(Op):
    """Registers -> shared memory (``st.shared``) by each executing warp.

    ``bank_ways``: how many times over the store's instructions hit their busiest bank (an
    n-way bank conflict replays each instruction n times); 1 = conflict-free.  It follows from
    the lanes' addresses (:func:`protosim.ptxas.bank_ways`); the timing rule is
    docs/semantics.md "Shared-memory bank conflicts"."""

    kind: ClassVar[str] = "smem_store"
    unit: ClassVar[str] = "lsu"
    per_warp: ClassVar[bool] = True
    bytes: int
    dst: Access
    bank_ways: int = 1

    def accesses(self) -> tuple[Access, ...]:
        return (self.dst,)


@dataclass(frozen=True, slots=True, kw_only=True)
class CpAsync(Op):
    """``cp.async`` global -> shared by each executing warp (Triton's
    ``ttg.async_copy_global_to_local``): asynchronous; it joins the warp's open
    cp.async group, which ``CpAsyncCommit`` closes and ``CpAsyncWait`` waits for."""

    kind: ClassVar[str] = "cp_async"
    unit: ClassVar[str] = "lsu"
    global_io: ClassVar[str | None] = "read"
    per_warp: ClassVar[bool] = True
    bytes: int
    dst: Access
    src: str = ""
    zero_fill: bool = False
    """Every lane's mask is off (Triton's pipelined loads past the last k-iteration): the copy
    writes zeros into shared memory and reads no global memory (PTX cp.async, src-size 0)."""

    def accesses(self) -> tuple[Access, ...]:
        return (self.dst,)

    def global_traffic(self) -> str | None:
        return None if self.zero_fill else "read"


@dataclass(frozen=True, slots=True, kw_only=True)
class CpAsyncCommit(Op):
    """``cp.async.commit_group`` (``ttg.async_commit_group``)."""

    kind: ClassVar[str] = "cp_async_commit"
    unit: ClassVar[str] = "lsu"


@dataclass(frozen=True, slots=True, kw_only=True)
class CpAsyncWait(Op):
    """``cp.async.wait_group n`` (``ttg.async_wait {num = n}``): at most ``n`` of the
    warp's committed groups may still be in flight when it returns."""

    kind: ClassVar[str] = "cp_async_wait"
    unit: ClassVar[str] = "lsu"
    n: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalLoad(Op):
    """Shared memory -> registers by each executing warp (``ttg.local_load``, lowered to
    ``ldmatrix`` / ``ld.shared``); synchronous for the warp."""

    kind: ClassVar[str] = "local_load"
    unit: ClassVar[str] = "lsu"
    per_warp: ClassVar[bool] = True
    bytes: int
    src: Access

    def accesses(self) -> tuple[Access, ...]:
        return (self.src,)


@dataclass(frozen=True, slots=True, kw_only=True)
class MmaSync(Op):
    """``mma.sync`` on register fragments (``tt.dot`` with an NVIDIA MMA v2 layout): no
    shared memory, so only its time is modelled."""

    kind: ClassVar[str] = "mma_sync"
    unit: ClassVar[str] = "tensor_core"
    m: int
    n: int
    k_elems: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalStore(Op):
    """Registers -> global memory by each executing warp (the v1-v3 epilogue).

    ``store_bytes``: bytes one lane writes per ``st.global`` (1 .. 16), so the op is
    ``bytes / (lanes x store_bytes)`` warp store instructions.  An SM issues those at a fixed
    cost per instruction whatever their width, and the chip's L2 takes so many per cycle
    (docs/semantics.md "Global stores"): the seed's Hopper epilogue, 2-byte stores per element,
    takes 8x the instructions of 16-byte ones."""

    kind: ClassVar[str] = "global_store"
    unit: ClassVar[str] = "lsu"
    global_io: ClassVar[str | None] = "write"
    per_warp: ClassVar[bool] = True
    bytes: int
    store_bytes: int = 16
    memory_bytes: int | None = None
    """Bytes of distinct, unmasked elements the warp's share writes, where they differ from
    ``bytes`` (what the L2 and DRAM take; the instructions are ``bytes``' all the same)."""
    lines: float | None = None
    """Distinct 128-byte lines one warp store instruction touches, where a frontend counted them:
    up to one more than ``32 x store_bytes / 128``, contiguous lanes; more, lanes apart within one
    run of adjacent lines.  None: not counted, or lanes spread over rows (docs/semantics.md
    "Global stores": each has its measured rate)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalLoad(Op):
    """Global memory -> registers (``ld.global``) by each executing warp: Triton's ``tt.load``.

    The warp issues its ``bytes / (lanes x load_bytes)`` load instructions and moves on (in-order
    issue does not wait for data); the registers fill one load latency later, and the warp's
    first instruction that reads them waits there (:class:`GlobalLoadWait`, the scoreboard).
    ``src`` names the global data read (the L2 model's key).  The timing rule is
    docs/semantics.md "Global loads into registers"."""

    kind: ClassVar[str] = "global_load"
    unit: ClassVar[str] = "lsu"
    global_io: ClassVar[str | None] = "read"
    per_warp: ClassVar[bool] = True
    bytes: int
    src: str
    load_bytes: int = 16
    """Bytes one lane loads per instruction (1 .. 16)."""
    memory_bytes: int | None = None
    """Bytes of distinct, unmasked elements the warp's share reads, where they differ from
    ``bytes``: what the L2 and DRAM serve (lanes that name one address share its bytes; a
    masked-off lane reads nothing), while the instructions are ``bytes``' all the same."""
    in_flight: int = 0
    """Of a lane's ``bytes / 32 / load_bytes`` loads, how many are out at once (0: all): ptxas may
    issue a tile's loads one at a time, each after the one before was used (docs/semantics.md
    "Global loads into registers").  The registers fill after ``loads / in_flight`` latencies."""
    lines: float | None = None
    """Distinct 128-byte lines one warp load instruction touches (a mean over its instructions),
    where its lanes are not contiguous: more than ``32 x load_bytes / 128``.  The SM's L1 serves
    an instruction a line at a time (docs/semantics.md "Global loads into registers"); None: the
    lanes are contiguous."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalLoadWait(Op):
    """The warp's first use of registers a :class:`GlobalLoad` fills (the scoreboard): it waits
    until at most ``pending`` of the global loads it issued are still out -- the newest ones
    (loads return in issue order here), as ``cp.async.wait_group`` counts groups."""

    kind: ClassVar[str] = "global_load_wait"
    unit: ClassVar[str] = "lsu"
    pending: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterMath(Op):
    """Arithmetic on values in registers by each executing warp (Triton's elementwise ops and
    reductions on tensors): how many warp instructions of each class the warp issues.  They
    run on the warp's SM sub-partition, one class at a time per instruction, and the warp waits
    for them (docs/semantics.md "Register math")."""

    kind: ClassVar[str] = "register_math"
    unit: ClassVar[str] = "alu"
    fp32: int = 0
    """FP32 add / mul / FMA / compare / select (and packed f16x2 arithmetic)."""
    half_rate: int = 0
    """Max / min (FMNMX), conversions to fp16 (F2FP), byte permutes (PRMT) and int32 -> fp32 (I2FP)."""
    mufu: int = 0
    """The special-function unit's pipe: ex2, lg2, rcp, rsqrt, sin, cos, and the conversions I2F,
    F2I and FRND that run on it (alu_rate.cu)."""
    shfl: int = 0
    """Warp shuffles (a reduction across lanes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Mma(Op):
    """``tcgen05.mma`` for an ``m x n x k_elems`` tile (``Tx.gemm_async``): async, in order.

    ``reads`` are the shared-memory operands, ``writes`` the TMEM accumulator."""

    kind: ClassVar[str] = "mma"
    unit: ClassVar[str] = "tensor_core"
    needs: ClassVar[str | None] = "tcgen05"
    m: int
    n: int
    k_elems: int
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    accumulate: bool = False
    cta_group: int = 1
    """``.cta_group::2``: one thread of the pair's even CTA issues an MMA of ``m`` rows split
    across both CTAs; its ``reads`` / ``writes`` name each CTA's operands and TMEM
    (``Access.cta``), and both SMs' tensor cores do the work."""

    def accesses(self) -> tuple[Access, ...]:
        return self.reads + self.writes


@dataclass(frozen=True, slots=True, kw_only=True)
class TmemCopy(Op):
    """``tcgen05.cp``: shared memory -> TMEM, issued like an MMA (in order with the thread's
    MMAs, tracked by its ``tcgen05.commit``)."""

    kind: ClassVar[str] = "tmem_copy"
    unit: ClassVar[str] = "tensor_core"
    needs: ClassVar[str | None] = "tcgen05"
    bytes: int
    src: Access
    dst: Access
    cta_group: int = 1

    def accesses(self) -> tuple[Access, ...]:
        return (self.src, self.dst)


@dataclass(frozen=True, slots=True, kw_only=True)
class MmaCommit(Op):
    """``tcgen05.commit ... mbarrier::arrive::one``: one arrival on ``barrier`` once every
    MMA this thread issued before it has completed."""

    kind: ClassVar[str] = "mma_commit"
    unit: ClassVar[str] = "tensor_core"
    needs: ClassVar[str | None] = "tcgen05"
    barrier: str
    use: int
    multicast: tuple[int, ...] = ()
    """``.multicast::cluster`` with a ``cta_mask``: the ranks whose ``barrier`` (same offset)
    each get the arrival.  Empty: the executing CTA's own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Wgmma(Op):
    """``wgmma.mma_async`` for an ``m x n x k_elems`` tile; the four warps of each warpgroup of
    the role issue it together (``.sync.aligned``) -- a role of eight warps is two warpgroups,
    each its own wgmma of half the tile -- and it joins each issuing warp's open wgmma group.

    ``descriptors``: where the issuing warps build the operand descriptors between the
    instructions -- ``uniform`` (the shared-memory addresses are the same on every
    execution, so ptxas computes them in uniform registers) or ``per_thread`` (the address
    moves between executions, e.g. with a stage index held in a variable: ptxas computes it
    in per-thread registers and moves each descriptor with ``R2UR`` before its wgmma).  The
    second sets a longer floor on each instruction's slot (docs/semantics.md "wgmma")."""

    kind: ClassVar[str] = "wgmma"
    unit: ClassVar[str] = "tensor_core"
    needs: ClassVar[str | None] = "wgmma"
    m: int
    n: int
    k_elems: int
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    accumulate: bool = False
    descriptors: str = "uniform"
    operand_bytes: int = 2
    """Bytes of an A / B element: 2 (f16, bf16), 1 (fp8, int8: ``m64nNk32``), 4 (tf32:
    ``m64nNk8``).  An instruction covers 32 bytes of K whatever the type (PTX ISA, wgmma
    shapes), so ``k_elems`` fp8 elements are half the instructions of as many f16 ones."""
    serialized: bool = False
    """ptxas made each of its instructions wait for the one before to complete (ptxas C7515:
    ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` after every ``HGMMA``), so each instruction's latency
    lies on the issuing warps' path instead of only the last one's (docs/semantics.md "wgmma")."""

    def accesses(self) -> tuple[Access, ...]:
        return self.reads + self.writes


WGMMA_DESCRIPTORS = ("uniform", "per_thread")
"""Where a wgmma's operand descriptors are built (:attr:`Wgmma.descriptors`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WgmmaCommit(Op):
    """``wgmma.commit_group``."""

    kind: ClassVar[str] = "wgmma_commit"
    unit: ClassVar[str] = "tensor_core"
    needs: ClassVar[str | None] = "wgmma"


@dataclass(frozen=True, slots=True, kw_only=True)
class WgmmaWait(Op):
    """``wgmma.wait_group n``."""

    kind: ClassVar[str] = "wgmma_wait"
    unit: ClassVar[str] = "tensor_core"
    needs: ClassVar[str | None] = "wgmma"
    n: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TmemLoad(Op):
    """``tcgen05.ld``: TMEM -> registers for the executing warp's lanes (async)."""

    kind: ClassVar[str] = "tmem_load"
    unit: ClassVar[str] = "tmem"
    needs: ClassVar[str | None] = "tcgen05"
    per_warp: ClassVar[bool] = True
    bytes: int
    src: Access

    def accesses(self) -> tuple[Access, ...]:
        return (self.src,)


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitLd(Op):
    """``tcgen05.wait::ld``: block until this warp's TMEM loads are done."""

    kind: ClassVar[str] = "wait_ld"
    unit: ClassVar[str] = "tmem"
    needs: ClassVar[str | None] = "tcgen05"


@dataclass(frozen=True, slots=True, kw_only=True)
class TmemStore(Op):
    """``tcgen05.st``: registers -> TMEM for the executing warp's lanes (async until
    ``tcgen05.wait::st``)."""

    kind: ClassVar[str] = "tmem_store"
    unit: ClassVar[str] = "tmem"
    needs: ClassVar[str | None] = "tcgen05"
    per_warp: ClassVar[bool] = True
    bytes: int
    dst: Access

    def accesses(self) -> tuple[Access, ...]:
        return (self.dst,)


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitSt(Op):
    """``tcgen05.wait::st``: block until this warp's TMEM stores are done."""

    kind: ClassVar[str] = "wait_st"
    unit: ClassVar[str] = "tmem"
    needs: ClassVar[str | None] = "tcgen05"


@dataclass(frozen=True, slots=True, kw_only=True)
class TmemAlloc(Op):
    """``tcgen05.alloc``: blocks while the SM lacks ``columns`` free TMEM columns."""

    kind: ClassVar[str] = "tmem_alloc"
    unit: ClassVar[str] = "tmem"
    needs: ClassVar[str | None] = "tcgen05"
    columns: int
    cta_group: int = 1
    """2: the pair's allocation (``.cta_group::2``): each CTA's warp allocates ``columns`` of its own SM."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TmemDealloc(Op):
    """``tcgen05.dealloc``."""

    kind: ClassVar[str] = "tmem_dealloc"
    unit: ClassVar[str] = "tmem"
    needs: ClassVar[str | None] = "tcgen05"
    columns: int
    cta_group: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class MbarInval(Op):
    """``mbarrier.inval``: the memory stops being an mbarrier object, so a later
    ``mbarrier.init`` of it is a fresh start (Triton's ``ttng.inval_barrier``; a persistent
    kernel that initialises its barriers per tile invalidates them first)."""

    kind: ClassVar[str] = "mbar_inval"
    unit: ClassVar[str] = "mbarrier"
    barrier: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CtaSync(Op):
    """``bar.sync 0``: every thread of the CTA."""

    kind: ClassVar[str] = "cta_sync"
    unit: ClassVar[str] = "sync"


@dataclass(frozen=True, slots=True, kw_only=True)
class NamedBarrierSync(Op):
    """``bar.sync id, threads`` (``T.cuda.warpgroup_sync(10)`` is id 10, 128 threads)."""

    kind: ClassVar[str] = "named_barrier"
    unit: ClassVar[str] = "sync"
    barrier_id: int
    threads: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WarpSync(Op):
    """``__syncwarp()`` / ``bar.warp.sync``: the lanes of each executing warp meet, so every
    lane's earlier shared-memory stores are ordered before every lane's later ops -- what
    an elected lane's ``mbarrier.arrive`` (or single-lane TMA store) needs before it may
    publish data all 32 lanes wrote."""

    kind: ClassVar[str] = "warp_sync"
    unit: ClassVar[str] = "sync"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterArrive(Op):
    """``barrier.cluster.arrive{.release|.relaxed}.aligned``: every thread of the executing
    warps arrives on the cluster's hardware barrier.  ``relaxed``: no release -- what the
    thread wrote before is not made visible to the waiters."""

    kind: ClassVar[str] = "cluster_arrive"
    unit: ClassVar[str] = "sync"
    needs: ClassVar[str | None] = "cluster"
    relaxed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterWait(Op):
    """``barrier.cluster.wait{.acquire}.aligned``: block until every thread of every CTA in
    the cluster has made the arrival matching this thread's last one."""

    kind: ClassVar[str] = "cluster_wait"
    unit: ClassVar[str] = "sync"
    needs: ClassVar[str | None] = "cluster"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fence(Op):
    """A fence (``fence.proxy.async``, ``fence.mbarrier_init``, ...): costs time only."""

    kind: ClassVar[str] = "fence"
    unit: ClassVar[str] = "sync"
    fence: str = "proxy_async"


@dataclass(frozen=True, slots=True, kw_only=True)
class Sleep(Op):
    """``nanosleep``: a delay knob, in cycles.  With ``warp`` set, only that warp of
    the role sleeps (the lagging-warp knob)."""

    kind: ClassVar[str] = "sleep"
    unit: ClassVar[str] = "sync"
    cycles: int
    warp: int | None = None


OP_TYPES: dict[str, type[Op]] = {
    cls.kind: cls
    for cls in (
        MbarInit, MbarInval, Arrive, ExpectTx, ArriveExpectTx, Wait, TmaLoad, TmaStore, BulkCommit,
        BulkWait, ThreadCopy, SmemStore, GlobalStore, GlobalLoad, GlobalLoadWait, RegisterMath, Mma, MmaCommit,
        Wgmma, WgmmaCommit,
        WgmmaWait, TmemLoad, WaitLd, TmemAlloc, TmemDealloc, CtaSync, NamedBarrierSync,
        Fence, Sleep, CpAsync, CpAsyncCommit, CpAsyncWait, LocalLoad, MmaSync, WarpSync,
        TmemCopy, TmemStore, WaitSt, ClusterArrive, ClusterWait,
    )
}


# --------------------------------------------------------------------------- schedule


@dataclass(frozen=True, slots=True)
class CtaProgram:
    """The ops of every role of one CTA; ``roles[i]`` runs ``Schedule.roles[i]``."""

    index: int
    roles: tuple[tuple[Op, ...], ...]


@dataclass(frozen=True)
class Schedule:
    """A whole kernel launch: storage and roles per CTA, and each CTA's programs."""

    name: str
    arch: str
    barriers: tuple[BarrierDecl, ...]
    buffers: tuple[BufferDecl, ...]
    roles: tuple[RoleDecl, ...]
    ctas: tuple[CtaProgram, ...]
    l2_at_launch: str = "cold"
    """What L2 holds when the kernel starts -- a launch condition that can decide a race, so
    part of the schedule's identity (hashed): ``cold`` (nothing) or ``inputs`` (the inputs were
    written just before the launch; ``engine.resources.resident_at_launch``)."""
    config: dict[str, Any] = field(default_factory=dict, compare=False)
    """The builder config that produced it (informative; not hashed: nothing the engine
    reads comes from here)."""
    cluster: int = 1
    """CTAs per thread-block cluster.  CTAs ``c*cluster .. c*cluster + cluster-1`` form
    cluster ``c`` and a CTA's rank in it is ``index % cluster``: they launch together,
    and an op may name a peer's barrier or buffer by rank (docs/semantics.md "Clusters")."""
    regs_per_thread: int = 0
    """Registers ptxas gave each thread (``cuobjdump -res-usage``): with the SM's register
    file they bound how many CTAs share an SM.  0: not stated (no register limit)."""

    @property
    def threads_per_cta(self) -> int:
        return 32 * sum(r.warps for r in self.roles)

    def barrier(self, name: str) -> BarrierDecl:
        for b in self.barriers:
            if b.name == name:
                return b
        raise KeyError(name)

    def buffer(self, name: str) -> BufferDecl:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def op_count(self) -> int:
        return sum(len(ops) for cta in self.ctas for ops in cta.roles)


_DATACLASSES.save()  # the last dataclass of the module is above


L2_AT_LAUNCH = ("cold", "inputs")
LOAD_WIDTHS = (1, 2, 4, 8, 16)
"""Bytes per lane of one ``ld.global`` or ``st.global`` (.u8 .. .v4.u32; PTX ISA ld, st)."""
WGMMA_OPERAND_BYTES = (1, 2, 4)
"""Bytes of a wgmma operand element: fp8 / int8, f16 / bf16, tf32 (``Wgmma.operand_bytes``)."""
MAX_BANK_WAYS = 32
"""A store's bank conflict is at most 32-way: shared memory has 32 banks, a warp 32 lanes."""
MAX_REGS_PER_THREAD = 255
"""The most registers ptxas gives a thread (CUDA Programming Guide, compute capabilities table)."""
MAX_PARTS = 1024
"""Pieces of a buffer written separately: one per warp or per thread of a CTA, and no GPU
runs more than 1,024 threads per CTA (CUDA Programming Guide, compute capabilities table)."""


def validate(s: Schedule) -> None:
    """Raise :class:`ScheduleError` for a schedule the engine cannot replay."""
    if s.l2_at_launch not in L2_AT_LAUNCH:
        raise ScheduleError(f"schedule {s.name!r}: l2_at_launch = {s.l2_at_launch!r}; use 'cold' or 'inputs'")
    if not s.roles:
        raise ScheduleError(f"schedule {s.name!r}: no roles; declare at least one role")
    if isinstance(s.regs_per_thread, bool) or not isinstance(s.regs_per_thread, int) \
            or not 0 <= s.regs_per_thread <= MAX_REGS_PER_THREAD:
        raise ScheduleError(f"schedule {s.name!r}: regs_per_thread = {s.regs_per_thread!r}; give 1..{MAX_REGS_PER_THREAD} "
                            f"(what ptxas allocated) or 0 for no register limit")
    if not s.ctas:
        raise ScheduleError(f"schedule {s.name!r}: no CTAs; give at least one CTA program")
    for r in s.roles:
        if r.warps < 1:
            raise ScheduleError(f"role {r.name!r}: {r.warps} warps; a role has at least one warp")
    _validate_cluster(s)
    barriers = {b.name: b for b in s.barriers}
    buffers = {b.name: b for b in s.buffers}
    for b in s.buffers:
        if b.stages < 1 or b.parts < 1:
            raise ScheduleError(f"buffer {b.name!r}: stages and parts must be >= 1")
        if b.parts > MAX_PARTS:
            raise ScheduleError(f"buffer {b.name!r}: {b.parts:,} parts; a part is what one warp or thread writes, "
                                f"so at most {MAX_PARTS} (threads per CTA)")
    for cta in s.ctas:
        if len(cta.roles) != len(s.roles):
            raise ScheduleError(
                f"CTA {cta.index}: {len(cta.roles)} role programs for {len(s.roles)} declared roles"
            )
        for role, ops in zip(s.roles, cta.roles, strict=True):
            for i, op in enumerate(ops):
                where = f"CTA {cta.index}, role {role.name!r}, op #{i} ({op.kind})"
                if op.issuer not in ISSUERS:
                    raise ScheduleError(f"{where}: issuer {op.issuer!r}; use one of {ISSUERS}")
                name = getattr(op, "barrier", None)
                if name is not None and name not in barriers:
                    raise ScheduleError(f"{where}: barrier {name!r} is not declared; add a BarrierDecl")
                if isinstance(op, Wait) and op.parity not in (0, 1):
                    raise ScheduleError(f"{where}: parity {op.parity}; a parity is 0 or 1")
                if isinstance(op, SmemStore) and op.bank_ways > MAX_BANK_WAYS:
                    raise ScheduleError(f"{where}: bank_ways = {op.bank_ways}; 32 lanes conflict at most "
                                        f"{MAX_BANK_WAYS} ways (every lane on one bank)")
                if isinstance(op, Wgmma) and op.descriptors not in WGMMA_DESCRIPTORS:
                    raise ScheduleError(f"{where}: descriptors = {op.descriptors!r}; use "
                                        f"{' or '.join(map(repr, WGMMA_DESCRIPTORS))}")
                if isinstance(op, Wgmma) and op.operand_bytes not in WGMMA_OPERAND_BYTES:
                    raise ScheduleError(f"{where}: operand_bytes = {op.operand_bytes!r}; a wgmma operand element is "
                                        f"{', '.join(map(str, WGMMA_OPERAND_BYTES))} bytes (fp8/int8, f16/bf16, tf32)")
                if isinstance(op, ThreadCopy) and op.load_bytes not in LOAD_WIDTHS:
                    raise ScheduleError(f"{where}: load_bytes = {op.load_bytes}; an ld.global moves "
                                        f"{', '.join(map(str, LOAD_WIDTHS))} bytes per lane")
                if isinstance(op, RegisterMath) and min(op.fp32, op.half_rate, op.mufu, op.shfl) < 0:
                    raise ScheduleError(f"{where}: a negative instruction count ({op.fp32}, {op.half_rate}, {op.mufu}, "
                                        f"{op.shfl}); count each class's warp instructions, >= 0")
                if isinstance(op, GlobalLoadWait) and op.pending < 0:
                    raise ScheduleError(f"{where}: pending = {op.pending}; a count of loads left in flight is >= 0")
                if isinstance(op, GlobalLoad) and (op.load_bytes not in LOAD_WIDTHS or not op.src):
                    raise ScheduleError(f"{where}: load_bytes = {op.load_bytes}, src = {op.src!r}; an ld.global moves "
                                        f"{', '.join(map(str, LOAD_WIDTHS))} bytes per lane and names what it reads")
                if isinstance(op, GlobalStore) and op.store_bytes not in LOAD_WIDTHS:
                    raise ScheduleError(f"{where}: store_bytes = {op.store_bytes}; an st.global moves "
                                        f"{', '.join(map(str, LOAD_WIDTHS))} bytes per lane")
                if isinstance(op, (GlobalLoad, GlobalStore)) and op.memory_bytes is not None and \
                        not (isinstance(op.memory_bytes, int) and 0 <= op.memory_bytes <= max(op.bytes, 1)):
                    raise ScheduleError(f"{where}: memory_bytes = {op.memory_bytes!r}; the distinct bytes the warp's "
                                        f"lanes address are an int from 0 to bytes ({op.bytes}), or null for all of them")
                if isinstance(op, GlobalLoad) and (isinstance(op.in_flight, bool) or not isinstance(op.in_flight, int)
                                                   or op.in_flight < 0):
                    raise ScheduleError(f"{where}: in_flight = {op.in_flight!r}; a lane's loads out at once are an "
                                        "integer >= 1, or 0 for all of them")
                if isinstance(op, (GlobalLoad, GlobalStore)) and op.lines is not None and \
                        not (isinstance(op.lines, (int, float)) and not isinstance(op.lines, bool) and 1 <= op.lines <= 32):
                    raise ScheduleError(f"{where}: lines = {op.lines!r}; the 128-byte lines one warp instruction "
                                        "touches are a number from 1 to 32, or null for contiguous lanes")
                for acc in op.accesses():
                    buf = buffers.get(acc.buffer)
                    if buf is None:
                        raise ScheduleError(f"{where}: buffer {acc.buffer!r} is not declared; add a BufferDecl")
                    if not 0 <= acc.stage < buf.stages:
                        raise ScheduleError(
                            f"{where}: stage {acc.stage} of {acc.buffer!r}, which has {buf.stages} stage(s)"
                        )
                    if acc.part is not None and acc.part != WARP_PART and not 0 <= acc.part < buf.parts:
                        raise ScheduleError(
                            f"{where}: part {acc.part} of {acc.buffer!r}, which has {buf.parts} part(s)"
                        )
                    if acc.cta is not None and not 0 <= acc.cta < s.cluster:
                        raise ScheduleError(f"{where}: {acc.buffer!r} of cluster rank {acc.cta}, but the cluster has "
                                            f"{s.cluster} CTA(s) (ranks 0..{s.cluster - 1}); set Schedule.cluster or "
                                            f"name a rank in range")
                    if acc.columns is not None:
                        if buf.space != "tmem":
                            raise ScheduleError(f"{where}: columns on {acc.buffer!r}, a shared-memory buffer; "
                                                f"column ranges are for TMEM buffers")
                        lo, hi = acc.columns
                        if not 0 <= lo < hi <= buf.columns:
                            raise ScheduleError(f"{where}: columns [{lo}, {hi}) of {acc.buffer!r}, which has "
                                                f"{buf.columns} column(s) per stage")
                if op.__class__ in _RANKED:
                    _validate_ranks(s, cta.index, where, op)


def _validate_cluster(s: Schedule) -> None:
    """The cluster shape: whole clusters, every rank present once."""
    k = s.cluster
    if k < 1:
        raise ScheduleError(f"schedule {s.name!r}: cluster = {k}; a cluster has at least one CTA")
    if k == 1:
        return
    ranks: dict[int, set[int]] = {}
    for cta in s.ctas:
        ranks.setdefault(cta.index // k, set()).add(cta.index % k)
    for c, got in sorted(ranks.items()):
        if len(got) != k:
            missing = sorted(set(range(k)) - got)
            shown = ", ".join(map(str, missing[:8])) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
            raise ScheduleError(f"schedule {s.name!r}: cluster {c} (CTAs {c * k}..{c * k + k - 1}) lacks rank(s) "
                                f"[{shown}]; a cluster of {k} launches all its CTAs, give each a program")


_RANKED = frozenset({Arrive, ExpectTx, ArriveExpectTx, TmaLoad, Mma, TmemCopy, MmaCommit, TmemAlloc, TmemDealloc})
"""Op classes with a cluster rank or a cta_group of their own (accesses are checked with the buffer)."""


def _validate_ranks(s: Schedule, index: int, where: str, op: Op) -> None:
    """Every cluster rank an op names exists; a 2-CTA op runs in a pair's even CTA."""
    if (getattr(op, "cta", None) is None and getattr(op, "barrier_cta", None) is None
            and not getattr(op, "multicast", ()) and getattr(op, "cta_group", 1) == 1):
        return  # the common case: a CTA-local op
    k = s.cluster
    named = [r for r in (getattr(op, "cta", None), getattr(op, "barrier_cta", None)) if r is not None]
    multicast = getattr(op, "multicast", ())
    if len(set(multicast)) != len(multicast):
        raise ScheduleError(f"{where}: multicast ranks {list(multicast)} repeat a rank; a cta_mask names each CTA once")
    named += list(multicast)
    for r in named:
        if not 0 <= r < k:
            raise ScheduleError(f"{where}: cluster rank {r}, but the cluster has {k} CTA(s) (ranks 0..{k - 1}); "
                                f"set Schedule.cluster or name a rank in range")
    group = getattr(op, "cta_group", 1)
    if group not in (1, 2):
        raise ScheduleError(f"{where}: cta_group {group}; tcgen05 has cta_group 1 or 2")
    if group == 2 and (k % 2 or (index % k) % 2) and op.kind in ("mma", "tmem_copy"):
        raise ScheduleError(f"{where}: a cta_group::2 {op.kind} is issued by the even CTA of a pair; this CTA has "
                            f"rank {index % k} in a cluster of {k}")


# --------------------------------------------------------------------------- JSON


_FIELDS: dict[type, list[tuple[str, Any]]] = {}


def _fields_of(cls: type) -> list[tuple[str, Any]]:
    """(name, default or MISSING) of an op class, computed once per class."""
    meta = _FIELDS.get(cls)
    if meta is None:
        meta = _FIELDS[cls] = [(f.name, f.default) for f in dataclasses.fields(cls)]
    return meta


def _op_to_json(op: Op) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op.kind}
    for name, default in _fields_of(op.__class__):
        value = getattr(op, name)
        if value is default or (default is not dataclasses.MISSING and value == default):
            continue
        out[name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if value.__class__ is Access:
        d: dict[str, Any] = {"buffer": value.buffer}
        if value.stage:
            d["stage"] = value.stage
        if value.content:
            d["content"] = value.content
        if value.part is not None:
            d["part"] = value.part
        if value.cta is not None:
            d["cta"] = value.cta
        if value.columns is not None:
            d["columns"] = list(value.columns)
        return d
    if value.__class__ is tuple:
        return [_plain(v) for v in value]
    return value


NONNEGATIVE = frozenset({"cycles", "barrier_id", "count", "n", "in_flight"})
"""Op fields that PTX cannot express negative (delays, ids, u32 counts): a negative value is a
mistake in the input, refused before the replay.  Values PTX can express but leaves undefined
(an arrive count or init count of 0, an expect_tx past 2^20-1) reach the model and come back
as findings."""
POSITIVE = frozenset({"bytes", "columns", "m", "k_elems", "threads", "load_bytes", "bank_ways"})
"""Sizes of a transfer, an allocation, an MMA shape or a barrier's thread count: zero is no
instruction at all.  (``n`` is also a wait_group depth, where 0 is the usual value.)"""
TX_BYTES = ("expect_tx", "arrive_expect_tx")
"""... except the bytes of an expect_tx, where 0 is legal (an arrive with nothing to wait for)."""
MIN_USE = -1
"""A wait for "phase -1" (a producer's first wait on a fresh barrier) is legal."""


def _check_int(where: str, name: str, value: Any, low: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(f"{where}: {name} = {value!r}: must be an integer")
    if low is not None and value < low:
        raise ScheduleError(f"{where}: {name} = {value}: must be >= {low}")


def _access_from_json(v: Any, where: str) -> Access:
    if not isinstance(v, dict):
        raise ScheduleError(f"{where}: an access is an object {{buffer, stage, content, part}}, got {v!r}")
    unknown = set(v) - {"buffer", "stage", "content", "part", "cta", "columns"}
    if unknown:
        raise ScheduleError(f"{where}: an access has no field(s) {sorted(unknown)}; "
                            f"fields: buffer, stage, content, part, cta, columns")
    if not isinstance(v.get("buffer"), str):
        raise ScheduleError(f"{where}: access buffer = {v.get('buffer')!r}: must be a buffer name (a string)")
    _check_int(where, "stage", v.get("stage", 0), 0)
    if not isinstance(v.get("content", ""), str):
        raise ScheduleError(f"{where}: access content = {v.get('content')!r}: must be a string")
    if v.get("part") is not None:
        _check_int(where, "part", v["part"], WARP_PART)
    if v.get("cta") is not None:
        _check_int(where, "cta", v["cta"], 0)
    cols = v.get("columns")
    if cols is not None:
        if not isinstance(cols, list) or len(cols) != 2:
            raise ScheduleError(f"{where}: access columns = {cols!r}: must be [lo, hi] or null")
        for x in cols:
            _check_int(where, "columns", x, 0)
        if cols[0] >= cols[1]:
            raise ScheduleError(f"{where}: access columns = {cols!r}: lo must be below hi")
        v = {**v, "columns": tuple(cols)}
    return Access(**v)


def _op_from_json(d: dict[str, Any], where: str) -> Op:
    if not isinstance(d, dict):
        raise ScheduleError(f"{where}: an op is an object with an 'op' field, got {d!r}")
    d = dict(d)
    kind = d.pop("op", None)
    cls = OP_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ScheduleError(f"{where}: unknown op {kind!r}; known ops: {', '.join(sorted(OP_TYPES))}")
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    unknown = set(d) - set(types)
    if unknown:
        raise ScheduleError(f"{where}: op {kind!r} has no field(s) {sorted(unknown)}; fields: {sorted(types)}")
    for name, value in list(d.items()):
        t = types[name]
        if t == "Access":
            d[name] = _access_from_json(value, f"{where} {name}")
        elif t == "tuple[Access, ...]":
            if not isinstance(value, list):
                raise ScheduleError(f"{where}: {name} must be a list of accesses, got {value!r}")
            d[name] = tuple(_access_from_json(a, f"{where} {name}[{i}]") for i, a in enumerate(value))
        elif t == "tuple[int, int] | None":
            if value is not None:
                if not isinstance(value, list) or len(value) != 2:
                    raise ScheduleError(f"{where}: {name} = {value!r}: must be [m, n] or null")
                for x in value:
                    _check_int(where, name, x)
                d[name] = tuple(value)
        elif t == "tuple[int, ...]":
            if not isinstance(value, list):
                raise ScheduleError(f"{where}: {name} = {value!r}: must be a list of cluster ranks")
            for x in value:
                _check_int(where, name, x, 0)
            d[name] = tuple(value)
        elif t in ("int", "int | None"):
            if value is None and t == "int | None":
                continue
            low = (1 if name in POSITIVE and not (name == "bytes" and kind in TX_BYTES)
                   else 0 if name in NONNEGATIVE or name == "bytes" else MIN_USE if name == "use" else None)
            if name in ("cta", "barrier_cta"):
                low = 0
            if name == "cta_group":
                low = 1
            if name == "n" and kind in ("mma", "wgmma", "mma_sync"):
                low = 1  # an MMA's N, not a wait depth
            _check_int(where, name, value, low)
        elif t in ("float", "float | None"):
            if value is None and t == "float | None":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ScheduleError(f"{where}: {name} = {value!r}: must be a number")
            if name in NONNEGATIVE and value < 0:
                raise ScheduleError(f"{where}: {name} = {value}: must be >= 0")
        elif t == "bool":
            if not isinstance(value, bool):
                raise ScheduleError(f"{where}: {name} = {value!r}: must be true or false")
        elif not isinstance(value, str):  # str and Issuer
            raise ScheduleError(f"{where}: {name} = {value!r}: must be a string")
    try:
        return cls(**d)
    except TypeError as e:
        raise ScheduleError(f"{where}: op {kind!r}: {e}") from None


def _decls(d: dict[str, Any], key: str, cls: type, ints: dict[str, int]) -> tuple:
    """Storage or role declarations: objects with a unique string ``name`` and integer
    fields at or above their lower bound (``ints``)."""
    items = d[key]
    if not isinstance(items, list):
        raise ScheduleError(f"schedule JSON: {key} must be a list, got {type(items).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    out, seen = [], set()
    for i, item in enumerate(items):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            raise ScheduleError(f"schedule JSON: {where} must be an object, got {item!r}")
        unknown = set(item) - names
        if unknown:
            raise ScheduleError(f"schedule JSON: {where} has no field(s) {sorted(unknown)}; fields: {sorted(names)}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ScheduleError(f"schedule JSON: {where}: name = {name!r}: must be a non-empty string")
        if name in seen:
            raise ScheduleError(f"schedule JSON: {where}: {name!r} is declared twice; names must be unique")
        seen.add(name)
        for field_, low in ints.items():
            if field_ in item:
                _check_int(f"schedule JSON: {where} ({name})", field_, item[field_], low)
        try:
            out.append(cls(**item))
        except TypeError as e:
            raise ScheduleError(f"schedule JSON: {where} ({name}): {e}") from None
    return tuple(out)


def to_json(s: Schedule) -> dict[str, Any]:
    """The schedule as JSON-ready data (ops omit fields left at their default; so does a
    cold L2 at launch, which keeps the hashes of schedules written before the field)."""
    d = to_json_header(s)
    tail = {k: d.pop(k) for k in ("l2_at_launch", "cluster", "regs_per_thread") if k in d}  # after config, as files have them
    d["ctas"] = [{"index": c.index, "roles": [[_op_to_json(op) for op in ops] for ops in c.roles]} for c in s.ctas]
    d["config"] = s.config
    return {**d, **tail}


TOP_LEVEL = ("protosim_schedule", "name", "arch", "barriers", "buffers", "roles", "ctas", "l2_at_launch", "cluster",
             "regs_per_thread", "config", "description", "expect", "explore")
"""Keys of a schedule file; ``description``, ``expect`` and ``explore`` come from the
scenario that built it (``protosim schedule``) and are read by protosim.scenarios."""


def from_json(d: dict[str, Any], max_ops: int | None = None) -> Schedule:
    """Inverse of :func:`to_json`; raises :class:`ScheduleError` naming the bad entry.
    ``max_ops``: refuse a schedule of more ops than that (before building any op)."""
    mark = d.get("protosim_schedule") if isinstance(d, dict) else None
    if isinstance(mark, bool) or mark != SCHEMA:
        raise ScheduleError(f"not a protosim schedule (schema {SCHEMA}): missing 'protosim_schedule': {SCHEMA}")
    unknown = [k for k in d if k not in TOP_LEVEL]
    if unknown:
        raise ScheduleError(f"schedule JSON: unknown field(s) {unknown}; a schedule has {', '.join(TOP_LEVEL)}")
    for key in ("name", "arch", "barriers", "buffers", "roles", "ctas"):
        if key not in d:
            raise ScheduleError(f"schedule JSON is missing field {key!r}")
    for key in ("name", "arch"):
        if not isinstance(d[key], str):
            raise ScheduleError(f"schedule JSON: {key} = {d[key]!r}: must be a string")
    if not isinstance(d.get("config", {}), dict):
        raise ScheduleError("schedule JSON: config must be an object")
    if not isinstance(d["ctas"], list):
        raise ScheduleError("schedule JSON: ctas must be a list of {index, roles}")
    barriers = _decls(d, "barriers", BarrierDecl, {"count": 0})
    buffers = _decls(d, "buffers", BufferDecl, {"stages": 1, "bytes": 0, "columns": 0, "parts": 1, "align": 1})
    roles = _decls(d, "roles", RoleDecl, {"warps": 1})
    for b in buffers:
        if b.space not in ("smem", "tmem"):
            raise ScheduleError(f"schedule JSON: buffer {b.name!r}: space = {b.space!r}; use 'smem' or 'tmem'")
        size, unit = (b.bytes, "bytes") if b.space == "smem" else (b.columns, "columns")
        if size < 1:
            raise ScheduleError(f"schedule JSON: buffer {b.name!r}: {size} {unit} per stage; a {b.space} buffer has at least 1")
    n_ops = 0
    for c in d["ctas"]:
        if not isinstance(c, dict) or not isinstance(c.get("roles"), list) or not all(isinstance(r, list) for r in c["roles"]):
            raise ScheduleError(f"schedule JSON: a CTA is {{index, roles: [[op, ...] per role]}}, got {str(c)[:80]}")
        n_ops += sum(len(ops) for ops in c["roles"])
    if max_ops is not None and n_ops > max_ops:
        raise ScheduleError(f"schedule JSON: {n_ops:,} ops, more than the limit of {max_ops:,}; pass --max-ops {n_ops} to replay it")
    ctas = []
    seen: set[int] = set()
    for c in d["ctas"]:
        _check_int("schedule JSON: a CTA", "index", c.get("index"), 0)
        if c["index"] in seen:
            raise ScheduleError(f"schedule JSON: CTA index {c['index']} appears twice")
        seen.add(c["index"])
        ctas.append(CtaProgram(c["index"], tuple(
            tuple(_op_from_json(o, f"CTA {c['index']} role #{r} op #{i}") for i, o in enumerate(ops))
            for r, ops in enumerate(c["roles"]))))
    # Files written before the field kept the launch condition in config only.
    l2 = d.get("l2_at_launch", d.get("config", {}).get("l2_at_launch", "cold"))
    if l2 not in L2_AT_LAUNCH:
        raise ScheduleError(f"schedule JSON: l2_at_launch = {l2!r}; use 'cold' or 'inputs'")
    cluster = d.get("cluster", 1)
    _check_int("schedule JSON", "cluster", cluster, 1)
    regs = d.get("regs_per_thread", 0)
    _check_int("schedule JSON", "regs_per_thread", regs, 0)
    sched = Schedule(name=d["name"], arch=d["arch"], barriers=barriers, buffers=buffers, roles=roles,
                     ctas=tuple(ctas), l2_at_launch=l2, config=d.get("config", {}), cluster=cluster,
                     regs_per_thread=regs)
    validate(sched)
    return sched


def validate_for(s: Schedule, profile: Any) -> None:
    """Raise :class:`ScheduleError` for an op or buffer the arch cannot run (``profile``:
    a ``protosim.arch.ArchProfile``; its ``unsupported(op)`` says why, from the op's ``needs``)."""
    if s.cluster > 1 and s.cluster > profile.max_cluster_size:
        raise ScheduleError(f"schedule {s.name!r}: clusters of {s.cluster} CTAs; {profile.name} ({profile.target}) "
                            + (f"allows at most {profile.max_cluster_size}" if profile.max_cluster_size
                               else "has no thread-block clusters"))
    for b in s.buffers:
        if b.space == "tmem" and not profile.has_tmem:
            raise ScheduleError(f"buffer {b.name!r} is in TMEM; {profile.name} has no tensor memory (tcgen05 only)")
    checked: set[type] = set()
    for cta in s.ctas:
        for role, ops in zip(s.roles, cta.roles, strict=True):
            for i, op in enumerate(ops):
                if op.__class__ in checked:
                    continue
                why = profile.unsupported(op)
                if why:
                    raise ScheduleError(f"CTA {cta.index}, role {role.name!r}, op #{i} ({op.kind}): {why}; "
                                        f"replay it on an arch that has it, or change the op")
                checked.add(op.__class__)


# --------------------------------------------------------------------------- canonical text
#
# ``json.dumps(to_json(s), sort_keys=True, separators=(",", ":"))`` written directly: a dict per
# op and the encoder's sort of its keys cost ~10 us an op (~1.5 s for a full-chip schedule).
# Each op class gets its keys' order once; values are written as the json encoder writes
# them (str: encode_basestring_ascii, int: int.__repr__, true/false/null, tuples as lists,
# an Access as _plain's dict), anything else through the encoder itself.  Same bytes:
# tests/test_ir.py compares with json.dumps on the corpus and on every field type.

_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
"""What ``json.dumps(x, sort_keys=True, separators=(",", ":"))`` calls."""
_ESC = json.encoder.encode_basestring_ascii
_OP_KEY = object()
_OP_WRITERS: dict[type, list[tuple[Any, Any, str]]] = {}


def _value_text(value: Any) -> str:
    """``_ENCODE(_plain(value))``, without building the plain value first."""
    cls = value.__class__
    if cls is str:
        return _ESC(value)
    if cls is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if cls is bool:
        return "true" if value else "false"
    if cls is tuple:
        return "[" + ",".join([_ESC(v) if v.__class__ is str else int.__repr__(v) if v.__class__ is int else _value_text(v)
                               for v in value]) + "]"
    if cls is Access:
        v = value.buffer  # keys in sorted order, each only where _plain writes it
        text = '{"buffer":' + (_ESC(v) if v.__class__ is str else _value_text(v))
        if value.columns is not None:
            text += ',"columns":' + _value_text(tuple(value.columns))
        v = value.content
        if v:
            text += ',"content":' + (_ESC(v) if v.__class__ is str else _value_text(v))
        v = value.cta
        if v is not None:
            text += ',"cta":' + (int.__repr__(v) if v.__class__ is int else _value_text(v))
        v = value.part
        if v is not None:
            text += ',"part":' + (int.__repr__(v) if v.__class__ is int else _value_text(v))
        v = value.stage
        if v:
            text += ',"stage":' + (int.__repr__(v) if v.__class__ is int else _value_text(v))
        return text + "}"
    return _ENCODE(_plain(value))


def _op_writer(cls: type) -> list[tuple[Any, Any, str]]:
    """(field name or _OP_KEY, default, '"key":') for the keys of ``_op_to_json``, sorted."""
    keys = [(name, default, _ESC(name) + ":") for name, default in _fields_of(cls)]
    keys.append((_OP_KEY, _ESC(cls.kind), '"op":'))
    keys.sort(key=lambda k: "op" if k[0] is _OP_KEY else k[0])
    _OP_WRITERS[cls] = keys
    return keys


def _op_text(op: Op) -> str:
    """``_ENCODE(_op_to_json(op))``."""
    keys = _OP_WRITERS.get(op.__class__) or _op_writer(op.__class__)
    parts = []
    for name, default, key in keys:
        if name is _OP_KEY:
            parts.append(key + default)
            continue
        value = getattr(op, name)
        if value is default or (default is not dataclasses.MISSING and value == default):
            continue
        parts.append(key + _value_text(value))
    return "{" + ",".join(parts) + "}"


_FAST_WRITERS: dict[type, Any] = {}
FAST_WRITER_OPS = 20_000
"""Schedules of more ops than this are written by per-class functions generated once (the loop
of :func:`_op_text` unrolled: ~25% less time); below it compiling them would cost more than they
save (a cold ``protosim run`` of a few hundred ops)."""


def _fast_writer(cls: type):
    """:func:`_op_text` for one op class, as a generated function (the same keys, tests, values)."""
    env: dict[str, Any] = {"_V": _value_text, "_ESC": _ESC, "_int": int.__repr__, "_str": str, "_intT": int}
    lines = ["def write(op):", "    parts = []"]
    for i, (name, default, key) in enumerate(_OP_WRITERS.get(cls) or _op_writer(cls)):
        if name is _OP_KEY:
            lines.append(f"    parts.append({key + default!r})")
            continue
        env[f"d{i}"] = default
        skip = f"v is d{i}" if default is dataclasses.MISSING else f"v is d{i} or v == d{i}"
        lines += [f"    v = op.{name}",
                  f"    if not ({skip}):",
                  "        c = v.__class__",
                  f"        parts.append({key!r} + (_ESC(v) if c is _str else _int(v) if c is _intT else _V(v)))"]
    lines.append('    return "{" + ",".join(parts) + "}"')
    exec(compile("\n".join(lines), f"<protosim.ir writer of {cls.__name__}>", "exec"), env)
    _FAST_WRITERS[cls] = env["write"]
    return env["write"]


def _ctas_chunks(s: Schedule) -> Iterator[str]:
    """The text of ``ctas`` in pieces, one CTA at a time (a full chip's text is ~100 MB: the
    hash reads it piece by piece instead of holding it whole)."""
    if s.op_count() > FAST_WRITER_OPS:
        get = _FAST_WRITERS.get

        def text(op: Op) -> str:
            return (get(op.__class__) or _fast_writer(op.__class__))(op)
    else:
        text = _op_text
    sep = "["
    for c in s.ctas:
        yield (sep + '{"index":' + _value_text(c.index) + ',"roles":['
               + ",".join(["[" + ",".join([text(op) for op in ops]) + "]" for ops in c.roles]) + "]}")
        sep = ","
    yield "[]" if sep == "[" else "]"


def _canonical_chunks(s: Schedule, with_config: bool) -> Iterator[str]:
    """``json.dumps(to_json(s), sort_keys=True, separators=(",", ":"))`` (without ``config``
    unless ``with_config``) in pieces: a dict's items in key order, "key":value joined by commas."""
    d = to_json_header(s)
    if with_config:
        d["config"] = s.config
    d["ctas"] = None
    sep = "{"
    for key in sorted(d):
        yield sep + _ESC(key) + ":"
        if key == "ctas":
            yield from _ctas_chunks(s)
        else:
            yield _ENCODE(d[key])
        sep = ","
    yield "}"


def _canonical(s: Schedule, with_config: bool) -> str:
    return "".join(_canonical_chunks(s, with_config))


def to_json_header(s: Schedule) -> dict[str, Any]:
    """:func:`to_json` without ``ctas`` and ``config``."""
    d = {
        "protosim_schedule": SCHEMA,
        "name": s.name,
        "arch": s.arch,
        "barriers": [dataclasses.asdict(b) for b in s.barriers],
        "buffers": [dataclasses.asdict(b) for b in s.buffers],
        "roles": [dataclasses.asdict(r) for r in s.roles],
    }
    if s.l2_at_launch != "cold":
        d["l2_at_launch"] = s.l2_at_launch
    if s.cluster != 1:  # left out at 1: the hashes of schedules written before clusters stay
        d["cluster"] = s.cluster
    if s.regs_per_thread:  # left out at 0, likewise
        d["regs_per_thread"] = s.regs_per_thread
    return d


def dumps(s: Schedule) -> str:
    with gc_paused():
        return _canonical(s, with_config=True)


def loads(text: str) -> Schedule:
    return from_json(json.loads(text))


def _sha256(large: bool):
    """A fresh ``hashlib.sha256()``.  A small schedule's text goes through CPython's own SHA-256
    (``_sha256``, ~1 ms to load) rather than hashlib's OpenSSL (~5 ms to load: a twelfth of a
    cold ``protosim run``); a large one through OpenSSL, ~5x faster per byte.  Same digest."""
    if not large:
        try:
            from _sha256 import sha256
        except ImportError:  # an interpreter built without it
            from hashlib import sha256
    else:
        from hashlib import sha256
    return sha256()


_HASHES: dict[int, tuple[Any, str]] = {}
"""id(schedule) -> (weak reference to it, its content hash): a schedule is immutable (frozen,
its ops frozen; ``config`` is not hashed), so its hash is computed once per object."""


def content_hash(s: Schedule) -> str:
    """SHA-256 of the canonical JSON of everything but ``config`` (first 16 hex digits):
    every op, the storage, the roles and the launch condition -- all the engine reads.

    Canonical: sorted keys, no spaces, ops without their default fields -- the text
    :func:`dumps` writes, so a schedule and its JSON round trip hash alike.  Computed once
    per schedule object (remembered while the object lives)."""
    key = id(s)
    known = _HASHES.get(key)
    if known is not None and known[0]() is s:
        return known[1]
    h = _sha256(large=s.op_count() > FAST_WRITER_OPS)
    with gc_paused():
        for chunk in _canonical_chunks(s, with_config=False):
            h.update(chunk.encode())
    digest = h.hexdigest()[:16]
    try:
        _HASHES[key] = (weakref.ref(s, lambda _ref, key=key: _HASHES.pop(key, None)), digest)
    except TypeError:  # a schedule type without weak references: not remembered
        pass
    return digest
