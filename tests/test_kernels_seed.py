"""The seed article's six GEMM steps (kernels/tirx/seed_sm100.py) build for sm_100a
on the released TIRx, and the generated CUDA has what each step is about.

Builds need the stub ``libcuda.so.1`` on ``LD_LIBRARY_PATH`` *at process start*
(shared/docs/DEVICE.md), which this pytest process may not have.  So every
build runs in child processes started with ``kernels.toolchain.compiler.env_for_subprocess()``;
one module-scoped fixture builds all (step, config) pairs once, split over two
children, and hands the CUDA sources to the tests.
"""

from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tvm")
if shutil.which("nvcc") is None:
    pytest.skip("nvcc is not on PATH: the CUDA toolkit (12.8+) is needed to build sm_100a kernels", allow_module_level=True)

from kernel_sources import body, source

from kernels.toolchain.sources import build_in_children
from protosim.config import ConfigError, GemmConfig

REPO = Path(__file__).resolve().parents[1]
STEPS = ("v1", "v2", "v3", "v4", "v5", "v6")

# Small shapes: v1 is one 128x128x64 tile, v2 one output tile with a K loop,
# v3+ a 2x2 grid of tiles; v6 has 3 persistent CTAs for 4 tiles, so CTA 0 runs
# two tiles (the cross-tile phase carry / reset is exercised).
BASE = {
    "v1": {"M": 128, "N": 128, "K": 64},
    "v2": {"M": 128, "N": 128, "K": 256},
    "v3": {"M": 256, "N": 256, "K": 256},
    "v4": {"M": 256, "N": 256, "K": 256},
    "v5": {"M": 256, "N": 256, "K": 256, "PIPE_DEPTH": 2},
    "v6": {"M": 256, "N": 256, "K": 256, "PIPE_DEPTH": 2, "sm_count": 3},
}
V6_CTAS = BASE["v6"]["sm_count"]

JOBS: dict[str, tuple[str, dict]] = {step: (step, cfg) for step, cfg in BASE.items()}
JOBS.update({f"{s}-noflip": (s, dict(BASE[s], skip_mma_phase_flip=True)) for s in ("v2", "v3", "v4", "v5", "v6")})
JOBS["v6-reset"] = ("v6", dict(BASE["v6"], reset_phase_per_tile=True))
JOBS["v5-depth1"] = ("v5", dict(BASE["v5"], PIPE_DEPTH=1))  # the `T.meta_var(k % PIPE_DEPTH)` case

@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """key -> CUDA source, or key -> ``ERROR: ...`` when that build failed."""
    jobs = {key: {"family": "seed", "step": step, "config": cfg} for key, (step, cfg) in JOBS.items()}
    return build_in_children(jobs, tmp_path_factory.mktemp("seed_sm100"))


def calls(text: str, name: str) -> int:
    """Call sites of a generated helper whose name contains ``name``."""
    return len(re.findall(rf"\b\w*{name}\w*\(", text))


PHASE_MMA_FLIP = re.compile(r"phase_mma\w*\[0\] = \(phase_mma\w*\[0\] \^ 1\);")
PHASE_TMA_FLIP = re.compile(r"phase_tma\w*\[0\] = \(phase_tma\w*\[0\] \^ 1\);")


# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("step", STEPS)
def test_step_builds_for_sm100a(built, step):
    src = source(built, step)
    assert "__global__" in src
    assert "kernel_kernel" in src


@pytest.mark.parametrize("step", STEPS)
def test_tcgen05_mma_committed_to_mbarrier(built, step):
    src = source(built, step)
    b = body(src)
    assert "tcgen05.mma.cta_group::1.kind::f16" in src
    # gemm_async emits one tcgen05.mma per 16-wide K slice of the BLK_K tile
    cfg = GemmConfig(**BASE[step])
    assert calls(b, "tcgen05_mma") == cfg.BLK_K // 16
    assert "tcgen05.commit.cta_group::1.mbarrier::arrive::one" in src
    assert calls(b, "tcgen05_commit") == 1


@pytest.mark.parametrize("step", STEPS)
def test_waits_use_parity_of_the_phase_variables(built, step):
    src = source(built, step)
    b = body(src)
    assert "mbarrier.try_wait.parity" in src
    waits = re.findall(r"tvm_builtin_cuda_mbarrier_wait\w*\(([^;]*)\);", b)
    uses_tma = step >= "v4"
    assert len(waits) == (2 if uses_tma else 1), waits
    assert sum("phase_mma" in w for w in waits) == 1
    assert sum("phase_tma" in w for w in waits) == (1 if uses_tma else 0)


