"""What a ``tt.load`` or ``tt.store`` moves between global memory and registers: the
tensor's bytes and how many of them one lane moves per instruction.

A pointer tensor's type gives its shape and element type; its layout gives each thread's
contiguous elements (``sizePerThread`` along ``order[0]`` of a ``#ttg.blocked`` layout),
which Triton's lowering turns into one vector ``ld.global`` / ``st.global`` of up to 16 bytes
when the addresses are contiguous and aligned -- what its ``AxisInfo`` analysis decides and
the TTGIR does not print.  The reader takes the layout's width (``LDG.E.128`` for a
``[1, 8]`` fp16 layout in the SASS of the corpus's ``mm_ptr_64x64x32_s1_w4``); a layout
other than ``blocked`` is taken element by element.
"""

from __future__ import annotations

import re

_POINTER = re.compile(
    r"tensor<((?:\d+x)+)!tt\.ptr<(\w+)>\s*,\s*(#[\w.]+(?:<\{.*?\}>)?)"  # tensor<AxBx!tt.ptr<f16>, #layout>
    r"|!tt\.ptr<tensor<((?:\d+x)+)(\w+)\s*,\s*(#[\w.]+(?:<\{.*?\}>)?)"  # a block pointer: !tt.ptr<tensor<AxBxf16, #l>>
    r"|!tt\.ptr<(\w+)>")  # one scalar
_BITS = re.compile(r"[a-z]+(\d+)")
_LIST = r"\s*=\s*\[([\d,\s]*)\]"


def element_bytes(elem: str) -> int:
    """Bytes of an element type: ``f16`` 2, ``bf16`` 2, ``f8E4M3FN`` 1, ``i1`` 1 (a byte in memory)."""
    m = _BITS.match(elem)
    return max(1, int(m.group(1)) // 8) if m else 4


def lane_width(layout: str, elem_bytes: int) -> int:
    """Bytes one lane moves per instruction: its contiguous elements in a ``#ttg.blocked``
    layout, as one vector of at most 16 bytes (a power of two); one element otherwise."""
    spt = re.search(r"sizePerThread" + _LIST, layout)
    order = re.search(r"\border" + _LIST, layout)
    if not layout.startswith("#ttg.blocked") or not spt or not order:
        return min(16, elem_bytes)
    sizes = [int(x) for x in spt.group(1).split(",") if x.strip()]
    fastest = [int(x) for x in order.group(1).split(",") if x.strip()]
    vec = sizes[fastest[0]] * elem_bytes if fastest and fastest[0] < len(sizes) else elem_bytes
    width = 1
    while width * 2 <= min(16, vec):
        width *= 2
    return width


def moved(type_text: str, layouts: dict[str, str]) -> tuple[int, int] | None:
    """(bytes of the whole tensor, bytes per lane per instruction) of the pointer type a
    ``tt.load`` / ``tt.store`` names after its ``:``; None when the text is not a pointer type."""
    m = _POINTER.search(type_text)
    if not m:
        return None
    if m.group(7):  # a scalar: every lane loads (or stores) the one element
        b = element_bytes(m.group(7))
        return b, min(16, b)
    dims, elem, layout = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(4), m.group(5), m.group(6))
    b = element_bytes(elem)
    count = 1
    for d in dims.rstrip("x").split("x"):
        count *= int(d)
    layout = layouts.get(layout, layout)
    return count * b, lane_width(layout, b)
