"""benchmarks/memory_by_stage.py: its record adds up, and bad input is one usage line (exit 2)."""

from __future__ import annotations

import json

from conftest import run_benchmark


def _run(*args: str):
    return run_benchmark("memory_by_stage.py", *args)


def test_the_record_has_every_stage_and_the_log_by_kind_adds_up():
    done = _run("--shape", "256,256,512", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert [s["stage"] for s in record["stages"]] == ["imports", "schedule built", "replayed", "checked"]
    events = int(record["stages"][2]["detail"].split()[0].replace(",", ""))
    assert events > 0 and sum(k["events"] for k in record["kinds"]) == events
    for k in record["kinds"]:
        # a tuple a record holds a header and a reference a field; typed columns the values alone
        # (the script rebuilds the records from them and fails if they differ from the log's)
        assert 0 < k["typed_column_bytes"] < k["row_bytes"], k
        assert k["encode_us_per_event"] > 0 and k["rebuild_us_per_event"] > 0, k
    reads = {k["kind"]: k["checker_reads"] for k in record["kinds"]}
    assert reads["wait"] >= 2 * events_of(record, "wait") and reads["access"] >= events_of(record, "access"), reads


def events_of(record: dict, kind: str) -> int:
    return next(k["events"] for k in record["kinds"] if k["kind"] == kind)


def test_bad_input_is_one_usage_line():
    for args in (["--arch", "nope"], ["--shape", "100,100,100"], ["--shape", "1,2"], ["--step", "triton_pipeline"],
                 ["--step", "hgemm_v9", "--shape", "256,256,256"]):
        done = _run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip().splitlines()[-1].startswith("memory_by_stage.py: error: "), (args, done.stderr)
        assert "Traceback" not in done.stderr
