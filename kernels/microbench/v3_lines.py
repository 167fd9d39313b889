"""The seed's Hopper v3 kernel at M = 128, BLK_N 16, with its CTAs placed apart or started apart
(issue 16: why two or more of its CTAs run 1.7x slower than one).

On the H200 the v3 kernel at M = 128 and BLK_N 16 runs ~3,650 cycles a k-iteration with one
CTA and ~6,300-6,500 with 2 to 16 (results/silicon/timing/2026-12-03_v3_m128.md); the M >= 256
builds, whose consecutive CTAs read different A rows, and BLK_N 32 do not slow.  At M = 128
every CTA reads the same A lines in the same order, and consecutive CTAs may share a TPC.
This takes the CUDA source TVM generates for the kernel (128 x 128 x 2048, BLK_N 16: up to 8
n-tiles) and changes only its prologue and epilogue, by preprocessor constants:

* ``SPREAD``: the grid is ``SPREAD`` times the CTAs that work; block ``b`` works on n-tile
  ``b / SPREAD`` when ``b % SPREAD == 0`` and exits at once otherwise -- the working CTAs'
  neighbours in block order are idle, so they sit on other SMs (whatever the placement rule);
* ``STAGGER``: odd working CTAs spin that many cycles on clock64 before anything else -- the
  same lines read the same way, but not at the same time;
* every working CTA's thread 0 writes its SM id (``%smid``) to ``diag[8 + n-tile]`` before the
  k-loop (written after it, the store moved ptxas's schedule of the copy), so the record says
  where the CTAs ran.

The k-loop's SASS is checked to be the original's (same loads, stores and scoreboards: the copy
issue model of ``kernels.toolchain.sass`` gives the same rounds) by :func:`build`, which refuses
a variant whose copy differs.  Built on the CPU machine (needs apache-tvm and nvcc):

    python -m kernels.microbench.v3_lines OUT_DIR

writes ``v3_lines.cu`` and ``v3_lines_s<SPREAD>_t<STAGGER>.sm_90a.cubin`` for :data:`VARIANTS`;
kernels/runner/v3_lines.py runs them.

**Not the kernel the runner runs.**  These cubins come from a plain ``nvcc -O3``; TVM builds the
same source with its own ptxas options (``tvm.support.nvcc``), and for this shape ptxas then keeps
7 loads out instead of 11 -- which is what made the kernel slow
(results/silicon/microbench/2026-12-03_h200_v3_lines.md, 2026-12-03_tvm_thread_copy_sass.md).
Kept as run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SHAPE = (128, 128, 2048, 16)
"""(M, N, K, BLK_N): 8 n-tiles of one A row, 32 k-iterations."""
VARIANTS = ((1, 0), (1, 1800), (2, 0), (4, 0), (66, 0))
"""(SPREAD, STAGGER): the kernel (with the SM-id store), odd CTAs ~half a k-iteration late,
and the working CTAs 2, 4 and 66 blocks apart."""


def patch(source: str) -> str:
    """The v3 source with ``SPREAD``, ``STAGGER`` and the SM-id store; refuses a source whose
    shape it does not know."""
    start = "  int bx = ((int)blockIdx.x);\n"
    tile = "  t_ptr[0] = ((int)blockIdx.x);\n"
    if source.count(start) != 1 or source.count(tile) != 1:
        raise ValueError("not the v3 kernel source this patch knows (its blockIdx read, its tile index)")
    prologue = (start +
                "#if SPREAD > 1\n  if (((int)blockIdx.x) % SPREAD != 0) return;\n#endif\n"
                "#if STAGGER > 0\n  if ((((int)blockIdx.x) / SPREAD) & 1) {\n"
                "    long long stagger_t0 = clock64();\n    while (clock64() - stagger_t0 < STAGGER) { }\n  }\n#endif\n")
    smid = ("  if (((int)threadIdx.x) == 0 && t_ptr[0] < 8) {\n    unsigned smid_v;\n"
            "    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid_v));\n    diag_ptr[8 + t_ptr[0]] = (int)smid_v;\n  }\n")
    return source.replace(start, prologue).replace(tile, "  t_ptr[0] = ((int)blockIdx.x) / SPREAD;\n" + smid)
    return source


def build(out: Path) -> list[Path]:
    from kernels.spec import KernelSpec
    from kernels.tirx import hopper
    from kernels.toolchain.compiler import compile_primfunc, cuda_source
    from kernels.toolchain.sass import analyse
    from protosim.config import GemmConfig

    out.mkdir(parents=True, exist_ok=True)
    m, n, k, bn = SHAPE
    source = cuda_source(compile_primfunc(hopper.build(KernelSpec("v3", GemmConfig(M=m, N=n, K=k, BLK_N=bn, arch="h200"), False)), "sm_90a"))
    (out / "v3_lines_original.cu").write_text(source)
    cu = out / "v3_lines.cu"
    cu.write_text(patch(source))
    flags = ["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-diag-suppress", "177,550"]
    reference = out / "v3_lines_original.sm_90a.cubin"
    subprocess.run([*flags, "-o", str(reference), str(out / "v3_lines_original.cu")], check=True)
    want = analyse(reference)
    cubins = []
    for spread, stagger in VARIANTS:
        cubin = out / f"v3_lines_s{spread}_t{stagger}.sm_90a.cubin"
        subprocess.run([*flags, f"-DSPREAD={spread}", f"-DSTAGGER={stagger}", "-o", str(cubin), str(cu)], check=True)
        got = analyse(cubin)
        if (got.loads, got.max_in_flight, round(got.rounds, 3)) != (want.loads, want.max_in_flight, round(want.rounds, 3)):
            raise SystemExit(f"{cubin.name}: the copy's schedule moved ({got} against the kernel's {want})")
        cubins.append(cubin)
        print(cubin, f"copy as the kernel's: {got.loads} loads, {got.max_in_flight} out at most, {got.rounds:.2f} rounds")
    return cubins


def main(argv: list[str] | None = None) -> int:
    from kernels.toolchain.compiler import out_dir_main

    return out_dir_main("kernels.microbench.v3_lines", __doc__, build, argv)


if __name__ == "__main__":
    sys.exit(main())
