"""The SimPy engine: replays a schedule and writes one event log."""

from protosim.engine.machine import Machine, replay, smem_bytes
from protosim.engine.perturb import Perturbation, explore_plan, race_plan
from protosim.engine.result import Blocked, RunResult, Trap

__all__ = ["Blocked", "Machine", "RunResult", "Trap", "replay", "smem_bytes", "Perturbation", "explore_plan", "race_plan"]
