"""kernels.toolchain.build.build_plan compiles every distinct kernel: two jobs whose specs
differ only in a field the spec's name leaves out (sm_count) are two kernels, both built.
(Found on 2026-11-30: the work list was keyed by name, so 8 of 59 kernels of a plan were
never compiled and the bundle step failed.)"""

from __future__ import annotations

from kernels.plans import Job
from kernels.spec import KernelSpec
from kernels.toolchain import build
from protosim.config import GemmConfig


def test_kernels_differing_only_in_sm_count_are_both_built(tmp_path, monkeypatch):
    seen: dict[str, tuple] = {}
    monkeypatch.setattr(build, "toolchain_fingerprint", lambda: "fp")
    monkeypatch.setattr(build, "compile_in_pool", lambda worker, todo, workers, log=print: seen.update(todo))
    specs = [KernelSpec("v6", GemmConfig(M=256, N=256, K=256, arch="h200", sm_count=n)) for n in (2, 4)]
    assert specs[0].name == specs[1].name  # the premise: the name does not say sm_count
    paths = build.build_plan([Job(s) for s in specs], tmp_path, workers=1, log=lambda *_: None)
    assert len(paths) == 2
    assert sorted(out for _, out in seen.values()) == sorted(str(p) for p in paths.values())
