"""The fastest a GEMM config can run: its roof, from the arch profile's measured rates.

No schedule can beat the tensor cores or the DRAM, so a prediction below the roof is a bug in
the model and a measurement below it a bug in the roof (issue 16: "no prediction above a
measured roof").  The roof is the larger of

* **the tensor cores**: every SM that has a tile computes ``ceil(tiles / SMs)`` of them, each
  ``BLK_M x BLK_N x K`` through back-to-back MMA instructions at the profile's issue-to-issue
  interval (:meth:`ArchProfile.mma_cycles` with the uniform-descriptor floor: the fastest a
  wgmma runs on the H200);
* **the best GEMM measured on the chip** (``best_gemm_tflops``: cuBLAS at 4096^3 on the H200,
  757 TFLOP/s): ``2 M N K`` at that rate;
* **the DRAM**, for inputs not in L2 at launch (``l2_at_launch = cold``): A and B once through
  ``hbm_bytes_per_clk`` (the measured TMA rate from HBM);

at the profile's clock, plus the launch's fixed cost (``launch_fixed_us``), as a kernel-only
time is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from protosim.arch import ArchProfile
from protosim.config import F16_BYTES, GemmConfig


@dataclass(frozen=True)
class Roof:
    mma_us: float
    best_us: float
    dram_us: float
    fixed_us: float

    @property
    def us(self) -> float:
        """The roof as a kernel-only time."""
        return max(self.mma_us, self.best_us, self.dram_us) + self.fixed_us

    @property
    def bound(self) -> str:
        top = max(self.mma_us, self.best_us, self.dram_us)
        return "tensor cores" if top == self.mma_us else "best measured GEMM" if top == self.best_us else "DRAM"


def roof(cfg: GemmConfig, arch: ArchProfile) -> Roof:
    tiles = cfg.m_tiles * cfg.n_tiles
    sms = max(1, min(tiles, cfg.sm_count or arch.sm_count, arch.sm_count))
    per_tile, _ = arch.mma_cycles(cfg.BLK_M, cfg.BLK_N, cfg.K)  # the tile's whole K, instructions back to back
    dram = 0.0
    if cfg.l2_at_launch == "cold":
        dram = arch.cycles_to_us((cfg.M + cfg.N) * cfg.K * F16_BYTES / arch.hbm_bytes_per_clk)
    best = 2 * cfg.M * cfg.N * cfg.K / (arch.best_gemm_tflops * 1e6) if arch.best_gemm_tflops else 0.0
    return Roof(arch.cycles_to_us(-(-tiles // sms) * per_tile), best, dram, arch.launch_fixed_us)
