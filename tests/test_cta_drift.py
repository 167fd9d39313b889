"""kernels.microbench.cta_drift: the drift stamps land at the top of the MMA k-loop, the segment
stamps at v5's five points in order, both off unless PROTOSIM_DRIFT says so (the as-built variant
is TVM's source unchanged), and sources of another shape are refused; the runner's gap statistics.

The source is abridged from the shape TVM 0.27 generates for kernels/tirx/hopper.py's v5 (the real
ones are stamped by the build, which checks the unstamped cubin against TVM's own SASS)."""

from __future__ import annotations

import json
import re

import pytest

from kernels.microbench.cta_drift import SEGMENTS, add_drift_stamps, add_segment_stamps
from kernels.runner.cta_drift import nearest_gaps, summary

FENCE = "tvm_builtin_ptx_wgmma_fence_fence_sync_aligned();"
WAIT0 = "tvm_builtin_ptx_wgmma_wait_group_wait_group_sync_aligned_0();"
TMA = "tvm_builtin_ptx_cp_async_bulk_tensor_g2s_cluster_async_bulk_tensor_2d(A);"
EXPECT = "tvm_builtin_ptx_mbarrier_arrive_expect_tx_arrive_expect_tx_shared_b64(bar);"
HEAD = ('extern "C" __global__ void __launch_bounds__(128) kernel_kernel(int* diag_ptr);\n'
        'extern "C" __global__ void __launch_bounds__(128) kernel_kernel(int* diag_ptr) {\n')

V5 = HEAD + f"""\
  for (int s_1 = 0; s_1 < 2; ++s_1) {{
    {TMA}
    {EXPECT}
  }}
  for (int k = 0; k < 16; ++k) {{
    wait_stage();
    {FENCE}
    wgmma();
    {WAIT0}
    round_trip();
    if (k < 14) {{
      if (((int)threadIdx.x) == 0) {{
        {TMA}
        {EXPECT}
      }}
    }}
  }}
  epilogue();
}}
"""

V4_LIKE = HEAD + f"""\
  for (int k = 0; k < 16; ++k) {{
    {TMA}
    {FENCE}
    wgmma();
  }}
}}
"""


def preprocess(source: str, value: int) -> str:
    """What the C preprocessor keeps with ``PROTOSIM_DRIFT`` defined to ``value``."""
    out, keep = [], [True]
    for line in source.splitlines():
        m = re.fullmatch(r"#if PROTOSIM_DRIFT( == (\d+))?", line)
        if m:
            keep.append(keep[-1] and (value == int(m.group(2)) if m.group(2) else bool(value)))
        elif line == "#endif":
            keep.pop()
        elif keep[-1]:
            out.append(line)
    return "\n".join(out) + "\n"


def lines_with(text: str, needle: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if needle in line]


@pytest.fixture(scope="module")
def stamped() -> str:
    return add_segment_stamps(add_drift_stamps(V5, 16, 1024), 16, 1024)


def test_off_the_source_is_tvms(stamped):
    assert preprocess(stamped, 0) == V5


def test_drift_stamps_at_the_loop_top_only_when_on(stamped):
    one = preprocess(stamped, 1)
    assert "__device__ long long protosim_drift_ns[16384];" in one
    assert "__device__ long long protosim_drift_sm[1024];" in one
    assert "protosim_segments" not in one
    loop = lines_with(one, "for (int k = 0; k < 16; ++k)")[0]
    first_stamp = lines_with(one, "protosim_drift_ns[((int)blockIdx.x) * 16 + k]")[0]
    assert loop < first_stamp < lines_with(one, "wait_stage();")[0]


def test_segment_stamps_in_order(stamped):
    two = preprocess(stamped, 2)
    assert f"protosim_segments[{16 * 1024 * len(SEGMENTS)}]" in two
    at = [lines_with(two, f"* {len(SEGMENTS)} + {j}] = clock64();")[0] for j in range(len(SEGMENTS))]
    assert at == sorted(at)
    landmarks = [lines_with(two, "for (int k = 0;")[0], lines_with(two, FENCE)[0], lines_with(two, WAIT0)[0],
                 lines_with(two, TMA)[1], lines_with(two, EXPECT)[1]]
    assert at[0] > landmarks[0] and at[1] < landmarks[1] and at[2] > landmarks[2]
    assert at[3] < landmarks[3] and at[4] > landmarks[4]
    assert at[1] > lines_with(two, "wait_stage();")[0]  # the stage's wait is in the first segment
    assert len(lines_with(two, "= clock64();")) == len(SEGMENTS) + 1  # and the drift stamp's clock


def test_other_shapes_refused():
    with pytest.raises(ValueError, match="not a v5 loop"):
        add_segment_stamps(V4_LIKE.replace(TMA, "load();"), 16, 4)
    with pytest.raises(ValueError, match="one k-loop"):
        add_drift_stamps(HEAD + "  for (int k = 0; k < 4; ++k) {\n    mma();\n  }\n}\n", 4, 1)


def test_nearest_gaps_pair_each_iteration_with_its_group():
    times = [[0, 100], [10, 130], [50, 90], [1000, 1100]]
    groups = [0, 0, 1, 0]
    # group 0 at k=0: 0, 10, 1000 -> gaps 10, 10, 990; at k=1: 100, 130, 1100 -> 30, 30, 970; group 1 alone
    assert sorted(nearest_gaps(times, groups)) == [10, 10, 30, 30, 970, 990]


