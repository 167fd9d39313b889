"""The seed's Hopper v5 kernel with parts of its k-loop switched off at compile time (issue 16:
v5's per-k-iteration gap).

At one CTA the model gives v5 (two stages, 128 x BLK_N) 964 / 1,212 cycles a k-iteration at
BLK_N 64 / 128 where the GPU takes 1,147 / 1,415 (results/silicon/timing/2026-12-01_bn_sweep.md);
the MMA block itself is within ~20 cycles, so ~180-200 cycles lie between one MMA block's end
and the next one's start.  v4, whose loop has the same waits and issues but no ring, is within
~1%.  What v5 does there per k-iteration (kernels/tirx/hopper.py): thread 0 arrives on
``mma_bar``, all 128 threads wait on it (thread 0 right after its own arrive), thread 0 issues
the next stage's two TMA loads and its arrive.expect_tx, and every thread waits on the next
stage's ``tma_bar`` -- each wait the runner's timeout-checked loop (clock64, a global atomic
past a bound).

This takes the CUDA source TVM generates for the kernel and adds a preprocessor constant
``PARTS`` (one cubin each), nothing else:

* bit 0 keeps the ``mma_bar`` round trip: thread 0's arrive, and everyone's wait on it (without
  it the wait's first try is replaced by "done" and the arrive is gone; the next stage's loads
  are then issued as soon as thread 0's own wgmma wait returns -- a race with the other warps'
  reads of that stage, harmless to the timing, so the product of such a variant is reported,
  not required);
* bit 1 keeps the waits' timeout clock: without it ``clock64()`` reads 0, so no wait ever
  times out and ptxas may drop the clock reads (the polls stay);
* bit 2 (with bit 0) lets warps 1-3 skip the wait on ``mma_bar``: thread 0 keeps its arrive and
  its own wait (PARTS 7).  Which warps' side of the round trip is on the critical path: warp 0,
  waiting right behind its own arrive, or warps 1-3, woken from a suspended ``try_wait``;
* bit 3 adds clock stamps (:func:`add_stamps`; PARTS 11 is the kernel as built with them): thread 0
  writes ``clock64()`` into a ``__device__`` array at five points of every k-iteration -- the
  loop's top, the wgmma fence (its TMA wait passed), after ``wgmma.wait_group``, after the
  ``mma_bar`` wait (the round trip done) and after the loads' ``arrive.expect_tx`` -- so that the
  iteration can be laid beside the replay's, part by part;
* bit 4 (PARTS 19) takes the same stamps in registers, every thread, in k-iteration
  :data:`LIGHT_K` only (and the next one's top), thread 0 writing them out after the loop: no store
  inside the loop, so the iteration runs as built but for the clock reads;
* bit 5 reads ``clock64()`` once before the k-loop and once after it (thread 0 writes both out):
  the loop's clock64 cycles with nothing inside it changed, so that a variant's k-iteration is
  read in cycles, not as a kernel time at an assumed clock (PARTS 35, 34, 39: PARTS 3, 2, 7 with it);
* bit 6 (:func:`skip_tma_wait`; PARTS 99 with bits 0, 1 and 5) lets the k-loop's wait on the stage's
  TMA barrier pass at once: the loop without waiting for its loads to land;
* bit 7 (:func:`skip_mma_block`; PARTS 163 with bits 0, 1 and 5) leaves out the k-loop's wgmma block,
  from its ``wgmma.fence`` to its ``wgmma.wait_group 0``: the loop clock less PARTS 35's is what the
  block costs on the loop's critical path, at one stage (v4) and two (v5) in one unstamped run;
* bit 8 (:func:`keep_first_wgmma`; PARTS 291 with bits 0, 1 and 5) keeps the block's first wgmma
  (its two descriptors, the fence, commit and ``wait_group``) and leaves out the other seven: the
  tensor core still works every k-iteration, so the loop runs at the tensor clock as built (PARTS
  163 ran at the full clock), and v4's and v5's differences from PARTS 163 tell whether the loop's
  TMA wait costs the same SM cycles at both clocks (v4 waits on its landing, v5 does not).

``PARTS`` 3 is the kernel as built.  It is compiled with TVM's own nvcc command
(``tvm.support.nvcc.compile_cuda``: ``--use_fast_math``, ptxas ``--register-usage-level=10``):
the build checks that PARTS 3's SASS is the SASS of the library TVM exports for the same config
(the lesson of results/silicon/microbench/2026-12-03_h200_v3_lines.md, whose plain ``nvcc -O3``
cubins were not the kernel that runs).

Built on the CPU machine (needs apache-tvm, nvcc and a cuobjdump):

    python -m kernels.microbench.v5_parts OUT_DIR

writes ``<step>_parts_128x<N>x<K>_n<BN>.cu`` and ``..._p<PARTS>.sm_90a.cubin`` for :data:`CONFIGS`,
and ``v5_parts.json`` (each kernel's config and dynamic shared memory); kernels/runner/v5_parts.py
runs them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CONFIGS = tuple((step, 128, bn, k, bn) for step in ("v5", "v4") for bn in (64, 128) for k in (1024, 4096))
"""(step, M, N, K, BLK_N): one CTA, PIPE_DEPTH 2; the k-iteration is the slope from K 1024 to
4096.  v4 (one stage: the load of k-iteration k + 1 issued after the round trip, then waited
for) has the same mma_bar round trip and the same waits, and its model is within ~1%: the
control for whether what v5 shows is v5's."""
PARTS = (3, 2, 1, 0, 7, 11, 19, 35, 34, 39, 99, 163, 291)

