"""TTGIR text -> statements: the module's attributes, the kernel's arguments, its body as
nested regions, and its shared-memory allocations.  Pure parsing: no values, no launch."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ELEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i64": 8, "i32": 4, "f8E4M3FN": 1, "f8E5M2": 1, "i8": 1, "tf32": 4}


def elem_bits(elem: str) -> int:
    """Bits of an MLIR element type: the width its name carries (``f16``, ``bf16``,
    ``f8E4M3FN``, ``f4E2M1FN``, ``i1``, ``i64``; ``tf32`` is stored in 32 bits)."""
    if elem == "tf32":
        return 32
    m = re.match(r"[a-z]+(\d+)", elem)
    return max(1, int(m.group(1))) if m else 16
TARGET_ARCH = {"90": "h200", "100": "b200", "103": "b200", "120": "gb10", "121": "gb10", "80": "gb10", "86": "gb10",
               "89": "gb10"}
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
class Region:
    """One region of an op: ``scf.for``'s body, ``scf.if``'s then / else, a
    ``ttg.warp_specialize``'s ``default`` or ``partitionN`` (with its block arguments and
    its ``num_warps``)."""

    label: str
    stmts: list[Stmt]
    args: list[str] = field(default_factory=list)
    warps: int | None = None
    line: int = 0


@dataclass
class Stmt:
    line: int
    results: list[str]
    op: str
    rest: str
    regions: list[Region] = field(default_factory=list)

    @property
    def body(self) -> list[Stmt]:
        """The first region's statements (a loop's body, an ``scf.if``'s then branch)."""
        return self.regions[0].stmts if self.regions else []

    def region(self, label: str) -> Region | None:
        return next((r for r in self.regions if r.label == label), None)


