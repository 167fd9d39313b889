"""How far apart in time the CTAs that read one tile ask for it (issue 16: whether the L2 can share
their reads).

l2_stagger (results/silicon/microbench/2026-12-04_h200_l2_stagger.md) showed the L2 fetching lines
once for SMs that ask for them within a few hundred cycles of each other, and not at all 1,000
cycles apart. The model's CTAs run in exact lock step, so a sharing rule makes every grid row share
all of its A tile -- right at one CTA an SM (v4 at 128 CTAs), far too fast for multi-wave grids at
several CTAs an SM. What decides it is how far apart the CTAs reading one tile really are.

Per config two cubins from TVM's generated source, compiled with TVM's own nvcc command: ``_c0``
the kernel as built (checked to be the SASS of the library TVM exports) and ``_c1`` where thread 0
writes, at the top of every iteration of the MMA k-loop (found as loop_clock finds it: the loop
holding the wgmma fence), ``%globaltimer`` and ``clock64()`` into ``protosim_drift_ns`` /
``protosim_drift_clock`` at ``blockIdx.x * K_ITERS + k``, and its ``%smid`` into ``protosim_drift_sm``.
The runner pairs each CTA's iteration with the nearest other CTA's same iteration over the same A
tile (and B tile), by the kernels' own tile walk (``m_idx = blockIdx.x % (M / 128)``).

Built on the CPU machine (apache-tvm, nvcc, a cuobjdump):

    python -m kernels.microbench.cta_drift OUT_DIR

writes ``<step>_drift_<M>x<N>x<K>_n<BN>_s<STAGES>_c<0|1>.sm_90a.cubin`` and ``cta_drift.json``;
kernels/runner/cta_drift.py runs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernels.microbench.loop_clock import _BOUNDS, _FENCE, _FOR, _KERNEL, _body_end

CONFIGS = (("v4", 512, 512, 2048, 16, 2), ("v4", 2048, 2048, 1024, 16, 2), ("v4", 4096, 4096, 256, 32, 2),
           ("v5", 2048, 2048, 1024, 32, 2), ("v5", 2048, 2048, 4096, 64, 2), ("v5", 1024, 1024, 1024, 16, 2))
"""(step, M, N, K, BLK_N, PIPE_DEPTH): the fresh draws' configs that the L2 sharing rules moved most
(results/silicon/timing/2026-12-04_l2_merge_side_trial_vB.txt): v4 at 128 CTAs one an SM, where
the H200 shares; multi-wave v4 / v5 grids at several CTAs an SM, where it evidently does not."""


def add_drift_stamps(source: str, k_iters: int, ctas: int) -> str:
    """``source`` with ``PROTOSIM_DRIFT`` (defined 0 or 1 by the build): when 1, thread 0 stamps the
    top of every iteration of the MMA k-loop (the one loop holding the wgmma fence)."""
    loops = [m for m in _FOR.finditer(source) if _FENCE in source[m.end():_body_end(source, m.end())]]
    kernels = list(_KERNEL.finditer(source))
    if len(kernels) != 1 or len(loops) != 1:
        raise ValueError(f"expected one kernel and one k-loop holding {_FENCE!r}, found {len(kernels)} and {len(loops)}")
    loop = loops[0]
    var = loop.group(2)
    indent = loop.group(1) + "  "
    n = k_iters * ctas
    return (source[:kernels[0].start()]
            + f"#if PROTOSIM_DRIFT\n__device__ long long protosim_drift_ns[{n}];\n"
              f"__device__ long long protosim_drift_clock[{n}];\n__device__ long long protosim_drift_sm[{ctas}];\n#endif\n"
            + source[kernels[0].start():loop.end()]
            + f"#if PROTOSIM_DRIFT\n{indent}if (((int)threadIdx.x) == 0) {{\n"
              f"{indent}  unsigned long long protosim_ns; unsigned protosim_sm;\n"
              f'{indent}  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(protosim_ns));\n'
              f"{indent}  protosim_drift_clock[((int)blockIdx.x) * {k_iters} + {var}] = clock64();\n"
              f"{indent}  protosim_drift_ns[((int)blockIdx.x) * {k_iters} + {var}] = (long long)protosim_ns;\n"
              f'{indent}  if ({var} == 0) {{ asm volatile("mov.u32 %0, %%smid;" : "=r"(protosim_sm)); '
              f"protosim_drift_sm[(int)blockIdx.x] = protosim_sm; }}\n"
              f"{indent}}}\n#endif\n"
            + source[loop.end():])


def name_of(step: str, m: int, n: int, k: int, bn: int, stages: int) -> str:
    return f"{step}_drift_{m}x{n}x{k}_n{bn}_s{stages}"


def build(out: Path) -> list[Path]:
    from kernels.toolchain.compiler import compile_primfunc, cuda_source

    from kernels.microbench.v5_parts import compile_variants, find_cuobjdump
    from kernels.spec import KernelSpec, grid_ctas, smem_bytes
    from kernels.tirx import hopper
    from protosim.config import GemmConfig

    tool = find_cuobjdump("cta_drift", "_c0")
    out.mkdir(parents=True, exist_ok=True)
    cubins, manifest = [], {}
    for step, m, n, k, bn, stages in CONFIGS:
        name = name_of(step, m, n, k, bn, stages)
        cfg = GemmConfig(M=m, N=n, K=k, BLK_N=bn, PIPE_DEPTH=stages, arch="h200")
        mod = compile_primfunc(hopper.build(KernelSpec(step, cfg, False)), "sm_90a")
        grid = grid_ctas(step, cfg)
        text = add_drift_stamps(cuda_source(mod), k // 64, grid)
        manifest[name] = {"step": step, "M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": stages,
                          "threads": int(_BOUNDS.search(text).group(1)), "grid": grid, "k_iters": k // 64,
                          "m_tiles": m // 128, "smem": smem_bytes(step, cfg)}
        cubins += compile_variants("cta_drift", mod, text, out, name, "PROTOSIM_DRIFT", {0: "c0", 1: "c1"}, 0, tool)
    (out / "cta_drift.json").write_text(json.dumps(manifest, indent=1))
    return cubins


def main(argv: list[str] | None = None) -> int:
    from kernels.toolchain.compiler import out_dir_main

    return out_dir_main("kernels.microbench.cta_drift", __doc__, build, argv)


if __name__ == "__main__":
    sys.exit(main())
