"""What L2 holds when a kernel starts (``l2_at_launch``) and the race-resolution
replays: the launch condition reaches the engine, the kernels' jobs and the silicon
records the same way, and a race closer than the model's timing error is predicted
both ways."""

from __future__ import annotations

import pytest

from kernels.plans import Job
from kernels.runner.gemm import l2_state
from kernels.spec import KernelSpec
from protosim.config import ConfigError, GemmConfig
from protosim.crosscheck import case_of, job_for, predict
from protosim.engine import Perturbation, race_plan, replay
from protosim.engine.resources import resident_at_launch, tensor_of
from protosim.strategies import Case

KIB = 1024
# M=256, N=128, K=128 in fp16: A 64 KiB, B 32 KiB, D 64 KiB (written in that order)
SMALL = dict(M=256, N=128, K=128, BLK_N=128, PIPE_DEPTH=2, arch="h200")


def test_tensor_of_reads_the_tensor_name_from_tile_keys():
    assert [tensor_of(k) for k in ("A[m=0,k=3]", "B[n=1,k=2]#3", "a@7#2", "D(0, 1)")] == ["A", "B", "a", "D"]


@pytest.mark.parametrize("capacity_kib, resident", [(200, {"A", "B"}), (100, {"B"}), (50, set())])
def test_resident_at_launch_keeps_the_most_recent_writes_that_fit(capacity_kib, resident):
    schedule = Case("v5", GemmConfig(**SMALL)).build()
    # D (64 KiB) was written last; B fits behind it in 96 KiB, A too in 160 KiB.
    assert resident_at_launch(schedule, capacity_kib * KIB) == resident


def test_inputs_in_l2_make_first_touches_hit_and_the_launch_faster():
    cold = replay(Case("v5", GemmConfig(**SMALL, l2_at_launch="cold")).build())
    warm = replay(Case("v5", GemmConfig(**SMALL, l2_at_launch="inputs")).build())
    assert cold.stats.l2_misses > 0 and warm.stats.l2_misses == 0
    assert warm.stats.l2_hits == cold.stats.l2_hits + cold.stats.l2_misses
    assert warm.end_cycle < cold.end_cycle


