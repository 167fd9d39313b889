"""Any Hopper step's k-loop in clock64 cycles at one CTA (issue 16: the one-CTA loop's costs for
v4, v5, v6 and ws, BLK_N 16-128, 2 and 4 stages).

v5_parts (kernels/microbench/v5_parts.py) measured v4's and v5's k-iteration in clock64 cycles with
a loop clock -- thread 0 reads ``clock64()`` once before the MMA k-loop and once after it, nothing
inside the loop changed -- and found the chip at 1.80 GHz while its tensor core works, so that a
kernel time converted at 1.98 GHz is no measure of the model's cycles
(results/silicon/microbench/2026-12-03_h200_sm_clock_wgmma.md). Its other parts patch v5's own
statements; this module does only the loop clock, and finds the loop by what it does, so it
takes every step's source: the MMA k-loop is the ``for (int k...)`` loop whose body holds the
``wgmma.fence`` (ws's consumer loop ``k_1``; v6's loop inside its tile walk, where the last
tile's loop is the one written out).

Per config two cubins from TVM's generated source, compiled with TVM's own nvcc command:
``_c0`` the kernel as built (the build checks that its SASS is the SASS of the library TVM
exports: the kernel that runs) and ``_c1`` with the loop clock (thread 0, which every step has in
its MMA warpgroup, writes the reads into ``protosim_loop_clock``; :data:`SLOTS`) -- the loop, then
the epilogue: its TMA store drained and the warpgroup synced after it. The slope between K 1024
and 4096 is the k-iteration; the model's slope for the same configs is written beside them
(``model_cycles``, from the replay on this machine) so the runner can print both.

Built on the CPU machine (apache-tvm, nvcc, a cuobjdump):

    python -m kernels.microbench.loop_clock OUT_DIR

writes ``<step>_loop_128x<N>x<K>_n<BN>_s<STAGES>_c<0|1>.sm_90a.cubin`` and ``loop_clock.json``
(each kernel's config, threads, grid, dynamic shared memory and the model's cycles);
kernels/runner/loop_clock.py runs them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CONFIGS = tuple((step, 128, bn, k, bn, stages)
                for step, bns, stage_counts in (("v4", (16, 32, 64, 128), (1,)), ("v5", (16, 32, 64, 128), (2, 4)),
                                                ("v6", (16, 32, 64, 128), (2, 4)), ("ws", (16, 32, 64, 128), (2, 4)))
                for bn in bns for stages in stage_counts for k in (1024, 4096))
"""(step, M, N, K, BLK_N, PIPE_DEPTH): one CTA (one output tile), K 1024 and 4096 for the slope.
v4 has one stage whatever PIPE_DEPTH says; it is built with PIPE_DEPTH 2 as the seed's config is."""

ONE_STAGE = tuple((step, 128, bn, k, bn, 1) for step in ("v5", "ws") for bn in (32, 64, 128) for k in (1024, 4096))
"""``--one-stage``: v5 and ws with a one-stage ring, where nothing hides a stage's load behind the
block (the fresh draw of seed 1215 had one-stage ws on 8 SMs 20-30% slower than the model)."""

PERSISTENT_FEW = tuple(("ws", 2048, 2048, k, bn, 1, 8) for bn in (32, 64) for k in (1024, 4096))
"""``--persistent-few``: seed 1215's two worst configs as built (ws 2048^2, one stage, BLK_N 32 / 64,
persistent on 8 SMs) at K 1024 and 4096: the loop clock reads the last tile's k-loop of whichever
CTA writes last, the kernel times the whole walk (their entries carry ``sm_count``)."""

