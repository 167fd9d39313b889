"""Register math: the arithmetic a warp does on values in its registers (Triton's elementwise
ops and reductions on tensors), on its SM sub-partition's pipes.

An SM has ``sm_subpartitions`` warp schedulers; a CTA's warp ``g`` issues on scheduler
``g % n``.  A scheduler has issue slots and three pipes besides the FMA pipe, each a server of
cycles (:class:`~protosim.engine.resources.Scheduler`).  A warp's math takes from each its share
-- the issue slots ``alu_fp32_cycles`` an FP32 instruction, ``alu_half_issue_cycles`` a max / min
or fp16 conversion, ``alu_mufu_issue_cycles`` a special-function instruction, ``alu_fp32_cycles``
a shuffle; the MUFU pipe ``alu_mufu_cycles`` each, the ALU pipe ``alu_half_rate_cycles``, the
shuffle pipe ``alu_shfl_cycles`` -- from the moment it issues, and the warp waits until the last
is done (dependent math: the next op needs the result).  The pipes work at the same time, so a
stream of mixed math runs at the rate of its busiest server.  One-kind rates:
``kernels/microbench/alu_rate.cu``; the overlap and the issue shares: ``alu_mix.cu``, both on the
H200 (docs/semantics.md "Register math").
"""

from __future__ import annotations

import simpy

from protosim.engine.issue import subpartition
from protosim.engine.state import WarpState
from protosim.engine.units.base import Handler, Unit
from protosim.ir import Op, RegisterMath


def server_cycles(op: RegisterMath, arch) -> tuple[float, float, float, float]:
    """Cycles ``op``'s instructions take from its scheduler's (issue slots, MUFU pipe, ALU pipe,
    shuffle pipe)."""
    issue = ((op.fp32 + op.shfl) * arch.alu_fp32_cycles + op.half_rate * arch.alu_half_issue_cycles
             + op.mufu * arch.alu_mufu_issue_cycles)  # a shuffle's issue share: FP32's (an assumption, not measured)
    return issue, op.mufu * arch.alu_mufu_cycles, op.half_rate * arch.alu_half_rate_cycles, op.shfl * arch.alu_shfl_cycles


def math_cycles(op: RegisterMath, arch) -> float:
    """Cycles ``op`` takes on an idle scheduler: its busiest server's."""
    return max(server_cycles(op, arch))


class AluUnit(Unit):
    name = "alu"

    def handlers(self) -> dict[type[Op], Handler]:
        return {RegisterMath: Handler(None, self.math)}

    def math(self, w: WarpState, i: int, op: RegisterMath) -> simpy.Event | None:
        m = self.m
        now = m.env.now
        schedulers = w.cta.sm.alu
        s = schedulers[subpartition(w.g - w.cta.base, len(schedulers))]
        f = m.timing.scale(1.0)  # one jitter draw for the op (as for every latency)
        issue, mufu, half, shfl = server_cycles(op, self.arch)
        done = s.issue.serve(now, f * issue)
        for pipe, cycles in ((s.mufu, mufu), (s.half, half), (s.shfl, shfl)):
            if cycles:  # a pipe the op does not use does not hold it up
                done = max(done, pipe.serve(now, f * cycles))
        return m.env.timeout(done - now) if done > now else None