def test_a_resident_tile_hits_on_its_first_touch_only():
    """What was in L2 at launch is there once: a tile the LRU has evicted since is read from DRAM
    again (the model used to count every later read of a resident tensor's tile as a hit too)."""
    from protosim.arch import load_profile
    from protosim.engine.resources import MemorySystem

    h200 = load_profile("h200")
    mem = MemorySystem(h200, resident=frozenset({"A"}))
    assert mem.read(0.0, "A[0]", 1000)[0]  # in L2 at launch
    for i in range(int(h200.l2_bytes // 1000) + 1):  # a full L2 of other tiles after it
        mem.read(1.0 + i, f"X[{i}]", 1000)
    assert "A[0]" not in mem._lru
    hit, _ = mem.read(1e9, "A[0]", 1000)
    assert not hit and mem.misses == int(h200.l2_bytes // 1000) + 2
    assert mem.read(1e9 + 1, "A[1]", 1000)[0]  # another tile of A: its first touch still hits


def test_a_bad_l2_state_names_the_field():
    with pytest.raises(ConfigError, match="l2_at_launch"):
        GemmConfig.from_dict({"l2_at_launch": "warm"})
    job = job_for(Case("v4", GemmConfig(**SMALL)), None)
    with pytest.raises(ConfigError, match="l2_at_launch"):
        Job.from_dict({**job, "l2_at_launch": "hot"})


def test_the_l2_state_is_a_job_condition_not_part_of_the_binary():
    cold, warm = (Case("v4", GemmConfig(**SMALL, l2_at_launch=s)) for s in ("cold", "inputs"))
    jc, jw = job_for(cold, None), job_for(warm, None)
    assert (jc["l2_at_launch"], jw["l2_at_launch"]) == ("cold", "inputs")
    assert jc["spec"] == jw["spec"] and "l2_at_launch" not in jc["spec"]["config"]
    assert KernelSpec("v4", cold.config).key == KernelSpec("v4", warm.config).key
    job = Job.from_dict(jc)
    assert job.l2_at_launch == "cold"
    manifest_entry = job.to_dict()  # what the bundle's manifest and every launch record carry
    assert manifest_entry["l2_at_launch"] == "cold" and "l2_at_launch" not in manifest_entry["spec"]["config"]


def test_records_say_what_l2_held_and_cases_follow_them():
    assert l2_state({"l2_at_launch": "cold"}, {}) == "flushed"
    assert l2_state({"l2_at_launch": "inputs"}, {"l2": "flush"}) == "flushed"  # --l2 flush wins
    assert l2_state({}, {}) == "inputs"
    record = {"step": "v4", "config": GemmConfig(**SMALL).to_dict(), "delays": {}}
    assert case_of(record).config.l2_at_launch == "inputs"  # the runner always wrote the inputs just before
    assert case_of({**record, "l2_at_launch": "flushed"}).config.l2_at_launch == "cold"


def test_skew_role_slows_only_that_role():
    schedule = Case("ws", GemmConfig(**SMALL)).build()
    base = replay(schedule)
    producer = replay(schedule, perturbation=Perturbation(skew_role="producer", skew_warp=0, skew_cycles=500))
    nobody = replay(schedule, perturbation=Perturbation(skew_role="no_such_role", skew_warp=0, skew_cycles=500))
    assert nobody.end_cycle == base.end_cycle
    assert producer.end_cycle > base.end_cycle


def test_race_plan_covers_each_role_and_the_far_l2():
    plan = race_plan(("mma", "producer"))
    assert {(p.skew_role, p.skew_cycles > 0) for p in plan} >= {("mma", True), ("producer", True)}
    assert any(p.l2_hit_extra and not p.skew_cycles for p in plan)
    assert all(p.active for p in plan)


def test_far_l2_slows_only_hits():
    warm = Case("v5", GemmConfig(**SMALL, l2_at_launch="inputs")).build()
    cold = Case("v5", GemmConfig(**{**SMALL, "M": 128}, l2_at_launch="cold")).build()
    far = Perturbation(l2_hit_extra=235)
    assert replay(warm, perturbation=far).end_cycle > replay(warm).end_cycle
    # one output tile, cold: every tile is read once, from DRAM, and the far L2 changes nothing
    assert replay(cold).stats.l2_hits == 0
    assert replay(cold, perturbation=far).end_cycle == replay(cold).end_cycle


def test_a_close_race_is_predicted_both_ways():
    """ws with phases reset per tile and odd K_TILES: the producer's boundary arrival
    races the landing of stage 0's last load.  With the inputs in L2 the model's margin
    is within its timing error, so the prediction holds the trap and the hang; the
    nominal replay alone claims one winner."""
    case = Case("ws", GemmConfig(M=1920, N=64, K=832, BLK_N=64, PIPE_DEPTH=2, arch="h200", sm_count=2,
                                 reset_phase_per_tile=True, l2_at_launch="inputs"))
    nominal = predict(case, runs=1)
    assert len(nominal.kinds) == 1
    assert {"fault", "deadlock"} <= predict(case).kinds


# -- one identity: what changes a replay is what the hash covers --------------------------


def test_the_l2_state_is_part_of_the_schedule_identity():
    """The same ops under the two launch conditions replay differently (above), so they are
    two schedules: different hashes, and each JSON round trip keeps its own."""
    from protosim.ir import content_hash, dumps, loads

    cold, warm = (Case("v5", GemmConfig(**SMALL, l2_at_launch=s)).build() for s in ("cold", "inputs"))
    assert (cold.l2_at_launch, warm.l2_at_launch) == ("cold", "inputs")
    assert content_hash(cold) != content_hash(warm)
    for s in (cold, warm):
        back = loads(dumps(s))
        assert back.l2_at_launch == s.l2_at_launch and content_hash(back) == content_hash(s)
        assert replay(back).end_cycle == replay(s).end_cycle


def test_a_schedule_file_written_before_the_field_keeps_its_launch_condition():
    """Older schedule files carried the L2 state only in ``config``: read as what they meant."""
    import json

    from protosim.ir import ScheduleError, dumps, loads

    d = json.loads(dumps(Case("v5", GemmConfig(**SMALL, l2_at_launch="inputs")).build()))
    del d["l2_at_launch"]
    assert d["config"]["l2_at_launch"] == "inputs"
    assert loads(json.dumps(d)).l2_at_launch == "inputs"
    with pytest.raises(ScheduleError, match="l2_at_launch = 'warm'"):
        loads(json.dumps({**d, "l2_at_launch": "warm"}))


def test_every_verdict_says_which_l2_state_it_assumed(tmp_path):
    from protosim.report import render_run, run_scenario
    from protosim.scenarios import load_scenario

    path = tmp_path / "warm.toml"
    path.write_text('builder = "hgemm_v5"\n[config]\n' + "".join(f"{k} = {v!r}\n".replace("'", '"')
                                                                   for k, v in SMALL.items())
                    + 'l2_at_launch = "inputs"\n')
    rep = run_scenario(load_scenario(path), runs=1)
    assert rep.verdict.to_json()["l2_at_launch"] == "inputs"
    assert "L2 inputs at launch" in render_run(rep).splitlines()[0]
