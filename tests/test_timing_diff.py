"""kernels.report.timing_diff: two timing reports of the same records, compared config by config."""

from __future__ import annotations

import json

from kernels.report.timing_diff import diff, main


def _report(errors: dict[str, float], speedups: list[tuple[str, str, float]]) -> dict:
    return {"timing": {"configs": {"rows": [{"label": k, "error": e} for k, e in errors.items()],
                                   "speedups": [{"from": a, "to": b, "error": e} for a, b, e in speedups]}}}


BEFORE = _report({"a": -0.30, "b": 0.10, "c": 0.02, "gone": 0.5}, [("a", "b", 0.20), ("b", "c", 0.01)])
AFTER = _report({"a": -0.08, "b": 0.12, "c": 0.02, "new": 0.0}, [("a", "b", -0.03), ("b", "c", 0.01)])


def test_the_shared_configs_are_summed_and_the_moves_listed():
    d = diff(BEFORE["timing"]["configs"], AFTER["timing"]["configs"])
    assert d["before"]["configs"] == d["after"]["configs"] == 3  # "gone" and "new" are in one report only
    assert round(d["before"]["mape"], 4) == round((0.30 + 0.10 + 0.02) / 3, 4)
    assert round(d["after"]["mape"], 4) == round((0.08 + 0.12 + 0.02) / 3, 4)
    assert (d["before"]["past_25"], d["after"]["past_25"]) == (1, 0)
    assert (d["before"]["speedups_within_5"], d["after"]["speedups_within_5"]) == (1, 2)
    assert [(m["label"], m["closer"]) for m in d["moved"]] == [("a", True), ("b", False)]  # largest move first
    assert [(s["from"], s["to"]) for s in d["speedups_moved"]] == [("a", "b")]
    assert d["only_before"] == ["gone"] and d["only_after"] == ["new"]


def test_the_command_reads_report_files_and_refuses_others(tmp_path, capsys):
    b, a, bad = tmp_path / "b.json", tmp_path / "a.json", tmp_path / "bad.json"
    b.write_text(json.dumps(BEFORE))
    a.write_text(json.dumps(AFTER))
    bad.write_text(json.dumps({"agree": 3}))
    assert main([str(b), str(a)]) == 0
    out = capsys.readouterr().out
    assert "past 25%           1 -> 0" in out and "moved: 2 (1 closer to silicon, 1 farther)" in out
    assert main([str(b), str(bad)]) == 2
    assert "no timing section" in capsys.readouterr().err
    assert main([str(b), str(tmp_path / "missing.json")]) == 2
