"""Register math: the arithmetic a warp does on values in its registers (Triton's elementwise
ops and reductions on tensors), on its SM sub-partition's pipes.

An SM has ``sm_subpartitions`` warp schedulers; a CTA's warp ``g`` issues on scheduler
``g % n``, whose pipes serve its warps in turn, and the warp waits for its own instructions
(dependent math: the next op needs the result).  Each warp instruction costs its class's
cycles on the scheduler -- FP32 ``alu_fp32_cycles``, max / min and conversions to fp16
``alu_half_rate_cycles``, the special-function unit ``alu_mufu_cycles``, shuffles
``alu_shfl_cycles`` -- measured by ``kernels/microbench/alu_rate.cu`` on the H200 (docs/semantics.md
"Register math").
"""

from __future__ import annotations

import simpy

from protosim.engine.state import WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.ir import Op, RegisterMath


def math_cycles(op: RegisterMath, arch) -> float:
    """Cycles ``op``'s instructions hold one warp scheduler."""
    return (op.fp32 * arch.alu_fp32_cycles + op.half_rate * arch.alu_half_rate_cycles
            + op.mufu * arch.alu_mufu_cycles + op.shfl * arch.alu_shfl_cycles)


class AluUnit(Unit):
    name = "alu"

    def handlers(self) -> dict[type[Op], Handler]:
        return {RegisterMath: Handler(None, self.math)}

    def math(self, w: WarpState, i: int, op: RegisterMath) -> simpy.Event | None:
        m = self.m
        now = m.env.now
        pipes = w.cta.sm.alu
        done = pipes[w.g % len(pipes)].serve(now, m.timing.scale(math_cycles(op, self.arch)))
        return m.env.timeout(done - now) if done > now else None
