"""A SIMT interpreter over a parsed TIRx ``PrimFunc``: one CTA at a time, every thread a lane.

Why the parsed PrimFunc (docs/tirx.md, ``prototypes/tirx/``): at that level ``T.inline``
macros are inlined, ``T.meta_var`` values substituted, compile-time ``if`` pruned, every
loop bound concrete for a config, and the tile primitives still name regions
(``A[bx*128:+128, k*64:+64]``) and the PTX calls their barriers -- the names the
schedule's tags need.  After ``LowerTIRx`` tiles become pool offsets and descriptor
arithmetic; in CUDA C the names are gone.

The program is compiled once into closures (:func:`compile_func`); :meth:`Program.run_cta`
runs them for one CTA.  A value is a Python ``int`` when every lane agrees (a warp-uniform
loop counter, a phase variable) and a numpy vector of one entry per thread of the CTA when
it depends on the thread (``tid == 0``, ``lane_id``, ``elect_sync()``).  ``if`` narrows the
*active mask*; a ``while`` runs until no active lane's condition holds.  What the program
computes on data (float registers, clock reads, atomics) is :class:`Opaque`: a branch on an
opaque value is an error, so instrumentation cannot silently steer the schedule.

Every protocol call, tile primitive and thread store is handed, with its evaluated
arguments, the active mask and its source line, to a *sink*
(:class:`protosim.frontends.tirx.recognize.Recognizer`), which knows what the ops mean; this
module only knows how to run a program.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from protosim.frontends.tirx.errors import Divergent, TirxError

WARP = 32


class Opaque:
    """A value the interpreter does not compute: data, a clock read, an atomic's result."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"


@dataclass(frozen=True)
class BufferInfo:
    """A buffer the program declares: its name, scope (``shared.dyn``, ``tmem``, ``global``,
    ``local``), element type and shape."""

    name: str
    scope: str
    dtype: str
    shape: tuple[int, ...]
    anonymous: bool = False
    """The program gave it no name (TIRx's barrier classes); ``name`` is the one
    ``func.script()`` prints, until a call site tells a better one (``Recognizer.alias``)."""

    @property
    def elems(self) -> int:
        return math.prod(self.shape)

    @property
    def elem_bytes(self) -> int:
        return dtype_bytes(self.dtype)

    def flat(self, idx: tuple[int, ...]) -> int:
        f = 0
        for i, s in zip(idx, self.shape):
            f = f * s + i
        return f


