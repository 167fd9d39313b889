"""The Triton pipeline builder reproduces, op for op, what the TTGIR reader makes of
Triton's own output -- so a configuration explored with the builder is the pipeline
Triton would compile -- and its bug knobs break it the way kernel authors do."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from protosim.builders.triton_pipeline import PipelineConfig, build
from protosim.config import ConfigError
from protosim.frontends.ttgir import read
from protosim.verdict import judge

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triton"
POINTER_FIXTURES = sorted(p for p in FIXTURES.glob("*.ttgir") if not p.name.startswith("tma"))


def config_of(path: Path) -> PipelineConfig:
    launch = json.loads(path.with_suffix(".launch.json").read_text())
    meta = json.loads(path.with_suffix(".json").read_text())
    return PipelineConfig(M=launch["M"], N=launch["N"], K=launch["K"], num_stages=meta["num_stages"],
                          num_warps=meta["num_warps"], arch="h200" if ".sm90." in path.name else "gb10")


def canonical(schedule) -> list:
    """Every CTA's ops with each global read's key replaced by its number in order of first
    appearance over the launch: the builder and the reader name the data differently (``a@3|m=1``,
    ``a@3|%offs_m@33=64``), but must agree on which reads, in which CTAs, are the same data."""
    names: dict[str, str] = {}

    def key(op):
        src = getattr(op, "src", None)
        if not isinstance(src, str) or not src:
            return op
        return dataclasses.replace(op, src=names.setdefault(src, f"k{len(names)}"))
    return [tuple(tuple(key(op) for op in ops) for ops in c.roles) for c in schedule.ctas]


@pytest.mark.parametrize("path", POINTER_FIXTURES, ids=lambda p: p.stem)
def test_builder_equals_the_reader_on_tritons_output(path):
    from_ttgir, _ = read(path)
    built = build(config_of(path))
    assert [(b.name, b.stages, b.bytes) for b in built.buffers] == [(b.name, b.stages, b.bytes) for b in from_ttgir.buffers]
    assert len(built.ctas) == len(from_ttgir.ctas)
    assert canonical(built) == canonical(from_ttgir)


@pytest.mark.parametrize("num_stages", [2, 3, 4, 5])
@pytest.mark.parametrize("arch", ["gb10", "h200"])
def test_correct_pipelines_at_any_depth(num_stages, arch):
    verdict, _ = judge(build(PipelineConfig(K=512, num_stages=num_stages, arch=arch)))
    assert verdict.ok, [f.message for f in verdict.findings[:2]]


@pytest.mark.parametrize("knobs, kinds", [
    ({"wait_delta": 1, "num_stages": 3}, {"raw_race"}),
    ({"wait_delta": 2, "num_stages": 3}, {"raw_race"}),
    ({"alias_stages": True, "num_stages": 3}, {"raw_hazard"}),
    ({"alias_stages": True, "num_stages": 3, "arch": "h200"}, {"raw_hazard", "war_race"}),
    ({"pendings_delta": 1, "num_stages": 3, "arch": "h200"}, {"war_race"}),
])
def test_bug_knobs_are_found_with_the_right_kind(knobs, kinds):
    verdict, _ = judge(build(PipelineConfig(K=256, **knobs)))
    assert kinds <= {f.kind for f in verdict.findings}


@pytest.mark.parametrize("fields, field", [
    ({"num_stages": 1}, "num_stages"),
    ({"M": 100}, "M"),
    ({"arch": "b200"}, "arch"),
    ({"pendings_delta": 1}, "pendings_delta"),
    ({"warps": 4}, "warps"),
    ({"alias_stages": 1}, "alias_stages"),
])
def test_bad_configs_name_the_field(fields, field):
    with pytest.raises(ConfigError) as err:
        PipelineConfig.from_dict(fields)
    assert err.value.field == field
