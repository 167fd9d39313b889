"""The seed's Hopper v3 kernel with its parts switched off at compile time (issue 16: what slows
co-resident v3 CTAs).

The v3 kernel (kernels/tirx/hopper.py, thread copy -> barrier -> 8 wgmma -> wait, per
k-iteration) runs 1.8-2.1x slower per CTA when two to four CTAs share an SM; the SM's load
issue rate explains ~1.3x of it (results/silicon/microbench/2026-12-01_h200_load_window.md).
To see which part the rest comes from, this takes the CUDA source TVM generates for the kernel
and wraps two blocks of the k-loop in a preprocessor switch, nothing else:

* ``PARTS``, a preprocessor constant (one cubin each): bit 0 keeps the thread copy (and its
  proxy fence), bit 1 the wgmma block (fence, 8 wgmma, commit, wait); 3 is the kernel as
  built.  Everything else -- the barrier, the arrive on ``mma_bar`` and the wait on it, the
  epilogue -- stays.  (A run-time switch changes ptxas's schedule of the copy: 11.1 rounds
  of loads instead of the kernel's 7.2, read with ``python -m kernels.toolchain.sass``.)

Each variant is timed whole, kernel-only: per-CTA ``clock64`` stamps were tried and dropped, as
they too change the copy's schedule (14 loads in flight at most instead of 17).  So does
``PARTS`` 1: without the MMA's 64 accumulators ptxas keeps 9 loads in flight in 32 registers
(19 rounds): the copy-only variant is not the kernel's copy, and the runner reports each
variant's schedule beside its time.

Built on the CPU machine (needs apache-tvm and nvcc):

    python -m kernels.microbench.v3_parts OUT_DIR

writes ``v3_parts_<M>x<N>x<K>_n<BN>.cu`` and ``..._p<PARTS>.sm_90a.cubin`` (PARTS 1, 2, 3) for
:data:`CONFIGS`;
kernels/runner/v3_parts.py runs them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CONFIGS = ((1024, 1024, 4096, 64), (2048, 2048, 4096, 64), (1024, 2048, 4096, 128), (2048, 2048, 4096, 128))
"""(M, N, K, BLK_N): one CTA per SM (128 CTAs) and ~4 / ~2 per SM (512 / 256 CTAs), K = 4096."""

def patch(source: str) -> str:
    """The v3 source with ``PARTS``; refuses a source whose shape it does not know."""
    copy = re.compile(r"(\n    for \(int i = 0; i < \d+; \+\+i\) \{.*?tvm_builtin_ptx_fence_proxy_proxy_async_shared__cta\(\);\n)", re.S)
    mma = re.compile(r"(\n    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned\(\);\n.*?tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0\(\);\n)", re.S)
    for pattern, bit in ((copy, 1), (mma, 2)):
        if len(pattern.findall(source)) != 1:
            raise ValueError(f"expected one block for parts bit {bit}")
        source = pattern.sub(lambda m, bit=bit: f"\n#if PARTS & {bit}{m.group(1)}#endif\n", source)
    return source


def build(out: Path) -> list[Path]:
    from kernels.toolchain.compiler import compile_primfunc, cuda_source

    from kernels.spec import KernelSpec
    from kernels.tirx import hopper
    from protosim.config import GemmConfig

    out.mkdir(parents=True, exist_ok=True)
    cubins = []
    for m, n, k, bn in CONFIGS:
        name = f"v3_parts_{m}x{n}x{k}_n{bn}"
        mod = compile_primfunc(hopper.build(KernelSpec("v3", GemmConfig(M=m, N=n, K=k, BLK_N=bn, arch="h200"), False)), "sm_90a")
        cu = out / f"{name}.cu"
        cu.write_text(patch(cuda_source(mod)))
        for parts in (1, 2, 3):
            cubin = out / f"{name}_p{parts}.sm_90a.cubin"
            subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-O3", f"-DPARTS={parts}", "-diag-suppress", "177,550",
                            "-o", str(cubin), str(cu)], check=True)
            cubins.append(cubin)
            print(cubin)
    return cubins


def main(argv: list[str] | None = None) -> int:
    from kernels.toolchain.compiler import out_dir_main

    return out_dir_main("kernels.microbench.v3_parts", __doc__, build, argv)


if __name__ == "__main__":
    sys.exit(main())
