"""Hold SMs while a grid runs on the rest (kernels/microbench/sm_blocker.cu), on the GPU.

``cta_drift --blocked / --segments`` and ``tma_issue --per-sm`` run a grid of 132 CTAs on 132, 66
or 33 SMs: the same CTAs at 1, 2 or 4 an SM while the chip carries only their traffic. The
spinning CTAs take one SM each (227 KiB of shared memory: no room for another CTA) on a stream of
their own; the grid goes on another stream once they are resident.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

SMEM = 227 * 1024
"""An SM's largest CTA: no room left on a held SM for any CTA of the grids measured."""
CYCLES = 20_000_000
"""How long each spins (~10 ms): far longer than any grid measured beside them (<= ~0.2 ms)."""


class Spinners:
    """Up to ``most`` SMs held by sm_blocker.cu (its cubin in ``folder``) while grids run on ``stream``."""

    def __init__(self, torch, drv, folder: Path, most: int):
        self.torch = torch
        self.fn = drv.function((folder / "sm_blocker.sm_90a.cubin").read_bytes(), "sm_blocker", SMEM)
        self.drv = drv
        self.held_stream, self.stream = torch.cuda.Stream(), torch.cuda.Stream()
        self.started = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.sms = torch.zeros(max(1, most), dtype=torch.int32, device="cuda")

    def run(self, launch, held: int) -> None:
        """``launch()`` (a launcher on :attr:`stream`) while ``held`` SMs spin; wait for both."""
        torch = self.torch
        torch.cuda.synchronize()
        self.started.zero_()
        self.sms.fill_(-1)
        if held:
            self.drv.launcher(self.fn, held, 32, SMEM, self.held_stream.cuda_stream,
                              [ctypes.c_int64(CYCLES), ctypes.c_void_p(self.started.data_ptr()),
                               ctypes.c_void_p(self.sms.data_ptr())])()
            time.sleep(0.002)  # the spinning CTAs resident before the grid is launched
        launch()
        torch.cuda.synchronize()

    def spinning(self) -> int:
        """How many spinning CTAs started in the last :meth:`run`."""
        return int(self.started.item())

    def held_sms(self, held: int) -> set[int]:
        """The SMs the last :meth:`run`'s spinners held."""
        return set(self.sms[:held].tolist()) if held else set()
