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
  tile (or an unfinished copy) in its stage is a real hazard.  Barrier ops are paired
  the same way, with :class:`protosim.pipeline.UseCounter`: the n-th ``barrier_expect``
  on an mbarrier is its use n, and the copies and waits on it after that belong to it.

Shared memory is counted from the allocations (tile bytes, mbarriers 8 bytes each),
the number Triton's metadata calls ``shared``.

**Input checks.**  :func:`read` refuses, with a :class:`TtgirError` naming the file (and
the line, for the TTGIR text), the field or op and the fix, every input it cannot judge
faithfully: a file that is not UTF-8 TTGIR or is cut short (unbalanced regions, no
``tt.return``, no module attributes, a line that is no operation), module attributes
Triton never emits (``num-warps`` not a power of two in 1..32, another warp size, CTA
clusters, a non-CUDA target), ops the reader does not model or the target cannot run
(wgmma off sm_90, TMA on sm_8x or on the gb10 profile, tcgen05 off sm_10x), invalid SSA
(a value defined twice or used undefined, an ``scf.yield`` that does not match the loop),
scalar arithmetic that has no value (division by zero, an unknown predicate), stage
indices outside their buffer, an ``scf.for`` whose step is not positive, and launch or
metadata JSON that is malformed (wrong types, non-positive sizes, values the compiled
specialization excludes, names that are no argument).  The work is bounded:
``max_ops`` (default :data:`DEFAULT_MAX_OPS`) caps the schedule ops over all CTAs plus
one per loop iteration walked, and a loop whose trip count alone would pass it is
refused before it is unrolled.
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
    ScheduleError,
    SmemStore,
    TmaLoad,
    Wait,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
    validate,
)
from protosim.pipeline import UseCounter

ELEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i64": 8, "i32": 4, "f8E4M3FN": 1, "f8E5M2": 1, "i8": 1, "tf32": 4}
TARGET_ARCH = {"90": "h200", "120": "gb10", "121": "gb10", "80": "gb10", "86": "gb10", "89": "gb10"}
"""TTGIR ``ttg.target`` compute capability -> protosim arch profile.  sm_8x has no profile
of its own: it runs on the GB10 (mma.sync + cp.async) profile, whose timings are guesses."""
ROLE = "warps"

DEFAULT_MAX_OPS = 2_000_000
"""The most work :func:`read` does unasked: schedule ops over all CTAs, plus one per
``scf.for`` iteration walked.  ``read(..., max_ops=N)`` (``protosim --max-ops N``) raises it."""

MAX_NESTING = 64
"""Regions nested deeper than this are refused (Triton's kernels nest a few)."""


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
    line: int = 0

    @property
    def stage_bytes(self) -> int:
        n = 1
        for d in self.tile:
            n *= d
        return n * ELEM_BYTES.get(self.elem, 2)


@dataclass
class Arg:
    name: str
    type: str
    """``i32``, ``i64``, ``!tt.ptr``, ``!tt.tensordesc``, ``f32``, ..."""
    divisibility: int | None = None


@dataclass
class Ttgir:
    path: str
    func: str
    target: str
    num_warps: int
    args: list[str]
    body: list[Stmt]
    allocs: dict[str, MemDesc]
    arg_info: dict[str, Arg] = field(default_factory=dict)
    func_line: int = 0

    @property
    def shared_bytes(self) -> int:
        return sum(m.stage_bytes * m.stages for m in self.allocs.values())

    @property
    def capability(self) -> str:
        return self.target.split(":")[-1]


def _err(path: str | Path, line: int | None, message: str) -> TtgirError:
    """``path: line N: message`` (the line survives a caller that drops the first ``path: ``)."""
    return TtgirError(f"{path}: line {line}: {message}" if line else f"{path}: {message}")


_LOC_ALIAS = re.compile(r"#loc\w*\s*=\s*loc\(.*\)$")
_LOC = re.compile(r'\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)')
_STMT = re.compile(r'^\s*(?:(%[\w.#\-]+(?::\d+)?(?:\s*,\s*%[\w.#]+)*)\s*=\s*)?(?:"([a-z_][\w.]*)"|([a-z_][\w.]*)\b)(.*)$')
_MEMDESC = re.compile(r'!ttg\.memdesc<((?:\d+x)+)(f16|bf16|f32|i64|i32|i8|f8E4M3FN|f8E5M2|tf32)\b')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MODULE = re.compile(r'^module\b.*\{$')
_FUNC = re.compile(r'^tt\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.\-]+)\s*\((.*)\)\s*(?:attributes\s*\{.*\}\s*)?\{$')
_ARG = re.compile(r'%(\w+)\s*:\s*(!?[\w.]+)')
_DIGITS = 30
"""Integer literals longer than this are refused (no kernel value has 30 digits)."""


