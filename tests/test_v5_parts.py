"""kernels.microbench.v5_parts.patch: the switches land where the v5 loop has its round trip
and its waits' clock, each PARTS value compiles to the code it names, and a source of another
shape is refused rather than patched somewhere else.

The loop below is the shape TVM 0.27 generates for the Hopper kernels' k-loop (the lines the
patch keys on copied from kernels/tirx/hopper.py's generated source, the rest abridged); the
real source is patched and its PARTS 3 checked against TVM's own SASS by the build itself."""

from __future__ import annotations

import re

import pytest

from kernels.microbench.v5_parts import patch

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
    """What the C preprocessor keeps of ``#if PARTS & b`` / ``#else`` / ``#endif`` (not nested)."""
    out, keep = [], [True]
    for line in source.splitlines():
        m = re.match(r"#if PARTS & (\d+)$", line)
        if m:
            keep.append(bool(parts & int(m.group(1))))
        elif line == "#else":
            keep[-1] = not keep[-1]
        elif line == "#endif":
            keep.pop()
        elif all(keep):
            out.append(line)
    assert keep == [True]
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
