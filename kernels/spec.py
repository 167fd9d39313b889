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

STEPS = ("v2", "v3", "v4", "v5", "v6", "ws", "ws_cluster")
CLUSTER_STEPS = ("ws_cluster",)
"""Steps launched as thread-block clusters (``cluster_m x cluster_n``; kernels/tirx/hopper_cluster.py)."""
CLUSTER_BUG_KNOBS = ("multicast_skip_rank", "release_unscaled", "expect_tx_local", "skip_exit_sync")
CLUSTER_HONOURED_KNOBS = ("skip_mma_phase_flip", "reset_phase_per_tile", "expect_tx_delta", "wait_parity_flip",
                          "skip_store_wait", *CLUSTER_BUG_KNOBS)
"""The bug knobs ``ws_cluster`` builds (``tma_issuer="each_warp"`` is refused: one producer warp)."""
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
    "cta",           # 7: blockIdx.x
    "thread",        # 8
    "rank",          # 9: cluster steps only: %cluster_ctarank of the CTA (records of other steps leave 9-10 out)
    "cluster",       # 10: cluster steps only: the cluster's index, blockIdx.x / cluster_size
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
        step = f"{self.step}{c.cluster_m}x{c.cluster_n}" if self.step in CLUSTER_STEPS else self.step
        return f"h200_{step}_{c.M}x{c.N}x{c.K}_p{c.PIPE_DEPTH}_{knobs}{'_trace' if self.trace else ''}"

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
    if step in CLUSTER_STEPS:
        check_cluster(cfg)
    else:
        for name in ("cluster_m", "cluster_n", *CLUSTER_BUG_KNOBS):
            if getattr(cfg, name) != getattr(GemmConfig(), name):
                raise ConfigError(name, f"{getattr(cfg, name)!r}: {step} runs without clusters; cluster shapes and knobs "
                                        f"are built by {', '.join(CLUSTER_STEPS)}")
    if cfg.reset_phase_per_tile and step not in ("v6", "ws", "ws_cluster"):
        raise ConfigError("reset_phase_per_tile", f"{step} computes one tile per CTA; the knob applies to v6 and ws")
    if smem_bytes(step, cfg) > SMEM_LIMIT:
        raise ConfigError("PIPE_DEPTH", f"{smem_bytes(step, cfg)} bytes of SMEM exceed the sm_90 limit of {SMEM_LIMIT}")


