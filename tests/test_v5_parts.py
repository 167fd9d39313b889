"""kernels.microbench.v5_parts.patch: the switches land where the v5 loop has its round trip
and its waits' clock, each PARTS value compiles to the code it names, and a source of another
shape is refused rather than patched somewhere else.

The loop below is the shape TVM 0.27 generates for the Hopper kernels' k-loop (the lines the
patch keys on copied from kernels/tirx/hopper.py's generated source, the rest abridged); the
real source is patched and its PARTS 3 checked against TVM's own SASS by the build itself."""

from __future__ import annotations

import re

import pytest

from kernels.microbench.v5_parts import add_stamps, patch, skip_tma_wait

LOOP = """\
__forceinline__ __device__ unsigned long long tvm_builtin_clock64() {
    return clock64();
}
  for (int k = 0; k < 64; ++k) {
    tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0();
    if (((int)threadIdx.x) == 0) {
      if (aborted_ptr[0] == 0) {
        tvm_builtin_ptx_mbarrier_arrive_nocount_arrive_shared_b64(tvm_builtin_cuda_cvta_generic_to_shared((&(((uint64_t*)pool_buf_ptr)[2]))));
      }
    }
    if (aborted_ptr[0] == 0) {
      tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64(ok_ptr[0], tvm_builtin_cuda_cvta_generic_to_shared((&(((uint64_t*)pool_buf_ptr)[2]))), ((uint)(phase_mma_ptr[0] ^ 0)));
      if (ok_ptr[0] == (uint)0) {
        t0_ptr[0] = ((int64_t)tvm_builtin_clock64());
        while (1) {
          tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64(ok_ptr[0], tvm_builtin_cuda_cvta_generic_to_shared((&(((uint64_t*)pool_buf_ptr)[2]))), ((uint)(phase_mma_ptr[0] ^ 0)));
          if (ok_ptr[0] == (uint)0) {
            elapsed_ptr[0] = (((int64_t)tvm_builtin_clock64()) - t0_ptr[0]);
          }
        }
      }
    }
  }
"""


def preprocess(source: str, parts: int) -> str:
    """What the C preprocessor keeps of ``#if PARTS & b`` / ``#elif PARTS & b`` / ``#else`` /
    ``#endif`` (not nested)."""
    out, keep, taken = [], [True], [True]
    for line in source.splitlines():
        m = re.match(r"#(el)?if PARTS & (\d+)$", line)
        if m and not m.group(1):
            keep.append(bool(parts & int(m.group(2))))
            taken.append(keep[-1])
        elif m:
            keep[-1] = not taken[-1] and bool(parts & int(m.group(2)))
            taken[-1] = taken[-1] or keep[-1]
        elif line == "#else":
            keep[-1] = not taken[-1]
        elif line == "#endif":
            keep.pop()
            taken.pop()
        elif all(keep):
            out.append(line)
    assert keep == [True]
    return "\n".join(out) + "\n"


def expand_stamps(code: str) -> str:
    """``code`` with the stamp macros it defines put in place (an empty one removes its line)."""
    defines = dict(re.findall(r"^#define (PROTOSIM_STAMP(?:_DECLARE|_FLUSH)?)(?:\(slot\))?(.*)$", code, re.M))
    out = []
    for line in code.splitlines():
        if line.startswith("#define PROTOSIM_STAMP"):
            continue
        m = re.fullmatch(r"(\s*)(PROTOSIM_STAMP(?:_DECLARE|_FLUSH)?)(?:\((\d)\))?", line)
        if m:
            body = defines[m.group(2)].strip().replace("(slot)", m.group(3) or "").replace("[slot]", f"[{m.group(3)}]")
            if body:
                out.append(m.group(1) + body)
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def test_parts_3_is_the_source_as_generated():
    assert preprocess(patch(LOOP), 3) == LOOP


