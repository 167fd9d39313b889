"""The Hopper (sm_90a) protocol kernels build, and each knob changes the generated
CUDA in the one place it should.  The GPU verdicts are in results/silicon/ (see
test_silicon_results.py); here we check the code that produced them.

Builds run in child processes (kernels.toolchain.sources): a build needs the stub
libcuda.so.1 on the loader path from process start.
"""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("tvm")
if shutil.which("nvcc") is None:
    pytest.skip("nvcc is not on PATH: the CUDA toolkit is needed to build sm_90a kernels", allow_module_level=True)

from kernel_sources import body, source

from kernels.toolchain.sources import build_in_children
from kernels.spec import KernelSpec, check, smem_bytes
from protosim.config import ConfigError, GemmConfig

ONE = dict(M=128, N=128, K=256)
GRID = dict(M=256, N=256, K=256)
PERSIST = dict(M=256, N=256, K=256, PIPE_DEPTH=2, sm_count=3)  # 3 CTAs, 4 tiles: CTA 0 runs two

JOBS = {
    "v2": ("v2", ONE), "v3": ("v3", GRID), "v4": ("v4", GRID), "v5": ("v5", dict(GRID, PIPE_DEPTH=2)),
    "v6": ("v6", PERSIST), "ws": ("ws", PERSIST),
    "v5-noflip": ("v5", dict(GRID, PIPE_DEPTH=2, skip_mma_phase_flip=True)),
    "ws-noflip": ("ws", dict(PERSIST, skip_mma_phase_flip=True)),
    "v6-reset": ("v6", dict(PERSIST, reset_phase_per_tile=True)),
    "v5-each-warp": ("v5", dict(GRID, PIPE_DEPTH=2, tma_issuer="each_warp")),
    "v4-tx-plus": ("v4", dict(GRID, expect_tx_delta=1024)),
    "v5-parity-tma": ("v5", dict(GRID, PIPE_DEPTH=2, wait_parity_flip="tma")),
    "v5-parity-mma": ("v5", dict(GRID, PIPE_DEPTH=2, wait_parity_flip="mma")),
    "v6-no-store-wait": ("v6", dict(PERSIST, skip_store_wait=True)),
}
TRACED = {"v5-trace": ("v5", dict(GRID, PIPE_DEPTH=2))}
STEPS = ("v2", "v3", "v4", "v5", "v6", "ws")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    jobs = {k: {"family": "hopper", "step": s, "config": dict(c, arch="h200"), "trace": False} for k, (s, c) in JOBS.items()}
    jobs.update({k: {"family": "hopper", "step": s, "config": dict(c, arch="h200"), "trace": True} for k, (s, c) in TRACED.items()})
    return build_in_children(jobs, tmp_path_factory.mktemp("hopper"))


def calls(b: str, name: str) -> int:
    return len(re.findall(rf"\b{name}\w*\(", b))


TRY_WAIT = "tvm_builtin_ptx_mbarrier_try_wait_parity"
TMA_LOAD = "tvm_builtin_ptx_cp_async_bulk_tensor_g2s"
TMA_STORE = "tvm_builtin_ptx_cp_async_bulk_tensor_s2g"
BULK_WAIT = "tvm_builtin_ptx_cp_async_bulk_wait_group"
ARRIVE_TX = "tvm_builtin_ptx_mbarrier_arrive_expect_tx"
ARRIVE = "tvm_builtin_ptx_mbarrier_arrive_nocount"


@pytest.mark.parametrize("step", STEPS)
def test_step_builds_with_wgmma_and_bounded_waits(built, step):
    b = body(source(built, step))
    assert "wgmma_f16_ss_mma_async_sync_aligned_m64n128k16_f32_f16_f16" in b
    assert "wgmma_wait_group_wait_group_sync_aligned_0" in b
    # never the library's unbounded spin: every wait is try_wait in a loop with a clock64 budget
    assert "mbarrier_wait(" not in b
    assert calls(b, TRY_WAIT) >= 2 and calls(b, TRY_WAIT) % 2 == 0  # a first probe + the loop's probe per wait site
    assert "tvm_builtin_clock64()" in b and "timeout_cycles <" in b
    assert "diag_ptr[1] =" in b and "diag_ptr[4] = kc_ptr[0]" in b  # the timeout record: barrier, ..., iteration


