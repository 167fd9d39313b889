"""The runner's classification, on the CPU: which output tiles are wrong."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is the GPU runner's dependency, not the simulator's; install torch==2.13.0 to run this")

from kernels.run import REL_TOL, _tile_errors


def test_tile_errors_name_exactly_the_corrupted_tiles():
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(256, 384, generator=g)
    d = ref.half()
    d[128:256, 0:128] += 1.0           # tile (1, 0): wrong values
    d[0:128, 256:384] = float("nan")   # tile (0, 2): never written
    wrong, worst = _tile_errors(torch, d, ref, 128, 128)
    assert sorted(wrong) == [[0, 2], [1, 0]]
    assert worst == float("inf")


def test_fp16_rounding_alone_is_not_wrong():
    g = torch.Generator().manual_seed(2)
    ref = torch.randn(128, 256, generator=g) * 100
    wrong, worst = _tile_errors(torch, ref.half(), ref, 128, 128)
    assert wrong == [] and worst < REL_TOL / 10
