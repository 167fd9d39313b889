"""The TIRx frontend (``protosim.frontends.tirx``) on the repository's real kernels.

* A Hypothesis property: for the seed's steps v1-v6 on b200 and the Hopper kernels v2-v6
  and ws on h200, with every bug and delay knob the kernel builds, the schedule extracted
  from the kernel and the builder's schedule reach the same nominal outcome (kind, wrong
  tiles, hang sites in the kernel's words), the same outcome set under perturbation and the
  same finding kinds.  ``PROTOSIM_TIRX_EXAMPLES`` raises the count (``make slow``: 200).
* Instrumentation (the Hopper trace builds' observer warps, clock reads, diag words) does not
  change the replay.
* The book's step 7 (``kernels/tirx/ws_sm100.py``), which no builder models, is judged by
  the frontend alone: correct as written, and its seeded bugs found.
* Input errors name the op and the line.

Op-for-op equality with the builders is ``tests/test_builders_mirror_kernels.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("tvm", reason="the TIRx frontend reads PrimFuncs; apache-tvm is not installed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kernels.tirx.extracted import extract_schedule  # noqa: E402
from protosim.builders import BUILDERS  # noqa: E402
from protosim.config import ConfigError, GemmConfig  # noqa: E402
from protosim.crosscheck import hang_sites  # noqa: E402
from protosim.frontends.tirx import TirxError, extract  # noqa: E402
from protosim.verdict import explore, judge  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "tirx"
EXAMPLES = int(os.environ.get("PROTOSIM_TIRX_EXAMPLES", "12"))

SEED_KNOBS = ({}, {"skip_mma_phase_flip": True}, {"reset_phase_per_tile": True})
"""The knobs the seed's kernels build (kernels/tirx/seed_sm100.py refuses the others)."""
HOPPER_KNOBS = ({}, {"skip_mma_phase_flip": True}, {"wait_parity_flip": "tma"}, {"wait_parity_flip": "mma"},
                {"expect_tx_delta": -1024}, {"expect_tx_delta": 2048}, {"tma_issuer": "each_warp"},
                {"skip_store_wait": True}, {"reset_phase_per_tile": True}, {"lag_ns": 300, "lag_warp": 2},
                {"producer_delay_ns": 400}, {"consumer_delay_ns": 400})


@st.composite
def kernel_configs(draw):
    """(step, config) the kernel of that step builds, small enough to replay in CI."""
    arch = draw(st.sampled_from(["b200", "h200"]))
    if arch == "b200":
        step = draw(st.sampled_from(["v1", "v2", "v3", "v4", "v5", "v6"]))
        knobs = draw(st.sampled_from(SEED_KNOBS))
    else:
        step = draw(st.sampled_from(["v2", "v3", "v4", "v5", "v6", "ws"]))
        knobs = draw(st.sampled_from(HOPPER_KNOBS))
    blk_n = draw(st.sampled_from([64, 128]))
    m_tiles, n_tiles = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    k_tiles = draw(st.integers(1, 5))
    if step == "v1":
        m_tiles = n_tiles = k_tiles = 1
    if step == "v2":
        m_tiles = n_tiles = 1
    return step, dict(M=128 * m_tiles, N=blk_n * n_tiles, K=64 * k_tiles, BLK_N=blk_n,
                      PIPE_DEPTH=draw(st.integers(1, 3)), arch=arch, sm_count=draw(st.integers(1, 3)), **knobs)


def _both(step: str, fields: dict):
    """The builder's and the kernel's schedules, or None where either refuses the config."""
    try:
        cfg = GemmConfig(**fields)
        cfg.validate()
        return BUILDERS[f"hgemm_{step}"](cfg), extract_schedule(step, cfg)
    except ConfigError:
        return None


def _nominal(schedule):
    verdict, result = judge(schedule)
    sites = hang_sites(result) if verdict.outcome.kind == "deadlock" else {}
    return verdict.outcome.kind, tuple(verdict.outcome.wrong_tiles), sorted(verdict.kinds()), sites


def _outcome_set(schedule, runs: int = 4):
    classes = explore(schedule, runs=runs).classes
    return {k: (sorted(c.tiles), sorted(c.finding_kinds)) for k, c in classes.items()}


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(kernel_configs())
def test_extracted_schedule_reaches_the_builders_verdicts(case):
    step, fields = case
    pair = _both(step, fields)
    if pair is None:
        return  # the kernel or the builder refuses this knob on this step (ConfigError names why)
    builder, kernel = pair
    assert _nominal(kernel) == _nominal(builder), f"{step} {fields}"
    assert _outcome_set(kernel) == _outcome_set(builder), f"{step} {fields}"


