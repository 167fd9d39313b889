"""What a TIRx program's calls mean: protocol calls, tile primitives and thread stores -> raw ops.

The interpreter (:mod:`protosim.frontends.tirx.interp`) hands every call it meets to
:class:`Recognizer` with its evaluated arguments, the threads that execute it (the active
mask) and its source line.  The recognizer turns each into a :class:`Raw` op -- an
:mod:`protosim.ir` op kind with its fields still in the program's terms (an mbarrier is an
:class:`~protosim.frontends.tirx.interp.Addr`, a tile a buffer offset) -- or into nothing
when the call has no protocol effect (arithmetic, register conversions, a fence on
registers).  A call it does not know is an error naming it and its line: never a silent skip.

The tables below are the supported subset (docs/tirx.md): ``PROTOCOL`` (handled calls),
``NO_EFFECT`` (known, nothing to model) and the tile primitives in :meth:`Recognizer.tile`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import linecache
import re

import numpy as np

from protosim.frontends.tirx.errors import Divergent, TirxError
from protosim.frontends.tirx.interp import Addr, BufferInfo, Cta, Opaque, Region, call_site, dtype_bytes, where

_BARRIER_VAR = re.compile(r"\b([A-Za-z_]\w*)\s*\.\s*(?:init|wait|arrive|try_wait|expect_tx|ptr_to)\s*\(")
"""``name.init(`` / ``name.wait(`` / ``name.ptr_to(``: how a TIRx barrier object is used."""

DONE = 1
"""What a ``try_wait`` / ``test_wait`` returns to the program: "the phase completed".  The
schedule's ``Wait`` blocks until it really does (the engine decides when), so the program's
retry loop -- with its ``clock64`` budget, diagnostics and abort poll -- is one wait and its
timeout branch is never taken (docs/tirx.md, "wait loops")."""


MAX_OPS = 2_000_000
"""Ops an extraction may emit unless told otherwise (the CLI passes its ``--max-ops``)."""
MAX_LOOP_STEPS = 20_000_000
"""Loop iterations an extraction may run: a 4096^3 full-chip kernel runs about a million; an
endless ``while`` (a tile scheduler that never advances) or a loop bound from a wrong
``--set`` stops here instead of running for hours."""


class Budget:
    """What an extraction may still spend, shared by every CTA: ops emitted and loop steps."""

    __slots__ = ("ops", "steps", "max_ops", "max_steps")

    def __init__(self, max_ops: int = MAX_OPS, max_steps: int = MAX_LOOP_STEPS):
        self.ops, self.steps, self.max_ops, self.max_steps = max_ops, max_steps, max_ops, max_steps

    def op(self, node: Any) -> None:
        self.ops -= 1
        if self.ops < 0:
            raise TirxError(f"{where(node)}: the kernel issues more than the limit of {self.max_ops:,} ops (a loop that never ends?); pass a "
                            "larger --max-ops to read it, or launch fewer CTAs / a smaller problem")

    def loop(self, n: int, node: Any) -> None:
        self.steps -= n
        if self.steps < 0:
            raise TirxError(f"{where(node)}: the kernel runs more than {self.max_steps:,} loop iterations; a loop "
                            "that never ends (a tile scheduler that does not advance?) or a bound from a wrong --set")


class Result:
    """A call's result written into its first argument (``T.ptx.mbarrier(ok, bar, p, "try_wait", ...)``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


@dataclass(frozen=True)
class TensorMap:
    """A ``cuTensorMapEncodeTiled`` map: the global buffer, and the box in the map's order
    (innermost dimension first)."""

    name: str
    buffer: str
    box: tuple[int, ...]
    elem_bytes: int

    @property
    def bytes(self) -> int:
        n = self.elem_bytes
        for b in self.box:
            n *= b
        return n

    def tile(self, coords: list[int]) -> str:
        """The tile named by TMA coordinates (innermost first), outermost index first."""
        return f"{self.buffer}[{','.join(str(c // b) for c, b in reversed(list(zip(coords, self.box))))}]"


@dataclass(slots=True)
class Raw:
    """One op in the program's terms: an :mod:`protosim.ir` op ``kind``, the threads that
    execute it, its line and its fields (``bar``: an Addr; ``dst`` / ``src`` / ``reads`` /
    ``writes``: :class:`Touch`)."""

    kind: str
    mask: np.ndarray
    where: str
    f: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Touch:
    """A piece of a buffer an op reads or writes: ``elems`` elements from element ``offset``;
    ``tile`` the global tile it copies (TMA, thread copies), ``rows`` the first index each
    thread writes (per-thread stores: which warp writes which part)."""

    buf: BufferInfo
    offset: int
    elems: int
    tile: str = ""
    rows: Any = None
    cta: int | None = None
    """The cluster rank whose buffer it is (a 2-CTA MMA's operands and accumulator): ``Access.cta``."""
    flat: Any = None
    """A per-thread store's first element, per thread (an int when the threads agree): its
    stage, seen from the role that executes it (two writeback warpgroups, one ``Dsmem[wg]`` each)."""


PROTOCOL_PREFIXES = ("tirx.ptx.", "tirx.cuda.")

NO_EFFECT = {
    # orders register accesses of the warpgroup's wgmma; protosim models no registers
    "tirx.ptx.wgmma_fence",
    # the TMEM allocation permit; protosim models the columns, not the permit
    "tirx.ptx.tcgen05_relinquish_alloc_permit",
    # instrumentation
    "tirx.cuda.printf", "tirx.cuda.trap_when_assert_failed",
    "tirx.cuda.iket_mark", "tirx.cuda.iket_official_event", "tirx.cuda.iket_range_end", "tirx.cuda.iket_range_pop",
    "tirx.cuda.iket_range_push", "tirx.cuda.iket_range_start", "tirx.cuda.iket_sentinel_token",
}
"""Known calls with nothing to model."""

ARITHMETIC = frozenset({
    "abs", "abs_f", "abs_half", "add", "add_half", "add_int", "and", "bfe", "bfi", "bfind", "brev", "clz", "cnot",
    "copysign", "cos", "cvt", "cvt_pack", "div", "div_f", "ex2", "ex2_half", "fma", "fma_half", "lg2", "lop3",
    "mad_f", "mad_int", "max", "min", "mov", "mul", "mul_half", "mul_int", "neg", "not", "or", "popc", "prmt",
    "rcp", "rem", "rsqrt", "sad", "selp", "shl", "shr", "sin", "sqrt", "sub", "tanh", "xor", "half2float",
    "float22half2", "half8tofloat8", "float8tohalf8", "float_as_uint", "uint_as_float", "hmax2", "hmin2",
    "fadd2_rn", "fmul2_rn", "fdividef", "ffs_u32", "make_float2", "float2_x", "float2_y", "bfloat162float",
    "shfl_sync", "__shfl_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_xor_sync", "activemask",
    "__activemask", "get_tmem_addr", "mov_sreg", "tcgen05_encode_instr_descriptor",
    "runtime_instr_desc", "smem_addr_from_uint64",
})
"""Register arithmetic (``tirx.ptx.*`` / ``tirx.cuda.*``): a value, never protocol."""

TILE_REGISTER_OPS = frozenset({
    "add", "binary_chain", "binary_reduce", "cast", "exp", "exp2", "fdiv", "fill", "fma", "log2", "max", "maximum",
    "min", "minimum", "mul", "permute_layout", "reciprocal", "reduce_negate", "select", "silu", "sqrt", "sub", "sum",
    "unary_reduce", "zero", "memset",
})
"""Tile primitives that compute on registers (``T.tile.cast`` ...): no protocol when every
region they touch is thread-local."""


def _nums(args: list[Any]) -> list[Any]:
    return [a for a in args if not isinstance(a, str)]


def _strs(args: list[Any]) -> list[str]:
    return [a for a in args if isinstance(a, str)]


def _count(v: Any, what: str, node: Any, mask: np.ndarray | None = None) -> int:
    """An integer PTX cannot express negative (a group count, a sleep, columns, bytes)."""
    n = _int(v, what, node, mask)
    if n < 0:
        raise TirxError(f"{where(node)}: {what} is {n}; PTX takes it unsigned -- pass a value >= 0")
    return n


def _int(v: Any, what: str, node: Any, mask: np.ndarray | None = None) -> int:
    if isinstance(v, np.ndarray):
        full = v if mask is not None and v.shape == mask.shape else None
        if full is not None:
            v = v[mask]
        if v.size and (v == v.flat[0]).all():
            return int(v.flat[0])
        raise Divergent(f"{where(node)}: {what} differs between the threads that execute it; "
                        "protosim needs one value per op", full, mask)
    if isinstance(v, Opaque):
        raise TirxError(f"{where(node)}: {what} depends on {v.what}, which protosim does not compute")
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if not isinstance(v, (int, np.integer)):
        raise TirxError(f"{where(node)}: {what} = {v!r}; expected an integer")
    return int(v)


def _addr(v: Any, what: str, node: Any) -> Addr:
    if not isinstance(v, Addr):
        raise TirxError(f"{where(node)}: {what} is {v!r}, not the address of a buffer element "
                        "(T.address_of(buf[i]))")
    return v


def _own(v: Any, what: str, node: Any, op: str) -> Addr:
    """An address in the executing CTA's own shared memory: ``op`` cannot reach a peer's."""
    a = _addr(v, what, node)
    if a.cta is not None:
        raise TirxError(f"{where(node)}: {op} on {what} {a!r}, an address mapa made of cluster rank {a.cta}'s shared "
                        "memory; PTX gives this op the CTA's own (shared::cta) address -- protosim does not model "
                        "it on a peer's")
    return a


def _mask_ranks(mask: int, cluster: int, what: str, node: Any) -> tuple[int, ...]:
    """The cluster ranks a ``cta_mask`` names (bit r: rank r)."""
    if mask <= 0 or mask >> cluster:
        raise TirxError(f"{where(node)}: {what} cta_mask {mask:#b} names rank(s) outside the cluster of {cluster} "
                        f"CTA(s) (bits 0..{cluster - 1})" if mask > 0 else
                        f"{where(node)}: {what} cta_mask 0 names no CTA")
    return tuple(r for r in range(cluster) if mask >> r & 1)


def _cta_group(strs: list[str]) -> int:
    return 2 if any(s.strip(".") == "cta_group::2" for s in strs) else 1


class Recognizer:
    """The interpreter's sink for one CTA: collects :class:`Raw` ops in program order."""

    def __init__(self, maps: dict[int, TensorMap], aliases: dict[str, str] | None = None, budget: Budget | None = None,
                 cluster: int = 1):
        self.maps = maps
        self.cluster = cluster
        """CTAs per cluster: the ranks ``mapa`` and a ``cta_mask`` may name."""
        self.budget = budget or Budget()
        self.aliases = aliases if aliases is not None else {}
        """Unnamed buffer -> the name its call sites use (shared by every CTA's recognizer)."""
        self.ops: list[Raw] = []
        self.declared: dict[str, BufferInfo] = {}
        self._where: dict[int, str] = {}
        self._handlers: dict[str, Any] = {}
        self._desc_args: dict[int, tuple[list[str], str, str, str]] = {}
        self.desc: dict[str, Addr] = {}
        """wgmma descriptor variable -> the shared-memory address it was encoded from."""
        self.splits: list[list[np.ndarray]] = []
        """Groups of threads the interpreter ran one op site for separately (each agreeing on
        a value the others do not): they are different roles (``tags.find_roles``)."""

    def split(self, groups: list[np.ndarray]) -> None:
        self.splits.append(groups)

    # -- interpreter hooks ----------------------------------------------------------
    def declare(self, info: BufferInfo, node: Any) -> None:
        self.declared[info.name] = info

    def alias(self, bar: Addr, node: Any) -> None:
        """Name an unnamed barrier buffer by the variable its call site uses
        (``tma2mma.init(1)`` -> ``tma2mma``), once; the schedule then reads like the kernel."""
        info = bar.buf
        if not info.anonymous or info.name in self.aliases:
            return
        site = call_site(node)
        text = linecache.getline(site[0], site[1]) if site else ""
        m = _BARRIER_VAR.search(text)
        name = m.group(1) if m else None
        if name and name not in self.aliases.values() and name not in self.declared:
            self.aliases[info.name] = name
        else:
            self.aliases[info.name] = info.name

    def emit(self, kind: str, c: Cta, node: Any, **f: Any) -> None:
        self.budget.op(node)
        bar = f.get("bar")
        if bar is not None and bar.__class__ is Addr and bar.buf.anonymous:
            self.alias(bar, node)
        line = self._where.get(id(node))
        if line is None:
            line = self._where[id(node)] = where(node)
        self.ops.append(Raw(kind, c.mask, line, f))

    def call(self, op: str, args: list[Any], node: Any, c: Cta, raw: list[Any] | None = None) -> Any:
        handler = self._handlers.get(op)
        if handler is not None:
            return handler(args, node, c, raw)
        if op in NO_EFFECT:
            return None
        short = op.split(".", 2)[-1] if op.startswith(PROTOCOL_PREFIXES) else None
        handler = getattr(self, "_" + short, None) if short else None
        if handler is not None:
            self._handlers[op] = handler
            return handler(args, node, c, raw)
        if short in ARITHMETIC or (short or "").startswith(("cvt_", "mov_", "setp", "set_", "shfl", "redux", "vote",
                                                             "match_", "ldmatrix", "add_mixed", "mul_mixed")):
            return Opaque(f"the result of {op}")
        raise TirxError(f"{where(node)}: {op} is not an op protosim's TIRx frontend knows; docs/tirx.md lists "
                        "the supported calls -- an op that moves data or synchronises needs a model before it "
                        "can be checked")

    # -- mbarrier ---------------------------------------------------------------------
    def _mbarrier_init(self, args, node, c, raw):
        bar, count = _nums(args)[:2]
        self.emit("mbar_init", c, node, bar=_own(bar, "the barrier", node, "mbarrier.init"),
                  count=_count(count, "the count", node, c.mask))

    def _mbarrier_arrive(self, args, node, c, raw):
        nums = _nums(args)
        count = _count(nums[1], "the arrival count", node, c.mask) if len(nums) > 1 else 1
        self.emit("arrive", c, node, bar=_addr(nums[0], "the barrier", node), count=count)

    _mbarrier_arrive_nocount = _mbarrier_arrive

    def _mbarrier_arrive_expect_tx(self, args, node, c, raw):
        bar, nbytes = _nums(args)[:2]
        self.emit("arrive_expect_tx", c, node, bar=_addr(bar, "the barrier", node), bytes=_count(nbytes, "the byte count", node, c.mask))

    def _mbarrier_expect_tx(self, args, node, c, raw):
        bar, nbytes = _nums(args)[:2]
        self.emit("expect_tx", c, node, bar=_addr(bar, "the barrier", node), bytes=_count(nbytes, "the byte count", node, c.mask))

    def _wait(self, bar: Any, parity: Any, node: Any, c: Cta) -> None:
        self.emit("wait", c, node, bar=_own(bar, "the barrier", node, "mbarrier.try_wait"),
                  parity=_int(parity, "the parity", node, c.mask) & 1)

    def _mbarrier_try_wait_parity(self, args, node, c, raw):
        nums = _nums(args)
        if raw is not None and len(nums) >= 3:  # statement form: (result, barrier, parity[, hint])
            self._wait(nums[1], nums[2], node, c)
            return Result(DONE)
        self._wait(nums[0], nums[1], node, c)  # expression form: (barrier, parity)
        return DONE

    _mbarrier_try_wait_parity_no_hint = _mbarrier_try_wait_parity
    _mbarrier_test_wait_parity = _mbarrier_try_wait_parity

    def _mbarrier_wait(self, args, node, c, raw):  # T.cuda.mbarrier_wait(bar, parity): the blocking loop
        nums = _nums(args)
        self._wait(nums[0], nums[1], node, c)

    # -- TMA and bulk groups ------------------------------------------------------------
    def _map(self, v: Any, node: Any) -> TensorMap:
        m = self.maps.get(getattr(v, "key", None))
        if m is None:
            raise TirxError(f"{where(node)}: the TMA's tensor map is not one the kernel encodes with "
                            "runtime.cuTensorMapEncodeTiled; protosim reads the box from that call")
        return m

    def _cp_async_bulk_tensor_g2s_cta(self, args, node, c, raw):
        """``cp.async.bulk.tensor.Nd.shared::{cta,cluster}.global...`` -- operands ``dst, map,
        coords[N], mbar{, ctaMask}{, cache_policy}`` (tvm's ptx table), then the modifiers."""
        nums, strs = _nums(args), _strs(args)
        dim = next((int(x[0]) for x in strs if len(x) == 2 and x[0].isdigit() and x[1] == "d"), len(nums) - 3)
        multicast = "multicast::cluster" in strs
        if any(x.startswith("multicast::cluster::") for x in strs):
            raise TirxError(f"{where(node)}: {next(x for x in strs if x.startswith('multicast::cluster::'))} TMA is "
                            "not modelled; protosim reads .multicast::cluster with a 16-bit cta_mask")
        if len(nums) < dim + 3 + multicast:
            raise TirxError(f"{where(node)}: a {dim}-D TMA load with {len(nums)} operands; expected dst, map, "
                            f"{dim} coordinate(s), mbar{', cta_mask' if multicast else ''}")
        dst, tmap = nums[0], nums[1]
        coords, bar = nums[2:2 + dim], nums[2 + dim]
        m = self._map(tmap, node)
        dst = _own(dst, "the TMA destination", node, "a TMA load")
        coords = [_int(x, "a TMA coordinate", node, c.mask) for x in coords]
        tile = m.tile(coords)
        bar = _addr(bar, "the TMA's barrier", node)
        group = _cta_group(strs)
        f: dict[str, Any] = {}
        if multicast:
            mask = _int(nums[3 + dim], "the multicast cta_mask", node, c.mask)
            f["multicast"] = _mask_ranks(mask, self.cluster, "the TMA's", node)
        if bar.cta is not None and group != 2:
            raise TirxError(f"{where(node)}: a TMA load completing on cluster rank {bar.cta}'s barrier (a mapa'd "
                            "address) without .cta_group::2; PTX signals the destination CTA's own barrier")
        self.emit("tma_load", c, node, bar=bar, bytes=m.bytes,
                  dst=Touch(dst.buf, dst.offset, m.bytes // dst.buf.elem_bytes, tile), src=tile,
                  box=(m, tuple(coords)), **f)

    _cp_async_bulk_tensor_g2s_cluster = _cp_async_bulk_tensor_g2s_cta

    # -- clusters -------------------------------------------------------------------------
    def _mapa(self, args, node, c, raw):
        """``mapa.shared::cluster`` of a shared address into cluster rank ``b``: the same
        buffer element in that CTA (an :class:`Addr` with ``cta``; the CTA's own rank is its
        own address).  Statement form (``T.ptx.mapa(d, a, b)``) writes ``d``."""
        nums = _nums(args)
        statement = raw is not None
        a, b = (nums[1], nums[2]) if len(nums) >= 3 else (nums[0], nums[1])
        if isinstance(a, Addr) and a.cta is not None:
            raise TirxError(f"{where(node)}: mapa of {a!r}, itself an address mapa made; map the CTA's own address")
        a = _addr(a, "mapa's address", node)
        if isinstance(b, np.ndarray):
            act = b[c.mask] if b.shape == c.mask.shape else b
            if act.size and not (act == act.flat[0]).all():
                raise TirxError(f"{where(node)}: mapa's rank differs between the threads that execute it "
                                f"({sorted(set(act.tolist()))[:8]}); protosim reads one peer per op -- issue one "
                                "arrive per rank from one thread (docs/tirx.md, clusters)")
        rank = _int(b, "mapa's rank", node, c.mask)
        if not 0 <= rank < self.cluster:
            raise TirxError(f"{where(node)}: mapa into cluster rank {rank}, but the cluster has {self.cluster} "
                            f"CTA(s) (ranks 0..{self.cluster - 1})")
        out = Addr(a.buf, a.idx, None if rank == c.rank else rank)
        return Result(out) if statement else out

    _mapa_u32 = _mapa
    _mapa_u64_shared = _mapa

    def _cluster_sync(self, args, node, c, raw):  # T.cuda.cluster_sync(): barrier.cluster.arrive.aligned + wait.aligned
        self.emit("cluster_arrive", c, node, relaxed=False)
        self.emit("cluster_wait", c, node)

    def _barrier_cluster_arrive(self, args, node, c, raw):
        self.emit("cluster_arrive", c, node, relaxed="relaxed" in _strs(args))

    def _barrier_cluster_wait(self, args, node, c, raw):
        self.emit("cluster_wait", c, node)

    def _cp_async_bulk_tensor_s2g(self, args, node, c, raw):
        tmap, *coords, src = _nums(args)
        m = self._map(tmap, node)
        src = _own(src, "the TMA store's source", node, "a TMA store")
        tile = m.tile([_int(x, "a TMA coordinate", node, c.mask) for x in coords])
        self.emit("tma_store", c, node, bytes=m.bytes, src=Touch(src.buf, src.offset, m.bytes // src.buf.elem_bytes, tile))

    def _cp_async_bulk_commit_group(self, args, node, c, raw):
        self.emit("bulk_commit", c, node)

    def _cp_async_bulk_wait_group(self, args, node, c, raw):
        nums = _nums(args)
        self.emit("bulk_wait", c, node, n=_count(nums[0], "the group count", node, c.mask) if nums else 0,
                  read=any(s.strip(".") == "read" for s in _strs(args)))

    # -- Ampere cp.async ------------------------------------------------------------------
    def _cp_async(self, args, node, c, raw, nbytes_at: int = 2):
        nums = _nums(args)
        dst = _own(nums[0], "the cp.async destination", node, "cp.async")
        nbytes = _count(nums[nbytes_at], "the cp.async size", node, c.mask) if len(nums) > nbytes_at else 16
        self.emit("cp_async", c, node, bytes=nbytes, dst=Touch(dst.buf, dst.offset, nbytes // dst.buf.elem_bytes))

    _cp_async_ca = _cp_async
    _cp_async_cg = _cp_async

    def _cp_async_commit_group(self, args, node, c, raw):
        self.emit("cp_async_commit", c, node)

    def _cp_async_wait_group(self, args, node, c, raw):
        nums = _nums(args)
        self.emit("cp_async_wait", c, node, n=_count(nums[0], "the group count", node, c.mask) if nums else 0)

    def _cp_async_wait_all(self, args, node, c, raw):
        self.emit("cp_async_wait", c, node, n=0)

    # -- synchronisation ---------------------------------------------------------------
    def _cta_sync(self, args, node, c, raw):
        self.emit("cta_sync", c, node)

    def _warpgroup_sync(self, args, node, c, raw):
        nums = _nums(args)
        self.emit("named_barrier", c, node, barrier_id=_count(nums[0], "the named barrier", node, c.mask) if nums else 0,
                  threads=128)

    def _bar_sync(self, args, node, c, raw):
        nums = _nums(args)
        bid = _count(nums[0], "the named barrier", node, c.mask) if nums else 0
        if len(nums) > 1:
            self.emit("named_barrier", c, node, barrier_id=bid, threads=_count(nums[1], "the thread count", node, c.mask))
        elif bid == 0:
            self.emit("cta_sync", c, node)
        else:
            self.emit("named_barrier", c, node, barrier_id=bid, threads=c.threads)

    _barrier_sync = _bar_sync
    _bar_sync_count = _bar_sync
    _barrier_sync_count = _bar_sync

    def _warp_sync(self, args, node, c, raw):
        self.emit("warp_sync", c, node)

    _bar_warp_sync = _warp_sync

    def _fence(self, which: str, c: Cta, node: Any) -> None:
        self.emit("fence", c, node, fence=which)

    def _fence_proxy(self, args, node, c, raw):
        self._fence("proxy_async", c, node)

    def _fence_mbarrier_init(self, args, node, c, raw):
        self._fence("mbarrier_init", c, node)

    def _tcgen05_fence(self, args, node, c, raw):
        kind = next((s for s in _strs(args) if s.startswith("fence::")), "fence::")
        self._fence("tcgen05_" + kind.split("::", 1)[1], c, node)

    def _thread_fence(self, args, node, c, raw):
        self._fence("thread", c, node)

    def _nano_sleep(self, args, node, c, raw):
        self.emit("sleep", c, node, ns=_count(_nums(args)[0], "the sleep time", node, c.mask))

    # -- tcgen05 ------------------------------------------------------------------------
    def _tcgen05_alloc(self, args, node, c, raw):
        self.emit("tmem_alloc", c, node, columns=_count(_nums(args)[-1], "the TMEM columns", node, c.mask),
                  cta_group=self._pair(args, node, c, "tcgen05.alloc"))

    def _tcgen05_dealloc(self, args, node, c, raw):
        self.emit("tmem_dealloc", c, node, columns=_count(_nums(args)[-1], "the TMEM columns", node, c.mask),
                  cta_group=self._pair(args, node, c, "tcgen05.dealloc"))

    def _pair(self, args: list[Any], node: Any, c: Cta, op: str) -> int:
        """The op's ``.cta_group``; ``::2`` needs a cluster of whole pairs."""
        group = _cta_group(_strs(args))
        if group == 2 and self.cluster % 2:
            raise TirxError(f"{where(node)}: {op}.cta_group::2 in a cluster of {self.cluster} CTA(s); a CTA pair "
                            "needs a cluster of an even size (T.cta_id_in_cluster([2, ...]))")
        return group

    def _tcgen05_commit(self, args, node, c, raw):
        nums = _nums(args)
        bar = _addr(nums[0], "the commit's barrier", node)
        f: dict[str, Any] = {}
        if "multicast::cluster" in _strs(args):
            f["multicast"] = _mask_ranks(_int(nums[1], "the commit's cta_mask", node, c.mask), self.cluster,
                                         "tcgen05.commit's", node)
            if bar.cta is not None:
                raise TirxError(f"{where(node)}: a multicast tcgen05.commit on a mapa'd address (rank {bar.cta}); "
                                "the cta_mask names the CTAs -- pass the CTA's own barrier address")
        elif bar.cta is not None:  # .shared::cluster onto one peer's barrier: a multicast to that rank
            f["multicast"] = (bar.cta,)
            bar = Addr(bar.buf, bar.idx)
        self.emit("mma_commit", c, node, bar=bar, cta_group=self._pair(args, node, c, "tcgen05.commit"), **f)

    _tcgen05_commit_multicast = _tcgen05_commit

    def _tcgen05_wait(self, args, node, c, raw):
        if any("wait::st" in s for s in _strs(args)):
            raise TirxError(f"{where(node)}: tcgen05.wait::st -- TMEM stores are not modelled yet")
        self.emit("wait_ld", c, node)

    # -- wgmma --------------------------------------------------------------------------
    def _wgmma_encode_matrix_descriptor(self, args, node, c, raw):
        dst, src = _nums(args)[:2]
        self.desc[_addr(dst, "the descriptor", node).buf.name] = _own(src, "the descriptor's shared memory", node,
                                                                        "a wgmma descriptor")

    def _wgmma_commit_group(self, args, node, c, raw):
        self.emit("wgmma_commit", c, node)

    def _wgmma_wait_group(self, args, node, c, raw):
        nums = _nums(args)
        self.emit("wgmma_wait", c, node, n=_count(nums[0], "the group count", node, c.mask) if nums else 0)

    def _wgmma_ss(self, args, node, c, raw, a_from_smem: bool = True):
        site = self._desc_args.get(id(node))
        if site is None:  # the shape and which arguments are descriptor variables, once per call site
            shape = next((s for s in _strs(args) if s.startswith("m") and "n" in s and "k" in s), None)
            if shape is None or raw is None:
                raise TirxError(f"{where(node)}: a wgmma without its mMnNkK shape string")
            m, rest = shape[1:].split("n", 1)
            n, k = rest.split("k", 1)
            site = self._desc_args[id(node)] = ([a.source.name for a in raw if type(a).__name__ == "TensorLoad"
                                                 and a.source.name in self.desc], m, n, k)
        names, m, n, k = site
        descs = [self.desc[n] for n in names]
        if len(descs) < (2 if a_from_smem else 1):
            raise TirxError(f"{where(node)}: the wgmma's operand descriptors were not encoded with "
                            "T.cuda.wgmma.encode_matrix_descriptor before it")
        reads = descs[-2:] if a_from_smem else descs[-1:]
        self.emit("wgmma", c, node, m=int(m), n=int(n), k=int(k), reads=[Touch(a.buf, a.offset, 0) for a in reads],
                  a=reads[0].idx if a_from_smem else None, b=reads[-1].idx)

    def _wgmma_f16_ss(self, args, node, c, raw):
        self._wgmma_ss(args, node, c, raw)

    _wgmma_bf16_ss = _wgmma_f16_ss
    _wgmma_tf32_ss = _wgmma_f16_ss
    _wgmma_fp8_ss = _wgmma_f16_ss
    _wgmma_f16_f16acc_ss = _wgmma_f16_ss

    def _wgmma_f16_rs(self, args, node, c, raw):
        self._wgmma_ss(args, node, c, raw, a_from_smem=False)

    _wgmma_bf16_rs = _wgmma_f16_rs

    # -- thread stores ------------------------------------------------------------------
    def store(self, info: BufferInfo, idx: list[Any], node: Any, c: Cta, src: Any = None) -> None:
        if info.scope == "global":
            if not info.dtype.startswith("float") and not info.dtype.startswith("bfloat"):
                return  # integer global stores are instrumentation (diag words, trace rows): docs/tirx.md
            lo, hi = _box(idx, idx, c)
            self.emit("global_store", c, node, bytes=info.elem_bytes, glob=info.name, lo=lo, hi=hi)
            return
        if info.scope.startswith("shared"):
            cells = info.flat(tuple(idx))  # which element each thread writes: which part is whose
            if src is not None:
                glob, gidx = src
                lo, hi = _box(gidx, gidx, c)
                # one element per thread per store: a load of the element's width (ptxas keeps it so)
                self.emit("thread_copy", c, node, bytes=info.elem_bytes, per_thread=True, load_bytes=info.elem_bytes,
                          dst=Touch(info, 0, info.elems, rows=cells), glob=glob.name, lo=lo, hi=hi)
                return
            self.emit("smem_store", c, node, bytes=info.elem_bytes, dst=Touch(info, 0, info.elems, rows=cells))
            return
        raise TirxError(f"{where(node)}: a store into {info.scope} buffer {info.name} is not modelled")

    # -- tile primitives ----------------------------------------------------------------
    def tile(self, op: str, args: list[Any], config: dict[str, Any], dispatch: Any, scope: str, node: Any,
             c: Cta) -> None:
        name = op.rsplit(".", 1)[-1]
        regions = [a for a in args if isinstance(a, Region)]
        spaces = [_space(r.buf) for r in regions]
        if name in TILE_REGISTER_OPS and all(s == "local" for s in spaces):
            return
        if scope != "thread" or name in ("gemm_async", "copy_async"):
            for r in regions:  # one region per op: a per-thread corner is per-warp programs (split) or an error
                if _space(r.buf) == "local":
                    continue
                for m in r.mins:
                    if isinstance(m, np.ndarray):
                        _int(m, f"T.{scope}.{name}'s region {r!r} start", node, c.mask)
        if name in ("copy", "copy_async") and len(regions) == 2:
            dst, src = regions
            self._tile_copy(name == "copy_async", dst, src, config, dispatch, scope, node, c)
            return
        if name == "gemm_async" and str(dispatch) == "tcgen05":
            d, a, b = regions[:3]
            flags = [x for x in args if not isinstance(x, Region)]
            accumulate = bool(_int(flags[2], "gemm_async's accumulate flag", node, c.mask)) if len(flags) >= 3 else True
            group = self._tile_group(config, node, c, "gemm_async")
            if group == 2:  # the pair's MMA: M rows over both CTAs, each CTA's operands and accumulator
                if c.rank % 2:
                    raise TirxError(f"{where(node)}: a cta_group=2 gemm_async issued by cluster rank {c.rank}; the "
                                    "pair's MMA is issued by its even CTA (guard it with the rank's parity)")
                pair = (None, c.rank + 1)  # its own operands (cta None), then its peer's
                self.emit("mma", c, node, m=2 * d.extents[0], n=d.extents[1], k=a.extents[-1], accumulate=accumulate,
                          reads=[_touch(x, cta=r) for x in (a, b) for r in pair],
                          writes=[_touch(d, cta=r) for r in pair], cta_group=2)
                return
            self.emit("mma", c, node, m=d.extents[0], n=d.extents[1], k=a.extents[-1], accumulate=accumulate,
                      reads=[_touch(a), _touch(b)], writes=[_touch(d)])
            return
        raise TirxError(f"{where(node)}: T.{scope}.{name} over {', '.join(map(repr, regions))} (dispatch "
                        f"{dispatch}) is not a tile primitive protosim's TIRx frontend models (docs/tirx.md)")

    def _tile_copy(self, is_async: bool, dst: Region, src: Region, config: dict[str, Any], dispatch: Any,
                   scope: str, node: Any, c: Cta) -> None:
        ds, ss = _space(dst.buf), _space(src.buf)
        tma = str(dispatch).startswith("tma")
        if is_async and tma and ds == "shared" and ss == "global":
            bar = _addr(config.get("mbar"), "the TMA's barrier (mbar=)", node)
            tile = _tile_name(src)
            group = self._tile_group(config, node, c, "copy_async")
            f: dict[str, Any] = {}
            if "cta_mask" in config or "multicast" in config:
                raise TirxError(f"{where(node)}: T.{scope}.copy_async with a multicast cta_mask is not read yet; "
                                "write the multicast TMA as T.ptx.cp.async.bulk.tensor...multicast::cluster")
            if bar.cta is not None and group != 2:
                raise TirxError(f"{where(node)}: a TMA load completing on cluster rank {bar.cta}'s barrier (mbar= a "
                                "remote_view / mapa'd address) without cta_group=2")
            self.emit("tma_load", c, node, bar=bar, bytes=src.bytes, dst=_touch(dst, tile), src=tile, **f)
        elif is_async and tma and ds == "global" and ss == "shared":
            self.emit("tma_store", c, node, bytes=dst.bytes, src=_touch(src, _tile_name(dst)))
        elif is_async and ds == "local" and ss == "tmem":
            self.emit("tmem_load", c, node, bytes=src.bytes, src=_touch(src), scope=scope)
        elif not is_async and ds == "shared" and ss == "global":
            self.emit("thread_copy", c, node, bytes=src.bytes, dst=_touch(dst, _tile_name(src)), src=_tile_name(src),
                      scope=scope, per_thread=scope == "thread")
        elif not is_async and ds == "shared" and ss == "local":
            rows = dst.mins[-2] if len(dst.mins) > 1 else dst.mins[0]  # the row each thread writes
            self.emit("smem_store", c, node, bytes=dst.bytes, dst=Touch(dst.buf, 0, dst.buf.elems, rows=rows,
                                                                         flat=_flat(dst)),
                      per_thread=scope == "thread")
        elif not is_async and ds == "global" and ss == "local":
            lo, hi = _box(dst.mins, [m + e - 1 for m, e in zip(dst.mins, dst.extents)], c)
            self.emit("global_store", c, node, bytes=dst.bytes, per_thread=scope == "thread", glob=dst.buf.name,
                      lo=lo, hi=hi)
        elif not is_async and ds == "local" and ss == "shared":
            self.emit("local_load", c, node, bytes=src.bytes, src=_touch(src), per_thread=scope == "thread")
        elif ds == "local" and ss == "local":
            return
        else:
            raise TirxError(f"{where(node)}: T.{scope}.copy{'_async' if is_async else ''}({dst!r}, {src!r}) "
                            f"(dispatch {dispatch}) is not a copy protosim models: it reads TMA loads and stores, "
                            "TMEM loads, thread copies global->shared and register stores (docs/tirx.md)")


    def _tile_group(self, config: dict[str, Any], node: Any, c: Cta, op: str) -> int:
        """A tile primitive's ``cta_group`` (1 or 2; 2 needs a cluster of pairs)."""
        group = _int(config.get("cta_group", 1), f"{op}'s cta_group", node, c.mask)
        if group not in (1, 2):
            raise TirxError(f"{where(node)}: {op} with cta_group={group}; tcgen05 has cta_group 1 or 2")
        if group == 2 and self.cluster % 2:
            raise TirxError(f"{where(node)}: {op} with cta_group=2 in a cluster of {self.cluster} CTA(s); a CTA pair "
                            "needs a cluster of an even size")
        return group


def _space(buf: BufferInfo) -> str:
    if buf.scope.startswith("shared"):
        return "shared"
    if buf.scope in ("global", "tmem"):
        return buf.scope
    return "local"


def _box(lows: list[Any], highs: list[Any], c: Cta) -> tuple[list[int], list[int]]:
    """The box of global indices the active threads touch (per-thread values reduced)."""
    lo = [int(np.min(g[c.mask])) if isinstance(g, np.ndarray) else int(g) for g in lows]
    hi = [int(np.max(g[c.mask])) if isinstance(g, np.ndarray) else int(g) for g in highs]
    return lo, hi


def _tile_name(r: Region) -> str:
    """``A[bx*128:+128, k*64:+64]`` -> ``A[bx,k]``: each minimum in units of the region's extent."""
    parts = []
    for m, e in zip(r.mins, r.extents):
        if isinstance(m, np.ndarray):
            m = int(m.min())
        parts.append(str(int(m) // e) if e else str(m))
    return f"{r.buf.name}[{','.join(parts)}]"


def _flat(r: Region) -> Any:
    """The flat index of a region's first element, per thread where its corner is."""
    f: Any = 0
    for m, n in zip(r.mins, r.buf.shape or (0,) * len(r.mins)):
        f = f * n + m
    return f


def _touch(r: Region, tile: str = "", cta: int | None = None) -> Touch:
    mins = []
    for m in r.mins:
        if isinstance(m, np.ndarray):
            m = int(m.min())
        mins.append(int(m))
    return Touch(r.buf, r.buf.flat(tuple(mins)), r.elems, tile, cta=cta)


def tensor_maps(program: Any) -> dict[int, TensorMap]:
    """Every ``cuTensorMapEncodeTiled`` of the program: map variable -> :class:`TensorMap`.
    Arguments (tvm's runtime.cuTensorMapEncodeTiled): map, dtype, rank, global address,
    dims[rank], strides[rank-1] (bytes), box[rank], element strides[rank], interleave,
    swizzle, L2 promotion, OOB fill."""
    out = {}
    for key, a in program.tensor_maps().items():
        dtype, rank = a[0].value, int(a[1])
        glob = a[2]
        name = getattr(getattr(glob, "args", [None])[0], "name", None) if type(glob).__name__ == "Call" else None
        if name is None:
            name = str(glob).split(".")[0]
        box = tuple(int(x) for x in a[3 + rank + rank - 1: 3 + rank + rank - 1 + rank])
        out[key] = TensorMap(name=str(name), buffer=str(name), box=box, elem_bytes=dtype_bytes(dtype))
    return out
