"""The runners of today's clock and round-trip microbenchmarks (kernels/runner/mbar_roundtrip.py,
kernels/runner/sm_clock.py): the configs they launch, the statistics they keep, and that every
kernel they name is one the .cu defines with the arguments they pass.  The kernels themselves run
on the GPU machine (results/silicon/microbench/2026-12-03_h200_sm_clock_wgmma.md)."""

from __future__ import annotations

import re
from pathlib import Path

from kernels.runner import mbar_roundtrip, sm_clock

MICROBENCH = Path(__file__).resolve().parent.parent / "kernels" / "microbench"


def kernels_of(cu: str) -> dict[str, list[str]]:
    """The extern "C" kernels a .cu defines (macro-made ones expanded by their argument), with
    their parameters' names."""
    text = (MICROBENCH / cu).read_text()
    out = {name: [p.strip().split()[-1].lstrip("*") for p in params.split(",")]
           for name, params in re.findall(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(([^)]*)\)', text)}
    for macro, body in re.findall(r"#define (\w+)\(N\)((?:[^\n]*\\\n)+[^\n]*)", text):
        m = re.search(r"void __launch_bounds__\(\d+\) (\w+)##N\(([^)]*)\)", re.sub(r"\s*\\\n\s*", " ", body))
        for n in re.findall(rf"^{macro}\((\d+)\)$", text, re.M):
            out[m.group(1) + n] = [p.strip().split()[-1].lstrip("*") for p in m.group(2).split(",")]
    return out


def test_mbar_roundtrip_sweeps_every_delay_with_loads_and_keeps_a_control():
    configs = mbar_roundtrip.configs()
    assert len(configs) == len(set(configs))
    for n in (128, 64):
        for mma in (1, 0):
            assert {d for (n_, m, load, d) in configs if (n_, m, load) == (n, mma, 1)} == set(mbar_roundtrip.DELAYS)
            assert {d for (n_, m, load, d) in configs if (n_, m, load) == (n, mma, 0)} == set(mbar_roundtrip.CONTROL_DELAYS)
    # the landing window (the model: ~1,170 cycles after the issue) lies inside the swept delays plus a block
    assert max(mbar_roundtrip.DELAYS) >= 1_200


def test_mbar_roundtrip_kernels_exist_with_the_runners_arguments():
    defined = kernels_of("mbar_roundtrip.cu")
    for n in {c[0] for c in mbar_roundtrip.configs()}:
        params = defined[f"mbar_roundtrip_n{n}"]
        assert params == ["A_map", "B_map", "iters", "kt", "load", "mma", "delay", "rec", "out"]
    assert mbar_roundtrip.stage_bytes(128) == 32 * 1024 and mbar_roundtrip.stage_bytes(64) == 24 * 1024


def test_mbar_roundtrip_statistics_leave_out_the_first_iterations():
    fields = len(mbar_roundtrip.FIELDS)
    records = [[10_000] * fields] * mbar_roundtrip.SKIP + [[100, 600, 115, 900, 0]] * 5 + [[100, 600, 121, 900, 1]]
    s = mbar_roundtrip.summarize(records)
    assert s["round_trip"]["median"] == 115 and s["round_trip"]["max"] == 121 and s["round_trip"]["min"] == 115
    assert s["failed_tries"]["mean"] == round(1 / 6, 1) and s["to_block"]["max"] == 100


def test_sm_clock_launches_every_kernel_with_its_parameters_and_shared_memory():
    defined = kernels_of("sm_clock.cu")
    assert set(sm_clock.SMEM) == set(defined)
    out, sink = type("T", (), {"data_ptr": lambda self: 0})(), type("T", (), {"data_ptr": lambda self: 0})()
    for kernel in ("spin", "spin_fma", "spin_wgmma", "spin_wgmma_n64", "spin_wgmma_n16"):
        assert len(sm_clock._spin_args(kernel, 1000, out, sink)) == len(defined[kernel])
    # the wgmma spins read the A and B boxes from dynamic shared memory: 16 KiB each at most
    assert all(sm_clock.SMEM[k] >= 2 * 128 * 128 for k in defined if k.startswith("spin_wgmma"))
    assert defined["spin_wgmma_duty"] == ["cycles", "idle", "sleep", "out", "sink"]