def dtype_bytes(dtype: str) -> int:
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return max(int(digits) // 8, 1) if digits else 1


@dataclass(frozen=True)
class Addr:
    """``address_of(buf[idx])``: one element of a buffer (an mbarrier, a tile's base).
    ``cta``: the cluster rank of the CTA whose shared memory it is, for an address ``mapa``
    made of a peer's (``None``: the executing CTA's own, a ``mapa`` of its own rank included)."""

    buf: BufferInfo
    idx: tuple[int, ...]
    cta: int | None = None

    @property
    def offset(self) -> int:
        return self.buf.flat(self.idx)

    def __repr__(self) -> str:
        at = "" if self.cta is None else f"@cta{self.cta}"
        return f"&{self.buf.name}[{','.join(map(str, self.idx))}]{at}"


@dataclass(frozen=True)
class VarRef:
    """``address_of(var)`` of a variable that is no buffer element (a TMA tensor map)."""

    name: str
    key: int


@dataclass(frozen=True)
class Region:
    """``buf[lo0:lo0+n0, ...]`` of a tile primitive, evaluated (a lane-divergent minimum is
    kept as a vector: a per-thread row)."""

    buf: BufferInfo
    mins: tuple[Any, ...]
    extents: tuple[int, ...]

    @property
    def elems(self) -> int:
        return math.prod(self.extents)

    @property
    def bytes(self) -> int:
        return self.elems * self.buf.elem_bytes

    def __repr__(self) -> str:
        return f"{self.buf.name}[{', '.join(f'{m}:+{e}' for m, e in zip(self.mins, self.extents))}]"


def where(node: Any) -> str:
    """``file.py:LINE`` of a node; an inlined macro gives its call sites and body line."""
    sp = getattr(node, "span", None) if node is not None else None
    if sp is None:
        return "?"
    if type(sp).__name__ == "SequentialSpan":
        return "+".join(_span(x) for x in sp.spans)
    return _span(sp)


def call_site(node: Any) -> tuple[str, int] | None:
    """(file, line) where the kernel's author wrote the call (the first span of an inlined
    macro: the call site in the kernel, not the library's body)."""
    sp = getattr(node, "span", None) if node is not None else None
    if sp is None:
        return None
    if type(sp).__name__ == "SequentialSpan":
        sp = sp.spans[0]
    return str(sp.source_name.name), int(sp.line)


def _span(sp: Any) -> str:
    return f"{str(sp.source_name.name).rsplit('/', 1)[-1]}:{sp.line}"


def uniform(v: Any, what: str, node: Any, mask: np.ndarray | None = None) -> Any:
    """A value every active thread (``mask``) agrees on, or a :class:`TirxError` (a
    lane-divergent trip count, barrier index, ...)."""
    if isinstance(v, np.ndarray):
        full = v if mask is not None and v.shape == mask.shape else None
        if full is not None:
            v = v[mask]
        if v.size and (v == v.flat[0]).all():
            return v.flat[0].item()
        raise Divergent(f"{where(node)}: {what} differs between threads ({v.tolist()[:6]}...); protosim "
                        "needs it the same in every thread of the CTA -- move the thread-dependent part into an if",
                        full, mask)
    if isinstance(v, Opaque):
        raise TirxError(f"{where(node)}: {what} depends on {v.what}, which protosim does not compute; "
                        "make it depend on launch values and loop counters only")
    return v


class Cta:
    """The state of one CTA's run: variable slots, the active mask, local buffers."""

    __slots__ = ("index", "slots", "mask", "full", "threads", "tid", "sink", "local", "ids", "block", "rank",
                 "cluster_id", "cluster_ctaid", "masks")

    def __init__(self, index: int, n_slots: int, threads: int, sink: Any):
        self.index = index
        """The CTA's index in the schedule: ``cluster * cluster_size + rank`` (CTAs of a cluster
        are consecutive, as protosim.ir.Schedule.cluster wants); without clusters the linear
        blockIdx, x fastest."""
        self.block: tuple[int, ...] = ()
        """blockIdx, one entry per grid dimension."""
        self.rank = 0
        """``%cluster_ctarank``: x fastest within the cluster."""
        self.cluster_id: tuple[int, ...] = ()
        """``%clusterid``, one entry per grid dimension."""
        self.cluster_ctaid: tuple[int, ...] = ()
        """``%cluster_ctaid``, one entry per grid dimension."""
        self.masks: dict[bytes, np.ndarray] = {}
        """The program's interned masks (``Program.masks``)."""
        self.slots: list[Any] = [None] * n_slots
        self.threads = threads
        self.tid = np.arange(threads, dtype=np.int64)
        self.mask = np.ones(threads, dtype=bool)
        self.full = True
        """Whether every thread is active (kept with ``mask``: cheaper than ``mask.all()``)."""
        self.sink = sink
        self.local: dict[int, list[Any]] = {}
        self.ids: dict[int, Any] = {}


Expr = Callable[[Cta], Any]
Stmt = Callable[[Cta], None]

SCOPE_IDS = {
    # ScopeIdDef.scope (tvm/tirx/exec_scope.py _SCOPE_BINDING_TO_PARENT_CUR) -> per-thread value
    3: lambda t: t // 128,          # cta -> warpgroup
    4: lambda t: t // WARP,         # cta -> warp
    5: lambda t: (t // WARP) % 4,   # warpgroup -> warp
    6: lambda t: t % WARP,          # warp -> thread (lane)
    7: lambda t: t,                 # cta -> thread
    8: lambda t: t % 128,           # warpgroup -> thread
}
CLUSTER_SCOPES = (0, 2, 9)
"""kernel -> cluster (``%clusterid``), cluster -> cta (``T.cta_id_in_cluster``: ``%cluster_ctaid``),
cluster -> cta_pair."""
MAX_THREADS = 1024
"""Threads per CTA on every GPU CUDA supports (Programming Guide, compute capabilities table)."""
MAX_GRID = 2**31 - 1
"""CUDA's largest gridDim.x."""
MAX_CLUSTER = 16
"""CTAs per cluster: 8 portable, 16 with cudaFuncAttributeNonPortableClusterSizeAllowed (sm_90+);
the arch's own limit is checked by the reader."""


def _and(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.logical_and(a, b)
    return bool(a) and bool(b)


def _or(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.logical_or(a, b)
    return bool(a) or bool(b)


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return a // b


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b, "FloorMod": lambda a, b: a % b, "Div": _div, "Mod": lambda a, b: a % b,
    "Min": lambda a, b: np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b),
    "Max": lambda a, b: np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b),
    "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b,
    "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b, "And": _and, "Or": _or,
    "BitwiseXor": lambda a, b: a ^ b, "BitwiseAnd": lambda a, b: a & b, "BitwiseOr": lambda a, b: a | b,
    "LShift": lambda a, b: a << b, "RShift": lambda a, b: a >> b,
}

PURE_CALLS = {"tirx.cuda.cvta_generic_to_shared", "tirx.reinterpret"}
"""Address conversions: the value passes through."""
OPAQUE_CALLS = {"tirx.cuda.clock64": "clock64", "tirx.cuda.globaltimer": "globaltimer",
                "tirx.cuda.atomic_add": "an atomic's result", "tirx.tvm_stack_alloca": "a tensor map",
                "tirx.buffer_data": "a buffer's address"}
"""Values that are data or time, never protocol: reading them is fine, branching on them is not."""


class Program:
    """A PrimFunc compiled to closures; :meth:`run_cta` runs one CTA through a sink."""

    masks: dict[bytes, np.ndarray]
    """Every distinct active mask, once: ops executed by the same threads share one array
    (so the schedule side caches per mask, across iterations and CTAs)."""

    def __init__(self, func: Any, args: dict[str, int]):
        self.func = func
        self._slot: dict[int, int] = {}
        self.buffers: dict[int, BufferInfo] = {}
        self._unnamed = 0
        self.masks = {}
        self.bound: set[int] = set()
        """Variables a ``Bind`` sets (compiled so far)."""
        self.views: dict[int, tuple[int, int]] = {}
        """Buffers declared over a bound variable (``T.decl_buffer(..., data=ptr)``): buffer ->
        (the variable's slot, element offset).  Such a buffer is a view of whatever address
        ``ptr`` holds -- a ``remote_view``'s barriers over a ``mapa``'d pointer."""
        self.thread_vars: set[int] = set()
        """Thread-id variables (the same values in every CTA): expressions of these only are folded."""
        self.locals: set[int] = set()
        self.grid: tuple[int, ...] = ()
        self.cluster_dims: tuple[int, ...] = ()
        """CTAs per cluster along each grid dimension (all 1: no cluster)."""
        self.threads = 0
        self.dyn_smem_bytes: int | None = None
        self.params: dict[str, Any] = {}
        self._param_values: list[tuple[int, Any]] = []
        for p in func.params:
            name = p.name
            if "BufferType" in str(p.ty):
                self._buffer(p, "global")
            else:
                self.params[name] = p
        for name, value in args.items():
            if name not in self.params:
                continue  # load_kernel names unknown --set keys; extract passes what applies
            self._param_values.append((self.slot(self.params[name]), value))
        for name, p in self.params.items():
            if name not in args:
                self._param_values.append((self.slot(p), 0))
        self._find_launch(func.body)
        self.body = self.stmt(func.body)

    # -- names ------------------------------------------------------------------
    def slot(self, var: Any) -> int:
        key = hash(var)
        s = self._slot.get(key)
        if s is None:
            s = self._slot[key] = len(self._slot)
        return s

    def _buffer(self, buf: Any, scope: str | None = None) -> BufferInfo:
        key = hash(buf)
        info = self.buffers.get(key)
        if info is None:
            shape = tuple(int(s) for s in buf.shape) if all(type(s).__name__ == "IntImm" for s in buf.shape) else ()
            name = buf.name
            anonymous = not name
            if anonymous:  # TIRx's barrier classes allocate unnamed buffers: name them as func.script() prints them
                name = "buffer" if not self._unnamed else f"buffer_{self._unnamed}"
                self._unnamed += 1
            info = self.buffers[key] = BufferInfo(name, scope or buf.scope(), str(buf.dtype), shape, anonymous)
        return info

    def _find_launch(self, body: Any) -> None:
        """The grid (CTA ids) and threads per CTA, from the ScopeIdDefStmts."""
        ext: dict[int, list[int]] = {}
        where_cluster: dict[int, Any] = {}
        stack = [body]
        while stack:
            n = stack.pop()
            t = type(n).__name__
            if t == "ScopeIdDefStmt":
                d = getattr(n, "def")
                if d.extents is None:
                    raise TirxError(f"{where(n)}: a thread/CTA id without an extent; give it one "
                                    "(T.cta_id([N]), T.thread_id([128]), ...)")
                ext[int(d.scope)] = [int(x) for x in d.extents]
                if int(d.scope) == 9 and any(int(x) != 1 for x in d.extents):
                    raise TirxError(f"{where(n)}: CTA pair ids ({n.script().strip()}) are not read yet; take the "
                                    "pair from T.cta_id_in_cluster (rank // 2) -- docs/tirx.md, clusters")
                where_cluster[int(d.scope)] = n
            elif t == "SeqStmt":
                stack.extend(n.seq)
            elif t == "For" and getattr(n, "thread_binding", None) is not None:
                raise TirxError(f"{where(n)}: `for ... in T.thread_binding(...)` ({n.thread_binding.thread_tag}) is not "
                                "read yet; declare the ids with T.cta_id([...]) / T.thread_id([...]) (docs/tirx.md)")
            for name in ("body", "then_case", "else_case"):
                c = getattr(n, name, None)
                if c is not None:
                    stack.append(c)
        self.grid = tuple(ext.get(1, [1]))
        self._find_cluster(ext, where_cluster)
        if 7 in ext:
            self.threads = ext[7][0]
        else:
            warps = ext.get(4, [0])[0] or ext.get(3, [1])[0] * ext.get(5, [4])[0]
            self.threads = warps * ext.get(6, [WARP])[0] if (4 in ext or 3 in ext or 5 in ext) else ext.get(8, [0])[0]
        if not self.threads:
            raise TirxError("the kernel declares no threads (T.thread_id / T.warpgroup_id / T.warp_id ...); "
                            "protosim needs the CTA's thread count")
        if self.threads % WARP:
            raise TirxError(f"{self.threads} threads per CTA is not a whole number of warps")
        if self.threads > MAX_THREADS:
            raise TirxError(f"{self.threads:,} threads per CTA; a CTA has at most {MAX_THREADS} (CUDA's limit) -- "
                            "check the extents of T.thread_id / T.warpgroup_id / T.warp_id_in_wg / T.lane_id")
        if self.n_ctas > MAX_GRID:
            raise TirxError(f"a grid of {self.n_ctas:,} CTAs; CUDA launches at most {MAX_GRID:,} per dimension "
                            "and protosim replays far fewer -- check T.cta_id's extents")

    def _find_cluster(self, ext: dict[int, list[int]], nodes: dict[int, Any]) -> None:
        """The cluster's shape: ``T.cta_id_in_cluster([cx, cy, cz])`` (the launch's cluster
        dims, x first, as tvm emits ``__cluster_dims__``) or, from ``%clusterid``'s extents
        (kernel -> cluster), the grid divided by them; both when both are declared."""
        dims = len(self.grid)
        inner = ext.get(2)
        outer = ext.get(0)
        if inner is None and outer is None:
            self.cluster_dims = (1,) * dims
            return
        node = nodes.get(2, nodes.get(0))
        if inner is not None and len(inner) > dims and any(x != 1 for x in inner[dims:]):
            raise TirxError(f"{where(node)}: a cluster of {inner} CTAs on a {dims}-D grid {list(self.grid)}; "
                            "give T.cta_id as many dimensions as the cluster")
        if inner is None:
            if len(outer) > dims or any(g % o for g, o in zip(self.grid, outer)):
                raise TirxError(f"{where(node)}: {len(outer)}-D cluster ids {outer} do not divide the grid "
                                f"{list(self.grid)} into whole clusters")
            inner = [g // o for g, o in zip(self.grid, outer)]
        inner = (list(inner) + [1] * dims)[:dims]
        for d, (g, c) in enumerate(zip(self.grid, inner)):
            if c < 1 or g % c:
                raise TirxError(f"{where(node)}: the grid's {'xyz'[d]} extent {g} is not a whole number of clusters "
                                f"of {c} -- CUDA refuses the launch; make the grid (T.cta_id) a multiple of the cluster")
        if outer is not None:
            want = [g // c for g, c in zip(self.grid, inner)]
            if (list(outer) + [1] * dims)[:dims] != want:
                raise TirxError(f"{where(nodes[0])}: cluster ids {outer}, but the grid {list(self.grid)} holds "
                                f"{want} clusters of {inner}")
        self.cluster_dims = tuple(inner)
        if self.cluster > MAX_CLUSTER:
            raise TirxError(f"{where(node)}: a cluster of {self.cluster} CTAs; CUDA allows at most {MAX_CLUSTER} "
                            "(8 portable)")

    @property
    def n_ctas(self) -> int:
        return math.prod(self.grid)

    @property
    def cluster(self) -> int:
        """CTAs per cluster (1: no cluster)."""
        return math.prod(self.cluster_dims) if self.cluster_dims else 1

    def place(self, c: Cta) -> None:
        """Set ``c``'s blockIdx and cluster ids from its schedule index: cluster ``index //
        cluster``, rank ``index % cluster`` (both x fastest), so a cluster's CTAs are
        consecutive schedule indices whatever the grid's and the cluster's shape."""
        if self.cluster == 1:
            rem, block = c.index, []
            for n in self.grid:
                block.append(rem % n)
                rem //= n
            c.block, c.rank = tuple(block), 0
            c.cluster_id, c.cluster_ctaid = c.block, (0,) * len(block)
            return
        q, r = divmod(c.index, self.cluster)
        c.rank = r
        cid, rid = [], []
        for g, k in zip(self.grid, self.cluster_dims):
            cid.append(q % (g // k))
            q //= g // k
            rid.append(r % k)
            r //= k
        c.cluster_id, c.cluster_ctaid = tuple(cid), tuple(rid)
        c.block = tuple(a * k + b for a, b, k in zip(cid, rid, self.cluster_dims))

    def run_cta(self, index: int, sink: Any) -> None:
        c = Cta(index, len(self._slot), self.threads, sink)
        c.masks = self.masks
        self.place(c)
        c.mask = self.masks.setdefault(c.mask.tobytes(), c.mask)
        for s, v in self._param_values:
            c.slots[s] = v
        self.body(c)

    # -- expressions ------------------------------------------------------------
    def expr(self, e: Any) -> Expr:
        """``e`` compiled; an expression of thread ids and constants only (``tid == 0``,
        ``warp_id * 32 + lane_id``) is the same in every CTA: computed once, then reused."""
        f = self._expr(e)
        if type(e).__name__ in BINARY or type(e).__name__ in ("Not", "Cast", "Select"):
            if self._thread_only(e):
                cache: list[Any] = []

                def once(c: Cta) -> Any:
                    if not cache:
                        cache.append(f(c))
                    return cache[0]
                return once
        return f

    def _thread_only(self, e: Any) -> bool:
        t = type(e).__name__
        if t in ("IntImm", "FloatImm", "StringImm"):
            return True
        if t == "Var":
            return hash(e) in self.thread_vars
        if t in BINARY:
            return self._thread_only(e.a) and self._thread_only(e.b)
        if t == "Not":
            return self._thread_only(e.a)
        if t == "Cast":
            return self._thread_only(e.value)
        if t == "Select":
            return all(self._thread_only(x) for x in (e.condition, e.true_value, e.false_value))
        return False

    def _expr(self, e: Any) -> Expr:
        if isinstance(e, (bool, int, float, str)):
            return lambda c, v=e: v
        t = type(e).__name__
        if t == "IntImm":
            v = int(e.value)
            return lambda c: v
        if t == "FloatImm":
            f = float(e.value)
            return lambda c: f
        if t == "StringImm":
            s = e.value
            return lambda c: s
        if t == "Var":
            s = self.slot(e)
            name = e.name

            def var(c: Cta) -> Any:
                v = c.slots[s]
                if v is None:
                    raise TirxError(f"{where(e)}: variable {name} is read before it is set")
                return v
            return var
        if t in BINARY:
            fn = BINARY[t]
            a, b = self.expr(e.a), self.expr(e.b)

            def binary(c: Cta) -> Any:
                x, y = a(c), b(c)
                if x.__class__ is Opaque:
                    return x
                if y.__class__ is Opaque:
                    return y
                return fn(x, y)
            return binary
        if t == "Not":
            a = self.expr(e.a)

            def not_(c: Cta) -> Any:
                x = a(c)
                if isinstance(x, np.ndarray):
                    return np.logical_not(x)
                return x if x.__class__ is Opaque else not x
            return not_
        if t == "Cast":
            a = self.expr(e.value)
            to_int = "int" in str(e.ty)

            def cast(c: Cta) -> Any:
                x = a(c)
                if to_int:
                    if isinstance(x, np.ndarray):
                        return x.astype(np.int64)
                    if isinstance(x, (bool, float)):
                        return int(x)
                return x
            return cast
        if t == "Select":
            return self._select(e.condition, e.true_value, e.false_value)
        if t == "TensorLoad":
            return self._load(e)
        if t == "Call":
            return self._call_expr(e)
        raise TirxError(f"{where(e)}: expression {t} ({e}) is not supported by protosim's TIRx frontend; "
                        "rewrite it with integer arithmetic (docs/tirx.md lists the subset)")

    def _select(self, cond: Any, tv: Any, fv: Any) -> Expr:
        k, a, b = self.expr(cond), self.expr(tv), self.expr(fv)

        def select(c: Cta) -> Any:
            x = k(c)
            if isinstance(x, np.ndarray):
                return np.where(x, a(c), b(c))
            if x.__class__ is Opaque:
                return x
            return a(c) if x else b(c)
        return select

    def _indices(self, indices: Any) -> list[Expr]:
        return [self.expr(i) for i in indices]

    @staticmethod
    def _const_index(info: BufferInfo, indices: Any) -> int | None:
        """The flat index of ``indices`` when all are constants (a scalar local: ``phase[0]``)."""
        if all(type(i).__name__ == "IntImm" for i in indices):
            return info.flat(tuple(int(i.value) for i in indices))
        return None

    def _load(self, e: Any) -> Expr:
        buf = e.source
        key = hash(buf)
        if key in self.locals:
            info = self.buffers[key]
            const = self._const_index(info, e.indices)
            if const is not None:
                return lambda c: _read(c.local[key], const, c.mask)
            idx = self._indices(e.indices)

            def local(c: Cta) -> Any:
                i = info.flat(tuple(uniform(f(c), f"index into {info.name}", e, c.mask) for f in idx))
                return _read(c.local[key], i, c.mask)
            return local
        data = Opaque(f"the data of {buf.name}")
        peer = self._peer_view(buf, e, "a load from")
        if peer is not None:
            def checked_load(c: Cta) -> Any:
                peer(c)
                return data
            return checked_load
        return lambda c: data

    def _call_expr(self, e: Any) -> Expr:
        op = e.op.name
        if op == "tirx.address_of":
            (x,) = e.args
            if type(x).__name__ == "TensorLoad" and hash(x.source) in self.views:
                return self._view_address(x, e)
            if type(x).__name__ == "TensorLoad":
                info = self._buffer(x.source)
                if all(type(i).__name__ == "IntImm" for i in x.indices):  # &bar[0], &descA[0]: one address
                    fixed = Addr(info, tuple(int(i.value) for i in x.indices))
                    return lambda c: fixed
                idx = self._indices(x.indices)
                what = f"address into {info.name}"

                def address(c: Cta) -> Addr:
                    vals = []
                    for f in idx:
                        v = f(c)
                        vals.append(v if v.__class__ is int else uniform(v, what, e, c.mask))
                    return Addr(info, tuple(vals))
                return address
            if type(x).__name__ == "Var":  # a tensor map (TMA's operand) or a scalar's address
                ref = VarRef(x.name, hash(x))
                return lambda c: ref
            raise TirxError(f"{where(e)}: address_of({x}) is not supported; take the address of a buffer element")
        if op in PURE_CALLS:
            return self.expr(e.args[-1])
        if op in ("tirx.if_then_else", "prim.if_then_else"):
            return self._select(*e.args)
        if op in OPAQUE_CALLS:
            value = Opaque(OPAQUE_CALLS[op])
            return lambda c: value
        if op in ("tirx.cuda.elect_sync", "tirx.ptx.elect_sync"):
            return _elect
        if op == "tirx.cuda.thread_rank":  # the thread's index in the CTA (threadIdx.x for a 1-D block)
            return lambda c: c.tid
        # A protocol call used as a value (a test_wait in a condition): the sink decides.
        args = [self.expr(a) for a in e.args]
        return lambda c: c.sink.call(op, [a(c) for a in args], e, c)

    def _view_address(self, x: Any, e: Any) -> Expr:
        """``address_of(view[i])`` of a buffer declared over a bound pointer: when the pointer
        holds an :class:`Addr` (a ``mapa``'d barrier: ``MBarrier.remote_view``), the element
        ``i`` places past it, in the pointed-to buffer and CTA; otherwise the view's own."""
        info = self._buffer(x.source)
        data, elem_offset = self.views[hash(x.source)]
        idx = self._indices(x.indices)
        what = f"address into {info.name}"

        def view_address(c: Cta) -> Addr:
            vals = tuple(uniform(f(c), what, e, c.mask) for f in idx)
            base = c.slots[data]
            if not isinstance(base, Addr):
                return Addr(info, vals)
            nbytes = (info.flat(vals) + elem_offset) * info.elem_bytes
            if nbytes % base.buf.elem_bytes:
                raise TirxError(f"{where(e)}: {info.name}[{vals}] is not an element of {base.buf.name}, which "
                                f"{info.name} views; protosim reads views of whole elements")
            return Addr(base.buf, _unflat(base.buf, base.offset + nbytes // base.buf.elem_bytes), base.cta)
        return view_address

    # -- statements -------------------------------------------------------------
    def stmt(self, st: Any) -> Stmt:
        t = type(st).__name__
        f = getattr(self, "_s_" + t, None)
        if f is None:
            raise TirxError(f"{where(st)}: statement {t} is not supported by protosim's TIRx frontend "
                            "(docs/tirx.md lists the subset)")
        return f(st)

    def _s_SeqStmt(self, st: Any) -> Stmt:
        body = [self.stmt(x) for x in st.seq]

        def seq(c: Cta) -> None:
            for s in body:
                s(c)
        return seq

    def _s_AttrStmt(self, st: Any) -> Stmt:
        if str(st.attr_key) == "tirx.dyn_smem_bytes" or "dyn_smem" in str(getattr(st, "attr_key", "")):
            try:
                self.dyn_smem_bytes = int(st.value)
            except (TypeError, ValueError):
                pass
        return self.stmt(st.body)

    def _s_Bind(self, st: Any) -> Stmt:
        self.bound.add(hash(st.var))
        s, v = self.slot(st.var), self.expr(st.value)

        def bind(c: Cta) -> None:
            c.slots[s] = v(c)
        return bind

    def _s_ScopeIdDefStmt(self, st: Any) -> Stmt:
        d = getattr(st, "def")
        scope = int(d.scope)
        ids = [self.slot(v) for v in d.def_ids]
        ext = [int(x) for x in d.extents]
        if scope in (1, 0, 2):  # blockIdx, %clusterid, %cluster_ctaid (place() set them), x first
            which = {1: "block", 0: "cluster_id", 2: "cluster_ctaid"}[scope]

            def cta_ids(c: Cta) -> None:
                vals = getattr(c, which)
                for d, s in enumerate(ids):
                    c.slots[s] = vals[d] if d < len(vals) else 0
            return cta_ids
        if scope == 9:  # cta_pair ids of extent 1 (others are refused in _find_launch)
            def pair_ids(c: Cta) -> None:
                for s in ids:
                    c.slots[s] = 0
            return pair_ids
        fn = SCOPE_IDS.get(scope)
        if fn is None or len(ids) != 1:
            raise TirxError(f"{where(st)}: thread id {st.script().strip()} is not supported; use T.thread_id, "
                            "T.warpgroup_id, T.warp_id_in_wg, T.lane_id")
        s0 = ids[0]
        self.thread_vars.add(hash(d.def_ids[0]))

        def thread_ids(c: Cta) -> None:
            c.slots[s0] = fn(c.tid)
        return thread_ids

    def _s_AllocBuffer(self, st: Any) -> Stmt:
        buf = st.buffer
        info = self._buffer(buf)
        if info.scope == "local" and info.shape and str(buf.dtype).startswith(("int", "uint", "bool")):
            key = hash(buf)
            self.locals.add(key)
            n = info.elems

            def alloc(c: Cta) -> None:
                c.local[key] = [0] * n + [{}]  # the cells, then _read's memo
            return alloc
        if info.scope.startswith("shared") and info.elems:
            sink_buf = info

            def declare(c: Cta) -> None:
                c.sink.declare(sink_buf, st)
            return declare
        return lambda c: None

    def _s_DeclBuffer(self, st: Any) -> Stmt:
        data = getattr(st, "data", None)
        if type(data).__name__ == "Var" and hash(data) in self.bound:
            off = st.buffer.elem_offset
            self.views[hash(st.buffer)] = (self.slot(data), int(off.value) if type(off).__name__ == "IntImm" else 0)
        info = self._buffer(st.buffer)
        if info.scope.startswith("shared") or info.scope == "tmem":
            def declare(c: Cta) -> None:
                c.sink.declare(info, st)
            return declare
        return lambda c: None

    def _peer_view(self, buf: Any, node: Any, what: str) -> Callable[[Cta], None] | None:
        """For a view over a bound pointer: a check that it does not point into a peer CTA's
        shared memory -- DSMEM loads and stores (through ``mapa``) are not modelled, and are
        refused rather than read as the CTA's own."""
        view = self.views.get(hash(buf))
        if view is None:
            return None
        data = view[0]
        name = self._buffer(buf).name

        def check(c: Cta) -> None:
            base = c.slots[data]
            if isinstance(base, Addr) and base.cta is not None:
                raise TirxError(f"{where(node)}: {what} {name}, a view of cluster rank {base.cta}'s shared memory "
                                f"({base!r}, mapa'd): DSMEM loads and stores are not read yet (issue 13) -- "
                                "protosim reads remote mbarrier arrives, multicast TMA and 2-CTA tcgen05")
        return check

    def _s_BufferStore(self, st: Any) -> Stmt:
        peer = self._peer_view(st.buffer, st, "a store into")
        if peer is not None:
            inner = self._s_BufferStore_(st)

            def checked_store(c: Cta) -> None:
                peer(c)
                inner(c)
            return checked_store
        return self._s_BufferStore_(st)

    def _s_BufferStore_(self, st: Any) -> Stmt:
        buf = st.buffer
        key = hash(buf)
        info = self._buffer(buf)
        idx = self._indices(st.indices)
        if key in self.locals:
            value = self.expr(st.value)
            const = self._const_index(info, st.indices)

            def store_local(c: Cta) -> None:
                i = const if const is not None else info.flat(
                    tuple(uniform(f(c), f"index into {info.name}", st, c.mask) for f in idx))
                v = value(c)
                cells = c.local[key]
                if cells[-1]:
                    cells[-1].clear()  # a write: what _read memoised may be stale
                if c.full:
                    cells[i] = v
                elif isinstance(v, (Opaque, Addr)):
                    cells[i] = v  # per-thread opaque values are not tracked
                else:
                    old = cells[i]
                    if isinstance(old, (Opaque, Addr)):
                        old = 0
                    if v.__class__ is int and old.__class__ is int and v == old:
                        return  # the same value in every thread: stays an int
                    cells[i] = np.where(c.mask, v, old)
            return store_local
        if info.scope == "local":
            return lambda c: None  # float registers: data, not protocol

        src = _global_load(st.value)
        if src is not None:  # a thread copy, element by element: smem[...] = A[...]
            src_info = self._buffer(src.source)
            src_idx = self._indices(src.indices)

            def copy(c: Cta) -> None:
                c.sink.store(info, [f(c) for f in idx], st, c, (src_info, [f(c) for f in src_idx]))
            return copy

        def store(c: Cta) -> None:
            c.sink.store(info, [f(c) for f in idx], st, c)
        return store

    def _s_IfThenElse(self, st: Any) -> Stmt:
        cond = self.expr(st.condition)
        then = self.stmt(st.then_case)
        other = self.stmt(st.else_case) if st.else_case is not None else None

        masks = self.masks

        def intern(m: np.ndarray) -> np.ndarray:
            return masks.setdefault(m.tobytes(), m)

        def if_(c: Cta) -> None:
            x = cond(c)
            if x.__class__ is Opaque:
                raise TirxError(f"{where(st)}: the condition `{st.condition}` depends on {x.what}, which protosim "
                                "does not compute; keep data and clocks out of the protocol's control flow")
            saved, full = c.mask, c.full
            if isinstance(x, np.ndarray):
                x = x.astype(bool)
                m = intern(saved & x)
                n = int(m.sum())
                if n:
                    c.mask, c.full = m, n == m.size
                    then(c)
                if other is not None:
                    m = intern(saved & ~x)
                    n = int(m.sum())
                    if n:
                        c.mask, c.full = m, n == m.size
                        other(c)
                c.mask, c.full = saved, full
            elif x:
                then(c)
            elif other is not None:
                other(c)
        return if_

    def _s_For(self, st: Any) -> Stmt:
        s = self.slot(st.loop_var)
        lo, n = self.expr(st.min), self.expr(st.extent)
        step = self.expr(st.step) if getattr(st, "step", None) is not None else (lambda c: 1)
        body = self.stmt(st.body)

        def for_(c: Cta) -> None:
            a = uniform(lo(c), "a loop's start", st, c.mask)
            b = uniform(n(c), "a loop's trip count", st, c.mask)
            d = uniform(step(c), "a loop's step", st, c.mask)
            if b > 0:
                c.sink.budget.loop(b, st)
            for i in range(a, a + b * d if d != 1 else a + b, d):
                c.slots[s] = i
                body(c)
        return for_

    def _s_While(self, st: Any) -> Stmt:
        cond = self.expr(st.condition)
        body = self.stmt(st.body)

        masks = self.masks

        def while_(c: Cta) -> None:
            saved, full = c.mask, c.full
            for _ in range((1 << 20) + 1):  # 2^20 iterations allowed; the one past them is refused
                x = cond(c)
                if x.__class__ is Opaque:
                    raise TirxError(f"{where(st)}: the loop condition `{st.condition}` depends on {x.what}; "
                                    "protosim reads wait loops only in the forms docs/tirx.md lists")
                m = masks.setdefault((c.mask & x).tobytes(), c.mask & x) if isinstance(x, np.ndarray) else \
                    (c.mask if x else None)
                n = int(m.sum()) if m is not None else 0
                if not n:
                    break
                c.mask, c.full = m, n == m.size
                c.sink.budget.loop(1, st)
                body(c)
            else:
                raise TirxError(f"{where(st)}: a while loop ran 2^20 times without ending")
            c.mask, c.full = saved, full
        return while_

    def _s_Evaluate(self, st: Any) -> Stmt:
        v = st.value
        t = type(v).__name__
        if t == "IntImm":
            return lambda c: None
        if t != "Call":
            raise TirxError(f"{where(st)}: T.evaluate of {t} is not supported")
        op = v.op.name
        if op in PURE_CALLS or op in OPAQUE_CALLS or op in ("tirx.tvm_call_packed", "tirx.call_packed"):
            return lambda c: None  # host-side tensor-map encoding is read by the sink at declare time
        args = [self._arg(a) for a in v.args]
        raw = list(v.args)

        result = None
        if raw and type(raw[0]).__name__ == "TensorLoad" and hash(raw[0].source) in self.locals:
            result = raw[0]  # a call that writes its result into its first argument (try_wait's `ok`)
        buf_key = hash(result.source) if result is not None else None
        res_idx = self._indices(result.indices) if result is not None else []

        template: list[Any] = []
        dynamic: list[tuple[int, Expr]] = []
        for i, a in enumerate(v.args):
            t = type(a).__name__
            if t in ("StringImm", "IntImm", "FloatImm") or (t == "TensorLoad" and hash(a.source) not in self.locals):
                template.append(args[i](None))  # a constant, or register data: evaluated once
            else:
                template.append(None)
                dynamic.append((i, args[i]))

        def call(c: Cta) -> None:
            try:
                vals = template.copy()
                for i, f in dynamic:
                    vals[i] = f(c)
                out = c.sink.call(op, vals, v, c, raw)
            except Divergent as d:
                _split(c, d, call)
                return
            if out is not None and out.__class__.__name__ == "Result":
                if buf_key is None:
                    raise TirxError(f"{where(v)}: {op} writes a result, but its first argument is no local variable")
                info = self.buffers[buf_key]
                i = info.flat(tuple(uniform(f(c), "a result's index", v, c.mask) for f in res_idx))
                cells = c.local[buf_key]
                if cells[-1]:
                    cells[-1].clear()
                old = cells[i]
                if isinstance(old, (Opaque, Addr)):
                    old = 0
                value = out.value
                if c.full or isinstance(value, (Opaque, Addr)):  # an address (mapa's) is not tracked per thread
                    c.local[buf_key][i] = value
                else:
                    c.local[buf_key][i] = np.where(c.mask, value, old)
        return call

    def _arg(self, a: Any) -> Expr:
        """A call argument; register data (``acc[i]`` of a wgmma) is not evaluated at all."""
        if type(a).__name__ == "TensorLoad" and hash(a.source) not in self.locals:
            data = Opaque(f"the data of {a.source.name}")
            return lambda c: data
        return self.expr(a)

    def _s_TilePrimitiveCall(self, st: Any) -> Stmt:
        args = []
        for a in st.args:
            if type(a).__name__ == "TensorRegion":
                args.append(self._region(a))
            else:
                args.append(self.expr(a))
        config = {str(k): self.expr(v) for k, v in st.config.items()}
        op, dispatch, scope = st.op.name, st.dispatch, str(st.scope.name)

        def tile(c: Cta) -> None:
            try:
                c.sink.tile(op, [a(c) for a in args], {k: v(c) for k, v in config.items()}, dispatch, scope, st, c)
            except Divergent as d:
                _split(c, d, tile)
        return tile

    def _region(self, r: Any) -> Expr:
        peer = self._peer_view(r.source, r, "a tile primitive over")
        inner = self._region_(r)
        if peer is None:
            return inner

        def checked_region(c: Cta) -> Region:
            peer(c)
            return inner(c)
        return checked_region

    def _region_(self, r: Any) -> Expr:
        info = self._buffer(r.source)
        mins = [self.expr(x.min) for x in r.region]
        if all(type(x.extent).__name__ == "IntImm" for x in r.region):
            extents = tuple(int(x.extent.value) for x in r.region)

            def region_const(c: Cta) -> Region:
                return Region(info, tuple(_active(m(c), c.mask) for m in mins), extents)
            return region_const
        exts = [self.expr(x.extent) for x in r.region]

        def region(c: Cta) -> Region:
            return Region(info, tuple(_active(m(c), c.mask) for m in mins),
                          tuple(uniform(e(c), "a region's extent", r, c.mask) for e in exts))
        return region

    def tensor_maps(self) -> dict[int, list[Any]]:
        """``cuTensorMapEncodeTiled`` calls of the host prologue: map variable -> the call's
        arguments, evaluated (global buffer, dims, strides, box)."""
        out: dict[int, list[Any]] = {}
        stack = [self.func.body]
        while stack:
            n = stack.pop()
            t = type(n).__name__
            if t == "Evaluate" and type(n.value).__name__ == "Call" and n.value.op.name in ("tirx.tvm_call_packed",
                                                                                           "tirx.call_packed"):
                a = list(n.value.args)
                if a and getattr(a[0], "value", None) == "runtime.cuTensorMapEncodeTiled":
                    out[hash(a[1])] = a[2:]
            elif t == "SeqStmt":
                stack.extend(n.seq)
            for name in ("body", "then_case", "else_case"):
                ch = getattr(n, name, None)
                if ch is not None:
                    stack.append(ch)
        return out


def _split(c: Cta, d: Divergent, run: Callable[[Cta], None]) -> None:
    """Run the op ``run`` once per group of the executing threads that agree on the value
    ``d`` found divergent -- when every group is whole warps' worth of their active threads
    (two MMA warps of one program, each waiting on its own barrier; two writeback
    warpgroups, each on its own named barrier).  The groups go to the sink
    (``split``), which keeps them from being one role.  Otherwise ``d`` is the error."""
    groups = _warp_groups(d.values, d.mask) if d.values is not None and d.mask is c.mask else None
    if groups is None:
        raise d
    groups = [c.masks.setdefault(g.tobytes(), g) for g in groups]
    c.sink.split(groups)
    saved, full = c.mask, c.full
    try:
        for g in groups:
            c.mask, c.full = g, False
            run(c)
    finally:
        c.mask, c.full = saved, full


def _warp_groups(values: np.ndarray, mask: np.ndarray) -> list[np.ndarray] | None:
    """The executing threads grouped by value, in order of their first thread; None unless
    there are several groups and no warp has threads in two of them."""
    active = np.flatnonzero(mask)
    vals = values[active]
    keys = list(dict.fromkeys(vals.tolist()))
    if len(keys) < 2:
        return None
    warp_of: dict[int, Any] = {}
    for t, v in zip(active.tolist(), vals.tolist()):
        if warp_of.setdefault(t // WARP, v) != v:
            return None
    groups = []
    for k in keys:
        g = np.zeros_like(mask)
        g[active[vals == k]] = True
        groups.append(g)
    return groups


def _unflat(buf: BufferInfo, flat: int) -> tuple[int, ...]:
    """The index of element ``flat`` of ``buf`` (row-major)."""
    if not buf.shape:
        return (flat,)
    idx = []
    for n in reversed(buf.shape):
        idx.append(flat % n)
        flat //= n
    return tuple(reversed(idx))


def _read(cells: list[Any], i: int, mask: np.ndarray) -> Any:
    """A local's value as the active threads see it: a plain int when they agree.

    A local written under a partial mask becomes a per-thread vector (the other threads keep
    their value), yet the threads that read it next usually agree -- a role's stage counter
    read inside that role's branch.  Giving them an int keeps the arithmetic that follows
    scalar; the answer is memoised per (cell, mask) until the cell is written again."""
    v = cells[i]
    if v.__class__ is not np.ndarray:
        return v
    memo = cells[-1]
    key = (i, id(mask))
    got = memo.get(key)
    if got is None:
        act = v[mask]
        got = memo[key] = int(act[0]) if act.size and (act == act[0]).all() and v.dtype != bool else v
    return got


def _active(v: Any, mask: np.ndarray) -> Any:
    """A region bound as the active threads see it: one int when they agree, else a
    vector whose inactive entries repeat an active one (so min/max see active values only)."""
    if v.__class__ is int or not isinstance(v, np.ndarray) or v.shape != mask.shape:
        return v
    act = v[mask]
    if act.size and (act == act[0]).all():
        return int(act[0])
    return np.where(mask, v, act.min() if act.size else 0)


def _global_load(e: Any) -> Any:
    """The global-buffer load a stored value is (through casts), if it is one."""
    while type(e).__name__ == "Cast":
        e = e.value
    if type(e).__name__ == "TensorLoad" and e.source.scope() == "global":
        return e
    return None


def _elect(c: Cta) -> np.ndarray:
    """``elect_sync()``: the first active lane of every warp with an active lane."""
    m = c.mask.reshape(-1, WARP)
    first = np.zeros_like(m)
    has = m.any(axis=1)
    first[np.flatnonzero(has), m.argmax(axis=1)[has]] = True
    return first.reshape(-1)  # a value; `if` interns the mask it makes of it


def compile_func(func: Any, args: dict[str, int]) -> Program:
    if type(func).__name__ != "PrimFunc":
        raise TirxError(f"expected a TIRx PrimFunc, got {type(func).__name__}")
    return Program(func, args)
