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

v5's configs also get ``_c2``: thread 0 stamps clock64 at five points of every k-iteration
(:data:`SEGMENTS`), so the runner's ``--segments`` can say which part of the iteration grows with
the CTAs sharing an SM.

Built on the CPU machine (apache-tvm, nvcc, a cuobjdump):

    python -m kernels.microbench.cta_drift OUT_DIR [--set drift|m_sweep|k_stride|persistent|sm_counts]

writes ``<step>_drift_<M>x<N>x<K>_n<BN>_s<STAGES>_c<0|1>.sm_90a.cubin`` and ``cta_drift.json``;
kernels/runner/cta_drift.py runs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernels.microbench.loop_clock import _BOUNDS, _FENCE, _body_end, mma_loop

CONFIGS = (("v4", 512, 512, 2048, 16, 2), ("v4", 2048, 2048, 1024, 16, 2), ("v4", 4096, 4096, 256, 32, 2),
           ("v5", 2048, 2048, 1024, 32, 2), ("v5", 2048, 2048, 4096, 64, 2), ("v5", 1024, 1024, 1024, 16, 2))
"""(step, M, N, K, BLK_N, PIPE_DEPTH): the fresh draws' configs that the L2 sharing rules moved most
(results/silicon/timing/2026-12-04_l2_merge_side_trial_vB.txt): v4 at 128 CTAs one an SM, where
the H200 shares; multi-wave v4 / v5 grids at several CTAs an SM, where it evidently does not."""

M_SWEEP = tuple(("v4", m, 4096, 1024, 32, 2) for m in (512, 1024, 2048, 4096)) + tuple(
    ("v5", m, 4096, 1024, 32, 2) for m in (512, 4096))
"""``--set m_sweep``: one kernel shape (N 4096, K 1024, BLK_N 32) at M 512-4096, so that a grid's
first 132 CTAs read 4, 8, 16 or 32 distinct A tiles at a time (CTA ``b`` takes M-tile ``b % (M /
128)``), each shared by 33, 16, 8 or 4 CTAs, and B tiles shared by 4, 8, 16 or 32: whether v4's
k-iteration at one CTA an SM grows with the distinct tiles a grid reads together (the warm blocked
record's steady iterations: ~1,186 / ~1,300 / ~1,485 cycles at 4 / 16 / 32 A tiles, the model flat
at 1,161-1,178)."""

K_STRIDE = (("v4", 4096, 4096, 960, 32, 2), ("v4", 4096, 4096, 1088, 32, 2), ("v4", 512, 4096, 960, 32, 2))
"""``--set k_stride``: v4 at M 4096 (and 512) with K 960 and 1,088, whose A and B rows lie 1,920 and
2,176 bytes apart instead of m_sweep's 2,048: whether M 4096's slower k-iteration (m_sweep: ~1,620
cycles against ~1,270-1,390 at M 512-2048) comes from the lines' addresses (every line a k-iteration
reads at one offset modulo a power of two) rather than from the count of distinct tiles."""

PERSISTENT = (("ws", 2048, 2048, 256, 32, 1), ("ws", 4096, 4096, 256, 64, 1), ("ws", 2048, 2048, 4096, 32, 2))
"""``--set persistent``: ws grids persistent on 132 SMs, the ones a merge-within-a-set rule moved most
after the fact (part 7: -3.8 -> +30.3%, +3.6 -> +16.4%, -22.1 -> -11.0%).  Their CTAs walk tiles
(``t = blockIdx.x + 132 j``, TVM's grouped order), so the stamps are indexed by the CTA's tile
number (:func:`add_tile_drift_stamps`): how far apart in time the readers of one A tile ask for it
when a persistent grid's CTAs have walked a few tiles."""

SM_COUNTS = tuple((step, m, n, 4096, 32, 2) for step in ("v5", "v4")
                  for m, n in ((128, 256), (256, 352), (384, 352), (768, 352), (1536, 352)))
"""``--set sm_counts``: v5 and v4 grids of 8, 22, 33, 66 and 132 CTAs (128 x 256, then M 256-1536 x N 352, BLK_N 32, K 4096:
64 k-iterations), so that the SM clock over their k-loops (item 14 of the cta_drift md: 1.68-1.80 GHz on
grids filling the chip) can be read by how many SMs work."""

SETS = {"drift": CONFIGS, "m_sweep": M_SWEEP, "k_stride": K_STRIDE, "persistent": PERSISTENT, "sm_counts": SM_COUNTS}

_TILE_WALK = ("tile_no_ptr[0]", "m_idx_ptr[0]", "n_idx_ptr[0]")
"""What TVM's persistent kernels keep of the tile in hand: its number in the CTA's walk and its
M and N tile indices."""


