"""The kernel's scalar integer arithmetic (``arith.*`` on ``i1``..``i64`` / ``index``),
evaluated with MLIR's semantics: two's-complement wrap at the type's width, signed and
unsigned division and comparison.  Tensors, floats and pointers have no value here."""

from __future__ import annotations

import re

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
_ITYPE = re.compile(r':\s*(i\d{1,3}|index)(?:\s+to\s+(i\d{1,3}|index))?\s*$')


def _bits(t: str) -> int:
    return 64 if t == "index" else max(1, min(int(t[1:]), 128))


def _wrap(v: int, bits: int) -> int:
    """Two's complement at the type's width (MLIR integer arithmetic wraps); i1 stays 0/1."""
    if bits == 1:
        return v & 1
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