def test_without_bit_0_no_arrive_and_the_wait_passes_at_once():
    code = preprocess(patch(LOOP), 2)
    assert "arrive_nocount_arrive_shared_b64(tvm" not in code
    first = code.index("ok_ptr[0] = 1u;")
    assert first < code.index("t0_ptr[0]")  # in place of the first try: the wait's loop is skipped
    assert code.count("try_wait_parity_shared_b64(ok_ptr") == 1  # the loop's own try stays, unreached


def test_without_bit_1_the_clock_reads_zero_and_nothing_else_changes():
    code = preprocess(patch(LOOP), 1)
    assert "return clock64();" not in code and "return 0ull;" in code
    assert code.replace("    return 0ull;\n", "    return clock64();\n") == LOOP


def test_bit_2_spares_warps_1_to_3_the_wait_and_keeps_thread_0s():
    code = preprocess(patch(LOOP), 7)
    assert "arrive_nocount_arrive_shared_b64(tvm" in code
    spared = re.search(r"if \(\(\(int\)threadIdx\.x\) >= 32\) \{ ok_ptr\[0\] = 1u; \} else\n\s*tvm_builtin_ptx_mbarrier_try_wait", code)
    assert spared, code


@pytest.mark.parametrize("broken, what", [
    (LOOP.replace("tvm_builtin_ptx_mbarrier_arrive_nocount", "other_arrive"), "the arrive on mma_bar"),
    (LOOP.replace("phase_mma_ptr", "phase_tma_ptr"), "the first try of the wait on mma_bar"),
    (LOOP + LOOP.split("\n", 3)[3], "the arrive on mma_bar"),  # two loops: which one?
])
def test_a_source_of_another_shape_is_refused(broken, what):
    with pytest.raises(ValueError, match=what):
        patch(broken)


# -- PARTS 11's clock stamps (add_stamps) ------------------------------------------------------
STAMPED_LOOP = """\
extern "C" __global__ void __launch_bounds__(128) kernel_kernel(int x) {
  for (int k = 0; k < 16; ++k) {
    wait_on_the_stage();
    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();
    tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0();
    phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);
    if (k < 14) {
      if (((int)threadIdx.x) == 0) {
          tvm_builtin_ptx_mbarrier_arrive_expect_tx_arrive_expect_tx_shared_b64(bar, (uint)32768);
      }
    }
  }
  epilogue();
}
"""


def test_without_bits_3_and_4_the_stamps_are_empty_and_the_loop_unchanged():
    code = preprocess(add_stamps(STAMPED_LOOP), 3)
    assert "protosim_stamps[" not in code
    assert expand_stamps(code) == STAMPED_LOOP


@pytest.mark.parametrize("parts", [11, 19])
def test_bits_3_and_4_stamp_each_point_where_its_name_says(parts):
    code = preprocess(add_stamps(STAMPED_LOOP), parts)
    assert "__device__ long long protosim_stamps[512];" in code
    lines = [line.strip() for line in code.splitlines()]
    at = {int(m.group(1)): i for i, line in enumerate(lines) if (m := re.fullmatch(r"PROTOSIM_STAMP\((\d)\)", line))}
    assert sorted(at) == [0, 1, 2, 3, 4]
    assert lines[at[0] - 1].startswith("for (int k = 0")  # the loop's top
    assert lines[at[1] + 1] == "tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();"  # before the fence
    assert lines[at[2] - 1] == "tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0();"  # after the wait
    assert lines[at[3] - 1] == "phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);"  # the round trip done
    assert lines[at[4] - 1].startswith("tvm_builtin_ptx_mbarrier_arrive_expect_tx")  # the loads issued
    assert code.index("protosim_stamps[") < code.index('extern "C" __global__')  # declared before the kernel


def test_bit_4_keeps_the_stamps_in_registers_and_writes_them_after_the_loop():
    code = expand_stamps(preprocess(add_stamps(STAMPED_LOOP), 19))
    loop_start, loop_end = code.index("for (int k = 0"), code.index("  epilogue();")
    inside = code[loop_start:loop_end]
    assert "protosim_stamps[" not in inside.split("\n  }\n")[0]  # no store in the loop's body
    assert "if (k == 8) { protosim_light[0] = clock64(); } else if (k == 9 && 0 == 0) { protosim_light[5] = clock64(); }" in inside
    assert code.index("long long protosim_light[6]") < loop_start  # declared before the loop
    flush = code.index("protosim_stamps[s] = protosim_light[s]")
    assert code.index("  }\n", code.index("kc_ptr") if "kc_ptr" in code else loop_start) < flush < loop_end


