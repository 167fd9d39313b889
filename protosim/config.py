"""One configuration record for a GEMM pipeline, shared by the simulator's builders
and the real kernels (``kernels/``): the same knob has the same name and meaning
on both sides, so a configuration can be simulated and run on silicon unchanged.

Shapes follow the seed: ``D[M, N] = A[M, K] @ B[N, K].T`` in fp16 with an fp32
accumulator, tiles of ``BLK_M x BLK_N x BLK_K``, a ring of ``PIPE_DEPTH`` stages.

Bug knobs (all default to the correct protocol):

``skip_mma_phase_flip``
    v2+: ``phase_mma ^= 1`` is left out, so every MMA wait uses parity 0.
``reset_phase_per_tile``
    v6: the seed's literal code -- ``phase_tma = phase_mma = 0`` and the stage
    index restarts at 0 for every output tile.  Correct only when every barrier
    is used an even number of times per tile (``K_TILES % (2*PIPE_DEPTH) == 0``).
    ``False`` is the fix: ring position and phases carry across tiles (a
    CUTLASS-style ``PipelineState``).
``tma_issuer``
    ``"one"`` (``tid == 0``) or ``"each_warp"`` (``elect_sync()`` in each of the
    four warps: four TMA issuers).
``expect_tx_delta``
    bytes added to ``arrive.expect_tx`` (negative: too few, positive: too many).
``wait_parity_flip``
    ``"tma"`` or ``"mma"``: waits on that barrier use the wrong parity.
``skip_store_wait``
    v4+: no ``cp.async.bulk.wait_group 0`` after the TMA store, so the staging
    tile can be rewritten while the store still reads it.

Cluster shape (thread-block clusters, docs/semantics.md "Clusters"):

``cluster_m`` / ``cluster_n``
    CTAs of one cluster along M / along N.  The CTAs of a cluster along M compute
    output tiles in the same column, so they share the B tile: each loads its slice
    of it and multicasts the slice to all of them (along N: the A tile).  The 2-CTA
    tcgen05 kernels (book steps 8-9) are ``cluster_m = 2``.

Cluster bug knobs (the failure modes of cross-CTA protocols):

``multicast_skip_rank``
    the CTA of this cluster rank never issues its share of the cluster's loads
    (its multicast slice, or its half of a 2-CTA stage): its peers wait for bytes
    that never come.  ``-1``: every rank issues.
``release_unscaled``
    a barrier that every CTA of the cluster must arrive on (a multicast stage's
    empty barrier, the 2-CTA accumulator's ld2mma) is initialised with one CTA's
    arrival count instead of the cluster's: the phase completes when the first CTA
    has released.
``expect_tx_local``
    ``expect_tx`` counts only the bytes this CTA's own loads bring, not what every
    source of the cluster delivers to the barrier.
``skip_exit_sync``
    no cluster barrier before TMEM is freed and the CTA exits, so a CTA may leave
    while its peer still reads its shared memory or arrives on its barriers.

Delay knobs (``nanosleep``: PTX sleeps within [0, 2t], so they move timing without pinning it;
docs/crosscheck.md):

``producer_delay_ns``  before each TMA load issue;
``consumer_delay_ns``  before each MMA issue (after its operands' wait);
``lag_warp`` / ``lag_ns``  one warp sleeps before each of its barrier waits.

Launch condition:
``l2_at_launch``
    ``"cold"``: nothing the kernel reads is in L2 when it starts (first touches come
    from DRAM).  ``"inputs"``: A and B were written just before the launch (then D),
    so they start in L2 as far as they fit -- what ``kernels.runner.gemm`` does unless told
    to flush.  On the H200 this decides the ws phase-reset race (docs/crosscheck.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from protosim._dataclass_cache import DataclassCache
from protosim.ir import L2_AT_LAUNCH

_DATACLASSES = DataclassCache(__file__)
dataclass = _DATACLASSES.dataclass  # @dataclass, its methods' bytecode cached (protosim._dataclass_cache)

F16_BYTES = 2
ACC_BYTES = 4


class ConfigError(ValueError):
    """A configuration that cannot be built; ``field`` names the culprit."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class GemmConfig:
    M: int = 128
    N: int = 128
    K: int = 64
    BLK_M: int = 128
    BLK_N: int = 128
    BLK_K: int = 64
    PIPE_DEPTH: int = 2
    arch: str = "b200"
    sm_count: int | None = None
    """Persistent CTAs (v6); ``None`` means one per SM of the arch."""
    l2_group_size: int = 8
    # bug knobs
    skip_mma_phase_flip: bool = False
    reset_phase_per_tile: bool = False
    tma_issuer: Literal["one", "each_warp"] = "one"
    expect_tx_delta: int = 0
    wait_parity_flip: Literal["", "tma", "mma"] = ""
    skip_store_wait: bool = False
    # delay knobs
    producer_delay_ns: int = 0
    consumer_delay_ns: int = 0
    lag_warp: int = 1
    lag_ns: int = 0
    # cluster shape
    cluster_m: int = 1
    cluster_n: int = 1
    # cluster bug knobs
    multicast_skip_rank: int = -1
    release_unscaled: bool = False
    expect_tx_local: bool = False
    skip_exit_sync: bool = False
    # launch condition
    l2_at_launch: Literal["cold", "inputs"] = "cold"

    @property
    def k_tiles(self) -> int:
        return self.K // self.BLK_K

    @property
    def m_tiles(self) -> int:
        return self.M // self.BLK_M

    @property
    def n_tiles(self) -> int:
        return self.N // self.BLK_N

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster (1: no cluster)."""
        return self.cluster_m * self.cluster_n

    @property
    def stage_bytes(self) -> int:
        """Bytes one k-tile of A and B brings in (what ``expect_tx`` should say)."""
        return (self.BLK_M + self.BLK_N) * self.BLK_K * F16_BYTES

    @property
    def bug_knobs(self) -> dict[str, Any]:
        """Knobs set away from the correct protocol."""
        defaults = GemmConfig()
        return {
            name: getattr(self, name)
            for name in BUG_KNOBS
            if getattr(self, name) != getattr(defaults, name)
        }

    def to_dict(self) -> dict[str, Any]:
        # every field is a scalar: dataclasses.asdict's deep copy is ~3% of a small verdict
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GemmConfig:
        """Build and validate; raises :class:`ConfigError` naming the field."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise ConfigError(key, f"unknown field; known fields: {', '.join(known)}")
        values = {}
        for key, value in d.items():
            expected = _FIELD_TYPES[key]
            if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
                if not (key == "sm_count" and value is None):
                    raise ConfigError(key, f"{value!r} is not an integer")
            if expected is bool and not isinstance(value, bool):
                raise ConfigError(key, f"{value!r} is not true/false")
            if expected is str and not isinstance(value, str):
                raise ConfigError(key, f"{value!r} is not a string")
            values[key] = value
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for name in ("M", "N", "K", "BLK_M", "BLK_N", "BLK_K", "PIPE_DEPTH", "l2_group_size"):
            if getattr(self, name) < 1:
                raise ConfigError(name, f"{getattr(self, name)} must be >= 1")
        # Tile constraints first: a bad tile is the root cause of a divisibility error.
        if self.BLK_K % 16:
            raise ConfigError("BLK_K", f"{self.BLK_K} is not a multiple of the MMA K (16)")
        if self.BLK_M != 128:
            raise ConfigError("BLK_M", f"{self.BLK_M}: the seed's kernels use one warpgroup, 128 rows; set BLK_M = 128")
        if self.BLK_N % 8 or not 8 <= self.BLK_N <= 256:
            raise ConfigError("BLK_N", f"{self.BLK_N}: the MMA N must be a multiple of 8 in [8, 256]")
        for dim, blk in (("M", "BLK_M"), ("N", "BLK_N"), ("K", "BLK_K")):
            if getattr(self, dim) % getattr(self, blk):
                raise ConfigError(
                    dim,
                    f"{dim}={getattr(self, dim)} is not a multiple of {blk}={getattr(self, blk)}; "
                    f"pick {dim} as a multiple of {getattr(self, blk)}",
                )
        if self.sm_count is not None and self.sm_count < 1:
            raise ConfigError("sm_count", f"{self.sm_count} must be >= 1 (or omitted for the whole chip)")
        if self.tma_issuer not in ("one", "each_warp"):
            raise ConfigError("tma_issuer", f"{self.tma_issuer!r}; use 'one' or 'each_warp'")
        if self.wait_parity_flip not in ("", "tma", "mma"):
            raise ConfigError("wait_parity_flip", f"{self.wait_parity_flip!r}; use '', 'tma' or 'mma'")
        if not 0 <= self.lag_warp < 4:
            raise ConfigError("lag_warp", f"{self.lag_warp}: the warpgroup has warps 0..3")
        for name in ("producer_delay_ns", "consumer_delay_ns", "lag_ns"):
            if getattr(self, name) < 0:
                raise ConfigError(name, f"{getattr(self, name)} must be >= 0")
        for name in ("cluster_m", "cluster_n"):
            if getattr(self, name) not in (1, 2, 4, 8):
                raise ConfigError(name, f"{getattr(self, name)}: a cluster dimension is 1, 2, 4 or 8")
        if self.cluster_size > MAX_CLUSTER:
            raise ConfigError("cluster_m", f"{self.cluster_m}x{self.cluster_n} is {self.cluster_size} CTAs; a portable "
                                           f"cluster has at most {MAX_CLUSTER}")
        if not -1 <= self.multicast_skip_rank < self.cluster_size:
            raise ConfigError("multicast_skip_rank", f"{self.multicast_skip_rank}: a rank of the {self.cluster_size}-CTA "
                                                     f"cluster (0..{self.cluster_size - 1}), or -1 for none")
        if self.l2_at_launch not in L2_AT_LAUNCH:
            raise ConfigError("l2_at_launch", f"{self.l2_at_launch!r}; use 'cold' or 'inputs'")
        if self.stage_bytes + self.expect_tx_delta < 0:
            raise ConfigError("expect_tx_delta", f"expect_tx would be negative ({self.stage_bytes + self.expect_tx_delta} bytes)")


BUG_KNOBS = (
    "skip_mma_phase_flip",
    "reset_phase_per_tile",
    "tma_issuer",
    "expect_tx_delta",
    "wait_parity_flip",
    "skip_store_wait",
    "multicast_skip_rank",
    "release_unscaled",
    "expect_tx_local",
    "skip_exit_sync",
)
CLUSTER_KNOBS = ("cluster_m", "cluster_n")
"""The cluster's shape (CTAs along M, along N)."""
MAX_CLUSTER = 8
"""CUDA's portable cluster-size limit (CUDA C++ Programming Guide, "Thread Block Clusters":
8 CTAs is portable; more needs cudaFuncAttributeNonPortableClusterSizeAllowed)."""
DELAY_KNOBS = ("producer_delay_ns", "consumer_delay_ns", "lag_warp", "lag_ns")
LAUNCH_KNOBS = ("l2_at_launch",)
"""Conditions of a launch, not of the binary: kernels take them from the job."""

_FIELD_TYPES: dict[str, type] = {
    f.name: (int if f.type in ("int", "int | None") else bool if f.type == "bool" else str)
    for f in dataclasses.fields(GemmConfig)
}


_DATACLASSES.save()  # after the module's last dataclass