@pytest.mark.parametrize("step", STEPS)
def test_tma_from_v4_and_stores_drained(built, step):
    b = body(source(built, step))
    tma = step not in ("v2", "v3")
    assert (calls(b, TMA_LOAD) > 0) == tma
    assert (calls(b, TMA_STORE) == 1) == tma
    assert (calls(b, BULK_WAIT) == 1) == tma
    if not tma:
        # thread copies are published to the wgmma by a barrier over the MMA warpgroup
        assert "tvm_builtin_cuda_warpgroup_sync(2)" in b


@pytest.mark.parametrize("step", ("v2", "v3", "v4", "v5", "v6"))
def test_hopper_commit_is_wait_group_then_one_arrive(built, step):
    """tcgen05.commit's stand-in: the arrival on mma_bar comes after wgmma.wait_group 0."""
    b = body(source(built, step))
    wait = b.index("wgmma_wait_group_wait_group_sync_aligned_0")
    assert calls(b[wait:], ARRIVE) >= 1
    assert calls(b[:wait], ARRIVE) == 0


def test_ws_roles_and_empty_barriers(built):
    b = body(source(built, "ws"))
    assert "__launch_bounds__(160)" in source(built, "ws")  # 4 MMA warps + 1 producer warp
    assert "((((int)threadIdx.x) >> 5) == 4)" in b  # the producer warp's branch
    assert calls(b, ARRIVE) == 1  # the MMA warpgroup releases a stage (empty barrier)
    assert "phase_empty_ptr[0] = 1;" in b  # the producer's first wait on a fresh empty barrier passes


@pytest.mark.parametrize("flip, noflip, var", [("v5", "v5-noflip", "phase_mma"), ("ws", "ws-noflip", "phase_empty")])
def test_skip_mma_phase_flip_removes_the_flip(built, flip, noflip, var):
    a, b = body(source(built, flip)), body(source(built, noflip))
    assert f"{var}_ptr[0] = ({var}_ptr[0] ^ 1);" in a
    assert f"{var}_ptr[0] = ({var}_ptr[0] ^ 1);" not in b


def test_reset_phase_per_tile_rezeroes_inside_the_tile_loop(built):
    carry, reset = body(source(built, "v6")), body(source(built, "v6-reset"))
    loop = reset.index("while (1)")
    assert "phase_tma_ptr[0] = 0;" in reset[loop:] and "phase_mma_ptr[0] = 0;" in reset[loop:]
    loop = carry.index("while (1)")
    assert "phase_tma_ptr[0] = 0;" not in carry[loop:]


def test_each_warp_issues_from_lane_zero_of_every_warp(built):
    one, each = body(source(built, "v5")), body(source(built, "v5-each-warp"))
    guard_one = one[: one.index(TMA_LOAD)].rsplit("if (", 3)[1:]  # the three innermost guards
    guard_each = each[: each.index(TMA_LOAD)].rsplit("if (", 3)[1:]  # the three innermost guards
    assert any("((int)threadIdx.x) == 0" in g for g in guard_one)
    assert any("(((int)threadIdx.x) % 32) == 0" in g for g in guard_each)
    assert not any("((int)threadIdx.x) == 0" in g for g in guard_each)


def test_expect_tx_bytes_follow_the_delta(built):
    cfg = GemmConfig(arch="h200", **GRID)
    assert f"(uint){cfg.stage_bytes})" in body(source(built, "v4"))
    assert f"(uint){cfg.stage_bytes + 1024})" in body(source(built, "v4-tx-plus"))


@pytest.mark.parametrize("key, var", [("v5-parity-tma", "phase_tma"), ("v5-parity-mma", "phase_mma")])
def test_wait_parity_flip_flips_only_that_wait(built, key, var):
    b = body(source(built, key))
    other = "phase_mma" if var == "phase_tma" else "phase_tma"
    assert f"({var}_ptr[0] ^ 1)));" in b  # the try_wait parity operand
    assert f"({other}_ptr[0] ^ 0)));" in b


