"""The hand-written builders are the kernels, op for op.

For each step of the seed's kernels on b200 (``kernels/tirx/seed_sm100.py`` v1-v6) and of the
Hopper kernels on h200 (``kernels/tirx/hopper.py`` v2-v6, ws), and a set of configs that sets
every knob the kernel builds at least once (the seed builds only ``skip_mma_phase_flip`` and
``reset_phase_per_tile``; Hopper every knob in ``builders.HONOURS``), the builder's schedule
and the one the TIRx frontend reads out of the kernel (``kernels.tirx.extracted``) are the
same up to names: :func:`protosim.frontends.tirx.compare.schedule_diff` finds nothing.

Contents are renamed CTA by CTA (``schedule_diff`` does): the frontend names what a CTA
writes by that CTA's own write count (``tmem@r0#1``, the same in every CTA), a builder by the
tile (``acc(1, 0)@k=0``); within a CTA one renaming must map one onto the other.

Writing this test found the builders' drifts from the kernels (docs/tirx.md) and four fields
the frontend read wrong on the thread-copy steps (per-lane bytes of ``Tx.cta.copy``, the
copies' source tile, the operand tiles' alignment, warp 0's lagging sleep); both sides are
now fixed, so every case compares whole.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tvm", reason="the kernels are TIRx PrimFuncs; apache-tvm is not installed")

from kernels.tirx.extracted import extract_schedule  # noqa: E402
from protosim.builders import BUILDERS, HONOURS  # noqa: E402
from protosim.config import BUG_KNOBS, DELAY_KNOBS, GemmConfig  # noqa: E402
from protosim.frontends.tirx.compare import schedule_diff  # noqa: E402

SMALL = dict(M=256, N=256, K=256)
SEED = [  # (step, config) on b200; the seed's kernels refuse every other knob
    ("v1", dict(M=128, N=128, K=64)),
    ("v2", dict(M=128, N=64, K=256, BLK_N=64)),
    ("v2", dict(M=128, N=128, K=192, skip_mma_phase_flip=True)),
    ("v3", dict(M=256, N=128, K=192)),
    ("v3", dict(M=128, N=128, K=128, BLK_N=64, skip_mma_phase_flip=True)),
    ("v4", dict(SMALL)),
    ("v4", dict(M=128, N=256, K=192, BLK_N=64, skip_mma_phase_flip=True)),
    ("v5", dict(M=128, N=128, K=320, PIPE_DEPTH=1)),
    ("v5", dict(M=256, N=128, K=320, PIPE_DEPTH=3)),
    ("v5", dict(M=128, N=128, K=512, BLK_N=64, PIPE_DEPTH=4, skip_mma_phase_flip=True)),
    ("v6", dict(M=256, N=256, K=192, PIPE_DEPTH=2, sm_count=3)),
    ("v6", dict(M=256, N=128, K=192, PIPE_DEPTH=2, sm_count=1, reset_phase_per_tile=True)),
    ("v6", dict(M=384, N=256, K=128, BLK_N=64, PIPE_DEPTH=3, sm_count=4, l2_group_size=2, skip_mma_phase_flip=True)),
    ("v6", dict(M=128, N=128, K=128, PIPE_DEPTH=4, sm_count=3)),  # more CTAs than tiles: the seed launches them all
]
HOPPER = [  # (step, config) on h200
    ("v2", dict(M=128, N=128, K=256)),
    ("v2", dict(M=128, N=64, K=192, BLK_N=64, wait_parity_flip="mma", lag_warp=2, lag_ns=500)),
    ("v3", dict(M=256, N=128, K=192, skip_mma_phase_flip=True, consumer_delay_ns=300)),
    ("v4", dict(SMALL)),
    ("v4", dict(M=256, N=128, K=192, tma_issuer="each_warp", skip_store_wait=True, skip_mma_phase_flip=True)),
    ("v4", dict(M=128, N=128, K=256, BLK_N=64, expect_tx_delta=-512, producer_delay_ns=400)),
    ("v4", dict(M=128, N=128, K=192, wait_parity_flip="tma", lag_warp=3, lag_ns=200, consumer_delay_ns=300)),
    ("v5", dict(M=256, N=128, K=320, PIPE_DEPTH=3, tma_issuer="each_warp", skip_store_wait=True)),
    ("v5", dict(M=128, N=128, K=192, PIPE_DEPTH=2, producer_delay_ns=300, lag_warp=0, lag_ns=400)),
    ("v5", dict(M=128, N=128, K=256, PIPE_DEPTH=1, expect_tx_delta=256, consumer_delay_ns=300)),
    ("v5", dict(M=128, N=128, K=512, BLK_N=64, PIPE_DEPTH=4, wait_parity_flip="mma", skip_mma_phase_flip=True)),
    ("v6", dict(M=256, N=256, K=192, PIPE_DEPTH=2, sm_count=3, expect_tx_delta=512, consumer_delay_ns=200)),
    ("v6", dict(M=256, N=128, K=192, PIPE_DEPTH=2, sm_count=1, reset_phase_per_tile=True, lag_warp=1, lag_ns=300)),
    ("v6", dict(M=384, N=256, K=128, BLK_N=64, PIPE_DEPTH=3, sm_count=4, l2_group_size=2, tma_issuer="each_warp",
                skip_store_wait=True, producer_delay_ns=300)),
    ("v6", dict(M=128, N=256, K=256, BLK_N=64, PIPE_DEPTH=4, sm_count=2, skip_mma_phase_flip=True)),
    ("v6", dict(M=256, N=128, K=128, PIPE_DEPTH=1, sm_count=1, wait_parity_flip="mma")),
    ("v6", dict(M=256, N=128, K=128, PIPE_DEPTH=2)),  # sm_count unset: Hopper launches min(132, tiles) CTAs
    ("ws", dict(M=256, N=256, K=256, PIPE_DEPTH=2, sm_count=2)),
    ("ws", dict(M=256, N=128, K=320, PIPE_DEPTH=2, sm_count=1, reset_phase_per_tile=True)),
    ("ws", dict(M=128, N=128, K=256, PIPE_DEPTH=3, sm_count=1, skip_mma_phase_flip=True, lag_warp=1, lag_ns=300)),
    ("ws", dict(M=256, N=128, K=192, PIPE_DEPTH=1, sm_count=2, wait_parity_flip="mma", producer_delay_ns=400)),
    ("ws", dict(M=384, N=256, K=128, BLK_N=64, PIPE_DEPTH=4, sm_count=3, l2_group_size=2, wait_parity_flip="tma",
                expect_tx_delta=-1024, skip_store_wait=True, consumer_delay_ns=300)),
    ("ws", dict(M=128, N=128, K=128, PIPE_DEPTH=2, sm_count=8)),  # more SMs than tiles: clamped to the tiles
    # ws on thread-block clusters (kernels/tirx/hopper_cluster.py); more in tests/test_tirx_clusters.py
    ("ws", dict(M=256, N=256, K=256, PIPE_DEPTH=2, sm_count=4, cluster_m=2, multicast_skip_rank=1)),
    ("ws", dict(M=256, N=256, K=192, PIPE_DEPTH=2, sm_count=2, cluster_n=2, release_unscaled=True)),
    ("ws", dict(M=256, N=256, K=192, PIPE_DEPTH=3, sm_count=4, cluster_m=2, cluster_n=2, expect_tx_local=True)),
    ("ws", dict(M=512, N=128, K=128, PIPE_DEPTH=1, sm_count=4, cluster_m=2, skip_exit_sync=True, lag_warp=2, lag_ns=300)),
]
CASES = [("b200", s, c) for s, c in SEED] + [("h200", s, c) for s, c in HOPPER]

def _id(case) -> str:
    arch, step, cfg = case
    return f"{arch}-{step}-" + "-".join(f"{k}={v}" for k, v in cfg.items())


@pytest.mark.parametrize("arch, step, fields", CASES, ids=[_id(c) for c in CASES])
def test_builder_is_the_kernel_op_for_op(arch, step, fields):
    cfg = GemmConfig(arch=arch, **fields)
    built, kernel = BUILDERS[f"hgemm_{step}"](cfg), extract_schedule(step, cfg)
    assert schedule_diff(built, kernel, limit=3) == []


SEED_KNOBS = {"v2": {"skip_mma_phase_flip"}, "v3": {"skip_mma_phase_flip"}, "v4": {"skip_mma_phase_flip"},
              "v5": {"skip_mma_phase_flip", "PIPE_DEPTH"},
              "v6": {"skip_mma_phase_flip", "reset_phase_per_tile", "PIPE_DEPTH", "sm_count", "l2_group_size"}}
"""What the seed's kernels read of a config beyond the shape (seed_sm100.py ``HONOURED_KNOBS``;
v1 has no K loop, so no phase to flip)."""


def _set_in(cases: list[tuple[str, dict]], steps: tuple[str, ...]) -> set[str]:
    default = GemmConfig()
    return {k for s, c in cases if s in steps for k, v in c.items() if v != getattr(default, k)}


@pytest.mark.parametrize("step", ["v2", "v3", "v4", "v5", "v6", "ws"])
def test_the_cases_set_every_knob_each_kernel_builds(step):
    """Every knob the kernel of ``step`` builds is away from its default in one of its
    cases (v2 and v3 are one code: their cases count for both)."""
    steps = ("v2", "v3") if step in ("v2", "v3") else (step,)
    knobs = {"PIPE_DEPTH", "sm_count", "l2_group_size", *BUG_KNOBS, *DELAY_KNOBS} - {"lag_warp"}  # lag_warp: with lag_ns
    hopper = HONOURS[f"hgemm_{step}"] & knobs
    assert hopper <= _set_in(HOPPER, steps), f"h200 {step}: no case sets {sorted(hopper - _set_in(HOPPER, steps))}"
    seed = SEED_KNOBS.get(step, set())
    assert seed <= _set_in(SEED, steps), f"b200 {step}: no case sets {sorted(seed - _set_in(SEED, steps))}"
