"""Registers in the TTGIR: what a ``tt.load`` or ``tt.store`` moves between global memory
and registers, the warp instructions of float math on tensors (``math_instructions``), and
which adds fuse with their multiply (``fused_adds``).

A ``tt.load`` / ``tt.store`` moves the tensor's bytes, so many per lane per instruction. A
pointer tensor's type gives its shape and element type; its layout gives each thread's
contiguous elements (``sizePerThread`` along ``order[0]`` of a ``#ttg.blocked`` layout),
which Triton's lowering turns into one vector ``ld.global`` / ``st.global`` of up to 16 bytes
when the addresses are contiguous and aligned -- what its ``AxisInfo`` analysis decides and
the TTGIR does not print.  The reader takes the layout's width (``LDG.E.128`` for a
``[1, 8]`` fp16 layout in the SASS of the corpus's ``mm_ptr_64x64x32_s1_w4``); a layout
other than ``blocked`` is taken element by element.
"""

from __future__ import annotations

import re

from protosim.frontends.ttgir.text import _OPERAND, elem_bits, operand_head

_POINTER = re.compile(
    r"tensor<((?:\d+x)+)!tt\.ptr<(\w+)>\s*,\s*(#[\w.]+(?:<\{.*?\}>)?)"  # tensor<AxBx!tt.ptr<f16>, #layout>
    r"|!tt\.ptr<tensor<((?:\d+x)+)(\w+)\s*,\s*(#[\w.]+(?:<\{.*?\}>)?)"  # a block pointer: !tt.ptr<tensor<AxBxf16, #l>>
    r"|!tt\.ptr<(\w+)>")  # one scalar
_LIST = r"\s*=\s*\[([\d,\s]*)\]"


