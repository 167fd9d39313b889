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

``--set forced`` builds the kernel as built (PARTS 3) for :data:`FORCED_CONFIGS`, full-chip grids
that the runner's ``--forced`` runs at their own shared memory and padded to allow at most 1, 2, ...
CTAs an SM (:func:`forced_smem`): the copy rate by CTAs an SM on one grid.  :func:`predict_forced`
(``python -m kernels.microbench.v3_parts --predict-forced OUT_DIR``, CPU) is the model's replay of the
same launches, the copy taken off each cubin's SASS as the timing report does.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CONFIGS = ((1024, 1024, 4096, 64), (2048, 2048, 4096, 64), (1024, 2048, 4096, 128), (2048, 2048, 4096, 128))
"""(M, N, K, BLK_N): one CTA per SM (128 CTAs) and ~4 / ~2 per SM (512 / 256 CTAs), K = 4096."""

FORCED_CONFIGS = ((4096, 4096, 1024, 128), (4096, 4096, 1024, 64), (2048, 2048, 4096, 64), (2048, 2048, 4096, 128))
"""``--set forced`` (M, N, K, BLK_N): the fresh draws' worst v3 grid (4096^2 x 1024, BLK_N 128, 1,024 CTAs:
-29% in the model), the same at BLK_N 64 (2,048 CTAs), and v3_parts' two 2048^2 grids, where the
model is +2% at BLK_N 64 and -11% at 128 (docs/crosscheck.md)."""

CTAS_PER_SM = {64: 5, 128: 3}
"""What registers allow (96 and 168 per thread, this build's SASS; kernels/runner/v3_parts.py)."""


H200_SMEM = (233_472, 1_024, 232_448)
"""The H200's shared memory per SM, reserved per CTA and most a CTA may have (h200.toml's
``smem_per_sm_bytes``, ``smem_reserved_per_cta_bytes``, ``smem_per_cta_bytes``; a test holds them
equal): here so that the GPU side needs no protosim."""