@pytest.mark.parametrize("broken, what", [
    (STAMPED_LOOP.replace("tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();", ""), "fence"),
    (STAMPED_LOOP.replace("phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);",
                          "phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);\n    phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);"), "phase_mma"),
    (STAMPED_LOOP.replace("for (int k = 0; k < 16; ++k)", "for (int j = 0; j < 16; ++j)"), "one k-loop"),
])
def test_a_source_without_each_point_once_is_refused(broken, what):
    with pytest.raises(ValueError, match=what):
        add_stamps(broken)


def test_stamp_parts_reads_each_point_after_its_iterations_top():
    from kernels.runner.v5_parts import STAMP_SLOTS, stamp_parts

    iterations, period = 8, 1000
    offsets = {1: 200, 2: 700, 3: 800, 4: 950}
    stamps = [0] * (iterations * STAMP_SLOTS)
    for k in range(iterations):
        stamps[k * STAMP_SLOTS] = 5_000 + k * period + (7 if k == 3 else 0)  # one iteration's top late
        for slot, off in offsets.items():
            stamps[k * STAMP_SLOTS + slot] = 5_000 + k * period + off
    row = stamp_parts(stamps, iterations)
    assert row["mma_start"] == 200 and row["mma_done"] == 700 and row["round_trip_done"] == 800
    assert row["loads_issued"] == 950 and row["iteration"] == period


def test_bit_5_reads_the_clock_before_and_after_the_loop_and_nothing_inside():
    code = expand_stamps(preprocess(add_stamps(STAMPED_LOOP), 35))
    loop_start = code.index("for (int k = 0")
    start = code.index("long long protosim_loop_start = clock64();")
    end = code.index("protosim_stamps[1] = clock64();")
    assert start < loop_start < end < code.index("  epilogue();")
    inside = code[loop_start:code.index("\n  }\n", loop_start)]
    assert "clock64" not in inside and "protosim" not in inside


TMA_WAIT_LOOP = """\
  for (int k = 0; k < 16; ++k) {
    if (aborted_ptr[0] == 0) {
      tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64(ok_ptr[0], bar, ((uint)(phase_tma_ptr[0] ^ 0)));
      if (ok_ptr[0] == (uint)0) {
        t0_ptr[0] = ((int64_t)tvm_builtin_clock64());
        while (1) {
          tvm_builtin_ptx_mbarrier_try_wait_parity_no_hint_try_wait_parity_shared_b64(ok_ptr[0], bar, ((uint)(phase_tma_ptr[0] ^ 0)));
          if (ok_ptr[0] == (uint)0) {
            elapsed_ptr[0] = 1;
          }
        }
      }
    }
  }
"""


def test_bit_6_passes_the_tma_wait_at_once_and_keeps_its_loop_unreached():
    assert preprocess(skip_tma_wait(TMA_WAIT_LOOP), 35) == TMA_WAIT_LOOP
    code = preprocess(skip_tma_wait(TMA_WAIT_LOOP), 99)
    assert code.index("ok_ptr[0] = 1u;") < code.index("t0_ptr[0]")  # in place of the first try
    assert code.count("try_wait_parity_shared_b64(ok_ptr") == 1  # the loop's own try stays


def test_a_loop_without_one_first_tma_try_is_refused():
    with pytest.raises(ValueError, match="TMA barrier once"):
        skip_tma_wait(TMA_WAIT_LOOP.replace("phase_tma_ptr", "phase_mma_ptr"))


