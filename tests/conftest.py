"""Shared fixtures: small schedules built by the seed builders and by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from protosim.builders import BUILDERS
from protosim.config import GemmConfig
from protosim.ir import (
    Access,
    Arrive,
    BarrierDecl,
    BufferDecl,
    CtaProgram,
    RoleDecl,
    Schedule,
)


# No wall-clock deadline on any property test: Hypothesis's default (200 ms per example) is a
# timed unit test in disguise, and it failed test_pipeline_emitter on a loaded 2-core VM
# (2026-12-01).  Speed belongs in benchmarks/.  Tests that set their own settings keep them.
settings.register_profile("protosim", deadline=None)
settings.load_profile("protosim")


def run_benchmark(script: str, *args: str) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> --no-record ARGS`` from the repository root (its output captured)."""
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, str(root / "benchmarks" / script), "--no-record", *args],
                          capture_output=True, text=True, timeout=120, cwd=root)


def build(builder: str, **config) -> Schedule:
    return BUILDERS[builder](GemmConfig.from_dict(config))


def hand_schedule(*roles: tuple[str, int, list], barriers=(("bar", 1),), buffers=(), arch="h200", ctas=1) -> Schedule:
    """A schedule from (role name, warps, ops) triples, the same program in every CTA."""
    return Schedule(
        name="hand",
        arch=arch,
        barriers=tuple(BarrierDecl(n, c) for n, c in barriers),
        buffers=tuple(buffers),
        roles=tuple(RoleDecl(n, w) for n, w, _ in roles),
        ctas=tuple(CtaProgram(i, tuple(tuple(ops) for _, _, ops in roles)) for i in range(ctas)),
    )


@pytest.fixture
def small_seed_configs():
    """One correct configuration per seed step, on both archs."""
    cases = [
        ("hgemm_v1", {}),
        ("hgemm_v2", {"K": 256}),
        ("hgemm_v3", {"M": 256, "N": 256, "K": 256}),
        ("hgemm_v4", {"M": 256, "N": 128, "K": 256}),
        ("hgemm_v5", {"M": 256, "N": 128, "K": 512, "PIPE_DEPTH": 3}),
        ("hgemm_v6", {"M": 512, "N": 256, "K": 256, "sm_count": 3}),
    ]
    return [(b, dict(cfg, arch=arch)) for b, cfg in cases for arch in ("b200", "h200")]


__all__ = ["build", "hand_schedule", "run_benchmark", "Access", "Arrive", "BufferDecl"]
