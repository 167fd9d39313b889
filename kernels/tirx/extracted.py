"""The schedule of the very kernel a config builds, read by protosim's TIRx frontend.

The cross-check predicts from these (one source of truth: the program that runs on the
H200), and the tests pin the builders (``protosim.builders``) to them op for op.

* :func:`primfunc` -- the uncompiled ``PrimFunc`` of a step and config: the Hopper kernels
  (``hopper.build``; ``ws`` on a cluster is ``ws_cluster``) on sm_90 archs, the seed's steps
  v1-v6 and the book's v7-v9 (v8, v9: 2-CTA clusters) on sm_100;
* :func:`launch_args` -- the scalar arguments the runner passes (``kernels/runner/gemm.py``);
* :func:`extract_schedule` -- both, through :func:`protosim.frontends.tirx.extract`.
"""

from __future__ import annotations

from typing import Any

from protosim.arch import load_profile
from protosim.config import GemmConfig
from protosim.ir import Schedule

WATCHDOG_CYCLES = 1 << 40
"""The runner's watchdog budget; the frontend never takes a wait's timeout branch, so any
value reads the same (docs/tirx.md)."""

STEP_OF_BUILDER = {f"hgemm_v{i}": f"v{i}" for i in range(1, 7)} | {"hgemm_ws": "ws"}


def primfunc(step: str, cfg: GemmConfig, trace: bool = False) -> Any:
    """The kernel ``step`` builds for ``cfg``: Hopper's on a wgmma arch, the seed's (v1-v6)
    or the book's steps 7-9 (``v7``, ``v8``, ``v9``) on a tcgen05 arch."""
    if load_profile(cfg.arch).mma_kind == "wgmma":
        from kernels.spec import KernelSpec
        from kernels.tirx import hopper

        if step == "ws" and cfg.cluster_size > 1:  # the simulator's ws on a cluster is the kernels' ws_cluster
            step = "ws_cluster"
        return hopper.build(KernelSpec(step, cfg, trace))
    if step in ("v7", "v8", "v9"):  # the book's steps: v8 (and v9) on 2-CTA clusters
        from kernels.tirx.book import book_step

        return book_step(step)(cfg)
    from kernels.tirx.seed_sm100 import SEED_STEPS

    return SEED_STEPS[step](cfg)


def launch_args(cfg: GemmConfig) -> dict[str, int]:
    """The scalar arguments of a launch (Hopper's kernels take the delay knobs at run time;
    the seed's have none and ignore these)."""
    return {"timeout_cycles": WATCHDOG_CYCLES, "producer_delay_ns": cfg.producer_delay_ns,
            "consumer_delay_ns": cfg.consumer_delay_ns, "lag_warp": cfg.lag_warp, "lag_ns": cfg.lag_ns}


def extract_schedule(step: str, cfg: GemmConfig, trace: bool = False) -> Schedule:
    """The schedule of ``primfunc(step, cfg)``, launched as the runner launches it."""
    from protosim.frontends.tirx import extract

    name = f"hgemm_{step}" if step in ("ws",) or step.startswith("v") else step
    return extract(primfunc(step, cfg, trace), cfg.arch, args=launch_args(cfg), name=name,
                   l2_at_launch=cfg.l2_at_launch, config=cfg.to_dict())
