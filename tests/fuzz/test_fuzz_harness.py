"""The fuzzer's own tests: the harness catches what it must, the oracles accept every
real input, the TOML writer writes TOML.  These pass whatever protosim does."""

from __future__ import annotations

import json
import math
import os
import sys
import time
import tomllib
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from . import oracles as O
from .contract import FuzzCase, RunResult, check_result, run_argv
from .strategies import base_records, base_scenarios, base_schedules, base_ttgir, toml_values


# --------------------------------------------------------------------------- oracles on real inputs


def test_every_builtin_scenario_is_not_nonsense():
    for name, data in base_scenarios().items():
        j, doc = O.judge_scenario_bytes(data)
        assert j.verdict == "any", (name, j.reasons)
        assert doc is not None


def test_every_printed_schedule_is_not_nonsense():
    bases = base_schedules()
    assert len(bases) >= 5, sorted(bases)
    for name, data in bases.items():
        j, _ = O.judge_schedule_bytes(data)
        assert j.verdict == "any", (name, j.reasons)


def test_every_triton_fixture_is_not_nonsense():
    for name, (text, launch, _) in base_ttgir().items():
        j = O.Judgement()
        O.judge_ttgir(j, text)
        O.judge_launch(j, launch)
        assert j.verdict == "any", (name, j.reasons)


def test_every_silicon_record_is_not_nonsense():
    recs = base_records()
    assert recs
    j = O.Judgement()
    O.judge_records(j, {"r.jsonl": "\n".join(json.dumps(r) for r in recs).encode()})
    assert j.verdict == "any", j.reasons


def test_oracle_refuses_the_contract_examples():
    j, _ = O.judge_scenario_bytes(b'builder = "hgemm_v1"\n[config]\nreset_phase_per_tile = true\n')
    assert j.verdict == "refuse" and "toml.ignored_knob" in j.reasons[0]
    j, _ = O.judge_scenario_bytes(b'builder = "hgemm_v6"\n[config]\nreset_phase_per_tile = true\n')
    assert j.verdict == "any"
    j, _ = O.judge_scenario_bytes(b'builder = "hgemm_v2"\n[config]\narch = "H200"\n')
    assert j.verdict == "any"  # case: protosim may accept it
    doc = json.loads(base_schedules()["v1_b200"])
    doc["arch"] = "h200"
    j = O.Judgement()
    O.judge_schedule(j, doc)
    assert j.verdict == "refuse" and any("sched.arch_op" in r for r in j.reasons)


# --------------------------------------------------------------------------- the TOML writer


def _drop_none(v):
    if isinstance(v, dict):
        return {k: _drop_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_none(x) for x in v if x is not None]
    return v


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=150, deadline=None, database=None)
@example(top={}, table={"K": {"0\n": -9223372036854775808}})  # a key ending in a newline was written bare (found 2026-12-04)
@given(st.dictionaries(st.sampled_from(("name", "builder", "config", "expect", "x y", "é")), toml_values, max_size=4),
       st.dictionaries(st.sampled_from(("K", "arch", "a.b", "")), toml_values, max_size=3))
def test_toml_writer_round_trips(top, table):
    doc = {**top, "config": table}
    text = O.toml_dumps(doc)
    assert _same(tomllib.loads(text), _drop_none(doc)), text


# --------------------------------------------------------------------------- the runner


def _run(target, timeout=10.0, mode="fork"):
    return run_argv(["x"], Path.cwd(), mode, timeout, target=target)


def _ok(argv):
    print("hello")
    return 0


def _raise(argv):
    raise ValueError("boom")


def _exit2(argv):
    print("usage: protosim [-h]\nprotosim: error: argument --runs: invalid int value", file=sys.stderr)
    raise SystemExit(2)


def _hang(argv):
    time.sleep(60)


def _none(argv):
    return None


