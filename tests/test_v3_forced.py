"""kernels.microbench.v3_parts' forced occupancy (``--set forced``, the runner's ``--forced``): the
padded shared memory allows exactly the CTAs an SM it is asked for, by the rule the model applies
and with the H200's numbers the GPU side carries, and the runs go from the grid's own count down to one."""

from __future__ import annotations

import dataclasses

import pytest

from kernels.microbench import v3_parts
from kernels.microbench.v3_parts import CTAS_PER_SM, H200_SMEM, forced_plan, forced_smem
from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.engine.machine import Machine, smem_bytes
from protosim.ir import BufferDecl


def test_the_gpu_sides_numbers_are_the_profiles():
    h200 = load_profile("h200")
    assert H200_SMEM == (h200.smem_per_sm_bytes, h200.smem_reserved_per_cta_bytes, h200.smem_per_cta_bytes)


@pytest.mark.parametrize("bn", [64, 128])
@pytest.mark.parametrize("per_sm", [1, 2, 3, 4])
def test_padded_to_forced_smem_a_v3_cta_fits_exactly_that_many_times(bn, per_sm):
    s = BUILDERS["hgemm_v3"](GemmConfig(M=256, N=256, K=256, BLK_N=bn, arch="h200"))
    assert smem_bytes(s) < forced_smem(per_sm)
    padded = dataclasses.replace(s, buffers=s.buffers + (BufferDecl("pad", "smem", bytes=forced_smem(per_sm) - smem_bytes(s)),))
    assert smem_bytes(padded) == forced_smem(per_sm)
    # the registers may allow fewer (BLK_N 128: 3): then the forced count is never asked for
    assert Machine(padded).occupancy() == min(per_sm, CTAS_PER_SM[bn])
    assert forced_smem(per_sm) + H200_SMEM[1] <= H200_SMEM[0] // per_sm  # the hardware's rule too


@pytest.mark.parametrize("bn, grid, plan", [
    (128, 1024, [None, 2, 1]),        # 3 an SM by registers: then 2, 1
    (64, 2048, [None, 4, 3, 2, 1]),   # 5 by registers
    (128, 256, [None, 1]),            # the grid gives ~2 an SM
    (64, 128, [None]),                # one an SM already
])
def test_the_runs_go_from_the_grids_own_count_down_to_one(bn, grid, plan):
    assert forced_plan(bn, grid) == plan


def test_an_unknown_set_and_a_folder_without_forced_cubins_are_refused(tmp_path, capsys):
    assert v3_parts.main(["--set", "nonesuch", str(tmp_path)]) == 2
    assert "no set 'nonesuch'" in capsys.readouterr().err
    assert v3_parts.main(["--predict-forced", str(tmp_path)]) == 2
    assert "no --set forced cubin" in capsys.readouterr().err
    assert v3_parts.main(["--predict-forced", str(tmp_path / "missing")]) == 2