STAMPS = ("top", "mma_start", "mma_done", "round_trip_done", "loads_issued")
"""The points of a k-iteration PARTS 11 stamps, in slot order (:func:`add_stamps`)."""
STAMP_SLOTS = 8
"""Slots a k-iteration has in the stamp array (``protosim_stamps[k * 8 + slot]``)."""
STAMP_ITERATIONS = 64
"""k-iterations the stamp array holds: K up to 4096."""
LIGHT_K = 8
"""The k-iteration PARTS 19's light stamps time (in registers, written out after the loop): the
same points and the next iteration's top, with no store inside the loop."""

_ARRIVE = re.compile(r"^(\s*)(tvm_builtin_ptx_mbarrier_arrive_nocount_arrive_shared_b64\(tvm_builtin_cuda_cvta.*\[\d+\]\)\)\)\);)$", re.M)
_FIRST_TRY = re.compile(r"^(\s*)(tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64\(ok_ptr\[0\], "
                        r".*\[\d+\]\)\)\), \(\(uint\)\(phase_mma_ptr\[0\] \^ 0\)\)\);)\n(\s*if \(ok_ptr\[0\] == \(uint\)0\) \{\n\s*t0_ptr\[0\] = )", re.M)
_CLOCK = re.compile(r"(tvm_builtin_clock64\(\) \{\n)(\s*return clock64\(\);\n)")


def patch(source: str) -> str:
    """The v5 source with ``PARTS``; refuses a source whose shape it does not know."""
    for pattern, what in ((_ARRIVE, "the arrive on mma_bar"), (_FIRST_TRY, "the first try of the wait on mma_bar"),
                          (_CLOCK, "tvm_builtin_clock64")):
        if len(pattern.findall(source)) != 1:
            raise ValueError(f"expected {what} once in the v5 source, found {len(pattern.findall(source))}")
    source = _ARRIVE.sub(lambda m: f"#if PARTS & 1\n{m.group(1)}{m.group(2)}\n#endif", source)
    source = _FIRST_TRY.sub(lambda m: f"#if PARTS & 4\n{m.group(1)}if (((int)threadIdx.x) >= 32) {{ ok_ptr[0] = 1u; }} else\n#endif\n"
                                      f"#if PARTS & 1\n{m.group(1)}{m.group(2)}\n#else\n{m.group(1)}ok_ptr[0] = 1u;\n#endif\n{m.group(3)}",
                            source)
    return _CLOCK.sub(lambda m: f"{m.group(1)}#if PARTS & 2\n{m.group(2)}#else\n    return 0ull;\n#endif\n", source)


