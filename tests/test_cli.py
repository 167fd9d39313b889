"""The command line: readable output, JSON that parses, one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from protosim.cli import main
from protosim.scenarios import builtin_dir

SCEN = builtin_dir()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "protosim.cli", *args], capture_output=True, text=True, timeout=120)


def test_run_json_is_a_verdict_record():
    p = cli("run", str(SCEN / "v2_no_phase_flip.toml"), "--json", "--runs", "4")
    assert p.returncode == 1, p.stderr  # a protocol bug, whatever the scenario expects
    d = json.loads(p.stdout)
    assert d["ok"] is False and d["status"] == 1 and d["headline"].startswith("NOT OK: wrong reachable in 4/4")
    assert d["verdict"]["outcome"]["kind"] == "wrong"
    assert "early_return" in d["verdict"]["finding_kinds"]
    assert d["outcome_set"]["runs"] == 4 and d["agrees"] is True
    first = d["verdict"]["findings"][0]
    assert {"kind", "cta", "who", "op", "cycle", "message", "evidence", "tiles"} <= set(first)


def test_run_text_has_verdict_outcome_and_timing_table():
    p = cli("run", str(SCEN / "v5_ring.toml"), "--runs", "2")
    assert p.returncode == 0, p.stderr
    for needle in ("verdict    OK", "outcome    correct", "TMA engine", "tensor core", "stalled", "AGREES"):
        assert needle in p.stdout


def test_explain_names_the_wait_the_parity_and_the_late_producer():
    p = cli("explain", str(SCEN / "v2_no_phase_flip.toml"))
    assert p.returncode == 1, p.stderr  # findings: a protocol bug
    out = p.stdout
    assert "try_wait.parity(mma_bar, 0)" in out and "for phase 1" in out
    assert "phase 0 (parity 0), completed" in out
    assert "tcgen05.commit arrived at cycle" in out
    assert "raw_hazard" in out and "acc(0, 0)@k=7" in out  # the epilogue read the accumulator too early
    assert "war_race" in out and "A[m=0,k=2]" in out  # the next copy is not ordered after the MMA's read


def test_explain_of_a_correct_schedule_says_so():
    p = cli("explain", str(SCEN / "v1_single_tile.toml"))
    assert p.returncode == 0 and "No findings" in p.stdout


def test_demo_on_a_folder(tmp_path):
    for name in ("v1_single_tile.toml", "v4_expect_tx_too_many.toml"):
        (tmp_path / name).write_text((SCEN / name).read_text())
    p = cli("demo", "--dir", str(tmp_path), "--runs", "2")
    assert p.returncode == 0, p.stderr
    assert "v1-single-tile" in p.stdout and "v4-expect-tx-too-many" in p.stdout
    assert "2 scenarios, 2 agree" in p.stdout


def test_schedule_command_prints_loadable_json(tmp_path):
    p = cli("schedule", str(SCEN / "v4_tma.toml"))
    assert p.returncode == 0
    f = tmp_path / "s.json"
    f.write_text(p.stdout)
    q = cli("run", str(f), "--runs", "1")
    assert q.returncode == 0 and "verdict    OK" in q.stdout
    # the schedule file keeps the scenario's name, description and expectation
    d = json.loads(p.stdout)
    assert d["name"] == "v4-tma" and d["description"].startswith("Step 4") and d["expect"]["nominal"] == "correct"
    assert "scenario   v4-tma " in q.stdout and "expected   nominal correct" in q.stdout


BAD = {
    "missing_builder.toml": ('[config]\nK = 64\n', "builder: missing"),
    "unknown_builder.toml": ('builder = "hgemm_v99"\n', "builder: unknown builder 'hgemm_v99'"),
    "not_divisible.toml": ('builder = "hgemm_v3"\n[config]\nK = 100\n', "config.K: K=100 is not a multiple of BLK_K=64"),
    "too_much_smem.toml": ('builder = "hgemm_v5"\n[config]\nK = 1024\nPIPE_DEPTH = 8\n',
                           "config.PIPE_DEPTH: 8 stages of 32,768 bytes need 262,144 bytes"),
    "bad_toml.toml": ('builder = \n', "toml: not valid TOML"),
    "unknown_field.toml": ('builder = "hgemm_v1"\ncolour = "red"\n', "colour: unknown field"),
    "bad_expect.toml": ('builder = "hgemm_v1"\n[expect]\nnominal = "fine"\n', "expect.nominal: 'fine' is not one of"),
    "bad_arch.toml": ('builder = "hgemm_v1"\n[config]\narch = "mi300"\n', "config.arch: unknown arch 'mi300'"),
    "v1_long_k.toml": ('builder = "hgemm_v1"\n[config]\nK = 128\n', "config.K: v1 has no K loop"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_exit_2(tmp_path, name):
    text, needle = BAD[name]
    f = tmp_path / name
    f.write_text(text)
    p = cli("run", str(f))
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr
    assert str(f) in lines[0] and needle in lines[0]


def test_missing_file_and_bad_flags(tmp_path):
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    assert main(["run", str(SCEN / "v1_single_tile.toml"), "--runs", "0"]) == 2
    bad_json = tmp_path / "s.json"
    bad_json.write_text("{not json")
    p = cli("run", str(bad_json))
    assert p.returncode == 2 and "not valid JSON" in p.stderr


def test_help_explains_commands():
    p = cli("--help")
    assert p.returncode == 0
    for cmd in ("run", "explain", "demo", "schedule", "profile", "Exit status"):
        assert cmd in p.stdout


def test_profile_lists_sources_and_guesses():
    p = cli("profile", "b200")
    assert p.returncode == 0
    assert "GUESS" in p.stdout and "SemiAnalysisAI" in p.stdout
    assert main(["profile", "gb300"]) == 2