def add_tile_drift_stamps(source: str, k_iters: int, ctas: int, tiles: int) -> str:
    """``source`` with ``PROTOSIM_DRIFT`` (defined 0 or 1 by the build): when 1, thread 0 stamps
    ``%globaltimer`` and ``clock64()`` at the top of every MMA k-iteration of each of its CTA's first
    ``tiles`` tiles, at ``(blockIdx.x * tiles + tile_no) * k_iters + k``, and the tile's M and N
    indices at ``2 * (blockIdx.x * tiles + tile_no)``.  Refuses a kernel that does not walk tiles."""
    kernel, _ = mma_loop(source)
    missing = [v for v in _TILE_WALK if v not in source[kernel.end():]]
    if missing:
        raise ValueError(f"no {', '.join(missing)} in the kernel: not a persistent tile walk")
    n = tiles * ctas
    slot = f"(((int)blockIdx.x) * {tiles} + tile_no_ptr[0])"
    return _loop_top_stamps(
        source,
        f"__device__ long long protosim_drift_ns[{n * k_iters}];\n__device__ long long protosim_drift_clock[{n * k_iters}];\n"
        f"__device__ long long protosim_drift_tile[{2 * n}];\n__device__ long long protosim_drift_sm[{ctas}];\n",
        f" && tile_no_ptr[0] < {tiles}", f"{slot} * {k_iters} + {{k}}",
        "{i}  if ({k} == 0) {{\n"
        f"{{i}}    protosim_drift_tile[2 * {slot}] = m_idx_ptr[0]; protosim_drift_tile[2 * {slot} + 1] = n_idx_ptr[0];\n"
        '{i}    asm volatile("mov.u32 %0, %%smid;" : "=r"(protosim_sm)); protosim_drift_sm[(int)blockIdx.x] = protosim_sm;\n'
        "{i}  }}\n")


def _loop_top_stamps(source: str, arrays: str, guard: str, slot: str, at_first_k: str) -> str:
    """``source`` with, under ``PROTOSIM_DRIFT``, the ``__device__`` ``arrays`` declared before the
    kernel and thread 0 (when ``guard`` also holds) writing ``clock64()`` and ``%globaltimer`` at
    ``slot * k_iters + k`` at the top of every iteration of the MMA k-loop (``{k}`` in ``slot`` and
    ``at_first_k`` is the loop's variable; ``at_first_k``: lines run at k == 0, ``{i}`` their indent)."""
    kernel, loop = mma_loop(source)
    var = loop.group(2)
    indent = loop.group(1) + "  "
    at = slot.format(k=var)
    return (source[:kernel.start()] + f"#if PROTOSIM_DRIFT\n{arrays}#endif\n"
            + source[kernel.start():loop.end()]
            + f"#if PROTOSIM_DRIFT\n{indent}if (((int)threadIdx.x) == 0{guard}) {{\n"
              f"{indent}  unsigned long long protosim_ns; unsigned protosim_sm;\n"
              f'{indent}  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(protosim_ns));\n'
              f"{indent}  protosim_drift_clock[{at}] = clock64();\n"
              f"{indent}  protosim_drift_ns[{at}] = (long long)protosim_ns;\n"
              + at_first_k.format(k=var, i=indent)
            + f"{indent}}}\n#endif\n"
            + source[loop.end():])


def add_drift_stamps(source: str, k_iters: int, ctas: int) -> str:
    """``source`` with ``PROTOSIM_DRIFT`` (defined 0 or 1 by the build): when 1, thread 0 stamps the
    top of every iteration of the MMA k-loop (the one loop holding the wgmma fence)."""
    n = k_iters * ctas
    return _loop_top_stamps(
        source,
        f"__device__ long long protosim_drift_ns[{n}];\n__device__ long long protosim_drift_clock[{n}];\n"
        f"__device__ long long protosim_drift_sm[{ctas}];\n",
        "", f"((int)blockIdx.x) * {k_iters} + {{k}}",
        '{i}  if ({k} == 0) {{ asm volatile("mov.u32 %0, %%smid;" : "=r"(protosim_sm)); '
        "protosim_drift_sm[(int)blockIdx.x] = protosim_sm; }}\n")


SEGMENTS = ("top", "stage_waited", "block_done", "round_trip_done", "issued")
"""``_c2`` (v5): thread 0's clock64 at these points of each k-iteration -- the loop's top, after
its stage's wait (before the wgmma fence), after ``wgmma.wait_group 0``, before the next TMA issue
(after the ``mma_bar`` arrive and wait), after that issue's ``arrive.expect_tx``."""
_WAIT0 = "tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0();"
_TMA = "tvm_builtin_ptx_cp_async_bulk_tensor_g2s_"
_EXPECT = "tvm_builtin_ptx_mbarrier_arrive_expect_tx_"


