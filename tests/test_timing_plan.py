"""kernels.plans.timing_jobs (issue 16's campaign): reproducible, correct configs only, every
one accepted by the kernels and the simulator, spread over the strata the issue asks for, and
none larger than the prediction budget."""

from __future__ import annotations

from kernels.plans import MAX_TILE_ITERATIONS, NO_DELAY, PLANS, timing_jobs
from kernels.spec import check
from protosim.strategies import Case


def test_the_timing_plan_is_reproducible_and_spans_the_campaign():
    jobs = timing_jobs()
    assert [j.to_dict() for j in jobs] == [j.to_dict() for j in PLANS["timing"]()]
    assert [j.to_dict() for j in jobs] != [j.to_dict() for j in timing_jobs(seed=17)]
    assert len(jobs) >= 80
    steps = {j.spec.step for j in jobs}
    assert steps == {"v2", "v3", "v4", "v5", "v6", "ws"}
    cfgs = [j.spec.config for j in jobs]
    assert {c.BLK_N for c in cfgs} == {16, 32, 64, 128}
    assert {c.PIPE_DEPTH for j, c in zip(jobs, cfgs) if j.spec.step in ("v5", "v6", "ws")} == {1, 2, 3, 4}
    assert {c.sm_count for j, c in zip(jobs, cfgs) if j.spec.step in ("v6", "ws")} >= {8, 33, 66}
    assert any(c.M == c.N == c.K == 4096 for c in cfgs) and any(c.M * c.N == 128 * 128 for c in cfgs)
    assert {j.l2_at_launch for j in jobs} == {"inputs", "cold"}
    for j, c in zip(jobs, cfgs):
        assert not c.bug_knobs and j.delays == NO_DELAY and j.kind == "outcome"
        assert (c.M // c.BLK_M) * (c.N // c.BLK_N) * (c.K // c.BLK_K) <= MAX_TILE_ITERATIONS
        check(j.spec.step, c)  # the Hopper kernels take it


def test_the_simulator_builds_the_small_ones():
    for j in timing_jobs():
        c = j.spec.config
        if c.M * c.N * c.K <= 512 * 512 * 1024:
            assert Case(j.spec.step, c).build().op_count() > 0


def test_a_fresh_draw_leaves_out_what_records_ran_in_either_l2_spelling(tmp_path):
    import json

    from kernels.plans import fresh_timing_jobs, main

    jobs = timing_jobs(1217)
    cold = next(j for j in jobs if j.l2_at_launch == "cold")
    warm = next(j for j in jobs if j.l2_at_launch == "inputs")
    # the runner writes a cold launch as "flushed"; the config as the spec's to_dict gives it
    record = tmp_path / "r.jsonl"
    record.write_text("\n".join(json.dumps({"step": j.spec.step, "config": j.spec.to_dict()["config"], "l2_at_launch": l2})
                                for j, l2 in ((cold, "flushed"), (warm, "inputs"))) + "\nnot json\n")
    fresh = fresh_timing_jobs(1217, [record])
    assert cold not in fresh and warm not in fresh and len(fresh) == len(jobs) - 2
    # the same config under the other L2 state was not run: it stays
    other = tmp_path / "o.jsonl"
    other.write_text(json.dumps({"step": cold.spec.step, "config": cold.spec.to_dict()["config"], "l2_at_launch": "inputs"}))
    assert cold in fresh_timing_jobs(1217, [other])
    out = tmp_path / "plan.json"
    assert main(["--fresh-timing", "1217", "--out", str(out), str(record)]) == 0
    assert len(json.loads(out.read_text())) == len(fresh)