@pytest.mark.parametrize("mode", ["fork", "inproc"])
def test_runner_reports_status_exception_systemexit_and_hang(mode, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = _run(_ok, mode=mode)
    assert r.status == 0 and r.stdout == "hello\n" and not r.timed_out
    r = _run(_raise, mode=mode)
    assert r.status is None and r.exc_type == "ValueError" and "boom" in r.exception
    r = _run(_exit2, mode=mode)
    assert r.systemexit == 2 and "usage:" in r.stderr
    r = _run(_none, mode=mode)
    assert r.exc_type == "BadReturn"
    start = time.monotonic()
    r = _run(_hang, timeout=1.0, mode=mode)
    assert r.timed_out and time.monotonic() - start < 10
    if mode == "fork":
        assert "_hang" in r.hang_stack


def test_subprocess_runner_runs_the_real_cli(tmp_path):
    r = run_argv(["profile", "h200"], tmp_path, "subprocess", 60)
    assert r.status in (0, 2) and not r.timed_out and r.exception is None, r.stderr


# --------------------------------------------------------------------------- the checker


def _case(**kw) -> FuzzCase:
    base = dict(path="scenario_toml", argv=["run", "fz.toml"], problem_files=("fz.toml",))
    base.update(kw)
    return FuzzCase(**base)


def _cats(case, result) -> list[str]:
    return [v.category for v in check_result(case, result)]


def test_checker_flags_each_breach():
    assert _cats(_case(), RunResult(status=3, stderr="protosim: internal error\n")) == ["exit3"]
    assert _cats(_case(), RunResult(status=None, exception="Traceback ...\nKeyError: 'x'", exc_type="KeyError")) == ["exception"]
    assert _cats(_case(), RunResult(status=None, timed_out=True, seconds=30)) == ["timeout"]
    assert _cats(_case(), RunResult(status=None, systemexit=2, stderr="usage: protosim\nprotosim: error: x\n")) == ["systemexit"]
    assert _cats(_case(usage=True), RunResult(status=None, systemexit=2, stderr="usage: protosim\nprotosim: error: x\n")) == []
    assert _cats(_case(), RunResult(status=2, stderr="protosim: fz.toml: config.K: -1\nmore\n")) == ["stderr_shape"]
    assert _cats(_case(), RunResult(status=2, stderr="error: fz.toml: K\n")) == ["stderr_shape"]
    assert _cats(_case(), RunResult(status=2, stderr="protosim: config.K: -1\n")) == ["stderr_no_file"]
    assert _cats(_case(field_names=("K",)), RunResult(status=2, stderr="protosim: fz.toml: bad\n")) == ["stderr_no_field"]
    assert _cats(_case(field_names=("K",)), RunResult(status=2, stderr="protosim: fz.toml: config.K: -1\n")) == []
    assert _cats(_case(expect="refuse", reasons=["toml.size: K"]), RunResult(status=0, stdout="x")) == ["not_refused"]
    assert _cats(_case(expect="valid"), RunResult(status=2, stderr="protosim: fz.toml: x\n")) == ["refused_valid"]
    assert _cats(_case(), RunResult(status=0, stdout="")) == ["stdout_empty"]
    assert _cats(_case(), RunResult(status=1, stdout="x", stderr="Traceback (most recent call last):\n")) == ["traceback"]
    assert _cats(_case(json_stdout=True), RunResult(status=0, stdout="{")) == ["json_invalid"]
    rj = dict(json_stdout=True, run_json=True, expect_declared=False)
    assert _cats(_case(**rj), RunResult(status=0, stdout='{"verdict": {}}')) == ["json_ok"]
    assert _cats(_case(**rj), RunResult(status=0, stdout='{"ok": false}')) == ["ok_status"]
    bad = {"ok": True, "verdict": {"findings": [{"kind": "war_race"}], "outcome": {"kind": "correct"}}}
    assert _cats(_case(**rj), RunResult(status=0, stdout=json.dumps(bad))) == ["ok_inconsistent"]
    good = {"ok": False, "verdict": {"findings": [], "outcome": {"kind": "correct"}},
            "outcome_set": {"outcomes": ["correct", "deadlock"]}}
    assert _cats(_case(**rj), RunResult(status=1, stdout=json.dumps(good))) == []
    assert _cats(_case(argv=["schedule", "fz.toml"], statuses=(0, 2)), RunResult(status=1, stdout="{}")) == ["status_semantics"]
    nominal = dict(argv=["explain", "fz.toml"], expect_declared=False, nominal_ok=False)
    assert _cats(_case(**nominal), RunResult(status=0, stdout="story")) == ["status_semantics"]
    assert _cats(_case(**nominal), RunResult(status=1, stdout="story")) == []
    assert _cats(_case(), RunResult(status=7, stdout="x")) == ["bad_status"]


def test_checker_accepts_argparse_usage_errors_only_for_malformed_argv():
    usage = "usage: protosim run [-h] file\nprotosim run: error: argument --runs: invalid int value: 'x'\n"
    assert _cats(_case(usage=True, argv=["run", "fz.toml", "--runs", "x"]), RunResult(status=2, stderr=usage)) == []
    assert _cats(_case(usage=True), RunResult(status=2, stderr="protosim run: argument --runs: 'x' (see --help)\n")) == []
    assert _cats(_case(usage=False), RunResult(status=2, stderr=usage)) == ["stderr_shape"]


def test_reproducer_recreates_the_files():
    case = _case(files={"fz.toml": b'builder = "x"\n', "b.bin": b"\xff\x00"}, argv=["run", "fz.toml", "--runs", "a b"])
    text = case.reproducer()
    assert "cat > fz.toml <<'EOF'" in text and "printf %b" in text and "'a b'" in text


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork runner")
def test_fork_runner_keeps_memory_bounded(tmp_path, monkeypatch):
    """The child's address space is capped.  Tried with a 512 MiB cap rather than the default 3 GiB:
    on VMs where first touching memory runs at ~100 MB/s (seen on a 2-core dev VM), filling
    3 GiB outlasted the 30 s timeout and the child was killed for time, not memory."""
    from . import contract

    monkeypatch.setattr(contract, "MEMORY_BYTES", 2**29)

    def hog(argv):
        blobs = []
        while True:
            blobs.append(bytearray(2**26))

    r = run_argv(["x"], tmp_path, "fork", 30, target=hog)
    assert r.exc_type == "MemoryError" or r.signal is not None, r
