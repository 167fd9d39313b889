"""The fastest a GEMM config can run: its roof, from the arch profile's measured rates.

No schedule can beat the tensor cores or the DRAM, so a prediction below the roof is a bug in
the model and a measurement below it a bug in the roof (issue 16: "no prediction above a
measured roof").  The roof is the larger of

* **the tensor cores**: every SM that has a tile computes ``ceil(tiles / SMs)`` of them, each
  ``BLK_M x BLK_N x K`` through back-to-back MMA instructions of ``inst_m x BLK_N x inst_k`` at
  the profile's issue-to-issue interval (``mma_issue_base + BLK_N * mma_issue_per_n``, at
  least ``mma_issue_min``; on the H200 the measured wgmma rate);
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
    interval = max(arch.mma_issue_min, arch.mma_issue_base + cfg.BLK_N * arch.mma_issue_per_n)
    instructions = -(-cfg.BLK_M // arch.mma_inst_m) * -(-cfg.K // arch.mma_inst_k)  # per tile
    per_sm_cycles = -(-tiles // sms) * instructions * interval
    cycles_per_us = arch.clock_ghz * 1e3
    dram = 0.0
    if cfg.l2_at_launch == "cold":
        dram = (cfg.M + cfg.N) * cfg.K * F16_BYTES / arch.hbm_bytes_per_clk / cycles_per_us
    best = 2 * cfg.M * cfg.N * cfg.K / (arch.best_gemm_tflops * 1e6) if arch.best_gemm_tflops else 0.0
    return Roof(per_sm_cycles / cycles_per_us, best, dram, arch.launch_fixed_us)
