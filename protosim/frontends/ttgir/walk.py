"""The walk: execute the kernel's scalar arithmetic with the launch's values, unroll its
loops, take the branch an ``scf.if`` takes, and emit each role's schedule ops.

A kernel without ``ttg.warp_specialize`` is SPMD: one role, every warp running the same
stream.  With it, the ``default`` region and each ``partitionN`` are roles of their own
(``num_warps(W)`` warps each); the code around the op runs in the default role, and all
roles meet at a CTA barrier where the op starts and where it ends (the workers are
released into their partitions, and the op returns once every partition has finished).

The membar rule stands in for Triton's barrier-insertion pass: within a role, a barrier
among its warps goes between a synchronous shared-memory write (``local_alloc %v``,
``local_store``) and any later reader of that buffer (``local_load``, wgmma and tcgen05
operands, a TMA store, ``tmem_copy``), and between a read and a later write of it; and
after every ``async_wait`` (the copies other threads made become visible).  Explicit
barriers (``gpu.barrier`` / ``ttg.barrier``, in Gluon code or in IR printed after
Triton's membar pass) are kept.  Which data a read expects is decided afterwards, by
:mod:`protosim.frontends.ttgir.contents`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from math import prod
from typing import Any

from protosim.frontends.ttgir.axisinfo import access_operands, proven_width
from protosim.frontends.ttgir.layouts import crosses_warps, warps_along
from protosim.frontends.ttgir.registers import _tensor, element_bytes, math_instructions, moved, pointer_layout
from protosim.frontends.ttgir.scalars import _BIN, _CMP, _DIVIDES, _ITYPE, _UNSIGNED, _bits, _wrap
from protosim.frontends.ttgir.text import (
    _ATTR_DICT,
    _LOOP,
    _OPERAND,
    DEFAULT_MAX_OPS,
    MemDesc,
    Stmt,
    Ttgir,
    TtgirError,
    _err,
    _int,
    operand_head,
)
from protosim.ir import (
    WARP_PART,
    Access,
    Arrive,
    ArriveExpectTx,
    BulkCommit,
    BulkWait,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    CtaSync,
    Fence,
    GlobalLoad,
    GlobalLoadWait,
    GlobalStore,
    LocalLoad,
    MbarInit,
    MbarInval,
    Mma,
    MmaCommit,
    MmaSync,
    NamedBarrierSync,
    Op,
    RegisterMath,
    SmemStore,
    TmaLoad,
    TmaStore,
    TmemCopy,
    TmemLoad,
    TmemStore,
    Wait,
    WaitLd,
    WaitSt,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)
from protosim.pipeline import UseCounter

ROLE = "warps"
"""The one role of an SPMD kernel."""

VIEW_OPS = ("ttg.memdesc_index", "ttg.memdesc_subview", "ttg.memdesc_subslice", "ttg.memdesc_trans",
            "ttg.memdesc_reshape", "ttg.memdesc_reinterpret", "ttng.tmem_subslice")
"""Ops whose result is a view of (a stage of) a buffer: the view names the same storage."""

_MATH = ("arith.", "math.", "tt.reduce", "tt.extern_elementwise")
"""Statements that may be register math (``Walker.register_math`` decides)."""

_EMITS = {"ttg.async_copy_global_to_local": 1, "ttg.async_commit_group": 1, "ttg.async_wait": 2, "ttg.local_load": 1,
          "tt.dot": 1, "ttng.warp_group_dot": 2, "ttng.warp_group_dot_wait": 1, "ttng.init_barrier": 1,
          "ttng.tmem_load": 2, "ttng.tmem_store": 2, "ttg.local_store": 1, "tt.load": 1, "tt.store": 1,
          "tt.atomic_rmw": 1, "tt.atomic_cas": 1}
"""Schedule ops a statement always emits (predicated ones count 0): a lower bound for a loop body."""


@dataclass
class Role:
    """One role's emission state: its ops and the membar rule's bookkeeping."""

    name: str
    warps: int
    index: int
    named_barrier: int | None
    """``None``: the role is the whole CTA (``bar.sync 0``); else its named barrier id."""
    ops: list[Op] = field(default_factory=list)
    read_since_sync: set[str] = field(default_factory=set)
    written_since_sync: set[str] = field(default_factory=set)
    uses: UseCounter = field(default_factory=UseCounter)
    """This role's fills / arrivals per mbarrier (each role counts its own: UseCounter's contract)."""
    waits: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per mbarrier: (waits so far, the phase offset the first wait's parity set)."""
    unfenced: set[str] = field(default_factory=set)
    """Buffers the role wrote through the generic proxy (stores, cp.async) since its last
    ``fence.proxy.async``."""
    mma_reads: list[Access] = field(default_factory=list)
    """Shared memory read by the role's uncommitted wgmma groups (the membar rule's view of them)."""
    loading: dict[str, int] = field(default_factory=dict)
    """Values a ``tt.load`` of this role is still filling, and values computed from them ->
    the newest load (by issue number) they wait for: the first op that emits anything and
    reads one waits for it (``GlobalLoadWait``)."""
    loaded: int = 0
    """Loads (``tt.load``) this role has issued."""
    loads: dict[str, int] = field(default_factory=dict)
    """``tt.load`` sites of this role -> loads made there so far (the L2 model's keys)."""
    load_index: dict[str, int] = field(default_factory=dict)
    """A ``tt.load``'s result -> its newest issue number (``Walker.hoist_to``'s dependencies)."""
    floor: int = 0
    """Where the block being walked began in ``ops`` (a loop iteration, a branch): no load is
    hoisted above it."""


def _ws_stmt(body: list[Stmt]) -> Stmt | None:
    for st in body:
        if st.op == "ttg.warp_specialize":
            return st
        for reg in st.regions:
            found = _ws_stmt(reg.stmts)
            if found:
                return found
    return None


@dataclass(frozen=True)
class Addressed:
    """What a read or write through a pointer tensor addresses in one walk (``Walker.addressed``)."""

    pointer: str
    mask: str | None
    base: str
    """The pointer the offsets count from (a kernel argument, where the walk can follow it back)."""
    offsets: Any
    """The distinct unmasked element offsets, sorted (a numpy array; None where ``Walker.read_at``
    keeps the read)."""
    lanes: int
    reads: dict[str, Any]
    """The scalars the offsets and the mask were computed from, as this walk holds them."""
    defs: dict[str, Any]
    """The statements they were computed by (a later statement may reuse a name)."""
    per_cta: dict[str, str] | None
    """The per-CTA scalars among ``reads``, each with its root name (``name@line``); None when
    one of them cannot be computed again for another CTA (one made in a loop)."""
    full: Any = None
    """Every element's offset in the tensor's shape, -1 where masked off (for
    :func:`~protosim.frontends.ttgir.coalescing.lines_per_instruction`; not kept by ``read_at``)."""


class _Seen:
    """The walk's definitions, noting each one looked up (``Addressed.defs``)."""

    __slots__ = ("defined", "used")

    def __init__(self, defined: dict, used: dict):
        self.defined, self.used = defined, used

    def get(self, name: str, default=None):
        st = self.defined.get(name)
        if st is None:
            return default
        self.used[name] = st
        return st

    def __getitem__(self, name: str):
        st = self.used[name] = self.defined[name]
        return st