@pytest.mark.parametrize("step", ["v4", "v5", "v6", "ws"])
def test_trace_builds_replay_like_plain_builds(step):
    """The trace build adds two observer warps, clock stamps and trace rows; none of it may
    move the protocol: same outcome, same cycle count."""
    cfg = GemmConfig(M=256, N=256, K=256, arch="h200", PIPE_DEPTH=2, sm_count=2)
    plain, traced = extract_schedule(step, cfg), extract_schedule(step, cfg, trace=True)
    assert [r.name for r in traced.roles if r.name.startswith("observer")] == ["observer0", "observer1"]
    vp, _ = judge(plain)
    vt, _ = judge(traced)
    assert (vt.outcome.summary(), vt.timing.cycles) == (vp.outcome.summary(), vp.timing.cycles)


STEP7 = dict(M=256, N=256, K=512, PIPE_DEPTH=2, sm_count=2)


def test_book_step7_is_judged_correct_by_the_frontend_alone():
    schedule = extract_schedule("v7", GemmConfig(**STEP7))
    assert [r.name for r in schedule.roles] == ["writeback", "mma", "idle0", "idle1", "producer"]
    verdict, _ = judge(schedule)
    assert verdict.outcome.kind == "correct" and not verdict.findings
    assert set(explore(schedule, runs=6).classes) == {"correct"}


@pytest.mark.parametrize("knobs, kind, finding", [
    ({"expect_tx_delta": -1024}, "deadlock", "tx_mismatch"),
    ({"wait_parity_flip": "tma"}, "fault", "early_return"),
    ({"reset_phase_per_tile": True, "K": 320}, "fault", "wrong_parity"),
])
def test_book_step7_seeded_bugs_are_found(knobs, kind, finding):
    verdict, result = judge(extract_schedule("v7", GemmConfig(**{**STEP7, **knobs})))
    assert verdict.outcome.kind == kind
    assert finding in verdict.kinds()


def _fixture(name: str):
    sys.path.insert(0, str(FIXTURES))
    try:
        return __import__(name).kernel
    finally:
        sys.path.remove(str(FIXTURES))


def test_an_unknown_op_is_an_error_naming_the_op_and_the_line():
    with pytest.raises(TirxError, match=r"frontend_unknown_op\.py:18: tirx\.cuda\.syncthreads_and is not an op"):
        extract(_fixture("frontend_unknown_op"), "h200")


def test_a_thread_dependent_trip_count_is_refused_with_the_line():
    with pytest.raises(TirxError, match=r"frontend_divergent_loop\.py:18: a loop's trip count differs between threads"):
        extract(_fixture("frontend_divergent_loop"), "h200")


def test_extract_refuses_a_bad_arch_and_bad_arguments():
    kernel = _fixture("frontend_divergent_loop")
    with pytest.raises(TirxError, match="unknown arch|no arch|arch"):
        extract(kernel, "a100")
    with pytest.raises(TirxError, match="integers"):
        extract(kernel, "h200", args={"x": "3"})
    with pytest.raises(TirxError, match="neither tcgen05 nor wgmma"):
        extract(kernel)



# A grid whose CTAs together pass the op budget is refused after its first CTA, in seconds
# (found by tests/fuzz/test_fuzz_tirx.py, whose test_tirx_found replays the other breaches it found).


def test_a_grid_past_the_op_budget_is_refused_from_its_first_cta(capsys):
    from protosim.cli import main

    rc = main(["run", str(FIXTURES / "fuzz_f5d_grid_large.py") + ":kernel", "--set", "arch=h200", "--runs", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.splitlines()) == 1
    assert "about 5,000,000 ops (5 in CTA 0, 1,000,000 CTAs), more than the limit of 2,000,000; pass --max-ops 5000000" in err


def test_a_kernel_from_tvms_own_tests_is_refused_at_its_thread_binding_loop(capsys):
    """Input nobody here wrote: apache/tvm's TMA unicast codegen test kernel binds its ids with
    ``T.thread_binding`` loops, a form the frontend does not read yet -- refused at that line."""
    from protosim.cli import main

    rc = main(["run", str(FIXTURES / "tvm_tma_unicast.py") + ":main", "--set", "arch=h200"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.splitlines()) == 1
    assert "tvm_tma_unicast.py:20: `for ... in T.thread_binding(...)` (blockIdx.x) is not read yet" in err