@pytest.mark.parametrize("step", STEPS)
def test_tma_only_from_step_4(built, step):
    src = source(built, step)
    b = body(src)
    if step >= "v4":
        assert "cp.async.bulk.tensor" in src
        assert "CUtensorMap" in src
        assert calls(b, "cp_async_bulk_tensor_s2g") == 1  # the TMA store of D
        cfg = GemmConfig(**BASE[step])
        assert "mbarrier.arrive.expect_tx" in src
        assert f"(uint){cfg.stage_bytes})" in b  # expect_tx = one stage of A + B
    else:
        assert "cp.async.bulk.tensor" not in src
        assert "CUtensorMap" not in src
        assert "expect_tx" not in src


@pytest.mark.parametrize("step", STEPS)
def test_bulk_store_group_committed_and_drained(built, step):
    src = source(built, step)
    b = body(src)
    if step >= "v4":
        assert "cp.async.bulk.commit_group;" in src
        assert "cp.async.bulk.wait_group 0;" in src
        store = b.index("cp_async_bulk_tensor_s2g")
        commit = b.index("cp_async_bulk_commit_group", store)
        assert b.index("cp_async_bulk_wait_group", commit) > commit
    else:
        assert "cp.async.bulk" not in src


def test_stage_ring_from_step_5(built):
    """v4 loads once per k; v5 adds the prefetch before the K loop (2 more TMA
    issue sites) and waits on ``tma_bar[stage]`` with ``stage = k % PIPE_DEPTH``."""
    v4, v5, v5d1 = (body(source(built, k)) for k in ("v4", "v5", "v5-depth1"))
    assert calls(v4, "cp_async_bulk_tensor_g2s") == 2
    assert calls(v5, "cp_async_bulk_tensor_g2s") == 4
    assert calls(v5d1, "cp_async_bulk_tensor_g2s") == 4
    assert len(PHASE_TMA_FLIP.findall(v5)) == 1
    # PIPE_DEPTH = 2: the tma_bar index depends on k; depth 1: always tma_bar[0]
    tma_wait = re.search(r"mbarrier_wait\w*\(([^;]*phase_tma[^;]*)\);", v5).group(1)
    assert re.search(r"\bk\b", tma_wait), tma_wait
    tma_wait_d1 = re.search(r"mbarrier_wait\w*\(([^;]*phase_tma[^;]*)\);", v5d1).group(1)
    assert not re.search(r"\bk\b", tma_wait_d1), tma_wait_d1


def test_persistent_loop_only_in_step_6(built):
    for step in STEPS:
        b = body(source(built, step))
        if step == "v6":
            assert re.search(r"while \(1\)", b)
            assert "tile_scheduler" in b
            assert "blockIdx.y" not in b  # 1-D grid of persistent CTAs
            # the scheduler's work index advances by the number of persistent CTAs
            assert re.search(rf"(\w+)\[0\] = \(\1\[0\] \+ {V6_CTAS}\);", b)
        else:
            assert "while (" not in b
            assert "tile_scheduler" not in b
    assert "blockIdx.y" in body(source(built, "v3"))  # the 2-D grid of step 3


TENSORMAP_PARAM = re.compile(r"const __grid_constant__ CUtensorMap (\w+_tensormap)(?:_\d+)?(?=[,)])")


def tensormaps_merged(src: str) -> str:
    """``src`` with each tensor's TMA descriptors named as one: TVM sometimes emits two
    parameters for the same tensor's loads (``B_tensormap``, ``B_tensormap_1``) and sometimes
    one, from build to build of the same kernel (seen in a full parallel run: v6 with two, its
    noflip build with one) -- a difference in naming, not in what the kernel does."""
    def signature(line: str) -> str:
        params = TENSORMAP_PARAM.findall(line)
        if not params:
            return line
        head = line[:line.index("const __grid_constant__")]
        tail = line[line.rindex("_tensormap") + len("_tensormap"):].lstrip("_0123456789")
        return head + ", ".join(f"const __grid_constant__ CUtensorMap {p}" for p in dict.fromkeys(params)) + tail
    return re.sub(r"(\w+_tensormap)_\d+\b", r"\1", "\n".join(signature(line) for line in src.splitlines()))