def element_bytes(elem: str) -> int:
    """Bytes of an element type in memory: ``f16`` 2, ``f8E4M3FN`` 1, ``i1`` 1 (``elem_bits``)."""
    return max(1, elem_bits(elem) // 8)


def _elements(dims: str) -> int:
    """Elements of a shape written ``AxBx`` (as a tensor type carries it)."""
    count = 1
    for d in dims.rstrip("x").split("x"):
        count *= int(d)
    return count


_SLICE = re.compile(r"#ttg\.slice<\{\s*dim\s*=\s*(\d+)\s*,\s*parent\s*=\s*(#[\w.]+(?:<\{.*\}>)?)\s*\}>")


def lane_width(layout: str, elem_bytes: int, layouts: dict[str, str] | None = None) -> int:
    """Bytes one lane moves per instruction: its contiguous elements, as one vector of at most 16
    bytes (a power of two) -- along ``order[0]`` of a ``#ttg.blocked`` layout; in a 1-D slice of a
    2-D blocked layout, the parent's along the dimension kept; in a slice of an MMA accumulator
    (``#ttg.nvidia_mma``, a bias or a scale along the tile's rows or columns), the two neighbouring
    columns each thread holds, one row (the SASS of held-out set 5's fp8 GEMM: ``LDG.E.64`` for
    its column scales, ``LDG.E`` for its row scales).  One element for any other layout."""
    contig = _contiguous(layout, layouts or {})
    vec = contig * elem_bytes if contig else elem_bytes
    width = 1
    while width * 2 <= min(16, vec):
        width *= 2
    return max(width, min(16, elem_bytes))


def _contiguous(layout: str, layouts: dict[str, str]) -> int | None:
    """Contiguous elements one thread holds along the layout's fastest dimension (None: unknown)."""
    m = _SLICE.match(layout)
    if m:
        parent = layouts.get(m.group(2), m.group(2))
        kept = 1 - int(m.group(1))  # the dimension a slice of a 2-D layout keeps
        if parent.startswith("#ttg.nvidia_mma"):
            return 2 if kept == 1 else 1
        spt = re.search(r"sizePerThread" + _LIST, parent)
        sizes = [int(x) for x in spt.group(1).split(",") if x.strip()] if spt else []
        return sizes[kept] if parent.startswith("#ttg.blocked") and len(sizes) == 2 and kept in (0, 1) else None
    spt = re.search(r"sizePerThread" + _LIST, layout)
    order = re.search(r"\border" + _LIST, layout)
    if not layout.startswith("#ttg.blocked") or not spt or not order:
        return None
    sizes = [int(x) for x in spt.group(1).split(",") if x.strip()]
    fastest = [int(x) for x in order.group(1).split(",") if x.strip()]
    return sizes[fastest[0]] if fastest and fastest[0] < len(sizes) else None


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
    return _elements(dims) * b, lane_width(layouts.get(layout, layout), b, layouts)


def pointer_layout(type_text: str, layouts: dict[str, str]) -> tuple[int, str] | None:
    """(element bytes, layout text) of a tensor-of-pointers type (``tensor<AxBx!tt.ptr<f16>,
    #blocked>``); None for a scalar or a block pointer."""
    m = _POINTER.search(type_text)
    if not m or not m.group(1):
        return None
    return element_bytes(m.group(2)), layouts.get(m.group(3), m.group(3))


# -- register math ------------------------------------------------------------------------------
PER_ELEMENT = {"arith.addf": (1, 0, 0), "arith.subf": (1, 0, 0), "arith.mulf": (1, 0, 0), "arith.negf": (1, 0, 0),
        "math.fma": (1, 0, 0), "arith.cmpf": (1, 0, 0), "arith.select": (1, 0, 0), "arith.extf": (1, 0, 0),
        "math.absf": (1, 0, 0),
        "arith.maxnumf": (0, 1, 0), "arith.minnumf": (0, 1, 0), "arith.maximumf": (0, 1, 0),
        "arith.minimumf": (0, 1, 0), "arith.truncf": (0, 1, 0),
        "math.exp2": (0, 0, 1), "math.rsqrt": (0, 0, 1), "math.sqrt": (0, 0, 1), "math.sin": (0, 0, 1),
        "math.cos": (0, 0, 1),
        # read from SASS (below)
        "math.exp": (4, 0, 1), "arith.divf": (7, 0, 1), "math.log": (20, 8, 0), "math.log2": (22, 8, 0),
        "math.erf": (14, 0, 1), "__nv_erff": (14, 0, 1), "__nv_tanhf": (14, 0, 2)}
"""Warp instructions per element by class (FP32 pipe; the ALU pipe's FMNMX / F2FP and integer
ops; MUFU) of the float ops Triton lowers one instruction or a fixed sequence per element.  Read
from SASS (Triton 3.6, sm_90a, cuobjdump; a one-element-a-thread fp32 kernel with the op less the
same kernel without it): ``exp2`` (``ex2.approx.ftz``), ``rsqrt`` and ``sqrt``
(``sqrt.approx.ftz``) are one MUFU op; ``exp`` is ``ex2.approx`` without ftz -- a multiply by
log2(e), a compare with -126 and two predicated multiplies around the MUFU.EX2 (a denormal result's
fix-up), 4 FP32 and 1 MUFU; ``x / y`` (``div.full``) a MUFU.RCP, 5 FMUL and 2 FSETP; ``log`` and
``log2`` are no MUFU op at all but libdevice's polynomial, 20 / 22 FP32 (12 FFMA) and 8 integer
instructions; ``erf`` and ``tanh`` (``math.erf``; ``tt.extern_elementwise`` of libdevice's
``__nv_erff`` / ``__nv_tanhf``, keyed by symbol): erf 2 FADD, 7 FFMA, 1 FMUL, 1 FSEL, 1 FSETP, 2
HFMA2 (constants) and 1 MUFU; tanh 2 FADD, 6 FFMA, 2 FMUL, 1 FSEL, 2 FSETP, 1 HFMA2 and 2 MUFU
(docs/semantics.md "Register math").  ``sin`` / ``cos`` are not read: their SASS holds a slow path
through local memory; one MUFU op is the assumption."""
_ROUNDING = {"math.floor": (0, 0, 1), "math.ceil": (0, 0, 1)}
"""FRND (``cvt.rmi`` / ``cvt.rpi``): one instruction an element at the MUFU's rate (below)."""
_INT_BITS = re.compile(r"x(i\d+)\s*,")


def conversion(op: str, types: str) -> tuple[float, float, float] | None:
    """Warp instructions per element (FP32 pipe, ALU pipe, MUFU pipe) of a conversion between
    integers and floats on a tensor, as Triton 3.6 lowers it for sm_90a (cuobjdump); None for a
    pair not read.  ``arith.sitofp`` / ``uitofp`` of an 8- or 16-bit integer to fp16: PRMT to
    sign-extend the bytes and pack the halves (224 for 128 elements in kernels/triton/gemm_parts.py's
    w8a16_m96_int8, 1.75 an element) and one I2F.F16.S16 an element; of a 32-bit integer to fp32 one
    I2FP.F32.S32 (the ALU pipe's rate).  ``arith.fptosi`` / ``fptoui`` of fp32: one F2I an element,
    and to 8 bits 0.75 PRMT to pack the bytes (48 for 64 elements in held-out set 6's
    quant_int8_rowwise).  I2F, F2I and FRND run at the MUFU's rate, 8.09 cycles a warp instruction,
    and I2F shares its pipe: MUFU.EX2 and I2F.F16.S16 in one chain take 20.4 cycles a step
    (alu_rate.cu, results/silicon/microbench/2026-12-02_h200_alu_conversions.md); F2I and FRND sharing
    it too is the assumption.  PRMT and I2FP run at FMNMX's 2.1."""
    sides = types.split(" to ")
    if len(sides) != 2:
        return None
    src_int, dst_int = _INT_BITS.search(sides[0]), _INT_BITS.search(sides[1])
    if op in ("arith.sitofp", "arith.uitofp") and src_int:
        bits = int(src_int.group(1)[1:])
        if bits in (8, 16) and re.search(r"xf16\s*,", sides[1]):
            return (0, 1.75, 1)
        if bits == 32 and re.search(r"xf32\s*,", sides[1]):
            return (0, 1, 0)
    if op in ("arith.fptosi", "arith.fptoui") and dst_int and re.search(r"xf32\s*,", sides[0]):
        bits = int(dst_int.group(1)[1:])
        if bits == 8:
            return (0, 0.75, 1)
        if bits in (16, 32):
            return (0, 0, 1)
    return None


_PACKED = ("arith.truncf",)
"""Ops whose instruction handles two elements whatever the type (F2FP packs two fp32 into fp16x2)."""
_TYPE = re.compile(r"tensor<((?:\d+x)+)(\w+)\s*,\s*(#[\w.]+(?:<\{.*?\}>)?)")


def _tensor(text: str) -> tuple[int, int, str] | None:
    """(elements, element bytes, layout) of the first tensor type in ``text``."""
    m = _TYPE.search(text)
    return (_elements(m.group(1)), element_bytes(m.group(2)), m.group(3)) if m else None


def _float(elem_text: str) -> bool:
    return bool(re.search(r"x(?:f\d+|bf16|f8\w*)\s*,", elem_text))


def math_instructions(op: str, rest: str, layouts: dict[str, str], threads: int,
                      combine: str | None = None) -> tuple[int, int, int, int] | None:
    """Warp instructions (fp32, half_rate, mufu, shfl) one warp issues for the tensor op ``op``
    (``rest``: its text after the op name), each thread holding ``elements / threads`` of the
    result (at least one); None for anything that is not float math on a tensor (integer and
    pointer arithmetic is not counted: ptxas strength-reduces address math across a loop).

    ``tt.reduce`` (``combine``: the op in its body): a thread combines its own elements, then
    each row it holds takes log2(lanes along the axis) butterfly steps of a shuffle and a
    combine -- 4 lanes a row in an MMA accumulator, ``threadsPerWarp[axis]`` in a blocked
    layout.  A reduction across warps (through shared memory) is not counted."""
    types = rest.rsplit(" : ", 1)[-1]
    if op == "tt.reduce":
        if combine not in PER_ELEMENT:
            return None
        src = _tensor(types)
        out = re.search(r"->\s*(.*)$", types)
        if src is None or not _float(types):
            return None
        axis = re.search(r"axis\s*=\s*(\d+)", rest)
        elems, _, layout = src
        layout = layouts.get(layout, layout)
        lanes = 4 if "nvidia_mma" in layout else 1
        tpw = re.search(r"threadsPerWarp\s*=\s*\[([\d,\s]*)\]", layout)
        if tpw and axis:
            dims = [int(x) for x in tpw.group(1).split(",") if x.strip()]
            lanes = dims[int(axis.group(1))] if int(axis.group(1)) < len(dims) else 1
        steps = max(0, lanes.bit_length() - 1)
        out_elems = 1
        if out and (t := _tensor(out.group(1))):
            out_elems = t[0]
        per_thread = -(-elems // threads)
        rows = max(1, -(-out_elems * lanes // threads))
        f, h, u = PER_ELEMENT[combine]
        n = max(0, per_thread - rows) + steps * rows
        return f * n, h * n, u * n, steps * rows
    if op == "tt.extern_elementwise":  # a libdevice call: its cost by symbol, where counted
        symbol = re.search(r'symbol\s*=\s*"(\w+)"', rest)
        op = symbol.group(1) if symbol else op
    if op in _CONVERSIONS or op in _ROUNDING:
        t = _tensor(types)
        per_element = conversion(op, types) if op in _CONVERSIONS else _ROUNDING[op]
        if t is None or per_element is None:
            return None
        per_thread = -(-t[0] // threads)  # one instruction an element: I2F / F2I / FRND do not pack two
        f, h, u = (round(c * per_thread) for c in per_element)
        return f, h, u, 0
    if op not in PER_ELEMENT:
        return None
    t = _tensor(types.split(" to ")[-1] if op in _PACKED else types)
    if t is None or not _float(types):
        return None
    elems, width, _ = t
    per_thread = -(-elems // threads)
    if op in _PACKED or width == 2:  # two fp16 per instruction (HADD2 / HFMA2, F2FP)
        per_thread = -(-per_thread // 2)
    f, h, u = PER_ELEMENT[op]
    return f * per_thread, h * per_thread, u * per_thread, 0


_CONVERSIONS = ("arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")

_CONTRACTS = ("arith.addf", "arith.subf")


def fused_adds(body) -> frozenset[int]:
    """Lines of the ``arith.addf`` / ``arith.subf`` statements that become one ``FFMA`` (``HFMA2``
    for fp16) with the ``arith.mulf`` they add: Triton compiles with fp fusion on by default
    (``enable_fp_fusion``), and LLVM contracts a multiply whose only use is an add into a fused
    multiply-add.  Such an add costs no instruction of its own.  Read from the SASS of the
    corpus's ``attn_d64_128x64_s2_w4`` (Triton 3.9, sm_90a, cuobjdump): its loop body has 68 FFMA
    and 68 FMUL where the TTGIR has ``qk * scale - m`` and ``acc * alpha`` on 64 elements a thread
    -- the first pair fused, the second a multiply alone.  A multiply with more than one use (by
    name, anywhere in the function) is left unfused: LLVM would keep it."""
    uses: dict[str, int] = {}
    mul_result: dict[str, int] = {}
    adds: list = []

    def visit(stmts) -> None:
        for st in stmts:
            for tok in _OPERAND.findall(operand_head(st.rest)):
                uses[tok] = uses.get(tok, 0) + 1
            if st.op == "arith.mulf" and len(st.results) == 1:
                mul_result[st.results[0].split(":")[0]] = st.line
            elif st.op in _CONTRACTS:
                adds.append(st)
            for reg in st.regions:
                visit(reg.stmts)

    visit(body)
    fused = set()
    for st in adds:
        ops = _OPERAND.findall(operand_head(st.rest))[:2]
        if any(o in mul_result and uses.get(o) == 1 for o in ops):
            fused.add(st.line)
    return frozenset(fused)
