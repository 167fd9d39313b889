"""The runner's classification, on the CPU: which output tiles are wrong."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is the GPU runner's dependency, not the simulator's; install torch==2.13.0 to run this")

from kernels.runner.gemm import REL_TOL, _tile_errors


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


def test_trace_summary_pairs_events_of_the_same_k_tile():
    from kernels.runner.gemm import _trace_summary

    rows = torch.tensor([[1, 0, 100, 0], [1, 1, 150, 0], [7, 0, 700, 0], [7, 1, 900, 0], [2, 0, 720, 0],
                         [3, 0, 730, 0], [4, 0, 1730, 0], [8, 0, 1750, 0]], dtype=torch.int64)
    rows = torch.cat([rows, torch.zeros(4, 4, dtype=torch.int64)])  # unused rows are zero
    s = _trace_summary(torch, rows)
    assert s["rows"] == 8
    m = s["mean_cycles"]
    assert m["tma_issue_to_load_complete"] == ((700 - 100) + (900 - 150)) / 2
    assert m["load_complete_to_wait_return"] == 20 and m["mma_issue_to_done"] == 1000 and m["mma_issue_to_mma_complete"] == 1020
    assert m["store_issue_to_done"] is None
    assert s["events"]["tma_issue"] == 2 and s["span_cycles"] == 1650