def test_merging_tensormap_names_keeps_every_other_difference():
    two = ("void k(const __grid_constant__ CUtensorMap B_tensormap, const __grid_constant__ CUtensorMap B_tensormap_1, "
           "const __grid_constant__ CUtensorMap D_tensormap) {\n  load(&(B_tensormap_1), k);\n  x = x ^ 1;")
    one = ("void k(const __grid_constant__ CUtensorMap B_tensormap, const __grid_constant__ CUtensorMap D_tensormap) {\n"
           "  load(&(B_tensormap), k);\n  x = x ^ 1;")
    assert tensormaps_merged(two) == tensormaps_merged(one)
    assert tensormaps_merged(two) != tensormaps_merged(one.replace("x ^ 1", "x"))


@pytest.mark.parametrize("step", ("v2", "v3", "v4", "v5", "v6"))
def test_skip_mma_phase_flip_removes_exactly_the_flip(built, step):
    flip, noflip = (tensormaps_merged(source(built, k)) for k in (step, f"{step}-noflip"))
    assert len(PHASE_MMA_FLIP.findall(flip)) == 1
    assert not PHASE_MMA_FLIP.findall(noflip)
    diff = [d for d in difflib.ndiff(flip.splitlines(), noflip.splitlines()) if d[:2] in ("- ", "+ ")]
    assert len(diff) == 1 and diff[0].startswith("- ") and PHASE_MMA_FLIP.search(diff[0]), diff
    if step >= "v4":
        assert PHASE_TMA_FLIP.search(noflip)  # the TMA phase still flips


def test_v6_reset_phase_per_tile_vs_carry(built):
    carry, reset = body(source(built, "v6")), body(source(built, "v6-reset"))
    for b in (carry, reset):
        assert len(PHASE_MMA_FLIP.findall(b)) == 1 and len(PHASE_TMA_FLIP.findall(b)) == 1
    loop_c, loop_r = carry.index("while (1)"), reset.index("while (1)")
    # the seed's literal code re-zeroes the phases inside the tile loop ...
    assert reset.index("phase_tma_ptr[0] = 0;") > loop_r
    assert reset.index("phase_mma_ptr[0] = 0;") > loop_r
    assert "k_iter" not in reset
    # ... the fix zeroes them once, before it, and indexes the ring by a running count
    assert carry.index("phase_tma_ptr[0] = 0;") < loop_c
    assert carry.index("phase_mma_ptr[0] = 0;") < loop_c
    assert carry.count("phase_tma_ptr[0] = 0;") == 1 and carry.count("phase_mma_ptr[0] = 0;") == 1
    assert re.search(r"k_iter\w*\[0\] = \(k_iter\w*\[0\] \+ 1\);", carry)
    tma_wait = re.search(r"mbarrier_wait\w*\(([^;]*phase_tma[^;]*)\);", carry).group(1)
    assert "k_iter" in tma_wait


@pytest.mark.parametrize("step", STEPS)
def test_correctness_fences_added(built, step):
    """What the port adds to the seed: tcgen05.fence::after_thread_sync after the
    MMA wait; v1-v3 fence the thread-written A/B tiles to the async proxy."""
    b = body(source(built, step))
    mma_wait = re.search(r"mbarrier_wait\w*\([^;]*phase_mma[^;]*\);\s*(\w+)\(", b)
    assert mma_wait and "fence__after_thread_sync" in mma_wait.group(1), b[:200]
    # first fence.proxy.async follows the barrier init; v1-v3 fence again before the MMA
    proxy_fences = calls(b, "fence_proxy_proxy_async")
    assert proxy_fences == 2, proxy_fences  # v1-v3: init + A/B tile; v4+: init + Dsmem


# --------------------------------------------------------------------------- #
# Configurations a step cannot build (checked before any tvm parsing).
@pytest.mark.parametrize(
    "step, cfg, field",
    [
        ("v1", {"M": 128, "N": 128, "K": 128}, "K"),
        ("v1", {"M": 256, "N": 128, "K": 64}, "M"),
        ("v2", {"M": 128, "N": 256, "K": 256}, "N"),
        ("v4", {"M": 256, "N": 256, "K": 256, "expect_tx_delta": 16}, "expect_tx_delta"),
        ("v6", {"M": 256, "N": 256, "K": 256, "BLK_N": 256, "PIPE_DEPTH": 4}, "PIPE_DEPTH"),
    ],
)
def test_unbuildable_configs_raise_config_error(step, cfg, field):
    from kernels.tirx.seed_sm100 import SEED_STEPS

    with pytest.raises(ConfigError) as info:
        SEED_STEPS[step](GemmConfig(**cfg))
    assert info.value.field == field
