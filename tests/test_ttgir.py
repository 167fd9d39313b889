"""Triton TTGIR read into schedules (protosim.frontends.ttgir), against Triton's own
artifacts in tests/fixtures/triton/: TTGIR + metadata JSON compiled by Triton 3.6
(sm_90 on the H200, where the kernels also ran; sm_80 and sm_121 cross-compiled).

What must hold: shared memory counted from the IR equals the ``shared`` field of the
metadata; Triton's own pipelines replay with no finding; edits that break a
pipeline the way kernel authors do are found with the right kind.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from protosim.frontends.ttgir import TtgirError, metadata_shared, parse, read
from protosim.ir import CpAsync, CpAsyncCommit, CpAsyncWait, CtaSync, LocalLoad, MmaSync, TmaLoad, Wgmma
from protosim.scenarios import ScenarioError, load_scenario
from protosim.verdict import judge

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
TTGIR = sorted(FIXTURES.glob("*.ttgir"))
RESULTS = Path(__file__).resolve().parents[1] / "results" / "silicon"


def test_fixtures_cover_the_seed_and_three_targets():
    names = {p.name for p in TTGIR}
    assert "seed_64x32x64_s2.sm121.ttgir" in names  # the seed's kernel, options and target
    assert {p.name.split(".")[1] for p in TTGIR} == {"sm80", "sm90", "sm121"}
    assert any("tma" in n for n in names)


@pytest.mark.parametrize("path", TTGIR, ids=lambda p: p.stem)
def test_shared_memory_matches_tritons_metadata(path):
    mod = parse(path.read_text(), str(path))
    assert metadata_shared(path) == mod.shared_bytes


@pytest.mark.parametrize("path", TTGIR, ids=lambda p: p.stem)
def test_tritons_own_pipelines_are_judged_correct(path):
    verdict, _ = judge(load_scenario(path).build())
    assert verdict.ok, [f.message for f in verdict.findings[:3]]
    assert verdict.outcome.kind == "correct"


def test_the_seed_kernel_reads_as_the_article_describes():
    """sm_121, num_stages=2: one 64x32 A and one 32x64 B stage (8192 bytes), the copies of
    k-tile 0 in the prologue, each iteration waiting for all groups (num = 0)."""
    path = FIXTURES / "seed_64x32x64_s2.sm121.ttgir"
    schedule, mod = read(path)
    assert mod.target == "cuda:121" and mod.num_warps == 4
    assert {(m.stages, m.tile) for m in mod.allocs.values()} == {(1, (64, 32)), (1, (32, 64))}
    assert mod.shared_bytes == 8192 == json.loads(path.with_suffix(".json").read_text())["shared"]
    ops = schedule.ctas[0].roles[0]
    kinds = [type(o) for o in ops]
    assert kinds[:4] == [CpAsync, CpAsyncCommit, CpAsync, CpAsyncCommit]
    waits = [o for o in ops if isinstance(o, CpAsyncWait)]
    assert [w.n for w in waits] == [0, 0]  # K = 32: one iteration, then the epilogue's wait
    assert kinds.count(MmaSync) == 1 and kinds.count(LocalLoad) == 2
    assert schedule.arch == "gb10"


def test_loop_trip_count_and_ring_come_from_the_launch():
    schedule, _ = read(FIXTURES / "k256_s4.sm121.ttgir")
    ops = schedule.ctas[0].roles[0]
    loads = [o for o in ops if isinstance(o, LocalLoad) and o.src.buffer == "a"]
    assert len(loads) == 8  # K = 256, BLOCK_K = 32
    assert [o.src.stage for o in loads] == [0, 1, 2, 0, 1, 2, 0, 1]  # 3 buffers for num_stages = 4
    assert [o.src.content for o in loads] == [f"a#{i}" for i in range(8)]
    assert {o.n for o in ops if isinstance(o, CpAsyncWait)} == {4, 0}  # two groups (A, B) per stage in flight: 2 x 2
    schedule, _ = read(FIXTURES / "k256_s4.sm121.ttgir", launch={"K": 512})
    assert sum(isinstance(o, LocalLoad) and o.src.buffer == "a" for o in schedule.ctas[0].roles[0]) == 16


def test_hopper_fixtures_read_wgmma_and_tma():
    schedule, _ = read(FIXTURES / "k256_s3.sm90.ttgir")
    assert any(isinstance(o, Wgmma) for o in schedule.ctas[0].roles[0]) and schedule.arch == "h200"
    schedule, mod = read(FIXTURES / "tma_k256_s3.sm90.ttgir")
    ops = schedule.ctas[0].roles[0]
    assert sum(isinstance(o, TmaLoad) for o in ops) == 16  # 2 per k-tile
    assert len(schedule.barriers) == 3 and mod.shared_bytes == 3 * (4096 + 4096) + 3 * 8


def _edit(tmp_path: Path, name: str, edits: list[tuple[str, str]]) -> Path:
    text = (FIXTURES / name).read_text()
    for old, new in edits:
        assert old in text, f"fixture changed: {old!r} not found"
        text = text.replace(old, new)
    out = tmp_path / name
    out.write_text(text)
    shutil.copy(FIXTURES / name.replace(".ttgir", ".launch.json"), tmp_path)
    return out


SEEDED = [
    # a wait count that lets the consumer read a group still in flight
    ("wait one too many, sm121", "k256_s3.sm121.ttgir", [("{num = 2 : i32}", "{num = 3 : i32}")], {"raw_race"}),
    ("wait two too many, sm121", "k256_s3.sm121.ttgir", [("{num = 2 : i32}", "{num = 4 : i32}")], {"raw_hazard", "raw_race"}),
    ("the seed waiting for one group too few", "seed_64x32x64_s2.sm121.ttgir",
     [("%a_60, %b_61 {num = 0 : i32}", "%a_60, %b_61 {num = 1 : i32}")], {"raw_race"}),
    # (whether the early read also sees stale bytes -- raw_hazard -- depends on how fast the copy
    # lands: with the SM's measured load rate it lands first in the nominal replay, on sm90 as on sm121)
    ("wait one too many, sm90", "k256_s3.sm90.ttgir", [("{num = 2 : i32}", "{num = 3 : i32}")], {"raw_race"}),
    # a stage reused too early: wgmma still reading it
    ("wgmma wait lets two in flight", "k256_s3.sm90.ttgir", [("{pendings = 1 : i32}", "{pendings = 2 : i32}")], {"war_race"}),
    ("copy aliased onto the stage being read, sm90", "k256_s3.sm90.ttgir",
     [("ttg.memdesc_index %a[%acc_101]", "ttg.memdesc_index %a[%acc_91]")], {"war_race", "raw_hazard"}),
    # a stage buffer aliased: every A copy lands in stage 0
    ("A stages aliased, sm121", "k256_s3.sm121.ttgir",
     [("%a_56 = ttg.memdesc_index %a[%c1_i32]", "%a_56 = ttg.memdesc_index %a[%c0_i32]"),
      ("ttg.memdesc_index %a[%acc_100]", "ttg.memdesc_index %a[%c0_i32]")], {"raw_hazard"}),
    # (a read expects the newest copy issued into its stage -- protosim.frontends.ttgir.contents --
    # so the refill landing on it is the raw_hazard; stage 1, never written, is read as well)
]


@pytest.mark.parametrize("label, fixture, edits, kinds", SEEDED, ids=[s[0] for s in SEEDED])
def test_seeded_bugs_are_found_with_the_right_kind(tmp_path, label, fixture, edits, kinds):
    verdict, _ = judge(load_scenario(_edit(tmp_path, fixture, edits)).build())
    found = {f.kind for f in verdict.findings}
    assert kinds <= found, f"{label}: found {sorted(found)}"
    assert found <= {"raw_race", "raw_hazard", "war_race", "war_hazard"}, f"{label}: unexpected {sorted(found)}"


def test_membar_barriers_follow_each_async_wait():
    ops = read(FIXTURES / "k256_s2.sm121.ttgir")[0].ctas[0].roles[0]
    for i, op in enumerate(ops):
        if isinstance(op, CpAsyncWait):
            assert isinstance(ops[i + 1], CtaSync)


def test_protosim_run_reports_the_comparison(tmp_path):
    scenario = load_scenario(FIXTURES / "k256_s3.sm121.ttgir")
    # a plain TTGIR: Triton's number from the metadata, and what the IR's allocations hold at once
    assert "shared memory 16,384 B (Triton's metadata); the IR's allocations live at once: 16,384 B" in scenario.description


def test_allocated_ir_reports_ttg_shared_against_the_metadata():
    path = FIXTURES / "corpus" / "triton-3.9.0" / "mm_tma_dev_128x256x64_s4_w8.sm90.alloc.mlir"
    scenario = load_scenario(path)
    assert "from the IR's ttg.shared" in scenario.description and "match" in scenario.description


@pytest.mark.parametrize("text, message", [
    ("hello", "not a TTGIR module"),
])
def test_bad_input_is_one_clear_error(tmp_path, text, message):
    p = tmp_path / "bad.ttgir"
    p.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(p)
    assert message in str(err.value)


def test_a_missing_launch_value_names_the_argument(tmp_path):
    p = tmp_path / "k.ttgir"
    p.write_text((FIXTURES / "k256_s2.sm121.ttgir").read_text())  # no launch file beside it
    with pytest.raises(TtgirError) as err:
        read(p)
    assert "launch" in str(err.value) and "K" in str(err.value)


def test_triton_runs_on_the_h200_were_recorded_correct():
    rows = [json.loads(line) for p in (RESULTS / "triton").glob("*.jsonl") for line in p.read_text().splitlines()]
    rows = [r for r in rows if r.get("kind") == "triton"]  # Triton's kernels as Triton compiled them (no edits; the corpus runs have no kind)
    assert rows and all(r["gpu"] == "NVIDIA H200" and r["triton"] for r in rows)
    assert {r["outcome"] for r in rows} == {"correct"}
    assert {r["name"] for r in rows} >= {"seed_64x32x64_s2", "k256_s2", "k256_s3", "k256_s4", "tma_k256_s3"}


def test_edited_ttgir_runs_on_the_h200_match_the_findings():
    """Silicon's record of Triton's own kernel and the seeded edits (kernels/triton/ttgir_run.py)."""
    path = RESULTS / "triton" / "2026-11-29_h200_ttgir_edits_1c80f3e.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    seen: dict[str, set[str]] = {}
    for r in rows:
        seen.setdefault(r["name"], set()).add(r["outcome"])
    assert seen["triton_own"] == {"correct"}
    assert "wrong" in seen["async_wait_plus_2"] and "wrong" in seen["copy_aliased_onto_read_stage"]
    assert all(r["gpu"] == "NVIDIA H200" for r in rows)


def test_a_barrier_used_before_its_init_is_judged_not_refused(tmp_path):
    """Gluon lets a kernel wait on a barrier it never initialised (Triton's sanitizer test
    test_barrier_use_without_init): the reader keeps the op, the replay reports it."""
    text = (FIXTURES / "tma_k256_s3.sm90.ttgir").read_text()
    line = next(ln for ln in text.splitlines() if "ttng.init_barrier %acc_8," in ln)
    path = tmp_path / "tma_k256_s3.sm90.ttgir"
    path.write_text(text.replace(line + "\n", ""))
    (tmp_path / "tma_k256_s3.sm90.launch.json").write_text((FIXTURES / "tma_k256_s3.sm90.launch.json").read_text())
    verdict, _ = judge(read(path)[0])
    assert "use_before_init" in verdict.kinds()
