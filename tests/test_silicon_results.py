"""Recorded H200 runs (results/silicon/*.jsonl) are data the rest of the project
reads: every line parses, says what ran and on what, and every launch of a
correct variant (no bug knob set) came out correct."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernels.plans import PLANS, Job
from kernels.runner.gemm import plan_tasks
from kernels.spec import BARRIER_NAMES, ROLE_NAMES
from protosim.config import GemmConfig

RESULTS = Path(__file__).resolve().parents[1] / "results" / "silicon"
OUTCOMES = {"correct", "wrong", "timeout", "fault"}
PROVENANCE = ("schema", "time", "commit", "gpu", "driver", "torch", "tvm", "cuda")


def records() -> list[tuple[str, dict]]:
    rows = []
    for path in sorted(RESULTS.glob("*.jsonl")) + sorted(RESULTS.glob("timing/*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            rows.append((f"{path.name}:{n}", json.loads(line)))
    return rows


def test_there_are_results():
    assert len(records()) >= 100


def test_every_record_says_what_ran_and_where():
    for where, r in records():
        missing = [k for k in (*PROVENANCE, "name", "step", "config", "knobs", "delays", "outcome") if k not in r]
        assert not missing, f"{where}: missing {missing}"
        assert r["outcome"] in OUTCOMES, where
        cfg = GemmConfig.from_dict(r["config"])  # the config is a valid shared config record
        assert cfg.bug_knobs == r["knobs"], f"{where}: knobs disagree with the config"
        assert "H200" in r["gpu"], where


def test_every_launch_of_a_correct_variant_is_correct():
    correct = [(w, r) for w, r in records() if not r["knobs"]]
    assert len(correct) >= 30
    bad = [(w, r["name"], r["outcome"]) for w, r in correct if r["outcome"] != "correct"]
    assert not bad, bad


def test_timeouts_name_barrier_role_and_iteration():
    timeouts = [(w, r) for w, r in records() if r["outcome"] == "timeout" and "host" not in r["timeout"]]
    assert timeouts
    for where, r in timeouts:
        t = r["timeout"]
        assert t["barrier"] in BARRIER_NAMES.values() and t["role"] in ROLE_NAMES.values(), where
        assert 0 <= t["k"] and 0 <= t["stage"] < GemmConfig.from_dict(r["config"]).PIPE_DEPTH + 1, where


def test_wrong_records_list_tiles_inside_the_grid():
    for where, r in records():
        cfg = GemmConfig.from_dict(r["config"])
        for m, n in r.get("wrong_tiles", []):
            assert 0 <= m < cfg.m_tiles and 0 <= n < cfg.n_tiles, where
        if r["outcome"] == "wrong":
            assert r["wrong_tiles"], where


def test_bench_records_compare_with_torch_in_one_run():
    bench = [r for _, r in records() if r["kind"] == "bench"]
    assert bench
    for r in bench:
        b = r["bench"]
        assert b["tflops"] > 0 and b["torch_tflops"] > 0
        assert abs(b["ratio_vs_torch"] - b["torch_ms"] / b["ms"]) < 0.01


def test_plans_round_trip_and_fault_prone_launches_run_alone():
    jobs = PLANS["silicon"]()
    assert all(Job.from_dict(j.to_dict()) == j for j in jobs)
    manifest = [dict(j.to_dict(), name=j.spec.name) for j in jobs]
    groups = plan_tasks(manifest, None)
    assert sum(len(g) for g in groups) == sum(j.launches for j in jobs)
    for group in groups:
        faulty = [manifest[i]["may_fault"] for i, _ in group]
        assert all(not f for f in faulty) or len(group) == 1


@pytest.mark.parametrize("only", ["each_warp", "correct"])
def test_plan_filter_selects_by_name(only):
    jobs = PLANS["silicon"]()
    manifest = [dict(j.to_dict(), name=j.spec.name) for j in jobs]
    picked = {manifest[i]["name"] for g in plan_tasks(manifest, only) for i, _ in g}
    assert picked and all(only in name for name in picked)


@pytest.mark.skipif(Path("/dev/nvidia0").exists(), reason="a machine with a GPU would really run the job")
def test_runner_without_a_gpu_says_so_and_records_nothing(tmp_path):
    import subprocess
    import sys

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    job = PLANS["smoke"]()[0]
    (bundle / "manifest.json").write_text(json.dumps([dict(job.to_dict(), name=job.spec.name, key=job.spec.key, so="kernels/x.so")]))
    out = tmp_path / "r.jsonl"
    res = subprocess.run([sys.executable, "-m", "kernels.runner.gemm", "--bundle", str(bundle), "--out", str(out)],
                         cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=1800)
    assert res.returncode == 2
    assert "cannot start the GPU runtime" in res.stderr and "nothing was run" in res.stderr
    assert not out.exists() or out.read_text() == ""