_LOOP_TOP = re.compile(r"^([ \t]*)for \(int k = 0; k < \d+; \+\+k\) \{\n", re.M)
_KERNEL = re.compile(r'^extern "C" __global__ ', re.M)
_STAMP_AT = (  # (slot, a statement of the k-loop, stamp before it or after it)
    (1, "tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();", "before"),
    (2, "tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0();", "after"),
    (3, "phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);", "after"),
    (4, "tvm_builtin_ptx_mbarrier_arrive_expect_tx_arrive_expect_tx_shared_b64(", "after"),
)


def add_stamps(source: str) -> str:
    """The patched source with ``PROTOSIM_STAMP(slot)`` at the :data:`STAMPS` points of the k-loop,
    ``PROTOSIM_STAMP_DECLARE`` before the loop and ``PROTOSIM_STAMP_FLUSH`` after it (bit 3: every
    iteration's stamps stored; bit 4: one iteration's, in registers; bit 5: the loop clock; all empty
    otherwise); refuses a source where a point is not exactly once in the loop."""
    tops = list(_LOOP_TOP.finditer(source))
    kernels = list(_KERNEL.finditer(source))
    if len(tops) != 1 or not kernels:
        raise ValueError(f"expected one k-loop (found {len(tops)}) and a kernel (found {len(kernels)}) in the source")
    head, loop = source[:tops[0].end()], source[tops[0].end():]
    for slot, statement, where in _STAMP_AT:
        if loop.count(statement) != 1:
            raise ValueError(f"expected {statement!r} once in the k-loop, found {loop.count(statement)}")
        at = loop.index(statement)
        line_start = loop.rindex("\n", 0, at) + 1
        line_end = loop.index("\n", at) + 1
        indent = loop[line_start:at]
        stamp = f"{indent}PROTOSIM_STAMP({slot})\n"
        loop = loop[:line_start] + stamp + loop[line_start:] if where == "before" else loop[:line_end] + stamp + loop[line_end:]
    end = _matching_brace(loop)
    indent = tops[0].group(1)
    after = loop.index("\n", end) + 1
    loop = f"{loop[:after]}{indent}PROTOSIM_STAMP_FLUSH\n{loop[after:]}"
    light = len(STAMPS)
    declaration = (  # the array, then PROTOSIM_STAMP / _DECLARE / _FLUSH for bit 4, 5, 3, or none
        f"#if PARTS & 56\n__device__ long long protosim_stamps[{STAMP_ITERATIONS * STAMP_SLOTS}];\n#endif\n"
        f"#if PARTS & 16\n"
        f"#define PROTOSIM_STAMP(slot) if (k == {LIGHT_K}) {{ protosim_light[slot] = clock64(); }} "
        f"else if (k == {LIGHT_K + 1} && (slot) == 0) {{ protosim_light[{light}] = clock64(); }}\n"
        f"#define PROTOSIM_STAMP_DECLARE long long protosim_light[{light + 1}] = {{{', '.join(['0'] * (light + 1))}}};\n"
        f"#define PROTOSIM_STAMP_FLUSH if (((int)threadIdx.x) == 0) {{ for (int s = 0; s < {light + 1}; ++s) "
        "protosim_stamps[s] = protosim_light[s]; }\n"
        "#elif PARTS & 32\n"
        "#define PROTOSIM_STAMP(slot)\n"
        "#define PROTOSIM_STAMP_DECLARE long long protosim_loop_start = clock64();\n"
        "#define PROTOSIM_STAMP_FLUSH if (((int)threadIdx.x) == 0) { protosim_stamps[0] = protosim_loop_start; "
        "protosim_stamps[1] = clock64(); }\n"
        "#elif PARTS & 8\n"
        f"#define PROTOSIM_STAMP(slot) if (((int)threadIdx.x) == 0) {{ protosim_stamps[k * {STAMP_SLOTS} + (slot)] = clock64(); }}\n"
        "#define PROTOSIM_STAMP_DECLARE\n#define PROTOSIM_STAMP_FLUSH\n"
        "#else\n#define PROTOSIM_STAMP(slot)\n#define PROTOSIM_STAMP_DECLARE\n#define PROTOSIM_STAMP_FLUSH\n#endif\n")
    at = kernels[0].start()
    top_line = head.rindex("\n", 0, len(head) - 1) + 1  # the k-loop's own line
    head = head[:at] + declaration + head[at:top_line] + f"{indent}PROTOSIM_STAMP_DECLARE\n" + head[top_line:]
    return f"{head}{indent}  PROTOSIM_STAMP(0)\n{loop}"