class Walker:
    """Walks one CTA's program: every CTA of a Triton launch runs the same ops (the
    program id only moves its global addresses), so one walk serves all."""

    def __init__(self, mod: Ttgir, launch: dict[str, Any], max_ops: int = DEFAULT_MAX_OPS, ctas: int = 1,
                 launch_name: str = "the launch file", grid: tuple[int, int, int] | None = None, cta: int = 0,
                 exact_keys: bool = False):
        self.mod = mod
        self.grid = grid or (ctas, 1, 1)
        gx, gy, _ = self.grid
        self.pid = (cta % gx, cta // gx % gy, cta // (gx * gy))
        self.per_cta: set[str] = set()
        """Values computed from the program id: they may differ between CTAs."""
        self.loop_depth = 0
        self.pipelined: set[str] = set()
        """Buffers a copy from global memory fills inside a loop: Triton's pipelined rings."""
        self.per_cta_control = False
        """Such a value decided what ops run: each CTA needs a walk of its own."""
        self.exact_keys = exact_keys
        """Each CTA is walked on its own (``read`` sets this for all of a persistent launch's walks):
        a read's key takes its coordinates' own values, nothing is re-keyed per CTA."""
        self.loop_defined: set[str] = set()
        """Names defined inside a loop (iter_args, induction variables, the body's results)."""
        self.aliases: set[str] = set()
        """``warp_specialize`` partitions' arguments: each names a value captured from outside."""
        self.carried_from: dict[str, tuple[str, ...]] = {}
        """A loop's iter_arg or result -> the values it takes (its init, the yielded value)."""
        self._roots: dict[str, tuple[str, ...]] = {}
        self._exchanges: dict[int, tuple[int, int] | None] = {}
        self.read_at: dict[tuple, tuple[str, Addressed]] = {}
        """The first read of each set of elements of a kernel argument: its key (:meth:`read_key`)."""
        self._env_of: dict[str, Any] = {}
        """A root's value in this walk (``name@line`` -> value), taken when it was found."""
        self.recipes: dict[str, tuple[str, dict[str, Stmt], dict[str, str], dict[str, Any]]] = {}
        """A root -> how to compute it for another CTA (:meth:`recipe`)."""
        self.env: dict[str, Any] = {}
        self.all_false: set[str] = set()
        """``i1`` tensors the walk knows to be false in every lane: a splat of a false ``i1``,
        a broadcast of one, an ``andi`` with one (a pipelined copy's mask past the last
        k-iteration).  Any other tensor may have a lane on."""
        self.poisoned: dict[str, str] = {}
        """Values with no value: a division by zero (MLIR's poison; the GPU's div/rem does not
        trap).  Triton computes a persistent loop's next tile ahead, past the last tile, so
        such a value is fine until something the walk needs depends on it."""
        for a in mod.args:
            if isinstance(launch.get(a), int):  # integer arguments (check_launch has vetted them)
                self.env["%" + a] = int(launch[a])
        self.views: dict[str, tuple[str, int, tuple[int, int] | None]] = {}
        self.alloc_at = {m.line: name for name, m in mod.allocs.items()}
        """The buffer each allocating statement makes (by line: names repeat across partitions)."""
        self.writes: dict[str, int] = {}
        self.barrier_counts: dict[str, int] = {}
        self.inits_unsynced = False
        self.launch = launch
        self.launch_name = launch_name
        self.max_ops = max_ops
        self.ctas = ctas
        self.iterations = 0
        self.defined: dict[str, Stmt] = {}
        ws = _ws_stmt(mod.body)
        if ws is None:
            self.roles = [Role(ROLE, mod.num_warps, 0, None)]
        else:
            parts = [r for r in ws.regions if r.label.startswith("partition")]
            self.roles = [Role("default", mod.num_warps, 0, 1)]
            for i, r in enumerate(parts):
                if r.warps is None or not 1 <= r.warps <= 32:
                    raise self.err(ws, f"{r.label} of ttg.warp_specialize has no num_warps(W) from 1 to 32: the line "
                                   f"at {r.line} is cut or hand-edited")
                self.roles.append(Role(r.label, r.warps, i + 1, 2 + i))
        self.role = self.roles[0]
        self.ws_seen: Stmt | None = None
        self.stmt_waits = False
        """The statement being walked waits for a load first (a load after it is not hoisted)."""
        self.math_results: dict[int, list[str]] = {}
        """id of a RegisterMath op -> the results of the statement it computes."""
        self.wait_covers: dict[int, int] = {}
        """id of a GlobalLoadWait op -> the newest load (issue number) it waits for."""

    # -- errors and the bound on work ----------------------------------------------
    def err(self, st: Stmt, message: str) -> TtgirError:
        return _err(self.mod.path, st.line, message)

    @property
    def ops(self) -> list[Op]:
        return self.role.ops

    @property
    def op_count(self) -> int:
        return sum(len(r.ops) for r in self.roles)

    @property
    def cost(self) -> int:
        return self.op_count * self.ctas + self.iterations

    def over(self, st: Stmt, what: str, total: int) -> TtgirError:
        return self.err(st, f"{what}: about {total:,} schedule ops ({self.ctas:,} CTA(s); one more per loop iteration), "
                        f"above the limit of {self.max_ops:,}; give a smaller launch in {self.launch_name} (a smaller K, "
                        "fewer ctas) or raise the limit: read(..., max_ops=N), protosim --max-ops N")

    # -- values -------------------------------------------------------------
    def value(self, token: str, st: Stmt) -> Any:
        if token in self.env:
            self.controls(token)
            return self.env[token]
        self.check_poison(token, st)
        base = token.split("#")[0]
        missing, load = self.unknown_sources(token, set())
        if load is not None:
            pointers = [a for a in missing if self.mod.arg_info.get(a) and self.mod.arg_info[a].type.startswith("!tt.")]
            raise self.err(st, f"{st.op} needs the value of {token}, which the kernel reads from memory (tt.load at "
                           f"line {load.line}{', through ' + ', '.join(pointers) if pointers else ''}): a bound or "
                           "branch that depends on data is not supported: the reader follows control flow from the "
                           "launch's values only (a loop count passed as a kernel argument is read)")
        if missing:
            raise self.err(st, f"{st.op} needs the value of {token}, which depends on kernel argument(s) "
                           f"{', '.join(missing)} the launch did not give; pass them in {self.launch_name} "
                           f"(e.g. {{\"{missing[0]}\": ...}}) -- arguments: {', '.join(self.mod.args)}")
        if base in self.defined:
            d = self.defined[base]
            raise self.err(st, f"{st.op} needs the value of {token}, the result of {d.op} at line {d.line}, which is not "
                           "a scalar integer the reader evaluates (a tensor, a float, or an op it does not evaluate)")
        raise self.err(st, f"{st.op} uses {token}, which is never defined before it: not valid TTGIR "
                       "(a line deleted or cut?)")

    def set_value(self, name: str, value: Any, poison: str | None = None) -> None:
        """``name`` takes ``value`` (``None``: no value the walk knows; ``poison``: why it has none)."""
        if value is not None:
            self.env[name] = value
        else:
            self.env.pop(name, None)
        if poison is not None and value is None:
            self.poisoned[name] = poison
        else:
            self.poisoned.pop(name, None)

    def check_poison(self, token: str, st: Stmt) -> None:
        if token in self.poisoned:
            raise self.err(st, f"{st.op} needs the value of {token}, which has none: {self.poisoned[token]}; "
                           f"check the values in {self.launch_name}")

    def unknown_sources(self, token: str, seen: set[str]) -> tuple[list[str], Stmt | None]:
        """What *token* is computed from that the walk has no value for: the kernel arguments the
        launch did not give, and the first ``tt.load`` on the way (a value read from memory)."""
        base = token.split("#")[0]
        if token in self.env or base in seen:
            return [], None
        seen.add(base)
        if base.lstrip("%") in self.mod.args:
            return [base.lstrip("%")], None
        d = self.defined.get(base)
        if d is None:
            return [], None
        out: list[str] = []
        load = d if d.op == "tt.load" else None
        for o in _OPERAND.findall(d.rest):
            args, found = self.unknown_sources(o, seen)
            out += [a for a in args if a not in out]
            load = load or found
        return out, load

    def known(self, token: str) -> bool:
        return token in self.env

    def bind(self, st: Stmt, value: Any, sources: list[str] = ()) -> None:
        if st.results:
            name = st.results[0].split(":")[0]
            self.env[name] = value
            self.poisoned.pop(name, None)
            self.copy_taint(name, *sources)

    def copy_taint(self, name: str, *sources: str) -> None:
        """``name`` differs between CTAs if any of ``sources`` does (it is computed from a program id)."""
        if any(s in self.per_cta for s in sources):
            self.per_cta.add(name)
        else:
            self.per_cta.discard(name)

    def controls(self, token: str) -> None:
        """``token`` decides what ops run (a bound, a branch, a stage, a predicate, a parity):
        if it differs between CTAs, each CTA must be walked on its own."""
        if token in self.per_cta:
            self.per_cta_control = True

    def program_id(self, st: Stmt) -> None:
        axis = "xyz".index(re.match(r"\s*([xyz])", st.rest).group(1)) if re.match(r"\s*[xyz]", st.rest) else 0
        self.bind(st, self.pid[axis])
        if st.results:
            self.per_cta.add(st.results[0].split(":")[0])

    def num_programs(self, st: Stmt) -> None:
        axis = "xyz".index(re.match(r"\s*([xyz])", st.rest).group(1)) if re.match(r"\s*[xyz]", st.rest) else 0
        self.bind(st, self.grid[axis])

    def predicate(self, st: Stmt, token: str | None) -> bool:
        """An op's ``i1`` predicate: true when absent; its value when the walk knows it."""
        if token is None:
            return True
        self.controls(token)
        self.check_poison(token, st)
        if token not in self.env:
            raise self.err(st, f"{st.op} is predicated on {token}, whose value the reader cannot evaluate (it comes from "
                           "a tensor or a loaded value): the op may or may not run; please report the kernel")
        return bool(self.env[token])

    def scalar(self, st: Stmt) -> None:
        ops = _OPERAND.findall(st.rest)
        bad = next((o for o in ops if o in self.poisoned), None)
        if bad is not None and st.results:
            name = self.result(st)
            self.env.pop(name, None)
            self.poisoned[name] = self.poisoned[bad]
            return
        typed = _ATTR_DICT.sub("", st.rest)  # an attribute such as {tt.divisibility = dense<128> : tensor<1xi32>} is no operand
        if "tensor<" in typed or "!tt.ptr" in typed.split(":")[-1]:
            if st.op == "arith.andi":
                self.mask(st)
            return  # tensors and pointers are not modelled (but an all-false mask is)
        t = _ITYPE.search(st.rest)
        bits = _bits(t.group(2) or t.group(1)) if t else 64
        src_bits = _bits(t.group(1)) if t else 64
        if st.op == "arith.constant":
            m = re.match(r'\s*(-?\d+|true|false)\s*(?::\s*(i\d{1,3}|index))?\s*$', _ATTR_DICT.sub("", st.rest))
            if m:
                v = m.group(1)
                self.bind(st, {"true": 1, "false": 0}[v] if v in ("true", "false")
                          else _wrap(_int(v, self.mod.path, st.line, "arith.constant"), bits))
            return
        if st.op in _BIN and len(ops) >= 2 and all(self.known(o) for o in ops[:2]):
            a, b = self.env[ops[0]], self.env[ops[1]]
            if st.op in _DIVIDES and b == 0:
                name = self.result(st)
                self.env.pop(name, None)
                self.poisoned[name] = f"{st.op} at line {st.line} divides by zero ({ops[1]} = 0) with this launch"
                return
            if st.op in _UNSIGNED:
                a, b = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
            self.bind(st, _wrap(_BIN[st.op](a, b), bits), ops[:2])
        elif st.op == "arith.cmpi" and len(ops) >= 2 and all(self.known(o) for o in ops[:2]):
            pred = st.rest.strip().split(",")[0].strip()
            if pred not in _CMP:
                raise self.err(st, f"arith.cmpi predicate {pred!r} is not one of {', '.join(_CMP)}")
            a, b = self.env[ops[0]], self.env[ops[1]]
            if pred.startswith("u"):
                a, b = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
            self.bind(st, int(_CMP[pred](a, b)), ops[:2])
        elif st.op == "arith.select" and len(ops) >= 3 and all(self.known(o) for o in ops[:3]):
            self.bind(st, self.env[ops[1]] if self.env[ops[0]] else self.env[ops[2]], ops[:3])
        elif st.op in ("arith.extsi", "arith.index_cast") and ops and self.known(ops[0]):
            self.bind(st, self.env[ops[0]], ops[:1])
        elif st.op in ("arith.extui", "arith.index_castui") and ops and self.known(ops[0]):
            v = self.env[ops[0]]
            self.bind(st, v & ((1 << src_bits) - 1) if v < 0 else v, ops[:1])
        elif st.op == "arith.trunci" and ops and self.known(ops[0]):
            self.bind(st, _wrap(self.env[ops[0]], bits), ops[:1])

    # -- storage ----------------------------------------------------------------
    def view_of(self, token: str, st: Stmt) -> tuple[str, int, tuple[int, int] | None]:
        """(buffer, stage, TMEM columns) a memdesc value names."""
        if token in self.views:
            return self.views[token]
        name = token.lstrip("%")
        if name in self.mod.allocs:
            return name, 0, None
        raise self.err(st, f"{st.op} on {token}, which is no shared-memory or TMEM buffer the reader knows "
                       "(a ttg.local_alloc / ttng.tmem_alloc or a view of one)")

    def buffer_of(self, token: str, st: Stmt) -> tuple[str, int]:
        buf, stage, _ = self.view_of(token, st)
        return buf, stage

    def alloc(self, buf: str) -> MemDesc:
        return self.mod.allocs[buf]

    def is_memdesc(self, token: str) -> bool:
        return token in self.views or token.lstrip("%") in self.mod.allocs

    def barrier_of(self, token: str, st: Stmt) -> str:
        buf, idx = self.buffer_of(token, st)
        if not self.alloc(buf).barrier:
            raise self.err(st, f"{st.op} on {token}, a {self.alloc(buf).elem} buffer: an mbarrier is an i64 "
                           "allocation (ttg.local_alloc ... memdesc<Nx1xi64>)")
        return f"{buf}[{idx}]"

    def initialized(self, name: str, st: Stmt) -> None:
        """A barrier used before any ``init_barrier`` in the walk is still declared (count 1,
        never installed): the replay reports the use as ``use_before_init`` -- a bug Gluon
        code can have (Triton's sanitizer tests ``test_barrier_use_without_init``)."""
        self.barrier_counts.setdefault(name, 1)

    def operands(self, st: Stmt, n: int, form: str) -> list[str]:
        ops = _OPERAND.findall(st.rest.split(" : ")[0])
        if len(ops) < n:
            raise self.err(st, f"{st.op} needs {n} operand(s) ({form}); found {len(ops)}: the line is cut or hand-edited")
        return ops

    def attr(self, st: Stmt, pattern: str, what: str, low: int = 0) -> int:
        m = re.search(pattern, st.rest)
        if not m:
            raise self.err(st, f"{st.op} without its {what}: the line is cut or hand-edited")
        v = _int(m.group(1), self.mod.path, st.line, f"{st.op} {what}")
        if v < low:
            raise self.err(st, f"{st.op} {what} = {v}: must be >= {low}")
        return v

    def result(self, st: Stmt) -> str:
        if not st.results:
            raise self.err(st, f"{st.op} without a result: not valid TTGIR")
        return st.results[0].split(":")[0]

    def content(self, buf: str) -> str:
        """The next write into ``buf``: ``buf#n``."""
        n = self.writes.get(buf, 0)
        self.writes[buf] = n + 1
        return f"{buf}#{n}"

    # -- which global data a read is: the L2 model's key --------------------------
    def roots(self, token: str) -> tuple[str, ...]:
        """The scalars computed from a program id, outside any loop, that ``token`` (a pointer
        tensor, a TMA coordinate or descriptor) is computed from, each as ``name@line`` (names
        repeat across ``warp_specialize`` partitions): the walk follows the definition back
        through tensor and scalar ops, loop-carried values and partition arguments and stops at
        each such scalar (one defined in a loop may change each iteration: it goes on to what
        that is made of).  Each root's recipe -- how to compute it again for another CTA -- is
        taken now, while its definitions are the ones in scope (:meth:`values_for`)."""
        memo = self._roots.get(token)
        if memo is not None:
            return memo
        found: set[str] = set()
        seen: set[tuple[str, int | None]] = set()
        stack: list[tuple[str, int | None]] = [(token, None)]
        while stack:
            item = stack.pop()
            if item in seen:
                continue
            seen.add(item)
            t, mod = item
            d = self.defined.get(t.split("#")[0])
            if self.exact_keys and mod is None and t in self.loop_defined and t in self.per_cta \
                    and isinstance(self.env.get(t), int) and t not in self.aliases:
                # This walk is this CTA's own, so a per-CTA scalar a loop computes (a grid-stride loop's
                # index, the tile coordinates decoded from it, a column sum's row) is a root at the value
                # it has when the read is made: two CTAs, or two iterations, that read one panel share it.
                found.add(f"{t}@now")
                continue
            if t in self.per_cta and t in self.env and t not in self.loop_defined and t not in self.aliases \
                    and d is not None:
                uid = f"{t}@{d.line}"
                self._env_of.setdefault(uid, self.env[t])
                if uid not in self.recipes:
                    self.recipes[uid] = self.recipe(t)
                if mod is not None and isinstance(self.env[t], int):
                    uid = f"{uid}~{mod}"
                    self._env_of.setdefault(uid, self.env[t] % mod)
                found.add(uid)
                continue
            if d is not None:
                operands = _OPERAND.findall(operand_head(d.rest))
                dividend = self.residue_of(d, operands)
                if dividend is not None:
                    stack.append(dividend)
                    continue
                inner = mod if d.op in _RING_OPS else None
                stack.extend((o, inner) for o in operands)
            stack.extend((c, mod) for c in self.carried_from.get(t, ()))
        memo = self._roots[token] = tuple(sorted(found))
        return memo

    def residue_of(self, d: Stmt, operands: list[str]) -> tuple[str, int] | None:
        """For a tensor remainder by a value every CTA shares (``offs % N``; ``offs & (2^k - 1)``):
        its dividend and the modulus.  The values such a tensor holds are fixed by its
        dividend's per-CTA part modulo ``N`` -- add, subtract and multiply keep residues -- so a
        read through it is keyed by the per-CTA scalars' residues (``%offs@16~8192``): CTAs
        ``N`` elements apart read the same bias.  None for any other op."""
        if len(operands) != 2 or "tensor<" not in d.rest:
            return None
        if d.op in ("arith.remsi", "arith.remui"):
            n = self.uniform_int(operands[1])
            return (operands[0], n) if n is not None and n > 0 else None
        if d.op == "arith.andi":
            for mask, other in ((operands[1], operands[0]), (operands[0], operands[1])):
                n = self.uniform_int(mask)
                if n is not None and n >= 0 and n & (n + 1) == 0:
                    return other, n + 1
        return None

    def uniform_int(self, token: str) -> int | None:
        """The integer every element of tensor ``token`` holds in every CTA (a splat of a value
        no program id reaches, a dense constant), else None."""
        d = self.defined.get(token.split("#")[0])
        if d is None:
            return None
        if d.op == "tt.splat":
            o = _OPERAND.findall(operand_head(d.rest))[:1]
            v = self.env.get(o[0]) if o and o[0] not in self.per_cta else None
            return v if isinstance(v, int) else None
        if d.op == "arith.constant":
            m = re.match(r"\s*dense<(-?\d+)>", d.rest)
            return int(m.group(1)) if m else None
        return None

    def recipe(self, name: str) -> tuple[str, dict[str, Stmt], dict[str, str], dict[str, Any]]:
        """How per-CTA scalar ``name`` is computed, as the walk sees it now: the definitions of
        it and of the per-CTA values it is made of, partition arguments as the values they
        capture, and the values of everything else it reads (constants, launch arguments)."""
        defs: dict[str, Stmt] = {}
        alias: dict[str, str] = {}
        consts: dict[str, Any] = {}
        stack = [name]
        while stack:
            t = stack.pop()
            if t in defs or t in alias or t in consts:
                continue
            if t in self.aliases and self.carried_from.get(t):
                alias[t] = self.carried_from[t][0]
                stack.append(alias[t])
                continue
            d = self.defined.get(t.split("#")[0])
            if t in self.per_cta and d is not None and d.op in _RECOMPUTE:
                defs[t] = d
                stack.extend(_OPERAND.findall(operand_head(d.rest)))
            elif t in self.env:
                consts[t] = self.env[t]
        return name, defs, alias, consts

    def global_key(self, base: str, tokens: list[str]) -> str:
        """The L2 model's key for a read: ``base`` (the buffer and its write number, the n-th
        read of a load site, a TMA tile's coordinates) names the same data in every CTA *unless*
        its address depends on the program id; then the values of the per-CTA scalars it is
        computed from join the key (``a@3|%offs_am@52=128``): two CTAs of one row of a GEMM's
        tiles read the same A panel, the decode GEMM's CTAs each their own slice of the weight.
        Every CTA of a launch walked once is re-keyed with its own values by
        ``protosim.frontends.ttgir._rekeyed``."""
        roots = sorted({r for t in tokens for r in self.roots(t)})
        if not roots:
            return base
        return keyed(base, {r: self.env[r[:-4]] if r.endswith("@now") else self._env_of[r] for r in roots})

    def tma_key(self, tokens: list[str], content: str) -> str:
        """A TMA load's key: its descriptor and coordinates, ``a_desc[0,64]`` -- the global tile
        itself, whichever CTA reads it and whenever (a persistent kernel's CTAs read one A panel at
        different points of their loops).  A coordinate computed from the program id joins as a
        per-CTA value (:meth:`global_key`); one the walk cannot evaluate leaves the old key, the
        destination's content (the n-th write into the buffer)."""
        desc, coords = tokens[0], tokens[1:]
        if not all(t in self.env for t in coords):
            return self.global_key(content, tokens)
        if self.exact_keys:  # this walk is this CTA's own: its coordinates' values are the tile
            return self.global_key(f"{desc.lstrip('%')}[{','.join(str(self.env[t]) for t in coords)}]", [desc])
        # one walk for every CTA: a coordinate computed from the program id outside the loops is
        # the CTA's (a root, re-keyed per CTA); one changing in a loop keeps this walk's value
        # next to the roots it is made of (a K/V tile: this iteration's offset, the CTA's head)
        fixed = ",".join("*" if t in self.per_cta and t not in self.loop_defined else str(self.env[t]) for t in coords)
        return self.global_key(f"{desc.lstrip('%')}[{fixed}]", tokens)

    def values_for(self, cta: int, uids: set[str]) -> dict[str, Any]:
        """What the per-CTA scalars ``uids`` (``name@line``, :meth:`roots`) hold in CTA ``cta`` of
        a launch this walk stands for: each recipe run again with that CTA's program ids, by the
        walk's own scalar rules.  A value it cannot compute keeps the CTA's index, so that it
        names that CTA's data alone."""
        gx, gy, _ = self.grid
        pid = (cta % gx, cta // gx % gy, cta // (gx * gy))
        saved = (self.env, self.pid, self.per_cta, self.per_cta_control, self.poisoned)
        out: dict[str, Any] = {}
        try:
            self.pid = pid
            for uid in uids:
                base, _, mod = uid.partition("~")  # a residue (:meth:`residue_of`): the value mod N
                name, defs, alias, consts = self.recipes[base]
                self.env, self.per_cta, self.poisoned = dict(consts), set(), {}
                self.per_cta_control = False

                def compute(t: str) -> None:
                    if t in self.env:
                        return
                    if t in alias:
                        compute(alias[t])
                        if alias[t] in self.env:
                            self.env[t] = self.env[alias[t]]
                        return
                    d = defs.get(t)
                    if d is None:
                        return
                    for o in _OPERAND.findall(operand_head(d.rest)):
                        compute(o)
                    if d.op == "tt.get_program_id":
                        self.program_id(d)
                    else:
                        self.scalar(d)

                compute(name)
                value = self.env.get(name, f"cta{cta}")
                out[uid] = value % int(mod) if mod and isinstance(value, int) else value
        finally:
            self.env, self.pid, self.per_cta, self.per_cta_control, self.poisoned = saved
        return out

    def access(self, token: str, st: Stmt, write: bool = False, part: int | None = None) -> Access:
        buf, stage, cols = self.view_of(token, st)
        return Access(buf, stage, self.content(buf) if write else "", part, columns=cols)

    # -- the membar rule ---------------------------------------------------------
    def sync(self) -> None:
        r = self.role
        r.ops.append(CtaSync() if r.named_barrier is None
                     else NamedBarrierSync(barrier_id=r.named_barrier, threads=32 * r.warps))
        r.read_since_sync.clear()
        r.written_since_sync.clear()

    def before_write(self, buf: str) -> None:
        if buf in self.role.read_since_sync or buf in self.role.written_since_sync:
            self.sync()  # membar: a write after other warps' reads (or writes) of the same buffer

    def before_read(self, buf: str) -> None:
        if buf in self.role.written_since_sync:
            self.sync()  # membar: a read of what other warps wrote (synchronously)

    def generic_write(self, buf: str) -> None:
        self.role.unfenced.add(buf)

    def async_read(self, buf: str) -> None:
        """The async proxy reads ``buf`` (a TMA store, a wgmma or tcgen05 operand): Triton's
        lowering puts ``fence.proxy.async`` between the role's own generic writes of it and
        this read (ProxyFenceInsertion; e.g. after cp.async.wait before a wgmma, in the PTX of
        3.6 and 3.9).  A write another role published is not fenced here: that is the
        writer's to do (``missing_proxy_fence``)."""
        if buf in self.role.unfenced:
            self.ops.append(Fence(fence="proxy_async"))
            self.role.unfenced.clear()

    def read_by_warps(self, buf: str) -> None:
        self.before_read(buf)
        self.role.read_since_sync.add(buf)

    def written_by_warps(self, buf: str) -> None:
        self.before_write(buf)
        self.role.written_since_sync.add(buf)

    def wait_use(self, name: str, parity: int) -> int:
        """The phase a role's wait is for.  Its first wait on a barrier is for the earliest
        phase the parity can name that is not already known complete before it -- the phases
        this role saw filled or released (its own uses, and those made before it started:
        the default warps' arrivals ahead of ``warp_specialize``), less one: on a fresh
        barrier parity 0 is phase 0 and parity 1 is phase -1 (a producer's wait for a free
        slot, which passes at once).  Each later wait is for the next phase, so a wait whose
        parity breaks the alternation is what ``wrong_parity`` reports."""
        if name not in self.role.waits:
            base = self.role.uses.count(name) - 1
            first = base if base % 2 == parity else base + 1
            self.role.waits[name] = (0, first)
        n, first = self.role.waits[name]
        self.role.waits[name] = (n + 1, first)
        return first + n

    # -- statements -------------------------------------------------------------
    def run(self, stmts: list[Stmt]) -> None:
        role = self.role
        floor, role.floor = role.floor, len(role.ops)
        try:
            for st in stmts:
                self.stmt(st)
        finally:
            role.floor = floor

    def stmt(self, st: Stmt) -> None:
        op = st.op
        for r in st.results:
            name = r.split(":")[0]
            self.defined[name] = st
            if self.loop_depth:
                self.loop_defined.add(name)
            # a name defined again (a later iteration, another partition) is all-false only if
            # this statement says so (mask, below)
            self.all_false.discard(name)
        if self.inits_unsynced and op.startswith("ttng.") and op != "ttng.init_barrier":
            self.sync()  # membar: one thread's mbarrier.init, then everyone may use the barrier
            self.inits_unsynced = False
        handler = _HANDLERS.get(op)
        if op == "ttg.convert_layout" and self.exchange(st) is None:
            handler = None  # registers or shuffles: a move that emits nothing (and passes a load's wait on)
        role = self.role
        math = self.register_math(st) if handler is None and op.startswith(_MATH) else None
        waits = self.reads_loading(st, handler is not None or math is not None) if role.loading else None
        self.stmt_waits = waits is not None
        n = len(role.ops)
        if handler is not None:
            handler(self, st)
        elif op.startswith("arith."):
            self.scalar(st)
        elif op in _MASK_OPS:
            self.mask(st)
        if math is not None:
            role.ops.append(math)
            if self.mod.ldg_in_flight:  # only a load that may move up reads it (hoist_to)
                self.math_results[id(math)] = [r.split(":")[0] for r in st.results]
            if op == "tt.reduce":
                self.reduce_across_warps(st)
        if waits is not None:  # before the first op the statement emitted that is not its membar barrier
            while n < len(role.ops) and isinstance(role.ops[n], (CtaSync, NamedBarrierSync)):
                n += 1
            role.ops.insert(n, waits)

    def register_math(self, st: Stmt) -> RegisterMath | None:
        """Float math on a tensor (an elementwise op, a reduction): its warp instructions by
        class (docs/semantics.md "Register math"); None for anything else."""
        if st.line in self.mod.fused_adds:
            return None  # the add half of an FMA: its multiply's instruction does both
        combine = None
        if st.op == "tt.reduce":
            combine = next((b.op for b in st.body if b.op.startswith(_MATH)), None)
        n = math_instructions(st.op, st.rest, self.mod.layouts, 32 * self.role.warps, combine)
        if n is None or not any(n):
            return None
        fp32, half, mufu, shfl = n
        return RegisterMath(fp32=fp32, half_rate=half, mufu=mufu, shfl=shfl)

    # data between warps: through shared memory ------------------------------------------
    def exchange(self, st: Stmt) -> tuple[int, int] | None:
        """For a ``ttg.convert_layout`` that hands elements to warps that did not hold them
        (``layouts.crosses_warps``): (rounds, bytes a round) of Triton's lowering through its
        scratch buffer -- each round a store, a barrier, a load -- the tensor's bytes in as few
        rounds as the kernel's shared memory allows (the metadata's ``shared``, which holds the
        scratch).  None for a move within warps, or layouts the reader does not read."""
        got = self._exchanges.get(st.line)
        if got is not None or st.line in self._exchanges:
            return got
        types = convert_types(st.rest)
        got = None
        if types is not None:
            (shape, elem, src), (_, _, dst) = types
            if crosses_warps(src, dst, shape, tuple(sorted(self.mod.layouts.items()))):
                total = prod(shape) * element_bytes(elem)
                cap = self.mod.metadata_shared or total
                per_round = min(total, cap)
                got = (-(-total // per_round), per_round)
        self._exchanges[st.line] = got
        return got

    def convert_layout(self, st: Stmt) -> None:
        """``ttg.convert_layout`` between warps (:meth:`exchange`): its rounds through the scratch."""
        rounds, per_round = self.exchange(st)
        for _ in range(rounds):
            self.through_scratch(per_round)

    def reduce_across_warps(self, st: Stmt) -> None:
        """A ``tt.reduce`` along a dimension spread over several warps: after each warp's own
        combines (its register math), the warps' partial results meet in the scratch -- a store,
        a barrier, a load -- as Triton lowers it.  Only blocked sources are read."""
        types = st.rest.rsplit(" : ", 1)[-1]
        src = _tensor(types)
        axis = re.search(r"axis\s*=\s*(\d+)", st.rest)
        out = _tensor(types.split("->", 1)[1]) if "->" in types else None
        if not src or not axis:
            return
        _, elem_bytes, layout = src
        n = warps_along(layout, int(axis.group(1)), self.mod.layouts)
        if not n or n < 2:
            return
        self.through_scratch((out[0] if out else 1) * n * max(4, elem_bytes))

    def through_scratch(self, nbytes: int) -> None:
        """One round through Triton's scratch buffer for layout conversions: every warp stores its
        share, then (the membar rule's barrier) loads what it needs; the next round's store
        waits for those loads (the rule's barrier again)."""
        buf = self.scratch()
        per_warp = max(1, -(-nbytes // self.role.warps))
        self.written_by_warps(buf)
        self.ops.append(SmemStore(bytes=per_warp, dst=Access(buf, 0, self.content(buf), WARP_PART)))
        self.read_by_warps(buf)
        self.ops.append(LocalLoad(bytes=per_warp, src=Access(buf, 0)))

    def scratch(self) -> str:
        """The scratch buffer's name, declared on first use: the metadata's ``shared`` beyond the
        IR's own allocations (at least 16 bytes; Triton reuses the scratch's bytes between
        conversions and lays it over dead allocations), so that it takes no more of the SM's
        shared memory than the compiled kernel does."""
        if SCRATCH not in self.mod.allocs:
            size = max(16, (self.mod.metadata_shared or 0) - self.mod.buffer_sum)
            self.mod.allocs[SCRATCH] = MemDesc(SCRATCH, 1, (size,), "i8", False)
        return SCRATCH

    # global memory through registers -------------------------------------------------
    def reads_loading(self, st: Stmt, emits: bool) -> GlobalLoadWait | None:
        """The scoreboard: the wait ``st`` makes its warps do for their global loads, if any.  A
        statement that emits ops (a store, a dot, ...) and reads a value a ``tt.load`` is still
        filling waits for that load, just before its first op that is not a barrier: until no
        more than the loads issued after it are out (loads return in order here).  An op that
        emits nothing (a register move, integer math) passes the wait on to whatever uses its
        result, and so does a loop that carries it (its iter_arg; ``loop``).  A branch or a
        warp_specialize waits before it."""
        role = self.role
        used = [role.loading[t] for t in _OPERAND.findall(st.rest) if t in role.loading]
        if not used:
            return None
        newest = max(used)
        if not emits:
            for r in st.results:
                role.loading[r.split(":")[0]] = newest
            return None
        if st.op == "scf.for":
            return None
        wait = GlobalLoadWait(pending=role.loaded - 1 - newest)
        if self.mod.ldg_in_flight:
            self.wait_covers[id(wait)] = newest
        role.loading = {v: j for v, j in role.loading.items() if j > newest}  # those are in now
        if st.op in ("scf.if", "ttg.warp_specialize"):
            role.ops.append(wait)
            return None
        return wait

    def global_load(self, st: Stmt) -> None:
        """``tt.load``: each warp issues its share of the tensor's ``ld.global`` instructions and moves on
        (docs/semantics.md "Global loads into registers")."""
        size, width = self.moved(st)
        name = self.result(st)
        site = name.lstrip("%").split("#")[0]
        role = self.role
        n = role.loads.get(site, 0)
        role.loads[site] = n + 1
        pointer, mask = access_operands(st)
        width = proven_width(self.mod, st, width, pointer, mask)
        got = self.addressed(pointer, mask)
        nbytes = max(32 * width, -(-size // role.warps))
        # ptxas's schedule, where the compile's metadata read it: one load out at a time (each used
        # before the next issues), and the registers fill a latency per load.  A window of several is
        # ptxas's rolling schedule across a loop's iterations, which rounds of latency would overstate
        # (set 5's GEMV: 5 out, refilled as they are used): not applied, not measured.
        limit = self.mod.ldg_in_flight
        in_flight = 1 if limit == 1 and nbytes // (32 * width) > 1 else 0
        load = GlobalLoad(bytes=nbytes, load_bytes=width, src=self.read_key(f"{site}@{n}", [pointer] if pointer else [], got),
                          memory_bytes=self.memory_bytes(got, size, nbytes), lines=self.lines(st, got, width),
                          in_flight=in_flight)
        at = self.hoist_to(st, load) if limit and not self.stmt_waits else len(role.ops)
        for j in range(at, len(role.ops)):  # each wait passed has one more load out behind the one it waits for
            w = role.ops[j]
            if isinstance(w, GlobalLoadWait):
                role.ops[j] = moved_wait = dataclasses.replace(w, pending=w.pending + 1)
                self.wait_covers[id(moved_wait)] = self.wait_covers.pop(id(w), None)
        role.ops.insert(at, load)
        role.loading[name] = role.load_index[name] = role.loaded
        role.loaded += 1

    def hoist_to(self, st: Stmt, load: GlobalLoad) -> int:
        """Where ``tt.load`` ``st`` issues among its warp's ops: ptxas issues a load as early as
        its operands allow, ahead of register math and of the waits for earlier loads, so that
        several are out at once (a LayerNorm backward's ``load x; extf; load dy; extf; ...``
        runs its loads back to back).  The load moves up past the block's trailing register math
        and load waits while (a) none of them computes its pointer, mask or other operand or waits
        for a load they were computed from, and (b) the ``ld.global`` instructions a thread would
        then have out stay within ``ldg_in_flight``, the most the compiled SASS has out at once.
        Never above the block it is in (a loop iteration, a branch), nor where an operand's
        origin is unknown."""
        role = self.role
        ops = role.ops
        chain = self.operand_chain(_OPERAND.findall(operand_head(st.rest)))  # pointer, mask, other
        if chain is None:
            return len(ops)
        names, loads = chain
        first_dep = min((role.load_index[x] for x in loads if x in role.load_index), default=None)
        mine = instructions(load)
        at = len(ops)
        while at > role.floor:
            prev = ops[at - 1]
            if isinstance(prev, RegisterMath):
                if names.intersection(self.math_results.get(id(prev), ())):
                    break
            elif isinstance(prev, GlobalLoadWait):
                covers = self.wait_covers.get(id(prev))
                if covers is None or (first_dep is not None and covers >= first_dep):
                    break
            else:
                break
            out = self.out_before(at - 1)
            if out is None or out + mine > self.mod.ldg_in_flight:
                break
            at -= 1
        return at

    def out_before(self, at: int, reach: int = 512) -> int | None:
        """``ld.global`` instructions a thread has out just before ``ops[at]``: the loads since
        the last wait and those that wait left out; None past ``reach`` ops back."""
        ops = self.role.ops
        out, pending, j = 0, None, at - 1
        while j >= 0 and at - j <= reach:
            op = ops[j]
            if isinstance(op, GlobalLoad):
                if pending is None:
                    out += instructions(op)
                elif pending > 0:
                    out += instructions(op)
                    pending -= 1
                if pending == 0:
                    return out
            elif isinstance(op, GlobalLoadWait) and pending is None:
                pending = op.pending
                if pending == 0:
                    return out
            j -= 1
        return out if j < 0 else None

    def operand_chain(self, tokens) -> tuple[set[str], set[str]] | None:
        """The values ``tokens`` are computed from, and the ``tt.load`` results among them (not
        looked behind); None when one's origin is not in this walk's definitions."""
        names: set[str] = set()
        loads: set[str] = set()
        todo = [t for t in tokens if t]
        while todo:
            base = todo.pop().split("#")[0]
            if base in names:
                continue
            names.add(base)
            if base in self.env or base.lstrip("%") in self.mod.args:
                continue
            came = self.carried_from.get(base)
            if came is not None:
                todo.extend(came)
                continue
            d = self.defined.get(base)
            if d is None:
                return None
            if d.op == "tt.load":
                loads.add(base)
                continue
            todo.extend(_OPERAND.findall(d.rest))
        return names, loads

    def global_store(self, st: Stmt) -> None:
        """``tt.store``: each warp's share of the tensor's ``st.global`` instructions (docs/semantics.md
        "Global stores").  Its bytes are the warp's share of the data, which DRAM takes back when
        they leave the L2: a scalar's one element, not a full warp instruction's worth -- its
        ``st.global`` count, ``bytes / (lanes x width)`` rounded up, is one all the same."""
        size, width = self.moved(st)
        pointer, mask = access_operands(st)
        if pointer is not None:
            width = proven_width(self.mod, st, width, pointer, mask)
        got = self.addressed(pointer, mask) if pointer is not None else None
        nbytes = -(-size // self.role.warps)
        self.ops.append(GlobalStore(bytes=nbytes, store_bytes=width,
                                    memory_bytes=self.memory_bytes(got, size, nbytes), lines=self.lines(st, got, width, True)))

    def addressed(self, pointer: str, mask: str | None) -> Addressed | None:
        """The elements a ``tt.load`` / ``tt.store`` / copy through ``pointer`` under ``mask``
        addresses in this walk (``values.addresses``), with what went into them; None where the
        pointer or the mask is not known."""
        from protosim.frontends.ttgir.values import addresses

        reads: dict[str, Any] = {}
        defs: dict[str, Stmt] = {}

        def scalar(t: str) -> Any:
            reads[t] = v = None if t in self.poisoned else self.env.get(t)
            return v

        got = addresses(pointer, mask, _Seen(self.defined, defs), scalar)
        if got is None:
            return None
        per_cta: dict[str, str] | None = {}
        for t in reads:
            if t not in self.per_cta:
                continue
            d = self.defined.get(t.split("#")[0])
            if d is None or t in self.loop_defined or t in self.aliases:
                per_cta = None  # a per-CTA value the walk cannot compute again for another CTA
                break
            uid = per_cta[t] = f"{t}@{d.line}"
            if uid not in self.recipes:
                self.recipes[uid] = self.recipe(t)
        base, offsets, lanes, full = got
        return Addressed(pointer, mask, base, offsets, lanes, reads, defs, per_cta, full)

    def lines(self, st: Stmt, got: Addressed | None, width: int, store: bool = False) -> float | None:
        """The 128-byte lines one warp instruction of this ``tt.load`` / ``tt.store`` touches, where
        that is more than contiguous lanes would (:mod:`~protosim.frontends.ttgir.coalescing`); else
        None.  A ``store``'s always, contiguous or not (each has its measured rate) -- unless its
        lanes are apart and its lines are not one run (spread over rows: None, the epilogue's
        measured cost; docs/semantics.md "Global stores")."""
        from protosim.frontends.ttgir.coalescing import coalesced_lines, line_counts

        if got is None or got.full is None or not got.offsets.size:
            return None
        lay = pointer_layout(st.rest.rsplit(" : ", 1)[-1], self.mod.layouts)
        if lay is None:
            return None
        counts = line_counts(got.full, lay[1], lay[0], width)
        if counts is None:
            return None
        n, run = counts
        if (n <= coalesced_lines(width) and not store) or (store and n > coalesced_lines(width) + 1 and not run):
            return None
        return round(n, 3)

    def memory_bytes(self, got: Addressed | None, size: int, nbytes: int) -> int | None:
        """A warp's share of the distinct, unmasked bytes a ``tt.load`` / ``tt.store`` of ``size``
        bytes addresses, where it differs from the op's ``nbytes``; else None.  Where the addresses
        are not evaluated (a gather through a loaded index), the warp's share of ``size``: a tensor
        smaller than one instruction a warp (a 64-wide ``cos`` row every warp holds) moves its own
        bytes from memory, not the instructions' (set 8's rotary counted 8x its cos/sin)."""
        share = -(-size // self.role.warps)
        if got is None or not got.lanes:
            memory = share
        else:
            memory = -(-got.offsets.size * (size // got.lanes) // self.role.warps)
        return None if memory == nbytes else memory

    def read_key(self, base: str, tokens: list[str], got: Addressed | None) -> str:
        """The L2 key of a read through a pointer tensor: its own (:meth:`global_key` of
        ``base``, the site and its n-th read) -- unless an earlier read of this walk addressed
        the very same elements of the same kernel argument, in this CTA and, computed again
        with their program ids, in two others; then that read's key.  A second pass over a row
        (RMSNorm's normalize loop, softmax's) re-reads what the first pass brought into the L2,
        and a loop that loads one bias each iteration reads it once from DRAM."""
        key = self.global_key(base, tokens)
        if got is None or not got.offsets.size:
            return key
        arg = got.base
        while arg in self.aliases and self.carried_from.get(arg):  # a partition's argument: what it captures
            arg = self.carried_from[arg][0]
        if arg.lstrip("%") not in self.mod.args:  # a pointer from a loop or a load: its value is not known
            return key
        import hashlib

        signature = (arg, got.offsets.size, hashlib.blake2b(got.offsets.tobytes(), digest_size=16).digest())
        # the offsets are not kept: a check evaluates them again (a walk makes many such reads)
        first = self.read_at.setdefault(signature, (key, dataclasses.replace(got, offsets=None, full=None)))
        if first[0] == key or first[0].partition("|")[2] != key.partition("|")[2]:
            return key
        return first[0] if self.same_in_other_ctas(first[1], got) else key

    def same_in_other_ctas(self, a: Addressed, b: Addressed) -> bool:
        """Whether two reads that address the same elements in this walk do so in every CTA: each
        evaluated again, from the statements and scalars it was computed from, with its per-CTA
        scalars as the second and the last CTA hold them.  A per-CTA scalar computed in a loop,
        or one the walk cannot recompute, fails."""
        if self.exact_keys or self.ctas == 1:  # this walk is the only CTA it stands for
            return True
        if a.per_cta is None or b.per_cta is None:
            return False
        if not a.per_cta and not b.per_cta:  # no program id in either: the same in every CTA
            return True
        from protosim.frontends.ttgir.values import addresses

        for cta in {1, self.ctas - 1}:
            values = self.values_for(cta, {*a.per_cta.values(), *b.per_cta.values()})
            seen = []
            for got in (a, b):
                there = {t: values[uid] for t, uid in got.per_cta.items()}
                if not all(isinstance(v, int) for v in there.values()):
                    return False
                at = addresses(got.pointer, got.mask, got.defs, {**got.reads, **there}.get)
                if at is None:
                    return False
                seen.append((at[0], at[1].tobytes()))
            if seen[0] != seen[1]:
                return False
        return True

    def global_atomic(self, st: Stmt) -> None:
        """``tt.atomic_rmw`` / ``tt.atomic_cas``: timed as the ``st.global`` of the same tensor
        (``atom.global...v4.f32`` for a ``[1, 4]`` fp32 layout in Triton's PTX).  On the H200 an
        fp32 tile's atomic add into lines in L2 retires at 0.8-0.85x the rate of the same tile's
        store, a tile's atomics into lines not in L2 at ~0.35x (each reads its line from DRAM
        first): results/silicon/microbench/2026-12-02_h200_atomic_rate.md.  Charged as the
        store: the difference is not modelled.  The old value it returns is not waited for
        (nothing the model times reads it)."""
        self.global_store(st)

    def moved(self, st: Stmt) -> tuple[int, int]:
        got = moved(st.rest.rsplit(" : ", 1)[-1], self.mod.layouts)
        if got is None:
            raise self.err(st, f"{st.op} without a pointer type after its operands (tensor<...x!tt.ptr<T>, #layout> or "
                           "!tt.ptr<T>): the line is cut or hand-edited")
        return got

    # views ---------------------------------------------------------------------
    def memdesc_view(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%source")
        buf, stage, cols = self.view_of(ops[0], st)
        if st.op == "ttg.memdesc_index":
            ops = self.operands(st, 2, "%buffer[%index]")
            idx = self.value(ops[1], st)
            stages = self.alloc(buf).stages
            if stage != 0 or not 0 <= idx < stages:
                raise self.err(st, f"ttg.memdesc_index {ops[0]}[{ops[1]}]: index {idx} with this launch, but %{buf} "
                               f"has {stages} stage(s) (0..{stages - 1}): a stage outside its buffer")
            stage = idx
        elif st.op == "ttng.tmem_subslice":
            n = self.attr(st, r'\b(?:N|offset)\s*=\s*(\d+)', "{N = column} (3.6) / {offset = column} (3.9) attribute")
            width = re.findall(r'memdesc<(?:\d+x)*(\d+)x\w+', st.rest)
            lo = (cols[0] if cols else 0) + n * max(1, self.alloc(buf).columns // max(1, self.alloc(buf).tile[-1]))
            cols = (lo, lo + (int(width[-1]) if width else 1))
        self.views[self.result(st)] = (buf, stage, cols)

    # shared memory -----------------------------------------------------------------
    def bind_alloc(self, st: Stmt) -> str:
        """The result of an allocation names its buffer (a name a sibling partition used is
        another buffer)."""
        buf = self.alloc_at[st.line]
        self.views[self.result(st)] = (buf, 0, None)
        return buf

    def local_alloc(self, st: Stmt) -> None:
        buf = self.bind_alloc(st)
        if not st.rest.lstrip().startswith("%"):
            return  # an allocation without a value: storage only (parse() declared it)
        self.written_by_warps(buf)
        md = self.alloc(buf)
        self.generic_write(buf)
        self.ops.append(SmemStore(bytes=max(1, md.stage_bytes // self.role.warps),
                                  dst=Access(buf, 0, self.content(buf), WARP_PART)))

    def tmem_alloc(self, st: Stmt) -> None:
        buf = self.bind_alloc(st)
        ops = self.operands(st, 0, "")
        if ops:  # tmem_alloc %v: the warps store the initial value
            dst = self.access(self.result(st), st, write=True, part=WARP_PART)
            self.ops.extend([TmemStore(bytes=max(1, self.alloc(buf).stage_bytes // self.role.warps), dst=dst), WaitSt()])
            self.sync()  # the same lowering as tmem_store: wait::st, then a barrier

    def local_store(self, st: Stmt) -> None:
        ops = self.operands(st, 2, "%value, %destination")
        buf, stage = self.buffer_of(ops[1], st)
        self.written_by_warps(buf)
        md = self.alloc(buf)
        self.generic_write(buf)
        self.ops.append(SmemStore(bytes=max(1, md.stage_bytes // self.role.warps),
                                  dst=Access(buf, stage, self.content(buf), WARP_PART)))

    def local_load(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%source")
        buf, stage = self.buffer_of(ops[0], st)
        self.read_by_warps(buf)
        self.ops.append(LocalLoad(bytes=max(1, self.alloc(buf).stage_bytes // 2), src=Access(buf, stage)))

    def mask(self, st: Stmt) -> None:
        """Keep :attr:`all_false` up to date for an ``i1`` tensor this statement defines."""
        if not st.results:
            return
        name = self.result(st)
        ops = _OPERAND.findall(_ATTR_DICT.sub("", st.rest))
        if st.op == "tt.splat":
            i1 = bool(ops) and _I1_TENSOR.search(st.rest) is not None
            if i1:
                self.controls(ops[0])  # a mask that differs between CTAs: each CTA walked on its own
            off = i1 and ops[0] in self.env and not self.env[ops[0]]
        elif st.op == "tt.broadcast":
            off = bool(ops) and ops[0] in self.all_false
        else:  # arith.andi
            off = any(o in self.all_false for o in ops[:2])
        if off:
            self.all_false.add(name)
        else:
            self.all_false.discard(name)

    def async_copy(self, st: Stmt) -> None:
        ops = self.operands(st, 2, "%pointers, %destination")
        dst = next((o for o in ops[1:] if self.is_memdesc(o)), None)
        if dst is None:
            raise self.err(st, "ttg.async_copy_global_to_local without a shared-memory destination the reader knows")
        buf, stage = self.buffer_of(dst, st)
        self.before_write(buf)
        md = self.alloc(buf)
        if self.loop_depth:
            self.pipelined.add(buf)
        self.generic_write(buf)
        masked = _MASK_OPERAND.search(st.rest)
        content = self.content(buf)
        got = self.addressed(ops[0], masked.group(1) if masked else None)
        self.ops.append(CpAsync(bytes=max(1, md.stage_bytes // self.role.warps),
                                dst=Access(buf, stage, content, WARP_PART),
                                src=self.read_key(f"{buf}@{self.writes[buf] - 1}", ops[:1], got),
                                zero_fill=masked is not None and masked.group(1) in self.all_false))

    def async_wait(self, st: Stmt) -> None:
        n = self.attr(st, r'num\s*=\s*([-+]?\d+)', "{num = N} attribute")
        self.ops.append(CpAsyncWait(n=n))
        self.sync()  # membar: other threads' copies become visible after a barrier

    def barrier(self, st: Stmt) -> None:
        self.sync()

    # MMAs ------------------------------------------------------------------------
    def dot_shape(self, st: Stmt) -> tuple[int, int, int]:
        """(M, N, K) from a dot's operand and result types."""
        shapes = re.findall(r'(?:tensor|memdesc)<(\d+)x(\d+)x', st.rest)
        if len(shapes) < 2:
            raise self.err(st, f"cannot read the {st.op}'s operand shapes (tensor<MxK...> * tensor<KxN...>): the line is "
                           "cut or hand-edited")
        (m, k), (_, n) = shapes[0], shapes[1]
        dims = [_int(d, self.mod.path, st.line, f"{st.op} shape") for d in (m, n, k)]
        if min(dims) < 1:
            raise self.err(st, f"{st.op} of shape {dims[0]}x{dims[1]}x{dims[2]}: every dimension must be >= 1")
        return dims[0], dims[1], dims[2]

    def dot(self, st: Stmt) -> None:
        m, n, k = self.dot_shape(st)
        self.ops.append(MmaSync(m=m, n=n, k_elems=k))

    def warp_group_dot(self, st: Stmt) -> None:
        ops = self.operands(st, 2, "%a, %b")
        reads = []
        for tok in ops[:2]:
            if self.is_memdesc(tok):  # A may come from registers
                buf, _ = self.buffer_of(tok, st)
                self.read_by_warps(buf)
                self.async_read(buf)
                reads.append(self.access(tok, st))
        m, n, k = self.dot_shape(st)
        elem = re.search(r'(?:tensor|memdesc)<\d+x\d+x(\w+)', st.rest.split(" : ", 1)[-1])
        width = element_bytes(elem.group(1)) if elem else 2
        if st.line in self.mod.dead_dots:
            # Nothing reads its accumulator: ptxas leaves one HGMMA.64x8x16.F16 of it, writing
            # RZ (liveness.py).  Its reads stay: the program as written reads those buffers.
            m, n, k, width = 64, 8, 16, 2
        serialized = bool(self.mod.wgmma_serialized)
        self.ops.extend([Wgmma(m=m, n=n, k_elems=k, reads=tuple(reads), operand_bytes=width, serialized=serialized),
                         WgmmaCommit()])
        # a synchronous dot: Triton's lowering waits for it; a serialized one: ptxas waits after every instruction
        if serialized or not re.search(r'isAsync\s*=\s*true', st.rest):
            self.ops.append(WgmmaWait(n=0))

    def warp_group_dot_wait(self, st: Stmt) -> None:
        self.ops.append(WgmmaWait(n=self.attr(st, r'pendings\s*=\s*([-+]?\d+)', "{pendings = N} attribute")))

    def tc_gen5_mma(self, st: Stmt) -> None:
        head = st.rest.split(" : ")[0].split("{")[0]
        ops = _OPERAND.findall(head)
        if len(ops) < 3:
            raise self.err(st, f"{st.op} needs %a, %b, %d operands; the line is cut or hand-edited")
        a, b, d = ops[:3]
        reads = []
        for tok in (a, b):
            if self.is_memdesc(tok):
                buf, _ = self.buffer_of(tok, st)
                self.before_read(buf)
                self.async_read(buf)
                reads.append(self.access(tok, st))
        barriers = re.findall(r'(%[\w.\-]+)\[(%[\w.\-]+)\]', head)
        pred = ops[4] if len(ops) > 4 and not self.is_memdesc(ops[4]) and ops[4] not in dict(barriers) else None
        if not self.predicate(st, pred):
            return
        m, n, k = self.dot_shape(st)
        if not self.is_memdesc(d):
            raise self.err(st, f"{st.op}'s accumulator {d} is not a TMEM buffer the reader knows")
        self.ops.append(Mma(m=m, n=n, k_elems=k, reads=tuple(reads), writes=(self.access(d, st, write=True),),
                            issuer="one", accumulate=True))
        for bar, bpred in barriers:
            if self.predicate(st, bpred):
                name = self.barrier_of(bar, st)
                self.initialized(name, st)
                self.ops.append(MmaCommit(barrier=name, use=self.role.uses.take(name), issuer="one"))

    def tc_gen5_commit(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%barrier")
        pred = ops[1] if len(ops) > 1 and not self.is_memdesc(ops[1]) else None
        if not self.predicate(st, pred):
            return
        name = self.barrier_of(ops[0], st)
        self.initialized(name, st)
        self.ops.append(MmaCommit(barrier=name, use=self.role.uses.take(name), issuer="one"))

    # TMEM ------------------------------------------------------------------------
    def tmem_load(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%source")
        src = self.access(ops[0], st, part=WARP_PART)
        md = self.alloc(src.buffer)
        self.ops.extend([TmemLoad(bytes=max(1, md.stage_bytes // self.role.warps), src=src), WaitLd()])

    def tmem_store(self, st: Stmt) -> None:
        ops = self.operands(st, 2, "%value, %destination")
        dst_tok = next((o for o in ops[1:] if self.is_memdesc(o)), None)
        if dst_tok is None:
            raise self.err(st, "ttng.tmem_store without a TMEM destination the reader knows")
        rest = [o for o in ops[ops.index(dst_tok) + 1:]]
        if not self.predicate(st, rest[0] if rest else None):
            return
        dst = self.access(dst_tok, st, write=True, part=WARP_PART)
        md = self.alloc(dst.buffer)
        self.ops.extend([TmemStore(bytes=max(1, md.stage_bytes // self.role.warps), dst=dst), WaitSt()])
        self.sync()  # Triton's lowering: tcgen05.wait::st, then a barrier before any use of the TMEM

    def tmem_copy(self, st: Stmt) -> None:
        ops = self.operands(st, 2, "%source, %destination")
        buf, _ = self.buffer_of(ops[0], st)
        self.before_read(buf)
        self.async_read(buf)
        src = self.access(ops[0], st)
        self.ops.append(TmemCopy(bytes=self.alloc(buf).stage_bytes, src=src, dst=self.access(ops[1], st, write=True),
                                 issuer="one"))

    # mbarriers -------------------------------------------------------------------
    def init_barrier(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%barrier, count")
        name = self.barrier_of(ops[0], st)
        count = self.attr(st, r',\s*([-+]?\d+)', "arrival count", low=1)
        if count >= 1 << 20:
            raise self.err(st, f"ttng.init_barrier count {count}: an mbarrier counts at most 2^20 - 1 arrivals")
        self.ops.append(MbarInit(barrier=name, issuer="one"))
        self.barrier_counts[name] = count
        self.inits_unsynced = True
        for role in self.roles:  # a (re-)initialised barrier starts over at phase 0
            role.uses.reset(name)
            role.waits.pop(name, None)

    def inval_barrier(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%barrier")
        name = self.barrier_of(ops[0], st)
        self.initialized(name, st)
        # membar: the warps' waits read the barrier's word and thread 0's inval writes it -- a
        # barrier of the role goes between (Triton's membar pass; the waits would otherwise poll
        # an invalidated object).
        self.sync()
        self.ops.append(MbarInval(barrier=name, issuer="one"))

    def barrier_expect(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%barrier, bytes")
        name = self.barrier_of(ops[0], st)
        self.initialized(name, st)
        nbytes = self.attr(st, r',\s*([-+]?\d+)', "byte count")
        if self.predicate(st, ops[1] if len(ops) > 1 else None):
            self.ops.append(ArriveExpectTx(barrier=name, use=self.role.uses.take(name), bytes=nbytes, issuer="one"))

    def arrive_barrier(self, st: Stmt) -> None:
        ops = self.operands(st, 1, "%barrier, count")
        name = self.barrier_of(ops[0], st)
        self.initialized(name, st)
        count = self.attr(st, r',\s*([-+]?\d+)', "arrival count", low=1)
        if self.predicate(st, ops[1] if len(ops) > 1 else None):
            per_thread = "perThread" in st.rest
            if not per_thread:
                # Triton lowers the leader arrive as a barrier of the role's warps, then thread 0's
                # mbarrier.arrive (PTX of Triton 3.6 and 3.9: `bar.sync N, 32*W` before `@p mbarrier.arrive`),
                # so every warp's earlier shared-memory accesses are ordered before the arrival.
                self.sync()
            self.ops.append(Arrive(barrier=name, use=self.role.uses.take(name), count=count,
                                   issuer="all" if per_thread else "one"))

    def wait_barrier(self, st: Stmt) -> None:
        head = st.rest.split(" : ")[0]
        ops = _OPERAND.findall(head.split(" deps ")[0])
        if len(ops) < 2:
            raise self.err(st, "ttng.wait_barrier needs %barrier, %phase: the line is cut or hand-edited")
        name = self.barrier_of(ops[0], st)
        self.initialized(name, st)
        if not self.predicate(st, ops[2] if len(ops) > 2 else None):
            return
        parity = self.value(ops[1], st) & 1
        self.ops.append(Wait(barrier=name, parity=parity, use=self.wait_use(name, parity)))

    # TMA -------------------------------------------------------------------------
    def tma_load(self, st: Stmt) -> None:
        ops = self.operands(st, 3, "%descriptor[coordinates] %destination, %barrier")
        dst = next((o for o in ops[1:] if self.is_memdesc(o) and not self.alloc(self.buffer_of(o, st)[0]).barrier), None)
        if dst is None:
            raise self.err(st, f"{st.op} without a shared-memory destination the reader knows")
        bar_tok = next((o for o in ops[ops.index(dst) + 1:] if self.is_memdesc(o)), None)
        if bar_tok is None:
            raise self.err(st, f"{st.op} without its mbarrier operand")
        name = self.barrier_of(bar_tok, st)
        self.initialized(name, st)
        buf, _ = self.buffer_of(dst, st)
        self.before_write(buf)
        after = ops[ops.index(bar_tok) + 1:]
        if self.predicate(st, after[0] if after else None):
            md = self.alloc(buf)
            if self.loop_depth:
                self.pipelined.add(buf)
            access = self.access(dst, st, write=True)
            # the descriptor and its coordinates: what decides which global tile this is
            self.ops.append(TmaLoad(barrier=name, use=self.role.uses.last(name), bytes=md.stage_bytes, dst=access,
                                    src=self.tma_key(ops[:ops.index(dst)], access.content), issuer="one"))

    def tma_store(self, st: Stmt) -> None:
        ops = self.operands(st, 2, "%descriptor[coordinates] %source")
        src_tok = next((o for o in reversed(ops) if self.is_memdesc(o)), None)
        if src_tok is None:
            raise self.err(st, f"{st.op} without a shared-memory source the reader knows")
        buf, _ = self.buffer_of(src_tok, st)
        self.read_by_warps(buf)
        self.async_read(buf)
        self.ops.extend([TmaStore(bytes=self.alloc(buf).stage_bytes, src=self.access(src_tok, st), issuer="one"),
                     BulkCommit(issuer="one")])

    def tma_store_wait(self, st: Stmt) -> None:
        self.ops.append(BulkWait(n=self.attr(st, r'pendings\s*=\s*(\d+)', "{pendings = N} attribute"), read=True,
                                 issuer="one"))
        self.sync()  # membar: like async_wait, a barrier follows (one thread waited for the stores' reads)

    def fence_async_shared(self, st: Stmt) -> None:
        self.ops.append(Fence(fence="proxy_async"))
        self.role.unfenced.clear()

    # structure ---------------------------------------------------------------------
    def if_(self, st: Stmt) -> None:
        cond = _OPERAND.findall(st.rest.split("->")[0].split("{")[0])
        if not cond:
            raise self.err(st, "scf.if without its condition: the line is cut or hand-edited")
        self.controls(cond[0])
        self.check_poison(cond[0], st)
        if cond[0] not in self.env:
            raise self.err(st, f"scf.if on {cond[0]}, whose value the reader cannot evaluate (a tensor or a loaded "
                           "value): which branch runs is unknown, so neither can be judged; please report the kernel")
        taken = st.region("then") if self.env[cond[0]] else st.region("else")
        if taken is None:
            return
        body = [s for s in taken.stmts if s.op != "scf.yield"]
        self.run(body)
        y = next((s for s in taken.stmts if s.op == "scf.yield"), None)
        if y is not None and st.results:
            self.carry_out(st, _OPERAND.findall(operand_head(y.rest)))

    def carry_out(self, st: Stmt, yielded: list[str]) -> None:
        """Bind an op's results (``%r``, ``%r#j``) to the values a region yielded."""
        base = st.results[0].split(":")[0]
        for j, tok in enumerate(yielded):
            for name in ([base] if j == 0 else []) + [f"{base}#{j}"]:
                self.copy_taint(name, tok)
                self.set_value(name, self.env.get(tok), self.poisoned.get(tok))
                if tok in self.views:
                    self.views[name] = self.views[tok]

    def warp_specialize(self, st: Stmt) -> None:
        if self.ws_seen is not None and self.ws_seen is not st:
            raise self.err(st, f"a second ttg.warp_specialize (the first is at line {self.ws_seen.line}): the reader "
                           "models one; please report the kernel")
        if self.role is not self.roles[0]:
            raise self.err(st, "ttg.warp_specialize inside a partition: not a kernel Triton wrote")
        self.ws_seen = st
        captured = _OPERAND.findall(st.rest.split(")")[0])
        for role in self.roles:  # the workers are released into their partitions
            self.role = role
            self.sync_all()
            if role is not self.roles[0]:
                # Arrivals the default warps made before the op precede every partition's: a
                # partition's n-th arrival on such a barrier completes a later phase.
                role.uses = self.roles[0].uses.copy()
        for role, region in zip(self.roles, [st.region("default")] + [r for r in st.regions
                                                                      if r.label.startswith("partition")], strict=True):
            self.role = role
            if region is None:
                continue
            outer = (dict(self.env), dict(self.views), set(self.per_cta), dict(self.poisoned))
            for arg, cap in zip(region.args, captured, strict=False):
                self.copy_taint(arg, cap)
                self.carried_from[arg] = (cap,)  # a partition's argument is the value it captures
                self.aliases.add(arg)
                if cap in self.env:
                    self.env[arg] = self.env[cap]
                if cap in self.views:
                    self.views[arg] = self.views[cap]
                elif cap.lstrip("%") in self.mod.allocs:
                    self.views[arg] = (cap.lstrip("%"), 0, None)
            self.run(region.stmts)
            if region.label != "default":  # a partition is isolated from above: its names may repeat outer ones
                self.env, self.views, self.per_cta, self.poisoned = outer
        for role in self.roles:  # the op returns once every partition has finished
            self.role = role
            self.sync_all()
        default = st.region("default")
        y = next((s for s in default.stmts if s.op == "ttg.warp_yield"), None) if default else None
        if y is not None and st.results:  # the default region's warp_yield gives the op's results
            self.carry_out(st, _OPERAND.findall(operand_head(y.rest)))
        self.role = self.roles[0]

    def sync_all(self) -> None:
        self.ops.append(CtaSync())
        self.role.read_since_sync.clear()
        self.role.written_since_sync.clear()

    def loop(self, st: Stmt) -> None:
        m = _LOOP.match(st.rest)
        if not m:
            raise self.err(st, "cannot read this scf.for header (%iv = %lb to %ub step %step)")
        iv, lb, ub, step = m.group(1), *(self.value(t, st) for t in m.group(2, 3, 4))
        self.copy_taint(iv, *m.group(2, 3, 4))  # a persistent loop's tile index differs between CTAs
        if step <= 0:
            why = "a loop of step 0 never ends" if step == 0 else "scf.for is undefined for a negative step"
            raise self.err(st, f"scf.for step {m.group(4)} = {step} with this launch: {why}; the step must be positive "
                           "-- check the step's definition and the launch values")
        trips = max(0, -(-(ub - lb) // step))
        per = 1 + sum(_EMITS.get(s.op, 0) + (s.op == "ttg.local_alloc" and s.rest.lstrip().startswith("%"))
                      for s in st.body)
        projected = self.cost + trips * ((per - 1) * self.ctas + 1)
        if projected > self.max_ops:
            raise self.over(st, f"scf.for runs {trips:,} iterations ({lb} to {ub} step {step}) of at least {per - 1} op(s) "
                            "each", projected)
        carried = []
        for pair in (m.group(5) or "").split(","):
            if "=" in pair:
                name, init = (p.strip() for p in pair.split("=", 1))
                carried.append((name, init))
        loading = self.role.loading
        if loading:  # a value still loading, carried in: its iter_arg is loading too
            loading.update({name: loading[init] for name, init in carried if init in loading})
        values = [self.env.get(init) for _, init in carried]
        poisons = [self.poisoned.get(init) for _, init in carried]
        views = [self.views.get(init) or ((init.lstrip("%"), 0, None) if init.lstrip("%") in self.mod.allocs else None)
                 for _, init in carried]
        body = [s for s in st.body if s.op != "scf.yield"]
        y = next((s for s in st.body if s.op == "scf.yield"), None)
        sources = [init for _, init in carried]
        static_yield = _OPERAND.findall(operand_head(y.rest)) if y else []
        base = st.results[0].split(":")[0] if st.results else None
        self.loop_defined.add(iv)
        # The induction variable takes lb, lb + step, ...: a read it addresses is per-CTA when they are --
        # a block of the index space a CTA owns (split-K's K range, a column sum's rows: ``range(pid *
        # rows, ...)``, stepping by less than the launch's CTAs).  A grid-stride loop (``range(pid,
        # tiles, NUM_SMS)``: step >= CTAs) visits one index space shared by all CTAs, whose decoded tile
        # coordinates repeat between CTAs: keying its reads by the program id would unshare the panels
        # every CTA reads (set 1's persistent pointer GEMMs, 0.88 -> 1.90), so it is left as it was.
        if step < self.ctas:
            self.carried_from[iv] = (m.group(2), m.group(4))  # (a walk for every CTA; see roots())
        for j, (name, init) in enumerate(carried):  # for global_key: where each carried value comes from
            self.loop_defined.add(name)
            came = (init, static_yield[j]) if j < len(static_yield) else (init,)
            self.carried_from[name] = came
            if base is not None:
                for r in ([base] if j == 0 else []) + [f"{base}#{j}"]:
                    self.carried_from[r] = came
        i = lb
        while i < ub:
            self.iterations += 1
            if self.cost > self.max_ops:
                raise self.over(st, f"at iteration {i} of this scf.for ({lb} to {ub} step {step})", self.cost)
            self.env[iv] = i
            for (name, init), v, vw, src, pz in zip(carried, values, views, sources, poisons, strict=True):
                self.copy_taint(name, src, init)
                self.set_value(name, v, pz)
                if vw is not None:
                    self.views[name] = vw
            self.loop_depth += 1
            try:
                self.run(body)
            finally:
                self.loop_depth -= 1
            yielded = _OPERAND.findall(operand_head(y.rest)) if y else []
            loading = self.role.loading
            if loading:  # a value still loading, carried into the next iteration under its iter_arg's name
                for (name, _), t in zip(carried, yielded, strict=False):
                    if t in loading:
                        loading[name] = loading[t]
                    else:  # the iter_arg now holds a value no load fills
                        loading.pop(name, None)
            values = [self.env.get(t) for t in yielded]
            poisons = [self.poisoned.get(t) for t in yielded]
            views = [self.views.get(t) for t in yielded]
            sources = [t if t in self.per_cta else src for t, src in zip(yielded, sources, strict=False)]
            i += step
        if st.results:
            base = st.results[0].split(":")[0]
            loading = self.role.loading
            if loading:  # the loop's results that are values still loading
                loading.update({name: loading[t] for j, t in enumerate(yielded if trips else []) if t in loading
                                for name in ([base] if j == 0 else []) + [f"{base}#{j}"]})
            for j, (v, vw, pz, src) in enumerate(zip(values, views, poisons, sources, strict=False)):
                # A loop of one result is used as %r, of several as %r#j.
                for name in ([base] if j == 0 else []) + [f"{base}#{j}"]:
                    self.set_value(name, v, pz)
                    self.copy_taint(name, src)
                    if vw is not None:
                        self.views[name] = vw


def instructions(load: GlobalLoad) -> int:
    """``ld.global`` instructions each thread issues for ``load``."""
    return max(1, -(-load.bytes // (32 * load.load_bytes)))


def keyed(base: str, values: dict[str, Any]) -> str:
    """A read's key: ``base``, then each per-CTA scalar it depends on and its value
    (``a@3|%offs_am@46=128``; ``base`` alone when there is none)."""
    return base + "|" + ",".join(f"{n}={v}" for n, v in values.items()) if values else base


def key_roots(key: str) -> list[str]:
    """The per-CTA scalars a key (:func:`keyed`) names, in its order."""
    return [pair.split("=", 1)[0] for pair in key.split("|", 1)[1].split(",")] if "|" in key else []


def rekeyed(key: str, values: dict[str, Any]) -> str:
    """The same read in another CTA: the key's scalars with that CTA's ``values``."""
    return keyed(key.split("|", 1)[0], {n: values[n] for n in key_roots(key)})


_RING_OPS = frozenset({"arith.addi", "arith.subi", "arith.muli", "tt.splat", "tt.broadcast", "tt.expand_dims",
                       "arith.extsi", "arith.extui", "arith.index_cast", "ttg.convert_layout", "tt.make_range",
                       "arith.constant"})
"""Ops through which a residue modulo N is still the operands' residues' function (``Walker.roots``
keeps a remainder's modulus across them, and drops it at any other)."""

_RECOMPUTE = frozenset({"tt.get_program_id", "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
                        "arith.remsi", "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi",
                        "arith.minsi", "arith.ceildivsi", "arith.floordivsi", "arith.cmpi", "arith.select",
                        "arith.extsi", "arith.extui", "arith.index_cast", "arith.index_castui", "arith.trunci"})
"""The scalar ops a per-CTA value can be computed again from, for another CTA (``Walker.values_for``)."""

_MASK_OPS = frozenset({"tt.splat", "tt.broadcast"})
"""Tensor ops the walk follows only to know an all-false mask (with ``arith.andi``)."""
_I1_TENSOR = re.compile(r"->\s*tensor<[\dx]*xi1[,>]")
_MASK_OPERAND = re.compile(r"\bmask\s+(%[\w.#]+)")

SCRATCH = "~scratch"  # no SSA name holds a "~": it cannot meet an allocation of the IR
"""The buffer of Triton's layout conversions and cross-warp reductions (``Walker.scratch``)."""


def convert_types(rest: str):
    """((shape, element type, layout) of the source, the same of the result) of a
    ``ttg.convert_layout``'s text, or None when it does not read ``tensor<...> -> tensor<...>``."""
    text = rest.split(" loc(", 1)[0]
    if " : " not in text:
        return None
    sides = text.split(" : ", 1)[1].split(" -> ")
    if len(sides) != 2:
        return None
    out = []
    for side in sides:
        side = side.strip()
        if not side.startswith("tensor<") or not side.endswith(">"):
            return None
        body = side[len("tensor<"):-1]
        dims_elem, _, layout = body.partition(",")
        parts = dims_elem.strip().split("x")
        if len(parts) < 2 or not all(p.isdigit() for p in parts[:-1]) or not layout.strip():
            return None
        out.append((tuple(int(p) for p in parts[:-1]), parts[-1], layout.strip()))
    return out[0], out[1]


_HANDLERS = {
    "scf.for": Walker.loop,
    "tt.get_program_id": Walker.program_id,
    "tt.get_num_programs": Walker.num_programs,
    "scf.if": Walker.if_,
    "ttg.warp_specialize": Walker.warp_specialize,
    **{op: Walker.memdesc_view for op in VIEW_OPS},
    "ttg.local_alloc": Walker.local_alloc,
    "ttng.tmem_alloc": Walker.tmem_alloc,
    "ttg.local_store": Walker.local_store,
    "ttg.local_load": Walker.local_load,
    "ttg.convert_layout": Walker.convert_layout,
    "ttg.async_copy_global_to_local": Walker.async_copy,
    "ttg.async_commit_group": lambda w, st: w.ops.append(CpAsyncCommit()),
    "tt.load": Walker.global_load,
    "tt.store": Walker.global_store,
    "tt.atomic_rmw": Walker.global_atomic,
    "tt.atomic_cas": Walker.global_atomic,
    "ttg.async_wait": Walker.async_wait,
    "gpu.barrier": Walker.barrier,
    "ttg.barrier": Walker.barrier,
    "tt.dot": Walker.dot,
    "ttng.warp_group_dot": Walker.warp_group_dot,
    "ttng.warp_group_dot_wait": Walker.warp_group_dot_wait,
    "ttng.tc_gen5_mma": Walker.tc_gen5_mma,
    "ttng.tc_gen5_commit": Walker.tc_gen5_commit,
    "ttng.tmem_load": Walker.tmem_load,
    "ttng.tmem_store": Walker.tmem_store,
    "ttng.tmem_copy": Walker.tmem_copy,
    "ttng.init_barrier": Walker.init_barrier,
    "ttng.inval_barrier": Walker.inval_barrier,
    "ttng.barrier_expect": Walker.barrier_expect,
    "ttng.arrive_barrier": Walker.arrive_barrier,
    "ttng.wait_barrier": Walker.wait_barrier,
    "ttng.async_tma_copy_global_to_local": Walker.tma_load,
    "ttng.async_tma_copy_local_to_global": Walker.tma_store,
    "ttng.async_tma_store_wait": Walker.tma_store_wait,
    "ttng.fence_async_shared": Walker.fence_async_shared,
}
"""The ops that move, read or synchronise storage, and the walker's rule for each."""
