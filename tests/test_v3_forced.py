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


class _FakeTensor:
    T = property(lambda self: self)

    def data_ptr(self):
        return 0

    def float(self):
        return self

    def __matmul__(self, other):
        return self

    def __sub__(self, other):
        return self

    def abs(self):
        return self

    def max(self):
        return self

    def item(self):
        return 0.0

    def fill_(self, _):
        return self

    def zero_(self):
        return self

    def __getitem__(self, _):
        return self


class _FakeTorch:
    float16 = int32 = None

    class cuda:
        @staticmethod
        def current_stream():
            return type("S", (), {"cuda_stream": 0})()

        @staticmethod
        def synchronize():
            pass

    @staticmethod
    def randn(*a, **k):
        return _FakeTensor()

    empty = zeros = randn


def test_the_forced_runs_launch_the_grid_at_each_padded_size(monkeypatch, tmp_path):
    """measure_forced with the GPU faked: each forced grid's cubin present is launched over its whole
    grid at its own shared memory, then at forced_smem of each smaller count, under one attribute
    large enough for all; a grid whose cubin is absent is skipped."""
    import kernels.runner.v3_parts as R

    launches, attributes = [], []

    class FakeDriver:
        def function(self, cubin, name, smem):
            attributes.append(smem)
            return name

        def launcher(self, fn, grid, block, smem, stream, args):
            launches.append((grid, block, smem, len(args)))
            return lambda: None

    monkeypatch.setattr(R, "Driver", FakeDriver)
    monkeypatch.setattr(R.T, "kernel_time", lambda torch, launch, **k: {"median": 0.2, "min": 0.2})
    present = v3_parts.FORCED_CONFIGS[:2]  # 4096^2 x 1024 at BLK_N 128 and 64; the 2048^2 grids left out
    for m, n, k, bn in present:
        (tmp_path / f"v3_parts_{m}x{n}x{k}_n{bn}_p3.sm_90a.cubin").write_bytes(b"")
    rows = R.measure_forced(_FakeTorch, tmp_path, reps=1)
    expect = []
    for m, n, k, bn in present:
        grid = (m // 128) * (n // bn)
        expect += [(grid, 128, R.SMEM[bn] if c is None else forced_smem(c), 8) for c in forced_plan(bn, grid)]
    assert launches == expect
    assert attributes == [forced_smem(1)] * len(present) and all(s <= forced_smem(1) for _, _, s, _ in launches)
    assert [r["forced_ctas_per_sm"] for r in rows] == [None, 2, 1, None, 4, 3, 2, 1]
    assert all(r["parts"] == 3 and r["inputs"] == "written once" and r["max_abs_error"] == 0.0 for r in rows)
