"""benchmarks/lockstep_share.py: its shares are shares of the replay it ran, and bad input is
one usage line (exit 2)."""

from __future__ import annotations

import json

from conftest import run_benchmark


def _run(*args: str):
    return run_benchmark("lockstep_share.py", *args)


def test_one_config_counts_its_followers():
    done = _run("--step", "hgemm_v4", "--arch", "b200", "--shape", "256,256,256", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    from protosim.builders import BUILDERS
    from protosim.config import GemmConfig
    from protosim.engine.machine import replay

    result = replay(BUILDERS["hgemm_v4"](GemmConfig(M=256, N=256, K=256, arch="b200")))
    assert row["events"] == len(result.log)
    assert row["follower_events"] == sum(1 for e in result.log if ".w" in e.who and not e.who.endswith(".w0"))
    # the seed's v4: four warps of one role, warps 1-3 wait at every wait warp 0 does
    waits = result.log.of_kind("wait")
    assert row["follower_waits"] == sum(1 for e in waits if not e.who.endswith(".w0")) > 0
    assert 0 <= row["same_begin"] <= row["follower_waits"] and 0 <= row["same_return"] <= row["follower_waits"]
    assert 0 < row["follower_resumes"] < row["resumes"]
    assert 0 < row["follower_s"] < row["in_warps_s"] <= row["replay_s"]


def test_bad_input_is_one_usage_line():
    for args in (["--arch", "nope"], ["--shape", "1,2"], ["--step", "triton_pipeline"],
                 ["--step", "hgemm_v9", "--shape", "256,256,256"]):
        done = _run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip().splitlines()[-1].startswith("lockstep_share.py: error: "), (args, done.stderr)
        assert "Traceback" not in done.stderr