def _matching_brace(loop: str) -> int:
    """Where the k-loop's body (``loop`` starts right after its opening brace) closes."""
    depth = 1
    for i, ch in enumerate(loop):
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            return i
    raise ValueError("the k-loop's body does not close")


def _split_at_loop(source: str) -> tuple[str, str]:
    """``source`` cut right after the k-loop's opening line: (up to it, the loop and after)."""
    top = _LOOP_TOP.search(source)
    if top is None:
        raise ValueError("no k-loop in the source")
    return source[:top.end()], source[top.end():]


_TMA_FIRST_TRY = re.compile(r"^([ \t]*)(tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64\(ok_ptr\[0\], "
                            r"[^\n]*\(\(uint\)\(phase_tma_ptr\[0\] \^ 0\)\)\);)\n"
                            r"(?=[ \t]*if \(ok_ptr\[0\] == \(uint\)0\) \{\n[ \t]*t0_ptr\[0\] = )", re.M)


def skip_tma_wait(source: str) -> str:
    """The source with bit 6: in the k-loop, the wait on the stage's TMA barrier passes at once
    (its first try replaced by "done"), so the loop runs without waiting for the loads to land (a
    race with the stage's bytes, harmless to the timing: the product is reported, not required)."""
    head, loop = _split_at_loop(source)
    found = _TMA_FIRST_TRY.findall(loop)
    if len(found) != 1:
        raise ValueError(f"expected the first try of the wait on the TMA barrier once in the k-loop, found {len(found)}")
    loop = _TMA_FIRST_TRY.sub(lambda m: f"#if PARTS & 64\n{m.group(1)}ok_ptr[0] = 1u;\n#else\n{m.group(1)}{m.group(2)}\n#endif\n", loop)
    return head + loop


_BLOCK = re.compile(r"^[ \t]*tvm_builtin_ptx_wgmma_fence_fence_sync_aligned\(\);\n"
                    r"(?:.*\n)*?[ \t]*tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0\(\);\n", re.M)


def skip_mma_block(source: str) -> str:
    """The source with bit 7: the k-loop's wgmma block -- its fence, descriptors, wgmma
    instructions, commit and ``wait_group 0`` -- left out (the accumulators stay zero: the
    product is reported, not required).  The stamps of bits 3-4 around the block stay."""
    head, loop = _split_at_loop(source)
    found = _BLOCK.findall(loop)
    if len(found) != 1 or "mma_async" not in found[0]:
        raise ValueError(f"expected one wgmma block (fence .. wait_group 0) in the k-loop, found {len(found)}")
    return head + _BLOCK.sub(lambda m: f"#if PARTS & 128\n#else\n{m.group(0)}#endif\n", loop, count=1)


def compile_variants(who: str, mod, text: str, out: Path, name: str, macro: str, values, as_built, tool: str) -> list[Path]:
    """Compile ``text`` (a kernel's TVM-generated source, patched) once for each ``#define macro
    value`` with TVM's own nvcc command into ``OUT/<name>_<value tag>.sm_90a.cubin``, and check that
    the ``as_built`` value compiles to the SASS of the library TVM exports for ``mod`` (the kernel
    that runs); ``values`` maps each value to its file tag."""
    import tvm
    from tvm.support.nvcc import compile_cuda

    from kernels.toolchain import sass

    lib = out / f"{name}.tvm.so"
    mod.export_library(str(lib))
    built = sass.device_code(lib, out)
    (out / f"{name}.cu").write_text(text)
    cubins = []
    for value, tag in values.items():
        cubin = out / f"{name}_{tag}.sm_90a.cubin"
        with tvm.target.Target({"kind": "cuda", "arch": "sm_90a"}):
            cubin.write_bytes(compile_cuda(f"#define {macro} {value}\n" + text, target_format="cubin", arch="sm_90a",
                                           compiler="nvcc"))
        cubins.append(cubin)
    mine = sass.instructions(sass.disassemble(out / f"{name}_{values[as_built]}.sm_90a.cubin", tool))
    theirs = sass.instructions(sass.disassemble(built, tool))
    if mine != theirs:
        raise SystemExit(f"{who}: {name} {macro} {as_built} compiles to other SASS than TVM's library "
                         f"({len(mine)} against {len(theirs)} instructions): not the kernel that runs")
    print(f"{name}: {macro} {as_built} SASS = TVM's ({len(mine)} instructions)", flush=True)
    return cubins


