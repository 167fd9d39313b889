"""Frontends that produce schedules.  ``BUILDERS`` maps a builder name (as used in
scenario files) to a function ``GemmConfig -> Schedule``."""

from protosim.builders.seed_gemm import BUILDERS, persistent_tiles

__all__ = ["BUILDERS", "persistent_tiles"]
