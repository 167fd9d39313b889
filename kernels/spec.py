"""What a Hopper protocol kernel is, without tvm: its spec, its limits and the
layout of the records it writes.  The GPU runner imports this module (the GPU
machine has only tvm's runtime), the builder imports it too, so both sides read
``diag`` and ``trace`` the same way.

``trace`` (int64[TRACE_CAP, 4], zero-filled by the runner) is split in quarters, one
per tracing thread: thread 0 of the MMA warpgroup, lane 0 of the ws producer, the
load observer, the completion observer; a row is ``(event, k, clock64, tile)`` and
event 0 marks an unused row."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from protosim.config import F16_BYTES, LAUNCH_KNOBS, ConfigError, GemmConfig

STEPS = ("v2", "v3", "v4", "v5", "v6", "ws")
H200_SMS = 132  # protosim/arch/h200.toml sm_count; the persistent grid's default
SMEM_LIMIT = 227 * 1024  # max dynamic SMEM per block on sm_90 (CUDA Programming Guide, table of compute capabilities)

DIAG_WORDS = 16
DIAG_FIELDS = (
    "timeouts",      # 0: threads that hit the watchdog (first one writes 1-8)
    "barrier",       # 1: 1 tma_bar / full, 2 mma_bar, 3 empty
    "stage",         # 2: barrier index in its array
    "role",          # 3: 0 MMA warpgroup (all of v2-v6), 1 TMA producer warp (ws)
    "k",             # 4: the thread's k-tile counter (running over tiles in v6/ws)
    "tile",          # 5: output tiles this CTA had started
    "parity",        # 6: the parity the wait asked for
    "cta",           # 7
    "thread",        # 8
)
BARRIER_NAMES = {1: "tma_bar", 2: "mma_bar", 3: "empty_bar"}
ROLE_NAMES = {0: "mma", 1: "producer"}
TRACE_CAP = 4096
TRACE_EVENTS = {
    # thread 0 of the MMA warpgroup (lane 0 of the producer warp in ws)
    1: "tma_issue", 2: "load_wait_return", 3: "mma_issue", 4: "mma_done", 5: "store_issue", 6: "store_done",
    # the observer warp: when a barrier phase completed
    7: "load_complete", 8: "mma_complete", 9: "stage_released", 99: "observer_lost_phase",
}


@dataclass(frozen=True)
class KernelSpec:
    """What one binary is: a step, a config (its bug knobs) and whether it traces."""

    step: str
    config: GemmConfig
    trace: bool = False

    @property
    def name(self) -> str:
        knobs = "-".join(f"{k}={v}" for k, v in sorted(self.config.bug_knobs.items())) or "correct"
        c = self.config
        return f"h200_{self.step}_{c.M}x{c.N}x{c.K}_p{c.PIPE_DEPTH}_{knobs}{'_trace' if self.trace else ''}"

    def to_dict(self) -> dict:
        """Launch conditions (``LAUNCH_KNOBS``) are left out: they do not change the binary."""
        config = {k: v for k, v in self.config.to_dict().items() if k not in LAUNCH_KNOBS}
        return {"step": self.step, "config": config, "trace": self.trace}

    @property
    def key(self) -> str:
        """Stable identity of the binary's inputs (the builder adds the toolchain to it)."""
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def check(step: str, cfg: GemmConfig) -> None:
    """Raise :class:`ConfigError` for what these kernels cannot build."""
    cfg.validate()
    if step not in STEPS:
        raise ConfigError("step", f"{step!r}; Hopper kernels exist for {', '.join(STEPS)}")
    if cfg.BLK_K != 64:
        raise ConfigError("BLK_K", f"{cfg.BLK_K}: the 128-byte-swizzled operand tiles need BLK_K = 64 fp16")
    if cfg.BLK_N % 16 or not 16 <= cfg.BLK_N <= 128:
        raise ConfigError("BLK_N", f"{cfg.BLK_N}: use a multiple of 16 up to 128 (the accumulator lives in registers)")
    if step == "v2" and (cfg.m_tiles, cfg.n_tiles) != (1, 1):
        raise ConfigError("M", f"v2 computes one output tile: set M = {cfg.BLK_M} and N = {cfg.BLK_N}; use v3 for a grid")
    if step == "ws" and cfg.tma_issuer != "one":
        raise ConfigError("tma_issuer", "ws has one producer warp by construction; each_warp applies to v4-v6")
    if step in ("v2", "v3") and (cfg.tma_issuer != "one" or cfg.expect_tx_delta or cfg.wait_parity_flip == "tma"):
        raise ConfigError("step", f"{step} loads with thread copies: TMA knobs apply from v4 on")
    if step in ("v2", "v3") and cfg.skip_store_wait:
        raise ConfigError("skip_store_wait", f"{step} stores straight from registers: no TMA store to skip the wait of")
    if cfg.reset_phase_per_tile and step not in ("v6", "ws"):
        raise ConfigError("reset_phase_per_tile", f"{step} computes one tile per CTA; the knob applies to v6 and ws")
    if smem_bytes(step, cfg) > SMEM_LIMIT:
        raise ConfigError("PIPE_DEPTH", f"{smem_bytes(step, cfg)} bytes of SMEM exceed the sm_90 limit of {SMEM_LIMIT}")


def stages(step: str, cfg: GemmConfig) -> int:
    return cfg.PIPE_DEPTH if step in ("v5", "v6", "ws") else 1


def smem_bytes(step: str, cfg: GemmConfig) -> int:
    ab = stages(step, cfg) * (cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * F16_BYTES
    d = cfg.BLK_M * cfg.BLK_N * F16_BYTES  # Dsmem (unused by v2/v3, allocated by the one kernel body)
    return 1024 + ab + d  # barriers sit below the 1024-aligned operand tiles


def grid_ctas(step: str, cfg: GemmConfig) -> int:
    if step in ("v6", "ws"):
        return min(cfg.sm_count or H200_SMS, cfg.m_tiles * cfg.n_tiles)
    return cfg.m_tiles * cfg.n_tiles