def find_cuobjdump(who: str, what: str) -> str:
    """The cuobjdump the build checks its SASS with; exits with how to get one when there is none."""
    from kernels.toolchain import sass

    tool = sass.find_cuobjdump()
    if tool is None:
        raise SystemExit(f"{who}: no cuobjdump (the CUDA toolkit's, or the triton wheel's bin on PATH): "
                         f"it is needed to check that {what} is the kernel TVM builds")
    return tool


_WGMMA = re.compile(r"^[ \t]*ptx_wgmma_encode_matrix_descriptor\(.*\n[ \t]*ptx_wgmma_encode_matrix_descriptor\(.*\n"
                    r"[ \t]*tvm_builtin_ptx_wgmma_\w*mma_async\w*\(.*\n", re.M)


def keep_first_wgmma(source: str) -> str:
    """The source with bit 8: of the k-loop's wgmma block only the first wgmma (with its two
    descriptor encodings) is kept; the other seven are left out (the product is reported, not
    required).  Needs :func:`skip_mma_block` first: it works inside the block that one marks."""
    head, loop = _split_at_loop(source)
    block = _BLOCK.search(loop)
    if block is None:
        raise ValueError("no wgmma block (fence .. wait_group 0) in the k-loop")
    text = block.group(0)
    found = list(_WGMMA.finditer(text))
    if len(found) < 2:
        raise ValueError(f"expected the block's wgmma instructions, each after two descriptors; found {len(found)}")
    rest = text[found[1].start():found[-1].end()]
    text = text.replace(rest, f"#if !(PARTS & 256)\n{rest}#endif\n", 1)
    return head + loop[:block.start()] + text + loop[block.end():]


def build(out: Path) -> list[Path]:
    from kernels.toolchain.compiler import compile_primfunc, cuda_source

    from kernels.spec import KernelSpec
    from kernels.tirx import hopper
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.engine.machine import smem_bytes

    tool = find_cuobjdump("v5_parts", "PARTS 3")
    out.mkdir(parents=True, exist_ok=True)
    cubins, manifest = [], {}
    for step, m, n, k, bn in CONFIGS:
        name = f"{step}_parts_{m}x{n}x{k}_n{bn}"
        cfg = GemmConfig(M=m, N=n, K=k, BLK_N=bn, PIPE_DEPTH=2, arch="h200")
        manifest[name] = {"step": step, "M": m, "N": n, "K": k, "BLK_N": bn,
                          "smem": smem_bytes(BUILDERS[f"hgemm_{step}"](cfg))}
        mod = compile_primfunc(hopper.build(KernelSpec(step, cfg, False)), "sm_90a")
        text = keep_first_wgmma(skip_mma_block(skip_tma_wait(add_stamps(patch(cuda_source(mod))))))
        cubins += compile_variants("v5_parts", mod, text, out, name, "PARTS", {p: f"p{p}" for p in PARTS}, 3, tool)
    (out / "v5_parts.json").write_text(json.dumps(manifest, indent=1))
    return cubins


def main(argv: list[str] | None = None) -> int:
    from kernels.toolchain.compiler import out_dir_main

    return out_dir_main("kernels.microbench.v5_parts", __doc__, build, argv)


if __name__ == "__main__":
    sys.exit(main())
