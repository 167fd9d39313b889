"""Read Triton's TTGIR (the text ``kernel.asm["ttgir"]``) into a protosim schedule.

No Triton is needed: the reader parses the MLIR text line by line, evaluates the
kernel's scalar integer arithmetic (loop bounds, stage indices) with the launch's
argument values, walks ``scf.for`` loops iteration by iteration, and turns the
ops that move or read shared memory into schedule ops:

=====================================  =============================================
TTGIR                                  schedule
=====================================  =============================================
``ttg.local_alloc : () -> memdesc<S x ...>``  a buffer of S stages (an ``i64`` one: mbarriers)
``ttg.local_alloc %t``                 a one-stage buffer written by the warps (``SmemStore``)
``ttg.async_copy_global_to_local``     ``CpAsync`` by every warp (its share of the tile)
``ttg.async_commit_group``             ``CpAsyncCommit``
``ttg.async_wait {num = n}``           ``CpAsyncWait(n)``, then a CTA barrier (below)
``ttg.local_load``                     ``LocalLoad`` by every warp
``tt.dot`` (register operands)         ``MmaSync``
``ttng.warp_group_dot`` / ``_wait``    ``Wgmma`` + ``WgmmaCommit`` / ``WgmmaWait(pendings)``
``ttng.init_barrier`` / ``barrier_expect`` / ``async_tma_copy_global_to_local`` / ``wait_barrier``
                                       ``MbarInit`` / ``ArriveExpectTx`` / ``TmaLoad`` / ``Wait``
=====================================  =============================================

Two rules stand in for what happens after TTGIR:

* **Barriers.**  Triton's membar pass inserts a CTA barrier between shared-memory
  accesses of different threads that conflict; the reader does the same: a barrier
  after each ``async_wait`` (the copies other threads made become visible) and before
  a write to a buffer that warps have read since the last barrier, or a read of one
  they have written.
* **Which data.**  Logical tags pair producers and consumers: the n-th copy into a
  buffer carries tile n of that buffer, and the n-th read of the buffer expects tile
  n.  A streaming pipeline consumes its loads in order, so a read that finds another
  tile (or an unfinished copy) in its stage is a real hazard.

Shared memory is counted from the allocations (tile bytes, mbarriers 8 bytes each),
the number Triton's metadata calls ``shared``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protosim.ir import (
    WARP_PART,
    Access,
    ArriveExpectTx,
    BarrierDecl,
    BufferDecl,
    CpAsync,
    CpAsyncCommit,
    CpAsyncWait,
    CtaProgram,
    CtaSync,
    LocalLoad,
    MbarInit,
    MmaSync,
    Op,
    RoleDecl,
    Schedule,
    SmemStore,
    TmaLoad,
    Wait,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
)

ELEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i64": 8, "i32": 4, "f8E4M3FN": 1, "f8E5M2": 1, "i8": 1, "tf32": 4}
TARGET_ARCH = {"90": "h200", "120": "gb10", "121": "gb10", "80": "gb10", "86": "gb10", "89": "gb10"}
"""TTGIR ``ttg.target`` compute capability -> protosim arch profile.  sm_8x has no profile
of its own: it runs on the GB10 (mma.sync + cp.async) profile, whose timings are guesses."""
ROLE = "warps"


class TtgirError(ValueError):
    """The TTGIR cannot be read; the message names the file, the line and what to do."""


@dataclass
class Stmt:
    line: int
    results: list[str]
    op: str
    rest: str
    body: list[Stmt] = field(default_factory=list)


@dataclass
class MemDesc:
    name: str
    stages: int
    tile: tuple[int, ...]
    elem: str
    barrier: bool

    @property
    def stage_bytes(self) -> int:
        n = 1
        for d in self.tile:
            n *= d
        return n * ELEM_BYTES.get(self.elem, 2)


@dataclass
class Ttgir:
    path: str
    func: str
    target: str
    num_warps: int
    args: list[str]
    body: list[Stmt]
    allocs: dict[str, MemDesc]

    @property
    def shared_bytes(self) -> int:
        return sum(m.stage_bytes * m.stages for m in self.allocs.values())

    @property
    def capability(self) -> str:
        return self.target.split(":")[-1]


_LOC = re.compile(r'\s*loc\((?:[^()]|\([^()]*\))*\)')
_STMT = re.compile(r'^\s*(?:(%[\w.#\-]+(?::\d+)?(?:\s*,\s*%[\w.#]+)*)\s*=\s*)?([a-z_][\w.]*)\b(.*)$')
_MEMDESC = re.compile(r'!ttg\.memdesc<([\dx]+)x(f16|bf16|f32|i64|i32|i8|f8E4M3FN|f8E5M2|tf32)\b')


def _strip(line: str) -> str:
    return _LOC.sub("", line).rstrip()


def parse(text: str, path: str = "<ttgir>") -> Ttgir:
    """Parse TTGIR text: module attributes, the kernel's arguments and its body."""
    num_warps = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', text)
    target = re.search(r'ttg\.target\s*=\s*"([^"]+)"', text)
    func = re.search(r'tt\.func\s+(?:public\s+)?@(\w+)\((.*?)\)\s*(?:attributes|\{)', text)
    if not (num_warps and target and func):
        raise TtgirError(f"{path}: not a TTGIR module (no ttg.num-warps / ttg.target / tt.func): "
                         "give the text of kernel.asm['ttgir']")
    args = re.findall(r'%(\w+):', _LOC.sub("", func.group(2)))
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "tt.func" in ln)
    stack: list[list[Stmt]] = [[]]
    for n, raw in enumerate(lines[start + 1:], start + 2):
        line = _strip(raw)
        s = line.strip()
        if not s or s.startswith("#") or s.startswith("//"):
            continue
        if s == "}":
            if len(stack) == 1:
                break  # end of the function
            body = stack.pop()
            stack[-1][-1].body = body
            continue
        if s.startswith("} else {"):
            continue  # scf.if's else region: not modelled (kernels here have none)
        m = _STMT.match(s)
        if not m:
            continue
        results = [r.strip() for r in m.group(1).split(",")] if m.group(1) else []
        stmt = Stmt(n, results, m.group(2), m.group(3))
        stack[-1].append(stmt)
        if s.endswith("{") and m.group(2) in ("scf.for", "scf.if", "scf.while"):
            stack.append([])
    allocs = {}
    for st in _walk(stack[0]):
        if st.op == "ttg.local_alloc":
            md = _MEMDESC.search(st.rest)
            if not md:
                raise TtgirError(f"{path}:{st.line}: local_alloc without a memdesc type")
            dims = tuple(int(d) for d in md.group(1).split("x"))
            from_value = st.rest.lstrip().startswith("%")
            if from_value or len(dims) == 2 and md.group(2) != "i64":
                stages, tile = 1, dims
            else:
                stages, tile = dims[0], dims[1:] or (1,)
            name = st.results[0].lstrip("%").split(":")[0]
            allocs[name] = MemDesc(name, stages, tile, md.group(2), md.group(2) == "i64")
    return Ttgir(path, func.group(1), target.group(1), int(num_warps.group(1)), args, stack[0], allocs)


