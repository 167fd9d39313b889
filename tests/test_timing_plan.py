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