def check_cluster(cfg: GemmConfig) -> None:
    """What ``ws_cluster`` cannot build (:class:`ConfigError` naming the field)."""
    if cfg.tma_issuer != "one":
        raise ConfigError("tma_issuer", "ws_cluster has one producer warp by construction; each_warp applies to v4-v6")
    unknown = set(cfg.bug_knobs) - set(CLUSTER_HONOURED_KNOBS)
    if unknown:  # a knob added to GemmConfig later is refused here until the kernel builds it
        name = sorted(unknown)[0]
        raise ConfigError(name, f"ws_cluster does not build {name}; it builds {', '.join(CLUSTER_HONOURED_KNOBS)}")
    cm, cn = cfg.cluster_m, cfg.cluster_n
    if cfg.cluster_size == 1:
        for name in CLUSTER_BUG_KNOBS:
            if getattr(cfg, name) != getattr(GemmConfig(), name):
                raise ConfigError(name, f"{getattr(cfg, name)!r}: a 1x1 cluster is the plain ws protocol (no multicast, "
                                        f"no remote arrive, no cluster barrier); set cluster_m or cluster_n > 1")
    if cfg.m_tiles % cm:
        raise ConfigError("M", f"M={cfg.M} is {cfg.m_tiles} tiles of {cfg.BLK_M}, not a multiple of cluster_m={cm}: "
                               f"pick M as a multiple of {cm * cfg.BLK_M}")
    if cfg.n_tiles % cn:
        raise ConfigError("N", f"N={cfg.N} is {cfg.n_tiles} tiles of {cfg.BLK_N}, not a multiple of cluster_n={cn}: "
                               f"pick N as a multiple of {cn * cfg.BLK_N}")
    # a multicast slice is whole 128-byte swizzle atoms (8 rows of 64 fp16), so it starts 1024-aligned
    # in every CTA and the wgmma descriptors of the whole tile read it as if one CTA had loaded it
    if (cfg.BLK_N // cm) % 8:
        raise ConfigError("BLK_N", f"{cfg.BLK_N}: each of the cluster_m={cm} CTAs multicasts BLK_N/cluster_m = "
                                   f"{cfg.BLK_N / cm:g} rows of B; a slice must be a multiple of 8 rows (one swizzle atom)")
    if (cfg.BLK_M // cn) % 8:
        raise ConfigError("BLK_M", f"{cfg.BLK_M}: each of the cluster_n={cn} CTAs multicasts BLK_M/cluster_n rows of A, "
                                   f"not a multiple of 8 rows (one swizzle atom)")
    sms = cfg.sm_count or H200_SMS
    if sms < cfg.cluster_size:
        raise ConfigError("sm_count", f"{sms} CTAs cannot hold one cluster of {cfg.cluster_size}")


@dataclass(frozen=True)
class ClusterGeometry:
    """Who loads and multicasts what in a ``cluster_m x cluster_n`` cluster (pure Python: the
    kernel and whoever mirrors it read the same numbers).  Rank ``r`` (``%cluster_ctarank``,
    ``blockIdx.x % cluster_size``) sits at ``rm = r % cluster_m`` along M and
    ``rn = r // cluster_m`` along N; the CTAs of one rank row (same ``rm``) share the A tile,
    those of one rank column (same ``rn``) the B tile."""

    cluster_m: int
    cluster_n: int
    BLK_M: int
    BLK_N: int
    BLK_K: int

    @property
    def size(self) -> int:
        return self.cluster_m * self.cluster_n

    def rm(self, rank: int) -> int:
        return rank % self.cluster_m

    def rn(self, rank: int) -> int:
        return rank // self.cluster_m

    @property
    def a_rows(self) -> int:
        """Rows of A one CTA loads per k-tile: its slice ``rn`` of the BLK_M rows (all of them when cluster_n = 1)."""
        return self.BLK_M // self.cluster_n

    @property
    def b_rows(self) -> int:
        """Rows of (stored, N x K) B one CTA loads per k-tile: its slice ``rm``."""
        return self.BLK_N // self.cluster_m

    def a_mask(self, rank: int) -> int:
        """``cta_mask`` of ``rank``'s A-slice multicast: the ranks of its row (same rm), itself included."""
        return sum(1 << (self.rm(rank) + j * self.cluster_m) for j in range(self.cluster_n))

    def b_mask(self, rank: int) -> int:
        """``cta_mask`` of ``rank``'s B-slice multicast: the ranks of its column (same rn), itself included."""
        return sum(1 << (i + self.rn(rank) * self.cluster_m) for i in range(self.cluster_m))

    def release_peers(self, rank: int) -> list[int]:
        """The other ranks whose empty barrier ``rank``'s consumer arrives on, in the kernel's order:
        its row peers (rn + 1, rn + 2, ... mod cluster_n), then its column peers (rm + 1, ... mod
        cluster_m) -- every CTA that multicasts into ``rank``.  The consumer arrives on its own
        empty barrier first (a local arrive)."""
        rm, rn = self.rm(rank), self.rn(rank)
        row = [rm + ((rn + 1 + j) % self.cluster_n) * self.cluster_m for j in range(self.cluster_n - 1)]
        col = [(rm + 1 + i) % self.cluster_m + rn * self.cluster_m for i in range(self.cluster_m - 1)]
        return row + col

    @property
    def empty_count(self) -> int:
        """Arrivals that complete an empty barrier's phase: one consumer arrive from each CTA the
        stage's multicasts reach (its row and column: cluster_m + cluster_n - 1)."""
        return self.cluster_m + self.cluster_n - 1

    def tx_bytes(self, local: bool = False) -> int:
        """What ``arrive.expect_tx`` should say (every source's bytes: one whole stage), or with
        ``local`` (the ``expect_tx_local`` bug) only the bytes of this CTA's own loads."""
        rows = (self.a_rows + self.b_rows) if local else (self.BLK_M + self.BLK_N)
        return rows * self.BLK_K * F16_BYTES


def cluster_geometry(cfg: GemmConfig) -> ClusterGeometry:
    return ClusterGeometry(cfg.cluster_m, cfg.cluster_n, cfg.BLK_M, cfg.BLK_N, cfg.BLK_K)


def stages(step: str, cfg: GemmConfig) -> int:
    return cfg.PIPE_DEPTH if step in ("v5", "v6", "ws", "ws_cluster") else 1


def smem_bytes(step: str, cfg: GemmConfig) -> int:
    ab = stages(step, cfg) * (cfg.BLK_M + cfg.BLK_N) * cfg.BLK_K * F16_BYTES
    d = cfg.BLK_M * cfg.BLK_N * F16_BYTES  # Dsmem (unused by v2/v3, allocated by the one kernel body)
    return 1024 + ab + d  # barriers sit below the 1024-aligned operand tiles


def grid_ctas(step: str, cfg: GemmConfig) -> int:
    if step in CLUSTER_STEPS:
        # persistent clusters: as many whole clusters as the CTA budget holds, at most one per
        # cluster tile (cluster_m x cluster_n output tiles); the grid is a multiple of the cluster
        cluster_tiles = (cfg.m_tiles // cfg.cluster_m) * (cfg.n_tiles // cfg.cluster_n)
        return min((cfg.sm_count or H200_SMS) // cfg.cluster_size, cluster_tiles) * cfg.cluster_size
    if step in ("v6", "ws"):
        return min(cfg.sm_count or H200_SMS, cfg.m_tiles * cfg.n_tiles)
    return cfg.m_tiles * cfg.n_tiles