def test_skip_store_wait_drops_only_the_bulk_wait(built):
    a, b = body(source(built, "v6")), body(source(built, "v6-no-store-wait"))
    assert calls(a, BULK_WAIT) == 1 and calls(b, BULK_WAIT) == 0
    assert calls(b, TMA_STORE) == 1


def test_delays_are_kernel_arguments(built):
    """One binary serves every delay: the knobs are parameters, each guarding a nanosleep."""
    src = source(built, "v5")
    sig = src[src.index('extern "C" __global__') : src.index("{", src.index('extern "C" __global__'))]
    for arg in ("producer_delay_ns", "consumer_delay_ns", "lag_warp", "lag_ns", "timeout_cycles"):
        assert arg in sig
    assert calls(body(src), "tvm_builtin_cuda_nano_sleep") >= 3


def test_trace_only_when_asked(built):
    assert "trace_ptr[" not in body(source(built, "v5"))
    b = body(source(built, "v5-trace"))
    assert "trace_ptr[" in b and "tvm_builtin_clock64()" in b


def test_trace_adds_an_observer_warp_that_never_arrives(built):
    plain, traced = source(built, "v5"), source(built, "v5-trace")
    assert "__launch_bounds__(128)" in plain and "__launch_bounds__(192)" in traced
    # same arrivals as the untraced kernel: the observer only polls
    assert calls(body(traced), ARRIVE) == calls(body(plain), ARRIVE)
    assert calls(body(traced), ARRIVE_TX) == calls(body(plain), ARRIVE_TX)
    for event in (7, 8):  # load_complete, mma_complete
        assert f"= (int64_t){event};" in body(traced)


def test_trace_of_a_bug_is_refused():
    from kernels.tirx import hopper

    with pytest.raises(ConfigError) as err:
        hopper.build(KernelSpec("v5", GemmConfig(arch="h200", **dict(GRID, skip_mma_phase_flip=True)), trace=True))
    assert err.value.field == "trace"


@pytest.mark.parametrize("step, cfg, field", [
    ("v2", dict(M=256, N=128, K=256), "M"),
    ("v4", dict(GRID, BLK_K=32), "BLK_K"),
    ("v4", dict(GRID, BLK_N=256, N=256), "BLK_N"),
    ("ws", dict(PERSIST, tma_issuer="each_warp"), "tma_issuer"),
    ("v3", dict(GRID, expect_tx_delta=16), "step"),
    ("v5", dict(GRID, reset_phase_per_tile=True), "reset_phase_per_tile"),
    ("v5", dict(GRID, PIPE_DEPTH=8), "PIPE_DEPTH"),
    ("v7", GRID, "step"),
])
def test_unbuildable_configs_name_the_field(step, cfg, field):
    with pytest.raises(ConfigError) as err:
        check(step, GemmConfig(arch="h200", **cfg))
    assert err.value.field == field


def test_smem_fits_four_stages_but_not_eight():
    cfg = GemmConfig(arch="h200", **GRID)
    assert smem_bytes("v5", GemmConfig(arch="h200", **dict(GRID, PIPE_DEPTH=4))) <= 227 * 1024 < smem_bytes("v5", GemmConfig(arch="h200", **dict(GRID, PIPE_DEPTH=8)))
    assert smem_bytes("v4", cfg) == smem_bytes("v5", GemmConfig(arch="h200", **dict(GRID, PIPE_DEPTH=1)))


def test_spec_key_changes_with_every_knob():
    base = KernelSpec("v5", GemmConfig(arch="h200", **GRID))
    keys = {base.key, KernelSpec("v5", GemmConfig(arch="h200", **GRID), trace=True).key}
    for knob, value in (("skip_mma_phase_flip", True), ("expect_tx_delta", 16), ("wait_parity_flip", "tma"), ("PIPE_DEPTH", 3)):
        keys.add(KernelSpec("v5", GemmConfig(arch="h200", **dict(GRID, **{knob: value}))).key)
    assert len(keys) == 6
