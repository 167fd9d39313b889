"""The roof (protosim/roof.py): nothing recorded on silicon ran below it, and the model never
predicts below it (issue 16: "no prediction above a measured roof")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.crosscheck import case_of
from protosim.roof import roof
from protosim.verdict import judge

H200 = load_profile("h200")
TIMING = Path(__file__).resolve().parent.parent / "results" / "silicon" / "timing"


def test_the_tensor_core_roof_counts_instructions_at_the_measured_rate():
    # one 128x128 tile, K = 1024: 2 m64 halves x 64 k16 steps of m64n128k16, 65 cycles apart on the H200
    r = roof(GemmConfig(M=128, N=128, K=1024, arch="h200", l2_at_launch="inputs"), H200)
    assert r.mma_us == pytest.approx(2 * 64 * (H200.mma_issue_base + 128 * H200.mma_issue_per_n) / (H200.clock_ghz * 1e3))
    assert r.dram_us == 0 and r.bound == "tensor cores"
    assert r.us == pytest.approx(r.mma_us + H200.launch_fixed_us)


def test_tiles_beyond_the_sms_take_whole_extra_turns():
    one = roof(GemmConfig(M=128 * 132, N=128, K=1024, arch="h200"), H200)   # 132 tiles: one each
    more = roof(GemmConfig(M=128 * 133, N=128, K=1024, arch="h200"), H200)  # 133: one SM does two
    assert more.mma_us == pytest.approx(2 * one.mma_us)
    few = roof(GemmConfig(M=128 * 8, N=128, K=1024, arch="h200", sm_count=4), H200)  # a persistent grid of 4
    assert few.mma_us == pytest.approx(2 * one.mma_us)


def test_a_full_chip_gemm_is_bound_by_the_best_gemm_measured():
    r = roof(GemmConfig(M=4096, N=4096, K=4096, arch="h200", l2_at_launch="inputs"), H200)
    assert r.bound == "best measured GEMM"
    assert r.best_us == pytest.approx(2 * 4096**3 / (H200.best_gemm_tflops * 1e6))
    # on an arch with no measured GEMM there is no such roof
    assert roof(GemmConfig(M=4096, N=4096, K=4096, arch="b200"), load_profile("b200")).best_us == 0


def test_cold_inputs_bound_by_dram():
    cold = roof(GemmConfig(M=4096, N=4096, K=64, arch="h200", l2_at_launch="cold"), H200)
    warm = roof(GemmConfig(M=4096, N=4096, K=64, arch="h200", l2_at_launch="inputs"), H200)
    assert warm.dram_us == 0 and cold.dram_us == pytest.approx(2 * 4096 * 64 * 2 / H200.hbm_bytes_per_clk / (H200.clock_ghz * 1e3))


def test_no_recorded_kernel_ran_below_its_roof():
    """Every correct launch timed kernel-only on the H200 (results/silicon/timing): a measurement
    below the roof would mean the roof's rates are wrong."""
    n = 0
    for path in sorted(TIMING.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("kind", "outcome") != "outcome" or r.get("outcome") != "correct" or not isinstance(r.get("kernel_ms"), dict):
                continue
            case = case_of(r)
            measured = r["kernel_ms"]["median"] * 1000
            assert measured >= roof(case.config, H200).us, case.label()
            n += 1
    assert n > 500


@pytest.mark.parametrize("builder, cfg", [
    ("hgemm_v4", dict(M=256, N=256, K=512)),
    ("hgemm_v5", dict(M=256, N=128, K=1024, PIPE_DEPTH=4)),
    ("hgemm_v6", dict(M=512, N=256, K=512, sm_count=4, PIPE_DEPTH=3)),
    ("hgemm_ws", dict(M=256, N=256, K=1024, sm_count=4, PIPE_DEPTH=4)),
    ("hgemm_v3", dict(M=256, N=256, K=256, BLK_N=64)),
    ("hgemm_v4", dict(M=1024, N=1024, K=128, l2_at_launch="cold")),
])
def test_the_model_never_predicts_below_the_roof(builder, cfg):
    config = GemmConfig(arch="h200", **cfg)
    verdict, _ = judge(BUILDERS[builder](config))
    assert verdict.timing.kernel_us >= roof(config, H200).us


def test_the_timing_report_names_predictions_and_measurements_below_the_roof():
    from protosim.crosscheck import config_timing, render_config_timing

    points = [{"label": "fast model", "step": "v4", "shape": [1, 1, 1], "sim_us": 5.0, "measured_us": 9.0, "roof_us": 6.0},
              {"label": "fast silicon", "step": "v5", "shape": [1, 1, 1], "sim_us": 8.0, "measured_us": 5.5, "roof_us": 6.0},
              {"label": "fine", "step": "v6", "shape": [1, 1, 1], "sim_us": 8.0, "measured_us": 9.0, "roof_us": 6.0}]
    t = config_timing(points)
    assert t["roof"]["predictions_below"] == ["fast model"]
    assert t["roof"]["measurements_below"] == ["fast silicon"]
    text = render_config_timing(t)
    assert "1 of 3 predictions below it (fast model)" in text and "1 measurements below it (fast silicon)" in text