def add_segment_stamps(source: str, k_iters: int, ctas: int) -> str:
    """``source`` (a v5 kernel) with ``PROTOSIM_DRIFT == 2``: thread 0 stamps clock64 at
    :data:`SEGMENTS` of every k-iteration into ``protosim_segments``."""
    kernel, loop = mma_loop(source)
    var, body0, body1 = loop.group(2), loop.end(), _body_end(source, loop.end())
    body = source[body0:body1]
    for needle in (_FENCE, _WAIT0, _TMA, _EXPECT):
        if needle not in body:
            raise ValueError(f"the k-loop has no {needle!r}: not a v5 loop")

    def stamp(j: int, indent: str) -> str:
        return (f"#if PROTOSIM_DRIFT == 2\n{indent}if (((int)threadIdx.x) == 0) protosim_segments[(((int)blockIdx.x) * "
                f"{k_iters} + {var}) * {len(SEGMENTS)} + {j}] = clock64();\n#endif\n")

    def line_start(i: int) -> int:
        return body.rindex("\n", 0, i) + 1

    def line_end(i: int) -> int:
        return body.index("\n", i) + 1

    def indent_at(i: int) -> str:
        start = line_start(i)
        return body[start:i]

    fence, wait0 = body.index(_FENCE), body.index(_WAIT0)
    tma = body.index(_TMA, wait0)
    expect = body.index(_EXPECT, tma)
    cuts = [(0, 0, "    " + loop.group(1)), (line_start(fence), 1, indent_at(fence)), (line_end(wait0), 2, indent_at(wait0)),
            (line_start(tma), 3, indent_at(tma)), (line_end(expect), 4, indent_at(expect))]
    out, last = [], 0
    for at, j, ind in cuts:
        out += [body[last:at], stamp(j, ind)]
        last = at
    out.append(body[last:])
    return (source[:kernel.start()]
            + f"#if PROTOSIM_DRIFT == 2\n__device__ long long protosim_segments[{k_iters * ctas * len(SEGMENTS)}];\n#endif\n"
            + source[kernel.start():body0] + "".join(out) + source[body1:])


def name_of(step: str, m: int, n: int, k: int, bn: int, stages: int) -> str:
    return f"{step}_drift_{m}x{n}x{k}_n{bn}_s{stages}"


def build(out: Path, configs: tuple = CONFIGS) -> list[Path]:
    from kernels.toolchain.compiler import compile_primfunc, cuda_source

    from kernels.microbench.v5_parts import compile_variants, find_cuobjdump
    from kernels.spec import KernelSpec, grid_ctas, smem_bytes
    from kernels.tirx import hopper
    from protosim.config import GemmConfig

    tool = find_cuobjdump("cta_drift", "_c0")
    out.mkdir(parents=True, exist_ok=True)
    cubins, manifest = [], {}
    for step, m, n, k, bn, stages in configs:
        name = name_of(step, m, n, k, bn, stages)
        cfg = GemmConfig(M=m, N=n, K=k, BLK_N=bn, PIPE_DEPTH=stages, arch="h200")
        mod = compile_primfunc(hopper.build(KernelSpec(step, cfg, False)), "sm_90a")
        grid = grid_ctas(step, cfg)
        tiles = -(-(cfg.m_tiles * cfg.n_tiles) // grid)  # the most tiles a CTA walks
        if step in ("v6", "ws"):
            text = add_tile_drift_stamps(cuda_source(mod), k // 64, grid, tiles)
        else:
            text = add_drift_stamps(cuda_source(mod), k // 64, grid)
        variants = {0: "c0", 1: "c1"}
        if step == "v5":
            text = add_segment_stamps(text, k // 64, grid)
            variants[2] = "c2"
        manifest[name] = {"step": step, "M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": stages,
                          "threads": int(_BOUNDS.search(text).group(1)), "grid": grid, "k_iters": k // 64,
                          "m_tiles": m // 128, "smem": smem_bytes(step, cfg),
                          **({"persistent": True, "tiles_per_cta": tiles} if step in ("v6", "ws") else {})}
        cubins += compile_variants("cta_drift", mod, text, out, name, "PROTOSIM_DRIFT", variants, 0, tool)
    (out / "cta_drift.json").write_text(json.dumps(manifest, indent=1))
    return cubins


def main(argv: list[str] | None = None) -> int:
    from kernels.runner.launch_cost import take_value
    from kernels.toolchain.compiler import out_dir_main

    name, argv = take_value(argv, "--set")
    if name is not None and name not in SETS:
        print(f"cta_drift: no set {name!r}; the sets are {', '.join(SETS)}", file=sys.stderr)
        return 2
    configs = SETS[name or "drift"]
    return out_dir_main("kernels.microbench.cta_drift", __doc__, lambda out: build(out, configs), argv)


if __name__ == "__main__":
    sys.exit(main())