_FOR = re.compile(r"^([ \t]*)for \(int (k(?:_\d+)?) = 0; \2 < \d+; \+\+\2\) \{\n", re.M)
_KERNEL = re.compile(r'^extern "C" __global__ [^;{]*\{\n', re.M)
_FENCE = "tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();"
_BOUNDS = re.compile(r"__launch_bounds__\((\d+)\)")
_STORE_WAIT = "tvm_builtin_ptx_cp_async_bulk_wait_group_async_bulk_wait_group_0();"
_SYNC = "tvm_builtin_cuda_warpgroup_sync("
_STORE = "tvm_builtin_ptx_cp_async_bulk_tensor_s2g_"
SLOTS = ("loop_start", "loop_end", "store_waited", "store_synced", "store_issue")
"""What ``protosim_loop_clock[i]`` holds: thread 0's clock64 before the MMA k-loop, after it, after
the epilogue's ``cp.async.bulk.wait_group 0`` (the TMA store drained), after the warpgroup sync
that follows it (the tile's epilogue done: the last tile's, in a persistent kernel), and right
before the TMA store's issue (the accumulator in shared memory, fenced and synced)."""


def _body_end(source: str, start: int) -> int:
    """Where the block whose opening brace ends right before ``start`` closes."""
    depth = 1
    for i in range(start, len(source)):
        depth += (source[i] == "{") - (source[i] == "}")
        if depth == 0:
            return i
    raise ValueError("a loop's body does not close")


def mma_loop(source: str) -> tuple[re.Match, re.Match]:
    """(the kernel's definition, its MMA k-loop) in TVM's generated ``source``: the one
    ``for (int k...)`` loop whose body holds the wgmma fence. Refuses a source with other than one
    kernel definition or one such loop."""
    kernels = list(_KERNEL.finditer(source))
    if len(kernels) != 1:
        raise ValueError(f"expected one kernel definition in the source, found {len(kernels)}")
    # The fence is in the MMA loop and in no loop around it (v6's tile walk is a while loop).
    loops = [m for m in _FOR.finditer(source) if _FENCE in source[m.end():_body_end(source, m.end())]]
    if len(loops) != 1:
        raise ValueError(f"expected one k-loop holding {_FENCE!r}, found {len(loops)}")
    return kernels[0], loops[0]


def add_loop_clock(source: str) -> str:
    """``source`` with ``PROTOSIM_LOOP_CLOCK`` (defined 0 or 1 by the build): when 1, thread 0
    reads ``clock64()`` right before the MMA k-loop, right after it, after the epilogue's TMA store
    wait and after the warpgroup sync that follows (:data:`SLOTS`), into ``protosim_loop_clock``.
    Refuses a source without exactly one k-loop holding the wgmma fence, or whose epilogue after it
    has not one store wait followed by a sync."""
    kernel, loop = mma_loop(source)
    indent = loop.group(1)
    close = _body_end(source, loop.end())
    after = source.index("\n", close) + 1
    rest = source[after:]
    if rest.count(_STORE_WAIT) != 1:
        raise ValueError(f"expected the epilogue's {_STORE_WAIT!r} once after the k-loop, found {rest.count(_STORE_WAIT)}")
    if rest.count(_STORE) != 1 or rest.index(_STORE) > rest.index(_STORE_WAIT):
        raise ValueError(f"expected the epilogue's TMA store ({_STORE}...) once, before its wait")
    issue = rest.rindex("\n", 0, rest.index(_STORE)) + 1
    waited = rest.index("\n", rest.index(_STORE_WAIT)) + 1
    if _SYNC not in rest[waited:]:
        raise ValueError(f"expected a {_SYNC}...) after the epilogue's store wait")
    sync = rest.index(_SYNC, waited)
    synced = rest.index("\n", sync) + 1
    sync_indent = rest[rest.rindex("\n", 0, sync) + 1:sync]
    wait_indent = rest[rest.rindex("\n", 0, rest.index(_STORE_WAIT)) + 1:rest.index(_STORE_WAIT)]
    return (source[:kernel.start()]
            + f"#if PROTOSIM_LOOP_CLOCK\n__device__ long long protosim_loop_clock[{len(SLOTS)}];\n#endif\n"
            + source[kernel.start():loop.start()]
            + f"#if PROTOSIM_LOOP_CLOCK\n{indent}long long protosim_loop_start = clock64();\n#endif\n"
            + source[loop.start():after]
            + f"#if PROTOSIM_LOOP_CLOCK\n{indent}if (((int)threadIdx.x) == 0) {{ protosim_loop_clock[0] = protosim_loop_start; "
              "protosim_loop_clock[1] = clock64(); }\n#endif\n"
            + rest[:issue]  # inside thread 0's branch: its own store's issue and wait
            + f"#if PROTOSIM_LOOP_CLOCK\n{rest[issue:rest.index(_STORE)]}protosim_loop_clock[4] = clock64();\n#endif\n"
            + rest[issue:waited]
            + f"#if PROTOSIM_LOOP_CLOCK\n{wait_indent}protosim_loop_clock[2] = clock64();\n#endif\n"
            + rest[waited:synced]
            + f"#if PROTOSIM_LOOP_CLOCK\n{sync_indent}if (((int)threadIdx.x) == 0) {{ protosim_loop_clock[3] = clock64(); }}\n#endif\n"
            + rest[synced:])


