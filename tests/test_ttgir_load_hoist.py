"""Where the TTGIR reader issues a ``tt.load`` (``Walker.hoist_to``): ptxas issues loads as
early as their operands allow, up to the most ``ld.global`` a thread has out in the compiled
SASS (``ldg_in_flight``).  Held-out set 7's LayerNorm backward interleaves ``load x; extf;
load dy; extf; ...`` in its TTGIR; its SASS has all eight ld.global out at once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from protosim.arch import load_profile
from protosim.engine.machine import replay
from protosim.frontends.ttgir import read
from protosim.frontends.ttgir.walk import instructions
from protosim.ir import GlobalLoad, GlobalLoadWait
from tests.triton_corpus import fixture_copy, replacing

H200 = load_profile("h200")
LN_BWD = (Path(__file__).resolve().parent / "fixtures" / "triton" / "heldout7" / "triton-3.6.0"
          / "h7_layernorm_bwd_dx_fp16_n2048_w4.sm90.ttgir")


def copy(tmp_path: Path, edits=(), ctas: int = 4, **meta) -> Path:
    path = fixture_copy(tmp_path, LN_BWD, replacing(list(edits)), meta=meta)
    launch = tmp_path / LN_BWD.name.replace(".ttgir", ".launch.json")
    launch.write_text(json.dumps({**json.loads(launch.read_text()), "ctas": ctas}))
    return path


def ops_of(path: Path):
    schedule, _ = read(path)
    return schedule, schedule.ctas[0].roles[0]


def loads_and_waits(ops) -> list:
    return [("load", instructions(op)) if isinstance(op, GlobalLoad) else ("wait", op.pending)
            for op in ops if isinstance(op, (GlobalLoad, GlobalLoadWait))]


def most_out(ops) -> int:
    """The most ld.global instructions a thread has out at once along ``ops`` (loads return in order)."""
    out: list[int] = []
    worst = 0
    for op in ops:
        if isinstance(op, GlobalLoad):
            out.append(instructions(op))
            worst = max(worst, sum(out))
        elif isinstance(op, GlobalLoadWait):
            out = out[len(out) - op.pending:] if op.pending else []
    return worst


def test_the_loads_issue_together_as_the_sass_has_them(tmp_path):
    """ldg_in_flight 8 (as compiled): x, dy, w (two 16-byte loads a thread each), mean and rstd
    all issue before the first wait, and each wait leaves the newer loads out."""
    _, ops = ops_of(copy(tmp_path))
    assert loads_and_waits(ops) == [("load", 2), ("load", 2), ("load", 2), ("load", 1), ("load", 1),
                                    ("wait", 4), ("wait", 3), ("wait", 2), ("wait", 1), ("wait", 0)]


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 6])
def test_no_more_loads_out_than_the_sass_has(tmp_path, limit):
    _, ops = ops_of(copy(tmp_path, ldg_in_flight=limit))
    assert most_out(ops) <= max(limit, 2)  # one load of two instructions is never split
    assert sum(1 for op in ops if isinstance(op, GlobalLoad)) == 5


def test_more_in_flight_allowed_means_more_out(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, four = ops_of(copy(tmp_path / "a", ldg_in_flight=4))
    _, eight = ops_of(copy(tmp_path / "b", ldg_in_flight=8))
    assert most_out(four) == 4 and most_out(eight) == 8


def test_without_the_sass_count_the_ttgir_order_stands(tmp_path):
    path = copy(tmp_path)
    meta = tmp_path / LN_BWD.name.replace(".ttgir", ".json")
    data = json.loads(meta.read_text())
    del data["ldg_in_flight"]
    meta.write_text(json.dumps(data))
    _, ops = ops_of(path)
    assert loads_and_waits(ops)[:4] == [("load", 2), ("wait", 0), ("load", 2), ("wait", 0)]


def test_a_load_addressed_by_a_loaded_value_waits_for_it(tmp_path):
    """dy gathered at offsets computed from x: its load cannot issue before x is in."""
    path = copy(tmp_path, edits=[(
        "%dy_10 = tt.addptr %dy, %off_6 :",
        "%xi = arith.fptosi %x_8 : tensor<2048xf16, #blocked> to tensor<2048xi64, #blocked>\n"
        "    %dy_10 = tt.addptr %dy, %xi :")])
    _, ops = ops_of(path)
    seq = loads_and_waits(ops)
    assert seq[:3] == [("load", 2), ("wait", 0), ("load", 2)]  # x, its wait, then dy
    assert ("load", 2) in seq[3:]  # w is independent of both: it still moves up past dy's wait
    first_wait = seq.index(("wait", 0))
    assert all(kind == "load" for kind, _ in seq[:first_wait])


def test_issuing_together_is_faster(tmp_path):
    """Replayed, the hoisted loads overlap their latencies: the TTGIR order pays them one by one."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    together, _ = ops_of(copy(tmp_path / "a", ldg_in_flight=8))
    apart, _ = ops_of(copy(tmp_path / "b", ldg_in_flight=1))

    def cycles(s):
        return replay(dataclasses.replace(s, l2_at_launch="inputs"), H200).end_cycle
    assert cycles(together) < cycles(apart) - 2 * H200.global_load_l2_cycles
