"""kernels.microbench.loop_clock: the loop clock lands around the MMA k-loop of any step's source
(v5's plain loop, v6's inside its tile walk, ws's consumer loop beside its producer loop) and the
epilogue's stamps after its store wait and the sync after that, off
unless PROTOSIM_LOOP_CLOCK is 1, and a source without exactly one such loop is refused; the
runner's slopes are read from the right rows.

The sources are abridged from the shapes TVM 0.27 generates for kernels/tirx/hopper.py (the
real ones are clocked by the build, which checks the unclocked cubin against TVM's own SASS)."""

from __future__ import annotations

import re

import pytest

from kernels.microbench.loop_clock import add_loop_clock
from kernels.runner.loop_clock import slopes

FENCE = "tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();"
STORE_WAIT = "tvm_builtin_ptx_cp_async_bulk_wait_group_async_bulk_wait_group_0();"
STORE = "tvm_builtin_ptx_cp_async_bulk_tensor_s2g_async_bulk_tensor_2d_global_shared__cta_bulk_group(D_map, 0, 0, Dsmem);"
HEAD = ('extern "C" __global__ void __launch_bounds__(160) kernel_kernel(int* diag_ptr);\n'
        'extern "C" __global__ void __launch_bounds__(160) kernel_kernel(int* diag_ptr) {\n')

WS = HEAD + f"""\
  if (((int)threadIdx.x) >= 128) {{
    while (1) {{
      for (int k = 0; k < 16; ++k) {{
        tvm_builtin_ptx_cp_async_bulk_tensor_global_to_shared();
      }}
    }}
  }} else {{
    while (1) {{
      for (int k_1 = 0; k_1 < 16; ++k_1) {{
        if (aborted_ptr[0] == 0) {{
          while (1) {{ poll(); }}
        }}
        {FENCE}
        for (int i = 0; i < 4; ++i) {{ wgmma(i); }}
      }}
      tvm_builtin_cuda_warpgroup_sync(1);
      if (((int)threadIdx.x) == 0) {{
        {STORE}
        {STORE_WAIT}
      }}
      tvm_builtin_cuda_warpgroup_sync(1);
    }}
  }}
}}
"""

V6 = HEAD + f"""\
  while (1) {{
    for (int s_1 = 0; s_1 < 2; ++s_1) {{
      prefetch(s_1);
    }}
    for (int k = 0; k < 16; ++k) {{
      {FENCE}
      wgmma();
    }}
    tvm_builtin_cuda_warpgroup_sync(1);
    if (((int)threadIdx.x) == 0) {{
      {STORE}
      {STORE_WAIT}
    }}
    tvm_builtin_cuda_warpgroup_sync(1);
    tvm_builtin_cuda_warpgroup_sync(2);
  }}
}}
"""


def preprocess(source: str, clock: int) -> str:
    """What the C preprocessor keeps of ``#if PROTOSIM_LOOP_CLOCK`` ... ``#endif`` blocks."""
    out, keep = [], True
    for line in source.splitlines():
        if line == "#if PROTOSIM_LOOP_CLOCK":
            keep = bool(clock)
        elif line == "#endif":
            keep = True
        elif keep:
            out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("source, loop", [(WS, "for (int k_1 = 0; k_1 < 16; ++k_1) {"), (V6, "for (int k = 0; k < 16; ++k) {")])