def _walk(stmts):
    for s in stmts:
        yield s
        yield from _walk(s.body)


# ----------------------------------------------------------------------------- the walk


_BIN = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
        "arith.divsi": lambda a, b: int(a / b), "arith.divui": lambda a, b: a // b,
        "arith.remsi": lambda a, b: a - int(a / b) * b, "arith.remui": lambda a, b: a % b,
        "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
        "arith.maxsi": max, "arith.minsi": min, "arith.ceildivsi": lambda a, b: -(-a // b),
        "arith.floordivsi": lambda a, b: a // b}
_CMP = {"slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
        "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b}
_OPERAND = re.compile(r'%[\w.\-]+(?:#\d+)?')


class _Walker:
    """Executes the kernel's scalar arithmetic and emits one warp's op stream (every
    warp of the CTA runs the same stream: TTGIR is SPMD)."""

    def __init__(self, mod: Ttgir, launch: dict[str, Any]):
        self.mod = mod
        self.env: dict[str, Any] = {}
        for a in mod.args:
            if a in launch:
                self.env["%" + a] = int(launch[a])
        self.ops: list[Op] = []
        self.views: dict[str, tuple[str, int]] = {}
        self.writes: dict[str, int] = {}
        self.reads: dict[str, int] = {}
        self.read_since_sync: set[str] = set()
        self.written_since_sync: set[str] = set()
        self.barrier_uses: dict[str, int] = {}
        self.barrier_counts: dict[str, int] = {}
        self.inits_unsynced = False
        self.launch = launch

    # -- values -------------------------------------------------------------
    def value(self, token: str, st: Stmt) -> Any:
        if token in self.env:
            return self.env[token]
        name = token.lstrip("%")
        raise TtgirError(f"{self.mod.path}:{st.line}: {st.op} needs the value of %{name}, which depends on a kernel argument "
                         f"the launch did not give; pass it in the launch file (e.g. {{\"{name.split('_')[0]}\": ...}}) "
                         f"-- arguments: {', '.join(self.mod.args)}")

    def known(self, token: str) -> bool:
        return token in self.env

    def bind(self, st: Stmt, value: Any) -> None:
        if st.results:
            self.env[st.results[0].split(":")[0]] = value

    def scalar(self, st: Stmt) -> None:
        ops = _OPERAND.findall(st.rest)
        if "tensor<" in st.rest or "!tt.ptr" in st.rest.split(":")[-1]:
            return  # tensors and pointers are not modelled
        if st.op == "arith.constant":
            m = re.match(r'\s*(-?\d+|true|false)\b', st.rest)
            if m:
                self.bind(st, {"true": 1, "false": 0}.get(m.group(1), None) if m.group(1) in ("true", "false") else int(m.group(1)))
            return
        if st.op in _BIN and len(ops) >= 2 and all(self.known(o) for o in ops[:2]):
            self.bind(st, _BIN[st.op](self.env[ops[0]], self.env[ops[1]]))
        elif st.op == "arith.cmpi" and len(ops) >= 2 and all(self.known(o) for o in ops[:2]):
            pred = st.rest.strip().split(",")[0].strip()
            self.bind(st, int(_CMP[pred](self.env[ops[0]], self.env[ops[1]])))
        elif st.op == "arith.select" and len(ops) >= 3 and all(self.known(o) for o in ops[:3]):
            self.bind(st, self.env[ops[1]] if self.env[ops[0]] else self.env[ops[2]])
        elif st.op in ("arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui") and ops and self.known(ops[0]):
            self.bind(st, self.env[ops[0]])

    # -- shared memory --------------------------------------------------------
    def buffer_of(self, token: str, st: Stmt) -> tuple[str, int]:
        if token in self.views:
            return self.views[token]
        name = token.lstrip("%")
        if name in self.mod.allocs:
            return name, 0
        raise TtgirError(f"{self.mod.path}:{st.line}: {st.op} on {token}, which is no shared-memory buffer the reader knows")

    def sync(self) -> None:
        self.ops.append(CtaSync())
        self.read_since_sync.clear()
        self.written_since_sync.clear()

    def before_write(self, buf: str) -> None:
        if buf in self.read_since_sync:
            self.sync()  # membar: a write after other warps' reads of the same buffer

    def before_read(self, buf: str) -> None:
        if buf in self.written_since_sync:
            self.sync()  # membar: a read of what other warps wrote (synchronously)

    def tile(self, buf: str, counter: dict[str, int]) -> str:
        n = counter.get(buf, 0)
        counter[buf] = n + 1
        return f"{buf}#{n}"

    # -- statements -------------------------------------------------------------
    def run(self, stmts: list[Stmt]) -> None:
        for st in stmts:
            self.stmt(st)

    def stmt(self, st: Stmt) -> None:
        op, rest = st.op, st.rest
        if self.inits_unsynced and op.startswith("ttng.") and op != "ttng.init_barrier":
            self.sync()  # membar: one thread's mbarrier.init, then everyone may use the barrier
            self.inits_unsynced = False
        ops = _OPERAND.findall(rest)
        warps = self.mod.num_warps
        if op.startswith("arith."):
            self.scalar(st)
        elif op == "scf.for":
            self.loop(st)
        elif op == "ttg.memdesc_index":
            buf, _ = self.buffer_of(ops[0], st)
            idx = self.value(ops[1], st)
            self.views[st.results[0]] = (buf, idx)
        elif op == "ttg.local_alloc" and rest.lstrip().startswith("%"):
            buf = st.results[0].lstrip("%")
            self.before_write(buf)
            md = self.mod.allocs[buf]
            self.ops.append(SmemStore(bytes=md.stage_bytes // warps, dst=Access(buf, 0, self.tile(buf, self.writes), WARP_PART)))
            self.written_since_sync.add(buf)
        elif op == "ttg.async_copy_global_to_local":
            buf, stage = self.buffer_of(ops[1], st)
            self.before_write(buf)
            md = self.mod.allocs[buf]
            self.ops.append(CpAsync(bytes=md.stage_bytes // warps, dst=Access(buf, stage, self.tile(buf, self.writes), WARP_PART),
                                    src=f"{buf}@{self.writes[buf] - 1}"))
        elif op == "ttg.async_commit_group":
            self.ops.append(CpAsyncCommit())
        elif op == "ttg.async_wait":
            n = int(re.search(r'num\s*=\s*(\d+)', rest).group(1))
            self.ops.append(CpAsyncWait(n=n))
            self.sync()  # membar: other threads' copies become visible after a barrier
        elif op == "ttg.local_load":
            buf, stage = self.buffer_of(ops[0], st)
            self.before_read(buf)
            md = self.mod.allocs[buf]
            self.ops.append(LocalLoad(bytes=md.stage_bytes // 2, src=Access(buf, stage, self.tile(buf, self.reads))))
            self.read_since_sync.add(buf)
        elif op == "tt.dot":
            m, n, k = _dot_shape(rest)
            self.ops.append(MmaSync(m=m, n=n, k_elems=k))
        elif op == "ttng.warp_group_dot":
            a, b = self.buffer_of(ops[0], st), self.buffer_of(ops[1], st)
            m, n, k = _dot_shape(rest)
            reads = (Access(a[0], a[1], self.tile(a[0], self.reads)), Access(b[0], b[1], self.tile(b[0], self.reads)))
            self.ops += [Wgmma(m=m, n=n, k_elems=k, reads=reads), WgmmaCommit()]
        elif op == "ttng.warp_group_dot_wait":
            self.ops.append(WgmmaWait(n=int(re.search(r'pendings\s*=\s*(\d+)', rest).group(1))))
        elif op == "ttng.init_barrier":
            buf, idx = self.buffer_of(ops[0], st)
            self.ops.append(MbarInit(barrier=f"{buf}[{idx}]", issuer="one"))
            self.barrier_counts[f"{buf}[{idx}]"] = int(re.search(r',\s*(\d+)', rest).group(1))
            self.inits_unsynced = True
        elif op == "ttng.barrier_expect":
            buf, idx = self.buffer_of(ops[0], st)
            name = f"{buf}[{idx}]"
            use = self.barrier_uses.get(name, 0)
            self.barrier_uses[name] = use + 1
            nbytes = int(re.search(r',\s*(\d+)', rest).group(1))
            if len(ops) < 2 or self.env.get(ops[1], 1):
                self.ops.append(ArriveExpectTx(barrier=name, use=use, bytes=nbytes, issuer="one"))
        elif op == "ttng.async_tma_copy_global_to_local":
            dst = next(o for o in ops[1:] if o in self.views or o.lstrip("%") in self.mod.allocs and not self.mod.allocs[o.lstrip("%")].barrier)
            bar_tok = next(o for o in ops[ops.index(dst) + 1:] if o in self.views or o.lstrip("%") in self.mod.allocs)
            buf, stage = self.buffer_of(dst, st)
            bbuf, bidx = self.buffer_of(bar_tok, st)
            name = f"{bbuf}[{bidx}]"
            self.before_write(buf)
            md = self.mod.allocs[buf]
            pred = ops[-1] if ops[-1] not in (dst, bar_tok) and self.known(ops[-1]) else None
            if pred is None or self.env[pred]:
                self.ops.append(TmaLoad(barrier=name, use=self.barrier_uses.get(name, 1) - 1, bytes=md.stage_bytes,
                                        dst=Access(buf, stage, self.tile(buf, self.writes)), issuer="one"))
        elif op == "ttng.wait_barrier":
            buf, idx = self.buffer_of(ops[0], st)
            name = f"{buf}[{idx}]"
            parity = self.value(ops[1], st)
            self.ops.append(Wait(barrier=name, parity=parity & 1, use=max(self.barrier_uses.get(name, 1) - 1, 0)))
        elif op == "scf.if":
            raise TtgirError(f"{self.mod.path}:{st.line}: scf.if is not modelled yet; the kernels Triton pipelines for "
                             "matmuls have none -- please report the kernel")

    def loop(self, st: Stmt) -> None:
        m = re.match(r'\s*(%[\w.]+)\s*=\s*(%[\w.]+)\s+to\s+(%[\w.]+)\s+step\s+(%[\w.]+)(?:\s+iter_args\((.*?)\)\s*->)?', st.rest)
        if not m:
            raise TtgirError(f"{self.mod.path}:{st.line}: cannot read this scf.for header")
        iv, lb, ub, step = m.group(1), *(self.value(t, st) for t in m.group(2, 3, 4))
        carried = []
        for pair in (m.group(5) or "").split(","):
            if "=" in pair:
                name, init = (p.strip() for p in pair.split("="))
                carried.append((name, init))
        values = [self.env.get(init) for _, init in carried]
        views = [self.views.get(init) for _, init in carried]
        i = lb
        while i < ub:
            self.env[iv] = i
            for (name, _), v, vw in zip(carried, values, views, strict=True):
                if v is not None:
                    self.env[name] = v
                if vw is not None:
                    self.views[name] = vw
            body = [s for s in st.body if s.op != "scf.yield"]
            self.run(body)
            y = next((s for s in st.body if s.op == "scf.yield"), None)
            yielded = _OPERAND.findall(y.rest.split(":")[0]) if y else []
            values = [self.env.get(t) for t in yielded]
            views = [self.views.get(t) for t in yielded]
            i += step
        base = st.results[0].split(":")[0] if st.results else None
        if base:
            for j, (v, vw) in enumerate(zip(values, views, strict=False)):
                if v is not None:
                    self.env[f"{base}#{j}"] = v
                if vw is not None:
                    self.views[f"{base}#{j}"] = vw


def _dot_shape(rest: str) -> tuple[int, int, int]:
    """(M, N, K) from a dot's operand and result types."""
    shapes = re.findall(r'(?:tensor|memdesc)<(\d+)x(\d+)x', rest)
    if len(shapes) < 2:
        raise TtgirError(f"cannot read the dot's operand shapes from: {rest[:120]}")
    (m, k), (_, n) = shapes[0], shapes[1]
    return int(m), int(n), int(k)


# ----------------------------------------------------------------------------- entry points


def load_launch(path: Path) -> dict[str, Any]:
    """The launch that goes with ``kernel.ttgir``: ``kernel.launch.json`` beside it, if any."""
    side = path.with_suffix(".launch.json")
    return json.loads(side.read_text()) if side.exists() else {}


def read(path: Path, launch: dict[str, Any] | None = None, arch: str | None = None) -> tuple[Schedule, Ttgir]:
    """Read a TTGIR file into a schedule (and the parsed module)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise TtgirError(f"{path}: {e.strerror}; give the path of a .ttgir file") from e
    mod = parse(text, str(path))
    launch = {**load_launch(path), **(launch or {})}
    walker = _Walker(mod, launch)
    walker.run(mod.body)
    arch = arch or TARGET_ARCH.get(mod.capability)
    if arch is None:
        raise TtgirError(f"{path}: target {mod.target}: no profile; pass an arch (h200 or gb10)")
    buffers = tuple(BufferDecl(m.name, "smem", m.stages, m.stage_bytes, parts=mod.num_warps, align=16)
                    for m in mod.allocs.values() if not m.barrier)
    barriers = tuple(BarrierDecl(name, count) for name, count in walker.barrier_counts.items())
    ctas = int(launch.get("ctas", 1))
    # Each CTA computes its own output tile: tagging its ops with it lets a data hazard
    # name the tile it corrupts (the schedule's outcome is derived from those tiles).
    programs = [tuple(dataclasses.replace(op, tile=(i, 0)) for op in walker.ops) for i in range(ctas)]
    schedule = Schedule(
        name=f"ttgir:{mod.func}",
        arch=arch,
        barriers=barriers,
        buffers=buffers,
        roles=(RoleDecl(ROLE, mod.num_warps),),
        ctas=tuple(CtaProgram(i, (program,)) for i, program in enumerate(programs)),
        config={"source": str(path), "target": mod.target, "num_warps": mod.num_warps, "launch": launch,
                "shared_bytes": mod.shared_bytes},
    )
    return schedule, mod


def metadata_shared(path: Path) -> int | None:
    """The ``shared`` field of the compiled kernel's metadata JSON beside the TTGIR."""
    side = path.with_suffix(".json")
    if not side.exists():
        return None
    return json.loads(side.read_text()).get("shared")
