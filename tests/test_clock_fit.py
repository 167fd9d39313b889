"""kernels.runner.clock_fit: the loaded tensor clock's constants from cta_drift k-loop clocks."""

from __future__ import annotations

import json

import numpy as np

from kernels.runner import clock_fit
from protosim.arch import load_profile

H200 = load_profile("h200")


def test_least_absolute_fit_recovers_the_rule_past_outliers():
    rng = np.random.default_rng(5)
    x = rng.uniform(3, 230, 60)
    a, b = 1.80, 2.0e-4
    clock = a / (1 + b * x) + rng.normal(0, 0.002, len(x))
    clock[:5] -= 0.12  # in-step grids that pay clock switches: far below the rule
    got_a, got_b = clock_fit.fit_least_absolute(x, clock)
    assert abs(got_a - a) < 0.004 and abs(got_b - b) / b < 0.1
    ls = np.linalg.lstsq(np.c_[np.ones(len(x)), -x * clock], clock, rcond=None)[0]
    assert abs(got_b - b) < abs(ls[1] - b)  # squares let the outliers pull; absolute values do not


def _record(grid, threads, stamped, **extra):
    return {"kind": "cta_drift", "step": "v5", "config": {"M": 256, "N": 256, "K": 512, "BLK_N": 32, "PIPE_DEPTH": 2},
            "grid": grid, "threads": threads, "stamped": stamped} | extra


def test_launch_rows_take_ctas_an_sm_from_shared_memory_and_the_grid():
    small, big = 20_000, 120_000
    records = [
        _record(4096, 128, [{"smem": small, "loop_clock_ghz": {"p50": 1.70}}, {"smem": big, "loop_clock_ghz": {"p50": 1.78}},
                            {"smem": small}]),  # a row stamped before the clock was: skipped
        _record(8, 128, [{"smem": small, "loop_clock_ghz": {"p50": 1.79}}]),
        _record(4096, 128, [{"smem": small, "loop_clock_ghz": {"p50": 1.5}}], mode="blocked"),
    ]
    rows = clock_fit.launch_rows(records, H200)
    assert [r.loop_clock_ghz for r in rows] == [1.70, 1.78, 1.79]
    fit_small = H200.smem_per_sm_bytes // (small + H200.smem_reserved_per_cta_bytes)
    assert rows[0].ctas_per_sm == min(fit_small, H200.max_threads_per_sm // 128, H200.max_ctas_per_sm) > 1
    assert rows[1].ctas_per_sm == 1  # 120 KB: one an SM
    assert rows[2].ctas_per_sm == 1  # eight CTAs spread over 132 SMs


def test_an_unreadable_record_is_an_error_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert clock_fit.main([str(bad)]) == 2
    assert "cannot read" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(_record(8, 128, [])) + "\n")
    assert clock_fit.main([str(empty)]) == 2


def test_launches_that_replay_alike_are_one_replay_and_it_reads_rate_and_iteration():
    config = {"M": 256, "N": 256, "K": 512, "BLK_N": 64, "PIPE_DEPTH": 2}
    a, b = clock_fit.launch_rows([_record(8, 128, [{"smem": 120_000, "loop_clock_ghz": {"p50": 1.79}, "iteration_cycles_median": 1100},
                                                    {"smem": 200_000, "loop_clock_ghz": {"p50": 1.78}, "iteration_cycles_median": 1120}],
                                          config=config)], H200)
    assert a == b and len({a, b}) == 1  # the measurements differ, the replay is the same
    cycles, flops, iteration = clock_fit.replay_launch(a)
    assert flops == 2 * 256 * 256 * 512
    k_tiles = 512 // 64
    assert 0 < iteration and cycles > iteration * (k_tiles - 1)
