"""The one child-process launcher both GPU runners use (kernels/runner/launch.py), on the CPU:
a child that records, faults, dies, hangs or cannot start the GPU runtime."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from kernels.runner import launch as L


def _fake(behaviour: dict):
    """A start() whose child records the remaining tasks in order until a task named in
    ``behaviour``, which ends the child the way it says: a fault once (the child records
    it), a hang or a death every time it is run (only the host can record it)."""
    records: set = set()
    host: list = []

    def start(remaining: list) -> int:
        for t in remaining:
            how = behaviour.pop(t, None) if behaviour.get(t) in ("fault", "setup") else behaviour.get(t)
            if how == "fault":
                records.add(t)  # the child records its own fault, then exits
                return L.FAULTED
            if how == "hang":
                raise subprocess.TimeoutExpired("child", 1.0)
            if how == "die":
                return 139
            if how == "setup":
                return L.SETUP_FAILED
            records.add(t)
        return 0

    return start, (lambda: set(records)), (lambda t, outcome, why: host.append((t, outcome, why)) or records.add(t)), host


def test_every_task_ends_with_a_record_and_the_host_writes_the_lost_ones():
    start, done, host_record, host = _fake({2: "fault", 4: "hang", 6: "die"})
    assert L.run_tasks(list(range(8)), start, done, host_record, child_timeout=1.0)
    assert done() == set(range(8))
    assert [(t, outcome) for t, outcome, _ in host] == [(4, "timeout"), (6, "fault")]
    assert "within 1.0 s" in host[0][2] and "exit status 139" in host[1][2]


def test_a_child_that_cannot_start_the_runtime_stops_the_run():
    start, done, host_record, host = _fake({0: "setup"})
    assert not L.run_tasks([0, 1], start, done, host_record, child_timeout=1.0)
    assert not host and not done()


def test_recorded_keeps_this_runs_records(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in ({"run": "a", "job": 0, "launch": 1}, {"run": "b", "job": 0, "launch": 2})))
    assert L.recorded(out, "a", lambda r: (r["job"], r["launch"])) == {(0, 1)}
    assert L.recorded(tmp_path / "none.jsonl", "a", lambda r: r) == set()


def test_fork_and_spawn_report_the_exit_status_and_kill_on_timeout(tmp_path):
    assert L.fork(lambda x: x, (3,), timeout=60) == 3
    assert L.spawn(["kernels.runner.gemm", "--help"], timeout=60, bundle=tmp_path) == 0
    with pytest.raises(subprocess.TimeoutExpired):
        L.fork(lambda: time.sleep(60) or 0, (), timeout=0.5)