def test_the_clock_brackets_the_loop_that_holds_the_fence(source, loop):
    clocked = add_loop_clock(source)
    assert preprocess(clocked, 0) == source  # off: the kernel as built, byte for byte
    on = preprocess(clocked, 1).splitlines()
    start = on.index(next(line for line in on if "protosim_loop_start = clock64();" in line))
    assert on[start + 1].strip() == loop  # read right before the MMA loop, not the producer's
    write = next(i for i, line in enumerate(on) if "protosim_loop_clock[1] = clock64();" in line)
    # right after the loop's closing brace: the line before is the brace at the loop's own indent
    indent = len(on[start + 1]) - len(on[start + 1].lstrip())
    assert on[write - 1] == " " * indent + "}"
    assert on[write + 1].strip() == "tvm_builtin_cuda_warpgroup_sync(1);"
    assert on[write].startswith(" " * indent + "if (((int)threadIdx.x) == 0)")
    # the epilogue: slot 2 right after thread 0's store wait (inside its branch), slot 3 right after
    # the sync that follows, by thread 0
    issue = next(i for i, line in enumerate(on) if "protosim_loop_clock[4] = clock64();" in line)
    assert on[issue + 1].strip() == STORE and on[issue].startswith(on[issue + 1][:len(on[issue + 1]) - len(STORE)])
    waited = next(i for i, line in enumerate(on) if "protosim_loop_clock[2] = clock64();" in line)
    assert on[waited - 1].strip() == STORE_WAIT
    assert on[waited + 1].strip() == "}"
    synced = next(i for i, line in enumerate(on) if "protosim_loop_clock[3] = clock64();" in line)
    assert synced == waited + 3 and on[synced - 1].strip() == "tvm_builtin_cuda_warpgroup_sync(1);"
    assert "if (((int)threadIdx.x) == 0)" in on[synced]
    # the array is declared once, at file scope before the kernel's definition
    assert on.index("__device__ long long protosim_loop_clock[5];") < next(i for i, line in enumerate(on) if line.endswith("{")
                                                                          and "__global__" in line)


@pytest.mark.parametrize("source, why", [
    (V6.replace(FENCE, ""), "found 0"),
    (V6.replace("    tvm_builtin_cuda_warpgroup_sync(2);\n", f"    for (int k_2 = 0; k_2 < 4; ++k_2) {{\n      {FENCE}\n    }}\n"),
     "found 2"),
    (V6.replace(STORE_WAIT, ""), "once after the k-loop, found 0"),
    (V6.replace(STORE, ""), "TMA store"),
    (V6.replace("    tvm_builtin_cuda_warpgroup_sync(1);\n    tvm_builtin_cuda_warpgroup_sync(2);\n", ""), "a tvm_builtin_cuda_warpgroup_sync"),
    (V6 + V6, "one kernel definition"),
])
def test_a_source_of_another_shape_is_refused(source, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        add_loop_clock(source)


def _row(step, k, clock, kernel_us, loop=None, model=0.0, epilogue=None):
    row = {"step": step, "config": {"K": k, "BLK_N": 64, "PIPE_DEPTH": 2}, "loop_clock": clock,
           "kernel_ms": {"median": kernel_us / 1e3}, "model_cycles": model}
    if loop is not None:
        row["loop_cycles"] = loop
    if epilogue is not None:
        row["epilogue_cycles"] = epilogue
    return row


def test_slopes_pair_the_two_ks_and_the_clocked_kernel():
    rows = [_row("v5", 1024, 0, 10.0, model=16_000), _row("v5", 4096, 0, 34.0, model=64_000),
            _row("v5", 1024, 1, 10.5, loop=17_000, epilogue=2_100), _row("v5", 4096, 1, 35.3, loop=62_000, epilogue=1_900),
            _row("v6", 1024, 0, 11.0)]  # one K of v6 only: no slope
    (s,) = slopes(rows)
    assert s["clock64_cycles"] == pytest.approx((62_000 - 17_000) / 48)
    assert s["model_cycles"] == pytest.approx(48_000 / 48)
    assert s["kernel_us"] == pytest.approx(24.0 / 48)
    assert s["implied_ghz"] == pytest.approx(45_000 / (24.8 * 1e3))
    assert s["epilogue_cycles"] == 1_900  # the quicker of the two launches' last epilogues


def test_the_build_sets_name_their_kernels_apart():
    from kernels.microbench.loop_clock import CONFIGS, ONE_STAGE, PERSISTENT_FEW, name_of

    names = [name_of(*c) for c in CONFIGS + ONE_STAGE + PERSISTENT_FEW]
    assert len(names) == len(set(names))  # one folder may hold several sets' cubins
    assert all(c[5] == 1 for c in ONE_STAGE) and all(len(c) == 7 and c[6] for c in PERSISTENT_FEW)
    assert name_of("ws", 2048, 2048, 4096, 32, 1, 8).endswith("_sm8")


def test_l2_share_refuses_a_grid_it_cannot_launch(capsys):
    from kernels.runner.l2_share import main

    assert main(["--grid", "0", "--cubin", "x.cubin"]) == 2
    assert main(["--grid", "many", "--cubin", "x.cubin"]) == 2
    assert "--grid" in capsys.readouterr().err
