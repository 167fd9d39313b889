"""How wide Triton makes a ``tt.load`` / ``tt.store``: its AxisInfo analysis, the part that decides.

A blocked layout gives each thread ``sizePerThread`` contiguous elements, but the lowering issues
them as one vector ``ld.global`` only as far as the compiler can *prove* the addresses contiguous
and aligned and the mask constant over the vector (Triton's ``lib/Analysis/AxisInfo.cpp``, used by
``LoadStoreOpConversion``): the width in elements is

    min(the layout's contiguous elements per thread,
        the pointer's alignment  = min(its contiguity, its divisibility in bytes / element bytes),
        the mask's alignment     = its constancy)                     along the layout's order[0]

None of the three is printed in the TTGIR.  The classic case: ``offs < N`` where ``N`` is a kernel
argument not specialised as divisible by 16 (Triton specialises ``N % 16 == 0``; an ``N`` of
12,582,917 gets no ``tt.divisibility``): the mask's constancy is ``gcd(contiguity, divisibility of
offs, divisibility of N) = 1``, so every element is its own 4-byte load -- held-out set 6's
grid-stride AdamW issues 64 scalar ``LDG`` a thread where its layout would have 14
(``ldg_in_flight``, read off its SASS).

Each value gets (contiguity, divisibility, constancy) per dimension and, where known, its constant
value, by Triton's rules for the ops below; function arguments from their ``tt.divisibility``
attribute (1 without); a loop's induction variable the gcd of its lower bound's and step's
divisibility.  What this module does not follow -- a loop-carried value (``iter_args``), a loaded
value, an op not listed -- is *unknown* (None), and an unknown factor restricts nothing: the
reader then keeps the layout's width, as before.  So the analysis only ever narrows an access the
compiler provably narrowed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from protosim.frontends.ttgir.text import _LOOP, _OPERAND, Stmt, operand_head
from protosim.frontends.ttgir.values import _facts, shape_of

KMAX = 1 << 62
"""Triton's ``kMaxDivisor``: the divisibility of 0 (highestPowOf2Divisor<int64_t>(0))."""


def pow2_divisor(v: int) -> int:
    """The largest power of two dividing ``v`` (``KMAX`` for 0)."""
    v = abs(int(v))
    return KMAX if v == 0 else min(KMAX, v & -v)


def _gcd(*xs: int) -> int:
    out = 0
    for x in xs:
        out = math.gcd(out, x)
    return out


def _mul(a: int, b: int) -> int:
    return KMAX if a > KMAX // max(1, b) else a * b