def _a(value: Any) -> str:
    """'a list', 'a number', 'null': what a JSON value is, in words."""
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a non-integer number",
            type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def _an(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _strip(line: str) -> str:
    return _LOC.sub("", line).rstrip()


def _net_braces(s: str) -> int:
    """Regions a stripped line opens (> 0) or closes (< 0); braces inside strings do not count."""
    s = _STRING.sub('""', s)
    return s.count("{") - s.count("}")


def _int(text: str, path: str | Path, line: int | None, what: str) -> int:
    digits = text.lstrip("+-")
    if not digits.isdigit() or len(digits) > _DIGITS:
        raise _err(path, line, f"{what} = {text[:40]!r}: not an integer the reader can use (at most {_DIGITS} digits)")
    return int(text)


def _module_attrs(text: str, path: str) -> tuple[int, int, str]:
    """(index of the ``module attributes {...} {`` line, num-warps, target), each checked."""
    lines = text.splitlines()
    idx = next((i for i, ln in enumerate(lines) if _MODULE.match(_strip(ln).strip())), None)
    if idx is None:
        raise TtgirError(f"{path}: not a TTGIR module (no `module attributes {{...}} {{` line; the text may be cut at the top): "
                         "give the text of kernel.asm['ttgir']")
    head = _strip(lines[idx])
    n = idx + 1
    num_warps = re.search(r'"ttg\.num-warps"\s*=\s*([^\s,}:]+)', head)  # all of the value: 4.5 is no integer
    target = re.search(r'ttg\.target\s*=\s*"([^"]*)"', head)
    if not num_warps:
        raise _err(path, n, 'the module has no "ttg.num-warps" attribute: not a TTGIR module Triton wrote; '
                   "give the text of kernel.asm['ttgir']")
    if not target:
        raise _err(path, n, "the module has no ttg.target attribute: not a TTGIR module Triton wrote; "
                   "give the text of kernel.asm['ttgir']")
    warps = _int(num_warps.group(1), path, n, '"ttg.num-warps"')
    if not 1 <= warps <= 32 or warps & (warps - 1):
        raise _err(path, n, f'"ttg.num-warps" = {warps}: Triton uses a power of two from 1 to 32 '
                   "(a CTA has at most 1024 threads); fix the module attribute")
    tpw = re.search(r'"ttg\.threads-per-warp"\s*=\s*([^\s,}:]+)', head)
    if tpw and _int(tpw.group(1), path, n, '"ttg.threads-per-warp"') != 32:
        raise _err(path, n, f'"ttg.threads-per-warp" = {tpw.group(1)}: NVIDIA warps have 32 threads; '
                   "only NVIDIA (cuda:) targets are modelled")
    ctas = re.search(r'"ttg\.num-ctas"\s*=\s*([^\s,}:]+)', head)
    if ctas and _int(ctas.group(1), path, n, '"ttg.num-ctas"') != 1:
        raise _err(path, n, f'"ttg.num-ctas" = {ctas.group(1)}: CTA clusters are not modelled; '
                   "compile with num_ctas=1")
    if not re.fullmatch(r"cuda:\d{1,4}", target.group(1)):
        raise _err(path, n, f'ttg.target = "{target.group(1)}": only NVIDIA targets ("cuda:NN", e.g. "cuda:90") '
                   "are modelled")
    return idx, warps, target.group(1)


def _parse_args(text: str) -> dict[str, Arg]:
    out: dict[str, Arg] = {}
    for piece in re.split(r',\s*(?=%\w+\s*:)', text):
        m = _ARG.search(piece)
        if not m:
            continue
        div = re.search(r'tt\.divisibility\s*=\s*(\d{1,9})\b', piece)
        out[m.group(1)] = Arg(m.group(1), m.group(2), int(div.group(1)) if div else None)
    return out


def parse(text: str, path: str = "<ttgir>") -> Ttgir:
    """Parse TTGIR text: module attributes, the kernel's arguments and its body.  Raises
    :class:`TtgirError` for text that is not a whole TTGIR module."""
    midx, num_warps, target = _module_attrs(text, path)
    lines = text.splitlines()
    heads = [i for i, ln in enumerate(lines) if _strip(ln).strip().startswith("tt.func")]
    if not heads:
        raise TtgirError(f"{path}: not a TTGIR module (no tt.func): the text may be cut; give the text of kernel.asm['ttgir']")
    if len(heads) > 1:
        public = [i for i in heads if re.match(r'tt\.func\s+public\b', _strip(lines[i]).strip())]
        if len(public) != 1:
            raise _err(path, heads[1] + 1, f"{len(heads)} tt.func in the module and {len(public)} of them public: "
                       "the reader reads one kernel; give a module with one public tt.func")
        heads = public
    start = heads[0]
    if start < midx:
        raise _err(path, start + 1, "tt.func before the module attributes: not a TTGIR module Triton wrote")
    header = _strip(lines[start]).strip()
    func = _FUNC.match(header)
    if not func and re.search(r"\)\s*->", header):
        raise _err(path, start + 1, "this tt.func returns values: a device function or a compiler pass test, not a "
                   "kernel (a kernel returns nothing); give the text of kernel.asm['ttgir'] of a launched kernel")
    if not func:
        raise _err(path, start + 1, "cannot read this tt.func line (name, arguments, then `{`): the text may be cut "
                   "or hand-edited; give the text of kernel.asm['ttgir']")
    arg_info = _parse_args(func.group(2))

    stack: list[list[Stmt]] = [[]]
    opened: list[int] = [start + 1]
    end: int | None = None
    defined: dict[str, int] = {f"%{a}": start + 1 for a in arg_info}
    for n in range(start + 1, len(lines)):
        ln = n + 1
        s = _strip(lines[n]).strip()
        if not s or s.startswith("#") or s.startswith("//"):
            continue
        net = _net_braces(s)
        if s.startswith("}"):
            if net == 0:
                continue  # "} else {": scf.if's else region, read with its then region (scf.if is refused)
            if net > 0:
                raise _err(path, ln, f"cannot read {s[:60]!r}: unbalanced braces; the text may be cut or hand-edited")
            for k in range(-net):
                if len(stack) == 1:
                    if k != -net - 1:
                        raise _err(path, ln, "more `}` than open regions: unbalanced braces")
                    end = ln
                    break
                body = stack.pop()
                opened.pop()
                stack[-1][-1].body = body
            if end is not None:
                break
            continue
        if s.startswith("^"):
            if net:
                raise _err(path, ln, f"cannot read {s[:60]!r}: unbalanced braces")
            for a in re.findall(r'(%[\w.\-]+)\s*:', s):
                defined.setdefault(a, ln)
            continue  # a block label and its arguments (the region of tt.reduce / tt.scan)
        m = _STMT.match(s)
        if not m:
            raise _err(path, ln, f"cannot read {s[:60]!r} as an operation: the text may be cut mid-line or "
                       "hand-edited; give the text of kernel.asm['ttgir']")
        results = [r.strip() for r in m.group(1).split(",")] if m.group(1) else []
        rest = _STRING.sub('""', m.group(4))
        own = set(re.findall(r'(%[\w.\-]+)\s*=(?!=)', rest))  # scf.for's induction variable and iter_args
        for use in _OPERAND.findall(rest):
            base = use.split("#")[0]
            if base not in defined and base not in own:
                raise _err(path, ln, f"{m.group(2) or m.group(3)} uses {use}, which is not defined before it: not valid "
                           "SSA (a line deleted or cut?)")
        for name in own:
            defined.setdefault(name, ln)
        for r in results:
            name = r.split(":")[0]
            if name in defined:
                raise _err(path, ln, f"{name} is defined twice (line {defined[name]} and line {ln}): not valid SSA; "
                           "was a line duplicated?")
            defined[name] = ln
        stmt = Stmt(ln, results, m.group(2) or m.group(3), m.group(4))
        stack[-1].append(stmt)
        if net > 0:
            if net > 1 or not s.endswith("{"):
                raise _err(path, ln, f"cannot read {s[:60]!r}: unbalanced braces; the text may be cut or hand-edited")
            if len(stack) > MAX_NESTING:
                raise _err(path, ln, f"regions nested more than {MAX_NESTING} deep: not a kernel Triton wrote")
            stack.append([])
            opened.append(ln)
        elif net < 0:
            raise _err(path, ln, f"cannot read {s[:60]!r}: unbalanced braces; the text may be cut or hand-edited")
    if end is None:
        inner = (f"the region opened at line {opened[-1]} and {len(opened) - 1} around it"
                 if len(opened) > 1 else f"@{func.group(1)}'s body")
        raise TtgirError(f"{path}: the text ends inside {inner} (never closed by `}}`): the file is truncated; "
                         "give the whole text of kernel.asm['ttgir']")
    if not stack[0] or stack[0][-1].op != "tt.return":
        raise _err(path, end, f"@{func.group(1)} does not end with tt.return: the function is cut or hand-edited; "
                   "give the whole text of kernel.asm['ttgir']")
    depth = 0
    for n in range(midx, len(lines)):
        depth += _net_braces(_strip(lines[n]).strip())
        if depth <= 0:
            if n + 1 < end:
                raise _err(path, n + 1, "the module closes before the function does: unbalanced braces")
            break
    else:
        raise TtgirError(f"{path}: the module opened at line {midx + 1} is never closed by `}}`: the file is truncated; "
                         "give the whole text of kernel.asm['ttgir']")
    for k in range(n + 1, len(lines)):  # after the module Triton writes only location aliases
        tail = lines[k].strip()
        if tail and not _LOC_ALIAS.match(tail):
            raise _err(path, k + 1, f"{tail[:60]!r} after the module's closing brace: only `#loc = loc(...)` lines "
                       "follow a module Triton wrote; the text is hand-edited or two files were joined")

    allocs = {}
    for st in _walk(stack[0]):
        if st.op == "ttg.local_alloc":
            md = _MEMDESC.search(st.rest)
            if not md:
                raise _err(path, st.line, "ttg.local_alloc without a !ttg.memdesc<...> type the reader knows (element types: "
                           f"{', '.join(ELEM_BYTES)})")
            if not st.results:
                raise _err(path, st.line, "ttg.local_alloc without a result: not valid TTGIR")
            dims = tuple(_int(d, path, st.line, "memdesc dimension") for d in md.group(1).rstrip("x").split("x"))
            if any(d < 1 for d in dims) or any(d > 1 << 20 for d in dims):
                raise _err(path, st.line, f"ttg.local_alloc of shape {'x'.join(map(str, dims))}: every dimension must be "
                           "from 1 to 2^20")
            from_value = st.rest.lstrip().startswith("%")
            if from_value or len(dims) == 2 and md.group(2) != "i64":
                stages, tile = 1, dims
            else:
                stages, tile = dims[0], dims[1:] or (1,)
            name = st.results[0].lstrip("%").split(":")[0]
            allocs[name] = MemDesc(name, stages, tile, md.group(2), md.group(2) == "i64", st.line)
    return Ttgir(path, func.group(1), target, num_warps, list(arg_info), stack[0], allocs, arg_info, start + 1)


def _walk(stmts):
    for s in stmts:
        yield s
        yield from _walk(s.body)


# ----------------------------------------------------------------------------- what the reader models

_HANDLED = frozenset({
    "scf.for", "scf.yield", "ttg.memdesc_index", "ttg.local_alloc", "ttg.async_copy_global_to_local",
    "ttg.async_commit_group", "ttg.async_wait", "ttg.local_load", "tt.dot", "ttng.warp_group_dot",
    "ttng.warp_group_dot_wait", "ttng.init_barrier", "ttng.barrier_expect", "ttng.async_tma_copy_global_to_local",
    "ttng.wait_barrier",
})
_IGNORED = frozenset({
    # registers and global memory only: no shared-memory access the model needs, no synchronization
    "tt.addptr", "tt.advance", "tt.assert", "tt.atomic_cas", "tt.atomic_rmw", "tt.bitcast", "tt.broadcast", "tt.cat",
    "tt.clampf", "tt.expand_dims", "tt.extern_elementwise", "tt.fp_to_fp", "tt.get_num_programs", "tt.get_program_id",
    "tt.histogram", "tt.int_to_ptr", "tt.join", "tt.load", "tt.make_range", "tt.make_tensor_ptr", "tt.mulhiui",
    "tt.precise_divf", "tt.precise_sqrt", "tt.print", "tt.ptr_to_int", "tt.reduce", "tt.reduce.return", "tt.reshape",
    "tt.return", "tt.scan", "tt.scan.return", "tt.splat", "tt.split", "tt.store", "tt.trans", "tt.unsplat",
    "ttg.convert_layout", "ttg.local_dealloc", "ttg.global_scratch_alloc", "ub.poison",
    # the TMA descriptor's setup and the barriers' teardown
    "ttng.inval_barrier", "ttng.tensormap_create", "ttng.tensormap_fenceproxy_acquire", "ttng.reinterpret_tensor_descriptor",
})
_IGNORED_DIALECTS = ("arith.", "math.")
"""Scalar integer arithmetic is evaluated; the rest of these is register math."""

_FEATURES = {
    "wgmma": ("wgmma (warp-group MMA)", "sm_90a only"),
    "tma": ("TMA (tensor descriptors, cp.async.bulk.tensor, mbarrier expect_tx)", "sm_90 or newer"),
    "tcgen05": ("tcgen05 (5th-generation tensor cores, Tensor Memory)", "sm_100a / sm_101a / sm_103a / sm_110a"),
    "cp.async": ("cp.async", "sm_80 or newer"),
}


def _needs(op: str) -> str | None:
    """The hardware unit an op needs beyond mma.sync-era SIMT (None: any sm_80+ target)."""
    if op in ("ttng.warp_group_dot", "ttng.warp_group_dot_wait"):
        return "wgmma"
    if op.startswith(("ttng.tc_gen5", "ttng.tmem_")):
        return "tcgen05"
    if op.startswith(("ttng.async_tma_", "ttng.tensormap_", "tt.descriptor_")) or op in (
            "ttng.barrier_expect", "ttng.reinterpret_tensor_descriptor", "tt.make_tensor_descriptor"):
        return "tma"
    if op.startswith("ttg.async_copy"):
        return "cp.async"
    return None


def _hardware_has(cap: int, feature: str) -> bool:
    """PTX ISA: wgmma needs sm_90a; cp.async.bulk.tensor sm_90+; tcgen05 sm_100a/101a/103a/110a; cp.async sm_80+."""
    return {"wgmma": cap == 90, "tma": cap >= 90, "tcgen05": cap in (100, 101, 103, 110), "cp.async": cap >= 80}[feature]


def _profile_lacks(profile: Any, feature: str) -> str | None:
    """Why the arch profile cannot replay a feature (None: it can)."""
    if feature == "wgmma" and profile.mma_kind != "wgmma":
        return f"its MMA is {profile.mma_kind}"
    if feature == "tcgen05" and profile.mma_kind != "tcgen05":
        return f"its MMA is {profile.mma_kind}"
    if feature == "tma" and not profile.tma_available:
        return profile.constants["tma_available"].source
    return None


def check_ops(mod: Ttgir, arch: str) -> None:
    """Refuse, before any walking, an op the reader does not model or the target cannot run."""
    from protosim.arch import load_profile

    profile = load_profile(arch)
    cap = int(mod.capability)

    def feature_ok(op: str, line: int, feature: str) -> None:
        what, where = _FEATURES[feature]
        if not _hardware_has(cap, feature):
            raise _err(mod.path, line, f"{op} needs {what}, which exists on {where}; the module's target {mod.target} "
                       f"(sm_{cap}) has none, so Triton does not emit it for this target: give the TTGIR Triton "
                       f"compiled for sm_{cap}, or compile the kernel for a target that has {feature}")
        why = _profile_lacks(profile, feature)
        if why:
            raise _err(mod.path, line, f"{op} needs {what}; target {mod.target} is replayed on the {arch} profile, "
                       f"which has none ({why}): read a compile for sm_90 (the h200 profile) instead")

    if any(a.type == "!tt.tensordesc" for a in mod.arg_info.values()):
        feature_ok("a !tt.tensordesc argument", mod.func_line, "tma")
    for st in _walk(mod.body):
        feature = _needs(st.op)
        if feature:
            feature_ok(st.op, st.line, feature)
        if st.op == "scf.if":
            raise _err(mod.path, st.line, "scf.if is not modelled yet; the kernels Triton pipelines for matmuls have "
                       "none -- please report the kernel")
        if st.op not in _HANDLED and st.op not in _IGNORED and not st.op.startswith(_IGNORED_DIALECTS):
            raise _err(mod.path, st.line, f"{st.op} is not an op the reader models (it reads Triton's software-pipelined "
                       "matmuls: cp.async / TMA copies, local_load, tt.dot, wgmma, mbarriers); ignoring it could hide "
                       "or invent a hazard -- please report the kernel")
        if st.op == "scf.for":
            header = _LOOP.match(st.rest)
            if not header:
                raise _err(mod.path, st.line, "cannot read this scf.for header (%iv = %lb to %ub step %step)")
            carried = [p for p in (header.group(5) or "").split(",") if "=" in p]
            y = next((s for s in st.body if s.op == "scf.yield"), None)
            yielded = _OPERAND.findall(y.rest.split(":")[0]) if y else []
            if len(yielded) != len(carried):
                raise _err(mod.path, y.line if y else st.line,
                           f"the scf.for at line {st.line} carries {len(carried)} value(s) but its scf.yield gives "
                           f"{len(yielded)}: not valid TTGIR (a line deleted or cut?)")


# ----------------------------------------------------------------------------- the walk


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_BIN = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
        "arith.divsi": _tdiv, "arith.divui": lambda a, b: a // b,
        "arith.remsi": lambda a, b: a - _tdiv(a, b) * b, "arith.remui": lambda a, b: a % b,
        "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
        "arith.maxsi": max, "arith.minsi": min, "arith.ceildivsi": lambda a, b: -(-a // b),
        "arith.floordivsi": lambda a, b: a // b}
_DIVIDES = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.floordivsi")
_UNSIGNED = ("arith.divui", "arith.remui")
_CMP = {"slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
        "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b}
_OPERAND = re.compile(r'%[\w.\-]+(?:#\d+)?')
_LOOP = re.compile(r'\s*(%[\w.]+)\s*=\s*(%[\w.\-]+)\s+to\s+(%[\w.\-]+)\s+step\s+(%[\w.\-]+)(?:\s+iter_args\((.*?)\)\s*->)?')
_ITYPE = re.compile(r':\s*(i\d{1,3}|index)(?:\s+to\s+(i\d{1,3}|index))?\s*$')
_EMITS = {"ttg.async_copy_global_to_local": 1, "ttg.async_commit_group": 1, "ttg.async_wait": 2, "ttg.local_load": 1,
          "tt.dot": 1, "ttng.warp_group_dot": 2, "ttng.warp_group_dot_wait": 1, "ttng.init_barrier": 1,
          "ttng.wait_barrier": 1}
"""Schedule ops a statement always emits (predicated ones count 0): a lower bound for a loop body."""


def _bits(t: str) -> int:
    return 64 if t == "index" else max(1, min(int(t[1:]), 128))


def _wrap(v: int, bits: int) -> int:
    """Two's complement at the type's width (MLIR integer arithmetic wraps); i1 stays 0/1."""
    if bits == 1:
        return v & 1
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


class _Walker:
    """Executes the kernel's scalar arithmetic and emits one warp's op stream (every
    warp of the CTA runs the same stream: TTGIR is SPMD)."""

    def __init__(self, mod: Ttgir, launch: dict[str, Any], max_ops: int = DEFAULT_MAX_OPS, ctas: int = 1,
                 launch_name: str = "the launch file"):
        self.mod = mod
        self.env: dict[str, Any] = {}
        for a in mod.args:
            if isinstance(launch.get(a), int):  # integer arguments (check_launch has vetted them)
                self.env["%" + a] = int(launch[a])
        self.ops: list[Op] = []
        self.views: dict[str, tuple[str, int]] = {}
        self.writes: dict[str, int] = {}
        self.reads: dict[str, int] = {}
        self.read_since_sync: set[str] = set()
        self.written_since_sync: set[str] = set()
        self.barrier_uses = UseCounter()
        """Fills (``barrier_expect``) of each mbarrier so far: a copy or wait belongs to the last one."""
        self.barrier_counts: dict[str, int] = {}
        self.inits_unsynced = False
        self.launch = launch
        self.launch_name = launch_name
        self.max_ops = max_ops
        self.ctas = ctas
        self.iterations = 0
        self.defined: dict[str, Stmt] = {}

    def err(self, st: Stmt, message: str) -> TtgirError:
        return _err(self.mod.path, st.line, message)

    # -- the bound on work ----------------------------------------------------------
    @property
    def cost(self) -> int:
        return len(self.ops) * self.ctas + self.iterations

    def over(self, st: Stmt, what: str, total: int) -> TtgirError:
        return self.err(st, f"{what}: about {total:,} schedule ops ({self.ctas:,} CTA(s); one more per loop iteration), "
                        f"above the limit of {self.max_ops:,}; give a smaller launch in {self.launch_name} (a smaller K, "
                        "fewer ctas) or raise the limit: read(..., max_ops=N), protosim --max-ops N")

    # -- values -------------------------------------------------------------
    def value(self, token: str, st: Stmt) -> Any:
        if token in self.env:
            return self.env[token]
        base = token.split("#")[0]
        missing = self.missing_args(token, set())
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

    def missing_args(self, token: str, seen: set[str]) -> list[str]:
        """The kernel arguments without a launch value that *token* is computed from."""
        base = token.split("#")[0]
        if token in self.env or base in seen:
            return []
        seen.add(base)
        if base.lstrip("%") in self.mod.args:
            return [base.lstrip("%")]
        d = self.defined.get(base)
        if d is None:
            return []
        out: list[str] = []
        for o in _OPERAND.findall(d.rest):
            out += [a for a in self.missing_args(o, seen) if a not in out]
        return out

    def known(self, token: str) -> bool:
        return token in self.env

    def bind(self, st: Stmt, value: Any) -> None:
        if st.results:
            self.env[st.results[0].split(":")[0]] = value

    def scalar(self, st: Stmt) -> None:
        ops = _OPERAND.findall(st.rest)
        if "tensor<" in st.rest or "!tt.ptr" in st.rest.split(":")[-1]:
            return  # tensors and pointers are not modelled
        t = _ITYPE.search(st.rest)
        bits = _bits(t.group(2) or t.group(1)) if t else 64
        src_bits = _bits(t.group(1)) if t else 64
        if st.op == "arith.constant":
            m = re.match(r'\s*(-?\d+|true|false)\s*:\s*(i\d{1,3}|index)\s*$', st.rest)
            if m:
                v = m.group(1)
                self.bind(st, {"true": 1, "false": 0}[v] if v in ("true", "false")
                          else _wrap(_int(v, self.mod.path, st.line, "arith.constant"), bits))
            return
        if st.op in _BIN and len(ops) >= 2 and all(self.known(o) for o in ops[:2]):
            a, b = self.env[ops[0]], self.env[ops[1]]
            if st.op in _DIVIDES and b == 0:
                raise self.err(st, f"{st.op} divides by {ops[1]} = 0: the kernel divides by zero with this launch; "
                               f"check the values in {self.launch_name}")
            if st.op in _UNSIGNED:
                a, b = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
            self.bind(st, _wrap(_BIN[st.op](a, b), bits))
        elif st.op == "arith.cmpi" and len(ops) >= 2 and all(self.known(o) for o in ops[:2]):
            pred = st.rest.strip().split(",")[0].strip()
            if pred not in _CMP:
                raise self.err(st, f"arith.cmpi predicate {pred!r} is not one of {', '.join(_CMP)}")
            a, b = self.env[ops[0]], self.env[ops[1]]
            if pred.startswith("u"):
                a, b = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
            self.bind(st, int(_CMP[pred](a, b)))
        elif st.op == "arith.select" and len(ops) >= 3 and all(self.known(o) for o in ops[:3]):
            self.bind(st, self.env[ops[1]] if self.env[ops[0]] else self.env[ops[2]])
        elif st.op in ("arith.extsi", "arith.index_cast") and ops and self.known(ops[0]):
            self.bind(st, self.env[ops[0]])
        elif st.op in ("arith.extui", "arith.index_castui") and ops and self.known(ops[0]):
            v = self.env[ops[0]]
            self.bind(st, v & ((1 << src_bits) - 1) if v < 0 else v)
        elif st.op == "arith.trunci" and ops and self.known(ops[0]):
            self.bind(st, _wrap(self.env[ops[0]], bits))

    # -- shared memory --------------------------------------------------------
    def buffer_of(self, token: str, st: Stmt) -> tuple[str, int]:
        if token in self.views:
            return self.views[token]
        name = token.lstrip("%")
        if name in self.mod.allocs:
            return name, 0
        raise self.err(st, f"{st.op} on {token}, which is no shared-memory buffer the reader knows "
                       "(a ttg.local_alloc or a ttg.memdesc_index of one)")

    def barrier_of(self, token: str, st: Stmt) -> str:
        buf, idx = self.buffer_of(token, st)
        if not self.mod.allocs[buf].barrier:
            raise self.err(st, f"{st.op} on {token}, a {self.mod.allocs[buf].elem} buffer: an mbarrier is an i64 "
                           "allocation (ttg.local_alloc ... memdesc<Nx1xi64>)")
        return f"{buf}[{idx}]"

    def initialized(self, name: str, st: Stmt) -> None:
        if name not in self.barrier_counts:
            raise self.err(st, f"{st.op} uses mbarrier {name} before any ttng.init_barrier of it: not a kernel Triton "
                           "wrote (a line deleted?)")

    def operands(self, st: Stmt, n: int, form: str) -> list[str]:
        ops = _OPERAND.findall(st.rest)
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
        for r in st.results:
            self.defined[r.split(":")[0]] = st
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
            ops = self.operands(st, 2, "%buffer[%index]")
            buf, _ = self.buffer_of(ops[0], st)
            idx = self.value(ops[1], st)
            stages = self.mod.allocs[buf].stages
            if not 0 <= idx < stages:
                raise self.err(st, f"ttg.memdesc_index {ops[0]}[{ops[1]}]: index {idx} with this launch, but %{buf} "
                               f"has {stages} stage(s) (0..{stages - 1}): a stage outside its buffer")
            self.views[self.result(st)] = (buf, idx)
        elif op == "ttg.local_alloc" and rest.lstrip().startswith("%"):
            buf = self.result(st).lstrip("%")
            self.before_write(buf)
            md = self.mod.allocs[buf]
            self.ops.append(SmemStore(bytes=md.stage_bytes // warps, dst=Access(buf, 0, self.tile(buf, self.writes), WARP_PART)))
            self.written_since_sync.add(buf)
        elif op == "ttg.async_copy_global_to_local":
            ops = self.operands(st, 2, "%pointers, %destination")
            buf, stage = self.buffer_of(ops[1], st)
            self.before_write(buf)
            md = self.mod.allocs[buf]
            self.ops.append(CpAsync(bytes=md.stage_bytes // warps, dst=Access(buf, stage, self.tile(buf, self.writes), WARP_PART),
                                    src=f"{buf}@{self.writes[buf] - 1}"))
        elif op == "ttg.async_commit_group":
            self.ops.append(CpAsyncCommit())
        elif op == "ttg.async_wait":
            n = self.attr(st, r'num\s*=\s*([-+]?\d+)', "{num = N} attribute")
            self.ops.append(CpAsyncWait(n=n))
            self.sync()  # membar: other threads' copies become visible after a barrier
        elif op == "ttg.local_load":
            ops = self.operands(st, 1, "%source")
            buf, stage = self.buffer_of(ops[0], st)
            self.before_read(buf)
            md = self.mod.allocs[buf]
            self.ops.append(LocalLoad(bytes=md.stage_bytes // 2, src=Access(buf, stage, self.tile(buf, self.reads))))
            self.read_since_sync.add(buf)
        elif op == "tt.dot":
            m, n, k = self.dot_shape(st)
            self.ops.append(MmaSync(m=m, n=n, k_elems=k))
        elif op == "ttng.warp_group_dot":
            ops = self.operands(st, 2, "%a, %b")
            a, b = self.buffer_of(ops[0], st), self.buffer_of(ops[1], st)
            m, n, k = self.dot_shape(st)
            reads = (Access(a[0], a[1], self.tile(a[0], self.reads)), Access(b[0], b[1], self.tile(b[0], self.reads)))
            self.ops += [Wgmma(m=m, n=n, k_elems=k, reads=reads), WgmmaCommit()]
        elif op == "ttng.warp_group_dot_wait":
            self.ops.append(WgmmaWait(n=self.attr(st, r'pendings\s*=\s*([-+]?\d+)', "{pendings = N} attribute")))
        elif op == "ttng.init_barrier":
            ops = self.operands(st, 1, "%barrier, count")
            name = self.barrier_of(ops[0], st)
            count = self.attr(st, r',\s*([-+]?\d+)', "arrival count", low=1)
            if count >= 1 << 20:
                raise self.err(st, f"ttng.init_barrier count {count}: an mbarrier counts at most 2^20 - 1 arrivals")
            self.ops.append(MbarInit(barrier=name, issuer="one"))
            self.barrier_counts[name] = count
            self.inits_unsynced = True
        elif op == "ttng.barrier_expect":
            ops = self.operands(st, 1, "%barrier, bytes")
            name = self.barrier_of(ops[0], st)
            self.initialized(name, st)
            use = self.barrier_uses.take(name)
            nbytes = self.attr(st, r',\s*([-+]?\d+)', "byte count")
            if len(ops) < 2 or self.env.get(ops[1], 1):
                self.ops.append(ArriveExpectTx(barrier=name, use=use, bytes=nbytes, issuer="one"))
        elif op == "ttng.async_tma_copy_global_to_local":
            dst = next((o for o in ops[1:] if o in self.views or o.lstrip("%") in self.mod.allocs
                        and not self.mod.allocs[o.lstrip("%")].barrier), None)
            if dst is None:
                raise self.err(st, "ttng.async_tma_copy_global_to_local without a shared-memory destination the reader knows")
            bar_tok = next((o for o in ops[ops.index(dst) + 1:] if o in self.views or o.lstrip("%") in self.mod.allocs), None)
            if bar_tok is None:
                raise self.err(st, "ttng.async_tma_copy_global_to_local without its mbarrier operand")
            buf, stage = self.buffer_of(dst, st)
            if self.mod.allocs[buf].barrier:
                raise self.err(st, f"ttng.async_tma_copy_global_to_local into {dst}, an mbarrier: the destination is a "
                               "data buffer")
            name = self.barrier_of(bar_tok, st)
            self.initialized(name, st)
            self.before_write(buf)
            md = self.mod.allocs[buf]
            pred = ops[-1] if ops[-1] not in (dst, bar_tok) and self.known(ops[-1]) else None
            if pred is None or self.env[pred]:
                self.ops.append(TmaLoad(barrier=name, use=self.barrier_uses.last(name), bytes=md.stage_bytes,
                                        dst=Access(buf, stage, self.tile(buf, self.writes)), issuer="one"))
        elif op == "ttng.wait_barrier":
            ops = self.operands(st, 2, "%barrier, %phase")
            name = self.barrier_of(ops[0], st)
            self.initialized(name, st)
            parity = self.value(ops[1], st)
            self.ops.append(Wait(barrier=name, parity=parity & 1, use=self.barrier_uses.last(name)))
        elif op == "scf.if":
            raise self.err(st, "scf.if is not modelled yet; the kernels Triton pipelines for matmuls have none -- "
                           "please report the kernel")

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

    def loop(self, st: Stmt) -> None:
        m = _LOOP.match(st.rest)
        if not m:
            raise self.err(st, "cannot read this scf.for header (%iv = %lb to %ub step %step)")
        iv, lb, ub, step = m.group(1), *(self.value(t, st) for t in m.group(2, 3, 4))
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
        values = [self.env.get(init) for _, init in carried]
        views = [self.views.get(init) for _, init in carried]
        i = lb
        while i < ub:
            self.iterations += 1
            if self.cost > self.max_ops:
                raise self.over(st, f"at iteration {i} of this scf.for ({lb} to {ub} step {step})", self.cost)
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


# ----------------------------------------------------------------------------- the launch and the metadata


class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _load_json(side: Path, ttgir: Path | str, what: str) -> Any:
    """A JSON file beside the TTGIR, decoded; any fault is a :class:`TtgirError` naming it."""
    where = f"{ttgir}: {what} {side}"
    if not side.is_file():  # a FIFO or a device would block or never end
        raise TtgirError(f"{where}: not a regular file; give a JSON file")
    try:
        data = side.read_bytes()
    except OSError as e:
        raise TtgirError(f"{where}: cannot read it ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TtgirError(f"{where}: not UTF-8 text (a bad byte at offset {e.start}): save it as UTF-8 JSON") from None
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except _DuplicateKey as e:
        raise TtgirError(f"{where}: key {e.args[0]!r} is given twice: keep one") from None
    except json.JSONDecodeError as e:
        raise TtgirError(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except (ValueError, RecursionError) as e:
        raise TtgirError(f"{where}: not valid JSON ({e})") from None


def load_launch(path: Path) -> dict[str, Any]:
    """The launch that goes with ``kernel.ttgir``: ``kernel.launch.json`` beside it, if any
    (decoded and checked to be an object; :func:`check_launch` checks its values)."""
    side = Path(path).with_suffix(".launch.json")
    if not side.exists():
        return {}
    data = _load_json(side, path, "launch file")
    if not isinstance(data, dict):
        raise TtgirError(f"{path}: launch file {side}: the top level is {_a(data)}; it must be an object "
                         'of kernel argument values and ctas, e.g. {"M": 64, "N": 64, "K": 256, "ctas": 1}')
    return data


_NOT_LAUNCH = {
    "grid": "give the number of CTAs as ctas (an integer: the product of the grid's dimensions)",
    "num_ctas": "the CTA count of the launch is ctas; num_ctas (clusters) comes from the compile",
    "num_warps": "num_warps comes from the compile (the module's \"ttg.num-warps\"), not the launch",
    "num_stages": "num_stages comes from the compile (the TTGIR's buffers), not the launch",
    "shared": "shared memory comes from the compile (the metadata JSON), not the launch",
}


def check_launch(mod: Ttgir, launch: Any, where: str) -> None:
    """Refuse a launch whose values the compiled kernel could not have been launched with.

    Keys are the kernel's scalar arguments and ``ctas`` (the CTA count, >= 1).  Other
    integer keys are let through: a launch file may list the Python call's arguments, and
    Triton drops some from the TTGIR (unit strides specialized to constants; a TMA kernel's
    strides live in its descriptors)."""
    if not isinstance(launch, dict):
        raise TtgirError(f"{mod.path}: {where}: {_a(launch)}; the launch is an object of kernel argument "
                         'values and ctas, e.g. {"K": 256, "ctas": 1}')
    lower = {a.lower(): a for a in [*mod.args, "ctas"]}
    for key, value in launch.items():
        if not isinstance(key, str):
            raise TtgirError(f"{mod.path}: {where}: key {key!r} is not a name; keys are kernel argument names and ctas")
        at = f"{mod.path}: {where}: {key!r}"
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if key == "ctas":
            if not is_int or value < 1:
                raise TtgirError(f"{at} = {value!r}: the number of CTAs must be an integer >= 1 (the grid's size)")
            continue
        arg = mod.arg_info.get(key)
        if arg is None:
            if key in _NOT_LAUNCH:
                raise TtgirError(f"{at}: not a launch value; {_NOT_LAUNCH[key]}")
            if key.lower() in lower:
                raise TtgirError(f"{at}: no argument of @{mod.func} is called that; did you mean {lower[key.lower()]!r}? "
                                 "(names are case-sensitive)")
            if not is_int:
                raise TtgirError(f"{at} = {value!r}: not an argument of @{mod.func} ({', '.join(mod.args)}), and not "
                                 "an integer; remove it")
            continue
        if arg.type in ("!tt.ptr", "!tt.tensordesc"):
            raise TtgirError(f"{at}: a pointer argument ({arg.type}) takes no value in the launch; remove it")
        if arg.type.startswith("f") or arg.type.startswith("bf"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TtgirError(f"{at} = {value!r}: {_an(arg.type)} argument takes a number")
            continue
        if not is_int:
            raise TtgirError(f"{at} = {value!r}: {_an(arg.type)} argument takes an integer, not {_a(value)}; "
                             f"e.g. {{\"{key}\": 256}}")
        bits = _bits(arg.type) if re.fullmatch(r"i\d{1,3}|index", arg.type) else 64
        if bits == 1:
            if value not in (0, 1):
                raise TtgirError(f"{at} = {value}: an i1 argument is 0 or 1")
            continue
        if value < 1:
            raise TtgirError(f"{at} = {value}: sizes, strides and counts must be positive integers")
        if value >= 1 << (bits - 1):
            raise TtgirError(f"{at} = {value}: does not fit the argument's type {arg.type} (at most {(1 << (bits - 1)) - 1})")
        if arg.divisibility and value % arg.divisibility:
            raise TtgirError(f"{at} = {value}: this TTGIR was specialized for {key} divisible by {arg.divisibility} "
                             f"(tt.divisibility = {arg.divisibility}); Triton compiles another kernel for {value}: give a "
                             f"multiple of {arg.divisibility}, or the TTGIR of that compile")


def _metadata(path: Path) -> tuple[Path, dict[str, Any]] | None:
    side = Path(path).with_suffix(".json")
    if not side.exists():
        return None
    data = _load_json(side, path, "metadata")
    if not isinstance(data, dict):
        raise TtgirError(f"{path}: metadata {side}: the top level is {_a(data)}; Triton's metadata is an "
                         "object (kernel.metadata, or the .json in Triton's cache)")
    for key in ("shared", "num_warps"):
        if key not in data:
            raise TtgirError(f"{path}: metadata {side}: no {key!r} field; give Triton's metadata JSON of this compile, "
                             "or move the file away")
    for key, low in (("shared", 0), ("num_warps", 1), ("num_ctas", 1), ("num_stages", 0), ("tmem_size", 0)):
        if key in data:
            v = data[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise TtgirError(f"{path}: metadata {side}: {key} = {v!r}: must be an integer >= {low}")
    return side, data


def check_metadata(mod: Ttgir, path: Path) -> None:
    """Refuse metadata beside the TTGIR that cannot be this compile's."""
    got = _metadata(path)
    if got is None:
        return
    side, data = got
    where = f"{path}: metadata {side}"
    if data["num_warps"] != mod.num_warps:
        raise TtgirError(f"{where}: num_warps = {data['num_warps']}, but the TTGIR's \"ttg.num-warps\" is "
                         f"{mod.num_warps}: the metadata is another compile's; give this compile's")
    if "name" in data and data["name"] != mod.func:
        raise TtgirError(f"{where}: name = {data['name']!r}, but the TTGIR's kernel is @{mod.func}: the metadata is "
                         "another kernel's; give this compile's")
    arch = data.get("arch")
    if isinstance(arch, str) and re.fullmatch(r"sm\d+a?", arch) and arch.rstrip("a")[2:] != mod.capability:
        raise TtgirError(f"{where}: arch = {arch!r}, but the TTGIR's target is {mod.target}: the metadata is another "
                         "target's compile; give this compile's")


def metadata_shared(path: Path) -> int | None:
    """The ``shared`` field of the compiled kernel's metadata JSON beside the TTGIR
    (None when there is none; a malformed file is a :class:`TtgirError`)."""
    got = _metadata(Path(path))
    return None if got is None else got[1]["shared"]


# ----------------------------------------------------------------------------- entry points


def read(path: Path, launch: dict[str, Any] | None = None, arch: str | None = None,
         max_ops: int = DEFAULT_MAX_OPS) -> tuple[Schedule, Ttgir]:
    """Read a TTGIR file into a schedule (and the parsed module).

    ``launch`` overrides values of ``<name>.launch.json``; ``arch`` overrides the profile
    the target maps to; ``max_ops`` bounds the work (see :data:`DEFAULT_MAX_OPS`).  Any
    input that cannot be judged faithfully raises :class:`TtgirError`."""
    path = Path(path)
    if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 1:
        raise TtgirError(f"{path}: max_ops = {max_ops!r}: give a positive integer")
    try:
        if not path.is_file():  # a FIFO or a device would block or never end
            raise TtgirError(f"{path}: not a regular file; give the path of a .ttgir file")
        data = path.read_bytes()
    except OSError as e:
        raise TtgirError(f"{path}: {e.strerror}; give the path of a .ttgir file") from e
    except ValueError as e:  # a NUL byte in the path
        raise TtgirError(f"{path!r}: not a file name ({e}); give the path of a .ttgir file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TtgirError(f"{path}: not UTF-8 text (a bad byte at offset {e.start}): give the text of "
                         "kernel.asm['ttgir']") from None
    mod = parse(text, str(path))

    from protosim.arch import available

    if arch is None:
        arch = TARGET_ARCH.get(mod.capability)
        if arch is None:
            raise TtgirError(f"{path}: target {mod.target}: no profile; pass an arch (h200 or gb10)")
    elif not isinstance(arch, str) or arch.lower() not in available():
        raise TtgirError(f"{path}: arch {arch!r}: no such profile; use one of {', '.join(available())}")
    arch = arch.lower()
    check_ops(mod, arch)

    side = path.with_suffix(".launch.json")
    from_file = load_launch(path)
    check_launch(mod, from_file, f"launch file {side}")
    if launch is not None:
        check_launch(mod, launch, "the launch given to read()")
    launch = {**from_file, **(launch or {})}
    check_metadata(mod, path)

    from protosim.arch import load_profile

    limit = load_profile(arch).smem_per_cta_bytes
    if mod.shared_bytes > limit:
        big = max(mod.allocs.values(), key=lambda m: m.stage_bytes * m.stages)
        raise _err(path, big.line, f"the allocations need {mod.shared_bytes:,} B of shared memory; the {arch} profile "
                   f"allows {limit:,} B per CTA (Triton would fail with 'out of resources'): fewer stages or smaller tiles")

    ctas = launch.get("ctas", 1)
    launch_name = str(side) if side.exists() else f"{side} (none beside the TTGIR)"
    if ctas > max_ops:
        raise TtgirError(f"{path}: ctas = {ctas:,}: at least one op per CTA is more than the limit of {max_ops:,} "
                         f"schedule ops; give fewer ctas in {launch_name} or raise the limit: read(..., max_ops=N), "
                         "protosim --max-ops N")
    walker = _Walker(mod, launch, max_ops=max_ops, ctas=ctas, launch_name=launch_name)
    walker.run(mod.body)
    if not walker.ops:
        raise TtgirError(f"{path}: @{mod.func} has no op the reader models (shared-memory copies and loads, MMAs, "
                         "mbarriers) with this launch: nothing to judge")
    if walker.cost > max_ops:
        raise TtgirError(f"{path}: {ctas:,} CTAs x {len(walker.ops):,} ops: about {walker.cost:,} schedule ops, above "
                         f"the limit of {max_ops:,}; give fewer ctas in {launch_name} or raise the limit: "
                         "read(..., max_ops=N), protosim --max-ops N")
    buffers = tuple(BufferDecl(m.name, "smem", m.stages, m.stage_bytes, parts=mod.num_warps, align=16)
                    for m in mod.allocs.values() if not m.barrier)
    barriers = tuple(BarrierDecl(name, count) for name, count in walker.barrier_counts.items())
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
    try:
        validate(schedule)
    except ScheduleError as e:  # the checks above should leave nothing for this; the input is still at fault
        raise TtgirError(f"{path}: the schedule read from it is inconsistent ({e}); the TTGIR is hand-edited past "
                         "what the reader checks -- please report it") from None
    return schedule, mod
