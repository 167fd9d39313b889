"""Which warps of a CTA hold which elements of a tensor, from its TTGIR layout -- enough to
know when a ``ttg.convert_layout`` or a ``tt.reduce`` moves data between warps, which Triton
lowers through shared memory (a store, a barrier, a load), where a move within a warp is
shuffles or register renaming.

Only ``#ttg.blocked`` layouts and ``#ttg.slice`` layouts of them are read.  Along each
dimension a blocked layout gives a thread ``sizePerThread`` contiguous elements, a warp
``threadsPerWarp`` threads' worth and the CTA ``warpsPerCTA`` warps' worth, repeating past
that tile and wrapping (replicating) when the tensor is smaller than it; warp ids are
numbered along ``order`` (fastest first).  A slice layout is its parent with one dimension
removed: every warp along that dimension holds the element.  Any other layout (an MMA
accumulator, a dot operand, a linear layout) is not read: None.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

_LIST = r"\s*=\s*\[([\d,\s]*)\]"
_SLICE = re.compile(r"#ttg\.slice<\{dim\s*=\s*(\d+)\s*,\s*parent\s*=\s*(#[\w.]+(?:<\{.*\}>)?)\s*\}>$")
MAX_ELEMENTS = 1 << 16
"""Tensors larger than this are not enumerated (None): the reader's tensors are tiles."""


def _ints(name: str, text: str) -> tuple[int, ...] | None:
    m = re.search(r"\b" + name + _LIST, text)
    return tuple(int(x) for x in m.group(1).split(",") if x.strip()) if m else None


def parse(layout: str, layouts: dict[str, str]):
    """``("blocked", spt, tpw, wpc, order)``, ``("slice", dim, parent)`` or None."""
    layout = layouts.get(layout, layout).strip()
    if layout.startswith("#ttg.blocked"):
        fields = tuple(_ints(n, layout) for n in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"))
        if not all(fields) or len({len(f) for f in fields}) != 1:
            return None
        spt, tpw, wpc, order = fields
        # a layout no compiler makes (an edited one) is not read: 32 lanes, at most 32 warps
        if _count(tpw) != 32 or not 1 <= _count(wpc) <= 32 or min(spt) < 1 or _count(spt) > MAX_ELEMENTS \
                or sorted(order) != list(range(len(order))):
            return None
        return ("blocked", *fields)
    m = _SLICE.match(layout)
    if m:
        parent = parse(m.group(2), layouts)
        return ("slice", int(m.group(1)), parent) if parent is not None else None
    return None


def warps_of_blocked(spt, tpw, wpc, order, shape) -> dict[tuple[int, ...], frozenset[int]] | None:
    """Element -> the warp ids holding it, in a blocked layout (module docstring)."""
    if len(shape) != len(spt) or min(shape) < 1 or min(spt + tpw + wpc) < 1:
        return None
    per_dim = []
    for d, n in enumerate(shape):
        span, tile = spt[d] * tpw[d], spt[d] * tpw[d] * wpc[d]
        holders: dict[int, set[int]] = {}
        for rep in range(-(-n // tile)):
            for w in range(wpc[d]):
                for j in range(span):
                    holders.setdefault((rep * tile + w * span + j) % n, set()).add(w)
        per_dim.append(holders)
    stride, s = [0] * len(shape), 1
    for d in order:
        stride[d] = s
        s *= wpc[d]
    out = {}
    for x in itertools.product(*(range(n) for n in shape)):
        ids = {0}
        for d, c in enumerate(x):
            ids = {i + w * stride[d] for i in ids for w in per_dim[d][c]}
        out[x] = frozenset(ids)
    return out


def warps_holding(layout, shape: tuple[int, ...]) -> dict[tuple[int, ...], frozenset[int]] | None:
    """Element -> the warp ids holding it, for a parsed layout (:func:`parse`); None if not read."""
    if layout is None or not shape or min(shape) < 1 or _count(shape) > MAX_ELEMENTS:
        return None
    if layout[0] == "blocked":
        return warps_of_blocked(*layout[1:], shape)
    _, k, parent = layout
    if parent[0] != "blocked" or k > len(shape):
        return None
    spt, tpw, wpc = parent[1], parent[2], parent[3]
    if k >= len(spt):
        return None
    inner = warps_holding(parent, shape[:k] + (spt[k] * tpw[k] * wpc[k],) + shape[k:])
    if inner is None:
        return None
    out: dict[tuple[int, ...], frozenset[int]] = {}
    for x, ids in inner.items():
        y = x[:k] + x[k + 1:]
        out[y] = out.get(y, frozenset()) | ids
    return out


@lru_cache(maxsize=4096)
def crosses_warps(src: str, dst: str, shape: tuple[int, ...], layouts: tuple[tuple[str, str], ...]) -> bool | None:
    """Does converting a tensor of ``shape`` from layout ``src`` to ``dst`` hand some element to
    a warp that did not hold it?  None when either layout is not read."""
    table = dict(layouts)
    a = warps_holding(parse(src, table), shape)
    b = warps_holding(parse(dst, table), shape)
    if a is None or b is None:
        return None
    return any(not ids <= a[x] for x, ids in b.items())


def warps_along(layout: str, axis: int, layouts: dict[str, str]) -> int | None:
    """How many warps a blocked layout spreads dimension ``axis`` over (a reduction along it
    combines their partial results through shared memory when more than one); None if not read."""
    lay = parse(layout, layouts)
    if lay is None or lay[0] != "blocked" or axis >= len(lay[3]):
        return None
    return lay[3][axis]


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