def test_summary_shares_within():
    s = summary([0, 32, 32, 96, 600])
    assert s["n"] == 5 and s["max"] == 600 and s["p50"] == 32
    assert s["within_125"] == pytest.approx(0.8) and s["within_500"] == pytest.approx(0.8)
    assert summary([]) == {}


# -- the model's side of the --blocked records (kernels/runner/cta_drift_replay.py) -----------------
def _blocked_row(grid: int, sms: int) -> dict:
    return {"kind": "cta_drift", "mode": "blocked", "step": "v5", "grid": grid, "gemm_sms": sms,
            "config": {"M": 256, "N": 256, "K": 512, "BLK_N": 32, "PIPE_DEPTH": 2}, "iteration_cycles_median": 1000.0}


def test_the_replayed_k_iteration_grows_when_the_same_ctas_share_sms():
    from kernels.runner.cta_drift_replay import replay_row

    apart, apart_by_k = replay_row(_blocked_row(4, 4))
    together, _ = replay_row(_blocked_row(4, 1))
    assert 500 < apart < 2000  # a v5 k-iteration, not a gap between a tile's two loads
    assert together > apart * 1.05  # four CTAs an SM stretch each other's local work
    # K 512: eight k-tiles, seven gaps between loop tops; the first waits for the prologue's loads
    assert len(apart_by_k) == 7
    assert apart_by_k[0] > 1.2 * apart_by_k[-1]
    assert min(apart_by_k) <= apart <= max(apart_by_k)


def test_loop_tops_need_a_wgmma_role():
    from kernels.runner.cta_drift_replay import loop_tops
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.engine.machine import replay

    with pytest.raises(ValueError, match="wgmma"):
        loop_tops(replay(BUILDERS["hgemm_v2"](GemmConfig(K=256))))


def test_replay_refuses_a_file_without_blocked_rows(tmp_path, capsys):
    from kernels.runner.cta_drift_replay import main

    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"kind": "cta_drift", "mode": "default"}) + "\n")
    assert main([str(path)]) == 2
    assert "no cta_drift --blocked rows" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.jsonl")]) == 2


def test_the_build_names_its_sets_and_refuses_another(tmp_path, capsys):
    from kernels.microbench.cta_drift import SETS, main, name_of

    assert main([str(tmp_path / "out"), "--set", "nope"]) == 2
    assert "no set 'nope'" in capsys.readouterr().err and not (tmp_path / "out").exists()
    names = [name_of(*c) for configs in SETS.values() for c in configs]
    assert len(names) == len(set(names))  # no two configs of any sets share a cubin name
    assert {c[1] for c in SETS["m_sweep"] if c[0] == "v4"} == {512, 1024, 2048, 4096}


WS_LIKE = HEAD + f"""\
  alignas(64) int tile_no_ptr[1];
  alignas(64) int m_idx_ptr[1];
  alignas(64) int n_idx_ptr[1];
  while (1) {{
    m_idx_ptr[0] = next_m();
    n_idx_ptr[0] = next_n();
    for (int k = 0; k < 4; ++k) {{
      wait_stage();
      {FENCE}
      wgmma();
    }}
    tile_no_ptr[0] = (tile_no_ptr[0] + 1);
  }}
}}
"""


def test_tile_stamps_index_the_walk_and_record_the_tile():
    from kernels.microbench.cta_drift import add_tile_drift_stamps

    text = add_tile_drift_stamps(WS_LIKE, 4, 132, 8)
    assert preprocess(text, 0) == WS_LIKE
    on = preprocess(text, 1)
    assert "protosim_drift_ns[4224]" in on and "protosim_drift_tile[2112]" in on  # 132 x 8 tiles x 4 k; 2 a tile
    loop_top = lines_with(on, "for (int k = 0; k < 4; ++k)")[0]
    stamp = lines_with(on, "protosim_drift_ns[(((int)blockIdx.x) * 8 + tile_no_ptr[0]) * 4 + k]")[0]
    assert stamp > loop_top and stamp < lines_with(on, FENCE)[0]
    assert lines_with(on, "tile_no_ptr[0] < 8")  # a CTA's tiles past the eighth are not stamped
    with pytest.raises(ValueError, match="not a persistent tile walk"):
        add_tile_drift_stamps(V4_LIKE, 16, 132, 1)


def test_tile_gaps_pair_reads_of_one_tile_by_other_ctas_only():
    from kernels.runner.cta_drift import tile_gaps

    # two CTAs, two tiles each, two k: CTA 0 walks (m0, n0) then (m1, n0); CTA 1 walks (m0, n1), then nothing
    ns = [100, 200, 300, 400, 110, 230, 0, 0]
    tiles = [0, 0, 1, 0, 0, 1, 1, 1]
    assert sorted(tile_gaps(ns, tiles, 2, 2, 2, 0)) == [10, 10, 30, 30]  # m0 at k 0 and 1; m1 read by CTA 0 alone
    assert tile_gaps(ns, tiles, 2, 2, 2, 1) == []  # n0 twice, but both by CTA 0


def test_summary_of_gives_quantiles_and_nothing_for_no_values():
    from kernels.runner.cta_drift import summary_of

    s = summary_of([1.5, 1.79, 1.8, 1.81])
    assert s["n"] == 4 and s["min"] == 1.5 and s["max"] == 1.81 and s["p10"] < s["p50"] < s["p90"]
    assert summary_of([]) == {}