@dataclass(frozen=True)
class Info:
    """One value's facts by dimension (a scalar has one dimension)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    value: int | None = None
    """The constant it holds, where one is known."""


_INT = re.compile(r"\s*(-?\d+)\s*:\s*(?:i\d+|index)\b")
_DENSE_INT = re.compile(r"dense<(-?\d+|true|false)>\s*:\s*tensor<[\dx]+i\d+")
_HINT = re.compile(r"\btt\.(divisibility|contiguity|constancy)\s*=\s*(?:dense<\[?([\d,\s]+)\]?>|(\d+))")
_CASTS = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui", "ttg.convert_layout",
          "tt.bitcast")


class AxisInfo:
    """The facts of every integer value, mask and pointer of one TTGIR function, computed on demand.

    SSA names are scoped by region (MLIR reuses ``%x_12`` in two loops for different values), so
    a name is looked up from the statement that uses it: the last definition before it in a
    region enclosing it."""

    def __init__(self, body: list[Stmt], arg_divisibility: dict[str, int | None]):
        self.defs: dict[str, list[tuple[int, tuple[int, ...], Any]]] = {}
        """name -> (line, region path where it is visible, what defines it: a statement, ``("iv",
        lower bound, step, the scf.for)`` or None for a region argument) for each definition."""
        self.path: dict[int, tuple[int, ...]] = {}
        self.args = {"%" + name.lstrip("%"): (d or 1) for name, d in arg_divisibility.items()}
        self._memo: dict[tuple, Info | None] = {}
        self._index(body, ())

    def _define(self, name: str, line: int, path: tuple[int, ...], what) -> None:
        self.defs.setdefault(name.split(":")[0], []).append((line, path, what))

    def _index(self, stmts: list[Stmt], path: tuple[int, ...]) -> None:
        for st in stmts:
            self.path[id(st)] = path
            for r in st.results:
                self._define(r, st.line, path, st if len(st.results) == 1 else None)
            for region in st.regions:
                inner = path + (id(region),)
                for a in region.args:
                    self._define(a, st.line, inner, None)
                if st.op == "scf.for":
                    m = _LOOP.match(st.rest)
                    if m:
                        self._define(m.group(1), st.line, inner, ("iv", m.group(2), m.group(4), st))
                        for a in re.findall(r"(%[\w.\-]+)\s*=", m.group(5) or ""):
                            self._define(a, st.line, inner, None)  # iter_args: carried, not followed
                self._index(region.stmts, inner)

    def _resolve(self, token: str, at: Stmt):
        """The definition of ``token`` (an entry of ``defs``) that statement ``at`` sees: the last one
        before it in a region enclosing it; None when nothing defines it."""
        base = token.split("#")[0]
        where, line = self.path.get(id(at), ()), at.line
        best = None
        for d in self.defs.get(base, ()):
            if d[0] <= line and where[:len(d[1])] == d[1] and (best is None or d[0] >= best[0]):
                best = d
        return best

    # -- what the lowering reads ---------------------------------------------------------------
    def width(self, st: Stmt, pointer: str, mask: str | None, dim: int, elem_bytes: int) -> int | None:
        """The most elements one vector access through ``pointer`` under ``mask`` can take along
        dimension ``dim`` (the layout's ``order[0]``), by what the analysis proves; None when
        neither the pointer nor the mask is known (nothing proven either way)."""
        limits = []
        p = self.info(pointer, st)
        if p is not None and dim < len(p.contiguity):
            limits.append(min(p.contiguity[dim], max(1, p.divisibility[dim] // elem_bytes)))
        if mask is not None:
            k = self.info(mask, st)
            if k is not None and dim < len(k.constancy):
                limits.append(max(1, k.constancy[dim]))
        return min(limits) if limits else None

    # -- the lattice ------------------------------------------------------------------------------
    def info(self, token: str, at: Stmt) -> Info | None:
        """What the analysis proves of ``token`` as statement ``at`` uses it (None: unknown)."""
        base = token.split("#")[0]
        if base in self.args and not self.defs.get(base):
            return Info((1,), (self.args[base],), (1,))  # a kernel argument: an integer or a pointer
        d = self._resolve(token, at)
        if d is None or d[2] is None or ("#" in token and not isinstance(d[2], tuple)):
            return None  # undefined, a region argument, one result of several: not followed
        key = (base, d[0], d[1])
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # a cycle is unknown
        what = d[2]
        if isinstance(what, tuple):  # a loop's induction variable: gcd of its bound's and step's divisibility
            lb, step = self.info(what[1], what[3]), self.info(what[2], what[3])
            got = None if lb is None or step is None else Info((1,), (_gcd(lb.divisibility[0], step.divisibility[0]),), (1,))
        else:
            got = self._compute(what)
            if got is not None:
                got = self._hinted(what, got)
        self._memo[key] = got
        return got

    def _hinted(self, st: Stmt, got: Info) -> Info:
        """``tt.divisibility`` / ``tt.contiguity`` / ``tt.constancy`` on the defining op override
        (``tl.multiple_of``, ``tl.max_contiguous``), as Triton's visitOperation does."""
        if "tt." not in st.rest:
            return got
        fields = {"contiguity": got.contiguity, "divisibility": got.divisibility, "constancy": got.constancy}
        for name, dense, one in _HINT.findall(st.rest):
            vals = tuple(int(x) for x in (dense or one).split(",") if x.strip())
            if len(vals) == len(got.contiguity):
                fields[name] = vals
        return Info(fields["contiguity"], fields["divisibility"], fields["constancy"], got.value)

    def _compute(self, st: Stmt) -> Info | None:
        shape, ops, _, rng, axis, pred, _ = _facts(st.rest)  # the value evaluator's parse of the text
        shape = shape or ()  # a scalar
        rank = max(1, len(shape))
        op = st.op
        if op == "arith.constant":
            m = _INT.match(st.rest) or _DENSE_INT.search(st.rest)
            if not m:
                return None
            v = {"true": 1, "false": 0}.get(m.group(1), None)
            v = int(m.group(1)) if v is None else v
            return Info((1,) * rank, (pow2_divisor(v),) * rank, shape if shape else (1,), v)
        if op in ("tt.get_program_id", "tt.get_num_programs"):
            return Info((1,), (1,), (1,))
        if op == "tt.make_range":
            if rng is None:
                return None
            return Info((rng[0] - rng[1],), (pow2_divisor(rng[1]),), (1,))
        if not ops:
            return None
        if op in _CASTS:
            return self.info(ops[0], st)
        if op == "tt.splat":
            a = self.info(ops[0], st)
            if a is None:
                return None
            # an unreadable result type (shape ()) is a rank-1 value, as for a constant: one
            # entry in each of the three tuples, which every rule below indexes alike
            return Info((1,) * rank, (a.divisibility[0],) * rank, shape if shape else (1,), a.value)
        if op == "tt.expand_dims":
            a = self.info(ops[0], st)
            if a is None or axis is None or axis > len(a.contiguity):
                return None
            ax = axis
            if a.value is not None:
                new = pow2_divisor(a.value)
            else:
                new = _gcd(*(1 if c > 1 else d for c, d in zip(a.contiguity, a.divisibility)))
            ins = lambda t, x: t[:ax] + (x,) + t[ax:]  # noqa: E731
            return Info(ins(a.contiguity, 1), ins(a.divisibility, new), ins(a.constancy, 1), a.value)
        if op == "tt.broadcast":
            a = self.info(ops[0], st)
            before = shape_of(st.rest.rsplit(" : ", 1)[-1].split("->")[0])  # the operand's type
            if a is None or before is None:
                return None
            if len(before) != len(shape) or len(a.contiguity) != len(shape):
                return None
            return Info(tuple(1 if b == 1 else c for b, c in zip(before, a.contiguity)), a.divisibility,
                        tuple(s if b == 1 else k for b, s, k in zip(before, shape, a.constancy)), a.value)
        if op == "arith.select" and len(ops) >= 3 and "tensor<" in st.rest.split(" : ")[-1].split(",")[0]:
            c, a, b = (self.info(t, st) for t in ops[:3])
            if a is None or b is None or c is None or not (len(a.contiguity) == len(b.contiguity) == len(c.constancy)):
                return None
            n = len(a.contiguity)
            return Info(tuple(_gcd(a.contiguity[d], b.contiguity[d], c.constancy[d]) for d in range(n)),
                        tuple(_div_from_contiguity(a, b, d) for d in range(n)),
                        tuple(_gcd(a.constancy[d], b.constancy[d], c.constancy[d]) for d in range(n)))
        if len(ops) < 2:
            return None
        a, b = self.info(ops[0], st), self.info(ops[1], st)
        if a is None or b is None or len(a.contiguity) != len(b.contiguity):
            return None
        n = len(a.contiguity)
        if op in ("arith.addi", "arith.subi", "tt.addptr"):
            value = None
            if a.value is not None and b.value is not None and op != "tt.addptr":
                value = a.value + b.value if op == "arith.addi" else a.value - b.value
            if value is not None:
                return Info((1,) * n, (pow2_divisor(value),) * n, tuple(map(max, a.constancy, b.constancy)), value)
            scale = _elem_bytes(st) if op == "tt.addptr" else 1
            if op == "arith.subi":
                contig = tuple(_gcd(a.contiguity[d], b.constancy[d]) for d in range(n))
            else:
                contig = tuple(max(_gcd(a.constancy[d], b.contiguity[d]), _gcd(a.contiguity[d], b.constancy[d]))
                               for d in range(n))
            return Info(contig, tuple(_gcd(a.divisibility[d], _mul(b.divisibility[d], scale)) for d in range(n)),
                        tuple(_gcd(a.constancy[d], b.constancy[d]) for d in range(n)))
        if op == "arith.muli":
            if a.value is not None and b.value is not None:
                v = a.value * b.value
                return Info((1,) * n, (pow2_divisor(v),) * n, tuple(map(max, a.constancy, b.constancy)), v)
            contig = tuple(max(a.contiguity[d] if b.value == 1 else 1, b.contiguity[d] if a.value == 1 else 1)
                           for d in range(n))
            div = tuple(_mul(1 if a.contiguity[d] > 1 and b.value != 1 else a.divisibility[d],
                             1 if b.contiguity[d] > 1 and a.value != 1 else b.divisibility[d]) for d in range(n))
            return Info(contig, div, tuple(_gcd(a.constancy[d], b.constancy[d]) for d in range(n)))
        if op == "arith.cmpi":
            out = []
            for d in range(n):
                k = _gcd(a.constancy[d], b.constancy[d])
                size = shape[d] if d < len(shape) else 1
                if pred in ("sgt", "ugt", "sle", "ule") and a.constancy[d] == size:
                    k = max(k, _gcd(b.contiguity[d], a.divisibility[d], b.divisibility[d]))
                elif pred in ("slt", "ult", "sge", "uge") and b.constancy[d] == size:
                    k = max(k, _gcd(a.contiguity[d], a.divisibility[d], b.divisibility[d]))
                out.append(k)
            return Info((1,) * n, (1,) * n, tuple(out))
        if op in ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui"):
            return _div_rem(op, a, b, shape)
        if op in ("arith.maxsi", "arith.maxui", "arith.minsi", "arith.minui"):
            if a.value is not None and b.value is not None:
                return Info((1,) * n, (1,) * n, (1,) * n,
                            (max if "max" in op else min)(a.value, b.value))
            return Info(tuple(_gcd(a.contiguity[d], b.contiguity[d]) for d in range(n)),
                        tuple(_div_from_contiguity(a, b, d) for d in range(n)),
                        tuple(_gcd(a.constancy[d], b.constancy[d]) for d in range(n)))
        if op in ("arith.andi", "arith.ori", "arith.xori"):
            return Info((1,) * n, (1,) * n, tuple(_gcd(a.constancy[d], b.constancy[d]) for d in range(n)))
        return None


def _div_from_contiguity(a: Info, b: Info, d: int) -> int:
    """Divisibility of a value that is ``a`` in some places and ``b`` in others (Triton's
    getDivisibilityFromContiguity): a changed contiguity bounds it too."""
    if a.contiguity[d] == b.contiguity[d] or KMAX in (a.contiguity[d], b.contiguity[d]):
        return _gcd(a.divisibility[d], b.divisibility[d])
    return _gcd(a.divisibility[d], b.divisibility[d], a.contiguity[d], b.contiguity[d])


def _div_rem(op: str, a: Info, b: Info, shape: tuple[int, ...]) -> Info:
    """``arith.divsi`` / ``remsi`` (and unsigned) by Triton's DivOp / RemOp rules: a contiguous
    run divided by a constant is constant over gcd(contiguity, divisibilities) elements (a
    per-channel index ``offs // HW``), its remainder contiguous over as many."""
    n = len(a.contiguity)
    if a.value is not None and b.value is not None and b.value != 0:
        q = abs(a.value) // abs(b.value) * (1 if (a.value < 0) == (b.value < 0) else -1)
        v = q if "div" in op else a.value - q * b.value
        return Info((1,) * n, (pow2_divisor(v),) * n, tuple(map(max, a.constancy, b.constancy)), v)
    contig, div, const = [], [], []
    for d in range(n):
        size = shape[d] if d < len(shape) else 1
        run = a.contiguity[d] == size and b.constancy[d] == size  # lhs contiguous, rhs constant
        if "div" in op:
            contig.append(a.contiguity[d] if b.value == 1 else 1)
            k = _gcd(a.constancy[d], b.constancy[d])
            const.append(max(k, _gcd(a.contiguity[d], a.divisibility[d], b.divisibility[d])) if run else k)
            if a.value == 0 or b.value == 1:
                div.append(a.divisibility[d])
            elif b.value is not None and b.value and (abs(b.value) & (abs(b.value) - 1)) == 0 and a.contiguity[d] == 1:
                div.append(max(1, a.divisibility[d] // abs(b.value)))
            else:
                div.append(1)
        else:
            contig.append(_gcd(a.contiguity[d], a.divisibility[d], b.divisibility[d]) if run else 1)
            div.append(_gcd(a.divisibility[d], b.divisibility[d]) if b.constancy[d] > 1 else 1)
            const.append(size if b.value == 1 else _gcd(a.constancy[d], b.constancy[d]))
    return Info(tuple(contig), tuple(div), tuple(const))


def _elem_bytes(st: Stmt) -> int:
    """Bytes of the pointee of a ``tt.addptr``'s pointer (``!tt.ptr<f32>``: 4)."""
    from protosim.frontends.ttgir.registers import element_bytes

    m = re.search(r"!tt\.ptr<(\w+)>", st.rest)
    return element_bytes(m.group(1)) if m else 1


def access_operands(st: Stmt) -> tuple[str | None, str | None]:
    """(pointer, mask) of a ``tt.load`` (``ptr, mask, other``) or ``tt.store`` (``ptr, value,
    mask``); None for what the statement does not name."""
    ops = _OPERAND.findall(operand_head(st.rest))
    at = 1 if st.op == "tt.load" else 2
    return (ops[0] if ops else None), (ops[at] if len(ops) > at else None)


def proven_width(mod, st: Stmt, width: int, pointer: str, mask: str | None) -> int:
    """The layout's ``width`` (bytes a lane moves per instruction) of the ``tt.load`` / ``tt.store``
    ``st`` of module ``mod``, narrowed to what the analysis proves of ``pointer`` and ``mask``."""
    from protosim.frontends.ttgir.coalescing import _ints
    from protosim.frontends.ttgir.registers import pointer_layout

    lay = pointer_layout(st.rest.rsplit(" : ", 1)[-1], mod.layouts)
    if lay is None or not lay[1].startswith(("#ttg.blocked", "#ttg.slice")):
        return width
    elem, layout = lay
    order = _ints("order", layout) if layout.startswith("#ttg.blocked") else [0]  # a 1-D slice: its one dimension
    elems = mod.axis.width(st, pointer, mask, order[0], elem) if order else None
    if elems is None:
        return width
    proven = 1 << (max(1, elems * elem).bit_length() - 1)  # a vector is a power of two bytes
    return max(min(width, elem), min(width, proven))


def access_widths(mod) -> dict[str, list[int]]:
    """The byte widths the reader gives the module's ``tt.load`` (``ldg``) and ``tt.store``
    (``stg``) statements, each listed once, smallest first: what ``kernels.toolchain.sass.
    global_widths`` reads off the compiled kernel's SASS, to hold the two together."""
    from protosim.frontends.ttgir.registers import moved

    out: dict[str, set[int]] = {"ldg": set(), "stg": set()}

    def visit(stmts) -> None:
        for st in stmts:
            if st.op in ("tt.load", "tt.store"):
                got = moved(st.rest.rsplit(" : ", 1)[-1], mod.layouts)
                pointer, mask = access_operands(st)
                if got is not None and pointer is not None:
                    out["ldg" if st.op == "tt.load" else "stg"].add(proven_width(mod, st, got[1], pointer, mask))
            for region in st.regions:
                visit(region.stmts)

    visit(mod.body)
    return {k: sorted(v) for k, v in out.items() if v}