def name_of(step: str, m: int, n: int, k: int, bn: int, stages: int, sm_count: int | None = None) -> str:
    return f"{step}_loop_{m}x{n}x{k}_n{bn}_s{stages}" + (f"_sm{sm_count}" if sm_count else "")


def model_cycles(step: str, cfg) -> float:
    """The replay's cycles for ``cfg``, its inputs in L2 at launch as the runner has them."""
    import dataclasses

    from protosim.builders import BUILDERS
    from protosim.verdict import judge

    verdict, _ = judge(BUILDERS[f"hgemm_{step}"](dataclasses.replace(cfg, l2_at_launch="inputs")))
    return verdict.timing.cycles


def build(out: Path, configs: tuple = CONFIGS) -> list[Path]:
    from kernels.toolchain.compiler import compile_primfunc, cuda_source

    from kernels.microbench.v5_parts import compile_variants, find_cuobjdump
    from kernels.spec import KernelSpec, grid_ctas, smem_bytes
    from kernels.tirx import hopper
    from protosim.config import GemmConfig

    tool = find_cuobjdump("loop_clock", "_c0")
    out.mkdir(parents=True, exist_ok=True)
    cubins, manifest = [], {}
    for step, m, n, k, bn, stages, *sm in configs:
        sm_count = sm[0] if sm else None
        name = name_of(step, m, n, k, bn, stages, sm_count)
        cfg = GemmConfig(M=m, N=n, K=k, BLK_N=bn, PIPE_DEPTH=2 if step == "v4" else stages, arch="h200",
                         sm_count=sm_count)
        mod = compile_primfunc(hopper.build(KernelSpec(step, cfg, False)), "sm_90a")
        text = add_loop_clock(cuda_source(mod))
        manifest[name] = {"step": step, "M": m, "N": n, "K": k, "BLK_N": bn, "PIPE_DEPTH": stages,
                          "threads": int(_BOUNDS.search(text).group(1)), "grid": grid_ctas(step, cfg),
                          "smem": smem_bytes(step, cfg), "model_cycles": model_cycles(step, cfg)}
        cubins += compile_variants("loop_clock", mod, text, out, name, "PROTOSIM_LOOP_CLOCK", {0: "c0", 1: "c1"}, 0, tool)
        print(f"  {manifest[name]['threads']} threads, model {manifest[name]['model_cycles']:.0f} cycles", flush=True)
    (out / "loop_clock.json").write_text(json.dumps(manifest, indent=1))
    return cubins


def main(argv: list[str] | None = None) -> int:
    from kernels.toolchain.compiler import out_dir_main

    args = list(sys.argv[1:] if argv is None else argv)
    configs = CONFIGS
    sets = {"--one-stage": ONE_STAGE, "--persistent-few": PERSISTENT_FEW}
    if args[:1] and args[0] in sets:
        configs, args = sets[args[0]], args[1:]
    return out_dir_main("kernels.microbench.loop_clock [--one-stage | --persistent-few]", __doc__, lambda out: build(out, configs), args)


if __name__ == "__main__":
    sys.exit(main())