def forced_smem(ctas_per_sm: int, smem: tuple[int, int, int] = H200_SMEM) -> int:
    """Dynamic shared memory a CTA asks for so that at most ``ctas_per_sm`` fit an SM: the SM's
    shared memory split that many ways, less what each CTA has reserved, no more than a CTA may
    have (the H200: 227, 113, 75 and 56 KiB for 1-4)."""
    per_sm, reserved, per_cta = smem
    return min(per_cta, per_sm // ctas_per_sm - reserved)


def forced_plan(bn: int, grid: int, sm_count: int = 132) -> list[int | None]:
    """The runs of one grid: ``None`` (its own shared memory: as many CTAs an SM as fit, or as the
    grid has), then every smaller count down to one."""
    natural = min(CTAS_PER_SM[bn], -(-grid // sm_count))
    return [None, *range(natural - 1, 0, -1)]


def predict_forced(folder: Path) -> list[dict]:
    """The model's time for every run of ``--forced`` whose cubin is in ``folder``: the builder's v3
    schedule with the cubin's copy stream (``kernels.toolchain.sass``), inputs in L2 at launch, a
    shared-memory buffer no op touches added to reach the forced size (the occupancy checked)."""
    import dataclasses

    from kernels.toolchain import sass
    from protosim.config import GemmConfig
    from protosim.engine.machine import Machine, smem_bytes
    from protosim.ir import BufferDecl
    from protosim.strategies import Case
    from protosim.verdict import judge

    rows = []
    for m, n, k, bn in FORCED_CONFIGS:
        cubin = folder / f"v3_parts_{m}x{n}x{k}_n{bn}_p3.sm_90a.cubin"
        if not cubin.is_file():
            continue
        stream = sass.analyse(cubin)
        case = Case("v3", GemmConfig(M=m, N=n, K=k, BLK_N=bn, arch="h200", l2_at_launch="inputs"), stream.cycles)
        base = case.build()
        grid = len(base.ctas)
        for per_sm in forced_plan(bn, grid):
            s = base
            if per_sm is not None:
                pad = forced_smem(per_sm) - smem_bytes(base)
                s = dataclasses.replace(base, buffers=base.buffers + (BufferDecl("forced_pad", "smem", bytes=pad),))
                if Machine(s).occupancy() != per_sm:
                    raise SystemExit(f"v3_parts: the padded schedule holds {Machine(s).occupancy()} CTAs an SM, not {per_sm}")
            verdict, _ = judge(s)
            rows.append({"config": {"M": m, "N": n, "K": k, "BLK_N": bn}, "grid": grid, "forced_ctas_per_sm": per_sm,
                         "smem": smem_bytes(s), "outcome": verdict.outcome.kind, "model_kernel_us": round(verdict.timing.kernel_us, 1),
                         "copy_cycles": stream.cycles})
            print(f"v3 {m}x{n}x{k} n{bn} grid {grid}: {per_sm or 'own'} CTAs an SM -> {verdict.timing.kernel_us:8.1f} us "
                  f"({verdict.outcome.kind})", flush=True)
    return rows


def v3_module(m: int, n: int, k: int, bn: int):
    """The v3 kernel TVM builds for this config (compiled for sm_90a)."""
    from kernels.spec import KernelSpec
    from kernels.tirx import hopper
    from kernels.toolchain.compiler import compile_primfunc
    from protosim.config import GemmConfig

    return compile_primfunc(hopper.build(KernelSpec("v3", GemmConfig(M=m, N=n, K=k, BLK_N=bn, arch="h200"), False)), "sm_90a")


def patch(source: str) -> str:
    """The v3 source with ``PARTS``; refuses a source whose shape it does not know."""
    copy = re.compile(r"(\n    for \(int i = 0; i < \d+; \+\+i\) \{.*?tvm_builtin_ptx_fence_proxy_proxy_async_shared__cta\(\);\n)", re.S)
    mma = re.compile(r"(\n    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned\(\);\n.*?tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0\(\);\n)", re.S)
    for pattern, bit in ((copy, 1), (mma, 2)):
        if len(pattern.findall(source)) != 1:
            raise ValueError(f"expected one block for parts bit {bit}")
        source = pattern.sub(lambda m, bit=bit: f"\n#if PARTS & {bit}{m.group(1)}#endif\n", source)
    return source


def build_forced(out: Path) -> list[Path]:
    """``--set forced``: the kernel as built of :data:`FORCED_CONFIGS`, compiled with TVM's own nvcc
    command and checked to be the SASS of the library TVM exports (the kernel that runs; the plain
    ``nvcc -O3`` of :func:`build` schedules the epilogue otherwise)."""
    from kernels.microbench.v5_parts import compile_variants, find_cuobjdump
    from kernels.toolchain.compiler import cuda_source

    tool = find_cuobjdump("v3_parts", "the forced set's kernels")
    out.mkdir(parents=True, exist_ok=True)
    cubins = []
    for m, n, k, bn in FORCED_CONFIGS:
        name = f"v3_parts_{m}x{n}x{k}_n{bn}"
        mod = v3_module(m, n, k, bn)
        cubins += compile_variants("v3_parts", mod, patch(cuda_source(mod)), out, name, "PARTS", {3: "p3"}, 3, tool)
    return cubins


def build(out: Path) -> list[Path]:
    from kernels.toolchain.compiler import cuda_source

    out.mkdir(parents=True, exist_ok=True)
    cubins = []
    for m, n, k, bn in CONFIGS:
        name = f"v3_parts_{m}x{n}x{k}_n{bn}"
        mod = v3_module(m, n, k, bn)
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
    import json

    from kernels.runner.launch_cost import take_flag, take_value
    from kernels.toolchain.compiler import out_dir_main

    argv = list(sys.argv[1:] if argv is None else argv)
    predict, argv = take_flag(argv, "--predict-forced")
    if predict:
        if len(argv) != 1 or not Path(argv[0]).is_dir():
            print("usage: python -m kernels.microbench.v3_parts --predict-forced OUT_DIR (a folder --set forced built)",
                  file=sys.stderr)
            return 2
        rows = predict_forced(Path(argv[0]))
        if not rows:
            print(f"v3_parts: no --set forced cubin in {argv[0]}", file=sys.stderr)
            return 2
        (Path(argv[0]) / "v3_forced_predicted.json").write_text(json.dumps(rows, indent=1))
        return 0
    name, argv = take_value(argv, "--set")
    if name not in (None, "forced"):
        print(f"v3_parts: no set {name!r}; the only set is 'forced'", file=sys.stderr)
        return 2
    make = build_forced if name == "forced" else build
    return out_dir_main("kernels.microbench.v3_parts", __doc__, make, argv)


if __name__ == "__main__":
    sys.exit(main())