@dataclass
class MemDesc:
    """One allocation: ``ttg.local_alloc`` (shared memory) or ``ttng.tmem_alloc`` (Tensor
    Memory), with Triton's placement when the IR carries it (``allocation.offset``, written
    by Triton's allocation pass; ``tensor_memory_col_offset`` for TMEM)."""

    name: str
    stages: int
    tile: tuple[int, ...]
    elem: str
    barrier: bool
    line: int = 0
    space: str = "smem"
    offset: int | None = None

    @property
    def stage_bytes(self) -> int:
        n = 1
        for d in self.tile:
            n *= d
        return max(1, n * elem_bits(self.elem) // 8)

    @property
    def bytes(self) -> int:
        return self.stage_bytes * self.stages

    @property
    def columns(self) -> int:
        """TMEM columns of one stage: a 32-bit column per element of a row (the last
        dimension), 16-bit elements packed two to a column (PTX ISA, Tensor Memory)."""
        return max(1, -(-self.tile[-1] * elem_bits(self.elem) // 32))


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
    module_shared: int | None = None
    """``ttg.shared``: the bytes Triton's allocation pass gave the kernel (present in IR
    printed after that pass, e.g. by ``kernels/triton/corpus.py``'s ``.alloc.mlir``)."""
    module_tmem: int | None = None
    """``ttg.tensor_memory_size``: TMEM columns, after Triton's TMEM allocation pass."""
    live_peak: int = 0
    """The liveness estimate of shared memory (:func:`_live_peak`)."""
    layouts: dict[str, str] = field(default_factory=dict)
    """The module's layout aliases: ``#blocked1`` -> ``#ttg.blocked<{sizePerThread = ...}>``."""
    fused_adds: frozenset[int] = frozenset()
    """Lines of the float adds that fuse with their multiply into one FMA (``registers.fused_adds``)."""
    dead_dots: frozenset[int] = frozenset()
    """Lines of the ``warp_group_dot`` statements whose result nothing reads: ptxas deletes
    their wgmmas (:mod:`protosim.frontends.ttgir.liveness`)."""

    metadata_shared: int | None = None
    """``shared`` of the compiled kernel's metadata beside the file (set by ``read``)."""
    ldg_in_flight: int | None = None
    """``ldg_in_flight`` of that metadata: the most global loads a thread has out at once, read off
    the compiled SASS (set by ``read``; None where the metadata does not say)."""
    wgmma_serialized: bool | None = None
    """``wgmma_serialized`` of that metadata: ptxas made each wgmma instruction wait for the one
    before (``kernels.toolchain.sass.wgmma_serialized``; None where the metadata does not say)."""

    @functools.cached_property
    def axis(self):
        """Triton's AxisInfo of the function (:class:`~protosim.frontends.ttgir.axisinfo.AxisInfo`),
        made once and shared by every CTA's walk."""
        from protosim.frontends.ttgir.axisinfo import AxisInfo

        return AxisInfo(self.body, {n: a.divisibility for n, a in self.arg_info.items()})

    @property
    def shared_bytes(self) -> int:
        """The kernel's shared memory: Triton's own number -- the IR's ``ttg.shared`` when it
        carries it, else the metadata's -- and only without either the liveness estimate."""
        if self.module_shared is not None:
            return self.module_shared
        return self.metadata_shared if self.metadata_shared is not None else self.live_peak

    @property
    def shared_source(self) -> str:
        if self.module_shared is not None:
            return "Triton's allocation (ttg.shared)"
        return "Triton's metadata (shared)" if self.metadata_shared is not None else "live allocations in the IR"

    @property
    def buffer_sum(self) -> int:
        """Every shared-memory allocation added up, as if none shared bytes."""
        return sum(m.bytes for m in self.allocs.values() if m.space == "smem")

    @property
    def total_warps(self) -> int:
        """The module's warps plus every ``warp_specialize`` partition's (Triton's metadata
        counts them all)."""
        def partitions(stmts: list[Stmt]) -> int:
            n = 0
            for st in stmts:
                if st.op == "ttg.warp_specialize":
                    n += sum(r.warps or 0 for r in st.regions if r.label.startswith("partition"))
                for r in st.regions:
                    n += partitions(r.stmts)
            return n
        return self.num_warps + partitions(self.body)

    @property
    def capability(self) -> str:
        return self.target.split(":")[-1]


def sidecar(path: str | Path, suffix: str) -> Path:
    """A file beside the TTGIR: ``k.ttgir`` -> ``k.launch.json`` / ``k.json``; the IR printed
    after Triton's allocation pass, ``k.alloc.mlir``, shares ``k``'s."""
    path = Path(path)
    if path.name.endswith(".alloc.mlir"):
        return path.with_name(path.name[: -len(".alloc.mlir")] + suffix)
    return path.with_suffix(suffix)


def _err(path: str | Path, line: int | None, message: str) -> TtgirError:
    """``path: line N: message`` (the line survives a caller that drops the first ``path: ``)."""
    return TtgirError(f"{path}: line {line}: {message}" if line else f"{path}: {message}")


_LAYOUT_ALIAS = re.compile(r"^\s*(#\w+)\s*=\s*(#ttg\.\w+<.*>)\s*$", re.M)
_LOC_ALIAS = re.compile(r"#loc\w*\s*=\s*loc\(.*\)$")
_LOC = re.compile(r'\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)')
_STMT = re.compile(r'^\s*(?:(%[\w.#\-]+(?::\d+)?(?:\s*,\s*%[\w.#]+)*)\s*=\s*)?(?:"([a-z_][\w.]*)"|([a-z_][\w.]*)\b)(.*)$')
_MEMDESC = re.compile(r'!ttg\.memdesc<((?:\d+x)+)((?:[fi]|bf|tf)\d+\w*)\b')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MODULE = re.compile(r'^module\b.*\{$')
_FUNC = re.compile(r'^tt\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.\-]+)\s*\((.*)\)\s*(?:attributes\s*\{.*\}\s*)?\{$')
_ARG = re.compile(r'%([\w.]+)\s*:\s*(!?[\w.]+)')
_REGION_LABEL = re.compile(r'^(default|partition\d+)\b(.*)\{$')
"""A ``ttg.warp_specialize`` region: ``default {`` or ``partitionN(%a: T, ...) num_warps(W) {``."""
_OPERAND = re.compile(r'%[\w.\-]+(?:#\d+)?')
_ATTR_DICT = re.compile(r'\{[^{}]*\}')
_LOOP = re.compile(r'\s*(%[\w.]+)\s*=\s*(%[\w.\-]+)\s+to\s+(%[\w.\-]+)\s+step\s+(%[\w.\-]+)(?:\s+iter_args\((.*?)\)\s*->)?')
_DIGITS = 30
"""Integer literals longer than this are refused (no kernel value has 30 digits)."""


def operand_head(rest: str) -> str:
    """An op's text before its type (`` : ``), without attribute dictionaries: where its
    operands are (``scf.yield {async_task_id = array<i32: 0>} %a : i64`` -> `` %a``)."""
    return _ATTR_DICT.sub("", rest).split(" : ")[0]


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
    owners: list[Stmt] = []
    scopes: list[tuple[int, dict[str, int]]] = []
    ws_defined: dict[int, dict[str, int]] = {}
    """The names defined before each ttg.warp_specialize: all its partitions may see (and reuse)."""
    """(stack depth, names defined outside) of each open partition region."""
    """The op each open region belongs to (``stack[i + 1]`` is a region of ``owners[i]``)."""
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
                if not re.fullmatch(r"\}\s*else\s*\{", s) or len(stack) == 1 or owners[-1].op != "scf.if":
                    raise _err(path, ln, f"cannot read {s[:60]!r}: only scf.if continues a region with `}} else {{`")
                stack.pop()
                opened.pop()
                defined = dict(scopes[-1][1])  # the then region's names are not the else region's
                region = Region("else", [], line=ln)
                owners[-1].regions.append(region)
                stack.append(region.stmts)
                opened.append(ln)
                continue
            if net > 0:
                raise _err(path, ln, f"cannot read {s[:60]!r}: unbalanced braces; the text may be cut or hand-edited")
            trailer = re.match(r"\}\)\s*(:.*)$", s)  # `}) : (operand types) -> result type` (tt.reduce)
            if trailer and owners:
                owners[-1].rest += " " + trailer.group(1)
            for k in range(-net):
                if len(stack) == 1:
                    if k != -net - 1:
                        raise _err(path, ln, "more `}` than open regions: unbalanced braces")
                    end = ln
                    break
                stack.pop()
                opened.pop()
                owners.pop()
                if scopes and scopes[-1][0] == len(stack):
                    defined = scopes.pop()[1]
            if end is not None:
                break
            continue
        label = _REGION_LABEL.match(s)
        if label:
            owner = stack[-1][-1] if stack[-1] else None
            if owner is None or owner.op != "ttg.warp_specialize" or net != 1:
                raise _err(path, ln, f"cannot read {s[:60]!r}: a `{label.group(1)} {{` region follows only a "
                           "ttg.warp_specialize; the text may be cut or hand-edited")
            args = re.findall(r'(%[\w.\-]+)\s*:', label.group(2))
            for a in args:
                defined.setdefault(a, ln)
            warps = re.search(r'num_warps\((\d{1,4})\)', label.group(2))
            region = Region(label.group(1), [], args, int(warps.group(1)) if warps else None, ln)
            scopes.append((len(stack), dict(defined)))
            if label.group(1) != "default":  # isolated from above: the partition's names are its own
                defined = dict(ws_defined.get(id(owner), defined))
                for a in args:
                    defined.setdefault(a, ln)
            owner.regions.append(region)
            stack.append(region.stmts)
            opened.append(ln)
            owners.append(owner)
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
        for r in results:
            name = r.split(":")[0]
            if name in defined:
                raise _err(path, ln, f"{name} is defined twice (line {defined[name]} and line {ln}): not valid SSA; "
                           "was a line duplicated?")
            defined[name] = ln
        stmt = Stmt(ln, results, m.group(2) or m.group(3), m.group(4))
        stack[-1].append(stmt)
        if stmt.op == "ttg.warp_specialize":
            ws_defined[id(stmt)] = dict(defined)
        if net > 0:
            if net > 1 or not s.endswith("{"):
                raise _err(path, ln, f"cannot read {s[:60]!r}: unbalanced braces; the text may be cut or hand-edited")
            if len(stack) > MAX_NESTING:
                raise _err(path, ln, f"regions nested more than {MAX_NESTING} deep: not a kernel Triton wrote")
            scopes.append((len(stack), dict(defined)))  # a region's names end with it (MLIR reuses them in siblings)
        for name in own:  # scf.for's induction variable and iter_args: block arguments of its body, scoped to it
            defined.setdefault(name, ln)
        if net > 0:
            region = Region("then" if stmt.op == "scf.if" else "body", [], line=ln)
            stmt.regions.append(region)
            stack.append(region.stmts)
            opened.append(ln)
            owners.append(stmt)
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
    indexed = _indexed_allocs(stack[0])
    for st in _walk(stack[0]):
        if st.op in ("ttg.local_alloc", "ttng.tmem_alloc"):
            md = _MEMDESC.search(st.rest)
            if not md:
                raise _err(path, st.line, f"{st.op} without a !ttg.memdesc<...> type the reader knows (an element type "
                           "such as f16, bf16, f32, f8E4M3FN, i64)")
            if not st.results:
                raise _err(path, st.line, f"{st.op} without a result: not valid TTGIR")
            dims = tuple(_int(d, path, st.line, "memdesc dimension") for d in md.group(1).rstrip("x").split("x"))
            if any(d < 1 for d in dims) or any(d > 1 << 20 for d in dims):
                raise _err(path, st.line, f"{st.op} of shape {'x'.join(map(str, dims))}: every dimension must be "
                           "from 1 to 2^20")
            elem = md.group(2)
            from_value = st.rest.lstrip().startswith("%")
            barrier = elem == "i64" and st.op == "ttg.local_alloc" and not from_value
            if barrier:  # memdesc<Nx1xi64> / memdesc<Nxi64>: N mbarriers
                stages, tile = dims[0], dims[1:] or (1,)
            elif len(dims) >= 2 and not from_value and st.line in indexed:  # memdesc<S x tile>, indexed by stage
                stages, tile = dims[0], dims[1:]
            elif from_value or len(dims) <= 2:
                stages, tile = 1, dims
            else:  # memdesc<S x tile>: a ring of S stages
                stages, tile = dims[0], dims[1:]
            name = st.results[0].lstrip("%").split(":")[0]
            if name in allocs:  # partitions are isolated from above: MLIR reuses names in each
                name = f"{name}@{st.line}"
            off = re.search(r'(?:allocation\.offset|tensor_memory_col_offset)\s*=\s*(\d+)', st.rest)
            allocs[name] = MemDesc(name, stages, tile, elem, barrier, st.line,
                                   "tmem" if st.op == "ttng.tmem_alloc" else "smem", int(off.group(1)) if off else None)
    head = _strip(lines[midx])
    shared = re.search(r'ttg\.shared\s*=\s*(\d+)', head)
    tmem = re.search(r'ttg\.tensor_memory_size\s*=\s*(\d+)', head)
    mod = Ttgir(path, func.group(1), target, num_warps, list(arg_info), stack[0], allocs, arg_info, start + 1,
                module_shared=int(shared.group(1)) if shared else None, module_tmem=int(tmem.group(1)) if tmem else None)
    mod.live_peak = _live_peak(stack[0], allocs)
    # Static passes over the whole function (they read this module's grammar: imported here).
    from protosim.frontends.ttgir.liveness import dead_dots
    from protosim.frontends.ttgir.registers import fused_adds
    mod.dead_dots = dead_dots(stack[0])
    mod.fused_adds = fused_adds(stack[0])
    mod.layouts = {m.group(1): m.group(2) for m in _LAYOUT_ALIAS.finditer(text)}
    return mod


_PAIR = re.compile(r'(%[\w.\-]+)\s*=\s*(%[\w.\-]+(?:#\d+)?)')


def _indexed_allocs(body: list[Stmt]) -> set[int]:
    """The lines of the allocations some ``ttg.memdesc_index`` takes a stage of (directly, or
    through a view, a loop's carried value or a warp_specialize capture): their first
    dimension is a ring of stages (``memdesc<3x128xf16>`` indexed is 3 stages of 128)."""
    root: dict[str, int] = {}
    out: set[int] = set()

    def visit(stmts: list[Stmt]) -> None:
        for st in stmts:
            ops = [o.split("#")[0] for o in _OPERAND.findall(operand_head(st.rest))]
            if st.op in ("ttg.local_alloc", "ttng.tmem_alloc") and st.results:
                root[st.results[0].split(":")[0]] = st.line
            elif st.op == "ttg.memdesc_index" and ops and ops[0] in root:
                out.add(root[ops[0]])
            else:
                for name, init in _PAIR.findall(st.rest):  # scf.for iter_args
                    if init.split("#")[0] in root:
                        root[name] = root[init.split("#")[0]]
            if st.op not in ("ttg.local_alloc", "ttng.tmem_alloc", "ttg.memdesc_index") and st.results:
                src = next((o for o in ops if o in root), None)
                if src is not None:
                    root[st.results[0].split(":")[0]] = root[src]
            if st.op == "ttg.warp_specialize":
                caps = [o.split("#")[0] for o in _OPERAND.findall(st.rest.split(")")[0])]
                for reg in st.regions:
                    for arg, cap in zip(reg.args, caps, strict=False):
                        if cap in root:
                            root[arg] = root[cap]
            for reg in st.regions:
                visit(reg.stmts)

    visit(body)
    return out


def _live_peak(body: list[Stmt], allocs: dict[str, MemDesc]) -> int:
    """The most shared memory live at once, from the allocations' live ranges over the
    function's top-level statements (an allocation lives from its ``local_alloc`` to the
    last top-level statement that uses it or a view of it; a use inside a loop keeps it live
    for the whole loop).  Triton's allocator packs buffers by the same kind of liveness, so
    a buffer freed before the epilogue's staging buffer is allocated shares its bytes; its
    scratch for layout conversions is not in the TTGIR, so this can fall short of
    Triton's number -- which is why the allocation pass's own result wins when present."""
    root: dict[str, str] = {f"%{n}": n for n, m in allocs.items() if m.space == "smem"}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, top in enumerate(body):
        for st in _walk([top]):
            for r in st.results:
                r = r.split(":")[0]
                if r.lstrip("%") in allocs and r in root:
                    first.setdefault(root[r], i)
                    last[root[r]] = i
            used = [root[o.split("#")[0]] for o in _OPERAND.findall(st.rest) if o.split("#")[0] in root]
            for r in st.results:  # a view (memdesc_index, trans, subslice, a loop's carried view) of a buffer
                if used and st.op != "ttg.local_alloc":
                    root.setdefault(r.split(":")[0], used[0])
            for reg in st.regions:  # warp_specialize partitions: block arguments are the captured operands
                if reg.args and st.op == "ttg.warp_specialize":
                    caps = _OPERAND.findall(st.rest.split(")")[0])
                    for arg, cap in zip(reg.args, caps, strict=False):
                        if cap in root:
                            root[arg] = root[cap]
            for b in used:
                last[b] = i
    peak = 0
    for i in range(len(body)):
        peak = max(peak, sum(allocs[b].bytes for b in first if first[b] <= i <= last.get(b, first[b])))
    return peak


def _walk(stmts):
    """Every statement, nested ones included (all regions: loop bodies, both branches, partitions)."""
    for s in stmts:
        yield s
        for r in s.regions:
            yield from _walk(r.stmts)
