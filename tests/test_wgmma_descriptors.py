"""Where a wgmma's descriptors are built, and what it costs (docs/semantics.md "wgmma"):
per-thread registers moved with R2UR when the MMA's shared-memory address moves between
executions (a stage ring), uniform registers otherwise -- stated once by
``protosim.ptxas.with_wgmma_descriptors`` for the builders and the TIRx frontend."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.engine.machine import replay
from protosim.ir import (
    Access,
    BufferDecl,
    CtaProgram,
    RoleDecl,
    Schedule,
    ScheduleError,
    Wgmma,
    WgmmaCommit,
    WgmmaWait,
    from_json,
    to_json,
    validate,
)
from protosim.ptxas import with_wgmma_descriptors

RECORD = (Path(__file__).resolve().parent.parent / "results" / "silicon" / "timing"
          / "2026-12-01_h200_f4a383d_bn_sweep.jsonl")


def _descriptors(step: str, **kw) -> set[str]:
    s = BUILDERS[step](GemmConfig(arch="h200", **kw))
    return {op.descriptors for cta in s.ctas for ops in cta.roles for op in ops if isinstance(op, Wgmma)}


@pytest.mark.parametrize("step, kw, expected", [
    ("hgemm_v4", dict(M=128, N=16, K=4096, BLK_N=16), "uniform"),  # one stage: the same address every time
    ("hgemm_v3", dict(M=256, N=256, K=1024), "uniform"),
    ("hgemm_v5", dict(M=128, N=16, K=4096, BLK_N=16, PIPE_DEPTH=1), "uniform"),
    ("hgemm_v5", dict(M=128, N=16, K=4096, BLK_N=16, PIPE_DEPTH=2), "per_thread"),
    ("hgemm_v5", dict(M=128, N=16, K=64, BLK_N=16, PIPE_DEPTH=2), "uniform"),  # one k-tile: one stage used
    ("hgemm_v6", dict(M=512, N=512, K=1024, PIPE_DEPTH=3), "per_thread"),
    ("hgemm_ws", dict(M=512, N=512, K=1024, PIPE_DEPTH=4, sm_count=4), "per_thread"),
])
def test_the_builders_state_where_the_descriptors_are_built(step, kw, expected):
    assert _descriptors(step, **kw) == {expected}


def _wgmma_schedule(stages: tuple[int, ...], n: int = 16) -> Schedule:
    ops = []
    for k, st in enumerate(stages):
        ops += [Wgmma(m=128, n=n, k_elems=64, reads=(Access("A", st, f"A{k}"), Access("B", st, f"B{k}")), k=k),
                WgmmaCommit(k=k), WgmmaWait(n=0, k=k)]
    depth = max(stages) + 1
    return Schedule("wgmma", "h200", (), (BufferDecl("A", "smem", bytes=16384, stages=depth),
                                         BufferDecl("B", "smem", bytes=128 * n, stages=depth)),
                    (RoleDecl("mma", 4),), (CtaProgram(0, (with_wgmma_descriptors(tuple(ops)),)),))


def test_the_rule_reads_the_stages_the_mmas_touch():
    assert {op.descriptors for op in _wgmma_schedule((0, 0, 0)).ctas[0].roles[0] if isinstance(op, Wgmma)} == {"uniform"}
    assert {op.descriptors for op in _wgmma_schedule((0, 1, 0)).ctas[0].roles[0] if isinstance(op, Wgmma)} == {"per_thread"}


@pytest.mark.parametrize("n", [16, 32, 64, 128])
def test_per_thread_descriptors_lengthen_only_the_short_instructions(n):
    """Two MMA blocks back to back: the per-thread floor (34 + 24 per instruction on the H200)
    adds time where N/2 + 1 is below it (N <= 64: 33 at 64) and nothing at N = 128."""
    arch = load_profile("h200")
    uniform = replay(_wgmma_schedule((0, 0), n)).end_cycle
    moving = replay(_wgmma_schedule((0, 1), n)).end_cycle
    rate = arch.mma_issue_base + arch.mma_issue_per_n * n
    per_inst = max(arch.wgmma_per_thread_desc_issue_min, rate) - max(arch.mma_issue_min, rate)
    assert moving - uniform == pytest.approx(2 * 8 * per_inst)
    assert (moving > uniform) == (n <= 64)


def test_the_field_survives_json_and_is_checked():
    s = _wgmma_schedule((0, 1))
    assert from_json(to_json(s)).ctas[0].roles[0][0].descriptors == "per_thread"
    assert "descriptors" not in json.dumps(to_json(_wgmma_schedule((0, 0))))
    doc = to_json(s)
    doc["ctas"][0]["roles"][0][0]["descriptors"] = "registers"
    with pytest.raises(ScheduleError, match="descriptors"):
        validate(from_json(doc))


LOOP_CLOCK = RECORD.parent.parent / "microbench" / "2026-12-04_h200_0f08f3e_loop_clock_epilogue.jsonl"


def _loop_clock_slopes() -> dict[tuple[str, int, int], float]:
    """The H200's k-iteration at one CTA in clock64 cycles (thread 0's clock before and after the
    MMA k-loop, the kernel otherwise as TVM builds it; slope from K 1024 to 4096), by (step,
    BLK_N, stages): results/silicon/microbench/2026-12-04_h200_loop_clock.md."""
    loops: dict[tuple[str, int, int], dict[int, int]] = defaultdict(dict)
    for line in LOOP_CLOCK.read_text().splitlines():
        r = json.loads(line)
        if r["loop_clock"]:
            c = r["config"]
            loops[(r["step"], c["BLK_N"], c["PIPE_DEPTH"])][c["K"]] = r["loop_cycles"]
    return {key: (k[4096] - k[1024]) / 48 for key, k in loops.items()}


@pytest.mark.parametrize("step, stages", [("v4", 1), ("v5", 2), ("v6", 4), ("ws", 4)])
def test_the_model_s_one_cta_k_iteration_against_the_h200_loop_clock(step, stages):
    """The replay's k-iteration at one CTA (its slope from K 1024 to 4096) against the H200's in
    clock64 cycles, within 10% at every BLK_N (the worst: v5 / v6 at BLK_N 32 and 64, ~8% short:
    their mma_bar round trip costs ~135 cycles where the model charges 67)."""
    measured = _loop_clock_slopes()
    for bn in (16, 32, 64, 128):
        cycles = {}
        for k in (1024, 4096):
            cfg = GemmConfig(M=128, N=bn, K=k, BLK_N=bn, PIPE_DEPTH=2 if step == "v4" else stages, arch="h200",
                             l2_at_launch="inputs")
            cycles[k] = replay(BUILDERS[f"hgemm_{step}"](cfg)).end_cycle
        model = (cycles[4096] - cycles[1024]) / 48
        assert model == pytest.approx(measured[(step, bn, stages)], rel=0.10), (step, bn, model)