# -- PARTS 163: the wgmma block left out (skip_mma_block) ----------------------------------------
BLOCK_LOOP = STAMPED_LOOP.replace(
    "    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();\n",
    "    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();\n"
    "    ptx_wgmma_encode_matrix_descriptor((&(descA_ptr[0])), a, 1, 64, 3);\n"
    "    tvm_builtin_ptx_wgmma_f16_ss_mma_async_sync_aligned_m64n64k16_f32_f16_f16_1_1_0_0(acc_ptr[0], descA_ptr[0], (bool)1);\n"
    "    tvm_builtin_ptx_wgmma_commit_group_commit_group_sync_aligned();\n")


def test_bit_7_leaves_out_the_block_and_keeps_its_stamps():
    from kernels.microbench.v5_parts import skip_mma_block

    text = skip_mma_block(add_stamps(BLOCK_LOOP))
    assert expand_stamps(preprocess(text, 3)) == BLOCK_LOOP  # as built: unchanged
    code = preprocess(text, 163)
    for gone in ("wgmma_fence", "mma_async", "encode_matrix_descriptor", "commit_group", "wait_group"):
        assert gone not in code, gone
    lines = [line.strip() for line in code.splitlines()]
    assert lines.index("PROTOSIM_STAMP(1)") + 1 == lines.index("PROTOSIM_STAMP(2)")  # the stamps stay, the block between them gone
    assert "phase_mma_ptr[0] = (phase_mma_ptr[0] ^ 1);" in code and "arrive_expect_tx" in code  # the rest of the loop stays


def test_a_loop_without_a_wgmma_block_is_refused():
    from kernels.microbench.v5_parts import skip_mma_block

    with pytest.raises(ValueError, match="wgmma block"):
        skip_mma_block(STAMPED_LOOP)  # a fence and a wait_group with no wgmma between them


# -- PARTS 291: the block's first wgmma kept, the other seven left out (keep_first_wgmma) ---------
def _wgmma(i: int) -> str:
    return (f"    ptx_wgmma_encode_matrix_descriptor((&(descA_ptr[0])), a{i}, 1, 64, 3);\n"
            f"    ptx_wgmma_encode_matrix_descriptor((&(descB_ptr[0])), b{i}, 1, 64, 3);\n"
            f"    tvm_builtin_ptx_wgmma_f16_ss_mma_async_sync_aligned_m64n64k16_f32_f16_f16_1_1_0_0(acc_ptr[{i}], descA_ptr[0], descB_ptr[0], (bool)1);\n")


THREE_WGMMA_LOOP = STAMPED_LOOP.replace(
    "    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();\n",
    "    tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();\n" + _wgmma(0) + _wgmma(1) + _wgmma(2)
    + "    tvm_builtin_ptx_wgmma_commit_group_commit_group_sync_aligned();\n")


def test_bit_8_keeps_the_first_wgmma_and_its_fence_commit_and_wait(tmp_path):
    """The C preprocessor's own reading of the patched loop: PARTS 291 keeps the first wgmma with
    the block's fence and wait_group, 35 (as built) all three, 163 (no block) none."""
    import shutil
    import subprocess

    from kernels.microbench.v5_parts import keep_first_wgmma, skip_mma_block

    cpp = shutil.which("cpp") or shutil.which("gcc")
    if cpp is None:
        pytest.skip("no C preprocessor on PATH (cpp or gcc) to expand the #if lines")
    src = tmp_path / "loop.c"
    src.write_text(keep_first_wgmma(skip_mma_block(add_stamps(THREE_WGMMA_LOOP))))
    for parts, wgmmas, fences in ((35, 3, 1), (291, 1, 1), (163, 0, 0)):
        args = [cpp, "-P", f"-DPARTS={parts}", str(src)] if cpp.endswith("cpp") else [cpp, "-E", "-P", f"-DPARTS={parts}", str(src)]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        assert out.count("mma_async") == wgmmas, parts
        assert out.count("wgmma_fence") == fences and out.count("wait_group_sync_aligned_0") == fences, parts


def test_a_block_of_one_wgmma_is_refused():
    from kernels.microbench.v5_parts import keep_first_wgmma

    with pytest.raises(ValueError, match="wgmma instructions"):
        keep_first_wgmma(THREE_WGMMA_LOOP.replace(_wgmma(1), "").replace(_wgmma(2), ""))
