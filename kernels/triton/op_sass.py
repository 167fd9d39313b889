"""What one float op on a tensor becomes in SASS: the instructions per element, by opcode.

    /tmp/tri36/bin/python -m kernels.triton.op_sass        # CPU: Triton (3.6) and its cuobjdump

Each op is compiled (sm_90a, 4 warps, one fp32 element a thread) inside the same small kernel --
load x and z, y = op(x) + z, store y -- and its SASS counted with the cuobjdump Triton ships; the
same kernel with y = x + z is subtracted, so what is left is the op's own instructions (a ``-1``
FADD where the op replaces the add).  protosim's register-math table
(``protosim/frontends/ttgir/registers.py`` PER_ELEMENT) takes its classes from this output:
FP32-pipe (FADD FMUL FFMA FSETP FSEL HFMA2), integer / ALU (IADD3 LOP3 SHF LEA ISETP I2FP MOV),
MUFU.  Needs no GPU.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import tempfile

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.language.extra.cuda import libdevice

OPS = ["x + z (the base)", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "x / z", "sin", "cos", "erf", "tanh",
       "maximum", "x * z"]


@triton.jit
def _op_kernel(x_ptr, z_ptr, y_ptr, OP: tl.constexpr):
    offs = tl.program_id(0) * 128 + tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    z = tl.load(z_ptr + offs)
    if OP == 0:
        y = x + z
    elif OP == 1:
        y = tl.exp(x) + z
    elif OP == 2:
        y = tl.exp2(x) + z
    elif OP == 3:
        y = tl.log(x) + z
    elif OP == 4:
        y = tl.log2(x) + z
    elif OP == 5:
        y = tl.sqrt(x) + z
    elif OP == 6:
        y = tl.rsqrt(x) + z
    elif OP == 7:
        y = x / z
    elif OP == 8:
        y = tl.sin(x) + z
    elif OP == 9:
        y = tl.cos(x) + z
    elif OP == 10:
        y = libdevice.erf(x) + z
    elif OP == 11:
        y = libdevice.tanh(x) + z
    elif OP == 12:
        y = tl.maximum(x, z)
    else:
        y = x * z
    tl.store(y_ptr + offs, y)


def counts(op: int) -> tuple[collections.Counter, collections.Counter]:
    """(SASS opcodes, PTX special-function instructions) of the kernel with op ``op``."""
    from kernels.toolchain.sass import find_cuobjdump

    src = ASTSource(fn=_op_kernel, signature={"x_ptr": "*fp32", "z_ptr": "*fp32", "y_ptr": "*fp32", "OP": "constexpr"},
                    constexprs={(3,): op})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    tool = find_cuobjdump()
    if tool is None:
        raise SystemExit("no cuobjdump found (Triton ships one under triton/backends/nvidia/bin)")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"])
        f.flush()
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+(?:\.[A-Z0-9_]+)*)", sass)
    sass_ops = collections.Counter(o if o.startswith("MUFU") else o.split(".")[0] for o in ops if o != "NOP")
    ptx = collections.Counter(re.findall(r"\b((?:ex2|lg2|rcp|rsqrt|sqrt|div|sin|cos|tanh)\.[a-z0-9.]+)", k.asm["ptx"]))
    return sass_ops, ptx


def main() -> int:
    print(f"triton {triton.__version__}, sm_90a, one fp32 element a thread; SASS per element, less the base kernel's")
    base, _ = counts(0)
    for i, name in enumerate(OPS[1:], start=1):
        got, ptx = counts(i)
        diff = {k: got[k] - base[k] for k in sorted(set(got) | set(base)) if got[k] != base[k]}
        print(f"{name:<10} {' '.join(f'{k} {v:+d}' for k, v in diff.items())}   (PTX: {', '.join(ptx) or '-'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
