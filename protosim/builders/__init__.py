"""Frontends that produce schedules.  ``BUILDERS`` maps a builder name (as used in
scenario files) to a function ``config -> Schedule``; ``CONFIGS`` names the config
record each one takes (``GemmConfig`` unless listed)."""

from protosim.builders import triton_pipeline
from protosim.builders.seed_gemm import BUILDERS as SEED_BUILDERS
from protosim.builders.seed_gemm import persistent_tiles
from protosim.builders.ws_gemm import BUILDERS as WS_BUILDERS
from protosim.config import GemmConfig

GEMM_BUILDERS = {**SEED_BUILDERS, **WS_BUILDERS}
BUILDERS = {**GEMM_BUILDERS, "triton_pipeline": triton_pipeline.build}
CONFIGS = {name: GemmConfig for name in GEMM_BUILDERS} | {"triton_pipeline": triton_pipeline.PipelineConfig}

__all__ = ["BUILDERS", "CONFIGS", "persistent_tiles"]
