"""The index tensors of a TTGIR walk, evaluated: which elements a ``tt.load`` or ``tt.store``
touches, and under which mask.

A load's tensor type says how many elements its lanes address, not how many distinct ones:
RoPE's ``cos[tok, d]`` for 32 rows of one token names 64 distinct floats 32 times over, and a
layer norm's 8192-wide block over a 5120-wide row loads 3072 masked-off lanes.  The memory
system sees the distinct, unmasked elements; the lanes issue their instructions either way.
So the reader evaluates the pointer's offsets and the mask (numpy arrays) from the statements
that define them, in this CTA's walk (its scalars), and the load's ``memory_bytes`` is the
distinct unmasked elements' bytes (docs/triton.md "Which bytes a load moves").

Read: integer and boolean tensors built by ``tt.make_range``, dense constants, ``tt.splat`` of a
known scalar, ``tt.broadcast``, ``tt.expand_dims``, layout conversions, integer arithmetic and
comparisons, ``arith.select``; pointers by ``tt.splat`` of a pointer and ``tt.addptr``.  Anything
else -- a value carried around a loop, a loaded value, a block pointer -- is not known: None, and
the load keeps its tensor's bytes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from protosim.frontends.ttgir.text import _ATTR_DICT, _OPERAND

MAX_ELEMENTS = 1 << 18
"""Tensors larger than this are not evaluated (None)."""

_SHAPE = re.compile(r"tensor<((?:\d+x)+)")
_DENSE = re.compile(r"dense<(-?\d+|true|false)>")
_RANGE = re.compile(r"\bend\s*=\s*(-?\d+)\s*:\s*i\d+\s*,\s*start\s*=\s*(-?\d+)")
_AXIS = re.compile(r"axis\s*=\s*(\d+)")


def _tdiv(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.divsi": _tdiv, "arith.remsi": lambda a, b: a - _tdiv(a, b) * b,
    "arith.divui": np.floor_divide, "arith.remui": np.remainder,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.minsi": np.minimum, "arith.maxsi": np.maximum, "arith.minui": np.minimum, "arith.maxui": np.maximum,
    "arith.shli": np.left_shift, "arith.shrsi": np.right_shift, "arith.shrui": np.right_shift,
}
_CMP = {"slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal, "eq": np.equal,
        "ne": np.not_equal, "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}
_SAME = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui", "ttg.convert_layout")


class Pointer:
    """A tensor of pointers: ``base`` (the scalar pointer it was splat from) plus element offsets."""

    __slots__ = ("base", "offsets")

    def __init__(self, base: str, offsets: np.ndarray):
        self.base, self.offsets = base, offsets


@lru_cache(maxsize=1 << 16)
def shape_of(rest: str) -> tuple[int, ...] | None:
    """The result shape of a statement: the last ``tensor<AxB...`` in its text.  (Remembered by
    text: a loop's statements are evaluated once per iteration, their text never changes.)"""
    found = _SHAPE.findall(rest.split(" loc(")[0])
    return tuple(int(d) for d in found[-1].rstrip("x").split("x")) if found else None


@lru_cache(maxsize=1 << 16)
def _operands(rest: str) -> tuple[str, tuple[str, ...]]:
    """(the text before the type, with attribute dictionaries removed; its operand names)."""
    head = _ATTR_DICT.sub("", rest).split(" : ")[0]
    return head, tuple(_OPERAND.findall(head))


@lru_cache(maxsize=1 << 16)
def _facts(rest: str) -> tuple:
    """What :func:`evaluate` reads off a statement's text, parsed once per text: (shape, operand
    names, the dense constant, the range's (end, start), the axis, the comparison's predicate,
    whether a splat makes pointers)."""
    head, ops = _operands(rest)
    dense, rng, axis = _DENSE.search(rest), _RANGE.search(rest), _AXIS.search(rest)
    return (shape_of(rest), ops, dense.group(1) if dense else None,
            (int(rng.group(1)), int(rng.group(2))) if rng else None,
            int(axis.group(1)) if axis else None,
            head.split(",")[0].split()[-1] if "," in head else "",
            "!tt.ptr" in rest.split(" : ", 1)[-1].split("->")[0])


def evaluate(token: str, defined: dict, scalar: Callable[[str], Any]):
    """The value of tensor ``token`` (an array, or a :class:`Pointer`), from the statements
    that define it (``defined``: name -> statement) and the walk's scalars (``scalar(name)``:
    an int, or None when not known); None when any part of it is not read."""
    memo: dict[str, Any] = {}

    def value(t: str):
        if t in memo:
            return memo[t]
        memo[t] = None  # a cycle (a value carried around a loop) is not known
        got = compute(t)
        shape = got.offsets.shape if isinstance(got, Pointer) else getattr(got, "shape", None)
        declared = shape_of(defined[t.split("#")[0]].rest) if got is not None else None
        if got is not None and shape != declared:
            got = None  # a value that is not the shape its type says (a hand-edited range): not read
        memo[t] = got
        return got

    def compute(t: str):
        st = defined.get(t.split("#")[0])
        if st is None:
            return None
        op = st.op
        shape, ops, dense, rng, axis, pred, makes_pointers = _facts(st.rest)
        if shape is None or math.prod(shape) > MAX_ELEMENTS:
            return None
        if op == "arith.constant":
            if dense is None:
                return None
            v = {"true": True, "false": False}.get(dense)
            return np.full(shape, int(dense) if v is None else v)
        if op == "tt.make_range":
            if rng is None or rng[0] - rng[1] != math.prod(shape):
                return None  # a range its type does not hold (hand-edited): not read, never allocated
            return np.arange(rng[1], rng[0], dtype=np.int64)
        if op == "tt.splat" and ops:
            if makes_pointers:
                base, offset = scalar_pointer(ops[0], defined, scalar)
                return Pointer(base, np.full(shape, offset, dtype=np.int64))
            v = scalar(ops[0])
            return np.full(shape, v, dtype=np.int64) if isinstance(v, (int, np.integer)) else None
        if op == "tt.addptr" and len(ops) >= 2:
            p, off = value(ops[0]), value(ops[1])
            if not isinstance(p, Pointer) or not _shaped(shape, p.offsets, off):
                return None
            return Pointer(p.base, p.offsets + off)
        if not ops:
            return None
        if op == "tt.broadcast":
            v = value(ops[0])
            if isinstance(v, Pointer):
                return Pointer(v.base, np.broadcast_to(v.offsets, shape))
            return np.broadcast_to(v, shape) if isinstance(v, np.ndarray) else None
        if op == "tt.expand_dims":
            if axis is None:
                return None
            v = value(ops[0])
            if isinstance(v, Pointer):
                return Pointer(v.base, np.expand_dims(v.offsets, axis))
            return np.expand_dims(v, axis) if isinstance(v, np.ndarray) else None
        if op in _SAME:
            v = value(ops[0])
            return v if isinstance(v, (np.ndarray, Pointer)) else None
        if op == "arith.cmpi" and len(ops) >= 2:
            a, b = value(ops[0]), value(ops[1])
            if pred not in _CMP or not _shaped(shape, a, b):
                return None
            return _CMP[pred](a, b)
        if op == "arith.select" and len(ops) >= 3:
            c, a, b = value(ops[0]), value(ops[1]), value(ops[2])
            if not _shaped(shape, c, a, b):
                return None
            return np.where(c, a, b)
        if op in _BINARY and len(ops) >= 2:
            a, b = value(ops[0]), value(ops[1])
            if not _shaped(shape, a, b):
                return None
            if op in ("arith.divsi", "arith.remsi", "arith.divui", "arith.remui") and not np.all(b):
                return None
            with np.errstate(all="ignore"):
                return _BINARY[op](a, b)
        return None

    try:
        return value(token)
    except (ValueError, TypeError, OverflowError, IndexError, MemoryError):
        return None  # operands numpy refuses (an input past what the reader checks): not read


def scalar_pointer(token: str, defined: dict, scalar: Callable[[str], Any]) -> tuple[str, int]:
    """A scalar pointer as (the pointer it is offset from, the offset in elements): a chain of
    scalar ``tt.addptr`` by known integers is followed back (``x_ptr + row * stride`` is
    ``("%x_ptr", row * stride)``), and stops at the first pointer not made that way."""
    base, offset = token, 0
    for _ in range(64):  # a chain longer than any kernel writes: stop rather than loop
        st = defined.get(base.split("#")[0])
        if st is None or st.op != "tt.addptr" or "tensor<" in st.rest:
            break
        ops = _operands(st.rest)[1]
        step = scalar(ops[1]) if len(ops) >= 2 else None
        if not isinstance(step, (int, np.integer)):
            break
        base, offset = ops[0], offset + int(step)
    return base, offset


def _shaped(shape: tuple[int, ...], *arrays) -> bool:
    """Every operand an array of the statement's own shape, as the IR requires of an elementwise
    op (an input that breaks it is not read: no broadcast of mismatched operands is ever made)."""
    return all(isinstance(a, np.ndarray) and a.shape == shape for a in arrays)


def addresses(pointer: str, mask: str | None, defined: dict, scalar: Callable[[str], Any]):
    """(base pointer, the distinct unmasked element offsets from it -- sorted --, all lanes, the
    offsets element by element in the tensor's shape with -1 where the mask is off) of a load or
    store through ``pointer`` under ``mask``; None when either is not known."""
    p = evaluate(pointer, defined, scalar)
    if not isinstance(p, Pointer):
        return None
    offsets = p.offsets
    lanes = int(offsets.size)
    full = offsets
    if mask is not None:
        m = evaluate(mask, defined, scalar)
        if not isinstance(m, np.ndarray):
            return None
        try:  # an i1 splat of a scalar evaluates as integers: a lane is on where it is non-zero
            m = np.broadcast_to(m != 0, offsets.shape)
        except ValueError:
            return None
        full = np.where(m, offsets, -1)
        offsets = offsets[m]
    return p.base, distinct(offsets), lanes, full


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a flat integer array, by sorting (numpy 2's hash-based ``unique`` is ~10x
    slower on the few thousand offsets of a tile, and a walk evaluates thousands of them)."""
    s = np.sort(values, axis=None)
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def touched(pointer: str, mask: str | None, defined: dict, scalar: Callable[[str], Any]) -> tuple[int, int] | None:
    """(distinct unmasked elements, all lanes) a load or store through ``pointer`` under
    ``mask`` addresses, or None when either is not known."""
    got = addresses(pointer, mask, defined, scalar)
    return None if got is None else (int(got[1].size), got[2])
